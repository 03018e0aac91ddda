//! Test fixtures shared by the crates built on the encoder (ansel-bert's own tests and
//! ansel-reader's): a tiny WordPiece tokenizer and a tiny random BERT directory, so that no
//! test needs downloaded files. Not part of the API proper.

use crate::{BertConfig, CrossEncoder};
use ansel_data::{Candidate, DocContext, Question};
use ansel_torch::tch::{self, Kind};
use std::path::{Path, PathBuf};

/// The vocabulary of [`tiny_tokenizer_json`], in id order.
pub const TINY_WORDS: [&str; 25] = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "who",
    "wrote",
    "hamlet",
    "?",
    "shakespeare",
    "it",
    "was",
    "written",
    "by",
    "william",
    "a",
    "play",
    "the",
    "is",
    "##s",
    "tragedy",
    ".",
    "denmark",
    "in",
    "set",
];

/// RoBERTa-layout special tokens after [`TINY_WORDS`] (ids 25..29), for tiny MPNet and
/// RoBERTa models.
pub const TINY_ROBERTA_SPECIALS: [&str; 4] = ["<s>", "<pad>", "</s>", "<unk>"];

/// A WordPiece tokenizer.json over a handful of words, for tests that must not need
/// downloaded files.
pub fn tiny_tokenizer_json() -> String {
    let vocab: serde_json::Map<String, serde_json::Value> = TINY_WORDS
        .iter()
        .chain(&TINY_ROBERTA_SPECIALS)
        .enumerate()
        .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
        .collect();
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                        "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
    })
    .to_string()
}

/// A tiny random BERT (seeded) written as a Hugging Face directory `dir/base`, with the
/// given dropout; panics on I/O errors (tests only).
pub fn tiny_base(dir: &Path, dropout: f64) -> PathBuf {
    tiny_base_with(dir, BertConfig::tiny(TINY_WORDS.len() as i64), dropout)
}

/// [`tiny_base`] of the MPNet family: relative position bias (8 buckets), RoBERTa-style
/// positions and pair layout over the same words.
pub fn tiny_mpnet_base(dir: &Path, dropout: f64) -> PathBuf {
    let mut config = BertConfig::tiny((TINY_WORDS.len() + TINY_ROBERTA_SPECIALS.len()) as i64);
    config.model_type = Some("mpnet".into());
    config.relative_attention_num_buckets = Some(8);
    config.pad_token_id = Some(TINY_WORDS.len() as i64 + 1);
    config.max_position_embeddings = 96;
    config.layer_norm_eps = 1e-5;
    tiny_base_with(dir, config, dropout)
}

/// [`tiny_base`] of the RoBERTa family (`model_type` "roberta" or "xlm-roberta"): one token
/// type, RoBERTa-style positions and pair layout over the same words.
pub fn tiny_roberta_base(dir: &Path, dropout: f64, model_type: &str) -> PathBuf {
    let mut config = BertConfig::tiny((TINY_WORDS.len() + TINY_ROBERTA_SPECIALS.len()) as i64);
    config.model_type = Some(model_type.into());
    config.type_vocab_size = 1;
    config.pad_token_id = Some(TINY_WORDS.len() as i64 + 1);
    config.max_position_embeddings = 96;
    config.layer_norm_eps = 1e-5;
    tiny_base_with(dir, config, dropout)
}

fn tiny_base_with(dir: &Path, mut config: BertConfig, dropout: f64) -> PathBuf {
    let base = dir.join("base");
    std::fs::create_dir_all(&base).unwrap();
    config.hidden_dropout_prob = dropout;
    config.attention_probs_dropout_prob = dropout;
    std::fs::write(
        base.join("config.json"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    std::fs::write(base.join("tokenizer.json"), tiny_tokenizer_json()).unwrap();
    tch::manual_seed(3);
    let model = CrossEncoder::random(config).unwrap();
    model
        .save(&base.join("model.safetensors"), Kind::Float)
        .unwrap();
    base
}

/// Multiplies the weights of the tiny model in `base` by 20 (LayerNorms aside) and saves them:
/// BERT's initialisation (std 0.02) leaves a tiny model's outputs nearly equal, and weights
/// with std 0.4 spread them so that an order and a tolerance mean something.
pub fn spread_weights(base: &Path) {
    let (model, _, _) = crate::read_model_dir(base).unwrap();
    tch::no_grad(|| {
        for (name, t) in model.params() {
            if name.ends_with(".weight") && !name.contains("LayerNorm") {
                let _ = t.shallow_clone().g_mul_scalar_(20.0);
            }
        }
    });
    model
        .save(&base.join("model.safetensors"), Kind::Float)
        .unwrap();
}

/// Holds a process-wide lock for the test's lifetime: libtorch's RNG (seeded by a trainer,
/// drawn by dropout and initialisation) is global, so every test that seeds or draws from it
/// (training, `tiny_base`) holds this lock: one that re-seeds mid-way through another's
/// training run makes two runs that should match differ.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asserts that two runs' checkpoints (`OUT/checkpoint/FILE` for each of `files`) hold the
/// same tensors to 1e-5: a run killed and resumed against an uninterrupted one.
pub fn assert_same_checkpoints(a: &Path, b: &Path, files: &[&str]) {
    for file in files {
        let read = |out: &Path| {
            ansel_torch::read_tensors(&out.join(crate::run::CHECKPOINT).join(file)).unwrap()
        };
        let (x, y) = (read(a), read(b));
        assert_eq!(x.len(), y.len(), "{file}: tensor counts differ");
        for (name, t) in &x {
            let diff = (t - &y[name]).abs().max().double_value(&[]);
            assert!(diff < 1e-5, "{file} {name} differs by {diff}");
        }
    }
}

/// A question whose candidates are, in order, the sentences of one document (WikiQA form):
/// each candidate's previous and next sentence are its neighbours in `cands`.
pub fn question(id: &str, text: &str, cands: &[(&str, bool)]) -> Question {
    Question {
        id: id.into(),
        text: text.into(),
        candidates: cands
            .iter()
            .enumerate()
            .map(|(i, (t, l))| Candidate {
                id: i.to_string(),
                text: t.to_string(),
                label: Some(*l),
                context: Some(DocContext {
                    prev: i.checked_sub(1).map(|p| cands[p].0.to_string()),
                    next: cands.get(i + 1).map(|(n, _)| n.to_string()),
                    ..Default::default()
                }),
            })
            .collect(),
    }
}
