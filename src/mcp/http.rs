//! MCP's streamable HTTP transport (`mcp.md` §4.6, after pi-mcp's
//! `transports/streamable-http.js`).
//!
//! Every message is a `POST` to the server's URL. What the server answers arrives at the sink on
//! the transport's threads:
//!
//! * `mcp-http-send` takes the messages `send` queued, in order. A notification or an answer to a
//!   server request is posted right there (it needs a 2xx, normally `202`; the body is ignored),
//!   so a message sent after it reaches the server after it, as pi's awaited sends do. A request
//!   gets a thread of its own (`mcp-http`) that posts it and delivers every message of the reply
//!   (`application/json`: one message or an array; `text/event-stream`: see `http/sse.rs`), so a
//!   slow answer never holds up later messages.
//! * `mcp-http-get` holds the `GET` stream for server-initiated messages (`http/sse.rs`).
//!
//! Headers: the configured ones, then `accept` and `content-type`, `Mcp-Session-Id` once a
//! response carried one, `MCP-Protocol-Version` once [`Transport::initialized`] was called and
//! `Authorization: Bearer <token>` when a token was given (later ones replace same-named earlier
//! ones). pi sets the protocol version before it sends `notifications/initialized`, so that
//! notification carries the header too; when the connection calls `initialized` only after
//! sending it, the send thread waits up to a second for the version before posting it. The
//! `GET` stream opens once `initialized` was called and that notification was accepted.
//!
//! What the connection sees for a request that fails in transit ([`Incoming::Failed`]):
//!
//! | cause | message |
//! |---|---|
//! | `202`/`204` | `MCP server accepted request <method> without a response` |
//! | another content type | `Unsupported MCP response content type: <type\|missing>` |
//! | `401` | [`AUTH_REQUIRED`] (whoever configured the credentials decides what it means) |
//! | `404` while a session id is known | [`SESSION_EXPIRED`]: retry once on a new session (§3.4) |
//! | other statuses | `MCP HTTP request failed with status <n>[: <body, 500 chars>]` |
//! | no connection | `fetch failed: <cause>` (pi's undici says `fetch failed`) |
//! | body read failed | `terminated: <cause>` |
//! | broken SSE answer | `MCP response stream failed: <reason>` |
//!
//! [`is_transient_failure`] says which of them pi retries a connect after. Failures of
//! notifications and answers, of the `GET` stream and messages that are not JSON-RPC go to
//! stderr (`[mcp <url without query>] …`), never to the client: pi reports them to nobody.
//!
//! The transport never reports [`Incoming::Closed`]: an HTTP server has no connection to lose
//! between requests. `close` sets a flag every thread checks, wakes the reconnect waits, shuts the
//! transport's ureq agent down (which at once interrupts every body read and every wait for
//! response headers) and sends a best-effort `DELETE` for the session (1 s, on a fresh agent).
//! Nothing reaches the sink after `close`. A thread still connecting (TCP) ends within the 10 s
//! connect timeout. Dropping the transport closes it.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver, RecvTimeoutError, Sender, TrySendError};
use parking_lot::Mutex;
use serde_json::Value;
use ureq::http::Response;
use ureq::{Agent, Body};

mod sse;
use super::transport::{Incoming, Sink, Transport};
use crate::llm::http::{
    dedupe_headers, describe_read_error, map_error, url_target, user_agent, HttpError,
};

/// [`Incoming::Failed`] text for a `404` while a session id is known: the server forgot the
/// session, and the request was not run.
pub(crate) const SESSION_EXPIRED: &str = "MCP session expired";
/// [`Incoming::Failed`] text for a `401`.
pub(crate) const AUTH_REQUIRED: &str = "MCP server requires authentication";
/// `send`'s error after `close`.
const CLOSED: &str = "MCP connection closed";

