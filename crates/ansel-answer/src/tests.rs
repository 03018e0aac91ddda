use super::*;
use ansel_index::Document;
use std::sync::Mutex;

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
    }
}

#[test]
fn prune_keeps_the_best_and_rerank_orders_them_with_context() {
    let dir = tempfile::tempdir().unwrap();
    let answerer = Answerer {
        index: bee_index(dir.path()),
        cascade: Cascade {
            retrieve: 20,
            prune: Some((Box::new(LengthRanker::new()), 4)),
            rerank: ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap(),
            rerank_chunk: 3,
        },
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
        index: bee_index(dir.path()),
        cascade: Cascade {
            retrieve: 5,
            prune: None,
            rerank: Box::new(Shared(reranker.clone())),
            rerank_chunk: 4,
        },
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
        index: bee_index(dir.path()),
        cascade: Cascade {
            retrieve: 20,
            prune: Some((Box::new(LengthRanker::new()), 5)),
            rerank: ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap(),
            rerank_chunk: 2,
        },
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
        index: bee_index(dir.path()),
        cascade: Cascade {
            retrieve: 5,
            prune: None,
            rerank: Box::new(broken),
            rerank_chunk: 8,
        },
    };
    let err = answerer.ask(&ask("bees", None)).unwrap_err().to_string();
    assert!(
        err.contains("length: returned 6 scores for 5 candidates"),
        "{err}"
    );
}
