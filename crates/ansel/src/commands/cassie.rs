//! CASSIE on the command line: `ansel train --model cassie` and `ansel explain` (the alignments
//! behind a ranking); the ablation table is `ansel-lab cassie-bench`.

use super::train::TrainArgs;
use super::DataArgs;
use ansel::cassie::{answered, encode_splits as splits, machine};
use ansel_cassie::{
    fit, relative_to, CassieRanker, CassieSettings, FitOptions, Fitted, HeadConfig, OtOptions,
    PairEncoder, Prepared, WordMass, HEAD_FILE,
};
use ansel_eval::Report;
use ansel_model::train::TrainingLog;
use ansel_model::{replace_dir, ModelCard, TrainingRecord};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `--model cassie` (a head on a frozen cross-encoder; `--base` names it).
#[derive(Args)]
pub struct CassieArgs {
    /// Directory for the encoder features of --train/--dev (reused when they match).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Ablation: sentence vector = mean of all its content words (no optimal transport).
    #[arg(long)]
    pub no_ot: bool,
    /// Ablation: no answer-context dependencies (the candidate node is scored alone).
    #[arg(long)]
    pub no_gcn: bool,
    /// Ablation: no mutual-information loss.
    #[arg(long)]
    pub no_mi: bool,
    /// Weight gamma of the mutual-information loss.
    #[arg(long, default_value_t = 0.3)]
    pub mi_weight: f64,
    /// Train the frozen-encoder LOCT baseline head instead of CASSIE.
    #[arg(long)]
    pub loct_head: bool,
    /// Add the base cross-encoder's logit to the head's output (the head learns a correction).
    #[arg(long)]
    pub residual: bool,
    /// Score the candidate from [GCN output; its own node input] (a skip connection).
    #[arg(long)]
    pub skip: bool,
    /// Sinkhorn entropic regularisation (relative to the mean word distance of a pair).
    #[arg(long, default_value_t = 0.1)]
    pub epsilon: f64,
    /// Sinkhorn iterations.
    #[arg(long, default_value_t = 50)]
    pub sinkhorn_iters: usize,
    /// Fine-tune the --base encoder together with the head (whole questions per step; --lr is
    /// the encoder's, --batch-size counts candidates; the model directory holds the encoder).
    #[arg(long)]
    pub end_to_end: bool,
    /// With --end-to-end: the head's peak learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub head_lr: f64,
}

impl CassieArgs {
    fn head(&self, dim: i64) -> HeadConfig {
        let mut h = HeadConfig::full(dim);
        h.ot = !self.no_ot;
        h.gcn = !self.no_gcn;
        h.mi_weight = if self.no_mi { 0.0 } else { self.mi_weight };
        h.loct = self.loct_head;
        h.residual = self.residual;
        h.skip = self.skip;
        h
    }

    fn ot(&self) -> OtOptions {
        OtOptions {
            epsilon: self.epsilon,
            iterations: self.sinkhorn_iters,
        }
    }
}

/// `ansel train --model cassie`.
pub fn train_cassie(args: &TrainArgs) -> Result<()> {
    let ce = &args.cross_encoder;
    let Some(base) = ce.base.as_deref() else {
        bail!("--model cassie needs --base DIR: a trained cross-encoder directory (e.g. models/minilm-l6-wikiqa)")
    };
    let c = &args.cassie;
    if c.end_to_end {
        return train_end_to_end(args, base);
    }
    let base = PathBuf::from(base);
    ansel_torch::init(args.threads, args.seed);
    let started = Instant::now();
    let (train, dev) = args.read_splits()?;
    let encoder = PairEncoder::load(&base, ce.max_len)
        .with_context(|| format!("cannot load --base {}", base.display()))?;
    let mass = WordMass::count(encoder.tokenizer(), &train)?;
    let ot = c.ot();
    let mut features = splits(
        &encoder,
        &base,
        c.cache.as_deref(),
        vec![("train", answered(train)), ("dev", answered(dev))],
    )?;
    let dev_f = features.pop().context("dev split")?;
    let train_f = features.pop().context("train split")?;
    let train_p = Prepared::new(&train_f, &mass, &ot);
    let dev_p = Prepared::new(&dev_f, &mass, &ot);
    let config = c.head(train_f.pairs.dim());
    let opts = FitOptions {
        epochs: args.epochs.unwrap_or(30),
        patience: args.patience.max(1),
        lr: args.lr.unwrap_or(1e-3),
        batch_size: args.batch_size.unwrap_or(32),
        seed: args.seed,
        ..FitOptions::default()
    };
    let mut entries = Vec::new();
    let fitted = fit(config.clone(), &train_p, &dev_p, &opts, &mut |e| {
        eprintln!("{e}");
        entries.push(e);
        Ok(())
    })?;
    let rel = relative_to(&base, &args.out)?;
    let settings = CassieSettings {
        base: rel.display().to_string(),
        max_len: ce.max_len,
        head: config,
        ot,
    };
    let name = ce.name.clone().unwrap_or_else(|| {
        args.out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "cassie".into())
    });
    let mut card = ModelCard::new(ansel_cassie::KIND, &name, serde_json::to_value(&settings)?);
    card.training = Some(TrainingRecord {
        train_data: vec![args.train.display().to_string()],
        dev_data: Some(args.dev.display().to_string()),
        hyperparameters: serde_json::json!({
            "head": settings.head,
            "ot": settings.ot,
            "fit": opts,
            "answered_only": true,
            "encoder": "frozen (features of [CLS] q [SEP] s [SEP] per sentence)",
            "word_mass": "df over training questions + 1, normalised per sentence",
            "threads": args.threads,
        }),
        seed: args.seed,
        epochs_completed: fitted.epochs,
        best_epoch: Some(fitted.best_epoch),
        metrics: metrics("dev", &fitted.dev),
        train_seconds: started.elapsed().as_secs_f64(),
        machine: machine(),
        base: vec![settings.base.clone()],
    });
    save(&args.out, &card, &mass, &fitted, &entries)?;
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

