//! Dense vectors beside the BM25 index: one L2-normalised vector per unit (sentence or
//! passage), made by a sentence encoder when the unit is indexed, searched by brute-force inner
//! product.
//!
//! Each tantivy record of an index made with vectors carries `row`, the number of its vector.
//! Rows are numbered in the order units are added and never reused: a document indexed again gets
//! new rows, and the old ones stay in their file unused (the index skips records that are gone).
//! Every commit writes the rows added since the last one to a new file (`vectors-ROW.vec`, a
//! temporary file renamed when complete), then records it in `ansel-index.json` (replaced by a
//! rename), then commits tantivy: a crash at any point leaves files that hold every row the
//! committed records use, and at worst rows that nothing uses.
//!
//! A vector file starts with a header (magic, format, dimension, the model's name, the row
//! count) and ends with a checksum of its rows; reading checks all of it against
//! `ansel-index.json`, so a truncated file, a corrupt one or one written by another model is an
//! error that names the file.

use crate::graph::{DenseSearch, Graph, GraphFile};
use crate::IndexError;
use serde::{Deserialize, Serialize};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// How vectors are stored, on disk and in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorFormat {
    /// 4 bytes a component.
    F32,
    /// 2 bytes a component on disk (IEEE half precision); searched as f32 in memory.
    F16,
    /// 1 byte a component and a 4-byte scale a vector (symmetric, the vector's largest
    /// component maps to 127); the question is quantized the same way and the inner product
    /// is taken in integers.
    Int8,
}

impl VectorFormat {
    pub const NAMES: [&'static str; 3] = ["f32", "f16", "int8"];

    pub fn name(self) -> &'static str {
        match self {
            VectorFormat::F32 => "f32",
            VectorFormat::F16 => "f16",
            VectorFormat::Int8 => "int8",
        }
    }

    fn code(self) -> u32 {
        match self {
            VectorFormat::F32 => 0,
            VectorFormat::F16 => 1,
            VectorFormat::Int8 => 2,
        }
    }

    fn from_code(code: u32) -> Option<VectorFormat> {
        [VectorFormat::F32, VectorFormat::F16, VectorFormat::Int8]
            .into_iter()
            .find(|f| f.code() == code)
    }

    /// Bytes one row takes on disk.
    fn row_bytes(self, dim: usize) -> usize {
        match self {
            VectorFormat::F32 => 4 * dim,
            VectorFormat::F16 => 2 * dim,
            VectorFormat::Int8 => 4 + dim,
        }
    }
}

impl std::str::FromStr for VectorFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f32" => Ok(VectorFormat::F32),
            "f16" => Ok(VectorFormat::F16),
            "int8" => Ok(VectorFormat::Int8),
            other => Err(format!(
                "unknown vector format {other:?} (one of {})",
                VectorFormat::NAMES.join(", ")
            )),
        }
    }
}

/// The format new indexes store their vectors in: chosen by measuring recall and search time
/// over a 118k-sentence index (docs/results/dense-retrieval.md).
pub const DEFAULT_FORMAT: VectorFormat = VectorFormat::Int8;

/// A sentence encoder: what turns units (when indexing) and questions (when searching) into
/// vectors. Implemented by the command line over ansel's bi-encoders.
pub trait Encoder: Send + Sync {
    /// The model's name as the index records it (what loads it again).
    fn model(&self) -> &str;
    /// Components of each vector.
    fn dim(&self) -> usize;
    /// One vector of `dim()` components per text, in order (any length: the index normalises).
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
}

/// The sentence an encoder is checked with: its vector, recorded when the index is made, tells
/// this model's vectors from another's whatever name the model is given.
pub const PROBE_TEXT: &str = "The probe sentence tells one sentence encoder from another.";
/// Components of the probe's vector kept in the index's settings.
const PROBE_DIMS: usize = 16;
/// Largest difference of a probe component allowed between the index and an encoder
/// (libtorch's threads and kernels move components by far less).
pub(crate) const PROBE_TOLERANCE: f32 = 1e-3;

