//! Streaming readers for the TREC CAR v1.5 CBOR files: one CBOR item per record, concatenated.
//!
//! [`Records`] reads a file chunk by chunk, finds where each record ends (minicbor's iterative
//! `skip`, so no recursion on hostile nesting), and hands the record's bytes to a typed decoder.
//! Memory is bounded by the largest record, not the file. Every error names the file, the record
//! number (0-based), its byte offset and the field (a path such as
//! `skeleton[2].children[0].heading`); no input makes a reader panic (a property test checks this
//! on random and truncated bytes).

use minicbor::data::Type;
use minicbor::Decoder;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::model::{Page, ParaBody, Paragraph, Skeleton};

/// Everything that can go wrong reading a TREC CAR file.
#[derive(Debug, thiserror::Error)]
pub enum CarError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: record {record} (byte {offset}): field `{field}`: {message}", path.display())]
    Malformed {
        path: PathBuf,
        record: usize,
        offset: u64,
        field: String,
        message: String,
    },
}

/// A decoding failure inside one record: the field path and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

type Field<T> = Result<T, FieldError>;

fn err(field: &str, message: impl std::fmt::Display) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.to_string(),
    }
}

/// Deepest section nesting accepted; deeper input is an error, not a stack overflow.
pub const MAX_DEPTH: usize = 64;
const CHUNK: usize = 64 * 1024;

