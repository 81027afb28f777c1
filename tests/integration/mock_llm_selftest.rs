//! Self-tests of the scripted LLM server (`tests/support/mock_llm.rs`), driven by a raw HTTP/1.1
//! client over `TcpStream`: the exact event sequence of each API, the request log, and the
//! stream-breaking options (hang, disconnect, truncation, raw SSE).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;

const TIMEOUT: Duration = Duration::from_secs(10);

// ------------------------------------------------------------------------------ HTTP client

/// A response read to EOF (the mock closes every connection).
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    /// The body, de-chunked.
    body: String,
    /// The HTTP chunks of a chunked body, as received.
    chunks: Vec<String>,
    /// Whether the chunked body ended with the last (zero-size) chunk.
    complete: bool,
}

/// One SSE event.
struct Event {
    name: Option<String>,
    data: String,
}

impl Event {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn events(&self) -> Vec<Event> {
        self.body
            .split("\n\n")
            .filter(|block| !block.is_empty())
            .map(|block| {
                let mut event = Event {
                    name: None,
                    data: String::new(),
                };
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event.name = Some(name.to_string());
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        event.data = data.to_string();
                    }
                }
                event
            })
            .collect()
    }

    /// Asserts a complete SSE stream with one HTTP chunk per event.
    fn assert_one_chunk_per_event(&self) {
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(self.header("transfer-encoding"), Some("chunked"));
        assert!(self.complete, "stream did not end with the last chunk");
        assert_eq!(self.chunks.len(), self.events().len());
        for chunk in &self.chunks {
            assert!(
                chunk.ends_with("\n\n") && chunk.matches("\n\n").count() == 1,
                "{chunk:?}"
            );
        }
    }
}

fn connect(mock: &MockLlm) -> TcpStream {
    let addr = mock.base_url().trim_start_matches("http://").to_string();
    let stream = TcpStream::connect(addr).expect("connect to the mock");
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

/// Sends a POST with a JSON body (and an API key header, which the log must redact).
fn send_post(mock: &MockLlm, path: &str, body: &str) -> TcpStream {
    let mut stream = connect(mock);
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         X-Api-Key: secret\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

fn post(mock: &MockLlm, path: &str, body: &Value) -> Response {
    read_response(send_post(mock, path, &body.to_string()))
}

fn read_to_end(mut stream: TcpStream) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return bytes,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return bytes,
            Err(e) => panic!("reading the response: {e}"),
        }
    }
}

/// Reads until `needle` appears; returns what was read.
fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&bytes).contains(needle) {
        let n = stream.read(&mut buf).expect("read");
        assert!(
            n > 0,
            "EOF before {needle:?}: {}",
            String::from_utf8_lossy(&bytes)
        );
        bytes.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn read_response(stream: TcpStream) -> Response {
    let bytes = read_to_end(stream);
    let text = String::from_utf8(bytes).expect("UTF-8 response");
    let (head, rest) = text.split_once("\r\n\r\n").expect("response head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_string(), v.trim().to_string())
        })
        .collect();
    let mut response = Response {
        status,
        headers,
        body: String::new(),
        chunks: Vec::new(),
        complete: false,
    };
    if response.header("transfer-encoding") != Some("chunked") {
        response.body = rest.to_string();
        response.complete = true;
        return response;
    }
    let mut rest = rest;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size, 16).expect("chunk size");
        if size == 0 {
            response.complete = after == "\r\n";
            break;
        }
        let Some(chunk) = after.get(..size) else {
            break; // cut inside a chunk
        };
        response.body.push_str(chunk);
        response.chunks.push(chunk.to_string());
        rest = &after[size + 2..];
    }
    response
}

