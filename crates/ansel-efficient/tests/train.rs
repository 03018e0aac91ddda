//! Training end to end on toy data with made-up vectors (no vector package needed).

use ansel_data::{Candidate, DocContext, Question};
use ansel_efficient::{
    train_with_vectors, Architecture, EfficientRanker, Loss, RnnKind, TrainOptions, TrainSummary,
};
use ansel_eval::{evaluate, Filter};
use ansel_model::{ModelCard, Ranker};
use ansel_torch::tch;
use ansel_vectors::WordVectors;

/// libtorch's RNG is one per process and the tests run on threads of one process: a test
/// that seeds it (every training run does) or draws from it (dropout) holds this lock, so
/// that another test's run cannot reseed or advance it halfway through.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn question(id: &str, text: &str, candidates: &[(&str, bool)]) -> Question {
    Question {
        id: id.into(),
        text: text.into(),
        candidates: candidates
            .iter()
            .enumerate()
            .map(|(i, (text, label))| Candidate {
                id: i.to_string(),
                text: text.to_string(),
                label: Some(*label),
                context: Some(DocContext {
                    doc_id: format!("d{id}"),
                    position: i,
                    ..Default::default()
                }),
            })
            .collect(),
    }
}

/// Three questions whose answer is never first and shares words with the question.
fn toy() -> Vec<Question> {
    vec![
        question(
            "1",
            "who wrote hamlet",
            &[
                ("the play is set in denmark", false),
                ("hamlet was written by shakespeare", true),
                ("it is a long tragedy", false),
            ],
        ),
        question(
            "2",
            "where is the eiffel tower",
            &[
                ("towers are tall", false),
                ("it was built for a fair", false),
                ("the eiffel tower stands in paris", true),
                ("paris is a city", false),
            ],
        ),
        question(
            "3",
            "what do frogs eat",
            &[
                ("frogs are amphibians", false),
                ("many frogs eat insects", true),
            ],
        ),
    ]
}

/// Deterministic pseudo-random 8-d vectors for every toy word.
fn vectors(data: &[Question]) -> WordVectors {
    let mut words: Vec<String> = data
        .iter()
        .flat_map(|q| std::iter::once(&q.text).chain(q.candidates.iter().map(|c| &c.text)))
        .flat_map(|t| ansel_text::words(t))
        .collect();
    words.sort();
    words.dedup();
    let mut state = 7u64;
    let values = (0..words.len() * 8)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    WordVectors::new(words, 8, values).unwrap()
}

fn options(
    architecture: Architecture,
    loss: Loss,
    rnn: RnnKind,
    out: &std::path::Path,
) -> TrainOptions {
    let mut opts = TrainOptions::new(architecture, "toy", "toy", out);
    opts.loss = loss;
    opts.rnn = rnn;
    opts.epochs = 40;
    opts.patience = 40;
    opts.lr = Some(1e-2);
    opts.batch_pairs = 4;
    opts.hidden = Some(16);
    opts.dropout = 0.0;
    opts.threads = 1;
    opts
}

/// The default recipe, Cosinenet list-wise + BiRNN, at the toy size of [`options`].
fn birnn(out: &std::path::Path) -> TrainOptions {
    options(Architecture::Cosinenet, Loss::Listwise, RnnKind::Birnn, out)
}

fn map(ranker: &dyn Ranker, data: &[Question]) -> f64 {
    let scores = ranker.score_all(data).unwrap();
    evaluate(data, &scores, Filter::Answered)
        .metric("MAP")
        .unwrap()
}

