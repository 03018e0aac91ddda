//! EQAG graph construction (section 3.2 of the paper): nodes are (q, a) pairs whose
//! feature is the base scorer's score; intra-row edges join a question's best candidates,
//! inter-row edges join them to answers of the most similar training questions.
//!
//! Every function that builds edges for a question row takes only that row's *features*,
//! never its labels: labels enter only through the stored training rows (T+ / T+-
//! select training answers by label), so nothing of an unseen question's labels can reach
//! its graph.

use serde::{Deserialize, Serialize};

/// Which training answers inter-row edges may reach (section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    /// Train All: positive and negative training answers alike, to the row's top nodes.
    #[serde(rename = "ta")]
    Ta,
    /// Train positives: only positively labelled training answers, to the row's top nodes.
    #[serde(rename = "t+")]
    TPlus,
    /// Positives and negatives separately: positives join the row's top nodes,
    /// negatives join its bottom nodes (those below `th_intra`).
    #[serde(rename = "t+-")]
    TPlusMinus,
}

impl Variant {
    pub const NAMES: [&'static str; 3] = ["ta", "t+", "t+-"];

    pub fn parse(name: &str) -> Option<Variant> {
        match name {
            "ta" => Some(Variant::Ta),
            "t+" => Some(Variant::TPlus),
            "t+-" | "tpm" | "t-+" => Some(Variant::TPlusMinus),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Variant::Ta => "ta",
            Variant::TPlus => "t+",
            Variant::TPlusMinus => "t+-",
        }
    }
}

/// How base scores become node features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// The logistic function of the score (cross-encoder logits become probabilities).
    Sigmoid,
    /// Min-max over the question's candidates (for scorers with no fixed range).
    MinMax,
    /// The score as it is.
    Raw,
}

impl Feature {
    pub fn parse(name: &str) -> Option<Feature> {
        match name {
            "sigmoid" => Some(Feature::Sigmoid),
            "minmax" => Some(Feature::MinMax),
            "raw" => Some(Feature::Raw),
            _ => None,
        }
    }

    /// Node features of one question's candidates from their base scores.
    pub fn apply(self, scores: &[f32]) -> Vec<f32> {
        match self {
            Feature::Sigmoid => scores.iter().map(|&s| 1.0 / (1.0 + (-s).exp())).collect(),
            Feature::Raw => scores.to_vec(),
            Feature::MinMax => {
                let lo = scores.iter().cloned().fold(f32::INFINITY, f32::min);
                let hi = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
                    return vec![0.5; scores.len()];
                }
                scores.iter().map(|&s| (s - lo) / (hi - lo)).collect()
            }
        }
    }
}

/// How a row's nodes choose the training answers they join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InterBy {
    /// The paper: the K_inter best-scored eligible answers of the similar questions, joined
    /// to every top node of the row (weight: question-question cosine).
    #[default]
    Row,
    /// Extension: each top (bottom, for T+- negatives) node joins the K_inter eligible
    /// answers most similar to its own answer (bi-encoder cosine, also the weight), so
    /// that candidates differ in their neighbourhoods.
    Answer,
}

impl InterBy {
    pub fn parse(name: &str) -> Option<InterBy> {
        match name {
            "row" => Some(InterBy::Row),
            "answer" => Some(InterBy::Answer),
            _ => None,
        }
    }
}

/// The graph hyper-parameters (names as in the paper).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GraphParams {
    pub variant: Variant,
    /// A question's best candidates joined to each other (a clique) and to training answers.
    pub k_intra: usize,
    /// ... when their feature is at least this.
    pub th_intra: f32,
    /// Most similar training questions searched for inter-row answers.
    pub k_rows: usize,
    /// Training answers joined to a row (per sign for T+-).
    pub k_inter: usize,
    /// ... when their stored feature is at least this (positives and TA answers).
    pub th_inter: f32,
    #[serde(default)]
    pub inter_by: InterBy,
    /// Extension (not the paper): inter-row edges carry messages from training answers to a
    /// row's nodes only; the training answers receive nothing back. Undirected (the paper's
    /// way), a T+ training graph gives labels away: a stored positive receives edges from the
    /// top nodes of every training row that reaches it, a negative from none.
    #[serde(default)]
    pub directed_inter: bool,
}