/// Waits until the mock's handler threads are gone.
fn wait_idle(mock: &MockLlm, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while mock.active_connections() > 0 {
        assert!(
            Instant::now() < deadline,
            "a handler thread is still running"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ------------------------------------------------------------------------------ fixtures

/// Thinking + text + tool call, streamed in 5-character chunks.
fn full_reply() -> Value {
    json!({"blocks": [
            {"type": "thinking", "text": "Let me think", "signature": "sig_1"},
            {"type": "text", "text": "Hello world"},
            {"type": "tool_call", "id": "toolu_01", "name": "bash", "input": {"command": "echo hi"}}],
        "chunk_size": 5,
        "usage": {"input": 100, "output": 20, "cache_read": 3, "cache_write": 4}})
}

/// `{"command": "echo hi"}` (Python's json.dumps spacing) in 5-character pieces.
const ARG_CHUNKS: [&str; 5] = ["{\"com", "mand\"", ": \"ec", "ho hi", "\"}"];

fn text_reply(text: &str) -> Value {
    json!({"blocks": [{"type": "text", "text": text}]})
}

fn assert_logged(mock: &MockLlm, api: &str, path: &str, body: &Value) {
    let log = mock.wait_requests(1, TIMEOUT);
    let entry = &log[0];
    assert_eq!(entry["seq"], 1);
    assert_eq!(entry["method"], "POST");
    assert_eq!(entry["api"], api);
    assert_eq!(entry["path"], path);
    assert_eq!(&entry["body"], body);
    assert_eq!(entry["reply_index"], 0);
    assert_eq!(entry["headers"]["content-type"], "application/json");
    assert!(entry["headers"].get("x-api-key").is_none(), "{entry}");
    assert_eq!(entry["auth_headers_present"], json!(["x-api-key"]));
}

// ------------------------------------------------------------------------- the four APIs

#[test]
fn anthropic_stream_of_thinking_text_and_tool_call() {
    let mock = MockLlm::start(json!({"replies": [full_reply()]}));
    let body = json!({"model": "claude-x", "stream": true, "messages": []});
    let resp = post(&mock, "/v1/messages?beta=true", &body);
    resp.assert_one_chunk_per_event();
    assert_eq!(resp.header("request-id"), Some("req_mock_0001"));
    let summary: Vec<String> = resp
        .events()
        .iter()
        .map(|e| {
            let d = e.json();
            assert_eq!(e.name.as_deref(), d["type"].as_str());
            let delta = &d["delta"];
            match d["type"].as_str().unwrap() {
                "content_block_start" => {
                    format!("start {} {}", d["index"], d["content_block"]["type"])
                }
                "content_block_delta" => {
                    // The one field besides `type`: text, thinking, signature or partial_json.
                    let (_, value) = delta.as_object().unwrap().iter().nth(1).unwrap();
                    format!(
                        "delta {} {} {value}",
                        d["index"],
                        delta["type"].as_str().unwrap()
                    )
                }
                "content_block_stop" => format!("stop {}", d["index"]),
                other => other.to_string(),
            }
        })
        .collect();
    let mut expected = vec![
        "message_start".to_string(),
        r#"start 0 "thinking""#.into(),
        r#"delta 0 thinking_delta "Let m""#.into(),
        r#"delta 0 thinking_delta "e thi""#.into(),
        r#"delta 0 thinking_delta "nk""#.into(),
        r#"delta 0 signature_delta "sig_1""#.into(),
        "stop 0".into(),
        r#"start 1 "text""#.into(),
        r#"delta 1 text_delta "Hello""#.into(),
        r#"delta 1 text_delta " worl""#.into(),
        r#"delta 1 text_delta "d""#.into(),
        "stop 1".into(),
        r#"start 2 "tool_use""#.into(),
    ];
    expected.extend(ARG_CHUNKS.map(|c| format!("delta 2 input_json_delta {}", Value::from(c))));
    expected.extend([
        "stop 2".into(),
        "message_delta".into(),
        "message_stop".into(),
    ]);
    assert_eq!(summary, expected);

    let events = resp.events();
    assert_eq!(
        events[0].json(),
        json!({"type": "message_start", "message": {"id": "msg_mock_0001", "type": "message",
            "role": "assistant", "model": "claude-x", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 100,
                "cache_creation_input_tokens": 4, "cache_read_input_tokens": 3,
                "output_tokens": 1}}})
    );
    assert_eq!(
        events[12].json()["content_block"],
        json!({"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {}})
    );
    assert_eq!(
        events[events.len() - 2].json(),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use",
            "stop_sequence": null}, "usage": {"input_tokens": 100,
            "cache_creation_input_tokens": 4, "cache_read_input_tokens": 3,
            "output_tokens": 20}})
    );
    // Payloads are formatted like Python's json.dumps.
    assert!(resp.chunks[0].starts_with("event: message_start\ndata: {\"type\": \"message_start\""));
    assert_logged(&mock, "anthropic", "/v1/messages?beta=true", &body);
}

#[test]
fn openai_chat_stream_of_thinking_text_and_tool_call() {
    let mock = MockLlm::start(json!({"replies": [full_reply()]}));
    let body =
        json!({"model": "gpt-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let resp = post(&mock, "/v1/chat/completions", &body);
    resp.assert_one_chunk_per_event();
    let events = resp.events();
    assert!(events.iter().all(|e| e.name.is_none()));
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(Event::json).collect();
    for c in &chunks {
        assert_eq!(c["id"], "chatcmpl-mock-0001");
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-x");
    }
    let deltas: Vec<Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| c["choices"][0]["delta"].clone())
        .collect();
    let mut expected = vec![
        json!({"role": "assistant", "content": ""}),
        json!({"reasoning_content": "Let m"}),
        json!({"reasoning_content": "e thi"}),
        json!({"reasoning_content": "nk"}),
        json!({"content": "Hello"}),
        json!({"content": " worl"}),
        json!({"content": "d"}),
        json!({"tool_calls": [{"index": 0, "id": "toolu_01", "type": "function",
            "function": {"name": "bash", "arguments": ARG_CHUNKS[0]}}]}),
    ];
    expected.extend(
        ARG_CHUNKS[1..]
            .iter()
            .map(|c| json!({"tool_calls": [{"index": 0, "function": {"arguments": c}}]})),
    );
    expected.push(json!({}));
    assert_eq!(deltas, expected);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chunks[0]["choices"][0]["finish_reason"], Value::Null);
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": 103, "completion_tokens": 20, "total_tokens": 123,
            "prompt_tokens_details": {"cached_tokens": 3}})
    );
    assert_logged(&mock, "openai-chat", "/v1/chat/completions", &body);
}

