//! The CASSIE head (§3.3-3.4): node inputs, answer-context dependency weights, GCN, score
//! and the mutual-information discriminator. Also the frozen-encoder LOCT baseline head.

use ansel_torch::tch::{nn, nn::Module, Kind, Tensor};
use serde::{Deserialize, Serialize};

/// What the head is made of; the ablations switch parts off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadConfig {
    /// Width of the encoder's vectors.
    pub dim: i64,
    /// Width of node representations.
    pub hidden: i64,
    pub gcn_layers: usize,
    /// Sentence vector from the OT relevant context (false: mean of all content words,
    /// and the independent-coupling cost instead of the transport cost).
    pub ot: bool,
    /// Answer-context dependencies (false: the candidate's node input goes straight to the
    /// score FFN).
    pub gcn: bool,
    /// Weight gamma of the mutual-information loss (0: off).
    pub mi_weight: f64,
    pub dropout: f64,
    /// Frozen-encoder LOCT baseline instead of CASSIE: an FFN over the concatenated features
    /// of [candidate; previous; next] (zeros where a neighbour is missing).
    #[serde(default)]
    pub loct: bool,
    /// Add the frozen cross-encoder's own logit for the candidate to the head's output, so
    /// that the head learns a correction of the base score (a frozen-encoder choice; the
    /// paper's encoder is fine-tuned with the head instead).
    #[serde(default)]
    pub residual: bool,
    /// Score FFN reads `[h_1^L; h_1^0]`: the candidate's GCN output and its own node input
    /// (a skip connection; the paper scores `h_1^L` alone).
    #[serde(default)]
    pub skip: bool,
}

impl HeadConfig {
    pub fn full(dim: i64) -> HeadConfig {
        HeadConfig {
            dim,
            hidden: 128,
            gcn_layers: 2,
            ot: true,
            gcn: true,
            mi_weight: 0.3,
            dropout: 0.1,
            loct: false,
            residual: false,
            skip: false,
        }
    }

    /// Whether the score FFN reads `[h_1^L; h_1^0]` (only GCN heads have a skip to make).
    pub fn uses_skip(&self) -> bool {
        self.skip && self.gcn && !self.loct
    }

    /// A short name for tables: "CASSIE", "CASSIE -OT", "LOCT head", ...
    pub fn label(&self) -> String {
        let base = match (self.residual, self.uses_skip()) {
            (false, false) => "",
            (true, false) => " + base logit",
            (false, true) => " + skip",
            (true, true) => " + skip + base logit",
        };
        if self.loct {
            return format!("LOCT (frozen-encoder head){base}");
        }
        let mut off = Vec::new();
        if !self.ot {
            off.push("OT");
        }
        if !self.gcn {
            off.push("GCN");
        }
        if self.mi_weight == 0.0 {
            off.push("MI");
        }
        if off.is_empty() {
            format!("CASSIE (full){base}")
        } else {
            format!("CASSIE without {}{base}", off.join(", "))
        }
    }
}

/// A batch of candidates with their three nodes (candidate, previous, next).
pub struct NodeBatch {
    /// Sentence vectors r_i `[B, 3, d]` (OT relevant context or plain mean).
    pub vec: Tensor,
    /// Mean of all content words `[B, 3, d]` (LOCT head input).
    pub mean: Tensor,
    /// Pooled `[CLS]` of each node's (question, sentence) pair `[B, 3, d]`.
    pub pooled: Tensor,
    /// Transport cost d_{q s_i} `[B, 3]`.
    pub cost: Tensor,
    /// 1 for a real sentence, 0 for a padding node `[B, 3]`.
    pub real: Tensor,
    /// The frozen cross-encoder's logit of each node's pair `[B, 3]`.
    pub logit: Tensor,
    /// Gold labels `[B, 3]` (0 where unknown) and 1 where known `[B, 3]`.
    pub labels: Tensor,
    pub known: Tensor,
}

/// The head's layers; parameter names are stable (they are the saved weights' names).
pub struct Head {
    pub config: HeadConfig,
    input: nn::Linear,
    roles: Tensor,
    pad: Tensor,
    dep1: nn::Linear,
    dep2: nn::Linear,
    gcn: Vec<nn::Linear>,
    out1: nn::Linear,
    out2: nn::Linear,
    mi1: nn::Linear,
    mi2: nn::Linear,
    /// Only in LOCT heads.
    loct: Option<(nn::Linear, nn::Linear)>,
}

