//! YAML frontmatter of markdown resources (skills, prompt templates).
//!
//! The split follows pi exactly: after stripping a BOM and normalising line ends to `\n`, a text
//! that starts with `---` has frontmatter up to the next line that starts with `---`; the body is
//! what follows that line, trimmed. A text without (or with empty) frontmatter is returned whole
//! and untrimmed.
//!
//! The YAML itself is read by a deliberately small parser: `key: value` scalars (plain, `"..."`,
//! `'...'`, `|`/`>` block scalars, plain multi-line continuations), `true`/`false`, `null`, numbers,
//! simple `- item` lists and flow lists `[a, b]`, nested mappings by indentation. Anything it does
//! not understand is skipped, never an error.

use serde_json::{Map, Number, Value};

/// Splits `text` into its frontmatter fields and its body (see the module documentation).
pub fn parse_frontmatter(text: &str) -> (Map<String, Value>, String) {
    let normalized = normalize_newlines(text.strip_prefix('\u{feff}').unwrap_or(text));
    if !normalized.starts_with("---") {
        return (Map::new(), normalized);
    }
    let Some(rel) = normalized[3..].find("\n---") else {
        return (Map::new(), normalized);
    };
    let end = rel + 3;
    let yaml = slice_from(&normalized, 4, end);
    if yaml.is_empty() {
        return (Map::new(), normalized);
    }
    let body = normalized.get(end + 4..).unwrap_or("").trim().to_string();
    let lines: Vec<&str> = yaml.split('\n').collect();
    (parse_mapping(&lines), body)
}

/// The body of `text` without its frontmatter (see [`parse_frontmatter`]).
pub fn strip_frontmatter(text: &str) -> String {
    parse_frontmatter(text).1
}

fn normalize_newlines(s: &str) -> String {
    if s.contains('\r') {
        s.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        s.to_string()
    }
}

/// `s[start..end]`, with `start` moved forward to a char boundary; empty when out of range.
fn slice_from(s: &str, mut start: usize, end: usize) -> &str {
    while start < s.len() && !s.is_char_boundary(start) {
        start += 1;
    }
    if start >= end {
        return "";
    }
    s.get(start..end).unwrap_or("")
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// Parses lines (already dedented so that the mapping's keys start at column 0) as a mapping.
fn parse_mapping(lines: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if is_blank_or_comment(line) || indent_of(line) > 0 || line.starts_with("- ") {
            i += 1;
            continue;
        }
        let Some((key, rest)) = split_key(line) else {
            i += 1;
            continue;
        };
        i += 1;
        // Lines belonging to this key: the following blank or indented lines.
        let start = i;
        while i < lines.len() && (lines[i].trim().is_empty() || indent_of(lines[i]) > 0) {
            i += 1;
        }
        let block = &lines[start..i];
        if let Some(value) = parse_value(rest, block) {
            out.insert(key, value);
        }
    }
    out
}

/// `key: rest` → (key, rest after the colon, left-trimmed). Keys may be quoted.
fn split_key(line: &str) -> Option<(String, &str)> {
    let (key, after) = if let Some(q @ ('"' | '\'')) = line.chars().next() {
        let close = line[1..].find(q)? + 1;
        (line[1..close].to_string(), &line[close + 1..])
    } else {
        let bytes = line.as_bytes();
        let mut pos = None;
        for (idx, b) in bytes.iter().enumerate() {
            if *b == b':'
                && (idx + 1 == bytes.len() || bytes[idx + 1] == b' ' || bytes[idx + 1] == b'\t')
            {
                pos = Some(idx);
                break;
            }
        }
        let pos = pos?;
        (line[..pos].trim_end().to_string(), &line[pos..])
    };
    let after = after.trim_start_matches([' ', '\t']);
    let rest = after.strip_prefix(':')?;
    if key.is_empty() {
        return None;
    }
    Some((key, rest.trim_start_matches([' ', '\t'])))
}

/// The value of a key: `rest` is the text after `key:`, `block` the indented lines below it.
/// `None` means "skip this key".
fn parse_value(rest: &str, block: &[&str]) -> Option<Value> {
    let rest_nc = strip_comment(rest);
    if rest_nc.is_empty() {
        return Some(parse_nested_block(block));
    }
    let first = rest_nc.chars().next().unwrap_or(' ');
    match first {
        '|' | '>' => Some(Value::String(parse_block_scalar(rest_nc, block))),
        '"' | '\'' => parse_quoted(rest, block, first).map(Value::String),
        '[' => Some(parse_flow_list(rest_nc)),
        '{' | '&' | '*' | '!' | '%' | '@' | '`' => None,
        _ => {
            // Plain scalar, possibly continued on more-indented lines.
            let mut text = rest_nc.to_string();
            let mut pending_newlines = 0usize;
            for line in block {
                let t = line.trim();
                if t.is_empty() {
                    pending_newlines += 1;
                    continue;
                }
                if t.starts_with('#') {
                    break;
                }
                if pending_newlines > 0 {
                    text.push_str(&"\n".repeat(pending_newlines));
                } else {
                    text.push(' ');
                }
                pending_newlines = 0;
                text.push_str(strip_comment(t));
            }
            if text.contains('\n') || text != rest_nc {
                Some(Value::String(text))
            } else {
                Some(plain_scalar(&text))
            }
        }
    }
}

