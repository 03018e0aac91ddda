use ansel_data::Question;
use ansel_text::content_words;
use std::collections::{HashMap, HashSet};

/// Document frequencies over a collection of sentences (each sentence one document).
#[derive(Debug, Clone, Default)]
pub struct TermStats {
    documents: usize,
    total_length: usize,
    document_frequency: HashMap<String, usize>,
}

impl TermStats {
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> TermStats {
        let mut stats = TermStats::default();
        for text in texts {
            let words = content_words(text);
            stats.documents += 1;
            stats.total_length += words.len();
            for word in words.into_iter().collect::<HashSet<_>>() {
                *stats.document_frequency.entry(word).or_default() += 1;
            }
        }
        stats
    }

    /// Statistics over every candidate sentence of `questions`.
    pub fn from_questions(questions: &[Question]) -> TermStats {
        TermStats::from_texts(
            questions
                .iter()
                .flat_map(|q| q.candidates.iter().map(|c| c.text.as_str())),
        )
    }

    /// BM25's IDF, `ln(1 + (N - df + 0.5) / (df + 0.5))`: positive for every
    /// word, and largest for words the collection has never seen.
    pub fn idf(&self, word: &str) -> f32 {
        let n = self.documents as f32;
        let df = self.document_frequency.get(word).copied().unwrap_or(0) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    pub fn average_length(&self) -> f32 {
        if self.documents == 0 {
            return 0.0;
        }
        self.total_length as f32 / self.documents as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_words_weigh_more() {
        let stats = TermStats::from_texts(["cats purr", "cats sleep", "dogs bark loudly"]);
        assert!(stats.idf("purr") > stats.idf("cats"));
        assert!(stats.idf("unseen") > stats.idf("purr"));
        assert!(stats.idf("cats") > 0.0);
        assert!((stats.average_length() - 7.0 / 3.0).abs() < 1e-6);
    }
}
