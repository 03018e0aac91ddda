//! WikiQA original TSV: `QuestionID Question DocumentID DocumentTitle SentenceID Sentence Label`.
//!
//! Fields are split on tabs only: the text has raw quotes and is not CSV-quoted.
//! Document order comes from SentenceID (`D12-3` is sentence 3 of document D12),
//! so every candidate gets its position, title and previous/next sentence.

use super::text_lines;
use crate::model::link_neighbours;
use crate::{Candidate, DataError, DocContext, Question};
use std::collections::HashMap;
use std::path::Path;

const COLUMNS: [&str; 7] = [
    "QuestionID",
    "Question",
    "DocumentID",
    "DocumentTitle",
    "SentenceID",
    "Sentence",
    "Label",
];

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    let mut lines = text_lines(path, bytes);
    match lines.next().transpose()? {
        Some((_, header)) if header.split('\t').eq(COLUMNS) => {}
        Some((n, _)) => {
            return Err(DataError::malformed(
                path,
                Some(n),
                None,
                format!("expected the WikiQA header `{}`", COLUMNS.join("\\t")),
            ))
        }
        None => return Ok(Vec::new()),
    }
    let mut questions: Vec<Question> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for line in lines {
        let (n, line) = line?;
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != COLUMNS.len() {
            return Err(DataError::malformed(
                path,
                Some(n),
                None,
                format!(
                    "expected {} tab-separated fields, found {}",
                    COLUMNS.len(),
                    fields.len()
                ),
            ));
        }
        let [qid, question, doc_id, title, sentence_id, sentence, label] =
            <[&str; 7]>::try_from(fields).expect("length checked above");
        let field_error = |field: &str, message: String| {
            DataError::malformed(path, Some(n), Some(field), message)
        };
        let label = match label.trim() {
            "0" => false,
            "1" => true,
            other => {
                return Err(field_error(
                    "Label",
                    format!("expected 0 or 1, found {other:?}"),
                ))
            }
        };
        let position = sentence_position(sentence_id, doc_id).ok_or_else(|| {
            field_error(
                "SentenceID",
                format!("expected `{doc_id}-<index>`, found {sentence_id:?}"),
            )
        })?;
        if qid.is_empty() {
            return Err(field_error("QuestionID", "is empty".into()));
        }
        let slot = *index.entry(qid.to_string()).or_insert_with(|| {
            questions.push(Question {
                id: qid.to_string(),
                text: question.to_string(),
                candidates: Vec::new(),
            });
            questions.len() - 1
        });
        questions[slot].candidates.push(Candidate {
            id: sentence_id.to_string(),
            text: sentence.to_string(),
            label: Some(label),
            context: Some(DocContext {
                doc_id: doc_id.to_string(),
                title: Some(title.to_string()),
                position,
                prev: None,
                next: None,
            }),
        });
    }
    for question in &mut questions {
        link_neighbours(&mut question.candidates);
    }
    Ok(questions)
}

/// `D12-3` with document `D12` gives 3.
fn sentence_position(sentence_id: &str, doc_id: &str) -> Option<usize> {
    sentence_id
        .strip_prefix(doc_id)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n";

    #[test]
    fn reads_document_order_context_and_quotes() {
        let text = format!(
            "{HEADER}Q1\tWho?\tD1\tTitle One\tD1-0\tFirst \"quoted\" one.\t0\n\
             Q1\tWho?\tD1\tTitle One\tD1-1\tSecond.\t1\n\
             Q1\tWho?\tD1\tTitle One\tD1-2\tThird.\t0\n\
             Q2\tWhat?\tD2\tT2\tD2-0\tOnly.\t0\n"
        );
        let qs = parse(Path::new("w.tsv"), text.as_bytes()).unwrap();
        assert_eq!(qs.len(), 2);
        let c = &qs[0].candidates[1];
        assert_eq!(c.label, Some(true));
        let ctx = c.context.as_ref().unwrap();
        assert_eq!(ctx.position, 1);
        assert_eq!(ctx.title.as_deref(), Some("Title One"));
        assert_eq!(ctx.prev.as_deref(), Some("First \"quoted\" one."));
        assert_eq!(ctx.next.as_deref(), Some("Third."));
        assert_eq!(qs[1].positives(), 0);
    }

    #[test]
    fn errors_name_line_and_field() {
        let text = format!("{HEADER}Q1\tWho?\tD1\tT\tD1-0\tS\t2\n");
        let err = parse(Path::new("w.tsv"), text.as_bytes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "w.tsv:2: field `Label`: expected 0 or 1, found \"2\""
        );
        let text = format!("{HEADER}Q1\tWho?\tD1\tT\tD2-0\tS\t0\n");
        let err = parse(Path::new("w.tsv"), text.as_bytes()).unwrap_err();
        assert!(
            err.to_string().starts_with("w.tsv:2: field `SentenceID`"),
            "{err}"
        );
        let text = format!("{HEADER}Q1\tWho?\tD1\n");
        let err = parse(Path::new("w.tsv"), text.as_bytes()).unwrap_err();
        assert!(
            err.to_string()
                .contains("w.tsv:2: expected 7 tab-separated fields, found 3"),
            "{err}"
        );
        let err = parse(Path::new("w.tsv"), b"a\tb\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("w.tsv:1: expected the WikiQA header"),
            "{err}"
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in crate::readers::testing::inputs(
            "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\nQ1\tWho?\tD1\tT\tD1-0\tS\t1\nQ1\tWho?\tD1\tT\tD1-1\tS2\t0\n"
        )) {
            crate::readers::testing::never_panics(parse, &bytes);
        }
    }
}
