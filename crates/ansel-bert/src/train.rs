//! Fine-tuning a cross-encoder: point-wise BCE on (question, candidate) pairs, AdamW with
//! decoupled weight decay, linear warm-up then linear decay, gradient clipping, dynamic
//! padding with length bucketing, gradient accumulation, dev-MAP evaluation with early
//! stopping, and checkpoints (weights + optimizer moments + position) that survive kill -9.
//!
//! TANDA (transfer then adapt) is two runs: the first on a large AS2 set from a pretrained
//! encoder, the second with `base` = the first run's output directory. The second run's
//! record lists both data sets and both bases.

use crate::model::write_tensors;
use crate::ranker::{encode_candidate, score_encoded, CrossEncoderSettings};
use crate::{
    resolve_base, training_svg, Batch, BertConfig, CrossEncoder, Encoded, InputMode, PairTokenizer,
    KIND,
};
use ansel_data::{shuffle_seeded, Question};
use ansel_eval::{evaluate, Filter};
use ansel_model::train::{EarlyStopping, Progress, TrainingLog};
use ansel_model::{write_atomic, ModelCard, ModelError, Result, TrainingRecord};
use ansel_torch::tch::{self, Kind, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything a fine-tuning run needs.
#[derive(Debug, Clone, Serialize)]
pub struct TrainOptions {
    /// Hugging Face BERT directory, or a cross-encoder directory (TANDA's adapt step).
    pub base: String,
    pub train_path: String,
    pub dev_path: String,
    pub out: PathBuf,
    pub name: String,
    pub input: InputMode,
    pub max_len: usize,
    pub epochs: usize,
    pub lr: f64,
    /// Pairs per forward/backward pass.
    pub batch_size: usize,
    /// Micro-batches per optimizer step (effective batch = batch_size * accumulate).
    pub accumulate: usize,
    /// Fraction of all optimizer steps spent warming up.
    pub warmup: f64,
    pub weight_decay: f64,
    pub max_grad_norm: f64,
    pub seed: u64,
    /// Evaluations without a better dev MAP before stopping.
    pub patience: usize,
    /// Evaluate on dev every this many optimizer steps (0: once per epoch only).
    pub eval_every: usize,
    /// Save a checkpoint every this many optimizer steps (also after every evaluation).
    pub checkpoint_every: usize,
    /// Train only on questions with at least one positive candidate.
    pub answered_only: bool,
    /// Use at most this many training pairs (whole questions, in a seeded random order).
    pub max_pairs: Option<usize>,
    /// Stop after this many optimizer steps in all (for short transfer runs).
    pub max_steps: Option<usize>,
    pub threads: usize,
    pub resume: bool,
    /// Tests only: fail as if killed right after the checkpoint of this optimizer step.
    #[serde(skip)]
    pub interrupt_after: Option<usize>,
}

impl TrainOptions {
    pub fn defaults(base: &str, out: &Path) -> TrainOptions {
        TrainOptions {
            base: base.into(),
            train_path: String::new(),
            dev_path: String::new(),
            out: out.to_path_buf(),
            name: "cross-encoder".into(),
            input: InputMode::Pair,
            max_len: 128,
            epochs: 3,
            lr: 3e-5,
            batch_size: 16,
            accumulate: 2,
            warmup: 0.1,
            weight_decay: 0.01,
            max_grad_norm: 1.0,
            seed: 42,
            patience: 3,
            eval_every: 0,
            checkpoint_every: 50,
            answered_only: true,
            max_pairs: None,
            max_steps: None,
            threads: 2,
            resume: false,
            interrupt_after: None,
        }
    }
}

pub(crate) const CHECKPOINT: &str = "checkpoint";

/// Where a run stands; saved with every checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunState {
    pub(crate) epoch: usize,
    /// Micro-batches of `epoch` already consumed.
    pub(crate) batches_done: usize,
    pub(crate) opt_step: usize,
    pub(crate) evals: usize,
    pub(crate) early: EarlyStopping,
    pub(crate) best_metrics: BTreeMap<String, f64>,
    pub(crate) train_seconds: f64,
    pub(crate) stopped: bool,
}

/// AdamW over named parameters (shared by every transformer trainer).
pub struct AdamW {
    m: BTreeMap<String, Tensor>,
    v: BTreeMap<String, Tensor>,
}

impl AdamW {
    const B1: f64 = 0.9;
    const B2: f64 = 0.999;
    const EPS: f64 = 1e-8;

