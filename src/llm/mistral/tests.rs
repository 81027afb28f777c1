//! Unit tests of the Mistral adapter: ids, messages, body, headers, stream events, errors.

use super::request::derive_tool_call_id;
use super::*;
use crate::llm::sse::SseParser;
use crate::llm::stream::StreamUpdate;
use crate::llm::types::AssistantMessage;

fn model() -> Model {
    Model {
        id: "mistral-medium-latest".into(),
        name: "Mistral Medium".into(),
        api: "mistral-conversations".into(),
        provider: "mistral".into(),
        base_url: "https://api.mistral.ai".into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        context_window: 262_144,
        max_tokens: 262_144,
        thinking_level_map: json!({"off": "none", "minimal": null, "low": null, "medium": null})
            .as_object()
            .cloned(),
        ..Model::default()
    }
}

fn user(text: &str) -> LlmMessage {
    LlmMessage::User {
        content: vec![ContentBlock::text(text)],
        timestamp: 1,
        as_string: false,
    }
}

fn assistant(provider: &str, content: Vec<ContentBlock>) -> LlmMessage {
    LlmMessage::Assistant(AssistantMessage {
        provider: provider.into(),
        api: if provider == "mistral" {
            "mistral-conversations".into()
        } else {
            "anthropic-messages".into()
        },
        model: if provider == "mistral" {
            "mistral-medium-latest".into()
        } else {
            "claude".into()
        },
        content,
        ..AssistantMessage::default()
    })
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
        arguments_error: None,
        thought_signature: None,
    }
}

fn result(id: &str, content: Vec<ContentBlock>, is_error: bool) -> LlmMessage {
    LlmMessage::ToolResult {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content,
        is_error,
    }
}

fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run".into(),
        parameters: json!({"type": "object", "required": ["command"],
            "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}}),
        strict_prefer: true,
    }
}

#[test]
fn tool_call_ids_match_pi() {
    // Values printed by pi's `deriveMistralToolCallId` under node.
    for (id, first, second) in [
        ("call_abc|fc_123", "18g6kob34", "h04n81i8r"),
        ("toolu_01ABCDEF", "1co7q4164", "16ejgis1i"),
        ("a1B2c3D4e", "a1B2c3D4e", "uycwvgrxs"),
        ("a1-B2c3D4e", "a1B2c3D4e", "uycwvgrxs"),
        ("toolcall:0", "toolcall0", "1t6qern11"),
        ("é🙈", "5q56rm1x7", "1kfy0t1yh"),
    ] {
        assert_eq!(derive_tool_call_id(id, 0), first, "{id}");
        assert_eq!(derive_tool_call_id(id, 1), second, "{id}");
    }
}

