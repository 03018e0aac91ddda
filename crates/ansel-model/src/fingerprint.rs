//! A stable fingerprint for cache keys and training records.

use ansel_data::Question;

/// A stable 64-bit FNV-1a fingerprint (the same across runs and machines).
#[derive(Debug, Clone, Copy)]
pub struct Fingerprint(u64);

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint(0xcbf2_9ce4_8422_2325)
    }
}

impl Fingerprint {
    /// Feeds one field: its bytes, then a 0xff separator (so that "ab","c" and "a","bc" differ).
    pub fn update(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes(bytes.iter().copied().chain([0xff]))
    }

    /// Feeds raw bytes, no separator.
    pub fn bytes(&mut self, bytes: impl IntoIterator<Item = u8>) -> &mut Self {
        for b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    /// Questions: ids, texts, candidate ids, texts and labels, in order.
    pub fn questions(&mut self, questions: &[Question]) -> &mut Self {
        for q in questions {
            self.update(q.id.as_bytes()).update(q.text.as_bytes());
            for c in &q.candidates {
                let label = match c.label {
                    Some(true) => b"1",
                    Some(false) => b"0",
                    None => b"-",
                };
                self.update(c.id.as_bytes())
                    .update(c.text.as_bytes())
                    .update(label);
            }
        }
        self
    }

    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }

    pub fn value(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_fnv1a_and_fields_end_with_a_separator() {
        // The published FNV-1a 64 of "a" and of "foobar": cache keys on disk stay valid.
        assert_eq!(
            Fingerprint::default().bytes(*b"a").value(),
            0xaf63dc4c8601ec8c
        );
        assert_eq!(
            Fingerprint::default().bytes(*b"foobar").value(),
            0x85944171f73967e8
        );
        let field = Fingerprint::default().update(b"ab").value();
        assert_eq!(field, Fingerprint::default().bytes(*b"ab\xff").value());
        assert_ne!(
            Fingerprint::default().update(b"ab").update(b"c").value(),
            Fingerprint::default().update(b"a").update(b"bc").value()
        );
    }
}
