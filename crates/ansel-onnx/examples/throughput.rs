//! ONNX Runtime peer of bench/throughput.sh: reads what ansel-bert's throughput example wrote
//! (the HF model directory with the benchmark's exact weights and the exact [32, len] batches
//! with ansel's tch logits), converts those weights to fp32 and int8 ONNX graphs (the same
//! writer as `ansel quantize`), and times tch, ort fp32 and ort int8 batch by batch in turn in
//! this one process (2 threads each), so the three see the same machine load. Writes ort.json.
//!
//! cargo run --release -p ansel-onnx --example throughput -- WORK_DIR [ITERS]

use ansel_bert::{read_model_dir, Batch, Encoded};
use ansel_onnx::{onnx_bytes, open_session, run_arrays, Precision};
use ansel_torch::tch;
use std::path::Path;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn flat(rows: &serde_json::Value) -> Vec<i64> {
    rows.as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r.as_array().cloned().unwrap_or_default())
        .map(|v| v.as_i64().unwrap_or(0))
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() as f64)
        .fold(0.0, f64::max)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        return Err("usage: throughput WORK_DIR [ITERS]".into());
    }
    let work = Path::new(&args[1]);
    let iters: usize = args.get(2).map_or(Ok(20), |s| s.parse())?;
    let threads = 2;
    ansel_torch::init(threads, 1234);
    let ansel: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("ansel.json"))?)?;
    let (model, tokenizer, _) = read_model_dir(&work.join("model"))?;
    let library = ansel_onnx::runtime_library()?;
    let mut sessions = Vec::new();
    for precision in [Precision::Fp32, Precision::Int8] {
        let path = work.join(format!("ort-{precision:?}.onnx").to_lowercase());
        std::fs::write(&path, onnx_bytes(&model, precision)?)?;
        let t = Instant::now();
        let session = open_session(&path, threads)?;
        eprintln!(
            "{precision:?}: session ready in {:.2} s",
            t.elapsed().as_secs_f64()
        );
        sessions.push((precision, session));
    }
    let mut report = serde_json::json!({
        "stack": format!("ort 2.0.0-rc.15 + ONNX Runtime from {}", library.display()),
        "threads": threads, "iters": iters,
        "loadavg_start": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    });
    for key in ["len64", "len128"] {
        let b = &ansel[key];
        let ids = flat(&b["ids"]);
        let types = flat(&b["types"]);
        let mask = flat(&b["mask"]);
        let n = b["ids"].as_array().map_or(0, |r| r.len());
        let len = ids.len() / n.max(1);
        let reference: Vec<f32> = b["logits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| v.as_f64().unwrap_or(f64::NAN) as f32)
            .collect();
        // The tch batch, rebuilt from the same ids.
        let items: Vec<Encoded> = (0..n)
            .map(|r| {
                let real = mask[r * len..(r + 1) * len]
                    .iter()
                    .filter(|&&m| m == 1)
                    .count();
                let real = real.max(1);
                Encoded {
                    ids: ids[r * len..r * len + real].to_vec(),
                    types: types[r * len..r * len + real].to_vec(),
                }
            })
            .collect();
        let refs: Vec<&Encoded> = items.iter().collect();
        let batch = Batch::padded_to(&refs, tokenizer.pad, len);
        let mut times = vec![Vec::new(); 1 + sessions.len()];
        let mut logits = vec![Vec::new(); 1 + sessions.len()];
        for i in 0..iters + 3 {
            let t = Instant::now();
            let l = tch::no_grad(|| model.logits(&batch, false));
            let l = Vec::<f32>::try_from(&l)?;
            if i >= 3 {
                times[0].push(t.elapsed().as_secs_f64() * 1e3);
            }
            logits[0] = l;
            for (s, (_, session)) in sessions.iter_mut().enumerate() {
                let t = Instant::now();
                let l = run_arrays(session, n, len, ids.clone(), types.clone(), mask.clone())?;
                if i >= 3 {
                    times[s + 1].push(t.elapsed().as_secs_f64() * 1e3);
                }
                logits[s + 1] = l;
            }
        }
        let names = ["tch", "ort_fp32", "ort_int8"];
        let mut entry = serde_json::json!({});
        for (k, name) in names.iter().enumerate() {
            let ms = median(times[k].clone());
            entry[name] = serde_json::json!({
                "forward_ms_median": ms,
                "pairs_per_s": n as f64 * 1e3 / ms,
                "logits_max_abs_diff_vs_ansel_json": max_abs_diff(&logits[k], &reference),
            });
            eprintln!(
                "{key} {name}: {ms:.1} ms/batch = {:.1} pairs/s",
                n as f64 * 1e3 / ms
            );
        }
        report[key] = entry;
    }
    report["loadavg_end"] = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .into();
    std::fs::write(work.join("ort.json"), serde_json::to_vec_pretty(&report)?)?;
    Ok(())
}
