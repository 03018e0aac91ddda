//! Loading EQAG model directories: the base ranker goes through the same resolver, optionally
//! reading cached base scores (experiments), and node-feature rankers are the corpus-free
//! lexical ones.

use ansel_graph::{CachedRanker, EqagRanker, ScoreCache};
use ansel_model::{ModelCard, Ranker};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Environment variable: comma-separated `ansel rank` outputs of an EQAG model's base ranker;
/// questions found there are not re-scored (experiments only; unset, the base scores live).
pub const BASE_CACHE_ENV: &str = "ANSEL_EQAG_BASE_CACHE";

/// Environment variable: a bi-encoder vector cache file (`--vector-cache`) for batch scoring.
pub const VECTOR_CACHE_ENV: &str = "ANSEL_EQAG_VECTOR_CACHE";

/// Environment variable: a `[CLS]`-state cache file (`--cls-cache`) for batch scoring of
/// `cls-vec` models.
pub const CLS_CACHE_ENV: &str = "ANSEL_EQAG_CLS_CACHE";

/// The base ranker named by `spec`, reading cached scores from `caches` first.
pub fn base_ranker(spec: &str, caches: &[PathBuf]) -> Result<Box<dyn Ranker>> {
    let base = super::resolve(spec, &[])?;
    if caches.is_empty() {
        return Ok(base);
    }
    let mut read = Vec::new();
    for path in caches {
        let cache = ScoreCache::read(path)?;
        if !scores_stand_for(&cache.model, spec) {
            bail!(
                "{}: scores of {:?}, neither the base {:?} nor an fp32 export of it",
                path.display(),
                cache.model,
                spec
            );
        }
        read.push(cache);
    }
    Ok(Box::new(CachedRanker::new(base, read)))
}

/// Whether scores cached from the model `cached` (as `ansel rank` named it) stand for the
/// base `spec`'s: the same name, the same directory, or an ONNX Runtime fp32 export of that
/// directory (`ansel quantize --precision fp32`; int8 exports change scores and are refused).
fn scores_stand_for(cached: &str, spec: &str) -> bool {
    let dir = |p: &Path| p.canonicalize().ok();
    let spec_dir = dir(Path::new(spec));
    let same_dir = |p: &Path| spec_dir.is_some() && dir(p) == spec_dir;
    cached == spec
        || same_dir(Path::new(cached))
        || ansel_onnx::fp32_source(Path::new(cached)).is_some_and(|src| same_dir(&src))
}

/// Lexical rankers usable as node features: those without corpus statistics (`idf-wo` and
/// `bm25` would take their IDF from whatever data is being scored, so a stored model could
/// not reproduce its own features).
const NODE_RANKERS: [&str; 3] = ["wo", "wo-rr", "rr"];

/// Resolves one extra node feature ranker by name.
pub fn node_ranker(name: &str) -> ansel_model::Result<Box<dyn Ranker>> {
    if !NODE_RANKERS.contains(&name) {
        return Err(ansel_model::ModelError::Unsupported {
            model: ansel_graph::KIND.into(),
            message: format!(
                "unknown node feature {name:?} (known: base, cos, pair-vec, pair-vec:N, cls-vec, cls-vec:N, {})",
                NODE_RANKERS.join(", ")
            ),
        });
    }
    super::resolve(name, &[]).map_err(|e| ansel_model::ModelError::Backend(crate::describe(&e)))
}

/// Loads an EQAG model directory; its base ranker goes through the same model resolver.
pub fn load(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    let spec = EqagRanker::base_spec(dir, card)?;
    let caches: Vec<PathBuf> = std::env::var(BASE_CACHE_ENV)
        .ok()
        .map(|v| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    let base = base_ranker(&spec, &caches).with_context(|| format!("base ranker {spec}"))?;
    let mut ranker = EqagRanker::load(dir, card, base, node_ranker)?;
    ranker.vector_cache = env_path(VECTOR_CACHE_ENV);
    ranker.set_cls_cache(env_path(CLS_CACHE_ENV));
    Ok(Box::new(ranker))
}

/// A file named by the environment variable `name` (unset or empty: none).
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::scores_stand_for;
    use ansel_model::ModelCard;
    use std::path::Path;

    /// A card-only ONNX export directory of `source` at `precision`.
    fn export(dir: &Path, source: &Path, precision: &str) -> String {
        let config = serde_json::json!({
            "input": "pair", "max_len": 32, "batch_size": 2, "precision": precision,
            "scheme": "test", "source": source.display().to_string(), "source_name": "base",
            "opset": 17,
        });
        ModelCard::new(ansel_onnx::KIND, "export", config)
            .write(dir)
            .unwrap();
        dir.display().to_string()
    }

    #[test]
    fn cached_scores_stand_for_the_base_or_its_fp32_export_only() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("base");
        let other = tmp.path().join("other");
        for d in ["base", "other", "fp32", "int8", "fp32-of-other"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        let spec = base.display().to_string();
        let fp32 = export(&tmp.path().join("fp32"), &base, "fp32");
        let int8 = export(&tmp.path().join("int8"), &base, "int8");
        let fp32_other = export(&tmp.path().join("fp32-of-other"), &other, "fp32");
        assert!(scores_stand_for(&spec, &spec));
        // The same directory by another spelling.
        let dotted = tmp.path().join("base/../base").display().to_string();
        assert!(scores_stand_for(&dotted, &spec));
        assert!(scores_stand_for(&fp32, &spec));
        assert!(!scores_stand_for(&int8, &spec));
        assert!(!scores_stand_for(&fp32_other, &spec));
        assert!(!scores_stand_for(&other.display().to_string(), &spec));
        // Built-in names: equal names only (two paths that do not exist are not the same).
        assert!(scores_stand_for("wo", "wo"));
        assert!(!scores_stand_for("wo", "bm25"));
        assert!(!scores_stand_for(&fp32, "wo"));
    }
}
