use super::eval::{report_json, report_table};
use ansel_eval::{evaluate, join, read_qrels, read_run, Filter};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct EvalTrecArgs {
    /// trec_eval qrels file: `qid 0 docid relevance` per line.
    #[arg(long)]
    qrels: PathBuf,
    /// trec_eval run file: `qid Q0 docid rank score tag` per line.
    #[arg(long)]
    run: PathBuf,
    /// Also drop questions whose judged candidates are all relevant.
    #[arg(long)]
    clean: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: EvalTrecArgs) -> Result<()> {
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
