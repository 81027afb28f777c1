//! Blocking HTTP for the provider adapters: POST a JSON body, get a streaming response body,
//! and stop promptly when the request's [`CancelToken`] fires.
//!
//! Cancellation reaches every phase:
//! * connecting and waiting for the response headers run on a short-lived helper thread, so the
//!   caller returns as soon as the token fires (even while DNS or a TCP connect is still
//!   blocked; the helper finishes in the background and its result is dropped);
//! * a blocked body read is interrupted by shutting the sockets down: each request borrows a
//!   ureq [`Agent`] of its own from a small idle list, and a cancel hook calls
//!   [`Agent::shutdown`], which closes the agent's connections at once.
//!
//! Agents go back to the idle list after a clean request, so keep-alive connections are reused
//! across turns. Proxies come from `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY`
//! (ureq's `Proxy::try_from_env`), TLS is rustls with the webpki roots, and HTTP error
//! statuses are returned as responses, not errors.

use std::fmt;
use std::io::{self, Read};
use std::time::Duration;

use crossbeam_channel::{bounded, select};
use parking_lot::Mutex;
use ureq::Agent;

use crate::cancel::{CancelToken, HookGuard};

/// The `User-Agent` sent with every request.
pub fn user_agent() -> String {
    format!("pi-rpc/{}", env!("CARGO_PKG_VERSION"))
}

/// Idle agents kept for reuse (each holds its own keep-alive connections).
static IDLE_AGENTS: Mutex<Vec<Agent>> = Mutex::new(Vec::new());
const MAX_IDLE_AGENTS: usize = 4;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

fn new_agent() -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(user_agent())
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .max_idle_connections_per_host(2)
        .build();
    Agent::new_with_config(config)
}

fn take_agent() -> Agent {
    IDLE_AGENTS.lock().pop().unwrap_or_else(new_agent)
}

fn return_agent(agent: Agent) {
    let mut idle = IDLE_AGENTS.lock();
    if idle.len() < MAX_IDLE_AGENTS {
        idle.push(agent);
    }
}

/// One POST request.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    pub url: String,
    /// Header names and values, in order; later same-named headers (case-insensitive) win.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Longest wait for the response headers or for the next bytes of the body.
    pub idle_timeout: Duration,
}

/// Why a request produced no response. `Display` follows the wording pi's SDKs use, so the
/// agent's retry classification (`errors::is_retryable`) treats them the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The cancel token fired before the response headers arrived.
    Aborted,
    /// The URL could not be used.
    InvalidUrl { url: String, detail: String },
    /// Nothing listens at `target` (`host:port`).
    ConnectionRefused { target: String },
    /// The host name did not resolve.
    HostNotFound { host: String },
    /// Connecting, sending or waiting for the response took too long.
    TimedOut,
    /// Any other transport failure (TLS, proxy, reset, protocol).
    Connection { detail: String },
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Aborted => f.write_str("Request aborted"),
            HttpError::InvalidUrl { url, detail } => write!(f, "Invalid URL: {url} ({detail})"),
            HttpError::ConnectionRefused { target } => {
                write!(f, "Connection error.: connect ECONNREFUSED {target}")
            }
            HttpError::HostNotFound { host } => {
                write!(f, "Connection error.: getaddrinfo ENOTFOUND {host}")
            }
            HttpError::TimedOut => f.write_str("Request timed out."),
            HttpError::Connection { detail } if detail.is_empty() => {
                f.write_str("Connection error.")
            }
            HttpError::Connection { detail } => write!(f, "Connection error.: {detail}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// A response whose body is still to be read. Reading is interrupted (an error) when the
/// request's cancel token fires.
pub struct HttpResponse {
    status: u16,
    content_type: Option<String>,
    /// The error-type header of an AWS error response (`x-amzn-errortype`), which names the
    /// error that Bedrock's message is prefixed with.
    error_type: Option<String>,
    /// The `request-id` header (Anthropic's token endpoint names its requests there).
    request_id: Option<String>,
    body: ureq::BodyReader<'static>,
    agent: Option<Agent>,
    cancel: CancelToken,
    _hook: HookGuard,
    /// The body was read to its end without an error (the agent can be reused).
    clean_end: bool,
    failed: bool,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .finish()
    }
}

