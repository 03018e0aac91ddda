//! Dense vectors beside the index: kept in step with the records through later additions and
//! replacements, written atomically, and read back only when whole and from the index's model.

use crate::dense::{Encoder, VectorFormat};
use crate::{Document, IndexError, SentenceIndex};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Hashes each word into one of `dim` components (a bag of words); `seed` makes another model.
struct ToyEncoder {
    name: String,
    dim: usize,
    seed: u64,
    /// The size of every batch it was asked to encode.
    batches: Mutex<Vec<usize>>,
    /// Fails every call once set.
    broken: std::sync::atomic::AtomicBool,
}

impl ToyEncoder {
    fn new(name: &str, dim: usize, seed: u64) -> Arc<ToyEncoder> {
        Arc::new(ToyEncoder {
            name: name.into(),
            dim,
            seed,
            batches: Mutex::new(Vec::new()),
            broken: false.into(),
        })
    }

    fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0; self.dim];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let mut h = self.seed ^ 0xcbf2_9ce4_8422_2325;
            for b in word.to_lowercase().bytes() {
                h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
            v[(h % self.dim as u64) as usize] += 1.0;
        }
        v
    }
}

impl Encoder for ToyEncoder {
    fn model(&self) -> &str {
        &self.name
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("the encoder broke".into());
        }
        self.batches.lock().unwrap().push(texts.len());
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

fn doc(id: &str, text: &str) -> Document {
    Document {
        id: id.into(),
        title: id.to_uppercase(),
        text: text.into(),
    }
}

/// Adds `docs` through a dense writer (f32 vectors, the default graph policy) and commits.
fn add(index: &SentenceIndex, encoder: &Arc<ToyEncoder>, docs: &[Document]) {
    add_as(
        index,
        encoder,
        docs,
        VectorFormat::F32,
        crate::GraphPolicy::default(),
    );
}

fn add_as(
    index: &SentenceIndex,
    encoder: &Arc<ToyEncoder>,
    docs: &[Document],
    format: VectorFormat,
    policy: crate::GraphPolicy,
) {
    let mut writer = index.dense_writer(encoder.clone(), Some(format)).unwrap();
    writer.set_graph_policy(policy);
    for d in docs {
        writer.add(d).unwrap();
    }
    writer.commit().unwrap();
    index.reload().unwrap();
}

/// For every record, the record whose vector is nearest to the encoder's vector of its text:
/// (text, nearest text, cosine). Aligned vectors give each record itself at cosine 1.
fn nearest_to_each(index: &SentenceIndex, encoder: &ToyEncoder) -> Vec<(String, String, f32)> {
    let snapshot = index.snapshot();
    index
        .sentence_texts()
        .unwrap()
        .into_iter()
        .map(|text| {
            let found = snapshot.dense(&encoder.vector(&text), 1).unwrap();
            let hit = snapshot.hits(&found).unwrap().remove(0);
            (text, hit.sentence.text, hit.score)
        })
        .collect()
}

/// What checking the vectors of the index in `dir` says, opened afresh each time (an open index
/// keeps what it has read); `None` when they are whole.
fn vectors_error(dir: &Path) -> Option<String> {
    SentenceIndex::open(dir)
        .unwrap()
        .snapshot()
        .check_vectors()
        .err()
        .map(|e| e.to_string())
}

fn vector_files(dir: &Path) -> Vec<String> {
    files_starting(dir, "vectors-")
}

/// The names of the files in `dir` that start with `prefix`, sorted.
fn files_starting(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

#[test]
fn vectors_stay_in_step_when_documents_are_added_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let encoder = ToyEncoder::new("toy", 64, 1);
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    add(
        &index,
        &encoder,
        &[
            doc(
                "bees",
                "Bees make honey. Hives hold wax combs. Queens lay eggs.",
            ),
            doc("nile", "The Nile flows north. Floods came yearly."),
        ],
    );
    // A second batch in a second writer, replacing one document and adding another.
    let index = SentenceIndex::open(dir.path()).unwrap();
    add(
        &index,
        &encoder,
        &[
            doc("bees", "Drones do not sting. Workers gather nectar."),
            doc(
                "moon",
                "The moon orbits Earth. Tides follow it. Its dust is grey.",
            ),
        ],
    );
    let settings = index.dense_settings().unwrap().unwrap();
    // Every row ever written is kept (the replaced document's 3 rows stay, unused).
    assert_eq!(settings.count, 5 + 5);
    assert_eq!(settings.files.len(), 2);
    assert_eq!(
        vector_files(dir.path()),
        ["vectors-0000000000.vec", "vectors-0000000005.vec"]
    );
    let nearest = nearest_to_each(&index, &encoder);
    assert_eq!(nearest.len(), 7, "{nearest:?}");
    for (text, found, score) in &nearest {
        assert_eq!(text, found, "the vector of {text:?} is not its own");
        assert!((score - 1.0).abs() < 1e-5, "{text}: {score}");
    }
    // The replaced sentences are gone from dense search as from BM25.
    let snapshot = index.snapshot();
    let found = snapshot
        .dense(&encoder.vector("Bees make honey."), 20)
        .unwrap();
    let texts: Vec<String> = snapshot
        .hits(&found)
        .unwrap()
        .into_iter()
        .map(|h| h.sentence.text)
        .collect();
    assert_eq!(texts.len(), 7);
    assert!(!texts.iter().any(|t| t.contains("honey")), "{texts:?}");
    // A writer without the encoder is refused: its records would have no vectors.
    let err = index.writer().err().unwrap().to_string();
    assert!(
        err.contains("holds dense vectors of toy") && err.contains("--dense toy"),
        "{err}"
    );
}

#[test]
fn encoding_goes_in_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let encoder = ToyEncoder::new("toy", 32, 1);
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    let docs: Vec<Document> = (0..1300)
        .map(|i| doc(&format!("d{i}"), &format!("Sentence number {i} is here.")))
        .collect();
    add(&index, &encoder, &docs);
    let batches = encoder.batches.lock().unwrap().clone();
    // The probe, then batches of at most 512 texts (a batch closes after the document that fills it).
    assert_eq!(batches[0], 1);
    assert_eq!(batches[1..].iter().sum::<usize>(), 1300);
    assert!(batches[1..].iter().all(|&n| n <= 512), "{batches:?}");
    assert_eq!(batches.len(), 1 + 3, "{batches:?}");
    assert_eq!(index.dense_settings().unwrap().unwrap().count, 1300);
}

