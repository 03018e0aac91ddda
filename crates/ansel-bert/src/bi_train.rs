//! Training the Siamese bi-encoder (SEDAN §3.2.1-3.2.2): softmax cross-entropy of the
//! `[q ; s ; |q - s|]` classifier on (question, candidate, label) pairs, back-propagated
//! through the shared encoder. Stage (a) starts from a sentence-transformers directory and
//! generic AS2 data; stage (b) starts from a bi-encoder written by stage (a) and trains on
//! synthetic pairs of the target domain (`ansel adapt`).
//!
//! It runs the training loop shared with the cross-encoder trainer (`run.rs`): AdamW,
//! warm-up + linear decay, gradient clipping, early stopping on dev MAP, and resumable
//! checkpoints swapped in whole. Batches
//! hold whole questions so that each question is encoded once per batch.

use crate::bi_encoder::{
    encode_sentence, read_bi_dir, BiEncoder, BiEncoderSettings, Scoring, BI_KIND, HEAD_FILE,
};
use crate::run::{
    dev_metrics, prepare_out, run, write_training_card, CardParts, LoopOptions, RunOptions,
    RunState, Trainee, Weights,
};
use crate::{resolve_base, Encoded, PairTokenizer};
use ansel_data::{question_batches, Packing, Question};
use ansel_model::{ModelCard, ModelError, Result};
use ansel_torch::tch::{self, Kind, Tensor};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything a bi-encoder training run needs: `run.base` is a sentence-transformers (Hugging
/// Face BERT) directory or a bi-encoder directory, `run.max_len` counts tokens per sentence
/// and `run.batch_size` pairs per micro-batch (whole questions are added until this many).
#[derive(Debug, Clone, Serialize)]
pub struct BiTrainOptions {
    #[serde(flatten)]
    pub run: RunOptions,
    /// The classifier head learns at `lr * head_lr_factor`: it starts from random weights
    /// while the encoder starts trained.
    pub head_lr_factor: f64,
}

impl BiTrainOptions {
    pub fn defaults(base: &str, out: &Path) -> BiTrainOptions {
        BiTrainOptions {
            run: RunOptions {
                max_len: 64,
                epochs: 1,
                lr: 2e-5,
                batch_size: 32,
                ..RunOptions::defaults(base, out, "bi-encoder")
            },
            head_lr_factor: 1.0,
        }
    }
}

/// A base: the model, its tokenizer, the encoder directory and the base card if a bi-encoder.
type Base = (BiEncoder, PairTokenizer, PathBuf, Option<ModelCard>);

fn load_base(spec: &str) -> Result<Base> {
    let dir = Path::new(spec);
    if dir.join(ansel_model::CARD_FILE).is_file() {
        let card = ModelCard::read(dir)?;
        if card.kind == BI_KIND {
            let (model, tok, _, enc_dir) = read_bi_dir(dir, &card, |_, exists| exists)?;
            return Ok((model, tok, enc_dir, Some(card)));
        }
    }
    let dir = resolve_base(spec)?;
    let (encoder, tok) = crate::bi_encoder::load_encoder(&dir)?;
    Ok((BiEncoder::new(encoder, None), tok, dir, None))
}

/// One question's encodings: the question and its candidates with 0/1 labels.
struct Group {
    question: Encoded,
    candidates: Vec<Encoded>,
    labels: Vec<i64>,
}

fn groups(tok: &PairTokenizer, questions: &[Question], max_len: usize) -> Result<Vec<Group>> {
    questions
        .iter()
        .filter(|q| q.positives() > 0 && !q.candidates.is_empty())
        .map(|q| {
            Ok(Group {
                question: encode_sentence(tok, &q.text, max_len)?,
                candidates: q
                    .candidates
                    .iter()
                    .map(|c| encode_sentence(tok, &c.text, max_len))
                    .collect::<Result<_>>()?,
                labels: q
                    .candidates
                    .iter()
                    .map(|c| i64::from(c.label == Some(true)))
                    .collect(),
            })
        })
        .collect()
}

/// The loss of one batch of questions (mean softmax cross-entropy over its pairs).
fn batch_loss(model: &BiEncoder, pad: i64, data: &[Group], idx: &[usize]) -> (Tensor, usize) {
    let qs: Vec<&Encoded> = idx.iter().map(|&i| &data[i].question).collect();
    let mut ss: Vec<&Encoded> = Vec::new();
    let mut rows: Vec<i64> = Vec::new();
    let mut labels: Vec<i64> = Vec::new();
    for (row, &i) in idx.iter().enumerate() {
        ss.extend(data[i].candidates.iter());
        rows.extend(std::iter::repeat_n(row as i64, data[i].candidates.len()));
        labels.extend(&data[i].labels);
    }
    let qv = model.embed(&qs, pad, true);
    let sv = model.embed(&ss, pad, true);
    let qv = qv.index_select(0, &Tensor::from_slice(&rows));
    let logits = model.logits(&qv, &sv);
    (
        logits.cross_entropy_for_logits(&Tensor::from_slice(&labels)),
        labels.len(),
    )
}

/// Scores every candidate of `questions` (each distinct text encoded once).
fn score_questions(
    model: &BiEncoder,
    tok: &PairTokenizer,
    questions: &[Question],
    max_len: usize,
    scoring: Scoring,
) -> Result<Vec<Vec<f32>>> {
    let mut texts: Vec<&str> = Vec::new();
    for q in questions {
        texts.push(&q.text);
        texts.extend(q.candidates.iter().map(|c| c.text.as_str()));
    }
    texts.sort_unstable();
    texts.dedup();
    let vectors = crate::bi_encoder::embed_texts(model, tok, &texts, max_len, 64)?;
    let row = |t: &str| texts.binary_search(&t).expect("every text was embedded") as i64;
    tch::no_grad(|| {
        questions
            .iter()
            .map(|q| {
                if q.candidates.is_empty() {
                    return Ok(Vec::new());
                }
                let s_idx: Vec<i64> = q.candidates.iter().map(|c| row(&c.text)).collect();
                let q_idx = vec![row(&q.text); s_idx.len()];
                let qv = vectors.index_select(0, &Tensor::from_slice(&q_idx));
                let sv = vectors.index_select(0, &Tensor::from_slice(&s_idx));
                Vec::<f32>::try_from(&model.score(&qv, &sv, scoring).to_kind(Kind::Float))
                    .map_err(|e| ModelError::Backend(e.to_string()))
            })
            .collect()
    })
}

fn evaluate_dev(
    model: &BiEncoder,
    tok: &PairTokenizer,
    dev: &[Question],
    max_len: usize,
) -> Result<BTreeMap<String, f64>> {
    let scores = score_questions(model, tok, dev, max_len, Scoring::Classifier)?;
    Ok(dev_metrics(dev, &scores))
}

/// The bi-encoder's parts of the shared training loop.
struct BiTrainee<'a> {
    opts: &'a BiTrainOptions,
    model: BiEncoder,
    tok: PairTokenizer,
    data: Vec<Group>,
    sizes: Vec<usize>,
    dev: Vec<Question>,
    base_card: Option<ModelCard>,
    pairs: usize,
}

