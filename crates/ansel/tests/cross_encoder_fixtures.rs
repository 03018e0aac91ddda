//! The cross-encoders users bring, in the layouts they bring them, against the numbers the
//! reference implementations computed for them: tiny random BERT, RoBERTa, XLM-RoBERTa and MPNet
//! Hugging Face directories and two ONNX exports (`model.onnx`, `onnx/model.onnx`), made by
//! `scripts/make-fixtures.sh` (transformers on torch, onnxruntime) and committed under
//! tests/fixtures/cross-encoders. Each must load through the card-less path `--model DIR` takes,
//! tokenize every pair to the same ids, and score it within 1e-4 of the reference logit: on
//! libtorch, on ONNX Runtime, and as ansel's own ONNX graph (`ansel quantize --precision fp32`).

use ansel_data::{Candidate, Question};
use ansel_model::Ranker;
use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::{ansel, ok};

const TOLERANCE: f32 = 1e-4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cross-encoders")
        .join(name)
}

/// (query, passage, token ids, logit) of each reference pair.
fn reference(dir: &Path) -> Vec<(String, String, Vec<i64>, f32)> {
    let text = std::fs::read(dir.join("reference.json")).unwrap();
    let value: Value = serde_json::from_slice(&text).unwrap();
    value["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["query"].as_str().unwrap().to_string(),
                p["passage"].as_str().unwrap().to_string(),
                serde_json::from_value(p["input_ids"].clone()).unwrap(),
                p["logit"].as_f64().unwrap() as f32,
            )
        })
        .collect()
}

/// One question per reference pair (so that each logit is the pair's own), scored in one call:
/// the batch pads the shorter pairs, which must not change their logits.
fn questions(pairs: &[(String, String, Vec<i64>, f32)]) -> Vec<Question> {
    pairs
        .iter()
        .enumerate()
        .map(|(i, (query, passage, _, _))| Question {
            id: format!("q{i}"),
            text: query.clone(),
            candidates: vec![Candidate {
                id: "c".into(),
                text: passage.clone(),
                label: None,
                context: None,
            }],
        })
        .collect()
}

/// The tokens the ranker of `model` (a directory of the fixture `dir` or converted from it)
/// reads for each pair (`/tokenize`'s view), and the input ansel encodes for scoring, both
/// against the reference ids.
fn check_ids(name: &str, dir: &Path, model: &Path, ranker: &dyn Ranker) {
    let config = ansel_bert::BertConfig::read(&model.join("config.json")).unwrap();
    let tokenizer = ansel_bert::PairTokenizer::read_for(
        &model.join("tokenizer.json"),
        config.family().layout(),
    )
    .unwrap();
    for (query, passage, ids, _) in reference(dir) {
        let encoded = tokenizer.encode(&query, &[&passage], 512).unwrap();
        assert_eq!(encoded.ids, ids, "{name}: ids of ({query:?}, {passage:?})");
        let tokens = ranker
            .tokenize(&query, Some(&passage), true)
            .expect("a transformer has a tokenizer")
            .unwrap();
        let token_ids: Vec<i64> = tokens.iter().map(|t| i64::from(t.id)).collect();
        assert_eq!(
            token_ids, ids,
            "{name}: tokenize of ({query:?}, {passage:?})"
        );
    }
}

/// The largest difference between the ranker's logits and the reference's (checked < 1e-4).
fn check_logits(name: &str, dir: &Path, ranker: &dyn Ranker, backend: &str) -> f32 {
    let pairs = reference(dir);
    let scores = ranker.score_all(&questions(&pairs)).unwrap();
    let mut worst = 0f32;
    for ((query, passage, _, logit), score) in pairs.iter().zip(&scores) {
        let d = (score[0] - logit).abs();
        assert!(
            d < TOLERANCE,
            "{name} on {backend}: ({query:?}, {passage:?}) scores {}, reference {logit} (diff {d})",
            score[0]
        );
        worst = worst.max(d);
    }
    eprintln!("{name:<18} {backend:<22} max |logit - reference| = {worst:.2e}");
    worst
}

fn load(dir: &Path) -> Box<dyn Ranker> {
    ansel::models::resolve(dir.to_str().unwrap(), &[]).unwrap()
}

fn hugging_face_directory(name: &str, family: &str) {
    let dir = fixture(name);
    let config = ansel_bert::BertConfig::read(&dir.join("config.json")).unwrap();
    assert_eq!(config.family().model_type(), family);
    let ranker = load(&dir);
    check_ids(name, &dir, &dir, ranker.as_ref());
    check_logits(name, &dir, ranker.as_ref(), "libtorch");
    // ansel's own graph of the same directory, converted as a user would.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join(format!("{name}-onnx"));
    ok(&ansel(&[
        "quantize",
        "--model",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--precision",
        "fp32",
    ]));
    let converted = load(&out);
    check_ids(name, &dir, &out, converted.as_ref());
    check_logits(name, &dir, converted.as_ref(), "ansel's graph (ORT)");
}

fn onnx_export(name: &str, graph: &str) {
    let dir = fixture(name);
    assert!(
        dir.join(graph).is_file(),
        "{name} keeps its graph at {graph}"
    );
    let ranker = load(&dir);
    check_ids(name, &dir, &dir, ranker.as_ref());
    check_logits(name, &dir, ranker.as_ref(), "ONNX Runtime");
}

#[test]
fn bert_directory() {
    hugging_face_directory("bert", "bert");
}

#[test]
fn roberta_directory() {
    hugging_face_directory("roberta", "roberta");
}

#[test]
fn xlm_roberta_directory() {
    hugging_face_directory("xlm-roberta", "xlm-roberta");
}

#[test]
fn mpnet_directory() {
    hugging_face_directory("mpnet", "mpnet");
}

#[test]
fn bert_export_at_model_onnx() {
    onnx_export("bert-onnx", "model.onnx");
}

#[test]
fn xlm_roberta_export_at_onnx_model_onnx() {
    onnx_export("xlm-roberta-onnx", "onnx/model.onnx");
}
