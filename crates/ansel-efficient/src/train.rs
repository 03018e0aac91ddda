//! Training with early stopping on dev MAP, a checkpoint per epoch and resumption.
//!
//! While training, `<out>.training/` holds the log, the vocabulary, the best
//! weights and `checkpoint/` (the last weights, the AdamW moments and
//! `state.json`, swapped in whole after every epoch). `--resume` continues from
//! there exactly: the weights, the optimizer's moments and step (so the
//! schedule position), the early-stopping state, the data order (a function of
//! the seed and the epoch) and the dropout RNG (re-seeded from the seed and the
//! epoch at the start of every epoch after the first) are all restored, so 1 epoch + resume
//! trains the same model as 2 epochs in one go. At the end the model directory
//! `<out>` is replaced as a whole (model.json, best weights, vocabulary,
//! training log) and the work directory is removed, so `<out>` is always a
//! complete model, old or new.

use crate::average::{swap_in, Averager, Averaging};
use crate::batch::{Batch, Distill, EncodedQuestion, Limits};
use crate::ranker::WEIGHTS;
use crate::torch_ranker::{chunks_of_pairs, Loaded};
use crate::vocab::Vocabulary;
use crate::{Architecture, Loss, ModelConfig, RnnKind};
use ansel_data::{shuffle_seeded, Question};
use ansel_eval::{evaluate, Filter};
use ansel_model::train::{EarlyStopping, Progress, TrainingLog};
use ansel_model::{replace_dir, write_atomic, ModelCard, ModelError, Result, TrainingRecord};
use ansel_torch::{AdamW, WarmupLinear};
use ansel_vectors::retrofit::{Lexicon, RETROFIT_ITERATIONS};
use ansel_vectors::{VectorSource, WordVectors};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to train and how.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub architecture: Architecture,
    pub loss: Loss,
    pub rnn: RnnKind,
    pub vectors: VectorSource,
    /// Where `scripts/fetch-models.sh` put the vector packages.
    pub models_dir: PathBuf,
    pub train_path: String,
    pub dev_path: String,
    pub out: PathBuf,
    pub seed: u64,
    pub patience: usize,
    pub resume: bool,
    pub epochs: usize,
    /// Peak learning rate; the loss' default when absent.
    pub lr: Option<f64>,
    /// Pairs per optimisation step (whole questions, so about this many).
    pub batch_pairs: usize,
    pub threads: usize,
    pub hidden: Option<usize>,
    pub dropout: f64,
    /// Most frequent words of the vector table added to the vocabulary beside the training words.
    pub extra_vocab: usize,
    /// Reduce the word vectors to this many principal components (computed over the model's
    /// vocabulary) before training; the bundled rows are the reduced ones.
    pub vector_dim: Option<usize>,
    /// Where encoded vector sources cache their rows (`<cache>/<source>/`); none: no cache.
    pub vector_cache: Option<PathBuf>,
    /// Retrofit the word vectors to this lexicon (after any reduction) before the model bundles
    /// them ([`WordVectors::retrofitted`]).
    pub retrofit: Option<std::sync::Arc<Lexicon>>,
    /// Cosinenet without the exact-match flag ([`ModelConfig::no_exact_match`]).
    pub no_exact_match: bool,
    /// No pair vector beside the RNN's states ([`ModelConfig::no_skip`]).
    pub no_skip: bool,
    /// Cosinenet: one relatedness feature per column group ([`ModelConfig::relatedness_parts`]).
    pub relatedness_parts: Vec<usize>,
    /// [`train`] with `glove+minilm-encoded`: one relatedness feature for the GloVe part and
    /// one for the MiniLM part (sets `relatedness_parts`).
    pub split_relatedness: bool,
    pub limits: Limits,
    /// Knowledge distillation: the teacher's scores of the training questions (and of extra
    /// teacher-labelled questions); none: gold labels only.
    pub teacher: Option<std::sync::Arc<crate::Teacher>>,
    /// Keep `<out>.training/` after finishing, so that `resume` with more epochs can train on.
    pub keep_checkpoint: bool,
    /// Weight averaging (EMA or the last epochs' mean): dev MAP, and the saved model, use the
    /// averaged weights.
    pub averaging: Averaging,
    /// Start from the trainable weights of this saved model of the same architecture and
    /// sizes (transfer, then adapt); the embedding table is the new vocabulary's.
    pub init: Option<PathBuf>,
    /// Tests only: fail as if killed right after the checkpoint of this epoch.
    #[doc(hidden)]
    pub interrupt_after: Option<usize>,
}

