use ansel_model::{ModelError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The parts of a Hugging Face BERT `config.json` the encoder needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    pub vocab_size: i64,
    pub hidden_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    pub intermediate_size: i64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f64,
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f64,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: i64,
    #[serde(default = "default_types")]
    pub type_vocab_size: i64,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub model_type: Option<String>,
    /// MPNet: buckets of the relative position bias shared by every layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_attention_num_buckets: Option<i64>,
    /// RoBERTa-style position ids start after this id (MPNet: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pad_token_id: Option<i64>,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_dropout() -> f64 {
    0.1
}
fn default_positions() -> i64 {
    512
}
fn default_types() -> i64 {
    2
}
fn default_eps() -> f64 {
    1e-12
}

impl BertConfig {
    /// Reads and checks `config.json`.
    pub fn read(path: &Path) -> Result<BertConfig> {
        let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
        let config: BertConfig =
            serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
                path: path.to_path_buf(),
                message: format!("line {}: {e}", e.line()),
            })?;
        config.check().map_err(|message| ModelError::Format {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(config)
    }

    /// Rejects configurations the encoder cannot run.
    pub fn check(&self) -> std::result::Result<(), String> {
        crate::family::of(self)?;
        if !matches!(self.hidden_act.as_str(), "gelu" | "gelu_new" | "relu") {
            return Err(format!(
                "field `hidden_act`: {:?} is not supported (gelu, gelu_new, relu)",
                self.hidden_act
            ));
        }
        let positive = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ];
        for (field, value) in positive {
            if value <= 0 {
                return Err(format!("field `{field}`: must be positive, found {value}"));
            }
        }
        if self.hidden_size % self.num_attention_heads != 0 {
            return Err(format!(
                "field `num_attention_heads`: {} does not divide hidden_size {}",
                self.num_attention_heads, self.hidden_size
            ));
        }
        Ok(())
    }

    /// A tiny configuration for tests.
    pub fn tiny(vocab_size: i64) -> BertConfig {
        BertConfig {
            vocab_size,
            hidden_size: 16,
            num_hidden_layers: 2,
            num_attention_heads: 2,
            intermediate_size: 32,
            hidden_act: "gelu".into(),
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            max_position_embeddings: 64,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            model_type: Some("bert".into()),
            relative_attention_num_buckets: None,
            pad_token_id: None,
        }
    }

    /// The encoder family `model_type` names (BERT when absent); [`BertConfig::check`] refuses
    /// the others, so this holds for every config read.
    pub fn family(&self) -> &'static dyn crate::EncoderFamily {
        crate::family::of(self).unwrap_or(&crate::family::bert::Bert)
    }
}
