//! The few kernels the native forward pass needs, on row-major `f32` slices: matrix products
//! (matrixmultiply's packed SGEMM, picked for the CPU at run time), linear layers, "same"
//! convolutions over token sequences with max pooling, tabled word convolutions and a tanh RNN.
//! Each mirrors the libtorch layer of the same name in `crate::layers` / `crate::nets`.

/// A row-major matrix view: element `(i, j)` at `data[i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub data: &'a [f32],
    pub rs: usize,
    pub cs: usize,
}

impl<'a> View<'a> {
    /// A contiguous `rows × cols` matrix.
    pub fn rows(data: &'a [f32], cols: usize) -> View<'a> {
        View {
            data,
            rs: cols,
            cs: 1,
        }
    }

    /// The transpose of a contiguous matrix whose rows hold `row_len` elements (a linear
    /// layer's `[out, in]` weight read as `[in, out]`: `row_len` is `in`).
    pub fn transposed(data: &'a [f32], row_len: usize) -> View<'a> {
        View {
            data,
            rs: 1,
            cs: row_len,
        }
    }

    fn check(&self, rows: usize, cols: usize) {
        if rows > 0 && cols > 0 {
            let last = (rows - 1) * self.rs + (cols - 1) * self.cs;
            assert!(last < self.data.len(), "matrix view out of bounds");
        }
    }
}

/// `c[m × n] (row stride ldc) = beta * c + a[m × k] · b[k × n]`, `[m, k, n] = shape`.
pub(crate) fn gemm([m, k, n]: [usize; 3], a: View, b: View, beta: f32, c: &mut [f32], ldc: usize) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        ldc >= n && (m - 1) * ldc + n <= c.len(),
        "gemm output too small"
    );
    if k == 0 {
        for row in c.chunks_mut(ldc).take(m) {
            row[..n].iter_mut().for_each(|x| *x *= beta);
        }
        return;
    }
    a.check(m, k);
    b.check(k, n);
    // SAFETY: the three views were checked to hold every element the product reads or writes,
    // and `c` is borrowed mutably, so it aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.data.as_ptr(),
            a.rs as isize,
            a.cs as isize,
            b.data.as_ptr(),
            b.rs as isize,
            b.cs as isize,
            beta,
            c.as_mut_ptr(),
            ldc as isize,
            1,
        );
    }
}

/// `y = x Wᵀ + b` with libtorch's `[out, in]` weight.
pub(crate) struct Linear {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
    pub input: usize,
    pub output: usize,
}

impl Linear {
    /// `[rows, input]` → `[rows, output]`.
    pub fn apply(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.input;
        let mut y = repeat_rows(&self.bias, rows);
        gemm(
            [rows, self.input, self.output],
            View::rows(x, self.input),
            View::transposed(&self.weight, self.input),
            1.0,
            &mut y,
            self.output,
        );
        y
    }
}

/// `rows` copies of `row`, one after another.
pub(crate) fn repeat_rows(row: &[f32], rows: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(row.len() * rows);
    for _ in 0..rows {
        out.extend_from_slice(row);
    }
    out
}

pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Zero rows around every sequence: a convolution of width up to `2 * PAD + 1` reads them
/// where it runs past a sequence's ends, as libtorch's zero padding (and masked padding) do.
pub(crate) const PAD: usize = 2;

/// Several token sequences of `dim` features in one matrix, each after [`PAD`] zero rows (and
/// [`PAD`] zero rows after the last), so that one matrix product per window offset convolves
/// them all.
pub(crate) struct Sequences {
    pub data: Vec<f32>,
    pub dim: usize,
    /// First row and length of each sequence.
    pub spans: Vec<(usize, usize)>,
    pub rows: usize,
}

impl Sequences {
    pub fn zeros(dim: usize, lengths: impl IntoIterator<Item = usize>) -> Sequences {
        let mut spans = Vec::new();
        let mut row = PAD;
        for len in lengths {
            spans.push((row, len));
            row += len + PAD;
        }
        Sequences {
            data: vec![0.0; row * dim],
            dim,
            spans,
            rows: row,
        }
    }

    /// Sequence `s` as `[len, dim]`.
    pub fn seq_mut(&mut self, s: usize) -> &mut [f32] {
        let (start, len) = self.spans[s];
        &mut self.data[start * self.dim..(start + len) * self.dim]
    }

    pub fn seq(&self, s: usize) -> &[f32] {
        let (start, len) = self.spans[s];
        &self.data[start * self.dim..(start + len) * self.dim]
    }

    /// Sequences of the same lengths with `dim` zero features.
    pub fn like(&self, dim: usize) -> Sequences {
        Sequences {
            data: vec![0.0; self.rows * dim],
            dim,
            spans: self.spans.clone(),
            rows: self.rows,
        }
    }

    /// Per sequence, the maximum of each feature over its tokens: `[sequences, dim]`.
    pub fn max_pool(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.spans.len() * self.dim);
        for s in 0..self.spans.len() {
            let mut best = vec![f32::NEG_INFINITY; self.dim];
            for token in self.seq(s).chunks_exact(self.dim) {
                for (b, &x) in best.iter_mut().zip(token) {
                    *b = b.max(x);
                }
            }
            out.extend_from_slice(&best);
        }
        out
    }
}

/// libtorch's `Conv` (`crate::layers::Conv`): weight `[input × width, output]`, row
/// `i × width + k` for input feature `i` at window offset `k`, windows centred as
/// `(width - 1) / 2` tokens left of the token.
pub(crate) struct Conv {
    pub weight: Vec<f32>,
    pub bias: Option<Vec<f32>>,
    pub input: usize,
    pub output: usize,
    pub width: usize,
}

