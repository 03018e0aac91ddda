use crate::{Passage, QuestionGenerator, SpanKind, SyntheticQuestion};

/// Rule-based cloze wh-questions: the answer span is replaced in place by a
/// wh-phrase ("in 1871" -> "in what year", "88 days" -> "how many days",
/// "Augustin Fresnel" -> "who or what"), and a sentence-initial pronoun is
/// replaced by the passage title so the question stands on its own.
#[derive(Debug, Clone)]
pub struct ClozeGenerator {
    /// At most this many questions from one sentence (years first, then quantities, then names).
    pub max_per_sentence: usize,
    /// Sentences with fewer or more words are skipped (headings, run-ons).
    pub min_words: usize,
    pub max_words: usize,
}

impl Default for ClozeGenerator {
    fn default() -> Self {
        ClozeGenerator {
            max_per_sentence: 2,
            min_words: 5,
            max_words: 60,
        }
    }
}

const TIME_PREPOSITIONS: &[&str] = &[
    "in", "since", "by", "until", "from", "after", "before", "during",
];
const PRONOUNS: &[&str] = &["It", "He", "She", "They", "This"];

/// A whitespace token of the sentence with its punctuation-free core.
struct Token<'a> {
    text: &'a str,
    core: &'a str,
}

fn tokens(sentence: &str) -> Vec<Token<'_>> {
    sentence
        .split_whitespace()
        .map(|text| Token {
            text,
            core: text.trim_matches(|c: char| !c.is_alphanumeric()),
        })
        .collect()
}

fn is_year(core: &str) -> bool {
    core.len() == 4
        && core.bytes().all(|b| b.is_ascii_digit())
        && (b"12".contains(&core.as_bytes()[0]))
}

fn is_number(core: &str) -> bool {
    core.starts_with(|c: char| c.is_ascii_digit())
        && core
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        && !is_year(core)
}

fn is_capitalised(core: &str) -> bool {
    core.starts_with(char::is_uppercase)
        && core
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
}

/// A span of tokens `[start, end)` to replace by `wh`.
struct Span {
    start: usize,
    end: usize,
    wh: String,
    kind: SpanKind,
}

fn find_spans(toks: &[Token]) -> Vec<Span> {
    let mut spans = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if is_year(t.core) {
            let prep = i
                .checked_sub(1)
                .map(|p| toks[p].core)
                .filter(|p| TIME_PREPOSITIONS.contains(p));
            spans.push(match prep {
                Some(p) => Span {
                    start: i - 1,
                    end: i + 1,
                    wh: format!("{p} what year"),
                    kind: SpanKind::Year,
                },
                None => Span {
                    start: i,
                    end: i + 1,
                    wh: "what year".into(),
                    kind: SpanKind::Year,
                },
            });
        }
    }
    for (i, t) in toks.iter().enumerate() {
        let unit = toks
            .get(i + 1)
            .map(|u| u.core)
            .filter(|u| u.chars().all(char::is_lowercase) && !u.is_empty());
        if is_number(t.core) && unit.is_some() {
            spans.push(Span {
                start: i,
                end: i + 1,
                wh: "how many".into(),
                kind: SpanKind::Quantity,
            });
        }
    }
    let mut i = 0;
    while i < toks.len() {
        if !is_capitalised(toks[i].core) {
            i += 1;
            continue;
        }
        let start = i;
        while i < toks.len()
            && is_capitalised(toks[i].core)
            && (i == start || !toks[i - 1].text.ends_with([',', ';', ':']))
        {
            i += 1;
        }
        // A single capitalised first word is just the start of the sentence.
        if start > 0 || i - start > 1 {
            spans.push(Span {
                start,
                end: i,
                wh: "who or what".into(),
                kind: SpanKind::Name,
            });
        }
    }
    spans
}

/// Rebuilds the sentence with `span` replaced, keeping the punctuation around it.
fn replace(toks: &[Token], span: &Span) -> String {
    let mut words: Vec<String> = Vec::with_capacity(toks.len());
    for (i, t) in toks.iter().enumerate() {
        if i == span.start {
            let lead: String = toks[i]
                .text
                .chars()
                .take_while(|c| !c.is_alphanumeric())
                .collect();
            let last = toks[span.end - 1].text;
            let trail: String = last
                .chars()
                .rev()
                .take_while(|c| !c.is_alphanumeric())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            words.push(format!("{lead}{}{trail}", span.wh));
        } else if i < span.start || i >= span.end {
            words.push(t.text.to_string());
        }
    }
    words.join(" ")
}

