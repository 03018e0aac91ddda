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
use ansel_torch::tch::{nn, Device, Kind, Tensor};
use data::Triple;
use net::{Batch, CScore, CqaNet, NetConfig};
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
    /// The heads' logits `[N, 3]` of the triples, in order.
    pub fn logits(&self, triples: &[Triple]) -> Tensor {
        ansel_torch::tch::no_grad(|| {
            let parts: Vec<Tensor> = triples
                .chunks(BATCH)
                .map(|chunk| {
                    let refs: Vec<&Triple> = chunk.iter().collect();
                    let batch = Batch::new(&refs, &self.vocab, self.net.config.inputs);
                    self.net.forward(&batch, false)
                })
                .collect();
            if parts.is_empty() {
                Tensor::zeros([0, 3], (Kind::Float, Device::Cpu))
            } else {
                Tensor::cat(&parts, 0)
            }
        })
    }

    /// Task C scores of the triples, in order, by the network's own rule.
    pub fn score_triples(&self, triples: &[Triple]) -> Vec<f32> {
        self.score_triples_by(triples, self.net.config.c_score)
    }

    /// Task C scores of the triples, in order, by `rule`.
    pub fn score_triples_by(&self, triples: &[Triple], rule: CScore) -> Vec<f32> {
        rule.scores(&self.logits(triples))
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

/// SemEval's official task C scores of lists, from their heads' logits, by `rule`.
pub(crate) fn official_scores(
    questions: &[Question],
    logits: &[Tensor],
    rule: CScore,
) -> ansel_eval::SemEvalScores {
    let scores: Vec<Vec<f32>> = logits.iter().map(|l| rule.scores(l)).collect();
    ansel_eval::semeval_scores(questions, &scores)
}

/// Which lists of a SemEval file [`rule_scores`] scores.
#[derive(Debug, Clone, Default)]
pub struct RuleLists {
    /// Only this fold of the file's original questions in this seed's order: the lists
    /// `ansel-lab cqa-train --tune-fold I/K --seed S` tuned on when trained on the file.
    pub held: Option<(train::TuneFold, u64)>,
    /// Leave out the original questions of these files (as `cqa-train --exclude` does).
    pub exclude: Vec<std::path::PathBuf>,
}

/// SemEval's official task C scores of saved models on a full SemEval file, by each rule all
/// their heads allow (the rule each was saved with is one of them). Several models are scored
/// as one ensemble, as `ansel eval --model A+B` fuses them: each member's scores standardised
/// per question, then summed.
pub fn rule_scores(
    models: &[std::path::PathBuf],
    data: &Path,
    which: &RuleLists,
) -> anyhow::Result<Vec<(CScore, ansel_eval::SemEvalScores)>> {
    if models.is_empty() {
        anyhow::bail!("no model to score");
    }
    let mut file = data::read_file(data)?;
    if let Some((fold, seed)) = which.held {
        file = file
            .split_originals_fold(fold.index - 1, fold.folds, seed)
            .1;
    }
    let mut exclude = std::collections::HashSet::new();
    for path in &which.exclude {
        exclude.extend(data::original_texts(&data::read_file(path)?));
    }
    let lists = data::labelled_lists(data, &file, &exclude)?;
    if lists.is_empty() {
        anyhow::bail!("{}: no task C list to score", data.display());
    }
    let questions: Vec<Question> = lists.iter().map(|(q, _)| q.clone()).collect();
    let mut rules = CScore::available([true, true, true]);
    // Each member's heads' logits, list by list.
    let mut members: Vec<Vec<Tensor>> = Vec::new();
    for model in models {
        let card = ModelCard::read(model)?;
        let loaded = CqaRanker::load(model, &card)?
            .loaded
            .into_inner()
            .map_err(|_| anyhow::anyhow!("a scoring thread panicked"))?;
        let available = CScore::available(loaded.net.config.heads);
        rules.retain(|r| available.contains(r));
        members.push(lists.iter().map(|(_, t)| loaded.logits(t)).collect());
    }
    Ok(rules
        .into_iter()
        .map(|rule| {
            let scores: Vec<Vec<f32>> = (0..lists.len())
                .map(|i| {
                    let mut total = vec![0f32; lists[i].1.len()];
                    for logits in &members {
                        ansel_model::add_standardised(&mut total, &rule.scores(&logits[i]));
                    }
                    total
                })
                .collect();
            (rule, ansel_eval::semeval_scores(&questions, &scores))
        })
        .collect())
}

#[cfg(test)]
mod tests;
