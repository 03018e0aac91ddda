//! EQAG-GNN (Iyer et al., "Question-Answer Sentence Graph for Joint Modeling Answer
//! Selection"): a GCN over a graph of (question, answer) pairs that re-scores the candidates
//! of any base [`Ranker`].
//!
//! - Nodes are (q, a) pairs; a node's one feature is the base ranker's score
//!   ([`Feature`]: logistic of a logit by default), or a random number for the RI check.
//! - Intra-row edges join a question's top `k_intra` candidates with feature >= `th_intra`;
//!   inter-row edges join them to the top `k_inter` answers (stored feature >= `th_inter`)
//!   of the `k_rows` most similar training questions (MiniLM bi-encoder, cosine), weighted
//!   by that question-question similarity. [`Variant`] TA / T+ / T+- choose which training
//!   answers may be reached (all / positives / positives to the top and negatives to the
//!   bottom nodes).
//! - A two-layer GCN ([`gcn`], eq. 2) is trained with BCE on the training graph only.
//!   An unseen question's row is joined to the stored training graph and scored on its
//!   two-hop neighbourhood ([`gcn::Gcn::forward_row`]); questions never see each other and
//!   their labels are never read.
//!
//! - Extension (not the paper): `node_features` ([`features`]) appends standardised columns
//!   (the base score's z-score, lexical rankers, the bi-encoder cosine) to each node's input,
//!   or (`pair-vec`) PCA components of the bi-encoder's question-answer pair vector, which
//!   differ per candidate in many directions (the PCA, fitted on training nodes, is stored),
//!   or (`cls-vec`, [`cls`]) PCA components of the base cross-encoder's `[CLS]` state.
//! - Extension (not the paper): [`oof`] gives the training rows out-of-fold base scores
//!   (each fold scored by a base ranker trained without it), so that the GCN learns from
//!   scores distributed like those of unseen questions.
//!
//! A model directory holds `model.json` (the base ranker and bi-encoder by relative path,
//! graph settings), `gcn.json` (weights), `rows.json` (training rows: features, labels,
//! neighbours) and `questions.f32` (normalised training-question vectors); `answers.f32`
//! (training answer vectors) with inter-row edges by answer, `pair-pca.json` with `pair-vec`,
//! `cls-pca.json` with `cls-vec`.

pub mod cache;
pub mod cls;
pub mod features;
pub mod gcn;
pub mod graph;
pub mod oof;
pub mod search;

pub use cache::{CachedRanker, ScoreCache};
pub use cls::ClsEncoder;
pub use features::{Extras, NodeVec, PairPca};
pub use graph::{Feature, GraphParams, InterBy, Variant};

use ansel_data::Question;
use ansel_eval::{evaluate, Filter, Report};
use ansel_model::{replace_dir, write_atomic, ModelCard, ModelError, Ranker, Result};
use gcn::Gcn;
use graph::{Graph, Row, RowEdges, TrainingRows};
use search::{NearestQuestions, QuestionEncoder};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The `kind` of an EQAG model card.
pub const KIND: &str = "eqag";

const GCN_FILE: &str = "gcn.json";
const ROWS_FILE: &str = "rows.json";
const VECTORS_FILE: &str = "questions.f32";
const ANSWERS_FILE: &str = "answers.f32";

/// The card's `config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EqagConfig {
    /// The base ranker: a built-in name, or a model directory relative to this one.
    pub base: String,
    pub base_is_dir: bool,
    /// The question-question bi-encoder (a Hugging Face directory), relative to this one.
    pub qq_encoder: String,
    pub feature: Feature,
    /// RI: node features are random numbers in [0, 1) instead of base scores.
    pub random_init: bool,
    pub graph: GraphParams,
    pub training_rows: usize,
    pub training_nodes: usize,
    pub training_edges: usize,
    /// Extension: extra node feature columns after the base feature ([`features`]); empty
    /// for the paper's variants.
    #[serde(default)]
    pub node_features: Vec<String>,
}

/// The stored training rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredRows {
    ids: Vec<String>,
    rows: Vec<Row>,
    features: Vec<f32>,
    labels: Vec<bool>,
    /// Extra node features (`node_features.len()` per node, node-major).
    #[serde(default)]
    extra: Vec<f32>,
    /// Each row's `k_rows` most similar other training rows.
    neighbours: Vec<Vec<(usize, f32)>>,
}

