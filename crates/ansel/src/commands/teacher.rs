//! Teacher scores for knowledge distillation (`ansel train --teacher SPEC`): every data file
//! is scored once per teacher and cached on disk as the JSON lines `ansel rank` prints (read
//! back by [`ansel_graph::ScoreCache`], as EQAG's base-score caches are).
//!
//! The cache file is `<dir>/<key>.jsonl`, `key` a fingerprint of the teacher and of the data
//! file's bytes, so a changed data file or a retrained teacher is scored afresh. A teacher
//! model is identified by its card's bytes (its recipe, seed and metrics), not its path; an
//! ONNX Runtime fp32 export (`ansel quantize --precision fp32`, whose scores equal its
//! source's) by its source's card, so the two share a cache. Beside each cache,
//! `<key>.meta.json` records the teacher, the data file and the one-off scoring time.

use ansel::models;
use ansel_data::Question;
use ansel_graph::ScoreCache;
use ansel_model::Fingerprint;
use ansel_model::{write_atomic, CARD_FILE};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A data file's teacher scores and where they came from.
#[derive(Debug)]
pub struct TeacherScores {
    /// One score per candidate, in the data's order, for every question.
    pub scores: Vec<Vec<f32>>,
    /// The cache file.
    pub path: PathBuf,
    pub key: String,
    /// Read from the cache (else scored now).
    pub cached: bool,
    /// Seconds the teacher took to score the file (when it was scored, now or earlier).
    pub scoring_seconds: f64,
}

/// Teacher scores read from score files ([`scores_from_files`]).
#[derive(Debug)]
pub struct FileScores {
    /// One score per candidate, in the data's order, for every question.
    pub scores: Vec<Vec<f32>>,
    /// The model each file records, in the files' order.
    pub models: Vec<String>,
    /// A fingerprint of each file's bytes.
    pub keys: Vec<String>,
}

/// The members of a spec: `a+b` is fused unless it names an existing path.
fn members(spec: &str) -> Vec<&str> {
    if spec.contains('+') && !Path::new(spec).exists() {
        spec.split('+').map(str::trim).collect()
    } else {
        vec![spec]
    }
}

/// What identifies a teacher's scores: per member, its model card's bytes (an fp32 ONNX
/// export's source card when that is readable), or for a built-in model its name.
fn teacher_identity(spec: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for member in members(spec) {
        out.extend_from_slice(b"member:");
        match models::model_dir(member) {
            Ok(dir) => {
                let dir = ansel_onnx::fp32_source(&dir)
                    .filter(|src| src.join(CARD_FILE).is_file())
                    .unwrap_or(dir);
                let card = dir.join(CARD_FILE);
                out.extend(std::fs::read(&card).with_context(|| {
                    format!("teacher {member}: cannot read {}", card.display())
                })?);
            }
            Err(_) => out.extend_from_slice(member.as_bytes()),
        }
    }
    Ok(out)
}

/// The cache key of `spec`'s scores of the data file `data`.
pub fn cache_key(spec: &str, data: &Path) -> Result<String> {
    let bytes =
        std::fs::read(data).with_context(|| format!("cannot read data file {}", data.display()))?;
    let mut f = Fingerprint::default();
    f.update(b"ansel-teacher-scores-v1")
        .update(&teacher_identity(spec)?)
        .update(&bytes);
    Ok(f.hex())
}

