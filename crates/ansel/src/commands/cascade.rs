use crate::models;
use ansel_answer::{Answerer, Cascade};
use ansel_data::{Candidate, Question};
use ansel_index::SentenceIndex;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Candidates the reranker scores between two checks of the time budget.
const RERANK_CHUNK: usize = 8;

/// The index and the cascade that answers questions over it; shared by `ask` and `serve`.
#[derive(Args)]
pub struct CascadeArgs {
    /// Index folder, made by `ansel index`.
    #[arg(long)]
    pub index: PathBuf,
    /// Model that orders the final answers (any `--model` spec of `ansel eval`).
    #[arg(long, default_value = models::DEFAULT_ASK_MODEL)]
    pub model: String,
    /// Cheap model that prunes the retrieved sentences first; `none` skips pruning.
    #[arg(long, default_value = models::DEFAULT_PRUNE_MODEL)]
    pub prune_model: String,
    /// Candidates the pruning model keeps for the reranker.
    #[arg(long, default_value_t = 30)]
    pub keep: usize,
    /// Sentences BM25 retrieves from the index per question.
    #[arg(long, default_value_t = 100)]
    pub retrieve: usize,
}

impl CascadeArgs {
    /// Opens the index and builds the cascade; lexical models take their term
    /// statistics from every sentence in the index.
    pub fn answerer(&self) -> Result<Answerer> {
        if self.keep == 0 || self.retrieve == 0 {
            bail!("--keep and --retrieve must be at least 1");
        }
        let index = SentenceIndex::open(&self.index)?;
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
                models::resolve(spec, &corpus).context("--prune-model")?,
                self.keep,
            )),
        };
        let rerank = models::resolve(&self.model, &corpus).context("--model")?;
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
