//! End-to-end CASSIE: the cross-encoder fine-tuned together with the head (the paper's
//! set-up), on the transformer training loop every ansel transformer trainer shares
//! (`ansel_bert::run`: AdamW with saved moments, warm-up + linear decay, clipping, early
//! stopping on dev MAP, checkpoints that survive `kill -9`, a JSON-lines log).
//!
//! A training example is a whole question: in WikiQA a candidate's previous and next
//! sentences are (almost always) other candidates of the same question, so each of the
//! question's sentences goes through the encoder once as `[CLS] q [SEP] s [SEP]` (train mode,
//! autograd on), and the candidate and neighbour nodes of all its graphs are built from those
//! outputs by the same feature code as the frozen path. Optimal transport runs without
//! gradient (the plan only selects words; the selected words' mean vector carries the
//! gradient into the encoder); then the head (GCN, score FFN, MI loss) and BCE.
//!
//! The model directory holds the fine-tuned encoder (fp16 `model.safetensors`, `config.json`,
//! `tokenizer.json`: the card's `config.base` is `.`), the head and the word masses, so the
//! ranker, `explain` and every command that loads a CASSIE model read it unchanged.

use crate::features::{PairEncoder, QuestionGraph, WordMass};
use crate::head::{Head, HeadConfig};
use crate::ot::OtOptions;
use crate::ranker::{CassieSettings, HEAD_FILE};
use crate::split::SplitFeatures;
use crate::train::Prepared;
use crate::KIND;
use ansel_bert::run::{
    dev_metrics, prepare_out, run, write_training_card, CardParts, LoopOptions, RunOptions,
    RunState, Trainee, Weights,
};
use ansel_data::{question_batches, Packing, Question};
use ansel_model::{ModelCard, ModelError, Result};
use ansel_torch::tch::{self, nn, Device, Tensor};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The head's weights inside a checkpoint directory (full precision, beside the encoder's).
const CHECKPOINT_HEAD: &str = "head.safetensors";
/// Prefix of the head's parameters in the optimizer (the encoder keeps its Hugging Face names).
const HEAD_PREFIX: &str = "head.";

/// Everything an end-to-end run needs.
#[derive(Debug, Clone, Serialize)]
pub struct EndToEndOptions {
    /// `run.base`: a trained cross-encoder directory (its encoder is fine-tuned); `run.lr`
    /// is the encoder's peak learning rate; `run.batch_size` counts candidates per micro-batch
    /// (whole questions are packed into it).
    #[serde(flatten)]
    pub run: RunOptions,
    /// The head (its `dim` is taken from the encoder).
    pub head: HeadConfig,
    pub ot: OtOptions,
    /// The head's peak learning rate (same schedule as the encoder's).
    pub head_lr: f64,
}

impl EndToEndOptions {
    /// Encoder lr 3e-5, head lr 1e-3, 16 candidates per micro-batch, 2 micro-batches per
    /// step (~32 pairs per step, as the cross-encoder baseline), one epoch.
    pub fn defaults(base: &str, out: &Path) -> EndToEndOptions {
        EndToEndOptions {
            run: RunOptions {
                epochs: 1,
                batch_size: 16,
                accumulate: 2,
                ..RunOptions::defaults(base, out, KIND)
            },
            head: HeadConfig::full(0),
            ot: OtOptions::default(),
            head_lr: 1e-3,
        }
    }
}

struct EndToEnd<'a> {
    opts: &'a EndToEndOptions,
    encoder: PairEncoder,
    head: Head,
    vs: nn::VarStore,
    mass: WordMass,
    train: Vec<Question>,
    sizes: Vec<usize>,
    dev: Vec<Question>,
    base_card: Option<ModelCard>,
}

impl EndToEnd<'_> {
    fn head_tensors(&self) -> Vec<(String, Tensor)> {
        self.vs
            .variables()
            .into_iter()
            .map(|(n, t)| (n, t.detach()))
            .collect()
    }

    fn settings(&self) -> CassieSettings {
        CassieSettings {
            base: ".".into(),
            max_len: self.opts.run.max_len,
            head: self.head.config.clone(),
            ot: self.opts.ot,
        }
    }
}

