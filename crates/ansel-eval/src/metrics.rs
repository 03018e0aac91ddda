use serde::Serialize;
use std::cmp::Ordering;

/// The cut-offs reported for R@k and NDCG@k.
pub const CUTOFFS: [usize; 4] = [1, 3, 5, 10];

/// Candidate indices in ranked order, ties broken against the model
/// (negatives before positives), NaN last.
pub fn rank_order(scores: &[f32], labels: &[bool]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        compare_scores(scores[b], scores[a]).then_with(|| labels[a].cmp(&labels[b]))
    });
    order
}

/// Total order on scores where NaN is the smallest value.
fn compare_scores(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Every metric for one question. Only defined for questions with at least
/// one positive (the caller filters).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionMetrics {
    pub precision_at_1: f64,
    pub average_precision: f64,
    pub reciprocal_rank: f64,
    /// R@k for each of [`CUTOFFS`].
    pub recall_at: [f64; CUTOFFS.len()],
    /// NDCG@k for each of [`CUTOFFS`].
    pub ndcg_at: [f64; CUTOFFS.len()],
    pub r_precision: f64,
}

impl QuestionMetrics {
    /// Metrics of one ranked question; `None` when it has no positive.
    pub fn compute(scores: &[f32], labels: &[bool]) -> Option<QuestionMetrics> {
        assert_eq!(scores.len(), labels.len(), "one score per candidate");
        let relevant = labels.iter().filter(|&&l| l).count();
        if relevant == 0 {
            return None;
        }
        let ranked: Vec<bool> = rank_order(scores, labels)
            .into_iter()
            .map(|i| labels[i])
            .collect();
        let mut hits = 0usize;
        let mut precision_sum = 0.0;
        let mut first_hit = None;
        for (i, &rel) in ranked.iter().enumerate() {
            if rel {
                hits += 1;
                precision_sum += hits as f64 / (i + 1) as f64;
                first_hit.get_or_insert(i + 1);
            }
        }
        let hits_in_top = |k: usize| ranked.iter().take(k).filter(|&&r| r).count() as f64;
        let dcg = |k: usize, rels: &mut dyn Iterator<Item = bool>| -> f64 {
            rels.take(k)
                .enumerate()
                .filter(|(_, r)| *r)
                .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
                .sum()
        };
        let ndcg = |k: usize| {
            let ideal = dcg(k, &mut std::iter::repeat_n(true, relevant));
            dcg(k, &mut ranked.iter().copied()) / ideal
        };
        Some(QuestionMetrics {
            precision_at_1: f64::from(u8::from(ranked[0])),
            average_precision: precision_sum / relevant as f64,
            reciprocal_rank: 1.0 / first_hit.unwrap_or(usize::MAX) as f64,
            recall_at: CUTOFFS.map(|k| hits_in_top(k) / relevant as f64),
            ndcg_at: CUTOFFS.map(ndcg),
            r_precision: hits_in_top(relevant) / relevant as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn hand_computed_ranking() {
        // Ranked labels: 0 1 0 1 0 (two positives, at ranks 2 and 4).
        let scores = [0.9, 0.8, 0.7, 0.6, 0.5];
        let labels = [false, true, false, true, false];
        let m = QuestionMetrics::compute(&scores, &labels).unwrap();
        assert_eq!(m.precision_at_1, 0.0);
        assert!(close(m.average_precision, (1.0 / 2.0 + 2.0 / 4.0) / 2.0));
        assert!(close(m.reciprocal_rank, 0.5));
        assert_eq!(m.recall_at, [0.0, 0.5, 1.0, 1.0]);
        assert!(close(m.r_precision, 0.5));
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!(
            close(m.ndcg_at[1], (1.0 / 3f64.log2()) / idcg),
            "NDCG@3 {}",
            m.ndcg_at[1]
        );
        assert!(close(
            m.ndcg_at[3],
            (1.0 / 3f64.log2() + 1.0 / 5f64.log2()) / idcg
        ));
    }

    #[test]
    fn perfect_ranking_scores_one() {
        let m = QuestionMetrics::compute(&[3.0, 1.0, 2.0], &[true, false, true]).unwrap();
        assert_eq!(
            (
                m.precision_at_1,
                m.average_precision,
                m.reciprocal_rank,
                m.r_precision
            ),
            (1.0, 1.0, 1.0, 1.0)
        );
        assert!(m.ndcg_at.iter().all(|&v| close(v, 1.0)));
    }

    #[test]
    fn ties_are_broken_against_the_model() {
        // All tied: the positive goes after both negatives.
        let m = QuestionMetrics::compute(&[1.0, 1.0, 1.0], &[false, true, false]).unwrap();
        assert_eq!(m.precision_at_1, 0.0);
        assert!(close(m.reciprocal_rank, 1.0 / 3.0));
        assert!(close(m.average_precision, 1.0 / 3.0));
        // A partial tie only reorders within the tie.
        let m =
            QuestionMetrics::compute(&[2.0, 1.0, 1.0, 0.0], &[false, true, false, true]).unwrap();
        assert!(close(m.average_precision, (1.0 / 3.0 + 2.0 / 4.0) / 2.0));
    }

    #[test]
    fn nan_ranks_last() {
        let m = QuestionMetrics::compute(&[f32::NAN, 0.1], &[false, true]).unwrap();
        assert_eq!(m.precision_at_1, 1.0);
        let m = QuestionMetrics::compute(&[f32::NAN, -5.0], &[true, false]).unwrap();
        assert_eq!(m.precision_at_1, 0.0);
    }

    #[test]
    fn no_positive_is_undefined_and_all_positive_is_perfect() {
        assert!(QuestionMetrics::compute(&[1.0, 2.0], &[false, false]).is_none());
        let m = QuestionMetrics::compute(&[1.0, 1.0], &[true, true]).unwrap();
        assert_eq!((m.precision_at_1, m.average_precision), (1.0, 1.0));
    }

    proptest::proptest! {
        #[test]
        fn metrics_stay_in_unit_interval(
            pairs in proptest::collection::vec((-3.0f32..3.0, proptest::bool::ANY), 1..40)
        ) {
            let (scores, labels): (Vec<f32>, Vec<bool>) = pairs.into_iter().unzip();
            if let Some(m) = QuestionMetrics::compute(&scores, &labels) {
                let all = [m.precision_at_1, m.average_precision, m.reciprocal_rank, m.r_precision]
                    .into_iter().chain(m.recall_at).chain(m.ndcg_at);
                for v in all {
                    proptest::prop_assert!((0.0..=1.0 + 1e-12).contains(&v), "{v}");
                }
                proptest::prop_assert!(m.precision_at_1 <= m.reciprocal_rank);
            }
        }
    }
}
