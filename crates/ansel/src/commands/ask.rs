use super::cascade::CascadeArgs;
use ansel::calibration::Judged;
use ansel_answer::{Answers, Ask};
use anyhow::{Context, Result};
use clap::Args;
use std::time::Duration;

#[derive(Args)]
pub struct AskArgs {
    #[command(flatten)]
    cascade: CascadeArgs,
    /// Answers to print.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Time budget for ranking; past it the reranker stops and the rest keep their pruned order.
    #[arg(long)]
    budget_ms: Option<u64>,
    /// Print the answers as one JSON object.
    #[arg(long)]
    json: bool,
    /// A span extractor directory (`ansel train --model span-extractor`): print the answer
    /// span it extracts from each answer sentence (`"extracted"` in --json).
    #[arg(long)]
    extract: Option<std::path::PathBuf>,
    /// A calibration of `--model` (`ansel calibrate --out`): print each reranked answer's
    /// probability, and say "no answer found" when the best one is below its threshold. By
    /// default the model directory's own `calibration.json`, if it has one; `none` turns it off.
    #[arg(long)]
    calibration: Option<std::path::PathBuf>,
    /// The question (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    question: Vec<String>,
}

pub fn run(args: AskArgs) -> Result<()> {
    let extractor = args
        .extract
        .as_deref()
        .map(|dir| {
            ansel_reader::SpanExtractor::open(dir)
                .with_context(|| format!("cannot load --extract {}", dir.display()))
        })
        .transpose()?;
    let question = args.question.join(" ");
    if args.top == 0 {
        anyhow::bail!("--top must be at least 1");
    }
    if question.trim().is_empty() {
        anyhow::bail!(
            "the question is empty: `ansel ask --index DIR \"Who invented the Fresnel lens?\"`"
        );
    }
    let calibration =
        ansel::answering::calibration_for(&args.cascade.model, args.calibration.as_deref())?;
    let answerer = args.cascade.answerer()?;
    let answers = answerer.ask(&Ask {
        question,
        top_k: args.top,
        budget: args.budget_ms.map(Duration::from_millis),
        retriever: None,
    })?;
    let extracted = match &extractor {
        Some(model) => extract(model, &answers)?,
        None => Vec::new(),
    };
    if args.json {
        let mut value = serde_json::to_value(&answers)?;
        if let Some(list) = value.get_mut("answers").and_then(|a| a.as_array_mut()) {
            for (answer, span) in list.iter_mut().zip(&extracted) {
                answer["extracted"] = serde_json::json!(span);
            }
        }
        if let Some(calibration) = &calibration {
            calibration.annotate(&mut value, &answers);
        }
        println!("{}", serde_json::to_string(&value)?);
    } else {
        let judged = calibration
            .as_ref()
            .map(|c| (c.judge(&answers), c.abstain_below));
        let unit = answerer.index.unit().name();
        print!("{}", render(&answers, &extracted, judged.as_ref(), unit));
    }
    Ok(())
}

/// The span the extractor reads in each answer sentence, as a slice of the sentence's text.
fn extract(model: &ansel_reader::SpanExtractor, answers: &Answers) -> Result<Vec<Option<String>>> {
    let words: Vec<Vec<(usize, usize)>> = answers
        .answers
        .iter()
        .map(|a| ansel_reader::split_words(&a.sentence.text))
        .collect();
    let tokens: Vec<Vec<String>> = answers
        .answers
        .iter()
        .zip(&words)
        .map(|(a, w)| {
            w.iter()
                .map(|&(s, e)| a.sentence.text[s..e].to_string())
                .collect()
        })
        .collect();
    let items: Vec<(&str, &[String])> = tokens
        .iter()
        .map(|t| (answers.question.as_str(), t.as_slice()))
        .collect();
    let found = model.extract_all(&items, 16)?;
    Ok(found
        .into_iter()
        .zip(answers.answers.iter().zip(&words))
        .map(|(x, (a, w))| {
            let x = x?;
            Some(a.sentence.text[w[x.start].0..w[x.end - 1].1].to_string())
        })
        .collect())
}

/// Answers for a terminal: score, title, document and sentence number, then
/// the sentence between its neighbours.
fn render(
    answers: &Answers,
    extracted: &[Option<String>],
    judged: Option<&(Judged, f64)>,
    unit: &str,
) -> String {
    let mut out = format!("Q: {}\n", answers.question);
    if answers.answers.is_empty() {
        out.push_str("no sentence in the index shares a word with the question\n");
    } else if let Some((judged, threshold)) = judged.filter(|(j, _)| !j.answered) {
        let best = judged
            .probabilities
            .iter()
            .flatten()
            .fold(0.0f64, |m, &p| m.max(p));
        out.push_str(&format!(
            "no answer found: the best sentence's probability {best:.2} is below {threshold:.2}; the closest candidates:\n"
        ));
    }
    for (rank, answer) in answers.answers.iter().enumerate() {
        let s = &answer.sentence;
        let probability = judged
            .and_then(|(j, _)| j.probabilities.get(rank).copied().flatten())
            .map(|p| format!(" p={p:.2}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n{}. [{:.3}{probability}] {} ({}, {unit} {})\n",
            rank + 1,
            answer.score,
            s.title,
            s.doc_id,
            s.position + 1
        ));
        if let Some(prev) = &s.prev {
            out.push_str(&format!("     {prev}\n"));
        }
        out.push_str(&format!("  >> {}\n", s.text));
        if let Some(Some(span)) = extracted.get(rank) {
            out.push_str(&format!("     answer: {span}\n"));
        }
        if let Some(next) = &s.next {
            out.push_str(&format!("     {next}\n"));
        }
    }
    out.push_str(&format!(
        "\n({} {unit}s retrieved, {} reranked, {:.1} ms)\n",
        answers.retrieved, answers.reranked, answers.elapsed_ms
    ));
    out
}