#[test]
fn truncated_corrupt_missing_or_foreign_vector_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let encoder = ToyEncoder::new("toy", 16, 1);
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    add(
        &index,
        &encoder,
        &[doc("a", "One sentence. Another one. A third.")],
    );
    drop(index);
    let file = dir.path().join("vectors-0000000000.vec");
    let good = std::fs::read(&file).unwrap();
    let check = || vectors_error(dir.path());
    assert_eq!(check(), None);

    std::fs::write(&file, &good[..good.len() - 10]).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("vectors-0000000000.vec") && err.contains("truncated"),
        "{err}"
    );
    std::fs::write(&file, &good[..20]).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("vectors-0000000000.vec") && err.contains("truncated"),
        "{err}"
    );

    let mut flipped = good.clone();
    let middle = flipped.len() - 30;
    flipped[middle] ^= 0x40;
    std::fs::write(&file, &flipped).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("vectors-0000000000.vec") && err.contains("corrupt"),
        "{err}"
    );

    // A file another model wrote (same rows and size) in its place.
    let other_dir = tempfile::tempdir().unwrap();
    let other = SentenceIndex::open_or_create(other_dir.path()).unwrap();
    add(
        &other,
        &ToyEncoder::new("ytt", 16, 2),
        &[doc("a", "One sentence. Another one. A third.")],
    );
    std::fs::copy(other_dir.path().join("vectors-0000000000.vec"), &file).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("vectors-0000000000.vec")
            && err.contains("from model \"ytt\"")
            && err.contains("another index or model"),
        "{err}"
    );

    std::fs::remove_file(&file).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("vectors-0000000000.vec") && err.contains("missing"),
        "{err}"
    );
    // Whole again, it reads.
    std::fs::write(&file, &good).unwrap();
    assert_eq!(check(), None);
}