/// Largest JSON answer and SSE event (pi's `DEFAULT_MAX_MESSAGE_BYTES`).
pub(super) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How much of an error body is read for the message.
const MAX_ERROR_BODY_BYTES: u64 = 8 * 1024;
/// How much of it the message keeps (UTF-16 units, as pi counts).
const ERROR_MESSAGE_BODY_CHARS: usize = 500;
/// undici's connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the status of a notification or an answer.
const NO_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
const DELETE_TIMEOUT: Duration = Duration::from_secs(1);
/// Longest wait of `notifications/initialized` for the protocol version.
const VERSION_WAIT: Duration = Duration::from_secs(1);
/// Messages queued for the send thread.
const SEND_QUEUE: usize = 256;
const ACCEPT: &str = "application/json, text/event-stream";
const INITIALIZED: &str = "notifications/initialized";

/// Why an HTTP exchange failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// No response, or the body broke off (pi: a `TypeError`; retried).
    Network(String),
    /// A status or a response the transport cannot use (retried for 408, 429 and 5xx).
    Status { status: u16, message: String },
    /// Anything else (not retried).
    Other(String),
}

impl Failure {
    pub(super) fn message(&self) -> &str {
        match self {
            Failure::Network(m) | Failure::Other(m) => m,
            Failure::Status { message, .. } => message,
        }
    }

    pub(super) fn into_message(self) -> String {
        match self {
            Failure::Network(m) | Failure::Other(m) => m,
            Failure::Status { message, .. } => message,
        }
    }

    /// Whether reopening a stream after it is worth a try (pi's `isRetryable`).
    pub(super) fn retryable(&self) -> bool {
        match self {
            Failure::Network(_) => true,
            Failure::Status { status, .. } => matches!(status, 408 | 429) || *status >= 500,
            Failure::Other(_) => false,
        }
    }
}

/// Whether a [`Incoming::Failed`] message from this transport is a transient error (§3.4):
/// network failures and the statuses 408, 429 and 5xx except 501. pi retries a connect after
/// any of them (250 ms, then 1 s), a read-only request once only after such a status
/// ([`failure_status`] is `Some`).
pub(crate) fn is_transient_failure(message: &str) -> bool {
    if message.starts_with("fetch failed") || message.starts_with("terminated") {
        return true;
    }
    failure_status(message).is_some_and(|s| matches!(s, 408 | 429) || (s >= 500 && s != 501))
}

