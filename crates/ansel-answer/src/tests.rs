use super::*;
use ansel_index::{Document, SentenceIndex};
use std::sync::{Arc, Mutex};

/// BM25 over `index`, as an answerer takes it.
fn bm25(index: SentenceIndex) -> Box<dyn Retriever> {
    Box::new(IndexRetriever::bm25(Arc::new(index)))
}

/// Scores a candidate by its length in bytes and records each batch it sees.
struct LengthRanker {
    batches: Mutex<Vec<Vec<usize>>>,
    extra_scores: usize,
}

impl LengthRanker {
    fn new() -> Self {
        LengthRanker {
            batches: Mutex::new(Vec::new()),
            extra_scores: 0,
        }
    }
}

impl Ranker for LengthRanker {
    fn name(&self) -> &str {
        "length"
    }

    fn score(&self, question: &Question) -> ansel_model::Result<Vec<f32>> {
        let mut scores: Vec<f32> = question
            .candidates
            .iter()
            .map(|c| c.text.len() as f32)
            .collect();
        scores.extend(std::iter::repeat_n(0.0, self.extra_scores));
        Ok(scores)
    }

    fn score_all(&self, questions: &[Question]) -> ansel_model::Result<Vec<Vec<f32>>> {
        self.batches
            .lock()
            .unwrap()
            .push(questions.iter().map(|q| q.candidates.len()).collect());
        questions.iter().map(|q| self.score(q)).collect()
    }
}

/// An index of one document whose sentences mention "bees" with growing length.
fn bee_index(dir: &std::path::Path) -> SentenceIndex {
    let index = SentenceIndex::open_or_create(dir).unwrap();
    let mut writer = index.writer().unwrap();
    let text: String = (0..12)
        .map(|i| format!("Bees {} fly.", "very ".repeat(i)))
        .collect::<Vec<_>>()
        .join(" ");
    writer
        .add(&Document {
            id: "bees".into(),
            title: "Bees".into(),
            text,
        })
        .unwrap();
    writer
        .add(&Document {
            id: "cats".into(),
            title: "Cats".into(),
            text: "Cats sleep a lot. Bees annoy cats.".into(),
        })
        .unwrap();
    writer.commit().unwrap();
    index.reload().unwrap();
    index
}

fn ask(question: &str, budget: Option<Duration>) -> Ask {
    Ask {
        question: question.into(),
        top_k: 3,
        budget,
        retriever: None,
        spans: usize::MAX,
    }
}

#[test]
fn prune_keeps_the_best_and_rerank_orders_them_with_context() {
    let dir = tempfile::tempdir().unwrap();
    let answerer = Answerer {
        retriever: bm25(bee_index(dir.path())),
        cascade: Cascade {
            retrieve: 20,
            prune: Some((Box::new(LengthRanker::new()), 4)),
            rerank: ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap(),
            rerank_chunk: 3,
        },
        reader: None,
    };
    let answers = answerer.ask(&ask("Do bees fly?", None)).unwrap();
    assert_eq!(answers.retrieved, 13);
    assert_eq!(answers.reranked, 4);
    // The four longest bee sentences survive pruning; wo-rr then prefers the
    // earliest of them (positions 8..=11, all with "bees" and "fly").
    let positions: Vec<usize> = answers
        .answers
        .iter()
        .map(|a| a.sentence.position)
        .collect();
    assert_eq!(positions, vec![8, 9, 10]);
    let top = &answers.answers[0];
    assert_eq!(top.stage, Stage::Rerank);
    assert_eq!(top.sentence.title, "Bees");
    assert!(top
        .sentence
        .prev
        .as_deref()
        .unwrap()
        .starts_with("Bees very"));

    // The sentences the pruner did not send on still answer, below, in its order.
    let all = answerer
        .ask(&Ask {
            top_k: 20,
            ..ask("Do bees fly?", None)
        })
        .unwrap();
    assert_eq!(all.answers.len(), 13);
    let stages: Vec<Stage> = all.answers.iter().map(|a| a.stage).collect();
    assert_eq!(stages[..4], [Stage::Rerank; 4]);
    assert!(stages[4..].iter().all(|&s| s == Stage::Prune), "{stages:?}");
    let lengths: Vec<usize> = all.answers[4..]
        .iter()
        .map(|a| a.sentence.text.len())
        .collect();
    assert!(lengths.windows(2).all(|w| w[0] >= w[1]), "{lengths:?}");
}

