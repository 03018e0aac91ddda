//! `ansel quantize`: converts a cross-encoder model directory into an ONNX model directory
//! (int8 dynamic quantization, or fp32) scored through ONNX Runtime (crates/ansel-onnx).

use ansel_onnx::Precision;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
enum PrecisionArg {
    Int8,
    Fp32,
}

#[derive(Args)]
pub struct QuantizeArgs {
    /// Cross-encoder model directory (or the name of one in the models folders), or a Hugging
    /// Face cross-encoder directory (config.json, tokenizer.json, model.safetensors).
    #[arg(long)]
    model: String,
    /// Output model directory (replaced atomically).
    #[arg(long)]
    out: PathBuf,
    /// int8: dense weights int8 per output channel, activations quantized at run time;
    /// fp32: the same graph in float32 (a reference within ONNX Runtime).
    #[arg(long, value_enum, default_value = "int8")]
    precision: PrecisionArg,
    /// Name recorded in the new card (default: the output folder's name).
    #[arg(long)]
    name: Option<String>,
}

pub fn run(args: QuantizeArgs) -> Result<()> {
    // A Hugging Face cross-encoder directory has no card to find it by.
    let src = if ansel_bert::is_uncarded_hf_dir(Path::new(&args.model)) {
        PathBuf::from(&args.model)
    } else {
        ansel::models::model_dir(&args.model)?
    };
    let src = src.canonicalize().unwrap_or(src);
    let precision = match args.precision {
        PrecisionArg::Int8 => Precision::Int8,
        PrecisionArg::Fp32 => Precision::Fp32,
    };
    let name = args.name.clone().unwrap_or_else(|| {
        args.out
            .file_name()
            .map_or("onnx".into(), |n| n.to_string_lossy().into_owned())
    });
    let started = std::time::Instant::now();
    let card = ansel_onnx::convert(&src, &args.out, precision, &name)
        .with_context(|| format!("cannot convert {}", src.display()))?;
    let bytes = std::fs::metadata(args.out.join(ansel_onnx::ONNX_FILE))
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!(
        "wrote {} ({}, {:.1} MB model.onnx) in {:.1} s; score it with `ansel eval --model {}`",
        args.out.display(),
        card.config["precision"].as_str().unwrap_or("?"),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(())
}
