//! The OpenAI Responses API (`openai-responses`, providers.md §4): request building, SSE event
//! handling and the blocking [`stream`] entry point the dispatcher calls.
//!
//! The behaviour follows pi 1.6.0 (`openai-responses.js` / `openai-responses-shared.js` with
//! the `openai` SDK underneath): the system prompt travels as the first input item (role
//! `developer` for reasoning models), assistant text is replayed as `message` items whose id
//! comes from the text block's `textSignature`, reasoning items are replayed verbatim from the
//! thinking block's `thinkingSignature`, and tool calls carry `<call_id>|<item id>` ids.

use std::collections::HashMap;
use std::io::BufReader;

use serde_json::{json, Map, Value};

use super::http::HttpRequest;
use super::model::{number_to_u64, Model};
use super::request::{merge_sampling_params, post_streaming, read_failure};
use super::sse::SseParser;
use super::stream::{
    base_max_tokens, effective_thinking_level, js_stringify, js_truthy, parse_error_body,
    sdk_status_message, AbortTexts, Failure, Output, StreamUpdate, ToolArgs,
};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::types::{
    AssistantEvent, AssistantMessage, CacheRetention, ContentBlock, LlmContext, LlmMessage,
    StopReason, StreamOptions, Tool, Usage,
};
use crate::cancel::CancelToken;

/// pi's `OPENAI_RESPONSES_MIN_OUTPUT_TOKENS`: the API rejects smaller `max_output_tokens`.
const MIN_OUTPUT_TOKENS: u64 = 16;
/// Providers whose tool-call ids keep the `<call_id>|<item id>` form across models.
const TOOL_CALL_ID_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];
/// `prompt_cache_key` is cut to this many characters.
const PROMPT_CACHE_KEY_MAX_CHARS: usize = 64;
/// Largest error body read from a failed response.
const ERROR_BODY_LIMIT: usize = 1 << 20;

/// The stream ended without `response.completed` / `response.incomplete` / `response.failed`
/// (pi 1.6.0's text; providers.md §4 names it "ended without a stop reason", which pi only
/// reaches when a terminal event carried no status).
pub const NO_TERMINAL_EVENT: &str =
    "OpenAI Responses stream ended before a terminal response event";
/// A terminal event left the stop reason unset.
pub const NO_STOP_REASON: &str = "OpenAI Responses stream ended without a stop reason";

// ---------------------------------------------------------------------------------------------
// Compat

/// The `compat` flags this API reads, with pi's defaults.
#[derive(Clone, Debug, PartialEq)]
struct Compat {
    supports_developer_role: bool,
    supports_strict_mode: bool,
    supports_long_cache_retention: bool,
    supports_explicit_prompt_cache_mode: bool,
    supports_max_output_tokens: bool,
    prompt_cache_key_disabled: bool,
    /// `"openai"` (headers `session-id` + `x-client-request-id`), `"openrouter"`
    /// (`x-session-id`) or anything else (`x-client-request-id` only).
    session_affinity_format: String,
}

