//! Google Gemini (`google-generative-ai`, providers.md §5): request building, stream-chunk
//! handling and the blocking [`stream`] entry point the dispatcher calls.
//!
//! The behaviour follows pi 1.6.0 (`google-generative-ai.js` / `google-shared.js` with the
//! `@google/genai` SDK underneath): `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`
//! with `x-goog-api-key`; each SSE chunk carries whole parts, so text and thought parts extend
//! the current block (a block closes when the part kind changes), and a `functionCall` part is
//! a complete tool call reported as start/delta/end at once.

use std::io::BufReader;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::http::HttpRequest;
use super::model::{number_to_u64, Model};
use super::request::{post_streaming, read_failure};
use super::sse::SseParser;
use super::stream::{
    base_max_tokens, effective_thinking_level, js_stringify, js_truthy, AbortTexts, Failure,
    Output, StreamUpdate,
};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::types::{
    AssistantEvent, AssistantMessage, ContentBlock, LlmContext, LlmMessage, StopReason,
    StreamOptions, Tool, Usage,
};
use crate::cancel::CancelToken;
use crate::resources::settings::ThinkingBudgets;
use crate::util::now_ms;

/// Largest error body read from a failed response.
const ERROR_BODY_LIMIT: usize = 1 << 20;
/// The stream ended without a `finishReason`.
pub const NO_FINISH_REASON: &str = "Google stream ended without a finish reason";

/// pi's abort texts for this API: `Request aborted` (pi's own check and retry wrapper) until
/// the response arrived, then the body reader's `AbortError`.
pub const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "Request aborted",
    before_response: "Request aborted",
    streaming: "This operation was aborted",
};

/// Generated tool-call ids are `<name>_<ms>_<counter>`, the counter shared by the process.
static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

// ---------------------------------------------------------------------------------------------
// Model families

/// The Gemini major version of ids like `gemini-2.5-pro` / `gemini-live-3-…`.
fn gemini_major_version(id: &str) -> Option<u32> {
    let id = id.to_ascii_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Models that need explicit tool-call ids in `functionCall` / `functionResponse`.
fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major_version(id).is_some_and(|v| v >= 3)
}

/// Gemini 3+ takes images inside `functionResponse.parts`.
fn supports_multimodal_function_response(id: &str) -> bool {
    gemini_major_version(id).is_none_or(|v| v >= 3)
}

/// Whether the model uses Gemini's discrete `thinkingLevel` instead of `thinkingBudget`
/// (Gemini 3 Pro/Flash, Gemini 4+, the `-latest` flash aliases, Gemma 4).
pub fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    let gemini_3 = id.match_indices("gemini-3").any(|(i, m)| {
        let mut rest = &id[i + m.len()..];
        if let Some(r) = rest.strip_prefix('.') {
            let digits = r.chars().take_while(char::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            rest = &r[digits..];
        }
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let gemini_4_plus = id.match_indices("gemini-").any(|(i, m)| {
        let rest = &id[i + m.len()..];
        let mut chars = rest.chars();
        match (chars.next(), chars.next()) {
            (Some(a @ '4'..='9'), _) => a.is_ascii_digit(),
            (Some('1'..='9'), Some(b)) => b.is_ascii_digit(),
            _ => false,
        }
    });
    let gemma_4 = id.contains("gemma4") || id.contains("gemma-4");
    gemini_3
        || gemini_4_plus
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || gemma_4
}

/// pi's `resolveGoogleThinkingLevel`: the model's mapping (lowercased) or the level itself, one
/// of minimal/low/medium/high.
fn resolve_google_level(model: &Model, level: ThinkingLevel) -> Result<ThinkingLevel, String> {
    let (resolved, shown) = match level_mapping(model, level) {
        LevelMapping::Value(v) => (v.to_ascii_lowercase(), v.to_owned()),
        LevelMapping::Unsupported => (level.as_str().to_owned(), "null".to_owned()),
        LevelMapping::Unmapped => (level.as_str().to_owned(), "undefined".to_owned()),
    };
    match ThinkingLevel::parse(&resolved) {
        Some(
            l @ (ThinkingLevel::Minimal
            | ThinkingLevel::Low
            | ThinkingLevel::Medium
            | ThinkingLevel::High),
        ) => Ok(l),
        _ => Err(format!(
            "Unsupported Google thinking level mapping for {}/{}: {} -> {shown}",
            model.provider,
            model.id,
            level.as_str()
        )),
    }
}

fn google_level_name(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Minimal => "MINIMAL",
        ThinkingLevel::Low => "LOW",
        ThinkingLevel::Medium => "MEDIUM",
        _ => "HIGH",
    }
}

/// The thinking budget of a level: the user's setting when it differs from pi's default,
/// else the Gemini 2.5 family budgets, else `-1` (dynamic).
fn google_budget(model: &Model, level: ThinkingLevel, custom: &ThinkingBudgets) -> i64 {
    let defaults = ThinkingBudgets::default();
    let (user, default) = match level {
        ThinkingLevel::Minimal => (custom.minimal, defaults.minimal),
        ThinkingLevel::Low => (custom.low, defaults.low),
        ThinkingLevel::Medium => (custom.medium, defaults.medium),
        _ => (custom.high, defaults.high),
    };
    // `ThinkingBudgets` is always filled in; a value other than the default was set by the
    // user (pi applies only user-set budgets here).
    if user != default {
        return i64::try_from(user).unwrap_or(i64::MAX);
    }
    let table: Option<[i64; 4]> = if model.id.contains("2.5-pro") {
        Some([128, 2048, 8192, 32768])
    } else if model.id.contains("2.5-flash-lite") {
        Some([512, 2048, 8192, 24576])
    } else if model.id.contains("2.5-flash") {
        Some([128, 2048, 8192, 24576])
    } else {
        None
    };
    let Some(t) = table else {
        return -1;
    };
    match level {
        ThinkingLevel::Minimal => t[0],
        ThinkingLevel::Low => t[1],
        ThinkingLevel::Medium => t[2],
        _ => t[3],
    }
}

/// `generationConfig.thinkingConfig` for the request (data-model.md §6.1), `None` for
/// non-reasoning models.
pub fn thinking_config(model: &Model, opts: &StreamOptions) -> Result<Option<Value>, String> {
    if !model.reasoning {
        return Ok(None);
    }
    // pi's agent passes no reasoning option at `off` (no clamping then).
    let level = match opts.thinking_level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    };
    if level == ThinkingLevel::Off {
        if !uses_thinking_level(model) {
            return Ok(Some(json!({"thinkingBudget": 0})));
        }
        let fallback = effective_thinking_level(model, ThinkingLevel::Off);
        if fallback == ThinkingLevel::Off {
            return Ok(Some(json!({"thinkingBudget": 0})));
        }
        let resolved = resolve_google_level(model, fallback)?;
        return Ok(Some(json!({"thinkingLevel": google_level_name(resolved)})));
    }
    let resolved = resolve_google_level(model, level)?;
    Ok(Some(if uses_thinking_level(model) {
        json!({"includeThoughts": true, "thinkingLevel": google_level_name(resolved)})
    } else {
        json!({"includeThoughts": true,
            "thinkingBudget": google_budget(model, resolved, &opts.thinking_budgets)})
    }))
}

