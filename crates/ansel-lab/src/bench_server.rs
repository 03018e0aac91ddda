use ansel::answering::read_labelled;
use ansel_model::write_atomic;
use ansel_server::loadtest::{self, LoadPlan};
use anyhow::{bail, Result};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct BenchServerArgs {
    /// A running `ansel serve` on this machine (loopback addresses only).
    #[arg(long)]
    addr: SocketAddr,
    /// JSON lines of {"question", "answer"} (examples/corpus-questions.jsonl); the questions
    /// are sent to /ask and as /rerank queries.
    #[arg(long)]
    questions: PathBuf,
    /// Requests per endpoint.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Connections sending at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Seconds after which an endpoint's load stops, whatever is left.
    #[arg(long, default_value_t = 25)]
    max_seconds: u64,
    /// The server's --max-body-bytes, to send a body just over it.
    #[arg(long, default_value_t = ansel_server::Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Write the Markdown report here (it is also printed).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: BenchServerArgs) -> Result<()> {
    let questions: Vec<String> = read_labelled(&args.questions)?
        .into_iter()
        .map(|l| l.question)
        .collect();
    // /rerank texts: 30 candidates, the size the default model is chosen for.
    let texts: Vec<String> = questions.iter().cycle().take(30).cloned().collect();
    let plan = LoadPlan {
        addr: args.addr,
        requests: args.requests,
        concurrency: args.concurrency,
        max_duration: Duration::from_secs(args.max_seconds),
        questions,
        texts,
    };
    let report = loadtest::run(&plan, args.max_body_bytes)?;
    let command = format!(
        "bash scripts/bench-server.sh (ansel-lab bench-server --requests {} --concurrency {} --max-seconds {})",
        args.requests, args.concurrency, args.max_seconds
    );
    let markdown = report.markdown(&plan, &command);
    print!("{markdown}");
    if let Some(out) = &args.out {
        write_atomic(out, markdown.as_bytes())?;
    }
    if !report.passed() {
        bail!("the load test failed: see the report above");
    }
    Ok(())
}
