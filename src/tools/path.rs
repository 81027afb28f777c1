//! Path handling of the file tools (`tools.md` §1): `resolveToCwd`, read's macOS file-name
//! fallbacks, Node-style file-system error texts, and the small Unicode normalizations the
//! tools need (NFD for read's fallbacks, an NFKC subset for edit's fuzzy matching).

use std::io;
use std::path::{Path, PathBuf};

use crate::util::{home_dir, normalize_lexically};

/// Non-breaking and other Unicode space characters that paths from a model may contain.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// `normalizePath` with pi's tool options: Unicode spaces become ASCII spaces, one leading `@`
/// is dropped, `~` / `~/…` expand to the home directory, a `file://` URL becomes its path.
pub fn expand_path(path: &str) -> PathBuf {
    let spaced: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    let p = spaced.strip_prefix('@').unwrap_or(&spaced);
    if p == "~" {
        if let Some(h) = home_dir() {
            return h;
        }
    } else if let Some(rest) = p.strip_prefix("~/") {
        if let Some(h) = home_dir() {
            return normalize_lexically(&h.join(rest));
        }
    }
    if let Some(rest) = p.strip_prefix("file://") {
        let path_part = rest.strip_prefix("localhost").unwrap_or(rest);
        if path_part.starts_with('/') {
            if let Some(decoded) = percent_decode(path_part) {
                return PathBuf::from(decoded);
            }
        }
    }
    PathBuf::from(p)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            let v = u8::from_str_radix(hex, 16).ok()?;
            if v == b'/' {
                // Node refuses an encoded `/` in a file URL path.
                return None;
            }
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `resolveToCwd`: [`expand_path`], then resolved against `cwd` unless absolute, and lexically
/// normalized like Node's `path.resolve` (no `.`/`..` components, no trailing `/`).
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(path);
    if expanded.is_absolute() {
        normalize_lexically(&expanded)
    } else {
        normalize_lexically(&cwd.join(expanded))
    }
}

/// `resolveReadPath`: [`resolve_to_cwd`], and when that does not exist, the first existing
/// macOS variant: ` AM.`/` PM.` with U+202F before AM/PM (screenshot names), the NFD form, `'`
/// as U+2019, NFD plus U+2019. Falls back to the plain resolution.
pub fn resolve_read_path(path: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(path, cwd);
    if exists(&resolved) {
        return resolved;
    }
    let Some(s) = resolved.to_str() else {
        return resolved;
    };
    let am_pm = screenshot_variant(s);
    let nfd_form = nfd(s);
    let curly = s.replace('\'', "\u{2019}");
    let nfd_curly = nfd_form.replace('\'', "\u{2019}");
    for candidate in [am_pm, nfd_form, curly, nfd_curly] {
        if candidate != s && exists(Path::new(&candidate)) {
            return PathBuf::from(candidate);
        }
    }
    resolved
}

fn exists(p: &Path) -> bool {
    std::fs::metadata(p).is_ok()
}

