//! The `application/vnd.amazon.eventstream` framing of Bedrock's ConverseStream body
//! (providers-catalog.md §4.1), read as the AWS SDK's `@smithy/core` event-stream codec reads
//! it: each frame is `[total length u32][headers length u32][prelude CRC32]`, the headers, the
//! payload and the CRC32 of everything before it (big-endian, IEEE polynomial). Frames may be
//! split across reads in any way; the error texts are the codec's.

use std::io::{self, Read};

/// The CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) lookup table, built at compile
/// time (crc32fast is in the tree only through the optional `image` feature).
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The CRC-32 of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in bytes {
        c = CRC_TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    c ^ 0xFFFF_FFFF
}

/// Prelude (8 bytes) + prelude CRC + message CRC.
const MIN_MESSAGE_LEN: usize = 16;
/// Frames larger than this are refused (the service's frames are far smaller; a corrupt
/// length must not make pi-rpc allocate gigabytes).
const MAX_MESSAGE_LEN: usize = 16 * 1024 * 1024;

/// One header value. Only strings matter to Bedrock; the rest are decoded to be skipped
/// correctly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    Str(String),
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One decoded frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub headers: Vec<(String, HeaderValue)>,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The value of a string header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::Str(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }

    /// Encodes the frame (tests build bodies with it).
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            headers.push(name.len() as u8);
            headers.extend_from_slice(name.as_bytes());
            match value {
                HeaderValue::Bool(true) => headers.push(0),
                HeaderValue::Bool(false) => headers.push(1),
                HeaderValue::Byte(v) => {
                    headers.push(2);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Short(v) => {
                    headers.push(3);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Int(v) => {
                    headers.push(4);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Long(v) => {
                    headers.push(5);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Bytes(b) => {
                    headers.push(6);
                    headers.extend_from_slice(&(b.len() as u16).to_be_bytes());
                    headers.extend_from_slice(b);
                }
                HeaderValue::Str(s) => {
                    headers.push(7);
                    headers.extend_from_slice(&(s.len() as u16).to_be_bytes());
                    headers.extend_from_slice(s.as_bytes());
                }
                HeaderValue::Timestamp(v) => {
                    headers.push(8);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Uuid(u) => {
                    headers.push(9);
                    headers.extend_from_slice(u);
                }
            }
        }
        let total = MIN_MESSAGE_LEN + headers.len() + self.payload.len();
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_be_bytes());
        out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        let prelude_crc = crc32(&out);
        out.extend_from_slice(&prelude_crc.to_be_bytes());
        out.extend_from_slice(&headers);
        out.extend_from_slice(&self.payload);
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }
}

/// Why a body could not be read as frames.
#[derive(Debug)]
pub enum FrameError {
    /// The body read failed (connection reset, idle timeout, abort).
    Io(io::Error),
    /// A malformed frame; the text is the SDK's.
    Invalid(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::Invalid(s) => f.write_str(s),
        }
    }
}

fn invalid(text: impl Into<String>) -> FrameError {
    FrameError::Invalid(text.into())
}

/// Reads frames from a body, however its bytes are split across reads.
pub struct FrameReader<R> {
    inner: R,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader { inner }
    }

    /// Fills `buf` as far as the body allows; returns how many bytes were read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, FrameError> {
        let mut n = 0;
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(FrameError::Io(e)),
            }
        }
        Ok(n)
    }

    /// The next frame; `None` at the end of the body. Like the SDK, a body that ends inside
    /// the 4-byte length is a clean end, and one that ends inside a frame is
    /// `Truncated event message received.`.
    pub fn next_frame(&mut self) -> Option<Result<Frame, FrameError>> {
        let mut len = [0u8; 4];
        match self.fill(&mut len) {
            Ok(4) => {}
            Ok(_) => return None,
            Err(e) => return Some(Err(e)),
        }
        let total = u32::from_be_bytes(len) as usize;
        if total > MAX_MESSAGE_LEN {
            return Some(Err(invalid(format!(
                "Event message of {total} bytes exceeds the limit of {MAX_MESSAGE_LEN} bytes"
            ))));
        }
        let mut message = vec![0u8; total.max(4)];
        message[..4].copy_from_slice(&len);
        if total > 4 {
            match self.fill(&mut message[4..]) {
                Ok(n) if n == total - 4 => {}
                Ok(_) => return Some(Err(invalid("Truncated event message received."))),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(decode_message(&message[..total.max(4)]))
    }
}

impl<R: Read> Iterator for FrameReader<R> {
    type Item = Result<Frame, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_frame()
    }
}

/// Splits and checks one whole message (the SDK's `splitMessage`), then decodes its headers.
pub fn decode_message(message: &[u8]) -> Result<Frame, FrameError> {
    let n = message.len();
    if n < MIN_MESSAGE_LEN {
        return Err(invalid(
            "Provided message too short to accommodate event stream message overhead",
        ));
    }
    let u32_at =
        |i: usize| u32::from_be_bytes([message[i], message[i + 1], message[i + 2], message[i + 3]]);
    if u32_at(0) as usize != n {
        return Err(invalid(
            "Reported message length does not match received message length",
        ));
    }
    let headers_len = u32_at(4) as usize;
    let expected_prelude = u32_at(8);
    let prelude = crc32(&message[..8]);
    if prelude != expected_prelude {
        return Err(invalid(format!(
            "The prelude checksum specified in the message ({expected_prelude}) does not match the calculated CRC32 checksum ({prelude})"
        )));
    }
    let expected = u32_at(n - 4);
    let computed = crc32(&message[..n - 4]);
    if computed != expected {
        return Err(invalid(format!(
            "The message checksum ({computed}) did not match the expected value of {expected}"
        )));
    }
    if 12 + headers_len > n - 4 {
        return Err(invalid(
            "Reported message length does not match received message length",
        ));
    }
    let headers = decode_headers(&message[12..12 + headers_len])?;
    Ok(Frame {
        headers,
        payload: message[12 + headers_len..n - 4].to_vec(),
    })
}

