//! JSONL framing as `rpc-protocol.md` §1 specifies: records are separated by LF only; one trailing
//! CR is stripped; U+2028/U+2029 are ordinary characters; a final line without LF at EOF is still
//! a record. Lines longer than the limit are discarded as they stream (never buffered whole) and
//! reported once, with the command's `id` when it appears in the line's first bytes, so memory
//! stays bounded whatever the host sends.

use serde_json::Value;

/// The longest command line accepted by default: 128 MiB. pi has no limit; a prompt with a
/// large screenshot is a long line (a 6 MB PNG is 8 MB of base64), so the bound is far above
/// what real prompts need while keeping one line's memory bounded. `PI_RPC_MAX_LINE_BYTES`
/// changes it.
pub const DEFAULT_MAX_LINE_BYTES: usize = 128 * 1024 * 1024;

/// The environment variable that sets the limit: bytes, or a number with `K`, `M` or `G`
/// (binary units, optional `iB`/`B`).
pub const MAX_LINE_BYTES_ENV: &str = "PI_RPC_MAX_LINE_BYTES";

/// How many bytes of an over-long line are kept to find its `id`.
const HEAD_BYTES: usize = 4096;

/// The limit from [`MAX_LINE_BYTES_ENV`], the default when it is unset, or why the value is
/// not one.
pub fn max_line_bytes_from_env() -> Result<usize, String> {
    match std::env::var(MAX_LINE_BYTES_ENV) {
        Err(_) => Ok(DEFAULT_MAX_LINE_BYTES),
        Ok(v) => parse_size(&v).ok_or_else(|| {
            format!(
                "{MAX_LINE_BYTES_ENV}={v:?} is not a size (bytes, or a number with K, M or G); \
                 using {} MiB",
                DEFAULT_MAX_LINE_BYTES / (1024 * 1024)
            )
        }),
    }
}

/// `1048576`, `512K`, `64M`, `64MiB`, `1G`, `1GB` → bytes; at least 1 KiB.
fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim();
    let digits_end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: usize = v[..digits_end].parse().ok()?;
    let unit = v[digits_end..].trim().to_ascii_uppercase();
    let mult: usize = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult).filter(|&b| b >= 1024)
}

/// One record cut from the input stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// The bytes of one line, without its LF and without one trailing CR.
    Line(Vec<u8>),
    /// A line longer than the limit: its length in bytes (without LF), the limit, and its first
    /// bytes (to find the command's `id`).
    TooLong {
        len: usize,
        limit: usize,
        head: Vec<u8>,
    },
}

/// Incremental LF splitter over arbitrary chunks of input.
#[derive(Debug)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// `Some(n)` while skipping the rest of an over-long line; `n` counts its bytes so far.
    discarding: Option<usize>,
    /// The first bytes of the line being skipped.
    head: Vec<u8>,
    max: usize,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::with_limit(DEFAULT_MAX_LINE_BYTES)
    }
}

impl LineSplitter {
    pub fn with_limit(max: usize) -> Self {
        LineSplitter {
            buf: Vec::new(),
            discarding: None,
            head: Vec::new(),
            max,
        }
    }

