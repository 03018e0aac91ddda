//! `ansel-lab cassie-bench`: every CASSIE ablation head trained on cached encoder features
//! (several seeds), and the cost of the Sinkhorn alignment against the encoder's.

use ansel::cassie::{answered, encode_splits};
use ansel_cassie::{
    fit, FitOptions, HeadConfig, OtOptions, PairEncoder, PairSet, Prepared, SplitFeatures, WordMass,
};
use ansel_data::Question;
use ansel_eval::Report;
use ansel_model::write_atomic;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `ansel-lab cassie-bench`: the ablation table on cached features, and the Sinkhorn cost.
#[derive(Args)]
pub struct CassieBenchArgs {
    /// The frozen cross-encoder (its own scores are the candidate-only baseline row).
    #[arg(long)]
    base: PathBuf,
    #[arg(long)]
    train: PathBuf,
    #[arg(long)]
    dev: PathBuf,
    #[arg(long)]
    test: PathBuf,
    /// Feature cache directory (one subdirectory per split).
    #[arg(long)]
    cache: PathBuf,
    /// Seeds of every variant, comma-separated.
    #[arg(long, default_value = "1,2,3", value_delimiter = ',')]
    seeds: Vec<u64>,
    #[arg(long, default_value_t = 30)]
    epochs: usize,
    #[arg(long, default_value_t = 5)]
    patience: usize,
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long, default_value_t = 128)]
    max_len: usize,
    /// Only encode the splits into the cache.
    #[arg(long)]
    cache_only: bool,
    /// Every head adds the base cross-encoder's logit to its output.
    #[arg(long)]
    residual: bool,
    /// Every GCN head scores [GCN output; candidate node input].
    #[arg(long)]
    skip: bool,
    /// Markdown file to write (printed too).
    #[arg(long)]
    out: Option<PathBuf>,
}

struct Row {
    label: String,
    what: String,
    reports: Vec<Report>,
    dev: Vec<Report>,
}

fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