fn decode_headers(mut b: &[u8]) -> Result<Vec<(String, HeaderValue)>, FrameError> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], FrameError> {
        if b.len() < n {
            return Err(invalid("Malformed event stream header"));
        }
        let (head, rest) = b.split_at(n);
        *b = rest;
        Ok(head)
    }
    fn arr<const N: usize>(b: &mut &[u8]) -> Result<[u8; N], FrameError> {
        let mut a = [0u8; N];
        a.copy_from_slice(take(b, N)?);
        Ok(a)
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let name_len = take(&mut b, 1)?[0] as usize;
        let name = String::from_utf8_lossy(take(&mut b, name_len)?).into_owned();
        let value = match take(&mut b, 1)?[0] {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes(arr(&mut b)?)),
            3 => HeaderValue::Short(i16::from_be_bytes(arr(&mut b)?)),
            4 => HeaderValue::Int(i32::from_be_bytes(arr(&mut b)?)),
            5 => HeaderValue::Long(i64::from_be_bytes(arr(&mut b)?)),
            6 => {
                let len = u16::from_be_bytes(arr(&mut b)?) as usize;
                HeaderValue::Bytes(take(&mut b, len)?.to_vec())
            }
            7 => {
                let len = u16::from_be_bytes(arr(&mut b)?) as usize;
                HeaderValue::Str(String::from_utf8_lossy(take(&mut b, len)?).into_owned())
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(arr(&mut b)?)),
            9 => HeaderValue::Uuid(arr(&mut b)?),
            _ => return Err(invalid("Unrecognized header type tag")),
        };
        out.push((name, value));
    }
    Ok(out)
}

/// An `event` frame of the given type with a JSON payload (tests).
#[cfg(test)]
pub fn event_frame(event_type: &str, payload: &str) -> Vec<u8> {
    Frame {
        headers: vec![
            (":event-type".into(), HeaderValue::Str(event_type.into())),
            (
                ":content-type".into(),
                HeaderValue::Str("application/json".into()),
            ),
            (":message-type".into(), HeaderValue::Str("event".into())),
        ],
        payload: payload.as_bytes().to_vec(),
    }
    .encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_known_values() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    /// The AWS event-stream test suite's `int32_header` vector: one `event-type: 40972`
    /// header and a JSON payload; its prelude (lengths and prelude CRC) is the suite's.
    #[test]
    fn decodes_the_aws_int32_header_vector() {
        let payload = br#"{'foo':'bar'}"#;
        let frame = Frame {
            headers: vec![("event-type".into(), HeaderValue::Int(0xA00C))],
            payload: payload.to_vec(),
        };
        let bytes = frame.encode();
        assert_eq!(
            &bytes[..12],
            &[0, 0, 0, 0x2D, 0, 0, 0, 0x10, 0x41, 0xC4, 0x24, 0xB8]
        );
        let decoded = decode_message(&bytes).unwrap();
        assert_eq!(decoded, frame);
    }

    /// A reader that hands out at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn frames_split_across_reads_are_reassembled() {
        let mut body = event_frame("messageStart", r#"{"role":"assistant"}"#);
        body.extend(event_frame(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"hé"},"p":"abcdef"}"#,
        ));
        for step in [1, 3, 7, 13, 1000] {
            let frames: Vec<Frame> = FrameReader::new(Trickle { data: &body, step })
                .map(|f| f.unwrap())
                .collect();
            assert_eq!(frames.len(), 2, "step {step}");
            assert_eq!(frames[0].header(":event-type"), Some("messageStart"));
            assert_eq!(frames[1].header(":message-type"), Some("event"));
            assert_eq!(
                String::from_utf8_lossy(&frames[1].payload),
                r#"{"contentBlockIndex":0,"delta":{"text":"hé"},"p":"abcdef"}"#
            );
        }
    }

    #[test]
    fn corrupt_checksums_and_truncation_give_the_sdk_texts() {
        let good = event_frame("messageStart", r#"{"role":"assistant"}"#);
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xFF;
        let expected = u32::from_be_bytes([bad[last - 3], bad[last - 2], bad[last - 1], bad[last]]);
        let computed = crc32(&bad[..bad.len() - 4]);
        let err = FrameReader::new(&bad[..]).next().unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "The message checksum ({computed}) did not match the expected value of {expected}"
            )
        );
        let mut bad_prelude = good.clone();
        bad_prelude[9] ^= 1;
        let err = FrameReader::new(&bad_prelude[..])
            .next()
            .unwrap()
            .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("The prelude checksum specified in the message ("));
        let err = FrameReader::new(&good[..good.len() - 2])
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(err.to_string(), "Truncated event message received.");
        // Ending inside the length prefix is a clean end, as in the SDK.
        assert!(FrameReader::new(&good[..3]).next().is_none());
        assert!(FrameReader::new(&b""[..]).next().is_none());
    }
}
