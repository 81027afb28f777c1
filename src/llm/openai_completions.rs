//! The OpenAI Chat Completions API (`openai-completions`, providers.md §3), including the
//! compat switches of OpenAI-compatible hosts (OpenRouter, Groq, xAI, DeepSeek, Mistral, z.ai,
//! local servers, …).

use std::io::BufReader;

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::http::{describe_read_error, HttpRequest};
use super::model::Model;
use super::request::{merge_sampling_params, post_streaming};
use super::sse::SseParser;
use super::stream::{
    base_max_tokens, clamp_thinking_budget_to_answer_room, effective_thinking_level, js_stringify,
    parse_error_body, sdk_status_message, thinking_budget_for_level, AbortTexts, Failure, Output,
    StreamUpdate, ToolArgs,
};
use super::thinking::ThinkingLevel;
use super::types::{
    AssistantEvent, AssistantMessage, CacheRetention, ContentBlock, LlmContext, LlmMessage,
    StopReason, StreamOptions, Tool, Usage,
};
use crate::cancel::CancelToken;

/// How an aborted request is reported (the OpenAI SDK's texts, as pi 1.6.0 surfaces them).
const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "Request aborted",
    before_response: "Request aborted",
    streaming: "Request was aborted",
};

/// The largest error body quoted in an error message (pi's `MAX_PROVIDER_ERROR_BODY_CHARS`).
const MAX_ERROR_BODY_CHARS: usize = 4000;
/// How much of a non-success response body is read for the error message.
const ERROR_BODY_LIMIT: usize = 4 << 20;

/// Where the thinking level goes in the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThinkingFormat {
    /// `reasoning_effort` (OpenAI style).
    OpenAi,
    /// `reasoning: {effort}` (OpenRouter).
    OpenRouter,
    /// `thinking: {type}` + `reasoning_effort` (DeepSeek).
    DeepSeek,
    /// `thinking: {type, clear_thinking}` (z.ai).
    Zai,
    /// `enable_thinking` (Qwen).
    Qwen,
    /// `chat_template_kwargs: {enable_thinking, preserve_thinking}`.
    QwenChatTemplate,
    /// `reasoning: {enabled}` (Together).
    Together,
    /// `thinking: "<level>"`.
    StringThinking,
    /// Anything else: no thinking parameter.
    Other(String),
}

impl ThinkingFormat {
    fn parse(s: &str) -> ThinkingFormat {
        match s {
            "openai" => ThinkingFormat::OpenAi,
            "openrouter" => ThinkingFormat::OpenRouter,
            "deepseek" => ThinkingFormat::DeepSeek,
            "zai" => ThinkingFormat::Zai,
            "qwen" => ThinkingFormat::Qwen,
            "qwen-chat-template" => ThinkingFormat::QwenChatTemplate,
            "together" => ThinkingFormat::Together,
            "string-thinking" => ThinkingFormat::StringThinking,
            other => ThinkingFormat::Other(other.to_owned()),
        }
    }
}

/// The resolved compat switches: auto-detected from provider and base URL (pi's `detectCompat`),
/// then overridden by `model.compat`.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionsCompat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub supports_usage_in_streaming: bool,
    pub supports_finish_reason: bool,
    /// `"max_tokens"` or `"max_completion_tokens"`.
    pub max_tokens_field: String,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_non_null_assistant_content: bool,
    pub requires_tools_with_tool_history: bool,
    pub requires_thinking_as_text: bool,
    pub requires_reasoning_content_on_assistant_messages: bool,
    pub thinking_format: ThinkingFormat,
    pub supports_strict_mode: bool,
    /// `"anthropic"` for Anthropic models behind OpenRouter.
    pub cache_control_format: Option<String>,
    pub supports_long_cache_retention: bool,
    pub send_session_affinity_headers: bool,
    pub session_affinity_format: String,
    pub zai_tool_stream: bool,
}

impl CompletionsCompat {
    pub fn of(model: &Model) -> CompletionsCompat {
        let provider = model.provider.as_str();
        let base = model.base_url.as_str();
        let is_zai = provider == "zai"
            || provider == "zai-coding-cn"
            || base.contains("api.z.ai")
            || base.contains("open.bigmodel.cn");
        let is_together = provider == "together"
            || base.contains("api.together.ai")
            || base.contains("api.together.xyz");
        let is_moonshot = provider == "moonshotai"
            || provider == "moonshotai-cn"
            || base.contains("api.moonshot.");
        let is_openrouter = provider == "openrouter" || base.contains("openrouter.ai");
        let is_cf_workers =
            provider == "cloudflare-workers-ai" || base.contains("api.cloudflare.com");
        let is_cf_gateway =
            provider == "cloudflare-ai-gateway" || base.contains("gateway.ai.cloudflare.com");
        let is_nvidia = provider == "nvidia" || base.contains("integrate.api.nvidia.com");
        let is_ant_ling = provider == "ant-ling" || base.contains("api.ant-ling.com");
        let is_cerebras = provider == "cerebras" || base.contains("cerebras.ai");
        let is_deepseek =
            provider == "deepseek" || base.to_ascii_lowercase().contains("deepseek.com");
        let is_grok = provider == "xai" || base.contains("api.x.ai");
        let is_non_standard = is_nvidia
            || is_cerebras
            || is_grok
            || is_together
            || base.contains("chutes.ai")
            || is_deepseek
            || is_zai
            || is_moonshot
            || provider == "opencode"
            || base.contains("opencode.ai")
            || is_cf_workers
            || is_cf_gateway
            || is_ant_ling;
        let use_max_tokens = base.contains("chutes.ai")
            || is_deepseek
            || is_moonshot
            || is_cf_gateway
            || is_together
            || is_nvidia
            || is_ant_ling
            || is_zai;
        let is_openai = provider == "openai" || base.contains("api.openai.com");
        let detected_format = if is_deepseek {
            "deepseek"
        } else if is_zai {
            "zai"
        } else if is_together {
            "together"
        } else if is_ant_ling {
            "ant-ling"
        } else if is_openrouter {
            "openrouter"
        } else {
            "openai"
        };
        let c = model.compat.as_ref();
        let b = |k: &str, d: bool| {
            c.and_then(|m| m.get(k))
                .and_then(Value::as_bool)
                .unwrap_or(d)
        };
        let s = |k: &str| {
            c.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        CompletionsCompat {
            supports_store: b("supportsStore", !is_non_standard),
            supports_developer_role: b("supportsDeveloperRole", is_openai),
            supports_reasoning_effort: b(
                "supportsReasoningEffort",
                !is_grok
                    && !is_zai
                    && !is_moonshot
                    && !is_together
                    && !is_cf_gateway
                    && !is_nvidia
                    && !is_ant_ling,
            ),
            supports_usage_in_streaming: b("supportsUsageInStreaming", true),
            supports_finish_reason: b("supportsFinishReason", true),
            max_tokens_field: s("maxTokensField").unwrap_or_else(|| {
                if use_max_tokens {
                    "max_tokens".into()
                } else {
                    "max_completion_tokens".into()
                }
            }),
            requires_tool_result_name: b("requiresToolResultName", false),
            requires_assistant_after_tool_result: b("requiresAssistantAfterToolResult", false),
            requires_non_null_assistant_content: b("requiresNonNullAssistantContent", false),
            requires_tools_with_tool_history: b("requiresToolsWithToolHistory", false),
            requires_thinking_as_text: b("requiresThinkingAsText", false),
            requires_reasoning_content_on_assistant_messages: b(
                "requiresReasoningContentOnAssistantMessages",
                is_deepseek,
            ),
            thinking_format: ThinkingFormat::parse(
                &s("thinkingFormat").unwrap_or_else(|| detected_format.into()),
            ),
            supports_strict_mode: b("supportsStrictMode", false),
            cache_control_format: s("cacheControlFormat").or_else(|| {
                (provider == "openrouter" && model.id.starts_with("anthropic/"))
                    .then(|| "anthropic".to_owned())
            }),
            supports_long_cache_retention: b(
                "supportsLongCacheRetention",
                !(is_together || is_cf_workers || is_cf_gateway || is_nvidia || is_ant_ling),
            ),
            send_session_affinity_headers: b("sendSessionAffinityHeaders", is_openrouter),
            session_affinity_format: s("sessionAffinityFormat").unwrap_or_else(|| {
                if is_openrouter {
                    "openrouter".into()
                } else {
                    "openai".into()
                }
            }),
            zai_tool_stream: b("zaiToolStream", false),
        }
    }
}

/// A built request: where to send it, its headers and its JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case(name) && !v.trim().is_empty())
}

