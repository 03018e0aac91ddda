//! The first stage of the cascade: which records of the index a question's candidates are.
//!
//! - [`Retrieval::Bm25`]: tantivy's BM25 over the record and its title;
//! - [`Retrieval::Dense`]: the question's vector (by the sentence encoder that made the index's
//!   vectors) against every record's, by inner product (cosine: vectors are unit length);
//! - [`Retrieval::Hybrid`]: reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009:
//!   `sum 1 / (k + rank)`, k = 60) of BM25's best `fusion_depth` and the dense retriever's best
//!   as many, of which the best `retrieve` go on.
//!
//! [`Retriever`] is where a search engine plugs in; [`IndexRetriever`] is ansel's own index.
//!
//! Dense and hybrid retrieval need an index made with vectors (`ansel index --dense MODEL`);
//! on any other index they are refused ([`IndexError::NoVectors`]).

use crate::AnswerError;
use ansel_index::{Encoder, Hit, IndexError, IndexStats, Scored, SentenceIndex, Unit, UnitId};
use std::collections::HashMap;
use std::sync::Arc;

/// Which retriever finds a question's candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Retrieval {
    #[default]
    Bm25,
    Dense,
    Hybrid,
}

impl Retrieval {
    pub const NAMES: [&'static str; 3] = ["bm25", "dense", "hybrid"];

    pub fn name(self) -> &'static str {
        match self {
            Retrieval::Bm25 => "bm25",
            Retrieval::Dense => "dense",
            Retrieval::Hybrid => "hybrid",
        }
    }

    /// Whether it searches the index's vectors.
    pub fn needs_vectors(self) -> bool {
        self != Retrieval::Bm25
    }
}

impl std::str::FromStr for Retrieval {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bm25" => Ok(Retrieval::Bm25),
            "dense" => Ok(Retrieval::Dense),
            "hybrid" => Ok(Retrieval::Hybrid),
            other => Err(format!(
                "unknown retriever {other:?} (one of {})",
                Retrieval::NAMES.join(", ")
            )),
        }
    }
}

/// The constant of reciprocal rank fusion (Cormack et al. 2009).
pub const RRF_K: f32 = 60.0;

/// Records BM25 and the dense retriever each put into a hybrid fusion, unless told otherwise
/// (at least the number retrieved).
pub const DEFAULT_FUSION_DEPTH: usize = 100;

/// Where a question's candidates come from: the one place a search engine plugs into the
/// cascade. [`IndexRetriever`] searches ansel's own index (tantivy BM25 and the vectors beside
/// it); an engine elsewhere (a Solr or OpenSearch cluster) is another implementation that
/// returns the same [`Hit`]s: records with their context.
pub trait Retriever: Send + Sync {
    /// What a question that does not choose gets.
    fn default_retrieval(&self) -> Retrieval;
    /// Refuses `kind` when this retriever cannot serve it (no vectors, or no encoder loaded).
    fn check(&self, kind: Retrieval) -> Result<(), AnswerError>;
    /// The `limit` best records for `question` by `kind`, best first.
    fn retrieve(
        &self,
        question: &str,
        kind: Retrieval,
        limit: usize,
    ) -> Result<Vec<Hit>, AnswerError>;
    /// Documents and records searched.
    fn stats(&self) -> Result<IndexStats, AnswerError>;
    /// What its records are: sentences or passages.
    fn unit(&self) -> Unit;
    /// What it searches, as its errors name it (`index DIR`).
    fn source(&self) -> String;

    /// Whether questions may ask for the dense and hybrid retrievers.
    fn offers_dense(&self) -> bool {
        self.check(Retrieval::Dense).is_ok()
    }
}

/// Finds candidates in an ansel index: BM25 always; dense and hybrid retrieval with the encoder
/// of the index's vectors.
pub struct IndexRetriever {
    index: Arc<SentenceIndex>,
    /// What a question that does not choose gets.
    default: Retrieval,
    /// Encodes questions for the dense and hybrid retrievers: the model that made the index's
    /// vectors. `None`: only BM25 is offered.
    encoder: Option<Arc<dyn Encoder>>,
    /// Records each retriever puts into a hybrid fusion (raised to the number retrieved).
    fusion_depth: usize,
}

impl IndexRetriever {
    /// BM25 alone.
    pub fn bm25(index: Arc<SentenceIndex>) -> IndexRetriever {
        IndexRetriever {
            index,
            default: Retrieval::Bm25,
            encoder: None,
            fusion_depth: DEFAULT_FUSION_DEPTH,
        }
    }

