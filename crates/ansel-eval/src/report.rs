use crate::metrics::{QuestionMetrics, CUTOFFS};
use ansel_data::Question;

/// Which questions a report scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Filter {
    /// Questions with at least one positive (the official WikiQA setting).
    #[default]
    Answered,
    /// Also drop questions whose candidates are all positive (TrecQA "clean").
    Clean,
}

/// Averaged metrics over the scored questions, plus the per-question values.
#[derive(Debug, Clone)]
pub struct Report {
    pub filter: Filter,
    /// Questions in the data.
    pub total: usize,
    pub skipped_no_positive: usize,
    pub skipped_all_positive: usize,
    pub per_question: Vec<(String, QuestionMetrics)>,
}

impl Report {
    /// Number of questions the averages are over.
    pub fn questions(&self) -> usize {
        self.per_question.len()
    }

    fn mean(&self, metric: impl Fn(&QuestionMetrics) -> f64) -> f64 {
        if self.per_question.is_empty() {
            return 0.0;
        }
        self.per_question
            .iter()
            .map(|(_, m)| metric(m))
            .sum::<f64>()
            / self.per_question.len() as f64
    }

    /// Every averaged metric with its conventional name, in display order.
    pub fn named_metrics(&self) -> Vec<(String, f64)> {
        let mut out = vec![
            ("P@1".to_string(), self.mean(|m| m.precision_at_1)),
            ("MAP".to_string(), self.mean(|m| m.average_precision)),
            ("MRR".to_string(), self.mean(|m| m.reciprocal_rank)),
        ];
        for (i, k) in CUTOFFS.iter().enumerate() {
            out.push((format!("R@{k}"), self.mean(|m| m.recall_at[i])));
        }
        for (i, k) in CUTOFFS.iter().enumerate() {
            out.push((format!("NDCG@{k}"), self.mean(|m| m.ndcg_at[i])));
        }
        out.push(("R-Prec".to_string(), self.mean(|m| m.r_precision)));
        out
    }

    /// One averaged metric by name ("MAP", "R@5", ...).
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.named_metrics()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}

/// Scores a set of questions; `scores[i]` holds one score per candidate of `questions[i]`.
///
/// # Panics
/// If the number of score lists or of scores in a list does not match the
/// questions: that is a bug in the caller, not bad input.
pub fn evaluate(questions: &[Question], scores: &[Vec<f32>], filter: Filter) -> Report {
    assert_eq!(questions.len(), scores.len(), "one score list per question");
    let mut report = Report {
        filter,
        total: questions.len(),
        skipped_no_positive: 0,
        skipped_all_positive: 0,
        per_question: Vec::new(),
    };
    for (question, scores) in questions.iter().zip(scores) {
        let labels = question.labels();
        let positives = labels.iter().filter(|&&l| l).count();
        if positives == 0 {
            report.skipped_no_positive += 1;
            continue;
        }
        if filter == Filter::Clean && positives == labels.len() {
            report.skipped_all_positive += 1;
            continue;
        }
        let metrics = QuestionMetrics::compute(scores, &labels).expect("has a positive");
        report.per_question.push((question.id.clone(), metrics));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::question;

    #[test]
    fn filters_and_averages() {
        let qs = vec![
            question("mixed", &[false, true]),
            question("none", &[false, false]),
            question("all", &[true, true]),
        ];
        let scores = vec![vec![0.0, 1.0], vec![1.0, 0.0], vec![0.0, 0.0]];
        let answered = evaluate(&qs, &scores, Filter::Answered);
        assert_eq!(
            (
                answered.total,
                answered.questions(),
                answered.skipped_no_positive
            ),
            (3, 2, 1)
        );
        assert_eq!(answered.metric("MAP"), Some(1.0));
        let clean = evaluate(&qs, &scores, Filter::Clean);
        assert_eq!((clean.questions(), clean.skipped_all_positive), (1, 1));
        let names: Vec<String> = clean.named_metrics().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names[..3], ["P@1", "MAP", "MRR"]);
        assert!(names.contains(&"NDCG@10".to_string()) && names.contains(&"R-Prec".to_string()));
    }

    #[test]
    fn averages_over_questions_not_candidates() {
        let qs = vec![
            question("a", &[true, false, false, false]),
            question("b", &[false, true]),
        ];
        let scores = vec![vec![1.0, 0.0, 0.0, 0.0], vec![1.0, 0.0]];
        let r = evaluate(&qs, &scores, Filter::Answered);
        assert_eq!(r.metric("P@1"), Some(0.5));
        assert_eq!(r.metric("MRR"), Some(0.75));
    }
}
