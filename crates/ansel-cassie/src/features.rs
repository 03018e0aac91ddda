//! Encoder features: every (question, sentence) pair goes once through the cross-encoder as
//! `[CLS] q [SEP] s [SEP]`; what CASSIE keeps of it is the pooled `[CLS]` vector, the logit,
//! and one contextual vector per content word of the question and of the sentence (the mean
//! of the word's pieces; stop words and punctuation dropped). The encoder is frozen (features
//! cached once) or fine-tuned with the head (end to end): one extraction serves both.

use ansel_bert::{Batch, BertConfig, CrossEncoder, Encoded, PairTokenizer};
use ansel_data::Question;
use ansel_model::{write_atomic, ModelError, Result};
use ansel_torch::tch::{self, Kind, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// A word takes part in the alignment when it has a letter or digit and is not a stop word.
pub fn is_content(word: &str) -> bool {
    word.chars().any(char::is_alphanumeric) && !ansel_text::is_stop_word(word)
}

/// Word mass for the transport problem: in how many training questions a word occurs
/// (document frequency over questions). `mass(w) = df(w) + 1`, so that words no training
/// question has (most sentence words) keep a small mass; each side is normalised to 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WordMass {
    pub questions: usize,
    pub df: BTreeMap<String, u32>,
}

impl WordMass {
    pub const FILE: &'static str = "word-mass.json";

    /// Counts content words (as the encoder's tokenizer splits them) over `questions`.
    pub fn count(tok: &PairTokenizer, questions: &[Question]) -> Result<WordMass> {
        let mut df: BTreeMap<String, u32> = BTreeMap::new();
        for q in questions {
            let (_, _, words) = tok.word_pieces_by_word(&q.text)?;
            let unique: HashSet<String> = words.into_iter().filter(|w| is_content(w)).collect();
            for w in unique {
                *df.entry(w).or_default() += 1;
            }
        }
        Ok(WordMass {
            questions: questions.len(),
            df,
        })
    }

    pub fn mass(&self, word: &str) -> f32 {
        self.df.get(word).copied().unwrap_or(0) as f32 + 1.0
    }

    pub fn read(path: &Path) -> Result<WordMass> {
        let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", e.line()),
        })
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self).map_err(|e| ModelError::Backend(e.to_string()))?;
        write_atomic(path, &bytes)
    }
}

/// The base cross-encoder's logits of a [`PairSet`]: numbers for frozen or cached features,
/// a tensor that carries gradient into the encoder for live encoding.
pub enum PairLogits {
    /// Frozen ([`PairEncoder::encode`]) or read from the cache ([`PairSet::load`]).
    Fixed(Vec<f32>),
    /// Live ([`PairEncoder::encode_live`]): `[pairs]`, in the encoder's graph.
    Live(Tensor),
}

