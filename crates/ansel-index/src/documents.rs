//! Reading documents to index: plain text, Markdown and JSON lines files, or
//! folders of them.

use crate::IndexError;
use serde::Deserialize;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// One document: its sentences become the index's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Unique within the index; indexing a document again replaces it.
    pub id: String,
    pub title: String,
    pub text: String,
}

/// File name endings `read_documents` ingests.
pub const EXTENSIONS: [&str; 5] = ["txt", "md", "markdown", "jsonl", "ndjson"];

/// The files under `path` (itself when it is a file) that `read_documents`
/// ingests, sorted so that indexing order is the same on every run.
pub fn document_files(path: &Path) -> Result<Vec<PathBuf>, IndexError> {
    let meta = std::fs::metadata(path).map_err(|e| IndexError::io(path, e))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| IndexError::io(&dir, e))? {
            let entry = entry.map_err(|e| IndexError::io(&dir, e))?;
            let entry_path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| IndexError::io(&entry_path, e))?;
            if kind.is_dir() {
                pending.push(entry_path);
            } else if has_document_extension(&entry_path) {
                files.push(entry_path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn has_document_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The largest document read by default (a text file, or one JSON line): what one document
/// may cost in memory while it is indexed.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 64 << 20;

/// Reads the documents of one file. `id_base` names a text or Markdown file's
/// document (its path relative to the folder given on the command line).
pub fn read_file(path: &Path, id_base: &str) -> Result<Vec<Document>, IndexError> {
    let mut documents = Vec::new();
    for_each_document(path, id_base, DEFAULT_MAX_DOCUMENT_BYTES, |d| {
        documents.push(d);
        Ok::<(), IndexError>(())
    })?;
    Ok(documents)
}

/// Hands `each` the documents of one file in order, holding one at a time: memory stays a
/// multiple of the largest document, not of the file. A document (or JSON line) over
/// `max_bytes` is an error naming the file and line.
pub fn for_each_document<E: From<IndexError>>(
    path: &Path,
    id_base: &str,
    max_bytes: usize,
    mut each: impl FnMut(Document) -> Result<(), E>,
) -> Result<(), E> {
    let file = std::fs::File::open(path).map_err(|e| IndexError::io(path, e))?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if extension == "jsonl" || extension == "ndjson" {
        return for_each_json_line(path, std::io::BufReader::new(file), max_bytes, each);
    }
    let size = file.metadata().map_err(|e| IndexError::io(path, e))?.len();
    if size > max_bytes as u64 {
        return Err(too_large(path, 1, "the document", Some(size), max_bytes).into());
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| IndexError::io(path, e))?;
    if bytes.len() > max_bytes {
        // The file grew while it was read.
        return Err(too_large(path, 1, "the document", None, max_bytes).into());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        IndexError::malformed(path, line, "invalid UTF-8")
    })?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or(id_base);
    each(document_from_text(id_base, stem, text))
}

/// `what` (at `line` of `path`) has more than `max` bytes: `size` where known.
fn too_large(path: &Path, line: usize, what: &str, size: Option<u64>, max: usize) -> IndexError {
    let size = size.map(|s| format!(" ({s} bytes)")).unwrap_or_default();
    IndexError::malformed(
        path,
        line,
        format!(
            "{what} is larger than the limit of {max} bytes{size}; split it, or raise \
             --max-document-bytes"
        ),
    )
}

/// A text or Markdown document: a leading `# heading` (or a short first line
/// followed by a blank line) is its title, otherwise the file name is.
fn document_from_text(id: &str, file_stem: &str, text: String) -> Document {
    let body = text.trim_start();
    let (first_line, rest) = body.split_once('\n').unwrap_or((body, ""));
    let first = first_line.trim();
    let heading = first
        .strip_prefix('#')
        .map(|h| h.trim_start_matches('#').trim());
    let plain_title = (!first.is_empty()
        && first.len() <= 120
        && !first.ends_with(['.', '!', '?', ':'])
        && rest.starts_with(['\n', '\r']))
    .then_some(first);
    match heading.or(plain_title) {
        Some(title) => {
            let title = title.to_string();
            // Drop the title line in place rather than copying the rest of a large document.
            let body_start = text.len() - rest.len();
            let mut text = text;
            text.drain(..body_start);
            Document {
                id: id.to_string(),
                title,
                text,
            }
        }
        None => {
            let leading = text.len() - body.len();
            let mut text = text;
            text.drain(..leading);
            Document {
                id: id.to_string(),
                title: file_stem.replace(['_', '-'], " "),
                text,
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonDocument {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    text: String,
}

/// JSON lines, one `{"id", "title", "text"}` object a line; `id` defaults to
/// `FILE:LINE`, `title` to the id. Read a line at a time, each at most `max_bytes`; errors
/// name `path` and the line.
pub fn for_each_json_line<E: From<IndexError>>(
    path: &Path,
    mut reader: impl BufRead,
    max_bytes: usize,
    mut each: impl FnMut(Document) -> Result<(), E>,
) -> Result<(), E> {
    let mut raw = Vec::new();
    for line in 1.. {
        raw.clear();
        let read = (&mut reader)
            .take(max_bytes as u64 + 1)
            .read_until(b'\n', &mut raw)
            .map_err(|e| IndexError::io(path, e))?;
        if read == 0 {
            return Ok(());
        }
        if raw.len() > max_bytes {
            return Err(too_large(path, line, "the line", None, max_bytes).into());
        }
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Syntax, then the fields: the error names the field at fault (`field `text`: ...`).
        let record: JsonDocument = serde_json::from_slice::<serde_json::Value>(&raw)
            .map_err(|e| e.to_string())
            .and_then(|value| ansel_data::json::from_value(value, ""))
            .map_err(|message| IndexError::malformed(path, line, message))?;
        let id = record
            .id
            .unwrap_or_else(|| format!("{}:{line}", path.display()));
        if id.is_empty() {
            return Err(IndexError::malformed(path, line, "field `id`: empty").into());
        }
        each(Document {
            title: record.title.unwrap_or_else(|| id.clone()),
            id,
            text: record.text,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_and_lines_over_the_size_limit_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("long.txt");
        std::fs::write(&text, "word ".repeat(100)).unwrap();
        let err = for_each_document(&text, "long.txt", 400, |_| Ok::<(), IndexError>(()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "long.txt:1: the document is larger than the limit of 400 bytes (500 bytes)"
            ),
            "{err}"
        );
        let lines = dir.path().join("docs.jsonl");
        let long = format!("{{\"text\": \"{}\"}}", "word ".repeat(100));
        std::fs::write(&lines, format!("{{\"text\": \"Hi.\"}}\n{long}\n")).unwrap();
        let mut seen = 0;
        let err = for_each_document(&lines, "docs.jsonl", 400, |_| {
            seen += 1;
            Ok::<(), IndexError>(())
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("docs.jsonl:2: the line is larger than the limit of 400 bytes"),
            "{err}"
        );
        assert_eq!(seen, 1, "documents before the long line were handed over");
        // Within the limit, both read.
        assert_eq!(read_file(&lines, "docs.jsonl").unwrap().len(), 2);
    }

    #[test]
    fn titles_come_from_headings_short_first_lines_or_file_names() {
        let md = document_from_text("a.md", "a", "# The Nile\n\nThe Nile is long.\n".into());
        assert_eq!(md.title, "The Nile");
        assert_eq!(md.text.trim(), "The Nile is long.");
        let txt = document_from_text("b.txt", "b", "Bees\n\nBees make honey.".into());
        assert_eq!(txt.title, "Bees");
        let untitled = document_from_text("c.txt", "river_notes", "Rivers flow. They end.".into());
        assert_eq!(untitled.title, "river notes");
        assert_eq!(untitled.text, "Rivers flow. They end.");
    }

    #[test]
    fn jsonl_errors_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"d1\", \"title\": \"T\", \"text\": \"Hi.\"}\n\n{\"title\": \"T\"}\n",
        )
        .unwrap();
        let err = read_file(&path, "docs.jsonl").unwrap_err().to_string();
        assert!(err.contains("docs.jsonl:3:"), "{err}");
        assert!(err.contains("missing field `text`"), "{err}");
        std::fs::write(&path, "{\"text\": \"Hi.\", \"body\": 1}\n").unwrap();
        let err = read_file(&path, "docs.jsonl").unwrap_err().to_string();
        assert!(err.contains("unknown field `body`"), "{err}");
        std::fs::write(
            &path,
            "{\"text\": \"Hi.\"}\n{\"id\": 5, \"text\": \"Hi.\"}\n",
        )
        .unwrap();
        let err = read_file(&path, "docs.jsonl").unwrap_err().to_string();
        assert!(
            err.contains("docs.jsonl:2: field `id`: invalid type: integer `5`"),
            "{err}"
        );
        std::fs::write(&path, "{\"title\": \"T\", \"text\": [\"Hi.\"]}\n").unwrap();
        let err = read_file(&path, "docs.jsonl").unwrap_err().to_string();
        assert!(
            err.contains("docs.jsonl:1: field `text`: invalid type"),
            "{err}"
        );
        std::fs::write(&path, "{\"text\": \"Hi.\"}\n").unwrap();
        let docs = read_file(&path, "docs.jsonl").unwrap();
        assert_eq!(docs[0].id, format!("{}:1", path.display()));
        assert_eq!(docs[0].title, docs[0].id);
    }

    #[test]
    fn folders_are_walked_in_sorted_order_and_other_files_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for name in ["b.md", "a.txt", "sub/c.jsonl", "image.png"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let files = document_files(dir.path()).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.strip_prefix(dir.path()).unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, vec!["a.txt", "b.md", "sub/c.jsonl"]);
        let err = document_files(&dir.path().join("missing")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.txt");
        std::fs::write(&path, b"fine\nalso fine\nbad \xff here").unwrap();
        let err = read_file(&path, "bad.txt").unwrap_err().to_string();
        assert!(err.contains("bad.txt:3: invalid UTF-8"), "{err}");
    }
}