impl HttpResponse {
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// The `x-amzn-errortype` header (AWS services name their errors there).
    pub fn error_type(&self) -> Option<&str> {
        self.error_type.as_deref()
    }

    /// The `request-id` header.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// Reads the rest of the body as text, at most `limit` bytes of it: reading stops there
    /// (the rest is never read; the connection is then not reused). Invalid UTF-8 is replaced,
    /// except a character cut in two by the limit, which is dropped.
    pub fn read_text(&mut self, limit: usize) -> io::Result<CappedText> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let mut cut = false;
        loop {
            // Never more than one byte past the limit: enough to know the body goes on.
            let want = (limit - buf.len()).saturating_add(1).min(chunk.len());
            let n = self.read(&mut chunk[..want])?;
            if n == 0 {
                break;
            }
            let room = limit - buf.len();
            buf.extend_from_slice(&chunk[..n.min(room)]);
            if n > room {
                cut = true;
                // Do not reuse a connection whose body was not drained.
                self.failed = true;
                break;
            }
        }
        let text = match String::from_utf8(buf) {
            Ok(s) => s,
            Err(e) => {
                let utf8 = e.utf8_error();
                let mut bytes = e.into_bytes();
                if cut && utf8.error_len().is_none() {
                    // Only the last character is incomplete: the limit cut it.
                    bytes.truncate(utf8.valid_up_to());
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        Ok(CappedText { text, cut })
    }
}

/// A response body read up to a limit ([`HttpResponse::read_text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CappedText {
    pub text: String,
    /// The body went on past the limit; the rest was not read.
    pub cut: bool,
}

impl Read for HttpResponse {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            self.failed = true;
            // Not `Interrupted`: readers retry that kind.
            return Err(io::Error::other("This operation was aborted"));
        }
        match self.body.read(buf) {
            Ok(0) if !buf.is_empty() => {
                self.clean_end = true;
                Ok(0)
            }
            Ok(n) => Ok(n),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

impl Drop for HttpResponse {
    fn drop(&mut self) {
        if let Some(agent) = self.agent.take() {
            if self.clean_end && !self.failed && !self.cancel.is_cancelled() {
                return_agent(agent);
            }
        }
    }
}

/// What a failed body read means, in the words pi's stack would use (undici's `terminated`
/// with its cause). Callers check the cancel token first: a read interrupted by cancellation
/// is an abort, not an error.
pub fn describe_read_error(e: &io::Error) -> String {
    let kind = e.kind();
    // ureq wraps its own errors (e.g. a read timeout) in an io::Error.
    let inner = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<ureq::Error>())
        .map(|u| u.to_string());
    match kind {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            "terminated: timed out waiting for data".into()
        }
        io::ErrorKind::ConnectionReset => "terminated: read ECONNRESET".into(),
        io::ErrorKind::ConnectionAborted => "terminated: read ECONNABORTED".into(),
        io::ErrorKind::BrokenPipe => "terminated: write EPIPE".into(),
        io::ErrorKind::UnexpectedEof => "terminated: other side closed".into(),
        _ => match inner {
            Some(u) if u.to_lowercase().contains("timeout") || u.contains("timed out") => {
                format!("terminated: {u} (timed out waiting for data)")
            }
            Some(u) => format!("terminated: {u}"),
            None => format!("terminated: {e}"),
        },
    }
}

/// The method of a [`send`] request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Post,
    /// A GET (the body is not sent). Like `Put`, its connect timeout is `idle_timeout` too: the
    /// credential endpoints that use them must fail fast where they do not exist.
    Get,
    Put,
}

/// Sends `req` as a POST and returns the response once its headers arrived. Returns
/// [`HttpError::Aborted`] as soon as `cancel` fires before that.
pub fn post(req: HttpRequest, cancel: &CancelToken) -> Result<HttpResponse, HttpError> {
    send(Method::Post, req, cancel)
}

