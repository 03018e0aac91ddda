//! End-to-end tests of answering from documents: `ansel index`, `ask`, `rank`
//! and `serve`, run as a user runs them, over the sample corpus in `examples/`.

use ansel_index::SentenceIndex;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod common;
use common::ansel;

fn succeed(args: &[&str]) -> String {
    let output = ansel(args);
    assert!(
        output.status.success(),
        "ansel {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs `ansel ARGS` in `dir` with `input` on its standard input.
fn with_input(args: &[&str], dir: &Path, input: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// An index of the sample corpus in a fresh temporary folder.
fn corpus_index() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index").to_str().unwrap().to_string();
    let corpus = examples().join("corpus");
    let summary = succeed(&["index", "--index", &index, corpus.to_str().unwrap()]);
    assert!(summary.starts_with("indexed 22 documents, "), "{summary}");
    (dir, index)
}

#[test]
fn lexical_models_that_weigh_words_by_the_index_get_its_texts() {
    // idf-wo and bm25 need the index's texts as their corpus; the cascade reads them only then.
    let (_dir, index) = corpus_index();
    for (model, prune) in [("idf-wo", "none"), ("wo", "bm25")] {
        let text = succeed(&[
            "ask",
            "--index",
            &index,
            "--model",
            model,
            "--prune-model",
            prune,
            "--reader",
            "none",
            "Who invented the Fresnel lens?",
        ]);
        assert!(
            text.contains("Augustin Fresnel invented a lens"),
            "{model}/{prune}: {text}"
        );
    }
}

#[test]
fn index_then_ask_answers_with_context() {
    let (_dir, index) = corpus_index();
    let text = succeed(&["ask", "--index", &index, "Who invented the Fresnel lens?"]);
    assert!(
        text.contains("1. [") && text.contains("Lighthouses (lighthouses.md, sentence 4)"),
        "{text}"
    );
    // The answer span is in bold inside its sentence (whichever words the reader picks).
    assert!(text.contains("**"), "{text}");
    assert!(
        text.replace("**", "")
            .contains("  >> In 1822 the French physicist Augustin Fresnel invented a lens"),
        "{text}"
    );

    let json = succeed(&[
        "ask", "--index", &index, "--json", "--top", "2", "Why", "is", "octopus", "blood", "blue?",
    ]);
    let answers: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(answers["question"], "Why is octopus blood blue?");
    assert_eq!(answers["answers"].as_array().unwrap().len(), 2);
    let top = &answers["answers"][0];
    assert_eq!(top["doc_id"], "octopus.md");
    assert_eq!(top["title"], "The octopus");
    assert_eq!(
        top["prev"],
        "Two pump blood through the gills, and the third pumps it through the rest of the body."
    );
    for field in ["text", "prev", "next", "score", "position", "stage"] {
        assert!(!top[field].is_null(), "answer lacks {field}: {top}");
    }
    // No time at all: the reranker is skipped and the pruned order stands.
    let rushed = succeed(&[
        "ask",
        "--index",
        &index,
        "--json",
        "--budget-ms",
        "0",
        "How long is the Nile?",
    ]);
    let rushed: serde_json::Value = serde_json::from_str(&rushed).unwrap();
    assert_eq!(rushed["reranked"], 0);
    assert_eq!(rushed["answers"][0]["stage"], "prune");
}

#[test]
fn documents_added_later_join_the_index_and_replace_their_old_versions() {
    let (dir, index) = corpus_index();
    let extra = dir.path().join("extra");
    std::fs::create_dir(&extra).unwrap();
    std::fs::write(
        extra.join("kites.md"),
        "# Kites\n\nKites were invented in China. The first kites were made of silk.\n",
    )
    .unwrap();
    let summary = succeed(&["index", "--index", &index, extra.to_str().unwrap()]);
    assert!(summary.contains("now holds 23 documents"), "{summary}");
    std::fs::write(extra.join("kites.md"), "# Kites\n\nKites fly.\n").unwrap();
    let summary = succeed(&["index", "--index", &index, extra.to_str().unwrap()]);
    assert!(summary.contains("now holds 23 documents"), "{summary}");
    let text = succeed(&["ask", "--index", &index, "Where were kites invented?"]);
    assert!(text.contains(">> Kites fly."), "{text}");
    assert!(!text.contains("silk"), "the old version is gone: {text}");

    // Emptied, the document is said to have no sentences and its old version leaves the index.
    std::fs::write(extra.join("kites.md"), "").unwrap();
    let output = ansel(&["index", "--index", &index, extra.to_str().unwrap()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("indexed 0 documents"), "{stdout}");
    assert!(stdout.contains("now holds 22 documents"), "{stdout}");
    assert!(
        stderr.contains("kites.md: no sentences, nothing indexed"),
        "{stderr}"
    );
}

/// An empty file is named and not counted: the commit log line and the summary agree.
#[test]
fn an_empty_document_is_counted_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("a.md"), "Bees make honey. Bees fly.").unwrap();
    std::fs::write(docs.join("empty.md"), "").unwrap();
    std::fs::write(docs.join("b.txt"), "Cats sleep.").unwrap();
    let index = dir.path().join("index");
    let output = ansel(&[
        "index",
        "--index",
        index.to_str().unwrap(),
        docs.to_str().unwrap(),
    ]);
    assert!(output.status.success());
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(out.starts_with("indexed 2 documents, 3 sentences"), "{out}");
    assert!(
        err.contains("document empty.md: no sentences, nothing indexed"),
        "{err}"
    );
    assert!(err.contains("committed 2 documents (3 sentences)"), "{err}");
}

#[test]
fn bad_documents_and_missing_indexes_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\": \"a\", \"text\": \"Fine.\"}\n{\"id\": \"b\"}\n",
    )
    .unwrap();
    let index = dir.path().join("index");
    let output = ansel(&[
        "index",
        "--index",
        index.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("bad.jsonl:2: missing field `text`"), "{err}");
    assert!(!index.exists(), "bad input leaves no index behind");

    let output = ansel(&["ask", "--index", dir.path().to_str().unwrap(), "anything"]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("no ansel index here"), "{err}");
}