impl Trainee for EndToEnd<'_> {
    fn batches(&self, batch_size: usize, seed: u64) -> Vec<Vec<usize>> {
        question_batches(&self.sizes, batch_size, seed, Packing::AtMost)
    }

    fn loss(&self, batch: &[usize]) -> (Tensor, usize) {
        let questions: Vec<Question> = batch.iter().map(|&i| self.train[i].clone()).collect();
        // Every pair was checked before training; should encoding still fail, the loop
        // stops on the NaN loss with the step it happened at.
        let split = match SplitFeatures::live(&self.encoder, questions, true) {
            Ok(split) => split,
            Err(e) => {
                eprintln!("cannot encode training questions: {e}");
                return (Tensor::from(f32::NAN), 0);
            }
        };
        let prepared = Prepared::new(&split, &self.mass, &self.opts.ot);
        let items: Vec<usize> = (0..prepared.len()).collect();
        let loss = self.head.loss(&prepared.batch(&items, &self.head.config));
        (loss, items.len())
    }

    fn groups(&self) -> Vec<(BTreeMap<String, Tensor>, f64)> {
        let encoder = self.encoder.model().shared_params();
        let head = ansel_torch::trainable(&self.vs)
            .into_iter()
            .map(|(n, t)| (format!("{HEAD_PREFIX}{n}"), t))
            .collect();
        vec![(encoder, 1.0), (head, self.opts.head_lr / self.opts.run.lr)]
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        tch::no_grad(|| {
            let split = SplitFeatures::live(&self.encoder, self.dev.clone(), false)?;
            let prepared = Prepared::new(&split, &self.mass, &self.opts.ot);
            Ok(dev_metrics(
                &prepared.questions,
                &prepared.score(&self.head),
            ))
        })
    }

    fn save(&self, dir: &Path, weights: Weights) -> Result<()> {
        weights.save_encoder(self.encoder.model(), dir)?;
        match weights {
            Weights::Model => {
                ansel_torch::write_tensors(&dir.join(HEAD_FILE), &self.head_tensors())?;
                self.mass.write(&dir.join(WordMass::FILE))
            }
            Weights::Checkpoint => {
                ansel_torch::write_tensors(&dir.join(CHECKPOINT_HEAD), &self.head_tensors())
            }
        }
    }

    fn write_card(&self, state: &RunState) -> Result<ModelCard> {
        let settings = self.settings();
        write_training_card(
            CardParts {
                kind: KIND,
                run: &self.opts.run,
                settings: serde_json::to_value(&settings)
                    .map_err(|e| ModelError::Backend(e.to_string()))?,
                base_card: self.base_card.as_ref(),
                hyperparameters: serde_json::json!({
                    "end_to_end": "encoder fine-tuned with the head; OT without gradient",
                    "encoding": "[CLS] q [SEP] s [SEP] once per sentence of a question, shared by its graphs",
                    "loss": format!("BCE + {} * MI", settings.head.mi_weight),
                    "head": settings.head, "ot": settings.ot,
                    "encoder_lr": self.opts.run.lr, "head_lr": self.opts.head_lr,
                    "batch_size_unit": "candidates, packed as whole questions",
                    "answered_only": true,
                    "train_questions": self.train.len(),
                    "train_pairs": self.sizes.iter().sum::<usize>(),
                    "word_mass": "df over training questions + 1, normalised per sentence",
                    "weights": "encoder fp16 (model.safetensors), head fp32",
                }),
            },
            state,
        )
    }

    fn load_weights(&self, dir: &Path) -> Result<()> {
        Weights::load_checkpoint_encoder(self.encoder.model(), dir)?;
        let path = dir.join(CHECKPOINT_HEAD);
        let saved = ansel_torch::read_tensors(&path)?;
        let variables: BTreeMap<String, Tensor> = self.vs.variables().into_iter().collect();
        ansel_torch::copy_into(&variables, &saved, &path)
    }
}

