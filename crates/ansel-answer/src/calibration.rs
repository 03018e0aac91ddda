//! A model's calibration (`ansel calibrate --out`): its raw scores as probabilities, and the
//! probability below which `ask` and `/ask` say that no sentence answers the question.

use crate::{Answers, Stage};
pub use ansel_eval::calibration::Platt;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The model spec whose raw scores were fitted.
    pub model: String,
    pub platt: Platt,
    /// Answer when the best candidate's probability reaches this (above 1: never).
    pub abstain_below: f64,
    /// The dev files it was fitted on.
    pub fitted_on: Vec<String>,
    /// What fitting measured on them.
    pub dev: serde_json::Value,
}

impl Calibration {
    /// Reads a calibration file; errors name the file and field.
    pub fn read(path: &Path) -> Result<Calibration> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read calibration {}", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", path.display()))?;
        ansel_model::json::from_value(value, "")
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Reads `path` and checks it was fitted for `model`: a calibration of another model's
    /// scores would turn them into meaningless probabilities.
    pub fn read_for(path: &Path, model: &str) -> Result<Calibration> {
        let calibration = Self::read(path)?;
        if calibration.model != model {
            bail!(
                "{}: fitted for the model `{}`, but the answers come from `{model}`; \
                 run `ansel calibrate --model {model} ...` for it",
                path.display(),
                calibration.model
            );
        }
        Ok(calibration)
    }

    /// The probability that a raw score of the calibrated model marks an answer.
    pub fn probability(&self, score: f32) -> f64 {
        self.platt.probability(score)
    }

    /// Each reranked answer's probability (`None` for answers the reranker did not score, which
    /// carry another stage's score), and whether the best one clears the threshold.
    pub fn judge(&self, answers: &Answers) -> Judged {
        let probabilities: Vec<Option<f64>> = answers
            .answers
            .iter()
            .map(|a| (a.stage == Stage::Rerank).then(|| self.probability(a.score)))
            .collect();
        let best = probabilities
            .iter()
            .flatten()
            .copied()
            .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))));
        Judged {
            answered: best.is_some_and(|p| p >= self.abstain_below),
            probabilities,
        }
    }

    /// Adds the verdict to `answers` serialized (`reply`): each answer's `probability` (null for
    /// answers the reranker did not score), `answered` and the threshold, `abstain_below`.
    pub fn annotate(&self, reply: &mut serde_json::Value, answers: &Answers) {
        let judged = self.judge(answers);
        if let Some(list) = reply.get_mut("answers").and_then(|a| a.as_array_mut()) {
            for (answer, p) in list.iter_mut().zip(&judged.probabilities) {
                answer["probability"] = serde_json::json!(p);
            }
        }
        reply["answered"] = serde_json::json!(judged.answered);
        reply["abstain_below"] = serde_json::json!(self.abstain_below);
    }
}

/// A calibration's verdict on one question's answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// Whether the best answer's probability reaches the threshold.
    pub answered: bool,
    /// One per answer, in order.
    pub probabilities: Vec<Option<f64>>,
}
