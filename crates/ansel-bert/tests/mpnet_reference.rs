//! Checks the MPNet family (relative position bias, RoBERTa-style positions and pair layout)
//! against Hugging Face transformers 4.57.6 / torch 2.13.0 on the real all-mpnet-base-v2
//! weights (fetched by scripts/fetch-mpnet.sh into vendor/models; skipped when absent).
//! `bench/.venv/bin/python bench/mpnet_reference.py vendor/models/all-mpnet-base-v2` prints
//! the reference values below: `AutoTokenizer` ids and the mean of `AutoModel(...).last_hidden_state`.

use ansel_bert::{read_model_dir, Batch, Encoded, PairLayout};
use ansel_torch::tch::{self, Kind};
use std::path::PathBuf;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near Wikipédia's headquarters.";
const IDS: [i64; 17] = [
    0, 2000, 4252, 2833, 4423, 14527, 2062, 2000, 13975, 3903, 2383, 16952, 1009, 1059, 4079, 1016,
    2,
];
const PAIR: [i64; 17] = [
    0, 2044, 2630, 8433, 1033, 2, 2, 2013, 2005, 2521, 2015, 2524, 8105, 2003, 14887, 1016, 2,
];
const SENTENCE_FIRST8: [f64; 8] = [
    0.046577, -0.000949, -0.011068, -0.019024, 0.085074, 0.0785, 0.060853, 0.073973,
];
const SENTENCE_NORM: f64 = 2.612053;
/// 282 tokens: relative distances past the bias' 128-token horizon.
const LONG_FIRST8: [f64; 8] = [
    0.024902, -0.006972, -0.0737, 0.109654, -0.219026, -0.05261, 0.018636, 0.09335,
];
const LONG_NORM: f64 = 2.718678;

fn model_dir() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vendor/models/all-mpnet-base-v2");
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} not fetched (bash scripts/fetch-mpnet.sh)",
            dir.display()
        );
        None
    }
}

fn long_text() -> String {
    (0..40)
        .map(|i| format!("word{} and the number {i}.", i % 17))
        .collect::<Vec<_>>()
        .join(" ")
}

fn assert_close(got: &tch::Tensor, first8: [f64; 8], norm: f64, what: &str) {
    let got: Vec<f64> = Vec::<f64>::try_from(got.to_kind(Kind::Double)).unwrap();
    for (i, (g, r)) in got.iter().zip(first8).enumerate() {
        assert!((g - r).abs() < 1e-4, "{what} dim {i}: {g} vs {r}");
    }
    let n = got.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!((n - norm).abs() < 1e-4, "{what} norm {n} vs {norm}");
}

#[test]
fn mpnet_tokens_and_embeddings_match_transformers_to_1e_4() {
    let Some(dir) = model_dir() else { return };
    ansel_torch::init(2, 0);
    let (model, tok, initialised) = read_model_dir(&dir).unwrap();
    assert_eq!(model.family().layout(), PairLayout::Roberta);
    assert_eq!(
        initialised,
        ["classifier.weight", "classifier.bias"],
        "only the head is new (the pooler loads as the head's dense layer)"
    );
    assert_eq!(tok.encode_single(SENTENCE).unwrap(), IDS);
    let pair = tok
        .encode(
            "who wrote hamlet?",
            &["It was written by William Shakespeare in 1600."],
            128,
        )
        .unwrap();
    assert_eq!(pair.ids, PAIR);

    let single = Encoded {
        types: vec![0; IDS.len()],
        ids: IDS.to_vec(),
    };
    let long_ids = tok.encode_single(&long_text()).unwrap();
    assert_eq!(long_ids.len(), 282);
    let long = Encoded {
        types: vec![0; long_ids.len()],
        ids: long_ids,
    };
    // Both in one batch: the short one padded to 282 must not change (padding-aware positions).
    let batch = Batch::new(&[&single, &long], tok.pad);
    let pooled = tch::no_grad(|| model.mean_pooled(&batch));
    assert_close(&pooled.get(0), SENTENCE_FIRST8, SENTENCE_NORM, "sentence");
    assert_close(&pooled.get(1), LONG_FIRST8, LONG_NORM, "long");
}

#[test]
fn mpnet_saves_under_transformers_names_and_loads_back_the_same() {
    let Some(dir) = model_dir() else { return };
    ansel_torch::init(2, 0);
    let (model, tok, _) = read_model_dir(&dir).unwrap();
    let out = tempfile::tempdir().unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(dir.join(file), out.path().join(file)).unwrap();
    }
    let weights = out.path().join("model.safetensors");
    model.save(&weights, Kind::Float).unwrap();
    let names: Vec<String> = tch::Tensor::read_safetensors(&weights)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for name in [
        "mpnet.encoder.layer.0.attention.attn.q.weight",
        "mpnet.encoder.relative_attention_bias.weight",
        "classifier.dense.weight",
        "classifier.out_proj.weight",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not saved");
    }
    let (loaded, _, initialised) = read_model_dir(out.path()).unwrap();
    assert!(initialised.is_empty(), "{initialised:?}");
    let e = tok
        .encode("who wrote hamlet?", &["Shakespeare wrote it."], 64)
        .unwrap();
    let batch = Batch::new(&[&e], tok.pad);
    let (a, b) = tch::no_grad(|| (model.logits(&batch, false), loaded.logits(&batch, false)));
    assert_eq!(f64::try_from(a).unwrap(), f64::try_from(b).unwrap());
}
