//! Static word vectors for ansel's efficient rankers, read straight from the
//! files of two PyPI packages (fetched by `scripts/fetch-models.sh`), with no
//! Python at run time:
//!
//! - GloVe 6B 50d (`vendor/models/glove-6b-50d`): a Fortran-order numpy matrix
//!   `glove_6B_50d_emb.npy` whose row i is the vector of the i-th word of the
//!   parquet vocabulary `glove_6B_index.parquet` (column `index`).
//! - spaCy md (`vendor/models/spacy-en-md/vocab`): a numpy matrix `vectors`
//!   whose rows are reached through `key2row` (msgpack map from a 64-bit
//!   MurmurHash of the word to a row); the words themselves are in
//!   `strings.json`.
//!
//! - MiniLM word pieces (`vendor/models/all-minilm-l6-v2`, the sentence
//!   encoder's package): the input word-piece embedding table
//!   (`embeddings.word_embeddings.weight` in `model.safetensors`, 384d) with
//!   `vocab.txt`. A word's vector is its row when the word is a piece, else the
//!   mean of the rows of its WordPiece pieces (greedy longest match, as BERT's
//!   tokenizer): static, no context, so every word made of known pieces has one.
//!
//! - MiniLM-encoded words (`vendor/models/all-minilm-l6-v2` again): each word of a
//!   model's vocabulary encoded alone through the whole sentence encoder (see
//!   [`encoded`]); built for a word list ([`VectorSource::load_for`]) and cached. The
//!   encoder itself is ansel-bert's `WordEncoder`: this crate reads and caches tables and
//!   links no libtorch.
//!
//! All become one [`WordVectors`]: a word → row-major `f32` vector lookup, which
//! [`retrofit`] can pull towards a lexicon's neighbours before a model bundles its rows.

pub mod encoded;
mod msgpack;
mod npy;
pub mod retrofit;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Errors while loading vectors; every one names the file.
#[derive(Debug, thiserror::Error)]
pub enum VectorsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    #[error("{0}")]
    Missing(String),
}

impl VectorsError {
    pub(crate) fn format(path: &Path, message: impl Into<String>) -> Self {
        VectorsError::Format {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, VectorsError>;

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| VectorsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Which pretrained vectors to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorSource {
    Glove,
    Spacy,
    Minilm,
    MinilmEncoded,
    /// GloVe 50d beside minilm-encoded, one vector: `[glove ; minilm-encoded]` (zeros for
    /// the GloVe part of a word GloVe lacks).
    GloveMinilmEncoded,
}

impl VectorSource {
    pub const NAMES: &'static [&'static str] = &[
        "glove",
        "spacy",
        "minilm",
        "minilm-encoded",
        "glove+minilm-encoded",
    ];

    pub fn name(self) -> &'static str {
        match self {
            VectorSource::Glove => "glove",
            VectorSource::Spacy => "spacy",
            VectorSource::Minilm => "minilm",
            VectorSource::MinilmEncoded => "minilm-encoded",
            VectorSource::GloveMinilmEncoded => "glove+minilm-encoded",
        }
    }

    /// The folder under `vendor/models` that `scripts/fetch-models.sh` fills.
    pub fn dir_name(self) -> &'static str {
        match self {
            VectorSource::Glove => "glove-6b-50d",
            VectorSource::Spacy => "spacy-en-md",
            VectorSource::Minilm
            | VectorSource::MinilmEncoded
            | VectorSource::GloveMinilmEncoded => "all-minilm-l6-v2",
        }
    }

    /// Whether the table is built for a word list ([`VectorSource::load_for`]) rather than
    /// read whole ([`VectorSource::load`]).
    pub fn is_encoded(self) -> bool {
        matches!(
            self,
            VectorSource::MinilmEncoded | VectorSource::GloveMinilmEncoded
        )
    }

