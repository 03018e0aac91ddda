//! `ansel bench`: how many (question, candidate) pairs per second a model scores.

use super::DataArgs;
use ansel::models;
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
}

pub fn run(args: BenchArgs) -> Result<()> {
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let questions = args.data.read_some()?;
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
    let mut report = serde_json::json!({
        "model": args.model,
        "data": args.data.data.display().to_string(),
        "questions": questions.len(),
        "pairs": pairs,
        "repeats": args.repeat,
        "median_seconds": median,
        "median_pairs_per_second": rate(median),
        "best_pairs_per_second": rate(seconds[0]),
        "worst_pairs_per_second": rate(seconds[seconds.len() - 1]),
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
    });
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

/// The median of `values` (sorts them).
fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
