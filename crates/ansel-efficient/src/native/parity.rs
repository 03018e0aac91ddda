//! The native forward pass against the libtorch network on random networks of every
//! architecture, candidate reader and variant the config allows (seeded, so every run draws the
//! same weights): scores within 1e-5.

use super::Network;
use crate::encode::{EncodedQuestion, Limits};
use crate::kinds::{Architecture, RnnKind};
use crate::torch_ranker::Loaded;
use crate::vocab::Vocabulary;
use crate::{Loss, ModelConfig};
use ansel_data::{Candidate, DocContext, Question};

const WORDS: &[&str] = &[
    "who",
    "wrote",
    "hamlet",
    "shakespeare",
    "play",
    "the",
    "tragedy",
    "of",
    "denmark",
    "prince",
    "is",
    "a",
    "set",
    "in",
    "english",
    "poet",
    "london",
    "born",
    "stratford",
    "year",
];

/// Questions of 1 to 7 candidates (libtorch pads them into one batch), with empty texts, words
/// outside the vocabulary, texts past the token limits, and one question in document order
/// given shuffled.
fn questions() -> Vec<Question> {
    let text = |seed: usize, len: usize| -> String {
        (0..len)
            .map(|i| match (seed * 7 + i * 13) % 23 {
                20 => "zzzunknown",
                21 => "qqq",
                22 => "hamlet",
                k => WORDS[k],
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let lengths: [&[usize]; 5] = [
        &[4],
        &[9, 1, 3],
        &[0, 5, 12, 2],
        &[7, 7, 3, 6, 2, 8, 1],
        &[3, 4],
    ];
    lengths
        .iter()
        .enumerate()
        .map(|(q, lens)| {
            let candidates = lens
                .iter()
                .enumerate()
                .map(|(i, &len)| Candidate {
                    id: i.to_string(),
                    text: text(q * 10 + i, len),
                    label: Some(i == 0),
                    context: (q == 3).then(|| DocContext {
                        doc_id: "d".into(),
                        title: None,
                        position: (i * 5) % lens.len(),
                        prev: None,
                        next: None,
                    }),
                })
                .collect();
            Question {
                id: q.to_string(),
                text: if q == 4 {
                    String::new()
                } else {
                    text(q, 3 + q)
                },
                candidates,
            }
        })
        .collect()
}

/// Deterministic values in about [-1, 1].
fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 + seed) * 0.731).sin() * 1.3 - 0.1)
        .collect()
}

fn config(
    architecture: Architecture,
    rnn: RnnKind,
    thesis: bool,
    parts: Vec<usize>,
) -> ModelConfig {
    ModelConfig {
        architecture,
        loss: Loss::Listwise,
        rnn,
        vectors: "test".into(),
        vector_dim: None,
        embedding_dim: 6,
        vocab_size: WORDS.len() + 2,
        hidden: 8,
        dropout: 0.5,
        limits: Limits {
            question_tokens: 5,
            candidate_tokens: 10,
        },
        no_exact_match: thesis,
        no_skip: thesis,
        relatedness_parts: parts,
    }
}

#[test]
fn native_scores_equal_libtorch_on_random_networks_of_every_kind() {
    let vocab = Vocabulary::from_words(
        ["<pad>", "<unk>"]
            .iter()
            .chain(WORDS)
            .map(|w| w.to_string())
            .collect(),
    );
    let mut rows = values(vocab.len() * 6, 3.0);
    rows[..2 * 6].fill(0.0);
    let questions = questions();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weights.safetensors");
    let (mut checked, mut worst) = (0, 0f32);
    for architecture in [
        Architecture::Cosinenet,
        Architecture::Relcnn,
        Architecture::CompareAggregate,
    ] {
        for rnn in [RnnKind::None, RnnKind::Rnn, RnnKind::Birnn] {
            let mut variants = vec![(false, Vec::new()), (true, Vec::new())];
            if architecture == Architecture::Cosinenet {
                variants.extend([(false, vec![4, 2]), (true, vec![3, 3])]);
            }
            for (thesis, parts) in variants {
                let config = config(architecture, rnn, thesis, parts.clone());
                ansel_torch::tch::manual_seed(11 + checked);
                let mut loaded = Loaded::new(&config);
                loaded.net.embeddings.fill(&rows);
                ansel_torch::save_vars(&loaded.vs, &path).unwrap();
                loaded.net.prepare_scoring();
                let encoded: Vec<EncodedQuestion> = questions
                    .iter()
                    .map(|q| EncodedQuestion::new(q, &vocab, config.limits))
                    .collect();
                let torch = loaded.score(&encoded);
                let native = Network::load(&config, &path).unwrap();
                assert_eq!(native.parameters, loaded.parameters());
                let what = format!("{architecture:?} {rnn:?} thesis={thesis} parts={parts:?}");
                let mut spread = 0f32;
                for (t, q) in torch.iter().zip(&encoded) {
                    let n = native.score(q);
                    assert_eq!(n.len(), t.len(), "{what}");
                    for (a, b) in n.iter().zip(t) {
                        assert!(
                            (a - b).abs() <= 1e-5,
                            "{what}: native {n:?}, libtorch {t:?}"
                        );
                        worst = worst.max((a - b).abs());
                        spread = spread.max(b.abs());
                    }
                }
                // The networks are not degenerate: their scores vary.
                assert!(spread > 1e-3, "{what}: {torch:?}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * 3 * 2 + 3 * 2);
    eprintln!("{checked} random networks: largest score difference {worst:e}");
}
