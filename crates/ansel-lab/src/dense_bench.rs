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
    index: SentenceIndex,
    settings: ansel_index::DenseSettings,
    encoder: std::sync::Arc<dyn ansel_index::Encoder>,
    retriever: Retriever,
    load_ms: f64,
    encode: Vec<f64>,
    dense: Vec<f64>,
    bm25: Vec<f64>,
    fuse: Vec<f64>,
    hybrid: Vec<f64>,
}

impl Timed {
    fn open(path: &std::path::Path, depth: usize, retrieve: usize, warm: &str) -> Result<Timed> {
        let index = SentenceIndex::open(path)?;
        let Some(settings) = index.dense_settings()? else {
            bail!("{}: no dense vectors", path.display());
        };
        let encoder = ansel::dense::query_encoder(&index)?;
        let start = Instant::now();
        index.snapshot().check_vectors()?;
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        let retriever = Retriever::new(&index, Retrieval::Hybrid, Some(encoder.clone()), depth)?;
        // One question first: lazily built state (tokenizer, libtorch, caches) is not timed.
        encoder.encode(&[warm]).map_err(anyhow::Error::msg)?;
        retriever.retrieve(&index, warm, Retrieval::Hybrid, retrieve)?;
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
            .retrieve(&self.index, question, Retrieval::Hybrid, retrieve)?;
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
