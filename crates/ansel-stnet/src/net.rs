//! The Siamese Transformer Network (section 2.1-2.2 of the TRANS-CAPAR paper), in tch.
//!
//! Given a heading path s and a paragraph p it computes
//! `phi(s, p) = elu(v^T [a(s, p), f(s, p), psi(s, p)])` where
//! - `a`: three transformer encoders (section heading, intermediate headings, article title; eq.
//!   3-5, with the block-level residual of eq. 3) encode the path; a transformer decoder over the
//!   paragraph attends to it (eq. 11-14); max pooling over paragraph words and a ReLU layer
//!   (eq. 17-18);
//! - `psi`: the PACRR-style similarity module: the cosine matrix of GloVe embeddings, square
//!   convolutions of sizes 2..g (and the raw matrix, the unigram channel), max over filters, k-max
//!   over paragraph words, each path word's vector concatenated with its heading-kind one-hot and
//!   normalised IDF, an LSTM whose final hidden state is psi;
//! - `f`: the feature encoder: per path word features (kind one-hot, IDF, term frequency in the
//!   paragraph, match) through a 1-d convolution (kernel 1, then 3) and max pooling, joined with
//!   the pair's BM25 features.
//!
//! `-TRANS` drops `a` (no encoder/decoder); `-SIM` drops `psi`. The embeddings are frozen GloVe.

use ansel_torch::tch::{nn, nn::Module, nn::RNN, Kind, Tensor};
use serde::{Deserialize, Serialize};

/// Which parts of STNet are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Transformer + similarity module + features (the paper's STNet).
    Full,
    /// -TRANS: no transformer encoder/decoder.
    NoTrans,
    /// -SIM: no neural similarity module.
    NoSim,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Full => "stnet",
            Variant::NoTrans => "stnet-no-trans",
            Variant::NoSim => "stnet-no-sim",
        }
    }
    fn trans(self) -> bool {
        self != Variant::NoTrans
    }
    fn sim(self) -> bool {
        self != Variant::NoSim
    }
}

/// How the scorer's weights on the neural branches (a and psi) start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BranchInit {
    /// Like every other layer (the records of runs before this option).
    #[default]
    Random,
    /// Zero: the network starts as its feature encoder alone and a branch counts only once
    /// training has given it weight, so an untrained branch adds no noise to the ranking.
    Zero,
}

/// Hyper-parameters of the network.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetConfig {
    pub variant: Variant,
    /// Model width n (the GloVe dimension).
    pub dim: i64,
    /// Attention heads h.
    pub heads: i64,
    /// Blocks per transformer encoder and in the decoder.
    pub blocks: i64,
    /// Convolution filters f_c of the similarity module.
    pub filters: i64,
    /// Largest n-gram kernel g.
    pub max_ngram: i64,
    /// k of k-max pooling.
    pub kmax: i64,
    /// Width of the feature encoding f(s, p).
    pub feature_dim: i64,
    #[serde(default)]
    pub branch_init: BranchInit,
    /// Dropout in the transformer branch while training (Vaswani et al.'s 0.1 on the embedded
    /// input and on each sub-layer's output before its residual sum); 0 in records made before
    /// it existed.
    #[serde(default)]
    pub trans_dropout: f64,
}

/// Per path word features of the feature encoder: kind one-hot (3), IDF, log(1 + tf), match.
pub const WORD_FEATURES: i64 = 6;
/// Per pair features: BM25 score / the query's best, 1 / BM25 rank, log paragraph length / 5.
pub const PAIR_FEATURES: i64 = 3;
/// Context vector of the similarity module: kind one-hot (3) and IDF.
pub const CONTEXT: i64 = 4;

