//! Score fusion: several rankers' opinions in one score.

use crate::{Ranker, Result};
use ansel_data::Question;

/// Sums its members' scores after standardising each member's scores within a
/// question (zero mean, unit variance), so models on different scales (word
/// counts, logits) weigh the same. Lexical and neural rankers err on different
/// candidates, and their sum ranks better than either on data neither was
/// tuned for (docs/results/default-model.md). Written `a+b` on the command line.
pub struct Fusion {
    name: String,
    members: Vec<Box<dyn Ranker>>,
}

impl Fusion {
    /// Fuses `members` (at least one).
    pub fn new(members: Vec<Box<dyn Ranker>>) -> Fusion {
        let name = members
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join("+");
        Fusion { name, members }
    }
}

/// Every question's candidates scored by each of `members` in turn, `add(member index, question,
/// total, scores)` folding a member's scores of a question into the question's running total
/// (zeros at first); a member that returns the wrong number of scores is an error naming it.
fn sum_members<'a>(
    questions: &[Question],
    members: impl Iterator<Item = &'a dyn Ranker>,
    mut add: impl FnMut(usize, &Question, &mut [f32], &[f32]),
) -> Result<Vec<Vec<f32>>> {
    let mut fused: Vec<Vec<f32>> = questions
        .iter()
        .map(|q| vec![0.0; q.candidates.len()])
        .collect();
    for (i, member) in members.enumerate() {
        let scored = member.score_all(questions)?;
        for ((question, total), scores) in questions.iter().zip(fused.iter_mut()).zip(scored) {
            if scores.len() != total.len() {
                return Err(crate::ModelError::Backend(format!(
                    "{}: {} scores for {} candidates",
                    member.name(),
                    scores.len(),
                    total.len()
                )));
            }
            add(i, question, total, &scores);
        }
    }
    Ok(fused)
}

/// Adds one member's `scores` of a question, standardised, to the question's running `total`
/// (the fusion's sum; the two have the same length).
pub fn add_standardised(total: &mut [f32], scores: &[f32]) {
    for (t, s) in total.iter_mut().zip(standardised(scores)) {
        *t += s;
    }
}

/// `scores` standardised (zero mean, unit variance over the finite ones); all zeros when they
/// do not vary. NaN stays NaN.
fn standardised(scores: &[f32]) -> Vec<f32> {
    let finite: Vec<f64> = scores
        .iter()
        .filter(|s| s.is_finite())
        .map(|&s| f64::from(s))
        .collect();
    if finite.is_empty() {
        return scores.to_vec();
    }
    let n = finite.len() as f64;
    let mean = finite.iter().sum::<f64>() / n;
    let sd = (finite.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n).sqrt();
    scores
        .iter()
        .map(|&s| match s {
            s if s.is_nan() => f32::NAN,
            s if s.is_infinite() => s,
            _ if sd == 0.0 => 0.0,
            s => ((f64::from(s) - mean) / sd) as f32,
        })
        .collect()
}

impl Ranker for Fusion {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        sum_members(
            questions,
            self.members.iter().map(|m| m.as_ref()),
            |_, _, total, scores| add_standardised(total, scores),
        )
    }

    /// Standardising uses the whole list.
    fn reads_whole_list(&self) -> bool {
        true
    }
}

/// The `kind` of a [`PairFusion`]'s model card.
pub const PAIR_FUSION_KIND: &str = "pair-fusion";

/// One member of a [`PairFusion`] as its card names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FusionMember {
    /// A model directory relative to the card's directory, or the name of a model.
    pub model: String,
    /// The member's score is multiplied by this before the sum.
    pub weight: f32,
    /// The weight instead when the query is not phrased as a question (keywords, a heading, a
    /// claim: [`ansel_text::is_phrased_as_question`]); absent: `weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword_weight: Option<f32>,
}

/// A member's weight in a [`PairFusion`], by how the query is phrased. One query has one
/// phrasing, so every candidate of a list is scored with the same weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionWeight {
    /// For a query phrased as a question.
    pub question: f32,
    /// For keywords, a heading or a claim.
    pub keywords: f32,
}

