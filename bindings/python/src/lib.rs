//! The `ansel._ansel` extension module: [`Ranker`] scores a question's candidate texts with
//! any model spec the command line takes; [`Index`] adds documents to a sentence index and
//! answers questions over it. Rust runs with the GIL released; errors carry the command
//! line's messages (file, line, field).

use ansel::answering::{CascadeOptions, DEFAULT_KEEP, DEFAULT_RETRIEVE};
use ansel::indexing::{
    add_documents, add_files_with, check_files, open_index, writer_for, writer_with_precomputed,
    Progress,
};
use ansel::models;
use ansel_answer::retrieval::DEFAULT_FUSION_DEPTH;
use ansel_answer::{Answerer, Ask, Retrieval};
use ansel_data::Question;
use ansel_index::{Document, SentenceIndex, Unit};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pyo3::create_exception!(
    _ansel,
    AnselError,
    PyException,
    "An error from ansel: the same message the command line prints."
);

fn to_py(err: anyhow::Error) -> PyErr {
    AnselError::new_err(ansel::describe(&err))
}

/// A question over `texts`, in the form every ranker scores.
fn question(query: &str, texts: Vec<String>, in_document_order: bool) -> Question {
    Question::over_texts("q", query, texts, in_document_order)
}

/// Scores candidate texts for a question with one model: a built-in name (`wo-rr`, `bm25`,
/// ...), a model directory, the name of a model in `models/`, or several joined by `+`.
#[pyclass(frozen, module = "ansel")]
struct Ranker {
    ranker: Box<dyn ansel_model::Ranker>,
    model: String,
}

#[pymethods]
impl Ranker {
    #[new]
    #[pyo3(signature = (model = models::DEFAULT_MODEL, corpus = None))]
    fn new(py: Python<'_>, model: &str, corpus: Option<Vec<String>>) -> PyResult<Ranker> {
        if let (Some(name), None) = (models::corpus_member(model), &corpus) {
            return Err(AnselError::new_err(format!(
                "model {model:?}: {name} weighs words by corpus statistics; pass corpus=[...] \
                 (texts like those you will score, e.g. every candidate of your collection)"
            )));
        }
        let corpus = corpus
            .map(|texts| question("", texts, false))
            .into_iter()
            .collect::<Vec<_>>();
        let ranker = py
            .detach(|| models::resolve(model, &corpus))
            .map_err(to_py)?;
        Ok(Ranker {
            ranker,
            model: model.into(),
        })
    }

    /// The model spec this ranker was made from.
    #[getter]
    fn model(&self) -> &str {
        &self.model
    }

    /// One score per text, higher is better (scales differ between models).
    /// `in_document_order=True`: the texts are one document's sentences in order.
    #[pyo3(signature = (query, texts, in_document_order = false))]
    fn score(
        &self,
        py: Python<'_>,
        query: &str,
        texts: Vec<String>,
        in_document_order: bool,
    ) -> PyResult<Vec<f32>> {
        let question = question(query, texts, in_document_order);
        py.detach(|| self.ranker.score(&question))
            .map_err(|e| to_py(e.into()))
    }

    /// The texts' indices and scores, best first; `top_k` keeps the first k.
    #[pyo3(signature = (query, texts, top_k = None, in_document_order = false))]
    fn rank(
        &self,
        py: Python<'_>,
        query: &str,
        texts: Vec<String>,
        top_k: Option<usize>,
        in_document_order: bool,
    ) -> PyResult<Vec<(usize, f32)>> {
        let scores = self.score(py, query, texts, in_document_order)?;
        let mut ranked: Vec<(usize, f32)> = scores.into_iter().enumerate().collect();
        ranked.sort_by(|a, b| ansel_model::best_first(a.1, b.1).then(a.0.cmp(&b.0)));
        ranked.truncate(top_k.unwrap_or(usize::MAX));
        Ok(ranked)
    }

    /// Scores of many questions at once (`queries[i]` over `texts[i]`): the model batches
    /// across questions, as `ansel rank` does.
    #[pyo3(signature = (queries, texts, in_document_order = false))]
    fn score_batch(
        &self,
        py: Python<'_>,
        queries: Vec<String>,
        texts: Vec<Vec<String>>,
        in_document_order: bool,
    ) -> PyResult<Vec<Vec<f32>>> {
        if queries.len() != texts.len() {
            return Err(AnselError::new_err(format!(
                "score_batch: {} queries but {} lists of texts",
                queries.len(),
                texts.len()
            )));
        }
        let questions: Vec<Question> = queries
            .iter()
            .zip(texts)
            .map(|(q, t)| question(q, t, in_document_order))
            .collect();
        py.detach(|| self.ranker.score_all(&questions))
            .map_err(|e| to_py(e.into()))
    }

