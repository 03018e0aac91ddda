//! A binary kernel SVM trained by SMO on a precomputed kernel matrix: LIBSVM's dual solver
//! (Fan, Chen & Lin 2005: second-order working-set selection), with a larger box for positives
//! (SVM-light's `-j`, for classes as unbalanced as answer sentences).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SvmOptions {
    /// Box constraint of the negatives.
    pub c: f64,
    /// The positives' box is `c * positive_weight`.
    pub positive_weight: f64,
    /// Stop when the largest KKT violation is below this.
    pub tolerance: f64,
    pub max_iterations: usize,
}

impl Default for SvmOptions {
    fn default() -> Self {
        SvmOptions {
            c: 1.0,
            positive_weight: 1.0,
            tolerance: 1e-3,
            max_iterations: 10_000_000,
        }
    }
}

/// A trained SVM: the decision value of an item is `sum_i coef[i] * K(sv_i, item) - rho`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Svm {
    /// Indices of the support vectors in the training items, and `alpha_i * y_i` of each.
    pub support: Vec<usize>,
    pub coef: Vec<f64>,
    pub rho: f64,
    pub iterations: usize,
}

const TAU: f64 = 1e-12;

impl Svm {
    /// Trains on `n` items with labels `positive` and the symmetric kernel `k(i, j)` (read often:
    /// pass a precomputed matrix).
    pub fn train(positive: &[bool], k: impl Fn(usize, usize) -> f64, opts: SvmOptions) -> Svm {
        let n = positive.len();
        let y: Vec<f64> = positive
            .iter()
            .map(|&p| if p { 1.0 } else { -1.0 })
            .collect();
        let cap: Vec<f64> = positive
            .iter()
            .map(|&p| {
                if p {
                    opts.c * opts.positive_weight
                } else {
                    opts.c
                }
            })
            .collect();
        let qd: Vec<f64> = (0..n).map(|i| k(i, i)).collect();
        let mut alpha = vec![0.0; n];
        let mut grad = vec![-1.0; n];
        let upper = |a: &[f64], t: usize| a[t] >= cap[t];
        let lower = |a: &[f64], t: usize| a[t] <= 0.0;
        let mut iterations = 0;
        while iterations < opts.max_iterations {
            // i: the most violating index going up.
            let (mut gmax, mut i) = (f64::NEG_INFINITY, usize::MAX);
            for t in 0..n {
                let in_up = if y[t] > 0.0 {
                    !upper(&alpha, t)
                } else {
                    !lower(&alpha, t)
                };
                if in_up && -y[t] * grad[t] >= gmax {
                    gmax = -y[t] * grad[t];
                    i = t;
                }
            }
            if i == usize::MAX {
                break;
            }
            let (mut gmax2, mut best, mut j) = (f64::NEG_INFINITY, f64::INFINITY, usize::MAX);
            for t in 0..n {
                let in_low = if y[t] > 0.0 {
                    !lower(&alpha, t)
                } else {
                    !upper(&alpha, t)
                };
                if !in_low {
                    continue;
                }
                let yg = y[t] * grad[t];
                gmax2 = gmax2.max(yg);
                let diff = gmax + yg;
                if diff > 0.0 {
                    let quad = qd[i] + qd[t] - 2.0 * k(i, t);
                    let obj = -(diff * diff) / if quad > 0.0 { quad } else { TAU };
                    if obj <= best {
                        best = obj;
                        j = t;
                    }
                }
            }
            if gmax + gmax2 < opts.tolerance || j == usize::MAX {
                break;
            }
            iterations += 1;
            let kij = k(i, j);
            let (old_i, old_j) = (alpha[i], alpha[j]);
            let (ci, cj) = (cap[i], cap[j]);
            if y[i] != y[j] {
                let quad = (qd[i] + qd[j] - 2.0 * kij).max(TAU);
                let delta = (-grad[i] - grad[j]) / quad;
                let diff = alpha[i] - alpha[j];
                alpha[i] += delta;
                alpha[j] += delta;
                if diff > 0.0 {
                    if alpha[j] < 0.0 {
                        alpha[j] = 0.0;
                        alpha[i] = diff;
                    }
                } else if alpha[i] < 0.0 {
                    alpha[i] = 0.0;
                    alpha[j] = -diff;
                }
                if diff > ci - cj {
                    if alpha[i] > ci {
                        alpha[i] = ci;
                        alpha[j] = ci - diff;
                    }
                } else if alpha[j] > cj {
                    alpha[j] = cj;
                    alpha[i] = cj + diff;
                }
            } else {
                let quad = (qd[i] + qd[j] - 2.0 * kij).max(TAU);
                let delta = (grad[i] - grad[j]) / quad;
                let sum = alpha[i] + alpha[j];
                alpha[i] -= delta;
                alpha[j] += delta;
                if sum > ci {
                    if alpha[i] > ci {
                        alpha[i] = ci;
                        alpha[j] = sum - ci;
                    }
                } else if alpha[j] < 0.0 {
                    alpha[j] = 0.0;
                    alpha[i] = sum;
                }
                if sum > cj {
                    if alpha[j] > cj {
                        alpha[j] = cj;
                        alpha[i] = sum - cj;
                    }
                } else if alpha[i] < 0.0 {
                    alpha[i] = 0.0;
                    alpha[j] = sum;
                }
            }
            let (di, dj) = (alpha[i] - old_i, alpha[j] - old_j);
            for t in 0..n {
                // Q_it = y_i y_t K_it.
                grad[t] += y[t] * (y[i] * k(i, t) * di + y[j] * k(j, t) * dj);
            }
        }
        // rho: the mean of y G over the free support vectors (the middle of the bounds if none).
        let (mut ub, mut lb, mut free, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0, 0.0);
        for t in 0..n {
            let yg = y[t] * grad[t];
            if upper(&alpha, t) {
                if y[t] < 0.0 {
                    ub = ub.min(yg)
                } else {
                    lb = lb.max(yg)
                }
            } else if lower(&alpha, t) {
                if y[t] > 0.0 {
                    ub = ub.min(yg)
                } else {
                    lb = lb.max(yg)
                }
            } else {
                free += 1;
                sum += yg;
            }
        }
        let rho = if free > 0 {
            sum / free as f64
        } else {
            (ub + lb) / 2.0
        };
        let support: Vec<usize> = (0..n).filter(|&t| alpha[t] > 0.0).collect();
        let coef = support.iter().map(|&t| alpha[t] * y[t]).collect();
        Svm {
            support,
            coef,
            rho,
            iterations,
        }
    }

