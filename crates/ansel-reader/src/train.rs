//! Fine-tuning a span extractor: cross-entropy on the gold start and end tokens, with
//! ansel-torch's AdamW (decoupled weight decay), linear warm-up and decay, gradient clipping,
//! length bucketing and gradient accumulation; dev exact match / token F1 with early stopping
//! on F1; checkpoints (weights, head, optimizer moments, position) that survive kill -9.
//!
//! The model-specific part is [`SpanExtractor::loss`] and [`evaluate`]; the loop around them
//! mirrors `ansel_bert::train` so that a shared loop can take them over.

use crate::model::{SpanInput, HEAD_FILE};
use crate::{best_f1, exact_match, SpanExample, SpanExtractor, SpanSettings, KIND};
use ansel_bert::train::{bucketed_batches, load_weights_into, machine, round};
use ansel_model::train::{EarlyStopping, Progress, TrainingLog};
use ansel_model::{write_atomic, ModelCard, ModelError, Result, TrainingRecord};
use ansel_torch::tch::Kind;
use ansel_torch::{clip_gradients, zero_gradients, AdamW};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything a span-extractor run needs.
#[derive(Debug, Clone, Serialize)]
pub struct SpanTrainOptions {
    /// A Hugging Face BERT directory, an ansel cross-encoder, or a span extractor.
    pub base: String,
    pub train_path: String,
    pub dev_path: String,
    /// How the training examples were made (recorded in the card), e.g. "jacana gold spans".
    pub data_note: String,
    pub out: PathBuf,
    pub name: String,
    pub max_len: usize,
    pub max_question_pieces: usize,
    pub max_answer_tokens: usize,
    pub epochs: usize,
    pub lr: f64,
    pub batch_size: usize,
    pub accumulate: usize,
    pub warmup: f64,
    pub weight_decay: f64,
    pub max_grad_norm: f64,
    pub seed: u64,
    pub patience: usize,
    /// Evaluate on dev every this many optimizer steps (0: once per epoch only).
    pub eval_every: usize,
    pub checkpoint_every: usize,
    pub max_steps: Option<usize>,
    pub threads: usize,
    pub resume: bool,
    /// Tests only: fail as if killed right after the checkpoint of this optimizer step.
    #[serde(skip)]
    pub interrupt_after: Option<usize>,
}

impl SpanTrainOptions {
    pub fn defaults(base: &str, out: &Path) -> SpanTrainOptions {
        let s = SpanSettings::default();
        SpanTrainOptions {
            base: base.into(),
            train_path: String::new(),
            dev_path: String::new(),
            data_note: String::new(),
            out: out.to_path_buf(),
            name: KIND.into(),
            max_len: s.max_len,
            max_question_pieces: s.max_question_pieces,
            max_answer_tokens: s.max_answer_tokens,
            epochs: 3,
            lr: 5e-5,
            batch_size: 16,
            accumulate: 1,
            warmup: 0.1,
            weight_decay: 0.01,
            max_grad_norm: 1.0,
            seed: 42,
            patience: 2,
            eval_every: 0,
            checkpoint_every: 20,
            max_steps: None,
            threads: 1,
            resume: false,
            interrupt_after: None,
        }
    }

    fn settings(&self) -> SpanSettings {
        SpanSettings {
            max_len: self.max_len,
            max_question_pieces: self.max_question_pieces,
            max_answer_tokens: self.max_answer_tokens,
        }
    }
}

const CHECKPOINT: &str = "checkpoint";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RunState {
    epoch: usize,
    batches_done: usize,
    opt_step: usize,
    evals: usize,
    early: EarlyStopping,
    best_metrics: BTreeMap<String, f64>,
    train_seconds: f64,
    stopped: bool,
}

/// Dev exact match and token F1 (means over examples, against each example's gold spans).
pub fn evaluate(model: &SpanExtractor, dev: &[SpanExample]) -> Result<BTreeMap<String, f64>> {
    let items: Vec<(&str, &[String])> = dev
        .iter()
        .map(|e| (e.question.as_str(), e.tokens.as_slice()))
        .collect();
    let found = model.extract_all(&items, 32)?;
    let (mut em, mut f1) = (0.0, 0.0);
    for (e, x) in dev.iter().zip(&found) {
        let text = x.as_ref().map_or("", |x| x.text.as_str());
        em += exact_match(text, &e.answers());
        f1 += best_f1(text, &e.answers());
    }
    let n = dev.len().max(1) as f64;
    Ok(BTreeMap::from([
        ("dev EM".to_string(), em / n),
        ("dev F1".to_string(), f1 / n),
    ]))
}

