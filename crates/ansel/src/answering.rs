//! The cascade that answers questions over an index: a retriever (BM25, the index's dense
//! vectors, or both fused) finds sentences, a cheap model prunes them, the answer model reranks
//! the rest (shared by `ask`, `serve` and the Python package).

use crate::models;
use ansel_answer::calibration::Calibration;
use ansel_answer::retrieval::DEFAULT_FUSION_DEPTH;
use ansel_answer::{AnswerReader, Answerer, Cascade, IndexRetriever, Retrieval};
use ansel_data::Question;
use ansel_index::{IndexError, SentenceIndex};
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Candidates the reranker scores between two checks of the time budget.
const RERANK_CHUNK: usize = 8;

/// Candidates the pruning model sends on to the reranker, unless told otherwise; chosen on dev
/// with the default models under the latency bound (docs/results/general-reranker.md, "Inside
/// ask": the general student keeps 3 of 16 where its AS2-only predecessor kept 2 of 20).
pub const DEFAULT_KEEP: usize = 3;

/// Sentences BM25 retrieves per question, unless told otherwise.
pub const DEFAULT_RETRIEVE: usize = 16;

/// The file in a model directory holding the model's own calibration (`ansel calibrate --out`).
pub const CALIBRATION_FILE: &str = "calibration.json";

/// The calibration of the answer model `model` that `ask`, `eval-ask` and `serve` use: the file
/// given (`none`: no calibration; a file fitted for another model is refused), else the one the
/// model's directory carries ([`CALIBRATION_FILE`]), else none.
pub fn calibration_for(model: &str, file: Option<&Path>) -> Result<Option<Calibration>> {
    match file {
        Some(path) if path.as_os_str() == "none" => Ok(None),
        Some(path) => Calibration::read_for(path, model).map(Some),
        None => match models::model_dir(model) {
            Ok(dir) if dir.join(CALIBRATION_FILE).is_file() => {
                Calibration::read(&dir.join(CALIBRATION_FILE)).map(Some)
            }
            _ => Ok(None),
        },
    }
}

/// The span reader `spec` (path or name) with its calibration: the directory's
/// [`CALIBRATION_FILE`] (fitted by `ansel eval-reader --calibrate`), else the logistic of the
/// margin over "no span", a span shown when the reader prefers it (always, for a reader not
/// trained to say "no span").
pub fn answer_reader(spec: &str) -> Result<AnswerReader> {
    let (reader, dir) = models::span_reader(spec).context("span reader")?;
    // The rule baseline has no folder, so no calibration file.
    let file = (!dir.as_os_str().is_empty()).then(|| dir.join(CALIBRATION_FILE));
    let calibration = if let Some(file) = file.filter(|f| f.is_file()) {
        Calibration::read(&file)?
    } else {
        Calibration {
            model: spec.to_string(),
            platt: ansel_answer::calibration::Platt::IDENTITY,
            abstain_below: if reader.settings().no_span { 0.5 } else { 0.0 },
            fitted_on: Vec::new(),
            dev: serde_json::Value::Null,
        }
    };
    Ok(AnswerReader::new(reader, calibration))
}

/// The reader option of `ask`, `serve` and the Python package: `none` turns spans off; the
/// default reader is used when it is installed, and is silently absent otherwise.
pub fn optional_reader(spec: Option<&str>) -> Result<Option<AnswerReader>> {
    match spec {
        Some("none") => Ok(None),
        Some(spec) => answer_reader(spec).map(Some),
        None if models::model_dir(models::DEFAULT_READER).is_ok() => {
            answer_reader(models::DEFAULT_READER).map(Some)
        }
        None => Ok(None),
    }
}

/// Which index to answer from and how the cascade ranks what it retrieves.
#[derive(Debug, Clone)]
pub struct CascadeOptions {
    /// Index folder, made by `ansel index`.
    pub index: PathBuf,
    /// Model that orders the final answers (any model spec).
    pub model: String,
    /// Cheap model that prunes the retrieved sentences first; `none` skips pruning.
    pub prune_model: String,
    /// Candidates the pruning model sends on to the reranker (the others stay below, in its order).
    pub keep: usize,
    /// Sentences retrieved from the index per question.
    pub retrieve: usize,
    /// How they are retrieved (dense and hybrid need an index made with vectors); `None`
    /// (`auto`): hybrid when the index has vectors, else BM25.
    pub retriever: Option<Retrieval>,
    /// Sentences BM25 and the dense retriever each put into a hybrid fusion.
    pub fusion_depth: usize,
    /// Load the index's sentence encoder whenever it has vectors, so that each question may
    /// choose its retriever (`serve`); otherwise only when `retriever` needs it.
    pub dense_on_request: bool,
    /// The span reader ([`optional_reader`]: a path or name, `none`, or `None` for the default
    /// when installed).
    pub reader: Option<String>,
}

impl CascadeOptions {
    /// Refuses a cascade that would keep or retrieve nothing.
    pub fn check(&self) -> Result<()> {
        if self.keep == 0 || self.retrieve == 0 {
            bail!("keep and retrieve must be at least 1");
        }
        if self.fusion_depth == 0 {
            bail!("fusion depth must be at least 1");
        }
        Ok(())
    }

    /// The options of `ask` for an index (the `auto` retriever, the default models).
    pub fn new(
        index: PathBuf,
        model: &str,
        prune_model: &str,
        keep: usize,
        retrieve: usize,
    ) -> Self {
        CascadeOptions {
            index,
            model: model.into(),
            prune_model: prune_model.into(),
            keep,
            retrieve,
            retriever: None,
            fusion_depth: DEFAULT_FUSION_DEPTH,
            dense_on_request: false,
            reader: None,
        }
    }