/// Question form: a leading pronoun becomes the title, a capital first
/// letter, and a question mark for the final punctuation.
fn finish(sentence: String, title: Option<&str>) -> String {
    let mut text = sentence;
    if let Some(title) = title {
        if let Some(rest) = PRONOUNS
            .iter()
            .find_map(|p| text.strip_prefix(&format!("{p} ")))
        {
            text = format!("{title} {rest}");
        } else if let Some(rest) = text.strip_prefix("Its ") {
            text = format!("{title}'s {rest}");
        }
    }
    let trimmed = text.trim_end_matches(['.', '!', ';', ':', ',', ' ']);
    let mut chars = trimmed.chars();
    match chars.next() {
        Some(first) => format!("{}{}?", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

impl QuestionGenerator for ClozeGenerator {
    fn name(&self) -> &str {
        "cloze-wh"
    }

    fn generate(&self, passage: &Passage) -> Vec<SyntheticQuestion> {
        let mut out = Vec::new();
        for (index, sentence) in passage.sentences.iter().enumerate() {
            let toks = tokens(sentence);
            if toks.len() < self.min_words || toks.len() > self.max_words {
                continue;
            }
            for span in find_spans(&toks).into_iter().take(self.max_per_sentence) {
                let answer = toks[span.start..span.end]
                    .iter()
                    .map(|t| t.core)
                    .collect::<Vec<_>>()
                    .join(" ");
                out.push(SyntheticQuestion {
                    question: finish(replace(&toks, &span), passage.title),
                    answer,
                    sentence: index,
                    kind: span.kind,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generate(title: Option<&str>, sentence: &str) -> Vec<(String, String, SpanKind)> {
        let sentences = vec![sentence.to_string()];
        let passage = Passage {
            doc_id: "d",
            title,
            offset: 0,
            sentences: &sentences,
        };
        let generator = ClozeGenerator {
            max_per_sentence: 5,
            ..Default::default()
        };
        generator
            .generate(&passage)
            .into_iter()
            .map(|q| (q.question, q.answer, q.kind))
            .collect()
    }

    #[test]
    fn years_become_what_year_and_pronouns_the_title() {
        let out = generate(
            Some("Harbor Point Lighthouse"),
            "It was built in 1871 after two ships were lost.",
        );
        assert_eq!(
            out[0],
            (
                "Harbor Point Lighthouse was built in what year after two ships were lost?".into(),
                "in 1871".into(),
                SpanKind::Year
            )
        );
    }

    #[test]
    fn quantities_and_names() {
        let out = generate(
            None,
            "In 1822 the physicist Augustin Fresnel invented a lens seen 30 km away.",
        );
        let questions: Vec<&str> = out.iter().map(|(q, _, _)| q.as_str()).collect();
        assert!(
            questions.contains(
                &"In what year the physicist Augustin Fresnel invented a lens seen 30 km away?"
            ),
            "{questions:?}"
        );
        assert!(
            questions.contains(
                &"In 1822 the physicist Augustin Fresnel invented a lens seen how many km away?"
            ),
            "{questions:?}"
        );
        assert!(
            questions
                .contains(&"In 1822 the physicist who or what invented a lens seen 30 km away?"),
            "{questions:?}"
        );
        let name = out.iter().find(|(_, _, k)| *k == SpanKind::Name).unwrap();
        assert_eq!(name.1, "Augustin Fresnel");
    }

    #[test]
    fn short_sentences_and_sentences_without_spans_give_nothing() {
        assert!(generate(None, "Rivers flow.").is_empty());
        assert!(generate(None, "the water is cold and deep here today").is_empty());
    }

    #[test]
    fn punctuation_around_the_span_is_kept() {
        let out = generate(None, "The bridge opened (in 1932) to traffic and trams.");
        assert_eq!(
            out[0].0,
            "The bridge opened (in what year) to traffic and trams?"
        );
    }
}
