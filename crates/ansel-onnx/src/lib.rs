//! ansel's cross-encoder as an ONNX graph, scored by ONNX Runtime.
//!
//! - [`convert`] reads a cross-encoder model directory (`ansel train --model cross-encoder`:
//!   config.json, model.safetensors, tokenizer.json, model.json) and writes a directory with
//!   `model.onnx` (the whole scorer: encoder, pooler and head, built by [`graph`] and encoded
//!   with prost, no Python), the tokenizer and a card of kind [`KIND`] that records the
//!   source model and the [`Precision`]: `fp32`, or `int8` dynamic quantization.
//! - [`OnnxRanker`] serves such a directory as a [`Ranker`] through the `ort` crate, which
//!   loads `libonnxruntime.so` at run time ([`runtime_library`]; fetched from PyPI by
//!   `scripts/fetch-onnxruntime.sh`).
//!
//! Without the `export` feature (default on) only the ranker is built, and nothing links
//! libtorch.

#[cfg(feature = "export")]
pub mod graph;
pub mod proto;
pub mod reader;
pub mod requantize;
pub mod sentence;

#[cfg(feature = "export")]
pub use graph::Weights;
pub use reader::{OnnxSpanReader, SpanReaderSettings, SPAN_KIND};
pub use sentence::{SentenceRanker, SentenceSettings, SENTENCE_KIND};

use ansel_bert::{
    by_length, card_settings, encode_candidate, CrossEncoderSettings, Encoded, PairTokenizer,
};
#[cfg(feature = "export")]
use ansel_bert::{read_model_dir, CrossEncoder};
use ansel_data::Question;
#[cfg(feature = "export")]
use ansel_model::{replace_dir, write_atomic};
use ansel_model::{ModelCard, ModelError, Ranker, Result};
#[cfg(feature = "export")]
use ansel_torch::tch::Kind;
use ort::session::{builder::GraphOptimizationLevel, Session};
use ort::value::Tensor;
#[cfg(feature = "export")]
use prost::Message;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The `kind` of the card of a converted model.
pub const KIND: &str = "cross-encoder-onnx";
/// The graph's file in a converted model directory.
pub const ONNX_FILE: &str = "model.onnx";
/// Environment variable setting how many pairs of an int8 graph run together (default 1): more is
/// faster for offline scoring, but then a pair's score depends slightly on the pairs beside it.
pub const INT8_BATCH_ENV: &str = "ANSEL_INT8_BATCH";
/// Environment variable naming `libonnxruntime.so` explicitly.
pub const DYLIB_ENV: &str = "ORT_DYLIB_PATH";
/// The script that fetches the library into `vendor/onnxruntime/lib`.
pub const FETCH_SCRIPT: &str = "scripts/fetch-onnxruntime.sh";

/// Number format of the dense layers' weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Float32 MatMul (the reference within ONNX Runtime).
    Fp32,
    /// Dynamic quantization: int8 weights per output channel, uint8 activations at run time.
    Int8,
}

impl Precision {
    /// A one-line description recorded in the model card.
    pub fn scheme(self) -> &'static str {
        match self {
            Precision::Fp32 => "float32 weights and arithmetic (float16 storage where exact)",
            Precision::Int8 => {
                "dynamic quantization: encoder and pooler dense weights int8 in 7 bits, symmetric \
                 per output channel (scale = max|w|/63); activations uint8, asymmetric per tensor, quantized \
                 at run time (com.microsoft.DynamicQuantizeMatMul); word embeddings int8, symmetric \
                 per row; position embeddings, LayerNorm, attention products and the one-logit \
                 head in float32"
            }
        }
    }
}

/// The settings of a converted model's card (`config`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OnnxSettings {
    /// Input layout, length limit and batch size, as the source cross-encoder had them.
    #[serde(flatten)]
    pub encoder: CrossEncoderSettings,
    pub precision: Precision,
    /// What `precision` means, in words.
    pub scheme: String,
    /// The source model directory, as given to `ansel quantize`.
    pub source: String,
    /// The source card's name.
    pub source_name: String,
    pub opset: i64,
    /// How the weights were changed after conversion, when they were ([`requantize_dir`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requantized: Option<String>,
}

