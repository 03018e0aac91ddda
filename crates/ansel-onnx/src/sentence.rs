//! A sentence encoder (the encoder of a cosine bi-encoder such as all-mpnet-base-v2) as an ONNX
//! graph: the encoder with mean pooling ([`crate::graph::Head::MeanPool`]), scored through ONNX
//! Runtime. As a [`Ranker`] it scores a candidate by the cosine of its vector with the
//! question's, as `ansel_bert::BiEncoderRanker` does with cosine scoring, at the cost of a
//! student cross-encoder when int8.

use crate::{int8_batch, open_graph, padded, run_output, Precision};
use ansel_bert::{by_length, card_settings, Encoded, PairTokenizer};
use ansel_data::Question;
use ansel_model::{ModelCard, ModelError, Ranker, Result};
use ort::session::Session;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Mutex;

/// The `kind` of the card of a sentence encoder converted to ONNX.
pub const SENTENCE_KIND: &str = "sentence-encoder-onnx";

/// The graph's output: one mean-pooled vector per text, `[batch, hidden]`.
pub const EMBEDDINGS_OUTPUT: &str = "embeddings";

/// The settings of a converted sentence encoder's card (`config`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SentenceSettings {
    /// Tokens per text (question or candidate), `[CLS]` and `[SEP]` included.
    pub max_len: usize,
    /// Texts run through an fp32 graph together (an int8 graph runs one at a time).
    pub batch_size: usize,
    pub precision: Precision,
    /// What `precision` means, in words.
    pub scheme: String,
    /// The source model directory, as given to `ansel quantize`.
    pub source: String,
    /// The source card's name.
    pub source_name: String,
    pub opset: i64,
}

/// A converted sentence encoder served as a [`Ranker`] (cosine of mean-pooled vectors).
pub struct SentenceRanker {
    name: String,
    /// Components of a vector (the encoder's hidden size).
    dim: usize,
    session: Mutex<Session>,
    tokenizer: PairTokenizer,
    settings: SentenceSettings,
    /// Texts run through the graph together.
    batch_size: usize,
}

impl SentenceRanker {
    /// Loads a directory written by [`crate::convert`] from a cosine bi-encoder.
    pub fn load(dir: &Path, card: &ModelCard) -> Result<SentenceRanker> {
        let settings: SentenceSettings = card_settings(dir, card)?;
        let (config, tokenizer, session) = open_graph(dir, &dir.join(crate::ONNX_FILE))?;
        let batch_size = match settings.precision {
            Precision::Int8 => int8_batch(&card.name)?,
            Precision::Fp32 => settings.batch_size.max(1),
        };
        Ok(SentenceRanker {
            name: card.name.clone(),
            dim: config.hidden_size as usize,
            session: Mutex::new(session),
            tokenizer,
            settings,
            batch_size,
        })
    }

    /// Runs `texts` texts through the graph together from now on. For an int8 graph a text's
    /// vector then depends slightly on the texts batched with it (activations are quantized
    /// with one scale per batch): right for indexing many texts, where it is measured to stay
    /// within cosine 0.99 of float32, not for scores that must be each pair's own.
    pub fn with_batch_size(mut self, texts: usize) -> SentenceRanker {
        self.batch_size = texts.max(1);
        self
    }

    /// Components of a vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The card's settings.
    pub fn settings(&self) -> &SentenceSettings {
        &self.settings
    }

    /// Mean-pooled vectors of `texts`, in order (shortest texts batched together).
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let items = texts
            .iter()
            .map(|t| self.tokenizer.encode(t, &[], self.settings.max_len))
            .collect::<Result<Vec<Encoded>>>()?;
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        by_length(&items, Encoded::len, self.batch_size, |batch| {
            embed_batch(&mut session, batch, self.tokenizer.pad)
        })
    }
}

/// The cosine of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator > 0.0 {
        dot / denominator
    } else {
        0.0
    }
}

/// Runs one padded batch of single texts; returns one vector per row.
fn embed_batch(session: &mut Session, items: &[&Encoded], pad: i64) -> Result<Vec<Vec<f32>>> {
    let (n, len, ids, types, mask) = padded(items, pad);
    let flat = run_output(session, [n, len], ids, types, mask, EMBEDDINGS_OUTPUT)?;
    if n == 0 || flat.len() % n != 0 {
        return Err(ModelError::Backend(format!(
            "the graph gives {} values for {n} texts",
            flat.len()
        )));
    }
    Ok(flat
        .chunks_exact(flat.len() / n)
        .map(<[f32]>::to_vec)
        .collect())
}

impl Ranker for SentenceRanker {
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

    /// A text's vector depends on that text alone (an int8 graph runs one text at a time), so
    /// a pair's score is its own.
    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        questions
            .iter()
            .map(|q| {
                let mut texts = vec![q.text.as_str()];
                texts.extend(q.candidates.iter().map(|c| c.text.as_str()));
                let vectors = self.encode(&texts)?;
                Ok(vectors[1..]
                    .iter()
                    .map(|v| cosine(&vectors[0], v))
                    .collect())
            })
            .collect()
    }
}
