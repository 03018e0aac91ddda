//! Vectors encoded elsewhere (a Spark job, another machine) for `ansel index --dense MODEL
//! --vectors PATH` to store instead of encoding the texts again.
//!
//! A file (`*.ansel-vectors`) holds one vector per text, keyed by the text's SHA-256, beside
//! the model's name, dimension and probe vector, so that an index refuses vectors made by
//! another encoder than the one that will encode its questions:
//!
//! ```text
//! "ANSELPRE" | u32 header length | header (JSON: model, dim, probe)
//! rows: 16-byte key (SHA-256 of the text, first 16 bytes) | dim x f32
//! "ANSELEND" | u64 rows | u32 CRC-32 of header and rows          (all integers little-endian)
//! ```
//!
//! Written to `NAME.tmp` and renamed when complete, so a file that exists is whole; a damaged
//! or truncated one is an error naming it. The files are memory-mapped: only a table of keys and
//! offsets (about 40 bytes a text) is held in memory, 0.4 GB for 10M texts.

use crate::dense::{self, Encoder};
use crate::IndexError;
use memmap2::Mmap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"ANSELPRE";
const END: &[u8; 8] = b"ANSELEND";
const KEY_BYTES: usize = 16;
const TRAILER_BYTES: usize = 8 + 8 + 4;
/// What a file of precomputed vectors is named with.
pub const EXTENSION: &str = "ansel-vectors";

/// The header of a file of precomputed vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecomputedHeader {
    /// The encoder's name as an index would record it.
    pub model: String,
    pub dim: usize,
    /// [`dense::probe`] of the encoder.
    pub probe: Vec<f32>,
}

fn key(text: &str) -> [u8; KEY_BYTES] {
    let digest = Sha256::digest(text.as_bytes());
    let mut key = [0; KEY_BYTES];
    key.copy_from_slice(&digest[..KEY_BYTES]);
    key
}