/// [`post`] with another method.
pub(crate) fn send(
    method: Method,
    req: HttpRequest,
    cancel: &CancelToken,
) -> Result<HttpResponse, HttpError> {
    if cancel.is_cancelled() {
        return Err(HttpError::Aborted);
    }
    let target = url_target(&req.url)?;
    let agent = take_agent();
    let (cancel_tx, cancel_rx) = bounded::<()>(1);
    let hook_agent = agent.clone();
    let hook = cancel.on_cancel(move || {
        hook_agent.shutdown();
        let _ = cancel_tx.try_send(());
    });
    let (tx, rx) = bounded(1);
    let worker_agent = agent.clone();
    let send = move || {
        let result = send_request(&worker_agent, method, req);
        let _ = tx.send(result);
    };
    // A helper thread for the connect/headers phase; inline if the thread cannot start.
    let spawned = std::thread::Builder::new()
        .name("pi-rpc-http".into())
        .spawn(send);
    let result = match spawned {
        Ok(_) => select! {
            recv(rx) -> r => match r {
                Ok(r) => r,
                Err(_) => Err(ureq::Error::ConnectionFailed),
            },
            recv(cancel_rx) -> _ => return Err(HttpError::Aborted),
        },
        Err(_) => {
            // Thread creation failed (resource exhaustion); nothing else to fall back to.
            return Err(HttpError::Connection {
                detail: "could not start the HTTP thread".into(),
            });
        }
    };
    if cancel.is_cancelled() {
        return Err(HttpError::Aborted);
    }
    match result {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let content_type = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let error_type = resp
                .headers()
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let request_id = resp
                .headers()
                .get("request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = resp.into_body().into_reader();
            Ok(HttpResponse {
                status,
                content_type,
                error_type,
                request_id,
                body,
                agent: Some(agent),
                cancel: cancel.clone(),
                _hook: hook,
                clean_end: false,
                failed: false,
            })
        }
        Err(e) => Err(map_error(e, &target)),
    }
}

fn send_request(
    agent: &Agent,
    method: Method,
    req: HttpRequest,
) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
    let headers = dedupe_headers(&req.headers);
    if method == Method::Get {
        let mut builder = agent.get(&req.url);
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        return builder
            .config()
            .timeout_connect(Some(req.idle_timeout))
            .timeout_per_read(Some(req.idle_timeout))
            .timeout_recv_response(Some(req.idle_timeout))
            .build()
            .call();
    }
    let mut builder = match method {
        Method::Put => agent.put(&req.url),
        _ => agent.post(&req.url),
    };
    for (name, value) in &headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let mut config = builder
        .config()
        .timeout_per_read(Some(req.idle_timeout))
        .timeout_recv_response(Some(req.idle_timeout));
    if method == Method::Put {
        config = config.timeout_connect(Some(req.idle_timeout));
    }
    config.build().send(&req.body[..])
}

/// Later same-named headers (case-insensitive) replace earlier ones, keeping the first
/// position.
pub fn dedupe_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        match out.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some(slot) => slot.1 = value.clone(),
            None => out.push((name.clone(), value.clone())),
        }
    }
    out
}

/// `host:port` of an http(s) URL, for error messages.
pub(crate) fn url_target(url: &str) -> Result<String, HttpError> {
    let invalid = |detail: &str| HttpError::InvalidUrl {
        url: url.to_owned(),
        detail: detail.to_owned(),
    };
    let (scheme, rest) = url.split_once("://").ok_or_else(|| invalid("no scheme"))?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err(invalid("only http and https are supported")),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.is_empty() {
        return Err(invalid("no host"));
    }
    let has_port = if authority.starts_with('[') {
        authority.contains("]:")
    } else {
        authority.contains(':')
    };
    Ok(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    })
}

fn host_of(target: &str) -> &str {
    match target.rsplit_once(':') {
        Some((h, _)) => h,
        None => target,
    }
}

