//! `JSON.parse` as pi meets it: the messages V8 (Node 22) throws for malformed text, worded
//! and positioned (in UTF-16 code units) exactly as V8's `JsonParser` does, and pi's
//! `repairJson` / `parseJsonWithRepair`, which retry a failed parse once after escaping raw
//! control characters and invalid escapes inside strings. Parsing itself is serde_json's; this
//! module only reproduces V8's failures and pi's repair.

use serde_json::Value;

/// `JSON.parse`, retried once on pi's `repairJson` of the text.
pub(crate) fn parse_json_with_repair(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Some(v);
    }
    let repaired = repair_json(text);
    if repaired != text {
        return serde_json::from_str(&repaired).ok();
    }
    None
}

/// pi's `parseJsonWithRepair`, failing with the message V8's `JSON.parse` throws (for the
/// repaired text when the repair changed it, as pi re-throws the second parse's error).
pub(crate) fn js_parse_json_with_repair(text: &str) -> Result<Value, String> {
    let first = match serde_json::from_str::<Value>(text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let repaired = repair_json(text);
    let (failed, err) = if repaired != text {
        match serde_json::from_str::<Value>(&repaired) {
            Ok(v) => return Ok(v),
            Err(e) => (repaired.as_str(), e),
        }
    } else {
        (text, first)
    };
    // V8 accepts a few texts serde_json rejects (lone surrogate escapes, numbers beyond f64,
    // nesting deeper than 128); those keep serde_json's own message.
    Err(js_json_parse_error(failed).unwrap_or_else(|| err.to_string()))
}

/// The message V8's `JSON.parse` (Node 22) throws for `text`, or `None` when it parses. Positions
/// count UTF-16 code units, like JavaScript's.
pub(crate) fn js_json_parse_error(text: &str) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut p = V8JsonSyntax { s: &units, i: 0 };
    p.document().err().map(|e| p.message(e))
}

/// Why V8's JSON parser stopped, at which UTF-16 offset.
enum V8JsonError {
    /// `ReportUnexpectedToken` without a message: worded after the token found there.
    Unexpected(usize),
    /// A specific message: `"<text> at position P (line L column C)"`.
    Message(&'static str, usize),
}

/// A syntax-only walk of JSON text that stops where V8's `JsonParser` does (json-parser.cc),
/// with an explicit stack so deep nesting costs no recursion.
struct V8JsonSyntax<'a> {
    s: &'a [u16],
    i: usize,
}

/// JSON's whitespace, what `JSON.parse` skips around tokens and around the whole value: space,
/// tab, LF and CR only (not the wider set `String.prototype.trim` removes).
pub(crate) fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// [`is_json_whitespace`] for one UTF-16 code unit.
fn is_json_ws(c: u16) -> bool {
    char::from_u32(u32::from(c)).is_some_and(is_json_whitespace)
}

fn is_digit(c: Option<u16>) -> bool {
    matches!(c, Some(d) if (b'0' as u16..=b'9' as u16).contains(&d))
}