/// Writes `texts`' vectors made by `encoder` to `path` (replacing it when complete), encoding
/// `batch` texts at a time; returns the rows written.
pub fn write_file(
    path: &Path,
    encoder: &dyn Encoder,
    texts: &[&str],
    batch: usize,
) -> Result<u64, IndexError> {
    let fail = |message: String| IndexError::Vectors {
        path: path.to_path_buf(),
        message,
    };
    let header = PrecomputedHeader {
        model: encoder.model().to_string(),
        dim: encoder.dim(),
        probe: dense::probe(encoder).map_err(&fail)?,
    };
    let tmp = path.with_extension("tmp");
    write_rows(&tmp, &header, encoder, texts, batch, &fail)
        .and_then(|rows| {
            std::fs::rename(&tmp, path).map_err(|e| IndexError::io(path, e))?;
            Ok(rows)
        })
        // A file that failed half-way is never left behind, whole or in part.
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Writes the whole file to `tmp` and syncs it; returns the rows written.
fn write_rows(
    tmp: &Path,
    header: &PrecomputedHeader,
    encoder: &dyn Encoder,
    texts: &[&str],
    batch: usize,
    fail: &dyn Fn(String) -> IndexError,
) -> Result<u64, IndexError> {
    let io = |e| IndexError::io(tmp, e);
    let mut out = BufWriter::new(File::create(tmp).map_err(io)?);
    let mut crc = crc32fast::Hasher::new();
    let header_bytes = serde_json::to_vec(header).map_err(|e| fail(e.to_string()))?;
    out.write_all(MAGIC).map_err(io)?;
    out.write_all(&(header_bytes.len() as u32).to_le_bytes())
        .map_err(io)?;
    out.write_all(&header_bytes).map_err(io)?;
    crc.update(&header_bytes);
    let mut rows = 0u64;
    for chunk in texts.chunks(batch.max(1)) {
        let vectors = encoder.encode(chunk).map_err(fail)?;
        if vectors.len() != chunk.len() {
            return Err(fail(format!(
                "the encoder returned {} vectors for {} texts",
                vectors.len(),
                chunk.len()
            )));
        }
        for (text, vector) in chunk.iter().zip(vectors) {
            if vector.len() != header.dim {
                return Err(fail(format!(
                    "the encoder returned {} components, not {}",
                    vector.len(),
                    header.dim
                )));
            }
            let k = key(text);
            let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
            for part in [&k[..], &bytes[..]] {
                out.write_all(part).map_err(io)?;
                crc.update(part);
            }
            rows += 1;
        }
    }
    out.write_all(END).map_err(io)?;
    out.write_all(&rows.to_le_bytes()).map_err(io)?;
    out.write_all(&crc.finalize().to_le_bytes()).map_err(io)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(rows)
}

/// Files of precomputed vectors opened together: a text's vector is looked up by its key.
pub struct PrecomputedVectors {
    header: PrecomputedHeader,
    maps: Vec<(PathBuf, Mmap)>,
    /// Key -> (file, byte offset of its vector).
    rows: HashMap<[u8; KEY_BYTES], (u32, u64)>,
}

impl PrecomputedVectors {
    /// Opens every `*.ansel-vectors` file among `paths` (files, or folders searched one level
    /// deep); all must be whole and made by one encoder.
    pub fn open(paths: &[PathBuf]) -> Result<PrecomputedVectors, IndexError> {
        let mut files = Vec::new();
        for path in paths {
            if path.is_dir() {
                let entries = std::fs::read_dir(path).map_err(|e| IndexError::io(path, e))?;
                let mut found: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == EXTENSION))
                    .collect();
                found.sort();
                files.extend(found);
            } else {
                files.push(path.clone());
            }
        }
        let Some(first) = files.first() else {
            return Err(IndexError::Vectors {
                path: paths.first().cloned().unwrap_or_default(),
                message: format!("no .{EXTENSION} file here"),
            });
        };
        let mut out = PrecomputedVectors {
            header: read_header(first)?.0,
            maps: Vec::new(),
            rows: HashMap::new(),
        };
        for path in files {
            out.add(path)?;
        }
        Ok(out)
    }

    fn add(&mut self, path: PathBuf) -> Result<(), IndexError> {
        let fail = |message: String| IndexError::Vectors {
            path: path.clone(),
            message,
        };
        let (header, start) = read_header(&path)?;
        if header != self.header {
            return Err(fail(format!(
                "made by {} ({} components), not by {} ({} components) as the first file",
                header.model, header.dim, self.header.model, self.header.dim
            )));
        }
        let file = File::open(&path).map_err(|e| IndexError::io(&path, e))?;
        // SAFETY: the file is only read; a file changed while mapped gives wrong vectors,
        // as a file changed while read would, never unsafety in this code (bytes are copied).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| IndexError::io(&path, e))?;
        let row_bytes = KEY_BYTES + 4 * header.dim;
        let body = map
            .len()
            .checked_sub(start + TRAILER_BYTES)
            .filter(|b| b % row_bytes == 0)
            .ok_or_else(|| fail("truncated: its length is not a whole number of rows".into()))?;
        let trailer = &map[start + body..];
        let rows = u64::from_le_bytes(trailer[8..16].try_into().expect("8 bytes"));
        if &trailer[..8] != END || rows != (body / row_bytes) as u64 {
            return Err(fail(format!(
                "truncated or damaged: its end does not record its {} rows",
                body / row_bytes
            )));
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&map[12..start + body]);
        let recorded = u32::from_le_bytes(trailer[16..20].try_into().expect("4 bytes"));
        if crc.finalize() != recorded {
            return Err(fail("damaged: its checksum does not match its rows".into()));
        }
        let index = self.maps.len() as u32;
        for row in 0..body / row_bytes {
            let offset = start + row * row_bytes;
            let k: [u8; KEY_BYTES] = map[offset..offset + KEY_BYTES].try_into().expect("key");
            self.rows
                .entry(k)
                .or_insert((index, (offset + KEY_BYTES) as u64));
        }
        self.maps.push((path, map));
        Ok(())
    }

    pub fn header(&self) -> &PrecomputedHeader {
        &self.header
    }

    /// Texts with a vector.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The vector of `text`, when a file has it.
    pub fn get(&self, text: &str) -> Option<Vec<f32>> {
        let &(file, offset) = self.rows.get(&key(text))?;
        let bytes = &self.maps[file as usize].1[offset as usize..][..4 * self.header.dim];
        Some(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect(),
        )
    }
}