impl PairLogits {
    pub fn len(&self) -> usize {
        match self {
            PairLogits::Fixed(v) => v.len(),
            PairLogits::Live(t) => t.size()[0] as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logits as numbers.
    pub fn values(&self) -> Vec<f32> {
        match self {
            PairLogits::Fixed(v) => v.clone(),
            PairLogits::Live(t) => {
                Vec::<f32>::try_from(&t.detach().to_kind(Kind::Float)).expect("a float tensor")
            }
        }
    }

    /// The logits as a `[pairs]` tensor (the live one itself, gradient and all).
    pub fn tensor(&self) -> Tensor {
        match self {
            PairLogits::Fixed(v) => Tensor::from_slice(v),
            PairLogits::Live(t) => t.shallow_clone(),
        }
    }
}

/// Features of many (question, sentence) pairs, in input order. Word vectors of all pairs
/// are stacked; pair `i` owns rows `q_off[i]..q_off[i + 1]` of `q_vecs` (likewise `s_*`).
pub struct PairSet {
    pub pooled: Tensor,
    /// The base cross-encoder's logit of every pair (a head with `residual` adds them to its
    /// output).
    pub logits: PairLogits,
    pub q_vecs: Tensor,
    pub q_off: Vec<usize>,
    pub q_words: Vec<Vec<String>>,
    pub s_vecs: Tensor,
    pub s_off: Vec<usize>,
    pub s_words: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct PairWords {
    q: Vec<Vec<String>>,
    s: Vec<Vec<String>>,
    /// What the cache was built from (checked on load).
    key: String,
}

impl PairSet {
    pub fn len(&self) -> usize {
        self.logits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.logits.is_empty()
    }

    pub fn dim(&self) -> i64 {
        self.pooled.size()[1]
    }

    /// Question word vectors of pair `i`, `[n, d]`.
    pub fn q(&self, i: usize) -> Tensor {
        let (a, b) = (self.q_off[i], self.q_off[i + 1]);
        self.q_vecs.narrow(0, a as i64, (b - a) as i64)
    }

    /// Sentence word vectors of pair `i`, `[m, d]`.
    pub fn s(&self, i: usize) -> Tensor {
        let (a, b) = (self.s_off[i], self.s_off[i + 1]);
        self.s_vecs.narrow(0, a as i64, (b - a) as i64)
    }

    /// Writes the set (vectors as f16) to `dir/pairs.safetensors` and `dir/pairs.json`.
    pub fn save(&self, dir: &Path, key: &str) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        let off =
            |v: &[usize]| Tensor::from_slice(&v.iter().map(|&x| x as i64).collect::<Vec<_>>());
        let tensors = vec![
            ("pooled".to_string(), self.pooled.to_kind(Kind::Half)),
            (
                "logits".to_string(),
                Tensor::from_slice(&self.logits.values()),
            ),
            ("q_vecs".to_string(), self.q_vecs.to_kind(Kind::Half)),
            ("q_off".to_string(), off(&self.q_off)),
            ("s_vecs".to_string(), self.s_vecs.to_kind(Kind::Half)),
            ("s_off".to_string(), off(&self.s_off)),
        ];
        let path = dir.join("pairs.safetensors");
        let tmp = dir.join(".tmp-pairs.safetensors");
        Tensor::write_safetensors(&tensors, &tmp).map_err(ansel_torch::backend)?;
        std::fs::rename(&tmp, &path).map_err(|e| ModelError::io(&path, e))?;
        let words = PairWords {
            q: self.q_words.clone(),
            s: self.s_words.clone(),
            key: key.to_string(),
        };
        let bytes = serde_json::to_vec(&words).map_err(|e| ModelError::Backend(e.to_string()))?;
        write_atomic(&dir.join("pairs.json"), &bytes)
    }

    /// Reads a set written by [`PairSet::save`]; `None` when absent or built from something else.
    pub fn load(dir: &Path, key: &str) -> Result<Option<PairSet>> {
        let json = dir.join("pairs.json");
        let Ok(bytes) = std::fs::read(&json) else {
            return Ok(None);
        };
        let words: PairWords = serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
            path: json.clone(),
            message: e.to_string(),
        })?;
        if words.key != key {
            return Ok(None);
        }
        let path = dir.join("pairs.safetensors");
        let named = Tensor::read_safetensors(&path).map_err(|e| ModelError::Format {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut map: HashMap<String, Tensor> = named.into_iter().collect();
        let mut take = |name: &str| {
            map.remove(name).ok_or_else(|| ModelError::Format {
                path: path.clone(),
                message: format!("no tensor {name:?}"),
            })
        };
        let offsets = |t: Tensor| -> Vec<usize> {
            Vec::<i64>::try_from(&t)
                .unwrap_or_default()
                .into_iter()
                .map(|x| x as usize)
                .collect()
        };
        let set = PairSet {
            pooled: take("pooled")?.to_kind(Kind::Float),
            logits: PairLogits::Fixed(
                Vec::<f32>::try_from(&take("logits")?).map_err(ansel_torch::backend)?,
            ),
            q_vecs: take("q_vecs")?.to_kind(Kind::Float),
            q_off: offsets(take("q_off")?),
            s_vecs: take("s_vecs")?.to_kind(Kind::Float),
            s_off: offsets(take("s_off")?),
            q_words: words.q,
            s_words: words.s,
        };
        let n = set.len();
        if set.q_off.len() != n + 1 || set.s_off.len() != n + 1 || set.q_words.len() != n {
            return Err(ModelError::Format {
                path,
                message: "pair counts of vectors, offsets and words disagree".into(),
            });
        }
        Ok(Some(set))
    }
}

/// The cross-encoder that produces [`PairSet`]s: frozen ([`PairEncoder::encode`]: eval mode,
/// no gradient, vectors rounded to f16 like the training cache), or fine-tuned together with
/// the head ([`PairEncoder::encode_live`]: autograd on, dropout when training). Both read the
/// same input and turn hidden states into features with the same code.
pub struct PairEncoder {
    model: CrossEncoder,
    tok: PairTokenizer,
    pub max_len: usize,
    pub batch_size: usize,
}

struct Tokenized {
    ids: Vec<i64>,
    word_of: Vec<usize>,
    words: Vec<String>,
}

/// How [`PairEncoder`] runs the encoder.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Eval mode, under `no_grad`, features rounded to f16 (the cache's precision).
    Frozen,
    /// Autograd on, full precision; dropout when `train`.
    Live { train: bool },
}

impl PairEncoder {
    /// Loads a cross-encoder directory (config.json, tokenizer.json, model.safetensors).
    pub fn load(dir: &Path, max_len: usize) -> Result<PairEncoder> {
        let config = BertConfig::read(&dir.join("config.json"))?;
        let (model, initialised) = CrossEncoder::load(config, &dir.join("model.safetensors"))?;
        if !initialised.is_empty() {
            return Err(ModelError::Format {
                path: dir.join("model.safetensors"),
                message: format!(
                    "CASSIE needs a trained cross-encoder as base; this one lacks {}",
                    initialised.join(", ")
                ),
            });
        }
        let tok = PairTokenizer::read(&dir.join("tokenizer.json"))?;
        Ok(PairEncoder {
            model,
            tok,
            max_len,
            batch_size: 32,
        })
    }

