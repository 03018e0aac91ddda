//! `ansel-lab question-pairs`: unlabelled question pairs for chapter 5's teacher-student route.
//! Every distinct text of the given sets (questions and candidates) becomes a query whose
//! candidates are the most similar other texts by BM25, as the thesis built its Qatar Living pairs
//! with Lucene. A model trained on gold pairs then labels them (`ansel-lab tk --label`).

use crate::read_questions;
use ansel_data::{Candidate, Question};
use ansel_lexical::Bm25Index;
use anyhow::{bail, Result};
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct QuestionPairsArgs {
    /// Sets whose question and candidate texts form the pool (any format `ansel eval` reads).
    #[arg(long, required = true, num_args = 1..)]
    from: Vec<PathBuf>,
    /// Sets whose texts never enter the pool (e.g. dev and tune), matched exactly.
    #[arg(long, num_args = 1..)]
    exclude: Vec<PathBuf>,
    /// Candidates per query text.
    #[arg(long, default_value_t = 10)]
    per_question: usize,
    /// Output: ansel JSON lines with unlabelled candidates.
    #[arg(long)]
    out: PathBuf,
}

/// The unlabelled lists: each pool text with its `per_question` best BM25 matches, leaving out
/// itself and the pairs `gold` already holds (in either order).
pub fn build(
    pool: &[String],
    gold: &HashSet<(String, String)>,
    per_question: usize,
) -> Vec<Question> {
    let index = Bm25Index::new(pool.iter().map(String::as_str));
    pool.iter()
        .enumerate()
        .map(|(i, text)| {
            let known = |j: usize| {
                j != i
                    && !gold.contains(&(text.clone(), pool[j].clone()))
                    && !gold.contains(&(pool[j].clone(), text.clone()))
            };
            let candidates = index
                .search(text, per_question, known)
                .into_iter()
                .map(|(j, _)| Candidate {
                    id: format!("U{i}_U{j}"),
                    text: pool[j].clone(),
                    label: None,
                    context: None,
                })
                .collect();
            Question {
                id: format!("U{i}"),
                text: text.clone(),
                candidates,
            }
        })
        .filter(|q| !q.candidates.is_empty())
        .collect()
}

pub fn run(args: QuestionPairsArgs) -> Result<()> {
    let mut excluded = HashSet::new();
    for path in &args.exclude {
        for q in read_questions(path)? {
            excluded.extend(q.candidates.into_iter().map(|c| c.text));
            excluded.insert(q.text);
        }
    }
    let mut pool = BTreeSet::new();
    let mut gold = HashSet::new();
    for path in &args.from {
        for q in read_questions(path)? {
            for c in q.candidates {
                gold.insert((q.text.clone(), c.text.clone()));
                pool.insert(c.text);
            }
            pool.insert(q.text);
        }
    }
    let pool: Vec<String> = pool.into_iter().filter(|t| !excluded.contains(t)).collect();
    if pool.len() < 2 {
        bail!(
            "{} texts in the pool: at least 2 are needed to pair",
            pool.len()
        );
    }
    let lists = build(&pool, &gold, args.per_question);
    let pairs: usize = lists.iter().map(|q| q.candidates.len()).sum();
    ansel_model::write_questions(&args.out, &lists)?;
    eprintln!(
        "{} texts in the pool ({} excluded); wrote {} questions, {pairs} pairs to {}",
        pool.len(),
        excluded.len(),
        lists.len(),
        args.out.display()
    );
    Ok(())
}
