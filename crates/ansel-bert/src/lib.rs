//! BERT-family transformers for ansel, on libtorch (through `tch`).
//!
//! Without the `torch` feature only what needs no libtorch is built: [`BertConfig`],
//! [`PairTokenizer`], the encoder families and the cross-encoder's input ([`encode_candidate`]),
//! which the ONNX Runtime ranker uses.
//!
//! - [`BertConfig`] and [`PairTokenizer`] read a Hugging Face model directory
//!   (`config.json`, `tokenizer.json`, `model.safetensors`).
//! - [`CrossEncoder`] is the encoder with a one-logit classification head on the
//!   pooled `[CLS]` output: it reads "[CLS] question [SEP] candidate [SEP]"
//!   (or, with context, "[CLS] q [SEP] prev [SEP] cand [SEP] next [SEP]", the
//!   LOCT baseline of the CASSIE paper) and scores the pair.
//! - [`CrossEncoderRanker`] serves a trained model directory as a `Ranker`;
//!   [`train::train`] fine-tunes one (AdamW, warm-up + linear decay, length
//!   bucketing, gradient accumulation, early stopping on dev MAP, resumable
//!   checkpoints), and TANDA is transfer-then-adapt with two such runs.
//! - [`BiEncoder`] is SEDAN's Siamese bi-encoder (mean-pooled vectors, classifier on
//!   `[q ; s ; |q - s|]` or cosine); [`BiEncoderRanker`] serves it, [`bi_train`] trains it,
//!   [`SentenceVectors`] is cosine top-k over precomputed vectors.
//! - [`WordEncoder`] runs a sentence encoder on words, each alone: the encoder of
//!   ansel-vectors' `minilm-encoded` word vectors (`--vectors minilm-encoded`).
//! - [`run`] is the training loop these trainers share (and ansel-reader's span extractor):
//!   a trainer implements [`run::Trainee`] and calls [`run::run`].

#[cfg(feature = "torch")]
pub mod bi_encoder;
#[cfg(feature = "torch")]
pub mod bi_train;
mod config;
pub mod family;
mod input;
#[cfg(feature = "torch")]
mod model;
#[cfg(feature = "torch")]
mod plot;
#[cfg(feature = "torch")]
mod ranker;
#[cfg(feature = "torch")]
pub mod run;
#[cfg(feature = "torch")]
#[doc(hidden)]
pub mod testing;
mod tokenize;
#[cfg(feature = "torch")]
pub mod train;
#[cfg(feature = "torch")]
mod word_encoder;

#[cfg(feature = "torch")]
pub use bi_encoder::{
    BiEncoder, BiEncoderRanker, BiEncoderSettings, Scoring, SentenceVectors, BI_KIND,
};
pub use config::BertConfig;
pub use family::{parameter_shapes, EncoderFamily, PairLayout};
pub use input::{dir_name, encode_candidate, CrossEncoderSettings, InputMode, KIND};
#[cfg(feature = "torch")]
pub use model::{relative_buckets, Batch, CrossEncoder};
#[cfg(feature = "torch")]
pub use plot::training_svg;
#[cfg(feature = "torch")]
pub use ranker::{cls_encoded, CrossEncoderRanker};
pub use tokenize::{by_length, Encoded, PairTokenizer};
#[cfg(feature = "torch")]
pub use word_encoder::WordEncoder;

use ansel_model::{ModelError, Result};
use std::path::{Path, PathBuf};

/// Reads a BERT model directory: the encoder (`config.json`, `model.safetensors`), its
/// tokenizer (`tokenizer.json`) and the names of the parameters the weights lacked
/// (initialised randomly: a fresh classifier or pooler). The one loading path of the
/// cross-encoder and bi-encoder, rankers and trainers alike.
#[cfg(feature = "torch")]
pub fn read_model_dir(dir: &Path) -> Result<(CrossEncoder, PairTokenizer, Vec<String>)> {
    let config = BertConfig::read(&dir.join("config.json"))?;
    let (model, initialised) = CrossEncoder::load(config, &dir.join("model.safetensors"))?;
    let tokenizer = PairTokenizer::read_for(&dir.join("tokenizer.json"), model.family().layout())?;
    Ok((model, tokenizer, initialised))
}

