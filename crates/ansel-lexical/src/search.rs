use crate::TermStats;
use ansel_text::content_words;
use std::collections::{HashMap, HashSet};

/// Okapi BM25 search over an in-memory collection of texts (an inverted index of their
/// content words): the hard negatives of a training set, candidate lists drawn from many
/// documents. Scores equal [`crate::Bm25`]'s for the same collection.
pub struct Bm25Index {
    stats: TermStats,
    postings: HashMap<String, Vec<(u32, u16)>>,
    lengths: Vec<u32>,
    k1: f32,
    b: f32,
}

impl Bm25Index {
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Bm25Index {
        let mut postings: HashMap<String, Vec<(u32, u16)>> = HashMap::new();
        let mut lengths = Vec::new();
        let mut all = Vec::new();
        for (doc, text) in texts.into_iter().enumerate() {
            let words = content_words(text);
            lengths.push(words.len() as u32);
            let mut tf: HashMap<String, u16> = HashMap::new();
            for w in words {
                let n = tf.entry(w).or_default();
                *n = n.saturating_add(1);
            }
            for (w, n) in tf {
                postings.entry(w).or_default().push((doc as u32, n));
            }
            all.push(text);
        }
        Bm25Index {
            stats: TermStats::from_texts(all),
            postings,
            lengths,
            k1: 1.2,
            b: 0.75,
        }
    }

    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The `limit` best texts for `query` among those `keep` accepts, best first, as
    /// (index in the collection, score); texts sharing no content word are never returned.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        let terms: HashSet<String> = content_words(query).into_iter().collect();
        let avg = self.stats.average_length().max(1.0);
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for term in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let idf = self.stats.idf(term);
            for &(doc, tf) in list {
                let tf = tf as f32;
                let len = self.lengths[doc as usize] as f32;
                let norm = self.k1 * (1.0 - self.b + self.b * len / avg);
                *scores.entry(doc).or_default() += idf * tf * (self.k1 + 1.0) / (tf + norm);
            }
        }
        let mut hits: Vec<(usize, f32)> = scores
            .into_iter()
            .map(|(doc, s)| (doc as usize, s))
            .filter(|&(doc, _)| keep(doc))
            .collect();
        // Ties broken by position so that results are the same on every run.
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bm25;

    const TEXTS: [&str; 4] = [
        "The tower is 330 metres tall.",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
        "Grass is green.",
        "Paris is the capital of France and its tower is famous.",
    ];

    #[test]
    fn scores_equal_the_bm25_ranker_and_the_filter_applies() {
        let index = Bm25Index::new(TEXTS);
        assert_eq!(index.len(), 4);
        let hits = index.search("How tall is the Eiffel tower?", 10, |_| true);
        // Grass shares no word: not returned.
        assert_eq!(hits.len(), 3);
        let bm25 = Bm25::new(TermStats::from_texts(TEXTS));
        let query: HashSet<String> = content_words("How tall is the Eiffel tower?")
            .into_iter()
            .collect();
        for &(doc, score) in &hits {
            assert!((score - bm25.score_text(&query, TEXTS[doc])).abs() < 1e-5);
        }
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        let without_first = index.search("How tall is the Eiffel tower?", 1, |d| d != hits[0].0);
        assert_eq!(without_first, vec![hits[1]]);
    }
}
