//! A raw-socket HTTP/1.1 server for fault injection: `std::net` only, one thread per
//! connection, no HTTP library. The binary under test talks to it as its LLM provider (point a
//! models.json `baseUrl` at [`RawServer::base_url`]), and each request is answered by the next
//! scripted [`Reply`]: exact bytes (any status line, headers and body, well-formed or not),
//! cut into writes at chosen offsets, paced, and ended by a clean close, a FIN or an RST at a
//! chosen byte, or a stall that holds the connection until the client drops it.
//!
//! Offsets are positions in the reply's *wire* ([`Reply::wire`]: status line, headers, framing
//! and body exactly as sent), so a cut can land in the headers, inside an HTTP chunk-size line,
//! mid-event or inside a UTF-8 character alike. [`Reply::at`] finds a position by content.
//!
//! An RST is made without `unsafe` (no `SO_LINGER`): the request body is left unread, and Linux
//! answers the close of a socket with unread received data with an RST instead of a FIN. Data
//! written before it was already delivered to the client's receive queue on loopback, and the
//! client reads it before the reset (`read` returns it, then `ECONNRESET`).
//!
//! The module also writes Anthropic Messages SSE streams ([`sse`]); `mock_llm`'s event writers
//! are private to its connection type, and these return text so tests can cut it anywhere.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// The longest request head read (a client sending more is cut off).
const MAX_HEAD: usize = 64 * 1024;

/// How the body of a [`Reply::http`] is delimited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length`.
    Length,
    /// No length: the body ends when the server closes the connection (a FIN is then a clean
    /// end of the body).
    Close,
    /// `Transfer-Encoding: chunked`, one chunk per SSE event (after each blank line).
    Chunked,
    /// `Transfer-Encoding: chunked`, chunks cut at these body offsets.
    ChunkedAt(Vec<usize>),
}

/// How a reply's wire ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Everything is sent, then the connection is closed (FIN), or, for a
    /// [`Reply::keep_alive`] reply, the next request on it is served.
    Complete,
    /// The first n bytes are sent, then the connection is closed with a FIN.
    Fin(usize),
    /// The first n bytes are sent, then the connection is reset (RST).
    Rst(usize),
    /// The first n bytes are sent, then nothing until the client closes the connection.
    Stall(usize),
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    wire: Vec<u8>,
    head_len: usize,
    /// Write boundaries (offsets in the wire, ascending).
    cuts: Vec<usize>,
    /// Pause before each write after the first.
    pause: Duration,
    end: End,
    keep_alive: bool,
}

/// The reason phrase of a status (empty for unusual ones: it is optional on the wire).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Where the SSE events of `body` end (after each blank line, `\n\n` or `\r\n\r\n`).
fn event_ends(body: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with(b"\r\n\r\n") {
            i += 4;
            ends.push(i);
        } else if body[i..].starts_with(b"\n\n") {
            i += 2;
            ends.push(i);
        } else {
            i += 1;
        }
    }
    ends
}

