use std::path::{Path, PathBuf};

/// Everything that can go wrong reading documents or using an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: no ansel index here (create one with `ansel index --index {} PATH...`)", .0.display(), .0.display())]
    NotAnIndex(PathBuf),
    #[error("{}: holds other files but no ansel index; use a new or empty folder for the index", .0.display())]
    NotEmpty(PathBuf),
    #[error("index {}: another process is writing to it (its writer lock is held); wait for that \
             `ansel index` (or program) to finish, then run this one again", .0.display())]
    Locked(PathBuf),
    #[error("index {}: holds {has}s, not {asked}s; index {asked}s into a new folder", path.display())]
    UnitMismatch {
        path: PathBuf,
        has: &'static str,
        asked: &'static str,
    },
    #[error("index {}: writing failed: {cause}; the documents committed before are kept and \
             {cleanup}", path.display())]
    WriteFailed {
        path: PathBuf,
        cause: String,
        cleanup: String,
    },
    #[error("{}: {message}", path.display())]
    Vectors { path: PathBuf, message: String },
    #[error("index {}: has no dense vectors; the dense and hybrid retrievers need an index \
             built with `ansel index --dense MODEL` (e.g. --dense minilm-l6-cosine) into a new \
             folder", .0.display())]
    NoVectors(PathBuf),
    #[error("index {}: holds dense vectors of {model}, and documents added to it must be \
             encoded too (`ansel index --dense {model}`)", path.display())]
    VectorsNeedEncoder { path: PathBuf, model: String },
    #[error("index {}: cannot add dense vectors: {why}; index the documents with --dense into a \
             new folder", path.display())]
    CannotAddVectors { path: PathBuf, why: String },
    #[error("index {}: encoder {model}: {message}", path.display())]
    Encoder {
        path: PathBuf,
        model: String,
        message: String,
    },
    #[error("index {}: holds dense vectors of {index_model}, and {model} is another model ({why}); \
             use {index_model}, or index into a new folder", path.display())]
    EncoderMismatch {
        path: PathBuf,
        index_model: String,
        model: String,
        why: String,
    },
    #[error("index {}: {source} (if a file of the index was damaged, `ansel index --check --index {}` \
             names it)", path.display(), path.display())]
    Tantivy {
        path: PathBuf,
        source: tantivy::TantivyError,
    },
    #[error("index {}: damaged: {}; its answers cannot be trusted: rebuild it from its documents \
             into a new folder (`ansel index --index NEW PATH...`) or restore a backup", path.display(), files.join("; "))]
    Damaged { path: PathBuf, files: Vec<String> },
}

impl IndexError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> IndexError {
        IndexError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn malformed(path: &Path, line: usize, message: impl Into<String>) -> IndexError {
        IndexError::Malformed {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn tantivy(path: &Path, source: tantivy::TantivyError) -> IndexError {
        IndexError::Tantivy {
            path: path.to_path_buf(),
            source,
        }
    }
}
