//! Building blocks the three architectures share: the frozen word
//! embeddings with their word-relatedness features, masked convolution with
//! max pooling, and the scoring head with its optional RNN over candidates.

use crate::batch::Batch;
use ansel_torch::tch::{nn, nn::Module, Kind, Tensor};

use crate::kinds::RnnKind;

/// Static pretrained vectors, stored with the weights but never trained.
pub struct Embeddings {
    table: Tensor,
}

impl Embeddings {
    pub fn new(p: nn::Path, vocab_size: usize, dim: usize) -> Embeddings {
        Embeddings {
            table: p.zeros_no_train("table", &[vocab_size as i64, dim as i64]),
        }
    }

    /// Copies pretrained rows (row-major `vocab × dim`) into the table.
    pub fn fill(&mut self, rows: &[f32]) {
        let values = Tensor::from_slice(rows).view_as(&self.table);
        ansel_torch::tch::no_grad(|| self.table.copy_(&values));
    }

    pub fn dim(&self) -> i64 {
        self.table.size()[1]
    }

    /// The `[vocab, dim]` table.
    pub fn table(&self) -> &Tensor {
        &self.table
    }

    /// `[rows, tokens]` ids → `[rows, tokens, dim]` vectors.
    pub fn lookup(&self, ids: &Tensor) -> Tensor {
        self.table.index_select(0, &ids.reshape([-1])).view([
            ids.size()[0],
            ids.size()[1],
            self.dim(),
        ])
    }

    /// Cosinenet's word relatedness (thesis eq. 7.1): for each word, the
    /// largest cosine to a word of the other text, `[pairs, tokens, parts]` per side: one
    /// feature per column group of `parts` (widths; empty: the whole vector).
    /// With `exact`, exactly matching content words count as 1 even when they have no vector.
    /// `q` is `[pairs, question tokens, dim]`, `c` `[pairs, candidate tokens, dim]`.
    pub fn relatedness(
        &self,
        q: &Tensor,
        c: &Tensor,
        batch: &Batch,
        exact: bool,
        parts: &[usize],
    ) -> (Tensor, Tensor) {
        let whole = [self.dim() as usize];
        let parts = if parts.is_empty() { &whole[..] } else { parts };
        let unit = |x: &Tensor| x / x.norm_scalaropt_dim(2.0, [-1], true).clamp_min(1e-6);
        let (mut q_sides, mut c_sides) = (Vec::new(), Vec::new());
        let mut start = 0i64;
        for &width in parts {
            let (qp, cp) = (
                q.narrow(2, start, width as i64),
                c.narrow(2, start, width as i64),
            );
            start += width as i64;
            let cosine = unit(&qp).bmm(&unit(&cp).transpose(1, 2));
            let q_side = (&cosine + (batch.c_mask.unsqueeze(1) - 1.0) * 4.0).amax([2], false);
            let c_side = (&cosine + (batch.q_mask.unsqueeze(2) - 1.0) * 4.0).amax([1], false);
            let (q_side, c_side) = if exact {
                (
                    q_side.maximum(&batch.q_exact),
                    c_side.maximum(&batch.c_exact),
                )
            } else {
                (q_side, c_side)
            };
            q_sides.push(q_side * &batch.q_mask);
            c_sides.push(c_side * &batch.c_mask);
        }
        (Tensor::stack(&q_sides, 2), Tensor::stack(&c_sides, 2))
    }
}

/// A "same"-length 1-d convolution over tokens, written as windows times a
/// matrix so that forward and backward run in the BLAS matrix product.
/// Convolving a concatenation `[x ; r]` equals adding the convolutions of
/// `x` and of `r`; the networks use that to convolve a question's words once
/// per question and only its per-pair features once per pair.
pub struct Conv {
    weight: Tensor,
    bias: Option<Tensor>,
    width: i64,
}

