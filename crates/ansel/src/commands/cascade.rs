use ansel::answering::{CascadeOptions, DEFAULT_KEEP, DEFAULT_RETRIEVE};
use ansel::models;
use ansel_answer::retrieval::DEFAULT_FUSION_DEPTH;
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
    /// Sentences retrieved from the index per question.
    #[arg(long, default_value_t = DEFAULT_RETRIEVE)]
    pub retrieve: usize,
    /// How sentences are retrieved: `bm25`; `dense`, the question's vector against the
    /// index's (an index made with `ansel index --dense MODEL`; the question is encoded by the
    /// same model); `hybrid`, reciprocal rank fusion (k = 60) of both retrievers' best
    /// --fusion-depth sentences; or `auto`, hybrid when the index has vectors, else bm25.
    #[arg(long, default_value = "auto", value_parser = ["auto", "bm25", "dense", "hybrid"])]
    pub retriever: String,
    /// Sentences BM25 and the dense retriever each put into a hybrid fusion (at least
    /// --retrieve).
    #[arg(long, default_value_t = DEFAULT_FUSION_DEPTH)]
    pub fusion_depth: usize,
    /// Span reader that marks the answer inside each answer sentence (a model directory or
    /// name); `none`: no spans. Default: `minilm-l6-squad-span-int8` when it is installed.
    #[arg(long)]
    pub reader: Option<String>,
}

impl CascadeArgs {
    /// Opens the index and builds the cascade.
    pub fn answerer(&self) -> Result<Answerer> {
        self.options(false)?.answerer()
    }

    /// The cascade's options; `dense_on_request`: load the index's encoder whenever it has
    /// vectors, so that requests may choose their retriever (`serve`).
    pub fn options(&self, dense_on_request: bool) -> Result<CascadeOptions> {
        if self.keep == 0 || self.retrieve == 0 {
            bail!("--keep and --retrieve must be at least 1");
        }
        if self.fusion_depth == 0 {
            bail!("--fusion-depth must be at least 1");
        }
        Ok(CascadeOptions {
            retriever: CascadeOptions::parse_retriever(&self.retriever)
                .map_err(anyhow::Error::msg)?,
            fusion_depth: self.fusion_depth,
            dense_on_request,
            reader: self.reader.clone(),
            ..CascadeOptions::new(
                self.index.clone(),
                &self.model,
                &self.prune_model,
                self.keep,
                self.retrieve,
            )
        })
    }
}
