//! Lexical AS2 baselines, by their command-line names:
//!
//! | name     | score |
//! |----------|-------|
//! | `wo`     | number of distinct question words (stop words out) found in the candidate |
//! | `idf-wo` | the same words, each weighted by its IDF |
//! | `rr`     | 1 / (1 + position of the candidate in its document) |
//! | `wo-rr`  | `wo`, with `rr` breaking its ties |
//! | `bm25`   | Okapi BM25 of the question against the candidate (`bm25:k1=1.2,b=0.75`) |
//!
//! IDF and BM25 statistics come from a [`TermStats`] collection, built from
//! whatever candidate sentences the caller has (for `ansel eval`, every
//! candidate of the data set being evaluated, labels unused).

mod bm25;
mod overlap;
mod position;
mod search;
mod stats;

pub use bm25::Bm25;
pub use overlap::{IdfWordOverlap, WordOverlap, WordOverlapRr};
pub use position::ReciprocalRank;
pub use search::Bm25Index;
pub use stats::TermStats;

use ansel_data::Question;
use ansel_model::Ranker;

/// The lexical model names, for help texts.
pub const NAMES: [&str; 5] = ["wo", "idf-wo", "rr", "wo-rr", "bm25"];

/// The lexical models that weigh words by corpus statistics ([`from_spec`] takes them from its
/// corpus; without one every word weighs the same).
pub const CORPUS_NAMES: [&str; 2] = ["idf-wo", "bm25"];

/// Builds a lexical ranker from its command-line spec, with term statistics
/// from `corpus`. `Ok(None)` when the spec names no lexical model.
pub fn from_spec(spec: &str, corpus: &[Question]) -> Result<Option<Box<dyn Ranker>>, String> {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let stats = || TermStats::from_questions(corpus);
    let ranker: Box<dyn Ranker> = match name {
        "wo" => Box::new(WordOverlap),
        "idf-wo" => Box::new(IdfWordOverlap::new(stats())),
        "rr" => Box::new(ReciprocalRank),
        "wo-rr" => Box::new(WordOverlapRr),
        "bm25" => {
            let mut bm25 = Bm25::new(stats());
            for param in params.split(',').filter(|p| !p.is_empty()) {
                let (key, value) = param
                    .split_once('=')
                    .ok_or_else(|| format!("{spec}: expected key=value, found {param:?}"))?;
                let value: f32 = value
                    .parse()
                    .map_err(|_| format!("{spec}: {key} must be a number, found {value:?}"))?;
                match key {
                    "k1" if value >= 0.0 => bm25.k1 = value,
                    "b" if (0.0..=1.0).contains(&value) => bm25.b = value,
                    "k1" | "b" => {
                        return Err(format!(
                            "{spec}: {key}={value} is out of range (k1 >= 0, 0 <= b <= 1)"
                        ))
                    }
                    _ => return Err(format!("{spec}: unknown BM25 parameter {key:?} (k1, b)")),
                }
            }
            Box::new(bm25)
        }
        _ => return Ok(None),
    };
    if !params.is_empty() && name != "bm25" {
        return Err(format!("{spec}: {name} takes no parameters"));
    }
    Ok(Some(ranker))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_resolve_and_bad_parameters_are_explained() {
        for name in NAMES {
            assert_eq!(from_spec(name, &[]).unwrap().unwrap().name(), name);
        }
        assert!(from_spec("cosinenet", &[]).unwrap().is_none());
        assert!(from_spec("bm25:k1=0.9,b=0.4", &[]).unwrap().is_some());
        assert!(from_spec("bm25:b=2", &[])
            .err()
            .unwrap()
            .contains("out of range"));
        assert!(from_spec("bm25:z=1", &[])
            .err()
            .unwrap()
            .contains("unknown BM25 parameter"));
        assert!(from_spec("wo:x=1", &[])
            .err()
            .unwrap()
            .contains("takes no parameters"));
    }
}
