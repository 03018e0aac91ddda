//! `ansel adapt`: SEDAN's self-learning loop as one command. Unlabelled documents of the
//! target domain -> synthetic questions (passages of K_GQA sentences, cloze generator) ->
//! round-trip filter (by default the base model itself must rank the source sentence first)
//! -> a held-out part of the kept questions for early stopping -> fine-tuning the base on
//! the rest (stage (b)). The base is a bi-encoder (SEDAN) or a cross-encoder; the report of
//! made / kept / used pairs is printed and recorded in the new model's card.

use super::synth::{filter, GenerationArgs};
use ansel::models;
use ansel_data::{shuffle_seeded, Question};
use ansel_model::{write_atomic, ModelCard};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct AdaptArgs {
    /// The model to adapt: a bi-encoder or a cross-encoder directory.
    #[arg(long)]
    base: PathBuf,
    #[command(flatten)]
    generation: GenerationArgs,
    /// Output model directory.
    #[arg(long)]
    out: PathBuf,
    /// Round-trip filter model (default: the base being adapted).
    #[arg(long)]
    filter_model: Option<String>,
    /// Fraction of the kept questions held out as dev data for early stopping (no labels of
    /// the target domain are used).
    #[arg(long, default_value_t = 0.1)]
    dev_fraction: f64,
    /// Train on at most this many synthetic questions (after filtering).
    #[arg(long)]
    max_questions: Option<usize>,
    #[arg(long, default_value_t = 1)]
    epochs: usize,
    #[arg(long, default_value_t = 2e-5)]
    lr: f64,
    /// A bi-encoder's classifier head learns at --lr times this.
    #[arg(long, default_value_t = 1.0)]
    head_lr_factor: f64,
    /// Pairs per optimizer step.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Stop after N optimizer steps.
    #[arg(long)]
    max_steps: Option<usize>,
    /// Evaluate on the held-out synthetic questions every N steps (0: once per epoch).
    #[arg(long, default_value_t = 0)]
    eval_every: usize,
    #[arg(long, default_value_t = 3)]
    patience: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Intra-op threads (0: all cores).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Continue an interrupted run in --out (the synthetic data written there is reused).
    #[arg(long)]
    resume: bool,
    /// Train on the synthetic data already in --out (synthetic-train.jsonl, synthetic-dev.jsonl,
    /// synthetic-report.json, e.g. copied from another run) instead of generating it: compares
    /// bases on the same data.
    #[arg(long)]
    reuse_data: bool,
}

/// The synthetic data written next to the model (and reused by --resume).
const TRAIN_FILE: &str = "synthetic-train.jsonl";
const DEV_FILE: &str = "synthetic-dev.jsonl";
const REPORT_FILE: &str = "synthetic-report.json";

