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
//!   the model directory;
//! - `cls-vec` (or `cls-vec:N`, default N = 16): the same for the base cross-encoder's own
//!   view of the pair, the last layer's `[CLS]` state of `[CLS] q [SEP] a [SEP]` (what its
//!   classification head reads; 384 values for MiniLM), from [`crate::cls::ClsEncoder`]. Only
//!   a cross-encoder base has one.
//!
//! Every column is a function of the question and its candidates' texts (and the base
//! scores) only: labels never reach it (the PCAs read no labels either).

use crate::cls::ClsEncoder;
use ansel_data::Question;
use ansel_model::{ModelError, Ranker, Result};
use ansel_torch::tch::{self, Kind, Tensor};
use serde::{Deserialize, Serialize};

/// Default number of `pair-vec` (and `cls-vec`) columns.
pub const PAIR_VEC_DIMS: usize = 16;

/// A vector node feature reduced by a PCA fitted on the training nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeVec {
    /// `pair-vec`: the bi-encoder pair vector [q*a ; |q-a|].
    Pair,
    /// `cls-vec`: the base cross-encoder's last-layer `[CLS]` state of the pair.
    Cls,
}

impl NodeVec {
    pub const ALL: [NodeVec; 2] = [NodeVec::Pair, NodeVec::Cls];