#[test]
fn body_matches_pi() {
    let ctx = LlmContext {
        system_prompt: "S.".into(),
        messages: vec![
            user("Run"),
            assistant(
                "mistral",
                vec![
                    ContentBlock::Thinking {
                        thinking: "hmm".into(),
                        thinking_signature: None,
                        redacted: false,
                    },
                    ContentBlock::text("  "),
                    ContentBlock::text("Running it."),
                    call("a1B2c3D4e"),
                ],
            ),
            result("a1B2c3D4e", vec![ContentBlock::text("out\n")], false),
            // Another provider's call: its id is mapped, and its result's with it.
            assistant("anthropic", vec![call("toolu_01ABCDEF")]),
            result(
                "toolu_01ABCDEF",
                vec![ContentBlock::Image {
                    data: "AAA".into(),
                    mime_type: "image/png".into(),
                }],
                true,
            ),
            assistant("mistral", vec![ContentBlock::text(" ")]),
            LlmMessage::User {
                content: vec![ContentBlock::text("plain")],
                timestamp: 2,
                as_string: true,
            },
        ],
        tools: vec![bash_tool()],
        transcript: None,
        leading_system: None,
    };
    let opts = StreamOptions {
        session_id: Some("sess-1".into()),
        thinking_level: ThinkingLevel::Medium,
        ..StreamOptions::default()
    };
    let body = build_body(&model(), &ctx, &opts, 1000);
    assert_eq!(
        js_stringify(&body),
        js_stringify(&json!({
            "model": "mistral-medium-latest",
            "stream": true,
            "messages": [
                {"role": "system", "content": "S."},
                {"role": "user", "content": [{"type": "text", "text": "Run"}]},
                {"role": "assistant", "prefix": false, "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                    {"type": "text", "text": "Running it."}
                ], "tool_calls": [{"id": "a1B2c3D4e", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}, "index": 0}]},
                {"role": "tool", "name": "bash", "content": [{"type": "text", "text": "out"}],
                    "tool_call_id": "a1B2c3D4e"},
                {"role": "assistant", "prefix": false, "tool_calls": [{"id": "1co7q4164",
                    "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"},
                    "index": 0}]},
                {"role": "tool", "name": "bash", "content": [
                    {"type": "text", "text": "[tool error] (see attached image)"},
                    {"type": "image_url", "image_url": "data:image/png;base64,AAA"}
                ], "tool_call_id": "1co7q4164"},
                {"role": "user", "content": "plain"}
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "description": "Run",
                "parameters": {"type": "object", "required": ["command"],
                    "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}},
                "strict": false}}],
            "max_tokens": 1000,
            "reasoning_effort": "high",
            "prompt_cache_key": "sess-1"
        }))
    );
}

#[test]
fn images_for_a_text_only_model() {
    let mut m = model();
    m.input = vec!["text".into()];
    let image = ContentBlock::Image {
        data: "AAA".into(),
        mime_type: "image/png".into(),
    };
    let ctx = LlmContext {
        system_prompt: String::new(),
        messages: vec![
            LlmMessage::User {
                content: vec![image.clone()],
                timestamp: 1,
                as_string: false,
            },
            assistant("mistral", vec![call("abcdefghi")]),
            result(
                "abcdefghi",
                vec![ContentBlock::text(" shot "), image.clone()],
                false,
            ),
        ],
        tools: Vec::new(),
        transcript: None,
        leading_system: None,
    };
    let msgs = request::convert_messages(&m, &ctx);
    assert_eq!(
        msgs[0],
        json!({"role": "user", "content": "(image omitted: model does not support images)"})
    );
    assert_eq!(
        msgs[2]["content"],
        json!([{"type": "text",
            "text": "shot\n[tool image omitted: model does not support images]"}])
    );
}

#[test]
fn thinking_fields_and_strict_tools() {
    let ctx = LlmContext {
        messages: vec![user("hi")],
        tools: vec![bash_tool()],
        ..LlmContext::default()
    };
    let at = |m: &Model, level, cache| {
        let opts = StreamOptions {
            thinking_level: level,
            session_id: Some("s".into()),
            cache_retention: cache,
            ..StreamOptions::default()
        };
        build_body(m, &ctx, &opts, 10)
    };
    let b = at(&model(), ThinkingLevel::Off, CacheRetention::None);
    assert_eq!(b["reasoning_effort"], "none");
    assert_eq!(b.get("prompt_cache_key"), None);
    let mut m = model();
    m.thinking_level_map = json!({"off": null}).as_object().cloned();
    let b = at(&m, ThinkingLevel::Off, CacheRetention::Short);
    assert_eq!(b.get("reasoning_effort"), None);
    let b = at(&m, ThinkingLevel::Low, CacheRetention::Short);
    assert_eq!(b["reasoning_effort"], "high");
    // A reasoning model without a map: prompt_mode.
    m.thinking_level_map = None;
    let b = at(&m, ThinkingLevel::High, CacheRetention::Short);
    assert_eq!(b.get("reasoning_effort"), None);
    assert_eq!(b["prompt_mode"], "reasoning");
    assert_eq!(
        at(&m, ThinkingLevel::Off, CacheRetention::Short).get("prompt_mode"),
        None
    );
    // Strict tools only with the compat flag.
    m.compat = json!({"supportsStrictMode": true}).as_object().cloned();
    let b = at(&m, ThinkingLevel::Off, CacheRetention::Short);
    assert_eq!(b["tools"][0]["function"]["strict"], true);
    assert_eq!(
        b["tools"][0]["function"]["parameters"]["required"],
        json!(["command", "timeout"])
    );
    m.reasoning = false;
    let b = at(&m, ThinkingLevel::High, CacheRetention::Short);
    assert_eq!(b.get("prompt_mode"), None);
}