#[test]
fn only_an_empty_index_takes_vectors_and_only_from_its_own_model() {
    let dir = tempfile::tempdir().unwrap();
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    let mut writer = index.writer().unwrap();
    writer
        .add(&doc("a", "Plain sentences. No vectors."))
        .unwrap();
    writer.commit().unwrap();
    drop(writer);
    let err = index
        .dense_writer(ToyEncoder::new("toy", 16, 1), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("cannot add dense vectors: it holds 2 sentences without vectors"),
        "{err}"
    );
    assert!(index.dense_settings().unwrap().is_none());
    let err = index
        .snapshot()
        .dense(&[1.0; 16], 3)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("has no dense vectors"), "{err}");

    let dense_dir = tempfile::tempdir().unwrap();
    let dense = SentenceIndex::open_or_create(dense_dir.path()).unwrap();
    add(
        &dense,
        &ToyEncoder::new("toy", 16, 1),
        &[doc("a", "Some text.")],
    );
    let other_model = dense
        .dense_writer(ToyEncoder::new("toy", 16, 7), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        other_model.contains("holds dense vectors of toy")
            && other_model.contains("encodes the probe sentence differently"),
        "{other_model}"
    );
    let other_dim = dense
        .dense_writer(ToyEncoder::new("wide", 32, 1), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        other_dim.contains("32-component vectors, the index holds 16-component ones"),
        "{other_dim}"
    );
    let other_format = dense
        .dense_writer(ToyEncoder::new("toy", 16, 1), Some(VectorFormat::Int8))
        .err()
        .unwrap()
        .to_string();
    assert!(
        other_format.contains("it stores f32 vectors, not int8"),
        "{other_format}"
    );
    // The same model under another name is the same model (the probe decides).
    assert!(dense
        .dense_writer(ToyEncoder::new("toy-again", 16, 1), None)
        .is_ok());
}

#[test]
fn failed_or_abandoned_writes_leave_the_last_commit_and_no_stray_files() {
    let dir = tempfile::tempdir().unwrap();
    let encoder = ToyEncoder::new("toy", 16, 1);
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    add(
        &index,
        &encoder,
        &[doc("a", "First commit. Two sentences.")],
    );

    add(&index, &encoder, &[doc("b", "Second commit.")]);
    assert_eq!(index.dense_settings().unwrap().unwrap().count, 3);
    // Dropped without a commit: nothing of it stays.
    let mut writer = index.dense_writer(encoder.clone(), None).unwrap();
    writer.add(&doc("c", "Dropped before its commit.")).unwrap();
    drop(writer);
    assert_eq!(
        vector_files(dir.path()).len(),
        2,
        "no temporary file is left"
    );

    // An encoder that fails: the commit fails, and records and vectors stay as committed.
    let mut writer = index.dense_writer(encoder.clone(), None).unwrap();
    writer.add(&doc("d", "Encoded by a broken model.")).unwrap();
    encoder
        .broken
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let err = writer.commit().err().unwrap().to_string();
    assert!(err.contains("encoder toy: the encoder broke"), "{err}");
    assert!(
        writer.add(&doc("e", "More.")).is_err(),
        "the writer is dead"
    );
    drop(writer);
    encoder
        .broken
        .store(false, std::sync::atomic::Ordering::SeqCst);
    index.reload().unwrap();
    assert_eq!(index.stats().unwrap().sentences, 3);
    assert_eq!(index.dense_settings().unwrap().unwrap().count, 3);
    assert!(nearest_to_each(&index, &encoder)
        .iter()
        .all(|(t, f, _)| t == f));

    // What a crash between writing a file and listing it leaves is removed by the next writer.
    std::fs::write(dir.path().join("vectors-0000000003.vec"), b"half").unwrap();
    std::fs::write(dir.path().join("vectors-0000000003.vec.tmp"), b"half").unwrap();
    let mut writer = index.dense_writer(encoder.clone(), None).unwrap();
    writer.add(&doc("f", "After the crash.")).unwrap();
    writer.commit().unwrap();
    index.reload().unwrap();
    assert_eq!(
        vector_files(dir.path()),
        [
            "vectors-0000000000.vec",
            "vectors-0000000002.vec",
            "vectors-0000000003.vec"
        ]
    );
    assert_eq!(index.dense_settings().unwrap().unwrap().count, 4);
    assert!(nearest_to_each(&index, &encoder)
        .iter()
        .all(|(t, f, _)| t == f));
}

