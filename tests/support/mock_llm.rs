//! Scripted mock LLM server: a port of `shared/conformance/mock_llm.py` (same script format, same
//! wire output, same request log) plus Google Gemini and a few stream-breaking options.
//!
//! Speaks, on `127.0.0.1`:
//! * Anthropic Messages      `POST …/messages`                        (SSE or JSON)
//! * OpenAI Chat Completions `POST …/chat/completions`                (SSE or JSON)
//! * OpenAI Responses        `POST …/responses`                       (SSE)
//! * pi-messages             `POST …/messages` with a `{model, context, options}` body (SSE)
//! * Google Gemini           `POST …/models/{model}:streamGenerateContent?alt=sse` (SSE),
//!   `…:generateContent` (JSON)
//! * `GET …/models`          a one-model list, for clients that probe.
//!
//! The script is `{"replies": [REPLY, ...], "default": REPLY?, "model_name": "..."?,
//! "default_delay_ms": N?}`. Replies are consumed in order; a reply with `"when": "substring"` is
//! only used for a request whose raw body contains the substring (later replies are searched
//! when the next one does not match); `default` answers once the list is exhausted, and with
//! neither the answer is HTTP 500 "script exhausted". A REPLY is:
//!
//! ```text
//! {"when": "substring",
//!  "blocks": [{"type": "thinking", "text": "...", "signature": "sig", "redacted": false,
//!              "data": "..", "openai_field": "reasoning_content"},  // "mistral": Mistral's
//!                                                  // content-array thinking chunks
//!             {"type": "text", "text": "Hello"},
//!             {"type": "tool_call", "id": "toolu_01", "name": "bash", "input": {..},
//!              "raw_json": "{\"command\":"}],        // each block may carry "chunk_size"/"chunks"
//!  "chunk_size": 8, "delay_ms": 0, "first_delay_ms": 0,
//!  "usage": {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0, "reasoning": 0},
//!  "stop_reason": "end_turn",                      // Anthropic names, mapped for other APIs
//!  "status": 529, "error_type": "overloaded_error", "error_message": "Overloaded",
//!  "error_code": "..", "error_status": "UNAVAILABLE", "raw_error_body": "..", "content_type": "..",
//!  "headers": {"retry-after": "0"},
//!  "hang": true, "hang_after_blocks": 1, "hang_max_ms": 60000,
//!  "disconnect": true,                             // close abruptly after the streamed blocks
//!  "truncate_without_stop": true,                  // end cleanly without the terminal event(s)
//!  "stream_error": {"type": "overloaded_error", "message": "Overloaded"},
//!  "raw_sse": "event: x\ndata: {}\n\n"}            // or a list: one HTTP chunk per element
//! ```
//!
//! Streams use `Transfer-Encoding: chunked` with one chunk per SSE event; every response carries
//! `Connection: close`. JSON on the wire is formatted like Python's `json.dumps` (`", "`/`": "`
//! separators, non-ASCII escaped) so streamed tool-call arguments match the reference byte for byte.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Map, Value};

#[path = "mock_pi_messages.rs"]
mod pi_messages;

/// How often a sleeping or hanging handler checks for a closed client or a stopping server.
const POLL: Duration = Duration::from_millis(10);
/// A connection that sends no complete request within this time is closed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_HEAD_BYTES: u64 = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
const CREATED: u64 = 1_700_000_000;
/// Headers whose values never reach the log (only their presence, in `auth_headers_present`).
const REDACTED_HEADERS: &[&str] = &[
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "proxy-authorization",
    "x-goog-api-key",
];

// ------------------------------------------------------------------------------------ server

/// Options beyond the script (the example binary uses them).
#[derive(Debug, Clone, Default)]
pub struct MockOptions {
    /// Port to bind on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Append every request log entry to this file as one JSON line.
    pub log_file: Option<PathBuf>,
}

/// The running server; stops when dropped.
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    script: Mutex<Script>,
    log: Mutex<Vec<Value>>,
    logged: Condvar,
    log_file: Option<PathBuf>,
    stopping: AtomicBool,
    /// Open connections (clones of the handlers' sockets), so `drop` can shut them down.
    connections: Mutex<HashMap<u64, TcpStream>>,
    next_connection: AtomicU64,
}

struct Script {
    replies: Vec<Value>,
    used: Vec<bool>,
    default: Option<Value>,
    model_name: Option<String>,
    default_delay_ms: u64,
    seq: u64,
}

/// The reply picked for one request.
struct Taken {
    seq: u64,
    index: Option<usize>,
    reply: Option<Value>,
    model_name: Option<String>,
    default_delay_ms: u64,
}

impl MockLlm {
    /// Binds 127.0.0.1:0 and serves `script` on background threads until dropped.
    pub fn start(script: Value) -> MockLlm {
        Self::start_with(script, MockOptions::default()).expect("mock_llm: cannot bind 127.0.0.1")
    }

    /// Like [`MockLlm::start`], with a fixed port and/or a log file.
    pub fn start_with(script: Value, options: MockOptions) -> io::Result<MockLlm> {
        let listener = TcpListener::bind(("127.0.0.1", options.port))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(Script::parse(&script)),
            log: Mutex::new(Vec::new()),
            logged: Condvar::new(),
            log_file: options.log_file,
            stopping: AtomicBool::new(false),
            connections: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("mock-llm-accept".into())
                .spawn(move || accept_loop(listener, shared))?
        };
        Ok(MockLlm {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Appends a reply to the script.
    pub fn push_reply(&self, reply: Value) {
        let mut script = self.shared.script.lock();
        script.replies.push(reply);
        script.used.push(false);
    }

    /// The request log so far (one entry per POST, in arrival order).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.log.lock().clone()
    }

    /// Waits until at least `n` requests were logged and returns the log; panics on timeout.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let mut log = self.shared.log.lock();
        while log.len() < n {
            if self
                .shared
                .logged
                .wait_until(&mut log, deadline)
                .timed_out()
                && log.len() < n
            {
                panic!(
                    "mock_llm: expected {n} requests within {timeout:?}, got {}: {}",
                    log.len(),
                    Value::Array(log.clone())
                );
            }
        }
        log.clone()
    }

