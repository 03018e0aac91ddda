//! Compares two maintained HNSW crates on the vectors of one ansel index (issue 43):
//! usearch (what `ansel index` builds: int8 components compared by cosine) and hnsw_rs (f32 by
//! cosine), with the same graph parameters (16 neighbours a node, 32 on the
//! base layer; 128 candidates while adding), built on the same threads. For each: build
//! seconds, bytes, and for several search expansions the recall of the exact search's best 100
//! and best 20 (the exact search: every vector, f32, in this program) and the search's median and
//! 99th-percentile time. One JSON line per crate and expansion.
//!
//!   ann-compare INDEX_DIR QUERIES.f32 [QUESTIONS]
//! QUERIES.f32: the questions' vectors (`ansel-lab graph-bench --dump-queries`).

use std::time::Instant;

const CONNECTIVITY: usize = 16;
const EXPANSION_ADD: usize = 128;
const THREADS: usize = 2;
const DEPTH: usize = 100;
const EXPANSIONS: [usize; 3] = [100, 200, 400];

/// Every row of the index's vector files as normalised f32, in row order.
fn read_rows(dir: &str) -> (usize, Vec<f32>) {
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/ansel-index.json")).unwrap())
            .unwrap();
    let dense = &settings["dense"];
    let dim = dense["dim"].as_u64().unwrap() as usize;
    let format = dense["format"].as_str().unwrap().to_string();
    let mut rows = Vec::new();
    for file in dense["files"].as_array().unwrap() {
        let bytes = std::fs::read(format!("{dir}/{}", file["file"].as_str().unwrap())).unwrap();
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let header = 24 + word(20) + 8;
        let data = &bytes[header..bytes.len() - 8];
        match format.as_str() {
            "int8" => {
                for row in data.chunks_exact(4 + dim) {
                    let scale = f32::from_le_bytes(row[..4].try_into().unwrap());
                    rows.extend(row[4..].iter().map(|&b| b as i8 as f32 * scale));
                }
            }
            "f32" => rows.extend(
                data.chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
            ),
            other => panic!("vectors stored as {other}: compare int8 or f32 indexes"),
        }
    }
    for row in rows.chunks_exact_mut(dim) {
        normalise(row);
    }
    (dim, rows)
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn exact(rows: &[f32], dim: usize, query: &[f32], k: usize) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = rows
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, r)| (dot(r, query), i as u64))
        .collect();
    scored.select_nth_unstable_by(k, |a, b| b.0.total_cmp(&a.0));
    scored.truncate(k);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, i)| i).collect()
}

fn quantize(v: &[f32]) -> Vec<i8> {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1e-12);
    v.iter().map(|x| (x / max * 127.0).round() as i8).collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(
    name: &str,
    build_s: f64,
    bytes: u64,
    expansion: usize,
    truth: &[Vec<u64>],
    found: &[Vec<u64>],
    mut ms: Vec<f64>,
    n: usize,
) {
    let recall = |k: usize| {
        let hit: usize = truth
            .iter()
            .zip(found)
            .map(|(t, f)| f.iter().take(k).filter(|x| t[..k].contains(x)).count())
            .sum();
        hit as f64 / (k * truth.len()) as f64
    };
    ms.sort_by(f64::total_cmp);
    println!(
        "{}",
        serde_json::json!({"crate": name, "vectors": n, "build_seconds": build_s, "graph_bytes": bytes,
            "expansion": expansion, "recall_at_100": recall(DEPTH), "recall_at_20": recall(20),
            "search_p50_ms": percentile(&ms, 0.5), "search_p99_ms": percentile(&ms, 0.99),
            "questions": truth.len(), "threads": THREADS})
    );
}

/// For each expansion, times `search(question, expansion)` over every question and reports.
fn evaluate(
    name: &str,
    build_s: f64,
    bytes: u64,
    truth: &[Vec<u64>],
    n: usize,
    search: impl Fn(usize, usize) -> Vec<u64>,
) {
    for expansion in EXPANSIONS {
        let (mut found, mut ms) = (Vec::new(), Vec::new());
        for i in 0..truth.len() {
            let t = Instant::now();
            found.push(search(i, expansion));
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        report(name, build_s, bytes, expansion, truth, &found, ms, n);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, queries_path) = (&args[1], &args[2]);
    let questions: usize = args.get(3).map_or(200, |s| s.parse().unwrap());
    let (dim, rows) = read_rows(dir);
    let n = rows.len() / dim;
    let mut queries: Vec<Vec<f32>> = std::fs::read(queries_path)
        .unwrap()
        .chunks_exact(4 * dim)
        .take(questions)
        .map(|b| {
            b.chunks_exact(4)
                .map(|x| f32::from_le_bytes(x.try_into().unwrap()))
                .collect()
        })
        .collect();
    queries.iter_mut().for_each(|q| normalise(q));
    let truth: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| exact(&rows, dim, q, DEPTH))
        .collect();

    // usearch, as ansel builds it.
    let options = usearch::IndexOptions {
        dimensions: dim,
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::I8,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: 1,
        multi: false,
    };
    let index = usearch::Index::new(&options).unwrap();
    index.reserve_capacity_and_threads(n, THREADS).unwrap();
    let t = Instant::now();
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            let (index, rows) = (&index, &rows);
            s.spawn(move || {
                for i in (thread..n).step_by(THREADS) {
                    index
                        .add(i as u64, &quantize(&rows[i * dim..(i + 1) * dim]))
                        .unwrap();
                }
            });
        }
    });
    let build = t.elapsed().as_secs_f64();
    let bytes = index.serialized_length() as u64;
    let quantized: Vec<Vec<i8>> = queries.iter().map(|q| quantize(q)).collect();
    evaluate(
        "usearch 2.26.6 (int8, cosine)",
        build,
        bytes,
        &truth,
        n,
        |i, expansion| {
            let found = index.search(&quantized[i], expansion.max(DEPTH)).unwrap();
            found.keys.into_iter().take(DEPTH).collect()
        },
    );
    drop(index);

    // hnsw_rs, f32 by cosine (its inner-product distance asserts 1 - dot >= 0, which rounding breaks for duplicates).
    let pool = rayon_threads();
    let hnsw = hnsw_rs::hnsw::Hnsw::<f32, anndists::dist::DistCosine>::new(
        CONNECTIVITY,
        n,
        16,
        EXPANSION_ADD,
        anndists::dist::DistCosine {},
    );
    let data: Vec<(&[f32], usize)> = rows
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, r)| (r, i))
        .collect();
    let t = Instant::now();
    pool.install(|| hnsw.parallel_insert_slice(&data));
    let build = t.elapsed().as_secs_f64();
    // Its memory: the vectors (f32) and the neighbour lists (about 2 x 16 ids of 8 bytes on the base layer).
    let bytes = (n * (4 * dim + 2 * CONNECTIVITY * 8)) as u64;
    evaluate(
        "hnsw_rs 0.3.5 (f32, cosine)",
        build,
        bytes,
        &truth,
        n,
        |i, expansion| {
            let found = hnsw.search(&queries[i], DEPTH, expansion.max(DEPTH));
            found.into_iter().map(|x| x.d_id as u64).collect()
        },
    );
}

fn rayon_threads() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .unwrap()
}
