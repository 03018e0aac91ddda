//! The span-reader graph (a span extractor converted to ONNX) against the libtorch model it
//! came from: the same spans, scores and null scores in fp32, the same spans in int8.

use ansel_bert::testing::{serial, spread_weights, tiny_base};
use ansel_model::ModelCard;
use ansel_onnx::{convert, OnnxSpanReader, Precision, SPAN_KIND};
use ansel_reader::{Extraction, Reading, SpanExtractor, SpanReader, SpanSettings};
use std::path::{Path, PathBuf};

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

/// A tiny span extractor with a random head, reading 4 words of context each side and
/// trained (here: built) to say "no span".
fn tiny_reader(dir: &Path) -> PathBuf {
    let base = tiny_base(dir, 0.0);
    spread_weights(&base);
    let settings = SpanSettings {
        max_len: 40,
        context_words: 4,
        no_span: true,
        ..SpanSettings::default()
    };
    let (model, _) = SpanExtractor::from_base(&base, settings).unwrap();
    model
        .save_head(&base.join(ansel_reader::HEAD_FILE))
        .unwrap();
    ModelCard::new(
        ansel_reader::KIND,
        "tiny-reader",
        serde_json::to_value(settings).unwrap(),
    )
    .write(&base)
    .unwrap();
    base
}

struct Case {
    question: Vec<String>,
    before: Vec<String>,
    sentence: Vec<String>,
    after: Vec<String>,
}

fn cases() -> Vec<Case> {
    let case = |q: &str, b: &str, s: &str, a: &str| Case {
        question: words(q),
        before: if b.is_empty() { vec![] } else { words(b) },
        sentence: words(s),
        after: if a.is_empty() { vec![] } else { words(a) },
    };
    vec![
        case(
            "who wrote hamlet ?",
            "hamlet is a play .",
            "it was written by william shakespeare .",
            "the play is set in denmark .",
        ),
        case(
            "where is hamlet set ?",
            "",
            "hamlet is set in denmark .",
            "",
        ),
        case(
            "who ?",
            "a b c d e f",
            "the tragedy was written .",
            "in denmark",
        ),
    ]
}

fn extract(reader: &dyn SpanReader) -> Vec<Option<Extraction>> {
    let cases = cases();
    let questions: Vec<String> = cases.iter().map(|c| c.question.join(" ")).collect();
    let readings: Vec<Reading> = cases
        .iter()
        .zip(&questions)
        .map(|(c, q)| Reading {
            question: q,
            before: &c.before,
            sentence: &c.sentence,
            after: &c.after,
        })
        .collect();
    reader.extract_all(&readings).unwrap()
}

#[test]
fn the_graph_reads_and_decodes_as_the_libtorch_reader_does() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_reader(tmp.path());
    let expected = extract(&SpanExtractor::open(&src).unwrap());
    for precision in [Precision::Fp32, Precision::Int8] {
        let out = tmp.path().join(format!("{precision:?}"));
        let card = convert(&src, &out, precision, "tiny-reader-onnx").unwrap();
        assert_eq!(card.kind, SPAN_KIND);
        assert_eq!(card.config["context_words"], 4);
        assert_eq!(card.config["source_name"], "tiny-reader");
        let found = extract(&OnnxSpanReader::open(&out).unwrap());
        assert_eq!(found.len(), expected.len());
        for (f, e) in found.iter().zip(&expected) {
            let (f, e) = (f.as_ref().unwrap(), e.as_ref().unwrap());
            let tolerance = match precision {
                Precision::Fp32 => 1e-3,
                Precision::Int8 => 0.5,
            };
            if precision == Precision::Fp32 {
                assert_eq!((f.start, f.end, &f.text), (e.start, e.end, &e.text));
                assert!((f.score - e.score).abs() < tolerance, "{f:?} vs {e:?}");
            }
            assert!(
                (f.null_score - e.null_score).abs() < tolerance,
                "{precision:?}: {f:?} vs {e:?}"
            );
        }
    }
}

#[test]
fn a_cross_encoder_graph_is_not_a_span_reader() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_reader(tmp.path());
    let out = tmp.path().join("out");
    convert(&src, &out, Precision::Fp32, "r").unwrap();
    let mut card = ModelCard::read(&out).unwrap();
    card.kind = ansel_onnx::KIND.into();
    let err = OnnxSpanReader::load(&out, &card).err().unwrap().to_string();
    assert!(err.contains("span-extractor-onnx"), "{err}");
}
