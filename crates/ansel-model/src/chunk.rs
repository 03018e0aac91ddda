//! Long candidates read in windows: a model that reads at most a few hundred tokens sees all of a
//! long passage, and the passage's score is its best window's (BERT-MaxP, Dai and Callan 2019;
//! Cohere's `max_tokens_per_doc` chunks the same way).

use crate::{Ranker, Result};
use ansel_data::Question;
use serde::{Deserialize, Serialize};

/// Window sizes in whitespace-separated words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Windows {
    /// Words per window; a candidate of at most this many words is read whole.
    pub words: usize,
    /// Words from one window's start to the next's (at most `words`, so windows overlap or touch).
    pub stride: usize,
}

impl Windows {
    /// The windows of `text`: `text` itself when it has at most [`Windows::words`] words, else
    /// windows of that many words every [`Windows::stride`] words, the last one ending at the end.
    pub fn of(&self, text: &str) -> Vec<String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let size = self.words.max(1);
        if words.len() <= size {
            return vec![text.to_string()];
        }
        let stride = self.stride.clamp(1, size);
        let mut starts: Vec<usize> = (0..words.len() - size).step_by(stride).collect();
        starts.push(words.len() - size);
        starts
            .into_iter()
            .map(|start| words[start..start + size].join(" "))
            .collect()
    }
}

/// `inner` scoring each candidate by its best window ([`Windows`]). A candidate's score depends
/// on its own text only, as `inner`'s does.
pub struct Chunked {
    inner: Box<dyn Ranker>,
    windows: Windows,
}

impl Chunked {
    pub fn new(inner: Box<dyn Ranker>, windows: Windows) -> Chunked {
        Chunked { inner, windows }
    }
}

impl Ranker for Chunked {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        Ok(self.score_all(std::slice::from_ref(question))?.remove(0))
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        // Each question's candidates become their windows; `owners` maps a window back.
        let mut owners: Vec<Vec<usize>> = Vec::with_capacity(questions.len());
        let windowed: Vec<Question> = questions
            .iter()
            .map(|q| {
                let mut owner = Vec::new();
                let mut candidates = Vec::new();
                for (i, c) in q.candidates.iter().enumerate() {
                    for (k, text) in self.windows.of(&c.text).into_iter().enumerate() {
                        let mut window = c.clone();
                        window.id = format!("{}#{k}", c.id);
                        window.text = text;
                        candidates.push(window);
                        owner.push(i);
                    }
                }
                owners.push(owner);
                Question {
                    candidates,
                    ..q.clone()
                }
            })
            .collect();
        let scored = self.inner.score_all(&windowed)?;
        Ok(questions
            .iter()
            .zip(owners)
            .zip(scored)
            .map(|((q, owner), scores)| {
                let mut best = vec![f32::NEG_INFINITY; q.candidates.len()];
                for (i, s) in owner.into_iter().zip(scores) {
                    // NaN never wins, unless every window is NaN.
                    if s > best[i] || best[i] == f32::NEG_INFINITY {
                        best[i] = s;
                    }
                }
                best
            })
            .collect())
    }

    fn reads_whole_list(&self) -> bool {
        self.inner.reads_whole_list()
    }

    fn tokenize(
        &self,
        text: &str,
        pair: Option<&str>,
        special: bool,
    ) -> Option<Result<Vec<crate::Token>>> {
        self.inner.tokenize(text, pair, special)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_data::Candidate;

    #[test]
    fn windows_cover_the_text_and_short_texts_stay_whole() {
        let w = Windows {
            words: 4,
            stride: 3,
        };
        assert_eq!(w.of("a b  c"), vec!["a b  c"]);
        let text = "w0 w1 w2 w3 w4 w5 w6 w7 w8";
        assert_eq!(
            w.of(text),
            vec!["w0 w1 w2 w3", "w3 w4 w5 w6", "w5 w6 w7 w8"],
            "the last window ends at the end"
        );
        assert_eq!(w.of("w0 w1 w2 w3 w4"), vec!["w0 w1 w2 w3", "w1 w2 w3 w4"]);
    }

    /// Scores a candidate by whether it holds the word "needle" (a model that reads 3 words).
    struct Needle;
    impl Ranker for Needle {
        fn name(&self) -> &str {
            "needle"
        }
        fn score(&self, q: &Question) -> Result<Vec<f32>> {
            Ok(q.candidates
                .iter()
                .map(|c| {
                    let seen: Vec<&str> = c.text.split_whitespace().take(3).collect();
                    if seen.contains(&"needle") {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect())
        }
    }

    #[test]
    fn a_candidate_scores_as_its_best_window() {
        let texts = [
            "hay hay hay hay hay hay needle hay",
            "needle hay",
            "hay hay hay hay hay hay hay hay",
        ];
        let q = Question::over_texts("q", "where", texts.map(String::from), false);
        assert_eq!(
            Needle.score(&q).unwrap(),
            vec![0.0, 1.0, 0.0],
            "reads 3 words"
        );
        let chunked = Chunked::new(
            Box::new(Needle),
            Windows {
                words: 3,
                stride: 2,
            },
        );
        assert_eq!(chunked.score(&q).unwrap(), vec![1.0, 1.0, 0.0]);
        // A candidate's score is its own: alone it gets the same.
        let alone = Question {
            candidates: vec![Candidate {
                id: "x".into(),
                text: texts[0].into(),
                label: None,
                context: None,
            }],
            ..q.clone()
        };
        assert_eq!(chunked.score(&alone).unwrap(), vec![1.0]);
    }
}
