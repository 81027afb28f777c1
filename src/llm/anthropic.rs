//! The Anthropic Messages API (`anthropic-messages`, providers.md §2): request building (body,
//! headers, betas, cache markers, thinking) and the SSE stream.

use std::io::BufReader;

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::http::{describe_read_error, HttpRequest};
use super::model::Model;
use super::request::post_streaming;
use super::sse::SseParser;
use super::stream::{
    base_max_tokens, clamp_max_tokens_to_context, clamp_thinking_budget_to_answer_room,
    effective_thinking_level, parse_error_body, sdk_status_message, thinking_budget_for_level,
    AbortTexts, Failure, Output, StreamUpdate, ToolArgs,
};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::types::{
    AssistantEvent, AssistantMessage, CacheRetention, ContentBlock, LlmContext, LlmMessage,
    StopReason, StreamOptions, Tool,
};
use crate::cancel::CancelToken;

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// How much of a non-success response body is read for the error message.
const ERROR_BODY_LIMIT: usize = 4 << 20;
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const CLAUDE_CODE_VERSION: &str = "2.1.322";
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
/// Claude Code's canonical tool names (OAuth requests use them).
const CLAUDE_CODE_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];
const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// How an aborted Anthropic request is reported (the SDK's and fetch's texts).
const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "This operation was aborted",
    before_response: "Request aborted",
    streaming: "This operation was aborted",
};

/// Compat switches of `model.compat` that this adapter reads (providers.md §6.4).
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicCompat {
    pub supports_eager_tool_input_streaming: bool,
    pub supports_long_cache_retention: bool,
    pub supports_cache_control_on_tools: bool,
    pub allow_empty_signature: bool,
    pub send_session_affinity_headers: bool,
    pub openrouter_affinity: bool,
    pub force_adaptive_thinking: bool,
}

impl AnthropicCompat {
    pub fn of(model: &Model) -> AnthropicCompat {
        let is_openrouter =
            model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        let b = |k: &str, d: bool| model.compat_bool(k).unwrap_or(d);
        let format = model
            .compat
            .as_ref()
            .and_then(|c| c.get("sessionAffinityFormat"))
            .and_then(Value::as_str);
        AnthropicCompat {
            supports_eager_tool_input_streaming: b("supportsEagerToolInputStreaming", true),
            supports_long_cache_retention: b("supportsLongCacheRetention", true),
            supports_cache_control_on_tools: b("supportsCacheControlOnTools", true),
            allow_empty_signature: b("allowEmptySignature", false),
            send_session_affinity_headers: b("sendSessionAffinityHeaders", is_openrouter),
            openrouter_affinity: match format {
                Some(f) => f == "openrouter",
                None => is_openrouter,
            },
            force_adaptive_thinking: b("forceAdaptiveThinking", false),
        }
    }
}

/// A built request: where to send it, its headers and its JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// An OAuth (`sk-ant-oat…`) token: tool names travel in Claude Code's casing.
    pub oauth: bool,
}

fn is_oauth_token(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map(|t| (*t).to_owned())
        .unwrap_or_else(|| name.to_owned())
}

fn from_claude_code_name(name: &str, tools: &[Tool]) -> String {
    tools
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
        .map(|t| t.name.clone())
        .unwrap_or_else(|| name.to_owned())
}

/// Anthropic tool-use ids: `[a-zA-Z0-9_-]`, at most 64 characters.
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

fn cache_control(model: &Model, retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "ephemeral"})),
        CacheRetention::Long => {
            if AnthropicCompat::of(model).supports_long_cache_retention {
                Some(json!({"type": "ephemeral", "ttl": "1h"}))
            } else {
                Some(json!({"type": "ephemeral"}))
            }
        }
    }
}

/// Thinking and output-cap decisions for one request.
#[derive(Clone, Debug, PartialEq)]
struct ThinkingPlan {
    max_tokens: u64,
    thinking: Option<Value>,
    output_config: Option<Value>,
    interleaved_beta: bool,
}

fn plan_thinking(model: &Model, ctx: &LlmContext, opts: &StreamOptions) -> ThinkingPlan {
    let compat = AnthropicCompat::of(model);
    let level = effective_thinking_level(model, opts.thinking_level);
    let base = base_max_tokens(model, ctx, opts);
    if level == ThinkingLevel::Off {
        let disabled = model.reasoning
            && level_mapping(model, ThinkingLevel::Off) != LevelMapping::Unsupported;
        return ThinkingPlan {
            max_tokens: base,
            thinking: disabled.then(|| json!({"type": "disabled"})),
            output_config: None,
            interleaved_beta: false,
        };
    }
    if !model.reasoning {
        return ThinkingPlan {
            max_tokens: base,
            thinking: None,
            output_config: None,
            interleaved_beta: false,
        };
    }
    if compat.force_adaptive_thinking {
        let effort = match level_mapping(model, level) {
            LevelMapping::Value(v) => v.to_owned(),
            _ => match level {
                ThinkingLevel::Minimal | ThinkingLevel::Low => "low".into(),
                ThinkingLevel::Medium => "medium".into(),
                _ => "high".into(),
            },
        };
        return ThinkingPlan {
            max_tokens: base,
            thinking: Some(json!({"type": "adaptive", "display": "summarized"})),
            output_config: Some(json!({ "effort": effort })),
            interleaved_beta: false,
        };
    }
    // Budget thinking (pi's adjustMaxTokensForThinking + clampMaxTokensToContext).
    let mut budget = thinking_budget_for_level(level, &opts.thinking_budgets);
    let max_tokens = (base + budget).min(model.max_tokens);
    if max_tokens <= budget {
        budget = clamp_thinking_budget_to_answer_room(budget, max_tokens);
    }
    let max_tokens = clamp_max_tokens_to_context(model, ctx, max_tokens);
    let budget = clamp_thinking_budget_to_answer_room(budget, max_tokens);
    let budget = if budget == 0 { 1024 } else { budget };
    ThinkingPlan {
        max_tokens,
        thinking: Some(
            json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"}),
        ),
        output_config: None,
        interleaved_beta: true,
    }
}

