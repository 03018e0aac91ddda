//! What a span reader reads and how its output becomes a span, whatever runs the encoder
//! (libtorch for training, ONNX Runtime int8 in the product): the input layout
//! ("[CLS] question [SEP] before sentence after [SEP]"), and the decoding of per-position
//! start/end logits into the best span and the null ("no span") score.

use crate::SpanExample;
use ansel_bert::{Encoded, PairTokenizer};
use ansel_model::Result;
use serde::{Deserialize, Serialize};

/// How a span extractor reads its input; stored in the card's `config`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpanSettings {
    /// Word pieces per input, special tokens included.
    pub max_len: usize,
    /// The question is cut to this many word pieces.
    pub max_question_pieces: usize,
    /// Longest answer, in sentence tokens.
    pub max_answer_tokens: usize,
    /// Words of the neighbouring sentences read on each side of the sentence (context only:
    /// spans are chosen inside the sentence).
    #[serde(default)]
    pub context_words: usize,
    /// Trained to say "no span": the [CLS] position's start + end logit is the score of
    /// "this sentence holds no answer" (SQuAD 2.0's null answer).
    #[serde(default)]
    pub no_span: bool,
}

impl Default for SpanSettings {
    fn default() -> Self {
        SpanSettings {
            max_len: 128,
            max_question_pieces: 48,
            max_answer_tokens: 10,
            context_words: 0,
            no_span: false,
        }
    }
}

/// An extracted answer: sentence tokens `[start, end)`, their text (tokens joined by spaces),
/// the span's score (start logit + end logit) and the null score ([CLS] start + end logit).
/// `score - null_score` is how much the model prefers the span to "no span" (meaningful for
/// a model trained with `no_span`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Extraction {
    pub start: usize,
    pub end: usize,
    pub text: String,
    pub score: f32,
    pub null_score: f32,
}

impl Extraction {
    /// The span's score over "no span".
    pub fn margin(&self) -> f32 {
        self.score - self.null_score
    }
}

/// What a span extractor reads: a question, the sentence's word tokens and the words of its
/// neighbours (context only).
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    pub question: &'a str,
    pub before: &'a [String],
    pub sentence: &'a [String],
    pub after: &'a [String],
}

impl<'a> Reading<'a> {
    /// A sentence read without neighbours.
    pub fn sentence(question: &'a str, sentence: &'a [String]) -> Reading<'a> {
        Reading {
            question,
            before: &[],
            sentence,
            after: &[],
        }
    }
}

/// "[CLS] question [SEP] before sentence after [SEP]" and, for each sentence token the input
/// kept whole, the positions of its first and last word piece.
pub struct SpanInput {
    pub enc: Encoded,
    /// Input positions of the first piece of each selectable token.
    pub starts: Vec<i64>,
    /// Input positions of the last piece of each selectable token.
    pub ends: Vec<i64>,
    /// The sentence token index of each selectable token.
    pub token: Vec<usize>,
}

/// Encodes readings the way a span reader with `settings` reads them.
pub struct SpanEncoder<'t> {
    pub tokenizer: &'t PairTokenizer,
    pub settings: SpanSettings,
}

impl SpanEncoder<'_> {
    /// Encodes a question, a sentence's tokens and its neighbours' words. The sentence comes
    /// first: context fills what room is left, split evenly, nearest words first. Tokens that
    /// get no word piece, or that the length limit cuts, cannot be selected.
    pub fn encode(&self, reading: &Reading) -> Result<SpanInput> {
        let (cls, sep) = self.tokenizer.specials();
        let mut q = self.tokenizer.word_pieces(reading.question)?;
        q.truncate(self.settings.max_question_pieces);
        let mut ids = Vec::with_capacity(self.settings.max_len);
        ids.push(cls);
        ids.extend_from_slice(&q);
        ids.push(sep);
        let first = ids.len();
        let mut room = self.settings.max_len.saturating_sub(first + 1);
        let mut sentence = Vec::new();
        for (i, t) in reading.sentence.iter().enumerate() {
            let pieces = self.tokenizer.word_pieces(t)?;
            if pieces.is_empty() {
                continue;
            }
            if pieces.len() > room {
                break;
            }
            room -= pieces.len();
            sentence.push((i, pieces));
        }
        let words = self.settings.context_words;
        let left = |room| self.context_pieces(reading.before.iter().rev().take(words), room);
        let after = self.context_pieces(reading.after.iter().take(words), room - room / 2)?;
        // A short right context leaves its room to the left.
        let before = left(room - pieces_in(&after))?;
        for word in before.iter().rev() {
            ids.extend_from_slice(word);
        }
        let (mut starts, mut ends, mut token) = (Vec::new(), Vec::new(), Vec::new());
        for (i, pieces) in sentence {
            starts.push(ids.len() as i64);
            ids.extend_from_slice(&pieces);
            ends.push(ids.len() as i64 - 1);
            token.push(i);
        }
        for word in &after {
            ids.extend_from_slice(word);
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

    /// The word pieces of context words, word by word outward from the sentence (nearest
    /// first), whole words only, at most `room` pieces in all.
    fn context_pieces<'w>(
        &self,
        words: impl Iterator<Item = &'w String>,
        room: usize,
    ) -> Result<Vec<Vec<i64>>> {
        let mut out = Vec::new();
        let mut used = 0;
        for w in words {
            let pieces = self.tokenizer.word_pieces(w)?;
            if used + pieces.len() > room {
                break;
            }
            used += pieces.len();
            out.push(pieces);
        }
        Ok(out)
    }
}