pub fn bench(args: CassieBenchArgs) -> Result<()> {
    ansel_torch::init(args.threads, 0);
    let read = |p: &Path, what: &str| {
        ansel_data::read_path(p, None).with_context(|| format!("cannot read --{what} data"))
    };
    let (train, dev, test) = (
        read(&args.train, "train")?,
        read(&args.dev, "dev")?,
        read(&args.test, "test")?,
    );
    let encoder = PairEncoder::load(&args.base, args.max_len)
        .with_context(|| format!("cannot load --base {}", args.base.display()))?;
    let mass = WordMass::count(encoder.tokenizer(), &train)?;
    let mut f = encode_splits(
        &encoder,
        &args.base,
        Some(&args.cache),
        vec![
            ("train", answered(train)),
            ("dev", answered(dev)),
            ("test", answered(test)),
        ],
    )?;
    if args.cache_only {
        return Ok(());
    }
    let test_f = f.pop().context("test")?;
    let dev_f = f.pop().context("dev")?;
    let train_f = f.pop().context("train")?;
    let ot = OtOptions::default();
    let started = Instant::now();
    let train_p = Prepared::new(&train_f, &mass, &ot);
    let dev_p = Prepared::new(&dev_f, &mass, &ot);
    let test_p = Prepared::new(&test_f, &mass, &ot);
    let align_seconds = started.elapsed().as_secs_f64();
    let dim = train_f.pairs.dim();

    let base_scores = |s: &SplitFeatures| -> Vec<Vec<f32>> {
        let logits = s.pairs.logits.values();
        s.graphs
            .iter()
            .enumerate()
            .map(|(k, g)| {
                (0..g.nodes.len())
                    .map(|c| s.node(k, c, 0).map_or(f32::NEG_INFINITY, |p| logits[p]))
                    .collect()
            })
            .collect()
    };
    let eval = |s: &SplitFeatures| {
        ansel_eval::evaluate(&s.questions, &base_scores(s), ansel_eval::Filter::Answered)
    };
    let train_base = eval(&train_f);
    let mut rows = vec![Row {
        label: "cross-encoder, candidate only".into(),
        what: format!("committed model {} (its own scores)", args.base.display()),
        reports: vec![eval(&test_f)],
        dev: vec![eval(&dev_f)],
    }];
    let full = || {
        let mut h = HeadConfig::full(dim);
        h.residual = args.residual;
        h.skip = args.skip;
        h
    };
    let mut variants: Vec<(HeadConfig, &str)> = Vec::new();
    let mut loct = full();
    loct.loct = true;
    loct.mi_weight = 0.0;
    variants.push((
        loct,
        "FFN over [mean words; pooled CLS] of candidate, prev, next",
    ));
    let mut no_ot = full();
    no_ot.ot = false;
    variants.push((
        no_ot,
        "sentence vector = mean of all content words; cost under a b^T",
    ));
    let mut no_gcn = full();
    no_gcn.gcn = false;
    variants.push((
        no_gcn,
        "candidate node input straight to the score FFN (MI still on node inputs)",
    ));
    let mut no_mi = full();
    no_mi.mi_weight = 0.0;
    variants.push((no_mi, "gamma = 0"));
    variants.push((full(), "OT + GCN + MI (gamma 0.3)"));
    let mut log = Vec::new();
    for (config, what) in variants {
        let mut row = Row {
            label: config.label(),
            what: what.to_string(),
            reports: Vec::new(),
            dev: Vec::new(),
        };
        for &seed in &args.seeds {
            let opts = FitOptions {
                epochs: args.epochs,
                patience: args.patience,
                seed,
                ..FitOptions::default()
            };
            let t = Instant::now();
            let fitted = fit(config.clone(), &train_p, &dev_p, &opts, &mut |_| Ok(()))?;
            let report = test_p.evaluate(&fitted.head);
            let line = format!(
                "{} seed {seed}: best epoch {} of {}, dev MAP {:.4}, test MAP {:.4} MRR {:.4} P@1 {:.4} ({:.0}s)",
                row.label,
                fitted.best_epoch,
                fitted.epochs,
                fitted.dev.metric("MAP").unwrap_or(0.0),
                report.metric("MAP").unwrap_or(0.0),
                report.metric("MRR").unwrap_or(0.0),
                report.metric("P@1").unwrap_or(0.0),
                t.elapsed().as_secs_f64()
            );
            eprintln!("{line}");
            log.push(line);
            row.reports.push(report);
            row.dev.push(fitted.dev);
        }
        rows.push(row);
    }
    let timing = sinkhorn_cost(&encoder, &mass, &ot, &test_f.questions)?;
    let mut md = markdown(
        &args,
        &rows,
        &log,
        &timing,
        align_seconds,
        &train_f,
        &dev_f,
        &test_f,
    );
    md += &format!(
        "\nFor reference, the frozen encoder's own scores on the training pairs: MAP {:.4} / P@1 {:.4} \
         (test: {:.4} / {:.4}; dev MAP in the table). It was fine-tuned on these questions, \
         yet its training scores are close to its dev scores, so the heads do not train on features that \
         are much more separable than those of unseen questions.\n",
        train_base.metric("MAP").unwrap_or(0.0),
        train_base.metric("P@1").unwrap_or(0.0),
        rows[0].reports[0].metric("MAP").unwrap_or(0.0),
        rows[0].reports[0].metric("P@1").unwrap_or(0.0),
    );
    print!("{md}");
    if let Some(out) = &args.out {
        write_atomic(out, md.as_bytes())?;
    }
    Ok(())
}