impl Trainee for BiTrainee<'_> {
    fn batches(&self, batch_size: usize, seed: u64) -> Vec<Vec<usize>> {
        question_batches(&self.sizes, batch_size, seed, Packing::AtLeast)
    }

    fn loss(&self, idx: &[usize]) -> (Tensor, usize) {
        batch_loss(&self.model, self.tok.pad, &self.data, idx)
    }

    /// The encoder at the schedule's rate, the head at `head_lr_factor` times it.
    fn groups(&self) -> Vec<(BTreeMap<String, Tensor>, f64)> {
        let (head, encoder): (BTreeMap<String, Tensor>, BTreeMap<String, Tensor>) = self
            .model
            .params()
            .into_iter()
            .partition(|(n, _)| n.starts_with("head."));
        vec![(encoder, 1.0), (head, self.opts.head_lr_factor)]
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        if self.dev.is_empty() {
            return Ok(BTreeMap::new());
        }
        evaluate_dev(&self.model, &self.tok, &self.dev, self.opts.run.max_len)
    }

    fn save(&self, dir: &Path, weights: Weights) -> Result<()> {
        weights.save_encoder(&self.model.encoder, dir)?;
        self.model.save_head(&dir.join(HEAD_FILE))
    }

    fn write_card(&self, state: &RunState) -> Result<ModelCard> {
        write_card(
            self.opts,
            state,
            self.base_card.as_ref(),
            self.pairs,
            self.data.len(),
        )
    }

    fn load_weights(&self, dir: &Path) -> Result<()> {
        Weights::load_checkpoint_encoder(&self.model.encoder, dir)?;
        let hidden = self.model.encoder.config.hidden_size;
        let (w, b) = BiEncoder::read_head(&dir.join(HEAD_FILE), hidden)?;
        let params = self.model.params();
        tch::no_grad(|| {
            params["head.weight"].shallow_clone().copy_(&w);
            params["head.bias"].shallow_clone().copy_(&b);
        });
        Ok(())
    }
}

