//! `ansel train --model cassie`, `ansel eval` and `ansel explain` end to end, on a small
//! WikiQA-format file and the committed base encoder `models/minilm-l6-wikiqa`.

use std::path::Path;

mod common;
use common::{ansel, ok};

const HEADER: &str =
    "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n";

fn wikiqa(rows: &[(&str, &str, &str, usize, &str, u8)]) -> String {
    let mut s = HEADER.to_string();
    for (qid, q, doc, pos, sentence, label) in rows {
        s += &format!("{qid}\t{q}\t{doc}\tTitle\t{doc}-{pos}\t{sentence}\t{label}\n");
    }
    s
}

fn data() -> String {
    let fresnel = "Who invented the Fresnel lens?";
    let octopus = "Why is octopus blood blue?";
    wikiqa(&[
        (
            "Q1",
            fresnel,
            "D1",
            0,
            "Lighthouses guide ships at night.",
            0,
        ),
        (
            "Q1",
            fresnel,
            "D1",
            1,
            "In 1822 Augustin Fresnel invented a lens of concentric glass rings.",
            1,
        ),
        (
            "Q1",
            fresnel,
            "D1",
            2,
            "The lens focuses light into a strong beam.",
            0,
        ),
        ("Q2", octopus, "D2", 0, "Octopuses have three hearts.", 0),
        (
            "Q2",
            octopus,
            "D2",
            1,
            "Their blood uses hemocyanin, a copper protein, which makes it blue.",
            1,
        ),
    ])
}

#[test]
fn cassie_trains_evaluates_and_explains() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.tsv");
    std::fs::write(&file, data()).unwrap();
    let file = file.to_str().unwrap();
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/minilm-l6-wikiqa");
    let out = dir.path().join("models/cassie");
    let cache = dir.path().join("cache");
    let train = [
        "train",
        "--model",
        "cassie",
        "--base",
        base.to_str().unwrap(),
        "--train",
        file,
        "--dev",
        file,
        "--out",
        out.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "--epochs",
        "2",
        "--threads",
        "1",
        "--no-mi",
    ];
    let card: serde_json::Value = serde_json::from_str(&ok(&ansel(&train))).unwrap();
    assert_eq!(card["kind"], "cassie");
    assert_eq!(card["config"]["head"]["mi_weight"], 0.0);
    // Only the head is stored; the encoder is referenced relative to the model directory.
    assert!(out.join("head.safetensors").is_file());
    assert!(!out.join("model.safetensors").exists());
    let rel = card["config"]["base"].as_str().unwrap();
    assert!(rel.starts_with(".."), "{rel}");
    assert!(out.join(rel).join("model.safetensors").is_file());
    // The cache was written and a second run reads it.
    assert!(cache.join("train/pairs.safetensors").is_file());
    let again = ansel(&train);
    ok(&again);
    assert!(String::from_utf8_lossy(&again.stderr).contains("cached pairs"));

    let report: serde_json::Value = serde_json::from_str(
        ok(&ansel(&[
            "eval",
            "--model",
            out.to_str().unwrap(),
            "--data",
            file,
            "--json",
        ]))
        .trim(),
    )
    .unwrap();
    assert_eq!(report["questions"], 2);
    assert!(report["MAP"].as_f64().unwrap() > 0.0);

    let text = ok(&ansel(&[
        "explain",
        "--model",
        out.to_str().unwrap(),
        "--data",
        file,
        "--top",
        "2",
        "--question",
        "Q1",
    ]));
    assert!(
        text.starts_with("Q [Q1]: Who invented the Fresnel lens?"),
        "{text}"
    );
    assert!(text.contains("candidate"), "{text}");
    assert!(text.contains("fresnel -> "), "{text}");
    assert!(!text.contains("Q [Q2]"), "--question keeps one question");

    let missing = ansel(&[
        "explain",
        "--model",
        out.to_str().unwrap(),
        "--data",
        file,
        "--question",
        "Q9",
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("Q9"));
    let not_cassie = ansel(&["explain", "--model", base.to_str().unwrap(), "--data", file]);
    assert!(String::from_utf8_lossy(&not_cassie.stderr).contains("needs a CASSIE model"));
}
