//! From questions to padded tensors. Each question is tokenised once
//! ([`EncodedQuestion`]); a [`Batch`] lays several questions out as a
//! `[questions, candidates]` grid (what the list-wise loss and the RNN over
//! candidates need) and their pairs as flat `[pairs, tokens]` tensors.

use crate::vocab::{Vocabulary, PAD, UNK};
use ansel_data::Question;
use ansel_torch::tch::{Kind, Tensor};
use std::collections::HashSet;

/// Token limits; longer texts are cut (the thesis' sentences rarely are).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Limits {
    pub question_tokens: usize,
    pub candidate_tokens: usize,
}

/// One question-candidate pair as ids plus exact-match flags.
#[derive(Debug, Clone)]
struct EncodedPair {
    q_ids: Vec<i64>,
    q_exact: Vec<f32>,
    c_ids: Vec<i64>,
    c_exact: Vec<f32>,
    /// Share of the question's content words found in the candidate.
    overlap: f32,
}

#[derive(Debug, Clone)]
pub struct EncodedQuestion {
    pairs: Vec<EncodedPair>,
    /// Candidate indices in the order the RNN reads them: document order (by
    /// document, then position) when every candidate has a position, else the
    /// order the reader gave.
    order: Vec<usize>,
    labels: Vec<bool>,
}

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
        }
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

/// Several questions, padded.
pub struct Batch {
    /// `[questions, question tokens]` ids (padding = [`PAD`]) and mask, once per question.
    pub question_ids: Tensor,
    pub question_mask: Tensor,
    /// `[pairs]`: the question (row of `question_ids`) of each pair.
    pub pair_question: Tensor,
    /// `[pairs, question tokens]` mask and exact-match flags of the question side of each pair.
    pub q_mask: Tensor,
    pub q_exact: Tensor,
    pub c_ids: Tensor,
    pub c_mask: Tensor,
    pub c_exact: Tensor,
    /// `[pairs, 1]` pair-level lexical feature (RelCNN's x_feat).
    pub features: Tensor,
    /// `[pairs]`: where each pair sits in the flattened `[questions, width]` grid.
    pub slots: Tensor,
    /// `[questions, width]` gold labels and 1 for real candidates, 0 for padding.
    pub labels: Tensor,
    pub list_mask: Tensor,
    /// Real candidates per question, in grid order.
    pub lengths: Vec<i64>,
    pub questions: usize,
    pub width: usize,
    /// For each question, the grid slot of each candidate in its original order.
    pub candidate_slots: Vec<Vec<usize>>,
}

impl Batch {
    /// Point-wise binary cross-entropy of `logits` (`[questions, width]`) over the batch's
    /// real candidates (padding slots left out).
    pub fn pointwise_bce(&self, logits: &Tensor) -> Tensor {
        ansel_torch::pointwise_bce(
            &logits.reshape([-1]).index_select(0, &self.slots),
            &self.labels.reshape([-1]).index_select(0, &self.slots),
        )
    }

    /// `questions` must each have a candidate.
    pub fn new(questions: &[&EncodedQuestion]) -> Batch {
        let width = questions.iter().map(|q| q.len()).max().unwrap_or(0).max(1);
        let pairs: Vec<(&EncodedPair, usize)> = questions
            .iter()
            .enumerate()
            .flat_map(|(b, q)| {
                q.order
                    .iter()
                    .enumerate()
                    .map(move |(k, &i)| (&q.pairs[i], b * width + k))
            })
            .collect();
        let pair_question: Vec<i64> = pairs.iter().map(|&(_, s)| (s / width) as i64).collect();
        let (question_ids, question_mask, _) = pad(questions
            .iter()
            .map(|q| (&q.pairs[0].q_ids, &q.pairs[0].q_exact)));
        let (_, q_mask, q_exact) = pad(pairs.iter().map(|(p, _)| (&p.q_ids, &p.q_exact)));
        let (c_ids, c_mask, c_exact) = pad(pairs.iter().map(|(p, _)| (&p.c_ids, &p.c_exact)));
        let features: Vec<f32> = pairs.iter().map(|(p, _)| p.overlap).collect();
        let slots: Vec<i64> = pairs.iter().map(|&(_, s)| s as i64).collect();
        let mut labels = vec![0f32; questions.len() * width];
        let mut list_mask = vec![0f32; questions.len() * width];
        let mut candidate_slots = Vec::with_capacity(questions.len());
        for (b, q) in questions.iter().enumerate() {
            let mut slot_of = vec![0usize; q.len()];
            for (k, &i) in q.order.iter().enumerate() {
                slot_of[i] = b * width + k;
                labels[b * width + k] = f32::from(q.labels[i] as u8);
                list_mask[b * width + k] = 1.0;
            }
            candidate_slots.push(slot_of);
        }
        let grid = [questions.len() as i64, width as i64];
        Batch {
            question_ids,
            question_mask,
            pair_question: Tensor::from_slice(&pair_question),
            q_mask,
            q_exact,
            c_ids,
            c_mask,
            c_exact,
            features: Tensor::from_slice(&features).view([-1, 1]),
            slots: Tensor::from_slice(&slots),
            labels: Tensor::from_slice(&labels).view(grid),
            list_mask: Tensor::from_slice(&list_mask).view(grid),
            lengths: questions.iter().map(|q| q.len() as i64).collect(),
            questions: questions.len(),
            width,
            candidate_slots,
        }
    }

    pub fn pairs(&self) -> usize {
        self.slots.size()[0] as usize
    }

    /// Per-question scores in original candidate order from `[questions, width]` logits.
    pub fn scores(&self, logits: &Tensor) -> Vec<Vec<f32>> {
        let flat: Vec<f32> =
            Vec::try_from(logits.to_kind(Kind::Float).reshape([-1])).expect("float logits");
        self.candidate_slots
            .iter()
            .map(|slots| slots.iter().map(|&s| flat[s]).collect())
            .collect()
    }
}

/// Pads token rows to the longest: ids, mask and exact-match flags, each `[rows, longest]`.
fn pad<'a>(rows: impl Iterator<Item = (&'a Vec<i64>, &'a Vec<f32>)>) -> (Tensor, Tensor, Tensor) {
    let rows: Vec<_> = rows.collect();
    let longest = rows.iter().map(|(ids, _)| ids.len()).max().unwrap_or(1);
    let mut ids = vec![PAD; rows.len() * longest];
    let mut mask = vec![0f32; rows.len() * longest];
    let mut exact = vec![0f32; rows.len() * longest];
    for (r, (row_ids, row_exact)) in rows.iter().enumerate() {
        let at = r * longest;
        ids[at..at + row_ids.len()].copy_from_slice(row_ids);
        mask[at..at + row_ids.len()].fill(1.0);
        exact[at..at + row_exact.len()].copy_from_slice(row_exact);
    }
    let shape = [rows.len() as i64, longest as i64];
    (
        Tensor::from_slice(&ids).view(shape),
        Tensor::from_slice(&mask).view(shape),
        Tensor::from_slice(&exact).view(shape),
    )
}