/// Iterator over the records of a CBOR stream, each decoded by `decode`.
pub struct Records<R, T> {
    path: PathBuf,
    reader: R,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    start: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    record: usize,
    failed: bool,
    decode: fn(&mut Decoder<'_>) -> Field<T>,
}

impl<R: Read, T> Records<R, T> {
    pub fn new(path: &Path, reader: R, decode: fn(&mut Decoder<'_>) -> Field<T>) -> Self {
        Records {
            path: path.to_path_buf(),
            reader,
            buf: Vec::new(),
            start: 0,
            base: 0,
            eof: false,
            record: 0,
            failed: false,
            decode,
        }
    }

    fn malformed(&self, offset: u64, field: &str, message: impl std::fmt::Display) -> CarError {
        CarError::Malformed {
            path: self.path.clone(),
            record: self.record,
            offset,
            field: field.to_string(),
            message: message.to_string(),
        }
    }

    /// Reads at least `want` more bytes unless the file ends first.
    fn fill(&mut self, want: usize) -> Result<(), CarError> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.base += self.start as u64;
            self.start = 0;
        }
        let target = self.buf.len() + want;
        while self.buf.len() < target && !self.eof {
            let old = self.buf.len();
            self.buf.resize(target, 0);
            match self.reader.read(&mut self.buf[old..]) {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.eof = true;
                }
                Ok(n) => self.buf.truncate(old + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.buf.truncate(old),
                Err(source) => {
                    self.buf.truncate(old);
                    return Err(CarError::Io {
                        path: self.path.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    fn next_record(&mut self) -> Result<Option<T>, CarError> {
        let mut want = CHUNK;
        loop {
            if self.start == self.buf.len() {
                if self.eof {
                    return Ok(None);
                }
                self.fill(want)?;
                continue;
            }
            let offset = self.base + self.start as u64;
            let bytes = &self.buf[self.start..];
            let mut d = Decoder::new(bytes);
            match d.skip() {
                Ok(()) => {
                    let end = d.position();
                    let mut d = Decoder::new(&bytes[..end]);
                    let value = (self.decode)(&mut d)
                        .map_err(|e| self.malformed(offset, &e.field, e.message))?;
                    self.start += end;
                    self.record += 1;
                    return Ok(Some(value));
                }
                Err(e) if e.is_end_of_input() && !self.eof => {
                    self.fill(want)?;
                    want = want.saturating_mul(2);
                }
                Err(e) if e.is_end_of_input() => {
                    return Err(self.malformed(
                        offset,
                        "record",
                        format!(
                            "truncated: the file ends {} bytes into the record",
                            bytes.len()
                        ),
                    ))
                }
                Err(e) => return Err(self.malformed(offset, "record", e)),
            }
        }
    }
}

impl<R: Read, T> Iterator for Records<R, T> {
    type Item = Result<T, CarError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_record().transpose();
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }
}

fn open(path: &Path) -> Result<std::io::BufReader<std::fs::File>, CarError> {
    std::fs::File::open(path)
        .map(std::io::BufReader::new)
        .map_err(|source| CarError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Paragraphs of a `*.cbor.paragraphs` file, one at a time.
pub fn read_paragraphs(
    path: &Path,
) -> Result<Records<std::io::BufReader<std::fs::File>, Paragraph>, CarError> {
    Ok(Records::new(path, open(path)?, decode_paragraph))
}

/// Pages of a `*.cbor.outlines` file (sections only) or of a full `*.cbor` page file.
pub fn read_pages(
    path: &Path,
) -> Result<Records<std::io::BufReader<std::fs::File>, Page>, CarError> {
    Ok(Records::new(path, open(path)?, decode_page))
}

// ---------------------------------------------------------------- typed decoding

fn cbor(field: &str, e: minicbor::decode::Error) -> FieldError {
    err(field, e)
}

/// A text string, definite or indefinite (chunked).
fn text(d: &mut Decoder<'_>, field: &str) -> Field<String> {
    let mut out = String::new();
    for chunk in d.str_iter().map_err(|e| cbor(field, e))? {
        out.push_str(chunk.map_err(|e| cbor(field, e))?);
    }
    Ok(out)
}

/// A byte string holding an ASCII/UTF-8 id (TREC CAR ids are byte strings).
fn id(d: &mut Decoder<'_>, field: &str) -> Field<String> {
    let mut out = Vec::new();
    for chunk in d.bytes_iter().map_err(|e| cbor(field, e))? {
        out.extend_from_slice(chunk.map_err(|e| cbor(field, e))?);
    }
    String::from_utf8(out).map_err(|e| err(field, format!("id is not UTF-8: {e}")))
}

fn tag(d: &mut Decoder<'_>, field: &str) -> Field<u64> {
    d.u64().map_err(|e| cbor(field, e))
}

/// Starts an array of at least `min` elements (definite) and returns its length (`None`:
/// indefinite).
fn array(d: &mut Decoder<'_>, field: &str, min: u64) -> Field<Option<u64>> {
    let len = d.array().map_err(|e| cbor(field, e))?;
    if let Some(n) = len {
        if n < min {
            return Err(err(
                field,
                format!("expected an array of at least {min} elements, found {n}"),
            ));
        }
    }
    Ok(len)
}

/// Skips what is left of an array started by [`array`] after `used` elements were read.
fn finish(d: &mut Decoder<'_>, field: &str, len: Option<u64>, used: u64) -> Field<()> {
    match len {
        Some(n) => {
            for _ in used..n {
                d.skip().map_err(|e| cbor(field, e))?;
            }
        }
        None => loop {
            if d.datatype().map_err(|e| cbor(field, e))? == Type::Break {
                d.skip().map_err(|e| cbor(field, e))?;
                break;
            }
            d.skip().map_err(|e| cbor(field, e))?;
        },
    }
    Ok(())
}

/// Decodes every element of an array (definite or indefinite) with `item`.
fn list<T>(
    d: &mut Decoder<'_>,
    field: &str,
    mut item: impl FnMut(&mut Decoder<'_>, &str) -> Field<T>,
) -> Field<Vec<T>> {
    let len = array(d, field, 0)?;
    let mut out = Vec::new();
    let mut i = 0u64;
    loop {
        match len {
            Some(n) if i >= n => break,
            None if d.datatype().map_err(|e| cbor(field, e))? == Type::Break => {
                d.skip().map_err(|e| cbor(field, e))?;
                break;
            }
            _ => {}
        }
        out.push(item(d, &format!("{field}[{i}]"))?);
        i += 1;
    }
    Ok(out)
}

/// `[0, id: bytes, bodies: [ParaBody]]`
pub fn decode_paragraph(d: &mut Decoder<'_>) -> Field<Paragraph> {
    paragraph(d, "paragraph")
}

fn paragraph(d: &mut Decoder<'_>, field: &str) -> Field<Paragraph> {
    let len = array(d, field, 3)?;
    let t = tag(d, &format!("{field}.tag"))?;
    if t != 0 {
        return Err(err(
            &format!("{field}.tag"),
            format!("unknown paragraph tag {t}"),
        ));
    }
    let id = id(d, &format!("{field}.id"))?;
    let bodies = list(d, &format!("{field}.bodies"), para_body)?;
    finish(d, field, len, 3)?;
    Ok(Paragraph { id, bodies })
}

/// `[0, text]` or `[1, [_, page, [section?], target_id: bytes, anchor]]`
fn para_body(d: &mut Decoder<'_>, field: &str) -> Field<ParaBody> {
    let len = array(d, field, 2)?;
    let t = tag(d, &format!("{field}.tag"))?;
    let body = match t {
        0 => ParaBody::Text(text(d, &format!("{field}.text"))?),
        1 => {
            let f = format!("{field}.link");
            let inner = array(d, &f, 5)?;
            d.skip().map_err(|e| cbor(&f, e))?;
            let page = text(d, &format!("{f}.page"))?;
            let section = list(d, &format!("{f}.section"), text)?.into_iter().next();
            let target_id = id(d, &format!("{f}.target_id"))?;
            let anchor = text(d, &format!("{f}.anchor"))?;
            finish(d, &f, inner, 5)?;
            ParaBody::Link {
                anchor,
                page,
                section,
                target_id,
            }
        }
        t => {
            return Err(err(
                &format!("{field}.tag"),
                format!("unknown body tag {t}"),
            ))
        }
    };
    finish(d, field, len, 2)?;
    Ok(body)
}

/// `[0|1, name, id: bytes, skeleton: [PageSkeleton], ...]` (v2 adds page type and metadata,
/// which are skipped).
pub fn decode_page(d: &mut Decoder<'_>) -> Field<Page> {
    let field = "page";
    let len = array(d, field, 4)?;
    let t = tag(d, "page.tag")?;
    if t > 1 {
        return Err(err("page.tag", format!("unknown page tag {t}")));
    }
    let name = text(d, "page.name")?;
    let id = id(d, "page.id")?;
    let skeleton = list(d, "page.skeleton", |d, f| skeleton(d, f, 0))?;
    finish(d, field, len, 4)?;
    Ok(Page { name, id, skeleton })
}

fn skeleton(d: &mut Decoder<'_>, field: &str, depth: usize) -> Field<Skeleton> {
    if depth >= MAX_DEPTH {
        return Err(err(
            field,
            format!("sections nested deeper than {MAX_DEPTH}"),
        ));
    }
    let len = array(d, field, 2)?;
    let t = tag(d, &format!("{field}.tag"))?;
    let used = match t {
        0 => 4,
        1 => 2,
        3 => 3,
        _ => 1,
    };
    if len.is_some_and(|n| n < used) {
        return Err(err(field, format!("too few elements for tag {t}")));
    }
    let node = match t {
        0 => {
            let heading = text(d, &format!("{field}.heading"))?;
            let heading_id = id(d, &format!("{field}.heading_id"))?;
            let children = list(d, &format!("{field}.children"), |d, f| {
                skeleton(d, f, depth + 1)
            })?;
            Skeleton::Section {
                heading,
                heading_id,
                children,
            }
        }
        1 => Skeleton::Para(paragraph(d, &format!("{field}.paragraph"))?),
        3 => {
            let level = d.u64().map_err(|e| cbor(&format!("{field}.level"), e))?;
            let body = paragraph(d, &format!("{field}.body"))?;
            Skeleton::List { level, body }
        }
        // Images, infoboxes and later additions: kept as their tag, contents skipped.
        t => Skeleton::Other(t),
    };
    finish(d, field, len, used)?;
    Ok(node)
}
