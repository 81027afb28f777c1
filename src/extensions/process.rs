//! One extension process (`extensions.md` §B3–§B4, §B12): spawning it in its own process group,
//! the three threads that serve it, request ids with their waiters, and its end.
//!
//! Threads per process: `ext-writer` owns the child's stdin and writes queued lines (a child that
//! stops reading blocks only this thread); `ext-reader` reads the child's stdout, routes each
//! `result` to its waiter and hands every other message, in arrival order, to the host's
//! [`Inbox`]; `ext-stderr` copies the child's stderr to ours, each line prefixed with the unit.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::protocol::framing::{Frame, LineSplitter};

/// The protocol's line limit in both directions (§B4).
pub(crate) const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;
/// Lines queued for a child's stdin before senders wait.
const WRITE_QUEUE: usize = 256;
/// How long a full input queue may stay full before the child is taken for hung.
const WRITE_STALL: Duration = Duration::from_secs(5);
/// How long an exited child's status is waited for after its stdout closed.
const REAP_WAIT: Duration = Duration::from_millis(2000);

/// A `result` message from the extension.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Outcome {
    pub ok: bool,
    /// The handler's value (`null` = `undefined`).
    pub value: Value,
    /// `error.message` of a failed request.
    pub error: String,
    /// In-place edits of payload fields (`mutated`, §B6).
    pub mutated: Option<Map<String, Value>>,
}

/// What a waiter receives.
#[derive(Debug)]
pub(crate) enum Reply {
    Done(Outcome),
    /// A `tool_update` naming the request: the tool's partial result.
    Update(Value),
    /// The process ended before it answered; the text says how.
    Gone(String),
}

/// Who waits for a request's result: a thread on a channel, or a callback run on the reader
/// thread (commands: the `prompt` response is written when the result arrives, so the
/// processor never waits for an extension).
pub(crate) enum Waiter {
    Channel(Sender<Reply>),
    Callback(Box<dyn FnOnce(Result<Outcome, String>) + Send>),
}

impl Waiter {
    fn finish(self, reply: Result<Outcome, String>) {
        match self {
            Waiter::Channel(tx) => {
                let _ = tx.try_send(match reply {
                    Ok(o) => Reply::Done(o),
                    Err(e) => Reply::Gone(e),
                });
            }
            Waiter::Callback(f) => f(reply),
        }
    }
}

/// The host side of a process's messages other than results.
pub(crate) trait Inbox: Send + Sync {
    /// A message (a `call`, `register`, `error`, `cancel`...), in arrival order. Runs on the
    /// process's reader thread: the wire effects of one message happen before the next is read.
    fn message(&self, proc: &Arc<ExtProcess>, msg: Map<String, Value>);
    /// A line that breaks the protocol (not JSON, a result for an unknown id...).
    fn protocol_error(&self, proc: &Arc<ExtProcess>, text: String);
    /// The process ended (before its pending requests are failed with the same text).
    fn exited(&self, proc: &Arc<ExtProcess>, text: String);
}

/// A running extension process.
pub(crate) struct ExtProcess {
    /// The unit path its stderr lines and errors are named by.
    pub name: String,
    pgid: i32,
    /// Lines for the child's stdin; `None` once closed.
    tx: Mutex<Option<Sender<String>>>,
    pending: Mutex<HashMap<String, Waiter>>,
    next_id: AtomicU64,
    alive: AtomicBool,
    /// Set with `alive = false`: how it ended.
    ended: Mutex<Option<String>>,
    child: Mutex<Option<Child>>,
}

