//! BERT-family transformers for ansel, on libtorch (through `tch`).
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

pub mod bi_encoder;
pub mod bi_train;
mod config;
mod model;
mod plot;
mod ranker;
mod tokenize;
pub mod train;

pub use bi_encoder::{
    BiEncoder, BiEncoderRanker, BiEncoderSettings, Scoring, SentenceVectors, BI_KIND,
};
pub use config::BertConfig;
pub use model::{Batch, CrossEncoder};
pub use plot::training_svg;
pub use ranker::{CrossEncoderRanker, InputMode, KIND};
pub use tokenize::{Encoded, PairTokenizer};

use ansel_model::{ModelError, Result};
use std::path::{Path, PathBuf};

/// Resolves `--base`: a local Hugging Face directory. Hub ids cannot be fetched by this
/// build (the machines it runs on are offline), so they get an error saying what to do.
pub fn resolve_base(spec: &str) -> Result<PathBuf> {
    let path = Path::new(spec);
    if path.is_dir() {
        for needed in ["config.json", "tokenizer.json", "model.safetensors"] {
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
        format!(
            "{spec:?} is not a local directory; this build does not download from the Hugging Face hub \
             (it runs offline). Download it first, e.g. `huggingface-cli download {spec} --local-dir DIR`, \
             and pass DIR"
        )
    } else {
        format!("{spec:?}: no such model directory")
    };
    Err(ModelError::Unsupported {
        model: KIND.into(),
        message,
    })
}
