//! The server-sent event streams of the HTTP transport (`mcp.md` §4.6): a request's answer
//! stream, resumed when it breaks off, and the `GET` stream for server-initiated messages.
//!
//! Events named other than `message` and events without data are skipped (an event with only
//! an id primes resumption); the others must hold one JSON-RPC message each (else they are
//! logged and skipped). An event may not exceed 16 MiB.
//!
//! Resumption follows pi: a stream that ends or breaks before the answer is reopened with `GET`
//! and `Last-Event-ID` when the server gave event ids, after 1 s doubling to 30 s (or the
//! server's `retry:`), at most 5 times in a row (a reopened stream that delivered an event
//! starts the count again). A `GET` stream that drops is reopened the same way; `405` means the
//! server offers none.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufReader, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use ureq::BodyReader;

use super::{
    content_type, is_jsonrpc_message, is_response, Failure, Shared, Timeout, MAX_MESSAGE_BYTES,
};
use crate::llm::http::describe_read_error;
use crate::llm::sse::SseParser;
use crate::mcp::transport::Incoming;

const MAX_RETRIES: u32 = 5;
const INITIAL_DELAY_MS: u64 = 1_000;
const MAX_DELAY_MS: u64 = 30_000;

/// Where a stream left off.
#[derive(Default)]
struct Cursor {
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
    /// An event arrived since the last (re)connect.
    received: bool,
}

/// The wait before reconnect `attempt` (0-based).
pub(super) fn reconnect_delay(attempt: u32, server_ms: Option<u64>) -> Duration {
    let ms = server_ms.unwrap_or_else(|| {
        INITIAL_DELAY_MS
            .saturating_mul(1u64 << attempt.min(20))
            .min(MAX_DELAY_MS)
    });
    Duration::from_millis(ms)
}

/// Reads a request's answer stream, resuming it when it breaks off; fails the request when it
/// cannot get the answer.
pub(super) fn read_response_stream(s: &Arc<Shared>, body: BodyReader<'static>, id: &Value) {
    let mut cursor = Cursor::default();
    let mut answered = false;
    let mut stream = Some(body);
    let mut failure: Option<Failure> = None;
    let mut attempt = 0;
    loop {
        if let Some(body) = stream.take() {
            let on_message = |m: &Value| {
                if is_response(m) && m.get("id") == Some(id) {
                    answered = true;
                }
            };
            failure = consume(s, body, &mut cursor, on_message).err();
        }
        if answered || s.is_closed() {
            return;
        }
        if failure.as_ref().is_some_and(|f| !f.retryable()) {
            break;
        }
        if cursor.last_event_id.is_none() || attempt >= MAX_RETRIES {
            break;
        }
        if cursor.received {
            attempt = 0;
        }
        cursor.received = false;
        if !s.sleep(reconnect_delay(attempt, cursor.retry_ms)) {
            return;
        }
        attempt += 1;
        match open_stream(s, cursor.last_event_id.as_deref()) {
            Ok(Some(body)) => stream = Some(body),
            // 405: nothing to resume from this time.
            Ok(None) => {}
            Err(f) => {
                let stop = !f.retryable();
                failure = Some(f);
                if stop {
                    break;
                }
            }
        }
    }
    if s.is_closed() {
        return;
    }
    let reason = failure.map_or_else(
        || "stream ended without a response".to_owned(),
        Failure::into_message,
    );
    s.fail(id, format!("MCP response stream failed: {reason}"));
}

/// The `GET` stream's thread: keeps the server-to-client stream open until `close`.
pub(super) fn run_get_stream(s: &Arc<Shared>) {
    let mut cursor = Cursor::default();
    let mut attempt = 0;
    while !s.is_closed() {
        let failure = match open_stream(s, cursor.last_event_id.as_deref()) {
            // The server offers no GET stream.
            Ok(None) => return,
            Ok(Some(body)) => {
                let opened = Instant::now();
                let result = consume(s, body, &mut cursor, |_| {});
                // A stream that stayed up for a while counts as healthy, even if it was idle.
                if result.is_ok()
                    && (cursor.received || opened.elapsed() > Duration::from_millis(MAX_DELAY_MS))
                {
                    attempt = 0;
                }
                result.err()
            }
            Err(f) => Some(f),
        };
        if s.is_closed() {
            return;
        }
        if let Some(f) = failure.filter(|f| !f.retryable()) {
            s.log(&format!("server-to-client stream failed: {}", f.message()));
            return;
        }
        cursor.received = false;
        if attempt >= MAX_RETRIES {
            s.log("MCP server-to-client stream dropped and could not be reopened");
            return;
        }
        if !s.sleep(reconnect_delay(attempt, cursor.retry_ms)) {
            return;
        }
        attempt += 1;
    }
}

