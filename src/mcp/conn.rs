//! One JSON-RPC 2.0 client connection to an MCP server (`mcp.md` §4), over any transport.
//!
//! Requests get integer ids from 1 (`initialize` is 1). A caller's thread waits for its answer
//! on a channel of its own; the transport's thread routes answers there by id. Every request has
//! the server's timeout, re-armed by `notifications/progress` for its progress token; a timeout or
//! an abort fails the call and tells the server with `notifications/cancelled` (never for
//! `initialize`). Server requests (`ping`, `roots/list`) are answered on the transport's thread.
//!
//! The transport's thread must never wait for the server: notifications that need requests of
//! their own (`notifications/tools/list_changed`) go to the [`Listener`], which hands them off.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::transport::{Incoming, Sink, Transport};
use crate::cancel::CancelToken;

/// The protocol version pi asks for, and the ones it accepts (§4.2).
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";
const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The version pi reports in `clientInfo` (the pi release pi-rpc follows).
const CLIENT_VERSION: &str = "1.6.0";
/// Progress updates queued for one call beyond which older ones are dropped (room stays for
/// the answer and the abort).
const PROGRESS_QUEUE: usize = 32;

/// Why a request failed. [`std::fmt::Display`] gives pi's texts (§7.3).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RequestError {
    /// A JSON-RPC error answer.
    Rpc {
        code: i64,
        message: String,
    },
    /// No answer within the timeout (milliseconds, as configured).
    Timeout(String),
    Aborted,
    /// The connection is gone (or was never usable).
    Closed,
    /// The transport could not deliver the request or its answer (an HTTP status, …).
    Transport(String),
    /// The answer does not have the shape the method requires.
    Invalid(String),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Rpc { message, .. } => f.write_str(message),
            RequestError::Timeout(ms) => write!(f, "MCP request timed out after {ms}ms"),
            RequestError::Aborted => f.write_str("MCP request aborted"),
            RequestError::Closed => f.write_str("MCP connection closed"),
            RequestError::Transport(m) | RequestError::Invalid(m) => f.write_str(m),
        }
    }
}

/// What a connection tells its owner, on the transport's thread (so: briefly, no waiting).
pub(crate) enum Notice {
    ToolsChanged,
    /// `notifications/message` params (server logs, for `mcp.log`).
    Log(Value),
    /// The transport closed after the handshake.
    Closed,
}

pub(crate) type Listener = Arc<dyn Fn(Notice) + Send + Sync>;

enum Event {
    Progress(Value),
    Done(Result<Value, RequestError>),
    Cancelled,
}

struct Shared {
    pending: Mutex<HashMap<u64, Sender<Event>>>,
    next_id: AtomicU64,
    closed: AtomicBool,
    ready: AtomicBool,
    transport: OnceLock<Arc<dyn Transport>>,
    roots: Value,
    listener: Listener,
}

/// What `initialize` told about the server.
#[derive(Clone, Debug, Default)]
pub(crate) struct ServerInfo {
    pub capabilities: Value,
    /// Trimmed; `None` when absent or blank.
    pub instructions: Option<String>,
}

/// An open, initialized connection.
pub(crate) struct Client {
    shared: Arc<Shared>,
    pub(crate) info: ServerInfo,
    timeout: Duration,
}

/// A failed connect: the message and, for stdio servers, the stderr tail.
#[derive(Debug)]
pub(crate) struct ConnectError {
    pub message: String,
    pub stderr: Option<String>,
}

/// How long a call waits, what aborts it, and who hears its progress.
#[derive(Default)]
pub(crate) struct CallOptions<'a> {
    pub cancel: Option<&'a CancelToken>,
    pub on_progress: Option<&'a mut dyn FnMut(&Value)>,
}