impl Default for GraphParams {
    /// The paper's WikiQA optimum (K_intra 5, K_inter 10, th_intra 0.7, th_inter 0.9), T+.
    fn default() -> Self {
        GraphParams {
            variant: Variant::TPlus,
            k_intra: 5,
            th_intra: 0.7,
            k_rows: 5,
            k_inter: 10,
            th_inter: 0.9,
            inter_by: InterBy::Row,
            directed_inter: false,
        }
    }
}

/// A stored training row: its nodes are `start..start + len` of the training graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub start: usize,
    pub len: usize,
}

/// What the graph needs of the stored training rows.
pub struct TrainingRows<'a> {
    pub rows: &'a [Row],
    pub features: &'a [f32],
    pub labels: &'a [bool],
    /// Unit answer vectors of the training nodes (`nodes x dim`), for [`InterBy::Answer`].
    pub answers: Option<&'a [f32]>,
}

/// The edges one question row adds: intra-row edges between its own nodes (local indices)
/// and inter-row edges from its nodes to training nodes (global training indices).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RowEdges {
    pub intra: Vec<(usize, usize, f32)>,
    pub inter: Vec<(usize, usize, f32)>,
    /// Inter-row edges carry messages to the row only ([`GraphParams::directed_inter`]).
    pub directed_inter: bool,
}

/// Indices of `features` sorted best first (ties by position, so the order is deterministic).
fn order_best_first(features: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..features.len()).collect();
    order.sort_by(|&a, &b| ansel_model::best_first(features[a], features[b]).then(a.cmp(&b)));
    order
}

/// Builds the edges of one question row from its node features and its most similar
/// training rows (`neighbours`: training row index and question-question similarity, most
/// similar first). Labels of the row itself are not an input.
pub fn row_edges(
    features: &[f32],
    answer_vectors: Option<&[f32]>,
    neighbours: &[(usize, f32)],
    train: &TrainingRows,
    params: &GraphParams,
) -> RowEdges {
    let mut edges = RowEdges {
        directed_inter: params.directed_inter,
        ..RowEdges::default()
    };
    let order = order_best_first(features);
    let top: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| features[i] >= params.th_intra)
        .take(params.k_intra)
        .collect();
    for (a, &i) in top.iter().enumerate() {
        for &j in &top[a + 1..] {
            edges.intra.push((i, j, 1.0));
        }
    }
    // Bottom nodes (T+- negatives): the lowest K_intra nodes below th_intra, not in `top`.
    let bottom: Vec<usize> = order
        .iter()
        .rev()
        .copied()
        .filter(|&i| features[i] < params.th_intra && !top.contains(&i))
        .take(params.k_intra)
        .collect();
    // Candidate training answers: (node, weight = QQ similarity, feature).
    let mut pos = Vec::new();
    let mut neg = Vec::new();
    for &(row, sim) in neighbours.iter().take(params.k_rows) {
        let r = train.rows[row];
        let w = sim.max(0.0);
        if w <= 0.0 {
            continue;
        }
        for node in r.start..r.start + r.len {
            let f = train.features[node];
            let positive = train.labels[node];
            match params.variant {
                Variant::Ta => {
                    if f >= params.th_inter {
                        pos.push((node, w, f));
                    }
                }
                Variant::TPlus => {
                    if positive && f >= params.th_inter {
                        pos.push((node, w, f));
                    }
                }
                Variant::TPlusMinus => {
                    if positive {
                        if f >= params.th_inter {
                            pos.push((node, w, f));
                        }
                    } else {
                        neg.push((node, w, f));
                    }
                }
            }
        }
    }
    // Highest stored feature first (hard negatives for T+-), then most similar row.
    let by_feature = |a: &(usize, f32, f32), b: &(usize, f32, f32)| {
        ansel_model::best_first(a.2, b.2)
            .then(ansel_model::best_first(a.1, b.1))
            .then(a.0.cmp(&b.0))
    };
    if let (InterBy::Answer, Some(mine), Some(theirs)) =
        (params.inter_by, answer_vectors, train.answers)
    {
        let dim = mine.len() / features.len().max(1);
        let join = |nodes: &[usize], pool: &[(usize, f32, f32)], edges: &mut RowEdges| {
            for &i in nodes {
                let v = &mine[i * dim..(i + 1) * dim];
                let mut sims: Vec<(usize, f32)> = pool
                    .iter()
                    .map(|&(node, _, _)| {
                        let t = &theirs[node * dim..(node + 1) * dim];
                        (node, v.iter().zip(t).map(|(a, b)| a * b).sum::<f32>())
                    })
                    .filter(|&(_, c)| c > 0.0)
                    .collect();
                sims.sort_by(|a, b| ansel_model::best_first(a.1, b.1).then(a.0.cmp(&b.0)));
                for &(node, c) in sims.iter().take(params.k_inter) {
                    edges.inter.push((i, node, c));
                }
            }
        };
        join(&top, &pos, &mut edges);
        if params.variant == Variant::TPlusMinus {
            join(&bottom, &neg, &mut edges);
        }
        return edges;
    }
    pos.sort_by(by_feature);
    neg.sort_by(by_feature);
    for &(node, w, _) in pos.iter().take(params.k_inter) {
        for &i in &top {
            edges.inter.push((i, node, w));
        }
    }
    if params.variant == Variant::TPlusMinus {
        for &(node, w, _) in neg.iter().take(params.k_inter) {
            for &i in &bottom {
                edges.inter.push((i, node, w));
            }
        }
    }
    edges
}

