//! Approximate search of an index's vectors: an HNSW graph (Malkov and Yashunin, TPAMI 2020;
//! built and searched by the usearch crate) over the rows of the index's first vector files; the
//! rows written after it are searched exactly, and every row the graph finds is scored again
//! exactly, so a row's score is the same whichever way it was found.
//!
//! The graph is built when a commit leaves the index with at least [`GraphPolicy::min_rows`]
//! rows, and extended (loaded, the new rows added, saved whole) when the rows outside it reach
//! a quarter of those in it: over an index's life it is written about log(rows) times, and the
//! exact search of the rows outside it stays a fraction of a search. Like a vector file it is
//! written to a temporary file, given its name when complete, then listed in `ansel-index.json`
//! with its length and checksum (checked before it is memory-mapped, so a damaged graph is an
//! error naming the file, never a wild read); the graph it replaces is removed after that.
//!
//! The graph holds each row's int8 components (the stored ones for int8 indexes) and compares
//! them by cosine, which ignores the per-row scale: the order the exact int8 search gives.

use crate::dense::{self, Block, Checksum, DenseSettings, Query};
use crate::IndexError;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Neighbours each node keeps (usearch's default; M in the HNSW paper).
const CONNECTIVITY: usize = 16;
/// Candidates considered while adding a row (efConstruction).
const EXPANSION_ADD: usize = 128;
/// Candidates a search considers (efSearch) unless told otherwise: recall@100 against the exact
/// search is in docs/results/scale.md.
pub const DEFAULT_EXPANSION: usize = 200;
/// Threads that add rows to a graph.
const BUILD_THREADS: usize = 2;

/// When a commit builds or extends the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphPolicy {
    /// Rows an index holds before it gets a graph (`u64::MAX`: never); below it the exact search
    /// takes a few milliseconds.
    pub min_rows: u64,
}

impl Default for GraphPolicy {
    fn default() -> Self {
        GraphPolicy { min_rows: 50_000 }
    }
}

impl GraphPolicy {
    /// No graph: every search is exact.
    pub const NEVER: GraphPolicy = GraphPolicy { min_rows: u64::MAX };

    /// Whether a commit that leaves `settings` should build or extend the graph.
    pub(crate) fn due(&self, settings: &DenseSettings) -> bool {
        let in_graph = settings.graph.as_ref().map_or(0, |g| g.rows);
        let outside = settings.count.saturating_sub(in_graph);
        settings.count >= self.min_rows && outside > 0 && outside >= (in_graph / 4).max(1)
    }
}

/// What `ansel-index.json` records about the graph (under `dense.graph`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphFile {
    pub file: String,
    /// The index's first `rows` rows are in it (those of its first vector files).
    pub rows: u64,
    /// Its length and checksum, checked before it is read.
    pub bytes: u64,
    pub checksum: u64,
    pub connectivity: usize,
}

/// How a dense search finds its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenseSearch {
    /// Every row compared with the question.
    Exact,
    /// The graph, where the index has one, considering `expansion` candidates (at least the
    /// number asked for); rows outside it exactly.
    Approximate { expansion: usize },
}

impl Default for DenseSearch {
    fn default() -> Self {
        DenseSearch::Approximate {
            expansion: DEFAULT_EXPANSION,
        }
    }
}

/// Whether `name` is a graph file or its temporary.
pub(crate) fn is_graph_file(name: &str) -> bool {
    name.starts_with("graph-") && (name.ends_with(".hnsw") || name.ends_with(".hnsw.tmp"))
}

fn options(dim: usize) -> usearch::IndexOptions {
    usearch::IndexOptions {
        dimensions: dim,
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::I8,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        // A search's expansion is the number of rows it asks for (see `Graph::search`).
        expansion_search: 1,
        multi: false,
    }
}

fn failed(path: &Path, what: &str, e: impl std::fmt::Display) -> IndexError {
    IndexError::Vectors {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
    }
}

/// Builds the graph of every row of `settings` (extending the one it lists): writes it beside
/// the vector files and returns its entry. The caller lists it, then removes the old one.
pub(crate) fn extend(dir: &Path, settings: &DenseSettings) -> Result<GraphFile, IndexError> {
    let name = format!("graph-{:010}.hnsw", settings.count);
    let path = dir.join(&name);
    let tmp = dir.join(format!("{name}.tmp"));
    let index = usearch::Index::new(&options(settings.dim))
        .map_err(|e| failed(&tmp, "cannot make a graph", e))?;
    let start = match &settings.graph {
        Some(old) => {
            let old_path = verified(dir, old)?;
            index
                .load(&path_str(&old_path)?)
                .map_err(|e| failed(&old_path, "cannot load the graph", e))?;
            old.rows
        }
        None => 0,
    };
    index
        .reserve_capacity_and_threads(settings.count as usize, BUILD_THREADS)
        .map_err(|e| failed(&tmp, "cannot reserve room for the graph", e))?;
    let mut first = 0u64;
    for entry in &settings.files {
        let end = first + entry.rows;
        if end > start {
            let block = dense::read_file(dir, entry, settings)?;
            let skip = start.saturating_sub(first) as usize;
            add_rows(&index, &block, settings.dim, first, skip)
                .map_err(|e| failed(&tmp, "cannot add to the graph", e))?;
        }
        first = end;
    }
    let written = index
        .save(&path_str(&tmp)?)
        .map_err(|e| failed(&tmp, "cannot write the graph", e))
        .and_then(|()| checksum_file(&tmp));
    let (bytes, checksum) = match written {
        Ok(sum) => sum,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| IndexError::io(&path, e))?;
    dense::sync_dir(dir);
    Ok(GraphFile {
        file: name,
        rows: settings.count,
        bytes,
        checksum,
        connectivity: CONNECTIVITY,
    })
}

