//! The `mistral-conversations` adapter against the scripted server: `stream_assistant` end to
//! end (the whole request, events, final message, thinking, errors, abort). The final message
//! of the first test is pi 1.6.0's for the same script (its `prov_mistral` capture).

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::model::ModelCost;
use pi_rpc::llm::types::{
    AssistantMessage, CacheRetention, ContentBlock, LlmMessage, StopReason, StreamOptions,
};
use pi_rpc::llm::{Model, ThinkingLevel};
use serde_json::{json, Value};

use crate::support::llm::{
    bash_result, closed_port, ctx, normalized, opts, run, run_cancelled_after, user, zero_usage,
};
use crate::support::mock_llm::MockLlm;

/// pi's catalog entry of `mistral-medium-latest`, on the mock.
fn model(base_url: &str) -> Model {
    Model {
        id: "mistral-medium-latest".into(),
        name: "Mistral Medium (latest)".into(),
        api: "mistral-conversations".into(),
        provider: "mistral".into(),
        base_url: base_url.into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 1.5,
            output: 7.5,
            cache_read: 0.15,
            cache_write: 0.0,
            tiers: None,
        },
        context_window: 262_144,
        max_tokens: 262_144,
        thinking_level_map: json!({"off": "none", "minimal": null, "low": null, "medium": null})
            .as_object()
            .cloned(),
        ..Model::default()
    }
}

fn session_opts(level: ThinkingLevel) -> StreamOptions {
    StreamOptions {
        thinking_level: level,
        session_id: Some("sess-1".into()),
        ..opts()
    }
}

fn final_text(msg: &AssistantMessage) -> String {
    let mut v = normalized(msg);
    v["timestamp"] = json!("<TS>");
    v["durationMs"] = json!("<DURATION>");
    v.to_string()
}

#[test]
fn text_and_tool_call_match_pi() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [
            {"type": "text", "text": "Running it.", "chunk_size": 5},
            {"type": "tool_call", "id": "a1B2c3D4e", "name": "bash", "input": {"command": "echo from-mistral"}, "chunk_size": 12}
        ],
        "usage": {"input": 300, "output": 25, "cache_read": 100}
    }]}));
    let m = model(&mock.base_url());
    let c = ctx(vec![user("Run echo via mistral")]);
    let (msg, updates) = run(
        &m,
        &c,
        &session_opts(ThinkingLevel::Medium),
        &CancelToken::new(),
    );
    // pi 1.6.0's message (prov_mistral).
    assert_eq!(
        final_text(&msg),
        r#"{"role":"assistant","content":[{"type":"text","text":"Running it."},{"type":"toolCall","id":"a1B2c3D4e","name":"bash","arguments":{"command":"echo from-mistral"}}],"api":"mistral-conversations","provider":"mistral","model":"mistral-medium-latest","usage":{"input":300,"output":25,"cacheRead":100,"cacheWrite":0,"totalTokens":425,"cost":{"input":0.00045,"output":0.0001875,"cacheRead":0.000014999999999999999,"cacheWrite":0,"total":0.0006525000000000001,"totalFromProvider":false}},"stopReason":"toolUse","timestamp":"<TS>","responseId":"chatcmpl-mock-0001","rawStopReason":"tool_calls","durationMs":"<DURATION>","thinkingLevel":"high"}"#
    );
    assert_eq!(
        updates[1..].to_vec(),
        vec![
            json!({"type":"text_start","contentIndex":0}),
            json!({"type":"text_delta","contentIndex":0,"delta":"Runni"}),
            json!({"type":"text_delta","contentIndex":0,"delta":"ng it"}),
            json!({"type":"text_delta","contentIndex":0,"delta":"."}),
            json!({"type":"text_end","contentIndex":0,"content":"Running it."}),
            json!({"type":"toolcall_start","contentIndex":1,"id":"a1B2c3D4e","toolName":"bash"}),
            json!({"type":"toolcall_delta","contentIndex":1,"delta":"{\"command\": "}),
            json!({"type":"toolcall_delta","contentIndex":1,"delta":"\"echo from-m"}),
            json!({"type":"toolcall_delta","contentIndex":1,"delta":"istral\"}"}),
            json!({"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"a1B2c3D4e","name":"bash","arguments":{"command":"echo from-mistral"}}}),
        ]
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r["path"], "/v1/chat/completions");
    assert_eq!(r["headers"]["accept"], "text/event-stream");
    assert_eq!(r["headers"]["content-type"], "application/json");
    assert_eq!(r["headers"]["x-affinity"], "sess-1");
    assert_eq!(r["auth_headers_present"], json!(["authorization"]));
    let body: Value = match &r["body"] {
        Value::String(s) => serde_json::from_str(s).unwrap(),
        v => v.clone(),
    };
    let max_tokens = body["max_tokens"].as_u64().unwrap();
    assert!(max_tokens > 200_000 && max_tokens < 262_144, "{max_tokens}");
    assert_eq!(
        body,
        json!({
            "model": "mistral-medium-latest",
            "stream": true,
            "messages": [
                {"role": "system", "content": "You are a test."},
                {"role": "user", "content": [{"type": "text", "text": "Run echo via mistral"}]}
            ],
            "tools": [{"type": "function", "function": {"name": "bash",
                "description": "Execute a bash command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                    "required": ["command"]},
                "strict": false}}],
            "max_tokens": max_tokens,
            "reasoning_effort": "high",
            "prompt_cache_key": "sess-1"
        })
    );
}

#[test]
fn replay_thinking_and_off() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [
            {"type": "thinking", "text": "Need to look.", "chunk_size": 7, "openai_field": "mistral"},
            {"type": "text", "text": "Done."}
        ],
        "usage": {"input": 10, "output": 5}
    }]}));
    let m = model(&mock.base_url());
    let earlier = AssistantMessage {
        api: "mistral-conversations".into(),
        provider: "mistral".into(),
        model: "mistral-medium-latest".into(),
        content: vec![
            ContentBlock::Thinking {
                thinking: "Plan.".into(),
                thinking_signature: None,
                redacted: false,
            },
            ContentBlock::text("Running it."),
            ContentBlock::ToolCall {
                id: "call_01|fc_x".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                arguments_error: None,
                thought_signature: None,
            },
        ],
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    let c = ctx(vec![
        user("go"),
        LlmMessage::Assistant(earlier),
        bash_result("call_01|fc_x", "a\nb\n"),
        user("again"),
    ]);
    let off = StreamOptions {
        cache_retention: CacheRetention::None,
        ..session_opts(ThinkingLevel::Off)
    };
    let (msg, updates) = run(&m, &c, &off, &CancelToken::new());
    assert_eq!(
        updates[1..].to_vec(),
        vec![
            json!({"type":"thinking_start","contentIndex":0}),
            json!({"type":"thinking_delta","contentIndex":0,"delta":"Need to"}),
            json!({"type":"thinking_delta","contentIndex":0,"delta":" look."}),
            json!({"type":"thinking_end","contentIndex":0,"content":"Need to look."}),
            json!({"type":"text_start","contentIndex":1}),
            json!({"type":"text_delta","contentIndex":1,"delta":"Done."}),
            json!({"type":"text_end","contentIndex":1,"content":"Done."}),
        ]
    );
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(
        normalized(&msg)["content"],
        json!([{"type": "thinking", "thinking": "Need to look."}, {"type": "text", "text": "Done."}])
    );
    let r = &mock.requests()[0];
    // The same model's call keeps its id as is; no caching: no key, no x-affinity.
    assert_eq!(r["headers"].get("x-affinity"), None);
    let body: Value = match &r["body"] {
        Value::String(s) => serde_json::from_str(s).unwrap(),
        v => v.clone(),
    };
    assert_eq!(body.get("prompt_cache_key"), None);
    assert_eq!(body["reasoning_effort"], "none");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "prefix": false, "content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": "Plan."}]},
                {"type": "text", "text": "Running it."}
            ], "tool_calls": [{"id": "call_01|fc_x", "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}, "index": 0}]},
            {"role": "tool", "name": "bash", "content": [{"type": "text", "text": "a\nb"}],
                "tool_call_id": "call_01|fc_x"},
            {"role": "user", "content": [{"type": "text", "text": "again"}]}
        ])
    );
}

