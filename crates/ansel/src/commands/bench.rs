//! `ansel bench`: how many (question, candidate) pairs per second a model scores.

use super::DataArgs;
use ansel::models;
use ansel_data::Question;
use anyhow::{bail, Result};
use clap::Args;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Model (any `--model` spec of `ansel eval`).
    #[arg(long)]
    model: String,
    /// Timed passes over the whole data set (after one untimed warm-up pass).
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Also time each question scored on its own (as `ask` and `/rerank` do) and report the
    /// median per-question time.
    #[arg(long)]
    per_question: bool,
    /// Efficient networks: load the model once per backend (`native`, `libtorch`: what
    /// ANSEL_EFFICIENT_BACKEND picks), alternate their timed passes in this process, and report
    /// both with the ratio.
    #[arg(long)]
    compare_backends: bool,
}

pub fn run(args: BenchArgs) -> Result<()> {
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let questions = args.data.read_some()?;
    if args.compare_backends {
        return compare_backends(&args, &questions);
    }
    let model = models::resolve(&args.model, &questions)?;
    let pairs: usize = questions.iter().map(|q| q.candidates.len()).sum();
    model.score_all(&questions)?;
    let mut seconds = Vec::with_capacity(args.repeat);
    for _ in 0..args.repeat {
        let started = Instant::now();
        let scores = model.score_all(&questions)?;
        seconds.push(started.elapsed().as_secs_f64());
        std::hint::black_box(scores);
    }
    let median = median_of(&mut seconds);
    let rate = |s: f64| (pairs as f64 / s.max(1e-12)).round();
    let mut report = report_head(&args, questions.len(), pairs);
    merge(
        &mut report,
        serde_json::json!({
            "median_seconds": median,
            "median_pairs_per_second": rate(median),
            "best_pairs_per_second": rate(seconds[0]),
            "worst_pairs_per_second": rate(seconds[seconds.len() - 1]),
            "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        }),
    );
    if args.per_question {
        let mut each = Vec::with_capacity(questions.len() * args.repeat);
        for _ in 0..args.repeat {
            for question in &questions {
                let started = Instant::now();
                std::hint::black_box(model.score(question)?);
                each.push(started.elapsed().as_secs_f64());
            }
        }
        report["median_ms_per_question"] = serde_json::json!(median_of(&mut each) * 1e3);
    }
    println!("{report}");
    Ok(())
}

/// `--compare-backends`: the model loaded on each efficient backend, the timed passes of the two
/// alternating (so that both see the same load on a shared machine), medians and ratios.
fn compare_backends(args: &BenchArgs, questions: &[Question]) -> Result<()> {
    let env = ansel_efficient::BACKEND_ENV;
    let before = std::env::var_os(env);
    let mut loaded = Vec::new();
    for backend in ansel_efficient::Backend::NAMES {
        // Set while the model loads (loaders read it then); this runs before any other thread.
        std::env::set_var(env, backend);
        let started = Instant::now();
        let model = models::resolve(&args.model, questions);
        let load_seconds = started.elapsed().as_secs_f64();
        loaded.push((*backend, model?, load_seconds));
    }
    match before {
        Some(value) => std::env::set_var(env, value),
        None => std::env::remove_var(env),
    }
    let pairs: usize = questions.iter().map(|q| q.candidates.len()).sum();
    let mut passes = vec![Vec::new(); loaded.len()];
    let mut each = vec![Vec::new(); loaded.len()];
    for (_, model, _) in &loaded {
        model.score_all(questions)?;
    }
    for _ in 0..args.repeat {
        for (b, (_, model, _)) in loaded.iter().enumerate() {
            let started = Instant::now();
            std::hint::black_box(model.score_all(questions)?);
            passes[b].push(started.elapsed().as_secs_f64());
            if args.per_question {
                for question in questions {
                    let started = Instant::now();
                    std::hint::black_box(model.score(question)?);
                    each[b].push(started.elapsed().as_secs_f64());
                }
            }
        }
    }
    let mut backends = serde_json::Map::new();
    let mut rates = Vec::new();
    let mut per_question_ms = Vec::new();
    for (b, (name, _, load_seconds)) in loaded.iter().enumerate() {
        let median = median_of(&mut passes[b]);
        let rate = (pairs as f64 / median.max(1e-12)).round();
        rates.push(rate);
        let mut row = serde_json::json!({
            "load_seconds": load_seconds,
            "median_seconds": median,
            "median_pairs_per_second": rate,
        });
        if args.per_question {
            let ms = median_of(&mut each[b]) * 1e3;
            per_question_ms.push(ms);
            row["median_ms_per_question"] = serde_json::json!(ms);
        }
        backends.insert(name.to_string(), row);
    }
    let mut report = report_head(args, questions.len(), pairs);
    merge(
        &mut report,
        serde_json::json!({
            "backends": backends,
            // How many times the native backend's throughput is libtorch's.
            "native_over_libtorch_pairs_per_second": rates[0] / rates[1].max(1.0),
            "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        }),
    );
    if args.per_question {
        // How many times faster a question scores natively (libtorch's time over native's).
        report["libtorch_over_native_ms_per_question"] =
            serde_json::json!(per_question_ms[1] / per_question_ms[0].max(1e-12));
    }
    println!("{report}");
    Ok(())
}

/// The median of `values` (sorts them).
/// What every bench report starts with: the model, the data and how much was timed.
fn report_head(args: &BenchArgs, questions: usize, pairs: usize) -> serde_json::Value {
    serde_json::json!({
        "model": args.model,
        "data": args.data.data.display().to_string(),
        "questions": questions,
        "pairs": pairs,
        "repeats": args.repeat,
    })
}

/// Adds `fields` (an object) to the object `report`.
fn merge(report: &mut serde_json::Value, fields: serde_json::Value) {
    if let (Some(report), serde_json::Value::Object(fields)) = (report.as_object_mut(), fields) {
        report.extend(fields);
    }
}

fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
