//! Tool-call arguments as they stream in: the raw text with a tolerant partial parse for the
//! partial message ([`ToolArgs`]), the final parse with pi's string repair, and — for text that
//! does not parse — the `argumentsError` text in V8's `JSON.parse` wording.

use serde_json::{Map, Value};

use super::types::ContentBlock;

/// The arguments of one streaming tool call: the raw text, and a tolerant partial parse for the
/// partial message. Re-parsing is amortized (skipped while the text has less than doubled since
/// the last parse beyond the first 4 KiB), so long arguments cost linear time; the partial
/// arguments may lag a little behind the text, like pi's.
#[derive(Clone, Debug, Default)]
pub struct ToolArgs {
    text: String,
    parsed_len: usize,
    partial: Option<Value>,
}

impl ToolArgs {
    pub fn new() -> ToolArgs {
        ToolArgs::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Appends a piece; returns the partial arguments when they were re-parsed.
    pub fn append(&mut self, delta: &str) -> Option<Value> {
        self.text.push_str(delta);
        if self.text.len() > 4096 && self.text.len() < self.parsed_len.saturating_mul(2) {
            return None;
        }
        self.parsed_len = self.text.len();
        let v = parse_partial_json(&self.text);
        let v = if v.is_object() {
            v
        } else {
            Value::Object(Map::new())
        };
        self.partial = Some(v.clone());
        Some(v)
    }

    /// The final arguments: one full parse of the complete text, which reports malformed
    /// arguments (pi's `ToolCallArgumentsStream.finish`).
    pub fn finish(&self) -> FinalArguments {
        parse_tool_arguments(&self.text)
    }
}

/// The arguments of a finished tool call: the parsed object (`{}` when the text is empty or
/// malformed) and, for malformed text, the `argumentsError` of the tool-call block.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalArguments {
    pub arguments: Value,
    pub error: Option<String>,
}

impl FinalArguments {
    /// Sets the block's `arguments` and `argumentsError` (pi's `Object.assign(block, …)`).
    pub fn apply_to(self, block: &mut ContentBlock) {
        if let ContentBlock::ToolCall {
            arguments,
            arguments_error,
            ..
        } = block
        {
            *arguments = self.arguments;
            if self.error.is_some() {
                *arguments_error = self.error;
            }
        }
    }
}

/// pi's `parseToolCallArguments`: `{}` for blank text; the parsed object (after repairing raw
/// control characters and invalid escapes in strings); otherwise `{}` with the error
/// `"<JSON.parse message>\n\nReceived arguments:\n<text>"` (or `Tool arguments must be a JSON
/// object` for a value that is not an object).
pub fn parse_tool_arguments(text: &str) -> FinalArguments {
    if text.trim().is_empty() {
        return FinalArguments {
            arguments: Value::Object(Map::new()),
            error: None,
        };
    }
    let problem = match js_parse_json_with_repair(text) {
        Ok(v @ Value::Object(_)) => {
            return FinalArguments {
                arguments: v,
                error: None,
            }
        }
        Ok(_) => "Tool arguments must be a JSON object".to_string(),
        Err(message) => message,
    };
    FinalArguments {
        arguments: Value::Object(Map::new()),
        error: Some(format!("{problem}\n\nReceived arguments:\n{text}")),
    }
}

