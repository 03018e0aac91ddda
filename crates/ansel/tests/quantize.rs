//! `ansel quantize` end to end: a tiny random cross-encoder converted to int8 and fp32 ONNX
//! graphs that `ansel eval` and `ansel rank` load by their card's kind.

use std::path::{Path, PathBuf};

mod common;
use common::{ansel, ok};

fn tiny_cross_encoder(dir: &Path) -> PathBuf {
    let base = ansel_bert::testing::tiny_base(dir, 0.0);
    let card = ansel_model::ModelCard::new(
        ansel_bert::KIND,
        "tiny",
        serde_json::json!({"input": "pair", "max_len": 32, "batch_size": 2}),
    );
    card.write(&base).unwrap();
    base
}

const DATA: &str = r#"{"id": "q1", "question": "who wrote hamlet ?", "candidates": [{"text": "it was written by william shakespeare .", "label": 1}, {"text": "hamlet is a tragedy .", "label": 0}, {"text": "the play is set in denmark .", "label": 0}]}
{"id": "q2", "question": "where is hamlet set ?", "candidates": [{"text": "the play is set in denmark .", "label": 1}, {"text": "shakespeare wrote a play .", "label": 0}]}
"#;

#[test]
fn quantized_models_load_in_eval_and_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_cross_encoder(tmp.path());
    let data = tmp.path().join("data.jsonl");
    std::fs::write(&data, DATA).unwrap();
    for precision in ["int8", "fp32"] {
        let out = tmp.path().join(precision);
        ok(&ansel(&[
            "quantize",
            "--model",
            src.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--precision",
            precision,
        ]));
        let card: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("model.json")).unwrap()).unwrap();
        assert_eq!(card["kind"], ansel_onnx::KIND);
        assert_eq!(card["config"]["precision"], precision);
        let report: serde_json::Value = serde_json::from_str(
            ok(&ansel(&[
                "eval",
                "--data",
                data.to_str().unwrap(),
                "--model",
                out.to_str().unwrap(),
                "--json",
            ]))
            .trim(),
        )
        .unwrap();
        assert_eq!(report["questions"], 2);
        let map = report["MAP"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&map), "{report}");
        let ranked = ok(&ansel(&[
            "rank",
            "--data",
            data.to_str().unwrap(),
            "--model",
            out.to_str().unwrap(),
        ]));
        assert_eq!(ranked.lines().count(), 2, "{ranked}");
    }
}

#[test]
fn quantize_names_what_it_cannot_convert() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let missing = tmp.path().join("nothing-here");
    let result = ansel(&[
        "quantize",
        "--model",
        missing.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!result.status.success());
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(err.contains("nothing-here"), "{err}");
    // A model directory of another kind.
    let result = ansel(&[
        "quantize",
        "--model",
        "cosinenet-wikiqa",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        !result.status.success() && err.contains("cosinenet"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
}
