//! The ConverseStream request body (providers-catalog.md §4.1), as pi's
//! `bedrock-converse-stream.js` builds the command input and the AWS SDK serializes it: members
//! in the SDK schema's order (`messages`, `system`, `inferenceConfig`, `toolConfig`,
//! `additionalModelRequestFields`; `toolSpec` as `name`, `inputSchema`, `description`,
//! `strict`; `image` as `format`, `source`), blobs as base64.

use serde_json::{json, Map, Value};

use crate::llm::convert::normalize_tool_call_ids;
use crate::llm::drive::effective_thinking_level;
use crate::llm::model::Model;
use crate::llm::stream::{
    base_max_tokens, clamp_max_tokens_to_context, clamp_thinking_budget_to_answer_room,
    thinking_budget_for_level,
};
use crate::llm::strict_schema;
use crate::llm::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use crate::llm::types::{CacheRetention, ContentBlock, LlmContext, LlmMessage, StreamOptions};

use super::credentials::Env;
use super::{b64_decode, b64_encode};

const EMPTY_TEXT: &str = "<empty>";
const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";
const BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";
const INTERLEAVED_BETA: &str = "interleaved-thinking-2025-05-14";

/// Lower-cased id and name, each also with runs of spaces, `_`, `.` and `:` as `-` (pi's
/// `getModelMatchCandidates`).
fn candidates(model: &Model) -> Vec<String> {
    let mut out = Vec::new();
    let values: Vec<&str> = if model.name.is_empty() {
        vec![&model.id]
    } else {
        vec![&model.id, &model.name]
    };
    for v in values {
        let lower = v.to_lowercase();
        let mut dashed = String::with_capacity(lower.len());
        let mut in_run = false;
        for c in lower.chars() {
            if c.is_whitespace() || matches!(c, '_' | '.' | ':') {
                if !in_run {
                    dashed.push('-');
                }
                in_run = true;
            } else {
                dashed.push(c);
                in_run = false;
            }
        }
        out.push(lower);
        out.push(dashed);
    }
    out
}

fn any_candidate(model: &Model, needles: &[&str]) -> bool {
    candidates(model)
        .iter()
        .any(|s| needles.iter().any(|n| s.contains(n)))
}

/// pi's `isAnthropicClaudeModel`.
pub fn is_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

fn adaptive(model: &Model) -> bool {
    any_candidate(
        model,
        &[
            "opus-4-6",
            "opus-4-7",
            "opus-4-8",
            "opus-5",
            "sonnet-4-6",
            "sonnet-5",
            "haiku-5",
            "fable-5",
        ],
    )
}

/// Native `xhigh` effort and `thinking.block_binding` (the same model list in pi).
fn binding(model: &Model) -> bool {
    any_candidate(
        model,
        &[
            "opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5",
        ],
    )
}

fn prompt_caching(model: &Model, env: Env<'_>) -> bool {
    let c = candidates(model);
    if !c.iter().any(|s| s.contains("claude")) {
        return env("AWS_BEDROCK_FORCE_CACHE").as_deref() == Some("1");
    }
    c.iter().any(|s| {
        [
            "fable-5",
            "opus-5",
            "sonnet-5",
            "haiku-5",
            "-4-",
            "claude-3-7-sonnet",
            "claude-3-5-haiku",
        ]
        .iter()
        .any(|n| s.contains(n))
    })
}

fn cache_point(retention: CacheRetention) -> Value {
    match retention {
        CacheRetention::Long => json!({"cachePoint": {"type": "default", "ttl": "1h"}}),
        _ => json!({"cachePoint": {"type": "default"}}),
    }
}

/// Tool-call ids: `[a-zA-Z0-9_-]`, at most 64 characters.
pub fn normalize_tool_call_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn non_blank(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({ "text": text }))
}

