//! Extractive QA on ranked sentences (SEDAN §5.2): given a question and an answer sentence,
//! extract the answer span.
//!
//! - [`SpanExtractor`] is a BERT-family encoder (MiniLM) with a start/end head over the
//!   candidate's tokens: it reads "[CLS] question [SEP] sentence [SEP]" and scores each
//!   sentence token as the start and the end of the answer; the span `i..=j` (at most
//!   `max_answer_tokens` tokens, inside the sentence) with the highest start + end logit wins.
//! - [`train::train`] fine-tunes one on [`SpanExample`]s (gold spans from the jacana TrecQA
//!   files, or [`synthetic::examples`] from unlabelled sentences) with ansel-bert's AdamW,
//!   warm-up schedule, clipping, length bucketing, resumable checkpoints and early stopping
//!   on dev token F1.
//! - [`capitalised_or_numeric_span`] is the rule baseline; [`exact_match`] and [`token_f1`]
//!   are SQuAD's metrics (lower-case, no punctuation, no articles).

pub mod input;
mod metrics;
#[cfg(feature = "torch")]
mod model;
pub mod squad;
pub mod synthetic;
#[cfg(feature = "torch")]
pub mod train;

pub use input::{Extraction, Reading, RuleReader, SpanReader, SpanSettings, RULE_READER};
pub use metrics::{best_f1, exact_match, normalize_answer, token_f1};
#[cfg(feature = "torch")]
pub use model::{SpanExtractor, HEAD_FILE};

/// The `kind` of a span extractor's model card.
pub const KIND: &str = "span-extractor";

/// A training or dev example: a question, a sentence's tokens, the words of its neighbours
/// (context, empty when there is none) and its gold answer spans (0-based token ranges
/// `[start, end)`; the first one is trained on; none: the sentence holds no answer).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpanExample {
    pub question: String,
    pub tokens: Vec<String>,
    pub spans: Vec<(usize, usize)>,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

impl SpanExample {
    /// The example as the extractor reads it.
    pub fn reading(&self) -> Reading<'_> {
        Reading {
            question: &self.question,
            before: &self.before,
            sentence: &self.tokens,
            after: &self.after,
        }
    }

    /// The gold answer strings.
    pub fn answers(&self) -> Vec<String> {
        self.spans
            .iter()
            .map(|&(s, e)| self.tokens[s..e].join(" "))
            .collect()
    }
}

/// One example per positive sentence of jacana questions that has a gold span.
pub fn jacana_examples(
    questions: &[ansel_data::readers::jacana::SpanQuestion],
) -> Vec<SpanExample> {
    questions
        .iter()
        .flat_map(|q| {
            q.candidates
                .iter()
                .filter(|c| c.label && !c.spans.is_empty())
                .map(|c| SpanExample {
                    question: q.text(),
                    tokens: c.tokens.clone(),
                    spans: c.spans.clone(),
                    ..SpanExample::default()
                })
        })
        .collect()
}

/// Splits text into word tokens as byte ranges: whitespace separates tokens, and punctuation
/// (quotes, brackets, `,;:.!?`, dashes) is a token of its own unless it joins two letters or
/// digits, so that "(1822)." gives "(", "1822", ")" and "." and a citation mark "2006.[b]" gives
/// "2006", ".", "[", "b", "]", while "1788-1827", "50,000", "U.S" and "don't" stay whole.
/// Returns `(start, end)` byte offsets into `text`.
pub fn split_words(text: &str) -> Vec<(usize, usize)> {
    let is_punct = |c: char| c.is_ascii_punctuation() || "“”‘’«»—–…".contains(c);
    let mut out = Vec::new();
    let mut at = 0;
    for word in text.split_whitespace() {
        let start = at + text[at..].find(word).unwrap_or(0);
        at = start + word.len();
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        let mut open: Option<usize> = None; // where the token being read starts
        for (k, &(i, c)) in chars.iter().enumerate() {
            let joins = k > 0
                && k + 1 < chars.len()
                && chars[k - 1].1.is_alphanumeric()
                && chars[k + 1].1.is_alphanumeric();
            if is_punct(c) && !joins {
                if let Some(s) = open.take() {
                    out.push((start + s, start + i));
                }
                out.push((start + i, start + i + c.len_utf8()));
            } else if open.is_none() {
                open = Some(i);
            }
        }
        if let Some(s) = open {
            out.push((start + s, start + word.len()));
        }
    }
    out
}