    /// The option's name (`pair-vec`, `cls-vec`).
    pub fn name(self) -> &'static str {
        match self {
            NodeVec::Pair => "pair-vec",
            NodeVec::Cls => "cls-vec",
        }
    }

    /// The file its PCA is stored in, in the model directory.
    pub fn file(self) -> &'static str {
        match self {
            NodeVec::Pair => "pair-pca.json",
            NodeVec::Cls => "cls-pca.json",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The vector feature of `pair-vec[:N]` / `cls-vec[:N]` with its number of columns, or `None`
/// for another name.
pub fn vec_dims(name: &str) -> Option<(NodeVec, std::result::Result<usize, String>)> {
    NodeVec::ALL.into_iter().find_map(|kind| {
        let base = kind.name();
        if name == base {
            return Some((kind, Ok(PAIR_VEC_DIMS)));
        }
        let n = name.strip_prefix(base)?.strip_prefix(':')?;
        Some((
            kind,
            match n.parse::<usize>() {
                Ok(d) if (1..=256).contains(&d) => Ok(d),
                _ => Err(format!(
                    "node feature {name:?}: {base}:N needs N between 1 and 256"
                )),
            },
        ))
    })
}

/// Columns the extra features of `names` take per node (`pair-vec:N` and `cls-vec:N` take N,
/// others 1).
pub fn width(names: &[String]) -> Result<usize> {
    names
        .iter()
        .map(|n| match vec_dims(n) {
            Some((_, d)) => d.map_err(|message| ModelError::Unsupported {
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

/// A PCA of per-node vectors (pair vectors, `[CLS]` states), fitted on training nodes:
/// `z = W (x - mean)`, each row of `W` a principal axis divided by the square root of its
/// variance (whitened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairPca {
    /// Length of an input vector (a pair vector: twice the bi-encoder's dimension; a `[CLS]`
    /// state: the cross-encoder's hidden size).
    pub input: usize,
    pub dims: usize,
    pub mean: Vec<f32>,
    /// `dims` rows of `input` weights.
    pub weights: Vec<f32>,
    /// Variance of the training pair vectors along each axis (descending).
    pub variance: Vec<f32>,
}

impl PairPca {
    /// Fits on `rows` vectors of `input` floats each (`rows.len() / input` of them).
    pub fn fit(rows: &[f32], input: usize, dims: usize) -> Result<PairPca> {
        let n = rows.len() / input.max(1);
        if input == 0 || dims == 0 || dims > input || n < 2 || rows.len() != n * input {
            return Err(ModelError::Backend(format!(
                "node-vector PCA: cannot fit {dims} axes on {n} vectors of {input} floats"
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
        .map_err(|e| ModelError::Backend(format!("node-vector PCA: {e}")))?;
        Ok(PairPca {
            input,
            dims,
            mean,
            weights,
            variance,
        })
    }

    /// The `dims` whitened components of one vector.
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
    /// `dims` whitened PCA components of the pair vector or the `[CLS]` state (the PCA is set
    /// by [`Extras::fit_pair_pca`] / [`Extras::fit_cls_pca`] or [`Extras::set_pca`]).
    Vector { kind: NodeVec, dims: usize },
}

impl Column {
    fn width(&self) -> usize {
        match self {
            Column::Vector { dims, .. } => *dims,
            _ => 1,
        }
    }
}

/// The extra columns of a model, in card order.
#[derive(Default)]
pub struct Extras {
    pub names: Vec<String>,
    pub columns: Vec<Column>,
    /// The PCAs of `pair-vec` and `cls-vec` (by [`NodeVec`]; fitted on training nodes, or read
    /// from a model directory).
    pcas: [Option<PairPca>; 2],
    /// The base cross-encoder that gives `cls-vec` its `[CLS]` states.
    cls: Option<ClsEncoder>,
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
            if let Some((kind, dims)) = vec_dims(name) {
                if columns
                    .iter()
                    .any(|c| matches!(c, Column::Vector { kind: k, .. } if *k == kind))
                {
                    return Err(ModelError::Unsupported {
                        model: crate::KIND.into(),
                        message: format!("only one {} node feature per model", kind.name()),
                    });
                }
                let dims = dims.map_err(|message| ModelError::Unsupported {
                    model: crate::KIND.into(),
                    message,
                })?;
                columns.push(Column::Vector { kind, dims });
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
            pcas: [None, None],
            cls: None,
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
        self.columns.iter().any(|c| {
            matches!(
                c,
                Column::Cos
                    | Column::Vector {
                        kind: NodeVec::Pair,
                        ..
                    }
            )
        })
    }

    /// The number of components of the `kind` column, if there is one.
    pub fn vector(&self, kind: NodeVec) -> Option<usize> {
        self.columns.iter().find_map(|c| match c {
            Column::Vector { kind: k, dims } if *k == kind => Some(*dims),
            _ => None,
        })
    }

    /// Whether the columns need the base cross-encoder's `[CLS]` states (`cls-vec`).
    pub fn needs_cls(&self) -> bool {
        self.vector(NodeVec::Cls).is_some()
    }

    /// The PCA of the `kind` column (`None` before fitting or without the column).
    pub fn pca(&self, kind: NodeVec) -> Option<&PairPca> {
        self.pcas[kind.index()].as_ref()
    }

    /// The base cross-encoder of `cls-vec` (set by [`Extras::set_cls_encoder`]).
    pub fn cls_encoder(&self) -> Option<&ClsEncoder> {
        self.cls.as_ref()
    }

    /// Sets the encoder of the `cls-vec` column's `[CLS]` states (the base cross-encoder).
    pub fn set_cls_encoder(&mut self, encoder: ClsEncoder) {
        self.cls = Some(encoder);
    }

    pub fn cls_encoder_mut(&mut self) -> Option<&mut ClsEncoder> {
        self.cls.as_mut()
    }

    /// Fits the `cls-vec` PCA on the training nodes' `[CLS]` states (`dim` floats each, in
    /// order). Reads no label. Does nothing without a `cls-vec` column.
    pub fn fit_cls_pca(&mut self, cls: &[f32], dim: usize) -> Result<()> {
        let Some(dims) = self.vector(NodeVec::Cls) else {
            return Ok(());
        };
        self.pcas[NodeVec::Cls.index()] = Some(PairPca::fit(cls, dim, dims)?);
        Ok(())
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
        let Some(dims) = self.vector(NodeVec::Pair) else {
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
        self.pcas[NodeVec::Pair.index()] = Some(PairPca::fit(&rows, 2 * dim, dims)?);
        Ok(())
    }

    /// Sets the stored `kind` PCA (a loaded model's); its size must match the column.
    pub fn set_pca(&mut self, kind: NodeVec, pca: Option<PairPca>) -> Result<()> {
        match (self.vector(kind), &pca) {
            (None, None) => {}
            (Some(dims), Some(p)) if p.dims == dims => {}
            (want, _) => {
                return Err(ModelError::Backend(format!(
                    "{} PCA with {:?} axes for a {} column of {want:?}",
                    kind.name(),
                    pca.as_ref().map(|p| p.dims),
                    kind.name()
                )))
            }
        }
        self.pcas[kind.index()] = pca;
        Ok(())
    }

    /// The extra features of one question, candidate-major (`len()` per candidate):
    /// `base` its base scores, `qvec` its unit question vector, `answers` its candidates'
    /// unit vectors (needed for `cos` and `pair-vec`), `cls` its candidates' `[CLS]` states
    /// (needed for `cls-vec`).
    pub fn of_question(
        &self,
        q: &Question,
        base: &[f32],
        qvec: &[f32],
        answers: Option<&[f32]>,
        cls: Option<&[f32]>,
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
                Column::Vector { kind, dims } => {
                    let name = kind.name();
                    let pca = self.pca(*kind).ok_or_else(|| {
                        ModelError::Backend(format!("node feature `{name}` needs its fitted PCA"))
                    })?;
                    let (vectors, input) = match kind {
                        NodeVec::Pair => (answers, 2 * qvec.len()),
                        NodeVec::Cls => (cls, pca.input),
                    };
                    let what = match kind {
                        NodeVec::Pair => "answer vectors",
                        NodeVec::Cls => "the base cross-encoder's [CLS] states",
                    };
                    let v = vectors.ok_or_else(|| {
                        ModelError::Backend(format!("node feature `{name}` needs {what}"))
                    })?;
                    // A pair vector is twice the answer vector's length.
                    let dim = match kind {
                        NodeVec::Pair => qvec.len(),
                        NodeVec::Cls => input,
                    };
                    if pca.input != input || pca.dims != *dims || v.len() != n * dim {
                        return Err(ModelError::Backend(format!(
                            "node feature `{name}`: a PCA of {} x {} for {n} candidates' {what} of {dim} dimensions ({} floats)",
                            pca.dims,
                            pca.input,
                            v.len()
                        )));
                    }
                    for i in 0..n {
                        let row = &v[i * dim..(i + 1) * dim];
                        let z = match kind {
                            NodeVec::Pair => pca.project(&pair_vector(qvec, row)),
                            NodeVec::Cls => pca.project(row),
                        };
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
