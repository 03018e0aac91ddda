//! The forward pass of every efficient network in plain Rust: the same saved weights
//! (`weights.safetensors`, libtorch's variable names) and the same encoded features
//! ([`crate::encode`]) as the libtorch network of `crate::nets`, with no tensor library, so a
//! build without libtorch scores every saved model.
//!
//! Each question is scored on its own: its pairs in the order the RNN reads them
//! ([`Grid`]), with no padding, as the masks make the padded libtorch batch compute.

mod ops;
#[cfg(all(test, feature = "torch"))]
mod parity;

use crate::encode::{EncodedPair, EncodedQuestion, Grid};
use crate::kinds::{Architecture, RnnKind};
use crate::ranker::{read_model, WEIGHTS};
use crate::vocab::Vocabulary;
use crate::ModelConfig;
use ansel_data::Question;
use ansel_model::{ModelCard, ModelError, Ranker, Result};
use ops::{dot, gemm, sigmoid, Conv, Linear, Rnn, Sequences, View, WordTable};
use std::path::{Path, PathBuf};

/// A saved efficient model scored by the plain-Rust forward pass.
pub struct NativeRanker {
    name: String,
    config: ModelConfig,
    vocab: Vocabulary,
    net: Network,
}

impl NativeRanker {
    /// Loads a model directory written by training (`model.json`, `vocab.txt`, weights).
    pub fn load(dir: &Path, card: &ModelCard) -> Result<NativeRanker> {
        let (config, vocab) = read_model(dir, card)?;
        let net = Network::load(&config, &dir.join(WEIGHTS))?;
        Ok(NativeRanker {
            name: card.name.clone(),
            config,
            vocab,
            net,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Trainable parameters (the static embedding table not counted).
    pub fn parameters(&self) -> usize {
        self.net.parameters
    }
}

impl Ranker for NativeRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        let encoded = EncodedQuestion::new(question, &self.vocab, self.config.limits);
        Ok(self.net.score(&encoded))
    }

    fn reads_whole_list(&self) -> bool {
        self.config.rnn != RnnKind::None
    }
}

/// The tensors of a safetensors file, taken by name with the shape the config implies.
struct Weights<'a> {
    path: PathBuf,
    file: safetensors::SafeTensors<'a>,
    /// Elements read, the embedding table aside.
    trainable: usize,
}

impl Weights<'_> {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let bad = |message: String| ModelError::Format {
            path: self.path.clone(),
            message,
        };
        let view = self
            .file
            .tensor(name)
            .map_err(|_| bad(format!("no tensor {name:?}")))?;
        if view.dtype() != safetensors::Dtype::F32 || view.shape() != shape {
            return Err(bad(format!(
                "tensor {name:?} is {:?} {:?}, the model's config needs F32 {shape:?}",
                view.dtype(),
                view.shape()
            )));
        }
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if !name.starts_with("embedding.") {
            self.trainable += values.len();
        }
        Ok(values)
    }

    fn linear(&mut self, prefix: &str, input: usize, output: usize) -> Result<Linear> {
        Ok(Linear {
            weight: self.take(&format!("{prefix}.weight"), &[output, input])?,
            bias: self.take(&format!("{prefix}.bias"), &[output])?,
            input,
            output,
        })
    }

    fn conv(
        &mut self,
        prefix: &str,
        input: usize,
        output: usize,
        width: usize,
        bias: bool,
    ) -> Result<Conv> {
        Ok(Conv {
            weight: self.take(&format!("{prefix}.weight"), &[input * width, output])?,
            bias: if bias {
                Some(self.take(&format!("{prefix}.bias"), &[output])?)
            } else {
                None
            },
            input,
            output,
            width,
        })
    }

    fn rnn(&mut self, prefix: &str, input: usize, hidden: usize) -> Result<Rnn> {
        let w_ih = self.take(&format!("{prefix}.w_ih"), &[hidden, input])?;
        let w_hh = self.take(&format!("{prefix}.w_hh"), &[hidden, hidden])?;
        let b_ih = self.take(&format!("{prefix}.b_ih"), &[hidden])?;
        let b_hh = self.take(&format!("{prefix}.b_hh"), &[hidden])?;
        Ok(Rnn {
            input: Linear {
                weight: w_ih,
                bias: b_ih,
                input,
                output: hidden,
            },
            w_hh,
            b_hh,
        })
    }
}

