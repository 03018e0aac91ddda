//! Measures computed as `trec_eval -c` computes them (checked against pytrec_eval to 1e-4 in
//! docs/results/trec-car.md): the run is ranked by score descending, ties by document id
//! descending (the rank column is ignored); relevance >= 1 is relevant and unjudged documents are
//! not; relevant documents the run did not retrieve add nothing to AP but count in its
//! denominator; NDCG@k gains are the relevance grades; every query in the qrels counts, and one
//! missing from the run scores 0 (`-c`); queries only in the run are ignored.

use crate::trec::{records, TrecError};
use crate::Qrels;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// qid -> docid -> score, scores as trec_eval reads them (double).
pub type ExactRun = BTreeMap<String, BTreeMap<String, f64>>;

/// Reads a run keeping scores as f64 (`.gz` files are decompressed).
pub fn read_run_exact(path: &Path) -> Result<ExactRun, TrecError> {
    let mut run = ExactRun::new();
    for (line, fields) in records(path, 6)? {
        let score = fields[4].parse::<f64>().map_err(|e| TrecError::Malformed {
            path: path.to_path_buf(),
            line,
            field: "score",
            message: e.to_string(),
        })?;
        run.entry(fields[0].clone())
            .or_default()
            .insert(fields[2].clone(), score);
    }
    Ok(run)
}

/// The measures of one query, named as trec_eval names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TrecMeasures {
    pub map: f64,
    #[serde(rename = "Rprec")]
    pub rprec: f64,
    pub ndcg_cut_10: f64,
    #[serde(rename = "P_10")]
    pub p_10: f64,
    pub recip_rank: f64,
    pub num_rel: f64,
    pub num_rel_ret: f64,
}

impl TrecMeasures {
    pub const NAMES: [&'static str; 5] = ["map", "Rprec", "ndcg_cut_10", "P_10", "recip_rank"];

    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "map" => self.map,
            "Rprec" => self.rprec,
            "ndcg_cut_10" => self.ndcg_cut_10,
            "P_10" => self.p_10,
            "recip_rank" => self.recip_rank,
            "num_rel" => self.num_rel,
            "num_rel_ret" => self.num_rel_ret,
            _ => return None,
        })
    }
}

/// Per-query measures over every query of the qrels, and their means.
#[derive(Debug, Clone, Serialize)]
pub struct TrecReport {
    pub per_query: BTreeMap<String, TrecMeasures>,
    pub mean: TrecMeasures,
    /// Queries of the qrels that the run does not hold (scored 0).
    pub missing: usize,
}

/// One query's measures: `ranked` is the run's documents for it, in any order.
pub fn measure_query(
    judged: &BTreeMap<String, u32>,
    ranked: &BTreeMap<String, f64>,
) -> TrecMeasures {
    let mut docs: Vec<(&String, f64)> = ranked.iter().map(|(d, &s)| (d, s)).collect();
    docs.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(a.0)));
    let rel = |d: &String| judged.get(d).copied().unwrap_or(0);
    let num_rel = judged.values().filter(|&&r| r >= 1).count();
    if num_rel == 0 {
        return TrecMeasures::default();
    }
    let mut hits = 0usize;
    let mut ap = 0.0;
    let mut first = None;
    let mut rel_at_r = 0usize;
    let mut rel_at_10 = 0usize;
    let mut dcg = 0.0;
    for (i, (d, _)) in docs.iter().enumerate() {
        let r = rel(d);
        if r >= 1 {
            hits += 1;
            ap += hits as f64 / (i + 1) as f64;
            first.get_or_insert(i + 1);
            if i < num_rel {
                rel_at_r += 1;
            }
            if i < 10 {
                rel_at_10 += 1;
            }
        }
        if i < 10 && r > 0 {
            dcg += f64::from(r) / ((i + 2) as f64).log2();
        }
    }
    let mut gains: Vec<u32> = judged.values().copied().filter(|&r| r > 0).collect();
    gains.sort_unstable_by(|a, b| b.cmp(a));
    let ideal: f64 = gains
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, &g)| f64::from(g) / ((i + 2) as f64).log2())
        .sum();
    TrecMeasures {
        map: ap / num_rel as f64,
        rprec: rel_at_r as f64 / num_rel as f64,
        ndcg_cut_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
        p_10: rel_at_10 as f64 / 10.0,
        recip_rank: first.map_or(0.0, |r| 1.0 / r as f64),
        num_rel: num_rel as f64,
        num_rel_ret: hits as f64,
    }
}