    /// A retriever over `index` whose questions get `default` unless they choose. With
    /// `encoder` (the model of the index's vectors, checked by the caller) it also offers
    /// dense and hybrid retrieval; a `default` that needs vectors on an index without them is
    /// refused here, before any question.
    pub fn new(
        index: Arc<SentenceIndex>,
        default: Retrieval,
        encoder: Option<Arc<dyn Encoder>>,
        fusion_depth: usize,
    ) -> Result<IndexRetriever, AnswerError> {
        let retriever = IndexRetriever {
            index,
            default,
            encoder,
            fusion_depth,
        };
        retriever.check(default)?;
        if default.needs_vectors() {
            // Reads and checks every vector file now, so a bad one stops the start, named.
            retriever.index.snapshot().check_vectors()?;
        }
        Ok(retriever)
    }

    /// The index it searches.
    pub fn index(&self) -> &Arc<SentenceIndex> {
        &self.index
    }

    /// The question's vector.
    fn encode(&self, question: &str, kind: Retrieval) -> Result<Vec<f32>, AnswerError> {
        let Some(encoder) = self.encoder.as_ref() else {
            self.check(kind)?;
            return Err(AnswerError::NoEncoder { retriever: kind });
        };
        let failed = |message: String| AnswerError::Encoder {
            model: encoder.model().to_string(),
            message,
        };
        encoder
            .encode(&[question])
            .map_err(failed)?
            .pop()
            .ok_or_else(|| failed("returned no vector".into()))
    }
}

impl Retriever for IndexRetriever {
    fn default_retrieval(&self) -> Retrieval {
        self.default
    }

    fn check(&self, kind: Retrieval) -> Result<(), AnswerError> {
        if !kind.needs_vectors() {
            return Ok(());
        }
        if self.index.dense_settings()?.is_none() {
            return Err(IndexError::NoVectors(self.index.dir().to_path_buf()).into());
        }
        if self.encoder.is_none() {
            return Err(AnswerError::NoEncoder { retriever: kind });
        }
        Ok(())
    }

    fn offers_dense(&self) -> bool {
        self.encoder.is_some()
    }

    fn retrieve(
        &self,
        question: &str,
        kind: Retrieval,
        limit: usize,
    ) -> Result<Vec<Hit>, AnswerError> {
        let snapshot = self.index.snapshot();
        let found = match kind {
            Retrieval::Bm25 => snapshot.bm25(question, limit)?,
            Retrieval::Dense => snapshot.dense(&self.encode(question, kind)?, limit)?,
            Retrieval::Hybrid => {
                let depth = self.fusion_depth.max(limit);
                let vector = self.encode(question, kind)?;
                let lexical = snapshot.bm25(question, depth)?;
                let dense = snapshot.dense(&vector, depth)?;
                reciprocal_rank_fusion(&[&lexical, &dense], RRF_K, limit)
            }
        };
        Ok(snapshot.hits(&found)?)
    }

    fn stats(&self) -> Result<IndexStats, AnswerError> {
        Ok(self.index.stats()?)
    }

    fn unit(&self) -> Unit {
        self.index.unit()
    }

    fn source(&self) -> String {
        format!("index {}", self.index.dir().display())
    }
}

/// Reciprocal rank fusion of ranked lists: each record scores `sum 1 / (k + rank)`, the first
/// rank being 1, over the lists it is in; the best `limit`, best first. Ties go to the record
/// met first reading the lists rank by rank, in the order given.
pub fn reciprocal_rank_fusion(lists: &[&[Scored]], k: f32, limit: usize) -> Vec<Scored> {
    let mut fused: HashMap<UnitId, (f32, usize)> = HashMap::new();
    let longest = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    for rank in 0..longest {
        for list in lists {
            if let Some(found) = list.get(rank) {
                let seen = fused.len();
                let entry = fused.entry(found.unit).or_insert((0.0, seen));
                entry.0 += 1.0 / (k + rank as f32 + 1.0);
            }
        }
    }
    let mut order: Vec<(UnitId, f32, usize)> = fused
        .into_iter()
        .map(|(unit, (score, seen))| (unit, score, seen))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    order
        .into_iter()
        .take(limit)
        .map(|(unit, score, _)| Scored { unit, score })
        .collect()
}