/// Every parameter of `model` as float32 values by Hugging Face name.
#[cfg(feature = "export")]
pub fn weights_of(model: &CrossEncoder) -> Result<Weights> {
    weights_from(model.params())
}

/// Tensors as float32 values by name.
#[cfg(feature = "export")]
fn weights_from(
    params: &std::collections::BTreeMap<String, ansel_torch::tch::Tensor>,
) -> Result<Weights> {
    params
        .iter()
        .map(|(name, t)| {
            let values = Vec::<f32>::try_from(t.to_kind(Kind::Float).contiguous().view([-1]))
                .map_err(|e| ModelError::Backend(format!("tensor {name}: {e}")))?;
            Ok((name.clone(), (t.size(), values)))
        })
        .collect()
}

/// The ONNX protobuf bytes of `model` at `precision` (the cross-encoder's one-logit graph).
#[cfg(feature = "export")]
pub fn onnx_bytes(model: &CrossEncoder, precision: Precision) -> Result<Vec<u8>> {
    graph_bytes(
        &model.config,
        &weights_of(model)?,
        precision,
        graph::Head::Logit,
    )
}

/// The ONNX protobuf bytes of the encoder with `config` and `weights`, with `head` at
/// `precision`.
#[cfg(feature = "export")]
fn graph_bytes(
    config: &ansel_bert::BertConfig,
    weights: &Weights,
    precision: Precision,
    head: graph::Head,
) -> Result<Vec<u8>> {
    let proto = graph::encoder_graph(
        config,
        weights,
        precision,
        head,
        &[("precision", format!("{precision:?}").to_lowercase())],
    )
    .map_err(ModelError::Backend)?;
    Ok(proto.encode_to_vec())
}

/// The source model directory of `dir` when `dir` is an fp32 export of a cross-encoder
/// (`ansel quantize --precision fp32`, whose scores equal the source's to ~1e-7, so scores
/// cached from it stand for the source's); `None` for anything else, int8 exports included
/// (they change scores). A relative source is relative to where `ansel quantize` ran.
pub fn fp32_source(dir: &Path) -> Option<PathBuf> {
    let card = ModelCard::read(dir).ok()?;
    if card.kind != KIND {
        return None;
    }
    let settings: OnnxSettings = serde_json::from_value(card.config).ok()?;
    (settings.precision == Precision::Fp32).then(|| PathBuf::from(settings.source))
}

/// The files of a trained model's directory that record its training (the card holds the rest).
#[cfg(feature = "export")]
const TRAINING_RECORD: [&str; 2] = ["train-log.jsonl", "training.svg"];

/// Converts the cross-encoder directory `src` (trained by ansel, or a Hugging Face directory
/// without a card, see [`ansel_bert::uncarded_card`]) into an ONNX model directory `out` at
/// `precision` (replacing `out` atomically); returns the new card.
#[cfg(feature = "export")]
pub fn convert(src: &Path, out: &Path, precision: Precision, name: &str) -> Result<ModelCard> {
    // A Hugging Face cross-encoder directory without a card converts as it is served.
    let card = if ansel_bert::is_uncarded_hf_dir(src) {
        ansel_bert::uncarded_card(src)?
    } else {
        ModelCard::read(src)?
    };
    if let (Ok(a), Ok(b)) = (src.canonicalize(), out.canonicalize()) {
        if a == b {
            return Err(ModelError::Format {
                path: out.to_path_buf(),
                message: "the output directory is the source model; choose another --out".into(),
            });
        }
    }
    if card.kind == ansel_bert::BI_KIND {
        return convert_sentence_encoder(src, &card, out, precision, name);
    }
    if card.kind == ansel_reader::KIND {
        return convert_span_reader(src, &card, out, precision, name);
    }
    if card.kind != ansel_bert::KIND {
        return Err(ModelError::Format {
            path: src.join(ansel_model::CARD_FILE),
            message: format!(
                "field `kind`: {:?}; only {:?} and cosine {:?} models can be converted to ONNX",
                card.kind,
                ansel_bert::KIND,
                ansel_bert::BI_KIND
            ),
        });
    }
    let settings: CrossEncoderSettings = card_settings(src, &card)?;
    let (model, _, initialised) = read_model_dir(src)?;
    if !initialised.is_empty() {
        return Err(ModelError::Format {
            path: src.join("model.safetensors"),
            message: format!("trained model lacks {}", initialised.join(", ")),
        });
    }
    let bytes = onnx_bytes(&model, precision)?;
    let config = OnnxSettings {
        encoder: settings,
        precision,
        scheme: precision.scheme().to_string(),
        source: src.display().to_string(),
        source_name: card.name.clone(),
        opset: graph::OPSET,
        requantized: None,
    };
    let new_card = converted_card(KIND, name, &config, &card)?;
    write_converted(out, &bytes, src, src, &new_card)?;
    Ok(new_card)
}