#[test]
fn questions_asked_together_are_scored_together() {
    let dir = tempfile::tempdir().unwrap();
    let reranker = std::sync::Arc::new(LengthRanker::new());
    struct Shared(std::sync::Arc<LengthRanker>);
    impl Ranker for Shared {
        fn name(&self) -> &str {
            "shared"
        }
        fn score(&self, q: &Question) -> ansel_model::Result<Vec<f32>> {
            self.0.score(q)
        }
        fn score_all(&self, qs: &[Question]) -> ansel_model::Result<Vec<Vec<f32>>> {
            self.0.score_all(qs)
        }
    }
    let answerer = Answerer {
        retriever: bm25(bee_index(dir.path())),
        cascade: Cascade {
            retrieve: 5,
            prune: None,
            rerank: Box::new(Shared(reranker.clone())),
            rerank_chunk: 4,
        },
        reader: None,
    };
    let asks = [ask("bees", None), ask("cats", None), ask("zebras", None)];
    let results = answerer.ask_batch(&asks).unwrap();
    assert_eq!(results.len(), 3);
    let cats = results[1].as_ref().unwrap();
    assert_eq!(cats.answers[0].sentence.text, "Cats sleep a lot.");
    assert!(results[2].as_ref().unwrap().answers.is_empty());
    // Two rounds (5 candidates in chunks of 4) for the questions with hits.
    assert_eq!(*reranker.batches.lock().unwrap(), vec![vec![4, 2], vec![1]]);
}

#[test]
fn a_spent_budget_skips_reranking_and_keeps_the_pruned_order() {
    let dir = tempfile::tempdir().unwrap();
    let answerer = Answerer {
        retriever: bm25(bee_index(dir.path())),
        cascade: Cascade {
            retrieve: 20,
            prune: Some((Box::new(LengthRanker::new()), 5)),
            rerank: ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap(),
            rerank_chunk: 2,
        },
        reader: None,
    };
    let answers = answerer
        .ask(&ask("Do bees fly?", Some(Duration::ZERO)))
        .unwrap();
    assert_eq!(answers.reranked, 0);
    assert!(answers.answers.iter().all(|a| a.stage == Stage::Prune));
    let positions: Vec<usize> = answers
        .answers
        .iter()
        .map(|a| a.sentence.position)
        .collect();
    assert_eq!(
        positions,
        vec![11, 10, 9],
        "longest first, as the pruner ranked"
    );
}

#[test]
fn a_model_returning_the_wrong_number_of_scores_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut broken = LengthRanker::new();
    broken.extra_scores = 1;
    let answerer = Answerer {
        retriever: bm25(bee_index(dir.path())),
        cascade: Cascade {
            retrieve: 5,
            prune: None,
            rerank: Box::new(broken),
            rerank_chunk: 8,
        },
        reader: None,
    };
    let err = answerer.ask(&ask("bees", None)).unwrap_err().to_string();
    assert!(
        err.contains("length: returned 6 scores for 5 candidates"),
        "{err}"
    );
}

/// A toy sentence encoder that knows a few synonyms: each word is a concept, and a paraphrase
/// shares concepts with no words.
struct SynonymEncoder;

const CONCEPTS: [&[&str]; 4] = [
    &["physician", "doctor", "paediatrician"],
    &["kids", "children", "child"],
    &["sweets", "candy"],
    &["bees", "hives"],
];

impl ansel_index::Encoder for SynonymEncoder {
    fn model(&self) -> &str {
        "synonyms"
    }

    fn dim(&self) -> usize {
        CONCEPTS.len() + 1
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0.0; self.dim()];
                for word in text
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                {
                    let concept = CONCEPTS.iter().position(|c| c.contains(&word));
                    // Words without a concept share the last component, lightly.
                    v[concept.unwrap_or(CONCEPTS.len())] +=
                        if concept.is_some() { 1.0 } else { 0.1 };
                }
                v
            })
            .collect())
    }
}