impl Conv {
    /// `fan_in`: inputs of the whole (concatenated) convolution, for the initial scale.
    pub fn new(p: nn::Path, input: i64, output: i64, width: i64, fan_in: i64, bias: bool) -> Conv {
        let bound = 1.0 / ((fan_in * width) as f64).sqrt();
        let init = nn::Init::Uniform {
            lo: -bound,
            up: bound,
        };
        Conv {
            weight: p.var("weight", &[input * width, output], init),
            bias: bias.then(|| p.var("bias", &[output], init)),
            width,
        }
    }

    /// `[rows, tokens, input]` → `[rows, tokens, output]`, before any
    /// activation; padded tokens (mask 0) read as zeros.
    pub fn apply(&self, x: &Tensor, mask: &Tensor) -> Tensor {
        let (rows, tokens, input) = x.size3().expect("[rows, tokens, input]");
        let left = (self.width - 1) / 2;
        let padded = (x * mask.unsqueeze(-1)).constant_pad_nd([0, 0, left, self.width - 1 - left]);
        let windows = padded
            .unfold(1, self.width, 1)
            .reshape([rows * tokens, input * self.width]);
        let y = windows.matmul(&self.weight);
        let y = match &self.bias {
            Some(bias) => y + bias,
            None => y,
        };
        y.view([rows, tokens, -1])
    }
}

/// A convolution over frozen word vectors, tabled for scoring: what each
/// word adds at each window offset, `e_w · W_k`, is computed once per
/// vocabulary word, so a token costs `width` row look-ups and additions
/// instead of `dim × width × output` multiplications.
pub struct WordConvTable {
    /// `[vocab × width, output]`: row `w × width + k` is word `w` at offset `k`.
    rows: Tensor,
    bias: Option<Tensor>,
    width: i64,
}

impl WordConvTable {
    pub fn new(conv: &Conv, vectors: &Tensor) -> WordConvTable {
        let (vocab, dim) = vectors.size2().expect("[vocab, dim]");
        let rows = ansel_torch::tch::no_grad(|| {
            vectors
                .matmul(&conv.weight.view([dim, conv.width * conv.weight.size()[1]]))
                .view([vocab * conv.width, -1])
        });
        WordConvTable {
            rows,
            bias: conv.bias.as_ref().map(|b| b.detach()),
            width: conv.width,
        }
    }

    /// `[rows, tokens]` word ids → the same as [`Conv::apply`] on their vectors.
    pub fn apply(&self, ids: &Tensor) -> Tensor {
        let (rows, tokens) = ids.size2().expect("[rows, tokens]");
        let left = (self.width - 1) / 2;
        // Padding with the padding word, whose vector (and so whose rows) are zero.
        let windows = ids
            .constant_pad_nd([left, self.width - 1 - left])
            .unfold(1, self.width, 1);
        let offsets = Tensor::arange(self.width, (Kind::Int64, ids.device()));
        let index = (windows * self.width + offsets).reshape([-1]);
        let bags = Tensor::arange(rows * tokens, (Kind::Int64, ids.device())) * self.width;
        let (sums, _, _, _) = Tensor::embedding_bag::<Tensor>(
            &self.rows, &index, &bags, false, 0, false, None, false,
        );
        let sums = match &self.bias {
            Some(bias) => sums + bias,
            None => sums,
        };
        sums.view([rows, tokens, -1])
    }
}

/// `[rows, tokens, dim]` → `[rows, dim]`: the maximum over each row's real tokens.
pub fn masked_max(x: &Tensor, mask: &Tensor) -> Tensor {
    (x + (mask.unsqueeze(-1) - 1.0) * 1e4).amax([1], false)
}

/// One direction of a single-layer tanh RNN (libtorch's fused kernel).
struct Rnn {
    params: [Tensor; 4],
    hidden: i64,
}

impl Rnn {
    fn new(p: nn::Path, input: i64, hidden: i64) -> Rnn {
        let bound = 1.0 / (hidden as f64).sqrt();
        let init = nn::Init::Uniform {
            lo: -bound,
            up: bound,
        };
        Rnn {
            params: [
                p.var("w_ih", &[hidden, input], init),
                p.var("w_hh", &[hidden, hidden], init),
                p.var("b_ih", &[hidden], init),
                p.var("b_hh", &[hidden], init),
            ],
            hidden,
        }
    }