/// A file's header and the offset of its first row; an error names the file.
fn read_header(path: &Path) -> Result<(PrecomputedHeader, usize), IndexError> {
    let fail = |message: String| IndexError::Vectors {
        path: path.to_path_buf(),
        message,
    };
    let mut file = File::open(path).map_err(|e| IndexError::io(path, e))?;
    let mut start = [0u8; 12];
    std::io::Read::read_exact(&mut file, &mut start)
        .map_err(|_| fail("truncated: shorter than a header".into()))?;
    if &start[..8] != MAGIC {
        return Err(fail(format!(
            "not a file of precomputed vectors (.{EXTENSION}, made by `ansel.Encoder.write_vectors` or `ansel.spark.encode_units`)"
        )));
    }
    let len = u32::from_le_bytes(start[8..].try_into().expect("4 bytes")) as usize;
    if len > 1 << 20 {
        return Err(fail(format!("damaged: a header of {len} bytes")));
    }
    let mut bytes = vec![0; len];
    std::io::Read::read_exact(&mut file, &mut bytes)
        .map_err(|_| fail("truncated inside its header".into()))?;
    let header: PrecomputedHeader =
        serde_json::from_slice(&bytes).map_err(|e| fail(format!("damaged header: {e}")))?;
    Ok((header, 12 + len))
}

/// An encoder that takes a text's vector from precomputed files when they have it, and asks
/// `encoder` (the same model, checked by its probe) for the others.
pub struct WithPrecomputed {
    vectors: PrecomputedVectors,
    encoder: Arc<dyn Encoder>,
    found: AtomicU64,
    encoded: AtomicU64,
}

impl WithPrecomputed {
    /// Refuses files made by another model than `encoder` (another dimension or probe vector).
    pub fn new(
        vectors: PrecomputedVectors,
        encoder: Arc<dyn Encoder>,
    ) -> Result<WithPrecomputed, IndexError> {
        let probe = dense::probe(encoder.as_ref()).map_err(|message| IndexError::Encoder {
            path: vectors.maps[0].0.clone(),
            model: encoder.model().to_string(),
            message,
        })?;
        let header = vectors.header();
        let worst = dense::probe_difference(&probe, &header.probe);
        if header.dim != encoder.dim() || worst > dense::PROBE_TOLERANCE {
            return Err(IndexError::Vectors {
                path: vectors.maps[0].0.clone(),
                message: format!(
                    "made by {} ({} components), which is not the encoder {} ({} components; the probe sentence differs by {worst:.4})",
                    header.model,
                    header.dim,
                    encoder.model(),
                    encoder.dim()
                ),
            });
        }
        Ok(WithPrecomputed {
            vectors,
            encoder,
            found: AtomicU64::new(0),
            encoded: AtomicU64::new(0),
        })
    }

    /// Vectors taken from the files, and texts encoded because no file had them (the probe
    /// sentence left out).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.found.load(Ordering::Relaxed),
            self.encoded.load(Ordering::Relaxed),
        )
    }
}

impl Encoder for WithPrecomputed {
    fn model(&self) -> &str {
        self.encoder.model()
    }

    fn dim(&self) -> usize {
        self.encoder.dim()
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let mut out: Vec<Option<Vec<f32>>> = texts.iter().map(|t| self.vectors.get(t)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let made = self.encoder.encode(&asked)?;
            if made.len() != asked.len() {
                return Err(format!(
                    "returned {} vectors for {} texts",
                    made.len(),
                    asked.len()
                ));
            }
            for (i, v) in missing.iter().zip(made) {
                out[*i] = Some(v);
            }
        }
        // The probe sentence an index checks its encoder with is not a text of the index.
        let probes = missing
            .iter()
            .filter(|&&i| texts[i] == dense::PROBE_TEXT)
            .count();
        self.found
            .fetch_add((texts.len() - missing.len()) as u64, Ordering::Relaxed);
        self.encoded
            .fetch_add((missing.len() - probes) as u64, Ordering::Relaxed);
        Ok(out.into_iter().map(|v| v.expect("filled above")).collect())
    }
}