#[test]
fn headers_and_endpoint() {
    let opts = StreamOptions {
        api_key: Some("key-1".into()),
        session_id: Some("sess".into()),
        headers: vec![("Accept".into(), "x/y".into())],
        ..StreamOptions::default()
    };
    let pairs = |h: Vec<(String, String)>| -> Vec<String> {
        h.into_iter().map(|(n, v)| format!("{n}: {v}")).collect()
    };
    assert_eq!(
        pairs(request_headers(&opts)),
        [
            "accept: x/y",
            "authorization: Bearer key-1",
            "content-type: application/json",
            "x-affinity: sess"
        ]
    );
    let explicit = StreamOptions {
        headers: vec![("X-Affinity".into(), "mine".into())],
        ..opts.clone()
    };
    assert_eq!(
        pairs(request_headers(&explicit))[3],
        "x-affinity: mine".to_string()
    );
    let none = StreamOptions {
        cache_retention: CacheRetention::None,
        ..opts
    };
    assert_eq!(request_headers(&none).len(), 3);
    let mut m = model();
    m.base_url = "http://127.0.0.1:9/".into();
    assert_eq!(endpoint(&m), "http://127.0.0.1:9/v1/chat/completions");
}

/// Runs SSE text through the adapter's event handling: final message, wire events, verdict.
fn run(sse: &str) -> (AssistantMessage, Vec<Value>, Result<(), Failure>) {
    let m = model();
    let mut events = Vec::new();
    let mut cb = |u: StreamUpdate<'_>| {
        if let StreamUpdate::Event(_, e) = u {
            events.push(e.to_wire());
        }
    };
    let mut out = StreamedMessage::new(&m, &mut cb);
    out.start();
    let mut state = MistralStream::new();
    let mut read = Ok(());
    for ev in SseParser::new(sse.as_bytes()).dispatch_trailing(true) {
        match state.on_event(&m, &ev.unwrap(), &mut out) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Stop) => break,
            Err(e) => {
                read = Err(e);
                break;
            }
        }
    }
    let verdict = state.end(read, &mut out);
    let msg = out.msg.clone();
    drop(out);
    (msg, events, verdict)
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

