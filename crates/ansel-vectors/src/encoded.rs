//! Word vectors from a sentence encoder (`--vectors minilm-encoded`): every word is
//! encoded alone, as the one-word sentence `[CLS] word [SEP]`, through the whole
//! all-MiniLM-L6-v2 encoder, mean-pooled over its tokens and normalised to unit length,
//! exactly as sentence-transformers embeds a sentence. Unlike the input word-piece
//! embeddings (`--vectors minilm`), these vectors come out of a model trained for
//! semantic similarity, so their cosines measure word relatedness.
//!
//! Encoding costs about a millisecond or more per word on one core, so the table is
//! built only for the words asked for (a model's vocabulary) and cached: a cache
//! directory holds `words.txt` (one word a line, in row order), `vectors.f32`
//! (little-endian `f32`, row-major) and `meta.json` (the encoder and its dimension);
//! only words missing from it are encoded, and a cache made by another encoder is
//! rebuilt. [`pca`] reduces a table's dimension (training a Cosinenet on 384 d is 3-4x
//! slower than on 50 d).

use crate::{Result, VectorsError, WordVectors};
use ansel_bert::{BiEncoder, PairTokenizer};
use ansel_torch::tch::{self, Kind, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Longest word, in tokens with `[CLS]` and `[SEP]`; longer ones are cut.
const MAX_TOKENS: usize = 16;
/// Words per encoder call (short inputs: the batch costs little memory).
const BATCH: usize = 256;

const WORDS_FILE: &str = "words.txt";
const VECTORS_FILE: &str = "vectors.f32";
const META_FILE: &str = "meta.json";

fn model_error(e: ansel_model::ModelError) -> VectorsError {
    VectorsError::Missing(e.to_string())
}

/// A sentence encoder used as a word encoder.
pub struct WordEncoder {
    model: BiEncoder,
    tokenizer: PairTokenizer,
    /// What identifies the encoder in a cache: its directory and weight file size.
    identity: serde_json::Value,
}

impl WordEncoder {
    /// Loads a BERT sentence-encoder directory (`config.json`, `tokenizer.json`,
    /// `model.safetensors`).
    pub fn load(dir: &Path) -> Result<WordEncoder> {
        let (encoder, tokenizer) =
            ansel_bert::bi_encoder::load_encoder(dir).map_err(model_error)?;
        let weights = dir.join("model.safetensors");
        let bytes = std::fs::metadata(&weights)
            .map_err(|source| VectorsError::Io {
                path: weights.clone(),
                source,
            })?
            .len();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(WordEncoder {
            model: BiEncoder::new(encoder, None),
            tokenizer,
            identity: serde_json::json!({
                "encoder": name, "weights_bytes": bytes,
                "pooling": "mean over [CLS] word [SEP], unit length",
            }),
        })
    }

    pub fn dim(&self) -> usize {
        self.model.encoder.config.hidden_size as usize
    }

    /// Row-major `words.len() × dim` unit-length vectors, each the encoder's output for its
    /// word alone (batched by length: padding is masked, so a batch gives the same vectors).
    pub fn encode(&self, words: &[&str]) -> Result<Vec<f32>> {
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let pooled = ansel_bert::bi_encoder::embed_texts(
            &self.model,
            &self.tokenizer,
            words,
            MAX_TOKENS,
            BATCH,
        )
        .map_err(model_error)?;
        let unit = tch::no_grad(|| {
            let norm = pooled.norm_scalaropt_dim(2, [1], true).clamp_min(1e-12);
            (&pooled / norm).to_kind(Kind::Float).contiguous()
        });
        Ok(Vec::<f32>::try_from(unit.reshape([-1])).expect("a float tensor"))
    }
}

/// The vectors of `words` (in that order; repeated words once) from `encoder_dir`, taken from
/// the cache in `cache_dir` where it has them and encoded otherwise (the cache then grows).
/// Returns the table and how many words were encoded now.
pub fn encoded_vectors(
    encoder_dir: &Path,
    words: &[String],
    cache_dir: Option<&Path>,
) -> Result<(WordVectors, usize)> {
    let encoder = WordEncoder::load(encoder_dir)?;
    let dim = encoder.dim();
    let mut cache = match cache_dir {
        Some(dir) => Cache::read(dir, &encoder.identity, dim)?,
        None => Cache::default(),
    };
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&String> = words.iter().filter(|w| seen.insert(w.as_str())).collect();
    if let Some(bad) = unique
        .iter()
        .find(|w| w.is_empty() || w.contains(['\n', '\r']))
    {
        return Err(VectorsError::Missing(format!(
            "cannot encode the word {bad:?}: words must be non-empty and on one line"
        )));
    }
    let missing: Vec<&str> = unique
        .iter()
        .filter(|w| !cache.index.contains_key(w.as_str()))
        .map(|w| w.as_str())
        .collect();
    if !missing.is_empty() {
        let fresh = encoder.encode(&missing)?;
        for (word, row) in missing.iter().zip(fresh.chunks_exact(dim)) {
            cache.index.insert(word.to_string(), cache.words.len());
            cache.words.push(word.to_string());
            cache.data.extend_from_slice(row);
        }
        if let Some(dir) = cache_dir {
            cache.write(dir, &encoder.identity, dim)?;
        }
    }
    let mut data = Vec::with_capacity(unique.len() * dim);
    for word in &unique {
        let row = cache.index[word.as_str()];
        data.extend_from_slice(&cache.data[row * dim..(row + 1) * dim]);
    }
    let table = WordVectors::new(unique.into_iter().cloned().collect(), dim, data)?;
    Ok((table, missing.len()))
}

/// The cached rows of one encoder.
#[derive(Default)]
struct Cache {
    words: Vec<String>,
    index: HashMap<String, usize>,
    data: Vec<f32>,
}

impl Cache {
    /// The cache in `dir`; empty when there is none or another encoder made it.
    fn read(dir: &Path, identity: &serde_json::Value, dim: usize) -> Result<Cache> {
        let meta_path = dir.join(META_FILE);
        let Ok(meta) = std::fs::read(&meta_path) else {
            return Ok(Cache::default());
        };
        let expected = Self::meta(identity, dim);
        match serde_json::from_slice::<serde_json::Value>(&meta) {
            Ok(found) if found == expected => {}
            _ => return Ok(Cache::default()),
        }
        let words_path = dir.join(WORDS_FILE);
        let text = String::from_utf8(crate::read(&words_path)?)
            .map_err(|e| VectorsError::format(&words_path, format!("not UTF-8: {e}")))?;
        let words: Vec<String> = text.lines().map(str::to_string).collect();
        let vectors_path = dir.join(VECTORS_FILE);
        let bytes = crate::read(&vectors_path)?;
        if bytes.len() != words.len() * dim * 4 {
            return Err(VectorsError::format(
                &vectors_path,
                format!(
                    "{} bytes, but {} words of dimension {dim} need {} (delete {} to rebuild it)",
                    bytes.len(),
                    words.len(),
                    words.len() * dim * 4,
                    dir.display()
                ),
            ));
        }
        let data = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        let mut index = HashMap::with_capacity(words.len());
        for (row, word) in words.iter().enumerate() {
            if index.insert(word.clone(), row).is_some() {
                return Err(VectorsError::format(
                    &words_path,
                    format!("line {}: duplicate word {word:?}", row + 1),
                ));
            }
        }
        Ok(Cache { words, index, data })
    }

    fn meta(identity: &serde_json::Value, dim: usize) -> serde_json::Value {
        serde_json::json!({"identity": identity, "dim": dim})
    }

    /// Writes the three files, each atomically, vectors and words before the meta data that
    /// validates them (a crash in between leaves a cache that fails its size check and says so).
    fn write(&self, dir: &Path, identity: &serde_json::Value, dim: usize) -> Result<()> {
        let io = |e: ansel_model::ModelError| VectorsError::Missing(e.to_string());
        let _ = std::fs::remove_file(dir.join(META_FILE));
        let bytes: Vec<u8> = self.data.iter().flat_map(|x| x.to_le_bytes()).collect();
        ansel_model::write_atomic(&dir.join(VECTORS_FILE), &bytes).map_err(io)?;
        let mut text = String::new();
        for word in &self.words {
            text.push_str(word);
            text.push('\n');
        }
        ansel_model::write_atomic(&dir.join(WORDS_FILE), text.as_bytes()).map_err(io)?;
        let meta = serde_json::to_vec_pretty(&Self::meta(identity, dim)).expect("json");
        ansel_model::write_atomic(&dir.join(META_FILE), &meta).map_err(io)
    }
}

/// The cache directory of an encoder under a cache root.
pub fn cache_dir(root: &Path, source_name: &str) -> PathBuf {
    root.join(source_name)
}

/// The table projected on its `dim` principal components (rows centred first), then scaled
/// by one factor so that a vector's root-mean-square component is `rms` (GloVe 50d's is about
/// 0.7; unit vectors of 384 d have 0.05, too small beside the Cosinenet's relatedness
/// features at the CNN's initial weights). Words keep their order. `dim` at most the table's.
pub fn pca(vectors: &WordVectors, dim: usize, rms: f64) -> Result<WordVectors> {
    let (n, d) = (vectors.words().len(), vectors.dim());
    if dim == 0 || dim > d {
        return Err(VectorsError::Missing(format!(
            "cannot reduce {d}-d vectors to {dim} dimensions"
        )));
    }
    if n < 2 {
        return Err(VectorsError::Missing(format!(
            "PCA needs at least 2 words, the table has {n}"
        )));
    }
    let mut rows = Vec::with_capacity(n * d);
    for word in vectors.words() {
        rows.extend_from_slice(&vectors.get(word).expect("a word of the table"));
    }
    let projected = tch::no_grad(|| {
        let x = Tensor::from_slice(&rows)
            .reshape([n as i64, d as i64])
            .to_kind(Kind::Double);
        let centred = &x - x.mean_dim([0i64].as_slice(), true, Kind::Double);
        let covariance = centred.transpose(0, 1).matmul(&centred) / (n as f64 - 1.0);
        // Ascending eigenvalues: the last `dim` columns are the principal axes.
        let (_, axes) = covariance.linalg_eigh("L");
        let top = axes.narrow(1, (d - dim) as i64, dim as i64).flip([1]);
        // A fixed sign per axis (largest loading positive), so the result does not depend
        // on the eigen-solver's sign choice.
        let pivot = top.abs().argmax(0, true);
        let signs = top.gather(0, &pivot, false).sign();
        let z = centred.matmul(&(top * signs));
        let mean_square = z.square().mean(Kind::Double).double_value(&[]);
        (z * (rms / mean_square.sqrt().max(1e-12)))
            .to_kind(Kind::Float)
            .contiguous()
    });
    let data = Vec::<f32>::try_from(projected.reshape([-1])).expect("a float tensor");
    WordVectors::new(vectors.words().to_vec(), dim, data)
}

/// The table with every vector multiplied by one factor so that the root-mean-square
/// component is `rms` (see [`pca`]).
pub fn rescaled(vectors: &WordVectors, rms: f64) -> Result<WordVectors> {
    let mut data = Vec::with_capacity(vectors.words().len() * vectors.dim());
    for word in vectors.words() {
        data.extend_from_slice(&vectors.get(word).expect("a word of the table"));
    }
    let mean_square =
        data.iter().map(|x| (*x as f64).powi(2)).sum::<f64>() / data.len().max(1) as f64;
    let factor = (rms / mean_square.sqrt().max(1e-12)) as f32;
    data.iter_mut().for_each(|x| *x *= factor);
    WordVectors::new(vectors.words().to_vec(), vectors.dim(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    /// A tiny random BERT: no downloaded files.
    #[test]
    fn each_word_gets_the_encoders_output_for_it_alone_and_the_cache_reuses_it() {
        let tmp = tempfile::tempdir().unwrap();
        let base = ansel_bert::testing::tiny_base(tmp.path(), 0.0);
        let encoder = WordEncoder::load(&base).unwrap();
        let dim = encoder.dim();
        let list = words(&["hamlet", "who", "shakespeare", "plays", "who", "tragedy"]);
        let cache = tmp.path().join("cache");
        let (table, encoded) = encoded_vectors(&base, &list, Some(&cache)).unwrap();
        // Repeated words once, in first-seen order.
        assert_eq!(encoded, 5);
        assert_eq!(
            table.words(),
            &list[..4]
                .iter()
                .chain(&list[5..])
                .cloned()
                .collect::<Vec<_>>()[..]
        );
        assert_eq!(table.dim(), dim);
        for word in table.words() {
            let alone = encoder.encode(&[word.as_str()]).unwrap();
            let row = table.get(word).unwrap();
            assert_eq!(alone.len(), dim);
            let norm: f32 = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{word}: norm {norm}");
            for (a, b) in row.iter().zip(&alone) {
                assert!((a - b).abs() < 1e-5, "{word}: batched {a} vs alone {b}");
            }
        }
        // Different words, different vectors ("plays" is play + ##s).
        assert!(cos(&table.get("plays").unwrap(), &table.get("hamlet").unwrap()) < 0.9999);
        // The second call encodes only the new word and returns the same rows.
        let (again, encoded) = encoded_vectors(
            &base,
            &words(&["tragedy", "denmark", "hamlet"]),
            Some(&cache),
        )
        .unwrap();
        assert_eq!(encoded, 1);
        assert_eq!(again.get("hamlet"), table.get("hamlet"));
        assert_eq!(again.get("tragedy"), table.get("tragedy"));
        // A corrupt cache is a clear error naming the file.
        std::fs::write(cache.join(VECTORS_FILE), [0u8; 3]).unwrap();
        let err = encoded_vectors(&base, &list, Some(&cache))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("vectors.f32") && err.contains("bytes"),
            "{err}"
        );
        // A word that cannot be one line of the cache is refused.
        assert!(encoded_vectors(&base, &words(&["a\nb"]), None).is_err());
    }

    #[test]
    fn pca_keeps_the_main_directions_and_the_scale_asked_for() {
        // Points on a line in 3-d plus a little noise: one component carries almost all.
        let list: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
        let data: Vec<f32> = (0..20)
            .flat_map(|i| {
                let t = i as f32 - 9.5;
                let noise = ((i * 7) % 5) as f32 * 0.01;
                [t, 2.0 * t + noise, -t]
            })
            .collect();
        let table = WordVectors::new(list.clone(), 3, data).unwrap();
        let reduced = pca(&table, 1, 0.7).unwrap();
        assert_eq!((reduced.dim(), reduced.words()), (1, &list[..]));
        let values: Vec<f32> = list.iter().map(|w| reduced.get(w).unwrap()[0]).collect();
        let rms = (values.iter().map(|x| x * x).sum::<f32>() / 20.0).sqrt();
        assert!((rms - 0.7).abs() < 1e-4, "rms {rms}");
        // Monotone along the line (one sign or the other), and centred.
        let increasing = values.windows(2).all(|w| w[1] > w[0]);
        let decreasing = values.windows(2).all(|w| w[1] < w[0]);
        assert!(increasing || decreasing, "{values:?}");
        assert!(values.iter().sum::<f32>().abs() < 1e-3);
        assert!(pca(&table, 4, 0.7).is_err());
        let scaled = rescaled(&table, 0.5).unwrap();
        let all: Vec<f32> = list
            .iter()
            .flat_map(|w| scaled.get(w).unwrap().to_vec())
            .collect();
        let rms = (all.iter().map(|x| x * x).sum::<f32>() / all.len() as f32).sqrt();
        assert!((rms - 0.5).abs() < 1e-4, "rms {rms}");
    }

    /// The real all-MiniLM-L6-v2, where `scripts/fetch-models.sh` has fetched it: a handful of
    /// words, related ones closer than unrelated ones.
    #[test]
    fn real_minilm_encodes_related_words_closer() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vendor/models/all-minilm-l6-v2");
        if !dir.is_dir() {
            eprintln!("skipped: all-minilm-l6-v2 not fetched");
            return;
        }
        ansel_torch::init(1, 0);
        let (table, _) = encoded_vectors(
            &dir,
            &words(&["king", "queen", "carburetor", "wrote", "author"]),
            None,
        )
        .unwrap();
        assert_eq!(table.dim(), 384);
        let v = |w: &str| table.get(w).unwrap().to_vec();
        assert!(cos(&v("king"), &v("queen")) > cos(&v("king"), &v("carburetor")) + 0.2);
        assert!(cos(&v("wrote"), &v("author")) > cos(&v("wrote"), &v("carburetor")));
    }
}
