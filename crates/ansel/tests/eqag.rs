//! `ansel train --model eqag` end to end over a built-in base ranker: the model directory loads
//! through `rank`, and an unseen question's scores do not depend on its labels.

use std::path::Path;

mod common;
use common::{ansel, ok};

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
    ok(&ansel(&[
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
    let ranked = ok(&ansel(&[
        "rank",
        "--data",
        &s(&sample),
        "--model",
        &s(&out),
    ]));
    assert_eq!(ranked.lines().count(), 5);
    // The same questions with every label flipped score the same.
    assert_eq!(
        scores(&ranked),
        scores(&rank_with_flipped_labels(&sample, &out, dir.path()))
    );
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

/// `--node-features ...,pair-vec:N`: the PCA is fitted on the training nodes and stored beside
/// the model; `rank` through the directory reads it back, and test labels do not move scores.
#[test]
fn eqag_pair_vec_features_round_trip_through_the_model_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !encoder.join("model.safetensors").is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have vendor/models"
        );
        eprintln!("skipped: no vendor/models/all-minilm-l6-v2");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eqag-pv");
    let sample = root.join("examples/sample-questions.jsonl");
    let s = |p: &Path| p.display().to_string();
    let train = |features: &str, out: &Path| {
        ansel(&[
            "train",
            "--model",
            "eqag",
            "--base",
            "wo",
            "--feature",
            "minmax",
            "--variant",
            "t+",
            "--inter-by",
            "answer",
            "--node-features",
            features,
            "--train",
            &s(&sample),
            "--dev",
            &s(&sample),
            "--qq-encoder",
            &s(&encoder),
            "--epochs",
            "10",
            "--threads",
            "1",
            "--out",
            &s(out),
        ])
    };
    ok(&train("base,pair-vec:4", &out));
    let card: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model.json")).unwrap()).unwrap();
    assert_eq!(
        card["config"]["node_features"],
        serde_json::json!(["base", "pair-vec:4"])
    );
    let pca = &card["training"]["hyperparameters"]["pair_vec_pca"];
    assert_eq!(
        (pca["input"].as_u64(), pca["dims"].as_u64()),
        (Some(768), Some(4))
    );
    assert!(out.join("pair-pca.json").is_file());
    let ranked = ok(&ansel(&[
        "rank",
        "--data",
        &s(&sample),
        "--model",
        &s(&out),
    ]));
    assert_eq!(ranked.lines().count(), 5);
    assert_eq!(
        scores(&ranked),
        scores(&rank_with_flipped_labels(&sample, &out, dir.path()))
    );
    // Without its PCA file the directory is refused, naming the file; a bad N is refused.
    std::fs::remove_file(out.join("pair-pca.json")).unwrap();
    let err = ansel(&["rank", "--data", &s(&sample), "--model", &s(&out)]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("pair-pca.json"));
    let err = train("base,pair-vec:0", &dir.path().join("bad"));
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("pair-vec:N"));
}

