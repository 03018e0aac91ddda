//! The model's own vocabulary: the words of its training data (plus the most
//! frequent words of the vector table) that have a pretrained vector. Its rows
//! are bundled with the weights, so a saved model needs no vector package.

#[cfg(feature = "torch")]
use ansel_data::Question;
use ansel_model::{ModelError, Result};
#[cfg(feature = "torch")]
use ansel_vectors::WordVectors;
use std::collections::HashMap;
use std::path::Path;

/// Padding: a zero vector that masks hide.
pub const PAD: i64 = 0;
/// Words without a vector: a zero vector (their exact-match features still work).
pub const UNK: i64 = 1;
pub const RESERVED: [&str; 2] = ["<pad>", "<unk>"];

pub const FILE: &str = "vocab.txt";

#[derive(Debug, Clone, PartialEq)]
pub struct Vocabulary {
    words: Vec<String>,
    ids: HashMap<String, i64>,
}

impl Vocabulary {
    /// A vocabulary of `words` in order; the first two must be the reserved `<pad>` and `<unk>`.
    pub fn from_words(words: Vec<String>) -> Vocabulary {
        let ids = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.clone(), i as i64))
            .collect();
        Vocabulary { words, ids }
    }

    #[cfg(feature = "torch")]
    /// Words of `data` that have a vector, then the first `extra` words of the table.
    pub fn build(data: &[&[Question]], vectors: &WordVectors, extra: usize) -> Vocabulary {
        let mut words: Vec<String> = RESERVED.iter().map(|w| w.to_string()).collect();
        let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
        let mut add = |word: &str, words: &mut Vec<String>| {
            if vectors.get(word).is_some() && seen.insert(word.to_string()) {
                words.push(word.to_string());
            }
        };
        for question in data.iter().flat_map(|qs| qs.iter()) {
            let texts =
                std::iter::once(&question.text).chain(question.candidates.iter().map(|c| &c.text));
            for text in texts {
                for word in ansel_text::words(text) {
                    add(&word, &mut words);
                }
            }
        }
        for word in vectors.words().iter().take(extra) {
            add(word, &mut words);
        }
        Vocabulary::from_words(words)
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Never true for a vocabulary made by [`Vocabulary::from_words`] or read from a model:
    /// both hold the reserved words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn id(&self, word: &str) -> i64 {
        self.ids.get(word).copied().unwrap_or(UNK)
    }

    #[cfg(feature = "torch")]
    /// The embedding matrix, row-major `len × dim`; reserved rows are zero.
    pub fn embedding_rows(&self, vectors: &WordVectors) -> Vec<f32> {
        let dim = vectors.dim();
        let mut rows = vec![0f32; self.len() * dim];
        for (i, word) in self.words.iter().enumerate().skip(RESERVED.len()) {
            if let Some(v) = vectors.get(word) {
                rows[i * dim..(i + 1) * dim].copy_from_slice(&v);
            }
        }
        rows
    }

    #[cfg(feature = "torch")]
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut text = String::new();
        for word in &self.words {
            text.push_str(word);
            text.push('\n');
        }
        ansel_model::write_atomic(&dir.join(FILE), text.as_bytes())
    }

    pub fn read(dir: &Path) -> Result<Vocabulary> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| ModelError::io(&path, e))?;
        let words: Vec<String> = text.lines().map(str::to_string).collect();
        let bad = |line: usize, message: String| ModelError::Format {
            path: path.clone(),
            message: format!("line {line}: {message}"),
        };
        for (i, reserved) in RESERVED.iter().enumerate() {
            if words.get(i).map(String::as_str) != Some(*reserved) {
                return Err(bad(i + 1, format!("expected {reserved:?}")));
            }
        }
        let vocab = Vocabulary::from_words(words);
        if vocab.ids.len() != vocab.words.len() {
            let mut seen = std::collections::HashSet::new();
            let line = vocab
                .words
                .iter()
                .position(|w| !seen.insert(w))
                .unwrap_or(0);
            return Err(bad(
                line + 1,
                format!("duplicate word {:?}", vocab.words[line]),
            ));
        }
        Ok(vocab)
    }
}

#[cfg(all(test, feature = "torch"))]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_a_corrupt_file() {
        let vectors = WordVectors::new(
            vec!["the".into(), "cat".into(), "dog".into()],
            1,
            vec![1.0, 2.0, 3.0],
        )
        .unwrap();
        let q = ansel_data::Question {
            id: "q".into(),
            text: "The cat zzz?".into(),
            candidates: vec![],
        };
        let vocab = Vocabulary::build(&[&[q]], &vectors, 3);
        assert_eq!(vocab.words, vec!["<pad>", "<unk>", "the", "cat", "dog"]);
        assert_eq!(vocab.id("zzz"), UNK);
        assert_eq!(vocab.embedding_rows(&vectors), vec![0., 0., 1., 2., 3.]);
        let dir = tempfile::tempdir().unwrap();
        vocab.write(dir.path()).unwrap();
        assert_eq!(Vocabulary::read(dir.path()).unwrap(), vocab);
        std::fs::write(dir.path().join(FILE), "<pad>\n<unk>\na\na\n").unwrap();
        let err = Vocabulary::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("vocab.txt") && err.contains("line 4"), "{err}");
    }

    #[test]
    fn word_piece_vectors_give_rare_words_a_bundled_row() {
        let pieces = ["[PAD]", "[UNK]", "the", "shake", "##speare"];
        let data: Vec<f32> = (0..pieces.len()).map(|i| i as f32).collect();
        let vectors =
            WordVectors::from_word_pieces(pieces.iter().map(|p| p.to_string()).collect(), 1, data)
                .unwrap();
        let q = ansel_data::Question {
            id: "q".into(),
            text: "the Shakespeare qqq".into(),
            candidates: vec![],
        };
        // No extra words: only the data's words that have pieces.
        let vocab = Vocabulary::build(&[&[q]], &vectors, 0);
        assert_eq!(vocab.words, vec!["<pad>", "<unk>", "the", "shakespeare"]);
        assert_eq!(vocab.id("qqq"), UNK);
        // "shakespeare" is not a piece: its row is the mean of shake (3) and ##speare (4).
        assert_eq!(vocab.embedding_rows(&vectors), vec![0., 0., 2., 3.5]);
    }
}
