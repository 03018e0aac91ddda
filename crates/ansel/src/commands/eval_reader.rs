//! `ansel eval-reader`: a span reader on span records (`ansel-lab squad-spans`): exact match
//! and token F1 given the gold sentence and given the gold paragraph, how often it says "no
//! span" exactly when the sentence holds none, what a reading costs, and (`--calibrate`) the
//! calibration `ask` and `serve` use to show a span or not.

use ansel::answering::CALIBRATION_FILE;
use ansel::models;
use ansel_answer::calibration::{Calibration, Platt};
use ansel_eval::calibration::Reliability;
use ansel_reader::squad::read_records;
use ansel_reader::{best_f1, exact_match, Extraction, SpanExample, SpanReader};
use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct EvalReaderArgs {
    /// Span records (`ansel-lab squad-spans`), e.g. data/squad-spans/dev.jsonl.
    #[arg(long)]
    data: PathBuf,
    /// The span reader (a model directory or name).
    #[arg(long)]
    reader: String,
    /// Records evaluated (an even sample of the file); 0: all.
    #[arg(long, default_value_t = 0)]
    records: usize,
    /// Fit the reader's calibration on these records and write it into the reader's
    /// directory (calibration.json): choose on dev, never on test.
    #[arg(long)]
    calibrate: bool,
    /// The share of read sentences that hold an answer where the calibration is used (`ask`
    /// reads its first answer: the share is its P@1). The readings are sampled evenly to that
    /// proportion before the calibration is fitted and judged; without it, every reading counts
    /// (the answer sentences and about as many no-answer sentences).
    #[arg(long, value_parser = share_in_open_unit)]
    answer_share: Option<f64>,
    /// Also write each record's prediction given the gold sentence as JSON lines
    /// ({"id", "question", "answers", "span", "margin"}), for error analysis.
    #[arg(long)]
    predictions: Option<PathBuf>,
}

#[derive(Serialize)]
struct Report {
    reader: String,
    data: String,
    records: usize,
    /// Given the gold sentence (read between its neighbours): the best span.
    #[serde(rename = "sentence_EM")]
    sentence_em: f64,
    #[serde(rename = "sentence_F1")]
    sentence_f1: f64,
    /// Given the gold paragraph: the span with the highest margin over "no span" among all its
    /// sentences.
    #[serde(rename = "paragraph_EM")]
    paragraph_em: f64,
    #[serde(rename = "paragraph_F1")]
    paragraph_f1: f64,
    /// Answer sentences and no-answer sentences (one per record that has one), and how often
    /// the reader's margin is positive exactly on the answer sentences.
    no_span_examples: usize,
    span_no_span_accuracy: f64,
    /// Mean milliseconds per sentence read (the paragraph pass, whatever runs the reader).
    ms_per_reading: f64,
    /// With the reader's calibration (its folder's, or the one just fitted): expected
    /// calibration error (10 bins) of the probability that the span is exactly the answer, over
    /// every reading, and the share of answer and no-answer sentences given a span.
    #[serde(skip_serializing_if = "Option::is_none")]
    ece: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shown_on_answer_sentences: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shown_on_no_answer_sentences: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    calibration: Option<serde_json::Value>,
}

/// One reading as calibration sees it: the margin over "no span", whether the span is exactly
/// the answer, its token F1, and whether the sentence holds an answer at all.
#[derive(Clone)]
struct Judged {
    margin: f32,
    right: bool,
    f1: f64,
    answerable: bool,
}

fn share_in_open_unit(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if share > 0.0 && share < 1.0 => Ok(share),
        _ => Err(format!("{text:?} is not a share strictly between 0 and 1")),
    }
}

/// All of `items`, or an even sample of `max` (0: all).
fn sample<T: Clone>(items: Vec<T>, max: usize) -> Vec<T> {
    if max == 0 || max >= items.len() {
        return items;
    }
    let step = items.len() as f64 / max as f64;
    (0..max)
        .map(|i| items[(i as f64 * step) as usize].clone())
        .collect()
}

/// The readings in the proportion `share` of answer sentences: the group there is too much of
/// is sampled evenly, the other kept whole.
fn in_proportion(judged: Vec<Judged>, share: f64) -> Vec<Judged> {
    let (answers, others): (Vec<Judged>, Vec<Judged>) =
        judged.into_iter().partition(|j| j.answerable);
    let others_wanted = (answers.len() as f64 * (1.0 - share) / share).round() as usize;
    let (answers, others) = if others_wanted <= others.len() {
        (answers, sample(others, others_wanted.max(1)))
    } else {
        let answers_wanted = (others.len() as f64 * share / (1.0 - share)).round() as usize;
        (sample(answers, answers_wanted.max(1)), others)
    };
    answers.into_iter().chain(others).collect()
}

