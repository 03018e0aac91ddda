//! The base cross-encoder's `[CLS]` states, the input of the `cls-vec` node feature
//! (extension, not the paper): the last layer's state at position 0 of each (question,
//! candidate) input, as the base tokenizes it (its card's input mode and length).
//!
//! Encoding every training pair is the slow part of an experiment (WikiQA train: 8,672
//! answered pairs), so states can be cached in a record file ([`crate::search::cached_rows`])
//! keyed by the base's card and the pair's token ids: a sweep encodes each pair once, and a
//! cache never serves the states of another base.

use crate::search::cached_rows;
use ansel_bert::CrossEncoderRanker;
use ansel_data::Question;
use ansel_model::Fingerprint;
use ansel_model::{ModelCard, ModelError, Result};
use std::path::{Path, PathBuf};

/// The `[CLS]` states of a cross-encoder model directory (the EQAG base).
pub struct ClsEncoder {
    ranker: CrossEncoderRanker,
    /// FNV-1a of the base's `model.json` and the length of its weights: part of every cache key.
    base_key: u64,
    /// Floats per state (the encoder's hidden size).
    pub dim: usize,
    /// A record file of states computed before (created if absent); `None`: no cache.
    pub cache: Option<PathBuf>,
}

impl ClsEncoder {
    /// The encoder of the base `spec`, which must be a cross-encoder model directory: any other
    /// base (a built-in ranker, another model family, an ONNX export) has no `[CLS]` state,
    /// and the error says so, naming the `cls-vec` option.
    pub fn for_base(spec: &str) -> Result<ClsEncoder> {
        let unsupported = |message: String| ModelError::Unsupported {
            model: crate::KIND.into(),
            message,
        };
        let dir = Path::new(spec);
        if !dir.is_dir() {
            return Err(unsupported(format!(
                "node feature `cls-vec` needs a cross-encoder base (a model directory of kind {:?}); the base {spec:?} is not a model directory",
                ansel_bert::KIND
            )));
        }
        let card = ModelCard::read(dir)?;
        if card.kind != ansel_bert::KIND {
            return Err(unsupported(format!(
                "node feature `cls-vec` needs a cross-encoder base (kind {:?}); the base {spec} is a {:?} model, which has no [CLS] state",
                ansel_bert::KIND,
                card.kind
            )));
        }
        let card_path = dir.join(ansel_model::CARD_FILE);
        let card_bytes = std::fs::read(&card_path).map_err(|e| ModelError::io(&card_path, e))?;
        let weights = dir.join("model.safetensors");
        let weights_len = std::fs::metadata(&weights)
            .map_err(|e| ModelError::io(&weights, e))?
            .len();
        let ranker = CrossEncoderRanker::load(dir, &card)?;
        Ok(ClsEncoder {
            dim: ranker.hidden_size(),
            ranker,
            base_key: Fingerprint::default()
                .bytes(card_bytes)
                .bytes(weights_len.to_le_bytes())
                .value(),
            cache: None,
        })
    }

    /// The `[CLS]` state of every candidate of `questions`, in order (`dim` floats each), read
    /// from the cache where there and encoded (and appended to it) otherwise.
    pub fn encode(&self, questions: &[Question]) -> Result<Vec<f32>> {
        let items = self.ranker.encode_all(questions)?;
        let Some(path) = &self.cache else {
            return Ok(self.ranker.cls_states(&items));
        };
        let keys: Vec<u64> = items
            .iter()
            .map(|it| {
                Fingerprint::default()
                    .bytes(self.base_key.to_le_bytes())
                    .bytes(it.ids.iter().flat_map(|x| x.to_le_bytes()))
                    .bytes([0xff])
                    .bytes(it.types.iter().flat_map(|x| x.to_le_bytes()))
                    .value()
            })
            .collect();
        cached_rows(path, self.dim, &keys, |missing| {
            let todo: Vec<_> = missing.iter().map(|&i| items[i].clone()).collect();
            Ok(self.ranker.cls_states(&todo))
        })
    }
}