#[test]
fn http_errors_are_formatted_like_pi() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 429, "raw_error_body": "  {\"object\":\"error\",\"message\":\"Rate limit exceeded\"}\n"},
        {"status": 503, "raw_error_body": ""}
    ]}));
    let m = model(&mock.base_url());
    let c = ctx(vec![user("hi")]);
    let (msg, updates) = run(&m, &c, &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        normalized(&msg),
        json!({"role":"assistant","content":[],"api":"mistral-conversations","provider":"mistral",
               "model":"mistral-medium-latest","usage": zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage":"Mistral API error (429): {\"object\":\"error\",\"message\":\"Rate limit exceeded\"}",
               "durationMs":0,"thinkingLevel":"high"})
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Mistral API error (503): Service Unavailable")
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
    // No key: nothing is sent.
    let no_key = StreamOptions {
        api_key: None,
        ..opts()
    };
    let (msg, _) = run(&m, &c, &no_key, &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: mistral")
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn stream_ends_without_finish_reason_or_with_invalid_events() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "cut"}], "truncate_without_stop": true},
        {"raw_sse": "data: {\"object\":\"error\",\"message\":\"boom\"}\n\n"},
        {"raw_sse": "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hm\"},\"finish_reason\":\"error\"}]}\n\ndata: [DONE]\n\n"}
    ]}));
    let m = model(&mock.base_url());
    let c = ctx(vec![user("hi")]);
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.content, vec![ContentBlock::text("cut")]);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Mistral stream ended without a finish reason")
    );
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Invalid Mistral streaming event")
    );
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Provider stopped with: error (server error)")
    );
    assert_eq!(msg.raw_stop_reason.as_deref(), Some("error"));
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}

#[test]
fn abort_during_a_hang_returns_promptly() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [{"type": "text", "text": "partial"}],
        "hang": true
    }]}));
    let m = model(&mock.base_url());
    let (msg, took) = run_cancelled_after(&m, &ctx(vec![user("hi")]), &opts(), "text_delta");
    eprintln!("mistral-conversations: cancel → stream_assistant returned in {took:?}");
    let v = normalized(&msg);
    assert_eq!(v["stopReason"], "aborted");
    assert_eq!(v["errorMessage"], "This operation was aborted");
    assert_eq!(v["content"], json!([{"type":"text","text":"partial"}]));
    assert_eq!(v["responseId"], "chatcmpl-mock-0001");
    let cancel = CancelToken::new();
    cancel.cancel();
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &opts(), &cancel);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("This operation was aborted")
    );
}

#[test]
fn connection_refused_is_an_error() {
    let port = closed_port();
    let m = model(&format!("http://127.0.0.1:{port}"));
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(msg.stop_reason, StopReason::Error);
    // pi calls Mistral with plain `fetch` and reports `fetch failed` (checked against pi 1.6.0
    // with a closed port); pi-rpc said `Connection error.: connect ECONNREFUSED …`.
    assert_eq!(msg.error_message.as_deref(), Some("fetch failed"));
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}