/// `trec_eval -c`: every query of `qrels`, those missing from `run` at 0.
pub fn trec_eval(qrels: &Qrels, run: &ExactRun) -> TrecReport {
    let empty = BTreeMap::new();
    let mut per_query = BTreeMap::new();
    let mut missing = 0;
    for (qid, judged) in qrels {
        let ranked = run.get(qid).unwrap_or_else(|| {
            missing += 1;
            &empty
        });
        per_query.insert(qid.clone(), measure_query(judged, ranked));
    }
    let n = per_query.len().max(1) as f64;
    let sum = |f: fn(&TrecMeasures) -> f64| per_query.values().map(f).sum::<f64>();
    let mean = TrecMeasures {
        map: sum(|m| m.map) / n,
        rprec: sum(|m| m.rprec) / n,
        ndcg_cut_10: sum(|m| m.ndcg_cut_10) / n,
        p_10: sum(|m| m.p_10) / n,
        recip_rank: sum(|m| m.recip_rank) / n,
        num_rel: sum(|m| m.num_rel),
        num_rel_ret: sum(|m| m.num_rel_ret),
    };
    TrecReport {
        per_query,
        mean,
        missing,
    }
}

/// Two-sided paired randomization (permutation) test on per-query differences `a - b`, with
/// `rounds` random sign flips from `seed`: the p-value of the mean difference.
pub fn paired_randomization(a: &[f64], b: &[f64], rounds: usize, seed: u64) -> f64 {
    assert_eq!(a.len(), b.len(), "paired scores");
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let observed = diffs.iter().sum::<f64>().abs();
    let mut state = seed;
    let mut at_least = 0usize;
    for _ in 0..rounds {
        let mut total = 0.0;
        let mut bits = 0u64;
        for (i, d) in diffs.iter().enumerate() {
            if i % 64 == 0 {
                bits = ansel_data::splitmix64(&mut state);
            }
            total += if bits & 1 == 1 { *d } else { -*d };
            bits >>= 1;
        }
        if total.abs() >= observed - 1e-12 {
            at_least += 1;
        }
    }
    (at_least + 1) as f64 / (rounds + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn trec_eval_conventions() {
        let mut qrels = Qrels::new();
        qrels.entry("q1".into()).or_default().extend([
            ("a".to_string(), 1),
            ("b".to_string(), 1),
            ("c".to_string(), 1),
            ("n".to_string(), 0),
        ]);
        qrels.entry("q2".into()).or_default().insert("a".into(), 1);
        let mut run = ExactRun::new();
        // Ranked: x (unjudged), then the tie b/a broken by id descending: b, a; c not retrieved.
        run.entry("q1".into()).or_default().extend([
            ("x".to_string(), 3.0),
            ("a".to_string(), 1.0),
            ("b".to_string(), 1.0),
            ("n".to_string(), 0.5),
        ]);
        run.entry("other".into())
            .or_default()
            .insert("a".into(), 1.0);
        let report = trec_eval(&qrels, &run);
        let m = report.per_query["q1"];
        assert!(close(m.map, (1.0 / 2.0 + 2.0 / 3.0) / 3.0), "{m:?}");
        assert!(close(m.rprec, 2.0 / 3.0));
        assert!(close(m.recip_rank, 0.5));
        let idcg = 1.0 + 1.0 / 3f64.log2() + 0.5;
        assert!(close(m.ndcg_cut_10, (1.0 / 3f64.log2() + 0.5) / idcg));
        assert_eq!(
            report.per_query["q2"],
            TrecMeasures {
                num_rel: 1.0,
                ..Default::default()
            }
        );
        assert_eq!(report.missing, 1);
        assert!(close(report.mean.map, m.map / 2.0));
        assert_eq!(
            report.per_query.len(),
            2,
            "queries only in the run are ignored"
        );
    }

    #[test]
    fn randomization_test_separates_clear_from_null_differences() {
        let a: Vec<f64> = (0..50).map(|i| 0.5 + 0.01 * (i % 3) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x - 0.1).collect();
        assert!(paired_randomization(&a, &b, 2000, 1) < 0.01);
        let c: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 2 == 0 { x + 0.1 } else { x - 0.1 })
            .collect();
        assert!(paired_randomization(&a, &c, 2000, 1) > 0.5);
    }
}
