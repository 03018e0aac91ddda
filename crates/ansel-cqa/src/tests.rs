use super::*;
use crate::net::{CScore, Inputs, NetConfig};

fn config(inputs: Inputs, heads: [bool; 3]) -> NetConfig {
    NetConfig {
        inputs,
        share_questions: false,
        heads,
        word_dim: 4,
        feature_dim: 2,
        filters: 6,
        width: 3,
        hidden: 5,
        input_dropout: 0.0,
        hidden_dropout: 0.0,
        c_score: CScore::Head,
    }
}

fn toy() -> (Vocabulary, Vec<f32>, Vec<Triple>) {
    let words: Vec<String> = ["<pad>", "<unk>", "visa", "salary", "beach", "rent", "car"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    ansel_torch::tch::manual_seed(3);
    let rows = Vec::<f32>::try_from(ansel_torch::tch::Tensor::randn(
        [7 * 4],
        (ansel_torch::tch::Kind::Float, Device::Cpu),
    ))
    .unwrap();
    // Task C: the comment answers when it shares the new question's topic word.
    let topics = ["visa", "salary", "beach", "rent", "car"];
    let mut triples = Vec::new();
    for (i, q) in topics.iter().enumerate() {
        for (j, c) in topics.iter().enumerate() {
            triples.push(Triple {
                q_new: format!("{q} question"),
                q_rel: format!("{} question", topics[(i + 1) % 5]),
                comment: format!("about {c}"),
                thread: j,
                position: 0,
                labels: [None, Some(i % 2 == 0), Some(i == j)],
            });
        }
    }
    (Vocabulary::from_words(words), rows, triples)
}

#[test]
fn each_variant_learns_the_toy_task_and_unbuilt_heads_cost_nothing() {
    let (vocab, rows, triples) = toy();
    for (inputs, heads) in [
        (Inputs::Pair, [false, false, true]),
        (Inputs::Triplet, [false, false, true]),
        (Inputs::Triplet, [true, true, true]),
    ] {
        ansel_torch::tch::manual_seed(1);
        let vs = nn::VarStore::new(Device::Cpu);
        let net = CqaNet::new(&vs.root(), config(inputs, heads), &rows);
        let params = ansel_torch::trainable(&vs);
        let mut opt = ansel_torch::RmsProp::new(&params);
        let refs: Vec<&Triple> = triples.iter().collect();
        let batch = Batch::new(&refs, &vocab, inputs);
        let loss_of = || {
            net.loss(&net.forward(&batch, false), &batch)
                .double_value(&[])
        };
        let first = loss_of();
        for _ in 0..150 {
            let loss = net.loss(&net.forward(&batch, true), &batch);
            ansel_torch::zero_gradients(&params);
            loss.backward();
            opt.step(&params, 1e-2);
        }
        let last = loss_of();
        assert!(
            last < first * 0.5,
            "{inputs:?} {heads:?}: {first} -> {last}"
        );
        let loaded = Loaded {
            vs,
            net,
            vocab: vocab.clone(),
        };
        let scores = loaded.score_triples(&triples);
        for i in 0..5 {
            let row = &scores[i * 5..i * 5 + 5];
            let best = (0..5).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
            assert_eq!(best, i, "{inputs:?} {heads:?}: {row:?}");
        }
        if heads == [false, false, true] {
            // Task B labels are there but no B head: the loss is task C's alone.
            let c_only = loaded.net.loss(&loaded.net.forward(&batch, false), &batch);
            let logits = loaded.net.forward(&batch, false);
            let expect = logits
                .select(1, 2)
                .binary_cross_entropy_with_logits::<ansel_torch::tch::Tensor>(
                    &batch.labels.select(1, 2),
                    None,
                    None,
                    ansel_torch::tch::Reduction::Mean,
                );
            assert!((c_only.double_value(&[]) - expect.double_value(&[])).abs() < 1e-5);
        }
    }
}

#[test]
fn a_missing_label_adds_no_loss() {
    let (vocab, rows, mut triples) = toy();
    ansel_torch::tch::manual_seed(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let net = CqaNet::new(
        &vs.root(),
        config(Inputs::Triplet, [true, true, true]),
        &rows,
    );
    let loss = |t: &[Triple]| {
        let refs: Vec<&Triple> = t.iter().collect();
        let b = Batch::new(&refs, &vocab, Inputs::Triplet);
        net.loss(&net.forward(&b, false), &b).double_value(&[])
    };
    let before = loss(&triples);
    // Task A has no label anywhere: flipping what a missing label would be changes nothing.
    for t in &mut triples {
        t.labels[0] = None;
    }
    assert!((loss(&triples) - before).abs() < 1e-6);
}

#[test]
fn overlap_marks_shared_words_and_the_pair_model_ignores_q_rel() {
    let (vocab, _, _) = toy();
    let t = Triple {
        q_new: "visa rent".into(),
        q_rel: "car".into(),
        comment: "car visa".into(),
        thread: 12,
        position: 1,
        labels: [None, None, Some(true)],
    };
    let marks = |inputs| {
        let b = Batch::new(&[&t], &vocab, inputs);
        Vec::<i64>::try_from(b.overlap[2].flatten(0, -1)).unwrap()
    };
    assert_eq!(
        marks(Inputs::Triplet),
        [2, 2],
        "car in q_rel, visa in q_new"
    );
    assert_eq!(
        marks(Inputs::Pair),
        [1, 2],
        "q_rel unread by the pair model"
    );
    let b = Batch::new(&[&t], &vocab, Inputs::Pair);
    assert_eq!(
        Vec::<i64>::try_from(b.ranks.flatten(0, -1)).unwrap(),
        [9, 1],
        "clamped"
    );
}

#[test]
fn a_saved_model_loads_and_scores_a_task_c_list_as_trained() {
    let (vocab, rows, _) = toy();
    let dir = tempfile::tempdir().unwrap();
    ansel_torch::tch::manual_seed(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = config(Inputs::Triplet, [true, true, true]);
    let net = CqaNet::new(&vs.root(), cfg.clone(), &rows);
    let loaded = Loaded { vs, net, vocab };
    ansel_torch::save_vars(&loaded.vs, &dir.path().join(WEIGHTS_FILE)).unwrap();
    loaded.vocab.write(dir.path()).unwrap();
    let card = ModelCard::new(KIND, "toy", serde_json::to_value(&cfg).unwrap());
    let ranker = CqaRanker::load(dir.path(), &card).unwrap();
    let candidate = |id: &str, rel: &str, text: &str| ansel_data::Candidate {
        id: id.into(),
        text: text.into(),
        label: None,
        context: Some(ansel_data::DocContext {
            doc_id: "Q1".into(),
            title: Some(rel.into()),
            position: 0,
            prev: None,
            next: None,
        }),
    };
    let question = Question {
        id: "Q1".into(),
        text: "visa question".into(),
        candidates: vec![
            candidate("c1", "rent", "about visa"),
            candidate("c2", "rent", "about car"),
            candidate("c3", "car", "beach"),
        ],
    };
    let scores = ranker.score(&question).unwrap();
    let triples = data::question_triples(&question, None);
    assert_eq!(scores, loaded.score_triples(&triples));
    assert_eq!(scores.len(), 3);
    let broken = ModelCard::new(KIND, "toy", serde_json::json!({"inputs": 3}));
    let err = CqaRanker::load(dir.path(), &broken)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("model.json") && err.contains("config"),
        "{err}"
    );
}

#[test]
fn c_score_rules_read_the_heads_as_documented() {
    let logits =
        ansel_torch::tch::Tensor::from_slice(&[0.0f32, 2.0, -1.0, 1.0, -3.0, 0.5]).view([2, 3]);
    let sig = |x: f32| 1.0 / (1.0 + (-x).exp());
    let got = |rule: CScore| Vec::<f32>::try_from(rule.apply(&logits)).unwrap();
    assert_eq!(got(CScore::Head), [-1.0, 0.5]);
    let chain = [sig(0.0) * sig(2.0), sig(1.0) * sig(-3.0)];
    for (g, e) in got(CScore::Chain).iter().zip(chain) {
        assert!((g - e).abs() < 1e-6);
    }
    for ((g, c), e) in got(CScore::Both)
        .iter()
        .zip(chain)
        .zip([sig(-1.0), sig(0.5)])
    {
        assert!((g - c - e).abs() < 1e-6);
    }
    assert_eq!(CScore::available([false, false, true]), [CScore::Head]);
    assert_eq!(CScore::available([true, true, true]).len(), 3);
}

#[test]
fn a_model_scores_by_the_rule_its_card_names() {
    let (vocab, rows, triples) = toy();
    ansel_torch::tch::manual_seed(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let mut cfg = config(Inputs::Triplet, [true, true, true]);
    cfg.c_score = CScore::Chain;
    let net = CqaNet::new(&vs.root(), cfg.clone(), &rows);
    let loaded = Loaded { vs, net, vocab };
    let refs: Vec<&Triple> = triples.iter().collect();
    let batch = Batch::new(&refs, &loaded.vocab, Inputs::Triplet);
    let logits = loaded.net.forward(&batch, false);
    let expect =
        Vec::<f32>::try_from(logits.sigmoid().select(1, 0) * logits.sigmoid().select(1, 1))
            .unwrap();
    let got = loaded.score_triples(&triples);
    assert_eq!(got.len(), expect.len());
    for (g, e) in got.iter().zip(&expect) {
        assert!((g - e).abs() < 1e-6, "{g} {e}");
    }
    assert_ne!(got, loaded.score_triples_by(&triples, CScore::Head));
    // A card written before the rule existed reads as the C head.
    let mut old = serde_json::to_value(&cfg).unwrap();
    old.as_object_mut().unwrap().remove("c_score");
    let read: NetConfig = serde_json::from_value(old).unwrap();
    assert_eq!(read.c_score, CScore::Head);
}

const MINI: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../ansel-data/tests/fixtures/semeval-mini.xml"
);

/// `cqa-train --train MINI --out o` and `extra`, parsed.
fn train_args(extra: &[&str]) -> std::result::Result<crate::train::TrainArgs, clap::Error> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: crate::train::TrainArgs,
    }
    let base = ["x", "--train", MINI, "--out", "o"];
    <Cli as clap::Parser>::try_parse_from(base.iter().chain(extra)).map(|c| c.args)
}