impl Head {
    pub fn new(root: &nn::Path, config: HeadConfig) -> Head {
        let (d, h) = (config.dim, config.hidden);
        let lin = |name: &str, i: i64, o: i64| nn::linear(root / name, i, o, Default::default());
        let init = nn::Init::Randn {
            mean: 0.0,
            stdev: 0.02,
        };
        Head {
            input: lin("input", 2 * d, h),
            roles: root.var("roles", &[3, h], init),
            pad: root.var("pad", &[h], init),
            dep1: lin("dep1", h + 2, h),
            dep2: lin("dep2", h, 1),
            gcn: (0..config.gcn_layers)
                .map(|l| lin(&format!("gcn{l}"), h, h))
                .collect(),
            out1: lin("out1", if config.uses_skip() { 2 * h } else { h }, h),
            out2: lin("out2", h, 1),
            mi1: lin("mi1", 2 * h, h),
            mi2: lin("mi2", h, 1),
            loct: config
                .loct
                .then(|| (lin("loct1", 6 * d, h), lin("loct2", h, 1))),
            config,
        }
    }

    /// Node inputs h^0 `[B, 3, H]`: a projection of `[r_i; pooled_i]` plus the node's role
    /// embedding; padding nodes are one learned vector.
    fn nodes(&self, b: &NodeBatch, train: bool) -> Tensor {
        let x = self.input.forward(&Tensor::cat(&[&b.vec, &b.pooled], 2)) + self.roles.unsqueeze(0);
        let real = b.real.unsqueeze(2);
        (&x * &real + self.pad.view([1, 1, -1]) * (-&real + 1.0))
            .dropout(self.config.dropout, train)
    }

    /// Dependency weights alpha `[B, 3, 3]`: softmax over j of FFN([h_i * h_j; d_i; d_j]).
    pub fn edges(&self, x: &Tensor, cost: &Tensor) -> Tensor {
        let (bsz, k, h) = x.size3().expect("nodes are [B, 3, H]");
        let prod = x.unsqueeze(2) * x.unsqueeze(1);
        let c = (cost + 1.0).log();
        let ci = c.unsqueeze(2).expand([bsz, k, k], false);
        let cj = c.unsqueeze(1).expand([bsz, k, k], false);
        let feats = Tensor::cat(&[prod, ci.unsqueeze(3), cj.unsqueeze(3)], 3);
        let u = self
            .dep2
            .forward(&self.dep1.forward(&feats.view([bsz, k, k, h + 2])).relu())
            .squeeze_dim(3);
        u.softmax(2, Kind::Float)
    }

    /// Logits `[B]` and final node representations `[B, 3, H]`.
    pub fn forward(&self, b: &NodeBatch, train: bool) -> (Tensor, Tensor) {
        if let Some((loct1, loct2)) = &self.loct {
            let real = b.real.unsqueeze(2);
            let feats = Tensor::cat(&[&b.mean * &real, &b.pooled * &real], 2).flatten(1, 2);
            let h = loct1
                .forward(&feats)
                .relu()
                .dropout(self.config.dropout, train);
            let logit = loct2.forward(&h).squeeze_dim(1);
            return (self.plus_base(logit, b), h.unsqueeze(1));
        }
        let x = self.nodes(b, train);
        let h = if self.config.gcn {
            let alpha = self.edges(&x, &b.cost);
            let mut h = x.shallow_clone();
            for (l, layer) in self.gcn.iter().enumerate() {
                h = alpha.matmul(&layer.forward(&h)).relu();
                if l + 1 < self.gcn.len() {
                    h = h.dropout(self.config.dropout, train);
                }
            }
            h
        } else {
            x.shallow_clone()
        };
        let cand = if self.config.uses_skip() {
            Tensor::cat(&[h.select(1, 0), x.select(1, 0)], 1)
        } else {
            h.select(1, 0)
        };
        let logit = self
            .out2
            .forward(
                &self
                    .out1
                    .forward(&cand)
                    .relu()
                    .dropout(self.config.dropout, train),
            )
            .squeeze_dim(1);
        (self.plus_base(logit, b), h)
    }

    fn plus_base(&self, logit: Tensor, b: &NodeBatch) -> Tensor {
        if self.config.residual {
            logit + b.logit.select(1, 0)
        } else {
            logit
        }
    }

