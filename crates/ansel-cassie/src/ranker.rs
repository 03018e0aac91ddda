//! A CASSIE model directory: `model.json` (kind `cassie`, the base encoder as a path relative
//! to the directory), `head.safetensors` (head weights only), `word-mass.json`.

use crate::features::{PairEncoder, WordMass};
use crate::head::{Head, HeadConfig};
use crate::ot::OtOptions;
use crate::split::SplitFeatures;
use crate::train::Prepared;
use ansel_data::Question;
use ansel_model::{ModelCard, ModelError, Ranker, Result};
use ansel_torch::tch::{nn, Device};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

pub const HEAD_FILE: &str = "head.safetensors";

/// `config` of a CASSIE card.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CassieSettings {
    /// The frozen cross-encoder, relative to the model directory (or absolute).
    pub base: String,
    pub max_len: usize,
    pub head: HeadConfig,
    pub ot: OtOptions,
}

struct Inner {
    encoder: PairEncoder,
    head: Head,
    _vs: nn::VarStore,
}

/// A trained CASSIE head on its frozen base encoder, as a [`Ranker`].
pub struct CassieRanker {
    name: String,
    settings: CassieSettings,
    mass: WordMass,
    inner: Mutex<Inner>,
}

/// One sentence's alignment: each question word with the sentence word it sends most of
/// its mass to, and that share.
#[derive(Debug, Clone, Serialize)]
pub struct SentenceAlignment {
    pub role: &'static str,
    pub text: String,
    pub transport_cost: f32,
    pub links: Vec<(String, String, f32)>,
}

/// Why a candidate got its score.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub candidate: usize,
    pub score: f32,
    pub sentences: Vec<SentenceAlignment>,
}

impl CassieRanker {
    pub fn load(dir: &Path, card: &ModelCard) -> Result<CassieRanker> {
        let card_path = dir.join(ansel_model::CARD_FILE);
        let settings: CassieSettings = ansel_model::json::from_value(card.config.clone(), "config")
            .map_err(|message| ModelError::Format {
                path: card_path.clone(),
                message,
            })?;
        let base = dir.join(&settings.base);
        if !base.join("model.safetensors").is_file() {
            return Err(ModelError::Format {
                path: card_path,
                message: format!(
                    "field `config.base`: base encoder {} (resolved to {}) has no model.safetensors",
                    settings.base,
                    base.display()
                ),
            });
        }
        let encoder = PairEncoder::load(&base, settings.max_len)?;
        let mass = WordMass::read(&dir.join(WordMass::FILE))?;
        let mut vs = nn::VarStore::new(Device::Cpu);
        let head = Head::new(&vs.root(), settings.head.clone());
        ansel_torch::load_vars(&mut vs, &dir.join(HEAD_FILE))?;
        Ok(CassieRanker {
            name: card.name.clone(),
            settings,
            mass,
            inner: Mutex::new(Inner {
                encoder,
                head,
                _vs: vs,
            }),
        })
    }

    fn prepare(&self, inner: &Inner, questions: &[Question]) -> Result<(SplitFeatures, Prepared)> {
        let split = SplitFeatures::build(&inner.encoder, questions.to_vec(), None, "", "")?;
        let prepared = Prepared::new(&split, &self.mass, &self.settings.ot);
        Ok((split, prepared))
    }

    /// Scores `question` and explains its `top` best candidates from the transport plans.
    pub fn explain(&self, question: &Question, top: usize) -> Result<Vec<Explanation>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (split, prepared) = self.prepare(&inner, std::slice::from_ref(question))?;
        let scores = prepared.score(&inner.head).remove(0);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| ansel_model::best_first(scores[a], scores[b]));
        let costs: Vec<f32> = Vec::try_from(&prepared.alignment.ot_cost).unwrap_or_default();
        let pairs = &split.pairs;
        Ok(order
            .into_iter()
            .take(top)
            .map(|cand| {
                let sentences = ["candidate", "previous", "next"]
                    .iter()
                    .enumerate()
                    .filter_map(|(slot, role)| {
                        let p = split.node(0, cand, slot)?;
                        let links = pairs.q_words[p]
                            .iter()
                            .zip(&prepared.alignment.aligned[p])
                            .map(|(qw, &(j, share))| {
                                (
                                    qw.clone(),
                                    pairs.s_words[p].get(j).cloned().unwrap_or_default(),
                                    share,
                                )
                            })
                            .collect();
                        Some(SentenceAlignment {
                            role,
                            text: split.graphs[0].sentences[p - split.offsets[0]].clone(),
                            transport_cost: costs.get(p).copied().unwrap_or(0.0),
                            links,
                        })
                    })
                    .collect();
                Explanation {
                    candidate: cand,
                    score: scores[cand],
                    sentences,
                }
            })
            .collect())
    }
}

impl Ranker for CassieRanker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (_, prepared) = self.prepare(&inner, questions)?;
        Ok(prepared.score(&inner.head))
    }
}

/// `target` relative to directory `from` (both made absolute first), e.g. the base encoder
/// as seen from a new model directory: `models/minilm-l6-wikiqa` from `models/cassie` is
/// `../minilm-l6-wikiqa`.
pub fn relative_to(target: &Path, from: &Path) -> Result<PathBuf> {
    let absolute = |p: &Path| -> Result<PathBuf> {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| ModelError::io(".", e))?
                .join(p)
        };
        // Lexical normalisation (`from` may not exist yet).
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        Ok(out)
    };
    let (t, f) = (absolute(target)?, absolute(from)?);
    let tc: Vec<Component> = t.components().collect();
    let fc: Vec<Component> = f.components().collect();
    let common = tc.iter().zip(&fc).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..fc.len() {
        rel.push("..");
    }
    for c in &tc[common..] {
        rel.push(c);
    }
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_model_directories() {
        assert_eq!(
            relative_to(Path::new("/w/models/base"), Path::new("/w/models/cassie")).unwrap(),
            PathBuf::from("../base")
        );
        assert_eq!(
            relative_to(
                Path::new("/w/models/base"),
                Path::new("/w/runs/x/../../models/c")
            )
            .unwrap(),
            PathBuf::from("../base")
        );
        assert_eq!(
            relative_to(Path::new("/a/b"), Path::new("/c/d/e")).unwrap(),
            PathBuf::from("../../../a/b")
        );
    }
}
