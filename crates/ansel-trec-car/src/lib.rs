//! TREC CAR (v1.5) for ansel: paragraph retrieval for outline queries.
//!
//! - [`cbor`]: streaming readers for the CBOR outlines, pages and paragraphs files, with errors
//!   that name file, record, byte offset and field, and no panic on any input;
//! - [`model`]: paragraphs, pages, and the outline queries (title + heading path, each word with
//!   its heading kind);
//! - [`bm25`]: a tantivy BM25 index over the paragraph collection;
//! - [`runs`]: article-level folds and gzipped trec_eval run files.

pub mod bm25;
pub mod cbor;
pub mod model;
pub mod runs;

pub use bm25::ParagraphIndex;
pub use cbor::{read_pages, read_paragraphs, CarError, Records};
pub use model::{
    outline_queries, tokens, HeadingKind, OutlineQuery, Page, ParaBody, Paragraph, Skeleton,
};
pub use runs::{article_folds, write_run_gz, RankedList};

use std::path::Path;

/// Every paragraph of a paragraphs file.
pub fn load_paragraphs(path: &Path) -> Result<Vec<Paragraph>, CarError> {
    read_paragraphs(path)?.collect()
}

/// Every outline query of an outlines (or pages) file, in file order.
pub fn load_queries(path: &Path) -> Result<Vec<OutlineQuery>, CarError> {
    let mut out = Vec::new();
    for page in read_pages(path)? {
        out.extend(outline_queries(&page?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;

/// The files of a TREC CAR data folder (`*.cbor.paragraphs`, `*.cbor.outlines`, the qrels).
#[derive(Debug, Clone)]
pub struct DataFiles {
    pub paragraphs: std::path::PathBuf,
    pub outlines: std::path::PathBuf,
    /// `*.cbor.hierarchical.qrels` (the training labels and the main evaluation).
    pub hierarchical_qrels: std::path::PathBuf,
}

impl DataFiles {
    /// Finds the files by suffix in `dir`; names what is missing.
    pub fn find(dir: &Path) -> Result<DataFiles, CarError> {
        let entries = std::fs::read_dir(dir).map_err(|source| CarError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let names: Vec<std::path::PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        let find = |suffix: &str| {
            names
                .iter()
                .find(|p| p.to_string_lossy().ends_with(suffix))
                .cloned()
                .ok_or_else(|| CarError::Io {
                    path: dir.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no *{suffix} file here"),
                    ),
                })
        };
        Ok(DataFiles {
            paragraphs: find(".cbor.paragraphs")?,
            outlines: find(".cbor.outlines")?,
            hierarchical_qrels: find(".cbor.hierarchical.qrels")?,
        })
    }
}

/// BM25 top `depth` paragraphs for every query, in query order.
pub fn bm25_run(
    paragraphs: &[Paragraph],
    queries: &[OutlineQuery],
    depth: usize,
) -> tantivy::Result<Vec<(String, RankedList)>> {
    let index = ParagraphIndex::build(paragraphs)?;
    queries
        .iter()
        .map(|q| Ok((q.id.clone(), index.search(&q.text(), depth)?)))
        .collect()
}