fn read(reader: &dyn SpanReader, examples: &[SpanExample]) -> Result<Vec<Option<Extraction>>> {
    let readings: Vec<_> = examples.iter().map(SpanExample::reading).collect();
    Ok(reader.extract_all(&readings)?)
}

pub fn run(args: EvalReaderArgs) -> Result<()> {
    let records = sample(read_records(&args.data)?, args.records);
    let (reader, dir) = models::span_reader(&args.reader)?;
    if args.calibrate && dir.as_os_str().is_empty() {
        anyhow::bail!(
            "--calibrate: {} has no directory to hold a calibration",
            args.reader
        );
    }
    let reader = reader.as_ref();

    // Given the gold sentence, and its no-answer sentence.
    let positives: Vec<SpanExample> = records
        .iter()
        .map(|r| r.example(r.answer_sentence))
        .collect();
    let found = read(reader, &positives)?;
    let negatives: Vec<SpanExample> = records
        .iter()
        .filter_map(|r| r.negative.map(|n| r.example(n)))
        .collect();
    let found_negative = read(reader, &negatives)?;
    if let Some(path) = &args.predictions {
        let mut lines = Vec::new();
        for (r, x) in records.iter().zip(&found) {
            serde_json::to_writer(
                &mut lines,
                &serde_json::json!({
                    "id": r.id, "question": r.question, "answers": r.answer_texts(),
                    "span": x.as_ref().map(|x| &x.text), "margin": x.as_ref().map(Extraction::margin),
                }),
            )?;
            lines.push(b'\n');
        }
        ansel_model::write_atomic(path, &lines)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let (mut em, mut f1) = (0.0, 0.0);
    // Every reading: what calibration fits.
    let mut judged: Vec<Judged> = Vec::new();
    for (r, x) in records.iter().zip(&found) {
        let gold = r.answer_texts();
        let text = x.as_ref().map_or("", |x| x.text.as_str());
        let (e, f) = (exact_match(text, &gold), best_f1(text, &gold));
        em += e;
        f1 += f;
        if let Some(x) = x {
            judged.push(Judged {
                margin: x.margin(),
                right: e == 1.0,
                f1: f,
                answerable: true,
            });
        }
    }
    judged.extend(found_negative.iter().flatten().map(|x| Judged {
        margin: x.margin(),
        right: false,
        f1: 0.0,
        answerable: false,
    }));
    if let Some(share) = args.answer_share {
        judged = in_proportion(judged, share);
    }
    let agree = found
        .iter()
        .filter(|x| x.as_ref().is_some_and(|x| x.margin() > 0.0))
        .count()
        + found_negative
            .iter()
            .filter(|x| x.as_ref().is_none_or(|x| x.margin() <= 0.0))
            .count();

    // Given the gold paragraph: every sentence read, the best margin wins.
    let mut paragraph = Vec::new();
    let mut owner = Vec::new();
    for (i, r) in records.iter().enumerate() {
        for s in 0..r.sentences.len() {
            paragraph.push(r.example(s));
            owner.push(i);
        }
    }
    let start = Instant::now();
    let found_paragraph = read(reader, &paragraph)?;
    let ms_per_reading = start.elapsed().as_secs_f64() * 1e3 / paragraph.len().max(1) as f64;
    let mut best: Vec<Option<&Extraction>> = vec![None; records.len()];
    for (x, &i) in found_paragraph.iter().zip(&owner) {
        if let Some(x) = x {
            if best[i].is_none_or(|b| x.margin() > b.margin()) {
                best[i] = Some(x);
            }
        }
    }
    let (mut pem, mut pf1) = (0.0, 0.0);
    for (r, x) in records.iter().zip(&best) {
        let gold = r.answer_texts();
        let text = x.map_or("", |x| x.text.as_str());
        pem += exact_match(text, &gold);
        pf1 += best_f1(text, &gold);
    }

    let n = records.len().max(1) as f64;
    let fitted = if args.calibrate {
        // Named as `--reader` would name it, so that `/health` shows the model's name.
        let name = ansel_model::ModelCard::read(&dir)
            .map(|card| card.name)
            .unwrap_or_else(|_| args.reader.clone());
        let calibration = calibrate(&args, &name, &judged)?;
        let path = dir.join(CALIBRATION_FILE);
        ansel_model::write_atomic(
            &path,
            serde_json::to_string_pretty(&calibration)?.as_bytes(),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        Some(calibration)
    } else {
        None
    };
    let own = dir.join(CALIBRATION_FILE);
    let in_use = match &fitted {
        Some(c) => Some(c.clone()),
        None if !dir.as_os_str().is_empty() && own.is_file() => Some(Calibration::read(&own)?),
        None => None,
    };
    let (ece, shown_answer, shown_no_answer) = match &in_use {
        Some(c) => {
            let predictions: Vec<(f64, bool)> = judged
                .iter()
                .map(|j| (c.probability(j.margin), j.right))
                .collect();
            let shown = |answerable: bool| {
                let group: Vec<&Judged> = judged
                    .iter()
                    .filter(|j| j.answerable == answerable)
                    .collect();
                let n = group
                    .iter()
                    .filter(|j| c.probability(j.margin) >= c.abstain_below)
                    .count();
                n as f64 / group.len().max(1) as f64
            };
            (
                Some(Reliability::new(&predictions, 10).ece()),
                Some(shown(true)),
                Some(shown(false)),
            )
        }
        None => (None, None, None),
    };
    let calibration = fitted.map(|c| serde_json::to_value(&c)).transpose()?;
    let report = Report {
        reader: args.reader.clone(),
        data: args.data.display().to_string(),
        records: records.len(),
        sentence_em: em / n,
        sentence_f1: f1 / n,
        paragraph_em: pem / n,
        paragraph_f1: pf1 / n,
        no_span_examples: negatives.len(),
        span_no_span_accuracy: agree as f64 / (records.len() + negatives.len()).max(1) as f64,
        ms_per_reading,
        ece,
        shown_on_answer_sentences: shown_answer,
        shown_on_no_answer_sentences: shown_no_answer,
        calibration,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Platt scaling of the margin to the probability that the span is exactly the answer, and the
/// threshold that best serves a reader of the page: on the answer sentences a span shown earns
/// its token F1, on the no-answer sentences hiding it earns 1.
fn calibrate(args: &EvalReaderArgs, name: &str, judged: &[Judged]) -> Result<Calibration> {
    let pairs: Vec<(f32, bool)> = judged.iter().map(|j| (j.margin, j.right)).collect();
    let platt = Platt::fit(&pairs).context("no reading to calibrate on")?;
    let utility = |threshold: f64| -> f64 {
        judged
            .iter()
            .map(
                |j| match (platt.probability(j.margin) >= threshold, j.answerable) {
                    (true, _) => j.f1,
                    (false, false) => 1.0,
                    (false, true) => 0.0,
                },
            )
            .sum()
    };
    let mut best = (0.0, utility(0.0));
    for step in 1..100 {
        let threshold = step as f64 / 100.0;
        let u = utility(threshold);
        if u > best.1 {
            best = (threshold, u);
        }
    }
    Ok(Calibration {
        model: name.to_string(),
        platt,
        abstain_below: best.0,
        fitted_on: vec![args.data.display().to_string()],
        dev: serde_json::json!({
            "readings": judged.len(),
            "exactly_right": judged.iter().filter(|j| j.right).count(),
            "utility_per_reading": best.1 / judged.len().max(1) as f64,
            "target": "exact match of the span (no-answer sentences: never right)",
            "answer_share": args.answer_share,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readings(answers: usize, others: usize) -> Vec<Judged> {
        let judged = |answerable: bool, i: usize| Judged {
            margin: i as f32,
            right: answerable,
            f1: 1.0,
            answerable,
        };
        (0..answers)
            .map(|i| judged(true, i))
            .chain((0..others).map(|i| judged(false, i)))
            .collect()
    }

    fn counts(judged: &[Judged]) -> (usize, usize) {
        let answers = judged.iter().filter(|j| j.answerable).count();
        (answers, judged.len() - answers)
    }

    #[test]
    fn readings_are_sampled_to_the_share_of_answer_sentences() {
        // Too many no-answer sentences for ask's share: they are thinned, evenly.
        let kept = in_proportion(readings(1000, 956), 0.84);
        assert_eq!(counts(&kept), (1000, 190));
        let margins: Vec<f32> = kept
            .iter()
            .filter(|j| !j.answerable)
            .map(|j| j.margin)
            .collect();
        assert_eq!(margins[..3], [0.0, 5.0, 10.0]);
        assert!(margins[189] > 900.0, "the sample spans the whole group");
        // Too many answer sentences: those are thinned instead.
        assert_eq!(
            counts(&in_proportion(readings(1000, 956), 0.25)),
            (319, 956)
        );
    }

    #[test]
    fn a_share_must_lie_strictly_between_0_and_1() {
        assert_eq!(share_in_open_unit("0.84"), Ok(0.84));
        for bad in ["0", "1", "1.5", "-0.2", "NaN", "most"] {
            let err = share_in_open_unit(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }
}
