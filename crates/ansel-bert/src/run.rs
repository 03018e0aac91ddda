//! The training loop both transformer trainers share (cross-encoder: `train.rs`, SEDAN
//! bi-encoder: `bi_train.rs`): micro-batches with gradient accumulation, global-norm
//! clipping, [`AdamW`] on one or more parameter groups under the warm-up + linear-decay
//! schedule, a training log, dev evaluation with early stopping on dev MAP, and checkpoints
//! (weights + optimizer moments + [`RunState`]) swapped in whole so that a run killed at any
//! point resumes exactly where its last checkpoint left it.
//!
//! A trainer supplies what is its own through [`Trainee`]: its batches, forward pass and
//! loss, parameter groups, dev evaluation, the dev metric that picks the weights kept
//! ([`Trainee::selection_metric`], `dev MAP` unless it says otherwise), and how its weights
//! and card are written. The module is public so that trainers in other crates (ansel-reader's
//! span extractor) run the same loop.

use crate::{training_svg, CrossEncoder};
use ansel_data::Question;
use ansel_eval::{evaluate, Filter};
use ansel_model::train::{EarlyStopping, Progress, TrainingLog};
use ansel_model::{write_atomic, ModelCard, ModelError, Result, TrainingRecord};
use ansel_torch::tch::{Kind, Tensor};
use ansel_torch::{clip_gradients, zero_gradients, AdamW, WarmupLinear};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The checkpoint directory inside a model directory.
pub const CHECKPOINT: &str = "checkpoint";
const STATE: &str = "state.json";
const OPTIMIZER: &str = "optimizer.safetensors";

/// Where a run stands; saved with every checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState {
    pub epoch: usize,
    /// Micro-batches of `epoch` already consumed.
    pub batches_done: usize,
    pub opt_step: usize,
    pub evals: usize,
    pub early: EarlyStopping,
    /// The dev metrics of the weights kept.
    pub best_metrics: BTreeMap<String, f64>,
    pub train_seconds: f64,
    pub stopped: bool,
}

impl RunState {
    /// The state saved in checkpoint directory `dir`.
    pub fn read(dir: &Path) -> Result<RunState> {
        let path = dir.join(STATE);
        let bytes = std::fs::read(&path).map_err(|e| ModelError::io(&path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
            path: path.clone(),
            message: format!("line {}: {e}", e.line()),
        })
    }
}

/// The model-specific parts of a training run.
pub trait Trainee {
    /// The micro-batches of one epoch, as lists of example indices, of about `batch_size`
    /// examples (the run's) in an order drawn from `seed` (the epoch's,
    /// [`RunOptions::epoch_seed`]), so that a resumed epoch sees the same order.
    fn batches(&self, batch_size: usize, seed: u64) -> Vec<Vec<usize>>;
    /// The training-mode loss of one micro-batch and the number of pairs it holds.
    fn loss(&self, batch: &[usize]) -> (Tensor, usize);
    /// The parameters, in groups that each learn at the schedule's rate times a factor.
    fn groups(&self) -> Vec<(BTreeMap<String, Tensor>, f64)>;
    /// Dev metrics ([`Trainee::selection_metric`] picks the weights kept; absent: every
    /// evaluation is the best).
    fn evaluate(&self) -> Result<BTreeMap<String, f64>>;
    /// The dev metric (a key of [`Trainee::evaluate`]) that picks the weights kept and
    /// drives early stopping; it also names the log's `best_<metric>` field.
    fn selection_metric(&self) -> &str {
        "dev MAP"
    }
    /// Whether the run writes `training.svg` (loss and dev MAP by step) next to its log.
    fn writes_plot(&self) -> bool {
        true
    }
    /// Writes the weights into `dir`: the weights to keep, as the model directory's own files
    /// ([`Weights::Model`]), or a checkpoint's full-precision ones ([`Weights::Checkpoint`]).
    fn save(&self, dir: &Path, weights: Weights) -> Result<()>;
    /// Writes the model card for the run as it stands.
    fn write_card(&self, state: &RunState) -> Result<ModelCard>;
    /// Reads back the checkpoint weights [`Trainee::save`] wrote into `dir`.
    fn load_weights(&self, dir: &Path) -> Result<()>;
}