/// The first components of `encoder`'s normalised vector of [`PROBE_TEXT`].
pub fn probe(encoder: &dyn Encoder) -> Result<Vec<f32>, String> {
    let mut vectors = encoder.encode(&[PROBE_TEXT])?;
    let mut v = vectors.pop().ok_or("the encoder returned no vector")?;
    if v.len() != encoder.dim() {
        return Err(format!(
            "the encoder returned {} components, not its dimension {}",
            v.len(),
            encoder.dim()
        ));
    }
    normalise(&mut v);
    v.truncate(PROBE_DIMS);
    Ok(v.iter().map(|x| (x * 1e5).round() / 1e5).collect())
}

/// The largest difference of a component between two probes (infinite when their lengths
/// differ).
pub(crate) fn probe_difference(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max)
}

/// What `ansel-index.json` records about an index's vectors (under `dense`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseSettings {
    /// The encoder's name: what `ask --retriever dense` loads to encode questions.
    pub model: String,
    /// Components of each vector.
    pub dim: usize,
    pub format: VectorFormat,
    /// Rows stored, in all files: one per unit ever added (a replaced document's stay, unused).
    pub count: u64,
    /// The vector files, in row order.
    pub files: Vec<VectorFile>,
    /// The first components of the model's vector of [`PROBE_TEXT`].
    pub probe: Vec<f32>,
    /// The graph of the approximate search, once the index is large enough for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<GraphFile>,
}

/// One vector file and the rows it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorFile {
    pub file: String,
    pub rows: u64,
}

impl DenseSettings {
    /// Settings for an empty store of `encoder`'s vectors.
    pub(crate) fn new(
        encoder: &dyn Encoder,
        format: VectorFormat,
        dir: &Path,
    ) -> Result<DenseSettings, IndexError> {
        let probe = probe(encoder).map_err(|message| IndexError::Encoder {
            path: dir.to_path_buf(),
            model: encoder.model().to_string(),
            message,
        })?;
        Ok(DenseSettings {
            model: encoder.model().to_string(),
            dim: encoder.dim(),
            format,
            count: 0,
            files: Vec::new(),
            probe,
            graph: None,
        })
    }

    /// Refuses an encoder whose vectors are not this index's: another dimension, or another
    /// vector for the probe sentence.
    pub fn check_encoder(&self, encoder: &dyn Encoder, dir: &Path) -> Result<(), IndexError> {
        let mismatch = |why: String| IndexError::EncoderMismatch {
            path: dir.to_path_buf(),
            index_model: self.model.clone(),
            model: encoder.model().to_string(),
            why,
        };
        if encoder.dim() != self.dim {
            return Err(mismatch(format!(
                "it makes {}-component vectors, the index holds {}-component ones",
                encoder.dim(),
                self.dim
            )));
        }
        let probe = probe(encoder).map_err(|message| IndexError::Encoder {
            path: dir.to_path_buf(),
            model: encoder.model().to_string(),
            message,
        })?;
        let worst = probe_difference(&probe, &self.probe);
        if worst > PROBE_TOLERANCE {
            return Err(mismatch(format!(
                "it encodes the probe sentence differently (a component differs by {worst:.4})"
            )));
        }
        Ok(())
    }
}

/// Divides `v` by its length (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

const MAGIC: &[u8; 8] = b"ANSELVEC";
const VERSION: u32 = 1;
/// Bytes of the count field, the last of the header (patched when the file is complete).
const COUNT_BYTES: u64 = 8;
const CHECKSUM_BYTES: usize = 8;

/// A 64-bit checksum of a file's rows: FNV-1a over 8-byte words, then the bytes left, the same
/// however the bytes are handed to it. Any change of a word changes it.
#[derive(Clone, Copy)]
pub(crate) struct Checksum {
    hash: u64,
    /// Bytes of a word not yet complete.
    tail: [u8; 8],
    tail_len: usize,
}

