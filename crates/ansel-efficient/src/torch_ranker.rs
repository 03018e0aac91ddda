//! A trained efficient model scored by libtorch: the network training builds.

use crate::batch::{Batch, EncodedQuestion};
use crate::nets::Network;
use crate::ranker::{read_model, WEIGHTS};
use crate::vocab::Vocabulary;
use crate::ModelConfig;
use ansel_data::Question;
use ansel_model::{ModelCard, Ranker, Result};
use ansel_torch::tch::{nn, Device};
use std::path::Path;
use std::sync::Mutex;

/// Scoring batches hold about this many pairs: large enough to keep the
/// matrix kernels busy, small enough for a few MB of activations.
const PAIRS_PER_BATCH: usize = 256;

/// The network with the variables it reads.
pub(crate) struct Loaded {
    pub vs: nn::VarStore,
    pub net: Network,
}

impl Loaded {
    /// A network with fresh (or about to be loaded) variables.
    pub fn new(config: &ModelConfig) -> Loaded {
        let vs = nn::VarStore::new(Device::Cpu);
        let net = Network::new(&vs.root(), config);
        Loaded { vs, net }
    }

    /// Trainable parameters (the static embedding table is not counted, as in the thesis).
    pub fn parameters(&self) -> usize {
        ansel_torch::parameter_count(&self.vs)
    }

    /// Scores encoded questions in batches, without gradients.
    pub fn score(&self, questions: &[EncodedQuestion]) -> Vec<Vec<f32>> {
        let mut scores = vec![Vec::new(); questions.len()];
        // Questions without candidates keep their empty score list. Batching
        // questions of similar candidate length together cuts the padding.
        let mut scored: Vec<usize> = (0..questions.len())
            .filter(|&i| !questions[i].is_empty())
            .collect();
        scored.sort_by_key(|&i| questions[i].longest_candidate());
        ansel_torch::tch::no_grad(|| {
            for chunk in chunks_of_pairs(&scored, |i| questions[i].len(), PAIRS_PER_BATCH) {
                let batch = Batch::new(&chunk.iter().map(|&i| &questions[i]).collect::<Vec<_>>());
                let chunk_scores = batch.scores(&self.net.forward(&batch, false));
                for (&i, s) in chunk.iter().zip(chunk_scores) {
                    scores[i] = s;
                }
            }
        });
        scores
    }
}

/// Splits `items` into consecutive runs of about `pairs` pairs (at least one item each).
pub(crate) fn chunks_of_pairs<'a>(
    items: &'a [usize],
    size: impl Fn(usize) -> usize + 'a,
    pairs: usize,
) -> impl Iterator<Item = &'a [usize]> + 'a {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= items.len() {
            return None;
        }
        let mut end = start;
        let mut total = 0;
        while end < items.len() && (end == start || total + size(items[end]) <= pairs) {
            total += size(items[end]);
            end += 1;
        }
        let chunk = &items[start..end];
        start = end;
        Some(chunk)
    })
}

/// A saved efficient model scored by its libtorch network (`ANSEL_EFFICIENT_BACKEND=libtorch`).
pub struct LibtorchRanker {
    name: String,
    config: ModelConfig,
    vocab: Vocabulary,
    // tch tensors are Send but not Sync; scoring takes the lock.
    loaded: Mutex<Loaded>,
}

impl LibtorchRanker {
    pub(crate) fn from_parts(
        name: String,
        config: ModelConfig,
        vocab: Vocabulary,
        loaded: Loaded,
    ) -> Self {
        LibtorchRanker {
            name,
            config,
            vocab,
            loaded: Mutex::new(loaded),
        }
    }

    /// Loads a model directory written by [`crate::train`].
    pub fn load(dir: &Path, card: &ModelCard) -> Result<LibtorchRanker> {
        let (config, vocab) = read_model(dir, card)?;
        let mut loaded = Loaded::new(&config);
        ansel_torch::load_vars(&mut loaded.vs, &dir.join(WEIGHTS))?;
        loaded.net.prepare_scoring();
        Ok(Self::from_parts(card.name.clone(), config, vocab, loaded))
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn parameters(&self) -> usize {
        self.lock().parameters()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Ranker for LibtorchRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        let encoded: Vec<EncodedQuestion> = questions
            .iter()
            .map(|q| EncodedQuestion::new(q, &self.vocab, self.config.limits))
            .collect();
        Ok(self.lock().score(&encoded))
    }

    fn reads_whole_list(&self) -> bool {
        self.config.rnn != crate::RnnKind::None
    }
}
