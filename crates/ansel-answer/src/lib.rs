//! From a question to answers with their context.
//!
//! An [`Answerer`] runs a cascade over a [`SentenceIndex`]:
//!
//! 1. **retrieve**: a [`Retriever`] picks `retrieve` sentences from the whole index: BM25
//!    (tantivy), the index's dense vectors, or both fused by reciprocal rank ([`retrieval`]);
//! 2. **prune** (optional): a cheap [`Ranker`] orders them and sends the best `keep` on;
//!    the others stay below, in its order;
//! 3. **rerank**: the strongest ranker orders those `keep`, in chunks of
//!    `rerank_chunk`, best-pruned first, until the time budget runs out (a
//!    ranker that [reads the whole list](Ranker::reads_whole_list) gets it
//!    in one piece).
//!
//! Candidates keep their document context (title, position, neighbours), so
//! context-aware models such as `wo-rr` see real document positions. Many
//! questions asked together are scored together, one [`Ranker::score_all`]
//! call per stage, which is what lets a server batch concurrent requests.
//! A [`calibration::Calibration`] turns the reranker's scores into probabilities and says
//! when no sentence answers; an [`AnswerReader`] finds the answer span in each answer sentence.

pub mod calibration;
pub mod retrieval;
pub mod span;

pub use retrieval::{IndexRetriever, Retrieval, Retriever};
pub use span::{AnswerReader, Span, DEFAULT_SPANS};

use ansel_data::{Candidate, DocContext, Question};
use ansel_index::{IndexError, SentenceRecord};
use ansel_model::{ModelError, Ranker};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The question asked for a retriever that needs the index's encoder, and none is loaded.
    #[error("the {} retriever needs the sentence encoder of the index's vectors, and this \
             answerer has not loaded it", retriever.name())]
    NoEncoder { retriever: Retrieval },
    #[error("question encoder {model}: {message}")]
    Encoder { model: String, message: String },
}

/// The ranking stages after retrieval and their sizes.
pub struct Cascade {
    /// Sentences retrieved per question.
    pub retrieve: usize,
    /// The cheap model and how many of its best candidates go on to the reranker.
    pub prune: Option<(Box<dyn Ranker>, usize)>,
    /// The model that orders the final candidates.
    pub rerank: Box<dyn Ranker>,
    /// Candidates reranked between two checks of the time budget.
    pub rerank_chunk: usize,
}

/// One question to answer.
#[derive(Debug, Clone)]
pub struct Ask {
    pub question: String,
    pub top_k: usize,
    /// Time allowed from the start of the call; past it, reranking stops and
    /// the candidates not reranked keep their pruned order below the others.
    pub budget: Option<Duration>,
    /// The retriever for this question; `None`: the answerer's default.
    pub retriever: Option<Retrieval>,
    /// Answers whose span is read (when the answerer has a reader), best first; 0: none.
    pub spans: usize,
}

