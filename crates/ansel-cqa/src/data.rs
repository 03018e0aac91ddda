//! Triples (new question, related question, comment) with their task A, B and C labels, read
//! from SemEval-2016 Task 3 files, and their token ids.

use ansel_data::readers::semeval::CqaFile;
use ansel_data::{CqaTask, DataError, Question};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Words a text is cut to (the thesis: 100).
pub const MAX_WORDS: usize = 100;
/// Places the rank embeddings tell apart (a thread among 10, a comment among 10); later
/// places share the last row.
pub const RANKS: i64 = 10;

/// The tasks, in the order of [`Triple::labels`] and of the network's heads.
pub const TASKS: [CqaTask; 3] = [CqaTask::A, CqaTask::B, CqaTask::C];

/// One comment of a related thread, seen from a new question.
#[derive(Debug, Clone, PartialEq)]
pub struct Triple {
    pub q_new: String,
    pub q_rel: String,
    pub comment: String,
    /// The thread's place in the search engine's list and the comment's in its thread, from 0.
    pub thread: usize,
    pub position: usize,
    /// Task A (comment answers the related question), B (related question is relevant to the
    /// new one), C (comment answers the new question); `None` where the file has no label.
    pub labels: [Option<bool>; 3],
}

/// The triples of a task C list, in candidate order. The related question is the candidate's
/// context title (how `ansel convert --task c` writes the lists); a thread's place is the
/// order of its best search-engine position (the context position) among the threads, and a
/// comment's place is its order by position within its thread, so the places do not depend on
/// the order the candidates come in. Labels A and B come from `ab` (by comment id) when given;
/// C from the candidate's own label.
pub fn question_triples(
    question: &Question,
    ab: Option<&HashMap<String, [Option<bool>; 2]>>,
) -> Vec<Triple> {
    let title = |i: usize| {
        question.candidates[i]
            .context
            .as_ref()
            .and_then(|ctx| ctx.title.clone())
            .unwrap_or_default()
    };
    let place = |i: usize| {
        question.candidates[i]
            .context
            .as_ref()
            .map_or(i, |ctx| ctx.position)
    };
    // Threads by their first place; within a thread, comments by place.
    let mut threads: Vec<(String, Vec<usize>)> = Vec::new();
    for i in 0..question.candidates.len() {
        let t = title(i);
        match threads.iter_mut().find(|(title, _)| *title == t) {
            Some((_, members)) => members.push(i),
            None => threads.push((t, vec![i])),
        }
    }
    for (_, members) in &mut threads {
        members.sort_by_key(|&i| (place(i), i));
    }
    threads.sort_by_key(|(_, members)| (place(members[0]), members[0]));
    let mut places = vec![(0, 0); question.candidates.len()];
    for (thread, (_, members)) in threads.iter().enumerate() {
        for (position, &i) in members.iter().enumerate() {
            places[i] = (thread, position);
        }
    }
    question
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let [a, b] = ab
                .and_then(|m| m.get(&c.id).copied())
                .unwrap_or([None, None]);
            Triple {
                q_new: question.text.clone(),
                q_rel: title(i),
                comment: c.text.clone(),
                thread: places[i].0,
                position: places[i].1,
                labels: [a, b, c.label],
            }
        })
        .collect()
}

/// Task A and B labels of every comment of a file, by comment id.
pub fn ab_labels(file: &CqaFile) -> HashMap<String, [Option<bool>; 2]> {
    let mut out = HashMap::new();
    for thread in file.threads() {
        let b = thread.question.relevance.map(|r| r.is_positive());
        for c in &thread.comments {
            out.insert(c.id.clone(), [c.to_related.map(|r| r.is_positive()), b]);
        }
    }
    out
}