impl V8JsonSyntax<'_> {
    fn peek(&self) -> Option<u16> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(is_json_ws) {
            self.i += 1;
        }
    }

    fn is(&self, c: u8) -> bool {
        self.peek() == Some(c as u16)
    }

    fn skip_digits(&mut self) {
        while is_digit(self.peek()) {
            self.i += 1;
        }
    }

    fn document(&mut self) -> Result<(), V8JsonError> {
        #[derive(Clone, Copy)]
        enum Open {
            Object,
            Array,
        }
        let mut stack: Vec<Open> = Vec::new();
        loop {
            // Produce a value.
            loop {
                self.ws();
                match self.peek().and_then(|c| u8::try_from(c).ok()) {
                    Some(b'"') => {
                        self.i += 1;
                        self.string()?;
                    }
                    Some(b'-' | b'0'..=b'9') => self.number()?,
                    Some(b'{') => {
                        self.i += 1;
                        self.ws();
                        if self.is(b'}') {
                            self.i += 1;
                        } else {
                            self.property_key("Expected property name or '}' in JSON")?;
                            stack.push(Open::Object);
                            continue;
                        }
                    }
                    Some(b'[') => {
                        self.i += 1;
                        self.ws();
                        if self.is(b']') {
                            self.i += 1;
                        } else {
                            stack.push(Open::Array);
                            continue;
                        }
                    }
                    Some(b't') => self.literal("true")?,
                    Some(b'f') => self.literal("false")?,
                    Some(b'n') => self.literal("null")?,
                    _ => return Err(V8JsonError::Unexpected(self.i)),
                }
                break;
            }
            // Consume it.
            loop {
                let Some(top) = stack.last().copied() else {
                    self.ws();
                    if self.i < self.s.len() {
                        return Err(V8JsonError::Message(
                            "Unexpected non-whitespace character after JSON",
                            self.i,
                        ));
                    }
                    return Ok(());
                };
                self.ws();
                match top {
                    Open::Object => {
                        if self.is(b',') {
                            self.i += 1;
                            self.property_key("Expected double-quoted property name in JSON")?;
                            break;
                        }
                        if !self.is(b'}') {
                            return Err(V8JsonError::Message(
                                "Expected ',' or '}' after property value in JSON",
                                self.i,
                            ));
                        }
                    }
                    Open::Array => {
                        if self.is(b',') {
                            self.i += 1;
                            break;
                        }
                        if !self.is(b']') {
                            return Err(V8JsonError::Message(
                                "Expected ',' or ']' after array element in JSON",
                                self.i,
                            ));
                        }
                    }
                }
                self.i += 1;
                stack.pop();
            }
        }
    }

    /// `"key"` and the colon after it.
    fn property_key(&mut self, missing: &'static str) -> Result<(), V8JsonError> {
        self.ws();
        if !self.is(b'"') {
            return Err(V8JsonError::Message(missing, self.i));
        }
        self.i += 1;
        self.string()?;
        self.ws();
        if !self.is(b':') {
            return Err(V8JsonError::Message(
                "Expected ':' after property name in JSON",
                self.i,
            ));
        }
        self.i += 1;
        Ok(())
    }

    /// The rest of a string after its opening quote.
    fn string(&mut self) -> Result<(), V8JsonError> {
        loop {
            let Some(c) = self.peek() else {
                return Err(V8JsonError::Message("Unterminated string in JSON", self.i));
            };
            if c == b'"' as u16 {
                self.i += 1;
                return Ok(());
            }
            if c < 0x20 {
                return Err(V8JsonError::Message(
                    "Bad control character in string literal in JSON",
                    self.i,
                ));
            }
            self.i += 1;
            if c != b'\\' as u16 {
                continue;
            }
            match self.peek().map(|e| u8::try_from(e).unwrap_or(0)) {
                None => return Err(V8JsonError::Unexpected(self.i)),
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                Some(b'u') => {
                    for _ in 0..4 {
                        self.i += 1;
                        let hex = self
                            .peek()
                            .and_then(|h| char::from_u32(h as u32))
                            .is_some_and(|h| h.is_ascii_hexdigit());
                        if !hex {
                            return Err(V8JsonError::Message("Bad Unicode escape in JSON", self.i));
                        }
                    }
                    self.i += 1;
                }
                Some(_) => {
                    return Err(V8JsonError::Message(
                        "Bad escaped character in JSON",
                        self.i,
                    ))
                }
            }
        }
    }

    fn number(&mut self) -> Result<(), V8JsonError> {
        if self.is(b'-') {
            self.i += 1;
        }
        if self.is(b'0') {
            self.i += 1;
            if is_digit(self.peek()) {
                return Err(V8JsonError::Unexpected(self.i));
            }
        } else {
            let start = self.i;
            self.skip_digits();
            if self.i == start {
                return Err(V8JsonError::Message(
                    "No number after minus sign in JSON",
                    self.i,
                ));
            }
        }
        if self.is(b'.') {
            self.i += 1;
            if !is_digit(self.peek()) {
                return Err(V8JsonError::Message(
                    "Unterminated fractional number in JSON",
                    self.i,
                ));
            }
            self.skip_digits();
        }
        if self.is(b'e') || self.is(b'E') {
            self.i += 1;
            if self.is(b'-') || self.is(b'+') {
                self.i += 1;
            }
            if !is_digit(self.peek()) {
                return Err(V8JsonError::Message(
                    "Exponent part is missing a number in JSON",
                    self.i,
                ));
            }
            self.skip_digits();
        }
        Ok(())
    }

    /// `true` / `false` / `null` (the first character already matched).
    fn literal(&mut self, word: &str) -> Result<(), V8JsonError> {
        for expected in word.bytes().skip(1) {
            self.i += 1;
            match self.peek() {
                None => return Err(V8JsonError::Unexpected(self.i)),
                Some(c) if c != expected as u16 => return Err(V8JsonError::Unexpected(self.i)),
                Some(_) => {}
            }
        }
        self.i += 1;
        Ok(())
    }

    /// `(line L column C)` of an offset: `\r\n`, `\r` and `\n` end lines.
    fn location(&self, pos: usize) -> (usize, usize) {
        let mut line = 1;
        let mut line_start = 0;
        let mut k = 0;
        while k < pos {
            if self.s[k] == 0x0D && k + 1 < pos && self.s[k + 1] == 0x0A {
                k += 1;
            }
            if self.s[k] == 0x0D || self.s[k] == 0x0A {
                line += 1;
                line_start = k + 1;
            }
            k += 1;
        }
        (line, 1 + pos - line_start)
    }

    fn at(&self, what: &str, pos: usize) -> String {
        let (line, column) = self.location(pos);
        format!("{what} at position {pos} (line {line} column {column})")
    }

    fn message(&self, e: V8JsonError) -> String {
        /// Characters of context on each side of an unexpected token.
        const CONTEXT: usize = 10;
        let pos = match e {
            V8JsonError::Message(what, pos) => return self.at(what, pos),
            V8JsonError::Unexpected(pos) => pos,
        };
        let Some(c) = self.s.get(pos).copied() else {
            return "Unexpected end of JSON input".to_string();
        };
        if c == b'"' as u16 {
            return self.at("Unexpected string in JSON", pos);
        }
        if c == b'-' as u16 || is_digit(Some(c)) {
            return self.at("Unexpected number in JSON", pos);
        }
        let source = String::from_utf16_lossy(self.s);
        if matches!(
            source.as_str(),
            "[object Object]" | "undefined" | "Infinity" | "NaN"
        ) {
            return format!("\"{source}\" is not valid JSON");
        }
        let token = String::from_utf16_lossy(&[c]);
        let len = self.s.len();
        let slice = |a: usize, b: usize| String::from_utf16_lossy(&self.s[a..b.min(len)]);
        if len <= 2 * CONTEXT {
            format!("Unexpected token '{token}', \"{source}\" is not valid JSON")
        } else if pos < CONTEXT {
            let text = slice(0, pos + CONTEXT);
            format!("Unexpected token '{token}', \"{text}\"... is not valid JSON")
        } else if pos < len - CONTEXT {
            let text = slice(pos - CONTEXT, pos + CONTEXT);
            format!("Unexpected token '{token}', ...\"{text}\"... is not valid JSON")
        } else {
            let text = slice(pos - CONTEXT, len);
            format!("Unexpected token '{token}', ...\"{text}\" is not valid JSON")
        }
    }
}

