//! The sentence index: one tantivy document per sentence, searched with BM25, and optionally
//! a dense vector per sentence beside it ([`crate::dense`]).

use crate::dense::{self, DenseSettings, DenseStore, Encoder, FileWriter, Query, VectorFormat};
use crate::graph::{self, DenseSearch, GraphPolicy};
use crate::sentences::{unit_texts, Unit};
use crate::{Document, IndexError, SentenceRecord};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{QueryParser, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, INDEXED, STORED,
    STRING,
};
use tantivy::TantivyError;
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term,
};

/// Title words count for less than sentence words when searching.
const TITLE_BOOST: f32 = 0.5;
/// Memory the writer may buffer before it flushes a segment.
const WRITER_MEMORY_BYTES: usize = 50_000_000;

/// The file beside tantivy's that records what an index's records are (absent: sentences, as
/// every index made before passages existed).
pub(crate) const SETTINGS_FILE: &str = "ansel-index.json";

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Settings {
    #[serde(default)]
    unit: Unit,
    /// The dense vectors beside the index, when it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dense: Option<DenseSettings>,
}

impl Settings {
    /// The settings of the index in `dir` as they are on disk now (none: an index made before
    /// the file existed holds sentences).
    fn read(dir: &Path) -> Result<Settings, IndexError> {
        let path = dir.join(SETTINGS_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str::<Settings>(&text)
                .map_err(|e| IndexError::malformed(&path, e.line(), e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(IndexError::io(&path, e)),
        }
    }

    /// Replaces the file atomically (a temporary file renamed over it).
    fn write(&self, dir: &Path) -> Result<(), IndexError> {
        let tmp = dir.join(format!(".{SETTINGS_FILE}.tmp"));
        let json = serde_json::to_string(self).expect("settings serialize");
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut file, json.as_bytes())?;
            file.sync_all()
        };
        write().map_err(|e| IndexError::io(&tmp, e))?;
        std::fs::rename(&tmp, dir.join(SETTINGS_FILE)).map_err(|e| IndexError::io(dir, e))?;
        dense::sync_dir(dir);
        Ok(())
    }
}

/// The fast field holding each record's vector row (indexes made before dense vectors lack it).
const ROW_FIELD: &str = "row";

/// Units encoded together when indexing with vectors: enough to sort them by length into
/// batches with little padding, few enough to keep memory small.
const ENCODE_BATCH: usize = 512;

/// Free space below which a failed write is put down to a full disk.
const LOW_SPACE_BYTES: u64 = 2 * WRITER_MEMORY_BYTES as u64;

#[derive(Clone, Copy)]
pub(crate) struct Fields {
    doc_id: Field,
    title: Field,
    position: Field,
    text: Field,
    prev: Field,
    next: Field,
    /// Absent in indexes made before dense vectors.
    row: Option<Field>,
}

impl Fields {
    fn schema() -> Schema {
        let mut builder = Self::schema_before_vectors();
        builder.add_u64_field(ROW_FIELD, FAST);
        builder.build()
    }

    /// The fields of indexes made before dense vectors (no `row`).
    pub(crate) fn schema_before_vectors() -> tantivy::schema::SchemaBuilder {
        let stemmed = TextOptions::default()
            .set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("en_stem")
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            )
            .set_stored();
        let mut builder = Schema::builder();
        builder.add_text_field("doc_id", STRING | STORED);
        builder.add_text_field("title", stemmed.clone());
        builder.add_u64_field("position", INDEXED | STORED);
        builder.add_text_field("text", stemmed);
        builder.add_text_field("prev", STORED);
        builder.add_text_field("next", STORED);
        builder
    }

    fn of(schema: &Schema) -> Option<Fields> {
        let field = |name| schema.get_field(name).ok();
        Some(Fields {
            doc_id: field("doc_id")?,
            title: field("title")?,
            position: field("position")?,
            text: field("text")?,
            prev: field("prev")?,
            next: field("next")?,
            row: schema.get_field(ROW_FIELD).ok(),
        })
    }
}

/// A sentence found by a search, with its score (BM25, the cosine of its vector with the
/// question's, or a fusion of ranks).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub score: f32,
    pub sentence: SentenceRecord,
}

/// Counts of what an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexStats {
    pub documents: u64,
    pub sentences: u64,
}

/// The file a tantivy error could not read (a damaged footer, say), named as `check` names
/// damage.
fn unreadable_file(dir: &Path, error: &TantivyError) -> Option<String> {
    match error {
        TantivyError::OpenReadError(tantivy::directory::error::OpenReadError::IoError {
            io_error,
            filepath,
        }) => Some(format!(
            "{} (cannot be read: {io_error})",
            dir.join(filepath).display()
        )),
        _ => None,
    }
}

/// One of the index's JSON files, parsed; when it cannot be read or parsed, its damage named as
/// `check` names it ("PATH (why)").
fn read_index_json(path: &Path) -> Result<serde_json::Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{} ({e})", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{} (not valid JSON: {e})", path.display()))
}

