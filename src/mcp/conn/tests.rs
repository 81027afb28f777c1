//! The JSON-RPC client over an in-memory transport: a scripted server thread answers what the
//! client sends, so ids, timeouts, progress, cancellation and server requests are checked on
//! the exact messages.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::*;
use crate::mcp::transport::{Incoming, Sink, Transport};

/// Everything the client sent, and a way to answer.
struct Wire {
    sent: Mutex<Vec<Value>>,
    tx: Sender<Value>,
    closed: AtomicBool,
}

impl Transport for Wire {
    fn send(&self, msg: &Value) -> Result<(), String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err("closed".into());
        }
        self.sent.lock().push(msg.clone());
        let _ = self.tx.send(msg.clone());
        Ok(())
    }
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

/// A server thread: `script(msg, sink)` is called for every message the client sends.
fn connect_with(
    timeout: Duration,
    script: impl Fn(&Value, &Sink) + Send + 'static,
) -> (
    Result<Client, ConnectError>,
    Arc<Wire>,
    Receiver<&'static str>,
) {
    let (tx, rx) = bounded::<Value>(64);
    let wire = Arc::new(Wire {
        sent: Mutex::new(Vec::new()),
        tx,
        closed: AtomicBool::new(false),
    });
    let (note_tx, note_rx) = bounded::<&'static str>(16);
    let listener: Listener = Arc::new(move |n| {
        let _ = note_tx.try_send(match n {
            Notice::ToolsChanged => "tools",
            Notice::Log(_) => "log",
            Notice::Closed => "closed",
        });
    });
    let w = Arc::clone(&wire);
    let client = Client::connect(
        move |sink: Sink| {
            let s = Arc::clone(&sink);
            std::thread::spawn(move || {
                for msg in rx {
                    script(&msg, &s);
                }
            });
            Ok(w as Arc<dyn Transport>)
        },
        timeout,
        Path::new("/work/my project"),
        listener,
    );
    (client, wire, note_rx)
}

fn reply(sink: &Sink, id: &Value, result: Value) {
    sink(Incoming::Message(
        json!({"jsonrpc": "2.0", "id": id, "result": result}),
    ));
}

fn init_result() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
           "serverInfo": {"name": "s", "version": "1"}, "instructions": "  Use me.  "})
}

/// A server that completes the handshake and then runs `rest`.
fn server(
    rest: impl Fn(&Value, &Sink) + Send + 'static,
) -> impl Fn(&Value, &Sink) + Send + 'static {
    move |msg, sink| {
        if msg["method"] == "initialize" {
            reply(sink, &msg["id"], init_result());
        } else {
            rest(msg, sink);
        }
    }
}

