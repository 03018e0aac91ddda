//! `ansel calibrate` fits probabilities and an abstention threshold; `ansel ask --calibration`
//! uses them to say when no sentence answers.

mod common;
use common::{ansel, ok, root};
use std::path::Path;

/// Questions whose answer shares words with them, and questions nothing answers.
fn write_dev(path: &Path) {
    let mut lines = Vec::new();
    for i in 0..12 {
        let answerable = i % 3 != 0;
        let question = format!("when was the tower number {i} built");
        let candidates = serde_json::json!([
            {"text": if answerable { format!("the tower number {i} was built in 18{i:02}") }
                     else { format!("a bridge crossed river {i} long ago") },
             "label": u8::from(answerable)},
            {"text": format!("grass grows in field {i}"), "label": 0},
            {"text": "the weather was cold", "label": 0},
        ]);
        lines.push(
            serde_json::json!({"id": format!("q{i}"), "question": question, "candidates": candidates})
                .to_string(),
        );
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn calibrate_fits_on_dev_and_ask_abstains_below_the_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = tmp.path().join("dev.jsonl");
    write_dev(&dev);
    let cal = tmp.path().join("wo.calibration.json");
    let svg = tmp.path().join("reliability.svg");
    let d = dev.to_str().unwrap();
    let out = ok(&ansel(&[
        "calibrate",
        "--model",
        "wo",
        "--fit",
        d,
        "--test",
        d,
        "--out",
        cal.to_str().unwrap(),
        "--diagram",
        svg.to_str().unwrap(),
    ]));
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    // More shared words, more likely an answer.
    assert!(report["platt"]["a"].as_f64().unwrap() > 0.0, "{report}");
    let test = &report["test"];
    assert_eq!(test["questions"], 12);
    assert_eq!(test["answerable"], 8);
    // The answerable questions' answers overlap most with them; the others' best candidates
    // overlap less, so the threshold chosen on the same data answers those and only those.
    assert_eq!(test["answered"], 8, "{report}");
    assert_eq!(test["answer_precision"], 1.0, "{report}");
    assert_eq!(test["abstain_recall"], 1.0, "{report}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    let index = tmp.path().join("index");
    let corpus = root().join("examples/corpus");
    ok(&ansel(&[
        "index",
        "--index",
        index.to_str().unwrap(),
        corpus.to_str().unwrap(),
    ]));
    let ask = |calibration: &Path, model: &str, json: bool| {
        let mut args = vec![
            "ask",
            "--index",
            index.to_str().unwrap(),
            "--model",
            model,
            "--prune-model",
            "none",
            "--calibration",
            calibration.to_str().unwrap(),
            "--top",
            "3",
        ];
        if json {
            args.push("--json");
        }
        args.push("Who invented the Fresnel lens?");
        ansel(&args)
    };
    let answers: serde_json::Value =
        serde_json::from_str(ok(&ask(&cal, "wo", true)).trim()).unwrap();
    let p = answers["answers"][0]["probability"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p), "{answers}");
    let threshold = answers["abstain_below"].as_f64().unwrap();
    assert_eq!(answers["answered"], p >= threshold, "{answers}");

    // A threshold no answer reaches: "no answer found", the candidates still listed.
    let mut strict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    strict["abstain_below"] = serde_json::json!(2.0);
    let strict_path = tmp.path().join("strict.json");
    std::fs::write(&strict_path, strict.to_string()).unwrap();
    let text = ok(&ask(&strict_path, "wo", false));
    assert!(text.contains("no answer found"), "{text}");
    assert!(text.contains("Fresnel"), "{text}");

    // A calibration of another model's scores is refused, naming the file and both models.
    let err = ask(&cal, "bm25", false);
    assert!(!err.status.success());
    let message = String::from_utf8_lossy(&err.stderr);
    assert!(
        message.contains("wo.calibration.json")
            && message.contains("`wo`")
            && message.contains("`bm25`"),
        "{message}"
    );
}
