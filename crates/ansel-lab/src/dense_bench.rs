//! Dense retrieval's costs (docs/results/dense-retrieval.md, `scripts/bench-dense-retrieval.sh`):
//! `dense-format` rewrites an index's vectors into another storage format, and `dense-bench`
//! times, question by question, encoding the question, searching the vectors, BM25's search,
//! and the whole hybrid retrieval (both searches, the fusion, reading the records).

use ansel::answering::read_labelled;
use ansel_answer::retrieval::{
    reciprocal_rank_fusion, IndexRetriever, Retrieval, Retriever, RRF_K,
};
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
    /// Indexes made with `ansel index --dense` (repeat the flag): timed question by question in
    /// turn, so that a shared machine's load falls on each alike. One JSON line each.
    #[arg(long = "index", required = true)]
    indexes: Vec<PathBuf>,
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

/// One index under test and its timings (ms), question by question.
struct Timed {
    path: PathBuf,
    index: std::sync::Arc<SentenceIndex>,
    settings: ansel_index::DenseSettings,
    encoder: std::sync::Arc<dyn ansel_index::Encoder>,
    retriever: IndexRetriever,
    load_ms: f64,
    encode: Vec<f64>,
    dense: Vec<f64>,
    bm25: Vec<f64>,
    fuse: Vec<f64>,
    hybrid: Vec<f64>,
}

impl Timed {
    fn open(path: &std::path::Path, depth: usize, retrieve: usize, warm: &str) -> Result<Timed> {
        let index = std::sync::Arc::new(SentenceIndex::open(path)?);
        let Some(settings) = index.dense_settings()? else {
            bail!("{}: no dense vectors", path.display());
        };
        let encoder = ansel::dense::query_encoder(&index)?;
        let start = Instant::now();
        index.snapshot().check_vectors()?;
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        let retriever = IndexRetriever::new(
            index.clone(),
            Retrieval::Hybrid,
            Some(encoder.clone()),
            depth,
        )?;
        // One question first: lazily built state (tokenizer, libtorch, caches) is not timed.
        encoder.encode(&[warm]).map_err(anyhow::Error::msg)?;
        retriever.retrieve(warm, Retrieval::Hybrid, retrieve)?;
        Ok(Timed {
            path: path.to_path_buf(),
            index,
            settings,
            encoder,
            retriever,
            load_ms,
            encode: Vec::new(),
            dense: Vec::new(),
            bm25: Vec::new(),
            fuse: Vec::new(),
            hybrid: Vec::new(),
        })
    }

    fn ask(&mut self, question: &str, depth: usize, retrieve: usize) -> Result<()> {
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
        let snapshot = self.index.snapshot();
        let t = Instant::now();
        let vector = self
            .encoder
            .encode(&[question])
            .map_err(anyhow::Error::msg)?
            .pop()
            .unwrap_or_default();
        self.encode.push(ms(t));
        let t = Instant::now();
        let by_vector = snapshot.dense(&vector, depth)?;
        self.dense.push(ms(t));
        let t = Instant::now();
        let by_words = snapshot.bm25(question, depth)?;
        self.bm25.push(ms(t));
        let t = Instant::now();
        let fused = reciprocal_rank_fusion(&[&by_words, &by_vector], RRF_K, retrieve);
        self.fuse.push(ms(t));
        std::hint::black_box(fused);
        let t = Instant::now();
        let hits = self
            .retriever
            .retrieve(question, Retrieval::Hybrid, retrieve)?;
        self.hybrid.push(ms(t));
        std::hint::black_box(hits);
        Ok(())
    }

    fn report(mut self, questions: usize, depth: usize) -> Result<serde_json::Value> {
        let percentile = |v: &mut Vec<f64>, p: f64| {
            v.sort_by(f64::total_cmp);
            ansel_server::loadtest::percentile(v, p)
        };
        let vector_bytes: u64 = self
            .settings
            .files
            .iter()
            .map(|f| std::fs::metadata(self.path.join(&f.file)).map_or(0, |m| m.len()))
            .sum();
        Ok(serde_json::json!({
            "index_dir": self.path.display().to_string(),
            "vectors": self.settings.count,
            "records": self.index.stats()?.sentences,
            "dim": self.settings.dim,
            "format": self.settings.format.name(),
            "model": self.settings.model,
            "vector_bytes": vector_bytes,
            "load_ms": self.load_ms,
            "questions": questions,
            "depth": depth,
            "encode_question_p50_ms": percentile(&mut self.encode, 0.5),
            "dense_search_p50_ms": percentile(&mut self.dense, 0.5),
            "dense_search_p99_ms": percentile(&mut self.dense, 0.99),
            "bm25_search_p50_ms": percentile(&mut self.bm25, 0.5),
            "fusion_p50_ms": percentile(&mut self.fuse, 0.5),
            "hybrid_retrieve_p50_ms": percentile(&mut self.hybrid, 0.5),
            "hybrid_retrieve_p99_ms": percentile(&mut self.hybrid, 0.99),
        }))
    }
}