    /// Feeds a chunk; complete records are appended to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Frame>) {
        while !chunk.is_empty() {
            let nl = chunk.iter().position(|&b| b == b'\n');
            let (part, rest, complete) = match nl {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &chunk[chunk.len()..], false),
            };
            if let Some(n) = self.discarding.as_mut() {
                *n += part.len();
                // The head keeps filling up to its size whatever the chunking: the `id` is
                // looked for in it.
                let room = HEAD_BYTES.saturating_sub(self.head.len());
                self.head.extend_from_slice(&part[..room.min(part.len())]);
                if complete {
                    let len = *n;
                    self.discarding = None;
                    out.push(self.too_long(len));
                }
            } else if self.buf.len() + part.len() > self.max + 1 {
                // +1 leaves room for a trailing CR that is stripped later.
                let len = self.buf.len() + part.len();
                let mut head = std::mem::take(&mut self.buf);
                head.truncate(HEAD_BYTES);
                let room = HEAD_BYTES - head.len();
                head.extend_from_slice(&part[..room.min(part.len())]);
                self.head = head;
                if complete {
                    out.push(self.too_long(len));
                } else {
                    self.discarding = Some(len);
                }
            } else {
                self.buf.extend_from_slice(part);
                if complete {
                    out.push(self.take_line());
                }
            }
            chunk = rest;
        }
    }

    /// End of input: a pending partial line (without LF) is still a record.
    pub fn finish(&mut self) -> Option<Frame> {
        if let Some(len) = self.discarding.take() {
            return Some(self.too_long(len));
        }
        if self.buf.is_empty() {
            return None;
        }
        Some(self.take_line())
    }

    fn too_long(&mut self, len: usize) -> Frame {
        Frame::TooLong {
            len,
            limit: self.max,
            head: std::mem::take(&mut self.head),
        }
    }

    fn take_line(&mut self) -> Frame {
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max {
            let len = line.len();
            line.truncate(HEAD_BYTES);
            self.head = line;
            return self.too_long(len);
        }
        Frame::Line(line)
    }
}

/// The top-level `"id"` of a JSON object whose text may be cut short, when its value (a string
/// or a number) is complete in `head`. Nested objects' ids and string contents are skipped.
pub fn find_id(head: &[u8]) -> Option<Value> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // Cut inside a multi-byte character: the valid prefix is enough.
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    let bytes = text.as_bytes();
    let mut i = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    if bytes[i] != b'{' {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    // At depth 1, whether the next string is a key.
    let mut expect_key = true;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                let is_id_key = depth == 1 && expect_key && &text[i..=end] == "\"id\"";
                i = end + 1;
                if depth == 1 && expect_key {
                    expect_key = false;
                    if is_id_key {
                        return id_value(text, i);
                    }
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `"` that closes the string opening at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return Some(j),
            _ => j += 1,
        }
    }
    None
}

/// The value after `: ` at `from`, when it is a complete string or number.
fn id_value(text: &str, from: usize) -> Option<Value> {
    let rest = text[from..].trim_start().strip_prefix(':')?.trim_start();
    let bytes = rest.as_bytes();
    match bytes.first()? {
        b'"' => {
            let end = string_end(bytes, 0)?;
            serde_json::from_str(&rest[..=end]).ok()
        }
        b'-' | b'0'..=b'9' => {
            let end = rest.find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))?;
            serde_json::from_str(&rest[..end]).ok()
        }
        _ => None,
    }
}