#[test]
fn every_architecture_and_loss_fits_the_toy_questions_and_reloads() {
    let _serial = serial();
    let data = toy();
    let vectors = vectors(&data);
    let cases = [
        (Architecture::Cosinenet, Loss::Listwise, RnnKind::Birnn),
        (Architecture::Cosinenet, Loss::Pointwise, RnnKind::None),
        (Architecture::Relcnn, Loss::Pointwise, RnnKind::Rnn),
        (
            Architecture::CompareAggregate,
            Loss::Listwise,
            RnnKind::None,
        ),
    ];
    for (architecture, loss, rnn) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("model");
        let opts = options(architecture, loss, rnn, &out);
        let summary = train_with_vectors(&opts, Some(&vectors), &data, &data).unwrap();
        let case = format!("{architecture:?} {loss:?} {rnn:?}");
        assert_eq!(summary.dev_map, 1.0, "{case} did not fit the toy data");
        assert!(summary.parameters > 0);
        // The saved best weights give back the dev MAP they were kept for.
        let card = ModelCard::read(&out).unwrap();
        assert_eq!(card.kind, architecture.name());
        let ranker = EfficientRanker::load(&out, &card).unwrap();
        assert_eq!(map(&ranker, &data), 1.0, "{case} after reloading");
        let again = EfficientRanker::load(&out, &card).unwrap();
        assert_eq!(
            ranker.score_all(&data).unwrap(),
            again.score_all(&data).unwrap()
        );
        assert!(
            !dir.path().join("model.training").exists(),
            "work directory removed"
        );
        assert!(out.join("train-log.jsonl").is_file());
    }
}

/// The toy questions, their vectors, a fresh folder and a model path in it.
fn toy_run() -> (
    Vec<Question>,
    WordVectors,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let data = toy();
    let vectors = vectors(&data);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    (data, vectors, dir, out)
}

#[test]
fn a_question_scores_the_same_alone_and_beside_a_longer_one() {
    let _serial = serial();
    // Padding must not leak into a question's scores, through the BiRNN's
    // backward pass in particular.
    let (data, vectors, _dir, out) = toy_run();
    let mut opts = birnn(&out);
    opts.epochs = 2;
    train_with_vectors(&opts, Some(&vectors), &data, &data).unwrap();
    let ranker = EfficientRanker::load(&out, &ModelCard::read(&out).unwrap()).unwrap();
    let together = ranker.score_all(&data).unwrap();
    for (q, scores) in data.iter().zip(&together) {
        let alone = ranker.score(q).unwrap();
        for (a, b) in alone.iter().zip(scores) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
}

/// The error of `--resume` into `out`, whose work directory holds no complete run.
fn resume_error(out: &std::path::Path) -> String {
    let data = toy();
    let mut opts = options(Architecture::Cosinenet, Loss::Listwise, RnnKind::None, out);
    opts.resume = true;
    train_with_vectors(&opts, None, &data, &data)
        .unwrap_err()
        .to_string()
}

#[test]
fn resuming_without_a_run_is_a_clear_error() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let err = resume_error(&dir.path().join("m"));
    assert!(
        err.contains("state.json") && err.contains("nothing to resume"),
        "{err}"
    );
}

#[test]
fn a_resumed_run_continues_from_its_last_epoch() {
    let _serial = serial();
    let (data, vectors, dir, out) = toy_run();
    let mut opts = options(Architecture::Relcnn, Loss::Listwise, RnnKind::None, &out);
    opts.epochs = 2;
    opts.keep_checkpoint = true;
    train_with_vectors(&opts, Some(&vectors), &data, &data).unwrap();
    assert!(dir
        .path()
        .join("model.training/checkpoint/state.json")
        .is_file());
    opts.epochs = 4;
    opts.resume = true;
    opts.keep_checkpoint = false;
    // No vectors: a resumed run takes its embeddings from the checkpoint.
    let summary = train_with_vectors(&opts, None, &data, &data).unwrap();
    assert_eq!(summary.epochs, 4);
    let card = ModelCard::read(&out).unwrap();
    assert_eq!(card.training.unwrap().epochs_completed, 4);
    let log = std::fs::read_to_string(out.join("train-log.jsonl")).unwrap();
    let epochs: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["epoch"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        epochs,
        vec![1, 2, 3, 4],
        "one log line per epoch, across the resumption"
    );
    assert!(!dir.path().join("model.training").exists());
}

/// The last weights of a run kept with `keep_checkpoint`.
fn last_weights(out: &std::path::Path) -> std::collections::BTreeMap<String, tch::Tensor> {
    let work = out.with_file_name("model.training");
    ansel_torch::read_tensors(&work.join("checkpoint/last.safetensors")).unwrap()
}

