//! From a document to the sentences the index stores.

use crate::Document;
use ansel_text::split_sentences;
use std::borrow::Cow;

/// One indexed sentence with the context answers are shown in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SentenceRecord {
    pub doc_id: String,
    pub title: String,
    /// 0-based index of the sentence in its document.
    pub position: usize,
    pub text: String,
    pub prev: Option<String>,
    pub next: Option<String>,
}

/// The answerable sentences of a document, in order, each linked to its
/// neighbours. Markdown headings, fenced code and tables are structure, not
/// answers, and are left out; list markers and inline Markdown (emphasis,
/// code, links) are removed.
pub fn document_sentences(document: &Document) -> Vec<SentenceRecord> {
    let texts = sentence_texts(&document.text);
    (0..texts.len())
        .map(|position| SentenceRecord {
            doc_id: document.id.clone(),
            title: document.title.clone(),
            position,
            text: texts[position].clone(),
            prev: position.checked_sub(1).map(|p| texts[p].clone()),
            next: texts.get(position + 1).cloned(),
        })
        .collect()
}

/// What one record of an index holds: a sentence, or a passage (a paragraph: the text between
/// blank lines or headings) whose title carries the headings above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    #[default]
    Sentence,
    Passage,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Sentence => "sentence",
            Unit::Passage => "passage",
        }
    }
}

/// The texts a document is indexed as, in order, each with the title it is shown and searched
/// under: its sentences under the document's title, or its passages under the title followed by
/// the Markdown headings they sit under (`Bees › Hives › The queen`), as TREC CAR and
/// TRANS-CAPAR frame a passage by its article title and heading path.
pub fn unit_texts(document: &Document, unit: Unit) -> Vec<(String, String)> {
    match unit {
        Unit::Sentence => sentence_texts(&document.text)
            .into_iter()
            .map(|text| (document.title.clone(), text))
            .collect(),
        Unit::Passage => passage_texts(&document.title, &document.text),
    }
}

/// Separates a passage's title from the headings above it.
pub const HEADING_SEPARATOR: &str = " › ";

/// A document's passages with their heading paths (see [`unit_texts`]). A heading that repeats
/// the document's title (a Markdown file's `# Title`) is not repeated in the path.
fn passage_texts(title: &str, text: &str) -> Vec<(String, String)> {
    let prose = without_code_and_tables(text);
    let mut headings: Vec<(usize, String)> = Vec::new();
    let mut passages = Vec::new();
    let mut paragraph = String::new();
    let mut flush = |paragraph: &mut String, headings: &[(usize, String)]| {
        let sentences = sentence_texts(paragraph);
        paragraph.clear();
        if sentences.is_empty() {
            return;
        }
        let path = std::iter::once(title)
            .chain(headings.iter().map(|(_, h)| h.as_str()))
            .collect::<Vec<_>>()
            .join(HEADING_SEPARATOR);
        passages.push((path, sentences.join(" ")));
    };
    for line in prose.lines() {
        let trimmed = line.trim_start();
        let level = trimmed.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&level) && trimmed[level..].starts_with([' ', '\t']) {
            flush(&mut paragraph, &headings);
            let heading = clean_sentence(trimmed[level..].trim_matches([' ', '\t', '#']));
            headings.retain(|&(l, _)| l < level);
            // A top heading that repeats the title (a Markdown file's `# Title`) adds nothing.
            let repeats_title = headings.is_empty() && heading == title;
            if !heading.is_empty() && !repeats_title {
                headings.push((level, heading));
            }
        } else if trimmed.is_empty() {
            flush(&mut paragraph, &headings);
        } else {
            paragraph.push_str(line);
            paragraph.push('\n');
        }
    }
    flush(&mut paragraph, &headings);
    passages
}

/// The answerable sentences of a document's text, in order (see [`document_sentences`]).
pub(crate) fn sentence_texts(text: &str) -> Vec<String> {
    let prose = without_code_and_tables(text);
    split_sentences(&prose)
        .iter()
        .map(|span| span.text(&prose))
        .filter(|s| !s.starts_with('#'))
        .map(clean_sentence)
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .collect()
}

/// The text with fenced code blocks and table rows blanked out (blank lines
/// keep paragraphs apart); borrowed when there are none (large documents are not copied).
fn without_code_and_tables(text: &str) -> Cow<'_, str> {
    let structural = |line: &str| {
        let trimmed = line.trim_start();
        let is_fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        (is_fence, trimmed.starts_with('|'))
    };
    if !text.split('\n').any(|line| {
        let (fence, table) = structural(line);
        fence || table
    }) {
        return Cow::Borrowed(text);
    }
    let mut in_fence = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (is_fence, is_table) = structural(line);
        if is_fence {
            in_fence = !in_fence;
        }
        if is_fence || in_fence || is_table {
            out.push('\n');
        } else {
            out.push_str(line);
        }
    }
    Cow::Owned(out)
}