/// The status of a `MCP HTTP request failed with status <n>…` message.
pub(crate) fn failure_status(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("MCP HTTP request failed with status ")?;
    let digits = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// The state the transport's threads share.
pub(super) struct Shared {
    url: String,
    /// The URL without query, fragment and credentials, for log lines.
    log_name: String,
    /// `host:port` for error texts, or why the URL cannot be used.
    target: Result<String, String>,
    headers: Vec<(String, String)>,
    bearer: Option<String>,
    sink: Sink,
    pub(super) agent: Agent,
    closed: AtomicBool,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// Signalled by `initialized`.
    version_tx: Sender<()>,
    version_rx: Receiver<()>,
    initialized_called: AtomicBool,
    initialized_accepted: AtomicBool,
    get_started: AtomicBool,
    /// Dropped by `close`, which wakes every wait on `close_rx`.
    close_tx: Mutex<Option<Sender<()>>>,
    close_rx: Receiver<()>,
    /// Threads of this transport still running.
    threads: AtomicUsize,
}

impl Shared {
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Delivers to the sink, unless the transport is closed.
    pub(super) fn deliver(&self, incoming: Incoming) {
        if !self.is_closed() {
            (self.sink)(incoming);
        }
    }

    /// Fails the request `id` (logged when the id is not one the connection can match).
    pub(super) fn fail(&self, id: &Value, message: String) {
        match id.as_u64() {
            Some(id) => self.deliver(Incoming::Failed { id, message }),
            None => self.log(&format!("request {id} failed: {message}")),
        }
    }

    /// A line on stderr, unless the transport is closed (errors caused by closing are noise).
    pub(super) fn log(&self, message: &str) {
        if !self.is_closed() {
            eprintln!("[mcp {}] {message}", self.log_name);
        }
    }

    /// Waits `d`; false when the transport closed meanwhile.
    pub(super) fn sleep(&self, d: Duration) -> bool {
        if self.is_closed() {
            return false;
        }
        match self.close_rx.recv_timeout(d) {
            Err(RecvTimeoutError::Timeout) => !self.is_closed(),
            _ => false,
        }
    }

    /// The headers of a request: configured, `extra`, session, protocol version, bearer token.
    pub(super) fn headers(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut h = self.headers.clone();
        h.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        let session = self.session.lock().clone();
        if let Some(s) = session {
            h.push(("Mcp-Session-Id".into(), s));
        }
        let version = self.version.lock().clone();
        if let Some(v) = version {
            h.push(("MCP-Protocol-Version".into(), v));
        }
        if let Some(t) = &self.bearer {
            h.push(("Authorization".into(), format!("Bearer {t}")));
        }
        dedupe_headers(&h)
    }

    /// Sends one request and returns the response once its headers arrived (any status).
    pub(super) fn call<S: ureq::AsSendBody>(
        &self,
        agent: &Agent,
        method: &str,
        headers: Vec<(String, String)>,
        body: S,
        timeout: Timeout,
    ) -> Result<Response<Body>, Failure> {
        let target = self
            .target
            .as_ref()
            .map_err(|e| Failure::Other(e.clone()))?;
        let mut builder = ureq::http::Request::builder()
            .method(method)
            .uri(self.url.as_str());
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(body)
            .map_err(|e| Failure::Other(format!("Invalid MCP HTTP request: {e}")))?;
        let config = agent.configure_request(request);
        let request = match timeout {
            Timeout::None => config.build(),
            Timeout::Response(d) => config.timeout_recv_response(Some(d)).build(),
            Timeout::Total(d) => config.timeout_global(Some(d)).build(),
        };
        agent
            .run(request)
            .map_err(|e| network_failure(map_error(e, target)))
    }

    /// A 2xx response as it is; any other status as its failure (the body read for the text).
    pub(super) fn check(&self, response: Response<Body>) -> Result<Response<Body>, Failure> {
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let body = read_error_body(response.into_body());
        let message = if status == 401 {
            AUTH_REQUIRED.to_owned()
        } else if status == 404 && self.session.lock().is_some() {
            SESSION_EXPIRED.to_owned()
        } else {
            describe_http_failure(status, &body)
        };
        Err(Failure::Status { status, message })
    }

    /// Keeps the session id a response carries.
    pub(super) fn capture_session(&self, response: &Response<Body>) {
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty());
        if let Some(id) = id {
            *self.session.lock() = Some(id.to_owned());
        }
    }

    /// Posts a notification or an answer (`method` is the notification's) and waits for its
    /// status.
    fn post_without_answer(self: &Arc<Self>, body: Vec<u8>, method: Option<&str>) {
        if method == Some(INITIALIZED) && self.version.lock().is_none() {
            // The connection calls `initialized` right after sending this (see the module doc).
            select! {
                recv(self.version_rx) -> _ => {}
                recv(self.close_rx) -> _ => {}
                default(VERSION_WAIT) => {}
            }
        }
        if self.is_closed() {
            return;
        }
        let headers = self.headers(&[("accept", ACCEPT), ("content-type", "application/json")]);
        let result = self
            .call(
                &self.agent,
                "POST",
                headers,
                body,
                Timeout::Response(NO_ANSWER_TIMEOUT),
            )
            .and_then(|r| self.check(r));
        match result {
            // The body is ignored (dropping it closes the connection if it had one).
            Ok(response) => self.capture_session(&response),
            Err(f) => {
                let what = method.unwrap_or("response");
                self.log(&format!("{what} failed: {}", f.message()));
                return;
            }
        }
        if method == Some(INITIALIZED) {
            self.initialized_accepted.store(true, Ordering::SeqCst);
            self.maybe_start_get();
        }
    }

    /// Opens the `GET` stream once `initialized` was called and the server accepted
    /// `notifications/initialized`.
    fn maybe_start_get(self: &Arc<Self>) {
        if !self.initialized_called.load(Ordering::SeqCst)
            || !self.initialized_accepted.load(Ordering::SeqCst)
            || self.is_closed()
            || self.get_started.swap(true, Ordering::SeqCst)
        {
            return;
        }
        if let Err(e) = spawn(self, "mcp-http-get", sse::run_get_stream) {
            self.log(&format!("cannot start the GET stream thread: {e}"));
        }
    }
}

