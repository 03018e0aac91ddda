//! The architectures and candidate readers a [`crate::ModelConfig`] names.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    Cosinenet,
    Relcnn,
    CompareAggregate,
}

impl Architecture {
    pub const NAMES: &'static [&'static str] = &["cosinenet", "relcnn", "compare-aggregate"];

    pub fn name(self) -> &'static str {
        match self {
            Architecture::Cosinenet => "cosinenet",
            Architecture::Relcnn => "relcnn",
            Architecture::CompareAggregate => "compare-aggregate",
        }
    }

    /// Conv hidden size: 100 for RelCNN (thesis 3.4.1), 150 for
    /// Compare-Aggregate (Wang and Jiang). Cosinenet: 200, between the
    /// thesis' 100 (ch. 6) and 300 (ch. 7): the best WikiQA dev MAP of the
    /// three in a few trial runs.
    pub fn default_hidden(self) -> usize {
        match self {
            Architecture::Cosinenet => 200,
            Architecture::Relcnn => 100,
            Architecture::CompareAggregate => 150,
        }
    }
}

impl std::str::FromStr for Architecture {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::NAMES
            .iter()
            .position(|n| *n == s)
            .map(|i| [Self::Cosinenet, Self::Relcnn, Self::CompareAggregate][i])
            .ok_or_else(|| format!("unknown model {s:?}; known: {}", Self::NAMES.join(", ")))
    }
}

/// What reads the candidates of a question before scoring them (thesis ch. 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RnnKind {
    /// Every candidate scored on its own.
    None,
    /// A tanh RNN over the candidates in document order.
    Rnn,
    /// Forward and backward tanh RNNs, each with half the hidden size.
    Birnn,
}

impl RnnKind {
    pub const NAMES: &'static [&'static str] = &["none", "rnn", "birnn"];
}

impl std::str::FromStr for RnnKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(RnnKind::None),
            "rnn" => Ok(RnnKind::Rnn),
            "birnn" => Ok(RnnKind::Birnn),
            _ => Err(format!(
                "unknown --rnn {s:?}; known: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}
