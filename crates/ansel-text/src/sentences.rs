/// A sentence as a byte range of the text it was split from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentenceSpan {
    pub start: usize,
    pub end: usize,
}

impl SentenceSpan {
    pub fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start..self.end]
    }
}

/// Abbreviations that are followed by a period but almost never end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "apr", "aug", "capt", "cf", "col", "corp", "dec", "dept", "dr", "e.g", "eg", "est", "feb",
    "fig", "gen", "gov", "i.e", "ie", "jan", "jr", "jul", "jun", "lt", "mar", "messrs", "mr",
    "mrs", "ms", "mt", "no", "nov", "oct", "op", "pp", "prof", "rep", "rev", "sen", "sep", "sept",
    "sgt", "sr", "st", "vol", "vs",
];

/// Splits text into sentences and returns their trimmed byte spans.
///
/// Boundaries are: `.`, `!`, `?` or `…` (plus closing quotes or brackets)
/// followed by white space and something that can start a sentence; a blank
/// line; and the end of a line that is a heading or a list item, or that is
/// followed by one. Periods after known abbreviations, single-letter initials
/// and inside numbers ("3.5", "U.S.") do not end a sentence.
pub fn split_sentences(text: &str) -> Vec<SentenceSpan> {
    let mut spans = Vec::new();
    for block in blocks(text) {
        split_block(text, block, &mut spans);
    }
    spans
}

/// Line-structure pass: paragraphs, headings and list items are hard breaks.
fn blocks(text: &str) -> Vec<SentenceSpan> {
    let mut blocks = Vec::new();
    let mut block_start: Option<usize> = None;
    let mut offset = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            if let Some(s) = block_start.take() {
                blocks.push(SentenceSpan {
                    start: s,
                    end: start,
                });
            }
            continue;
        }
        let is_structural = is_heading(trimmed) || is_list_item(trimmed);
        if is_structural {
            if let Some(s) = block_start.take() {
                blocks.push(SentenceSpan {
                    start: s,
                    end: start,
                });
            }
        }
        block_start.get_or_insert(start);
        let next_is_structural = lines
            .get(i + 1)
            .map(|l| l.trim())
            .is_some_and(|l| is_heading(l) || is_list_item(l));
        if is_structural || next_is_structural {
            if let Some(s) = block_start.take() {
                blocks.push(SentenceSpan {
                    start: s,
                    end: offset,
                });
            }
        }
    }
    if let Some(s) = block_start {
        blocks.push(SentenceSpan {
            start: s,
            end: text.len(),
        });
    }
    blocks
}

fn is_heading(line: &str) -> bool {
    line.starts_with('#')
}

