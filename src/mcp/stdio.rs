//! The stdio transport (`mcp.md` §3.5, §4.1): a server is a child process in a process group of
//! its own; JSON-RPC messages are lines on its stdin and stdout; its stderr is kept as a tail for
//! error reports and never reaches pi-rpc's stdout.
//!
//! Threads, per server: `mcp-writer` (a bounded queue to the child's stdin, so a server that
//! stops reading cannot block a caller), `mcp-reader` (stdout lines to the connection's sink) and
//! `mcp-stderr` (the 64 KiB tail). Closing escalates as pi does: stdin closed, SIGTERM to the
//! group after 500 ms, SIGKILL 2 s later, and a SIGTERM to the group once the child is gone (the
//! grandchildren of wrappers such as `npx`).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use super::transport::{Incoming, Sink, Transport};
use crate::protocol::framing::{Frame, LineSplitter};

/// Messages over 16 MiB are dropped (§4.1).
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// What is kept of the server's stderr.
const STDERR_KEEP: usize = 64 * 1024;
/// What an error report shows of it, in characters.
const STDERR_TAIL_CHARS: usize = 2_000;
const WRITE_QUEUE: usize = 256;
const STDIN_CLOSE_GRACE: Duration = Duration::from_millis(500);
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) struct StdioTransport {
    pgid: i32,
    tx: Mutex<Option<Sender<Vec<u8>>>>,
    child: Arc<Mutex<Option<Child>>>,
    /// The last 64 KiB of the server's stderr, as bytes (decoded when read, so a character
    /// split across reads stays whole).
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl StdioTransport {
    /// Starts `command` with `args` in `cwd`, `env` added to pi-rpc's environment. The error is
    /// Node's spawn error text (`spawn <command> ENOENT`).
    pub(crate) fn spawn(
        command: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: &Path,
        sink: Sink,
    ) -> Result<StdioTransport, String> {
        let mut cmd = Command::new(command);
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if !cwd.is_dir() {
            // Node reports a missing cwd as the command's ENOENT too.
            return Err(format!("spawn {command} ENOENT"));
        }
        let mut child = crate::exec::spawner::spawn(cmd).map_err(|e| {
            format!(
                "spawn {command} {}",
                crate::js::fs_error::node_error_code(&e)
            )
        })?;
        let pgid = child.id() as i32;
        crate::exec::groups::track(pgid);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            crate::exec::groups::kill_group(pgid);
            let _ = child.wait();
            crate::exec::groups::untrack(pgid);
            return Err(format!("spawn {command} EPIPE"));
        };
        let (tx, rx) = bounded::<Vec<u8>>(WRITE_QUEUE);
        let t = StdioTransport {
            pgid,
            tx: Mutex::new(Some(tx)),
            child: Arc::new(Mutex::new(Some(child))),
            stderr: Arc::new(Mutex::new(Vec::new())),
        };
        let tail = Arc::clone(&t.stderr);
        let child = Arc::clone(&t.child);
        let (stderr_done_tx, stderr_done) = bounded::<()>(1);
        let started = std::thread::Builder::new()
            .name("mcp-writer".into())
            .spawn(move || {
                let mut stdin = stdin;
                for line in rx {
                    if stdin.write_all(&line).and_then(|_| stdin.flush()).is_err() {
                        break;
                    }
                }
            })
            .and_then(|_| {
                std::thread::Builder::new()
                    .name("mcp-stderr".into())
                    .spawn(move || {
                        keep_tail(stderr, &tail);
                        let _ = stderr_done_tx.send(());
                    })
            })
            .and_then(|_| {
                std::thread::Builder::new()
                    .name("mcp-reader".into())
                    .spawn(move || {
                        read_loop(stdout, &sink, &child, pgid, &stderr_done);
                    })
            });
        if let Err(e) = started {
            t.kill();
            return Err(format!("spawn {command} {e}"));
        }
        Ok(t)
    }

    fn kill(&self) {
        self.tx.lock().take();
        crate::exec::groups::kill_group(self.pgid);
        if let Some(mut c) = self.child.lock().take() {
            let _ = c.wait();
        }
        crate::exec::groups::untrack(self.pgid);
    }
}

impl Transport for StdioTransport {
    fn send(&self, msg: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(msg).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let tx = self.tx.lock().clone();
        match tx {
            Some(tx) => tx
                .send_timeout(line, Duration::from_secs(5))
                .map_err(|_| "MCP connection closed".to_string()),
            None => Err("MCP connection closed".to_string()),
        }
    }