impl ExtProcess {
    /// Starts `argv` in `cwd` with `env` added, in a process group of its own.
    pub fn spawn(
        name: &str,
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        inbox: Arc<dyn Inbox>,
    ) -> Result<Arc<ExtProcess>, String> {
        let Some((program, args)) = argv.split_first() else {
            return Err("invalid manifest: \"command\" is empty".into());
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = crate::exec::spawner::spawn(command)
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let pgid = child.id() as i32;
        crate::exec::groups::track(pgid);
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    crate::exec::groups::kill_group(pgid);
                    let _ = child.wait();
                    crate::exec::groups::untrack(pgid);
                    return Err(format!("cannot start {program}: no pipes"));
                }
            };
        let (tx, rx) = bounded::<String>(WRITE_QUEUE);
        let proc = Arc::new(ExtProcess {
            name: name.to_string(),
            pgid,
            tx: Mutex::new(Some(tx)),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            alive: AtomicBool::new(true),
            ended: Mutex::new(None),
            child: Mutex::new(Some(child)),
        });
        let spawned = spawn_writer(stdin, rx)
            .and_then(|_| spawn_stderr(name.to_string(), stderr))
            .and_then(|_| spawn_reader(Arc::clone(&proc), stdout, inbox));
        if let Err(e) = spawned {
            proc.kill();
            return Err(format!("cannot start {program}: {e}"));
        }
        Ok(proc)
    }

    /// The child's process group.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// How the process ended (`extension process exited (code 1)`), once it has.
    pub fn end_text(&self) -> Option<String> {
        self.ended.lock().clone()
    }

    /// Queues a line for the child's stdin. A child that stops reading its input for
    /// [`WRITE_STALL`] with the queue full is killed (its end is reported as any other), so no
    /// thread of pi-rpc (the stdin reader answering a dialog among them) waits on it forever.
    fn send_line(&self, msg: &Map<String, Value>) -> bool {
        let line = crate::protocol::framing::encode(msg);
        let tx = self.tx.lock().clone();
        let Some(tx) = tx else { return false };
        match tx.send_timeout(line, WRITE_STALL) {
            Ok(()) => true,
            Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => false,
            Err(crossbeam_channel::SendTimeoutError::Timeout(_)) => {
                eprintln!(
                    "[ext {}] pi-rpc: the extension stopped reading its input for {} s; stopping it",
                    self.name,
                    WRITE_STALL.as_secs()
                );
                self.kill();
                false
            }
        }
    }

    /// Sends a request `{"type":kind,"id":"hN",...fields}`; `waiter` gets its result. Returns the
    /// id, or the reason the process cannot take requests (then `waiter` was not registered).
    pub fn request(
        &self,
        kind: &str,
        fields: Map<String, Value>,
        waiter: Waiter,
    ) -> Result<String, (String, Waiter)> {
        if let Some(text) = self.end_text() {
            return Err((text, waiter));
        }
        let id = format!("h{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut msg = Map::with_capacity(fields.len() + 2);
        msg.insert("type".into(), kind.into());
        msg.insert("id".into(), id.clone().into());
        msg.extend(fields);
        self.pending.lock().insert(id.clone(), waiter);
        if !self.send_line(&msg) {
            let waiter = self.pending.lock().remove(&id);
            let text = self
                .end_text()
                .unwrap_or_else(|| "extension process is not reading its input".into());
            return match waiter {
                Some(w) => Err((text, w)),
                // The reader failed it meanwhile (the process ended): it has its answer.
                None => Ok(id),
            };
        }
        Ok(id)
    }

    /// Drops the waiter of request `id` (a late result is then a protocol error-free no-op).
    pub fn forget(&self, id: &str) {
        self.pending.lock().remove(id);
    }

    /// Whether request `id` still waits for its result.
    pub fn is_pending(&self, id: &str) -> bool {
        self.pending.lock().contains_key(id)
    }

    /// Sends a message without an id (a notification: `flags`, `cancel`, an event with
    /// `await:false`).
    pub fn notify(&self, kind: &str, fields: Map<String, Value>) {
        let mut msg = Map::with_capacity(fields.len() + 1);
        msg.insert("type".into(), kind.into());
        msg.extend(fields);
        self.send_line(&msg);
    }

    /// Answers the extension's call `id`.
    pub fn answer(&self, id: &str, result: Result<Value, String>) {
        let mut msg = Map::new();
        msg.insert("type".into(), "result".into());
        msg.insert("id".into(), id.into());
        match result {
            Ok(v) => {
                msg.insert("ok".into(), true.into());
                msg.insert("value".into(), v);
            }
            Err(e) => {
                msg.insert("ok".into(), false.into());
                msg.insert("error".into(), serde_json::json!({ "message": e }));
            }
        }
        self.send_line(&msg);
    }

    /// Closes the child's stdin (the writer thread ends after the queued lines).
    pub fn close_input(&self) {
        self.tx.lock().take();
    }

    /// Ends the process: stdin closed, up to `grace` for it to exit, SIGTERM to its group, up
    /// to `grace` again, SIGKILL (§B3).
    pub fn terminate(&self, grace: Duration) {
        self.close_input();
        if self.wait_exit(grace) {
            return;
        }
        crate::exec::groups::signal_group(self.pgid, libc::SIGTERM);
        if self.wait_exit(grace) {
            return;
        }
        self.kill();
    }

    /// SIGKILL to the process group, and the child reaped.
    pub fn kill(&self) {
        self.close_input();
        crate::exec::groups::kill_group(self.pgid);
        if let Some(mut child) = self.child.lock().take() {
            let _ = child.wait();
        }
        crate::exec::groups::untrack(self.pgid);
    }

    /// Waits up to `limit` for the child to exit; true when it has.
    fn wait_exit(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            {
                let mut slot = self.child.lock();
                match slot.as_mut().map(|c| c.try_wait()) {
                    None | Some(Err(_)) => return true,
                    Some(Ok(Some(_))) => {
                        slot.take();
                        crate::exec::groups::untrack(self.pgid);
                        return true;
                    }
                    Some(Ok(None)) => {}
                }
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The child's exit, as the protocol's error text words it.
    fn reap_text(&self) -> String {
        let deadline = Instant::now() + REAP_WAIT;
        loop {
            {
                let mut slot = self.child.lock();
                match slot.as_mut().map(|c| c.try_wait()) {
                    None => return "extension process exited".into(),
                    Some(Err(e)) => return format!("extension process exited ({e})"),
                    Some(Ok(Some(status))) => {
                        slot.take();
                        crate::exec::groups::untrack(self.pgid);
                        return format!("extension process exited ({})", status_text(status));
                    }
                    Some(Ok(None)) => {}
                }
            }
            if Instant::now() >= deadline {
                return "extension process closed its output".into();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `code 1` or `signal SIGKILL`.
fn status_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("code {code}");
    }
    match status.signal() {
        Some(sig) => format!("signal {}", signal_name(sig)),
        None => "unknown status".into(),
    }
}

fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("{sig}"),
    };
    name.to_string()
}

fn spawn_writer(
    mut stdin: ChildStdin,
    rx: crossbeam_channel::Receiver<String>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ext-writer".into())
        .spawn(move || {
            for mut line in rx {
                line.push('\n');
                if stdin.write_all(line.as_bytes()).is_err() || stdin.flush().is_err() {
                    // The child closed its stdin: its reader thread reports the end.
                    return;
                }
            }
        })
        .map(|_| ())
}

fn spawn_stderr(name: String, stderr: std::process::ChildStderr) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ext-stderr".into())
        .spawn(move || {
            let mut reader = BufReader::with_capacity(8 * 1024, stderr);
            let mut splitter = LineSplitter::with_limit(64 * 1024);
            let mut frames = Vec::new();
            let print = |frame: Frame| match frame {
                Frame::Line(bytes) => {
                    eprintln!("[ext {name}] {}", String::from_utf8_lossy(&bytes));
                }
                Frame::TooLong { len, head, .. } => eprintln!(
                    "[ext {name}] {}… ({len} bytes)",
                    String::from_utf8_lossy(&head)
                ),
            };
            loop {
                let n = match reader.fill_buf() {
                    Ok([]) | Err(_) => break,
                    Ok(bytes) => {
                        splitter.push(bytes, &mut frames);
                        bytes.len()
                    }
                };
                reader.consume(n);
                frames.drain(..).for_each(&print);
            }
            if let Some(frame) = splitter.finish() {
                print(frame);
            }
        })
        .map(|_| ())
}

fn spawn_reader(
    proc: Arc<ExtProcess>,
    stdout: std::process::ChildStdout,
    inbox: Arc<dyn Inbox>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ext-reader".into())
        .spawn(move || read_loop(&proc, stdout, &*inbox))
        .map(|_| ())
}

fn read_loop(proc: &Arc<ExtProcess>, stdout: impl Read, inbox: &dyn Inbox) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut splitter = LineSplitter::with_limit(MAX_LINE_BYTES);
    let mut frames = Vec::new();
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
        for frame in frames.drain(..) {
            handle_frame(proc, frame, inbox);
        }
    }
    if let Some(frame) = splitter.finish() {
        handle_frame(proc, frame, inbox);
    }
    let text = proc.reap_text();
    *proc.ended.lock() = Some(text.clone());
    proc.alive.store(false, Ordering::SeqCst);
    proc.close_input();
    inbox.exited(proc, text.clone());
    let waiters: Vec<Waiter> = proc.pending.lock().drain().map(|(_, w)| w).collect();
    for w in waiters {
        w.finish(Err(text.clone()));
    }
}

