//! Just enough msgpack to read spaCy's `key2row`: one map of unsigned integers.

use crate::{Result, VectorsError};
use std::collections::HashMap;
use std::path::Path;

struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let slice = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or_else(|| VectorsError::format(self.path, "msgpack data cut short"))?;
        self.at += n;
        Ok(slice)
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | b as u64))
    }

    fn uint(&mut self) -> Result<u64> {
        let at = self.at;
        match self.take(1)?[0] {
            b @ 0x00..=0x7f => Ok(b as u64),
            0xcc => self.be(1),
            0xcd => self.be(2),
            0xce => self.be(4),
            0xcf => self.be(8),
            b => Err(VectorsError::format(
                self.path,
                format!("byte {at}: expected an unsigned integer, found type 0x{b:02x}"),
            )),
        }
    }

    fn map_len(&mut self) -> Result<usize> {
        match self.take(1)?[0] {
            b @ 0x80..=0x8f => Ok((b & 0x0f) as usize),
            0xde => Ok(self.be(2)? as usize),
            0xdf => Ok(self.be(4)? as usize),
            b => Err(VectorsError::format(
                self.path,
                format!("expected a msgpack map, found type 0x{b:02x}"),
            )),
        }
    }
}

/// Parses a msgpack map whose keys and values are unsigned integers.
pub fn parse_u64_map(path: &Path, bytes: &[u8]) -> Result<HashMap<u64, u64>> {
    let mut cursor = Cursor { path, bytes, at: 0 };
    let len = cursor.map_len()?;
    let mut map = HashMap::with_capacity(len.min(bytes.len()));
    for _ in 0..len {
        let key = cursor.uint()?;
        let value = cursor.uint()?;
        map.insert(key, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_integer_width() {
        let bytes = [
            0x83, 0x05, 0x01, 0xcd, 0x01, 0x00, 0xcc, 0xff, 0xcf, 0, 0, 0, 0, 0, 0, 0, 9, 0xce, 0,
            1, 0, 0,
        ];
        let map = parse_u64_map(Path::new("k"), &bytes).unwrap();
        assert_eq!(map[&5], 1);
        assert_eq!(map[&256], 255);
        assert_eq!(map[&9], 65536);
    }

    #[test]
    fn truncated_or_wrong_data_is_an_error() {
        let p = Path::new("key2row");
        assert!(parse_u64_map(p, &[0x81, 0x01]).is_err());
        let err = parse_u64_map(p, &[0x81, 0xa1, 0x61, 0x01])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("key2row") && err.contains("0xa1"), "{err}");
    }
}
