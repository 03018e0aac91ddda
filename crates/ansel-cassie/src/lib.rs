//! CASSIE (Nguyen et al., "Question-Context Alignment and Answer-Context Dependencies for
//! Effective Answer Sentence Selection"): contextual AS2 with a question-context alignment
//! by optimal transport and a GCN over the candidate and its neighbouring sentences.
//!
//! CASSIE is a head on an ansel cross-encoder, either frozen (features cached once; [`train`])
//! or fine-tuned together with the head ([`end_to_end`], the paper's set-up):
//! - [`features`]: each (question, sentence) pair goes once through the encoder as
//!   `[CLS] q [SEP] s [SEP]`; content-word vectors, pooled `[CLS]` and logit are kept
//!   (and cached on disk for training);
//! - [`ot`]: log-domain, batched Sinkhorn-Knopp between question and sentence words,
//!   the relevant context and its mean vector (eq. 1);
//! - [`head`]: node inputs with role embeddings (candidate / previous / next / padding),
//!   edge weights from an FFN over `[r_i * r_j; d_i; d_j]`, a 2-layer GCN (eq. 2), the
//!   score FFN and the MINE-style mutual-information discriminator (eq. 3);
//! - [`train`] and [`ranker`]: training with early stopping on dev MAP, and the model
//!   directory served as a `Ranker` (with `explain`, the alignments behind a score).

pub mod end_to_end;
pub mod features;
pub mod head;
pub mod ot;
pub mod ranker;
pub mod split;
pub mod train;

pub use end_to_end::{train_end_to_end, EndToEndOptions};
pub use features::{PairEncoder, PairLogits, PairSet, QuestionGraph, WordMass};
pub use head::{Head, HeadConfig, NodeBatch};
pub use ot::{align, sinkhorn_log, Alignment, OtOptions};
pub use ranker::{relative_to, CassieRanker, CassieSettings, Explanation, HEAD_FILE};
pub use split::SplitFeatures;
pub use train::{fit, FitOptions, Fitted, Prepared};

/// The `kind` of a CASSIE model card.
pub const KIND: &str = "cassie";
