use ansel::answering::{CascadeOptions, DEFAULT_KEEP, DEFAULT_RETRIEVE};
use ansel::models;
use ansel_answer::Answerer;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

/// The index and the cascade that answers questions over it; shared by `ask` and `serve`.
#[derive(Args)]
pub struct CascadeArgs {
    /// Index folder, made by `ansel index`.
    #[arg(long)]
    pub index: PathBuf,
    /// Model that orders the final answers (any `--model` spec of `ansel eval`).
    #[arg(long, default_value = models::DEFAULT_ASK_MODEL)]
    pub model: String,
    /// Fast model that orders the retrieved sentences first; `none` skips pruning.
    #[arg(long, default_value = models::DEFAULT_PRUNE_MODEL)]
    pub prune_model: String,
    /// Candidates the pruning model sends on to the reranker; the others follow in its order.
    #[arg(long, default_value_t = DEFAULT_KEEP)]
    pub keep: usize,
    /// Sentences BM25 retrieves from the index per question.
    #[arg(long, default_value_t = DEFAULT_RETRIEVE)]
    pub retrieve: usize,
}

impl CascadeArgs {
    /// Opens the index and builds the cascade.
    pub fn answerer(&self) -> Result<Answerer> {
        if self.keep == 0 || self.retrieve == 0 {
            bail!("--keep and --retrieve must be at least 1");
        }
        CascadeOptions {
            index: self.index.clone(),
            model: self.model.clone(),
            prune_model: self.prune_model.clone(),
            keep: self.keep,
            retrieve: self.retrieve,
        }
        .answerer()
    }
}
