use super::cascade::CascadeArgs;
use ansel::answering::read_labelled;
use ansel_answer::Ask;
use ansel_server::loadtest::percentile;
use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct EvalAskArgs {
    #[command(flatten)]
    cascade: CascadeArgs,
    /// JSON lines of {"question", "answer"}: an answer sentence contains `answer`; or of
    /// {"question", "answers": [...]} with several references (SQuAD's dev set): an answer
    /// sentence contains one of them, and a span scores its best match.
    #[arg(long)]
    questions: PathBuf,
    /// Answers looked at per question.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// A calibration of `--model`, as `ask --calibration` (by default the model directory's own,
    /// if any; `none`: no calibration): also count the questions answered, not abstained on.
    #[arg(long)]
    calibration: Option<PathBuf>,
    /// Time budget for ranking each question, as `ask --budget-ms`.
    #[arg(long)]
    budget_ms: Option<u64>,
    /// Answers whose span the reader reads per question (as `ask --spans`).
    #[arg(long, default_value_t = ansel_answer::DEFAULT_SPANS)]
    spans: usize,
    /// Also write every question's answers (as `ask --json` gives them) with its expected answer,
    /// one JSON line per question, for error analysis.
    #[arg(long)]
    answers_out: Option<PathBuf>,
    /// Print one JSON object instead of a table row.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    model: String,
    prune_model: String,
    retriever: &'static str,
    retrieve: usize,
    keep: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_ms: Option<u64>,
    /// Sentences in the index: what retrieval searched.
    index_sentences: u64,
    questions: usize,
    #[serde(rename = "P@1")]
    precision_at_1: f64,
    /// Reciprocal rank of the first answer sentence within `top`, 0 beyond.
    #[serde(rename = "MRR")]
    mrr: f64,
    /// Questions with an answer sentence within `top`.
    found: usize,
    p50_ms: f64,
    p99_ms: f64,
    /// With a calibration: the questions answered (the best reranked answer's probability
    /// reaches the threshold), and how many of those have the answer first.
    #[serde(skip_serializing_if = "Option::is_none")]
    answered: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answered_right: Option<usize>,
    /// With a span reader: the first answer's span against the expected answer (SQuAD's
    /// exact match and token F1; no span scores 0), means over the questions.
    #[serde(rename = "span_EM", skip_serializing_if = "Option::is_none")]
    span_em: Option<f64>,
    #[serde(rename = "span_F1", skip_serializing_if = "Option::is_none")]
    span_f1: Option<f64>,
    /// With a span reader: questions whose first answer got a span.
    #[serde(skip_serializing_if = "Option::is_none")]
    spans: Option<usize>,
}

/// Asks every labelled question over the index, one at a time, and reports
/// how high the first sentence containing the expected answer ranks, and how
/// long each question took end to end (retrieval, pruning, reranking).
pub fn run(args: EvalAskArgs) -> Result<()> {
    if args.top == 0 {
        bail!("--top must be at least 1");
    }
    let labelled = read_labelled(&args.questions)?;
    let answerer = args.cascade.answerer()?;
    let calibration =
        ansel::answering::calibration_for(&args.cascade.model, args.calibration.as_deref())?;
    let (mut answered, mut answered_right) = (0, 0);
    let (mut span_em, mut span_f1, mut spans) = (0.0, 0.0, 0);
    let mut answer_lines = String::new();
    let mut reciprocal_ranks = Vec::new();
    let mut millis = Vec::new();
    for item in &labelled {
        let start = Instant::now();
        let answers = answerer.ask(&Ask {
            question: item.question.clone(),
            top_k: args.top,
            budget: args.budget_ms.map(std::time::Duration::from_millis),
            retriever: None,
            spans: args.spans,
        })?;
        millis.push(start.elapsed().as_secs_f64() * 1e3);
        if args.answers_out.is_some() {
            let mut line = serde_json::to_value(&answers)?;
            if let Some(c) = &calibration {
                c.annotate(&mut line, &answers);
            }
            line["expected"] = serde_json::json!(item.answers);
            answer_lines += &format!("{line}\n");
        }
        let rank = answers.answers.iter().position(|a| {
            item.answers
                .iter()
                .any(|gold| a.sentence.text.contains(gold))
        });
        reciprocal_ranks.push(rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0)));
        if let Some(span) = answers.answers.first().and_then(|a| a.span.as_ref()) {
            span_em += ansel_reader::exact_match(&span.text, &item.answers);
            span_f1 += ansel_reader::best_f1(&span.text, &item.answers);
            spans += 1;
        }
        if calibration
            .as_ref()
            .is_some_and(|c| c.judge(&answers).answered)
        {
            answered += 1;
            answered_right += usize::from(rank == Some(0));
        }
    }
    if let Some(path) = &args.answers_out {
        ansel_model::write_atomic(path, answer_lines.as_bytes())?;
    }
    millis.sort_by(f64::total_cmp);
    let n = labelled.len() as f64;
    let report = Report {
        model: args.cascade.model.clone(),
        prune_model: args.cascade.prune_model.clone(),
        retriever: answerer.retriever.default_retrieval().name(),
        retrieve: args.cascade.retrieve,
        keep: args.cascade.keep,
        budget_ms: args.budget_ms,
        index_sentences: answerer.retriever.stats()?.sentences,
        questions: labelled.len(),
        precision_at_1: reciprocal_ranks.iter().filter(|&&rr| rr == 1.0).count() as f64 / n,
        mrr: reciprocal_ranks.iter().sum::<f64>() / n,
        found: reciprocal_ranks.iter().filter(|&&rr| rr > 0.0).count(),
        p50_ms: percentile(&millis, 0.50),
        p99_ms: percentile(&millis, 0.99),
        answered: calibration.is_some().then_some(answered),
        answered_right: calibration.is_some().then_some(answered_right),
        span_em: answerer.reader.is_some().then_some(span_em / n),
        span_f1: answerer.reader.is_some().then_some(span_f1 / n),
        spans: answerer.reader.is_some().then_some(spans),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "| {} | {} | {} | {:.4} | {:.4} | {} | {:.2} | {:.2} |",
            report.model,
            report.prune_model,
            report.questions,
            report.precision_at_1,
            report.mrr,
            report.found,
            report.p50_ms,
            report.p99_ms
        );
    }
    Ok(())
}
