//! JSON deserialization whose errors name the field at fault.
//!
//! serde_json reports a wrong type as "invalid type: string \"x\", expected u64" without saying
//! where (SelQA and SQuAD records, model cards, a card's `config`, request bodies). [`from_value`] finds the field by taking the document's members away one at
//! a time: the member whose absence changes the error is the one at fault, and the search goes
//! on inside it.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserializations tried at most while looking for the field at fault, so that a large
/// document (a request body with thousands of texts) costs a bounded amount of work.
const MAX_TRIALS: usize = 64;

/// One step into a JSON document: a member of an object or an element of an array.
enum Step {
    Key(String),
    Index(usize),
}

/// Deserializes `value` as `T`. On failure the message names the field at fault where it can
/// be found, under `prefix` (e.g. `field `config.dropout`: invalid type: string "x", expected
/// f64` with prefix `config`); otherwise it is serde's message, prefixed by `field `PREFIX`: `
/// when a prefix is given.
pub fn from_value<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, String> {
    let error = match T::deserialize(&value) {
        Ok(parsed) => return Ok(parsed),
        Err(e) => e.to_string(),
    };
    let path = field_at_fault::<T>(value, &error);
    let mut field = prefix.to_string();
    for step in &path {
        match step {
            Step::Key(key) if field.is_empty() => field = key.clone(),
            Step::Key(key) => field = format!("{field}.{key}"),
            Step::Index(i) => field = format!("{field}[{i}]"),
        }
    }
    if field.is_empty() {
        Err(error)
    } else {
        Err(format!("field `{field}`: {error}"))
    }
}

/// The path to the member whose absence changes `error`, descending as far as that holds.
/// A missing field is reported at the object that lacks it, not at a sibling whose removal
/// would only change which field is reported missing.
fn field_at_fault<T: DeserializeOwned>(mut value: Value, error: &str) -> Vec<Step> {
    let missing = error.starts_with("missing field");
    let mut path: Vec<Step> = Vec::new();
    let mut trials = 0;
    'descend: loop {
        let steps: Vec<Step> = match node(&value, &path) {
            Some(Value::Object(map)) => map.keys().cloned().map(Step::Key).collect(),
            Some(Value::Array(items)) => (0..items.len()).map(Step::Index).collect(),
            _ => break,
        };
        for step in steps {
            if trials == MAX_TRIALS {
                break 'descend;
            }
            trials += 1;
            let Some(parent) = node_mut(&mut value, &path) else {
                break 'descend;
            };
            let taken = take(parent, &step);
            let changed = match T::deserialize(&value) {
                Ok(_) => true,
                Err(e) => e.to_string() != error,
            };
            let container = matches!(taken, Value::Object(_) | Value::Array(_));
            if let Some(parent) = node_mut(&mut value, &path) {
                put_back(parent, &step, taken);
            }
            if changed && (container || !missing) {
                path.push(step);
                continue 'descend;
            }
        }
        break;
    }
    path
}

fn node<'a>(value: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Key(key) => v.get(key),
        Step::Index(i) => v.get(i),
    })
}

fn node_mut<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Key(key) => v.get_mut(key),
        Step::Index(i) => v.get_mut(i),
    })
}

fn take(parent: &mut Value, step: &Step) -> Value {
    match (parent, step) {
        (Value::Object(map), Step::Key(key)) => map.remove(key).unwrap_or(Value::Null),
        (Value::Array(items), Step::Index(i)) if *i < items.len() => items.remove(*i),
        _ => Value::Null,
    }
}

fn put_back(parent: &mut Value, step: &Step, taken: Value) {
    match (parent, step) {
        (Value::Object(map), Step::Key(key)) => {
            map.insert(key.clone(), taken);
        }
        (Value::Array(items), Step::Index(i)) if *i <= items.len() => items.insert(*i, taken),
        _ => {}
    }
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
    fn good_values_parse_and_large_documents_stay_bounded() {
        let ok = from_value::<Outer>(json!({"kind": "k", "inner": {"seed": 2}}), "").unwrap();
        assert_eq!(ok.inner.unwrap().seed, 2);
        // The wrong element lies past the trial budget: the error still names the array.
        let mut texts: Vec<Value> = (0..1000).map(|i| json!(i.to_string())).collect();
        texts.push(json!(false));
        let e = error(json!({"kind": "k", "texts": texts}), "");
        assert!(
            e.starts_with("field `texts`: invalid type: boolean `false`"),
            "{e}"
        );
    }
}