/// Trains a bi-encoder and writes the model directory `opts.run.out` (model.json, config.json,
/// tokenizer.json, model.safetensors in fp16, head.safetensors, train-log.jsonl,
/// training.svg, and checkpoint/ for `--resume`). Dev MAP (classifier scoring) picks the
/// weights kept.
pub fn train_bi_encoder(
    opts: &BiTrainOptions,
    train: &[Question],
    dev: &[Question],
) -> Result<ModelCard> {
    ansel_torch::init(opts.run.threads, opts.run.seed);
    let (mut model, tok, enc_dir, base_card) = load_base(&opts.run.base)?;
    prepare_out(&opts.run.out, BI_KIND, opts.run.resume, &enc_dir)?;
    let data = groups(&tok, train, opts.run.max_len)?;
    let pairs: usize = data.iter().map(|g| g.candidates.len()).sum();
    if pairs == 0 {
        return Err(ModelError::Unsupported {
            model: BI_KIND.into(),
            message: format!(
                "{}: no training pairs (no question with a positive candidate)",
                opts.run.train_path
            ),
        });
    }
    let dev: Vec<Question> = dev.iter().filter(|q| q.positives() > 0).cloned().collect();
    let sizes: Vec<usize> = data.iter().map(|g| g.candidates.len()).collect();
    let batches_per_epoch =
        question_batches(&sizes, opts.run.batch_size, opts.run.seed, Packing::AtLeast).len();
    let (steps_per_epoch, total_steps) = opts.run.steps(batches_per_epoch);
    let start = serde_json::json!({
        "event": "start", "options": opts, "train_questions": data.len(), "train_pairs": pairs,
        "dev_questions": dev.len(), "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
    });
    eprintln!(
        "training {BI_KIND} on {pairs} pairs of {} questions ({steps_per_epoch} steps of ~{} pairs per epoch, {total_steps} steps in all); dev: {} questions",
        data.len(),
        opts.run.batch_size,
        dev.len()
    );
    model.set_requires_grad(true);
    let trainee = BiTrainee {
        opts,
        model,
        tok,
        data,
        sizes,
        dev,
        base_card,
        pairs,
    };
    run(
        &trainee,
        &LoopOptions {
            run: &opts.run,
            label: "train bi-encoder",
            total_steps,
            start,
        },
    )
}