    pub fn new(params: &BTreeMap<String, Tensor>) -> AdamW {
        let zeros = || {
            params
                .iter()
                .map(|(n, p)| (n.clone(), p.zeros_like().detach()))
                .collect()
        };
        AdamW {
            m: zeros(),
            v: zeros(),
        }
    }

    /// One step at learning rate `lr` (`step` counts from 1); no decay for biases and LayerNorm.
    pub fn step(&mut self, params: &BTreeMap<String, Tensor>, lr: f64, wd: f64, step: usize) {
        let bc1 = 1.0 - Self::B1.powi(step as i32);
        let bc2 = 1.0 - Self::B2.powi(step as i32);
        tch::no_grad(|| {
            for (name, p) in params {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                let (Some(m), Some(v)) = (self.m.get_mut(name), self.v.get_mut(name)) else {
                    continue;
                };
                let _ = m.g_mul_scalar_(Self::B1);
                let _ = m.g_add_(&(&g * (1.0 - Self::B1)));
                let _ = v.g_mul_scalar_(Self::B2);
                let _ = v.g_add_(&(&g * &g * (1.0 - Self::B2)));
                let mut p = p.shallow_clone();
                if wd > 0.0 && !(name.ends_with(".bias") || name.contains("LayerNorm")) {
                    let _ = p.g_mul_scalar_(1.0 - lr * wd);
                }
                let denom = (&*v / bc2).sqrt() + Self::EPS;
                let update = (&*m / bc1) / denom * lr;
                let _ = p.g_sub_(&update);
            }
        });
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let mut all: Vec<(String, Tensor)> = Vec::new();
        for (n, t) in &self.m {
            all.push((format!("m.{n}"), t.shallow_clone()));
        }
        for (n, t) in &self.v {
            all.push((format!("v.{n}"), t.shallow_clone()));
        }
        write_tensors(path, &all)
    }

    pub fn load(&mut self, path: &Path) -> Result<()> {
        let file = Tensor::read_safetensors(path).map_err(|e| ModelError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut found: BTreeMap<String, Tensor> = file.into_iter().collect();
        for (prefix, map) in [("m", &mut self.m), ("v", &mut self.v)] {
            for (n, t) in map.iter_mut() {
                let key = format!("{prefix}.{n}");
                let saved = found.remove(&key).ok_or_else(|| ModelError::Format {
                    path: path.to_path_buf(),
                    message: format!("tensor `{key}` is missing"),
                })?;
                *t = saved.to_kind(Kind::Float);
            }
        }
        Ok(())
    }
}

/// Scales gradients so that their global L2 norm is at most `max_norm`; returns the norm.
pub fn clip_gradients(params: &BTreeMap<String, Tensor>, max_norm: f64) -> f64 {
    tch::no_grad(|| {
        let grads: Vec<Tensor> = params
            .values()
            .map(|p| p.grad())
            .filter(|g| g.defined())
            .collect();
        let total: f64 = grads
            .iter()
            .map(|g| g.square().sum(Kind::Float).double_value(&[]))
            .sum::<f64>()
            .sqrt();
        if max_norm > 0.0 && total > max_norm {
            let scale = max_norm / (total + 1e-6);
            for mut g in grads {
                let _ = g.g_mul_scalar_(scale);
            }
        }
        total
    })
}

/// Clears every parameter's gradient.
pub fn zero_gradients(params: &BTreeMap<String, Tensor>) {
    for p in params.values() {
        let mut p = p.shallow_clone();
        p.zero_grad();
    }
}

/// Groups pair indices into micro-batches of similar length (dynamic padding with length
/// bucketing): a seeded shuffle, pools of 50 batches sorted by length, then the batches shuffled.
pub fn bucketed_batches(lengths: &[usize], batch_size: usize, seed: u64) -> Vec<Vec<usize>> {
    let batch_size = batch_size.max(1);
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    shuffle_seeded(&mut order, seed);
    let mut batches = Vec::new();
    for pool in order.chunks(batch_size * 50) {
        let mut pool = pool.to_vec();
        pool.sort_by_key(|&i| lengths[i]);
        batches.extend(pool.chunks(batch_size).map(<[usize]>::to_vec));
    }
    shuffle_seeded(
        &mut batches,
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1),
    );
    batches
}

