//! Tests of the HTTP transport against `tests/support/mcp_http_server.py`, a scripted
//! streamable-HTTP server that records every request it receives. Without `python3` they say so
//! and pass, unless `PI_RPC_REQUIRE` names python.

use super::sse::reconnect_delay;
use super::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/support/mcp_http_server.py"
);
const WAIT: Duration = Duration::from_secs(10);

fn python_required() -> bool {
    std::env::var("PI_RPC_REQUIRE").is_ok_and(|v| {
        v.split(',')
            .map(str::trim)
            .any(|t| t.eq_ignore_ascii_case("all") || t.to_ascii_lowercase().contains("python"))
    })
}

/// The test server; killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// `None` (after a note) when python3 is missing and not required.
    fn start(test: &str, config: Value) -> Option<Server> {
        let spawned = Command::new("python3")
            .arg(SCRIPT)
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) if !python_required() => {
                eprintln!("skipped {test}: needs python3 ({e}); install Python 3 to run it");
                return None;
            }
            Err(e) => panic!("{test}: python3 is required here (PI_RPC_REQUIRE): {e}"),
        };
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("server printed {line:?}"));
        Some(Server { child, port })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn requests(&self) -> Vec<Value> {
        let url = format!("http://127.0.0.1:{}/_control/requests", self.port);
        let text = ureq::get(&url)
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        serde_json::from_str::<Vec<Value>>(&text).unwrap()
    }

    /// The recorded requests once there are at least `n`.
    fn wait_requests(&self, n: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let r = self.requests();
            if r.len() >= n {
                return r;
            }
            assert!(
                start.elapsed() < WAIT,
                "waited for {n} requests, got {r:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The headers a request from the transport carries as recorded (names as sent, in order):
    /// what ureq adds for `method` (a POST's content length is `body`'s), `host`, then `ours`.
    fn headers(&self, method: &str, body: &Value, ours: &[(&str, String)]) -> Value {
        let mut h = vec![];
        if method == "POST" {
            h.push(json!(["content-length", len_of(body).to_string()]));
        }
        h.push(json!(["user-agent", user_agent()]));
        if method == "DELETE" {
            h.push(json!(["accept", "*/*"]));
        }
        h.push(json!(["host", format!("127.0.0.1:{}", self.port)]));
        h.extend(ours.iter().map(|(n, v)| json!([n, v])));
        Value::Array(h)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A sink that forwards to a channel, and its receiving end.
fn channel_sink() -> (Sink, Receiver<Incoming>) {
    let (tx, rx) = bounded(256);
    let sink: Sink = Arc::new(move |i| {
        let _ = tx.send_timeout(i, Duration::from_secs(5));
    });
    (sink, rx)
}

/// What arrived, as JSON for whole-value assertions.
fn as_json(i: Incoming) -> Value {
    match i {
        Incoming::Message(m) => json!({ "message": m }),
        Incoming::Failed { id, message } => json!({ "failed": id, "message": message }),
        Incoming::Closed => json!({ "closed": true }),
    }
}

fn next(rx: &Receiver<Incoming>) -> Value {
    as_json(rx.recv_timeout(WAIT).expect("nothing arrived at the sink"))
}

fn assert_quiet(rx: &Receiver<Incoming>, for_ms: u64) {
    if let Ok(i) = rx.recv_timeout(Duration::from_millis(for_ms)) {
        panic!("unexpected at the sink: {}", as_json(i));
    }
}

fn request(id: u64, method: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method })
}

fn answer(id: u64, method: &str, params: Value) -> Value {
    json!({ "message": { "jsonrpc": "2.0", "id": id, "result": { "method": method, "params": params } } })
}

fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {} } })
}

const INITIALIZED_MSG: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The headers of a POST: accept, content-type and `extra`.
fn post_headers(extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("accept", ACCEPT.to_owned()),
        ("content-type", "application/json".to_owned()),
    ];
    h.extend(extra.iter().cloned());
    h
}

/// A request as the server records it; `headers` are the transport's own.
fn recorded(server: &Server, method: &str, headers: &[(&str, String)], body: Value) -> Value {
    let headers = server.headers(method, &body, headers);
    json!({ "method": method, "path": "/mcp", "headers": headers, "body": body })
}

fn len_of(v: &Value) -> usize {
    serde_json::to_vec(v).unwrap().len()
}