/// Which weights [`Trainee::save`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// The weights kept, in the model directory: the encoder in fp16 (`model.safetensors`,
    /// what the rankers load).
    Model,
    /// A checkpoint's: the encoder in fp32 (`weights.safetensors`), exact for resuming.
    Checkpoint,
}

/// The encoder's file in a checkpoint.
const CHECKPOINT_ENCODER: &str = "weights.safetensors";

impl Weights {
    /// Writes a trainee's encoder into `dir` as these weights.
    pub fn save_encoder(self, encoder: &CrossEncoder, dir: &Path) -> Result<()> {
        match self {
            Weights::Model => encoder.save(&dir.join("model.safetensors"), Kind::Half),
            Weights::Checkpoint => encoder.save(&dir.join(CHECKPOINT_ENCODER), Kind::Float),
        }
    }

    /// Reads the encoder of the checkpoint in `dir` back into `encoder`.
    pub fn load_checkpoint_encoder(encoder: &CrossEncoder, dir: &Path) -> Result<()> {
        encoder.load_weights(&dir.join(CHECKPOINT_ENCODER))
    }
}

/// The options every transformer training run shares (cross-encoder, bi-encoder, span
/// extractor): each trainer's own options hold one of these beside what is theirs, and
/// `ansel train` fills it from the same flags for all of them.
#[derive(Debug, Clone, Serialize)]
pub struct RunOptions {
    /// A Hugging Face BERT directory, or a model of the same family trained by ansel.
    pub base: String,
    pub train_path: String,
    pub dev_path: String,
    pub out: PathBuf,
    pub name: String,
    /// Tokens per input.
    pub max_len: usize,
    pub epochs: usize,
    pub lr: f64,
    /// Examples per micro-batch (the bi-encoder: pairs per micro-batch, whole questions).
    pub batch_size: usize,
    /// Micro-batches per optimizer step (gradient accumulation).
    pub accumulate: usize,
    /// Fraction of all optimizer steps spent warming up.
    pub warmup: f64,
    pub weight_decay: f64,
    pub max_grad_norm: f64,
    pub seed: u64,
    /// Evaluations without a better dev metric before stopping.
    pub patience: usize,
    /// Evaluate on dev every this many optimizer steps (0: once per epoch only).
    pub eval_every: usize,
    /// Save a checkpoint every this many optimizer steps (also after every evaluation).
    pub checkpoint_every: usize,
    /// Stop after this many optimizer steps in all (the schedule decays to 0 there).
    pub max_steps: Option<usize>,
    pub threads: usize,
    pub resume: bool,
    /// Recorded in the card's hyper-parameters as `extra` (e.g. `adapt`'s synthetic-data report).
    #[serde(skip)]
    pub extra: serde_json::Value,
    /// Tests only: fail as if killed right after the checkpoint of this optimizer step.
    #[serde(skip)]
    pub interrupt_after: Option<usize>,
}

impl RunOptions {
    /// The shared defaults; each trainer overrides what differs for its model.
    pub fn defaults(base: &str, out: &Path, name: &str) -> RunOptions {
        RunOptions {
            base: base.into(),
            train_path: String::new(),
            dev_path: String::new(),
            out: out.to_path_buf(),
            name: name.into(),
            max_len: 128,
            epochs: 3,
            lr: 3e-5,
            batch_size: 16,
            accumulate: 1,
            warmup: 0.1,
            weight_decay: 0.01,
            max_grad_norm: 1.0,
            seed: 42,
            patience: 3,
            eval_every: 0,
            checkpoint_every: 50,
            max_steps: None,
            threads: 1,
            resume: false,
            extra: serde_json::Value::Null,
            interrupt_after: None,
        }
    }

    /// The seed of `epoch`'s data order: a function of the run's seed and the epoch, so that a
    /// resumed epoch sees the same order.
    pub fn epoch_seed(&self, epoch: usize) -> u64 {
        self.seed.wrapping_add(epoch as u64 * 7919)
    }

    /// Optimizer steps per epoch and in all, for epochs of `batches_per_epoch` micro-batches.
    pub fn steps(&self, batches_per_epoch: usize) -> (usize, usize) {
        let per_epoch = batches_per_epoch.div_ceil(self.accumulate.max(1));
        let total = per_epoch * self.epochs.max(1);
        (
            per_epoch,
            self.max_steps.map_or(total, |max| total.min(max)),
        )
    }