    fn close(&self) {
        // Dropping the sender ends the writer, which closes the child's stdin.
        if self.tx.lock().take().is_none() {
            return;
        }
        let child = Arc::clone(&self.child);
        let pgid = self.pgid;
        let escalate = move || {
            let start = Instant::now();
            let mut termed = false;
            loop {
                let gone = {
                    let mut slot = child.lock();
                    match slot.as_mut().map(Child::try_wait) {
                        None | Some(Err(_)) => true,
                        Some(Ok(Some(_))) => {
                            slot.take();
                            true
                        }
                        Some(Ok(None)) => false,
                    }
                };
                if gone {
                    // Children of the server that ignored stdin closing would outlive it.
                    crate::exec::groups::signal_group(pgid, libc::SIGTERM);
                    crate::exec::groups::untrack(pgid);
                    return;
                }
                let waited = start.elapsed();
                if waited >= STDIN_CLOSE_GRACE + CLOSE_TIMEOUT {
                    crate::exec::groups::kill_group(pgid);
                } else if waited >= STDIN_CLOSE_GRACE && !termed {
                    termed = true;
                    crate::exec::groups::signal_group(pgid, libc::SIGTERM);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        if std::thread::Builder::new()
            .name("mcp-close".into())
            .spawn(escalate)
            .is_err()
        {
            self.kill();
        }
    }

    fn stderr_tail(&self) -> Option<String> {
        let bytes = self.stderr.lock().clone();
        // The kept bytes may start inside a character: skip its continuation bytes.
        let from = bytes
            .iter()
            .position(|b| (b & 0xC0) != 0x80)
            .unwrap_or(bytes.len());
        let text = String::from_utf8_lossy(&bytes[from..]).into_owned();
        let t = text.trim();
        if t.is_empty() {
            return None;
        }
        // pi's `sliceTail`: the last 2000 UTF-16 units, never half a surrogate pair.
        let mut units = 0;
        let mut start = t.len();
        for (i, c) in t.char_indices().rev() {
            units += c.len_utf16();
            if units > STDERR_TAIL_CHARS {
                break;
            }
            start = i;
        }
        Some(t[start..].to_string())
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.close();
    }
}

fn keep_tail(stderr: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut reader = BufReader::with_capacity(8 * 1024, stderr);
    loop {
        let n = match reader.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(bytes) => {
                let mut t = tail.lock();
                t.extend_from_slice(bytes);
                if t.len() > STDERR_KEEP {
                    let cut = t.len() - STDERR_KEEP;
                    t.drain(..cut);
                }
                bytes.len()
            }
        };
        reader.consume(n);
    }
}

fn read_loop(
    stdout: impl Read,
    sink: &Sink,
    child: &Mutex<Option<Child>>,
    pgid: i32,
    stderr_done: &crossbeam_channel::Receiver<()>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut splitter = LineSplitter::with_limit(MAX_MESSAGE_BYTES);
    let mut frames = Vec::new();
    let deliver = |frame: Frame| {
        if let Frame::Line(bytes) = frame {
            // Blank lines are skipped; lines that are not JSON are ignored (servers that log
            // to stdout by mistake), as are messages over the limit.
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            if let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(&bytes) {
                sink(Incoming::Message(v));
            }
        }
    };
    loop {
        let n = match reader.fill_buf() {
            Ok([]) => break,
            Ok(bytes) => {
                splitter.push(bytes, &mut frames);
                bytes.len()
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        reader.consume(n);
        frames.drain(..).for_each(deliver);
    }
    if let Some(frame) = splitter.finish() {
        deliver(frame);
    }
    // Let the child be reaped (briefly) so the stderr tail is complete when the close is reported.
    let deadline = Instant::now() + Duration::from_millis(200);
    loop {
        let done = {
            let mut slot = child.lock();
            match slot.as_mut().map(Child::try_wait) {
                None | Some(Err(_)) => true,
                Some(Ok(Some(_))) => {
                    slot.take();
                    crate::exec::groups::untrack(pgid);
                    true
                }
                Some(Ok(None)) => false,
            }
        };
        if done || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // The stderr tail is complete once the child's stderr closed (a grandchild may hold it).
    let _ = stderr_done.recv_timeout(Duration::from_millis(200));
    sink(Incoming::Closed);
}
