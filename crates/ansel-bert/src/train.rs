//! Fine-tuning a cross-encoder: point-wise BCE on (question, candidate) pairs, AdamW with
//! decoupled weight decay, linear warm-up then linear decay, gradient clipping, dynamic
//! padding with length bucketing, gradient accumulation, dev-MAP evaluation with early
//! stopping, and checkpoints (weights + optimizer moments + position) that survive kill -9.
//! The loop itself is `run.rs`, shared with the bi-encoder trainer; the optimizer is
//! [`ansel_torch::AdamW`].
//!
//! TANDA (transfer then adapt) is two runs: the first on a large AS2 set from a pretrained
//! encoder, the second with `base` = the first run's output directory. The second run's
//! record lists both data sets and both bases.

use crate::ranker::score_encoded;
pub use crate::run::RunOptions;
pub(crate) use crate::run::RunState;
use crate::run::{
    dev_metrics, prepare_out, run, write_training_card, CardParts, LoopOptions, Trainee, Weights,
};
/// Shared with other trainers built on the encoder (e.g. ansel-reader's span extractor).
pub use crate::run::{machine, round};
use crate::{encode_candidate, CrossEncoderSettings};
use crate::{
    read_model_dir, resolve_base, Batch, CrossEncoder, Encoded, InputMode, PairTokenizer, KIND,
};
use ansel_data::{shuffle_seeded, Question};
use ansel_model::{ModelCard, ModelError, Result};
use ansel_torch::tch::{self, Tensor};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything a fine-tuning run needs.
#[derive(Debug, Clone, Serialize)]
pub struct TrainOptions {
    /// `base`: a Hugging Face BERT directory, or a cross-encoder directory (TANDA's adapt step).
    #[serde(flatten)]
    pub run: RunOptions,
    pub input: InputMode,
    /// Train only on questions with at least one positive candidate.
    pub answered_only: bool,
    /// Use at most this many training pairs (whole questions, in a seeded random order).
    pub max_pairs: Option<usize>,
    /// Knowledge distillation: each pair's target instead of its gold label.
    pub soft_targets: Option<SoftTargets>,
}

/// Targets in [0, 1] for every training pair (the gold label blended with a teacher's opinion),
/// in place of the gold labels: the point-wise loss learns them as it learns labels.
#[derive(Debug, Clone, Serialize)]
pub struct SoftTargets {
    /// One target per candidate of every training question, in the data's order.
    #[serde(skip)]
    pub targets: Vec<Vec<f32>>,
    /// How the targets were made (the teacher, its weight, its mapping to a probability),
    /// recorded in the model card.
    pub record: serde_json::Value,
}

