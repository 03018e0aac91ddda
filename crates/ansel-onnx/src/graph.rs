//! Builds the ONNX graph of ansel's cross-encoder (ansel-bert's `CrossEncoder::logits`) for
//! any encoder family: embeddings + LayerNorm, the BERT-shaped layers (self-attention with an
//! additive padding mask, plus the relative position bias where the family has one (MPNet),
//! GELU feed-forward, post-LayerNorm), BERT's pooler (tanh of a dense layer on the first token)
//! and the one-logit head. Positions and token types follow the family
//! ([`ansel_bert::EncoderFamily`]).
//!
//! Inputs `input_ids`, `attention_mask` and, for families with token types, `token_type_ids`
//! (int64 `[batch, len]`, 1 = real token); output `logits` (float `[batch]`).
//!
//! With [`Precision::Int8`], every dense layer of the encoder and the pooler becomes one
//! `com.microsoft.DynamicQuantizeMatMul`: int8 weights in 7 bits, symmetric per output channel
//! (`scale = max|w| / 63`, zero point 0), and activations quantized to uint8 (asymmetric, per
//! tensor) by ONNX Runtime at run time; the word embeddings are int8 too, one scale per row
//! (`max|row| / 127`: they are looked up, not multiplied).
//! Position embeddings, LayerNorms, attention products and the one-logit head stay float. Float weights are stored as float16 where that is exact (the
//! committed models are fp16) and cast back to float32 in the graph (ONNX Runtime folds the
//! casts once, at load).

use crate::proto::{
    attribute_type, data_type, AttributeProto, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto, TensorTypeProto,
    TypeProto, ValueInfoProto,
};
use crate::requantize::DENSE_WEIGHT_LEVEL;
use crate::Precision;
use ansel_bert::BertConfig;
use std::collections::BTreeMap;

/// A named float tensor: shape and row-major values.
pub type Weights = BTreeMap<String, (Vec<i64>, Vec<f32>)>;

/// ONNX opset of the default domain (LayerNormalization needs 17).
pub const OPSET: i64 = 17;
/// ONNX IR version matching opset 17.
pub const IR_VERSION: i64 = 8;
const MS_DOMAIN: &str = "com.microsoft";

struct Builder {
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    next: usize,
}

fn attr_int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INT,
        i,
        ..Default::default()
    }
}

fn attr_float(name: &str, f: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::FLOAT,
        f,
        ..Default::default()
    }
}

fn attr_ints(name: &str, ints: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INTS,
        ints: ints.to_vec(),
        ..Default::default()
    }
}

/// Float16 bytes of `values` if every value survives the round trip exactly.
fn exact_f16(values: &[f32]) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(values.len() * 2);
    for &v in values {
        let h = half::f16::from_f32(v);
        if h.to_f32().to_bits() != v.to_bits() {
            return None;
        }
        bytes.extend_from_slice(&h.to_le_bytes());
    }
    Some(bytes)
}

impl Builder {
    fn name(&mut self, hint: &str) -> String {
        self.next += 1;
        format!("{hint}_{}", self.next)
    }

    fn node(&mut self, op: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        let out = self.name(op);
        self.node_to(op, "", inputs, attrs, &out);
        out
    }

