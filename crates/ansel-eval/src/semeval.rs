//! SemEval-2016 Task 3's official scores and run files.
//!
//! The task's scorer (`ev.py` with `metrics.py`, as shipped with the 2016 submissions) differs
//! from the AS2 metrics of [`crate::evaluate`] in four ways, all kept here:
//! - only the top 10 of each ranking count;
//! - a question's average precision divides by the positives *found in the top 10*, not by all
//!   its positives (a positive ranked 11th or lower costs nothing but its absence);
//! - every question counts, and one whose top 10 holds no positive (one without any positive
//!   included) scores 0 in MAP and MRR;
//! - candidates are sorted by score with a stable sort, so ties keep the file's order (the
//!   order of the gold file, which is the XML's) rather than going against the model.
//!
//! `AvgRec` is the scorer's mean over k = 1..10 of (positives in the top k, summed over
//! questions) / (sum over questions of min(k, the question's positives)).
//!
//! A run line is `Question_ID <TAB> Answer_ID <TAB> RANK <TAB> SCORE <TAB> LABEL`, one per
//! candidate in the file's order; the scorer reads only the score (and the label for its
//! classification lines).

use crate::trec::{records, TrecError};
use ansel_data::{Candidate, Question};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

/// The scorer's cut-off: rankings are scored on their first 10 candidates.
pub const SEMEVAL_CUTOFF: usize = 10;

/// The official ranking scores, as fractions (the scorer prints MAP and MRR times 100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SemEvalScores {
    pub map: f64,
    pub mrr: f64,
    pub avg_rec: f64,
    /// Questions averaged over: all of them.
    pub questions: usize,
}

/// Candidate indices as the scorer ranks them: score descending, ties in list order, NaN last.
pub fn official_order(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // `sort_by` is stable: equal scores keep their order in the list.
    order.sort_by(|&a, &b| descending(scores[a], scores[b]));
    order
}

fn descending(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => b.partial_cmp(&a).unwrap_or(Ordering::Equal),
    }
}

/// The official MAP, MRR and AvgRec of `scores` (one list per question, one score per
/// candidate) over every question.
///
/// # Panics
/// If the number of score lists or of scores in a list does not match the questions.
pub fn semeval_scores(questions: &[Question], scores: &[Vec<f32>]) -> SemEvalScores {
    assert_eq!(questions.len(), scores.len(), "one score list per question");
    let th = SEMEVAL_CUTOFF;
    let (mut map, mut mrr) = (0.0, 0.0);
    let mut found_at = [0.0f64; SEMEVAL_CUTOFF];
    let mut possible_at = [0.0f64; SEMEVAL_CUTOFF];
    for (question, scores) in questions.iter().zip(scores) {
        let labels = question.labels();
        assert_eq!(labels.len(), scores.len(), "one score per candidate");
        let ranked: Vec<bool> = official_order(scores)
            .into_iter()
            .map(|i| labels[i])
            .collect();
        let mut precisions = Vec::new();
        for (i, &relevant) in ranked.iter().take(th).enumerate() {
            if relevant {
                precisions.push((precisions.len() + 1) as f64 / (i + 1) as f64);
                found_at[i] += 1.0;
            }
        }
        if !precisions.is_empty() {
            map += precisions.iter().sum::<f64>() / precisions.len() as f64;
        }
        if let Some(first) = ranked.iter().take(th).position(|&r| r) {
            mrr += 1.0 / (first + 1) as f64;
        }
        let positives = labels.iter().filter(|&&l| l).count() as f64;
        for (k, possible) in possible_at.iter_mut().enumerate() {
            *possible += positives.min((k + 1) as f64);
        }
    }
    for k in 1..th {
        found_at[k] += found_at[k - 1];
    }
    let n = questions.len();
    let mean = |total: f64| if n == 0 { 0.0 } else { total / n as f64 };
    let avg_rec = found_at
        .iter()
        .zip(possible_at)
        .map(|(&found, possible)| {
            if possible > 0.0 {
                found / possible
            } else {
                0.0
            }
        })
        .sum::<f64>()
        / th as f64;
    SemEvalScores {
        map: mean(map),
        mrr: mean(mrr),
        avg_rec,
        questions: n,
    }
}

