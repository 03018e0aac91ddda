//! Extension (not the paper): out-of-fold base scores for the training rows.
//!
//! A base ranker trained on the very questions that become the graph's training rows scores
//! them almost perfectly (in sample), while an unseen question's scores are out of sample: the
//! GCN would learn from a feature distribution it never sees at test time. Here the training
//! questions are dealt into K folds (by question, seeded) and each fold is scored by a ranker
//! trained without it ([`out_of_fold`]); the stored model still scores unseen questions with
//! the full base ranker.
//!
//! The scores are cached as `ansel rank` JSON lines (readable by [`ScoreCache`]) in
//! `<cache dir>/<key>.jsonl`, the key ([`oof_key`]) a fingerprint of the base model's card,
//! the folds, the seed and the data, so that a sweep's runs train the fold rankers once and a
//! changed base or data set trains them again.

use crate::cache::ScoreCache;
use ansel_data::{shuffle_seeded, Question};
use ansel_model::{write_atomic, Fingerprint, ModelError, Ranker, Result};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The fold (0..folds) of each of `n` questions, by position: the positions are shuffled with
/// `seed` and dealt round-robin, so fold sizes differ by at most one and the same seed always
/// gives the same folds.
pub fn assign_folds(n: usize, folds: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    shuffle_seeded(&mut order, seed);
    let mut fold = vec![0; n];
    for (i, &q) in order.iter().enumerate() {
        fold[q] = i % folds.max(1);
    }
    fold
}

/// The cache key of out-of-fold scores: the base model (its card's bytes, which hold its
/// recipe, seed and metrics), the folds and their seed, the scored rows, the pool the fold
/// rankers train on and the dev data they stop early on.
pub fn oof_key(
    base_card: &[u8],
    folds: usize,
    seed: u64,
    rows: &[Question],
    pool: &[Question],
    dev: &[Question],
) -> String {
    let mut f = Fingerprint::default();
    f.update(b"ansel-oof-v1")
        .update(base_card)
        .update(folds.to_string().as_bytes())
        .update(seed.to_string().as_bytes())
        .questions(rows)
        .update(b"pool")
        .questions(pool)
        .update(b"dev")
        .questions(dev);
    f.hex()
}

/// Question text as compared for leaks: lower case, whitespace collapsed.
fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The pool questions a fold ranker may train on: every question of `pool` whose id and
/// (normalised) text both differ from those of every question in `held_out`.
pub fn training_pool(pool: &[Question], held_out: &[&Question]) -> Vec<Question> {
    let ids: HashSet<&str> = held_out.iter().map(|q| q.id.as_str()).collect();
    let texts: HashSet<String> = held_out.iter().map(|q| normalise(&q.text)).collect();
    pool.iter()
        .filter(|q| !ids.contains(q.id.as_str()) && !texts.contains(&normalise(&q.text)))
        .cloned()
        .collect()
}

/// Out-of-fold scores of the training rows.
pub struct OofScores {
    /// Per row, in the rows' order.
    pub scores: Vec<Vec<f32>>,
    /// Per row, its fold.
    pub folds: Vec<usize>,
    /// The score file (`ansel rank` JSON lines).
    pub path: PathBuf,
    /// Whether the scores were read from the cache rather than computed.
    pub cached: bool,
    /// Per fold: the questions its ranker trained on.
    pub trained_on: Vec<usize>,
}

/// What a fold ranker is told: its fold and the questions it trains on.
pub type FoldTrainer<'a> = dyn FnMut(usize, &[Question]) -> Result<Box<dyn Ranker>> + 'a;

