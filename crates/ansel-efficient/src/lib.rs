//! The efficient answer-sentence-selection rankers of Bonadiman's thesis
//! (chapters 3.4, 6 and 7): RelCNN, Compare-Aggregate and Cosinenet over
//! static word vectors, trained point-wise (binary cross-entropy) or
//! list-wise (softmax over a question's candidates, KL divergence to the
//! normalised gold labels), optionally with an RNN or BiRNN that reads a
//! question's candidates in document order before scoring them.
//!
//! Without document order (TrecQA: the reader shuffles each question's
//! candidates with a fixed seed and gives no positions) the RNN reads the
//! candidates in the order the reader gives them.
//!
//! A model directory holds `model.json` (its [`ModelConfig`] and training
//! record), `weights.safetensors` (including the rows of the word vectors its
//! vocabulary needs) and `vocab.txt`; it loads with no vector package present.

//!
//! Scoring runs on one of two backends that read the same files and the same encoded features
//! ([`encode`]): a plain-Rust forward pass ([`NativeRanker`], no libtorch, what a build without
//! the `torch` feature has) and the libtorch network training uses (`LibtorchRanker`, with the
//! `torch` feature). [`EfficientRanker::load`] picks one: see [`BACKEND_ENV`].

#[cfg(feature = "torch")]
mod average;
#[cfg(feature = "torch")]
mod batch;
mod encode;
mod kinds;
#[cfg(feature = "torch")]
mod layers;
mod native;
#[cfg(feature = "torch")]
mod nets;
mod ranker;
#[cfg(feature = "torch")]
mod torch_ranker;
#[cfg(feature = "torch")]
mod train;
#[cfg(feature = "torch")]
mod vectors;
mod vocab;

#[cfg(feature = "torch")]
pub use average::Averaging;
pub use encode::{Distill, Limits};
pub use kinds::{Architecture, RnnKind};
pub use native::NativeRanker;
pub use ranker::{Backend, EfficientRanker, BACKEND_ENV};
#[cfg(feature = "torch")]
pub use torch_ranker::LibtorchRanker;
#[cfg(feature = "torch")]
pub use train::{train, train_with_vectors, TrainOptions, TrainSummary};
pub use vocab::{Vocabulary, PAD, RESERVED, UNK};

use serde::{Deserialize, Serialize};

/// The card kinds this crate trains and loads.
pub const KINDS: &[&str] = Architecture::NAMES;

/// Training objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Loss {
    Pointwise,
    Listwise,
}

impl Loss {
    pub const NAMES: &'static [&'static str] = &["pointwise", "listwise"];

    /// Peak learning rate for Adam. The thesis (ch. 7.3.2) uses 2e-3
    /// point-wise and 2e-4 list-wise; with GloVe 50d and five epochs 2e-4
    /// under-trained the list-wise models (lower WikiQA dev MAP in trial runs).
    pub fn default_lr(self) -> f64 {
        2e-3
    }
}

impl std::str::FromStr for Loss {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pointwise" => Ok(Loss::Pointwise),
            "listwise" => Ok(Loss::Listwise),
            _ => Err(format!(
                "unknown --loss {s:?}; known: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// Knowledge distillation from a teacher ranker (any model spec the CLI loads): the
/// list-wise target of a question becomes `(1 - weight) * gold + weight * softmax(teacher /
/// temperature)`, the point-wise target of a pair `(1 - weight) * label + weight *
/// sigmoid(teacher / temperature)`. Recorded in the card's hyperparameters; a trained model
/// scores without its teacher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distillation {
    /// The teacher's model spec, as given.
    pub teacher: String,
    pub weight: f64,
    pub temperature: f64,
    /// The cache files (by key) the teacher's scores were read from, one per data file.
    pub caches: Vec<String>,
    /// List-wise: also train on questions without a gold positive, with target `weight *
    /// softmax(teacher / temperature)` (a question's target then sums to `weight`).
    #[serde(default)]
    pub unanswered: bool,
    /// Data files labelled by the teacher alone (no gold): target `softmax(teacher /
    /// temperature)` (point-wise: `sigmoid(teacher / temperature)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_train: Vec<String>,
    /// The teacher's scores were read from these files (`--teacher-scores`) rather than
    /// computed from a model; `teacher` then names the models the files record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores_files: Vec<String>,
}

/// The teacher's scores for a training run.
#[derive(Clone)]
pub struct Teacher {
    pub distillation: Distillation,
    /// One score per candidate (in the data's order) for every training question.
    pub train_scores: Vec<Vec<f32>>,
    /// Questions labelled by the teacher only (their gold labels are ignored), with scores.
    pub extra: Vec<(ansel_data::Question, Vec<f32>)>,
}

impl std::fmt::Debug for Teacher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teacher")
            .field("distillation", &self.distillation)
            .field("train_questions", &self.train_scores.len())
            .field("extra_questions", &self.extra.len())
            .finish()
    }
}

/// Everything needed to rebuild the network of a saved model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub architecture: Architecture,
    pub loss: Loss,
    pub rnn: RnnKind,
    /// Which pretrained vectors the embedding rows came from.
    pub vectors: String,
    /// The principal components the vectors were reduced to (`--vector-dim`); none: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_dim: Option<usize>,
    pub embedding_dim: usize,
    pub vocab_size: usize,
    pub hidden: usize,
    pub dropout: f64,
    pub limits: Limits,
    /// Cosinenet as the thesis describes it (ch. 7.2.1): each word's relatedness alone, the
    /// plain largest cosine, with no exact-match flag beside it and exact matches of words
    /// without a vector not counted as 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_exact_match: bool,
    /// The thesis' scorer (ch. 7.2.2): with an RNN, the linear layer sees the RNN's states
    /// only, not the pair vector beside them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_skip: bool,
    /// Cosinenet: widths of consecutive column groups of the word vectors (GloVe's 50 and the
    /// MiniLM part of `glove+minilm-encoded`), each giving its own relatedness feature; empty:
    /// one relatedness over the whole vector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relatedness_parts: Vec<usize>,
}