type Base = (
    CrossEncoder,
    PairTokenizer,
    PathBuf,
    Option<ModelCard>,
    Vec<String>,
);

/// Loads the base: a Hugging Face BERT directory or a cross-encoder trained by ansel.
/// Returns the model, the tokenizer, the base's directory, its card (if an ansel model) and
/// the parameters initialised randomly.
fn load_base(spec: &str) -> Result<Base> {
    let dir = resolve_base(spec)?;
    let config = BertConfig::read(&dir.join("config.json"))?;
    let (model, initialised) = CrossEncoder::load(config, &dir.join("model.safetensors"))?;
    let tokenizer = PairTokenizer::read(&dir.join("tokenizer.json"))?;
    let card = if dir.join(ansel_model::CARD_FILE).is_file() {
        let card = ModelCard::read(&dir)?;
        (card.kind == KIND).then_some(card)
    } else {
        None
    };
    Ok((model, tokenizer, dir, card, initialised))
}

struct Pairs {
    items: Vec<Encoded>,
    labels: Vec<f32>,
}

fn training_pairs(
    tok: &PairTokenizer,
    questions: &[Question],
    opts: &TrainOptions,
) -> Result<Pairs> {
    let mut chosen: Vec<&Question> = questions
        .iter()
        .filter(|q| !opts.answered_only || q.positives() > 0)
        .collect();
    if let Some(max) = opts.max_pairs {
        shuffle_seeded(&mut chosen, opts.seed);
        let mut total = 0;
        chosen.retain(|q| {
            let keep = total < max;
            total += q.candidates.len();
            keep
        });
    }
    let mut pairs = Pairs {
        items: Vec::new(),
        labels: Vec::new(),
    };
    for q in chosen {
        for c in &q.candidates {
            pairs
                .items
                .push(encode_candidate(tok, q, c, opts.input, opts.max_len)?);
            pairs
                .labels
                .push(if c.label == Some(true) { 1.0 } else { 0.0 });
        }
    }
    if pairs.items.is_empty() {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!("{}: no training pairs", opts.train_path),
        });
    }
    Ok(pairs)
}

/// Dev questions worth scoring (those with a positive) and their encoded pairs.
fn dev_set(
    tok: &PairTokenizer,
    dev: &[Question],
    opts: &TrainOptions,
) -> Result<(Vec<Question>, Vec<Encoded>)> {
    let questions: Vec<Question> = dev.iter().filter(|q| q.positives() > 0).cloned().collect();
    let mut items = Vec::new();
    for q in &questions {
        for c in &q.candidates {
            items.push(encode_candidate(tok, q, c, opts.input, opts.max_len)?);
        }
    }
    Ok((questions, items))
}

fn evaluate_dev(
    model: &CrossEncoder,
    pad: i64,
    dev: &(Vec<Question>, Vec<Encoded>),
) -> BTreeMap<String, f64> {
    let flat = score_encoded(model, &dev.1, pad, 64);
    let mut at = 0;
    let scores: Vec<Vec<f32>> = dev
        .0
        .iter()
        .map(|q| {
            let s = flat[at..at + q.candidates.len()].to_vec();
            at += q.candidates.len();
            s
        })
        .collect();
    let report = evaluate(&dev.0, &scores, Filter::Answered);
    ["P@1", "MAP", "MRR"]
        .iter()
        .filter_map(|m| Some((format!("dev {m}"), report.metric(m)?)))
        .collect()
}

/// The machine a run trained on, for its card.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!(
        "{cores}-core {} CPU, libtorch {}",
        std::env::consts::ARCH,
        "2.13 (tch 0.26)"
    )
}

