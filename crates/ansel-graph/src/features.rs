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
//! - any label-free ranker the CLI resolves without corpus statistics (`wo`, `wo-rr`, `rr`);
//! - `pair-vec` (or `pair-vec:N`, default N = 16): N columns that differ per candidate in
//!   more than one direction, the pair vector [q*a ; |q-a|] of the bi-encoder's unit question
//!   and answer vectors projected on the first N principal axes of the training nodes' pair
//!   vectors ([`PairPca`], whitened: unit variance over the training nodes, not z-scored
//!   within the question). The PCA is fitted once, on the training nodes only, and stored in
//!   the model directory.
//!
//! Every column is a function of the question and its candidates' texts (and the base
//! scores) only: labels never reach it (the PCA reads no labels either).

use ansel_data::Question;
use ansel_model::{ModelError, Ranker, Result};
use ansel_torch::tch::{self, Kind, Tensor};
use serde::{Deserialize, Serialize};

/// Default number of `pair-vec` columns.
pub const PAIR_VEC_DIMS: usize = 16;

/// The number of columns of `pair-vec` / `pair-vec:N`, or `None` for another name.
pub fn pair_vec_dims(name: &str) -> Option<std::result::Result<usize, String>> {
    if name == "pair-vec" {
        return Some(Ok(PAIR_VEC_DIMS));
    }
    let n = name.strip_prefix("pair-vec:")?;
    Some(match n.parse::<usize>() {
        Ok(d) if (1..=256).contains(&d) => Ok(d),
        _ => Err(format!(
            "node feature {name:?}: pair-vec:N needs N between 1 and 256"
        )),
    })
}

/// Columns the extra features of `names` take per node (`pair-vec:N` takes N, others 1).
pub fn width(names: &[String]) -> Result<usize> {
    names
        .iter()
        .map(|n| match pair_vec_dims(n) {
            Some(d) => d.map_err(|message| ModelError::Unsupported {
                model: crate::KIND.into(),
                message,
            }),
            None => Ok(1),
        })
        .sum()
}

/// The pair vector of a unit question vector and a unit answer vector: [q*a ; |q-a|].
pub fn pair_vector(q: &[f32], a: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(2 * q.len());
    out.extend(q.iter().zip(a).map(|(x, y)| x * y));
    out.extend(q.iter().zip(a).map(|(x, y)| (x - y).abs()));
    out
}

/// A PCA of pair vectors, fitted on training nodes: `z = W (x - mean)`, each row of `W` a
/// principal axis divided by the square root of its variance (whitened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairPca {
    /// Length of a pair vector (twice the bi-encoder's dimension).
    pub input: usize,
    pub dims: usize,
    pub mean: Vec<f32>,
    /// `dims` rows of `input` weights.
    pub weights: Vec<f32>,
    /// Variance of the training pair vectors along each axis (descending).
    pub variance: Vec<f32>,
}

impl PairPca {
    /// Fits on `rows` pair vectors of `input` floats each (`rows.len() / input` of them).
    pub fn fit(rows: &[f32], input: usize, dims: usize) -> Result<PairPca> {
        let n = rows.len() / input.max(1);
        if input == 0 || dims == 0 || dims > input || n < 2 || rows.len() != n * input {
            return Err(ModelError::Backend(format!(
                "pair-vec PCA: cannot fit {dims} axes on {n} pair vectors of {input} floats"
            )));
        }
        let (mean, weights, variance) = tch::no_grad(|| {
            let x = Tensor::from_slice(rows)
                .reshape([n as i64, input as i64])
                .to_kind(Kind::Double);
            let mean = x.mean_dim([0i64].as_slice(), true, Kind::Double);
            let (_, axes, var) = ansel_torch::principal_axes(&x, dims);
            let var = var.clamp_min(1e-12);
            let w = (axes / var.sqrt().unsqueeze(0)).transpose(0, 1);
            let flat =
                |t: Tensor| Vec::<f32>::try_from(t.to_kind(Kind::Float).contiguous().reshape([-1]));
            Ok::<_, tch::TchError>((flat(mean)?, flat(w)?, flat(var)?))
        })
        .map_err(|e| ModelError::Backend(format!("pair-vec PCA: {e}")))?;
        Ok(PairPca {
            input,
            dims,
            mean,
            weights,
            variance,
        })
    }

    /// The `dims` whitened components of one pair vector.
    pub fn project(&self, x: &[f32]) -> Vec<f32> {
        self.weights
            .chunks_exact(self.input)
            .map(|w| {
                w.iter()
                    .zip(x.iter().zip(&self.mean))
                    .map(|(w, (x, m))| w * (x - m))
                    .sum()
            })
            .collect()
    }

    /// Whether the sizes agree with each other and with `input`/`dims`.
    pub fn consistent(&self, input: usize, dims: usize) -> bool {
        self.input == input
            && self.dims == dims
            && self.mean.len() == input
            && self.weights.len() == input * dims
            && self.variance.len() == dims
    }
}

