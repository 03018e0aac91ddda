pub mod ask;
pub mod bench_server;
mod cascade;
pub mod convert;
pub mod eval;
pub mod eval_ask;
pub mod eval_trec;
pub mod index;
pub mod rank;
pub mod serve;

use ansel_data::{read_path, Format, Question};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Where to read questions from; shared by every command that reads data.
#[derive(Args)]
pub struct DataArgs {
    /// Data file (WikiQA .tsv, TrecQA .jsonl[.gz], SelQA .json, SQuAD .json, ansel .jsonl).
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

/// Writes a file atomically: a temporary file in the same directory, then a
/// rename, so a crash never leaves a half-written file under the final name.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile_in(dir)?;
    tmp.1
        .write_all(bytes)
        .and_then(|_| tmp.1.sync_all())
        .with_context(|| format!("cannot write {}", tmp.0.display()))?;
    std::fs::rename(&tmp.0, path)
        .with_context(|| format!("cannot move {} to {}", tmp.0.display(), path.display()))?;
    Ok(())
}

fn tempfile_in(dir: &std::path::Path) -> Result<(PathBuf, std::fs::File)> {
    for attempt in 0..100u32 {
        let path = dir.join(format!(".ansel-{}-{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create a file in {}", dir.display()))
            }
        }
    }
    anyhow::bail!("cannot create a temporary file in {}", dir.display())
}
