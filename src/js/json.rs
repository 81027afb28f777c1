//! `JSON.stringify` as V8 prints it: compact JSON (serde_json's own layout, which is the same)
//! with numbers in JavaScript's form ([`super::number`]), and `JSON.stringify(v, null, 2)`. `JSON.parse`'s error texts and pi's
//! JSON repair are in [`parse`].

use serde_json::Value;

use super::number::JsNumberBuf;

pub(crate) mod canonical;
pub(crate) mod parse;

/// A serde_json formatter that prints numbers as JavaScript's `JSON.stringify` does (compact
/// output otherwise, like `serde_json::to_string`). Floats inside a `serde_json::Value` can only
/// be printed right this way.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JsFormatter;

impl serde_json::ser::Formatter for JsFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        w.write_all(JsNumberBuf::new().format(v).as_bytes())
    }

    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        self.write_f64(w, f64::from(v))
    }
}

/// `JSON.stringify(value)`: compact JSON with numbers in JavaScript's form. Use this (or
/// [`to_js_vec`]) for anything a JavaScript program would have printed.
pub(crate) fn to_js_string<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let bytes = to_js_vec(value)?;
    // serde_json writes valid UTF-8 only; the check cannot fail.
    String::from_utf8(bytes).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// [`to_js_string`] as bytes (for request bodies).
pub(crate) fn to_js_vec<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsFormatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// Appends `JSON.stringify(value)` to `out` (nothing fails: a `Value` always serializes).
pub(crate) fn write_js(out: &mut Vec<u8>, value: &Value) {
    write_js_of(out, value)
}

/// [`write_js`] for any of our serializable types (their keys are strings; the sink is memory,
/// so nothing can fail).
pub(crate) fn write_js_of<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, JsFormatter);
    let _ = value.serialize(&mut ser);
}

/// `JSON.stringify` of a parsed value: like `serde_json::to_string`, but numbers print as
/// JavaScript prints them (`1`, not `1.0`; `0.00000225`, not `2.25e-6`).
pub(crate) fn js_stringify(v: &Value) -> String {
    to_js_string(v).unwrap_or_default()
}

/// Appends `JSON.stringify(s)` to `out`: the string in quotes with `"`, `\\` and the control
/// characters escaped (`\b \t \n \f \r` short, the others as `\u00xx`), everything else raw —
/// the bytes serde_json writes for a string, so hand-built lines match serialized ones.
pub(crate) fn push_js_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Escaped bytes are ASCII, so `start..i` and `i + 1..` are char boundaries.
        out.push_str(&s[start..i]);
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(short);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// `JSON.stringify(v, null, 2)`: two-space indentation, `": "` after keys, keys in stored
/// order, numbers as JavaScript prints them.
pub(crate) fn js_stringify_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_pretty(v, 0, &mut out);
    out
}

/// A JSON string literal for `s` (as `JSON.stringify` writes one).
fn string_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Appends `v` indented as at nesting level `depth` ([`js_stringify_pretty`]).
fn write_pretty(v: &Value, depth: usize, out: &mut String) {
    let pad = |d: usize| "  ".repeat(d);
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&pad(depth + 1));
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(depth));
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push_str("{\n");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&pad(depth + 1));
                out.push_str(&string_literal(k));
                out.push_str(": ");
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(depth));
            out.push('}');
        }
        other => out.push_str(&js_stringify(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn push_js_string_writes_what_serde_json_writes() {
        let mut samples: Vec<String> = (0u32..0x80)
            .filter_map(char::from_u32)
            .map(|c| format!("a{c}b{c}"))
            .collect();
        samples.extend(
            [
                "",
                "plain",
                "\"quoted\" \\ back\\slash",
                "line\nbreak\r\n\ttab",
                "\u{0}\u{1f}\u{7f}",
                "ünïcödé naïve 日本語 🦀",
                "\u{2028}\u{2029} separators",
                "\u{feff}bom\u{ffff}",
            ]
            .map(String::from),
        );
        for s in samples {
            let mut out = String::from("x");
            push_js_string(&mut out, &s);
            assert_eq!(
                out,
                format!("x{}", serde_json::to_string(&s).unwrap()),
                "{s:?}"
            );
        }
    }

    #[test]
    fn stringify_pretty() {
        assert_eq!(
            js_stringify_pretty(&json!({"a":1.0,"b":[],"c":"x\u{1}"})),
            "{\n  \"a\": 1,\n  \"b\": [],\n  \"c\": \"x\\u0001\"\n}"
        );
    }
}