    pub fn tokenizer(&self) -> &PairTokenizer {
        &self.tok
    }

    /// The cross-encoder itself (its parameters, for fine-tuning and saving).
    pub fn model(&self) -> &CrossEncoder {
        &self.model
    }

    /// Switches gradient tracking of the encoder's parameters on (end-to-end training) or off.
    pub fn set_trainable(&mut self, on: bool) {
        self.model.set_requires_grad(on);
    }

    fn tokenize(&self, text: &str) -> Result<Tokenized> {
        let (ids, word_of, words) = self.tok.word_pieces_by_word(text)?;
        Ok(Tokenized {
            ids,
            word_of,
            words,
        })
    }

    /// Encodes `[CLS] q [SEP] s [SEP]` for every pair exactly as the cross-encoder ranker does
    /// (same truncation), so `logits` are the base model's scores. Eval mode, no gradient.
    /// `progress` gets the number of pairs done after each batch.
    pub fn encode(
        &self,
        pairs: &[(&str, &str)],
        progress: &mut dyn FnMut(usize),
    ) -> Result<PairSet> {
        tch::no_grad(|| self.run(pairs, Mode::Frozen, progress))
    }

    /// The same features as [`PairEncoder::encode`], with gradients flowing back into the
    /// encoder (and dropout on when `train`): end-to-end training. Not rounded to f16.
    pub fn encode_live(&self, pairs: &[(&str, &str)], train: bool) -> Result<PairSet> {
        self.run(pairs, Mode::Live { train }, &mut |_| {})
    }

    /// Checks that every pair can be encoded (tokenized, and its pieces mapped back to
    /// words) without running the encoder.
    pub fn check(&self, pairs: &[(&str, &str)]) -> Result<()> {
        self.inputs(pairs).map(|_| ())
    }

    /// Tokenized texts and the encoded inputs of `pairs`, with how many question and sentence
    /// pieces each input kept.
    #[allow(clippy::type_complexity)]
    fn inputs<'a>(
        &self,
        pairs: &[(&'a str, &'a str)],
    ) -> Result<(HashMap<&'a str, Tokenized>, Vec<(Encoded, usize, usize)>)> {
        let mut tokenized: HashMap<&str, Tokenized> = HashMap::new();
        for (q, s) in pairs {
            for text in [q, s] {
                if !tokenized.contains_key(text) {
                    tokenized.insert(text, self.tokenize(text)?);
                }
            }
        }
        let mut encoded: Vec<(Encoded, usize, usize)> = Vec::with_capacity(pairs.len());
        for (q, s) in pairs {
            let e = self.tok.encode(q, &[s], self.max_len)?;
            let (ql, sl) = (tokenized[q].ids.len(), tokenized[s].ids.len());
            // The tokenizer's truncation: the question keeps what the sentence leaves it,
            // but at least half of the budget.
            let budget = self.max_len.saturating_sub(3);
            let q_kept = ql.min(budget.saturating_sub(sl.min(budget / 2)));
            let s_kept = e.len().saturating_sub(3 + q_kept);
            if s_kept > sl || e.len() != q_kept + s_kept + 3 {
                return Err(ModelError::Backend(format!(
                    "cannot map word pieces of {s:?} back to words (input of {} tokens)",
                    e.len()
                )));
            }
            encoded.push((e, q_kept, s_kept));
        }
        Ok((tokenized, encoded))
    }