impl Compat {
    fn of(model: &Model) -> Compat {
        let flag = |k: &str, d: bool| model.compat_bool(k).unwrap_or(d);
        let string = |k: &str| {
            model
                .compat
                .as_ref()
                .and_then(|c| c.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let detected = if model.provider == "openrouter" || model.base_url.contains("openrouter.ai")
        {
            "openrouter"
        } else {
            "openai"
        };
        Compat {
            supports_developer_role: flag("supportsDeveloperRole", true),
            supports_strict_mode: flag("supportsStrictMode", false),
            supports_long_cache_retention: flag("supportsLongCacheRetention", true),
            supports_explicit_prompt_cache_mode: flag("supportsExplicitPromptCacheMode", false),
            supports_max_output_tokens: flag("supportsMaxOutputTokens", true),
            prompt_cache_key_disabled: string("promptCacheKeyMode").as_deref() == Some("disabled"),
            session_affinity_format: string("sessionAffinityFormat")
                .unwrap_or_else(|| detected.to_owned()),
        }
    }
}

/// A "Sign in with ChatGPT" token sent straight to OpenAI (not an `sk-` key): some request
/// fields are rejected there.
fn is_chatgpt_sign_in(model: &Model, api_key: Option<&str>) -> bool {
    model.provider == "openai"
        && model.base_url == "https://api.openai.com/v1"
        && api_key.is_some_and(|k| !k.starts_with("sk-"))
}

// ---------------------------------------------------------------------------------------------
// Ids

/// pi's `shortHash`: a deterministic 64-bit hash of the UTF-16 code units, in base 36.
pub fn short_hash(s: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in s.encode_utf16() {
        let ch = u32::from(unit);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Every character outside `[a-zA-Z0-9_-]` becomes `_` (one per UTF-16 unit, as JavaScript's
/// regex does), cut to 64, trailing `_` removed.
fn normalize_id_part(part: &str) -> String {
    let mut s = String::with_capacity(part.len());
    for c in part.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            s.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                s.push('_');
            }
        }
    }
    s.truncate(64);
    s.trim_end_matches('_').to_owned()
}

/// pi's `normalizeToolCallId` for this API, applied to tool calls from another model.
fn normalize_tool_call_id(id: &str, model: &Model, source: &AssistantMessage) -> String {
    if !TOOL_CALL_ID_PROVIDERS.contains(&model.provider.as_str()) {
        return normalize_id_part(id);
    }
    let Some((call_id, rest)) = id.split_once('|') else {
        return normalize_id_part(id);
    };
    let item_id = rest.split('|').next().unwrap_or("");
    let call_id = normalize_id_part(call_id);
    let foreign = source.provider != model.provider || source.api != model.api;
    let mut item = if foreign {
        let mut h = format!("fc_{}", short_hash(item_id));
        h.truncate(64);
        h
    } else {
        normalize_id_part(item_id)
    };
    if !item.starts_with("fc_") {
        item = normalize_id_part(&format!("fc_{item}"));
    }
    format!("{call_id}|{item}")
}

/// Rewrites the tool-call ids of other models' assistant messages (and their results).
fn normalize_ids(messages: &mut [LlmMessage], model: &Model) {
    let mut map: Vec<(String, String)> = Vec::new();
    for msg in messages.iter_mut() {
        match msg {
            LlmMessage::Assistant(a) => {
                let same =
                    a.provider == model.provider && a.api == model.api && a.model == model.id;
                if same {
                    continue;
                }
                let source = AssistantMessage {
                    provider: a.provider.clone(),
                    api: a.api.clone(),
                    model: a.model.clone(),
                    ..AssistantMessage::default()
                };
                for b in a.content.iter_mut() {
                    if let ContentBlock::ToolCall { id, .. } = b {
                        let n = normalize_tool_call_id(id, model, &source);
                        if n != *id {
                            map.push((id.clone(), n.clone()));
                            *id = n;
                        }
                    }
                }
            }
            LlmMessage::ToolResult { tool_call_id, .. } => {
                if let Some((_, n)) = map.iter().rev().find(|(o, _)| o == tool_call_id) {
                    *tool_call_id = n.clone();
                }
            }
            LlmMessage::User { .. } => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Request

/// The id (and phase) a text block's `textSignature` names: `{"v":1,"id":…}` JSON, or a legacy
/// plain id.
fn parse_text_signature(sig: Option<&str>) -> Option<(String, Option<String>)> {
    let sig = sig.filter(|s| !s.is_empty())?;
    if sig.starts_with('{') {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(sig) {
            if o.get("v").and_then(Value::as_f64) == Some(1.0) {
                if let Some(id) = o.get("id").and_then(Value::as_str) {
                    let phase = o
                        .get("phase")
                        .and_then(Value::as_str)
                        .filter(|p| *p == "commentary" || *p == "final_answer")
                        .map(str::to_owned);
                    return Some((id.to_owned(), phase));
                }
            }
        }
    }
    Some((sig.to_owned(), None))
}

/// pi's `encodeTextSignatureV1`.
fn encode_text_signature(id: &str, phase: Option<&str>) -> String {
    let mut o = Map::new();
    o.insert("v".into(), json!(1));
    o.insert("id".into(), json!(id));
    if let Some(p) = phase {
        o.insert("phase".into(), json!(p));
    }
    Value::Object(o).to_string()
}

fn image_item(mime_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime_type};base64,{data}")})
}

/// A tool result's `output`: its text (joined with `\n`), or input items when it carries images
/// the model can see.
fn tool_result_output(model: &Model, content: &[ContentBlock]) -> Value {
    let text: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let text = text.join("\n");
    let images: Vec<&ContentBlock> = content
        .iter()
        .filter(|b| matches!(b, ContentBlock::Image { .. }))
        .collect();
    let has_text = !text.trim().is_empty();
    if images.is_empty() || !model.supports_images() {
        return Value::String(if has_text {
            text
        } else if !images.is_empty() {
            "(see attached image)".into()
        } else {
            "(no tool output)".into()
        });
    }
    let mut out = Vec::new();
    if has_text {
        out.push(json!({"type": "input_text", "text": text}));
    }
    for b in images {
        if let ContentBlock::Image { data, mime_type } = b {
            out.push(image_item(mime_type, data));
        }
    }
    Value::Array(out)
}

/// The `input` array: the system prompt item, then the conversation (pi's
/// `convertResponsesMessages`).
pub fn convert_input(model: &Model, ctx: &LlmContext) -> Vec<Value> {
    let compat = Compat::of(model);
    let mut messages = ctx.messages.clone();
    normalize_ids(&mut messages, model);
    let mut input = Vec::new();
    if !ctx.system_prompt.is_empty() {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        input.push(json!({"role": role, "content": ctx.system_prompt}));
    }
    let mut msg_index = 0usize;
    for msg in &messages {
        match msg {
            LlmMessage::User { content, .. } => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => {
                            Some(json!({"type": "input_text", "text": text}))
                        }
                        ContentBlock::Image { data, mime_type } => {
                            Some(image_item(mime_type, data))
                        }
                        _ => None,
                    })
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                input.push(json!({"role": "user", "content": parts}));
            }
            LlmMessage::Assistant(a) => {
                let same_provider_api = a.provider == model.provider && a.api == model.api;
                let different_model = same_provider_api && a.model != model.id;
                let mut output = Vec::new();
                let mut text_index = 0usize;
                for block in &a.content {
                    match block {
                        ContentBlock::Thinking {
                            thinking_signature: Some(sig),
                            ..
                        } if !sig.is_empty() => {
                            if let Ok(item) = serde_json::from_str::<Value>(sig) {
                                output.push(item);
                            }
                        }
                        ContentBlock::Text {
                            text,
                            text_signature,
                        } => {
                            let parsed = parse_text_signature(text_signature.as_deref());
                            let fallback = if text_index == 0 {
                                format!("msg_pi_{msg_index}")
                            } else {
                                format!("msg_pi_{msg_index}_{text_index}")
                            };
                            text_index += 1;
                            let (id, phase) = match parsed {
                                Some((id, phase)) if !id.is_empty() => {
                                    if id.encode_utf16().count() > 64 {
                                        (format!("msg_{}", short_hash(&id)), phase)
                                    } else {
                                        (id, phase)
                                    }
                                }
                                Some((_, phase)) => (fallback, phase),
                                None => (fallback, None),
                            };
                            let mut item = json!({
                                "type": "message",
                                "role": "assistant",
                                "content": [{"type": "output_text", "text": text, "annotations": []}],
                                "status": "completed",
                                "id": id,
                            });
                            if let Some(p) = phase {
                                item["phase"] = json!(p);
                            }
                            output.push(item);
                        }
                        ContentBlock::ToolCall {
                            id,
                            name,
                            arguments,
                            ..
                        } => {
                            let mut pieces = id.split('|');
                            let call_id = pieces.next().unwrap_or("");
                            let item_id = pieces
                                .next()
                                .filter(|i| !different_model && i.starts_with("fc_"));
                            let mut item = Map::new();
                            item.insert("type".into(), json!("function_call"));
                            if let Some(i) = item_id {
                                item.insert("id".into(), json!(i));
                            }
                            item.insert("call_id".into(), json!(call_id));
                            item.insert("name".into(), json!(name));
                            item.insert("arguments".into(), json!(js_stringify(arguments)));
                            output.push(Value::Object(item));
                        }
                        _ => {}
                    }
                }
                if output.is_empty() {
                    continue;
                }
                input.extend(output);
            }
            LlmMessage::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                let call_id = tool_call_id.split('|').next().unwrap_or("");
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": tool_result_output(model, content),
                }));
            }
        }
        msg_index += 1;
    }
    input
}

/// The `tools` array (pi's `convertResponsesTools` for plain JSON-schema tools).
pub fn convert_tools(tools: &[Tool], supports_strict_mode: bool) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut o = Map::new();
            o.insert("type".into(), json!("function"));
            o.insert("name".into(), json!(t.name));
            o.insert("description".into(), json!(t.description));
            o.insert("parameters".into(), t.parameters.clone());
            if supports_strict_mode {
                o.insert("strict".into(), json!(false));
            }
            Value::Object(o)
        })
        .collect()
}

