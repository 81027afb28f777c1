//! The `openai-codex-responses` adapter (openai-codex, the ChatGPT subscription) against the
//! scripted server's Responses stream: the whole request (URL, Codex headers with the account
//! id from the token, body), the events and final message for reasoning, text and tool calls,
//! and the error texts (Codex error events, the usage limit, missing terminal event, abort), as
//! pi 1.6.0's `openai-codex-responses.js` builds them. The request shape was also compared
//! with the reference pi's own request for the same prompt (a custom openai-codex model, SSE
//! transport); there is no conformance golden for it.

use serde_json::{json, Value};

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::types::{StopReason, StreamOptions};
use pi_rpc::llm::{Model, ThinkingLevel};

use crate::support::llm::{bash_result, ctx, normalized, run, run_cancelled_after, user};
use crate::support::mock_llm::MockLlm;

/// A JWT whose payload is `{"https://api.openai.com/auth":{"chatgpt_account_id":"acct_123"}}`.
const TOKEN: &str = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdF8xMjMifX0.c2ln";

fn model(mock: &MockLlm, extra: Value) -> Model {
    let mut m = json!({"id": "codex-test", "name": "Codex", "api": "openai-codex-responses",
        "provider": "openai-codex", "baseUrl": mock.base_url(), "reasoning": true,
        "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 0},
        "contextWindow": 272000, "maxTokens": 32000});
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    serde_json::from_value(m).unwrap()
}

fn opts(level: ThinkingLevel) -> StreamOptions {
    StreamOptions {
        api_key: Some(TOKEN.into()),
        thinking_level: level,
        session_id: Some("sess-1".into()),
        ..StreamOptions::default()
    }
}

#[test]
fn request_and_stream_match_pi() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [
        {"type": "thinking", "text": "Think", "signature": "rs_1"},
        {"type": "text", "text": "Run it"},
        {"type": "tool_call", "id": "call_7", "name": "bash", "input": {"command": "ls"}}],
        "usage": {"input": 20, "output": 5, "cache_read": 4, "cache_write": 0}}]}));
    let m = model(&mock, json!({}));
    let c = ctx(vec![user("hi"), bash_result("call_0|fc_0", "x")]);
    let (msg, updates) = run(&m, &c, &opts(ThinkingLevel::High), &CancelToken::new());
    let requests = mock.requests();
    let req = &requests[0];
    assert_eq!(req["path"], "/codex/responses");
    assert_eq!(req["auth_headers_present"], json!(["authorization"]));
    let h = &req["headers"];
    for (k, v) in [
        ("originator", "pi"),
        ("chatgpt-account-id", "acct_123"),
        ("openai-beta", "responses=experimental"),
        ("accept", "text/event-stream"),
        ("content-type", "application/json"),
        ("session-id", "sess-1"),
        ("x-client-request-id", "sess-1"),
    ] {
        assert_eq!(h[k], v, "{k}");
    }
    assert_eq!(
        req["body"],
        json!({"model": "codex-test", "store": false, "stream": true, "input": [
            {"role": "developer", "content": "You are a test."},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call_output", "call_id": "call_0", "output": "x"}],
            "text": {"verbosity": "low"}, "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "sess-1", "tool_choice": "auto", "parallel_tool_calls": true,
            "max_output_tokens": 32000, "tools": [{"type": "function", "name": "bash",
                "description": "Execute a bash command", "parameters": {"type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"]},
                "strict": null}],
            "reasoning": {"effort": "high", "summary": "auto"}})
    );
    assert_eq!(updates[0]["start"]["content"], json!([]));
    let n = normalized(&msg);
    assert_eq!(n["stopReason"], "toolUse");
    assert_eq!(
        n["content"][1],
        json!({"type": "text", "text": "Run it",
        "textSignature": n["content"][1]["textSignature"].clone()})
    );
    assert_eq!(n["content"][2]["arguments"], json!({"command": "ls"}));
    assert_eq!(n["content"][0]["type"], "thinking");
    assert_eq!(n["usage"]["input"], 20);
    assert_eq!(n["usage"]["cacheRead"], 4);
    assert_eq!(n["responseId"], "resp_mock_0001");
    assert_eq!(n["api"], "openai-codex-responses");
}