fn model_headers(model: &Model) -> Vec<(String, String)> {
    model
        .headers
        .iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect()
}

/// Chat Completions tool-call ids: Responses-style `call|item` ids are joined and sanitized
/// (at most 40 characters); OpenAI's own ids are cut to 40.
fn normalize_id_for(model: &Model) -> impl Fn(&str) -> String + '_ {
    move |id: &str| {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        if let Some((call, item)) = id.split_once('|') {
            let call_id = clean(call);
            let item_id = clean(item);
            let combined = if item_id.is_empty() {
                call_id.clone()
            } else {
                format!("{call_id}_{item_id}")
            };
            if combined.len() <= 40 {
                return combined;
            }
            let hash = short_hash(id);
            let prefix: String = call_id
                .chars()
                .take(40usize.saturating_sub(9).max(1))
                .collect();
            return format!("{prefix}_{hash}");
        }
        if model.provider == "openai" && id.chars().count() > 40 {
            return id.chars().take(40).collect();
        }
        id.to_owned()
    }
}

/// A short stable hash (8 hex digits, FNV-1a) for shortened tool-call ids.
fn short_hash(s: &str) -> String {
    let mut h: u32 = 0x811c9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    format!("{h:08x}")
}

fn text_blocks(content: &[ContentBlock]) -> impl Iterator<Item = &str> {
    content.iter().filter_map(|b| match b {
        ContentBlock::Text { text, .. } => Some(text.as_str()),
        _ => None,
    })
}

fn image_url(data: &str, mime_type: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

fn convert_messages(
    model: &Model,
    ctx: &LlmContext,
    messages: &[LlmMessage],
    compat: &CompletionsCompat,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    if !ctx.system_prompt.is_empty() {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": ctx.system_prompt}));
    }
    let mut last_was_tool_result = false;
    let mut i = 0;
    while i < messages.len() {
        let msg = &messages[i];
        if compat.requires_assistant_after_tool_result
            && last_was_tool_result
            && matches!(msg, LlmMessage::User { .. })
        {
            out.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
        }
        match msg {
            LlmMessage::User { content, .. } => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } if !text.is_empty() => {
                            Some(json!({"type": "text", "text": text}))
                        }
                        ContentBlock::Image { data, mime_type } => Some(image_url(data, mime_type)),
                        _ => None,
                    })
                    .collect();
                last_was_tool_result = false;
                if parts.is_empty() {
                    i += 1;
                    continue;
                }
                out.push(json!({"role": "user", "content": parts}));
            }
            LlmMessage::Assistant(a) => {
                last_was_tool_result = false;
                let mut m = Map::new();
                m.insert("role".into(), Value::from("assistant"));
                m.insert(
                    "content".into(),
                    if compat.requires_assistant_after_tool_result
                        || compat.requires_non_null_assistant_content
                    {
                        Value::from("")
                    } else {
                        Value::Null
                    },
                );
                let texts: Vec<&str> = text_blocks(&a.content)
                    .filter(|t| !t.trim().is_empty())
                    .collect();
                let assistant_text = texts.concat();
                let thinking: Vec<(&str, Option<&str>)> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Thinking {
                            thinking,
                            thinking_signature,
                            ..
                        } if !thinking.trim().is_empty() => {
                            Some((thinking.as_str(), thinking_signature.as_deref()))
                        }
                        _ => None,
                    })
                    .collect();
                if !thinking.is_empty() {
                    if compat.requires_thinking_as_text {
                        let thinking_text = thinking
                            .iter()
                            .map(|(t, _)| *t)
                            .collect::<Vec<_>>()
                            .join("\n\n");
                        let mut parts = vec![json!({"type": "text", "text": thinking_text})];
                        parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
                        m.insert("content".into(), Value::Array(parts));
                    } else {
                        if !assistant_text.is_empty() {
                            m.insert("content".into(), Value::from(assistant_text.as_str()));
                        }
                        let mut signature = thinking[0].1.unwrap_or_default();
                        if model.provider == "opencode-go" && signature == "reasoning" {
                            signature = "reasoning_content";
                        }
                        if matches!(
                            signature,
                            "reasoning" | "reasoning_content" | "reasoning_text"
                        ) {
                            let joined = thinking
                                .iter()
                                .map(|(t, _)| *t)
                                .collect::<Vec<_>>()
                                .join("\n");
                            m.insert(signature.to_owned(), Value::from(joined));
                        }
                    }
                } else if !assistant_text.is_empty() {
                    m.insert("content".into(), Value::from(assistant_text.as_str()));
                }
                let calls: Vec<Value> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolCall {
                            id,
                            name,
                            arguments,
                            ..
                        } => Some(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": js_stringify(arguments)}
                        })),
                        _ => None,
                    })
                    .collect();
                let has_calls = !calls.is_empty();
                if has_calls {
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                if compat.requires_reasoning_content_on_assistant_messages
                    && model.reasoning
                    && !m.contains_key("reasoning_content")
                {
                    m.insert("reasoning_content".into(), Value::from(""));
                }
                let has_content = match m.get("content") {
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    _ => false,
                };
                if !has_content && !has_calls {
                    i += 1;
                    continue;
                }
                out.push(Value::Object(m));
            }
            LlmMessage::ToolResult { .. } => {
                let mut images: Vec<Value> = Vec::new();
                while let Some(LlmMessage::ToolResult {
                    tool_call_id,
                    tool_name,
                    content,
                    ..
                }) = messages.get(i)
                {
                    let text = text_blocks(content).collect::<Vec<_>>().join("\n");
                    let has_images = content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Image { .. }));
                    let text = if !text.trim().is_empty() {
                        text
                    } else if has_images {
                        "(see attached image)".into()
                    } else {
                        "(no tool output)".into()
                    };
                    let mut m = Map::new();
                    m.insert("role".into(), Value::from("tool"));
                    m.insert("content".into(), Value::from(text));
                    m.insert("tool_call_id".into(), Value::from(tool_call_id.as_str()));
                    if compat.requires_tool_result_name && !tool_name.is_empty() {
                        m.insert("name".into(), Value::from(tool_name.as_str()));
                    }
                    out.push(Value::Object(m));
                    if has_images && model.supports_images() {
                        for b in content {
                            if let ContentBlock::Image { data, mime_type } = b {
                                images.push(image_url(data, mime_type));
                            }
                        }
                    }
                    i += 1;
                }
                if !images.is_empty() {
                    if compat.requires_assistant_after_tool_result {
                        out.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                    }
                    let mut parts = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    parts.extend(images);
                    out.push(json!({"role": "user", "content": parts}));
                    last_was_tool_result = false;
                } else {
                    last_was_tool_result = true;
                }
                continue;
            }
        }
        i += 1;
    }
    out
}

