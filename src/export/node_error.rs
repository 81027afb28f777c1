//! pi's file errors are Node's. The errno texts (`ENOENT: no such file or directory, open
//! 'out/x.html'`) come from [`crate::tools::path::node_error`]; this is the one Node raises
//! before any system call, for a path holding a NUL byte (`ERR_INVALID_ARG_VALUE`).

/// Node's error for a path holding a NUL byte, which it rejects before any system call
/// (`ERR_INVALID_ARG_VALUE`).
pub fn nul_path_message(path: &str) -> String {
    let mut inspected = inspect_string(path);
    if utf16_len(&inspected) > 128 {
        inspected = utf16_prefix(&inspected, 128).to_string() + "...";
    }
    format!(
        "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received {inspected}"
    )
}

/// `util.inspect` of a string, as Node quotes a value in an argument error: single quotes
/// (double quotes or backticks when the text holds single quotes), control characters and
/// the backslash escaped, and a long multi-line string split after each newline.
fn inspect_string(s: &str) -> String {
    if utf16_len(s) > 124 && s.contains('\n') {
        let mut pieces = Vec::new();
        let mut rest = s;
        while let Some(i) = rest.find('\n') {
            pieces.push(quote(&rest[..=i]));
            rest = &rest[i + 1..];
        }
        if !rest.is_empty() {
            pieces.push(quote(rest));
        }
        return pieces.join(" +\n  ");
    }
    quote(s)
}

fn quote(s: &str) -> String {
    let q = if !s.contains('\'') {
        '\''
    } else if !s.contains('"') {
        '"'
    } else if !s.contains('`') && !s.contains("${") {
        '`'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '\'' if q == '\'' => out.push_str("\\'"),
            c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// Length in UTF-16 code units, as JavaScript counts string length.
fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` of at most `n` UTF-16 code units (a surrogate pair is not split).
fn utf16_prefix(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_in_the_path_is_an_argument_error() {
        // Texts captured from Node 22.
        let prefix =
            "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received ";
        assert_eq!(
            nul_path_message("a\0b.html"),
            format!("{prefix}'a\\x00b.html'")
        );
        assert_eq!(nul_path_message("it's\0"), format!("{prefix}\"it's\\x00\""));
        assert_eq!(
            nul_path_message("a\"b'c\0"),
            format!("{prefix}`a\"b'c\\x00`")
        );
        assert_eq!(
            nul_path_message("\0\n\t\\\u{7f}\u{85}é😀"),
            format!("{prefix}'\\x00\\n\\t\\\\\\x7F\\x85é😀'")
        );
        let long = format!("x\0{}", "y\n".repeat(70));
        let expected = format!(
            "{prefix}'x\\x00y\\n' +\n{}  'y\\...",
            "  'y\\n' +\n".repeat(11)
        );
        assert_eq!(nul_path_message(&long), expected);
    }
}
