use super::DataArgs;
use ansel::models;
use ansel_data::Question;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;

#[derive(Args)]
pub struct RankArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Model: a built-in name (wo, idf-wo, rr, wo-rr, bm25[:k1=..,b=..]), a model directory, the name of a model in models/, or several joined by `+` (fused).
    #[arg(long, default_value = models::DEFAULT_MODEL)]
    model: String,
}

#[derive(Serialize)]
struct Scored<'a> {
    id: &'a str,
    score: f32,
}

#[derive(Serialize)]
struct Ranked<'a> {
    id: &'a str,
    model: &'a str,
    /// One score per candidate, in input order.
    scores: Vec<Scored<'a>>,
    /// Candidate ids, best first (ties keep input order).
    ranking: Vec<&'a str>,
}

/// The JSON line `ansel rank` prints for `question` scored `scores` by `model` (the format
/// [`ansel_graph::ScoreCache`] reads back).
pub fn ranked_line(question: &Question, model: &str, scores: &[f32]) -> Result<String> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| ansel_model::best_first(scores[a], scores[b]));
    let line = Ranked {
        id: &question.id,
        model,
        scores: question
            .candidates
            .iter()
            .zip(scores)
            .map(|(c, &score)| Scored { id: &c.id, score })
            .collect(),
        ranking: order
            .iter()
            .map(|&i| question.candidates[i].id.as_str())
            .collect(),
    };
    Ok(serde_json::to_string(&line)?)
}

/// Scores every candidate and prints one JSON line per question.
pub fn run(args: RankArgs) -> Result<()> {
    let questions = args.data.read()?;
    let model = models::resolve(&args.model, &questions)?;
    let scores = model.score_all(&questions)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (question, scores) in questions.iter().zip(&scores) {
        writeln!(out, "{}", ranked_line(question, &args.model, scores)?)?;
    }
    out.flush()?;
    Ok(())
}
