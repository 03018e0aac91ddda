//! The `ansel` command line: a thin layer over the library crates.

mod commands;

use ansel::describe;

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
    /// Fit a model's scores to probabilities and its abstention threshold on dev data; report them on test data.
    Calibrate(commands::calibrate::CalibrateArgs),
    /// Evaluate a trec_eval run file against a qrels file.
    EvalTrec(commands::eval_trec::EvalTrecArgs),
    /// Score a SemEval-2016 Task 3 run (.pred) against its gold file as the official scorer does.
    EvalSemeval(commands::eval_semeval::EvalSemevalArgs),
    /// Train a model and save it as a model directory usable by every command.
    Train(Box<commands::train::TrainArgs>),
    /// Measure a model's scoring throughput in (question, candidate) pairs per second.
    Bench(commands::bench::BenchArgs),
    /// Convert a data set in any supported format to ansel JSON lines.
    Convert(commands::convert::ConvertArgs),
    /// Add documents (.txt, .md, .jsonl) to a sentence index.
    Index(commands::index::IndexArgs),
    /// Answer a question from an index: the sentences that answer it, with their context.
    Ask(commands::ask::AskArgs),
    /// Score your own candidates: ansel JSON lines in, one JSON line of scores per question out.
    Rank(commands::rank::RankArgs),
    /// Serve /rerank (TEI-compatible), /ask, /health, /metrics and a web page over an index.
    Serve(Box<commands::serve::ServeArgs>),
    /// Score the answers of `ask` on labelled questions (P@1, MRR) and time them.
    EvalAsk(commands::eval_ask::EvalAskArgs),
    /// Generate synthetic labelled questions from unlabelled documents (for domain adaptation).
    Synth(commands::synth::SynthArgs),
    /// Show, for the top answers, which candidate and context words each question word aligned to (CASSIE).
    Explain(commands::cassie::ExplainArgs),
    /// Adapt a bi-encoder or cross-encoder to a new domain from its unlabelled text (SEDAN self-learning).
    Adapt(Box<commands::adapt::AdaptArgs>),
    /// Convert a cross-encoder to an ONNX graph scored by ONNX Runtime (int8 dynamic quantization or fp32).
    Quantize(commands::quantize::QuantizeArgs),
    /// Extractive QA benchmark: exact match and token F1 of answer spans read from ranked sentences.
    EvalExtract(commands::extract::EvalExtractArgs),
    /// A span reader on SQuAD span records: EM/F1 given the gold sentence and paragraph, "no span" accuracy, cost; --calibrate fits when spans are shown.
    EvalReader(commands::eval_reader::EvalReaderArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        end_quietly_on_closed_output();
    }
    // Benchmarks set ANSEL_MALLOC_DEFAULTS=1 to measure what the tuning buys.
    if std::env::var_os("ANSEL_MALLOC_DEFAULTS").is_none() {
        ansel_torch::tune_allocator();
    }
    let result = match cli.command {
        Command::Eval(args) => commands::eval::run(args),
        Command::EvalTrec(args) => commands::eval_trec::run(args),
        Command::EvalSemeval(args) => commands::eval_semeval::run(args),
        Command::Calibrate(args) => commands::calibrate::run(args),
        Command::Convert(args) => commands::convert::run(args),
        Command::Index(args) => commands::index::run(args),
        Command::Ask(args) => commands::ask::run(args),
        Command::Rank(args) => commands::rank::run(args),
        Command::Serve(args) => commands::serve::run(*args),
        Command::EvalAsk(args) => commands::eval_ask::run(args),
        Command::Train(args) => commands::train::run(*args),
        Command::Synth(args) => commands::synth::run(args),
        Command::Adapt(args) => commands::adapt::run(*args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Explain(args) => commands::cassie::explain(args),
        Command::EvalExtract(args) => commands::extract::run_eval(args),
        Command::EvalReader(args) => commands::eval_reader::run(args),
        Command::Quantize(args) => commands::quantize::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", describe(&err));
            ExitCode::FAILURE
        }
    }
}

/// `ansel ... | head` ends when the reader has had enough, as other command-line tools do, instead
/// of panicking in `println!` on the closed pipe: the default action of SIGPIPE, which Rust's
/// runtime ignores. Not for `serve`, where a client that hangs up must not end the server.
fn end_quietly_on_closed_output() {
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
