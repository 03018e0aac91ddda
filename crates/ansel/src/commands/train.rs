use anyhow::{bail, Context, Result};
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
    #[command(flatten)]
    pub cross_encoder: CrossEncoderArgs,
    #[command(flatten)]
    pub cassie: super::cassie::CassieArgs,
    #[command(flatten)]
    pub eqag: super::eqag::EqagArgs,
    #[command(flatten)]
    pub reader: super::extract::ReaderArgs,
}

/// Options of `--model cross-encoder` (a BERT-family encoder fine-tuned on pairs).
#[derive(Args)]
pub struct CrossEncoderArgs {
    /// Base model: a Hugging Face BERT directory (config.json, tokenizer.json, model.safetensors),
    /// or a cross-encoder trained by ansel (TANDA: adapt a transferred model). With `--model eqag`:
    /// the base ranker, any model directory or built-in model name.
    #[arg(long)]
    pub base: Option<String>,
    /// Read "[CLS] q [SEP] prev [SEP] cand [SEP] next [SEP]" (the LOCT context baseline).
    #[arg(long)]
    pub context: bool,
    /// With --context: the context sentences get a segment (token type) of their own
    /// (question 0, candidate 1, context 2), added to the base's two and learned.
    #[arg(long, requires = "context")]
    pub context_segments: bool,
    /// Maximum tokens per input (the question is kept; candidate/context are cut).
    #[arg(long, default_value_t = 128)]
    pub max_len: usize,
    /// Micro-batches per optimizer step (gradient accumulation) [default: 2 for the
    /// cross-encoder, 1 for the bi-encoder and the span extractor].
    #[arg(long)]
    pub accumulate: Option<usize>,
    /// Fraction of the optimizer steps spent warming the learning rate up.
    #[arg(long, default_value_t = 0.1)]
    pub warmup: f64,
    /// Evaluate on dev every N optimizer steps (0: at the end of each epoch only).
    #[arg(long, default_value_t = 0)]
    pub eval_every: usize,
    /// Save a resumable checkpoint every N optimizer steps.
    #[arg(long, default_value_t = 50)]
    pub checkpoint_every: usize,
    /// Also train on questions without a positive candidate (default: only answered ones).
    #[arg(long)]
    pub all_questions: bool,
    /// Train on at most N pairs (whole questions, seeded random choice), e.g. a transfer subset.
    #[arg(long)]
    pub max_pairs: Option<usize>,
    /// Stop after N optimizer steps (the schedule decays to 0 at N).
    #[arg(long)]
    pub max_steps: Option<usize>,
    /// Name recorded in model.json.
    #[arg(long)]
    pub name: Option<String>,
    /// Bi-encoder: the classifier head learns at --lr times this.
    #[arg(long, default_value_t = 1.0)]
    pub head_lr_factor: f64,
}

impl TrainArgs {
    /// The options every transformer trainer shares: the flags given, over `defaults` (the
    /// model family's own).
    pub fn run_options(
        &self,
        defaults: ansel_bert::run::RunOptions,
    ) -> ansel_bert::run::RunOptions {
        let ce = &self.cross_encoder;
        ansel_bert::run::RunOptions {
            train_path: self.train.display().to_string(),
            dev_path: self.dev.display().to_string(),
            seed: self.seed,
            patience: self.patience,
            resume: self.resume,
            threads: self.threads,
            epochs: self.epochs.unwrap_or(defaults.epochs),
            lr: self.lr.unwrap_or(defaults.lr),
            batch_size: self.batch_size.unwrap_or(defaults.batch_size),
            accumulate: ce.accumulate.unwrap_or(defaults.accumulate),
            max_len: ce.max_len,
            warmup: ce.warmup,
            eval_every: ce.eval_every,
            checkpoint_every: ce.checkpoint_every,
            max_steps: ce.max_steps,
            name: ce.name.clone().unwrap_or_else(|| defaults.name.clone()),
            ..defaults
        }
    }

    /// The --train and --dev data sets, each error naming its option.
    pub fn read_splits(&self) -> Result<(Vec<ansel_data::Question>, Vec<ansel_data::Question>)> {
        let train = ansel_data::read_path(&self.train, None).context("cannot read --train data")?;
        let dev = ansel_data::read_path(&self.dev, None).context("cannot read --dev data")?;
        super::require_questions(&train, &self.train, "--train")?;
        super::require_questions(&dev, &self.dev, "--dev")?;
        Ok((train, dev))
    }
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
    (ansel_bert::KIND, train_cross_encoder),
    (ansel_cassie::KIND, super::cassie::train_cassie),
    (ansel_bert::BI_KIND, train_bi_encoder),
    (ansel_graph::KIND, super::eqag::train),
    (ansel_reader::KIND, super::extract::train_span_extractor),
];

