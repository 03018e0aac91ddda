//! Synthetic question/answer-sentence pairs from unlabelled text (SEDAN §3.1).
//!
//! SEDAN generates questions with a T5 model; no seq2seq weights can be had
//! here, so the shipped [`QuestionGenerator`] is rule-based: it finds answer
//! spans a tagger-free scan can trust (years, numbers with a unit, capitalised
//! names) and turns the sentence into a cloze-style wh-question by replacing
//! the span ("It was built in 1871." -> "Harbor Point Lighthouse was built in
//! what year?"). A neural generator plugs in through the same trait.
//!
//! Documents are cut into passages of `K_GQA` sentences; each synthetic
//! question becomes an AS2 [`Question`] whose candidates are the passage's
//! sentences and whose positive is the source sentence. [`round_trip`] keeps
//! only questions for which a ranker finds the source sentence again.

mod cloze;

pub use cloze::ClozeGenerator;

use ansel_data::{Candidate, DocContext, Question};
use ansel_model::{Ranker, Result};

/// A run of consecutive sentences of one document.
#[derive(Debug, Clone)]
pub struct Passage<'a> {
    pub doc_id: &'a str,
    pub title: Option<&'a str>,
    /// Position of the first sentence in the document.
    pub offset: usize,
    pub sentences: &'a [String],
}

/// What kind of span a synthetic question asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Year,
    Quantity,
    Name,
}

/// A generated question, its answer span and the sentence (index in the passage) that holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticQuestion {
    pub question: String,
    pub answer: String,
    pub sentence: usize,
    pub kind: SpanKind,
}

/// Turns a passage into questions whose answers are in one of its sentences.
pub trait QuestionGenerator: Send + Sync {
    fn name(&self) -> &str;
    fn generate(&self, passage: &Passage) -> Vec<SyntheticQuestion>;
}

/// Cuts a document's sentences into passages of `k` sentences (the last may be shorter).
pub fn passages<'a>(
    doc_id: &'a str,
    title: Option<&'a str>,
    sentences: &'a [String],
    k: usize,
) -> Vec<Passage<'a>> {
    sentences
        .chunks(k.max(1))
        .enumerate()
        .map(|(i, chunk)| Passage {
            doc_id,
            title,
            offset: i * k.max(1),
            sentences: chunk,
        })
        .collect()
}

/// The AS2 question a synthetic pair makes: the passage's sentences, in
/// document order with context, the source sentence positive.
pub fn to_question(id: String, passage: &Passage, synthetic: &SyntheticQuestion) -> Question {
    let candidates = passage
        .sentences
        .iter()
        .enumerate()
        .map(|(i, text)| Candidate {
            id: format!("{}-{}", passage.doc_id, passage.offset + i),
            text: text.clone(),
            label: Some(i == synthetic.sentence),
            context: Some(DocContext {
                doc_id: passage.doc_id.to_string(),
                title: passage.title.map(str::to_owned),
                position: passage.offset + i,
                prev: i.checked_sub(1).map(|p| passage.sentences[p].clone()),
                next: passage.sentences.get(i + 1).cloned(),
            }),
        })
        .collect();
    Question {
        id,
        text: synthetic.question.clone(),
        candidates,
    }
}

/// How many synthetic questions round-trip filtering kept and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilterReport {
    pub kept: usize,
    pub dropped: usize,
}

/// Keeps the questions whose positive `ranker` places in its top `top_k`
/// (round-trip consistency): a question the current model cannot connect
/// to its own source sentence is likely malformed or ambiguous.
pub fn round_trip(
    ranker: &dyn Ranker,
    questions: Vec<Question>,
    top_k: usize,
) -> Result<(Vec<Question>, FilterReport)> {
    let scores = ranker.score_all(&questions)?;
    let mut report = FilterReport::default();
    let kept = questions
        .into_iter()
        .zip(scores)
        .filter(|(question, scores)| {
            let order = ansel_eval::rank_order(scores, &question.labels());
            let found = order
                .iter()
                .take(top_k)
                .any(|&i| question.candidates[i].label == Some(true));
            if found {
                report.kept += 1;
            } else {
                report.dropped += 1;
            }
            found
        })
        .map(|(q, _)| q)
        .collect();
    Ok((kept, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn passages_cover_the_document_in_order() {
        let s = sentences(&["a.", "b.", "c.", "d.", "e."]);
        let p = passages("d", None, &s, 2);
        assert_eq!(
            p.iter()
                .map(|p| (p.offset, p.sentences.len()))
                .collect::<Vec<_>>(),
            vec![(0, 2), (2, 2), (4, 1)]
        );
    }

    #[test]
    fn questions_mark_the_source_sentence_and_keep_context() {
        let s = sentences(&[
            "The tower is white.",
            "It was built in 1871.",
            "It is a museum now.",
        ]);
        let passage = &passages("lighthouse", Some("Harbor Point Lighthouse"), &s, 3)[0];
        let synthetic = ClozeGenerator::default().generate(passage);
        let year = synthetic
            .iter()
            .find(|q| q.kind == SpanKind::Year)
            .expect("a year question");
        let q = to_question("q0".into(), passage, year);
        assert_eq!(q.labels(), vec![false, true, false]);
        let ctx = q.candidates[1].context.clone().unwrap();
        assert_eq!(
            (ctx.prev.as_deref(), ctx.next.as_deref()),
            (Some("The tower is white."), Some("It is a museum now."))
        );
    }

    #[test]
    fn round_trip_drops_questions_the_ranker_cannot_connect() {
        let s = sentences(&[
            "Mercury orbits the Sun every 88 days.",
            "Venus is covered in thick clouds.",
        ]);
        let passage = &passages("p", Some("Planets"), &s, 2)[0];
        let good = SyntheticQuestion {
            question: "Mercury orbits the Sun every how many days?".into(),
            answer: "88".into(),
            sentence: 0,
            kind: SpanKind::Quantity,
        };
        let bad = SyntheticQuestion {
            question: "Mercury orbits what?".into(),
            answer: "x".into(),
            sentence: 1,
            kind: SpanKind::Name,
        };
        let questions = vec![
            to_question("g".into(), passage, &good),
            to_question("b".into(), passage, &bad),
        ];
        let (kept, report) = round_trip(&ansel_lexical::WordOverlap, questions, 1).unwrap();
        assert_eq!(
            report,
            FilterReport {
                kept: 1,
                dropped: 1
            }
        );
        assert_eq!(kept[0].id, "g");
    }
}