/// The card a Hugging Face cross-encoder directory without one (`config.json`, `tokenizer.json`,
/// `model.safetensors` with a one-logit head, e.g. cross-encoder/ms-marco-MiniLM-L-6-v2 or
/// BAAI/bge-reranker-base) stands for: kind [`KIND`], its folder's name and
/// [`CrossEncoderSettings::for_uncarded`]. Serving and `ansel quantize` both read it.
pub fn uncarded_card(dir: &Path) -> Result<ansel_model::ModelCard> {
    let config = BertConfig::read(&dir.join("config.json"))?;
    let settings = CrossEncoderSettings::for_uncarded(&config);
    Ok(ansel_model::ModelCard::new(
        KIND,
        &dir_name(dir),
        serde_json::to_value(&settings).map_err(|e| ModelError::Backend(e.to_string()))?,
    ))
}

/// Whether `dir` is a Hugging Face model directory without an ansel card (what
/// [`uncarded_card`] describes).
pub fn is_uncarded_hf_dir(dir: &Path) -> bool {
    !dir.join(ansel_model::CARD_FILE).exists() && MODEL_FILES.iter().all(|f| dir.join(f).is_file())
}

/// A card's `config` read as a model's settings; the error names the card and the field.
pub fn card_settings<T: serde::de::DeserializeOwned>(
    dir: &Path,
    card: &ansel_model::ModelCard,
) -> Result<T> {
    ansel_model::json::from_value(card.config.clone(), "config").map_err(|message| {
        ModelError::Format {
            path: dir.join(ansel_model::CARD_FILE),
            message,
        }
    })
}

/// The files a BERT model directory needs.
const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The card of a base model directory when it is a model of `kind` trained by ansel (so that a
/// model trained from it can name the stages before it); `None` for other directories.
pub fn base_card(dir: &Path, kind: &str) -> Result<Option<ansel_model::ModelCard>> {
    if !dir.join(ansel_model::CARD_FILE).is_file() {
        return Ok(None);
    }
    Ok(Some(ansel_model::ModelCard::read(dir)?).filter(|card| card.kind == kind))
}

/// Resolves `--base`: a local Hugging Face directory, or a hub id (`owner/name`), which is
/// downloaded into the Hugging Face cache (`$HF_HOME`, else `~/.cache/huggingface`) when the
/// machine is online; offline, the error says how to pass a directory instead.
pub fn resolve_base(spec: &str) -> Result<PathBuf> {
    let path = Path::new(spec);
    if path.is_dir() {
        for needed in MODEL_FILES {
            if !path.join(needed).is_file() {
                return Err(ModelError::Format {
                    path: path.join(needed),
                    message: "missing: a BERT model directory needs config.json, tokenizer.json and model.safetensors".to_string(),
                });
            }
        }
        return Ok(path.to_path_buf());
    }
    let looks_like_hub_id =
        spec.split('/').count() == 2 && !spec.starts_with('.') && !path.exists();
    let message = if looks_like_hub_id {
        match download_from_hub(spec) {
            Ok(dir) => return Ok(dir),
            Err(err) => format!(
                "{spec:?} is not a local directory and cannot be downloaded from the Hugging Face hub \
                 ({err}). Offline, download it elsewhere (e.g. `huggingface-cli download {spec} \
                 --local-dir DIR`) and pass DIR"
            ),
        }
    } else {
        format!("{spec:?}: no such model directory")
    };
    Err(ModelError::Unsupported {
        model: KIND.into(),
        message,
    })
}

/// Fetches a model's files from the hub (or finds them in the cache) and returns the
/// snapshot directory that holds them all.
fn download_from_hub(id: &str) -> std::result::Result<PathBuf, String> {
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(true)
        .build()
        .map_err(|e| e.to_string())?;
    let repo = api.model(id.to_string());
    let mut dir = None;
    for file in MODEL_FILES {
        let local = repo.get(file).map_err(|e| format!("{file}: {e}"))?;
        dir = local.parent().map(Path::to_path_buf);
    }
    dir.ok_or_else(|| "the hub returned no files".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_missing_a_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), "{}").unwrap();
        let err = resolve_base(dir.path().to_str().unwrap()).unwrap_err();
        assert!(err.to_string().contains("tokenizer.json"), "{err}");
    }

    #[test]
    fn an_unreachable_hub_says_how_to_pass_a_directory() {
        // A closed local port stands in for the hub, so the test never downloads anything.
        let cache = tempfile::tempdir().unwrap();
        std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9");
        std::env::set_var("HF_HOME", cache.path());
        let err = resolve_base("nobody/no-such-model")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot be downloaded from the Hugging Face hub")
                && err.contains("--local-dir DIR"),
            "{err}"
        );
        let err = resolve_base("./no/such/dir").unwrap_err().to_string();
        assert!(err.contains("no such model directory"), "{err}");
    }
}