/// Which stage's score placed an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Retrieve,
    Prune,
    Rerank,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Answer {
    /// The score of the stage that placed this answer.
    pub score: f32,
    pub stage: Stage,
    #[serde(flatten)]
    pub sentence: SentenceRecord,
    /// The words of the sentence that answer the question (`None`: not read, or the reader
    /// found none it is confident in).
    pub span: Option<Span>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Answers {
    pub question: String,
    pub answers: Vec<Answer>,
    /// The retriever that found the candidates.
    pub retriever: Retrieval,
    /// Sentences retrieved.
    pub retrieved: usize,
    /// Sentences the reranker scored (fewer than the pruner sent on when the
    /// budget ran out).
    pub reranked: usize,
    pub elapsed_ms: f64,
}

/// Answers questions over an index with a cascade.
pub struct Answerer {
    /// How candidates are found: BM25 unless the index has vectors and the retriever is set
    /// to use them.
    pub retriever: Box<dyn Retriever>,
    pub cascade: Cascade,
    /// Finds the answer span in each answer sentence of questions that ask for spans.
    pub reader: Option<AnswerReader>,
}

/// A question's candidates as they move through the cascade.
struct Pending {
    retriever: Retrieval,
    question: Question,
    records: Vec<SentenceRecord>,
    /// Candidate order and the score/stage that produced it.
    order: Vec<(usize, f32, Stage)>,
    /// How many of the first candidates of `order` the reranker is to score.
    to_rerank: usize,
    deadline: Option<Instant>,
    reranked: usize,
}

impl Answerer {
    /// Answers one question.
    pub fn ask(&self, ask: &Ask) -> Result<Answers, AnswerError> {
        self.ask_batch(std::slice::from_ref(ask))?
            .pop()
            .expect("one answer set per question")
    }

    /// Answers several questions, scoring them together at each stage. A
    /// model error fails the whole batch; an index error only its question.
    pub fn ask_batch(
        &self,
        asks: &[Ask],
    ) -> Result<Vec<Result<Answers, AnswerError>>, AnswerError> {
        let start = Instant::now();
        let mut results: Vec<Option<Result<Answers, AnswerError>>> =
            asks.iter().map(|_| None).collect();
        let mut pending: Vec<(usize, Pending)> = Vec::new();
        for (i, ask) in asks.iter().enumerate() {
            match self.retrieve(ask, start) {
                Ok(p) => pending.push((i, p)),
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        self.prune(&mut pending)?;
        self.rerank(&mut pending)?;
        for (i, p) in pending {
            results[i] = Some(Ok(finish(p, &asks[i], start)));
        }
        if let Some(reader) = &self.reader {
            let mut read: Vec<(&mut Answers, usize)> = results
                .iter_mut()
                .zip(asks)
                .filter(|(_, ask)| ask.spans > 0)
                .filter_map(|(r, ask)| Some((r.as_mut()?.as_mut().ok()?, ask.spans)))
                .collect();
            reader.read(&mut read)?;
            let elapsed_ms = start.elapsed().as_secs_f64() * 1e3;
            for (answers, _) in read {
                answers.elapsed_ms = elapsed_ms;
            }
        }
        Ok(results
            .into_iter()
            .map(|r| r.expect("every question has a result"))
            .collect())
    }

    fn retrieve(&self, ask: &Ask, start: Instant) -> Result<Pending, AnswerError> {
        let kind = ask
            .retriever
            .unwrap_or_else(|| self.retriever.default_retrieval());
        let hits = self
            .retriever
            .retrieve(&ask.question, kind, self.cascade.retrieve)?;
        let order = hits
            .iter()
            .enumerate()
            .map(|(i, h)| (i, h.score, Stage::Retrieve))
            .collect();
        let records: Vec<SentenceRecord> = hits.into_iter().map(|h| h.sentence).collect();
        let question = Question {
            id: ask.question.clone(),
            text: ask.question.clone(),
            candidates: records.iter().map(candidate).collect(),
        };
        Ok(Pending {
            retriever: kind,
            question,
            to_rerank: records.len(),
            records,
            order,
            deadline: ask.budget.map(|b| start + b),
            reranked: 0,
        })
    }

    /// Orders each question's candidates by the cheap model and sends its `keep` best on.
    fn prune(&self, pending: &mut [(usize, Pending)]) -> Result<(), AnswerError> {
        let Some((model, keep)) = &self.cascade.prune else {
            return Ok(());
        };
        let to_prune: Vec<usize> = (0..pending.len())
            .filter(|&i| pending[i].1.order.len() > *keep)
            .collect();
        let questions: Vec<Question> = to_prune
            .iter()
            .map(|&i| pending[i].1.question.clone())
            .collect();
        let scores = model.score_all(&questions)?;
        for (&i, scores) in to_prune.iter().zip(scores) {
            let order = &mut pending[i].1.order;
            check_score_count(model.as_ref(), &scores, order.len())?;
            let mut by_score: Vec<(usize, f32, Stage)> = order
                .iter()
                .map(|&(c, _, _)| (c, scores[c], Stage::Prune))
                .collect();
            sort_by_score(&mut by_score);
            *order = by_score;
            pending[i].1.to_rerank = *keep;
        }
        Ok(())
    }

    /// Reranks the candidates left, chunk by chunk, best first, while each
    /// question's deadline allows; one `score_all` call per chunk round.
    fn rerank(&self, pending: &mut [(usize, Pending)]) -> Result<(), AnswerError> {
        let chunk = if self.cascade.rerank.reads_whole_list() {
            usize::MAX
        } else {
            self.cascade.rerank_chunk.max(1)
        };
        let mut rescored: Vec<Vec<(usize, f32, Stage)>> = vec![Vec::new(); pending.len()];
        loop {
            let now = Instant::now();
            let active: Vec<usize> = (0..pending.len())
                .filter(|&i| {
                    let p = &pending[i].1;
                    p.reranked < p.to_rerank && p.deadline.is_none_or(|d| now < d)
                })
                .collect();
            if active.is_empty() {
                break;
            }
            let questions: Vec<Question> = active
                .iter()
                .map(|&i| {
                    let p = &pending[i].1;
                    let end = p.reranked.saturating_add(chunk).min(p.to_rerank);
                    Question {
                        candidates: p.order[p.reranked..end]
                            .iter()
                            .map(|&(c, _, _)| p.question.candidates[c].clone())
                            .collect(),
                        ..p.question.clone()
                    }
                })
                .collect();
            let scores = self.cascade.rerank.score_all(&questions)?;
            for (&i, scores) in active.iter().zip(scores) {
                let p = &mut pending[i].1;
                let chunk_order =
                    &p.order[p.reranked..p.reranked.saturating_add(chunk).min(p.to_rerank)];
                check_score_count(self.cascade.rerank.as_ref(), &scores, chunk_order.len())?;
                for (&(c, _, _), score) in chunk_order.iter().zip(scores) {
                    rescored[i].push((c, score, Stage::Rerank));
                }
                p.reranked = rescored[i].len();
            }
        }
        for ((_, p), mut reranked) in pending.iter_mut().zip(rescored) {
            sort_by_score(&mut reranked);
            let rest = p.order.split_off(p.reranked);
            reranked.extend(rest);
            p.order = reranked;
        }
        Ok(())
    }
}

/// A model must return one score per candidate; a wrong count is its error.
fn check_score_count(
    model: &dyn Ranker,
    scores: &[f32],
    candidates: usize,
) -> Result<(), AnswerError> {
    if scores.len() == candidates {
        return Ok(());
    }
    Err(AnswerError::Model(ModelError::Unsupported {
        model: model.name().to_string(),
        message: format!(
            "returned {} scores for {} candidates",
            scores.len(),
            candidates
        ),
    }))
}

fn candidate(record: &SentenceRecord) -> Candidate {
    Candidate {
        id: format!("{}#{}", record.doc_id, record.position),
        text: record.text.clone(),
        label: None,
        context: Some(DocContext {
            doc_id: record.doc_id.clone(),
            title: Some(record.title.clone()),
            position: record.position,
            prev: record.prev.clone(),
            next: record.next.clone(),
        }),
    }
}

/// Best score first; ties keep their earlier order (the previous stage's),
/// and NaN sorts last.
fn sort_by_score(order: &mut [(usize, f32, Stage)]) {
    order.sort_by(|a, b| ansel_model::best_first(a.1, b.1));
}

fn finish(p: Pending, ask: &Ask, start: Instant) -> Answers {
    let answers = p
        .order
        .iter()
        .take(ask.top_k)
        .map(|&(c, score, stage)| Answer {
            score,
            stage,
            sentence: p.records[c].clone(),
            span: None,
        })
        .collect();
    Answers {
        question: ask.question.clone(),
        answers,
        retriever: p.retriever,
        retrieved: p.records.len(),
        reranked: p.reranked,
        elapsed_ms: start.elapsed().as_secs_f64() * 1e3,
    }
}

#[cfg(test)]
mod tests;
