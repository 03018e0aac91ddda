//! Turns a `--model` argument (a built-in name or a model directory) into a ranker.

use ansel_data::Question;
use ansel_model::Ranker;
use anyhow::{anyhow, bail, Result};
use std::path::Path;

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

/// Resolves a model spec. `corpus` supplies term statistics to lexical models.
pub fn resolve(spec: &str, corpus: &[Question]) -> Result<Box<dyn Ranker>> {
    if let Some(ranker) = ansel_lexical::from_spec(spec, corpus).map_err(|e| anyhow!(e))? {
        return Ok(ranker);
    }
    if Path::new(spec).is_dir() {
        bail!("{spec}: model directories are not supported by this build (no model.json loader matches)");
    }
    bail!(
        "unknown model {spec:?}; built-in models: {}",
        ansel_lexical::NAMES.join(", ")
    )
}
