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
    #[error("index {}: {source}", path.display())]
    Tantivy {
        path: PathBuf,
        source: tantivy::TantivyError,
    },
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
