//! The Anthropic Messages adapter against the scripted server: `stream_assistant` end to end
//! (request sent, events, final message, errors, abort).

use std::time::{Duration, Instant};

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::model::ModelCost;
use pi_rpc::llm::types::{AssistantMessage, ContentBlock, LlmMessage, StopReason, Usage};
use pi_rpc::llm::{Model, ThinkingLevel};
use serde_json::{json, Value};

use crate::support::llm::{
    bash_result, closed_port, ctx, normalized, opts, run, run_cancelled_after, user, user_with_png,
    zero_usage,
};
use crate::support::mock_llm::MockLlm;

fn model(base_url: &str) -> Model {
    Model {
        id: "mock-sonnet".into(),
        name: "Mock Sonnet".into(),
        api: "anthropic-messages".into(),
        provider: "mock".into(),
        base_url: base_url.into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
            tiers: None,
        },
        context_window: 200_000,
        max_tokens: 8192,
        ..Model::default()
    }
}

#[test]
fn thinking_text_and_tool_call_stream() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [
            {"type": "thinking", "text": "Let me think.", "signature": "SIG_1"},
            {"type": "text", "text": "I will run it.", "chunk_size": 7},
            {"type": "tool_call", "id": "toolu_01", "name": "bash", "input": {"command": "echo hi"}, "chunk_size": 10}
        ],
        "usage": {"input": 120, "output": 14, "cache_read": 30, "cache_write": 10}
    }]}));
    let m = model(&mock.base_url());
    let (msg, updates) = run(
        &m,
        &ctx(vec![user("Run echo hi")]),
        &opts(),
        &CancelToken::new(),
    );

    let usage_start = json!({"input":120,"output":1,"cacheRead":30,"cacheWrite":10,"totalTokens":161,
        "cost":{"input":0.00036,"output":1.5e-5,"cacheRead":9e-6,"cacheWrite":3.75e-5,"total":0.0004215,"totalFromProvider":false},"cacheWrite1h":0});
    let partial = |v: &Value| {
        let mut v = v.clone();
        v["timestamp"] = json!(0);
        v
    };
    assert_eq!(
        partial(&updates[0]["start"]),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock","model":"mock-sonnet",
               "usage": usage_start,"stopReason":"pending","timestamp":0,"responseId":"msg_mock_0001"})
    );
    assert_eq!(
        updates[1..].to_vec(),
        vec![
            json!({"type":"thinking_start","contentIndex":0}),
            json!({"type":"thinking_delta","contentIndex":0,"delta":"Let me think."}),
            json!({"type":"thinking_end","contentIndex":0,"content":"Let me think."}),
            json!({"type":"text_start","contentIndex":1}),
            json!({"type":"text_delta","contentIndex":1,"delta":"I will "}),
            json!({"type":"text_delta","contentIndex":1,"delta":"run it."}),
            json!({"type":"text_end","contentIndex":1,"content":"I will run it."}),
            json!({"type":"toolcall_start","contentIndex":2,"id":"toolu_01","toolName":"bash"}),
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"{\"command\""}),
            json!({"type":"toolcall_delta","contentIndex":2,"delta":": \"echo hi"}),
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"\"}"}),
            json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"toolu_01","name":"bash","arguments":{"command":"echo hi"}}}),
        ]
    );
    assert_eq!(
        normalized(&msg),
        json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"Let me think.","thinkingSignature":"SIG_1"},
                {"type":"text","text":"I will run it."},
                {"type":"toolCall","id":"toolu_01","name":"bash","arguments":{"command":"echo hi"}}],
               "api":"anthropic-messages","provider":"mock","model":"mock-sonnet",
               "usage":{"input":120,"output":14,"cacheRead":30,"cacheWrite":10,"totalTokens":174,
                        "cost":{"input":0.00036,"output":0.00021,"cacheRead":9e-6,"cacheWrite":3.75e-5,"total":0.0006165,"totalFromProvider":false},"cacheWrite1h":0},
               "stopReason":"toolUse","timestamp":0,"responseId":"msg_mock_0001","rawStopReason":"tool_use",
               "durationMs":0,"thinkingLevel":"medium"})
    );
    // Cost is exact (JavaScript arithmetic).
    assert_eq!(msg.usage.cost.output, 15.0 / 1e6 * 14.0);
}