    fn node_to(
        &mut self,
        op: &str,
        domain: &str,
        inputs: &[&str],
        attrs: Vec<AttributeProto>,
        out: &str,
    ) {
        let name = self.name(&format!("{op}_node"));
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![out.to_string()],
            name,
            op_type: op.into(),
            attribute: attrs,
            domain: domain.into(),
        });
    }

    fn raw(&mut self, name: &str, dims: &[i64], dtype: i32, raw_data: Vec<u8>) -> String {
        self.inits.push(TensorProto {
            dims: dims.to_vec(),
            data_type: dtype,
            name: name.into(),
            raw_data,
        });
        name.to_string()
    }

    /// A float initializer (float16 + Cast where exact); returns the float32 value's name.
    fn float(&mut self, name: &str, dims: &[i64], values: &[f32]) -> String {
        match exact_f16(values) {
            Some(bytes) if values.len() > 1 => {
                let stored = self.raw(&format!("{name}.f16"), dims, data_type::FLOAT16, bytes);
                let out = name.to_string();
                self.node_to(
                    "Cast",
                    "",
                    &[&stored],
                    vec![attr_int("to", data_type::FLOAT as i64)],
                    &out,
                );
                out
            }
            _ => {
                let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                self.raw(name, dims, data_type::FLOAT, bytes)
            }
        }
    }

    fn scalar(&mut self, hint: &str, v: f32) -> String {
        let name = self.name(hint);
        self.raw(&name, &[], data_type::FLOAT, v.to_le_bytes().to_vec())
    }

    fn ints(&mut self, hint: &str, dims: &[i64], values: &[i64]) -> String {
        let name = self.name(hint);
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.raw(&name, dims, data_type::INT64, bytes)
    }

    /// `x W^T + b` for a `[out, in]` weight, in float or through int8 dynamic quantization.
    fn linear(&mut self, x: &str, prefix: &str, w: &Weights, precision: Precision) -> String {
        let (wdims, wv) = &w[&format!("{prefix}.weight")];
        let (_, bv) = &w[&format!("{prefix}.bias")];
        let (out_f, in_f) = (wdims[0] as usize, wdims[1] as usize);
        let bias = self.float(&format!("{prefix}.bias"), &[out_f as i64], bv);
        match precision {
            Precision::Fp32 => {
                let mut t = vec![0f32; wv.len()];
                for o in 0..out_f {
                    for i in 0..in_f {
                        t[i * out_f + o] = wv[o * in_f + i];
                    }
                }
                let wt = self.float(
                    &format!("{prefix}.weight_t"),
                    &[in_f as i64, out_f as i64],
                    &t,
                );
                let y = self.node("MatMul", &[x, &wt], vec![]);
                self.node("Add", &[&y, &bias], vec![])
            }
            Precision::Int8 => {
                let (q, scales) = quantize_per_row(wv, out_f, in_f, DENSE_WEIGHT_LEVEL);
                // DynamicQuantizeMatMul takes B as [in, out] with one scale per column.
                let mut t = vec![0u8; q.len()];
                for o in 0..out_f {
                    for i in 0..in_f {
                        t[i * out_f + o] = q[o * in_f + i] as u8;
                    }
                }
                let qw = self.raw(
                    &format!("{prefix}.weight_t.int8"),
                    &[in_f as i64, out_f as i64],
                    data_type::INT8,
                    t,
                );
                let scale_bytes = scales.iter().flat_map(|v| v.to_le_bytes()).collect();
                let s = self.raw(
                    &format!("{prefix}.weight_scale"),
                    &[out_f as i64],
                    data_type::FLOAT,
                    scale_bytes,
                );
                let out = self.name("DynamicQuantizeMatMul");
                self.node_to(
                    "DynamicQuantizeMatMul",
                    MS_DOMAIN,
                    &[x, &qw, &s, "", &bias],
                    vec![],
                    &out,
                );
                out
            }
        }
    }

    /// Rows of the `[rows, cols]` table `name` picked by the int64 tensor `ids`, the table held
    /// as int8 with one scale per row (the word embeddings hold a quarter of a base model's
    /// weights; stored this way they take a quarter of float32's bytes).
    fn int8_lookup(&mut self, name: &str, w: &Weights, ids: &str) -> String {
        let (dims, values) = &w[name];
        let (q, scales) =
            quantize_per_row(values, dims[0] as usize, dims[1] as usize, EMBEDDING_LEVEL);
        let table = self.raw(
            &format!("{name}.int8"),
            dims,
            data_type::INT8,
            q.into_iter().map(|v| v as u8).collect(),
        );
        let scales = self.raw(
            &format!("{name}.row_scale"),
            &dims[..1],
            data_type::FLOAT,
            scales.iter().flat_map(|v| v.to_le_bytes()).collect(),
        );
        let rows = self.node("Gather", &[&table, ids], vec![]);
        let rows = self.node(
            "Cast",
            &[&rows],
            vec![attr_int("to", data_type::FLOAT as i64)],
        );
        let row_scales = self.node("Gather", &[&scales, ids], vec![]);
        let last = self.ints("last_axis", &[1], &[-1]);
        let row_scales = self.node("Unsqueeze", &[&row_scales, &last], vec![]);
        self.node("Mul", &[&rows, &row_scales], vec![])
    }

    fn layer_norm(&mut self, x: &str, prefix: &str, w: &Weights, eps: f64) -> String {
        let (d, g) = &w[&format!("{prefix}.weight")];
        let (_, b) = &w[&format!("{prefix}.bias")];
        let g = self.float(&format!("{prefix}.weight"), d, g);
        let b = self.float(&format!("{prefix}.bias"), d, b);
        self.node(
            "LayerNormalization",
            &[x, &g, &b],
            vec![attr_int("axis", -1), attr_float("epsilon", eps as f32)],
        )
    }

    fn activation(&mut self, x: &str, act: &str) -> String {
        match act {
            "relu" => self.node("Relu", &[x], vec![]),
            "gelu_new" | "gelu_pytorch_tanh" => {
                // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
                let x2 = self.node("Mul", &[x, x], vec![]);
                let x3 = self.node("Mul", &[&x2, x], vec![]);
                let c = self.scalar("c", 0.044715);
                let cx3 = self.node("Mul", &[&x3, &c], vec![]);
                let inner = self.node("Add", &[x, &cx3], vec![]);
                let k = self.scalar("k", (2.0f32 / std::f32::consts::PI).sqrt());
                let inner = self.node("Mul", &[&inner, &k], vec![]);
                let t = self.node("Tanh", &[&inner], vec![]);
                let one = self.scalar("one", 1.0);
                let t1 = self.node("Add", &[&t, &one], vec![]);
                let half = self.scalar("half", 0.5);
                let hx = self.node("Mul", &[x, &half], vec![]);
                self.node("Mul", &[&hx, &t1], vec![])
            }
            _ => {
                // erf GELU: x * 0.5 * (1 + erf(x / sqrt 2)); ONNX Runtime fuses it into Gelu.
                let r = self.scalar("sqrt2", std::f32::consts::SQRT_2);
                let d = self.node("Div", &[x, &r], vec![]);
                let e = self.node("Erf", &[&d], vec![]);
                let one = self.scalar("one", 1.0);
                let e1 = self.node("Add", &[&e, &one], vec![]);
                let m = self.node("Mul", &[x, &e1], vec![]);
                let half = self.scalar("half", 0.5);
                self.node("Mul", &[&m, &half], vec![])
            }
        }
    }
}

