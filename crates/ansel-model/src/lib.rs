//! The contract every ansel model shares.
//!
//! A model is a [`Ranker`]: given one question with its candidate list it
//! returns one score per candidate, higher meaning more likely an answer. The
//! evaluator, the CLI, the cascade and the server only ever see this trait, so
//! a new model is one new module that implements it.

use ansel_data::Question;

/// Errors a model can raise while scoring.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The model cannot score this input (e.g. `rr` on data without document order).
    #[error("{model}: {message}")]
    Unsupported { model: String, message: String },
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
}

/// Orders scores best first, NaN last; for sorting candidates by score.
pub fn best_first(a: f32, b: f32) -> std::cmp::Ordering {
    b.partial_cmp(&a)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn best_first_puts_nan_last() {
        let mut scores = [1.0, f32::NAN, 3.0, f32::NEG_INFINITY, 2.0];
        scores.sort_by(|a, b| super::best_first(*a, *b));
        assert_eq!(scores[..4], [3.0, 2.0, 1.0, f32::NEG_INFINITY]);
        assert!(scores[4].is_nan());
    }
}