/// Inputs, gold (start, end) among selectable tokens, and the number of examples dropped.
type Encoded = (Vec<SpanInput>, Vec<(i64, i64)>, usize);

/// Encoded training examples with their gold (start, end) among selectable tokens; examples
/// whose span the length limit cuts are dropped (counted in the second value).
fn encode_examples(model: &SpanExtractor, examples: &[SpanExample]) -> Result<Encoded> {
    let mut inputs = Vec::new();
    let mut gold = Vec::new();
    let mut dropped = 0;
    for e in examples {
        let Some(&(s, end)) = e.spans.first() else {
            dropped += 1;
            continue;
        };
        let inp = model.encode(&e.question, &e.tokens)?;
        let a = inp.token.iter().position(|&t| t == s);
        let b = inp.token.iter().rposition(|&t| t + 1 == end);
        match (a, b) {
            (Some(a), Some(b)) if a <= b => {
                gold.push((a as i64, b as i64));
                inputs.push(inp);
            }
            _ => dropped += 1,
        }
    }
    Ok((inputs, gold, dropped))
}

/// Fine-tunes a span extractor and writes the model directory `opts.out` (model.json,
/// config.json, tokenizer.json, model.safetensors in fp16, span_head.safetensors,
/// train-log.jsonl, checkpoint/ for `--resume`).
pub fn train(
    opts: &SpanTrainOptions,
    train: &[SpanExample],
    dev: &[SpanExample],
) -> Result<ModelCard> {
    ansel_torch::init(opts.threads, opts.seed);
    let base_dir = ansel_bert::resolve_base(&opts.base)?;
    let (mut model, had_head) = SpanExtractor::from_base(&base_dir, opts.settings())?;
    let out = &opts.out;
    std::fs::create_dir_all(out).map_err(|e| ModelError::io(out, e))?;
    let ckpt = out.join(CHECKPOINT);
    if !opts.resume && ckpt.join("state.json").exists() {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!(
                "{} holds a checkpoint of an earlier run: pass --resume to continue it, or choose another --out",
                out.display()
            ),
        });
    }
    for file in ["config.json", "tokenizer.json"] {
        let bytes = std::fs::read(base_dir.join(file))
            .map_err(|e| ModelError::io(base_dir.join(file), e))?;
        write_atomic(&out.join(file), &bytes)?;
    }
    let (inputs, gold, dropped) = encode_examples(&model, train)?;
    if inputs.is_empty() {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!(
                "{}: no training example with an answer span inside --max-len",
                opts.train_path
            ),
        });
    }
    let lengths: Vec<usize> = inputs.iter().map(|i| i.enc.len()).collect();
    let batches_per_epoch = lengths.len().div_ceil(opts.batch_size.max(1));
    let accumulate = opts.accumulate.max(1);
    let steps_per_epoch = batches_per_epoch.div_ceil(accumulate);
    let mut total_steps = steps_per_epoch * opts.epochs;
    if let Some(max) = opts.max_steps {
        total_steps = total_steps.min(max);
    }
    let schedule = ansel_torch::WarmupLinear {
        peak: opts.lr,
        warmup: ((total_steps as f64 * opts.warmup).ceil() as usize).max(1),
        total: total_steps,
    };
    model.set_requires_grad(true);
    let params = model.params();
    let mut adam = AdamW::new(&params);
    let mut state = RunState {
        epoch: 0,
        batches_done: 0,
        opt_step: 0,
        evals: 0,
        early: EarlyStopping::new(opts.patience),
        best_metrics: BTreeMap::new(),
        train_seconds: 0.0,
        stopped: false,
    };
    let mut log = TrainingLog::open(out)?;
    if opts.resume {
        let state_path = ckpt.join("state.json");
        let bytes = std::fs::read(&state_path).map_err(|e| ModelError::io(&state_path, e))?;
        state = serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
            path: state_path.clone(),
            message: format!("line {}: {e}", e.line()),
        })?;
        load_weights_into(&model.encoder, &ckpt.join("weights.safetensors"))?;
        model.load_head_from(&ckpt.join(HEAD_FILE))?;
        adam.load(&ckpt.join("optimizer.safetensors"))?;
        log.append(
            &serde_json::json!({"event": "resume", "epoch": state.epoch, "step": state.opt_step}),
        )?;
    } else {
        log.append(&serde_json::json!({
            "event": "start", "options": opts, "train_examples": inputs.len(),
            "dropped_examples": dropped, "dev_examples": dev.len(),
            "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
            "head_from_base": had_head,
        }))?;
    }
    eprintln!(
        "training {KIND} on {} examples ({dropped} dropped: span past --max-len), {total_steps} optimizer steps; dev: {} examples",
        inputs.len(),
        dev.len()
    );
    let started = Instant::now();
    let seconds_before = state.train_seconds;
    let elapsed = || seconds_before + started.elapsed().as_secs_f64();
    let mut progress = Progress::new(total_steps as u64, "train");
    for _ in 0..state.opt_step {
        progress.step(0, 0.0);
    }
    let (mut window_loss, mut window_n, mut window_steps) = (0.0, 0usize, 0usize);
    let mut window_started = Instant::now();
    'epochs: while state.epoch < opts.epochs && !state.stopped && state.opt_step < total_steps {
        let batches = bucketed_batches(
            &lengths,
            opts.batch_size,
            opts.seed.wrapping_add(state.epoch as u64 * 7919),
        );
        let (mut step_loss, mut step_n, mut micro) = (0.0, 0usize, 0usize);
        while state.batches_done < batches.len() {
            let idx = &batches[state.batches_done];
            let refs: Vec<&SpanInput> = idx.iter().map(|&i| &inputs[i]).collect();
            let g: Vec<(i64, i64)> = idx.iter().map(|&i| gold[i]).collect();
            let loss = model.loss(&refs, &g, true);
            let value = loss.double_value(&[]);
            if !value.is_finite() {
                return Err(ModelError::Backend(format!(
                    "loss became {value} at step {} (try a lower --lr)",
                    state.opt_step
                )));
            }
            (loss / accumulate as f64).backward();
            step_loss += value * idx.len() as f64;
            step_n += idx.len();
            micro += 1;
            state.batches_done += 1;
            let last = state.batches_done == batches.len();
            if micro < accumulate && !last {
                continue;
            }
            micro = 0;
            let grad_norm = clip_gradients(&params, opts.max_grad_norm);
            let lr = schedule.at(state.opt_step);
            state.opt_step += 1;
            adam.step(&params, lr, opts.weight_decay, state.opt_step);
            zero_gradients(&params);
            progress.step(step_n as u64, step_loss / step_n.max(1) as f64);
            window_loss += step_loss;
            window_n += step_n;
            window_steps += 1;
            step_loss = 0.0;
            step_n = 0;
            if window_steps == 10 || last {
                let secs = window_started.elapsed().as_secs_f64().max(1e-9);
                log.append(&serde_json::json!({
                    "step": state.opt_step, "epoch": state.epoch + 1,
                    "loss": round(window_loss / window_n.max(1) as f64), "lr": lr,
                    "grad_norm": round(grad_norm), "pairs_per_s": round(window_n as f64 / secs),
                    "elapsed_s": round(elapsed()),
                }))?;
                (window_loss, window_n, window_steps) = (0.0, 0, 0);
                window_started = Instant::now();
            }
            let at_end = last || state.opt_step >= total_steps;
            let eval_now =
                at_end || (opts.eval_every > 0 && state.opt_step.is_multiple_of(opts.eval_every));
            if eval_now {
                if last {
                    state.epoch += 1;
                    state.batches_done = 0;
                }
                let metrics = evaluate(&model, dev)?;
                state.evals += 1;
                let f1 = metrics.get("dev F1").copied().unwrap_or(0.0);
                let better = state.early.observe(state.evals, f1);
                let mut entry = serde_json::json!({"eval": state.evals, "step": state.opt_step,
                    "epoch": state.epoch, "best": better, "elapsed_s": round(elapsed())});
                for (k, v) in &metrics {
                    entry[k.replace(' ', "_")] = serde_json::json!(round(*v));
                }
                log.append(&entry)?;
                eprintln!(
                    "eval {}: step {} dev F1 {f1:.4} EM {:.4}{}",
                    state.evals,
                    state.opt_step,
                    metrics.get("dev EM").copied().unwrap_or(0.0),
                    if better { " (best)" } else { "" }
                );
                state.train_seconds = elapsed();
                if better {
                    state.best_metrics = metrics;
                    model
                        .encoder
                        .save(&out.join("model.safetensors"), Kind::Half)?;
                    model.save_head(&out.join(HEAD_FILE))?;
                    write_card(opts, &state, inputs.len())?;
                }
                if state.early.should_stop() {
                    state.stopped = true;
                }
                save_checkpoint(&ckpt, &model, &adam, &state)?;
                if state.stopped || state.opt_step >= total_steps {
                    break 'epochs;
                }
                if last {
                    continue 'epochs;
                }
            } else if opts.checkpoint_every > 0
                && state.opt_step.is_multiple_of(opts.checkpoint_every)
            {
                state.train_seconds = elapsed();
                save_checkpoint(&ckpt, &model, &adam, &state)?;
                if opts.interrupt_after == Some(state.opt_step) {
                    return Err(ModelError::Backend("interrupted (test)".into()));
                }
            }
        }
        state.epoch += 1;
        state.batches_done = 0;
    }
    progress.finish();
    state.train_seconds = elapsed();
    save_checkpoint(&ckpt, &model, &adam, &state)?;
    let card = write_card(opts, &state, inputs.len())?;
    log.append(
        &serde_json::json!({"event": "end", "epochs": state.epoch, "step": state.opt_step,
        "best_eval": state.early.best_epoch, "best_dev_F1": state.early.best,
        "train_seconds": round(state.train_seconds)}),
    )?;
    Ok(card)
}