pub fn bench(args: DenseBenchArgs) -> Result<()> {
    if args.depth == 0 || args.retrieve == 0 {
        bail!("--depth and --retrieve must be at least 1");
    }
    let labelled = read_labelled(&args.questions)?;
    let warm = &labelled[0].question;
    let mut timed = args
        .indexes
        .iter()
        .map(|path| Timed::open(path, args.depth, args.retrieve, warm))
        .collect::<Result<Vec<_>>>()?;
    for item in &labelled {
        for index in &mut timed {
            index.ask(&item.question, args.depth, args.retrieve)?;
        }
    }
    for index in timed {
        println!("{}", index.report(labelled.len(), args.depth)?);
    }
    Ok(())
}

#[derive(Args)]
pub struct GraphBenchArgs {
    /// An index made with `ansel index --dense` that has a graph (the approximate search).
    #[arg(long)]
    index: PathBuf,
    /// JSON lines of {"question", "answer"} (only the questions are read).
    #[arg(long)]
    questions: PathBuf,
    /// Records each search returns; recall is counted at this depth and at 20.
    #[arg(long, default_value_t = 100)]
    depth: usize,
    /// Candidates the graph search considers (repeat the flag): one JSON line each.
    #[arg(long = "expansion", default_values_t = [100, 128, 200, 400])]
    expansions: Vec<usize>,
    /// Writes the questions' vectors here (f32 little-endian, one after another) for
    /// comparisons outside ansel (bench/ann-compare).
    #[arg(long)]
    dump_queries: Option<PathBuf>,
}

/// The approximate search against the exact one over the same index and questions: recall of
/// the exact search's best `depth` (and best 20) and search time, question by question in turn.
pub fn graph_bench(args: GraphBenchArgs) -> Result<()> {
    use ansel_index::DenseSearch;
    if args.depth < 20 {
        bail!("--depth must be at least 20");
    }
    let index = SentenceIndex::open(&args.index)?;
    let Some(settings) = index.dense_settings()? else {
        bail!("{}: no dense vectors", args.index.display());
    };
    let Some(graph) = settings.graph.clone() else {
        bail!(
            "{}: no graph (index more than --graph-min-rows vectors)",
            args.index.display()
        );
    };
    let encoder = ansel::dense::query_encoder(&index)?;
    let labelled = read_labelled(&args.questions)?;
    let questions: Vec<&str> = labelled.iter().map(|l| l.question.as_str()).collect();
    let vectors = encoder.encode(&questions).map_err(anyhow::Error::msg)?;
    if let Some(path) = &args.dump_queries {
        let bytes: Vec<u8> = vectors
            .iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        std::fs::write(path, bytes)?;
    }
    let snapshot = index.snapshot();
    let start = Instant::now();
    snapshot.check_vectors()?;
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut ways = vec![DenseSearch::Exact];
    ways.extend(
        args.expansions
            .iter()
            .map(|&expansion| DenseSearch::Approximate { expansion }),
    );
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    let mut found: Vec<Vec<Vec<ansel_index::Scored>>> = vec![Vec::new(); ways.len()];
    for vector in &vectors {
        for (i, &how) in ways.iter().enumerate() {
            let t = Instant::now();
            let hits = snapshot.dense_with(vector, args.depth, how)?;
            times[i].push(t.elapsed().as_secs_f64() * 1e3);
            found[i].push(hits);
        }
    }
    let recall = |i: usize, k: usize| {
        let (mut same, mut all) = (0usize, 0usize);
        for (exact, approx) in found[0].iter().zip(&found[i]) {
            let exact = &exact[..k.min(exact.len())];
            let approx = &approx[..k.min(approx.len())];
            same += approx
                .iter()
                .filter(|a| exact.iter().any(|e| e.unit == a.unit))
                .count();
            all += exact.len();
        }
        same as f64 / all.max(1) as f64
    };
    for (i, how) in ways.iter().enumerate() {
        let (method, expansion) = match how {
            DenseSearch::Exact => ("exact", None),
            DenseSearch::Approximate { expansion } => ("graph", Some(*expansion)),
        };
        let mut t = times[i].clone();
        t.sort_by(f64::total_cmp);
        println!(
            "{}",
            serde_json::json!({
                "index_dir": args.index.display().to_string(),
                "vectors": settings.count,
                "graph_vectors": graph.rows,
                "graph_bytes": graph.bytes,
                "format": settings.format.name(),
                "load_ms": load_ms,
                "questions": vectors.len(),
                "depth": args.depth,
                "method": method,
                "expansion": expansion,
                "recall_at_depth": recall(i, args.depth),
                "recall_at_20": recall(i, 20),
                "search_p50_ms": ansel_server::loadtest::percentile(&t, 0.5),
                "search_p99_ms": ansel_server::loadtest::percentile(&t, 0.99),
            })
        );
    }
    Ok(())
}
