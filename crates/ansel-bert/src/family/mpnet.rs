//! MPNet (Song et al. 2020; all-mpnet-base-v2): BERT's post-LayerNorm layers with attention
//! weights named `attn.q/k/v/o`, no token types, RoBERTa-style position ids (after the padding
//! id) and a T5-style relative position bias shared by all layers. The classification head is
//! RoBERTa's (`classifier.dense` + tanh + `classifier.out_proj` on `<s>`), the same computation
//! as BERT's pooler + classifier, so it maps onto the canonical `pooler.dense` and `classifier`.

use super::{EncoderFamily, PairLayout};
use crate::BertConfig;

pub struct Mpnet;

/// Canonical (BERT) name parts and MPNet's.
const RENAMES: [(&str, &str); 5] = [
    ("attention.self.query", "attention.attn.q"),
    ("attention.self.key", "attention.attn.k"),
    ("attention.self.value", "attention.attn.v"),
    ("attention.output.dense", "attention.attn.o"),
    ("attention.output.LayerNorm", "attention.LayerNorm"),
];

fn renamed(canonical: &str) -> String {
    RENAMES
        .iter()
        .find(|(ours, _)| canonical.contains(ours))
        .map_or_else(
            || canonical.to_string(),
            |(ours, theirs)| canonical.replace(ours, theirs),
        )
}

impl EncoderFamily for Mpnet {
    fn model_type(&self) -> &'static str {
        "mpnet"
    }

    fn checkpoint_names(&self, canonical: &str) -> Vec<String> {
        if let Some(rest) = canonical.strip_prefix("pooler.dense.") {
            // A classification checkpoint's head first, else MPNetModel's pooler.
            return vec![format!("classifier.dense.{rest}"), canonical.to_string()];
        }
        if let Some(rest) = canonical.strip_prefix("classifier.") {
            return vec![format!("classifier.out_proj.{rest}")];
        }
        vec![renamed(canonical)]
    }

    fn saved_name(&self, canonical: &str) -> String {
        if let Some(rest) = canonical.strip_prefix("pooler.dense.") {
            return format!("classifier.dense.{rest}");
        }
        if let Some(rest) = canonical.strip_prefix("classifier.") {
            return format!("classifier.out_proj.{rest}");
        }
        format!("mpnet.{}", renamed(canonical))
    }

    fn token_types(&self) -> bool {
        false
    }

    fn first_position(&self, config: &BertConfig) -> i64 {
        config.pad_token_id.unwrap_or(1) + 1
    }

    fn relative_buckets(&self, config: &BertConfig) -> Option<i64> {
        Some(config.relative_attention_num_buckets.unwrap_or(32))
    }

    fn layout(&self) -> PairLayout {
        PairLayout::Roberta
    }

    fn check(&self, config: &BertConfig) -> Result<(), String> {
        match config.relative_attention_num_buckets {
            Some(b) if b < 4 || b % 4 != 0 => Err(format!(
                "field `relative_attention_num_buckets`: {b} is not a positive multiple of 4"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_both_ways() {
        let m = Mpnet;
        assert_eq!(
            m.checkpoint_names("encoder.layer.3.attention.self.key.weight"),
            vec!["encoder.layer.3.attention.attn.k.weight"]
        );
        assert_eq!(
            m.checkpoint_names("encoder.layer.3.attention.output.LayerNorm.bias"),
            vec!["encoder.layer.3.attention.LayerNorm.bias"]
        );
        assert_eq!(
            m.checkpoint_names("encoder.layer.3.output.LayerNorm.bias"),
            vec!["encoder.layer.3.output.LayerNorm.bias"]
        );
        assert_eq!(
            m.checkpoint_names("pooler.dense.weight"),
            vec!["classifier.dense.weight", "pooler.dense.weight"]
        );
        assert_eq!(m.saved_name("classifier.bias"), "classifier.out_proj.bias");
        assert_eq!(
            m.saved_name("encoder.layer.0.attention.self.query.weight"),
            "mpnet.encoder.layer.0.attention.attn.q.weight"
        );
    }
}
