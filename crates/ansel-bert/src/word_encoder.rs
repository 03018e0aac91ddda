//! A sentence encoder used as a word encoder (`--vectors minilm-encoded`): every word is
//! encoded alone, as the one-word sentence `[CLS] word [SEP]`, through the whole encoder
//! (all-MiniLM-L6-v2), mean-pooled over its tokens and normalised to unit length, exactly as
//! sentence-transformers embeds a sentence. ansel-vectors builds and caches the table
//! ([`ansel_vectors::encoded::encoded_vectors`]); this is the part that runs the encoder.

use crate::bi_encoder::{embed_texts, load_encoder, normalise};
use crate::{BiEncoder, PairTokenizer};
use ansel_torch::tch::{self, Kind};
use ansel_vectors::{Result, VectorsError};
use std::path::Path;

/// Longest word, in tokens with `[CLS]` and `[SEP]`; longer ones are cut.
const MAX_TOKENS: usize = 16;
/// Words per encoder call (short inputs: the batch costs little memory).
const BATCH: usize = 256;

fn model_error(e: ansel_model::ModelError) -> VectorsError {
    VectorsError::Missing(e.to_string())
}

/// A BERT sentence encoder that encodes words, each alone.
pub struct WordEncoder {
    model: BiEncoder,
    tokenizer: PairTokenizer,
    /// What identifies the encoder in a cache: its directory and weight file size.
    identity: serde_json::Value,
}

impl WordEncoder {
    /// Loads a BERT sentence-encoder directory (`config.json`, `tokenizer.json`,
    /// `model.safetensors`).
    pub fn load(dir: &Path) -> Result<WordEncoder> {
        let (encoder, tokenizer) = load_encoder(dir).map_err(model_error)?;
        let weights = dir.join("model.safetensors");
        let bytes = std::fs::metadata(&weights)
            .map_err(|source| VectorsError::Io {
                path: weights.clone(),
                source,
            })?
            .len();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(WordEncoder {
            model: BiEncoder::new(encoder, None),
            tokenizer,
            identity: serde_json::json!({
                "encoder": name, "weights_bytes": bytes,
                "pooling": "mean over [CLS] word [SEP], unit length",
            }),
        })
    }
}

impl ansel_vectors::encoded::WordEncoder for WordEncoder {
    fn identity(&self) -> &serde_json::Value {
        &self.identity
    }

    fn dim(&self) -> usize {
        self.model.encoder.config.hidden_size as usize
    }

    /// Unit-length vectors, each the encoder's output for its word alone (batched by length:
    /// padding is masked, so a batch gives the same vectors).
    fn encode(&self, words: &[&str]) -> Result<Vec<f32>> {
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let pooled = embed_texts(&self.model, &self.tokenizer, words, MAX_TOKENS, BATCH)
            .map_err(model_error)?;
        let unit = tch::no_grad(|| normalise(&pooled).to_kind(Kind::Float).contiguous());
        Ok(Vec::<f32>::try_from(unit.reshape([-1])).expect("a float tensor"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_vectors::encoded::{encoded_vectors, WordEncoder as _};

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    /// A tiny random BERT: no downloaded files.
    #[test]
    fn each_word_gets_the_encoders_output_for_it_alone_and_the_cache_reuses_it() {
        let _serial = crate::testing::serial();
        let tmp = tempfile::tempdir().unwrap();
        let base = crate::testing::tiny_base(tmp.path(), 0.0);
        let encoder = WordEncoder::load(&base).unwrap();
        let dim = encoder.dim();
        let list = words(&["hamlet", "who", "shakespeare", "plays", "who", "tragedy"]);
        let cache = tmp.path().join("cache");
        let (table, encoded) = encoded_vectors(&encoder, &list, Some(&cache)).unwrap();
        // Repeated words once, in first-seen order.
        assert_eq!(encoded, 5);
        assert_eq!(
            table.words(),
            &list[..4]
                .iter()
                .chain(&list[5..])
                .cloned()
                .collect::<Vec<_>>()[..]
        );
        assert_eq!(table.dim(), dim);
        for word in table.words() {
            let alone = encoder.encode(&[word.as_str()]).unwrap();
            let row = table.get(word).unwrap();
            assert_eq!(alone.len(), dim);
            let norm: f32 = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{word}: norm {norm}");
            for (a, b) in row.iter().zip(&alone) {
                assert!((a - b).abs() < 1e-5, "{word}: batched {a} vs alone {b}");
            }
        }
        // Different words, different vectors ("plays" is play + ##s).
        assert!(cos(&table.get("plays").unwrap(), &table.get("hamlet").unwrap()) < 0.9999);
        // The second call (a freshly loaded encoder: the same identity) encodes only the new
        // word and returns the same rows.
        let reloaded = WordEncoder::load(&base).unwrap();
        let (again, encoded) = encoded_vectors(
            &reloaded,
            &words(&["tragedy", "denmark", "hamlet"]),
            Some(&cache),
        )
        .unwrap();
        assert_eq!(encoded, 1);
        assert_eq!(again.get("hamlet"), table.get("hamlet"));
        assert_eq!(again.get("tragedy"), table.get("tragedy"));
    }

    /// The real all-MiniLM-L6-v2, where `scripts/fetch-models.sh` has fetched it: a handful of
    /// words, related ones closer than unrelated ones.
    #[test]
    fn real_minilm_encodes_related_words_closer() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vendor/models/all-minilm-l6-v2");
        if !dir.is_dir() {
            eprintln!("skipped: all-minilm-l6-v2 not fetched");
            return;
        }
        ansel_torch::init(1, 0);
        let encoder = WordEncoder::load(&dir).unwrap();
        let (table, _) = encoded_vectors(
            &encoder,
            &words(&["king", "queen", "carburetor", "wrote", "author"]),
            None,
        )
        .unwrap();
        assert_eq!(table.dim(), 384);
        let v = |w: &str| table.get(w).unwrap().to_vec();
        assert!(cos(&v("king"), &v("queen")) > cos(&v("king"), &v("carburetor")) + 0.2);
        assert!(cos(&v("wrote"), &v("author")) > cos(&v("wrote"), &v("carburetor")));
    }
}
