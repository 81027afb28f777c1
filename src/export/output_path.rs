//! pi's `normalizePath` for an `export_html` output path (its default options): `~` and `~/…`
//! expand to the home folder (Node's `path.join`, so `.`/`..` are folded and a trailing `/`
//! kept), and a `file://` URL becomes its path (Node's `fileURLToPath`). Anything else is used
//! exactly as given, relative paths included.

/// The output path pi would write to and report, or Node's error text for a bad file URL.
pub fn normalize_output_path(p: &str) -> Result<String, String> {
    if let Some(home) = crate::util::home_dir() {
        let home = home.to_string_lossy();
        if p == "~" {
            return Ok(home.into_owned());
        }
        if let Some(rest) = p.strip_prefix("~/") {
            return Ok(node_join(&home, rest));
        }
    }
    match p.strip_prefix("file://") {
        Some(rest) => file_url_to_path(rest),
        None => Ok(p.to_string()),
    }
}

/// Node's `path.join(base, rest)` for an absolute `base`.
pub(crate) fn node_join(base: &str, rest: &str) -> String {
    if rest.is_empty() {
        node_normalize(base)
    } else {
        node_normalize(&format!("{base}/{rest}"))
    }
}

/// Node's posix `path.normalize` for an absolute path: repeated `/` collapsed, `.` dropped,
/// `..` folded (never above `/`), a trailing `/` kept.
fn node_normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if p.ends_with('/') && out != "/" {
        out.push('/');
    }
    out
}

/// Node's `fileURLToPath` on posix for `file://<rest>`: the host must be empty or `localhost`;
/// query and fragment dropped; dot segments resolved as the URL parser does (`%2e` counts as a
/// dot); percent escapes decoded, an encoded `/` refused.
fn file_url_to_path(rest: &str) -> Result<String, String> {
    // The URL parser drops tabs and newlines and reads `\` as `/` in file URLs.
    let rest: String = rest
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c })
        .collect();
    let rest = rest.split('#').next().unwrap_or("");
    let rest = rest.split('?').next().unwrap_or("");
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return Err("File URL host must be \"localhost\" or empty on linux".to_string());
    }
    let pathname = remove_dot_segments(path);
    let lower = pathname.to_ascii_lowercase();
    if lower.contains("%2f") {
        return Err("File URL path must not include encoded / characters".to_string());
    }
    percent_decode(&pathname).ok_or_else(|| "URI malformed".to_string())
}

/// The URL parser's path segments: `.` and `..` (also spelled with `%2e`) resolved, a final
/// `.` or `..` leaving a trailing `/`.
fn remove_dot_segments(path: &str) -> String {
    let is_dot = |s: &str| s == "." || s.eq_ignore_ascii_case("%2e");
    let is_dot_dot = |s: &str| {
        matches!(
            s.to_ascii_lowercase().as_str(),
            ".." | ".%2e" | "%2e." | "%2e%2e"
        )
    };
    let segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    let last = segments.len() - 1;
    let mut out: Vec<&str> = Vec::new();
    for (i, seg) in segments.iter().enumerate() {
        if is_dot_dot(seg) {
            out.pop();
            if i == last {
                out.push("");
            }
        } else if is_dot(seg) {
            if i == last {
                out.push("");
            }
        } else {
            out.push(seg);
        }
    }
    format!("/{}", out.join("/"))
}

/// `decodeURIComponent`: `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_as_node_reads_them() {
        // Results captured from Node 22's `fileURLToPath`.
        let ok = |u: &str| normalize_output_path(u).unwrap();
        assert_eq!(ok("file:///a//b/./c/../d.html"), "/a//b/d.html");
        assert_eq!(ok("file:///a/%2e%2E/b"), "/b");
        assert_eq!(ok("file:///a/b/.."), "/a/");
        assert_eq!(ok("file:///a/b/%2e"), "/a/b/");
        assert_eq!(ok("file:///x%20y?q=1#f"), "/x y");
        assert_eq!(ok("file://localhost/z"), "/z");
        assert_eq!(ok("file:///a b"), "/a b");
        // Only a lower-case `file://` prefix is a URL to pi.
        assert_eq!(ok("FILE:///up"), "FILE:///up");
        assert_eq!(ok("file:/x/y"), "file:/x/y");
        assert_eq!(
            normalize_output_path("file://host/x").unwrap_err(),
            "File URL host must be \"localhost\" or empty on linux"
        );
        assert_eq!(
            normalize_output_path("file:///a%2Fb").unwrap_err(),
            "File URL path must not include encoded / characters"
        );
        assert_eq!(
            normalize_output_path("file:///a/%ff").unwrap_err(),
            "URI malformed"
        );
    }

    #[test]
    fn node_join_normalization() {
        // `path.join("/h/u", rest)` as Node 22 gives it.
        let join = |rest: &str| node_join("/h/u", rest);
        assert_eq!(join("q/../x.html"), "/h/u/x.html");
        assert_eq!(join("d/"), "/h/u/d/");
        assert_eq!(join("./e//f.html"), "/h/u/e/f.html");
        assert_eq!(join("../../.."), "/");
        assert_eq!(join(""), "/h/u");
        assert_eq!(join("."), "/h/u");
        assert_eq!(join("a/.."), "/h/u");
        // Relative paths are left exactly as given.
        assert_eq!(
            normalize_output_path("./sub/../y.html").unwrap(),
            "./sub/../y.html"
        );
    }
}