/// The card of a model converted from `source`: `kind`, `name`, `config`, and the source's
/// training record.
#[cfg(feature = "export")]
fn converted_card(
    kind: &str,
    name: &str,
    config: &impl Serialize,
    source: &ModelCard,
) -> Result<ModelCard> {
    let mut card = ModelCard::new(
        kind,
        name,
        serde_json::to_value(config).map_err(|e| ModelError::Backend(e.to_string()))?,
    );
    card.training = source.training.clone();
    Ok(card)
}

/// Writes a converted model directory `out` (replaced atomically): the graph, the tokenizer and
/// config of `encoder_dir`, the training record of `src` when it has one, and `card`.
#[cfg(feature = "export")]
fn write_converted(
    out: &Path,
    bytes: &[u8],
    encoder_dir: &Path,
    src: &Path,
    card: &ModelCard,
) -> Result<()> {
    replace_dir(out, |dir| {
        write_atomic(&dir.join(ONNX_FILE), bytes)?;
        for file in ["tokenizer.json", "config.json"] {
            let from = encoder_dir.join(file);
            let data = std::fs::read(&from).map_err(|e| ModelError::io(&from, e))?;
            write_atomic(&dir.join(file), &data)?;
        }
        // The training record travels with the weights when the source has one.
        for file in TRAINING_RECORD {
            let from = src.join(file);
            if from.is_file() {
                let data = std::fs::read(&from).map_err(|e| ModelError::io(&from, e))?;
                write_atomic(&dir.join(file), &data)?;
            }
        }
        card.write(dir)
    })
}

/// Converts a bi-encoder scored by cosine (`src`, its `card`) into a sentence encoder graph
/// (mean pooling, [`SENTENCE_KIND`]); a bi-encoder with a classifier head is refused.
#[cfg(feature = "export")]
fn convert_sentence_encoder(
    src: &Path,
    card: &ModelCard,
    out: &Path,
    precision: Precision,
    name: &str,
) -> Result<ModelCard> {
    let settings: ansel_bert::BiEncoderSettings = card_settings(src, card)?;
    if settings.scoring != ansel_bert::Scoring::Cosine {
        return Err(ModelError::Format {
            path: src.join(ansel_model::CARD_FILE),
            message: "field `config.scoring`: only bi-encoders scored by cosine convert to a \
                      sentence encoder (the classifier head is not part of the graph)"
                .into(),
        });
    }
    let encoder_dir = ansel_bert::bi_encoder::encoder_dir(src, &settings);
    let (model, _) = ansel_bert::bi_encoder::load_encoder(&encoder_dir)?;
    let bytes = graph_bytes(
        &model.config,
        &weights_of(&model)?,
        precision,
        graph::Head::MeanPool,
    )?;
    let config = SentenceSettings {
        max_len: settings.max_len,
        batch_size: settings.batch_size,
        precision,
        scheme: precision.scheme().to_string(),
        source: src.display().to_string(),
        source_name: card.name.clone(),
        opset: graph::OPSET,
    };
    let new_card = converted_card(SENTENCE_KIND, name, &config, card)?;
    write_converted(out, &bytes, &encoder_dir, src, &new_card)?;
    Ok(new_card)
}

/// Converts a span extractor (`src`, its `card`) into a span reader graph (the start/end head on
/// every position, [`SPAN_KIND`]).
#[cfg(feature = "export")]
fn convert_span_reader(
    src: &Path,
    card: &ModelCard,
    out: &Path,
    precision: Precision,
    name: &str,
) -> Result<ModelCard> {
    let model = ansel_reader::SpanExtractor::load(src, card)?;
    let bytes = graph_bytes(
        &model.encoder.config,
        &weights_from(&model.params())?,
        precision,
        graph::Head::Span,
    )?;
    let config = SpanReaderSettings {
        span: model.settings,
        precision,
        scheme: precision.scheme().to_string(),
        source: src.display().to_string(),
        source_name: card.name.clone(),
        opset: graph::OPSET,
    };
    let new_card = converted_card(SPAN_KIND, name, &config, card)?;
    write_converted(out, &bytes, src, src, &new_card)?;
    Ok(new_card)
}

