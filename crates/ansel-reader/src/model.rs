use crate::KIND;
use ansel_bert::{Batch, CrossEncoder, Encoded, PairTokenizer};
use ansel_model::{ModelCard, ModelError, Result};
use ansel_torch::tch::{self, Device, Kind, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The head's weights file in a span-extractor directory (beside the encoder's model.safetensors).
pub const HEAD_FILE: &str = "span_head.safetensors";
const HEAD_W: &str = "span_head.weight";
const HEAD_B: &str = "span_head.bias";

/// How a span extractor reads its input; stored in the card's `config`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpanSettings {
    /// Word pieces per input, special tokens included.
    pub max_len: usize,
    /// The question is cut to this many word pieces.
    pub max_question_pieces: usize,
    /// Longest answer, in sentence tokens.
    pub max_answer_tokens: usize,
}

impl Default for SpanSettings {
    fn default() -> Self {
        SpanSettings {
            max_len: 128,
            max_question_pieces: 48,
            max_answer_tokens: 10,
        }
    }
}

/// An extracted answer: sentence tokens `[start, end)`, their text (tokens joined by spaces)
/// and the span's score (start logit + end logit).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Extraction {
    pub start: usize,
    pub end: usize,
    pub text: String,
    pub score: f32,
}

/// "[CLS] question [SEP] sentence [SEP]" and, for each sentence token the input kept whole,
/// the positions of its first and last word piece.
pub(crate) struct SpanInput {
    pub(crate) enc: Encoded,
    /// Input positions of the first piece of each selectable token.
    pub(crate) starts: Vec<i64>,
    /// Input positions of the last piece of each selectable token.
    pub(crate) ends: Vec<i64>,
    /// The sentence token index of each selectable token.
    pub(crate) token: Vec<usize>,
}

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

    /// Encodes a question and a sentence's tokens. Tokens that get no word piece, or that the
    /// length limit cuts, cannot be selected.
    pub(crate) fn encode(&self, question: &str, tokens: &[String]) -> Result<SpanInput> {
        let (cls, sep) = self.tokenizer.specials();
        let mut q = self.tokenizer.word_pieces(question)?;
        q.truncate(self.settings.max_question_pieces);
        let mut ids = Vec::with_capacity(self.settings.max_len);
        ids.push(cls);
        ids.extend_from_slice(&q);
        ids.push(sep);
        let first = ids.len();
        let room = self.settings.max_len.saturating_sub(first + 1);
        let (mut starts, mut ends, mut token) = (Vec::new(), Vec::new(), Vec::new());
        for (i, t) in tokens.iter().enumerate() {
            let pieces = self.tokenizer.word_pieces(t)?;
            if pieces.is_empty() {
                continue;
            }
            if ids.len() - first + pieces.len() > room {
                break;
            }
            starts.push(ids.len() as i64);
            ids.extend_from_slice(&pieces);
            ends.push(ids.len() as i64 - 1);
            token.push(i);
        }
        ids.push(sep);
        let mut types = vec![0; first];
        types.resize(ids.len(), 1);
        Ok(SpanInput {
            enc: Encoded { ids, types },
            starts,
            ends,
            token,
        })
    }

    /// Start and end logits `[batch, tokens]` over each input's selectable tokens, padding
    /// positions at -1e4; and the mask of real tokens.
    pub(crate) fn token_logits(
        &self,
        inputs: &[&SpanInput],
        train: bool,
    ) -> (Tensor, Tensor, Tensor) {
        let encs: Vec<&Encoded> = inputs.iter().map(|i| &i.enc).collect();
        let batch = Batch::new(&encs, self.tokenizer.pad);
        let hidden = self.encoder.hidden_states(&batch, train);
        let logits = hidden.linear(&self.head[HEAD_W], Some(&self.head[HEAD_B]));
        let width = inputs
            .iter()
            .map(|i| i.starts.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let n = inputs.len();
        let mut s_idx = vec![0i64; n * width];
        let mut e_idx = vec![0i64; n * width];
        let mut valid = vec![false; n * width];
        for (row, inp) in inputs.iter().enumerate() {
            for k in 0..inp.starts.len() {
                s_idx[row * width + k] = inp.starts[k];
                e_idx[row * width + k] = inp.ends[k];
                valid[row * width + k] = true;
            }
        }
        let shape = [n as i64, width as i64];
        let s_idx = Tensor::from_slice(&s_idx).view(shape);
        let e_idx = Tensor::from_slice(&e_idx).view(shape);
        let valid = Tensor::from_slice(&valid).view(shape);
        let invalid = valid.logical_not();
        let start = logits
            .select(2, 0)
            .gather(1, &s_idx, false)
            .masked_fill(&invalid, -1e4);
        let end = logits
            .select(2, 1)
            .gather(1, &e_idx, false)
            .masked_fill(&invalid, -1e4);
        (start, end, valid)
    }

    /// Mean cross-entropy of the gold start and end tokens (positions among the selectable
    /// tokens), the standard extractive-QA loss.
    pub(crate) fn loss(&self, inputs: &[&SpanInput], gold: &[(i64, i64)], train: bool) -> Tensor {
        let (start, end, _) = self.token_logits(inputs, train);
        let gs = Tensor::from_slice(&gold.iter().map(|g| g.0).collect::<Vec<_>>());
        let ge = Tensor::from_slice(&gold.iter().map(|g| g.1).collect::<Vec<_>>());
        (start.cross_entropy_for_logits(&gs) + end.cross_entropy_for_logits(&ge)) / 2.0
    }

    /// The best span of each (question, sentence tokens) pair, in batches of `batch_size`.
    /// `None` for a sentence with no selectable token.
    pub fn extract_all(
        &self,
        items: &[(&str, &[String])],
        batch_size: usize,
    ) -> Result<Vec<Option<Extraction>>> {
        let inputs: Vec<SpanInput> = items
            .iter()
            .map(|(q, t)| self.encode(q, t))
            .collect::<Result<_>>()?;
        // Sorted by length so that batches pad little; results go back in input order.
        let mut order: Vec<usize> = (0..inputs.len()).collect();
        order.sort_by_key(|&i| inputs[i].enc.len());
        let mut out: Vec<Option<Extraction>> = vec![None; inputs.len()];
        tch::no_grad(|| {
            for chunk in order.chunks(batch_size.max(1)) {
                let refs: Vec<&SpanInput> = chunk.iter().map(|&i| &inputs[i]).collect();
                let (start, end, _) = self.token_logits(&refs, false);
                for (row, &i) in chunk.iter().enumerate() {
                    let inp = &inputs[i];
                    let k = inp.starts.len();
                    if k == 0 {
                        continue;
                    }
                    let s: Vec<f32> =
                        Vec::<f32>::try_from(start.get(row as i64).narrow(0, 0, k as i64))
                            .unwrap_or_default();
                    let e: Vec<f32> =
                        Vec::<f32>::try_from(end.get(row as i64).narrow(0, 0, k as i64))
                            .unwrap_or_default();
                    if let Some((a, b, score)) =
                        best_span(&s, &e, inp, self.settings.max_answer_tokens)
                    {
                        let (start, end) = (inp.token[a], inp.token[b] + 1);
                        out[i] = Some(Extraction {
                            start,
                            end,
                            text: items[i].1[start..end].join(" "),
                            score,
                        });
                    }
                }
            }
        });
        Ok(out)
    }
}

/// The selectable-token pair `(a, b)`, `a <= b`, spanning at most `max_tokens` sentence tokens,
/// with the highest start[a] + end[b].
fn best_span(
    start: &[f32],
    end: &[f32],
    inp: &SpanInput,
    max_tokens: usize,
) -> Option<(usize, usize, f32)> {
    let mut best: Option<(usize, usize, f32)> = None;
    let n = start.len().min(end.len());
    for (a, &s) in start.iter().enumerate().take(n) {
        for (b, &e) in end.iter().enumerate().take(n).skip(a) {
            if inp.token[b] + 1 - inp.token[a] > max_tokens.max(1) {
                break;
            }
            let score = s + e;
            if best.is_none_or(|(_, _, s)| score > s) {
                best = Some((a, b, score));
            }
        }
    }
    best
}