/// Cosinenet's and RelCNN's CNN over one side of a pair: the word part tabled per vocabulary
/// word, the per-pair feature part convolved (`PairCnn` in libtorch).
struct PairCnn {
    words: WordTable,
    features: Conv,
}

impl PairCnn {
    fn load(
        w: &mut Weights,
        prefix: &str,
        table: &[f32],
        dim: usize,
        features: usize,
        hidden: usize,
    ) -> Result<PairCnn> {
        let words = w.conv(&format!("{prefix}.words"), dim, hidden, 5, true)?;
        Ok(PairCnn {
            words: WordTable::new(&words, table, dim),
            features: w.conv(&format!("{prefix}.features"), features, hidden, 5, false)?,
        })
    }

    /// `[sequences, hidden]`: tanh of the max-pooled convolution of each sequence's words
    /// (`ids[s]`) and features (`features`, one sequence each).
    fn pool<'a>(&self, ids: impl Fn(usize) -> &'a [i64], features: &Sequences) -> Vec<f32> {
        let mut y = features.like(self.features.output);
        self.features.add_to(features, &mut y);
        for s in 0..features.spans.len() {
            self.words.add_to(ids(s), y.seq_mut(s));
        }
        let mut pooled = y.max_pool();
        pooled.iter_mut().for_each(|x| *x = x.tanh());
        pooled
    }
}

struct Cosinenet {
    question: PairCnn,
    candidate: PairCnn,
    exact: bool,
    /// Column groups `(start, width)`, one relatedness feature each.
    parts: Vec<(usize, usize)>,
}

struct RelCnn {
    /// `[2, OVERLAP_DIM]`: the overlap embedding of a word without and with an exact match.
    overlap: Vec<f32>,
    question: PairCnn,
    candidate: PairCnn,
    /// `[hidden, hidden]`
    similarity: Vec<f32>,
    hidden: Linear,
}

const OVERLAP_DIM: usize = 5;

struct CompareAggregate {
    gate: Linear,
    value: Linear,
    convs: Vec<Conv>,
}

enum Encoder {
    Cosinenet(Cosinenet),
    Relcnn(RelCnn),
    CompareAggregate(CompareAggregate),
}

/// The optional RNN over a question's candidates, then the linear scorer.
struct Head {
    forward: Option<Rnn>,
    backward: Option<Rnn>,
    /// The pair vectors beside the RNN's states.
    skip: bool,
    /// `[1, out_dim]` weight and its bias.
    out: Linear,
}

impl Head {
    /// `x`: `[candidates, dim]` pair vectors of one question in reading order → logits.
    fn forward(&self, x: &[f32], n: usize) -> Vec<f32> {
        let mut hidden: Vec<Vec<f32>> = Vec::new();
        if let Some(rnn) = &self.forward {
            hidden.push(rnn.forward(x));
        }
        if let Some(rnn) = &self.backward {
            let reversed = |m: &[f32]| -> Vec<f32> {
                let row = m.len() / n;
                m.chunks_exact(row).rev().flatten().copied().collect()
            };
            hidden.push(reversed(&rnn.forward(&reversed(x))));
        }
        if self.forward.is_none() || self.skip {
            hidden.push(x.to_vec());
        }
        (0..n)
            .map(|t| {
                let mut logit = self.out.bias[0];
                let mut at = 0;
                for part in &hidden {
                    let row = part.len() / n;
                    logit += dot(
                        &self.out.weight[at..at + row],
                        &part[t * row..(t + 1) * row],
                    );
                    at += row;
                }
                logit
            })
            .collect()
    }
}

/// Embeddings → pair encoder → scoring head, as `crate::nets::Network` computes when scoring.
pub(crate) struct Network {
    dim: usize,
    hidden: usize,
    table: Vec<f32>,
    encoder: Encoder,
    head: Head,
    parameters: usize,
}

