//! The `pi-messages` adapter (radius) against the scripted LLM server: the whole request
//! (`{model, context, options}` with the transcript verbatim, bearer key, SSE accept), the
//! reported events and the final message for text, thinking and tool calls, the server's
//! `error` event, HTTP errors, a stream without a terminal event, a bad content index and an
//! abort, as pi 1.6.0's `pi-messages.js` handles them.

use serde_json::{json, Value};

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::convert::build_llm_context;
use pi_rpc::llm::errors::is_retryable;
use pi_rpc::llm::types::{LlmContext, StopReason, StreamOptions};
use pi_rpc::llm::{Model, ThinkingLevel};

use crate::support::llm::{normalized, run, run_cancelled_after, zero_usage};
use crate::support::mock_llm::MockLlm;

fn model(mock: &MockLlm) -> Model {
    serde_json::from_value(
        json!({"id": "balanced", "name": "Balanced", "api": "pi-messages",
        "provider": "radius", "baseUrl": format!("{}/v1/", mock.base_url()), "reasoning": true,
        "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000, "maxTokens": 32000,
        "thinkingLevelMap": {"medium": null}}),
    )
    .unwrap()
}

/// A stored transcript: the system message (sections, tools), a user turn, an assistant turn
/// with a tool call, its result, a `!command` and the next user message.
fn transcript() -> Vec<Value> {
    vec![
        json!({"role": "system", "content": "", "sections": {"preamble": "You are a test.",
            "cwd": "<cwd>\n/w\n</cwd>"}, "timestamp": 5, "toolsAdded": [{"name": "bash",
            "description": "Run bash", "parameters": {"type": "object", "properties":
            {"command": {"type": "string"}}, "required": ["command"]},
            "constrainedSampling": {"type": "json_schema", "strict": "prefer"}}]}),
        json!({"role": "user", "content": [{"type": "text", "text": "list"}], "timestamp": 6}),
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": "call_1",
            "name": "bash", "arguments": {"command": "ls"}}], "api": "pi-messages",
            "provider": "radius", "model": "balanced", "usage": {"input": 1, "output": 2,
            "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"input": 0,
            "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": "toolUse",
            "timestamp": 7, "responseId": "r1", "durationMs": 9, "thinkingLevel": "high"}),
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "bash", "content":
            [{"type": "text", "text": "a.txt"}], "details": {"exitCode": 0}, "isError": false,
            "timestamp": 8}),
        json!({"role": "bashExecution", "command": "pwd", "output": "/w", "exitCode": 0,
            "cancelled": false, "truncated": false, "timestamp": 9}),
        json!({"role": "user", "content": "and now?", "timestamp": 10}),
    ]
}

/// The transcript after pi's `convertToLlm` (what the agent loop puts in the context): the
/// `!command` becomes a user message.
fn converted() -> Vec<Value> {
    let mut messages = transcript();
    messages[4] = json!({"role": "user", "content": [{"type": "text",
        "text": "Ran `pwd`\n```\n/w\n```"}], "timestamp": 9});
    messages
}

fn agent_ctx(model: &Model) -> LlmContext {
    let mut ctx = build_llm_context(&transcript(), model);
    ctx.transcript = Some(converted());
    ctx
}

fn opts() -> StreamOptions {
    StreamOptions {
        api_key: Some("rad-key-123456".into()),
        thinking_level: ThinkingLevel::Medium,
        session_id: Some("sess-1".into()),
        ..StreamOptions::default()
    }
}

#[test]
fn request_is_the_transcript_verbatim_and_events_rebuild_the_message() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [
        {"type": "thinking", "text": "Let me think", "signature": "sig-1"},
        {"type": "text", "text": "Listing now", "chunks": ["Listing", " now"]},
        {"type": "tool_call", "id": "call_2", "name": "bash", "input": {"command": "ls -a"}}],
        "usage": {"input": 12, "output": 7, "cache_read": 3, "cache_write": 0}}]}));
    let m = model(&mock);
    let (msg, updates) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    let requests = mock.requests();
    let req = &requests[0];
    assert_eq!(req["path"], "/v1/messages");
    assert_eq!(req["api"], "pi-messages");
    assert_eq!(req["auth_headers_present"], json!(["authorization"]));
    assert_eq!(req["headers"]["accept"], "text/event-stream");
    assert_eq!(req["headers"]["content-type"], "application/json");
    assert_eq!(
        req["body"],
        json!({"model": "balanced", "context": {"messages": converted()},
            "options": {"reasoning": "high", "sessionId": "sess-1"}})
    );
    let types: Vec<&str> = updates
        .iter()
        .map(|u| u.get("type").and_then(Value::as_str).unwrap_or("start"))
        .collect();
    assert_eq!(
        types,
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    assert_eq!(updates[0]["start"]["content"], json!([]));
    assert_eq!(
        updates[6],
        json!({"type": "text_delta", "contentIndex": 1, "delta": " now"})
    );
    assert_eq!(
        updates[10],
        json!({"type": "toolcall_end", "contentIndex": 2, "toolCall": {"type": "toolCall",
            "id": "call_2", "name": "bash", "arguments": {"command": "ls -a"}}})
    );
    assert_eq!(
        normalized(&msg),
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me think", "thinkingSignature": "sig-1"},
            {"type": "text", "text": "Listing now"},
            {"type": "toolCall", "id": "call_2", "name": "bash", "arguments": {"command": "ls -a"}}],
            "api": "pi-messages", "provider": "radius", "model": "balanced",
            "usage": {"input": 12, "output": 7, "cacheRead": 3, "cacheWrite": 0,
                "totalTokens": 22, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse", "timestamp": 0, "responseId": "resp_mock_0001",
            "durationMs": 0, "thinkingLevel": "high"})
    );
}