/// Rewrites the int8 model directory `dir` in place so that no dense weight exceeds
/// [`requantize::DENSE_WEIGHT_LEVEL`] (graphs converted before that limit, whose float source is
/// gone); the card records it. Returns what changed; a 7-bit graph is left untouched.
pub fn requantize_dir(dir: &Path) -> Result<requantize::Requantized> {
    let card = ModelCard::read(dir)?;
    let mut settings: OnnxSettings = card_settings(dir, &card)?;
    let path = dir.join(ONNX_FILE);
    let format_error = |message: String| ModelError::Format {
        path: path.clone(),
        message,
    };
    if card.kind != KIND || settings.precision != Precision::Int8 {
        return Err(format_error(format!(
            "{}: only int8 {KIND:?} models are requantized",
            card.name
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| ModelError::io(&path, e))?;
    let (rewritten, summary) = requantize::requantize_dense(&bytes).map_err(format_error)?;
    if summary.columns == 0 {
        return Ok(summary);
    }
    ansel_model::write_atomic(&path, &rewritten)?;
    settings.scheme = Precision::Int8.scheme().to_string();
    settings.requantized = Some(format!(
        "dense weights of {} tensors converted in 8 bits (scale = max|w|/127) rescaled to 7 bits \
         from their int8 values ({} output columns), the float weights being gone",
        summary.tensors, summary.columns
    ));
    let mut card = card;
    card.config =
        serde_json::to_value(&settings).map_err(|e| ModelError::Backend(e.to_string()))?;
    card.write(dir)?;
    Ok(summary)
}

/// Where `libonnxruntime.so` is looked for, in order: `$ORT_DYLIB_PATH`, then
/// `vendor/onnxruntime/lib` of the checkout the binary sits in (`target/release/ansel`, or a
/// test binary in `target/*/deps`), then of the checkout it was built from.
pub fn runtime_candidates() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(p) = std::env::var_os(DYLIB_ENV) {
        paths.push(PathBuf::from(p));
        return paths;
    }
    let rel = Path::new("vendor/onnxruntime/lib/libonnxruntime.so");
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|exe| {
        let exe = exe.canonicalize().unwrap_or(exe);
        exe.parent().map(Path::to_path_buf)
    }) {
        paths.push(exe_dir.join("../..").join(rel));
        paths.push(exe_dir.join("../../..").join(rel));
    }
    paths.push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel),
    );
    paths
}

/// Loads ONNX Runtime once per process from the first of [`runtime_candidates`] that exists
/// and returns the library's path; the error names every path tried and the script that
/// fetches the library.
pub fn runtime_library() -> Result<PathBuf> {
    runtime().map(|(path, _)| path.clone())
}

pub(crate) fn runtime() -> Result<&'static (PathBuf, ort::environment::Environment)> {
    static LOADED: OnceLock<std::result::Result<(PathBuf, ort::environment::Environment), String>> =
        OnceLock::new();
    LOADED
        .get_or_init(|| {
            let tried = runtime_candidates();
            let Some(path) = tried.iter().find(|p| p.is_file()) else {
                let list: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                return Err(format!(
                    "ONNX Runtime library not found (tried {}); run `bash {FETCH_SCRIPT}` \
                     (it fetches libonnxruntime.so from the PyPI onnxruntime wheel) or set \
                     {DYLIB_ENV}",
                    list.join(", ")
                ));
            };
            let path = path.canonicalize().unwrap_or_else(|_| path.clone());
            let env = ort::init_from(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .with_name("ansel")
                .build()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((path, env))
        })
        .as_ref()
        .map_err(|message| ModelError::Unsupported {
            model: KIND.into(),
            message: message.clone(),
        })
}

/// Intra-op threads for new sessions: what the command set for libtorch (`--threads`, else
/// libtorch's default of one per core), so both back-ends obey the same flag.
#[cfg(feature = "export")]
pub(crate) fn threads() -> usize {
    ansel_torch::tch::get_num_threads().max(1) as usize
}

