//! One module per source format. Each reader turns raw bytes into questions and
//! reports malformed input with the file, line and field; none of them panics.

pub mod jacana;
pub mod jsonl;
pub mod selqa;
pub mod semeval;
pub mod squad;
pub mod trecqa;
pub mod wikiqa;

use crate::DataError;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use std::path::Path;

/// Non-empty lines of a text file as (1-based line number, text), decoding
/// UTF-8 line by line so an encoding error names its line.
pub(crate) fn text_lines<'a>(
    path: &'a Path,
    bytes: &'a [u8],
) -> impl Iterator<Item = Result<(usize, &'a str), DataError>> + 'a {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(move |(i, raw)| {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            Some(
                std::str::from_utf8(raw)
                    .map(|line| (i + 1, line))
                    .map_err(|e| {
                        DataError::malformed(path, Some(i + 1), None, format!("invalid UTF-8: {e}"))
                    }),
            )
        })
}

/// The records of a JSON-lines file, each error naming its line.
pub(crate) fn json_records<'a, T: Deserialize<'a>>(
    path: &'a Path,
    bytes: &'a [u8],
) -> impl Iterator<Item = Result<T, DataError>> + 'a {
    text_lines(path, bytes).map(move |line| {
        let (n, line) = line?;
        serde_json::from_str(line).map_err(|e| DataError::json(path, n - 1, &e))
    })
}

/// Parses one element of a larger JSON document on its own, so that errors
/// carry the line inside the element rather than after it.
pub(crate) fn parse_element<T: de::DeserializeOwned>(
    path: &Path,
    whole: &[u8],
    element: &serde_json::value::RawValue,
) -> Result<T, DataError> {
    let offset = (element.get().as_ptr() as usize).saturating_sub(whole.as_ptr() as usize);
    let lines_before = whole
        .get(..offset)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count());
    serde_json::from_str(element.get()).map_err(|e| {
        let mut err = DataError::json(path, lines_before, &e);
        // Errors raised after the element was read (validation) carry no position:
        // point at the line where the element starts.
        if let DataError::Malformed { location, .. } = &mut err {
            location.line.get_or_insert(lines_before + 1);
            // serde names no field for a wrong type ("invalid type: string ..."): find it.
            if location.field.is_none() && e.is_data() {
                location.field = serde_json::from_str(element.get())
                    .ok()
                    .and_then(crate::json::field_at_fault::<T>);
            }
        }
        err
    })
}

/// A visitor for one field: its errors read "field `F`: expected E, found T",
/// which [`DataError::json`] turns into a location naming the field.
pub(crate) trait Expecting {
    /// The field's key path, e.g. `candidates[2]`.
    fn field(&self) -> &str;
    /// What the field takes, in words.
    fn expected(&self) -> &str;
    fn found<E: de::Error>(&self, found: &str) -> E {
        E::custom(format_args!(
            "field `{}`: expected {}, found {found}",
            self.field(),
            self.expected()
        ))
    }
}

/// Visitor methods for the JSON types a visitor does not take, each an
/// [`Expecting::found`] error naming the type that came.
macro_rules! reject_json {
    (null) => {
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Err(self.found("null"))
        }
    };
    (bool) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(self.found("a boolean"))
        }
    };
    (number) => {
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(self.found("a number"))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(self.found("a number"))
        }
        $crate::readers::reject_json!(float);
    };
    (float) => {
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(self.found("a number"))
        }
    };
    (string) => {
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Err(self.found("a string"))
        }
    };
    (list) => {
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.found("a list"))
        }
    };
    (object) => {
        fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.found("an object"))
        }
    };
    ($($kind:ident),+) => {
        $($crate::readers::reject_json!($kind);)+
    };
}
pub(crate) use reject_json;

/// A relevance label written as 0/1 or false/true (null: none).
pub(crate) fn deserialize_label<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(LabelVisitor { field: "label" })
}

/// Reads a label at `field` (a key path such as `candidates[2].label`), so
/// that a wrong value or type names the field and what was expected.
pub(crate) struct LabelVisitor<'f> {
    pub field: &'f str,
}

impl Expecting for LabelVisitor<'_> {
    fn field(&self) -> &str {
        self.field
    }
    fn expected(&self) -> &str {
        "0, 1, true or false"
    }
}

impl<'de> Visitor<'de> for LabelVisitor<'_> {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Some(b))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        match n {
            0 => Ok(Some(false)),
            1 => Ok(Some(true)),
            _ => Err(self.found(&n.to_string())),
        }
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(self.found(&n.to_string())),
        }
    }
    reject_json!(float, string, list, object);
}

#[cfg(test)]
pub(crate) mod testing {
    //! Checks every reader shares: errors point at the right line and field,
    //! and any byte string yields Ok or a DataError, never a panic.
    use crate::{DataError, Question};
    use std::path::Path;

    type Parse = fn(&Path, &[u8]) -> Result<Vec<Question>, DataError>;

    /// Asserts that `text` fails at `line` and `field`; returns the error as shown.
    pub fn assert_error_at(parse: Parse, text: &str, line: usize, field: &str) -> String {
        let err = parse(Path::new("input"), text.as_bytes()).expect_err("input is malformed");
        let location = err
            .location()
            .unwrap_or_else(|| panic!("no location in {err}"));
        assert_eq!(
            (location.line, location.field.as_deref()),
            (Some(line), Some(field)),
            "{err}"
        );
        let shown = err.to_string();
        let prefix = format!("input:{line}: field `{field}`: ");
        assert!(
            shown.starts_with(&prefix),
            "{shown:?} should start {prefix:?}"
        );
        shown
    }

    pub fn never_panics(parse: Parse, bytes: &[u8]) {
        let result = std::panic::catch_unwind(|| parse(Path::new("fuzz.input"), bytes));
        assert!(
            result.is_ok(),
            "reader panicked on {:?}",
            String::from_utf8_lossy(bytes)
        );
    }

    /// Byte strings biased towards the shape of real inputs, so the property
    /// exercises deep parser paths and not only the first byte's rejection.
    pub fn inputs(seed_text: &'static str) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let seed = seed_text.as_bytes().to_vec();
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            (
                0..seed.len(),
                proptest::collection::vec(any::<u8>(), 0..8),
                0..seed.len()
            )
                .prop_map(move |(cut, noise, at)| {
                    let mut bytes = seed[..cut.max(1)].to_vec();
                    let at = at.min(bytes.len());
                    bytes.splice(at..at, noise);
                    bytes
                }),
        ]
    }
}
