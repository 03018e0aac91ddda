//! The ONNX graph against the tch model it was converted from: scores, ranking, errors.

use ansel_bert::testing::{serial, tiny_base, tiny_mpnet_base, tiny_roberta_base};
use ansel_bert::CrossEncoderRanker;
use ansel_data::{Candidate, Question};
use ansel_model::{ModelCard, Ranker};
use ansel_onnx::{convert, fp32_source, OnnxRanker, Precision, KIND};
use std::path::{Path, PathBuf};

/// A tiny random cross-encoder directory as `ansel train` writes one (weights + card).
fn tiny_cross_encoder(dir: &Path) -> PathBuf {
    spread(tiny_base(dir, 0.0))
}

fn spread(base: PathBuf) -> PathBuf {
    ansel_bert::testing::spread_weights(&base);
    let card = ModelCard::new(
        ansel_bert::KIND,
        "tiny",
        serde_json::json!({"input": "pair", "max_len": 32, "batch_size": 2}),
    );
    card.write(&base).unwrap();
    base
}

fn question() -> Question {
    let texts = [
        "it was written by william shakespeare .",
        "hamlet is a tragedy .",
        "the play is set in denmark .",
        "shakespeare wrote a play .",
        "who ?",
    ];
    Question {
        id: "q".into(),
        text: "who wrote hamlet ?".into(),
        candidates: texts
            .iter()
            .enumerate()
            .map(|(i, t)| Candidate {
                id: format!("c{i}"),
                text: t.to_string(),
                label: Some(i == 0),
                context: None,
            })
            .collect(),
    }
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn ranking(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

fn load_onnx(dir: &Path) -> OnnxRanker {
    let card = ModelCard::read(dir).unwrap();
    assert_eq!(card.kind, KIND);
    OnnxRanker::load(dir, &card).unwrap()
}

#[test]
fn fp32_and_int8_graphs_score_like_the_tch_model() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_cross_encoder(tmp.path());
    let card = ModelCard::read(&src).unwrap();
    let reference = CrossEncoderRanker::load(&src, &card)
        .unwrap()
        .score(&question())
        .unwrap();
    // The random tiny model's logits are spread enough for an order to mean something.
    let spread = reference.iter().cloned().fold(f32::MIN, f32::max)
        - reference.iter().cloned().fold(f32::MAX, f32::min);
    assert!(spread > 0.1, "logits {reference:?}");

    std::fs::write(src.join("train-log.jsonl"), "{\"step\":1}\n").unwrap();
    let fp32_dir = tmp.path().join("fp32");
    let card = convert(&src, &fp32_dir, Precision::Fp32, "tiny-fp32").unwrap();
    assert_eq!(
        std::fs::read_to_string(fp32_dir.join("train-log.jsonl")).unwrap(),
        "{\"step\":1}\n",
        "the training log travels with the weights"
    );
    assert_eq!(card.config["precision"], "fp32");
    assert_eq!(card.config["source_name"], "tiny");
    let fp32 = load_onnx(&fp32_dir).score(&question()).unwrap();
    let d = max_abs_diff(&fp32, &reference);
    assert!(
        d < 1e-4,
        "fp32 graph vs tch: max abs diff {d}: {fp32:?} vs {reference:?}"
    );

    let int8_dir = tmp.path().join("int8");
    convert(&src, &int8_dir, Precision::Int8, "tiny-int8").unwrap();
    let int8 = load_onnx(&int8_dir).score(&question()).unwrap();
    let d = max_abs_diff(&int8, &reference);
    eprintln!("int8 vs tch: max abs diff {d}, spread {spread}; {int8:?} vs {reference:?}");
    // Quantization moves the logits, but by a small fraction of their spread; an int8 graph
    // wired wrongly (transposed weights, missing scales) is off by the whole spread.
    assert!(
        d < 0.1 * spread,
        "int8 graph vs tch: max abs diff {d} (spread {spread})"
    );
    // A question scores the same whatever is scored beside it: int8 activations get one scale
    // per batch, so batches never mix questions.
    let mut other = question();
    other.id = "other".into();
    for c in &mut other.candidates {
        c.text = format!(
            "{} and a much longer sentence with many more words than before",
            c.text
        );
    }
    let int8_ranker = load_onnx(&int8_dir);
    let together = int8_ranker.score_all(&[other, question()]).unwrap();
    assert_eq!(together[1], int8, "scored beside another question");
    // Only the fp32 export's scores stand for the source's (cached base scores, EQAG).
    assert_eq!(fp32_source(&fp32_dir), Some(src.clone()));
    assert_eq!(fp32_source(&int8_dir), None);
    assert_eq!(fp32_source(&src), None);
    assert!(
        std::fs::metadata(int8_dir.join("model.onnx"))
            .unwrap()
            .len()
            < std::fs::metadata(fp32_dir.join("model.onnx"))
                .unwrap()
                .len(),
        "int8 weights take less room"
    );
}

/// A graph exported by other tools has no card to give its precision: an int8 one is known by
/// its operators and scores each pair alone (so a pair's score is its own), an fp32 one batches.
#[test]
fn uncarded_int8_exports_score_pairs_one_at_a_time() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_cross_encoder(tmp.path());
    for precision in [Precision::Int8, Precision::Fp32] {
        let dir = tmp.path().join(format!("{precision:?}"));
        convert(&src, &dir, precision, "tiny").unwrap();
        let carded = load_onnx(&dir);
        let expected = carded.score(&question()).unwrap();
        std::fs::remove_file(dir.join("model.json")).unwrap();
        let export = OnnxRanker::load_export(&dir).unwrap();
        match precision {
            Precision::Int8 => {
                assert_eq!(carded.pairs_per_run(), 1);
                assert_eq!(export.pairs_per_run(), 1);
            }
            Precision::Fp32 => assert!(export.pairs_per_run() > 1),
        }
        assert_eq!(
            export.score(&question()).unwrap(),
            expected,
            "{precision:?}"
        );
    }
}

