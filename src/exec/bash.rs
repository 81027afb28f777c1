//! The RPC `bash` command (rpc-protocol.md §3.8, tools.md §4.3): the host's own shell command,
//! run with the same shell and process handling as the bash tool, its output sanitized (ANSI
//! escapes, `\r` and control characters removed) before it is streamed as
//! `bash_execution_update` deltas and stored in the result.
//!
//! Memory stays bounded: a rolling window of about 100 KB of text is kept; once more than 50 KB
//! has been produced the whole (sanitized) output also goes to `<tmpdir>/pi-bash-<hex>.log`.
//! If that file cannot be created or written (a full `$TMPDIR`) it is deleted and no
//! `fullOutputPath` is reported: the output in the result comes from memory anyway.
//!
//! Also here, shared with the bash tool: the streaming UTF-8 decoder and the temp log file.

use std::borrow::Cow;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::process::{self, ShellCommand};
use crate::cancel::CancelToken;
use crate::js::utf16;
use crate::truncate::{truncate_tail, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// One RPC `bash` command.
#[derive(Clone, Debug)]
pub struct BashRequest {
    /// The command as the client sent it (the prefix is added here).
    pub command: String,
    /// The session cwd.
    pub cwd: PathBuf,
    /// Settings `shellPath`.
    pub shell_path: Option<String>,
    /// Settings `shellCommandPrefix`.
    pub shell_command_prefix: Option<String>,
    /// Where the full-output log goes (`$TMPDIR`, else the system temp dir).
    pub temp_dir: PathBuf,
}

/// pi's `BashResult`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BashResult {
    /// The (tail-truncated, sanitized) output, without any notice.
    pub output: String,
    /// Absent when cancelled.
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    /// The rolling window dropped something or the tail truncation applied.
    pub truncated: bool,
    pub full_output_path: Option<PathBuf>,
}

/// Runs an RPC `bash` command to completion (or until `cancel` fires). `on_chunk` receives each
/// sanitized, non-empty delta in order. `Err` is a setup failure (shell or cwd missing, spawn
/// error); a non-zero exit is not an error.
pub fn run_bash(
    req: &BashRequest,
    cancel: &CancelToken,
    on_chunk: &mut dyn FnMut(&str),
) -> Result<BashResult, String> {
    let script = process::with_prefix(req.shell_command_prefix.as_deref(), &req.command);
    if cancel.is_cancelled() {
        return Ok(BashResult {
            cancelled: true,
            ..BashResult::default()
        });
    }
    let shell = process::resolve_shell(req.shell_path.as_deref())?;
    process::check_cwd(&req.cwd)?;
    let cmd = ShellCommand {
        shell: &shell,
        script: &script,
        cwd: &req.cwd,
        env: &[],
    };
    let mut collector = RpcOutput::new(&req.temp_dir, on_chunk);
    let outcome = process::run(&cmd, cancel, None, &mut collector)?;
    let mut result = collector.finish();
    result.cancelled = cancel.is_cancelled() || outcome.cancelled;
    result.exit_code = if result.cancelled {
        None
    } else {
        outcome.exit_code
    };
    Ok(result)
}

/// Window of sanitized text kept in memory (in UTF-16 units, as pi counts it).
const ROLLING_WINDOW: usize = DEFAULT_MAX_BYTES * 2;

/// Collects the sanitized output of an RPC bash command.
struct RpcOutput<'a> {
    on_chunk: &'a mut dyn FnMut(&str),
    temp_dir: PathBuf,
    decoder: Utf8Decoder,
    pending_ansi: String,
    chunks: std::collections::VecDeque<String>,
    window_units: usize,
    discarded: bool,
    raw_bytes: usize,
    log: Option<TempLog>,
}

