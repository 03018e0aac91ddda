//! SelQA-style JSON: a list of `{question, candidates: [sentence...] in
//! document order, answers: [index...], article, section}`.

use super::parse_element;
use crate::model::link_neighbours;
use crate::{Candidate, DataError, DocContext, Question};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::path::Path;

/// A record whose answer indices were checked against its candidates.
#[derive(Deserialize)]
#[serde(try_from = "RawRecord")]
struct Record(RawRecord);

#[derive(Deserialize)]
struct RawRecord {
    #[serde(default, alias = "qid")]
    id: Option<String>,
    question: String,
    candidates: Vec<String>,
    answers: Vec<usize>,
    #[serde(default)]
    article: Option<String>,
    #[serde(default)]
    section: Option<String>,
}

impl TryFrom<RawRecord> for Record {
    type Error = String;

    // Validated while deserializing so that serde_json reports the line.
    fn try_from(raw: RawRecord) -> Result<Self, String> {
        if let Some(&bad) = raw.answers.iter().find(|&&a| a >= raw.candidates.len()) {
            return Err(format!(
                "field `answers`: index {bad} is out of range for {} candidates",
                raw.candidates.len()
            ));
        }
        Ok(Record(raw))
    }
}

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    let elements: Vec<&RawValue> =
        serde_json::from_slice(bytes).map_err(|e| DataError::json(path, 0, &e))?;
    elements
        .into_iter()
        .enumerate()
        .map(|(i, element)| Ok(to_question(i, parse_element(path, bytes, element)?)))
        .collect()
}

fn to_question(index: usize, Record(record): Record) -> Question {
    let doc_id = match (&record.article, &record.section) {
        (Some(a), Some(s)) => format!("{a}#{s}"),
        (Some(a), None) => a.clone(),
        _ => format!("doc-{index}"),
    };
    let mut candidates: Vec<Candidate> = record
        .candidates
        .into_iter()
        .enumerate()
        .map(|(position, text)| Candidate {
            id: position.to_string(),
            text,
            label: Some(record.answers.contains(&position)),
            context: Some(DocContext {
                doc_id: doc_id.clone(),
                title: record.article.clone(),
                position,
                prev: None,
                next: None,
            }),
        })
        .collect();
    link_neighbours(&mut candidates);
    Question {
        id: record.id.unwrap_or_else(|| index.to_string()),
        text: record.question,
        candidates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_answers_and_document_order() {
        let text = r#"[{"question": "Where?", "candidates": ["A.", "B.", "C."], "answers": [1],
                       "article": "Paris", "section": "Intro", "type": "GEO"}]"#;
        let qs = parse(Path::new("s.json"), text.as_bytes()).unwrap();
        assert_eq!(qs[0].labels(), vec![false, true, false]);
        let ctx = qs[0].candidates[1].context.clone().unwrap();
        assert_eq!((ctx.position, ctx.title.as_deref()), (1, Some("Paris")));
        assert_eq!(
            (ctx.prev.as_deref(), ctx.next.as_deref()),
            (Some("A."), Some("C."))
        );
    }

    #[test]
    fn out_of_range_answer_names_line_and_field() {
        let text = "[\n{\"question\": \"q\", \"candidates\": [\"a\"],\n\"answers\": [4]}\n]";
        crate::readers::testing::assert_error_at(parse, text, 2, "answers");
    }

    #[test]
    fn wrong_type_names_line_and_field() {
        let text = "[\n{\"question\": \"q\", \"candidates\": [\"a\"], \"answers\": [0]},\n{\"question\": \"q\", \"candidates\": \"a\", \"answers\": [0]}\n]";
        crate::readers::testing::assert_error_at(parse, text, 3, "candidates");
        let text = "[{\"question\": \"q\", \"candidates\": [\"a\", 2], \"answers\": [0]}]";
        let shown = crate::readers::testing::assert_error_at(parse, text, 1, "candidates[1]");
        assert!(shown.contains("invalid type: integer `2`"), "{shown}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in crate::readers::testing::inputs(
            r#"[{"question": "Where?", "candidates": ["A.", "B."], "answers": [1], "article": "P", "section": "I"}]"#
        )) {
            crate::readers::testing::never_panics(parse, &bytes);
        }
    }
}
