//! ansel's own JSON lines format: one question per line.
//!
//! ```json
//! {"id": "q1", "question": "Who wrote Hamlet?", "candidates": [
//!    "Hamlet is a tragedy.",
//!    {"id": "c2", "text": "It was written by Shakespeare.", "label": 1,
//!     "doc_id": "hamlet", "title": "Hamlet", "position": 1, "prev": "...", "next": "..."}]}
//! ```
//!
//! A candidate is a string or an object; `id` defaults to its index, `label`
//! (0/1/true/false) is optional. A candidate with a `position` has document
//! context; `doc_id` defaults to the question's `doc_id`, `title` to its
//! `title`, and missing `prev`/`next` are filled from sibling candidates.
//! `"in_document_order": true` gives every candidate its index as position.

use super::{json_records, reject_json, Expecting, LabelVisitor};
use crate::model::link_neighbours;
use crate::{Candidate, DataError, DocContext, Question};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::path::Path;

/// One line as written. Read field by field (see [`each_field`]), so that a wrong value names
/// its field (`question`, `candidates[2].label`) and says what was expected there.
struct Record {
    id: Option<String>,
    question: String,
    doc_id: Option<String>,
    title: Option<String>,
    in_document_order: bool,
    candidates: Vec<RawCandidate>,
}

const RECORD_FIELDS: &str =
    "`id`, `question`, `doc_id`, `title`, `in_document_order`, `candidates`";

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Record, D::Error> {
        d.deserialize_any(RecordVisitor)
    }
}

struct RecordVisitor;

impl Expecting for RecordVisitor {
    fn field(&self) -> &str {
        ""
    }
    fn expected(&self) -> &str {
        "an object with `question` and `candidates`"
    }
    // A line is not a field: say what it should be.
    fn found<E: de::Error>(&self, found: &str) -> E {
        E::custom(format_args!("expected {}, found {found}", self.expected()))
    }
}

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = Record;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Record, A::Error> {
        let (mut id, mut question, mut doc_id, mut title) = (None, None, None, None);
        let (mut in_document_order, mut candidates) = (false, None);
        each_field(map, "", |field, key, map| {
            if key == "candidates" {
                // Streamed, not read as a JSON value first: a value would drop repeated keys.
                candidates = Some(map.next_value_seed(CandidatesVisitor)?);
                return Ok(());
            }
            let value = map.next_value()?;
            match key {
                "id" => id = typed(field, value)?,
                "question" => question = Some(typed(field, value)?),
                "doc_id" => doc_id = typed(field, value)?,
                "title" => title = typed(field, value)?,
                "in_document_order" => in_document_order = typed(field, value)?,
                _ => return Err(unknown(field, RECORD_FIELDS)),
            }
            Ok(())
        })?;
        let missing = |field| de::Error::custom(format_args!("field `{field}`: missing field"));
        Ok(Record {
            id,
            question: question.ok_or_else(|| missing("question"))?,
            doc_id,
            title,
            in_document_order,
            candidates: candidates.ok_or_else(|| missing("candidates"))?,
        })
    }
    reject_json!(null, bool, number, string, list);
}

/// Reads an object's keys one at a time and hands each to `each` with its path (`prefix.key`,
/// or `key` at the top) and the map, which reads the value; a repeated key is an error naming
/// the field.
fn each_field<'de, A: MapAccess<'de>>(
    mut map: A,
    prefix: &str,
    mut each: impl FnMut(&str, &str, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    let mut seen: Vec<String> = Vec::new();
    while let Some(key) = map.next_key::<String>()? {
        let field = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if seen.contains(&key) {
            return Err(de::Error::custom(format_args!(
                "field `{field}`: duplicate field"
            )));
        }
        each(&field, &key, &mut map)?;
        seen.push(key);
    }
    Ok(())
}

/// The error for a key the object does not take.
fn unknown<E: de::Error>(field: &str, fields: &str) -> E {
    E::custom(format_args!(
        "field `{field}`: unknown field, expected one of {fields}"
    ))
}

/// A candidate as written; a string candidate is its `text` alone.
#[derive(Default)]
struct RawCandidate {
    id: Option<String>,
    text: String,
    label: Option<bool>,
    doc_id: Option<String>,
    title: Option<String>,
    position: Option<usize>,
    prev: Option<String>,
    next: Option<String>,
}

const CANDIDATE_FIELDS: &str =
    "`id`, `text`, `label`, `doc_id`, `title`, `position`, `prev`, `next`";

/// Reads `candidates` element by element, so that an error names the
/// candidate (`candidates[2]`) or its field (`candidates[2].label`).
struct CandidatesVisitor;

impl<'de> DeserializeSeed<'de> for CandidatesVisitor {
    type Value = Vec<RawCandidate>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl Expecting for CandidatesVisitor {
    fn field(&self) -> &str {
        "candidates"
    }
    fn expected(&self) -> &str {
        "a list of strings or objects with `text`"
    }
}

impl<'de> Visitor<'de> for CandidatesVisitor {
    type Value = Vec<RawCandidate>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut candidates = Vec::new();
        loop {
            let field = format!("candidates[{}]", candidates.len());
            match seq.next_element_seed(CandidateVisitor { field: &field })? {
                Some(candidate) => candidates.push(candidate),
                None => return Ok(candidates),
            }
        }
    }
    reject_json!(null, bool, number, string, object);
}

/// One candidate: a string, or an object with `text` and optional fields.
struct CandidateVisitor<'f> {
    field: &'f str,
}

