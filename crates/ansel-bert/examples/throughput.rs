//! Throughput and correctness peer of `bench/throughput.py`: loads a Hugging Face BERT
//! directory as a cross-encoder (seeded random head), saves those exact weights for the
//! PyTorch side, builds batches of real WikiQA pairs at fixed lengths, and times
//! tokenization and the forward pass separately.
//!
//! cargo run --release -p ansel-bert --example throughput -- BASE_DIR WIKIQA_TSV OUT_DIR [ITERS]

use ansel_bert::{Batch, BertConfig, CrossEncoder, Encoded, PairTokenizer};
use ansel_data::read_path;
use ansel_torch::tch::{self, Kind};
use std::path::Path;
use std::time::Instant;

const BATCH: usize = 32;
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near Wikipédia's headquarters.";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: throughput BASE_DIR WIKIQA_TSV OUT_DIR [ITERS]".into());
    }
    let (base, data, out) = (
        Path::new(&args[1]),
        Path::new(&args[2]),
        Path::new(&args[3]),
    );
    let iters: usize = args.get(4).map_or(Ok(20), |s| s.parse())?;
    ansel_torch::init(2, 1234);
    let config = BertConfig::read(&base.join("config.json"))?;
    let (model, _) = CrossEncoder::load(config, &base.join("model.safetensors"))?;
    let tok = PairTokenizer::read(&base.join("tokenizer.json"))?;
    let model_dir = out.join("model");
    std::fs::create_dir_all(&model_dir)?;
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(base.join(f), model_dir.join(f))?;
    }
    model.save(&model_dir.join("model.safetensors"), Kind::Float)?;

    let questions = read_path(data, None)?;
    let mut report = serde_json::json!({"threads": 2, "batch": BATCH, "iters": iters, "stack": "ansel (tch 0.26, libtorch 2.13)"});

    // Token ids of a fixed sentence and of a few pairs, and the sentence's mean-pooled
    // embedding (sentence-transformers' all-MiniLM-L6-v2 pooling, before normalisation).
    let ids = tok.encode_single(SENTENCE)?;
    let single = Encoded {
        types: vec![0; ids.len()],
        ids: ids.clone(),
    };
    let emb = tch::no_grad(|| model.mean_pooled(&Batch::new(&[&single], tok.pad)));
    report["sentence"] = SENTENCE.into();
    report["sentence_ids"] = serde_json::json!(ids);
    report["sentence_embedding"] = serde_json::json!(Vec::<f32>::try_from(emb.view([-1]))?);
    let mut pairs = Vec::new();
    for q in questions.iter().take(5) {
        let c = &q.candidates[0];
        pairs.push(serde_json::json!({"q": q.text, "c": c.text, "ids": tok.encode(&q.text, &[&c.text], 512)?.ids}));
    }
    report["pair_ids"] = serde_json::json!(pairs);

    for len in [64usize, 128] {
        // Candidates with their neighbours ("q [SEP] prev [SEP] cand [SEP] next") reach the
        // length; the 32 longest of the first 400 candidates, truncated to `len`.
        let mut texts = Vec::new();
        for q in &questions {
            for c in &q.candidates {
                let ctx = c.context.as_ref();
                let prev = ctx.and_then(|x| x.prev.clone()).unwrap_or_default();
                let next = ctx.and_then(|x| x.next.clone()).unwrap_or_default();
                texts.push((q.text.clone(), prev, c.text.clone(), next));
            }
        }
        texts.truncate(400);
        let mut encoded: Vec<(Encoded, usize)> = texts
            .iter()
            .enumerate()
            .map(|(i, (q, p, c, n))| Ok((tok.encode(q, &[p, c, n], len)?, i)))
            .collect::<Result<_, ansel_model::ModelError>>()?;
        encoded.sort_by_key(|(e, _)| std::cmp::Reverse(e.len()));
        encoded.truncate(BATCH);
        let chosen: Vec<usize> = encoded.iter().map(|(_, i)| *i).collect();
        let items: Vec<&Encoded> = encoded.iter().map(|(e, _)| e).collect();
        // Padded to exactly `len` so both stacks see [32, len].
        let real: Vec<usize> = items.iter().map(|e| e.len()).collect();
        let batch = Batch::padded_to(&items, tok.pad, len);
        // Tokenization of the same texts, timed alone.
        let mut tok_ms = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            for &i in &chosen {
                let (q, p, c, n) = &texts[i];
                std::hint::black_box(tok.encode(q, &[p, c, n], len)?);
            }
            tok_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let mut fwd_ms = Vec::new();
        let mut logits = Vec::new();
        tch::no_grad(|| {
            for i in 0..iters + 3 {
                let t = Instant::now();
                let l = model.logits(&batch, false);
                let l: Vec<f32> = Vec::<f32>::try_from(&l).unwrap_or_default();
                if i >= 3 {
                    fwd_ms.push(t.elapsed().as_secs_f64() * 1e3);
                }
                logits = l;
            }
        });
        let fwd = median(fwd_ms);
        eprintln!(
            "len {len}: forward {fwd:.1} ms/batch = {:.1} pairs/s; tokenization {:.2} ms/batch",
            BATCH as f64 * 1e3 / fwd,
            median(tok_ms.clone())
        );
        report[format!("len{len}")] = serde_json::json!({
            "ids": Vec::<Vec<i64>>::try_from(&batch.ids)?,
            "types": Vec::<Vec<i64>>::try_from(&batch.types)?,
            "mask": Vec::<Vec<i64>>::try_from(&batch.mask.to_kind(Kind::Int64))?,
            "texts": chosen.iter().map(|&i| { let (q, p, c, n) = &texts[i]; vec![q, p, c, n] }).collect::<Vec<_>>(),
            "real_tokens_mean": real.iter().sum::<usize>() as f64 / real.len() as f64,
            "logits": logits,
            "forward_ms_median": fwd,
            "pairs_per_s": BATCH as f64 * 1e3 / fwd,
            "tokenize_ms_median": median(tok_ms),
        });
    }
    std::fs::write(out.join("ansel.json"), serde_json::to_vec(&report)?)?;
    Ok(())
}
