//! Cached base scores: the JSON lines `ansel rank --model BASE` prints, read back so that
//! experiments score the training and evaluation pairs with a slow base ranker once.

use ansel_data::Question;
use ansel_model::{ModelError, Ranker, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One line of `ansel rank` output: the question id, the model and each candidate's score.
struct Line {
    id: String,
    model: String,
    scores: Vec<(String, f32)>,
}

impl Line {
    /// Parses one line; an error names the field that is missing or of the wrong type.
    fn parse(line: &str) -> std::result::Result<Line, String> {
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let text = |v: &serde_json::Value, field: &str| -> std::result::Result<String, String> {
            match v.get(field.rsplit('.').next().unwrap_or(field)) {
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(format!("field `{field}`: expected a string, found {other}")),
                None => Err(format!("missing field `{field}`")),
            }
        };
        let id = text(&value, "id")?;
        let model = text(&value, "model")?;
        let scores = match value.get("scores") {
            Some(serde_json::Value::Array(items)) => items,
            Some(other) => return Err(format!("field `scores`: expected an array, found {other}")),
            None => return Err("missing field `scores`".into()),
        };
        let scores = scores
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let cid = text(item, &format!("scores[{i}].id"))?;
                let score = match item.get("score") {
                    Some(serde_json::Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN) as f32,
                    Some(other) => {
                        return Err(format!(
                            "field `scores[{i}].score`: expected a number, found {other}"
                        ))
                    }
                    None => return Err(format!("missing field `scores[{i}].score`")),
                };
                Ok((cid, score))
            })
            .collect::<std::result::Result<Vec<_>, String>>()?;
        Ok(Line { id, model, scores })
    }
}

/// Scores by question id, each with its candidates' ids (checked on lookup).
pub struct ScoreCache {
    pub path: PathBuf,
    /// The `--model` the scores came from, as `ansel rank` recorded it.
    pub model: String,
    map: HashMap<String, Vec<(String, f32)>>,
}

impl ScoreCache {
    pub fn read(path: &Path) -> Result<ScoreCache> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
        Self::parse(path, &text)
    }

    /// [`ScoreCache::read`] of `text`, already read from `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<ScoreCache> {
        let mut map = HashMap::new();
        let mut model = String::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let l = Line::parse(line).map_err(|e| ModelError::Format {
                path: path.to_path_buf(),
                message: format!("line {}: {e}", n + 1),
            })?;
            if model.is_empty() {
                model = l.model.clone();
            } else if model != l.model {
                return Err(ModelError::Format {
                    path: path.to_path_buf(),
                    message: format!(
                        "line {}: scores of model {:?} after {:?}; one cache holds one model",
                        n + 1,
                        l.model,
                        model
                    ),
                });
            }
            map.insert(l.id, l.scores);
        }
        Ok(ScoreCache {
            path: path.to_path_buf(),
            model,
            map,
        })
    }

    /// The cached scores of `q`, if its id is there with the same candidate ids.
    pub fn get(&self, q: &Question) -> Option<Vec<f32>> {
        let s = self.map.get(&q.id)?;
        (s.len() == q.candidates.len()
            && s.iter().zip(&q.candidates).all(|((id, _), c)| *id == c.id))
        .then(|| s.iter().map(|&(_, v)| v).collect())
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A base ranker that takes a question's scores from caches when they hold it and scores
/// it live otherwise.
pub struct CachedRanker {
    inner: Box<dyn Ranker>,
    caches: Vec<ScoreCache>,
    pub hits: AtomicUsize,
    pub misses: AtomicUsize,
}

impl CachedRanker {
    pub fn new(inner: Box<dyn Ranker>, caches: Vec<ScoreCache>) -> CachedRanker {
        CachedRanker {
            inner,
            caches,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        }
    }

    fn cached(&self, q: &Question) -> Option<Vec<f32>> {
        self.caches.iter().find_map(|c| c.get(q))
    }
}

impl Ranker for CachedRanker {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        let found: Vec<Option<Vec<f32>>> = questions.iter().map(|q| self.cached(q)).collect();
        let missing: Vec<Question> = questions
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(q, _)| q.clone())
            .collect();
        self.hits
            .fetch_add(questions.len() - missing.len(), Ordering::Relaxed);
        self.misses.fetch_add(missing.len(), Ordering::Relaxed);
        let mut live = if missing.is_empty() {
            Vec::new()
        } else {
            self.inner.score_all(&missing)?
        }
        .into_iter();
        Ok(found
            .into_iter()
            .map(|f| f.unwrap_or_else(|| live.next().unwrap_or_default()))
            .collect())
    }
}