/// The segment files of `index` (in `dir`) whose checksums fail, or the one that cannot be read,
/// named as damage; tantivy's error when the check itself fails otherwise.
fn damaged_segment_files(dir: &Path, index: &Index) -> Result<Vec<String>, TantivyError> {
    match index.validate_checksum() {
        Ok(files) => {
            let mut files: Vec<String> = files
                .into_iter()
                .map(|f| format!("{} (checksum mismatch)", dir.join(f).display()))
                .collect();
            files.sort();
            Ok(files)
        }
        Err(e) => unreadable_file(dir, &e).map(|file| vec![file]).ok_or(e),
    }
}

/// An on-disk sentence index. Readers see the last commit; writers add
/// documents through [`SentenceIndex::writer`].
pub struct SentenceIndex {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    query_parser: QueryParser,
    unit: Unit,
    dense: Mutex<DenseStore>,
}

impl SentenceIndex {
    /// Opens the index in `dir`, creating the folder and an empty index when
    /// there is none. A folder that holds other files is refused, so an index
    /// never spills into, say, the documents' own folder.
    pub fn open_or_create(dir: &Path) -> Result<SentenceIndex, IndexError> {
        if dir.exists() && !dir.is_dir() {
            return Err(IndexError::io(
                dir,
                std::io::Error::other("a file, not a folder; give the index a folder of its own"),
            ));
        }
        // The index's own folder is created, not the folders above it: a typo in a parent
        // path is an error, not a new tree.
        if !dir.exists() {
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(parent) = parent.filter(|p| !p.is_dir()) {
                return Err(IndexError::io(
                    dir,
                    std::io::Error::other(format!(
                        "cannot create the index: its parent folder {} does not exist",
                        parent.display()
                    )),
                ));
            }
            match std::fs::create_dir(dir) {
                // Another writer made it since: the folder is all that was asked for.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
                made => made.map_err(|e| IndexError::io(dir, e))?,
            }
        }
        let has_files = std::fs::read_dir(dir)
            .map_err(|e| IndexError::io(dir, e))?
            .next()
            .is_some();
        if has_files && !dir.join("meta.json").is_file() && !Self::being_created(dir)? {
            return Err(IndexError::NotEmpty(dir.to_path_buf()));
        }
        let directory = || {
            tantivy::directory::MmapDirectory::open(dir)
                .map_err(|e| IndexError::tantivy(dir, e.into()))
        };
        // An existing index keeps its schema (one made before dense vectors has no `row`).
        let opened = if has_files {
            Index::open(directory()?)
        } else {
            match Index::create(directory()?, Fields::schema(), Default::default()) {
                // Another writer created it since the folder was read: open theirs.
                Err(TantivyError::IndexAlreadyExists) => Index::open(directory()?),
                created => created,
            }
        };
        let index = opened.map_err(|e| Self::opening_failed(dir, None, e))?;
        Self::from_index(dir, index)
    }

    /// Whether the files in `dir` (which has no `meta.json`) are those of an index another
    /// process is creating right now: only the index's own files, and `meta.json` appears within
    /// a second. Without this, a writer racing another on a new folder took the first one's
    /// files for somebody else's.
    fn being_created(dir: &Path) -> Result<bool, IndexError> {
        // Tantivy's lock files, `.managed.json` and its atomic writes' `.tmp*` files are hidden.
        let own = |name: &str| name.starts_with('.') || name == SETTINGS_FILE;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            let names: Vec<String> = std::fs::read_dir(dir)
                .map_err(|e| IndexError::io(dir, e))?
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect();
            if names.iter().any(|name| name == "meta.json") {
                return Ok(true);
            }
            if !names.iter().all(|name| own(name)) || std::time::Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Opens the index in `dir` as [`open_or_create`](Self::open_or_create) does, holding `unit`s:
    /// a new (or still empty) index is set to hold them; one that holds the other unit is refused.
    pub fn open_or_create_with(dir: &Path, unit: Unit) -> Result<SentenceIndex, IndexError> {
        let mut index = Self::open_or_create(dir)?;
        if index.unit == unit {
            return Ok(index);
        }
        if index.stats()?.documents > 0 {
            return Err(IndexError::UnitMismatch {
                path: dir.to_path_buf(),
                has: index.unit.name(),
                asked: unit.name(),
            });
        }
        let mut settings = Settings::read(dir)?;
        settings.unit = unit;
        settings.write(dir)?;
        index.unit = unit;
        Ok(index)
    }

    /// What each record of this index is: a sentence or a passage.
    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// Opens an existing index; a folder without one is an error that says so.
    pub fn open(dir: &Path) -> Result<SentenceIndex, IndexError> {
        if !dir.join("meta.json").is_file() {
            return Err(IndexError::NotAnIndex(dir.to_path_buf()));
        }
        let index = Index::open_in_dir(dir).map_err(|e| Self::opening_failed(dir, None, e))?;
        Self::from_index(dir, index)
    }

    /// Why `dir` could not be opened: the damaged files when a check finds some (`meta.json` or
    /// `.managed.json` that does not parse; segment files that cannot be read or whose checksums
    /// fail, when `index` got that far), else tantivy's own error.
    fn opening_failed(dir: &Path, index: Option<&Index>, error: TantivyError) -> IndexError {
        let mut damaged: Vec<String> = ["meta.json", ".managed.json"]
            .into_iter()
            .filter_map(|name| read_index_json(&dir.join(name)).err())
            .collect();
        if let Some(Ok(files)) = index.map(|index| damaged_segment_files(dir, index)) {
            damaged.extend(files);
        }
        damaged.extend(unreadable_file(dir, &error));
        damaged.dedup();
        if damaged.is_empty() {
            IndexError::tantivy(dir, error)
        } else {
            IndexError::Damaged {
                path: dir.to_path_buf(),
                files: damaged,
            }
        }
    }

    fn from_index(dir: &Path, index: Index) -> Result<SentenceIndex, IndexError> {
        let fields =
            Fields::of(&index.schema()).ok_or_else(|| IndexError::NotAnIndex(dir.to_path_buf()))?;
        // Readers open every segment's fast fields: a damaged file fails here, before `check`.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()
            .map_err(|e| Self::opening_failed(dir, Some(&index), e))?;
        let mut query_parser = QueryParser::for_index(&index, vec![fields.text, fields.title]);
        query_parser.set_field_boost(fields.title, TITLE_BOOST);
        let unit = Settings::read(dir)?.unit;
        Ok(SentenceIndex {
            dir: dir.to_path_buf(),
            index,
            reader,
            fields,
            query_parser,
            unit,
            dense: Mutex::new(DenseStore::default()),
        })
    }

    /// The folder the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What is wrong with tantivy's list of the files it manages (`.managed.json`, `list`):
    /// every file of the searched segments must be on it, or a later merge may lose track of it.
    fn unlisted_files(&self, list: &serde_json::Value) -> Option<String> {
        let Some(listed) = list.as_array() else {
            return Some("not a list of file names".into());
        };
        let listed: std::collections::HashSet<&str> =
            listed.iter().filter_map(|v| v.as_str()).collect();
        let searcher = self.reader.searcher();
        let mut missing: Vec<String> = Vec::new();
        for segment in searcher.segment_readers() {
            let id = segment.segment_id().uuid_string();
            for entry in std::fs::read_dir(&self.dir).ok()?.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(&id) && !listed.contains(name.as_str()) {
                    missing.push(name);
                }
            }
        }
        missing.sort();
        (!missing.is_empty()).then(|| format!("does not list {}", missing.join(", ")))
    }

