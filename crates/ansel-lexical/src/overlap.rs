use crate::position::reciprocal_rank;
use crate::TermStats;
use ansel_data::Question;
use ansel_model::{Ranker, Result};
use ansel_text::content_words;
use std::collections::HashSet;

/// Distinct content words of the question found in each candidate.
fn shared_words<'q>(
    question: &'q HashSet<String>,
    candidate: &str,
) -> impl Iterator<Item = &'q String> {
    let candidate: HashSet<String> = content_words(candidate).into_iter().collect();
    question.iter().filter(move |w| candidate.contains(*w))
}

fn question_words(question: &Question) -> HashSet<String> {
    content_words(&question.text).into_iter().collect()
}

/// `wo`: how many distinct question words the candidate contains.
pub struct WordOverlap;

impl Ranker for WordOverlap {
    fn name(&self) -> &str {
        "wo"
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        let words = question_words(question);
        Ok(question
            .candidates
            .iter()
            .map(|c| shared_words(&words, &c.text).count() as f32)
            .collect())
    }
}

/// `idf-wo`: the shared words weighted by IDF.
pub struct IdfWordOverlap {
    stats: TermStats,
}

impl IdfWordOverlap {
    pub fn new(stats: TermStats) -> Self {
        IdfWordOverlap { stats }
    }
}

impl Ranker for IdfWordOverlap {
    fn name(&self) -> &str {
        "idf-wo"
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        let words = question_words(question);
        Ok(question
            .candidates
            .iter()
            .map(|c| {
                shared_words(&words, &c.text)
                    .map(|w| self.stats.idf(w))
                    .sum()
            })
            .collect())
    }
}

/// `wo-rr`: word overlap, ties broken by the reciprocal of the document
/// position. The overlap is an integer and the tie-breaker is below 1, so it
/// never overrides a difference in overlap. Data without document order
/// (TrecQA) has nothing to break ties with, and `wo-rr` equals `wo` there.
pub struct WordOverlapRr;

impl Ranker for WordOverlapRr {
    fn name(&self) -> &str {
        "wo-rr"
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        let overlap = WordOverlap.score(question)?;
        Ok(question
            .candidates
            .iter()
            .zip(overlap)
            .map(|(c, wo)| {
                wo + 0.5
                    * c.context
                        .as_ref()
                        .map_or(0.0, |ctx| reciprocal_rank(ctx.position))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_data::{Candidate, DocContext};

    fn question(candidates: &[&str], ordered: bool) -> Question {
        Question {
            id: "q".into(),
            text: "Who founded the city of Rome?".into(),
            candidates: candidates
                .iter()
                .enumerate()
                .map(|(i, t)| Candidate {
                    id: i.to_string(),
                    text: t.to_string(),
                    label: None,
                    context: ordered.then(|| DocContext {
                        doc_id: "d".into(),
                        position: i,
                        ..Default::default()
                    }),
                })
                .collect(),
        }
    }

    #[test]
    fn overlap_counts_distinct_content_words() {
        let q = question(
            &[
                "Rome is a city.",
                "The city of Rome, the city Rome.",
                "Nothing here.",
            ],
            false,
        );
        assert_eq!(WordOverlap.score(&q).unwrap(), vec![2.0, 2.0, 0.0]);
    }

    #[test]
    fn idf_prefers_rare_shared_words() {
        let q = question(&["Rome was founded.", "The city is old.", "A city."], false);
        let stats = TermStats::from_questions(std::slice::from_ref(&q));
        let scores = IdfWordOverlap::new(stats).score(&q).unwrap();
        assert!(scores[0] > scores[1], "{scores:?}");
        assert_eq!(scores[2], scores[1]);
    }

    #[test]
    fn rr_breaks_only_ties() {
        let q = question(
            &["Nothing.", "Rome city.", "Rome city founded.", "Rome city."],
            true,
        );
        let s = WordOverlapRr.score(&q).unwrap();
        assert!(s[2] > s[1] && s[1] > s[3] && s[3] > s[0], "{s:?}");
        let unordered = question(&["Rome city.", "Rome city."], false);
        assert_eq!(WordOverlapRr.score(&unordered).unwrap(), vec![2.0, 2.0]);
    }
}