impl<'a> RpcOutput<'a> {
    fn new(temp_dir: &Path, on_chunk: &'a mut dyn FnMut(&str)) -> Self {
        RpcOutput {
            on_chunk,
            temp_dir: temp_dir.to_path_buf(),
            decoder: Utf8Decoder::default(),
            pending_ansi: String::new(),
            chunks: std::collections::VecDeque::new(),
            window_units: 0,
            discarded: false,
            raw_bytes: 0,
            log: None,
        }
    }

    fn ensure_log(&mut self) {
        if self.log.is_some() {
            return;
        }
        let mut log = TempLog::create(&self.temp_dir);
        for c in &self.chunks {
            log.write(c.as_bytes());
        }
        self.log = Some(log);
    }

    fn append_text(&mut self, raw: &str) {
        let text = sanitize_output(raw);
        if text.is_empty() {
            return;
        }
        if self.raw_bytes > DEFAULT_MAX_BYTES {
            self.ensure_log();
        }
        if let Some(log) = &mut self.log {
            log.write(text.as_bytes());
        }
        self.window_units += utf16::len(&text);
        (self.on_chunk)(&text);
        self.chunks.push_back(text);
        while self.window_units > ROLLING_WINDOW && self.chunks.len() > 1 {
            if let Some(removed) = self.chunks.pop_front() {
                self.window_units -= utf16::len(&removed);
                self.discarded = true;
            }
        }
    }

    fn finish(mut self) -> BashResult {
        let rest = std::mem::take(&mut self.pending_ansi) + &self.decoder.finish();
        self.append_text(&rest);
        let full: String = self.chunks.iter().map(String::as_str).collect();
        let tr = truncate_tail(&full, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        if tr.truncated {
            self.ensure_log();
        }
        let full_output_path = self.log.take().and_then(TempLog::close);
        BashResult {
            output: if tr.truncated { tr.content } else { full },
            exit_code: None,
            cancelled: false,
            truncated: self.discarded || tr.truncated,
            full_output_path,
        }
    }
}

impl process::OutputSink for RpcOutput<'_> {
    fn on_output(&mut self, chunk: &[u8]) {
        self.raw_bytes += chunk.len();
        let decoded = self.decoder.decode(chunk);
        let joined = std::mem::take(&mut self.pending_ansi) + &decoded;
        let (complete, pending) = split_incomplete_ansi_suffix(&joined);
        self.pending_ansi = pending.to_string();
        let complete = complete.to_string();
        self.append_text(&complete);
    }
}

// ---------------------------------------------------------------------------------------------
// Sanitization

/// CSI and related sequences: ESC/C1 introducer, optional intermediates and parameters.
const CSI_START: &str =
    r"(?:(?:\x1B\[|\x{9B})[<=>]|[\x1B\x{9B}][\[\]()#;?]*)(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?";

/// A complete ANSI escape sequence (OSC up to its string terminator, or CSI with its final byte).
/// `None` only if the constant pattern failed to compile (tests rule that out): no stripping.
fn ansi_regex() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        let pattern = format!(
            r"(?:\x1B\](?s:.)*?(?:\x07|\x1B\\|\x{{9C}}))|{CSI_START}[0-9A-PR-TZcf-nq-uy=><~]"
        );
        Regex::new(&pattern).ok()
    })
    .as_ref()
}

/// An unfinished escape sequence at the very end of the text (OSC without its terminator, a
/// trailing ESC that may start `ESC \`, or CSI without its final byte).
fn unfinished_ansi_regex() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        let pattern = format!(
            r"(?:\x1B\](?:[^\x07\x{{9C}}\x1B]|\x1B+[^\x07\x{{9C}}\x1B\\])*\x1B*|{CSI_START})$"
        );
        Regex::new(&pattern).ok()
    })
    .as_ref()
}

/// Longest unfinished sequence held back while streaming (UTF-16 units, as pi).
const MAX_PENDING_ANSI: usize = 256;

