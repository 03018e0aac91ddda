//! trec_eval files. A run line is `qid Q0 docid rank score tag`; a qrels line
//! is `qid 0 docid relevance`. Question and candidate ids are ansel's ids.

use crate::metrics::rank_order;
use ansel_data::{Candidate, Question};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum TrecError {
    #[error("{path}:{line}: field `{field}`: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        field: &'static str,
        message: String,
    },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Writes one run line per candidate, in ansel's rank order (ties against the model).
pub fn write_run<W: Write>(
    mut out: W,
    questions: &[Question],
    scores: &[Vec<f32>],
    tag: &str,
) -> io::Result<()> {
    for (q, scores) in questions.iter().zip(scores) {
        for (rank, i) in rank_order(scores, &q.labels()).into_iter().enumerate() {
            writeln!(
                out,
                "{} Q0 {} {} {} {}",
                q.id,
                q.candidates[i].id,
                rank + 1,
                scores[i],
                tag
            )?;
        }
    }
    Ok(())
}

/// Writes the labelled candidates as qrels (relevance 0 or 1).
pub fn write_qrels<W: Write>(mut out: W, questions: &[Question]) -> io::Result<()> {
    for q in questions {
        for c in &q.candidates {
            if let Some(label) = c.label {
                writeln!(out, "{} 0 {} {}", q.id, c.id, u8::from(label))?;
            }
        }
    }
    Ok(())
}

/// qid -> docid -> relevance.
pub type Qrels = BTreeMap<String, BTreeMap<String, u32>>;
/// qid -> docid -> score.
pub type Run = BTreeMap<String, BTreeMap<String, f32>>;

pub fn read_qrels(path: &Path) -> Result<Qrels, TrecError> {
    let mut qrels = Qrels::new();
    for (line, fields) in records(path, 4)? {
        let rel = fields[3]
            .parse::<u32>()
            .map_err(|e| malformed(path, line, "relevance", e.to_string()))?;
        qrels
            .entry(fields[0].clone())
            .or_default()
            .insert(fields[2].clone(), rel);
    }
    Ok(qrels)
}

pub fn read_run(path: &Path) -> Result<Run, TrecError> {
    let mut run = Run::new();
    for (line, fields) in records(path, 6)? {
        let score = fields[4]
            .parse::<f32>()
            .map_err(|e| malformed(path, line, "score", e.to_string()))?;
        fields[3]
            .parse::<usize>()
            .map_err(|e| malformed(path, line, "rank", e.to_string()))?;
        run.entry(fields[0].clone())
            .or_default()
            .insert(fields[2].clone(), score);
    }
    Ok(run)
}

/// Joins a run with qrels into questions and scores that [`crate::evaluate`]
/// takes. Judged candidates the run did not retrieve get a NaN score, so they
/// rank last; unjudged retrieved candidates count as negatives.
pub fn join(qrels: &Qrels, run: &Run) -> (Vec<Question>, Vec<Vec<f32>>) {
    let empty = BTreeMap::new();
    qrels
        .iter()
        .map(|(qid, judged)| {
            let retrieved = run.get(qid).unwrap_or(&empty);
            let mut ids: Vec<&String> = judged.keys().chain(retrieved.keys()).collect();
            ids.sort();
            ids.dedup();
            let candidates = ids
                .iter()
                .map(|id| Candidate {
                    id: (*id).clone(),
                    text: String::new(),
                    label: Some(judged.get(*id).is_some_and(|&r| r > 0)),
                    context: None,
                })
                .collect();
            let scores = ids
                .iter()
                .map(|id| retrieved.get(*id).copied().unwrap_or(f32::NAN))
                .collect();
            (
                Question {
                    id: qid.clone(),
                    text: String::new(),
                    candidates,
                },
                scores,
            )
        })
        .unzip()
}

fn malformed(path: &Path, line: usize, field: &'static str, message: String) -> TrecError {
    TrecError::Malformed {
        path: path.to_path_buf(),
        line,
        field,
        message,
    }
}

