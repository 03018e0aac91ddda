use super::DataArgs;
use ansel::models;
use ansel_eval::{evaluate, write_qrels, write_run, Filter, Report};
use ansel_model::write_atomic;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Model: a built-in name (wo, idf-wo, rr, wo-rr, bm25[:k1=..,b=..]), a model directory, the name of a model in models/, or several joined by `+` (fused). Repeat to compare.
    #[arg(long = "model", required = true)]
    models: Vec<String>,
    /// Also drop questions whose candidates are all positive (TrecQA "clean"/"filtered").
    #[arg(long)]
    clean: bool,
    /// Print one JSON object per model instead of a table.
    #[arg(long)]
    json: bool,
    /// Write trec_eval files into this directory: qrels.txt and <model>.run.
    #[arg(long)]
    trec_dir: Option<PathBuf>,
}

pub fn run(args: EvalArgs) -> Result<()> {
    let questions = args.data.read_some()?;
    let filter = if args.clean {
        Filter::Clean
    } else {
        Filter::Answered
    };
    let mut reports = Vec::new();
    for spec in &args.models {
        let model = models::resolve(spec, &questions)?;
        let scores = if args.trec_dir.is_some() {
            model.score_all(&questions)?
        } else {
            score_kept(model.as_ref(), &questions, filter)?
        };
        if let Some(dir) = &args.trec_dir {
            let mut run = Vec::new();
            write_run(&mut run, &questions, &scores, spec)?;
            write_atomic(&dir.join(format!("{}.run", file_safe(spec))), &run)?;
        }
        reports.push((spec.clone(), evaluate(&questions, &scores, filter)));
    }
    if let Some(dir) = &args.trec_dir {
        let mut qrels = Vec::new();
        write_qrels(&mut qrels, &questions)?;
        write_atomic(&dir.join("qrels.txt"), &qrels).context("cannot write qrels")?;
    }
    if args.json {
        for (model, report) in &reports {
            println!(
                "{}",
                report_json(model, &args.data.data.display().to_string(), report)
            );
        }
    } else {
        print!("{}", report_table(&reports));
    }
    Ok(())
}

/// Scores only the questions `filter` keeps (the metrics skip the others anyway), which saves
/// the time of slow models; skipped questions get empty score lists.
fn score_kept(
    model: &dyn ansel_model::Ranker,
    questions: &[ansel_data::Question],
    filter: Filter,
) -> Result<Vec<Vec<f32>>> {
    let keep = |q: &ansel_data::Question| {
        let p = q.positives();
        p > 0 && !(filter == Filter::Clean && p == q.candidates.len())
    };
    let kept: Vec<ansel_data::Question> = questions.iter().filter(|q| keep(q)).cloned().collect();
    let mut scored = model.score_all(&kept)?.into_iter();
    Ok(questions
        .iter()
        .map(|q| {
            if keep(q) {
                scored.next().unwrap_or_default()
            } else {
                Vec::new()
            }
        })
        .collect())
}

fn file_safe(spec: &str) -> String {
    spec.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn report_json(model: &str, data: &str, report: &Report) -> serde_json::Value {
    let mut obj = serde_json::json!({
        "model": model,
        "data": data,
        "filter": match report.filter { Filter::Answered => "answered", Filter::Clean => "clean" },
        "questions": report.questions(),
        "total_questions": report.total,
        "skipped_no_positive": report.skipped_no_positive,
        "skipped_all_positive": report.skipped_all_positive,
    });
    for (name, value) in report.named_metrics() {
        obj[name] = serde_json::json!((value * 1e6).round() / 1e6);
    }
    obj
}

pub fn report_table(reports: &[(String, Report)]) -> String {
    let Some((_, first)) = reports.first() else {
        return String::new();
    };
    let names: Vec<String> = first.named_metrics().into_iter().map(|(n, _)| n).collect();
    let width = reports
        .iter()
        .map(|(m, _)| m.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!("{:<width$}  {:>9}", "model", "questions");
    for name in &names {
        out += &format!("  {name:>7}");
    }
    out.push('\n');
    for (model, report) in reports {
        out += &format!("{model:<width$}  {:>9}", report.questions());
        for (_, value) in report.named_metrics() {
            out += &format!("  {value:>7.4}");
        }
        out.push('\n');
    }
    out += &format!(
        "{} of {} questions scored: {} without a positive skipped{}; ties ranked against the model\n",
        first.questions(),
        first.total,
        first.skipped_no_positive,
        match first.filter {
            Filter::Clean => format!(", {} with only positives skipped (--clean)", first.skipped_all_positive),
            Filter::Answered => String::new(),
        }
    );
    out
}
