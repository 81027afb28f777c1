//! JavaScript's view of a parsed JSON value: its truthiness (`if (v)`, `v || …`) and its text in
//! a template literal (`${v}`).

use serde_json::Value;

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
