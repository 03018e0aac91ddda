//! Encoder families: what sets a BERT-shaped transformer of one family apart from another.
//!
//! Every family runs the same post-LayerNorm encoder ([`crate::CrossEncoder`]); a family says
//! how its checkpoints name the parameters, how positions are numbered, whether it has
//! token types or a relative position bias, and how its tokenizer lays out a pair. A new
//! family (ELECTRA, DeBERTa) is one module here implementing [`EncoderFamily`] and one
//! line in [`of`]; training, serving and ONNX export read it through the trait.

pub mod bert;
pub mod mpnet;
pub mod roberta;

use crate::BertConfig;

/// How special tokens frame a question and its segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairLayout {
    /// `[CLS] q [SEP] s1 [SEP] ...`; token type 0 for the question, then the segments' own.
    Bert,
    /// `<s> q </s></s> s1 </s> ...` (RoBERTa, XLM-RoBERTa, MPNet): every token of type 0, as
    /// RoBERTa's tokenizers give them (MPNet has no token types at all).
    Roberta,
}

/// One family of BERT-shaped encoders. Parameters are known inside ansel by canonical names,
/// BERT's Hugging Face names without the `bert.` prefix (`encoder.layer.0.attention.self.query.weight`,
/// `pooler.dense.weight`, `classifier.weight`); a family maps them to its checkpoints' names.
pub trait EncoderFamily: Sync {
    /// `model_type` in `config.json`.
    fn model_type(&self) -> &'static str;
    /// The prefix of the encoder's parameters in a checkpoint (`bert`, `mpnet`; XLM-RoBERTa's
    /// are under `roberta`), stripped before [`EncoderFamily::checkpoint_names`] applies.
    fn checkpoint_prefix(&self) -> &'static str {
        self.model_type()
    }
    /// The names a checkpoint of this family may store a canonical parameter under, the
    /// first found wins (prefixes such as `bert.` are already stripped).
    fn checkpoint_names(&self, canonical: &str) -> Vec<String>;
    /// The name a parameter is saved under, as transformers' `*ForSequenceClassification`
    /// of the family names it (so that `transformers` loads ansel's models too).
    fn saved_name(&self, canonical: &str) -> String;
    /// Whether the embeddings add a token-type (segment) table.
    fn token_types(&self) -> bool;
    /// Position id of the first token (BERT 0; RoBERTa-style: the padding id + 1).
    fn first_position(&self, config: &BertConfig) -> i64;
    /// Buckets of a relative position bias added to every layer's attention scores (MPNet).
    fn relative_buckets(&self, config: &BertConfig) -> Option<i64>;
    /// The tokenizer's pair layout.
    fn layout(&self) -> PairLayout;
    /// What the config must hold beyond BERT's fields.
    fn check(&self, _config: &BertConfig) -> Result<(), String> {
        Ok(())
    }
}

/// The family `config.model_type` names (absent: BERT).
pub fn of(config: &BertConfig) -> Result<&'static dyn EncoderFamily, String> {
    let family: &'static dyn EncoderFamily = match config.model_type.as_deref() {
        None | Some("bert") => &bert::Bert,
        Some("mpnet") => &mpnet::Mpnet,
        Some("roberta") => &roberta::ROBERTA,
        Some("xlm-roberta") => &roberta::XLM_ROBERTA,
        Some(other) => {
            return Err(format!(
                "field `model_type`: {other:?} is not supported \
                 (\"bert\", \"mpnet\", \"roberta\", \"xlm-roberta\")"
            ))
        }
    };
    family.check(config)?;
    Ok(family)
}

/// The token-type (segment) embedding table's parameter name.
pub(crate) const TOKEN_TYPES: &str = "embeddings.token_type_embeddings.weight";

/// The relative position bias table's parameter name (MPNet).
pub(crate) const RELATIVE_BIAS: &str = "encoder.relative_attention_bias.weight";

/// Every canonical parameter name and shape of a cross-encoder with `config` (the family's
/// token-type table and relative bias included when it has them).
pub fn parameter_shapes(c: &BertConfig) -> Vec<(String, Vec<i64>)> {
    let family = c.family();
    let h = c.hidden_size;
    let mut v: Vec<(String, Vec<i64>)> = vec![
        (
            "embeddings.word_embeddings.weight".into(),
            vec![c.vocab_size, h],
        ),
        (
            "embeddings.position_embeddings.weight".into(),
            vec![c.max_position_embeddings, h],
        ),
    ];
    if family.token_types() {
        v.push((TOKEN_TYPES.into(), vec![c.type_vocab_size, h]));
    }
    v.push(("embeddings.LayerNorm.weight".into(), vec![h]));
    v.push(("embeddings.LayerNorm.bias".into(), vec![h]));
    if let Some(buckets) = family.relative_buckets(c) {
        v.push((RELATIVE_BIAS.into(), vec![buckets, c.num_attention_heads]));
    }
    for i in 0..c.num_hidden_layers {
        let p = format!("encoder.layer.{i}");
        for (name, out, inp) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", c.intermediate_size, h),
            ("output.dense", h, c.intermediate_size),
        ] {
            v.push((format!("{p}.{name}.weight"), vec![out, inp]));
            v.push((format!("{p}.{name}.bias"), vec![out]));
        }
        for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
            v.push((format!("{p}.{name}.weight"), vec![h]));
            v.push((format!("{p}.{name}.bias"), vec![h]));
        }
    }
    v.push(("pooler.dense.weight".into(), vec![h, h]));
    v.push(("pooler.dense.bias".into(), vec![h]));
    v.push(("classifier.weight".into(), vec![1, h]));
    v.push(("classifier.bias".into(), vec![1]));
    v
}
