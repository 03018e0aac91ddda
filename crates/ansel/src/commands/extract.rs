//! Extractive QA: training a span extractor (`ansel train --model span-extractor`) and
//! benchmarking extraction on ranked sentences (`ansel eval-extract`).

use super::train::TrainArgs;
use ansel_data::readers::jacana::{self, SpanQuestion};
use ansel_reader::{
    best_f1, capitalised_or_numeric_span, exact_match, split_words, Reading, SpanExample,
    SpanExtractor, SpanReader,
};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// Options of `--model span-extractor`.
#[derive(Args)]
pub struct ReaderArgs {
    /// Span extractor: train on synthetic cloze questions generated from the sentences of
    /// --train and --dev (their labels and gold spans unused: the SEDAN setting) instead of
    /// the gold spans of the jacana files.
    #[arg(long)]
    pub synthetic: bool,
    /// Span extractor: longest answer in sentence tokens.
    #[arg(long, default_value_t = 10)]
    pub max_answer_tokens: usize,
    /// Span extractor: words of the neighbouring sentences read on each side of the sentence
    /// (context only; spans stay inside the sentence).
    #[arg(long, default_value_t = 0)]
    pub context_words: usize,
    /// Span extractor: also learn "no span" from the records' no-answer sentences (span
    /// records only), so that the model can say a sentence holds no answer.
    #[arg(long)]
    pub no_span: bool,
    /// Span extractor: dev records evaluated (an even sample), so that evaluation stays cheap.
    #[arg(long, default_value_t = 1000)]
    pub dev_records: usize,
    /// Span extractor with --synthetic: question length, the clause around the answer in at
    /// most N words (0: the whole sentence with the answer replaced by a wh-phrase).
    #[arg(long, default_value_t = 12)]
    pub synthetic_question_words: usize,
}

/// The tokenised sentences of a data file: the jacana XML's tokens, or any format `ansel
/// eval` reads split into words.
fn sentences(path: &Path) -> Result<Vec<Vec<String>>> {
    if is_jacana(path) {
        let qs = jacana::read(path)?;
        return Ok(qs
            .into_iter()
            .flat_map(|q| q.candidates.into_iter().map(|c| c.tokens))
            .collect());
    }
    let qs = ansel_data::read_path(path, None)?;
    Ok(qs
        .iter()
        .flat_map(|q| &q.candidates)
        .map(|c| tokens_of(&c.text))
        .collect())
}

fn is_jacana(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
}

/// Words of raw text (see [`split_words`]) as strings.
pub fn tokens_of(text: &str) -> Vec<String> {
    split_words(text)
        .into_iter()
        .map(|(s, e)| text[s..e].to_string())
        .collect()
}

/// Gold spans of a jacana TrecQA XML file or of span records (`ansel-lab squad-spans`), with
/// the records' no-span sentences when `negatives`; at most `max_records` records, an even
/// sample.
fn gold_examples(
    path: &Path,
    option: &str,
    negatives: bool,
    max_records: Option<usize>,
) -> Result<Vec<SpanExample>> {
    if is_jacana(path) {
        let qs = jacana::read(path).with_context(|| format!("cannot read {option} data"))?;
        return Ok(ansel_reader::jacana_examples(&qs));
    }
    let records = ansel_reader::squad::read_records(path).with_context(|| {
        format!(
            "cannot read {option} data: gold answer spans come from the jacana TrecQA XML (TRAIN.xml, DEV.xml, TEST.xml) \
             or span records (`ansel-lab squad-spans`); --synthetic generates spans from any data file's sentences"
        )
    })?;
    let records = match max_records {
        Some(max) if max < records.len() => {
            let step = records.len() as f64 / max as f64;
            (0..max)
                .map(|i| records[(i as f64 * step) as usize].clone())
                .collect()
        }
        _ => records,
    };
    Ok(ansel_reader::squad::examples(&records, negatives))
}

