//! Dense retrieval's costs (docs/results/dense-retrieval.md, `scripts/bench-dense-retrieval.sh`):
//! `dense-format` rewrites an index's vectors into another storage format, and `dense-bench`
//! times, question by question, encoding the question, searching the vectors, BM25's search,
//! and the whole hybrid retrieval (both searches, the fusion, reading the records).

use ansel::answering::read_labelled;
use ansel_answer::retrieval::{reciprocal_rank_fusion, Retrieval, Retriever, RRF_K};
use ansel_index::{SentenceIndex, VectorFormat};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct DenseFormatArgs {
    /// An index made with `ansel index --dense` (f32 or f16 vectors).
    #[arg(long)]
    index: PathBuf,
    /// The format to store its vectors in.
    #[arg(long, value_parser = VectorFormat::NAMES)]
    format: String,
}

pub fn format(args: DenseFormatArgs) -> Result<()> {
    let format: VectorFormat = args.format.parse().map_err(anyhow::Error::msg)?;
    let index = SentenceIndex::open(&args.index)?;
    let start = Instant::now();
    index.rewrite_vectors(format)?;
    eprintln!(
        "{}: vectors rewritten as {} in {:.1} s",
        args.index.display(),
        format.name(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

#[derive(Args)]
pub struct DenseBenchArgs {
    /// An index made with `ansel index --dense`.
    #[arg(long)]
    index: PathBuf,
    /// JSON lines of {"question", "answer"} (only the questions are read).
    #[arg(long)]
    questions: PathBuf,
    /// Records each search returns (the fusion depth of the hybrid retriever).
    #[arg(long, default_value_t = 100)]
    depth: usize,
    /// Records the hybrid retrieval keeps (`--retrieve` of `ask`).
    #[arg(long, default_value_t = 20)]
    retrieve: usize,
}

pub fn bench(args: DenseBenchArgs) -> Result<()> {
    if args.depth == 0 || args.retrieve == 0 {
        bail!("--depth and --retrieve must be at least 1");
    }
    let labelled = read_labelled(&args.questions)?;
    let index = SentenceIndex::open(&args.index)?;
    let Some(settings) = index.dense_settings()? else {
        bail!("{}: no dense vectors", args.index.display());
    };
    let encoder = ansel::dense::query_encoder(&index)?;
    let start = Instant::now();
    index.snapshot().check_vectors()?;
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let retriever = Retriever::new(&index, Retrieval::Hybrid, Some(encoder.clone()), args.depth)?;
    let vector_bytes: u64 = settings
        .files
        .iter()
        .map(|f| std::fs::metadata(args.index.join(&f.file)).map_or(0, |m| m.len()))
        .sum();
    // One question first: lazily built state (tokenizer, libtorch, caches) is not timed.
    let warm = &labelled[0].question;
    encoder.encode(&[warm]).map_err(anyhow::Error::msg)?;
    retriever.retrieve(&index, warm, Retrieval::Hybrid, args.retrieve)?;
    let (mut encode, mut dense, mut bm25, mut fuse, mut hybrid) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for item in &labelled {
        let snapshot = index.snapshot();
        let t = Instant::now();
        let vector = encoder
            .encode(&[&item.question])
            .map_err(anyhow::Error::msg)?
            .pop()
            .unwrap_or_default();
        encode.push(ms(t));
        let t = Instant::now();
        let by_vector = snapshot.dense(&vector, args.depth)?;
        dense.push(ms(t));
        let t = Instant::now();
        let by_words = snapshot.bm25(&item.question, args.depth)?;
        bm25.push(ms(t));
        let t = Instant::now();
        let fused = reciprocal_rank_fusion(&[&by_words, &by_vector], RRF_K, args.retrieve);
        fuse.push(ms(t));
        std::hint::black_box(fused);
        let t = Instant::now();
        let hits = retriever.retrieve(&index, &item.question, Retrieval::Hybrid, args.retrieve)?;
        hybrid.push(ms(t));
        std::hint::black_box(hits);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        ansel_server::loadtest::percentile(v, 0.5)
    };
    let p99 = |v: &Vec<f64>| ansel_server::loadtest::percentile(v, 0.99);
    let report = serde_json::json!({
        "vectors": settings.count,
        "records": index.stats()?.sentences,
        "dim": settings.dim,
        "format": settings.format.name(),
        "model": settings.model,
        "vector_bytes": vector_bytes,
        "load_ms": load_ms,
        "questions": labelled.len(),
        "depth": args.depth,
        "encode_question_p50_ms": median(&mut encode),
        "dense_search_p50_ms": median(&mut dense),
        "dense_search_p99_ms": p99(&dense),
        "bm25_search_p50_ms": median(&mut bm25),
        "fusion_p50_ms": median(&mut fuse),
        "hybrid_retrieve_p50_ms": median(&mut hybrid),
        "hybrid_retrieve_p99_ms": p99(&hybrid),
    });
    println!("{report}");
    Ok(())
}
