pub use crate::family::parameter_shapes;
use crate::family::{RELATIVE_BIAS, TOKEN_TYPES};
use crate::{BertConfig, Encoded, EncoderFamily};
use ansel_model::{ModelError, Result};
use ansel_torch::tch::{self, Device, Kind, Tensor};
use std::collections::BTreeMap;
use std::path::Path;

/// A padded batch of encoded pairs: ids, segment ids and attention mask, all `[batch, len]`.
pub struct Batch {
    pub ids: Tensor,
    pub types: Tensor,
    pub mask: Tensor,
}

impl Batch {
    /// Pads `items` to the longest one (dynamic padding) with `pad`.
    pub fn new(items: &[&Encoded], pad: i64) -> Batch {
        Self::padded_to(items, pad, 1)
    }

    /// Pads `items` to the longest one or to `min_len`, whichever is longer.
    pub fn padded_to(items: &[&Encoded], pad: i64, min_len: usize) -> Batch {
        let len = items
            .iter()
            .map(|e| e.len())
            .max()
            .unwrap_or(1)
            .max(min_len);
        let n = items.len();
        let mut ids = vec![pad; n * len];
        let mut types = vec![0i64; n * len];
        let mut mask = vec![false; n * len];
        for (row, e) in items.iter().enumerate() {
            let at = row * len;
            ids[at..at + e.len()].copy_from_slice(&e.ids);
            types[at..at + e.len()].copy_from_slice(&e.types);
            mask[at..at + e.len()].iter_mut().for_each(|m| *m = true);
        }
        let shape = [n as i64, len as i64];
        Batch {
            ids: Tensor::from_slice(&ids).view(shape),
            types: Tensor::from_slice(&types).view(shape),
            mask: Tensor::from_slice(&mask).view(shape),
        }
    }
}

struct Linear {
    w: Tensor,
    b: Tensor,
}

impl Linear {
    fn forward(&self, xs: &Tensor) -> Tensor {
        xs.linear(&self.w, Some(&self.b))
    }
}

struct Norm {
    w: Tensor,
    b: Tensor,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    inter: Linear,
    out: Linear,
    out_norm: Norm,
}

/// A BERT-shaped encoder of any [`EncoderFamily`] with BERT's pooler and a one-logit
/// classification head on the pooled first token (Hugging Face `BertForSequenceClassification`
/// with `num_labels = 1`; for MPNet, `MPNetForSequenceClassification`'s head, the same computation).
///
/// Parameters carry canonical names, BERT's Hugging Face names (`embeddings.word_embeddings.weight`,
/// `encoder.layer.0.attention.self.query.weight`, ..., `pooler.dense.weight`,
/// `classifier.weight`); the family maps them to its checkpoints' names when loading and saving.
pub struct CrossEncoder {
    pub config: BertConfig,
    family: &'static dyn EncoderFamily,
    params: BTreeMap<String, Tensor>,
    word: Tensor,
    position: Tensor,
    token_type: Option<Tensor>,
    relative_bias: Option<Tensor>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    pooler: Linear,
    classifier: Linear,
}

/// Strips a checkpoint name's model prefix (`bert.`, `mpnet.`, `roberta.`, `model.`) and old gamma/beta names.
fn canonical_name(name: &str, family: &dyn EncoderFamily) -> String {
    let name = name
        .strip_prefix(family.checkpoint_prefix())
        .and_then(|n| n.strip_prefix('.'))
        .unwrap_or(name);
    let name = name.strip_prefix("model.").unwrap_or(name);
    name.replace("LayerNorm.gamma", "LayerNorm.weight")
        .replace("LayerNorm.beta", "LayerNorm.bias")
}

/// The tensors of the safetensors file `path` that hold a parameter of `config`'s model, under
/// their canonical names (the first of the family's checkpoint names found wins).
fn read_canonical(config: &BertConfig, path: &Path) -> Result<BTreeMap<String, Tensor>> {
    let file = Tensor::read_safetensors(path).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let family = config.family();
    let mut stored: BTreeMap<String, Tensor> = file
        .into_iter()
        .map(|(name, t)| (canonical_name(&name, family), t))
        .collect();
    Ok(parameter_shapes(config)
        .into_iter()
        .filter_map(|(name, _)| {
            let t = family
                .checkpoint_names(&name)
                .iter()
                .find_map(|n| stored.remove(n))?;
            Some((name, t))
        })
        .collect())
}