    /// The card's hyper-parameters every run records; a trainer adds its own to them.
    fn hyperparameters(&self) -> serde_json::Map<String, serde_json::Value> {
        let serde_json::Value::Object(mut map) = serde_json::json!({
            "optimizer": "AdamW (decoupled weight decay; none on biases and LayerNorm)",
            "lr": self.lr,
            "schedule": format!("linear warm-up over {} of the steps, then linear decay to 0", self.warmup),
            "batch_size": self.batch_size, "accumulate": self.accumulate,
            "effective_batch": self.batch_size * self.accumulate.max(1), "epochs": self.epochs,
            "max_len": self.max_len, "weight_decay": self.weight_decay,
            "max_grad_norm": self.max_grad_norm, "max_steps": self.max_steps,
            "eval_every": self.eval_every, "patience": self.patience, "threads": self.threads,
        }) else {
            unreachable!("a JSON object literal")
        };
        if !self.extra.is_null() {
            map.insert("extra".into(), self.extra.clone());
        }
        map
    }
}

/// What the shared loop needs beyond [`RunOptions`].
pub struct LoopOptions<'a> {
    pub run: &'a RunOptions,
    /// The progress bar's label.
    pub label: &'a str,
    /// Optimizer steps in all (the schedule's length).
    pub total_steps: usize,
    /// The log's first entry of a fresh run.
    pub start: serde_json::Value,
}