/// Removes a ` #comment` from a plain value and trims it.
fn strip_comment(s: &str) -> &str {
    let s = s.trim();
    if s.starts_with('#') {
        return "";
    }
    if s.starts_with('"') || s.starts_with('\'') {
        return s;
    }
    let bytes = s.as_bytes();
    for idx in 1..bytes.len() {
        if bytes[idx] == b'#' && (bytes[idx - 1] == b' ' || bytes[idx - 1] == b'\t') {
            return s[..idx].trim_end();
        }
    }
    s
}

/// Types a plain scalar the way YAML 1.2's core schema does.
fn plain_scalar(s: &str) -> Value {
    match s {
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        "null" | "Null" | "NULL" | "~" | "" => return Value::Null,
        _ => {}
    }
    if let Some(n) = parse_number(s) {
        return Value::Number(n);
    }
    Value::String(s.to_string())
}

fn parse_number(s: &str) -> Option<Number> {
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    if unsigned.is_empty() {
        return None;
    }
    if let Some(hex) = s.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(Number::from);
    }
    if let Some(oct) = s.strip_prefix("0o") {
        return u64::from_str_radix(oct, 8).ok().map(Number::from);
    }
    if unsigned.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = s.parse::<i64>() {
            return Some(Number::from(i));
        }
    }
    let valid_float = unsigned.bytes().all(|b| {
        b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'E' || b == b'-' || b == b'+'
    }) && unsigned.bytes().any(|b| b.is_ascii_digit())
        && !unsigned.starts_with(['e', 'E']);
    if valid_float {
        if let Ok(f) = s.parse::<f64>() {
            return Number::from_f64(f);
        }
    }
    None
}

/// A key with nothing after the colon: a nested mapping, a `- item` list, or null.
fn parse_nested_block(block: &[&str]) -> Value {
    let content: Vec<&str> = block
        .iter()
        .copied()
        .filter(|l| !is_blank_or_comment(l))
        .collect();
    let Some(first) = content.first() else {
        return Value::Null;
    };
    let min_indent = content.iter().map(|l| indent_of(l)).min().unwrap_or(0);
    let dedented: Vec<&str> = block
        .iter()
        .map(|l| {
            if l.len() >= min_indent {
                &l[min_indent..]
            } else {
                ""
            }
        })
        .collect();
    if first.trim_start().starts_with("- ") || first.trim() == "-" {
        let mut items = Vec::new();
        for line in &dedented {
            if indent_of(line) > 0 || is_blank_or_comment(line) {
                continue;
            }
            if let Some(item) = line.strip_prefix('-') {
                let item = item.trim();
                let item_nc = strip_comment(item);
                let value = match item_nc.chars().next() {
                    Some(q @ ('"' | '\'')) => parse_quoted(item, &[], q).map(Value::String),
                    Some('[') => Some(parse_flow_list(item_nc)),
                    Some('{') => None,
                    _ if split_key(item_nc).is_some() => None,
                    _ => Some(plain_scalar(item_nc)),
                };
                items.push(value.unwrap_or(Value::Null));
            }
        }
        return Value::Array(items);
    }
    Value::Object(parse_mapping(&dedented))
}

/// `|`, `|-`, `|+`, `>`, `>-`, `>+` (an explicit indentation digit is accepted and ignored).
fn parse_block_scalar(header: &str, block: &[&str]) -> String {
    let folded = header.starts_with('>');
    let chomp = if header.contains('-') {
        '-'
    } else if header.contains('+') {
        '+'
    } else {
        ' '
    };
    let indent = block
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = block
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .collect();
    let mut text = String::new();
    if folded {
        let mut prev_plain = false;
        for (idx, line) in lines.iter().enumerate() {
            if line.is_empty() {
                text.push('\n');
                prev_plain = false;
                continue;
            }
            let more_indented = line.starts_with([' ', '\t']);
            if idx > 0 {
                if prev_plain && !more_indented {
                    text.push(' ');
                } else if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            text.push_str(line);
            prev_plain = !more_indented;
        }
    } else {
        text = lines.join("\n");
    }
    let content_end = text.trim_end_matches('\n').len();
    let trailing = text.len() - content_end;
    text.truncate(content_end);
    match chomp {
        '-' => {}
        '+' => {
            text.push('\n');
            text.push_str(&"\n".repeat(trailing));
        }
        _ => {
            if !text.is_empty() {
                text.push('\n');
            }
        }
    }
    text
}

/// A quoted scalar starting at `rest`; continues across `block` lines if the quote is not closed
/// on the first line (line breaks fold to spaces). `None` when never closed.
fn parse_quoted(rest: &str, block: &[&str], quote: char) -> Option<String> {
    let mut source = rest.trim().to_string();
    let mut idx = 0;
    loop {
        if let Some(s) = scan_quoted(&source, quote) {
            return Some(s);
        }
        let next = block.get(idx)?;
        idx += 1;
        let t = next.trim();
        if t.is_empty() {
            source.push('\n');
        } else {
            if !source.ends_with('\n') {
                source.push(' ');
            }
            source.push_str(t);
        }
    }
}

fn scan_quoted(source: &str, quote: char) -> Option<String> {
    let mut out = String::new();
    let mut chars = source.chars().skip(1).peekable();
    while let Some(c) = chars.next() {
        if quote == '\'' {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                    continue;
                }
                return Some(out);
            }
            out.push(c);
            continue;
        }
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                '/' => out.push('/'),
                ' ' => out.push(' '),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(ch.unwrap_or('\u{fffd}'));
                }
                'x' => {
                    let hex: String = chars.by_ref().take(2).collect();
                    let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(ch.unwrap_or('\u{fffd}'));
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            },
            _ => out.push(c),
        }
    }
    None
}

