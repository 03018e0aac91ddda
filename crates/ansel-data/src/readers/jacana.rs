//! The jacana pseudo-XML of TrecQA (Yao et al. 2013: `TRAIN.xml`, `DEV.xml`, `TEST.xml`), the
//! one TrecQA format that keeps the gold answer spans.
//!
//! ```text
//! <QApairs id='32.1'>
//! <question>
//! tokens (tab-separated) / POS / dependency labels / heads / NER      (5 lines)
//! </question>
//! <positive>
//! the same 5 lines, then the answer tokens and their 1-based token indexes:
//! 21 \t million \t
//! 5 \t 6 \t
//! </positive>
//! <negative>
//! 5 lines
//! </negative>
//! </QApairs>
//! ```
//!
//! A positive may give several answer spans, separated by a `#` field in both lines
//! (`car # 405` / `32 # 37`). HTML characters are not escaped, so this is not XML: the reader
//! matches the tag lines exactly and treats everything else as block content. Every span is
//! checked against the sentence's tokens; a malformed block is an error naming the file and
//! the line.

use crate::{Candidate, DataError, Question};
use std::path::Path;

/// A candidate sentence of the jacana files: its tokens, label and gold answer spans.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanCandidate {
    pub tokens: Vec<String>,
    pub label: bool,
    /// Gold answer spans as 0-based token ranges `[start, end)` (positives only).
    pub spans: Vec<(usize, usize)>,
    /// 1-based line of the block's opening tag.
    pub line: usize,
}

impl SpanCandidate {
    /// The sentence as text: tokens joined by spaces.
    pub fn text(&self) -> String {
        self.tokens.join(" ")
    }

    /// The text of each gold span.
    pub fn answers(&self) -> Vec<String> {
        self.spans
            .iter()
            .map(|&(s, e)| self.tokens[s..e].join(" "))
            .collect()
    }
}

/// A question of the jacana files with its candidates (in file order, positives first).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanQuestion {
    pub id: String,
    pub tokens: Vec<String>,
    pub candidates: Vec<SpanCandidate>,
}

impl SpanQuestion {
    pub fn text(&self) -> String {
        self.tokens.join(" ")
    }

    /// Every gold answer string of the question (the spans of all its positives), deduplicated.
    pub fn answers(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for c in &self.candidates {
            for a in c.answers() {
                if !all.contains(&a) {
                    all.push(a);
                }
            }
        }
        all
    }

    /// The question as AS2 data: candidate `i` has id `i` and the sentence's text.
    pub fn to_question(&self) -> Question {
        Question {
            id: self.id.clone(),
            text: self.text(),
            candidates: self
                .candidates
                .iter()
                .enumerate()
                .map(|(i, c)| Candidate {
                    id: i.to_string(),
                    text: c.text(),
                    label: Some(c.label),
                    context: None,
                })
                .collect(),
        }
    }
}

/// Reads a jacana file.
pub fn read(path: &Path) -> Result<Vec<SpanQuestion>, DataError> {
    let bytes = std::fs::read(path).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &bytes)
}

#[derive(Clone, Copy, PartialEq)]
enum Block {
    Question,
    Positive,
    Negative,
}

impl Block {
    fn tag(self) -> &'static str {
        match self {
            Block::Question => "question",
            Block::Positive => "positive",
            Block::Negative => "negative",
        }
    }
}

/// Tab-separated fields of a line, without the empty field a trailing tab leaves.
fn fields(line: &str) -> Vec<&str> {
    let line = line.strip_suffix('\t').unwrap_or(line);
    line.split('\t').collect()
}