impl StoredRows {
    /// The graph over the stored training rows (`answers`: their answer vectors, for
    /// inter-row edges by answer similarity).
    fn training_graph(&self, answers: Option<&[f32]>, params: &GraphParams) -> Graph {
        graph::training_graph(
            &TrainingRows {
                rows: &self.rows,
                features: &self.features,
                labels: &self.labels,
                answers,
            },
            &self.neighbours,
            params,
        )
    }
}

/// A uniform number in [0, 1) from a (question, candidate) text pair: RI features, the same
/// for a pair wherever it is seen.
pub fn random_feature(question: &str, candidate: &str) -> f32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in question.bytes().chain([0u8]).chain(candidate.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // splitmix64 finaliser
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// Node features of one question from its base scores.
fn node_features(q: &Question, scores: &[f32], feature: Feature, random: bool) -> Vec<f32> {
    if random {
        q.candidates
            .iter()
            .map(|c| random_feature(&q.text, &c.text))
            .collect()
    } else {
        feature.apply(scores)
    }
}

/// A trained graph: the stored training rows, their graph and the GCN.
pub struct Eqag {
    pub config: EqagConfig,
    stored: StoredRows,
    search: NearestQuestions,
    graph: Graph,
    degrees: Vec<f32>,
    /// Unit answer vectors of the training nodes ([`InterBy::Answer`] only).
    answers: Option<Vec<f32>>,
    /// GCN inputs of the training nodes (base feature, then the extra columns).
    x: Vec<f32>,
    /// Extra values per node (`features::width` of `config.node_features`).
    extra_width: usize,
    /// The `pair-vec` and `cls-vec` PCAs, fitted on the training nodes (one per such column,
    /// in [`NodeVec::ALL`] order).
    pub pcas: Vec<(NodeVec, PairPca)>,
    pub gcn: Gcn,
}

impl Eqag {
    fn train_rows(&self) -> TrainingRows<'_> {
        TrainingRows {
            rows: &self.stored.rows,
            features: &self.stored.features,
            labels: &self.stored.labels,
            answers: self.answers.as_deref(),
        }
    }

    /// Whether scoring needs the candidates' answer vectors.
    pub fn needs_answers(&self) -> bool {
        self.config.graph.inter_by == InterBy::Answer
    }

    /// The edges an unseen question row gets (its features, answer vectors and question
    /// vector only).
    pub fn row_edges(&self, features: &[f32], answers: Option<&[f32]>, qvec: &[f32]) -> RowEdges {
        let nb = self.search.top_k(qvec, self.config.graph.k_rows, None);
        graph::row_edges(
            features,
            answers,
            &nb,
            &self.train_rows(),
            &self.config.graph,
        )
    }

    /// Features per node: the base feature and the extra columns.
    pub fn inputs(&self) -> usize {
        1 + self.extra_width
    }

    /// GCN scores of an unseen question row (`extra`: its extra node features).
    pub fn score_row(
        &self,
        features: &[f32],
        extra: &[f32],
        answers: Option<&[f32]>,
        qvec: &[f32],
    ) -> Vec<f32> {
        let edges = self.row_edges(features, answers, qvec);
        self.gcn.forward_row(
            &self.graph,
            &self.degrees,
            &self.x,
            &features::interleave(features, extra),
            &edges,
        )
    }

    /// Dimension of the stored question vectors.
    pub fn search_dim(&self) -> usize {
        self.search.dim
    }

    pub fn training_rows(&self) -> usize {
        self.stored.rows.len()
    }
}

/// Base scores and question vectors of a set of questions (computed once, reused by every
/// configuration of a sweep).
#[derive(Clone)]
pub struct Prepared {
    pub questions: Vec<Question>,
    pub scores: Vec<Vec<f32>>,
    pub vectors: Vec<f32>,
    /// Unit vectors of every candidate, in order (for [`InterBy::Answer`] and `cos`).
    pub answers: Option<Vec<f32>>,
    /// The base cross-encoder's `[CLS]` state of every candidate, in order (for `cls-vec`).
    pub cls: Option<Vec<f32>>,
    /// Each question's extra node features ([`Extras::of_question`]; empty without).
    pub extra: Vec<Vec<f32>>,
}