#[test]
fn openai_responses_stream_of_thinking_text_and_tool_call() {
    let mock = MockLlm::start(json!({"replies": [full_reply()]}));
    let body = json!({"model": "gpt-r", "stream": true, "input": []});
    let resp = post(&mock, "/v1/responses", &body);
    resp.assert_one_chunk_per_event();
    let events: Vec<Value> = resp.events().iter().map(Event::json).collect();
    for (n, (event, raw)) in events.iter().zip(resp.events()).enumerate() {
        assert_eq!(event["sequence_number"], n);
        assert_eq!(raw.name.as_deref(), event["type"].as_str());
    }
    let summary: Vec<String> = events
        .iter()
        .map(|e| {
            let ty = e["type"].as_str().unwrap().trim_start_matches("response.");
            match ty {
                "output_item.added" | "output_item.done" => {
                    format!(
                        "{ty} {} {} {}",
                        e["output_index"], e["item"]["type"], e["item"]["id"]
                    )
                }
                t if t.ends_with(".delta") => format!("{ty} {}", e["delta"]),
                _ => ty.to_string(),
            }
        })
        .collect();
    let mut expected: Vec<String> = [
        "created",
        "in_progress",
        r#"output_item.added 0 "reasoning" "rs_mock_0""#,
        "reasoning_summary_part.added",
        r#"reasoning_summary_text.delta "Let m""#,
        r#"reasoning_summary_text.delta "e thi""#,
        r#"reasoning_summary_text.delta "nk""#,
        "reasoning_summary_text.done",
        "reasoning_summary_part.done",
        r#"output_item.done 0 "reasoning" "rs_mock_0""#,
        r#"output_item.added 1 "message" "msg_mock_1""#,
        "content_part.added",
        r#"output_text.delta "Hello""#,
        r#"output_text.delta " worl""#,
        r#"output_text.delta "d""#,
        "output_text.done",
        "content_part.done",
        r#"output_item.done 1 "message" "msg_mock_1""#,
        r#"output_item.added 2 "function_call" "fc_mock_2""#,
    ]
    .map(String::from)
    .to_vec();
    expected
        .extend(ARG_CHUNKS.map(|c| format!("function_call_arguments.delta {}", Value::from(c))));
    expected.extend(
        [
            "function_call_arguments.done",
            r#"output_item.done 2 "function_call" "fc_mock_2""#,
            "completed",
        ]
        .map(String::from),
    );
    assert_eq!(summary, expected);

    assert_eq!(events[0]["response"]["id"], "resp_mock_0001");
    assert_eq!(events[0]["response"]["status"], "in_progress");
    assert_eq!(
        events[9]["item"],
        json!({"id": "rs_mock_0", "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Let me think"}],
            "encrypted_content": "sig_1"})
    );
    assert_eq!(
        events[events.len() - 2]["item"],
        json!({"id": "fc_mock_2", "type": "function_call", "status": "completed",
            "call_id": "toolu_01", "name": "bash", "arguments": "{\"command\": \"echo hi\"}"})
    );
    let done = &events.last().unwrap()["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["model"], "gpt-r");
    assert_eq!(done["output"].as_array().unwrap().len(), 3);
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 103, "input_tokens_details": {"cached_tokens": 3},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 123})
    );
    assert_logged(&mock, "openai-responses", "/v1/responses", &body);
}