/// Intra-op threads for new sessions: one per core (a build without libtorch).
#[cfg(not(feature = "export"))]
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Environment variable that turns off ONNX Runtime's spinning intra-op threads (`0`).
pub const SPIN_ENV: &str = "ANSEL_ORT_SPIN";

/// ONNX Runtime's session option that parks the intra-op threads as soon as a run returns.
const FORCE_SPINNING_STOP: &str = "session.force_spinning_stop";

/// Whether intra-op threads spin while a run is in progress (on unless [`SPIN_ENV`] is `0`).
/// Spinning saves each operator the threads' wake-up, which dominates the small matrices of one
/// pair (`ask` p50 0.80x, p99 about 1.05x: docs/results/ort-spinning.md). Each session parks its
/// threads when a run ends ([`FORCE_SPINNING_STOP`]): a cascade runs two sessions one after the
/// other, and the first one's idle spinning threads took the cores from the second (an MPNet
/// rerank of 2 sentences after the student cost 130 ms instead of ~50;
/// docs/results/default-model.md).
fn spinning() -> bool {
    std::env::var(SPIN_ENV).map_or(true, |v| v != "0")
}

/// The runtime, then `dir`'s encoder config and tokenizer, and a session on `graph` (every
/// converted model directory's loading).
pub(crate) fn open_graph(
    dir: &Path,
    graph: &Path,
) -> Result<(ansel_bert::BertConfig, PairTokenizer, Session)> {
    // The runtime first: without it nothing else matters, and its error says how to fetch it.
    runtime()?;
    let config = ansel_bert::BertConfig::read(&dir.join("config.json"))?;
    let tokenizer = PairTokenizer::read_for(&dir.join("tokenizer.json"), config.family().layout())?;
    let session = open_session(graph, threads())?;
    Ok((config, tokenizer, session))
}

/// An ONNX Runtime session on `path` with `threads` intra-op threads and all graph
/// optimisations (GELU/LayerNorm fusions, constant folding of the float16 casts).
pub fn open_session(path: &Path, threads: usize) -> Result<Session> {
    let (_, env) = runtime()?;
    if !path.is_file() {
        return Err(ModelError::Format {
            path: path.to_path_buf(),
            message: "missing".into(),
        });
    }
    let err = |e: String| ModelError::Format {
        path: path.to_path_buf(),
        message: e,
    };
    Session::builder(env)
        .map_err(|e| err(e.to_string()))?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(|e| err(e.to_string()))?
        .with_intra_threads(threads)
        .map_err(|e| err(e.to_string()))?
        .with_inter_threads(1)
        .map_err(|e| err(e.to_string()))?
        .with_intra_op_spinning(spinning())
        .map_err(|e| err(e.to_string()))?
        .with_config_entry(FORCE_SPINNING_STOP, "1")
        .map_err(|e| err(e.to_string()))?
        .commit_from_file(path)
        .map_err(|e| err(e.to_string()))
}

/// Runs one padded batch; returns one logit per row.
pub fn run_batch(session: &mut Session, items: &[&Encoded], pad: i64) -> Result<Vec<f32>> {
    let (n, len, ids, types, mask) = padded(items, pad);
    run_arrays(session, n, len, ids, types, mask)
}

/// `items` padded with `pad` into `[n, len]` id, segment and mask arrays (row-major).
pub(crate) fn padded(items: &[&Encoded], pad: i64) -> (usize, usize, Vec<i64>, Vec<i64>, Vec<i64>) {
    let len = items.iter().map(|e| e.len()).max().unwrap_or(1).max(1);
    let n = items.len();
    let mut ids = vec![pad; n * len];
    let mut types = vec![0i64; n * len];
    let mut mask = vec![0i64; n * len];
    for (row, e) in items.iter().enumerate() {
        let at = row * len;
        ids[at..at + e.len()].copy_from_slice(&e.ids);
        types[at..at + e.len()].copy_from_slice(&e.types);
        mask[at..at + e.len()].iter_mut().for_each(|m| *m = 1);
    }
    (n, len, ids, types, mask)
}