#[test]
fn rank_scores_candidates_users_bring() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("q.jsonl");
    std::fs::write(
        &data,
        r#"{"id": "q1", "question": "Who wrote Hamlet?", "candidates": [
            {"id": "a", "text": "Hamlet is a play."},
            {"id": "b", "text": "Shakespeare wrote Hamlet around 1600."}]}"#
            .replace('\n', " ")
            + "\n",
    )
    .unwrap();
    let out = succeed(&["rank", "--data", data.to_str().unwrap(), "--model", "wo"]);
    let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["id"], "q1");
    assert_eq!(line["model"], "wo");
    assert_eq!(
        line["scores"][0],
        serde_json::json!({"id": "a", "score": 1.0})
    );
    assert_eq!(
        line["scores"][1],
        serde_json::json!({"id": "b", "score": 2.0})
    );
    assert_eq!(line["ranking"], serde_json::json!(["b", "a"]));
}

#[test]
fn rank_reads_standard_input_and_finds_shipped_models_by_name() {
    let input = r#"{"id": "q1", "question": "Who wrote Hamlet?", "candidates": [{"id": "a", "text": "Hamlet is a play."}, {"id": "b", "text": "Shakespeare wrote Hamlet around 1600."}]}"#;
    // The default model is a committed cross-encoder, found by name from the binary's
    // location, whatever the working directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = with_input(
        &["rank", "--data", "-"],
        elsewhere.path(),
        &format!("{input}\n"),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8(output.stdout).unwrap().trim()).unwrap();
    assert_eq!(line["model"], ansel::models::DEFAULT_MODEL);
    assert_eq!(line["ranking"], serde_json::json!(["b", "a"]));

    // Bad input on standard input is reported as <stdin> with its line.
    let output = with_input(
        &["rank", "--data", "-", "--format", "jsonl", "--model", "wo"],
        elsewhere.path(),
        &format!("{input}\n{{\"question\": 3}}\n"),
    );
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("<stdin>:2"), "{err}");

    // A name no folder holds is explained, with the folders searched.
    let output = Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args([
            "rank",
            "--data",
            "-",
            "--format",
            "jsonl",
            "--model",
            "no-such-model",
        ])
        .env("ANSEL_MODELS", elsewhere.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("unknown model \"no-such-model\"") && err.contains("ANSEL_MODELS"),
        "{err}"
    );
}

