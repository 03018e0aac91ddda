//! SemEval-2016 Task 3 end to end: `eval --task`, its run files, `eval-semeval` and `convert`.
//! The tests on the real data look for `../shared/data/semeval2016-cqa` (CI has it).

use std::path::{Path, PathBuf};

mod common;
use common::{ansel, ok, present, root};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ansel-data/tests/fixtures/semeval-mini.xml")
}

fn semeval_data() -> Option<PathBuf> {
    let dir = root().join("../shared/data/semeval2016-cqa");
    present(&[&dir]).then_some(dir)
}

fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn eval_writes_runs_that_eval_semeval_scores_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let fixture = fixture();
    let reports = json_lines(&ok(&ansel(&[
        "eval",
        "--data",
        fixture.to_str().unwrap(),
        "--task",
        "c",
        "--model",
        "rr",
        "--model",
        "bm25",
        "--json",
        "--semeval-dir",
        runs.to_str().unwrap(),
    ])));
    assert_eq!(reports.len(), 2);
    // Q1's Good comments are its 1st and 5th in search engine order: AP (1 + 2/5) / 2; Q2 has
    // none and counts as 0 in the official MAP, while ansel's metrics skip it.
    let rr = &reports[0];
    assert_eq!(rr["semeval"]["task"], "c");
    assert_eq!(rr["semeval"]["questions"], 2);
    assert_eq!(rr["semeval"]["MAP"], 0.35);
    assert_eq!(rr["questions"], 1);
    assert_eq!(rr["MAP"], 0.7);
    for (report, name) in reports.iter().zip(["rr", "bm25"]) {
        let rescored = json_lines(&ok(&ansel(&[
            "eval-semeval",
            "--gold",
            runs.join("gold.relevancy").to_str().unwrap(),
            "--pred",
            runs.join(format!("{name}.pred")).to_str().unwrap(),
            "--json",
        ])));
        for metric in ["MAP", "MRR", "AvgRec"] {
            assert_eq!(
                rescored[0][metric], report["semeval"][metric],
                "{name} {metric}"
            );
        }
    }
    // Without a run, the gold file's own scores (the search engine's order) are scored: rr.
    let ir = json_lines(&ok(&ansel(&[
        "eval-semeval",
        "--gold",
        runs.join("gold.relevancy").to_str().unwrap(),
        "--json",
    ])));
    assert_eq!(ir[0]["MAP"], rr["semeval"]["MAP"]);
    let pred = std::fs::read_to_string(runs.join("rr.pred")).unwrap();
    assert!(pred.starts_with("Q1\tQ1_R4_C1\t1\t1\ttrue\n"), "{pred}");
    assert_eq!(pred.lines().count(), 6);
}

#[test]
fn convert_writes_a_task_as_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b.jsonl");
    let fixture = fixture();
    ok(&ansel(&[
        "convert",
        "--data",
        fixture.to_str().unwrap(),
        "--format",
        "semeval",
        "--task",
        "b",
        "--out",
        out.to_str().unwrap(),
    ]));
    let questions = ansel_data::read_path(&out, None).unwrap();
    let original = ansel_data::read_path(
        &fixture,
        Some(ansel_data::Format::SemEval(ansel_data::CqaTask::B)),
    )
    .unwrap();
    assert_eq!(questions, original);
    assert_eq!(questions[0].candidates[0].id, "Q1_R4");
}

