use super::eval::{report_json, report_table};
use ansel_eval::{evaluate, join, read_qrels, read_run, read_run_exact, trec_eval, Filter};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct EvalTrecArgs {
    /// trec_eval qrels file: `qid 0 docid relevance` per line (`.gz` is read gunzipped).
    #[arg(long)]
    qrels: PathBuf,
    /// trec_eval run file: `qid Q0 docid rank score tag` per line (`.gz` is read gunzipped).
    #[arg(long)]
    run: PathBuf,
    /// Also drop questions whose judged candidates are all relevant.
    #[arg(long)]
    clean: bool,
    /// Score as `trec_eval -c` does (map, Rprec, ndcg_cut_10, P_10, recip_rank): ties by document
    /// id, unjudged documents non-relevant, unretrieved relevant ones adding nothing, and every
    /// query of the qrels counted (0 when the run lacks it). Without it: the AS2 metrics of
    /// `ansel eval` (ties against the model) over the judged candidates.
    #[arg(long)]
    trec_eval: bool,
    /// With --trec-eval, print one line per query as `trec_eval -q` does.
    #[arg(long, requires = "trec_eval")]
    per_query: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: EvalTrecArgs) -> Result<()> {
    if args.trec_eval {
        if args.clean {
            bail!("--clean drops queries, which trec_eval -c never does; use one or the other");
        }
        let report = trec_eval(&read_qrels(&args.qrels)?, &read_run_exact(&args.run)?);
        if args.json {
            let mut obj = serde_json::json!({
                "run": args.run.display().to_string(),
                "qrels": args.qrels.display().to_string(),
                "queries": report.per_query.len(),
                "missing_from_run": report.missing,
                "mean": report.mean,
            });
            if args.per_query {
                obj["per_query"] = serde_json::to_value(&report.per_query)?;
            }
            println!("{obj}");
        } else {
            if args.per_query {
                for (qid, m) in &report.per_query {
                    for name in ansel_eval::TrecMeasures::NAMES {
                        println!("{name:<12}\t{qid}\t{:.4}", m.get(name).unwrap_or(0.0));
                    }
                }
            }
            println!("{:<12}\tall\t{}", "num_q", report.per_query.len());
            println!("{:<12}\tall\t{}", "num_rel", report.mean.num_rel);
            println!("{:<12}\tall\t{}", "num_rel_ret", report.mean.num_rel_ret);
            for name in ansel_eval::TrecMeasures::NAMES {
                println!(
                    "{name:<12}\tall\t{:.4}",
                    report.mean.get(name).unwrap_or(0.0)
                );
            }
        }
        return Ok(());
    }
    let (questions, scores) = join(&read_qrels(&args.qrels)?, &read_run(&args.run)?);
    let report = evaluate(
        &questions,
        &scores,
        if args.clean {
            Filter::Clean
        } else {
            Filter::Answered
        },
    );
    let name = args.run.display().to_string();
    if args.json {
        println!(
            "{}",
            report_json(&name, &args.qrels.display().to_string(), &report)
        );
    } else {
        print!("{}", report_table(&[(name, report)]));
    }
    Ok(())
}