/// `--node-features ...,cls-vec:N` over a cross-encoder base: the [CLS] states' PCA is fitted on
/// the training nodes and stored beside the model, the states are cached with `--cls-cache`,
/// `rank` reads the directory back (states computed live), and test labels do not move scores;
/// a base that is not a cross-encoder is refused, naming the option.
#[test]
fn eqag_cls_vec_features_round_trip_through_the_model_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    let base = root.join("models/minilm-l6-wikiqa");
    if !encoder.join("model.safetensors").is_file() || !base.join("model.safetensors").is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have vendor/models and models/minilm-l6-wikiqa"
        );
        eprintln!("skipped: no vendor/models/all-minilm-l6-v2 or models/minilm-l6-wikiqa");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eqag-cv");
    let cache = dir.path().join("cls.bin");
    let sample = root.join("examples/sample-questions.jsonl");
    let s = |p: &Path| p.display().to_string();
    let train = |base: &str, features: &str, out: &Path| {
        ansel(&[
            "train",
            "--model",
            "eqag",
            "--base",
            base,
            "--variant",
            "t+",
            "--inter-by",
            "answer",
            "--node-features",
            features,
            "--cls-cache",
            &s(&cache),
            "--train",
            &s(&sample),
            "--dev",
            &s(&sample),
            "--qq-encoder",
            &s(&encoder),
            "--epochs",
            "10",
            "--threads",
            "1",
            "--out",
            &s(out),
        ])
    };
    ok(&train(&s(&base), "base,cls-vec:3", &out));
    let card: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model.json")).unwrap()).unwrap();
    assert_eq!(
        card["config"]["node_features"],
        serde_json::json!(["base", "cls-vec:3"])
    );
    let pca = &card["training"]["hyperparameters"]["cls_vec_pca"];
    assert_eq!(
        (pca["input"].as_u64(), pca["dims"].as_u64()),
        (Some(384), Some(3))
    );
    assert!(out.join("cls-pca.json").is_file() && !out.join("pair-pca.json").exists());
    // One record (8-byte key, 384 f32) per training pair (the sample's 18, dev the same pairs).
    assert_eq!(std::fs::metadata(&cache).unwrap().len(), 18 * (8 + 4 * 384));
    let ranked = ok(&ansel(&[
        "rank",
        "--data",
        &s(&sample),
        "--model",
        &s(&out),
    ]));
    assert_eq!(ranked.lines().count(), 5);
    assert_eq!(
        scores(&ranked),
        scores(&rank_with_flipped_labels(&sample, &out, dir.path()))
    );
    // Without its PCA file the directory is refused, naming the file.
    std::fs::remove_file(out.join("cls-pca.json")).unwrap();
    let err = ansel(&["rank", "--data", &s(&sample), "--model", &s(&out)]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("cls-pca.json"));
    // A built-in base has no [CLS] state.
    let err = train("wo", "base,cls-vec", &dir.path().join("bad"));
    assert!(!err.status.success());
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(
        stderr.contains("cls-vec") && stderr.contains("cross-encoder"),
        "{stderr}"
    );
}

