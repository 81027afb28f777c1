//! The `openai-responses` adapter against the scripted LLM server: whole final messages, the
//! reported events and the request body, each compared with what pi 1.6.0's own adapter
//! (`@earendil-works/pi-ai`) produced for the same script and conversation (captured against
//! this mock; pi's `toolcall_start` carries no `id` / `toolName`, so those are not compared).
//! Also home of [`run`], the capture runner the Google tests share.

use std::time::Duration;

use serde_json::{json, Value};

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::convert::build_llm_context;
use pi_rpc::llm::errors::is_retryable;
use pi_rpc::llm::stream::StreamUpdate;
use pi_rpc::llm::thinking::clamp_level;
use pi_rpc::llm::types::{AssistantMessage, CacheRetention, StopReason, StreamOptions};
use pi_rpc::llm::wire::stream_assistant;
use pi_rpc::llm::{Model, ThinkingLevel};

use crate::support::mock_llm::MockLlm;

/// One adapter run against the mock.
pub(crate) struct Run {
    pub msg: AssistantMessage,
    /// Wire events (`{"type":"start"}` for the start), in order.
    pub events: Vec<Value>,
    /// The mock's request log.
    pub requests: Vec<Value>,
}

/// Runs one capture spec through `stream_assistant`: `{api, urlSuffix, model, systemPrompt?,
/// tools?, messages, options, abortAfterMs?, mock}` (the shape the pi capture script took; the
/// conversation goes through `build_llm_context` as the agent's does). The model gets pi's
/// `models.json` defaults and the mock's URL; the conversation starts with the system message
/// holding the prompt and tools; `options.reasoning` is the thinking level (absent = off),
/// `options.sessionId` / `options.cacheRetention` as in pi.
pub(crate) fn run(spec: &str) -> Run {
    let spec: Value = serde_json::from_str(spec).expect("spec JSON");
    let mock = MockLlm::start(spec["mock"].clone());
    let api = spec["api"].as_str().expect("api");
    assert!(
        matches!(api, "openai-responses" | "google-generative-ai"),
        "{api}"
    );
    let mut model_json = json!({"name": spec["model"]["id"], "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 16384, "reasoning": false});
    for (k, v) in spec["model"].as_object().expect("model") {
        model_json[k] = v.clone();
    }
    model_json["api"] = json!(api);
    model_json["baseUrl"] = json!(format!(
        "{}{}",
        mock.base_url(),
        spec["urlSuffix"].as_str().unwrap_or("")
    ));
    let model: Model = serde_json::from_value(model_json).expect("model");
    let mut messages = Vec::new();
    if spec.get("systemPrompt").is_some() || spec.get("tools").is_some() {
        let mut system = json!({"role": "system",
            "content": spec["systemPrompt"].as_str().unwrap_or(""), "timestamp": 0});
        if let Some(tools) = spec.get("tools") {
            system["toolsAdded"] = tools.clone();
        }
        messages.push(system);
    }
    messages.extend(
        spec["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .cloned(),
    );
    let ctx = build_llm_context(&messages, &model);
    let o = &spec["options"];
    let opts = StreamOptions {
        api_key: Some("test-key".into()),
        thinking_level: o["reasoning"]
            .as_str()
            .and_then(ThinkingLevel::parse)
            .unwrap_or(ThinkingLevel::Off),
        session_id: o["sessionId"].as_str().map(str::to_owned),
        cache_retention: match o["cacheRetention"].as_str() {
            Some("long") => CacheRetention::Long,
            Some("none") => CacheRetention::None,
            _ => CacheRetention::Short,
        },
        idle_timeout: Duration::from_secs(20),
        ..StreamOptions::default()
    };
    let cancel = CancelToken::new();
    if let Some(ms) = spec["abortAfterMs"].as_u64() {
        let c = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            c.cancel();
        });
    }
    let mut events = Vec::new();
    let mut on_event = |u: StreamUpdate<'_>| match u {
        StreamUpdate::Start(_) => events.push(json!({"type": "start"})),
        StreamUpdate::Event(_, e) => events.push(e.to_wire()),
    };
    let msg = stream_assistant(&model, &ctx, &opts, &cancel, &mut on_event);
    assert!(
        msg.duration_ms.is_some(),
        "durationMs set by the dispatcher"
    );
    assert_eq!(
        msg.thinking_level,
        Some(clamp_level(&model, opts.thinking_level)),
        "thinkingLevel"
    );
    Run {
        msg,
        events,
        requests: mock.requests(),
    }
}

