//! Question-question similarity: the pretrained all-MiniLM-L6-v2 bi-encoder (mean pooling,
//! as sentence-transformers) and an exact batched nearest-question search over the stored,
//! L2-normalised training-question vectors (cosine = dot product).

use ansel_bert::{Batch, BertConfig, CrossEncoder, Encoded, PairTokenizer};
use ansel_model::{ModelError, Result};
use ansel_torch::tch::{self, Kind};
use std::path::Path;
use std::sync::Mutex;

/// Longest question input in word pieces (with [CLS] and [SEP]).
const MAX_LEN: usize = 128;

/// Sentence vectors from a Hugging Face BERT directory (mean pooling, L2-normalised).
pub struct QuestionEncoder {
    model: Mutex<CrossEncoder>,
    tokenizer: PairTokenizer,
    pub dim: usize,
}

impl QuestionEncoder {
    pub fn load(dir: &Path) -> Result<QuestionEncoder> {
        let dir = ansel_bert::resolve_base(&dir.display().to_string())?;
        let config = BertConfig::read(&dir.join("config.json"))?;
        let dim = config.hidden_size as usize;
        // The classification head is unused (and absent from a sentence-transformers model).
        let (model, _) = CrossEncoder::load(config, &dir.join("model.safetensors"))?;
        let tokenizer = PairTokenizer::read(&dir.join("tokenizer.json"))?;
        Ok(QuestionEncoder {
            model: Mutex::new(model),
            tokenizer,
            dim,
        })
    }

    /// One normalised vector per text, `dim` floats each, concatenated.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<f32>> {
        let mut items = Vec::with_capacity(texts.len());
        for t in texts {
            let mut ids = self.tokenizer.encode_single(t)?;
            if ids.len() > MAX_LEN {
                let sep = *ids.last().unwrap_or(&0);
                ids.truncate(MAX_LEN - 1);
                ids.push(sep);
            }
            let types = vec![0; ids.len()];
            items.push(Encoded { ids, types });
        }
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| items[i].len());
        let mut out = vec![0f32; texts.len() * self.dim];
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        tch::no_grad(|| -> Result<()> {
            for chunk in order.chunks(64) {
                let refs: Vec<&Encoded> = chunk.iter().map(|&i| &items[i]).collect();
                let emb = model
                    .mean_pooled(&Batch::new(&refs, self.tokenizer.pad))
                    .to_kind(Kind::Float);
                let flat = Vec::<f32>::try_from(emb.flatten(0, -1))
                    .map_err(|e| ModelError::Backend(e.to_string()))?;
                for (r, &i) in chunk.iter().enumerate() {
                    let v = &flat[r * self.dim..(r + 1) * self.dim];
                    out[i * self.dim..(i + 1) * self.dim].copy_from_slice(v);
                }
            }
            Ok(())
        })?;
        for v in out.chunks_mut(self.dim) {
            normalise(v);
        }
        Ok(out)
    }
}

impl QuestionEncoder {
    /// [`QuestionEncoder::encode`], reading vectors of texts seen before from `cache` (a file of
    /// records: 8-byte text hash, then `dim` little-endian f32) and appending the new ones.
    pub fn encode_cached(&self, texts: &[&str], cache: Option<&Path>) -> Result<Vec<f32>> {
        let Some(path) = cache else {
            return self.encode(texts);
        };
        let keys: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        cached_rows(path, self.dim, &keys, |missing| {
            let missing: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            self.encode(&missing)
        })
    }
}

/// Rows of `dim` floats for `keys`, read from the record file `path` (each record: the 8-byte
/// key, then `dim` little-endian f32) where there, and otherwise computed by `compute` (given
/// the positions of the first occurrence of each missing key, in order) and appended to it.
/// The vector cache of [`QuestionEncoder`] and the `[CLS]` cache of `cls-vec`.
pub fn cached_rows(
    path: &Path,
    dim: usize,
    keys: &[u64],
    compute: impl FnOnce(&[usize]) -> Result<Vec<f32>>,
) -> Result<Vec<f32>> {
    let rec = 8 + 4 * dim;
    let mut known: std::collections::HashMap<u64, Vec<f32>> = std::collections::HashMap::new();
    if let Ok(bytes) = std::fs::read(path) {
        // A record cut short by a crash is ignored.
        for r in bytes.chunks_exact(rec) {
            let h = u64::from_le_bytes(r[..8].try_into().unwrap_or_default());
            let v = r[8..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            known.insert(h, v);
        }
    }
    let mut missing: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, h) in keys.iter().enumerate() {
        if !known.contains_key(h) && seen.insert(*h) {
            missing.push(i);
        }
    }
    if !missing.is_empty() {
        let fresh = compute(&missing)?;
        if fresh.len() != missing.len() * dim {
            return Err(ModelError::Backend(format!(
                "{}: {} floats computed for {} rows of {dim}",
                path.display(),
                fresh.len(),
                missing.len()
            )));
        }
        let mut bytes = Vec::with_capacity(missing.len() * rec);
        for (&i, v) in missing.iter().zip(fresh.chunks_exact(dim)) {
            bytes.extend(keys[i].to_le_bytes());
            bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            known.insert(keys[i], v.to_vec());
        }
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(|e| ModelError::io(path, e))?;
    }
    Ok(keys.iter().flat_map(|h| known[h].iter().copied()).collect())
}