fn largest_gap(
    a: &std::collections::BTreeMap<String, tch::Tensor>,
    b: &std::collections::BTreeMap<String, tch::Tensor>,
) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .map(|(name, t)| (t - &b[name]).abs().max().double_value(&[]))
        .fold(0.0, f64::max)
}

/// Trains `opts` until it is killed right after epoch 1's checkpoint, lets `damage` touch that
/// checkpoint's optimizer state, then resumes it (without vectors, as a user's resume would).
fn killed_after_epoch_1_then_resumed(
    mut opts: TrainOptions,
    data: &[Question],
    vectors: &WordVectors,
    damage: fn(&std::path::Path),
) -> TrainSummary {
    opts.interrupt_after = Some(1);
    assert!(train_with_vectors(&opts, Some(vectors), data, data).is_err());
    damage(
        &opts
            .out
            .with_file_name("model.training/checkpoint/optimizer.safetensors"),
    );
    opts.interrupt_after = None;
    opts.resume = true;
    train_with_vectors(&opts, None, data, data).unwrap()
}

#[test]
fn killed_after_an_epoch_and_resumed_trains_the_same_weights_as_an_uninterrupted_run() {
    let _serial = serial();
    let (data, vectors, dir, _) = toy_run();
    let setup = |name: &str| {
        let out = dir.path().join(name).join("model");
        let mut opts = birnn(&out);
        opts.epochs = 3;
        // Dropout on: the resumed epochs must draw the masks the uninterrupted run drew.
        opts.dropout = 0.3;
        opts.keep_checkpoint = true;
        opts
    };
    let full = setup("full");
    train_with_vectors(&full, Some(&vectors), &data, &data).unwrap();
    let straight = last_weights(&full.out);

    // Killed right after epoch 1's checkpoint, then resumed (without vectors).
    let resumed = |name: &str, damage: fn(&std::path::Path)| {
        let opts = setup(name);
        let summary = killed_after_epoch_1_then_resumed(opts.clone(), &data, &vectors, damage);
        assert_eq!(summary.epochs, 3);
        last_weights(&opts.out)
    };
    let gap = largest_gap(&straight, &resumed("cut", |_| {}));
    assert!(gap < 1e-6, "resumed run differs by {gap}");

    // The same resumption with Adam's moments reset to zero (what tch's nn::Adam did) does
    // not reproduce the run: the test would notice moments that are not restored.
    let reset = |path: &std::path::Path| {
        let zeros: Vec<(String, tch::Tensor)> = ansel_torch::read_tensors(path)
            .unwrap()
            .into_iter()
            .map(|(n, t)| (n, t.zeros_like()))
            .collect();
        ansel_torch::write_tensors(path, &zeros).unwrap();
    };
    let gap = largest_gap(&straight, &resumed("reset", reset));
    assert!(
        gap > 1e-4,
        "fresh moments should change the weights ({gap})"
    );
}

#[test]
fn a_work_directory_without_saved_moments_is_refused_by_name() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("model.training");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("state.json"), "{}").unwrap();
    let err = resume_error(&dir.path().join("model"));
    assert!(
        err.contains("state.json") && err.contains("moments"),
        "{err}"
    );
}

#[test]
fn the_recipe_of_a_saved_model_is_read_back_from_its_card() {
    // The committed WikiQA Cosinenet: list-wise + BiRNN, GloVe, hidden 200, seed 2.
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/cosinenet-wikiqa");
    let mut card = ModelCard::read(&dir).unwrap();
    let out = std::path::Path::new("fold-out");
    let opts = TrainOptions::from_card(&card, "train minus fold 1", "dev", out).unwrap();
    assert_eq!(opts.architecture, Architecture::Cosinenet);
    assert_eq!(opts.loss, Loss::Listwise);
    assert_eq!(opts.rnn, RnnKind::Birnn);
    assert_eq!(opts.vectors, ansel_vectors::VectorSource::Glove);
    assert_eq!(opts.hidden, Some(200));
    assert_eq!(opts.seed, 2);
    assert_eq!(opts.epochs, 5);
    assert_eq!(opts.lr, Some(0.002));
    assert_eq!(opts.batch_pairs, 50);
    assert_eq!(opts.extra_vocab, 10_000);
    assert_eq!(opts.patience, 3);
    assert_eq!(opts.limits.candidate_tokens, 60);
    assert_eq!(opts.train_path, "train minus fold 1");
    assert_eq!(opts.out, out);
    // A card without its training record, or of another family, has no recipe here.
    let training = card.training.take();
    let err = TrainOptions::from_card(&card, "t", "d", out).unwrap_err();
    assert!(err.to_string().contains("no `training` record"), "{err}");
    card.training = training;
    card.kind = "cross-encoder".into();
    assert!(TrainOptions::from_card(&card, "t", "d", out).is_err());
}