#[test]
fn reasoning_at_off_and_mapped_levels() {
    let mock = MockLlm::start(json!({"default": {"blocks": [{"type": "text", "text": "k"}]}}));
    let body = |extra: Value, level: ThinkingLevel| {
        let m = model(&mock, extra);
        let (msg, _) = run(
            &m,
            &ctx(vec![user("hi")]),
            &opts(level),
            &CancelToken::new(),
        );
        assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
        mock.requests().last().unwrap()["body"].clone()
    };
    let b = body(json!({}), ThinkingLevel::Off);
    assert_eq!(b["reasoning"], json!({"effort": "none", "summary": "auto"}));
    let b = body(
        json!({"thinkingLevelMap": {"off": null}}),
        ThinkingLevel::Off,
    );
    assert!(b.get("reasoning").is_none());
    let b = body(
        json!({"thinkingLevelMap": {"minimal": "low"}}),
        ThinkingLevel::Minimal,
    );
    assert_eq!(b["reasoning"], json!({"effort": "low", "summary": "auto"}));
    let b = body(json!({"reasoning": false}), ThinkingLevel::High);
    assert!(b.get("reasoning").is_none());
    // No session id with caching off.
    let m = model(&mock, json!({}));
    let o = StreamOptions {
        cache_retention: pi_rpc::llm::types::CacheRetention::None,
        ..opts(ThinkingLevel::Off)
    };
    run(&m, &ctx(vec![user("hi")]), &o, &CancelToken::new());
    let last = mock.requests().last().unwrap().clone();
    assert!(last["body"].get("prompt_cache_key").is_none());
    assert!(last["headers"].get("session-id").is_none());
}

#[test]
fn response_done_and_incomplete_are_terminal() {
    let done = json!({"type": "response.done", "response": {"id": "resp_x", "status": "weird",
        "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}});
    let mock = MockLlm::start(json!({"replies": [
        {"raw_sse": format!("data: {done}\n\n")},
        {"blocks": [{"type": "text", "text": "cut"}], "stop_reason": "max_tokens"}]}));
    let m = model(&mock, json!({}));
    let (msg, _) = run(
        &m,
        &ctx(vec![user("hi")]),
        &opts(ThinkingLevel::Off),
        &CancelToken::new(),
    );
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.response_id.as_deref(), Some("resp_x"));
    assert_eq!(msg.usage.total_tokens, 4);
    let (msg, _) = run(
        &m,
        &ctx(vec![user("hi")]),
        &opts(ThinkingLevel::Off),
        &CancelToken::new(),
    );
    assert_eq!(msg.stop_reason, StopReason::Length);
}

#[test]
fn error_texts_match_pi() {
    let resets = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let limit = json!({"error": {"code": "usage_limit_reached", "message": "limit",
        "plan_type": "PLUS", "resets_at": resets}});
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "a"}], "stream_error": {"type": "server_error",
            "message": "Overloaded now"}},
        {"status": 429, "raw_error_body": limit.to_string(), "content_type": "application/json"},
        {"status": 500, "raw_error_body": "{\"error\":{\"message\":\"boom\"}}"},
        {"status": 503, "raw_error_body": ""},
        {"raw_sse": "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"x\"}}}\n\n"},
        {"blocks": [{"type": "text", "text": "a"}], "truncate_without_stop": true},
        {"raw_sse": "data: {oops\n\n"}]}));
    let m = model(&mock, json!({}));
    let mut texts = Vec::new();
    for _ in 0..7 {
        let (msg, _) = run(
            &m,
            &ctx(vec![user("hi")]),
            &opts(ThinkingLevel::Off),
            &CancelToken::new(),
        );
        assert_eq!(msg.stop_reason, StopReason::Error);
        texts.push(msg.error_message.unwrap_or_default());
    }
    assert_eq!(texts[0], "Codex error: Overloaded now");
    assert!(
        texts[1] == "You have hit your ChatGPT usage limit (plus plan). Try again in ~10 min."
            || texts[1]
                == "You have hit your ChatGPT usage limit (plus plan). Try again in ~9 min.",
        "{}",
        texts[1]
    );
    assert_eq!(texts[2], "boom");
    assert_eq!(texts[3], "Service Unavailable");
    assert_eq!(texts[4], "Codex response failed");
    assert_eq!(
        texts[5],
        "OpenAI Responses stream ended before a terminal response event"
    );
    assert_eq!(
        texts[6],
        "Invalid Codex SSE JSON: Expected property name or '}' in JSON at position 1 (line 1 column 2)"
    );
}

#[test]
fn abort_and_credential_failures() {
    let mock = MockLlm::start(
        json!({"replies": [{"blocks": [{"type": "text", "text": "Hi"}],
        "hang": true}]}),
    );
    let m = model(&mock, json!({}));
    let c = ctx(vec![user("hi")]);
    let (msg, _) = run_cancelled_after(&m, &c, &opts(ThinkingLevel::Off), "text_end");
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert_eq!(msg.error_message.as_deref(), Some("Request was aborted"));
    assert_eq!(msg.content.len(), 1, "the streamed text stays");
    let bad = StreamOptions {
        api_key: Some("sk-not-a-jwt".into()),
        ..opts(ThinkingLevel::Off)
    };
    let (msg, _) = run(&m, &c, &bad, &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Failed to extract accountId from token")
    );
    let none = StreamOptions {
        api_key: None,
        ..opts(ThinkingLevel::Off)
    };
    let (msg, _) = run(&m, &c, &none, &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: openai-codex")
    );
    assert_eq!(mock.requests().len(), 1);
    let port = crate::support::llm::closed_port();
    let mut refused = m.clone();
    refused.base_url = format!("http://127.0.0.1:{port}");
    let (msg, _) = run(&refused, &c, &opts(ThinkingLevel::Off), &CancelToken::new());
    assert_eq!(
        msg.error_message,
        Some(format!(
            "fetch failed: connect ECONNREFUSED 127.0.0.1:{port}"
        ))
    );
}

