use ansel::indexing::{add_files, check_files, Progress};
use ansel_index::documents::DEFAULT_MAX_DOCUMENT_BYTES;
use ansel_index::{SentenceIndex, Unit};
use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct IndexArgs {
    /// Index folder; created when missing, added to when it exists.
    #[arg(long)]
    index: PathBuf,
    /// What the index holds, set when it is created: `sentence`s, or `passage`s (paragraphs,
    /// under the document title and the Markdown headings above them, e.g. `Bees › Hives`).
    /// Default: what the index already holds, else sentences.
    #[arg(long, value_parser = ["sentence", "passage"])]
    unit: Option<String>,
    /// Documents added between two commits; a crash loses at most the uncommitted ones.
    #[arg(long, default_value_t = 1000)]
    commit_every: usize,
    /// Bytes one document (a text file, or a JSON line) may have; a larger one stops the run
    /// before the index changes, naming its file and line.
    #[arg(long, default_value_t = DEFAULT_MAX_DOCUMENT_BYTES)]
    max_document_bytes: usize,
    /// Files or folders of documents: .txt, .md, .markdown, .jsonl/.ndjson ({"id", "title", "text"} a line).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn run(args: IndexArgs) -> Result<()> {
    if args.commit_every == 0 {
        anyhow::bail!("--commit-every must be at least 1");
    }
    let start = Instant::now();
    let checked = check_files(&args.paths, args.max_document_bytes)?;
    let index = match args.unit.as_deref() {
        Some("passage") => SentenceIndex::open_or_create_with(&args.index, Unit::Passage)?,
        Some(_) => SentenceIndex::open_or_create_with(&args.index, Unit::Sentence)?,
        None => SentenceIndex::open_or_create(&args.index)?,
    };
    let unit = index.unit().name();
    let bar = ProgressBar::new(checked.documents as u64).with_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} documents, {msg} [{elapsed}]",
    )?);
    let (mut done, mut sentences) = (0usize, 0usize);
    let added = add_files(&index, &checked, args.commit_every, |event| match event {
        Progress::Added(document, added) => {
            if added == 0 {
                // Nothing to search in it (a former version of the same id is removed all the same).
                bar.suspend(|| eprintln!("document {}: no {unit}s, nothing indexed", document.id));
            }
            done += 1;
            sentences += added;
            bar.inc(1);
            bar.set_message(format!("{sentences} {unit}s"));
        }
        Progress::Committed if bar.is_hidden() => {
            // No terminal: a log line per commit says what is safe.
            eprintln!("committed {done} documents ({sentences} {unit}s)");
        }
        Progress::Committed => {}
    })?;
    bar.finish_and_clear();
    let stats = index.stats()?;
    println!(
        "indexed {} documents, {} {unit}s in {:.2} s; {} now holds {} documents, {} {unit}s",
        added.documents - added.empty,
        added.sentences,
        start.elapsed().as_secs_f64(),
        args.index.display(),
        stats.documents,
        stats.sentences
    );
    Ok(())
}