    fn __repr__(&self) -> String {
        format!("ansel.Ranker({:?})", self.model)
    }
}

/// The index as it stands: open for writing, or wrapped in the cascade that answers from it
/// (built on the first question after a change, so lexical statistics see every sentence).
enum State {
    Open(Arc<SentenceIndex>),
    /// The cascade over the index (whose retriever holds it too).
    Answering(Answerer, Arc<SentenceIndex>),
}

/// A sentence index on disk (opened, or created when missing) and the cascade that answers
/// questions from it: BM25 retrieves, a cheap model prunes, the answer model reranks.
#[pyclass(frozen, module = "ansel")]
struct Index {
    options: CascadeOptions,
    /// The sentence encoder that stores vectors of what is added (`dense=`); an index with
    /// vectors encodes with its own whatever this says.
    dense: Option<String>,
    state: Mutex<Option<State>>,
}

fn parse_retriever(name: &str) -> PyResult<Retrieval> {
    name.parse::<Retrieval>()
        .map_err(|e| AnselError::new_err(format!("retriever: {e}")))
}

impl Index {
    /// Runs `f` on the open index, leaving it open (the cascade is rebuilt on the next ask).
    fn writing<T>(&self, f: impl FnOnce(&SentenceIndex) -> anyhow::Result<T>) -> PyResult<T> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let index = match state.take() {
            Some(State::Open(index) | State::Answering(_, index)) => index,
            None => Arc::new(open_index(&self.options.index, None).map_err(to_py)?),
        };
        let result = f(&index);
        *state = Some(State::Open(index));
        result.map_err(to_py)
    }
}

