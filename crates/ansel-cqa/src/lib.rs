//! Community QA with multi-task learning (the thesis' chapter 8, SemEval-2016 Task 3).
//!
//! A new question q_new, a related forum question q_rel and one of its comments c_rel go
//! through CNN sentence encoders; their vectors, with rank-position embeddings, form `h_j`,
//! a shared layer `h_s` feeds one MLP head per task: A (c_rel answers q_rel), B (q_rel is
//! relevant to q_new) and C (c_rel answers q_new, the task scored). The global loss is the sum
//! of the heads' binary cross-entropies. Trained with `--tasks c` and `--inputs pair` the same
//! code is the single network <q_new, c_rel>; with `--inputs triplet --tasks c`, the joint
//! representation without the auxiliary tasks.
//!
//! A model directory (kind [`KIND`]) scores task C lists as `ansel convert --task c` writes
//! them (the related question is each candidate's context title), so `ansel eval --task c`
//! scores it like any other model.

pub mod data;
pub mod net;
pub mod train;

use ansel_data::Question;
use ansel_efficient::Vocabulary;
use ansel_model::{ModelCard, ModelError, Ranker, Result};
use ansel_torch::tch::{nn, Device};
use data::Triple;
use net::{Batch, CqaNet, NetConfig};
use std::path::Path;
use std::sync::Mutex;

pub const KIND: &str = "cqa-mtl";
pub const WEIGHTS_FILE: &str = "model.safetensors";

/// Triples scored per forward pass.
const BATCH: usize = 128;

/// A network with its variables and vocabulary.
pub(crate) struct Loaded {
    pub vs: nn::VarStore,
    pub net: CqaNet,
    pub vocab: Vocabulary,
}

impl Loaded {
    /// Task C logits of the triples, in order.
    pub fn score_triples(&self, triples: &[Triple]) -> Vec<f32> {
        ansel_torch::tch::no_grad(|| {
            triples
                .chunks(BATCH)
                .flat_map(|chunk| {
                    let refs: Vec<&Triple> = chunk.iter().collect();
                    let batch = Batch::new(&refs, &self.vocab, self.net.config.inputs);
                    Vec::<f32>::try_from(self.net.forward(&batch, false).select(1, 2))
                        .expect("float logits")
                })
                .collect()
        })
    }

    pub fn parameters(&self) -> usize {
        ansel_torch::parameter_count(&self.vs)
    }
}

/// A trained chapter-8 network scoring task C lists.
pub struct CqaRanker {
    name: String,
    loaded: Mutex<Loaded>,
}

impl CqaRanker {
    pub fn load(dir: &Path, card: &ModelCard) -> Result<CqaRanker> {
        let config: NetConfig =
            serde_json::from_value(card.config.clone()).map_err(|e| ModelError::Format {
                path: dir.join(ansel_model::CARD_FILE),
                message: format!("config: {e}"),
            })?;
        let vocab = Vocabulary::read(dir)?;
        let mut vs = nn::VarStore::new(Device::Cpu);
        let rows = vec![0f32; vocab.len() * config.word_dim as usize];
        let net = CqaNet::new(&vs.root(), config, &rows);
        ansel_torch::load_vars(&mut vs, &dir.join(WEIGHTS_FILE))?;
        Ok(CqaRanker {
            name: card.name.clone(),
            loaded: Mutex::new(Loaded { vs, net, vocab }),
        })
    }
}

impl Ranker for CqaRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        let triples = data::question_triples(question, None);
        let loaded = self
            .loaded
            .lock()
            .map_err(|_| ModelError::Backend("a scoring thread panicked".into()))?;
        Ok(loaded.score_triples(&triples))
    }
}

#[cfg(test)]
mod tests;