/// One line of text: list marker, inline Markdown and line wraps removed.
fn clean_sentence(sentence: &str) -> String {
    let without_marker = strip_list_marker(sentence.trim_start());
    let plain = strip_inline_markdown(without_marker);
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strip_list_marker(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix(['-', '*', '+', '\u{2022}', '>']) {
        if rest.starts_with(' ') {
            return rest.trim_start();
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        if let Some(rest) = line[digits..].strip_prefix(['.', ')']) {
            if rest.starts_with(' ') {
                return rest.trim_start();
            }
        }
    }
    line
}

/// `[text](url)` becomes `text`; `**`, `__` and backticks go.
fn strip_inline_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let link = after.find("](").and_then(|close| {
            let url_len = after[close + 2..].find(')')?;
            Some((close, close + 2 + url_len + 1))
        });
        match link {
            Some((close, end)) if !after[..close].contains(['[', ']']) => {
                out.push_str(&rest[..open]);
                out.push_str(&after[..close]);
                rest = &after[end..];
            }
            _ => {
                out.push_str(&rest[..open + 1]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace("**", "").replace("__", "").replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        let doc = Document {
            id: "d".into(),
            title: "T".into(),
            text: text.into(),
        };
        document_sentences(&doc)
            .into_iter()
            .map(|s| s.text)
            .collect()
    }

    #[test]
    fn markdown_structure_becomes_plain_sentences() {
        let text = "## Facts\nThe **Nile** is about 6,650 km long. It was measured by Dr. Lee in\n1998.\n\n\
                    - It flows [north](https://example.invalid/n) into the sea.\n\
                    2. The `delta` is fertile.\n\n---\n";
        assert_eq!(
            texts(text),
            vec![
                "The Nile is about 6,650 km long.",
                "It was measured by Dr. Lee in 1998.",
                "It flows north into the sea.",
                "The delta is fertile.",
            ]
        );
    }

    #[test]
    fn code_blocks_and_tables_are_not_sentences() {
        let text = "Run the tool.\n\n```sh\nansel index. --index x\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nIt is fast.";
        assert_eq!(texts(text), vec!["Run the tool.", "It is fast."]);
    }

    #[test]
    fn neighbours_and_positions_follow_document_order() {
        let doc = Document {
            id: "d".into(),
            title: "T".into(),
            text: "One is first. Two is second. Three is last.".into(),
        };
        let records = document_sentences(&doc);
        assert_eq!(records.len(), 3);
        assert_eq!(records[1].position, 1);
        assert_eq!(records[1].prev.as_deref(), Some("One is first."));
        assert_eq!(records[1].next.as_deref(), Some("Three is last."));
        assert_eq!(records[0].prev, None);
        assert_eq!(records[2].next, None);
        assert!(records.iter().all(|r| r.doc_id == "d" && r.title == "T"));
    }

    #[test]
    fn passages_are_paragraphs_under_their_heading_paths() {
        let doc = Document {
            id: "d".into(),
            title: "Bees".into(),
            text: "# Bees\n\nBees are insects. They fly.\n\n## Hives\nBees live in **hives**.\nA hive holds\nwax.\n\n\
                   ### The queen\n\nThe queen lays eggs.\n\n```\ncode. here\n```\n\n## Honey\n\n- Honey is sweet.\n"
                .into(),
        };
        let passages = unit_texts(&doc, Unit::Passage);
        let titles: Vec<&str> = passages.iter().map(|(t, _)| t.as_str()).collect();
        let texts: Vec<&str> = passages.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            titles,
            vec![
                "Bees",
                "Bees › Hives",
                "Bees › Hives › The queen",
                "Bees › Honey"
            ]
        );
        assert_eq!(
            texts,
            vec![
                "Bees are insects. They fly.",
                "Bees live in hives. A hive holds wax.",
                "The queen lays eggs.",
                "Honey is sweet.",
            ]
        );
        let sentences = unit_texts(&doc, Unit::Sentence);
        assert_eq!(sentences.len(), 6);
        assert!(sentences.iter().all(|(t, _)| t == "Bees"));
    }

    #[test]
    fn brackets_that_are_not_links_are_kept() {
        assert_eq!(
            strip_inline_markdown("see [1] and [a](b) or [x]"),
            "see [1] and a or [x]"
        );
        assert_eq!(strip_inline_markdown("[unclosed](oops"), "[unclosed](oops");
    }
}
