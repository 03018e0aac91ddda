//! A span reader (`ansel train --model span-extractor`) as an ONNX graph: the encoder with its
//! start/end head on every position ([`crate::graph::Head::Span`]), run through ONNX Runtime.
//! Input layout and span decoding are `ansel_reader`'s, so the graph reads exactly what the
//! libtorch model reads and picks spans the same way.

use crate::{int8_batch, open_graph, padded, run_output, Precision};
use ansel_bert::{by_length, card_settings, Encoded, PairTokenizer};
use ansel_model::{ModelCard, ModelError, Result};
use ansel_reader::input::{decode, SpanEncoder, SpanInput};
use ansel_reader::{Extraction, Reading, SpanReader, SpanSettings};
use ort::session::Session;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Mutex;

/// The `kind` of the card of a span reader converted to ONNX.
pub const SPAN_KIND: &str = "span-extractor-onnx";

/// The graph's output: start and end logits of every position, `[batch, len, 2]`.
pub const SPAN_OUTPUT: &str = "span_logits";

/// The settings of a converted span reader's card (`config`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpanReaderSettings {
    /// How the reader reads (the source model's settings).
    #[serde(flatten)]
    pub span: SpanSettings,
    pub precision: Precision,
    /// What `precision` means, in words.
    pub scheme: String,
    /// The source model directory, as given to `ansel quantize`.
    pub source: String,
    /// The source card's name.
    pub source_name: String,
    pub opset: i64,
}

/// A converted span reader.
pub struct OnnxSpanReader {
    name: String,
    session: Mutex<Session>,
    tokenizer: PairTokenizer,
    settings: SpanReaderSettings,
    /// Readings run through the graph together (an int8 graph: one, so a span is its own).
    batch_size: usize,
}

impl OnnxSpanReader {
    /// Loads a directory written by [`crate::convert`] from a span extractor.
    pub fn load(dir: &Path, card: &ModelCard) -> Result<OnnxSpanReader> {
        if card.kind != SPAN_KIND {
            return Err(ModelError::Format {
                path: dir.join(ansel_model::CARD_FILE),
                message: format!("field `kind`: {:?} is not a {SPAN_KIND}", card.kind),
            });
        }
        let settings: SpanReaderSettings = card_settings(dir, card)?;
        let (_, tokenizer, session) = open_graph(dir, &dir.join(crate::ONNX_FILE))?;
        let batch_size = match settings.precision {
            Precision::Int8 => int8_batch(&card.name)?,
            Precision::Fp32 => 16,
        };
        Ok(OnnxSpanReader {
            name: card.name.clone(),
            session: Mutex::new(session),
            tokenizer,
            settings,
            batch_size,
        })
    }

    /// Reads a model directory's card and loads it.
    pub fn open(dir: &Path) -> Result<OnnxSpanReader> {
        Self::load(dir, &ModelCard::read(dir)?)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Per-position logits (`[start, end]` interleaved) of each input.
    fn logits(&self, inputs: &[SpanInput]) -> Result<Vec<Vec<f32>>> {
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        by_length(
            inputs,
            |i| i.enc.len(),
            self.batch_size,
            |batch| {
                let encoded: Vec<&Encoded> = batch.iter().map(|i| &i.enc).collect();
                let (n, len, ids, types, mask) = padded(&encoded, self.tokenizer.pad);
                let flat = run_output(&mut session, [n, len], ids, types, mask, SPAN_OUTPUT)?;
                if flat.len() != n * len * 2 {
                    return Err(ModelError::Backend(format!(
                        "the graph gives {} values for {n} inputs of {len} positions",
                        flat.len()
                    )));
                }
                Ok(flat.chunks_exact(len * 2).map(<[f32]>::to_vec).collect())
            },
        )
    }
}

impl SpanReader for OnnxSpanReader {
    fn settings(&self) -> &SpanSettings {
        &self.settings.span
    }

    fn extract_all(&self, readings: &[Reading]) -> Result<Vec<Option<Extraction>>> {
        let encoder = SpanEncoder {
            tokenizer: &self.tokenizer,
            settings: self.settings.span,
        };
        let inputs: Vec<SpanInput> = readings
            .iter()
            .map(|r| encoder.encode(r))
            .collect::<Result<_>>()?;
        let logits = self.logits(&inputs)?;
        Ok(inputs
            .iter()
            .zip(&logits)
            .zip(readings)
            .map(|((inp, l), r)| decode(inp, l, r.sentence, self.settings.span.max_answer_tokens))
            .collect())
    }
}