/// Writes a SemEval run (`.pred`): one line per candidate in list order with the model's rank
/// (1 = best, ties in list order) and score; the label is `true` for a positive score (a
/// cross-encoder's logit above 0; lexical scores, never negative, label every candidate with
/// any overlap), which only the scorer's classification lines read.
pub fn write_semeval_run<W: Write>(
    mut out: W,
    questions: &[Question],
    scores: &[Vec<f32>],
) -> io::Result<()> {
    for (q, scores) in questions.iter().zip(scores) {
        let mut rank = vec![0; scores.len()];
        for (r, i) in official_order(scores).into_iter().enumerate() {
            rank[i] = r + 1;
        }
        for (i, c) in q.candidates.iter().enumerate() {
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}",
                q.id,
                c.id,
                rank[i],
                scores[i],
                scores[i] > 0.0
            )?;
        }
    }
    Ok(())
}

/// Writes the gold file (`.relevancy`) of labelled questions: the search engine's rank (the
/// candidate's document position + 1, else its place in the list) and 1/rank as the IR score,
/// then `true` or `false`.
pub fn write_semeval_gold<W: Write>(mut out: W, questions: &[Question]) -> io::Result<()> {
    for q in questions {
        for (i, c) in q.candidates.iter().enumerate() {
            let rank = c.context.as_ref().map_or(i, |ctx| ctx.position) + 1;
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}",
                q.id,
                c.id,
                rank,
                1.0 / rank as f64,
                c.label == Some(true)
            )?;
        }
    }
    Ok(())
}

/// One line of a SemEval gold (`.relevancy`) or run (`.pred`) file.
#[derive(Debug, Clone, PartialEq)]
pub struct SemEvalLine {
    /// 1-based line number in the file.
    pub line: usize,
    pub qid: String,
    pub aid: String,
    pub score: f32,
    pub label: bool,
}

/// Reads a gold or run file: `Question_ID Answer_ID RANK SCORE LABEL` per line (tabs or
/// spaces; a `.gz` name is gunzipped); an error names the file, line and field.
pub fn read_semeval_file(path: &Path) -> Result<Vec<SemEvalLine>, TrecError> {
    records(path, 5)?
        .into_iter()
        .map(|(line, f)| {
            let bad = |field: &'static str, message: String| TrecError::Malformed {
                path: path.to_path_buf(),
                line,
                field,
                message,
            };
            let score = f[3]
                .parse::<f32>()
                .map_err(|e| bad("score", format!("{e}: {:?}", f[3])))?;
            let label = match f[4].as_str() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(bad(
                        "label",
                        format!("expected true or false, found {other:?}"),
                    ))
                }
            };
            Ok(SemEvalLine {
                line,
                qid: f[0].clone(),
                aid: f[1].clone(),
                score,
                label,
            })
        })
        .collect()
}