/// FNV-1a of a text, the key of the vector cache.
fn text_hash(text: &str) -> u64 {
    ansel_model::Fingerprint::default()
        .bytes(text.bytes())
        .value()
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Exact cosine search over stored unit vectors (`rows x dim`, row-major).
pub struct NearestQuestions {
    pub dim: usize,
    pub vectors: Vec<f32>,
}

impl NearestQuestions {
    pub fn rows(&self) -> usize {
        self.vectors.len().checked_div(self.dim).unwrap_or(0)
    }

    /// The `k` stored rows most similar to `query` (a unit vector), most similar first,
    /// leaving out `exclude` (a training row searching its own neighbours).
    pub fn top_k(&self, query: &[f32], k: usize, exclude: Option<usize>) -> Vec<(usize, f32)> {
        let sims: Vec<f32> = self
            .vectors
            .chunks_exact(self.dim)
            .map(|v| dot(v, query))
            .collect();
        select_top(&sims, k, exclude)
    }

    /// [`NearestQuestions::top_k`] for many queries at once (`queries`: `n x dim`), in blocks
    /// of queries so that each stored vector is read once per block (a blocked matrix product).
    pub fn top_k_batch(
        &self,
        queries: &[f32],
        k: usize,
        exclude_self: bool,
    ) -> Vec<Vec<(usize, f32)>> {
        let n = queries.len() / self.dim.max(1);
        let rows = self.rows();
        let mut out = Vec::with_capacity(n);
        const BLOCK: usize = 32;
        for b in (0..n).step_by(BLOCK) {
            let e = (b + BLOCK).min(n);
            let mut sims = vec![0f32; (e - b) * rows];
            for (r, v) in self.vectors.chunks_exact(self.dim).enumerate() {
                for q in b..e {
                    sims[(q - b) * rows + r] = dot(v, &queries[q * self.dim..(q + 1) * self.dim]);
                }
            }
            for q in b..e {
                let exclude = exclude_self.then_some(q);
                out.push(select_top(
                    &sims[(q - b) * rows..(q - b + 1) * rows],
                    k,
                    exclude,
                ));
            }
        }
        out
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four accumulators let the compiler vectorise the loop.
    let mut acc = [0f32; 4];
    let chunks = a.len() / 4;
    for i in 0..chunks {
        for j in 0..4 {
            acc[j] += a[i * 4 + j] * b[i * 4 + j];
        }
    }
    let mut s = acc.iter().sum::<f32>();
    for i in chunks * 4..a.len() {
        s += a[i] * b[i];
    }
    s
}

fn select_top(sims: &[f32], k: usize, exclude: Option<usize>) -> Vec<(usize, f32)> {
    let mut idx: Vec<usize> = (0..sims.len()).filter(|&i| Some(i) != exclude).collect();
    let cmp = |a: &usize, b: &usize| ansel_model::best_first(sims[*a], sims[*b]).then(a.cmp(b));
    if k < idx.len() {
        idx.select_nth_unstable_by(k, cmp);
        idx.truncate(k);
    }
    idx.sort_by(cmp);
    idx.into_iter().map(|i| (i, sims[i])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_finds_the_most_similar_rows_and_skips_itself() {
        let mut vectors = vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8, -1.0, 0.0];
        for v in vectors.chunks_mut(2) {
            normalise(v);
        }
        let s = NearestQuestions { dim: 2, vectors };
        let top = s.top_k(&[0.8, 0.6], 2, None);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![2, 0]);
        let own = s.top_k_batch(&s.vectors, 1, true);
        assert_eq!(
            own.iter().map(|t| t[0].0).collect::<Vec<_>>(),
            vec![2, 2, 1, 1]
        );
        let single: Vec<Vec<(usize, f32)>> = (0..4)
            .map(|r| s.top_k(&s.vectors[r * 2..r * 2 + 2], 3, Some(r)))
            .collect();
        assert_eq!(s.top_k_batch(&s.vectors, 3, true), single);
    }
}