    /// Checks every file of the index against what was written: each segment file's checksum
    /// (tantivy keeps one in its footer), that tantivy's `meta.json` and `.managed.json` and
    /// ansel's settings parse, and, `with_vectors`, the dense vectors' files against their record
    /// (BM25 alone needs none of them). Names every damaged file ([`IndexError::Damaged`]).
    pub fn check(&self, with_vectors: bool) -> Result<(), IndexError> {
        let mut damaged: Vec<String> = Vec::new();
        for name in ["meta.json", ".managed.json"] {
            let path = self.dir.join(name);
            match read_index_json(&path) {
                Err(why) => damaged.push(why),
                Ok(value) if name == ".managed.json" => {
                    if let Some(why) = self.unlisted_files(&value) {
                        damaged.push(format!("{} ({why})", path.display()));
                    }
                }
                Ok(_) => {}
            }
        }
        match damaged_segment_files(&self.dir, &self.index) {
            Ok(files) => damaged.extend(files),
            Err(e) => damaged.push(format!("a segment file ({e})")),
        }
        match self.dense_settings() {
            Ok(Some(_)) if with_vectors => {
                if let Err(e) = self.snapshot().check_vectors() {
                    damaged.push(e.to_string());
                }
            }
            Ok(_) => {}
            Err(e) => damaged.push(e.to_string()),
        }
        if damaged.is_empty() {
            Ok(())
        } else {
            Err(IndexError::Damaged {
                path: self.dir.clone(),
                files: damaged,
            })
        }
    }

    /// What `ansel-index.json` records now about the index's dense vectors (`None`: it has none).
    pub fn dense_settings(&self) -> Result<Option<DenseSettings>, IndexError> {
        Ok(Settings::read(&self.dir)?.dense)
    }

    /// A writer; only one may be open on an index at a time, across processes. An index with
    /// dense vectors is refused: its new records need vectors too ([`SentenceIndex::dense_writer`]).
    pub fn writer(&self) -> Result<SentenceWriter, IndexError> {
        let writer = self.tantivy_writer()?;
        if let Some(dense) = Settings::read(&self.dir)?.dense {
            return Err(IndexError::VectorsNeedEncoder {
                path: self.dir.clone(),
                model: dense.model,
            });
        }
        Ok(self.writer_from(writer, None))
    }

