//! Base64 as Node's `Buffer` does it: standard alphabet with padding on output, and a lenient
//! decoder (`Buffer.from(s, "base64")`) that accepts both alphabets, skips any other character
//! (whitespace, line breaks) and stops at the first `=`.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (`Buffer.toString("base64")`).
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(encoded_len(bytes.len()));
    for chunk in bytes.chunks(3) {
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let n = (u32::from(chunk[0]) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let sextet = |shift: u32| ALPHABET[((n >> shift) & 63) as usize] as char;
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// Length of the padded base64 text of `n` bytes (`Math.ceil(n / 3) * 4`).
pub fn encoded_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

fn sextet_value(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Node's lenient decoding: never fails; a trailing lone sextet is dropped.
pub fn decode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let mut acc = 0u32;
    let mut count = 0u32;
    for &c in text.as_bytes() {
        if c == b'=' {
            break;
        }
        let Some(v) = sextet_value(c) else { continue };
        acc = (acc << 6) | v;
        count += 1;
        if count == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            count = 0;
        }
    }
    match count {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_with_padding() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"f"), "Zg==");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(encode(b"foo"), "Zm9v");
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(&[0xfb, 0xff]), "+/8=");
        assert_eq!(encoded_len(4), 8);
    }

    #[test]
    fn decodes_leniently_like_node() {
        assert_eq!(decode("Zm9vYmFy"), b"foobar");
        assert_eq!(decode("Zm8="), b"fo");
        assert_eq!(decode("Zm8"), b"fo", "padding is optional");
        assert_eq!(decode("Zg"), b"f");
        assert_eq!(decode("Z"), b"", "a lone sextet decodes to nothing");
        assert_eq!(decode("Zm9v\nYm Fy\r\n"), b"foobar", "whitespace skipped");
        assert_eq!(
            decode("Zm9v!!YmFy"),
            b"foobar",
            "invalid characters skipped"
        );
        assert_eq!(decode("Zg==Zm9v"), b"f", "stops at the first =");
        assert_eq!(decode("-_8"), [0xfb, 0xff], "URL-safe alphabet");
        assert_eq!(decode("bm90IGFuIGltYWdl"), b"not an image");
        for n in 0..20u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(decode(&encode(&bytes)), bytes);
        }
    }
}