#[test]
fn vectors_rewritten_as_f16_or_int8_find_the_same_records() {
    let encoder = ToyEncoder::new("toy", 64, 3);
    let docs = [
        doc(
            "bees",
            "Bees make honey. Hives hold wax combs. Queens lay eggs.",
        ),
        doc(
            "nile",
            "The Nile flows north. Floods came yearly. Farmers sowed after.",
        ),
    ];
    for format in [VectorFormat::F16, VectorFormat::Int8] {
        let dir = tempfile::tempdir().unwrap();
        let index = SentenceIndex::open_or_create(dir.path()).unwrap();
        add(&index, &encoder, &docs);
        index.rewrite_vectors(format).unwrap();
        let settings = index.dense_settings().unwrap().unwrap();
        assert_eq!((settings.format, settings.count), (format, 6));
        assert_eq!(vector_files(dir.path()).len(), 1);
        let index = SentenceIndex::open(dir.path()).unwrap();
        for (text, found, score) in nearest_to_each(&index, &encoder) {
            assert_eq!(text, found, "{format:?}");
            assert!((score - 1.0).abs() < 0.02, "{format:?} {text}: {score}");
        }
        if format == VectorFormat::Int8 {
            let err = index
                .rewrite_vectors(VectorFormat::F32)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("its vectors are int8"), "{err}");
        }
        // Documents added later are stored in the rewritten format.
        add_in(&index, &encoder, format);
        assert_eq!(index.dense_settings().unwrap().unwrap().count, 7);
        assert!(nearest_to_each(&index, &encoder)
            .iter()
            .all(|(t, f, _)| t == f));
    }
}

fn add_in(index: &SentenceIndex, encoder: &Arc<ToyEncoder>, format: VectorFormat) {
    let mut writer = index.dense_writer(encoder.clone(), Some(format)).unwrap();
    writer.add(&doc("late", "Late arrivals count.")).unwrap();
    writer.commit().unwrap();
    index.reload().unwrap();
}

#[test]
fn an_index_made_before_dense_vectors_opens_and_refuses_them_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let before_vectors = crate::index::Fields::schema_before_vectors().build();
    tantivy::Index::create_in_dir(dir.path(), before_vectors).unwrap();
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    let mut writer = index.writer().unwrap();
    writer
        .add(&doc("a", "Old indexes still take documents."))
        .unwrap();
    writer.commit().unwrap();
    index.reload().unwrap();
    assert_eq!(index.search("documents", 1).unwrap().len(), 1);
    let err = index
        .dense_writer(ToyEncoder::new("toy", 16, 1), None)
        .err()
        .unwrap();
    assert!(
        matches!(err, IndexError::CannotAddVectors { .. })
            && err.to_string().contains("made by an older ansel"),
        "{err}"
    );
}

