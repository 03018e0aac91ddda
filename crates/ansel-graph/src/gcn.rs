//! The two-layer GCN of eq. 2 over `inputs` node features (one, the base score, in the paper;
//! more with `--node-features`), in plain Rust for inference
//! (full graph and online, one new question row at a time) and in libtorch for training.
//!
//! Layer l computes, for node i,
//! `z_i = sum_{j in N(i) + {i}} e_ji / sqrt(m_j m_i) h_j` (self loop weight 1,
//! `m_i = 1 + sum_j e_ji`), then `h'_i = act(W_l z_i + b_l [+ R_l h_i])`. The optional
//! root weight `R_l` (off in eq. 2) lets a node keep its own feature apart from the
//! average: in a clique every member has the same `z`, so without it the GCN cannot tell
//! a question's top candidates apart. Layer 1 maps the features to `hidden` units with ReLU,
//! layer 2 maps them to one logit (the score; BCE with logits in training).

use crate::graph::{Graph, RowEdges};
use ansel_torch::tch::{self, nn, nn::OptimizerConfig, Kind, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Trained GCN weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gcn {
    /// Features per node (1 in models written before `--node-features`).
    #[serde(default = "one")]
    pub inputs: usize,
    pub hidden: usize,
    pub root: bool,
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    pub r1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: f32,
    pub r2: Vec<f32>,
}

fn one() -> usize {
    1
}

impl Gcn {
    /// Layer 1 of one node: `z` its aggregated features, `x` its own (`inputs` each);
    /// weights are `[inputs, hidden]`, row-major.
    fn hidden_of(&self, z: &[f32], x: &[f32], out: &mut [f32]) {
        let hd = self.hidden;
        for (k, o) in out.iter_mut().enumerate().take(hd) {
            let mut v = self.b1[k];
            for c in 0..self.inputs {
                v += z[c] * self.w1[c * hd + k];
                if self.root {
                    v += x[c] * self.r1[c * hd + k];
                }
            }
            *o = v.max(0.0);
        }
    }

    fn output_of(&self, agg: &[f32], h: &[f32]) -> f32 {
        let mut y = self.b2;
        for k in 0..self.hidden {
            y += agg[k] * self.w2[k];
            if self.root {
                y += h[k] * self.r2[k];
            }
        }
        y
    }

    /// Logits of every node of `graph` with features `x` (`inputs` per node, node-major).
    pub fn forward_full(&self, graph: &Graph, x: &[f32]) -> Vec<f32> {
        let deg = graph.degrees();
        let n = graph.nodes();
        let hd = self.hidden;
        let d = self.inputs;
        let mut h1 = vec![0f32; n * hd];
        let mut z = vec![0f32; d];
        for i in 0..n {
            for c in 0..d {
                z[c] = x[i * d + c] / deg[i];
            }
            for &(j, w) in &graph.adj[i] {
                let e = w / (deg[i] * deg[j]).sqrt();
                for c in 0..d {
                    z[c] += e * x[j * d + c];
                }
            }
            self.hidden_of(&z, &x[i * d..(i + 1) * d], &mut h1[i * hd..(i + 1) * hd]);
        }
        let mut out = vec![0f32; n];
        let mut agg = vec![0f32; hd];
        for i in 0..n {
            for k in 0..hd {
                agg[k] = h1[i * hd + k] / deg[i];
            }
            for &(j, w) in &graph.adj[i] {
                let c = w / (deg[i] * deg[j]).sqrt();
                for k in 0..hd {
                    agg[k] += c * h1[j * hd + k];
                }
            }
            out[i] = self.output_of(&agg, &h1[i * hd..(i + 1) * hd]);
        }
        out
    }

    /// Logits of one new question row's nodes once its edges join the stored training
    /// graph (`graph`, `degrees` = `graph.degrees()`, training features `x`): exactly what
    /// [`Gcn::forward_full`] gives those nodes on the training graph with the row added,
    /// computed on the row's two-hop neighbourhood only.
    pub fn forward_row(
        &self,
        graph: &Graph,
        degrees: &[f32],
        x: &[f32],
        row_x: &[f32],
        edges: &RowEdges,
    ) -> Vec<f32> {
        let d = self.inputs;
        let n = row_x.len() / d.max(1);
        let hd = self.hidden;
        let mut local: Vec<Vec<(usize, f32)>> = vec![Vec::new(); n];
        let mut m_local = vec![1f32; n];
        for &(a, b, w) in &edges.intra {
            local[a].push((b, w));
            local[b].push((a, w));
            m_local[a] += w;
            m_local[b] += w;
        }
        // Training nodes the row reaches: the row's nodes joined to each, and added degree.
        let mut reached: HashMap<usize, Vec<(usize, f32)>> = HashMap::new();
        let mut to_train: Vec<Vec<(usize, f32)>> = vec![Vec::new(); n];
        for &(a, node, w) in &edges.inter {
            // A directed inter-row edge: the training node sends to the row, gets nothing back.
            let back = reached.entry(node).or_default();
            if !edges.directed_inter {
                back.push((a, w));
            }
            to_train[a].push((node, w));
            m_local[a] += w;
        }
        let extra: HashMap<usize, f32> = reached
            .iter()
            .map(|(&k, v)| (k, v.iter().map(|&(_, w)| w).sum()))
            .collect();
        let m_train = |k: usize| degrees[k] + extra.get(&k).copied().unwrap_or(0.0);
        // Layer 1 on the row's nodes.
        let mut h_local = vec![0f32; n * hd];
        let mut z = vec![0f32; d];
        let add = |z: &mut [f32], e: f32, v: &[f32]| {
            for (zc, vc) in z.iter_mut().zip(v) {
                *zc += e * vc;
            }
        };
        for i in 0..n {
            let mi = m_local[i];
            z.fill(0.0);
            add(&mut z, 1.0 / mi, &row_x[i * d..(i + 1) * d]);
            for &(j, w) in &local[i] {
                add(
                    &mut z,
                    w / (mi * m_local[j]).sqrt(),
                    &row_x[j * d..(j + 1) * d],
                );
            }
            for &(k, w) in &to_train[i] {
                add(&mut z, w / (mi * m_train(k)).sqrt(), &x[k * d..(k + 1) * d]);
            }
            self.hidden_of(
                &z,
                &row_x[i * d..(i + 1) * d],
                &mut h_local[i * hd..(i + 1) * hd],
            );
        }
        // Layer 1 on the training nodes the row reaches.
        let mut h_train: HashMap<usize, Vec<f32>> = HashMap::new();
        for (&k, from_row) in &reached {
            let mk = m_train(k);
            z.fill(0.0);
            add(&mut z, 1.0 / mk, &x[k * d..(k + 1) * d]);
            for &(j, w) in &graph.adj[k] {
                add(&mut z, w / (mk * m_train(j)).sqrt(), &x[j * d..(j + 1) * d]);
            }
            for &(i, w) in from_row {
                add(
                    &mut z,
                    w / (mk * m_local[i]).sqrt(),
                    &row_x[i * d..(i + 1) * d],
                );
            }
            let mut h = vec![0f32; hd];
            self.hidden_of(&z, &x[k * d..(k + 1) * d], &mut h);
            h_train.insert(k, h);
        }
        // Layer 2 on the row's nodes.
        let mut out = vec![0f32; n];
        let mut agg = vec![0f32; hd];
        for i in 0..n {
            let mi = m_local[i];
            for k in 0..hd {
                agg[k] = h_local[i * hd + k] / mi;
            }
            for &(j, w) in &local[i] {
                let c = w / (mi * m_local[j]).sqrt();
                for k in 0..hd {
                    agg[k] += c * h_local[j * hd + k];
                }
            }
            for &(t, w) in &to_train[i] {
                let c = w / (mi * m_train(t)).sqrt();
                let h = &h_train[&t];
                for k in 0..hd {
                    agg[k] += c * h[k];
                }
            }
            out[i] = self.output_of(&agg, &h_local[i * hd..(i + 1) * hd]);
        }
        out
    }
}

/// The training graph as libtorch tensors: directed edges (both directions) plus self
/// loops, each with its eq. 2 normalisation.
pub struct TorchGraph {
    src: Tensor,
    dst: Tensor,
    norm: Tensor,
    n: i64,
}

impl TorchGraph {
    pub fn new(graph: &Graph) -> TorchGraph {
        let deg = graph.degrees();
        let (mut src, mut dst, mut norm) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..graph.nodes() {
            src.push(i as i64);
            dst.push(i as i64);
            norm.push(1.0 / deg[i]);
            for &(j, w) in &graph.adj[i] {
                src.push(j as i64);
                dst.push(i as i64);
                norm.push(w / (deg[i] * deg[j]).sqrt());
            }
        }
        TorchGraph {
            src: Tensor::from_slice(&src),
            dst: Tensor::from_slice(&dst),
            norm: Tensor::from_slice(&norm),
            n: graph.nodes() as i64,
        }
    }

    fn aggregate(&self, h: &Tensor) -> Tensor {
        let cols = h.size()[1];
        let msg = h.index_select(0, &self.src) * self.norm.unsqueeze(1);
        Tensor::zeros([self.n, cols], (Kind::Float, tch::Device::Cpu)).index_add(0, &self.dst, &msg)
    }
}

/// The GCN's parameters as libtorch variables, for training.
pub struct TorchGcn {
    pub vs: nn::VarStore,
    w1: Tensor,
    b1: Tensor,
    r1: Tensor,
    w2: Tensor,
    b2: Tensor,
    r2: Tensor,
    inputs: usize,
    hidden: usize,
    root: bool,
}

impl TorchGcn {
    /// Fresh weights (seed libtorch first for reproducibility). With one input the
    /// initialisation is the paper variants' (non-negative first layer); with more, the
    /// first layer starts in [-1, 1] (extra features are standardised, either sign).
    pub fn new(inputs: usize, hidden: usize, root: bool) -> TorchGcn {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let p = vs.root();
        let h = hidden as i64;
        let d = inputs as i64;
        let init = if inputs == 1 {
            nn::Init::Uniform { lo: 0.0, up: 1.0 }
        } else {
            nn::Init::Uniform { lo: -1.0, up: 1.0 }
        };
        let w1 = p.var("w1", &[d, h], init);
        let b1 = p.var("b1", &[h], nn::Init::Const(0.0));
        let r1 = p.var("r1", &[d, h], init);
        let w2 = p.var("w2", &[h, 1], nn::Init::Uniform { lo: -1.0, up: 1.0 });
        let b2 = p.var("b2", &[1], nn::Init::Const(0.0));
        let r2 = p.var("r2", &[h, 1], nn::Init::Uniform { lo: -1.0, up: 1.0 });
        TorchGcn {
            vs,
            w1,
            b1,
            r1,
            w2,
            b2,
            r2,
            inputs,
            hidden,
            root,
        }
    }

    /// Logits `[n]` of every node; `x` is `[n, inputs]`.
    pub fn forward(&self, g: &TorchGraph, x: &Tensor) -> Tensor {
        let mut h1 = g.aggregate(x).matmul(&self.w1) + &self.b1;
        if self.root {
            h1 += x.matmul(&self.r1);
        }
        let h1 = h1.relu();
        let mut y = g.aggregate(&h1).matmul(&self.w2) + &self.b2;
        if self.root {
            y += h1.matmul(&self.r2);
        }
        y.squeeze_dim(1)
    }

    /// The weights as a plain [`Gcn`].
    pub fn export(&self) -> Gcn {
        let v = |t: &Tensor| Vec::<f32>::try_from(t.detach().flatten(0, -1)).unwrap_or_default();
        Gcn {
            inputs: self.inputs,
            hidden: self.hidden,
            root: self.root,
            w1: v(&self.w1),
            b1: v(&self.b1),
            r1: v(&self.r1),
            w2: v(&self.w2),
            b2: v(&self.b2).first().copied().unwrap_or(0.0),
            r2: v(&self.r2),
        }
    }
}

/// Full-batch training on the training graph (`features`: `inputs` per node, node-major):
/// BCE with logits over all (training) nodes, Adam. `after_epoch(epoch, loss, weights)` runs every `eval_every` epochs and at the end;
/// training stops when it returns false.
#[allow(clippy::too_many_arguments)]
pub fn train(
    graph: &Graph,
    features: &[f32],
    inputs: usize,
    labels: &[bool],
    loss_nodes: Option<&[bool]>,
    hidden: usize,
    root: bool,
    lr: f64,
    epochs: usize,
    eval_every: usize,
    mut after_epoch: impl FnMut(usize, f64, &Gcn) -> bool,
) -> ansel_model::Result<()> {
    let g = TorchGraph::new(graph);
    let model = TorchGcn::new(inputs, hidden, root);
    let mut opt = nn::Adam::default()
        .build(&model.vs, lr)
        .map_err(ansel_torch::backend)?;
    let x = Tensor::from_slice(features).view([labels.len() as i64, inputs.max(1) as i64]);
    let y: Vec<f32> = labels.iter().map(|&l| if l { 1.0 } else { 0.0 }).collect();
    let y = Tensor::from_slice(&y);
    // Nodes the loss is over (all when `loss_nodes` is None).
    let w: Vec<f32> = match loss_nodes {
        Some(m) => m.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect(),
        None => vec![1.0; labels.len()],
    };
    let count = w.iter().sum::<f32>().max(1.0) as f64;
    let w = Tensor::from_slice(&w);
    for epoch in 1..=epochs {
        let logits = model.forward(&g, &x);
        let loss = logits.binary_cross_entropy_with_logits::<&Tensor>(
            &y,
            Some(&w),
            None,
            tch::Reduction::Sum,
        ) / count;
        opt.zero_grad();
        loss.backward();
        opt.step();
        if epoch % eval_every.max(1) == 0 || epoch == epochs {
            let l = loss.double_value(&[]);
            if !after_epoch(epoch, l, &model.export()) {
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;

    fn gcn(root: bool) -> Gcn {
        Gcn {
            inputs: 1,
            hidden: 2,
            root,
            w1: vec![1.5, -0.5],
            b1: vec![0.1, 0.3],
            r1: vec![0.7, 2.0],
            w2: vec![1.0, -2.0],
            b2: 0.2,
            r2: vec![0.5, 0.25],
        }
    }

    fn small_graph() -> (Graph, Vec<f32>) {
        let mut g = Graph::new(5);
        g.add(0, 1, 1.0);
        g.add(1, 2, 0.5);
        g.add(3, 4, 0.8);
        g.add(2, 4, 0.3);
        (g, vec![0.9, 0.1, 0.6, 0.3, 0.7])
    }

    #[test]
    fn online_row_matches_the_full_graph_with_the_row_added() {
        for (root, directed_inter) in [(false, false), (true, false), (false, true), (true, true)] {
            let (g, x) = small_graph();
            let row_x = vec![0.8, 0.2, 0.5];
            let edges = RowEdges {
                intra: vec![(0, 2, 1.0)],
                inter: vec![(0, 1, 0.6), (2, 1, 0.6), (0, 4, 0.9), (1, 3, 0.4)],
                directed_inter,
            };
            let mut full = g.clone();
            full.adj.extend(vec![Vec::new(); 3]);
            for &(a, b, w) in &edges.intra {
                full.add(5 + a, 5 + b, w);
            }
            for &(a, t, w) in &edges.inter {
                full.add_inter(5 + a, t, w, directed_inter);
            }
            // Directed: the training nodes' own scores do not move when the row joins.
            if directed_inter {
                let mut before = x.clone();
                before.extend(&row_x);
                let with_row = gcn(root).forward_full(&full, &before);
                let without = gcn(root).forward_full(&g, &x);
                for t in 0..5 {
                    assert!((with_row[t] - without[t]).abs() < 1e-6);
                }
            }
            let mut all_x = x.clone();
            all_x.extend(&row_x);
            let want = gcn(root).forward_full(&full, &all_x);
            let got = gcn(root).forward_row(&g, &g.degrees(), &x, &row_x, &edges);
            for i in 0..3 {
                assert!((want[5 + i] - got[i]).abs() < 1e-5, "{want:?} {got:?}");
            }
        }
    }

    #[test]
    fn torch_forward_matches_plain_forward() {
        let (g, x) = small_graph();
        tch::manual_seed(3);
        let t = TorchGcn::new(1, 4, true);
        let plain = t.export();
        let want = plain.forward_full(&g, &x);
        let got =
            tch::no_grad(|| t.forward(&TorchGraph::new(&g), &Tensor::from_slice(&x).unsqueeze(1)));
        let got = Vec::<f32>::try_from(&got).unwrap();
        for (a, b) in want.iter().zip(&got) {
            assert!((a - b).abs() < 1e-5, "{want:?} {got:?}");
        }
    }

    #[test]
    fn several_inputs_agree_across_torch_full_and_online_paths() {
        let (g, x1) = small_graph();
        // Three features per node: the scalar and two others.
        let x: Vec<f32> = x1
            .iter()
            .enumerate()
            .flat_map(|(i, &v)| [v, i as f32 - 2.0, (v * 3.0).sin()])
            .collect();
        tch::manual_seed(5);
        let t = TorchGcn::new(3, 4, true);
        let plain = t.export();
        assert_eq!((plain.inputs, plain.w1.len(), plain.r1.len()), (3, 12, 12));
        let want = plain.forward_full(&g, &x);
        let got =
            tch::no_grad(|| t.forward(&TorchGraph::new(&g), &Tensor::from_slice(&x).view([5, 3])));
        let got = Vec::<f32>::try_from(&got).unwrap();
        for (a, b) in want.iter().zip(&got) {
            assert!((a - b).abs() < 1e-5, "{want:?} {got:?}");
        }
        // A new row of two nodes joined to the graph: online == full graph with the row.
        let row_x = vec![0.4, 1.0, -1.0, 0.6, -0.5, 0.2];
        let edges = RowEdges {
            intra: vec![(0, 1, 1.0)],
            inter: vec![(0, 2, 0.7), (1, 4, 0.3)],
            directed_inter: false,
        };
        let mut full = g.clone();
        full.adj.extend(vec![Vec::new(); 2]);
        full.add(5, 6, 1.0);
        full.add(5, 2, 0.7);
        full.add(6, 4, 0.3);
        let mut all_x = x.clone();
        all_x.extend(&row_x);
        let want = plain.forward_full(&full, &all_x);
        let got = plain.forward_row(&g, &g.degrees(), &x, &row_x, &edges);
        assert_eq!(got.len(), 2);
        for i in 0..2 {
            assert!((want[5 + i] - got[i]).abs() < 1e-5, "{want:?} {got:?}");
        }
        // Weights written before `inputs` existed read back as one input.
        let mut old = serde_json::to_value(gcn(true)).unwrap();
        old.as_object_mut().unwrap().remove("inputs");
        let back: Gcn = serde_json::from_value(old).unwrap();
        assert_eq!(back, gcn(true));
    }

    #[test]
    fn training_lowers_the_loss_on_a_learnable_graph() {
        // Label = feature > 0.5; the GCN must learn to follow the feature.
        let mut g = Graph::new(40);
        for i in 0..39 {
            g.add(i, i + 1, 0.2);
        }
        let x: Vec<f32> = (0..40).map(|i| ((i * 7) % 40) as f32 / 40.0).collect();
        let y: Vec<bool> = x.iter().map(|&v| v > 0.5).collect();
        tch::manual_seed(1);
        let mut losses = Vec::new();
        train(&g, &x, 1, &y, None, 4, true, 0.05, 300, 50, |_, l, _| {
            losses.push(l);
            true
        })
        .unwrap();
        assert!(losses.last().unwrap() < &(losses[0] * 0.8), "{losses:?}");
    }
}
