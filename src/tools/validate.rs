//! Tool argument validation (`agent-loop.md` §3), as pi 1.6.0 does it with its schema library:
//! the arguments are first **coerced** towards the schema (a numeric string for a number, `true`
//! for a number becomes `1`, a number for a string becomes its text, `null` in an optional
//! property is dropped, a single value for an array becomes a one-item array, …), then checked.
//! A failure becomes the error text
//!
//! ```text
//! Validation failed for tool "<name>":
//!   - <path>: <message>
//!
//! Received arguments:
//! <JSON.stringify(args, null, 2)>
//! ```
//!
//! where `<path>` is the dotted path of the failing value (`path`, `edits.0.oldText`, `root`)
//! and the messages are pi's (`missing`, `expected string, got integer`, …). The received
//! arguments are printed as given (before coercion), keys in received order.
//!
//! Supported keywords (what tool schemas use): `type` (a name or a list), `enum`, `const`,
//! `properties`, `required`, `additionalProperties`, `items` (a schema or a tuple),
//! `prefixItems`, `minItems`, `maxItems`, `uniqueItems`, `minLength`, `maxLength`, `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minProperties`,
//! `maxProperties`, `allOf`, `anyOf`, `oneOf`, `not`. Others (`$ref`, `pattern`, `format`,
//! `patternProperties`, …) are accepted without being checked.

use serde_json::{Map, Value};

use crate::js::json::{js_stringify, js_stringify_pretty};
use crate::js::number::{js_number_string, js_string_to_number};
use crate::js::string::is_js_whitespace;

mod coerce;
mod explain;

pub use coerce::coerce;
use explain::walk;

/// One failed check: the dotted path of the value and pi's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    pub path: String,
    pub message: String,
}

/// Coerces `args` towards `schema` and checks them. `Ok` holds the coerced arguments, which the
/// tool must receive; `Err` holds the complete failure text.
pub fn validate_arguments(tool_name: &str, schema: &Value, args: &Value) -> Result<Value, String> {
    let coerced = coerce(schema, args);
    let errors = errors(schema, &coerced);
    if errors.is_empty() {
        return Ok(coerced);
    }
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("  - {}: {}", e.path, e.message))
        .collect();
    Err(format!(
        "Validation failed for tool \"{tool_name}\":\n{}\n\nReceived arguments:\n{}",
        lines.join("\n"),
        js_stringify_pretty(args)
    ))
}