/// SIGKILLs the indexer after its first commit, then checks that every
/// committed document is in the index, whole, and that indexing can resume.
#[test]
fn killing_the_indexer_loses_nothing_committed() {
    const DOCUMENTS: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("many.jsonl");
    let mut lines = String::new();
    for i in 0..DOCUMENTS {
        lines.push_str(&format!(
            "{{\"id\": \"doc-{i}\", \"title\": \"Document {i}\", \"text\": \"Item {i} is red. It weighs {i} grams. It was made in year {i}.\"}}\n"
        ));
    }
    std::fs::write(&corpus, lines).unwrap();
    let index_dir = dir.path().join("index");
    let args = [
        "index",
        "--index",
        index_dir.to_str().unwrap(),
        "--commit-every",
        "50",
        corpus.to_str().unwrap(),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(9),
            "killed mid-run, not finished: {status:?}"
        );
    }
    let committed: usize = line
        .strip_prefix("committed ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("expected a commit line, got {line:?}"));
    assert!(committed < DOCUMENTS, "{line}");

    let index = SentenceIndex::open(&index_dir).unwrap();
    let stats = index.stats().unwrap();
    assert!(
        stats.documents as usize >= committed,
        "{stats:?} < {committed}"
    );
    assert_eq!(
        stats.sentences,
        3 * stats.documents,
        "only whole documents: {stats:?}"
    );
    for i in 0..committed {
        assert!(
            index.contains_document(&format!("doc-{i}")).unwrap(),
            "doc-{i} lost"
        );
    }
    drop(index);

    let summary = succeed(&args);
    assert!(
        summary.contains(&format!(
            "now holds {DOCUMENTS} documents, {} sentences",
            3 * DOCUMENTS
        )),
        "{summary}"
    );
}

/// `ansel serve` on a free loopback port; stopped with SIGTERM by `stop`.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(index: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ansel"))
            .args(["serve", "--index", index, "--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("ansel serve: listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Server { child, addr }
    }

    fn get(&self, path: &str) -> String {
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    /// SIGTERM, then the exit status and what the server printed on stderr.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        let terminated = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(terminated.success());
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status, stderr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[test]
fn serve_answers_and_shuts_down_gracefully_on_sigterm() {
    let (_dir, index) = corpus_index();
    let server = Server::start(&index);
    let health = server.get("/health");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.contains("\"documents\":22"), "{health}");
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(stderr.contains("ansel serve: shut down"), "{stderr}");
}

/// The web page, driven by headless Chromium: it asks the question in its URL
/// and shows the answer highlighted between its neighbours. CI installs
/// Chromium (scripts/test.sh); elsewhere the test is skipped without it.
#[test]
fn the_web_page_shows_answers_in_context_in_chromium() {
    let Some(chromium) = ["chromium", "chromium-browser"].into_iter().find(|name| {
        Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium (scripts/test.sh installs it)"
        );
        eprintln!("skipped: no chromium");
        return;
    };
    let (dir, index) = corpus_index();
    let server = Server::start(&index);
    let profile = dir.path().join("chromium-profile");
    // The page after its script ran, and Chromium's stderr.
    let page = |question: &str| {
        let url = format!("http://{}/?q={question}", server.addr);
        let output = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                &format!("--user-data-dir={}", profile.display()),
                "--virtual-time-budget=10000",
                "--dump-dom",
                &url,
            ])
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (dom, stderr) = page("Who+invented+the+Fresnel+lens%3F");
    assert!(
        dom.contains("<mark class=\"sentence\">In 1822 the "),
        "no highlighted answer in the page:\n{dom}\n{stderr}"
    );
    assert!(dom.contains("<b class=\"title\">Lighthouses</b>"), "{dom}");
    assert!(
        dom.contains("<span class=\"around\"> The Fresnel lens focuses light into a strong beam"),
        "the next sentence is shown as context:\n{dom}"
    );
    // The span in bold inside the highlighted sentence, and above it; the probability in per cent.
    assert!(
        dom.contains("<strong class=\"span\">")
            && dom.contains("<div class=\"span-answer\">Answer: "),
        "no answer span in the page:\n{dom}"
    );
    assert!(dom.contains("% likely to answer</span>"), "{dom}");
    assert!(
        dom.contains("<p id=\"abstain\" hidden=\"\">"),
        "answered: no abstain message\n{dom}"
    );
    // A question the corpus cannot answer: the page says so and greys the closest sentences.
    let (dom, _) = page("Who+won+the+2018+World+Cup%3F");
    assert!(
        dom.contains("<p id=\"abstain\">The documents do not seem to answer this question."),
        "no abstain message:\n{dom}"
    );
    assert!(
        dom.contains("<ol id=\"answers\" class=\"unanswered\">"),
        "{dom}"
    );
    assert!(!dom.contains("<div class=\"span-answer\">"), "{dom}");
    let (status, _) = server.stop();
    assert!(status.success());
}