#[test]
fn google_stream_of_thinking_text_and_tool_call() {
    let mut reply = full_reply();
    reply["usage"]["reasoning"] = json!(6);
    let mock = MockLlm::start(json!({"replies": [reply]}));
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let resp = post(&mock, path, &body);
    resp.assert_one_chunk_per_event();
    let chunks: Vec<Value> = resp.events().iter().map(Event::json).collect();
    for c in &chunks {
        assert_eq!(c["modelVersion"], "gemini-2.5-flash");
        assert_eq!(c["responseId"], "resp_mock_0001");
        assert_eq!(c["candidates"][0]["content"]["role"], "model");
    }
    let parts: Vec<Value> = chunks
        .iter()
        .map(|c| c["candidates"][0]["content"]["parts"].clone())
        .collect();
    assert_eq!(
        parts,
        vec![
            json!([{"text": "Let m", "thought": true}]),
            json!([{"text": "e thi", "thought": true}]),
            json!([{"text": "nk", "thought": true, "thoughtSignature": "sig_1"}]),
            json!([{"text": "Hello"}]),
            json!([{"text": " worl"}]),
            json!([{"text": "d"}]),
            json!([{"functionCall": {"name": "bash", "args": {"command": "echo hi"},
                "id": "toolu_01"}}]),
            json!([]),
        ]
    );
    let last = chunks.last().unwrap();
    assert!(chunks[..chunks.len() - 1]
        .iter()
        .all(|c| c["candidates"][0].get("finishReason").is_none()
            && c.get("usageMetadata").is_none()));
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 103, "candidatesTokenCount": 14, "thoughtsTokenCount": 6,
            "cachedContentTokenCount": 3, "totalTokenCount": 123})
    );
    assert_logged(&mock, "google", path, &body);
    assert_eq!(
        mock.requests()[0]["auth_headers_present"],
        json!(["x-api-key"])
    );
}

#[test]
fn non_streaming_requests_get_json_bodies() {
    let reply = json!({"blocks": [{"type": "text", "text": "Hi"},
        {"type": "tool_call", "name": "read", "input": {"path": "a"}}],
        "stop_reason": "max_tokens"});
    let mock = MockLlm::start(json!({"default": reply}));
    let msg = post(&mock, "/v1/messages", &json!({"model": "m"})).json();
    assert_eq!(msg["stop_reason"], "max_tokens");
    assert_eq!(
        msg["content"],
        json!([{"type": "text", "text": "Hi"},
            {"type": "tool_use", "id": "toolu_mock_1", "name": "read", "input": {"path": "a"}}])
    );
    let chat = post(&mock, "/v1/chat/completions", &json!({"model": "m"})).json();
    assert_eq!(chat["choices"][0]["finish_reason"], "length");
    assert_eq!(chat["choices"][0]["message"]["content"], "Hi");
    assert_eq!(
        chat["choices"][0]["message"]["tool_calls"][0]["function"],
        json!({"name": "read", "arguments": "{\"path\": \"a\"}"})
    );
    let gemini = post(&mock, "/v1beta/models/g:generateContent", &json!({})).json();
    assert_eq!(gemini["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(
        gemini["candidates"][0]["content"]["parts"][0],
        json!({"text": "Hi"})
    );
}

// ----------------------------------------------------------------------- script semantics

#[test]
fn http_error_statuses_use_each_api_error_shape() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 529, "error_type": "overloaded_error", "error_message": "Overloaded",
         "headers": {"retry-after": 0}},
        {"status": 429},
        {"status": 429},
    ]}));
    let resp = post(&mock, "/v1/messages", &json!({"stream": true}));
    assert_eq!(resp.status, 529);
    assert_eq!(resp.header("retry-after"), Some("0"));
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(
        resp.body,
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_mock_0001"}"#
    );
    let resp = post(&mock, "/v1/chat/completions", &json!({"stream": true}));
    assert_eq!(resp.status, 429);
    assert_eq!(
        resp.json(),
        json!({"error": {"message": "Rate limited", "type": "rate_limit_error", "param": null,
            "code": null}})
    );
    let resp = post(
        &mock,
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        &json!({}),
    );
    assert_eq!(resp.status, 429);
    assert_eq!(
        resp.json(),
        json!({"error": {"code": 429, "message": "Rate limited", "status": "RESOURCE_EXHAUSTED"}})
    );
}

