//! Fine-tuning a span extractor: cross-entropy on the gold start and end tokens, with
//! ansel-torch's AdamW (decoupled weight decay), linear warm-up and decay, gradient clipping,
//! length bucketing and gradient accumulation; dev exact match / token F1 with early stopping
//! on F1; checkpoints (weights, head, optimizer moments, position) that survive kill -9.
//!
//! The loop is ansel-bert's shared training loop ([`ansel_bert::run`]); this module supplies
//! the span extractor's part as a [`Trainee`]: batches, [`SpanExtractor::loss`], [`evaluate`]
//! (dev F1 picks the weights kept), and how weights, head and card are written.

use crate::input::{encode_examples, SpanInput};
use crate::model::HEAD_FILE;
use crate::SpanReader;
use crate::{best_f1, exact_match, SpanExample, SpanExtractor, SpanSettings, KIND};
use ansel_bert::run::{
    prepare_out, run, write_training_card, CardParts, LoopOptions, RunOptions, RunState, Trainee,
    Weights,
};
use ansel_bert::train::bucketed_batches;
use ansel_model::{ModelCard, ModelError, Result};
use ansel_torch::tch::Tensor;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Everything a span-extractor run needs: `run.base` is a Hugging Face BERT directory, an
/// ansel cross-encoder, or a span extractor.
#[derive(Debug, Clone, Serialize)]
pub struct SpanTrainOptions {
    #[serde(flatten)]
    pub run: RunOptions,
    /// How the training examples were made (recorded in the card), e.g. "jacana gold spans".
    pub data_note: String,
    pub max_question_pieces: usize,
    pub max_answer_tokens: usize,
    pub context_words: usize,
    pub no_span: bool,
}

impl SpanTrainOptions {
    pub fn defaults(base: &str, out: &Path) -> SpanTrainOptions {
        let s = SpanSettings::default();
        SpanTrainOptions {
            run: RunOptions {
                max_len: s.max_len,
                lr: 5e-5,
                patience: 2,
                checkpoint_every: 20,
                ..RunOptions::defaults(base, out, KIND)
            },
            data_note: String::new(),
            max_question_pieces: s.max_question_pieces,
            max_answer_tokens: s.max_answer_tokens,
            context_words: s.context_words,
            no_span: s.no_span,
        }
    }

    fn settings(&self) -> SpanSettings {
        SpanSettings {
            max_len: self.run.max_len,
            max_question_pieces: self.max_question_pieces,
            max_answer_tokens: self.max_answer_tokens,
            context_words: self.context_words,
            no_span: self.no_span,
        }
    }
}

/// Dev exact match and token F1 of the best span, over the examples with a gold span (means
/// against each example's gold spans); for a model trained with `no_span`, also how often it
/// prefers "no span" exactly when there is none, over all examples.
pub fn evaluate(model: &SpanExtractor, dev: &[SpanExample]) -> Result<BTreeMap<String, f64>> {
    let readings: Vec<_> = dev.iter().map(SpanExample::reading).collect();
    let found = model.extract_all(&readings)?;
    let (mut em, mut f1, mut answerable, mut agree) = (0.0, 0.0, 0usize, 0usize);
    for (e, x) in dev.iter().zip(&found) {
        let has_span = !e.spans.is_empty();
        agree += usize::from(x.as_ref().is_some_and(|x| x.margin() > 0.0) == has_span);
        if has_span {
            answerable += 1;
            let text = x.as_ref().map_or("", |x| x.text.as_str());
            em += exact_match(text, &e.answers());
            f1 += best_f1(text, &e.answers());
        }
    }
    let n = answerable.max(1) as f64;
    let mut metrics = BTreeMap::from([
        ("dev EM".to_string(), em / n),
        ("dev F1".to_string(), f1 / n),
    ]);
    if model.settings.no_span {
        metrics.insert(
            "dev span/no-span accuracy".to_string(),
            agree as f64 / dev.len().max(1) as f64,
        );
    }
    Ok(metrics)
}

/// The span extractor as the shared loop's [`Trainee`].
struct SpanTrainee<'a> {
    opts: &'a SpanTrainOptions,
    model: SpanExtractor,
    inputs: Vec<SpanInput>,
    gold: Vec<Option<(i64, i64)>>,
    /// The encoded lengths of `inputs` (for bucketing).
    lengths: Vec<usize>,
    dev: &'a [SpanExample],
    /// The base's card when the base is itself a span extractor, so that the new card names the
    /// data and bases of every stage before it.
    base_card: Option<ModelCard>,
}