// ---------------------------------------------------------------------------------------------
// Request

/// Thought signatures must be base64 (the API's `TYPE_BYTES`).
fn valid_signature(sig: Option<&str>) -> Option<&str> {
    let s = sig.filter(|s| !s.is_empty())?;
    if s.len() % 4 != 0 {
        return None;
    }
    let body = s.trim_end_matches('=');
    let pad = s.len() - body.len();
    let ok = pad <= 2
        && !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    ok.then_some(s)
}

fn inline_data(mime_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime_type, "data": data}})
}

/// The `contents` array (pi's `convertMessages`).
pub fn convert_contents(model: &Model, ctx: &LlmContext) -> Vec<Value> {
    let mut messages = ctx.messages.clone();
    if requires_tool_call_id(&model.id) {
        normalize_tool_call_ids(&mut messages, model, |id| {
            let mut s: String = id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c.to_string()
                    } else {
                        "_".repeat(c.len_utf16())
                    }
                })
                .collect();
            s.truncate(64);
            s
        });
    }
    let include_id = requires_tool_call_id(&model.id);
    let mut contents: Vec<Value> = Vec::new();
    for msg in &messages {
        match msg {
            LlmMessage::User { content, .. } => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(json!({"text": text})),
                        ContentBlock::Image { data, mime_type } => {
                            Some(inline_data(mime_type, data))
                        }
                        _ => None,
                    })
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                contents.push(json!({"parts": parts, "role": "user"}));
            }
            LlmMessage::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let mut parts = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text {
                            text,
                            text_signature,
                        } => {
                            let sig = valid_signature(text_signature.as_deref()).filter(|_| same);
                            if text.trim().is_empty() && sig.is_none() {
                                continue;
                            }
                            let mut p = json!({"text": text});
                            if let Some(s) = sig {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                        ContentBlock::Thinking {
                            thinking,
                            thinking_signature,
                            ..
                        } => {
                            if same {
                                let sig = valid_signature(thinking_signature.as_deref());
                                if thinking.trim().is_empty() && sig.is_none() {
                                    continue;
                                }
                                let mut p = json!({"text": thinking, "thought": true});
                                if let Some(s) = sig {
                                    p["thoughtSignature"] = json!(s);
                                }
                                parts.push(p);
                            } else if !thinking.trim().is_empty() {
                                parts.push(json!({"text": thinking}));
                            }
                        }
                        ContentBlock::ToolCall {
                            id,
                            name,
                            arguments,
                            thought_signature,
                        } => {
                            let sig =
                                valid_signature(thought_signature.as_deref()).filter(|_| same);
                            let mut call = Map::new();
                            call.insert("args".into(), arguments.clone());
                            if include_id {
                                call.insert("id".into(), json!(id));
                            }
                            call.insert("name".into(), json!(name));
                            let mut p = json!({"functionCall": call});
                            if let Some(s) = sig {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                        ContentBlock::Image { .. } => {}
                    }
                }
                if parts.is_empty() {
                    continue;
                }
                contents.push(json!({"parts": parts, "role": "model"}));
            }
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = text.join("\n");
                let images: Vec<Value> = if model.supports_images() {
                    content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image { data, mime_type } => {
                                Some(inline_data(mime_type, data))
                            }
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let has_text = !text.trim().is_empty();
                let has_images = !images.is_empty();
                let multimodal = supports_multimodal_function_response(&model.id);
                let value = if has_text {
                    text
                } else if has_images {
                    "(see attached image)".into()
                } else {
                    String::new()
                };
                let mut response = Map::new();
                response.insert("name".into(), json!(tool_name));
                response.insert(
                    "response".into(),
                    if *is_error {
                        json!({"error": value})
                    } else {
                        json!({"output": value})
                    },
                );
                if has_images && multimodal {
                    response.insert("parts".into(), Value::Array(images.clone()));
                }
                if include_id {
                    response.insert("id".into(), json!(tool_call_id));
                }
                let part = json!({"functionResponse": response});
                // All function responses of a turn go in one user message.
                let merged = match contents.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["parts"].as_array().is_some_and(|ps| {
                                ps.iter().any(|p| p.get("functionResponse").is_some())
                            }) =>
                    {
                        if let Some(ps) = last["parts"].as_array_mut() {
                            ps.push(part.clone());
                        }
                        true
                    }
                    _ => false,
                };
                if !merged {
                    contents.push(json!({"parts": [part], "role": "user"}));
                }
                if has_images && !multimodal {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
        }
    }
    contents
}

