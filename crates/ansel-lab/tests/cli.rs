//! The `ansel-lab` binary: its drivers refuse bad arguments with the product's messages.

use std::process::Command;

fn lab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ansel-lab"))
        .args(args)
        .output()
        .expect("ansel-lab runs")
}

#[test]
fn help_lists_the_experiment_drivers() {
    let help = String::from_utf8(lab(&["--help"]).stdout).unwrap();
    for driver in ["squad-sent", "cassie-bench", "bench-server", "eqag-latency"] {
        assert!(help.contains(driver), "{driver} missing:\n{help}");
    }
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("q.jsonl");
    std::fs::write(
        &data,
        "{\"question\": \"q\", \"candidates\": [{\"text\": \"a\", \"label\": 1}]}\n",
    )
    .unwrap();
    let out = lab(&[
        "eqag-latency",
        "--model",
        dir.path().to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--limit",
        "0",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--limit must be at least 1"), "{err}");
    let out = lab(&[
        "squad-sent",
        "--data",
        "/nonexistent/train.json",
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/train.json"));
}
