//! Training the chapter-8 networks: triples from SemEval files (a seeded tuning split by
//! original question, dev questions excluded), the extended data, RMSprop on the sum of the
//! heads' losses, early stopping on the tuning lists' official task C MAP; resumable per epoch.

use crate::data::{self, Triple};
use crate::net::{Batch, CScore, CqaNet, Inputs, NetConfig};
use crate::{Loaded, KIND, WEIGHTS_FILE};
use ansel_data::readers::semeval::CqaFile;
use ansel_data::{CqaTask, Question};
use ansel_efficient::{Vocabulary, RESERVED};
use ansel_model::train::{EarlyStopping, TrainingLog};
use ansel_model::{ModelCard, TrainingRecord};
use ansel_torch::tch::{nn, Device, Kind, Reduction, Tensor};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `ansel-lab cqa train`: what to train on and how.
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct TrainArgs {
    /// SemEval-2016 Task 3 files (full XML, `.xml` or `.xml.gz`) whose original questions' task C
    /// lists are trained on (task A and B labels are used where the file has them).
    #[arg(long, required = true, num_args = 1..)]
    pub train: Vec<PathBuf>,
    /// --train files that train the auxiliary heads (A, B) only: their task C labels are dropped
    /// and none of their questions is held out for tuning. For a superseded release whose labels
    /// differ from the evaluated one's (SemEval-2016's v2.0 train part 1 marks 23.6% of its
    /// comments Good for task C, v3.2's part 2 12.7%, dev 6.9%: `--counts-only` prints them).
    #[arg(long, num_args = 1..)]
    pub aux_only: Vec<PathBuf>,
    /// `-subtaskA` files whose threads become the extended data (thesis section 8.2.1).
    #[arg(long, num_args = 1..)]
    pub extended: Vec<PathBuf>,
    /// Files whose questions stay out of training (the dev set): their original questions are
    /// dropped from --train and their related questions from --extended.
    #[arg(long, num_args = 1..)]
    pub exclude: Vec<PathBuf>,
    /// Share of each --train file's original questions held out for early stopping.
    #[arg(long, default_value_t = 0.1)]
    pub tune_fraction: f64,
    /// Cross-validation instead of --tune-fraction: hold out fold I of K (from 1) of each
    /// --train file's original questions, cut from the --seed's order. The K models of one seed
    /// tune on disjoint folds and together train on every question; `ansel eval --model
    /// F1+F2+...` scores them as one ensemble.
    #[arg(long, value_name = "I/K", conflicts_with = "tune_fraction")]
    pub tune_fold: Option<TuneFold>,
    #[arg(long, value_enum, default_value = "triplet")]
    pub inputs: Inputs,
    /// Tasks whose heads are trained (letters of a, b, c; c is the one scored).
    #[arg(long, default_value = "abc")]
    pub tasks: String,
    /// One encoder for the new and the related question.
    #[arg(long)]
    pub share_questions: bool,
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    #[arg(long, default_value_t = 100)]
    pub max_epochs: usize,
    /// What early stopping reads on the tuning lists: task C's official MAP, or task C's
    /// binary cross-entropy (the thesis' validation loss; without dropout it is lowest after
    /// the first epoch, long before the MAP peaks).
    #[arg(long, value_enum, default_value = "map")]
    pub stop_on: StopOn,
    /// How the saved model scores task C: `head` (task C's head), `chain` (P(A) P(B)),
    /// `both` (their sum), or `auto` (the best of those the heads allow on the tuning lists'
    /// MAP, after training).
    #[arg(long, default_value = "head")]
    pub c_score: String,
    /// Epochs without a better tuning value before stopping (the thesis: 10).
    #[arg(long, default_value_t = 10)]
    pub patience: usize,
    #[arg(long, default_value_t = 0.4)]
    pub input_dropout: f64,
    #[arg(long, default_value_t = 0.7)]
    pub hidden_dropout: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Model directory (model.json, weights, vocabulary, training log, checkpoints).
    #[arg(long)]
    pub out: PathBuf,
    /// Continue from the last epoch's checkpoint in --out.
    #[arg(long)]
    pub resume: bool,
    /// Name recorded in model.json.
    #[arg(long)]
    pub name: Option<String>,
    /// Print what the files give (triples and labels per task, and each --train and --exclude
    /// file's share of task C comments marked Good) as JSON, and train nothing.
    #[arg(long)]
    pub counts_only: bool,
}

