//! The Siamese bi-encoder of SEDAN (§3.2.1): one BERT encoder reads the question and the
//! candidate separately, each is mean-pooled into a vector (`q`, `s`), and a shallow
//! classifier reads `[q ; s ; |q - s|]` (two logits, softmax). It shares the encoder code
//! with the cross-encoder ([`CrossEncoder::mean_pool`]); only the head is its own.
//!
//! Scoring is either the classifier's log-odds ([`Scoring::Classifier`], the paper's SEDAN)
//! or the cosine of the two vectors ([`Scoring::Cosine`], the ablation of Table 5, and the
//! plain sentence-transformers model when no training happened). Because a candidate's
//! vector does not depend on the question, vectors are cached, and [`SentenceVectors`]
//! serves cosine top-k retrieval over precomputed vectors as a fast first stage.

use crate::model::write_tensors;
use crate::{
    card_settings, read_model_dir, resolve_base, Batch, CrossEncoder, Encoded, PairTokenizer,
};
use ansel_data::Question;
use ansel_model::{ModelCard, ModelError, Ranker, Result};
use ansel_torch::tch::{self, Device, Kind, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The `kind` of a bi-encoder's model card.
pub const BI_KIND: &str = "bi-encoder";

/// The file holding the classifier head of a bi-encoder directory.
pub const HEAD_FILE: &str = "head.safetensors";

/// How a (question, candidate) pair is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Scoring {
    /// Log-odds of the classifier on `[q ; s ; |q - s|]`.
    #[default]
    Classifier,
    /// Cosine of the mean-pooled vectors (no head).
    Cosine,
}

/// The bi-encoder's settings kept in `model.json` under `config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BiEncoderSettings {
    #[serde(default)]
    pub scoring: Scoring,
    /// Tokens per sentence (question or candidate), `[CLS]` and `[SEP]` included.
    pub max_len: usize,
    #[serde(default = "default_batch")]
    pub batch_size: usize,
    /// Directory holding config.json, tokenizer.json and model.safetensors, relative to the
    /// model directory (default: the model directory itself). Lets a card reuse the weights
    /// of another model (e.g. a cosine view of a trained bi-encoder, or a pretrained
    /// sentence-transformers directory) without copying them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder: Option<String>,
}

fn default_batch() -> usize {
    64
}

/// A BERT encoder with mean pooling and the `[q ; s ; |q - s|]` classifier.
pub struct BiEncoder {
    pub encoder: CrossEncoder,
    /// `[2, 3 * hidden]` and `[2]`.
    head_w: Tensor,
    head_b: Tensor,
}

impl BiEncoder {
    /// Wraps an encoder; the head is `head` (from [`HEAD_FILE`]) or, when `None`, initialised
    /// randomly (uniform in ±1/sqrt(fan-in), as torch's `nn.Linear`).
    pub fn new(encoder: CrossEncoder, head: Option<(Tensor, Tensor)>) -> BiEncoder {
        let h = encoder.config.hidden_size;
        let (head_w, head_b) = head.unwrap_or_else(|| {
            let bound = 1.0 / ((3 * h) as f64).sqrt();
            let opts = (Kind::Float, Device::Cpu);
            (
                Tensor::rand([2, 3 * h], opts) * (2.0 * bound) - bound,
                Tensor::zeros([2], opts),
            )
        });
        BiEncoder {
            encoder,
            head_w,
            head_b,
        }
    }