/// Replaces `" AM."` / `" PM."` (any case) by the same with U+202F instead of the space.
fn screenshot_variant(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(' ') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let hit = after.len() >= 3
            && after.is_char_boundary(3)
            && matches!(after[..2].to_ascii_uppercase().as_str(), "AM" | "PM")
            && after.as_bytes()[2] == b'.';
        if hit {
            out.push('\u{202f}');
            out.push_str(&after[..3]);
            rest = &after[3..];
        } else {
            out.push(' ');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The code of an I/O error as Node names it (`ENOENT`, `EACCES`, …).
pub fn node_error_code(err: &io::Error) -> String {
    match err.raw_os_error().and_then(errno_text) {
        Some((code, _)) => code.to_string(),
        None => match err.kind() {
            io::ErrorKind::NotFound => "ENOENT".to_string(),
            io::ErrorKind::PermissionDenied => "EACCES".to_string(),
            _ => "UNKNOWN".to_string(),
        },
    }
}

/// Node's message for a failed fs call: `<CODE>: <description>, <syscall> '<path>'`, or without
/// the path part for calls on a file descriptor (`EISDIR: illegal operation on a directory, read`).
pub fn node_error(err: &io::Error, syscall: &str, path: Option<&Path>) -> String {
    let Some((code, text)) = err.raw_os_error().and_then(errno_text) else {
        return err.to_string();
    };
    match path {
        Some(p) => format!("{code}: {text}, {syscall} '{}'", p.display()),
        None => format!("{code}: {text}, {syscall}"),
    }
}

/// libuv's error names and descriptions for the errors file operations can meet.
fn errno_text(errno: i32) -> Option<(&'static str, &'static str)> {
    Some(match errno {
        libc::E2BIG => ("E2BIG", "argument list too long"),
        libc::EACCES => ("EACCES", "permission denied"),
        libc::EAGAIN => ("EAGAIN", "resource temporarily unavailable"),
        libc::EBADF => ("EBADF", "bad file descriptor"),
        libc::EBUSY => ("EBUSY", "resource busy or locked"),
        libc::EEXIST => ("EEXIST", "file already exists"),
        libc::EFAULT => ("EFAULT", "bad address in system call argument"),
        libc::EFBIG => ("EFBIG", "file too large"),
        libc::EINTR => ("EINTR", "interrupted system call"),
        libc::EINVAL => ("EINVAL", "invalid argument"),
        libc::EIO => ("EIO", "i/o error"),
        libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
        libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        libc::EMFILE => ("EMFILE", "too many open files"),
        libc::EMLINK => ("EMLINK", "too many links"),
        libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        libc::ENFILE => ("ENFILE", "file table overflow"),
        libc::ENODEV => ("ENODEV", "no such device"),
        libc::ENOENT => ("ENOENT", "no such file or directory"),
        libc::ENOMEM => ("ENOMEM", "not enough memory"),
        libc::ENOSPC => ("ENOSPC", "no space left on device"),
        libc::ENOSYS => ("ENOSYS", "function not implemented"),
        libc::ENOTDIR => ("ENOTDIR", "not a directory"),
        libc::ENOTEMPTY => ("ENOTEMPTY", "directory not empty"),
        libc::ENXIO => ("ENXIO", "no such device or address"),
        libc::EPERM => ("EPERM", "operation not permitted"),
        libc::EPIPE => ("EPIPE", "broken pipe"),
        libc::EROFS => ("EROFS", "read-only file system"),
        libc::ESPIPE => ("ESPIPE", "invalid seek"),
        libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
        libc::EXDEV => ("EXDEV", "cross-device link not permitted"),
        _ => return None,
    })
}

/// `fs.access(path, mode)` without `unsafe`: opens the file for reading (and for writing when
/// `write` is set, without truncating or creating it). A directory passes as `access` lets it
/// pass; the later read then fails with `EISDIR`. Errors carry the OS error number.
pub fn check_access(path: &Path, write: bool) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Ok(());
    }
    std::fs::File::open(path)?;
    if write {
        std::fs::OpenOptions::new().write(true).open(path)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Unicode normalization (a subset; see the tables at the end of the file)
// ---------------------------------------------------------------------------------------------

fn canonical_decomposition(c: char) -> Option<(char, char)> {
    CANONICAL
        .binary_search_by(|(k, _, _)| k.cmp(&c))
        .ok()
        .map(|i| (CANONICAL[i].1, CANONICAL[i].2))
}

fn combining_class(c: char) -> u8 {
    if (c as u32) < 0x300 {
        return 0;
    }
    COMBINING_CLASS
        .binary_search_by(|(k, _)| k.cmp(&c))
        .map_or(0, |i| COMBINING_CLASS[i].1)
}

fn push_decomposed(c: char, out: &mut Vec<char>) {
    match canonical_decomposition(c) {
        Some((a, '\0')) => push_decomposed(a, out),
        Some((a, b)) => {
            push_decomposed(a, out);
            push_decomposed(b, out);
        }
        None => out.push(c),
    }
}

/// Canonical ordering: marks of non-zero combining class sorted (stably) by class.
fn reorder(chars: &mut [char]) {
    let mut i = 0;
    while i < chars.len() {
        if combining_class(chars[i]) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && combining_class(chars[i]) != 0 {
            i += 1;
        }
        chars[start..i].sort_by_key(|c| combining_class(*c));
    }
}

fn compose_pair(a: char, b: char) -> Option<char> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static PAIRS: OnceLock<HashMap<(char, char), char>> = OnceLock::new();
    let pairs = PAIRS.get_or_init(|| {
        CANONICAL
            .iter()
            .filter(|(c, _, b)| *b != '\0' && !COMPOSITION_EXCLUDED.contains(c))
            .map(|(c, a, b)| ((*a, *b), *c))
            .collect()
    });
    pairs.get(&(a, b)).copied()
}

/// Canonical composition (UAX #15) of a decomposed, reordered sequence.
fn compose(chars: &[char]) -> String {
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let mut starter: Option<usize> = None;
    // Combining class of the last character kept since the starter (`None`: none yet).
    let mut last_class: Option<u8> = None;
    for &c in chars {
        let class = combining_class(c);
        if let Some(s) = starter {
            let blocked = last_class.is_some_and(|l| l == 0 || l >= class);
            if !blocked {
                if let Some(composed) = compose_pair(out[s], c) {
                    out[s] = composed;
                    continue;
                }
            }
        }
        if class == 0 {
            starter = Some(out.len());
            last_class = None;
        } else {
            last_class = Some(class);
        }
        out.push(c);
    }
    out.into_iter().collect()
}

/// NFD of `s` for the characters in this file's tables (precomposed Latin, Greek and Cyrillic
/// letters); other characters are kept as they are.
pub fn nfd(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut chars = Vec::with_capacity(s.len());
    for c in s.chars() {
        push_decomposed(c, &mut chars);
    }
    reorder(&mut chars);
    chars.into_iter().collect()
}

/// NFKC of `s`, restricted to the tables in this file: compatibility mappings of spaces,
/// Latin-1 symbols, general punctuation, super/subscripts, letterlike symbols, number forms,
/// enclosed alphanumerics, Latin ligatures and full-width ASCII; canonical decomposition and
/// recomposition of Latin, Greek and Cyrillic letters with combining marks. Characters outside
/// the tables (Hangul, CJK compatibility ideographs, Arabic presentation forms, …) are kept.
pub fn nfkc(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut chars = Vec::with_capacity(s.len());
    for c in s.chars() {
        let code = c as u32;
        if (0xff01..=0xff5e).contains(&code) {
            if let Some(ascii) = char::from_u32(code - 0xfee0) {
                chars.push(ascii);
                continue;
            }
        }
        match COMPATIBILITY.binary_search_by(|(k, _)| k.cmp(&c)) {
            Ok(i) => {
                for m in COMPATIBILITY[i].1.chars() {
                    push_decomposed(m, &mut chars);
                }
            }
            Err(_) => push_decomposed(c, &mut chars),
        }
    }
    reorder(&mut chars);
    compose(&chars)
}

// ---------------------------------------------------------------------------------------------
// Tables (generated from the Unicode Character Database, version 14)
// ---------------------------------------------------------------------------------------------

/// Canonical decompositions (one level) of the Latin, Greek and Cyrillic letters: `(char, first, second)`,
/// `second == '\0'` for a singleton. Sorted by `char`. Generated from Unicode 14 data.
#[rustfmt::skip]
static CANONICAL: &[(char, char, char)] = &[
    ('\u{c0}', 'A', '\u{300}'), ('\u{c1}', 'A', '\u{301}'), ('\u{c2}', 'A', '\u{302}'),
    ('\u{c3}', 'A', '\u{303}'), ('\u{c4}', 'A', '\u{308}'), ('\u{c5}', 'A', '\u{30a}'),
    ('\u{c7}', 'C', '\u{327}'), ('\u{c8}', 'E', '\u{300}'), ('\u{c9}', 'E', '\u{301}'),
    ('\u{ca}', 'E', '\u{302}'), ('\u{cb}', 'E', '\u{308}'), ('\u{cc}', 'I', '\u{300}'),
    ('\u{cd}', 'I', '\u{301}'), ('\u{ce}', 'I', '\u{302}'), ('\u{cf}', 'I', '\u{308}'),
    ('\u{d1}', 'N', '\u{303}'), ('\u{d2}', 'O', '\u{300}'), ('\u{d3}', 'O', '\u{301}'),
    ('\u{d4}', 'O', '\u{302}'), ('\u{d5}', 'O', '\u{303}'), ('\u{d6}', 'O', '\u{308}'),
    ('\u{d9}', 'U', '\u{300}'), ('\u{da}', 'U', '\u{301}'), ('\u{db}', 'U', '\u{302}'),
    ('\u{dc}', 'U', '\u{308}'), ('\u{dd}', 'Y', '\u{301}'), ('\u{e0}', 'a', '\u{300}'),
    ('\u{e1}', 'a', '\u{301}'), ('\u{e2}', 'a', '\u{302}'), ('\u{e3}', 'a', '\u{303}'),
    ('\u{e4}', 'a', '\u{308}'), ('\u{e5}', 'a', '\u{30a}'), ('\u{e7}', 'c', '\u{327}'),
    ('\u{e8}', 'e', '\u{300}'), ('\u{e9}', 'e', '\u{301}'), ('\u{ea}', 'e', '\u{302}'),
    ('\u{eb}', 'e', '\u{308}'), ('\u{ec}', 'i', '\u{300}'), ('\u{ed}', 'i', '\u{301}'),
    ('\u{ee}', 'i', '\u{302}'), ('\u{ef}', 'i', '\u{308}'), ('\u{f1}', 'n', '\u{303}'),
    ('\u{f2}', 'o', '\u{300}'), ('\u{f3}', 'o', '\u{301}'), ('\u{f4}', 'o', '\u{302}'),
    ('\u{f5}', 'o', '\u{303}'), ('\u{f6}', 'o', '\u{308}'), ('\u{f9}', 'u', '\u{300}'),
    ('\u{fa}', 'u', '\u{301}'), ('\u{fb}', 'u', '\u{302}'), ('\u{fc}', 'u', '\u{308}'),
    ('\u{fd}', 'y', '\u{301}'), ('\u{ff}', 'y', '\u{308}'), ('\u{100}', 'A', '\u{304}'),
    ('\u{101}', 'a', '\u{304}'), ('\u{102}', 'A', '\u{306}'), ('\u{103}', 'a', '\u{306}'),
    ('\u{104}', 'A', '\u{328}'), ('\u{105}', 'a', '\u{328}'), ('\u{106}', 'C', '\u{301}'),
    ('\u{107}', 'c', '\u{301}'), ('\u{108}', 'C', '\u{302}'), ('\u{109}', 'c', '\u{302}'),
    ('\u{10a}', 'C', '\u{307}'), ('\u{10b}', 'c', '\u{307}'), ('\u{10c}', 'C', '\u{30c}'),
    ('\u{10d}', 'c', '\u{30c}'), ('\u{10e}', 'D', '\u{30c}'), ('\u{10f}', 'd', '\u{30c}'),
    ('\u{112}', 'E', '\u{304}'), ('\u{113}', 'e', '\u{304}'), ('\u{114}', 'E', '\u{306}'),
    ('\u{115}', 'e', '\u{306}'), ('\u{116}', 'E', '\u{307}'), ('\u{117}', 'e', '\u{307}'),
    ('\u{118}', 'E', '\u{328}'), ('\u{119}', 'e', '\u{328}'), ('\u{11a}', 'E', '\u{30c}'),
    ('\u{11b}', 'e', '\u{30c}'), ('\u{11c}', 'G', '\u{302}'), ('\u{11d}', 'g', '\u{302}'),
    ('\u{11e}', 'G', '\u{306}'), ('\u{11f}', 'g', '\u{306}'), ('\u{120}', 'G', '\u{307}'),
    ('\u{121}', 'g', '\u{307}'), ('\u{122}', 'G', '\u{327}'), ('\u{123}', 'g', '\u{327}'),
    ('\u{124}', 'H', '\u{302}'), ('\u{125}', 'h', '\u{302}'), ('\u{128}', 'I', '\u{303}'),
    ('\u{129}', 'i', '\u{303}'), ('\u{12a}', 'I', '\u{304}'), ('\u{12b}', 'i', '\u{304}'),
    ('\u{12c}', 'I', '\u{306}'), ('\u{12d}', 'i', '\u{306}'), ('\u{12e}', 'I', '\u{328}'),
    ('\u{12f}', 'i', '\u{328}'), ('\u{130}', 'I', '\u{307}'), ('\u{134}', 'J', '\u{302}'),
    ('\u{135}', 'j', '\u{302}'), ('\u{136}', 'K', '\u{327}'), ('\u{137}', 'k', '\u{327}'),
    ('\u{139}', 'L', '\u{301}'), ('\u{13a}', 'l', '\u{301}'), ('\u{13b}', 'L', '\u{327}'),
    ('\u{13c}', 'l', '\u{327}'), ('\u{13d}', 'L', '\u{30c}'), ('\u{13e}', 'l', '\u{30c}'),
    ('\u{143}', 'N', '\u{301}'), ('\u{144}', 'n', '\u{301}'), ('\u{145}', 'N', '\u{327}'),
    ('\u{146}', 'n', '\u{327}'), ('\u{147}', 'N', '\u{30c}'), ('\u{148}', 'n', '\u{30c}'),
    ('\u{14c}', 'O', '\u{304}'), ('\u{14d}', 'o', '\u{304}'), ('\u{14e}', 'O', '\u{306}'),
    ('\u{14f}', 'o', '\u{306}'), ('\u{150}', 'O', '\u{30b}'), ('\u{151}', 'o', '\u{30b}'),
    ('\u{154}', 'R', '\u{301}'), ('\u{155}', 'r', '\u{301}'), ('\u{156}', 'R', '\u{327}'),
    ('\u{157}', 'r', '\u{327}'), ('\u{158}', 'R', '\u{30c}'), ('\u{159}', 'r', '\u{30c}'),
    ('\u{15a}', 'S', '\u{301}'), ('\u{15b}', 's', '\u{301}'), ('\u{15c}', 'S', '\u{302}'),
    ('\u{15d}', 's', '\u{302}'), ('\u{15e}', 'S', '\u{327}'), ('\u{15f}', 's', '\u{327}'),
    ('\u{160}', 'S', '\u{30c}'), ('\u{161}', 's', '\u{30c}'), ('\u{162}', 'T', '\u{327}'),
    ('\u{163}', 't', '\u{327}'), ('\u{164}', 'T', '\u{30c}'), ('\u{165}', 't', '\u{30c}'),
    ('\u{168}', 'U', '\u{303}'), ('\u{169}', 'u', '\u{303}'), ('\u{16a}', 'U', '\u{304}'),
    ('\u{16b}', 'u', '\u{304}'), ('\u{16c}', 'U', '\u{306}'), ('\u{16d}', 'u', '\u{306}'),
    ('\u{16e}', 'U', '\u{30a}'), ('\u{16f}', 'u', '\u{30a}'), ('\u{170}', 'U', '\u{30b}'),
    ('\u{171}', 'u', '\u{30b}'), ('\u{172}', 'U', '\u{328}'), ('\u{173}', 'u', '\u{328}'),
    ('\u{174}', 'W', '\u{302}'), ('\u{175}', 'w', '\u{302}'), ('\u{176}', 'Y', '\u{302}'),
    ('\u{177}', 'y', '\u{302}'), ('\u{178}', 'Y', '\u{308}'), ('\u{179}', 'Z', '\u{301}'),
    ('\u{17a}', 'z', '\u{301}'), ('\u{17b}', 'Z', '\u{307}'), ('\u{17c}', 'z', '\u{307}'),
    ('\u{17d}', 'Z', '\u{30c}'), ('\u{17e}', 'z', '\u{30c}'), ('\u{1a0}', 'O', '\u{31b}'),
    ('\u{1a1}', 'o', '\u{31b}'), ('\u{1af}', 'U', '\u{31b}'), ('\u{1b0}', 'u', '\u{31b}'),
    ('\u{1cd}', 'A', '\u{30c}'), ('\u{1ce}', 'a', '\u{30c}'), ('\u{1cf}', 'I', '\u{30c}'),
    ('\u{1d0}', 'i', '\u{30c}'), ('\u{1d1}', 'O', '\u{30c}'), ('\u{1d2}', 'o', '\u{30c}'),
    ('\u{1d3}', 'U', '\u{30c}'), ('\u{1d4}', 'u', '\u{30c}'), ('\u{1d5}', '\u{dc}', '\u{304}'),
    ('\u{1d6}', '\u{fc}', '\u{304}'), ('\u{1d7}', '\u{dc}', '\u{301}'),
    ('\u{1d8}', '\u{fc}', '\u{301}'), ('\u{1d9}', '\u{dc}', '\u{30c}'),
    ('\u{1da}', '\u{fc}', '\u{30c}'), ('\u{1db}', '\u{dc}', '\u{300}'),
    ('\u{1dc}', '\u{fc}', '\u{300}'), ('\u{1de}', '\u{c4}', '\u{304}'),
    ('\u{1df}', '\u{e4}', '\u{304}'), ('\u{1e0}', '\u{226}', '\u{304}'),
    ('\u{1e1}', '\u{227}', '\u{304}'), ('\u{1e2}', '\u{c6}', '\u{304}'),
    ('\u{1e3}', '\u{e6}', '\u{304}'), ('\u{1e6}', 'G', '\u{30c}'), ('\u{1e7}', 'g', '\u{30c}'),
    ('\u{1e8}', 'K', '\u{30c}'), ('\u{1e9}', 'k', '\u{30c}'), ('\u{1ea}', 'O', '\u{328}'),
    ('\u{1eb}', 'o', '\u{328}'), ('\u{1ec}', '\u{1ea}', '\u{304}'),
    ('\u{1ed}', '\u{1eb}', '\u{304}'), ('\u{1ee}', '\u{1b7}', '\u{30c}'),
    ('\u{1ef}', '\u{292}', '\u{30c}'), ('\u{1f0}', 'j', '\u{30c}'), ('\u{1f4}', 'G', '\u{301}'),
    ('\u{1f5}', 'g', '\u{301}'), ('\u{1f8}', 'N', '\u{300}'), ('\u{1f9}', 'n', '\u{300}'),
    ('\u{1fa}', '\u{c5}', '\u{301}'), ('\u{1fb}', '\u{e5}', '\u{301}'),
    ('\u{1fc}', '\u{c6}', '\u{301}'), ('\u{1fd}', '\u{e6}', '\u{301}'),
    ('\u{1fe}', '\u{d8}', '\u{301}'), ('\u{1ff}', '\u{f8}', '\u{301}'), ('\u{200}', 'A', '\u{30f}'),
    ('\u{201}', 'a', '\u{30f}'), ('\u{202}', 'A', '\u{311}'), ('\u{203}', 'a', '\u{311}'),
    ('\u{204}', 'E', '\u{30f}'), ('\u{205}', 'e', '\u{30f}'), ('\u{206}', 'E', '\u{311}'),
    ('\u{207}', 'e', '\u{311}'), ('\u{208}', 'I', '\u{30f}'), ('\u{209}', 'i', '\u{30f}'),
    ('\u{20a}', 'I', '\u{311}'), ('\u{20b}', 'i', '\u{311}'), ('\u{20c}', 'O', '\u{30f}'),
    ('\u{20d}', 'o', '\u{30f}'), ('\u{20e}', 'O', '\u{311}'), ('\u{20f}', 'o', '\u{311}'),
    ('\u{210}', 'R', '\u{30f}'), ('\u{211}', 'r', '\u{30f}'), ('\u{212}', 'R', '\u{311}'),
    ('\u{213}', 'r', '\u{311}'), ('\u{214}', 'U', '\u{30f}'), ('\u{215}', 'u', '\u{30f}'),
    ('\u{216}', 'U', '\u{311}'), ('\u{217}', 'u', '\u{311}'), ('\u{218}', 'S', '\u{326}'),
    ('\u{219}', 's', '\u{326}'), ('\u{21a}', 'T', '\u{326}'), ('\u{21b}', 't', '\u{326}'),
    ('\u{21e}', 'H', '\u{30c}'), ('\u{21f}', 'h', '\u{30c}'), ('\u{226}', 'A', '\u{307}'),
    ('\u{227}', 'a', '\u{307}'), ('\u{228}', 'E', '\u{327}'), ('\u{229}', 'e', '\u{327}'),
    ('\u{22a}', '\u{d6}', '\u{304}'), ('\u{22b}', '\u{f6}', '\u{304}'),
    ('\u{22c}', '\u{d5}', '\u{304}'), ('\u{22d}', '\u{f5}', '\u{304}'), ('\u{22e}', 'O', '\u{307}'),
    ('\u{22f}', 'o', '\u{307}'), ('\u{230}', '\u{22e}', '\u{304}'),
    ('\u{231}', '\u{22f}', '\u{304}'), ('\u{232}', 'Y', '\u{304}'), ('\u{233}', 'y', '\u{304}'),
    ('\u{340}', '\u{300}', '\0'), ('\u{341}', '\u{301}', '\0'), ('\u{343}', '\u{313}', '\0'),
    ('\u{344}', '\u{308}', '\u{301}'), ('\u{374}', '\u{2b9}', '\0'), ('\u{37e}', ';', '\0'),
    ('\u{385}', '\u{a8}', '\u{301}'), ('\u{386}', '\u{391}', '\u{301}'),
    ('\u{387}', '\u{b7}', '\0'), ('\u{388}', '\u{395}', '\u{301}'),
    ('\u{389}', '\u{397}', '\u{301}'), ('\u{38a}', '\u{399}', '\u{301}'),
    ('\u{38c}', '\u{39f}', '\u{301}'), ('\u{38e}', '\u{3a5}', '\u{301}'),
    ('\u{38f}', '\u{3a9}', '\u{301}'), ('\u{390}', '\u{3ca}', '\u{301}'),
    ('\u{3aa}', '\u{399}', '\u{308}'), ('\u{3ab}', '\u{3a5}', '\u{308}'),
    ('\u{3ac}', '\u{3b1}', '\u{301}'), ('\u{3ad}', '\u{3b5}', '\u{301}'),
    ('\u{3ae}', '\u{3b7}', '\u{301}'), ('\u{3af}', '\u{3b9}', '\u{301}'),
    ('\u{3b0}', '\u{3cb}', '\u{301}'), ('\u{3ca}', '\u{3b9}', '\u{308}'),
    ('\u{3cb}', '\u{3c5}', '\u{308}'), ('\u{3cc}', '\u{3bf}', '\u{301}'),
    ('\u{3cd}', '\u{3c5}', '\u{301}'), ('\u{3ce}', '\u{3c9}', '\u{301}'),
    ('\u{3d3}', '\u{3d2}', '\u{301}'), ('\u{3d4}', '\u{3d2}', '\u{308}'),
    ('\u{400}', '\u{415}', '\u{300}'), ('\u{401}', '\u{415}', '\u{308}'),
    ('\u{403}', '\u{413}', '\u{301}'), ('\u{407}', '\u{406}', '\u{308}'),
    ('\u{40c}', '\u{41a}', '\u{301}'), ('\u{40d}', '\u{418}', '\u{300}'),
    ('\u{40e}', '\u{423}', '\u{306}'), ('\u{419}', '\u{418}', '\u{306}'),
    ('\u{439}', '\u{438}', '\u{306}'), ('\u{450}', '\u{435}', '\u{300}'),
    ('\u{451}', '\u{435}', '\u{308}'), ('\u{453}', '\u{433}', '\u{301}'),
    ('\u{457}', '\u{456}', '\u{308}'), ('\u{45c}', '\u{43a}', '\u{301}'),
    ('\u{45d}', '\u{438}', '\u{300}'), ('\u{45e}', '\u{443}', '\u{306}'),
    ('\u{476}', '\u{474}', '\u{30f}'), ('\u{477}', '\u{475}', '\u{30f}'),
    ('\u{4c1}', '\u{416}', '\u{306}'), ('\u{4c2}', '\u{436}', '\u{306}'),
    ('\u{4d0}', '\u{410}', '\u{306}'), ('\u{4d1}', '\u{430}', '\u{306}'),
    ('\u{4d2}', '\u{410}', '\u{308}'), ('\u{4d3}', '\u{430}', '\u{308}'),
    ('\u{4d6}', '\u{415}', '\u{306}'), ('\u{4d7}', '\u{435}', '\u{306}'),
    ('\u{4da}', '\u{4d8}', '\u{308}'), ('\u{4db}', '\u{4d9}', '\u{308}'),
    ('\u{4dc}', '\u{416}', '\u{308}'), ('\u{4dd}', '\u{436}', '\u{308}'),
    ('\u{4de}', '\u{417}', '\u{308}'), ('\u{4df}', '\u{437}', '\u{308}'),
    ('\u{4e2}', '\u{418}', '\u{304}'), ('\u{4e3}', '\u{438}', '\u{304}'),
    ('\u{4e4}', '\u{418}', '\u{308}'), ('\u{4e5}', '\u{438}', '\u{308}'),
    ('\u{4e6}', '\u{41e}', '\u{308}'), ('\u{4e7}', '\u{43e}', '\u{308}'),
    ('\u{4ea}', '\u{4e8}', '\u{308}'), ('\u{4eb}', '\u{4e9}', '\u{308}'),
    ('\u{4ec}', '\u{42d}', '\u{308}'), ('\u{4ed}', '\u{44d}', '\u{308}'),
    ('\u{4ee}', '\u{423}', '\u{304}'), ('\u{4ef}', '\u{443}', '\u{304}'),
    ('\u{4f0}', '\u{423}', '\u{308}'), ('\u{4f1}', '\u{443}', '\u{308}'),
    ('\u{4f2}', '\u{423}', '\u{30b}'), ('\u{4f3}', '\u{443}', '\u{30b}'),
    ('\u{4f4}', '\u{427}', '\u{308}'), ('\u{4f5}', '\u{447}', '\u{308}'),
    ('\u{4f8}', '\u{42b}', '\u{308}'), ('\u{4f9}', '\u{44b}', '\u{308}'),
    ('\u{1e00}', 'A', '\u{325}'), ('\u{1e01}', 'a', '\u{325}'), ('\u{1e02}', 'B', '\u{307}'),
    ('\u{1e03}', 'b', '\u{307}'), ('\u{1e04}', 'B', '\u{323}'), ('\u{1e05}', 'b', '\u{323}'),
    ('\u{1e06}', 'B', '\u{331}'), ('\u{1e07}', 'b', '\u{331}'), ('\u{1e08}', '\u{c7}', '\u{301}'),
    ('\u{1e09}', '\u{e7}', '\u{301}'), ('\u{1e0a}', 'D', '\u{307}'), ('\u{1e0b}', 'd', '\u{307}'),
    ('\u{1e0c}', 'D', '\u{323}'), ('\u{1e0d}', 'd', '\u{323}'), ('\u{1e0e}', 'D', '\u{331}'),
    ('\u{1e0f}', 'd', '\u{331}'), ('\u{1e10}', 'D', '\u{327}'), ('\u{1e11}', 'd', '\u{327}'),
    ('\u{1e12}', 'D', '\u{32d}'), ('\u{1e13}', 'd', '\u{32d}'), ('\u{1e14}', '\u{112}', '\u{300}'),
    ('\u{1e15}', '\u{113}', '\u{300}'), ('\u{1e16}', '\u{112}', '\u{301}'),
    ('\u{1e17}', '\u{113}', '\u{301}'), ('\u{1e18}', 'E', '\u{32d}'), ('\u{1e19}', 'e', '\u{32d}'),
    ('\u{1e1a}', 'E', '\u{330}'), ('\u{1e1b}', 'e', '\u{330}'), ('\u{1e1c}', '\u{228}', '\u{306}'),
    ('\u{1e1d}', '\u{229}', '\u{306}'), ('\u{1e1e}', 'F', '\u{307}'), ('\u{1e1f}', 'f', '\u{307}'),
    ('\u{1e20}', 'G', '\u{304}'), ('\u{1e21}', 'g', '\u{304}'), ('\u{1e22}', 'H', '\u{307}'),
    ('\u{1e23}', 'h', '\u{307}'), ('\u{1e24}', 'H', '\u{323}'), ('\u{1e25}', 'h', '\u{323}'),
    ('\u{1e26}', 'H', '\u{308}'), ('\u{1e27}', 'h', '\u{308}'), ('\u{1e28}', 'H', '\u{327}'),
    ('\u{1e29}', 'h', '\u{327}'), ('\u{1e2a}', 'H', '\u{32e}'), ('\u{1e2b}', 'h', '\u{32e}'),
    ('\u{1e2c}', 'I', '\u{330}'), ('\u{1e2d}', 'i', '\u{330}'), ('\u{1e2e}', '\u{cf}', '\u{301}'),
    ('\u{1e2f}', '\u{ef}', '\u{301}'), ('\u{1e30}', 'K', '\u{301}'), ('\u{1e31}', 'k', '\u{301}'),
    ('\u{1e32}', 'K', '\u{323}'), ('\u{1e33}', 'k', '\u{323}'), ('\u{1e34}', 'K', '\u{331}'),
    ('\u{1e35}', 'k', '\u{331}'), ('\u{1e36}', 'L', '\u{323}'), ('\u{1e37}', 'l', '\u{323}'),
    ('\u{1e38}', '\u{1e36}', '\u{304}'), ('\u{1e39}', '\u{1e37}', '\u{304}'),
    ('\u{1e3a}', 'L', '\u{331}'), ('\u{1e3b}', 'l', '\u{331}'), ('\u{1e3c}', 'L', '\u{32d}'),
    ('\u{1e3d}', 'l', '\u{32d}'), ('\u{1e3e}', 'M', '\u{301}'), ('\u{1e3f}', 'm', '\u{301}'),
    ('\u{1e40}', 'M', '\u{307}'), ('\u{1e41}', 'm', '\u{307}'), ('\u{1e42}', 'M', '\u{323}'),
    ('\u{1e43}', 'm', '\u{323}'), ('\u{1e44}', 'N', '\u{307}'), ('\u{1e45}', 'n', '\u{307}'),
    ('\u{1e46}', 'N', '\u{323}'), ('\u{1e47}', 'n', '\u{323}'), ('\u{1e48}', 'N', '\u{331}'),
    ('\u{1e49}', 'n', '\u{331}'), ('\u{1e4a}', 'N', '\u{32d}'), ('\u{1e4b}', 'n', '\u{32d}'),
    ('\u{1e4c}', '\u{d5}', '\u{301}'), ('\u{1e4d}', '\u{f5}', '\u{301}'),
    ('\u{1e4e}', '\u{d5}', '\u{308}'), ('\u{1e4f}', '\u{f5}', '\u{308}'),
    ('\u{1e50}', '\u{14c}', '\u{300}'), ('\u{1e51}', '\u{14d}', '\u{300}'),
    ('\u{1e52}', '\u{14c}', '\u{301}'), ('\u{1e53}', '\u{14d}', '\u{301}'),
    ('\u{1e54}', 'P', '\u{301}'), ('\u{1e55}', 'p', '\u{301}'), ('\u{1e56}', 'P', '\u{307}'),
    ('\u{1e57}', 'p', '\u{307}'), ('\u{1e58}', 'R', '\u{307}'), ('\u{1e59}', 'r', '\u{307}'),
    ('\u{1e5a}', 'R', '\u{323}'), ('\u{1e5b}', 'r', '\u{323}'), ('\u{1e5c}', '\u{1e5a}', '\u{304}'),
    ('\u{1e5d}', '\u{1e5b}', '\u{304}'), ('\u{1e5e}', 'R', '\u{331}'), ('\u{1e5f}', 'r', '\u{331}'),
    ('\u{1e60}', 'S', '\u{307}'), ('\u{1e61}', 's', '\u{307}'), ('\u{1e62}', 'S', '\u{323}'),
    ('\u{1e63}', 's', '\u{323}'), ('\u{1e64}', '\u{15a}', '\u{307}'),
    ('\u{1e65}', '\u{15b}', '\u{307}'), ('\u{1e66}', '\u{160}', '\u{307}'),
    ('\u{1e67}', '\u{161}', '\u{307}'), ('\u{1e68}', '\u{1e62}', '\u{307}'),
    ('\u{1e69}', '\u{1e63}', '\u{307}'), ('\u{1e6a}', 'T', '\u{307}'), ('\u{1e6b}', 't', '\u{307}'),
    ('\u{1e6c}', 'T', '\u{323}'), ('\u{1e6d}', 't', '\u{323}'), ('\u{1e6e}', 'T', '\u{331}'),
    ('\u{1e6f}', 't', '\u{331}'), ('\u{1e70}', 'T', '\u{32d}'), ('\u{1e71}', 't', '\u{32d}'),
    ('\u{1e72}', 'U', '\u{324}'), ('\u{1e73}', 'u', '\u{324}'), ('\u{1e74}', 'U', '\u{330}'),
    ('\u{1e75}', 'u', '\u{330}'), ('\u{1e76}', 'U', '\u{32d}'), ('\u{1e77}', 'u', '\u{32d}'),
    ('\u{1e78}', '\u{168}', '\u{301}'), ('\u{1e79}', '\u{169}', '\u{301}'),
    ('\u{1e7a}', '\u{16a}', '\u{308}'), ('\u{1e7b}', '\u{16b}', '\u{308}'),
    ('\u{1e7c}', 'V', '\u{303}'), ('\u{1e7d}', 'v', '\u{303}'), ('\u{1e7e}', 'V', '\u{323}'),
    ('\u{1e7f}', 'v', '\u{323}'), ('\u{1e80}', 'W', '\u{300}'), ('\u{1e81}', 'w', '\u{300}'),
    ('\u{1e82}', 'W', '\u{301}'), ('\u{1e83}', 'w', '\u{301}'), ('\u{1e84}', 'W', '\u{308}'),
    ('\u{1e85}', 'w', '\u{308}'), ('\u{1e86}', 'W', '\u{307}'), ('\u{1e87}', 'w', '\u{307}'),
    ('\u{1e88}', 'W', '\u{323}'), ('\u{1e89}', 'w', '\u{323}'), ('\u{1e8a}', 'X', '\u{307}'),
    ('\u{1e8b}', 'x', '\u{307}'), ('\u{1e8c}', 'X', '\u{308}'), ('\u{1e8d}', 'x', '\u{308}'),
    ('\u{1e8e}', 'Y', '\u{307}'), ('\u{1e8f}', 'y', '\u{307}'), ('\u{1e90}', 'Z', '\u{302}'),
    ('\u{1e91}', 'z', '\u{302}'), ('\u{1e92}', 'Z', '\u{323}'), ('\u{1e93}', 'z', '\u{323}'),
    ('\u{1e94}', 'Z', '\u{331}'), ('\u{1e95}', 'z', '\u{331}'), ('\u{1e96}', 'h', '\u{331}'),
    ('\u{1e97}', 't', '\u{308}'), ('\u{1e98}', 'w', '\u{30a}'), ('\u{1e99}', 'y', '\u{30a}'),
    ('\u{1e9b}', '\u{17f}', '\u{307}'), ('\u{1ea0}', 'A', '\u{323}'), ('\u{1ea1}', 'a', '\u{323}'),
    ('\u{1ea2}', 'A', '\u{309}'), ('\u{1ea3}', 'a', '\u{309}'), ('\u{1ea4}', '\u{c2}', '\u{301}'),
    ('\u{1ea5}', '\u{e2}', '\u{301}'), ('\u{1ea6}', '\u{c2}', '\u{300}'),
    ('\u{1ea7}', '\u{e2}', '\u{300}'), ('\u{1ea8}', '\u{c2}', '\u{309}'),
    ('\u{1ea9}', '\u{e2}', '\u{309}'), ('\u{1eaa}', '\u{c2}', '\u{303}'),
    ('\u{1eab}', '\u{e2}', '\u{303}'), ('\u{1eac}', '\u{1ea0}', '\u{302}'),
    ('\u{1ead}', '\u{1ea1}', '\u{302}'), ('\u{1eae}', '\u{102}', '\u{301}'),
    ('\u{1eaf}', '\u{103}', '\u{301}'), ('\u{1eb0}', '\u{102}', '\u{300}'),
    ('\u{1eb1}', '\u{103}', '\u{300}'), ('\u{1eb2}', '\u{102}', '\u{309}'),
    ('\u{1eb3}', '\u{103}', '\u{309}'), ('\u{1eb4}', '\u{102}', '\u{303}'),
    ('\u{1eb5}', '\u{103}', '\u{303}'), ('\u{1eb6}', '\u{1ea0}', '\u{306}'),
    ('\u{1eb7}', '\u{1ea1}', '\u{306}'), ('\u{1eb8}', 'E', '\u{323}'), ('\u{1eb9}', 'e', '\u{323}'),
    ('\u{1eba}', 'E', '\u{309}'), ('\u{1ebb}', 'e', '\u{309}'), ('\u{1ebc}', 'E', '\u{303}'),
    ('\u{1ebd}', 'e', '\u{303}'), ('\u{1ebe}', '\u{ca}', '\u{301}'),
    ('\u{1ebf}', '\u{ea}', '\u{301}'), ('\u{1ec0}', '\u{ca}', '\u{300}'),
    ('\u{1ec1}', '\u{ea}', '\u{300}'), ('\u{1ec2}', '\u{ca}', '\u{309}'),
    ('\u{1ec3}', '\u{ea}', '\u{309}'), ('\u{1ec4}', '\u{ca}', '\u{303}'),
    ('\u{1ec5}', '\u{ea}', '\u{303}'), ('\u{1ec6}', '\u{1eb8}', '\u{302}'),
    ('\u{1ec7}', '\u{1eb9}', '\u{302}'), ('\u{1ec8}', 'I', '\u{309}'), ('\u{1ec9}', 'i', '\u{309}'),
    ('\u{1eca}', 'I', '\u{323}'), ('\u{1ecb}', 'i', '\u{323}'), ('\u{1ecc}', 'O', '\u{323}'),
    ('\u{1ecd}', 'o', '\u{323}'), ('\u{1ece}', 'O', '\u{309}'), ('\u{1ecf}', 'o', '\u{309}'),
    ('\u{1ed0}', '\u{d4}', '\u{301}'), ('\u{1ed1}', '\u{f4}', '\u{301}'),
    ('\u{1ed2}', '\u{d4}', '\u{300}'), ('\u{1ed3}', '\u{f4}', '\u{300}'),
    ('\u{1ed4}', '\u{d4}', '\u{309}'), ('\u{1ed5}', '\u{f4}', '\u{309}'),
    ('\u{1ed6}', '\u{d4}', '\u{303}'), ('\u{1ed7}', '\u{f4}', '\u{303}'),
    ('\u{1ed8}', '\u{1ecc}', '\u{302}'), ('\u{1ed9}', '\u{1ecd}', '\u{302}'),
    ('\u{1eda}', '\u{1a0}', '\u{301}'), ('\u{1edb}', '\u{1a1}', '\u{301}'),
    ('\u{1edc}', '\u{1a0}', '\u{300}'), ('\u{1edd}', '\u{1a1}', '\u{300}'),
    ('\u{1ede}', '\u{1a0}', '\u{309}'), ('\u{1edf}', '\u{1a1}', '\u{309}'),
    ('\u{1ee0}', '\u{1a0}', '\u{303}'), ('\u{1ee1}', '\u{1a1}', '\u{303}'),
    ('\u{1ee2}', '\u{1a0}', '\u{323}'), ('\u{1ee3}', '\u{1a1}', '\u{323}'),
    ('\u{1ee4}', 'U', '\u{323}'), ('\u{1ee5}', 'u', '\u{323}'), ('\u{1ee6}', 'U', '\u{309}'),
    ('\u{1ee7}', 'u', '\u{309}'), ('\u{1ee8}', '\u{1af}', '\u{301}'),
    ('\u{1ee9}', '\u{1b0}', '\u{301}'), ('\u{1eea}', '\u{1af}', '\u{300}'),
    ('\u{1eeb}', '\u{1b0}', '\u{300}'), ('\u{1eec}', '\u{1af}', '\u{309}'),
    ('\u{1eed}', '\u{1b0}', '\u{309}'), ('\u{1eee}', '\u{1af}', '\u{303}'),
    ('\u{1eef}', '\u{1b0}', '\u{303}'), ('\u{1ef0}', '\u{1af}', '\u{323}'),
    ('\u{1ef1}', '\u{1b0}', '\u{323}'), ('\u{1ef2}', 'Y', '\u{300}'), ('\u{1ef3}', 'y', '\u{300}'),
    ('\u{1ef4}', 'Y', '\u{323}'), ('\u{1ef5}', 'y', '\u{323}'), ('\u{1ef6}', 'Y', '\u{309}'),
    ('\u{1ef7}', 'y', '\u{309}'), ('\u{1ef8}', 'Y', '\u{303}'), ('\u{1ef9}', 'y', '\u{303}'),
    ('\u{1f00}', '\u{3b1}', '\u{313}'), ('\u{1f01}', '\u{3b1}', '\u{314}'),
    ('\u{1f02}', '\u{1f00}', '\u{300}'), ('\u{1f03}', '\u{1f01}', '\u{300}'),
    ('\u{1f04}', '\u{1f00}', '\u{301}'), ('\u{1f05}', '\u{1f01}', '\u{301}'),
    ('\u{1f06}', '\u{1f00}', '\u{342}'), ('\u{1f07}', '\u{1f01}', '\u{342}'),
    ('\u{1f08}', '\u{391}', '\u{313}'), ('\u{1f09}', '\u{391}', '\u{314}'),
    ('\u{1f0a}', '\u{1f08}', '\u{300}'), ('\u{1f0b}', '\u{1f09}', '\u{300}'),
    ('\u{1f0c}', '\u{1f08}', '\u{301}'), ('\u{1f0d}', '\u{1f09}', '\u{301}'),
    ('\u{1f0e}', '\u{1f08}', '\u{342}'), ('\u{1f0f}', '\u{1f09}', '\u{342}'),
    ('\u{1f10}', '\u{3b5}', '\u{313}'), ('\u{1f11}', '\u{3b5}', '\u{314}'),
    ('\u{1f12}', '\u{1f10}', '\u{300}'), ('\u{1f13}', '\u{1f11}', '\u{300}'),
    ('\u{1f14}', '\u{1f10}', '\u{301}'), ('\u{1f15}', '\u{1f11}', '\u{301}'),
    ('\u{1f18}', '\u{395}', '\u{313}'), ('\u{1f19}', '\u{395}', '\u{314}'),
    ('\u{1f1a}', '\u{1f18}', '\u{300}'), ('\u{1f1b}', '\u{1f19}', '\u{300}'),
    ('\u{1f1c}', '\u{1f18}', '\u{301}'), ('\u{1f1d}', '\u{1f19}', '\u{301}'),
    ('\u{1f20}', '\u{3b7}', '\u{313}'), ('\u{1f21}', '\u{3b7}', '\u{314}'),
    ('\u{1f22}', '\u{1f20}', '\u{300}'), ('\u{1f23}', '\u{1f21}', '\u{300}'),
    ('\u{1f24}', '\u{1f20}', '\u{301}'), ('\u{1f25}', '\u{1f21}', '\u{301}'),
    ('\u{1f26}', '\u{1f20}', '\u{342}'), ('\u{1f27}', '\u{1f21}', '\u{342}'),
    ('\u{1f28}', '\u{397}', '\u{313}'), ('\u{1f29}', '\u{397}', '\u{314}'),
    ('\u{1f2a}', '\u{1f28}', '\u{300}'), ('\u{1f2b}', '\u{1f29}', '\u{300}'),
    ('\u{1f2c}', '\u{1f28}', '\u{301}'), ('\u{1f2d}', '\u{1f29}', '\u{301}'),
    ('\u{1f2e}', '\u{1f28}', '\u{342}'), ('\u{1f2f}', '\u{1f29}', '\u{342}'),
    ('\u{1f30}', '\u{3b9}', '\u{313}'), ('\u{1f31}', '\u{3b9}', '\u{314}'),
    ('\u{1f32}', '\u{1f30}', '\u{300}'), ('\u{1f33}', '\u{1f31}', '\u{300}'),
    ('\u{1f34}', '\u{1f30}', '\u{301}'), ('\u{1f35}', '\u{1f31}', '\u{301}'),
    ('\u{1f36}', '\u{1f30}', '\u{342}'), ('\u{1f37}', '\u{1f31}', '\u{342}'),
    ('\u{1f38}', '\u{399}', '\u{313}'), ('\u{1f39}', '\u{399}', '\u{314}'),
    ('\u{1f3a}', '\u{1f38}', '\u{300}'), ('\u{1f3b}', '\u{1f39}', '\u{300}'),
    ('\u{1f3c}', '\u{1f38}', '\u{301}'), ('\u{1f3d}', '\u{1f39}', '\u{301}'),
    ('\u{1f3e}', '\u{1f38}', '\u{342}'), ('\u{1f3f}', '\u{1f39}', '\u{342}'),
    ('\u{1f40}', '\u{3bf}', '\u{313}'), ('\u{1f41}', '\u{3bf}', '\u{314}'),
    ('\u{1f42}', '\u{1f40}', '\u{300}'), ('\u{1f43}', '\u{1f41}', '\u{300}'),
    ('\u{1f44}', '\u{1f40}', '\u{301}'), ('\u{1f45}', '\u{1f41}', '\u{301}'),
    ('\u{1f48}', '\u{39f}', '\u{313}'), ('\u{1f49}', '\u{39f}', '\u{314}'),
    ('\u{1f4a}', '\u{1f48}', '\u{300}'), ('\u{1f4b}', '\u{1f49}', '\u{300}'),
    ('\u{1f4c}', '\u{1f48}', '\u{301}'), ('\u{1f4d}', '\u{1f49}', '\u{301}'),
    ('\u{1f50}', '\u{3c5}', '\u{313}'), ('\u{1f51}', '\u{3c5}', '\u{314}'),
    ('\u{1f52}', '\u{1f50}', '\u{300}'), ('\u{1f53}', '\u{1f51}', '\u{300}'),
    ('\u{1f54}', '\u{1f50}', '\u{301}'), ('\u{1f55}', '\u{1f51}', '\u{301}'),
    ('\u{1f56}', '\u{1f50}', '\u{342}'), ('\u{1f57}', '\u{1f51}', '\u{342}'),
    ('\u{1f59}', '\u{3a5}', '\u{314}'), ('\u{1f5b}', '\u{1f59}', '\u{300}'),
    ('\u{1f5d}', '\u{1f59}', '\u{301}'), ('\u{1f5f}', '\u{1f59}', '\u{342}'),
    ('\u{1f60}', '\u{3c9}', '\u{313}'), ('\u{1f61}', '\u{3c9}', '\u{314}'),
    ('\u{1f62}', '\u{1f60}', '\u{300}'), ('\u{1f63}', '\u{1f61}', '\u{300}'),
    ('\u{1f64}', '\u{1f60}', '\u{301}'), ('\u{1f65}', '\u{1f61}', '\u{301}'),
    ('\u{1f66}', '\u{1f60}', '\u{342}'), ('\u{1f67}', '\u{1f61}', '\u{342}'),
    ('\u{1f68}', '\u{3a9}', '\u{313}'), ('\u{1f69}', '\u{3a9}', '\u{314}'),
    ('\u{1f6a}', '\u{1f68}', '\u{300}'), ('\u{1f6b}', '\u{1f69}', '\u{300}'),
    ('\u{1f6c}', '\u{1f68}', '\u{301}'), ('\u{1f6d}', '\u{1f69}', '\u{301}'),
    ('\u{1f6e}', '\u{1f68}', '\u{342}'), ('\u{1f6f}', '\u{1f69}', '\u{342}'),
    ('\u{1f70}', '\u{3b1}', '\u{300}'), ('\u{1f71}', '\u{3ac}', '\0'),
    ('\u{1f72}', '\u{3b5}', '\u{300}'), ('\u{1f73}', '\u{3ad}', '\0'),
    ('\u{1f74}', '\u{3b7}', '\u{300}'), ('\u{1f75}', '\u{3ae}', '\0'),
    ('\u{1f76}', '\u{3b9}', '\u{300}'), ('\u{1f77}', '\u{3af}', '\0'),
    ('\u{1f78}', '\u{3bf}', '\u{300}'), ('\u{1f79}', '\u{3cc}', '\0'),
    ('\u{1f7a}', '\u{3c5}', '\u{300}'), ('\u{1f7b}', '\u{3cd}', '\0'),
    ('\u{1f7c}', '\u{3c9}', '\u{300}'), ('\u{1f7d}', '\u{3ce}', '\0'),
    ('\u{1f80}', '\u{1f00}', '\u{345}'), ('\u{1f81}', '\u{1f01}', '\u{345}'),
    ('\u{1f82}', '\u{1f02}', '\u{345}'), ('\u{1f83}', '\u{1f03}', '\u{345}'),
    ('\u{1f84}', '\u{1f04}', '\u{345}'), ('\u{1f85}', '\u{1f05}', '\u{345}'),
    ('\u{1f86}', '\u{1f06}', '\u{345}'), ('\u{1f87}', '\u{1f07}', '\u{345}'),
    ('\u{1f88}', '\u{1f08}', '\u{345}'), ('\u{1f89}', '\u{1f09}', '\u{345}'),
    ('\u{1f8a}', '\u{1f0a}', '\u{345}'), ('\u{1f8b}', '\u{1f0b}', '\u{345}'),
    ('\u{1f8c}', '\u{1f0c}', '\u{345}'), ('\u{1f8d}', '\u{1f0d}', '\u{345}'),
    ('\u{1f8e}', '\u{1f0e}', '\u{345}'), ('\u{1f8f}', '\u{1f0f}', '\u{345}'),
    ('\u{1f90}', '\u{1f20}', '\u{345}'), ('\u{1f91}', '\u{1f21}', '\u{345}'),
    ('\u{1f92}', '\u{1f22}', '\u{345}'), ('\u{1f93}', '\u{1f23}', '\u{345}'),
    ('\u{1f94}', '\u{1f24}', '\u{345}'), ('\u{1f95}', '\u{1f25}', '\u{345}'),
    ('\u{1f96}', '\u{1f26}', '\u{345}'), ('\u{1f97}', '\u{1f27}', '\u{345}'),
    ('\u{1f98}', '\u{1f28}', '\u{345}'), ('\u{1f99}', '\u{1f29}', '\u{345}'),
    ('\u{1f9a}', '\u{1f2a}', '\u{345}'), ('\u{1f9b}', '\u{1f2b}', '\u{345}'),
    ('\u{1f9c}', '\u{1f2c}', '\u{345}'), ('\u{1f9d}', '\u{1f2d}', '\u{345}'),
    ('\u{1f9e}', '\u{1f2e}', '\u{345}'), ('\u{1f9f}', '\u{1f2f}', '\u{345}'),
    ('\u{1fa0}', '\u{1f60}', '\u{345}'), ('\u{1fa1}', '\u{1f61}', '\u{345}'),
    ('\u{1fa2}', '\u{1f62}', '\u{345}'), ('\u{1fa3}', '\u{1f63}', '\u{345}'),
    ('\u{1fa4}', '\u{1f64}', '\u{345}'), ('\u{1fa5}', '\u{1f65}', '\u{345}'),
    ('\u{1fa6}', '\u{1f66}', '\u{345}'), ('\u{1fa7}', '\u{1f67}', '\u{345}'),
    ('\u{1fa8}', '\u{1f68}', '\u{345}'), ('\u{1fa9}', '\u{1f69}', '\u{345}'),
    ('\u{1faa}', '\u{1f6a}', '\u{345}'), ('\u{1fab}', '\u{1f6b}', '\u{345}'),
    ('\u{1fac}', '\u{1f6c}', '\u{345}'), ('\u{1fad}', '\u{1f6d}', '\u{345}'),
    ('\u{1fae}', '\u{1f6e}', '\u{345}'), ('\u{1faf}', '\u{1f6f}', '\u{345}'),
    ('\u{1fb0}', '\u{3b1}', '\u{306}'), ('\u{1fb1}', '\u{3b1}', '\u{304}'),
    ('\u{1fb2}', '\u{1f70}', '\u{345}'), ('\u{1fb3}', '\u{3b1}', '\u{345}'),
    ('\u{1fb4}', '\u{3ac}', '\u{345}'), ('\u{1fb6}', '\u{3b1}', '\u{342}'),
    ('\u{1fb7}', '\u{1fb6}', '\u{345}'), ('\u{1fb8}', '\u{391}', '\u{306}'),
    ('\u{1fb9}', '\u{391}', '\u{304}'), ('\u{1fba}', '\u{391}', '\u{300}'),
    ('\u{1fbb}', '\u{386}', '\0'), ('\u{1fbc}', '\u{391}', '\u{345}'),
    ('\u{1fbe}', '\u{3b9}', '\0'), ('\u{1fc1}', '\u{a8}', '\u{342}'),
    ('\u{1fc2}', '\u{1f74}', '\u{345}'), ('\u{1fc3}', '\u{3b7}', '\u{345}'),
    ('\u{1fc4}', '\u{3ae}', '\u{345}'), ('\u{1fc6}', '\u{3b7}', '\u{342}'),
    ('\u{1fc7}', '\u{1fc6}', '\u{345}'), ('\u{1fc8}', '\u{395}', '\u{300}'),
    ('\u{1fc9}', '\u{388}', '\0'), ('\u{1fca}', '\u{397}', '\u{300}'),
    ('\u{1fcb}', '\u{389}', '\0'), ('\u{1fcc}', '\u{397}', '\u{345}'),
    ('\u{1fcd}', '\u{1fbf}', '\u{300}'), ('\u{1fce}', '\u{1fbf}', '\u{301}'),
    ('\u{1fcf}', '\u{1fbf}', '\u{342}'), ('\u{1fd0}', '\u{3b9}', '\u{306}'),
    ('\u{1fd1}', '\u{3b9}', '\u{304}'), ('\u{1fd2}', '\u{3ca}', '\u{300}'),
    ('\u{1fd3}', '\u{390}', '\0'), ('\u{1fd6}', '\u{3b9}', '\u{342}'),
    ('\u{1fd7}', '\u{3ca}', '\u{342}'), ('\u{1fd8}', '\u{399}', '\u{306}'),
    ('\u{1fd9}', '\u{399}', '\u{304}'), ('\u{1fda}', '\u{399}', '\u{300}'),
    ('\u{1fdb}', '\u{38a}', '\0'), ('\u{1fdd}', '\u{1ffe}', '\u{300}'),
    ('\u{1fde}', '\u{1ffe}', '\u{301}'), ('\u{1fdf}', '\u{1ffe}', '\u{342}'),
    ('\u{1fe0}', '\u{3c5}', '\u{306}'), ('\u{1fe1}', '\u{3c5}', '\u{304}'),
    ('\u{1fe2}', '\u{3cb}', '\u{300}'), ('\u{1fe3}', '\u{3b0}', '\0'),
    ('\u{1fe4}', '\u{3c1}', '\u{313}'), ('\u{1fe5}', '\u{3c1}', '\u{314}'),
    ('\u{1fe6}', '\u{3c5}', '\u{342}'), ('\u{1fe7}', '\u{3cb}', '\u{342}'),
    ('\u{1fe8}', '\u{3a5}', '\u{306}'), ('\u{1fe9}', '\u{3a5}', '\u{304}'),
    ('\u{1fea}', '\u{3a5}', '\u{300}'), ('\u{1feb}', '\u{38e}', '\0'),
    ('\u{1fec}', '\u{3a1}', '\u{314}'), ('\u{1fed}', '\u{a8}', '\u{300}'),
    ('\u{1fee}', '\u{385}', '\0'), ('\u{1fef}', '`', '\0'), ('\u{1ff2}', '\u{1f7c}', '\u{345}'),
    ('\u{1ff3}', '\u{3c9}', '\u{345}'), ('\u{1ff4}', '\u{3ce}', '\u{345}'),
    ('\u{1ff6}', '\u{3c9}', '\u{342}'), ('\u{1ff7}', '\u{1ff6}', '\u{345}'),
    ('\u{1ff8}', '\u{39f}', '\u{300}'), ('\u{1ff9}', '\u{38c}', '\0'),
    ('\u{1ffa}', '\u{3a9}', '\u{300}'), ('\u{1ffb}', '\u{38f}', '\0'),
    ('\u{1ffc}', '\u{3a9}', '\u{345}'), ('\u{1ffd}', '\u{b4}', '\0'),
];
/// Entries of `CANONICAL` that never recompose (composition exclusions, singletons aside).
#[rustfmt::skip]
static COMPOSITION_EXCLUDED: &[char] = &['\u{340}', '\u{341}', '\u{343}', '\u{344}', '\u{374}', '\u{37e}', '\u{387}', '\u{1f71}', '\u{1f73}', '\u{1f75}', '\u{1f77}', '\u{1f79}', '\u{1f7b}', '\u{1f7d}', '\u{1fbb}', '\u{1fbe}', '\u{1fc9}', '\u{1fcb}', '\u{1fd3}', '\u{1fdb}', '\u{1fe3}', '\u{1feb}', '\u{1fee}', '\u{1fef}', '\u{1ff9}', '\u{1ffb}', '\u{1ffd}'];
/// Canonical combining classes of the combining marks (U+0300–U+036F, U+0483–U+0487).
#[rustfmt::skip]
static COMBINING_CLASS: &[(char, u8)] = &[
    ('\u{300}', 230), ('\u{301}', 230), ('\u{302}', 230), ('\u{303}', 230), ('\u{304}', 230),
    ('\u{305}', 230), ('\u{306}', 230), ('\u{307}', 230), ('\u{308}', 230), ('\u{309}', 230),
    ('\u{30a}', 230), ('\u{30b}', 230), ('\u{30c}', 230), ('\u{30d}', 230), ('\u{30e}', 230),
    ('\u{30f}', 230), ('\u{310}', 230), ('\u{311}', 230), ('\u{312}', 230), ('\u{313}', 230),
    ('\u{314}', 230), ('\u{315}', 232), ('\u{316}', 220), ('\u{317}', 220), ('\u{318}', 220),
    ('\u{319}', 220), ('\u{31a}', 232), ('\u{31b}', 216), ('\u{31c}', 220), ('\u{31d}', 220),
    ('\u{31e}', 220), ('\u{31f}', 220), ('\u{320}', 220), ('\u{321}', 202), ('\u{322}', 202),
    ('\u{323}', 220), ('\u{324}', 220), ('\u{325}', 220), ('\u{326}', 220), ('\u{327}', 202),
    ('\u{328}', 202), ('\u{329}', 220), ('\u{32a}', 220), ('\u{32b}', 220), ('\u{32c}', 220),
    ('\u{32d}', 220), ('\u{32e}', 220), ('\u{32f}', 220), ('\u{330}', 220), ('\u{331}', 220),
    ('\u{332}', 220), ('\u{333}', 220), ('\u{334}', 1), ('\u{335}', 1), ('\u{336}', 1),
    ('\u{337}', 1), ('\u{338}', 1), ('\u{339}', 220), ('\u{33a}', 220), ('\u{33b}', 220),
    ('\u{33c}', 220), ('\u{33d}', 230), ('\u{33e}', 230), ('\u{33f}', 230), ('\u{340}', 230),
    ('\u{341}', 230), ('\u{342}', 230), ('\u{343}', 230), ('\u{344}', 230), ('\u{345}', 240),
    ('\u{346}', 230), ('\u{347}', 220), ('\u{348}', 220), ('\u{349}', 220), ('\u{34a}', 230),
    ('\u{34b}', 230), ('\u{34c}', 230), ('\u{34d}', 220), ('\u{34e}', 220), ('\u{350}', 230),
    ('\u{351}', 230), ('\u{352}', 230), ('\u{353}', 220), ('\u{354}', 220), ('\u{355}', 220),
    ('\u{356}', 220), ('\u{357}', 230), ('\u{358}', 232), ('\u{359}', 220), ('\u{35a}', 220),
    ('\u{35b}', 230), ('\u{35c}', 233), ('\u{35d}', 234), ('\u{35e}', 234), ('\u{35f}', 233),
    ('\u{360}', 234), ('\u{361}', 234), ('\u{362}', 233), ('\u{363}', 230), ('\u{364}', 230),
    ('\u{365}', 230), ('\u{366}', 230), ('\u{367}', 230), ('\u{368}', 230), ('\u{369}', 230),
    ('\u{36a}', 230), ('\u{36b}', 230), ('\u{36c}', 230), ('\u{36d}', 230), ('\u{36e}', 230),
    ('\u{36f}', 230), ('\u{483}', 230), ('\u{484}', 230), ('\u{485}', 230), ('\u{486}', 230),
    ('\u{487}', 230),
];
/// Compatibility mappings (the NFKC form of the character) for spaces, Latin-1 symbols, general
/// punctuation, super- and subscripts, letterlike symbols, number forms, enclosed alphanumerics and
/// Latin ligatures. Sorted by `char`. Full-width ASCII (U+FF01–U+FF5E) is mapped arithmetically.
#[rustfmt::skip]
static COMPATIBILITY: &[(char, &str)] = &[
    ('\u{a0}', " "), ('\u{a8}', " \u{308}"), ('\u{aa}', "a"), ('\u{af}', " \u{304}"),
    ('\u{b2}', "2"), ('\u{b3}', "3"), ('\u{b4}', " \u{301}"), ('\u{b5}', "\u{3bc}"),
    ('\u{b8}', " \u{327}"), ('\u{b9}', "1"), ('\u{ba}', "o"), ('\u{bc}', "1\u{2044}4"),
    ('\u{bd}', "1\u{2044}2"), ('\u{be}', "3\u{2044}4"), ('\u{2002}', " "), ('\u{2003}', " "),
    ('\u{2004}', " "), ('\u{2005}', " "), ('\u{2006}', " "), ('\u{2007}', " "), ('\u{2008}', " "),
    ('\u{2009}', " "), ('\u{200a}', " "), ('\u{2011}', "\u{2010}"), ('\u{2017}', " \u{333}"),
    ('\u{2024}', "."), ('\u{2025}', ".."), ('\u{2026}', "..."), ('\u{202f}', " "),
    ('\u{2033}', "\u{2032}\u{2032}"), ('\u{2034}', "\u{2032}\u{2032}\u{2032}"),
    ('\u{2036}', "\u{2035}\u{2035}"), ('\u{2037}', "\u{2035}\u{2035}\u{2035}"), ('\u{203c}', "!!"),
    ('\u{203e}', " \u{305}"), ('\u{2047}', "??"), ('\u{2048}', "?!"), ('\u{2049}', "!?"),
    ('\u{2057}', "\u{2032}\u{2032}\u{2032}\u{2032}"), ('\u{205f}', " "), ('\u{2070}', "0"),
    ('\u{2071}', "i"), ('\u{2074}', "4"), ('\u{2075}', "5"), ('\u{2076}', "6"), ('\u{2077}', "7"),
    ('\u{2078}', "8"), ('\u{2079}', "9"), ('\u{207a}', "+"), ('\u{207b}', "\u{2212}"),
    ('\u{207c}', "="), ('\u{207d}', "("), ('\u{207e}', ")"), ('\u{207f}', "n"), ('\u{2080}', "0"),
    ('\u{2081}', "1"), ('\u{2082}', "2"), ('\u{2083}', "3"), ('\u{2084}', "4"), ('\u{2085}', "5"),
    ('\u{2086}', "6"), ('\u{2087}', "7"), ('\u{2088}', "8"), ('\u{2089}', "9"), ('\u{208a}', "+"),
    ('\u{208b}', "\u{2212}"), ('\u{208c}', "="), ('\u{208d}', "("), ('\u{208e}', ")"),
    ('\u{2090}', "a"), ('\u{2091}', "e"), ('\u{2092}', "o"), ('\u{2093}', "x"),
    ('\u{2094}', "\u{259}"), ('\u{2095}', "h"), ('\u{2096}', "k"), ('\u{2097}', "l"),
    ('\u{2098}', "m"), ('\u{2099}', "n"), ('\u{209a}', "p"), ('\u{209b}', "s"), ('\u{209c}', "t"),
    ('\u{20a8}', "Rs"), ('\u{2100}', "a/c"), ('\u{2101}', "a/s"), ('\u{2102}', "C"),
    ('\u{2103}', "\u{b0}C"), ('\u{2105}', "c/o"), ('\u{2106}', "c/u"), ('\u{2107}', "\u{190}"),
    ('\u{2109}', "\u{b0}F"), ('\u{210a}', "g"), ('\u{210b}', "H"), ('\u{210c}', "H"),
    ('\u{210d}', "H"), ('\u{210e}', "h"), ('\u{210f}', "\u{127}"), ('\u{2110}', "I"),
    ('\u{2111}', "I"), ('\u{2112}', "L"), ('\u{2113}', "l"), ('\u{2115}', "N"), ('\u{2116}', "No"),
    ('\u{2119}', "P"), ('\u{211a}', "Q"), ('\u{211b}', "R"), ('\u{211c}', "R"), ('\u{211d}', "R"),
    ('\u{2120}', "SM"), ('\u{2121}', "TEL"), ('\u{2122}', "TM"), ('\u{2124}', "Z"),
    ('\u{2128}', "Z"), ('\u{212c}', "B"), ('\u{212d}', "C"), ('\u{212f}', "e"), ('\u{2130}', "E"),
    ('\u{2131}', "F"), ('\u{2133}', "M"), ('\u{2134}', "o"), ('\u{2135}', "\u{5d0}"),
    ('\u{2136}', "\u{5d1}"), ('\u{2137}', "\u{5d2}"), ('\u{2138}', "\u{5d3}"), ('\u{2139}', "i"),
    ('\u{213b}', "FAX"), ('\u{213c}', "\u{3c0}"), ('\u{213d}', "\u{3b3}"), ('\u{213e}', "\u{393}"),
    ('\u{213f}', "\u{3a0}"), ('\u{2140}', "\u{2211}"), ('\u{2145}', "D"), ('\u{2146}', "d"),
    ('\u{2147}', "e"), ('\u{2148}', "i"), ('\u{2149}', "j"), ('\u{2150}', "1\u{2044}7"),
    ('\u{2151}', "1\u{2044}9"), ('\u{2152}', "1\u{2044}10"), ('\u{2153}', "1\u{2044}3"),
    ('\u{2154}', "2\u{2044}3"), ('\u{2155}', "1\u{2044}5"), ('\u{2156}', "2\u{2044}5"),
    ('\u{2157}', "3\u{2044}5"), ('\u{2158}', "4\u{2044}5"), ('\u{2159}', "1\u{2044}6"),
    ('\u{215a}', "5\u{2044}6"), ('\u{215b}', "1\u{2044}8"), ('\u{215c}', "3\u{2044}8"),
    ('\u{215d}', "5\u{2044}8"), ('\u{215e}', "7\u{2044}8"), ('\u{215f}', "1\u{2044}"),
    ('\u{2160}', "I"), ('\u{2161}', "II"), ('\u{2162}', "III"), ('\u{2163}', "IV"),
    ('\u{2164}', "V"), ('\u{2165}', "VI"), ('\u{2166}', "VII"), ('\u{2167}', "VIII"),
    ('\u{2168}', "IX"), ('\u{2169}', "X"), ('\u{216a}', "XI"), ('\u{216b}', "XII"),
    ('\u{216c}', "L"), ('\u{216d}', "C"), ('\u{216e}', "D"), ('\u{216f}', "M"), ('\u{2170}', "i"),
    ('\u{2171}', "ii"), ('\u{2172}', "iii"), ('\u{2173}', "iv"), ('\u{2174}', "v"),
    ('\u{2175}', "vi"), ('\u{2176}', "vii"), ('\u{2177}', "viii"), ('\u{2178}', "ix"),
    ('\u{2179}', "x"), ('\u{217a}', "xi"), ('\u{217b}', "xii"), ('\u{217c}', "l"),
    ('\u{217d}', "c"), ('\u{217e}', "d"), ('\u{217f}', "m"), ('\u{2189}', "0\u{2044}3"),
    ('\u{2460}', "1"), ('\u{2461}', "2"), ('\u{2462}', "3"), ('\u{2463}', "4"), ('\u{2464}', "5"),
    ('\u{2465}', "6"), ('\u{2466}', "7"), ('\u{2467}', "8"), ('\u{2468}', "9"), ('\u{2469}', "10"),
    ('\u{246a}', "11"), ('\u{246b}', "12"), ('\u{246c}', "13"), ('\u{246d}', "14"),
    ('\u{246e}', "15"), ('\u{246f}', "16"), ('\u{2470}', "17"), ('\u{2471}', "18"),
    ('\u{2472}', "19"), ('\u{2473}', "20"), ('\u{2474}', "(1)"), ('\u{2475}', "(2)"),
    ('\u{2476}', "(3)"), ('\u{2477}', "(4)"), ('\u{2478}', "(5)"), ('\u{2479}', "(6)"),
    ('\u{247a}', "(7)"), ('\u{247b}', "(8)"), ('\u{247c}', "(9)"), ('\u{247d}', "(10)"),
    ('\u{247e}', "(11)"), ('\u{247f}', "(12)"), ('\u{2480}', "(13)"), ('\u{2481}', "(14)"),
    ('\u{2482}', "(15)"), ('\u{2483}', "(16)"), ('\u{2484}', "(17)"), ('\u{2485}', "(18)"),
    ('\u{2486}', "(19)"), ('\u{2487}', "(20)"), ('\u{2488}', "1."), ('\u{2489}', "2."),
    ('\u{248a}', "3."), ('\u{248b}', "4."), ('\u{248c}', "5."), ('\u{248d}', "6."),
    ('\u{248e}', "7."), ('\u{248f}', "8."), ('\u{2490}', "9."), ('\u{2491}', "10."),
    ('\u{2492}', "11."), ('\u{2493}', "12."), ('\u{2494}', "13."), ('\u{2495}', "14."),
    ('\u{2496}', "15."), ('\u{2497}', "16."), ('\u{2498}', "17."), ('\u{2499}', "18."),
    ('\u{249a}', "19."), ('\u{249b}', "20."), ('\u{249c}', "(a)"), ('\u{249d}', "(b)"),
    ('\u{249e}', "(c)"), ('\u{249f}', "(d)"), ('\u{24a0}', "(e)"), ('\u{24a1}', "(f)"),
    ('\u{24a2}', "(g)"), ('\u{24a3}', "(h)"), ('\u{24a4}', "(i)"), ('\u{24a5}', "(j)"),
    ('\u{24a6}', "(k)"), ('\u{24a7}', "(l)"), ('\u{24a8}', "(m)"), ('\u{24a9}', "(n)"),
    ('\u{24aa}', "(o)"), ('\u{24ab}', "(p)"), ('\u{24ac}', "(q)"), ('\u{24ad}', "(r)"),
    ('\u{24ae}', "(s)"), ('\u{24af}', "(t)"), ('\u{24b0}', "(u)"), ('\u{24b1}', "(v)"),
    ('\u{24b2}', "(w)"), ('\u{24b3}', "(x)"), ('\u{24b4}', "(y)"), ('\u{24b5}', "(z)"),
    ('\u{24b6}', "A"), ('\u{24b7}', "B"), ('\u{24b8}', "C"), ('\u{24b9}', "D"), ('\u{24ba}', "E"),
    ('\u{24bb}', "F"), ('\u{24bc}', "G"), ('\u{24bd}', "H"), ('\u{24be}', "I"), ('\u{24bf}', "J"),
    ('\u{24c0}', "K"), ('\u{24c1}', "L"), ('\u{24c2}', "M"), ('\u{24c3}', "N"), ('\u{24c4}', "O"),
    ('\u{24c5}', "P"), ('\u{24c6}', "Q"), ('\u{24c7}', "R"), ('\u{24c8}', "S"), ('\u{24c9}', "T"),
    ('\u{24ca}', "U"), ('\u{24cb}', "V"), ('\u{24cc}', "W"), ('\u{24cd}', "X"), ('\u{24ce}', "Y"),
    ('\u{24cf}', "Z"), ('\u{24d0}', "a"), ('\u{24d1}', "b"), ('\u{24d2}', "c"), ('\u{24d3}', "d"),
    ('\u{24d4}', "e"), ('\u{24d5}', "f"), ('\u{24d6}', "g"), ('\u{24d7}', "h"), ('\u{24d8}', "i"),
    ('\u{24d9}', "j"), ('\u{24da}', "k"), ('\u{24db}', "l"), ('\u{24dc}', "m"), ('\u{24dd}', "n"),
    ('\u{24de}', "o"), ('\u{24df}', "p"), ('\u{24e0}', "q"), ('\u{24e1}', "r"), ('\u{24e2}', "s"),
    ('\u{24e3}', "t"), ('\u{24e4}', "u"), ('\u{24e5}', "v"), ('\u{24e6}', "w"), ('\u{24e7}', "x"),
    ('\u{24e8}', "y"), ('\u{24e9}', "z"), ('\u{24ea}', "0"), ('\u{3000}', " "), ('\u{fb00}', "ff"),
    ('\u{fb01}', "fi"), ('\u{fb02}', "fl"), ('\u{fb03}', "ffi"), ('\u{fb04}', "ffl"),
    ('\u{fb05}', "st"), ('\u{fb06}', "st"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_resolve_to_cwd() {
        let cwd = Path::new("/work/project");
        assert_eq!(
            resolve_to_cwd("a/b.txt", cwd),
            PathBuf::from("/work/project/a/b.txt")
        );
        assert_eq!(
            resolve_to_cwd("@src/x.rs", cwd),
            PathBuf::from("/work/project/src/x.rs")
        );
        assert_eq!(
            resolve_to_cwd("/etc/./hosts", cwd),
            PathBuf::from("/etc/hosts")
        );
        assert_eq!(resolve_to_cwd("../up/", cwd), PathBuf::from("/work/up"));
        assert_eq!(
            resolve_to_cwd("my\u{a0}file\u{202f}name.txt", cwd),
            PathBuf::from("/work/project/my file name.txt")
        );
        assert_eq!(
            resolve_to_cwd("file:///tmp/a%20b", cwd),
            PathBuf::from("/tmp/a b")
        );
        assert_eq!(resolve_to_cwd("", cwd), PathBuf::from("/work/project"));
        if let Some(home) = home_dir() {
            assert_eq!(resolve_to_cwd("~", cwd), home);
            assert_eq!(resolve_to_cwd("~/x/y", cwd), home.join("x/y"));
            assert_eq!(resolve_to_cwd("@~/x", cwd), home.join("x"));
        }
    }

    #[test]
    fn screenshot_variant_uses_narrow_no_break_space() {
        assert_eq!(
            screenshot_variant("/a/Shot 10.00.01 am.png"),
            "/a/Shot 10.00.01\u{202f}am.png"
        );
        assert_eq!(screenshot_variant("/a/b PMx"), "/a/b PMx");
    }

    #[test]
    fn read_path_falls_back_to_macos_variants() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-path-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Capture d\u{2019}e\u{301}cran.png"), b"x").unwrap();
        std::fs::write(dir.join("Shot 1\u{202f}PM.png"), b"x").unwrap();
        assert_eq!(
            resolve_read_path("Capture d'\u{e9}cran.png", &dir),
            dir.join("Capture d\u{2019}e\u{301}cran.png")
        );
        assert_eq!(
            resolve_read_path("Shot 1 PM.png", &dir),
            dir.join("Shot 1\u{202f}PM.png")
        );
        assert_eq!(resolve_read_path("none.png", &dir), dir.join("none.png"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn node_error_texts() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            node_error(&e, "access", Some(Path::new("/x/y"))),
            "ENOENT: no such file or directory, access '/x/y'"
        );
        let e = io::Error::from_raw_os_error(libc::EISDIR);
        assert_eq!(
            node_error(&e, "read", None),
            "EISDIR: illegal operation on a directory, read"
        );
        assert_eq!(node_error_code(&e), "EISDIR");
    }

    #[test]
    fn normalization_subset() {
        assert_eq!(nfd("\u{e9}t\u{e9}"), "e\u{301}te\u{301}");
        assert_eq!(nfd("\u{1ea5}"), "a\u{302}\u{301}");
        assert_eq!(nfkc("e\u{301}"), "\u{e9}");
        assert_eq!(nfkc("a\u{302}\u{301}"), "\u{1ea5}");
        assert_eq!(
            nfkc("\u{fb01}le \u{ff21}\u{ff42} x\u{b2} \u{2026} \u{a0}|\u{3000}|"),
            "file Ab x2 ...  | |"
        );
        assert_eq!(nfkc("\u{2011}"), "\u{2010}");
        assert_eq!(nfkc("\u{2460}\u{2122}"), "1TM");
        assert_eq!(nfkc("plain ascii"), "plain ascii");
        // A mark blocked by another of the same class stays separate.
        assert_eq!(nfkc("a\u{301}\u{301}"), "\u{e1}\u{301}");
        // Marks are put in canonical order before composing: dot below (220) before circumflex (230).
        assert_eq!(nfkc("a\u{302}\u{323}"), "\u{1ead}");
    }
}