/// `body` in chunked transfer coding, chunks cut at `cuts`, with the last chunk.
fn chunked(body: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
        let cut = cut.min(body.len());
        if cut > start {
            out.extend_from_slice(format!("{:x}\r\n", cut - start).as_bytes());
            out.extend_from_slice(&body[start..cut]);
            out.extend_from_slice(b"\r\n");
            start = cut;
        }
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

impl Reply {
    /// A response with `status`, the `headers` as given, the framing header, and
    /// `Connection: close`; `body` framed by `framing`.
    pub fn http(status: u16, headers: &[(&str, &str)], body: &[u8], framing: Framing) -> Reply {
        Self::build(status, headers, body, framing, false)
    }

    /// Like [`Reply::http`] with `Connection: keep-alive`: after a complete reply the server
    /// waits for the next request on the connection. A close-delimited body cannot be kept
    /// alive.
    pub fn keep_alive(
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        framing: Framing,
    ) -> Reply {
        assert_ne!(
            framing,
            Framing::Close,
            "a close-delimited body ends the connection"
        );
        Self::build(status, headers, body, framing, true)
    }

    fn build(
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        framing: Framing,
        keep_alive: bool,
    ) -> Reply {
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let framed = match &framing {
            Framing::Length => {
                head.push_str(&format!("Content-Length: {}\r\n", body.len()));
                body.to_vec()
            }
            Framing::Close => body.to_vec(),
            Framing::Chunked => {
                head.push_str("Transfer-Encoding: chunked\r\n");
                chunked(body, &event_ends(body))
            }
            Framing::ChunkedAt(cuts) => {
                head.push_str("Transfer-Encoding: chunked\r\n");
                chunked(body, cuts)
            }
        };
        head.push_str(if keep_alive {
            "Connection: keep-alive\r\n"
        } else {
            "Connection: close\r\n"
        });
        head.push_str("\r\n");
        let head_len = head.len();
        let mut wire = head.into_bytes();
        wire.extend_from_slice(&framed);
        Reply {
            wire,
            head_len,
            cuts: Vec::new(),
            pause: Duration::ZERO,
            end: End::Complete,
            keep_alive,
        }
    }

    /// An error status with a body of `content_type`, `Content-Length` framed.
    pub fn status(status: u16, content_type: &str, body: &[u8]) -> Reply {
        Self::http(
            status,
            &[("Content-Type", content_type)],
            body,
            Framing::Length,
        )
    }

    /// A 200 `text/event-stream` response carrying `events`.
    pub fn sse(events: &str, framing: Framing) -> Reply {
        Self::http(
            200,
            &[
                ("Content-Type", "text/event-stream; charset=utf-8"),
                ("Cache-Control", "no-cache"),
            ],
            events.as_bytes(),
            framing,
        )
    }

    /// A complete, well-behaved answer: one text block streamed as `deltas`.
    pub fn text(deltas: &[&str]) -> Reply {
        Self::sse(&sse::text_reply("msg_raw", deltas), Framing::Chunked)
    }

    /// Exactly these bytes, whatever they are (a malformed status line, a header without its
    /// end, ...); the connection is closed after them.
    pub fn raw(wire: &[u8]) -> Reply {
        let head_len = wire
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(wire.len(), |p| p + 4);
        Reply {
            wire: wire.to_vec(),
            head_len,
            cuts: Vec::new(),
            pause: Duration::ZERO,
            end: End::Complete,
            keep_alive: false,
        }
    }

    /// The bytes sent (before any cut).
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// Where the body starts in the wire.
    pub fn head_len(&self) -> usize {
        self.head_len
    }

    /// The wire offset of the first occurrence of `needle` plus `plus`; panics when absent.
    pub fn at(&self, needle: &str, plus: usize) -> usize {
        let n = needle.as_bytes();
        let pos = self
            .wire
            .windows(n.len())
            .position(|w| w == n)
            .unwrap_or_else(|| panic!("{needle:?} is not in the reply"));
        pos + plus
    }

    /// Writes end at these wire offsets (each write is one `write_all`, with `TCP_NODELAY`).
    pub fn writes_at(mut self, mut cuts: Vec<usize>) -> Reply {
        cuts.sort_unstable();
        cuts.dedup();
        self.cuts = cuts;
        self
    }

    /// Writes of `n` bytes each.
    pub fn writes_of(self, n: usize) -> Reply {
        let cuts = (n..self.wire.len()).step_by(n.max(1)).collect();
        self.writes_at(cuts)
    }

    /// Sleeps `pause` before each write after the first (pacing, so the client sees the writes
    /// as separate reads; never used to order anything).
    pub fn pause(mut self, pause: Duration) -> Reply {
        self.pause = pause;
        self
    }

    /// One byte per write, `pause` apart.
    pub fn drip(self, pause: Duration) -> Reply {
        self.writes_of(1).pause(pause)
    }

    /// Sends the first `n` bytes, then closes with a FIN.
    pub fn fin_at(mut self, n: usize) -> Reply {
        assert!(n <= self.wire.len());
        self.end = End::Fin(n);
        self
    }

    /// Sends the first `n` bytes, then resets the connection.
    pub fn rst_at(mut self, n: usize) -> Reply {
        assert!(n <= self.wire.len());
        self.end = End::Rst(n);
        self
    }

    /// Sends the first `n` bytes, then holds the connection until the client closes it.
    pub fn stall_at(mut self, n: usize) -> Reply {
        assert!(n <= self.wire.len());
        self.end = End::Stall(n);
        self
    }

    /// How many bytes are sent.
    fn sent_len(&self) -> usize {
        match self.end {
            End::Complete => self.wire.len(),
            End::Fin(n) | End::Rst(n) | End::Stall(n) => n,
        }
    }
}

/// One request the server received, and what became of its connection.
#[derive(Clone, Debug)]
pub struct Logged {
    /// The accepted connection it came on (0, 1, ... in accept order).
    pub connection: usize,
    /// Request line and headers, without the final blank line.
    pub head: String,
    /// `None` when the body was left unread (an [`End::Rst`] reply).
    pub body: Option<Vec<u8>>,
    /// The reply was sent up to its end (all of it, or up to its cut or stall point), and
    /// unless it is kept alive or stalls, the connection was closed.
    pub written: bool,
    /// The client closed the connection while the server was stalling.
    pub closed_by_client: bool,
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    log: Vec<Logged>,
    connections: usize,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
    /// Clones of the open sockets by connection, shut down when the server is dropped. A
    /// connection's clone is dropped before the server closes it: a close only sends its FIN
    /// or RST once every descriptor of the socket is closed.
    sockets: Mutex<HashMap<usize, TcpStream>>,
}

/// The running server; stops (and shuts every connection down) when dropped.
pub struct RawServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl RawServer {
    /// Binds 127.0.0.1:0 and answers requests with `script`, in order; once it is used up,
    /// with a 500 `raw_server: script exhausted`.
    pub fn start(script: Vec<Reply>) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("raw_server: bind");
        let addr = listener.local_addr().expect("raw_server: local_addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                script: script.into(),
                ..State::default()
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
            sockets: Mutex::new(HashMap::new()),
        });
        let acceptor = Arc::clone(&shared);
        thread::Builder::new()
            .name("raw-server-accept".into())
            .spawn(move || accept_loop(&acceptor, &listener))
            .expect("raw_server: spawn");
        RawServer { addr, shared }
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.state.lock().script.push_back(reply);
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Logged> {
        self.shared.state.lock().log.clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.state.lock().connections
    }

    /// Waits until `cond` holds for the log; panics after `timeout`.
    fn wait(&self, what: &str, timeout: Duration, cond: impl Fn(&[Logged]) -> bool) {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.state.lock();
        while !cond(&st.log) {
            if self
                .shared
                .changed
                .wait_until(&mut st, deadline)
                .timed_out()
                && !cond(&st.log)
            {
                panic!(
                    "raw_server: timed out waiting for {what}; log: {:#?}",
                    st.log
                );
            }
        }
    }

    /// Waits for `n` requests.
    pub fn wait_requests(&self, n: usize, timeout: Duration) {
        self.wait(&format!("{n} requests"), timeout, |log| log.len() >= n);
    }

    /// Waits until the reply to request `i` (0-based) was sent up to its end (and its
    /// connection closed, for a reply that closes it).
    pub fn wait_written(&self, i: usize, timeout: Duration) {
        self.wait(&format!("reply {i} written"), timeout, |log| {
            log.get(i).is_some_and(|l| l.written)
        });
    }

    /// Waits until the client closed the connection of request `i` (which the server was
    /// stalling on).
    pub fn wait_closed_by_client(&self, i: usize, timeout: Duration) {
        self.wait(
            &format!("request {i}'s connection closed"),
            timeout,
            |log| log.get(i).is_some_and(|l| l.closed_by_client),
        );
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        for s in self.shared.sockets.lock().values() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let connection = {
            let mut st = shared.state.lock();
            st.connections += 1;
            st.connections - 1
        };
        if let Ok(clone) = stream.try_clone() {
            shared.sockets.lock().insert(connection, clone);
        }
        let shared = Arc::clone(shared);
        let _ = thread::Builder::new()
            .name("raw-server-conn".into())
            .spawn(move || {
                serve(&shared, stream, connection);
                shared.sockets.lock().remove(&connection);
            });
    }
}