#[test]
fn handshake_with_session_id_and_protocol_version() {
    let Some(server) = Server::start(
        "handshake_with_session_id_and_protocol_version",
        json!({ "session": "sess-1" }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&initialize()).unwrap();
    assert_eq!(
        next(&rx),
        answer(1, "initialize", initialize()["params"].clone())
    );
    assert_eq!(t.session_id().as_deref(), Some("sess-1"));
    // The order of `mcp.md` §4.2, with `initialized` called after the notification was sent.
    let initialized: Value = serde_json::from_str(INITIALIZED_MSG).unwrap();
    t.send(&initialized).unwrap();
    t.initialized("2025-11-25");
    t.send(&request(2, "tools/list")).unwrap();
    assert_eq!(next(&rx), answer(2, "tools/list", Value::Null));
    let reqs = server.wait_requests(4);
    let session = ("mcp-session-id", "sess-1".to_owned());
    let version = ("mcp-protocol-version", "2025-11-25".to_owned());
    let posts: Vec<&Value> = reqs.iter().filter(|r| r["method"] == "POST").collect();
    assert_eq!(
        posts,
        [
            &recorded(&server, "POST", &post_headers(&[]), initialize()),
            &recorded(
                &server,
                "POST",
                &post_headers(&[session.clone(), version.clone()]),
                initialized
            ),
            &recorded(
                &server,
                "POST",
                &post_headers(&[session.clone(), version.clone()]),
                request(2, "tools/list")
            ),
        ]
    );
    // The GET stream opened after `notifications/initialized`; the server has none (405).
    let gets: Vec<&Value> = reqs.iter().filter(|r| r["method"] == "GET").collect();
    assert_eq!(
        gets,
        [&recorded(
            &server,
            "GET",
            &[("accept", "text/event-stream".to_owned()), session, version,],
            Value::Null
        )]
    );
    assert_quiet(&rx, 200);
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn initialized_before_the_notification_as_pi_does() {
    let Some(server) = Server::start("initialized_before_the_notification_as_pi_does", json!({}))
    else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&initialize()).unwrap();
    next(&rx);
    t.initialized("2025-06-18");
    t.send(&serde_json::from_str(INITIALIZED_MSG).unwrap())
        .unwrap();
    let reqs = server.wait_requests(3);
    // No session: no Mcp-Session-Id header anywhere.
    assert_eq!(
        reqs[1],
        recorded(
            &server,
            "POST",
            &post_headers(&[("mcp-protocol-version", "2025-06-18".to_owned())]),
            serde_json::from_str(INITIALIZED_MSG).unwrap()
        )
    );
    assert_eq!(reqs[2]["method"], "GET");
    assert_quiet(&rx, 100);
}

#[test]
fn sse_and_array_answers_deliver_every_message() {
    let progress = json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                           "params": { "progressToken": 2, "progress": 1 } });
    let ping = json!({ "jsonrpc": "2.0", "id": "srv-1", "method": "ping" });
    let Some(server) = Server::start(
        "sse_and_array_answers_deliver_every_message",
        json!({ "methods": {
            "tools/call": { "mode": "sse", "prime": true, "other_event": true,
                            "before": [progress, ping], "result": { "content": [] } },
            "tools/list": { "mode": "json_array", "before": [progress] },
        } }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&request(2, "tools/call")).unwrap();
    assert_eq!(next(&rx), json!({ "message": progress }));
    assert_eq!(next(&rx), json!({ "message": ping }));
    assert_eq!(
        next(&rx),
        json!({ "message": { "jsonrpc": "2.0", "id": 2, "result": { "content": [] } } })
    );
    t.send(&request(3, "tools/list")).unwrap();
    assert_eq!(next(&rx), json!({ "message": progress }));
    assert_eq!(next(&rx), answer(3, "tools/list", Value::Null));
    assert_quiet(&rx, 100);
}

