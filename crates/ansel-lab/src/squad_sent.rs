//! `ansel-lab squad-sent`: SQuAD turned into AS2 training and evaluation sets, split by article.
//!
//! A question's candidates are its paragraph's sentences (the positive holds the answer
//! span). Training lists keep the positives, the paragraph's hardest negatives by BM25 and
//! BM25-retrieved sentences of *other* training articles (as ASNQ and MS MARCO do), so that a
//! model learns that a sentence about another topic is wrong. The held-out articles become
//! in-paragraph lists, lists with sentences from other documents, a document collection for
//! `ansel index` and questions for `ansel eval-ask`.

use ansel_data::readers::squad;
use ansel_data::{Candidate, DocContext, Question};
use ansel_lexical::{Bm25, Bm25Index, TermStats};
use ansel_model::{write_atomic, write_questions, Fingerprint};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct SquadSentArgs {
    /// SQuAD v1.1 JSON (.json or .json.gz).
    #[arg(long)]
    data: PathBuf,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// Articles held out as the dev split (model choice).
    #[arg(long, default_value_t = 22)]
    dev_articles: usize,
    /// Articles held out as the test split (reported, never chosen on).
    #[arg(long, default_value_t = 22)]
    test_articles: usize,
    /// Seed of the article split.
    #[arg(long, default_value_t = 13)]
    seed: u64,
    /// Training lists: negatives from the question's own paragraph, hardest by BM25 first.
    #[arg(long, default_value_t = 2)]
    paragraph_negatives: usize,
    /// Training lists: BM25-retrieved negatives from other training articles.
    #[arg(long, default_value_t = 2)]
    other_negatives: usize,
    /// Held-out `-x` lists: sentences of other articles added to the paragraph's.
    #[arg(long, default_value_t = 10)]
    eval_other: usize,
    /// Questions per held-out split written for `ansel eval-ask` (seeded choice).
    #[arg(long, default_value_t = 500)]
    ask_questions: usize,
}

#[derive(Serialize, Default)]
struct SplitSummary {
    articles: usize,
    paragraphs: usize,
    questions: usize,
    /// Questions whose answer span crosses a sentence boundary of ansel's splitter.
    answer_crosses_boundary: usize,
    /// Questions in the written lists (training drops crossing answers).
    listed_questions: usize,
    listed_pairs: usize,
    titles: Vec<String>,
}

#[derive(Serialize)]
struct Summary<'a> {
    source: String,
    source_fingerprint: String,
    seed: u64,
    paragraph_negatives: usize,
    other_negatives: usize,
    eval_other: usize,
    ask_questions: usize,
    splits: &'a BTreeMap<&'static str, SplitSummary>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Split {
    Train,
    Dev,
    Test,
}

impl Split {
    fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Dev => "dev",
            Split::Test => "test",
        }
    }
}

pub fn run(args: SquadSentArgs) -> Result<()> {
    let bytes = ansel_data::read_bytes(&args.data)
        .with_context(|| format!("cannot read {}", args.data.display()))?;
    let paragraphs = squad::parse_paragraphs(&args.data, &bytes)?;
    let articles = paragraphs.last().map_or(0, |p| p.article + 1);
    if args.dev_articles + args.test_articles >= articles {
        bail!(
            "{}: {articles} articles, too few for {} dev and {} test articles and a training split",
            args.data.display(),
            args.dev_articles,
            args.test_articles
        );
    }
    let split_of = article_splits(&paragraphs, articles, &args);

    // Every sentence of the file, where it sits: the BM25 collection of other-document negatives.
    let mut sentences: Vec<Sentence> = Vec::new();
    for p in &paragraphs {
        let spans = ansel_text::split_sentences(&p.context);
        sentences.extend(spans.iter().enumerate().map(|(position, s)| Sentence {
            text: s.text(&p.context),
            article: p.article,
            title: &p.title,
            doc_id: &p.doc_id,
            position,
        }));
    }
    eprintln!("indexing {} sentences", sentences.len());
    let index = Bm25Index::new(sentences.iter().map(|s| s.text));
    let bm25 = Bm25::new(TermStats::from_texts(sentences.iter().map(|s| s.text)));

    std::fs::create_dir_all(&args.out).with_context(|| format!("{}", args.out.display()))?;
    let mut summaries: BTreeMap<&'static str, SplitSummary> = BTreeMap::new();
    for split in [Split::Train, Split::Dev, Split::Test] {
        let summary = summaries.entry(split.name()).or_default();
        let mut lists = Vec::new();
        let mut other_lists = Vec::new();
        let mut asks = Vec::new();
        let mut documents: BTreeMap<usize, (String, Vec<&str>)> = BTreeMap::new();
        for p in paragraphs.iter().filter(|p| split_of[p.article] == split) {
            summary.paragraphs += 1;
            let doc = documents
                .entry(p.article)
                .or_insert_with(|| (p.title.clone(), Vec::new()));
            doc.1.push(&p.context);
            for q in &p.questions {
                summary.questions += 1;
                summary.answer_crosses_boundary += usize::from(q.crosses_boundary);
                if q.question.positives() == 0 {
                    continue;
                }
                // Sentences of other articles may state the answer too: never negatives.
                let others = |wanted: usize| {
                    let allowed = |d: usize| {
                        let s = &sentences[d];
                        let pool =
                            split_of[s.article] == Split::Train || split_of[s.article] == split;
                        pool && s.article != p.article && !contains_answer(s.text, &q.answers)
                    };
                    index
                        .search(&q.question.text, wanted, allowed)
                        .into_iter()
                        .map(|(d, _)| sentences[d].candidate())
                        .collect::<Vec<_>>()
                };
                if split == Split::Train {
                    if q.crosses_boundary {
                        continue;
                    }
                    let mut list =
                        hardest_in_paragraph(&q.question, &bm25, args.paragraph_negatives);
                    list.candidates.extend(others(args.other_negatives));
                    lists.push(list);
                } else {
                    lists.push(q.question.clone());
                    let mut wide = q.question.clone();
                    wide.candidates.extend(others(args.eval_other));
                    other_lists.push(wide);
                    if let Some(answer) = q.answers.first() {
                        asks.push(
                            serde_json::json!({"question": q.question.text, "answer": answer}),
                        );
                    }
                }
            }
        }
        summary.articles = documents.len();
        summary.titles = documents.values().map(|d| d.0.clone()).collect();
        summary.listed_questions = lists.len();
        summary.listed_pairs = lists.iter().map(|q| q.candidates.len()).sum();
        let name = split.name();
        if split == Split::Train {
            write_questions(&args.out.join(format!("{name}.jsonl.gz")), &lists)?;
            continue;
        }
        write_questions(&args.out.join(format!("{name}.jsonl")), &lists)?;
        write_questions(&args.out.join(format!("{name}-x.jsonl")), &other_lists)?;
        ansel_data::shuffle_seeded(&mut asks, args.seed);
        asks.truncate(args.ask_questions);
        write_lines(&args.out.join(format!("{name}-ask.jsonl")), &asks)?;
        let docs: Vec<serde_json::Value> = documents
            .values()
            .map(|(title, texts)| document_line(title, texts))
            .collect();
        write_lines(&args.out.join(format!("{name}-docs.jsonl")), &docs)?;
    }
    let mut fingerprint = Fingerprint::default();
    fingerprint.update(&bytes);
    let summary = Summary {
        source: args.data.display().to_string(),
        source_fingerprint: format!("{:016x}", fingerprint.value()),
        seed: args.seed,
        paragraph_negatives: args.paragraph_negatives,
        other_negatives: args.other_negatives,
        eval_other: args.eval_other,
        ask_questions: args.ask_questions,
        splits: &summaries,
    };
    let json = serde_json::to_string_pretty(&summary)?;
    write_atomic(&args.out.join("split.json"), json.as_bytes())?;
    for (name, s) in &summaries {
        eprintln!(
            "{name}: {} articles, {} questions ({} answers cross a sentence boundary), {} lists, {} pairs",
            s.articles, s.questions, s.answer_crosses_boundary, s.listed_questions, s.listed_pairs
        );
    }
    Ok(())
}