impl TrainOptions {
    /// Defaults close to the thesis (ch. 6.4.2, 7.3.2): batches of about 50 pairs, dropout 0.5;
    /// five epochs with early stopping instead of three without.
    pub fn new(architecture: Architecture, train_path: &str, dev_path: &str, out: &Path) -> Self {
        TrainOptions {
            architecture,
            loss: Loss::Listwise,
            rnn: RnnKind::None,
            vectors: VectorSource::Glove,
            models_dir: ansel_vectors::models_dir(),
            train_path: train_path.to_string(),
            dev_path: dev_path.to_string(),
            out: out.to_path_buf(),
            seed: 42,
            patience: 3,
            resume: false,
            epochs: 5,
            lr: None,
            batch_pairs: 50,
            threads: 0,
            hidden: None,
            dropout: 0.5,
            extra_vocab: 10_000,
            vector_dim: None,
            vector_cache: Some(PathBuf::from("target").join("vector-cache")),
            retrofit: None,
            no_exact_match: false,
            no_skip: false,
            relatedness_parts: Vec::new(),
            split_relatedness: false,
            limits: Limits {
                question_tokens: 40,
                candidate_tokens: 60,
            },
            teacher: None,
            keep_checkpoint: false,
            averaging: Averaging::None,
            init: None,
            interrupt_after: None,
        }
    }
}