fn image(mime_type: &str, data: &str) -> Result<Value, String> {
    let format = match mime_type {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => return Err(format!("Unknown image type: {other}")),
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

/// Object keys that are empty strings removed, recursively (pi's `sanitizeBedrockDocument`).
fn sanitize_document(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(sanitize_document).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.clone(), sanitize_document(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn tool_result_content(content: &[ContentBlock]) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for b in content {
        match b {
            ContentBlock::Image { data, mime_type } => out.push(image(mime_type, data)?),
            ContentBlock::Text { text, .. } => out.extend(non_blank(text)),
            _ => {}
        }
    }
    if out.is_empty() {
        out.push(json!({ "text": EMPTY_TEXT }));
    }
    Ok(out)
}

fn assistant_blocks(model: &Model, content: &[ContentBlock]) -> Vec<Value> {
    let mut out = Vec::new();
    for c in content {
        match c {
            ContentBlock::Text { text, .. } => out.extend(non_blank(text)),
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
                ..
            } => out.push(json!({"toolUse": {"toolUseId": id, "name": name,
                "input": sanitize_document(arguments)}})),
            ContentBlock::Thinking {
                thinking,
                thinking_signature,
                redacted,
            } => {
                if *redacted {
                    let bytes =
                        b64_decode(thinking_signature.as_deref().unwrap_or("")).unwrap_or_default();
                    if !bytes.is_empty() {
                        out.push(json!({"reasoningContent":
                            {"redactedContent": b64_encode(&bytes)}}));
                    }
                    continue;
                }
                if thinking.trim().is_empty() {
                    continue;
                }
                if is_claude(model) {
                    match thinking_signature
                        .as_deref()
                        .filter(|s| !s.trim().is_empty())
                    {
                        None => out.push(json!({ "text": thinking })),
                        Some(sig) => out.push(json!({"reasoningContent":
                            {"reasoningText": {"text": thinking, "signature": sig}}})),
                    }
                } else {
                    out.push(json!({"reasoningContent": {"reasoningText": {"text": thinking}}}));
                }
            }
            ContentBlock::Image { .. } => {}
        }
    }
    out
}

/// The `messages` member.
pub fn convert_messages(
    model: &Model,
    ctx: &LlmContext,
    retention: CacheRetention,
    env: Env<'_>,
) -> Result<Vec<Value>, String> {
    let mut messages = ctx.messages.clone();
    normalize_tool_call_ids(&mut messages, model, normalize_tool_call_id);
    let claude = is_claude(model);
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            LlmMessage::User { content, .. } => {
                let mut blocks = Vec::new();
                for c in content {
                    match c {
                        ContentBlock::Text { text, .. } => blocks.extend(non_blank(text)),
                        ContentBlock::Image { data, mime_type } => {
                            blocks.push(image(mime_type, data)?)
                        }
                        _ => {}
                    }
                }
                if blocks.is_empty() {
                    blocks.push(json!({ "text": EMPTY_TEXT }));
                }
                out.push(json!({"role": "user", "content": blocks}));
            }
            // No Bedrock model keeps system messages in place (they fold into `system`).
            LlmMessage::System(_) => {}
            LlmMessage::Assistant(a) => {
                let blocks = assistant_blocks(model, &a.content);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            LlmMessage::ToolResult { .. } => {
                let mut results = Vec::new();
                let mut error_images = Vec::new();
                while let Some(LlmMessage::ToolResult {
                    tool_call_id,
                    tool_name,
                    content,
                    is_error,
                }) = messages.get(i)
                {
                    let has_images = content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Image { .. }));
                    let sent = if claude && *is_error && has_images {
                        let mut replaced = Vec::new();
                        let mut prev_placeholder = false;
                        error_images.push(json!({"text": format!(
                            "Images from the error result of tool call {tool_call_id} ({tool_name}):")}));
                        for b in content {
                            if let ContentBlock::Image { data, mime_type } = b {
                                if !prev_placeholder {
                                    replaced.push(ContentBlock::text(ERROR_TOOL_IMAGE_PLACEHOLDER));
                                }
                                prev_placeholder = true;
                                error_images.push(image(mime_type, data)?);
                                continue;
                            }
                            prev_placeholder = matches!(b, ContentBlock::Text { text, .. }
                                if text == ERROR_TOOL_IMAGE_PLACEHOLDER);
                            replaced.push(b.clone());
                        }
                        replaced
                    } else {
                        content.clone()
                    };
                    results.push(json!({"toolResult": {
                        "toolUseId": tool_call_id,
                        "content": tool_result_content(&sent)?,
                        "status": if *is_error { "error" } else { "success" },
                    }}));
                    i += 1;
                }
                results.extend(error_images);
                out.push(json!({"role": "user", "content": results}));
                continue;
            }
        }
        i += 1;
    }
    if retention != CacheRetention::None && prompt_caching(model, env) {
        if let Some(last) = out.last_mut().filter(|m| m["role"] == "user") {
            if let Some(Value::Array(blocks)) = last.get_mut("content") {
                blocks.push(cache_point(retention));
            }
        }
    }
    Ok(out)
}

/// pi's `mapThinkingLevelToEffort` (adaptive Claude).
fn adaptive_effort(model: &Model, level: ThinkingLevel) -> String {
    if level == ThinkingLevel::Xhigh && binding(model) {
        return "xhigh".into();
    }
    if let LevelMapping::Value(v) = level_mapping(model, level) {
        return v.into();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        _ => "high",
    }
    .into()
}

fn gov_cloud(model: &Model, env: Env<'_>) -> bool {
    let region = env("AWS_REGION")
        .filter(|v| !v.is_empty())
        .or_else(|| env("AWS_DEFAULT_REGION").filter(|v| !v.is_empty()));
    if region.is_some_and(|r| r.to_lowercase().starts_with("us-gov-")) {
        return true;
    }
    let id = model.id.to_lowercase();
    id.starts_with("us-gov.") || id.starts_with("arn:aws-us-gov:")
}