    /// Connections whose handler thread is still running.
    pub fn active_connections(&self) -> usize {
        self.shared.connections.lock().len()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept(); only wait for the acceptor when the wake-up got through.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
            if let Some(acceptor) = self.acceptor.take() {
                let _ = acceptor.join();
            }
        }
        // Unblock handlers stuck in a read; hanging ones also see `stopping` within POLL.
        for stream in self.shared.connections.lock().values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else {
            thread::sleep(POLL); // e.g. out of file descriptors: don't spin
            continue;
        };
        let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
        if let Ok(clone) = stream.try_clone() {
            shared.connections.lock().insert(id, clone);
        }
        let registered = Registered {
            shared: Arc::clone(&shared),
            id,
        };
        // On a spawn failure the closure (and so `registered`) is dropped: unregistered too.
        let _ = thread::Builder::new()
            .name("mock-llm-conn".into())
            .spawn(move || handle_connection(&registered.shared, stream));
    }
}

/// A connection's entry in `Shared::connections`, removed when its handler ends (even by a
/// panic), so `active_connections` counts running handlers.
struct Registered {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.shared.connections.lock().remove(&self.id);
    }
}

impl Script {
    fn parse(script: &Value) -> Script {
        let replies = script
            .get("replies")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Script {
            used: vec![false; replies.len()],
            replies,
            default: script.get("default").filter(|d| !d.is_null()).cloned(),
            model_name: script
                .get("model_name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            default_delay_ms: uint(script.get("default_delay_ms")).unwrap_or(0),
            seq: 0,
        }
    }
}

impl Shared {
    /// Picks the reply for a request body, exactly as mock_llm.py's `State.take`.
    fn take(&self, body_text: &str, consume: bool) -> Taken {
        let mut script = self.script.lock();
        script.seq += 1;
        let mut taken = Taken {
            seq: script.seq,
            index: None,
            reply: None,
            model_name: script.model_name.clone(),
            default_delay_ms: script.default_delay_ms,
        };
        if !consume {
            return taken;
        }
        let found = (0..script.replies.len()).find(|&i| {
            !script.used[i]
                && match script.replies[i].get("when") {
                    None | Some(Value::Null) => true,
                    Some(when) => body_text.contains(&value_text(when)),
                }
        });
        if let Some(i) = found {
            script.used[i] = true;
            taken.index = Some(i);
            taken.reply = Some(script.replies[i].clone());
        } else {
            taken.reply = script.default.clone();
        }
        taken
    }

    fn record(&self, entry: Value) {
        let mut log = self.log.lock();
        if let Some(path) = &self.log_file {
            let line = format!("{entry}\n");
            let written = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
            if let Err(e) = written {
                eprintln!("mock_llm: cannot append to {}: {e}", path.display());
            }
        }
        log.push(entry);
        self.logged.notify_all();
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

// -------------------------------------------------------------------------------------- HTTP

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request. `Ok(None)`: the client closed (or idled out) before sending anything.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> Result<Option<Request>, String> {
    let mut budget = MAX_HEAD_BYTES;
    let request_line = loop {
        match read_line(reader, &mut budget) {
            Ok(None) => return Ok(None),
            Err(e) if is_timeout(&e) => return Ok(None),
            Err(e) => return Err(e.to_string()),
            Ok(Some(line)) if line.is_empty() => continue, // stray CRLF before a request
            Ok(Some(line)) => break line,
        }
    };
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line {request_line:?}"));
    };
    if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(format!("bad request line {request_line:?}"));
    }
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader, &mut budget)
            .map_err(|e| e.to_string())?
            .ok_or("connection closed inside the headers")?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("bad header line {line:?}"));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let mut request = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
    };
    if request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        writer
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|e| e.to_string())?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    request.body = if chunked {
        read_chunked_body(reader)?
    } else if let Some(length) = request.header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| format!("bad Content-Length {length:?}"))?;
        if length > MAX_BODY_BYTES {
            return Err(format!("body too large ({length} bytes)"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        body
    } else {
        Vec::new()
    };
    Ok(Some(request))
}

/// One CRLF- (or LF-) terminated line, without the terminator; `None` at EOF before any byte.
fn read_line(reader: &mut BufReader<TcpStream>, budget: &mut u64) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = reader.by_ref().take(*budget).read_until(b'\n', &mut line)?;
    *budget -= n as u64;
    if n == 0 {
        return if *budget == 0 {
            Err(io::Error::other("request head too large"))
        } else {
            Ok(None)
        };
    }
    if line.pop() != Some(b'\n') {
        return Err(io::Error::other("unterminated line"));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| io::Error::other("non-UTF-8 request head"))
}