/// One batch of (path, paragraph) items, every tensor padded with token 0.
pub struct Batch {
    /// Token ids of the section heading, intermediate headings and title: `[B, L_k]` each.
    pub parts: [Tensor; 3],
    /// 1.0 for real tokens, 0.0 for padding, per part.
    pub part_masks: [Tensor; 3],
    /// The whole path (title first), left-padded: `[B, Lq]`, its mask and context `[B, Lq, 4]`.
    pub path: Tensor,
    pub path_mask: Tensor,
    pub context: Tensor,
    /// Paragraph tokens `[B, Lp]` and mask.
    pub para: Tensor,
    pub para_mask: Tensor,
    /// `[B, Lq, WORD_FEATURES]` and `[B, PAIR_FEATURES]`.
    pub word_features: Tensor,
    pub pair_features: Tensor,
}

struct Attention {
    q: nn::Linear,
    k: nn::Linear,
    v: nn::Linear,
    o: nn::Linear,
    heads: i64,
}

impl Attention {
    fn new(p: nn::Path, dim: i64, heads: i64) -> Attention {
        let lin = |n: &str| nn::linear(&p / n, dim, dim, Default::default());
        Attention {
            q: lin("q"),
            k: lin("k"),
            v: lin("v"),
            o: lin("o"),
            heads,
        }
    }

    /// Multi-head attention of `x` `[B, Lx, n]` over `mem` `[B, Lm, n]` (mask `[B, Lm]`).
    fn forward(&self, x: &Tensor, mem: &Tensor, mem_mask: &Tensor) -> Tensor {
        let (b, lx, n) = x.size3().expect("[B, L, n]");
        let lm = mem.size()[1];
        let dh = n / self.heads;
        let split = |t: Tensor, l: i64| t.view([b, l, self.heads, dh]).transpose(1, 2);
        let q = split(self.q.forward(x), lx);
        let k = split(self.k.forward(mem), lm);
        let v = split(self.v.forward(mem), lm);
        let bias = ((mem_mask - 1.0) * 1e4).view([b, 1, 1, lm]);
        let att =
            (q.matmul(&k.transpose(-2, -1)) / (dh as f64).sqrt() + bias).softmax(-1, Kind::Float);
        self.o
            .forward(&att.matmul(&v).transpose(1, 2).contiguous().view([b, lx, n]))
    }
}

struct Ffn {
    inner: nn::Linear,
    outer: nn::Linear,
}

impl Ffn {
    fn new(p: nn::Path, dim: i64) -> Ffn {
        Ffn {
            inner: nn::linear(&p / "inner", dim, dim, Default::default()),
            outer: nn::linear(&p / "outer", dim, dim, Default::default()),
        }
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        self.outer.forward(&self.inner.forward(x).relu())
    }
}

/// Encoder block (eq. 4-5) and, with `cross`, decoder block (eq. 12-14).
struct Block {
    self_att: Attention,
    ln1: nn::LayerNorm,
    cross: Option<(Attention, nn::LayerNorm)>,
    ffn: Ffn,
    ln2: nn::LayerNorm,
}

impl Block {
    fn new(p: nn::Path, dim: i64, heads: i64, cross: bool) -> Block {
        let ln = |n: &str| nn::layer_norm(&p / n, vec![dim], Default::default());
        Block {
            self_att: Attention::new(&p / "self", dim, heads),
            ln1: ln("ln1"),
            cross: cross.then(|| (Attention::new(&p / "cross", dim, heads), ln("ln_cross"))),
            ffn: Ffn::new(&p / "ffn", dim),
            ln2: ln("ln2"),
        }
    }

    /// `x + Block(x)` (eq. 3 / eq. 11), with dropout `drop` on each sub-layer's output.
    fn forward(
        &self,
        x: &Tensor,
        mask: &Tensor,
        mem: Option<(&Tensor, &Tensor)>,
        drop: &dyn Fn(Tensor) -> Tensor,
    ) -> Tensor {
        let mut o = self
            .ln1
            .forward(&(drop(self.self_att.forward(x, x, mask)) + x));
        if let (Some((att, ln)), Some((mem, mem_mask))) = (&self.cross, mem) {
            o = ln.forward(&(drop(att.forward(&o, mem, mem_mask)) + &o));
        }
        x + self.ln2.forward(&(drop(self.ffn.forward(&o)) + &o))
    }
}

