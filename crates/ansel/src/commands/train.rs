use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

/// Options every trainer understands; a model family adds its own below them.
#[derive(Args)]
pub struct TrainArgs {
    /// Model family to train.
    #[arg(long)]
    pub model: String,
    /// Training data (any format `ansel eval` reads).
    #[arg(long)]
    pub train: PathBuf,
    /// Dev data for early stopping on MAP.
    #[arg(long)]
    pub dev: PathBuf,
    /// Output model directory (written atomically; holds model.json, weights, training log).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Stop after this many epochs without a better dev MAP.
    #[arg(long, default_value_t = 3)]
    pub patience: usize,
    /// Continue from the last checkpoint in --out.
    #[arg(long)]
    pub resume: bool,
    #[arg(long)]
    pub epochs: Option<usize>,
    #[arg(long)]
    pub lr: Option<f64>,
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Intra-op threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[command(flatten)]
    pub efficient: super::efficient::EfficientArgs,
}

type Trainer = fn(&TrainArgs) -> Result<()>;

/// Trainable model families, by the name `--model` takes. A new family registers one line here.
const TRAINERS: &[(&str, Trainer)] = &[
    ("cosinenet", super::efficient::train_cosinenet),
    ("relcnn", super::efficient::train_relcnn),
    (
        "compare-aggregate",
        super::efficient::train_compare_aggregate,
    ),
];

pub fn run(args: TrainArgs) -> Result<()> {
    let Some((_, train)) = TRAINERS.iter().find(|(kind, _)| *kind == args.model) else {
        let known: Vec<&str> = TRAINERS.iter().map(|(k, _)| *k).collect();
        bail!(
            "cannot train model kind {:?}; trainable kinds: {}",
            args.model,
            known.join(", ")
        )
    };
    train(&args)
}