/// An open `<QApairs>`: id, line, question tokens once read, candidates so far.
type OpenPair = (String, usize, Option<Vec<String>>, Vec<SpanCandidate>);
/// An open block: kind, line, and its content lines with their numbers.
type OpenBlock = (Block, usize, Vec<(usize, String)>);

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<SpanQuestion>, DataError> {
    let err = |line: usize, message: String| DataError::malformed(path, Some(line), None, message);
    let mut questions: Vec<SpanQuestion> = Vec::new();
    // The open QApairs (its id and line) and the open block (kind, line, content lines).
    let mut pair: Option<OpenPair> = None;
    let mut block: Option<OpenBlock> = None;
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = std::str::from_utf8(raw).map_err(|e| err(n, format!("invalid UTF-8: {e}")))?;
        if let Some((kind, start, lines)) = block.as_mut() {
            if line == format!("</{}>", kind.tag()) {
                let (kind, start, lines) = (*kind, *start, std::mem::take(lines));
                block = None;
                let Some((_, _, question, candidates)) = pair.as_mut() else {
                    return Err(err(start, "block outside <QApairs>".into()));
                };
                match kind {
                    Block::Question => {
                        if question.is_some() {
                            return Err(err(start, "a second <question> in one <QApairs>".into()));
                        }
                        *question = Some(block_tokens(path, start, &lines)?);
                    }
                    Block::Positive | Block::Negative => {
                        candidates.push(candidate(path, kind, start, &lines)?)
                    }
                }
            } else if line.starts_with("<QApairs") || line.starts_with("</QApairs") {
                return Err(err(
                    n,
                    format!("<{}> opened on line {start} is not closed", kind.tag()),
                ));
            } else {
                lines.push((n, line.to_string()));
            }
            continue;
        }
        match line.trim_end() {
            "" => {}
            "<question>" => block = Some((Block::Question, n, Vec::new())),
            "<positive>" => block = Some((Block::Positive, n, Vec::new())),
            "<negative>" => block = Some((Block::Negative, n, Vec::new())),
            "</QApairs>" => {
                let Some((id, start, question, candidates)) = pair.take() else {
                    return Err(err(n, "</QApairs> without <QApairs>".into()));
                };
                let Some(tokens) = question else {
                    return Err(err(start, format!("<QApairs id='{id}'> has no <question>")));
                };
                questions.push(SpanQuestion {
                    id,
                    tokens,
                    candidates,
                });
            }
            other if other.starts_with("<QApairs") => {
                if let Some((_, start, _, _)) = &pair {
                    return Err(err(n, format!("<QApairs> opened on line {start} is not closed")));
                }
                let id = other
                    .split_once("id=")
                    .map(|(_, rest)| rest.trim_end_matches('>').trim_matches(['\'', '"']))
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| err(n, "<QApairs> without an id='...'".into()))?;
                pair = Some((id.to_string(), n, None, Vec::new()));
            }
            other => {
                return Err(err(
                    n,
                    format!("expected a tag line (<QApairs>, <question>, <positive>, <negative>), found {other:?}"),
                ))
            }
        }
    }
    if let Some((kind, start, _)) = block {
        return Err(err(start, format!("<{}> is not closed", kind.tag())));
    }
    if let Some((_, start, _, _)) = pair {
        return Err(err(start, "<QApairs> is not closed".into()));
    }
    Ok(questions)
}

/// The tokens of a block's first line, after checking that it has its 5 annotation lines.
fn block_tokens(
    path: &Path,
    start: usize,
    lines: &[(usize, String)],
) -> Result<Vec<String>, DataError> {
    if lines.len() < 5 {
        return Err(DataError::malformed(
            path,
            Some(start),
            None,
            format!(
                "a block needs 5 lines (tokens, POS, dependency labels, heads, NER), found {}",
                lines.len()
            ),
        ));
    }
    let tokens: Vec<String> = fields(&lines[0].1).iter().map(|t| t.to_string()).collect();
    if tokens.iter().all(|t| t.trim().is_empty()) {
        return Err(DataError::malformed(
            path,
            Some(lines[0].0),
            Some("tokens"),
            "no tokens",
        ));
    }
    Ok(tokens)
}

fn candidate(
    path: &Path,
    kind: Block,
    start: usize,
    lines: &[(usize, String)],
) -> Result<SpanCandidate, DataError> {
    let tokens = block_tokens(path, start, lines)?;
    let label = kind == Block::Positive;
    let extra = &lines[5..];
    let spans = match (kind, extra) {
        (_, []) => Vec::new(),
        (Block::Positive, [answer, indexes]) => spans(path, &tokens, answer, indexes)?,
        (Block::Negative, _) => {
            return Err(DataError::malformed(
                path,
                Some(extra[0].0),
                None,
                format!("a <negative> block has 5 lines, found {}", lines.len()),
            ))
        }
        _ => {
            return Err(DataError::malformed(
                path,
                Some(extra[0].0),
                None,
                format!(
                    "a <positive> block has 5 lines and then an answer-token line and an index line, found {} lines",
                    lines.len()
                ),
            ))
        }
    };
    Ok(SpanCandidate {
        tokens,
        label,
        spans,
        line: start,
    })
}

/// Splits a field list at `#` fields into groups.
fn groups<'a>(fields: &[&'a str]) -> Vec<Vec<&'a str>> {
    fields
        .split(|f| f.trim() == "#")
        .map(|g| g.iter().copied().filter(|f| !f.is_empty()).collect())
        .collect()
}