#[test]
fn eval_ask_scores_the_default_cascade_on_the_sample_questions() {
    let (dir, index) = corpus_index();
    let questions = examples().join("corpus-questions.jsonl");
    let out = succeed(&[
        "eval-ask",
        "--index",
        &index,
        "--questions",
        questions.to_str().unwrap(),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["model"], ansel::models::DEFAULT_ASK_MODEL);
    assert_eq!(report["prune_model"], ansel::models::DEFAULT_PRUNE_MODEL);
    assert_eq!(report["questions"], 28);
    // A regression guard: the default cascade answers most sample questions first
    // (0.893 measured in docs/results/default-model.md) and finds nearly all of them.
    let p_at_1 = report["P@1"].as_f64().unwrap();
    assert!(p_at_1 >= 0.85, "P@1 {p_at_1}");
    assert!(report["found"].as_u64().unwrap() >= 26, "{report}");
    assert!(report["MRR"].as_f64().unwrap() >= p_at_1);
    // The default model's own calibration decides which questions are answered.
    let answered = report["answered"].as_u64().unwrap();
    assert!((20..=28).contains(&answered), "{report}");

    // --answers-out: each question's answers as `ask --json` gives them, with the expected answer;
    // --spans 2: the first two answers are read, the others not.
    let answers_out = dir.path().join("answers.jsonl");
    succeed(&[
        "eval-ask",
        "--index",
        &index,
        "--questions",
        questions.to_str().unwrap(),
        "--spans",
        "2",
        "--answers-out",
        answers_out.to_str().unwrap(),
    ]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&answers_out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 28);
    let first = &lines[0];
    assert!(
        first["expected"].is_array() && first["answered"].is_boolean(),
        "{first}"
    );
    let answers = first["answers"].as_array().unwrap();
    assert!(answers[0]["probability"].is_number(), "{first}");
    let read = |n: usize| {
        lines
            .iter()
            .filter(|l| !l["answers"][n]["span"].is_null())
            .count()
    };
    assert!(
        read(0) >= 20 && read(1) > 0 && read(2) == 0,
        "{} {} {}",
        read(0),
        read(1),
        read(2)
    );

    // Several references (SQuAD's dev set): a sentence holding any of them answers the question,
    // so a reference no sentence holds, put first, changes nothing.
    let several = dir.path().join("several.jsonl");
    let lines: String = std::fs::read_to_string(&questions)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let q: serde_json::Value = serde_json::from_str(l).unwrap();
            let refs = serde_json::json!(["no sentence says zqxv", q["answer"]]);
            serde_json::json!({"question": q["question"], "answers": refs}).to_string() + "\n"
        })
        .collect();
    std::fs::write(&several, lines).unwrap();
    let out = succeed(&[
        "eval-ask",
        "--index",
        &index,
        "--questions",
        several.to_str().unwrap(),
        "--json",
    ]);
    let with_several: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in ["P@1", "MRR", "found", "span_EM", "span_F1"] {
        assert_eq!(with_several[key], report[key], "{key}: {with_several}");
    }

    let bad = dir.path().join("bad.jsonl");
    for (line, field) in [
        ("{\"question\": \"q\"}", "missing field `answer`"),
        (
            "{\"question\": \"q\", \"answers\": []}",
            "field `answers`: no answer",
        ),
        (
            "{\"question\": \"q\", \"answers\": [\"a\", \" \"]}",
            "field `answers[1]`: empty",
        ),
        (
            "{\"question\": \"q\", \"answer\": \"a\", \"answers\": [\"a\"]}",
            "give one",
        ),
        (
            "{\"question\": \"q\", \"answers\": \"a\"}",
            "field `answers`: invalid type",
        ),
    ] {
        std::fs::write(
            &bad,
            format!("{{\"question\": \"q\", \"answer\": \"a\"}}\n{line}\n"),
        )
        .unwrap();
        let output = ansel(&[
            "eval-ask",
            "--index",
            &index,
            "--questions",
            bad.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && err.contains("bad.jsonl:2") && err.contains(field),
            "{line}: {err}"
        );
    }
}

