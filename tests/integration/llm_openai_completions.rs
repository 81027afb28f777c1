//! The OpenAI Chat Completions adapter against the scripted server: `stream_assistant` end to
//! end (request sent, events, final message, errors, abort).

use std::time::Duration;

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::model::ModelCost;
use pi_rpc::llm::types::{AssistantMessage, ContentBlock, LlmMessage, StopReason};
use pi_rpc::llm::{Model, ThinkingLevel};
use serde_json::json;

use crate::support::llm::{
    bash_result, closed_port, ctx, normalized, opts, run, run_cancelled_after, user, user_with_png,
    zero_usage,
};
use crate::support::mock_llm::MockLlm;

fn model(base_url: &str) -> Model {
    Model {
        id: "mock-gpt".into(),
        name: "Mock GPT".into(),
        api: "openai-completions".into(),
        provider: "mockoai".into(),
        base_url: format!("{base_url}/v1"),
        reasoning: false,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 2.0,
            output: 8.0,
            cache_read: 0.5,
            cache_write: 0.0,
            tiers: None,
        },
        context_window: 128_000,
        max_tokens: 4096,
        ..Model::default()
    }
}

#[test]
fn text_then_tool_call_stream_matches_observed_order() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [
            {"type": "text", "text": "Running it now.", "chunk_size": 5},
            {"type": "tool_call", "id": "call_oai_01", "name": "bash", "input": {"command": "echo from-openai"}, "chunk_size": 12}
        ],
        "usage": {"input": 300, "output": 25, "cache_read": 100}
    }]}));
    let m = model(&mock.base_url());
    let (msg, updates) = run(
        &m,
        &ctx(vec![user("Run echo via openai")]),
        &opts(),
        &CancelToken::new(),
    );
    let mut start = updates[0]["start"].clone();
    start["timestamp"] = json!(0);
    assert_eq!(
        start,
        json!({"role":"assistant","content":[],"api":"openai-completions","provider":"mockoai","model":"mock-gpt",
               "usage": zero_usage(),"stopReason":"pending","timestamp":0})
    );
    assert_eq!(
        updates[1..].to_vec(),
        vec![
            json!({"type":"text_start","contentIndex":0}),
            json!({"type":"text_delta","contentIndex":0,"delta":"Runni"}),
            json!({"type":"text_delta","contentIndex":0,"delta":"ng it"}),
            json!({"type":"text_delta","contentIndex":0,"delta":" now."}),
            json!({"type":"toolcall_start","contentIndex":1,"id":"call_oai_01","toolName":"bash"}),
            json!({"type":"toolcall_delta","contentIndex":1,"delta":"{\"command\": "}),
            json!({"type":"toolcall_delta","contentIndex":1,"delta":"\"echo from-o"}),
            json!({"type":"toolcall_delta","contentIndex":1,"delta":"penai\"}"}),
            json!({"type":"text_end","contentIndex":0,"content":"Running it now."}),
            json!({"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_oai_01","name":"bash","arguments":{"command":"echo from-openai"}}}),
        ]
    );
    let v = normalized(&msg);
    // Golden (openai_chat.jsonl), compared after parsing: serde_json's default float parsing
    // is not exact, so the cost is checked against the computed values below.
    assert_eq!(
        v["content"],
        json!([{"type":"text","text":"Running it now."},
               {"type":"toolCall","id":"call_oai_01","name":"bash","arguments":{"command":"echo from-openai"}}])
    );
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
            "rawStopReason",
            "durationMs",
            "thinkingLevel"
        ]
    );
    assert_eq!(v["stopReason"], "toolUse");
    assert_eq!(v["rawStopReason"], "tool_calls");
    assert_eq!(v["responseId"], "chatcmpl-mock-0001");
    assert_eq!(v["thinkingLevel"], "off");
    let u = &msg.usage;
    assert_eq!(
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.reasoning,
            u.total_tokens
        ),
        (300, 25, 100, 0, Some(0), 425)
    );
    assert_eq!(u.cost.input, 0.0006);
    assert_eq!(u.cost.output.to_string(), "0.00019999999999999998");
    assert_eq!(u.cost.cache_read.to_string(), "0.000049999999999999996");
    assert_eq!(u.cost.total, 0.00085);
    assert_eq!(u.cost.total_from_provider, Some(false));
    assert!(u.cache_write_1h.is_none());
}

