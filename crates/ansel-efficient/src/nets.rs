//! The three pair encoders of the thesis and the network that joins one of
//! them with the embeddings and the scoring head.

use crate::batch::Batch;
use crate::layers::{masked_max, Conv, Embeddings, ScoreHead, WordConvTable};
use crate::ModelConfig;
use ansel_torch::tch::{nn, nn::Module, Kind, Tensor};

use crate::kinds::Architecture;

/// A CNN encoder (width 5, tanh, max pooling) over word vectors plus
/// per-pair word features: the words are convolved once per question or
/// candidate, the features once per pair (see [`Conv`]).
struct PairCnn {
    words: Conv,
    features: Conv,
    /// `words` tabled per vocabulary word, for scoring (see [`Network::prepare_scoring`]).
    table: Option<WordConvTable>,
}

impl PairCnn {
    fn new(p: nn::Path, dim: i64, features: i64, hidden: i64) -> PairCnn {
        let fan_in = dim + features;
        PairCnn {
            words: Conv::new(&p / "words", dim, hidden, 5, fan_in, true),
            features: Conv::new(&p / "features", features, hidden, 5, fan_in, false),
            table: None,
        }
    }

    /// The word part of the convolution, from the table when there is one (and not training).
    fn words(&self, vectors: &Tensor, ids: &Tensor, mask: &Tensor, train: bool) -> Tensor {
        match &self.table {
            Some(table) if !train => table.apply(ids),
            _ => self.words.apply(vectors, mask),
        }
    }

    /// `words_pre`: `self.words` already applied (and spread to pairs).
    /// tanh is increasing, so it is applied after the max pooling: the same
    /// result (and gradient) on `[rows, hidden]` instead of every token.
    fn pool(&self, words_pre: Tensor, features: &Tensor, mask: &Tensor) -> Tensor {
        masked_max(&(words_pre + self.features.apply(features, mask)), mask).tanh()
    }
}

/// Cosinenet (thesis 7.2.1): words carry their maximum cosine to the other
/// text (and, beyond the thesis, their exact-match flag: GloVe 50d cosines
/// are noisier than the thesis' Numberbatch ones); two CNNs with max
/// pooling; pair vector `[q*c ; q-c]`.
struct Cosinenet {
    question: PairCnn,
    candidate: PairCnn,
    /// The exact-match flag beside the relatedness (not in the thesis).
    exact: bool,
    /// Column groups with a relatedness feature each (empty: the whole vector).
    parts: Vec<usize>,
}

/// RelCNN (Severyn and Moschitti; thesis 3.4.1): trainable word-overlap
/// embeddings beside the word vectors, CNNs of width 5, bilinear similarity
/// `q M c`, and a hidden layer over `[q ; sim ; c ; overlap]`.
struct RelCnn {
    overlap: nn::Embedding,
    question: PairCnn,
    candidate: PairCnn,
    similarity: Tensor,
    hidden: nn::Linear,
}

const OVERLAP_DIM: i64 = 5;

/// Compare-Aggregate (Wang and Jiang; thesis 3.4.2): gated projection,
/// attention of each candidate word over the question, element-wise
/// comparison, CNNs of widths 1-5 with ReLU and max pooling.
struct CompareAggregate {
    gate: nn::Linear,
    value: nn::Linear,
    convs: Vec<Conv>,
}

enum Encoder {
    Cosinenet(Cosinenet),
    Relcnn(RelCnn),
    CompareAggregate(CompareAggregate),
}

/// Embeddings → pair encoder → scoring head.
pub struct Network {
    pub embeddings: Embeddings,
    encoder: Encoder,
    head: ScoreHead,
}

