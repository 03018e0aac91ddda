//! `ansel-lab eqag-latency`: the per-question time of each stage of an EQAG model, and of the
//! nearest-question search over larger stores.

use ansel::cli::DataArgs;
use ansel::models;
use ansel::models::eqag::node_ranker;
use ansel_graph::EqagRanker;
use ansel_model::ModelCard;
use anyhow::{bail, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// `ansel-lab eqag-latency`: per-question time of each stage of an EQAG model.
#[derive(Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    data: DataArgs,
    /// An EQAG model directory.
    #[arg(long)]
    model: PathBuf,
    /// Questions timed (the first N answered ones).
    #[arg(long, default_value_t = 200)]
    limit: usize,
    /// Intra-op threads (0: all cores).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn summary(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    serde_json::json!({
        "mean": v.iter().sum::<f64>() / v.len() as f64, "p50": at(0.5), "p95": at(0.95), "max": at(1.0),
    })
}

pub fn latency(args: LatencyArgs) -> Result<()> {
    if args.limit == 0 {
        bail!("--limit must be at least 1");
    }
    ansel_torch::init(args.threads, 0);
    let mut questions = args.data.read_some()?;
    questions.retain(|q| q.positives() > 0);
    questions.truncate(args.limit);
    if questions.is_empty() {
        bail!("{}: no answered questions", args.data.data.display());
    }
    let card = ModelCard::read(&args.model)?;
    if card.kind != ansel_graph::KIND {
        bail!(
            "{}: not an EQAG model (kind {:?})",
            args.model.display(),
            card.kind
        );
    }
    let spec = EqagRanker::base_spec(&args.model, &card)?;
    let base = models::resolve(&spec, &[])?;
    let ranker = EqagRanker::load(&args.model, &card, base, node_ranker)?;
    // One warm-up question, not timed.
    ranker.score_timed(&questions[0])?;
    let mut t = Vec::new();
    for q in &questions {
        t.push(ranker.score_timed(q)?.1);
    }
    // Nearest-question search alone over larger stores (random unit vectors, the model's
    // dimension): exact search cost grows linearly with the stored questions.
    let dim = ranker.model.search_dim();
    let mut scaling = Vec::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    for rows in [2_000usize, 20_000, 100_000] {
        let mut vectors: Vec<f32> = (0..rows * dim).map(|_| next()).collect();
        for v in vectors.chunks_mut(dim) {
            ansel_graph::search::normalise(v);
        }
        let store = ansel_graph::search::NearestQuestions { dim, vectors };
        let queries: Vec<Vec<f32>> = (0..50)
            .map(|_| {
                let mut q: Vec<f32> = (0..dim).map(|_| next()).collect();
                ansel_graph::search::normalise(&mut q);
                q
            })
            .collect();
        let mut ms = Vec::new();
        for q in &queries {
            let t = Instant::now();
            std::hint::black_box(store.top_k(q, 5, None));
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        scaling.push(serde_json::json!({"stored": rows, "search_ms": summary(ms)}));
    }
    let out = serde_json::json!({
        "search_scaling": scaling,
        "model": args.model.display().to_string(),
        "data": args.data.data.display().to_string(),
        "stored_training_questions": ranker.model.training_rows(),
        "stored_training_nodes": ranker.model.config.training_nodes,
        "stored_training_edges": ranker.model.config.training_edges,
        "node_features": ranker.model.config.node_features,
        "inter_by": ranker.model.config.graph.inter_by,
        "questions": questions.len(),
        "candidates_mean": questions.iter().map(|q| q.candidates.len()).sum::<usize>() as f64 / questions.len() as f64,
        "threads": args.threads,
        "graph_ms": summary(t.iter().map(|x| x.graph_ms).collect()),
        "search_ms": summary(t.iter().map(|x| x.search_ms).collect()),
        "encode_ms": summary(t.iter().map(|x| x.encode_ms).collect()),
        "cls_ms": summary(t.iter().map(|x| x.cls_ms).collect()),
        "base_ms": summary(t.iter().map(|x| x.base_ms).collect()),
    });
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    Ok(())
}