fn image_block(data: &str, mime_type: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

/// Tool-result content: a string for text only, else blocks (with a leading placeholder text
/// when there is no text at all).
fn tool_result_content(content: &[ContentBlock]) -> Value {
    let has_images = content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }));
    if !has_images {
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        return Value::from(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { data, mime_type } => Some(image_block(data, mime_type)),
            _ => None,
        })
        .collect();
    if !blocks.iter().any(|b| b["type"] == "text") {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

fn convert_messages(
    messages: &[LlmMessage],
    oauth: bool,
    cache: Option<&Value>,
    allow_empty_signature: bool,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            LlmMessage::User { content, .. } => {
                let blocks: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                            Some(json!({"type": "text", "text": text}))
                        }
                        ContentBlock::Image { data, mime_type } => {
                            Some(image_block(data, mime_type))
                        }
                        _ => None,
                    })
                    .collect();
                if !blocks.is_empty() {
                    out.push(json!({"role": "user", "content": blocks}));
                }
            }
            LlmMessage::Assistant(a) => {
                let mut blocks: Vec<Value> = Vec::new();
                for b in &a.content {
                    match b {
                        ContentBlock::Text { text, .. } => {
                            if !text.trim().is_empty() {
                                blocks.push(json!({"type": "text", "text": text}));
                            }
                        }
                        ContentBlock::Thinking {
                            thinking,
                            thinking_signature,
                            redacted,
                        } => {
                            if *redacted {
                                blocks.push(json!({
                                    "type": "redacted_thinking",
                                    "data": thinking_signature.clone().unwrap_or_default()
                                }));
                                continue;
                            }
                            let signed = thinking_signature
                                .as_deref()
                                .is_some_and(|s| !s.trim().is_empty());
                            if thinking.trim().is_empty() && !signed {
                                continue;
                            }
                            if !signed {
                                blocks.push(if allow_empty_signature {
                                    json!({"type": "thinking", "thinking": thinking, "signature": ""})
                                } else {
                                    json!({"type": "text", "text": thinking})
                                });
                            } else {
                                blocks.push(json!({
                                    "type": "thinking",
                                    "thinking": thinking,
                                    "signature": thinking_signature.clone().unwrap_or_default()
                                }));
                            }
                        }
                        ContentBlock::ToolCall {
                            id,
                            name,
                            arguments,
                            ..
                        } => {
                            let name = if oauth {
                                to_claude_code_name(name)
                            } else {
                                name.clone()
                            };
                            let input = if arguments.is_null() {
                                json!({})
                            } else {
                                arguments.clone()
                            };
                            blocks.push(
                                json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                            );
                        }
                        ContentBlock::Image { .. } => {}
                    }
                }
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            LlmMessage::ToolResult { .. } => {
                // Consecutive tool results travel in one user message; images of error results
                // follow all results of the turn.
                let mut results: Vec<Value> = Vec::new();
                let mut error_images: Vec<Value> = Vec::new();
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
                    let sent_content = if *is_error && has_images {
                        let mut replaced: Vec<ContentBlock> = Vec::new();
                        let mut prev_placeholder = false;
                        for b in content {
                            if let ContentBlock::Image { data, mime_type } = b {
                                if !prev_placeholder {
                                    replaced.push(ContentBlock::text(ERROR_TOOL_IMAGE_PLACEHOLDER));
                                }
                                prev_placeholder = true;
                                error_images.push(image_block(data, mime_type));
                                continue;
                            }
                            prev_placeholder = matches!(b, ContentBlock::Text { text, .. } if text == ERROR_TOOL_IMAGE_PLACEHOLDER);
                            replaced.push(b.clone());
                        }
                        // The caption goes before this result's images.
                        let n_images = content
                            .iter()
                            .filter(|b| matches!(b, ContentBlock::Image { .. }))
                            .count();
                        let at = error_images.len() - n_images;
                        error_images.insert(
                            at,
                            json!({"type": "text", "text": format!("Images from the error result of tool call {tool_call_id} ({tool_name}):")}),
                        );
                        replaced
                    } else {
                        content.clone()
                    };
                    results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": tool_call_id,
                        "content": tool_result_content(&sent_content),
                        "is_error": is_error
                    }));
                    i += 1;
                }
                results.extend(error_images);
                out.push(json!({"role": "user", "content": results}));
                continue;
            }
        }
        i += 1;
    }
    if let Some(cc) = cache {
        if let Some(last) = out.last_mut() {
            if last["role"] == "user" {
                match last.get_mut("content") {
                    Some(Value::Array(blocks)) => {
                        if let Some(Value::Object(b)) = blocks.last_mut() {
                            let t = b.get("type").and_then(Value::as_str).unwrap_or_default();
                            if matches!(t, "text" | "image" | "tool_result") {
                                b.insert("cache_control".into(), cc.clone());
                            }
                        }
                    }
                    Some(Value::String(s)) => {
                        let text = std::mem::take(s);
                        last["content"] =
                            json!([{"type": "text", "text": text, "cache_control": cc}]);
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

fn convert_tools(tools: &[Tool], oauth: bool, eager: bool, cache: Option<&Value>) -> Vec<Value> {
    let n = tools.len();
    tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let schema = &t.parameters;
            let mut input_schema = Map::new();
            input_schema.insert("type".into(), Value::from("object"));
            input_schema.insert(
                "properties".into(),
                schema
                    .get("properties")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            );
            input_schema.insert(
                "required".into(),
                schema.get("required").cloned().unwrap_or_else(|| json!([])),
            );
            for k in ["additionalProperties", "$defs", "definitions"] {
                if let Some(v) = schema.get(k) {
                    input_schema.insert(k.into(), v.clone());
                }
            }
            let mut m = Map::new();
            let name = if oauth {
                to_claude_code_name(&t.name)
            } else {
                t.name.clone()
            };
            m.insert("name".into(), Value::from(name));
            m.insert("description".into(), Value::from(t.description.as_str()));
            if eager {
                m.insert("eager_input_streaming".into(), Value::Bool(true));
            }
            m.insert("input_schema".into(), Value::Object(input_schema));
            if let Some(cc) = cache {
                if i + 1 == n {
                    m.insert("cache_control".into(), cc.clone());
                }
            }
            Value::Object(m)
        })
        .collect()
}

/// The beta list: an explicit `anthropic-beta` header replaces the computed one.
fn betas(
    model: &Model,
    opts: &StreamOptions,
    oauth: bool,
    has_tools: bool,
    interleaved: bool,
) -> Vec<String> {
    let mut configured: Option<String> = None;
    for (name, value) in model_headers(model).iter().chain(opts.headers.iter()) {
        if name.eq_ignore_ascii_case("anthropic-beta") {
            configured = Some(value.clone());
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut add = |b: &str| {
        if !b.is_empty() && !out.iter().any(|x| x == b) {
            out.push(b.to_owned());
        }
    };
    if let Some(list) = configured {
        for b in list.split(',') {
            add(b.trim());
        }
        return out;
    }
    if oauth {
        add("claude-code-20250219");
        add("oauth-2025-04-20");
    }
    if has_tools && !AnthropicCompat::of(model).supports_eager_tool_input_streaming {
        add(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if interleaved {
        add(INTERLEAVED_THINKING_BETA);
    }
    out
}

/// Builds the request for `ctx` (providers.md §2, data-model.md §6.1). Fails only for a missing
/// credential (`No API key for provider: <provider>`).
pub fn build_request(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
) -> Result<BuiltRequest, String> {
    let api_key = opts.api_key.as_deref().filter(|k| !k.is_empty());
    let mh = model_headers(model);
    let has_auth_header = ["authorization", "x-api-key", "cf-aig-authorization"]
        .iter()
        .any(|h| has_header(&mh, h) || has_header(&opts.headers, h));
    if api_key.is_none() && !has_auth_header {
        return Err(format!("No API key for provider: {}", model.provider));
    }
    let oauth = api_key.is_some_and(is_oauth_token);
    let compat = AnthropicCompat::of(model);
    let cache = cache_control(model, opts.cache_retention);
    let plan = plan_thinking(model, ctx, opts);

    let mut messages = ctx.messages.clone();
    normalize_tool_call_ids(&mut messages, model, normalize_tool_call_id);

    let mut body = Map::new();
    body.insert("model".into(), Value::from(model.id.as_str()));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(
            &messages,
            oauth,
            cache.as_ref(),
            compat.allow_empty_signature,
        )),
    );
    body.insert("max_tokens".into(), Value::from(plan.max_tokens));
    body.insert("stream".into(), Value::Bool(true));
    let system_block = |text: &str| {
        let mut b = Map::new();
        b.insert("type".into(), Value::from("text"));
        b.insert("text".into(), Value::from(text));
        if let Some(cc) = &cache {
            b.insert("cache_control".into(), cc.clone());
        }
        Value::Object(b)
    };
    if oauth {
        let mut system = vec![system_block(CLAUDE_CODE_IDENTITY)];
        if !ctx.system_prompt.is_empty() {
            system.push(system_block(&ctx.system_prompt));
        }
        body.insert("system".into(), Value::Array(system));
    } else if !ctx.system_prompt.is_empty() {
        body.insert(
            "system".into(),
            Value::Array(vec![system_block(&ctx.system_prompt)]),
        );
    }
    if !ctx.tools.is_empty() {
        let tool_cache = if compat.supports_cache_control_on_tools {
            cache.as_ref()
        } else {
            None
        };
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(
                &ctx.tools,
                oauth,
                compat.supports_eager_tool_input_streaming,
                tool_cache,
            )),
        );
    }
    if let Some(t) = plan.thinking {
        body.insert("thinking".into(), t);
    }
    if let Some(o) = plan.output_config {
        body.insert("output_config".into(), o);
    }

    let betas = betas(
        model,
        opts,
        oauth,
        !ctx.tools.is_empty(),
        plan.interleaved_beta,
    );
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut push = |n: &str, v: &str| headers.push((n.to_owned(), v.to_owned()));
    push("accept", "application/json");
    push("anthropic-dangerous-direct-browser-access", "true");
    if oauth {
        push("user-agent", &format!("claude-cli/{CLAUDE_CODE_VERSION}"));
        push("x-app", "cli");
    }
    if let Some(sid) = opts.session_id.as_deref() {
        if !oauth
            && opts.cache_retention != CacheRetention::None
            && compat.send_session_affinity_headers
        {
            let name = if compat.openrouter_affinity {
                "x-session-id"
            } else {
                "x-session-affinity"
            };
            push(name, sid);
        }
    }
    for (n, v) in mh.iter().chain(opts.headers.iter()) {
        if n.eq_ignore_ascii_case("anthropic-beta") {
            continue;
        }
        push(n, v);
    }
    push("anthropic-version", ANTHROPIC_VERSION);
    push("content-type", "application/json");
    if let Some(key) = api_key {
        if oauth || model.provider == "github-copilot" {
            push("authorization", &format!("Bearer {key}"));
        } else {
            push("x-api-key", key);
        }
    }
    if !betas.is_empty() {
        push("anthropic-beta", &betas.join(","));
    }

    let base = if model.base_url.is_empty() {
        DEFAULT_BASE_URL
    } else {
        model.base_url.trim_end_matches('/')
    };
    Ok(BuiltRequest {
        url: format!("{base}/v1/messages?beta=true"),
        headers,
        body: Value::Object(body),
        oauth,
    })
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
        sdk_status_message(status, parse_error_body(text).as_ref(), Some(text))
    })?;
    let mut state = StreamState::new(model, req.oauth, &ctx.tools);
    let parser = SseParser::new(BufReader::with_capacity(16 * 1024, resp)).dispatch_trailing(true);
    for item in parser {
        if cancel.is_cancelled() {
            return Err(Failure::Aborted);
        }
        let sse = match item {
            Ok(ev) => ev,
            Err(e) => {
                out.start();
                if cancel.is_cancelled() {
                    return Err(Failure::Aborted);
                }
                return Err(Failure::Error(describe_read_error(&e)));
            }
        };
        state.handle(sse.event.as_deref(), &sse.data, out)?;
    }
    out.start();
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    if state.saw_start && !state.saw_stop {
        return Err(Failure::Error(
            "Anthropic stream ended before message_stop".into(),
        ));
    }
    match out.msg.stop_reason {
        StopReason::Pending => Err(Failure::Error(
            "Anthropic stream ended without a stop reason".into(),
        )),
        StopReason::Error | StopReason::Aborted => Err(Failure::Error(
            out.msg
                .error_message
                .clone()
                .unwrap_or_else(|| "An unknown error occurred".into()),
        )),
        _ => Ok(()),
    }
}

/// An open content block: Anthropic's block index → our content index (and the argument
/// stream of a tool call).
struct OpenBlock {
    index: u64,
    content_index: usize,
    args: Option<ToolArgs>,
}

/// Per-response stream state.
pub struct StreamState<'m> {
    model: &'m Model,
    oauth: bool,
    tools: &'m [Tool],
    open: Vec<OpenBlock>,
    saw_start: bool,
    saw_stop: bool,
}