    /// A writer that also stores each new record's vector, made by `encoder`. On an index without
    /// vectors, only an empty one takes them (the vectors of records already there are not made
    /// after the fact); it then stores them in `format` (default
    /// [`dense::DEFAULT_FORMAT`]). On an index with vectors, `encoder` must be the model that made
    /// them, and `format`, if given, the format they are in.
    pub fn dense_writer(
        &self,
        encoder: Arc<dyn Encoder>,
        format: Option<VectorFormat>,
    ) -> Result<SentenceWriter, IndexError> {
        if self.fields.row.is_none() {
            return Err(IndexError::CannotAddVectors {
                path: self.dir.clone(),
                why: "it was made by an older ansel, without a place for vector rows".into(),
            });
        }
        // The lock first: settings and leftover files are then this writer's alone.
        let writer = self.tantivy_writer()?;
        let mut settings = Settings::read(&self.dir)?;
        let dense = match settings.dense.take() {
            Some(dense) => {
                dense.check_encoder(encoder.as_ref(), &self.dir)?;
                if let Some(format) = format.filter(|&f| f != dense.format) {
                    return Err(IndexError::CannotAddVectors {
                        path: self.dir.clone(),
                        why: format!(
                            "it stores {} vectors, not {}",
                            dense.format.name(),
                            format.name()
                        ),
                    });
                }
                dense
            }
            None => {
                let records = self.committed_records()?;
                if records > 0 {
                    return Err(IndexError::CannotAddVectors {
                        path: self.dir.clone(),
                        why: format!("it holds {records} {}s without vectors", self.unit.name()),
                    });
                }
                let dense = DenseSettings::new(
                    encoder.as_ref(),
                    format.unwrap_or(dense::DEFAULT_FORMAT),
                    &self.dir,
                )?;
                settings.dense = Some(dense.clone());
                settings.write(&self.dir)?;
                dense
            }
        };
        remove_unlisted_vector_files(&self.dir, &dense)?;
        Ok(self.writer_from(
            writer,
            Some(DenseWriter {
                encoder,
                next_row: dense.count,
                settings: dense,
                pending: Vec::new(),
                file: None,
                graph_policy: GraphPolicy::default(),
            }),
        ))
    }

    /// Stores the index's vectors in `format` instead, in one file: rewritten from the files
    /// there (int8 vectors cannot be made f32 again, so that way is refused). Holds the writer
    /// lock; the new file is listed (atomically) before the old ones are removed.
    pub fn rewrite_vectors(&self, format: VectorFormat) -> Result<(), IndexError> {
        let _lock = self.tantivy_writer()?;
        let mut settings = Settings::read(&self.dir)?;
        let Some(old) = settings.dense.clone() else {
            return Err(IndexError::NoVectors(self.dir.clone()));
        };
        if old.format == format || old.format == VectorFormat::Int8 {
            return Err(IndexError::CannotAddVectors {
                path: self.dir.clone(),
                why: format!(
                    "its vectors are {}; they are rewritten from f32 or f16 into another format",
                    old.format.name()
                ),
            });
        }
        let new = DenseSettings {
            format,
            files: Vec::new(),
            graph: None,
            ..old.clone()
        };
        let name = format!("vectors-{:010}-{}.vec", 0, format.name());
        let mut file = FileWriter::create(&self.dir, &name, &new)?;
        if let Err(e) = dense::for_each_row(&self.dir, &old, |row| file.push(row)) {
            file.abandon();
            return Err(e);
        }
        let entry = file.finish()?;
        let mut new = DenseSettings {
            files: vec![entry],
            ..new
        };
        // The graph is made again from the rewritten rows (their int8 components may differ).
        if old.graph.is_some() {
            new.graph = Some(graph::extend(&self.dir, &new)?);
        }
        settings.dense = Some(new);
        settings.write(&self.dir)?;
        let old_graph = old.graph.iter().map(|g| &g.file);
        for file in old.files.iter().map(|f| &f.file).chain(old_graph) {
            let _ = std::fs::remove_file(self.dir.join(file));
        }
        Ok(())
    }

