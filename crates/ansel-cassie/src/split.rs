//! A data split turned into CASSIE inputs: every question's context graph and the frozen
//! encoder's features of every (question, sentence) pair, cached on disk.

use crate::features::{FrozenEncoder, PairSet, QuestionGraph};
use ansel_data::Question;
use ansel_model::Result;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::Instant;

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

    /// Encodes `questions` (or reads them from `cache`, when it holds exactly these pairs
    /// encoded by `base_key`). Progress goes to stderr under `label` (none when empty).
    pub fn build(
        encoder: &FrozenEncoder,
        questions: Vec<Question>,
        cache: Option<&Path>,
        base_key: &str,
        label: &str,
    ) -> Result<SplitFeatures> {
        let graphs: Vec<QuestionGraph> = questions.iter().map(QuestionGraph::new).collect();
        let mut offsets = Vec::with_capacity(graphs.len() + 1);
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (q, g) in questions.iter().zip(&graphs) {
            offsets.push(pairs.len());
            pairs.extend(g.sentences.iter().map(|s| (q.text.as_str(), s.as_str())));
        }
        offsets.push(pairs.len());
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