/// The request body (pi's `buildParams`). `max_tokens` is the already fitted output cap.
pub fn build_body(model: &Model, ctx: &LlmContext, opts: &StreamOptions, max_tokens: u64) -> Value {
    let compat = Compat::of(model);
    let chatgpt = is_chatgpt_sign_in(model, opts.api_key.as_deref());
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("input".into(), Value::Array(convert_input(model, ctx)));
    body.insert("stream".into(), json!(true));
    let caching = opts.cache_retention != CacheRetention::None;
    if caching && !compat.prompt_cache_key_disabled {
        if let Some(sid) = &opts.session_id {
            let key: String = sid.chars().take(PROMPT_CACHE_KEY_MAX_CHARS).collect();
            body.insert("prompt_cache_key".into(), json!(key));
        }
    }
    if !chatgpt {
        if opts.cache_retention == CacheRetention::Long
            && compat.supports_long_cache_retention
            && !compat.supports_explicit_prompt_cache_mode
        {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        if compat.supports_explicit_prompt_cache_mode {
            match opts.cache_retention {
                CacheRetention::None => {
                    body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
                }
                CacheRetention::Long if compat.supports_long_cache_retention => {
                    body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
                }
                _ => {}
            }
        }
    }
    body.insert("store".into(), json!(false));
    if max_tokens > 0 && compat.supports_max_output_tokens && !chatgpt {
        body.insert(
            "max_output_tokens".into(),
            json!(max_tokens.max(MIN_OUTPUT_TOKENS)),
        );
    }
    if !ctx.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(&ctx.tools, compat.supports_strict_mode)),
        );
    }
    // pi's agent passes no reasoning option at `off` (no clamping then).
    let level = match opts.thinking_level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    };
    if model.reasoning {
        if level != ThinkingLevel::Off {
            let effort = match level_mapping(model, level) {
                LevelMapping::Value(v) => v.to_owned(),
                _ => level.as_str().to_owned(),
            };
            body.insert(
                "reasoning".into(),
                json!({"effort": effort, "summary": "auto"}),
            );
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        } else if model.provider != "github-copilot" {
            match level_mapping(model, ThinkingLevel::Off) {
                LevelMapping::Unsupported => {}
                LevelMapping::Value(v) => {
                    body.insert("reasoning".into(), json!({"effort": v}));
                }
                LevelMapping::Unmapped => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
        if model.provider == "xai" {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    merge_sampling_params(model, effective_thinking_level(model, level), &mut body);
    Value::Object(body)
}

/// The endpoint: `{baseUrl}/responses`.
pub fn endpoint(model: &Model) -> String {
    format!("{}/responses", model.base_url.trim_end_matches('/'))
}

/// The request headers: content negotiation, the bearer key, session affinity, then the
/// resolved provider/model headers (last, so they win).
pub fn request_headers(model: &Model, opts: &StreamOptions) -> Vec<(String, String)> {
    let compat = Compat::of(model);
    let mut h: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json".into()),
    ];
    if let Some(key) = &opts.api_key {
        h.push(("authorization".into(), format!("Bearer {key}")));
    }
    if opts.cache_retention != CacheRetention::None {
        if let Some(sid) = &opts.session_id {
            if compat.session_affinity_format == "openrouter" {
                h.push(("x-session-id".into(), sid.clone()));
            } else {
                if compat.session_affinity_format == "openai" {
                    h.push(("session-id".into(), sid.clone()));
                }
                h.push(("x-client-request-id".into(), sid.clone()));
            }
        }
    }
    h.extend(opts.headers.iter().cloned());
    h
}

fn has_auth_header(opts: &StreamOptions) -> bool {
    opts.headers.iter().any(|(k, v)| {
        (k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("cf-aig-authorization"))
            && !v.trim().is_empty()
    })
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The message of an `APIError` the SDK raises from a streamed error payload (no HTTP status):
/// the error object's `message`, else its JSON.
fn stream_error_message(error: &Value) -> String {
    match error.get("message").filter(|m| js_truthy(m)) {
        Some(Value::String(s)) => s.clone(),
        Some(m) => js_stringify(m),
        None if js_truthy(error) => js_stringify(error),
        None => "(no status code or body)".into(),
    }
}

/// The error message of a non-2xx response, as pi composes it from the `openai` SDK error
/// (`formatProviderError(normalizeProviderError(e), "<Provider> API error")`):
/// `<Provider> API error (<status>): <error object JSON>` when the body has a non-empty `error`
/// object, else `<Provider> API error (<status>): <status> <message>`.
pub fn http_error_message(model: &Model, status: u16, body: &str) -> String {
    let prefix = if model.provider == "openai" {
        "OpenAI"
    } else {
        model.provider.as_str()
    };
    let parsed = parse_error_body(body);
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let raw = if parsed.is_some() { None } else { Some(body) };
    let message = sdk_status_message(status, error, raw);
    let error_body = error
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(js_stringify)
        .map(|b| truncate_body(b.trim()))
        .filter(|b| !b.is_empty());
    match error_body {
        Some(b) if !message.contains(&b) => format!("{prefix} API error ({status}): {b}"),
        _ => format!("{prefix} API error ({status}): {message}"),
    }
}

/// pi's `truncateErrorText` at 4000 UTF-16 units.
fn truncate_body(s: &str) -> String {
    const MAX: usize = 4000;
    let total = s.encode_utf16().count();
    if total <= MAX {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut units = 0;
    for c in s.chars() {
        if units + c.len_utf16() > MAX {
            break;
        }
        units += c.len_utf16();
        out.push(c);
    }
    format!("{out}... [truncated {} chars]", total - MAX)
}

/// A JavaScript template-literal rendering of a JSON field (`undefined` when absent).
fn js_template(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".into(),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_template(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => js_stringify(other),
    }
}

/// The streamed arguments of one tool call, with the provider's complete text replacing them
/// when it arrives (pi's `ToolCallArgumentsStream.replace`).
#[derive(Debug, Default)]
struct Args {
    args: ToolArgs,
    partial: Option<Value>,
}

impl Args {
    fn append(&mut self, delta: &str) -> Option<Value> {
        let p = self.args.append(delta);
        if p.is_some() {
            self.partial.clone_from(&p);
        }
        p
    }

    /// Takes the complete text: returns the missing piece when it continues the streamed text
    /// (`None` when it starts over) and the new partial arguments, if re-parsed.
    fn replace(&mut self, text: &str) -> (Option<String>, Option<Value>) {
        if let Some(rest) = text.strip_prefix(self.args.text()) {
            let delta = rest.to_owned();
            let p = if delta.is_empty() {
                None
            } else {
                self.append(&delta)
            };
            return (Some(delta), p);
        }
        self.args = ToolArgs::new();
        let p = self.append(text);
        (None, p)
    }

    fn finish(&self) -> Value {
        self.args.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Stream events

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotKind {
    Thinking,
    Text,
    ToolCall,
}

#[derive(Debug)]
struct Slot {
    kind: SlotKind,
    index: usize,
    args: Args,
}

/// The state of one response stream: which output item feeds which content block.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    slots: HashMap<u64, Slot>,
    /// Content indices of tool calls whose `output_item.done` has not arrived.
    unfinished: Vec<usize>,
    /// Reasoning item id → content index of its thinking block.
    reasoning_by_id: HashMap<String, usize>,
    saw_terminal: bool,
}

fn str_of<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

fn u64_of(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(number_to_u64).unwrap_or(0)
}

/// `Array.join` rendering of one part's field (missing / null → empty).
fn js_join_part(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        other => js_template(other),
    }
}

fn set_arguments(msg: &mut AssistantMessage, index: usize, value: Value) {
    if let Some(ContentBlock::ToolCall { arguments, .. }) = msg.content.get_mut(index) {
        *arguments = value;
    }
}

impl ResponsesStream {
    pub fn new() -> ResponsesStream {
        ResponsesStream::default()
    }

    /// Whether `response.completed` / `.incomplete` / `.failed` was seen.
    pub fn saw_terminal(&self) -> bool {
        self.saw_terminal
    }

    fn create_slot(&mut self, output_index: u64, item: &Value, out: &mut Output<'_>) {
        let kind = match str_of(item, "type") {
            Some("reasoning") => SlotKind::Thinking,
            Some("message") => SlotKind::Text,
            Some("function_call") => SlotKind::ToolCall,
            _ => return,
        };
        let mut args = Args::default();
        let (block, event): (ContentBlock, fn(usize) -> AssistantEvent) = match kind {
            SlotKind::Thinking => (
                ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: false,
                },
                |content_index| AssistantEvent::ThinkingStart { content_index },
            ),
            SlotKind::Text => (ContentBlock::text(""), |content_index| {
                AssistantEvent::TextStart { content_index }
            }),
            SlotKind::ToolCall => {
                let id = format!(
                    "{}|{}",
                    js_template(item.get("call_id")),
                    js_template(item.get("id"))
                );
                let name = str_of(item, "name").unwrap_or("").to_owned();
                let arguments = match str_of(item, "arguments") {
                    Some(a) if !a.is_empty() => args.append(a).unwrap_or_else(|| json!({})),
                    _ => json!({}),
                };
                let index = out.push_block(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments,
                    thought_signature: None,
                });
                self.unfinished.push(index);
                self.slots.insert(output_index, Slot { kind, index, args });
                out.emit(AssistantEvent::ToolcallStart {
                    content_index: index,
                    id,
                    tool_name: name,
                });
                return;
            }
        };
        let index = out.push_block(block);
        self.slots.insert(output_index, Slot { kind, index, args });
        out.emit(event(index));
    }

    fn slot(&self, output_index: u64, kind: SlotKind) -> Option<usize> {
        self.slots
            .get(&output_index)
            .filter(|s| s.kind == kind)
            .map(|s| s.index)
    }

    fn append_thinking(&self, event: &Value, delta: &str, out: &mut Output<'_>) {
        let Some(index) = self.slot(u64_of(event, "output_index"), SlotKind::Thinking) else {
            return;
        };
        if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get_mut(index) {
            thinking.push_str(delta);
        }
        out.emit(AssistantEvent::ThinkingDelta {
            content_index: index,
            delta: delta.to_owned(),
        });
    }

    fn append_text(&self, event: &Value, delta: &str, out: &mut Output<'_>) {
        let Some(index) = self.slot(u64_of(event, "output_index"), SlotKind::Text) else {
            return;
        };
        if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(index) {
            text.push_str(delta);
        }
        out.emit(AssistantEvent::TextDelta {
            content_index: index,
            delta: delta.to_owned(),
        });
    }

    fn tool_slot(&mut self, event: &Value) -> Option<&mut Slot> {
        self.slots
            .get_mut(&u64_of(event, "output_index"))
            .filter(|s| s.kind == SlotKind::ToolCall)
    }

    /// Handles one SSE event (its `event:` name and `data`). `Err` carries the error message
    /// that ends the stream.
    pub fn handle(
        &mut self,
        event_name: Option<&str>,
        data: &str,
        model: &Model,
        out: &mut Output<'_>,
    ) -> Result<(), String> {
        let event: Value = serde_json::from_str(data)
            .map_err(|_| "Error reading response: malformed server-sent event JSON.".to_string())?;
        // The SDK turns `event: error` and any payload with an `error` field into an APIError.
        if event_name == Some("error") {
            let err = match event.get("error") {
                Some(e) if !e.is_null() => e,
                _ => &event,
            };
            return Err(stream_error_message(err));
        }
        if let Some(err) = event.get("error").filter(|e| js_truthy(e)) {
            return Err(stream_error_message(err));
        }
        let delta = str_of(&event, "delta").unwrap_or("");
        match str_of(&event, "type").unwrap_or("") {
            "response.created" => {
                if let Some(id) = event.get("response").and_then(|r| str_of(r, "id")) {
                    out.msg.response_id = Some(id.to_owned());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = event.get("item") {
                    self.create_slot(u64_of(&event, "output_index"), item, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.append_thinking(&event, delta, out);
            }
            "response.reasoning_summary_part.done" => {
                self.append_thinking(&event, "\n\n", out);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                self.append_text(&event, delta, out);
            }
            "response.function_call_arguments.delta" => {
                if let Some(slot) = self.tool_slot(&event) {
                    let index = slot.index;
                    if let Some(partial) = slot.args.append(delta) {
                        set_arguments(&mut out.msg, index, partial);
                    }
                    out.emit(AssistantEvent::ToolcallDelta {
                        content_index: index,
                        delta: delta.to_owned(),
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(slot) = self.tool_slot(&event) {
                    let index = slot.index;
                    let full = str_of(&event, "arguments").unwrap_or("");
                    let (piece, partial) = slot.args.replace(full);
                    if let Some(partial) = partial {
                        set_arguments(&mut out.msg, index, partial);
                    }
                    if let Some(piece) = piece.filter(|d| !d.is_empty()) {
                        out.emit(AssistantEvent::ToolcallDelta {
                            content_index: index,
                            delta: piece,
                        });
                    }
                }
            }
            "response.output_item.done" => {
                let output_index = u64_of(&event, "output_index");
                let null = Value::Null;
                let item = event.get("item").unwrap_or(&null);
                if !self.slots.contains_key(&output_index) {
                    self.create_slot(output_index, item, out);
                }
                self.item_done(output_index, item, out);
            }
            "response.completed" | "response.incomplete" => {
                let null = Value::Null;
                self.finalize(event.get("response").unwrap_or(&null), model, &mut out.msg)?;
            }
            "response.failed" => {
                self.saw_terminal = true;
                let response = event.get("response");
                out.msg.raw_stop_reason = response
                    .and_then(|r| str_of(r, "status"))
                    .map(str::to_owned);
                let error = response
                    .and_then(|r| r.get("error"))
                    .filter(|e| js_truthy(e));
                let reason = response
                    .and_then(|r| r.get("incomplete_details"))
                    .and_then(|d| d.get("reason"))
                    .filter(|r| js_truthy(r));
                let text = if let Some(e) = error {
                    let field = |k: &str, d: &str| {
                        e.get(k)
                            .filter(|v| js_truthy(v))
                            .map_or_else(|| d.to_owned(), |v| js_template(Some(v)))
                    };
                    format!(
                        "{}: {}",
                        field("code", "unknown"),
                        field("message", "no message")
                    )
                } else if let Some(r) = reason {
                    format!("incomplete: {}", js_template(Some(r)))
                } else {
                    "Unknown error (no error details in response)".into()
                };
                return Err(text);
            }
            "error" => {
                return Err(format!(
                    "Error Code {}: {}",
                    js_template(event.get("code")),
                    js_template(event.get("message"))
                ));
            }
            _ => {}
        }
        Ok(())
    }

    fn item_done(&mut self, output_index: u64, item: &Value, out: &mut Output<'_>) {
        let Some(slot) = self.slots.get_mut(&output_index) else {
            return;
        };
        let index = slot.index;
        let joined = |key: &str, field: &str, sep: &str| -> String {
            item.get(key)
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .map(|p| js_join_part(p.get(field)))
                        .collect::<Vec<_>>()
                        .join(sep)
                })
                .unwrap_or_default()
        };
        match (str_of(item, "type"), slot.kind) {
            (Some("reasoning"), SlotKind::Thinking) => {
                let summary = joined("summary", "text", "\n\n");
                let content = joined("content", "text", "\n\n");
                let signature = js_stringify(item);
                let mut final_text = String::new();
                if let Some(ContentBlock::Thinking {
                    thinking,
                    thinking_signature,
                    ..
                }) = out.msg.content.get_mut(index)
                {
                    if !summary.is_empty() {
                        *thinking = summary;
                    } else if !content.is_empty() {
                        *thinking = content;
                    }
                    *thinking_signature = Some(signature);
                    final_text.clone_from(thinking);
                }
                if let Some(id) = str_of(item, "id") {
                    self.reasoning_by_id.insert(id.to_owned(), index);
                }
                self.slots.remove(&output_index);
                out.emit(AssistantEvent::ThinkingEnd {
                    content_index: index,
                    content: final_text,
                });
            }
            (Some("message"), SlotKind::Text) => {
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .map(|p| {
                                let field = if str_of(p, "type") == Some("output_text") {
                                    "text"
                                } else {
                                    "refusal"
                                };
                                js_join_part(p.get(field))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let signature =
                    encode_text_signature(&js_template(item.get("id")), str_of(item, "phase"));
                if let Some(ContentBlock::Text {
                    text: t,
                    text_signature,
                }) = out.msg.content.get_mut(index)
                {
                    t.clone_from(&text);
                    *text_signature = Some(signature);
                }
                self.slots.remove(&output_index);
                out.emit(AssistantEvent::TextEnd {
                    content_index: index,
                    content: text,
                });
            }
            (Some("function_call"), SlotKind::ToolCall) => {
                if let Some(a) = str_of(item, "arguments").filter(|a| !a.is_empty()) {
                    slot.args.replace(a);
                }
                let arguments = slot.args.finish();
                set_arguments(&mut out.msg, index, arguments);
                self.unfinished.retain(|i| *i != index);
                self.slots.remove(&output_index);
                if let Some(block) = out.msg.content.get(index).cloned() {
                    out.emit(AssistantEvent::ToolcallEnd {
                        content_index: index,
                        tool_call: block,
                    });
                }
            }
            _ => {}
        }
    }

    /// `response.completed` / `response.incomplete`: usage, status, response id.
    fn finalize(
        &mut self,
        response: &Value,
        model: &Model,
        msg: &mut AssistantMessage,
    ) -> Result<(), String> {
        self.saw_terminal = true;
        self.backfill_reasoning(response, msg);
        if let Some(id) = str_of(response, "id").filter(|s| !s.is_empty()) {
            msg.response_id = Some(id.to_owned());
        }
        if let Some(u) = response.get("usage").filter(|u| js_truthy(u)) {
            let details = u.get("input_tokens_details");
            let cached = details.map_or(0, |d| u64_of(d, "cached_tokens"));
            let cache_write = details.map_or(0, |d| u64_of(d, "cache_write_tokens"));
            msg.usage = Usage {
                input: u64_of(u, "input_tokens").saturating_sub(cached + cache_write),
                output: u64_of(u, "output_tokens"),
                cache_read: cached,
                cache_write,
                reasoning: Some(
                    u.get("output_tokens_details")
                        .map_or(0, |d| u64_of(d, "reasoning_tokens")),
                ),
                total_tokens: u64_of(u, "total_tokens"),
                ..Usage::default()
            };
        }
        msg.usage.recompute_cost(model);
        apply_service_tier(&mut msg.usage, model, str_of(response, "service_tier"));
        let status = str_of(response, "status");
        let reason = response
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str);
        msg.raw_stop_reason = match (status, reason) {
            (s, Some(r)) => Some(format!("{}.{r}", s.unwrap_or("undefined"))),
            (s, None) => s.map(str::to_owned),
        };
        let (stop, error) = map_status(status, reason)?;
        msg.stop_reason = stop;
        msg.error_message = error;
        if stop == StopReason::Stop && msg.tool_calls().next().is_some() {
            msg.stop_reason = StopReason::ToolUse;
        }
        Ok(())
    }

    /// Some servers send `encrypted_content` only in the terminal response's output.
    fn backfill_reasoning(&self, response: &Value, msg: &mut AssistantMessage) {
        let Some(items) = response.get("output").and_then(Value::as_array) else {
            return;
        };
        for item in items {
            if str_of(item, "type") != Some("reasoning") {
                continue;
            }
            let Some(enc) = item.get("encrypted_content").filter(|e| js_truthy(e)) else {
                continue;
            };
            let Some(index) = str_of(item, "id").and_then(|id| self.reasoning_by_id.get(id)) else {
                continue;
            };
            if let Some(ContentBlock::Thinking {
                thinking_signature: Some(sig),
                ..
            }) = msg.content.get_mut(*index)
            {
                if let Ok(Value::Object(mut stored)) = serde_json::from_str::<Value>(sig) {
                    if stored.get("encrypted_content").is_some_and(js_truthy) {
                        continue;
                    }
                    stored.insert("encrypted_content".into(), enc.clone());
                    *sig = js_stringify(&Value::Object(stored));
                }
            }
        }
    }

    /// Checks after the body ended: a terminal event was seen, a `toolUse` response has no
    /// unfinished tool call, and the stop reason is a success.
    pub fn finish(&self, msg: &AssistantMessage) -> Result<(), String> {
        if !self.saw_terminal {
            return Err(NO_TERMINAL_EVENT.into());
        }
        if msg.stop_reason == StopReason::ToolUse {
            if let Some(i) = self.unfinished.first() {
                if let Some(ContentBlock::ToolCall { id, name, .. }) = msg.content.get(*i) {
                    return Err(format!(
                        "OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"
                    ));
                }
            }
        }
        match msg.stop_reason {
            StopReason::Pending => Err(NO_STOP_REASON.into()),
            StopReason::Error | StopReason::Aborted => Err(msg
                .error_message
                .clone()
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "An unknown error occurred".into())),
            _ => Ok(()),
        }
    }
}

/// pi's `mapStopReason` for a terminal response status.
fn map_status(
    status: Option<&str>,
    reason: Option<&str>,
) -> Result<(StopReason, Option<String>), String> {
    Ok(match status {
        None | Some("completed") | Some("in_progress") | Some("queued") => (StopReason::Stop, None),
        Some("incomplete") => match reason {
            Some("max_output_tokens") => (StopReason::Length, None),
            Some(r) => (StopReason::Error, Some(format!("Response incomplete: {r}"))),
            None => (
                StopReason::Error,
                Some("Response incomplete without a provider reason".into()),
            ),
        },
        Some("failed") | Some("cancelled") => (StopReason::Error, None),
        Some(other) => return Err(format!("Unhandled stop reason: {other}")),
    })
}

/// Service-tier pricing (`flex` half price, `priority` double; gpt-5.5 priority 2.5×).
fn apply_service_tier(usage: &mut Usage, model: &Model, tier: Option<&str>) {
    let m = match tier {
        Some("flex") => 0.5,
        Some("priority") | Some("fast") => {
            if model.id == "gpt-5.5" {
                2.5
            } else {
                2.0
            }
        }
        _ => return,
    };
    let c = &mut usage.cost;
    c.input *= m;
    c.output *= m;
    c.cache_read *= m;
    c.cache_write *= m;
    c.total = c.input + c.output + c.cache_read + c.cache_write;
}

// ---------------------------------------------------------------------------------------------
// The request

/// pi's abort texts for this API: `Request aborted` from pi's retry wrapper until the
/// response arrived. While the body streams, the SDK ends the event loop quietly, so pi
/// reports the missing terminal event, or `Request was aborted` once it had been seen.
pub fn abort_texts(saw_terminal: bool) -> AbortTexts {
    AbortTexts {
        before_request: "Request aborted",
        before_response: "Request aborted",
        streaming: if saw_terminal {
            "Request was aborted"
        } else {
            NO_TERMINAL_EVENT
        },
    }
}

/// Streams one response from an `openai-responses` model (the dispatcher's adapter shape).
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
    let mut state = ResponsesStream::new();
    let result = run(model, ctx, opts, cancel, &mut out, &mut state);
    out.finish(result, cancel, &abort_texts(state.saw_terminal()))
}

fn run(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    out: &mut Output<'_>,
    state: &mut ResponsesStream,
) -> Result<(), Failure> {
    if opts.api_key.as_deref().is_none_or(str::is_empty) && !has_auth_header(opts) {
        return Err(Failure::Error(format!(
            "No API key for provider: {}",
            model.provider
        )));
    }
    let max_tokens = base_max_tokens(model, ctx, opts);
    let body = build_body(model, ctx, opts, max_tokens);
    let request = HttpRequest {
        url: endpoint(model),
        headers: request_headers(model, opts),
        body: crate::util::to_js_vec(&body).unwrap_or_default(),
        idle_timeout: opts.idle_timeout,
    };
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    let response = post_streaming(request, cancel, out, ERROR_BODY_LIMIT, |status, _, text| {
        http_error_message(model, status, text)
    })?;
    out.start();
    for event in SseParser::new(BufReader::new(response)) {
        let event = event.map_err(|e| read_failure(&e, cancel))?;
        if cancel.is_cancelled() {
            return Err(Failure::Aborted);
        }
        // The SDK stops at `[DONE]`.
        if event.data == "[DONE]" {
            break;
        }
        state
            .handle(event.event.as_deref(), &event.data, model, out)
            .map_err(Failure::Error)?;
    }
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    state.finish(&out.msg).map_err(Failure::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;
    use crate::llm::types::LlmMessage;

    fn model() -> Model {
        Model {
            id: "mock-gpt".into(),
            name: "mock-gpt".into(),
            api: "openai-responses".into(),
            provider: "mockoai".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            reasoning: true,
            input: vec!["text".into()],
            cost: ModelCost {
                input: 2.0,
                output: 8.0,
                cache_read: 0.5,
                cache_write: 0.0,
                tiers: None,
            },
            context_window: 128_000,
            max_tokens: 16_384,
            ..Model::default()
        }
    }

    fn user(text: &str) -> LlmMessage {
        LlmMessage::User {
            content: vec![ContentBlock::text(text)],
            timestamp: 1,
        }
    }

    fn ctx(messages: Vec<LlmMessage>) -> LlmContext {
        LlmContext {
            system_prompt: "S.".into(),
            messages,
            tools: Vec::new(),
        }
    }

    /// Runs canned SSE text through the event handler: the final message, the reported events
    /// (wire form) and the stream's verdict.
    fn run_sse(model: &Model, sse: &str) -> (AssistantMessage, Vec<Value>, Result<(), String>) {
        let mut events = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| match u {
            StreamUpdate::Start(_) => events.push(json!({"type": "start"})),
            StreamUpdate::Event(_, e) => events.push(e.to_wire()),
        };
        let mut out = Output::new(model, &mut cb);
        out.start();
        let mut state = ResponsesStream::new();
        let mut result = Ok(());
        for ev in SseParser::new(sse.as_bytes()) {
            let ev = ev.unwrap();
            if let Err(e) = state.handle(ev.event.as_deref(), &ev.data, model, &mut out) {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            result = state.finish(&out.msg);
        }
        let msg = out.msg;
        (msg, events, result)
    }

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
            .collect()
    }

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
        c.tools = vec![Tool {
            name: "bash".into(),
            description: "Run a command".into(),
            parameters: json!({"type": "object"}),
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
        with_tools.tools = vec![Tool {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
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
        }]);
        assert_eq!(
            convert_input(&vision, &c)[1],
            json!({"role": "user", "content": [{"type": "input_text", "text": "look"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/jpeg;base64,BBBB"}]})
        );
    }

    #[test]
    fn http_error_messages_match_pi() {
        let m = model();
        assert_eq!(
            http_error_message(
                &m,
                429,
                r#"{"error": {"message": "Rate limited", "type": "rate_limit_error", "param": null, "code": null}}"#
            ),
            r#"mockoai API error (429): {"message":"Rate limited","type":"rate_limit_error","param":null,"code":null}"#
        );
        assert_eq!(
            http_error_message(&m, 500, "upstream exploded"),
            "mockoai API error (500): 500 upstream exploded"
        );
        assert_eq!(
            http_error_message(&m, 502, ""),
            "mockoai API error (502): 502 status code (no body)"
        );
        assert_eq!(
            http_error_message(&m, 400, r#"{"detail":"x"}"#),
            "mockoai API error (400): 400 status code (no body)"
        );
        let mut openai = model();
        openai.provider = "openai".into();
        assert_eq!(
            http_error_message(&openai, 401, r#"{"error":{"message":"bad key"}}"#),
            r#"OpenAI API error (401): {"message":"bad key"}"#
        );
    }

    /// pi's s1 capture: reasoning summary, text, a streamed tool call, usage with cached and
    /// reasoning tokens.
    #[test]
    fn reasoning_text_and_tool_call() {
        let m = model();
        let events = [
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "rs_0", "type": "reasoning", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0,
                "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Let m"}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "e think."}),
            json!({"type": "response.reasoning_summary_part.done", "output_index": 0,
                "part": {"type": "summary_text", "text": "Let me think."}}),
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "rs_0", "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Let me think."}],
                    "encrypted_content": "ENC"}}),
            json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Runn"}),
            json!({"type": "response.output_text.delta", "output_index": 1, "delta": "ing it."}),
            json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"id": "msg_1", "type": "message", "status": "completed",
                    "content": [{"type": "output_text", "text": "Running it.", "annotations": []}]}}),
            json!({"type": "response.output_item.added", "output_index": 2,
                "item": {"id": "fc_2", "type": "function_call", "call_id": "call_1",
                    "name": "bash", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2,
                "delta": "{\"command\": \"e"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2,
                "delta": "cho hi\""}),
            json!({"type": "response.function_call_arguments.done", "output_index": 2,
                "arguments": "{\"command\": \"echo hi\"}"}),
            json!({"type": "response.output_item.done", "output_index": 2,
                "item": {"id": "fc_2", "type": "function_call", "status": "completed",
                    "call_id": "call_1", "name": "bash", "arguments": "{\"command\": \"echo hi\"}"}}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                "usage": {"input_tokens": 130, "input_tokens_details": {"cached_tokens": 30},
                    "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 5},
                    "total_tokens": 150}}}),
        ];
        let (msg, evs, result) = run_sse(&m, &sse(&events));
        assert_eq!(result, Ok(()));
        assert_eq!(
            Value::Array(evs),
            json!([
                {"type": "start"},
                {"type": "thinking_start", "contentIndex": 0},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "Let m"},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "e think."},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "\n\n"},
                {"type": "thinking_end", "contentIndex": 0, "content": "Let me think."},
                {"type": "text_start", "contentIndex": 1},
                {"type": "text_delta", "contentIndex": 1, "delta": "Runn"},
                {"type": "text_delta", "contentIndex": 1, "delta": "ing it."},
                {"type": "text_end", "contentIndex": 1, "content": "Running it."},
                {"type": "toolcall_start", "contentIndex": 2, "id": "call_1|fc_2", "toolName": "bash"},
                {"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"command\": \"e"},
                {"type": "toolcall_delta", "contentIndex": 2, "delta": "cho hi\""},
                {"type": "toolcall_delta", "contentIndex": 2, "delta": "}"},
                {"type": "toolcall_end", "contentIndex": 2, "toolCall": {"type": "toolCall",
                    "id": "call_1|fc_2", "name": "bash", "arguments": {"command": "echo hi"}}}
            ])
        );
        let mut want = AssistantMessage::new(&m, msg.timestamp);
        want.content = vec![
            ContentBlock::Thinking {
                thinking: "Let me think.".into(),
                thinking_signature: Some(
                    r#"{"id":"rs_0","type":"reasoning","summary":[{"type":"summary_text","text":"Let me think."}],"encrypted_content":"ENC"}"#.into(),
                ),
                redacted: false,
            },
            ContentBlock::Text {
                text: "Running it.".into(),
                text_signature: Some(r#"{"v":1,"id":"msg_1"}"#.into()),
            },
            ContentBlock::ToolCall {
                id: "call_1|fc_2".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo hi"}),
                thought_signature: None,
            },
        ];
        want.stop_reason = StopReason::ToolUse;
        want.response_id = Some("resp_1".into());
        want.raw_stop_reason = Some("completed".into());
        assert_eq!(
            msg.to_value()["usage"],
            json!({"input": 100, "output": 20, "cacheRead": 30,
            "cacheWrite": 0, "reasoning": 5, "totalTokens": 150,
            "cost": {"input": 0.00019999999999999998, "output": 0.00015999999999999999,
                "cacheRead": 0.000014999999999999999, "cacheWrite": 0,
                "total": 0.00037499999999999995, "totalFromProvider": false}})
        );
        want.usage = msg.usage.clone();
        assert_eq!(msg, want);
    }

    #[test]
    fn refusal_reasoning_text_and_items_without_added_events() {
        let m = model();
        let events = [
            // An item that only arrives as `output_item.done` still becomes a block.
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "rs_0", "type": "reasoning", "summary": [],
                    "content": [{"type": "reasoning_text", "text": "a"},
                        {"type": "reasoning_text", "text": "b"}]}}),
            json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"id": "msg_1", "type": "message", "phase": "final_answer"}}),
            json!({"type": "response.refusal.delta", "output_index": 1, "delta": "No."}),
            json!({"type": "response.output_text.delta", "output_index": 7, "delta": "ignored"}),
            json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"id": "msg_1", "type": "message", "phase": "final_answer",
                    "content": [{"type": "refusal", "refusal": "No."}]}}),
            json!({"type": "response.incomplete", "response": {"id": "resp_2",
                "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}}),
        ];
        let (msg, evs, result) = run_sse(&m, &sse(&events));
        assert_eq!(result, Err("Response incomplete: content_filter".into()));
        assert_eq!(evs.len(), 6, "{evs:?}");
        assert_eq!(msg.content[0], ContentBlock::Thinking {
            thinking: "a\n\nb".into(),
            thinking_signature: Some(r#"{"id":"rs_0","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"a"},{"type":"reasoning_text","text":"b"}]}"#.into()),
            redacted: false,
        });
        assert_eq!(
            msg.content[1],
            ContentBlock::Text {
                text: "No.".into(),
                text_signature: Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#.into()),
            }
        );
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.raw_stop_reason.as_deref(),
            Some("incomplete.content_filter")
        );
        // Empty usage is still priced (all zero).
        assert_eq!(msg.usage.cost.total_from_provider, Some(false));
    }

    #[test]
    fn length_and_service_tier() {
        let m = model();
        let events = [
            json!({"type": "response.incomplete", "response": {"id": "r",
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "service_tier": "flex",
            "usage": {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}}}),
        ];
        let (msg, _, result) = run_sse(&m, &sse(&events));
        assert_eq!(result, Ok(()));
        assert_eq!(msg.stop_reason, StopReason::Length);
        assert_eq!(
            msg.raw_stop_reason.as_deref(),
            Some("incomplete.max_output_tokens")
        );
        assert_eq!(msg.usage.reasoning, Some(0));
        assert_eq!(msg.usage.cost.input, 2.0 / 1e6 * 10.0 * 0.5);
    }

    #[test]
    fn encrypted_content_backfilled_from_the_terminal_response() {
        let m = model();
        let events = [
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "rs_0", "type": "reasoning"}}),
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "rs_0", "type": "reasoning", "summary": [], "encrypted_content": null}}),
            json!({"type": "response.completed", "response": {"status": "completed",
                "output": [{"id": "rs_0", "type": "reasoning", "encrypted_content": "LATE"}]}}),
        ];
        let (msg, _, result) = run_sse(&m, &sse(&events));
        assert_eq!(result, Ok(()));
        assert_eq!(
            msg.content[0],
            ContentBlock::Thinking {
                thinking: String::new(),
                thinking_signature: Some(
                    r#"{"id":"rs_0","type":"reasoning","summary":[],"encrypted_content":"LATE"}"#
                        .into()
                ),
                redacted: false,
            }
        );
        assert_eq!(msg.stop_reason, StopReason::Stop);
    }

    #[test]
    fn arguments_replaced_when_done_differs() {
        let m = model();
        let events = [
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "fc_0", "type": "function_call", "call_id": "c", "name": "t",
                    "arguments": "{\"a\":"}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 0,
                "arguments": "{\"b\":2}"}),
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "fc_0", "type": "function_call", "call_id": "c", "name": "t",
                    "arguments": "{\"b\":2}"}}),
            json!({"type": "response.completed", "response": {"status": "completed"}}),
        ];
        let (msg, evs, result) = run_sse(&m, &sse(&events));
        assert_eq!(result, Ok(()));
        // No delta for a replacement that does not continue the streamed text.
        assert_eq!(
            evs.iter().filter(|e| e["type"] == "toolcall_delta").count(),
            1
        );
        assert_eq!(
            msg.content[0],
            ContentBlock::ToolCall {
                id: "c|fc_0".into(),
                name: "t".into(),
                arguments: json!({"b": 2}),
                thought_signature: None,
            }
        );
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn stream_errors() {
        let m = model();
        let run = |events: &str| run_sse(&m, events).2;
        // No terminal event.
        assert_eq!(
            run(&sse(&[
                json!({"type": "response.created", "response": {"id": "r"}})
            ])),
            Err(NO_TERMINAL_EVENT.into())
        );
        // An unfinished tool call in a toolUse response.
        assert_eq!(
            run(&sse(&[
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"id": "fc_0", "type": "function_call", "call_id": "c", "name": "t"}}),
                json!({"type": "response.completed", "response": {"status": "completed"}}),
            ])),
            Err(
                "OpenAI Responses stream completed with an unfinished tool call: t (c|fc_0)".into()
            )
        );
        // `event: error` is raised by the SDK with the payload's message.
        assert_eq!(
            run("event: error\ndata: {\"type\":\"error\",\"code\":\"overloaded_error\",\"message\":\"Overloaded\",\"param\":null}\n\n"),
            Err("Overloaded".into())
        );
        // An unnamed error payload reaches pi's own handler.
        assert_eq!(
            run("data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n"),
            Err("Error Code rate_limit_exceeded: slow down".into())
        );
        assert_eq!(
            run("data: {\"type\":\"x\",\"error\":{\"code\":\"c\"}}\n\n"),
            Err("{\"code\":\"c\"}".into())
        );
        // response.failed variants.
        let failed = |response: Value| {
            run(&sse(&[
                json!({"type": "response.failed", "response": response}),
            ]))
        };
        assert_eq!(
            failed(
                json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}})
            ),
            Err("server_error: boom".into())
        );
        assert_eq!(
            failed(json!({"status": "failed", "error": {"message": ""}})),
            Err("unknown: no message".into())
        );
        assert_eq!(
            failed(json!({"status": "failed", "incomplete_details": {"reason": "x"}})),
            Err("incomplete: x".into())
        );
        assert_eq!(
            failed(json!({"status": "failed"})),
            Err("Unknown error (no error details in response)".into())
        );
        // A completed event with a failed status.
        assert_eq!(
            run(&sse(&[
                json!({"type": "response.completed", "response": {"status": "cancelled"}})
            ])),
            Err("An unknown error occurred".into())
        );
        assert_eq!(
            run(&sse(&[
                json!({"type": "response.completed", "response": {"status": "weird"}})
            ])),
            Err("Unhandled stop reason: weird".into())
        );
        assert_eq!(
            run("data: {nope\n\n"),
            Err("Error reading response: malformed server-sent event JSON.".into())
        );
    }
}