/// Sinusoidal positions (eq. 10), `[len, dim]`.
fn positions(len: i64, dim: i64) -> Tensor {
    let mut v = Vec::with_capacity((len * dim) as usize);
    for i in 0..len {
        for j in 0..dim {
            let angle = i as f64 / 10000f64.powf(j as f64 / dim as f64);
            v.push(if j % 2 == 0 { angle.sin() } else { angle.cos() } as f32);
        }
    }
    Tensor::from_slice(&v).view([len, dim])
}

pub struct StNet {
    pub config: NetConfig,
    /// Frozen word embeddings `[vocab, n]` (row 0: padding, zeros).
    embeddings: Tensor,
    unit_embeddings: Tensor,
    encoders: Vec<Vec<Block>>,
    decoder: Vec<Block>,
    attn_out: Option<nn::Linear>,
    convs: Vec<nn::Conv2D>,
    lstm: Option<nn::LSTM>,
    feat_word: nn::Conv1D,
    feat_word2: nn::Conv1D,
    feat_pair: nn::Linear,
    scorer: nn::Linear,
}

impl StNet {
    pub fn new(vs: &nn::Path, config: NetConfig, embeddings: Tensor) -> StNet {
        let n = config.dim;
        let (trans, sim) = (config.variant.trans(), config.variant.sim());
        let encoders = if trans {
            ["section", "intermediate", "title"]
                .iter()
                .map(|name| {
                    (0..config.blocks)
                        .map(|i| Block::new(vs / "encoder" / *name / i, n, config.heads, false))
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let decoder = if trans {
            (0..config.blocks)
                .map(|i| Block::new(vs / "decoder" / i, n, config.heads, true))
                .collect()
        } else {
            Vec::new()
        };
        let convs = if sim {
            (2..=config.max_ngram)
                .map(|g| {
                    nn::conv2d(
                        vs / "sim" / format!("conv{g}"),
                        1,
                        config.filters,
                        g,
                        Default::default(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        let lstm_in = config.max_ngram * config.kmax + CONTEXT;
        let lstm = sim.then(|| {
            nn::lstm(
                vs / "sim" / "lstm",
                lstm_in,
                n,
                nn::RNNConfig {
                    batch_first: true,
                    ..Default::default()
                },
            )
        });
        let fd = config.feature_dim;
        let conv1 = |name: &str, i, o, k| {
            nn::conv1d(
                vs / "features" / name,
                i,
                o,
                k,
                nn::ConvConfig {
                    padding: k / 2,
                    ..Default::default()
                },
            )
        };
        let scorer_in = fd + if trans { n } else { 0 } + if sim { n } else { 0 };
        let norms = embeddings.norm_scalaropt_dim(2, [1], true).clamp_min(1e-6);
        let scorer = nn::linear(vs / "scorer", scorer_in, 1, Default::default());
        if config.branch_init == BranchInit::Zero {
            // The scorer reads [a, f, psi]: silence every column but f's.
            let a = if trans { n } else { 0 };
            ansel_torch::tch::no_grad(|| {
                let w = scorer.ws.shallow_clone();
                let _ = w.narrow(1, 0, a).zero_();
                let _ = w.narrow(1, a + fd, scorer_in - a - fd).zero_();
            });
        }
        StNet {
            attn_out: trans.then(|| nn::linear(vs / "attn_out", n, n, Default::default())),
            unit_embeddings: &embeddings / norms,
            embeddings,
            encoders,
            decoder,
            convs,
            lstm,
            feat_word: conv1("word1", WORD_FEATURES, fd, 1),
            feat_word2: conv1("word3", fd, fd, 3),
            feat_pair: nn::linear(
                vs / "features" / "pair",
                fd + PAIR_FEATURES,
                fd,
                Default::default(),
            ),
            scorer,
            config,
        }
    }

    fn embed(&self, ids: &Tensor) -> Tensor {
        let l = ids.size()[1];
        self.embeddings.index_select(0, &ids.flatten(0, -1)).view([
            ids.size()[0],
            l,
            self.config.dim,
        ]) + positions(l, self.config.dim).unsqueeze(0)
    }

    /// a(s, p): encoders, decoder, max pooling, ReLU layer.
    fn semantic(&self, b: &Batch, train: bool) -> Tensor {
        let p = self.config.trans_dropout;
        let drop = |t: Tensor| if p > 0.0 { t.dropout(p, train) } else { t };
        let mut encoded = Vec::new();
        let mut masks = Vec::new();
        for (k, blocks) in self.encoders.iter().enumerate() {
            let mut x = drop(self.embed(&b.parts[k]));
            for block in blocks {
                x = block.forward(&x, &b.part_masks[k], None, &drop);
            }
            encoded.push(x);
            masks.push(b.part_masks[k].shallow_clone());
        }
        let os = Tensor::cat(&encoded, 1);
        let os_mask = Tensor::cat(&masks, 1);
        let mut y = drop(self.embed(&b.para));
        for block in &self.decoder {
            y = block.forward(&y, &b.para_mask, Some((&os, &os_mask)), &drop);
        }
        let pad = (b.para_mask.unsqueeze(-1) - 1.0) * 1e4;
        let pooled = (y + pad).amax([1], false);
        self.attn_out
            .as_ref()
            .expect("built with trans")
            .forward(&pooled)
            .relu()
    }

    /// psi(s, p): the PACRR-style similarity module.
    fn similarity(&self, b: &Batch) -> Tensor {
        let (bs, lq) = b.path.size2().expect("[B, Lq]");
        let lp = b.para.size()[1];
        let emb = |ids: &Tensor, l| {
            self.unit_embeddings
                .index_select(0, &ids.flatten(0, -1))
                .view([bs, l, self.config.dim])
        };
        let sim = emb(&b.path, lq).matmul(&emb(&b.para, lp).transpose(1, 2))
            * b.path_mask.unsqueeze(-1)
            * b.para_mask.unsqueeze(1);
        let k = self.config.kmax.min(lp);
        let kmax = |m: &Tensor| {
            let top = m.topk(k, -1, true, true).0;
            if k < self.config.kmax {
                top.constant_pad_nd([0, self.config.kmax - k])
            } else {
                top
            }
        };
        let mut pooled = vec![kmax(&sim)];
        let img = sim.unsqueeze(1);
        for (i, conv) in self.convs.iter().enumerate() {
            let g = i as i64 + 2;
            let c = conv
                .forward(&img.constant_pad_nd([0, g - 1, 0, g - 1]))
                .relu()
                .amax([1], false)
                * b.para_mask.unsqueeze(1);
            pooled.push(kmax(&c));
        }
        let input = Tensor::cat(&[Tensor::cat(&pooled, -1), b.context.shallow_clone()], -1);
        let (out, _) = self.lstm.as_ref().expect("built with sim").seq(&input);
        out.select(1, -1)
    }

    /// f(s, p): the feature encoder.
    fn features(&self, b: &Batch) -> Tensor {
        let x = b.word_features.transpose(1, 2); // [B, F, Lq]
        let h = self.feat_word.forward(&x).relu();
        let h = self.feat_word2.forward(&h).relu() * b.path_mask.unsqueeze(1);
        let pooled = h.amax([2], false);
        self.feat_pair
            .forward(&Tensor::cat(&[pooled, b.pair_features.shallow_clone()], 1))
            .relu()
    }

    /// `v^T [a, f, psi]` for every item of the batch, `[B]`: phi(s, p) before its ELU (which is
    /// monotone, so it ranks the same without the ties ELU's saturation makes); `train` turns
    /// the transformer branch's dropout on.
    pub fn score(&self, b: &Batch, train: bool) -> Tensor {
        let mut parts = Vec::new();
        if self.config.variant.trans() {
            parts.push(self.semantic(b, train));
        }
        parts.push(self.features(b));
        if self.config.variant.sim() {
            parts.push(self.similarity(b));
        }
        self.scorer.forward(&Tensor::cat(&parts, 1)).squeeze_dim(1)
    }
}