fn convert_tools(tools: &[Tool], compat: &CompletionsCompat) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut f = Map::new();
            f.insert("name".into(), Value::from(t.name.as_str()));
            f.insert("description".into(), Value::from(t.description.as_str()));
            f.insert("parameters".into(), t.parameters.clone());
            if compat.supports_strict_mode {
                f.insert("strict".into(), Value::Bool(false));
            }
            json!({"type": "function", "function": Value::Object(f)})
        })
        .collect()
}

fn has_tool_history(messages: &[LlmMessage]) -> bool {
    messages.iter().any(|m| match m {
        LlmMessage::ToolResult { .. } => true,
        LlmMessage::Assistant(a) => a.tool_calls().next().is_some(),
        LlmMessage::User { .. } => false,
    })
}

/// Adds Anthropic cache markers (OpenRouter Anthropic models): the system message, the last
/// tool and the last conversation message with text.
fn apply_anthropic_cache_control(messages: &mut [Value], tools: Option<&mut Value>, cc: &Value) {
    fn mark_text(message: &mut Value, cc: &Value) -> bool {
        match message.get_mut("content") {
            Some(Value::String(s)) => {
                if s.is_empty() {
                    return false;
                }
                let text = std::mem::take(s);
                message["content"] = json!([{"type": "text", "text": text, "cache_control": cc}]);
                true
            }
            Some(Value::Array(parts)) => {
                for p in parts.iter_mut().rev() {
                    if p.get("type").and_then(Value::as_str) == Some("text") {
                        if let Value::Object(o) = p {
                            o.insert("cache_control".into(), cc.clone());
                        }
                        return true;
                    }
                }
                false
            }
            _ => false,
        }
    }
    if let Some(sys) = messages
        .iter_mut()
        .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
    {
        mark_text(sys, cc);
    }
    if let Some(Value::Array(t)) = tools {
        if let Some(Value::Object(last)) = t.last_mut() {
            last.insert("cache_control".into(), cc.clone());
        }
    }
    for m in messages.iter_mut().rev() {
        if matches!(m["role"].as_str(), Some("user" | "assistant" | "tool")) && mark_text(m, cc) {
            break;
        }
    }
}

/// The reasoning level sent (`None` = off).
fn reasoning_effort(model: &Model, opts: &StreamOptions) -> Option<ThinkingLevel> {
    match effective_thinking_level(model, opts.thinking_level) {
        ThinkingLevel::Off => None,
        l => Some(l),
    }
}

fn map_value<'a>(model: &'a Model, key: &str) -> Option<&'a Value> {
    model.thinking_level_map.as_ref()?.get(key)
}

/// `thinkingLevelMap[level] ?? level` (a `null` mapping counts as absent here, like `??`).
fn mapped_or_level(model: &Model, level: ThinkingLevel) -> Value {
    match map_value(model, level.as_str()) {
        Some(Value::Null) | None => Value::from(level.as_str()),
        Some(v) => v.clone(),
    }
}