#[test]
fn an_mpnet_graph_scores_like_the_tch_model() {
    // Relative position bias, positions counted after padding and no token types, in ONNX.
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = spread(tiny_mpnet_base(tmp.path(), 0.0));
    let card = ModelCard::read(&src).unwrap();
    let reference = CrossEncoderRanker::load(&src, &card)
        .unwrap()
        .score(&question())
        .unwrap();
    let spread = reference.iter().cloned().fold(f32::MIN, f32::max)
        - reference.iter().cloned().fold(f32::MAX, f32::min);
    assert!(spread > 0.1, "logits {reference:?}");
    for (precision, tolerance) in [(Precision::Fp32, 1e-4), (Precision::Int8, 0.1 * spread)] {
        let dir = tmp.path().join(format!("{precision:?}"));
        convert(&src, &dir, precision, "tiny-mpnet").unwrap();
        let ranker = load_onnx(&dir);
        assert_eq!(ranker.tokenizer().specials(), (25, 27), "<s> and </s>");
        let scores = ranker.score(&question()).unwrap();
        let d = max_abs_diff(&scores, &reference);
        assert!(
            d < tolerance,
            "{precision:?} MPNet graph vs tch: max abs diff {d}: {scores:?} vs {reference:?}"
        );
    }
}

#[test]
fn an_xlm_roberta_graph_scores_like_the_tch_model() {
    // One token type, positions counted after padding, `</s></s>` between the texts.
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = spread(tiny_roberta_base(tmp.path(), 0.0, "xlm-roberta"));
    let card = ModelCard::read(&src).unwrap();
    let reference = CrossEncoderRanker::load(&src, &card)
        .unwrap()
        .score(&question())
        .unwrap();
    let dir = tmp.path().join("fp32");
    convert(&src, &dir, Precision::Fp32, "tiny-xlmr").unwrap();
    let ranker = load_onnx(&dir);
    assert_eq!(ranker.tokenizer().specials(), (25, 27), "<s> and </s>");
    let scores = ranker.score(&question()).unwrap();
    let d = max_abs_diff(&scores, &reference);
    assert!(
        d < 1e-4,
        "XLM-R graph vs tch: max abs diff {d}: {scores:?} vs {reference:?}"
    );
    // Without its card the directory is a Hugging Face one: it converts all the same.
    std::fs::remove_file(src.join(ansel_model::CARD_FILE)).unwrap();
    let uncarded = CrossEncoderRanker::load_hf_dir(&src).unwrap();
    let d = max_abs_diff(&uncarded.score(&question()).unwrap(), &reference);
    assert!(
        d < 1e-5,
        "card-less directory (other batches): max abs diff {d}"
    );
    convert(&src, &dir, Precision::Fp32, "tiny-xlmr").unwrap();
    let d = max_abs_diff(&load_onnx(&dir).score(&question()).unwrap(), &reference);
    assert!(d < 1e-4, "card-less conversion: max abs diff {d}");
}