    /// The decision value of an item whose kernel with training item `i` is `k(i)`.
    pub fn decision(&self, k: impl Fn(usize) -> f64) -> f64 {
        self.support
            .iter()
            .zip(&self.coef)
            .map(|(&i, c)| c * k(i))
            .sum::<f64>()
            - self.rho
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_points_with_a_linear_kernel_and_a_margin() {
        // Positives around (2, 2), negatives around (-2, -2), one negative near the line.
        let pts = [
            (2.0, 2.5),
            (3.0, 1.5),
            (2.5, 3.0),
            (-2.0, -2.0),
            (-3.0, -1.0),
            (-1.5, -2.5),
            (0.2, -0.5),
        ];
        let pos = [true, true, true, false, false, false, false];
        let dot = |a: (f64, f64), b: (f64, f64)| a.0 * b.0 + a.1 * b.1;
        let svm = Svm::train(&pos, |i, j| dot(pts[i], pts[j]), SvmOptions::default());
        for (p, &label) in pts.iter().zip(&pos) {
            let d = svm.decision(|i| dot(pts[i], *p));
            assert_eq!(d > 0.0, label, "{p:?}: {d}");
        }
        assert!(
            svm.support.len() < pts.len(),
            "only the points at the margin: {svm:?}"
        );
        // Dual feasibility: sum alpha_i y_i = 0.
        assert!(svm.coef.iter().sum::<f64>().abs() < 1e-9);
        let far = svm.decision(|i| dot(pts[i], (10.0, 10.0)));
        assert!(far > 1.0);
    }

    #[test]
    fn a_positive_weight_moves_the_boundary_toward_the_negatives() {
        // Overlapping one-dimensional classes: weighting positives raises the decision values.
        let x = [1.0, 0.8, 0.3, -0.2, 0.1, -1.0, -0.6, 0.5];
        let pos = [true, true, true, true, false, false, false, false];
        let k = |i: usize, j: usize| x[i] * x[j] + 1.0;
        let plain = Svm::train(&pos, k, SvmOptions::default());
        let weighted = Svm::train(
            &pos,
            k,
            SvmOptions {
                positive_weight: 5.0,
                ..Default::default()
            },
        );
        let at = |s: &Svm| s.decision(|i| x[i] * 0.2 + 1.0);
        assert!(
            at(&weighted) > at(&plain),
            "{} {}",
            at(&weighted),
            at(&plain)
        );
    }
}