impl Network {
    pub fn new(root: &nn::Path, config: &ModelConfig) -> Network {
        let dim = config.embedding_dim as i64;
        let h = config.hidden as i64;
        let embeddings =
            Embeddings::new(root / "embedding", config.vocab_size, config.embedding_dim);
        let p = root / "encoder";
        // Cosinenet's per-word features: relatedness (one per column group), and the
        // exact-match flag unless left out.
        let features = config.relatedness_parts.len().max(1) as i64
            + if config.no_exact_match { 0 } else { 1 };
        let (encoder, pair_dim) = match config.architecture {
            Architecture::Cosinenet => (
                Encoder::Cosinenet(Cosinenet {
                    question: PairCnn::new(&p / "question", dim, features, h),
                    candidate: PairCnn::new(&p / "candidate", dim, features, h),
                    exact: !config.no_exact_match,
                    parts: config.relatedness_parts.clone(),
                }),
                2 * h,
            ),
            Architecture::Relcnn => {
                let join = 2 * h + 2;
                (
                    Encoder::Relcnn(RelCnn {
                        overlap: nn::embedding(&p / "overlap", 2, OVERLAP_DIM, Default::default()),
                        question: PairCnn::new(&p / "question", dim, OVERLAP_DIM, h),
                        candidate: PairCnn::new(&p / "candidate", dim, OVERLAP_DIM, h),
                        similarity: p.var(
                            "similarity",
                            &[h, h],
                            nn::Init::Randn {
                                mean: 0.0,
                                stdev: 1.0 / (h as f64),
                            },
                        ),
                        hidden: nn::linear(&p / "hidden", join, join, Default::default()),
                    }),
                    join,
                )
            }
            Architecture::CompareAggregate => (
                Encoder::CompareAggregate(CompareAggregate {
                    gate: nn::linear(&p / "gate", dim, h, Default::default()),
                    value: nn::linear(&p / "value", dim, h, Default::default()),
                    convs: (1..=5)
                        .map(|w| Conv::new(&p / format!("conv{w}"), h, h, w, h, true))
                        .collect(),
                }),
                5 * h,
            ),
        };
        Network {
            embeddings,
            encoder,
            head: ScoreHead::new(
                root / "head",
                pair_dim,
                config.rnn,
                config.dropout,
                !config.no_skip,
            ),
        }
    }

    /// Tables the word convolutions of Cosinenet and RelCNN for fast scoring
    /// (the weights must not change afterwards). Costs `2 × vocab × 5 × hidden` floats.
    pub fn prepare_scoring(&mut self) {
        let vectors = self.embeddings.table();
        let cnns = match &mut self.encoder {
            Encoder::Cosinenet(net) => [&mut net.question, &mut net.candidate],
            Encoder::Relcnn(net) => [&mut net.question, &mut net.candidate],
            Encoder::CompareAggregate(_) => return,
        };
        for cnn in cnns {
            cnn.table = Some(WordConvTable::new(&cnn.words, vectors));
        }
    }