#[test]
fn a_context_without_transcript_is_sent_in_pis_normalized_form() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "S"}]}]}));
    let m = model(&mock);
    let mut ctx = build_llm_context(&transcript()[..2], &m);
    ctx.system_prompt = "Summarize.".into();
    let o = StreamOptions {
        cache_retention: pi_rpc::llm::types::CacheRetention::None,
        thinking_level: ThinkingLevel::Off,
        max_tokens: Some(900),
        ..opts()
    };
    let (msg, _) = run(&m, &ctx, &o, &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Stop);
    let body = &mock.requests()[0]["body"];
    assert_eq!(
        body,
        &json!({"model": "balanced", "context": {"messages": [
            {"role": "system", "content": "Summarize.", "toolsAdded": [{"name": "bash",
                "description": "Run bash", "parameters": {"type": "object", "properties":
                {"command": {"type": "string"}}, "required": ["command"]},
                "constrainedSampling": {"type": "json_schema", "strict": "prefer"}}],
                "timestamp": 0},
            {"role": "user", "content": [{"type": "text", "text": "list"}], "timestamp": 6}]},
            "options": {"maxTokens": 900, "cacheRetention": "none", "sessionId": "sess-1"}})
    );
}

#[test]
fn the_servers_error_event_keeps_the_content() {
    let mock = MockLlm::start(
        json!({"replies": [{"blocks": [{"type": "text", "text": "Part"}],
        "stream_error": {"message": "upstream overloaded"}}]}),
    );
    let m = model(&mock);
    let (msg, _) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.error_message.as_deref(), Some("upstream overloaded"));
    assert_eq!(msg.content.len(), 1);
    assert_eq!(msg.response_id.as_deref(), Some("resp_mock_0001"));
}

#[test]
fn http_errors_are_status_text_message_and_code() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 429, "error_message": "Slow down", "error_code": "rate_limited"},
        {"status": 502, "raw_error_body": "bad gateway"}]}));
    let m = model(&mock);
    let (msg, updates) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("429 Too Many Requests: Slow down (rate_limited)")
    );
    let (msg, _) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("502 Bad Gateway: bad gateway")
    );
}

#[test]
fn a_stream_without_terminal_event_is_a_retryable_error_without_content() {
    let mock = MockLlm::start(
        json!({"replies": [{"blocks": [{"type": "text", "text": "Hi"}],
        "truncate_without_stop": true}]}),
    );
    let m = model(&mock);
    let (msg, updates) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert_eq!(updates.len(), 4, "start and the text events: {updates:?}");
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("radius stream ended without a terminal event")
    );
    assert_eq!(msg.content, vec![]);
    assert_eq!(msg.to_value()["usage"], zero_usage());
    assert!(is_retryable(&msg, m.context_window));
}

#[test]
fn a_foreign_stream_ends_without_start_and_a_bad_index_is_an_error() {
    // An Anthropic stream (what the conformance scenario's mock sends): its events are ignored.
    let mock = MockLlm::start(json!({"replies": [
        {"raw_sse": "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"},
        {"raw_sse": "data: {\"type\":\"start\"}\n\ndata: {\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"x\"}\n\n"},
        {"raw_sse": "data: not json\n\n"}]}));
    let m = model(&mock);
    let (msg, updates) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert!(updates.is_empty(), "{updates:?}");
    assert_eq!(
        msg.error_message.as_deref(),
        Some("radius stream ended without a terminal event")
    );
    let (msg, _) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Invalid contentIndex 0 in pi-messages text_delta event")
    );
    let (msg, _) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Unexpected token 'o', \"not json\" is not valid JSON")
    );
}

#[test]
fn an_abort_while_streaming_drops_the_content() {
    let mock = MockLlm::start(
        json!({"replies": [{"blocks": [{"type": "text", "text": "Hi"}],
        "hang": true}]}),
    );
    let m = model(&mock);
    let (msg, _) = run_cancelled_after(&m, &agent_ctx(&m), &opts(), "text_end");
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("This operation was aborted")
    );
    assert_eq!(msg.content, vec![]);
}

#[test]
fn a_missing_key_fails_before_any_request() {
    let mock = MockLlm::start(json!({"replies": []}));
    let m = model(&mock);
    let o = StreamOptions {
        api_key: None,
        ..opts()
    };
    let (msg, _) = run(&m, &agent_ctx(&m), &o, &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key provided for provider \"radius\"")
    );
    assert!(mock.requests().is_empty());
}

#[test]
fn a_refused_connection_is_fetch_failed() {
    let mock = MockLlm::start(json!({"replies": []}));
    let mut m = model(&mock);
    m.base_url = format!("http://127.0.0.1:{}/v1", crate::support::llm::closed_port());
    let (msg, updates) = run(&m, &agent_ctx(&m), &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(msg.error_message.as_deref(), Some("fetch failed"));
    assert!(is_retryable(&msg, m.context_window));
}