#[test]
fn request_carries_prompt_tools_history_and_images() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "ok"}]}]}));
    let m = model(&mock.base_url());
    let previous = AssistantMessage {
        content: vec![
            ContentBlock::Thinking {
                thinking: "Planning.".into(),
                thinking_signature: Some("SIG_PREV".into()),
                redacted: false,
            },
            ContentBlock::text("Running."),
            ContentBlock::ToolCall {
                id: "toolu_prev".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                arguments_error: None,
                thought_signature: None,
            },
        ],
        api: "anthropic-messages".into(),
        provider: "mock".into(),
        model: "mock-sonnet".into(),
        usage: Usage::empty(),
        stop_reason: StopReason::ToolUse,
        timestamp: 2,
        ..AssistantMessage::default()
    };
    let context = ctx(vec![
        user("List files"),
        LlmMessage::Assistant(previous),
        bash_result("toolu_prev", "a.txt\n"),
        user_with_png("What is this?"),
    ]);
    let (msg, _) = run(&m, &context, &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    let reqs = mock.wait_requests(1, Duration::from_secs(5));
    let r = &reqs[0];
    assert_eq!(r["path"], "/v1/messages?beta=true");
    assert_eq!(r["headers"]["anthropic-version"], "2023-06-01");
    assert_eq!(
        r["headers"]["anthropic-beta"],
        "interleaved-thinking-2025-05-14"
    );
    assert_eq!(r["headers"]["content-type"], "application/json");
    assert!(r["headers"]["user-agent"]
        .as_str()
        .is_some_and(|u| u.starts_with("pi-rpc/")));
    assert_eq!(r["auth_headers_present"], json!(["x-api-key"]));
    assert_eq!(
        r["body"],
        json!({
            "model": "mock-sonnet",
            "messages": [
                {"role":"user","content":[{"type":"text","text":"List files"}]},
                {"role":"assistant","content":[
                    {"type":"thinking","thinking":"Planning.","signature":"SIG_PREV"},
                    {"type":"text","text":"Running."},
                    {"type":"tool_use","id":"toolu_prev","name":"bash","input":{"command":"ls"}}]},
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_prev","content":"a.txt\n","is_error":false}]},
                {"role":"user","content":[
                    {"type":"text","text":"What is this?"},
                    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="},"cache_control":{"type":"ephemeral"}}]}
            ],
            "max_tokens": 8192,
            "stream": true,
            "system": [{"type":"text","text":"You are a test.","cache_control":{"type":"ephemeral"}}],
            "tools": [{"name":"bash","description":"Execute a bash command","eager_input_streaming":true,
                       "input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]},
                       "cache_control":{"type":"ephemeral"}}],
            "thinking": {"type":"enabled","budget_tokens":7168,"display":"summarized"}
        })
    );
}

#[test]
fn http_errors_fail_before_start() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 400, "error_type": "invalid_request_error", "error_message": "bad thing"},
        {"status": 429, "error_type": "rate_limit_error", "error_message": "Rate limited"},
        {"status": 500, "raw_error_body": ""}
    ]}));
    let m = model(&mock.base_url());
    let mut o = opts();
    o.thinking_level = ThinkingLevel::Off;
    let c = ctx(vec![user("hi")]);
    let (msg, updates) = run(&m, &c, &o, &CancelToken::new());
    assert!(updates.is_empty(), "{updates:?}");
    assert_eq!(
        normalized(&msg),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock","model":"mock-sonnet",
               "usage": zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage":"400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad thing\"},\"request_id\":\"req_mock_0001\"}",
               "durationMs":0,"thinkingLevel":"off"})
    );
    assert!(!pi_rpc::llm::errors::is_retryable(&msg, m.context_window));

    let (msg, updates) = run(&m, &c, &o, &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"},\"request_id\":\"req_mock_0002\"}")
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));

    let (msg, _) = run(&m, &c, &o, &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("500 status code (no body)")
    );
}