/// A request head: the text, and how its body is framed.
struct Head {
    text: String,
    content_length: Option<usize>,
    chunked: bool,
}

/// Reads a request head byte by byte (so nothing of the body is consumed). `None` when the
/// client closed the connection (or sent too much) first.
fn read_head(stream: &mut TcpStream) -> Option<Head> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD || !matches!(stream.read(&mut byte), Ok(1)) {
            return None;
        }
        if head.is_empty() && (byte[0] == b'\r' || byte[0] == b'\n') {
            continue;
        }
        head.push(byte[0]);
    }
    head.truncate(head.len() - 4);
    let text = String::from_utf8_lossy(&head).into_owned();
    let header = |name: &str| {
        text.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    Some(Head {
        content_length: header("content-length").and_then(|v| v.parse().ok()),
        chunked: header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked")),
        text,
    })
}

fn read_line(stream: &mut TcpStream) -> io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        stream.read_exact(&mut byte)?;
        line.push(byte[0]);
    }
    line.truncate(line.len() - 2);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn read_body(stream: &mut TcpStream, head: &Head) -> io::Result<Vec<u8>> {
    if head.chunked {
        let mut body = Vec::new();
        loop {
            let size_line = read_line(stream)?;
            let size_text = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| io::Error::other("bad chunk size"))?;
            if size == 0 {
                while !read_line(stream)?.is_empty() {}
                return Ok(body);
            }
            let start = body.len();
            body.resize(start + size, 0);
            stream.read_exact(&mut body[start..])?;
            read_line(stream)?;
        }
    }
    let mut body = vec![0; head.content_length.unwrap_or(0)];
    stream.read_exact(&mut body)?;
    Ok(body)
}