    fn tantivy_writer(&self) -> Result<IndexWriter, IndexError> {
        self.index
            .writer_with_num_threads(1, WRITER_MEMORY_BYTES)
            .map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => IndexError::Locked(self.dir.clone()),
                e => IndexError::tantivy(&self.dir, e),
            })
    }

    fn writer_from(&self, writer: IndexWriter, dense: Option<DenseWriter>) -> SentenceWriter {
        SentenceWriter {
            writer: Some(writer),
            index: self.index.clone(),
            fields: self.fields,
            dir: self.dir.clone(),
            unit: self.unit,
            dense,
        }
    }

    /// Records in the index's last commit, whatever this reader has seen.
    fn committed_records(&self) -> Result<u64, IndexError> {
        let metas = self
            .index
            .searchable_segment_metas()
            .map_err(|e| IndexError::tantivy(&self.dir, e))?;
        Ok(metas.iter().map(|m| m.num_docs() as u64).sum())
    }

    /// What the last commit this reader has seen holds, searched and read consistently: the
    /// records that [`Snapshot::bm25`] and [`Snapshot::dense`] find are those of one commit.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            index: self,
            searcher: self.reader.searcher(),
        }
    }

    /// Makes the last commit visible to searches now rather than shortly after.
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader
            .reload()
            .map_err(|e| IndexError::tantivy(&self.dir, e))
    }

    /// The `limit` sentences that best match `query` under BM25 (over the
    /// sentence, and with less weight its document title). Query syntax
    /// errors are ignored: a question is words, not a query language.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, IndexError> {
        let snapshot = self.snapshot();
        let found = snapshot.bm25(query, limit)?;
        snapshot.hits(&found)
    }

    fn record(&self, doc: &TantivyDocument) -> SentenceRecord {
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str().map(str::to_string))
        };
        SentenceRecord {
            doc_id: text(self.fields.doc_id).unwrap_or_default(),
            title: text(self.fields.title).unwrap_or_default(),
            position: doc
                .get_first(self.fields.position)
                .and_then(|v| v.as_u64())
                .unwrap_or(0) as usize,
            text: text(self.fields.text).unwrap_or_default(),
            prev: text(self.fields.prev),
            next: text(self.fields.next),
        }
    }

    /// Every stored sentence text, for corpus statistics (IDF).
    pub fn sentence_texts(&self) -> Result<Vec<String>, IndexError> {
        let searcher = self.reader.searcher();
        let mut texts = Vec::new();
        for segment in searcher.segment_readers() {
            let store = segment
                .get_store_reader(64)
                .map_err(|e| IndexError::io(&self.dir, e))?;
            for doc_id in segment.doc_ids_alive() {
                let doc: TantivyDocument = store
                    .get(doc_id)
                    .map_err(|e| IndexError::tantivy(&self.dir, e))?;
                if let Some(text) = doc.get_first(self.fields.text).and_then(|v| v.as_str()) {
                    texts.push(text.to_string());
                }
            }
        }
        Ok(texts)
    }

    /// Documents and sentences in the last commit this reader has seen.
    pub fn stats(&self) -> Result<IndexStats, IndexError> {
        let searcher = self.reader.searcher();
        let first_sentences = TermQuery::new(
            Term::from_field_u64(self.fields.position, 0),
            IndexRecordOption::Basic,
        );
        let documents = searcher
            .search(&first_sentences, &Count)
            .map_err(|e| IndexError::tantivy(&self.dir, e))? as u64;
        Ok(IndexStats {
            documents,
            sentences: searcher.num_docs(),
        })
    }

    /// Whether the last commit this reader has seen holds document `doc_id`.
    pub fn contains_document(&self, doc_id: &str) -> Result<bool, IndexError> {
        let query = TermQuery::new(
            Term::from_field_text(self.fields.doc_id, doc_id),
            IndexRecordOption::Basic,
        );
        let count = self
            .reader
            .searcher()
            .search(&query, &Count)
            .map_err(|e| IndexError::tantivy(&self.dir, e))?;
        Ok(count > 0)
    }
}

/// Deletes vector files (and temporary ones) that `dense` does not list: what a crash between
/// writing a file and committing left.
fn remove_unlisted_vector_files(dir: &Path, dense: &DenseSettings) -> Result<(), IndexError> {
    for entry in std::fs::read_dir(dir).map_err(|e| IndexError::io(dir, e))? {
        let entry = entry.map_err(|e| IndexError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let listed = dense.files.iter().any(|f| f.file == name)
            || dense.graph.as_ref().is_some_and(|g| g.file == name);
        if (dense::is_vector_file(&name) || graph::is_graph_file(&name)) && !listed {
            std::fs::remove_file(entry.path()).map_err(|e| IndexError::io(&entry.path(), e))?;
        }
    }
    Ok(())
}

/// A record found by a search of one [`Snapshot`], before its text is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub unit: UnitId,
    pub score: f32,
}

/// A record of one [`Snapshot`] (the same record in another snapshot may have another id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnitId(DocAddress);

/// One commit of an index, searched with BM25 or by vector and read.
pub struct Snapshot<'a> {
    index: &'a SentenceIndex,
    searcher: Searcher,
}

impl Snapshot<'_> {
    /// The `limit` records that best match `query` under BM25 (over the record, and with less
    /// weight its title). Query syntax errors are ignored: a question is words, not a query
    /// language.
    pub fn bm25(&self, query: &str, limit: usize) -> Result<Vec<Scored>, IndexError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let index = self.index;
        let words = ansel_text::words(query).join(" ");
        let (parsed, _ignored) = index.query_parser.parse_query_lenient(&words);
        let top = self
            .searcher
            .search(&parsed, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| IndexError::tantivy(&index.dir, e))?;
        Ok(top
            .into_iter()
            .map(|(score, address)| Scored {
                unit: UnitId(address),
                score,
            })
            .collect())
    }

    /// The `limit` records whose vectors have the largest inner product (the cosine: vectors are
    /// stored normalised) with `query`, a vector of the model that made the index's. An index
    /// without vectors is [`IndexError::NoVectors`].
    pub fn dense(&self, query: &[f32], limit: usize) -> Result<Vec<Scored>, IndexError> {
        self.dense_with(query, limit, DenseSearch::default())
    }

    /// [`Snapshot::dense`], searching as `how` says: exactly, or through the index's graph (if it
    /// has one) considering a given number of candidates.
    pub fn dense_with(
        &self,
        query: &[f32],
        limit: usize,
        how: DenseSearch,
    ) -> Result<Vec<Scored>, IndexError> {
        let view = self.dense_view()?;
        Ok(view
            .search(&Query::new(query), limit, how)?
            .into_iter()
            .map(|(address, score)| Scored {
                unit: UnitId(address),
                score,
            })
            .collect())
    }

    /// Loads (once per commit) and checks the vectors this snapshot's records use: every
    /// listed vector file is read and checked, and every record must have its vector.
    pub fn check_vectors(&self) -> Result<(), IndexError> {
        self.dense_view().map(|_| ())
    }

    fn dense_view(&self) -> Result<Arc<dense::DenseView>, IndexError> {
        let index = self.index;
        let mut store = index.dense.lock().unwrap_or_else(|p| p.into_inner());
        let settings = || {
            Settings::read(&index.dir)?
                .dense
                .ok_or_else(|| IndexError::NoVectors(index.dir.clone()))
        };
        let view = store.view(&index.dir, settings, &self.searcher, ROW_FIELD)?;
        debug_assert_eq!(
            view.generation(),
            self.searcher.generation().generation_id()
        );
        Ok(view)
    }

    /// The records found, with their text and context, in the order given.
    pub fn hits(&self, found: &[Scored]) -> Result<Vec<Hit>, IndexError> {
        found
            .iter()
            .map(|s| {
                let doc: TantivyDocument = self
                    .searcher
                    .doc(s.unit.0)
                    .map_err(|e| IndexError::tantivy(&self.index.dir, e))?;
                Ok(Hit {
                    score: s.score,
                    sentence: self.index.record(&doc),
                })
            })
            .collect()
    }
}