/// An undirected weighted graph in adjacency-list form (no self loops stored).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    pub adj: Vec<Vec<(usize, f32)>>,
}

impl Graph {
    pub fn new(nodes: usize) -> Graph {
        Graph {
            adj: vec![Vec::new(); nodes],
        }
    }

    pub fn nodes(&self) -> usize {
        self.adj.len()
    }

    /// Adds the undirected edge a-b (weights of repeated edges add up).
    pub fn add(&mut self, a: usize, b: usize, w: f32) {
        if a == b || w == 0.0 {
            return;
        }
        for (x, y) in [(a, b), (b, a)] {
            if let Some(e) = self.adj[x].iter_mut().find(|(n, _)| *n == y) {
                e.1 += w;
            } else {
                self.adj[x].push((y, w));
            }
        }
    }

    /// Adds the directed edge from -> to: `to` aggregates `from`, not the other way round.
    pub fn add_to(&mut self, to: usize, from: usize, w: f32) {
        if to == from || w == 0.0 {
            return;
        }
        if let Some(e) = self.adj[to].iter_mut().find(|(n, _)| *n == from) {
            e.1 += w;
        } else {
            self.adj[to].push((from, w));
        }
    }

    /// Adds an inter-row edge between a row's node and a training node (the training node
    /// only sends when `directed`).
    pub fn add_inter(&mut self, row_node: usize, training_node: usize, w: f32, directed: bool) {
        if directed {
            self.add_to(row_node, training_node, w);
        } else {
            self.add(row_node, training_node, w);
        }
    }

    /// Degree with the self loop, m_i = 1 + sum of (incoming) edge weights (eq. 2).
    pub fn degrees(&self) -> Vec<f32> {
        self.adj
            .iter()
            .map(|n| 1.0 + n.iter().map(|&(_, w)| w).sum::<f32>())
            .collect()
    }

    /// Edges, an undirected one counted once.
    pub fn edges(&self) -> usize {
        let mut n = 0;
        for (i, list) in self.adj.iter().enumerate() {
            for &(j, _) in list {
                if j > i || !self.adj[j].iter().any(|&(k, _)| k == i) {
                    n += 1;
                }
            }
        }
        n
    }
}

