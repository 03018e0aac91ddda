use std::fmt;
use std::path::{Path, PathBuf};

/// Where in an input file something went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    /// 1-based line number, when the reader knows it.
    pub line: Option<usize>,
    /// The field (column name or JSON key path) at fault.
    pub field: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        Ok(())
    }
}

/// A reader's error: always names the file, and the line and field when known.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{location}: {message}")]
    Malformed { location: Location, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Unsupported { path: PathBuf, message: String },
}

impl DataError {
    pub fn malformed(
        path: &Path,
        line: Option<usize>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        DataError::Malformed {
            location: Location {
                path: path.to_path_buf(),
                line,
                field: field.map(str::to_owned),
            },
            message: message.into(),
        }
    }

    /// Wraps a serde_json error, keeping its line number. `line_offset` is
    /// added for JSON-lines files, where each record is parsed on its own.
    pub fn json(path: &Path, line_offset: usize, err: &serde_json::Error) -> Self {
        let line = (err.line() > 0).then(|| err.line() + line_offset);
        let message = strip_position(&err.to_string());
        let field = field_in_message(&message);
        // Our own validation errors start with "field `x`: "; the location says that already.
        let message = match &field {
            Some(f) => message
                .strip_prefix(&format!("field `{f}`: "))
                .unwrap_or(&message)
                .to_string(),
            None => message,
        };
        DataError::malformed(path, line, field.as_deref(), message)
    }

    pub fn location(&self) -> Option<&Location> {
        match self {
            DataError::Malformed { location, .. } => Some(location),
            _ => None,
        }
    }
}

/// serde_json appends " at line X column Y"; we report the line ourselves.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(idx) => message[..idx].to_string(),
        None => message.to_string(),
    }
}

/// Pulls the field name out of serde messages like "missing field `question`".
fn field_in_message(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    let field = &message[start..start + len];
    (message.contains("field") && !field.is_empty()).then(|| field.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_field() {
        let err = DataError::malformed(
            Path::new("x.tsv"),
            Some(3),
            Some("Label"),
            "expected 0 or 1",
        );
        assert_eq!(err.to_string(), "x.tsv:3: field `Label`: expected 0 or 1");
    }

    #[test]
    fn json_errors_keep_line_and_field() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Rec {
            question: String,
        }
        let err = serde_json::from_str::<Rec>("{\n\"q\": 1\n}").unwrap_err();
        let err = DataError::json(Path::new("f.jsonl"), 9, &err);
        let loc = err.location().unwrap();
        assert_eq!(loc.line, Some(12));
        assert_eq!(loc.field.as_deref(), Some("question"));
    }
}