/// Serializes one outgoing record: compact JSON, non-ASCII raw (serde_json never escapes
/// U+2028/U+2029, as `JSON.stringify` doesn't), numbers as JavaScript prints them (`1`, not
/// `1.0`; `0.00000225`, not `2.25e-6`), no trailing newline.
pub fn encode<T: serde::Serialize + ?Sized>(value: &T) -> String {
    match crate::js::json::to_js_string(value) {
        Ok(s) => s,
        // Serialization of our own types only fails on non-string map keys, which we never build.
        Err(e) => format!(
            "{{\"type\":\"response\",\"command\":\"internal\",\"success\":false,\"error\":{}}}",
            serde_json::Value::String(format!("serialization failed: {e}"))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<Frame> {
        let mut s = LineSplitter::with_limit(max);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn splits_on_lf_only_and_strips_one_cr() {
        let out = split(&[b"a\r\nb\r\r\n\nc"], 100);
        assert_eq!(
            out,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"b\r".to_vec()),
                Frame::Line(vec![]),
                Frame::Line(b"c".to_vec()),
            ]
        );
    }

    #[test]
    fn keeps_unicode_line_separators_inside_records() {
        let s = "{\"m\":\"a\u{2028}b\u{2029}c\"}\n";
        let out = split(&[s.as_bytes()], 100);
        assert_eq!(
            out,
            vec![Frame::Line(s.trim_end_matches('\n').as_bytes().to_vec())]
        );
    }

    #[test]
    fn records_span_chunks() {
        let out = split(&[b"ab", b"c\nd", b"e\n"], 100);
        assert_eq!(
            out,
            vec![Frame::Line(b"abc".to_vec()), Frame::Line(b"de".to_vec())]
        );
    }

    #[test]
    fn over_long_line_is_reported_once_and_skipped() {
        let out = split(&[b"0123456789", b"0123456789", b"\nok\n"], 8);
        let too_long = |len: usize, head: &[u8]| Frame::TooLong {
            len,
            limit: 8,
            head: head.to_vec(),
        };
        // The head is the line's first bytes (up to 4 KiB) however the input was chunked: it
        // used to stop at the chunk where the limit was crossed, so an `id` could be missed.
        assert_eq!(
            out,
            vec![
                too_long(20, b"01234567890123456789"),
                Frame::Line(b"ok".to_vec())
            ]
        );
        let out = split(&[b"0123456789"], 8);
        assert_eq!(out, vec![too_long(10, b"0123456789")]);
        let out = split(&[b"01234", b"56789", b"01\n"], 8);
        assert_eq!(out, vec![too_long(12, b"012345678901")]);
    }

    #[test]
    fn an_over_long_lines_head_keeps_at_most_4_kib() {
        let line = vec![b'x'; 10_000];
        let out = split(&[&line, b"\n"], 5000);
        match &out[..] {
            [Frame::TooLong { len, head, .. }] => {
                assert_eq!(*len, 10_000);
                assert_eq!(head.len(), HEAD_BYTES);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_id_of_a_cut_line_is_found_when_it_is_complete() {
        let id = |s: &str| find_id(s.as_bytes());
        assert_eq!(
            id(r#"{"id":"p1","type":"prompt","message":"xxxx"#),
            Some(serde_json::json!("p1"))
        );
        assert_eq!(
            id(r#" { "type" : "prompt", "id" : 42, "images":[{"data":"AAA"#),
            Some(serde_json::json!(42))
        );
        assert_eq!(
            id(r#"{"type":"prompt","message":"say \"id\": 1","id":"x\"y"}"#),
            Some(serde_json::json!("x\"y"))
        );
        assert_eq!(
            id(r#"{"nested":{"id":"inner"},"id":"outer"}"#),
            Some(serde_json::json!("outer"))
        );
        assert_eq!(id(r#"{"type":"prompt","message":"id"#), None);
        assert_eq!(id(r#"{"id":"unterminated"#), None);
        assert_eq!(
            id(r#"{"id":12"#),
            None,
            "a number cut at the end may be longer"
        );
        assert_eq!(id(r#"["id","x"]"#), None);
        assert_eq!(id(r#"{"message":"é"#), None);
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size(" 1 g "), Some(1 << 30));
        assert_eq!(parse_size("2GB"), Some(2 << 30));
        assert_eq!(parse_size("12"), None, "below 1 KiB");
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("5T"), None);
    }

    #[test]
    fn encode_keeps_non_ascii_raw() {
        let v = serde_json::json!({"t": "é\u{2028}"});
        assert_eq!(encode(&v), "{\"t\":\"é\u{2028}\"}");
    }

    #[test]
    fn encode_prints_numbers_as_javascript_does() {
        let v = serde_json::json!({"cost": 2.25e-6, "n": 1.0, "big": 1e16, "huge": 1e21, "p": 0.0004215});
        assert_eq!(
            encode(&v),
            r#"{"cost":0.00000225,"n":1,"big":10000000000000000,"huge":1e+21,"p":0.0004215}"#
        );
    }
}
