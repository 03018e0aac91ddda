//! The numpy `.npy` format, for 2-d little-endian float32 matrices.

use crate::{Result, VectorsError};
use std::path::Path;

pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    fortran_order: bool,
    data: Vec<f32>,
}

impl Matrix {
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Matrix> {
        let bad = |m: &str| VectorsError::format(path, format!("not a float32 matrix .npy: {m}"));
        if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
            return Err(bad("no numpy magic"));
        }
        let (header_len, start) = match bytes[6] {
            1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
            2 | 3 if bytes.len() >= 12 => (
                u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize,
                12,
            ),
            v => return Err(bad(&format!("format version {v}"))),
        };
        let header = bytes
            .get(start..start + header_len)
            .and_then(|h| std::str::from_utf8(h).ok())
            .ok_or_else(|| bad("header cut short"))?;
        if !header.contains("'descr': '<f4'") {
            return Err(bad(&format!("dtype is not '<f4' in {}", header.trim())));
        }
        let fortran_order = header.contains("'fortran_order': True");
        let shape = header
            .split("'shape':")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .map(|s| s.trim().trim_start_matches('('))
            .ok_or_else(|| bad("no shape"))?;
        let dims: Vec<usize> = shape
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad(&format!("shape ({shape})")))?;
        let [rows, cols] = dims[..] else {
            return Err(bad(&format!("shape ({shape}) is not 2-d")));
        };
        let body = &bytes[start + header_len..];
        if body.len() != rows * cols * 4 {
            return Err(bad(&format!(
                "{rows}x{cols} needs {} bytes of data, found {}",
                rows * cols * 4,
                body.len()
            )));
        }
        let data = body
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        Ok(Matrix {
            rows,
            cols,
            fortran_order,
            data,
        })
    }

    /// The numbers with row i at `[i * cols, (i + 1) * cols)`.
    pub fn into_row_major(self) -> Vec<f32> {
        if !self.fortran_order {
            return self.data;
        }
        let mut out = vec![0f32; self.data.len()];
        for c in 0..self.cols {
            let column = &self.data[c * self.rows..(c + 1) * self.rows];
            for (r, &x) in column.iter().enumerate() {
                out[r * self.cols + c] = x;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str, values: &[f32]) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    #[test]
    fn fortran_order_is_transposed_to_rows() {
        let header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
        // Column-major [[1, 2, 3], [4, 5, 6]].
        let bytes = npy(header, &[1., 4., 2., 5., 3., 6.]);
        let m = Matrix::parse(Path::new("x.npy"), &bytes).unwrap();
        assert_eq!((m.rows, m.cols), (2, 3));
        assert_eq!(m.into_row_major(), vec![1., 2., 3., 4., 5., 6.]);
    }

    #[test]
    fn bad_files_name_the_problem() {
        let p = Path::new("x.npy");
        let err = |b: &[u8]| Matrix::parse(p, b).err().unwrap().to_string();
        assert!(err(b"hello").contains("magic"));
        let f8 = npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }",
            &[],
        );
        assert!(err(&f8).contains("dtype"));
        let short = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
            &[1.],
        );
        assert!(err(&short).contains("needs 16 bytes"), "{}", err(&short));
        assert!(err(&short).starts_with("x.npy"));
    }
}