#[test]
fn request_failures_have_pi_texts() {
    let long = "x".repeat(600);
    let Some(server) = Server::start(
        "request_failures_have_pi_texts",
        json!({ "methods": {
            "m/accepted": { "status": 202 },
            "m/nocontent": { "status": 204 },
            "m/text": { "mode": "raw", "content_type": "text/plain", "body": "hi" },
            "m/untyped": { "mode": "raw", "content_type": null, "body": "hi" },
            "m/boom": { "status": 500, "body": "  boom \n" },
            "m/bare": { "status": 503 },
            "m/long": { "status": 400, "body": long },
            "m/auth": { "status": 401, "body": "sign in" },
            "m/gone": { "status": 404, "body": "not here" },
            "m/badjson": { "mode": "raw", "content_type": "application/json", "body": "{nope" },
            "m/notrpc": { "mode": "raw", "content_type": "application/json", "body": "{\"a\":1}" },
        } }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    let methods = [
        "m/accepted",
        "m/nocontent",
        "m/text",
        "m/untyped",
        "m/boom",
        "m/bare",
        "m/long",
        "m/auth",
        "m/gone",
        "m/badjson",
        "m/notrpc",
    ];
    for (i, m) in methods.iter().enumerate() {
        t.send(&request(i as u64 + 1, m)).unwrap();
    }
    let mut got: Vec<Value> = methods.iter().map(|_| next(&rx)).collect();
    got.sort_by_key(|v| v["failed"].as_u64());
    let fail = |id: u64, message: &str| json!({ "failed": id, "message": message });
    let badjson = got[9]["message"].as_str().unwrap().to_owned();
    assert!(
        badjson.starts_with("Invalid JSON in MCP response: "),
        "{badjson}"
    );
    assert_eq!(
        got,
        [
            fail(
                1,
                "MCP server accepted request m/accepted without a response"
            ),
            fail(
                2,
                "MCP server accepted request m/nocontent without a response"
            ),
            fail(3, "Unsupported MCP response content type: text/plain"),
            fail(4, "Unsupported MCP response content type: missing"),
            fail(5, "MCP HTTP request failed with status 500: boom"),
            fail(6, "MCP HTTP request failed with status 503"),
            fail(
                7,
                &format!(
                    "MCP HTTP request failed with status 400: {}...",
                    "x".repeat(497)
                )
            ),
            fail(8, "MCP server requires authentication"),
            // No session id is known: a plain status.
            fail(9, "MCP HTTP request failed with status 404: not here"),
            fail(10, &badjson),
            fail(11, "Invalid JSON-RPC message"),
        ]
    );
    assert!(is_transient_failure(got[4]["message"].as_str().unwrap()));
    assert!(!is_transient_failure(got[6]["message"].as_str().unwrap()));
}

#[test]
fn a_404_with_a_session_is_session_expiry() {
    let Some(server) = Server::start(
        "a_404_with_a_session_is_session_expiry",
        json!({ "session": "s-9", "methods": { "tools/call": { "status": 404 } } }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&initialize()).unwrap();
    next(&rx);
    t.send(&request(2, "tools/call")).unwrap();
    assert_eq!(
        next(&rx),
        json!({ "failed": 2, "message": SESSION_EXPIRED })
    );
    let reqs = server.wait_requests(2);
    assert_eq!(
        reqs[1],
        recorded(
            &server,
            "POST",
            &post_headers(&[("mcp-session-id", "s-9".to_owned())]),
            request(2, "tools/call")
        )
    );
}

#[test]
fn network_failure_fails_the_request() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&format!("http://127.0.0.1:{port}/mcp"), vec![], None, sink);
    t.send(&request(1, "initialize")).unwrap();
    let msg = format!("fetch failed: connect ECONNREFUSED 127.0.0.1:{port}");
    assert_eq!(next(&rx), json!({ "failed": 1, "message": msg }));
    assert!(is_transient_failure(&msg));
    // A URL that cannot be used fails the same way, with its reason.
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open("ftp://example.com/mcp", vec![], None, sink);
    t.send(&request(1, "initialize")).unwrap();
    assert_eq!(
        next(&rx),
        json!({ "failed": 1,
                "message": "Invalid URL: ftp://example.com/mcp (only http and https are supported)" })
    );
}

fn progress(n: u64) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/progress",
            "params": { "progressToken": 2, "progress": n } })
}