const SCHEMA_NAME_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
const SCHEMA_SUBSCHEMAS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// pi's `rewriteConstAsEnum`: Gemini ignores `const` in `parametersJsonSchema` but honours a
/// one-value `enum`, so string and number `const`s become `enum`s.
pub fn rewrite_const_as_enum(schema: &Value, is_name_map: bool) -> Value {
    match schema {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| rewrite_const_as_enum(i, false))
                .collect(),
        ),
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, v) in o {
                let v = if is_name_map || SCHEMA_SUBSCHEMAS.contains(&k.as_str()) {
                    rewrite_const_as_enum(v, false)
                } else if SCHEMA_NAME_MAPS.contains(&k.as_str()) {
                    rewrite_const_as_enum(v, true)
                } else {
                    v.clone()
                };
                out.insert(k.clone(), v);
            }
            if !is_name_map && !out.contains_key("enum") {
                if let Some(c) = out.get("const").cloned() {
                    if c.is_string() || c.is_number() {
                        out.shift_remove("const");
                        out.insert("enum".into(), json!([c]));
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// `tools: [{functionDeclarations: [...]}]`.
pub fn convert_tools(tools: &[Tool]) -> Value {
    let decls: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"name": t.name, "description": t.description,
                "parametersJsonSchema": rewrite_const_as_enum(&t.parameters, false)})
        })
        .collect();
    json!([{"functionDeclarations": decls}])
}

/// The request body (pi's `buildParams` as the SDK serializes it). `max_tokens` is the
/// already fitted output cap.
pub fn build_body(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    max_tokens: u64,
) -> Result<Value, String> {
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_contents(model, ctx)),
    );
    if !ctx.system_prompt.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": ctx.system_prompt}], "role": "user"}),
        );
    }
    if !ctx.tools.is_empty() {
        body.insert("tools".into(), convert_tools(&ctx.tools));
    }
    let mut config = Map::new();
    config.insert("maxOutputTokens".into(), json!(max_tokens));
    if let Some(tc) = thinking_config(model, opts)? {
        config.insert("thinkingConfig".into(), tc);
    }
    body.insert("generationConfig".into(), Value::Object(config));
    Ok(Value::Object(body))
}

/// `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`.
pub fn endpoint(model: &Model) -> String {
    let id = model.id.strip_prefix("models/").unwrap_or(&model.id);
    format!(
        "{}/models/{id}:streamGenerateContent?alt=sse",
        model.base_url.trim_end_matches('/')
    )
}

/// Content type, the API key, then the resolved provider/model headers.
pub fn request_headers(opts: &StreamOptions) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = &opts.api_key {
        h.push(("x-goog-api-key".into(), key.clone()));
    }
    h.extend(opts.headers.iter().cloned());
    h
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The reason phrase the SDK puts in a non-JSON error body.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// The error message of a non-2xx response, as the `@google/genai` SDK builds it: the JSON body
/// re-serialized (`{"error":{"code":429,"message":…,"status":…}}`), or for a non-JSON body
/// `{"error":{"message":<text>,"code":<status>,"status":<reason>}}`.
pub fn http_error_message(status: u16, content_type: Option<&str>, body: &str) -> String {
    let json_body = content_type.is_some_and(|c| c.contains("application/json"));
    if json_body {
        if let Ok(v) = serde_json::from_str::<Value>(body) {
            return js_stringify(&v);
        }
        // The SDK's `response.json()` would throw a SyntaxError here.
        return format!("{status} {body}");
    }
    js_stringify(&json!({"error": {"message": body, "code": status,
        "status": reason_phrase(status)}}))
}

/// An error object inside a stream chunk (`{"error":{"code":503,…}}`): the SDK's
/// `got status: <status>. <chunk JSON>`.
fn stream_chunk_error(chunk: &Value) -> Option<String> {
    let err = chunk.get("error").filter(|e| e.is_object())?;
    let code = err.get("code").and_then(Value::as_f64)?;
    if !(400.0..600.0).contains(&code) {
        return None;
    }
    let status = match err.get("status") {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_stringify(other),
    };
    Some(format!("got status: {status}. {}", js_stringify(chunk)))
}