/// Fold `index` (from 1) of `folds`, written `I/K`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TuneFold {
    pub index: usize,
    pub folds: usize,
}

impl std::str::FromStr for TuneFold {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<TuneFold, String> {
        let bad = || format!("{s:?}: I/K expected, 1 <= I <= K and K >= 2 (e.g. 1/4)");
        let (i, k) = s.split_once('/').ok_or_else(bad)?;
        let (index, folds) = (
            i.trim().parse().map_err(|_| bad())?,
            k.trim().parse().map_err(|_| bad())?,
        );
        if folds < 2 || index == 0 || index > folds {
            return Err(bad());
        }
        Ok(TuneFold { index, folds })
    }
}

impl std::fmt::Display for TuneFold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.folds)
    }
}

/// The tuning value early stopping reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StopOn {
    Map,
    Loss,
}

/// Where training stands after an epoch.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    epoch: usize,
    rng: u64,
    stopping: EarlyStopping,
    seconds: f64,
}

/// The triples and lists a run reads.
pub struct Data {
    pub train: Vec<Triple>,
    pub tune: Vec<(Question, Vec<Triple>)>,
    pub counts: serde_json::Value,
}

fn heads(tasks: &str) -> Result<[bool; 3]> {
    if tasks.is_empty() || !tasks.chars().all(|c| "abc".contains(c)) {
        bail!("--tasks {tasks:?}: letters of a, b, c expected");
    }
    if !tasks.contains('c') {
        bail!("--tasks must include c (the task the model scores)");
    }
    Ok(data::TASKS.map(|t| tasks.contains(t.name())))
}

/// Reads the training files, splits off the tuning lists and builds the extended data.
pub fn read_data(args: &TrainArgs) -> anyhow::Result<Data> {
    let mut excluded_questions = HashSet::new();
    let mut excluded_related = HashSet::new();
    let mut files = Vec::new();
    for path in &args.exclude {
        let file = data::read_file(path)?;
        files.push(c_label_counts(path, &file, "exclude")?);
        excluded_questions.extend(data::original_texts(&file));
        for t in file.threads() {
            excluded_related.insert(ansel_data::readers::semeval::join_subject_body(
                &t.question.subject,
                &t.question.body,
            ));
        }
    }
    let (mut train, mut tune) = (Vec::new(), Vec::new());
    let mut tune_threads = HashSet::new();
    let mut dropped = 0;
    if let Some(path) = args.aux_only.iter().find(|p| !args.train.contains(p)) {
        bail!(
            "--aux-only {}: not one of the --train files",
            path.display()
        );
    }
    let trained = heads(&args.tasks)?;
    for path in &args.train {
        let file = data::read_file(path)?;
        let aux_only = args.aux_only.contains(path);
        let role = if aux_only { "aux-only" } else { "train" };
        files.push(c_label_counts(path, &file, role)?);
        let (fit, held) = match args.tune_fold {
            _ if aux_only => file.split_originals(0.0, args.seed),
            Some(f) => file.split_originals_fold(f.index - 1, f.folds, args.seed),
            None => file.split_originals(args.tune_fraction, args.seed),
        };
        for t in held.threads() {
            tune_threads.insert(t.question.id.clone());
            excluded_related.insert(ansel_data::readers::semeval::join_subject_body(
                &t.question.subject,
                &t.question.body,
            ));
        }
        let lists = data::labelled_lists(path, &fit, &excluded_questions)?;
        dropped += fit.originals.len() - lists.len();
        let mut triples: Vec<Triple> = lists.into_iter().flat_map(|(_, t)| t).collect();
        if aux_only {
            // No C label, and nothing to learn where no trained head has a label left.
            triples.retain_mut(|t| {
                t.labels[2] = None;
                (0..3).any(|k| trained[k] && t.labels[k].is_some())
            });
        }
        train.extend(triples);
        tune.extend(data::labelled_lists(path, &held, &excluded_questions)?);
    }
    let mut extended = 0;
    for path in &args.extended {
        let file = data::read_file(path)?;
        let lists: Vec<Question> = file
            .task_questions(path, CqaTask::A)?
            .into_iter()
            .filter(|q| !tune_threads.contains(&q.id) && !excluded_related.contains(&q.text))
            .collect();
        for list in data::extended_triples(&lists) {
            extended += list.len();
            train.extend(list);
        }
    }
    let positives = |k: usize| train.iter().filter(|t| t.labels[k] == Some(true)).count();
    let labelled = |k: usize| train.iter().filter(|t| t.labels[k].is_some()).count();
    let counts = serde_json::json!({
        "train_triples": train.len(),
        "extended_triples": extended,
        "dropped_original_questions": dropped,
        "tune_questions": tune.len(),
        "labelled": {"a": labelled(0), "b": labelled(1), "c": labelled(2)},
        "positive": {"a": positives(0), "b": positives(1), "c": positives(2)},
        "files": files,
    });
    Ok(Data {
        train,
        tune,
        counts,
    })
}

