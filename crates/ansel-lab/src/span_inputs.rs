//! `ansel-lab span-inputs`: span records encoded exactly as ansel's span reader reads them
//! (`ansel_reader::input::encode_example`: the question, the sentence between its neighbours'
//! words, the selectable tokens and the gold span among them), for a trainer outside ansel
//! (`bench/span_reader_gpu.py` on a GPU). Because the layout comes from ansel itself, a model
//! trained on these inputs reads in `ask` what it was trained on.
//!
//! Writes `OUT/NAME.jsonl`, one line per example kept: `key` (the record's id, with `/no-span`
//! for its no-answer sentence), `ids`, `segment` (where token type 1 begins; `ids.len()` when
//! every token is type 0), `starts` and `ends` (input positions of each selectable token's first
//! and last piece), `token` (each selectable token's index in the sentence, which lines up
//! the logits of readers with different tokenizers), `gold` (`[start, end]` among the selectable tokens, or null: no span), and
//! `OUT/NAME.json`: the settings, the pad id, the counts.

use ansel_bert::{BertConfig, PairTokenizer};
use ansel_model::write_atomic;
use ansel_reader::input::{encode_example, SpanEncoder};
use ansel_reader::squad::read_records;
use ansel_reader::SpanSettings;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct SpanInputsArgs {
    /// A model directory whose config.json and tokenizer.json give the encoder family and
    /// tokenizer (the base the trainer starts from).
    #[arg(long)]
    base: PathBuf,
    /// Span records (`ansel-lab squad-spans`).
    #[arg(long)]
    data: PathBuf,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// File stem of the outputs (NAME.jsonl, NAME.json).
    #[arg(long)]
    name: String,
    /// Records read (the first N); 0: all.
    #[arg(long, default_value_t = 0)]
    records: usize,
    /// Leave out the records' no-answer sentences.
    #[arg(long)]
    no_negatives: bool,
    /// Word pieces per input (`ansel train --max-len`).
    #[arg(long, default_value_t = 144)]
    max_len: usize,
    /// Word pieces of the question kept.
    #[arg(long, default_value_t = 48)]
    max_question_pieces: usize,
    /// Longest answer in sentence tokens (recorded in the settings for decoding).
    #[arg(long, default_value_t = 10)]
    max_answer_tokens: usize,
    /// Words of each neighbouring sentence read on each side (`ansel train --context-words`).
    #[arg(long, default_value_t = 16)]
    context_words: usize,
}

pub fn run(args: SpanInputsArgs) -> Result<()> {
    let config = BertConfig::read(&args.base.join("config.json"))?;
    let tokenizer =
        PairTokenizer::read_for(&args.base.join("tokenizer.json"), config.family().layout())?;
    let settings = SpanSettings {
        max_len: args.max_len,
        max_question_pieces: args.max_question_pieces,
        max_answer_tokens: args.max_answer_tokens,
        context_words: args.context_words,
        no_span: true,
    };
    let encoder = SpanEncoder {
        tokenizer: &tokenizer,
        settings,
    };
    let mut records = read_records(&args.data)?;
    if args.records > 0 {
        records.truncate(args.records);
    }
    let (mut lines, mut dropped, mut no_span) = (String::new(), 0usize, 0usize);
    let mut kept = 0usize;
    for r in &records {
        let negative = r.negative.filter(|_| !args.no_negatives);
        let sentences = std::iter::once((r.answer_sentence, r.id.clone()))
            .chain(negative.map(|n| (n, format!("{}/no-span", r.id))));
        for (sentence, key) in sentences {
            let Some((input, gold)) = encode_example(&encoder, &r.example(sentence))? else {
                dropped += 1;
                continue;
            };
            let ids = &input.enc.ids;
            let segment = input.enc.types.iter().position(|&t| t == 1);
            no_span += usize::from(gold.is_none());
            kept += 1;
            let line = serde_json::json!({
                "key": key,
                "ids": ids,
                "segment": segment.unwrap_or(ids.len()),
                "starts": input.starts,
                "ends": input.ends,
                "token": input.token,
                "gold": gold.map(|(a, b)| [a, b]),
            });
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("{}", args.out.display()))?;
    let meta = serde_json::json!({
        "base": args.base, "data": args.data, "records": records.len(), "examples": kept,
        "no_span_examples": no_span, "dropped_span_cut": dropped, "pad": tokenizer.pad,
        "model_type": config.model_type, "settings": settings,
    });
    write_atomic(
        &args.out.join(format!("{}.jsonl", args.name)),
        lines.as_bytes(),
    )?;
    write_atomic(
        &args.out.join(format!("{}.json", args.name)),
        serde_json::to_string_pretty(&meta)?.as_bytes(),
    )?;
    eprintln!(
        "{kept} examples ({no_span} without a span; {dropped} dropped: span cut by --max-len) from {} records",
        records.len()
    );
    Ok(())
}