/// pi's `repairJson`: inside strings, escapes raw control characters and doubles backslashes
/// that start an invalid escape.
pub(crate) fn repair_json(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() + 8);
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            if c == '"' {
                in_string = true;
            }
            i += 1;
            continue;
        }
        if c == '"' {
            out.push(c);
            in_string = false;
            i += 1;
            continue;
        }
        if c == '\\' {
            match chars.get(i + 1) {
                None => {
                    out.push_str("\\\\");
                    i += 1;
                    continue;
                }
                Some('u') => {
                    let digits: String = chars.iter().skip(i + 2).take(4).collect();
                    if digits.len() == 4 && digits.chars().all(|d| d.is_ascii_hexdigit()) {
                        out.push_str("\\u");
                        out.push_str(&digits);
                        i += 6;
                        continue;
                    }
                    out.push_str("\\\\");
                    i += 1;
                    continue;
                }
                Some(&n) if matches!(n, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push('\\');
                    out.push(n);
                    i += 2;
                    continue;
                }
                Some(_) => {
                    out.push_str("\\\\");
                    i += 1;
                    continue;
                }
            }
        }
        if (c as u32) < 0x20 {
            match c {
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{:04x}", c as u32)),
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages checked against Node 22's `JSON.parse`.
    #[test]
    fn v8_json_parse_messages() {
        let cases: &[(&str, &str)] = &[
            ("", "Unexpected end of JSON input"),
            (
                "{",
                "Expected property name or '}' in JSON at position 1 (line 1 column 2)",
            ),
            (
                "1.",
                "Unterminated fractional number in JSON at position 2 (line 1 column 3)",
            ),
            (
                "1.e",
                "Unterminated fractional number in JSON at position 2 (line 1 column 3)",
            ),
            (
                "1e",
                "Exponent part is missing a number in JSON at position 2 (line 1 column 3)",
            ),
            (
                "1.5e+",
                "Exponent part is missing a number in JSON at position 5 (line 1 column 6)",
            ),
            (
                "-",
                "No number after minus sign in JSON at position 1 (line 1 column 2)",
            ),
            (
                "-Infinity",
                "No number after minus sign in JSON at position 1 (line 1 column 2)",
            ),
            (
                "01",
                "Unexpected number in JSON at position 1 (line 1 column 2)",
            ),
            (
                "-01",
                "Unexpected number in JSON at position 2 (line 1 column 3)",
            ),
            (
                "nul1",
                "Unexpected number in JSON at position 3 (line 1 column 4)",
            ),
            (
                "tr\"",
                "Unexpected string in JSON at position 2 (line 1 column 3)",
            ),
            ("tru", "Unexpected end of JSON input"),
            ("t rue", "Unexpected token ' ', \"t rue\" is not valid JSON"),
            ("[1,]", "Unexpected token ']', \"[1,]\" is not valid JSON"),
            (
                "{\"a\":1,}",
                "Expected double-quoted property name in JSON at position 7 (line 1 column 8)",
            ),
            (
                "{,}",
                "Expected property name or '}' in JSON at position 1 (line 1 column 2)",
            ),
            (
                "{\"a\" 1}",
                "Expected ':' after property name in JSON at position 5 (line 1 column 6)",
            ),
            (
                "{\"a\":}",
                "Unexpected token '}', \"{\"a\":}\" is not valid JSON",
            ),
            (
                "[1 2]",
                "Expected ',' or ']' after array element in JSON at position 3 (line 1 column 4)",
            ),
            (
                "{\"a\":1}}",
                "Unexpected non-whitespace character after JSON at position 7 (line 1 column 8)",
            ),
            (
                "0-",
                "Unexpected non-whitespace character after JSON at position 1 (line 1 column 2)",
            ),
            (
                "\"abc",
                "Unterminated string in JSON at position 4 (line 1 column 5)",
            ),
            ("\"\\", "Unexpected end of JSON input"),
            (
                "\"\\é\"",
                "Bad escaped character in JSON at position 2 (line 1 column 3)",
            ),
            (
                "\"\\u12",
                "Bad Unicode escape in JSON at position 5 (line 1 column 6)",
            ),
            (
                "{\"a\":\"x\\u12g4\"}",
                "Bad Unicode escape in JSON at position 11 (line 1 column 12)",
            ),
            (
                "\"a\u{1}\"",
                "Bad control character in string literal in JSON at position 2 (line 1 column 3)",
            ),
            ("NaN", "\"NaN\" is not valid JSON"),
            ("undefined", "\"undefined\" is not valid JSON"),
            (
                "{\"a\": \"b\"\n, x}",
                "Expected double-quoted property name in JSON at position 12 (line 2 column 3)",
            ),
            (
                "[\"😀\" x]",
                "Expected ',' or ']' after array element in JSON at position 6 (line 1 column 7)",
            ),
            (
                "x2345678901234567890",
                "Unexpected token 'x', \"x2345678901234567890\" is not valid JSON",
            ),
            (
                "x23456789012345678901",
                "Unexpected token 'x', \"x234567890\"... is not valid JSON",
            ),
            (
                "[1,2,3,4,5,6,7,8,9,10,x,12,13,14]",
                "Unexpected token 'x', ...\",7,8,9,10,x,12,13,14\"... is not valid JSON",
            ),
            (
                "[1,2,3,4,5,6,7,8,9,10,11,x]",
                "Unexpected token 'x', ...\"8,9,10,11,x]\" is not valid JSON",
            ),
            (
                "[1,2,3,4,5,6,7,8,x,10]",
                "Unexpected token 'x', ...\"4,5,6,7,8,x,10]\" is not valid JSON",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                js_json_parse_error(text).as_deref(),
                Some(*want),
                "{text:?}"
            );
        }
        for text in [
            "{}",
            "[]",
            " {\"a\": [1, -0.5e+3, true, null, \"\\u00e9\"]} ",
            "0",
        ] {
            assert_eq!(js_json_parse_error(text), None, "{text:?}");
        }
        // Deep nesting needs no recursion.
        let deep = "[".repeat(100_000);
        assert_eq!(
            js_json_parse_error(&deep).unwrap(),
            "Unexpected end of JSON input"
        );
    }

    #[test]
    fn repair_matches_pi() {
        assert_eq!(repair_json("{\"a\":\"x\ny\"}"), "{\"a\":\"x\\ny\"}");
        assert_eq!(repair_json("{\"a\":\"\\q\"}"), "{\"a\":\"\\\\q\"}");
        assert_eq!(repair_json("{\"a\":\"\\u12\"}"), "{\"a\":\"\\\\u12\"}");
        assert_eq!(repair_json("{\"a\":\"\\u00e9\"}"), "{\"a\":\"\\u00e9\"}");
        assert_eq!(repair_json("{\"a\":\"\u{1}\"}"), "{\"a\":\"\\u0001\"}");
    }
}
