use crate::{write_atomic, ModelError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The file in a model directory that says what the model is and how it was made.
pub const CARD_FILE: &str = "model.json";

/// What a model directory holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCard {
    /// The model family; the CLI picks the loader by it (e.g. "cosinenet", "cross-encoder").
    pub kind: String,
    /// A human name for reports.
    pub name: String,
    /// Version of ansel that wrote the model.
    pub ansel_version: String,
    /// Family-specific settings the loader needs (architecture, vocabulary size, ...).
    #[serde(default)]
    pub config: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingRecord>,
}

/// How a model was trained: enough to reproduce it and to judge it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TrainingRecord {
    /// Training data files, in the order used (e.g. transfer then adapt).
    pub train_data: Vec<String>,
    pub dev_data: Option<String>,
    pub hyperparameters: serde_json::Value,
    pub seed: u64,
    pub epochs_completed: usize,
    /// Epoch whose weights were kept (early stopping on dev MAP).
    pub best_epoch: Option<usize>,
    /// Metrics of the kept weights, e.g. {"dev MAP": 0.71}.
    pub metrics: BTreeMap<String, f64>,
    pub train_seconds: f64,
    /// Where the training ran, e.g. "2-core x86_64 CPU".
    #[serde(default)]
    pub machine: String,
    /// The base model or models this one was initialised from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base: Vec<String>,
}

impl ModelCard {
    pub fn new(kind: &str, name: &str, config: serde_json::Value) -> Self {
        ModelCard {
            kind: kind.to_string(),
            name: name.to_string(),
            ansel_version: env!("CARGO_PKG_VERSION").to_string(),
            config,
            training: None,
        }
    }

    /// Reads `model.json` from a model directory.
    pub fn read(dir: &Path) -> Result<ModelCard> {
        let path = dir.join(CARD_FILE);
        let bytes = std::fs::read(&path).map_err(|e| ModelError::io(&path, e))?;
        // Syntax first (serde's message ends with the line and column), then the fields, whose
        // errors name the field at fault (`field `training.seed`: invalid type ...`).
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
                path: path.clone(),
                message: e.to_string(),
            })?;
        crate::json::from_value(value, "").map_err(|message| ModelError::Format { path, message })
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).expect("a card always serializes");
        write_atomic(&dir.join(CARD_FILE), &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_round_trips_and_bad_cards_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut card = ModelCard::new("cosinenet", "demo", serde_json::json!({"dim": 50}));
        card.training = Some(TrainingRecord {
            seed: 7,
            train_data: vec!["train.tsv".into()],
            ..Default::default()
        });
        card.write(dir.path()).unwrap();
        assert_eq!(ModelCard::read(dir.path()).unwrap(), card);
        std::fs::write(dir.path().join(CARD_FILE), "{\"kind\": 3}").unwrap();
        let err = ModelCard::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("model.json") && err.contains("field `kind`: invalid type: integer `3`"),
            "{err}"
        );
        std::fs::write(dir.path().join(CARD_FILE), "{\n\"kind\": \"x\",\n").unwrap();
        let err = ModelCard::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("model.json") && err.contains("line 3"),
            "{err}"
        );
        let mut value = serde_json::to_value(&card).unwrap();
        value["training"]["seed"] = serde_json::json!("seven");
        std::fs::write(dir.path().join(CARD_FILE), value.to_string()).unwrap();
        let err = ModelCard::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("model.json") && err.contains("field `training.seed`: invalid type"),
            "{err}"
        );
    }
}
