//! `ansel train --model eqag` end to end over a built-in base ranker: the model directory loads
//! through `rank`, and an unseen question's scores do not depend on its labels.

use std::path::Path;

mod common;
use common::{ansel, ok, present, root};

#[test]
fn eqag_trains_over_a_builtin_ranker_and_ignores_test_labels() {
    let root = root();
    let train = root.join("../shared/data/wikiqa/WikiQA-dev.tsv");
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !present(&[&train, &encoder.join("model.safetensors")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eqag");
    let sample = root.join("examples/sample-questions.jsonl");
    let graph = ["--variant", "t+-", "--th-intra", "0.5", "--th-inter", "0.5"];
    ok(&train_eqag("wo", &train, "20", &out, &graph));
    let card = read_card(&out);
    assert_eq!(card["kind"], "eqag");
    assert_eq!(card["config"]["base"], "wo");
    assert_eq!(card["config"]["graph"]["variant"], "t+-");
    assert!(card["config"]["training_rows"].as_u64().unwrap() > 50);
    // The same questions with every label flipped score the same.
    assert_ranks_without_reading_labels(&sample, &out, dir.path());
    // A model directory with a missing base ranker is reported, naming it.
    let mut bad = card.clone();
    bad["config"]["base"] = serde_json::json!("../no-such-model");
    bad["config"]["base_is_dir"] = serde_json::json!(true);
    std::fs::write(out.join("model.json"), bad.to_string()).unwrap();
    let err = rank_error(&sample, &out);
    assert!(err.contains("no-such-model"), "{err}");
}

/// `--node-features ...,pair-vec:N`: the PCA is fitted on the training nodes and stored beside
/// the model; `rank` through the directory reads it back, and test labels do not move scores.
#[test]
fn eqag_pair_vec_features_round_trip_through_the_model_directory() {
    let root = root();
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !present(&[&encoder.join("model.safetensors")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eqag-pv");
    let sample = root.join("examples/sample-questions.jsonl");
    let train = |features: &str, out: &Path| {
        let graph = ["--variant", "t+", "--inter-by", "answer"];
        train_eqag(
            "wo",
            &sample,
            "10",
            out,
            &[&graph[..], &["--node-features", features]].concat(),
        )
    };
    ok(&train("base,pair-vec:4", &out));
    let card = read_card(&out);
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
    assert_ranks_without_reading_labels(&sample, &out, dir.path());
    // Without its PCA file the directory is refused, naming the file; a bad N is refused.
    std::fs::remove_file(out.join("pair-pca.json")).unwrap();
    let err = rank_error(&sample, &out);
    assert!(err.contains("pair-pca.json"), "{err}");
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
    let root = root();
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    let base = root.join("models/minilm-l6-wikiqa");
    if !present(&[
        &encoder.join("model.safetensors"),
        &base.join("model.safetensors"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eqag-cv");
    let cache = dir.path().join("cls.bin");
    let sample = root.join("examples/sample-questions.jsonl");
    let train = |base: &str, features: &str, out: &Path| {
        let options = [
            "--variant",
            "t+",
            "--inter-by",
            "answer",
            "--node-features",
            features,
            "--cls-cache",
            cache.to_str().unwrap(),
        ];
        train_eqag(base, &sample, "10", out, &options)
    };
    ok(&train(base.to_str().unwrap(), "base,cls-vec:3", &out));
    let card = read_card(&out);
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
    assert_ranks_without_reading_labels(&sample, &out, dir.path());
    // Without its PCA file the directory is refused, naming the file.
    std::fs::remove_file(out.join("cls-pca.json")).unwrap();
    assert!(rank_error(&sample, &out).contains("cls-pca.json"));
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
    let root = root();
    let encoder = root.join("vendor/models/all-minilm-l6-v2");
    if !present(&[
        &encoder.join("model.safetensors"),
        &root.join("vendor/models/glove-6b-50d"),
    ]) {
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
        let cache = s(&cache);
        let options = [&["--oof-cache", &cache[..]], extra].concat();
        train_eqag(base, &sample, "10", &dir.path().join(out), &options)
    };
    let card = |out: &str| read_card(&dir.path().join(out));
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
    assert_eq!(rank(&sample, &dir.path().join("e2")).lines().count(), 5);
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
    rank(&path, model)
}

/// `model` ranks the 5 questions of `sample`, and scores them the same with every label flipped.
fn assert_ranks_without_reading_labels(sample: &Path, model: &Path, work: &Path) {
    let ranked = rank(sample, model);
    assert_eq!(ranked.lines().count(), 5);
    assert_eq!(
        scores(&ranked),
        scores(&rank_with_flipped_labels(sample, model, work))
    );
}

/// The output of `ansel rank --data DATA --model MODEL`, which must succeed.
fn rank(data: &Path, model: &Path) -> String {
    ok(&rank_output(data, model))
}

/// The standard error of `ansel rank --data DATA --model MODEL`, which must fail.
fn rank_error(data: &Path, model: &Path) -> String {
    let output = rank_output(data, model);
    assert!(!output.status.success(), "rank succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn rank_output(data: &Path, model: &Path) -> std::process::Output {
    ansel(&[
        "rank",
        "--data",
        data.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ])
}

/// `ansel train --model eqag` over `base` on `train` with the min-max feature, the sample
/// questions as dev, all-MiniLM-L6-v2 as question encoder and one thread, plus `options`.
fn train_eqag(
    base: &str,
    train: &Path,
    epochs: &str,
    out: &Path,
    options: &[&str],
) -> std::process::Output {
    let root = root();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (train, out) = (path(train), path(out));
    let sample = path(&root.join("examples/sample-questions.jsonl"));
    let encoder = path(&root.join("vendor/models/all-minilm-l6-v2"));
    let mut args = vec![
        "train",
        "--model",
        "eqag",
        "--base",
        base,
        "--feature",
        "minmax",
        "--train",
        &train,
        "--dev",
        &sample,
        "--qq-encoder",
        &encoder,
        "--epochs",
        epochs,
        "--threads",
        "1",
        "--out",
        &out,
    ];
    args.extend(options);
    ansel(&args)
}

/// The card of the model directory `dir`.
fn read_card(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("model.json")).unwrap()).unwrap()
}

/// The per-question score lists of `ansel rank` output.
fn scores(ranked: &str) -> Vec<serde_json::Value> {
    ranked
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["scores"].clone())
        .collect()
}