#[test]
fn an_aux_only_file_trains_the_auxiliary_heads_and_is_never_tuned_on() {
    let fixture = MINI;
    let read = |extra: &[&str]| {
        let args = train_args(&[&["--tune-fraction", "0.5"], extra].concat()).unwrap();
        crate::train::read_data(&args)
    };
    let plain = read(&[]).unwrap();
    assert!(!plain.tune.is_empty());
    // Each file's share of task C comments marked Good, counted over the whole file.
    let file = &plain.counts["files"][0];
    assert_eq!(file["role"], "train");
    let (good, all) = (
        file["task_c_good"].as_u64().unwrap(),
        file["task_c_comments"].as_u64().unwrap(),
    );
    assert!(0 < good && good < all, "{file}");
    let share = file["task_c_good_share"].as_f64().unwrap();
    assert!((share - good as f64 / all as f64).abs() < 1e-12);
    assert!(plain.train.iter().any(|t| t.labels[2].is_some()));
    let aux = read(&["--aux-only", fixture]).unwrap();
    assert!(aux.tune.is_empty());
    assert_eq!(aux.counts["files"][0]["role"], "aux-only");
    assert_eq!(aux.counts["files"][0]["task_c_good"], file["task_c_good"]);
    let excluded = read(&["--exclude", fixture]).unwrap();
    assert_eq!(excluded.counts["files"][0]["role"], "exclude");
    assert!(!aux.train.is_empty());
    assert!(aux.train.iter().all(|t| t.labels[2].is_none()));
    assert!(aux
        .train
        .iter()
        .all(|t| t.labels[0].is_some() || t.labels[1].is_some()));
    // With task C alone nothing is left to learn from the file.
    let c_only = read(&["--aux-only", fixture, "--tasks", "c"]).unwrap();
    assert!(c_only.train.is_empty());
    let err = read(&["--aux-only", "/elsewhere.xml"]).err().unwrap();
    assert!(
        err.to_string().contains("not one of the --train files"),
        "{err}"
    );
}