#[test]
fn the_handshake_sends_pis_initialize_then_initialized() {
    let (client, wire, _) = connect_with(Duration::from_secs(5), server(|_, _| {}));
    let client = client.unwrap();
    assert_eq!(client.info.instructions.as_deref(), Some("Use me."));
    assert_eq!(
        *wire.sent.lock(),
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                "clientInfo": {"name": "pi", "version": "1.6.0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ]
    );
}

#[test]
fn a_bad_initialize_result_or_version_fails_the_connect() {
    let (client, _, _) = connect_with(Duration::from_secs(5), |msg, sink| {
        reply(sink, &msg["id"], json!({"protocolVersion": "2025-06-18"}));
    });
    assert_eq!(
        client.err().unwrap().message,
        "Invalid MCP initialize result"
    );
    let (client, _, _) = connect_with(Duration::from_secs(5), |msg, sink| {
        let mut r = init_result();
        r["protocolVersion"] = "1999-01-01".into();
        reply(sink, &msg["id"], r);
    });
    assert_eq!(
        client.err().unwrap().message,
        "MCP server selected unsupported protocol version 1999-01-01"
    );
}

#[test]
fn an_unanswered_initialize_times_out_without_a_cancel() {
    let (client, wire, _) = connect_with(Duration::from_millis(50), |_, _| {});
    assert_eq!(
        client.err().unwrap().message,
        "MCP request timed out after 50ms"
    );
    // initialize is never cancelled (the spec forbids it).
    assert_eq!(wire.sent.lock().len(), 1);
}

#[test]
fn answers_errors_and_server_requests_are_routed() {
    let (client, wire, _) = connect_with(
        Duration::from_secs(5),
        server(|msg, sink| match msg["method"].as_str() {
            Some("tools/call") => {
                // The server asks something of its own before answering.
                sink(Incoming::Message(
                    json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}),
                ));
                sink(Incoming::Message(
                    json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage"}),
                ));
                sink(Incoming::Message(
                    json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
                ));
                sink(Incoming::Message(json!({"jsonrpc": "2.0", "id": msg["id"],
                    "error": {"code": -32000, "message": "tool exploded"}})));
            }
            Some("ping") => reply(sink, &msg["id"], json!({})),
            _ => {}
        }),
    );
    let client = client.unwrap();
    let err = client
        .request(
            "tools/call",
            Some(json!({"name": "x"})),
            CallOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "tool exploded");
    assert_eq!(
        client
            .request("ping", None, CallOptions::default())
            .unwrap(),
        json!({})
    );
    let sent = wire.sent.lock().clone();
    assert!(
        sent.contains(&json!({"jsonrpc": "2.0", "id": "r1", "result": {"roots": [
        {"uri": "file:///work/my%20project", "name": "my project"}]}}))
    );
    assert!(sent.contains(&json!({"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32601, "message": "Method not found: sampling/createMessage"}})));
    assert!(sent.contains(&json!({"jsonrpc": "2.0", "id": "p", "result": {}})));
    assert!(sent.contains(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})));
}

#[test]
fn progress_rearms_the_timeout_and_reaches_the_caller() {
    let (client, _, _) = connect_with(
        Duration::from_millis(150),
        server(|msg, sink| {
            if msg["method"] != "tools/call" {
                return;
            }
            let token = msg["params"]["_meta"]["progressToken"].clone();
            let (id, sink) = (msg["id"].clone(), Arc::clone(sink));
            std::thread::spawn(move || {
                for i in 1..=4 {
                    std::thread::sleep(Duration::from_millis(100));
                    sink(Incoming::Message(
                        json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": i, "total": 4}}),
                    ));
                }
                reply(&sink, &id, json!({"content": []}));
            });
        }),
    );
    let client = client.unwrap();
    let mut seen = Vec::new();
    let mut on_progress = |p: &Value| seen.push(p["progress"].clone());
    let r = client.request(
        "tools/call",
        Some(json!({"name": "slow", "arguments": {}})),
        CallOptions {
            cancel: None,
            on_progress: Some(&mut on_progress),
        },
    );
    assert_eq!(r.unwrap(), json!({"content": []}));
    assert_eq!(seen, vec![json!(1), json!(2), json!(3), json!(4)]);
}

#[test]
fn a_timeout_and_an_abort_cancel_the_request_with_pis_reasons() {
    let (client, wire, _) = connect_with(Duration::from_millis(80), server(|_, _| {}));
    let client = client.unwrap();
    let err = client
        .request(
            "tools/call",
            Some(json!({"name": "x"})),
            CallOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err, RequestError::Timeout("80".into()));
    assert_eq!(err.to_string(), "MCP request timed out after 80ms");
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        c2.cancel();
    });
    let err = client
        .request(
            "tools/call",
            Some(json!({"name": "y"})),
            CallOptions {
                cancel: Some(&cancel),
                on_progress: None,
            },
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "MCP request aborted");
    let sent = wire.sent.lock().clone();
    assert_eq!(
        sent[3],
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 2, "reason": "Request timed out"}})
    );
    assert_eq!(
        sent[5],
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 3, "reason": "AbortError: This operation was aborted"}})
    );
    // An already-fired token sends nothing.
    let before = wire.sent.lock().len();
    let err = client.request(
        "ping",
        None,
        CallOptions {
            cancel: Some(&cancel),
            on_progress: None,
        },
    );
    assert_eq!(err.unwrap_err(), RequestError::Aborted);
    assert_eq!(wire.sent.lock().len(), before);
}

#[test]
fn a_close_fails_pending_calls_and_tells_the_owner_once() {
    let (client, _, notes) = connect_with(
        Duration::from_secs(5),
        server(|msg, sink| {
            if msg["method"] == "tools/call" {
                sink(Incoming::Closed);
                sink(Incoming::Closed);
            }
        }),
    );
    let client = client.unwrap();
    let err = client
        .request(
            "tools/call",
            Some(json!({"name": "x"})),
            CallOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "MCP connection closed");
    assert!(!client.is_open());
    assert_eq!(notes.recv_timeout(Duration::from_secs(1)), Ok("closed"));
    assert!(notes.recv_timeout(Duration::from_millis(50)).is_err());
    assert_eq!(
        client
            .request("ping", None, CallOptions::default())
            .unwrap_err(),
        RequestError::Closed
    );
}

#[test]
fn lists_follow_cursors_and_refuse_a_repeated_one() {
    let (client, _, notes) = connect_with(
        Duration::from_secs(5),
        server(|msg, sink| {
            let cursor = msg["params"]["cursor"].as_str().map(str::to_string);
            let page = match cursor.as_deref() {
                None => json!({"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "2"}),
                Some("2") => {
                    json!({"tools": [{"name": "b", "inputSchema": {}}], "nextCursor": "3"})
                }
                Some("3") => {
                    json!({"tools": [], "nextCursor": if msg["method"] == "tools/list" { json!("") } else { json!("2") }})
                }
                _ => json!({}),
            };
            reply(sink, &msg["id"], page);
            sink(Incoming::Message(
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            ));
        }),
    );
    let client = client.unwrap();
    let valid: fn(&Value) -> bool = |t| t.get("inputSchema").is_some();
    let tools = client.list_all("tools/list", "tools", valid, None).unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(notes.recv_timeout(Duration::from_secs(1)), Ok("tools"));
    let err = client
        .list_all("resources/list", "tools", valid, None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP resources/list returned duplicate cursor: 2"
    );
    let bad: fn(&Value) -> bool = |t| t.get("missing").is_some();
    assert_eq!(
        client
            .list_all("tools/list", "tools", bad, None)
            .unwrap_err()
            .to_string(),
        "Invalid entry in MCP tools/list result"
    );
}

#[test]
fn file_urls_encode_like_node() {
    assert_eq!(
        file_url(Path::new("/a b/c#d/é")),
        "file:///a%20b/c%23d/%C3%A9"
    );
}