    fn run(
        &self,
        pairs: &[(&str, &str)],
        mode: Mode,
        progress: &mut dyn FnMut(usize),
    ) -> Result<PairSet> {
        let (tokenized, encoded) = self.inputs(pairs)?;
        let n = pairs.len();
        let round = mode == Mode::Frozen;
        let train = matches!(mode, Mode::Live { train: true });
        let mut pooled: Vec<Option<Tensor>> = (0..n).map(|_| None).collect();
        let mut logits = vec![0f32; n];
        // Each batch's logit tensor, batches in `order`: live logits are put back in input
        // order from these at the end.
        let mut batch_logits: Vec<Tensor> = Vec::new();
        let mut q_parts: Vec<Option<(Tensor, Vec<String>)>> = (0..n).map(|_| None).collect();
        let mut s_parts: Vec<Option<(Tensor, Vec<String>)>> = (0..n).map(|_| None).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| encoded[i].0.len());
        let mut done = 0;
        for chunk in order.chunks(self.batch_size.max(1)) {
            let refs: Vec<&Encoded> = chunk.iter().map(|&i| &encoded[i].0).collect();
            let batch = Batch::new(&refs, self.tok.pad);
            let (hidden, pool, logit_t) = self.model.hidden_pooled_logits(&batch, train);
            let logit = Vec::<f32>::try_from(&logit_t.detach().to_kind(Kind::Float))
                .map_err(ansel_torch::backend)?;
            for (row, &i) in chunk.iter().enumerate() {
                let h = hidden.get(row as i64);
                let (_, q_kept, s_kept) = encoded[i];
                let (q, s) = pairs[i];
                q_parts[i] = Some(word_vectors(
                    &h,
                    &tokenized[q],
                    Segment::question(q_kept),
                    round,
                ));
                s_parts[i] = Some(word_vectors(
                    &h,
                    &tokenized[s],
                    Segment::sentence(q_kept, s_kept),
                    round,
                ));
                pooled[i] = Some(f16_if(pool.get(row as i64), round));
                logits[i] = logit[row];
            }
            batch_logits.push(logit_t);
            done += chunk.len();
            progress(done);
        }
        let unwrap = |v: Vec<Option<(Tensor, Vec<String>)>>| {
            let mut offs = vec![0usize];
            let mut vecs = Vec::with_capacity(v.len());
            let mut words = Vec::with_capacity(v.len());
            for (t, w) in v.into_iter().flatten() {
                offs.push(offs.last().copied().unwrap_or(0) + w.len());
                vecs.push(t);
                words.push(w);
            }
            (Tensor::cat(&vecs, 0), offs, words)
        };
        let pooled: Vec<Tensor> = pooled.into_iter().flatten().collect();
        if pooled.len() != n {
            return Err(ModelError::Backend("a pair was not encoded".into()));
        }
        let (q_vecs, q_off, q_words) = unwrap(q_parts);
        let (s_vecs, s_off, s_words) = unwrap(s_parts);
        let logits = match mode {
            Mode::Frozen => PairLogits::Fixed(logits),
            Mode::Live { .. } => {
                // Row `order[r]` of the batches' concatenation is pair `order[r]`'s logit.
                let mut row_of = vec![0i64; n];
                for (r, &i) in order.iter().enumerate() {
                    row_of[i] = r as i64;
                }
                PairLogits::Live(
                    Tensor::cat(&batch_logits, 0).index_select(0, &Tensor::from_slice(&row_of)),
                )
            }
        };
        Ok(PairSet {
            pooled: Tensor::stack(&pooled, 0),
            logits,
            q_vecs,
            q_off,
            q_words,
            s_vecs,
            s_off,
            s_words,
        })
    }
}

/// Rounds through f16 when `round` (frozen features, as cached), else returns `t` itself.
fn f16_if(t: Tensor, round: bool) -> Tensor {
    if round {
        t.to_kind(Kind::Half).to_kind(Kind::Float)
    } else {
        t
    }
}

/// Where a segment's pieces sit in `[CLS] q [SEP] s [SEP]`: `kept` pieces from row `start`,
/// and the `[SEP]` that closes it at row `sep`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: usize,
    kept: usize,
    sep: usize,
}

