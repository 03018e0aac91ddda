//! JSON deserialization whose errors name the field at fault.
//!
//! serde_json reports a wrong type as "invalid type: string \"x\", expected u64" without saying
//! where (SelQA and SQuAD records, model cards, a card's `config`, request bodies).
//! [`from_value`] deserializes through `serde_path_to_error`, which tracks the path to the value
//! being read, so the message names it.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserializes `value` as `T`. On failure the message names the field at fault under `prefix`
/// (e.g. `field `config.dropout`: invalid type: string "x", expected f64` with prefix `config`;
/// a missing field is reported at the object that lacks it); an error at the top of the document
/// is serde's message, prefixed by `field `PREFIX`: ` when a prefix is given.
pub fn from_value<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, String> {
    deserialize(value, prefix).map_err(|(field, message)| {
        if field.is_empty() {
            message
        } else {
            format!("field `{field}`: {message}")
        }
    })
}

/// The key path of the field that makes `value` fail to deserialize as `T` (e.g. `qas[0].id`);
/// `None` when it deserializes, or when the error is at the top of the document.
pub fn field_at_fault<T: DeserializeOwned>(value: Value) -> Option<String> {
    deserialize::<T>(value, "")
        .err()
        .map(|(field, _)| field)
        .filter(|field| !field.is_empty())
}

/// `T`, or the path of the field at fault under `prefix` and serde's message.
fn deserialize<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = match (prefix, path.as_str()) {
            (prefix, ".") => prefix.to_string(),
            ("", path) => path.to_string(),
            (prefix, path) if path.starts_with('[') => format!("{prefix}{path}"),
            (prefix, path) => format!("{prefix}.{path}"),
        };
        (field, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        seed: u64,
        #[serde(default)]
        rate: f64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        kind: String,
        #[serde(default)]
        texts: Vec<String>,
        inner: Option<Inner>,
    }

    fn error(value: Value, prefix: &str) -> String {
        from_value::<Outer>(value, prefix).unwrap_err()
    }

    #[test]
    fn a_wrong_type_is_reported_at_its_field() {
        let e = error(json!({"kind": 3}), "");
        assert!(
            e.starts_with("field `kind`: invalid type: integer `3`"),
            "{e}"
        );
        let e = error(json!({"kind": "k", "inner": {"seed": "x"}}), "");
        assert!(
            e.starts_with("field `inner.seed`: invalid type: string"),
            "{e}"
        );
        let e = error(
            json!({"kind": "k", "inner": {"seed": 1, "rate": "fast"}}),
            "config",
        );
        assert!(
            e.starts_with("field `config.inner.rate`: invalid type"),
            "{e}"
        );
        let e = error(json!({"kind": "k", "texts": ["a", "b", 7, "d"]}), "");
        assert!(
            e.starts_with("field `texts[2]`: invalid type: integer `7`"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_field_is_reported_at_the_object_that_lacks_it() {
        let e = error(json!({"kind": "k", "inner": {"rate": 1.0}}), "");
        assert_eq!(e, "field `inner`: missing field `seed`");
        let e = error(json!({"inner": {"seed": 1}}), "");
        assert_eq!(e, "missing field `kind`");
        let e = error(json!({"texts": []}), "config");
        assert_eq!(e, "field `config`: missing field `kind`");
    }

    #[test]
    fn good_values_parse_and_a_late_element_of_a_large_array_is_named() {
        let ok = from_value::<Outer>(json!({"kind": "k", "inner": {"seed": 2}}), "").unwrap();
        assert_eq!(ok.inner.unwrap().seed, 2);
        let mut texts: Vec<Value> = (0..1000).map(|i| json!(i.to_string())).collect();
        texts.push(json!(false));
        let e = error(json!({"kind": "k", "texts": texts}), "");
        assert!(
            e.starts_with("field `texts[1000]`: invalid type: boolean `false`"),
            "{e}"
        );
    }
}