/// Each question's scores from the first of `caches` that holds it (same id and candidate
/// ids); a question in none of them, or a score that is not finite, is an error naming it.
fn lookup(
    caches: &[ScoreCache],
    data: &Path,
    questions: &[Question],
    hint: &str,
) -> Result<Vec<Vec<f32>>> {
    let files = || {
        caches
            .iter()
            .map(|c| c.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut scores = Vec::with_capacity(questions.len());
    for q in questions {
        let Some((cache, s)) = caches.iter().find_map(|c| Some((c, c.get(q)?))) else {
            bail!(
                "{}: no scores for question {:?} of {} with its {} candidates ({hint})",
                files(),
                q.id,
                data.display(),
                q.candidates.len()
            )
        };
        if let Some(bad) = s.iter().find(|v| !v.is_finite()) {
            bail!(
                "{}: question {:?}: field `scores[].score` is {bad}",
                cache.path.display(),
                q.id
            )
        }
        scores.push(s);
    }
    Ok(scores)
}

/// Teacher scores of `questions` (read from the data file `data`) precomputed in `files`, the
/// JSON lines `ansel rank` prints, e.g. each by a model that never trained on its questions
/// (out of fold). Every question must be in one of the files.
pub fn scores_from_files(
    files: &[PathBuf],
    data: &Path,
    questions: &[Question],
) -> Result<FileScores> {
    let mut caches = Vec::with_capacity(files.len());
    let mut keys = Vec::with_capacity(files.len());
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read teacher scores {}", file.display()))?;
        keys.push(Fingerprint::default().update(text.as_bytes()).hex());
        caches.push(ScoreCache::parse(file, &text)?);
    }
    let scores = lookup(
        &caches,
        data,
        questions,
        "each training question needs its teacher scores",
    )?;
    Ok(FileScores {
        scores,
        models: caches.into_iter().map(|c| c.model).collect(),
        keys,
    })
}

/// The teacher `spec`'s scores of `questions` (read from the data file `data`): from the
/// cache in `cache_dir` when it is there, else scored now and cached.
pub fn teacher_scores(
    spec: &str,
    data: &Path,
    questions: &[Question],
    cache_dir: &Path,
) -> Result<TeacherScores> {
    let key = cache_key(spec, data)?;
    let path = cache_dir.join(format!("{key}.jsonl"));
    let meta_path = cache_dir.join(format!("{key}.meta.json"));
    if path.is_file() {
        let cache = ScoreCache::read(&path)?;
        let scores = lookup(
            std::slice::from_ref(&cache),
            data,
            questions,
            "delete the file to score the data again",
        )?;
        let scoring_seconds = std::fs::read(&meta_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|m| m["scoring_seconds"].as_f64())
            .unwrap_or(f64::NAN);
        return Ok(TeacherScores {
            scores,
            path,
            key,
            cached: true,
            scoring_seconds,
        });
    }
    let teacher =
        models::resolve(spec, questions).with_context(|| format!("cannot load teacher {spec}"))?;
    let started = Instant::now();
    let scores = teacher
        .score_all(questions)
        .with_context(|| format!("teacher {spec} scoring {}", data.display()))?;
    let scoring_seconds = started.elapsed().as_secs_f64();
    if scores.len() != questions.len() {
        bail!(
            "teacher {spec} gave scores for {} of the {} questions of {}",
            scores.len(),
            questions.len(),
            data.display()
        );
    }
    let mut text = String::new();
    for (q, s) in questions.iter().zip(&scores) {
        if s.len() != q.candidates.len() || s.iter().any(|v| !v.is_finite()) {
            bail!(
                "teacher {spec}: question {:?} of {}: {} scores for {} candidates, or a score \
                 that is not a finite number",
                q.id,
                data.display(),
                s.len(),
                q.candidates.len()
            );
        }
        text.push_str(&super::rank::ranked_line(q, spec, s)?);
        text.push('\n');
    }
    std::fs::create_dir_all(cache_dir)
        .with_context(|| format!("cannot create {}", cache_dir.display()))?;
    write_atomic(&path, text.as_bytes())?;
    let meta = serde_json::json!({
        "teacher": spec, "data": data.display().to_string(), "questions": questions.len(),
        "pairs": questions.iter().map(|q| q.candidates.len()).sum::<usize>(),
        "scoring_seconds": scoring_seconds,
    });
    write_atomic(&meta_path, &serde_json::to_vec_pretty(&meta)?)?;
    Ok(TeacherScores {
        scores,
        path,
        key,
        cached: false,
        scoring_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: &str =
        "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n\
        Q1\twho wrote hamlet\tD1\tHamlet\tD1-0\tHamlet is a tragedy written by Shakespeare\t1\n\
        Q1\twho wrote hamlet\tD1\tHamlet\tD1-1\tIt is set in Denmark\t0\n\
        Q2\twhere is paris\tD2\tParis\tD2-0\tParis is the capital of France\t1\n\
        Q2\twhere is paris\tD2\tParis\tD2-1\tThe city has many museums\t0\n";

    fn write_data(dir: &Path, text: &str) -> (PathBuf, Vec<Question>) {
        let path = dir.join("data.tsv");
        std::fs::write(&path, text).unwrap();
        let questions = ansel_data::read_path(&path, None).unwrap();
        (path, questions)
    }

    #[test]
    fn cache_round_trips_and_is_invalidated_when_the_data_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let (data, questions) = write_data(dir.path(), DATA);
        let first = teacher_scores("wo", &data, &questions, &cache).unwrap();
        assert!(!first.cached);
        assert!(first.path.is_file());
        assert_eq!(first.scores.len(), 2);
        // Word overlap ranks the answers (which share words with the question) first.
        assert!(
            first.scores[0][0] > first.scores[0][1],
            "{:?}",
            first.scores
        );
        let again = teacher_scores("wo", &data, &questions, &cache).unwrap();
        assert!(again.cached);
        assert_eq!(again.key, first.key);
        assert_eq!(again.scores, first.scores);
        // The cache is what is read: edit a score there and it comes back.
        let text = std::fs::read_to_string(&first.path).unwrap();
        let edited = text.replacen("\"score\":", "\"score\":12.5,\"was\":", 1);
        std::fs::write(&first.path, edited).unwrap();
        let read = teacher_scores("wo", &data, &questions, &cache).unwrap();
        assert_eq!(read.scores[0][0], 12.5);
        // Another teacher, another cache.
        assert_ne!(cache_key("rr", &data).unwrap(), first.key);
        // A changed data file is scored afresh.
        let (data, questions) = write_data(
            dir.path(),
            &DATA.replace("It is set in Denmark", "Shakespeare wrote hamlet in 1600"),
        );
        let changed = teacher_scores("wo", &data, &questions, &cache).unwrap();
        assert!(!changed.cached);
        assert_ne!(changed.key, first.key);
        assert!(changed.scores[0][1] > first.scores[0][1]);
    }

    #[test]
    fn bad_cache_lines_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let (data, questions) = write_data(dir.path(), DATA);
        let scored = teacher_scores("wo", &data, &questions, &cache).unwrap();
        let text = std::fs::read_to_string(&scored.path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let bad_score = lines[1].replacen("\"score\":", "\"score\":\"high\",\"was\":", 1);
        std::fs::write(&scored.path, format!("{}\n{bad_score}\n", lines[0])).unwrap();
        let err = format!(
            "{:#}",
            teacher_scores("wo", &data, &questions, &cache).unwrap_err()
        );
        assert!(err.contains(&scored.path.display().to_string()), "{err}");
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("scores[0].score"), "{err}");
        let no_model = lines[0].replacen("\"model\":", "\"modell\":", 1);
        std::fs::write(&scored.path, format!("{no_model}\n")).unwrap();
        let err = format!(
            "{:#}",
            teacher_scores("wo", &data, &questions, &cache).unwrap_err()
        );
        assert!(
            err.contains("line 1") && err.contains("missing field `model`"),
            "{err}"
        );
        // A cache without one of the questions names the question.
        std::fs::write(&scored.path, format!("{}\n", lines[0])).unwrap();
        let err = format!(
            "{:#}",
            teacher_scores("wo", &data, &questions, &cache).unwrap_err()
        );
        assert!(err.contains("Q2"), "{err}");
    }

    #[test]
    fn score_files_cover_the_questions_between_them_first_file_first() {
        let dir = tempfile::tempdir().unwrap();
        let (data, questions) = write_data(dir.path(), DATA);
        let scored = teacher_scores("wo", &data, &questions, &dir.path().join("c")).unwrap();
        let text = std::fs::read_to_string(&scored.path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let [first, second, edited] =
            ["q1.jsonl", "q2.jsonl", "q1-edited.jsonl"].map(|name| dir.path().join(name));
        std::fs::write(&first, format!("{}\n", lines[0])).unwrap();
        std::fs::write(&second, format!("{}\n", lines[1])).unwrap();
        let changed = lines[0].replacen("\"score\":", "\"score\":7.5,\"was\":", 1);
        std::fs::write(&edited, format!("{changed}\n")).unwrap();

        let read = scores_from_files(&[first.clone(), second.clone()], &data, &questions).unwrap();
        assert_eq!(read.scores, scored.scores);
        assert_eq!(read.models, ["wo", "wo"]);
        assert_ne!(read.keys[0], read.keys[1]);
        // A question held by two files comes from the first.
        let read = scores_from_files(
            &[edited.clone(), first.clone(), second.clone()],
            &data,
            &questions,
        )
        .unwrap();
        assert_eq!(read.scores[0][0], 7.5);
        assert_eq!(read.scores[1], scored.scores[1]);
        let read =
            scores_from_files(&[first.clone(), edited, second.clone()], &data, &questions).unwrap();
        assert_eq!(read.scores, scored.scores);
        // A question in none of the files is an error naming it and the files.
        let err = format!(
            "{:#}",
            scores_from_files(std::slice::from_ref(&first), &data, &questions).unwrap_err()
        );
        assert!(
            err.contains("Q2") && err.contains(&first.display().to_string()),
            "{err}"
        );
        let missing = dir.path().join("missing.jsonl");
        let err = format!(
            "{:#}",
            scores_from_files(std::slice::from_ref(&missing), &data, &questions).unwrap_err()
        );
        assert!(err.contains(&missing.display().to_string()), "{err}");
    }

    #[test]
    fn a_teacher_that_is_not_a_model_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (data, questions) = write_data(dir.path(), DATA);
        let teacher = dir.path().join("teacher");
        std::fs::create_dir_all(&teacher).unwrap();
        std::fs::write(teacher.join(CARD_FILE), "{\"kind\": \"cosinenet\"}").unwrap();
        let spec = teacher.display().to_string();
        let err = format!(
            "{:#}",
            teacher_scores(&spec, &data, &questions, &dir.path().join("c")).unwrap_err()
        );
        assert!(err.contains(&spec), "{err}");
        assert!(
            err.contains(CARD_FILE) && err.contains("missing field `name`"),
            "{err}"
        );
    }
}