fn read_chunked_body(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let mut budget = MAX_HEAD_BYTES; // per line: a body may have any number of chunks
        let line = read_line(reader, &mut budget)
            .map_err(|e| e.to_string())?
            .ok_or("connection closed inside a chunked body")?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while read_line(reader, &mut budget)
                .map_err(|e| e.to_string())?
                .is_some_and(|l| !l.is_empty())
            {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err("body too large".into());
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader
            .read_exact(&mut body[start..])
            .map_err(|e| e.to_string())?;
        read_line(reader, &mut budget).map_err(|e| e.to_string())?;
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Request Entity Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

// -------------------------------------------------------------------------------- connection

/// The client went away, the server is stopping, or a write failed: stop serving.
struct Gone;

type Flow = Result<(), Gone>;

struct Conn<'a> {
    stream: TcpStream,
    shared: &'a Shared,
    /// The request's sequence number (0 when none), for request and message ids.
    seq: u64,
}

fn handle_connection(shared: &Shared, stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut conn = Conn {
        stream,
        shared,
        seq: 0,
    };
    match read_request(&mut reader, &mut conn.stream) {
        Ok(Some(request)) => {
            let _ = conn.serve(request);
        }
        Ok(None) => {}
        Err(message) => {
            let error = json!({"error": {"type": "invalid_request_error",
                "message": format!("mock_llm: malformed HTTP request: {message}")}});
            let _ = conn.json_response(400, &error, &[]);
        }
    }
    // Dropping the stream closes the connection (without a final chunk when a stream was cut).
}

impl Conn<'_> {
    fn request_id(&self) -> String {
        format!("req_mock_{:04}", self.seq)
    }

    fn write(&mut self, bytes: &[u8]) -> Flow {
        self.stream.write_all(bytes).map_err(|_| Gone)
    }

    fn head(&mut self, status: u16, fields: &[(&str, String)], extra: &[(String, String)]) -> Flow {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\nServer: mock-llm/1.0\r\n",
            reason_phrase(status)
        );
        let request_id = self.request_id();
        let fixed = [("request-id", &request_id), ("x-request-id", &request_id)];
        let lines = fields.iter().map(|(k, v)| (*k, v)).chain(fixed);
        for (name, value) in lines.chain(extra.iter().map(|(k, v)| (k.as_str(), v))) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        self.write(head.as_bytes())
    }

    fn raw_response(
        &mut self,
        status: u16,
        content_type: &str,
        body: &[u8],
        extra: &[(String, String)],
    ) -> Flow {
        let fields = [
            ("Content-Type", content_type.to_string()),
            ("Content-Length", body.len().to_string()),
            ("Connection", "close".to_string()),
        ];
        self.head(status, &fields, extra)?;
        self.write(body)
    }

    fn json_response(&mut self, status: u16, body: &Value, extra: &[(String, String)]) -> Flow {
        self.raw_response(status, "application/json", py_json(body).as_bytes(), extra)
    }

    fn start_sse(&mut self, extra: &[(String, String)]) -> Flow {
        let fields = [
            (
                "Content-Type",
                "text/event-stream; charset=utf-8".to_string(),
            ),
            ("Cache-Control", "no-cache".to_string()),
            ("Connection", "close".to_string()),
            ("Transfer-Encoding", "chunked".to_string()),
        ];
        self.head(200, &fields, extra)
    }

    /// One HTTP chunk.
    fn chunk(&mut self, data: &[u8]) -> Flow {
        if data.is_empty() {
            return Ok(()); // an empty chunk would end the body
        }
        let mut framed = format!("{:x}\r\n", data.len()).into_bytes();
        framed.extend_from_slice(data);
        framed.extend_from_slice(b"\r\n");
        self.write(&framed)
    }

    /// The last chunk: the body ends cleanly.
    fn end_chunks(&mut self) -> Flow {
        self.write(b"0\r\n\r\n")
    }

    /// One SSE event (with an `event:` line when named) as one HTTP chunk.
    fn sse(&mut self, event: Option<&str>, data: &Value) -> Flow {
        let text = match event {
            Some(event) => format!("event: {event}\ndata: {}\n\n", py_json(data)),
            None => format!("data: {}\n\n", py_json(data)),
        };
        self.chunk(text.as_bytes())
    }

    /// Sleeps `ms`, noticing a client that closes the connection or a stopping server.
    fn sleep(&mut self, ms: u64) -> Flow {
        let end = Instant::now() + Duration::from_millis(ms);
        loop {
            if self.shared.stopping() || self.client_gone() {
                return Err(Gone);
            }
            let now = Instant::now();
            if now >= end {
                return Ok(());
            }
            thread::sleep(POLL.min(end - now));
        }
    }

    /// The per-chunk `delay_ms` pause (none when 0).
    fn pause(&mut self, ms: u64) -> Flow {
        if ms > 0 {
            self.sleep(ms)
        } else {
            Ok(())
        }
    }

    /// Whether the peer closed its end (EOF or error on a non-blocking peek).
    fn client_gone(&self) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return true;
        }
        let gone = match self.stream.peek(&mut [0u8; 1]) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ),
        };
        gone || self.stream.set_nonblocking(false).is_err()
    }

    /// After the streamed blocks: handles `hang`, `disconnect` and `truncate_without_stop`.
    /// Returns true when the stream is over (nothing more may be written).
    fn cut_short(&mut self, r: &Reply) -> Result<bool, Gone> {
        if r.hang {
            self.sleep(r.hang_max_ms)?;
            // hang_max_ms elapsed: end the body cleanly, without a terminal event.
            self.end_chunks()?;
            return Ok(true);
        }
        if r.disconnect {
            return Ok(true); // the caller drops the socket without the last chunk
        }
        if r.truncate_without_stop {
            self.end_chunks()?;
            return Ok(true);
        }
        Ok(false)
    }

    // ----------------------------------------------------------------------------- routing

    fn serve(&mut self, request: Request) -> Flow {
        let path = request.target.split('?').next().unwrap_or("");
        let path = path.trim_end_matches('/');
        match request.method.as_str() {
            "POST" => self.serve_post(&request, path),
            "GET" if path.ends_with("/models") => {
                let models = json!({"object": "list", "data": [
                    {"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}]});
                self.json_response(200, &models, &[])
            }
            "GET" => self.json_response(404, &json!({"error": {"message": "not found"}}), &[]),
            _ => self.json_response(
                405,
                &json!({"error": {"message": "method not allowed"}}),
                &[],
            ),
        }
    }

    fn serve_post(&mut self, request: &Request, path: &str) -> Flow {
        let body_text = String::from_utf8_lossy(&request.body);
        let parsed = serde_json::from_slice::<Value>(&request.body);
        let api = Api::detect(path).map(|a| match (a, &parsed) {
            (Api::Anthropic, Ok(b)) if b.get("context").is_some_and(Value::is_object) => {
                Api::PiMessages
            }
            (a, _) => a,
        });
        let taken = api.map(|_| self.shared.take(&body_text, parsed.is_ok()));
        self.seq = taken.as_ref().map_or(0, |t| t.seq);
        let logged_body = match &parsed {
            Ok(body) => body.clone(),
            Err(_) if request.body.is_empty() => Value::Null,
            Err(_) => json!({"_unparsed": body_text}),
        };
        self.shared
            .record(log_entry(request, api, taken.as_ref(), logged_body));

        let (Some(api), Some(taken)) = (api, taken) else {
            let error = json!({"error": {"type": "not_found_error",
                "message": format!("unknown path {}", request.target)}});
            return self.json_response(404, &error, &[]);
        };
        let body = match parsed {
            Ok(body) => body,
            Err(e) => {
                let message = format!("mock_llm: request body is not JSON: {e}");
                let reply = json!({"status": 400, "error_type": "invalid_request_error",
                    "error_message": message});
                return self.error_response(api, &Reply::parse(&reply, 0));
            }
        };
        let reply = taken.reply.unwrap_or_else(|| {
            json!({"status": 500, "error_type": "api_error",
                "error_message": "mock_llm: script exhausted (no reply left and no default)"})
        });
        let reply = Reply::parse(&reply, taken.default_delay_ms);
        let model = match api {
            Api::Google => json!(taken.model_name.unwrap_or_else(|| google_model(path))),
            _ => taken.model_name.map_or_else(
                || body.get("model").cloned().unwrap_or(json!("mock-model")),
                Value::from,
            ),
        };
        self.serve_reply(api, path, &reply, &body, &model)
    }

    fn serve_reply(
        &mut self,
        api: Api,
        path: &str,
        r: &Reply,
        body: &Value,
        model: &Value,
    ) -> Flow {
        self.pause(r.first_delay_ms)?;
        if r.status.is_some_and(|s| s != 200) {
            return self.error_response(api, r);
        }
        if let Some(pieces) = &r.raw_sse {
            return self.raw_sse_stream(r, pieces);
        }
        let stream = truthy(body.get("stream"));
        match api {
            Api::Anthropic if stream => self.anthropic_stream(r, model),
            Api::Anthropic => self.anthropic_json(r, model),
            Api::OpenAiChat if stream => self.chat_stream(r, model),
            Api::OpenAiChat => self.chat_json(r, model),
            Api::OpenAiResponses => self.responses_stream(r, model),
            Api::PiMessages => self.pi_messages_stream(r),
            Api::Google if path.ends_with(":streamGenerateContent") => self.google_stream(r, model),
            Api::Google => self.google_json(r, model),
        }
    }

    fn error_response(&mut self, api: Api, r: &Reply) -> Flow {
        let status = r.status.unwrap_or(500);
        if let Some(raw) = &r.raw_error_body {
            let content_type = r.content_type.as_deref().unwrap_or("text/plain");
            return self.raw_response(status, content_type, raw.as_bytes(), &r.headers);
        }
        let error_type = r
            .error_type
            .clone()
            .unwrap_or_else(|| default_error_type(status).to_string());
        let message = r
            .error_message
            .clone()
            .unwrap_or_else(|| default_error_message(&error_type).to_string());
        let body = match api {
            Api::Anthropic => json!({"type": "error",
                "error": {"type": error_type, "message": message},
                "request_id": self.request_id()}),
            Api::OpenAiChat | Api::OpenAiResponses => json!({"error": {"message": message,
                "type": error_type, "param": null, "code": r.error_code}}),
            Api::PiMessages => json!({"error": {"message": message, "code": r.error_code}}),
            Api::Google => json!({"error": {"code": status, "message": message,
                "status": r.error_status.clone()
                    .unwrap_or_else(|| google_status(status).to_string())}}),
        };
        self.json_response(status, &body, &r.headers)
    }

    fn raw_sse_stream(&mut self, r: &Reply, pieces: &[String]) -> Flow {
        self.start_sse(&r.headers)?;
        for piece in pieces {
            self.pause(r.delay_ms)?;
            self.chunk(piece.as_bytes())?;
        }
        if self.cut_short(r)? {
            return Ok(());
        }
        self.end_chunks()
    }

    // --------------------------------------------------------------------------- anthropic

    fn anthropic_stream(&mut self, r: &Reply, model: &Value) -> Flow {
        let u = &r.usage;
        self.start_sse(&r.headers)?;
        let message = json!({"id": format!("msg_mock_{:04}", self.seq), "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": u.input,
                "cache_creation_input_tokens": u.cache_write,
                "cache_read_input_tokens": u.cache_read, "output_tokens": 1}});
        let start = json!({"type": "message_start", "message": message});
        self.sse(Some("message_start"), &start)?;
        for (i, b) in r.streamed_blocks() {
            self.pause(r.delay_ms)?;
            let content_block = match (b.kind, &b.redacted) {
                (Kind::Text, _) => json!({"type": "text", "text": ""}),
                (Kind::Thinking, Some(data)) => json!({"type": "redacted_thinking", "data": data}),
                (Kind::Thinking, None) => {
                    json!({"type": "thinking", "thinking": "", "signature": ""})
                }
                (Kind::ToolCall, _) => json!({"type": "tool_use", "id": b.id_or("toolu_mock", i),
                    "name": b.name, "input": {}}),
                (Kind::Unknown, _) => continue,
            };
            let start = json!({"type": "content_block_start", "index": i,
                "content_block": content_block});
            self.sse(Some("content_block_start"), &start)?;
            if b.redacted.is_none() {
                for c in &b.chunks {
                    self.pause(r.delay_ms)?;
                    let delta = match b.kind {
                        Kind::Text => json!({"type": "text_delta", "text": c}),
                        Kind::Thinking => json!({"type": "thinking_delta", "thinking": c}),
                        _ => json!({"type": "input_json_delta", "partial_json": c}),
                    };
                    self.anthropic_delta(i, delta)?;
                }
            }
            if b.kind == Kind::Thinking && b.redacted.is_none() {
                let signature = b.signature.clone().unwrap_or(format!("sig_mock_{i}"));
                self.anthropic_delta(
                    i,
                    json!({"type": "signature_delta", "signature": signature}),
                )?;
            }
            let stop = json!({"type": "content_block_stop", "index": i});
            self.sse(Some("content_block_stop"), &stop)?;
        }
        if self.cut_short(r)? {
            return Ok(());
        }
        if let Some(se) = &r.stream_error {
            let error = json!({"type": "error", "error": {
                "type": str_or(se.get("type"), "overloaded_error"),
                "message": str_or(se.get("message"), "Overloaded")}});
            self.sse(Some("error"), &error)?;
            return self.end_chunks();
        }
        self.pause(r.delay_ms)?;
        let message_delta = json!({"type": "message_delta",
            "delta": {"stop_reason": r.stop_reason, "stop_sequence": null},
            "usage": {"input_tokens": u.input, "cache_creation_input_tokens": u.cache_write,
                "cache_read_input_tokens": u.cache_read, "output_tokens": u.output}});
        self.sse(Some("message_delta"), &message_delta)?;
        self.sse(Some("message_stop"), &json!({"type": "message_stop"}))?;
        self.end_chunks()
    }

    fn anthropic_delta(&mut self, index: usize, delta: Value) -> Flow {
        let event = json!({"type": "content_block_delta", "index": index, "delta": delta});
        self.sse(Some("content_block_delta"), &event)
    }

    fn anthropic_json(&mut self, r: &Reply, model: &Value) -> Flow {
        let u = &r.usage;
        let mut content = Vec::new();
        for (i, b) in r.blocks.iter().enumerate() {
            content.push(match b.kind {
                Kind::Text => json!({"type": "text", "text": b.text}),
                Kind::Thinking => json!({"type": "thinking", "thinking": b.text,
                    "signature": b.signature.clone().unwrap_or(format!("sig_mock_{i}"))}),
                Kind::ToolCall => json!({"type": "tool_use", "id": b.id_or("toolu_mock", i),
                    "name": b.name, "input": b.input}),
                Kind::Unknown => continue,
            });
        }
        let message = json!({"id": format!("msg_mock_{:04}", self.seq), "type": "message",
            "role": "assistant", "model": model, "content": content,
            "stop_reason": r.stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": u.input, "output_tokens": u.output,
                "cache_read_input_tokens": u.cache_read,
                "cache_creation_input_tokens": u.cache_write}});
        self.json_response(200, &message, &r.headers)
    }

    // ------------------------------------------------------------------ openai chat completions

    fn chat_stream(&mut self, r: &Reply, model: &Value) -> Flow {
        let id = format!("chatcmpl-mock-{:04}", self.seq);
        let chunk = |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": CREATED,
                "model": model, "system_fingerprint": null, "choices": [{"index": 0,
                    "delta": delta, "logprobs": null, "finish_reason": finish}]})
        };
        self.start_sse(&r.headers)?;
        let role = json!({"role": "assistant", "content": ""});
        self.sse(None, &chunk(role, Value::Null))?;
        let mut tool_index = 0;
        for (i, b) in r.streamed_blocks() {
            for (n, c) in b.chunks.iter().enumerate() {
                let delta = match b.kind {
                    Kind::Text => json!({"content": c}),
                    // Mistral's thinking: a content chunk holding text chunks.
                    Kind::Thinking if b.openai_field == "mistral" => json!({"content":
                        [{"type": "thinking", "thinking": [{"type": "text", "text": c}]}]}),
                    Kind::Thinking => {
                        Value::Object(Map::from_iter([(b.openai_field.clone(), json!(c))]))
                    }
                    Kind::ToolCall if n == 0 => json!({"tool_calls": [{"index": tool_index,
                        "id": b.id_or("call_mock", i), "type": "function",
                        "function": {"name": b.name, "arguments": c}}]}),
                    Kind::ToolCall => json!({"tool_calls": [{"index": tool_index,
                        "function": {"arguments": c}}]}),
                    Kind::Unknown => break,
                };
                self.pause(r.delay_ms)?;
                self.sse(None, &chunk(delta, Value::Null))?;
            }
            if b.kind == Kind::ToolCall {
                tool_index += 1;
            }
        }
        if self.cut_short(r)? {
            return Ok(());
        }
        if let Some(se) = &r.stream_error {
            let error = json!({"error": {"message": str_or(se.get("message"), "Overloaded"),
                "type": str_or(se.get("type"), "overloaded_error"), "param": null,
                "code": se.get("code").cloned().unwrap_or(Value::Null)}});
            self.sse(None, &error)?;
            return self.end_chunks();
        }
        self.pause(r.delay_ms)?;
        let finish = json!(openai_finish(&r.stop_reason));
        self.sse(None, &chunk(json!({}), finish))?;
        let u = &r.usage;
        let mut usage = json!({"prompt_tokens": u.input + u.cache_read,
            "completion_tokens": u.output, "total_tokens": u.input + u.cache_read + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read}});
        if let Some(reasoning) = u.reasoning {
            usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
        }
        let mut last = chunk(Value::Null, Value::Null);
        last["choices"] = json!([]);
        last["usage"] = usage;
        self.sse(None, &last)?;
        self.chunk(b"data: [DONE]\n\n")?;
        self.end_chunks()
    }

    fn chat_json(&mut self, r: &Reply, model: &Value) -> Flow {
        let u = &r.usage;
        let mut text = String::new();
        let mut calls = Vec::new();
        for (i, b) in r.blocks.iter().enumerate() {
            match b.kind {
                Kind::Text => text.push_str(&b.text),
                Kind::ToolCall => calls.push(json!({"id": b.id_or("call_mock", i),
                    "type": "function",
                    "function": {"name": b.name, "arguments": py_json(&b.input)}})),
                _ => {}
            }
        }
        let content = (!text.is_empty()).then_some(text);
        let mut message = json!({"role": "assistant", "content": content});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        let completion = json!({"id": format!("chatcmpl-mock-{:04}", self.seq),
            "object": "chat.completion", "created": CREATED, "model": model,
            "choices": [{"index": 0, "message": message,
                "finish_reason": openai_finish(&r.stop_reason)}],
            "usage": {"prompt_tokens": u.input + u.cache_read, "completion_tokens": u.output,
                "total_tokens": u.input + u.cache_read + u.output}});
        self.json_response(200, &completion, &r.headers)
    }

    // ------------------------------------------------------------------------ openai responses

    fn responses_stream(&mut self, r: &Reply, model: &Value) -> Flow {
        let base = json!({"id": format!("resp_mock_{:04}", self.seq), "object": "response",
            "created_at": CREATED, "model": model, "status": "in_progress", "output": [],
            "usage": null});
        self.start_sse(&r.headers)?;
        let mut s = ResponsesStream {
            conn: self,
            reply: r,
            sequence: 0,
        };
        s.emit(json!({"type": "response.created", "response": base}))?;
        s.emit(json!({"type": "response.in_progress", "response": base}))?;
        let mut output = Vec::new();
        for (i, b) in r.streamed_blocks() {
            let oi = output.len();
            output.push(match b.kind {
                Kind::Text => s.message_item(i, oi, b)?,
                Kind::Thinking => s.reasoning_item(i, oi, b)?,
                Kind::ToolCall => s.function_call_item(i, oi, b)?,
                Kind::Unknown => continue,
            });
        }
        if s.conn.cut_short(r)? {
            return Ok(());
        }
        if let Some(se) = &r.stream_error {
            s.emit(json!({"type": "error",
                "code": str_or(se.get("type"), "overloaded_error"),
                "message": str_or(se.get("message"), "Overloaded"), "param": null}))?;
            return s.conn.end_chunks();
        }
        s.conn.pause(r.delay_ms)?;
        let u = &r.usage;
        let status = match r.stop_reason.as_str() {
            "max_tokens" | "refusal" => "incomplete",
            _ => "completed",
        };
        let mut response = base;
        response["status"] = json!(status);
        response["output"] = Value::Array(output);
        if status == "incomplete" {
            response["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        response["usage"] = json!({"input_tokens": u.input + u.cache_read,
            "input_tokens_details": {"cached_tokens": u.cache_read}, "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": u.reasoning.unwrap_or(0)},
            "total_tokens": u.input + u.cache_read + u.output});
        s.emit(json!({"type": format!("response.{status}"), "response": response}))?;
        s.conn.end_chunks()
    }

    // --------------------------------------------------------------------------- google gemini

    fn google_stream(&mut self, r: &Reply, model: &Value) -> Flow {
        let response_id = format!("resp_mock_{:04}", self.seq);
        let chunk = |part: Value| {
            json!({"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}],
                "modelVersion": model, "responseId": response_id})
        };
        self.start_sse(&r.headers)?;
        for (_, b) in r.streamed_blocks() {
            match b.kind {
                Kind::Text | Kind::Thinking => {
                    for (n, c) in b.chunks.iter().enumerate() {
                        self.pause(r.delay_ms)?;
                        let last = n + 1 == b.chunks.len();
                        self.sse(None, &chunk(google_text_part(b, c, last)))?;
                    }
                }
                Kind::ToolCall => {
                    self.pause(r.delay_ms)?;
                    self.sse(None, &chunk(google_call_part(b)))?;
                }
                Kind::Unknown => {}
            }
        }
        if self.cut_short(r)? {
            return Ok(());
        }
        if let Some(se) = &r.stream_error {
            let code = uint(se.get("code")).unwrap_or(503);
            let status = se.get("status").and_then(Value::as_str).map_or_else(
                || google_status(u16::try_from(code).unwrap_or(500)).to_string(),
                str::to_string,
            );
            let error = json!({"error": {"code": code,
                "message": str_or(se.get("message"), "Overloaded"), "status": status}});
            self.sse(None, &error)?;
            return self.end_chunks();
        }
        self.pause(r.delay_ms)?;
        let last = json!({"candidates": [{"content": {"parts": [], "role": "model"},
                "finishReason": google_finish(&r.stop_reason), "index": 0}],
            "usageMetadata": google_usage(&r.usage), "modelVersion": model,
            "responseId": response_id});
        self.sse(None, &last)?;
        self.end_chunks()
    }

    fn google_json(&mut self, r: &Reply, model: &Value) -> Flow {
        let parts: Vec<Value> = r
            .blocks
            .iter()
            .filter_map(|b| match b.kind {
                Kind::Text | Kind::Thinking => Some(google_text_part(b, &b.text, true)),
                Kind::ToolCall => Some(google_call_part(b)),
                Kind::Unknown => None,
            })
            .collect();
        let response = json!({"candidates": [{"content": {"parts": parts, "role": "model"},
                "finishReason": google_finish(&r.stop_reason), "index": 0}],
            "usageMetadata": google_usage(&r.usage), "modelVersion": model,
            "responseId": format!("resp_mock_{:04}", self.seq)});
        self.json_response(200, &response, &r.headers)
    }
}

