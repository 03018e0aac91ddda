//! Command-line argument groups the `ansel` and `ansel-lab` binaries share.

use ansel_data::{read_path, Format, Question};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

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

    /// [`DataArgs::read`], refusing data without a single question: metrics, timings or
    /// explanations of nothing would print zeros that look like results.
    pub fn read_some(&self) -> Result<Vec<Question>> {
        let questions = self.read()?;
        require_questions(&questions, &self.data, "--data")?;
        Ok(questions)
    }
}

/// Fails, naming the file, when `questions` (read from `path`, given by the option `what`) is
/// empty: an empty file, a header alone, or an empty JSON list.
pub fn require_questions(questions: &[Question], path: &Path, what: &str) -> Result<()> {
    if questions.is_empty() {
        let name = if path == Path::new("-") {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        bail!("{name}: no questions for {what} (an empty file, or a header alone?)");
    }
    Ok(())
}
