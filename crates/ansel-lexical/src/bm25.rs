use crate::TermStats;
use ansel_data::Question;
use ansel_model::{Ranker, Result};
use ansel_text::content_words;
use std::collections::{HashMap, HashSet};

/// Okapi BM25 of the question's distinct content words against each candidate.
pub struct Bm25 {
    stats: TermStats,
    pub k1: f32,
    pub b: f32,
}

impl Bm25 {
    /// The usual defaults, k1 = 1.2 and b = 0.75.
    pub fn new(stats: TermStats) -> Self {
        Bm25 {
            stats,
            k1: 1.2,
            b: 0.75,
        }
    }

    pub fn score_text(&self, query: &HashSet<String>, text: &str) -> f32 {
        let words = content_words(text);
        let mut tf: HashMap<&str, f32> = HashMap::new();
        for w in &words {
            *tf.entry(w.as_str()).or_default() += 1.0;
        }
        let avg = self.stats.average_length().max(1.0);
        let norm = self.k1 * (1.0 - self.b + self.b * words.len() as f32 / avg);
        query
            .iter()
            .filter_map(|q| {
                tf.get(q.as_str())
                    .map(|&f| self.stats.idf(q) * f * (self.k1 + 1.0) / (f + norm))
            })
            .sum()
    }
}

impl Ranker for Bm25 {
    fn name(&self) -> &str {
        "bm25"
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        let query: HashSet<String> = content_words(&question.text).into_iter().collect();
        Ok(question
            .candidates
            .iter()
            .map(|c| self.score_text(&query, &c.text))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_frequency_saturates_and_length_normalises() {
        let stats = TermStats::from_texts([
            "rome rome rome",
            "rome",
            "rome city is large and very old indeed",
            "paris",
        ]);
        let bm25 = Bm25::new(stats);
        let q: HashSet<String> = ["rome".to_string()].into();
        let once = bm25.score_text(&q, "rome");
        let thrice = bm25.score_text(&q, "rome rome rome");
        let long = bm25.score_text(&q, "rome city is large and very old indeed");
        assert!(
            thrice > once && thrice < 3.0 * once,
            "saturation: {once} {thrice}"
        );
        assert!(long < once, "length normalisation: {long} {once}");
        assert_eq!(bm25.score_text(&q, "paris"), 0.0);
        let flat = Bm25 { b: 0.0, ..bm25 };
        assert_eq!(
            flat.score_text(&q, "rome city is large and very old indeed"),
            flat.score_text(&q, "rome")
        );
    }
}
