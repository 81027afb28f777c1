//! Reading a session file (`session-format.md` §2–§3, §8): streamed line by line, malformed lines
//! skipped (a line torn by a crash is noted on stderr, never fatal), old versions migrated in
//! memory and the file rewritten, as pi 1.6.0 does.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::entry::SessionHeader;
use super::entry::{Entry, EntryKind};
use super::migrate;

/// Why a session file could not be loaded. The `Display` text is what a client sees.
#[derive(Debug)]
pub enum LoadError {
    /// The path does not exist.
    NotFound(PathBuf),
    /// The file exists but could not be read (permissions, a directory, I/O error): `syscall`
    /// is the call that failed (`open` or `read`), named in the text as Node does.
    Unreadable {
        path: PathBuf,
        syscall: &'static str,
        source: std::io::Error,
    },
    /// The file has content, but its first valid line is not a session header.
    NotASession(PathBuf),
    /// The path is a FIFO, a device or a socket (reading one could block forever or have side
    /// effects, and writing a header into it would lose it).
    NotAFile(PathBuf),
    /// The file was migrated from an old version but could not be rewritten.
    Rewrite {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::NotFound(p) => write!(f, "Session file not found: {}", p.display()),
            // As pi (Node's fs errors): `EACCES: permission denied, open '<path>'`, or for a
            // read `EISDIR: illegal operation on a directory, read` (no path).
            LoadError::Unreadable {
                path,
                syscall,
                source,
            } => {
                let path = (*syscall == "open").then_some(path.as_path());
                f.write_str(&crate::js::fs_error::node_error(source, syscall, path))
            }
            LoadError::NotASession(p) => {
                write!(f, "Session file is not a valid pi session: {}", p.display())
            }
            LoadError::NotAFile(p) => {
                write!(f, "Session file is not a regular file: {}", p.display())
            }
            LoadError::Rewrite { path, source } => write!(
                f,
                "Cannot rewrite migrated session file {}: {source}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Unreadable { source, .. } | LoadError::Rewrite { source, .. } => {
                Some(source)
            }
            _ => None,
        }
    }
}

/// What a session file holds.
#[derive(Debug)]
pub struct LoadedFile {
    pub header: SessionHeader,
    /// The entries in file order (header and later `session` lines excluded).
    pub entries: Vec<Entry>,
    /// True when the file was an older version, migrated here.
    pub migrated: bool,
    /// Lines that were not JSON objects (or not valid JSON) and were skipped.
    pub skipped_lines: usize,
    /// False when the last byte of the file is not a newline (a torn write, or a file written by
    /// hand); the next append must start a new line first.
    pub ends_with_newline: bool,
    /// True for a file of zero bytes (pi turns it into a fresh session).
    pub empty: bool,
}

/// Reads and parses the header line only (for discovery: id lookups, `--continue`). Malformed
/// lines before it are skipped; `Ok(None)` when the first valid line is not a header.
pub fn read_header(path: &Path) -> Result<Option<SessionHeader>, LoadError> {
    let file = open(path)?;
    let mut reader = BufReader::with_capacity(16 * 1024, file);
    let mut buf = Vec::new();
    // Bounded like pi's discovery scan (1 MiB before the header).
    let mut scanned = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| unreadable(path, source))?;
        if n == 0 || scanned > 1024 * 1024 {
            return Ok(None);
        }
        scanned += n;
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(m)) => return Ok(parse_header(&m)),
            Ok(_) => return Ok(None),
            Err(_) => continue,
        }
    }
}

/// Opens a session file for reading. Only a regular file (or a directory, for pi's error text)
/// is accepted, and that is checked on the open descriptor without blocking: `O_NONBLOCK` makes
/// opening a FIFO without a writer return at once (a plain open waits for a writer forever),
/// `O_NOCTTY` keeps a terminal from becoming the controlling one. Reads of a regular file
/// ignore `O_NONBLOCK`.
fn open(path: &Path) -> Result<File, LoadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    match opened {
        Ok(f) => {
            let meta = f.metadata().map_err(|source| unreadable(path, source))?;
            if meta.is_dir() {
                // Opening a directory succeeds; pi's first read of it fails.
                return Err(unreadable(
                    path,
                    std::io::Error::from_raw_os_error(libc::EISDIR),
                ));
            }
            if !meta.is_file() {
                return Err(LoadError::NotAFile(path.to_path_buf()));
            }
            Ok(f)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(LoadError::NotFound(path.to_path_buf()))
        }
        Err(source) => Err(LoadError::Unreadable {
            path: path.to_path_buf(),
            syscall: "open",
            source,
        }),
    }
}

/// A failed read of an open session file.
fn unreadable(path: &Path, source: std::io::Error) -> LoadError {
    LoadError::Unreadable {
        path: path.to_path_buf(),
        syscall: "read",
        source,
    }
}