pub fn run(args: AdaptArgs) -> Result<()> {
    let started = Instant::now();
    let card = ModelCard::read(&args.base)
        .with_context(|| format!("--base {}: not a model directory", args.base.display()))?;
    if card.kind != ansel_bert::BI_KIND && card.kind != ansel_bert::KIND {
        bail!(
            "--base {}: ansel adapt trains a {} or a {}, not a {:?}",
            args.base.display(),
            ansel_bert::BI_KIND,
            ansel_bert::KIND,
            card.kind
        );
    }
    if !(0.0..1.0).contains(&args.dev_fraction) {
        bail!("--dev-fraction must be in [0, 1)");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let train_path = args.out.join(TRAIN_FILE);
    let dev_path = args.out.join(DEV_FILE);
    let report_path = args.out.join(REPORT_FILE);
    let report = if (args.resume || args.reuse_data) && train_path.is_file() {
        eprintln!(
            "[adapt] reusing the synthetic data in {}",
            args.out.display()
        );
        match std::fs::read(&report_path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{}: not JSON", report_path.display()))?,
            Err(_) => serde_json::Value::Null,
        }
    } else {
        let report = make_data(&args, &train_path, &dev_path)?;
        write_atomic(&report_path, &serde_json::to_vec_pretty(&report)?)?;
        eprintln!(
            "[adapt] synthetic data: {}",
            serde_json::to_string(&report)?
        );
        report
    };
    let train = ansel_data::read_path(&train_path, None)?;
    let dev = if dev_path.is_file() {
        ansel_data::read_path(&dev_path, None)?
    } else {
        Vec::new()
    };
    eprintln!(
        "[adapt] training {} on {} synthetic questions, dev {} (held-out synthetic)",
        card.kind,
        train.len(),
        dev.len()
    );
    let base = args.base.display().to_string();
    // Both model kinds take the same run options; each keeps its own defaults for the rest.
    let run = |defaults: ansel_bert::run::RunOptions, name: String| ansel_bert::run::RunOptions {
        train_path: train_path.display().to_string(),
        dev_path: dev_path.display().to_string(),
        name,
        epochs: args.epochs,
        lr: args.lr,
        batch_size: args.batch_size,
        accumulate: 1,
        max_steps: args.max_steps,
        eval_every: args.eval_every,
        patience: args.patience,
        seed: args.seed,
        threads: args.threads,
        resume: args.resume,
        extra: report.clone(),
        ..defaults
    };
    let card = if card.kind == ansel_bert::BI_KIND {
        let mut o = ansel_bert::bi_train::BiTrainOptions::defaults(&base, &args.out);
        o.run = run(o.run, format!("{} adapted (SEDAN)", card.name));
        o.head_lr_factor = args.head_lr_factor;
        o.run.max_len = card
            .config
            .get("max_len")
            .and_then(serde_json::Value::as_u64)
            .map_or(o.run.max_len, |m| m as usize);
        ansel_bert::bi_train::train_bi_encoder(&o, &train, &dev)?
    } else {
        let mut o = ansel_bert::train::TrainOptions::defaults(&base, &args.out);
        o.run = run(o.run, format!("{} adapted (synthetic pairs)", card.name));
        ansel_bert::train::train(&o, &train, &dev)?
    };
    let used_pairs: usize = train.iter().map(|q| q.candidates.len()).sum();
    eprintln!(
        "[adapt] done in {:.0} s: {} -> {} ({} synthetic questions / {} pairs used for training)",
        started.elapsed().as_secs_f64(),
        args.base.display(),
        args.out.display(),
        train.len(),
        used_pairs
    );
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

/// Generates, filters and splits the synthetic data; returns the report.
fn make_data(args: &AdaptArgs, train_path: &Path, dev_path: &Path) -> Result<serde_json::Value> {
    let (questions, made) = args.generation.generate(None)?;
    eprintln!(
        "[adapt] generated {} questions ({} pairs) from {} sentences in {} passages of {} documents ({:.1} s)",
        made.questions, made.pairs, made.sentences, made.passages, made.documents, made.seconds
    );
    if questions.is_empty() {
        bail!("no synthetic question could be generated from the --text documents");
    }
    // The filter is the costly part (one encoder pass per question): with --max-questions,
    // only a seeded random 1.5x of that many go through it.
    let mut questions = questions;
    shuffle_seeded(&mut questions, args.seed);
    if let Some(max) = args.max_questions {
        questions.truncate(max + max / 2);
    }
    let offered = questions.len();
    let filter_spec = args
        .filter_model
        .clone()
        .unwrap_or_else(|| args.base.display().to_string());
    let ranker = models::resolve(&filter_spec, &questions)?;
    let (mut kept, filtered) = filter(
        ranker.as_ref(),
        &filter_spec,
        questions,
        args.generation.keep_top,
    )?;
    drop(ranker);
    eprintln!(
        "[adapt] round-trip filter ({} top {}): kept {} questions ({} pairs), dropped {} ({:.1} s)",
        filter_spec,
        args.generation.keep_top,
        filtered.kept_questions,
        filtered.kept_pairs,
        filtered.dropped_questions,
        filtered.seconds
    );
    if kept.is_empty() {
        bail!("the round-trip filter kept no synthetic question; try --keep-top 2 or another --filter-model");
    }
    if let Some(max) = args.max_questions {
        kept.truncate(max);
    }
    let n_dev = ((kept.len() as f64) * args.dev_fraction).round() as usize;
    let dev: Vec<Question> = kept.split_off(kept.len() - n_dev);
    let pairs = |qs: &[Question]| -> usize { qs.iter().map(|q| q.candidates.len()).sum() };
    for (path, qs) in [(train_path, &kept), (dev_path, &dev)] {
        ansel_model::write_questions(path, qs)?;
    }
    Ok(serde_json::json!({
        "generated": made,
        "offered_to_filter": offered,
        "filtered": filtered,
        "used": {
            "train_questions": kept.len(), "train_pairs": pairs(&kept),
            "dev_questions": dev.len(), "dev_pairs": pairs(&dev),
            "max_questions": args.max_questions, "seed": args.seed,
        },
        "texts": args.generation.texts.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "passage_sentences": args.generation.passage_sentences, "question_words": args.generation.question_words,
    }))
}