/// Out-of-fold scores of `rows`: row i is scored by a ranker `train_fold` trains on `pool`
/// minus every question of i's fold (matched by id and by text, [`training_pool`]), so no
/// ranker scores a question it saw. With `cache_dir`, the scores are read from
/// `<cache_dir>/<key>.jsonl` when it holds every row, and written there otherwise
/// (`model` is the model name recorded in the file).
#[allow(clippy::too_many_arguments)]
pub fn out_of_fold(
    rows: &[Question],
    pool: &[Question],
    folds: usize,
    seed: u64,
    key: &str,
    cache_dir: Option<&Path>,
    model: &str,
    train_fold: &mut FoldTrainer<'_>,
) -> Result<OofScores> {
    if folds < 2 {
        return Err(ModelError::Unsupported {
            model: crate::KIND.into(),
            message: format!("out-of-fold scores need at least 2 folds, not {folds}"),
        });
    }
    if rows.len() < folds {
        return Err(ModelError::Unsupported {
            model: crate::KIND.into(),
            message: format!(
                "{} training questions cannot fill {folds} folds",
                rows.len()
            ),
        });
    }
    let fold_of = assign_folds(rows.len(), folds, seed);
    let path = cache_dir
        .map(|d| d.join(format!("{key}.jsonl")))
        .unwrap_or_default();
    if cache_dir.is_some() && path.is_file() {
        let cache = ScoreCache::read(&path)?;
        let found: Option<Vec<Vec<f32>>> = rows.iter().map(|q| cache.get(q)).collect();
        if let Some(scores) = found {
            return Ok(OofScores {
                scores,
                folds: fold_of,
                path,
                cached: true,
                trained_on: Vec::new(),
            });
        }
    }
    let mut scores: Vec<Vec<f32>> = vec![Vec::new(); rows.len()];
    let mut trained_on = Vec::new();
    for fold in 0..folds {
        let held: Vec<usize> = (0..rows.len()).filter(|&i| fold_of[i] == fold).collect();
        let held_qs: Vec<&Question> = held.iter().map(|&i| &rows[i]).collect();
        let train = training_pool(pool, &held_qs);
        trained_on.push(train.len());
        let ranker = train_fold(fold, &train)?;
        let to_score: Vec<Question> = held_qs.iter().map(|q| (*q).clone()).collect();
        let fold_scores = ranker.score_all(&to_score)?;
        if fold_scores.len() != held.len() {
            return Err(ModelError::Backend(format!(
                "fold {fold}: {} score lists for {} questions",
                fold_scores.len(),
                held.len()
            )));
        }
        for (&i, s) in held.iter().zip(fold_scores) {
            if s.len() != rows[i].candidates.len() {
                return Err(ModelError::Backend(format!(
                    "fold {fold}, question {}: {} scores for {} candidates",
                    rows[i].id,
                    s.len(),
                    rows[i].candidates.len()
                )));
            }
            scores[i] = s;
        }
    }
    if let Some(dir) = cache_dir {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        let mut text = String::new();
        for (q, s) in rows.iter().zip(&scores) {
            let scored: Vec<serde_json::Value> = q
                .candidates
                .iter()
                .zip(s)
                .map(|(c, v)| serde_json::json!({"id": c.id, "score": v}))
                .collect();
            let line = serde_json::json!({"id": q.id, "model": model, "scores": scored});
            text.push_str(&line.to_string());
            text.push('\n');
        }
        write_atomic(&path, text.as_bytes())?;
    }
    Ok(OofScores {
        scores,
        folds: fold_of,
        path,
        cached: false,
        trained_on,
    })
}

/// Fixed scores by question (out-of-fold scores of the training rows) served as a ranker:
/// a question it has no scores for is an error, never scored some other way.
pub struct FixedScores {
    name: String,
    cache: ScoreCache,
}

impl FixedScores {
    pub fn new(name: &str, cache: ScoreCache) -> FixedScores {
        FixedScores {
            name: name.to_string(),
            cache,
        }
    }
}