#[test]
fn sse_error_event_keeps_streamed_content() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [{"type": "text", "text": "partial"}],
        "stream_error": {"type": "overloaded_error", "message": "Overloaded"}
    }]}));
    let m = model(&mock.base_url());
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert!(updates[0].get("start").is_some());
    assert_eq!(updates.len(), 4);
    let v = normalized(&msg);
    assert_eq!(v["content"], json!([{"type":"text","text":"partial"}]));
    assert_eq!(v["stopReason"], "error");
    assert_eq!(
        v["errorMessage"],
        "{\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}"
    );
    // Key order of a stream that failed after it started: no rawStopReason.
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "role",
            "content",
            "api",
            "provider",
            "model",
            "usage",
            "stopReason",
            "timestamp",
            "responseId",
            "errorMessage",
            "durationMs",
            "thinkingLevel"
        ]
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}

#[test]
fn truncated_and_disconnected_streams_are_errors() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "cut"}], "truncate_without_stop": true},
        {"blocks": [{"type": "text", "text": "gone"}], "disconnect": true}
    ]}));
    let m = model(&mock.base_url());
    let c = ctx(vec![user("hi")]);
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
    assert_eq!(msg.content, vec![ContentBlock::text("cut")]);
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));

    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.content, vec![ContentBlock::text("gone")]);
    eprintln!("disconnect → {:?}", msg.error_message);
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}

#[test]
fn abort_during_a_hang_returns_promptly() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [{"type": "text", "text": "Partial answer"}],
        "hang": true
    }]}));
    let m = model(&mock.base_url());
    // Cancel once the text block has ended (the server then stops sending).
    let (msg, took) = run_cancelled_after(&m, &ctx(vec![user("hi")]), &opts(), "text_end");
    eprintln!("anthropic: cancel → stream_assistant returned in {took:?}");
    let v = normalized(&msg);
    assert_eq!(v["stopReason"], "aborted");
    assert_eq!(v["errorMessage"], "This operation was aborted");
    assert_eq!(
        v["content"],
        json!([{"type":"text","text":"Partial answer"}])
    );
    assert_eq!(v["responseId"], "msg_mock_0001");
    assert!(v.get("rawStopReason").is_none());
    assert!(!pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}

#[test]
fn abort_before_the_response_and_before_the_request() {
    let mock = MockLlm::start(json!({"replies": [{
        "first_delay_ms": 5000,
        "blocks": [{"type": "text", "text": "late"}]
    }]}));
    let m = model(&mock.base_url());
    let cancel = CancelToken::new();
    // Already cancelled: nothing is sent.
    let pre = CancelToken::new();
    pre.cancel();
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &opts(), &pre);
    assert!(updates.is_empty());
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("This operation was aborted")
    );
    assert!(mock.requests().is_empty());

    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        c2.cancel();
    });
    let started = Instant::now();
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &opts(), &cancel);
    eprintln!(
        "anthropic: aborted while waiting after {:?}",
        started.elapsed()
    );
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    // The mock sends its headers before the delay, so the abort lands after the start.
    assert!(matches!(
        msg.error_message.as_deref(),
        Some("This operation was aborted" | "Request aborted")
    ));
}

#[test]
fn connection_refused_is_a_retryable_error() {
    let port = closed_port();
    let m = model(&format!("http://127.0.0.1:{port}"));
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        normalized(&msg),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock","model":"mock-sonnet",
               "usage": zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage": format!("Connection error.: connect ECONNREFUSED 127.0.0.1:{port}"),
               "durationMs":0,"thinkingLevel":"medium"})
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}

#[test]
fn missing_api_key_is_reported() {
    let m = model("http://127.0.0.1:9");
    let mut o = opts();
    o.api_key = None;
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &o, &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: mock")
    );
}