/// Adds `block`'s rows from `skip` on (row `first + i` is its `i`th), on [`BUILD_THREADS`]
/// threads.
fn add_rows(
    index: &usearch::Index,
    block: &Block,
    dim: usize,
    first: u64,
    skip: usize,
) -> Result<(), String> {
    let rows = block.rows(dim);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..BUILD_THREADS)
            .map(|t| {
                scope.spawn(move || -> Result<(), String> {
                    let mut row = skip + t;
                    while row < rows {
                        let q = block.row_i8(row, dim);
                        index
                            .add(first + row as u64, &q)
                            .map_err(|e| e.to_string())?;
                        row += BUILD_THREADS;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .map_err(|_| "a graph thread panicked".to_string())?
        })
    })
}

fn path_str(path: &Path) -> Result<String, IndexError> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| IndexError::Vectors {
            path: path.to_path_buf(),
            message: "the graph's path is not UTF-8".into(),
        })
}

/// Length and checksum of a file, read once.
fn checksum_file(path: &Path) -> Result<(u64, u64), IndexError> {
    let mut file = std::fs::File::open(path).map_err(|e| IndexError::io(path, e))?;
    let mut buffer = vec![0u8; 1 << 20];
    let (mut bytes, mut checksum) = (0u64, Checksum::new());
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| IndexError::io(path, e))?;
        if n == 0 {
            return Ok((bytes, checksum.finish()));
        }
        checksum.update(&buffer[..n]);
        bytes += n as u64;
    }
}

/// The graph's path once its length and checksum match its entry.
fn verified(dir: &Path, entry: &GraphFile) -> Result<PathBuf, IndexError> {
    let path = dir.join(&entry.file);
    let bad = |message: String| IndexError::Vectors {
        path: path.clone(),
        message,
    };
    let (bytes, checksum) = match checksum_file(&path) {
        Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(bad(format!(
                "missing: ansel-index.json lists it as the graph of the first {} vectors; \
                 rebuild the index with `ansel index --dense`",
                entry.rows
            )))
        }
        found => found?,
    };
    if bytes != entry.bytes {
        return Err(bad(format!(
            "{} bytes, but ansel-index.json records {}: truncated or replaced; rebuild the \
             index with `ansel index --dense`",
            bytes, entry.bytes
        )));
    }
    if checksum != entry.checksum {
        return Err(bad(
            "corrupt: its checksum does not match; rebuild the index with `ansel index --dense`"
                .into(),
        ));
    }
    Ok(path)
}

/// A graph, memory-mapped for searching.
pub(crate) struct Graph {
    entry: GraphFile,
    path: PathBuf,
    index: usearch::Index,
}

impl Graph {
    /// Checks `entry`'s file and maps it.
    pub(crate) fn open(dir: &Path, entry: &GraphFile, dim: usize) -> Result<Graph, IndexError> {
        let path = verified(dir, entry)?;
        let index = usearch::Index::new(&options(dim))
            .map_err(|e| failed(&path, "cannot make a graph", e))?;
        index
            .view(&path_str(&path)?)
            .map_err(|e| failed(&path, "cannot map the graph", e))?;
        if index.size() as u64 != entry.rows || index.dimensions() != dim {
            return Err(IndexError::Vectors {
                path: path.clone(),
                message: format!(
                    "holds {} vectors of {} components, but ansel-index.json records {} of {dim}; \
                     rebuild the index with `ansel index --dense`",
                    index.size(),
                    index.dimensions(),
                    entry.rows
                ),
            });
        }
        Ok(Graph {
            entry: entry.clone(),
            path,
            index,
        })
    }

    pub(crate) fn entry(&self) -> &GraphFile {
        &self.entry
    }

    /// Rows in it: the index's first ones.
    pub(crate) fn rows(&self) -> u64 {
        self.entry.rows
    }

    /// Up to `limit` rows for which `keep` holds, nearest `query` first, considering
    /// `expansion` candidates (at least `limit`).
    pub(crate) fn search(
        &self,
        query: &Query,
        limit: usize,
        expansion: usize,
        keep: impl Fn(u64) -> bool,
    ) -> Result<Vec<u64>, IndexError> {
        // usearch considers max(its expansion setting, the count asked for) candidates; the
        // setting is 1, so the count is the expansion, and the best `limit` are kept.
        let found = self
            .index
            .filtered_search(query.i8(), limit.max(expansion), keep)
            .map_err(|e| failed(&self.path, "the graph search failed", e))?;
        Ok(found.keys.into_iter().take(limit).collect())
    }
}
