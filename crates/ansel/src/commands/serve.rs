use super::cascade::CascadeArgs;
use ansel_server::{AppState, Limits};
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    cascade: CascadeArgs,
    /// Address to listen on; port 0 picks a free port (printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Texts one /rerank request may send.
    #[arg(long, default_value_t = Limits::default().max_texts)]
    max_texts: usize,
    /// Bytes one request body may have.
    #[arg(long, default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Words one /rerank text may have (longer ones need "truncate": true).
    #[arg(long, default_value_t = Limits::default().max_words_per_text)]
    max_words_per_text: usize,
    /// Milliseconds a request may take before it gets 503.
    #[arg(long, default_value_t = Limits::default().timeout.as_millis() as u64)]
    timeout_ms: u64,
    /// Requests scored together in one batch.
    #[arg(long, default_value_t = Limits::default().max_batch)]
    max_batch: usize,
    /// Requests that may wait per route before the server answers 503.
    #[arg(long, default_value_t = Limits::default().queue_len)]
    queue: usize,
}

pub fn run(args: ServeArgs) -> Result<()> {
    let answerer = args.cascade.answerer()?;
    let limits = Limits {
        max_texts: args.max_texts,
        max_body_bytes: args.max_body_bytes,
        max_words_per_text: args.max_words_per_text,
        timeout: Duration::from_millis(args.timeout_ms),
        max_batch: args.max_batch,
        queue_len: args.queue,
        ..Limits::default()
    };
    let state = AppState::new(answerer, limits);
    ansel_server::run(args.addr, state, |addr| {
        // Scripts read this line to find a port picked with :0.
        println!("ansel serve: listening on http://{addr}");
        let _ = std::io::stdout().flush();
    })
    .with_context(|| format!("cannot serve on {}", args.addr))?;
    eprintln!("ansel serve: shut down");
    Ok(())
}