/// A whole file's original questions and how many of their task C comments are marked Good
/// (before any tuning split or exclusion): releases of the data label differently.
fn c_label_counts(path: &Path, file: &CqaFile, role: &str) -> anyhow::Result<serde_json::Value> {
    let lists = file.task_questions(path, CqaTask::C)?;
    let labels = || {
        lists
            .iter()
            .flat_map(|q| &q.candidates)
            .filter_map(|c| c.label)
    };
    let (labelled, good) = (labels().count(), labels().filter(|&l| l).count());
    Ok(serde_json::json!({
        "file": path,
        "role": role,
        "original_questions": lists.len(),
        "task_c_comments": labelled,
        "task_c_good": good,
        "task_c_good_share": good as f64 / labelled.max(1) as f64,
    }))
}

/// The vocabulary of the training triples' words that have a vector, and its rows.
fn vocabulary(train: &[Triple], vectors: &ansel_vectors::WordVectors) -> (Vocabulary, Vec<f32>) {
    let mut words: Vec<String> = RESERVED.iter().map(|w| w.to_string()).collect();
    let mut seen: HashSet<String> = words.iter().cloned().collect();
    for t in train {
        for text in [&t.q_new, &t.q_rel, &t.comment] {
            for w in data::words(text) {
                if vectors.get(&w).is_some() && seen.insert(w.clone()) {
                    words.push(w);
                }
            }
        }
    }
    let vocab = Vocabulary::from_words(words);
    let rows = vocab.embedding_rows(vectors);
    (vocab, rows)
}

/// The rules `--c-score` allows for a network with these heads.
fn c_score_rules(arg: &str, heads: [bool; 3]) -> Result<Vec<CScore>> {
    let available = CScore::available(heads);
    if arg == "auto" {
        return Ok(available);
    }
    let rule = <CScore as clap::ValueEnum>::from_str(arg, true)
        .map_err(|_| anyhow::anyhow!("--c-score {arg:?}: head, chain, both or auto expected"))?;
    if !available.contains(&rule) {
        bail!("--c-score {arg}: needs the A and B heads (--tasks abc)");
    }
    Ok(vec![rule])
}

/// The lists' official task C MAP by each of `rules`, and task C's mean binary cross-entropy
/// (its own head) over their labelled triples, from one forward pass.
fn tune_eval(
    loaded: &Loaded,
    lists: &[(Question, Vec<Triple>)],
    rules: &[CScore],
) -> (Vec<(CScore, f64)>, f64) {
    let questions: Vec<Question> = lists.iter().map(|(q, _)| q.clone()).collect();
    let logits: Vec<Tensor> = lists.iter().map(|(_, t)| loaded.logits(t)).collect();
    let maps = rules
        .iter()
        .map(|&rule| (rule, crate::official_scores(&questions, &logits, rule).map))
        .collect();
    let (mut sum, mut count) = (0.0, 0usize);
    for ((_, triples), logits) in lists.iter().zip(&logits) {
        let (known, labels): (Vec<f32>, Vec<f32>) = triples
            .iter()
            .map(|t| {
                (
                    f32::from(t.labels[2].is_some()),
                    f32::from(t.labels[2] == Some(true)),
                )
            })
            .unzip();
        let each = logits
            .select(1, 2)
            .binary_cross_entropy_with_logits::<Tensor>(
                &Tensor::from_slice(&labels),
                None,
                None,
                Reduction::None,
            );
        sum += (each * Tensor::from_slice(&known))
            .sum(Kind::Float)
            .double_value(&[]);
        count += triples.iter().filter(|t| t.labels[2].is_some()).count();
    }
    (maps, sum / count.max(1) as f64)
}