/// The default `rank` score of a (question, text) pair is the pair's own: the same whatever other
/// texts come with it and in whatever order, so ten copies of a text score alike.
#[test]
fn the_default_score_of_a_pair_does_not_depend_on_the_other_texts() {
    let texts = [
        "The tower is 330 metres tall.",
        "Gustave Eiffel's company built the tower.",
        "Grass is green.",
    ];
    let list = |id: &str, texts: &[&str]| {
        let candidates: Vec<serde_json::Value> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"id": format!("c{i}"), "text": t}))
            .collect();
        serde_json::json!({"id": id, "question": "How tall is the Eiffel Tower?", "candidates": candidates})
            .to_string()
    };
    let reversed: Vec<&str> = texts.iter().rev().copied().collect();
    let input = [
        list("abc", &texts),
        list("cba", &reversed),
        list("same", &[texts[1]; 10]),
    ]
    .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let output = with_input(&["rank", "--data", "-"], dir.path(), &format!("{input}\n"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let scores: Vec<Vec<f64>> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let line: serde_json::Value = serde_json::from_str(l).unwrap();
            line["scores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["score"].as_f64().unwrap())
                .collect()
        })
        .collect();
    let (abc, cba, same) = (&scores[0], &scores[1], &scores[2]);
    for i in 0..3 {
        assert!((abc[i] - cba[2 - i]).abs() < 1e-5, "{abc:?} vs {cba:?}");
    }
    assert!(
        same.iter().all(|s| (s - abc[1]).abs() < 1e-5),
        "{same:?} vs {}",
        abc[1]
    );
    assert!(abc[0] > abc[1] && abc[1] > abc[2], "{abc:?}");
}

/// `ansel index --unit passage` stores paragraphs under their heading paths, `ask` answers with
/// them, and the index keeps its unit: asking it for sentences later is refused.
#[test]
fn a_passage_index_answers_with_paragraphs_and_their_headings() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("bees.md"),
        "# Honey bees\n\nHoney bees are insects. They live in colonies.\n\n## The queen\n\n\
         The queen lays up to 2,000 eggs a day. She lives for several years.\n\n## Workers\n\n\
         Workers gather nectar and build the comb.\n",
    )
    .unwrap();
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    let out = succeed(&[
        "index",
        "--index",
        index,
        "--unit",
        "passage",
        docs.to_str().unwrap(),
    ]);
    assert!(out.contains("3 passages"), "{out}");
    let out = succeed(&[
        "ask",
        "--index",
        index,
        "--model",
        "idf-wo",
        "--prune-model",
        "none",
        "--top",
        "1",
        "How many eggs does the queen lay?",
    ]);
    assert!(
        out.contains("Honey bees › The queen (bees.md, passage 2)"),
        "{out}"
    );
    assert!(
        out.replace("**", "")
            .contains(">> The queen lays up to 2,000 eggs a day. She lives for several years."),
        "{out}"
    );
    let refused = ansel(&[
        "index",
        "--index",
        index,
        "--unit",
        "sentence",
        docs.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("holds passages, not sentences"), "{err}");
}