#[test]
fn the_tune_folds_of_a_seed_hold_out_every_training_question_once() {
    let parse = train_args;
    let tuned = |fold: &str| {
        let data = crate::train::read_data(&parse(&["--tune-fold", fold]).unwrap()).unwrap();
        let ids: Vec<String> = data.tune.iter().map(|(q, _)| q.id.clone()).collect();
        // A held-out question's comments are not trained on.
        for (q, _) in &data.tune {
            assert!(
                data.train.iter().all(|t| t.q_new != q.text),
                "{fold}: {}",
                q.id
            );
        }
        ids
    };
    let (first, second) = (tuned("1/2"), tuned("2/2"));
    assert!(!first.is_empty() && !second.is_empty());
    assert!(first.iter().all(|id| !second.contains(id)));
    let all = crate::train::read_data(&parse(&["--tune-fraction", "0"]).unwrap()).unwrap();
    let mut every: Vec<String> = all.train.iter().map(|t| t.q_new.clone()).collect();
    every.dedup();
    assert_eq!(first.len() + second.len(), every.len());
    let err = parse(&["--tune-fold", "1/2", "--tune-fraction", "0.5"])
        .err()
        .unwrap();
    assert!(err.to_string().contains("cannot be used with"), "{err}");
    let err = parse(&["--tune-fold", "3/2"]).err().unwrap();
    assert!(err.to_string().contains("I/K expected"), "{err}");
}
