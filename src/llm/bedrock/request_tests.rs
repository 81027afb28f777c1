//! The ConverseStream body, pinned from pi 1.6.0's `convertMessages`, `convertToolConfig`,
//! `buildSystemPrompt`, `buildAdditionalModelRequestFields` and the SDK schema's member order.

use serde_json::json;

use super::*;
use crate::llm::types::{AssistantMessage, ToolSpec};

fn no_env(_: &str) -> Option<String> {
    None
}

fn model(id: &str, name: &str) -> Model {
    Model {
        id: id.into(),
        name: name.into(),
        api: "bedrock-converse-stream".into(),
        provider: "amazon-bedrock".into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        context_window: 200_000,
        max_tokens: 64_000,
        ..Model::default()
    }
}

fn user(text: &str) -> LlmMessage {
    LlmMessage::User {
        content: vec![ContentBlock::text(text)],
        timestamp: 1,
        as_string: true,
    }
}

fn opts(level: ThinkingLevel) -> StreamOptions {
    StreamOptions {
        thinking_level: level,
        ..StreamOptions::default()
    }
}

fn body(m: &Model, ctx: &LlmContext, o: &StreamOptions) -> Value {
    let v = build_body(m, ctx, o, &no_env).unwrap();
    // Serialized as JSON.stringify does, member order included.
    serde_json::from_slice(&crate::js::json::to_js_vec(&v).unwrap()).unwrap()
}

const SONNET_45: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

