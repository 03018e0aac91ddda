//! What a cross-encoder reads: its input layouts, the settings its model card keeps, and the
//! tokenization of one candidate (shared by the libtorch ranker and the ONNX one, so it needs
//! no libtorch).

use crate::{Encoded, PairTokenizer};
use ansel_data::{Candidate, Question};
use ansel_model::Result;
use serde::{Deserialize, Serialize};

/// The `kind` of a cross-encoder's model card.
pub const KIND: &str = "cross-encoder";

/// What the encoder reads besides the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum InputMode {
    /// `[CLS] q [SEP] cand [SEP]`
    #[default]
    Pair,
    /// `[CLS] q [SEP] prev [SEP] cand [SEP] next [SEP]` (LOCT); prev/next empty when the data
    /// has no document order or the candidate is first/last.
    Context,
    /// [`InputMode::Context`] with a segment (token type) of its own for the context: question
    /// 0, candidate 1, previous and next sentence 2 (CASSIE's encoding input; BERT has two
    /// token types, so training adds the third, see [`crate::CrossEncoder::add_token_types`]).
    #[serde(rename = "context-segments")]
    ContextSegments,
}

impl InputMode {
    /// The token types the input uses.
    pub fn token_types(self) -> i64 {
        match self {
            InputMode::Pair | InputMode::Context => 2,
            InputMode::ContextSegments => 3,
        }
    }

    /// The token types the input uses in a family's pair `layout`: RoBERTa's gives every
    /// token type 0, so it cannot tell context segments apart (an error).
    pub fn token_types_in(self, layout: crate::PairLayout) -> std::result::Result<i64, String> {
        match (layout, self) {
            (crate::PairLayout::Bert, _) => Ok(self.token_types()),
            (crate::PairLayout::Roberta, InputMode::ContextSegments) => Err(
                "the RoBERTa pair layout has no token types to tell context segments apart: \
                 train with --context but without --context-segments"
                    .to_string(),
            ),
            (crate::PairLayout::Roberta, _) => Ok(1),
        }
    }
}

/// The cross-encoder's settings kept in `model.json` under `config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CrossEncoderSettings {
    pub input: InputMode,
    pub max_len: usize,
    #[serde(default = "default_batch")]
    pub batch_size: usize,
}

fn default_batch() -> usize {
    32
}

impl CrossEncoderSettings {
    /// The settings of a cross-encoder directory made by other tools (no ansel card, so none
    /// recorded): `[CLS] q [SEP] c [SEP]` pairs as long as its position table allows (less
    /// the two positions RoBERTa-style families reserve), at most 512 tokens.
    pub fn for_uncarded(config: &crate::BertConfig) -> CrossEncoderSettings {
        CrossEncoderSettings {
            input: InputMode::Pair,
            max_len: (config.max_position_embeddings - 2).clamp(8, 512) as usize,
            batch_size: default_batch(),
        }
    }
}

/// The name a model directory without a card goes by: its folder's name.
pub fn dir_name(dir: &std::path::Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Tokenizes one candidate of `question` as model input.
pub fn encode_candidate(
    tok: &PairTokenizer,
    question: &Question,
    cand: &Candidate,
    mode: InputMode,
    max_len: usize,
) -> Result<Encoded> {
    match mode {
        InputMode::Pair => tok.encode(&question.text, &[&cand.text], max_len),
        InputMode::Context | InputMode::ContextSegments => {
            let ctx = cand.context.as_ref();
            let prev = ctx.and_then(|c| c.prev.as_deref()).unwrap_or("");
            let next = ctx.and_then(|c| c.next.as_deref()).unwrap_or("");
            let context = if mode == InputMode::Context { 1 } else { 2 };
            let segments = [(prev, context), (&cand.text, 1), (next, context)];
            tok.encode_typed(&question.text, &segments, max_len)
        }
    }
}