impl Prepared {
    /// (even positions, odd positions): two disjoint halves.
    pub fn split_alternate(&self) -> (Prepared, Prepared) {
        let dim = self.vectors.len() / self.questions.len().max(1);
        let cdim = self.cls_dim();
        let mut halves = [self.empty(), self.empty()];
        let mut at = 0;
        for (i, q) in self.questions.iter().enumerate() {
            let h = &mut halves[i % 2];
            let n = q.candidates.len();
            h.questions.push(q.clone());
            h.scores.push(self.scores[i].clone());
            h.extra.push(self.extra.get(i).cloned().unwrap_or_default());
            h.vectors.extend(&self.vectors[i * dim..(i + 1) * dim]);
            if let (Some(dst), Some(src)) = (h.answers.as_mut(), self.answers.as_ref()) {
                dst.extend(&src[at * dim..(at + n) * dim]);
            }
            if let (Some(dst), Some(src)) = (h.cls.as_mut(), self.cls.as_ref()) {
                dst.extend(&src[at * cdim..(at + n) * cdim]);
            }
            at += n;
        }
        let [a, b] = halves;
        (a, b)
    }

    fn empty(&self) -> Prepared {
        Prepared {
            questions: Vec::new(),
            scores: Vec::new(),
            vectors: Vec::new(),
            answers: self.answers.as_ref().map(|_| Vec::new()),
            cls: self.cls.as_ref().map(|_| Vec::new()),
            extra: Vec::new(),
        }
    }

    /// Floats per `[CLS]` state in `cls` (0 without states).
    fn cls_dim(&self) -> usize {
        let nodes: usize = self.questions.iter().map(|q| q.candidates.len()).sum();
        self.cls.as_ref().map_or(0, |c| c.len() / nodes.max(1))
    }

    /// `cache`: a bi-encoder vector cache file (see [`QuestionEncoder::encode_cached`]);
    /// `extras`: the extra node features to compute (`cls-vec` takes the `[CLS]` states from
    /// the extras' [`ClsEncoder`], with its own cache).
    pub fn new(
        questions: Vec<Question>,
        base: &dyn Ranker,
        encoder: &QuestionEncoder,
        with_answers: bool,
        cache: Option<&Path>,
        extras: &Extras,
    ) -> Result<Prepared> {
        let scores = base.score_all(&questions)?;
        let texts: Vec<&str> = questions.iter().map(|q| q.text.as_str()).collect();
        let vectors = encoder.encode_cached(&texts, cache)?;
        let answers = if with_answers || extras.needs_answers() {
            let texts: Vec<&str> = questions
                .iter()
                .flat_map(|q| q.candidates.iter().map(|c| c.text.as_str()))
                .collect();
            Some(encoder.encode_cached(&texts, cache)?)
        } else {
            None
        };
        let cls = if extras.needs_cls() {
            let encoder = extras.cls_encoder().ok_or_else(|| {
                ModelError::Backend("node feature `cls-vec` needs the base cross-encoder".into())
            })?;
            Some(encoder.encode(&questions)?)
        } else {
            None
        };
        let mut prepared = Prepared {
            questions,
            scores,
            vectors,
            answers,
            cls,
            extra: Vec::new(),
        };
        prepared.extra = prepared.extra_features(extras, encoder.dim)?;
        Ok(prepared)
    }

    /// The extra node features of every question (empty vectors without extras).
    pub fn extra_features(&self, extras: &Extras, dim: usize) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(self.questions.len());
        let mut at = 0;
        let cdim = self.cls_dim();
        for (i, q) in self.questions.iter().enumerate() {
            let n = q.candidates.len();
            if extras.is_empty() {
                out.push(Vec::new());
            } else {
                let a = self
                    .answers
                    .as_deref()
                    .map(|a| &a[at * dim..(at + n) * dim]);
                let c = self.cls.as_deref().map(|c| &c[at * cdim..(at + n) * cdim]);
                let qvec = &self.vectors[i * dim..(i + 1) * dim];
                out.push(extras.of_question(q, &self.scores[i], qvec, a, c)?);
            }
            at += n;
        }
        Ok(out)
    }
}