    /// Loads the vectors from `models_dir/<dir_name>`.
    pub fn load(self, models_dir: &Path) -> Result<WordVectors> {
        let dir = self.checked_dir(models_dir)?;
        match self {
            VectorSource::Glove => load_glove(&dir),
            VectorSource::Spacy => load_spacy(&dir),
            VectorSource::Minilm => load_word_pieces(&dir),
            VectorSource::MinilmEncoded | VectorSource::GloveMinilmEncoded => {
                Err(VectorsError::Missing(format!(
                    "{} vectors are built for a word list (VectorSource::load_for)",
                    self.name()
                )))
            }
        }
    }

    /// The vectors for `words` (in that order, for an encoded source; the whole table for the
    /// others, which ignore `words` and `load_encoder`). An encoded source runs the encoder
    /// that `load_encoder` reads from the source's package folder (ansel-bert's
    /// `WordEncoder::load`: this crate has no encoder), caches its rows under
    /// `cache_root/minilm-encoded` (when given) and encodes only the words missing there.
    /// For `glove+minilm-encoded` this is the encoded part alone: [`WordVectors::concat`]
    /// joins it to GloVe (so that the encoded part can be reduced first).
    pub fn load_for<E: encoded::WordEncoder>(
        self,
        models_dir: &Path,
        words: &[String],
        cache_root: Option<&Path>,
        load_encoder: impl FnOnce(&Path) -> Result<E>,
    ) -> Result<WordVectors> {
        if !self.is_encoded() {
            return self.load(models_dir);
        }
        let encoder = load_encoder(&self.checked_dir(models_dir)?)?;
        let cache = cache_root.map(|root| root.join("minilm-encoded"));
        let (table, _) = encoded::encoded_vectors(&encoder, words, cache.as_deref())?;
        Ok(table)
    }

    /// For an encoded source, the first `n` whole words of the encoder's word-piece
    /// vocabulary (`vocab.txt`, roughly most frequent first; letters and digits only): the
    /// words to bundle beside the training words, as the first `n` GloVe words are for GloVe.
    /// The table's own first `n` words for the others.
    pub fn common_words(self, models_dir: &Path, n: usize) -> Result<Vec<String>> {
        if !self.is_encoded() {
            return Ok(self
                .load(models_dir)?
                .words()
                .iter()
                .take(n)
                .cloned()
                .collect());
        }
        let path = self.checked_dir(models_dir)?.join("vocab.txt");
        let vocab = String::from_utf8(read(&path)?)
            .map_err(|e| VectorsError::format(&path, format!("not UTF-8: {e}")))?;
        Ok(vocab
            .lines()
            .map(str::trim_end)
            .filter(|w| !w.is_empty() && w.chars().all(char::is_alphanumeric))
            .take(n)
            .map(str::to_string)
            .collect())
    }

    fn checked_dir(self, models_dir: &Path) -> Result<PathBuf> {
        let dir = models_dir.join(self.dir_name());
        if !dir.is_dir() {
            return Err(VectorsError::Missing(format!(
                "{}: no {} vectors here; run scripts/fetch-models.sh",
                dir.display(),
                self.name()
            )));
        }
        Ok(dir)
    }
}

impl std::str::FromStr for VectorSource {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "glove" => Ok(VectorSource::Glove),
            "spacy" => Ok(VectorSource::Spacy),
            "minilm" => Ok(VectorSource::Minilm),
            "minilm-encoded" => Ok(VectorSource::MinilmEncoded),
            "glove+minilm-encoded" => Ok(VectorSource::GloveMinilmEncoded),
            _ => Err(format!(
                "unknown vectors {s:?}; known: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// Where the pretrained models live: `$ANSEL_MODELS_DIR`, else the first
/// `vendor/models` found in the working directory or above the executable.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ANSEL_MODELS_DIR") {
        return PathBuf::from(dir);
    }
    let relative = Path::new("vendor").join("models");
    let mut starts: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        starts.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    starts
        .iter()
        .map(|start| start.join(&relative))
        .find(|dir| dir.is_dir())
        .unwrap_or(relative)
}

/// A word → vector table.
#[derive(Debug, Clone)]
pub struct WordVectors {
    dim: usize,
    /// Distinct words in table order (frequency order for GloVe).
    words: Vec<String>,
    index: HashMap<String, usize>,
    /// Row-major, `rows × dim`.
    data: Vec<f32>,
    /// Word-piece vocabulary (piece → row of `data`; continuations keep their
    /// `##`): words not in `index` get the mean of their pieces' rows.
    pieces: Option<HashMap<String, usize>>,
}

impl WordVectors {
    /// Builds a table from words and their row-major vectors (`words.len() × dim`).
    pub fn new(words: Vec<String>, dim: usize, data: Vec<f32>) -> Result<WordVectors> {
        if data.len() != words.len() * dim {
            return Err(VectorsError::Missing(format!(
                "{} words of dimension {dim} need {} numbers, found {}",
                words.len(),
                words.len() * dim,
                data.len()
            )));
        }
        let mut index = HashMap::with_capacity(words.len());
        let mut distinct = Vec::with_capacity(words.len());
        for (row, word) in words.into_iter().enumerate() {
            if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(word.clone()) {
                slot.insert(row);
                distinct.push(word);
            }
        }
        Ok(WordVectors {
            dim,
            words: distinct,
            index,
            data,
            pieces: None,
        })
    }

