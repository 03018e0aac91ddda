//! `ansel train --model cosinenet|relcnn|compare-aggregate` and loading of those models.

use super::train::TrainArgs;
use ansel_efficient::{
    Architecture, Averaging, Distillation, Loss, RnnKind, Teacher, TrainOptions,
};
use ansel_vectors::VectorSource;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::Path;

/// Options of the efficient rankers (Cosinenet, RelCNN, Compare-Aggregate).
#[derive(Args)]
pub struct EfficientArgs {
    /// Point-wise (binary cross-entropy) or list-wise (KL over a question's candidates).
    #[arg(long, default_value = "listwise", value_parser = clap::builder::PossibleValuesParser::new(Loss::NAMES))]
    pub loss: String,
    /// RNN over a question's candidates in document order (the reader's order without one).
    #[arg(long, default_value = "none", value_parser = clap::builder::PossibleValuesParser::new(RnnKind::NAMES))]
    pub rnn: String,
    /// Static word vectors (fetched by scripts/fetch-models.sh).
    #[arg(long, default_value = "glove", value_parser = clap::builder::PossibleValuesParser::new(VectorSource::NAMES))]
    pub vectors: String,
    /// Convolution (and projection) size; the architecture's thesis default when absent.
    #[arg(long)]
    pub hidden: Option<usize>,
    #[arg(long, default_value_t = 0.5)]
    pub dropout: f64,
    /// Most frequent words of the vector table bundled beside the training words
    /// (minilm-encoded: the first whole words of MiniLM's word-piece vocabulary).
    #[arg(long, default_value_t = 10_000)]
    pub extra_vocab: usize,
    /// Reduce the word vectors to this many principal components (over the model's
    /// vocabulary) before training; the model bundles the reduced rows.
    #[arg(long)]
    pub vector_dim: Option<usize>,
    /// Retrofit the word vectors to a lexicon before training (Faruqui et al. 2015): lines
    /// `word neighbour neighbour ...`, e.g. the WordNet lexicons `scripts/fetch-wordnet.sh`
    /// builds, or a domain's own synonym list. The model bundles the retrofitted rows.
    #[arg(long, value_name = "LEXICON")]
    pub retrofit: Option<std::path::PathBuf>,
    /// Where minilm-encoded vectors cache the words they have encoded.
    #[arg(long, default_value = "target/vector-cache")]
    pub encoded_vectors_cache: std::path::PathBuf,
    /// Cosinenet: no exact-match flag beside each word's relatedness (as in the thesis).
    #[arg(long)]
    pub no_exact_match: bool,
    /// With --rnn: the scorer sees the RNN's states only, not the pair vector too (as in the thesis).
    #[arg(long)]
    pub no_skip: bool,
    /// Cosinenet with --vectors glove+minilm-encoded: one relatedness feature from the GloVe part
    /// and one from the MiniLM part, instead of one from the whole vector.
    #[arg(long)]
    pub split_relatedness: bool,
    /// Knowledge distillation: the teacher, any model spec `ansel eval` takes (`a+b` fuses).
    /// Its scores of each data file are computed once and cached in --teacher-cache.
    #[arg(long)]
    pub teacher: Option<String>,
    /// Knowledge distillation from precomputed teacher scores of --train instead of a model:
    /// the JSON lines `ansel rank` prints, e.g. one file per fold scored by a model that never
    /// trained on that fold (out of fold). Repeatable; each question is taken from the first
    /// file that holds it.
    #[arg(long, conflicts_with = "teacher")]
    pub teacher_scores: Vec<std::path::PathBuf>,
    /// W: list-wise target (1-W) * gold + W * softmax(teacher / T); point-wise (1-W) * label
    /// + W * sigmoid(teacher / T). 0 trains on gold labels alone.
    #[arg(long, default_value_t = 0.5)]
    pub distill_weight: f64,
    /// T of the teacher's softmax (sigmoid).
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f64,
    /// List-wise with --teacher: also train on questions without a gold answer (target W *
    /// the teacher's distribution).
    #[arg(long)]
    pub distill_unanswered: bool,
    /// More training data labelled by the teacher alone (gold labels ignored); repeatable.
    #[arg(long)]
    pub extra_train: Vec<std::path::PathBuf>,
    /// Where teacher scores are cached (`<key>.jsonl`, `<key>.meta.json`).
    #[arg(long, default_value = "target/teacher-scores")]
    pub teacher_cache: std::path::PathBuf,
    /// Keep OUT.training/ after finishing, so that `--resume --epochs N` can train further.
    #[arg(long)]
    pub keep_checkpoint: bool,
    /// Keep an exponential moving average of the weights (this decay per step, in [0, 1));
    /// dev MAP and the saved model use the averaged weights.
    #[arg(long, conflicts_with = "average_epochs")]
    pub ema: Option<f64>,
    /// Average the weights of the last N epochs' ends; dev MAP and the saved model use the
    /// average.
    #[arg(long)]
    pub average_epochs: Option<usize>,
    /// Start from the trained weights of this saved model of the same kind and sizes
    /// (transfer, then adapt: e.g. a model distilled on TrecQA, then WikiQA).
    #[arg(long)]
    pub init: Option<std::path::PathBuf>,
}