    /// Reads a head file written by [`BiEncoder::save_head`], checking its shapes.
    pub fn read_head(path: &Path, hidden: i64) -> Result<(Tensor, Tensor)> {
        let file = Tensor::read_safetensors(path).map_err(|e| ModelError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let found: BTreeMap<String, Tensor> = file.into_iter().collect();
        let get = |name: &str, shape: &[i64]| -> Result<Tensor> {
            Ok(ansel_torch::expect_tensor(&found, path, name, shape)?
                .to_kind(Kind::Float)
                .contiguous())
        };
        Ok((
            get("head.weight", &[2, 3 * hidden])?,
            get("head.bias", &[2])?,
        ))
    }

    /// Saves the head (fp32, atomically).
    pub fn save_head(&self, path: &Path) -> Result<()> {
        let tensors = tch::no_grad(|| {
            vec![
                ("head.weight".to_string(), self.head_w.detach().contiguous()),
                ("head.bias".to_string(), self.head_b.detach().contiguous()),
            ]
        });
        write_tensors(path, &tensors)
    }

    /// Every trainable parameter: the encoder's (its unused pooler and cross-encoder head get
    /// no gradient and stay as they are) and `head.weight` / `head.bias`.
    pub fn params(&self) -> BTreeMap<String, Tensor> {
        let mut all = self.encoder.shared_params();
        all.insert("head.weight".into(), self.head_w.shallow_clone());
        all.insert("head.bias".into(), self.head_b.shallow_clone());
        all
    }

    pub fn set_requires_grad(&mut self, on: bool) {
        self.encoder.set_requires_grad(on);
        self.head_w = self.head_w.detach().set_requires_grad(on);
        self.head_b = self.head_b.detach().set_requires_grad(on);
    }

    /// Sentence vectors `[n, hidden]` of single-sentence encodings.
    pub fn embed(&self, items: &[&Encoded], pad: i64, train: bool) -> Tensor {
        self.encoder.mean_pool(&Batch::new(items, pad), train)
    }

    /// Two logits `[n, 2]` (not relevant, relevant) for question vectors `q` and candidate
    /// vectors `s`, both `[n, hidden]`.
    pub fn logits(&self, q: &Tensor, s: &Tensor) -> Tensor {
        let features = Tensor::cat(&[q, s, &(q - s).abs()], 1);
        features.linear(&self.head_w, Some(&self.head_b))
    }

    /// One score per row: the classifier's log-odds or the cosine.
    pub fn score(&self, q: &Tensor, s: &Tensor, scoring: Scoring) -> Tensor {
        match scoring {
            Scoring::Classifier => {
                let l = self.logits(q, s);
                l.select(1, 1) - l.select(1, 0)
            }
            Scoring::Cosine => Tensor::cosine_similarity(q, s, 1, 1e-8),
        }
    }
}

/// Tokenizes one sentence as `[CLS] text [SEP]`, at most `max_len` tokens.
pub fn encode_sentence(tok: &PairTokenizer, text: &str, max_len: usize) -> Result<Encoded> {
    tok.encode(text, &[], max_len)
}

/// Vectors `[n, hidden]` of `texts`, in input order, computed in batches shortest first.
pub fn embed_texts(
    model: &BiEncoder,
    tok: &PairTokenizer,
    texts: &[&str],
    max_len: usize,
    batch_size: usize,
) -> Result<Tensor> {
    let items: Vec<Encoded> = texts
        .iter()
        .map(|t| encode_sentence(tok, t, max_len))
        .collect::<Result<_>>()?;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].len());
    let h = model.encoder.config.hidden_size;
    let mut out = Tensor::zeros([items.len() as i64, h], (Kind::Float, Device::Cpu));
    tch::no_grad(|| {
        for chunk in order.chunks(batch_size.max(1)) {
            let refs: Vec<&Encoded> = chunk.iter().map(|&i| &items[i]).collect();
            let vectors = model.embed(&refs, tok.pad, false);
            let index = Tensor::from_slice(&chunk.iter().map(|&i| i as i64).collect::<Vec<_>>());
            let _ = out.index_copy_(0, &index, &vectors.to_kind(Kind::Float));
        }
    });
    Ok(out)
}

/// Texts' vectors kept between calls, so that a candidate (or question) met again is not
/// encoded twice. Bounded: cleared when it holds more than `CACHE_LIMIT` texts.
struct VectorCache {
    rows: HashMap<String, Tensor>,
}

const CACHE_LIMIT: usize = 200_000;

struct Loaded {
    model: BiEncoder,
    cache: VectorCache,
}

/// A bi-encoder directory served as a [`Ranker`].
pub struct BiEncoderRanker {
    name: String,
    inner: Mutex<Loaded>,
    tokenizer: PairTokenizer,
    settings: BiEncoderSettings,
}

/// Where a bi-encoder card's encoder lives.
pub fn encoder_dir(dir: &Path, settings: &BiEncoderSettings) -> PathBuf {
    match &settings.encoder {
        Some(rel) => dir.join(rel),
        None => dir.to_path_buf(),
    }
}

impl BiEncoderRanker {
    /// Loads a model directory with a `bi-encoder` card: the encoder from
    /// `config.encoder` (default: the directory) and, for classifier scoring, the head from
    /// [`HEAD_FILE`] in the directory.
    pub fn load(dir: &Path, card: &ModelCard) -> Result<BiEncoderRanker> {
        // Classifier scoring needs the head (a missing file is an error); cosine ignores it.
        let classifier = |s: &BiEncoderSettings, _| s.scoring == Scoring::Classifier;
        let (model, tokenizer, settings, _) = read_bi_dir(dir, card, classifier)?;
        Ok(Self::from_parts(
            card.name.clone(),
            model,
            tokenizer,
            settings,
        ))
    }

