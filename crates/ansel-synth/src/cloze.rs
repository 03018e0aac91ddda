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
    /// When > 0, the question keeps only the clause around the answer span (cut at commas,
    /// semicolons, dashes, brackets; widened to the next clause while it has fewer than 5
    /// words) and at most this many words of it, centred on the wh-phrase: closer to the
    /// length of real questions than the whole sentence, and less of a copy of it.
    /// 0 keeps the whole sentence.
    pub question_words: usize,
}

impl Default for ClozeGenerator {
    fn default() -> Self {
        ClozeGenerator {
            max_per_sentence: 2,
            min_words: 5,
            max_words: 60,
            question_words: 0,
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
    replaced_words(toks, span).0.join(" ")
}

/// The words of the sentence with `span` replaced, and the index of the wh-phrase.
fn replaced_words(toks: &[Token], span: &Span) -> (Vec<String>, usize) {
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
    (words, span.start)
}

fn is_boundary(word: &str) -> bool {
    matches!(
        word,
        "," | ";" | ":" | "--" | "-LRB-" | "-RRB-" | "(" | ")" | "``" | "''" | "\""
    ) || word.ends_with([',', ';', ':'])
}

/// The clause around the wh-phrase (at index `at`), at most `max` words. A clause of fewer
/// than 5 words takes the next clause on the right, or the one after it when the next one
/// is an apposition or relative clause ("X , a meteorologist , now assesses ..."), else
/// the clause on the left.
fn clause(words: &[String], at: usize, max: usize) -> String {
    let bound = |i: usize| is_boundary(&words[i]) && i != at;
    let end_from = |from: usize| {
        (from..words.len())
            .find(|&i| bound(i))
            .unwrap_or(words.len())
    };
    let left = (0..at).rev().find(|&i| bound(i)).map_or(0, |i| i + 1);
    let right = end_from(at + 1);
    let mut picked: Vec<&String> = words[left..right].iter().collect();
    if picked.len() < 5 {
        let next = (right < words.len()).then(|| (right + 1, end_from(right + 1)));
        let after = next
            .filter(|&(_, e)| e < words.len())
            .map(|(_, e)| (e + 1, end_from(e + 1)));
        let aside = next.is_some_and(|(s, _)| {
            words.get(s).is_some_and(|w| {
                matches!(
                    w.to_lowercase().as_str(),
                    "a" | "an" | "the" | "who" | "which" | "whose" | "where" | "when"
                )
            })
        });
        let extra = match (next, after) {
            (Some(_), Some(a)) if aside => Some(a),
            (Some(n), _) => Some(n),
            _ if left > 0 => {
                let s = (0..left - 1).rev().find(|&i| bound(i)).map_or(0, |i| i + 1);
                Some((s, left - 1))
            }
            _ => None,
        };
        if let Some((s, e)) = extra {
            if s < left {
                picked = words[s..e].iter().chain(picked).collect();
            } else {
                picked.extend(&words[s..e]);
            }
        }
    }
    let at = picked
        .iter()
        .position(|w| std::ptr::eq(*w, &words[at]))
        .unwrap_or(0);
    let (mut from, mut to) = (0, picked.len());
    if to > max {
        from = at.saturating_sub(max / 3);
        to = (from + max).min(picked.len());
    }
    picked[from..to]
        .iter()
        .filter(|w| !is_boundary(w) || w.ends_with([',', ';', ':']) && w.len() > 1)
        .map(|w| w.trim_end_matches([',', ';', ':']))
        .collect::<Vec<_>>()
        .join(" ")
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
                let text = if self.question_words > 0 {
                    let (words, at) = replaced_words(&toks, &span);
                    clause(&words, at, self.question_words)
                } else {
                    replace(&toks, &span)
                };
                out.push(SyntheticQuestion {
                    question: finish(text, passage.title),
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
    fn short_questions_keep_the_clause_of_the_answer() {
        let sentences = vec![
            "Mr Vernon Kousky , a research meteorologist with the US weather service , now assesses the current El Nino as strong .".to_string(),
            "The ruling Baath Party elected Bashar Assad to the post of secretary general of its executive on Saturday in a long and closely watched vote .".to_string(),
        ];
        let passage = Passage {
            doc_id: "d",
            title: None,
            offset: 0,
            sentences: &sentences,
        };
        let generator = ClozeGenerator {
            max_per_sentence: 5,
            question_words: 8,
            ..Default::default()
        };
        let out: Vec<String> = generator
            .generate(&passage)
            .into_iter()
            .map(|q| q.question)
            .collect();
        // The apposition is cut off at its commas; the question is the clause of the span.
        assert!(
            out.iter()
                .any(|q| q.starts_with("Who or what now assesses the current El Nino")),
            "{out:?}"
        );
        // A long clause is cut to 8 words around the wh-phrase (itself one of them).
        assert!(
            out.iter().all(|q| q.split_whitespace().count() <= 10),
            "{out:?}"
        );
        assert!(
            out.iter().any(|q| q.contains("who or what elected")),
            "{out:?}"
        );
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