fn train(architecture: Architecture, args: &TrainArgs) -> Result<()> {
    let e = &args.efficient;
    let mut opts = TrainOptions::new(
        architecture,
        &args.train.display().to_string(),
        &args.dev.display().to_string(),
        &args.out,
    );
    opts.loss = e.loss.parse().map_err(anyhow::Error::msg)?;
    opts.rnn = e.rnn.parse().map_err(anyhow::Error::msg)?;
    opts.vectors = e.vectors.parse().map_err(anyhow::Error::msg)?;
    opts.hidden = e.hidden;
    opts.dropout = e.dropout;
    opts.extra_vocab = e.extra_vocab;
    opts.vector_dim = e.vector_dim;
    opts.no_exact_match = e.no_exact_match;
    opts.no_skip = e.no_skip;
    opts.split_relatedness = e.split_relatedness;
    opts.vector_cache = Some(e.encoded_vectors_cache.clone());
    if let Some(path) = &e.retrofit {
        opts.retrofit = Some(std::sync::Arc::new(ansel_vectors::retrofit::Lexicon::read(
            path,
        )?));
    }
    opts.keep_checkpoint = e.keep_checkpoint;
    opts.init = e.init.clone();
    opts.averaging = match (e.ema, e.average_epochs) {
        (Some(decay), _) => Averaging::Ema { decay },
        (None, Some(last)) => Averaging::Epochs { last },
        (None, None) => Averaging::None,
    }
    .validate()
    .map_err(anyhow::Error::msg)?;
    opts.seed = args.seed;
    opts.patience = args.patience;
    opts.resume = args.resume;
    opts.threads = args.threads;
    opts.lr = args.lr;
    opts.epochs = args.epochs.unwrap_or(opts.epochs);
    opts.batch_pairs = args.batch_size.unwrap_or(opts.batch_pairs);
    let (train_data, dev_data) = args.read_splits()?;
    opts.teacher = teacher(e, &args.train, &train_data)?.map(std::sync::Arc::new);
    let summary = ansel_efficient::train(&opts, &train_data, &dev_data)?;
    eprintln!(
        "{}: dev MAP {:.4} (epoch {} of {}), {} trainable parameters, {:.1} s of training; saved to {}",
        architecture.name(),
        summary.dev_map,
        summary.best_epoch,
        summary.epochs,
        summary.parameters,
        summary.seconds,
        args.out.display()
    );
    Ok(())
}

/// The teacher's scores of the training data and of `--extra-train`: computed by `--teacher`
/// (cached) or read from `--teacher-scores`; none without either.
pub(crate) fn teacher(
    e: &EfficientArgs,
    train_path: &Path,
    train_data: &[ansel_data::Question],
) -> Result<Option<Teacher>> {
    if e.teacher.is_none() && e.teacher_scores.is_empty() {
        if !e.extra_train.is_empty() {
            bail!("--extra-train needs --teacher (its questions are labelled by the teacher)");
        }
        return Ok(None);
    }
    if !(0.0..=1.0).contains(&e.distill_weight) {
        bail!(
            "--distill-weight must be in [0, 1], not {}",
            e.distill_weight
        );
    }
    if !(e.temperature > 0.0 && e.temperature.is_finite()) {
        bail!(
            "--temperature must be a positive number, not {}",
            e.temperature
        );
    }
    let distillation =
        |teacher: String, caches: Vec<String>, scores_files: Vec<String>| Distillation {
            teacher,
            weight: e.distill_weight,
            temperature: e.temperature,
            caches,
            unanswered: e.distill_unanswered,
            extra_train: e
                .extra_train
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            scores_files,
        };
    let Some(spec) = e.teacher.as_deref() else {
        if !e.extra_train.is_empty() {
            bail!("--extra-train needs --teacher: --teacher-scores only covers --train");
        }
        let read = super::teacher::scores_from_files(&e.teacher_scores, train_path, train_data)?;
        let models = read.models.join(", ");
        eprintln!(
            "teacher scores of {}: read from {} file(s), by {models}",
            train_path.display(),
            e.teacher_scores.len(),
        );
        let files = e.teacher_scores.iter().map(|p| p.display().to_string());
        return Ok(Some(Teacher {
            distillation: distillation(models, read.keys, files.collect()),
            train_scores: read.scores,
            extra: Vec::new(),
        }));
    };
    let mut caches = Vec::new();
    let mut score = |path: &Path, questions: &[ansel_data::Question]| -> Result<Vec<Vec<f32>>> {
        let s = super::teacher::teacher_scores(spec, path, questions, &e.teacher_cache)?;
        if s.cached {
            eprintln!(
                "teacher scores of {}: cached in {} (scored once in {:.1} s)",
                path.display(),
                s.path.display(),
                s.scoring_seconds
            );
        } else {
            eprintln!(
                "teacher scores of {}: scored in {:.1} s (not training time), cached in {}",
                path.display(),
                s.scoring_seconds,
                s.path.display()
            );
        }
        caches.push(s.key);
        Ok(s.scores)
    };
    let train_scores = score(train_path, train_data)?;
    let mut extra = Vec::new();
    for path in &e.extra_train {
        let questions = ansel_data::read_path(path, None)
            .with_context(|| format!("cannot read --extra-train {}", path.display()))?;
        let scores = score(path, &questions)?;
        extra.extend(questions.into_iter().zip(scores));
    }
    Ok(Some(Teacher {
        distillation: distillation(spec.to_string(), caches, Vec::new()),
        train_scores,
        extra,
    }))
}

pub fn train_cosinenet(args: &TrainArgs) -> Result<()> {
    train(Architecture::Cosinenet, args)
}

pub fn train_relcnn(args: &TrainArgs) -> Result<()> {
    train(Architecture::Relcnn, args)
}

pub fn train_compare_aggregate(args: &TrainArgs) -> Result<()> {
    train(Architecture::CompareAggregate, args)
}
