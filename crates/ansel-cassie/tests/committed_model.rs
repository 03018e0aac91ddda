//! CASSIE on the committed cross-encoder `models/minilm-l6-wikiqa` (frozen): the features
//! reproduce the base model's own scores, words map back to the text, and a trained head
//! saves, loads and explains itself.

use ansel_cassie::{
    fit, CassieRanker, CassieSettings, FitOptions, HeadConfig, OtOptions, PairEncoder, Prepared,
    SplitFeatures, WordMass, HEAD_FILE,
};
use ansel_data::{Candidate, DocContext, Question};
use ansel_model::{ModelCard, Ranker};
use std::path::PathBuf;

fn base() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/minilm-l6-wikiqa")
}

fn question(id: &str, text: &str, sentences: &[(&str, bool)]) -> Question {
    let candidates: Vec<Candidate> = sentences
        .iter()
        .enumerate()
        .map(|(i, (s, label))| Candidate {
            id: format!("{id}-{i}"),
            text: s.to_string(),
            label: Some(*label),
            context: Some(DocContext {
                doc_id: format!("D{id}"),
                position: i,
                prev: i.checked_sub(1).map(|p| sentences[p].0.to_string()),
                next: sentences.get(i + 1).map(|n| n.0.to_string()),
                ..Default::default()
            }),
        })
        .collect();
    Question {
        id: id.into(),
        text: text.into(),
        candidates,
    }
}

fn data() -> Vec<Question> {
    vec![
        question(
            "q1",
            "Who invented the Fresnel lens?",
            &[
                ("Lighthouses guide ships at night.", false),
                (
                    "In 1822 Augustin Fresnel invented a lens made of concentric rings of glass.",
                    true,
                ),
                ("The lens focuses light into a strong beam.", false),
            ],
        ),
        question(
            "q2",
            "Why is octopus blood blue?",
            &[
                ("Octopuses have three hearts.", false),
                (
                    "Their blood uses hemocyanin, a copper-rich protein, which makes it blue.",
                    true,
                ),
            ],
        ),
        question(
            "q3",
            "How tall is Mount Everest?",
            &[
                (
                    "Mount Everest is Earth's highest mountain above sea level.",
                    false,
                ),
                ("Its elevation of 8,848.86 m was established in 2020.", true),
                (
                    "It lies in the Mahalangur Himal sub-range of the Himalayas.",
                    false,
                ),
            ],
        ),
    ]
}

#[test]
fn features_reproduce_the_base_scores_and_map_words_back() {
    ansel_torch::init(1, 0);
    let qs = data();
    let encoder = PairEncoder::load(&base(), 128).unwrap();
    let split = SplitFeatures::build(&encoder, qs.clone(), None, "test", "test").unwrap();
    let card = ModelCard::read(&base()).unwrap();
    let reference = ansel_bert::CrossEncoderRanker::load(&base(), &card).unwrap();
    let logits = split.pairs.logits.values();
    for (k, q) in qs.iter().enumerate() {
        let expected = reference.score(q).unwrap();
        for (c, want) in expected.iter().enumerate() {
            let p = split.node(k, c, 0).unwrap();
            assert!(
                (logits[p] - want).abs() < 1e-3,
                "{} candidate {c}: {} vs {want}",
                q.id,
                logits[p]
            );
        }
    }
    // Question 1, candidate 1: content words only, stop words and punctuation gone.
    let p = split.node(0, 1, 0).unwrap();
    assert_eq!(split.pairs.q_words[p], vec!["invented", "fresnel", "lens"]);
    assert!(split.pairs.s_words[p].contains(&"1822".to_string()));
    assert!(split.pairs.s_words[p].contains(&"concentric".to_string()));
    assert!(!split.pairs.s_words[p]
        .iter()
        .any(|w| w == "of" || w == "a" || w == "."));
    // Neighbours are the adjacent candidates; the first sentence has a padding "previous".
    assert_eq!(split.node(0, 1, 1), split.node(0, 0, 0));
    assert_eq!(split.node(0, 1, 2), split.node(0, 2, 0));
    assert_eq!(split.node(0, 0, 1), None);
    // One word vector per word, of the encoder's width.
    let (a, b) = (split.pairs.s_off[p], split.pairs.s_off[p + 1]);
    assert_eq!(b - a, split.pairs.s_words[p].len());
    assert_eq!(split.pairs.s(p).size(), vec![(b - a) as i64, 384]);
}

#[test]
fn a_trained_head_saves_loads_scores_and_explains() {
    ansel_torch::init(1, 0);
    let qs = data();
    let encoder = PairEncoder::load(&base(), 128).unwrap();
    let mass = WordMass::count(encoder.tokenizer(), &qs).unwrap();
    assert_eq!(mass.df.get("lens"), Some(&1));
    assert_eq!(mass.df.get("the"), None, "stop words carry no mass");
    let ot = OtOptions::default();
    let split = SplitFeatures::build(&encoder, qs.clone(), None, "test", "test").unwrap();
    let prepared = Prepared::new(&split, &mass, &ot);
    let config = HeadConfig::full(384);
    let opts = FitOptions {
        epochs: 3,
        ..FitOptions::default()
    };
    let fitted = fit(config.clone(), &prepared, &prepared, &opts, &mut |_| Ok(())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cassie");
    std::fs::create_dir_all(&out).unwrap();
    ansel_torch::save_vars(&fitted.vs, &out.join(HEAD_FILE)).unwrap();
    mass.write(&out.join(WordMass::FILE)).unwrap();
    let settings = CassieSettings {
        base: base().display().to_string(),
        max_len: 128,
        head: config,
        ot,
    };
    let card = ModelCard::new(
        ansel_cassie::KIND,
        "t",
        serde_json::to_value(&settings).unwrap(),
    );
    card.write(&out).unwrap();
    let ranker = CassieRanker::load(&out, &ModelCard::read(&out).unwrap()).unwrap();
    let live = ranker.score_all(&qs).unwrap();
    let cached = prepared.score(&fitted.head);
    for (a, b) in live.iter().flatten().zip(cached.iter().flatten()) {
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
    }
    let explained = ranker.explain(&qs[0], 2).unwrap();
    assert_eq!(explained.len(), 2);
    assert!(explained[0].score >= explained[1].score);
    let cand = &explained[0].sentences[0];
    assert_eq!(cand.role, "candidate");
    let questions_words: Vec<&str> = cand.links.iter().map(|(q, _, _)| q.as_str()).collect();
    assert_eq!(questions_words, vec!["invented", "fresnel", "lens"]);
    for (_, w, share) in &cand.links {
        assert!(
            cand.text.to_lowercase().contains(w.as_str()),
            "{w} not in {}",
            cand.text
        );
        assert!((0.0..=1.0).contains(share));
    }
    // The correct answer's "fresnel" goes to its own "fresnel".
    let answer = ranker.explain(&qs[0], 3).unwrap();
    let right = answer.iter().find(|e| e.candidate == 1).unwrap();
    let fresnel = right.sentences[0]
        .links
        .iter()
        .find(|(q, _, _)| q == "fresnel")
        .unwrap();
    assert_eq!(fresnel.1, "fresnel");
}

#[test]
fn a_missing_base_encoder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let settings = CassieSettings {
        base: "../nowhere".into(),
        max_len: 128,
        head: HeadConfig::full(384),
        ot: OtOptions::default(),
    };
    let card = ModelCard::new(
        ansel_cassie::KIND,
        "t",
        serde_json::to_value(&settings).unwrap(),
    );
    let err = CassieRanker::load(dir.path(), &card)
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.contains("config.base") && err.contains("nowhere"),
        "{err}"
    );
}