    /// A pretrained sentence encoder directory (Hugging Face) scored by cosine: the
    /// "no training" baseline.
    pub fn from_base(spec: &str, max_len: usize) -> Result<BiEncoderRanker> {
        let dir = resolve_base(spec)?;
        let (encoder, tokenizer) = load_encoder(&dir)?;
        Ok(Self::from_parts(
            spec.to_string(),
            BiEncoder::new(encoder, None),
            tokenizer,
            BiEncoderSettings {
                scoring: Scoring::Cosine,
                max_len,
                batch_size: default_batch(),
                encoder: None,
            },
        ))
    }

    pub fn from_parts(
        name: String,
        model: BiEncoder,
        tokenizer: PairTokenizer,
        settings: BiEncoderSettings,
    ) -> BiEncoderRanker {
        BiEncoderRanker {
            name,
            inner: Mutex::new(Loaded {
                model,
                cache: VectorCache {
                    rows: HashMap::new(),
                },
            }),
            tokenizer,
            settings,
        }
    }

    pub fn settings(&self) -> &BiEncoderSettings {
        &self.settings
    }

    /// Mean-pooled vectors of `texts`, in order, without the cache (what indexing a large
    /// corpus needs: memory stays one batch of activations and the vectors returned), computed
    /// in batches of `batch_size`, shortest texts together.
    pub fn encode_uncached(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let h = inner.model.encoder.config.hidden_size as usize;
        let vectors = embed_texts(
            &inner.model,
            &self.tokenizer,
            texts,
            self.settings.max_len,
            self.settings.batch_size,
        )?;
        let flat = Vec::<f32>::try_from(&vectors.to_kind(Kind::Float).contiguous().view([-1]))
            .map_err(|e| ModelError::Backend(e.to_string()))?;
        Ok(flat.chunks_exact(h.max(1)).map(<[f32]>::to_vec).collect())
    }

    /// Components of the vectors (the encoder's hidden size).
    pub fn dim(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.model.encoder.config.hidden_size as usize
    }

    /// Vectors `[n, hidden]` of `texts` (cached).
    pub fn vectors(&self, texts: &[&str]) -> Result<Tensor> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Self::vectors_locked(&mut inner, &self.tokenizer, &self.settings, texts)
    }

    fn vectors_locked(
        inner: &mut Loaded,
        tok: &PairTokenizer,
        settings: &BiEncoderSettings,
        texts: &[&str],
    ) -> Result<Tensor> {
        let mut missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !inner.cache.rows.contains_key(*t))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            if inner.cache.rows.len() + missing.len() > CACHE_LIMIT {
                inner.cache.rows.clear();
            }
            let fresh = embed_texts(
                &inner.model,
                tok,
                &missing,
                settings.max_len,
                settings.batch_size,
            )?;
            for (i, t) in missing.iter().enumerate() {
                inner
                    .cache
                    .rows
                    .insert(t.to_string(), fresh.get(i as i64).shallow_clone());
            }
        }
        let rows: Vec<Tensor> = texts
            .iter()
            .map(|t| inner.cache.rows[*t].shallow_clone())
            .collect();
        if rows.is_empty() {
            let h = inner.model.encoder.config.hidden_size;
            return Ok(Tensor::zeros([0, h], (Kind::Float, Device::Cpu)));
        }
        Ok(Tensor::stack(&rows, 0))
    }
}

/// Loads an encoder (any BERT directory, or a bi-/cross-encoder written by ansel) and its tokenizer.
pub fn load_encoder(dir: &Path) -> Result<(CrossEncoder, PairTokenizer)> {
    let (encoder, tokenizer, _) = read_model_dir(dir)?;
    Ok((encoder, tokenizer))
}

/// Reads a directory with a `bi-encoder` card: its settings, the encoder and tokenizer from
/// `config.encoder` (default: the directory) and the classifier head from [`HEAD_FILE`] when
/// `read_head(settings, the file exists)` says so. Returns the encoder's directory too. The
/// one loading path of the ranker and the trainer (stage b).
pub(crate) fn read_bi_dir(
    dir: &Path,
    card: &ModelCard,
    read_head: impl Fn(&BiEncoderSettings, bool) -> bool,
) -> Result<(BiEncoder, PairTokenizer, BiEncoderSettings, PathBuf)> {
    let settings: BiEncoderSettings = card_settings(dir, card)?;
    let enc_dir = encoder_dir(dir, &settings);
    let (encoder, tokenizer) = load_encoder(&enc_dir)?;
    let head_path = dir.join(HEAD_FILE);
    let head = if read_head(&settings, head_path.is_file()) {
        Some(BiEncoder::read_head(
            &head_path,
            encoder.config.hidden_size,
        )?)
    } else {
        None
    };
    Ok((BiEncoder::new(encoder, head), tokenizer, settings, enc_dir))
}

