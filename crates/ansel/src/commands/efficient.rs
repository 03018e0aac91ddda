//! `ansel train --model cosinenet|relcnn|compare-aggregate` and loading of those models.

use super::train::TrainArgs;
use ansel_efficient::{Architecture, EfficientRanker, Loss, RnnKind, TrainOptions};
use ansel_model::{ModelCard, Ranker};
use ansel_vectors::VectorSource;
use anyhow::Result;
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
    /// Keep OUT.training/ after finishing, so that `--resume --epochs N` can train further.
    #[arg(long)]
    pub keep_checkpoint: bool,
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
    opts.keep_checkpoint = e.keep_checkpoint;
    opts.seed = args.seed;
    opts.patience = args.patience;
    opts.resume = args.resume;
    opts.threads = args.threads;
    opts.lr = args.lr;
    opts.epochs = args.epochs.unwrap_or(opts.epochs);
    opts.batch_pairs = args.batch_size.unwrap_or(opts.batch_pairs);
    let (train_data, dev_data) = args.read_splits()?;
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

pub fn train_cosinenet(args: &TrainArgs) -> Result<()> {
    train(Architecture::Cosinenet, args)
}

pub fn train_relcnn(args: &TrainArgs) -> Result<()> {
    train(Architecture::Relcnn, args)
}

pub fn train_compare_aggregate(args: &TrainArgs) -> Result<()> {
    train(Architecture::CompareAggregate, args)
}

pub fn load(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(EfficientRanker::load(dir, card)?))
}
