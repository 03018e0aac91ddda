//! Rescaling the dense int8 weights of a graph that ansel wrote in 8 bits to the 7 bits of
//! [`DENSE_WEIGHT_LEVEL`], for int8 models whose float source is gone.
//!
//! A weight column quantized as `q * s` with `max|q| = m > 63` becomes `round(q * 63 / m)` with
//! scale `s * m / 63`: what quantizing the dequantized weights in 7 bits gives, one rounding
//! more than quantizing the float weights would (at most half a 7-bit step per weight).

use crate::proto::{data_type, ModelProto, TensorProto};
use prost::Message;
use std::collections::HashMap;

/// The largest magnitude of a dense layer's int8 weights. On x86 CPUs without VNNI, ONNX
/// Runtime multiplies uint8 activations by int8 weights with VPMADDUBSW, whose sum of two
/// products saturates at 32767 for 8-bit weights (2 x 255 x 127); with 7 bits it cannot
/// (2 x 255 x 63). Full-range weights scored WikiQA test at MAP 0.41 instead of 0.86 with the
/// MPNet graph on an AVX2-only EPYC (ONNX Runtime's docs advise `reduce_range` there too).
pub const DENSE_WEIGHT_LEVEL: i8 = 63;

/// What [`requantize_dense`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requantized {
    /// `DynamicQuantizeMatMul` weight tensors in the graph.
    pub tensors: usize,
    /// Output columns whose weights went beyond [`DENSE_WEIGHT_LEVEL`] and were rescaled.
    pub columns: usize,
    /// The largest weight magnitude before.
    pub level_before: i8,
}

/// The dense int8 weight tensors of a decoded graph: for each `DynamicQuantizeMatMul`, the
/// indices of its `[in, out]` int8 weight and `[out]` float scale initializers.
fn dense_weights(model: &ModelProto) -> Result<Vec<(usize, usize)>, String> {
    let graph = model.graph.as_ref().ok_or("the model has no graph")?;
    let index: HashMap<&str, usize> = graph
        .initializer
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let mut found = Vec::new();
    for node in graph
        .node
        .iter()
        .filter(|n| n.op_type == "DynamicQuantizeMatMul")
    {
        let initializer = |k: usize| {
            node.input
                .get(k)
                .and_then(|name| index.get(name.as_str()).copied())
                .ok_or_else(|| {
                    format!(
                        "node {}: input {k} is not an initializer written by ansel",
                        node.name
                    )
                })
        };
        let (w, s) = (initializer(1)?, initializer(2)?);
        let (wt, st) = (&graph.initializer[w], &graph.initializer[s]);
        let shape_ok = wt.dims.len() == 2
            && st.dims.len() == 1
            && wt.dims[1] == st.dims[0]
            && wt.raw_data.len() as i64 == wt.dims[0] * wt.dims[1]
            && st.raw_data.len() as i64 == 4 * st.dims[0];
        if wt.data_type != data_type::INT8 || st.data_type != data_type::FLOAT || !shape_ok {
            return Err(format!(
                "node {}: weight {} / scale {} are not an [in, out] int8 tensor with one float \
                 scale per column",
                node.name, wt.name, st.name
            ));
        }
        found.push((w, s));
    }
    Ok(found)
}

/// The largest magnitude of the dense int8 weights in the ONNX bytes `bytes` (0 for a graph
/// without `DynamicQuantizeMatMul`).
pub fn dense_weight_level(bytes: &[u8]) -> Result<i8, String> {
    let model = ModelProto::decode(bytes).map_err(|e| format!("not an ONNX model: {e}"))?;
    level_of(&model)
}

/// The largest dense int8 weight magnitude of a decoded graph.
fn level_of(model: &ModelProto) -> Result<i8, String> {
    let graph = model.graph.as_ref().ok_or("the model has no graph")?;
    Ok(dense_weights(model)?
        .into_iter()
        .flat_map(|(w, _)| graph.initializer[w].raw_data.iter())
        .map(|&b| (b as i8).unsigned_abs())
        .max()
        .unwrap_or(0)
        .min(127) as i8)
}

/// Rescales each weight column of `tensor` (`[in, out]` int8) whose magnitude exceeds
/// [`DENSE_WEIGHT_LEVEL`], and its scale; returns how many columns changed.
fn requantize_columns(weights: &mut TensorProto, scales: &mut TensorProto) -> usize {
    let out = weights.dims[1] as usize;
    let level = i32::from(DENSE_WEIGHT_LEVEL);
    let mut changed = 0;
    for o in 0..out {
        let max = weights.raw_data[o..]
            .iter()
            .step_by(out)
            .map(|&b| i32::from(b as i8).abs())
            .max()
            .unwrap_or(0);
        if max <= level {
            continue;
        }
        for b in weights.raw_data[o..].iter_mut().step_by(out) {
            let q = f64::from(*b as i8) * f64::from(level) / f64::from(max);
            *b = (q.round() as i8) as u8;
        }
        let at = 4 * o;
        let bytes: [u8; 4] = scales.raw_data[at..at + 4].try_into().expect("4 bytes");
        let scale = f32::from_le_bytes(bytes) * max as f32 / level as f32;
        scales.raw_data[at..at + 4].copy_from_slice(&scale.to_le_bytes());
        changed += 1;
    }
    changed
}

