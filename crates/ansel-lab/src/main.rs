//! `ansel-lab`: the drivers of ansel's experiments and benchmarks, kept out of the product
//! binary so that `ansel --help` lists what a user does and `cargo build -p ansel` does not
//! compile them. Every page of `docs/results/` names the script that runs these.

mod bench_server;
mod cassie_bench;
mod dense_bench;
mod eqag_latency;
mod question_pairs;
mod span_inputs;
mod squad_ask;
mod squad_sent;
mod squad_spans;
mod trec_car;
mod tree_kernel;

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::Path;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ansel-lab",
    version,
    about = "ansel's experiment and benchmark drivers (the results in docs/results)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// SQuAD as AS2 sets split by article: training lists with BM25 negatives from other articles, held-out lists, documents and ask questions.
    SquadSent(squad_sent::SquadSentArgs),
    /// SQuAD as span-extraction records (answer sentence, spans, a no-span sentence) split by article as squad-sent split it.
    SquadSpans(squad_spans::SquadSpansArgs),
    /// A SQuAD-format file (e.g. the official dev set) as documents for `ansel index` and questions with every reference answer for `ansel eval-ask`.
    SquadAsk(squad_ask::SquadAskArgs),
    /// Span records encoded exactly as ansel's span reader reads them (ids, selectable tokens, gold span), for a trainer outside ansel (bench/span_reader_gpu.py).
    SpanInputs(span_inputs::SpanInputsArgs),
    /// Train every CASSIE ablation on cached encoder features and time Sinkhorn (writes a table).
    CassieBench(cassie_bench::CassieBenchArgs),
    /// Load-test a running `ansel serve` on loopback and write a report.
    BenchServer(bench_server::BenchServerArgs),
    /// Time each stage of an EQAG model on one question at a time (base, bi-encoder, graph step).
    EqagLatency(eqag_latency::LatencyArgs),
    /// TREC CAR paragraph retrieval for outline queries: BM25 runs, STNet cross-validation.
    TrecCar(trec_car::TrecCarArgs),
    /// Train a chapter-8 community-QA network (single, joint or multi-task) on SemEval-2016 Task 3.
    CqaTrain(Box<ansel_cqa::train::TrainArgs>),
    /// Score a chapter-8 network's task C lists by each rule its heads allow (head, chain, both): SemEval's official scores as JSON.
    CqaRules(CqaRulesArgs),
    /// Unlabelled question pairs by BM25 over the texts of some sets, for a teacher to label.
    QuestionPairs(question_pairs::QuestionPairsArgs),
    /// The chapter-4 tree-kernel ranker (shallow chunk trees, subset or partial tree kernel, SVM) on parsed pairs.
    Tk(Box<tree_kernel::TreeKernelArgs>),
    /// Rewrite an index's dense vectors into another storage format (f32, f16, int8).
    DenseFormat(dense_bench::DenseFormatArgs),
    /// Time dense retrieval question by question: encoding, vector search, BM25, hybrid.
    DenseBench(dense_bench::DenseBenchArgs),
    /// The approximate (graph) dense search against the exact one: recall and search time.
    GraphBench(dense_bench::GraphBenchArgs),
    /// Rescale an int8 ONNX model's dense weights to 7 bits in place (models converted before ansel
    /// quantized in 7 bits, which saturate on x86 CPUs without VNNI; the float source is not needed).
    OnnxRequantize {
        /// Model directories written by `ansel quantize --precision int8`.
        #[arg(long, required = true, num_args = 1..)]
        model: Vec<std::path::PathBuf>,
    },
}

#[derive(clap::Args)]
struct CqaRulesArgs {
    /// Model directories written by `ansel-lab cqa-train`; several are scored as one ensemble
    /// (each member's scores standardised per question and summed, as `ansel eval --model A+B`).
    #[arg(long, required = true, num_args = 1..)]
    model: Vec<std::path::PathBuf>,
    /// A full SemEval-2016 Task 3 file (`.xml` or `.xml.gz`) with task C labels.
    #[arg(long)]
    data: std::path::PathBuf,
    /// Score only fold I of K of the file's original questions, in `--seed`'s order: the lists
    /// `cqa-train --tune-fold I/K --seed S` tuned on when it trained on this file.
    #[arg(long, requires = "seed")]
    held: Option<ansel_cqa::train::TuneFold>,
    /// The seed of `--held`'s order.
    #[arg(long, requires = "held")]
    seed: Option<u64>,
    /// Leave out the original questions of these SemEval files (as `cqa-train --exclude`).
    #[arg(long, num_args = 1..)]
    exclude: Vec<std::path::PathBuf>,
}

/// The questions of a data file in any format `ansel eval` reads.
fn read_questions(path: &Path) -> anyhow::Result<Vec<ansel_data::Question>> {
    ansel_data::read_path(path, None).with_context(|| format!("cannot read {}", path.display()))
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::SquadSent(args) => squad_sent::run(args),
        Command::SquadSpans(args) => squad_spans::run(args),
        Command::SquadAsk(args) => squad_ask::run(args),
        Command::SpanInputs(args) => span_inputs::run(args),
        Command::CassieBench(args) => cassie_bench::bench(args),
        Command::BenchServer(args) => bench_server::run(args),
        Command::EqagLatency(args) => eqag_latency::latency(args),
        Command::TrecCar(args) => trec_car::run(args),
        Command::QuestionPairs(args) => question_pairs::run(args),
        Command::Tk(args) => tree_kernel::run(*args),
        Command::OnnxRequantize { model } => model.iter().try_for_each(|dir| {
            let done = ansel_onnx::requantize_dir(dir)
                .with_context(|| format!("cannot requantize {}", dir.display()))?;
            println!(
                "{}: {} of the output columns of {} dense tensors rescaled (largest weight was {})",
                dir.display(),
                done.columns,
                done.tensors,
                done.level_before
            );
            Ok(())
        }),
        Command::CqaTrain(args) if args.counts_only => {
            ansel_cqa::train::read_data(&args).map(|data| {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&data.counts).expect("counts serialize")
                )
            })
        }
        Command::CqaTrain(args) => ansel_cqa::train::train(&args).map(|card| {
            println!(
                "{}",
                serde_json::to_string_pretty(&card).expect("a card serializes")
            )
        }),
        Command::CqaRules(args) => {
            let which = ansel_cqa::RuleLists {
                held: args.held.zip(args.seed),
                exclude: args.exclude,
            };
            ansel_cqa::rule_scores(&args.model, &args.data, &which).map(|rules| {
                for (rule, s) in rules {
                    let json = serde_json::json!({"c_score": rule, "map": s.map, "mrr": s.mrr, "avg_rec": s.avg_rec, "questions": s.questions});
                    println!("{json}");
                }
            })
        }
        Command::DenseFormat(args) => dense_bench::format(args),
        Command::DenseBench(args) => dense_bench::bench(args),
        Command::GraphBench(args) => dense_bench::graph_bench(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", ansel::describe(&err));
            ExitCode::FAILURE
        }
    }
}