impl Ranker for BiEncoderRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        let mut q_texts = Vec::new();
        let mut s_texts = Vec::new();
        for q in questions {
            for c in &q.candidates {
                q_texts.push(q.text.as_str());
                s_texts.push(c.text.as_str());
            }
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let qv = Self::vectors_locked(&mut inner, &self.tokenizer, &self.settings, &q_texts)?;
        let sv = Self::vectors_locked(&mut inner, &self.tokenizer, &self.settings, &s_texts)?;
        let flat: Vec<f32> = if q_texts.is_empty() {
            Vec::new()
        } else {
            let scores = tch::no_grad(|| inner.model.score(&qv, &sv, self.settings.scoring));
            Vec::<f32>::try_from(&scores.to_kind(Kind::Float))
                .map_err(|e| ModelError::Backend(e.to_string()))?
        };
        Ok(ansel_model::per_question(questions, &flat))
    }
}

/// Precomputed, L2-normalised sentence vectors for cosine top-k retrieval (a first stage:
/// one matrix product per question instead of one encoder pass per candidate).
pub struct SentenceVectors {
    pub texts: Vec<String>,
    /// `[n, hidden]`, rows of unit length.
    vectors: Tensor,
}

impl SentenceVectors {
    /// Encodes every sentence once.
    pub fn build(ranker: &BiEncoderRanker, texts: Vec<String>) -> Result<SentenceVectors> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let v = ranker.vectors(&refs)?;
        Ok(SentenceVectors {
            texts,
            vectors: normalise(&v),
        })
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The `k` sentences nearest to `query` by cosine, best first: (index, cosine).
    pub fn search(
        &self,
        ranker: &BiEncoderRanker,
        query: &str,
        k: usize,
    ) -> Result<Vec<(usize, f32)>> {
        if self.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let q = normalise(&ranker.vectors(&[query])?);
        let sims = self.vectors.matmul(&q.transpose(0, 1)).squeeze_dim(1);
        let k = k.min(self.len()) as i64;
        let (values, indices) = sims.topk(k, 0, true, true);
        let values =
            Vec::<f32>::try_from(&values).map_err(|e| ModelError::Backend(e.to_string()))?;
        let indices =
            Vec::<i64>::try_from(&indices).map_err(|e| ModelError::Backend(e.to_string()))?;
        Ok(indices
            .into_iter()
            .map(|i| i as usize)
            .zip(values)
            .collect())
    }

    /// Saves the vectors (safetensors) and the texts (JSON lines) under `dir`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        write_tensors(
            &dir.join("vectors.safetensors"),
            &[("vectors".to_string(), self.vectors.shallow_clone())],
        )?;
        let mut text = String::new();
        for t in &self.texts {
            text.push_str(&serde_json::to_string(t).expect("a string serializes"));
            text.push('\n');
        }
        ansel_model::write_atomic(&dir.join("texts.jsonl"), text.as_bytes())
    }

    /// Reads vectors written by [`SentenceVectors::save`].
    pub fn load(dir: &Path) -> Result<SentenceVectors> {
        let path = dir.join("texts.jsonl");
        let raw = std::fs::read_to_string(&path).map_err(|e| ModelError::io(&path, e))?;
        let texts: Vec<String> = raw
            .lines()
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| ModelError::Format {
                    path: path.clone(),
                    message: format!("line {}: {e}", i + 1),
                })
            })
            .collect::<Result<_>>()?;
        let vpath = dir.join("vectors.safetensors");
        let vectors = Tensor::read_safetensors(&vpath)
            .map_err(|e| ModelError::Format {
                path: vpath.clone(),
                message: e.to_string(),
            })?
            .into_iter()
            .find(|(n, _)| n == "vectors")
            .map(|(_, t)| t)
            .ok_or_else(|| ModelError::Format {
                path: vpath.clone(),
                message: "tensor `vectors` is missing".into(),
            })?;
        if vectors.size().first().copied() != Some(texts.len() as i64) {
            return Err(ModelError::Format {
                path: vpath,
                message: format!(
                    "{} vectors for {} texts",
                    vectors.size().first().copied().unwrap_or(0),
                    texts.len()
                ),
            });
        }
        Ok(SentenceVectors { texts, vectors })
    }
}

/// Each row of `v` divided by its length (unit vectors).
pub(crate) fn normalise(v: &Tensor) -> Tensor {
    v / v.norm_scalaropt_dim(2, [1], true).clamp_min(1e-12)
}
