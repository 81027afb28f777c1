//! The part of the WHATWG URL parser (`new URL(text)`, as Node runs it) that MCP configuration
//! checks need: whether a text parses as an `http:` / `https:` URL, and its `hostname`, `port`,
//! `pathname`, `search` and `hash` as pi compares them (loopback hosts, a `/callback` path, no
//! query or fragment).
//!
//! Covered: the leading/trailing C0-and-space trim and tab/newline removal, case-insensitive
//! schemes, any number of `/` or `\` after the scheme, credentials (the last `@` wins), ports
//! (digits only, at most 65535, the default port reported as none), bracketed IPv6 hosts,
//! percent-decoded domains with the forbidden code points refused, IPv4 hosts in every form the
//! standard accepts (`127.1`, `0x7f.0.0.1`, octal) normalized to dotted decimal, and dot
//! segments of the path. Not covered: IDNA mapping of non-ASCII domains (they are kept, lower
//! case, instead of being punycoded; no such host is a loopback name) and the percent-encoding
//! of path characters (no such path equals `/callback` either way).

use std::net::Ipv6Addr;

/// An `http:` or `https:` URL, reduced to what the configuration checks read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct HttpUrl {
    pub https: bool,
    /// `URL.hostname`: lower case, IPv4 in dotted decimal, IPv6 in brackets.
    pub hostname: String,
    /// `URL.port`: `None` when absent or the scheme's default.
    pub port: Option<u16>,
    /// `URL.pathname`, dot segments resolved (`\` read as `/`).
    pub pathname: String,
    /// `URL.search` is empty (no query, or an empty one).
    pub search_empty: bool,
    /// `URL.hash` is empty (no fragment, or an empty one).
    pub hash_empty: bool,
}

/// Parses `input` as `new URL(input)` would; `None` when it does not parse or its scheme is not
/// `http` or `https`.
pub(super) fn parse_http(input: &str) -> Option<HttpUrl> {
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    let text: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let colon = text.find(':')?;
    let scheme = &text[..colon];
    let mut sc = scheme.chars();
    if !sc.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !sc.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        _ => return None,
    };
    let rest = text[colon + 1..].trim_start_matches(['/', '\\']);
    let auth_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    // Credentials end at the last `@`.
    let host_port = match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    if host_port.is_empty() {
        return None;
    }
    let (host_text, port_text) = split_host_port(host_port)?;
    let hostname = parse_host(host_text)?;
    let port = match port_text {
        None | Some("") => None,
        Some(p) => {
            if !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let digits = p.trim_start_matches('0');
            if digits.len() > 5 {
                return None;
            }
            let n: u32 = if digits.is_empty() {
                0
            } else {
                digits.parse().ok()?
            };
            let n = u16::try_from(n).ok()?;
            let default = if https { 443 } else { 80 };
            (n != default).then_some(n)
        }
    };
    let (path_text, query, fragment) = split_tail(tail);
    Some(HttpUrl {
        https,
        hostname,
        port,
        pathname: resolve_path(path_text),
        search_empty: query.is_none_or(str::is_empty),
        hash_empty: fragment.is_none_or(str::is_empty),
    })
}

/// Splits `host[:port]` at the first `:` outside brackets; `None` for an empty host.
fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    let mut in_brackets = false;
    for (i, c) in s.char_indices() {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            ':' if !in_brackets => {
                if i == 0 {
                    return None;
                }
                return Some((&s[..i], Some(&s[i + 1..])));
            }
            _ => {}
        }
    }
    Some((s, None))
}

/// The host parser for special schemes: IPv6 in brackets, else a percent-decoded domain that
/// may turn out to be an IPv4 address.
fn parse_host(host: &str) -> Option<String> {
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']')?;
        let addr: Ipv6Addr = inner.parse().ok()?;
        return Some(format!("[{}]", serialize_ipv6(&addr)));
    }
    let decoded = percent_decode(host);
    let domain = String::from_utf8_lossy(&decoded).to_lowercase();
    if domain.is_empty() || domain.chars().any(is_forbidden_domain_char) {
        return None;
    }
    if ends_in_number(&domain) {
        return parse_ipv4(&domain);
    }
    Some(domain)
}

