//! Dense retrieval from the command line: `ansel index --dense`, then `ansel ask --retriever`,
//! run as a user runs them with the committed sentence encoder (`minilm-l6-cosine`).

mod common;
use common::ansel;

fn run(args: &[&str]) -> (bool, String, String) {
    let output = ansel(args);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn succeed(args: &[&str]) -> String {
    let (ok, stdout, stderr) = run(args);
    assert!(ok, "ansel {args:?} failed: {stderr}");
    stdout
}

/// Documents where "Which physician looks after kids?" shares no word with its answer, nor with
/// anything else (titles included), so BM25 finds nothing.
fn write_corpus(dir: &std::path::Path) {
    for (name, text) in [
        (
            "paediatrics.md",
            "# Paediatrics\n\nA paediatrician is a doctor for children. Most train for years.\n",
        ),
        (
            "bees.md",
            "# Bees\n\nBees make honey in hives. A queen lays the eggs.\n",
        ),
        (
            "nile.md",
            "# The Nile\n\nThe Nile flows north through Egypt. It floods in summer.\n",
        ),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The question's first answer by each retriever, retrieving one sentence with no reranking
/// model that could reorder it: the retriever's own first pick.
fn first_answer(index: &str, retriever: &str, question: &str) -> serde_json::Value {
    let json = succeed(&[
        "ask",
        "--index",
        index,
        "--retriever",
        retriever,
        "--retrieve",
        "1",
        "--prune-model",
        "none",
        "--model",
        "wo",
        "--json",
        question,
    ]);
    serde_json::from_str(&json).unwrap()
}

#[test]
fn an_index_with_vectors_answers_a_paraphrase_that_bm25_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    write_corpus(&corpus);
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    let summary = succeed(&[
        "index",
        "--index",
        index,
        "--dense",
        "minilm-l6-cosine",
        corpus.to_str().unwrap(),
    ]);
    assert!(
        summary.contains("now holds 3 documents, 6 sentences"),
        "{summary}"
    );
    assert!(
        summary.contains("dense vectors: minilm-l6-cosine (384 components, int8)"),
        "{summary}"
    );
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("index/ansel-index.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["dense"]["model"], "minilm-l6-cosine");
    assert_eq!(settings["dense"]["count"], 6);

    let question = "Which physician looks after kids?";
    let answer = "A paediatrician is a doctor for children.";
    let bm25 = succeed(&[
        "ask",
        "--index",
        index,
        "--model",
        "wo",
        "--prune-model",
        "none",
        "--retriever",
        "bm25",
        question,
    ]);
    assert!(
        bm25.contains("no sentence in the index shares a word"),
        "{bm25}"
    );
    for retriever in ["dense", "hybrid"] {
        let found = first_answer(index, retriever, question);
        assert_eq!(found["retriever"], retriever);
        assert_eq!(found["answers"][0]["text"], answer, "{retriever}: {found}");
    }
    // `auto`, the default, is hybrid on an index with vectors.
    let found = first_answer(index, "auto", question);
    assert_eq!(found["retriever"], "hybrid", "{found}");
    // The default cascade puts it first too.
    let text = succeed(&["ask", "--index", index, question]);
    let first = text.lines().find(|l| l.starts_with("  >> ")).unwrap();
    // The answer span is marked in bold inside the sentence.
    assert_eq!(first.replace("**", ""), format!("  >> {answer}"), "{text}");

    // Documents added later, without --dense: encoded by the index's model, in step.
    let more = dir.path().join("more");
    std::fs::create_dir(&more).unwrap();
    std::fs::write(
        more.join("volcano.md"),
        "# Volcanoes\n\nMagma that reaches the surface is called lava.\n",
    )
    .unwrap();
    let summary = succeed(&["index", "--index", index, more.to_str().unwrap()]);
    assert!(
        summary.contains("now holds 4 documents, 7 sentences"),
        "{summary}"
    );
    assert!(
        summary.contains("dense vectors: minilm-l6-cosine"),
        "{summary}"
    );
    let found = first_answer(index, "dense", "What is molten rock called once it erupts?");
    assert_eq!(found["answers"][0]["doc_id"], "volcano.md", "{found}");
    let found = first_answer(index, "dense", question);
    assert_eq!(found["answers"][0]["text"], answer, "{found}");

    // Another model is refused, naming both.
    let (ok, _, stderr) = run(&[
        "index",
        "--index",
        index,
        "--dense",
        "mpnet-base-cosine",
        more.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("holds dense vectors of minilm-l6-cosine")
            || stderr.contains("cannot load the sentence encoder mpnet-base-cosine"),
        "{stderr}"
    );

    // A truncated vector file stops dense retrieval, naming the file; BM25 still answers.
    let file = std::fs::read_dir(dir.path().join("index"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("vectors-0000000000")
        })
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let (ok, _, stderr) = run(&[
        "ask",
        "--index",
        index,
        "--retriever",
        "hybrid",
        "--model",
        "wo",
        "--prune-model",
        "none",
        question,
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("vectors-0000000000.vec") && stderr.contains("truncated"),
        "{stderr}"
    );
    assert!(succeed(&[
        "ask",
        "--index",
        index,
        "--retriever",
        "bm25",
        "--model",
        "wo",
        "--prune-model",
        "none",
        "honey"
    ])
    .contains("Bees make honey"));
}

#[test]
fn dense_retrieval_over_an_index_without_vectors_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    write_corpus(&corpus);
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    succeed(&["index", "--index", index, corpus.to_str().unwrap()]);
    // `auto`, the default, is BM25 on an index without vectors.
    assert_eq!(first_answer(index, "auto", "bees")["retriever"], "bm25");
    let questions = dir.path().join("questions.jsonl");
    std::fs::write(
        &questions,
        "{\"question\": \"Where do bees live?\", \"answer\": \"hives\"}\n",
    )
    .unwrap();
    for retriever in ["dense", "hybrid"] {
        let (ok, _, stderr) = run(&["ask", "--index", index, "--retriever", retriever, "bees"]);
        assert!(!ok);
        assert!(
            stderr.contains("has no dense vectors") && stderr.contains("ansel index --dense MODEL"),
            "{stderr}"
        );
        let (ok, _, stderr) = run(&[
            "eval-ask",
            "--index",
            index,
            "--retriever",
            retriever,
            "--questions",
            questions.to_str().unwrap(),
        ]);
        assert!(!ok);
        assert!(stderr.contains("has no dense vectors"), "{stderr}");
    }
    // Vectors are not made after the fact for an index that holds sentences without them.
    let (ok, _, stderr) = run(&[
        "index",
        "--index",
        index,
        "--dense",
        "minilm-l6-cosine",
        corpus.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("cannot add dense vectors: it holds 6 sentences without vectors"),
        "{stderr}"
    );
    // A model that is no sentence encoder is refused by kind.
    let (ok, _, stderr) = run(&[
        "index",
        "--index",
        dir.path().join("other").to_str().unwrap(),
        "--dense",
        "minilm-l6-wikiqa",
        corpus.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("dense vectors need a sentence encoder"),
        "{stderr}"
    );
}

/// The same, with the sentence encoder converted to an int8 ONNX graph (no libtorch needed):
/// its vectors find the paraphrase too, and questions are encoded by it when the index reopens.
#[test]
fn an_onnx_sentence_encoder_makes_and_searches_the_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    write_corpus(&corpus);
    let encoder = dir.path().join("minilm-int8");
    succeed(&[
        "quantize",
        "--model",
        "minilm-l6-cosine",
        "--out",
        encoder.to_str().unwrap(),
    ]);
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    let summary = succeed(&[
        "index",
        "--index",
        index,
        "--dense",
        encoder.to_str().unwrap(),
        corpus.to_str().unwrap(),
    ]);
    assert!(summary.contains("(384 components, int8)"), "{summary}");
    let answer = first_answer(index, "dense", "Which physician looks after kids?");
    assert_eq!(
        answer["answers"][0]["text"],
        "A paediatrician is a doctor for children."
    );
}