/// One OpenAI Responses stream being written: numbers the events (`sequence_number`, appended
/// last as the reference does) and streams each block as an output item.
struct ResponsesStream<'c, 'a> {
    conn: &'c mut Conn<'a>,
    reply: &'c Reply,
    sequence: u64,
}

impl ResponsesStream<'_, '_> {
    fn emit(&mut self, mut event: Value) -> Flow {
        event["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        let name = event["type"].as_str().unwrap_or("").to_string();
        self.conn.sse(Some(&name), &event)
    }

    /// Emits `{"type": ty, ..ids, key: value}`.
    fn emit_with(&mut self, ty: &str, ids: &Value, key: &str, value: Value) -> Flow {
        let mut event = json!({"type": ty});
        if let (Some(event), Some(ids)) = (event.as_object_mut(), ids.as_object()) {
            event.extend(ids.clone());
        }
        event[key] = value;
        self.emit(event)
    }

    fn finish_item(&mut self, oi: usize, item: Value) -> Result<Value, Gone> {
        self.emit(json!({"type": "response.output_item.done", "output_index": oi, "item": item}))?;
        Ok(item)
    }

    /// A `message` item from a text block.
    fn message_item(&mut self, i: usize, oi: usize, b: &Block) -> Result<Value, Gone> {
        let item_id = format!("msg_mock_{i}");
        let ids = json!({"item_id": item_id, "output_index": oi, "content_index": 0});
        self.emit(
            json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"id": item_id, "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}}),
        )?;
        let empty = json!({"type": "output_text", "text": "", "annotations": []});
        self.emit_with("response.content_part.added", &ids, "part", empty)?;
        for c in &b.chunks {
            self.conn.pause(self.reply.delay_ms)?;
            self.emit_with("response.output_text.delta", &ids, "delta", json!(c))?;
        }
        self.emit_with("response.output_text.done", &ids, "text", json!(b.text))?;
        let part = json!({"type": "output_text", "text": b.text, "annotations": []});
        self.emit_with("response.content_part.done", &ids, "part", part.clone())?;
        self.finish_item(
            oi,
            json!({"id": item_id, "type": "message", "status": "completed",
            "role": "assistant", "content": [part]}),
        )
    }

    /// A `reasoning` item (summary text) from a thinking block.
    fn reasoning_item(&mut self, i: usize, oi: usize, b: &Block) -> Result<Value, Gone> {
        let item_id = format!("rs_mock_{i}");
        let ids = json!({"item_id": item_id, "output_index": oi, "summary_index": 0});
        self.emit(
            json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"id": item_id, "type": "reasoning", "summary": []}}),
        )?;
        let empty = json!({"type": "summary_text", "text": ""});
        self.emit_with("response.reasoning_summary_part.added", &ids, "part", empty)?;
        for c in &b.chunks {
            self.conn.pause(self.reply.delay_ms)?;
            self.emit_with(
                "response.reasoning_summary_text.delta",
                &ids,
                "delta",
                json!(c),
            )?;
        }
        self.emit_with(
            "response.reasoning_summary_text.done",
            &ids,
            "text",
            json!(b.text),
        )?;
        let part = json!({"type": "summary_text", "text": b.text});
        self.emit_with(
            "response.reasoning_summary_part.done",
            &ids,
            "part",
            part.clone(),
        )?;
        self.finish_item(
            oi,
            json!({"id": item_id, "type": "reasoning", "summary": [part],
            "encrypted_content": b.signature}),
        )
    }

    /// A `function_call` item from a tool call block.
    fn function_call_item(&mut self, i: usize, oi: usize, b: &Block) -> Result<Value, Gone> {
        let item_id = format!("fc_mock_{i}");
        let call_id = b.id_or("call_mock", i);
        let ids = json!({"item_id": item_id, "output_index": oi});
        self.emit(
            json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                "call_id": call_id, "name": b.name, "arguments": ""}}),
        )?;
        for c in &b.chunks {
            self.conn.pause(self.reply.delay_ms)?;
            self.emit_with(
                "response.function_call_arguments.delta",
                &ids,
                "delta",
                json!(c),
            )?;
        }
        let arguments = json!(b.text);
        self.emit_with(
            "response.function_call_arguments.done",
            &ids,
            "arguments",
            arguments,
        )?;
        self.finish_item(
            oi,
            json!({"id": item_id, "type": "function_call",
            "status": "completed", "call_id": call_id, "name": b.name, "arguments": b.text}),
        )
    }
}

