//! CASSIE's shared steps of training (`ansel train --model cassie`) and of the ablation bench
//! (`ansel-lab cassie-bench`): encoding the splits once, with an on-disk cache.

use ansel_cassie::{PairEncoder, SplitFeatures};
use ansel_data::Question;
use ansel_model::ModelCard;
use anyhow::{Context, Result};
use std::path::Path;

/// The questions with at least one answer (CASSIE trains and evaluates on those).
pub fn answered(questions: Vec<Question>) -> Vec<Question> {
    questions
        .into_iter()
        .filter(|q| q.positives() > 0)
        .collect()
}

/// Names the base encoder's weights in feature caches: its path, and its seed and training
/// time when it was trained here, so that features of a retrained base are not reused.
fn base_key(base: &Path) -> String {
    let card = ModelCard::read(base).ok();
    let trained = card
        .as_ref()
        .and_then(|c| c.training.as_ref())
        .map(|t| format!("{}:{:.6}", t.seed, t.train_seconds))
        .unwrap_or_default();
    format!("{}|{trained}", base.display())
}

/// Encodes (or reads from `cache/<name>`) every split.
pub fn encode_splits(
    encoder: &PairEncoder,
    base: &Path,
    cache: Option<&Path>,
    sets: Vec<(&str, Vec<Question>)>,
) -> Result<Vec<SplitFeatures>> {
    let key = base_key(base);
    sets.into_iter()
        .map(|(name, qs)| {
            let dir = cache.map(|c| c.join(name));
            SplitFeatures::build(encoder, qs, dir.as_deref(), &key, name)
                .with_context(|| format!("cannot encode the {name} split"))
        })
        .collect()
}

/// The machine a timing was taken on, for training records.
pub fn machine() -> String {
    format!(
        "{}-core {} CPU, libtorch (tch 0.26)",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        std::env::consts::ARCH
    )
}