/// `{"type":"session","id":<string>,...}` → the header; anything else → `None`.
pub fn parse_header(m: &Map<String, Value>) -> Option<SessionHeader> {
    if m.get("type").and_then(Value::as_str) != Some("session") {
        return None;
    }
    let id = m.get("id")?.as_str()?.to_string();
    let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    Some(SessionHeader {
        version: migrate::header_version(m),
        id,
        timestamp: s("timestamp").unwrap_or_default(),
        cwd: s("cwd").unwrap_or_default(),
        parent_session: s("parentSession"),
    })
}

/// A malformed line waiting to be reported (so that the last one can be reported as torn).
struct Skipped {
    line_no: usize,
}

/// Loads a whole session file, streaming it (memory ≈ the file's size plus a little per entry).
/// Migrates old versions in memory and rewrites the file when it did (as pi does).
pub fn load_file(path: &Path) -> Result<LoadedFile, LoadError> {
    let file = open(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Ok(LoadedFile {
            header: SessionHeader::default(),
            entries: Vec::new(),
            migrated: false,
            skipped_lines: 0,
            ends_with_newline: true,
            empty: true,
        });
    }
    let mut reader = BufReader::with_capacity(1024 * 1024, file);
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut header: Option<(SessionHeader, Map<String, Value>)> = None;
    // Rough capacity guess (about 1 KB per entry) to avoid most reallocations of the list.
    let mut entries: Vec<Entry> = Vec::with_capacity((size / 1024).min(1 << 20) as usize);
    // Old versions are migrated on whole objects.
    let mut old_lines: Vec<Map<String, Value>> = Vec::new();
    let mut skipped_lines = 0usize;
    let mut pending_skip: Option<Skipped> = None;
    let mut ends_with_newline = true;
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| unreadable(path, source))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        ends_with_newline = buf.last() == Some(&b'\n');
        if ends_with_newline {
            buf.pop();
        }
        if let Some(s) = pending_skip.take() {
            eprintln!(
                "pi-rpc: skipping malformed line {} of session file {}",
                s.line_no,
                path.display()
            );
        }
        let line: std::borrow::Cow<str> = match std::str::from_utf8(&buf) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(&buf),
        };
        if line.trim().is_empty() {
            continue;
        }
        let Some((hdr, _)) = header.as_ref() else {
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(m)) => match parse_header(&m) {
                    Some(h) => header = Some((h, m)),
                    None => return Err(LoadError::NotASession(path.to_path_buf())),
                },
                Ok(_) => return Err(LoadError::NotASession(path.to_path_buf())),
                Err(_) => {
                    skipped_lines += 1;
                    pending_skip = Some(Skipped { line_no });
                }
            }
            continue;
        };
        if hdr.version >= migrate::CURRENT_VERSION {
            match Entry::parse(&line) {
                Ok(e) if e.kind() == EntryKind::Session => {}
                Ok(e) => entries.push(e),
                Err(_) => {
                    skipped_lines += 1;
                    pending_skip = Some(Skipped { line_no });
                }
            }
        } else {
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(m)) => {
                    if m.get("type").and_then(Value::as_str) != Some("session") {
                        old_lines.push(m);
                    }
                }
                _ => {
                    skipped_lines += 1;
                    pending_skip = Some(Skipped { line_no });
                }
            }
        }
    }
    if let Some(s) = pending_skip {
        if ends_with_newline {
            eprintln!(
                "pi-rpc: skipping malformed line {} of session file {}",
                s.line_no,
                path.display()
            );
        } else {
            eprintln!(
                "pi-rpc: ignoring the incomplete last line ({}) of session file {} (probably cut off by a crash)",
                s.line_no,
                path.display()
            );
        }
    }
    let Some((header, header_map)) = header else {
        return Err(LoadError::NotASession(path.to_path_buf()));
    };
    if header.version >= migrate::CURRENT_VERSION {
        entries.shrink_to_fit();
        return Ok(LoadedFile {
            header,
            entries,
            migrated: false,
            skipped_lines,
            ends_with_newline,
            empty: false,
        });
    }

    let mut lines = Vec::with_capacity(old_lines.len() + 1);
    lines.push(header_map);
    lines.extend(old_lines);
    migrate::migrate_to_current(&mut lines);
    let header_map = lines.remove(0);
    let header = parse_header(&header_map).unwrap_or(header);
    let entries: Vec<Entry> = lines.into_iter().map(Entry::from_map).collect();
    rewrite(path, &header_map, &entries)?;
    Ok(LoadedFile {
        header,
        entries,
        migrated: true,
        skipped_lines,
        ends_with_newline: true,
        empty: false,
    })
}