/// A Gemini text part (`thought: true` for thinking); the signature rides on the last chunk.
fn google_text_part(b: &Block, text: &str, last: bool) -> Value {
    let mut part = json!({"text": text});
    if b.kind == Kind::Thinking {
        part["thought"] = json!(true);
        if let (Some(signature), true) = (&b.signature, last) {
            part["thoughtSignature"] = json!(signature);
        }
    }
    part
}

/// A Gemini `functionCall` part: the whole call at once, `args` an object (`raw_json` when it
/// parses, else `input`), `id` only when the script gives one.
fn google_call_part(b: &Block) -> Value {
    let args = serde_json::from_str::<Value>(&b.text).unwrap_or_else(|_| b.input.clone());
    let mut call = json!({"name": b.name, "args": args});
    if let Some(id) = &b.id {
        call["id"] = json!(id);
    }
    let mut part = json!({"functionCall": call});
    if let Some(signature) = &b.signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

fn google_usage(u: &Usage) -> Value {
    let reasoning = u.reasoning.unwrap_or(0);
    let mut usage = json!({"promptTokenCount": u.input + u.cache_read,
        "candidatesTokenCount": u.output.saturating_sub(reasoning)});
    if reasoning > 0 {
        usage["thoughtsTokenCount"] = json!(reasoning);
    }
    if u.cache_read > 0 {
        usage["cachedContentTokenCount"] = json!(u.cache_read);
    }
    usage["totalTokenCount"] = json!(u.input + u.cache_read + u.output);
    usage
}

fn google_model(path: &str) -> String {
    let tail = path.rsplit_once("/models/").map_or(path, |(_, tail)| tail);
    tail.rsplit_once(':')
        .map_or(tail, |(model, _)| model)
        .to_string()
}

fn log_entry(request: &Request, api: Option<Api>, taken: Option<&Taken>, body: Value) -> Value {
    let mut headers = Map::new();
    let mut auth_present = Vec::new();
    for (name, value) in &request.headers {
        let name = name.to_ascii_lowercase();
        if REDACTED_HEADERS.contains(&name.as_str()) {
            auth_present.push(name);
        } else {
            headers.insert(name, json!(value));
        }
    }
    auth_present.sort();
    auth_present.dedup();
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    json!({"seq": taken.map(|t| t.seq), "method": request.method, "path": request.target,
        "api": api.map(Api::name), "headers": headers, "auth_headers_present": auth_present,
        "body": body, "reply_index": taken.and_then(|t| t.index), "time": time})
}

// ------------------------------------------------------------------------------ script model

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Google,
    /// `…/messages` with a pi-messages body (told apart from Anthropic by its `context`).
    PiMessages,
}

