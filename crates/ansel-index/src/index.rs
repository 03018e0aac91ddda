//! The sentence index: one tantivy document per sentence, searched with BM25.

use crate::sentences::{unit_texts, Unit};
use crate::{Document, IndexError, SentenceRecord};
use std::path::{Path, PathBuf};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{QueryParser, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, INDEXED, STORED,
    STRING,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

/// Title words count for less than sentence words when searching.
const TITLE_BOOST: f32 = 0.5;
/// Memory the writer may buffer before it flushes a segment.
const WRITER_MEMORY_BYTES: usize = 50_000_000;

/// The file beside tantivy's that records what an index's records are (absent: sentences, as
/// every index made before passages existed).
const SETTINGS_FILE: &str = "ansel-index.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Settings {
    unit: Unit,
}

/// Free space below which a failed write is put down to a full disk.
const LOW_SPACE_BYTES: u64 = 2 * WRITER_MEMORY_BYTES as u64;

#[derive(Clone, Copy)]
struct Fields {
    doc_id: Field,
    title: Field,
    position: Field,
    text: Field,
    prev: Field,
    next: Field,
}

impl Fields {
    fn schema() -> Schema {
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
        builder.build()
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
        })
    }
}

/// A sentence found by a search, with its BM25 score.
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

/// An on-disk sentence index. Readers see the last commit; writers add
/// documents through [`SentenceIndex::writer`].
pub struct SentenceIndex {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    query_parser: QueryParser,
    unit: Unit,
}

impl SentenceIndex {
    /// Opens the index in `dir`, creating the folder and an empty index when
    /// there is none. A folder that holds other files is refused, so an index
    /// never spills into, say, the documents' own folder.
    pub fn open_or_create(dir: &Path) -> Result<SentenceIndex, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        let has_files = std::fs::read_dir(dir)
            .map_err(|e| IndexError::io(dir, e))?
            .next()
            .is_some();
        if has_files && !dir.join("meta.json").is_file() {
            return Err(IndexError::NotEmpty(dir.to_path_buf()));
        }
        let directory = tantivy::directory::MmapDirectory::open(dir)
            .map_err(|e| IndexError::tantivy(dir, e.into()))?;
        let index = Index::open_or_create(directory, Fields::schema())
            .map_err(|e| IndexError::tantivy(dir, e))?;
        Self::from_index(dir, index)
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
        let tmp = dir.join(format!(".{SETTINGS_FILE}.tmp"));
        let json = serde_json::to_string(&Settings { unit }).expect("settings serialize");
        std::fs::write(&tmp, json).map_err(|e| IndexError::io(&tmp, e))?;
        std::fs::rename(&tmp, dir.join(SETTINGS_FILE)).map_err(|e| IndexError::io(dir, e))?;
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
        let index = Index::open_in_dir(dir).map_err(|e| IndexError::tantivy(dir, e))?;
        Self::from_index(dir, index)
    }

    fn from_index(dir: &Path, index: Index) -> Result<SentenceIndex, IndexError> {
        let fields =
            Fields::of(&index.schema()).ok_or_else(|| IndexError::NotAnIndex(dir.to_path_buf()))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()
            .map_err(|e| IndexError::tantivy(dir, e))?;
        let mut query_parser = QueryParser::for_index(&index, vec![fields.text, fields.title]);
        query_parser.set_field_boost(fields.title, TITLE_BOOST);
        let settings = dir.join(SETTINGS_FILE);
        let unit = match std::fs::read_to_string(&settings) {
            Ok(text) => {
                serde_json::from_str::<Settings>(&text)
                    .map_err(|e| IndexError::malformed(&settings, e.line(), e.to_string()))?
                    .unit
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Unit::Sentence,
            Err(e) => return Err(IndexError::io(&settings, e)),
        };
        Ok(SentenceIndex {
            dir: dir.to_path_buf(),
            index,
            reader,
            fields,
            query_parser,
            unit,
        })
    }

    /// A writer; only one may be open on an index at a time, across processes.
    pub fn writer(&self) -> Result<SentenceWriter, IndexError> {
        let writer = self
            .index
            .writer_with_num_threads(1, WRITER_MEMORY_BYTES)
            .map_err(|e| IndexError::tantivy(&self.dir, e))?;
        Ok(SentenceWriter {
            writer: Some(writer),
            index: self.index.clone(),
            fields: self.fields,
            dir: self.dir.clone(),
            unit: self.unit,
        })
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
        if limit == 0 {
            return Ok(Vec::new());
        }
        let words = ansel_text::words(query).join(" ");
        let (parsed, _ignored) = self.query_parser.parse_query_lenient(&words);
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&parsed, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| IndexError::tantivy(&self.dir, e))?;
        top.into_iter()
            .map(|(score, address)| {
                let doc: TantivyDocument = searcher
                    .doc(address)
                    .map_err(|e| IndexError::tantivy(&self.dir, e))?;
                Ok(Hit {
                    score,
                    sentence: self.record(&doc),
                })
            })
            .collect()
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

/// Adds documents; nothing is durable or visible until [`SentenceWriter::commit`].
pub struct SentenceWriter {
    /// `None` once a write failed: the writer was dropped and its leftovers removed.
    writer: Option<IndexWriter>,
    index: Index,
    fields: Fields,
    dir: PathBuf,
    unit: Unit,
}

impl SentenceWriter {
    /// Adds (or, when its id is already indexed, replaces) a document and
    /// returns how many records (sentences or passages) it has.
    pub fn add(&mut self, document: &Document) -> Result<usize, IndexError> {
        let (f, unit) = (self.fields, self.unit);
        let writer = self.live()?;
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
            if let Err(e) = writer.add_document(doc) {
                return Err(self.failed(e));
            }
        }
        Ok(texts.len())
    }

    /// Makes everything added so far durable and visible, atomically: a crash
    /// before this returns leaves the index as it was at the previous commit.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        match self.live()?.commit() {
            Ok(_) => Ok(()),
            Err(e) => Err(self.failed(e)),
        }
    }

    fn live(&mut self) -> Result<&mut IndexWriter, IndexError> {
        self.writer.as_mut().ok_or_else(|| IndexError::WriteFailed {
            path: self.dir.clone(),
            cause: "an earlier write failed".into(),
            cleanup: "this writer takes no more documents; open a new one".into(),
        })
    }

    /// After a failed write (a full disk, most often): drops the writer, which tantivy has
    /// usually stopped already, removes the files the failed write left (they are in no
    /// commit), and says why it failed. The index stays as at its last commit and takes
    /// writes again once the cause is gone.
    fn failed(&mut self, error: tantivy::TantivyError) -> IndexError {
        drop(self.writer.take());
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