/// Builds the request for `ctx` (providers.md §3). Fails only for a missing credential.
pub fn build_request(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
) -> Result<BuiltRequest, String> {
    let mh = model_headers(model);
    let api_key = match opts.api_key.as_deref().filter(|k| !k.is_empty()) {
        Some(k) => Some(k.to_owned()),
        None => {
            let header_auth = ["authorization", "cf-aig-authorization"]
                .iter()
                .any(|h| has_header(&mh, h) || has_header(&opts.headers, h));
            if !header_auth {
                return Err(format!("No API key for provider: {}", model.provider));
            }
            None
        }
    };
    let compat = CompletionsCompat::of(model);
    let mut messages_in = ctx.messages.clone();
    normalize_tool_call_ids(&mut messages_in, model, normalize_id_for(model));
    let mut messages = convert_messages(model, ctx, &messages_in, &compat);
    let effort = reasoning_effort(model, opts);

    let mut body = Map::new();
    body.insert("model".into(), Value::from(model.id.as_str()));
    body.insert("messages".into(), Value::Null); // placed here; filled below
    body.insert("stream".into(), Value::Bool(true));
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), Value::Bool(false));
    }
    let max_tokens = base_max_tokens(model, ctx, opts);
    if max_tokens > 0 {
        let field = if compat.max_tokens_field == "max_tokens" {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        body.insert(field.into(), Value::from(max_tokens));
    }
    let mut tools_value: Option<Value> = None;
    if !ctx.tools.is_empty() {
        tools_value = Some(Value::Array(convert_tools(&ctx.tools, &compat)));
    } else if compat.requires_tools_with_tool_history && has_tool_history(&messages_in) {
        tools_value = Some(json!([]));
    }
    let cache = if compat.cache_control_format.as_deref() == Some("anthropic")
        && opts.cache_retention != CacheRetention::None
    {
        Some(
            if opts.cache_retention == CacheRetention::Long && compat.supports_long_cache_retention
            {
                json!({"type": "ephemeral", "ttl": "1h"})
            } else {
                json!({"type": "ephemeral"})
            },
        )
    } else {
        None
    };
    if let Some(cc) = &cache {
        apply_anthropic_cache_control(&mut messages, tools_value.as_mut(), cc);
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(t) = tools_value {
        let non_empty = t.as_array().is_some_and(|a| !a.is_empty());
        body.insert("tools".into(), t);
        if non_empty && compat.zai_tool_stream {
            body.insert("tool_stream".into(), Value::Bool(true));
        }
    }

    if model.reasoning {
        match &compat.thinking_format {
            ThinkingFormat::Zai => {
                body.insert(
                    "thinking".into(),
                    if effort.is_some() {
                        json!({"type": "enabled", "clear_thinking": false})
                    } else {
                        json!({"type": "disabled"})
                    },
                );
                if let (Some(level), true) = (effort, compat.supports_reasoning_effort) {
                    let v = match map_value(model, level.as_str()) {
                        None => Value::from(level.as_str()),
                        Some(v) => v.clone(),
                    };
                    if v.is_string() {
                        body.insert("reasoning_effort".into(), v);
                    }
                }
            }
            ThinkingFormat::Qwen => {
                body.insert("enable_thinking".into(), Value::Bool(effort.is_some()));
                if let (Some(level), true) = (effort, compat.supports_reasoning_effort) {
                    let v = mapped_or_level(model, level);
                    if v.is_string() {
                        body.insert("reasoning_effort".into(), v);
                    }
                }
            }
            ThinkingFormat::QwenChatTemplate => {
                body.insert(
                    "chat_template_kwargs".into(),
                    json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
                );
            }
            ThinkingFormat::DeepSeek => {
                if effort.is_some() {
                    body.insert("thinking".into(), json!({"type": "enabled"}));
                } else if !matches!(map_value(model, "off"), Some(Value::Null)) {
                    body.insert("thinking".into(), json!({"type": "disabled"}));
                }
                if let (Some(level), true) = (effort, compat.supports_reasoning_effort) {
                    body.insert("reasoning_effort".into(), mapped_or_level(model, level));
                }
            }
            ThinkingFormat::OpenRouter => {
                if let Some(level) = effort {
                    body.insert(
                        "reasoning".into(),
                        json!({"effort": mapped_or_level(model, level)}),
                    );
                } else if !matches!(map_value(model, "off"), Some(Value::Null)) {
                    let off = match map_value(model, "off") {
                        Some(v) => v.clone(),
                        None => Value::from("none"),
                    };
                    body.insert("reasoning".into(), json!({ "effort": off }));
                }
            }
            ThinkingFormat::Together => {
                body.insert("reasoning".into(), json!({"enabled": effort.is_some()}));
                if let (Some(level), true) = (effort, compat.supports_reasoning_effort) {
                    body.insert("reasoning_effort".into(), mapped_or_level(model, level));
                }
            }
            ThinkingFormat::StringThinking => {
                if let Some(level) = effort {
                    body.insert("thinking".into(), mapped_or_level(model, level));
                } else if !matches!(map_value(model, "off"), Some(Value::Null)) {
                    let off = match map_value(model, "off") {
                        Some(v) => v.clone(),
                        None => Value::from("none"),
                    };
                    body.insert("thinking".into(), off);
                }
            }
            ThinkingFormat::OpenAi | ThinkingFormat::Other(_) => {
                if compat.supports_reasoning_effort {
                    match effort {
                        Some(level) => {
                            body.insert("reasoning_effort".into(), mapped_or_level(model, level));
                        }
                        None => {
                            if let Some(Value::String(off)) = map_value(model, "off") {
                                body.insert("reasoning_effort".into(), Value::from(off.as_str()));
                            }
                        }
                    }
                }
            }
        }
    }
    // `thinking_token_budget` when the host caps reasoning with a top-level field.
    let budget_field = model
        .compat
        .as_ref()
        .and_then(|c| c.get("thinkingTokenBudgetField"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            model
                .compat_bool("supportsThinkingTokenBudget")
                .unwrap_or(false)
                .then(|| "thinking_token_budget".to_owned())
        });
    if let (Some(field), Some(level), true) = (budget_field, effort, model.reasoning) {
        let budget = clamp_thinking_budget_to_answer_room(
            thinking_budget_for_level(level, &opts.thinking_budgets),
            max_tokens,
        );
        if budget > 0 {
            body.insert(field, Value::from(budget));
        }
    }
    // Sampling parameters last: model, then per-level values override named fields.
    merge_sampling_params(
        model,
        effective_thinking_level(model, opts.thinking_level),
        &mut body,
    );

    let mut headers: Vec<(String, String)> = Vec::new();
    headers.push(("accept".into(), "application/json".into()));
    headers.push(("content-type".into(), "application/json".into()));
    if let Some(key) = &api_key {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    headers.extend(mh);
    if let Some(sid) = opts
        .session_id
        .as_deref()
        .filter(|_| opts.cache_retention != CacheRetention::None)
    {
        if compat.send_session_affinity_headers {
            if compat.session_affinity_format == "openrouter" {
                headers.push(("x-session-id".into(), sid.to_owned()));
            } else {
                if compat.session_affinity_format == "openai" {
                    headers.push(("session_id".into(), sid.to_owned()));
                }
                headers.push(("x-client-request-id".into(), sid.to_owned()));
                headers.push(("x-session-affinity".into(), sid.to_owned()));
            }
        }
    }
    headers.extend(opts.headers.iter().cloned());

    let base = model.base_url.trim_end_matches('/');
    let base = if base.is_empty() {
        "https://api.openai.com/v1"
    } else {
        base
    };
    Ok(BuiltRequest {
        url: format!("{base}/chat/completions"),
        headers,
        body: Value::Object(body),
    })
}

/// The error text of an HTTP error status, as pi formats the OpenAI SDK's error
/// (`formatProviderError(normalizeProviderError(e))`): `"<status>: <error JSON>"` when the body
/// has an `error` object whose JSON is not already in the SDK message, else the SDK message
/// (`"<status> <message>"`).
pub fn http_error_message(status: u16, text: &str) -> String {
    let parsed = parse_error_body(text);
    let (error, raw) = match &parsed {
        Some(v) => (v.get("error").filter(|e| super::stream::js_truthy(e)), None),
        None => (None, Some(text)),
    };
    let message = sdk_status_message(status, error, raw);
    let body = error
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(|e| truncate_error_text(js_stringify(e).trim()));
    let mut out = match body {
        Some(b) if !message.contains(&b) => format!("{status}: {b}"),
        _ => message,
    };
    if let Some(raw_meta) = error
        .and_then(|e| e.get("metadata"))
        .and_then(|m| m.get("raw"))
        .filter(|r| super::stream::js_truthy(r))
    {
        let raw_text = match raw_meta {
            Value::String(s) => s.clone(),
            other => js_stringify(other),
        };
        if !out.contains(&raw_text) {
            out.push('\n');
            out.push_str(&raw_text);
        }
    }
    out
}

fn truncate_error_text(text: &str) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    if units.len() <= MAX_ERROR_BODY_CHARS {
        return text.to_owned();
    }
    let head = String::from_utf16_lossy(&units[..MAX_ERROR_BODY_CHARS]);
    format!(
        "{head}... [truncated {} chars]",
        units.len() - MAX_ERROR_BODY_CHARS
    )
}

/// Streams one response (see `stream::stream_assistant`).
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
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    let req = build_request(model, ctx, opts).map_err(Failure::Error)?;
    let body = crate::util::to_js_vec(&req.body).map_err(|e| Failure::Error(e.to_string()))?;
    let request = HttpRequest {
        url: req.url,
        headers: req.headers,
        body,
        idle_timeout: opts.idle_timeout,
    };
    let resp = post_streaming(request, cancel, out, ERROR_BODY_LIMIT, |status, _, text| {
        http_error_message(status, text)
    })?;
    out.start();
    let compat = CompletionsCompat::of(model);
    let mut state = StreamState::new(model);
    let parser = SseParser::new(BufReader::with_capacity(16 * 1024, resp)).dispatch_trailing(true);
    let mut failure: Option<Failure> = None;
    for item in parser {
        if cancel.is_cancelled() {
            break;
        }
        match item {
            Ok(ev) => {
                let data = ev.data.trim();
                if data == "[DONE]" {
                    break;
                }
                if data.is_empty() {
                    continue;
                }
                let chunk: Value = match serde_json::from_str(data) {
                    Ok(v) => v,
                    Err(e) => {
                        failure = Some(Failure::Error(format!(
                            "Could not parse streaming chunk: {e}; data={data}"
                        )));
                        break;
                    }
                };
                // An error object in the stream (OpenAI-compatible servers send these).
                if let Some(err) = chunk.get("error").filter(|e| e.is_object()) {
                    let msg = err
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| js_stringify(err));
                    failure = Some(Failure::Error(msg));
                    break;
                }
                state.handle_chunk(&chunk, out);
            }
            Err(e) => {
                if !cancel.is_cancelled() {
                    failure = Some(Failure::Error(describe_read_error(&e)));
                }
                break;
            }
        }
    }
    // Open blocks close at the end of the stream, in content order.
    state.finish_blocks(out);
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    if let Some(f) = failure {
        return Err(f);
    }
    if !state.has_finish_reason && !compat.supports_finish_reason {
        out.msg.stop_reason = if out.msg.tool_calls().next().is_some() {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
    }
    if out.msg.stop_reason == StopReason::Error {
        return Err(Failure::Error(
            out.msg
                .error_message
                .clone()
                .unwrap_or_else(|| "Provider returned an error stop reason".into()),
        ));
    }
    if (compat.supports_finish_reason && !state.has_finish_reason)
        || out.msg.stop_reason == StopReason::Pending
    {
        return Err(Failure::Error("Stream ended without finish_reason".into()));
    }
    Ok(())
}

