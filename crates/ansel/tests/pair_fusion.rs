//! A `pair-fusion` model directory end to end: members found relative to the card or by name,
//! the weighted sum of their scores per pair, long candidates by their best window, and errors
//! that name the card's field.

use std::path::Path;

mod common;
use common::{ansel, ok};

const DATA: &str = r#"{"id": "q1", "question": "who wrote hamlet", "in_document_order": true, "candidates": [{"id": "a", "text": "hamlet was written by shakespeare"}, {"id": "b", "text": "the play is set in denmark"}, {"id": "c", "text": "who knows"}]}
"#;

fn scores(model: &str, data: &Path) -> Vec<f64> {
    let out = ok(&ansel(&[
        "rank",
        "--data",
        data.to_str().unwrap(),
        "--model",
        model,
    ]));
    let line: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    line["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["score"].as_f64().unwrap())
        .collect()
}

fn card(dir: &Path, config: serde_json::Value) {
    std::fs::create_dir_all(dir).unwrap();
    let card = serde_json::json!({"kind": "pair-fusion", "name": "fused", "ansel_version": "0.1.0", "config": config});
    std::fs::write(dir.join("model.json"), card.to_string()).unwrap();
}

/// `fused` is `a.0 * a.1 + b.0 * b.1`, pair by pair.
fn assert_weighted_sum(fused: &[f64], a: (f64, &[f64]), b: (f64, &[f64])) {
    assert_eq!(fused.len(), a.1.len());
    for i in 0..fused.len() {
        let expected = a.0 * a.1[i] + b.0 * b.1[i];
        assert!(
            (fused[i] - expected).abs() < 1e-5,
            "{fused:?} vs {a:?}, {b:?}"
        );
    }
}

#[test]
fn a_pair_fusion_sums_weighted_member_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data.jsonl");
    std::fs::write(&data, DATA).unwrap();
    let wo = scores("wo", &data);
    let rr = scores("rr", &data);
    let dir = tmp.path().join("fused");
    card(
        &dir,
        serde_json::json!({"members": [{"model": "wo", "weight": 2.0}, {"model": "rr", "weight": -0.5}]}),
    );
    let fused = scores(dir.to_str().unwrap(), &data);
    assert_weighted_sum(&fused, (2.0, &wo), (-0.5, &rr));
    // A keyword weight applies to queries not phrased as questions, the weight to questions.
    let phrased = serde_json::json!({"members": [
        {"model": "wo", "weight": 2.0, "keyword_weight": 3.0}, {"model": "rr", "weight": -0.5}]});
    let by_phrasing = tmp.path().join("by-phrasing");
    card(&by_phrasing, phrased);
    assert_eq!(scores(by_phrasing.to_str().unwrap(), &data), fused);
    let keywords = tmp.path().join("keywords.jsonl");
    std::fs::write(&keywords, DATA.replace("who wrote hamlet", "hamlet writer")).unwrap();
    let (wo, rr) = (scores("wo", &keywords), scores("rr", &keywords));
    let fused = scores(by_phrasing.to_str().unwrap(), &keywords);
    assert_weighted_sum(&fused, (3.0, &wo), (-0.5, &rr));
    // With windows, a long candidate is scored by its best window: read two words at a time,
    // "hamlet x y z author" has no window holding both question words: it scores as one word.
    let long = tmp.path().join("long.jsonl");
    std::fs::write(
        &long,
        r#"{"id": "q", "question": "hamlet author", "candidates": [{"id": "a", "text": "hamlet x y z author"}, {"id": "b", "text": "x y"}]}"#,
    )
    .unwrap();
    let windowed = tmp.path().join("windowed");
    card(
        &windowed,
        serde_json::json!({"members": [{"model": "wo", "weight": 1.0}], "windows": {"words": 2, "stride": 1}}),
    );
    let whole = scores("wo", &long);
    let best = scores(windowed.to_str().unwrap(), &long);
    assert!(
        best[0] > best[1] && best[0] < whole[0],
        "best window {best:?}, whole {whole:?}"
    );
}

#[test]
fn a_bad_pair_fusion_card_names_its_field() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data.jsonl");
    std::fs::write(&data, DATA).unwrap();
    for (config, field) in [
        (serde_json::json!({"members": []}), "config.members"),
        (
            serde_json::json!({"members": [{"model": "no-such-model", "weight": 1.0}]}),
            "config.members[0].model",
        ),
        (serde_json::json!({"members": [{"model": "wo"}]}), "weight"),
        (
            serde_json::json!({"members": [{"model": "wo", "weight": 1.0, "keyword_weight": 1e39}]}),
            "config.members[0].keyword_weight",
        ),
        (
            serde_json::json!({"members": [{"model": ".", "weight": 1.0}]}),
            "config.members[0].model",
        ),
    ] {
        let dir = tmp.path().join("bad");
        card(&dir, config);
        let out = ansel(&[
            "rank",
            "--data",
            data.to_str().unwrap(),
            "--model",
            dir.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(field), "{field}: {err}");
    }
}