impl Network {
    pub fn load(config: &ModelConfig, path: &Path) -> Result<Network> {
        let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
        let file =
            safetensors::SafeTensors::deserialize(&bytes).map_err(|e| ModelError::Format {
                path: path.to_path_buf(),
                message: format!("not a safetensors file: {e:?}"),
            })?;
        let mut w = Weights {
            path: path.to_path_buf(),
            file,
            trainable: 0,
        };
        let (dim, h) = (config.embedding_dim, config.hidden);
        let table = w.take("embedding.table", &[config.vocab_size, dim])?;
        let (encoder, pair_dim) = match config.architecture {
            Architecture::Cosinenet => {
                let widths = if config.relatedness_parts.is_empty() {
                    vec![dim]
                } else {
                    config.relatedness_parts.clone()
                };
                if widths.iter().sum::<usize>() > dim || widths.contains(&0) {
                    return Err(ModelError::Format {
                        path: path.to_path_buf(),
                        message: format!(
                            "relatedness_parts {widths:?} do not fit {dim}-d word vectors"
                        ),
                    });
                }
                let parts = widths
                    .iter()
                    .scan(0, |start, &width| {
                        *start += width;
                        Some((*start - width, width))
                    })
                    .collect::<Vec<_>>();
                let features = parts.len() + usize::from(!config.no_exact_match);
                let net = Cosinenet {
                    question: PairCnn::load(&mut w, "encoder.question", &table, dim, features, h)?,
                    candidate: PairCnn::load(
                        &mut w,
                        "encoder.candidate",
                        &table,
                        dim,
                        features,
                        h,
                    )?,
                    exact: !config.no_exact_match,
                    parts,
                };
                (Encoder::Cosinenet(net), 2 * h)
            }
            Architecture::Relcnn => {
                let join = 2 * h + 2;
                let net = RelCnn {
                    overlap: w.take("encoder.overlap.weight", &[2, OVERLAP_DIM])?,
                    question: PairCnn::load(
                        &mut w,
                        "encoder.question",
                        &table,
                        dim,
                        OVERLAP_DIM,
                        h,
                    )?,
                    candidate: PairCnn::load(
                        &mut w,
                        "encoder.candidate",
                        &table,
                        dim,
                        OVERLAP_DIM,
                        h,
                    )?,
                    similarity: w.take("encoder.similarity", &[h, h])?,
                    hidden: w.linear("encoder.hidden", join, join)?,
                };
                (Encoder::Relcnn(net), join)
            }
            Architecture::CompareAggregate => {
                let net = CompareAggregate {
                    gate: w.linear("encoder.gate", dim, h)?,
                    value: w.linear("encoder.value", dim, h)?,
                    convs: (1..=5)
                        .map(|width| w.conv(&format!("encoder.conv{width}"), h, h, width, true))
                        .collect::<Result<_>>()?,
                };
                (Encoder::CompareAggregate(net), 5 * h)
            }
        };
        let (forward, backward, states) = match config.rnn {
            RnnKind::None => (None, None, pair_dim),
            RnnKind::Rnn => (Some(w.rnn("head.rnn", pair_dim, pair_dim)?), None, pair_dim),
            RnnKind::Birnn => {
                let half = (pair_dim / 2).max(1);
                (
                    Some(w.rnn("head.rnn_forward", pair_dim, half)?),
                    Some(w.rnn("head.rnn_backward", pair_dim, half)?),
                    2 * half,
                )
            }
        };
        let skip = !config.no_skip && forward.is_some();
        let out_dim = if skip { states + pair_dim } else { states };
        let head = Head {
            forward,
            backward,
            skip,
            out: w.linear("head.out", out_dim, 1)?,
        };
        Ok(Network {
            dim,
            hidden: h,
            parameters: w.trainable,
            table,
            encoder,
            head,
        })
    }

    /// The question's scores, in its candidates' order.
    pub fn score(&self, question: &EncodedQuestion) -> Vec<f32> {
        if question.is_empty() {
            return Vec::new();
        }
        let grid = Grid::new(&[question]);
        let pairs: Vec<&EncodedPair> = grid.pairs.iter().map(|&(p, _)| p).collect();
        let x = match &self.encoder {
            Encoder::Cosinenet(net) => self.cosinenet(net, &pairs),
            Encoder::Relcnn(net) => self.relcnn(net, &pairs),
            Encoder::CompareAggregate(net) => self.compare_aggregate(net, &pairs),
        };
        let logits = self.head.forward(&x, pairs.len());
        grid.scores(&logits).remove(0)
    }