/// `[a, "b", 3]` → an array of scalars (no nesting).
fn parse_flow_list(s: &str) -> Value {
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    if inner.trim().is_empty() {
        return Value::Array(Vec::new());
    }
    let items = inner
        .split(',')
        .map(|item| {
            let item = item.trim();
            match item.chars().next() {
                Some(q @ ('"' | '\'')) => scan_quoted(item, q)
                    .map(Value::String)
                    .unwrap_or_else(|| Value::String(item.to_string())),
                _ => plain_scalar(item),
            }
        })
        .collect();
    Value::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn observed_prompt_template() {
        let text = "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\nReview the staged changes. Focus on ${1:-correctness}.\n";
        let (fm, body) = parse_frontmatter(text);
        assert_eq!(fm["description"], json!("Review staged git changes"));
        assert_eq!(fm["argument-hint"], json!("[focus]"));
        assert_eq!(
            body,
            "Review the staged changes. Focus on ${1:-correctness}."
        );
    }

    #[test]
    fn no_frontmatter_keeps_text_untrimmed() {
        let (fm, body) = parse_frontmatter("Hello $1\n");
        assert!(fm.is_empty());
        assert_eq!(body, "Hello $1\n");
        // Unterminated frontmatter: the whole text.
        let (fm, body) = parse_frontmatter("---\nname: x\nno end\n");
        assert!(fm.is_empty());
        assert_eq!(body, "---\nname: x\nno end\n");
        // Empty frontmatter: the whole text too (pi's quirk).
        let (fm, body) = parse_frontmatter("---\n---\nbody\n");
        assert!(fm.is_empty());
        assert_eq!(body, "---\n---\nbody\n");
    }

    #[test]
    fn crlf_bom_and_scalar_types() {
        let text = "\u{feff}---\r\nname: demo\r\ndisable-model-invocation: true\r\nflag: False\r\ncount: 42\r\nratio: 0.5\r\nnothing: ~\r\nsq: 'it''s'\r\ndq: \"a\\tb\" # comment\r\nplain: value # comment\r\n---\r\n\r\n# Body\r\n";
        let (fm, body) = parse_frontmatter(text);
        assert_eq!(fm["name"], json!("demo"));
        assert_eq!(fm["disable-model-invocation"], json!(true));
        assert_eq!(fm["flag"], json!(false));
        assert_eq!(fm["count"], json!(42));
        assert_eq!(fm["ratio"], json!(0.5));
        assert_eq!(fm["nothing"], Value::Null);
        assert_eq!(fm["sq"], json!("it's"));
        assert_eq!(fm["dq"], json!("a\tb"));
        assert_eq!(fm["plain"], json!("value"));
        assert_eq!(body, "# Body");
    }

    #[test]
    fn block_scalars_lists_and_nesting() {
        let text = "---\ndescription: |\n  line one\n  line two\nfolded: >-\n  a\n  b\n\n  c\nmulti: first\n  second\ntags:\n  - a\n  - \"b c\"\nflow: [x, 'y', 3]\nmeta:\n  author: me\n  nested:\n    deep: 1\nweird: {a: 1}\n---\nbody";
        let (fm, body) = parse_frontmatter(text);
        assert_eq!(fm["description"], json!("line one\nline two\n"));
        assert_eq!(fm["folded"], json!("a b\nc"));
        assert_eq!(fm["multi"], json!("first second"));
        assert_eq!(fm["tags"], json!(["a", "b c"]));
        assert_eq!(fm["flow"], json!(["x", "y", 3]));
        assert_eq!(fm["meta"], json!({"author": "me", "nested": {"deep": 1}}));
        assert!(!fm.contains_key("weird"));
        assert_eq!(body, "body");
    }

    #[test]
    fn garbage_does_not_fail() {
        let (fm, body) =
            parse_frontmatter("---\n: nothing\n  - stray\n\"unterminated: x\nok: yes\n---\nB");
        assert_eq!(fm.get("ok"), Some(&json!("yes")));
        assert_eq!(body, "B");
        let (_, body) = parse_frontmatter("---é\n---\n");
        assert_eq!(body, "---é\n---\n");
    }
}
