use super::cascade::CascadeArgs;
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
    /// The question (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    question: Vec<String>,
}

pub fn run(args: AskArgs) -> Result<()> {
    let answerer = args.cascade.answerer()?;
    let answers = answerer.ask(&Ask {
        question: args.question.join(" "),
        top_k: args.top,
        budget: args.budget_ms.map(Duration::from_millis),
    })?;
    if args.json {
        println!("{}", serde_json::to_string(&answers)?);
    } else {
        print!("{}", render(&answers));
    }
    Ok(())
}

/// Answers for a terminal: score, title, document and sentence number, then
/// the sentence between its neighbours.
fn render(answers: &Answers) -> String {
    let mut out = format!("Q: {}\n", answers.question);
    if answers.answers.is_empty() {
        out.push_str("no sentence in the index shares a word with the question\n");
    }
    for (rank, answer) in answers.answers.iter().enumerate() {
        let s = &answer.sentence;
        out.push_str(&format!(
            "\n{}. [{:.3}] {} ({}, sentence {})\n",
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
        if let Some(next) = &s.next {
            out.push_str(&format!("     {next}\n"));
        }
    }
    out.push_str(&format!(
        "\n({} sentences retrieved, {} reranked, {:.1} ms)\n",
        answers.retrieved, answers.reranked, answers.elapsed_ms
    ));
    out
}