impl Checksum {
    pub(crate) fn new() -> Checksum {
        Checksum {
            hash: 0xcbf2_9ce4_8422_2325,
            tail: [0; 8],
            tail_len: 0,
        }
    }

    fn word(&mut self, w: u64) {
        self.hash = (self.hash ^ w)
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(29);
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        if self.tail_len > 0 {
            let take = (8 - self.tail_len).min(bytes.len());
            self.tail[self.tail_len..self.tail_len + take].copy_from_slice(&bytes[..take]);
            self.tail_len += take;
            bytes = &bytes[take..];
            if self.tail_len < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.tail));
            self.tail_len = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.word(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.tail_len = rest.len();
    }

    pub(crate) fn finish(&self) -> u64 {
        self.tail[..self.tail_len].iter().fold(self.hash, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

/// The name of the file holding the rows from `first_row` on.
pub(crate) fn file_name(first_row: u64) -> String {
    format!("vectors-{first_row:010}.vec")
}

/// Whether `name` is one of ours (a vector file or its temporary).
pub(crate) fn is_vector_file(name: &str) -> bool {
    name.starts_with("vectors-") && (name.ends_with(".vec") || name.ends_with(".vec.tmp"))
}

/// Writes one vector file: rows are streamed to `NAME.tmp`, which [`FileWriter::finish`] seals
/// (count, checksum, fsync) and renames.
pub(crate) struct FileWriter {
    tmp: PathBuf,
    path: PathBuf,
    out: BufWriter<std::fs::File>,
    format: VectorFormat,
    dim: usize,
    rows: u64,
    checksum: Checksum,
    row: Vec<u8>,
    /// Bytes before the first row.
    header_len: u64,
}

impl FileWriter {
    pub(crate) fn create(
        dir: &Path,
        name: &str,
        settings: &DenseSettings,
    ) -> Result<FileWriter, IndexError> {
        let path = dir.join(name);
        let tmp = dir.join(format!("{name}.tmp"));
        let file = std::fs::File::create(&tmp).map_err(|e| IndexError::io(&tmp, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let model = settings.model.as_bytes();
        let mut header = Vec::with_capacity(40 + model.len());
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&settings.format.code().to_le_bytes());
        header.extend_from_slice(&(settings.dim as u32).to_le_bytes());
        header.extend_from_slice(&(model.len() as u32).to_le_bytes());
        header.extend_from_slice(model);
        header.extend_from_slice(&0u64.to_le_bytes());
        out.write_all(&header)
            .map_err(|e| IndexError::io(&tmp, e))?;
        Ok(FileWriter {
            tmp,
            path,
            out,
            format: settings.format,
            dim: settings.dim,
            rows: 0,
            checksum: Checksum::new(),
            row: Vec::with_capacity(settings.format.row_bytes(settings.dim)),
            header_len: header.len() as u64,
        })
    }

    /// Appends a row: `v` normalised, in the file's format.
    pub(crate) fn push(&mut self, v: &[f32]) -> Result<(), IndexError> {
        debug_assert_eq!(v.len(), self.dim);
        self.row.clear();
        encode_row(self.format, v, &mut self.row);
        self.checksum.update(&self.row);
        self.out
            .write_all(&self.row)
            .map_err(|e| IndexError::io(&self.tmp, e))?;
        self.rows += 1;
        Ok(())
    }

    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes the count and the checksum, makes the file durable and gives it its name.
    pub(crate) fn finish(self) -> Result<VectorFile, IndexError> {
        let FileWriter {
            tmp,
            path,
            out,
            rows,
            checksum,
            header_len,
            ..
        } = self;
        let io = |e| IndexError::io(&tmp, e);
        let mut file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.write_all(&checksum.finish().to_le_bytes())
            .map_err(io)?;
        // The count is the header's last field, just before the first row.
        file.seek(SeekFrom::Start(header_len - COUNT_BYTES))
            .map_err(io)?;
        file.write_all(&rows.to_le_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&tmp, &path).map_err(|e| IndexError::io(&path, e))?;
        sync_dir(path.parent().unwrap_or(Path::new(".")));
        Ok(VectorFile {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            rows,
        })
    }

    /// Removes the temporary file (a write failed, or the writer was dropped uncommitted).
    pub(crate) fn abandon(self) {
        drop(self.out);
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Makes a rename durable (best effort: not every platform can open a folder).
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Appends `v` (normalised) in `format`.
fn encode_row(format: VectorFormat, v: &[f32], out: &mut Vec<u8>) {
    match format {
        VectorFormat::F32 => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        VectorFormat::F16 => v
            .iter()
            .for_each(|x| out.extend_from_slice(&half::f16::from_f32(*x).to_le_bytes())),
        VectorFormat::Int8 => {
            let (scale, q) = quantize(v);
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend(q.iter().map(|&x| x as u8));
        }
    }
}

/// Symmetric int8 quantization: `v ≈ scale * q`, the largest component mapped to ±127.
pub fn quantize(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    let q = v
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale, q)
}

/// The rows of one vector file in memory.
pub(crate) enum Block {
    /// f32 and f16 files.
    F32 {
        values: Vec<f32>,
    },
    Int8 {
        values: Vec<i8>,
        scales: Vec<f32>,
    },
}

impl Block {
    pub(crate) fn rows(&self, dim: usize) -> usize {
        match self {
            Block::F32 { values } => values.len() / dim.max(1),
            Block::Int8 { scales, .. } => scales.len(),
        }
    }

    /// Row `i`'s int8 components: the stored ones, or the f32 row quantized.
    pub(crate) fn row_i8(&self, i: usize, dim: usize) -> Vec<i8> {
        match self {
            Block::F32 { values } => quantize(&values[i * dim..(i + 1) * dim]).1,
            Block::Int8 { values, .. } => values[i * dim..(i + 1) * dim].to_vec(),
        }
    }

    /// The inner product of row `i` with the query.
    #[inline(always)]
    fn score(&self, i: usize, dim: usize, query: &Query) -> f32 {
        match self {
            Block::F32 { values } => dot_f32(&values[i * dim..(i + 1) * dim], &query.f32),
            Block::Int8 { values, scales } => {
                int8_score(&values[i * dim..(i + 1) * dim], scales[i], query)
            }
        }
    }

    /// Row `i` as f32 (for rewriting a store in another format).
    fn row(&self, i: usize, dim: usize) -> Vec<f32> {
        match self {
            Block::F32 { values } => values[i * dim..(i + 1) * dim].to_vec(),
            Block::Int8 { values, scales } => values[i * dim..(i + 1) * dim]
                .iter()
                .map(|&q| q as f32 * scales[i])
                .collect(),
        }
    }
}

/// Reads and checks the vector file `entry` of an index whose settings are `settings`.
pub(crate) fn read_file(
    dir: &Path,
    entry: &VectorFile,
    settings: &DenseSettings,
) -> Result<Block, IndexError> {
    let path = dir.join(&entry.file);
    let bad = |message: String| IndexError::Vectors {
        path: path.clone(),
        message,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => bad(format!(
                "missing: ansel-index.json lists it with {} vectors",
                entry.rows
            )),
            _ => IndexError::io(&path, e),
        })?;
    let fixed = MAGIC.len() + 16;
    if bytes.len() < fixed {
        return Err(bad(format!(
            "truncated: {} bytes, fewer than a vector file's header",
            bytes.len()
        )));
    }
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad("not an ansel vector file (no ANSELVEC header)".into()));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let version = word(8);
    if version != VERSION {
        return Err(bad(format!(
            "vector file version {version}; this ansel reads version {VERSION}"
        )));
    }
    let format = VectorFormat::from_code(word(12));
    let dim = word(16) as usize;
    let model_len = word(20) as usize;
    let header_len = fixed + model_len + COUNT_BYTES as usize;
    if bytes.len() < header_len {
        return Err(bad(format!(
            "truncated: {} bytes, fewer than its header's {header_len}",
            bytes.len()
        )));
    }
    let model = String::from_utf8_lossy(&bytes[fixed..fixed + model_len]).into_owned();
    if format != Some(settings.format) || dim != settings.dim || model != settings.model {
        return Err(bad(format!(
            "holds {} vectors of {dim} components from model {model:?}, but ansel-index.json \
             records {} vectors of {} components from model {:?}: a file from another index or \
             model; rebuild the index with `ansel index --dense`",
            format.map_or("unknown", VectorFormat::name),
            settings.format.name(),
            settings.dim,
            settings.model
        )));
    }
    let rows = u64::from_le_bytes(
        bytes[header_len - COUNT_BYTES as usize..header_len]
            .try_into()
            .expect("8 bytes"),
    );
    if rows != entry.rows {
        return Err(bad(format!(
            "holds {rows} vectors, but ansel-index.json records {}",
            entry.rows
        )));
    }
    let row_bytes = settings.format.row_bytes(dim);
    let expected = header_len as u64 + rows * row_bytes as u64 + CHECKSUM_BYTES as u64;
    if bytes.len() as u64 != expected {
        let what = if (bytes.len() as u64) < expected {
            "truncated"
        } else {
            "too long"
        };
        return Err(bad(format!(
            "{what}: {} bytes, where {rows} vectors of {dim} {} components take {expected}",
            bytes.len(),
            settings.format.name()
        )));
    }
    let data = &bytes[header_len..bytes.len() - CHECKSUM_BYTES];
    let mut checksum = Checksum::new();
    checksum.update(data);
    let stored = u64::from_le_bytes(
        bytes[bytes.len() - CHECKSUM_BYTES..]
            .try_into()
            .expect("8 bytes"),
    );
    if checksum.finish() != stored {
        return Err(bad(
            "corrupt: its checksum does not match its vectors; rebuild the index with \
             `ansel index --dense`"
                .into(),
        ));
    }
    Ok(match settings.format {
        VectorFormat::F32 => Block::F32 {
            values: data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect(),
        },
        VectorFormat::F16 => Block::F32 {
            values: data
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes(b.try_into().expect("2 bytes")).to_f32())
                .collect(),
        },
        VectorFormat::Int8 => {
            let mut values = Vec::with_capacity(rows as usize * dim);
            let mut scales = Vec::with_capacity(rows as usize);
            for row in data.chunks_exact(row_bytes) {
                scales.push(f32::from_le_bytes(row[..4].try_into().expect("4 bytes")));
                values.extend(row[4..].iter().map(|&b| b as i8));
            }
            Block::Int8 { values, scales }
        }
    })
}

/// A question's vector, prepared for every block format.
pub(crate) struct Query {
    f32: Vec<f32>,
    i8: (f32, Vec<i8>),
}

impl Query {
    pub(crate) fn new(vector: &[f32]) -> Query {
        let mut f32 = vector.to_vec();
        normalise(&mut f32);
        let i8 = quantize(&f32);
        Query { f32, i8 }
    }

    /// Its int8 components (what the graph compares).
    pub(crate) fn i8(&self) -> &[i8] {
        &self.i8.1
    }
}

/// Writes into `out` the inner product of every row of `block` with the query.
fn block_scores(block: &Block, dim: usize, query: &Query, out: &mut Vec<f32>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has just been checked for the features the function is compiled for.
        unsafe { block_scores_avx2(block, dim, query, out) };
        return;
    }
    block_scores_plain(block, dim, query, out);
}

/// [`block_scores_plain`] compiled for AVX2 and FMA (the loops vectorise 8 floats wide).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_scores_avx2(block: &Block, dim: usize, query: &Query, out: &mut Vec<f32>) {
    block_scores_plain(block, dim, query, out);
}