fn is_list_item(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix(['-', '*', '+', '\u{2022}']) {
        return rest.starts_with(' ');
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && digits <= 3
        && line[digits..].starts_with(['.', ')'])
        && line[digits + 1..].starts_with(' ')
}

/// "1" or "12" alone before a period: the number of a list item, not a sentence.
fn is_list_marker(text: &str) -> bool {
    (1..=3).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

fn split_block(text: &str, block: SentenceSpan, spans: &mut Vec<SentenceSpan>) {
    let body = &text[block.start..block.end];
    let chars: Vec<(usize, char)> = body.char_indices().collect();
    let mut sentence_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (pos, ch) = chars[i];
        if matches!(ch, '.' | '!' | '?' | '\u{2026}') {
            // Swallow runs like "?!" or "..." and closing quotes/brackets.
            let mut j = i + 1;
            while j < chars.len()
                && matches!(
                    chars[j].1,
                    '.' | '!' | '?' | '"' | '\'' | ')' | ']' | '\u{201d}' | '\u{2019}'
                )
            {
                j += 1;
            }
            let followed_by_space = j < chars.len() && chars[j].1.is_whitespace();
            let is_list_number = ch == '.' && is_list_marker(body[sentence_start..pos].trim());
            if followed_by_space && !is_list_number && ends_sentence(body, &chars, i, pos, ch, j) {
                let end = chars[j].0;
                push_trimmed(text, block.start + sentence_start, block.start + end, spans);
                sentence_start = end;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    push_trimmed(text, block.start + sentence_start, block.end, spans);
}

/// Decides whether the terminator at `chars[i]` (its run ends before `chars[j]`) ends a sentence.
fn ends_sentence(
    body: &str,
    chars: &[(usize, char)],
    i: usize,
    pos: usize,
    ch: char,
    j: usize,
) -> bool {
    let next_start = chars[j..].iter().find(|(_, c)| !c.is_whitespace());
    let Some(&(_, next)) = next_start else {
        return true;
    };
    let starts_sentence = next.is_uppercase()
        || next.is_numeric()
        || matches!(
            next,
            '"' | '\'' | '(' | '[' | '\u{201c}' | '\u{2018}' | '-' | '\u{2014}'
        );
    if !starts_sentence {
        return false;
    }
    if ch != '.' || j > i + 1 {
        return true;
    }
    let word_before = last_word(&body[..pos]);
    if word_before.is_empty() {
        return true;
    }
    let lower = word_before.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return false;
    }
    // Initials ("J. K. Rowling") and dotted acronyms ("U.S.") are not boundaries
    // when a capitalised word follows; an acronym before a sentence-final period
    // is ambiguous, and we keep the sentence whole, which loses less context.
    let is_initial =
        word_before.chars().count() == 1 && word_before.chars().all(char::is_uppercase);
    let is_dotted_acronym = word_before.contains('.');
    !(is_initial || is_dotted_acronym)
}

/// The run of non-space characters before `text`'s end, without leading punctuation.
fn last_word(text: &str) -> &str {
    let start = text
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace() || matches!(c, '(' | '"' | '\'' | '[' | '\u{201c}'))
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    &text[start..]
}

fn push_trimmed(text: &str, start: usize, end: usize, spans: &mut Vec<SentenceSpan>) {
    let slice = &text[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    if lead + trail < slice.len() {
        spans.push(SentenceSpan {
            start: start + lead,
            end: end - trail,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<&str> {
        split_sentences(text).iter().map(|s| s.text(text)).collect()
    }

    #[test]
    fn plain_sentences() {
        assert_eq!(
            split("The sky is blue. Grass is green! Is it? Yes."),
            vec!["The sky is blue.", "Grass is green!", "Is it?", "Yes."]
        );
    }

    #[test]
    fn abbreviations_initials_and_decimals_do_not_split() {
        assert_eq!(
            split("Mr. Smith paid 3.5 dollars to Dr. J. K. Rowling in the U.S. capital. Then he left."),
            vec![
                "Mr. Smith paid 3.5 dollars to Dr. J. K. Rowling in the U.S. capital.",
                "Then he left."
            ]
        );
        assert_eq!(
            split("See fig. 4 and No. 5 e.g. here."),
            vec!["See fig. 4 and No. 5 e.g. here."]
        );
    }

    #[test]
    fn quotes_stay_with_their_sentence() {
        assert_eq!(
            split("He said \"Stop.\" Then she ran. (It was late.) Done."),
            vec![
                "He said \"Stop.\"",
                "Then she ran.",
                "(It was late.)",
                "Done."
            ]
        );
    }

    #[test]
    fn lowercase_continuation_is_not_a_boundary() {
        assert_eq!(
            split("It costs approx. ten euros."),
            vec!["It costs approx. ten euros."]
        );
    }

    #[test]
    fn headings_lists_and_paragraphs_are_breaks() {
        let text = "# Rivers\nThe Nile is long\n\nKey facts:\n- It flows north\n- It ends in Egypt\n1. First item\nA final line.";
        assert_eq!(
            split(text),
            vec![
                "# Rivers",
                "The Nile is long",
                "Key facts:",
                "- It flows north",
                "- It ends in Egypt",
                "1. First item",
                "A final line."
            ]
        );
    }

    #[test]
    fn wrapped_lines_join_into_one_sentence() {
        assert_eq!(
            split("This sentence is\nwrapped over lines. Next one."),
            vec!["This sentence is\nwrapped over lines.", "Next one."]
        );
    }

    #[test]
    fn spans_are_valid_for_unicode_and_empty_input() {
        assert!(split_sentences("").is_empty());
        assert!(split_sentences("   \n\n ").is_empty());
        assert_eq!(
            split("Ça va… Très bien. Ωmega!"),
            vec!["Ça va…", "Très bien.", "Ωmega!"]
        );
    }

    proptest::proptest! {
        #[test]
        fn spans_are_ordered_char_boundaries(text in "\\PC{0,200}") {
            let spans = split_sentences(&text);
            let mut last_end = 0;
            for span in spans {
                proptest::prop_assert!(span.start >= last_end && span.start < span.end);
                proptest::prop_assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
                last_end = span.end;
            }
        }
    }
}
