//! A data split turned into CASSIE inputs: every question's context graph and the frozen
//! encoder's features of every (question, sentence) pair, cached on disk.

use crate::features::{PairEncoder, PairSet, QuestionGraph};
use ansel_data::Question;
use ansel_model::Result;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::Instant;

/// Every question's context graph, and where its pairs start (one past the last at the end).
fn layout(questions: &[Question]) -> (Vec<QuestionGraph>, Vec<usize>) {
    let graphs: Vec<QuestionGraph> = questions.iter().map(QuestionGraph::new).collect();
    let mut offsets = Vec::with_capacity(graphs.len() + 1);
    let mut at = 0;
    for g in &graphs {
        offsets.push(at);
        at += g.sentences.len();
    }
    offsets.push(at);
    (graphs, offsets)
}

/// The (question, sentence) pairs of every graph, question-major.
fn pair_texts<'a>(
    questions: &'a [Question],
    graphs: &'a [QuestionGraph],
) -> Vec<(&'a str, &'a str)> {
    questions
        .iter()
        .zip(graphs)
        .flat_map(|(q, g)| g.sentences.iter().map(|s| (q.text.as_str(), s.as_str())))
        .collect()
}

/// Questions, their graphs and the features of their pairs; question `k`'s sentence `j`
/// is pair `offsets[k] + j`.
pub struct SplitFeatures {
    pub questions: Vec<Question>,
    pub graphs: Vec<QuestionGraph>,
    pub offsets: Vec<usize>,
    pub pairs: PairSet,
}

impl SplitFeatures {
    /// Pair index of node `node` of candidate `cand` of question `k`.
    pub fn node(&self, k: usize, cand: usize, node: usize) -> Option<usize> {
        self.graphs[k].nodes[cand][node].map(|j| self.offsets[k] + j)
    }

    /// Encodes `questions` with gradients flowing into `encoder` (dropout on when `train`):
    /// the inputs of one end-to-end training step, or of its dev evaluation. Never cached.
    pub fn live(
        encoder: &PairEncoder,
        questions: Vec<Question>,
        train: bool,
    ) -> Result<SplitFeatures> {
        let (graphs, offsets) = layout(&questions);
        let pairs = encoder.encode_live(&pair_texts(&questions, &graphs), train)?;
        Ok(SplitFeatures {
            questions,
            graphs,
            offsets,
            pairs,
        })
    }

    /// Encodes `questions` (or reads them from `cache`, when it holds exactly these pairs
    /// encoded by `base_key`). Progress goes to stderr under `label` (none when empty).
    pub fn build(
        encoder: &PairEncoder,
        questions: Vec<Question>,
        cache: Option<&Path>,
        base_key: &str,
        label: &str,
    ) -> Result<SplitFeatures> {
        let (graphs, offsets) = layout(&questions);
        let pairs = pair_texts(&questions, &graphs);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        pairs.hash(&mut hasher);
        let key = format!(
            "{base_key}|max_len={}|pairs={}|{:016x}",
            encoder.max_len,
            pairs.len(),
            hasher.finish()
        );
        let set = match cache
            .map(|dir| PairSet::load(dir, &key))
            .transpose()?
            .flatten()
        {
            Some(set) => {
                eprintln!(
                    "{label}: {} cached pairs from {}",
                    set.len(),
                    cache.map(|c| c.display().to_string()).unwrap_or_default()
                );
                set
            }
            None => {
                let started = Instant::now();
                let total = pairs.len();
                let mut last = 0;
                let set = encoder.encode(&pairs, &mut |done| {
                    if !label.is_empty() && (done >= last + 500 || done == total) {
                        last = done;
                        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
                        eprintln!("{label}: encoded {done}/{total} pairs ({rate:.1} pairs/s)");
                    }
                })?;
                if let Some(dir) = cache {
                    set.save(dir, &key)?;
                }
                set
            }
        };
        Ok(SplitFeatures {
            questions,
            graphs,
            offsets,
            pairs: set,
        })
    }
}
