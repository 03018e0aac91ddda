//! The answer inside the answer sentence: a span reader ([`ansel_reader::SpanReader`]) reads
//! each answer sentence between its neighbours and marks the words that answer the question,
//! with a calibrated probability; below the reader's threshold the answer has no span.

use crate::calibration::{Calibration, Platt};
use crate::{AnswerError, Answers};
use ansel_reader::{split_words, Reading, SpanReader};
use serde::Serialize;
use std::sync::Mutex;

/// Answers whose span is read per question unless told otherwise: the first. A reading costs
/// about 6 ms on these CPUs (docs/results/span-reader.md) and `ask` has a 150 ms p50 bound.
pub const DEFAULT_SPANS: usize = 1;

/// An answer span: byte offsets into the answer sentence's `text`, and the probability that it
/// is the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub score: f64,
}

/// A span reader with its calibration: `platt` turns the reader's margin of the span over "no
/// span" into a probability; an answer gets a span when that reaches `abstain_below`.
pub struct AnswerReader {
    reader: Mutex<Box<dyn SpanReader>>,
    /// The calibrated reader's model name.
    model: String,
    platt: Platt,
    abstain_below: f64,
}

impl AnswerReader {
    pub fn new(reader: Box<dyn SpanReader>, calibration: Calibration) -> AnswerReader {
        AnswerReader {
            reader: Mutex::new(reader),
            model: calibration.model,
            platt: calibration.platt,
            abstain_below: calibration.abstain_below,
        }
    }

    /// The calibrated reader's model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Reads the sentences of the first `n` answers of each `(answers, n)` (all questions' in one
    /// call) and sets their `span`.
    pub fn read(&self, answers: &mut [(&mut Answers, usize)]) -> Result<(), AnswerError> {
        struct Item {
            question: usize,
            answer: usize,
            offsets: Vec<(usize, usize)>,
            words: Vec<String>,
            before: Vec<String>,
            after: Vec<String>,
        }
        let words_of = |text: &str| -> Vec<String> {
            split_words(text)
                .iter()
                .map(|&(s, e)| text[s..e].to_string())
                .collect()
        };
        let mut items = Vec::new();
        for (q, (set, n)) in answers.iter().enumerate() {
            for (a, answer) in set.answers.iter().enumerate().take(*n) {
                let s = &answer.sentence;
                let offsets = split_words(&s.text);
                items.push(Item {
                    question: q,
                    answer: a,
                    words: offsets
                        .iter()
                        .map(|&(b, e)| s.text[b..e].to_string())
                        .collect(),
                    offsets,
                    before: s.prev.as_deref().map(words_of).unwrap_or_default(),
                    after: s.next.as_deref().map(words_of).unwrap_or_default(),
                });
            }
        }
        let readings: Vec<Reading> = items
            .iter()
            .map(|i| Reading {
                question: &answers[i.question].0.question,
                before: &i.before,
                sentence: &i.words,
                after: &i.after,
            })
            .collect();
        let found = {
            let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            reader.extract_all(&readings)?
        };
        let spans: Vec<Option<Span>> = items
            .iter()
            .zip(found)
            .map(|(item, x)| {
                let x = x?;
                let score = self.platt.probability(x.margin());
                if score < self.abstain_below {
                    return None;
                }
                let (start, end) = (item.offsets[x.start].0, item.offsets[x.end - 1].1);
                let text = &answers[item.question].0.answers[item.answer].sentence.text;
                Some(Span {
                    text: text[start..end].to_string(),
                    start,
                    end,
                    score,
                })
            })
            .collect();
        for (item, span) in items.iter().zip(spans) {
            answers[item.question].0.answers[item.answer].span = span;
        }
        Ok(())
    }
}