    /// A word-piece table: `pieces[i]` names row `i` of `data` (`pieces.len() × dim`).
    /// Whole-word pieces (neither `##…` nor `[…]`) are the table's words; any
    /// other word made of known pieces gets the mean of their rows.
    pub fn from_word_pieces(
        pieces: Vec<String>,
        dim: usize,
        data: Vec<f32>,
    ) -> Result<WordVectors> {
        if data.len() != pieces.len() * dim || dim == 0 {
            return Err(VectorsError::Missing(format!(
                "{} word pieces of dimension {dim} need {} numbers, found {}",
                pieces.len(),
                pieces.len() * dim,
                data.len()
            )));
        }
        let mut piece_rows = HashMap::with_capacity(pieces.len());
        let (mut words, mut index) = (Vec::new(), HashMap::new());
        for (row, piece) in pieces.into_iter().enumerate() {
            if piece_rows.contains_key(&piece) {
                continue;
            }
            let special =
                piece.starts_with("##") || (piece.starts_with('[') && piece.ends_with(']'));
            if !special && !piece.is_empty() {
                index.insert(piece.clone(), row);
                words.push(piece.clone());
            }
            piece_rows.insert(piece, row);
        }
        Ok(WordVectors {
            dim,
            words,
            index,
            data,
            pieces: Some(piece_rows),
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of words that have a vector.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The words in table order (for GloVe, most frequent first).
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The word's vector: its row, or (word-piece tables) the mean of its pieces' rows.
    pub fn get(&self, word: &str) -> Option<Cow<'_, [f32]>> {
        if let Some(&row) = self.index.get(word) {
            return Some(Cow::Borrowed(self.row(row)));
        }
        let rows = word_pieces(self.pieces.as_ref()?, word);
        if rows.is_empty() {
            return None;
        }
        let mut mean = vec![0f32; self.dim];
        for &row in &rows {
            for (m, x) in mean.iter_mut().zip(self.row(row)) {
                *m += x / rows.len() as f32;
            }
        }
        Some(Cow::Owned(mean))
    }

    /// Every word's vector, in word order, row-major (`len() × dim()`).
    pub fn rows(&self) -> Vec<f32> {
        let mut data = Vec::with_capacity(self.words.len() * self.dim);
        for word in &self.words {
            data.extend_from_slice(&self.get(word).expect("a word of the table"));
        }
        data
    }

    /// `[first ; second]` for every word of `second`, in its order: a word `first` lacks gets
    /// zeros for that part.
    pub fn concat(first: &WordVectors, second: &WordVectors) -> Result<WordVectors> {
        let dim = first.dim + second.dim;
        let mut data = Vec::with_capacity(second.words.len() * dim);
        for word in &second.words {
            match first.get(word) {
                Some(v) => data.extend_from_slice(&v),
                None => data.extend(std::iter::repeat_n(0.0, first.dim)),
            }
            data.extend_from_slice(&second.get(word).expect("a word of the table"));
        }
        WordVectors::new(second.words.clone(), dim, data)
    }

    fn row(&self, row: usize) -> &[f32] {
        &self.data[row * self.dim..(row + 1) * self.dim]
    }
}

/// BERT's uncased word pieces of one word, as rows: the word is lower-cased
/// and cut into runs of letters/digits and single other characters (BERT's
/// punctuation split); each run is split greedily into the longest known
/// pieces (`##` marks a continuation). A run with no such split (BERT's
/// `[UNK]`) adds nothing.
fn word_pieces(pieces: &HashMap<String, usize>, word: &str) -> Vec<usize> {
    let lower = word.to_lowercase();
    let mut runs: Vec<&str> = Vec::new();
    let mut start = None;
    for (i, c) in lower.char_indices() {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
        } else {
            if let Some(s) = start.take() {
                runs.push(&lower[s..i]);
            }
            if !c.is_whitespace() {
                runs.push(&lower[i..i + c.len_utf8()]);
            }
        }
    }
    if let Some(s) = start {
        runs.push(&lower[s..]);
    }
    let mut rows = Vec::new();
    'runs: for run in runs {
        let mut found = Vec::new();
        let mut rest = run;
        let mut first = true;
        while !rest.is_empty() {
            let boundaries: Vec<usize> = rest
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .chain(std::iter::once(rest.len()))
                .collect();
            let hit = boundaries.iter().rev().find_map(|&end| {
                let piece = if first {
                    Cow::Borrowed(&rest[..end])
                } else {
                    Cow::Owned(format!("##{}", &rest[..end]))
                };
                pieces.get(piece.as_ref()).map(|&row| (row, end))
            });
            let Some((row, end)) = hit else {
                continue 'runs;
            };
            found.push(row);
            rest = &rest[end..];
            first = false;
        }
        rows.extend(found);
    }
    rows
}

/// MiniLM's input word-piece embeddings: `vocab.txt` (one piece a line, row
/// order) and the float32 tensor `embeddings.word_embeddings.weight` of
/// `model.safetensors`.
fn load_word_pieces(dir: &Path) -> Result<WordVectors> {
    let vocab_path = dir.join("vocab.txt");
    let vocab = String::from_utf8(read(&vocab_path)?)
        .map_err(|e| VectorsError::format(&vocab_path, format!("not UTF-8: {e}")))?;
    let pieces: Vec<String> = vocab.lines().map(|l| l.trim_end().to_string()).collect();
    let path = dir.join("model.safetensors");
    let bytes = read(&path)?;
    let bad = |message: String| VectorsError::format(&path, message);
    let header_len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
        .ok_or_else(|| bad("shorter than a safetensors header".into()))?;
    let header_end = 8usize
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| bad(format!("header length {header_len} runs past the file")))?;
    let header: serde_json::Value =
        serde_json::from_slice(&bytes[8..header_end]).map_err(|e| bad(format!("header: {e}")))?;
    const NAME: &str = "embeddings.word_embeddings.weight";
    let entry = header
        .as_object()
        .and_then(|h| {
            h.iter()
                .find(|(k, _)| k.as_str() == NAME || k.ends_with(&format!(".{NAME}")))
        })
        .map(|(_, v)| v)
        .ok_or_else(|| bad(format!("no tensor {NAME}")))?;
    let field = |name: &str| {
        entry
            .get(name)
            .ok_or_else(|| bad(format!("{NAME}: no field {name:?}")))
    };
    if field("dtype")?.as_str() != Some("F32") {
        return Err(bad(format!(
            "{NAME}: dtype {}, expected F32",
            field("dtype")?
        )));
    }
    let numbers = |name: &str| -> Result<Vec<usize>> {
        field(name)?
            .as_array()
            .and_then(|a| a.iter().map(|v| v.as_u64().map(|v| v as usize)).collect())
            .ok_or_else(|| bad(format!("{NAME}: field {name:?} is not a list of integers")))
    };
    let (shape, offsets) = (numbers("shape")?, numbers("data_offsets")?);
    let (&[rows, dim], &[begin, end]) = (&shape[..], &offsets[..]) else {
        return Err(bad(format!("{NAME}: shape {shape:?}, offsets {offsets:?}")));
    };
    if rows != pieces.len() {
        return Err(bad(format!(
            "{NAME} has {rows} rows but {} has {} pieces",
            vocab_path.display(),
            pieces.len()
        )));
    }
    let data = bytes
        .get(header_end + begin..header_end + end)
        .filter(|d| d.len() == rows * dim * 4)
        .ok_or_else(|| {
            bad(format!(
                "{NAME}: data offsets {begin}..{end} do not fit {rows}x{dim}"
            ))
        })?;
    let data = data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    WordVectors::from_word_pieces(pieces, dim, data)
}