/// `n` documents of `sentences` sentences each, made of words drawn from a small vocabulary.
fn wordy_docs(prefix: &str, n: usize, sentences: usize, seed: u64) -> Vec<Document> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = move |bound: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % bound
    };
    (0..n)
        .map(|d| {
            let text: Vec<String> = (0..sentences)
                .map(|_| {
                    let words: Vec<String> = (0..6).map(|_| format!("w{}", next(300))).collect();
                    format!("The {}.", words.join(" "))
                })
                .collect();
            doc(&format!("{prefix}{d}"), &text.join(" "))
        })
        .collect()
}

fn add_with_graph(
    index: &SentenceIndex,
    encoder: &Arc<ToyEncoder>,
    docs: &[Document],
    policy: crate::GraphPolicy,
) {
    add_as(index, encoder, docs, VectorFormat::Int8, policy);
}

fn graph_files(dir: &Path) -> Vec<String> {
    files_starting(dir, "graph-")
}

#[test]
fn the_graph_is_built_and_extended_at_commits_and_finds_what_the_exact_search_finds() {
    use crate::{DenseSearch, GraphPolicy};
    let dir = tempfile::tempdir().unwrap();
    let encoder = ToyEncoder::new("toy", 48, 3);
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    let policy = GraphPolicy { min_rows: 200 };
    let graph_rows = |index: &SentenceIndex| {
        index
            .dense_settings()
            .unwrap()
            .unwrap()
            .graph
            .map(|g| g.rows)
    };
    // 150 rows: too few for a graph.
    add_with_graph(&index, &encoder, &wordy_docs("a", 30, 5, 1), policy);
    assert_eq!(graph_rows(&index), None);
    // 400 rows: the graph of all of them.
    add_with_graph(&index, &encoder, &wordy_docs("b", 50, 5, 2), policy);
    assert_eq!(graph_rows(&index), Some(400));
    // 450: the 50 new rows are fewer than a quarter of the graph's, and are searched exactly.
    add_with_graph(&index, &encoder, &wordy_docs("c", 10, 5, 3), policy);
    assert_eq!(graph_rows(&index), Some(400));
    // 550: extended, and the graph it replaced is gone.
    add_with_graph(&index, &encoder, &wordy_docs("d", 20, 5, 4), policy);
    assert_eq!(graph_rows(&index), Some(550));
    assert_eq!(graph_files(dir.path()), vec!["graph-0000000550.hnsw"]);
    // A document replaced: its old rows stay in the graph, unused, and are never returned.
    let replaced = wordy_docs("a", 1, 5, 99);
    add_with_graph(&index, &encoder, &replaced, policy);
    assert_eq!(graph_rows(&index), Some(550));

    let snapshot = index.snapshot();
    let texts = index.sentence_texts().unwrap();
    assert_eq!(texts.len(), 550);
    let (mut same, mut asked) = (0, 0);
    for text in texts.iter().step_by(11) {
        let query = encoder.vector(text);
        let exact = snapshot.dense_with(&query, 10, DenseSearch::Exact).unwrap();
        let graph = snapshot
            .dense_with(&query, 10, DenseSearch::Approximate { expansion: 64 })
            .unwrap();
        assert_eq!(graph.len(), 10);
        // A row found either way has the same (exact) score.
        for found in &graph {
            if let Some(e) = exact.iter().find(|e| e.unit == found.unit) {
                assert!((e.score - found.score).abs() < 1e-6);
            }
        }
        // Toy vectors tie often: a row counts as found when it scores at least the exact
        // search's last.
        let last = exact.last().unwrap().score;
        same += graph.iter().filter(|g| g.score >= last - 1e-6).count();
        asked += exact.len();
        let hits = snapshot.hits(&graph).unwrap();
        assert!(hits.iter().all(|h| texts.contains(&h.sentence.text)));
    }
    assert!(
        same as f64 >= 0.9 * asked as f64,
        "the graph found {same} of the exact search's {asked}"
    );
}