/// Rewrites the dense int8 weights of the ONNX bytes of a graph ansel wrote so that none
/// exceeds [`DENSE_WEIGHT_LEVEL`]; everything else is kept byte for byte. A graph from
/// elsewhere (fields this crate does not know, which decoding would drop) is refused.
pub fn requantize_dense(bytes: &[u8]) -> Result<(Vec<u8>, Requantized), String> {
    let mut model = ModelProto::decode(bytes).map_err(|e| format!("not an ONNX model: {e}"))?;
    if model.encode_to_vec() != bytes {
        return Err(
            "the graph was not written by ansel (it has fields ansel does not keep)".into(),
        );
    }
    let level_before = level_of(&model)?;
    let tensors = dense_weights(&model)?;
    let graph = model.graph.as_mut().expect("checked by dense_weights");
    let mut columns = 0;
    for &(w, s) in &tensors {
        let mut weights = std::mem::take(&mut graph.initializer[w]);
        columns += requantize_columns(&mut weights, &mut graph.initializer[s]);
        graph.initializer[w] = weights;
    }
    let summary = Requantized {
        tensors: tensors.len(),
        columns,
        level_before,
    };
    Ok((model.encode_to_vec(), summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{GraphProto, NodeProto};

    fn tensor(name: &str, dims: &[i64], data_type: i32, raw_data: Vec<u8>) -> TensorProto {
        TensorProto {
            dims: dims.to_vec(),
            data_type,
            name: name.into(),
            raw_data,
        }
    }

    /// One `DynamicQuantizeMatMul` with a `[2, 3]` weight: column 0 in 8 bits, 1 and 2 within 7.
    fn graph(weights: &[i8; 6], scales: &[f32; 3]) -> Vec<u8> {
        let node = NodeProto {
            input: vec![
                "x".into(),
                "w".into(),
                "s".into(),
                String::new(),
                "b".into(),
            ],
            output: vec!["y".into()],
            name: "dense".into(),
            op_type: "DynamicQuantizeMatMul".into(),
            domain: "com.microsoft".into(),
            ..Default::default()
        };
        let model = ModelProto {
            graph: Some(GraphProto {
                node: vec![node],
                initializer: vec![
                    tensor(
                        "w",
                        &[2, 3],
                        data_type::INT8,
                        weights.iter().map(|&v| v as u8).collect(),
                    ),
                    tensor(
                        "s",
                        &[3],
                        data_type::FLOAT,
                        scales.iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        model.encode_to_vec()
    }

    fn initializers(bytes: &[u8]) -> (Vec<i8>, Vec<f32>) {
        let model = ModelProto::decode(bytes).unwrap();
        let graph = model.graph.unwrap();
        let w = graph.initializer[0].raw_data.iter().map(|&b| b as i8);
        let s = graph.initializer[1]
            .raw_data
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()));
        (w.collect(), s.collect())
    }

    #[test]
    fn columns_beyond_seven_bits_are_rescaled_and_the_rest_kept() {
        // [in=2, out=3] row-major: column 0 holds 127 and -64, column 1 holds 63 and 1.
        let before = graph(&[127, 63, 0, -64, 1, -5], &[0.5, 2.0, 1.0]);
        assert_eq!(dense_weight_level(&before).unwrap(), 127);
        let (after, summary) = requantize_dense(&before).unwrap();
        assert_eq!(
            summary,
            Requantized {
                tensors: 1,
                columns: 1,
                level_before: 127
            }
        );
        assert_eq!(dense_weight_level(&after).unwrap(), DENSE_WEIGHT_LEVEL);
        let (w, s) = initializers(&after);
        assert_eq!(w, vec![63, 63, 0, -32, 1, -5]);
        assert!((s[0] - 0.5 * 127.0 / 63.0).abs() < 1e-6, "{s:?}");
        assert_eq!(&s[1..], &[2.0, 1.0]);
        // Every rescaled weight is within half a new step of its old value.
        for (old, new) in [(127.0, 63.0), (-64.0, -32.0)] {
            assert!((old * 0.5 - new * s[0]).abs() <= s[0] / 2.0 + 1e-6);
        }
        // A 7-bit graph is left as it is.
        let (again, summary) = requantize_dense(&after).unwrap();
        assert_eq!(summary.columns, 0);
        assert_eq!(again, after);
    }

    #[test]
    fn a_graph_with_fields_ansel_does_not_keep_is_refused() {
        let mut bytes = graph(&[1, 2, 3, 4, 5, 6], &[1.0; 3]);
        // Field 20 (a string nobody here reads) would be dropped by a decode and re-encode.
        bytes.extend_from_slice(&[0xA2, 0x01, 0x01, b'x']);
        let err = requantize_dense(&bytes).unwrap_err();
        assert!(err.contains("not written by ansel"), "{err}");
    }
}