/// `ansel train --model span-extractor`.
pub fn train_span_extractor(args: &TrainArgs) -> Result<()> {
    let ce = &args.cross_encoder;
    let r = &args.reader;
    let Some(base) = ce.base.as_deref() else {
        bail!("--model span-extractor needs --base DIR (a Hugging Face BERT directory, e.g. vendor/models/all-minilm-l6-v2, or a cross-encoder)")
    };
    let mut opts = ansel_reader::train::SpanTrainOptions::defaults(base, &args.out);
    opts.run = args.run_options(opts.run);
    opts.max_answer_tokens = r.max_answer_tokens;
    opts.context_words = r.context_words;
    opts.no_span = r.no_span;
    let (train, dev) = if r.synthetic {
        let generator = ansel_synth::ClozeGenerator {
            question_words: r.synthetic_question_words,
            ..Default::default()
        };
        let train = sentences(&args.train).context("cannot read --train data")?;
        let dev = sentences(&args.dev).context("cannot read --dev data")?;
        let train = ansel_reader::synthetic::examples(&train, &generator, ce.max_pairs, args.seed);
        // Dev: a fixed-size synthetic sample, so evaluation stays cheap.
        let dev = ansel_reader::synthetic::examples(&dev, &generator, Some(300), args.seed);
        opts.data_note = format!(
            "synthetic cloze questions (ansel-synth ClozeGenerator, question_words {}) from the sentences of train and dev; no human labels or spans",
            r.synthetic_question_words
        );
        (train, dev)
    } else {
        let mut train = gold_examples(&args.train, "--train", r.no_span, None)?;
        if let Some(max) = ce.max_pairs {
            train.truncate(max);
        }
        opts.data_note = if is_jacana(&args.train) {
            "gold answer spans of the positive sentences (jacana XML)".into()
        } else {
            format!(
                "gold answer spans of span records (answer sentence between its neighbours){}",
                if r.no_span {
                    ", and each record's hardest no-answer sentence of the paragraph as a no-span example"
                } else {
                    ""
                }
            )
        };
        let dev = gold_examples(&args.dev, "--dev", r.no_span, Some(r.dev_records))?;
        (train, dev)
    };
    if dev.is_empty() {
        bail!("{}: no dev example with an answer span", args.dev.display());
    }
    let card = ansel_reader::train::train(&opts, &train, &dev)?;
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

#[derive(Args)]
pub struct EvalExtractArgs {
    /// TrecQA questions with gold spans (jacana XML, e.g. ../shared/data/trecqa/xml/TEST.xml).
    #[arg(long)]
    data: PathBuf,
    /// A trained span extractor (repeat for several); the rule baseline is always included.
    #[arg(long = "extractor")]
    extractors: Vec<PathBuf>,
    /// Sentence rankers whose top sentences are read (any `ansel eval` model spec; repeat).
    #[arg(long = "ranker")]
    rankers: Vec<String>,
    /// Top-k settings that combine span and sentence scores (z-scores within the question, summed).
    #[arg(long = "top-k", default_values_t = vec![3, 5])]
    top_k: Vec<usize>,
    /// Score only questions with both a positive and a negative sentence (TrecQA "clean");
    /// otherwise every question with a positive.
    #[arg(long)]
    clean: bool,
    /// Print one JSON object per row instead of a Markdown table.
    #[arg(long)]
    json: bool,
    /// Intra-op threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

/// Within-question standardisation (as `a+b` fusion does); constant lists give zeros.
fn zscores(xs: &[f32]) -> Vec<f32> {
    let n = xs.len().max(1) as f32;
    let mean = xs.iter().sum::<f32>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / n).sqrt();
    xs.iter()
        .map(|x| if sd > 1e-6 { (x - mean) / sd } else { 0.0 })
        .collect()
}

/// One extractor's answer on every candidate of every question: text and span score.
type Extracted = Vec<Vec<(String, f32)>>;

struct Row {
    extractor: String,
    sentences: String,
    em: f64,
    f1: f64,
    sentence_correct: f64,
}

fn score_row(
    extractor: &str,
    sentences: String,
    questions: &[SpanQuestion],
    extracted: &Extracted,
    chosen: &[usize],
) -> Row {
    let (mut em, mut f1, mut hit) = (0.0, 0.0, 0.0);
    for ((q, answers), &c) in questions.iter().zip(extracted).zip(chosen) {
        let gold = q.answers();
        let text = &answers[c].0;
        em += exact_match(text, &gold);
        f1 += best_f1(text, &gold);
        hit += f64::from(u8::from(q.candidates[c].label));
    }
    let n = questions.len().max(1) as f64;
    Row {
        extractor: extractor.to_string(),
        sentences,
        em: em / n,
        f1: f1 / n,
        sentence_correct: hit / n,
    }
}

pub fn run_eval(args: EvalExtractArgs) -> Result<()> {
    ansel_torch::init(args.threads, 0);
    let all = jacana::read(&args.data).context("cannot read --data")?;
    let total = all.len();
    let questions: Vec<SpanQuestion> = all
        .into_iter()
        .filter(|q| {
            let pos = q.candidates.iter().filter(|c| c.label).count();
            pos > 0 && (!args.clean || pos < q.candidates.len())
        })
        .collect();
    if questions.is_empty() {
        bail!(
            "{}: no question with a positive sentence",
            args.data.display()
        );
    }
    let as2: Vec<ansel_data::Question> = questions.iter().map(SpanQuestion::to_question).collect();
    // Sentence scores of each ranker.
    let mut ranked: Vec<(String, Vec<Vec<f32>>)> = Vec::new();
    for spec in &args.rankers {
        let ranker = ansel::models::resolve(spec, &as2)?;
        let scores = ranker
            .score_all(&as2)
            .with_context(|| format!("ranker {spec}"))?;
        ranked.push((spec.clone(), scores));
    }
    // Answers of each extractor on every candidate.
    let mut extractors: Vec<(String, Extracted, bool)> = Vec::new();
    let baseline: Extracted = questions
        .iter()
        .map(|q| {
            let qtext = q.text();
            q.candidates
                .iter()
                .map(|c| {
                    let text = capitalised_or_numeric_span(&qtext, &c.tokens)
                        .map(|(s, e)| c.tokens[s..e].join(" "))
                        .unwrap_or_default();
                    (text, 0.0)
                })
                .collect()
        })
        .collect();
    extractors.push((
        "rule: longest capitalised/numeric run not in the question".into(),
        baseline,
        false,
    ));
    for dir in &args.extractors {
        let model = SpanExtractor::open(dir)
            .with_context(|| format!("cannot load extractor {}", dir.display()))?;
        let texts: Vec<String> = questions.iter().map(SpanQuestion::text).collect();
        let items: Vec<Reading> = questions
            .iter()
            .zip(&texts)
            .flat_map(|(q, t)| {
                q.candidates
                    .iter()
                    .map(move |c| Reading::sentence(t, &c.tokens))
            })
            .collect();
        let found = model.extract_all(&items)?;
        let mut at = 0;
        let per_q: Extracted = questions
            .iter()
            .map(|q| {
                let v = found[at..at + q.candidates.len()]
                    .iter()
                    .map(|x| {
                        x.as_ref().map_or((String::new(), f32::NEG_INFINITY), |x| {
                            (x.text.clone(), x.score)
                        })
                    })
                    .collect();
                at += q.candidates.len();
                v
            })
            .collect();
        extractors.push((dir.display().to_string(), per_q, true));
    }
    let mut rows = Vec::new();
    for (name, extracted, learned) in &extractors {
        let oracle: Vec<usize> = questions
            .iter()
            .map(|q| q.candidates.iter().position(|c| c.label).unwrap_or(0))
            .collect();
        rows.push(score_row(
            name,
            "oracle: the first gold positive sentence".into(),
            &questions,
            extracted,
            &oracle,
        ));
        for (spec, scores) in &ranked {
            let orders: Vec<Vec<usize>> = questions
                .iter()
                .zip(scores)
                .map(|(q, s)| {
                    let labels: Vec<bool> = q.candidates.iter().map(|c| c.label).collect();
                    ansel_eval::rank_order(s, &labels)
                })
                .collect();
            let top1: Vec<usize> = orders.iter().map(|o| o[0]).collect();
            rows.push(score_row(
                name,
                format!("top-1 of {spec}"),
                &questions,
                extracted,
                &top1,
            ));
            if !learned {
                continue;
            }
            for &k in &args.top_k {
                let chosen: Vec<usize> = orders
                    .iter()
                    .zip(scores)
                    .zip(extracted)
                    .map(|((order, s), ex)| {
                        let sz = zscores(s);
                        let span: Vec<f32> = ex
                            .iter()
                            .map(|x| if x.1.is_finite() { x.1 } else { -1e4 })
                            .collect();
                        let spz = zscores(&span);
                        let mut best = order[0];
                        for &c in order.iter().take(k.max(1)) {
                            if sz[c] + spz[c] > sz[best] + spz[best] {
                                best = c;
                            }
                        }
                        best
                    })
                    .collect();
                rows.push(score_row(
                    name,
                    format!("top-{k} of {spec}, span + sentence z-scores"),
                    &questions,
                    extracted,
                    &chosen,
                ));
            }
        }
        if *learned {
            let by_span: Vec<usize> = extracted
                .iter()
                .map(|ex| {
                    let s: Vec<f32> = ex.iter().map(|x| x.1).collect();
                    ansel_eval::rank_order(&s, &vec![false; s.len()])[0]
                })
                .collect();
            rows.push(score_row(
                name,
                "best span score over all candidates (no ranker)".into(),
                &questions,
                extracted,
                &by_span,
            ));
        }
    }
    if args.json {
        for r in &rows {
            println!(
                "{}",
                serde_json::json!({"extractor": r.extractor, "sentences": r.sentences, "questions": questions.len(),
                    "EM": r.em, "F1": r.f1, "sentence_correct": r.sentence_correct})
            );
        }
        return Ok(());
    }
    println!(
        "{} questions of {} in {} ({}), gold answers: every span on the question's positive sentences\n",
        questions.len(),
        total,
        args.data.display(),
        if args.clean { "clean: a positive and a negative" } else { "every question with a positive" }
    );
    println!("| extractor | sentences read | EM | F1 | sentence is a positive |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.3} |",
            r.extractor, r.sentences, r.em, r.f1, r.sentence_correct
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zscores_standardise_and_constant_lists_give_zeros() {
        let z = zscores(&[1.0, 2.0, 3.0]);
        assert!((z[0] + 1.2247).abs() < 1e-3 && z[1].abs() < 1e-6);
        assert_eq!(zscores(&[2.0, 2.0]), vec![0.0, 0.0]);
    }

    #[test]
    fn gold_spans_need_the_jacana_xml() {
        let err = gold_examples(Path::new("train.jsonl"), "--train", false, None).unwrap_err();
        assert!(format!("{err:#}").contains("--synthetic"), "{err:#}");
        assert_eq!(
            tokens_of("In 1822, Fresnel."),
            vec!["In", "1822", ",", "Fresnel", "."]
        );
    }
}
