//! Small helpers shared by several modules: ISO-8601 timestamps, path expansion, and the two
//! file operations credential files need (a bounded read that never blocks on a FIFO, a private
//! atomic write). (JavaScript's number and JSON output live in [`crate::js`].)

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes our own writers produced (UTF-8 by construction) as a `String`, without a copy; any
/// invalid sequence (never expected) becomes U+FFFD instead of failing.
pub fn utf8_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Milliseconds since the Unix epoch (the timestamp unit of messages).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-11-29T23:36:15.482Z` for a Unix time in milliseconds (JavaScript's `toISOString`).
pub fn iso_from_ms(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let millis = ms % 1000;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        y,
        m,
        d,
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        millis
    )
}

/// The current time as an ISO-8601 string with milliseconds and `Z`.
pub fn now_iso() -> String {
    iso_from_ms(now_ms())
}

/// Parses `YYYY-MM-DDTHH:MM:SS(.mmm)Z` back to Unix milliseconds; `None` when malformed.
pub fn ms_from_iso(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse::<i64>().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut ms = 0i64;
    if b.get(19) == Some(&b'.') {
        let end = s[20..]
            .find(|c: char| !c.is_ascii_digit())
            .map(|i| 20 + i)?;
        let frac = &s[20..end];
        let digits: String = frac.chars().chain("000".chars()).take(3).collect();
        ms = digits.parse().ok()?;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let total = ((days * 86_400 + h * 3600 + mi * 60 + se) * 1000) + ms;
    u64::try_from(total).ok()
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The user's home directory (`$HOME`), if set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Expands a leading `~` or `~/` to the home directory.
pub fn expand_tilde(p: &str) -> PathBuf {
    if p == "~" {
        if let Some(h) = home_dir() {
            return h;
        }
    } else if let Some(rest) = p.strip_prefix("~/") {
        if let Some(h) = home_dir() {
            return h.join(rest);
        }
    }
    PathBuf::from(p)
}

/// Resolves `p` against `base` unless it is absolute; `~` is expanded first. The result is
/// lexically normalized (`.` and `..` removed) without touching the file system.
pub fn resolve_path(base: &Path, p: &str) -> PathBuf {
    let expanded = expand_tilde(p);
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    };
    normalize_lexically(&joined)
}

/// Removes `.` components and folds `..` into its parent, like Node's `path.resolve`.
pub fn normalize_lexically(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Reads a small file whole, at most `max` bytes (more is an `InvalidData` error): only a
/// regular file, checked on a descriptor opened without blocking (a FIFO would block `open`
/// forever, `/dev/zero` would never end). For files a user names (credential token files).
pub fn read_small_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// Replaces `path` with `bytes` atomically (a private temporary file beside it, synced, then
/// renamed over it), readable by the owner only: readers never see a half-written file.
pub fn write_private_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), now_ms()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        let ms = 1_795_995_375_567;
        let iso = iso_from_ms(ms);
        assert_eq!(iso, "2026-11-29T23:36:15.567Z");
        assert_eq!(ms_from_iso(&iso), Some(ms));
        assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            resolve_path(Path::new("/a/b"), "../c/./d"),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(resolve_path(Path::new("/a"), "/x/y"), PathBuf::from("/x/y"));
    }

    #[test]
    fn small_files_are_read_whole_and_only_regular_ones() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-util-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        write_private_atomically(&file, b"abc").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read_small_file(&file, 3).unwrap(), b"abc");
        assert_eq!(
            read_small_file(&file, 2).unwrap_err().kind(),
            std::io::ErrorKind::InvalidData
        );
        write_private_atomically(&file, b"replaced").unwrap();
        assert_eq!(read_small_file(&file, 100).unwrap(), b"replaced");
        // A FIFO without a writer blocked the read forever.
        let fifo = dir.join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if status.is_ok_and(|s| s.success()) {
            assert_eq!(
                read_small_file(&fifo, 100).unwrap_err().kind(),
                std::io::ErrorKind::InvalidInput
            );
        }
        assert!(read_small_file(Path::new("/dev/zero"), 100).is_err());
        assert!(read_small_file(&dir, 100).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
