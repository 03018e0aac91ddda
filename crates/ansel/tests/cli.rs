//! End-to-end tests of the `ansel` binary. Tests that need the benchmark data
//! look for `../shared/data` beside the repository; CI has it, so there a
//! missing data directory is a failure, elsewhere the test is skipped.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{ansel, present, root};

fn shared_data() -> Option<PathBuf> {
    let dir = root().join("../shared/data");
    present(&[&dir]).then_some(dir)
}

fn json_reports(output: &Output) -> Vec<serde_json::Value> {
    assert!(
        output.status.success(),
        "ansel failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn rr_on_wikiqa_test_matches_the_thesis() {
    let Some(data) = shared_data() else { return };
    let test = data.join("wikiqa/WikiQA-test.tsv");
    let reports = json_reports(&ansel(&[
        "eval",
        "--data",
        test.to_str().unwrap(),
        "--model",
        "rr",
        "--json",
    ]));
    let rr = &reports[0];
    assert_eq!(rr["model"], "rr");
    assert_eq!(rr["questions"], 243);
    assert_eq!(format!("{:.4}", rr["P@1"].as_f64().unwrap()), "0.4609");
    assert_eq!(format!("{:.4}", rr["MAP"].as_f64().unwrap()), "0.6421");
}

#[test]
fn wo_rr_on_wikiqa_test_reaches_the_baseline() {
    let Some(data) = shared_data() else { return };
    let test = data.join("wikiqa/WikiQA-test.tsv");
    let out = ansel(&[
        "eval",
        "--data",
        test.to_str().unwrap(),
        "--model",
        "wo-rr",
        "--model",
        "wo",
        "--json",
    ]);
    let reports = json_reports(&out);
    let map = |i: usize| reports[i]["MAP"].as_f64().unwrap();
    assert!(map(0) >= 0.66, "WO+RR MAP {}", map(0));
    assert!(map(0) > map(1), "RR must help WO on WikiQA");
}

#[test]
fn trecqa_order_leaks_nothing() {
    let Some(data) = shared_data() else { return };
    let test = data.join("trecqa/jsonl/test-filtered.jsonl");
    // rr refuses data without document order, with a reason.
    let out = ansel(&["eval", "--data", test.to_str().unwrap(), "--model", "rr"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no document order"));
    // A scorer that trusts the order the reader hands out does no better than chance.
    let questions = ansel_data::read_path(&test, None).unwrap();
    for order in [1.0f32, -1.0] {
        let scores: Vec<Vec<f32>> = questions
            .iter()
            .map(|q| (0..q.candidates.len()).map(|i| order * i as f32).collect())
            .collect();
        let report = ansel_eval::evaluate(&questions, &scores, ansel_eval::Filter::Clean);
        assert_eq!(report.questions(), 68);
        let map = report.metric("MAP").unwrap();
        assert!(
            map < 0.6,
            "position scorer reached MAP {map}: the order leaks labels"
        );
    }
}

#[test]
fn clean_drops_all_positive_questions_and_reports_counts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("q.jsonl");
    std::fs::write(
        &data,
        r#"{"question": "a b", "candidates": [{"text": "a", "label": 1}, {"text": "x", "label": 0}]}
{"question": "a b", "candidates": [{"text": "a", "label": 1}, {"text": "b", "label": 1}]}
{"question": "a b", "candidates": [{"text": "a", "label": 0}]}
"#,
    )
    .unwrap();
    let path = data.to_str().unwrap();
    let answered = &json_reports(&ansel(&["eval", "--data", path, "--model", "wo", "--json"]))[0];
    assert_eq!(
        (
            answered["questions"].as_u64(),
            answered["skipped_no_positive"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let clean = &json_reports(&ansel(&[
        "eval", "--data", path, "--model", "wo", "--clean", "--json",
    ]))[0];
    assert_eq!(
        (
            clean["questions"].as_u64(),
            clean["skipped_all_positive"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let table = ansel(&["eval", "--data", path, "--model", "wo", "--model", "bm25"]);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(text.contains("2 of 3 questions scored"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("wo ") || l.starts_with("bm25 "))
            .count(),
        2,
        "{text}"
    );
}

#[test]
fn malformed_data_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("bad.tsv");
    std::fs::write(
        &data,
        "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\nQ1\tq\tD1\tT\tD1-0\ts\tyes\n",
    )
    .unwrap();
    let out = ansel(&["eval", "--data", data.to_str().unwrap(), "--model", "wo"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.tsv:2: field `Label`: expected 0 or 1"),
        "{stderr}"
    );
    std::fs::write(
        &data,
        "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\nQ1\tq\tD1\tT\tD1-0\ts\t1\n",
    )
    .unwrap();
    let out = ansel(&["eval", "--data", data.to_str().unwrap(), "--model", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model \"nope\""));
}

/// Each bad input a newcomer may hand the CLI gets an error that names the file (and the line
/// or field where there is one), never a panic nor a table of zeros.
#[test]
fn bad_inputs_are_errors_that_name_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let good = path("good.jsonl");
    std::fs::write(
        &good,
        r#"{"id": "q1", "question": "who wrote hamlet", "candidates": [{"text": "Shakespeare wrote Hamlet", "label": 1}, {"text": "Paris is big", "label": 0}]}"#,
    )
    .unwrap();
    let fails = |args: &[&str], expected: &[&str]| {
        let out = ansel(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        for text in expected {
            assert!(stderr.contains(text), "{args:?}: no {text:?} in {stderr}");
        }
    };
    // Empty data, and a WikiQA header without rows: no questions, said so with the file.
    std::fs::write(path("empty.jsonl"), "").unwrap();
    std::fs::write(
        path("header.tsv"),
        "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n",
    )
    .unwrap();
    for data in ["empty.jsonl", "header.tsv"] {
        let data = path(data);
        fails(
            &["eval", "--data", &data, "--model", "wo"],
            &[&data, "no questions for --data"],
        );
        fails(
            &["bench", "--data", &data, "--model", "wo", "--repeat", "1"],
            &[&data, "no questions"],
        );
    }
    let empty = path("empty.jsonl");
    let out = path("never-written");
    fails(
        &[
            "train",
            "--model",
            "cosinenet",
            "--train",
            &good,
            "--dev",
            &empty,
            "--out",
            &out,
        ],
        &[&empty, "no questions for --dev"],
    );
    assert!(!Path::new(&out).exists());
    // Wrong column count, wrong JSON type: file, line and field.
    std::fs::write(
        path("short.tsv"),
        "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\nQ1\tq\tD1\tT\n",
    )
    .unwrap();
    fails(
        &["rank", "--data", &path("short.tsv")],
        &["short.tsv:2: expected 7 tab-separated fields, found 4"],
    );
    std::fs::write(
        path("type.jsonl"),
        "{\"question\": 5, \"candidates\": [\"a\"]}\n",
    )
    .unwrap();
    fails(
        &["eval", "--data", &path("type.jsonl"), "--model", "wo"],
        &["type.jsonl:1: field `question`: invalid type: integer `5`"],
    );
    fails(
        &["eval", "--data", &path("missing.tsv"), "--model", "wo"],
        &["missing.tsv", "No such file"],
    );
    // Model directories: no card, a card field of the wrong type, a config field of the
    // wrong type, a fusion with an empty member, a file given as a model.
    let model = path("model");
    std::fs::create_dir(&model).unwrap();
    fails(
        &["eval", "--data", &good, "--model", &model],
        &["model/model.json", "No such file"],
    );
    std::fs::write(path("model/model.json"), r#"{"kind": 3, "name": "m"}"#).unwrap();
    fails(
        &["rank", "--data", &good, "--model", &model],
        &[
            "model/model.json",
            "field `kind`: invalid type: integer `3`",
        ],
    );
    let card = std::fs::read_to_string(root().join("models/cosinenet-wikiqa/model.json")).unwrap();
    let mut card: serde_json::Value = serde_json::from_str(&card).unwrap();
    card["config"]["dropout"] = serde_json::json!("half");
    std::fs::write(path("model/model.json"), card.to_string()).unwrap();
    fails(
        &["eval", "--data", &good, "--model", &model],
        &[
            "model/model.json",
            "field `config.dropout`: invalid type: string \"half\"",
        ],
    );
    fails(
        &["eval", "--data", &good, "--model", "wo+"],
        &["\"wo+\"", "one of its names is empty"],
    );
    fails(
        &["eval", "--data", &good, "--model", &good],
        &["good.jsonl\" is a file", "model.json"],
    );
    // Documents and questions for the index.
    std::fs::write(
        path("docs.jsonl"),
        "{\"id\": 5, \"text\": \"Bees make honey.\"}\n",
    )
    .unwrap();
    let index = path("index");
    fails(
        &["index", "--index", &index, &path("docs.jsonl")],
        &["docs.jsonl:1: field `id`: invalid type: integer `5`"],
    );
    fails(&["ask", "--index", &index, " "], &["the question is empty"]);
    fails(
        &["ask", "--index", &index, "--top", "0", "who"],
        &["--top must be at least 1"],
    );
    fails(
        &["ask", "--index", &path("no-index"), "who"],
        &["no-index: no ansel index here"],
    );
}

#[test]
fn trec_files_round_trip_through_eval_trec() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("q.jsonl");
    std::fs::write(
        &data,
        r#"{"id": "q1", "question": "river nile", "candidates": [{"text": "the nile river", "label": 1}, {"text": "a lake", "label": 0}, {"text": "nile", "label": 1}]}
{"id": "q2", "question": "tallest mountain", "candidates": [{"text": "a hill", "label": 0}, {"text": "everest is the tallest mountain", "label": 1}]}
"#,
    )
    .unwrap();
    let trec = dir.path().join("trec");
    let direct = json_reports(&ansel(&[
        "eval",
        "--data",
        data.to_str().unwrap(),
        "--model",
        "bm25",
        "--json",
        "--trec-dir",
        trec.to_str().unwrap(),
    ]));
    let via_files = json_reports(&ansel(&[
        "eval-trec",
        "--qrels",
        trec.join("qrels.txt").to_str().unwrap(),
        "--run",
        trec.join("bm25.run").to_str().unwrap(),
        "--json",
    ]));
    for metric in ["P@1", "MAP", "MRR", "NDCG@10", "R-Prec"] {
        assert_eq!(direct[0][metric], via_files[0][metric], "{metric}");
    }
    assert_eq!(via_files[0]["questions"], 2);
}

#[test]
fn convert_writes_jsonl_that_reads_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    let squad =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ansel-data/tests/fixtures/squad-mini.json");
    let out = dir.path().join("squad.jsonl");
    let status = ansel(&[
        "convert",
        "--data",
        squad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let original = ansel_data::read_path(&squad, None).unwrap();
    assert_eq!(ansel_data::read_path(&out, None).unwrap(), original);
}

#[test]
fn synth_makes_trainable_questions_from_raw_documents() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/corpus");
    let out = dir.path().join("synth.jsonl");
    let run = ansel(&[
        "synth",
        "--text",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = String::from_utf8_lossy(&run.stderr);
    assert!(
        report.contains("kept") && report.contains("round-trip"),
        "{report}"
    );
    let questions = ansel_data::read_path(&out, None).unwrap();
    assert!(
        questions.len() >= 50,
        "only {} synthetic questions",
        questions.len()
    );
    for q in &questions {
        assert_eq!(q.positives(), 1, "{}", q.text);
        assert!(
            q.text.ends_with('?') && q.candidates.len() >= 2,
            "{}",
            q.text
        );
        assert!(q.has_document_order());
    }
    // The output is a data set like any other: it evaluates.
    let eval = ansel(&[
        "eval",
        "--data",
        out.to_str().unwrap(),
        "--model",
        "bm25",
        "--json",
    ]);
    assert_eq!(
        json_reports(&eval)[0]["questions"].as_u64(),
        Some(questions.len() as u64)
    );
}

#[test]
fn help_lists_user_commands_only() {
    let help = String::from_utf8(ansel(&["--help"]).stdout).unwrap();
    for user in ["index", "ask", "rank", "serve", "eval", "train"] {
        assert!(
            help.contains(&format!("  {user} ")),
            "{user} missing:\n{help}"
        );
    }
    // Experiment drivers live in ansel-lab.
    for lab in ["squad-sent", "cassie-bench", "bench-server", "eqag-latency"] {
        assert!(!help.contains(lab), "{lab} listed:\n{help}");
    }
}

#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    // Enough queries that --per-query writes far more than a pipe holds.
    let dir = tempfile::tempdir().unwrap();
    let (qrels, run) = (dir.path().join("qrels"), dir.path().join("run"));
    let (mut q, mut r) = (
        std::fs::File::create(&qrels).unwrap(),
        std::fs::File::create(&run).unwrap(),
    );
    for i in 0..5000 {
        writeln!(q, "q{i} 0 d{i} 1").unwrap();
        writeln!(r, "q{i} Q0 d{i} 1 1.0 t").unwrap();
    }
    drop((q, r));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args(["eval-trec", "--trec-eval", "--per-query", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone now: the rest of the output has nowhere to go.
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(first.starts_with("map"), "{first}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(output.status.code(), Some(101), "{stderr}");
}
