//! The answer-sentence-selection data model and the readers that fill it.
//!
//! Data flows one way through ansel: a reader turns a file into [`Question`]s,
//! each with its [`Candidate`] sentences; models score candidates; metrics or
//! answers come out. Everything downstream depends only on the types here.

mod error;
mod format;
pub mod json;
mod model;
pub mod readers;
mod shuffle;

pub use error::{DataError, Location};
pub use format::{looks_like_xml, read_bytes, read_path, Format};
pub use model::{Candidate, DocContext, Question};
pub use readers::semeval::CqaTask;
pub use shuffle::{question_batches, shuffle_seeded, splitmix64, Packing};
