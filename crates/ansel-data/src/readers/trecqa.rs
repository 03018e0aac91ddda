//! TrecQA JSON lines (`{"question": ..., "candidates": [{"sentence", "label"}]}`).
//!
//! These files list every question's positives first, so the file order is a
//! label leak. The reader shuffles each question's candidates with a fixed seed
//! and numbers them after shuffling: no model, and no candidate id, can see the
//! original order. TrecQA has no document order, so candidates get no context
//! and position-based scorers (`rr`) refuse it.

use super::{deserialize_label, json_records};
use crate::{shuffle_seeded, Candidate, DataError, Question};
use serde::Deserialize;
use std::path::Path;

/// Fixed so that results are reproducible; mixed with the question index so
/// each question gets its own permutation.
pub const SHUFFLE_SEED: u64 = 0x0005_eeda_25e1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    question: String,
    candidates: Vec<RawCandidate>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCandidate {
    sentence: String,
    #[serde(deserialize_with = "deserialize_label")]
    label: Option<bool>,
}

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    let mut questions = Vec::new();
    for record in json_records::<Record>(path, bytes) {
        let record = record?;
        let index = questions.len();
        let mut candidates: Vec<(String, Option<bool>)> = record
            .candidates
            .into_iter()
            .map(|c| (c.sentence, c.label))
            .collect();
        shuffle_seeded(&mut candidates, SHUFFLE_SEED ^ index as u64);
        questions.push(Question {
            id: index.to_string(),
            text: record.question,
            candidates: candidates
                .into_iter()
                .enumerate()
                .map(|(i, (text, label))| Candidate {
                    id: i.to_string(),
                    text,
                    label,
                    context: None,
                })
                .collect(),
        });
    }
    Ok(questions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_so_positives_are_not_first_and_records_no_order() {
        let cands: Vec<String> = (0..20)
            .map(|i| format!("{{\"sentence\": \"s{i}\", \"label\": {}}}", u8::from(i < 5)))
            .collect();
        let line = format!(
            "{{\"question\": \"q?\", \"candidates\": [{}]}}\n",
            cands.join(",")
        );
        let qs = parse(Path::new("t.jsonl"), line.repeat(3).as_bytes()).unwrap();
        assert_eq!(qs.len(), 3);
        for q in &qs {
            assert_eq!(q.positives(), 5);
            assert!(!q.has_document_order());
            assert!(q.candidates.iter().all(|c| c.context.is_none()));
            let first_five_positive = q.candidates[..5].iter().all(|c| c.label == Some(true));
            assert!(!first_five_positive, "positives must not stay first");
            let ids: Vec<String> = (0..20).map(|i| i.to_string()).collect();
            assert_eq!(
                q.candidates
                    .iter()
                    .map(|c| c.id.clone())
                    .collect::<Vec<_>>(),
                ids
            );
        }
        assert_ne!(
            qs[0].candidates, qs[1].candidates,
            "each question gets its own permutation"
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        let text = "{\"question\": \"a\", \"candidates\": []}\n\n{\"question\": \"b\", \"candidates\": [{\"sentence\": \"x\", \"label\": 3}]}\n";
        crate::readers::testing::assert_error_at(parse, text, 3, "label");
        crate::readers::testing::assert_error_at(parse, "{\"candidates\": []}", 1, "question");
        let wrong_type =
            "{\"question\": \"b\", \"candidates\": [{\"sentence\": \"x\", \"label\": \"yes\"}]}";
        let shown = crate::readers::testing::assert_error_at(parse, wrong_type, 1, "label");
        assert!(
            shown.ends_with("expected 0, 1, true or false, found a string"),
            "{shown}"
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in crate::readers::testing::inputs(
            "{\"question\": \"Who?\", \"candidates\": [{\"sentence\": \"x y\", \"label\": 1}, {\"sentence\": \"z\", \"label\": 0}]}\n"
        )) {
            crate::readers::testing::never_panics(parse, &bytes);
        }
    }
}