#[pymethods]
impl Index {
    #[new]
    #[pyo3(signature = (path, model = models::DEFAULT_ASK_MODEL, prune_model = models::DEFAULT_PRUNE_MODEL, keep = DEFAULT_KEEP, retrieve = DEFAULT_RETRIEVE, unit = None, dense = None, retriever = "auto", fusion_depth = DEFAULT_FUSION_DEPTH, reader = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        model: &str,
        prune_model: &str,
        keep: usize,
        retrieve: usize,
        unit: Option<&str>,
        dense: Option<String>,
        retriever: &str,
        fusion_depth: usize,
        reader: Option<String>,
    ) -> PyResult<Index> {
        let unit = unit.map(parse_unit).transpose()?;
        let mut options = CascadeOptions::new(path, model, prune_model, keep, retrieve);
        options.retriever = CascadeOptions::parse_retriever(retriever)
            .map_err(|e| AnselError::new_err(format!("retriever: {e}")))?;
        options.fusion_depth = fusion_depth;
        options.reader = reader;
        // Each question may name its retriever when the index has vectors.
        options.dense_on_request = true;
        options.check().map_err(to_py)?;
        let index = py
            .detach(|| open_index(&options.index, unit))
            .map_err(to_py)?;
        Ok(Index {
            options,
            dense,
            state: Mutex::new(Some(State::Open(Arc::new(index)))),
        })
    }

    /// Adds documents (dicts with "id", "text" and optionally "title"; a document whose id is
    /// already indexed replaces it) and commits. Returns the sentences added.
    fn add(&self, py: Python<'_>, documents: &Bound<'_, PyList>) -> PyResult<usize> {
        let mut read = Vec::with_capacity(documents.len());
        for (i, item) in documents.iter().enumerate() {
            // As `ansel index` refuses a JSON line with fields it does not know.
            if let Ok(dict) = item.cast::<PyDict>() {
                for key in dict.keys() {
                    let key: String = key.extract().unwrap_or_default();
                    if !["id", "title", "text"].contains(&key.as_str()) {
                        return Err(AnselError::new_err(format!(
                            "documents[{i}]: unknown field {key:?} (a document is {{\"id\", \"title\", \"text\"}})"
                        )));
                    }
                }
            }
            let field = |name: &str, required: bool| -> PyResult<String> {
                let value = item.get_item(name).ok().filter(|v| !v.is_none());
                match value {
                    Some(v) => v.extract::<String>().map_err(|_| {
                        AnselError::new_err(format!("documents[{i}]: field {name:?} is not a string"))
                    }),
                    None if required => Err(AnselError::new_err(format!(
                        "documents[{i}]: missing field {name:?} (a document is {{\"id\", \"title\", \"text\"}})"
                    ))),
                    None => Ok(String::new()),
                }
            };
            read.push(Document {
                id: field("id", true)?,
                title: field("title", false)?,
                text: field("text", true)?,
            });
        }
        py.detach(|| {
            self.writing(|index| {
                add_documents(
                    index,
                    writer_for(index, self.dense.as_deref(), None)?,
                    &read,
                )
            })
        })
    }

    /// Adds every document under `paths` (.txt, .md, .jsonl files or folders of them), as
    /// `ansel index` does: bad input raises before the index changes, naming file and line.
    /// Returns {"documents", "sentences", "empty"}.
    /// `vectors`: files or folders of precomputed vectors (`Encoder.write_vectors`,
    /// `ansel.spark.encode_units`) of the index's encoder; a text they hold is not encoded again.
    #[pyo3(signature = (paths, commit_every = 1000, max_document_bytes = ansel_index::documents::DEFAULT_MAX_DOCUMENT_BYTES, vectors = None))]
    fn add_files<'py>(
        &self,
        py: Python<'py>,
        paths: Vec<PathBuf>,
        commit_every: usize,
        max_document_bytes: usize,
        vectors: Option<Vec<PathBuf>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (added, counts) = py.detach(|| {
            let checked = check_files(&paths, max_document_bytes).map_err(to_py)?;
            if commit_every == 0 {
                return Err(AnselError::new_err("commit_every must be at least 1"));
            }
            self.writing(|index| {
                let (writer, precomputed) = match &vectors {
                    None => (writer_for(index, self.dense.as_deref(), None)?, None),
                    Some(files) => {
                        let (writer, encoder) =
                            writer_with_precomputed(index, self.dense.as_deref(), None, files)?;
                        (writer, Some(encoder))
                    }
                };
                let added =
                    add_files_with(index, writer, &checked, commit_every, |_: Progress| {})?;
                Ok((added, precomputed.map(|e| e.counts())))
            })
        })?;
        let out = PyDict::new(py);
        out.set_item("documents", added.documents)?;
        out.set_item("sentences", added.sentences)?;
        out.set_item("empty", added.empty)?;
        if let Some((found, encoded)) = counts {
            out.set_item("vectors_found", found)?;
            out.set_item("vectors_encoded", encoded)?;
        }
        Ok(out)
    }

    /// The best `top_k` answer sentences with their context, best first: dicts with "text",
    /// "score", "stage", "title", "doc_id", "position", "prev", "next" and "span" (the words of
    /// "text" that answer: {"text", "start", "end", "score"}: `text[start:end]` is the span (offsets
    /// in characters, as Python indexes str; the JSON routes give bytes) and "score" the
    /// reader's probability; None without a span reader, beyond the first `spans` answers (1;
    /// each reading costs about 5 ms), or when the reader finds none). `budget_ms` bounds the reranking time (past it, the rest keep their pruned
    /// order).
    #[pyo3(signature = (question, top_k = 5, budget_ms = None, retriever = None, spans = ansel_answer::DEFAULT_SPANS))]
    fn ask<'py>(
        &self,
        py: Python<'py>,
        question: String,
        top_k: usize,
        budget_ms: Option<u64>,
        retriever: Option<&str>,
        spans: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        if top_k == 0 {
            return Err(AnselError::new_err("top_k must be at least 1"));
        }
        if question.trim().is_empty() {
            return Err(AnselError::new_err("question is empty"));
        }
        let retriever = retriever.map(parse_retriever).transpose()?;
        let answers = py.detach(|| {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let (answerer, index) = match state.take() {
                Some(State::Answering(answerer, index)) => (answerer, index),
                Some(State::Open(index)) => (
                    self.options.answerer_over(index.clone()).map_err(to_py)?,
                    index,
                ),
                None => {
                    let index = Arc::new(self.options.open_checked().map_err(to_py)?);
                    (
                        self.options.answerer_over(index.clone()).map_err(to_py)?,
                        index,
                    )
                }
            };
            let answers = answerer.ask(&Ask {
                question,
                top_k,
                budget: budget_ms.map(Duration::from_millis),
                retriever,
                spans,
            });
            *state = Some(State::Answering(answerer, index));
            answers.map_err(|e| to_py(e.into()))
        })?;
        let list = PyList::empty(py);
        for answer in answers.answers {
            let d = PyDict::new(py);
            let s = answer.sentence;
            d.set_item("text", &s.text)?;
            d.set_item("score", answer.score)?;
            d.set_item("stage", serde_stage(answer.stage))?;
            d.set_item("title", s.title)?;
            d.set_item("doc_id", s.doc_id)?;
            d.set_item("position", s.position)?;
            d.set_item("prev", s.prev)?;
            d.set_item("next", s.next)?;
            match answer.span {
                Some(span) => {
                    let chars = |byte: usize| s.text[..byte].chars().count();
                    let sd = PyDict::new(py);
                    sd.set_item("start", chars(span.start))?;
                    sd.set_item("end", chars(span.end))?;
                    sd.set_item("text", span.text)?;
                    sd.set_item("score", span.score)?;
                    d.set_item("span", sd)?;
                }
                None => d.set_item("span", py.None())?,
            }
            list.append(d)?;
        }
        Ok(list)
    }

    /// {"documents", "sentences", "unit"} of the index ("unit": "sentence" or "passage").
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = py.detach(|| self.writing(|index| Ok(index.stats()?)))?;
        let out = PyDict::new(py);
        out.set_item("documents", stats.documents)?;
        out.set_item("sentences", stats.sentences)?;
        let unit = py.detach(|| self.writing(|index| Ok(index.unit().name())))?;
        out.set_item("unit", unit)?;
        Ok(out)
    }

    /// The index folder.
    #[getter]
    fn path(&self) -> PathBuf {
        self.options.index.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "ansel.Index({:?})",
            self.options.index.display().to_string()
        )
    }
}

