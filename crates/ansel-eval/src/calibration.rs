//! Scores that mean a probability, and knowing when not to answer.
//!
//! [`Platt`] maps a model's raw score `s` to `sigmoid(a s + b)`, fitted on labelled pairs by
//! Platt's method (regularised targets, Newton steps with a line search; Lin, Lin and Weng 2007).
//! [`Reliability`] bins predictions to measure how well they are calibrated (expected calibration
//! error, and the data of a reliability diagram). [`Abstention`] decides, per question, whether
//! the best candidate's probability is high enough to answer at all, with a threshold chosen on
//! dev data.

use serde::{Deserialize, Serialize};

/// `p = sigmoid(a * score + b)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Platt {
    pub a: f64,
    pub b: f64,
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

impl Platt {
    /// The logistic function of the raw score: what a score means with no fitting.
    pub const IDENTITY: Platt = Platt { a: 1.0, b: 0.0 };

    pub fn probability(&self, score: f32) -> f64 {
        sigmoid(self.a * score as f64 + self.b)
    }

    /// Fits `a` and `b` to `(score, is_positive)` pairs. Targets are Platt's regularised
    /// `(N+ + 1) / (N+ + 2)` and `1 / (N- + 2)`, so one class alone or separable data still
    /// give a finite fit. Non-finite scores are left out; `None` when no pair is left.
    pub fn fit(pairs: &[(f32, bool)]) -> Option<Platt> {
        let pairs: Vec<(f64, bool)> = pairs
            .iter()
            .filter(|(s, _)| s.is_finite())
            .map(|&(s, y)| (s as f64, y))
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let positives = pairs.iter().filter(|p| p.1).count() as f64;
        let negatives = pairs.len() as f64 - positives;
        let hi = (positives + 1.0) / (positives + 2.0);
        let lo = 1.0 / (negatives + 2.0);
        let target = |y: bool| if y { hi } else { lo };
        // Negative log-likelihood of the targets under sigmoid(a s + b).
        let loss = |a: f64, b: f64| -> f64 {
            pairs
                .iter()
                .map(|&(s, y)| {
                    let z = a * s + b;
                    let t = target(y);
                    // log(1 + e^z) - t z, computed without overflow.
                    let softplus = if z > 0.0 {
                        z + (-z).exp().ln_1p()
                    } else {
                        z.exp().ln_1p()
                    };
                    softplus - t * z
                })
                .sum()
        };
        let (mut a, mut b) = (0.0, ((positives + 1.0) / (negatives + 1.0)).ln());
        let mut current = loss(a, b);
        const SIGMA: f64 = 1e-12; // keeps the Hessian positive definite
        for _ in 0..100 {
            let (mut h11, mut h22, mut h21, mut g1, mut g2) = (SIGMA, SIGMA, 0.0, 0.0, 0.0);
            for &(s, y) in &pairs {
                let p = sigmoid(a * s + b);
                let d = p - target(y);
                let w = p * (1.0 - p);
                h11 += s * s * w;
                h22 += w;
                h21 += s * w;
                g1 += s * d;
                g2 += d;
            }
            if g1.abs() < 1e-9 && g2.abs() < 1e-9 {
                break;
            }
            let det = h11 * h22 - h21 * h21;
            let da = -(h22 * g1 - h21 * g2) / det;
            let db = -(-h21 * g1 + h11 * g2) / det;
            let slope = g1 * da + g2 * db;
            let mut step = 1.0;
            let mut moved = false;
            while step >= 1e-10 {
                let (na, nb) = (a + step * da, b + step * db);
                let next = loss(na, nb);
                if next < current + 1e-4 * step * slope {
                    (a, b, current) = (na, nb, next);
                    moved = true;
                    break;
                }
                step /= 2.0;
            }
            if !moved {
                break;
            }
        }
        Some(Platt { a, b })
    }
}