/// Adds documents; nothing is durable or visible until [`SentenceWriter::commit`].
pub struct SentenceWriter {
    /// `None` once a write failed: the writer was dropped and its leftovers removed.
    writer: Option<IndexWriter>,
    index: Index,
    fields: Fields,
    dir: PathBuf,
    unit: Unit,
    /// Set when the index keeps vectors.
    dense: Option<DenseWriter>,
}

/// The vectors of what a [`SentenceWriter`] adds: texts wait in `pending` until a batch is
/// full, then their vectors go to this commit's file.
struct DenseWriter {
    encoder: Arc<dyn Encoder>,
    /// As last committed.
    settings: DenseSettings,
    /// The row the next record gets.
    next_row: u64,
    pending: Vec<String>,
    file: Option<FileWriter>,
    /// When a commit builds or extends the graph of the approximate search.
    graph_policy: GraphPolicy,
}

impl DenseWriter {
    /// Encodes the pending texts and appends their vectors to this commit's file.
    fn flush(&mut self, dir: &Path) -> Result<(), IndexError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let texts: Vec<&str> = self.pending.iter().map(String::as_str).collect();
        let encoder_error = |message: String| IndexError::Encoder {
            path: dir.to_path_buf(),
            model: self.settings.model.clone(),
            message,
        };
        let vectors = self.encoder.encode(&texts).map_err(encoder_error)?;
        if vectors.len() != texts.len() {
            return Err(encoder_error(format!(
                "returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        if self.file.is_none() {
            let name = dense::file_name(self.settings.count);
            self.file = Some(FileWriter::create(dir, &name, &self.settings)?);
        }
        let file = self.file.as_mut().expect("created above");
        for mut v in vectors {
            if v.len() != self.settings.dim {
                return Err(encoder_error(format!(
                    "returned a vector of {} components, not {}",
                    v.len(),
                    self.settings.dim
                )));
            }
            dense::normalise(&mut v);
            file.push(&v)?;
        }
        self.pending.clear();
        Ok(())
    }

    /// Seals this commit's file and lists it in the settings (before tantivy commits: every
    /// row a committed record uses is then in a listed file).
    /// Then builds or extends the graph when the policy says so (listed after it is written;
    /// the graph it replaces is removed once the new one is listed).
    fn commit(&mut self, dir: &Path) -> Result<(), IndexError> {
        self.flush(dir)?;
        let mut settings = Settings::read(dir)?;
        let mut next = self.settings.clone();
        if let Some(file) = self.file.take() {
            debug_assert_eq!(next.count + file.rows(), self.next_row);
            let entry = file.finish()?;
            next.count += entry.rows;
            next.files.push(entry);
        }
        let replaced = if self.graph_policy.due(&next) {
            let old = next.graph.replace(graph::extend(dir, &next)?);
            old.map(|g| g.file)
        } else {
            None
        };
        if next == self.settings {
            return Ok(());
        }
        settings.dense = Some(next.clone());
        settings.write(dir)?;
        self.settings = next;
        if let Some(file) = replaced {
            let _ = std::fs::remove_file(dir.join(file));
        }
        Ok(())
    }

    /// Drops what was not committed (the temporary file).
    fn abandon(&mut self) {
        self.pending.clear();
        if let Some(file) = self.file.take() {
            file.abandon();
        }
        self.next_row = self.settings.count;
    }
}

impl Drop for SentenceWriter {
    fn drop(&mut self) {
        if let Some(dense) = self.dense.as_mut() {
            dense.abandon();
        }
    }
}

impl SentenceWriter {
    /// When commits build or extend the graph of the approximate dense search (an index with
    /// vectors only; [`GraphPolicy::default`] unless set).
    pub fn set_graph_policy(&mut self, policy: GraphPolicy) {
        if let Some(dense) = self.dense.as_mut() {
            dense.graph_policy = policy;
        }
    }

    /// Adds (or, when its id is already indexed, replaces) a document and
    /// returns how many records (sentences or passages) it has.
    pub fn add(&mut self, document: &Document) -> Result<usize, IndexError> {
        let (f, unit) = (self.fields, self.unit);
        let writer = self.writer.as_mut().ok_or_else(dead_writer(&self.dir))?;
        writer.delete_term(Term::from_field_text(f.doc_id, &document.id));
        // One record at a time: a large document is not held three times over
        // (text, previous, next) on top of the writer's own buffer.
        let texts = unit_texts(document, unit);
        for (position, (title, text)) in texts.iter().enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(f.doc_id, &document.id);
            doc.add_text(f.title, title);
            doc.add_u64(f.position, position as u64);
            doc.add_text(f.text, text);
            if let Some((_, prev)) = position.checked_sub(1).map(|p| &texts[p]) {
                doc.add_text(f.prev, prev);
            }
            if let Some((_, next)) = texts.get(position + 1) {
                doc.add_text(f.next, next);
            }
            if let (Some(dense), Some(row)) = (self.dense.as_mut(), f.row) {
                doc.add_u64(row, dense.next_row);
                dense.next_row += 1;
                dense.pending.push(text.clone());
            }
            if let Err(e) = writer.add_document(doc) {
                return Err(self.failed(e));
            }
        }
        if let Some(dense) = self.dense.as_mut() {
            if dense.pending.len() >= ENCODE_BATCH {
                if let Err(e) = dense.flush(&self.dir) {
                    return Err(self.failed_dense(e));
                }
            }
        }
        Ok(texts.len())
    }

    /// Makes everything added so far durable and visible, atomically: a crash
    /// before this returns leaves the index as it was at the previous commit. With vectors,
    /// the last batch is encoded and the vector file written and listed before tantivy commits.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        self.live()?;
        if let Some(dense) = self.dense.as_mut() {
            if let Err(e) = dense.commit(&self.dir) {
                return Err(self.failed_dense(e));
            }
        }
        match self.live()?.commit() {
            Ok(_) => Ok(()),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// After a failed encoding or vector write: drops the uncommitted records with their
    /// vectors, so that records and vectors stay in step; the index stays as at its last commit.
    fn failed_dense(&mut self, error: IndexError) -> IndexError {
        drop(self.writer.take());
        if let Some(dense) = self.dense.as_mut() {
            dense.abandon();
        }
        error
    }

    fn live(&mut self) -> Result<&mut IndexWriter, IndexError> {
        self.writer.as_mut().ok_or_else(dead_writer(&self.dir))
    }

    /// After a failed write (a full disk, most often): drops the writer, which tantivy has
    /// usually stopped already, removes the files the failed write left (they are in no
    /// commit), and says why it failed. The index stays as at its last commit and takes
    /// writes again once the cause is gone.
    fn failed(&mut self, error: tantivy::TantivyError) -> IndexError {
        drop(self.writer.take());
        if let Some(dense) = self.dense.as_mut() {
            dense.abandon();
        }
        // Tantivy's indexing thread reports an I/O error only as "writer killed": name the
        // likely cause when the disk is (nearly) full.
        let cause = match fs4::available_space(&self.dir) {
            Ok(free) if free < LOW_SPACE_BYTES => format!(
                "no space left on the device that holds it ({free} bytes free); \
                 free some space and index again ({error})"
            ),
            _ => error.to_string(),
        };
        let cleanup = match self.remove_leftovers() {
            Ok(0) => "no partial files were left".to_string(),
            Ok(n) => format!("the {n} partial files the failed write left were removed"),
            Err(e) => format!("removing the partial files failed too ({e})"),
        };
        IndexError::WriteFailed {
            path: self.dir.clone(),
            cause,
            cleanup,
        }
    }

    /// Deletes the index files no commit refers to; how many went.
    fn remove_leftovers(&self) -> tantivy::Result<usize> {
        let writer: IndexWriter = self.index.writer_with_num_threads(1, WRITER_MEMORY_BYTES)?;
        let result = writer.garbage_collect_files().wait()?;
        Ok(result.deleted_files.len())
    }
}

/// The error of a writer used after a failed write.
fn dead_writer(dir: &Path) -> impl FnOnce() -> IndexError + '_ {
    move || IndexError::WriteFailed {
        path: dir.to_path_buf(),
        cause: "an earlier write failed".into(),
        cleanup: "this writer takes no more documents; open a new one".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, title: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            title: title.into(),
            text: text.into(),
        }
    }

