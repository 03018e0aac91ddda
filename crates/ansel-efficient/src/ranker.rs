//! A trained efficient model as a [`Ranker`], on the backend [`BACKEND_ENV`] picks.

use crate::native::NativeRanker;
use crate::vocab::Vocabulary;
use crate::ModelConfig;
use ansel_data::Question;
use ansel_model::{ModelCard, ModelError, Ranker, Result, CARD_FILE};
use std::path::Path;

pub const WEIGHTS: &str = "weights.safetensors";

/// Environment variable choosing how efficient models score: `native` (the plain-Rust forward
/// pass, the default) or `libtorch` (the network training uses; builds with the `torch` feature).
pub const BACKEND_ENV: &str = "ANSEL_EFFICIENT_BACKEND";

/// What scores an efficient model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The plain-Rust forward pass ([`NativeRanker`]).
    Native,
    /// The libtorch network (`LibtorchRanker`); only in builds with the `torch` feature.
    Libtorch,
}

impl Backend {
    pub const NAMES: &'static [&'static str] = &["native", "libtorch"];

    /// The backend [`BACKEND_ENV`] names, [`Backend::Native`] when it is unset or empty.
    pub fn from_env() -> Result<Backend> {
        match std::env::var(BACKEND_ENV) {
            Ok(value) if !value.trim().is_empty() => value.trim().parse(),
            _ => Ok(Backend::Native),
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Backend> {
        match s {
            "native" => Ok(Backend::Native),
            "libtorch" if cfg!(feature = "torch") => Ok(Backend::Libtorch),
            "libtorch" => Err(ModelError::Backend(format!(
                "{BACKEND_ENV}=libtorch: this build has no libtorch (built without the `torch` \
                 feature); unset it to score with the native backend"
            ))),
            _ => Err(ModelError::Backend(format!(
                "unknown {BACKEND_ENV} {s:?}; known: {}",
                Backend::NAMES.join(", ")
            ))),
        }
    }
}

/// The card's config and the vocabulary of a model directory, checked against each other.
pub(crate) fn read_model(dir: &Path, card: &ModelCard) -> Result<(ModelConfig, Vocabulary)> {
    let config: ModelConfig = ansel_model::json::from_value(card.config.clone(), "config")
        .map_err(|message| ModelError::Format {
            path: dir.join(CARD_FILE),
            message,
        })?;
    let vocab = Vocabulary::read(dir)?;
    if vocab.len() != config.vocab_size {
        return Err(ModelError::Format {
            path: dir.join(crate::vocab::FILE),
            message: format!(
                "{} words, but model.json says vocab_size {}",
                vocab.len(),
                config.vocab_size
            ),
        });
    }
    Ok((config, vocab))
}

enum Scorer {
    Native(Box<NativeRanker>),
    #[cfg(feature = "torch")]
    Libtorch(Box<crate::torch_ranker::LibtorchRanker>),
}

/// A saved efficient model on either backend.
pub struct EfficientRanker {
    scorer: Scorer,
}

impl EfficientRanker {
    /// Loads a model directory written by training, scored by the backend [`BACKEND_ENV`] names.
    pub fn load(dir: &Path, card: &ModelCard) -> Result<EfficientRanker> {
        Self::load_with(dir, card, Backend::from_env()?)
    }

    pub fn load_with(dir: &Path, card: &ModelCard, backend: Backend) -> Result<EfficientRanker> {
        let scorer = match backend {
            Backend::Native => Scorer::Native(Box::new(NativeRanker::load(dir, card)?)),
            #[cfg(feature = "torch")]
            Backend::Libtorch => Scorer::Libtorch(Box::new(
                crate::torch_ranker::LibtorchRanker::load(dir, card)?,
            )),
            #[cfg(not(feature = "torch"))]
            Backend::Libtorch => return Err("libtorch".parse::<Backend>().unwrap_err()),
        };
        Ok(EfficientRanker { scorer })
    }

    pub fn backend(&self) -> Backend {
        match &self.scorer {
            Scorer::Native(_) => Backend::Native,
            #[cfg(feature = "torch")]
            Scorer::Libtorch(_) => Backend::Libtorch,
        }
    }

    fn inner(&self) -> &dyn Ranker {
        match &self.scorer {
            Scorer::Native(r) => r.as_ref(),
            #[cfg(feature = "torch")]
            Scorer::Libtorch(r) => r.as_ref(),
        }
    }

    pub fn config(&self) -> &ModelConfig {
        match &self.scorer {
            Scorer::Native(r) => r.config(),
            #[cfg(feature = "torch")]
            Scorer::Libtorch(r) => r.config(),
        }
    }

    /// Trainable parameters (the static embedding table is not counted, as in the thesis).
    pub fn parameters(&self) -> usize {
        match &self.scorer {
            Scorer::Native(r) => r.parameters(),
            #[cfg(feature = "torch")]
            Scorer::Libtorch(r) => r.parameters(),
        }
    }
}

impl Ranker for EfficientRanker {
    fn name(&self) -> &str {
        self.inner().name()
    }

    fn score(&self, question: &Question) -> Result<Vec<f32>> {
        self.inner().score(question)
    }

    fn score_all(&self, questions: &[Question]) -> Result<Vec<Vec<f32>>> {
        self.inner().score_all(questions)
    }

    fn reads_whole_list(&self) -> bool {
        self.inner().reads_whole_list()
    }
}