/// Joins a gold file with a run as the scorer does, line by line (the two must list the same
/// question and answer ids in the same order), into questions labelled by the gold file and
/// the run's scores, grouped by question in order of first appearance. Without a run, the gold
/// file's own scores (the search engine's, SemEval's IR baseline) are scored.
pub fn join_semeval(
    gold_path: &Path,
    gold: &[SemEvalLine],
    run: Option<(&Path, &[SemEvalLine])>,
) -> Result<(Vec<Question>, Vec<Vec<f32>>), TrecError> {
    if let Some((run_path, run)) = run {
        if run.len() != gold.len() {
            let line = run.get(gold.len()).or(run.last()).map_or(1, |l| l.line);
            return Err(TrecError::Malformed {
                path: run_path.to_path_buf(),
                line,
                field: "line",
                message: format!(
                    "{} lines, but {} has {}: a run scores every gold line",
                    run.len(),
                    gold_path.display(),
                    gold.len()
                ),
            });
        }
        for (g, r) in gold.iter().zip(run) {
            if (g.qid.as_str(), g.aid.as_str()) != (r.qid.as_str(), r.aid.as_str()) {
                return Err(TrecError::Malformed {
                    path: run_path.to_path_buf(),
                    line: r.line,
                    field: "Answer_ID",
                    message: format!(
                        "({}, {}) where {} line {} has ({}, {}): a run lists the gold file's ids in its order",
                        r.qid,
                        r.aid,
                        gold_path.display(),
                        g.line,
                        g.qid,
                        g.aid
                    ),
                });
            }
        }
    }
    let scores_of = run.map_or(gold, |(_, r)| r);
    let mut questions: Vec<Question> = Vec::new();
    let mut scores: Vec<Vec<f32>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (g, s) in gold.iter().zip(scores_of) {
        let slot = *index.entry(g.qid.as_str()).or_insert_with(|| {
            questions.push(Question {
                id: g.qid.clone(),
                text: String::new(),
                candidates: Vec::new(),
            });
            scores.push(Vec::new());
            questions.len() - 1
        });
        questions[slot].candidates.push(Candidate {
            id: g.aid.clone(),
            text: String::new(),
            label: Some(g.label),
            context: None,
        });
        scores[slot].push(s.score);
    }
    Ok((questions, scores))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::question;

    /// Scores that rank the candidates in list order.
    fn descending_scores(n: usize) -> Vec<f32> {
        (0..n).map(|i| (n - i) as f32).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn hand_computed_example() {
        // Q1: positives at ranks 2 and 4 of 5: AP = (1/2 + 2/4) / 2 = 0.5, RR = 1/2.
        // Q2: 12 candidates, positives at ranks 1 and 11: only rank 1 is in the top 10, so
        //     AP = 1/1 / 1 = 1 (the 11th costs nothing), RR = 1.
        // Q3: no positive: AP = RR = 0, and it still counts.
        // Q4: its only positive at rank 11: AP = RR = 0.
        let mut q2 = vec![false; 12];
        q2[0] = true;
        q2[10] = true;
        let mut q4 = vec![false; 11];
        q4[10] = true;
        let qs = vec![
            question("Q1", &[false, true, false, true, false]),
            question("Q2", &q2),
            question("Q3", &[false, false]),
            question("Q4", &q4),
        ];
        let scores: Vec<Vec<f32>> = qs
            .iter()
            .map(|q| descending_scores(q.candidates.len()))
            .collect();
        let s = semeval_scores(&qs, &scores);
        assert_eq!(s.questions, 4);
        assert!(close(s.map, (0.5 + 1.0 + 0.0 + 0.0) / 4.0), "{}", s.map);
        assert!(close(s.mrr, (0.5 + 1.0 + 0.0 + 0.0) / 4.0), "{}", s.mrr);
        // AvgRec: found in top k (cumulative, all questions) over sum of min(k, positives)
        // (positives: 2, 2, 0, 1).
        let found = |k: usize| -> f64 {
            let q1 = [2, 4].iter().filter(|&&r| r <= k).count();
            (q1 + 1) as f64 // Q2's rank-1 positive; Q4's is beyond 10
        };
        let possible = |k: usize| -> f64 { (2.min(k) + 2.min(k) + 1.min(k)) as f64 };
        let expected = (1..=10).map(|k| found(k) / possible(k)).sum::<f64>() / 10.0;
        assert!(close(s.avg_rec, expected), "{} vs {expected}", s.avg_rec);
    }

    #[test]
    fn differs_from_full_list_map_exactly_where_the_definitions_do() {
        // Full-list AP of Q2 above would be (1 + 2/11) / 2; the official one is 1.
        let mut labels = vec![false; 12];
        labels[0] = true;
        labels[10] = true;
        let qs = vec![question("Q", &labels)];
        let scores = vec![descending_scores(12)];
        let official = semeval_scores(&qs, &scores).map;
        let full = crate::evaluate(&qs, &scores, crate::Filter::Answered)
            .metric("MAP")
            .unwrap();
        assert!(close(official, 1.0));
        assert!(close(full, (1.0 + 2.0 / 11.0) / 2.0));
    }

    #[test]
    fn ties_keep_list_order() {
        // All tied: the scorer keeps file order, so a first-listed positive ranks first
        // (ansel's own metrics would rank it last).
        let qs = vec![question("Q", &[true, false, false])];
        let s = semeval_scores(&qs, &[vec![0.0, 0.0, 0.0]]);
        assert_eq!((s.map, s.mrr), (1.0, 1.0));
        let qs = vec![question("Q", &[false, false, true])];
        let s = semeval_scores(&qs, &[vec![0.0, 0.0, 0.0]]);
        assert!(close(s.map, 1.0 / 3.0));
        assert_eq!(official_order(&[1.0, f32::NAN, 2.0, 1.0]), [2, 0, 3, 1]);
    }

    #[test]
    fn run_and_gold_lines() {
        let mut q = question("Q7", &[false, true]);
        q.candidates[1].context = Some(ansel_data::DocContext {
            doc_id: "d".into(),
            position: 3,
            ..Default::default()
        });
        let mut run = Vec::new();
        write_semeval_run(&mut run, std::slice::from_ref(&q), &[vec![-0.5, 2.0]]).unwrap();
        assert_eq!(
            String::from_utf8(run).unwrap(),
            "Q7\tQ7_C1\t2\t-0.5\tfalse\nQ7\tQ7_C2\t1\t2\ttrue\n"
        );
        let mut gold = Vec::new();
        write_semeval_gold(&mut gold, &[q]).unwrap();
        assert_eq!(
            String::from_utf8(gold).unwrap(),
            "Q7\tQ7_C1\t1\t1\tfalse\nQ7\tQ7_C2\t4\t0.25\ttrue\n"
        );
    }

    #[test]
    fn gold_and_run_files_join_line_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let gold_path = dir.path().join("g.relevancy");
        let run_path = dir.path().join("r.pred");
        // The search engine ranks the positive last; the run ranks it first.
        std::fs::write(
            &gold_path,
            "Q1\tQ1_C1\t1\t1.0\tfalse\nQ1\tQ1_C2\t2\t0.5\ttrue\nQ2\tQ2_C1\t1\t1.0\tfalse\n",
        )
        .unwrap();
        std::fs::write(
            &run_path,
            "Q1 Q1_C1 0 0.1 false\nQ1 Q1_C2 0 0.9 true\nQ2 Q2_C1 0 3 true\n",
        )
        .unwrap();
        let gold = read_semeval_file(&gold_path).unwrap();
        let run = read_semeval_file(&run_path).unwrap();
        let (qs, scores) = join_semeval(&gold_path, &gold, None).unwrap();
        assert_eq!(qs.len(), 2);
        assert!(close(semeval_scores(&qs, &scores).map, 0.5 / 2.0));
        let (qs, scores) = join_semeval(&gold_path, &gold, Some((&run_path, &run))).unwrap();
        assert!(close(semeval_scores(&qs, &scores).map, 1.0 / 2.0));
        // A run out of the gold file's order is refused, naming its line.
        let swapped = [run[1].clone(), run[0].clone(), run[2].clone()];
        let err = join_semeval(&gold_path, &gold, Some((&run_path, &swapped))).unwrap_err();
        assert!(
            err.to_string().contains("r.pred:2: field `Answer_ID`"),
            "{err}"
        );
        std::fs::write(&run_path, "Q1 Q1_C1 0 0.1 maybe\n").unwrap();
        let err = read_semeval_file(&run_path).unwrap_err().to_string();
        assert!(
            err.contains("r.pred:1: field `label`: expected true or false"),
            "{err}"
        );
    }

    #[test]
    fn empty_input_scores_zero() {
        let s = semeval_scores(&[], &[]);
        assert_eq!((s.map, s.mrr, s.avg_rec, s.questions), (0.0, 0.0, 0.0, 0));
    }
}