/// Whitespace-separated records with exactly `columns` fields, with line numbers; a file whose
/// name ends in `.gz` is gunzipped first.
pub(crate) fn records(path: &Path, columns: usize) -> Result<Vec<(usize, Vec<String>)>, TrecError> {
    let io_err = |source| TrecError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut text = std::fs::read(path).map_err(io_err)?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut plain = Vec::new();
        io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(&text[..]),
            &mut plain,
        )
        .map_err(io_err)?;
        text = plain;
    }
    let mut out = Vec::new();
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = std::str::from_utf8(raw)
            .map_err(|e| malformed(path, i + 1, "line", format!("invalid UTF-8: {e}")))?;
        let fields: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if fields.is_empty() {
            continue;
        }
        if fields.len() != columns {
            return Err(malformed(
                path,
                i + 1,
                "line",
                format!("expected {columns} fields, found {}", fields.len()),
            ));
        }
        out.push((i + 1, fields));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{evaluate, Filter};

    fn question() -> Question {
        let cand = |id: &str, label| Candidate {
            id: id.into(),
            text: "t".into(),
            label: Some(label),
            context: None,
        };
        Question {
            id: "q7".into(),
            text: "?".into(),
            candidates: vec![cand("a", false), cand("b", true), cand("c", false)],
        }
    }

    #[test]
    fn written_run_and_qrels_read_back_to_the_same_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let qs = vec![question()];
        let scores = vec![vec![0.5, 0.25, 0.75]];
        let (run_path, qrels_path) = (dir.path().join("run"), dir.path().join("qrels"));
        write_run(
            std::fs::File::create(&run_path).unwrap(),
            &qs,
            &scores,
            "test",
        )
        .unwrap();
        write_qrels(std::fs::File::create(&qrels_path).unwrap(), &qs).unwrap();
        let run_text = std::fs::read_to_string(&run_path).unwrap();
        assert_eq!(run_text.lines().next(), Some("q7 Q0 c 1 0.75 test"));
        let (joined, joined_scores) = join(
            &read_qrels(&qrels_path).unwrap(),
            &read_run(&run_path).unwrap(),
        );
        let direct = evaluate(&qs, &scores, Filter::Answered);
        let from_files = evaluate(&joined, &joined_scores, Filter::Answered);
        assert_eq!(direct.named_metrics(), from_files.named_metrics());
        assert!((direct.metric("MAP").unwrap() - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn unretrieved_judged_candidates_rank_last() {
        let mut qrels = Qrels::new();
        qrels
            .entry("q".into())
            .or_default()
            .extend([("a".to_string(), 1), ("b".to_string(), 0)]);
        let mut run = Run::new();
        run.entry("q".into()).or_default().insert("b".into(), 1.0);
        let (qs, scores) = join(&qrels, &run);
        assert_eq!(
            evaluate(&qs, &scores, Filter::Answered).metric("MRR"),
            Some(0.5)
        );
    }

    #[test]
    fn gzipped_files_read_like_plain_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.run.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(b"q Q0 a 1 0.5 t\n").unwrap();
        gz.finish().unwrap();
        assert_eq!(read_run(&path).unwrap()["q"]["a"], 0.5);
        std::fs::write(&path, b"not gzip").unwrap();
        assert!(read_run(&path).is_err());
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qrels");
        std::fs::write(&path, "q 0 a 1\n\nq 0 b x\n").unwrap();
        let err = read_qrels(&path).unwrap_err().to_string();
        assert!(
            err.ends_with(":3: field `relevance`: invalid digit found in string"),
            "{err}"
        );
        std::fs::write(&path, "q Q0 a 1\n").unwrap();
        let err = read_run(&path).unwrap_err().to_string();
        assert!(
            err.contains(":1: field `line`: expected 6 fields, found 4"),
            "{err}"
        );
    }
}
