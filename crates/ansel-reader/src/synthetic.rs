//! Span examples without human labels (the SEDAN setting): ansel-synth's cloze generator turns
//! unlabelled sentences into wh-questions and its answer span is the gold span.

use crate::SpanExample;
use ansel_data::shuffle_seeded;
use ansel_synth::{ClozeGenerator, Passage, QuestionGenerator};
use std::collections::HashSet;

/// Lower-case words the generator's spans may start with that are not part of the answer.
const LEADING: &[&str] = &[
    "in", "since", "by", "until", "from", "after", "before", "during", "about", "of",
];

/// The punctuation-free core of a token, as the cloze generator writes answers.
fn core(token: &str) -> &str {
    token.trim_matches(|c: char| !c.is_alphanumeric())
}

/// Where the generator's answer (cores joined by spaces) sits in `tokens`: the first run of
/// tokens whose non-empty cores spell it, as `[start, end)`.
pub fn locate(answer: &str, tokens: &[String]) -> Option<(usize, usize)> {
    let words: Vec<&str> = answer.split_whitespace().collect();
    if words.is_empty() {
        return None;
    }
    (0..tokens.len()).find_map(|start| {
        let mut k = 0;
        let mut i = start;
        while i < tokens.len() && k < words.len() {
            let c = core(&tokens[i]);
            if c.is_empty() && k > 0 {
                i += 1;
                continue;
            }
            if c != words[k] {
                return None;
            }
            k += 1;
            i += 1;
        }
        (k == words.len()).then_some((start, i))
    })
}

/// Synthetic examples from unlabelled tokenised sentences: each distinct sentence (tokens joined
/// by spaces) goes through `generator`; answers found in their sentence become spans. A seeded
/// shuffle, then at most `max` examples.
pub fn examples(
    sentences: &[Vec<String>],
    generator: &ClozeGenerator,
    max: Option<usize>,
    seed: u64,
) -> Vec<SpanExample> {
    let mut seen = HashSet::new();
    let unique: Vec<&Vec<String>> = sentences
        .iter()
        .filter(|t| seen.insert(t.join(" ")))
        .collect();
    let texts: Vec<String> = unique.iter().map(|t| t.join(" ")).collect();
    let passage = Passage {
        doc_id: "synthetic",
        title: None,
        offset: 0,
        sentences: &texts,
    };
    let mut out: Vec<SpanExample> = generator
        .generate(&passage)
        .into_iter()
        .filter_map(|q| {
            let tokens = unique[q.sentence];
            let (mut start, end) = locate(&q.answer, tokens)?;
            // Year spans come with their preposition ("in 1871" -> "in what year"): the
            // answer is the year.
            while end - start > 1 && LEADING.contains(&tokens[start].as_str()) {
                start += 1;
            }
            let span = (start, end);
            Some(SpanExample {
                question: q.question,
                tokens: tokens.clone(),
                spans: vec![span],
                ..SpanExample::default()
            })
        })
        .collect();
    shuffle_seeded(&mut out, seed);
    if let Some(max) = max {
        out.truncate(max);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn answers_are_found_in_their_tokens() {
        let t = toks("Amtrak serves about 21 million passengers a year since 1971 .");
        assert_eq!(locate("21 million", &t), Some((3, 5)));
        assert_eq!(locate("1971", &t), Some((9, 10)));
        assert_eq!(locate("Boston", &t), None);
    }

    #[test]
    fn synthetic_examples_have_spans_that_spell_their_answers() {
        let sentences = vec![
            toks("The lighthouse was built in 1871 after two ships were lost ."),
            toks("The lighthouse was built in 1871 after two ships were lost ."),
            toks("Augustin Fresnel invented a lens made of concentric rings of glass ."),
        ];
        let generator = ClozeGenerator {
            question_words: 12,
            ..Default::default()
        };
        let ex = examples(&sentences, &generator, None, 1);
        assert!(!ex.is_empty());
        let answers: Vec<String> = ex.iter().flat_map(|e| e.answers()).collect();
        assert!(answers.contains(&"1871".to_string()), "{answers:?}");
        for e in &ex {
            let answer = e.answers()[0].clone();
            assert!(!e.question.contains(&answer), "{} / {answer}", e.question);
        }
        // The duplicate sentence gives no second set of questions.
        let years = answers.iter().filter(|a| *a == "1871").count();
        assert_eq!(years, 1);
        assert!(examples(&sentences, &generator, Some(1), 1).len() == 1);
    }
}