/// The thesis' extended data (section 8.2.1): each task A thread as triples
/// (q_rel, q_rel, c_rel), its question relevant to itself (B positive) and task C's label
/// inherited from task A's.
pub fn extended_triples(task_a: &[Question]) -> Vec<Vec<Triple>> {
    task_a
        .iter()
        .map(|q| {
            q.candidates
                .iter()
                .enumerate()
                .map(|(position, c)| Triple {
                    q_new: q.text.clone(),
                    q_rel: q.text.clone(),
                    comment: c.text.clone(),
                    thread: 0,
                    position,
                    labels: [c.label, Some(true), c.label],
                })
                .collect()
        })
        .collect()
}

/// A SemEval file read whole (`.xml` or `.xml.gz`).
pub fn read_file(path: &Path) -> Result<CqaFile, DataError> {
    let bytes = ansel_data::read_bytes(path)?;
    ansel_data::readers::semeval::parse_file(path, &bytes)
}

/// The texts (subject and body, as task lists hold them) of a file's original questions.
pub fn original_texts(file: &CqaFile) -> impl Iterator<Item = String> + '_ {
    file.originals
        .iter()
        .map(|org| ansel_data::readers::semeval::join_subject_body(&org.subject, &org.body))
}

/// Task C lists of a file with every comment's A and B labels attached, one list per original
/// question, dropping the original questions whose text is in `exclude`.
pub fn labelled_lists(
    path: &Path,
    file: &CqaFile,
    exclude: &HashSet<String>,
) -> Result<Vec<(Question, Vec<Triple>)>, DataError> {
    let ab = ab_labels(file);
    Ok(file
        .task_questions(path, CqaTask::C)?
        .into_iter()
        .filter(|q| !exclude.contains(&q.text))
        .map(|q| {
            let triples = question_triples(&q, Some(&ab));
            (q, triples)
        })
        .collect())
}

/// Lower-cased words of a text, cut to [`MAX_WORDS`].
pub fn words(text: &str) -> Vec<String> {
    let mut w = ansel_text::words(text);
    w.truncate(MAX_WORDS);
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_data::{Candidate, DocContext};

    fn cand(id: &str, rel: &str, label: bool) -> Candidate {
        // Ids end in the comment's search-engine place (the tests give it).
        let place = id
            .rsplit('_')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        Candidate {
            id: id.into(),
            text: format!("comment {id}"),
            label: Some(label),
            context: Some(DocContext {
                doc_id: "Q1".into(),
                title: Some(rel.into()),
                position: place,
                prev: None,
                next: None,
            }),
        }
    }

    #[test]
    fn places_follow_the_search_engine_not_the_list_order() {
        // Thread "second" holds places 0-1, "first" places 2-3; the list comes shuffled.
        let q = Question {
            id: "Q1".into(),
            text: "new".into(),
            candidates: vec![
                cand("Q1_R1_3", "first", true),
                cand("Q1_R2_1", "second", false),
                cand("Q1_R1_2", "first", false),
                cand("Q1_R2_0", "second", false),
            ],
        };
        let ab = HashMap::from([("Q1_R1_2".to_string(), [Some(true), Some(false)])]);
        let t = question_triples(&q, Some(&ab));
        let places: Vec<(usize, usize)> = t.iter().map(|t| (t.thread, t.position)).collect();
        assert_eq!(places, [(1, 1), (0, 1), (1, 0), (0, 0)]);
        assert_eq!(t[2].labels, [Some(true), Some(false), Some(false)]);
        assert_eq!(t[0].labels, [None, None, Some(true)], "no A/B label known");
        assert_eq!(t[1].q_rel, "second");
    }

    #[test]
    fn extended_data_marks_the_question_relevant_to_itself() {
        let q = Question {
            id: "Q1_R1".into(),
            text: "rel".into(),
            candidates: vec![cand("c1", "rel", false), cand("c2", "rel", true)],
        };
        let ed = extended_triples(&[q]);
        assert_eq!(ed[0][1].labels, [Some(true), Some(true), Some(true)]);
        assert_eq!(ed[0][0].labels, [Some(false), Some(true), Some(false)]);
        assert_eq!(ed[0][1].q_new, ed[0][1].q_rel);
        assert_eq!(ed[0][1].position, 1);
    }
}