impl FusionWeight {
    /// The weight for `query`.
    pub fn for_query(&self, query: &str) -> f32 {
        if self.question == self.keywords || ansel_text::is_phrased_as_question(query) {
            self.question
        } else {
            self.keywords
        }
    }
}

/// The settings of a [`PairFusion`] card (`config`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairFusionSettings {
    pub members: Vec<FusionMember>,
    /// Long candidates are scored by their best window ([`crate::Chunked`]); absent: whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<crate::Windows>,
}

/// Sums its members' scores of a pair with weights chosen on dev data, which may depend on how
/// the query is phrased: unlike [`Fusion`], nothing depends on the other candidates, so a pair's
/// score is its own and keeps one scale across requests (what calibration and abstention need).
/// A cross-encoder's logit plus a weighted bi-encoder cosine keeps what the pretrained sentence
/// encoder knows of general relevance beside the answer-sentence skill, and keyword queries
/// want more of the cosine than questions do (docs/results/general-reranker.md).
pub struct PairFusion {
    name: String,
    members: Vec<(Box<dyn Ranker>, FusionWeight)>,
}

impl PairFusion {
    /// Fuses `members` (ranker, weight); at least one.
    pub fn new(name: String, members: Vec<(Box<dyn Ranker>, FusionWeight)>) -> PairFusion {
        PairFusion { name, members }
    }
}

impl Ranker for PairFusion {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        sum_members(
            questions,
            self.members.iter().map(|(m, _)| m.as_ref()),
            |i, question, total, scores| {
                let weight = self.members[i].1.for_query(&question.text);
                for (t, s) in total.iter_mut().zip(scores) {
                    *t += weight * s;
                }
            },
        )
    }

    /// Whether any member reads the whole list.
    fn reads_whole_list(&self) -> bool {
        self.members.iter().any(|(m, _)| m.reads_whole_list())
    }

    /// The first member's tokens (the cross-encoder's, which reads the pair).
    fn tokenize(
        &self,
        text: &str,
        pair: Option<&str>,
        special: bool,
    ) -> Option<Result<Vec<crate::Token>>> {
        self.members
            .iter()
            .find_map(|(m, _)| m.tokenize(text, pair, special))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_data::Candidate;

    struct Fixed(&'static str, Vec<f32>);

    impl Ranker for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn score(&self, _: &Question) -> Result<Vec<f32>> {
            Ok(self.1.clone())
        }
    }

    fn question(n: usize) -> Question {
        Question {
            id: "q".into(),
            text: "q".into(),
            candidates: (0..n)
                .map(|i| Candidate {
                    id: i.to_string(),
                    text: String::new(),
                    label: None,
                    context: None,
                })
                .collect(),
        }
    }

    #[test]
    fn members_on_different_scales_weigh_the_same() {
        // Alone, the large-scale member would decide; standardised, each one's
        // favourite ties and the candidate both like second-best wins.
        let fusion = Fusion::new(vec![
            Box::new(Fixed("counts", vec![100.0, 0.0, 60.0])),
            Box::new(Fixed("logits", vec![0.0, 1.0, 0.8])),
        ]);
        assert_eq!(fusion.name(), "counts+logits");
        let scores = fusion.score(&question(3)).unwrap();
        assert!(scores[2] > scores[0] && scores[2] > scores[1], "{scores:?}");
        assert!(fusion.reads_whole_list());
    }

    #[test]
    fn constant_and_nan_scores_do_not_poison_the_sum() {
        let fusion = Fusion::new(vec![
            Box::new(Fixed("flat", vec![3.0, 3.0, 3.0])),
            Box::new(Fixed("gappy", vec![1.0, f32::NAN, 2.0])),
        ]);
        let scores = fusion.score(&question(3)).unwrap();
        assert_eq!(scores[0], -1.0);
        assert!(scores[1].is_nan());
        assert_eq!(scores[2], 1.0);
    }

    #[test]
    fn a_member_with_the_wrong_number_of_scores_is_an_error() {
        let fusion = Fusion::new(vec![Box::new(Fixed("short", vec![1.0]))]);
        assert!(fusion.score(&question(2)).is_err());
    }
}
