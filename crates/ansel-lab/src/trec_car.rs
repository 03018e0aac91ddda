//! `ansel trec-car`: paragraph retrieval for TREC CAR outline queries (BM25 runs; STNet training
//! and re-ranking with article-level cross-validation).

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct TrecCarArgs {
    #[command(subcommand)]
    command: TrecCarCommand,
}

#[derive(Subcommand)]
enum TrecCarCommand {
    /// BM25 (tantivy) over the paragraphs for every outline query (title + heading path).
    Bm25(Bm25Args),
    /// Train STNet (or an ablation) with article-level folds and write the test folds' run.
    Stnet(Box<ansel_stnet::CvArgs>),
}

#[derive(Args)]
struct Bm25Args {
    /// A TREC CAR data folder holding `*.cbor.paragraphs` and `*.cbor.outlines`.
    #[arg(long)]
    data: PathBuf,
    /// Run file to write (gzipped when it ends in `.gz`).
    #[arg(long)]
    run: PathBuf,
    /// Paragraphs kept per query.
    #[arg(long, default_value_t = 100)]
    depth: usize,
}

pub fn run(args: TrecCarArgs) -> Result<()> {
    match args.command {
        TrecCarCommand::Bm25(a) => {
            let files = ansel_trec_car::DataFiles::find(&a.data)?;
            let paragraphs = ansel_trec_car::load_paragraphs(&files.paragraphs)?;
            let queries = ansel_trec_car::load_queries(&files.outlines)?;
            let start = std::time::Instant::now();
            let run = ansel_trec_car::bm25_run(&paragraphs, &queries, a.depth)
                .context("BM25 search failed")?;
            ansel_trec_car::write_run_gz(&a.run, &run, "bm25", a.depth)
                .with_context(|| format!("cannot write {}", a.run.display()))?;
            eprintln!(
                "{} queries over {} paragraphs in {:.1}s -> {}",
                queries.len(),
                paragraphs.len(),
                start.elapsed().as_secs_f64(),
                a.run.display()
            );
            Ok(())
        }
        TrecCarCommand::Stnet(a) => ansel_stnet::cross_validate(&a),
    }
}