#[test]
fn catalog_compat_declares_tools_in_the_input_and_sends_the_effort_as_an_update() {
    let mock = MockLlm::start(json!({"default": {"blocks": [{"type": "text", "text": "k"}]}}));
    // gpt-5.6-luna's compat: tools as an `additional_tools` item, no top-level `tools`.
    let compat = json!({"supportsOpenAIGrammarTools": true, "supportsAdditionalTools": true,
        "supportsToolSearch": true, "supportsMidConvoSystemMessages": true});
    let m = model(&mock, json!({"compat": compat}));
    run(
        &m,
        &ctx(vec![user("hi")]),
        &opts(ThinkingLevel::High),
        &CancelToken::new(),
    );
    let body = mock.requests()[0]["body"].clone();
    assert!(body.get("tools").is_none());
    assert_eq!(
        body["input"],
        json!([{"type": "additional_tools", "role": "developer", "tools": [{"type": "function",
                "name": "bash", "description": "Execute a bash command", "parameters":
                {"type": "object", "properties": {"command": {"type": "string"}},
                "required": ["command"]}, "strict": null}]},
            {"role": "developer", "content": "You are a test."},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
    );
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    // gpt-6-luna adds supportsMidConvoEffort: effort `medium` + a trailing update item.
    let mut compat = compat;
    compat["supportsMidConvoEffort"] = json!(true);
    let m = model(
        &mock,
        json!({"compat": compat, "thinkingLevelMap": {"off": "none", "minimal": "low"}}),
    );
    for (level, effort) in [(ThinkingLevel::High, "high"), (ThinkingLevel::Off, "none")] {
        run(
            &m,
            &ctx(vec![user("hi")]),
            &opts(level),
            &CancelToken::new(),
        );
        let body = mock.requests().last().unwrap()["body"].clone();
        assert_eq!(
            body["reasoning"],
            json!({"effort": "medium", "summary": "auto"})
        );
        assert_eq!(
            body["input"].as_array().unwrap().last().unwrap(),
            &json!({"type": "configuration_update", "reasoning": {"effort": effort}})
        );
    }
}

/// pi records the mid-conversation effort on each reply (`providerThinkingLevel`) and replays
/// it as a `configuration_update` item before that reply in later requests; pi-rpc sent only
/// the trailing one, so a conversation whose level changed lost its history of efforts.
#[test]
fn earlier_turns_replay_their_configuration_update() {
    let mock = MockLlm::start(json!({"default": {"blocks": [{"type": "text", "text": "k"}]}}));
    let compat = json!({"supportsAdditionalTools": true, "supportsMidConvoSystemMessages": true,
        "supportsMidConvoEffort": true});
    let m = model(
        &mock,
        json!({"compat": compat, "thinkingLevelMap": {"off": "none", "minimal": "low"}}),
    );
    let (first, _) = run(
        &m,
        &ctx(vec![user("hi")]),
        &opts(ThinkingLevel::High),
        &CancelToken::new(),
    );
    assert_eq!(first.provider_thinking_level.as_deref(), Some("high"));
    let first_json = first.to_value();
    let keys: Vec<&str> = first_json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        &keys[..6],
        [
            "role",
            "content",
            "api",
            "provider",
            "model",
            "providerThinkingLevel"
        ],
        "pi writes providerThinkingLevel right after model: {first_json}"
    );
    let history = vec![
        user("hi"),
        pi_rpc::llm::types::LlmMessage::Assistant(first),
        user("again"),
    ];
    let (second, _) = run(
        &m,
        &ctx(history),
        &opts(ThinkingLevel::Low),
        &CancelToken::new(),
    );
    assert_eq!(second.provider_thinking_level.as_deref(), Some("low"));
    let body = mock.requests().last().unwrap()["body"].clone();
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<Value> = input[2..]
        .iter()
        .map(|i| i.get("type").cloned().unwrap_or_else(|| i["role"].clone()))
        .collect();
    assert_eq!(
        kinds,
        json!([
            "user",
            "configuration_update",
            "message",
            "user",
            "configuration_update"
        ])
        .as_array()
        .unwrap()
        .clone(),
        "{input:#?}"
    );
    assert_eq!(
        input[3],
        json!({"type": "configuration_update", "reasoning": {"effort": "high"}})
    );
    assert_eq!(
        input.last().unwrap(),
        &json!({"type": "configuration_update", "reasoning": {"effort": "low"}})
    );
}
