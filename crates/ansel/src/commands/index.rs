use ansel::indexing::{
    add_files_with, check_files, open_index, writer_for, writer_with_precomputed, Progress,
};
use ansel_index::documents::DEFAULT_MAX_DOCUMENT_BYTES;
use ansel_index::{GraphPolicy, Unit, VectorFormat};
use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct IndexArgs {
    /// Index folder; created when missing, added to when it exists.
    #[arg(long)]
    index: PathBuf,
    /// What the index holds, set when it is created: `sentence`s, or `passage`s (paragraphs,
    /// under the document title and the Markdown headings above them, e.g. `Bees › Hives`).
    /// Default: what the index already holds, else sentences.
    #[arg(long, value_parser = ["sentence", "passage"])]
    unit: Option<String>,
    /// Documents added between two commits; a crash loses at most the uncommitted ones.
    #[arg(long, default_value_t = 1000)]
    commit_every: usize,
    /// Bytes one document (a text file, or a JSON line) may have; a larger one stops the run
    /// before the index changes, naming its file and line.
    #[arg(long, default_value_t = DEFAULT_MAX_DOCUMENT_BYTES)]
    max_document_bytes: usize,
    /// Also store a dense vector of every sentence (or passage), made by this sentence encoder:
    /// a bi-encoder model name or directory (`minilm-l6-cosine`) or a sentence-transformers
    /// directory that mean-pools. What `ask --retriever dense|hybrid` searches. Only a new (or
    /// empty) index takes vectors; one that has them encodes every document added later with
    /// the model it records, given here or not.
    #[arg(long, value_name = "MODEL")]
    dense: Option<String>,
    /// How a new index stores its vectors: `int8` (a byte a component and a scale a vector; the
    /// default, chosen by measured recall and search time), `f16` or `f32`.
    #[arg(long, value_parser = VectorFormat::NAMES, requires = "dense")]
    dense_format: Option<String>,
    /// Vectors made elsewhere (`*.ansel-vectors` files or folders of them, written by
    /// `ansel.spark.encode_units` or `ansel.Encoder.write_vectors` with the same encoder): a
    /// sentence whose text they hold takes its vector from them; the others are encoded here.
    #[arg(long, value_name = "PATH")]
    vectors: Vec<PathBuf>,
    /// Vectors an index holds before a commit builds the graph of the approximate search
    /// (HNSW); after that a commit extends the graph once the vectors outside it reach a
    /// quarter of those in it, and they are searched exactly until then.
    #[arg(long, default_value_t = GraphPolicy::default().min_rows, value_name = "VECTORS")]
    graph_min_rows: u64,
    /// No graph: dense searches compare the question with every vector (exact, linear time).
    #[arg(long, conflicts_with = "graph_min_rows")]
    no_graph: bool,
    /// Add nothing: build or extend the graph of an existing index with vectors as a commit
    /// would (under --graph-min-rows), e.g. for an index made before graphs existed.
    #[arg(long, conflicts_with_all = ["paths", "dense", "unit", "no_graph", "check", "vectors"])]
    update_graph: bool,
    /// Check the index instead of adding to it: every segment file against its checksum, the
    /// index's JSON files and its dense vectors; names each damaged file and exits 1.
    #[arg(long, conflicts_with_all = ["paths", "dense", "unit", "vectors"])]
    check: bool,
    /// Files or folders of documents: .txt, .md, .markdown, .jsonl/.ndjson ({"id", "title", "text"} a line).
    #[arg(required_unless_present_any = ["check", "update_graph"])]
    paths: Vec<PathBuf>,
}

