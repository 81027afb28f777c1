//! Output truncation shared by the tools and the RPC `bash` command (`tools.md` §1).
//!
//! Two independent limits, whichever is hit first: a line count ([`DEFAULT_MAX_LINES`]) and a
//! byte count of the UTF-8 text ([`DEFAULT_MAX_BYTES`]). [`truncate_head`] keeps the beginning
//! (read, ls, grep, find), [`truncate_tail`] keeps the end (bash). Only whole lines are kept,
//! except that `truncate_tail` keeps the end of a single last line that alone exceeds the byte
//! limit (`lastLinePartial`).
//!
//! Lines are the pieces of the text split on `\n`; a trailing `\n` does not start another line
//! (`"a\nb\n"` has 2 lines, `""` has 0).

use serde::{Serialize, Serializer};

/// Default line limit of tool output.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte limit of tool output (50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 51200;
/// Longest grep match line, in UTF-16 code units (JavaScript string length).
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// The result of a truncation, serialized exactly as the `details.truncation` object of a tool
/// result: `{content, truncated, truncatedBy, totalLines, totalBytes, outputLines, outputBytes,
/// lastLinePartial, firstLineExceedsLimit, maxLines, maxBytes}`.
///
/// Counts are serialized as JavaScript would print them; a limit of `usize::MAX` ("no limit")
/// prints as `Number.MAX_SAFE_INTEGER`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The kept text (lines joined with `\n`; no trailing `\n` when truncated).
    pub content: String,
    pub truncated: bool,
    /// `"lines"` or `"bytes"` when truncated, else `None` (`null`).
    pub truncated_by: Option<String>,
    #[serde(serialize_with = "ser_count")]
    pub total_lines: usize,
    #[serde(serialize_with = "ser_count")]
    pub total_bytes: usize,
    #[serde(serialize_with = "ser_count")]
    pub output_lines: usize,
    #[serde(serialize_with = "ser_count")]
    pub output_bytes: usize,
    /// Tail truncation kept only the end of the last line.
    pub last_line_partial: bool,
    /// Head truncation: the first line alone exceeds the byte limit (content is empty).
    pub first_line_exceeds_limit: bool,
    #[serde(serialize_with = "ser_count")]
    pub max_lines: usize,
    #[serde(serialize_with = "ser_count")]
    pub max_bytes: usize,
}

const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

fn ser_count<S: Serializer>(v: &usize, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64((*v as u64).min(MAX_SAFE_INTEGER))
}