const MESSAGE_EVENTS: &[&str] = &[
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

fn u64_field(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(|x| {
        x.as_u64()
            .or_else(|| x.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

impl<'m> StreamState<'m> {
    pub fn new(model: &'m Model, oauth: bool, tools: &'m [Tool]) -> StreamState<'m> {
        StreamState {
            model,
            oauth,
            tools,
            open: Vec::new(),
            saw_start: false,
            saw_stop: false,
        }
    }

    fn recompute_usage(&self, msg: &mut AssistantMessage) {
        let u = &mut msg.usage;
        u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
        u.recompute_cost(self.model);
    }

    /// Handles one SSE event. `Err` ends the stream.
    pub fn handle(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Output<'_>,
    ) -> Result<(), Failure> {
        let name = event.unwrap_or_default();
        if name == "error" {
            out.start();
            return Err(Failure::Error(data.to_owned()));
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return Ok(());
        }
        let ev: Value = super::stream::parse_json_with_repair(data).ok_or_else(|| {
            out.start();
            Failure::Error(format!(
                "Could not parse Anthropic SSE event {name}: invalid JSON; data={data}"
            ))
        })?;
        let ty = ev.get("type").and_then(Value::as_str).unwrap_or_default();
        if ty != "message_start" {
            out.start();
        }
        match ty {
            "message_start" => {
                self.saw_start = true;
                let m = ev.get("message").cloned().unwrap_or(Value::Null);
                let msg = &mut out.msg;
                if let Some(id) = m.get("id").and_then(Value::as_str) {
                    msg.response_id = Some(id.to_owned());
                }
                if let Some(rm) = m.get("model").and_then(Value::as_str) {
                    if rm != self.model.id {
                        msg.response_model = Some(rm.to_owned());
                    }
                }
                let u = m.get("usage").cloned().unwrap_or(Value::Null);
                msg.usage.input = u64_field(&u, "input_tokens").unwrap_or(0);
                msg.usage.output = u64_field(&u, "output_tokens").unwrap_or(0);
                msg.usage.cache_read = u64_field(&u, "cache_read_input_tokens").unwrap_or(0);
                msg.usage.cache_write = u64_field(&u, "cache_creation_input_tokens").unwrap_or(0);
                msg.usage.cache_write_1h = Some(
                    u.get("cache_creation")
                        .and_then(|c| u64_field(c, "ephemeral_1h_input_tokens"))
                        .unwrap_or(0),
                );
                self.recompute_usage(msg);
                out.start();
            }
            "content_block_start" => {
                let index = u64_field(&ev, "index").unwrap_or(0);
                let cb = ev.get("content_block").cloned().unwrap_or(Value::Null);
                let str_of = |k: &str| {
                    cb.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match cb.get("type").and_then(Value::as_str).unwrap_or_default() {
                    "fallback" if !out.msg.content.is_empty() => {
                        return Err(Failure::Error(
                            "Anthropic performed an unsupported mid-output model fallback".into(),
                        ));
                    }
                    "text" => {
                        let ci = out.push_block(ContentBlock::text(str_of("text")));
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: None,
                        });
                        out.emit(AssistantEvent::TextStart { content_index: ci });
                    }
                    "thinking" => {
                        let ci = out.push_block(ContentBlock::Thinking {
                            thinking: str_of("thinking"),
                            thinking_signature: Some(str_of("signature")),
                            redacted: false,
                        });
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: None,
                        });
                        out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                    }
                    "redacted_thinking" => {
                        let ci = out.push_block(ContentBlock::Thinking {
                            thinking: "[Reasoning redacted]".into(),
                            thinking_signature: Some(str_of("data")),
                            redacted: true,
                        });
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: None,
                        });
                        out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                    }
                    "tool_use" => {
                        let id = str_of("id");
                        let raw_name = str_of("name");
                        let name = if self.oauth {
                            from_claude_code_name(&raw_name, self.tools)
                        } else {
                            raw_name
                        };
                        let arguments = match cb.get("input") {
                            Some(v @ Value::Object(_)) => v.clone(),
                            _ => json!({}),
                        };
                        let ci = out.push_block(ContentBlock::ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments,
                            thought_signature: None,
                        });
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: Some(ToolArgs::new()),
                        });
                        out.emit(AssistantEvent::ToolcallStart {
                            content_index: ci,
                            id,
                            tool_name: name,
                        });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = u64_field(&ev, "index").unwrap_or(0);
                let Some(pos) = self.open.iter().position(|o| o.index == index) else {
                    return Ok(());
                };
                let ci = self.open[pos].content_index;
                let delta = ev.get("delta").cloned().unwrap_or(Value::Null);
                let piece = |k: &str| {
                    delta
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match delta
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                {
                    "text_delta" => {
                        let d = piece("text");
                        if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(ci) {
                            text.push_str(&d);
                            out.emit(AssistantEvent::TextDelta {
                                content_index: ci,
                                delta: d,
                            });
                        }
                    }
                    "thinking_delta" => {
                        let d = piece("thinking");
                        if let Some(ContentBlock::Thinking { thinking, .. }) =
                            out.msg.content.get_mut(ci)
                        {
                            thinking.push_str(&d);
                            out.emit(AssistantEvent::ThinkingDelta {
                                content_index: ci,
                                delta: d,
                            });
                        }
                    }
                    "input_json_delta" => {
                        let d = piece("partial_json");
                        let Some(args) = self.open[pos].args.as_mut() else {
                            return Ok(());
                        };
                        let partial = args.append(&d);
                        if let Some(ContentBlock::ToolCall { arguments, .. }) =
                            out.msg.content.get_mut(ci)
                        {
                            if let Some(p) = partial {
                                *arguments = p;
                            }
                            out.emit(AssistantEvent::ToolcallDelta {
                                content_index: ci,
                                delta: d,
                            });
                        }
                    }
                    "signature_delta" => {
                        let d = piece("signature");
                        if let Some(ContentBlock::Thinking {
                            thinking_signature, ..
                        }) = out.msg.content.get_mut(ci)
                        {
                            thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(&d);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = u64_field(&ev, "index").unwrap_or(0);
                let Some(pos) = self.open.iter().position(|o| o.index == index) else {
                    return Ok(());
                };
                let open = self.open.remove(pos);
                let ci = open.content_index;
                match out.msg.content.get_mut(ci) {
                    Some(ContentBlock::Text { text, .. }) => {
                        let content = text.clone();
                        out.emit(AssistantEvent::TextEnd {
                            content_index: ci,
                            content,
                        });
                    }
                    Some(ContentBlock::Thinking { thinking, .. }) => {
                        let content = thinking.clone();
                        out.emit(AssistantEvent::ThinkingEnd {
                            content_index: ci,
                            content,
                        });
                    }
                    Some(block @ ContentBlock::ToolCall { .. }) => {
                        if let (Some(args), ContentBlock::ToolCall { arguments, .. }) =
                            (open.args.as_ref(), &mut *block)
                        {
                            *arguments = args.finish();
                        }
                        let tool_call = block.clone();
                        out.emit(AssistantEvent::ToolcallEnd {
                            content_index: ci,
                            tool_call,
                        });
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                let msg = &mut out.msg;
                let delta = ev.get("delta").cloned().unwrap_or(Value::Null);
                if let Some(reason) = delta.get("stop_reason").and_then(Value::as_str) {
                    msg.raw_stop_reason = Some(reason.to_owned());
                    let (stop, err) = map_stop_reason(reason, delta.get("stop_details"))?;
                    msg.stop_reason = stop;
                    if let Some(e) = err {
                        msg.error_message = Some(e);
                    }
                }
                if let Some(u) = ev.get("usage").filter(|u| u.is_object()) {
                    if let Some(v) = u64_field(u, "input_tokens") {
                        msg.usage.input = v;
                    }
                    if let Some(v) = u64_field(u, "output_tokens") {
                        msg.usage.output = v;
                    }
                    if let Some(v) = u64_field(u, "cache_read_input_tokens") {
                        msg.usage.cache_read = v;
                    }
                    if let Some(v) = u64_field(u, "cache_creation_input_tokens") {
                        msg.usage.cache_write = v;
                    }
                    if let Some(v) = u
                        .get("cache_creation")
                        .and_then(|c| u64_field(c, "ephemeral_1h_input_tokens"))
                    {
                        msg.usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = u
                        .get("output_tokens_details")
                        .and_then(|d| u64_field(d, "thinking_tokens"))
                    {
                        msg.usage.reasoning = Some(v);
                    }
                }
                self.recompute_usage(msg);
            }
            "message_stop" => {
                self.saw_stop = true;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Anthropic stop reasons → pi's (providers.md §2).
fn map_stop_reason(
    reason: &str,
    details: Option<&Value>,
) -> Result<(StopReason, Option<String>), Failure> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details
                    .and_then(|d| d.get("explanation"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_owned(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".into()),
        ),
        other => return Err(Failure::Error(format!("Unhandled stop reason: {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::convert::build_llm_context;
    use crate::llm::model::ModelCost;
    use crate::llm::types::Usage;

    /// pi 1.6.0's recorded transcripts: `shared/` sits beside the checkout (also in CI).
    const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/conformance/golden");

    fn read_golden(file: &str) -> String {
        let path = format!("{GOLDEN}/{file}");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("golden transcript {path} is needed by this test: {e}"))
    }

    fn mock_sonnet() -> Model {
        Model {
            id: "mock-sonnet".into(),
            name: "Mock Sonnet".into(),
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            base_url: "http://127.0.0.1:18080".into(),
            reasoning: true,
            input: vec!["text".into(), "image".into()],
            cost: ModelCost {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                tiers: None,
            },
            context_window: 200_000,
            max_tokens: 8192,
            ..Model::default()
        }
    }

    fn opts() -> StreamOptions {
        StreamOptions {
            api_key: Some("test-key".into()),
            ..StreamOptions::default()
        }
    }

    /// The golden request bodies, if the conformance folder is present.
    fn golden_requests(name: &str) -> Option<Vec<Value>> {
        let text = read_golden(&format!("{name}.requests.jsonl"));
        Some(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect(),
        )
    }

    /// The agent-level messages that produced golden request `body` (system message from the
    /// golden transcript's system message_start, the rest rebuilt from the request itself is
    /// not possible, so tests list them explicitly).
    fn golden_system_message(name: &str) -> Option<Value> {
        let text = read_golden(&format!("{name}.jsonl"));
        for l in text.lines() {
            let v: Value = serde_json::from_str(l).ok()?;
            let rec = &v["record"];
            if rec["type"] == "message_start" && rec["message"]["role"] == "system" {
                return Some(rec["message"].clone());
            }
        }
        None
    }

    #[test]
    fn plain_text_request_matches_golden() {
        let (Some(reqs), Some(system)) = (
            golden_requests("plain_text"),
            golden_system_message("plain_text"),
        ) else {
            eprintln!("golden files not found; skipping");
            return;
        };
        let msgs = vec![
            system,
            json!({"role":"user","content":[{"type":"text","text":"Say hello"}],"timestamp":1}),
        ];
        let model = mock_sonnet();
        let ctx = build_llm_context(&msgs, &model);
        let req = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(req.body, reqs[0]["body"]);
        // Key order as pi sends it.
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
                "max_tokens",
                "stream",
                "system",
                "tools",
                "thinking"
            ]
        );
        assert_eq!(req.url, "http://127.0.0.1:18080/v1/messages?beta=true");
        let h = |n: &str| {
            req.headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(h("anthropic-beta"), Some("interleaved-thinking-2025-05-14"));
        assert_eq!(h("anthropic-version"), Some("2023-06-01"));
        assert_eq!(h("x-api-key"), Some("test-key"));
        assert_eq!(h("accept"), Some("application/json"));
        assert_eq!(h("content-type"), Some("application/json"));
        assert_eq!(h("anthropic-dangerous-direct-browser-access"), Some("true"));
    }

    #[test]
    fn bash_tool_history_matches_golden() {
        let (Some(reqs), Some(system)) = (
            golden_requests("bash_tool"),
            golden_system_message("bash_tool"),
        ) else {
            return;
        };
        let assistant = AssistantMessage {
            content: vec![
                ContentBlock::text("I will run a command."),
                ContentBlock::ToolCall {
                    id: "toolu_bash_01".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "echo hi"}),
                    thought_signature: None,
                },
            ],
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            model: "mock-sonnet".into(),
            usage: Usage {
                input: 200,
                output: 40,
                total_tokens: 240,
                ..Usage::default()
            },
            stop_reason: StopReason::ToolUse,
            timestamp: 2,
            ..AssistantMessage::default()
        };
        let msgs = vec![
            system,
            json!({"role":"user","content":[{"type":"text","text":"Run echo hi"}],"timestamp":1}),
            assistant.to_value(),
            json!({"role":"toolResult","toolCallId":"toolu_bash_01","toolName":"bash","content":[{"type":"text","text":"hi\n"}],"isError":false,"timestamp":3}),
        ];
        let model = mock_sonnet();
        let ctx = build_llm_context(&msgs, &model);
        let req = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(req.body, reqs[1]["body"]);
    }

    #[test]
    fn thinking_variants() {
        let model = mock_sonnet();
        let ctx = LlmContext {
            system_prompt: String::new(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
            }],
            tools: vec![],
        };
        let mut o = opts();
        o.thinking_level = ThinkingLevel::Off;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(r.body["thinking"], json!({"type":"disabled"}));
        assert_eq!(r.body["max_tokens"], 8192);
        assert!(!r.headers.iter().any(|(n, _)| n == "anthropic-beta"));
        assert!(r.body.get("system").is_none());

        // A bigger output cap: budget 8192 inside max_tokens 16384.
        let mut big = model.clone();
        big.max_tokens = 16384;
        o.thinking_level = ThinkingLevel::Medium;
        let r = build_request(&big, &ctx, &o).unwrap();
        assert_eq!(
            r.body["thinking"],
            json!({"type":"enabled","budget_tokens":8192,"display":"summarized"})
        );
        assert_eq!(r.body["max_tokens"], 16384);

        // Non-reasoning model: no thinking field at all.
        let mut plain = model.clone();
        plain.reasoning = false;
        let r = build_request(&plain, &ctx, &o).unwrap();
        assert!(r.body.get("thinking").is_none());

        // Adaptive thinking.
        let mut adaptive = model.clone();
        adaptive.compat = json!({"forceAdaptiveThinking": true}).as_object().cloned();
        adaptive.thinking_level_map = json!({"max": "max"}).as_object().cloned();
        o.thinking_level = ThinkingLevel::Max;
        let r = build_request(&adaptive, &ctx, &o).unwrap();
        assert_eq!(
            r.body["thinking"],
            json!({"type":"adaptive","display":"summarized"})
        );
        assert_eq!(r.body["output_config"], json!({"effort":"max"}));
        assert!(!r.headers.iter().any(|(n, _)| n == "anthropic-beta"));
        o.thinking_level = ThinkingLevel::Minimal;
        let r = build_request(&adaptive, &ctx, &o).unwrap();
        assert_eq!(r.body["output_config"], json!({"effort":"low"}));

        // Off not allowed (map off: null) → nothing sent.
        let mut no_off = model.clone();
        no_off.thinking_level_map = json!({"off": null}).as_object().cloned();
        o.thinking_level = ThinkingLevel::Off;
        let r = build_request(&no_off, &ctx, &o).unwrap();
        // Clamped up to minimal: budget thinking.
        assert_eq!(r.body["thinking"]["type"], "enabled");
    }

    #[test]
    fn auth_variants_and_cache() {
        let model = mock_sonnet();
        let ctx = LlmContext {
            system_prompt: "SYS".into(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
            }],
            tools: vec![Tool {
                name: "bash".into(),
                description: "d".into(),
                parameters: json!({"type":"object","properties":{"command":{"type":"string"}}}),
            }],
        };
        let mut o = opts();
        o.api_key = None;
        assert_eq!(
            build_request(&model, &ctx, &o).unwrap_err(),
            "No API key for provider: mock"
        );
        o.headers = vec![("Authorization".into(), "Bearer tok".into())];
        let r = build_request(&model, &ctx, &o).unwrap();
        assert!(!r.headers.iter().any(|(n, _)| n == "x-api-key"));
        assert!(r
            .headers
            .contains(&("Authorization".into(), "Bearer tok".into())));

        // OAuth: bearer, Claude Code identity and tool names, betas.
        let mut o = opts();
        o.api_key = Some("sk-ant-oat01-xyz".into());
        let r = build_request(&model, &ctx, &o).unwrap();
        assert!(r.oauth);
        assert!(r
            .headers
            .contains(&("authorization".into(), "Bearer sk-ant-oat01-xyz".into())));
        assert_eq!(r.body["system"][0]["text"], CLAUDE_CODE_IDENTITY);
        assert_eq!(r.body["system"][1]["text"], "SYS");
        assert_eq!(r.body["tools"][0]["name"], "Bash");
        let beta = r
            .headers
            .iter()
            .find(|(n, _)| n == "anthropic-beta")
            .unwrap();
        assert_eq!(
            beta.1,
            "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14"
        );

        // No caching: no markers anywhere.
        let mut o = opts();
        o.cache_retention = CacheRetention::None;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert!(!r.body.to_string().contains("cache_control"));
        // Long retention: ttl 1h.
        o.cache_retention = CacheRetention::Long;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(
            r.body["system"][0]["cache_control"],
            json!({"type":"ephemeral","ttl":"1h"})
        );
        assert_eq!(
            r.body["tools"][0]["cache_control"],
            json!({"type":"ephemeral","ttl":"1h"})
        );
        assert_eq!(
            r.body["tools"][0]["input_schema"],
            json!({"type":"object","properties":{"command":{"type":"string"}},"required":[]})
        );

        // An explicit anthropic-beta header replaces the computed list.
        let mut o = opts();
        o.headers = vec![("Anthropic-Beta".into(), "a, b,a".into())];
        let r = build_request(&model, &ctx, &o).unwrap();
        let betas: Vec<&(String, String)> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("anthropic-beta"))
            .collect();
        assert_eq!(
            betas,
            vec![&("anthropic-beta".to_string(), "a,b".to_string())]
        );

        // No eager streaming support: fine-grained beta, no eager flag.
        let mut m2 = model.clone();
        m2.compat = json!({"supportsEagerToolInputStreaming": false})
            .as_object()
            .cloned();
        let r = build_request(&m2, &ctx, &opts()).unwrap();
        assert!(r.body["tools"][0].get("eager_input_streaming").is_none());
        assert!(r.headers.iter().any(|(n, v)| n == "anthropic-beta"
            && v == "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"));
    }

    #[test]
    fn history_conversion() {
        let model = mock_sonnet();
        let other = AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "secret".into(),
                    thinking_signature: Some("SIG".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: "[Reasoning redacted]".into(),
                    thinking_signature: Some("ENC".into()),
                    redacted: true,
                },
                ContentBlock::Thinking {
                    thinking: "unsigned".into(),
                    thinking_signature: None,
                    redacted: false,
                },
                ContentBlock::text("  "),
                ContentBlock::text("answer"),
                ContentBlock::ToolCall {
                    id: "call|x/y".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    thought_signature: None,
                },
            ],
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            model: "mock-sonnet".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            system_prompt: String::new(),
            messages: vec![
                LlmMessage::User {
                    content: vec![
                        ContentBlock::text("look"),
                        ContentBlock::Image {
                            data: "AAA".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    timestamp: 1,
                },
                LlmMessage::Assistant(other),
                LlmMessage::ToolResult {
                    tool_call_id: "call|x/y".into(),
                    tool_name: "read".into(),
                    content: vec![
                        ContentBlock::text("failed"),
                        ContentBlock::Image {
                            data: "BBB".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    is_error: true,
                },
            ],
            tools: vec![],
        };
        let r = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(
            r.body["messages"],
            json!([
                {"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"}}]},
                {"role":"assistant","content":[
                    {"type":"thinking","thinking":"secret","signature":"SIG"},
                    {"type":"redacted_thinking","data":"ENC"},
                    {"type":"text","text":"unsigned"},
                    {"type":"text","text":"answer"},
                    {"type":"tool_use","id":"call|x/y","name":"read","input":{"path":"a"}}
                ]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"call|x/y","content":"failed\n(image attached after the tool results)","is_error":true},
                    {"type":"text","text":"Images from the error result of tool call call|x/y (read):"},
                    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"BBB"},"cache_control":{"type":"ephemeral"}}
                ]}
            ])
        );
        // From another provider, the tool-call id is normalized (and its result with it).
        let mut ctx2 = ctx.clone();
        if let LlmMessage::Assistant(a) = &mut ctx2.messages[1] {
            a.provider = "other".into();
        }
        let r = build_request(&model, &ctx2, &opts()).unwrap();
        assert_eq!(r.body["messages"][1]["content"][4]["id"], "call_x_y");
        assert_eq!(
            r.body["messages"][2]["content"][0]["tool_use_id"],
            "call_x_y"
        );
    }

    /// Runs canned SSE text through the stream state, collecting wire events.
    fn run_events(sse: &str) -> (AssistantMessage, Vec<Value>, Result<(), Failure>, usize) {
        let model = mock_sonnet();
        let tools: Vec<Tool> = Vec::new();
        let mut wire = Vec::new();
        let mut starts = 0;
        let mut cb = |u: StreamUpdate<'_>| match u {
            StreamUpdate::Start(_) => starts += 1,
            StreamUpdate::Event(_, e) => wire.push(e.to_wire()),
        };
        let mut out = Output::new(&model, &mut cb);
        let mut st = StreamState::new(&model, false, &tools);
        let mut result = Ok(());
        for ev in SseParser::new(sse.as_bytes()).dispatch_trailing(true) {
            let ev = ev.unwrap();
            if let Err(e) = st.handle(ev.event.as_deref(), &ev.data, &mut out) {
                result = Err(e);
                break;
            }
        }
        let msg = out.msg.clone();
        drop(out);
        (msg, wire, result, starts)
    }

    fn sse(events: &[(&str, Value)]) -> String {
        events
            .iter()
            .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
            .collect()
    }

    #[test]
    fn stream_events_thinking_text_tool() {
        let text = sse(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"mock-sonnet","content":[],"stop_reason":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":10,"cache_read_input_tokens":30,"output_tokens":1}}}),
            ),
            ("ping", json!({"type":"ping"})),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":1}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_C","name":"bash","input":{}}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"com"}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"mand\": \"ls\"}"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":2}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":120,"cache_creation_input_tokens":10,"cache_read_input_tokens":30,"output_tokens":14,"output_tokens_details":{"thinking_tokens":5}}}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ]);
        let (msg, wire, result, starts) = run_events(&text);
        assert_eq!(result, Ok(()));
        assert_eq!(starts, 1);
        assert_eq!(
            wire,
            vec![
                json!({"type":"thinking_start","contentIndex":0}),
                json!({"type":"thinking_delta","contentIndex":0,"delta":"Let me think."}),
                json!({"type":"thinking_end","contentIndex":0,"content":"Let me think."}),
                json!({"type":"text_start","contentIndex":1}),
                json!({"type":"text_delta","contentIndex":1,"delta":"Hi"}),
                json!({"type":"text_end","contentIndex":1,"content":"Hi"}),
                json!({"type":"toolcall_start","contentIndex":2,"id":"toolu_C","toolName":"bash"}),
                json!({"type":"toolcall_delta","contentIndex":2,"delta":""}),
                json!({"type":"toolcall_delta","contentIndex":2,"delta":"{\"com"}),
                json!({"type":"toolcall_delta","contentIndex":2,"delta":"mand\": \"ls\"}"}),
                json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"toolu_C","name":"bash","arguments":{"command":"ls"}}}),
            ]
        );
        let v = msg.to_value();
        assert_eq!(
            v["content"],
            json!([
                {"type":"thinking","thinking":"Let me think.","thinkingSignature":"SIG"},
                {"type":"text","text":"Hi"},
                {"type":"toolCall","id":"toolu_C","name":"bash","arguments":{"command":"ls"}}
            ])
        );
        assert_eq!(v["stopReason"], "toolUse");
        assert_eq!(v["rawStopReason"], "tool_use");
        assert_eq!(v["responseId"], "msg_1");
        assert_eq!(
            v["usage"],
            serde_json::from_str::<Value>(r#"{"input":120,"output":14,"cacheRead":30,"cacheWrite":10,"reasoning":5,"totalTokens":174,"cost":{"input":0.00036,"output":0.00021,"cacheRead":9e-6,"cacheWrite":3.75e-5,"total":0.0006165,"totalFromProvider":false},"cacheWrite1h":0}"#).unwrap()
        );
    }

    #[test]
    fn stream_error_event_keeps_raw_data() {
        let mut text = sse(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"msg_7","model":"mock-sonnet","usage":{"input_tokens":10,"output_tokens":1}}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
        ]);
        text.push_str("event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n");
        let (msg, _, result, _) = run_events(&text);
        assert_eq!(
            result,
            Err(Failure::Error(
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
                    .into()
            ))
        );
        assert_eq!(msg.content, vec![ContentBlock::text("x")]);
    }

    #[test]
    fn stop_reasons() {
        for (raw, want, err) in [
            ("end_turn", StopReason::Stop, None),
            ("pause_turn", StopReason::Stop, None),
            ("stop_sequence", StopReason::Stop, None),
            ("max_tokens", StopReason::Length, None),
            ("tool_use", StopReason::ToolUse, None),
            (
                "refusal",
                StopReason::Error,
                Some("The model refused to complete the request"),
            ),
            (
                "sensitive",
                StopReason::Error,
                Some("Provider stopped with: sensitive"),
            ),
        ] {
            let (s, e) = map_stop_reason(raw, None).unwrap();
            assert_eq!(s, want);
            assert_eq!(e.as_deref(), err);
        }
        assert_eq!(
            map_stop_reason("refusal", Some(&json!({"explanation":"nope"})))
                .unwrap()
                .1
                .as_deref(),
            Some("nope")
        );
        assert_eq!(
            map_stop_reason("weird", None).unwrap_err(),
            Failure::Error("Unhandled stop reason: weird".into())
        );
    }

    #[test]
    fn redacted_thinking_and_oauth_names() {
        let model = mock_sonnet();
        let tools = vec![Tool {
            name: "bash".into(),
            description: String::new(),
            parameters: json!({}),
        }];
        let mut wire = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| {
            if let StreamUpdate::Event(_, e) = u {
                wire.push(e.to_wire())
            }
        };
        let mut out = Output::new(&model, &mut cb);
        let mut st = StreamState::new(&model, true, &tools);
        for (e, d) in [
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"ENC"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":1}),
            ),
        ] {
            st.handle(Some(e), &d.to_string(), &mut out).unwrap();
        }
        assert_eq!(
            out.msg.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "[Reasoning redacted]".into(),
                    thinking_signature: Some("ENC".into()),
                    redacted: true
                },
                ContentBlock::ToolCall {
                    id: "t".into(),
                    name: "bash".into(),
                    arguments: json!({}),
                    thought_signature: None
                }
            ]
        );
        drop(out);
        assert_eq!(
            wire[2],
            json!({"type":"toolcall_start","contentIndex":1,"id":"t","toolName":"bash"})
        );
    }
}