/// Builds the stored rows and graph for `params` from prepared training questions.
#[allow(clippy::too_many_arguments)]
pub fn build(
    train: &Prepared,
    params: &GraphParams,
    feature: Feature,
    random_init: bool,
    base: &str,
    base_is_dir: bool,
    qq_encoder: &str,
    dim: usize,
    extras: &Extras,
) -> Result<Eqag> {
    let width = extras.len();
    let mut pcas = Vec::new();
    for kind in NodeVec::ALL {
        if extras.vector(kind).is_some() {
            let pca = extras.pca(kind).ok_or_else(|| {
                ModelError::Backend(format!(
                    "node feature `{}`: fit its PCA on the training nodes before building",
                    kind.name()
                ))
            })?;
            pcas.push((kind, pca.clone()));
        }
    }
    let mut stored = StoredRows {
        ids: Vec::new(),
        rows: Vec::new(),
        features: Vec::new(),
        labels: Vec::new(),
        extra: Vec::new(),
        neighbours: Vec::new(),
    };
    for (i, (q, s)) in train.questions.iter().zip(&train.scores).enumerate() {
        let extra = train.extra.get(i).map(Vec::as_slice).unwrap_or(&[]);
        if extra.len() != q.candidates.len() * width {
            return Err(ModelError::Backend(format!(
                "training question {}: {} extra features for {} candidates x {} columns",
                q.id,
                extra.len(),
                q.candidates.len(),
                width
            )));
        }
        stored.extra.extend(extra);
        let labels: Option<Vec<bool>> = q.candidates.iter().map(|c| c.label).collect();
        let Some(labels) = labels else {
            return Err(ModelError::Unsupported {
                model: KIND.into(),
                message: format!("training question {} has unlabelled candidates", q.id),
            });
        };
        stored.ids.push(q.id.clone());
        stored.rows.push(Row {
            start: stored.features.len(),
            len: q.candidates.len(),
        });
        stored
            .features
            .extend(node_features(q, s, feature, random_init));
        stored.labels.extend(labels);
    }
    let search = NearestQuestions {
        dim,
        vectors: train.vectors.clone(),
    };
    let answers = match params.inter_by {
        InterBy::Row => None,
        InterBy::Answer => Some(train.answers.clone().ok_or_else(|| {
            ModelError::Backend("inter-row edges by answer need answer vectors".into())
        })?),
    };
    stored.neighbours = search.top_k_batch(&train.vectors, params.k_rows, true);
    let graph = stored.training_graph(answers.as_deref(), params);
    let degrees = graph.degrees();
    let config = EqagConfig {
        base: base.to_string(),
        base_is_dir,
        qq_encoder: qq_encoder.to_string(),
        feature,
        random_init,
        graph: *params,
        training_rows: stored.rows.len(),
        training_nodes: stored.features.len(),
        training_edges: graph.edges(),
        node_features: extras.names.clone(),
    };
    let x = features::interleave(&stored.features, &stored.extra);
    Ok(Eqag {
        config,
        stored,
        search,
        graph,
        degrees,
        answers,
        x,
        extra_width: width,
        pcas,
        gcn: Gcn {
            inputs: 1 + width,
            hidden: 0,
            root: false,
            w1: vec![],
            b1: vec![],
            r1: vec![],
            w2: vec![],
            b2: 0.0,
            r2: vec![],
        },
    })
}

/// GCN scores of prepared questions (the online path, one row at a time).
pub fn score_prepared(model: &Eqag, data: &Prepared) -> Vec<Vec<f32>> {
    let dim = model.search.dim;
    let mut at = 0;
    data.questions
        .iter()
        .zip(&data.scores)
        .enumerate()
        .map(|(i, (q, s))| {
            let f = node_features(q, s, model.config.feature, model.config.random_init);
            let n = q.candidates.len();
            let a = data
                .answers
                .as_deref()
                .map(|a| &a[at * dim..(at + n) * dim]);
            at += n;
            let extra = data.extra.get(i).map(Vec::as_slice).unwrap_or(&[]);
            model.score_row(&f, extra, a, &data.vectors[i * dim..(i + 1) * dim])
        })
        .collect()
}