/// A vector-package folder `dir/models` whose `all-minilm-l6-v2` is a tiny random BERT (with
/// the `vocab.txt` the encoded sources take their common words from).
fn tiny_minilm_package(dir: &std::path::Path) -> std::path::PathBuf {
    let models = dir.join("models");
    let base = ansel_bert::testing::tiny_base(dir, 0.0);
    let encoder_dir = models.join("all-minilm-l6-v2");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::rename(&base, &encoder_dir).unwrap();
    std::fs::write(
        encoder_dir.join("vocab.txt"),
        ansel_bert::testing::TINY_WORDS.join("\n"),
    )
    .unwrap();
    models
}

/// `--vectors minilm-encoded` with a tiny random BERT standing in for all-MiniLM-L6-v2: the
/// model bundles, for every word of its vocabulary, the encoder's output for that word alone
/// (times one scale factor), and loads and scores with the encoder gone.
#[test]
fn encoded_vectors_are_bundled_and_the_model_loads_without_the_encoder() {
    let _serial = serial();
    let (data, _, dir, out) = toy_run();
    let models = tiny_minilm_package(dir.path());
    let encoder_dir = models.join("all-minilm-l6-v2");
    let mut opts = birnn(&out);
    opts.epochs = 3;
    opts.vectors = ansel_vectors::VectorSource::MinilmEncoded;
    opts.models_dir = models.clone();
    opts.extra_vocab = 2;
    opts.vector_cache = Some(dir.path().join("cache"));
    ansel_efficient::train(&opts, &data, &data).unwrap();
    let card = ModelCard::read(&out).unwrap();
    assert_eq!(card.config["vectors"], "minilm-encoded");
    assert_eq!(card.config["embedding_dim"], 16);
    assert!(dir
        .path()
        .join("cache/minilm-encoded/vectors.f32")
        .is_file());

    // The bundled rows: <pad>, <unk>, then every word of the data and the 2 common words (the
    // first whole words of vocab.txt), each the encoder's unit vector times one factor.
    let vocab: Vec<String> = std::fs::read_to_string(out.join("vocab.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let weights = ansel_torch::read_tensors(&out.join("weights.safetensors")).unwrap();
    let (_, table) = weights
        .iter()
        .find(|(name, _)| name.starts_with("embedding"))
        .expect("bundled embedding rows");
    assert_eq!(table.size(), [vocab.len() as i64, 16]);
    let words: Vec<String> = vocab[2..].to_vec();
    let encoder = ansel_bert::WordEncoder::load(&encoder_dir).unwrap();
    let (encoded, _) = ansel_vectors::encoded::encoded_vectors(&encoder, &words, None).unwrap();
    let mut factor = None;
    for (i, word) in vocab.iter().enumerate().skip(2) {
        let row = Vec::<f32>::try_from(table.get(i as i64)).unwrap();
        let expected = encoded.get(word).unwrap();
        let f = *factor.get_or_insert(row[0] / expected[0]);
        assert!(f > 0.0);
        for (a, b) in row.iter().zip(expected.iter()) {
            assert!((a - f * b).abs() < 1e-4, "{word}: {a} vs {f} x {b}");
        }
    }
    assert!(vocab.iter().any(|w| w == "hamlet") && vocab.iter().any(|w| w == "paris"));

    // No encoder, no cache: the model still loads and scores as before.
    let ranker = EfficientRanker::load(&out, &card).unwrap();
    let before = ranker.score_all(&data).unwrap();
    std::fs::remove_dir_all(&models).unwrap();
    std::fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let again = EfficientRanker::load(&out, &ModelCard::read(&out).unwrap()).unwrap();
    assert_eq!(again.score_all(&data).unwrap(), before);
}

#[test]
fn pca_reduced_vectors_are_recorded_in_the_card_and_read_back() {
    let _serial = serial();
    let (data, _, dir, out) = toy_run();
    let models = tiny_minilm_package(dir.path());
    let mut opts = options(Architecture::Cosinenet, Loss::Listwise, RnnKind::None, &out);
    opts.epochs = 1;
    opts.vectors = ansel_vectors::VectorSource::MinilmEncoded;
    opts.models_dir = models;
    opts.vector_dim = Some(5);
    opts.vector_cache = None;
    ansel_efficient::train(&opts, &data, &data).unwrap();
    let card = ModelCard::read(&out).unwrap();
    assert_eq!(card.config["embedding_dim"], 5);
    let recipe = TrainOptions::from_card(&card, "t", "d", &out).unwrap();
    assert_eq!(recipe.vector_dim, Some(5));
    assert_eq!(recipe.vectors, ansel_vectors::VectorSource::MinilmEncoded);
    let ranker = EfficientRanker::load(&out, &card).unwrap();
    assert_eq!(ranker.score_all(&data).unwrap().len(), data.len());
    // Split relatedness needs the GloVe part to split off.
    opts.split_relatedness = true;
    let err = ansel_efficient::train(&opts, &data, &data)
        .unwrap_err()
        .to_string();
    assert!(err.contains("glove+minilm-encoded"), "{err}");
}

#[test]
fn a_model_trained_with_a_teacher_records_it_and_scores_without_it() {
    let _serial = serial();
    let (data, vectors, _dir, out) = toy_run();
    // The teacher knows the answers; an extra teacher-only question, too.
    let scores = |qs: &[Question]| -> Vec<Vec<f32>> {
        qs.iter()
            .map(|q| {
                q.candidates
                    .iter()
                    .map(|c| if c.label == Some(true) { 4.0 } else { -4.0 })
                    .collect()
            })
            .collect()
    };
    let extra = vec![question(
        "x",
        "who painted the mona lisa",
        &[
            ("it hangs in paris", false),
            ("leonardo painted the mona lisa", true),
        ],
    )];
    let distillation = ansel_efficient::Distillation {
        teacher: "oracle".into(),
        weight: 0.5,
        temperature: 2.0,
        caches: vec!["0123456789abcdef".into()],
        unanswered: false,
        extra_train: vec!["extra.tsv".into()],
        scores_files: Vec::new(),
    };
    let teacher = ansel_efficient::Teacher {
        distillation: distillation.clone(),
        train_scores: scores(&data),
        extra: extra.iter().cloned().zip(scores(&extra)).collect(),
    };
    let mut opts = birnn(&out);
    opts.teacher = Some(std::sync::Arc::new(teacher.clone()));
    let summary = train_with_vectors(&opts, Some(&vectors), &data, &data).unwrap();
    assert_eq!(summary.dev_map, 1.0);
    let card = ModelCard::read(&out).unwrap();
    let training = card.training.as_ref().unwrap();
    let recorded: ansel_efficient::Distillation =
        serde_json::from_value(training.hyperparameters["distillation"].clone()).unwrap();
    assert_eq!(recorded, distillation);
    assert_eq!(training.train_data, vec!["toy", "extra.tsv"]);
    let cpu = training.metrics["train cpu seconds"];
    assert!(cpu > 0.0 && cpu.is_finite(), "{cpu}");
    // Loading needs nothing of the teacher.
    let ranker = EfficientRanker::load(&out, &card).unwrap();
    assert_eq!(map(&ranker, &data), 1.0);

    // Teacher scores that do not fit the training data are refused, naming the question.
    let mut bad = teacher;
    bad.train_scores[1].pop();
    opts.teacher = Some(std::sync::Arc::new(bad));
    let err = train_with_vectors(&opts, Some(&vectors), &data, &data)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"2\"") && err.contains("3 teacher scores"),
        "{err}"
    );
}

