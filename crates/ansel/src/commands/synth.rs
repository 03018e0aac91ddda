//! `ansel synth`: synthetic (question, answer sentence) data from unlabelled documents
//! (SEDAN §3.1): passages of K_GQA sentences, rule-based cloze questions, round-trip filter.

use ansel::models;
use ansel_data::Question;
use ansel_index::{document_sentences, Document};
use ansel_model::Ranker;
use ansel_synth::{passages, round_trip, to_question, ClozeGenerator, QuestionGenerator};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

/// What `synth` and `adapt` share: the documents, how questions are made from them and how
/// strict the round-trip filter is.
#[derive(Args)]
pub struct GenerationArgs {
    /// Documents of the target domain (.txt, .md, .jsonl with id/title/text, or folders of them).
    #[arg(long = "text", required = true, num_args = 1..)]
    pub texts: Vec<PathBuf>,
    /// Question length: the clause around the answer, at most N words (0: the whole sentence
    /// with the answer replaced by a wh-phrase).
    #[arg(long, default_value_t = 12)]
    pub question_words: usize,
    /// Sentences per passage (K_GQA); a question's candidates are its passage's sentences.
    #[arg(long, default_value_t = 5)]
    pub passage_sentences: usize,
    /// Keep a question only if the round-trip filter ranks its source sentence in the top N.
    #[arg(long, default_value_t = 1)]
    pub keep_top: usize,
}

impl GenerationArgs {
    /// Reads the documents and generates cloze questions from them (at most `max_questions`).
    pub fn generate(&self, max_questions: Option<usize>) -> Result<(Vec<Question>, Generated)> {
        let documents = ansel::indexing::read_all(&self.texts)?;
        let generator = ClozeGenerator {
            question_words: self.question_words,
            ..ClozeGenerator::default()
        };
        Ok(generate(
            &documents,
            &generator,
            self.passage_sentences,
            max_questions,
        ))
    }
}

#[derive(Args)]
pub struct SynthArgs {
    #[command(flatten)]
    generation: GenerationArgs,
    /// Output: synthetic labelled questions as ansel JSON lines (input for `ansel train`).
    #[arg(long)]
    out: PathBuf,
    /// Round-trip filter: keep a question only if this model ranks its source sentence in the top --keep-top.
    #[arg(long, default_value = "bm25")]
    filter_model: String,
    /// Stop generating after this many questions (e.g. for timing a fixed amount).
    #[arg(long)]
    max_questions: Option<usize>,
}

/// What generation made from the documents.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Generated {
    pub documents: usize,
    pub sentences: usize,
    pub passages: usize,
    pub questions: usize,
    /// (question, candidate) pairs of the generated questions.
    pub pairs: usize,
    pub generator: String,
    pub seconds: f64,
}

/// Cuts every document into passages of `k` sentences and turns each into AS2 questions
/// whose positive is the sentence the generator took the answer from. A document without a
/// real title (title = id) gets none, so that no file name leaks into a question.
pub fn generate(
    documents: &[Document],
    generator: &dyn QuestionGenerator,
    k: usize,
    max_questions: Option<usize>,
) -> (Vec<Question>, Generated) {
    let started = Instant::now();
    let mut questions = Vec::new();
    let mut stats = Generated {
        documents: documents.len(),
        generator: generator.name().to_string(),
        ..Generated::default()
    };
    'docs: for document in documents {
        let sentences: Vec<String> = document_sentences(document)
            .into_iter()
            .map(|s| s.text)
            .collect();
        stats.sentences += sentences.len();
        let title = (document.title != document.id).then_some(document.title.as_str());
        for passage in passages(&document.id, title, &sentences, k) {
            stats.passages += 1;
            // A one-sentence passage has nothing to rank against.
            if passage.sentences.len() < 2 {
                continue;
            }
            for synthetic in generator.generate(&passage) {
                if max_questions.is_some_and(|m| questions.len() >= m) {
                    break 'docs;
                }
                let id = format!("synth-{}", questions.len());
                questions.push(to_question(id, &passage, &synthetic));
            }
        }
    }
    stats.questions = questions.len();
    stats.pairs = questions.iter().map(|q| q.candidates.len()).sum();
    stats.seconds = started.elapsed().as_secs_f64();
    (questions, stats)
}

/// What the round-trip filter kept.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Filtered {
    pub filter: String,
    pub keep_top: usize,
    pub kept_questions: usize,
    pub kept_pairs: usize,
    pub dropped_questions: usize,
    pub seconds: f64,
}

pub fn filter(
    ranker: &dyn Ranker,
    name: &str,
    questions: Vec<Question>,
    keep_top: usize,
) -> Result<(Vec<Question>, Filtered)> {
    let started = Instant::now();
    let (kept, report) = round_trip(ranker, questions, keep_top)?;
    let stats = Filtered {
        filter: name.to_string(),
        keep_top,
        kept_questions: report.kept,
        kept_pairs: kept.iter().map(|q| q.candidates.len()).sum(),
        dropped_questions: report.dropped,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((kept, stats))
}

pub fn run(args: SynthArgs) -> Result<()> {
    let started = Instant::now();
    let (questions, made) = args.generation.generate(args.max_questions)?;
    let ranker = models::resolve(&args.filter_model, &questions)?;
    let (kept, report) = filter(
        ranker.as_ref(),
        &args.filter_model,
        questions,
        args.generation.keep_top,
    )?;
    ansel_model::write_questions(&args.out, &kept)?;
    eprintln!(
        "{} documents, {} sentences, {} passages: {} questions ({} pairs) generated by {} in {:.2} s; \
         {} kept ({} pairs) and {} dropped by the round-trip filter ({} top {}) in {:.2} s; written to {}; {:.2} s in all",
        made.documents,
        made.sentences,
        made.passages,
        made.questions,
        made.pairs,
        made.generator,
        made.seconds,
        report.kept_questions,
        report.kept_pairs,
        report.dropped_questions,
        args.filter_model,
        args.generation.keep_top,
        report.seconds,
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{}",
        serde_json::json!({"generated": made, "filtered": report, "total_seconds": started.elapsed().as_secs_f64()})
    );
    Ok(())
}