/// `file://` URL of an absolute path, percent-encoding what Node's `pathToFileURL` encodes.
pub(crate) fn file_url(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':'
            | b'@' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Milliseconds of a timeout as JavaScript prints `seconds * 1000`.
fn millis_text(timeout: Duration) -> String {
    let ms = crate::js::number::js_value(timeout.as_secs_f64() * 1000.0);
    crate::js::json::to_js_string(&ms).unwrap_or_else(|_| ms.to_string())
}

impl Client {
    /// Opens a transport with `open` (given the sink it must deliver to), then runs the
    /// handshake (§4.2) within `timeout`.
    pub(crate) fn connect(
        open: impl FnOnce(Sink) -> Result<Arc<dyn Transport>, String>,
        timeout: Duration,
        cwd: &Path,
        listener: Listener,
    ) -> Result<Client, ConnectError> {
        let name = cwd
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            transport: OnceLock::new(),
            roots: json!({"roots": [{"uri": file_url(cwd), "name": name}]}),
            listener,
        });
        let weak = Arc::downgrade(&shared);
        let sink: Sink = Arc::new(move |incoming| {
            if let Some(s) = weak.upgrade() {
                s.handle(incoming);
            }
        });
        let transport = open(sink).map_err(|message| ConnectError {
            message,
            stderr: None,
        })?;
        let _ = shared.transport.set(Arc::clone(&transport));
        let mut client = Client {
            shared,
            info: ServerInfo::default(),
            timeout,
        };
        match client.handshake() {
            Ok(info) => {
                client.info = info;
                Ok(client)
            }
            Err(e) => {
                transport.close();
                // The transport reports its close on its own thread; give the stderr reader a
                // moment so the tail includes what the server said as it died.
                let stderr = wait_stderr(&*transport);
                Err(ConnectError {
                    message: e.to_string(),
                    stderr,
                })
            }
        }
    }

    fn handshake(&self) -> Result<ServerInfo, RequestError> {
        let result = self.request_inner(
            "initialize",
            Some(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "pi", "version": CLIENT_VERSION},
            })),
            CallOptions::default(),
            false,
        )?;
        let invalid = || RequestError::Invalid("Invalid MCP initialize result".into());
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?;
        let capabilities = result
            .get("capabilities")
            .filter(|c| c.is_object())
            .ok_or_else(invalid)?;
        let server_info = result
            .get("serverInfo")
            .filter(|c| c.is_object())
            .ok_or_else(invalid)?;
        if !server_info.get("name").is_some_and(Value::is_string)
            || !server_info.get("version").is_some_and(Value::is_string)
        {
            return Err(invalid());
        }
        let instructions = match result.get("instructions") {
            None => None,
            Some(Value::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
            Some(_) => return Err(invalid()),
        };
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(RequestError::Invalid(format!(
                "MCP server selected unsupported protocol version {version}"
            )));
        }
        // The version first (HTTP sends it as a header, on the notification too), as pi does.
        if let Some(t) = self.shared.transport.get() {
            t.initialized(version);
        }
        self.notify("notifications/initialized", None)?;
        self.shared.ready.store(true, Ordering::SeqCst);
        Ok(ServerInfo {
            capabilities: capabilities.clone(),
            instructions,
        })
    }

    /// Whether the connection still works.
    pub(crate) fn is_open(&self) -> bool {
        !self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends a request and waits for its answer.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: CallOptions<'_>,
    ) -> Result<Value, RequestError> {
        self.request_inner(method, params, opts, true)
    }

    fn notify(&self, method: &str, params: Option<Value>) -> Result<(), RequestError> {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        self.shared.send(&msg)
    }

    fn request_inner(
        &self,
        method: &str,
        params: Option<Value>,
        mut opts: CallOptions<'_>,
        cancellable: bool,
    ) -> Result<Value, RequestError> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(RequestError::Closed);
        }
        if opts.cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(RequestError::Aborted);
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        let mut params = params;
        if opts.on_progress.is_some() {
            let p = params.get_or_insert_with(|| json!({}));
            if let Value::Object(m) = p {
                let meta = m.entry("_meta").or_insert_with(|| json!({}));
                if !meta.is_object() {
                    *meta = json!({});
                }
                meta["progressToken"] = id.into();
            }
        }
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let (tx, rx) = bounded::<Event>(PROGRESS_QUEUE + 4);
        self.shared.pending.lock().insert(id, tx.clone());
        let _hook = opts.cancel.map(|c| {
            let tx = tx.clone();
            c.on_cancel(move || {
                let _ = tx.try_send(Event::Cancelled);
            })
        });
        drop(tx);
        if let Err(e) = self.shared.send(&msg) {
            self.shared.pending.lock().remove(&id);
            return Err(e);
        }
        let mut deadline = Instant::now() + self.timeout;
        let cancelled = |reason: &str| {
            self.shared.pending.lock().remove(&id);
            if cancellable {
                let _ = self.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": reason})),
                );
            }
        };
        loop {
            match rx.recv_deadline(deadline) {
                Ok(Event::Done(r)) => return r,
                Ok(Event::Progress(p)) => {
                    deadline = Instant::now() + self.timeout;
                    if let Some(f) = opts.on_progress.as_mut() {
                        f(&p);
                    }
                }
                Ok(Event::Cancelled) => {
                    cancelled("AbortError: This operation was aborted");
                    return Err(RequestError::Aborted);
                }
                Err(RecvTimeoutError::Timeout) => {
                    cancelled("Request timed out");
                    return Err(RequestError::Timeout(millis_text(self.timeout)));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(RequestError::Closed),
            }
        }
    }

    /// Every item of a paginated list method (§4.3): `key` holds the items; `valid` checks one.
    pub(crate) fn list_all(
        &self,
        method: &str,
        key: &str,
        valid: fn(&Value) -> bool,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Value>, RequestError> {
        let mut items = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let page = self.list_page(method, key, valid, cursor.as_deref(), cancel)?;
            items.extend(page.0);
            match page.1 {
                None => return Ok(items),
                Some(c) if seen.contains(&c) => {
                    return Err(RequestError::Invalid(format!(
                        "MCP {method} returned duplicate cursor: {c}"
                    )))
                }
                Some(c) => {
                    seen.push(c.clone());
                    cursor = Some(c);
                }
            }
        }
        Err(RequestError::Invalid(format!(
            "MCP {method} exceeded 1000 pages"
        )))
    }

    /// One page of a list method: its items and the next cursor.
    pub(crate) fn list_page(
        &self,
        method: &str,
        key: &str,
        valid: fn(&Value) -> bool,
        cursor: Option<&str>,
        cancel: Option<&CancelToken>,
    ) -> Result<(Vec<Value>, Option<String>), RequestError> {
        let params = cursor.map(|c| json!({ "cursor": c }));
        let v = self.request(
            method,
            params,
            CallOptions {
                cancel,
                on_progress: None,
            },
        )?;
        let invalid = || RequestError::Invalid(format!("Invalid MCP {method} result"));
        let items = v.get(key).and_then(Value::as_array).ok_or_else(invalid)?;
        if !items.iter().all(|i| i.is_object() && valid(i)) {
            return Err(RequestError::Invalid(format!(
                "Invalid entry in MCP {method} result"
            )));
        }
        let next = match v.get("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(RequestError::Invalid(format!(
                    "Invalid MCP {method} cursor"
                )))
            }
        };
        Ok((items.clone(), next))
    }

    /// Closes the connection: pending calls fail with `MCP connection closed`.
    pub(crate) fn close(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.fail_pending();
        if let Some(t) = self.shared.transport.get() {
            t.close();
        }
    }

    /// The server's stderr tail (stdio), for a dropped connection's stored error.
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        self.shared.transport.get().and_then(|t| t.stderr_tail())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close();
    }
}