#[test]
fn when_selects_a_matching_reply_then_default_answers() {
    let mock = MockLlm::start(json!({
        "replies": [{"when": "beta", "blocks": [{"type": "text", "text": "B"}]}, text_reply("A")],
        "default": text_reply("D"),
    }));
    let text = |word: &str| {
        let body = json!({"messages": [{"role": "user", "content": word}]});
        post(&mock, "/v1/messages", &body).json()["content"][0]["text"].clone()
    };
    assert_eq!(text("alpha"), "A");
    assert_eq!(text("beta"), "B");
    assert_eq!(text("gamma"), "D");
    let log = mock.requests();
    let indexes: Vec<&Value> = log.iter().map(|e| &e["reply_index"]).collect();
    assert_eq!(indexes, [&json!(1), &json!(0), &Value::Null]);
    let seqs: Vec<&Value> = log.iter().map(|e| &e["seq"]).collect();
    assert_eq!(seqs, [&json!(1), &json!(2), &json!(3)]);
}

#[test]
fn an_exhausted_script_without_default_answers_500() {
    let mock = MockLlm::start(json!({"replies": [text_reply("only")]}));
    assert_eq!(post(&mock, "/v1/messages", &json!({})).status, 200);
    let resp = post(&mock, "/v1/messages", &json!({}));
    assert_eq!(resp.status, 500);
    let message = resp.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("exhausted"), "{message}");
    mock.push_reply(text_reply("pushed"));
    let resp = post(&mock, "/v1/messages", &json!({}));
    assert_eq!(resp.json()["content"][0]["text"], "pushed");
    assert_eq!(mock.requests()[2]["reply_index"], 1);
}

// -------------------------------------------------------------------- broken streams

#[test]
fn a_hang_ends_when_the_client_closes() {
    let mock = MockLlm::start(json!({"replies": [{"hang": true, "hang_after_blocks": 1,
        "blocks": [{"type": "text", "text": "partial"}, {"type": "text", "text": "never"}]}]}));
    let mut stream = send_post(&mock, "/v1/messages", r#"{"stream": true}"#);
    let seen = read_until(&mut stream, "content_block_stop");
    assert!(
        seen.contains("partial") && !seen.contains("never"),
        "{seen}"
    );
    assert_eq!(mock.active_connections(), 1);
    drop(stream);
    wait_idle(&mock, Duration::from_secs(2));
    mock.push_reply(text_reply("after"));
    let resp = post(&mock, "/v1/messages", &json!({"stream": true}));
    resp.assert_one_chunk_per_event();
    assert!(resp.body.contains("\"after\""));
}

#[test]
fn a_hang_ends_cleanly_after_hang_max_ms() {
    let mock = MockLlm::start(json!({"replies": [{"hang": true, "hang_max_ms": 50,
        "blocks": [{"type": "text", "text": "partial"}]}]}));
    let resp = post(&mock, "/v1/messages", &json!({"stream": true}));
    assert!(resp.complete);
    let names: Vec<String> = resp
        .events()
        .iter()
        .filter_map(|e| e.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop"
        ]
    );
}

#[test]
fn dropping_the_server_ends_a_hanging_stream_promptly() {
    let mock = MockLlm::start(json!({"replies": [{"hang": true}]}));
    let mut stream = send_post(&mock, "/v1/chat/completions", r#"{"stream": true}"#);
    read_until(&mut stream, "\"role\": \"assistant\"");
    let start = Instant::now();
    drop(mock);
    let rest = read_to_end(stream);
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_millis(500), "took {elapsed:?}");
    assert!(!String::from_utf8_lossy(&rest).contains("0\r\n\r\n"));
}

