pub mod adapt;
pub mod ask;
pub mod bench;
pub mod bench_server;
mod cascade;
pub mod cassie;
pub mod convert;
pub mod efficient;
pub mod eqag;
pub mod eval;
pub mod eval_ask;
pub mod eval_trec;
pub mod extract;
pub mod index;
pub mod quantize;
pub mod rank;
pub mod serve;
pub mod synth;
pub mod teacher;
pub mod train;

use ansel_data::{read_path, Format, Question};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Where to read questions from; shared by every command that reads data.
#[derive(Args)]
pub struct DataArgs {
    /// Data file (WikiQA .tsv, TrecQA .jsonl[.gz], SelQA .json, SQuAD .json, ansel .jsonl);
    /// `-` reads standard input.
    #[arg(long)]
    pub data: PathBuf,
    /// Input format; guessed from the file when absent.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Format::NAMES))]
    pub format: Option<String>,
}

impl DataArgs {
    pub fn read(&self) -> Result<Vec<Question>> {
        let format = self
            .format
            .as_deref()
            .map(str::parse::<Format>)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        read_path(&self.data, format).with_context(|| "cannot read data".to_string())
    }
}