/// Predictions binned by probability: a reliability diagram's data and the expected
/// calibration error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reliability {
    /// One entry per equal-width probability bin, `[k / n, (k + 1) / n)` (the last one closed).
    pub bins: Vec<ReliabilityBin>,
    pub pairs: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliabilityBin {
    pub count: usize,
    /// Mean predicted probability in the bin.
    pub confidence: f64,
    /// Fraction of positives in the bin.
    pub accuracy: f64,
}

impl Reliability {
    /// Bins `(probability, is_positive)` pairs into `bins` equal-width bins.
    pub fn new(predictions: &[(f64, bool)], bins: usize) -> Reliability {
        let bins = bins.max(1);
        let mut sum_p = vec![0.0; bins];
        let mut positives = vec![0usize; bins];
        let mut counts = vec![0usize; bins];
        let mut pairs = 0;
        for &(p, y) in predictions.iter().filter(|(p, _)| p.is_finite()) {
            let k = ((p.clamp(0.0, 1.0) * bins as f64) as usize).min(bins - 1);
            sum_p[k] += p;
            positives[k] += y as usize;
            counts[k] += 1;
            pairs += 1;
        }
        let bins = (0..bins)
            .map(|k| {
                let n = counts[k].max(1) as f64;
                ReliabilityBin {
                    count: counts[k],
                    confidence: sum_p[k] / n,
                    accuracy: positives[k] as f64 / n,
                }
            })
            .collect();
        Reliability { bins, pairs }
    }

    /// Expected calibration error: the count-weighted mean of |accuracy - confidence| over bins.
    pub fn ece(&self) -> f64 {
        if self.pairs == 0 {
            return 0.0;
        }
        self.bins
            .iter()
            .map(|b| b.count as f64 * (b.accuracy - b.confidence).abs())
            .sum::<f64>()
            / self.pairs as f64
    }

    /// A reliability diagram (SVG, drawn by hand): bars of each bin's fraction of positives
    /// against the diagonal of perfect calibration, one series per `(label, reliability)`.
    pub fn svg(series: &[(&str, &Reliability)], title: &str) -> String {
        const W: f64 = 480.0;
        const H: f64 = 480.0;
        const M: f64 = 50.0;
        let side = W - 2.0 * M;
        let x = |p: f64| M + side * p;
        let y = |p: f64| H - M - side * p;
        let colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"];
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"{M}\" y=\"20\" font-size=\"14\">{}</text>\n\
             <rect x=\"{M}\" y=\"{M}\" width=\"{side}\" height=\"{side}\" fill=\"none\" stroke=\"#999\"/>\n\
             <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n",
            escape(title),
            x(0.0),
            y(0.0),
            x(1.0),
            y(1.0)
        );
        for i in 0..=5 {
            let f = i as f64 / 5.0;
            svg += &format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{f:.1}</text>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{f:.1}</text>\n",
                x(f),
                H - M + 16.0,
                M - 6.0,
                y(f) + 4.0
            );
        }
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">predicted probability</text>\n\
             <text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">fraction of answers</text>\n",
            W / 2.0,
            H - 12.0,
            H / 2.0,
            H / 2.0
        );
        for (i, (label, r)) in series.iter().enumerate() {
            let colour = colours[i % colours.len()];
            let points: Vec<String> = r
                .bins
                .iter()
                .filter(|b| b.count > 0)
                .map(|b| format!("{:.1},{:.1}", x(b.confidence), y(b.accuracy)))
                .collect();
            svg += &format!(
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>\n",
                points.join(" ")
            );
            for b in r.bins.iter().filter(|b| b.count > 0) {
                svg += &format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>\n",
                    x(b.confidence),
                    y(b.accuracy)
                );
            }
            svg += &format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{} (ECE {:.3})</text>\n",
                M + 8.0,
                M + 16.0 + 16.0 * i as f64,
                escape(label),
                r.ece()
            );
        }
        svg + "</svg>\n"
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Answer or abstain: a question is answered when its best candidate's probability reaches
/// `threshold`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Abstention {
    pub threshold: f64,
}