impl Trainee for SpanTrainee<'_> {
    fn batches(&self, batch_size: usize, seed: u64) -> Vec<Vec<usize>> {
        bucketed_batches(&self.lengths, batch_size, seed)
    }

    fn loss(&self, batch: &[usize]) -> (Tensor, usize) {
        let refs: Vec<&SpanInput> = batch.iter().map(|&i| &self.inputs[i]).collect();
        let gold: Vec<Option<(i64, i64)>> = batch.iter().map(|&i| self.gold[i]).collect();
        (self.model.loss(&refs, &gold, true), batch.len())
    }

    fn groups(&self) -> Vec<(BTreeMap<String, Tensor>, f64)> {
        vec![(self.model.params(), 1.0)]
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        evaluate(&self.model, self.dev)
    }

    fn selection_metric(&self) -> &str {
        "dev F1"
    }

    fn writes_plot(&self) -> bool {
        false
    }

    fn save(&self, dir: &Path, weights: Weights) -> Result<()> {
        weights.save_encoder(&self.model.encoder, dir)?;
        self.model.save_head(&dir.join(HEAD_FILE))
    }

    fn write_card(&self, state: &RunState) -> Result<ModelCard> {
        write_card(self.opts, self.base_card.as_ref(), state, self.inputs.len())
    }

    fn load_weights(&self, dir: &Path) -> Result<()> {
        Weights::load_checkpoint_encoder(&self.model.encoder, dir)?;
        self.model.load_head(&dir.join(HEAD_FILE))
    }
}

/// Fine-tunes a span extractor and writes the model directory `opts.run.out` (model.json,
/// config.json, tokenizer.json, model.safetensors in fp16, span_head.safetensors,
/// train-log.jsonl, checkpoint/ for `--resume`).
pub fn train(
    opts: &SpanTrainOptions,
    train: &[SpanExample],
    dev: &[SpanExample],
) -> Result<ModelCard> {
    ansel_torch::init(opts.run.threads, opts.run.seed);
    let base_dir = ansel_bert::resolve_base(&opts.run.base)?;
    let (mut model, had_head) = SpanExtractor::from_base(&base_dir, opts.settings())?;
    let base_card = ansel_bert::base_card(&base_dir, KIND)?;
    prepare_out(&opts.run.out, KIND, opts.run.resume, &base_dir)?;
    let (inputs, gold, dropped) = encode_examples(&model.encoder(), train)?;
    if inputs.is_empty() {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!(
                "{}: no training example with an answer span inside --max-len",
                opts.run.train_path
            ),
        });
    }
    let lengths: Vec<usize> = inputs.iter().map(|i| i.enc.len()).collect();
    let batches_per_epoch = lengths.len().div_ceil(opts.run.batch_size.max(1));
    let (steps_per_epoch, total_steps) = opts.run.steps(batches_per_epoch);
    model.set_requires_grad(true);
    let start = serde_json::json!({
        "event": "start", "options": opts, "train_examples": inputs.len(),
        "dropped_examples": dropped, "dev_examples": dev.len(),
        "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
        "head_from_base": had_head,
    });
    eprintln!(
        "training {KIND} on {} examples ({dropped} dropped: span past --max-len), {total_steps} optimizer steps; dev: {} examples",
        inputs.len(),
        dev.len()
    );
    let trainee = SpanTrainee {
        opts,
        model,
        inputs,
        gold,
        lengths,
        dev,
        base_card,
    };
    run(
        &trainee,
        &LoopOptions {
            run: &opts.run,
            label: "train",
            total_steps,
            start,
        },
    )
}