#[test]
fn request_body_with_history_and_images() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "ok"}]}]}));
    let m = model(&mock.base_url());
    let previous = AssistantMessage {
        content: vec![
            ContentBlock::text("Running."),
            ContentBlock::ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo hi"}),
                arguments_error: None,
                thought_signature: None,
            },
        ],
        api: "openai-completions".into(),
        provider: "mockoai".into(),
        model: "mock-gpt".into(),
        stop_reason: StopReason::ToolUse,
        timestamp: 2,
        ..AssistantMessage::default()
    };
    let context = ctx(vec![
        user("hello oai"),
        LlmMessage::Assistant(previous),
        bash_result("call_1", "hi\n"),
        user_with_png("and this?"),
    ]);
    let (msg, _) = run(&m, &context, &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    let reqs = mock.wait_requests(1, Duration::from_secs(5));
    let r = &reqs[0];
    assert_eq!(r["path"], "/v1/chat/completions");
    assert_eq!(r["auth_headers_present"], json!(["authorization"]));
    assert_eq!(r["headers"]["accept"], "application/json");
    assert_eq!(
        r["body"],
        json!({
            "model": "mock-gpt",
            "messages": [
                {"role":"system","content":"You are a test."},
                {"role":"user","content":[{"type":"text","text":"hello oai"}]},
                {"role":"assistant","content":"Running.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo hi\"}"}}]},
                {"role":"tool","content":"hi\n","tool_call_id":"call_1"},
                {"role":"user","content":[{"type":"text","text":"and this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "store": false,
            "max_completion_tokens": 4096,
            "tools": [{"type":"function","function":{"name":"bash","description":"Execute a bash command",
                       "parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}]
        })
    );
}

#[test]
fn reasoning_model_streams_thinking() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [
            {"type": "thinking", "text": "hmm", "openai_field": "reasoning_content"},
            {"type": "text", "text": "ok"}
        ]
    }]}));
    let mut m = model(&mock.base_url());
    m.reasoning = true;
    let mut o = opts();
    o.thinking_level = ThinkingLevel::Medium;
    let (msg, updates) = run(&m, &ctx(vec![user("think")]), &o, &CancelToken::new());
    let types: Vec<&str> = updates[1..]
        .iter()
        .map(|u| u["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "thinking_start",
            "thinking_delta",
            "text_start",
            "text_delta",
            "thinking_end",
            "text_end"
        ]
    );
    let v = normalized(&msg);
    assert_eq!(
        v["content"],
        json!([{"type":"thinking","thinking":"hmm","thinkingSignature":"reasoning_content"},{"type":"text","text":"ok"}])
    );
    assert_eq!(v["thinkingLevel"], "medium");
    let reqs = mock.wait_requests(1, Duration::from_secs(5));
    assert_eq!(reqs[0]["body"]["reasoning_effort"], "medium");
}

#[test]
fn http_errors_are_formatted_like_pi() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 429, "error_type": "rate_limit_error", "error_message": "Rate limited"},
        {"status": 400, "raw_error_body": "not json at all"},
        {"status": 500, "raw_error_body": ""},
        {"status": 429, "error_type": "insufficient_quota", "error_message": "You exceeded your current quota"}
    ]}));
    let m = model(&mock.base_url());
    let c = ctx(vec![user("hi")]);
    let (msg, updates) = run(&m, &c, &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        normalized(&msg),
        json!({"role":"assistant","content":[],"api":"openai-completions","provider":"mockoai","model":"mock-gpt",
               "usage": zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage":"429: {\"message\":\"Rate limited\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":null}",
               "durationMs":0,"thinkingLevel":"off"})
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(msg.error_message.as_deref(), Some("400 not json at all"));
    assert!(!pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("500 status code (no body)")
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert!(!pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}

#[test]
fn stream_without_finish_reason_is_an_error() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "cut"}], "truncate_without_stop": true}
    ]}));
    let m = model(&mock.base_url());
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.content, vec![ContentBlock::text("cut")]);
    eprintln!("truncated → {:?}", msg.error_message);
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
    eprintln!("openai-completions: cancel → stream_assistant returned in {took:?}");
    let v = normalized(&msg);
    assert_eq!(v["stopReason"], "aborted");
    assert_eq!(v["errorMessage"], "Request was aborted");
    assert_eq!(v["content"], json!([{"type":"text","text":"partial"}]));
    assert_eq!(v["responseId"], "chatcmpl-mock-0001");
}

#[test]
fn connection_refused_is_a_retryable_error() {
    let port = closed_port();
    let m = model(&format!("http://127.0.0.1:{port}"));
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        msg.error_message.as_deref(),
        Some(format!("Connection error.: connect ECONNREFUSED 127.0.0.1:{port}").as_str())
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
}
