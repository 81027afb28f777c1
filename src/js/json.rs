//! `JSON.stringify` as V8 prints it: compact JSON (serde_json's own layout, which is the same)
//! with numbers in JavaScript's form ([`super::number`]). `JSON.parse`'s error texts and pi's
//! JSON repair are in [`parse`].

use super::number::JsNumberBuf;

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