/// An index with vectors where the answer to "Which physician looks after kids?" shares no word
/// with it, and a sentence about sweets shares "kids".
fn paraphrase_index(dir: &std::path::Path) -> SentenceIndex {
    let index = SentenceIndex::open_or_create(dir).unwrap();
    let mut writer = index
        .dense_writer(std::sync::Arc::new(SynonymEncoder), None)
        .unwrap();
    for (id, text) in [
        ("care", "A paediatrician is a doctor for children."),
        ("shop", "Kids love sweets. The shop sells candy."),
        ("farm", "Bees live in hives. Honey is sweet."),
    ] {
        writer
            .add(&Document {
                id: id.into(),
                title: id.into(),
                text: text.into(),
            })
            .unwrap();
    }
    writer.commit().unwrap();
    index.reload().unwrap();
    index
}

fn retrieved(answerer: &Answerer, kind: Retrieval) -> Vec<String> {
    answerer
        .ask(&Ask {
            retriever: Some(kind),
            top_k: 5,
            // No time to rerank: the order and scores are the retriever's.
            ..ask("Which physician looks after kids?", Some(Duration::ZERO))
        })
        .unwrap()
        .answers
        .into_iter()
        .map(|a| a.sentence.text)
        .collect()
}

#[test]
fn dense_and_hybrid_retrieval_find_a_paraphrase_that_bm25_misses() {
    let dir = tempfile::tempdir().unwrap();
    let index = paraphrase_index(dir.path());
    let encoder: std::sync::Arc<dyn ansel_index::Encoder> = std::sync::Arc::new(SynonymEncoder);
    let retriever =
        IndexRetriever::new(Arc::new(index), Retrieval::Hybrid, Some(encoder), 100).unwrap();
    let answerer = Answerer {
        retriever: Box::new(retriever),
        cascade: Cascade {
            retrieve: 2,
            prune: None,
            rerank: ansel_lexical::from_spec("rr", &[]).unwrap().unwrap(),
            rerank_chunk: 8,
        },
        reader: None,
    };
    let answer = "A paediatrician is a doctor for children.";
    let bm25 = retrieved(&answerer, Retrieval::Bm25);
    assert_eq!(
        bm25,
        ["Kids love sweets."],
        "BM25 finds only the shared word"
    );
    let dense = retrieved(&answerer, Retrieval::Dense);
    assert_eq!(dense[0], answer, "{dense:?}");
    let hybrid = retrieved(&answerer, Retrieval::Hybrid);
    assert!(hybrid.contains(&answer.to_string()), "{hybrid:?}");
    // Reciprocal rank fusion: "Kids love sweets." is first for BM25 and second by vector
    // (1/61 + 1/62), the answer first by vector only (1/61).
    assert_eq!(hybrid, ["Kids love sweets.", answer]);
    let answers = answerer
        .ask(&ask(
            "Which physician looks after kids?",
            Some(Duration::ZERO),
        ))
        .unwrap();
    assert_eq!(
        answers.retriever,
        Retrieval::Hybrid,
        "the answerer's default"
    );
    assert!(answers.answers.iter().all(|a| a.stage == Stage::Retrieve));
    let fused: Vec<f32> = answers.answers.iter().map(|a| a.score).collect();
    assert!(
        (fused[0] - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-6,
        "{fused:?}"
    );
    assert!((fused[1] - 1.0 / 61.0).abs() < 1e-6, "{fused:?}");
}

#[test]
fn dense_retrieval_over_an_index_without_vectors_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = Arc::new(bee_index(dir.path()));
    for kind in [Retrieval::Dense, Retrieval::Hybrid] {
        let err = IndexRetriever::new(index.clone(), kind, None, 100)
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("has no dense vectors")
                && err.to_string().contains("ansel index --dense MODEL"),
            "{err}"
        );
    }
    // A BM25 answerer asked for dense retrieval refuses that question.
    let answerer = Answerer {
        retriever: Box::new(IndexRetriever::bm25(index)),
        cascade: Cascade {
            retrieve: 5,
            prune: None,
            rerank: ansel_lexical::from_spec("wo", &[]).unwrap().unwrap(),
            rerank_chunk: 8,
        },
        reader: None,
    };
    let err = answerer
        .ask(&Ask {
            retriever: Some(Retrieval::Dense),
            ..ask("Do bees fly?", None)
        })
        .err()
        .unwrap();
    assert!(err.to_string().contains("has no dense vectors"), "{err}");
    assert_eq!(
        answerer.ask(&ask("Do bees fly?", None)).unwrap().retriever,
        Retrieval::Bm25
    );
    // With vectors but no encoder loaded, the question is refused all the same, saying why.
    let dense_dir = tempfile::tempdir().unwrap();
    let answerer = Answerer {
        retriever: bm25(paraphrase_index(dense_dir.path())),
        ..answerer
    };
    let err = answerer
        .ask(&Ask {
            retriever: Some(Retrieval::Hybrid),
            ..ask("Do bees fly?", None)
        })
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("the hybrid retriever needs the sentence encoder"),
        "{err}"
    );
}