    /// Parses a retriever's name: `auto` (None) or one of [`Retrieval::NAMES`].
    pub fn parse_retriever(name: &str) -> std::result::Result<Option<Retrieval>, String> {
        match name {
            "auto" => Ok(None),
            other => other.parse().map(Some),
        }
    }

    /// The retriever over `index`: refused, before any model loads, when it needs vectors the
    /// index lacks; with the index's encoder when it is needed (or may be asked for).
    pub fn retriever(&self, index: Arc<SentenceIndex>) -> Result<IndexRetriever> {
        let has_vectors = index.dense_settings()?.is_some();
        // Hybrid found the answer sentence more often than BM25 alone on large indexes, at a
        // latency within the default's bound (docs/results/dense-retrieval.md).
        let kind = self.retriever.unwrap_or(if has_vectors {
            Retrieval::Hybrid
        } else {
            Retrieval::Bm25
        });
        if kind.needs_vectors() && !has_vectors {
            return Err(IndexError::NoVectors(index.dir().to_path_buf()).into());
        }
        let encoder = if kind.needs_vectors() || (self.dense_on_request && has_vectors) {
            Some(crate::dense::query_encoder(&index)?)
        } else {
            None
        };
        let offers_dense = encoder.is_some();
        let retriever = IndexRetriever::new(index.clone(), kind, encoder, self.fusion_depth)?;
        if offers_dense {
            // Read and check the vectors now: a bad file stops the start, not a later question.
            index.snapshot().check_vectors()?;
        }
        Ok(retriever)
    }

    /// Opens the index, checks its files (a damaged one stops here, named, instead of giving
    /// wrong answers later: `SentenceIndex::check`; the vectors are checked when a retriever that
    /// reads them is offered, below) and builds the cascade; lexical models take their term
    /// statistics from every sentence in the index.
    pub fn answerer(&self) -> Result<Answerer> {
        self.answerer_over(Arc::new(self.open_checked()?))
    }

    /// The index, opened and its files checked (a damaged one is an error naming the file).
    pub fn open_checked(&self) -> Result<SentenceIndex> {
        let index = SentenceIndex::open(&self.index)?;
        index.check(false)?;
        Ok(index)
    }

    /// The cascade over an index already open (one that is being written to, say).
    pub fn answerer_over(&self, index: Arc<SentenceIndex>) -> Result<Answerer> {
        self.check()?;
        let retriever = self.retriever(index.clone())?;
        // Only lexical models that weigh words by corpus statistics read every text of the
        // index (10M sentences would hold gigabytes in memory for models that never look).
        let needs_corpus = [self.prune_model.as_str(), self.model.as_str()]
            .into_iter()
            .any(|spec| models::corpus_member(spec).is_some());
        let corpus = if needs_corpus {
            vec![Question::over_texts(
                "index",
                "",
                index.sentence_texts()?,
                false,
            )]
        } else {
            Vec::new()
        };
        let prune = match self.prune_model.as_str() {
            "none" => None,
            spec => Some((
                models::resolve(spec, &corpus).context("prune model")?,
                self.keep,
            )),
        };
        let rerank = models::resolve(&self.model, &corpus).context("answer model")?;
        let reader = optional_reader(self.reader.as_deref())?;
        Ok(Answerer {
            retriever: Box::new(retriever),
            cascade: Cascade {
                retrieve: self.retrieve,
                prune,
                rerank,
                rerank_chunk: RERANK_CHUNK,
            },
            reader,
        })
    }
}

/// A question and the phrases its answer sentence may contain: one reference (`answer`) or
/// several (`answers`, as SQuAD's dev set gives three annotators'). A sentence holding any of
/// them answers the question, and a span scores its best match, as SQuAD's evaluation scores.
pub struct Labelled {
    pub question: String,
    pub answers: Vec<String>,
}

/// A line as written: exactly one of `answer` and `answers`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelledLine {
    question: String,
    answer: Option<String>,
    answers: Option<Vec<String>>,
}

impl LabelledLine {
    /// The references, or the field at fault and why.
    fn into_labelled(self) -> std::result::Result<Labelled, String> {
        let answers = match (self.answer, self.answers) {
            (Some(answer), None) => {
                if answer.trim().is_empty() {
                    return Err("field `answer`: empty".into());
                }
                vec![answer]
            }
            (None, Some(answers)) => {
                if answers.is_empty() {
                    return Err("field `answers`: no answer".into());
                }
                if let Some(i) = answers.iter().position(|a| a.trim().is_empty()) {
                    return Err(format!("field `answers[{i}]`: empty"));
                }
                answers
            }
            (Some(_), Some(_)) => return Err("fields `answer` and `answers`: give one".into()),
            (None, None) => return Err("missing field `answer` (or `answers`)".into()),
        };
        Ok(Labelled {
            question: self.question,
            answers,
        })
    }
}

/// Reads JSON lines of `{"question", "answer"}` or `{"question", "answers": [...]}`; errors name
/// the file, line and field.
pub fn read_labelled(path: &Path) -> Result<Vec<Labelled>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut labelled = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let item = serde_json::from_str::<serde_json::Value>(line)
            .map_err(|e| e.to_string())
            .and_then(|value| ansel_model::json::from_value::<LabelledLine>(value, ""))
            .and_then(LabelledLine::into_labelled)
            .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        labelled.push(item);
    }
    if labelled.is_empty() {
        bail!("{}: no questions", path.display());
    }
    Ok(labelled)
}