/// How long a request may take.
pub(super) enum Timeout {
    None,
    /// Until the response headers arrived.
    Response(Duration),
    /// The whole exchange.
    Total(Duration),
}

/// Runs `f` on a thread of its own, counted in [`Shared::threads`].
fn spawn(
    shared: &Arc<Shared>,
    name: &str,
    f: impl FnOnce(&Arc<Shared>) + Send + 'static,
) -> std::io::Result<()> {
    struct Running(Arc<Shared>);
    impl Drop for Running {
        fn drop(&mut self) {
            self.0.threads.fetch_sub(1, Ordering::SeqCst);
        }
    }
    shared.threads.fetch_add(1, Ordering::SeqCst);
    let running = Running(shared.clone());
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let running = running;
            f(&running.0);
        })
        .map(drop)
}

fn new_agent() -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(user_agent())
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .build();
    Agent::new_with_config(config)
}

/// A network failure in pi's words (`fetch failed`) with its cause.
fn network_failure(e: HttpError) -> Failure {
    let cause = match e {
        HttpError::InvalidUrl { url, detail } => {
            return Failure::Other(format!("Invalid URL: {url} ({detail})"))
        }
        HttpError::ConnectionRefused { target } => format!("connect ECONNREFUSED {target}"),
        HttpError::HostNotFound { host } => format!("getaddrinfo ENOTFOUND {host}"),
        HttpError::TimedOut => "timed out".to_owned(),
        HttpError::Aborted => "aborted".to_owned(),
        HttpError::Connection { detail } if detail.is_empty() => "connection failed".to_owned(),
        HttpError::Connection { detail } => detail,
    };
    Failure::Network(format!("fetch failed: {cause}"))
}