/// The gold `(start, end)` among an input's selectable tokens; `None`: the sentence holds no span.
pub type GoldSpan = Option<(i64, i64)>;

/// An example's input and its gold `(start, end)` among the selectable tokens (`None`: the
/// sentence holds no span); `None` when the example cannot be trained on: the length limit cut
/// its span, or it has no span and the reader does not learn "no span".
pub fn encode_example(
    encoder: &SpanEncoder,
    example: &SpanExample,
) -> Result<Option<(SpanInput, GoldSpan)>> {
    let Some(&(s, end)) = example.spans.first() else {
        return Ok(if encoder.settings.no_span {
            Some((encoder.encode(&example.reading())?, None))
        } else {
            None
        });
    };
    let inp = encoder.encode(&example.reading())?;
    let a = inp.token.iter().position(|&t| t == s);
    let b = inp.token.iter().rposition(|&t| t + 1 == end);
    Ok(match (a, b) {
        (Some(a), Some(b)) if a <= b => Some((inp, Some((a as i64, b as i64)))),
        _ => None,
    })
}

/// Inputs, gold (start, end) among selectable tokens (`None`: no span), and the number of
/// examples dropped.
pub type EncodedExamples = (Vec<SpanInput>, Vec<GoldSpan>, usize);

/// [`encode_example`] over examples; those that cannot be trained on are counted (the third
/// value).
pub fn encode_examples(encoder: &SpanEncoder, examples: &[SpanExample]) -> Result<EncodedExamples> {
    let (mut inputs, mut gold, mut dropped) = (Vec::new(), Vec::new(), 0);
    for e in examples {
        match encode_example(encoder, e)? {
            Some((inp, g)) => {
                inputs.push(inp);
                gold.push(g);
            }
            None => dropped += 1,
        }
    }
    Ok((inputs, gold, dropped))
}

/// A span reader: a model that reads sentences in context and extracts answer spans. The
/// trained libtorch model and its ONNX Runtime graph both implement it.
pub trait SpanReader: Send {
    fn settings(&self) -> &SpanSettings;

    /// The best span of each reading (`None`: the sentence has no selectable token), batched
    /// by length.
    fn extract_all(&self, readings: &[Reading]) -> Result<Vec<Option<Extraction>>>;
}

/// The best span of one input from its per-position logits (`[start, end]` interleaved, as
/// the head writes them): the selectable-token pair `(a, b)`, `a <= b`, spanning at most
/// `max_tokens` sentence tokens, with the highest start[a] + end[b]; beside it the null score.
pub fn decode(
    inp: &SpanInput,
    logits: &[f32],
    tokens: &[String],
    max_tokens: usize,
) -> Option<Extraction> {
    let at = |p: i64, k: usize| logits.get(p as usize * 2 + k).copied().unwrap_or(-1e4);
    let null_score = at(0, 0) + at(0, 1);
    let mut best: Option<(usize, usize, f32)> = None;
    for a in 0..inp.starts.len() {
        let s = at(inp.starts[a], 0);
        for b in a..inp.ends.len() {
            if inp.token[b] + 1 - inp.token[a] > max_tokens.max(1) {
                break;
            }
            let score = s + at(inp.ends[b], 1);
            if best.is_none_or(|(_, _, s)| score > s) {
                best = Some((a, b, score));
            }
        }
    }
    let (a, b, score) = best?;
    let (start, end) = (inp.token[a], inp.token[b] + 1);
    Some(Extraction {
        start,
        end,
        text: tokens[start..end].join(" "),
        score,
        null_score,
    })
}

fn pieces_in(words: &[Vec<i64>]) -> usize {
    words.iter().map(Vec::len).sum()
}

/// The rule baseline as a reader: the longest run of capitalised or numeric words that are not
/// in the question ([`crate::capitalised_or_numeric_span`]); margin +1 when there is one, -1
/// ("no span") when there is none.
pub struct RuleReader {
    settings: SpanSettings,
}

/// The name `--reader` takes for [`RuleReader`].
pub const RULE_READER: &str = "rule";

impl Default for RuleReader {
    fn default() -> Self {
        RuleReader {
            settings: SpanSettings {
                no_span: true,
                ..SpanSettings::default()
            },
        }
    }
}

impl SpanReader for RuleReader {
    fn settings(&self) -> &SpanSettings {
        &self.settings
    }

    fn extract_all(&self, readings: &[Reading]) -> Result<Vec<Option<Extraction>>> {
        Ok(readings
            .iter()
            .map(|r| {
                let found = crate::capitalised_or_numeric_span(r.question, r.sentence);
                let (start, end) = found.unwrap_or((0, r.sentence.len().min(1)));
                (end > start).then(|| Extraction {
                    start,
                    end,
                    text: r.sentence[start..end].join(" "),
                    score: if found.is_some() { 1.0 } else { -1.0 },
                    null_score: 0.0,
                })
            })
            .collect())
    }
}