/// Deals the articles into dev, test and train by a seeded hash of their titles: the same
/// split on every machine, whatever order the file lists them in.
fn article_splits(
    paragraphs: &[squad::SquadParagraph],
    articles: usize,
    args: &SquadSentArgs,
) -> Vec<Split> {
    let mut titles = vec![String::new(); articles];
    for p in paragraphs {
        titles[p.article].clone_from(&p.title);
    }
    let mut order: Vec<(u64, usize)> = titles
        .iter()
        .enumerate()
        .map(|(a, title)| {
            let mut f = Fingerprint::default();
            f.update(&args.seed.to_le_bytes()).update(title.as_bytes());
            (f.value(), a)
        })
        .collect();
    order.sort();
    let mut split_of = vec![Split::Train; articles];
    for (rank, &(_, a)) in order.iter().enumerate() {
        if rank < args.dev_articles {
            split_of[a] = Split::Dev;
        } else if rank < args.dev_articles + args.test_articles {
            split_of[a] = Split::Test;
        }
    }
    split_of
}

/// The question with its positives and its `negatives` in-paragraph negatives scoring highest
/// by BM25 (the hard ones), in document order.
fn hardest_in_paragraph(question: &Question, bm25: &Bm25, negatives: usize) -> Question {
    let query: HashSet<String> = ansel_text::content_words(&question.text)
        .into_iter()
        .collect();
    let mut ranked: Vec<(f32, usize)> = question
        .candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.label != Some(true))
        .map(|(i, c)| (bm25.score_text(&query, &c.text), i))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep: HashSet<usize> = ranked.iter().take(negatives).map(|r| r.1).collect();
    keep.extend(
        question
            .candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.label == Some(true))
            .map(|(i, _)| i),
    );
    Question {
        candidates: question
            .candidates
            .iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, c)| c.clone())
            .collect(),
        ..question.clone()
    }
}

/// A sentence of the collection and where it sits.
struct Sentence<'a> {
    text: &'a str,
    article: usize,
    title: &'a str,
    doc_id: &'a str,
    position: usize,
}

impl Sentence<'_> {
    /// The sentence as a negative candidate of another document's question.
    fn candidate(&self) -> Candidate {
        Candidate {
            id: format!("{}-{}", self.doc_id, self.position),
            text: self.text.to_string(),
            label: Some(false),
            context: Some(DocContext {
                doc_id: self.doc_id.to_string(),
                title: Some(self.title.to_string()),
                position: self.position,
                prev: None,
                next: None,
            }),
        }
    }
}

fn contains_answer(text: &str, answers: &[String]) -> bool {
    let text = text.to_lowercase();
    answers.iter().any(|a| text.contains(&a.to_lowercase()))
}

/// An article as a document for `ansel index`: its paragraphs in order, titled and named after it.
pub(crate) fn document_line(title: &str, paragraphs: &[&str]) -> serde_json::Value {
    serde_json::json!({"id": title, "title": title, "text": paragraphs.join("\n\n")})
}

pub(crate) fn write_lines(path: &Path, values: &[serde_json::Value]) -> Result<()> {
    let mut bytes = Vec::new();
    for v in values {
        serde_json::to_writer(&mut bytes, v)?;
        bytes.push(b'\n');
    }
    write_atomic(path, &bytes)?;
    Ok(())
}