fn train_cross_encoder(args: &TrainArgs) -> Result<()> {
    let ce = &args.cross_encoder;
    let Some(base) = ce.base.as_deref() else {
        bail!("--model cross-encoder needs --base DIR (a Hugging Face BERT directory or a cross-encoder)")
    };
    let (train, dev) = args.read_splits()?;
    let mut opts = ansel_bert::train::TrainOptions::defaults(base, &args.out);
    opts.run = args.run_options(opts.run);
    opts.input = match (ce.context, ce.context_segments) {
        (_, true) => ansel_bert::InputMode::ContextSegments,
        (true, false) => ansel_bert::InputMode::Context,
        (false, false) => ansel_bert::InputMode::Pair,
    };
    opts.answered_only = !ce.all_questions;
    opts.max_pairs = ce.max_pairs;
    if let Some(teacher) = super::efficient::teacher(&args.efficient, &args.train, &train)? {
        opts.soft_targets = Some(soft_targets(&teacher, &train, args.efficient.temperature)?);
    }
    let card = ansel_bert::train::train(&opts, &train, &dev)?;
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

/// A cross-encoder's distillation targets: `(1 - W) * gold + W * p`, `p` the teacher's score
/// mapped to a probability by a Platt fit to the training pairs' gold labels. A point-wise
/// target needs a probability, and a fused teacher's scores (a logit plus a weighted cosine)
/// are not one; the fit makes them one without looking at other candidates.
fn soft_targets(
    teacher: &ansel_efficient::Teacher,
    train: &[ansel_data::Question],
    temperature: f64,
) -> Result<ansel_bert::train::SoftTargets> {
    if temperature != 1.0 {
        bail!("--temperature does not apply to --model cross-encoder: the teacher's scores are mapped to probabilities by a Platt fit to the gold labels");
    }
    if !teacher.extra.is_empty() {
        bail!("--extra-train is not supported by --model cross-encoder");
    }
    let scored = || train.iter().zip(&teacher.train_scores);
    let pairs: Vec<(f32, bool)> = scored()
        .flat_map(|(q, s)| q.candidates.iter().zip(s))
        .map(|(c, &s)| (s, c.label == Some(true)))
        .collect();
    let platt = ansel_eval::calibration::Platt::fit(&pairs)
        .context("the teacher gave no finite score to fit")?;
    let weight = teacher.distillation.weight;
    let targets = scored()
        .map(|(q, s)| {
            q.candidates
                .iter()
                .zip(s)
                .map(|(c, &s)| {
                    let gold = if c.label == Some(true) { 1.0 } else { 0.0 };
                    ((1.0 - weight) * gold + weight * platt.probability(s)) as f32
                })
                .collect()
        })
        .collect();
    let record = serde_json::json!({
        "teacher": teacher.distillation,
        "target": "(1 - weight) x gold + weight x sigmoid(a x teacher score + b)",
        "platt": {"a": platt.a, "b": platt.b, "fitted_on": "the training pairs' gold labels"},
    });
    eprintln!(
        "distillation: target (1 - {weight}) x gold + {weight} x sigmoid({:.4} x teacher + {:.4})",
        platt.a, platt.b
    );
    Ok(ansel_bert::train::SoftTargets { targets, record })
}

/// `--model bi-encoder`: SEDAN's Siamese bi-encoder. Takes the transformer options
/// (--max-len counts tokens per sentence); --batch-size counts pairs per micro-batch
/// (whole questions).
fn train_bi_encoder(args: &TrainArgs) -> Result<()> {
    let ce = &args.cross_encoder;
    let Some(base) = ce.base.as_deref() else {
        bail!("--model bi-encoder needs --base DIR (a sentence-transformers directory or a bi-encoder)")
    };
    let (train, dev) = args.read_splits()?;
    let mut opts = ansel_bert::bi_train::BiTrainOptions::defaults(base, &args.out);
    opts.run = args.run_options(opts.run);
    opts.head_lr_factor = ce.head_lr_factor;
    let card = ansel_bert::bi_train::train_bi_encoder(&opts, &train, &dev)?;
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

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