/// The standard's IPv6 serializer: lower-case hex pieces, the first longest run of two or more
/// zero pieces compressed to `::` (never dotted IPv4, unlike `Ipv6Addr`'s `Display`).
fn serialize_ipv6(addr: &Ipv6Addr) -> String {
    let pieces = addr.segments();
    let (mut best_start, mut best_len) = (usize::MAX, 1);
    let mut i = 0;
    while i < 8 {
        if pieces[i] == 0 {
            let start = i;
            while i < 8 && pieces[i] == 0 {
                i += 1;
            }
            if i - start > best_len {
                (best_start, best_len) = (start, i - start);
            }
        } else {
            i += 1;
        }
    }
    let hex = |ps: &[u16]| {
        ps.iter()
            .map(|p| format!("{p:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    if best_start == usize::MAX {
        return hex(&pieces);
    }
    format!(
        "{}::{}",
        hex(&pieces[..best_start]),
        hex(&pieces[best_start + best_len..])
    )
}

fn is_forbidden_domain_char(c: char) -> bool {
    c <= ' '
        || c == '\u{7f}'
        || matches!(
            c,
            '#' | '%'
                | '/'
                | ':'
                | '<'
                | '>'
                | '?'
                | '@'
                | '['
                | '\\'
                | ']'
                | '^'
                | '|'
                | '\u{fffd}'
        )
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() && hex_pair(b[i + 1], b[i + 2]).is_some() {
            out.extend(hex_pair(b[i + 1], b[i + 2]));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn hex_pair(a: u8, b: u8) -> Option<u8> {
    let h = |c: u8| (c as char).to_digit(16);
    Some((h(a)? * 16 + h(b)?) as u8)
}

/// The standard's "ends in a number": the last label (ignoring one trailing empty label) is all
/// digits or a `0x` hexadecimal number.
fn ends_in_number(domain: &str) -> bool {
    let mut labels: Vec<&str> = domain.split('.').collect();
    if labels.last() == Some(&"") {
        if labels.len() == 1 {
            return false;
        }
        labels.pop();
    }
    let last = labels.last().copied().unwrap_or_default();
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    last.strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The IPv4 parser: up to four parts, decimal, `0x` hexadecimal or leading-zero octal; every
/// part but the last at most 255, the last filling the remaining bytes.
fn parse_ipv4(domain: &str) -> Option<String> {
    let mut parts: Vec<&str> = domain.split('.').collect();
    if parts.last() == Some(&"") && parts.len() > 1 {
        parts.pop();
    }
    if parts.len() > 4 {
        return None;
    }
    let numbers = parts
        .iter()
        .map(|p| parse_ipv4_number(p))
        .collect::<Option<Vec<u64>>>()?;
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|n| *n > 255) {
        return None;
    }
    let room = 5 - numbers.len() as u32;
    if *last >= 256u64.pow(room) {
        return None;
    }
    let mut v = *last;
    for (i, n) in init.iter().enumerate() {
        v += n << (8 * (3 - i as u32));
    }
    let b = (v as u32).to_be_bytes();
    Some(format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]))
}

/// One IPv4 part; values past `u32` saturate (they fail the range checks either way).
fn parse_ipv4_number(p: &str) -> Option<u64> {
    if p.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        (h, 16)
    } else if p.len() >= 2 && p.starts_with('0') {
        (&p[1..], 8)
    } else {
        (p, 10)
    };
    let mut v: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix)?;
        v = v
            .saturating_mul(u64::from(radix))
            .saturating_add(u64::from(d));
    }
    Some(v)
}

/// Splits what follows the authority into path, query and fragment.
fn split_tail(tail: &str) -> (&str, Option<&str>, Option<&str>) {
    let (before_hash, fragment) = match tail.find('#') {
        Some(i) => (&tail[..i], Some(&tail[i + 1..])),
        None => (tail, None),
    };
    match before_hash.find('?') {
        Some(i) => (&before_hash[..i], Some(&before_hash[i + 1..]), fragment),
        None => (before_hash, None, fragment),
    }
}

