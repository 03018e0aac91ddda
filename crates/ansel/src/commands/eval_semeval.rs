use ansel_eval::{join_semeval, read_semeval_file, semeval_scores};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct EvalSemevalArgs {
    /// SemEval-2016 Task 3 gold file (`.relevancy`): `Question_ID Answer_ID RANK SCORE LABEL` per
    /// line, the score being the search engine's (`.gz` is read gunzipped).
    #[arg(long)]
    gold: PathBuf,
    /// Run file (`.pred`) in the same format and order, as `ansel eval --semeval-dir` writes
    /// it. Without it, the gold file's own scores are scored: SemEval's IR baseline.
    #[arg(long)]
    pred: Option<PathBuf>,
    /// Print JSON instead of a line.
    #[arg(long)]
    json: bool,
}

/// Scores a run as SemEval-2016 Task 3's official scorer does (MAP over the top 10 with every
/// question counted, MRR, AvgRec).
pub fn run(args: EvalSemevalArgs) -> Result<()> {
    let gold = read_semeval_file(&args.gold)?;
    let pred = args
        .pred
        .as_ref()
        .map(|p| read_semeval_file(p))
        .transpose()?;
    let run = args.pred.as_deref().zip(pred.as_deref());
    let (questions, scores) = join_semeval(&args.gold, &gold, run)?;
    let s = semeval_scores(&questions, &scores);
    let name = args
        .pred
        .as_ref()
        .map_or("IR baseline (the gold file's scores)".to_string(), |p| {
            p.display().to_string()
        });
    if args.json {
        let round = |v: f64| (v * 1e6).round() / 1e6;
        println!(
            "{}",
            serde_json::json!({
                "gold": args.gold.display().to_string(),
                "pred": args.pred.as_ref().map(|p| p.display().to_string()),
                "questions": s.questions,
                "MAP": round(s.map),
                "MRR": round(s.mrr),
                "AvgRec": round(s.avg_rec),
            })
        );
    } else {
        println!(
            "{name}: MAP {:.4}  MRR {:.4}  AvgRec {:.4}  ({} questions)",
            s.map, s.mrr, s.avg_rec, s.questions
        );
    }
    Ok(())
}