impl Conv {
    /// Adds the convolution of `x` to `y` (same spans, `output` features), bias included;
    /// `y`'s padding rows receive garbage and are never read as tokens.
    pub fn add_to(&self, x: &Sequences, y: &mut Sequences) {
        assert!(x.dim == self.input && y.dim == self.output && self.width <= 2 * PAD + 1);
        if x.spans.is_empty() {
            return;
        }
        let m = x.rows - 2 * PAD;
        if let Some(bias) = &self.bias {
            for row in y.data.chunks_exact_mut(self.output) {
                row.iter_mut().zip(bias).for_each(|(y, b)| *y += b);
            }
        }
        let left = (self.width - 1) / 2;
        for k in 0..self.width {
            let from = (PAD + k - left) * self.input;
            gemm(
                [m, self.input, self.output],
                View::rows(&x.data[from..], self.input),
                View {
                    data: &self.weight[k * self.output..],
                    rs: self.width * self.output,
                    cs: 1,
                },
                1.0,
                &mut y.data[PAD * self.output..],
                self.output,
            );
        }
    }
}

/// A convolution over frozen word vectors tabled per vocabulary word (`WordConvTable` in
/// libtorch): row `w × width + k` is what word `w` adds at window offset `k`.
pub(crate) struct WordTable {
    rows: Vec<f32>,
    bias: Option<Vec<f32>>,
    width: usize,
    output: usize,
}

impl WordTable {
    /// `vectors`: the `[vocab, dim]` embedding table.
    pub fn new(conv: &Conv, vectors: &[f32], dim: usize) -> WordTable {
        let vocab = vectors.len() / dim;
        let cols = conv.width * conv.output;
        let mut rows = vec![0.0; vocab * cols];
        // `[vocab, dim] × [dim, width × output]`: weight row `i × width + k` read as row `i`.
        gemm(
            [vocab, dim, cols],
            View::rows(vectors, dim),
            View::rows(&conv.weight, cols),
            0.0,
            &mut rows,
            cols,
        );
        WordTable {
            rows,
            bias: conv.bias.clone(),
            width: conv.width,
            output: conv.output,
        }
    }

    /// Adds the convolution of the words `ids` (one sequence) to `y` (`[ids, output]`).
    pub fn add_to(&self, ids: &[i64], y: &mut [f32]) {
        let left = (self.width - 1) / 2;
        let n = ids.len();
        for (t, out) in y.chunks_exact_mut(self.output).enumerate() {
            if let Some(bias) = &self.bias {
                out.iter_mut().zip(bias).for_each(|(y, b)| *y += b);
            }
            for k in 0..self.width {
                let Some(at) = (t + k).checked_sub(left).filter(|&at| at < n) else {
                    continue;
                };
                let row = (ids[at] as usize * self.width + k) * self.output;
                out.iter_mut()
                    .zip(&self.rows[row..row + self.output])
                    .for_each(|(y, w)| *y += w);
            }
        }
    }
}

/// One direction of a single-layer tanh RNN: `h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`.
pub(crate) struct Rnn {
    pub input: Linear,
    /// `[hidden, hidden]`
    pub w_hh: Vec<f32>,
    pub b_hh: Vec<f32>,
}

impl Rnn {
    /// `[steps, input]` → `[steps, hidden]`, from a zero state.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let hidden = self.input.output;
        let mut h = self.input.apply(x);
        for t in 0..h.len() / hidden {
            let (before, rest) = h.split_at_mut(t * hidden);
            let state = &mut rest[..hidden];
            for (j, s) in state.iter_mut().enumerate() {
                *s += self.b_hh[j];
                if t > 0 {
                    let previous = &before[(t - 1) * hidden..];
                    let w = &self.w_hh[j * hidden..(j + 1) * hidden];
                    *s += dot(w, &previous[..hidden]);
                }
            }
            state.iter_mut().for_each(|s| *s = s.tanh());
        }
        h
    }
}

/// `a · b` over their common length. Sixteen partial sums let the compiler use SIMD lanes (a
/// plain sum must add in order); with AVX2 and FMA, detected at run time, they fill two AVX
/// registers. The RNN's recurrence and the scorer spend most of their time here.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features `dot_avx2` is compiled for.
        return unsafe { dot_avx2(a, b) };
    }
    dot_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes(a, b)
}

#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut sums = [0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..LANES {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_multiplies_strided_views() {
        // [2 × 3] · [3 × 2], the second given as the transpose of a [2 × 3].
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let bt = [1.0, 0.0, -1.0, 2.0, 1.0, 0.0];
        let mut c = vec![1.0; 4];
        gemm(
            [2, 3, 2],
            View::rows(&a, 3),
            View::transposed(&bt, 3),
            1.0,
            &mut c,
            2,
        );
        assert_eq!(c, vec![1.0 - 2.0, 1.0 + 4.0, 1.0 - 2.0, 1.0 + 13.0]);
    }

    #[test]
    fn convolution_pads_each_sequence_with_zeros() {
        // Width 3, one feature in and out, weights 1, 10, 100 for the left, centre, right token.
        let conv = Conv {
            weight: vec![1.0, 10.0, 100.0],
            bias: Some(vec![0.5]),
            input: 1,
            output: 1,
            width: 3,
        };
        let mut x = Sequences::zeros(1, [2, 1]);
        x.seq_mut(0).copy_from_slice(&[1.0, 2.0]);
        x.seq_mut(1).copy_from_slice(&[3.0]);
        let mut y = x.like(1);
        conv.add_to(&x, &mut y);
        assert_eq!(y.seq(0), &[10.5 + 200.0, 1.0 + 20.5]);
        assert_eq!(y.seq(1), &[30.5]);
        assert_eq!(y.max_pool(), vec![210.5, 30.5]);
    }
}