/// Replaces the file with the header and entries (written beside it, then renamed over it, so a
/// crash leaves either the old or the new file).
fn rewrite(path: &Path, header: &Map<String, Value>, entries: &[Entry]) -> Result<(), LoadError> {
    let err = |source| LoadError::Rewrite {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".migrating-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        write_lines(
            &mut f,
            &crate::protocol::framing::encode(header),
            entries.iter().map(Entry::raw),
        )?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Writes `first` and then every line of `rest`, each followed by a newline, in batches of whole
/// lines (a torn write can only cut the last line of a batch).
pub fn write_lines<'a>(
    out: &mut impl Write,
    first: &str,
    rest: impl Iterator<Item = &'a str>,
) -> std::io::Result<()> {
    const BATCH: usize = 256 * 1024;
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH);
    buf.extend_from_slice(first.as_bytes());
    buf.push(b'\n');
    for line in rest {
        if !buf.is_empty() && buf.len() + line.len() + 1 > BATCH {
            out.write_all(&buf)?;
            buf.clear();
        }
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
    }
    if !buf.is_empty() {
        out.write_all(&buf)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, content: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pi-rpc-load-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, content).unwrap();
        p
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"sid-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

    #[test]
    fn torn_last_line_is_skipped_not_fatal() {
        let content = format!(
            "{HEADER}\n{}\n{}",
            r#"{"type":"model_change","id":"a","parentId":null,"timestamp":"t","provider":"p","modelId":"m"}"#,
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","cont"#
        );
        let p = temp_file("s.jsonl", &content);
        let f = load_file(&p).unwrap();
        assert_eq!(f.header.id, "sid-1");
        assert_eq!(f.header.cwd, "/w");
        assert_eq!(f.entries.len(), 1);
        assert_eq!(f.skipped_lines, 1);
        assert!(!f.ends_with_newline);
        assert!(!f.migrated);
    }

    #[test]
    fn malformed_lines_and_blank_lines_in_the_middle_are_skipped() {
        let content = format!(
            "garbage\n\n{HEADER}\r\nnot json\n[1]\n{}\n   \n{}\n",
            r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"a","label":"x"}"#,
            r#"{"type":"session","version":3,"id":"other"}"#
        );
        let p = temp_file("s.jsonl", &content);
        let f = load_file(&p).unwrap();
        assert_eq!(f.entries.len(), 1);
        assert_eq!(f.entries[0].id(), "a");
        assert_eq!(f.skipped_lines, 3);
        assert!(f.ends_with_newline);
    }

    #[test]
    fn errors_name_the_problem() {
        let missing = std::env::temp_dir().join("pi-rpc-definitely-missing.jsonl");
        let e = load_file(&missing).unwrap_err();
        assert!(matches!(e, LoadError::NotFound(_)));
        assert!(e.to_string().starts_with("Session file not found: "));

        let p = temp_file("x.jsonl", "{\"type\":\"message\",\"id\":\"a\"}\n");
        let e = load_file(&p).unwrap_err();
        assert!(matches!(e, LoadError::NotASession(_)));
        assert_eq!(
            e.to_string(),
            format!("Session file is not a valid pi session: {}", p.display())
        );

        let p = temp_file("y.jsonl", "\n\n");
        assert!(matches!(load_file(&p), Err(LoadError::NotASession(_))));

        let dir = p.parent().unwrap();
        let e = load_file(dir).unwrap_err();
        assert!(matches!(e, LoadError::Unreadable { .. }));
        assert_eq!(
            e.to_string(),
            "EISDIR: illegal operation on a directory, read"
        );

        let p = temp_file("z.jsonl", "");
        assert!(load_file(&p).unwrap().empty);
    }

    #[test]
    fn old_versions_are_migrated_and_rewritten() {
        let content = concat!(
            r#"{"type":"session","id":"old","timestamp":"t","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","timestamp":"t1","message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"message","timestamp":"t2","message":{"role":"hookMessage","content":"h"}}"#,
            "\n"
        );
        let p = temp_file("old.jsonl", content);
        let f = load_file(&p).unwrap();
        assert!(f.migrated);
        assert_eq!(f.header.version, 3);
        assert_eq!(f.entries.len(), 2);
        assert_eq!(f.entries[1].parent_id(), Some(f.entries[0].id()));
        assert_eq!(f.entries[1].message_role(), Some("custom"));
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"type":"session","id":"old","timestamp":"t","cwd":"/w","version":3}"#
        );
        assert_eq!(lines[1], f.entries[0].raw());
        assert_eq!(lines[2], f.entries[1].raw());
        // Loading again is a no-op.
        let again = load_file(&p).unwrap();
        assert!(!again.migrated);
        assert_eq!(again.entries, f.entries);
    }

    #[test]
    fn header_only_reads_the_first_valid_line() {
        let p = temp_file("h.jsonl", &format!("oops\n{HEADER}\n{{\"type\":\"x\"}}\n"));
        let h = read_header(&p).unwrap().unwrap();
        assert_eq!(h.id, "sid-1");
        let p = temp_file("n.jsonl", "{\"type\":\"x\"}\n");
        assert!(read_header(&p).unwrap().is_none());
    }
}