/// Runs `[n, len]` id, segment and mask arrays (row-major) through the graph.
pub fn run_arrays(
    session: &mut Session,
    n: usize,
    len: usize,
    ids: Vec<i64>,
    types: Vec<i64>,
    mask: Vec<i64>,
) -> Result<Vec<f32>> {
    let logits = run_output(session, [n, len], ids, types, mask, "logits")?;
    if logits.len() != n {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!(
                "the graph gives {} logits for {n} pairs; ansel scores with one logit per pair \
                 (a cross-encoder with num_labels = 1)",
                logits.len()
            ),
        });
    }
    Ok(logits)
}

/// Runs `[n, len]` arrays through the graph and returns its `output`, flat.
pub(crate) fn run_output(
    session: &mut Session,
    [n, len]: [usize; 2],
    ids: Vec<i64>,
    types: Vec<i64>,
    mask: Vec<i64>,
    output: &str,
) -> Result<Vec<f32>> {
    let backend = |e: ort::Error| ModelError::Backend(format!("onnxruntime: {e}"));
    let shape = [n as i64, len as i64];
    // Families without token types (MPNet, RoBERTa) have no `token_type_ids` input.
    let typed = session
        .inputs()
        .iter()
        .any(|input| input.name() == "token_type_ids");
    let mut inputs = ort::inputs![
        "input_ids" => Tensor::from_array((shape, ids)).map_err(backend)?,
        "attention_mask" => Tensor::from_array((shape, mask)).map_err(backend)?,
    ];
    if typed {
        inputs.push((
            "token_type_ids".into(),
            Tensor::from_array((shape, types)).map_err(backend)?.into(),
        ));
    }
    let outputs = session.run(inputs).map_err(backend)?;
    let (_, values) = outputs[output]
        .try_extract_tensor::<f32>()
        .map_err(backend)?;
    Ok(values.to_vec())
}

/// Pairs an int8 graph runs together: one by default. Such a graph quantizes activations with
/// one scale per tensor, so a pair batched with others would get a score that depends on them
/// (by up to 1.9 logits for MPNet): one pair a run keeps every pair's score its own
/// (docs/results/int8-batching.md).
pub(crate) fn int8_batch(model: &str) -> Result<usize> {
    match std::env::var(INT8_BATCH_ENV) {
        Err(_) => Ok(1),
        Ok(value) => value
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| ModelError::Unsupported {
                model: model.into(),
                message: format!("{INT8_BATCH_ENV}={value:?}: not a number of pairs >= 1"),
            }),
    }
}

/// Operators that quantize activations at run time (ONNX Runtime's and optimum's int8 exports),
/// whose output for a pair depends on the other pairs of its batch.
const ACTIVATION_QUANTIZERS: [&str; 5] = [
    "DynamicQuantizeMatMul",
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "QLinearMatMul",
    "QuantizeLinear",
];

/// Whether the graph at `path` quantizes activations (a model exported elsewhere has no card to
/// say so). Only the nodes' operator names are decoded; the weights are skipped.
fn quantizes_activations(path: &Path) -> Result<bool> {
    use prost::Message as _;
    let bytes = std::fs::read(path).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    let model = proto::ModelOps::decode(bytes.as_slice()).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: format!("not an ONNX model: {e}"),
    })?;
    Ok(model
        .graph
        .iter()
        .flat_map(|g| &g.node)
        .any(|n| ACTIVATION_QUANTIZERS.contains(&n.op_type.as_str())))
}

/// A converted model directory served as a [`Ranker`].
pub struct OnnxRanker {
    name: String,
    session: Mutex<Session>,
    tokenizer: PairTokenizer,
    encoder: CrossEncoderSettings,
    /// Pairs run through the graph together.
    batch_size: usize,
}

/// Where a cross-encoder exported to ONNX by other tools keeps its graph in `dir`:
/// `model.onnx` (optimum) or `onnx/model.onnx` (sentence-transformers' ONNX backend).
pub fn export_graph(dir: &Path) -> Option<PathBuf> {
    [dir.join(ONNX_FILE), dir.join("onnx").join(ONNX_FILE)]
        .into_iter()
        .find(|path| path.is_file())
}