#[test]
fn claude_budget_thinking_tools_and_cache_points() {
    let m = model(SONNET_45, "Claude Sonnet 4.5");
    let ctx = LlmContext {
        system_prompt: "You are helpful.".into(),
        messages: vec![user("hi")],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            strict_prefer: true,
        }],
        transcript: None,
        leading_system: None,
    };
    let v = body(&m, &ctx, &opts(ThinkingLevel::Medium));
    assert_eq!(
        v,
        json!({
            "messages": [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}],
            "system": [{"text": "You are helpful."}, {"cachePoint": {"type": "default"}}],
            "inferenceConfig": {"maxTokens": 64000},
            "toolConfig": {"tools": [{"toolSpec": {"name": "read",
                "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                "description": "Read a file"}}]},
            "additionalModelRequestFields": {
                "thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"},
                "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
        })
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "messages",
            "system",
            "inferenceConfig",
            "toolConfig",
            "additionalModelRequestFields"
        ]
    );
    let spec_keys: Vec<&String> = v["toolConfig"]["tools"][0]["toolSpec"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(spec_keys, ["name", "inputSchema", "description"]);
    // Long retention: 1h cache points; none: no cache points at all.
    let long = StreamOptions {
        cache_retention: CacheRetention::Long,
        ..opts(ThinkingLevel::Off)
    };
    let v = body(&m, &ctx, &long);
    assert_eq!(
        v["system"][1],
        json!({"cachePoint": {"type": "default", "ttl": "1h"}})
    );
    assert!(v.get("additionalModelRequestFields").is_none());
    let none = StreamOptions {
        cache_retention: CacheRetention::None,
        ..opts(ThinkingLevel::Off)
    };
    assert_eq!(
        body(&m, &ctx, &none)["system"],
        json!([{"text": "You are helpful."}])
    );
    // Strict tools only with compat.supportsStrictMode.
    let mut strict = m.clone();
    strict.compat = json!({"supportsStrictMode": true}).as_object().cloned();
    let v = body(&strict, &ctx, &none);
    assert_eq!(v["toolConfig"]["tools"][0]["toolSpec"]["strict"], true);
    assert_eq!(
        v["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["additionalProperties"],
        false
    );
}

#[test]
fn adaptive_and_openai_reasoning_fields() {
    let ctx = LlmContext {
        messages: vec![user("hi")],
        ..LlmContext::default()
    };
    let mut opus47 = model("global.anthropic.claude-opus-4-7", "Claude Opus 4.7");
    opus47.thinking_level_map = json!({"xhigh": "xhigh"}).as_object().cloned();
    assert_eq!(
        body(&opus47, &ctx, &opts(ThinkingLevel::Xhigh))["additionalModelRequestFields"],
        json!({"thinking": {"type": "adaptive", "display": "summarized",
                "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
            "output_config": {"effort": "xhigh"},
            "anthropic_beta": ["thinking-binding-controls-2026-08-01"]})
    );
    let sonnet46 = model("us.anthropic.claude-sonnet-4-6", "Claude Sonnet 4.6");
    assert_eq!(
        body(&sonnet46, &ctx, &opts(ThinkingLevel::Low))["additionalModelRequestFields"],
        json!({"thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": "low"}})
    );
    let oss = model("openai.gpt-oss-120b-1:0", "gpt-oss-120b");
    let v = body(&oss, &ctx, &opts(ThinkingLevel::Minimal));
    assert_eq!(
        v["additionalModelRequestFields"],
        json!({"reasoning_effort": "low"})
    );
    assert!(v.get("system").is_none());
    let gpt = model("openai.gpt-5.6", "GPT-5.6");
    assert_eq!(
        body(&gpt, &ctx, &opts(ThinkingLevel::Minimal))["additionalModelRequestFields"],
        json!({"reasoning": {"effort": "low"}})
    );
    let nova = model("amazon.nova-pro-v1:0", "Nova Pro");
    let v = body(&nova, &ctx, &opts(ThinkingLevel::High));
    assert!(v.get("additionalModelRequestFields").is_none());
    // No cache point for a model without prompt caching.
    assert_eq!(v["messages"][0]["content"], json!([{"text": "hi"}]));
}

#[test]
fn history_blocks_tool_results_and_images() {
    let m = model(SONNET_45, "Claude Sonnet 4.5");
    let mut a = AssistantMessage::new(&m, 2);
    a.content = vec![
        ContentBlock::Thinking {
            thinking: "hmm".into(),
            thinking_signature: Some("sig".into()),
            redacted: false,
        },
        ContentBlock::Thinking {
            thinking: "unsigned".into(),
            thinking_signature: None,
            redacted: false,
        },
        ContentBlock::Thinking {
            thinking: "[Reasoning redacted]".into(),
            thinking_signature: Some("AAEC".into()),
            redacted: true,
        },
        ContentBlock::text("  "),
        ContentBlock::ToolCall {
            id: "call|1".into(),
            name: "read".into(),
            arguments: json!({"path": "a", "": 1}),
            arguments_error: None,
            thought_signature: None,
        },
    ];
    a.model = "other".into();
    let ctx = LlmContext {
        system_prompt: String::new(),
        messages: vec![
            user("hi"),
            LlmMessage::Assistant(a),
            LlmMessage::ToolResult {
                tool_call_id: "call|1".into(),
                tool_name: "read".into(),
                content: vec![
                    ContentBlock::text("failed"),
                    ContentBlock::Image {
                        data: "iVBO".into(),
                        mime_type: "image/png".into(),
                    },
                ],
                is_error: true,
            },
            LlmMessage::ToolResult {
                tool_call_id: "x".into(),
                tool_name: "bash".into(),
                content: vec![],
                is_error: false,
            },
        ],
        tools: vec![],
        transcript: None,
        leading_system: None,
    };
    let v = body(&m, &ctx, &opts(ThinkingLevel::Off));
    assert_eq!(
        v["messages"],
        json!([
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}},
                {"text": "unsigned"},
                {"reasoningContent": {"redactedContent": "AAEC"}},
                {"toolUse": {"toolUseId": "call_1", "name": "read", "input": {"path": "a"}}}
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "call_1", "content": [
                    {"text": "failed"}, {"text": "(image attached after the tool results)"}],
                    "status": "error"}},
                {"toolResult": {"toolUseId": "x", "content": [{"text": "<empty>"}], "status": "success"}},
                {"text": "Images from the error result of tool call call_1 (read):"},
                {"image": {"format": "png", "source": {"bytes": "iVBO"}}},
                {"cachePoint": {"type": "default"}}
            ]}
        ])
    );
    // Non-Claude models get reasoning text without the signature.
    let nova = model("amazon.nova-pro-v1:0", "Nova Pro");
    let mut a = AssistantMessage::new(&nova, 2);
    a.content = vec![ContentBlock::Thinking {
        thinking: "t".into(),
        thinking_signature: Some("sig".into()),
        redacted: false,
    }];
    let ctx = LlmContext {
        messages: vec![user("hi"), LlmMessage::Assistant(a)],
        ..LlmContext::default()
    };
    assert_eq!(
        body(&nova, &ctx, &opts(ThinkingLevel::Off))["messages"][1]["content"],
        json!([{"reasoningContent": {"reasoningText": {"text": "t"}}}])
    );
    // Unknown image types fail before anything is sent.
    let ctx = LlmContext {
        messages: vec![LlmMessage::User {
            content: vec![ContentBlock::Image {
                data: "AA".into(),
                mime_type: "image/bmp".into(),
            }],
            timestamp: 1,
            as_string: false,
        }],
        ..LlmContext::default()
    };
    assert_eq!(
        build_body(&m, &ctx, &opts(ThinkingLevel::Off), &no_env).unwrap_err(),
        "Unknown image type: image/bmp"
    );
}

#[test]
fn tool_call_ids_are_sanitized_to_64_chars() {
    assert_eq!(normalize_tool_call_id("a.b|c"), "a_b_c");
    assert_eq!(normalize_tool_call_id(&"x".repeat(80)).len(), 64);
}