/// GCN training settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitOptions {
    pub hidden: usize,
    pub root: bool,
    pub lr: f64,
    pub epochs: usize,
    pub eval_every: usize,
    /// Evaluations without a better dev MAP before stopping...
    pub patience: usize,
    /// ... but never before this epoch (the first epochs can rank upside down while the
    /// output weight's sign settles).
    #[serde(default)]
    pub min_epochs: usize,
    /// Extension: fit the GCN on half of the dev rows (even positions) joined to the training
    /// graph, and stop early / choose on the other half, instead of on the training nodes
    /// (whose base scores come from a ranker trained on them, so they are nearly the labels).
    #[serde(default)]
    pub fit_on_dev: bool,
    pub seed: u64,
}

/// The outcome of fitting: dev metrics of the kept weights, epochs run, the log.
pub struct Fit {
    pub dev: Report,
    pub best_epoch: usize,
    pub epochs: usize,
    pub log: Vec<serde_json::Value>,
}

/// Trains the GCN of `model` on its training graph, keeping the weights with the best dev
/// MAP (evaluated through the online path, on dev rows joined to the training graph).
pub fn fit(model: &mut Eqag, dev: &Prepared, opts: &FitOptions) -> Result<Fit> {
    ansel_torch::tch::manual_seed(opts.seed as i64);
    let mut best: Option<(f64, usize, Gcn)> = None;
    let mut since = 0;
    let mut log = Vec::new();
    let mut last = 0;
    let mut labels = model.stored.labels.clone();
    let mut features = model.x.clone();
    let inputs = model.inputs();
    let mut graph = model.graph.clone();
    let (fit_rows, val) = if opts.fit_on_dev {
        let (a, b) = dev.split_alternate();
        (Some(a), b)
    } else {
        (None, dev.clone())
    };
    let mut loss_nodes = None;
    if let Some(rows) = &fit_rows {
        // Join every fit row to the training graph (rows are not joined to each other).
        let mut mask = vec![false; labels.len()];
        let dim = model.search.dim;
        let mut at = 0;
        for (i, (q, s)) in rows.questions.iter().zip(&rows.scores).enumerate() {
            let f = node_features(q, s, model.config.feature, model.config.random_init);
            let n = f.len();
            let a = rows
                .answers
                .as_deref()
                .map(|a| &a[at * dim..(at + n) * dim]);
            at += n;
            let e = model.row_edges(&f, a, &rows.vectors[i * dim..(i + 1) * dim]);
            let start = features.len() / inputs;
            graph.adj.extend(vec![Vec::new(); n]);
            for (a, b, w) in e.intra {
                graph.add(start + a, start + b, w);
            }
            for (a, node, w) in e.inter {
                graph.add_inter(start + a, node, w, e.directed_inter);
            }
            let extra = rows.extra.get(i).map(Vec::as_slice).unwrap_or(&[]);
            features.extend(features::interleave(&f, extra));
            labels.extend(q.candidates.iter().map(|c| c.label.unwrap_or(false)));
            mask.extend(std::iter::repeat_n(true, n));
        }
        loss_nodes = Some(mask);
    }
    gcn::train(
        &graph,
        &features,
        inputs,
        &labels,
        loss_nodes.as_deref(),
        opts.hidden,
        opts.root,
        opts.lr,
        opts.epochs,
        opts.eval_every,
        |epoch, loss, weights| {
            model.gcn = weights.clone();
            let report = evaluate(
                &val.questions,
                &score_prepared(model, &val),
                Filter::Answered,
            );
            let map = report.metric("MAP").unwrap_or(0.0);
            log.push(serde_json::json!({
                "epoch": epoch, "loss": loss, "dev MAP": map,
                "dev P@1": report.metric("P@1"), "dev MRR": report.metric("MRR"),
            }));
            last = epoch;
            if best.as_ref().is_none_or(|b| map > b.0) {
                best = Some((map, epoch, weights.clone()));
                since = 0;
            } else {
                since += 1;
            }
            since < opts.patience || epoch < opts.min_epochs
        },
    )?;
    let (_, best_epoch, weights) =
        best.ok_or_else(|| ModelError::Backend("no epochs run".into()))?;
    model.gcn = weights;
    let dev_report = evaluate(
        &val.questions,
        &score_prepared(model, &val),
        Filter::Answered,
    );
    Ok(Fit {
        dev: dev_report,
        best_epoch,
        epochs: last,
        log,
    })
}

