//! RoBERTa and XLM-RoBERTa (the bge-reranker family): BERT's post-LayerNorm layers under BERT's
//! names (checkpoint prefix `roberta.` for both), RoBERTa-style position ids (after the padding
//! id), a token-type table of `type_vocab_size` rows (1) that every token reads row 0 of, and
//! the `<s> A </s></s> B </s>` pair layout. The classification head is
//! `classifier.dense` + tanh + `classifier.out_proj` on `<s>`, the same computation as BERT's
//! pooler + classifier, so it maps onto the canonical `pooler.dense` and `classifier` (as MPNet's).

use super::{EncoderFamily, PairLayout};
use crate::BertConfig;

/// One of the two model types that share RoBERTa's architecture and checkpoint names.
pub struct Roberta {
    model_type: &'static str,
}

/// `model_type: "roberta"`.
pub const ROBERTA: Roberta = Roberta {
    model_type: "roberta",
};

/// `model_type: "xlm-roberta"`.
pub const XLM_ROBERTA: Roberta = Roberta {
    model_type: "xlm-roberta",
};

impl EncoderFamily for Roberta {
    fn model_type(&self) -> &'static str {
        self.model_type
    }

    fn checkpoint_prefix(&self) -> &'static str {
        "roberta"
    }

    fn checkpoint_names(&self, canonical: &str) -> Vec<String> {
        if let Some(rest) = canonical.strip_prefix("pooler.dense.") {
            // A classification checkpoint's head first, else RobertaModel's pooler.
            return vec![format!("classifier.dense.{rest}"), canonical.to_string()];
        }
        if let Some(rest) = canonical.strip_prefix("classifier.") {
            return vec![format!("classifier.out_proj.{rest}")];
        }
        vec![canonical.to_string()]
    }

    fn saved_name(&self, canonical: &str) -> String {
        if let Some(rest) = canonical.strip_prefix("pooler.dense.") {
            return format!("classifier.dense.{rest}");
        }
        if let Some(rest) = canonical.strip_prefix("classifier.") {
            return format!("classifier.out_proj.{rest}");
        }
        format!("roberta.{canonical}")
    }

    fn token_types(&self) -> bool {
        true
    }

    fn first_position(&self, config: &BertConfig) -> i64 {
        config.pad_token_id.unwrap_or(1) + 1
    }

    fn relative_buckets(&self, _config: &BertConfig) -> Option<i64> {
        None
    }

    fn layout(&self) -> PairLayout {
        PairLayout::Roberta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_both_ways() {
        for family in [ROBERTA, XLM_ROBERTA] {
            assert_eq!(family.checkpoint_prefix(), "roberta");
            assert_eq!(
                family.checkpoint_names("encoder.layer.1.attention.self.key.weight"),
                vec!["encoder.layer.1.attention.self.key.weight"]
            );
            assert_eq!(
                family.checkpoint_names("pooler.dense.bias"),
                vec!["classifier.dense.bias", "pooler.dense.bias"]
            );
            assert_eq!(
                family.checkpoint_names("classifier.weight"),
                vec!["classifier.out_proj.weight"]
            );
            assert_eq!(
                family.saved_name("embeddings.token_type_embeddings.weight"),
                "roberta.embeddings.token_type_embeddings.weight"
            );
            assert_eq!(
                family.saved_name("pooler.dense.weight"),
                "classifier.dense.weight"
            );
            assert_eq!(
                family.saved_name("classifier.bias"),
                "classifier.out_proj.bias"
            );
        }
    }

    #[test]
    fn positions_start_after_the_padding_id() {
        let mut config = BertConfig::tiny(10);
        config.model_type = Some("xlm-roberta".into());
        assert_eq!(XLM_ROBERTA.first_position(&config), 2);
        config.pad_token_id = Some(4);
        assert_eq!(ROBERTA.first_position(&config), 5);
        assert_eq!(
            crate::family::of(&config).unwrap().model_type(),
            "xlm-roberta"
        );
    }
}