/// A ureq error as an [`HttpError`]; `target` is the request's `host:port`.
pub(crate) fn map_error(e: ureq::Error, target: &str) -> HttpError {
    match e {
        ureq::Error::Io(io) => map_io(&io, target),
        ureq::Error::Timeout(_) => HttpError::TimedOut,
        ureq::Error::HostNotFound => HttpError::HostNotFound {
            host: host_of(target).to_owned(),
        },
        ureq::Error::ConnectionFailed => HttpError::Connection {
            detail: String::new(),
        },
        ureq::Error::BadUri(u) => HttpError::InvalidUrl {
            url: u,
            detail: "bad URI".into(),
        },
        ureq::Error::Http(h) => HttpError::InvalidUrl {
            url: target.to_owned(),
            detail: h.to_string(),
        },
        other => HttpError::Connection {
            detail: other.to_string(),
        },
    }
}

fn map_io(io: &io::Error, target: &str) -> HttpError {
    match io.kind() {
        io::ErrorKind::ConnectionRefused => HttpError::ConnectionRefused {
            target: target.to_owned(),
        },
        io::ErrorKind::TimedOut => HttpError::TimedOut,
        io::ErrorKind::ConnectionReset => HttpError::Connection {
            detail: "read ECONNRESET".into(),
        },
        io::ErrorKind::ConnectionAborted => HttpError::Connection {
            detail: "read ECONNABORTED".into(),
        },
        io::ErrorKind::BrokenPipe => HttpError::Connection {
            detail: "write EPIPE".into(),
        },
        io::ErrorKind::UnexpectedEof => HttpError::Connection {
            detail: "socket hang up".into(),
        },
        _ => HttpError::Connection {
            detail: io.to_string(),
        },
    }
}