impl Eqag {
    /// Writes the model directory (atomically) with `card`'s training record.
    pub fn save(
        &self,
        out: &Path,
        name: &str,
        training: ansel_model::TrainingRecord,
    ) -> Result<()> {
        let mut card = ModelCard::new(
            KIND,
            name,
            serde_json::to_value(&self.config).expect("config serializes"),
        );
        card.training = Some(training);
        replace_dir(out, |dir| {
            write_atomic(
                &dir.join(GCN_FILE),
                &serde_json::to_vec(&self.gcn).expect("weights serialize"),
            )?;
            write_atomic(
                &dir.join(ROWS_FILE),
                &serde_json::to_vec(&self.stored).expect("rows serialize"),
            )?;
            let bytes: Vec<u8> = self
                .search
                .vectors
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            write_atomic(&dir.join(VECTORS_FILE), &bytes)?;
            if let Some(a) = &self.answers {
                let bytes: Vec<u8> = a.iter().flat_map(|v| v.to_le_bytes()).collect();
                write_atomic(&dir.join(ANSWERS_FILE), &bytes)?;
            }
            for (kind, p) in &self.pcas {
                write_atomic(
                    &dir.join(kind.file()),
                    &serde_json::to_vec(p).expect("PCA serializes"),
                )?;
            }
            card.write(dir)
        })
    }

    /// Reads a model directory written by [`Eqag::save`] (not the base ranker or encoder).
    pub fn load(dir: &Path, card: &ModelCard) -> Result<Eqag> {
        let format = |file: &str, message: String| ModelError::Format {
            path: dir.join(file),
            message,
        };
        let config: EqagConfig = ansel_model::json::from_value(card.config.clone(), "config")
            .map_err(|message| format(ansel_model::CARD_FILE, message))?;
        let read = |file: &str| {
            std::fs::read(dir.join(file)).map_err(|e| ModelError::io(dir.join(file), e))
        };
        let gcn: Gcn = serde_json::from_slice(&read(GCN_FILE)?)
            .map_err(|e| format(GCN_FILE, format!("line {}: {e}", e.line())))?;
        let stored: StoredRows = serde_json::from_slice(&read(ROWS_FILE)?)
            .map_err(|e| format(ROWS_FILE, format!("line {}: {e}", e.line())))?;
        let bytes = read(VECTORS_FILE)?;
        if bytes.len() % 4 != 0
            || stored.rows.is_empty()
            || bytes.len() / 4 % stored.rows.len() != 0
        {
            return Err(format(
                VECTORS_FILE,
                format!(
                    "{} bytes is not {} rows of f32 vectors",
                    bytes.len(),
                    stored.rows.len()
                ),
            ));
        }
        let vectors: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let dim = vectors.len() / stored.rows.len();
        let last = stored.rows.last().map_or(0, |r| r.start + r.len);
        let width = features::width(&config.node_features).map_err(|e| {
            format(
                ansel_model::CARD_FILE,
                format!("field `config.node_features`: {e}"),
            )
        })?;
        let inputs = 1 + width;
        let consistent = stored.features.len() == last
            && stored.labels.len() == last
            && stored.extra.len() == last * width
            && gcn.inputs == inputs
            && gcn.w1.len() == gcn.hidden * inputs
            && stored.neighbours.len() == stored.rows.len()
            && stored
                .neighbours
                .iter()
                .flatten()
                .all(|&(r, _)| r < stored.rows.len())
            && gcn.w2.len() == gcn.hidden
            && gcn.b1.len() == gcn.hidden
            && (!gcn.root || (gcn.r1.len() == gcn.hidden * inputs && gcn.r2.len() == gcn.hidden));
        if !consistent {
            return Err(format(
                ROWS_FILE,
                "rows, features, labels, neighbours or weights do not agree in size".into(),
            ));
        }
        let answers = if config.graph.inter_by == InterBy::Answer {
            let bytes = read(ANSWERS_FILE)?;
            if bytes.len() != last * dim * 4 {
                return Err(format(
                    ANSWERS_FILE,
                    format!(
                        "{} bytes is not {last} answer vectors of {dim} f32",
                        bytes.len()
                    ),
                ));
            }
            Some(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect::<Vec<f32>>(),
            )
        } else {
            None
        };
        let mut pcas = Vec::new();
        for kind in NodeVec::ALL {
            let Some(dims) =
                config
                    .node_features
                    .iter()
                    .find_map(|n| match features::vec_dims(n) {
                        Some((k, d)) if k == kind => Some(d),
                        _ => None,
                    })
            else {
                continue;
            };
            let dims = dims.map_err(|e| format(ansel_model::CARD_FILE, e))?;
            let file = kind.file();
            let pca: PairPca = serde_json::from_slice(&read(file)?)
                .map_err(|e| format(file, format!("line {}: {e}", e.line())))?;
            // Pair vectors are twice the question vectors' length; a [CLS] state's length is
            // the base's hidden size, checked against the base when it is loaded.
            let input = match kind {
                NodeVec::Pair => 2 * dim,
                NodeVec::Cls => pca.input,
            };
            if !pca.consistent(input, dims) {
                return Err(format(
                    file,
                    match kind {
                        NodeVec::Pair => format!(
                            "expected {dims} axes of {input} floats (pair vectors of {dim}-d question vectors)"
                        ),
                        NodeVec::Cls => format!(
                            "expected {dims} axes of {input} floats, with a mean of {input} and {dims} variances"
                        ),
                    },
                ));
            }
            pcas.push((kind, pca));
        }
        let graph = stored.training_graph(answers.as_deref(), &config.graph);
        let degrees = graph.degrees();
        let x = features::interleave(&stored.features, &stored.extra);
        Ok(Eqag {
            config,
            stored,
            search: NearestQuestions { dim, vectors },
            graph,
            degrees,
            answers,
            x,
            extra_width: width,
            pcas,
            gcn,
        })
    }
}