/// A sentence encoder (what `ansel index --dense MODEL` stores vectors with): encodes texts, or
/// writes their vectors to a file `ansel index --vectors` (and `Index.add_files(vectors=...)`)
/// takes instead of encoding them again, e.g. from many Spark executors.
#[pyclass(frozen, module = "ansel")]
struct Encoder {
    encoder: Arc<dyn ansel_index::Encoder>,
}

#[pymethods]
impl Encoder {
    #[new]
    fn new(py: Python<'_>, model: &str) -> PyResult<Encoder> {
        let encoder = py
            .detach(|| ansel::dense::load_encoder(model))
            .map_err(to_py)?;
        Ok(Encoder { encoder })
    }

    /// The encoder's name as an index records it.
    #[getter]
    fn model(&self) -> &str {
        self.encoder.model()
    }

    /// Components of each vector.
    #[getter]
    fn dim(&self) -> usize {
        self.encoder.dim()
    }

    /// One vector per text (not normalised).
    fn encode(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<f32>>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        py.detach(|| self.encoder.encode(&refs))
            .map_err(AnselError::new_err)
    }

    /// Writes the vectors of `texts` to `path` (a `.ansel-vectors` file, replaced only once it is
    /// complete), encoding `batch` texts at a time; returns the vectors written.
    #[pyo3(signature = (path, texts, batch = 32))]
    fn write_vectors(
        &self,
        py: Python<'_>,
        path: PathBuf,
        texts: Vec<String>,
        batch: usize,
    ) -> PyResult<u64> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        py.detach(|| {
            ansel_index::precomputed::write_file(&path, self.encoder.as_ref(), &refs, batch)
        })
        .map_err(|e| to_py(e.into()))
    }

    fn __repr__(&self) -> String {
        format!("Encoder({:?})", self.encoder.model())
    }
}

/// The texts `ansel index` makes of a document: its sentences, or with `unit="passage"` its
/// passages (as `Index(unit="passage")` holds them). The texts whose vectors an index stores.
#[pyfunction]
#[pyo3(signature = (text, title = String::new(), unit = "sentence"))]
fn units(text: String, title: String, unit: &str) -> PyResult<Vec<String>> {
    let unit = parse_unit(unit)?;
    let document = Document {
        id: String::new(),
        title,
        text,
    };
    Ok(ansel_index::unit_texts(&document, unit)
        .into_iter()
        .map(|(_, text)| text)
        .collect())
}

fn parse_unit(unit: &str) -> PyResult<Unit> {
    match unit {
        "sentence" => Ok(Unit::Sentence),
        "passage" => Ok(Unit::Passage),
        other => Err(AnselError::new_err(format!(
            "unit: {other:?} is not \"sentence\" or \"passage\""
        ))),
    }
}

/// A stage's name as the command line's JSON writes it.
fn serde_stage(stage: ansel_answer::Stage) -> String {
    match serde_json::to_value(stage) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{stage:?}").to_lowercase(),
    }
}

#[pymodule]
fn _ansel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Ranker>()?;
    m.add_class::<Index>()?;
    m.add_class::<Encoder>()?;
    m.add_function(wrap_pyfunction!(units, m)?)?;
    m.add("AnselError", m.py().get_type::<AnselError>())?;
    m.add("DEFAULT_MODEL", models::DEFAULT_MODEL)?;
    m.add("DEFAULT_ASK_MODEL", models::DEFAULT_ASK_MODEL)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