/// How answering and abstaining went over a set of questions (every question counts, those
/// with no answer among their candidates too).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct AbstentionReport {
    pub questions: usize,
    /// Questions with at least one positive candidate.
    pub answerable: usize,
    pub answered: usize,
    /// Answered with a positive ranked first.
    pub answered_right: usize,
    pub abstained: usize,
    /// Abstained on a question with no positive candidate.
    pub abstained_right: usize,
}

impl AbstentionReport {
    fn ratio(a: usize, b: usize) -> f64 {
        if b == 0 {
            0.0
        } else {
            a as f64 / b as f64
        }
    }
    /// Of the answers given, the fraction that were right.
    pub fn answer_precision(&self) -> f64 {
        Self::ratio(self.answered_right, self.answered)
    }
    /// Of the answerable questions, the fraction answered right.
    pub fn answer_recall(&self) -> f64 {
        Self::ratio(self.answered_right, self.answerable)
    }
    /// Of the abstentions, the fraction on questions with no answer.
    pub fn abstain_precision(&self) -> f64 {
        Self::ratio(self.abstained_right, self.abstained)
    }
    /// Of the questions with no answer, the fraction abstained on.
    pub fn abstain_recall(&self) -> f64 {
        Self::ratio(self.abstained_right, self.questions - self.answerable)
    }
    /// The harmonic mean of [`Self::answer_precision`] and [`Self::answer_recall`]: WikiQA's
    /// answer-triggering F1 (Yang et al. 2015).
    pub fn answer_f1(&self) -> f64 {
        let (p, r) = (self.answer_precision(), self.answer_recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
    /// Questions handled right: answered right, or abstained on with no answer there.
    pub fn accuracy(&self) -> f64 {
        Self::ratio(self.answered_right + self.abstained_right, self.questions)
    }
}

/// One question as abstention sees it: its best candidate's probability, whether that
/// candidate is a positive, and whether any candidate is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BestCandidate {
    pub probability: f64,
    pub is_positive: bool,
    pub answerable: bool,
}

impl Abstention {
    pub fn report(&self, questions: &[BestCandidate]) -> AbstentionReport {
        let mut r = AbstentionReport {
            questions: questions.len(),
            ..Default::default()
        };
        for q in questions {
            r.answerable += q.answerable as usize;
            if q.probability >= self.threshold {
                r.answered += 1;
                r.answered_right += q.is_positive as usize;
            } else {
                r.abstained += 1;
                r.abstained_right += !q.answerable as usize;
            }
        }
        r
    }