impl Expecting for CandidateVisitor<'_> {
    fn field(&self) -> &str {
        self.field
    }
    fn expected(&self) -> &str {
        "a string or an object with `text`"
    }
}

impl<'de> DeserializeSeed<'de> for CandidateVisitor<'_> {
    type Value = RawCandidate;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawCandidate, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CandidateVisitor<'_> {
    type Value = RawCandidate;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<RawCandidate, E> {
        self.visit_string(text.to_owned())
    }
    fn visit_string<E: de::Error>(self, text: String) -> Result<RawCandidate, E> {
        Ok(RawCandidate {
            text,
            ..RawCandidate::default()
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawCandidate, A::Error> {
        let mut candidate = RawCandidate::default();
        let mut text = None;
        each_field(map, self.field, |field, key, map| {
            if key == "label" {
                let value: Value = map.next_value()?;
                candidate.label = value
                    .deserialize_any(LabelVisitor { field })
                    .map_err(de::Error::custom)?;
                return Ok(());
            }
            let value = map.next_value()?;
            match key {
                "id" => candidate.id = typed(field, value)?,
                "text" => text = Some(typed(field, value)?),
                "doc_id" => candidate.doc_id = typed(field, value)?,
                "title" => candidate.title = typed(field, value)?,
                "position" => candidate.position = typed(field, value)?,
                "prev" => candidate.prev = typed(field, value)?,
                "next" => candidate.next = typed(field, value)?,
                _ => return Err(unknown(field, CANDIDATE_FIELDS)),
            }
            Ok(())
        })?;
        candidate.text = text.ok_or_else(|| {
            de::Error::custom(format_args!("field `{}.text`: missing field", self.field))
        })?;
        Ok(candidate)
    }
    reject_json!(null, bool, number, list);
}

/// One field's value as `T`, an error naming the field.
fn typed<T: DeserializeOwned, E: de::Error>(field: &str, value: Value) -> Result<T, E> {
    T::deserialize(value).map_err(|e| E::custom(format_args!("field `{field}`: {e}")))
}

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    json_records(path, bytes)
        .enumerate()
        .map(|(index, record)| Ok(to_question(index, record?)))
        .collect()
}

fn to_question(index: usize, record: Record) -> Question {
    let question_doc = record.doc_id.unwrap_or_else(|| "doc".to_string());
    let mut candidates: Vec<Candidate> = record
        .candidates
        .into_iter()
        .enumerate()
        .map(|(i, full)| {
            let position = full.position.or(record.in_document_order.then_some(i));
            Candidate {
                id: full.id.unwrap_or_else(|| i.to_string()),
                text: full.text,
                label: full.label,
                context: position.map(|position| DocContext {
                    doc_id: full.doc_id.unwrap_or_else(|| question_doc.clone()),
                    title: full.title.or_else(|| record.title.clone()),
                    position,
                    prev: full.prev,
                    next: full.next,
                }),
            }
        })
        .collect();
    link_neighbours(&mut candidates);
    Question {
        id: record.id.unwrap_or_else(|| index.to_string()),
        text: record.question,
        candidates,
    }
}

/// Writes questions as ansel JSON lines (the inverse of [`parse`]).
pub fn write<W: std::io::Write>(mut out: W, questions: &[Question]) -> std::io::Result<()> {
    for q in questions {
        let candidates: Vec<serde_json::Value> = q
            .candidates
            .iter()
            .map(|c| {
                let mut obj = serde_json::json!({"id": c.id, "text": c.text});
                if let Some(label) = c.label {
                    obj["label"] = u8::from(label).into();
                }
                if let Some(ctx) = &c.context {
                    obj["doc_id"] = ctx.doc_id.clone().into();
                    obj["position"] = ctx.position.into();
                    for (key, value) in [
                        ("title", &ctx.title),
                        ("prev", &ctx.prev),
                        ("next", &ctx.next),
                    ] {
                        if let Some(v) = value {
                            obj[key] = v.clone().into();
                        }
                    }
                }
                obj
            })
            .collect();
        let line = serde_json::json!({"id": q.id, "question": q.text, "candidates": candidates});
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_objects_defaults_and_context() {
        let text = r#"{"question": "Who?", "title": "T", "in_document_order": true, "candidates": ["A.", {"text": "B.", "label": true}, "C."]}
{"id": "x", "question": "What?", "candidates": [{"text": "only", "label": 0}]}"#;
        let qs = parse(Path::new("a.jsonl"), text.as_bytes()).unwrap();
        assert_eq!(qs[0].id, "0");
        assert!(qs[0].has_document_order());
        let ctx = qs[0].candidates[1].context.clone().unwrap();
        assert_eq!(
            (
                ctx.prev.as_deref(),
                ctx.next.as_deref(),
                ctx.title.as_deref()
            ),
            (Some("A."), Some("C."), Some("T"))
        );
        assert_eq!(qs[0].candidates[0].label, None);
        assert_eq!(qs[1].id, "x");
        assert!(!qs[1].has_document_order());
        assert_eq!(qs[1].candidates[0].label, Some(false));
    }

    #[test]
    fn write_then_parse_round_trips() {
        let text = r#"{"id": "q", "question": "Who?", "doc_id": "d", "candidates": [{"id": "a", "text": "A.", "position": 0, "label": 1}, {"id": "b", "text": "B.", "position": 1, "label": 0}]}"#;
        let qs = parse(Path::new("a.jsonl"), text.as_bytes()).unwrap();
        let mut buf = Vec::new();
        write(&mut buf, &qs).unwrap();
        assert_eq!(parse(Path::new("b.jsonl"), &buf).unwrap(), qs);
    }

    #[test]
    fn unknown_field_is_reported_with_line() {
        let text =
            "{\"question\": \"a\", \"candidates\": []}\n{\"question\": \"b\", \"cands\": []}";
        crate::readers::testing::assert_error_at(parse, text, 2, "cands");
    }

    #[test]
    fn a_wrong_top_level_field_is_named() {
        use crate::readers::testing::assert_error_at;
        let cases = [
            (
                "{\"question\": 3, \"candidates\": []}",
                "question",
                "invalid type: integer `3`, expected a string",
            ),
            (
                "{\"question\": \"q\", \"id\": [1], \"candidates\": []}",
                "id",
                "expected a string",
            ),
            (
                "{\"question\": \"q\", \"title\": 2, \"candidates\": []}",
                "title",
                "expected a string",
            ),
            (
                "{\"question\": \"q\", \"doc_id\": {}, \"candidates\": []}",
                "doc_id",
                "expected a string",
            ),
            (
                "{\"question\": \"q\", \"in_document_order\": \"yes\", \"candidates\": []}",
                "in_document_order",
                "expected a boolean",
            ),
            ("{\"candidates\": []}", "question", "missing field"),
            ("{\"question\": \"q\"}", "candidates", "missing field"),
            (
                "{\"question\": \"q\", \"question\": \"r\", \"candidates\": []}",
                "question",
                "duplicate field",
            ),
            (
                "{\"question\": \"q\", \"candidates\": [], \"answer\": 1}",
                "answer",
                "unknown field, expected one of `id`, `question`",
            ),
        ];
        for (line, field, message) in cases {
            let text = format!("{{\"question\": \"a\", \"candidates\": [\"x\"]}}\n{line}\n");
            let shown = assert_error_at(parse, &text, 2, field);
            assert!(shown.contains(message), "{shown:?} should say {message:?}");
        }
        // A line that is not an object says what it should be.
        let shown = format!("{}", parse(Path::new("a.jsonl"), b"[1]\n").unwrap_err());
        assert!(
            shown.contains("a.jsonl:1")
                && shown
                    .contains("expected an object with `question` and `candidates`, found a list"),
            "{shown}"
        );
    }

    #[test]
    fn every_candidate_shape_is_accepted_with_its_fields() {
        let text = r#"{"question": "Who?", "candidates": ["A.", {"text": "B."}, {"id": null, "text": "C.", "label": null}, {"id": "d", "text": "D.", "label": false, "doc_id": "doc", "title": "T", "position": 3, "prev": "C.", "next": "E."}, {"text": "E.", "label": 1}, {"text": "F.", "label": true}]}"#;
        let q = &parse(Path::new("a.jsonl"), text.as_bytes()).unwrap()[0];
        let ids: Vec<&str> = q.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["0", "1", "2", "d", "4", "5"]);
        let labels: Vec<Option<bool>> = q.candidates.iter().map(|c| c.label).collect();
        assert_eq!(
            labels,
            [None, None, None, Some(false), Some(true), Some(true)]
        );
        let ctx = q.candidates[3].context.clone().unwrap();
        assert_eq!(
            (ctx.doc_id.as_str(), ctx.title.as_deref(), ctx.position),
            ("doc", Some("T"), 3)
        );
        assert_eq!(
            (ctx.prev.as_deref(), ctx.next.as_deref()),
            (Some("C."), Some("E."))
        );
        assert!(q.candidates[0].context.is_none());
    }

    #[test]
    fn a_wrong_candidate_names_its_field_and_what_was_expected() {
        use crate::readers::testing::assert_error_at;
        let cases = [
            (
                "[\"x\", \"y\", 5]",
                "candidates[2]",
                "expected a string or an object with `text`, found a number",
            ),
            (
                "[null]",
                "candidates[0]",
                "expected a string or an object with `text`, found null",
            ),
            ("[\"x\", true]", "candidates[1]", "found a boolean"),
            ("[[\"x\"]]", "candidates[0]", "found a list"),
            (
                "[\"x\", {\"text\": 5}]",
                "candidates[1].text",
                "invalid type: integer `5`, expected a string",
            ),
            ("[{\"label\": 1}]", "candidates[0].text", "missing field"),
            (
                "[{\"text\": \"t\", \"label\": \"yes\"}]",
                "candidates[0].label",
                "expected 0, 1, true or false, found a string",
            ),
            (
                "[{\"text\": \"t\", \"label\": 7}]",
                "candidates[0].label",
                "expected 0, 1, true or false, found 7",
            ),
            (
                "[{\"text\": \"t\", \"label\": 1.0}]",
                "candidates[0].label",
                "found a number",
            ),
            (
                "[{\"text\": \"t\", \"txt\": \"u\"}]",
                "candidates[0].txt",
                "unknown field, expected one of `id`, `text`",
            ),
            (
                "[{\"text\": \"t\", \"text\": \"u\"}]",
                "candidates[0].text",
                "duplicate field",
            ),
            (
                "[\"x\", {\"text\": \"t\", \"position\": -1}]",
                "candidates[1].position",
                "invalid value: integer `-1`",
            ),
            (
                "[{\"text\": \"t\", \"id\": 3}]",
                "candidates[0].id",
                "invalid type: integer `3`, expected a string",
            ),
            (
                "5",
                "candidates",
                "expected a list of strings or objects with `text`, found a number",
            ),
            ("{\"text\": \"t\"}", "candidates", "found an object"),
        ];
        for (candidates, field, message) in cases {
            let text = format!(
                "{{\"question\": \"a\", \"candidates\": [\"x\"]}}\n\n{{\"question\": \"b\", \"candidates\": {candidates}}}\n"
            );
            let shown = assert_error_at(parse, &text, 3, field);
            assert!(shown.contains(message), "{shown:?} should say {message:?}");
            assert!(!shown.contains("untagged"), "{shown}");
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in crate::readers::testing::inputs(
            "{\"id\": \"q\", \"question\": \"Who?\", \"candidates\": [\"A.\", {\"text\": \"B.\", \"label\": 1, \"position\": 1}]}\n"
        )) {
            crate::readers::testing::never_panics(parse, &bytes);
        }
    }
}
