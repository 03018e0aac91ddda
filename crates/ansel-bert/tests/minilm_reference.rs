//! Checks the encoder and tokenizer against PyTorch + Hugging Face transformers on the real
//! all-MiniLM-L6-v2 weights (fetched by scripts/fetch-models.sh into vendor/models; skipped
//! when absent). Reference values were computed with transformers 4.57.6 / torch 2.13.0:
//! `AutoTokenizer` ids and the mean of `AutoModel(...).last_hidden_state` (bench/throughput.py
//! recomputes and compares the whole vector on every benchmark run).

use ansel_bert::{Batch, BertConfig, CrossEncoder, Encoded, PairTokenizer};
use std::path::PathBuf;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near Wikipédia's headquarters.";
const IDS: [i64; 17] = [
    101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 2379, 16948, 1005, 1055, 4075,
    1012, 102,
];
const EMBEDDING_FIRST8: [f64; 8] = [
    0.190436, 0.094472, 0.129203, 0.246349, 0.111117, -0.239768, -0.017365, -0.255766,
];
const EMBEDDING_NORM: f64 = 4.605693;

fn model_dir() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vendor/models/all-minilm-l6-v2");
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} not fetched (bash scripts/fetch-models.sh)",
            dir.display()
        );
        None
    }
}

#[test]
fn tokenizer_reproduces_hugging_face_ids() {
    let Some(dir) = model_dir() else { return };
    let tok = PairTokenizer::read(&dir.join("tokenizer.json")).unwrap();
    assert_eq!(tok.encode_single(SENTENCE).unwrap(), IDS);
    let pair = tok
        .encode(
            "who wrote hamlet?",
            &["It was written by William Shakespeare in 1600."],
            128,
        )
        .unwrap();
    assert_eq!(
        pair.ids,
        [
            101, 2040, 2626, 8429, 1029, 102, 2009, 2001, 2517, 2011, 2520, 8101, 1999, 14883,
            1012, 102
        ]
    );
    assert_eq!(pair.types, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
}

#[test]
fn minilm_embedding_matches_pytorch_to_1e_4() {
    let Some(dir) = model_dir() else { return };
    ansel_torch::init(2, 0);
    let config = BertConfig::read(&dir.join("config.json")).unwrap();
    let (model, initialised) = CrossEncoder::load(config, &dir.join("model.safetensors")).unwrap();
    assert_eq!(
        initialised,
        ["classifier.weight", "classifier.bias"],
        "only the head is new"
    );
    let e = Encoded {
        ids: IDS.to_vec(),
        types: vec![0; IDS.len()],
    };
    // Padding must not change the result: the sentence padded to 40 in a batch with another.
    let other = Encoded {
        ids: vec![101, 2040, 102],
        types: vec![0; 3],
    };
    let batch = Batch::padded_to(&[&other, &e], 0, 40);
    let emb = ansel_torch::tch::no_grad(|| model.mean_pooled(&batch)).get(1);
    let got: Vec<f64> = Vec::<f64>::try_from(emb.to_kind(ansel_torch::tch::Kind::Double)).unwrap();
    for (i, (g, r)) in got.iter().zip(EMBEDDING_FIRST8).enumerate() {
        assert!((g - r).abs() < 1e-4, "dim {i}: {g} vs {r}");
    }
    let norm = got.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((norm - EMBEDDING_NORM).abs() < 1e-4, "norm {norm}");
}