/// A request that got no response, as `fetch` reports it: `fetch failed`, with undici's cause
/// when `with_cause` (pi's `withCauseDetail`, which Codex applies and pi-messages does not).
pub(crate) fn fetch_failed(e: &HttpError, with_cause: bool) -> String {
    let cause = match e {
        HttpError::InvalidUrl { .. } | HttpError::Aborted => return e.to_string(),
        HttpError::ConnectionRefused { target } => format!("connect ECONNREFUSED {target}"),
        HttpError::HostNotFound { host } => format!("getaddrinfo ENOTFOUND {host}"),
        HttpError::TimedOut => "Connect Timeout Error".to_owned(),
        HttpError::Connection { detail } => detail.clone(),
    };
    if with_cause && !cause.is_empty() {
        format!("fetch failed: {cause}")
    } else {
        "fetch failed".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Instant;

    #[test]
    fn url_targets() {
        assert_eq!(
            url_target("http://127.0.0.1:9/v1/x").unwrap(),
            "127.0.0.1:9"
        );
        assert_eq!(
            url_target("https://api.anthropic.com/v1/messages").unwrap(),
            "api.anthropic.com:443"
        );
        assert_eq!(url_target("http://[::1]:80/").unwrap(), "[::1]:80");
        assert_eq!(url_target("http://u:p@host/x").unwrap(), "host:80");
        assert!(url_target("ftp://x").is_err());
        assert!(url_target("nonsense").is_err());
    }

    #[test]
    fn header_dedupe() {
        let h = dedupe_headers(&[
            ("Accept".into(), "a".into()),
            ("x-api-key".into(), "k".into()),
            ("accept".into(), "b".into()),
        ]);
        assert_eq!(
            h,
            vec![
                ("Accept".to_string(), "b".to_string()),
                ("x-api-key".to_string(), "k".to_string())
            ]
        );
    }

    #[test]
    fn error_texts_match_retry_patterns() {
        use crate::llm::errors::is_retryable_text;
        for e in [
            HttpError::ConnectionRefused {
                target: "127.0.0.1:9".into(),
            },
            HttpError::HostNotFound {
                host: "nope.invalid".into(),
            },
            HttpError::TimedOut,
            HttpError::Connection {
                detail: "read ECONNRESET".into(),
            },
            HttpError::Connection {
                detail: String::new(),
            },
        ] {
            assert!(is_retryable_text(&e.to_string()), "{e}");
        }
        assert_eq!(
            HttpError::ConnectionRefused {
                target: "127.0.0.1:59999".into()
            }
            .to_string(),
            "Connection error.: connect ECONNREFUSED 127.0.0.1:59999"
        );
        for k in [
            io::ErrorKind::TimedOut,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::UnexpectedEof,
            io::ErrorKind::Other,
        ] {
            assert!(is_retryable_text(&describe_read_error(&io::Error::new(
                k, "x"
            ))));
        }
    }

    fn closed_port() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    fn request(url: String) -> HttpRequest {
        HttpRequest {
            url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{}".to_vec(),
            idle_timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn connection_refused() {
        let port = closed_port();
        let err = post(
            request(format!("http://127.0.0.1:{port}/x")),
            &CancelToken::new(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            HttpError::ConnectionRefused {
                target: format!("127.0.0.1:{port}")
            }
        );
    }

    #[test]
    fn already_cancelled_sends_nothing() {
        let t = CancelToken::new();
        t.cancel();
        assert_eq!(
            post(request("http://127.0.0.1:1/".into()), &t).unwrap_err(),
            HttpError::Aborted
        );
    }

    /// A server that answers one request with `head` + `body` and then holds the connection.
    fn serve_once(response: &'static [u8]) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/x", l.local_addr().unwrap());
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(response);
                std::thread::sleep(Duration::from_secs(5));
            }
        });
        url
    }

    #[test]
    fn status_errors_are_responses() {
        let url = serve_once(
            b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"e\":\"rl\"}\n",
        );
        let mut r = post(request(url), &CancelToken::new()).unwrap();
        assert_eq!(r.status(), 429);
        assert!(!r.is_success());
        assert_eq!(r.content_type(), Some("application/json"));
        assert_eq!(
            r.read_text(1 << 20).unwrap(),
            CappedText {
                text: "{\"e\":\"rl\"}\n".into(),
                cut: false
            }
        );
    }

    #[test]
    fn error_bodies_are_read_up_to_the_limit() {
        // Exactly at the limit: complete.
        let url = serve_once(
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\nabcd",
        );
        let mut r = post(request(url), &CancelToken::new()).unwrap();
        assert_eq!(
            r.read_text(4).unwrap(),
            CappedText {
                text: "abcd".into(),
                cut: false
            }
        );
        // One byte more: cut, and a character split by the limit is dropped whole.
        let url = serve_once(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 6\r\nconnection: close\r\n\r\nabc\u{e9}d"
                .as_bytes(),
        );
        let mut r = post(request(url), &CancelToken::new()).unwrap();
        assert_eq!(
            r.read_text(4).unwrap(),
            CappedText {
                text: "abc".into(),
                cut: true
            }
        );
    }

    #[test]
    fn cancel_interrupts_a_blocked_body_read() {
        let url = serve_once(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: 1\n\n",
        );
        let token = CancelToken::new();
        let mut r = post(request(url), &token).unwrap();
        let mut buf = [0u8; 64];
        let n = r.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"data: 1\n\n");
        let t2 = token.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let at = Instant::now();
            t2.cancel();
            at
        });
        let res = r.read(&mut buf);
        let done = Instant::now();
        let cancelled_at = canceller.join().unwrap();
        assert!(res.is_err() || res.as_ref().is_ok_and(|n| *n == 0));
        assert!(token.is_cancelled());
        eprintln!(
            "cancel → read returned in {:?}",
            done.saturating_duration_since(cancelled_at)
        );
    }

    #[test]
    fn cancel_while_waiting_for_headers() {
        // The server accepts but never answers.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        std::thread::spawn(move || {
            let conn = l.accept();
            std::thread::sleep(Duration::from_secs(5));
            drop(conn);
        });
        let token = CancelToken::new();
        let t2 = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            t2.cancel();
        });
        let start = Instant::now();
        assert_eq!(post(request(url), &token).unwrap_err(), HttpError::Aborted);
        eprintln!("aborted before headers after {:?}", start.elapsed());
    }
}