/// Replaces generated Google tool-call ids (`<name>_<13-digit ms>_<n>`) in JSON text with
/// `<name>_<generated>`.
fn normalize_generated_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('_') {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        let digits = |s: &str| s.chars().take_while(char::is_ascii_digit).count();
        let ms = digits(&tail[1..]);
        let after_ms = &tail[1 + ms..];
        if ms == 13 && after_ms.starts_with('_') && digits(&after_ms[1..]) > 0 {
            let n = digits(&after_ms[1..]);
            out.push_str("_<generated>");
            rest = &after_ms[1 + n..];
        } else {
            out.push('_');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

fn canonical(v: Value) -> String {
    normalize_generated_ids(&serde_json::to_string(&v).expect("serialize"))
}

/// The final message equals pi's, compared as JSON text (key order and JavaScript number
/// formatting included), without `timestamp` / `durationMs` (and `thinkingLevel`, which the
/// dispatcher adds).
pub(crate) fn assert_final(r: &Run, want: &str) {
    let mut got = r.msg.to_value();
    if let Some(o) = got.as_object_mut() {
        for k in ["timestamp", "durationMs", "thinkingLevel"] {
            o.shift_remove(k);
        }
    }
    assert_eq!(
        canonical(got),
        normalize_generated_ids(want),
        "final message"
    );
}

/// The one request's body equals pi's, key order included.
pub(crate) fn assert_body(r: &Run, want: &str) {
    assert_eq!(r.requests.len(), 1, "{:?}", r.requests);
    let want: Value = serde_json::from_str(want).expect("golden JSON");
    assert_eq!(
        canonical(r.requests[0]["body"].clone()),
        canonical(want),
        "request body"
    );
}

/// The reported events equal pi's. Our `toolcall_start` also carries `id` / `toolName`.
pub(crate) fn assert_events(r: &Run, want: &str) {
    let got: Vec<Value> = r
        .events
        .iter()
        .cloned()
        .map(|mut e| {
            if e["type"] == "toolcall_start" {
                if let Some(o) = e.as_object_mut() {
                    o.shift_remove("id");
                    o.shift_remove("toolName");
                }
            }
            e
        })
        .collect();
    let want: Value = serde_json::from_str(want).expect("golden JSON");
    assert_eq!(canonical(Value::Array(got)), canonical(want), "events");
}

/// Reasoning summary, streamed text and a streamed tool call; usage with cached and reasoning tokens; developer role, tools, reasoning and prompt cache key in the request. (pi 1.6.0 capture `s1`)
#[test]
fn reasoning_text_and_tool_call_match_pi() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"You are helpful.","tools":[{"name":"bash","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium","sessionId":"sess-1"},"mock":{"replies":[{"blocks":[{"type":"thinking","text":"Let me think.","signature":"ENC123","chunk_size":5},{"type":"text","text":"Running it.","chunk_size":4},{"type":"tool_call","id":"call_1","name":"bash","input":{"command":"echo hi"},"chunk_size":7}],"usage":{"input":100,"output":20,"cache_read":30,"reasoning":5}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Let me think.","thinkingSignature":"{\"id\":\"rs_mock_0\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Let me think.\"}],\"encrypted_content\":\"ENC123\"}"},{"type":"text","text":"Running it.","textSignature":"{\"v\":1,\"id\":\"msg_mock_1\"}"},{"type":"toolCall","id":"call_1|fc_mock_2","name":"bash","arguments":{"command":"echo hi"}}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":100,"output":20,"cacheRead":30,"cacheWrite":0,"reasoning":5,"totalTokens":150,"cost":{"input":0.00019999999999999998,"output":0.00015999999999999999,"cacheRead":0.000014999999999999999,"cacheWrite":0,"total":0.00037499999999999995,"totalFromProvider":false}},"stopReason":"toolUse","responseId":"resp_mock_0001","rawStopReason":"completed"}"#,
    );
    assert_body(
        &r,
        r#"{"model":"mock-gpt","input":[{"role":"developer","content":"You are helpful."},{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true,"prompt_cache_key":"sess-1","store":false,"max_output_tokens":16384,"tools":[{"type":"function","name":"bash","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}],"reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"]}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"thinking_start","contentIndex":0},{"type":"thinking_delta","contentIndex":0,"delta":"Let m"},{"type":"thinking_delta","contentIndex":0,"delta":"e thi"},{"type":"thinking_delta","contentIndex":0,"delta":"nk."},{"type":"thinking_delta","contentIndex":0,"delta":"\n\n"},{"type":"thinking_end","contentIndex":0,"content":"Let me think."},{"type":"text_start","contentIndex":1},{"type":"text_delta","contentIndex":1,"delta":"Runn"},{"type":"text_delta","contentIndex":1,"delta":"ing "},{"type":"text_delta","contentIndex":1,"delta":"it."},{"type":"text_end","contentIndex":1,"content":"Running it."},{"type":"toolcall_start","contentIndex":2},{"type":"toolcall_delta","contentIndex":2,"delta":"{\"comma"},{"type":"toolcall_delta","contentIndex":2,"delta":"nd\": \"e"},{"type":"toolcall_delta","contentIndex":2,"delta":"cho hi\""},{"type":"toolcall_delta","contentIndex":2,"delta":"}"},{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"call_1|fc_mock_2","name":"bash","arguments":{"command":"echo hi"}}}]"#,
    );
}

/// History replay: reasoning items from thinkingSignature, message ids from textSignature (or msg_pi_<n>), function_call ids split, another model's turn, placeholders for images, an aborted turn dropped, an orphaned call answered. (pi 1.6.0 capture `r2`)
#[test]
fn history_replay_request_matches_pi() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":false,"input":["text"],"maxTokens":4096,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1},{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm.","thinkingSignature":"{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Hmm.\"}],\"encrypted_content\":\"E1\"}"},{"type":"text","text":"Listing.","textSignature":"{\"v\":1,\"id\":\"msg_1\"}"},{"type":"text","text":"Second."},{"type":"toolCall","id":"call_1|fc_1","name":"bash","arguments":{"command":"ls"}}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2},{"role":"toolResult","toolCallId":"call_1|fc_1","toolName":"bash","content":[{"type":"text","text":"file.txt\n"}],"isError":false,"timestamp":3},{"role":"assistant","content":[{"type":"thinking","thinking":"other model thought","thinkingSignature":"sig"},{"type":"text","text":"Checking."},{"type":"toolCall","id":"toolu_01","name":"read","arguments":{"path":"a.png"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":4},{"role":"toolResult","toolCallId":"toolu_01","toolName":"read","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":false,"timestamp":5},{"role":"assistant","content":[{"type":"text","text":"partial"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","errorMessage":"Request was aborted","timestamp":6},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"BBBB","mimeType":"image/jpeg"}],"timestamp":7},{"role":"assistant","content":[{"type":"toolCall","id":"call_9|fc_9","name":"bash","arguments":{}}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt-old","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":8},{"role":"user","content":[{"type":"text","text":"next"}],"timestamp":9}],"options":{"reasoning":"high"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Done."}],"usage":{"input":50,"output":3}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Done.","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":50,"output":3,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":53,"cost":{"input":0.00009999999999999999,"output":0.000024,"cacheRead":0,"cacheWrite":0,"total":0.00012399999999999998,"totalFromProvider":false}},"stopReason":"stop","responseId":"resp_mock_0001","rawStopReason":"completed"}"#,
    );
    assert_body(
        &r,
        r#"{"model":"mock-gpt","input":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Hmm."}],"encrypted_content":"E1"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing.","annotations":[]}],"status":"completed","id":"msg_1"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Second.","annotations":[]}],"status":"completed","id":"msg_pi_1_1"},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"},{"type":"function_call_output","call_id":"call_1","output":"file.txt\n"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[]}],"status":"completed","id":"msg_pi_3"},{"type":"function_call","call_id":"toolu_01","name":"read","arguments":"{\"path\":\"a.png\"}"},{"type":"function_call_output","call_id":"toolu_01","output":"(tool image omitted: model does not support images)"},{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_text","text":"(image omitted: model does not support images)"}]},{"type":"function_call","call_id":"call_9_fc_9","name":"bash","arguments":"{}"},{"type":"function_call_output","call_id":"call_9_fc_9","output":"No result provided"},{"role":"user","content":[{"type":"input_text","text":"next"}]}],"stream":true,"store":false,"max_output_tokens":4096}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Done."},{"type":"text_end","contentIndex":0,"content":"Done."}]"#,
    );
}

