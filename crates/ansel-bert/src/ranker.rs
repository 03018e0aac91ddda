use crate::{
    card_settings, encode_candidate, read_model_dir, resolve_base, Batch, CrossEncoder,
    CrossEncoderSettings, Encoded, PairTokenizer,
};
use ansel_data::Question;
use ansel_model::{ModelCard, ModelError, Ranker, Result};
use ansel_torch::tch::{self, Kind};
use std::path::Path;
use std::sync::Mutex;

/// Scores encoded pairs in batches of `batch_size`, shortest first to pad little;
/// returns the scores in input order.
pub fn score_encoded(
    model: &CrossEncoder,
    items: &[Encoded],
    pad: i64,
    batch_size: usize,
) -> Vec<f32> {
    per_item(model, items, pad, batch_size, 1, |m, b| m.logits(b, false))
}

/// The last layer's `[CLS]` state (position 0, `hidden_size` floats) of each encoded pair,
/// batched as [`score_encoded`]; item-major, in input order.
pub fn cls_encoded(
    model: &CrossEncoder,
    items: &[Encoded],
    pad: i64,
    batch_size: usize,
) -> Vec<f32> {
    let width = model.config.hidden_size as usize;
    per_item(model, items, pad, batch_size, width, |m, b| {
        m.hidden_states(b, false).select(1, 0)
    })
}

/// `width` floats per item from `forward` (`[batch]` or `[batch, width]`), in batches of
/// `batch_size` sorted shortest first; item-major, in input order.
fn per_item(
    model: &CrossEncoder,
    items: &[Encoded],
    pad: i64,
    batch_size: usize,
    width: usize,
    forward: impl Fn(&CrossEncoder, &Batch) -> tch::Tensor,
) -> Vec<f32> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].len());
    let mut out = vec![0f32; items.len() * width];
    tch::no_grad(|| {
        for chunk in order.chunks(batch_size.max(1)) {
            let refs: Vec<&Encoded> = chunk.iter().map(|&i| &items[i]).collect();
            let values = forward(model, &Batch::new(&refs, pad))
                .to_kind(Kind::Float)
                .reshape([-1]);
            let values: Vec<f32> = Vec::<f32>::try_from(&values).unwrap_or_default();
            for (&i, v) in chunk.iter().zip(values.chunks_exact(width)) {
                out[i * width..(i + 1) * width].copy_from_slice(v);
            }
        }
    });
    out
}

/// A trained cross-encoder directory served as a [`Ranker`].
pub struct CrossEncoderRanker {
    name: String,
    model: Mutex<CrossEncoder>,
    tokenizer: PairTokenizer,
    settings: CrossEncoderSettings,
}

impl CrossEncoderRanker {
    /// Loads a model directory written by `ansel train --model cross-encoder`.
    pub fn load(dir: &Path, card: &ModelCard) -> Result<CrossEncoderRanker> {
        let settings: CrossEncoderSettings = card_settings(dir, card)?;
        let (model, tokenizer, initialised) = read_model_dir(dir)?;
        if !initialised.is_empty() {
            return Err(ModelError::Format {
                path: dir.join("model.safetensors"),
                message: format!("trained model lacks {}", initialised.join(", ")),
            });
        }
        let types = settings
            .input
            .token_types_in(model.family().layout())
            .map_err(|message| ModelError::Format {
                path: dir.join(ansel_model::CARD_FILE),
                message,
            })?;
        if model.config.type_vocab_size < types {
            return Err(ModelError::Format {
                path: dir.join("config.json"),
                message: format!(
                    "field `type_vocab_size`: {} token types, but the input {:?} uses {types}",
                    model.config.type_vocab_size, settings.input,
                ),
            });
        }
        Ok(CrossEncoderRanker {
            name: card.name.clone(),
            model: Mutex::new(model),
            tokenizer,
            settings,
        })
    }

    /// Loads a Hugging Face cross-encoder directory that has no ansel card (e.g.
    /// cross-encoder/ms-marco-MiniLM-L-6-v2: `config.json`, `tokenizer.json`,
    /// `model.safetensors` with a one-logit classifier), with
    /// [`CrossEncoderSettings::for_uncarded`]. A directory whose weights lack the classifier
    /// is refused.
    pub fn load_hf_dir(dir: &Path) -> Result<CrossEncoderRanker> {
        CrossEncoderRanker::load(dir, &crate::uncarded_card(dir)?)
    }

    /// Loads a Hugging Face BERT directory as an untrained cross-encoder (random head);
    /// for throughput checks.
    pub fn from_base(spec: &str, settings: CrossEncoderSettings) -> Result<CrossEncoderRanker> {
        let (model, tokenizer, _) = read_model_dir(&resolve_base(spec)?)?;
        Ok(CrossEncoderRanker {
            name: spec.to_string(),
            model: Mutex::new(model),
            tokenizer,
            settings,
        })
    }

    pub fn tokenizer(&self) -> &PairTokenizer {
        &self.tokenizer
    }

    /// Width of the [`CrossEncoderRanker::cls_states`] vectors (the encoder's hidden size).
    pub fn hidden_size(&self) -> usize {
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        model.config.hidden_size as usize
    }

    /// The tokenized input of every candidate of `questions` (the card's input mode and
    /// length), in order: what [`Ranker::score_all`] and [`CrossEncoderRanker::cls_states`] read.
    pub fn encode_all(&self, questions: &[Question]) -> Result<Vec<Encoded>> {
        let mut items = Vec::new();
        for q in questions {
            for c in &q.candidates {
                items.push(encode_candidate(
                    &self.tokenizer,
                    q,
                    c,
                    self.settings.input,
                    self.settings.max_len,
                )?);
            }
        }
        Ok(items)
    }

    /// The last layer's `[CLS]` state of already-encoded pairs ([`Self::hidden_size`] floats
    /// each, item-major): the vector the classification head reads (before the pooler).
    pub fn cls_states(&self, items: &[Encoded]) -> Vec<f32> {
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        cls_encoded(&model, items, self.tokenizer.pad, self.settings.batch_size)
    }

    /// Scores already-encoded pairs (used by the throughput benchmark).
    pub fn score_pairs(&self, items: &[Encoded]) -> Vec<f32> {
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        score_encoded(&model, items, self.tokenizer.pad, self.settings.batch_size)
    }
}

impl Ranker for CrossEncoderRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn tokenize(
        &self,
        text: &str,
        pair: Option<&str>,
        special: bool,
    ) -> Option<Result<Vec<ansel_model::Token>>> {
        Some(self.tokenizer.tokens(text, pair, special))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        let items = self.encode_all(questions)?;
        let flat = self.score_pairs(&items);
        Ok(ansel_model::per_question(questions, &flat))
    }
}
