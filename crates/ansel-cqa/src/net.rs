//! The chapter-8 network: CNN sentence encoders (word vectors + word-overlap embeddings,
//! convolution of width 5, max pooling), their outputs and the rank embeddings joined into
//! `h_j`, a shared sigmoid layer `h_s`, and one MLP head (tanh layer, logit) per task.

use crate::data::{words, Triple, RANKS};
use ansel_efficient::{Vocabulary, PAD};
use ansel_torch::tch::{nn, nn::Module, Device, Kind, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Which texts the network reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Inputs {
    /// <q_new, c_rel>: the single network.
    Pair,
    /// <q_new, q_rel, c_rel>: the joint representation.
    Triplet,
}

/// How a task C list is scored from the heads' logits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CScore {
    /// Task C's own head.
    #[default]
    Head,
    /// P(A) P(B): the comment answers its related question, which is relevant to the new
    /// one (needs the A and B heads).
    Chain,
    /// P(C) + P(A) P(B): both readings, equally weighted.
    Both,
}

impl CScore {
    /// The scores of a batch from its `[B, 3]` head logits.
    pub fn apply(self, logits: &Tensor) -> Tensor {
        let p = logits.sigmoid();
        let chain = || p.select(1, 0) * p.select(1, 1);
        match self {
            CScore::Head => logits.select(1, 2),
            CScore::Chain => chain(),
            CScore::Both => p.select(1, 2) + chain(),
        }
    }

    /// The scores of a batch from its `[B, 3]` head logits, as a vector.
    pub fn scores(self, logits: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(self.apply(logits)).expect("float logits")
    }

    /// The rules a network with these heads can use.
    pub fn available(heads: [bool; 3]) -> Vec<CScore> {
        if heads[0] && heads[1] {
            vec![CScore::Head, CScore::Chain, CScore::Both]
        } else {
            vec![CScore::Head]
        }
    }
}

/// Hyper-parameters of the network (the thesis' section 8.2.1 values by default).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetConfig {
    pub inputs: Inputs,
    /// One encoder for q_new and q_rel (the thesis' "<->").
    pub share_questions: bool,
    /// Heads built, in [`crate::data::TASKS`] order (A, B, C).
    pub heads: [bool; 3],
    pub word_dim: i64,
    /// Width of the overlap and rank embeddings (d_feat).
    pub feature_dim: i64,
    pub filters: i64,
    pub width: i64,
    /// Width of h_s and of each head's hidden layer.
    pub hidden: i64,
    pub input_dropout: f64,
    pub hidden_dropout: f64,
    /// How the ranker scores task C (chosen on the tuning lists at training time).
    #[serde(default)]
    pub c_score: CScore,
}

/// A batch of triples as tensors: per text (q_new, q_rel, comment) ids `[B, L]`, overlap
/// marks `[B, L]` (0 padding, 1 a word the other texts lack, 2 one they share) and masks;
/// the rank places `[B, 2]`; labels and label masks `[B, 3]`.
pub struct Batch {
    pub ids: [Tensor; 3],
    pub overlap: [Tensor; 3],
    pub masks: [Tensor; 3],
    pub ranks: Tensor,
    pub labels: Tensor,
    pub known: Tensor,
}

impl Batch {
    pub fn new(triples: &[&Triple], vocab: &Vocabulary, inputs: Inputs) -> Batch {
        let texts = |t: &Triple| [words(&t.q_new), words(&t.q_rel), words(&t.comment)];
        let tokenized: Vec<[Vec<String>; 3]> = triples.iter().map(|t| texts(t)).collect();
        let per_text = |k: usize| {
            let len = tokenized
                .iter()
                .map(|t| t[k].len())
                .max()
                .unwrap_or(0)
                .max(1);
            let (mut ids, mut overlap) = (Vec::new(), Vec::new());
            for t in &tokenized {
                // The texts a word is compared with: the pair model never reads q_rel.
                let others: HashSet<&str> = (0..3)
                    .filter(|&o| o != k && (inputs == Inputs::Triplet || o != 1))
                    .flat_map(|o| t[o].iter().map(String::as_str))
                    .collect();
                for i in 0..len {
                    match t[k].get(i) {
                        Some(w) => {
                            ids.push(vocab.id(w));
                            overlap.push(if others.contains(w.as_str()) { 2 } else { 1 });
                        }
                        None => {
                            ids.push(PAD);
                            overlap.push(0);
                        }
                    }
                }
            }
            let shape = [tokenized.len() as i64, len as i64];
            let ids = Tensor::from_slice(&ids).view(shape);
            let overlap = Tensor::from_slice(&overlap).view(shape);
            let mask = overlap.ne(0).to_kind(Kind::Float);
            (ids, overlap, mask)
        };
        let (a, b, c) = (per_text(0), per_text(1), per_text(2));
        let clamp = |x: usize| (x as i64).min(RANKS - 1);
        let ranks: Vec<i64> = triples
            .iter()
            .flat_map(|t| [clamp(t.thread), clamp(t.position)])
            .collect();
        let labels: Vec<f32> = triples
            .iter()
            .flat_map(|t| t.labels.map(|l| f32::from(l == Some(true))))
            .collect();
        let known: Vec<f32> = triples
            .iter()
            .flat_map(|t| t.labels.map(|l| f32::from(l.is_some())))
            .collect();
        let n = triples.len() as i64;
        Batch {
            ids: [a.0, b.0, c.0],
            overlap: [a.1, b.1, c.1],
            masks: [a.2, b.2, c.2],
            ranks: Tensor::from_slice(&ranks).view([n, 2]),
            labels: Tensor::from_slice(&labels).view([n, 3]),
            known: Tensor::from_slice(&known).view([n, 3]),
        }
    }
}

