//! Adding document files to a sentence index: every file is read once to check it before the
//! index changes, then again to add it, so that memory stays bounded by the largest document.

use ansel_index::documents::{document_files, for_each_document, read_file};
use ansel_index::precomputed::{PrecomputedVectors, WithPrecomputed};
use ansel_index::{Document, SentenceIndex, SentenceWriter, Unit, VectorFormat};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What happened while adding, reported after every document and every commit.
pub enum Progress<'a> {
    /// A document was added with this many sentences (0: it has none, nothing was indexed).
    Added(&'a Document, usize),
    /// Everything added so far is on disk.
    Committed,
}

/// Documents and sentences one [`add_files`] call added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Added {
    /// Documents read (a document read again replaces its former version).
    pub documents: usize,
    /// Documents that held no sentence.
    pub empty: usize,
    pub sentences: usize,
}

/// Document files read once and found good: what [`add_files`] adds.
pub struct CheckedFiles {
    files: Vec<(PathBuf, String)>,
    /// Documents the files hold.
    pub documents: usize,
    max_document_bytes: usize,
}

/// Reads every document under `paths` and keeps none: bad input stops here, before any index
/// changes, naming the file and line; memory stays bounded by the largest document.
pub fn check_files(paths: &[PathBuf], max_document_bytes: usize) -> Result<CheckedFiles> {
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        bail!("{}: no such file or folder", missing.display());
    }
    let files = document_files_of(paths)?;
    let mut documents = 0usize;
    for (file, id_base) in &files {
        for_each_document(file, id_base, max_document_bytes, |_| {
            documents += 1;
            Ok::<(), anyhow::Error>(())
        })?;
    }
    if documents == 0 {
        bail!("no documents found (looked for .txt, .md, .markdown, .jsonl, .ndjson files)");
    }
    Ok(CheckedFiles {
        files,
        documents,
        max_document_bytes,
    })
}

/// Adds the checked files' documents to `index`, committing every `commit_every` documents
/// and at the end.
pub fn add_files(
    index: &SentenceIndex,
    checked: &CheckedFiles,
    commit_every: usize,
    progress: impl FnMut(Progress),
) -> Result<Added> {
    if commit_every == 0 {
        bail!("commit_every must be at least 1");
    }
    add_files_with(index, index.writer()?, checked, commit_every, progress)
}

/// [`add_files`] through a writer of `index` already open (one that stores vectors:
/// [`SentenceIndex::dense_writer`]).
pub fn add_files_with(
    index: &SentenceIndex,
    mut writer: SentenceWriter,
    checked: &CheckedFiles,
    commit_every: usize,
    mut progress: impl FnMut(Progress),
) -> Result<Added> {
    if commit_every == 0 {
        bail!("commit_every must be at least 1");
    }
    let mut added = Added::default();
    for (file, id_base) in &checked.files {
        for_each_document(file, id_base, checked.max_document_bytes, |document| {
            let sentences = writer.add(&document)?;
            progress(Progress::Added(&document, sentences));
            added.documents += 1;
            added.sentences += sentences;
            added.empty += usize::from(sentences == 0);
            if added.documents % commit_every == 0 {
                writer.commit()?;
                progress(Progress::Committed);
            }
            Ok::<(), anyhow::Error>(())
        })?;
    }
    writer.commit()?;
    progress(Progress::Committed);
    index.reload()?;
    Ok(added)
}

/// Opens the index at `dir`, creating it when missing: a new index holds `unit`s (sentences
/// when `None`); an existing one keeps what it holds and refuses another `unit`.
pub fn open_index(dir: &Path, unit: Option<Unit>) -> Result<SentenceIndex> {
    Ok(match unit {
        Some(unit) => SentenceIndex::open_or_create_with(dir, unit)?,
        None => SentenceIndex::open_or_create(dir)?,
    })
}

/// A writer of `index` that keeps its vectors in step: with `dense` (a sentence encoder spec),
/// or the encoder an index with vectors records, every record added is encoded too (only a new
/// or empty index takes vectors; one that has them refuses another encoder).
pub fn writer_for(
    index: &SentenceIndex,
    dense: Option<&str>,
    format: Option<VectorFormat>,
) -> Result<SentenceWriter> {
    let recorded = index.dense_settings()?.map(|d| d.model);
    Ok(match dense.map(str::to_string).or(recorded) {
        None => index.writer()?,
        Some(model) => index.dense_writer(crate::dense::load_encoder(&model)?, format)?,
    })
}

/// A writer like [`writer_for`]'s whose vectors come from the precomputed files under `vectors`
/// (`*.ansel-vectors`, e.g. written by `ansel.spark.encode_units`) where they have the text, and
/// from the encoder otherwise; the files must be of the index's encoder. The second value counts
/// the vectors found and the texts encoded.
pub fn writer_with_precomputed(
    index: &SentenceIndex,
    dense: Option<&str>,
    format: Option<VectorFormat>,
    vectors: &[PathBuf],
) -> Result<(SentenceWriter, Arc<WithPrecomputed>)> {
    let recorded = index.dense_settings()?.map(|d| d.model);
    let Some(model) = dense.map(str::to_string).or(recorded) else {
        bail!(
            "{}: precomputed vectors need --dense MODEL (the encoder they were made with)",
            index.dir().display()
        );
    };
    let files = PrecomputedVectors::open(vectors)?;
    let encoder = Arc::new(WithPrecomputed::new(
        files,
        crate::dense::load_encoder(&model)?,
    )?);
    Ok((index.dense_writer(encoder.clone(), format)?, encoder))
}

/// Adds documents given in memory through `writer` (of `index`) and commits; returns the
/// sentences added.
pub fn add_documents(
    index: &SentenceIndex,
    mut writer: SentenceWriter,
    documents: &[Document],
) -> Result<usize> {
    let mut sentences = 0;
    for document in documents {
        sentences += writer.add(document)?;
    }
    writer.commit()?;
    index.reload()?;
    Ok(sentences)
}

/// The document files under `paths` in a stable order, each with the id base of its
/// documents: a file found in a folder is named by its path inside that folder; a file given
/// by itself, by its name.
pub fn document_files_of(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>> {
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

/// Every document under `paths`, in the order [`add_files`] adds them.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    for (file, id_base) in document_files_of(paths)? {
        documents.extend(read_file(&file, &id_base)?);
    }
    if documents.is_empty() {
        bail!("no documents found (looked for .txt, .md, .markdown, .jsonl, .ndjson files)");
    }
    Ok(documents)
}