#[test]
fn disconnect_closes_without_a_terminal_event() {
    let mock = MockLlm::start(
        json!({"replies": [{"disconnect": true, "hang_after_blocks": 1,
        "blocks": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]}),
    );
    let resp = post(&mock, "/v1/chat/completions", &json!({"stream": true}));
    assert!(!resp.complete, "the body must end without its last chunk");
    let deltas: Vec<Value> = resp
        .events()
        .iter()
        .map(|e| e.json()["choices"][0]["delta"].clone())
        .collect();
    assert_eq!(
        deltas,
        [
            json!({"role": "assistant", "content": ""}),
            json!({"content": "one"})
        ]
    );
    wait_idle(&mock, Duration::from_secs(2));
}

#[test]
fn truncate_without_stop_and_stream_error() {
    let mock = MockLlm::start(json!({"replies": [
        {"truncate_without_stop": true, "blocks": [{"type": "text", "text": "cut"}]},
        {"stream_error": {"type": "server_error", "message": "boom"},
         "blocks": [{"type": "text", "text": "so far"}]},
        {"stream_error": {"message": "boom"}},
    ]}));
    let resp = post(&mock, "/v1/messages", &json!({"stream": true}));
    assert!(resp.complete);
    let names: Vec<String> = resp
        .events()
        .iter()
        .filter_map(|e| e.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop"
        ]
    );

    let resp = post(&mock, "/v1/responses", &json!({"stream": true}));
    assert!(resp.complete);
    let last = resp.events().pop().unwrap();
    assert_eq!(last.name.as_deref(), Some("error"));
    let error = last.json();
    assert_eq!(
        (&error["code"], &error["message"]),
        (&json!("server_error"), &json!("boom"))
    );
    assert!(!resp.body.contains("response.completed"));

    let resp = post(
        &mock,
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        &json!({}),
    );
    assert_eq!(
        resp.events().pop().unwrap().json(),
        json!({"error": {"code": 503, "message": "boom", "status": "UNAVAILABLE"}})
    );
}

#[test]
fn raw_sse_is_sent_verbatim() {
    let text = "event: ping\ndata: {}\n\ndata: {not json\n\n";
    let mock = MockLlm::start(json!({"replies": [
        {"raw_sse": text},
        {"raw_sse": ["data: {\"a\"", ":1}\n\n"]},
    ]}));
    let resp = post(&mock, "/v1/chat/completions", &json!({"stream": true}));
    assert!(resp.complete);
    assert_eq!(resp.body, text);
    assert_eq!(
        resp.chunks,
        ["event: ping\ndata: {}\n\n", "data: {not json\n\n"]
    );
    let resp = post(&mock, "/v1/chat/completions", &json!({"stream": true}));
    assert_eq!(resp.chunks, ["data: {\"a\"", ":1}\n\n"]);
}

// ------------------------------------------------------------------------------ bad input

#[test]
fn malformed_http_and_non_json_bodies_get_400() {
    let mock = MockLlm::start(json!({"replies": [text_reply("ok")]}));
    let mut stream = connect(&mock);
    stream.write_all(b"GARBAGE\r\n\r\n").unwrap();
    assert_eq!(read_response(stream).status, 400);

    let mut stream = connect(&mock);
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nContent-Length: nope\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(stream).status, 400);

    let resp = read_response(send_post(&mock, "/v1/messages", "{not json"));
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["type"], "invalid_request_error");
    let entry = &mock.requests()[0];
    assert_eq!(entry["body"], json!({"_unparsed": "{not json"}));
    assert_eq!(entry["reply_index"], Value::Null);

    // The reply was not consumed; the server still works.
    let resp = post(&mock, "/v1/messages", &json!({}));
    assert_eq!(resp.json()["content"][0]["text"], "ok");
    wait_idle(&mock, Duration::from_secs(2));
}

#[test]
fn chunked_request_bodies_and_unknown_paths() {
    let mock = MockLlm::start(json!({"default": text_reply("ok")}));
    let mut stream = connect(&mock);
    stream
        .write_all(
            b"POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
              5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n",
        )
        .unwrap();
    assert_eq!(read_response(stream).status, 200);
    assert_eq!(mock.requests()[0]["body"], json!({"a": 1}));

    let resp = post(&mock, "/v1/unknown", &json!({}));
    assert_eq!(resp.status, 404);
    let entry = &mock.requests()[1];
    assert_eq!((&entry["api"], &entry["seq"]), (&Value::Null, &Value::Null));

    let mut stream = connect(&mock);
    stream
        .write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let resp = read_response(stream);
    assert_eq!(resp.json()["data"][0]["id"], "mock-model");
    assert_eq!(mock.requests().len(), 2, "GETs are not logged");
}