/// One extra feature column.
pub enum Column {
    /// The base scores, z-scored within the question.
    Base,
    /// Question-candidate cosine of the bi-encoder.
    Cos,
    /// A ranker's scores, z-scored within the question.
    Ranker(Box<dyn Ranker>),
    /// `dims` whitened PCA components of the pair vector (the PCA is set by
    /// [`Extras::fit_pair_pca`] or [`Extras::set_pair_pca`]).
    PairVec { dims: usize },
}

impl Column {
    fn width(&self) -> usize {
        match self {
            Column::PairVec { dims } => *dims,
            _ => 1,
        }
    }
}

/// The extra columns of a model, in card order.
#[derive(Default)]
pub struct Extras {
    pub names: Vec<String>,
    pub columns: Vec<Column>,
    /// The PCA of `pair-vec` (fitted on training nodes, or read from a model directory).
    pca: Option<PairPca>,
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
            if let Some(dims) = pair_vec_dims(name) {
                if columns.iter().any(|c| matches!(c, Column::PairVec { .. })) {
                    return Err(ModelError::Unsupported {
                        model: crate::KIND.into(),
                        message: "only one pair-vec node feature per model".into(),
                    });
                }
                let dims = dims.map_err(|message| ModelError::Unsupported {
                    model: crate::KIND.into(),
                    message,
                })?;
                columns.push(Column::PairVec { dims });
                continue;
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
            pca: None,
        })
    }

    /// Values per node (the sum of the columns' widths).
    pub fn len(&self) -> usize {
        self.columns.iter().map(Column::width).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Whether the columns need the candidates' bi-encoder vectors.
    pub fn needs_answers(&self) -> bool {
        self.columns
            .iter()
            .any(|c| matches!(c, Column::Cos | Column::PairVec { .. }))
    }

    /// The `pair-vec` column's number of components, if there is one.
    pub fn pair_vec(&self) -> Option<usize> {
        self.columns.iter().find_map(|c| match c {
            Column::PairVec { dims } => Some(*dims),
            _ => None,
        })
    }

    /// The PCA of the `pair-vec` column (`None` before fitting or without the column).
    pub fn pair_pca(&self) -> Option<&PairPca> {
        self.pca.as_ref()
    }

    /// Fits the `pair-vec` PCA on training nodes: `questions` with their unit question
    /// vectors (`dim` each) and their candidates' unit answer vectors, in order. Reads no
    /// label. Does nothing without a `pair-vec` column.
    pub fn fit_pair_pca(
        &mut self,
        questions: &[Question],
        qvecs: &[f32],
        answers: &[f32],
        dim: usize,
    ) -> Result<()> {
        let Some(dims) = self.pair_vec() else {
            return Ok(());
        };
        let nodes: usize = questions.iter().map(|q| q.candidates.len()).sum();
        if qvecs.len() != questions.len() * dim || answers.len() != nodes * dim {
            return Err(ModelError::Backend(format!(
                "pair-vec PCA: {} question and {} answer floats for {} questions, {nodes} candidates of {dim} dimensions",
                qvecs.len(),
                answers.len(),
                questions.len()
            )));
        }
        let mut rows = Vec::with_capacity(nodes * 2 * dim);
        let mut at = 0;
        for (i, q) in questions.iter().enumerate() {
            let qv = &qvecs[i * dim..(i + 1) * dim];
            for _ in &q.candidates {
                rows.extend(pair_vector(qv, &answers[at * dim..(at + 1) * dim]));
                at += 1;
            }
        }
        self.pca = Some(PairPca::fit(&rows, 2 * dim, dims)?);
        Ok(())
    }

    /// Sets the stored `pair-vec` PCA (a loaded model's); its size must match the column.
    pub fn set_pair_pca(&mut self, pca: Option<PairPca>) -> Result<()> {
        match (self.pair_vec(), &pca) {
            (None, None) => {}
            (Some(dims), Some(p)) if p.dims == dims => {}
            (want, _) => {
                return Err(ModelError::Backend(format!(
                    "pair-vec PCA with {:?} axes for a pair-vec column of {want:?}",
                    pca.as_ref().map(|p| p.dims)
                )))
            }
        }
        self.pca = pca;
        Ok(())
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
        let mut offset = 0;
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
                Column::PairVec { dims } => {
                    let pca = self.pca.as_ref().ok_or_else(|| {
                        ModelError::Backend("node feature `pair-vec` needs its fitted PCA".into())
                    })?;
                    let dim = qvec.len();
                    let a = answers.ok_or_else(|| {
                        ModelError::Backend("node feature `pair-vec` needs answer vectors".into())
                    })?;
                    if pca.input != 2 * dim || pca.dims != *dims || a.len() != n * dim {
                        return Err(ModelError::Backend(format!(
                            "node feature `pair-vec`: a PCA of {} x {} for {n} answers of {dim} dimensions ({} floats)",
                            pca.dims,
                            pca.input,
                            a.len()
                        )));
                    }
                    for i in 0..n {
                        let z = pca.project(&pair_vector(qvec, &a[i * dim..(i + 1) * dim]));
                        out[i * e + offset..i * e + offset + dims].copy_from_slice(&z);
                    }
                    offset += dims;
                    continue;
                }
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
                out[i * e + offset] = v;
            }
            offset += 1;
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