fn wait_stderr(t: &dyn Transport) -> Option<String> {
    std::thread::sleep(Duration::from_millis(20));
    t.stderr_tail()
}

impl Shared {
    fn send(&self, msg: &Value) -> Result<(), RequestError> {
        match self.transport.get() {
            Some(t) => t.send(msg).map_err(|_| RequestError::Closed),
            None => Err(RequestError::Closed),
        }
    }

    fn fail_pending(&self) {
        let waiters: Vec<Sender<Event>> = self.pending.lock().drain().map(|(_, w)| w).collect();
        for w in waiters {
            let _ = w.try_send(Event::Done(Err(RequestError::Closed)));
        }
    }

    fn handle(&self, incoming: Incoming) {
        match incoming {
            Incoming::Message(msg) => self.message(msg),
            Incoming::Failed { id, message } => {
                if let Some(w) = self.pending.lock().remove(&id) {
                    let _ = w.try_send(Event::Done(Err(RequestError::Transport(message))));
                }
            }
            Incoming::Closed => {
                let was = self.closed.swap(true, Ordering::SeqCst);
                self.fail_pending();
                if !was && self.ready.load(Ordering::SeqCst) {
                    (self.listener)(Notice::Closed);
                }
            }
        }
    }

    fn message(&self, msg: Value) {
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return;
        }
        let id = msg.get("id").filter(|i| i.is_string() || i.is_number());
        let method = msg.get("method").and_then(Value::as_str);
        match (id, method) {
            (Some(id), None) => {
                let Some(n) = id.as_u64() else { return };
                let outcome =
                    if let Some(r) = msg.get("result").filter(|_| msg.get("error").is_none()) {
                        Ok(r.clone())
                    } else if let Some(e) = msg.get("error").filter(|e| {
                        e.get("code").is_some_and(Value::is_number)
                            && e.get("message").is_some_and(Value::is_string)
                    }) {
                        Err(RequestError::Rpc {
                            code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                            message: e
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                        })
                    } else {
                        return;
                    };
                if let Some(w) = self.pending.lock().remove(&n) {
                    let _ = w.try_send(Event::Done(outcome));
                }
            }
            (Some(id), Some(method)) => {
                let answer = match method {
                    "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                    "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": self.roots}),
                    _ => json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32601, "message": format!("Method not found: {method}")}}),
                };
                let _ = self.send(&answer);
            }
            (None, Some(method)) => {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                match method {
                    "notifications/progress" => self.progress(params),
                    "notifications/tools/list_changed" => (self.listener)(Notice::ToolsChanged),
                    "notifications/message" => (self.listener)(Notice::Log(params)),
                    _ => {}
                }
            }
            (None, None) => {}
        }
    }

    fn progress(&self, params: Value) {
        if !params.get("progress").is_some_and(Value::is_number) {
            return;
        }
        let Some(token) = params.get("progressToken").and_then(Value::as_u64) else {
            return;
        };
        let waiter = self.pending.lock().get(&token).cloned();
        if let Some(w) = waiter {
            if w.len() < PROGRESS_QUEUE {
                let _ = w.try_send(Event::Progress(params));
            }
        }
    }
}

#[cfg(test)]
mod tests;