/// The errors of `value` against `schema`; empty when it is valid.
pub fn errors(schema: &Value, value: &Value) -> Vec<ValidationError> {
    if check(schema, value) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(schema, value, &mut path, &mut out);
    if out.is_empty() {
        out.push(ValidationError {
            path: "root".into(),
            message: "invalid".into(),
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// JavaScript value helpers
// ---------------------------------------------------------------------------------------------

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// A JSON number for `f`, integral values as integers (so they print as JavaScript does).
fn number_value(f: f64) -> Value {
    crate::js::number::js_value(f)
}

fn number_text(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => js_number_string(n.as_f64().unwrap_or(f64::NAN)),
        _ => String::new(),
    }
}

/// Strict equality of JSON values (numbers by value).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => num(a) == num(b),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same(p, q)))
        }
        _ => a == b,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn matches_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

fn types_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn code_points(s: &str) -> usize {
    s.chars().count()
}

// ---------------------------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------------------------

/// Whether `value` satisfies `schema` (the supported keywords).
pub fn check(schema: &Value, value: &Value) -> bool {
    let node = match schema {
        Value::Bool(b) => return *b,
        Value::Object(node) => node,
        _ => return true,
    };
    if node.contains_key("type") {
        let types = types_of(node);
        if !types.iter().any(|t| matches_type(value, t)) {
            return false;
        }
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        if !values.iter().any(|m| same(m, value)) {
            return false;
        }
    }
    if let Some(c) = node.get("const") {
        if !same(c, value) {
            return false;
        }
    }
    if let Value::String(s) = value {
        let n = code_points(s) as f64;
        if bound(node, "minLength").is_some_and(|m| n < m)
            || bound(node, "maxLength").is_some_and(|m| n > m)
        {
            return false;
        }
    }
    if let Some(f) = value.as_f64() {
        if !number_problems(node, f).is_empty() {
            return false;
        }
    }
    if let Value::Object(obj) = value {
        if !object_ok(node, obj) {
            return false;
        }
    }
    if let Value::Array(items) = value {
        if !array_ok(node, items) {
            return false;
        }
    }
    if let Some(Value::Array(all)) = node.get("allOf") {
        if !all.iter().all(|s| check(s, value)) {
            return false;
        }
    }
    if let Some(Value::Array(any)) = node.get("anyOf") {
        if !any.iter().any(|s| check(s, value)) {
            return false;
        }
    }
    if let Some(Value::Array(one)) = node.get("oneOf") {
        if one.iter().filter(|s| check(s, value)).count() != 1 {
            return false;
        }
    }
    if let Some(not) = node.get("not") {
        if check(not, value) {
            return false;
        }
    }
    true
}

fn bound(node: &Map<String, Value>, key: &str) -> Option<f64> {
    node.get(key).and_then(Value::as_f64)
}

fn number_problems(node: &Map<String, Value>, f: f64) -> Vec<String> {
    let mut out = Vec::new();
    let text = |k: &str| number_text(&node[k]);
    if bound(node, "minimum").is_some_and(|m| f < m) {
        out.push(format!("expected >= {}", text("minimum")));
    }
    if bound(node, "maximum").is_some_and(|m| f > m) {
        out.push(format!("expected <= {}", text("maximum")));
    }
    if bound(node, "exclusiveMinimum").is_some_and(|m| f <= m) {
        out.push(format!("expected > {}", text("exclusiveMinimum")));
    }
    if bound(node, "exclusiveMaximum").is_some_and(|m| f >= m) {
        out.push(format!("expected < {}", text("exclusiveMaximum")));
    }
    if let Some(m) = bound(node, "multipleOf") {
        let q = f / m;
        if m > 0.0 && (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            out.push(format!("expected a multiple of {}", text("multipleOf")));
        }
    }
    out
}

fn properties(node: &Map<String, Value>) -> Option<&Map<String, Value>> {
    node.get("properties").and_then(Value::as_object)
}

fn required(node: &Map<String, Value>) -> Vec<&str> {
    node.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn object_ok(node: &Map<String, Value>, obj: &Map<String, Value>) -> bool {
    if required(node).iter().any(|k| !obj.contains_key(*k)) {
        return false;
    }
    let props = properties(node);
    if let Some(props) = props {
        for (k, s) in props {
            if let Some(v) = obj.get(k) {
                if !check(s, v) {
                    return false;
                }
            }
        }
    }
    if let Some(additional) = node.get("additionalProperties") {
        for (k, v) in obj {
            if props.is_some_and(|p| p.contains_key(k)) {
                continue;
            }
            if !check(additional, v) {
                return false;
            }
        }
    }
    let n = obj.len() as f64;
    !(bound(node, "minProperties").is_some_and(|m| n < m)
        || bound(node, "maxProperties").is_some_and(|m| n > m))
}

/// The schema of item `i`: a tuple's (`items` list or `prefixItems`) for its prefix, else `items`.
fn item_schema(node: &Map<String, Value>, i: usize) -> Option<&Value> {
    match node.get("items") {
        Some(Value::Array(tuple)) => tuple.get(i),
        items => match node.get("prefixItems") {
            Some(Value::Array(prefix)) if i < prefix.len() => prefix.get(i),
            _ => items,
        },
    }
}

fn array_ok(node: &Map<String, Value>, items: &[Value]) -> bool {
    for (i, item) in items.iter().enumerate() {
        if let Some(s) = item_schema(node, i) {
            if !check(s, item) {
                return false;
            }
        }
    }
    let n = items.len() as f64;
    if bound(node, "minItems").is_some_and(|m| n < m)
        || bound(node, "maxItems").is_some_and(|m| n > m)
    {
        return false;
    }
    if node.get("uniqueItems") == Some(&Value::Bool(true)) && !unique(items) {
        return false;
    }
    true
}

fn unique(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .all(|(i, a)| items[i + 1..].iter().all(|b| !same(a, b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_schema() -> Value {
        json!({"type":"object","required":["path"],"properties":{
            "path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}}})
    }

    fn edit_schema() -> Value {
        json!({"type":"object","required":["path","edits"],"properties":{
            "path":{"type":"string"},
            "edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{
                "oldText":{"type":"string"},"newText":{"type":"string"}}}}}})
    }

    fn write_schema() -> Value {
        json!({"type":"object","required":["path","content"],"properties":{
            "path":{"type":"string"},"content":{"type":"string"}}})
    }

    // Texts observed from pi 1.6.0.
    #[test]
    fn missing_required_property() {
        let err = validate_arguments("read", &read_schema(), &json!({})).unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"read\":\n  - path: missing\n\nReceived arguments:\n{}"
        );
    }

    #[test]
    fn wrong_type_and_received_arguments_as_given() {
        let args = json!({"path":"notes.txt","offset":"abc"});
        let err = validate_arguments("read", &read_schema(), &args).unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"read\":\n  - offset: expected number, got string\n\nReceived arguments:\n{\n  \"path\": \"notes.txt\",\n  \"offset\": \"abc\"\n}"
        );
        let args = json!({"path":["a"],"content":{}});
        let err = validate_arguments("write", &write_schema(), &args).unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"write\":\n  - path: expected string, got array\n  - content: expected string, got object\n\nReceived arguments:\n{\n  \"path\": [\n    \"a\"\n  ],\n  \"content\": {}\n}"
        );
    }

    #[test]
    fn nested_paths_are_dotted() {
        let args = json!({"path":"notes.txt","edits":[{"oldText":1}]});
        let err = validate_arguments("edit", &edit_schema(), &args).unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"edit\":\n  - edits.0.newText: missing\n\nReceived arguments:\n{\n  \"path\": \"notes.txt\",\n  \"edits\": [\n    {\n      \"oldText\": 1\n    }\n  ]\n}"
        );
        let args = json!({"path":"notes.txt","edits":"not json"});
        let err = validate_arguments("edit", &edit_schema(), &args).unwrap_err();
        assert!(err.starts_with(
            "Validation failed for tool \"edit\":\n  - edits.0: expected object, got string\n"
        ));
        let args = json!({"path":"n","edits":[{"oldText":"x","newText":"y","extra":1},7]});
        let err = validate_arguments("edit", &edit_schema(), &args).unwrap_err();
        assert!(err.contains("  - edits.1: expected object, got integer\n"));
    }

    #[test]
    fn coercions_follow_pi() {
        let ok = validate_arguments(
            "read",
            &read_schema(),
            &json!({"path":5,"offset":null,"limit":"1"}),
        )
        .unwrap();
        assert_eq!(ok, json!({"path":"5","limit":1}));
        let ok =
            validate_arguments("read", &read_schema(), &json!({"path":"a","limit":true})).unwrap();
        assert_eq!(ok, json!({"path":"a","limit":1}));
        let ok = validate_arguments("read", &read_schema(), &json!({"path":"a","offset":"2.5"}))
            .unwrap();
        assert_eq!(ok, json!({"path":"a","offset":2.5}));
        // A required string given as null becomes "null".
        let ok = validate_arguments(
            "edit",
            &edit_schema(),
            &json!({"path":null,"edits":[{"oldText":"x","newText":"y"}]}),
        )
        .unwrap();
        assert_eq!(ok["path"], "null");
        // A single object for an array is wrapped.
        let ok = validate_arguments(
            "edit",
            &edit_schema(),
            &json!({"path":"p","edits":{"oldText":"x","newText":"y"}}),
        )
        .unwrap();
        assert_eq!(ok["edits"], json!([{"oldText":"x","newText":"y"}]));
        let s = json!({"type":"object","properties":{"flag":{"type":"boolean"},"n":{"type":"integer"}}});
        assert_eq!(
            coerce(&s, &json!({"flag":"TRUE","n":"3.7"})),
            json!({"flag":true,"n":3})
        );
    }

    #[test]
    fn enum_and_bounds_messages() {
        let s = json!({"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]},"n":{"type":"number","minimum":1}}});
        let e = errors(&s, &json!({"mode":"c","n":0}));
        assert_eq!(
            e,
            vec![
                ValidationError {
                    path: "mode".into(),
                    message: "expected one of [\"a\",\"b\"]".into()
                },
                ValidationError {
                    path: "n".into(),
                    message: "expected >= 1".into()
                },
            ]
        );
        let e = errors(&json!({"type":"object"}), &json!([1]));
        assert_eq!(e[0].path, "root");
        assert_eq!(e[0].message, "expected object, got array");
    }

    // Observed from pi 1.6.0 (second probe).
    #[test]
    fn null_and_string_coercions_observed() {
        let err = validate_arguments(
            "edit",
            &edit_schema(),
            &json!({"path":"x.txt","edits":null}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"edit\":\n  - edits.0: expected object, got null\n\nReceived arguments:\n{\n  \"path\": \"x.txt\",\n  \"edits\": null\n}"
        );
        let ok = validate_arguments(
            "edit",
            &edit_schema(),
            &json!({"path":"l","edits":[{"oldText":"a","newText":null}]}),
        )
        .unwrap();
        assert_eq!(ok["edits"][0]["newText"], "null");
        let ok = validate_arguments(
            "read",
            &read_schema(),
            &json!({"path":"n","offset":"","limit":"1e0"}),
        )
        .unwrap();
        assert_eq!(ok, json!({"path":"n","offset":0,"limit":1}));
        let ok = validate_arguments(
            "write",
            &write_schema(),
            &json!({"path":"w","content":12.5}),
        )
        .unwrap();
        assert_eq!(ok["content"], "12.5");
    }
}
