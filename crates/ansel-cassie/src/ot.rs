//! Question-context alignment with optimal transport (CASSIE §3.2).
//!
//! For each (question, sentence) pair: masses from [`WordMass`] on both sides, cost the
//! Euclidean distance of contextual word vectors, plan from log-domain Sinkhorn-Knopp
//! (entropic OT, batched over pairs and stable for small epsilon). The sentence's relevant
//! context is the set of sentence words that are the argmax of some question word's row of
//! the plan; its vector is their mean (eq. 1).

use crate::features::{PairSet, WordMass};
use ansel_torch::tch::{Kind, Tensor};
use serde::{Deserialize, Serialize};

/// Sinkhorn settings. Costs are divided by their mean over each pair before solving, so
/// `epsilon` is relative to the typical distance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OtOptions {
    pub epsilon: f64,
    pub iterations: usize,
}

impl Default for OtOptions {
    fn default() -> Self {
        OtOptions {
            epsilon: 0.1,
            iterations: 50,
        }
    }
}

/// Log mass of a padded point: it carries (numerically) nothing, without infinities.
const PAD_LOG_MASS: f64 = -1e4;

/// Entropic OT plan `[B, n, m]` for costs `[B, n, m]` and log masses `[B, n]`, `[B, m]`
/// (each side summing to 1), by Sinkhorn-Knopp on the dual potentials in the log domain.
pub fn sinkhorn_log(cost: &Tensor, log_a: &Tensor, log_b: &Tensor, opts: &OtOptions) -> Tensor {
    let eps = opts.epsilon;
    let mut f = log_a.zeros_like();
    let mut g = log_b.zeros_like();
    for _ in 0..opts.iterations {
        f = log_a * eps - ((g.unsqueeze(1) - cost) / eps).logsumexp([2i64].as_slice(), false) * eps;
        g = log_b * eps - ((f.unsqueeze(2) - cost) / eps).logsumexp([1i64].as_slice(), false) * eps;
    }
    ((f.unsqueeze(2) + g.unsqueeze(1) - cost) / eps).exp()
}

/// Alignment of every pair of a [`PairSet`].
pub struct Alignment {
    /// Mean of the relevant-context word vectors, `[P, d]` (eq. 1).
    pub ot_vec: Tensor,
    /// Mean of all sentence word vectors, `[P, d]` (the "without OT" ablation).
    pub mean_vec: Tensor,
    /// Transport cost `sum(C * plan)` to the question, `[P]`.
    pub ot_cost: Tensor,
    /// Cost under the independent coupling `a b^T` (no OT), `[P]`.
    pub mean_cost: Tensor,
    /// Per pair, per question word: (aligned sentence word, share of the word's mass sent there).
    pub aligned: Vec<Vec<(usize, f32)>>,
}

/// Solves the transport problem of every pair, `chunk` pairs at a time.
pub fn align(set: &PairSet, mass: &WordMass, opts: &OtOptions, chunk: usize) -> Alignment {
    let mut ot_vec = Vec::new();
    let mut mean_vec = Vec::new();
    let mut ot_cost = Vec::new();
    let mut mean_cost = Vec::new();
    let mut aligned = Vec::with_capacity(set.len());
    let ids: Vec<usize> = (0..set.len()).collect();
    for part in ids.chunks(chunk.max(1)) {
        let a = align_chunk(set, part, mass, opts);
        ot_vec.push(a.ot_vec);
        mean_vec.push(a.mean_vec);
        ot_cost.push(a.ot_cost);
        mean_cost.push(a.mean_cost);
        aligned.extend(a.aligned);
    }
    let d = set.dim();
    let cat = |v: Vec<Tensor>, shape: &[i64]| {
        if v.is_empty() {
            Tensor::zeros(shape, (Kind::Float, ansel_torch::tch::Device::Cpu))
        } else {
            Tensor::cat(&v, 0)
        }
    };
    Alignment {
        ot_vec: cat(ot_vec, &[0, d]),
        mean_vec: cat(mean_vec, &[0, d]),
        ot_cost: cat(ot_cost, &[0]),
        mean_cost: cat(mean_cost, &[0]),
        aligned,
    }
}

