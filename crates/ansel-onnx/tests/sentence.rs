//! The sentence-encoder graph (a cosine bi-encoder converted to ONNX) against the tch bi-encoder
//! it came from: vectors, cosine scores, and the real MiniLM-L6 in int8.

use ansel_bert::testing::{serial, tiny_base, tiny_mpnet_base};
use ansel_bert::{BiEncoderRanker, BI_KIND};
use ansel_data::{Candidate, Question};
use ansel_model::{ModelCard, Ranker};
use ansel_onnx::{convert, sentence::cosine, Precision, SentenceRanker, SENTENCE_KIND};
use std::path::{Path, PathBuf};

const TEXTS: [&str; 4] = [
    "it was written by william shakespeare .",
    "hamlet is a tragedy .",
    "the play is set in denmark .",
    "who ?",
];

/// A cosine bi-encoder card over the encoder in `base` (weights spread so vectors differ).
fn cosine_bi_encoder(base: PathBuf) -> PathBuf {
    ansel_bert::testing::spread_weights(&base);
    ModelCard::new(
        BI_KIND,
        "tiny-cosine",
        serde_json::json!({"scoring": "cosine", "max_len": 32, "batch_size": 2}),
    )
    .write(&base)
    .unwrap();
    base
}

fn question() -> Question {
    Question {
        id: "q".into(),
        text: "who wrote hamlet ?".into(),
        candidates: TEXTS
            .iter()
            .enumerate()
            .map(|(i, t)| Candidate {
                id: format!("c{i}"),
                text: t.to_string(),
                label: Some(i == 0),
                context: None,
            })
            .collect(),
    }
}

fn load(dir: &Path) -> SentenceRanker {
    let card = ModelCard::read(dir).unwrap();
    assert_eq!(card.kind, SENTENCE_KIND);
    SentenceRanker::load(dir, &card).unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn fp32_graphs_give_the_tch_vectors_and_int8_keeps_their_direction() {
    let _guard = serial();
    for (family, base) in [
        ("bert", tiny_base as fn(&Path, f64) -> PathBuf),
        ("mpnet", tiny_mpnet_base),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let src = cosine_bi_encoder(base(tmp.path(), 0.0));
        let card = ModelCard::read(&src).unwrap();
        let reference = BiEncoderRanker::load(&src, &card).unwrap();
        let expected = reference.encode_uncached(&TEXTS).unwrap();
        let expected_scores = reference.score(&question()).unwrap();
        for precision in [Precision::Fp32, Precision::Int8] {
            let out = tmp.path().join(format!("{precision:?}"));
            let card = convert(&src, &out, precision, "tiny-sentence").unwrap();
            assert_eq!(card.kind, SENTENCE_KIND);
            assert_eq!(card.config["source_name"], "tiny-cosine");
            let ranker = load(&out);
            let vectors = ranker.encode(&TEXTS).unwrap();
            for (v, e) in vectors.iter().zip(&expected) {
                match precision {
                    Precision::Fp32 => {
                        let d = max_abs_diff(v, e);
                        assert!(d < 1e-4, "{family} fp32 vector differs by {d}");
                    }
                    Precision::Int8 => {
                        let c = cosine(v, e);
                        assert!(c > 0.95, "{family} int8 vector at cosine {c} to tch's");
                    }
                }
            }
            let scores = ranker.score(&question()).unwrap();
            let tolerance = if precision == Precision::Fp32 {
                1e-4
            } else {
                0.1
            };
            let d = max_abs_diff(&scores, &expected_scores);
            assert!(
                d < tolerance,
                "{family} {precision:?} cosines differ by {d}"
            );
        }
    }
}

#[test]
fn a_classifier_bi_encoder_is_refused() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = cosine_bi_encoder(tiny_base(tmp.path(), 0.0));
    ModelCard::new(
        BI_KIND,
        "tiny-sedan",
        serde_json::json!({"scoring": "classifier", "max_len": 32}),
    )
    .write(&src)
    .unwrap();
    let err = convert(&src, &tmp.path().join("out"), Precision::Int8, "x")
        .expect_err("refused")
        .to_string();
    assert!(err.contains("config.scoring"), "{err}");
    assert!(!tmp.path().join("out").exists(), "nothing written");
}

/// The pretrained MiniLM-L6 sentence encoder (scripts/fetch-models.sh) in int8: every vector
/// within cosine 0.99 of libtorch's float32 one.
#[test]
fn the_minilm_sentence_encoder_keeps_its_vectors_in_int8() {
    let _guard = serial();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !encoder.join("model.safetensors").is_file() {
        panic!(
            "{} is missing: run `bash scripts/fetch-models.sh`",
            encoder.display()
        );
    }
    let src = root.join("models/minilm-l6-cosine");
    let card = ModelCard::read(&src).unwrap();
    let reference = BiEncoderRanker::load(&src, &card).unwrap();
    let texts = [
        "How tall is the Eiffel Tower?",
        "The tower is 330 metres tall, about the height of an 81-storey building.",
        "Penicillin was discovered by Alexander Fleming in 1928.",
        "cheap flights london paris",
        "In 1822 the French physicist Augustin Fresnel invented a lens made of concentric rings of glass.",
    ];
    let expected = reference.encode_uncached(&texts).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    convert(
        &src,
        &tmp.path().join("int8"),
        Precision::Int8,
        "minilm-int8",
    )
    .unwrap();
    let vectors = load(&tmp.path().join("int8")).encode(&texts).unwrap();
    for ((text, v), e) in texts.iter().zip(&vectors).zip(&expected) {
        let c = cosine(v, e);
        assert!(c >= 0.99, "{text:?}: int8 vector at cosine {c} to float32");
    }
    // Batched as indexing runs it: each text's activations quantized with its batch's scale.
    let batched = load(&tmp.path().join("int8"))
        .with_batch_size(32)
        .encode(&texts)
        .unwrap();
    for ((text, v), e) in texts.iter().zip(&batched).zip(&expected) {
        let c = cosine(v, e);
        assert!(
            c >= 0.99,
            "{text:?}: batched int8 vector at cosine {c} to float32"
        );
    }
    assert_ne!(batched, vectors, "the batch shares its quantization scales");
}
