use super::cascade::CascadeArgs;
use ansel_server::{AppState, ConnectionLimits, Limits, Security};
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
    /// Require `Authorization: Bearer KEY` on every route but /health.
    #[arg(long, env = "ANSEL_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// A host name clients may reach the server by (the `Host` header), besides localhost and
    /// the bound address; repeat for more. Guards against DNS rebinding.
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// A model name Cohere-style requests may give as `model` (repeat for more); others get 404.
    /// Without it any name is accepted and reported back.
    #[arg(long = "served-model-name")]
    served_models: Vec<String>,
    /// A model the reranking routes (/rerank, /v1|v2/rerank) serve (repeat for more): a request
    /// whose `model` field gives its name (its card's name, as `GET /info` lists it) is scored
    /// by it, with its own calibration.json when it has one; a request that names no model gets
    /// the first. The cascade's `--model` is served by its name too; `none`: only `--model`.
    #[arg(long = "rerank-model", default_value = ansel::models::DEFAULT_MODEL)]
    rerank_models: Vec<String>,
    /// The one origin whose web pages may call the API (CORS); off by default.
    #[arg(long)]
    cors_origin: Option<String>,
    /// Texts one /rerank request may send.
    #[arg(long, default_value_t = Limits::default().max_texts)]
    max_texts: usize,
    /// Bytes one request body may have.
    #[arg(long, default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Words one /rerank text may have (longer ones need "truncate": true).
    #[arg(long, default_value_t = Limits::default().max_words_per_text)]
    max_words_per_text: usize,
    /// Words one /rerank request may send, query and texts together (413 beyond).
    #[arg(long, default_value_t = Limits::default().max_request_words)]
    max_request_words: usize,
    /// Bytes one text may have (a run of punctuation or digits is one "word" but many tokens);
    /// longer ones need "truncate": true on /rerank and are cut on the Cohere routes.
    #[arg(long, default_value_t = Limits::default().max_text_bytes)]
    max_text_bytes: usize,
    /// Tokens /tokenize returns for one input (413 beyond).
    #[arg(long, default_value_t = Limits::default().max_tokens_per_text)]
    max_tokens_per_text: usize,
    /// Tokens /tokenize returns for one request (413 beyond).
    #[arg(long, default_value_t = Limits::default().max_request_tokens)]
    max_request_tokens: usize,
    /// Tokens a worker scores in one batch (estimated from characters, every pair counting its
    /// query).
    #[arg(long, default_value_t = Limits::default().max_batch_tokens)]
    max_batch_tokens: usize,
    /// Milliseconds from a request's arrival to its deadline; a request that cannot be
    /// answered by then gets 503 with Retry-After.
    #[arg(long, default_value_t = Limits::default().timeout.as_millis() as u64)]
    timeout_ms: u64,
    /// Requests scored together in one batch.
    #[arg(long, default_value_t = Limits::default().max_batch)]
    max_batch: usize,
    /// Requests that may wait per route before the server answers 503.
    #[arg(long, default_value_t = Limits::default().queue_len)]
    queue: usize,
    /// Requests being read, queued or scored at once, all routes together.
    #[arg(long, default_value_t = Limits::default().max_in_flight)]
    max_in_flight: usize,
    /// Milliseconds a request body may take to arrive (408 after).
    #[arg(long, default_value_t = Limits::default().body_timeout.as_millis() as u64)]
    body_timeout_ms: u64,
    /// Milliseconds a client may take to send a request head, and an idle kept-alive
    /// connection may wait for its next request, before it is closed.
    #[arg(long, default_value_t = ConnectionLimits::default().header_timeout.as_millis() as u64)]
    header_timeout_ms: u64,
    /// Milliseconds a response may wait for the client to read any of it before the connection
    /// is closed (a client that stops reading cannot make the server hold its answers).
    #[arg(long, default_value_t = ConnectionLimits::default().write_timeout.as_millis() as u64)]
    write_timeout_ms: u64,
    /// Open connections; more are answered 503 and closed at once.
    #[arg(long, default_value_t = ConnectionLimits::default().max_connections)]
    max_connections: usize,
    /// Milliseconds in-flight requests get to finish after SIGTERM or Ctrl-C.
    #[arg(long, default_value_t = ConnectionLimits::default().grace.as_millis() as u64)]
    grace_ms: u64,
    /// A calibration of `--model` (`ansel calibrate --out`): `/rerank`, `/v1|v2/rerank` and
    /// `/ask` report its probability that a sentence answers, and `/ask` says `"answered": false`
    /// when the best one is below its threshold. By default the model directory's own
    /// `calibration.json`, if it has one; `none` turns it off.
    #[arg(long)]
    calibration: Option<std::path::PathBuf>,
}

pub fn run(args: ServeArgs) -> Result<()> {
    // Each /ask request may choose its retriever, so the encoder of an index with vectors loads.
    let answerer = args.cascade.options(true)?.answerer()?;
    let limits = Limits {
        max_texts: args.max_texts,
        max_body_bytes: args.max_body_bytes,
        max_words_per_text: args.max_words_per_text,
        max_request_words: args.max_request_words,
        max_batch_tokens: args.max_batch_tokens,
        timeout: Duration::from_millis(args.timeout_ms),
        max_batch: args.max_batch,
        queue_len: args.queue,
        body_timeout: Duration::from_millis(args.body_timeout_ms),
        max_in_flight: args.max_in_flight,
        served_models: args.served_models,
        max_text_bytes: args.max_text_bytes,
        max_tokens_per_text: args.max_tokens_per_text,
        max_request_tokens: args.max_request_tokens,
        ..Limits::default()
    };
    let ip = args.addr.ip();
    if !ip.is_loopback() && args.api_key.is_none() {
        eprintln!(
            "ansel serve: warning: listening on {ip}, reachable from other machines, without an \
             API key; anyone who can connect can read the index (set --api-key or ANSEL_API_KEY)"
        );
    }
    let security = Security {
        api_key: args.api_key.filter(|k| !k.is_empty()),
        allowed_hosts: Security::hosts_for(ip, &args.allow_hosts),
        cors_origin: args.cors_origin,
    };
    let connections = ConnectionLimits {
        header_timeout: Duration::from_millis(args.header_timeout_ms),
        max_connections: args.max_connections,
        grace: Duration::from_millis(args.grace_ms),
        write_timeout: Duration::from_millis(args.write_timeout_ms),
    };
    let calibration =
        ansel::answering::calibration_for(&args.cascade.model, args.calibration.as_deref())?;
    let mut others = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for spec in args.rerank_models.iter().filter(|s| s.as_str() != "none") {
        let ranker =
            ansel::models::resolve(spec, &[]).with_context(|| format!("--rerank-model {spec}"))?;
        if names.iter().any(|n| n == ranker.name()) {
            anyhow::bail!(
                "--rerank-model {spec}: a model named {:?} is already served (requests pick a \
                 model by its name)",
                ranker.name()
            );
        }
        names.push(ranker.name().to_string());
        let calibration = ansel::answering::calibration_for(spec, None)
            .with_context(|| format!("--rerank-model {spec}"))?;
        others.push(ansel_server::NamedReranker {
            ranker,
            calibration,
        });
    }
    let state = AppState::serving(answerer, limits, security, calibration, others);
    ansel_server::run(args.addr, state, connections, |addr| {
        // Scripts read this line to find a port picked with :0.
        println!("ansel serve: listening on http://{addr}");
        let _ = std::io::stdout().flush();
    })
    .with_context(|| format!("cannot serve on {}", args.addr))?;
    eprintln!("ansel serve: shut down");
    Ok(())
}