/// pi's `mapStopReason` for a Gemini `finishReason`.
fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "STOP" => Ok(StopReason::Stop),
        "MAX_TOKENS" | "CONTINUATION" => Ok(StopReason::Length),
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => Ok(StopReason::Error),
        other => Err(format!("Unhandled stop reason: {other}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Stream chunks

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Current {
    Text,
    Thinking,
}

/// The state of one Gemini stream: the open text or thinking block.
#[derive(Debug, Default)]
pub struct GoogleStream {
    current: Option<(Current, usize)>,
}

fn u64_of(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(number_to_u64).unwrap_or(0)
}

impl GoogleStream {
    pub fn new() -> GoogleStream {
        GoogleStream::default()
    }

    /// Ends the open text or thinking block, if any.
    pub fn close_block(&mut self, out: &mut Output<'_>) {
        let Some((kind, index)) = self.current.take() else {
            return;
        };
        let event = match (kind, out.msg.content.get(index)) {
            (Current::Text, Some(ContentBlock::Text { text, .. })) => AssistantEvent::TextEnd {
                content_index: index,
                content: text.clone(),
            },
            (Current::Thinking, Some(ContentBlock::Thinking { thinking, .. })) => {
                AssistantEvent::ThinkingEnd {
                    content_index: index,
                    content: thinking.clone(),
                }
            }
            _ => return,
        };
        out.emit(event);
    }

    /// Handles one chunk (an SSE `data` payload). `Err` carries the error message that ends
    /// the stream.
    pub fn handle(
        &mut self,
        data: &str,
        model: &Model,
        out: &mut Output<'_>,
    ) -> Result<(), String> {
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| format!("exception parsing stream chunk {data}. SyntaxError: {e}"))?;
        if let Some(e) = stream_chunk_error(&chunk) {
            return Err(e);
        }
        if out.msg.response_id.as_deref().is_none_or(str::is_empty) {
            if let Some(id) = chunk
                .get("responseId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                out.msg.response_id = Some(id.to_owned());
            }
        }
        let candidate = chunk
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(parts) = candidate
            .and_then(|c| c.get("content"))
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
        {
            for part in parts {
                if let Some(text) = part.get("text").filter(|t| !t.is_null()) {
                    let text = match text {
                        Value::String(s) => s.clone(),
                        other => js_stringify(other),
                    };
                    self.text_part(part, &text, out);
                }
                if let Some(call) = part.get("functionCall").filter(|c| js_truthy(c)) {
                    self.function_call(part, call, out);
                }
            }
        }
        if let Some(reason) = candidate
            .and_then(|c| c.get("finishReason"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            out.msg.raw_stop_reason = Some(reason.to_owned());
            out.msg.stop_reason = map_finish_reason(reason)?;
            if out.msg.stop_reason == StopReason::Stop && out.msg.tool_calls().next().is_some() {
                out.msg.stop_reason = StopReason::ToolUse;
            }
        }
        if let Some(u) = chunk.get("usageMetadata").filter(|u| js_truthy(u)) {
            let prompt = u64_of(u, "promptTokenCount");
            let cached = u64_of(u, "cachedContentTokenCount");
            let thoughts = u64_of(u, "thoughtsTokenCount");
            out.msg.usage = Usage {
                input: prompt.saturating_sub(cached),
                output: u64_of(u, "candidatesTokenCount") + thoughts,
                cache_read: cached,
                cache_write: 0,
                reasoning: Some(thoughts),
                total_tokens: u64_of(u, "totalTokenCount"),
                ..Usage::default()
            };
            out.msg.usage.recompute_cost(model);
        }
        Ok(())
    }

    fn text_part(&mut self, part: &Value, text: &str, out: &mut Output<'_>) {
        let kind = if part.get("thought") == Some(&Value::Bool(true)) {
            Current::Thinking
        } else {
            Current::Text
        };
        if self.current.map(|(k, _)| k) != Some(kind) {
            self.close_block(out);
            let index = match kind {
                Current::Thinking => out.push_block(ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: false,
                }),
                Current::Text => out.push_block(ContentBlock::text("")),
            };
            self.current = Some((kind, index));
            out.emit(match kind {
                Current::Thinking => AssistantEvent::ThinkingStart {
                    content_index: index,
                },
                Current::Text => AssistantEvent::TextStart {
                    content_index: index,
                },
            });
        }
        let Some((_, index)) = self.current else {
            return;
        };
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        match out.msg.content.get_mut(index) {
            Some(ContentBlock::Thinking {
                thinking,
                thinking_signature,
                ..
            }) => {
                thinking.push_str(text);
                if let Some(s) = signature {
                    *thinking_signature = Some(s.to_owned());
                }
            }
            Some(ContentBlock::Text {
                text: t,
                text_signature,
            }) => {
                t.push_str(text);
                if let Some(s) = signature {
                    *text_signature = Some(s.to_owned());
                }
            }
            _ => return,
        }
        out.emit(match kind {
            Current::Thinking => AssistantEvent::ThinkingDelta {
                content_index: index,
                delta: text.to_owned(),
            },
            Current::Text => AssistantEvent::TextDelta {
                content_index: index,
                delta: text.to_owned(),
            },
        });
    }

    fn function_call(&mut self, part: &Value, call: &Value, out: &mut Output<'_>) {
        self.close_block(out);
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        let provided = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let duplicate = provided.is_some_and(|p| {
            out.msg
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall { id, .. } if id == p))
        });
        let id = match provided {
            Some(p) if !duplicate => p.to_owned(),
            _ => format!(
                "{name}_{}_{}",
                now_ms(),
                TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1
            ),
        };
        let arguments = match call.get("args") {
            None | Some(Value::Null) => json!({}),
            Some(a) => a.clone(),
        };
        let thought_signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let delta = js_stringify(&arguments);
        let block = ContentBlock::ToolCall {
            id: id.clone(),
            name: name.to_owned(),
            arguments,
            thought_signature,
        };
        let index = out.push_block(block.clone());
        out.emit(AssistantEvent::ToolcallStart {
            content_index: index,
            id,
            tool_name: name.to_owned(),
        });
        out.emit(AssistantEvent::ToolcallDelta {
            content_index: index,
            delta,
        });
        out.emit(AssistantEvent::ToolcallEnd {
            content_index: index,
            tool_call: block,
        });
    }

    /// After the body ended: closes the open block and checks the stop reason.
    pub fn finish(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        self.close_block(out);
        match out.msg.stop_reason {
            StopReason::Pending => Err(NO_FINISH_REASON.into()),
            StopReason::Error | StopReason::Aborted => Err(match &out.msg.raw_stop_reason {
                Some(r) => format!("Provider stopped with: {r}"),
                None => "An unknown error occurred".into(),
            }),
            _ => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The request

/// Streams one response from a `google-generative-ai` model (the dispatcher's adapter shape).
/// Never panics: failures become the returned message with `stopReason:"error"` /
/// `"aborted"`; `durationMs` / `thinkingLevel` are left to the dispatcher.
pub fn stream(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(StreamUpdate<'_>),
) -> AssistantMessage {
    let mut out = Output::new(model, on_event);
    let result = run(model, ctx, opts, cancel, &mut out);
    out.finish(result, cancel, &ABORT_TEXTS)
}

fn run(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    out: &mut Output<'_>,
) -> Result<(), Failure> {
    let has_key_header = opts
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("x-goog-api-key") && !v.trim().is_empty());
    if opts.api_key.as_deref().is_none_or(str::is_empty) && !has_key_header {
        return Err(Failure::Error(format!(
            "No API key for provider: {}",
            model.provider
        )));
    }
    let max_tokens = base_max_tokens(model, ctx, opts);
    let body = build_body(model, ctx, opts, max_tokens).map_err(Failure::Error)?;
    let request = HttpRequest {
        url: endpoint(model),
        headers: request_headers(opts),
        body: crate::util::to_js_vec(&body).unwrap_or_default(),
        idle_timeout: opts.idle_timeout,
    };
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    let response = post_streaming(request, cancel, out, ERROR_BODY_LIMIT, http_error_message)?;
    out.start();
    let mut state = GoogleStream::new();
    for event in SseParser::new(BufReader::new(response)) {
        let event = event.map_err(|e| read_failure(&e, cancel))?;
        if cancel.is_cancelled() {
            return Err(Failure::Aborted);
        }
        state
            .handle(&event.data, model, out)
            .map_err(Failure::Error)?;
    }
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    state.finish(out).map_err(Failure::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;

    fn model(id: &str) -> Model {
        Model {
            id: id.into(),
            name: id.into(),
            api: "google-generative-ai".into(),
            provider: "mockg".into(),
            base_url: "http://127.0.0.1:9/v1beta".into(),
            reasoning: true,
            input: vec!["text".into(), "image".into()],
            cost: ModelCost {
                input: 0.3,
                output: 2.5,
                cache_read: 0.075,
                cache_write: 0.0,
                tiers: None,
            },
            context_window: 1_000_000,
            max_tokens: 16_384,
            ..Model::default()
        }
    }

    fn gemini3() -> Model {
        let mut m = model("gemini-3-flash-preview");
        m.thinking_level_map = json!({"off": null, "minimal": "minimal", "low": "low",
            "medium": "medium", "high": "high", "xhigh": null, "max": null})
        .as_object()
        .cloned();
        m
    }

    fn opts(level: ThinkingLevel) -> StreamOptions {
        StreamOptions {
            thinking_level: level,
            ..StreamOptions::default()
        }
    }

    /// Runs canned chunks (one SSE `data` each) through the chunk handler.
    fn run_chunks(
        model: &Model,
        chunks: &[Value],
    ) -> (AssistantMessage, Vec<Value>, Result<(), String>) {
        let text: String = chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect();
        run_sse(model, &text)
    }

    fn run_sse(model: &Model, sse: &str) -> (AssistantMessage, Vec<Value>, Result<(), String>) {
        let mut events = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| match u {
            StreamUpdate::Start(_) => events.push(json!({"type": "start"})),
            StreamUpdate::Event(_, e) => events.push(e.to_wire()),
        };
        let mut out = Output::new(model, &mut cb);
        out.start();
        let mut state = GoogleStream::new();
        let mut result = Ok(());
        for ev in SseParser::new(sse.as_bytes()) {
            if let Err(e) = state.handle(&ev.unwrap().data, model, &mut out) {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            result = state.finish(&mut out);
        }
        let msg = out.msg;
        (msg, events, result)
    }

    fn parts(parts: Value) -> Value {
        json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
            "responseId": "resp_1"})
    }

    #[test]
    fn model_families() {
        // Checked against pi's `usesGoogleThinkingLevel` / `requiresToolCallId`.
        for (id, want) in [
            ("gemini-3-pro-preview", true),
            ("gemini-3.1-flash-lite", true),
            ("gemini-3.10-pro", true),
            ("gemini-3-ultra", false),
            ("gemini-4-argon", true),
            ("gemini-10-x", true),
            ("gemini-2.5-flash", false),
            ("gemini-flash-latest", true),
            ("gemma-4-31b-it", true),
            ("gemma4b", true),
            ("my-gemini-3-flash", true),
            ("gemini-3.-pro", false),
        ] {
            assert_eq!(uses_thinking_level(&model(id)), want, "{id}");
        }
        for (id, want) in [
            ("gemini-3-pro", true),
            ("gemini-live-3-x", true),
            ("gemini-2.5-pro", false),
            ("claude-x", true),
            ("gpt-oss-1", true),
            ("other", false),
        ] {
            assert_eq!(requires_tool_call_id(id), want, "{id}");
        }
        assert!(supports_multimodal_function_response("gemini-3-pro"));
        assert!(!supports_multimodal_function_response("gemini-2.5-pro"));
        assert!(supports_multimodal_function_response("claude-x"));
    }

    #[test]
    fn thinking_configs() {
        let cfg = |m: &Model, level| thinking_config(m, &opts(level));
        assert_eq!(
            cfg(&model("gemini-2.5-flash"), ThinkingLevel::Medium),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 8192})
            ))
        );
        assert_eq!(
            cfg(&model("gemini-2.5-pro"), ThinkingLevel::High),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 32768})
            ))
        );
        // xhigh clamps to high.
        assert_eq!(
            cfg(&model("gemini-2.5-flash-lite"), ThinkingLevel::Xhigh),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 24576})
            ))
        );
        assert_eq!(
            cfg(&model("gemini-2.5-flash-lite"), ThinkingLevel::Minimal),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 512})
            ))
        );
        assert_eq!(
            cfg(&model("gemini-2.0-flash"), ThinkingLevel::Low),
            Ok(Some(json!({"includeThoughts": true, "thinkingBudget": -1})))
        );
        assert_eq!(
            cfg(&model("gemini-2.5-flash"), ThinkingLevel::Off),
            Ok(Some(json!({"thinkingBudget": 0})))
        );
        // A user budget overrides the family table.
        let custom = StreamOptions {
            thinking_budgets: ThinkingBudgets {
                medium: 5000,
                ..ThinkingBudgets::default()
            },
            ..opts(ThinkingLevel::Medium)
        };
        assert_eq!(
            thinking_config(&model("gemini-2.5-pro"), &custom),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 5000})
            ))
        );
        // Gemini 3: levels; off falls back to the lowest supported level.
        assert_eq!(
            cfg(&gemini3(), ThinkingLevel::Low),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingLevel": "LOW"})
            ))
        );
        assert_eq!(
            cfg(&gemini3(), ThinkingLevel::Off),
            Ok(Some(json!({"thinkingLevel": "MINIMAL"})))
        );
        let mut gemma = model("gemma-4-31b-it");
        gemma.thinking_level_map = json!({"off": null, "minimal": "MINIMAL", "low": null,
            "medium": null, "high": "HIGH"})
        .as_object()
        .cloned();
        assert_eq!(
            cfg(&gemma, ThinkingLevel::Medium),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingLevel": "HIGH"})
            ))
        );
        let mut bad = gemini3();
        if let Some(m) = bad.thinking_level_map.as_mut() {
            m.insert("xhigh".into(), json!("xhigh"));
        }
        assert_eq!(
            cfg(&bad, ThinkingLevel::Xhigh),
            Err("Unsupported Google thinking level mapping for mockg/gemini-3-flash-preview: xhigh -> xhigh".into())
        );
        let mut plain = model("gemini-2.5-flash");
        plain.reasoning = false;
        assert_eq!(cfg(&plain, ThinkingLevel::High), Ok(None));
    }

    #[test]
    fn const_becomes_enum() {
        // pi's convertTools output for the same schema.
        let schema = json!({"type": "object", "properties": {"const": {"const": "x"},
            "a": {"const": 1, "type": "number"}, "b": {"anyOf": [{"const": "p"}, {"const": true}]},
            "c": {"enum": ["z"], "const": "z"}}, "const": "top", "$defs": {"d": {"const": "q"}}});
        let tools = convert_tools(&[Tool {
            name: "t".into(),
            description: "d".into(),
            parameters: schema,
        }]);
        assert_eq!(
            serde_json::to_string(&tools).unwrap(),
            r#"[{"functionDeclarations":[{"name":"t","description":"d","parametersJsonSchema":{"type":"object","properties":{"const":{"enum":["x"]},"a":{"type":"number","enum":[1]},"b":{"anyOf":[{"enum":["p"]},{"const":true}]},"c":{"enum":["z"],"const":"z"}},"$defs":{"d":{"enum":["q"]}},"enum":["top"]}}]}]"#
        );
    }

    #[test]
    fn signatures_must_be_base64() {
        assert_eq!(valid_signature(Some("U0lH")), Some("U0lH"));
        assert_eq!(valid_signature(Some("VFNJRw==")), Some("VFNJRw=="));
        assert_eq!(valid_signature(Some("not base64!")), None);
        assert_eq!(valid_signature(Some("abc")), None);
        assert_eq!(valid_signature(Some("a===")), None);
        assert_eq!(valid_signature(Some("")), None);
        assert_eq!(valid_signature(None), None);
    }

    /// pi's g2 capture: a Gemini 3 conversation with thought signatures, tool results with
    /// images and a foreign assistant turn.
    #[test]
    fn history_matches_pi() {
        let mut m = gemini3();
        m.provider = "mockg".into();
        let a1 = AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "Hmm.".into(),
                    thinking_signature: Some("U0lH".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: Some("not base64!".into()),
                    redacted: false,
                },
                ContentBlock::Text {
                    text: "Listing.".into(),
                    text_signature: Some("VFNJRw==".into()),
                },
                ContentBlock::text("  "),
                ContentBlock::ToolCall {
                    id: "call 1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                    thought_signature: Some("Q0FMTA==".into()),
                },
                ContentBlock::ToolCall {
                    id: "call_2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "x.png"}),
                    thought_signature: None,
                },
            ],
            api: "google-generative-ai".into(),
            provider: "mockg".into(),
            model: "gemini-3-flash-preview".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        // After transformMessages: the foreign turn lost its thinking and signatures.
        let foreign = AssistantMessage {
            content: vec![
                ContentBlock::text("Checking."),
                ContentBlock::ToolCall {
                    id: "toolu|01".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "pwd"}),
                    thought_signature: None,
                },
            ],
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            model: "claude".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            system_prompt: "Be brief.".into(),
            messages: vec![
                LlmMessage::User {
                    content: vec![
                        ContentBlock::text("hi"),
                        ContentBlock::Image {
                            data: "AAAA".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    timestamp: 1,
                },
                LlmMessage::Assistant(a1),
                LlmMessage::ToolResult {
                    tool_call_id: "call 1".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::text("file.txt\n")],
                    is_error: false,
                },
                LlmMessage::ToolResult {
                    tool_call_id: "call_2".into(),
                    tool_name: "read".into(),
                    content: vec![ContentBlock::Image {
                        data: "CCCC".into(),
                        mime_type: "image/png".into(),
                    }],
                    is_error: true,
                },
                LlmMessage::Assistant(foreign),
                LlmMessage::ToolResult {
                    tool_call_id: "toolu|01".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::text("/")],
                    is_error: false,
                },
                LlmMessage::User {
                    content: vec![ContentBlock::text("next")],
                    timestamp: 9,
                },
            ],
            tools: Vec::new(),
        };
        let body = build_body(&m, &ctx, &opts(ThinkingLevel::High), 16_384).unwrap();
        let want: Value = serde_json::from_str(
            r#"{"contents": [{"parts": [{"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}], "role": "user"}, {"parts": [{"text": "Hmm.", "thought": true, "thoughtSignature": "U0lH"}, {"text": "Listing.", "thoughtSignature": "VFNJRw=="}, {"functionCall": {"args": {"command": "ls"}, "id": "call 1", "name": "bash"}, "thoughtSignature": "Q0FMTA=="}, {"functionCall": {"args": {"path": "x.png"}, "id": "call_2", "name": "read"}}], "role": "model"}, {"parts": [{"functionResponse": {"name": "bash", "response": {"output": "file.txt\n"}, "id": "call 1"}}, {"functionResponse": {"name": "read", "response": {"error": "(see attached image)"}, "parts": [{"inlineData": {"mimeType": "image/png", "data": "CCCC"}}], "id": "call_2"}}], "role": "user"}, {"parts": [{"text": "Checking."}, {"functionCall": {"args": {"command": "pwd"}, "id": "toolu_01", "name": "bash"}}], "role": "model"}, {"parts": [{"functionResponse": {"name": "bash", "response": {"output": "/"}, "id": "toolu_01"}}], "role": "user"}, {"parts": [{"text": "next"}], "role": "user"}], "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"}, "generationConfig": {"maxOutputTokens": 16384, "thinkingConfig": {"includeThoughts": true, "thinkingLevel": "HIGH"}}}"#,
        )
        .unwrap();
        assert_eq!(body, want);
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            serde_json::to_string(&want).unwrap(),
            "key order"
        );
    }

    #[test]
    fn older_models_get_tool_images_in_a_user_turn() {
        let m = model("gemini-2.5-flash");
        let ctx = LlmContext {
            system_prompt: String::new(),
            messages: vec![LlmMessage::ToolResult {
                tool_call_id: "c1".into(),
                tool_name: "read".into(),
                content: vec![
                    ContentBlock::text("an image"),
                    ContentBlock::Image {
                        data: "CCCC".into(),
                        mime_type: "image/png".into(),
                    },
                ],
                is_error: false,
            }],
            tools: Vec::new(),
        };
        assert_eq!(
            Value::Array(convert_contents(&m, &ctx)),
            json!([
                {"parts": [{"functionResponse": {"name": "read",
                    "response": {"output": "an image"}}}], "role": "user"},
                {"parts": [{"text": "Tool result image:"},
                    {"inlineData": {"mimeType": "image/png", "data": "CCCC"}}], "role": "user"}
            ])
        );
        let body = build_body(&m, &ctx, &opts(ThinkingLevel::Off), 100).unwrap();
        assert!(body.get("systemInstruction").is_none());
        assert_eq!(
            body["generationConfig"],
            json!({"maxOutputTokens": 100, "thinkingConfig": {"thinkingBudget": 0}})
        );
        assert_eq!(
            endpoint(&m),
            "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request_headers(&StreamOptions {
                api_key: Some("k".into()),
                ..StreamOptions::default()
            }),
            [
                ("content-type".to_string(), "application/json".to_string()),
                ("x-goog-api-key".to_string(), "k".to_string())
            ]
        );
    }

    /// pi's g1 capture: thought parts, text, a function call, usage.
    #[test]
    fn thought_text_and_function_call() {
        let m = model("gemini-2.5-flash");
        let chunks = [
            parts(json!([{"text": "Let m", "thought": true}])),
            parts(json!([{"text": "e think.", "thought": true, "thoughtSignature": "U0lH"}])),
            parts(json!([{"text": "Runn"}])),
            parts(json!([{"text": "ing it."}])),
            parts(
                json!([{"functionCall": {"name": "bash", "args": {"command": "echo hi"},
                "id": "call_1"}, "thoughtSignature": "Q0FMTA=="}]),
            ),
            json!({"candidates": [{"content": {"parts": [], "role": "model"},
                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 130, "candidatesTokenCount": 15,
                    "thoughtsTokenCount": 5, "cachedContentTokenCount": 30,
                    "totalTokenCount": 150}, "responseId": "resp_1"}),
        ];
        let (msg, evs, result) = run_chunks(&m, &chunks);
        assert_eq!(result, Ok(()));
        assert_eq!(
            Value::Array(evs),
            json!([
                {"type": "start"},
                {"type": "thinking_start", "contentIndex": 0},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "Let m"},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "e think."},
                {"type": "thinking_end", "contentIndex": 0, "content": "Let me think."},
                {"type": "text_start", "contentIndex": 1},
                {"type": "text_delta", "contentIndex": 1, "delta": "Runn"},
                {"type": "text_delta", "contentIndex": 1, "delta": "ing it."},
                {"type": "text_end", "contentIndex": 1, "content": "Running it."},
                {"type": "toolcall_start", "contentIndex": 2, "id": "call_1", "toolName": "bash"},
                {"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"command\":\"echo hi\"}"},
                {"type": "toolcall_end", "contentIndex": 2, "toolCall": {"type": "toolCall",
                    "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"},
                    "thoughtSignature": "Q0FMTA=="}}
            ])
        );
        let v = msg.to_value();
        assert_eq!(
            v["content"],
            json!([{"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "U0lH"},
                {"type": "text", "text": "Running it."},
                {"type": "toolCall", "id": "call_1", "name": "bash",
                    "arguments": {"command": "echo hi"}, "thoughtSignature": "Q0FMTA=="}])
        );
        // pi's numbers for this usage on gemini-2.5-flash rates.
        assert_eq!(
            v["usage"],
            json!({"input": 100, "output": 20, "cacheRead": 30, "cacheWrite": 0, "reasoning": 5,
                "totalTokens": 150, "cost": {"input": 2.9999999999999997e-05, "output": 5e-05,
                    "cacheRead": 2.25e-06, "cacheWrite": 0, "total": 8.225e-05,
                    "totalFromProvider": false}})
        );
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(msg.raw_stop_reason.as_deref(), Some("STOP"));
        assert_eq!(msg.response_id.as_deref(), Some("resp_1"));
    }

    #[test]
    fn generated_and_duplicate_tool_call_ids() {
        let m = model("gemini-2.5-flash");
        let call = |id: Option<&str>| {
            let mut c = json!({"name": "bash", "args": {"command": "a"}});
            if let Some(id) = id {
                c["id"] = json!(id);
            }
            json!({"functionCall": c})
        };
        let chunks = [
            parts(json!([call(None), call(Some("x")), call(Some("x")), {"text": "after"}])),
            json!({"candidates": [{"finishReason": "STOP"}]}),
        ];
        let (msg, evs, result) = run_chunks(&m, &chunks);
        assert_eq!(result, Ok(()));
        let ids: Vec<String> = msg
            .tool_calls()
            .map(|b| match b {
                ContentBlock::ToolCall { id, .. } => id.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert!(ids[0].starts_with("bash_"), "{ids:?}");
        assert_eq!(ids[0].split('_').count(), 3);
        assert_eq!(ids[1], "x");
        assert!(ids[2].starts_with("bash_") && ids[2] != ids[0], "{ids:?}");
        assert_eq!(msg.content.len(), 4);
        assert_eq!(evs.last().unwrap()["type"], "text_end");
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        // No usage reported: the usage stays empty (unpriced).
        assert_eq!(msg.usage, Usage::empty());
    }

    #[test]
    fn finish_reasons_and_stream_errors() {
        let m = model("gemini-2.5-flash");
        let finish = |reason: &str| {
            run_chunks(
                &m,
                &[
                    parts(json!([{"text": "x"}])),
                    json!({"candidates": [{"finishReason": reason}]}),
                ],
            )
        };
        let (msg, _, r) = finish("MAX_TOKENS");
        assert_eq!((r, msg.stop_reason), (Ok(()), StopReason::Length));
        let (msg, _, r) = finish("SAFETY");
        assert_eq!(r, Err("Provider stopped with: SAFETY".into()));
        assert_eq!(msg.raw_stop_reason.as_deref(), Some("SAFETY"));
        let (_, _, r) = finish("NEW_REASON");
        assert_eq!(r, Err("Unhandled stop reason: NEW_REASON".into()));
        // No finish reason.
        let (msg, evs, r) = run_chunks(&m, &[parts(json!([{"text": "Hel"}]))]);
        assert_eq!(r, Err(NO_FINISH_REASON.into()));
        assert_eq!(msg.text(), "Hel");
        assert_eq!(evs.last().unwrap()["type"], "text_end");
        // An error chunk.
        let (_, _, r) = run_chunks(
            &m,
            &[json!({"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}})],
        );
        assert_eq!(
            r,
            Err(r#"got status: UNAVAILABLE. {"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}"#.into())
        );
        // An error object without an HTTP code is just a chunk.
        let (_, _, r) = run_chunks(&m, &[json!({"error": {"message": "x"}})]);
        assert_eq!(r, Err(NO_FINISH_REASON.into()));
    }

    #[test]
    fn http_errors_match_pi() {
        assert_eq!(
            http_error_message(
                429,
                Some("application/json"),
                r#"{"error": {"code": 429, "message": "Rate limited", "status": "RESOURCE_EXHAUSTED"}}"#
            ),
            r#"{"error":{"code":429,"message":"Rate limited","status":"RESOURCE_EXHAUSTED"}}"#
        );
        assert_eq!(
            http_error_message(500, Some("text/plain"), "upstream exploded"),
            r#"{"error":{"message":"upstream exploded","code":500,"status":"Internal Server Error"}}"#
        );
    }
}
