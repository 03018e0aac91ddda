//! `ansel train --model eqag` end to end over a built-in base ranker: the model directory loads
//! through `rank`, and an unseen question's scores do not depend on its labels.

use std::path::Path;
use std::process::{Command, Output};

fn ansel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args(args)
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("run ansel")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn eqag_trains_over_a_builtin_ranker_and_ignores_test_labels() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let train = root.join("../shared/data/wikiqa/WikiQA-dev.tsv");
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !train.is_file() || !encoder.join("model.safetensors").is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have ../shared/data and vendor/models"
        );
        eprintln!("skipped: no ../shared/data or vendor/models/all-minilm-l6-v2");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eqag");
    let sample = root.join("examples/sample-questions.jsonl");
    let s = |p: &Path| p.display().to_string();
    ok(ansel(&[
        "train",
        "--model",
        "eqag",
        "--base",
        "wo",
        "--feature",
        "minmax",
        "--variant",
        "t+-",
        "--th-intra",
        "0.5",
        "--th-inter",
        "0.5",
        "--train",
        &s(&train),
        "--dev",
        &s(&sample),
        "--qq-encoder",
        &s(&encoder),
        "--epochs",
        "20",
        "--threads",
        "1",
        "--out",
        &s(&out),
    ]));
    let card: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model.json")).unwrap()).unwrap();
    assert_eq!(card["kind"], "eqag");
    assert_eq!(card["config"]["base"], "wo");
    assert_eq!(card["config"]["graph"]["variant"], "t+-");
    assert!(card["config"]["training_rows"].as_u64().unwrap() > 50);
    let ranked = ok(ansel(&["rank", "--data", &s(&sample), "--model", &s(&out)]));
    assert_eq!(ranked.lines().count(), 5);
    // The same questions with every label flipped score the same.
    let flipped: String = std::fs::read_to_string(&sample)
        .unwrap()
        .lines()
        .map(|l| {
            let mut q: serde_json::Value = serde_json::from_str(l).unwrap();
            for c in q["candidates"].as_array_mut().unwrap() {
                let label = c["label"].as_i64().unwrap();
                c["label"] = serde_json::json!(1 - label);
            }
            format!("{q}\n")
        })
        .collect();
    let flipped_path = dir.path().join("flipped.jsonl");
    std::fs::write(&flipped_path, flipped).unwrap();
    let again = ok(ansel(&[
        "rank",
        "--data",
        &s(&flipped_path),
        "--model",
        &s(&out),
    ]));
    let scores = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["scores"].clone())
            .collect()
    };
    assert_eq!(scores(&ranked), scores(&again));
    // A model directory with a missing base ranker is reported, naming it.
    let mut bad = card.clone();
    bad["config"]["base"] = serde_json::json!("../no-such-model");
    bad["config"]["base_is_dir"] = serde_json::json!(true);
    std::fs::write(out.join("model.json"), bad.to_string()).unwrap();
    let err = ansel(&["rank", "--data", &s(&sample), "--model", &s(&out)]);
    assert!(!err.status.success());
    assert!(
        String::from_utf8_lossy(&err.stderr).contains("no-such-model"),
        "{}",
        String::from_utf8_lossy(&err.stderr)
    );
}