/// The largest magnitude of the word embeddings' int8 values (looked up, never multiplied).
pub const EMBEDDING_LEVEL: i8 = 127;

/// Symmetric int8 quantization of each row of a `[rows, cols]` matrix: values in
/// [-level, level] and one scale per row (`max|row| / level`; 1 for an all-zero row).
pub fn quantize_per_row(
    values: &[f32],
    rows: usize,
    cols: usize,
    level: i8,
) -> (Vec<i8>, Vec<f32>) {
    let level = f32::from(level);
    let mut q = vec![0i8; rows * cols];
    let mut scales = vec![1f32; rows];
    for r in 0..rows {
        let row = &values[r * cols..(r + 1) * cols];
        let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
        if max > 0.0 {
            scales[r] = max / level;
        }
        for (c, v) in row.iter().enumerate() {
            q[r * cols + c] = (v / scales[r]).round().clamp(-level, level) as i8;
        }
    }
    (q, scales)
}

fn io(name: &str, elem_type: i32, dims: &[&str]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| Dimension {
                            dim_value: None,
                            dim_param: Some(d.to_string()),
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

/// Checks that `weights` holds every tensor of a cross-encoder with `config`, with its shape.
fn check(config: &BertConfig, w: &Weights) -> Result<(), String> {
    for (name, shape) in ansel_bert::parameter_shapes(config) {
        match w.get(&name) {
            None => return Err(format!("tensor `{name}` is missing")),
            Some((dims, values))
                if *dims != shape || values.len() as i64 != shape.iter().product::<i64>() =>
            {
                return Err(format!(
                    "tensor `{name}`: shape {dims:?}, expected {shape:?}"
                ))
            }
            _ => {}
        }
    }
    if config.num_attention_heads <= 0 || config.hidden_size % config.num_attention_heads != 0 {
        return Err(format!(
            "hidden_size {} is not a multiple of num_attention_heads {}",
            config.hidden_size, config.num_attention_heads
        ));
    }
    Ok(())
}

/// What the graph computes on top of the encoder's last layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// BERT's pooler on the first token and the one-logit head: output `logits` `[batch]`.
    Logit,
    /// The mean of the real tokens' vectors (sentence-transformers' pooling), not normalised:
    /// output `embeddings` `[batch, hidden]`.
    MeanPool,
    /// A span reader's linear start/end head on every position (`span_head`): output
    /// `span_logits` `[batch, len, 2]`.
    Span,
}

impl Head {
    /// The graph's one output.
    pub fn output(self) -> &'static str {
        match self {
            Head::Logit => "logits",
            Head::MeanPool => crate::sentence::EMBEDDINGS_OUTPUT,
            Head::Span => crate::reader::SPAN_OUTPUT,
        }
    }
}