impl Segment {
    fn question(q_kept: usize) -> Segment {
        Segment {
            start: 1,
            kept: q_kept,
            sep: 1 + q_kept,
        }
    }

    fn sentence(q_kept: usize, s_kept: usize) -> Segment {
        Segment {
            start: q_kept + 2,
            kept: s_kept,
            sep: q_kept + 2 + s_kept,
        }
    }
}

/// Content-word vectors of one segment: the first `seg.kept` pieces of `tok` sit at rows
/// `seg.start..` of `hidden` (`[len, d]`, with or without gradient); each word is the mean of
/// its pieces. Falls back to every word when none is a content word, and to the `[SEP]`
/// vector at `seg.sep` when the segment kept no piece at all. `round`: through f16, the
/// precision of the training cache, so that a frozen head scores live input exactly as it
/// saw it in training.
fn word_vectors(
    hidden: &Tensor,
    tok: &Tokenized,
    seg: Segment,
    round: bool,
) -> (Tensor, Vec<String>) {
    let Segment { start, kept, sep } = seg;
    let kept_words = tok.word_of.get(..kept).unwrap_or(&tok.word_of);
    let present: Vec<usize> = {
        let mut seen = Vec::new();
        for &w in kept_words {
            if seen.last() != Some(&w) {
                seen.push(w);
            }
        }
        seen
    };
    let mut chosen: Vec<usize> = present
        .iter()
        .copied()
        .filter(|&w| is_content(&tok.words[w]))
        .collect();
    if chosen.is_empty() {
        chosen = present
            .iter()
            .copied()
            .filter(|&w| tok.words[w].chars().any(char::is_alphanumeric))
            .collect();
    }
    if chosen.is_empty() {
        chosen = present;
    }
    if chosen.is_empty() {
        let v = f16_if(hidden.narrow(0, sep as i64, 1), round);
        return (v, vec!["[SEP]".to_string()]);
    }
    let len = hidden.size()[0];
    let mut avg = vec![0f32; chosen.len() * len as usize];
    for (row, &w) in chosen.iter().enumerate() {
        let pieces: Vec<usize> = (0..kept_words.len())
            .filter(|&k| kept_words[k] == w)
            .collect();
        for &k in &pieces {
            avg[row * len as usize + start + k] = 1.0 / pieces.len() as f32;
        }
    }
    let avg = Tensor::from_slice(&avg).view([chosen.len() as i64, len]);
    let vecs = f16_if(avg.matmul(&hidden.to_kind(Kind::Float)), round);
    (vecs, chosen.iter().map(|&w| tok.words[w].clone()).collect())
}

/// The sentences of one question's context graph: every candidate and every neighbour text
/// (deduplicated by text), and for each candidate its nodes [candidate, previous, next]
/// as indices into `sentences` (`None`: no neighbour there, a padding node).
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionGraph {
    pub sentences: Vec<String>,
    /// Gold label of each sentence when it is itself a labelled candidate.
    pub labels: Vec<Option<bool>>,
    pub nodes: Vec<[Option<usize>; 3]>,
}

impl QuestionGraph {
    pub fn new(question: &Question) -> QuestionGraph {
        let mut sentences: Vec<String> = Vec::new();
        let mut labels: Vec<Option<bool>> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut intern = |text: &str, label: Option<bool>, sentences: &mut Vec<String>| {
            let i = *index.entry(text.to_string()).or_insert_with(|| {
                sentences.push(text.to_string());
                labels.push(None);
                sentences.len() - 1
            });
            if let Some(l) = label {
                labels[i] = Some(labels[i].unwrap_or(false) || l);
            }
            i
        };
        let own: Vec<usize> = question
            .candidates
            .iter()
            .map(|c| intern(&c.text, c.label, &mut sentences))
            .collect();
        let mut nodes = Vec::with_capacity(own.len());
        for (c, &i) in question.candidates.iter().zip(&own) {
            let ctx = c.context.as_ref();
            let mut neighbour = |text: Option<&String>| {
                text.filter(|t| !t.trim().is_empty())
                    .map(|t| intern(t, None, &mut sentences))
            };
            let prev = neighbour(ctx.and_then(|c| c.prev.as_ref()));
            let next = neighbour(ctx.and_then(|c| c.next.as_ref()));
            nodes.push([Some(i), prev, next]);
        }
        QuestionGraph {
            sentences,
            labels,
            nodes,
        }
    }
}