/// GloVe: Fortran-order `[words, dim]` float32 matrix + parquet vocabulary.
fn load_glove(dir: &Path) -> Result<WordVectors> {
    let matrix_path = dir.join("glove_6B_50d_emb.npy");
    let matrix = npy::Matrix::parse(&matrix_path, &read(&matrix_path)?)?;
    let vocab_path = dir.join("glove_6B_index.parquet");
    let words = read_parquet_strings(&vocab_path, "index")?;
    if words.len() != matrix.rows {
        return Err(VectorsError::format(
            &vocab_path,
            format!(
                "{} words but {} has {} rows",
                words.len(),
                matrix_path.display(),
                matrix.rows
            ),
        ));
    }
    WordVectors::new(words, matrix.cols, matrix.into_row_major())
}

/// Reads one string column of a parquet file, in row order.
fn read_parquet_strings(path: &Path, column: &str) -> Result<Vec<String>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    let bad = |e: parquet::errors::ParquetError| VectorsError::format(path, e.to_string());
    let file = std::fs::File::open(path).map_err(|source| VectorsError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = SerializedFileReader::new(file).map_err(bad)?;
    let schema = reader.metadata().file_metadata().schema_descr();
    if !(0..schema.num_columns()).any(|i| schema.column(i).name() == column) {
        return Err(VectorsError::format(path, format!("no column {column:?}")));
    }
    let projection = schema
        .root_schema()
        .get_fields()
        .iter()
        .filter(|field| field.name() == column)
        .cloned()
        .collect();
    let projection = parquet::schema::types::Type::group_type_builder("schema")
        .with_fields(projection)
        .build()
        .map_err(bad)?;
    let mut words = Vec::with_capacity(reader.metadata().file_metadata().num_rows() as usize);
    for (n, row) in reader
        .get_row_iter(Some(projection))
        .map_err(bad)?
        .enumerate()
    {
        let row = row.map_err(bad)?;
        let word = row
            .get_string(0)
            .map_err(|e| VectorsError::format(path, format!("row {n}: column {column:?}: {e}")))?;
        words.push(word.clone());
    }
    Ok(words)
}