impl TrainOptions {
    /// The recipe a saved model was trained with (its card: architecture, loss, RNN, vectors,
    /// sizes, dropout, token limits; its training record: epochs, learning rate, batch size,
    /// extra vocabulary, patience, seed), to train the same family again on other data
    /// (out-of-fold base scores). `threads` keeps [`TrainOptions::new`]'s default (all cores).
    pub fn from_card(
        card: &ModelCard,
        train_path: &str,
        dev_path: &str,
        out: &Path,
    ) -> Result<Self> {
        let bad = |message: String| ModelError::Unsupported {
            model: card.name.clone(),
            message,
        };
        let architecture: Architecture = card.kind.parse().map_err(bad)?;
        let config: ModelConfig = ansel_model::json::from_value(card.config.clone(), "config")
            .map_err(|e| bad(format!("model.json {e}")))?;
        let training = card.training.as_ref().ok_or_else(|| {
            bad("model.json has no `training` record: its recipe is unknown".into())
        })?;
        let h = &training.hyperparameters;
        let number = |field: &str| -> Result<f64> {
            h.get(field).and_then(|v| v.as_f64()).ok_or_else(|| {
                bad(format!(
                    "model.json field `training.hyperparameters.{field}` is missing or not a number"
                ))
            })
        };
        let mut opts = TrainOptions::new(architecture, train_path, dev_path, out);
        opts.loss = config.loss;
        opts.rnn = config.rnn;
        opts.vectors = config.vectors.parse().map_err(bad)?;
        opts.hidden = Some(config.hidden);
        opts.dropout = config.dropout;
        opts.vector_dim = config.vector_dim;
        opts.no_exact_match = config.no_exact_match;
        opts.no_skip = config.no_skip;
        opts.relatedness_parts = config.relatedness_parts.clone();
        opts.limits = config.limits;
        opts.seed = training.seed;
        opts.epochs = number("epochs")? as usize;
        opts.lr = Some(number("lr")?);
        opts.batch_pairs = number("batch_pairs")? as usize;
        opts.extra_vocab = number("extra_vocab")? as usize;
        opts.patience = number("patience")? as usize;
        if let Some(lexicon) = h.pointer("/retrofit/lexicon").and_then(|v| v.as_str()) {
            let lexicon = Lexicon::read(Path::new(lexicon)).map_err(|e| {
                bad(format!(
                    "model.json field `training.hyperparameters.retrofit.lexicon`: {e}"
                ))
            })?;
            opts.retrofit = Some(std::sync::Arc::new(lexicon));
        }
        if let Some(a) = h.get("averaging") {
            opts.averaging = serde_json::from_value(a.clone()).map_err(|e| {
                bad(format!(
                    "model.json field `training.hyperparameters.averaging`: {e}"
                ))
            })?;
        }
        Ok(opts)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TrainSummary {
    pub dev_map: f64,
    pub best_epoch: usize,
    pub epochs: usize,
    pub seconds: f64,
    pub parameters: usize,
}

/// What a resumed run needs besides the weights.
#[derive(Serialize, Deserialize)]
struct State {
    config: ModelConfig,
    hyperparameters: serde_json::Value,
    epochs_done: usize,
    step: usize,
    stopping: EarlyStopping,
    seconds: f64,
    /// CPU time of the epochs (what `seconds` would be on an idle machine, one thread).
    #[serde(default)]
    cpu_seconds: f64,
    dev_metrics: std::collections::BTreeMap<String, f64>,
}

const CHECKPOINT: &str = "checkpoint";
const STATE: &str = "state.json";
const LAST: &str = "last.safetensors";
const OPTIMIZER: &str = "optimizer.safetensors";
const BEST: &str = "best.safetensors";
const AVERAGE: &str = "average.safetensors";

/// The seed of libtorch's RNG (dropout) for `epoch` (2 on): a function of the run's seed and
/// the epoch alone, so that a resumed epoch draws the masks an uninterrupted run would.
fn epoch_seed(seed: u64, epoch: usize) -> i64 {
    (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        as i64
}

fn work_dir(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".training");
    out.with_file_name(name)
}

/// Trains with the vectors named in `opts` (loaded from `opts.models_dir`;
/// not needed to resume) and replaces `opts.out` with the best model on dev.
pub fn train(
    opts: &TrainOptions,
    train_data: &[Question],
    dev_data: &[Question],
) -> Result<TrainSummary> {
    if opts.split_relatedness && opts.vectors != VectorSource::GloveMinilmEncoded {
        return Err(ModelError::Backend(format!(
            "--split-relatedness needs --vectors glove+minilm-encoded, not {}",
            opts.vectors.name()
        )));
    }
    let vectors = if opts.resume {
        None
    } else {
        // Encoding words runs on the threads asked for.
        ansel_torch::init(opts.threads, opts.seed);
        let vectors = load_vectors(opts, &[train_data, dev_data, &extra_questions(opts)])
            .map_err(|e| ModelError::Backend(e.to_string()))?;
        Some(match &opts.retrofit {
            Some(lexicon) => {
                let (table, changed) = vectors.retrofitted(lexicon, RETROFIT_ITERATIONS);
                eprintln!(
                    "retrofitted {changed} of {} word vectors to {}",
                    table.len(),
                    lexicon.path().display()
                );
                table
            }
            None => vectors,
        })
    };
    if opts.split_relatedness && !opts.resume {
        let dim = vectors.as_ref().map_or(0, WordVectors::dim);
        let mut opts = opts.clone();
        opts.relatedness_parts = vec![GLOVE_DIM, dim - GLOVE_DIM];
        return train_with_vectors(&opts, vectors.as_ref(), train_data, dev_data);
    }
    train_with_vectors(opts, vectors.as_ref(), train_data, dev_data)
}

/// Root-mean-square component of encoded or reduced vectors: about GloVe 50d's (see
/// [`crate::vectors::pca`]).
const VECTOR_RMS: f64 = 0.7;

/// The width of the GloVe part of `glove+minilm-encoded` (GloVe 6B 50d).
const GLOVE_DIM: usize = 50;

/// The vectors `opts` names: a table source whole (reduced to `opts.vector_dim` principal
/// components when asked, over the words the vocabulary can take); an encoded source for
/// those words only (`opts.extra_vocab` common words first, so that they are the table's
/// first words as GloVe's most frequent are, then the words of `data`), its encoded part
/// reduced to `opts.vector_dim` components or else rescaled to GloVe's scale, and for
/// `glove+minilm-encoded` joined after the word's GloVe vector.
fn load_vectors(opts: &TrainOptions, data: &[&[Question]]) -> ansel_vectors::Result<WordVectors> {
    let source = opts.vectors;
    if !source.is_encoded() && opts.vector_dim.is_none() {
        return source.load(&opts.models_dir);
    }
    let mut words = source.common_words(&opts.models_dir, opts.extra_vocab)?;
    for question in data.iter().flat_map(|qs| qs.iter()) {
        let texts =
            std::iter::once(&question.text).chain(question.candidates.iter().map(|c| &c.text));
        words.extend(texts.flat_map(|t| ansel_text::words(t)));
    }
    let vectors = source.load_for(
        &opts.models_dir,
        &words,
        opts.vector_cache.as_deref(),
        ansel_bert::WordEncoder::load,
    )?;
    let reduced = match opts.vector_dim {
        Some(dim) => {
            // Only the rows the vocabulary can hold, common words first.
            let mut seen = std::collections::HashSet::new();
            let (mut kept, mut rows) = (Vec::new(), Vec::new());
            for word in &words {
                if seen.insert(word.as_str()) {
                    if let Some(v) = vectors.get(word) {
                        kept.push(word.clone());
                        rows.extend_from_slice(&v);
                    }
                }
            }
            let table = WordVectors::new(kept, vectors.dim(), rows)?;
            crate::vectors::pca(&table, dim, VECTOR_RMS)?
        }
        None => crate::vectors::rescaled(&vectors, VECTOR_RMS)?,
    };
    if source == VectorSource::GloveMinilmEncoded {
        let glove = VectorSource::Glove.load(&opts.models_dir)?;
        return WordVectors::concat(&glove, &reduced);
    }
    Ok(reduced)
}

/// [`train`] with vectors given by the caller (`None` only to resume).
pub fn train_with_vectors(
    opts: &TrainOptions,
    vectors: Option<&WordVectors>,
    train_data: &[Question],
    dev_data: &[Question],
) -> Result<TrainSummary> {
    ansel_torch::init(opts.threads, opts.seed);
    let work = work_dir(&opts.out);
    let lr = opts.lr.unwrap_or(opts.loss.default_lr());
    let mut hyperparameters = serde_json::json!({
        "epochs": opts.epochs, "lr": lr, "batch_pairs": opts.batch_pairs,
        "optimizer": "adam (ansel_torch::AdamW, weight decay 0; moments saved with each checkpoint)",
        "schedule": "linear warm-up (10%) then linear decay", "patience": opts.patience,
        "extra_vocab": opts.extra_vocab, "threads": opts.threads,
    });
    if let Some(t) = &opts.teacher {
        hyperparameters["distillation"] =
            serde_json::to_value(&t.distillation).expect("distillation serializes");
    }
    let averaging = opts.averaging.validate().map_err(ModelError::Backend)?;
    if averaging != Averaging::None {
        hyperparameters["averaging"] = serde_json::to_value(averaging).expect("serializes");
    }
    if let Some(dir) = &opts.init {
        hyperparameters["init"] = dir.display().to_string().into();
    }
    if let Some(lexicon) = &opts.retrofit {
        hyperparameters["retrofit"] = lexicon.record();
    }
    let (config, vocab, loaded, mut state) = if opts.resume {
        resume(&work, opts)?
    } else {
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| ModelError::io(&work, e))?;
        let vectors =
            vectors.ok_or_else(|| ModelError::Backend("no word vectors to train with".into()))?;
        let extra = extra_questions(opts);
        let vocab = Vocabulary::build(&[train_data, dev_data, &extra], vectors, opts.extra_vocab);
        let config = ModelConfig {
            architecture: opts.architecture,
            loss: opts.loss,
            rnn: opts.rnn,
            vectors: opts.vectors.name().to_string(),
            vector_dim: opts.vector_dim,
            embedding_dim: vectors.dim(),
            vocab_size: vocab.len(),
            hidden: opts.hidden.unwrap_or(opts.architecture.default_hidden()),
            dropout: opts.dropout,
            limits: opts.limits,
            no_exact_match: opts.no_exact_match,
            no_skip: opts.no_skip,
            relatedness_parts: opts.relatedness_parts.clone(),
        };
        let covered: usize = config.relatedness_parts.iter().sum();
        if !config.relatedness_parts.is_empty() && covered != config.embedding_dim {
            return Err(ModelError::Backend(format!(
                "relatedness parts {:?} cover {covered} columns of {}-d vectors",
                config.relatedness_parts, config.embedding_dim
            )));
        }
        let mut loaded = Loaded::new(&config);
        loaded.net.embeddings.fill(&vocab.embedding_rows(vectors));
        if let Some(dir) = &opts.init {
            init_from(dir, &config, &ansel_torch::trainable(&loaded.vs))?;
        }
        vocab.write(&work)?;
        let state = State {
            config: config.clone(),
            hyperparameters: hyperparameters.clone(),
            epochs_done: 0,
            step: 0,
            stopping: EarlyStopping::new(opts.patience),
            seconds: 0.0,
            cpu_seconds: 0.0,
            dev_metrics: Default::default(),
        };
        (config, vocab, loaded, state)
    };
    let train_set = training_set(opts, &config, &vocab, train_data)?;
    let distill = opts.teacher.as_ref().map(|t| Distill {
        weight: t.distillation.weight,
        temperature: t.distillation.temperature,
    });
    if train_set.is_empty() {
        return Err(ModelError::Backend(format!(
            "{}: no trainable question",
            opts.train_path
        )));
    }
    let dev_encoded: Vec<EncodedQuestion> = dev_data
        .iter()
        .map(|q| EncodedQuestion::new(q, &vocab, config.limits))
        .collect();
    let parameters = loaded.parameters();

    let mut order: Vec<usize> = (0..train_set.len()).collect();
    let steps_per_epoch = chunks_of_pairs(&order, |i| train_set[i].len(), opts.batch_pairs).count();
    let total = steps_per_epoch * opts.epochs;
    let schedule = WarmupLinear {
        peak: lr,
        warmup: (total / 10).max(1),
        total,
    };
    let params = ansel_torch::trainable(&loaded.vs);
    let mut optimizer = AdamW::new(&params);
    let mut averager = Averager::new(averaging, &params);
    if opts.resume {
        optimizer.load(&work.join(CHECKPOINT).join(OPTIMIZER))?;
        if averager.active() {
            averager.load(&work.join(CHECKPOINT).join(AVERAGE), &params)?;
        }
    }
    let mut log = TrainingLog::open(&work)?;
    let mut progress = Progress::new(
        total.saturating_sub(state.step) as u64,
        config.architecture.name(),
    );
    for epoch in state.epochs_done + 1..=opts.epochs {
        if state.stopping.should_stop() {
            break;
        }
        let started = Instant::now();
        let cpu_started = ansel_torch::cpu_seconds();
        if epoch > 1 {
            // Epoch 1 draws on from the seeding in `init` (as before this was resumable); a
            // run can only resume at a later epoch, which re-seeds from the seed and itself.
            ansel_torch::tch::manual_seed(epoch_seed(opts.seed, epoch));
        }
        order.sort_unstable();
        shuffle_seeded(
            &mut order,
            opts.seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9),
        );
        let (mut loss_sum, mut batches) = (0.0, 0);
        for chunk in chunks_of_pairs(&order, |i| train_set[i].len(), opts.batch_pairs) {
            let batch = Batch::new(&chunk.iter().map(|&i| &train_set[i]).collect::<Vec<_>>());
            let logits = loaded.net.forward(&batch, true);
            let loss = batch.loss(&logits, config.loss, distill);
            ansel_torch::zero_gradients(&params);
            loss.backward();
            optimizer.step(&params, schedule.at(state.step), 0.0, state.step + 1);
            averager.after_step(&params);
            let loss = loss.double_value(&[]);
            if !loss.is_finite() {
                return Err(ModelError::Backend(format!(
                    "epoch {epoch}: the loss became {loss}; try a lower --lr"
                )));
            }
            loss_sum += loss;
            batches += 1;
            state.step += 1;
            progress.step(batch.pairs() as u64, loss);
        }
        // With averaging, dev MAP and the best model are the averaged weights'; training goes
        // on from the raw ones.
        averager.after_epoch(&params);
        let raw = averager.averaged().map(|avg| swap_in(&params, &avg));
        let dev_scores = loaded.score(&dev_encoded);
        let report = evaluate(dev_data, &dev_scores, Filter::Answered);
        let dev_map = report.metric("MAP").unwrap_or(0.0);
        state.seconds += started.elapsed().as_secs_f64();
        if let (Some(a), Some(b)) = (cpu_started, ansel_torch::cpu_seconds()) {
            state.cpu_seconds += b - a;
        }
        state.epochs_done = epoch;
        if state.stopping.observe(epoch, dev_map) {
            ansel_torch::save_vars(&loaded.vs, &work.join(BEST))?;
            state.dev_metrics = report
                .named_metrics()
                .into_iter()
                .map(|(name, value)| (format!("dev {name}"), value))
                .collect();
        }
        if let Some(raw) = raw {
            swap_in(&params, &raw);
        }
        log.append(&serde_json::json!({
            "epoch": epoch, "step": state.step, "train_loss": loss_sum / batches.max(1) as f64,
            "dev_map": dev_map, "dev_mrr": report.metric("MRR"), "seconds": state.seconds,
        }))?;
        // Weights, moments and position in one directory swapped in whole: a kill leaves
        // the previous epoch's checkpoint or this one, never a mix.
        replace_dir(&work.join(CHECKPOINT), |dir| {
            ansel_torch::save_vars(&loaded.vs, &dir.join(LAST))?;
            optimizer.save(&dir.join(OPTIMIZER))?;
            if averager.active() {
                averager.save(&dir.join(AVERAGE))?;
            }
            let json = serde_json::to_vec_pretty(&state).expect("state serializes");
            write_atomic(&dir.join(STATE), &json)
        })?;
        if opts.interrupt_after == Some(epoch) {
            return Err(ModelError::Backend("interrupted (test)".into()));
        }
    }
    progress.finish();
    finish(opts, &work, &config, &state, parameters)?;
    if !opts.keep_checkpoint {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(TrainSummary {
        dev_map: state.stopping.best.unwrap_or(0.0),
        best_epoch: state.stopping.best_epoch.unwrap_or(0),
        epochs: state.epochs_done,
        seconds: state.seconds,
        parameters,
    })
}

/// Copies the trainable weights of the saved model in `dir` into `params`: the model must be
/// of `config`'s architecture, and every trainable weight must be there with its shape (the
/// same sizes); the embedding table is not trained, so it stays the new vocabulary's.
fn init_from(
    dir: &Path,
    config: &ModelConfig,
    params: &std::collections::BTreeMap<String, ansel_torch::tch::Tensor>,
) -> Result<()> {
    let card = ModelCard::read(dir)?;
    if card.kind != config.architecture.name() {
        return Err(ModelError::Format {
            path: dir.join(ansel_model::CARD_FILE),
            message: format!(
                "--init: a {} model cannot start a {} run",
                card.kind,
                config.architecture.name()
            ),
        });
    }
    let path = dir.join(WEIGHTS);
    let saved = ansel_torch::read_tensors(&path)?;
    ansel_torch::copy_into(params, &saved, &path).map_err(|e| match e {
        ModelError::Format { path, message } => ModelError::Format {
            path,
            message: format!("--init: {message} (train with the same sizes)"),
        },
        other => other,
    })
}

/// The questions labelled by the teacher alone (`--extra-train`), if any.
fn extra_questions(opts: &TrainOptions) -> Vec<Question> {
    opts.teacher
        .iter()
        .flat_map(|t| t.extra.iter().map(|(q, _)| q.clone()))
        .collect()
}

/// The encoded training questions: every question of `train_data` with a candidate (with its
/// teacher scores when distilling), list-wise only those with a target (a gold positive, or
/// teacher scores when `unanswered` questions are distilled too), then the teacher-only
/// questions.
fn training_set(
    opts: &TrainOptions,
    config: &ModelConfig,
    vocab: &Vocabulary,
    train_data: &[Question],
) -> Result<Vec<EncodedQuestion>> {
    let teacher = opts.teacher.as_deref();
    if let Some(t) = teacher {
        check_scores(&opts.train_path, train_data, &t.train_scores)?;
        for (q, scores) in &t.extra {
            check_scores(
                &t.distillation.teacher,
                std::slice::from_ref(q),
                std::slice::from_ref(scores),
            )?;
        }
    }
    let mut set: Vec<EncodedQuestion> = train_data
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let encoded = EncodedQuestion::new(q, vocab, config.limits);
            match teacher {
                Some(t) => encoded.with_teacher(t.train_scores[i].clone(), false),
                None => encoded,
            }
        })
        .filter(|q| !q.is_empty())
        .collect();
    if config.loss == Loss::Listwise {
        // A question without a positive has no gold target distribution.
        let unanswered =
            teacher.is_some_and(|t| t.distillation.unanswered && t.distillation.weight > 0.0);
        set.retain(|q| q.has_positive() || (unanswered && q.has_teacher()));
    }
    for (q, scores) in teacher.iter().flat_map(|t| t.extra.iter()) {
        let encoded = EncodedQuestion::new(q, vocab, config.limits);
        if !encoded.is_empty() {
            set.push(encoded.with_teacher(scores.clone(), true));
        }
    }
    Ok(set)
}

