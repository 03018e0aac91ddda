//! The cascade that answers questions over an index: BM25 retrieves sentences, a cheap model
//! prunes them, the answer model reranks the rest (shared by `ask`, `serve` and the Python
//! package).

use crate::models;
use ansel_answer::{Answerer, Cascade};
use ansel_data::{Candidate, Question};
use ansel_index::SentenceIndex;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// Candidates the reranker scores between two checks of the time budget.
const RERANK_CHUNK: usize = 8;

/// Which index to answer from and how the cascade ranks what it retrieves.
#[derive(Debug, Clone)]
pub struct CascadeOptions {
    /// Index folder, made by `ansel index`.
    pub index: PathBuf,
    /// Model that orders the final answers (any model spec).
    pub model: String,
    /// Cheap model that prunes the retrieved sentences first; `none` skips pruning.
    pub prune_model: String,
    /// Candidates the pruning model keeps for the reranker.
    pub keep: usize,
    /// Sentences BM25 retrieves from the index per question.
    pub retrieve: usize,
}

impl CascadeOptions {
    /// The default cascade over `index`.
    pub fn new(index: impl Into<PathBuf>) -> CascadeOptions {
        CascadeOptions {
            index: index.into(),
            model: models::DEFAULT_ASK_MODEL.into(),
            prune_model: models::DEFAULT_PRUNE_MODEL.into(),
            keep: 30,
            retrieve: 100,
        }
    }

    /// Opens the index and builds the cascade; lexical models take their term statistics from
    /// every sentence in the index.
    pub fn answerer(&self) -> Result<Answerer> {
        self.answerer_over(SentenceIndex::open(&self.index)?)
    }

    /// The cascade over an index already open (one that is being written to, say).
    pub fn answerer_over(&self, index: SentenceIndex) -> Result<Answerer> {
        if self.keep == 0 || self.retrieve == 0 {
            bail!("keep and retrieve must be at least 1");
        }
        let corpus = [Question {
            id: "index".into(),
            text: String::new(),
            candidates: index
                .sentence_texts()?
                .into_iter()
                .enumerate()
                .map(|(i, text)| Candidate {
                    id: i.to_string(),
                    text,
                    label: None,
                    context: None,
                })
                .collect(),
        }];
        let prune = match self.prune_model.as_str() {
            "none" => None,
            spec => Some((
                models::resolve(spec, &corpus).context("prune model")?,
                self.keep,
            )),
        };
        let rerank = models::resolve(&self.model, &corpus).context("answer model")?;
        Ok(Answerer {
            index,
            cascade: Cascade {
                retrieve: self.retrieve,
                prune,
                rerank,
                rerank_chunk: RERANK_CHUNK,
            },
        })
    }
}