fn c_score_name(rule: CScore) -> String {
    serde_json::to_value(rule)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Trains a model into `args.out` and returns its card.
pub fn train(args: &TrainArgs) -> Result<ModelCard> {
    ansel_torch::init(args.threads, args.seed);
    let heads = heads(&args.tasks)?;
    let rules = c_score_rules(&args.c_score, heads)?;
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    let data = read_data(args)?;
    if data.train.is_empty() || data.tune.is_empty() {
        bail!("no training triples or no tuning lists: check --train and --tune-fraction");
    }
    let vectors = ansel_vectors::VectorSource::Glove
        .load(&ansel_vectors::models_dir())
        .context("GloVe 50d (vendor/models/glove-6b-50d)")?;
    let (vocab, rows) = vocabulary(&data.train, &vectors);
    let config = NetConfig {
        inputs: args.inputs,
        share_questions: args.share_questions,
        heads,
        word_dim: vectors.dim() as i64,
        feature_dim: 5,
        filters: 100,
        width: 5,
        hidden: 100,
        input_dropout: args.input_dropout,
        hidden_dropout: args.hidden_dropout,
        c_score: rules[0],
    };
    ansel_torch::tch::manual_seed(args.seed as i64);
    let mut vs = nn::VarStore::new(Device::Cpu);
    let net = CqaNet::new(&vs.root(), config.clone(), &rows);
    let params = ansel_torch::trainable(&vs);
    let mut opt = ansel_torch::RmsProp::new(&params);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let ckpt_dir = args.out.join("checkpoint");
    std::fs::create_dir_all(&ckpt_dir)?;
    let (ckpt, optim, best, state_path) = (
        ckpt_dir.join("weights.safetensors"),
        ckpt_dir.join("optim.safetensors"),
        ckpt_dir.join("best.safetensors"),
        ckpt_dir.join("state.json"),
    );
    let mut state = State {
        epoch: 0,
        rng: args.seed,
        stopping: EarlyStopping::new(args.patience),
        seconds: 0.0,
    };
    if args.resume && state_path.is_file() {
        state = serde_json::from_str(&std::fs::read_to_string(&state_path)?)
            .with_context(|| format!("cannot read {}", state_path.display()))?;
        ansel_torch::load_vars(&mut vs, &ckpt)?;
        opt.load(&optim)?;
        eprintln!("resuming after epoch {}", state.epoch);
    }
    let mut log = TrainingLog::open(&args.out)?;
    let loaded = Loaded { vs, net, vocab };
    let started = Instant::now();
    let seconds0 = state.seconds;
    while state.epoch < args.max_epochs && !state.stopping.should_stop() {
        let epoch_start = Instant::now();
        let mut order: Vec<(u64, usize)> = (0..data.train.len())
            .map(|i| (ansel_data::splitmix64(&mut state.rng), i))
            .collect();
        order.sort_unstable();
        let mut loss_sum = 0.0;
        let mut batches = 0;
        for chunk in order.chunks(args.batch_size) {
            let triples: Vec<&Triple> = chunk.iter().map(|&(_, i)| &data.train[i]).collect();
            let batch = Batch::new(&triples, &loaded.vocab, args.inputs);
            let logits = loaded.net.forward(&batch, true);
            let loss = loaded.net.loss(&logits, &batch);
            ansel_torch::zero_gradients(&params);
            loss.backward();
            opt.step(&params, args.lr);
            loss_sum += loss.double_value(&[]);
            batches += 1;
        }
        state.epoch += 1;
        let (maps, tune_loss) = tune_eval(&loaded, &data.tune, &[config.c_score]);
        let tune_map = maps[0].1;
        let watched = match args.stop_on {
            StopOn::Map => tune_map,
            StopOn::Loss => -tune_loss,
        };
        if state.stopping.observe(state.epoch, watched) {
            ansel_torch::save_vars(&loaded.vs, &best)?;
        }
        state.seconds = seconds0 + started.elapsed().as_secs_f64();
        let entry = serde_json::json!({
            "epoch": state.epoch,
            "loss": loss_sum / batches.max(1) as f64,
            "tune_map": tune_map,
            "tune_loss": tune_loss,
            "seconds": epoch_start.elapsed().as_secs_f64(),
            "triples_per_second": data.train.len() as f64 / epoch_start.elapsed().as_secs_f64(),
        });
        log.append(&entry)?;
        eprintln!("{entry}");
        ansel_torch::save_vars(&loaded.vs, &ckpt)?;
        opt.save(&optim)?;
        ansel_model::write_atomic(&state_path, serde_json::to_string(&state)?.as_bytes())?;
    }
    let mut vs = loaded.vs;
    ansel_torch::load_vars(&mut vs, &best)?;
    let mut loaded = Loaded {
        vs,
        net: loaded.net,
        vocab: loaded.vocab,
    };
    // Each allowed rule's tuning MAP on the kept weights; the first best is saved.
    let (rule_maps, tune_loss) = tune_eval(&loaded, &data.tune, &rules);
    let (rule, tune_map) = rule_maps
        .iter()
        .copied()
        .fold(None, |best: Option<(CScore, f64)>, (r, m)| match best {
            Some((_, b)) if b >= m => best,
            _ => Some((r, m)),
        })
        .expect("at least one rule");
    loaded.net.config.c_score = rule;
    ansel_torch::save_vars(&loaded.vs, &args.out.join(WEIGHTS_FILE))?;
    loaded.vocab.write(&args.out)?;
    let name = args.name.clone().unwrap_or_else(|| {
        format!(
            "cqa-{}-{}{}",
            match args.inputs {
                Inputs::Pair => "pair",
                Inputs::Triplet => "triplet",
            },
            args.tasks,
            if args.extended.is_empty() { "" } else { "-ed" }
        )
    });
    let mut card = ModelCard::new(KIND, &name, serde_json::to_value(&loaded.net.config)?);
    card.training = Some(TrainingRecord {
        train_data: args
            .train
            .iter()
            .chain(&args.extended)
            .map(|p| p.display().to_string())
            .collect(),
        dev_data: Some(match args.tune_fold {
            Some(f) => format!(
                "fold {f} of each --train file's original questions (seed {})",
                args.seed
            ),
            None => format!(
                "a seeded {} of each --train file's original questions (seed {})",
                args.tune_fraction, args.seed
            ),
        }),
        hyperparameters: serde_json::json!({
            "arguments": args,
            "data": data.counts,
            "optimizer": "rmsprop (rho 0.9)",
            "parameters": loaded.parameters(),
        }),
        seed: args.seed,
        epochs_completed: state.epoch,
        best_epoch: state.stopping.best_epoch,
        metrics: std::iter::once(("tune_official_map_c".to_string(), tune_map))
            .chain(std::iter::once(("tune_loss_c".to_string(), tune_loss)))
            .chain(
                rule_maps
                    .iter()
                    .map(|(r, m)| (format!("tune_official_map_c_{}", c_score_name(*r)), *m)),
            )
            .collect(),
        train_seconds: state.seconds,
        ..Default::default()
    });
    card.write(&args.out)?;
    Ok(card)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_score_needs_the_heads_it_reads() {
        let all = [true, true, true];
        let c_only = [false, false, true];
        assert_eq!(c_score_rules("auto", all).unwrap().len(), 3);
        assert_eq!(c_score_rules("auto", c_only).unwrap(), [CScore::Head]);
        assert_eq!(c_score_rules("chain", all).unwrap(), [CScore::Chain]);
        let err = c_score_rules("chain", c_only).unwrap_err().to_string();
        assert!(err.contains("--tasks abc"), "{err}");
        let err = c_score_rules("product", all).unwrap_err().to_string();
        assert!(err.contains("head, chain, both or auto"), "{err}");
    }

    #[test]
    fn a_tune_fold_reads_as_i_of_k() {
        let f: TuneFold = "2/4".parse().unwrap();
        assert_eq!((f.index, f.folds, f.to_string()), (2, 4, "2/4".to_string()));
        for bad in ["0/4", "5/4", "1/1", "2", "a/4", "2/b", ""] {
            let err = bad.parse::<TuneFold>().unwrap_err();
            assert!(err.contains("I/K expected"), "{bad}: {err}");
        }
    }
}