/// Fine-tunes a cross-encoder and writes the model directory `opts.out`
/// (model.json, config.json, tokenizer.json, model.safetensors in fp16, train-log.jsonl,
/// training.svg, and checkpoint/ for `--resume`).
pub fn train(opts: &TrainOptions, train: &[Question], dev: &[Question]) -> Result<ModelCard> {
    ansel_torch::init(opts.threads, opts.seed);
    let (mut model, tok, base_dir, base_card, initialised) = load_base(&opts.base)?;
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

    let pairs = training_pairs(&tok, train, opts)?;
    let dev_set = dev_set(&tok, dev, opts)?;
    let lengths: Vec<usize> = pairs.items.iter().map(Encoded::len).collect();
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
    let mut adam = AdamW::new(model.params());
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
        load_weights_into(&model, &ckpt.join("weights.safetensors"))?;
        adam.load(&ckpt.join("optimizer.safetensors"))?;
        log.append(
            &serde_json::json!({"event": "resume", "epoch": state.epoch, "step": state.opt_step}),
        )?;
    } else {
        log.append(&serde_json::json!({
            "event": "start", "options": opts, "train_pairs": pairs.items.len(),
            "positives": pairs.labels.iter().filter(|&&l| l > 0.5).count(),
            "dev_questions": dev_set.0.len(), "dev_pairs": dev_set.1.len(),
            "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
            "initialised_randomly": initialised,
        }))?;
    }
    eprintln!(
        "training {} on {} pairs ({} micro-batches of {} per epoch, {} optimizer steps in all); dev: {} questions",
        KIND,
        pairs.items.len(),
        batches_per_epoch,
        opts.batch_size,
        total_steps,
        dev_set.0.len()
    );

    let params = model.params();
    let started = Instant::now();
    let seconds_before = state.train_seconds;
    let elapsed = |state_secs: f64| state_secs + started.elapsed().as_secs_f64();
    let mut progress = Progress::new(total_steps as u64, "train");
    for _ in 0..state.opt_step {
        progress.step(0, 0.0);
    }
    let mut window_loss = 0.0;
    let mut window_pairs = 0usize;
    let mut window_started = Instant::now();
    let mut window_steps = 0usize;

    'epochs: while state.epoch < opts.epochs && !state.stopped && state.opt_step < total_steps {
        let batches = bucketed_batches(
            &lengths,
            opts.batch_size,
            opts.seed.wrapping_add(state.epoch as u64 * 7919),
        );
        let mut step_loss = 0.0;
        let mut step_pairs = 0usize;
        let mut micro = 0usize;
        while state.batches_done < batches.len() {
            let idx = &batches[state.batches_done];
            let refs: Vec<&Encoded> = idx.iter().map(|&i| &pairs.items[i]).collect();
            let labels: Vec<f32> = idx.iter().map(|&i| pairs.labels[i]).collect();
            let batch = Batch::new(&refs, tok.pad);
            let logits = model.logits(&batch, true);
            let loss = ansel_torch::pointwise_bce(&logits, &Tensor::from_slice(&labels));
            let loss_value = loss.double_value(&[]);
            if !loss_value.is_finite() {
                return Err(ModelError::Backend(format!(
                    "loss became {loss_value} at step {} (try a lower --lr)",
                    state.opt_step
                )));
            }
            (loss / accumulate as f64).backward();
            step_loss += loss_value * idx.len() as f64;
            step_pairs += idx.len();
            micro += 1;
            state.batches_done += 1;
            let last = state.batches_done == batches.len();
            if micro < accumulate && !last {
                continue;
            }
            micro = 0;
            let grad_norm = clip_gradients(params, opts.max_grad_norm);
            let lr = schedule.at(state.opt_step);
            state.opt_step += 1;
            adam.step(params, lr, opts.weight_decay, state.opt_step);
            zero_gradients(params);
            let mean = step_loss / step_pairs.max(1) as f64;
            progress.step(step_pairs as u64, mean);
            window_loss += step_loss;
            window_pairs += step_pairs;
            window_steps += 1;
            step_loss = 0.0;
            step_pairs = 0;
            if window_steps == 10 || last {
                let secs = window_started.elapsed().as_secs_f64().max(1e-9);
                log.append(&serde_json::json!({
                    "step": state.opt_step, "epoch": state.epoch + 1,
                    "loss": round(window_loss / window_pairs.max(1) as f64),
                    "lr": lr, "grad_norm": round(grad_norm),
                    "pairs_per_s": round(window_pairs as f64 / secs),
                    "elapsed_s": round(elapsed(seconds_before)),
                }))?;
                window_loss = 0.0;
                window_pairs = 0;
                window_steps = 0;
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
                state.train_seconds = elapsed(seconds_before);
                let metrics = tch::no_grad(|| evaluate_dev(&model, tok.pad, &dev_set));
                state.evals += 1;
                let map = metrics.get("dev MAP").copied().unwrap_or(0.0);
                let better = state.early.observe(state.evals, map);
                let mut entry = serde_json::json!({"eval": state.evals, "step": state.opt_step,
                    "epoch": state.epoch as f64 + if last { 0.0 } else { state.batches_done as f64 / batches.len() as f64 },
                    "best": better, "elapsed_s": round(elapsed(seconds_before))});
                for (k, v) in &metrics {
                    entry[k.replace(' ', "_")] = serde_json::json!(round(*v));
                }
                log.append(&entry)?;
                eprintln!(
                    "eval {}: step {} dev MAP {map:.4}{}",
                    state.evals,
                    state.opt_step,
                    if better { " (best)" } else { "" }
                );
                if better {
                    state.best_metrics = metrics;
                    model.save(&out.join("model.safetensors"), Kind::Half)?;
                    write_card(opts, &state, base_card.as_ref(), pairs.items.len())?;
                }
                if state.early.should_stop() {
                    state.stopped = true;
                }
                state.train_seconds = elapsed(seconds_before);
                save_checkpoint(&ckpt, &model, &adam, &state)?;
                let _ = write_atomic(
                    &out.join("training.svg"),
                    training_svg(&TrainingLog::read(out)?).as_bytes(),
                );
                if state.stopped || state.opt_step >= total_steps {
                    break 'epochs;
                }
                if last {
                    continue 'epochs;
                }
            } else if opts.checkpoint_every > 0
                && state.opt_step.is_multiple_of(opts.checkpoint_every)
            {
                state.train_seconds = elapsed(seconds_before);
                save_checkpoint(&ckpt, &model, &adam, &state)?;
                if opts.interrupt_after == Some(state.opt_step) {
                    return Err(ModelError::Backend("interrupted (test)".into()));
                }
            }
        }
        // An epoch that ended on a resumed, already-finished position.
        state.epoch += 1;
        state.batches_done = 0;
    }
    progress.finish();
    state.train_seconds = elapsed(seconds_before);
    save_checkpoint(&ckpt, &model, &adam, &state)?;
    let card = write_card(opts, &state, base_card.as_ref(), pairs.items.len())?;
    log.append(&serde_json::json!({"event": "end", "epochs": state.epoch, "step": state.opt_step,
        "best_eval": state.early.best_epoch, "best_dev_MAP": state.early.best, "train_seconds": round(state.train_seconds)}))?;
    write_atomic(
        &out.join("training.svg"),
        training_svg(&TrainingLog::read(out)?).as_bytes(),
    )?;
    Ok(card)
}

