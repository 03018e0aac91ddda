//! From questions to what the networks read, with no tensor library: each question is
//! tokenised once ([`EncodedQuestion`]: word ids, exact-match flags, the overlap feature and the
//! order the RNN reads its candidates in), and a [`Grid`] lays several questions out as a
//! `[questions, candidates]` grid. Training and the libtorch scorer build their tensors from
//! these ([`crate::batch::Batch`]); the native scorer reads them directly, so both backends see
//! the same features by construction.

use crate::vocab::{Vocabulary, UNK};
use ansel_data::Question;
use std::collections::HashSet;

/// Token limits; longer texts are cut (the thesis' sentences rarely are).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Limits {
    pub question_tokens: usize,
    pub candidate_tokens: usize,
}

/// One question-candidate pair as ids plus exact-match flags.
#[derive(Debug, Clone)]
pub(crate) struct EncodedPair {
    pub(crate) q_ids: Vec<i64>,
    pub(crate) q_exact: Vec<f32>,
    pub(crate) c_ids: Vec<i64>,
    pub(crate) c_exact: Vec<f32>,
    /// Share of the question's content words found in the candidate.
    pub(crate) overlap: f32,
}

#[derive(Debug, Clone)]
// Labels and teacher scores are what training reads.
#[cfg_attr(not(feature = "torch"), allow(dead_code))]
pub struct EncodedQuestion {
    pub(crate) pairs: Vec<EncodedPair>,
    /// Candidate indices in the order the RNN reads them: document order (by
    /// document, then position) when every candidate has a position, else the
    /// order the reader gave.
    pub(crate) order: Vec<usize>,
    pub(crate) labels: Vec<bool>,
    /// The teacher's score of each candidate (original order), when distilling.
    pub(crate) teacher: Option<Vec<f32>>,
    /// Labelled by the teacher alone: the gold labels are not used.
    pub(crate) teacher_only: bool,
}

/// Distillation settings a batch's loss needs ([`crate::Distillation`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distill {
    pub weight: f64,
    pub temperature: f64,
}

#[cfg_attr(not(feature = "torch"), allow(dead_code))]
impl EncodedQuestion {
    pub fn new(question: &Question, vocab: &Vocabulary, limits: Limits) -> EncodedQuestion {
        let q_words = truncated(&question.text, limits.question_tokens);
        let q_set: HashSet<&str> = content(&q_words);
        let pairs = question
            .candidates
            .iter()
            .map(|candidate| {
                let c_words = truncated(&candidate.text, limits.candidate_tokens);
                let c_set = content(&c_words);
                let exact = |words: &[String], other: &HashSet<&str>| -> Vec<f32> {
                    words
                        .iter()
                        .map(|w| f32::from(other.contains(w.as_str()) as u8))
                        .collect()
                };
                let shared = q_set.intersection(&c_set).count();
                EncodedPair {
                    q_ids: ids(&q_words, vocab),
                    q_exact: exact(&q_words, &c_set),
                    c_ids: ids(&c_words, vocab),
                    c_exact: exact(&c_words, &q_set),
                    overlap: shared as f32 / q_set.len().max(1) as f32,
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..question.candidates.len()).collect();
        if question.has_document_order() {
            // Candidates retrieved from many documents (`ask`) are read one document after another.
            order.sort_by_key(|&i| {
                question.candidates[i]
                    .context
                    .as_ref()
                    .map(|c| (c.doc_id.as_str(), c.position))
            });
        }
        EncodedQuestion {
            pairs,
            order,
            labels: question.labels(),
            teacher: None,
            teacher_only: false,
        }
    }

    /// Attaches the teacher's scores (one per candidate, in the question's order); with
    /// `only`, the gold labels are dropped and the teacher alone gives the target.
    pub fn with_teacher(mut self, scores: Vec<f32>, only: bool) -> EncodedQuestion {
        assert_eq!(scores.len(), self.len(), "one teacher score per candidate");
        self.teacher = Some(scores);
        if only {
            self.labels.iter_mut().for_each(|l| *l = false);
        }
        self.teacher_only = only;
        self
    }

    pub fn has_teacher(&self) -> bool {
        self.teacher.is_some()
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Tokens of the longest candidate.
    pub fn longest_candidate(&self) -> usize {
        self.pairs.iter().map(|p| p.c_ids.len()).max().unwrap_or(0)
    }

    pub fn has_positive(&self) -> bool {
        self.labels.iter().any(|&l| l)
    }
}

/// Word tokens, at most `limit`, never empty (an empty text becomes one unknown word).
fn truncated(text: &str, limit: usize) -> Vec<String> {
    let mut words = ansel_text::words(text);
    words.truncate(limit.max(1));
    if words.is_empty() {
        words.push(String::new());
    }
    words
}

fn content(words: &[String]) -> HashSet<&str> {
    words
        .iter()
        .map(String::as_str)
        .filter(|w| !w.is_empty() && !ansel_text::is_stop_word(w))
        .collect()
}

fn ids(words: &[String], vocab: &Vocabulary) -> Vec<i64> {
    words
        .iter()
        .map(|w| if w.is_empty() { UNK } else { vocab.id(w) })
        .collect()
}

/// Several questions laid out as a `[questions, width]` grid: each question's candidates in the
/// order the RNN reads them ([`EncodedQuestion`]'s `order`), padding after them.
#[cfg_attr(not(feature = "torch"), allow(dead_code))]
pub(crate) struct Grid<'a> {
    /// Every pair in grid order with its slot in the flattened grid; a question's pairs are
    /// consecutive.
    pub pairs: Vec<(&'a EncodedPair, usize)>,
    /// Real candidates per question, in grid order.
    pub lengths: Vec<usize>,
    pub width: usize,
    /// For each question, the grid slot of each candidate in its original order.
    pub candidate_slots: Vec<Vec<usize>>,
}

impl<'a> Grid<'a> {
    pub fn new(questions: &[&'a EncodedQuestion]) -> Grid<'a> {
        let width = questions.iter().map(|q| q.len()).max().unwrap_or(0).max(1);
        let pairs = questions
            .iter()
            .enumerate()
            .flat_map(|(b, q)| {
                q.order
                    .iter()
                    .enumerate()
                    .map(move |(k, &i)| (&q.pairs[i], b * width + k))
            })
            .collect();
        let candidate_slots = questions
            .iter()
            .enumerate()
            .map(|(b, q)| {
                let mut slot_of = vec![0usize; q.len()];
                for (k, &i) in q.order.iter().enumerate() {
                    slot_of[i] = b * width + k;
                }
                slot_of
            })
            .collect();
        Grid {
            pairs,
            lengths: questions.iter().map(|q| q.len()).collect(),
            width,
            candidate_slots,
        }
    }

    /// Per-question scores in original candidate order from `[questions, width]` logits.
    pub fn scores(&self, logits: &[f32]) -> Vec<Vec<f32>> {
        self.candidate_slots
            .iter()
            .map(|slots| slots.iter().map(|&s| logits[s]).collect())
            .collect()
    }
}