/// Opens a `GET` SSE stream (resuming after `last_event_id` when given). `None`: `405`.
fn open_stream(
    s: &Shared,
    last_event_id: Option<&str>,
) -> Result<Option<BodyReader<'static>>, Failure> {
    let mut extra = vec![("accept", "text/event-stream")];
    if let Some(id) = last_event_id {
        extra.push(("last-event-id", id));
    }
    let response = s.call(&s.agent, "GET", s.headers(&extra), (), Timeout::None)?;
    if response.status().as_u16() == 405 {
        return Ok(None);
    }
    let response = s.check(response)?;
    s.capture_session(&response);
    match content_type(&response).as_deref() {
        Some("text/event-stream") => Ok(Some(response.into_body().into_reader())),
        other => Err(Failure::Status {
            status: response.status().as_u16(),
            message: format!(
                "Unsupported MCP GET response content type: {}",
                other.unwrap_or("missing")
            ),
        }),
    }
}

/// Reads one SSE body to its end, delivering its messages (`on_message` sees each first).
fn consume(
    s: &Shared,
    body: BodyReader<'static>,
    cursor: &mut Cursor,
    mut on_message: impl FnMut(&Value),
) -> Result<(), Failure> {
    let mut parser = SseParser::new(BufReader::new(Capped::new(body))).dispatch_trailing(true);
    loop {
        let next = parser.next_event();
        // Ids and retry times read so far count even when the stream then broke.
        if let Some(id) = parser.last_event_id() {
            cursor.last_event_id = Some(id.to_owned());
        }
        if let Some(ms) = parser.retry_ms() {
            cursor.retry_ms = Some(ms);
        }
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => return Ok(()),
            Err(e) if e.get_ref().is_some_and(|i| i.is::<EventTooLarge>()) => {
                return Err(Failure::Other(e.to_string()))
            }
            Err(e) => return Err(Failure::Network(describe_read_error(&e))),
        };
        parser.get_ref().get_ref().event_done();
        cursor.received = true;
        let named_other = event
            .event
            .as_deref()
            .is_some_and(|name| !name.is_empty() && name != "message");
        if named_other || event.data.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&event.data) {
            Ok(msg) if is_jsonrpc_message(&msg) => {
                on_message(&msg);
                s.deliver(Incoming::Message(msg));
            }
            Ok(_) => s.log("SSE event is not a JSON-RPC message; skipped"),
            Err(e) => s.log(&format!("SSE event is not JSON ({e}); skipped")),
        }
    }
}

/// The error a stream breaks with when one event grows past [`MAX_MESSAGE_BYTES`].
#[derive(Debug)]
struct EventTooLarge;

impl fmt::Display for EventTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCP SSE event exceeds {MAX_MESSAGE_BYTES} bytes")
    }
}

impl std::error::Error for EventTooLarge {}

/// A body reader that fails once more than [`MAX_MESSAGE_BYTES`] (plus what the parser's buffer
/// holds ahead) arrived since the last dispatched event.
struct Capped<R> {
    inner: R,
    since_event: Cell<usize>,
}

/// Bytes the parser's buffer may hold beyond the event it works on.
const READ_AHEAD: usize = 64 * 1024;

impl<R> Capped<R> {
    fn new(inner: R) -> Capped<R> {
        Capped {
            inner,
            since_event: Cell::new(0),
        }
    }

    fn event_done(&self) {
        self.since_event.set(0);
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.since_event.get() > MAX_MESSAGE_BYTES + READ_AHEAD {
            return Err(io::Error::other(EventTooLarge));
        }
        let n = self.inner.read(buf)?;
        self.since_event.set(self.since_event.get() + n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data:` lines forever, without the blank line that would end the event.
    struct Endless {
        line: Vec<u8>,
        pos: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            for b in buf.iter_mut() {
                *b = self.line[self.pos];
                self.pos = (self.pos + 1) % self.line.len();
            }
            Ok(buf.len())
        }
    }

    #[test]
    fn an_endless_event_fails_past_the_limit() {
        let line = format!("data: {}\n", "x".repeat(1017)).into_bytes();
        let mut parser = SseParser::new(BufReader::new(Capped::new(Endless { line, pos: 0 })));
        let err = parser.next_event().unwrap_err();
        assert!(err.get_ref().is_some_and(|i| i.is::<EventTooLarge>()));
        assert_eq!(err.to_string(), "MCP SSE event exceeds 16777216 bytes");
    }

    #[test]
    fn events_under_the_limit_reset_the_count() {
        // 40 MiB of 1 KiB events pass.
        let event = format!("data: {}\n\n", "x".repeat(1016));
        let body = event.as_bytes().repeat(40 * 1024);
        let mut parser = SseParser::new(BufReader::new(Capped::new(&body[..])));
        let mut n = 0;
        while let Some(ev) = parser.next_event().unwrap() {
            parser.get_ref().get_ref().event_done();
            assert_eq!(ev.data.len(), 1016);
            n += 1;
        }
        assert_eq!(n, 40 * 1024);
    }
}