/// Refuses to overwrite an earlier run's checkpoint without `--resume`, creates `out` and
/// copies the base's `config.json` and `tokenizer.json` into it.
pub fn prepare_out(out: &Path, kind: &str, resume: bool, base_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| ModelError::io(out, e))?;
    if !resume && out.join(CHECKPOINT).join(STATE).exists() {
        return Err(ModelError::Unsupported {
            model: kind.into(),
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
    Ok(())
}

/// Rounds to 6 decimals (logs and cards).
pub fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
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

/// The dev metrics both trainers log and keep: P@1, MAP and MRR over the answered questions,
/// named `dev <metric>`.
pub fn dev_metrics(questions: &[Question], scores: &[Vec<f32>]) -> BTreeMap<String, f64> {
    let report = evaluate(questions, scores, Filter::Answered);
    ["P@1", "MAP", "MRR"]
        .iter()
        .filter_map(|m| Some((format!("dev {m}"), report.metric(m)?)))
        .collect()
}

/// What a trained transformer's card holds besides the run's state.
pub struct CardParts<'a> {
    pub kind: &'a str,
    pub run: &'a RunOptions,
    /// The model's settings (the card's `config`).
    pub settings: serde_json::Value,
    /// The base's card when it is a model trained by ansel: its training data and bases are
    /// carried over (TANDA, SEDAN stage b).
    pub base_card: Option<&'a ModelCard>,
    /// The trainer's own hyper-parameters, recorded beside [`RunOptions`]' shared ones.
    pub hyperparameters: serde_json::Value,
}

/// Writes the card of a run as it stands into the run's `out`.
pub fn write_training_card(parts: CardParts, state: &RunState) -> Result<ModelCard> {
    let run = parts.run;
    let mut card = ModelCard::new(parts.kind, &run.name, parts.settings);
    let mut train_data = Vec::new();
    let mut bases = vec![run.base.clone()];
    if let Some(record) = parts.base_card.and_then(|c| c.training.as_ref()) {
        train_data.extend(record.train_data.iter().cloned());
        bases.extend(record.base.iter().cloned());
    }
    train_data.push(run.train_path.clone());
    let mut hyperparameters = run.hyperparameters();
    if let serde_json::Value::Object(own) = parts.hyperparameters {
        hyperparameters.extend(own);
    }
    card.training = Some(TrainingRecord {
        train_data,
        dev_data: Some(run.dev_path.clone()),
        hyperparameters: serde_json::Value::Object(hyperparameters),
        seed: run.seed,
        epochs_completed: state.epoch,
        best_epoch: state.early.best_epoch,
        metrics: state.best_metrics.clone(),
        train_seconds: round(state.train_seconds),
        machine: machine(),
        base: bases,
    });
    card.write(&run.out)?;
    Ok(card)
}

fn all_params(groups: &[(BTreeMap<String, Tensor>, f64)]) -> BTreeMap<String, Tensor> {
    groups
        .iter()
        .flat_map(|(g, _)| g.iter().map(|(n, t)| (n.clone(), t.shallow_clone())))
        .collect()
}

fn save_checkpoint<T: Trainee>(dir: &Path, task: &T, adam: &AdamW, state: &RunState) -> Result<()> {
    // Written into a fresh directory swapped in whole, so a kill leaves the old or the new one.
    ansel_model::replace_dir(dir, |d| {
        task.save(d, Weights::Checkpoint)?;
        adam.save(&d.join(OPTIMIZER))?;
        let json = serde_json::to_vec_pretty(state).expect("state serializes");
        write_atomic(&d.join(STATE), &json)
    })
}

fn load_checkpoint<T: Trainee>(dir: &Path, task: &T, adam: &mut AdamW) -> Result<RunState> {
    let state = RunState::read(dir)?;
    task.load_weights(dir)?;
    adam.load(&dir.join(OPTIMIZER))?;
    Ok(state)
}

fn write_plot(out: &Path) -> Result<()> {
    write_atomic(
        &out.join("training.svg"),
        training_svg(&TrainingLog::read(out)?).as_bytes(),
    )
}

/// Trains `task` (fresh, or from its checkpoint with `opts.resume`) and returns the card of
/// the weights kept.
pub fn run<T: Trainee>(task: &T, opts: &LoopOptions) -> Result<ModelCard> {
    let out = opts.run.out.as_path();
    let ckpt = out.join(CHECKPOINT);
    let total_steps = opts.total_steps;
    let schedule = WarmupLinear {
        peak: opts.run.lr,
        warmup: ((total_steps as f64 * opts.run.warmup).ceil() as usize).max(1),
        total: total_steps,
    };
    let accumulate = opts.run.accumulate.max(1);
    let metric = task.selection_metric();
    let groups = task.groups();
    let params = all_params(&groups);
    let mut adam = AdamW::new(&params);
    let mut log = TrainingLog::open(out)?;
    let mut state = if opts.run.resume {
        let s = load_checkpoint(&ckpt, task, &mut adam)?;
        log.append(&serde_json::json!({"event": "resume", "epoch": s.epoch, "step": s.opt_step}))?;
        s
    } else {
        log.append(&opts.start)?;
        RunState {
            epoch: 0,
            batches_done: 0,
            opt_step: 0,
            evals: 0,
            early: EarlyStopping::new(opts.run.patience),
            best_metrics: BTreeMap::new(),
            train_seconds: 0.0,
            stopped: false,
        }
    };

    let started = Instant::now();
    let seconds_before = state.train_seconds;
    let elapsed = || seconds_before + started.elapsed().as_secs_f64();
    let mut progress = Progress::new(total_steps as u64, opts.label);
    for _ in 0..state.opt_step {
        progress.step(0, 0.0);
    }
    let (mut window_loss, mut window_pairs, mut window_steps) = (0.0, 0usize, 0usize);
    let mut window_started = Instant::now();

    'epochs: while state.epoch < opts.run.epochs.max(1)
        && !state.stopped
        && state.opt_step < total_steps
    {
        let batches = task.batches(opts.run.batch_size, opts.run.epoch_seed(state.epoch));
        let (mut step_loss, mut step_pairs, mut micro) = (0.0, 0usize, 0usize);
        while state.batches_done < batches.len() {
            let (loss, n) = task.loss(&batches[state.batches_done]);
            let loss_value = loss.double_value(&[]);
            if !loss_value.is_finite() {
                return Err(ModelError::Backend(format!(
                    "loss became {loss_value} at step {} (try a lower --lr)",
                    state.opt_step
                )));
            }
            (loss / accumulate as f64).backward();
            step_loss += loss_value * n as f64;
            step_pairs += n;
            micro += 1;
            state.batches_done += 1;
            let last = state.batches_done == batches.len();
            if micro < accumulate && !last {
                continue;
            }
            micro = 0;
            let grad_norm = clip_gradients(&params, opts.run.max_grad_norm);
            let lr = schedule.at(state.opt_step);
            state.opt_step += 1;
            for (group, factor) in &groups {
                adam.step(group, lr * factor, opts.run.weight_decay, state.opt_step);
            }
            zero_gradients(&params);
            progress.step(step_pairs as u64, step_loss / step_pairs.max(1) as f64);
            window_loss += step_loss;
            window_pairs += step_pairs;
            window_steps += 1;
            (step_loss, step_pairs) = (0.0, 0);
            if window_steps == 10 || last {
                let secs = window_started.elapsed().as_secs_f64().max(1e-9);
                log.append(&serde_json::json!({
                    "step": state.opt_step, "epoch": state.epoch + 1,
                    "loss": round(window_loss / window_pairs.max(1) as f64),
                    "lr": lr, "grad_norm": round(grad_norm),
                    "pairs_per_s": round(window_pairs as f64 / secs),
                    "elapsed_s": round(elapsed()),
                }))?;
                (window_loss, window_pairs, window_steps) = (0.0, 0, 0);
                window_started = Instant::now();
            }
            let at_end = last || state.opt_step >= total_steps;
            if at_end
                || (opts.run.eval_every > 0 && state.opt_step.is_multiple_of(opts.run.eval_every))
            {
                if last {
                    state.epoch += 1;
                    state.batches_done = 0;
                }
                let metrics = task.evaluate()?;
                state.evals += 1;
                // Without dev data every evaluation counts as the best (the last weights are kept).
                let selected = metrics.get(metric).copied().unwrap_or(state.evals as f64);
                let better = state.early.observe(state.evals, selected);
                let epoch = state.epoch as f64
                    + if last {
                        0.0
                    } else {
                        state.batches_done as f64 / batches.len() as f64
                    };
                let mut entry = serde_json::json!({"eval": state.evals, "step": state.opt_step,
                    "epoch": epoch, "best": better, "elapsed_s": round(elapsed())});
                for (k, v) in &metrics {
                    entry[k.replace(' ', "_")] = serde_json::json!(round(*v));
                }
                log.append(&entry)?;
                eprintln!(
                    "eval {}: step {} {metric} {}{}",
                    state.evals,
                    state.opt_step,
                    metrics
                        .get(metric)
                        .map_or("(no dev data)".to_string(), |m| format!("{m:.4}")),
                    if better { " (best)" } else { "" }
                );
                state.train_seconds = elapsed();
                if better {
                    state.best_metrics = metrics;
                    task.save(out, Weights::Model)?;
                    task.write_card(&state)?;
                }
                if state.early.should_stop() {
                    state.stopped = true;
                }
                save_checkpoint(&ckpt, task, &adam, &state)?;
                if task.writes_plot() {
                    let _ = write_plot(out);
                }
                if state.stopped || state.opt_step >= total_steps {
                    break 'epochs;
                }
                if last {
                    continue 'epochs;
                }
            } else if opts.run.checkpoint_every > 0
                && state.opt_step.is_multiple_of(opts.run.checkpoint_every)
            {
                state.train_seconds = elapsed();
                save_checkpoint(&ckpt, task, &adam, &state)?;
                if opts.run.interrupt_after == Some(state.opt_step) {
                    return Err(ModelError::Backend("interrupted (test)".into()));
                }
            }
        }
        // An epoch that ended on a resumed, already-finished position.
        state.epoch += 1;
        state.batches_done = 0;
    }
    progress.finish();
    state.train_seconds = elapsed();
    save_checkpoint(&ckpt, task, &adam, &state)?;
    let card = task.write_card(&state)?;
    // `best_dev_MAP` for the rankers, `best_dev_F1` for the span extractor.
    let mut end = serde_json::Map::new();
    end.insert("event".into(), "end".into());
    end.insert("epochs".into(), state.epoch.into());
    end.insert("step".into(), state.opt_step.into());
    end.insert(
        "best_eval".into(),
        serde_json::json!(state.early.best_epoch),
    );
    end.insert(
        format!("best_{}", metric.replace(' ', "_")),
        serde_json::json!(state.early.best),
    );
    end.insert(
        "train_seconds".into(),
        serde_json::json!(round(state.train_seconds)),
    );
    log.append(&serde_json::Value::Object(end))?;
    if task.writes_plot() {
        write_plot(out)?;
    }
    Ok(card)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_torch::tch::{self, Kind};

    /// Least squares `y = w x + b` on four points: the smallest model the loop can train.
    struct Line {
        w: Tensor,
        b: Tensor,
        /// Micro-batches of this many points, in a seeded order per epoch.
        batch: usize,
        /// With dev MAP (minus the training loss) or without dev data.
        with_dev: bool,
        out: std::path::PathBuf,
    }

    const X: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
    const Y: [f32; 4] = [3.0, 5.0, 7.0, 9.0];

    impl Line {
        fn new(batch: usize, with_dev: bool, out: &Path) -> Line {
            let param = |v: f32| Tensor::from_slice(&[v]).set_requires_grad(true);
            Line {
                w: param(0.5),
                b: param(-0.5),
                batch,
                with_dev,
                out: out.to_path_buf(),
            }
        }

        fn tensors(&self) -> Vec<(String, Tensor)> {
            vec![
                ("w".into(), self.w.detach()),
                ("line.bias".into(), self.b.detach()),
            ]
        }

        fn values(&self) -> (f64, f64) {
            (self.w.double_value(&[0]), self.b.double_value(&[0]))
        }
    }

    impl Trainee for Line {
        fn batches(&self, _batch_size: usize, seed: u64) -> Vec<Vec<usize>> {
            let mut order: Vec<usize> = (0..X.len()).collect();
            ansel_data::shuffle_seeded(&mut order, seed);
            order.chunks(self.batch).map(<[usize]>::to_vec).collect()
        }

        fn loss(&self, idx: &[usize]) -> (Tensor, usize) {
            let pick =
                |v: &[f32; 4]| Tensor::from_slice(&idx.iter().map(|&i| v[i]).collect::<Vec<_>>());
            let err = &self.w * pick(&X) + &self.b - pick(&Y);
            (err.square().mean(Kind::Float), idx.len())
        }

        fn groups(&self) -> Vec<(BTreeMap<String, Tensor>, f64)> {
            vec![
                (
                    BTreeMap::from([("w".to_string(), self.w.shallow_clone())]),
                    1.0,
                ),
                (
                    BTreeMap::from([("line.bias".to_string(), self.b.shallow_clone())]),
                    3.0,
                ),
            ]
        }

        fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
            if !self.with_dev {
                return Ok(BTreeMap::new());
            }
            let (loss, _) = tch::no_grad(|| self.loss(&[0, 1, 2, 3]));
            Ok(BTreeMap::from([(
                "dev MAP".to_string(),
                -loss.double_value(&[]),
            )]))
        }

        fn save(&self, dir: &Path, weights: Weights) -> Result<()> {
            let file = match weights {
                Weights::Model => "model.safetensors",
                Weights::Checkpoint => "weights.safetensors",
            };
            ansel_torch::write_tensors(&dir.join(file), &self.tensors())
        }

        fn write_card(&self, state: &RunState) -> Result<ModelCard> {
            let mut card = ModelCard::new("line", "line", serde_json::json!({}));
            card.training = Some(ansel_model::TrainingRecord {
                train_data: vec![],
                dev_data: None,
                hyperparameters: serde_json::json!({}),
                seed: 0,
                epochs_completed: state.epoch,
                best_epoch: state.early.best_epoch,
                metrics: state.best_metrics.clone(),
                train_seconds: 0.0,
                machine: machine(),
                base: vec![],
            });
            card.write(&self.out)?;
            Ok(card)
        }

        fn load_weights(&self, dir: &Path) -> Result<()> {
            let saved = ansel_torch::read_tensors(&dir.join("weights.safetensors"))?;
            tch::no_grad(|| {
                self.w.shallow_clone().copy_(&saved["w"]);
                self.b.shallow_clone().copy_(&saved["line.bias"]);
            });
            Ok(())
        }
    }

    fn options(out: &Path, accumulate: usize) -> RunOptions {
        RunOptions {
            epochs: 3,
            accumulate,
            lr: 0.1,
            warmup: 0.2,
            max_grad_norm: 5.0,
            patience: 10,
            checkpoint_every: 1,
            ..RunOptions::defaults("", out, "line")
        }
    }

    /// The loop over six optimizer steps.
    fn train_line(line: &Line, opts: &RunOptions) -> Result<ModelCard> {
        let start = serde_json::json!({"event": "start"});
        run(
            line,
            &LoopOptions {
                run: opts,
                label: "line",
                total_steps: 6,
                start,
            },
        )
    }

    #[test]
    fn two_accumulated_micro_batches_step_like_one_batch_of_both() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let whole = Line::new(2, true, &a);
        train_line(&whole, &options(&a, 1)).unwrap();
        let halves = Line::new(1, true, &b);
        train_line(&halves, &options(&b, 2)).unwrap();
        let ((w1, b1), (w2, b2)) = (whole.values(), halves.values());
        assert!(
            (w1 - w2).abs() < 1e-6 && (b1 - b2).abs() < 1e-6,
            "{w1},{b1} vs {w2},{b2}"
        );
        assert!(w1 > 0.5, "w moved towards 2: {w1}");
        let card = ModelCard::read(&a).unwrap().training.unwrap();
        assert_eq!(card.epochs_completed, 3);
        assert!(card.metrics.contains_key("dev MAP"));
        assert!(a.join("training.svg").is_file());
        // The default selection metric keeps the rankers' field names.
        let end = TrainingLog::read(&a).unwrap().pop().unwrap();
        assert_eq!(end["event"], "end");
        assert!(end["best_dev_MAP"].is_f64(), "{end}");
    }

    #[test]
    fn without_dev_data_the_last_evaluation_is_kept_and_a_resumed_run_continues_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let full = dir.path().join("full");
        std::fs::create_dir_all(&full).unwrap();
        let straight = Line::new(2, false, &full);
        train_line(&straight, &options(&full, 1)).unwrap();
        let log = TrainingLog::read(&full).unwrap();
        let evals: Vec<bool> = log
            .iter()
            .filter(|e| e.get("eval").is_some())
            .map(|e| e["best"].as_bool().unwrap())
            .collect();
        assert_eq!(
            evals,
            vec![true, true, true],
            "one evaluation per epoch, each kept"
        );
        let kept = ansel_torch::read_tensors(&full.join("model.safetensors")).unwrap();
        assert_eq!(kept["w"].double_value(&[0]), straight.values().0);

        // Killed after the checkpoint of step 3 (inside epoch 2), then resumed in a fresh model.
        let cut = dir.path().join("cut");
        std::fs::create_dir_all(&cut).unwrap();
        let mut opts = options(&cut, 1);
        opts.interrupt_after = Some(3);
        assert!(train_line(&Line::new(2, false, &cut), &opts).is_err());
        opts.interrupt_after = None;
        opts.resume = true;
        let resumed = Line::new(2, false, &cut);
        train_line(&resumed, &opts).unwrap();
        assert_eq!(resumed.values(), straight.values());

        // Without the moments the continuation differs: the test sees what is restored.
        let moments = cut.join(CHECKPOINT).join(OPTIMIZER);
        let bare = dir.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        let mut opts = options(&bare, 1);
        opts.interrupt_after = Some(3);
        assert!(train_line(&Line::new(2, false, &bare), &opts).is_err());
        let zeros: Vec<(String, Tensor)> = ansel_torch::read_tensors(&moments)
            .unwrap()
            .into_iter()
            .map(|(n, t)| (n, t.zeros_like()))
            .collect();
        ansel_torch::write_tensors(&bare.join(CHECKPOINT).join(OPTIMIZER), &zeros).unwrap();
        opts.interrupt_after = None;
        opts.resume = true;
        let reset = Line::new(2, false, &bare);
        train_line(&reset, &opts).unwrap();
        assert!((reset.values().0 - straight.values().0).abs() > 1e-4);
    }

    #[test]
    fn an_earlier_run_is_not_overwritten_without_resume() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base");
        std::fs::create_dir_all(&base).unwrap();
        for f in ["config.json", "tokenizer.json"] {
            std::fs::write(base.join(f), "{}").unwrap();
        }
        let out = dir.path().join("out");
        prepare_out(&out, "line", false, &base).unwrap();
        train_line(&Line::new(2, true, &out), &options(&out, 1)).unwrap();
        let err = prepare_out(&out, "line", false, &base)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--resume") && err.contains("out"), "{err}");
        prepare_out(&out, "line", true, &base).unwrap();
        let err = prepare_out(
            &dir.path().join("other"),
            "line",
            false,
            &dir.path().join("none"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("config.json"), "{err}");
    }
}