fn write_card(
    opts: &SpanTrainOptions,
    base_card: Option<&ModelCard>,
    state: &RunState,
    examples: usize,
) -> Result<ModelCard> {
    write_training_card(
        CardParts {
            kind: KIND,
            run: &opts.run,
            settings: serde_json::to_value(opts.settings()).expect("serializes"),
            base_card,
            hyperparameters: serde_json::json!({
                "data": opts.data_note,
                "loss": if opts.no_span {
                    "cross-entropy of the gold start and end token (mean of the two); [CLS] is the gold of a sentence without a span"
                } else {
                    "cross-entropy of the gold start and end token (mean of the two)"
                },
                "context_words": opts.context_words, "no_span": opts.no_span,
                "max_question_pieces": opts.max_question_pieces, "max_answer_tokens": opts.max_answer_tokens,
                "train_examples": examples, "early_stopping": "dev token F1",
                "weights": "fp16 encoder, fp32 head",
            }),
        },
        state,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tiny_base(dir: &Path) -> PathBuf {
        ansel_bert::testing::tiny_base(dir, 0.1)
    }

    fn toks(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    fn examples() -> Vec<SpanExample> {
        vec![
            SpanExample {
                question: "who wrote hamlet ?".into(),
                tokens: toks("it was written by william shakespeare ."),
                spans: vec![(4, 6)],
                ..SpanExample::default()
            },
            SpanExample {
                question: "where is hamlet set ?".into(),
                tokens: toks("hamlet is set in denmark ."),
                spans: vec![(4, 5)],
                ..SpanExample::default()
            },
            SpanExample {
                question: "who wrote the plays ?".into(),
                tokens: toks("the plays were written by shakespeare ."),
                spans: vec![(5, 6)],
                ..SpanExample::default()
            },
        ]
    }

    fn options(base: &Path, out: &Path) -> SpanTrainOptions {
        let mut o = SpanTrainOptions::defaults(base.to_str().unwrap(), out);
        o.run.lr = 3e-3;
        o.run.batch_size = 3;
        o.run.epochs = 40;
        o.run.warmup = 0.0;
        o.run.patience = 100;
        o.run.checkpoint_every = 1;
        o
    }

    #[test]
    fn learns_the_training_spans_and_loads_back() {
        let _serial = ansel_bert::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path());
        let out = dir.path().join("out");
        let opts = options(&base, &out);
        let card = train(&opts, &examples(), &examples()).unwrap();
        let f1 = card.training.as_ref().unwrap().metrics["dev F1"];
        assert!(f1 > 0.99, "a tiny model memorises 3 spans: dev F1 {f1}");
        // The shared loop selects on dev F1 and names it in the log's last entry.
        let log = ansel_model::train::TrainingLog::read(&out).unwrap();
        let end = log.last().unwrap();
        assert_eq!(end["event"], "end");
        assert!(end["best_dev_F1"].as_f64().unwrap() > 0.99, "{end}");
        assert!(end.get("best_dev_MAP").is_none() && !out.join("training.svg").exists());
        let model = SpanExtractor::open(&out).unwrap();
        let ex = examples();
        let items: Vec<_> = ex.iter().map(SpanExample::reading).collect();
        let found = model.extract_all(&items).unwrap();
        assert_eq!(found[0].as_ref().unwrap().text, "william shakespeare");
        assert_eq!(found[1].as_ref().unwrap().text, "denmark");
        assert_eq!(evaluate(&model, &ex).unwrap()["dev EM"], 1.0);
        // Spans never exceed max_answer_tokens.
        let mut short = SpanExtractor::open(&out).unwrap();
        short.settings.max_answer_tokens = 1;
        let found = short.extract_all(&items).unwrap();
        assert!(found.iter().flatten().all(|x| x.end - x.start == 1));
    }

    #[test]
    fn a_reader_trained_from_a_reader_records_every_stage_before_it() {
        let _serial = ansel_bert::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path());
        let first = dir.path().join("first");
        let mut opts = options(&base, &first);
        opts.run.epochs = 1;
        opts.run.train_path = "stage-1.jsonl".into();
        train(&opts, &examples(), &examples()).unwrap();
        let second = dir.path().join("second");
        let mut opts = options(&first, &second);
        opts.run.epochs = 1;
        opts.run.train_path = "stage-2.jsonl".into();
        let card = train(&opts, &examples(), &examples()).unwrap();
        let record = card.training.unwrap();
        assert_eq!(record.train_data, ["stage-1.jsonl", "stage-2.jsonl"]);
        let bases = [first.to_str().unwrap(), base.to_str().unwrap()];
        assert_eq!(record.base, bases);
    }

    #[test]
    fn resuming_after_a_checkpoint_matches_an_uninterrupted_run() {
        let _serial = ansel_bert::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = ansel_bert::testing::tiny_base(dir.path(), 0.0);
        let full = dir.path().join("full");
        let mut opts = options(&base, &full);
        opts.run.epochs = 3;
        opts.run.batch_size = 1;
        train(&opts, &examples(), &examples()).unwrap();
        let cut = dir.path().join("cut");
        let mut first = opts.clone();
        first.run.out = cut.clone();
        first.run.interrupt_after = Some(5);
        assert!(train(&first, &examples(), &examples()).is_err());
        let mut again = opts.clone();
        again.run.out = cut.clone();
        assert!(
            train(&again, &examples(), &examples()).is_err(),
            "refuses to overwrite without --resume"
        );
        again.run.resume = true;
        train(&again, &examples(), &examples()).unwrap();
        ansel_bert::testing::assert_same_checkpoints(&full, &cut, &["weights.safetensors"]);
    }

    #[test]
    fn spans_cut_by_the_length_limit_are_dropped_and_an_empty_set_is_an_error() {
        let _serial = ansel_bert::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path());
        let mut opts = options(&base, &dir.path().join("out"));
        opts.run.max_len = 10;
        opts.max_question_pieces = 4;
        let (model, _) = SpanExtractor::from_base(&base, opts.settings()).unwrap();
        let (inputs, gold, dropped) = encode_examples(&model.encoder(), &examples()).unwrap();
        // "[CLS] q q q q [SEP] ... [SEP]" leaves 3 sentence pieces: every gold span is cut.
        assert_eq!((inputs.len(), dropped), (0, 3), "{gold:?}");
        let err = train(&opts, &examples(), &examples()).unwrap_err();
        assert!(err.to_string().contains("no training example"), "{err}");
    }
}