#[test]
fn the_committed_wikiqa_model_keeps_its_ranking_in_int8() {
    let _guard = serial();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/minilm-l6-wikiqa");
    let tmp = tempfile::tempdir().unwrap();
    let card = ModelCard::read(&src).unwrap();
    let q = Question {
        id: "q".into(),
        text: "how are glacier caves formed?".into(),
        candidates: [
            "A partly submerged glacier cave on Perito Moreno Glacier.",
            "The ice facade is approximately 60 m high",
            "Ice formations in the Titlis glacier cave",
            "A glacier cave is a cave formed within the ice of a glacier.",
            "Glacier caves are often called ice caves, but this term is properly used to describe bedrock caves that contain year-round ice.",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| Candidate {
            id: format!("c{i}"),
            text: t.to_string(),
            label: Some(i == 3),
            context: None,
        })
        .collect(),
    };
    let reference = CrossEncoderRanker::load(&src, &card)
        .unwrap()
        .score(&q)
        .unwrap();
    for (precision, tolerance) in [(Precision::Fp32, 1e-4), (Precision::Int8, 0.5)] {
        let out = tmp.path().join(format!("{precision:?}"));
        convert(&src, &out, precision, "m").unwrap();
        let scores = load_onnx(&out).score(&q).unwrap();
        let d = max_abs_diff(&scores, &reference);
        eprintln!("{precision:?}: max abs diff {d}; {scores:?} vs {reference:?}");
        assert!(
            d < tolerance,
            "{precision:?}: max abs diff {d}: {scores:?} vs {reference:?}"
        );
        assert_eq!(ranking(&scores)[0], ranking(&reference)[0], "{precision:?}");
        assert_eq!(ranking(&scores)[0], 3, "the true answer first");
    }
}

#[test]
fn missing_or_corrupt_files_are_named() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_cross_encoder(tmp.path());
    let out = tmp.path().join("int8");
    convert(&src, &out, Precision::Int8, "tiny-int8").unwrap();
    let card = ModelCard::read(&out).unwrap();

    std::fs::write(out.join("model.onnx"), b"not a protobuf").unwrap();
    let err = OnnxRanker::load(&out, &card).err().unwrap().to_string();
    assert!(err.contains("model.onnx"), "{err}");

    std::fs::remove_file(out.join("model.onnx")).unwrap();
    let err = OnnxRanker::load(&out, &card).err().unwrap().to_string();
    assert!(
        err.contains("model.onnx") && err.contains("missing"),
        "{err}"
    );

    std::fs::remove_file(out.join("tokenizer.json")).unwrap();
    let err = OnnxRanker::load(&out, &card).err().unwrap().to_string();
    assert!(err.contains("tokenizer.json"), "{err}");

    // Only cross-encoders convert; the error names the card and its kind.
    let mut other = ModelCard::read(&src).unwrap();
    other.kind = "cosinenet".into();
    other.write(&src).unwrap();
    let err = convert(&src, &tmp.path().join("x"), Precision::Fp32, "x")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("model.json") && err.contains("cosinenet"),
        "{err}"
    );
}