/// The saved weights of a model directory.
fn saved_weights(out: &std::path::Path) -> std::collections::BTreeMap<String, tch::Tensor> {
    ansel_torch::read_tensors(&out.join("weights.safetensors")).unwrap()
}

#[test]
fn weight_averaging_that_averages_nothing_saves_the_plain_runs_weights_and_is_recorded() {
    let _serial = serial();
    let (data, vectors, dir, _) = toy_run();
    let run = |name: &str, averaging: ansel_efficient::Averaging| {
        let out = dir.path().join(name).join("model");
        let mut opts = birnn(&out);
        opts.epochs = 3;
        opts.dropout = 0.3;
        opts.averaging = averaging;
        train_with_vectors(&opts, Some(&vectors), &data, &data).unwrap();
        out
    };
    let plain = saved_weights(&run("plain", ansel_efficient::Averaging::None));
    // EMA with decay 0 is the last weights, the mean of the last 1 epoch its end weights:
    // both must leave training and the saved best epoch exactly as without averaging.
    for (name, averaging) in [
        ("ema0", ansel_efficient::Averaging::Ema { decay: 0.0 }),
        ("last1", ansel_efficient::Averaging::Epochs { last: 1 }),
    ] {
        let out = run(name, averaging);
        let gap = largest_gap(&plain, &saved_weights(&out));
        assert!(gap < 1e-6, "{name} differs by {gap}");
        let card = ModelCard::read(&out).unwrap();
        let recorded: ansel_efficient::Averaging = serde_json::from_value(
            card.training.as_ref().unwrap().hyperparameters["averaging"].clone(),
        )
        .unwrap();
        assert_eq!(recorded, averaging);
        let recipe = TrainOptions::from_card(&card, "toy", "toy", &out).unwrap();
        assert_eq!(recipe.averaging, averaging);
    }
    // A real average saves other weights than the plain run.
    let out = run("ema", ansel_efficient::Averaging::Ema { decay: 0.9 });
    assert!(largest_gap(&plain, &saved_weights(&out)) > 1e-4);
    EfficientRanker::load(&out, &ModelCard::read(&out).unwrap()).unwrap();
}

