//! `ansel-lab squad-ask`: a SQuAD-format file (the official dev set, or held-out articles of
//! one's own) as `ask` is judged end to end: its articles as documents for `ansel index`, and
//! its questions with every reference answer for `ansel eval-ask`, which counts a sentence
//! holding any reference and scores a span by its best match, as SQuAD's evaluation does.

use crate::squad_sent::{document_line, write_lines};
use ansel_data::readers::squad;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Args)]
pub struct SquadAskArgs {
    /// SQuAD v1.1 or v2.0 JSON (.json or .json.gz).
    #[arg(long)]
    data: PathBuf,
    /// Output folder: docs.jsonl (for `ansel index`) and ask.jsonl (for `ansel eval-ask`).
    #[arg(long)]
    out: PathBuf,
    /// Questions written, a seeded choice (0: every answerable question, in file order).
    #[arg(long, default_value_t = 0)]
    questions: usize,
    /// Seed of the choice of questions.
    #[arg(long, default_value_t = 13)]
    seed: u64,
}

pub fn run(args: SquadAskArgs) -> Result<()> {
    let bytes = ansel_data::read_bytes(&args.data)
        .with_context(|| format!("cannot read {}", args.data.display()))?;
    let paragraphs = squad::parse_paragraphs(&args.data, &bytes)?;
    let mut documents: BTreeMap<usize, (&str, Vec<&str>)> = BTreeMap::new();
    let (mut asks, mut unanswerable, mut several) = (Vec::new(), 0, 0);
    for p in &paragraphs {
        let doc = documents
            .entry(p.article)
            .or_insert_with(|| (&p.title, Vec::new()));
        doc.1.push(&p.context);
        for q in &p.questions {
            // Annotators often agree: each reference once, in the file's order.
            let mut answers: Vec<&str> = Vec::new();
            for a in &q.answers {
                if !a.trim().is_empty() && !answers.contains(&a.as_str()) {
                    answers.push(a);
                }
            }
            match answers.len() {
                0 => unanswerable += 1,
                n => {
                    several += usize::from(n > 1);
                    asks.push(serde_json::json!({"question": q.question.text, "answers": answers}));
                }
            }
        }
    }
    if asks.is_empty() {
        bail!("{}: no answerable question", args.data.display());
    }
    let answerable = asks.len();
    if args.questions > 0 {
        ansel_data::shuffle_seeded(&mut asks, args.seed);
        asks.truncate(args.questions);
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("{}", args.out.display()))?;
    let docs: Vec<serde_json::Value> = documents
        .values()
        .map(|(title, texts)| document_line(title, texts))
        .collect();
    write_lines(&args.out.join("docs.jsonl"), &docs)?;
    write_lines(&args.out.join("ask.jsonl"), &asks)?;
    eprintln!(
        "{}: {} articles, {} paragraphs; {answerable} answerable questions ({several} with several \
         distinct references), {unanswerable} without an answer left out; {} questions written",
        args.out.display(),
        documents.len(),
        paragraphs.len(),
        asks.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_once_and_unanswerable_questions_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("dev.json");
        std::fs::write(
            &data,
            r#"{"data": [{"title": "Eiffel_Tower", "paragraphs": [{"context": "The tower is 330 metres tall. It opened in 1889.",
              "qas": [{"id": "1", "question": "How tall is the tower?", "answers": [
                  {"text": "330 metres", "answer_start": 13}, {"text": "330 metres", "answer_start": 13},
                  {"text": "330", "answer_start": 13}]},
                {"id": "2", "question": "Who painted it?", "answers": [], "is_impossible": true}]}]},
              {"title": "Nile", "paragraphs": [{"context": "The Blue Nile starts at Lake Tana.",
              "qas": [{"id": "3", "question": "Where does the Blue Nile start?", "answers": [{"text": "Lake Tana", "answer_start": 24}]}]}]}]}"#,
        )
        .unwrap();
        let out = dir.path().join("out");
        run(SquadAskArgs {
            data,
            out: out.clone(),
            questions: 0,
            seed: 13,
        })
        .unwrap();
        let lines = |name: &str| -> Vec<serde_json::Value> {
            std::fs::read_to_string(out.join(name))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        let asks = lines("ask.jsonl");
        assert_eq!(asks.len(), 2, "{asks:?}");
        assert_eq!(asks[0]["answers"], serde_json::json!(["330 metres", "330"]));
        assert_eq!(asks[1]["answers"], serde_json::json!(["Lake Tana"]));
        let docs = lines("docs.jsonl");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["title"], "Eiffel_Tower");
        assert!(docs[1]["text"]
            .as_str()
            .unwrap()
            .contains("starts at Lake Tana"));
    }
}