/// The ONNX model of a cross-encoder with `config` and `weights` (Hugging Face names, as
/// `ansel_bert::CrossEncoder::params` has them) at `precision`.
pub fn cross_encoder(
    config: &BertConfig,
    weights: &Weights,
    precision: Precision,
    metadata: &[(&str, String)],
) -> Result<ModelProto, String> {
    encoder_graph(config, weights, precision, Head::Logit, metadata)
}

/// The ONNX model of `config`'s encoder with `head` on top (see [`cross_encoder`]).
pub fn encoder_graph(
    config: &BertConfig,
    weights: &Weights,
    precision: Precision,
    head: Head,
    metadata: &[(&str, String)],
) -> Result<ModelProto, String> {
    check(config, weights)?;
    if head == Head::Span && !weights.contains_key("span_head.weight") {
        return Err("tensor `span_head.weight` is missing: not a span reader".into());
    }
    let w = weights;
    let mut b = Builder {
        nodes: Vec::new(),
        inits: Vec::new(),
        next: 0,
    };
    let h = config.hidden_size;
    let heads = config.num_attention_heads;
    let head_dim = h / heads;
    let eps = config.layer_norm_eps;

    // Embeddings: word + position + token type (families that have them), then LayerNorm.
    let family = config.family();
    let emb = |b: &mut Builder, name: &str| {
        let (d, v) = &w[name];
        b.float(name, d, v)
    };
    let pos = emb(&mut b, "embeddings.position_embeddings.weight");
    // A span reader decides on every token's vector: int8 word-embedding rows cost a mid-training
    // reader 4 points of exact match on 200 dev records (0.285 against 0.325; fp32 0.33), so its
    // table stays float (float16 where exact, as trained weights are), at no cost in time.
    let int8_embeddings = precision == Precision::Int8 && head != Head::Span;
    let mut x = if int8_embeddings {
        b.int8_lookup("embeddings.word_embeddings.weight", w, "input_ids")
    } else {
        let word = emb(&mut b, "embeddings.word_embeddings.weight");
        b.node("Gather", &[&word, "input_ids"], vec![])
    };
    if family.token_types() {
        let typ = emb(&mut b, "embeddings.token_type_embeddings.weight");
        let te = b.node("Gather", &[&typ, "token_type_ids"], vec![]);
        x = b.node("Add", &[&x, &te], vec![]);
    }
    let shape = b.node("Shape", &["input_ids"], vec![]);
    let one_idx = b.ints("idx1", &[], &[1]);
    let len = b.node("Gather", &[&shape, &one_idx], vec![attr_int("axis", 0)]);
    let zero = b.ints("zero", &[], &[0]);
    let step = b.ints("one", &[], &[1]);
    let first = family.first_position(config);
    let positions = if first == 0 {
        b.node("Range", &[&zero, &len, &step], vec![])
    } else {
        // RoBERTa-style: cumulative count of real tokens, padding at `first - 1`.
        let counted = b.node("CumSum", &["attention_mask", &step], vec![]);
        let real = b.node("Mul", &[&counted, "attention_mask"], vec![]);
        let offset = b.ints("first", &[], &[first - 1]);
        b.node("Add", &[&real, &offset], vec![])
    };
    let pe = b.node("Gather", &[&pos, &positions], vec![]);
    let x = b.node("Add", &[&x, &pe], vec![]);
    let mut x = b.layer_norm(&x, "embeddings.LayerNorm", w, eps);

    // Additive mask [batch, 1, 1, len]: 0 for real tokens, float32 min for padding.
    let m = b.node(
        "Cast",
        &["attention_mask"],
        vec![attr_int("to", data_type::FLOAT as i64)],
    );
    let one = b.scalar("one", 1.0);
    let inv = b.node("Sub", &[&one, &m], vec![]);
    let neg = b.scalar("neg", f32::MIN);
    let bias = b.node("Mul", &[&inv, &neg], vec![]);
    let axes = b.ints("axes", &[2], &[1, 2]);
    let mut mask_bias = b.node("Unsqueeze", &[&bias, &axes], vec![]);
    if let Some(buckets) = family.relative_buckets(config) {
        // The bucket of every (query, key) pair up to the longest input, sliced to `len`, looks
        // up each head's bias [1, heads, len, len]; computed once, added in every layer.
        let max = config.max_position_embeddings;
        let table: Vec<i64> =
            Vec::<i64>::try_from(ansel_bert::relative_buckets(max, buckets).view([-1]))
                .map_err(|e| e.to_string())?;
        let table = b.ints("buckets", &[max, max], &table);
        let one_dim = b.ints("one_dim", &[1], &[1]);
        let len1 = b.node("Reshape", &[&len, &one_dim], vec![]);
        let lens = b.node("Concat", &[&len1, &len1], vec![attr_int("axis", 0)]);
        let starts = b.ints("starts", &[2], &[0, 0]);
        let slice_axes = b.ints("slice_axes", &[2], &[0, 1]);
        let idx = b.node("Slice", &[&table, &starts, &lens, &slice_axes], vec![]);
        let weights = emb(&mut b, "encoder.relative_attention_bias.weight");
        let rel = b.node("Gather", &[&weights, &idx], vec![]);
        let rel = b.node("Transpose", &[&rel], vec![attr_ints("perm", &[2, 0, 1])]);
        let head_axis = b.ints("head_axis", &[1], &[0]);
        let rel = b.node("Unsqueeze", &[&rel, &head_axis], vec![]);
        mask_bias = b.node("Add", &[&mask_bias, &rel], vec![]);
    }

    let split_shape = b.ints("split", &[4], &[0, 0, heads, head_dim]);
    let merge_shape = b.ints("merge", &[3], &[0, 0, h]);
    let scale = b.scalar("scale", 1.0 / (head_dim as f32).sqrt());
    for i in 0..config.num_hidden_layers {
        let p = format!("encoder.layer.{i}");
        let q = b.linear(&x, &format!("{p}.attention.self.query"), w, precision);
        let q = b.node("Reshape", &[&q, &split_shape], vec![]);
        let q = b.node("Transpose", &[&q], vec![attr_ints("perm", &[0, 2, 1, 3])]);
        let k = b.linear(&x, &format!("{p}.attention.self.key"), w, precision);
        let k = b.node("Reshape", &[&k, &split_shape], vec![]);
        let k = b.node("Transpose", &[&k], vec![attr_ints("perm", &[0, 2, 3, 1])]);
        let v = b.linear(&x, &format!("{p}.attention.self.value"), w, precision);
        let v = b.node("Reshape", &[&v, &split_shape], vec![]);
        let v = b.node("Transpose", &[&v], vec![attr_ints("perm", &[0, 2, 1, 3])]);
        let s = b.node("MatMul", &[&q, &k], vec![]);
        let s = b.node("Mul", &[&s, &scale], vec![]);
        let s = b.node("Add", &[&s, &mask_bias], vec![]);
        let probs = b.node("Softmax", &[&s], vec![attr_int("axis", -1)]);
        let ctx = b.node("MatMul", &[&probs, &v], vec![]);
        let ctx = b.node("Transpose", &[&ctx], vec![attr_ints("perm", &[0, 2, 1, 3])]);
        let ctx = b.node("Reshape", &[&ctx, &merge_shape], vec![]);
        let a = b.linear(&ctx, &format!("{p}.attention.output.dense"), w, precision);
        let a = b.node("Add", &[&a, &x], vec![]);
        x = b.layer_norm(&a, &format!("{p}.attention.output.LayerNorm"), w, eps);
        let f = b.linear(&x, &format!("{p}.intermediate.dense"), w, precision);
        let f = b.activation(&f, &config.hidden_act);
        let f = b.linear(&f, &format!("{p}.output.dense"), w, precision);
        let f = b.node("Add", &[&f, &x], vec![]);
        x = b.layer_norm(&f, &format!("{p}.output.LayerNorm"), w, eps);
    }

    let output = match head {
        Head::Logit => {
            // Pooler on [CLS], then the one-logit head (float: one output, nothing to gain).
            let cls = b.node("Gather", &[&x, &zero], vec![attr_int("axis", 1)]);
            let pooled = b.linear(&cls, "pooler.dense", w, precision);
            let pooled = b.node("Tanh", &[&pooled], vec![]);
            let logit = b.linear(&pooled, "classifier", w, Precision::Fp32);
            let flat = b.ints("flat", &[1], &[-1]);
            b.node_to("Reshape", "", &[&logit, &flat], vec![], head.output());
            io(head.output(), data_type::FLOAT, &["batch"])
        }
        Head::MeanPool => {
            // Sum of the real tokens' vectors over their count (the mask as float, [batch, len, 1]).
            let last = b.ints("last_axis", &[1], &[2]);
            let weights = b.node("Unsqueeze", &[&m, &last], vec![]);
            let masked = b.node("Mul", &[&x, &weights], vec![]);
            let token_axis = b.ints("token_axis", &[1], &[1]);
            let sum = b.node(
                "ReduceSum",
                &[&masked, &token_axis],
                vec![attr_int("keepdims", 0)],
            );
            let count = b.node(
                "ReduceSum",
                &[&weights, &token_axis],
                vec![attr_int("keepdims", 0)],
            );
            let floor = b.scalar("count_floor", 1e-9);
            let count = b.node("Max", &[&count, &floor], vec![]);
            b.node_to("Div", "", &[&sum, &count], vec![], head.output());
            io(head.output(), data_type::FLOAT, &["batch", "hidden"])
        }
        Head::Span => {
            // Float: two outputs per position, nothing to gain from int8.
            let logits = b.linear(&x, "span_head", w, Precision::Fp32);
            b.node_to("Identity", "", &[&logits], vec![], head.output());
            io(head.output(), data_type::FLOAT, &["batch", "len", "2"])
        }
    };

    let graph = GraphProto {
        node: b.nodes,
        name: "ansel-cross-encoder".into(),
        initializer: b.inits,
        input: if family.token_types() {
            vec![
                io("input_ids", data_type::INT64, &["batch", "len"]),
                io("token_type_ids", data_type::INT64, &["batch", "len"]),
                io("attention_mask", data_type::INT64, &["batch", "len"]),
            ]
        } else {
            vec![
                io("input_ids", data_type::INT64, &["batch", "len"]),
                io("attention_mask", data_type::INT64, &["batch", "len"]),
            ]
        },
        output: vec![output],
    };
    Ok(ModelProto {
        ir_version: IR_VERSION,
        opset_import: vec![
            OperatorSetIdProto {
                domain: String::new(),
                version: OPSET,
            },
            OperatorSetIdProto {
                domain: MS_DOMAIN.into(),
                version: 1,
            },
        ],
        producer_name: "ansel".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        doc_string: match head {
            Head::Logit => format!("ansel cross-encoder, {}", precision.scheme()),
            Head::MeanPool => format!("ansel sentence encoder, {}", precision.scheme()),
            Head::Span => format!("ansel span reader, {}", precision.scheme()),
        },
        graph: Some(graph),
        metadata_props: metadata
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: k.to_string(),
                value: v.clone(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn per_row_quantization_is_within_half_a_step() {
        let values = [0.5f32, -1.0, 0.25, 0.0, 0.0, 0.0, 3.0, 2.9, -0.01];
        let (q, scales) = quantize_per_row(&values, 3, 3, EMBEDDING_LEVEL);
        assert_eq!(q[1], -127, "the largest magnitude maps to 127");
        let (q7, _) = quantize_per_row(&values, 3, 3, DENSE_WEIGHT_LEVEL);
        assert_eq!(q7[1], -63, "dense weights stay in 7 bits");
        assert!(q7.iter().all(|v| v.unsigned_abs() <= 63));
        assert_eq!(&q[3..6], &[0, 0, 0]);
        assert_eq!(scales[1], 1.0, "an all-zero row keeps scale 1");
        for r in 0..3 {
            for c in 0..3 {
                let back = q[r * 3 + c] as f32 * scales[r];
                assert!((back - values[r * 3 + c]).abs() <= scales[r] / 2.0 + 1e-7);
            }
        }
    }

    #[test]
    fn float16_storage_only_when_exact() {
        assert!(exact_f16(&[0.5, -2.0, 0.099975586]).is_some());
        assert!(exact_f16(&[0.1]).is_none());
    }

    fn tiny_weights(c: &BertConfig) -> Weights {
        ansel_bert::parameter_shapes(c)
            .into_iter()
            .map(|(name, dims)| {
                let n = dims.iter().product::<i64>() as usize;
                let values = (0..n).map(|k| ((k % 7) as f32 - 3.0) / 8.0).collect();
                (name, (dims, values))
            })
            .collect()
    }

    #[test]
    fn the_graph_round_trips_through_protobuf() {
        let config = BertConfig::tiny(25);
        let w = tiny_weights(&config);
        for precision in [Precision::Fp32, Precision::Int8] {
            let model = cross_encoder(&config, &w, precision, &[]).unwrap();
            let bytes = model.encode_to_vec();
            let back = ModelProto::decode(bytes.as_slice()).unwrap();
            assert_eq!(back, model);
            let graph = back.graph.unwrap();
            let quantized = graph
                .node
                .iter()
                .filter(|n| n.op_type == "DynamicQuantizeMatMul")
                .count();
            // Six dense layers per encoder layer, plus the pooler.
            let expected = match precision {
                Precision::Fp32 => 0,
                Precision::Int8 => 6 * config.num_hidden_layers as usize + 1,
            };
            assert_eq!(quantized, expected, "{precision:?}");
            assert_eq!(graph.output[0].name, "logits");
            let word_table = graph
                .initializer
                .iter()
                .find(|t| t.name.starts_with("embeddings.word_embeddings.weight"))
                .unwrap();
            assert_eq!(word_table.dims, vec![25, config.hidden_size]);
            // The test's values are exact in float16, so fp32 stores them that way.
            let expected_type = match precision {
                Precision::Fp32 => data_type::FLOAT16,
                Precision::Int8 => data_type::INT8,
            };
            assert_eq!(word_table.data_type, expected_type, "{precision:?}");
        }
    }

    #[test]
    fn a_missing_or_misshapen_tensor_is_named() {
        let config = BertConfig::tiny(25);
        let mut w = tiny_weights(&config);
        w.remove("encoder.layer.1.output.dense.bias");
        let err = cross_encoder(&config, &w, Precision::Int8, &[]).unwrap_err();
        assert!(err.contains("encoder.layer.1.output.dense.bias"), "{err}");
        let mut w = tiny_weights(&config);
        w.get_mut("classifier.weight").unwrap().0 = vec![2, config.hidden_size];
        let err = cross_encoder(&config, &w, Precision::Fp32, &[]).unwrap_err();
        assert!(err.contains("classifier.weight"), "{err}");
    }
}
