//! The contract every ansel model shares.
//!
//! A model is a [`Ranker`]: given one question with its candidate list it
//! returns one score per candidate, higher meaning more likely an answer. The
//! evaluator, the CLI, the cascade and the server only ever see this trait, so
//! a new model is one new module that implements it.
//!
//! A trained model is a directory holding its weights and a `model.json`
//! [`ModelCard`]: which kind of model it is (the loader the CLI dispatches
//! on) and its [`TrainingRecord`] (data, hyper-parameters, seed, metrics).
//! Files are written atomically ([`write_atomic`], [`replace_dir`]) so a crash
//! never leaves a half-written model behind.

mod card;
mod chunk;
mod files;
mod fingerprint;
mod fusion;
pub mod train;

/// JSON deserialization whose errors name the field at fault (model cards, configs, requests).
pub use ansel_data::json;

pub use card::{ModelCard, TrainingRecord, CARD_FILE};
pub use chunk::{Chunked, Windows};
pub use files::{replace_dir, write_atomic, write_questions};
pub use fingerprint::Fingerprint;
pub use fusion::{
    add_standardised, Fusion, FusionMember, FusionWeight, PairFusion, PairFusionSettings,
    PAIR_FUSION_KIND,
};

use ansel_data::Question;
use std::path::PathBuf;

/// Errors a model can raise.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The model cannot score this input (e.g. `rr` on data without document order).
    #[error("{model}: {message}")]
    Unsupported { model: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A model file exists but is not what it should be.
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    /// Anything else a model backend reports (tensor library errors, ...).
    #[error("{0}")]
    Backend(String),
}

impl ModelError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, ModelError>;

/// Scores a question's candidates.
pub trait Ranker: Send + Sync {
    /// The name reports show for this model.
    fn name(&self) -> &str;

    /// One score per candidate of `question`, in candidate order.
    fn score(&self, question: &Question) -> Result<Vec<f32>>;

    /// Scores many questions; models that batch across questions override this.
    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        questions.iter().map(|q| self.score(q)).collect()
    }

    /// Whether a candidate's score depends on the other candidates scored with
    /// it (an RNN over the list, scores normalised per question). Such a model
    /// must see a question's whole candidate list in one call, so the cascade
    /// never splits the list into chunks for it.
    fn reads_whole_list(&self) -> bool {
        false
    }

    /// The model's tokens for `text`, or for the pair `text` + `pair` as the model reads it,
    /// with the special tokens when `special` (what text-embeddings-inference's `/tokenize`
    /// returns). `None`: the model reads no tokens of a vocabulary (lexical models).
    fn tokenize(
        &self,
        _text: &str,
        _pair: Option<&str>,
        _special: bool,
    ) -> Option<Result<Vec<Token>>> {
        None
    }
}

/// One token of a model's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Its id in the model's vocabulary.
    pub id: u32,
    /// The piece of text it stands for (its own form for a special token).
    pub text: String,
    /// A special token (`[CLS]`, `</s>`, ...) added around the text.
    pub special: bool,
    /// Byte offsets of the piece in the text it came from; `None` for special tokens.
    pub start: Option<usize>,
    pub stop: Option<usize>,
}

/// Splits the scores of many questions' candidates, concatenated in question order, back into
/// one list per question (what a model that scores all pairs in one batch returns).
pub fn per_question<T: Clone>(questions: &[Question], flat: &[T]) -> Vec<Vec<T>> {
    let mut at = 0;
    questions
        .iter()
        .map(|q| {
            let end = (at + q.candidates.len()).min(flat.len());
            let part = flat[at..end].to_vec();
            at = end;
            part
        })
        .collect()
}

/// Orders scores best first, NaN last; for sorting candidates by score.
pub fn best_first(a: f32, b: f32) -> std::cmp::Ordering {
    b.partial_cmp(&a)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn per_question_splits_in_question_order() {
        let q = |n: usize| ansel_data::Question {
            id: "q".into(),
            text: "q".into(),
            candidates: (0..n)
                .map(|i| ansel_data::Candidate {
                    id: i.to_string(),
                    text: "s".into(),
                    label: None,
                    context: None,
                })
                .collect(),
        };
        let split = super::per_question(&[q(2), q(0), q(3)], &[1, 2, 3, 4, 5]);
        assert_eq!(split, vec![vec![1, 2], vec![], vec![3, 4, 5]]);
    }

    #[test]
    fn best_first_puts_nan_last() {
        let mut scores = [1.0, f32::NAN, 3.0, f32::NEG_INFINITY, 2.0];
        scores.sort_by(|a, b| super::best_first(*a, *b));
        assert_eq!(scores[..4], [3.0, 2.0, 1.0, f32::NEG_INFINITY]);
        assert!(scores[4].is_nan());
    }
}