/// `ansel train --model cassie --end-to-end`: the encoder fine-tuned with the head.
fn train_end_to_end(args: &TrainArgs, base: &str) -> Result<()> {
    let c = &args.cassie;
    if c.cache.is_some() {
        bail!("--cache holds frozen-encoder features; --end-to-end encodes every step and takes no --cache");
    }
    let (train, dev) = args.read_splits()?;
    let mut opts = ansel_cassie::EndToEndOptions::defaults(base, &args.out);
    opts.run = args.run_options(opts.run);
    opts.head = c.head(0);
    opts.ot = c.ot();
    opts.head_lr = c.head_lr;
    let card = ansel_cassie::train_end_to_end(&opts, &train, &dev)?;
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

fn metrics(split: &str, report: &Report) -> std::collections::BTreeMap<String, f64> {
    ["MAP", "MRR", "P@1"]
        .iter()
        .filter_map(|m| Some((format!("{split} {m}"), report.metric(m)?)))
        .collect()
}

fn save(
    out: &Path,
    card: &ModelCard,
    mass: &WordMass,
    fitted: &Fitted,
    entries: &[serde_json::Value],
) -> Result<()> {
    replace_dir(out, |dir| {
        ansel_torch::save_vars(&fitted.vs, &dir.join(HEAD_FILE))?;
        mass.write(&dir.join(WordMass::FILE))?;
        let mut log = TrainingLog::open(dir)?;
        for e in entries {
            log.append(e)?;
        }
        card.write(dir)
    })?;
    Ok(())
}

/// `ansel explain`: for the top answers of each question, which candidate and context words
/// the question's words were transported to.
#[derive(Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    data: DataArgs,
    /// A CASSIE model directory.
    #[arg(long)]
    model: PathBuf,
    /// Answers to explain per question.
    #[arg(long, default_value_t = 3)]
    top: usize,
    /// Only this question id.
    #[arg(long)]
    question: Option<String>,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

pub fn explain(args: ExplainArgs) -> Result<()> {
    let card = ModelCard::read(&args.model)
        .with_context(|| format!("{} is not a model directory", args.model.display()))?;
    if card.kind != ansel_cassie::KIND {
        bail!(
            "{}: explain needs a CASSIE model (kind {:?}), found kind {:?}",
            args.model.display(),
            ansel_cassie::KIND,
            card.kind
        );
    }
    let ranker = CassieRanker::load(&args.model, &card)
        .with_context(|| format!("cannot load model {}", args.model.display()))?;
    let questions = args.data.read_some()?;
    let mut found = false;
    for q in &questions {
        if args.question.as_ref().is_some_and(|id| *id != q.id) {
            continue;
        }
        found = true;
        let explained = ranker.explain(q, args.top)?;
        if args.json {
            println!(
                "{}",
                serde_json::json!({"id": q.id, "question": q.text, "answers": explained})
            );
            continue;
        }
        println!("Q [{}]: {}", q.id, q.text);
        for (rank, e) in explained.iter().enumerate() {
            let cand = &q.candidates[e.candidate];
            let gold = match cand.label {
                Some(true) => " (correct)",
                Some(false) => " (wrong)",
                None => "",
            };
            println!("{}. [{:.3}]{gold} {}", rank + 1, e.score, cand.text);
            for s in &e.sentences {
                let links: Vec<String> = s
                    .links
                    .iter()
                    .map(|(q, w, share)| format!("{q} -> {w} ({:.0}%)", share * 100.0))
                    .collect();
                println!(
                    "     {:<9} cost {:.2}: {}",
                    s.role,
                    s.transport_cost,
                    links.join(", ")
                );
            }
        }
        println!();
    }
    if !found {
        if let Some(id) = &args.question {
            bail!("no question with id {id:?} in {}", args.data.data.display());
        }
    }
    Ok(())
}
