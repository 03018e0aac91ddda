//! Retrofitting word vectors to a lexicon (Faruqui et al. 2015, "Retrofitting Word Vectors to
//! Semantic Lexicons"): each word listed in the lexicon is pulled towards its neighbours there
//! (synonyms, hypernyms, or a domain's own synonym list) while staying close to its original
//! vector. The thesis' best Cosinenet used ConceptNet Numberbatch, which is word vectors
//! retrofitted to a knowledge graph; `scripts/fetch-wordnet.sh` builds WordNet lexicons for this.

use crate::{read, Result, VectorsError, WordVectors};
use ansel_model::Fingerprint;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Iterations of the update; Faruqui et al.'s default, after which the vectors barely move.
pub const RETROFIT_ITERATIONS: usize = 10;

/// Words and their neighbours, read from a text file of lines `word neighbour neighbour ...`
/// (whitespace separated, the format of Faruqui et al.'s lexicons). Words are lower-cased, as
/// ansel's tokenizer does; blank lines are skipped and a word's repeated lines are merged.
#[derive(Debug, Clone)]
pub struct Lexicon {
    path: PathBuf,
    fingerprint: Fingerprint,
    neighbours: HashMap<String, Vec<String>>,
}

impl Lexicon {
    pub fn read(path: &Path) -> Result<Lexicon> {
        let bytes = read(path)?;
        let mut fingerprint = Fingerprint::default();
        fingerprint.bytes(bytes.iter().copied());
        let mut neighbours: HashMap<String, Vec<String>> = HashMap::new();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let line = std::str::from_utf8(line).map_err(|e| {
                VectorsError::format(path, format!("line {}: not UTF-8 ({e})", i + 1))
            })?;
            let mut words = line.split_whitespace().map(str::to_lowercase);
            if let Some(word) = words.next() {
                let entry = neighbours.entry(word.clone()).or_default();
                entry.extend(words.filter(|w| *w != word));
            }
        }
        Ok(Lexicon {
            path: path.to_path_buf(),
            fingerprint,
            neighbours,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Words with an entry.
    pub fn len(&self) -> usize {
        self.neighbours.len()
    }

    pub fn is_empty(&self) -> bool {
        self.neighbours.is_empty()
    }

    /// What a training record keeps of it: the file, its fingerprint and size.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "lexicon": self.path.display().to_string(),
            "fingerprint": self.fingerprint.hex(),
            "words": self.len(),
            "iterations": RETROFIT_ITERATIONS,
        })
    }
}

impl WordVectors {
    /// The table retrofitted to `lexicon`, and how many rows changed. Every row with at least one
    /// lexicon neighbour in the table becomes, `iterations` times in row order,
    /// `(original + mean of its neighbours' current vectors) / 2`: Faruqui et al.'s update with
    /// alpha 1 and beta 1 / degree. Other rows, and word pieces, are unchanged.
    pub fn retrofitted(&self, lexicon: &Lexicon, iterations: usize) -> (WordVectors, usize) {
        let graph: Vec<(usize, Vec<usize>)> = self
            .words
            .iter()
            .enumerate()
            .filter_map(|(row, word)| {
                let mut rows: Vec<usize> = lexicon
                    .neighbours
                    .get(word)?
                    .iter()
                    .filter_map(|n| self.index.get(n).copied())
                    .filter(|&n| n != row)
                    .collect();
                rows.sort_unstable();
                rows.dedup();
                (!rows.is_empty()).then_some((row, rows))
            })
            .collect();
        let dim = self.dim;
        let mut table = self.clone();
        let data = &mut table.data;
        let mut mean = vec![0f32; dim];
        for _ in 0..iterations {
            for (row, neighbours) in &graph {
                mean.iter_mut().for_each(|m| *m = 0.0);
                for n in neighbours {
                    for (m, v) in mean.iter_mut().zip(&data[n * dim..(n + 1) * dim]) {
                        *m += v;
                    }
                }
                let degree = neighbours.len() as f32;
                let original = &self.data[row * dim..(row + 1) * dim];
                for ((out, o), m) in data[row * dim..(row + 1) * dim]
                    .iter_mut()
                    .zip(original)
                    .zip(&mean)
                {
                    *out = (o + m / degree) / 2.0;
                }
            }
        }
        let changed = if iterations == 0 { 0 } else { graph.len() };
        (table, changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon(text: &str) -> Lexicon {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lexicon.txt");
        std::fs::write(&path, text).unwrap();
        Lexicon::read(&path).unwrap()
    }

    fn table() -> WordVectors {
        let words = ["big", "large", "huge", "cat"].map(String::from).to_vec();
        WordVectors::new(words, 2, vec![1.0, 0.0, 0.0, 1.0, 0.0, 3.0, 5.0, 5.0]).unwrap()
    }

    #[test]
    fn reads_lines_lower_cased_merged_and_without_self_loops() {
        let lex = lexicon("Big large LARGE big\n\nbig huge\nlarge big\nsolo\n");
        assert_eq!(lex.len(), 3);
        assert_eq!(lex.neighbours["big"], ["large", "large", "huge"]);
        assert_eq!(lex.neighbours["large"], ["big"]);
        assert!(lex.neighbours["solo"].is_empty());
    }

    #[test]
    fn not_utf8_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lex.txt");
        std::fs::write(&path, b"big large\nbad \xff word\n").unwrap();
        let e = Lexicon::read(&path).unwrap_err().to_string();
        assert!(e.contains("lex.txt") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn one_iteration_is_the_mean_of_original_and_neighbours() {
        let lex = lexicon("big large huge unknown\n");
        let t = table();
        let (r, changed) = t.retrofitted(&lex, 1);
        assert_eq!(changed, 1);
        // big = ((1,0) + ((0,1) + (0,3)) / 2) / 2
        assert_eq!(r.get("big").unwrap().to_vec(), [0.5, 1.0]);
        for w in ["large", "huge", "cat"] {
            assert_eq!(r.get(w), t.get(w), "{w} has no entry and must not move");
        }
        let (same, none) = t.retrofitted(&lex, 0);
        assert_eq!((same.get("big"), none), (t.get("big"), 0));
    }

    #[test]
    fn neighbours_move_towards_each_other_and_converge() {
        let lex = lexicon("big large\nlarge big\n");
        let t = table();
        let distance = |v: &WordVectors| {
            let (a, b) = (v.get("big").unwrap(), v.get("large").unwrap());
            a.iter()
                .zip(b.iter())
                .map(|(x, y)| (x - y).powi(2))
                .sum::<f32>()
        };
        let (r10, changed) = t.retrofitted(&lex, RETROFIT_ITERATIONS);
        let (r30, _) = t.retrofitted(&lex, 30);
        assert_eq!(changed, 2);
        assert!(distance(&r10) < distance(&t) / 2.0);
        // The fixed point of q_b = (b + q_l) / 2, q_l = (l + q_b) / 2: q_b = (2b + l) / 3.
        let fixed = [2.0 / 3.0, 1.0 / 3.0];
        for (x, f) in r30.get("big").unwrap().iter().zip(fixed) {
            assert!((x - f).abs() < 1e-5, "{x} vs {f}");
        }
        for (a, b) in r10
            .get("big")
            .unwrap()
            .iter()
            .zip(r30.get("big").unwrap().iter())
        {
            assert!((a - b).abs() < 1e-3);
        }
    }
}