/// spaCy: `vocab/vectors` (numpy `[rows, dim]`), `vocab/key2row` (msgpack
/// hash → row) and `vocab/strings.json` (the words whose hashes are the keys).
fn load_spacy(dir: &Path) -> Result<WordVectors> {
    let vocab = dir.join("vocab");
    let matrix_path = vocab.join("vectors");
    let matrix = npy::Matrix::parse(&matrix_path, &read(&matrix_path)?)?;
    let key2row_path = vocab.join("key2row");
    let key2row = msgpack::parse_u64_map(&key2row_path, &read(&key2row_path)?)?;
    let strings_path = vocab.join("strings.json");
    let strings: Vec<String> = serde_json::from_slice(&read(&strings_path)?)
        .map_err(|e| VectorsError::format(&strings_path, format!("line {}: {e}", e.line())))?;
    let (rows, dim) = (matrix.rows, matrix.cols);
    let table = matrix.into_row_major();
    let mut words = Vec::new();
    let mut data = Vec::new();
    for word in strings {
        let Some(&row) = key2row.get(&spacy_hash(&word)) else {
            continue;
        };
        let row = row as usize;
        if row >= rows {
            return Err(VectorsError::format(
                &key2row_path,
                format!("{word:?} maps to row {row}, but the table has {rows} rows"),
            ));
        }
        data.extend_from_slice(&table[row * dim..(row + 1) * dim]);
        words.push(word);
    }
    if words.is_empty() {
        return Err(VectorsError::format(
            &key2row_path,
            "no word of strings.json has a vector (hash mismatch?)",
        ));
    }
    WordVectors::new(words, dim, data)
}

