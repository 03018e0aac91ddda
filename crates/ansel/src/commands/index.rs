use ansel_index::documents::{document_files, read_file};
use ansel_index::{Document, SentenceIndex};
use anyhow::{bail, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct IndexArgs {
    /// Index folder; created when missing, added to when it exists.
    #[arg(long)]
    index: PathBuf,
    /// Documents added between two commits; a crash loses at most the uncommitted ones.
    #[arg(long, default_value_t = 1000)]
    commit_every: usize,
    /// Files or folders of documents: .txt, .md, .markdown, .jsonl/.ndjson ({"id", "title", "text"} a line).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn run(args: IndexArgs) -> Result<()> {
    if args.commit_every == 0 {
        bail!("--commit-every must be at least 1");
    }
    let start = Instant::now();
    // Read everything first, so that bad input stops the run before the index changes.
    let documents = read_all(&args.paths)?;
    let index = SentenceIndex::open_or_create(&args.index)?;
    let mut writer = index.writer()?;
    let bar = ProgressBar::new(documents.len() as u64).with_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} documents, {msg} [{elapsed}]",
    )?);
    let (mut sentences, mut empty) = (0usize, 0usize);
    for (i, document) in documents.iter().enumerate() {
        let added = writer.add(document)?;
        if added == 0 {
            // Nothing to search in it (a former version of the same id is removed all the same).
            bar.suspend(|| eprintln!("document {}: no sentences, nothing indexed", document.id));
            empty += 1;
        }
        sentences += added;
        bar.inc(1);
        bar.set_message(format!("{sentences} sentences"));
        let done = i + 1;
        if done % args.commit_every == 0 || done == documents.len() {
            writer.commit()?;
            if bar.is_hidden() {
                // No terminal: a log line per commit says what is safe.
                eprintln!("committed {done} documents ({sentences} sentences)");
            }
        }
    }
    bar.finish_and_clear();
    index.reload()?;
    let stats = index.stats()?;
    println!(
        "indexed {} documents, {sentences} sentences in {:.2} s; {} now holds {} documents, {} sentences",
        documents.len() - empty,
        start.elapsed().as_secs_f64(),
        args.index.display(),
        stats.documents,
        stats.sentences
    );
    Ok(())
}

/// Every document under `paths`, in a stable order. A file found in a folder
/// is named by its path inside that folder; a file given by itself, by its name.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    for path in paths {
        for file in document_files(path)? {
            let id_base = file
                .strip_prefix(path)
                .ok()
                .filter(|rel| !rel.as_os_str().is_empty())
                .or_else(|| file.file_name().map(Path::new))
                .unwrap_or(&file)
                .to_string_lossy()
                .into_owned();
            documents.extend(read_file(&file, &id_base)?);
        }
    }
    if documents.is_empty() {
        bail!("no documents found (looked for .txt, .md, .markdown, .jsonl, .ndjson files)");
    }
    Ok(documents)
}