/// Words that are capitalised only at the start of a sentence.
const FUNCTION_WORDS: &[&str] = &[
    "in",
    "on",
    "at",
    "of",
    "for",
    "to",
    "by",
    "with",
    "from",
    "and",
    "or",
    "but",
    "it",
    "he",
    "she",
    "they",
    "we",
    "i",
    "you",
    "this",
    "that",
    "these",
    "those",
    "there",
    "his",
    "her",
    "its",
    "their",
    "as",
    "after",
    "before",
    "when",
    "while",
    "if",
    "is",
    "was",
    "are",
    "were",
    "mr",
    "mrs",
    "ms",
    "dr",
    "according",
    "since",
    "during",
    "although",
    "however",
    "but",
];

/// The rule baseline: the longest run of capitalised or numeric tokens that are not question
/// words (ties: the first). Capitalised function words ("In", "The", "He", ...), as at the start
/// of a sentence, do not count; `None` when there is no such run.
pub fn capitalised_or_numeric_span(question: &str, tokens: &[String]) -> Option<(usize, usize)> {
    let asked: Vec<String> = question
        .split_whitespace()
        .map(normalize_answer)
        .filter(|w| !w.is_empty())
        .collect();
    let fits = |t: &str| {
        let starts = t
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
        let norm = normalize_answer(t);
        starts
            && !norm.is_empty()
            && !asked.contains(&norm)
            && !FUNCTION_WORDS.contains(&norm.as_str())
    };
    let mut best: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < tokens.len() {
        if !fits(&tokens[i]) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < tokens.len() && fits(&tokens[j]) {
            j += 1;
        }
        if best.is_none_or(|(s, e)| j - i > e - s) {
            best = Some((i, j));
        }
        i = j;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn baseline_takes_the_longest_new_name_or_number() {
        let t = toks("In 1822 the French physicist Augustin Fresnel invented a lens .");
        assert_eq!(
            capitalised_or_numeric_span("Who invented the Fresnel lens ?", &t),
            Some((1, 2)),
            "Fresnel is a question word and In a function word: 1822 is first of the 1-token runs"
        );
        assert_eq!(
            capitalised_or_numeric_span("Who invented the lens ?", &t),
            Some((5, 7))
        );
        assert_eq!(
            capitalised_or_numeric_span("q", &toks("all lower case .")),
            None
        );
    }

    #[test]
    fn words_split_off_punctuation_and_keep_offsets() {
        let text = "Fresnel (1788-1827) said: \"it works.\" U.S. 50,000 2006.[b] don't";
        let words: Vec<&str> = split_words(text)
            .iter()
            .map(|&(s, e)| &text[s..e])
            .collect();
        assert_eq!(
            words,
            vec![
                "Fresnel",
                "(",
                "1788-1827",
                ")",
                "said",
                ":",
                "\"",
                "it",
                "works",
                ".",
                "\"",
                "U.S",
                ".",
                "50,000",
                "2006",
                ".",
                "[",
                "b",
                "]",
                "don't"
            ]
        );
        assert_eq!(split_words("  é… "), vec![(2, 4), (4, 7)]);
    }

    #[test]
    fn jacana_positives_become_examples() {
        use ansel_data::readers::jacana::{SpanCandidate, SpanQuestion};
        let q = SpanQuestion {
            id: "1".into(),
            tokens: toks("Who ?"),
            candidates: vec![
                SpanCandidate {
                    tokens: toks("Bo did ."),
                    label: true,
                    spans: vec![(0, 1)],
                    line: 1,
                },
                SpanCandidate {
                    tokens: toks("No ."),
                    label: false,
                    spans: vec![],
                    line: 2,
                },
            ],
        };
        let ex = jacana_examples(&[q]);
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].answers(), vec!["Bo"]);
        assert_eq!(ex[0].question, "Who ?");
    }
}