fn update(shared: &Shared, i: usize, f: impl FnOnce(&mut Logged)) {
    let mut st = shared.state.lock();
    f(&mut st.log[i]);
    shared.changed.notify_all();
}

/// Serves the requests of one connection.
fn serve(shared: &Shared, mut stream: TcpStream, connection: usize) {
    let _ = stream.set_nodelay(true);
    loop {
        let Some(head) = read_head(&mut stream) else {
            return;
        };
        let reply =
            shared.state.lock().script.pop_front().unwrap_or_else(|| {
                Reply::status(500, "text/plain", b"raw_server: script exhausted")
            });
        let body = if matches!(reply.end, End::Rst(_)) {
            // Leave the body unread (the close then sends an RST); wait until some is here.
            let _ = stream.peek(&mut [0u8; 1]);
            None
        } else {
            match read_body(&mut stream, &head) {
                Ok(body) => Some(body),
                Err(_) => return,
            }
        };
        let i = {
            let mut st = shared.state.lock();
            st.log.push(Logged {
                connection,
                head: head.text,
                body,
                written: false,
                closed_by_client: false,
            });
            shared.changed.notify_all();
            st.log.len() - 1
        };
        if write_reply(shared, &mut stream, &reply).is_err() {
            return;
        }
        match reply.end {
            End::Complete if reply.keep_alive => {
                update(shared, i, |l| l.written = true);
            }
            End::Complete | End::Fin(_) | End::Rst(_) => {
                // Closed (the clone first: the last descriptor's close sends the FIN or RST)
                // before it is told.
                shared.sockets.lock().remove(&connection);
                drop(stream);
                update(shared, i, |l| l.written = true);
                return;
            }
            End::Stall(_) => {
                update(shared, i, |l| l.written = true);
                // The client has nothing more to send: a read returns when it closes the
                // connection (0 or an error), or when the server is dropped.
                let mut buf = [0u8; 4096];
                while let Ok(1..) = stream.read(&mut buf) {}
                if !shared.stopping.load(Ordering::SeqCst) {
                    update(shared, i, |l| l.closed_by_client = true);
                }
                return;
            }
        }
    }
}

fn write_reply(shared: &Shared, stream: &mut TcpStream, reply: &Reply) -> io::Result<()> {
    let len = reply.sent_len();
    let mut start = 0;
    let ends = reply.cuts.iter().filter(|&&c| c > 0 && c < len);
    for &end in ends.chain(std::iter::once(&len)) {
        if start > 0 && !reply.pause.is_zero() {
            if shared.stopping.load(Ordering::SeqCst) {
                return Err(io::Error::other("stopping"));
            }
            thread::sleep(reply.pause);
        }
        stream.write_all(&reply.wire[start..end])?;
        start = end;
    }
    stream.flush()
}

/// Anthropic Messages server-sent events, as text (`event:` and `data:` lines, LF line ends,
/// compact JSON with non-ASCII characters unescaped, so a cut can split one).
pub mod sse {
    use serde_json::{json, Value};

    /// One event.
    pub fn event(name: &str, data: &Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    pub fn message_start(id: &str) -> String {
        event(
            "message_start",
            &json!({"type": "message_start", "message": {"id": id, "type": "message",
                "role": "assistant", "model": "mock-sonnet", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 10,
                    "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                    "output_tokens": 1}}}),
        )
    }

    pub fn text_start(index: usize) -> String {
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
        )
    }

    pub fn text_delta(index: usize, text: &str) -> String {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": text}}),
        )
    }

    pub fn tool_start(index: usize, id: &str, name: &str) -> String {
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        )
    }

    pub fn json_delta(index: usize, partial: &str) -> String {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial}}),
        )
    }

    pub fn block_stop(index: usize) -> String {
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        )
    }

    /// `message_delta` with `stop_reason`, then `message_stop`.
    pub fn message_end(stop_reason: &str) -> String {
        let delta = event(
            "message_delta",
            &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0, "output_tokens": 5}}),
        );
        delta + &event("message_stop", &json!({"type": "message_stop"}))
    }

    /// A whole answer: one text block streamed as `deltas`, ending with `end_turn`.
    pub fn text_reply(id: &str, deltas: &[&str]) -> String {
        let mut s = message_start(id) + &text_start(0);
        for d in deltas {
            s.push_str(&text_delta(0, d));
        }
        s + &block_stop(0) + &message_end("end_turn")
    }

    /// The same events with CRLF line ends.
    pub fn crlf(events: &str) -> String {
        events.replace('\n', "\r\n")
    }
}