#[test]
fn an_averaged_run_killed_and_resumed_saves_what_an_uninterrupted_one_saves() {
    let _serial = serial();
    let (data, vectors, dir, _) = toy_run();
    for averaging in [
        ansel_efficient::Averaging::Ema { decay: 0.8 },
        ansel_efficient::Averaging::Epochs { last: 2 },
    ] {
        let setup = |name: &str| {
            let out = dir
                .path()
                .join(format!("{name}-{averaging:?}"))
                .join("model");
            let mut opts = birnn(&out);
            opts.epochs = 3;
            opts.patience = 3;
            opts.averaging = averaging;
            opts
        };
        let full = setup("full");
        train_with_vectors(&full, Some(&vectors), &data, &data).unwrap();
        let cut = setup("cut");
        killed_after_epoch_1_then_resumed(cut.clone(), &data, &vectors, |_| {});
        let gap = largest_gap(&saved_weights(&full.out), &saved_weights(&cut.out));
        assert!(gap < 1e-6, "{averaging:?}: resumed run differs by {gap}");
    }
}

#[test]
fn init_starts_from_exactly_the_saved_weights_and_a_bad_folder_is_named() {
    let _serial = serial();
    let (data, vectors, dir, first) = toy_run();
    let mut opts = birnn(&first);
    opts.epochs = 2;
    train_with_vectors(&opts, Some(&vectors), &data, &data).unwrap();
    // Zero epochs after --init: the saved model is the initial weights, which must be the
    // first model's (every trainable weight; the embedding table is rebuilt from the vectors).
    let second = dir.path().join("second");
    let mut adapt = birnn(&second);
    adapt.init = Some(first.clone());
    adapt.epochs = 1;
    adapt.lr = Some(0.0);
    adapt.keep_checkpoint = true;
    train_with_vectors(&adapt, Some(&vectors), &data, &data).unwrap();
    let gap = largest_gap(&saved_weights(&first), &saved_weights(&second));
    assert!(gap < 1e-7, "--init weights differ by {gap}");
    let card = ModelCard::read(&second).unwrap();
    assert_eq!(
        card.training.as_ref().unwrap().hyperparameters["init"],
        first.display().to_string()
    );
    // Without --init the same zero-lr run keeps fresh weights: the check above can fail.
    adapt.init = None;
    train_with_vectors(&adapt, Some(&vectors), &data, &data).unwrap();
    assert!(largest_gap(&saved_weights(&first), &saved_weights(&second)) > 1e-3);

    // A folder without a model names the card it looked for.
    adapt.init = Some(dir.path().join("nothing"));
    let err = train_with_vectors(&adapt, Some(&vectors), &data, &data)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nothing") && err.contains("model.json"),
        "{err}"
    );
    // Other sizes: the tensor and the file are named.
    adapt.init = Some(first.clone());
    adapt.hidden = Some(8);
    let err = train_with_vectors(&adapt, Some(&vectors), &data, &data)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("weights.safetensors") && err.contains("shape"),
        "{err}"
    );
    // Another architecture is refused by name.
    let mut other = options(Architecture::Relcnn, Loss::Listwise, RnnKind::None, &second);
    other.init = Some(first);
    let err = train_with_vectors(&other, Some(&vectors), &data, &data)
        .unwrap_err()
        .to_string();
    assert!(err.contains("relcnn") || err.contains("cosinenet"), "{err}");
}