fn spans(
    path: &Path,
    tokens: &[String],
    answer: &(usize, String),
    indexes: &(usize, String),
) -> Result<Vec<(usize, usize)>, DataError> {
    let answer_fields = fields(&answer.1);
    let index_fields = fields(&indexes.1);
    let words = groups(&answer_fields);
    let places = groups(&index_fields);
    let bad = |line: usize, field: &str, message: String| {
        DataError::malformed(path, Some(line), Some(field), message)
    };
    if words.len() != places.len() {
        return Err(bad(
            indexes.0,
            "answer indexes",
            format!(
                "{} answer span(s) on line {} but {} index group(s)",
                words.len(),
                answer.0,
                places.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (words, places) in words.iter().zip(&places) {
        if words.is_empty() {
            continue;
        }
        if words.len() != places.len() {
            return Err(bad(
                indexes.0,
                "answer indexes",
                format!(
                    "answer {words:?} has {} token(s) but {} index(es)",
                    words.len(),
                    places.len()
                ),
            ));
        }
        let mut at = Vec::with_capacity(places.len());
        for (word, place) in words.iter().zip(places) {
            let i: usize = place.trim().parse().map_err(|_| {
                bad(
                    indexes.0,
                    "answer indexes",
                    format!("{place:?} is not a token index"),
                )
            })?;
            if i == 0 || i > tokens.len() || tokens[i - 1] != *word {
                return Err(bad(
                    indexes.0,
                    "answer indexes",
                    format!(
                        "answer token {word:?} is not token {i} (1-based) of the {}-token sentence",
                        tokens.len()
                    ),
                ));
            }
            at.push(i - 1);
        }
        if at.windows(2).any(|w| w[1] != w[0] + 1) {
            return Err(bad(
                indexes.0,
                "answer indexes",
                format!("answer {words:?} is not a contiguous span: {places:?}"),
            ));
        }
        out.push((at[0], at[at.len() - 1] + 1));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "<QApairs id='34.2'>\n<question>\nHow\tmany\tpassengers\t?\nA\tB\tC\tD\n1\t2\t3\t4\n0\t1\t1\t1\n-\t-\t-\t-\n</question>\n\
<positive>\nAmtrak\tserves\tabout\t21\tmillion\tpassengers\t.\nx\nx\nx\nx\n21\tmillion\t\n4\t5\t\n</positive>\n\
<positive>\nA\tcar\tor\ta\t405\t.\nx\nx\nx\nx\ncar\t#\t405\t\n2\t#\t5\t\n</positive>\n\
<negative>\nAmtrak\tis\tbig\t<b>\t.\nx\nx\nx\nx\n</negative>\n</QApairs>\n<QApairs id='35'>\n<question>\nWho\t?\nx\nx\nx\nx\n</question>\n</QApairs>\n";

    #[test]
    fn reads_tokens_labels_and_every_span() {
        let qs = parse(Path::new("t.xml"), SAMPLE.as_bytes()).unwrap();
        assert_eq!(qs.len(), 2);
        let q = &qs[0];
        assert_eq!(q.id, "34.2");
        assert_eq!(q.text(), "How many passengers ?");
        assert_eq!(q.candidates.len(), 3);
        assert_eq!(q.candidates[0].spans, vec![(3, 5)]);
        assert_eq!(q.candidates[0].answers(), vec!["21 million"]);
        assert_eq!(q.candidates[1].spans, vec![(1, 2), (4, 5)]);
        assert!(!q.candidates[2].label && q.candidates[2].spans.is_empty());
        assert_eq!(
            q.candidates[2].tokens[3], "<b>",
            "unescaped HTML is content"
        );
        assert_eq!(q.answers(), vec!["21 million", "car", "405"]);
        let as2 = q.to_question();
        assert_eq!(as2.positives(), 2);
        assert_eq!(as2.candidates[1].text, "A car or a 405 .");
        assert!(qs[1].candidates.is_empty());
    }

    #[test]
    fn malformed_blocks_name_file_and_line() {
        let cases = [
            // An index that does not point at the answer token (line 16 holds the indexes).
            (SAMPLE.replace("4\t5\t\n", "3\t4\t\n"), 16, "is not token 3"),
            // A positive missing its index line.
            (
                SAMPLE.replace("21\tmillion\t\n4\t5\t\n", "21\tmillion\t\n"),
                15,
                "answer-token line",
            ),
            // A block with too few annotation lines.
            (
                SAMPLE.replace("x\nx\nx\nx\n</negative>", "x\n</negative>"),
                27,
                "needs 5 lines",
            ),
            // A block left open.
            (
                SAMPLE.replace("</question>\n</QApairs>", "</QApairs>"),
                42,
                "is not closed",
            ),
            // A non-number index.
            (
                SAMPLE.replace("2\t#\t5", "2\t#\tfive"),
                25,
                "not a token index",
            ),
        ];
        for (text, line, needle) in cases {
            let err = parse(Path::new("bad.xml"), text.as_bytes()).unwrap_err();
            let loc = err.location().expect("location");
            assert_eq!(loc.path, Path::new("bad.xml"));
            assert_eq!(loc.line, Some(line), "{err}");
            assert!(err.to_string().contains(needle), "{err}");
            assert!(
                err.to_string().starts_with(&format!("bad.xml:{line}")),
                "{err}"
            );
        }
    }

    #[test]
    fn the_trecqa_files_parse_with_the_documented_counts() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/trecqa/xml");
        if !dir.is_dir() {
            eprintln!("skipped: {} not found", dir.display());
            return;
        }
        for (file, pairs, positives) in [("TEST.xml", 1517, 284), ("DEV.xml", 1148, 222)] {
            let qs = read(&dir.join(file)).unwrap();
            let cands: Vec<&SpanCandidate> = qs.iter().flat_map(|q| &q.candidates).collect();
            assert_eq!(cands.len(), pairs, "{file}");
            assert_eq!(
                cands.iter().filter(|c| c.label).count(),
                positives,
                "{file}"
            );
            assert!(cands
                .iter()
                .filter(|c| c.label)
                .all(|c| !c.spans.is_empty()));
        }
    }
}