/// Splits streamed text into the part that can be sanitized now and a trailing unfinished
/// escape sequence to prepend to the next chunk.
pub fn split_incomplete_ansi_suffix(value: &str) -> (&str, &str) {
    if !value.contains(['\u{1b}', '\u{9b}']) {
        return (value, "");
    }
    // Window start: the last MAX_PENDING_ANSI UTF-16 units.
    let window_start = value.len() - utf16::suffix(value, MAX_PENDING_ANSI).len();
    match unfinished_ansi_regex().and_then(|re| re.find(&value[window_start..])) {
        Some(m) => value.split_at(window_start + m.start()),
        None => (value, ""),
    }
}

/// Removes complete ANSI escape sequences.
pub fn strip_ansi(value: &str) -> Cow<'_, str> {
    if !value.contains(['\u{1b}', '\u{9b}']) {
        return Cow::Borrowed(value);
    }
    match ansi_regex() {
        Some(re) => re.replace_all(value, ""),
        None => Cow::Borrowed(value),
    }
}

/// Whether pi drops this character from shell output: C0 controls except tab, LF and CR, and
/// the interlinear annotation characters U+FFF9–U+FFFB.
fn is_dropped_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fff9}'..='\u{fffb}')
}

/// The RPC bash command's sanitization: ANSI escapes stripped, the listed control characters
/// dropped, every `\r` removed.
pub fn sanitize_output(raw: &str) -> String {
    strip_ansi(raw)
        .chars()
        .filter(|&c| c != '\r' && !is_dropped_control(c))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Streaming UTF-8

/// Decodes a byte stream as UTF-8 across chunk boundaries; invalid bytes become U+FFFD (one per
/// maximal invalid subpart, as the WHATWG decoder and `String::from_utf8_lossy` do).
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    /// An incomplete sequence held back from the end of the previous chunk (at most 3 bytes).
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// Decodes `chunk`, holding back an incomplete trailing sequence.
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        let owned;
        let bytes: &[u8] = if self.pending.is_empty() {
            chunk
        } else {
            let mut v = std::mem::take(&mut self.pending);
            v.extend_from_slice(chunk);
            owned = v;
            &owned
        };
        let mut out = String::with_capacity(bytes.len());
        let mut rest = bytes;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix is valid UTF-8 by the error's contract.
                    out.push_str(&String::from_utf8_lossy(&rest[..valid]));
                    match e.error_len() {
                        Some(len) => {
                            out.push('\u{FFFD}');
                            rest = &rest[valid + len..];
                        }
                        None => {
                            // Incomplete sequence at the end: wait for more bytes.
                            self.pending = rest[valid..].to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// Ends the stream: a held-back incomplete sequence becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        let rest = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&rest).into_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Temp log file

/// The full-output file `<dir>/pi-bash-<16 hex>.log` (mode 0600, never an existing path).
/// The first failure (creating, writing or syncing the file) is remembered: from then on writes
/// are dropped, and [`TempLog::close`] deletes the partial file and reports no path, so no
/// result points to an empty or truncated file (a full `$TMPDIR` used to do that).
pub struct TempLog {
    path: PathBuf,
    file: Option<File>,
    error: Option<std::io::Error>,
    /// Whether this log created the file (and so may delete it).
    owned: bool,
}

impl TempLog {
    /// Creates a new log file in `dir`. If that fails the log remembers why, discards writes
    /// and [`TempLog::close`] returns `None`.
    pub fn create(dir: &Path) -> TempLog {
        let mut error = std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "no unused temp file name",
        );
        for _ in 0..8 {
            let hex = uuid::Uuid::new_v4().simple().to_string();
            let path = dir.join(format!("pi-bash-{}.log", &hex[..16]));
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            match opts.open(&path) {
                Ok(file) => {
                    return TempLog {
                        path,
                        file: Some(file),
                        error: None,
                        owned: true,
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    error = e;
                    break;
                }
            }
        }
        TempLog {
            path: PathBuf::new(),
            file: None,
            error: Some(error),
            owned: false,
        }
    }

    /// From now on writes go to `path` (opened for writing) instead of the log's file, which
    /// stays the log's path: with `/dev/full` every write fails with ENOSPC, as on a full disk.
    #[cfg(test)]
    pub fn redirect_writes_for_test(&mut self, path: &Path) -> std::io::Result<()> {
        self.file = Some(std::fs::OpenOptions::new().write(true).open(path)?);
        Ok(())
    }

    /// The file's path (empty when it could not be created).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists and nothing has failed so far.
    pub fn is_open(&self) -> bool {
        self.file.is_some() && self.error.is_none()
    }

    /// The first failure: creating, writing or syncing the file.
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    /// Appends bytes. The first failure is remembered and later writes are dropped: the file
    /// no longer holds the whole output.
    pub fn write(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Some(f) = &mut self.file {
            if let Err(e) = f.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }

    /// Flushes the file to disk (where some filesystems report a full disk); a failure is
    /// remembered as for [`TempLog::write`].
    pub fn sync(&mut self) {
        if self.error.is_some() {
            return;
        }
        if let Some(f) = &mut self.file {
            if let Err(e) = f.flush().and_then(|()| f.sync_data()) {
                self.error = Some(e);
            }
        }
    }

    /// Flushes and closes; the path if the file holds the whole output. After a failure the
    /// partial file is deleted and `None` returned.
    pub fn close(mut self) -> Option<PathBuf> {
        self.sync();
        let f = self.file.take()?;
        drop(f);
        if self.error.is_some() {
            self.discard();
            return None;
        }
        Some(self.path)
    }

    /// Closes and deletes the file (only one this log created).
    pub fn discard(mut self) {
        drop(self.file.take());
        if self.owned {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn patterns_compile() {
        assert!(ansi_regex().is_some());
        assert!(unfinished_ansi_regex().is_some());
    }

    #[test]
    fn strips_ansi_sequences() {
        assert_eq!(strip_ansi("\x1b[31mred\x1b[0m plain"), "red plain");
        assert_eq!(strip_ansi("a\x1b]0;title\x07b"), "ab");
        assert_eq!(
            strip_ansi("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"),
            "alinkb"
        );
        assert_eq!(strip_ansi("\x1b[<35;59;1Mx"), "x");
        assert_eq!(strip_ansi("\x1b[2K\x1b[1G100%"), "100%");
        assert_eq!(strip_ansi("no escapes"), "no escapes");
        // ESC = is a complete sequence; the digits after it stay.
        assert_eq!(strip_ansi("\x1b=12"), "12");
    }

    #[test]
    fn sanitizes_control_characters() {
        assert_eq!(
            sanitize_output("a\r\nb\x00c\x07d\x08\te\x0bf\x0cg\x1fh\u{fffa}i\x1b[1mj"),
            "a\nbcd\tefghij"
        );
        assert_eq!(
            sanitize_output("progress 10%\rprogress 100%\r\n"),
            "progress 10%progress 100%\n"
        );
    }

    #[test]
    fn holds_back_an_unfinished_escape() {
        assert_eq!(split_incomplete_ansi_suffix("abc\x1b[3"), ("abc", "\x1b[3"));
        assert_eq!(split_incomplete_ansi_suffix("abc\x1b"), ("abc", "\x1b"));
        assert_eq!(
            split_incomplete_ansi_suffix("abc\x1b]0;tit"),
            ("abc", "\x1b]0;tit")
        );
        assert_eq!(
            split_incomplete_ansi_suffix("abc\x1b[31m"),
            ("abc\x1b[31m", "")
        );
        assert_eq!(split_incomplete_ansi_suffix("plain"), ("plain", ""));
        // A terminated OSC is complete.
        assert_eq!(
            split_incomplete_ansi_suffix("a\x1b]0;t\x1b\\"),
            ("a\x1b]0;t\x1b\\", "")
        );
    }

    #[test]
    fn decodes_utf8_across_chunks() {
        let mut d = Utf8Decoder::default();
        let bytes = "héllo €".as_bytes();
        let mut out = String::new();
        for b in bytes {
            out += &d.decode(std::slice::from_ref(b));
        }
        out += &d.finish();
        assert_eq!(out, "héllo €");

        let mut d = Utf8Decoder::default();
        assert_eq!(d.decode(b"a\xffb\xe2\x82"), "a\u{fffd}b");
        assert_eq!(d.finish(), "\u{fffd}");
        let mut d = Utf8Decoder::default();
        assert_eq!(d.decode(b"\xe2\x82x"), "\u{fffd}x");
    }

    fn req(command: &str, temp_dir: &Path) -> BashRequest {
        BashRequest {
            command: command.into(),
            cwd: std::env::temp_dir(),
            shell_path: None,
            shell_command_prefix: None,
            temp_dir: temp_dir.to_path_buf(),
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "pi-rpc-test-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn exit_code_and_interleaved_output() {
        let tmp = temp_dir("rpc1");
        let mut deltas = Vec::new();
        let r = run_bash(
            &req("echo hello; echo oops >&2; exit 3", &tmp),
            &CancelToken::new(),
            &mut |d| deltas.push(d.to_string()),
        )
        .expect("run");
        assert_eq!(
            r,
            BashResult {
                output: "hello\noops\n".into(),
                exit_code: Some(3),
                cancelled: false,
                truncated: false,
                full_output_path: None,
            }
        );
        assert_eq!(deltas.concat(), "hello\noops\n");
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn empty_output_and_prefix() {
        let tmp = temp_dir("rpc2");
        let mut r = req("echo $X", &tmp);
        r.shell_command_prefix = Some("X=prefixed".into());
        let res = run_bash(&r, &CancelToken::new(), &mut |_| {}).expect("run");
        assert_eq!(res.output, "prefixed\n");
        let res = run_bash(&req("true", &tmp), &CancelToken::new(), &mut |_| {}).expect("run");
        assert_eq!(res.output, "");
        assert_eq!(res.exit_code, Some(0));
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn setup_errors() {
        let tmp = temp_dir("rpc3");
        let mut r = req("echo", &tmp);
        r.shell_path = Some("/no/such/shell".into());
        assert_eq!(
            run_bash(&r, &CancelToken::new(), &mut |_| {}),
            Err("Custom shell path not found: /no/such/shell".into())
        );
        let mut r = req("echo", &tmp);
        r.cwd = PathBuf::from("/no/such/dir");
        assert_eq!(
            run_bash(&r, &CancelToken::new(), &mut |_| {}),
            Err(
                "Working directory does not exist: /no/such/dir\nCannot execute bash commands."
                    .into()
            )
        );
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn cancel_gives_cancelled_without_exit_code() {
        let tmp = temp_dir("rpc4");
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        let started = Instant::now();
        let mut deltas = String::new();
        let r = run_bash(
            &req("echo before-sleep; sleep 10; echo after-sleep", &tmp),
            &cancel,
            &mut |d| {
                deltas.push_str(d);
                let c3 = c2.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(200));
                    c3.cancel();
                });
            },
        )
        .expect("run");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            r,
            BashResult {
                output: "before-sleep\n".into(),
                exit_code: None,
                cancelled: true,
                truncated: false,
                full_output_path: None,
            }
        );
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn sanitizes_streamed_and_stored_output() {
        let tmp = temp_dir("rpc5");
        let mut deltas = String::new();
        let r = run_bash(
            &req(r"printf '\033[31mred\033[0m\r\nx\001y\n'", &tmp),
            &CancelToken::new(),
            &mut |d| deltas.push_str(d),
        )
        .expect("run");
        assert_eq!(r.output, "red\nxy\n");
        assert_eq!(deltas, "red\nxy\n");
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn non_utf8_output_is_carried_lossily() {
        let tmp = temp_dir("rpc6");
        let r = run_bash(
            &req(r"printf 'a\377b\n'", &tmp),
            &CancelToken::new(),
            &mut |_| {},
        )
        .expect("run");
        assert_eq!(r.output, "a\u{fffd}b\n");
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn many_lines_are_tail_truncated_with_full_log() {
        let tmp = temp_dir("rpc7");
        let mut streamed = 0usize;
        let r = run_bash(&req("seq 1 100000", &tmp), &CancelToken::new(), &mut |d| {
            streamed += d.len()
        })
        .expect("run");
        let full: String = (1..=100000).map(|i| format!("{i}\n")).collect();
        // Deltas carry everything.
        assert_eq!(streamed, full.len());
        assert!(r.truncated);
        assert_eq!(r.exit_code, Some(0));
        // The tail: whole lines within 50 KiB / 2000 lines, no trailing newline, no notice.
        let expected: Vec<String> = (98001..=100000).map(|i| i.to_string()).collect();
        assert_eq!(r.output, expected.join("\n"));
        let path = r.full_output_path.expect("log path");
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(name.starts_with("pi-bash-") && name.ends_with(".log") && name.len() == 28);
        assert_eq!(std::fs::read_to_string(&path).expect("log"), full);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(tmp);
    }

    /// Sanitized output of `seq 1 100000` through an [`RpcOutput`], its log replaced by
    /// `log` (from the start, or from byte `switch_at` of the output on).
    fn collect_seq(tmp: &Path, log: Option<(usize, &Path)>) -> BashResult {
        let data: String = (1..=100000).map(|i| format!("{i}\n")).collect();
        let mut sink = |_: &str| {};
        let mut out = RpcOutput::new(tmp, &mut sink);
        for (n, chunk) in data.as_bytes().chunks(4096).enumerate() {
            match log {
                Some((0, path)) if n == 0 => {
                    let mut log = TempLog::create(tmp);
                    log.redirect_writes_for_test(path).expect("redirect");
                    out.log = Some(log);
                }
                Some((at, path)) if n * 4096 == at => {
                    let log = out.log.as_mut().expect("log exists by now");
                    log.redirect_writes_for_test(path).expect("redirect");
                }
                _ => {}
            }
            process::OutputSink::on_output(&mut out, chunk);
        }
        out.finish()
    }

    fn files_in(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .collect()
    }

    /// Issue 17 §6: on a full `$TMPDIR` the log was created but every write to it failed, and
    /// `fullOutputPath` still named the empty file. Writes to `/dev/full` fail alike (ENOSPC).
    #[test]
    fn full_tmpdir_left_a_path_to_an_empty_bash_log() {
        let tmp = temp_dir("rpc-full");
        let working = collect_seq(&tmp, None);
        let path = working.full_output_path.clone().expect("log");
        assert!(working.truncated);
        let full = collect_seq(&tmp, Some((0, Path::new("/dev/full"))));
        assert_eq!(
            full,
            BashResult {
                full_output_path: None,
                ..working.clone()
            }
        );
        // The empty file is deleted.
        assert_eq!(files_in(&tmp), vec![path.clone()]);
        // The disk fills up midway: the partial file is deleted.
        let midway = collect_seq(&tmp, Some((40 * 4096, Path::new("/dev/full"))));
        assert_eq!(midway, full);
        assert_eq!(files_in(&tmp), vec![path]);
        // A temp dir that cannot take a file at all.
        let gone = collect_seq(&tmp.join("gone"), None);
        assert_eq!(gone, full);
        let _ = std::fs::remove_dir_all(tmp);
    }

    #[test]
    fn more_than_2000_short_lines_under_50kb() {
        let tmp = temp_dir("rpc8");
        let r = run_bash(&req("seq 1 2500", &tmp), &CancelToken::new(), &mut |_| {}).expect("run");
        let expected: Vec<String> = (501..=2500).map(|i| i.to_string()).collect();
        assert_eq!(r.output, expected.join("\n"));
        assert!(r.truncated);
        let path = r.full_output_path.expect("log");
        let full: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        assert_eq!(std::fs::read_to_string(path).expect("read"), full);
        let _ = std::fs::remove_dir_all(tmp);
    }
}
