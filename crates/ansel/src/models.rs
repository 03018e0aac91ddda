//! Turns a `--model` argument (a built-in name or a model directory) into a ranker.
//!
//! A model directory holds a `model.json` card; its `kind` picks the loader in
//! [`LOADERS`]. A new trainable model family registers one line there.

use ansel_data::Question;
use ansel_model::{ModelCard, Ranker};
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

type Loader = fn(&Path, &ModelCard) -> Result<Box<dyn Ranker>>;

/// Model kinds that load from a directory, by the `kind` of their card.
const LOADERS: &[(&str, Loader)] = &[
    ("cosinenet", crate::commands::efficient::load),
    ("relcnn", crate::commands::efficient::load),
    ("compare-aggregate", crate::commands::efficient::load),
    (ansel_bert::KIND, load_cross_encoder),
    (ansel_graph::KIND, crate::commands::eqag::load),
];

/// The model that ranks the candidates of one document (`rank`): the best-ranking
/// model available that answers a 30-candidate question in under 200 ms
/// (docs/results/lexical-baselines.md).
pub const DEFAULT_MODEL: &str = "wo-rr";

/// The model that orders answers retrieved from many documents (`ask`, `serve`):
/// position in a document says little across documents, so IDF breaks ties
/// instead (docs/results/corpus-answers.md).
pub const DEFAULT_ASK_MODEL: &str = "idf-wo";

/// The cheap model that prunes retrieved sentences before the ask model reranks them.
pub const DEFAULT_PRUNE_MODEL: &str = "bm25";

fn load_cross_encoder(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_bert::CrossEncoderRanker::load(dir, card)?))
}

/// Resolves a model spec. `corpus` supplies term statistics to lexical models.
pub fn resolve(spec: &str, corpus: &[Question]) -> Result<Box<dyn Ranker>> {
    if let Some(ranker) = ansel_lexical::from_spec(spec, corpus).map_err(|e| anyhow!(e))? {
        return Ok(ranker);
    }
    let dir = Path::new(spec);
    if dir.is_dir() {
        let card =
            ModelCard::read(dir).with_context(|| format!("{spec} is not a model directory"))?;
        let (_, load) = LOADERS
            .iter()
            .find(|(kind, _)| *kind == card.kind)
            .ok_or_else(|| {
                let known: Vec<&str> = LOADERS.iter().map(|(k, _)| *k).collect();
                anyhow!(
                    "{spec}: unknown model kind {:?} (this build loads: {})",
                    card.kind,
                    known.join(", ")
                )
            })?;
        return load(dir, &card).with_context(|| format!("cannot load model {spec}"));
    }
    bail!(
        "unknown model {spec:?}; built-in models: {}, or a model directory",
        ansel_lexical::NAMES.join(", ")
    )
}
