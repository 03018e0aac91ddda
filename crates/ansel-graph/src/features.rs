//! Extension (not the paper): extra node features next to the base score.
//!
//! The paper's node has one feature, the base ranker's score, so a GCN can do little more
//! than rescale a question's scores. `--node-features` appends columns, each standardised
//! within the question (z-score over its candidates; 0 where a question's column is
//! constant):
//!
//! - `base`: the base ranker's own scores (its within-question z-score);
//! - `cos`: the bi-encoder cosine of the question and the candidate (the encoder that finds
//!   similar questions);
//! - any label-free ranker the CLI resolves without corpus statistics (`wo`, `wo-rr`, `rr`).
//!
//! Every column is a function of the question and its candidates' texts (and the base
//! scores) only: labels never reach it.

use ansel_data::Question;
use ansel_model::{ModelError, Ranker, Result};

/// One extra feature column.
pub enum Column {
    /// The base scores, z-scored within the question.
    Base,
    /// Question-candidate cosine of the bi-encoder.
    Cos,
    /// A ranker's scores, z-scored within the question.
    Ranker(Box<dyn Ranker>),
}

/// The extra columns of a model, in card order.
#[derive(Default)]
pub struct Extras {
    pub names: Vec<String>,
    pub columns: Vec<Column>,
}

impl Extras {
    /// Resolves `names` (`base`, `cos`, or a ranker `resolve` builds).
    pub fn new(
        names: &[String],
        mut resolve: impl FnMut(&str) -> Result<Box<dyn Ranker>>,
    ) -> Result<Extras> {
        let mut columns = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(ModelError::Unsupported {
                    model: crate::KIND.into(),
                    message: format!("node feature {name:?} is listed twice"),
                });
            }
            columns.push(match name.as_str() {
                "base" => Column::Base,
                "cos" => Column::Cos,
                _ => Column::Ranker(resolve(name)?),
            });
        }
        Ok(Extras {
            names: names.to_vec(),
            columns,
        })
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Whether the columns need the candidates' bi-encoder vectors.
    pub fn needs_answers(&self) -> bool {
        self.columns.iter().any(|c| matches!(c, Column::Cos))
    }

    /// The extra features of one question, candidate-major (`len()` per candidate):
    /// `base` its base scores, `qvec` its unit question vector, `answers` its candidates'
    /// unit vectors (needed for `cos`).
    pub fn of_question(
        &self,
        q: &Question,
        base: &[f32],
        qvec: &[f32],
        answers: Option<&[f32]>,
    ) -> Result<Vec<f32>> {
        let n = q.candidates.len();
        let e = self.len();
        let mut out = vec![0f32; n * e];
        for (c, column) in self.columns.iter().enumerate() {
            let values = match column {
                Column::Base => base.to_vec(),
                Column::Cos => {
                    let a = answers.ok_or_else(|| {
                        ModelError::Backend("node feature `cos` needs answer vectors".into())
                    })?;
                    let dim = qvec.len();
                    (0..n)
                        .map(|i| {
                            a[i * dim..(i + 1) * dim]
                                .iter()
                                .zip(qvec)
                                .map(|(x, y)| x * y)
                                .sum()
                        })
                        .collect()
                }
                Column::Ranker(r) => r.score(q)?,
            };
            if values.len() != n {
                return Err(ModelError::Backend(format!(
                    "node feature {:?} gave {} scores for {} candidates of question {}",
                    self.names[c],
                    values.len(),
                    n,
                    q.id
                )));
            }
            for (i, v) in standardise(&values).into_iter().enumerate() {
                out[i * e + c] = v;
            }
        }
        Ok(out)
    }
}

/// Z-scores of `v` (population std); all 0 when `v` is constant or has one value.
pub fn standardise(v: &[f32]) -> Vec<f32> {
    let n = v.len().max(1) as f32;
    let mean = v.iter().sum::<f32>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n;
    let sd = var.sqrt();
    if !sd.is_finite() || sd < 1e-6 {
        return vec![0.0; v.len()];
    }
    v.iter().map(|x| (x - mean) / sd).collect()
}

/// Node inputs of a row: the base feature and then the extra columns, node-major.
pub fn interleave(features: &[f32], extra: &[f32]) -> Vec<f32> {
    let n = features.len();
    if extra.is_empty() || n == 0 {
        return features.to_vec();
    }
    let e = extra.len() / n;
    let mut out = Vec::with_capacity(n * (1 + e));
    for i in 0..n {
        out.push(features[i]);
        out.extend(&extra[i * e..(i + 1) * e]);
    }
    out
}
