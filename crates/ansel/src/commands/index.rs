use ansel_index::documents::{
    document_files, for_each_document, read_file, DEFAULT_MAX_DOCUMENT_BYTES,
};
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
        bail!("--commit-every must be at least 1");
    }
    let start = Instant::now();
    let files = document_files_of(&args.paths)?;
    // A first pass reads every document and keeps none: bad input stops the run before the
    // index changes, and memory stays bounded by the largest document, whatever the input size.
    let mut total = 0usize;
    for (file, id_base) in &files {
        for_each_document(file, id_base, args.max_document_bytes, |_| {
            total += 1;
            Ok::<(), anyhow::Error>(())
        })?;
    }
    if total == 0 {
        bail!("no documents found (looked for .txt, .md, .markdown, .jsonl, .ndjson files)");
    }
    let index = SentenceIndex::open_or_create(&args.index)?;
    let mut writer = index.writer()?;
    let bar = ProgressBar::new(total as u64).with_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} documents, {msg} [{elapsed}]",
    )?);
    let (mut done, mut sentences, mut empty) = (0usize, 0usize, 0usize);
    for (file, id_base) in &files {
        for_each_document(file, id_base, args.max_document_bytes, |document| {
            let added = writer.add(&document)?;
            if added == 0 {
                // Nothing to search in it (a former version of the same id is removed all the same).
                bar.suspend(|| {
                    eprintln!("document {}: no sentences, nothing indexed", document.id)
                });
                empty += 1;
            }
            sentences += added;
            done += 1;
            bar.inc(1);
            bar.set_message(format!("{sentences} sentences"));
            if done % args.commit_every == 0 {
                commit(&mut writer, &bar, done, sentences)?;
            }
            Ok::<(), anyhow::Error>(())
        })?;
    }
    commit(&mut writer, &bar, done, sentences)?;
    bar.finish_and_clear();
    index.reload()?;
    let stats = index.stats()?;
    println!(
        "indexed {} documents, {sentences} sentences in {:.2} s; {} now holds {} documents, {} sentences",
        done - empty,
        start.elapsed().as_secs_f64(),
        args.index.display(),
        stats.documents,
        stats.sentences
    );
    Ok(())
}

fn commit(
    writer: &mut ansel_index::SentenceWriter,
    bar: &ProgressBar,
    done: usize,
    sentences: usize,
) -> Result<()> {
    writer.commit()?;
    if bar.is_hidden() {
        // No terminal: a log line per commit says what is safe.
        eprintln!("committed {done} documents ({sentences} sentences)");
    }
    Ok(())
}

/// The document files under `paths` in a stable order, each with the id base of its
/// documents: a file found in a folder is named by its path inside that folder; a file given
/// by itself, by its name.
fn document_files_of(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
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
            files.push((file, id_base));
        }
    }
    Ok(files)
}

/// Every document under `paths`, in the order `index` adds them.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    for (file, id_base) in document_files_of(paths)? {
        documents.extend(read_file(&file, &id_base)?);
    }
    if documents.is_empty() {
        bail!("no documents found (looked for .txt, .md, .markdown, .jsonl, .ndjson files)");
    }
    Ok(documents)
}