#[test]
fn a_damaged_or_missing_graph_is_named_and_a_leftover_one_removed() {
    let dir = tempfile::tempdir().unwrap();
    let encoder = ToyEncoder::new("toy", 32, 5);
    let index = SentenceIndex::open_or_create(dir.path()).unwrap();
    let policy = crate::GraphPolicy { min_rows: 50 };
    add_with_graph(&index, &encoder, &wordy_docs("a", 20, 5, 7), policy);
    drop(index);
    let file = dir.path().join("graph-0000000100.hnsw");
    let good = std::fs::read(&file).unwrap();
    let check = || vectors_error(dir.path());
    assert_eq!(check(), None);
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x10;
    std::fs::write(&file, &flipped).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("graph-0000000100.hnsw") && err.contains("corrupt"),
        "{err}"
    );
    std::fs::write(&file, &good[..good.len() - 64]).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("graph-0000000100.hnsw") && err.contains("truncated"),
        "{err}"
    );
    std::fs::remove_file(&file).unwrap();
    let err = check().unwrap();
    assert!(
        err.contains("graph-0000000100.hnsw") && err.contains("missing"),
        "{err}"
    );
    std::fs::write(&file, &good).unwrap();
    assert_eq!(check(), None);

    // A graph a crash left unlisted (and its temporary) go when a writer opens.
    std::fs::write(dir.path().join("graph-0000000999.hnsw"), b"x").unwrap();
    std::fs::write(dir.path().join("graph-0000000999.hnsw.tmp"), b"x").unwrap();
    let index = SentenceIndex::open(dir.path()).unwrap();
    drop(index.dense_writer(encoder.clone(), None).unwrap());
    assert_eq!(graph_files(dir.path()), vec!["graph-0000000100.hnsw"]);
}

/// Texts of `docs` as the index splits them into sentences.
fn sentence_texts_of(docs: &[Document]) -> Vec<String> {
    docs.iter()
        .flat_map(crate::document_sentences)
        .map(|s| s.text)
        .collect()
}

