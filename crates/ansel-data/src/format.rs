use crate::readers::semeval::{self, CqaTask};
use crate::readers::{jsonl, selqa, squad, trecqa, wikiqa};
use crate::{DataError, Question};
use std::io::Read;
use std::path::Path;

/// The input formats ansel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    WikiQa,
    TrecQa,
    SelQa,
    Squad,
    Jsonl,
    /// SemEval-2016 Task 3 XML, read as the question lists of one subtask.
    SemEval(CqaTask),
}

impl Format {
    /// The format names of `--format` (`semeval` takes its subtask from `--task`).
    pub const NAMES: [&'static str; 6] = ["wikiqa", "trecqa", "selqa", "squad", "jsonl", "semeval"];

    pub fn name(self) -> &'static str {
        match self {
            Format::WikiQa => "wikiqa",
            Format::TrecQa => "trecqa",
            Format::SelQa => "selqa",
            Format::Squad => "squad",
            Format::Jsonl => "jsonl",
            Format::SemEval(_) => "semeval",
        }
    }

    pub fn parse(self, path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
        match self {
            Format::WikiQa => wikiqa::parse(path, bytes),
            Format::TrecQa => trecqa::parse(path, bytes),
            Format::SelQa => selqa::parse(path, bytes),
            Format::Squad => squad::parse(path, bytes),
            Format::Jsonl => jsonl::parse(path, bytes),
            Format::SemEval(task) => semeval::parse(path, bytes, task),
        }
    }