#[test]
fn format_and_task_must_agree() {
    let fixture = fixture();
    let run = |args: &[&str]| {
        let mut all = vec!["eval", "--data", fixture.to_str().unwrap(), "--model", "wo"];
        all.extend_from_slice(args);
        let out = ansel(&all);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["--format", "semeval"]).contains("--format semeval needs --task"));
    assert!(run(&["--format", "wikiqa", "--task", "a"]).contains("--task is for --format semeval"));
    assert!(run(&[]).contains("pass --format semeval --task a|b|c"));
    let err = run(&["--format", "semeval", "--task", "d"]);
    assert!(err.contains("invalid value 'd'"), "{err}");
    let out = ansel(&[
        "eval",
        "--data",
        root()
            .join("examples/sample-questions.jsonl")
            .to_str()
            .unwrap(),
        "--model",
        "wo",
        "--semeval-dir",
        "target/never",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--semeval-dir needs SemEval data"));
}

#[test]
fn the_official_scorer_gives_the_published_ir_baselines() {
    let Some(data) = semeval_data() else { return };
    // SemEval-2016 Task 3 paper (A, B) and the thesis' Table 8.3 (C): the IR baseline on test.
    for (task, map, mrr) in [
        ("A", "0.5953", "0.6783"),
        ("B", "0.7475", "0.8379"),
        ("C", "0.4036", "0.4583"),
    ] {
        let gold = std::fs::read_dir(data.join("test-gold"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.to_string_lossy()
                    .ends_with(&format!("subtask{task}.relevancy"))
            })
            .unwrap();
        let r = &json_lines(&ok(&ansel(&[
            "eval-semeval",
            "--gold",
            gold.to_str().unwrap(),
            "--json",
        ])))[0];
        assert_eq!(
            format!("{:.4}", r["MAP"].as_f64().unwrap()),
            map,
            "task {task}"
        );
        assert_eq!(
            format!("{:.4}", r["MRR"].as_f64().unwrap()),
            mrr,
            "task {task}"
        );
    }
}

#[test]
fn dev_reads_as_the_readme_counts_it() {
    let Some(data) = semeval_data() else { return };
    let dev = data.join("dev/SemEval2016-Task3-CQA-QL-dev.xml.gz");
    let dev_a = data.join("dev/SemEval2016-Task3-CQA-QL-dev-subtaskA.xml.gz");
    let read = |path: &Path, task| {
        ansel_data::read_path(path, Some(ansel_data::Format::SemEval(task))).unwrap()
    };
    use ansel_data::CqaTask::{A, B, C};
    let count = |qs: &[ansel_data::Question]| -> (usize, usize, usize) {
        (
            qs.len(),
            qs.iter().map(|q| q.candidates.len()).sum(),
            qs.iter().map(|q| q.positives()).sum(),
        )
    };
    // README v3.2: dev B 500 related questions (59 PerfectMatch + 155 Relevant), C 5,000
    // comments (345 Good), A 2,440 comments (818 Good).
    assert_eq!(count(&read(&dev, B)), (50, 500, 214));
    assert_eq!(count(&read(&dev, C)), (50, 5000, 345));
    let a = read(&dev_a, A);
    assert_eq!(count(&a), (244, 2440, 818));
    // The full file with its repeated threads skipped gives the same task A lists.
    assert_eq!(read(&dev, A), a);
    // The v2.0 train part 1 has no task A labels: refused for A, read for B and C.
    let part1 = data.join("train/SemEval2016-Task3-CQA-QL-train-part1.v2.0-OLD.xml.gz");
    let err = ansel_data::read_path(&part1, Some(ansel_data::Format::SemEval(A))).unwrap_err();
    assert!(
        err.to_string()
            .contains("field `RELC_RELEVANCE2RELQ`: comment"),
        "{err}"
    );
    assert_eq!(read(&part1, C).len(), 103);
}

#[test]
fn convert_splits_by_original_question_and_records_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let (train, tune) = (
        dir.path().join("train.jsonl"),
        dir.path().join("tune.jsonl"),
    );
    let fixture = fixture();
    let split = |seed: &str| {
        ok(&ansel(&[
            "convert",
            "--data",
            fixture.to_str().unwrap(),
            "--task",
            "c",
            "--out",
            train.to_str().unwrap(),
            "--tune-out",
            tune.to_str().unwrap(),
            "--tune-fraction",
            "0.5",
            "--seed",
            seed,
        ]));
        let record: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("tune.jsonl.split.json")).unwrap(),
        )
        .unwrap();
        let ids = |path: &Path| -> Vec<String> {
            ansel_data::read_path(path, None)
                .unwrap()
                .into_iter()
                .map(|q| q.id)
                .collect()
        };
        assert_eq!(record["tune"], serde_json::json!(ids(&tune)));
        assert_eq!(record["train"], serde_json::json!(ids(&train)));
        assert_eq!(record["seed"], seed.parse::<u64>().unwrap());
        (ids(&train), ids(&tune))
    };
    let (a_train, a_tune) = split("1");
    assert_eq!((a_train.len(), a_tune.len()), (1, 1));
    assert_eq!(
        split("1"),
        (a_train, a_tune),
        "the same seed splits the same way"
    );
    let out = ansel(&[
        "convert",
        "--data",
        root()
            .join("examples/sample-questions.jsonl")
            .to_str()
            .unwrap(),
        "--out",
        train.to_str().unwrap(),
        "--tune-out",
        tune.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --task a|b|c"));
}