impl Truncation {
    /// The `details.truncation` JSON object.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn untouched(content: &str, total_lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// The lines of `content` as counted for truncation: split on `\n`, without the empty piece
/// after a trailing `\n`; no lines at all for `""`.
fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = content.split('\n').collect();
    if content.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// Keeps the beginning of `content`: whole lines while at most `max_lines` lines and
/// `max_bytes` bytes (the joining `\n`s counted). A first line longer than `max_bytes` gives
/// empty content with `first_line_exceeds_limit`.
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    let total_lines = lines.len();
    let total_bytes = content.len();
    if total_lines <= max_lines && total_bytes <= max_bytes {
        return Truncation::untouched(content, total_lines, max_lines, max_bytes);
    }
    let first_len = lines.first().map_or(0, |l| l.len());
    if first_len > max_bytes {
        return Truncation {
            content: String::new(),
            truncated: true,
            truncated_by: Some("bytes".into()),
            total_lines,
            total_bytes,
            output_lines: 0,
            output_bytes: 0,
            last_line_partial: false,
            first_line_exceeds_limit: true,
            max_lines,
            max_bytes,
        };
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = "lines";
    for (i, line) in lines.iter().enumerate().take(max_lines) {
        let len = line.len() + usize::from(i > 0);
        if bytes + len > max_bytes {
            by = "bytes";
            break;
        }
        kept += 1;
        bytes += len;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = "lines";
    }
    let out = lines[..kept].join("\n");
    Truncation {
        output_bytes: out.len(),
        content: out,
        truncated: true,
        truncated_by: Some(by.into()),
        total_lines,
        total_bytes,
        output_lines: kept,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// Keeps the end of `content`: whole lines from the end while at most `max_lines` lines and
/// `max_bytes` bytes. When the last line alone exceeds `max_bytes`, its last `max_bytes` bytes
/// are kept (starting at a character boundary) with `last_line_partial`.
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    let total_lines = lines.len();
    let total_bytes = content.len();
    if total_lines <= max_lines && total_bytes <= max_bytes {
        return Truncation::untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = "lines";
    let mut partial = false;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let len = line.len() + usize::from(!kept.is_empty());
        if bytes + len > max_bytes {
            by = "bytes";
            if kept.is_empty() {
                let tail = tail_bytes(line, max_bytes);
                bytes = tail.len();
                kept.push(tail);
                partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += len;
    }
    if kept.len() >= max_lines && bytes <= max_bytes {
        by = "lines";
    }
    kept.reverse();
    let out = kept.join("\n");
    Truncation {
        output_bytes: out.len(),
        content: out,
        truncated: true,
        truncated_by: Some(by.into()),
        total_lines,
        total_bytes,
        output_lines: kept.len(),
        last_line_partial: partial,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// At most the last `max_bytes` bytes of `s`, starting at a character boundary.
pub fn tail_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while start < s.len() && !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// `formatSize`: `"<b>B"` below 1 KiB, `"<x.y>KB"` below 1 MiB, else `"<x.y>MB"` (one decimal,
/// rounded half up like JavaScript's `toFixed(1)`; `51200` → `"50.0KB"`).
pub fn format_size(bytes: usize) -> String {
    let b = bytes as u128;
    if b < 1024 {
        format!("{b}B")
    } else if b < 1024 * 1024 {
        format!("{}KB", tenths(b, 1024))
    } else {
        format!("{}MB", tenths(b, 1024 * 1024))
    }
}

/// `(b / unit).toFixed(1)` computed exactly: `unit` is a power of two, so the quotient is exact
/// and ties round up.
fn tenths(b: u128, unit: u128) -> String {
    let n = (b * 20 + unit) / (2 * unit);
    format!("{}.{}", n / 10, n % 10)
}

/// Cuts `line` to at most `max_units` UTF-16 code units (JavaScript string length) and appends
/// `... [truncated]`; never splits a character. Returns the text and whether it was cut.
pub fn truncate_line(line: &str, max_units: usize) -> (String, bool) {
    let head = crate::js::utf16::prefix(line, max_units);
    if head.len() < line.len() {
        (format!("{head}... [truncated]"), true)
    } else {
        (line.to_string(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_size_matches_javascript() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1024), "1.0KB");
        assert_eq!(format_size(1280), "1.3KB"); // 1.25 rounds half up
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(1024 * 1024 - 1), "1024.0KB");
        assert_eq!(format_size(1024 * 1024), "1.0MB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }

    #[test]
    fn head_no_truncation_counts_lines_without_trailing_piece() {
        let t = truncate_head("a\nb\n", 10, 100);
        assert!(!t.truncated);
        assert_eq!(t.total_lines, 2);
        assert_eq!(t.output_lines, 2);
        assert_eq!(t.total_bytes, 4);
        assert_eq!(t.content, "a\nb\n");
        assert_eq!(truncate_head("", 10, 100).total_lines, 0);
    }

    #[test]
    fn head_by_lines_and_by_bytes() {
        let t = truncate_head("1\n2\n3\n4", 2, 100);
        assert_eq!(t.content, "1\n2");
        assert_eq!(t.truncated_by.as_deref(), Some("lines"));
        assert_eq!((t.total_lines, t.output_lines, t.output_bytes), (4, 2, 3));
        let t = truncate_head("aaa\nbbb\nccc", 100, 8);
        assert_eq!(t.content, "aaa\nbbb");
        assert_eq!(t.truncated_by.as_deref(), Some("bytes"));
        assert_eq!(t.output_bytes, 7);
    }

    #[test]
    fn head_first_line_too_long() {
        let t = truncate_head("abcdef\nx", 100, 5);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
        assert_eq!(t.output_lines, 0);
        assert_eq!(t.truncated_by.as_deref(), Some("bytes"));
    }

    #[test]
    fn tail_keeps_end_and_partial_last_line() {
        let t = truncate_tail("1\n2\n3\n4\n", 2, 100);
        assert_eq!(t.content, "3\n4");
        assert_eq!(t.truncated_by.as_deref(), Some("lines"));
        let t = truncate_tail("short\nxxxxxxxxxx", 100, 4);
        assert!(t.last_line_partial);
        assert_eq!(t.content, "xxxx");
        assert_eq!(t.output_lines, 1);
        assert_eq!(t.truncated_by.as_deref(), Some("bytes"));
        // UTF-8 safe: "é" is 2 bytes; 3 bytes from the end of "aéé" starts mid-character.
        let t = truncate_tail("aéé", 100, 3);
        assert_eq!(t.content, "é");
        assert_eq!(t.output_bytes, 2);
    }

    #[test]
    fn serializes_as_pi_does() {
        let t = truncate_head("1\n2\n3", 2, usize::MAX);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"content":"1\n2","truncated":true,"truncatedBy":"lines","totalLines":3,"totalBytes":5,"outputLines":2,"outputBytes":3,"lastLinePartial":false,"firstLineExceedsLimit":false,"maxLines":2,"maxBytes":9007199254740991}"#
        );
        let t = truncate_head("x", 2, 10);
        assert_eq!(t.to_value()["truncatedBy"], serde_json::Value::Null);
    }

    #[test]
    fn line_truncation_counts_utf16_units() {
        assert_eq!(truncate_line("abc", 3), ("abc".to_string(), false));
        assert_eq!(
            truncate_line("abcd", 3),
            ("abc... [truncated]".to_string(), true)
        );
        assert_eq!(
            truncate_line("a😀b", 2),
            ("a... [truncated]".to_string(), true)
        );
    }
}