/// The default cascade (BM25, the distilled student, the MPNet cross-encoder and its calibration)
/// answers the question the stronger-encoder issue opened with, over a few documents, and says
/// so with a probability; the span reader marks the answer inside the sentence; a question
/// nothing answers gets "no answer found".
#[test]
fn the_default_models_answer_how_tall_the_eiffel_tower_is() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.jsonl");
    let lines = [
        serde_json::json!({"id": "eiffel", "title": "Eiffel Tower", "text": "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named after the engineer Gustave Eiffel, whose company designed and built the tower. The tower is 330 metres tall, about the same height as an 81-storey building. It was the tallest man-made structure in the world for 41 years."}),
        serde_json::json!({"id": "paris", "title": "Paris", "text": "Paris is the capital and largest city of France. The city is a major railway, highway and air-transport hub. Paris is known for its museums and architectural landmarks."}),
        serde_json::json!({"id": "towers", "title": "Lattice tower", "text": "A lattice tower is a freestanding framework tower. Lattice towers are used for power lines and radio masts. Many tall towers are built of steel."}),
        serde_json::json!({"id": "penicillin", "title": "Penicillin", "text": "Penicillins are a group of antibiotics. Penicillin was discovered in 1928 by the Scottish scientist Alexander Fleming, who noticed that a mould killed the bacteria around it. It was first used to treat patients in 1942."}),
        serde_json::json!({"id": "doctor-who", "title": "Doctor Who", "text": "Doctor Who is a British science fiction television series. The first episode was broadcast on 23 November 1963 by the BBC. The programme follows a time-travelling alien called the Doctor."}),
    ];
    std::fs::write(&docs, lines.map(|l| l.to_string()).join("\n")).unwrap();
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    succeed(&["index", "--index", index, docs.to_str().unwrap()]);
    let out = succeed(&[
        "ask",
        "--index",
        index,
        "--json",
        "How tall is the Eiffel Tower?",
    ]);
    let reply: serde_json::Value = serde_json::from_str(&out).unwrap();
    let best = &reply["answers"][0];
    assert!(
        best["text"].as_str().unwrap().contains("330 metres"),
        "{reply:#}"
    );
    assert_eq!(reply["answered"], true, "{reply:#}");
    assert!(best["probability"].as_f64().unwrap() > 0.5, "{reply:#}");
    // The span: byte offsets into the answer's text, and a probability.
    let span = &best["span"];
    assert_eq!(span["text"], "330 metres", "{reply:#}");
    let text = best["text"].as_str().unwrap();
    let (start, end) = (
        span["start"].as_u64().unwrap() as usize,
        span["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&text[start..end], "330 metres");
    assert!((0.0..=1.0).contains(&span["score"].as_f64().unwrap()));
    for (question, expected) in [
        ("Who discovered penicillin?", "Alexander Fleming"),
        (
            "When was the first episode of Doctor Who broadcast?",
            "23 November 1963",
        ),
    ] {
        let out = succeed(&["ask", "--index", index, question]);
        assert!(
            out.contains(&format!("Answer: {expected} (span p=")),
            "{out}"
        );
        assert!(out.contains(&format!("**{expected}**")), "{out}");
    }
    let out = succeed(&[
        "ask",
        "--index",
        index,
        "--json",
        "--no-span",
        "How tall is the Eiffel Tower?",
    ]);
    let reply: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(reply["answers"][0]["span"].is_null(), "{reply:#}");
    let out = succeed(&["ask", "--index", index, "Which river flows through Paris?"]);
    assert!(out.contains("no answer found"), "{out}");
    assert!(
        !out.contains("Answer: "),
        "no answer, no span above the list: {out}"
    );
}