/// A tool call being streamed.
struct OpenCall {
    stream_index: Option<u64>,
    id: String,
    content_index: usize,
    args: ToolArgs,
}

/// Per-response stream state.
pub struct StreamState<'m> {
    model: &'m Model,
    text_block: Option<usize>,
    thinking_block: Option<usize>,
    calls: Vec<OpenCall>,
    has_finish_reason: bool,
}

impl<'m> StreamState<'m> {
    pub fn new(model: &'m Model) -> StreamState<'m> {
        StreamState {
            model,
            text_block: None,
            thinking_block: None,
            calls: Vec::new(),
            has_finish_reason: false,
        }
    }

    /// Applies one chunk.
    pub fn handle_chunk(&mut self, chunk: &Value, out: &mut Output<'_>) {
        if out.msg.response_id.is_none() {
            if let Some(id) = chunk
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                out.msg.response_id = Some(id.to_owned());
            }
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            if !m.is_empty() && m != self.model.id && out.msg.response_model.is_none() {
                out.msg.response_model = Some(m.to_owned());
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            out.msg.usage = parse_usage(u, self.model);
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        if chunk.get("usage").is_none_or(|u| !u.is_object()) {
            if let Some(u) = choice.get("usage").filter(|u| u.is_object()) {
                out.msg.usage = parse_usage(u, self.model);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            if !reason.is_empty() {
                out.msg.raw_stop_reason = Some(reason.to_owned());
                let (stop, err) = map_finish_reason(reason);
                out.msg.stop_reason = stop;
                if let Some(e) = err {
                    out.msg.error_message = Some(e);
                }
                self.has_finish_reason = true;
            }
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return;
        };
        // Reasoning first: some proxies put reasoning and answer in one delta.
        for field in ["reasoning_content", "reasoning", "reasoning_text"] {
            if let Some(d) = delta
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                let signature = if self.model.provider == "opencode-go" && field == "reasoning" {
                    "reasoning_content"
                } else {
                    field
                };
                let ci = match self.thinking_block {
                    Some(ci) => ci,
                    None => {
                        let ci = out.push_block(ContentBlock::Thinking {
                            thinking: String::new(),
                            thinking_signature: Some(signature.to_owned()),
                            redacted: false,
                        });
                        self.thinking_block = Some(ci);
                        out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                        ci
                    }
                };
                if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get_mut(ci) {
                    thinking.push_str(d);
                }
                out.emit(AssistantEvent::ThinkingDelta {
                    content_index: ci,
                    delta: d.to_owned(),
                });
                break;
            }
        }
        if let Some(d) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            let ci = match self.text_block {
                Some(ci) => ci,
                None => {
                    let ci = out.push_block(ContentBlock::text(""));
                    self.text_block = Some(ci);
                    out.emit(AssistantEvent::TextStart { content_index: ci });
                    ci
                }
            };
            if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(ci) {
                text.push_str(d);
            }
            out.emit(AssistantEvent::TextDelta {
                content_index: ci,
                delta: d.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for tc in calls {
                self.handle_tool_call(tc, out);
            }
        }
    }

    fn handle_tool_call(&mut self, tc: &Value, out: &mut Output<'_>) {
        let stream_index = tc.get("index").and_then(Value::as_u64);
        let id = tc.get("id").and_then(Value::as_str).unwrap_or_default();
        let function = tc.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut pos =
            stream_index.and_then(|si| self.calls.iter().position(|c| c.stream_index == Some(si)));
        if pos.is_none() && !id.is_empty() {
            pos = self.calls.iter().position(|c| c.id == id);
        }
        let pos = match pos {
            Some(p) => p,
            None => {
                let ci = out.push_block(ContentBlock::ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: json!({}),
                    thought_signature: None,
                });
                self.calls.push(OpenCall {
                    stream_index,
                    id: id.to_owned(),
                    content_index: ci,
                    args: ToolArgs::new(),
                });
                out.emit(AssistantEvent::ToolcallStart {
                    content_index: ci,
                    id: id.to_owned(),
                    tool_name: name.to_owned(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if call.stream_index.is_none() {
            call.stream_index = stream_index;
        }
        if !id.is_empty() && call.id.is_empty() {
            call.id = id.to_owned();
        }
        let ci = call.content_index;
        let piece = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let partial = if piece.is_empty() {
            None
        } else {
            call.args.append(&piece)
        };
        if let Some(ContentBlock::ToolCall {
            id: block_id,
            name: block_name,
            arguments,
            ..
        }) = out.msg.content.get_mut(ci)
        {
            if block_id.is_empty() && !id.is_empty() {
                *block_id = id.to_owned();
            }
            if block_name.is_empty() && !name.is_empty() {
                *block_name = name.to_owned();
            }
            if let Some(p) = partial {
                *arguments = p;
            }
        }
        out.emit(AssistantEvent::ToolcallDelta {
            content_index: ci,
            delta: piece,
        });
    }

    /// Closes every block in content order (text and thinking close only here).
    pub fn finish_blocks(&mut self, out: &mut Output<'_>) {
        for ci in 0..out.msg.content.len() {
            match &mut out.msg.content[ci] {
                ContentBlock::Text { text, .. } => {
                    let content = text.clone();
                    out.emit(AssistantEvent::TextEnd {
                        content_index: ci,
                        content,
                    });
                }
                ContentBlock::Thinking { thinking, .. } => {
                    let content = thinking.clone();
                    out.emit(AssistantEvent::ThinkingEnd {
                        content_index: ci,
                        content,
                    });
                }
                block @ ContentBlock::ToolCall { .. } => {
                    if let Some(call) = self.calls.iter().find(|c| c.content_index == ci) {
                        if let ContentBlock::ToolCall { arguments, .. } = block {
                            *arguments = call.args.finish();
                        }
                    }
                    let tool_call = block.clone();
                    out.emit(AssistantEvent::ToolcallEnd {
                        content_index: ci,
                        tool_call,
                    });
                }
                ContentBlock::Image { .. } => {}
            }
        }
        self.calls.clear();
        self.text_block = None;
        self.thinking_block = None;
    }
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    cur.as_u64()
        .or_else(|| cur.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

/// pi's `parseChunkUsage` (providers.md §3).
pub fn parse_usage(raw: &Value, model: &Model) -> Usage {
    let prompt = u64_at(raw, &["prompt_tokens"]).unwrap_or(0);
    let cache_read = u64_at(raw, &["prompt_tokens_details", "cached_tokens"])
        .or_else(|| u64_at(raw, &["prompt_cache_hit_tokens"]))
        .or_else(|| u64_at(raw, &["cached_tokens"]))
        .unwrap_or(0);
    let cache_write = u64_at(raw, &["prompt_tokens_details", "cache_write_tokens"]).unwrap_or(0);
    let input = prompt
        .saturating_sub(cache_read)
        .saturating_sub(cache_write);
    let output = u64_at(raw, &["completion_tokens"]).unwrap_or(0);
    let reasoning = u64_at(raw, &["completion_tokens_details", "reasoning_tokens"])
        .filter(|r| *r > 0)
        .or_else(|| u64_at(raw, &["reasoning_tokens"]))
        .unwrap_or(0);
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: Some(reasoning),
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::default()
    };
    usage.recompute_cost(model);
    usage
}

/// Finish reasons → pi's stop reasons (providers.md §3).
fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "function_call" | "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::convert::build_llm_context;
    use crate::llm::model::ModelCost;

    /// pi 1.6.0's recorded transcripts: `shared/` sits beside the checkout (also in CI).
    const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/conformance/golden");

    fn read_golden(file: &str) -> String {
        let path = format!("{GOLDEN}/{file}");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("golden transcript {path} is needed by this test: {e}"))
    }

    fn mock_gpt() -> Model {
        Model {
            id: "mock-gpt".into(),
            name: "Mock GPT".into(),
            api: "openai-completions".into(),
            provider: "mockoai".into(),
            base_url: "http://127.0.0.1:18080/v1".into(),
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

    fn opts() -> StreamOptions {
        StreamOptions {
            api_key: Some("test-key".into()),
            ..StreamOptions::default()
        }
    }

    fn golden(name: &str) -> Option<(Vec<Value>, Value)> {
        let reqs: Vec<Value> = read_golden(&format!("{name}.requests.jsonl"))
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let text = read_golden(&format!("{name}.jsonl"));
        let system = text.lines().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let m = &v["record"]["message"];
            (v["record"]["type"] == "message_start" && m["role"] == "system").then(|| m.clone())
        })?;
        Some((reqs, system))
    }

    #[test]
    fn requests_match_golden() {
        let Some((reqs, system)) = golden("openai_chat") else {
            eprintln!("golden files not found; skipping");
            return;
        };
        let model = mock_gpt();
        let mut msgs = vec![
            system,
            json!({"role":"user","content":[{"type":"text","text":"Run echo via openai"}],"timestamp":1}),
        ];
        let ctx = build_llm_context(&msgs, &model);
        let req = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(req.body, reqs[0]["body"]);
        let keys: Vec<&str> = req
            .body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "model",
                "messages",
                "stream",
                "stream_options",
                "store",
                "max_completion_tokens",
                "tools"
            ]
        );
        assert_eq!(req.url, "http://127.0.0.1:18080/v1/chat/completions");
        assert!(req
            .headers
            .contains(&("authorization".into(), "Bearer test-key".into())));

        let assistant = AssistantMessage {
            content: vec![
                ContentBlock::text("Running it now."),
                ContentBlock::ToolCall {
                    id: "call_oai_01".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "echo from-openai"}),
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
        msgs.push(assistant.to_value());
        msgs.push(json!({"role":"toolResult","toolCallId":"call_oai_01","toolName":"bash","content":[{"type":"text","text":"from-openai\n"}],"isError":false,"timestamp":3}));
        let ctx = build_llm_context(&msgs, &model);
        let req = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(req.body, reqs[1]["body"]);
    }

    #[test]
    fn compat_detection() {
        let mut m = mock_gpt();
        let c = CompletionsCompat::of(&m);
        assert!(c.supports_store);
        assert!(!c.supports_developer_role);
        assert_eq!(c.thinking_format, ThinkingFormat::OpenAi);
        m.base_url = "https://openrouter.ai/api/v1".into();
        let c = CompletionsCompat::of(&m);
        assert_eq!(c.thinking_format, ThinkingFormat::OpenRouter);
        assert!(c.send_session_affinity_headers);
        m.base_url = "https://api.x.ai/v1".into();
        let c = CompletionsCompat::of(&m);
        assert!(!c.supports_store);
        assert!(!c.supports_reasoning_effort);
        m.base_url = "https://api.deepseek.com".into();
        let c = CompletionsCompat::of(&m);
        assert_eq!(c.max_tokens_field, "max_tokens");
        assert_eq!(c.thinking_format, ThinkingFormat::DeepSeek);
        assert!(c.requires_reasoning_content_on_assistant_messages);
        m.base_url = "https://api.openai.com/v1".into();
        assert!(CompletionsCompat::of(&m).supports_developer_role);
        m.compat = json!({"supportsDeveloperRole": false, "supportsStore": false, "maxTokensField": "max_tokens"})
            .as_object()
            .cloned();
        let c = CompletionsCompat::of(&m);
        assert!(!c.supports_developer_role);
        assert!(!c.supports_store);
        assert_eq!(c.max_tokens_field, "max_tokens");
    }

    fn simple_ctx() -> LlmContext {
        LlmContext {
            system_prompt: "SYS".into(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
            }],
            tools: vec![],
        }
    }

    #[test]
    fn reasoning_parameters() {
        let mut m = mock_gpt();
        m.reasoning = true;
        let mut o = opts();
        o.thinking_level = ThinkingLevel::High;
        let r = build_request(&m, &simple_ctx(), &o).unwrap();
        assert_eq!(r.body["reasoning_effort"], "high");
        assert_eq!(r.body["messages"][0]["role"], "system");
        // OpenAI itself: developer role for reasoning models.
        m.base_url = "https://api.openai.com/v1".into();
        let r = build_request(&m, &simple_ctx(), &o).unwrap();
        assert_eq!(
            r.body["messages"][0],
            json!({"role":"developer","content":"SYS"})
        );
        // OpenRouter: reasoning object; off → effort none.
        m.base_url = "https://openrouter.ai/api/v1".into();
        let r = build_request(&m, &simple_ctx(), &o).unwrap();
        assert_eq!(r.body["reasoning"], json!({"effort":"high"}));
        assert!(r.body.get("reasoning_effort").is_none());
        o.thinking_level = ThinkingLevel::Off;
        let r = build_request(&m, &simple_ctx(), &o).unwrap();
        assert_eq!(r.body["reasoning"], json!({"effort":"none"}));
        // Off with an explicit off value (OpenAI style).
        m.base_url = "http://localhost:8000/v1".into();
        m.thinking_level_map = json!({"off": "minimal"}).as_object().cloned();
        let r = build_request(&m, &simple_ctx(), &o).unwrap();
        assert_eq!(r.body["reasoning_effort"], "minimal");
        // Non-reasoning model: nothing.
        let r = build_request(&mock_gpt(), &simple_ctx(), &opts()).unwrap();
        assert!(r.body.get("reasoning_effort").is_none());
    }

    #[test]
    fn history_conversion_and_compat_switches() {
        let mut m = mock_gpt();
        m.reasoning = true;
        m.input = vec!["text".into()];
        let a = AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    thinking_signature: Some("reasoning_content".into()),
                    redacted: false,
                },
                ContentBlock::text("ok"),
            ],
            api: "openai-completions".into(),
            provider: "mockoai".into(),
            model: "mock-gpt".into(),
            stop_reason: StopReason::Stop,
            ..AssistantMessage::default()
        };
        let call = AssistantMessage {
            content: vec![ContentBlock::ToolCall {
                id: "call_a|fc_item+1".into(),
                name: "read".into(),
                arguments: json!({"path": "x", "n": 1.0}),
                thought_signature: None,
            }],
            api: "openai-responses".into(),
            provider: "openai".into(),
            model: "gpt-5".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            system_prompt: String::new(),
            messages: vec![
                LlmMessage::User {
                    content: vec![ContentBlock::text("q")],
                    timestamp: 1,
                },
                LlmMessage::Assistant(a),
                LlmMessage::Assistant(call),
                LlmMessage::ToolResult {
                    tool_call_id: "call_a|fc_item+1".into(),
                    tool_name: "read".into(),
                    content: vec![],
                    is_error: false,
                },
                LlmMessage::User {
                    content: vec![ContentBlock::text("next")],
                    timestamp: 4,
                },
            ],
            tools: vec![],
        };
        m.compat =
            json!({"requiresToolResultName": true, "requiresAssistantAfterToolResult": true})
                .as_object()
                .cloned();
        let r = build_request(&m, &ctx, &opts()).unwrap();
        assert_eq!(
            r.body["messages"],
            json!([
                {"role":"user","content":[{"type":"text","text":"q"}]},
                {"role":"assistant","content":"ok","reasoning_content":"hmm"},
                {"role":"assistant","content":"","tool_calls":[{"id":"call_a_fc_item_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\",\"n\":1}"}}]},
                {"role":"tool","content":"(no tool output)","tool_call_id":"call_a_fc_item_1","name":"read"},
                {"role":"assistant","content":"I have processed the tool results."},
                {"role":"user","content":[{"type":"text","text":"next"}]}
            ])
        );
        m.compat = json!({"requiresThinkingAsText": true}).as_object().cloned();
        let r = build_request(&m, &ctx, &opts()).unwrap();
        assert_eq!(
            r.body["messages"][1],
            json!({"role":"assistant","content":[{"type":"text","text":"hmm"},{"type":"text","text":"ok"}]})
        );
    }

