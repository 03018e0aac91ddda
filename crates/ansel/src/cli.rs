//! Command-line argument groups the `ansel` and `ansel-lab` binaries share.

use ansel_data::{read_path, CqaTask, Format, Question};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// Where to read questions from; shared by every command that reads data.
#[derive(Args)]
pub struct DataArgs {
    /// Data file (WikiQA .tsv, TrecQA .jsonl[.gz], SelQA .json, SQuAD .json, SemEval-2016 Task 3
    /// .xml[.gz] with `--task`, ansel .jsonl); `-` reads standard input.
    #[arg(long)]
    pub data: PathBuf,
    /// Input format; guessed from the file when absent (SemEval XML needs `--task`).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Format::NAMES))]
    pub format: Option<String>,
    /// SemEval-2016 Task 3 subtask of `--format semeval` (implied by this flag): a = related
    /// question -> its comments, b = original question -> related questions, c = original
    /// question -> all comments.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(CqaTask::NAMES))]
    pub task: Option<String>,
}

impl DataArgs {
    /// The format `--format` and `--task` name; `None` to guess it from the file.
    pub fn format(&self) -> Result<Option<Format>> {
        let task = self
            .task
            .as_deref()
            .map(str::parse::<CqaTask>)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        match (self.format.as_deref(), task) {
            (None | Some("semeval"), Some(task)) => Ok(Some(Format::SemEval(task))),
            (Some("semeval"), None) => bail!("--format semeval needs --task a|b|c"),
            (Some(other), Some(_)) => bail!("--task is for --format semeval, not {other}"),
            (format, None) => format
                .map(str::parse::<Format>)
                .transpose()
                .map_err(anyhow::Error::msg),
        }
    }

    /// The SemEval subtask the data is read as, if any.
    pub fn semeval_task(&self) -> Result<Option<CqaTask>> {
        Ok(match self.format()? {
            Some(Format::SemEval(task)) => Some(task),
            _ => None,
        })
    }

    pub fn read(&self) -> Result<Vec<Question>> {
        let format = self.format()?;
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