impl OnnxRanker {
    /// Loads a directory written by [`convert`] (`ansel quantize`).
    pub fn load(dir: &Path, card: &ModelCard) -> Result<OnnxRanker> {
        let settings: OnnxSettings = card_settings(dir, card)?;
        let mut ranker = OnnxRanker::open(
            dir,
            &dir.join(ONNX_FILE),
            card.name.clone(),
            settings.encoder,
        )?;
        if settings.precision == Precision::Int8 {
            ranker.batch_size = int8_batch(&card.name)?;
        }
        Ok(ranker)
    }

    /// How many pairs run through the graph together: one for a graph that quantizes its
    /// activations (unless [`INT8_BATCH_ENV`] says otherwise), else the card's batch size.
    pub fn pairs_per_run(&self) -> usize {
        self.batch_size
    }

    /// Loads a cross-encoder exported to ONNX by other tools (no ansel card): the graph at
    /// [`export_graph`], `tokenizer.json` and `config.json` beside it; inputs `input_ids`,
    /// `attention_mask` and, when the family has them, `token_type_ids`; output `logits`, one
    /// per pair, with [`CrossEncoderSettings::for_uncarded`].
    pub fn load_export(dir: &Path) -> Result<OnnxRanker> {
        let graph = export_graph(dir).ok_or_else(|| ModelError::Format {
            path: dir.join(ONNX_FILE),
            message: "missing (nor onnx/model.onnx)".into(),
        })?;
        let config = ansel_bert::BertConfig::read(&dir.join("config.json"))?;
        let encoder = CrossEncoderSettings::for_uncarded(&config);
        let mut ranker = OnnxRanker::open(dir, &graph, ansel_bert::dir_name(dir), encoder)?;
        if quantizes_activations(&graph)? {
            ranker.batch_size = int8_batch(&ranker.name)?;
        }
        {
            let session = ranker.session.lock().unwrap_or_else(|p| p.into_inner());
            let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
            let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
            for (want, found, what) in [
                ("input_ids", inputs.contains(&"input_ids"), "input"),
                (
                    "attention_mask",
                    inputs.contains(&"attention_mask"),
                    "input",
                ),
                ("logits", outputs.contains(&"logits"), "output"),
            ] {
                if !found {
                    return Err(ModelError::Format {
                        path: graph.clone(),
                        message: format!(
                            "the graph has no {what} {want:?} (inputs {inputs:?}, outputs {outputs:?}); \
                             ansel reads cross-encoders exported with input_ids, attention_mask and \
                             optional token_type_ids, giving logits"
                        ),
                    });
                }
            }
        }
        Ok(ranker)
    }

    /// The runtime, the tokenizer of `dir` and a session on `graph`.
    fn open(
        dir: &Path,
        graph: &Path,
        name: String,
        encoder: CrossEncoderSettings,
    ) -> Result<OnnxRanker> {
        let (_, tokenizer, session) = open_graph(dir, graph)?;
        Ok(OnnxRanker {
            name,
            session: Mutex::new(session),
            tokenizer,
            batch_size: encoder.batch_size.max(1),
            encoder,
        })
    }

    pub fn tokenizer(&self) -> &PairTokenizer {
        &self.tokenizer
    }

    /// Scores encoded pairs in batches, shortest first to pad little; input order kept.
    pub fn score_pairs(&self, items: &[Encoded]) -> Result<Vec<f32>> {
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        by_length(items, Encoded::len, self.batch_size, |batch| {
            run_batch(&mut session, batch, self.tokenizer.pad)
        })
    }
}

impl Ranker for OnnxRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn tokenize(
        &self,
        text: &str,
        pair: Option<&str>,
        special: bool,
    ) -> Option<Result<Vec<ansel_model::Token>>> {
        Some(self.tokenizer.tokens(text, pair, special))
    }

    /// Each question's pairs are batched among themselves (an int8 graph's pairs one at a time):
    /// an int8 graph quantizes activations with one scale per tensor, so a pair's score would
    /// otherwise depend on the other pairs scored beside it.
    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        questions
            .iter()
            .map(|q| {
                let items = q
                    .candidates
                    .iter()
                    .map(|c| {
                        encode_candidate(
                            &self.tokenizer,
                            q,
                            c,
                            self.encoder.input,
                            self.encoder.max_len,
                        )
                    })
                    .collect::<Result<Vec<_>>>()?;
                self.score_pairs(&items)
            })
            .collect()
    }
}