/// `inferenceConfig.maxTokens` and `additionalModelRequestFields` (pi's `streamSimple` and
/// `buildAdditionalModelRequestFields`).
fn thinking(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    env: Env<'_>,
) -> (u64, Option<Value>) {
    let base = base_max_tokens(model, ctx, opts);
    let level = effective_thinking_level(model, opts.thinking_level);
    if level == ThinkingLevel::Off || !model.reasoning {
        return (base, None);
    }
    if is_claude(model) {
        let gov = gov_cloud(model, env);
        let use_binding = !gov && binding(model);
        if adaptive(model) {
            let mut thinking = Map::new();
            thinking.insert("type".into(), "adaptive".into());
            if !gov {
                thinking.insert("display".into(), "summarized".into());
            }
            if use_binding {
                thinking.insert(
                    "block_binding".into(),
                    json!({"prefix_mismatch_behavior": "drop_block"}),
                );
            }
            let mut fields = Map::new();
            fields.insert("thinking".into(), Value::Object(thinking));
            fields.insert(
                "output_config".into(),
                json!({"effort": adaptive_effort(model, level)}),
            );
            if use_binding {
                fields.insert("anthropic_beta".into(), json!([BINDING_BETA]));
            }
            return (base, Some(Value::Object(fields)));
        }
        let mut budget = thinking_budget_for_level(level, &opts.thinking_budgets);
        let max_tokens = (base + budget).min(model.max_tokens);
        if max_tokens <= budget {
            budget = clamp_thinking_budget_to_answer_room(budget, max_tokens);
        }
        let max_tokens = clamp_max_tokens_to_context(model, ctx, max_tokens);
        let budget = clamp_thinking_budget_to_answer_room(budget, max_tokens);
        let mut thinking = Map::new();
        thinking.insert("type".into(), "enabled".into());
        thinking.insert("budget_tokens".into(), budget.into());
        if !gov {
            thinking.insert("display".into(), "summarized".into());
        }
        let fields = json!({"thinking": thinking, "anthropic_beta": [INTERLEAVED_BETA]});
        return (max_tokens, Some(fields));
    }
    let c = candidates(model);
    if c.iter().any(|s| s.contains("gpt-oss")) {
        let effort = match level {
            ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            _ => "high",
        };
        return (base, Some(json!({ "reasoning_effort": effort })));
    }
    if c.iter().any(|s| s.contains("gpt-")) {
        let effort = match level_mapping(model, level) {
            LevelMapping::Value(v) => v.to_string(),
            _ => match level {
                ThinkingLevel::Minimal => "low".into(),
                other => other.as_str().to_string(),
            },
        };
        return (base, Some(json!({"reasoning": {"effort": effort}})));
    }
    (base, None)
}

/// `toolConfig`, and whether a tool that prefers strict sampling went out strict.
/// `disable_preferred_strict`: pi's fallback after Bedrock refused the strict tools.
fn tool_config(
    model: &Model,
    ctx: &LlmContext,
    disable_preferred_strict: bool,
) -> (Option<Value>, bool) {
    if ctx.tools.is_empty() {
        return (None, false);
    }
    let mut has_preferred_strict = false;
    let supports_strict = model
        .compat
        .as_ref()
        .and_then(|c| c.get("supportsStrictMode"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let tools: Vec<Value> = ctx
        .tools
        .iter()
        .map(|t| {
            let strict = if disable_preferred_strict && t.strict_prefer {
                None
            } else {
                strict_schema::strict_sampling(t, supports_strict, None)
            };
            has_preferred_strict |= strict == Some(true) && t.strict_prefer;
            let mut spec = Map::new();
            spec.insert("name".into(), t.name.clone().into());
            spec.insert(
                "inputSchema".into(),
                json!({"json": strict_schema::parameters(t, strict, None)}),
            );
            spec.insert("description".into(), t.description.clone().into());
            if strict == Some(true) {
                spec.insert("strict".into(), true.into());
            }
            json!({ "toolSpec": spec })
        })
        .collect();
    (Some(json!({ "tools": tools })), has_preferred_strict)
}

/// The request body (tests; the exchange uses [`build_body_with`]).
#[cfg(test)]
pub fn build_body(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    env: Env<'_>,
) -> Result<Value, String> {
    build_body_with(model, ctx, opts, env, false).map(|(v, _)| v)
}

/// The request body, and whether a tool that prefers strict sampling went out strict.
pub fn build_body_with(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    env: Env<'_>,
    disable_preferred_strict: bool,
) -> Result<(Value, bool), String> {
    let retention = opts.cache_retention;
    let mut body = Map::new();
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, ctx, retention, env)?),
    );
    if !ctx.system_prompt.is_empty() {
        let mut system = vec![json!({"text": ctx.system_prompt})];
        if retention != CacheRetention::None && prompt_caching(model, env) {
            system.push(cache_point(retention));
        }
        body.insert("system".into(), Value::Array(system));
    }
    let (max_tokens, fields) = thinking(model, ctx, opts, env);
    body.insert("inferenceConfig".into(), json!({ "maxTokens": max_tokens }));
    let (tools, has_preferred_strict) = tool_config(model, ctx, disable_preferred_strict);
    if let Some(tc) = tools {
        body.insert("toolConfig".into(), tc);
    }
    if let Some(f) = fields {
        body.insert("additionalModelRequestFields".into(), f);
    }
    Ok((Value::Object(body), has_preferred_strict))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
