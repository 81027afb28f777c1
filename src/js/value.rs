//! JavaScript's view of a parsed JSON value: its truthiness (`if (v)`, `v || …`), its text in
//! a template literal (`${v}`), and the order `Object.entries` lists an object's keys in.

use serde_json::{Map, Value};

use super::json::js_stringify;

/// JavaScript truthiness of a parsed JSON value.
pub(crate) fn js_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// `Object.entries(obj)` of a parsed JSON object: array-index keys (`"0"`, `"7"`, …, up to
/// 2^32 − 2, canonical decimal) first in ascending numeric order, then the other keys in the
/// order they were first written (serde_json's `preserve_order`, which keeps a duplicate key
/// where it first appeared, as `JSON.parse` does).
pub(crate) fn js_entries(obj: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u32, (&String, &Value))> = Vec::new();
    let mut named: Vec<(&String, &Value)> = Vec::new();
    for (k, v) in obj {
        match array_index(k) {
            Some(i) => indexed.push((i, (k, v))),
            None => named.push((k, v)),
        }
    }
    indexed.sort_by_key(|(i, _)| *i);
    indexed.into_iter().map(|(_, e)| e).chain(named).collect()
}

/// The value of an array-index property key: `0` or a decimal without leading zeros, below
/// 2^32 − 1.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty()
        || !key.bytes().all(|b| b.is_ascii_digit())
        || (key.len() > 1 && key.starts_with('0'))
    {
        return None;
    }
    key.parse::<u32>().ok().filter(|n| *n != u32::MAX)
}

/// A JavaScript template-literal rendering of a JSON field (`undefined` when absent).
pub(crate) fn js_template(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".into(),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_template(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => js_stringify(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_in_object_order() {
        let v: Value = serde_json::from_str(
            r#"{"b":1,"4294967295":1,"4294967294":1,"01":1,"10":1,"2":1,"-1":1,"0":1,"b":2,"1.5":1}"#,
        )
        .unwrap();
        let keys: Vec<&str> = js_entries(v.as_object().unwrap())
            .into_iter()
            .map(|(k, _)| k.as_str())
            .collect();
        // As Node 22 prints `Object.keys(JSON.parse(...))`.
        assert_eq!(
            keys,
            [
                "0",
                "2",
                "10",
                "4294967294",
                "b",
                "4294967295",
                "01",
                "-1",
                "1.5"
            ]
        );
    }
}