/// HTTP 429 with a JSON error body: pi's `<provider> API error (<status>): <error JSON>`, no start event. (pi 1.6.0 capture `r3`)
#[test]
fn http_error_json_body() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"status":429}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"mockoai API error (429): {\"message\":\"Rate limited\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":null}"}"#,
    );
    assert_events(&r, r#"[]"#);
}

/// HTTP 500 with a text body. (pi 1.6.0 capture `r3b`)
#[test]
fn http_error_text_body() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"status":500,"raw_error_body":"upstream exploded","content_type":"text/plain"}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"mockoai API error (500): 500 upstream exploded"}"#,
    );
    assert_events(&r, r#"[]"#);
}

/// An `event: error` after streamed text: the SDK's message, content kept. (pi 1.6.0 capture `r4`)
#[test]
fn sse_error_event_keeps_streamed_content() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hel"}],"stream_error":{"type":"overloaded_error","message":"Overloaded"}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hel","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","responseId":"resp_mock_0001","errorMessage":"Overloaded"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hel"},{"type":"text_end","contentIndex":0,"content":"Hel"}]"#,
    );
}

/// The stream ends cleanly without a terminal event. (pi 1.6.0 capture `r5`)
#[test]
fn missing_terminal_event() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hel"}],"truncate_without_stop":true}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hel","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","responseId":"resp_mock_0001","errorMessage":"OpenAI Responses stream ended before a terminal response event"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hel"},{"type":"text_end","contentIndex":0,"content":"Hel"}]"#,
    );
}

