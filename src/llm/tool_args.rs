//! Tool-call arguments as they stream in: the raw text with a tolerant partial parse for the
//! partial message ([`ToolArgs`]), the final parse with pi's string repair, and — for text that
//! does not parse — the `argumentsError` text in V8's `JSON.parse` wording (both from
//! `js::json::parse`).

use serde_json::{Map, Value};

use super::types::ContentBlock;
use crate::js::json::parse::js_parse_json_with_repair;

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
}
