//! The `ansel` command line: a thin layer over the library crates.

mod commands;
mod models;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ansel",
    version,
    about = "Answer sentence selection: find the sentences that answer a question"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score a labelled data set with one or more models and print ranking metrics.
    Eval(commands::eval::EvalArgs),
    /// Evaluate a trec_eval run file against a qrels file.
    EvalTrec(commands::eval_trec::EvalTrecArgs),
    /// Train a model and save it as a model directory usable by every command.
    Train(commands::train::TrainArgs),
    /// Measure a model's scoring throughput in (question, candidate) pairs per second.
    Bench(commands::bench::BenchArgs),
    /// Convert a data set in any supported format to ansel JSON lines.
    Convert(commands::convert::ConvertArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Eval(args) => commands::eval::run(args),
        Command::EvalTrec(args) => commands::eval_trec::run(args),
        Command::Convert(args) => commands::convert::run(args),
        Command::Train(args) => commands::train::run(args),
        Command::Bench(args) => commands::bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
