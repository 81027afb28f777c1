//! Node's `fs` error messages, as pi's file errors reach clients: `<CODE>: <description>,
//! <syscall> '<path>'` with libuv's names and descriptions (`ENOENT: no such file or directory,
//! open 'out/x.html'`), and the argument error Node raises before any system call for a path
//! holding a NUL byte (`ERR_INVALID_ARG_VALUE`, quoting the path as `util.inspect` does).

use std::io;
use std::path::Path;

use super::utf16;

/// The code of an I/O error as Node names it (`ENOENT`, `EACCES`, …).
pub(crate) fn node_error_code(err: &io::Error) -> String {
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
pub(crate) fn node_error(err: &io::Error, syscall: &str, path: Option<&Path>) -> String {
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

/// `ENOENT: no such file or directory, open '/x'`, as Node words file errors, chosen by the
/// error's [`std::io::ErrorKind`] rather than its errno (unlike [`node_error`]): not found and
/// permission denied carry the syscall and path, a directory is `EISDIR: illegal operation on a
/// directory, read` (no path, as `readFileSync` reports it), and any other error keeps Rust's
/// own text followed by `, <syscall> '<path>'`. Used for reading a skill file.
pub(crate) fn node_error_by_kind(e: &std::io::Error, syscall: &str, path: &Path) -> String {
    use std::io::ErrorKind;
    let p = path.display();
    match e.kind() {
        ErrorKind::NotFound => format!("ENOENT: no such file or directory, {syscall} '{p}'"),
        ErrorKind::PermissionDenied => format!("EACCES: permission denied, {syscall} '{p}'"),
        ErrorKind::IsADirectory => "EISDIR: illegal operation on a directory, read".to_string(),
        _ => format!("{e}, {syscall} '{p}'"),
    }
}

/// Node's error for a path holding a NUL byte, which it rejects before any system call
/// (`ERR_INVALID_ARG_VALUE`).
pub(crate) fn nul_path_message(path: &str) -> String {
    let mut inspected = inspect_string(path);
    if utf16::len(&inspected) > 128 {
        inspected = utf16::prefix(&inspected, 128).to_string() + "...";
    }
    format!(
        "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received {inspected}"
    )
}

/// `util.inspect` of a string, as Node quotes a value in an argument error: single quotes
/// (double quotes or backticks when the text holds single quotes), control characters and
/// the backslash escaped, and a long multi-line string split after each newline.
fn inspect_string(s: &str) -> String {
    if utf16::len(s) > 124 && s.contains('\n') {
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

/// `s` in the quotes `util.inspect` picks (see [`inspect_string`]), with its escapes.
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

#[cfg(test)]
mod tests {
    use super::*;

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