struct Timing {
    encoder_ms: f64,
    sinkhorn_ms: f64,
    align_ms: f64,
    q_words: usize,
    s_words: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Encoder forward time for a 12-word question against 3 sentences of 30 words, and the
/// time of Sinkhorn (and of the whole alignment) on that problem.
fn sinkhorn_cost(
    encoder: &PairEncoder,
    mass: &WordMass,
    ot: &OtOptions,
    questions: &[Question],
) -> Result<Timing> {
    use ansel_torch::tch::{self, Device, Kind, Tensor};
    // Real words: content words of the test data, so that the pairs look like real input.
    let mut pool: Vec<String> = Vec::new();
    for q in questions.iter().take(50) {
        for c in &q.candidates {
            pool.extend(ansel_text::content_words(&c.text));
        }
    }
    if pool.len() < 120 {
        bail!("not enough test text to build the timing problem");
    }
    let question: String = pool[..12].join(" ");
    let sentences: Vec<String> = (0..3)
        .map(|i| pool[12 + 30 * i..42 + 30 * i].join(" "))
        .collect();
    let pairs: Vec<(&str, &str)> = sentences
        .iter()
        .map(|s| (question.as_str(), s.as_str()))
        .collect();
    let mut enc_times = Vec::new();
    let mut set: Option<PairSet> = None;
    for _ in 0..10 {
        let t = Instant::now();
        set = Some(encoder.encode(&pairs, &mut |_| {})?);
        enc_times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let set = set.context("no encoding")?;
    let (n, m) = (set.q_words[0].len(), set.s_words[0].len());
    let d = set.dim();
    let mut align_times = Vec::new();
    let mut sink_times = Vec::new();
    tch::no_grad(|| {
        let cost = Tensor::rand([3, 12, 30], (Kind::Float, Device::Cpu));
        let a = Tensor::full([3, 12], (1.0f64 / 12.0).ln(), (Kind::Float, Device::Cpu));
        let b = Tensor::full([3, 30], (1.0f64 / 30.0).ln(), (Kind::Float, Device::Cpu));
        let _ = d;
        for _ in 0..50 {
            let t = Instant::now();
            let plan = ansel_cassie::sinkhorn_log(&cost, &a, &b, ot);
            let _ = plan.sum(Kind::Float).double_value(&[]);
            sink_times.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let _ = ansel_cassie::align(&set, mass, ot, 256);
            align_times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    });
    Ok(Timing {
        encoder_ms: median(enc_times),
        sinkhorn_ms: median(sink_times),
        align_ms: median(align_times),
        q_words: n,
        s_words: m,
    })
}

#[allow(clippy::too_many_arguments)]
fn markdown(
    args: &CassieBenchArgs,
    rows: &[Row],
    log: &[String],
    timing: &Timing,
    align_seconds: f64,
    train: &SplitFeatures,
    dev: &SplitFeatures,
    test: &SplitFeatures,
) -> String {
    let mut md = String::new();
    md += "# CASSIE on WikiQA: ablations (frozen encoder)\n\n";
    md += &format!(
        "Written by `bash scripts/bench-cassie.sh` (`ansel-lab cassie-bench`). Base encoder: `{}` (frozen). \
         Train {} / dev {} / test {} answered questions ({} / {} / {} sentence pairs encoded once each). \
         Seeds {:?}; each variant trains for at most {} epochs with early stopping on dev MAP (patience {}). \
         Test: WikiQA test, questions with at least one correct answer ({} questions).\n\n",
        args.base.display(),
        train.questions.len(),
        dev.questions.len(),
        test.questions.len(),
        train.pairs.len(),
        dev.pairs.len(),
        test.pairs.len(),
        args.seeds,
        args.epochs,
        args.patience,
        test.questions.len(),
    );
    md +=
        "| model | what | test P@1 | test MAP | test MRR | dev MAP |\n|---|---|---|---|---|---|\n";
    for row in rows {
        let col = |reports: &[Report], m: &str| {
            let v: Vec<f64> = reports.iter().filter_map(|r| r.metric(m)).collect();
            let (mean, sd) = mean_sd(&v);
            if v.len() > 1 {
                format!("{mean:.4} ± {sd:.4}")
            } else {
                format!("{mean:.4}")
            }
        };
        md += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            row.label,
            row.what,
            col(&row.reports, "P@1"),
            col(&row.reports, "MAP"),
            col(&row.reports, "MRR"),
            col(&row.dev, "MAP"),
        );
    }
    md += "\nMean ± sample standard deviation over the seeds (the baseline row is one fixed model).\n\n";
    md += "## Sinkhorn cost\n\n";
    md += &format!(
        "One question of 12 words against 3 sentences of 30 words (real test words; after stop-word \
         removal the encoder's pairs have {} question and {} sentence content words):\n\n\
         | step | median ms |\n|---|---|\n\
         | encoder forward, 3 pairs `[CLS] q [SEP] s [SEP]` (+ word pooling) | {:.2} |\n\
         | Sinkhorn-Knopp, log domain, batched `[3, 12, 30]`, {} iterations | {:.3} |\n\
         | whole alignment of the 3 pairs (costs, Sinkhorn, argmax context, means) | {:.3} |\n\n\
         Sinkhorn costs {:.1}% of the encoder's time (target < 5%); the whole alignment {:.1}%. \
         Aligning all {} cached pairs of train+dev+test took {:.1} s.\n\n",
        timing.q_words,
        timing.s_words,
        timing.encoder_ms,
        OtOptions::default().iterations,
        timing.sinkhorn_ms,
        timing.align_ms,
        100.0 * timing.sinkhorn_ms / timing.encoder_ms,
        100.0 * timing.align_ms / timing.encoder_ms,
        train.pairs.len() + dev.pairs.len() + test.pairs.len(),
        align_seconds,
    );
    md += "## Runs\n\n```text\n";
    for line in log {
        md += line;
        md.push('\n');
    }
    md += "```\n";
    md
}
