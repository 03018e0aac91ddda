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

/// `cqa-train` on the small SemEval fixture: a model directory of kind `cqa-mtl` that the
/// product's loader opens and that scores every comment of a task C list; a bad --tasks is
/// refused before any data is read.
#[test]
fn cqa_train_writes_a_model_the_product_loads() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ansel-data/tests/fixtures/semeval-mini.xml");
    let glove =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vendor/models/glove-6b-50d");
    if !glove.is_dir() {
        eprintln!("skipped: GloVe is fetched by scripts/setup.sh");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let fixture_arg = fixture.to_str().unwrap();
    let bad = lab(&[
        "cqa-train",
        "--train",
        fixture_arg,
        "--tasks",
        "ab",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--tasks must include c"));
    let chain_without_heads = lab(&[
        "cqa-train",
        "--train",
        fixture_arg,
        "--tasks",
        "c",
        "--c-score",
        "chain",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!chain_without_heads.status.success());
    assert!(
        String::from_utf8_lossy(&chain_without_heads.stderr).contains("needs the A and B heads")
    );
    let run = lab(&[
        "cqa-train",
        "--train",
        fixture_arg,
        "--extended",
        fixture_arg,
        "--tune-fraction",
        "0.5",
        "--max-epochs",
        "2",
        "--c-score",
        "auto",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let card: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model.json")).unwrap()).unwrap();
    assert_eq!(card["kind"], "cqa-mtl");
    assert_eq!(card["training"]["epochs_completed"], 2);
    // auto: the saved rule is the one with the best tuning MAP, each rule's recorded.
    let metrics = &card["training"]["metrics"];
    let rule = card["config"]["c_score"].as_str().unwrap();
    let best = ["head", "chain", "both"]
        .iter()
        .map(|r| {
            metrics[format!("tune_official_map_c_{r}")]
                .as_f64()
                .unwrap()
        })
        .fold(f64::MIN, f64::max);
    assert_eq!(
        metrics[format!("tune_official_map_c_{rule}")].as_f64(),
        Some(best)
    );
    let rules = lab(&[
        "cqa-rules",
        "--model",
        out.to_str().unwrap(),
        "--data",
        fixture_arg,
    ]);
    assert!(
        rules.status.success(),
        "{}",
        String::from_utf8_lossy(&rules.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&rules.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l["c_score"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["head", "chain", "both"]);
    assert!(lines
        .iter()
        .all(|l| (0.0..=1.0).contains(&l["map"].as_f64().unwrap())));
    // The same network twice, as an ensemble, ranks as the network alone.
    let twice = lab(&[
        "cqa-rules",
        "--model",
        out.to_str().unwrap(),
        out.to_str().unwrap(),
        "--data",
        fixture_arg,
    ]);
    assert!(twice.status.success());
    let twice: Vec<serde_json::Value> = String::from_utf8_lossy(&twice.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(twice.len(), 3);
    for (one, two) in lines.iter().zip(&twice) {
        assert_eq!(one["c_score"], two["c_score"]);
        let (a, b) = (one["map"].as_f64().unwrap(), two["map"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-9, "{a} {b}");
    }
    // The two halves of one seed's order score every list once between them.
    let rules_with = |extra: &[&str]| {
        let mut args = vec!["cqa-rules", "--model", out.to_str().unwrap(), "--data"];
        args.push(fixture_arg);
        args.extend_from_slice(extra);
        lab(&args)
    };
    let questions = |extra: &[&str]| {
        let run = rules_with(extra);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let first = String::from_utf8_lossy(&run.stdout)
            .lines()
            .next()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
        first.unwrap()["questions"].as_u64().unwrap()
    };
    let all = lines[0]["questions"].as_u64().unwrap();
    let (one, two) = (
        questions(&["--held", "1/2", "--seed", "3"]),
        questions(&["--held", "2/2", "--seed", "3"]),
    );
    assert!(
        one > 0 && two > 0 && one + two == all,
        "{one} + {two} != {all}"
    );
    let none = rules_with(&["--exclude", fixture_arg]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no task C list"));
    assert!(
        card["training"]["hyperparameters"]["data"]["train_triples"]
            .as_u64()
            .unwrap()
            > 0
    );
    let ranker = ansel::models::resolve(out.to_str().unwrap(), &[]).unwrap();
    let bytes = std::fs::read(&fixture).unwrap();
    let lists = ansel_data::readers::semeval::parse_c(&fixture, &bytes).unwrap();
    for list in &lists {
        let scores = ranker.score(list).unwrap();
        assert_eq!(scores.len(), list.candidates.len());
        assert!(scores.iter().all(|s| s.is_finite()));
    }
}

/// `tk` on hand-parsed texts: the SVM learns from the training pairs and ranks the answer of a
/// new question first; a text without a parse is named.
#[test]
fn tree_kernel_ranker_learns_from_parsed_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let tok =
        |l: &str, tag: &str, chunk: &str, ent: &str| serde_json::json!([l, tag, "", chunk, ent]);
    // For each work: the question, its answer (the author, a person) and a sentence without one.
    let parsed: Vec<(String, Vec<serde_json::Value>)> =
        [("Hamlet", "Shakespeare"), ("Faust", "Goethe")]
            .iter()
            .flat_map(|&(work, author)| {
                let w = work.to_lowercase();
                let wrote = |first: serde_json::Value| {
                    vec![
                        first,
                        tok("write", "VBD", "VP", ""),
                        tok(&w, "NNP", "B-NP", ""),
                    ]
                };
                [
                    (
                        format!("Who wrote {work}?"),
                        wrote(tok("who", "WP", "O", "")),
                    ),
                    (
                        format!("{author} wrote {work}."),
                        wrote(tok(&author.to_lowercase(), "NNP", "B-NP", "PERSON")),
                    ),
                    (
                        format!("{work} is long."),
                        vec![
                            tok(&w, "NNP", "B-NP", ""),
                            tok("be", "VBZ", "VP", ""),
                            tok("long", "JJ", "ADJP", ""),
                        ],
                    ),
                ]
            })
            .collect();
    let lines: Vec<String> = parsed
        .iter()
        .map(|(text, tokens)| serde_json::json!({"text": text, "tokens": tokens}).to_string())
        .collect();
    std::fs::write(p.join("parsed.jsonl"), lines.join("\n")).unwrap();
    let question = |q: &str, good: &str, bad: &str| {
        serde_json::json!({"question": q, "candidates": [{"text": bad, "label": 0}, {"text": good, "label": 1}]}).to_string()
    };
    std::fs::write(
        p.join("train.jsonl"),
        question(
            "Who wrote Hamlet?",
            "Shakespeare wrote Hamlet.",
            "Hamlet is long.",
        ),
    )
    .unwrap();
    std::fs::write(
        p.join("test.jsonl"),
        question("Who wrote Faust?", "Goethe wrote Faust.", "Faust is long."),
    )
    .unwrap();
    let arg = |name: &str| p.join(name).to_str().unwrap().to_string();
    // The test question again without labels: a set for the SVM to annotate.
    std::fs::write(
        p.join("pool.jsonl"),
        serde_json::json!({"question": "Who wrote Faust?", "candidates": [
            {"text": "Faust is long."}, {"text": "Goethe wrote Faust."}]})
        .to_string(),
    )
    .unwrap();
    let run = |parsed: &str| {
        lab(&[
            "tk",
            "--parsed",
            parsed,
            "--train",
            &arg("train.jsonl"),
            "--eval",
            &arg("test.jsonl"),
            "--label",
            &arg("pool.jsonl"),
            "--out",
            &arg("out"),
        ])
    };
    let out = run(&arg("parsed.jsonl"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scores = std::fs::read_to_string(p.join("out/test.jsonl.scores.jsonl")).unwrap();
    let scores: serde_json::Value = serde_json::from_str(scores.trim()).unwrap();
    let s = scores["scores"].as_array().unwrap();
    assert!(s[1].as_f64() > s[0].as_f64(), "{scores}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("out/report.json")).unwrap()).unwrap();
    assert_eq!(report["sets"]["test.jsonl"]["MAP"], 1.0);
    // Each candidate of the annotated set is labelled by the sign of the SVM's decision value.
    let pool: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(p.join("out/pool.jsonl.scores.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let labelled: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(p.join("out/pool.jsonl.labelled.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let candidates = labelled["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 2);
    for (c, score) in candidates.iter().zip(pool["scores"].as_array().unwrap()) {
        let positive = score.as_f64().unwrap() > 0.0;
        assert_eq!(c["label"], i64::from(positive), "{labelled} {pool}");
    }
    assert_eq!(report["labelled"]["pool.jsonl"]["pairs"], 2);
    // The partial tree kernel learns the same from these pairs; a weight outside (0, 1] is refused.
    let ptk = |mu: &str, out: &str| {
        lab(&[
            "tk",
            "--kernel",
            "ptk",
            "--mu",
            mu,
            "--parsed",
            &arg("parsed.jsonl"),
            "--train",
            &arg("train.jsonl"),
            "--eval",
            &arg("test.jsonl"),
            "--out",
            &arg(out),
        ])
    };
    let out = ptk("0.4", "out-ptk");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("out-ptk/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["arguments"]["kernel"], "ptk");
    assert_eq!(report["sets"]["test.jsonl"]["MAP"], 1.0);
    let out = ptk("1.5", "out-bad");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mu must be in (0, 1]"));
    std::fs::write(p.join("partial.jsonl"), lines[..2].join("\n")).unwrap();
    let out = run(&arg("partial.jsonl"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no parse of the text \"Hamlet is long.\"")
    );
    // Training pairs of one class leave the SVM nothing to separate: refused, naming the file.
    let all_good = serde_json::json!({"question": "Who wrote Hamlet?",
        "candidates": [{"text": "Shakespeare wrote Hamlet.", "label": 1}]});
    std::fs::write(p.join("all-good.jsonl"), all_good.to_string()).unwrap();
    let out = lab(&[
        "tk",
        "--parsed",
        &arg("parsed.jsonl"),
        "--train",
        &arg("all-good.jsonl"),
        "--eval",
        &arg("test.jsonl"),
        "--out",
        &arg("out2"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("all-good.jsonl: the SVM needs positive and negative training pairs"),
        "{err}"
    );
}

#[test]
fn question_pairs_pair_each_text_with_its_bm25_neighbours_but_never_a_gold_pair() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let list = |q: &str, candidates: &[&str]| {
        let candidates: Vec<_> = candidates
            .iter()
            .map(|t| serde_json::json!({"text": t, "label": 1}))
            .collect();
        serde_json::json!({"question": q, "candidates": candidates}).to_string()
    };
    let gold = [
        list("visa for my wife", &["family visa for a wife"]),
        list("best bank in doha", &["which bank in doha is best"]),
        list("renew my visa", &["car for sale"]),
    ];
    std::fs::write(p.join("train.jsonl"), gold.join("\n")).unwrap();
    std::fs::write(p.join("dev.jsonl"), list("which bank in doha is best", &[])).unwrap();
    let arg = |name: &str| p.join(name).to_str().unwrap().to_string();
    let out = lab(&[
        "question-pairs",
        "--from",
        &arg("train.jsonl"),
        "--exclude",
        &arg("dev.jsonl"),
        "--per-question",
        "5",
        "--out",
        &arg("pairs.jsonl"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lists: Vec<serde_json::Value> = std::fs::read_to_string(p.join("pairs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pairs: Vec<(String, String)> = lists
        .iter()
        .flat_map(|q| {
            q["candidates"].as_array().unwrap().iter().map(move |c| {
                assert!(c.get("label").is_none(), "{c}");
                (
                    q["question"].as_str().unwrap().to_string(),
                    c["text"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    let has = |a: &str, b: &str| pairs.iter().any(|(x, y)| x == a && y == b);
    // The two bank questions share words, but one is dev's: it never enters.
    assert!(
        pairs
            .iter()
            .all(|(a, b)| a != b && !a.contains("is best") && !b.contains("is best")),
        "{pairs:?}"
    );
    // The visa texts are a gold pair: neither is listed as the other's candidate.
    assert!(
        !has("visa for my wife", "family visa for a wife"),
        "{pairs:?}"
    );
    assert!(
        !has("family visa for a wife", "visa for my wife"),
        "{pairs:?}"
    );
    // Texts sharing a content word are paired both ways; one sharing none is no query.
    assert!(has("renew my visa", "visa for my wife"), "{pairs:?}");
    assert!(has("family visa for a wife", "renew my visa"), "{pairs:?}");
    assert!(
        !has("best bank in doha", "family visa for a wife"),
        "{pairs:?}"
    );
    assert!(lists.iter().all(|q| q["question"] != "car for sale"));
    let out = lab(&[
        "question-pairs",
        "--from",
        &arg("dev.jsonl"),
        "--out",
        &arg("none.jsonl"),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 2 are needed"));
}
