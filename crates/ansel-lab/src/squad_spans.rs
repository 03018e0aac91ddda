//! `ansel-lab squad-spans`: SQuAD turned into span-extraction records (see
//! `ansel_reader::squad`), split by article as `squad-sent` split it (its `split.json` names
//! the dev and test articles; every other article is training).
//!
//! Each question becomes one record: its paragraph's sentences, the sentence its answers sit
//! in, their byte ranges there, and a "no span" sentence: the paragraph's sentence without any
//! answer text that shares the most words with the question (the hardest in-paragraph
//! negative, as a ranker's wrong first answer would be). Questions whose answer crosses a
//! sentence boundary of ansel's splitter are left out and counted.

use ansel_data::readers::squad;
use ansel_model::write_atomic;
use ansel_reader::squad::SpanRecord;
use anyhow::{Context, Result};
use clap::Args;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

#[derive(Args)]
pub struct SquadSpansArgs {
    /// SQuAD v1.1 JSON (.json or .json.gz).
    #[arg(long)]
    data: PathBuf,
    /// `split.json` of `ansel-lab squad-sent` (the dev and test article titles).
    #[arg(long)]
    split: PathBuf,
    /// Output folder: train.jsonl, dev.jsonl, test.jsonl.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: SquadSpansArgs) -> Result<()> {
    let split: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&args.split).with_context(|| format!("{}", args.split.display()))?,
    )
    .with_context(|| format!("{}: not JSON", args.split.display()))?;
    let titles = |name: &str| -> Result<HashSet<String>> {
        split["splits"][name]["titles"]
            .as_array()
            .with_context(|| format!("{}: no splits.{name}.titles", args.split.display()))?
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_string)
                    .context("a title is not a string")
            })
            .collect()
    };
    let (dev, test) = (titles("dev")?, titles("test")?);
    let bytes = ansel_data::read_bytes(&args.data)
        .with_context(|| format!("cannot read {}", args.data.display()))?;
    let paragraphs = squad::parse_paragraphs(&args.data, &bytes)?;
    let mut out: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    let mut skipped: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &paragraphs {
        let name = if dev.contains(&p.title) {
            "dev"
        } else if test.contains(&p.title) {
            "test"
        } else {
            "train"
        };
        let spans = ansel_text::split_sentences(&p.context);
        let sentences: Vec<String> = spans.iter().map(|s| s.text(&p.context).into()).collect();
        for q in &p.questions {
            match record(q, &spans, &sentences) {
                Some(r) => out.entry(name).or_default().push(serde_json::to_value(r)?),
                None => *skipped.entry(name).or_default() += 1,
            }
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("{}", args.out.display()))?;
    for (name, records) in &out {
        let mut bytes = Vec::new();
        for r in records {
            serde_json::to_writer(&mut bytes, r)?;
            bytes.push(b'\n');
        }
        write_atomic(&args.out.join(format!("{name}.jsonl")), &bytes)?;
        eprintln!(
            "{name}: {} records ({} questions left out: no answer inside one sentence)",
            records.len(),
            skipped.get(name).copied().unwrap_or(0)
        );
    }
    Ok(())
}

/// The record of one question: answers inside the sentence the first answer starts in.
fn record(
    q: &squad::SquadQuestion,
    spans: &[ansel_text::SentenceSpan],
    sentences: &[String],
) -> Option<SpanRecord> {
    let &(first, _) = q.answer_spans.first()?;
    let i = spans
        .iter()
        .position(|s| s.start <= first && first < s.end)?;
    let s = &spans[i];
    // Offsets into the sentence's text, which split_sentences may have trimmed.
    let answers: Vec<(usize, usize)> = q
        .answer_spans
        .iter()
        .filter(|&&(a, b)| s.start <= a && b <= s.end && a < b)
        .map(|&(a, b)| (a - s.start, b - s.start))
        .collect();
    if answers.is_empty() {
        return None;
    }
    let asked = content_words(&q.question.text);
    let lowered: Vec<String> = q.answers.iter().map(|a| a.to_lowercase()).collect();
    let negative = sentences
        .iter()
        .enumerate()
        .filter(|&(j, t)| {
            let t = t.to_lowercase();
            j != i && !lowered.iter().any(|a| t.contains(a.as_str()))
        })
        .max_by_key(|&(j, t)| {
            let shared = content_words(t).intersection(&asked).count();
            (shared, std::cmp::Reverse(j))
        })
        .map(|(j, _)| j);
    Some(SpanRecord {
        id: q.question.id.clone(),
        question: q.question.text.clone(),
        sentences: sentences.to_vec(),
        answer_sentence: i,
        answers,
        negative,
    })
}

fn content_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 3)
        .map(str::to_lowercase)
        .collect()
}