impl Api {
    /// The API a POST path (query and trailing `/` removed) is for.
    fn detect(path: &str) -> Option<Api> {
        if path.ends_with("/messages") {
            Some(Api::Anthropic)
        } else if path.ends_with("/chat/completions") {
            Some(Api::OpenAiChat)
        } else if path.ends_with("/responses") {
            Some(Api::OpenAiResponses)
        } else if path.contains("/models/")
            && (path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent"))
        {
            Some(Api::Google)
        } else {
            None
        }
    }

    /// The `api` field of the request log.
    fn name(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::OpenAiChat => "openai-chat",
            Api::OpenAiResponses => "openai-responses",
            Api::Google => "google",
            Api::PiMessages => "pi-messages",
        }
    }
}

struct Usage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    /// Reasoning tokens (part of `output`); only sent where the reference has no fixed value.
    reasoning: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Text,
    Thinking,
    ToolCall,
    /// Unknown block types are skipped (but keep their index).
    Unknown,
}

/// A script block, decoded.
struct Block {
    kind: Kind,
    /// The text of a text or thinking block; the streamed arguments of a tool call
    /// (`raw_json`, else `input` serialized like Python).
    text: String,
    /// `text` as streamed: the block's `chunks`, else pieces of `chunk_size` characters.
    chunks: Vec<String>,
    id: Option<String>,
    name: String,
    input: Value,
    signature: Option<String>,
    /// `Some(data)` for a redacted thinking block (Anthropic only).
    redacted: Option<String>,
    /// The Chat Completions delta field of a thinking block (`reasoning_content`).
    openai_field: String,
}