fn answered(questions: &[Question]) -> Vec<Question> {
    questions
        .iter()
        .filter(|q| q.positives() > 0)
        .cloned()
        .collect()
}

/// Checks that every (question, sentence) pair of `questions`' graphs can be encoded.
fn check_pairs(encoder: &PairEncoder, questions: &[Question], what: &str) -> Result<usize> {
    let mut pairs = 0;
    for q in questions {
        let g = QuestionGraph::new(q);
        let texts: Vec<(&str, &str)> = g
            .sentences
            .iter()
            .map(|s| (q.text.as_str(), s.as_str()))
            .collect();
        encoder
            .check(&texts)
            .map_err(|e| ModelError::Backend(format!("{what} question {:?}: {e}", q.id)))?;
        pairs += texts.len();
    }
    Ok(pairs)
}

/// Fine-tunes `opts.run.base` (a trained cross-encoder) together with a fresh CASSIE head on
/// the answered questions of `train`, keeping the weights with the best dev MAP, and writes
/// the model directory `opts.run.out` (model.json, the encoder, head.safetensors,
/// word-mass.json, train-log.jsonl, training.svg, and checkpoint/ for `--resume`).
pub fn train_end_to_end(
    opts: &EndToEndOptions,
    train: &[Question],
    dev: &[Question],
) -> Result<ModelCard> {
    if opts.head.loct {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: "end-to-end training takes the CASSIE head, not the frozen-encoder LOCT head"
                .into(),
        });
    }
    if opts.run.lr <= 0.0 || opts.head_lr <= 0.0 {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!(
                "learning rates must be positive (encoder {}, head {})",
                opts.run.lr, opts.head_lr
            ),
        });
    }
    ansel_torch::init(opts.run.threads, opts.run.seed);
    let base_dir = ansel_bert::resolve_base(&opts.run.base)?;
    let base_card = if base_dir.join(ansel_model::CARD_FILE).is_file() {
        let card = ModelCard::read(&base_dir)?;
        (card.kind == ansel_bert::KIND).then_some(card)
    } else {
        None
    };
    let mut encoder = PairEncoder::load(&base_dir, opts.run.max_len)?;
    prepare_out(&opts.run.out, KIND, opts.run.resume, &base_dir)?;
    let mass = WordMass::count(encoder.tokenizer(), train)?;
    let (train_q, dev_q) = (answered(train), answered(dev));
    if train_q.is_empty() {
        return Err(ModelError::Unsupported {
            model: KIND.into(),
            message: format!("{}: no question with a correct answer", opts.run.train_path),
        });
    }
    let train_pairs = check_pairs(&encoder, &train_q, "training")?;
    let dev_pairs = check_pairs(&encoder, &dev_q, "dev")?;
    let mut config = opts.head.clone();
    config.dim = encoder.model().config.hidden_size;
    let vs = nn::VarStore::new(Device::Cpu);
    let head = Head::new(&vs.root(), config);
    encoder.set_trainable(true);
    let sizes: Vec<usize> = train_q.iter().map(|q| q.candidates.len()).collect();
    let batches_per_epoch = question_batches(
        &sizes,
        opts.run.batch_size,
        opts.run.epoch_seed(0),
        Packing::AtMost,
    )
    .len();
    let (steps_per_epoch, total_steps) = opts.run.steps(batches_per_epoch);
    let start = serde_json::json!({
        "event": "start", "options": opts, "end_to_end": true,
        "train_questions": train_q.len(), "train_candidates": sizes.iter().sum::<usize>(),
        "train_sentences_encoded_per_epoch": train_pairs,
        "dev_questions": dev_q.len(), "dev_sentences": dev_pairs,
        "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
    });
    eprintln!(
        "training end-to-end CASSIE on {} questions ({} candidates, {train_pairs} sentences encoded per epoch; {batches_per_epoch} micro-batches, {total_steps} optimizer steps in all); dev: {} questions",
        train_q.len(),
        sizes.iter().sum::<usize>(),
        dev_q.len()
    );
    let trainee = EndToEnd {
        opts,
        encoder,
        head,
        vs,
        mass,
        train: train_q,
        sizes,
        dev: dev_q,
        base_card,
    };
    run(
        &trainee,
        &LoopOptions {
            run: &opts.run,
            label: "cassie e2e",
            total_steps,
            start,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::PairEncoder;
    use ansel_bert::testing::{serial, tiny_base};
    use std::path::PathBuf;

    /// Two tiny documents in WikiQA form: every candidate's neighbours are candidates.
    pub(crate) fn questions() -> Vec<Question> {
        let q = ansel_bert::testing::question;
        vec![
            q(
                "1",
                "who wrote hamlet ?",
                &[
                    ("hamlet is a tragedy .", false),
                    ("it was written by william shakespeare .", true),
                    ("the play is set in denmark .", false),
                ],
            ),
            q(
                "2",
                "where is hamlet set ?",
                &[
                    ("it was written by shakespeare .", false),
                    ("it is set in denmark .", true),
                ],
            ),
        ]
    }

    fn options(base: &Path, out: &Path) -> EndToEndOptions {
        let mut o = EndToEndOptions::defaults(base.to_str().unwrap(), out);
        o.run.lr = 1e-3;
        o.run.batch_size = 3;
        o.run.accumulate = 1;
        o.run.threads = 1;
        o.run.warmup = 0.0;
        o.run.checkpoint_every = 1;
        o.head.dropout = 0.0;
        o
    }

    /// One optimizer step from a tiny base; returns the temporary directory, the output
    /// directory and how far each tensor moved from the base (max abs difference).
    fn one_step(residual: bool) -> (tempfile::TempDir, PathBuf, BTreeMap<String, f64>) {
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let out = dir.path().join("out");
        let mut opts = options(&base, &out);
        opts.run.max_steps = Some(1);
        opts.head.residual = residual;
        train_end_to_end(&opts, &questions(), &questions()).unwrap();
        let before = ansel_torch::read_tensors(&base.join("model.safetensors")).unwrap();
        let after =
            ansel_torch::read_tensors(&out.join("checkpoint").join("weights.safetensors")).unwrap();
        let moved = after
            .iter()
            .filter_map(|(name, t)| {
                let diff = (t - before.get(name)?).abs().max().double_value(&[]);
                Some((name.clone(), diff))
            })
            .collect();
        (dir, out, moved)
    }

    #[test]
    fn one_step_of_the_cassie_loss_moves_the_encoder_and_the_model_loads_and_explains() {
        let _lock = serial();
        let (_dir, out, moved) = one_step(false);
        let moved = |name: &str| moved[name];
        // The CASSIE loss reads hidden states and the pooled [CLS], never the classifier:
        // the encoder's layers move, the unused classifier does not.
        for name in [
            "bert.encoder.layer.0.attention.self.query.weight",
            "bert.encoder.layer.1.output.dense.weight",
            "bert.pooler.dense.weight",
            "bert.embeddings.word_embeddings.weight",
        ] {
            assert!(moved(name) > 1e-6, "{name} did not move");
        }
        assert_eq!(moved("classifier.weight"), 0.0);
        // The directory is a CASSIE model: its own encoder, head and card.
        let card = ModelCard::read(&out).unwrap();
        assert_eq!(card.kind, KIND);
        assert_eq!(card.config["base"], ".");
        let record = card.training.clone().unwrap();
        assert!(record.metrics.contains_key("dev MAP"), "{record:?}");
        let ranker = crate::CassieRanker::load(&out, &card).unwrap();
        use ansel_model::Ranker;
        let scores = ranker.score_all(&questions()).unwrap();
        assert_eq!(scores.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 2]);
        assert!(scores.iter().flatten().all(|s| s.is_finite()));
        let explained = ranker.explain(&questions()[0], 2).unwrap();
        assert_eq!(explained.len(), 2);
        assert!(explained[0]
            .sentences
            .iter()
            .any(|s| s.role == "previous" || s.role == "next"));
    }

    #[test]
    fn with_the_base_logit_added_the_classifier_learns_too() {
        let _lock = serial();
        let (_dir, out, moved) = one_step(true);
        let moved = |name: &str| moved[name];
        assert!(moved("classifier.weight") > 1e-6);
        assert!(moved("bert.encoder.layer.0.attention.self.query.weight") > 1e-6);
        let card = ModelCard::read(&out).unwrap();
        assert_eq!(card.config["head"]["residual"], true);
    }

    #[test]
    fn live_features_equal_the_frozen_ones_for_the_same_hidden_states() {
        let _lock = serial();
        let dir = tempfile::tempdir().unwrap();
        // No dropout: train mode and eval mode give the same hidden states.
        let base = tiny_base(dir.path(), 0.0);
        let mut encoder = PairEncoder::load(&base, 128).unwrap();
        encoder.set_trainable(true);
        let qs = questions();
        let pairs: Vec<(&str, &str)> = qs
            .iter()
            .flat_map(|q| {
                q.candidates
                    .iter()
                    .map(|c| (q.text.as_str(), c.text.as_str()))
            })
            .collect();
        let frozen = encoder.encode(&pairs, &mut |_| {}).unwrap();
        let live = encoder.encode_live(&pairs, true).unwrap();
        assert!(live.s_vecs.requires_grad() && !frozen.s_vecs.requires_grad());
        assert_eq!(frozen.q_words, live.q_words);
        assert_eq!(frozen.s_words, live.s_words);
        assert_eq!((&frozen.q_off, &frozen.s_off), (&live.q_off, &live.s_off));
        // Equal up to the frozen path's rounding to f16.
        for (a, b) in [
            (&frozen.q_vecs, &live.q_vecs),
            (&frozen.s_vecs, &live.s_vecs),
            (&frozen.pooled, &live.pooled),
        ] {
            let diff = (a - b.detach()).abs().max().double_value(&[]);
            assert!(diff < 5e-3, "differ by {diff}");
        }
        // The live logits carry gradient and come back in input order, as the frozen ones.
        use crate::features::PairLogits;
        assert!(matches!(&frozen.logits, PairLogits::Fixed(_)));
        assert!(matches!(&live.logits, PairLogits::Live(t) if t.requires_grad()));
        assert_eq!(live.logits.len(), pairs.len());
        for (a, b) in frozen.logits.values().iter().zip(&live.logits.values()) {
            assert!((a - b).abs() < 1e-5);
        }
    }

    #[test]
    fn a_resumed_run_restores_the_step_and_ends_where_an_uninterrupted_one_does() {
        let _lock = serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.0);
        // 2 epochs of 2 micro-batches (one question each): 4 optimizer steps.
        let full = dir.path().join("full");
        let mut opts = options(&base, &full);
        opts.run.epochs = 2;
        train_end_to_end(&opts, &questions(), &questions()).unwrap();
        let cut = dir.path().join("cut");
        let mut first = opts.clone();
        first.run.out = cut.clone();
        first.run.interrupt_after = Some(3);
        assert!(train_end_to_end(&first, &questions(), &questions()).is_err());
        let state = RunState::read(&cut.join("checkpoint")).unwrap();
        assert_eq!((state.opt_step, state.epoch, state.batches_done), (3, 1, 1));
        let mut again = opts.clone();
        again.run.out = cut.clone();
        assert!(
            train_end_to_end(&again, &questions(), &questions()).is_err(),
            "refuses to overwrite a run without --resume"
        );
        again.run.resume = true;
        train_end_to_end(&again, &questions(), &questions()).unwrap();
        ansel_bert::testing::assert_same_checkpoints(
            &full,
            &cut,
            &["weights.safetensors", CHECKPOINT_HEAD],
        );
        assert_eq!(RunState::read(&cut.join("checkpoint")).unwrap().opt_step, 4);
    }
}