/// The bundled embedding rows of a saved model, by word.
fn bundled_rows(out: &std::path::Path) -> std::collections::HashMap<String, Vec<f32>> {
    let vocab = std::fs::read_to_string(out.join("vocab.txt")).unwrap();
    let weights = ansel_torch::read_tensors(&out.join("weights.safetensors")).unwrap();
    let (_, table) = weights
        .iter()
        .find(|(name, _)| name.starts_with("embedding"))
        .expect("bundled embedding rows");
    vocab
        .lines()
        .enumerate()
        .map(|(i, w)| (w.to_string(), Vec::try_from(table.get(i as i64)).unwrap()))
        .collect()
}

/// `--retrofit`: the two words the lexicon links are bundled closer together than without it,
/// every other row is unchanged, and the card records the lexicon so the recipe reads it back.
#[test]
fn a_retrofitted_model_bundles_moved_rows_and_records_its_lexicon() {
    let _serial = serial();
    let (data, _, dir, out) = toy_run();
    let models = tiny_minilm_package(dir.path());
    let lexicon = dir.path().join("lexicon.txt");
    std::fs::write(&lexicon, "hamlet paris\nparis hamlet\n").unwrap();
    let mut opts = options(Architecture::Cosinenet, Loss::Listwise, RnnKind::None, &out);
    opts.epochs = 1;
    opts.vectors = ansel_vectors::VectorSource::MinilmEncoded;
    opts.models_dir = models;
    opts.vector_cache = None;
    ansel_efficient::train(&opts, &data, &data).unwrap();
    let plain = bundled_rows(&out);
    opts.retrofit = Some(std::sync::Arc::new(
        ansel_vectors::retrofit::Lexicon::read(&lexicon).unwrap(),
    ));
    ansel_efficient::train(&opts, &data, &data).unwrap();
    let retrofitted = bundled_rows(&out);

    let gap = |rows: &std::collections::HashMap<String, Vec<f32>>| {
        let (a, b) = (&rows["hamlet"], &rows["paris"]);
        a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f32>()
    };
    assert!(gap(&retrofitted) < gap(&plain) / 2.0);
    for (word, row) in &plain {
        if word != "hamlet" && word != "paris" {
            assert_eq!(&retrofitted[word], row, "{word} is not in the lexicon");
        }
    }
    let card = ModelCard::read(&out).unwrap();
    let record = &card.training.as_ref().unwrap().hyperparameters["retrofit"];
    assert_eq!(record["lexicon"], lexicon.display().to_string());
    assert_eq!(record["words"], 2);
    assert_eq!(record["iterations"], 10);
    let recipe = TrainOptions::from_card(&card, "t", "d", &out).unwrap();
    assert_eq!(recipe.retrofit.unwrap().path(), lexicon);
    std::fs::remove_file(&lexicon).unwrap();
    let err = TrainOptions::from_card(&card, "t", "d", &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("retrofit.lexicon") && err.contains("lexicon.txt"),
        "{err}"
    );
}
