use super::DataArgs;
use ansel::models;
use ansel_data::CqaTask;
use ansel_eval::{
    evaluate, semeval_scores, write_qrels, write_run, write_semeval_gold, write_semeval_run,
    Filter, Report, SemEvalScores, SEMEVAL_CUTOFF,
};
use ansel_model::write_atomic;
use anyhow::{bail, Context, Result};
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
    /// With SemEval data (`--task`): write SemEval run files into this directory, <model>.pred
    /// and the gold file gold.relevancy, in the official scorer's format.
    #[arg(long)]
    semeval_dir: Option<PathBuf>,
}

pub fn run(args: EvalArgs) -> Result<()> {
    let questions = args.data.read_some()?;
    let filter = if args.clean {
        Filter::Clean
    } else {
        Filter::Answered
    };
    let task = args.data.semeval_task()?;
    if args.semeval_dir.is_some() && task.is_none() {
        bail!("--semeval-dir needs SemEval data (--format semeval --task a|b|c)");
    }
    let mut reports = Vec::new();
    let mut official = Vec::new();
    for spec in &args.models {
        let model = models::resolve(spec, &questions)?;
        let scores = if args.trec_dir.is_some() || args.semeval_dir.is_some() {
            model.score_all(&questions)?
        } else {
            score_kept(model.as_ref(), &questions, filter)?
        };
        if let Some(dir) = &args.trec_dir {
            let mut run = Vec::new();
            write_run(&mut run, &questions, &scores, spec)?;
            write_atomic(&dir.join(format!("{}.run", file_safe(spec))), &run)?;
        }
        if let Some(dir) = &args.semeval_dir {
            let mut run = Vec::new();
            write_semeval_run(&mut run, &questions, &scores)?;
            write_atomic(&dir.join(format!("{}.pred", file_safe(spec))), &run)?;
        }
        if task.is_some() {
            // Questions left unscored have no positive: they score 0 whatever their order.
            let full: Vec<Vec<f32>> = questions
                .iter()
                .zip(&scores)
                .map(|(q, s)| {
                    if s.len() == q.candidates.len() {
                        s.clone()
                    } else {
                        vec![0.0; q.candidates.len()]
                    }
                })
                .collect();
            official.push(semeval_scores(&questions, &full));
        }
        reports.push((spec.clone(), evaluate(&questions, &scores, filter)));
    }
    if let Some(dir) = &args.trec_dir {
        let mut qrels = Vec::new();
        write_qrels(&mut qrels, &questions)?;
        write_atomic(&dir.join("qrels.txt"), &qrels).context("cannot write qrels")?;
    }
    if let Some(dir) = &args.semeval_dir {
        let mut gold = Vec::new();
        write_semeval_gold(&mut gold, &questions)?;
        write_atomic(&dir.join("gold.relevancy"), &gold).context("cannot write gold.relevancy")?;
    }
    if args.json {
        for (i, (model, report)) in reports.iter().enumerate() {
            let mut obj = report_json(model, &args.data.data.display().to_string(), report);
            if let (Some(task), Some(s)) = (task, official.get(i)) {
                obj["semeval"] = semeval_json(task, s);
            }
            println!("{obj}");
        }
    } else {
        print!("{}", report_table(&reports));
        if let Some(task) = task {
            let names: Vec<String> = reports.iter().map(|(m, _)| m.clone()).collect();
            print!("{}", semeval_table(task, &names, &official));
        }
    }
    Ok(())
}

fn semeval_json(task: CqaTask, s: &SemEvalScores) -> serde_json::Value {
    let round = |v: f64| (v * 1e6).round() / 1e6;
    serde_json::json!({
        "task": task.name(),
        "questions": s.questions,
        "MAP": round(s.map),
        "MRR": round(s.mrr),
        "AvgRec": round(s.avg_rec),
    })
}

/// The official scorer's numbers, one row per model.
fn semeval_table(task: CqaTask, models: &[String], scores: &[SemEvalScores]) -> String {
    let width = models.iter().map(String::len).max().unwrap_or(5).max(5);
    let mut out = format!(
        "\nSemEval-2016 Task 3 subtask {} official scorer (top {SEMEVAL_CUTOFF}; all questions count, \
         those without a positive in the top {SEMEVAL_CUTOFF} as 0; ties in file order):\n",
        task.name().to_uppercase()
    );
    out += &format!(
        "{:<width$}  {:>9}  {:>7}  {:>7}  {:>7}\n",
        "model", "questions", "MAP", "MRR", "AvgRec"
    );
    for (model, s) in models.iter().zip(scores) {
        out += &format!(
            "{model:<width$}  {:>9}  {:>7.4}  {:>7.4}  {:>7.4}\n",
            s.questions, s.map, s.mrr, s.avg_rec
        );
    }
    out
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