    /// Guesses the format from the content (decompressed), falling back to the
    /// file name; `None` when nothing fits.
    pub fn guess(path: &Path, bytes: &[u8]) -> Option<Format> {
        let head = std::str::from_utf8(&bytes[..bytes.len().min(4096)])
            .or_else(|e| std::str::from_utf8(&bytes[..e.valid_up_to()]))
            .unwrap_or("");
        let head = head.trim_start_matches('\u{feff}').trim_start();
        if head.starts_with("QuestionID\t") {
            return Some(Format::WikiQa);
        }
        if head.starts_with('[') {
            return Some(Format::SelQa);
        }
        if head.starts_with('{') {
            // The whole first line: a JSON-lines record can be longer than `head`.
            let first_line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
            let first_line = String::from_utf8_lossy(first_line);
            let first_line = first_line.trim_start_matches('\u{feff}').trim();
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(first_line) {
                if value.get("data").is_some() {
                    return Some(Format::Squad);
                }
                let first_candidate = value.get("candidates").and_then(|c| c.get(0));
                return Some(match first_candidate {
                    Some(c) if c.get("sentence").is_some() => Format::TrecQa,
                    _ => Format::Jsonl,
                });
            }
            // A first line longer than the sniffed head: a JSON-lines record, told apart by keys.
            if !head.contains('\n') && head.contains("\"candidates\"") {
                return Some(if head.contains("\"sentence\"") {
                    Format::TrecQa
                } else {
                    Format::Jsonl
                });
            }
            // A multi-line JSON object: SQuAD is the only such format.
            return Some(Format::Squad);
        }
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        match name.rsplit('.').next()? {
            "tsv" => Some(Format::WikiQa),
            "jsonl" => Some(Format::Jsonl),
            _ => None,
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    /// A format name, or `semeval-a`, `semeval-b`, `semeval-c` for a SemEval subtask.
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_lowercase();
        if let Some(task) = lower.strip_prefix("semeval-") {
            return task.parse().map(Format::SemEval);
        }
        if lower == "semeval" {
            return Err(
                "format semeval needs a subtask: semeval-a, semeval-b or semeval-c (--task)".into(),
            );
        }
        [
            Format::WikiQa,
            Format::TrecQa,
            Format::SelQa,
            Format::Squad,
            Format::Jsonl,
        ]
        .into_iter()
        .find(|f| f.name() == s.to_lowercase())
        .ok_or_else(|| {
            format!(
                "unknown format {s:?}; expected one of {}",
                Format::NAMES.join(", ")
            )
        })
    }
}

/// The path that means standard input.
pub const STDIN_PATH: &str = "-";

/// Reads a data file (`-`: standard input, named `<stdin>` in errors),
/// gunzipping it when it is gzip and guessing the format when `format` is `None`.
pub fn read_path(path: &Path, format: Option<Format>) -> Result<Vec<Question>, DataError> {
    let bytes = read_bytes(path)?;
    let path = if path == Path::new(STDIN_PATH) {
        Path::new("<stdin>")
    } else {
        path
    };
    let format = match format {
        Some(f) => f,
        None => Format::guess(path, &bytes).ok_or_else(|| DataError::Unsupported {
            path: path.to_path_buf(),
            message: if looks_like_xml(&bytes) {
                "XML data (SemEval-2016 Task 3?): pass --format semeval --task a|b|c".to_string()
            } else {
                format!(
                    "cannot tell the data format; pass --format ({})",
                    Format::NAMES.join("|")
                )
            },
        })?,
    };
    format.parse(path, &bytes)
}

/// Whether the content starts like an XML document (after a byte-order mark and blanks).
pub fn looks_like_xml(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<')
}

/// The bytes of a data file (`-`: standard input), gunzipped when it is gzip.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, DataError> {
    let from_stdin = path == Path::new(STDIN_PATH);
    let path = if from_stdin {
        Path::new("<stdin>")
    } else {
        path
    };
    let io_err = |source| DataError::Io {
        path: path.to_path_buf(),
        source,
    };
    let raw = if from_stdin {
        let mut raw = Vec::new();
        std::io::stdin().read_to_end(&mut raw).map_err(io_err)?;
        raw
    } else {
        std::fs::read(path).map_err(io_err)?
    };
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw.as_slice())
        .read_to_end(&mut out)
        .map_err(io_err)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_each_format_from_content() {
        let p = Path::new("data");
        assert_eq!(
            Format::guess(p, b"QuestionID\tQuestion\t..."),
            Some(Format::WikiQa)
        );
        assert_eq!(
            Format::guess(p, b"[{\"question\": \"q\"}]"),
            Some(Format::SelQa)
        );
        assert_eq!(
            Format::guess(p, b"{\"version\": \"1.1\", \"data\": []}"),
            Some(Format::Squad)
        );
        assert_eq!(Format::guess(p, b"{\"data\": [\n]}"), Some(Format::Squad));
        assert_eq!(
            Format::guess(
                p,
                b"{\"question\": \"q\", \"candidates\": [{\"sentence\": \"s\", \"label\": 1}]}\n"
            ),
            Some(Format::TrecQa)
        );
        // A first line longer than the 4 KiB sniffed (TrecQA TRAIN-ALL) is still a record.
        let long = format!(
            "{{\"question\": \"q\", \"candidates\": [{}]}}\n",
            vec!["{\"sentence\": \"a long sentence\", \"label\": 0}"; 200].join(", ")
        );
        assert!(long.len() > 4096);
        assert_eq!(Format::guess(p, long.as_bytes()), Some(Format::TrecQa));
        assert_eq!(
            Format::guess(p, long.replace("sentence", "text").as_bytes()),
            Some(Format::Jsonl)
        );
        assert_eq!(
            Format::guess(p, b"{\"question\": \"q\", \"candidates\": [\"s\"]}\n"),
            Some(Format::Jsonl)
        );
        assert_eq!(Format::guess(p, b"hello"), None);
        assert_eq!(Format::guess(p, b"<?xml version=\"1.0\"?><xml/>"), None);
        assert!(looks_like_xml(b"\n <?xml version=\"1.0\"?>") && !looks_like_xml(b"{}"));
        assert_eq!(
            Format::guess(Path::new("x.jsonl.gz"), b""),
            Some(Format::Jsonl)
        );
    }

    #[test]
    fn reads_gzip_and_reports_missing_files() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(
            b"{\"question\": \"q\", \"candidates\": [{\"sentence\": \"s\", \"label\": 1}]}\n",
        )
        .unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        let qs = read_path(&path, None).unwrap();
        assert_eq!((qs.len(), qs[0].positives()), (1, 1));
        let xml = dir.path().join("cqa.xml");
        std::fs::write(&xml, b"<xml></xml>").unwrap();
        let err = read_path(&xml, None).unwrap_err().to_string();
        assert!(err.contains("--format semeval --task"), "{err}");
        assert!(read_path(&xml, Some(Format::SemEval(CqaTask::C)))
            .unwrap()
            .is_empty());
        let err = read_path(&dir.path().join("missing.tsv"), None).unwrap_err();
        assert!(err.to_string().contains("missing.tsv"), "{err}");
    }
}