    #[test]
    fn usage_parsing() {
        let m = mock_gpt();
        let u = parse_usage(
            &json!({"prompt_tokens": 400, "completion_tokens": 25, "total_tokens": 425, "prompt_tokens_details": {"cached_tokens": 100}}),
            &m,
        );
        // Golden: {"input":300,"output":25,"cacheRead":100,"cacheWrite":0,"reasoning":0,
        // "totalTokens":425,"cost":{"input":0.0006,"output":0.00019999999999999998,
        // "cacheRead":4.9999999999999996e-05,"cacheWrite":0,"total":0.00085,...}}
        // (serde_json's default float parsing is not exact, so compare computed values.)
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
        assert_eq!(u.cost.output, 8.0 / 1e6 * 25.0);
        assert_eq!(u.cost.output.to_string(), "0.00019999999999999998");
        assert_eq!(u.cost.cache_read.to_string(), "0.000049999999999999996");
        assert_eq!(u.cost.total, 0.00085);
        assert_eq!(u.cost.total_from_provider, Some(false));
        let keys: Vec<String> = serde_json::to_value(&u)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "input",
                "output",
                "cacheRead",
                "cacheWrite",
                "reasoning",
                "totalTokens",
                "cost"
            ]
        );
        let u = parse_usage(
            &json!({"prompt_tokens": 10, "prompt_cache_hit_tokens": 4, "completion_tokens": 3, "completion_tokens_details": {"reasoning_tokens": 2}}),
            &m,
        );
        assert_eq!((u.input, u.cache_read, u.reasoning), (6, 4, Some(2)));
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            http_error_message(
                429,
                r#"{"error": {"message": "Rate limited", "type": "rate_limit_error", "param": null, "code": null}}"#
            ),
            r#"429: {"message":"Rate limited","type":"rate_limit_error","param":null,"code":null}"#
        );
        assert_eq!(
            http_error_message(400, "not json at all"),
            "400 not json at all"
        );
        assert_eq!(
            http_error_message(400, r#"{"foo": 1}"#),
            "400 status code (no body)"
        );
        assert_eq!(http_error_message(500, ""), "500 status code (no body)");
        assert_eq!(
            http_error_message(400, r#"{"error": {"code": "x"}}"#),
            r#"400 {"code":"x"}"#
        );
        assert_eq!(
            http_error_message(502, r#"{"error": {"message": "Provider returned error", "metadata": {"raw": "upstream boom"}}}"#),
            "502: {\"message\":\"Provider returned error\",\"metadata\":{\"raw\":\"upstream boom\"}}"
        );
    }

    fn run_chunks(chunks: &[Value]) -> (AssistantMessage, Vec<Value>) {
        let model = mock_gpt();
        let mut wire = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| {
            if let StreamUpdate::Event(_, e) = u {
                wire.push(e.to_wire());
            }
        };
        let mut out = Output::new(&model, &mut cb);
        let mut st = StreamState::new(&model);
        for c in chunks {
            st.handle_chunk(c, &mut out);
        }
        st.finish_blocks(&mut out);
        let msg = out.msg.clone();
        drop(out);
        (msg, wire)
    }

    fn chunk(delta: Value, finish: Value) -> Value {
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"mock-gpt","choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
    }

    #[test]
    fn stream_events_match_observed_order() {
        let chunks = vec![
            chunk(json!({"role":"assistant","content":""}), Value::Null),
            chunk(json!({"content":"Runni"}), Value::Null),
            chunk(json!({"content":"ng it now."}), Value::Null),
            chunk(
                json!({"tool_calls":[{"index":0,"id":"call_oai_01","type":"function","function":{"name":"bash","arguments":"{\"command\": "}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":"\"echo from-openai\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            json!({"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":400,"completion_tokens":25,"total_tokens":425,"prompt_tokens_details":{"cached_tokens":100}}}),
        ];
        let (msg, wire) = run_chunks(&chunks);
        assert_eq!(
            wire,
            vec![
                json!({"type":"text_start","contentIndex":0}),
                json!({"type":"text_delta","contentIndex":0,"delta":"Runni"}),
                json!({"type":"text_delta","contentIndex":0,"delta":"ng it now."}),
                json!({"type":"toolcall_start","contentIndex":1,"id":"call_oai_01","toolName":"bash"}),
                json!({"type":"toolcall_delta","contentIndex":1,"delta":"{\"command\": "}),
                json!({"type":"toolcall_delta","contentIndex":1,"delta":"\"echo from-openai\"}"}),
                json!({"type":"text_end","contentIndex":0,"content":"Running it now."}),
                json!({"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_oai_01","name":"bash","arguments":{"command":"echo from-openai"}}}),
            ]
        );
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(msg.raw_stop_reason.as_deref(), Some("tool_calls"));
        assert_eq!(msg.response_id.as_deref(), Some("chatcmpl-1"));
        assert_eq!(
            (msg.usage.input, msg.usage.output, msg.usage.cache_read),
            (300, 25, 100)
        );
    }

    #[test]
    fn reasoning_deltas_become_thinking() {
        let chunks = vec![
            chunk(json!({"reasoning_content":"hm"}), Value::Null),
            chunk(
                json!({"reasoning":"dup","reasoning_content":"m"}),
                Value::Null,
            ),
            chunk(json!({"content":"ok"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ];
        let (msg, wire) = run_chunks(&chunks);
        assert_eq!(
            msg.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    thinking_signature: Some("reasoning_content".into()),
                    redacted: false
                },
                ContentBlock::text("ok")
            ]
        );
        let types: Vec<&str> = wire.iter().map(|w| w["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "thinking_start",
                "thinking_delta",
                "thinking_delta",
                "text_start",
                "text_delta",
                "thinking_end",
                "text_end"
            ]
        );
        let (msg, _) = run_chunks(&[chunk(json!({"content":"x"}), json!("content_filter"))]);
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.error_message.as_deref(),
            Some("Provider finish_reason: content_filter")
        );
    }
}
