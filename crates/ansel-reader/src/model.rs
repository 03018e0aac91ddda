use crate::input::{decode, Extraction, Reading, SpanEncoder, SpanInput, SpanReader, SpanSettings};
use crate::KIND;
use ansel_bert::{by_length, Batch, CrossEncoder, Encoded, PairTokenizer};
use ansel_model::{ModelCard, ModelError, Result};
use ansel_torch::tch::{self, Device, Kind, Tensor};
use std::collections::BTreeMap;
use std::path::Path;

/// The head's weights file in a span-extractor directory (beside the encoder's model.safetensors).
pub const HEAD_FILE: &str = "span_head.safetensors";
const HEAD_W: &str = "span_head.weight";
const HEAD_B: &str = "span_head.bias";
/// Readings scored together.
const EXTRACT_BATCH: usize = 32;

/// A MiniLM (any BERT-family) encoder with a linear start/end head on its last hidden states.
pub struct SpanExtractor {
    pub encoder: CrossEncoder,
    pub tokenizer: PairTokenizer,
    pub settings: SpanSettings,
    head: BTreeMap<String, Tensor>,
}

impl SpanExtractor {
    /// An extractor on `encoder` with a fresh head (normal(0, 0.02) weights, zero bias).
    pub fn new(encoder: CrossEncoder, tokenizer: PairTokenizer, settings: SpanSettings) -> Self {
        let h = encoder.config.hidden_size;
        let mut head = BTreeMap::new();
        head.insert(
            HEAD_W.to_string(),
            Tensor::randn([2, h], (Kind::Float, Device::Cpu)) * 0.02,
        );
        head.insert(
            HEAD_B.to_string(),
            Tensor::zeros([2], (Kind::Float, Device::Cpu)),
        );
        SpanExtractor {
            encoder,
            tokenizer,
            settings,
            head,
        }
    }

    /// Loads the encoder of a BERT directory (config.json, tokenizer.json, model.safetensors)
    /// and, when the directory has one, its span head (a span extractor to train further).
    pub fn from_base(dir: &Path, settings: SpanSettings) -> Result<(SpanExtractor, bool)> {
        let (encoder, tokenizer, _) = ansel_bert::read_model_dir(dir)?;
        let model = SpanExtractor::new(encoder, tokenizer, settings);
        let had_head = dir.join(HEAD_FILE).is_file();
        if had_head {
            model.load_head(&dir.join(HEAD_FILE))?;
        }
        Ok((model, had_head))
    }

    /// Loads a trained span-extractor directory.
    pub fn load(dir: &Path, card: &ModelCard) -> Result<SpanExtractor> {
        if card.kind != KIND {
            return Err(ModelError::Format {
                path: dir.join(ansel_model::CARD_FILE),
                message: format!("kind {:?} is not a {KIND}", card.kind),
            });
        }
        let settings: SpanSettings = ansel_bert::card_settings(dir, card)?;
        let head = dir.join(HEAD_FILE);
        if !head.is_file() {
            return Err(ModelError::Format {
                path: head,
                message: "missing: a span extractor needs its head weights".into(),
            });
        }
        Ok(Self::from_base(dir, settings)?.0)
    }

    /// Reads a model directory's card and loads it.
    pub fn open(dir: &Path) -> Result<SpanExtractor> {
        let card = ModelCard::read(dir)?;
        Self::load(dir, &card)
    }

    /// Loads saved head weights (a trained model's or a checkpoint's), checking their shapes.
    pub fn load_head(&self, path: &Path) -> Result<()> {
        let found = ansel_torch::read_tensors(path)?;
        ansel_torch::copy_into(&self.head, &found, path)
    }

    /// Writes the head's weights atomically.
    pub fn save_head(&self, path: &Path) -> Result<()> {
        let tensors: Vec<(String, Tensor)> = self
            .head
            .iter()
            .map(|(n, t)| (n.clone(), t.detach().contiguous()))
            .collect();
        ansel_torch::write_tensors(path, &tensors)
    }

    /// Every trainable parameter by name: the encoder's and the head's (storage shared).
    pub fn params(&self) -> BTreeMap<String, Tensor> {
        let mut all = self.encoder.shared_params();
        for (n, t) in &self.head {
            all.insert(n.clone(), t.shallow_clone());
        }
        all
    }

    pub fn set_requires_grad(&mut self, on: bool) {
        self.encoder.set_requires_grad(on);
        for t in self.head.values_mut() {
            let _ = t.set_requires_grad(on);
        }
    }