    /// L_MI (eq. 3) over ordered pairs (i, j), i != j, of real nodes with known labels where
    /// s_i is an answer: target 1 when s_j is an answer too, 0 when not. Mean over pairs.
    pub fn mi_loss(&self, h: &Tensor, b: &NodeBatch) -> Tensor {
        let k = h.size()[1];
        let usable = &b.real * &b.known;
        let mut logits = Vec::new();
        let mut targets = Vec::new();
        let mut weights = Vec::new();
        for i in 0..k {
            for j in 0..k {
                if i == j {
                    continue;
                }
                let pair = Tensor::cat(&[h.select(1, i), h.select(1, j)], 1);
                logits.push(
                    self.mi2
                        .forward(&self.mi1.forward(&pair).relu())
                        .squeeze_dim(1),
                );
                targets.push(b.labels.select(1, j));
                weights.push(usable.select(1, i) * usable.select(1, j) * b.labels.select(1, i));
            }
        }
        let logits = Tensor::stack(&logits, 1);
        let targets = Tensor::stack(&targets, 1);
        let weights = Tensor::stack(&weights, 1);
        let per = logits.binary_cross_entropy_with_logits::<Tensor>(
            &targets,
            None,
            None,
            ansel_torch::tch::Reduction::None,
        );
        (per * &weights).sum(Kind::Float) / weights.sum(Kind::Float).clamp_min(1.0)
    }

    /// L = L_AS2 + gamma L_MI for a training batch.
    pub fn loss(&self, b: &NodeBatch) -> Tensor {
        let (logit, h) = self.forward(b, true);
        let target = b.labels.select(1, 0);
        let as2 = logit.binary_cross_entropy_with_logits::<Tensor>(
            &target,
            None,
            None,
            ansel_torch::tch::Reduction::Mean,
        );
        if self.config.mi_weight > 0.0 && !self.config.loct {
            as2 + self.mi_loss(&h, b) * self.config.mi_weight
        } else {
            as2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_torch::tch::Device;

    fn batch(bsz: i64, d: i64) -> NodeBatch {
        let opts = (Kind::Float, Device::Cpu);
        NodeBatch {
            vec: Tensor::randn([bsz, 3, d], opts),
            mean: Tensor::randn([bsz, 3, d], opts),
            pooled: Tensor::randn([bsz, 3, d], opts),
            cost: Tensor::rand([bsz, 3], opts) * 5.0,
            real: Tensor::from_slice(&[1f32, 1.0, 0.0]).repeat([bsz, 1]),
            logit: Tensor::randn([bsz, 3], opts),
            labels: Tensor::from_slice(&[1f32, 1.0, 0.0]).repeat([bsz, 1]),
            known: Tensor::ones([bsz, 3], opts),
        }
    }

    #[test]
    fn edge_weights_are_a_distribution_over_neighbours() {
        let vs = nn::VarStore::new(Device::Cpu);
        let head = Head::new(&vs.root(), HeadConfig::full(8));
        let b = batch(4, 8);
        let x = head.nodes(&b, false);
        let alpha = head.edges(&x, &b.cost);
        assert_eq!(alpha.size(), vec![4, 3, 3]);
        let sums = alpha.sum_dim_intlist([2i64].as_slice(), false, Kind::Float);
        assert!(f64::try_from((sums - 1.0).abs().max()).unwrap() < 1e-5);
    }

    #[test]
    fn the_score_depends_on_the_context_only_through_the_gcn() {
        ansel_torch::tch::manual_seed(1);
        for gcn in [true, false] {
            let vs = nn::VarStore::new(Device::Cpu);
            let mut config = HeadConfig::full(8);
            config.gcn = gcn;
            let head = Head::new(&vs.root(), config);
            let b = batch(2, 8);
            let (before, _) = head.forward(&b, false);
            let changed = NodeBatch {
                vec: b
                    .vec
                    .copy()
                    .index_fill(1, &Tensor::from_slice(&[1i64]), 3.0),
                ..b
            };
            let (after, _) = head.forward(&changed, false);
            let moved = f64::try_from((before - after).abs().max()).unwrap();
            assert_eq!(moved > 1e-7, gcn, "gcn {gcn}: moved {moved}");
        }
    }

    #[test]
    fn mi_loss_only_counts_pairs_that_start_at_an_answer() {
        let vs = nn::VarStore::new(Device::Cpu);
        let head = Head::new(&vs.root(), HeadConfig::full(8));
        let mut b = batch(3, 8);
        b.labels = Tensor::zeros([3, 3], (Kind::Float, Device::Cpu));
        let h = Tensor::randn([3, 3, 128], (Kind::Float, Device::Cpu));
        // No answer among the nodes: no pair, loss 0.
        assert_eq!(f64::try_from(head.mi_loss(&h, &b)).unwrap(), 0.0);
        b.labels = Tensor::from_slice(&[1f32, 0.0, 0.0]).repeat([3, 1]);
        assert!(f64::try_from(head.mi_loss(&h, &b)).unwrap() > 0.0);
    }
}