fn handle_frame(proc: &Arc<ExtProcess>, frame: Frame, inbox: &dyn Inbox) {
    let bytes = match frame {
        Frame::Line(bytes) => bytes,
        Frame::TooLong { len, .. } => {
            return inbox.protocol_error(
                proc,
                format!("line of {len} bytes exceeds the limit of {MAX_LINE_BYTES} bytes"),
            )
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let msg = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return inbox.protocol_error(proc, "a line that is not a JSON object".into()),
        Err(e) => {
            let shown: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
            return inbox.protocol_error(proc, format!("invalid JSON ({e}): {shown}"));
        }
    };
    match msg.get("type").and_then(Value::as_str) {
        Some("result") => {
            let Some(id) = msg.get("id").and_then(Value::as_str) else {
                return inbox.protocol_error(proc, "a result without an id".into());
            };
            let waiter = proc.pending.lock().remove(id);
            let Some(waiter) = waiter else {
                return inbox.protocol_error(proc, format!("a result for unknown id {id}"));
            };
            waiter.finish(Ok(outcome(msg)));
        }
        Some("tool_update") => {
            let id = msg.get("id").and_then(Value::as_str).unwrap_or_default();
            let partial = msg.get("partialResult").cloned().unwrap_or(Value::Null);
            let pending = proc.pending.lock();
            if let Some(Waiter::Channel(tx)) = pending.get(id) {
                // A tool's progress slot: when the tool thread lags, updates are dropped
                // (the next one is a newer snapshot).
                let _ = tx.try_send(Reply::Update(partial));
            }
        }
        Some(_) => inbox.message(proc, msg),
        None => inbox.protocol_error(proc, "a message without a string \"type\"".into()),
    }
}

fn outcome(mut msg: Map<String, Value>) -> Outcome {
    let ok = msg.get("ok").and_then(Value::as_bool).unwrap_or(false);
    let error = if ok {
        String::new()
    } else {
        match msg.get("error") {
            Some(Value::Object(e)) => match e.get("message") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => crate::js::value::js_template(Some(other)),
                None => "Unknown error".into(),
            },
            Some(Value::String(s)) => s.clone(),
            _ => "Unknown error".into(),
        }
    };
    let mutated = match msg.remove("mutated") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    Outcome {
        ok,
        value: msg.remove("value").unwrap_or(Value::Null),
        error,
        mutated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes_read_value_error_and_mutated() {
        let o = |v: Value| outcome(v.as_object().cloned().unwrap_or_default());
        assert_eq!(
            o(
                json!({"type":"result","id":"h1","ok":true,"value":{"block":true},"mutated":{"input":{"a":1}}})
            ),
            Outcome {
                ok: true,
                value: json!({"block": true}),
                error: String::new(),
                mutated: json!({"input":{"a":1}}).as_object().cloned(),
            }
        );
        let failed = o(json!({"type":"result","id":"h1","ok":false,"error":{"message":"boom"}}));
        assert!(!failed.ok);
        assert_eq!(failed.error, "boom");
        assert_eq!(failed.value, Value::Null);
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(64), "64");
    }
}
