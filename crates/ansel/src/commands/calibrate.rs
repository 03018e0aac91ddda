//! `ansel calibrate`: fits a model's score-to-probability map and its abstention threshold on
//! dev data, and reports both on test data.

use ansel::calibration::Calibration;
use ansel::models;
use ansel_data::{read_path, Question};
use ansel_eval::calibration::{Abstention, AbstentionReport, BestCandidate, Platt, Reliability};
use ansel_model::write_atomic;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// Probability bins of the reliability diagram and the expected calibration error.
const BINS: usize = 10;

#[derive(Args)]
pub struct CalibrateArgs {
    /// Model to calibrate (any `--model` spec of `ansel eval`).
    #[arg(long)]
    model: String,
    /// Dev data the probabilities and the threshold are fitted on (any format `eval` reads;
    /// every question counts, those without an answer too). Repeat for several files.
    #[arg(long = "fit", required = true)]
    fit: Vec<PathBuf>,
    /// Test data to report calibration and abstention on (never fitted on).
    #[arg(long)]
    test: Option<PathBuf>,
    /// Write the fitted calibration here (JSON), for `ask --calibration`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write a reliability diagram of the test data (SVG): raw scores through the logistic
    /// function against the fitted probabilities.
    #[arg(long, requires = "test")]
    diagram: Option<PathBuf>,
}

fn read(path: &Path) -> Result<Vec<Question>> {
    let questions =
        read_path(path, None).with_context(|| format!("cannot read {}", path.display()))?;
    super::require_questions(&questions, path, "data")?;
    Ok(questions)
}

/// Every pair's raw score and label, and each question's best candidate.
struct Scored {
    pairs: Vec<(f32, bool)>,
    best: Vec<(f32, bool, bool)>,
}

fn score(model: &dyn ansel_model::Ranker, questions: &[Question]) -> Result<Scored> {
    let scores = model.score_all(questions)?;
    let mut pairs = Vec::new();
    let mut best = Vec::new();
    for (q, s) in questions.iter().zip(&scores) {
        // Unlabelled candidates count as negatives, as the ranking metrics count them.
        let labels: Vec<bool> = q.candidates.iter().map(|c| c.label == Some(true)).collect();
        let order = ansel_eval::rank_order(s, &labels);
        if let Some(&top) = order.first() {
            best.push((s[top], labels[top], q.positives() > 0));
        }
        pairs.extend(s.iter().copied().zip(labels));
    }
    Ok(Scored { pairs, best })
}

fn best_candidates(scored: &Scored, platt: &Platt) -> Vec<BestCandidate> {
    scored
        .best
        .iter()
        .map(|&(s, is_positive, answerable)| BestCandidate {
            probability: platt.probability(s),
            is_positive,
            answerable,
        })
        .collect()
}

fn reliability(scored: &Scored, platt: &Platt) -> Reliability {
    let predictions: Vec<(f64, bool)> = scored
        .pairs
        .iter()
        .map(|&(s, y)| (platt.probability(s), y))
        .collect();
    Reliability::new(&predictions, BINS)
}

fn summary(scored: &Scored, platt: &Platt, abstention: &Abstention) -> serde_json::Value {
    let report: AbstentionReport = abstention.report(&best_candidates(scored, platt));
    let round = |v: f64| (v * 1e4).round() / 1e4;
    serde_json::json!({
        "pairs": scored.pairs.len(),
        "questions": report.questions,
        "answerable": report.answerable,
        "ece_logistic": round(reliability(scored, &Platt::IDENTITY).ece()),
        "ece": round(reliability(scored, platt).ece()),
        "answered": report.answered,
        "answer_precision": round(report.answer_precision()),
        "answer_recall": round(report.answer_recall()),
        "abstained": report.abstained,
        "abstain_precision": round(report.abstain_precision()),
        "abstain_recall": round(report.abstain_recall()),
        "answer_f1": round(report.answer_f1()),
        "accuracy": round(report.accuracy()),
    })
}

pub fn run(args: CalibrateArgs) -> Result<()> {
    let mut dev = Vec::new();
    for path in &args.fit {
        dev.extend(read(path)?);
    }
    let test = args.test.as_deref().map(read).transpose()?;
    let corpus: Vec<Question> = dev.iter().chain(test.iter().flatten()).cloned().collect();
    let model = models::resolve(&args.model, &corpus)?;
    let dev_scored = score(model.as_ref(), &dev)?;
    let Some(platt) = Platt::fit(&dev_scored.pairs) else {
        bail!("the dev data has no candidate with a finite score to fit on");
    };
    let abstention = Abstention::choose(&best_candidates(&dev_scored, &platt));
    let calibration = Calibration {
        model: args.model.clone(),
        platt,
        abstain_below: abstention.threshold,
        fitted_on: args.fit.iter().map(|p| p.display().to_string()).collect(),
        dev: summary(&dev_scored, &platt, &abstention),
    };
    let mut out = serde_json::to_value(&calibration)?;
    if let (Some(path), Some(questions)) = (&args.test, &test) {
        let scored = score(model.as_ref(), questions)?;
        out["test"] = summary(&scored, &platt, &abstention);
        out["tested_on"] = serde_json::json!(path.display().to_string());
        if let Some(diagram) = &args.diagram {
            let raw = reliability(&scored, &Platt::IDENTITY);
            let fitted = reliability(&scored, &platt);
            let svg = Reliability::svg(
                &[
                    ("logistic of the raw score", &raw),
                    ("fitted on dev", &fitted),
                ],
                &format!("{} on {}", args.model, file_name(path)),
            );
            write_atomic(diagram, svg.as_bytes())
                .with_context(|| format!("cannot write {}", diagram.display()))?;
        }
    }
    if let Some(path) = &args.out {
        let text = serde_json::to_string_pretty(&calibration)? + "\n";
        write_atomic(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}
