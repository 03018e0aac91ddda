//! SQuAD v1.1 / v2.0 JSON as sentence-level AS2 ("SQuAD-sent" in the thesis):
//! each question's candidates are the sentences of its paragraph, and a
//! sentence is positive iff it contains an answer span. A span that crosses a
//! sentence boundary (a splitter miss) marks the sentence it starts in.
//! Unanswerable v2.0 questions get no positive, so evaluation skips them.

use super::parse_element;
use crate::model::link_neighbours;
use crate::{Candidate, DataError, DocContext, Question};
use ansel_text::split_sentences;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::path::Path;

#[derive(Deserialize)]
struct File<'a> {
    #[serde(borrow)]
    data: Vec<Article<'a>>,
}

#[derive(Deserialize)]
struct Article<'a> {
    #[serde(default)]
    title: String,
    #[serde(borrow)]
    paragraphs: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(try_from = "RawParagraph")]
struct Paragraph {
    context: String,
    qas: Vec<Qa>,
}

#[derive(Deserialize)]
struct RawParagraph {
    context: String,
    qas: Vec<Qa>,
}

#[derive(Deserialize)]
struct Qa {
    id: String,
    question: String,
    #[serde(default)]
    answers: Vec<Answer>,
    #[serde(default)]
    is_impossible: bool,
}

#[derive(Deserialize)]
struct Answer {
    text: String,
    /// Offset in characters (code points), as SQuAD counts them.
    answer_start: usize,
}

impl TryFrom<RawParagraph> for Paragraph {
    type Error = String;

    // Validated while deserializing so that serde_json reports the line.
    fn try_from(raw: RawParagraph) -> Result<Self, String> {
        let chars = raw.context.chars().count();
        for qa in &raw.qas {
            for answer in &qa.answers {
                if answer.answer_start + answer.text.chars().count() > chars {
                    return Err(format!(
                        "field `answer_start`: answer {:?} of question {:?} at {} runs past the {chars}-character context",
                        answer.text, qa.id, answer.answer_start
                    ));
                }
            }
        }
        Ok(Paragraph {
            context: raw.context,
            qas: raw.qas,
        })
    }
}

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    let file: File = serde_json::from_slice(bytes).map_err(|e| DataError::json(path, 0, &e))?;
    let mut questions = Vec::new();
    for (a, article) in file.data.iter().enumerate() {
        for (p, element) in article.paragraphs.iter().enumerate() {
            let paragraph: Paragraph = parse_element(path, bytes, element)?;
            let doc_id = format!("{a}-{p}");
            let spans = split_sentences(&paragraph.context);
            for qa in &paragraph.qas {
                let answer_spans: Vec<(usize, usize)> = if qa.is_impossible {
                    Vec::new()
                } else {
                    qa.answers
                        .iter()
                        .map(|ans| byte_span(&paragraph.context, ans))
                        .collect()
                };
                let mut candidates: Vec<Candidate> = spans
                    .iter()
                    .enumerate()
                    .map(|(position, span)| Candidate {
                        id: format!("{doc_id}-{position}"),
                        text: span.text(&paragraph.context).to_string(),
                        label: Some(answer_spans.iter().any(|&(start, end)| {
                            let inside = span.start <= start && end <= span.end;
                            let starts_here = span.start <= start && start < span.end;
                            inside || (starts_here && end > span.end)
                        })),
                        context: Some(DocContext {
                            doc_id: doc_id.clone(),
                            title: Some(article.title.clone()),
                            position,
                            prev: None,
                            next: None,
                        }),
                    })
                    .collect();
                link_neighbours(&mut candidates);
                questions.push(Question {
                    id: qa.id.clone(),
                    text: qa.question.clone(),
                    candidates,
                });
            }
        }
    }
    Ok(questions)
}

/// Converts a character-offset answer into a byte range of the context.
fn byte_span(context: &str, answer: &Answer) -> (usize, usize) {
    let byte_at = |chars: usize| {
        context
            .char_indices()
            .nth(chars)
            .map_or(context.len(), |(i, _)| i)
    };
    let start = byte_at(answer.answer_start);
    (
        start,
        byte_at(answer.answer_start + answer.text.chars().count()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../tests/fixtures/squad-mini.json");

    #[test]
    fn sentence_with_answer_span_is_positive() {
        let qs = parse(Path::new("squad.json"), FIXTURE.as_bytes()).unwrap();
        assert_eq!(qs.len(), 4);
        let q = &qs[0];
        assert_eq!(q.text, "When was the Eiffel Tower completed?");
        assert_eq!(q.candidates.len(), 3);
        assert_eq!(q.labels(), vec![false, true, false]);
        assert_eq!(
            q.candidates[1].context.as_ref().unwrap().title.as_deref(),
            Some("Eiffel Tower")
        );
        // The answer "Gustave Eiffel's company" sits in sentence 0 (after a multibyte char).
        assert_eq!(qs[1].labels(), vec![true, false, false]);
        // Two annotators pointing at two sentences make both positive.
        assert_eq!(qs[2].labels(), vec![false, true, true]);
        // SQuAD 2.0 unanswerable: no positive.
        assert_eq!(qs[3].positives(), 0);
    }

    #[test]
    fn answer_past_context_end_is_an_error_with_line() {
        let text = "{\"data\": [{\"title\": \"T\", \"paragraphs\": [\n{\"context\": \"Short.\", \"qas\": [{\"id\": \"1\", \"question\": \"q\",\n\"answers\": [{\"text\": \"long answer\", \"answer_start\": 3}]}]}\n]}]}";
        crate::readers::testing::assert_error_at(parse, text, 2, "answer_start");
    }

    #[test]
    fn wrong_type_names_line_and_field() {
        let text = "{\"data\": [{\"title\": \"T\", \"paragraphs\": [\n{\"context\": \"Short.\", \"qas\": [{\"id\": 7, \"question\": \"q\",\n\"answers\": []}]}\n]}]}";
        crate::readers::testing::assert_error_at(parse, text, 2, "qas[0].id");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in crate::readers::testing::inputs(FIXTURE)) {
            crate::readers::testing::never_panics(parse, &bytes);
        }
    }
}