fn write_card(
    opts: &BiTrainOptions,
    state: &RunState,
    base: Option<&ModelCard>,
    pairs: usize,
    questions: usize,
) -> Result<ModelCard> {
    let settings = BiEncoderSettings {
        scoring: Scoring::Classifier,
        max_len: opts.run.max_len,
        batch_size: 64,
        encoder: None,
    };
    write_training_card(
        CardParts {
            kind: BI_KIND,
            run: &opts.run,
            settings: serde_json::to_value(&settings).expect("serializes"),
            base_card: base,
            hyperparameters: serde_json::json!({
                "architecture": "Siamese bi-encoder: mean-pooled encoder vectors q, s; softmax classifier on [q; s; |q-s|] (SEDAN 3.2.1)",
                "loss": "softmax cross-entropy (2 classes)", "head_lr_factor": opts.head_lr_factor,
                "batching": "whole questions per micro-batch until batch_size pairs",
                "train_pairs": pairs, "train_questions": questions,
                "weights": "encoder fp16, head fp32",
            }),
        },
        state,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bi_encoder::{BiEncoderRanker, SentenceVectors};
    use crate::run::CHECKPOINT;
    use crate::train::tests::{questions, tiny_base};
    use ansel_model::train::TrainingLog;
    use ansel_model::Ranker;

    fn options(base: &Path, out: &Path) -> BiTrainOptions {
        let mut o = BiTrainOptions::defaults(base.to_str().unwrap(), out);
        o.run.lr = 1e-3;
        o.run.batch_size = 3;
        o.run.epochs = 1;
        o.run.warmup = 0.0;
        o.run.max_len = 16;
        o
    }

    #[test]
    fn a_step_moves_encoder_and_head_and_the_directory_loads_as_a_ranker() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.1);
        let out = dir.path().join("out");
        let mut opts = options(&base, &out);
        opts.run.max_steps = Some(1);
        opts.run.train_path = "synthetic.jsonl".into();
        let card = train_bi_encoder(&opts, &questions(), &questions()).unwrap();
        assert_eq!(card.kind, BI_KIND);
        let before = ansel_torch::read_tensors(&base.join("model.safetensors")).unwrap();
        let after =
            ansel_torch::read_tensors(&out.join(CHECKPOINT).join("weights.safetensors")).unwrap();
        // Mean pooling reads every layer's output: the last layer's FFN and the first
        // layer's query projection must both have moved.
        for name in [
            "bert.encoder.layer.1.output.dense.weight",
            "bert.encoder.layer.0.attention.self.query.weight",
        ] {
            let moved = (&after[name] - &before[name]).abs().max().double_value(&[]);
            assert!(moved > 1e-6, "{name} did not move");
        }
        // The cross-encoder's pooler is not on the bi-encoder's path.
        let pooler = (&after["bert.pooler.dense.weight"] - &before["bert.pooler.dense.weight"])
            .abs()
            .max()
            .double_value(&[]);
        assert_eq!(pooler, 0.0);
        let log = TrainingLog::read(&out).unwrap();
        assert!(log.iter().any(|e| e.get("dev_MAP").is_some()));

        let ranker = BiEncoderRanker::load(&out, &ModelCard::read(&out).unwrap()).unwrap();
        let scores = ranker.score_all(&questions()).unwrap();
        assert_eq!(
            scores.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
        assert!(scores.iter().flatten().all(|s| s.is_finite()));
        // Scoring again (from cached vectors) gives the same numbers.
        assert_eq!(ranker.score_all(&questions()).unwrap(), scores);

        // A cosine view of the same weights: another card pointing at the directory.
        let view = dir.path().join("cosine");
        let mut vcard = ModelCard::read(&out).unwrap();
        vcard.config["scoring"] = serde_json::json!("cosine");
        vcard.config["encoder"] = serde_json::json!("../out");
        vcard.write(&view).unwrap();
        let cosine = BiEncoderRanker::load(&view, &vcard).unwrap();
        let cs = cosine.score_all(&questions()).unwrap();
        assert!(cs.iter().flatten().all(|s| (-1.0001..=1.0001).contains(s)));
        assert_ne!(cs, scores);
    }

    #[test]
    fn stage_b_from_a_bi_encoder_keeps_its_head_and_lineage() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.0);
        let a = dir.path().join("a");
        let mut oa = options(&base, &a);
        oa.run.train_path = "wikiqa.tsv".into();
        train_bi_encoder(&oa, &questions(), &questions()).unwrap();
        let b = dir.path().join("b");
        let mut ob = options(&base, &b);
        ob.run.base = a.to_str().unwrap().into();
        ob.run.train_path = "synthetic.jsonl".into();
        ob.run.lr = 0.0;
        ob.run.extra = serde_json::json!({"kept": 7});
        let card = train_bi_encoder(&ob, &questions(), &[]).unwrap();
        let record = card.training.unwrap();
        assert_eq!(record.train_data, vec!["wikiqa.tsv", "synthetic.jsonl"]);
        assert_eq!(record.base.len(), 2);
        assert_eq!(record.hyperparameters["extra"]["kept"], 7);
        // With lr 0 the head read from stage (a) is written back unchanged.
        let ha = ansel_torch::read_tensors(&a.join(HEAD_FILE)).unwrap();
        let hb = ansel_torch::read_tensors(&b.join(HEAD_FILE)).unwrap();
        let diff = (&ha["head.weight"] - &hb["head.weight"])
            .abs()
            .max()
            .double_value(&[]);
        assert_eq!(diff, 0.0);
    }

    #[test]
    fn resuming_matches_an_uninterrupted_run() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.0);
        let full = dir.path().join("full");
        let mut opts = options(&base, &full);
        opts.run.epochs = 3;
        opts.run.checkpoint_every = 1;
        train_bi_encoder(&opts, &questions(), &questions()).unwrap();
        let cut = dir.path().join("cut");
        let mut first = opts.clone();
        first.run.out = cut.clone();
        first.run.interrupt_after = Some(3);
        assert!(train_bi_encoder(&first, &questions(), &questions()).is_err());
        let mut again = opts.clone();
        again.run.out = cut.clone();
        assert!(train_bi_encoder(&again, &questions(), &questions()).is_err());
        again.run.resume = true;
        train_bi_encoder(&again, &questions(), &questions()).unwrap();
        crate::testing::assert_same_checkpoints(&full, &cut, &["weights.safetensors", HEAD_FILE]);
    }

    #[test]
    fn precomputed_vectors_find_the_query_itself_first_and_survive_a_round_trip() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().unwrap();
        let base = tiny_base(dir.path(), 0.0);
        let ranker = BiEncoderRanker::from_base(base.to_str().unwrap(), 16).unwrap();
        let texts: Vec<String> = [
            "it was written by william shakespeare .",
            "the play is set in denmark .",
            "hamlet is a tragedy .",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let vectors = SentenceVectors::build(&ranker, texts).unwrap();
        let hits = vectors
            .search(&ranker, "the play is set in denmark .", 2)
            .unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].0, 1);
        assert!((hits[0].1 - 1.0).abs() < 1e-4 && hits[1].1 <= hits[0].1);
        vectors.save(&dir.path().join("vec")).unwrap();
        let loaded = SentenceVectors::load(&dir.path().join("vec")).unwrap();
        assert_eq!(loaded.texts, vectors.texts);
        assert_eq!(
            loaded
                .search(&ranker, "the play is set in denmark .", 2)
                .unwrap(),
            hits
        );
    }
}