impl CrossEncoder {
    /// Randomly initialised weights (BERT's scheme: normal(0, 0.02), LayerNorm 1/0, biases 0).
    pub fn random(config: BertConfig) -> Result<CrossEncoder> {
        config.check().map_err(ModelError::Backend)?;
        let params = parameter_shapes(&config)
            .into_iter()
            .map(|(name, shape)| {
                let t = init_tensor(&name, &shape);
                (name, t)
            })
            .collect();
        Self::from_params(config, params)
    }

    /// Loads a Hugging Face `model.safetensors` (any float type). Encoder and pooler weights
    /// must all be there; a missing classifier head (e.g. a sentence-embedding model) is
    /// initialised randomly, and so is a missing pooler (reported in the returned list).
    pub fn load(config: BertConfig, weights: &Path) -> Result<(CrossEncoder, Vec<String>)> {
        config.check().map_err(|message| ModelError::Format {
            path: weights.to_path_buf(),
            message,
        })?;
        let mut found = read_canonical(&config, weights)?;
        let mut params = BTreeMap::new();
        let mut initialised = Vec::new();
        for (name, shape) in parameter_shapes(&config) {
            let tensor = match found.remove(&name) {
                Some(t) => {
                    if t.size() != shape {
                        return Err(ModelError::Format {
                            path: weights.to_path_buf(),
                            message: format!(
                                "tensor `{name}`: shape {:?}, config.json implies {shape:?}",
                                t.size()
                            ),
                        });
                    }
                    t.to_kind(Kind::Float).contiguous()
                }
                None if name.starts_with("classifier.") || name.starts_with("pooler.") => {
                    initialised.push(name.clone());
                    init_tensor(&name, &shape)
                }
                None => {
                    return Err(ModelError::Format {
                        path: weights.to_path_buf(),
                        message: format!("tensor `{name}` is missing"),
                    })
                }
            };
            params.insert(name, tensor);
        }
        Ok((Self::from_params(config, params)?, initialised))
    }

    /// Copies the weights saved in `path` (a checkpoint or model of this family, under any of
    /// the names [`EncoderFamily::checkpoint_names`] accepts) into this model's parameters.
    pub fn load_weights(&self, path: &Path) -> Result<()> {
        let found = read_canonical(&self.config, path)?;
        ansel_torch::copy_into(&self.params, &found, path)
    }

