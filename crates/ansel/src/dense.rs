//! The sentence encoders of dense retrieval: a bi-encoder (a model of kind `bi-encoder` by name
//! or directory, such as `minilm-l6-cosine`, or a sentence-transformers directory that mean-pools)
//! as the [`Encoder`] that `ansel index --dense` stores vectors with and that the dense and
//! hybrid retrievers encode questions with.

use ansel_index::{Encoder, IndexError, SentenceIndex};
use anyhow::{bail, Context, Result};
#[cfg(feature = "torch")]
use std::path::Path;
use std::sync::Arc;

/// The encoder named `spec`: a bi-encoder model name or directory, or a sentence-transformers
/// directory (config.json, tokenizer.json, model.safetensors) with mean pooling. The index
/// records it by name, or by absolute path when given a directory.
pub fn load_encoder(spec: &str) -> Result<Arc<dyn Encoder>> {
    load_onnx(spec)
        .transpose()
        .unwrap_or_else(|| load(spec))
        .with_context(|| format!("cannot load the sentence encoder {spec}"))
}

/// A sentence encoder converted to ONNX (`ansel quantize` of a cosine bi-encoder, kind
/// `sentence-encoder-onnx`), which needs no libtorch; `None` when `spec` names another model.
fn load_onnx(spec: &str) -> Result<Option<Arc<dyn Encoder>>> {
    let Ok(dir) = crate::models::model_dir(spec) else {
        return Ok(None);
    };
    let card = ansel_model::ModelCard::read(&dir)?;
    if card.kind != ansel_onnx::SENTENCE_KIND {
        return Ok(None);
    }
    let mut ranker = ansel_onnx::SentenceRanker::load(&dir, &card)?;
    if std::env::var(ansel_onnx::INT8_BATCH_ENV).is_err() {
        // Batches of texts encode 1.6x faster than one text at a time, and a question is
        // encoded alone whatever the batch size (docs/results/scale.md).
        ranker = ranker.with_batch_size(INDEX_BATCH);
    }
    let model = if std::path::Path::new(spec).is_dir() {
        dir.canonicalize()?.to_string_lossy().into_owned()
    } else {
        spec.to_string()
    };
    Ok(Some(Arc::new(OnnxVectors { model, ranker })))
}

/// Texts an ONNX sentence encoder runs together when indexing.
const INDEX_BATCH: usize = 32;

struct OnnxVectors {
    model: String,
    ranker: ansel_onnx::SentenceRanker,
}

impl Encoder for OnnxVectors {
    fn model(&self) -> &str {
        &self.model
    }

    fn dim(&self) -> usize {
        self.ranker.dim()
    }

    fn encode(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, String> {
        self.ranker.encode(texts).map_err(|e| e.to_string())
    }
}

/// The encoder that made `index`'s vectors, loaded by the name the index records and checked
/// against it (the vector of a probe sentence): what encodes questions for dense retrieval.
pub fn query_encoder(index: &SentenceIndex) -> Result<Arc<dyn Encoder>> {
    let Some(settings) = index.dense_settings()? else {
        return Err(IndexError::NoVectors(index.dir().to_path_buf()).into());
    };
    let encoder = load_encoder(&settings.model).with_context(|| {
        format!(
            "index {}: its vectors were made by {}",
            index.dir().display(),
            settings.model
        )
    })?;
    settings.check_encoder(encoder.as_ref(), index.dir())?;
    Ok(encoder)
}

#[cfg(not(feature = "torch"))]
fn load(_spec: &str) -> Result<Arc<dyn Encoder>> {
    bail!(
        "{_spec}: this build has no libtorch; make dense vectors with a sentence encoder in ONNX \
         (`ansel quantize --model minilm-l6-cosine --out DIR`, or vendor/models/minilm-l6-cosine-int8 \
         from scripts/sentence-encoders.sh) or use the full build"
    )
}

#[cfg(feature = "torch")]
fn load(spec: &str) -> Result<Arc<dyn Encoder>> {
    use ansel_bert::{BiEncoderRanker, BI_KIND};
    use ansel_model::{ModelCard, CARD_FILE};
    let path = Path::new(spec);
    let identity = if path.is_dir() {
        path.canonicalize()
            .with_context(|| format!("cannot resolve {}", path.display()))?
            .to_string_lossy()
            .into_owned()
    } else {
        spec.to_string()
    };
    let ranker = if path.is_dir() && !path.join(CARD_FILE).is_file() {
        check_mean_pooling(path)?;
        BiEncoderRanker::from_base(spec, sentence_transformers_max_len(path))?
    } else {
        let dir = crate::models::model_dir(spec)?;
        let card = ModelCard::read(&dir)?;
        if card.kind != BI_KIND {
            bail!(
                "{spec} is a {} model; dense vectors need a sentence encoder: a bi-encoder model \
                 (e.g. minilm-l6-cosine) or a sentence-transformers directory that mean-pools",
                card.kind
            );
        }
        BiEncoderRanker::load(&dir, &card)?
    };
    let dim = ranker.dim();
    Ok(Arc::new(BiEncoderVectors {
        model: identity,
        ranker,
        dim,
    }))
}

/// A sentence-transformers directory says how it pools in `1_Pooling/config.json`; ansel's
/// bi-encoder mean-pools, so any other pooling is refused (no file: taken as mean pooling).
#[cfg(feature = "torch")]
fn check_mean_pooling(dir: &Path) -> Result<()> {
    let path = dir.join("1_Pooling/config.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let config: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    if config.get("pooling_mode_mean_tokens") == Some(&serde_json::Value::Bool(true)) {
        return Ok(());
    }
    bail!(
        "{}: the model pools otherwise than by the mean of its tokens, which is the only \
         pooling ansel's bi-encoder does",
        path.display()
    )
}

/// The token limit a sentence-transformers directory sets (`sentence_bert_config.json`), else
/// 128 (what the committed bi-encoder cards use).
#[cfg(feature = "torch")]
fn sentence_transformers_max_len(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("max_seq_length")?.as_u64())
        .map_or(128, |n| n as usize)
}

#[cfg(feature = "torch")]
struct BiEncoderVectors {
    model: String,
    ranker: ansel_bert::BiEncoderRanker,
    dim: usize,
}

#[cfg(feature = "torch")]
impl Encoder for BiEncoderVectors {
    fn model(&self) -> &str {
        &self.model
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn encode(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, String> {
        self.ranker
            .encode_uncached(texts)
            .map_err(|e| e.to_string())
    }
}