/// A reader that marks the first word of a sentence that starts with "Bees" (margin 2) and
/// the last word of any other (margin -2), and records what it read.
struct FirstWordReader {
    settings: ansel_reader::SpanSettings,
    read: std::sync::Arc<Mutex<Vec<(String, usize, usize)>>>,
}

impl ansel_reader::SpanReader for FirstWordReader {
    fn settings(&self) -> &ansel_reader::SpanSettings {
        &self.settings
    }

    fn extract_all(
        &self,
        readings: &[ansel_reader::Reading],
    ) -> ansel_model::Result<Vec<Option<ansel_reader::Extraction>>> {
        Ok(readings
            .iter()
            .map(|r| {
                self.read.lock().unwrap().push((
                    r.sentence.join(" "),
                    r.before.len(),
                    r.after.len(),
                ));
                let bees = r.sentence.first().is_some_and(|w| w == "Bees");
                let at = if bees { 0 } else { r.sentence.len() - 1 };
                Some(ansel_reader::Extraction {
                    start: at,
                    end: at + 1,
                    text: r.sentence[at].clone(),
                    score: if bees { 3.0 } else { -1.0 },
                    null_score: 1.0,
                })
            })
            .collect())
    }
}

#[test]
fn the_reader_marks_spans_by_byte_offsets_and_hides_unlikely_ones() {
    let dir = tempfile::tempdir().unwrap();
    let read = std::sync::Arc::new(Mutex::new(Vec::new()));
    let reader = FirstWordReader {
        settings: ansel_reader::SpanSettings::default(),
        read: read.clone(),
    };
    let calibration = calibration::Calibration {
        model: "first-word".into(),
        platt: calibration::Platt::IDENTITY,
        abstain_below: 0.5,
        fitted_on: vec![],
        dev: serde_json::Value::Null,
    };
    let answerer = Answerer {
        retriever: bm25(bee_index(dir.path())),
        cascade: Cascade {
            retrieve: 20,
            prune: None,
            rerank: Box::new(LengthRanker::new()),
            rerank_chunk: 8,
        },
        reader: Some(AnswerReader::new(Box::new(reader), calibration)),
    };
    let mut question = ask("Do bees annoy cats?", None);
    question.top_k = 13;
    let answers = answerer.ask(&question).unwrap();
    let mut spans = 0;
    for a in &answers.answers {
        let text = &a.sentence.text;
        match &a.span {
            Some(span) => {
                spans += 1;
                assert_eq!(&text[span.start..span.end], span.text);
                assert_eq!(span.text, "Bees");
                // sigmoid(3 - 1)
                assert!((span.score - 0.8808).abs() < 1e-3, "{span:?}");
            }
            // The last word's margin -2 is below the threshold: no span.
            None => assert!(!text.starts_with("Bees"), "{text}"),
        }
    }
    assert_eq!(spans, 12, "every bee sentence has its span");
    // Sentences are read between their neighbours' words.
    let mut seen = read.lock().unwrap();
    assert_eq!(seen.len(), answers.answers.len());
    assert!(seen
        .iter()
        .any(|&(_, before, after)| before > 0 && after > 0));
    seen.clear();
    drop(seen);
    // Only the first `spans` answers are read.
    question.spans = 2;
    let answers = answerer.ask(&question).unwrap();
    assert!(answers.answers[2..].iter().all(|a| a.span.is_none()));
    assert_eq!(read.lock().unwrap().len(), 2);
    // A question that asks for no spans is not read.
    question.spans = 0;
    let answers = answerer.ask(&question).unwrap();
    assert!(answers.answers.iter().all(|a| a.span.is_none()));
}