fn log_masses(words: &[Vec<String>], mass: &WordMass, width: usize) -> (Vec<f32>, Vec<f32>) {
    let mut logs = vec![PAD_LOG_MASS as f32; words.len() * width];
    let mut masks = vec![0f32; words.len() * width];
    for (b, ws) in words.iter().enumerate() {
        let total: f32 = ws.iter().map(|w| mass.mass(w)).sum();
        for (j, w) in ws.iter().enumerate() {
            logs[b * width + j] = (mass.mass(w) / total).ln();
            masks[b * width + j] = 1.0;
        }
    }
    (logs, masks)
}

fn padded(parts: Vec<Tensor>, width: i64, d: i64) -> Tensor {
    let rows: Vec<Tensor> = parts
        .into_iter()
        .map(|t| {
            let n = t.size()[0];
            if n == width {
                t
            } else {
                Tensor::cat(
                    &[
                        t.shallow_clone(),
                        t.new_zeros([width - n, d], (Kind::Float, t.device())),
                    ],
                    0,
                )
            }
        })
        .collect();
    Tensor::stack(&rows, 0)
}

fn align_chunk(set: &PairSet, ids: &[usize], mass: &WordMass, opts: &OtOptions) -> Alignment {
    let d = set.dim();
    let b = ids.len() as i64;
    let n = ids
        .iter()
        .map(|&i| set.q_words[i].len())
        .max()
        .unwrap_or(1)
        .max(1);
    let m = ids
        .iter()
        .map(|&i| set.s_words[i].len())
        .max()
        .unwrap_or(1)
        .max(1);
    let q = padded(ids.iter().map(|&i| set.q(i)).collect(), n as i64, d);
    let s = padded(ids.iter().map(|&i| set.s(i)).collect(), m as i64, d);
    let q_words: Vec<Vec<String>> = ids.iter().map(|&i| set.q_words[i].clone()).collect();
    let s_words: Vec<Vec<String>> = ids.iter().map(|&i| set.s_words[i].clone()).collect();
    let (la, qa) = log_masses(&q_words, mass, n);
    let (lb, sb) = log_masses(&s_words, mass, m);
    let log_a = Tensor::from_slice(&la).view([b, n as i64]);
    let log_b = Tensor::from_slice(&lb).view([b, m as i64]);
    let q_mask = Tensor::from_slice(&qa).view([b, n as i64]);
    let s_mask = Tensor::from_slice(&sb).view([b, m as i64]);
    let pair_mask = q_mask.unsqueeze(2) * s_mask.unsqueeze(1);
    // The transport problem is solved without gradient: the plan only selects words, and the
    // selected words' mean (below, from the live `s`) carries the gradient into the encoder.
    let (qd, sd) = (q.detach(), s.detach());
    // Euclidean distances [b, n, m].
    let qq = qd
        .square()
        .sum_dim_intlist([2i64].as_slice(), false, Kind::Float)
        .unsqueeze(2);
    let ss = sd
        .square()
        .sum_dim_intlist([2i64].as_slice(), false, Kind::Float)
        .unsqueeze(1);
    let cost = (qq + ss - qd.matmul(&sd.transpose(1, 2)) * 2.0)
        .clamp_min(1e-12)
        .sqrt()
        * &pair_mask;
    let mean = cost.sum_dim_intlist([1i64, 2].as_slice(), false, Kind::Float)
        / pair_mask
            .sum_dim_intlist([1i64, 2].as_slice(), false, Kind::Float)
            .clamp_min(1.0);
    let scaled = &cost / mean.clamp_min(1e-6).view([b, 1, 1]);
    let plan = sinkhorn_log(&scaled, &log_a, &log_b, opts) * &pair_mask;
    let ot_cost = (&plan * &cost).sum_dim_intlist([1i64, 2].as_slice(), false, Kind::Float);
    let a = log_a.exp() * &q_mask;
    let bm = log_b.exp() * &s_mask;
    let indep = a.unsqueeze(2) * bm.unsqueeze(1);
    let mean_cost = (&indep * &cost).sum_dim_intlist([1i64, 2].as_slice(), false, Kind::Float);
    // Relevant context: the argmax column of every real question row.
    let (best, best_at) = plan.max_dim(2, false);
    let chosen = best_at.one_hot(m as i64).to_kind(Kind::Float) * q_mask.unsqueeze(2);
    let selected = chosen
        .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
        .clamp_max(1.0)
        * &s_mask;
    let count = selected
        .sum_dim_intlist([1i64].as_slice(), true, Kind::Float)
        .clamp_min(1.0);
    let ot_vec =
        (selected.unsqueeze(2) * &s).sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
            / &count;
    let s_count = s_mask
        .sum_dim_intlist([1i64].as_slice(), true, Kind::Float)
        .clamp_min(1.0);
    let mean_vec =
        (s_mask.unsqueeze(2) * &s).sum_dim_intlist([1i64].as_slice(), false, Kind::Float) / s_count;
    let share = (&best / a.clamp_min(1e-12)).clamp(0.0, 1.0);
    let best_at: Vec<i64> = Vec::try_from(&best_at.flatten(0, -1)).unwrap_or_default();
    let share: Vec<f32> = Vec::try_from(&share.flatten(0, -1)).unwrap_or_default();
    let aligned = ids
        .iter()
        .enumerate()
        .map(|(row, &i)| {
            (0..set.q_words[i].len())
                .map(|k| {
                    let at = row * n + k;
                    (
                        best_at.get(at).copied().unwrap_or(0) as usize,
                        share.get(at).copied().unwrap_or(0.0),
                    )
                })
                .collect()
        })
        .collect();
    Alignment {
        ot_vec,
        mean_vec,
        ot_cost,
        mean_cost,
        aligned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::PairLogits;
    use ansel_torch::tch::Device;

    #[test]
    fn sinkhorn_plan_has_the_asked_marginals() {
        ansel_torch::tch::manual_seed(3);
        let cost = Tensor::rand([4, 5, 7], (Kind::Float, Device::Cpu));
        let a = Tensor::rand([4, 5], (Kind::Float, Device::Cpu)) + 0.1;
        let a = &a / a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float);
        let b = Tensor::rand([4, 7], (Kind::Float, Device::Cpu)) + 0.1;
        let b = &b / b.sum_dim_intlist([1i64].as_slice(), true, Kind::Float);
        let opts = OtOptions {
            epsilon: 0.05,
            iterations: 200,
        };
        let plan = sinkhorn_log(&cost, &a.log(), &b.log(), &opts);
        let rows = plan.sum_dim_intlist([2i64].as_slice(), false, Kind::Float);
        let cols = plan.sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
        assert!(f64::try_from((rows - &a).abs().max()).unwrap() < 1e-4);
        assert!(f64::try_from((cols - &b).abs().max()).unwrap() < 1e-4);
        assert!(!bool::try_from(plan.isnan().any()).unwrap());
    }

    #[test]
    fn small_epsilon_stays_finite_and_picks_the_cheap_matching() {
        // Two points each; matching i -> i costs 0, crossing costs 1. With tiny epsilon a
        // plain (non-log) Sinkhorn underflows exp(-1/eps); the log-domain one must not.
        let cost = Tensor::from_slice(&[0f32, 1.0, 1.0, 0.0]).view([1, 2, 2]);
        let half = Tensor::from_slice(&[0.5f32, 0.5]).view([1, 2]).log();
        let opts = OtOptions {
            epsilon: 1e-3,
            iterations: 20,
        };
        let plan = sinkhorn_log(&cost, &half, &half, &opts);
        let v: Vec<f32> = Vec::try_from(&plan.flatten(0, -1)).unwrap();
        assert!(
            (v[0] - 0.5).abs() < 1e-4 && (v[3] - 0.5).abs() < 1e-4,
            "{v:?}"
        );
        assert!(v[1] < 1e-4 && v[2] < 1e-4, "{v:?}");
    }

    fn toy_set() -> PairSet {
        // Question words "x", "y"; sentence words "x", "z", "y", "w" placed so that the
        // question's x sits on the sentence's x and y on y.
        let q = Tensor::from_slice(&[1f32, 0.0, 0.0, 1.0]).view([2, 2]);
        let s = Tensor::from_slice(&[1f32, 0.0, 5.0, 5.0, 0.0, 1.0, -4.0, 6.0]).view([4, 2]);
        PairSet {
            pooled: Tensor::zeros([1, 2], (Kind::Float, Device::Cpu)),
            logits: PairLogits::Fixed(vec![0.0]),
            q_vecs: q,
            q_off: vec![0, 2],
            q_words: vec![vec!["x".into(), "y".into()]],
            s_vecs: s,
            s_off: vec![0, 4],
            s_words: vec![vec!["x".into(), "z".into(), "y".into(), "w".into()]],
        }
    }

    #[test]
    fn relevant_context_is_the_argmax_words() {
        let set = toy_set();
        let al = align(&set, &WordMass::default(), &OtOptions::default(), 8);
        let aligned: Vec<usize> = al.aligned[0].iter().map(|&(j, _)| j).collect();
        assert_eq!(aligned, vec![0, 2]);
        // Mean of sentence words 0 and 2: (0.5, 0.5); the plain mean is (0.5, 3.0).
        let v: Vec<f32> = Vec::try_from(&al.ot_vec.flatten(0, -1)).unwrap();
        assert!(
            (v[0] - 0.5).abs() < 1e-5 && (v[1] - 0.5).abs() < 1e-5,
            "{v:?}"
        );
        let m: Vec<f32> = Vec::try_from(&al.mean_vec.flatten(0, -1)).unwrap();
        assert!(
            (m[0] - 0.5).abs() < 1e-5 && (m[1] - 3.0).abs() < 1e-5,
            "{m:?}"
        );
        // OT moves mass cheaper than the independent coupling.
        let ot = f64::try_from(al.ot_cost.get(0)).unwrap();
        let indep = f64::try_from(al.mean_cost.get(0)).unwrap();
        assert!(ot < indep, "ot {ot} vs independent {indep}");
    }

    #[test]
    fn padding_in_a_batch_changes_nothing() {
        let set = toy_set();
        // The same pair batched with a longer one must give the same alignment.
        let long_q = Tensor::cat(
            &[
                set.q_vecs.shallow_clone(),
                Tensor::ones([3, 2], (Kind::Float, Device::Cpu)),
            ],
            0,
        );
        let long_s = Tensor::cat(
            &[
                set.s_vecs.shallow_clone(),
                Tensor::ones([6, 2], (Kind::Float, Device::Cpu)),
            ],
            0,
        );
        let two = PairSet {
            pooled: Tensor::zeros([2, 2], (Kind::Float, Device::Cpu)),
            logits: PairLogits::Fixed(vec![0.0, 0.0]),
            q_vecs: long_q,
            q_off: vec![0, 2, 5],
            q_words: vec![vec!["x".into(), "y".into()], vec!["a".into(); 3]],
            s_vecs: long_s,
            s_off: vec![0, 4, 10],
            s_words: vec![set.s_words[0].clone(), vec!["b".into(); 6]],
        };
        let alone = align(&set, &WordMass::default(), &OtOptions::default(), 8);
        let batched = align(&two, &WordMass::default(), &OtOptions::default(), 8);
        let diff = f64::try_from((alone.ot_cost.get(0) - batched.ot_cost.get(0)).abs()).unwrap();
        assert!(diff < 1e-5, "{diff}");
        assert_eq!(alone.aligned[0], batched.aligned[0]);
    }
}