#[test]
fn thinking_text_and_tool_calls_stream_as_pi_reports_them() {
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "cmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let sse = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(
            json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Need "}]}]}),
            Value::Null,
        ),
        chunk(
            json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "ls."}]}]}),
            Value::Null,
        ),
        chunk(json!({"content": "Runn"}), Value::Null),
        chunk(json!({"content": [{"type": "text", "text": "ing."}]}), Value::Null),
        chunk(
            json!({"tool_calls": [{"id": "a1B2c3D4e", "index": 0,
                "function": {"name": "bash", "arguments": "{\"command\":"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"id": "null", "index": 0, "function": {"name": "bash", "arguments": "\"ls\"}"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"name": "read", "arguments": {"path": "a"}}}]}),
            Value::Null,
        ),
        data(json!({"id": "cmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 400, "completion_tokens": 25, "total_tokens": 425,
                "prompt_tokens_details": {"cached_tokens": 100}}})),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    let (msg, events, verdict) = run(&sse);
    assert_eq!(verdict, Ok(()));
    assert_eq!(
        events,
        vec![
            json!({"type": "thinking_start", "contentIndex": 0}),
            json!({"type": "thinking_delta", "contentIndex": 0, "delta": "Need "}),
            json!({"type": "thinking_delta", "contentIndex": 0, "delta": "ls."}),
            json!({"type": "thinking_end", "contentIndex": 0, "content": "Need ls."}),
            json!({"type": "text_start", "contentIndex": 1}),
            json!({"type": "text_delta", "contentIndex": 1, "delta": "Runn"}),
            json!({"type": "text_delta", "contentIndex": 1, "delta": "ing."}),
            json!({"type": "text_end", "contentIndex": 1, "content": "Running."}),
            json!({"type": "toolcall_start", "contentIndex": 2, "id": "a1B2c3D4e", "toolName": "bash"}),
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"command\":"}),
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "\"ls\"}"}),
            json!({"type": "toolcall_start", "contentIndex": 3, "id": "toolcall1", "toolName": "read"}),
            json!({"type": "toolcall_delta", "contentIndex": 3, "delta": "{\"path\":\"a\"}"}),
            json!({"type": "toolcall_end", "contentIndex": 2, "toolCall": {"type": "toolCall",
                "id": "a1B2c3D4e", "name": "bash", "arguments": {"command": "ls"}}}),
            json!({"type": "toolcall_end", "contentIndex": 3, "toolCall": {"type": "toolCall",
                "id": "toolcall1", "name": "read", "arguments": {"path": "a"}}}),
        ]
    );
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(msg.raw_stop_reason.as_deref(), Some("tool_calls"));
    assert_eq!(msg.response_id.as_deref(), Some("cmpl-1"));
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.total_tokens
        ),
        (300, 25, 100, 425)
    );
    assert_eq!(msg.usage.reasoning, None);
}

#[test]
fn stream_ends_and_errors() {
    let finish = |reason: &str| {
        data(
            json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": reason}]}),
        )
    };
    // No finish reason.
    let (_, _, v) = run(&data(
        json!({"choices": [{"index": 0, "delta": {"content": "x"}}]}),
    ));
    assert_eq!(v, Err(Failure::Error(NO_FINISH_REASON.into())));
    // The last event without its blank line is still read.
    let (msg, _, v) = run(finish("stop").trim_end());
    assert_eq!((msg.stop_reason, v), (StopReason::Stop, Ok(())));
    let (msg, _, _) = run(&finish("model_length"));
    assert_eq!(msg.stop_reason, StopReason::Length);
    let (_, _, v) = run(&finish("error"));
    assert_eq!(
        v,
        Err(Failure::Error(
            "Provider stopped with: error (server error)".into()
        ))
    );
    let (_, _, v) = run(&finish("content_filter"));
    assert_eq!(
        v,
        Err(Failure::Error(
            "Provider stopped with: content_filter".into()
        ))
    );
    let (_, _, v) = run(&data(json!({"object": "error", "message": "boom"})));
    assert_eq!(
        v,
        Err(Failure::Error("Invalid Mistral streaming event".into()))
    );
    let (_, events, v) = run("data: {\"choices\":[]}\n\ndata: {oops\n\n");
    assert!(events.is_empty());
    assert_eq!(
        v,
        Err(Failure::Error(
            "Expected property name or '}' in JSON at position 1 (line 1 column 2)".into()
        ))
    );
}

#[test]
fn http_errors_match_pi() {
    assert_eq!(
        http_error_message(429, "  {\"message\":\"Rate limit exceeded\"}\n"),
        r#"Mistral API error (429): {"message":"Rate limit exceeded"}"#
    );
    assert_eq!(
        http_error_message(503, ""),
        "Mistral API error (503): Service Unavailable"
    );
    assert_eq!(
        http_error_message(599, " "),
        "Mistral API error (599): Request failed with status 599"
    );
    let long = "x".repeat(4005);
    assert_eq!(
        http_error_message(500, &long),
        format!(
            "Mistral API error (500): {}... [truncated 5 chars]",
            "x".repeat(4000)
        )
    );
}