/// `--oof-folds` over an efficient base: every training question is scored by a fold ranker
/// retrained (with the base's recipe) on the other folds, the scores are cached and reused,
/// and a base too expensive to retrain is refused with the way out.
#[test]
fn eqag_out_of_fold_scores_retrain_an_efficient_base_per_fold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !encoder.join("model.safetensors").is_file()
        || !root.join("vendor/models/glove-6b-50d").is_dir()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have vendor/models"
        );
        eprintln!("skipped: no vendor/models");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.display().to_string();
    let sample = root.join("examples/sample-questions.jsonl");
    let base = dir.path().join("base");
    ok(&ansel(&[
        "train",
        "--model",
        "relcnn",
        "--loss",
        "listwise",
        "--train",
        &s(&sample),
        "--dev",
        &s(&sample),
        "--epochs",
        "1",
        "--seed",
        "3",
        "--threads",
        "1",
        "--out",
        &s(&base),
    ]));
    let cache = dir.path().join("oof-cache");
    let eqag = |out: &str, base: &str, extra: &[&str]| {
        let out = s(&dir.path().join(out));
        let mut args = vec![
            "train",
            "--model",
            "eqag",
            "--base",
            base,
            "--feature",
            "minmax",
            "--train",
        ];
        let (sample, encoder, cache) = (s(&sample), s(&encoder), s(&cache));
        let rest = [
            &sample[..],
            "--dev",
            &sample,
            "--qq-encoder",
            &encoder,
            "--epochs",
            "10",
            "--threads",
            "1",
            "--oof-cache",
            &cache,
            "--out",
            &out,
        ];
        args.extend(rest);
        args.extend(extra);
        ansel(&args)
    };
    let card = |out: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.path().join(out).join("model.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    ok(&eqag("e1", &s(&base), &["--oof-folds", "2"]));
    let first = card("e1")["training"]["hyperparameters"]["train_scores"].clone();
    assert_eq!(first["kind"], "out-of-fold");
    assert_eq!(first["cached"], false);
    let folds = first["fold_rankers"].as_array().unwrap();
    assert_eq!(folds.len(), 2);
    // Five answered questions in two folds: each fold ranker trained on the other fold only.
    let trained: Vec<u64> = folds
        .iter()
        .map(|f| f["trained_on"].as_u64().unwrap())
        .collect();
    assert_eq!(trained.iter().sum::<u64>(), 5, "{trained:?}");
    assert!(trained.iter().all(|&n| n == 2 || n == 3), "{trained:?}");
    let scores = std::fs::read_to_string(first["cache"].as_str().unwrap()).unwrap();
    assert_eq!(scores.lines().count(), 5);
    // The in-sample run (no --oof-folds) gives the training rows other features.
    ok(&eqag("e0", &s(&base), &[]));
    assert_eq!(
        card("e0")["training"]["hyperparameters"]["train_scores"]["kind"],
        "in-sample"
    );
    // A second run (another GCN seed) reads the cache and trains no fold ranker.
    ok(&eqag("e2", &s(&base), &["--oof-folds", "2", "--seed", "7"]));
    let second = card("e2")["training"]["hyperparameters"]["train_scores"].clone();
    assert_eq!(second["cached"], true);
    assert_eq!(second["cache"], first["cache"]);
    assert_eq!(second["fold_rankers"].as_array().unwrap().len(), 0);
    // The model still scores unseen questions with the full base.
    assert_eq!(card("e2")["config"]["base_is_dir"], true);
    let ranked = ok(&ansel(&[
        "rank",
        "--data",
        &s(&sample),
        "--model",
        &s(&dir.path().join("e2")),
    ]));
    assert_eq!(ranked.lines().count(), 5);
    // --train-scores: the same scores from a file train the same GCN; a file that lacks
    // training questions is refused.
    let file = first["cache"].as_str().unwrap().to_string();
    ok(&eqag("e4", &s(&base), &["--train-scores", &file]));
    assert_eq!(
        card("e4")["training"]["hyperparameters"]["train_scores"]["kind"],
        "file"
    );
    let gcn = |out: &str| std::fs::read_to_string(dir.path().join(out).join("gcn.json")).unwrap();
    assert_eq!(gcn("e4"), gcn("e1"));
    let partial = dir.path().join("partial.jsonl");
    std::fs::write(&partial, scores.lines().next().unwrap()).unwrap();
    let err = eqag("e5", &s(&base), &["--train-scores", &s(&partial)]);
    assert!(!err.status.success());
    let msg = String::from_utf8_lossy(&err.stderr);
    assert!(
        msg.contains("4 of the 5 training questions are missing"),
        "{msg}"
    );
    // A cross-encoder base is refused, naming the alternative.
    let err = eqag(
        "e3",
        &s(&root.join("models/minilm-l6-wikiqa")),
        &["--oof-folds", "2"],
    );
    assert!(!err.status.success());
    let msg = String::from_utf8_lossy(&err.stderr);
    assert!(
        msg.contains("too expensive") && msg.contains("--train-scores"),
        "{msg}"
    );
}

/// `ansel rank` output of `model` on the questions of `data` (ansel JSON lines) with every
/// candidate's label flipped (written into `work`): a model that reads no test labels ranks
/// them as before.
fn rank_with_flipped_labels(data: &Path, model: &Path, work: &Path) -> String {
    let flipped: String = std::fs::read_to_string(data)
        .unwrap()
        .lines()
        .map(|l| {
            let mut q: serde_json::Value = serde_json::from_str(l).unwrap();
            for c in q["candidates"].as_array_mut().unwrap() {
                c["label"] = serde_json::json!(1 - c["label"].as_i64().unwrap());
            }
            format!("{q}\n")
        })
        .collect();
    let path = work.join("flipped.jsonl");
    std::fs::write(&path, flipped).unwrap();
    ok(&ansel(&[
        "rank",
        "--data",
        path.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ]))
}

/// The per-question score lists of `ansel rank` output.
fn scores(ranked: &str) -> Vec<serde_json::Value> {
    ranked
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["scores"].clone())
        .collect()
}