#[test]
fn precomputed_vectors_are_stored_and_only_the_missing_texts_encoded() {
    use crate::precomputed::{write_file, PrecomputedVectors, WithPrecomputed};
    let dir = tempfile::tempdir().unwrap();
    let docs = wordy_docs("d", 6, 4, 3);
    let texts = sentence_texts_of(&docs);
    // Vectors of the first four documents' sentences made "elsewhere", in two files.
    let elsewhere = ToyEncoder::new("toy", 32, 1);
    let made = sentence_texts_of(&docs[..4]);
    let (a, b) = made.split_at(made.len() / 2);
    for (name, part) in [("a", a), ("b", b)] {
        let part: Vec<&str> = part.iter().map(String::as_str).collect();
        let path = dir.path().join(format!("{name}.ansel-vectors"));
        assert_eq!(
            write_file(&path, elsewhere.as_ref(), &part, 5).unwrap(),
            part.len() as u64
        );
    }
    let vectors = PrecomputedVectors::open(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(vectors.len(), made.len());
    let here = ToyEncoder::new("toy", 32, 1);
    let encoder = Arc::new(WithPrecomputed::new(vectors, here.clone()).unwrap());
    let index = SentenceIndex::open_or_create(&dir.path().join("index")).unwrap();
    let mut writer = index
        .dense_writer(encoder.clone(), Some(VectorFormat::F32))
        .unwrap();
    for d in &docs {
        writer.add(d).unwrap();
    }
    writer.commit().unwrap();
    index.reload().unwrap();
    let missing = texts.len() - made.len();
    assert_eq!(encoder.counts(), (made.len() as u64, missing as u64));
    // The encoder here saw the probe and the last two documents' sentences, nothing else.
    let seen: usize = here.batches.lock().unwrap().iter().sum();
    assert_eq!(
        seen,
        missing + 2,
        "probe twice (files' check, index's) + missing"
    );
    for (text, nearest, score) in nearest_to_each(&index, &here) {
        assert!(score > 0.999, "{text:?} found {nearest:?} at {score}");
    }
}

#[test]
fn precomputed_files_damaged_or_from_another_model_are_named() {
    use crate::precomputed::{write_file, PrecomputedVectors, WithPrecomputed};
    let dir = tempfile::tempdir().unwrap();
    let texts = ["one sentence here.", "another sentence there."];
    let path = dir.path().join("a.ansel-vectors");
    write_file(&path, ToyEncoder::new("toy", 16, 1).as_ref(), &texts, 8).unwrap();
    let open =
        |paths: &[std::path::PathBuf]| PrecomputedVectors::open(paths).err().unwrap().to_string();
    // Another model's encoder is refused, naming the file.
    let vectors = PrecomputedVectors::open(std::slice::from_ref(&path)).unwrap();
    let err = WithPrecomputed::new(vectors, ToyEncoder::new("other", 16, 2))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("a.ansel-vectors") && err.contains("not the encoder other"),
        "{err}"
    );
    // Two files of different models.
    let other = dir.path().join("b.ansel-vectors");
    write_file(&other, ToyEncoder::new("other", 16, 2).as_ref(), &texts, 8).unwrap();
    let err = open(&[path.clone(), other.clone()]);
    assert!(
        err.contains("b.ansel-vectors") && err.contains("as the first file"),
        "{err}"
    );
    std::fs::remove_file(&other).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // A flipped byte in a row, a cut end, a file of something else.
    let mut flipped = bytes.clone();
    let at = bytes.len() - 30;
    flipped[at] ^= 1;
    std::fs::write(&path, &flipped).unwrap();
    assert!(open(std::slice::from_ref(&path)).contains("checksum"));
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    assert!(open(std::slice::from_ref(&path)).contains("truncated"));
    std::fs::write(&path, b"{\"id\": \"x\"}\n").unwrap();
    let err = open(std::slice::from_ref(&path));
    assert!(
        err.contains("a.ansel-vectors") && err.contains("not a file of precomputed vectors"),
        "{err}"
    );
    // A folder without any.
    std::fs::remove_file(&path).unwrap();
    assert!(open(&[dir.path().to_path_buf()]).contains("no .ansel-vectors file"));
}

/// Encodes like `inner` for its first `calls` calls, then fails.
struct FailsAfter {
    inner: Arc<ToyEncoder>,
    calls: std::sync::atomic::AtomicUsize,
}

impl Encoder for FailsAfter {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let left = self.calls.load(std::sync::atomic::Ordering::SeqCst);
        if left == 0 {
            return Err("the encoder broke".into());
        }
        self.calls
            .store(left - 1, std::sync::atomic::Ordering::SeqCst);
        self.inner.encode(texts)
    }
}

#[test]
fn a_vectors_file_that_fails_half_way_leaves_the_old_one_and_no_temporary() {
    use crate::precomputed::{write_file, PrecomputedVectors};
    let dir = tempfile::tempdir().unwrap();
    let texts = ["one.", "two.", "three.", "four."];
    let path = dir.path().join("a.ansel-vectors");
    write_file(
        &path,
        ToyEncoder::new("toy", 16, 1).as_ref(),
        &texts[..1],
        8,
    )
    .unwrap();
    let before = std::fs::read(&path).unwrap();
    // The probe and the first batch of two are encoded, the second batch fails.
    let failing = FailsAfter {
        inner: ToyEncoder::new("toy", 16, 1),
        calls: 2.into(),
    };
    let err = write_file(&path, &failing, &texts, 2)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the encoder broke") && err.contains("a.ansel-vectors"),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["a.ansel-vectors"]);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(PrecomputedVectors::open(std::slice::from_ref(&path)).is_ok());
}