impl TrainOptions {
    pub fn defaults(base: &str, out: &Path) -> TrainOptions {
        TrainOptions {
            run: RunOptions {
                accumulate: 2,
                threads: 2,
                ..RunOptions::defaults(base, out, KIND)
            },
            input: InputMode::Pair,
            answered_only: true,
            max_pairs: None,
            soft_targets: None,
        }
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
    let (model, tokenizer, initialised) = read_model_dir(&dir)?;
    let card = crate::base_card(&dir, KIND)?;
    Ok((model, tokenizer, dir, card, initialised))
}

/// Records a grown token-type table in `out`'s config.json (copied from the base).
fn set_type_vocab_size(out: &Path, types: i64) -> Result<()> {
    let path = out.join("config.json");
    let bytes = std::fs::read(&path).map_err(|e| ModelError::io(&path, e))?;
    let format = |e: serde_json::Error| ModelError::Format {
        path: path.clone(),
        message: e.to_string(),
    };
    let mut config: serde_json::Value = serde_json::from_slice(&bytes).map_err(format)?;
    config["type_vocab_size"] = types.into();
    ansel_model::write_atomic(&path, &serde_json::to_vec_pretty(&config).map_err(format)?)
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
    let targets = opts.soft_targets.as_ref().map(|t| &t.targets);
    if let Some(targets) = targets {
        let aligned = targets.len() == questions.len()
            && targets
                .iter()
                .zip(questions)
                .all(|(t, q)| t.len() == q.candidates.len());
        if !aligned {
            return Err(ModelError::Unsupported {
                model: KIND.into(),
                message: format!(
                    "{}: the soft targets do not match the questions and their candidates",
                    opts.run.train_path
                ),
            });
        }
    }
    let mut chosen: Vec<(usize, &Question)> = questions
        .iter()
        .enumerate()
        .filter(|(_, q)| !opts.answered_only || q.positives() > 0)
        .collect();
    if let Some(max) = opts.max_pairs {
        shuffle_seeded(&mut chosen, opts.run.seed);
        let mut total = 0;
        chosen.retain(|(_, q)| {
            let keep = total < max;
            total += q.candidates.len();
            keep
        });
    }
    let mut pairs = Pairs {
        items: Vec::new(),
        labels: Vec::new(),
    };
    for (i, q) in chosen {
        for (j, c) in q.candidates.iter().enumerate() {
            pairs
                .items
                .push(encode_candidate(tok, q, c, opts.input, opts.run.max_len)?);
            pairs.labels.push(match targets {
                Some(targets) => targets[i][j],
                None if c.label == Some(true) => 1.0,
                None => 0.0,
            });
        }
    }
    if pairs.items.is_empty() {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!("{}: no training pairs", opts.run.train_path),
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
            items.push(encode_candidate(tok, q, c, opts.input, opts.run.max_len)?);
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
    dev_metrics(&dev.0, &ansel_model::per_question(&dev.0, &flat))
}

/// The cross-encoder's parts of the shared training loop.
struct CrossTrainee<'a> {
    opts: &'a TrainOptions,
    model: CrossEncoder,
    pad: i64,
    pairs: Pairs,
    lengths: Vec<usize>,
    dev: (Vec<Question>, Vec<Encoded>),
    base_card: Option<ModelCard>,
}

impl Trainee for CrossTrainee<'_> {
    fn batches(&self, batch_size: usize, seed: u64) -> Vec<Vec<usize>> {
        bucketed_batches(&self.lengths, batch_size, seed)
    }

    fn loss(&self, idx: &[usize]) -> (Tensor, usize) {
        let refs: Vec<&Encoded> = idx.iter().map(|&i| &self.pairs.items[i]).collect();
        let labels: Vec<f32> = idx.iter().map(|&i| self.pairs.labels[i]).collect();
        let logits = self.model.logits(&Batch::new(&refs, self.pad), true);
        let loss = ansel_torch::pointwise_bce(&logits, &Tensor::from_slice(&labels));
        (loss, idx.len())
    }

    fn groups(&self) -> Vec<(BTreeMap<String, Tensor>, f64)> {
        vec![(self.model.shared_params(), 1.0)]
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        Ok(tch::no_grad(|| {
            evaluate_dev(&self.model, self.pad, &self.dev)
        }))
    }

    fn save(&self, dir: &Path, weights: Weights) -> Result<()> {
        weights.save_encoder(&self.model, dir)
    }

    fn write_card(&self, state: &RunState) -> Result<ModelCard> {
        write_card(
            self.opts,
            state,
            self.base_card.as_ref(),
            self.pairs.items.len(),
        )
    }

    fn load_weights(&self, dir: &Path) -> Result<()> {
        Weights::load_checkpoint_encoder(&self.model, dir)
    }
}