    /// The threshold with the highest [`AbstentionReport::answer_f1`] on `questions` (dev data),
    /// as answer triggering is evaluated (accuracy would favour never answering where most
    /// questions have no answer, as in WikiQA); among equals, the most accurate, then the lowest. Candidates are every best probability
    /// (answer from it up) and one above them all and above 1 (never answer).
    pub fn choose(questions: &[BestCandidate]) -> Abstention {
        let mut thresholds: Vec<f64> = questions
            .iter()
            .map(|q| q.probability)
            .filter(|p| p.is_finite())
            .collect();
        // Finite, so that it survives JSON.
        let never = thresholds.iter().copied().fold(1.0, f64::max) + 1.0;
        thresholds.push(never);
        thresholds.sort_by(f64::total_cmp);
        thresholds.dedup();
        let mut best = Abstention { threshold: never };
        let mut best_score = (-1.0, -1.0);
        for t in thresholds {
            let candidate = Abstention { threshold: t };
            let report = candidate.report(questions);
            let score = (report.answer_f1(), report.accuracy());
            if score > best_score {
                best = candidate;
                best_score = score;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platt_recovers_the_scale_and_shift_that_made_the_labels() {
        // Labels drawn (deterministically) from p = sigmoid(2 s - 1).
        let mut pairs = Vec::new();
        let mut state = 12345u64;
        for i in 0..4000 {
            let s = (i % 400) as f32 / 100.0 - 2.0;
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            pairs.push((s, u < sigmoid(2.0 * s as f64 - 1.0)));
        }
        let fit = Platt::fit(&pairs).unwrap();
        assert!((fit.a - 2.0).abs() < 0.25, "{fit:?}");
        assert!((fit.b + 1.0).abs() < 0.2, "{fit:?}");
        let calibrated: Vec<(f64, bool)> = pairs
            .iter()
            .map(|&(s, y)| (fit.probability(s), y))
            .collect();
        let raw: Vec<(f64, bool)> = pairs
            .iter()
            .map(|&(s, y)| (Platt::IDENTITY.probability(s * 5.0), y))
            .collect();
        let (ece, ece_raw) = (
            Reliability::new(&calibrated, 10).ece(),
            Reliability::new(&raw, 10).ece(),
        );
        assert!(ece < 0.03 && ece_raw > 0.05, "{ece} {ece_raw}");
    }

    #[test]
    fn platt_stays_finite_on_separable_or_one_class_data() {
        let separable = [(-1.0, false), (-0.5, false), (0.5, true), (1.0, true)];
        let fit = Platt::fit(&separable).unwrap();
        assert!(
            fit.a.is_finite() && fit.b.is_finite() && fit.a > 0.0,
            "{fit:?}"
        );
        let one_class = [(0.3, false), (0.1, false)];
        let fit = Platt::fit(&one_class).unwrap();
        assert!(fit.probability(0.2) < 0.5, "{fit:?}");
        assert!(Platt::fit(&[(f32::NAN, true)]).is_none());
    }

    #[test]
    fn ece_is_zero_when_confidence_matches_accuracy_and_bins_cover_the_ends() {
        let perfect = [(0.25, true), (0.25, false), (0.25, false), (0.25, false)];
        assert!(Reliability::new(&perfect, 10).ece() < 1e-12);
        let overconfident = [(0.95, false), (0.95, true)];
        let r = Reliability::new(&overconfident, 10);
        assert!((r.ece() - 0.45).abs() < 1e-12);
        assert_eq!(r.bins[9].count, 2);
        let ends = Reliability::new(&[(0.0, false), (1.0, true)], 4);
        assert_eq!((ends.bins[0].count, ends.bins[3].count), (1, 1));
        let svg = Reliability::svg(&[("m <a>", &r)], "t");
        assert!(svg.contains("ECE 0.450") && svg.contains("m &lt;a&gt;"));
    }

    #[test]
    fn the_chosen_threshold_separates_confident_right_answers_from_the_rest() {
        let q = |probability, is_positive, answerable| BestCandidate {
            probability,
            is_positive,
            answerable,
        };
        let questions = [
            q(0.9, true, true),
            q(0.8, true, true),
            q(0.3, false, false),
            q(0.2, false, false),
            q(0.25, false, true),
        ];
        let chosen = Abstention::choose(&questions);
        assert_eq!(chosen.threshold, 0.8);
        let r = chosen.report(&questions);
        assert_eq!((r.answered, r.answered_right, r.abstained_right), (2, 2, 2));
        assert!((r.accuracy() - 0.8).abs() < 1e-12);
        assert!((r.answer_f1() - 0.8).abs() < 1e-12, "P 1, R 2/3");
        assert!((r.abstain_precision() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.abstain_recall(), 1.0);
        assert!((r.answer_recall() - 2.0 / 3.0).abs() < 1e-12);
        // Nothing answerable: never answer.
        let none = [q(0.9, false, false)];
        let never = Abstention::choose(&none);
        assert!(never.threshold > 1.0 && never.report(&none).answered == 0);
    }
}