    /// `[ids, dim]` word vectors.
    fn vectors(&self, ids: &[i64]) -> Vec<f32> {
        let mut out = Vec::with_capacity(ids.len() * self.dim);
        for &id in ids {
            let at = id as usize * self.dim;
            out.extend_from_slice(&self.table[at..at + self.dim]);
        }
        out
    }

    /// Cosinenet's pair vectors `[q * c ; q - c]`, `[pairs, 2 × hidden]`.
    fn cosinenet(&self, net: &Cosinenet, pairs: &[&EncodedPair]) -> Vec<f32> {
        let dim = self.dim;
        let features = net.question.features.input;
        let q_ids = &pairs[0].q_ids;
        let lq = q_ids.len();
        let q_units = unit_parts(&self.vectors(q_ids), dim, &net.parts);
        let c_ids: Vec<i64> = pairs.iter().flat_map(|p| p.c_ids.iter().copied()).collect();
        let c_units = unit_parts(&self.vectors(&c_ids), dim, &net.parts);
        let tokens = c_ids.len();
        // `[question tokens, candidate tokens of every pair]` cosines, one matrix per column group.
        let cosines: Vec<Vec<f32>> = net
            .parts
            .iter()
            .map(|&(start, width)| {
                let mut cosine = vec![0.0; lq * tokens];
                gemm(
                    [lq, width, tokens],
                    View {
                        data: &q_units[start..],
                        rs: dim,
                        cs: 1,
                    },
                    View {
                        data: &c_units[start..],
                        rs: 1,
                        cs: dim,
                    },
                    0.0,
                    &mut cosine,
                    tokens,
                );
                cosine
            })
            .collect();
        let mut q_features = Sequences::zeros(features, pairs.iter().map(|p| p.q_ids.len()));
        let mut c_features = Sequences::zeros(features, pairs.iter().map(|p| p.c_ids.len()));
        let mut at = 0;
        for (s, pair) in pairs.iter().enumerate() {
            let lc = pair.c_ids.len();
            let qf = q_features.seq_mut(s);
            let cf = c_features.seq_mut(s);
            // Each word's largest cosine to a word of the other text, per column group.
            for (f, cosine) in cosines.iter().enumerate() {
                let mut c_best = vec![f32::NEG_INFINITY; lc];
                for i in 0..lq {
                    let row = &cosine[i * tokens + at..i * tokens + at + lc];
                    let mut q_best = f32::NEG_INFINITY;
                    for (best, &cosine) in c_best.iter_mut().zip(row) {
                        q_best = q_best.max(cosine);
                        *best = best.max(cosine);
                    }
                    qf[i * features + f] = q_best;
                }
                for (j, best) in c_best.into_iter().enumerate() {
                    cf[j * features + f] = best;
                }
            }
            at += lc;
            if net.exact {
                // Exact matches count as 1 even without vectors, and the flag sits beside.
                let last = features - 1;
                let flag = |values: &mut [f32], exact: &[f32]| {
                    for (row, &e) in values.chunks_exact_mut(features).zip(exact) {
                        row[..last].iter_mut().for_each(|r| *r = r.max(e));
                        row[last] = e;
                    }
                };
                flag(qf, &pair.q_exact);
                flag(cf, &pair.c_exact);
            }
        }
        let qv = net.question.pool(|_| q_ids, &q_features);
        let cv = net.candidate.pool(|s| &pairs[s].c_ids, &c_features);
        let h = self.hidden;
        let mut out = Vec::with_capacity(pairs.len() * 2 * h);
        for (q, c) in qv.chunks_exact(h).zip(cv.chunks_exact(h)) {
            out.extend(q.iter().zip(c).map(|(q, c)| q * c));
            out.extend(q.iter().zip(c).map(|(q, c)| q - c));
        }
        out
    }

