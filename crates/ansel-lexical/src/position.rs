use ansel_data::Question;
use ansel_model::{ModelError, Ranker, Result};

pub(crate) fn reciprocal_rank(position: usize) -> f32 {
    1.0 / (position as f32 + 1.0)
}

/// `rr`: 1 / (1 + the candidate's position in its document). Refuses data
/// without document order rather than fall back on file order, which in
/// TrecQA lists positives first.
pub struct ReciprocalRank;

impl Ranker for ReciprocalRank {
    fn name(&self) -> &str {
        "rr"
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        question
            .candidates
            .iter()
            .map(|c| {
                c.context
                    .as_ref()
                    .map(|ctx| reciprocal_rank(ctx.position))
                    .ok_or_else(|| ModelError::Unsupported {
                        model: "rr".into(),
                        message: format!(
                        "question {:?} has no document order (candidate {:?} has no position); \
                         rr needs data that keeps it, such as WikiQA, SelQA or SQuAD",
                        question.id, c.id
                    ),
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_data::{Candidate, DocContext};

    #[test]
    fn scores_by_position_and_refuses_unordered_data() {
        let mut q = Question {
            id: "q".into(),
            text: "?".into(),
            candidates: (0..3)
                .map(|i| Candidate {
                    id: i.to_string(),
                    text: "s".into(),
                    label: None,
                    context: Some(DocContext {
                        doc_id: "d".into(),
                        position: 2 - i,
                        ..Default::default()
                    }),
                })
                .collect(),
        };
        assert_eq!(ReciprocalRank.score(&q).unwrap(), vec![1.0 / 3.0, 0.5, 1.0]);
        q.candidates[1].context = None;
        let err = ReciprocalRank.score(&q).unwrap_err().to_string();
        assert!(
            err.starts_with("rr: question \"q\" has no document order"),
            "{err}"
        );
    }
}