/// Teacher scores must give one score per candidate of every question, in order.
fn check_scores(source: &str, questions: &[Question], scores: &[Vec<f32>]) -> Result<()> {
    if questions.len() != scores.len() {
        return Err(ModelError::Backend(format!(
            "{source}: {} questions but teacher scores for {}",
            questions.len(),
            scores.len()
        )));
    }
    for (q, s) in questions.iter().zip(scores) {
        if q.candidates.len() != s.len() {
            return Err(ModelError::Backend(format!(
                "{source}: question {:?} has {} candidates but {} teacher scores",
                q.id,
                q.candidates.len(),
                s.len()
            )));
        }
        if let Some(bad) = s.iter().find(|v| !v.is_finite()) {
            return Err(ModelError::Backend(format!(
                "{source}: question {:?} has a teacher score of {bad}",
                q.id
            )));
        }
    }
    Ok(())
}

fn resume(work: &Path, opts: &TrainOptions) -> Result<(ModelConfig, Vocabulary, Loaded, State)> {
    let ckpt = work.join(CHECKPOINT);
    if !ckpt.join(STATE).is_file() && work.join(STATE).is_file() {
        return Err(ModelError::Format {
            path: work.join(STATE),
            message: "written by an older ansel that did not save the optimizer's moments; \
                      train again without --resume"
                .into(),
        });
    }
    let path = ckpt.join(STATE);
    let bytes = std::fs::read(&path).map_err(|e| {
        ModelError::io(
            &path,
            std::io::Error::new(e.kind(), format!("nothing to resume: {e}")),
        )
    })?;
    let state: State = serde_json::from_slice(&bytes).map_err(|e| ModelError::Format {
        path: path.clone(),
        message: format!("line {}: {e}", e.line()),
    })?;
    if state.config.architecture != opts.architecture {
        return Err(ModelError::Format {
            path,
            message: format!(
                "the run being resumed trains {}, not {}",
                state.config.architecture.name(),
                opts.architecture.name()
            ),
        });
    }
    let vocab = Vocabulary::read(work)?;
    let mut loaded = Loaded::new(&state.config);
    ansel_torch::load_vars(&mut loaded.vs, &ckpt.join(LAST))?;
    Ok((state.config.clone(), vocab, loaded, state))
}