impl Ranker for FixedScores {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        self.cache
            .get(question)
            .ok_or_else(|| ModelError::Unsupported {
                model: self.name.clone(),
                message: format!(
                    "{}: no scores for question {:?} (or its candidate ids differ)",
                    self.cache.path.display(),
                    question.id
                ),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_data::Candidate;
    use std::cell::RefCell;
    use std::collections::HashMap;

    fn question(id: &str, text: &str, n: usize, answered: bool) -> Question {
        Question {
            id: id.into(),
            text: text.into(),
            candidates: (0..n)
                .map(|c| Candidate {
                    id: format!("{id}-{c}"),
                    text: format!("answer {c} to {text}"),
                    label: Some(answered && c == 0),
                    context: None,
                })
                .collect(),
        }
    }

    fn rows(n: usize) -> Vec<Question> {
        (0..n)
            .map(|i| question(&format!("q{i}"), &format!("Question number {i}"), 3, true))
            .collect()
    }

    /// A ranker that remembers what it was trained on and refuses to score any of it.
    struct Memorizer {
        fold: usize,
        ids: HashSet<String>,
        texts: HashSet<String>,
    }

    impl Ranker for Memorizer {
        fn name(&self) -> &str {
            "memorizer"
        }
        fn score(&self, q: &Question) -> Result<Vec<f32>> {
            if self.ids.contains(&q.id) || self.texts.contains(&normalise(&q.text)) {
                return Err(ModelError::Backend(format!(
                    "fold {}: asked to score {} which it trained on",
                    self.fold, q.id
                )));
            }
            Ok(vec![self.fold as f32; q.candidates.len()])
        }
    }

    #[test]
    fn folds_are_deterministic_balanced_and_seeded() {
        let a = assign_folds(103, 5, 7);
        assert_eq!(a, assign_folds(103, 5, 7));
        assert_ne!(a, assign_folds(103, 5, 8));
        let mut sizes = [0; 5];
        for &f in &a {
            sizes[f] += 1;
        }
        assert!(sizes.iter().all(|&s| s == 20 || s == 21), "{sizes:?}");
        // Not simply positions modulo K.
        assert_ne!(a, (0..103).map(|i| i % 5).collect::<Vec<_>>());
    }

    #[test]
    fn no_question_is_scored_by_a_ranker_that_saw_it() {
        let rows = rows(23);
        // The pool: the rows, unanswered questions the rows do not include, and a copy of
        // q3 under another id with its text re-spaced and re-cased (must follow q3 out).
        let mut pool = rows.clone();
        pool.push(question("u1", "Unanswered one", 3, false));
        pool.push(question("u2", "Unanswered two", 3, false));
        pool.push(question("dup3", "  question NUMBER 3 ", 3, true));
        let trained: RefCell<HashMap<usize, Vec<String>>> = RefCell::default();
        let mut trainer = |fold: usize, train: &[Question]| -> Result<Box<dyn Ranker>> {
            trained
                .borrow_mut()
                .insert(fold, train.iter().map(|q| q.id.clone()).collect());
            Ok(Box::new(Memorizer {
                fold,
                ids: train.iter().map(|q| q.id.clone()).collect(),
                texts: train.iter().map(|q| normalise(&q.text)).collect(),
            }))
        };
        let out = out_of_fold(&rows, &pool, 5, 11, "k", None, "m", &mut trainer).unwrap();
        assert!(!out.cached);
        assert_eq!(out.folds, assign_folds(rows.len(), 5, 11));
        let trained = trained.into_inner();
        assert_eq!(trained.len(), 5);
        for (i, q) in rows.iter().enumerate() {
            let fold = out.folds[i];
            // Scored by its own fold's ranker (the Memorizer scores with its fold number)...
            assert_eq!(out.scores[i], vec![fold as f32; 3]);
            // ... which did not train on it, while every other fold's ranker did.
            for (f, ids) in &trained {
                assert_eq!(ids.contains(&q.id), *f != fold, "{} fold {f}", q.id);
            }
        }
        let fold3 = out.folds[3];
        for (f, ids) in &trained {
            assert_eq!(ids.contains(&"dup3".to_string()), *f != fold3);
            assert!(ids.contains(&"u1".to_string()) && ids.contains(&"u2".to_string()));
            let held = out.folds.iter().filter(|&&x| x == *f).count();
            let dup = usize::from(*f == fold3);
            assert_eq!(ids.len(), pool.len() - held - dup, "fold {f}");
            assert_eq!(out.trained_on[*f], ids.len());
        }
    }

    #[test]
    fn the_cache_is_reused_and_invalidated_when_the_base_or_data_change() {
        let dir = tempfile::tempdir().unwrap();
        let rows = rows(12);
        let dev = vec![question("d0", "A dev question", 3, true)];
        let trainings = RefCell::new(0);
        let mut trainer = |fold: usize, _: &[Question]| -> Result<Box<dyn Ranker>> {
            *trainings.borrow_mut() += 1;
            Ok(Box::new(Memorizer {
                fold,
                ids: HashSet::new(),
                texts: HashSet::new(),
            }))
        };
        let key = |card: &[u8], seed: u64| oof_key(card, 3, seed, &rows, &rows, &dev);
        let run = |key: &str, trainer: &mut FoldTrainer<'_>| {
            out_of_fold(&rows, &rows, 3, 1, key, Some(dir.path()), "m", trainer).unwrap()
        };
        let first = run(&key(b"base card A", 1), &mut trainer);
        assert!(!first.cached);
        assert_eq!(*trainings.borrow(), 3);
        assert!(first.path.is_file());
        let again = run(&key(b"base card A", 1), &mut trainer);
        assert!(again.cached);
        assert_eq!(*trainings.borrow(), 3, "a cache hit trains nothing");
        assert_eq!(again.scores, first.scores);
        assert_eq!(again.folds, first.folds);
        // A changed base (its card), fold seed, data or fold count is a different key.
        let changed = key(b"base card B", 1);
        assert_ne!(changed, key(b"base card A", 1));
        assert_ne!(key(b"base card A", 2), key(b"base card A", 1));
        assert_ne!(
            oof_key(b"base card A", 3, 1, &rows[1..], &rows, &dev),
            key(b"base card A", 1)
        );
        assert_ne!(
            oof_key(b"base card A", 4, 1, &rows, &rows, &dev),
            key(b"base card A", 1)
        );
        let mut relabelled = rows.clone();
        relabelled[0].candidates[1].label = Some(true);
        assert_ne!(
            oof_key(b"base card A", 3, 1, &relabelled, &rows, &dev),
            key(b"base card A", 1)
        );
        let retrained = run(&changed, &mut trainer);
        assert!(!retrained.cached);
        assert_eq!(*trainings.borrow(), 6);
        // A cache file that lacks a row is not trusted: the folds are trained again.
        std::fs::write(&retrained.path, "").unwrap();
        assert!(!run(&changed, &mut trainer).cached);
        assert_eq!(*trainings.borrow(), 9);
    }

    #[test]
    fn fixed_scores_refuse_unknown_questions() {
        let dir = tempfile::tempdir().unwrap();
        let rows = rows(4);
        let mut trainer = |fold: usize, _: &[Question]| -> Result<Box<dyn Ranker>> {
            Ok(Box::new(Memorizer {
                fold,
                ids: HashSet::new(),
                texts: HashSet::new(),
            }))
        };
        let out =
            out_of_fold(&rows, &rows, 2, 3, "k", Some(dir.path()), "m", &mut trainer).unwrap();
        let fixed = FixedScores::new("oof", ScoreCache::read(&out.path).unwrap());
        assert_eq!(fixed.score_all(&rows).unwrap(), out.scores);
        let err = fixed
            .score(&question("other", "Other", 3, true))
            .unwrap_err();
        assert!(
            err.to_string().contains("no scores for question \"other\""),
            "{err}"
        );
        assert!(out_of_fold(&rows, &rows, 1, 3, "k", None, "m", &mut trainer).is_err());
        assert!(out_of_fold(&rows, &rows, 5, 3, "k", None, "m", &mut trainer).is_err());
    }
}