/// `response.incomplete` for max_output_tokens: stop reason length. (pi 1.6.0 capture `r6`)
#[test]
fn max_output_tokens_is_length() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Long"}],"stop_reason":"max_tokens","usage":{"input":10,"output":4}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Long","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":10,"output":4,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":14,"cost":{"input":0.000019999999999999998,"output":0.000032,"cacheRead":0,"cacheWrite":0,"total":0.000052,"totalFromProvider":false}},"stopReason":"length","responseId":"resp_mock_0001","rawStopReason":"incomplete.max_output_tokens"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Long"},{"type":"text_end","contentIndex":0,"content":"Long"}]"#,
    );
}

/// Thinking off with `thinkingLevelMap.off`, supportsDeveloperRole false, strict tools, long cache retention, session headers. (pi 1.6.0 capture `r7`)
#[test]
fn thinking_off_strict_tools_long_retention() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"compat":{"supportsDeveloperRole":false,"supportsStrictMode":true},"thinkingLevelMap":{"off":"minimal"},"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"sessionId":"abc","cacheRetention":"long"},"mock":{"replies":[{"blocks":[{"type":"text","text":"ok"}]}]},"tools":[{"name":"t","description":"d","parameters":{"type":"object"}}]}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"ok","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"stop","responseId":"resp_mock_0001","rawStopReason":"completed"}"#,
    );
    assert_body(
        &r,
        r#"{"model":"mock-gpt","input":[{"role":"system","content":"S."},{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true,"prompt_cache_key":"abc","prompt_cache_retention":"24h","store":false,"max_output_tokens":16384,"tools":[{"type":"function","name":"t","description":"d","parameters":{"type":"object"},"strict":false}],"reasoning":{"effort":"minimal"}}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"ok"},{"type":"text_end","contentIndex":0,"content":"ok"}]"#,
    );
}

/// A mapped xhigh effort; cache retention none sends no cache key and no session headers. (pi 1.6.0 capture `r8`)
#[test]
fn mapped_xhigh_effort_without_cache_key() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"thinkingLevelMap":{"off":null,"xhigh":"max-ish"},"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"xhigh","sessionId":"abc","cacheRetention":"none"},"mock":{"replies":[{"blocks":[{"type":"text","text":"ok"}]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"ok","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"stop","responseId":"resp_mock_0001","rawStopReason":"completed"}"#,
    );
    assert_body(
        &r,
        r#"{"model":"mock-gpt","input":[{"role":"developer","content":"S."},{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true,"store":false,"max_output_tokens":16384,"reasoning":{"effort":"max-ish","summary":"auto"},"include":["reasoning.encrypted_content"]}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"ok"},{"type":"text_end","contentIndex":0,"content":"ok"}]"#,
    );
}

/// `response.failed` with an error object. (pi 1.6.0 capture `r9`)
#[test]
fn response_failed() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"raw_sse":["event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_x\",\"status\":\"in_progress\"}}\n\n","event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_x\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n"]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","responseId":"resp_x","rawStopReason":"failed","errorMessage":"server_error: boom"}"#,
    );
    assert_events(&r, r#"[{"type":"start"}]"#);
}

