//! Tests of the request builder (ids, signatures, bodies, headers).

use super::super::tests::*;
use super::*;
use crate::llm::types::LlmMessage;

#[test]
fn short_hash_matches_pi() {
    // Values printed by pi's `shortHash` under node.
    assert_eq!(short_hash(""), "k4n83c7h0j2b");
    assert_eq!(short_hash("abc"), "y0biex7f9bbh");
    assert_eq!(short_hash("fc_68a1b2c3d4e5f6|x"), "177d7ky17fgmb3");
    assert_eq!(short_hash("héllo 🙈 world"), "fj2phl3m8wxo");
    assert_eq!(
        short_hash(&format!("msg_{}", "x".repeat(100))),
        "19ce5491y36to1"
    );
}

#[test]
fn tool_call_id_normalization() {
    assert_eq!(normalize_id_part("call 1|fc/2__"), "call_1_fc_2");
    assert_eq!(normalize_id_part("a🙈b"), "a__b");
    assert_eq!(normalize_id_part(&"x".repeat(80)), "x".repeat(64));
    let mut openai = model();
    openai.provider = "openai".into();
    let foreign = AssistantMessage {
        provider: "anthropic".into(),
        api: "anthropic-messages".into(),
        ..AssistantMessage::default()
    };
    let sibling = AssistantMessage {
        provider: "openai".into(),
        api: "openai-responses".into(),
        model: "gpt-old".into(),
        ..AssistantMessage::default()
    };
    assert_eq!(
        normalize_tool_call_id("call_1|fc_abc", &openai, &foreign),
        format!("call_1|fc_{}", short_hash("fc_abc"))
    );
    assert_eq!(
        normalize_tool_call_id("call_1|item.x", &openai, &sibling),
        "call_1|fc_item_x"
    );
    assert_eq!(
        normalize_tool_call_id("toolu_01", &openai, &foreign),
        "toolu_01"
    );
    // Other providers normalize the whole id.
    assert_eq!(
        normalize_tool_call_id("call_9|fc_9", &model(), &sibling),
        "call_9_fc_9"
    );
}