/// Fine-tunes a cross-encoder and writes the model directory `opts.run.out`
/// (model.json, config.json, tokenizer.json, model.safetensors in fp16, train-log.jsonl,
/// training.svg, and checkpoint/ for `--resume`).
pub fn train(opts: &TrainOptions, train: &[Question], dev: &[Question]) -> Result<ModelCard> {
    ansel_torch::init(opts.run.threads, opts.run.seed);
    let (mut model, tok, base_dir, base_card, initialised) = load_base(&opts.run.base)?;
    prepare_out(&opts.run.out, KIND, opts.run.resume, &base_dir)?;
    let types = opts
        .input
        .token_types_in(model.family().layout())
        .map_err(ModelError::Backend)?;
    let added_token_types = model.add_token_types(types)?;
    if added_token_types {
        set_type_vocab_size(&opts.run.out, model.config.type_vocab_size)?;
    }
    let pairs = training_pairs(&tok, train, opts)?;
    let dev_set = dev_set(&tok, dev, opts)?;
    let lengths: Vec<usize> = pairs.items.iter().map(Encoded::len).collect();
    let batches_per_epoch = lengths.len().div_ceil(opts.run.batch_size.max(1));
    let (steps_per_epoch, total_steps) = opts.run.steps(batches_per_epoch);
    let start = serde_json::json!({
        "event": "start", "options": opts, "train_pairs": pairs.items.len(),
        "positives": pairs.labels.iter().filter(|&&l| l > 0.5).count(),
        "dev_questions": dev_set.0.len(), "dev_pairs": dev_set.1.len(),
        "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
        "initialised_randomly": initialised,
        "token_types_added": added_token_types,
    });
    eprintln!(
        "training {} on {} pairs ({} micro-batches of {} per epoch, {} optimizer steps in all); dev: {} questions",
        KIND,
        pairs.items.len(),
        batches_per_epoch,
        opts.run.batch_size,
        total_steps,
        dev_set.0.len()
    );
    model.set_requires_grad(true);
    let trainee = CrossTrainee {
        opts,
        model,
        pad: tok.pad,
        pairs,
        lengths,
        dev: dev_set,
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
    opts: &TrainOptions,
    state: &RunState,
    base: Option<&ModelCard>,
    pairs: usize,
) -> Result<ModelCard> {
    let settings = CrossEncoderSettings {
        input: opts.input,
        max_len: opts.run.max_len,
        batch_size: 32,
    };
    write_training_card(
        CardParts {
            kind: KIND,
            run: &opts.run,
            settings: serde_json::to_value(&settings).expect("serializes"),
            base_card: base,
            hyperparameters: serde_json::json!({
                "loss": if opts.soft_targets.is_some() { "pointwise BCE to soft targets" } else { "pointwise BCE" },
                "input": opts.input, "dropout": "from config.json",
                "answered_only": opts.answered_only, "max_pairs": opts.max_pairs,
                "train_pairs": pairs, "weights": "fp16",
                "distillation": opts.soft_targets.as_ref().map(|t| &t.record),
            }),
        },
        state,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::run::CHECKPOINT;
    pub(crate) use crate::testing::tiny_base;
    use ansel_model::train::TrainingLog;

    pub(crate) fn questions() -> Vec<Question> {
        let q = crate::testing::question;
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
        o.run.lr = 1e-3;
        o.run.batch_size = 3;
        o.run.accumulate = 2;
        o.run.epochs = 1;
        o.run.threads = 1;
        o.run.warmup = 0.0;
        o
    }

    #[test]
    fn soft_targets_replace_the_gold_labels_and_must_match_the_candidates() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let (_, tok, ..) = load_base(base.to_str().unwrap()).unwrap();
        let mut opts = options(&base, &dir.path().join("out"));
        let gold = training_pairs(&tok, &questions(), &opts).unwrap().labels;
        assert_eq!(gold, [1.0, 0.0, 0.0, 1.0, 0.0]);
        let targets = vec![vec![0.9, 0.3, 0.2], vec![0.8, 0.4], vec![0.6]];
        opts.soft_targets = Some(SoftTargets {
            targets,
            record: serde_json::json!({}),
        });
        // Question 3 has no answer: left out with its target, the others keep theirs.
        let soft = training_pairs(&tok, &questions(), &opts).unwrap().labels;
        assert_eq!(soft, [0.9, 0.3, 0.2, 0.8, 0.4]);
        opts.soft_targets.as_mut().unwrap().targets[1].pop();
        let err = training_pairs(&tok, &questions(), &opts).err().unwrap();
        assert!(err.to_string().contains("do not match"), "{err}");
    }

    #[test]
    fn one_step_changes_every_weight_of_every_layer() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let out = dir.path().join("out");
        let mut opts = options(&base, &out);
        opts.run.max_steps = Some(1);
        train(&opts, &questions(), &questions()).unwrap();
        let before = ansel_torch::read_tensors(&base.join("model.safetensors")).unwrap();
        let after =
            ansel_torch::read_tensors(&out.join(CHECKPOINT).join("weights.safetensors")).unwrap();
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
        resuming_matches_for(tiny_base);
    }

    /// MPNet checkpoints name parameters its own way (`attention.attn.q`, `classifier.out_proj`).
    #[test]
    fn resuming_an_mpnet_run_matches_an_uninterrupted_run() {
        resuming_matches_for(crate::testing::tiny_mpnet_base);
    }

    fn resuming_matches_for(make_base: fn(&Path, f64) -> std::path::PathBuf) {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = make_base(dir.path(), 0.0);
        // Uninterrupted: 6 optimizer steps (2 epochs of 3 micro-batches of 2 pairs).
        let full = dir.path().join("full");
        let mut opts = options(&base, &full);
        opts.run.epochs = 2;
        opts.run.batch_size = 2;
        opts.run.accumulate = 1;
        opts.run.checkpoint_every = 1;
        train(&opts, &questions(), &questions()).unwrap();
        // Killed after the checkpoint of step 4 (in the second epoch), then resumed.
        let cut = dir.path().join("cut");
        let mut first = opts.clone();
        first.run.out = cut.clone();
        first.run.interrupt_after = Some(4);
        assert!(train(&first, &questions(), &questions()).is_err());
        let state = RunState::read(&cut.join(CHECKPOINT)).unwrap();
        assert_eq!((state.opt_step, state.epoch, state.batches_done), (4, 1, 1));
        let mut again = opts.clone();
        again.run.out = cut.clone();
        // Refuses to overwrite a run without --resume.
        assert!(train(&again, &questions(), &questions()).is_err());
        again.run.resume = true;
        train(&again, &questions(), &questions()).unwrap();
        crate::testing::assert_same_checkpoints(&full, &cut, &["weights.safetensors"]);
    }

    #[test]
    fn trained_directory_loads_as_a_ranker_and_records_tanda_lineage() {
        let _serial = crate::testing::serial();
        use ansel_model::Ranker;
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let transfer = dir.path().join("transfer");
        let mut opts = options(&base, &transfer);
        opts.run.train_path = "big.jsonl".into();
        train(&opts, &questions(), &questions()).unwrap();
        let adapt = dir.path().join("adapt");
        let mut opts2 = options(&base, &adapt);
        opts2.run.base = transfer.to_str().unwrap().into();
        opts2.run.train_path = "small.jsonl".into();
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
    fn context_segments_add_a_learned_token_type_that_saves_and_loads() {
        let _serial = crate::testing::serial();
        use ansel_model::Ranker;
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let (mut grown, ..) = load_base(base.to_str().unwrap()).unwrap();
        let before = grown.params()[crate::family::TOKEN_TYPES].copy();
        assert!(grown.add_token_types(3).unwrap());
        assert!(!grown.add_token_types(3).unwrap(), "already has 3");
        let table = &grown.params()[crate::family::TOKEN_TYPES];
        assert_eq!(table.size(), [3, before.size()[1]]);
        assert!(table.narrow(0, 0, 2).equal(&before));
        assert!(
            table.get(2).equal(&before.get(0)),
            "starts as the question's type"
        );

        let out = dir.path().join("segments");
        let mut opts = options(&base, &out);
        opts.input = InputMode::ContextSegments;
        opts.run.epochs = 2;
        train(&opts, &questions(), &questions()).unwrap();
        let config = crate::BertConfig::read(&out.join("config.json")).unwrap();
        assert_eq!(config.type_vocab_size, 3);
        let card = ModelCard::read(&out).unwrap();
        assert_eq!(card.config["input"], "context-segments");
        let (trained, ..) = read_model_dir(&out).unwrap();
        let table = &trained.params()[crate::family::TOKEN_TYPES];
        assert!(
            !table.get(2).equal(&table.get(0)),
            "the context type trained"
        );
        let ranker = crate::CrossEncoderRanker::load(&out, &card).unwrap();
        let scores = ranker.score_all(&questions()).unwrap();
        assert!(scores.iter().flatten().all(|s| s.is_finite()));

        // A card asking for three token types of a two-type encoder is refused at load.
        let pair = dir.path().join("pair");
        train(&options(&base, &pair), &questions(), &questions()).unwrap();
        let mut card = ModelCard::read(&pair).unwrap();
        card.config["input"] = "context-segments".into();
        let err = crate::CrossEncoderRanker::load(&pair, &card)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("config.json") && err.contains("type_vocab_size"),
            "{err}"
        );
    }

    #[test]
    fn buckets_hold_similar_lengths_and_cover_every_pair_once() {
        let _serial = crate::testing::serial();
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
