//! Documents in, sentences out: ansel's document store.
//!
//! [`documents`] reads plain text, Markdown and JSON lines documents;
//! [`document_sentences`] splits a document into the sentences answers are
//! chosen from, each with its title, position and neighbours; and
//! [`SentenceIndex`] keeps them in a tantivy index searched with BM25; an index may hold
//! passages (paragraphs under their heading paths) instead: [`Unit`].
//! Commits are atomic: a crash while indexing loses only what was added
//! since the last [`SentenceWriter::commit`].

pub mod dense;
pub mod documents;
mod error;
mod graph;
mod index;
pub mod precomputed;
mod sentences;

#[cfg(test)]
mod dense_tests;

pub use dense::{DenseSettings, Encoder, VectorFormat};
pub use documents::Document;
pub use error::IndexError;
pub use graph::{DenseSearch, GraphFile, GraphPolicy, DEFAULT_EXPANSION};
pub use index::{Hit, IndexStats, Scored, SentenceIndex, SentenceWriter, Snapshot, UnitId};
pub use sentences::{document_sentences, unit_texts, SentenceRecord, Unit, HEADING_SEPARATOR};
