//! Word vectors from a sentence encoder (`--vectors minilm-encoded`): every word is
//! encoded alone by a [`WordEncoder`] (ansel-bert's, which runs all-MiniLM-L6-v2 on the
//! one-word sentence `[CLS] word [SEP]`, mean-pooled and normalised to unit length, exactly
//! as sentence-transformers embeds a sentence). Unlike the input word-piece embeddings
//! (`--vectors minilm`), these vectors come out of a model trained for semantic similarity,
//! so their cosines measure word relatedness. This crate holds the table and its cache, not
//! the encoder: it links no libtorch.
//!
//! Encoding costs about a millisecond or more per word on one core, so the table is
//! built only for the words asked for (a model's vocabulary) and cached: a cache
//! directory holds `words.txt` (one word a line, in row order), `vectors.f32`
//! (little-endian `f32`, row-major) and `meta.json` (the encoder and its dimension);
//! only words missing from it are encoded, and a cache made by another encoder is
//! rebuilt.

use crate::{Result, VectorsError, WordVectors};
use std::collections::HashMap;
use std::path::Path;

const WORDS_FILE: &str = "words.txt";
const VECTORS_FILE: &str = "vectors.f32";
const META_FILE: &str = "meta.json";

/// A model that gives every word a vector of its own, the word encoded alone.
pub trait WordEncoder {
    /// What identifies the encoder in a cache (a cache made by another encoder is rebuilt).
    fn identity(&self) -> &serde_json::Value;
    fn dim(&self) -> usize;
    /// Row-major `words.len() × dim` vectors, row `i` the vector of `words[i]`.
    fn encode(&self, words: &[&str]) -> Result<Vec<f32>>;
}

/// The vectors of `words` (in that order; repeated words once) from `encoder`, taken from
/// the cache in `cache_dir` where it has them and encoded otherwise (the cache then grows).
/// Returns the table and how many words were encoded now.
pub fn encoded_vectors(
    encoder: &dyn WordEncoder,
    words: &[String],
    cache_dir: Option<&Path>,
) -> Result<(WordVectors, usize)> {
    let dim = encoder.dim();
    let mut cache = match cache_dir {
        Some(dir) => Cache::read(dir, encoder.identity(), dim)?,
        None => Cache::default(),
    };
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&String> = words.iter().filter(|w| seen.insert(w.as_str())).collect();
    if let Some(bad) = unique
        .iter()
        .find(|w| w.is_empty() || w.contains(['\n', '\r']))
    {
        return Err(VectorsError::Missing(format!(
            "cannot encode the word {bad:?}: words must be non-empty and on one line"
        )));
    }
    let missing: Vec<&str> = unique
        .iter()
        .filter(|w| !cache.index.contains_key(w.as_str()))
        .map(|w| w.as_str())
        .collect();
    if !missing.is_empty() {
        let fresh = encoder.encode(&missing)?;
        for (word, row) in missing.iter().zip(fresh.chunks_exact(dim)) {
            cache.index.insert(word.to_string(), cache.words.len());
            cache.words.push(word.to_string());
            cache.data.extend_from_slice(row);
        }
        if let Some(dir) = cache_dir {
            cache.write(dir, encoder.identity(), dim)?;
        }
    }
    let mut data = Vec::with_capacity(unique.len() * dim);
    for word in &unique {
        let row = cache.index[word.as_str()];
        data.extend_from_slice(&cache.data[row * dim..(row + 1) * dim]);
    }
    let table = WordVectors::new(unique.into_iter().cloned().collect(), dim, data)?;
    Ok((table, missing.len()))
}

/// The cached rows of one encoder.
#[derive(Default)]
struct Cache {
    words: Vec<String>,
    index: HashMap<String, usize>,
    data: Vec<f32>,
}