/// A script REPLY, decoded once (bad field types fall back to the defaults).
struct Reply {
    blocks: Vec<Block>,
    /// How many blocks are streamed (`hang_after_blocks`, else all).
    block_limit: usize,
    delay_ms: u64,
    first_delay_ms: u64,
    usage: Usage,
    stop_reason: String,
    status: Option<u16>,
    error_type: Option<String>,
    error_message: Option<String>,
    error_code: Value,
    error_status: Option<String>,
    raw_error_body: Option<String>,
    content_type: Option<String>,
    headers: Vec<(String, String)>,
    hang: bool,
    hang_max_ms: u64,
    disconnect: bool,
    truncate_without_stop: bool,
    stream_error: Option<Value>,
    raw_sse: Option<Vec<String>>,
}

impl Reply {
    fn parse(reply: &Value, default_delay_ms: u64) -> Reply {
        let get = |key: &str| reply.get(key);
        let string = |key: &str| get(key).and_then(Value::as_str).map(str::to_string);
        let chunk_size = uint(get("chunk_size")).unwrap_or(0);
        let blocks: Vec<Block> = get("blocks")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|b| Block::parse(b, chunk_size))
            .collect();
        let has_tool_call = blocks.iter().any(|b| b.kind == Kind::ToolCall);
        let stop_reason = string("stop_reason")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| {
                if has_tool_call {
                    "tool_use"
                } else {
                    "end_turn"
                }
                .into()
            });
        let u = get("usage");
        let usage_field = |key: &str| uint(u.and_then(|u| u.get(key)));
        let headers = get("headers")
            .and_then(Value::as_object)
            .map(|h| h.iter().map(|(k, v)| (k.clone(), value_text(v))).collect())
            .unwrap_or_default();
        let raw_sse = match get("raw_sse") {
            Some(Value::String(text)) => Some(split_sse_events(text)),
            Some(Value::Array(pieces)) => Some(pieces.iter().map(value_text).collect()),
            _ => None,
        };
        Reply {
            block_limit: uint(get("hang_after_blocks")).map_or(blocks.len(), |n| n as usize),
            blocks,
            delay_ms: uint(get("delay_ms")).unwrap_or(default_delay_ms),
            first_delay_ms: uint(get("first_delay_ms")).unwrap_or(0),
            usage: Usage {
                input: usage_field("input").unwrap_or(10),
                output: usage_field("output").unwrap_or(5),
                cache_read: usage_field("cache_read").unwrap_or(0),
                cache_write: usage_field("cache_write").unwrap_or(0),
                reasoning: usage_field("reasoning"),
            },
            stop_reason,
            status: uint(get("status")).and_then(|s| u16::try_from(s).ok()),
            error_type: string("error_type").filter(|s| !s.is_empty()),
            error_message: string("error_message").filter(|s| !s.is_empty()),
            error_code: get("error_code").cloned().unwrap_or(Value::Null),
            error_status: string("error_status"),
            raw_error_body: string("raw_error_body"),
            content_type: string("content_type"),
            headers,
            hang: truthy(get("hang")),
            hang_max_ms: uint(get("hang_max_ms")).unwrap_or(60_000),
            disconnect: truthy(get("disconnect")),
            truncate_without_stop: truthy(get("truncate_without_stop")),
            stream_error: get("stream_error").filter(|v| truthy(Some(v))).cloned(),
            raw_sse,
        }
    }

    /// The blocks to stream, with their index in the script.
    fn streamed_blocks(&self) -> impl Iterator<Item = (usize, &Block)> {
        self.blocks.iter().enumerate().take(self.block_limit)
    }
}