    #[test]
    fn search_finds_stemmed_words_and_keeps_context() {
        let dir = tempfile::tempdir().unwrap();
        let index = SentenceIndex::open_or_create(dir.path()).unwrap();
        let mut writer = index.writer().unwrap();
        writer
            .add(&doc(
                "bees",
                "Honey bees",
                "Bees live in hives. A queen lays the eggs. Workers gather nectar.",
            ))
            .unwrap();
        writer
            .add(&doc(
                "rivers",
                "Rivers",
                "The Nile flows north. It floods yearly.",
            ))
            .unwrap();
        writer.commit().unwrap();
        index.reload().unwrap();
        let hits = index.search("Who lays eggs?", 5).unwrap();
        let top = &hits[0].sentence;
        assert_eq!(top.text, "A queen lays the eggs.");
        assert_eq!((top.doc_id.as_str(), top.position), ("bees", 1));
        assert_eq!(top.title, "Honey bees");
        assert_eq!(top.prev.as_deref(), Some("Bees live in hives."));
        assert_eq!(top.next.as_deref(), Some("Workers gather nectar."));
        assert!(hits.iter().all(|h| h.sentence.doc_id == "bees"));
        assert_eq!(
            index.stats().unwrap(),
            IndexStats {
                documents: 2,
                sentences: 5
            }
        );
        assert!(index.search("\"unbalanced (query AND", 5).is_ok());
        assert_eq!(index.sentence_texts().unwrap().len(), 5);
    }