/// Replaces `<out>` with the best weights, the vocabulary, the card and the log.
fn finish(
    opts: &TrainOptions,
    work: &Path,
    config: &ModelConfig,
    state: &State,
    parameters: usize,
) -> Result<()> {
    let name = format!(
        "{}-{}-{}",
        config.architecture.name(),
        serde_json::to_value(config.loss)
            .expect("serializes")
            .as_str()
            .unwrap_or(""),
        serde_json::to_value(config.rnn)
            .expect("serializes")
            .as_str()
            .unwrap_or("")
    );
    let mut card = ModelCard::new(
        config.architecture.name(),
        &name,
        serde_json::to_value(config).expect("config serializes"),
    );
    let mut metrics = state.dev_metrics.clone();
    metrics.insert("trainable parameters".into(), parameters as f64);
    if state.cpu_seconds > 0.0 {
        metrics.insert("train cpu seconds".into(), state.cpu_seconds);
    }
    let mut train_data = vec![opts.train_path.clone()];
    if let Some(t) = &opts.teacher {
        train_data.extend(t.distillation.extra_train.iter().cloned());
    }
    card.training = Some(TrainingRecord {
        train_data,
        dev_data: Some(opts.dev_path.clone()),
        hyperparameters: state.hyperparameters.clone(),
        seed: opts.seed,
        epochs_completed: state.epochs_done,
        best_epoch: state.stopping.best_epoch,
        metrics,
        train_seconds: state.seconds,
        machine: machine(),
        base: std::iter::once(format!("{} word vectors", config.vectors))
            .chain(opts.init.iter().map(|d| format!("init: {}", d.display())))
            .collect(),
    });
    replace_dir(&opts.out, |dir| {
        for (from, to) in [
            (BEST, WEIGHTS),
            (crate::vocab::FILE, crate::vocab::FILE),
            (TrainingLog::FILE, TrainingLog::FILE),
        ] {
            let bytes =
                std::fs::read(work.join(from)).map_err(|e| ModelError::io(work.join(from), e))?;
            write_atomic(&dir.join(to), &bytes)?;
        }
        card.write(dir)
    })
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{cores}-core {} CPU", std::env::consts::ARCH)
}