/// An error payload without `event: error` reaches pi's own handler. (pi 1.6.0 capture `r10`)
#[test]
fn unnamed_error_payload() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"raw_sse":["data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_y\"}}\n\n","data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n"]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","responseId":"resp_y","errorMessage":"Error Code rate_limit_exceeded: slow down"}"#,
    );
    assert_events(&r, r#"[{"type":"start"}]"#);
}

/// The mock's refusal maps to incomplete/max_output_tokens. (pi 1.6.0 capture `r11`)
#[test]
fn refusal_stop_is_length() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai","reasoning":true,"cost":{"input":2,"output":8,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hi"}],"stop_reason":"refusal"}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hi","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockoai","model":"mock-gpt","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":15,"cost":{"input":0.000019999999999999998,"output":0.000039999999999999996,"cacheRead":0,"cacheWrite":0,"total":0.000059999999999999995,"totalFromProvider":false}},"stopReason":"length","responseId":"resp_mock_0001","rawStopReason":"incomplete.max_output_tokens"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hi"},{"type":"text_end","contentIndex":0,"content":"Hi"}]"#,
    );
}

/// Abort while the body streams, before any terminal event. (pi 1.6.0 capture `ra1`)
#[test]
fn abort_mid_stream() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockx","reasoning":false},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"abortAfterMs":500,"mock":{"replies":[{"blocks":[{"type":"text","text":"Hello"}],"hang":true}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hello","textSignature":"{\"v\":1,\"id\":\"msg_mock_0\"}"}],"api":"openai-responses","provider":"mockx","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","responseId":"resp_mock_0001","errorMessage":"OpenAI Responses stream ended before a terminal response event"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hello"},{"type":"text_end","contentIndex":0,"content":"Hello"}]"#,
    );
}

/// Abort while waiting for the response headers. (pi 1.6.0 capture `ra2`)
#[test]
fn abort_before_response() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockx","reasoning":false},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"abortAfterMs":300,"mock":{"replies":[{"first_delay_ms":2000,"blocks":[{"type":"text","text":"x"}]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"openai-responses","provider":"mockx","model":"mock-gpt","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","errorMessage":"Request aborted"}"#,
    );
    assert_events(&r, r#"[]"#);
}
/// The request line and headers of the s1 capture: path, bearer key (redacted by the mock),
/// JSON content type and pi's session-affinity headers.
#[test]
fn request_path_and_headers() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockoai"},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"sessionId":"sess-1"},"mock":{"replies":[{"blocks":[{"type":"text","text":"ok"}]}]}}"#,
    );
    let req = &r.requests[0];
    assert_eq!(req["path"], "/v1/responses");
    assert_eq!(req["api"], "openai-responses");
    assert_eq!(req["auth_headers_present"], json!(["authorization"]));
    let h = &req["headers"];
    assert_eq!(h["content-type"], "application/json");
    assert_eq!(h["accept"], "application/json");
    assert_eq!(h["session-id"], "sess-1");
    assert_eq!(h["x-client-request-id"], "sess-1");
    assert_eq!(r.msg.text(), "ok");
}

/// No key and no authorization header: an error before any request.
#[test]
fn missing_api_key_sends_nothing() {
    let mock = MockLlm::start(json!({"replies": []}));
    let model: Model = serde_json::from_value(json!({"id": "m", "api": "openai-responses",
        "provider": "nokey", "baseUrl": mock.base_url()}))
    .unwrap();
    let ctx = build_llm_context(
        &[json!({"role": "user", "content": "hi", "timestamp": 1})],
        &model,
    );
    let mut events = 0;
    let msg = stream_assistant(
        &model,
        &ctx,
        &StreamOptions::default(),
        &CancelToken::new(),
        &mut |_| events += 1,
    );
    assert_eq!(events, 0);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: nokey")
    );
    assert!(mock.requests().is_empty());
}

/// A connection dropped mid-body is a retryable error that keeps the streamed content. (pi on
/// node 20 reads it as a clean end and reports the missing terminal event; ours names the
/// transport failure. Both are retried.)
#[test]
fn dropped_connection_is_a_retryable_error() {
    let r = run(
        r#"{"api":"openai-responses","urlSuffix":"/v1","model":{"id":"mock-gpt","provider":"mockx"},"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hello"}],"disconnect":true}]}}"#,
    );
    assert_eq!(r.msg.stop_reason, StopReason::Error);
    assert_eq!(r.msg.text(), "Hello");
    assert!(is_retryable(&r.msg, 128_000), "{:?}", r.msg.error_message);
}