impl Cache {
    /// The cache in `dir`; empty when there is none or another encoder made it.
    fn read(dir: &Path, identity: &serde_json::Value, dim: usize) -> Result<Cache> {
        let meta_path = dir.join(META_FILE);
        let Ok(meta) = std::fs::read(&meta_path) else {
            return Ok(Cache::default());
        };
        let expected = Self::meta(identity, dim);
        match serde_json::from_slice::<serde_json::Value>(&meta) {
            Ok(found) if found == expected => {}
            _ => return Ok(Cache::default()),
        }
        let words_path = dir.join(WORDS_FILE);
        let text = String::from_utf8(crate::read(&words_path)?)
            .map_err(|e| VectorsError::format(&words_path, format!("not UTF-8: {e}")))?;
        let words: Vec<String> = text.lines().map(str::to_string).collect();
        let vectors_path = dir.join(VECTORS_FILE);
        let bytes = crate::read(&vectors_path)?;
        if bytes.len() != words.len() * dim * 4 {
            return Err(VectorsError::format(
                &vectors_path,
                format!(
                    "{} bytes, but {} words of dimension {dim} need {} (delete {} to rebuild it)",
                    bytes.len(),
                    words.len(),
                    words.len() * dim * 4,
                    dir.display()
                ),
            ));
        }
        let data = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        let mut index = HashMap::with_capacity(words.len());
        for (row, word) in words.iter().enumerate() {
            if index.insert(word.clone(), row).is_some() {
                return Err(VectorsError::format(
                    &words_path,
                    format!("line {}: duplicate word {word:?}", row + 1),
                ));
            }
        }
        Ok(Cache { words, index, data })
    }

    fn meta(identity: &serde_json::Value, dim: usize) -> serde_json::Value {
        serde_json::json!({"identity": identity, "dim": dim})
    }

    /// Writes the three files, each atomically, vectors and words before the meta data that
    /// validates them (a crash in between leaves a cache that fails its size check and says so).
    fn write(&self, dir: &Path, identity: &serde_json::Value, dim: usize) -> Result<()> {
        let io = |e: ansel_model::ModelError| VectorsError::Missing(e.to_string());
        let _ = std::fs::remove_file(dir.join(META_FILE));
        let bytes: Vec<u8> = self.data.iter().flat_map(|x| x.to_le_bytes()).collect();
        ansel_model::write_atomic(&dir.join(VECTORS_FILE), &bytes).map_err(io)?;
        let mut text = String::new();
        for word in &self.words {
            text.push_str(word);
            text.push('\n');
        }
        ansel_model::write_atomic(&dir.join(WORDS_FILE), text.as_bytes()).map_err(io)?;
        let meta = serde_json::to_vec_pretty(&Self::meta(identity, dim)).expect("json");
        ansel_model::write_atomic(&dir.join(META_FILE), &meta).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made-up vectors: a word's row is its length and its first byte, times `scale`.
    struct Fake {
        identity: serde_json::Value,
        scale: f32,
        calls: std::cell::RefCell<Vec<Vec<String>>>,
    }

    impl Fake {
        fn new(name: &str, scale: f32) -> Fake {
            Fake {
                identity: serde_json::json!({ "encoder": name }),
                scale,
                calls: Default::default(),
            }
        }
    }

    impl WordEncoder for Fake {
        fn identity(&self) -> &serde_json::Value {
            &self.identity
        }
        fn dim(&self) -> usize {
            2
        }
        fn encode(&self, words: &[&str]) -> Result<Vec<f32>> {
            self.calls
                .borrow_mut()
                .push(words.iter().map(|w| w.to_string()).collect());
            Ok(words
                .iter()
                .flat_map(|w| [w.len() as f32 * self.scale, w.as_bytes()[0] as f32])
                .collect())
        }
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_cache_encodes_only_new_words_and_is_rebuilt_for_another_encoder() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let fake = Fake::new("a", 1.0);
        let (table, n) = encoded_vectors(&fake, &words(&["ab", "c", "ab"]), Some(&cache)).unwrap();
        assert_eq!((n, table.words()), (2, &words(&["ab", "c"])[..]));
        assert_eq!(table.get("ab").as_deref(), Some(&[2.0, 97.0][..]));
        let (again, n) = encoded_vectors(&fake, &words(&["c", "dd"]), Some(&cache)).unwrap();
        assert_eq!(n, 1);
        assert_eq!(fake.calls.borrow().last().unwrap(), &words(&["dd"]));
        assert_eq!(again.get("c").as_deref(), Some(&[1.0, 99.0][..]));
        // Another encoder does not read the first one's rows.
        let other = Fake::new("b", 10.0);
        let (table, n) = encoded_vectors(&other, &words(&["ab"]), Some(&cache)).unwrap();
        assert_eq!(
            (n, table.get("ab").as_deref()),
            (1, Some(&[20.0, 97.0][..]))
        );
        // A corrupt cache is a clear error naming the file.
        std::fs::write(cache.join(VECTORS_FILE), [0u8; 3]).unwrap();
        let err = encoded_vectors(&other, &words(&["ab"]), Some(&cache))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("vectors.f32") && err.contains("bytes"),
            "{err}"
        );
        // A word that cannot be one line of the cache is refused.
        assert!(encoded_vectors(&fake, &words(&["a\nb"]), None).is_err());
    }
}