#[test]
fn a_cut_sse_answer_resumes_with_last_event_id() {
    let Some(server) = Server::start(
        "a_cut_sse_answer_resumes_with_last_event_id",
        json!({
            "session": "s-1",
            "methods": { "tools/call": { "mode": "sse", "ids": true, "prime": true,
                "retry": 50, "cut_after": 1, "before": [progress(1), progress(2)] } },
            // Each resumed stream is cut again after one event.
            "resume": { "mode": "resume", "retry": 50, "cut_after": 1 },
        }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&initialize()).unwrap();
    next(&rx);
    t.send(&request(2, "tools/call")).unwrap();
    assert_eq!(next(&rx), json!({ "message": progress(1) }));
    assert_eq!(next(&rx), json!({ "message": progress(2) }));
    assert_eq!(next(&rx), answer(2, "tools/call", Value::Null));
    assert_quiet(&rx, 200);
    let reqs = server.wait_requests(4);
    let resume = |id: &str| {
        recorded(
            &server,
            "GET",
            &[
                ("accept", "text/event-stream".to_owned()),
                ("last-event-id", id.to_owned()),
                ("mcp-session-id", "s-1".to_owned()),
            ],
            Value::Null,
        )
    };
    assert_eq!(reqs[2..], [resume("s1-1"), resume("s1-2")]);
}

#[test]
fn a_cut_sse_answer_without_ids_fails() {
    let Some(server) = Server::start(
        "a_cut_sse_answer_without_ids_fails",
        json!({ "methods": {
            "tools/call": { "mode": "sse", "cut_after": 1, "before": [progress(1)] },
            "tools/list": { "mode": "sse", "ids": true, "retry": 10, "cut_after": 1,
                            "before": [progress(1)] },
        }, "resume": { "status": 400, "body": "no resuming" } }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&request(2, "tools/call")).unwrap();
    assert_eq!(next(&rx), json!({ "message": progress(1) }));
    assert_eq!(
        next(&rx),
        json!({ "failed": 2,
                "message": "MCP response stream failed: stream ended without a response" })
    );
    // With ids, but the server refuses to resume (400 is not retried).
    t.send(&request(3, "tools/list")).unwrap();
    assert_eq!(next(&rx), json!({ "message": progress(1) }));
    assert_eq!(
        next(&rx),
        json!({ "failed": 3, "message":
            "MCP response stream failed: MCP HTTP request failed with status 400: no resuming" })
    );
    let reqs = server.wait_requests(3);
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[2]["method"], "GET");
}

#[test]
fn the_get_stream_delivers_and_reconnects() {
    let Some(server) = Server::start(
        "the_get_stream_delivers_and_reconnects",
        json!({ "get": { "mode": "get_sse", "retry": 30, "max": 3 } }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.initialized("2025-11-25");
    // No GET before the server accepted `notifications/initialized`.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.requests().len(), 0);
    t.send(&serde_json::from_str(INITIALIZED_MSG).unwrap())
        .unwrap();
    for n in 1..=3 {
        assert_eq!(
            next(&rx),
            json!({ "message": { "jsonrpc": "2.0", "method": "notifications/message",
                                 "params": { "n": n } } })
        );
    }
    // The fourth connection is refused with 405: the stream stops quietly.
    let reqs = server.wait_requests(5);
    assert!(reqs[1..].iter().all(|r| r["method"] == "GET"), "{reqs:#?}");
    assert_quiet(&rx, 200);
    assert_eq!(server.requests().len(), 5);
    let start = Instant::now();
    while t.running_threads() > 1 {
        assert!(start.elapsed() < WAIT, "the GET thread did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn close_stops_streams_and_deletes_the_session() {
    let Some(server) = Server::start(
        "close_stops_streams_and_deletes_the_session",
        json!({
            "session": "s-7",
            "get": { "mode": "get_sse", "hold": true, "messages": [] },
            "methods": { "tools/call": { "mode": "sse", "hold": true, "before": [progress(1)] } },
        }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    t.send(&initialize()).unwrap();
    next(&rx);
    t.send(&serde_json::from_str(INITIALIZED_MSG).unwrap())
        .unwrap();
    t.initialized("2025-11-25");
    t.send(&request(2, "tools/call")).unwrap();
    assert_eq!(next(&rx), json!({ "message": progress(1) }));
    server.wait_requests(4);
    // The sender, the GET stream and tools/call (initialize's thread ends after its answer).
    let start = Instant::now();
    while t.running_threads() != 3 {
        assert!(start.elapsed() < WAIT, "{} threads", t.running_threads());
        std::thread::sleep(Duration::from_millis(10));
    }
    let start = Instant::now();
    t.close();
    t.close();
    while t.running_threads() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "threads still running"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("closed in {:?}", start.elapsed());
    assert_eq!(
        t.send(&request(3, "tools/list")),
        Err("MCP connection closed".to_owned())
    );
    let reqs = server.wait_requests(5);
    let deletes: Vec<&Value> = reqs.iter().filter(|r| r["method"] == "DELETE").collect();
    assert_eq!(
        deletes,
        [&recorded(
            &server,
            "DELETE",
            &[
                ("mcp-session-id", "s-7".to_owned()),
                ("mcp-protocol-version", "2025-11-25".to_owned()),
            ],
            Value::Null
        )]
    );
    // Nothing reaches the sink after close (the held request is not failed).
    assert_quiet(&rx, 200);
}

#[test]
fn configured_headers_and_bearer_token() {
    let Some(server) = Server::start("configured_headers_and_bearer_token", json!({})) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let headers = vec![
        ("X-Api-Key".to_owned(), "k1".to_owned()),
        ("Accept".to_owned(), "text/plain".to_owned()),
        ("Authorization".to_owned(), "Basic zzz".to_owned()),
    ];
    let t = HttpTransport::open(&server.url(), headers, Some("tok".into()), sink);
    t.send(&request(1, "initialize")).unwrap();
    next(&rx);
    let reqs = server.wait_requests(1);
    assert_eq!(
        reqs[0],
        recorded(
            &server,
            "POST",
            &[
                ("x-api-key", "k1".to_owned()),
                ("accept", ACCEPT.to_owned()),
                ("authorization", "Bearer tok".to_owned()),
                ("content-type", "application/json".to_owned()),
            ],
            request(1, "initialize")
        )
    );
}

#[test]
fn notifications_and_answers_are_posted_in_order() {
    let Some(server) = Server::start(
        "notifications_and_answers_are_posted_in_order",
        json!({ "notification": { "status": 500, "body": "refused" } }),
    ) else {
        return;
    };
    let (sink, rx) = channel_sink();
    let t = HttpTransport::open(&server.url(), vec![], None, sink);
    let cancelled = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": { "requestId": 4, "reason": "Request timed out" } });
    let pong = json!({ "jsonrpc": "2.0", "id": "srv-1", "result": {} });
    t.send(&cancelled).unwrap();
    t.send(&pong).unwrap();
    t.send(&request(5, "tools/list")).unwrap();
    // Refused notifications and answers are only logged; the request still goes through.
    assert_eq!(next(&rx), answer(5, "tools/list", Value::Null));
    let reqs = server.wait_requests(3);
    let bodies: Vec<&Value> = reqs.iter().map(|r| &r["body"]).collect();
    assert_eq!(bodies, [&cancelled, &pong, &request(5, "tools/list")]);
    assert_quiet(&rx, 100);
}

#[test]
fn error_texts() {
    assert_eq!(
        describe_http_failure(500, " \n "),
        "MCP HTTP request failed with status 500"
    );
    // 500 UTF-16 units are kept whole; one more is cut to 497 and "...".
    let emoji = "\u{1F600}".repeat(250);
    assert_eq!(
        describe_http_failure(400, &emoji),
        format!("MCP HTTP request failed with status 400: {emoji}")
    );
    let over = format!("{emoji}a");
    assert_eq!(
        describe_http_failure(400, &over),
        format!(
            "MCP HTTP request failed with status 400: {}...",
            "\u{1F600}".repeat(248)
        )
    );
    assert_eq!(
        failure_status("MCP HTTP request failed with status 429: slow down"),
        Some(429)
    );
    assert_eq!(failure_status(SESSION_EXPIRED), None);
    for (text, transient) in [
        ("MCP HTTP request failed with status 429: slow down", true),
        ("MCP HTTP request failed with status 408", true),
        ("MCP HTTP request failed with status 502: bad gateway", true),
        ("MCP HTTP request failed with status 501", false),
        ("MCP HTTP request failed with status 400", false),
        ("fetch failed: connect ECONNREFUSED 127.0.0.1:9", true),
        ("terminated: read ECONNRESET", true),
        (SESSION_EXPIRED, false),
        (AUTH_REQUIRED, false),
        (
            "MCP response stream failed: stream ended without a response",
            false,
        ),
    ] {
        assert_eq!(is_transient_failure(text), transient, "{text}");
    }
}

#[test]
fn helpers() {
    assert_eq!(
        log_name("https://u:p@example.com:8443/mcp/x?token=1#f"),
        "https://example.com:8443/mcp/x"
    );
    assert_eq!(log_name("http://h"), "http://h");
    for (v, ok) in [
        (json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}), true),
        (json!({"jsonrpc": "2.0", "method": "notifications/x"}), true),
        (json!({"jsonrpc": "2.0", "id": "a", "result": null}), true),
        (
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}}),
            true,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}),
            false,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "m"}}),
            false,
        ),
        (json!({"jsonrpc": "2.0", "id": null, "method": "x"}), false),
        (json!({"jsonrpc": "1.0", "id": 1, "method": "x"}), false),
        (json!([1]), false),
    ] {
        assert_eq!(is_jsonrpc_message(&v), ok, "{v}");
    }
    let ms = |a, s| reconnect_delay(a, s).as_millis();
    assert_eq!(
        [
            ms(0, None),
            ms(1, None),
            ms(4, None),
            ms(5, None),
            ms(40, None)
        ],
        [1000, 2000, 16000, 30000, 30000]
    );
    assert_eq!(ms(3, Some(50)), 50);
}
