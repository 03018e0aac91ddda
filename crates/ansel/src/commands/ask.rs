use super::cascade::CascadeArgs;
use ansel::calibration::Judged;
use ansel_answer::{Answers, Ask};
use anyhow::Result;
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
    /// Answers whose span the reader marks, best first (each costs about 5 ms).
    #[arg(long, default_value_t = ansel_answer::DEFAULT_SPANS)]
    spans: usize,
    /// Do not read answer spans (as `--spans 0`).
    #[arg(long)]
    no_span: bool,
    /// A calibration of `--model` (`ansel calibrate --out`): print each reranked answer's
    /// probability, and say "no answer found" when the best one is below its threshold. By
    /// default the model directory's own `calibration.json`, if it has one; `none` turns it off.
    #[arg(long)]
    calibration: Option<std::path::PathBuf>,
    /// The question (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    question: Vec<String>,
}

pub fn run(mut args: AskArgs) -> Result<()> {
    let question = args.question.join(" ");
    if args.top == 0 {
        anyhow::bail!("--top must be at least 1");
    }
    if question.trim().is_empty() {
        anyhow::bail!(
            "the question is empty: `ansel ask --index DIR \"Who invented the Fresnel lens?\"`"
        );
    }
    if args.no_span {
        args.spans = 0;
    }
    let calibration =
        ansel::answering::calibration_for(&args.cascade.model, args.calibration.as_deref())?;
    let answerer = args.cascade.answerer()?;
    let answers = answerer.ask(&Ask {
        question,
        top_k: args.top,
        budget: args.budget_ms.map(Duration::from_millis),
        retriever: None,
        spans: args.spans,
    })?;
    if args.json {
        let mut value = serde_json::to_value(&answers)?;
        if let Some(calibration) = &calibration {
            calibration.annotate(&mut value, &answers);
        }
        println!("{}", serde_json::to_string(&value)?);
    } else {
        let judged = calibration
            .as_ref()
            .map(|c| (c.judge(&answers), c.abstain_below));
        let unit = answerer.retriever.unit().name();
        print!("{}", render(&answers, judged.as_ref(), unit));
    }
    Ok(())
}

/// Answers for a terminal: score, title, document and sentence number, then
/// the sentence between its neighbours.
fn render(answers: &Answers, judged: Option<&(Judged, f64)>, unit: &str) -> String {
    let mut out = format!("Q: {}\n", answers.question);
    let abstained = judged.is_some_and(|(j, _)| !j.answered);
    if answers.answers.is_empty() {
        out.push_str("no sentence in the index shares a word with the question\n");
    } else if let Some(span) = answers.answers[0].span.as_ref().filter(|_| !abstained) {
        out.push_str(&format!(
            "Answer: {} (span p={:.2})\n",
            span.text, span.score
        ));
    }
    if let Some((judged, threshold)) = judged.filter(|(j, _)| !j.answered) {
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
        let sentence = match &answer.span {
            // Markdown's bold marks the span inside its sentence.
            Some(span) => format!(
                "{}**{}**{}",
                &s.text[..span.start],
                span.text,
                &s.text[span.end..]
            ),
            None => s.text.clone(),
        };
        out.push_str(&format!("  >> {sentence}\n"));
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