/// spaCy's string hash: MurmurHash64A of the UTF-8 bytes with seed 1.
fn spacy_hash(word: &str) -> u64 {
    murmur64a(word.as_bytes(), 1)
}

fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut k = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rejects_a_wrong_size_and_keeps_the_first_duplicate() {
        assert!(WordVectors::new(vec!["a".into()], 2, vec![1.0]).is_err());
        let v = WordVectors::new(vec!["a".into(), "a".into()], 1, vec![1.0, 2.0]).unwrap();
        assert_eq!(v.get("a").as_deref(), Some(&[1.0][..]));
        assert_eq!(v.get("b"), None);
    }

    #[test]
    fn word_pieces_give_whole_words_their_row_and_others_the_mean_of_their_pieces() {
        let pieces = ["[PAD]", "[UNK]", "play", "##ing", "##s", "ing", "-", "x"];
        let data: Vec<f32> = (0..pieces.len()).flat_map(|i| [i as f32, 1.0]).collect();
        let v =
            WordVectors::from_word_pieces(pieces.iter().map(|p| p.to_string()).collect(), 2, data)
                .unwrap();
        // Special and continuation pieces are not words of the table.
        assert_eq!(v.words(), ["play", "ing", "-", "x"]);
        assert_eq!(v.get("play").as_deref(), Some(&[2.0, 1.0][..]));
        // play + ##ing + ##s: rows 2, 3, 4.
        assert_eq!(v.get("Playings").as_deref(), Some(&[3.0, 1.0][..]));
        // Punctuation splits runs: play, -, x (rows 2, 6, 7); "##ing" alone never starts a word.
        assert_eq!(v.get("play-x").as_deref(), Some(&[5.0, 1.0][..]));
        // A run without a split adds nothing; a word with no known run has no vector.
        assert_eq!(v.get("play-zz").as_deref(), Some(&[4.0, 1.0][..]));
        assert_eq!(v.get("zz"), None);
        assert!(WordVectors::from_word_pieces(vec!["a".into()], 2, vec![1.0]).is_err());
    }

    #[test]
    fn concatenation_follows_the_second_table_and_pads_the_first() {
        let glove =
            WordVectors::new(vec!["a".into(), "b".into()], 2, vec![1., 2., 3., 4.]).unwrap();
        let encoded = WordVectors::new(vec!["b".into(), "c".into()], 1, vec![5., 6.]).unwrap();
        let both = WordVectors::concat(&glove, &encoded).unwrap();
        assert_eq!(both.dim(), 3);
        assert_eq!(both.words(), ["b", "c"]);
        assert_eq!(both.get("b").as_deref(), Some(&[3., 4., 5.][..]));
        assert_eq!(both.get("c").as_deref(), Some(&[0., 0., 6.][..]));
        assert_eq!(both.get("a"), None);
    }

    #[test]
    fn missing_package_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = VectorSource::Glove
            .load(dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("fetch-models.sh"), "{err}");
    }

    /// The real packages, where `scripts/fetch-models.sh` has fetched them.
    #[test]
    fn real_vectors_load_when_fetched() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vendor/models");
        for source in [
            VectorSource::Glove,
            VectorSource::Spacy,
            VectorSource::Minilm,
        ] {
            if !dir.join(source.dir_name()).is_dir() {
                eprintln!("skipped {}: not fetched", source.name());
                continue;
            }
            let vectors = source.load(&dir).unwrap();
            // A wrong hash would leave almost every spaCy word without its row.
            assert!(
                vectors.len() > 15_000,
                "{}: {} words",
                source.name(),
                vectors.len()
            );
            let cos = |a: &str, b: &str| {
                let (a, b) = (vectors.get(a).unwrap(), vectors.get(b).unwrap());
                let (a, b) = (a.as_ref(), b.as_ref());
                let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
                dot / (norm(a) * norm(b))
            };
            assert!(
                cos("king", "queen") > cos("king", "carburetor") + 0.2,
                "{}: related words must be closer",
                source.name()
            );
        }
    }
}