/// Rounds to 6 decimals (logs and cards).
pub fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Copies saved weights (Hugging Face names, with or without `bert.`) into `model`.
pub fn load_weights_into(model: &CrossEncoder, path: &Path) -> Result<()> {
    let file = Tensor::read_safetensors(path).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let found: BTreeMap<String, Tensor> = file
        .into_iter()
        .map(|(n, t)| (n.strip_prefix("bert.").unwrap_or(&n).to_string(), t))
        .collect();
    tch::no_grad(|| {
        for (name, p) in model.params() {
            let saved = found.get(name).ok_or_else(|| ModelError::Format {
                path: path.to_path_buf(),
                message: format!("tensor `{name}` is missing"),
            })?;
            let mut p = p.shallow_clone();
            p.copy_(&saved.to_kind(Kind::Float));
        }
        Ok(())
    })
}

fn save_checkpoint(dir: &Path, model: &CrossEncoder, adam: &AdamW, state: &RunState) -> Result<()> {
    // Written into a fresh directory swapped in whole, so a kill leaves the old or the new one.
    ansel_model::replace_dir(dir, |d| {
        model.save(&d.join("weights.safetensors"), Kind::Float)?;
        adam.save(&d.join("optimizer.safetensors"))?;
        let json = serde_json::to_vec_pretty(state).expect("state serializes");
        write_atomic(&d.join("state.json"), &json)
    })
}

