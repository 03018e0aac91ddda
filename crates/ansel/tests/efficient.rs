//! The committed efficient model reproduces its row of docs/results/efficient-rankers.md.

use std::process::Command;

mod common;
use common::{present, root};

#[test]
fn committed_cosinenet_reproduces_its_wikiqa_test_row() {
    let root = root();
    let data = root.join("../shared/data/wikiqa/WikiQA-test.tsv");
    if !present(&[&data]) {
        return;
    }
    let model = root.join("models/cosinenet-wikiqa");
    let output = Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args(["eval", "--json", "--data"])
        .arg(&data)
        .arg("--model")
        .arg(&model)
        .output()
        .expect("run ansel");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let recorded =
        std::fs::read_to_string(root.join("docs/results/efficient-models.jsonl")).unwrap();
    let row: serde_json::Value = recorded
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["model"] == "models/cosinenet-wikiqa" && r.get("MAP").is_some())
        .expect("a recorded row for models/cosinenet-wikiqa");
    assert_eq!(report["questions"], 243);
    for metric in ["MAP", "MRR", "P@1"] {
        let (got, want) = (
            report[metric].as_f64().unwrap(),
            row[metric].as_f64().unwrap(),
        );
        assert!(
            (got - want).abs() < 1e-4,
            "{metric}: {got} now, {want} recorded"
        );
    }
}