pub fn run(args: IndexArgs) -> Result<()> {
    if args.commit_every == 0 {
        anyhow::bail!("--commit-every must be at least 1");
    }
    let start = Instant::now();
    if args.check {
        let index = ansel_index::SentenceIndex::open(&args.index)?;
        index.check(true)?;
        let stats = index.stats()?;
        println!(
            "{}: every file checked in {:.2} s; {} documents, {} {}s",
            args.index.display(),
            start.elapsed().as_secs_f64(),
            stats.documents,
            stats.sentences,
            index.unit().name()
        );
        return Ok(());
    }
    let policy = if args.no_graph {
        GraphPolicy::NEVER
    } else {
        GraphPolicy {
            min_rows: args.graph_min_rows,
        }
    };
    if args.update_graph {
        let index = ansel_index::SentenceIndex::open(&args.index)?;
        if index.dense_settings()?.is_none() {
            anyhow::bail!(
                "{}: has no dense vectors, so no graph",
                args.index.display()
            );
        }
        let mut writer = writer_for(&index, None, None)?;
        writer.set_graph_policy(policy);
        writer.commit()?;
        print_dense(&index, 0, start.elapsed().as_secs_f64())?;
        return Ok(());
    }
    let checked = check_files(&args.paths, args.max_document_bytes)?;
    let unit = match args.unit.as_deref() {
        Some("passage") => Some(Unit::Passage),
        Some(_) => Some(Unit::Sentence),
        None => None,
    };
    let index = open_index(&args.index, unit)?;
    let unit = index.unit().name();
    let format = args
        .dense_format
        .as_deref()
        .map(str::parse::<VectorFormat>)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let (mut writer, precomputed) = if args.vectors.is_empty() {
        (writer_for(&index, args.dense.as_deref(), format)?, None)
    } else {
        let (writer, encoder) =
            writer_with_precomputed(&index, args.dense.as_deref(), format, &args.vectors)?;
        (writer, Some(encoder))
    };
    writer.set_graph_policy(policy);
    let bar = ProgressBar::new(checked.documents as u64).with_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} documents, {msg} [{elapsed}]",
    )?);
    let (mut done, mut sentences) = (0usize, 0usize);
    let added = add_files_with(
        &index,
        writer,
        &checked,
        args.commit_every,
        |event| match event {
            Progress::Added(document, added) => {
                if added == 0 {
                    // Nothing to search in it (a former version of the same id is removed all the same).
                    bar.suspend(|| {
                        eprintln!("document {}: no {unit}s, nothing indexed", document.id)
                    });
                } else {
                    // Counted as the final summary counts: documents with something indexed.
                    done += 1;
                }
                sentences += added;
                bar.inc(1);
                bar.set_message(format!("{sentences} {unit}s"));
            }
            Progress::Committed if bar.is_hidden() => {
                // No terminal: a log line per commit says what is safe.
                eprintln!("committed {done} documents ({sentences} {unit}s)");
            }
            Progress::Committed => {}
        },
    )?;
    bar.finish_and_clear();
    let stats = index.stats()?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "indexed {} documents, {} {unit}s in {seconds:.2} s; {} now holds {} documents, {} {unit}s",
        added.documents - added.empty,
        added.sentences,
        args.index.display(),
        stats.documents,
        stats.sentences
    );
    if let Some(encoder) = precomputed {
        let (found, encoded) = encoder.counts();
        println!(
            "precomputed vectors: {found} {unit}s took theirs from {}, {} were encoded here",
            args.vectors
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            encoded
        );
    }
    print_dense(&index, added.sentences, seconds)
}

/// What the index's vectors and graph are now.
fn print_dense(index: &ansel_index::SentenceIndex, added: usize, seconds: f64) -> Result<()> {
    let unit = index.unit().name();
    if let Some(dense) = index.dense_settings()? {
        let rate = match added {
            0 => String::new(),
            n => format!(
                "; {:.1} {unit}s indexed a second, encoding included",
                n as f64 / seconds.max(1e-9)
            ),
        };
        println!(
            "dense vectors: {} ({} components, {}), {} vectors{rate}",
            dense.model,
            dense.dim,
            dense.format.name(),
            dense.count
        );
        match dense.graph {
            Some(graph) => println!(
                "graph (approximate search): the first {} of {} vectors, {:.1} MB ({seconds:.1} s in all)",
                graph.rows,
                dense.count,
                graph.bytes as f64 / 1e6
            ),
            None => println!("no graph: dense searches are exact"),
        }
    }
    Ok(())
}