fn save_checkpoint(
    dir: &Path,
    model: &SpanExtractor,
    adam: &AdamW,
    state: &RunState,
) -> Result<()> {
    ansel_model::replace_dir(dir, |d| {
        model
            .encoder
            .save(&d.join("weights.safetensors"), Kind::Float)?;
        model.save_head(&d.join(HEAD_FILE))?;
        adam.save(&d.join("optimizer.safetensors"))?;
        let json = serde_json::to_vec_pretty(state).expect("state serializes");
        write_atomic(&d.join("state.json"), &json)
    })
}

fn write_card(opts: &SpanTrainOptions, state: &RunState, examples: usize) -> Result<ModelCard> {
    let mut card = ModelCard::new(
        KIND,
        &opts.name,
        serde_json::to_value(opts.settings()).expect("serializes"),
    );
    card.training = Some(TrainingRecord {
        train_data: vec![opts.train_path.clone()],
        dev_data: Some(opts.dev_path.clone()),
        hyperparameters: serde_json::json!({
            "data": opts.data_note, "loss": "cross-entropy of the gold start and end token (mean of the two)",
            "optimizer": "AdamW (decoupled weight decay; none on biases and LayerNorm)", "lr": opts.lr,
            "schedule": format!("linear warm-up over {} of the steps, then linear decay to 0", opts.warmup),
            "batch_size": opts.batch_size, "accumulate": opts.accumulate, "epochs": opts.epochs,
            "max_len": opts.max_len, "max_question_pieces": opts.max_question_pieces,
            "max_answer_tokens": opts.max_answer_tokens, "weight_decay": opts.weight_decay,
            "max_grad_norm": opts.max_grad_norm, "train_examples": examples, "eval_every": opts.eval_every,
            "patience": opts.patience, "max_steps": opts.max_steps, "threads": opts.threads,
            "early_stopping": "dev token F1", "weights": "fp16 encoder, fp32 head",
        }),
        seed: opts.seed,
        epochs_completed: state.epoch,
        best_epoch: state.early.best_epoch,
        metrics: state.best_metrics.clone(),
        train_seconds: round(state.train_seconds),
        machine: machine(),
        base: vec![opts.base.clone()],
    });
    card.write(&opts.out)?;
    Ok(card)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_bert::{BertConfig, CrossEncoder};
    use ansel_torch::tch::{self, Tensor};

    const WORDS: [&str; 25] = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "who",
        "wrote",
        "hamlet",
        "?",
        "shakespeare",
        "it",
        "was",
        "written",
        "by",
        "william",
        "a",
        "play",
        "the",
        "is",
        "##s",
        "tragedy",
        ".",
        "denmark",
        "in",
        "set",
    ];

    fn tiny_base(dir: &Path) -> PathBuf {
        let base = dir.join("base");
        std::fs::create_dir_all(&base).unwrap();
        let config = BertConfig::tiny(WORDS.len() as i64);
        std::fs::write(
            base.join("config.json"),
            serde_json::to_vec(&config).unwrap(),
        )
        .unwrap();
        let vocab: serde_json::Map<String, serde_json::Value> = WORDS
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
            .collect();
        let tok = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                            "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": null, "decoder": null,
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": vocab}
        });
        std::fs::write(base.join("tokenizer.json"), tok.to_string()).unwrap();
        tch::manual_seed(3);
        CrossEncoder::random(config)
            .unwrap()
            .save(&base.join("model.safetensors"), Kind::Float)
            .unwrap();
        base
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
            },
            SpanExample {
                question: "where is hamlet set ?".into(),
                tokens: toks("hamlet is set in denmark ."),
                spans: vec![(4, 5)],
            },
            SpanExample {
                question: "who wrote the plays ?".into(),
                tokens: toks("the plays were written by shakespeare ."),
                spans: vec![(5, 6)],
            },
        ]
    }

    fn options(base: &Path, out: &Path) -> SpanTrainOptions {
        let mut o = SpanTrainOptions::defaults(base.to_str().unwrap(), out);
        o.lr = 3e-3;
        o.batch_size = 3;
        o.epochs = 40;
        o.warmup = 0.0;
        o.patience = 100;
        o.checkpoint_every = 1;
        o
    }

    #[test]
    fn learns_the_training_spans_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path());
        let out = dir.path().join("out");
        let opts = options(&base, &out);
        let card = train(&opts, &examples(), &examples()).unwrap();
        let f1 = card.training.as_ref().unwrap().metrics["dev F1"];
        assert!(f1 > 0.99, "a tiny model memorises 3 spans: dev F1 {f1}");
        let model = SpanExtractor::open(&out).unwrap();
        let ex = examples();
        let items: Vec<(&str, &[String])> = ex
            .iter()
            .map(|e| (e.question.as_str(), e.tokens.as_slice()))
            .collect();
        let found = model.extract_all(&items, 2).unwrap();
        assert_eq!(found[0].as_ref().unwrap().text, "william shakespeare");
        assert_eq!(found[1].as_ref().unwrap().text, "denmark");
        assert_eq!(evaluate(&model, &ex).unwrap()["dev EM"], 1.0);
        // Spans never exceed max_answer_tokens.
        let mut short = SpanExtractor::open(&out).unwrap();
        short.settings.max_answer_tokens = 1;
        let found = short.extract_all(&items, 8).unwrap();
        assert!(found.iter().flatten().all(|x| x.end - x.start == 1));
    }

    #[test]
    fn resuming_after_a_checkpoint_matches_an_uninterrupted_run() {
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path());
        let mut config: BertConfig =
            serde_json::from_slice(&std::fs::read(base.join("config.json")).unwrap()).unwrap();
        config.hidden_dropout_prob = 0.0;
        config.attention_probs_dropout_prob = 0.0;
        std::fs::write(
            base.join("config.json"),
            serde_json::to_vec(&config).unwrap(),
        )
        .unwrap();
        let full = dir.path().join("full");
        let mut opts = options(&base, &full);
        opts.epochs = 3;
        opts.batch_size = 1;
        train(&opts, &examples(), &examples()).unwrap();
        let cut = dir.path().join("cut");
        let mut first = opts.clone();
        first.out = cut.clone();
        first.interrupt_after = Some(5);
        assert!(train(&first, &examples(), &examples()).is_err());
        let mut again = opts.clone();
        again.out = cut.clone();
        assert!(
            train(&again, &examples(), &examples()).is_err(),
            "refuses to overwrite without --resume"
        );
        again.resume = true;
        train(&again, &examples(), &examples()).unwrap();
        let read = |d: &Path| -> BTreeMap<String, Tensor> {
            Tensor::read_safetensors(d.join(CHECKPOINT).join("weights.safetensors"))
                .unwrap()
                .into_iter()
                .collect()
        };
        let (a, b) = (read(&full), read(&cut));
        for (name, t) in &a {
            let diff = (t - &b[name]).abs().max().double_value(&[]);
            assert!(diff < 1e-5, "{name} differs by {diff}");
        }
    }

    #[test]
    fn spans_cut_by_the_length_limit_are_dropped_and_an_empty_set_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path());
        let mut opts = options(&base, &dir.path().join("out"));
        opts.max_len = 10;
        opts.max_question_pieces = 4;
        let (model, _) = SpanExtractor::from_base(&base, opts.settings()).unwrap();
        let (inputs, gold, dropped) = encode_examples(&model, &examples()).unwrap();
        // "[CLS] q q q q [SEP] ... [SEP]" leaves 3 sentence pieces: every gold span is cut.
        assert_eq!((inputs.len(), dropped), (0, 3), "{gold:?}");
        let err = train(&opts, &examples(), &examples()).unwrap_err();
        assert!(err.to_string().contains("no training example"), "{err}");
    }
}