    /// `[questions, width]` logits for a batch.
    pub fn forward(&self, batch: &Batch, train: bool) -> Tensor {
        let per_pair = |x: &Tensor| x.index_select(0, &batch.pair_question);
        let question = self.embeddings.lookup(&batch.question_ids);
        let c = self.embeddings.lookup(&batch.c_ids);
        let pairs = match &self.encoder {
            Encoder::Cosinenet(net) => {
                let (rq, rc) = self.embeddings.relatedness(
                    &per_pair(&question),
                    &c,
                    batch,
                    net.exact,
                    &net.parts,
                );
                let q_words = per_pair(&net.question.words(
                    &question,
                    &batch.question_ids,
                    &batch.question_mask,
                    train,
                ));
                // Each word's relatedness beside its exact match (content words only).
                let features = |r: Tensor, exact: &Tensor| {
                    if net.exact {
                        Tensor::cat(&[r, exact.unsqueeze(2)], 2)
                    } else {
                        r
                    }
                };
                let qv = net
                    .question
                    .pool(q_words, &features(rq, &batch.q_exact), &batch.q_mask);
                let c_words = net.candidate.words(&c, &batch.c_ids, &batch.c_mask, train);
                let cv = net
                    .candidate
                    .pool(c_words, &features(rc, &batch.c_exact), &batch.c_mask);
                Tensor::cat(&[&qv * &cv, &qv - &cv], 1)
            }
            Encoder::Relcnn(net) => {
                let overlap = |exact: &Tensor| net.overlap.forward(&exact.to_kind(Kind::Int64));
                let q_words = per_pair(&net.question.words(
                    &question,
                    &batch.question_ids,
                    &batch.question_mask,
                    train,
                ));
                let qv = net
                    .question
                    .pool(q_words, &overlap(&batch.q_exact), &batch.q_mask);
                let c_words = net.candidate.words(&c, &batch.c_ids, &batch.c_mask, train);
                let cv = net
                    .candidate
                    .pool(c_words, &overlap(&batch.c_exact), &batch.c_mask);
                let sim = (qv.matmul(&net.similarity) * &cv).sum_dim_intlist(-1, true, Kind::Float);
                let join = Tensor::cat(&[qv, sim, cv, batch.features.shallow_clone()], 1);
                net.hidden.forward(&join).tanh()
            }
            Encoder::CompareAggregate(net) => {
                let project = |x: &Tensor, mask: &Tensor| {
                    net.gate.forward(x).sigmoid() * net.value.forward(x).tanh() * mask.unsqueeze(-1)
                };
                let qp = per_pair(&project(&question, &batch.question_mask));
                let cp = project(&c, &batch.c_mask);
                // [pairs, candidate tokens, question tokens], the question's padding masked out.
                let scores = cp.bmm(&qp.transpose(1, 2)) + (batch.q_mask.unsqueeze(1) - 1.0) * 1e4;
                let compared = &cp * scores.softmax(-1, Kind::Float).bmm(&qp);
                let pooled: Vec<Tensor> = net
                    .convs
                    .iter()
                    .map(|conv| {
                        // ReLU after pooling: the same, as ReLU does not decrease.
                        masked_max(&conv.apply(&compared, &batch.c_mask), &batch.c_mask).relu()
                    })
                    .collect();
                Tensor::cat(&pooled, 1)
            }
        };
        self.head.forward(&pairs, batch, train)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{EncodedQuestion, Limits};
    use crate::vocab::Vocabulary;
    use crate::{Loss, RnnKind};
    use ansel_data::{Candidate, Question};
    use ansel_torch::tch::{nn::VarStore, Device};

    fn toy() -> (
        ansel_vectors::WordVectors,
        Vocabulary,
        EncodedQuestion,
        Limits,
    ) {
        let words: Vec<String> = ["who", "wrote", "hamlet", "shakespeare", "play"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        let values: Vec<f32> = (0..words.len() * 4)
            .map(|i| (i as f32 * 0.37).sin())
            .collect();
        let vectors = ansel_vectors::WordVectors::new(words, 4, values).unwrap();
        let question = Question {
            id: "q".into(),
            text: "who wrote hamlet".into(),
            candidates: ["shakespeare wrote hamlet", "a play", "hamlet"]
                .iter()
                .enumerate()
                .map(|(i, t)| Candidate {
                    id: i.to_string(),
                    text: t.to_string(),
                    label: Some(i == 0),
                    context: None,
                })
                .collect(),
        };
        let vocab = Vocabulary::build(&[std::slice::from_ref(&question)], &vectors, 0);
        let limits = Limits {
            question_tokens: 10,
            candidate_tokens: 10,
        };
        let encoded = EncodedQuestion::new(&question, &vocab, limits);
        (vectors, vocab, encoded, limits)
    }

    /// Initialisation draws from libtorch's process-wide RNG: with 6 hidden units a random draw
    /// sometimes leaves every width-5 filter dead on the toy question, so the tests that build
    /// networks hold one lock and seed it, which makes their outcome the same on every run.
    fn seeded_rng() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        ansel_torch::tch::manual_seed(7);
        guard
    }

    fn network(
        architecture: Architecture,
        rnn: RnnKind,
        vocab: &Vocabulary,
        limits: Limits,
    ) -> (VarStore, Network) {
        network_with(architecture, rnn, vocab, limits, false)
    }

    /// `thesis`: no exact-match flag and no pair vector beside the RNN (`no_exact_match`, `no_skip`).
    fn network_with(
        architecture: Architecture,
        rnn: RnnKind,
        vocab: &Vocabulary,
        limits: Limits,
        thesis: bool,
    ) -> (VarStore, Network) {
        let config = ModelConfig {
            architecture,
            loss: Loss::Listwise,
            rnn,
            vectors: "test".into(),
            vector_dim: None,
            embedding_dim: 4,
            vocab_size: vocab.len(),
            hidden: 6,
            dropout: 0.0,
            limits,
            no_exact_match: thesis,
            no_skip: thesis,
            relatedness_parts: Vec::new(),
        };
        let vs = VarStore::new(Device::Cpu);
        let net = Network::new(&vs.root(), &config);
        (vs, net)
    }

    #[test]
    fn the_thesis_variant_drops_the_exact_match_channel_and_the_skip_and_still_trains() {
        let _rng = seeded_rng();
        let (vectors, vocab, encoded, limits) = toy();
        let count = |vs: &VarStore| -> i64 {
            vs.trainable_variables()
                .iter()
                .map(|t| t.numel() as i64)
                .sum()
        };
        let (ours_vs, _) = network(Architecture::Cosinenet, RnnKind::Birnn, &vocab, limits);
        let (vs, mut net) = network_with(
            Architecture::Cosinenet,
            RnnKind::Birnn,
            &vocab,
            limits,
            true,
        );
        // Per CNN: one feature channel fewer (5 x 6 weights each); the scorer: the pair vector
        // (2 x 6 inputs) no longer beside the BiRNN states.
        assert_eq!(count(&ours_vs) - count(&vs), 2 * 5 * 6 + 12);
        net.embeddings.fill(&vocab.embedding_rows(&vectors));
        let batch = Batch::new(&[&encoded]);
        let loss = batch.pointwise_bce(&net.forward(&batch, true));
        loss.backward();
        for (name, var) in vs.variables() {
            if !name.starts_with("embedding") {
                let norm = var.grad().abs().sum(Kind::Float).double_value(&[]);
                assert!(norm > 0.0, "no gradient reaches {name}");
            }
        }
    }

    #[test]
    fn split_relatedness_gives_each_column_group_its_own_feature() {
        let _rng = seeded_rng();
        let (vectors, vocab, encoded, limits) = toy();
        let (_vs, mut net) = network(Architecture::Cosinenet, RnnKind::None, &vocab, limits);
        net.embeddings.fill(&vocab.embedding_rows(&vectors));
        let batch = Batch::new(&[&encoded]);
        let per_pair = |x: &Tensor| x.index_select(0, &batch.pair_question);
        let q = per_pair(&net.embeddings.lookup(&batch.question_ids));
        let c = net.embeddings.lookup(&batch.c_ids);
        let e = &net.embeddings;
        let (whole_q, whole_c) = e.relatedness(&q, &c, &batch, false, &[]);
        let (same_q, _) = e.relatedness(&q, &c, &batch, false, &[4]);
        assert_eq!(whole_q.size()[2], 1);
        assert!(whole_q.allclose(&same_q, 1e-6, 1e-6, false));
        let (split_q, split_c) = e.relatedness(&q, &c, &batch, false, &[1, 3]);
        assert_eq!(split_q.size()[2], 2);
        // Each channel is the relatedness of that column group alone.
        let (last_q, last_c) =
            e.relatedness(&q.narrow(2, 1, 3), &c.narrow(2, 1, 3), &batch, false, &[3]);
        assert!(split_q.narrow(2, 1, 1).allclose(&last_q, 1e-6, 1e-6, false));
        assert!(split_c.narrow(2, 1, 1).allclose(&last_c, 1e-6, 1e-6, false));
        // One column alone: cosines are +-1, so it differs from the whole-vector feature.
        assert!(!split_q
            .narrow(2, 0, 1)
            .allclose(&whole_q, 1e-3, 1e-3, false));
        assert!(!split_c
            .narrow(2, 0, 1)
            .allclose(&whole_c, 1e-3, 1e-3, false));
    }

    #[test]
    fn tabled_word_convolutions_score_like_the_plain_ones() {
        let _rng = seeded_rng();
        let (vectors, vocab, encoded, limits) = toy();
        for architecture in [Architecture::Cosinenet, Architecture::Relcnn] {
            let (_vs, mut net) = network(architecture, RnnKind::Birnn, &vocab, limits);
            net.embeddings.fill(&vocab.embedding_rows(&vectors));
            let batch = Batch::new(&[&encoded]);
            let plain = net.forward(&batch, false);
            net.prepare_scoring();
            let tabled = net.forward(&batch, false);
            assert!(
                plain.allclose(&tabled, 1e-5, 1e-5, false),
                "{architecture:?}: {plain} vs {tabled}"
            );
        }
    }

    #[test]
    fn gradients_reach_every_trainable_weight_and_never_the_vectors() {
        let _rng = seeded_rng();
        let (vectors, vocab, encoded, limits) = toy();
        for architecture in [
            Architecture::Cosinenet,
            Architecture::Relcnn,
            Architecture::CompareAggregate,
        ] {
            for rnn in [RnnKind::Rnn, RnnKind::Birnn] {
                let (vs, mut net) = network(architecture, rnn, &vocab, limits);
                net.embeddings.fill(&vocab.embedding_rows(&vectors));
                let batch = Batch::new(&[&encoded]);
                // Point-wise: the list-wise loss ignores a shift of all logits, so the output bias gets none.
                let loss = batch.pointwise_bce(&net.forward(&batch, true));
                loss.backward();
                for (name, var) in vs.variables() {
                    let grad = var.grad();
                    if name.starts_with("embedding") {
                        assert!(
                            !grad.defined(),
                            "{architecture:?}: static vectors must not train"
                        );
                    } else {
                        let norm = grad.abs().sum(Kind::Float).double_value(&[]);
                        assert!(
                            norm > 0.0,
                            "{architecture:?} {rnn:?}: no gradient reaches {name}"
                        );
                    }
                }
            }
        }
    }
}
