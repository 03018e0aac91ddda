//! BERT (and MiniLM, a BERT-shaped model): the canonical names are BERT's own.

use super::{EncoderFamily, PairLayout};
use crate::BertConfig;

pub struct Bert;

impl EncoderFamily for Bert {
    fn model_type(&self) -> &'static str {
        "bert"
    }

    fn checkpoint_names(&self, canonical: &str) -> Vec<String> {
        vec![canonical.to_string()]
    }

    fn saved_name(&self, canonical: &str) -> String {
        if canonical.starts_with("classifier.") {
            canonical.to_string()
        } else {
            format!("bert.{canonical}")
        }
    }

    fn token_types(&self) -> bool {
        true
    }

    fn first_position(&self, _config: &BertConfig) -> i64 {
        0
    }

    fn relative_buckets(&self, _config: &BertConfig) -> Option<i64> {
        None
    }

    fn layout(&self) -> PairLayout {
        PairLayout::Bert
    }
}