    /// RelCNN's joined vectors `tanh(W [q ; q M c ; c ; overlap] + b)`, `[pairs, 2 × hidden + 2]`.
    fn relcnn(&self, net: &RelCnn, pairs: &[&EncodedPair]) -> Vec<f32> {
        let overlap = |lengths: &dyn Fn(&EncodedPair) -> &[f32]| {
            let mut features =
                Sequences::zeros(OVERLAP_DIM, pairs.iter().map(|p| lengths(p).len()));
            for (s, pair) in pairs.iter().enumerate() {
                let seq = features.seq_mut(s);
                for (row, &exact) in seq.chunks_exact_mut(OVERLAP_DIM).zip(lengths(pair)) {
                    let at = exact as usize * OVERLAP_DIM;
                    row.copy_from_slice(&net.overlap[at..at + OVERLAP_DIM]);
                }
            }
            features
        };
        let qv = net
            .question
            .pool(|_| &pairs[0].q_ids, &overlap(&|p| &p.q_exact));
        let cv = net
            .candidate
            .pool(|s| &pairs[s].c_ids, &overlap(&|p| &p.c_exact));
        let h = self.hidden;
        let mut join = Vec::with_capacity(pairs.len() * (2 * h + 2));
        for ((q, c), pair) in qv.chunks_exact(h).zip(cv.chunks_exact(h)).zip(pairs) {
            let sim: f32 = (0..h)
                .map(|j| {
                    let qm: f32 = (0..h).map(|i| q[i] * net.similarity[i * h + j]).sum();
                    qm * c[j]
                })
                .sum();
            join.extend_from_slice(q);
            join.push(sim);
            join.extend_from_slice(c);
            join.push(pair.overlap);
        }
        let mut out = net.hidden.apply(&join);
        out.iter_mut().for_each(|x| *x = x.tanh());
        out
    }

    /// Compare-Aggregate's pooled convolutions `[pairs, 5 × hidden]`.
    fn compare_aggregate(&self, net: &CompareAggregate, pairs: &[&EncodedPair]) -> Vec<f32> {
        let h = self.hidden;
        let project = |x: &[f32]| -> Vec<f32> {
            let gate = net.gate.apply(x);
            let mut value = net.value.apply(x);
            value
                .iter_mut()
                .zip(gate)
                .for_each(|(v, g)| *v = sigmoid(g) * v.tanh());
            value
        };
        let qp = project(&self.vectors(&pairs[0].q_ids));
        let lq = qp.len() / h;
        let c_ids: Vec<i64> = pairs.iter().flat_map(|p| p.c_ids.iter().copied()).collect();
        let cp = project(&self.vectors(&c_ids));
        let tokens = c_ids.len();
        // Each candidate word attends over the question's words.
        let mut attention = vec![0.0; tokens * lq];
        gemm(
            [tokens, h, lq],
            View::rows(&cp, h),
            View::transposed(&qp, h),
            0.0,
            &mut attention,
            lq,
        );
        for row in attention.chunks_exact_mut(lq) {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0;
            row.iter_mut().for_each(|x| {
                *x = (*x - max).exp();
                sum += *x;
            });
            row.iter_mut().for_each(|x| *x /= sum);
        }
        let mut attended = vec![0.0; tokens * h];
        gemm(
            [tokens, lq, h],
            View::rows(&attention, lq),
            View::rows(&qp, h),
            0.0,
            &mut attended,
            h,
        );
        let mut compared = Sequences::zeros(h, pairs.iter().map(|p| p.c_ids.len()));
        let mut at = 0;
        for s in 0..pairs.len() {
            let seq = compared.seq_mut(s);
            let n = seq.len();
            seq.iter_mut()
                .zip(&cp[at..at + n])
                .zip(&attended[at..at + n])
                .for_each(|((x, c), a)| *x = c * a);
            at += n;
        }
        let pooled: Vec<Vec<f32>> = net
            .convs
            .iter()
            .map(|conv| {
                let mut y = compared.like(h);
                conv.add_to(&compared, &mut y);
                y.max_pool()
            })
            .collect();
        let mut out = Vec::with_capacity(pairs.len() * 5 * h);
        for s in 0..pairs.len() {
            for p in &pooled {
                out.extend(p[s * h..(s + 1) * h].iter().map(|x| x.max(0.0)));
            }
        }
        out
    }
}

/// `[tokens, dim]` vectors with each column group scaled to unit length (zero stays zero), as
/// `x / max(|x|, 1e-6)`.
fn unit_parts(vectors: &[f32], dim: usize, parts: &[(usize, usize)]) -> Vec<f32> {
    let mut out = vectors.to_vec();
    for row in out.chunks_exact_mut(dim) {
        for &(start, width) in parts {
            let part = &mut row[start..start + width];
            let norm = part.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            part.iter_mut().for_each(|x| *x /= norm);
        }
    }
    out
}