    #[test]
    fn reindexing_a_document_replaces_it_and_reopening_keeps_commits() {
        let dir = tempfile::tempdir().unwrap();
        {
            let index = SentenceIndex::open_or_create(dir.path()).unwrap();
            let mut writer = index.writer().unwrap();
            writer.add(&doc("a", "A", "Old text here. More.")).unwrap();
            writer.commit().unwrap();
            writer.add(&doc("uncommitted", "U", "Lost.")).unwrap();
        }
        let index = SentenceIndex::open(dir.path()).unwrap();
        assert!(index.contains_document("a").unwrap());
        assert!(!index.contains_document("uncommitted").unwrap());
        let mut writer = index.writer().unwrap();
        writer.add(&doc("a", "A", "New text.")).unwrap();
        writer.add(&doc("b", "B", "Another.")).unwrap();
        writer.commit().unwrap();
        index.reload().unwrap();
        assert_eq!(
            index.stats().unwrap(),
            IndexStats {
                documents: 2,
                sentences: 2
            }
        );
        assert_eq!(
            index.search("text", 5).unwrap()[0].sentence.text,
            "New text."
        );
    }

    #[test]
    fn a_passage_index_keeps_paragraphs_with_their_heading_paths() {
        let dir = tempfile::tempdir().unwrap();
        let index = SentenceIndex::open_or_create_with(dir.path(), Unit::Passage).unwrap();
        let mut writer = index.writer().unwrap();
        let text = "Bees are insects.\n\n## Hives\n\nBees live in hives. A hive holds wax.\n\n\
                    ## The queen\n\nThe queen lays all the eggs.";
        assert_eq!(writer.add(&doc("bees", "Bees", text)).unwrap(), 3);
        writer.commit().unwrap();
        index.reload().unwrap();
        let top = &index.search("Who lays the eggs?", 3).unwrap()[0].sentence;
        assert_eq!(top.text, "The queen lays all the eggs.");
        assert_eq!(top.title, "Bees › The queen");
        assert_eq!(
            top.prev.as_deref(),
            Some("Bees live in hives. A hive holds wax.")
        );
        assert_eq!((top.position, top.next.as_deref()), (2, None));
        // Heading words find the passage under them (the title field is searched too).
        let under_hives = &index.search("hives", 1).unwrap()[0].sentence;
        assert_eq!(under_hives.title, "Bees › Hives");
        drop(writer);
        drop(index);
        let reopened = SentenceIndex::open(dir.path()).unwrap();
        assert_eq!(reopened.unit(), Unit::Passage);
        let err = SentenceIndex::open_or_create_with(dir.path(), Unit::Sentence)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("holds passages, not sentences"), "{err}");
        // An empty index may still change its unit; an old index (no settings file) holds sentences.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            SentenceIndex::open_or_create(empty.path()).unwrap().unit(),
            Unit::Sentence
        );
        let passages = SentenceIndex::open_or_create_with(empty.path(), Unit::Passage).unwrap();
        assert_eq!(passages.unit(), Unit::Passage);
    }

    #[test]
    fn writers_racing_to_create_an_index_open_it_or_meet_the_lock() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format!("index-{round}"));
            let outcomes: Vec<Result<(), String>> = std::thread::scope(|scope| {
                let racers: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            let index =
                                SentenceIndex::open_or_create(&path).map_err(|e| e.to_string())?;
                            index.writer().map(|_| ()).map_err(|e| e.to_string())
                        })
                    })
                    .collect();
                racers.into_iter().map(|r| r.join().unwrap()).collect()
            });
            assert!(
                outcomes.iter().any(|o| o.is_ok()),
                "round {round}: {outcomes:?}"
            );
            for outcome in outcomes {
                if let Err(err) = outcome {
                    assert!(err.contains("another process"), "round {round}: {err}");
                }
            }
        }
    }

    #[test]
    fn opening_a_folder_without_an_index_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let err = SentenceIndex::open(dir.path()).err().unwrap().to_string();
        assert!(err.contains("no ansel index"), "{err}");
        std::fs::write(dir.path().join("notes.md"), "# Notes").unwrap();
        let err = SentenceIndex::open_or_create(dir.path())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("holds other files"), "{err}");
        assert!(!dir.path().join("meta.json").exists());
    }
}