impl Block {
    fn parse(b: &Value, reply_chunk_size: u64) -> Block {
        let string = |key: &str| b.get(key).and_then(Value::as_str).map(str::to_string);
        let kind = match b.get("type").and_then(Value::as_str) {
            Some("text") => Kind::Text,
            Some("thinking") => Kind::Thinking,
            Some("tool_call") => Kind::ToolCall,
            _ => Kind::Unknown,
        };
        let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
        let text = match kind {
            Kind::ToolCall => string("raw_json").unwrap_or_else(|| py_json(&input)),
            _ => string("text").unwrap_or_default(),
        };
        let size = b
            .get("chunk_size")
            .map_or(reply_chunk_size, |v| uint(Some(v)).unwrap_or(0));
        let explicit = b.get("chunks").and_then(Value::as_array);
        Block {
            kind,
            chunks: chunks_of(&text, size as usize, explicit),
            text,
            id: string("id"),
            name: string("name").unwrap_or_default(),
            input,
            signature: string("signature"),
            redacted: (kind == Kind::Thinking && truthy(b.get("redacted")))
                .then(|| string("data").unwrap_or_else(|| "REDACTED".into())),
            openai_field: string("openai_field").unwrap_or_else(|| "reasoning_content".into()),
        }
    }

    /// The script's `id`, else `{prefix}_{index}`.
    fn id_or(&self, prefix: &str, index: usize) -> String {
        self.id
            .clone()
            .unwrap_or_else(|| format!("{prefix}_{index}"))
    }
}

/// Splits text into pieces of `size` characters (whole when 0), unless `explicit` lists them.
fn chunks_of(text: &str, size: usize, explicit: Option<&Vec<Value>>) -> Vec<String> {
    if let Some(list) = explicit {
        return list.iter().map(value_text).collect();
    }
    let chars: Vec<char> = text.chars().collect();
    if size == 0 || chars.len() <= size {
        return vec![text.to_string()];
    }
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// `raw_sse` text as events: split after each blank line (`\n\n`), separators kept.
fn split_sse_events(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find("\n\n") {
        pieces.push(rest[..end + 2].to_string());
        rest = &rest[end + 2..];
    }
    if !rest.is_empty() {
        pieces.push(rest.to_string());
    }
    pieces
}

fn openai_finish(stop_reason: &str) -> &'static str {
    match stop_reason {
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "refusal" => "content_filter",
        _ => "stop",
    }
}

/// Anthropic stop reasons as Gemini finish reasons; other names pass through (e.g. `SAFETY`).
fn google_finish(stop_reason: &str) -> &str {
    match stop_reason {
        "end_turn" | "tool_use" | "stop_sequence" | "pause_turn" => "STOP",
        "max_tokens" => "MAX_TOKENS",
        "refusal" => "SAFETY",
        other => other,
    }
}

fn default_error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn default_error_message(error_type: &str) -> &'static str {
    match error_type {
        "overloaded_error" => "Overloaded",
        "rate_limit_error" => "Rate limited",
        "api_error" => "Internal server error",
        _ => "Error",
    }
}

fn google_status(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "NOT_IMPLEMENTED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    }
}

// ---------------------------------------------------------------------------- value helpers

/// Python truthiness of an optional JSON value.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// A non-negative integer (floats truncated); `None` when absent, negative or not a number.
fn uint(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

/// A string value as is, anything else as JSON text.
fn value_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn str_or(v: Option<&Value>, default: &str) -> String {
    v.and_then(Value::as_str).unwrap_or(default).to_string()
}

/// Serializes like Python's `json.dumps(v)`: `", "` and `": "` separators, every character
/// outside printable ASCII escaped as `\uXXXX` (surrogate pairs above U+FFFF).
fn py_json(v: &Value) -> String {
    let mut out = String::new();
    write_py_json(v, &mut out);
    out
}

fn write_py_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_py_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_py_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (n, (k, item)) in fields.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_py_str(k, out);
                out.push_str(": ");
                write_py_json(item, out);
            }
            out.push('}');
        }
    }
}

fn write_py_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}
