//! Article-level folds and gzipped trec_eval run files.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

/// One query's ranking: (paragraph id, score) pairs, any order.
pub type RankedList = Vec<(String, f64)>;

/// Assigns each article (page id) to one of `k` folds: the distinct ids, sorted, are shuffled
/// with `seed` and dealt round-robin, so folds differ in size by at most one article and no
/// article is in two folds.
pub fn article_folds<'a>(
    page_ids: impl IntoIterator<Item = &'a str>,
    k: usize,
    seed: u64,
) -> HashMap<String, usize> {
    let mut ids: Vec<&str> = page_ids
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut state = seed;
    for i in (1..ids.len()).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        ids.swap(i, j);
    }
    ids.into_iter()
        .enumerate()
        .map(|(i, id)| (id.to_string(), i % k.max(1)))
        .collect()
}

pub use ansel_data::splitmix64;

/// Writes a run, sorted as trec_eval ranks (score descending, ties by paragraph id descending),
/// keeping the top `depth` of each query; gzip-compressed when `path` ends in `.gz`. Atomic (a
/// temporary file renamed over `path`): an interrupted write leaves the old run, never half of one.
pub fn write_run_gz(
    path: &Path,
    run: &[(String, RankedList)],
    tag: &str,
    depth: usize,
) -> std::io::Result<()> {
    let mut text = Vec::new();
    for (qid, list) in run {
        let mut list: Vec<&(String, f64)> = list.iter().collect();
        list.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        for (rank, (pid, score)) in list.into_iter().take(depth).enumerate() {
            writeln!(text, "{qid} Q0 {pid} {} {score} {tag}", rank + 1)?;
        }
    }
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&text)?;
        gz.finish()?
    } else {
        text
    };
    ansel_model::write_atomic(path, &bytes).map_err(std::io::Error::other)
}