fn write_card(
    opts: &TrainOptions,
    state: &RunState,
    base: Option<&ModelCard>,
    pairs: usize,
) -> Result<ModelCard> {
    let settings = CrossEncoderSettings {
        input: opts.input,
        max_len: opts.max_len,
        batch_size: 32,
    };
    let mut card = ModelCard::new(
        KIND,
        &opts.name,
        serde_json::to_value(&settings).expect("serializes"),
    );
    let mut train_data = Vec::new();
    let mut bases = vec![opts.base.clone()];
    if let Some(record) = base.and_then(|c| c.training.as_ref()) {
        train_data.extend(record.train_data.iter().cloned());
        bases.extend(record.base.iter().cloned());
    }
    train_data.push(opts.train_path.clone());
    card.training = Some(TrainingRecord {
        train_data,
        dev_data: Some(opts.dev_path.clone()),
        hyperparameters: serde_json::json!({
            "loss": "pointwise BCE", "optimizer": "AdamW (decoupled weight decay; none on biases and LayerNorm)",
            "lr": opts.lr, "schedule": format!("linear warm-up over {} of the steps, then linear decay to 0", opts.warmup),
            "batch_size": opts.batch_size, "accumulate": opts.accumulate,
            "effective_batch": opts.batch_size * opts.accumulate, "epochs": opts.epochs,
            "max_len": opts.max_len, "input": opts.input, "weight_decay": opts.weight_decay,
            "max_grad_norm": opts.max_grad_norm, "dropout": "from config.json",
            "answered_only": opts.answered_only, "max_pairs": opts.max_pairs, "max_steps": opts.max_steps,
            "train_pairs": pairs, "eval_every": opts.eval_every, "patience": opts.patience,
            "threads": opts.threads, "weights": "fp16",
        }),
        seed: opts.seed,
        epochs_completed: state.epoch,
        best_epoch: state.early.best_epoch,
        metrics: state.best_metrics.clone(),
        train_seconds: round(state.train_seconds),
        machine: machine(),
        base: bases,
    });
    card.write(&opts.out)?;
    Ok(card)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tokenize::tests::tiny_tokenizer_json;
    use ansel_data::Candidate;

    /// A tiny random BERT written as a Hugging Face directory (no downloaded weights).
    pub(crate) fn tiny_base(dir: &Path, dropout: f64) -> PathBuf {
        let base = dir.join("base");
        std::fs::create_dir_all(&base).unwrap();
        let mut config = BertConfig::tiny(25);
        config.hidden_dropout_prob = dropout;
        config.attention_probs_dropout_prob = dropout;
        std::fs::write(
            base.join("config.json"),
            serde_json::to_vec(&config).unwrap(),
        )
        .unwrap();
        std::fs::write(base.join("tokenizer.json"), tiny_tokenizer_json()).unwrap();
        tch::manual_seed(3);
        let model = CrossEncoder::random(config).unwrap();
        model
            .save(&base.join("model.safetensors"), Kind::Float)
            .unwrap();
        base
    }

    pub(crate) fn questions() -> Vec<Question> {
        let q = |id: &str, text: &str, cands: &[(&str, bool)]| Question {
            id: id.into(),
            text: text.into(),
            candidates: cands
                .iter()
                .enumerate()
                .map(|(i, (t, l))| Candidate {
                    id: i.to_string(),
                    text: t.to_string(),
                    label: Some(*l),
                    context: None,
                })
                .collect(),
        };
        vec![
            q(
                "1",
                "who wrote hamlet ?",
                &[
                    ("it was written by william shakespeare .", true),
                    ("the play is set in denmark .", false),
                    ("hamlet is a tragedy .", false),
                ],
            ),
            q(
                "2",
                "where is hamlet set ?",
                &[
                    ("it is set in denmark .", true),
                    ("it was written by shakespeare .", false),
                ],
            ),
            q("3", "who is hamlet ?", &[("a play .", false)]),
        ]
    }

    fn options(base: &Path, out: &Path) -> TrainOptions {
        let mut o = TrainOptions::defaults(base.to_str().unwrap(), out);
        o.lr = 1e-3;
        o.batch_size = 3;
        o.accumulate = 2;
        o.epochs = 1;
        o.threads = 1;
        o.warmup = 0.0;
        o
    }

    pub(crate) fn weights(path: &Path) -> BTreeMap<String, Tensor> {
        Tensor::read_safetensors(path)
            .unwrap()
            .into_iter()
            .collect()
    }

    #[test]
    fn one_step_changes_every_weight_of_every_layer() {
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let out = dir.path().join("out");
        let mut opts = options(&base, &out);
        opts.max_steps = Some(1);
        train(&opts, &questions(), &questions()).unwrap();
        let before = weights(&base.join("model.safetensors"));
        let after = weights(&out.join(CHECKPOINT).join("weights.safetensors"));
        assert_eq!(before.len(), after.len());
        // Every tensor must move, embeddings included (in the rows of the tokens seen), except
        // the attention key biases: q.(k + b) shifts all of a query's scores by the same q.b,
        // which softmax ignores, so their gradient is exactly zero (as in every BERT).
        let mut unchanged = Vec::new();
        for (name, b) in before
            .iter()
            .filter(|(n, _)| !n.ends_with("attention.self.key.bias"))
        {
            let a = &after[name];
            let moved = (a - b).abs().max().double_value(&[]);
            if moved < 1e-6 {
                unchanged.push(name.clone());
            }
        }
        assert!(unchanged.is_empty(), "not updated: {unchanged:?}");
        assert!(before
            .keys()
            .any(|k| k.starts_with("bert.encoder.layer.0.")));
        assert!(before
            .keys()
            .any(|k| k.starts_with("bert.encoder.layer.1.")));
        let log = TrainingLog::read(&out).unwrap();
        assert!(
            log.iter().any(|e| e.get("dev_MAP").is_some()),
            "dev MAP logged"
        );
        assert!(out.join("training.svg").is_file() && out.join("model.json").is_file());
    }

    #[test]
    fn resuming_after_a_checkpoint_matches_an_uninterrupted_run() {
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.0);
        // Uninterrupted: 6 optimizer steps (2 epochs of 3 micro-batches of 2 pairs).
        let full = dir.path().join("full");
        let mut opts = options(&base, &full);
        opts.epochs = 2;
        opts.batch_size = 2;
        opts.accumulate = 1;
        opts.checkpoint_every = 1;
        train(&opts, &questions(), &questions()).unwrap();
        // Killed after the checkpoint of step 4 (in the second epoch), then resumed.
        let cut = dir.path().join("cut");
        let mut first = opts.clone();
        first.out = cut.clone();
        first.interrupt_after = Some(4);
        assert!(train(&first, &questions(), &questions()).is_err());
        let state_path = cut.join(CHECKPOINT).join("state.json");
        let state: RunState = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
        assert_eq!((state.opt_step, state.epoch, state.batches_done), (4, 1, 1));
        let mut again = opts.clone();
        again.out = cut.clone();
        // Refuses to overwrite a run without --resume.
        assert!(train(&again, &questions(), &questions()).is_err());
        again.resume = true;
        train(&again, &questions(), &questions()).unwrap();
        let a = weights(&full.join(CHECKPOINT).join("weights.safetensors"));
        let b = weights(&cut.join(CHECKPOINT).join("weights.safetensors"));
        for (name, t) in &a {
            let diff = (t - &b[name]).abs().max().double_value(&[]);
            assert!(diff < 1e-5, "{name} differs by {diff}");
        }
    }

    #[test]
    fn trained_directory_loads_as_a_ranker_and_records_tanda_lineage() {
        use ansel_model::Ranker;
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let transfer = dir.path().join("transfer");
        let mut opts = options(&base, &transfer);
        opts.train_path = "big.jsonl".into();
        train(&opts, &questions(), &questions()).unwrap();
        let adapt = dir.path().join("adapt");
        let mut opts2 = options(&base, &adapt);
        opts2.base = transfer.to_str().unwrap().into();
        opts2.train_path = "small.jsonl".into();
        opts2.input = InputMode::Context;
        let card = train(&opts2, &questions(), &questions()).unwrap();
        let record = card.training.clone().unwrap();
        assert_eq!(record.train_data, vec!["big.jsonl", "small.jsonl"]);
        assert_eq!(record.base.len(), 2);
        let ranker =
            crate::CrossEncoderRanker::load(&adapt, &ModelCard::read(&adapt).unwrap()).unwrap();
        let scores = ranker.score_all(&questions()).unwrap();
        assert_eq!(
            scores.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
        assert!(scores.iter().flatten().all(|s| s.is_finite()));
    }

    #[test]
    fn buckets_hold_similar_lengths_and_cover_every_pair_once() {
        let lengths: Vec<usize> = (0..1000).map(|i| (i * 37) % 120).collect();
        let batches = bucketed_batches(&lengths, 16, 5);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        let spread: usize = batches
            .iter()
            .map(|b| {
                b.iter().map(|&i| lengths[i]).max().unwrap()
                    - b.iter().map(|&i| lengths[i]).min().unwrap()
            })
            .sum();
        // Random batches of 16 would spread ~100 tokens each; sorted pools keep it small.
        assert!(
            spread / batches.len() < 10,
            "mean spread {}",
            spread / batches.len()
        );
        assert_eq!(batches, bucketed_batches(&lengths, 16, 5), "seeded");
    }
}