/// The media type of a response, lowercase, without parameters.
pub(super) fn content_type(response: &Response<Body>) -> Option<String> {
    let value = response.headers().get("content-type")?.to_str().ok()?;
    Some(
        value
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}

/// The first 8 KiB of an error body as text ("" when reading fails).
fn read_error_body(body: Body) -> String {
    let mut buf = Vec::new();
    if body
        .into_reader()
        .take(MAX_ERROR_BODY_BYTES)
        .read_to_end(&mut buf)
        .is_err()
    {
        return String::new();
    }
    match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => {
            let utf8 = e.utf8_error();
            let mut bytes = e.into_bytes();
            if utf8.error_len().is_none() {
                // Only the last character is incomplete: the limit cut it.
                bytes.truncate(utf8.valid_up_to());
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }
}

/// `MCP HTTP request failed with status <n>[: <body>]`, the body trimmed and cut to 500
/// characters (497 and `...`), counted in UTF-16 units as JavaScript does.
fn describe_http_failure(status: u16, body: &str) -> String {
    let text = body.trim();
    let units: usize = text.chars().map(char::len_utf16).sum();
    let snippet = if units > ERROR_MESSAGE_BODY_CHARS {
        let mut kept = 0;
        let end = text
            .char_indices()
            .find(|(_, c)| {
                kept += c.len_utf16();
                kept > ERROR_MESSAGE_BODY_CHARS - 3
            })
            .map_or(text.len(), |(i, _)| i);
        format!("{}...", &text[..end])
    } else {
        text.to_owned()
    };
    if snippet.is_empty() {
        format!("MCP HTTP request failed with status {status}")
    } else {
        format!("MCP HTTP request failed with status {status}: {snippet}")
    }
}

/// pi's `parseJsonRpcMessage`: a request, a notification or a response.
pub(super) fn is_jsonrpc_message(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return false;
    }
    let id_ok = o
        .get("id")
        .is_some_and(|id| id.is_string() || id.is_number());
    let method_ok = o.get("method").is_some_and(Value::is_string);
    if method_ok && (id_ok || !o.contains_key("id")) {
        return true;
    }
    is_response(v)
}

/// pi's `isJsonRpcResponse`.
pub(super) fn is_response(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0")
        || !o
            .get("id")
            .is_some_and(|id| id.is_string() || id.is_number())
    {
        return false;
    }
    if o.contains_key("result") {
        return !o.contains_key("error");
    }
    o.get("error").and_then(Value::as_object).is_some_and(|e| {
        e.get("code").is_some_and(Value::is_number)
            && e.get("message").is_some_and(Value::is_string)
    })
}

/// What `send` queued.
enum Outgoing {
    Request {
        body: Vec<u8>,
        id: Value,
        method: String,
    },
    Notification {
        body: Vec<u8>,
        method: String,
    },
    Answer {
        body: Vec<u8>,
    },
}

/// The send thread: posts notifications and answers in order, starts a thread per request.
fn run_sender(shared: &Arc<Shared>, rx: Receiver<Outgoing>) {
    for out in rx.iter() {
        if shared.is_closed() {
            return;
        }
        match out {
            Outgoing::Request { body, id, method } => {
                let failed_id = id.clone();
                let run = move |s: &Arc<Shared>| run_request(s, body, &id, &method);
                if let Err(e) = spawn(shared, "mcp-http", run) {
                    shared.fail(&failed_id, format!("cannot start the MCP HTTP thread: {e}"));
                }
            }
            Outgoing::Notification { body, method } => {
                shared.post_without_answer(body, Some(&method));
            }
            Outgoing::Answer { body } => shared.post_without_answer(body, None),
        }
    }
}

/// A request's thread: post it, deliver its reply.
fn run_request(s: &Arc<Shared>, body: Vec<u8>, id: &Value, method: &str) {
    let headers = s.headers(&[("accept", ACCEPT), ("content-type", "application/json")]);
    let response = match s
        .call(&s.agent, "POST", headers, body, Timeout::None)
        .and_then(|r| s.check(r))
    {
        Ok(r) => r,
        Err(f) => return s.fail(id, f.into_message()),
    };
    s.capture_session(&response);
    let status = response.status().as_u16();
    if status == 202 || status == 204 {
        return s.fail(
            id,
            format!("MCP server accepted request {method} without a response"),
        );
    }
    match content_type(&response).as_deref() {
        Some("application/json") => read_json_reply(s, response.into_body(), id),
        Some("text/event-stream") => {
            sse::read_response_stream(s, response.into_body().into_reader(), id)
        }
        other => s.fail(
            id,
            format!(
                "Unsupported MCP response content type: {}",
                other.unwrap_or("missing")
            ),
        ),
    }
}

/// An `application/json` reply: one message or an array of them.
fn read_json_reply(s: &Shared, body: Body, id: &Value) {
    let mut buf = Vec::new();
    let limit = MAX_MESSAGE_BYTES as u64 + 1;
    if let Err(e) = body.into_reader().take(limit).read_to_end(&mut buf) {
        return s.fail(id, describe_read_error(&e));
    }
    if buf.len() > MAX_MESSAGE_BYTES {
        return s.fail(
            id,
            format!("MCP JSON response exceeds {MAX_MESSAGE_BYTES} bytes"),
        );
    }
    let items = match serde_json::from_slice::<Value>(&buf) {
        Ok(Value::Array(items)) => items,
        Ok(item) => vec![item],
        Err(e) => return s.fail(id, format!("Invalid JSON in MCP response: {e}")),
    };
    for item in items {
        if !is_jsonrpc_message(&item) {
            return s.fail(id, "Invalid JSON-RPC message".to_owned());
        }
        s.deliver(Incoming::Message(item));
    }
}

/// One MCP server over streamable HTTP (see the module doc).
pub(crate) struct HttpTransport {
    shared: Arc<Shared>,
    /// The send thread's queue; `None` after `close` (or when the thread could not start).
    tx: Mutex<Option<Sender<Outgoing>>>,
}

impl HttpTransport {
    /// `headers` are already resolved (no `${VAR}` left). `bearer`: `Some(token)` to send
    /// `Authorization: Bearer <token>`. Nothing is sent until the first `send`.
    pub(crate) fn open(
        url: &str,
        headers: Vec<(String, String)>,
        bearer: Option<String>,
        sink: Sink,
    ) -> HttpTransport {
        let (version_tx, version_rx) = bounded(1);
        let (close_tx, close_rx) = bounded(1);
        let shared = Arc::new(Shared {
            url: url.to_owned(),
            log_name: log_name(url),
            target: url_target(url).map_err(|e| e.to_string()),
            headers,
            bearer,
            sink,
            agent: new_agent(),
            closed: AtomicBool::new(false),
            session: Mutex::new(None),
            version: Mutex::new(None),
            version_tx,
            version_rx,
            initialized_called: AtomicBool::new(false),
            initialized_accepted: AtomicBool::new(false),
            get_started: AtomicBool::new(false),
            close_tx: Mutex::new(Some(close_tx)),
            close_rx,
            threads: AtomicUsize::new(0),
        });
        let (tx, rx) = bounded(SEND_QUEUE);
        let tx = match spawn(&shared, "mcp-http-send", move |s| run_sender(s, rx)) {
            Ok(()) => Some(tx),
            Err(e) => {
                shared.log(&format!("cannot start the MCP HTTP send thread: {e}"));
                None
            }
        };
        HttpTransport {
            shared,
            tx: Mutex::new(tx),
        }
    }

    /// The session id the server assigned, if any.
    #[cfg(test)]
    pub(crate) fn session_id(&self) -> Option<String> {
        self.shared.session.lock().clone()
    }

    /// Threads of this transport still running (they all end soon after `close`).
    #[cfg(test)]
    pub(crate) fn running_threads(&self) -> usize {
        self.shared.threads.load(Ordering::SeqCst)
    }
}

impl Transport for HttpTransport {
    fn send(&self, msg: &Value) -> Result<(), String> {
        if self.shared.is_closed() {
            return Err(CLOSED.to_owned());
        }
        let body = serde_json::to_vec(msg).map_err(|e| e.to_string())?;
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg
            .get("id")
            .filter(|id| id.is_string() || id.is_number())
            .cloned();
        let out = match (id, method) {
            (Some(id), Some(method)) => Outgoing::Request { body, id, method },
            (None, Some(method)) => Outgoing::Notification { body, method },
            _ => Outgoing::Answer { body },
        };
        let tx = self.tx.lock().clone();
        let Some(tx) = tx else {
            return Err(CLOSED.to_owned());
        };
        tx.try_send(out).map_err(|e| match e {
            TrySendError::Full(_) => "MCP HTTP send queue is full".to_owned(),
            TrySendError::Disconnected(_) => CLOSED.to_owned(),
        })
    }

    fn initialized(&self, protocol_version: &str) {
        *self.shared.version.lock() = Some(protocol_version.to_owned());
        self.shared.initialized_called.store(true, Ordering::SeqCst);
        let _ = self.shared.version_tx.try_send(());
        self.shared.maybe_start_get();
    }

    fn close(&self) {
        let s = &self.shared;
        if s.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        drop(self.tx.lock().take());
        drop(s.close_tx.lock().take());
        // Interrupts every request and stream of this transport, blocked or not.
        s.agent.clone().shutdown();
        let session = s.session.lock().clone();
        if session.is_some() {
            // Best effort: the session expires on the server anyway.
            let agent = new_agent();
            let _ = s.call(
                &agent,
                "DELETE",
                s.headers(&[]),
                (),
                Timeout::Total(DELETE_TIMEOUT),
            );
        }
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}

/// `url` without credentials, query and fragment.
fn log_name(url: &str) -> String {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..cut];
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests;
