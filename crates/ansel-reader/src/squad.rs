//! Span-extraction examples from SQuAD: one JSON record per question (`ansel-lab squad-spans`
//! writes them) holding its paragraph's sentences, the sentence the answer starts in, the
//! answers' byte ranges in that sentence, and a sentence of the paragraph that holds no
//! answer. A record gives the reader a positive example (the answer sentence between its
//! neighbours) and a "no span" example (the other sentence between its neighbours), and the
//! whole paragraph for evaluation given the gold paragraph.

use crate::{split_words, SpanExample};
use ansel_model::{ModelError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRecord {
    pub id: String,
    pub question: String,
    /// The paragraph's sentences, in order.
    pub sentences: Vec<String>,
    /// The sentence every answer starts and ends in.
    pub answer_sentence: usize,
    /// Each answer's byte range in the answer sentence.
    pub answers: Vec<(usize, usize)>,
    /// A sentence of the paragraph that contains no answer text, if there is one.
    pub negative: Option<usize>,
}

impl SpanRecord {
    /// Sentence `i` between its neighbours' words, with the gold spans as word-token ranges
    /// when it is the answer sentence (an answer's first and last overlapped word).
    pub fn example(&self, i: usize) -> SpanExample {
        let words_of = |j: Option<usize>| -> Vec<String> {
            j.and_then(|j| self.sentences.get(j))
                .map(|t| words(t))
                .unwrap_or_default()
        };
        let text = &self.sentences[i];
        let offsets = split_words(text);
        let spans = if i == self.answer_sentence {
            self.answers
                .iter()
                .filter_map(|&(start, end)| {
                    let first = offsets.iter().position(|&(_, e)| e > start)?;
                    let last = offsets.iter().rposition(|&(s, _)| s < end)?;
                    (first <= last).then_some((first, last + 1))
                })
                .collect()
        } else {
            Vec::new()
        };
        SpanExample {
            question: self.question.clone(),
            tokens: offsets
                .iter()
                .map(|&(s, e)| text[s..e].to_string())
                .collect(),
            spans,
            before: words_of(i.checked_sub(1)),
            after: words_of(Some(i + 1)),
        }
    }

    /// The answer texts, as written in the answer sentence.
    pub fn answer_texts(&self) -> Vec<String> {
        let text = &self.sentences[self.answer_sentence];
        self.answers
            .iter()
            .map(|&(s, e)| text[s..e].to_string())
            .collect()
    }

    fn check(&self) -> std::result::Result<(), String> {
        let Some(text) = self.sentences.get(self.answer_sentence) else {
            return Err(format!(
                "field `answer_sentence`: {} is past the {} sentences",
                self.answer_sentence,
                self.sentences.len()
            ));
        };
        if let Some(&(s, e)) = self.answers.iter().find(|&&(s, e)| {
            s >= e || e > text.len() || !text.is_char_boundary(s) || !text.is_char_boundary(e)
        }) {
            return Err(format!(
                "field `answers`: {s}..{e} is not a span of the {}-byte answer sentence",
                text.len()
            ));
        }
        if self.answers.is_empty() {
            return Err("field `answers`: empty".into());
        }
        if self
            .negative
            .is_some_and(|n| n >= self.sentences.len() || n == self.answer_sentence)
        {
            return Err("field `negative`: not another sentence of the paragraph".into());
        }
        Ok(())
    }
}

/// The words of text (see [`split_words`]).
pub fn words(text: &str) -> Vec<String> {
    split_words(text)
        .into_iter()
        .map(|(s, e)| text[s..e].to_string())
        .collect()
}

/// Reads a JSONL file of [`SpanRecord`]s; an error names the file, the line and the field.
pub fn read_records(path: &Path) -> Result<Vec<SpanRecord>> {
    let bytes = ansel_data::read_bytes(path).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: format!("not UTF-8: {e}"),
    })?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| ModelError::Format {
            path: path.to_path_buf(),
            message: format!("line {}: {message}", n + 1),
        };
        let record: SpanRecord = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        record.check().map_err(bad)?;
        out.push(record);
    }
    Ok(out)
}

/// Training or dev examples: each record's answer sentence and, when `negatives`, its no-answer
/// sentence.
pub fn examples(records: &[SpanRecord], negatives: bool) -> Vec<SpanExample> {
    let mut out = Vec::new();
    for r in records {
        out.push(r.example(r.answer_sentence));
        if let Some(n) = r.negative.filter(|_| negatives) {
            out.push(r.example(n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> SpanRecord {
        SpanRecord {
            id: "q1".into(),
            question: "How tall is the Eiffel Tower?".into(),
            sentences: vec![
                "The tower is in Paris.".into(),
                "It is 330 metres (1,083 ft) tall.".into(),
                "It was built in 1889.".into(),
            ],
            answer_sentence: 1,
            answers: vec![(6, 16)],
            negative: Some(2),
        }
    }

    #[test]
    fn the_answer_sentence_gets_its_span_and_neighbours() {
        let r = record();
        let ex = r.example(1);
        assert_eq!(ex.answers(), vec!["330 metres"]);
        assert_eq!(ex.before.join(" "), "The tower is in Paris .");
        assert_eq!(ex.after.join(" "), "It was built in 1889 .");
        let neg = r.example(2);
        assert!(neg.spans.is_empty() && neg.after.is_empty());
        assert_eq!(examples(std::slice::from_ref(&r), true).len(), 2);
        assert_eq!(examples(&[r], false).len(), 1);
    }

    #[test]
    fn a_bad_record_is_named_by_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spans.jsonl");
        let mut bad = record();
        bad.answers = vec![(6, 99)];
        let lines = [record(), bad]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, lines).unwrap();
        let err = read_records(&path).unwrap_err().to_string();
        assert!(
            err.contains("spans.jsonl") && err.contains("line 2") && err.contains("`answers`"),
            "{err}"
        );
    }
}