    /// Start and end logits `[batch, positions, 2]` of every input position.
    fn position_logits(&self, inputs: &[&SpanInput], train: bool) -> Tensor {
        let encs: Vec<&Encoded> = inputs.iter().map(|i| &i.enc).collect();
        let batch = Batch::new(&encs, self.tokenizer.pad);
        let hidden = self.encoder.hidden_states(&batch, train);
        hidden.linear(&self.head[HEAD_W], Some(&self.head[HEAD_B]))
    }

    /// Start and end logits `[batch, 1 + tokens]`: column 0 is the null answer ([CLS]), then
    /// each input's selectable tokens, padding at -1e4.
    fn token_logits(&self, inputs: &[&SpanInput], train: bool) -> (Tensor, Tensor) {
        let logits = self.position_logits(inputs, train);
        let width = 1 + inputs.iter().map(|i| i.starts.len()).max().unwrap_or(0);
        let n = inputs.len();
        let mut s_idx = vec![0i64; n * width];
        let mut e_idx = vec![0i64; n * width];
        let mut valid = vec![false; n * width];
        for (row, inp) in inputs.iter().enumerate() {
            valid[row * width] = true;
            for k in 0..inp.starts.len() {
                s_idx[row * width + 1 + k] = inp.starts[k];
                e_idx[row * width + 1 + k] = inp.ends[k];
                valid[row * width + 1 + k] = true;
            }
        }
        let shape = [n as i64, width as i64];
        let s_idx = Tensor::from_slice(&s_idx).view(shape);
        let e_idx = Tensor::from_slice(&e_idx).view(shape);
        let invalid = Tensor::from_slice(&valid).view(shape).logical_not();
        let start = logits
            .select(2, 0)
            .gather(1, &s_idx, false)
            .masked_fill(&invalid, -1e4);
        let end = logits
            .select(2, 1)
            .gather(1, &e_idx, false)
            .masked_fill(&invalid, -1e4);
        (start, end)
    }

    /// Mean cross-entropy of the gold start and end tokens (positions among the selectable
    /// tokens; `None`: no span), the standard extractive-QA loss. Without `no_span` the null
    /// column is left out, so a model trained only on answers never learns it.
    pub(crate) fn loss(
        &self,
        inputs: &[&SpanInput],
        gold: &[Option<(i64, i64)>],
        train: bool,
    ) -> Tensor {
        let (mut start, mut end) = self.token_logits(inputs, train);
        let shift = if self.settings.no_span {
            1
        } else {
            let width = start.size()[1];
            start = start.narrow(1, 1, width - 1);
            end = end.narrow(1, 1, width - 1);
            0
        };
        let target = |pick: fn(&(i64, i64)) -> i64| {
            let t: Vec<i64> = gold
                .iter()
                .map(|g| g.as_ref().map_or(0, |g| pick(g) + shift))
                .collect();
            Tensor::from_slice(&t)
        };
        (start.cross_entropy_for_logits(&target(|g| g.0))
            + end.cross_entropy_for_logits(&target(|g| g.1)))
            / 2.0
    }

    /// How this model lays out its input.
    pub(crate) fn encoder(&self) -> SpanEncoder<'_> {
        SpanEncoder {
            tokenizer: &self.tokenizer,
            settings: self.settings,
        }
    }
}

impl SpanReader for SpanExtractor {
    fn settings(&self) -> &SpanSettings {
        &self.settings
    }

    fn extract_all(&self, readings: &[Reading]) -> Result<Vec<Option<Extraction>>> {
        let encoder = self.encoder();
        let inputs: Vec<SpanInput> = readings
            .iter()
            .map(|r| encoder.encode(r))
            .collect::<Result<_>>()?;
        let sentences: Vec<&[String]> = readings.iter().map(|r| r.sentence).collect();
        let logits = by_length(
            &inputs,
            |i| i.enc.len(),
            EXTRACT_BATCH,
            |chunk| {
                let logits = tch::no_grad(|| self.position_logits(chunk, false));
                let width = logits.size()[1] as usize;
                let flat = Vec::<f32>::try_from(logits.flatten(0, -1))
                    .map_err(|e| ModelError::Backend(format!("span logits: {e}")))?;
                Ok(flat.chunks(width * 2).map(<[f32]>::to_vec).collect())
            },
        )?;
        Ok(logits
            .iter()
            .zip(&inputs)
            .zip(sentences)
            .map(|((logits, inp), tokens)| {
                decode(inp, logits, tokens, self.settings.max_answer_tokens)
            })
            .collect())
    }
}