    fn from_params(config: BertConfig, params: BTreeMap<String, Tensor>) -> Result<CrossEncoder> {
        let get = |name: &str| -> Result<Tensor> {
            params
                .get(name)
                .map(|t| t.shallow_clone())
                .ok_or_else(|| ModelError::Backend(format!("parameter {name} missing")))
        };
        let lin = |prefix: &str| -> Result<Linear> {
            Ok(Linear {
                w: get(&format!("{prefix}.weight"))?,
                b: get(&format!("{prefix}.bias"))?,
            })
        };
        let norm = |prefix: &str| -> Result<Norm> {
            Ok(Norm {
                w: get(&format!("{prefix}.weight"))?,
                b: get(&format!("{prefix}.bias"))?,
            })
        };
        let mut layers = Vec::new();
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            layers.push(Layer {
                query: lin(&format!("{p}.attention.self.query"))?,
                key: lin(&format!("{p}.attention.self.key"))?,
                value: lin(&format!("{p}.attention.self.value"))?,
                attn_out: lin(&format!("{p}.attention.output.dense"))?,
                attn_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                inter: lin(&format!("{p}.intermediate.dense"))?,
                out: lin(&format!("{p}.output.dense"))?,
                out_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let family = config.family();
        Ok(CrossEncoder {
            family,
            word: get("embeddings.word_embeddings.weight")?,
            position: get("embeddings.position_embeddings.weight")?,
            token_type: family.token_types().then(|| get(TOKEN_TYPES)).transpose()?,
            relative_bias: family
                .relative_buckets(&config)
                .map(|_| get(RELATIVE_BIAS))
                .transpose()?,
            emb_norm: norm("embeddings.LayerNorm")?,
            layers,
            pooler: lin("pooler.dense")?,
            classifier: lin("classifier")?,
            params,
            config,
        })
    }

    /// Every parameter by its Hugging Face name (tensors share storage with the model).
    pub fn params(&self) -> &BTreeMap<String, Tensor> {
        &self.params
    }

    /// [`CrossEncoder::params`] as new handles on the same storage: an optimizer group, or
    /// the encoder's part of a bigger model's parameters.
    pub fn shared_params(&self) -> BTreeMap<String, Tensor> {
        self.params
            .iter()
            .map(|(n, t)| (n.clone(), t.shallow_clone()))
            .collect()
    }

    /// The encoder's family (BERT, MPNet, ...).
    pub fn family(&self) -> &'static dyn EncoderFamily {
        self.family
    }

    /// Grows the token-type table to `types` rows, each new row a copy of type 0's (the
    /// question's: a new segment starts as "more text beside the question" and learns its
    /// own embedding). Returns whether it grew; call before training starts. A family without
    /// token types cannot tell segments apart this way: an error.
    pub fn add_token_types(&mut self, types: i64) -> Result<bool> {
        let have = self.config.type_vocab_size;
        if types <= have {
            return Ok(false);
        }
        let Some(token_type) = &self.token_type else {
            return Err(ModelError::Backend(format!(
                "{} encoders have no token types: train without --context-segments",
                self.family.model_type()
            )));
        };
        let table = tch::no_grad(|| {
            let first = token_type.narrow(0, 0, 1);
            Tensor::cat(
                &[token_type.shallow_clone(), first.repeat([types - have, 1])],
                0,
            )
        });
        self.params
            .insert(TOKEN_TYPES.to_string(), table.shallow_clone());
        self.token_type = Some(table);
        self.config.type_vocab_size = types;
        Ok(true)
    }

    /// Switches gradient tracking of every parameter on or off.
    pub fn set_requires_grad(&mut self, on: bool) {
        for t in self.params.values_mut() {
            let _ = t.set_requires_grad(on);
        }
    }

    fn layer_norm(&self, xs: &Tensor, n: &Norm) -> Tensor {
        xs.layer_norm(
            [self.config.hidden_size],
            Some(&n.w),
            Some(&n.b),
            self.config.layer_norm_eps,
            true,
        )
    }

    fn act(&self, xs: &Tensor) -> Tensor {
        match self.config.hidden_act.as_str() {
            "relu" => xs.relu(),
            "gelu_new" => xs.gelu("tanh"),
            _ => xs.gelu("none"),
        }
    }

    /// Last hidden states `[batch, len, hidden]`. `train` switches dropout on.
    pub fn hidden_states(&self, batch: &Batch, train: bool) -> Tensor {
        let c = &self.config;
        let (n, len) = batch.ids.size2().expect("batch ids are 2-d");
        let hidden_p = if train { c.hidden_dropout_prob } else { 0.0 };
        let attn_p = if train {
            c.attention_probs_dropout_prob
        } else {
            0.0
        };
        let first = self.family.first_position(c);
        let mut emb = Tensor::embedding(&self.word, &batch.ids, -1, false, false);
        if first == 0 {
            let positions = Tensor::arange(len, (Kind::Int64, Device::Cpu));
            emb += Tensor::embedding(&self.position, &positions, -1, false, false).unsqueeze(0);
        } else {
            // RoBERTa-style: real tokens count up from `first`, padding sits at `first - 1`.
            let real = batch.mask.to_kind(Kind::Int64);
            let positions = real.cumsum(1, Kind::Int64) * &real + (first - 1);
            emb += Tensor::embedding(&self.position, &positions, -1, false, false);
        }
        if let Some(token_type) = &self.token_type {
            emb += Tensor::embedding(token_type, &batch.types, -1, false, false);
        }
        let mut x = self
            .layer_norm(&emb, &self.emb_norm)
            .dropout(hidden_p, train);
        let heads = c.num_attention_heads;
        let head_dim = c.hidden_size / heads;
        // [batch, 1, 1, len]: true where a key may be attended to; with a relative position
        // bias, the bias of each head [1, heads, len, len] plus -inf where a key is padding.
        let mut mask = batch.mask.view([n, 1, 1, len]);
        if let Some(table) = &self.relative_bias {
            let buckets = relative_buckets(len, table.size()[0]);
            let bias = Tensor::embedding(table, &buckets, -1, false, false)
                .permute([2, 0, 1])
                .unsqueeze(0);
            let blocked = Tensor::zeros([n, 1, 1, len], (Kind::Float, Device::Cpu))
                .masked_fill(&mask.logical_not(), f64::NEG_INFINITY);
            mask = bias + blocked;
        }
        for layer in &self.layers {
            let split = |t: Tensor| t.view([n, len, heads, head_dim]).transpose(1, 2);
            let q = split(layer.query.forward(&x));
            let k = split(layer.key.forward(&x));
            let v = split(layer.value.forward(&x));
            let ctx = Tensor::scaled_dot_product_attention(
                &q,
                &k,
                &v,
                Some(&mask),
                attn_p,
                false,
                None,
                false,
            )
            .transpose(1, 2)
            .contiguous()
            .view([n, len, c.hidden_size]);
            let a = layer.attn_out.forward(&ctx).dropout(hidden_p, train);
            x = self.layer_norm(&(a + &x), &layer.attn_norm);
            let h = self.act(&layer.inter.forward(&x));
            let h = layer.out.forward(&h).dropout(hidden_p, train);
            x = self.layer_norm(&(h + &x), &layer.out_norm);
        }
        x
    }

    /// One logit per pair `[batch]`: pooler (tanh of a dense layer on `[CLS]`), dropout, head.
    pub fn logits(&self, batch: &Batch, train: bool) -> Tensor {
        let hidden = self.hidden_states(batch, train);
        let cls = hidden.select(1, 0);
        let pooled = self.pooler.forward(&cls).tanh();
        let p = if train {
            self.config.hidden_dropout_prob
        } else {
            0.0
        };
        self.classifier
            .forward(&pooled.dropout(p, train))
            .squeeze_dim(-1)
    }

    /// Last hidden states `[batch, len, hidden]`, pooled `[CLS]` `[batch, hidden]` and logits
    /// `[batch]` from one forward pass (features for heads on the encoder, e.g. CASSIE);
    /// `train` switches the encoder's dropout on (fine-tuning the encoder with its head).
    pub fn hidden_pooled_logits(&self, batch: &Batch, train: bool) -> (Tensor, Tensor, Tensor) {
        let hidden = self.hidden_states(batch, train);
        let pooled = self.pooler.forward(&hidden.select(1, 0)).tanh();
        let logits = self.classifier.forward(&pooled).squeeze_dim(-1);
        (hidden, pooled, logits)
    }

    /// Mean of the last hidden states over real tokens (sentence-transformers pooling); for checks.
    pub fn mean_pooled(&self, batch: &Batch) -> Tensor {
        self.mean_pool(batch, false)
    }

    /// Mean pooling `[batch, hidden]` with dropout when `train`: the sentence vector of the
    /// bi-encoder (the same forward pass as [`CrossEncoder::hidden_states`]).
    pub fn mean_pool(&self, batch: &Batch, train: bool) -> Tensor {
        let hidden = self.hidden_states(batch, train);
        let mask = batch.mask.to_kind(Kind::Float).unsqueeze(-1);
        (hidden * &mask).sum_dim_intlist(1, false, Kind::Float)
            / mask.sum_dim_intlist(1, false, Kind::Float).clamp_min(1e-9)
    }

    /// Saves every parameter (atomically) in `kind` (Float or Half) with the names of Hugging
    /// Face's `*ForSequenceClassification` of the family (BERT: `bert.` + encoder names,
    /// `classifier.*`), so that `transformers` loads the directory too.
    pub fn save(&self, path: &Path, kind: Kind) -> Result<()> {
        let tensors: Vec<(String, Tensor)> = tch::no_grad(|| {
            self.params
                .iter()
                .map(|(n, t)| {
                    let name = self.family.saved_name(n);
                    (name, t.detach().to_kind(kind).contiguous())
                })
                .collect()
        });
        write_tensors(path, &tensors)
    }
}

pub(crate) use ansel_torch::write_tensors;

/// The relative position bucket of every (query, key) pair of a `len`-token input `[len, len]`,
/// T5's bidirectional scheme as MPNet uses it (max distance 128): half the buckets for keys
/// after the query, exact distances below a quarter of the buckets, log-spaced beyond.
/// Computed with the same tensor operations as the reference so that buckets match exactly.
pub fn relative_buckets(len: i64, buckets: i64) -> Tensor {
    let opts = (Kind::Int64, Device::Cpu);
    let positions = Tensor::arange(len, opts);
    let relative = positions.unsqueeze(0) - positions.unsqueeze(1);
    let n = -relative;
    let half = buckets / 2;
    let ret = n.lt(0).to_kind(Kind::Int64) * half;
    let n = n.abs();
    let max_exact = half / 2;
    let is_small = n.lt(max_exact);
    let large = ((n.to_kind(Kind::Float) / max_exact as f64).log()
        / (128.0f64 / max_exact as f64).ln()
        * (half - max_exact) as f64)
        .to_kind(Kind::Int64)
        + max_exact;
    let large = large.clamp_max(half - 1);
    ret + n.where_self(&is_small, &large)
}

fn init_tensor(name: &str, shape: &[i64]) -> Tensor {
    let opts = (Kind::Float, Device::Cpu);
    if name.ends_with("LayerNorm.weight") {
        Tensor::ones(shape, opts)
    } else if name.ends_with(".bias") {
        Tensor::zeros(shape, opts)
    } else {
        Tensor::randn(shape, opts) * 0.02
    }
}
