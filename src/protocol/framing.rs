//! JSONL framing as `rpc-protocol.md` §1 specifies: records are separated by LF only; one trailing
//! CR is stripped; U+2028/U+2029 are ordinary characters; a final line without LF at EOF is still
//! a record. Lines longer than [`MAX_LINE_BYTES`] are discarded as they stream (never buffered
//! whole) and reported once, so memory stays bounded whatever the host sends.

/// The longest command line accepted. Prompts with several large images fit; anything longer is
/// answered with a parse error and skipped.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// One record cut from the input stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// The bytes of one line, without its LF and without one trailing CR.
    Line(Vec<u8>),
    /// A line longer than the limit; `len` is its length in bytes (without LF).
    TooLong { len: usize },
}

/// Incremental LF splitter over arbitrary chunks of input.
#[derive(Debug)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// `Some(n)` while skipping the rest of an over-long line; `n` counts its bytes so far.
    discarding: Option<usize>,
    max: usize,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::with_limit(MAX_LINE_BYTES)
    }
}

impl LineSplitter {
    pub fn with_limit(max: usize) -> Self {
        LineSplitter {
            buf: Vec::new(),
            discarding: None,
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
                if complete {
                    let len = *n;
                    self.discarding = None;
                    out.push(Frame::TooLong { len });
                }
            } else if self.buf.len() + part.len() > self.max + 1 {
                // +1 leaves room for a trailing CR that is stripped later.
                self.discarding = Some(self.buf.len() + part.len());
                self.buf = Vec::new();
                if complete {
                    let len = self.discarding.take().unwrap_or(0);
                    out.push(Frame::TooLong { len });
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
            return Some(Frame::TooLong { len });
        }
        if self.buf.is_empty() {
            return None;
        }
        Some(self.take_line())
    }

    fn take_line(&mut self) -> Frame {
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max {
            return Frame::TooLong { len: line.len() };
        }
        Frame::Line(line)
    }
}

/// Serializes one outgoing record: compact JSON, non-ASCII raw (serde_json never escapes
/// U+2028/U+2029, as `JSON.stringify` doesn't), numbers as JavaScript prints them (`1`, not
/// `1.0`; `0.00000225`, not `2.25e-6`), no trailing newline.
pub fn encode<T: serde::Serialize + ?Sized>(value: &T) -> String {
    match crate::util::to_js_string(value) {
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
        assert_eq!(
            out,
            vec![Frame::TooLong { len: 20 }, Frame::Line(b"ok".to_vec())]
        );
        let out = split(&[b"0123456789"], 8);
        assert_eq!(out, vec![Frame::TooLong { len: 10 }]);
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
