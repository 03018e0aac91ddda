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

use super::{deserialize_label, json_records};
use crate::model::link_neighbours;
use crate::{Candidate, DataError, DocContext, Question};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    #[serde(default)]
    id: Option<String>,
    question: String,
    #[serde(default)]
    doc_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    in_document_order: bool,
    candidates: Vec<RawCandidate>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawCandidate {
    Text(String),
    Full(FullCandidate),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FullCandidate {
    #[serde(default)]
    id: Option<String>,
    text: String,
    #[serde(default, deserialize_with = "deserialize_label")]
    label: Option<bool>,
    #[serde(default)]
    doc_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    position: Option<usize>,
    #[serde(default)]
    prev: Option<String>,
    #[serde(default)]
    next: Option<String>,
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
        .map(|(i, raw)| {
            let full = match raw {
                RawCandidate::Text(text) => FullCandidate {
                    id: None,
                    text,
                    label: None,
                    doc_id: None,
                    title: None,
                    position: None,
                    prev: None,
                    next: None,
                },
                RawCandidate::Full(full) => full,
            };
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

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in crate::readers::testing::inputs(
            "{\"id\": \"q\", \"question\": \"Who?\", \"candidates\": [\"A.\", {\"text\": \"B.\", \"label\": 1, \"position\": 1}]}\n"
        )) {
            crate::readers::testing::never_panics(parse, &bytes);
        }
    }
}