/// Time spent per stage of one question.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Timings {
    pub base_ms: f64,
    pub encode_ms: f64,
    /// The base cross-encoder's `[CLS]` states of the candidates (`cls-vec` only; a second
    /// forward pass of the base here).
    pub cls_ms: f64,
    /// Nearest-question search, edge construction and the GCN.
    pub graph_ms: f64,
    pub search_ms: f64,
}

/// An EQAG model directory served as a [`Ranker`]: the base ranker scores the candidates
/// live, the bi-encoder embeds the question, the graph step re-scores them.
pub struct EqagRanker {
    name: String,
    base: Box<dyn Ranker>,
    encoder: QuestionEncoder,
    /// The extra node feature columns (`config.node_features`).
    extras: Extras,
    pub model: Eqag,
    /// A bi-encoder vector cache for batch scoring (experiments; see `Prepared::new`).
    pub vector_cache: Option<PathBuf>,
}

impl EqagRanker {
    /// `base` is the ranker `config.base` names and `resolve` builds the rankers of
    /// `config.node_features` (the CLI resolves both with its model resolver).
    pub fn load(
        dir: &Path,
        card: &ModelCard,
        base: Box<dyn Ranker>,
        resolve: impl FnMut(&str) -> Result<Box<dyn Ranker>>,
    ) -> Result<EqagRanker> {
        let model = Eqag::load(dir, card)?;
        let mut extras = Extras::new(&model.config.node_features, resolve)?;
        for kind in NodeVec::ALL {
            let pca = model
                .pcas
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, p)| p.clone());
            extras.set_pca(kind, pca)?;
        }
        if let Some(pca) = extras.pca(NodeVec::Cls) {
            let encoder = ClsEncoder::for_base(&Self::base_spec(dir, card)?)?;
            if encoder.dim != pca.input {
                return Err(ModelError::Format {
                    path: dir.join(NodeVec::Cls.file()),
                    message: format!(
                        "a PCA of {}-d [CLS] states, but the base cross-encoder's are {}-d",
                        pca.input, encoder.dim
                    ),
                });
            }
            extras.set_cls_encoder(encoder);
        }
        let encoder = QuestionEncoder::load(&dir.join(&model.config.qq_encoder))?;
        if encoder.dim != model.search.dim {
            return Err(ModelError::Format {
                path: dir.join(VECTORS_FILE),
                message: format!(
                    "vectors have {} dimensions, the bi-encoder {}",
                    model.search.dim, encoder.dim
                ),
            });
        }
        Ok(EqagRanker {
            name: card.name.clone(),
            base,
            encoder,
            extras,
            model,
            vector_cache: None,
        })
    }

    /// Where the base ranker of a card lives: a directory relative to `dir`, or a built-in name.
    pub fn base_spec(dir: &Path, card: &ModelCard) -> Result<String> {
        let config: EqagConfig = ansel_model::json::from_value(card.config.clone(), "config")
            .map_err(|message| ModelError::Format {
                path: dir.join(ansel_model::CARD_FILE),
                message,
            })?;
        Ok(if config.base_is_dir {
            dir.join(&config.base).display().to_string()
        } else {
            config.base
        })
    }

    /// Caches the `cls-vec` `[CLS]` states of batch scoring in this record file (experiments).
    pub fn set_cls_cache(&mut self, path: Option<PathBuf>) {
        if let Some(encoder) = self.extras.cls_encoder_mut() {
            encoder.cache = path;
        }
    }

    /// Scores one question and says how long each stage took.
    pub fn score_timed(&self, question: &Question) -> Result<(Vec<f32>, Timings)> {
        let t0 = Instant::now();
        let scores = self.base.score(question)?;
        let t1 = Instant::now();
        let qvec = self.encoder.encode(&[question.text.as_str()])?;
        let answers = if self.model.needs_answers() || self.extras.needs_answers() {
            let texts: Vec<&str> = question
                .candidates
                .iter()
                .map(|c| c.text.as_str())
                .collect();
            Some(self.encoder.encode(&texts)?)
        } else {
            None
        };
        let t2 = Instant::now();
        // The base cross-encoder's [CLS] states (`cls-vec`): a second forward pass over the
        // pairs here, timed on its own (no cache unless one was set).
        let cls = match self.extras.cls_encoder() {
            Some(encoder) if self.extras.needs_cls() => {
                Some(encoder.encode(std::slice::from_ref(question))?)
            }
            _ => None,
        };
        let t_cls = Instant::now();
        let f = node_features(
            question,
            &scores,
            self.model.config.feature,
            self.model.config.random_init,
        );
        let extra = self.extras.of_question(
            question,
            &scores,
            &qvec,
            answers.as_deref(),
            cls.as_deref(),
        )?;
        let nb = self
            .model
            .search
            .top_k(&qvec, self.model.config.graph.k_rows, None);
        let t_search = t_cls.elapsed();
        let edges = graph::row_edges(
            &f,
            answers.as_deref(),
            &nb,
            &self.model.train_rows(),
            &self.model.config.graph,
        );
        let out = self.model.gcn.forward_row(
            &self.model.graph,
            &self.model.degrees,
            &self.model.x,
            &features::interleave(&f, &extra),
            &edges,
        );
        let t3 = Instant::now();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        Ok((
            out,
            Timings {
                base_ms: ms(t1 - t0),
                encode_ms: ms(t2 - t1),
                cls_ms: ms(t_cls - t2),
                graph_ms: ms(t3 - t_cls),
                search_ms: ms(t_search),
            },
        ))
    }
}

impl Ranker for EqagRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_timed(question)?.0)
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        let prepared = Prepared::new(
            questions.to_vec(),
            self.base.as_ref(),
            &self.encoder,
            self.model.needs_answers(),
            self.vector_cache.as_deref(),
            &self.extras,
        )?;
        Ok(score_prepared(&self.model, &prepared))
    }
}

/// `target` as a path relative to directory `from` (both made absolute first), for the
/// card's references to the base model and the bi-encoder.
pub fn relative_path(target: &Path, from: &Path) -> PathBuf {
    // Lexical, not canonical: a symlinked `vendor` must stay `vendor` in the path.
    let abs = |p: &Path| {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|c| c.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        };
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    out.pop();
                }
                c => out.push(c),
            }
        }
        out
    };
    let (t, f) = (abs(target), abs(from));
    let tc: Vec<_> = t.components().collect();
    let fc: Vec<_> = f.components().collect();
    let common = tc.iter().zip(&fc).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..fc.len() {
        out.push("..");
    }
    for c in &tc[common..] {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