/// Builds the training graph: each training row's edges, with its neighbours among the
/// *other* training rows.
pub fn training_graph(
    train: &TrainingRows,
    neighbours: &[Vec<(usize, f32)>],
    params: &GraphParams,
) -> Graph {
    let mut g = Graph::new(train.features.len());
    for (r, row) in train.rows.iter().enumerate() {
        let feats = &train.features[row.start..row.start + row.len];
        let answers = train.answers.map(|a| {
            let dim = a.len() / train.features.len().max(1);
            &a[row.start * dim..(row.start + row.len) * dim]
        });
        let e = row_edges(feats, answers, &neighbours[r], train, params);
        for (a, b, w) in e.intra {
            g.add(row.start + a, row.start + b, w);
        }
        for (a, node, w) in e.inter {
            g.add_inter(row.start + a, node, w, params.directed_inter);
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stored training rows of 3 nodes each.
    struct Stored {
        rows: Vec<Row>,
        features: Vec<f32>,
        labels: Vec<bool>,
    }

    impl Stored {
        fn train(&self) -> TrainingRows<'_> {
            TrainingRows {
                rows: &self.rows,
                features: &self.features,
                labels: &self.labels,
                answers: None,
            }
        }
    }

    fn rows() -> Stored {
        Stored {
            rows: vec![Row { start: 0, len: 3 }, Row { start: 3, len: 3 }],
            features: vec![0.95, 0.2, 0.5, 0.97, 0.92, 0.1],
            labels: vec![true, false, false, true, false, false],
        }
    }

    #[test]
    fn intra_edges_join_the_top_candidates_above_the_threshold() {
        let stored = rows();
        let train = stored.train();
        let params = GraphParams {
            k_intra: 2,
            th_intra: 0.3,
            ..GraphParams::default()
        };
        let e = row_edges(&[0.4, 0.9, 0.1, 0.35], None, &[], &train, &params);
        assert_eq!(e.intra, vec![(1, 0, 1.0)]);
        assert!(e.inter.is_empty());
    }

    #[test]
    fn variants_pick_training_answers_by_label() {
        let stored = rows();
        let train = stored.train();
        let base = GraphParams {
            k_intra: 1,
            th_intra: 0.5,
            k_rows: 2,
            k_inter: 10,
            th_inter: 0.9,
            variant: Variant::Ta,
            inter_by: InterBy::Row,
            directed_inter: false,
        };
        let feats = [0.8, 0.1];
        let nb = [(1, 0.5), (0, 0.25)];
        let ta = row_edges(&feats, None, &nb, &train, &base);
        // TA: every training answer with feature >= 0.9, best feature first.
        assert_eq!(ta.inter, vec![(0, 3, 0.5), (0, 0, 0.25), (0, 4, 0.5)]);
        let tp = row_edges(
            &feats,
            None,
            &nb,
            &train,
            &GraphParams {
                variant: Variant::TPlus,
                ..base
            },
        );
        assert_eq!(tp.inter, vec![(0, 3, 0.5), (0, 0, 0.25)]);
        let tpm = row_edges(
            &feats,
            None,
            &nb,
            &train,
            &GraphParams {
                variant: Variant::TPlusMinus,
                k_inter: 1,
                ..base
            },
        );
        // Best positive to the top node, hardest negative to the bottom node.
        assert_eq!(tpm.inter, vec![(0, 3, 0.5), (1, 4, 0.5)]);
    }

    #[test]
    fn graph_adds_undirected_edges_and_degrees() {
        let mut g = Graph::new(3);
        g.add(0, 1, 0.5);
        g.add(1, 0, 0.5);
        g.add(2, 2, 1.0);
        assert_eq!(g.edges(), 1);
        assert_eq!(g.degrees(), vec![2.0, 2.0, 1.0]);
    }
}