/// A model with mid-conversation effort (pi's claude-opus-5-5 compat): the reply records the
/// effort it was asked for as `providerThinkingLevel` (right after `timestamp`, from the
/// partial on, and on an error reply too), the stored field survives a round trip, and the
/// next request marks that reply's turn with it.
#[test]
fn managed_effort_reply_carries_provider_thinking_level() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Hi."}], "usage": {"input": 10, "output": 2}},
        {"status": 400, "error_type": "invalid_request_error", "error_message": "bad thing"}
    ]}));
    let mut m = model(&mock.base_url());
    m.thinking_level_map = json!({"off": null, "minimal": null, "low": "low", "medium": "medium",
        "high": "high", "xhigh": "xhigh", "max": "max"})
    .as_object()
    .cloned();
    m.compat = json!({"forceAdaptiveThinking": true, "supportsMidConvoEffort": true})
        .as_object()
        .cloned();
    let mut o = opts();
    o.thinking_level = ThinkingLevel::High;
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &o, &CancelToken::new());
    assert_eq!(msg.provider_thinking_level.as_deref(), Some("high"));
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&updates[0]["start"])[7..9],
        ["timestamp".to_string(), "providerThinkingLevel".to_string()]
    );
    let stored = msg.to_value();
    assert_eq!(stored["providerThinkingLevel"], "high");
    let back = AssistantMessage::from_value(&stored).unwrap();
    assert_eq!(back.provider_thinking_level.as_deref(), Some("high"));

    o.thinking_level = ThinkingLevel::Low;
    let c = ctx(vec![user("hi"), LlmMessage::Assistant(back), user("again")]);
    let (err, _) = run(&m, &c, &o, &CancelToken::new());
    assert_eq!(err.stop_reason, StopReason::Error);
    assert_eq!(err.provider_thinking_level.as_deref(), Some("low"));
    let reqs = mock.requests();
    let marker = |e: &str| json!({"role":"system","content":[],"output_config":{"effort":e}});
    assert_eq!(reqs[0]["body"]["messages"][1], marker("high"));
    assert_eq!(reqs[1]["body"]["messages"][1], marker("high"));
    assert_eq!(reqs[1]["body"]["messages"][4], marker("low"));
    assert_eq!(reqs[1]["body"]["output_config"], json!({"effort": "low"}));
}

/// pi's strict-tools downgrade: Claude's 400 for too many strict tools is answered by sending
/// the request again with the preferred-strict tools non-strict (one
/// `anthropic_strict_tools_fallback` diagnostic on the reply); the session's later requests
/// start non-strict. Another 400, or a request without preferred-strict tools, is not resent.
#[test]
fn strict_tool_limits_downgrade_and_remember_the_session() {
    let limit = json!({"status": 400, "error_type": "invalid_request_error",
        "error_message": "Too many strict tools (21 > 20)"});
    let ok = json!({"blocks": [{"type": "text", "text": "ok"}]});
    let mock = MockLlm::start(json!({"replies": [
        limit, ok, ok,
        {"status": 400, "error_type": "invalid_request_error", "error_message": "bad thing"},
        limit
    ]}));
    let mut m = model(&mock.base_url());
    m.compat = json!({"supportsStrictTools": true}).as_object().cloned();
    let mut c = ctx(vec![user("hi")]);
    c.tools[0].strict_prefer = true;
    let mut o = opts();
    o.session_id = Some("strict-limits-integration".into());
    let (msg, _) = run(&m, &c, &o, &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.diagnostics.len(), 1);
    assert_eq!(
        msg.diagnostics[0]["details"],
        json!({"reason": "strict_tool_limits_exceeded"})
    );
    assert_eq!(
        msg.diagnostics[0]["type"],
        "anthropic_strict_tools_fallback"
    );
    let (msg2, _) = run(&m, &c, &o, &CancelToken::new());
    assert!(msg2.diagnostics.is_empty());
    let reqs = mock.requests();
    let strict = |i: usize| reqs[i]["body"]["tools"][0].get("strict").cloned();
    assert_eq!(strict(0), Some(json!(true)));
    assert_eq!(strict(1), None);
    assert_eq!(strict(2), None);

    // Another session: a 400 that is not about the limits fails at once.
    o.session_id = Some("strict-limits-integration-2".into());
    let (err, _) = run(&m, &c, &o, &CancelToken::new());
    assert_eq!(err.stop_reason, StopReason::Error);
    // No preferred-strict tool: the limit error is not retried either.
    c.tools[0].strict_prefer = false;
    let (err, _) = run(&m, &c, &o, &CancelToken::new());
    assert_eq!(err.stop_reason, StopReason::Error);
    assert!(err.diagnostics.is_empty());
    assert_eq!(mock.requests().len(), 5);
}