#[inline(always)]
fn block_scores_plain(block: &Block, dim: usize, query: &Query, out: &mut Vec<f32>) {
    // Rows by chunks, not by index: a third faster than `Block::score` row by row.
    match block {
        Block::F32 { values } => {
            out.extend(values.chunks_exact(dim).map(|row| dot_f32(row, &query.f32)));
        }
        Block::Int8 { values, scales } => out.extend(
            values
                .chunks_exact(dim)
                .zip(scales)
                .map(|(row, &scale)| int8_score(row, scale, query)),
        ),
    }
}

/// The inner product of an int8 row (with its scale) and the query.
#[inline(always)]
fn int8_score(row: &[i8], scale: f32, query: &Query) -> f32 {
    dot_i8(row, &query.i8.1) as f32 * scale * query.i8.0
}

#[inline(always)]
fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0.0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 32;
    let mut acc = [0i32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: i32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(&x, &y)| x as i32 * y as i32)
        .sum();
    for (x, y) in ac.zip(bc) {
        for ((s, &x), &y) in acc.iter_mut().zip(x).zip(y) {
            *s += x as i16 as i32 * y as i16 as i32;
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// The vectors of the records a searcher sees: every loaded row, and for each the record it
/// belongs to (none: a replaced document's, or one added after the searcher's commit).
pub(crate) struct DenseView {
    generation: u64,
    dim: usize,
    blocks: Vec<std::sync::Arc<Block>>,
    /// The first row of each block.
    starts: Vec<usize>,
    /// The graph of the first blocks' rows, if the index has one.
    graph: Option<std::sync::Arc<Graph>>,
    /// By row: the address of the record it belongs to.
    addresses: Vec<Option<tantivy::DocAddress>>,
    /// Records with a vector.
    live: usize,
}

impl DenseView {
    /// The `limit` records whose vectors have the largest inner product with `query`, best
    /// first (ties: the earlier row), found as `how` says.
    pub(crate) fn search(
        &self,
        query: &Query,
        limit: usize,
        how: DenseSearch,
    ) -> Result<Vec<(tantivy::DocAddress, f32)>, IndexError> {
        if limit == 0 || self.live == 0 {
            return Ok(Vec::new());
        }
        let live = |row: usize| self.addresses.get(row).is_some_and(Option::is_some);
        let mut found: Vec<(u32, f32)> = Vec::new();
        let mut exact_from = 0;
        if let (Some(graph), DenseSearch::Approximate { expansion }) = (&self.graph, how) {
            let rows = graph.search(query, limit, expansion, |key| live(key as usize))?;
            found.extend(
                rows.into_iter()
                    .map(|row| (row as u32, self.score(row as usize, query))),
            );
            exact_from = self.starts.partition_point(|&s| (s as u64) < graph.rows());
        }
        let mut scores = Vec::new();
        for block in &self.blocks[exact_from..] {
            block_scores(block, self.dim, query, &mut scores);
        }
        let first = self.starts.get(exact_from).copied().unwrap_or(0);
        let exact = scores
            .iter()
            .enumerate()
            .map(|(i, &s)| (first + i, s))
            .filter(|&(row, s)| live(row) && !s.is_nan())
            .map(|(row, s)| (row as u32, s));
        Ok(top(found.into_iter().chain(exact), limit)
            .into_iter()
            .map(|(row, s)| (self.addresses[row as usize].expect("live row"), s))
            .collect())
    }

    /// The exact score of one row.
    fn score(&self, row: usize, query: &Query) -> f32 {
        let block = self.starts.partition_point(|&s| s <= row) - 1;
        self.blocks[block].score(row - self.starts[block], self.dim, query)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
}

/// The `limit` best of `(row, score)`, best first: the highest score, then the earlier row. One
/// pass with a heap of `limit` entries: no copy or sort of every row.
fn top(found: impl Iterator<Item = (u32, f32)>, limit: usize) -> Vec<(u32, f32)> {
    use std::cmp::{Ordering, Reverse};
    use std::collections::BinaryHeap;
    /// Greater is better: a higher score, then an earlier row.
    #[derive(PartialEq)]
    struct Ranked(f32, u32);
    impl Eq for Ranked {}
    impl PartialOrd for Ranked {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Ranked {
        fn cmp(&self, other: &Self) -> Ordering {
            self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
        }
    }
    if limit == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<Reverse<Ranked>> = BinaryHeap::with_capacity(limit + 1);
    for (row, score) in found {
        let ranked = Ranked(score, row);
        if heap.len() < limit {
            heap.push(Reverse(ranked));
        } else if heap.peek().is_some_and(|Reverse(worst)| ranked > *worst) {
            heap.pop();
            heap.push(Reverse(ranked));
        }
    }
    let mut best: Vec<Ranked> = heap.into_iter().map(|Reverse(r)| r).collect();
    best.sort_by(|a, b| b.cmp(a));
    best.into_iter().map(|Ranked(s, row)| (row, s)).collect()
}

/// An index's vectors as loaded so far: vector files never change once listed, so a new
/// commit loads only the files it added.
#[derive(Default)]
pub(crate) struct DenseStore {
    loaded: Option<Loaded>,
    view: Option<std::sync::Arc<DenseView>>,
}

struct Loaded {
    settings: DenseSettings,
    blocks: Vec<std::sync::Arc<Block>>,
    graph: Option<std::sync::Arc<Graph>>,
}

impl DenseStore {
    /// The view for `searcher`: built once per searcher generation, reading `settings` (the
    /// index's current ones) and whatever vector files it lists that are not loaded yet.
    pub(crate) fn view(
        &mut self,
        dir: &Path,
        settings: impl FnOnce() -> Result<DenseSettings, IndexError>,
        searcher: &tantivy::Searcher,
        row_field: &str,
    ) -> Result<std::sync::Arc<DenseView>, IndexError> {
        let generation = searcher.generation().generation_id();
        if let Some(view) = self.view.as_ref().filter(|v| v.generation == generation) {
            return Ok(view.clone());
        }
        let settings = settings()?;
        let reusable = self.loaded.take().filter(|l| {
            l.settings.model == settings.model
                && l.settings.dim == settings.dim
                && l.settings.format == settings.format
                && l.settings.probe == settings.probe
                && settings.files.starts_with(&l.settings.files)
        });
        let (mut blocks, graph) = reusable.map(|l| (l.blocks, l.graph)).unwrap_or_default();
        for entry in &settings.files[blocks.len()..] {
            blocks.push(std::sync::Arc::new(read_file(dir, entry, &settings)?));
        }
        let mut starts = Vec::with_capacity(blocks.len());
        let mut rows = 0usize;
        for block in &blocks {
            starts.push(rows);
            rows += block.rows(settings.dim);
        }
        let settings_path = dir.join(crate::index::SETTINGS_FILE);
        let graph = match &settings.graph {
            None => None,
            Some(entry) if graph.as_ref().is_some_and(|g| g.entry() == entry) => graph,
            Some(entry) => {
                if entry.rows as usize != rows && !starts.contains(&(entry.rows as usize)) {
                    return Err(IndexError::Vectors {
                        path: settings_path,
                        message: format!(
                            "its graph holds the first {} vectors, which is not where a vector \
                             file ends; rebuild the index with `ansel index --dense`",
                            entry.rows
                        ),
                    });
                }
                Some(std::sync::Arc::new(Graph::open(dir, entry, settings.dim)?))
            }
        };
        if rows as u64 != settings.count {
            return Err(IndexError::Vectors {
                path: settings_path,
                message: format!(
                    "records {} vectors, but its vector files hold {rows}",
                    settings.count
                ),
            });
        }
        let mut addresses = vec![None; rows];
        let (mut live, mut missing) = (0usize, 0usize);
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let column = segment
                .fast_fields()
                .u64(row_field)
                .map_err(|e| IndexError::tantivy(dir, e))?;
            for doc in segment.doc_ids_alive() {
                match column.first(doc) {
                    Some(row) if (row as usize) < rows => {
                        addresses[row as usize] = Some(tantivy::DocAddress::new(ord as u32, doc));
                        live += 1;
                    }
                    Some(row) => {
                        return Err(IndexError::Vectors {
                            path: settings_path,
                            message: format!(
                                "a record uses vector {row}, but the vector files hold {rows}: \
                                 a vector file is missing or older than the index; rebuild \
                                 the index with `ansel index --dense`"
                            ),
                        })
                    }
                    None => missing += 1,
                }
            }
        }
        if missing > 0 {
            return Err(IndexError::Vectors {
                path: settings_path,
                message: format!(
                    "{missing} records have no vector (added by a program that did not \
                     encode them); rebuild the index with `ansel index --dense {}`",
                    settings.model
                ),
            });
        }
        let view = std::sync::Arc::new(DenseView {
            generation,
            dim: settings.dim,
            blocks: blocks.clone(),
            starts,
            graph: graph.clone(),
            addresses,
            live,
        });
        self.loaded = Some(Loaded {
            settings,
            blocks,
            graph,
        });
        self.view = Some(view.clone());
        Ok(view)
    }
}

/// Hands `each` every row of `settings`' files as f32 (int8 rows dequantized), in order, one
/// file in memory at a time.
pub(crate) fn for_each_row(
    dir: &Path,
    settings: &DenseSettings,
    mut each: impl FnMut(&[f32]) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    for entry in &settings.files {
        let block = read_file(dir, entry, settings)?;
        for i in 0..block.rows(settings.dim) {
            each(&block.row(i, settings.dim))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_does_not_depend_on_how_the_bytes_are_handed_over() {
        let bytes: Vec<u8> = (0..203u32).map(|i| (i * 37 % 251) as u8).collect();
        let mut whole = Checksum::new();
        whole.update(&bytes);
        for chunk in [1, 3, 8, 13, 68] {
            let mut pieces = Checksum::new();
            bytes.chunks(chunk).for_each(|c| pieces.update(c));
            assert_eq!(pieces.finish(), whole.finish(), "chunks of {chunk}");
        }
        let mut changed = bytes.clone();
        changed[100] ^= 1;
        let mut other = Checksum::new();
        other.update(&changed);
        assert_ne!(other.finish(), whole.finish());
    }

    #[test]
    fn top_keeps_the_best_scores_and_the_earlier_row_of_a_tie() {
        let scores: Vec<(u32, f32)> = (0..1000u32)
            .map(|row| (row, ((row * 7919) % 101) as f32))
            .collect();
        let mut sorted = scores.clone();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for limit in [1, 7, 100, 1000, 2000] {
            let expected: Vec<(u32, f32)> = sorted.iter().copied().take(limit).collect();
            assert_eq!(
                top(scores.iter().copied(), limit),
                expected,
                "limit {limit}"
            );
        }
        assert!(top(scores.into_iter(), 0).is_empty());
    }

    #[test]
    fn int8_quantization_keeps_the_largest_component_and_the_inner_product() {
        let v = [0.5f32, -0.25, 0.1, 0.0];
        let (scale, q) = quantize(&v);
        assert_eq!(q[0], 127);
        assert_eq!(q[1], -64);
        assert_eq!(quantize(&[0.0; 4]), (0.0, vec![0; 4]));
        let mut a: Vec<f32> = (0..384).map(|i| ((i * 7919) % 101) as f32 - 50.0).collect();
        let mut b: Vec<f32> = (0..384)
            .map(|i| ((i * 104_729) % 97) as f32 - 48.0)
            .collect();
        normalise(&mut a);
        normalise(&mut b);
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let (qa, qb) = (Query::new(&a), Query::new(&b));
        let approx = dot_i8(&qa.i8.1, &qb.i8.1) as f32 * qa.i8.0 * qb.i8.0;
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
        assert!((dot_f32(&a, &b) - exact).abs() < 1e-5);
        let _ = scale;
    }
}