/// `JSON.parse`, retried once on pi's `repairJson` of the text.
pub fn parse_json_with_repair(text: &str) -> Option<Value> {
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
pub fn js_parse_json_with_repair(text: &str) -> Result<Value, String> {
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
pub fn js_json_parse_error(text: &str) -> Option<String> {
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

fn is_json_ws(c: u16) -> bool {
    matches!(c, 0x20 | 0x09 | 0x0A | 0x0D)
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
pub fn repair_json(json: &str) -> String {
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

/// The value of possibly incomplete JSON text (streamed tool arguments): unterminated strings
/// show the characters so far, unterminated containers their complete members, a member whose
/// value has not started is omitted, an unterminated literal shows its value once it is a
/// prefix of `true` / `false` / `null`. Malformed text yields the value read up to the problem;
/// text that never started a value yields `{}`.
pub fn parse_partial_json(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut p = PartialParser { s: &chars, i: 0 };
    p.ws();
    p.value().unwrap_or_else(|| Value::Object(Map::new()))
}

struct PartialParser<'a> {
    s: &'a [char],
    i: usize,
}

impl PartialParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], ' ' | '\t' | '\n' | '\r') {
            self.i += 1;
        }
    }

    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    /// `None` when no value starts here.
    fn value(&mut self) -> Option<Value> {
        let c = *self.s.get(self.i)?;
        match c {
            '{' => {
                self.i += 1;
                Some(self.object())
            }
            '[' => {
                self.i += 1;
                Some(self.array())
            }
            '"' => {
                self.i += 1;
                Some(Value::String(self.string()))
            }
            _ => self.scalar(),
        }
    }

    fn object(&mut self) -> Value {
        let mut m = Map::new();
        loop {
            self.ws();
            match self.s.get(self.i) {
                None => return Value::Object(m),
                Some('}') => {
                    self.i += 1;
                    return Value::Object(m);
                }
                Some(',') => {
                    self.i += 1;
                    continue;
                }
                Some('"') => {
                    self.i += 1;
                    let key_start = self.i;
                    let key = self.string();
                    // An unterminated key: the member has not started.
                    if self.at_end() && !self.string_closed_before(key_start) {
                        return Value::Object(m);
                    }
                    self.ws();
                    if self.s.get(self.i) == Some(&':') {
                        self.i += 1;
                    }
                    self.ws();
                    if self.at_end() {
                        return Value::Object(m);
                    }
                    match self.value() {
                        Some(v) => {
                            m.insert(key, v);
                        }
                        None => return Value::Object(m),
                    }
                }
                Some(_) => return Value::Object(m),
            }
        }
    }

    /// Whether the string that started at `start` was closed (its closing quote read).
    fn string_closed_before(&self, start: usize) -> bool {
        self.i > start && self.s.get(self.i - 1) == Some(&'"') && {
            // Count preceding backslashes: an escaped quote does not close.
            let mut n = 0;
            let mut j = self.i - 1;
            while j > start && self.s[j - 1] == '\\' {
                n += 1;
                j -= 1;
            }
            n % 2 == 0
        }
    }

    fn array(&mut self) -> Value {
        let mut items = Vec::new();
        loop {
            self.ws();
            match self.s.get(self.i) {
                None => return Value::Array(items),
                Some(']') => {
                    self.i += 1;
                    return Value::Array(items);
                }
                Some(',') => {
                    self.i += 1;
                    continue;
                }
                Some(_) => match self.value() {
                    Some(v) => items.push(v),
                    None => return Value::Array(items),
                },
            }
        }
    }

    /// After the opening quote; stops after the closing quote or at the end of the text.
    fn string(&mut self) -> String {
        let mut out = String::new();
        while let Some(&c) = self.s.get(self.i) {
            self.i += 1;
            match c {
                '"' => return out,
                '\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        // An unterminated escape is held back.
                        return out;
                    };
                    self.i += 1;
                    match e {
                        '"' => out.push('"'),
                        '\\' => out.push('\\'),
                        '/' => out.push('/'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'u' => {
                            let hex: String = self.s.iter().skip(self.i).take(4).collect();
                            if hex.len() < 4 && self.i + hex.len() >= self.s.len() {
                                // Incomplete at the end of the text.
                                self.i = self.s.len();
                                return out;
                            }
                            match u32::from_str_radix(&hex, 16) {
                                Ok(code) if hex.len() == 4 => {
                                    self.i += 4;
                                    let mut code = code;
                                    // A surrogate pair.
                                    if (0xD800..0xDC00).contains(&code)
                                        && self.s.get(self.i) == Some(&'\\')
                                        && self.s.get(self.i + 1) == Some(&'u')
                                    {
                                        let lo: String =
                                            self.s.iter().skip(self.i + 2).take(4).collect();
                                        if let Ok(l) = u32::from_str_radix(&lo, 16) {
                                            if lo.len() == 4 && (0xDC00..0xE000).contains(&l) {
                                                code = 0x10000
                                                    + ((code - 0xD800) << 10)
                                                    + (l - 0xDC00);
                                                self.i += 6;
                                            }
                                        }
                                    }
                                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                                }
                                _ => {
                                    out.push('\\');
                                    out.push('u');
                                }
                            }
                        }
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    fn scalar(&mut self) -> Option<Value> {
        let start = self.i;
        while let Some(&c) = self.s.get(self.i) {
            if matches!(
                c,
                ' ' | '\t' | '\n' | '\r' | ',' | ':' | '{' | '}' | '[' | ']' | '"'
            ) {
                break;
            }
            self.i += 1;
        }
        let token: String = self.s[start..self.i].iter().collect();
        if token.is_empty() {
            return None;
        }
        let complete = !self.at_end();
        for (lit, v) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
        ] {
            if token == lit || (!complete && lit.starts_with(&token)) {
                return Some(v);
            }
        }
        if let Ok(v) = serde_json::from_str::<serde_json::Number>(&token) {
            return Some(Value::Number(v));
        }
        if !complete {
            // An unterminated number: its digits so far (an exponent without digits ignored).
            let trimmed = token.trim_end_matches(['e', 'E', '+', '-', '.']);
            if let Ok(v) = serde_json::from_str::<serde_json::Number>(trimmed) {
                return Some(Value::Number(v));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn partial_json() {
        let cases: &[(&str, Value)] = &[
            ("", json!({})),
            ("{", json!({})),
            ("{\"com", json!({})),
            ("{\"command\"", json!({})),
            ("{\"command\":", json!({})),
            ("{\"command\": \"ech", json!({"command": "ech"})),
            ("{\"command\": \"echo hi\"", json!({"command": "echo hi"})),
            ("{\"a\": \"x\\", json!({"a": "x"})),
            ("{\"a\": \"x\\u00", json!({"a": "x"})),
            ("{\"a\": \"x\\u00e9\"}", json!({"a": "xé"})),
            ("{\"n\": 12", json!({"n": 12})),
            ("{\"n\": -", json!({})),
            ("{\"n\": 1.5e", json!({"n": 1.5})),
            ("{\"b\": tr", json!({"b": true})),
            ("{\"b\": nul", json!({"b": null})),
            (
                "{\"l\": [1, 2, {\"x\": [\"a",
                json!({"l": [1, 2, {"x": ["a"]}]}),
            ),
            ("{\"a\": 1, \"b\"", json!({"a": 1})),
            ("{\"a\": \"raw\nnewline\"}", json!({"a": "raw\nnewline"})),
            (
                "{\"a\": \"bad \\d escape\"}",
                json!({"a": "bad \\d escape"}),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(&parse_partial_json(text), want, "{text:?}");
        }
    }

    fn ok_args(v: Value) -> FinalArguments {
        FinalArguments {
            arguments: v,
            error: None,
        }
    }

    fn bad_args(error: &str) -> FinalArguments {
        FinalArguments {
            arguments: json!({}),
            error: Some(error.to_string()),
        }
    }

    #[test]
    fn final_tool_arguments() {
        assert_eq!(parse_tool_arguments(""), ok_args(json!({})));
        assert_eq!(parse_tool_arguments("  "), ok_args(json!({})));
        assert_eq!(
            parse_tool_arguments("{\"command\": \"echo hi\"}"),
            ok_args(json!({"command": "echo hi"}))
        );
        // Raw control characters and invalid escapes are repaired.
        assert_eq!(
            parse_tool_arguments("{\"a\": \"x\ty\\d\"}"),
            ok_args(json!({"a": "x\ty\\d"}))
        );
        // Truncated, malformed or non-object arguments are `{}` with an error (pi's wording).
        assert_eq!(
            parse_tool_arguments("{\"command\": \"echo hi\""),
            bad_args(concat!(
                "Expected ',' or '}' after property value in JSON at position 21 (line 1 column 22)",
                "\n\nReceived arguments:\n{\"command\": \"echo hi\""
            ))
        );
        assert_eq!(
            parse_tool_arguments("[1]"),
            bad_args("Tool arguments must be a JSON object\n\nReceived arguments:\n[1]")
        );
        assert_eq!(
            parse_tool_arguments("not json at all"),
            bad_args(concat!(
                "Unexpected token 'o', \"not json at all\" is not valid JSON",
                "\n\nReceived arguments:\nnot json at all"
            ))
        );
        // The error of a repaired text is the repaired text's (pi re-throws the second parse).
        assert_eq!(
            parse_tool_arguments("{\"a\": \"x\ny\" x}").error.unwrap(),
            concat!(
                "Expected ',' or '}' after property value in JSON at position 13 (line 1 column 14)",
                "\n\nReceived arguments:\n{\"a\": \"x\ny\" x}"
            )
        );
    }

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
    fn tool_args_stream() {
        let mut a = ToolArgs::new();
        assert_eq!(a.append("{\"command\": "), Some(json!({})));
        assert_eq!(
            a.append("\"echo from-o"),
            Some(json!({"command": "echo from-o"}))
        );
        assert_eq!(
            a.append("penai\"}"),
            Some(json!({"command": "echo from-openai"}))
        );
        assert_eq!(a.finish(), ok_args(json!({"command": "echo from-openai"})));
        assert_eq!(a.text(), "{\"command\": \"echo from-openai\"}");
        // Long arguments are re-parsed only when the text doubled.
        let mut big = ToolArgs::new();
        big.append("{\"content\": \"");
        let mut reparsed = 0;
        for _ in 0..2000 {
            if big.append("0123456789").is_some() {
                reparsed += 1;
            }
        }
        assert!(reparsed < 420, "{reparsed}");
        big.append("\"}");
        assert_eq!(
            big.finish().arguments["content"].as_str().unwrap().len(),
            20000
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