/// The path state: segments split at `/` or `\`, `.` and `..` (also as `%2e`) resolved.
fn resolve_path(path: &str) -> String {
    let body = path.strip_prefix(['/', '\\']).unwrap_or(path);
    let segs: Vec<&str> = body.split(['/', '\\']).collect();
    let mut out: Vec<&str> = Vec::new();
    let n = segs.len();
    for (i, seg) in segs.into_iter().enumerate() {
        let last = i + 1 == n;
        let lower = seg.to_ascii_lowercase();
        match lower.as_str() {
            ".." | ".%2e" | "%2e." | "%2e%2e" => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            "." | "%2e" => {
                if last {
                    out.push("");
                }
            }
            _ => out.push(seg),
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, None for a failure, or (https, hostname, port, pathname, search empty, hash
    /// empty)) as Node 22's `new URL` reports them.
    #[test]
    fn matches_node() {
        type Want = Option<(bool, &'static str, Option<u16>, &'static str, bool, bool)>;
        let cases: &[(&str, Want)] = &[
            (
                "http://LOCALHOST:80/x",
                Some((false, "localhost", None, "/x", true, true)),
            ),
            (
                "http:foo.com",
                Some((false, "foo.com", None, "/", true, true)),
            ),
            (
                "HTTP:\\\\127.1\\callback",
                Some((false, "127.0.0.1", None, "/callback", true, true)),
            ),
            (
                "http://0x7f.0.0.1/",
                Some((false, "127.0.0.1", None, "/", true, true)),
            ),
            (
                "http://[0:0::1]:8080/callback?",
                Some((false, "[::1]", Some(8080), "/callback", true, true)),
            ),
            ("http://", None),
            ("http:///x", Some((false, "x", None, "/", true, true))),
            ("http://user@/", None),
            ("http://a b/", None),
            ("http://h:99999", None),
            ("http://h:8a", None),
            ("http://:80/", None),
            ("http://h:/", Some((false, "h", None, "/", true, true))),
            (
                "https://h:443/a/../callback/.",
                Some((true, "h", None, "/callback/", true, true)),
            ),
            (
                "  http://h\t/p\n ",
                Some((false, "h", None, "/p", true, true)),
            ),
            ("http://1.2.3.256/", None),
            (
                "http://1.2.300/",
                Some((false, "1.2.1.44", None, "/", true, true)),
            ),
            ("http://1.2.3.4.5/", None),
            ("http://example.com.5/", None),
            (
                "http://example.5x/",
                Some((false, "example.5x", None, "/", true, true)),
            ),
            ("http://09/", None),
            (
                "http://0x/",
                Some((false, "0.0.0.0", None, "/", true, true)),
            ),
            (
                "http://%6cocalhost/",
                Some((false, "localhost", None, "/", true, true)),
            ),
            (
                "http://local%68ost:3000/cb#",
                Some((false, "localhost", Some(3000), "/cb", true, true)),
            ),
            (
                "http://h/%2e%2E/callback",
                Some((false, "h", None, "/callback", true, true)),
            ),
            ("http://a@b@c/", Some((false, "c", None, "/", true, true))),
            ("ftp://x", None),
            ("mailto:x", None),
            ("x", None),
            ("http://[::1/", None),
            ("http://[::g]/", None),
            ("http://h%/", None),
            ("http://h%25/", None),
            (
                "http://localhost./",
                Some((false, "localhost.", None, "/", true, true)),
            ),
            ("http://h#?/x", Some((false, "h", None, "/", true, false))),
            ("http://h?x#y", Some((false, "h", None, "/", false, false))),
            (
                "http://[::1]:0/",
                Some((false, "[::1]", Some(0), "/", true, true)),
            ),
            ("http://h:0080/", Some((false, "h", None, "/", true, true))),
            (
                "http://h:00000000080/",
                Some((false, "h", None, "/", true, true)),
            ),
            ("http://@h/", Some((false, "h", None, "/", true, true))),
            ("http://1..2/", None),
            ("http://0x100000000/", None),
            (
                "http://4294967295/",
                Some((false, "255.255.255.255", None, "/", true, true)),
            ),
            (
                "http://[::ffff:1.2.3.4]/",
                Some((false, "[::ffff:102:304]", None, "/", true, true)),
            ),
            (
                "http://[1:0:0:2:0:0:0:3]/",
                Some((false, "[1:0:0:2::3]", None, "/", true, true)),
            ),
            (
                "http://[1:2:3:4:5:6:7:8]/",
                Some((false, "[1:2:3:4:5:6:7:8]", None, "/", true, true)),
            ),
        ];
        for (input, want) in cases {
            let got = parse_http(input).map(|u| {
                (
                    u.https,
                    u.hostname,
                    u.port,
                    u.pathname,
                    u.search_empty,
                    u.hash_empty,
                )
            });
            let want = want.map(|(a, b, c, d, e, f)| (a, b.to_string(), c, d.to_string(), e, f));
            assert_eq!(got, want, "{input:?}");
        }
    }
}