struct Encoder {
    conv: nn::Conv1D,
}

struct Head {
    hidden: nn::Linear,
    out: nn::Linear,
}

pub struct CqaNet {
    pub config: NetConfig,
    words: Tensor,
    overlap: Tensor,
    thread_rank: Tensor,
    comment_rank: Tensor,
    /// q_new's encoder, q_rel's (absent when shared or unread), the comment's.
    question: Encoder,
    related: Option<Encoder>,
    comment: Encoder,
    shared: nn::Linear,
    heads: Vec<Option<Head>>,
}

impl CqaNet {
    /// `word_rows`: the vocabulary's pretrained vectors, row-major `[vocab, word_dim]`.
    pub fn new(p: &nn::Path, config: NetConfig, word_rows: &[f32]) -> CqaNet {
        let rows = word_rows.len() as i64 / config.word_dim;
        let table = Tensor::from_slice(word_rows).view([rows, config.word_dim]);
        let fd = config.feature_dim;
        let emb = |name: &str, n: i64| {
            p.var(
                name,
                &[n, fd],
                nn::Init::Randn {
                    mean: 0.0,
                    stdev: 0.1,
                },
            )
        };
        let encoder = |name: &str| Encoder {
            conv: nn::conv1d(
                p / name,
                config.word_dim + fd,
                config.filters,
                config.width,
                nn::ConvConfig {
                    padding: config.width / 2,
                    ..Default::default()
                },
            ),
        };
        let texts = if config.inputs == Inputs::Triplet {
            3
        } else {
            2
        };
        let joint = texts * config.filters + 2 * fd;
        let h = config.hidden;
        let heads = crate::data::TASKS
            .iter()
            .zip(config.heads)
            .map(|(task, built)| {
                built.then(|| Head {
                    hidden: nn::linear(
                        p / format!("head_{}", task.name()) / "hidden",
                        h,
                        h,
                        Default::default(),
                    ),
                    out: nn::linear(
                        p / format!("head_{}", task.name()) / "out",
                        h,
                        1,
                        Default::default(),
                    ),
                })
            })
            .collect();
        CqaNet {
            words: p.var_copy("words", &table),
            overlap: emb("overlap", 3),
            thread_rank: emb("thread_rank", RANKS),
            comment_rank: emb("comment_rank", RANKS),
            question: encoder("question"),
            related: (config.inputs == Inputs::Triplet && !config.share_questions)
                .then(|| encoder("related")),
            comment: encoder("comment"),
            shared: nn::linear(p / "shared", joint, h, Default::default()),
            heads,
            config,
        }
    }

    fn encode(&self, encoder: &Encoder, b: &Batch, k: usize, train: bool) -> Tensor {
        let (n, l) = b.ids[k].size2().expect("[B, L]");
        let look = |table: &Tensor, ids: &Tensor| {
            table
                .index_select(0, &ids.reshape([-1]))
                .view([n, l, table.size()[1]])
        };
        let x = Tensor::cat(
            &[
                look(&self.words, &b.ids[k]),
                look(&self.overlap, &b.overlap[k]),
            ],
            2,
        )
        .dropout(self.config.input_dropout, train);
        let y = encoder.conv.forward(&x.transpose(1, 2)).relu(); // [B, F, L]
        let pad = (b.masks[k].unsqueeze(1) - 1.0) * 1e4;
        // An empty text (all padding) pools to zeros, not to -1e4.
        (y + pad).amax([2], false).clamp_min(0.0)
    }

    /// One logit per task head (`[B, 3]`; zeros for heads not built).
    pub fn forward(&self, b: &Batch, train: bool) -> Tensor {
        let mut parts = vec![self.encode(&self.question, b, 0, train)];
        if self.config.inputs == Inputs::Triplet {
            let related = self.related.as_ref().unwrap_or(&self.question);
            parts.push(self.encode(related, b, 1, train));
        }
        parts.push(self.encode(&self.comment, b, 2, train));
        parts.push(self.thread_rank.index_select(0, &b.ranks.select(1, 0)));
        parts.push(self.comment_rank.index_select(0, &b.ranks.select(1, 1)));
        let h_j = Tensor::cat(&parts, 1).dropout(self.config.hidden_dropout, train);
        let h_s = self
            .shared
            .forward(&h_j)
            .sigmoid()
            .dropout(self.config.hidden_dropout, train);
        let n = h_s.size()[0];
        let logits: Vec<Tensor> = self
            .heads
            .iter()
            .map(|head| match head {
                Some(head) => head
                    .out
                    .forward(
                        &head
                            .hidden
                            .forward(&h_s)
                            .tanh()
                            .dropout(self.config.hidden_dropout, train),
                    )
                    .squeeze_dim(1),
                None => Tensor::zeros([n], (Kind::Float, Device::Cpu)),
            })
            .collect();
        Tensor::stack(&logits, 1)
    }

    /// The global loss: the sum over the built heads of each task's binary cross-entropy, over
    /// the triples that have the task's label.
    pub fn loss(&self, logits: &Tensor, b: &Batch) -> Tensor {
        let mut total = Tensor::zeros([], (Kind::Float, Device::Cpu));
        for (k, built) in self.config.heads.iter().enumerate() {
            if !built {
                continue;
            }
            let known = b.known.select(1, k as i64);
            let count = known.sum(Kind::Float).clamp_min(1.0);
            let each = logits
                .select(1, k as i64)
                .binary_cross_entropy_with_logits::<Tensor>(
                    &b.labels.select(1, k as i64),
                    None,
                    None,
                    ansel_torch::tch::Reduction::None,
                );
            total += (each * known).sum(Kind::Float) / count;
        }
        total
    }
}