    /// `[questions, width, input]` → `[questions, width, hidden]`. Padding
    /// sits after each question's candidates, so it never reaches them.
    fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        let h0 = Tensor::zeros([1, x.size()[0], self.hidden], (Kind::Float, x.device()));
        x.rnn_tanh(&h0, &self.params, true, 1, 0.0, train, false, true)
            .0
    }
}

/// Scores every candidate of a grid of questions: optional RNN, then a linear layer.
pub struct ScoreHead {
    forward_rnn: Option<Rnn>,
    backward_rnn: Option<Rnn>,
    out: nn::Linear,
    dropout: f64,
    skip: bool,
}

impl ScoreHead {
    /// `skip`: with an RNN, the scorer also sees the pair vector (else the RNN's states only).
    pub fn new(p: nn::Path, input: i64, rnn: RnnKind, dropout: f64, skip: bool) -> ScoreHead {
        let (forward_rnn, backward_rnn, out_dim) = match rnn {
            RnnKind::None => (None, None, input),
            RnnKind::Rnn => (Some(Rnn::new(&p / "rnn", input, input)), None, input),
            RnnKind::Birnn => {
                let half = (input / 2).max(1);
                (
                    Some(Rnn::new(&p / "rnn_forward", input, half)),
                    Some(Rnn::new(&p / "rnn_backward", input, half)),
                    2 * half,
                )
            }
        };
        // With an RNN the scorer also sees the pair vector itself, so the
        // RNN only has to add what the neighbours say.
        let skip = skip && forward_rnn.is_some();
        let out_dim = if skip { out_dim + input } else { out_dim };
        ScoreHead {
            forward_rnn,
            backward_rnn,
            out: nn::linear(&p / "out", out_dim, 1, Default::default()),
            dropout,
            skip,
        }
    }

    /// `[pairs, input]` pair vectors → `[questions, width]` logits.
    pub fn forward(&self, pairs: &Tensor, batch: &Batch, train: bool) -> Tensor {
        let dim = pairs.size()[1];
        let grid = Tensor::zeros(
            [(batch.questions * batch.width) as i64, dim],
            (Kind::Float, pairs.device()),
        )
        .index_copy(0, &batch.slots, pairs)
        .view([batch.questions as i64, batch.width as i64, dim]);
        let grid = grid.dropout(self.dropout, train);
        let hidden = match (&self.forward_rnn, &self.backward_rnn) {
            (None, _) => grid,
            (Some(rnn), None) if !self.skip => rnn.forward(&grid, train),
            (Some(rnn), None) => Tensor::cat(&[rnn.forward(&grid, train), grid], 2),
            (Some(forward), Some(backward)) if !self.skip => {
                let back = self.backward(backward, &grid, batch, train);
                Tensor::cat(&[forward.forward(&grid, train), back], 2)
            }
            (Some(forward), Some(backward)) => {
                let back = self.backward(backward, &grid, batch, train);
                Tensor::cat(&[forward.forward(&grid, train), back, grid], 2)
            }
        };
        self.out.forward(&hidden).squeeze_dim(-1)
    }

    /// The backward RNN over each question's real candidates, last first (padding stays put).
    fn backward(&self, rnn: &Rnn, grid: &Tensor, batch: &Batch, train: bool) -> Tensor {
        let reverse = reversal_index(&batch.lengths, batch.width);
        let flip = |x: &Tensor| {
            let index = reverse.unsqueeze(-1).expand([-1, -1, x.size()[2]], false);
            x.gather(1, &index, false)
        };
        flip(&rnn.forward(&flip(grid), train))
    }
}

/// `[questions, width]` gather index that reverses each question's real
/// candidates and leaves its padding in place (an involution).
fn reversal_index(lengths: &[i64], width: usize) -> Tensor {
    let mut index = Vec::with_capacity(lengths.len() * width);
    for &len in lengths {
        for j in 0..width as i64 {
            index.push(if j < len { len - 1 - j } else { j });
        }
    }
    Tensor::from_slice(&index).view([lengths.len() as i64, width as i64])
}
