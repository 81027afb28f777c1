//! Whether a JSON text is already in the exact form pi-rpc would print its parsed value in
//! (`JSON.stringify(JSON.parse(text)) === text`, numbers as [`super::JsFormatter`] prints them).
//!
//! Session files hold messages and entries as JSON text; answering `get_messages` or
//! `get_entries` by parsing every one into a `Value` and printing it again costs several times
//! the text's size in allocations and most of the response time. A text that passes this check
//! can be copied to the output as it is: its re-serialization would give the same bytes. The
//! check is conservative: anything it is not sure about (whitespace, an escape `JSON.stringify`
//! would not write, a number whose shortest form could differ, a repeated key) answers `false`,
//! and the caller takes the slow path.

/// Most keys one object may have before the check gives up (repeated keys are looked for by
/// comparing each key with the earlier ones of its object).
const MAX_KEYS: usize = 64;

/// Deepest nesting checked (deeper texts take the slow path).
const MAX_DEPTH: usize = 256;

/// `true` when `text` is one JSON value printed exactly as pi-rpc's serializer would print it
/// after parsing it: no whitespace, the shortest escapes, numbers in their JavaScript form, no
/// repeated keys. `false` says nothing more than "not sure".
pub(crate) fn is_canonical(text: &str) -> bool {
    let b = text.as_bytes();
    let mut s = Scan { b, i: 0 };
    // Per open container: `None` for an array, else the index in `keys` where its keys begin.
    let mut stack: Vec<Option<usize>> = Vec::new();
    // The key spans of every open object, innermost last.
    let mut keys: Vec<(usize, usize)> = Vec::new();
    'value: loop {
        // A value starts at `s.i`.
        match s.peek() {
            Some(b'{') => {
                s.i += 1;
                if s.peek() == Some(b'}') {
                    s.i += 1;
                } else {
                    if stack.len() >= MAX_DEPTH {
                        return false;
                    }
                    let first = keys.len();
                    stack.push(Some(first));
                    if !s.key(&mut keys, first) {
                        return false;
                    }
                    continue 'value;
                }
            }
            Some(b'[') => {
                s.i += 1;
                if s.peek() == Some(b']') {
                    s.i += 1;
                } else {
                    if stack.len() >= MAX_DEPTH {
                        return false;
                    }
                    stack.push(None);
                    continue 'value;
                }
            }
            Some(b'"') => {
                if s.string().is_none() {
                    return false;
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                if !s.number() {
                    return false;
                }
            }
            Some(b't') => {
                if !s.literal(b"true") {
                    return false;
                }
            }
            Some(b'f') => {
                if !s.literal(b"false") {
                    return false;
                }
            }
            Some(b'n') => {
                if !s.literal(b"null") {
                    return false;
                }
            }
            _ => return false,
        }
        // A value ended: close containers or go on to the next item.
        loop {
            match stack.last().copied() {
                None => return s.i == b.len(),
                Some(frame) => match (s.peek(), frame) {
                    (Some(b','), None) => {
                        s.i += 1;
                        continue 'value;
                    }
                    (Some(b','), Some(first_key)) => {
                        s.i += 1;
                        if !s.key(&mut keys, first_key) {
                            return false;
                        }
                        continue 'value;
                    }
                    (Some(b']'), None) => {
                        s.i += 1;
                        stack.pop();
                    }
                    (Some(b'}'), Some(first_key)) => {
                        s.i += 1;
                        keys.truncate(first_key);
                        stack.pop();
                    }
                    _ => return false,
                },
            }
        }
    }
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    /// A key and its `:`; `false` when not canonical or already seen in its object (whose
    /// keys are `keys[first..]`).
    fn key(&mut self, keys: &mut Vec<(usize, usize)>, first: usize) -> bool {
        if self.peek() != Some(b'"') {
            return false;
        }
        let Some(span) = self.string() else {
            return false;
        };
        if keys.len() - first >= MAX_KEYS {
            return false;
        }
        // Canonical escaping is one-to-one, so equal keys have equal bytes.
        let text = &self.b[span.0..span.1];
        if keys[first..].iter().any(|&(a, z)| &self.b[a..z] == text) {
            return false;
        }
        keys.push(span);
        if self.peek() != Some(b':') {
            return false;
        }
        self.i += 1;
        true
    }

    /// A string starting at the `"`; its span (without quotes) when every escape in it is
    /// the one the serializer writes.
    fn string(&mut self) -> Option<(usize, usize)> {
        self.i += 1;
        let start = self.i;
        loop {
            let c = *self.b.get(self.i)?;
            match c {
                b'"' => {
                    self.i += 1;
                    return Some((start, self.i - 1));
                }
                b'\\' => {
                    let e = *self.b.get(self.i + 1)?;
                    match e {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            let hex = self.b.get(self.i + 2..self.i + 6)?;
                            // Only control characters without a short escape are written as
                            // `\u00xx`, in lowercase.
                            let v = match hex {
                                [b'0', b'0', h, l] => hex_digit(*h)? * 16 + hex_digit(*l)?,
                                _ => return None,
                            };
                            if v >= 0x20 || matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    /// A number whose printed form is certainly the text itself: an integer of at most 18
    /// digits other than `-0`, or a decimal fraction without exponent, with at most 15
    /// significant digits (so no shorter text names the same double), no trailing zero, and
    /// at least 1e-6 in magnitude (smaller ones print with an exponent).
    fn number(&mut self) -> bool {
        let start = self.i;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.i += 1;
        }
        let int_start = self.i;
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.i += 1;
                }
            }
            _ => return false,
        }
        let int_digits = self.i - int_start;
        let int_is_zero = self.b[int_start] == b'0';
        match self.peek() {
            Some(b'.') => {}
            Some(b'e' | b'E') => return false,
            _ => {
                let text = &self.b[start..self.i];
                return int_digits <= 18 && text != b"-0";
            }
        }
        self.i += 1;
        let frac_start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let frac = &self.b[frac_start..self.i];
        if frac.is_empty() || frac.last() == Some(&b'0') {
            return false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            return false;
        }
        let significant = if int_is_zero {
            let zeros = frac.iter().take_while(|&&c| c == b'0').count();
            if zeros > 5 {
                return false;
            }
            frac.len() - zeros
        } else {
            int_digits + frac.len()
        };
        significant <= 15
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// What pi-rpc prints for `text` after parsing it.
    fn reprinted(text: &str) -> String {
        let v: serde_json::Value = crate::session::value::from_str(text).unwrap();
        super::super::to_js_string(&v).unwrap()
    }

    #[test]
    fn printed_forms_are_canonical() {
        for text in [
            r#"{"role":"user","content":[{"type":"text","text":"hi \"you\"\n\tthere\\"}],"timestamp":1767225600000}"#,
            r#"{"usage":{"input":10,"cost":{"input":0.00003,"total":0.123456789012345}},"x":-1.5,"y":0,"z":[]}"#,
            "{\"a\":{},\"b\":[[],{}],\"c\":true,\"d\":false,\"e\":null,\"f\":\"\\u001f\\u0000 é \u{2028}\"}",
            r#"{"b":1,"2":2,"1":3}"#,
            "[\"\u{7f}\"]",
            "0.000001",
        ] {
            assert!(is_canonical(text), "{text}");
            assert_eq!(reprinted(text), text);
        }
    }

    #[test]
    fn forms_the_serializer_would_change_are_not() {
        for text in [
            r#"{"a": 1}"#,
            r#" {"a":1}"#,
            r#"{"a":1} "#,
            r#"{"a":1,"a":2}"#,
            r#"["\/"]"#,
            r#"["\u0041"]"#,
            r#"["\u000A"]"#,
            r#"["\u001F"]"#,
            r#"["\ud83d\ude00"]"#,
            "[1.0]",
            "[1e3]",
            "[-0]",
            "[0.0000001]",
            "[0.1234567890123456]",
            "[12345678901234567890]",
            r#"{"a":1,}"#,
            "[1,]",
            "[",
            "",
            "nul",
        ] {
            assert!(!is_canonical(text), "{text}");
        }
    }

    /// Random values printed by the serializer are recognised (so the fast path is taken), and
    /// whatever is recognised reprints to itself (so taking it is right).
    #[test]
    fn agrees_with_the_serializer_on_random_texts() {
        let mut rng = Rng::new(7, 0xca70);
        let atoms = [
            "0",
            "-1",
            "17",
            "0.5",
            "-2.25",
            "1e3",
            "1.0",
            "0.0000001",
            "123456789.123",
            "true",
            "null",
            "\"a\"",
            "\"\\u0001\"",
            "\"\\/\"",
            "\"x\\ny\"",
            "-0",
            "3.000",
        ];
        let mut recognised = 0;
        for _ in 0..4000 {
            let text = random_text(&mut rng, &atoms, 0);
            let printed = reprinted(&text);
            if is_canonical(&text) {
                recognised += 1;
                assert_eq!(printed, text);
            }
            let exponent = printed
                .as_bytes()
                .windows(2)
                .any(|w| w[0].is_ascii_digit() && w[1] == b'e');
            assert!(is_canonical(&printed) || exponent, "{printed}");
        }
        assert!(recognised > 200, "{recognised}");
    }

    fn random_text(rng: &mut Rng, atoms: &[&str], depth: usize) -> String {
        match if depth > 3 { 0 } else { rng.below(3) } {
            0 => rng.pick(atoms).to_string(),
            1 => {
                let n = rng.below(4);
                let items: Vec<String> =
                    (0..n).map(|_| random_text(rng, atoms, depth + 1)).collect();
                format!("[{}]", items.join(if rng.chance(20) { ", " } else { "," }))
            }
            _ => {
                let n = rng.below(4);
                let items: Vec<String> = (0..n)
                    .map(|_| {
                        let key = ["a", "b", "c", "1"][rng.below(4)];
                        format!("\"{key}\":{}", random_text(rng, atoms, depth + 1))
                    })
                    .collect();
                format!("{{{}}}", items.join(","))
            }
        }
    }
}