#[test]
fn text_signatures() {
    assert_eq!(
        parse_text_signature(Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#)),
        Some(("msg_1".into(), Some("final_answer".into())))
    );
    assert_eq!(
        parse_text_signature(Some(r#"{"v":1,"id":"msg_1","phase":"other"}"#)),
        Some(("msg_1".into(), None))
    );
    assert_eq!(
        parse_text_signature(Some("legacy_id")),
        Some(("legacy_id".into(), None))
    );
    assert_eq!(parse_text_signature(Some("")), None);
    assert_eq!(
        encode_text_signature("msg_1", None),
        r#"{"v":1,"id":"msg_1"}"#
    );
    assert_eq!(
        encode_text_signature("msg_1", Some("commentary")),
        r#"{"v":1,"id":"msg_1","phase":"commentary"}"#
    );
}

#[test]
fn body_for_a_reasoning_model() {
    let mut c = ctx(vec![user("hi")]);
    c.tools = vec![ToolSpec {
        name: "bash".into(),
        description: "Run a command".into(),
        parameters: json!({"type": "object"}),
        strict_prefer: false,
    }];
    let opts = StreamOptions {
        session_id: Some("sess-1".into()),
        ..StreamOptions::default()
    };
    let body = build_body(&model(), &c, &opts, 16_384);
    assert_eq!(
        body,
        json!({"model": "mock-gpt",
            "input": [{"role": "developer", "content": "S."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            "stream": true, "prompt_cache_key": "sess-1", "store": false,
            "max_output_tokens": 16384,
            "tools": [{"type": "function", "name": "bash", "description": "Run a command",
                "parameters": {"type": "object"}}],
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"]})
    );
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "input",
            "stream",
            "prompt_cache_key",
            "store",
            "max_output_tokens",
            "tools",
            "reasoning",
            "include"
        ]
    );
    let headers = request_headers(
        &model(),
        &StreamOptions {
            api_key: Some("k".into()),
            headers: vec![("x-extra".into(), "1".into())],
            ..opts
        },
    );
    assert_eq!(
        headers,
        [
            ("content-type", "application/json"),
            ("accept", "application/json"),
            ("authorization", "Bearer k"),
            ("session-id", "sess-1"),
            ("x-client-request-id", "sess-1"),
            ("x-extra", "1"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(endpoint(&model()), "http://127.0.0.1:9/v1/responses");
}

#[test]
fn body_thinking_and_compat_variants() {
    let c = ctx(vec![user("hi")]);
    let at = |m: &Model, level: ThinkingLevel, retention: CacheRetention| {
        let opts = StreamOptions {
            thinking_level: level,
            cache_retention: retention,
            session_id: Some("s".repeat(70)),
            ..StreamOptions::default()
        };
        build_body(m, &c, &opts, 8)
    };
    // Off: effort "none" unless the map says otherwise; max_output_tokens at least 16.
    let b = at(&model(), ThinkingLevel::Off, CacheRetention::Short);
    assert_eq!(b["reasoning"], json!({"effort": "none"}));
    assert!(b.get("include").is_none());
    assert_eq!(b["max_output_tokens"], 16);
    assert_eq!(b["prompt_cache_key"], "s".repeat(64));
    // Off mapped to null: no reasoning at all; "none" retention: no cache key.
    let mut gpt5 = model();
    gpt5.thinking_level_map = json!({"off": null, "xhigh": null, "max": null})
        .as_object()
        .cloned();
    let b = at(&gpt5, ThinkingLevel::Off, CacheRetention::None);
    assert!(b.get("reasoning").is_none());
    assert!(b.get("prompt_cache_key").is_none());
    // A mapped level; xhigh clamps to high on a model without xhigh.
    let mut mapped = model();
    mapped.thinking_level_map = json!({"low": "LOW!", "xhigh": "max-ish"})
        .as_object()
        .cloned();
    assert_eq!(
        at(&mapped, ThinkingLevel::Low, CacheRetention::Short)["reasoning"],
        json!({"effort": "LOW!", "summary": "auto"})
    );
    assert_eq!(
        at(&mapped, ThinkingLevel::Xhigh, CacheRetention::Short)["reasoning"]["effort"],
        "max-ish"
    );
    assert_eq!(
        at(&model(), ThinkingLevel::Xhigh, CacheRetention::Short)["reasoning"]["effort"],
        "high"
    );
    // Long retention; strict mode; no developer role.
    let mut compat = model();
    compat.compat = json!({"supportsDeveloperRole": false, "supportsStrictMode": true})
        .as_object()
        .cloned();
    let mut with_tools = c.clone();
    with_tools.tools = vec![ToolSpec {
        name: "t".into(),
        description: "d".into(),
        parameters: json!({"type": "object"}),
        strict_prefer: false,
    }];
    let opts = StreamOptions {
        cache_retention: CacheRetention::Long,
        ..StreamOptions::default()
    };
    let b = build_body(&compat, &with_tools, &opts, 100);
    assert_eq!(b["input"][0], json!({"role": "system", "content": "S."}));
    assert_eq!(b["prompt_cache_retention"], "24h");
    assert_eq!(b["tools"][0]["strict"], false);
    // Explicit prompt-cache mode.
    let mut explicit = model();
    explicit.compat = json!({"supportsExplicitPromptCacheMode": true})
        .as_object()
        .cloned();
    let b = build_body(&explicit, &c, &opts, 100);
    assert_eq!(b["prompt_cache_options"], json!({"ttl": "30m"}));
    assert!(b.get("prompt_cache_retention").is_none());
    // Non-reasoning models: system role, no reasoning; sampling params merged last.
    let mut plain = model();
    plain.reasoning = false;
    plain.sampling_params = json!({"temperature": 0.2, "store": true})
        .as_object()
        .cloned();
    let b = build_body(&plain, &c, &StreamOptions::default(), 100);
    assert_eq!(b["input"][0]["role"], "system");
    assert!(b.get("reasoning").is_none());
    let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "model",
            "input",
            "stream",
            "store",
            "max_output_tokens",
            "temperature"
        ]
    );
    assert_eq!(b["store"], true);
    // No system prompt: no instruction item.
    let mut empty = c.clone();
    empty.system_prompt.clear();
    assert_eq!(
        build_body(&plain, &empty, &StreamOptions::default(), 100)["input"][0]["role"],
        "user"
    );
}

#[test]
fn history_replay_matches_pi() {
    // The conversation of pi's r2 capture (after transformMessages).
    let a1 = AssistantMessage {
        content: vec![
            ContentBlock::Thinking {
                thinking: "Hmm.".into(),
                thinking_signature: Some(
                    r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Hmm."}],"encrypted_content":"E1"}"#.into(),
                ),
                redacted: false,
            },
            ContentBlock::Text {
                text: "Listing.".into(),
                text_signature: Some(r#"{"v":1,"id":"msg_1"}"#.into()),
            },
            ContentBlock::text("Second."),
            ContentBlock::ToolCall {
                id: "call_1|fc_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                arguments_error: None,
                thought_signature: None,
            },
        ],
        api: "openai-responses".into(),
        provider: "mockoai".into(),
        model: "mock-gpt".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    let other = AssistantMessage {
        content: vec![
            ContentBlock::text("Checking."),
            ContentBlock::ToolCall {
                id: "toolu_01".into(),
                name: "read".into(),
                arguments: json!({"path": "a.png"}),
                arguments_error: None,
                thought_signature: None,
            },
        ],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    let older = AssistantMessage {
        content: vec![ContentBlock::ToolCall {
            id: "call_9|fc_9".into(),
            name: "bash".into(),
            arguments: json!({}),
            arguments_error: None,
            thought_signature: None,
        }],
        api: "openai-responses".into(),
        provider: "mockoai".into(),
        model: "mock-gpt-old".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    let result = |id: &str, name: &str, text: &str| LlmMessage::ToolResult {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![ContentBlock::text(text)],
        is_error: false,
    };
    let c = ctx(vec![
        user("hi"),
        LlmMessage::Assistant(a1),
        result("call_1|fc_1", "bash", "file.txt\n"),
        LlmMessage::Assistant(other),
        result(
            "toolu_01",
            "read",
            "(tool image omitted: model does not support images)",
        ),
        user("next"),
        LlmMessage::Assistant(older),
        result("call_9|fc_9", "bash", "No result provided"),
    ]);
    let mut m = model();
    m.reasoning = false;
    let input = convert_input(&m, &c);
    let msg = |text: &str, id: &str| {
        json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
            "status": "completed", "id": id})
    };
    assert_eq!(
        Value::Array(input),
        json!([
            {"role": "system", "content": "S."},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"id": "rs_1", "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Hmm."}], "encrypted_content": "E1"},
            msg("Listing.", "msg_1"),
            msg("Second.", "msg_pi_1_1"),
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash",
                "arguments": "{\"command\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "file.txt\n"},
            msg("Checking.", "msg_pi_3"),
            {"type": "function_call", "call_id": "toolu_01", "name": "read",
                "arguments": "{\"path\":\"a.png\"}"},
            {"type": "function_call_output", "call_id": "toolu_01",
                "output": "(tool image omitted: model does not support images)"},
            {"role": "user", "content": [{"type": "input_text", "text": "next"}]},
            {"type": "function_call", "call_id": "call_9_fc_9", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_9_fc_9",
                "output": "No result provided"}
        ])
    );
}

#[test]
fn tool_result_outputs() {
    let img = ContentBlock::Image {
        data: "AAAA".into(),
        mime_type: "image/png".into(),
    };
    let mut vision = model();
    vision.input.push("image".into());
    assert_eq!(tool_result_output(&model(), &[]), json!("(no tool output)"));
    assert_eq!(
        tool_result_output(&model(), std::slice::from_ref(&img)),
        json!("(see attached image)")
    );
    assert_eq!(
        tool_result_output(
            &vision,
            &[ContentBlock::text("a"), ContentBlock::text("b"), img]
        ),
        json!([{"type": "input_text", "text": "a\nb"},
            {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"}])
    );
    // User images.
    let c = ctx(vec![LlmMessage::User {
        content: vec![
            ContentBlock::text("look"),
            ContentBlock::Image {
                data: "BBBB".into(),
                mime_type: "image/jpeg".into(),
            },
        ],
        timestamp: 1,
        as_string: false,
    }]);
    assert_eq!(
        convert_input(&vision, &c)[1],
        json!({"role": "user", "content": [{"type": "input_text", "text": "look"},
            {"type": "input_image", "detail": "auto", "image_url": "data:image/jpeg;base64,BBBB"}]})
    );
}
