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

/// One SQuAD paragraph: its text, where it sits, and its questions as AS2 lists.
pub struct SquadParagraph {
    /// 0-based index of the article in the file.
    pub article: usize,
    pub title: String,
    /// `"{article}-{paragraph}"`, the `doc_id` of every candidate.
    pub doc_id: String,
    pub context: String,
    pub questions: Vec<SquadQuestion>,
}

/// A question over its paragraph's sentences, with the answer texts that label them.
pub struct SquadQuestion {
    pub question: Question,
    pub answers: Vec<String>,
    /// Each answer's byte range in the paragraph's `context`.
    pub answer_spans: Vec<(usize, usize)>,
    /// Some answer span runs past the end of the sentence it starts in (a sentence
    /// boundary inside the answer): that sentence is labelled positive all the same.
    pub crosses_boundary: bool,
}

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    Ok(parse_paragraphs(path, bytes)?
        .into_iter()
        .flat_map(|p| p.questions.into_iter().map(|q| q.question))
        .collect())
}

/// The file's paragraphs in order, each with its questions (what [`parse`] flattens).
pub fn parse_paragraphs(path: &Path, bytes: &[u8]) -> Result<Vec<SquadParagraph>, DataError> {
    let file: File = serde_json::from_slice(bytes).map_err(|e| DataError::json(path, 0, &e))?;
    let mut paragraphs = Vec::new();
    for (a, article) in file.data.iter().enumerate() {
        for (p, element) in article.paragraphs.iter().enumerate() {
            let paragraph: Paragraph = parse_element(path, bytes, element)?;
            let doc_id = format!("{a}-{p}");
            let spans = split_sentences(&paragraph.context);
            let mut questions = Vec::new();
            for qa in &paragraph.qas {
                let answers: &[Answer] = if qa.is_impossible { &[] } else { &qa.answers };
                let answer_spans: Vec<(usize, usize)> = answers
                    .iter()
                    .map(|ans| byte_span(&paragraph.context, ans))
                    .collect();
                let crosses_boundary = answer_spans.iter().any(|&(start, end)| {
                    spans
                        .iter()
                        .any(|s| s.start <= start && start < s.end && end > s.end)
                });
                let mut candidates: Vec<Candidate> = spans
                    .iter()
                    .enumerate()
                    .map(|(position, span)| Candidate {
                        id: format!("{doc_id}-{position}"),
                        text: span.text(&paragraph.context).to_string(),
                        label: Some(answer_spans.iter().any(|&(start, _)| {
                            // The sentence the answer starts in (it holds the whole answer
                            // unless the span crosses a boundary).
                            span.start <= start && start < span.end
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
                questions.push(SquadQuestion {
                    question: Question {
                        id: qa.id.clone(),
                        text: qa.question.clone(),
                        candidates,
                    },
                    answers: answers.iter().map(|a| a.text.clone()).collect(),
                    answer_spans,
                    crosses_boundary,
                });
            }
            paragraphs.push(SquadParagraph {
                article: a,
                title: article.title.clone(),
                doc_id,
                context: paragraph.context,
                questions,
            });
        }
    }
    Ok(paragraphs)
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
    fn an_answer_across_a_sentence_boundary_is_flagged_and_labels_its_first_sentence() {
        let text = r#"{"data": [{"title": "T", "paragraphs": [{"context": "It opened in 1889. Eiffel built it. Paris is big.", "qas": [
            {"id": "1", "question": "q1", "answers": [{"text": "1889. Eiffel", "answer_start": 13}]},
            {"id": "2", "question": "q2", "answers": [{"text": "Eiffel", "answer_start": 19}]}]}]}]}"#;
        let paragraphs = parse_paragraphs(Path::new("s.json"), text.as_bytes()).unwrap();
        assert_eq!(paragraphs.len(), 1);
        assert_eq!(paragraphs[0].doc_id, "0-0");
        let [crossing, within] = &paragraphs[0].questions[..] else {
            panic!("two questions expected")
        };
        assert!(crossing.crosses_boundary);
        assert_eq!(crossing.question.labels(), vec![true, false, false]);
        assert_eq!(crossing.answers, vec!["1889. Eiffel".to_string()]);
        assert!(!within.crosses_boundary);
        assert_eq!(within.question.labels(), vec![false, true, false]);
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
