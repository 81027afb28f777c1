//! The Mistral request: tool-call ids in Mistral's 9-character form, messages, tools, the body
//! (in the wire's snake_case and key order) and headers.

use super::*;
use crate::llm::strict_schema;

/// Mistral's tool-call ids are 9 characters of `[a-zA-Z0-9]`.
const TOOL_CALL_ID_LENGTH: usize = 9;

// ---------------------------------------------------------------------------------------------
// Tool-call ids

/// pi's `deriveMistralToolCallId`: an id already of Mistral's form (after removing the other
/// characters) is kept; otherwise the first 9 alphanumerics of a short hash of it (`:<n>`
/// appended to the seed on the `n`th retry after a collision).
pub(super) fn derive_tool_call_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.len() == TOOL_CALL_ID_LENGTH {
        return normalized;
    }
    let base = if normalized.is_empty() {
        id
    } else {
        normalized.as_str()
    };
    let seed = if attempt == 0 {
        base.to_owned()
    } else {
        format!("{base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(TOOL_CALL_ID_LENGTH)
        .collect()
}

/// pi's `createMistralToolCallIdNormalizer`: one per request; distinct ids never share a
/// Mistral id.
#[derive(Default)]
struct IdNormalizer {
    /// (original, mistral id) pairs.
    map: Vec<(String, String)>,
}

impl IdNormalizer {
    fn normalize(&mut self, id: &str) -> String {
        if let Some((_, n)) = self.map.iter().find(|(o, _)| o == id) {
            return n.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_tool_call_id(id, attempt);
            let owner = self.map.iter().find(|(_, n)| *n == candidate);
            if owner.is_none_or(|(o, _)| o == id) {
                self.map.push((id.to_owned(), candidate.clone()));
                return candidate;
            }
            attempt += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

fn image_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// pi's `buildToolResultText`.
fn tool_result_text(text: &str, has_images: bool, supports_images: bool, is_error: bool) -> String {
    let trimmed = text.trim();
    let prefix = if is_error { "[tool error] " } else { "" };
    if !trimmed.is_empty() {
        let suffix = if has_images && !supports_images {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{prefix}{trimmed}{suffix}");
    }
    let rest = match (has_images, supports_images) {
        (true, true) => "(see attached image)",
        (true, false) => "(image omitted: model does not support images)",
        (false, _) => "(no tool output)",
    };
    format!("{prefix}{rest}")
}

fn user_message(content: &[ContentBlock], as_string: bool, supports_images: bool) -> Option<Value> {
    if as_string {
        let text = match content.first() {
            Some(ContentBlock::Text { text, .. }) => text.as_str(),
            _ => "",
        };
        return Some(json!({"role": "user", "content": text}));
    }
    let had_images = content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }));
    let parts: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { data, mime_type } if supports_images => {
                Some(json!({"type": "image_url", "image_url": image_url(mime_type, data)}))
            }
            _ => None,
        })
        .collect();
    if !parts.is_empty() {
        return Some(json!({"role": "user", "content": parts}));
    }
    (had_images && !supports_images).then(
        || json!({"role": "user", "content": "(image omitted: model does not support images)"}),
    )
}

fn assistant_message(content: &[ContentBlock]) -> Option<Value> {
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text, .. } => {
                if !text.trim().is_empty() {
                    parts.push(json!({"type": "text", "text": text}));
                }
            }
            ContentBlock::Thinking { thinking, .. } => {
                if !thinking.trim().is_empty() {
                    parts.push(json!({"type": "thinking",
                        "thinking": [{"type": "text", "text": thinking}]}));
                }
            }
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                let args = if arguments.is_null() {
                    json!({})
                } else {
                    arguments.clone()
                };
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": js_stringify(&args)},
                    "index": 0,
                }));
            }
            ContentBlock::Image { .. } => {}
        }
    }
    if parts.is_empty() && calls.is_empty() {
        return None;
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert("prefix".into(), json!(false));
    if !parts.is_empty() {
        m.insert("content".into(), Value::Array(parts));
    }
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(m))
}

fn tool_result_message(
    tool_call_id: &str,
    tool_name: &str,
    content: &[ContentBlock],
    is_error: bool,
    supports_images: bool,
) -> Value {
    let text: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let has_images = content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }));
    let mut parts = vec![json!({"type": "text",
        "text": tool_result_text(&text.join("\n"), has_images, supports_images, is_error)})];
    if supports_images {
        for b in content {
            if let ContentBlock::Image { data, mime_type } = b {
                parts.push(json!({"type": "image_url", "image_url": image_url(mime_type, data)}));
            }
        }
    }
    // Key order of pi's wire payload: `toolCallId` is renamed (moved last).
    json!({"role": "tool", "name": tool_name, "content": parts, "tool_call_id": tool_call_id})
}

/// The `messages` array (pi's `toChatMessages` after `toMistralWireMessage`).
pub fn convert_messages(model: &Model, ctx: &LlmContext) -> Vec<Value> {
    let supports_images = model.supports_images();
    let mut messages = ctx.messages.clone();
    let ids = std::cell::RefCell::new(IdNormalizer::default());
    normalize_tool_call_ids(&mut messages, model, |id| ids.borrow_mut().normalize(id));
    let mut out = Vec::new();
    if !ctx.system_prompt.is_empty() {
        out.push(json!({"role": "system", "content": ctx.system_prompt}));
    }
    for msg in &messages {
        let item = match msg {
            LlmMessage::User {
                content, as_string, ..
            } => user_message(content, *as_string, supports_images),
            LlmMessage::Assistant(a) => assistant_message(&a.content),
            // A later system message in place (`supportsMidConvoSystemMessages`).
            LlmMessage::System(system) => {
                let text = system.update_text();
                (!text.is_empty()).then(|| json!({"role": "system", "content": text}))
            }
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => Some(tool_result_message(
                tool_call_id,
                tool_name,
                content,
                *is_error,
                supports_images,
            )),
        };
        out.extend(item);
    }
    out
}

/// The `tools` array (pi's `toFunctionTools`): strict only with `compat.supportsStrictMode`.
pub fn convert_tools(model: &Model, tools: &[ToolSpec]) -> Vec<Value> {
    let supports_strict = model.compat_bool("supportsStrictMode").unwrap_or(false);
    tools
        .iter()
        .map(|t| {
            let strict = strict_schema::strict_sampling(t, supports_strict, None);
            json!({"type": "function", "function": {
                "name": t.name,
                "description": t.description,
                "parameters": strict_schema::parameters(t, strict, None),
                "strict": strict.unwrap_or(false),
            }})
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Body and headers

/// Prompt caching is on: a session id and a cache retention other than none.
fn caching(opts: &StreamOptions) -> Option<&str> {
    opts.session_id
        .as_deref()
        .filter(|s| !s.is_empty() && opts.cache_retention != CacheRetention::None)
}

/// The thinking fields (pi's `streamSimple`): models with a `thinkingLevelMap` send
/// `reasoning_effort` (the level's entry, `"high"` when it has none; at off the `off` entry
/// when it is a string); other reasoning models send `prompt_mode: "reasoning"` when thinking.
fn thinking_fields(model: &Model, level: ThinkingLevel) -> (Option<String>, Option<&'static str>) {
    // pi's agent passes no reasoning option at `off` (no clamping then).
    let level = match level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    };
    let has_map = model.reasoning && model.thinking_level_map.is_some();
    if !has_map {
        let mode = (model.reasoning && level != ThinkingLevel::Off).then_some("reasoning");
        return (None, mode);
    }
    let effort = match (level, level_mapping(model, level)) {
        (ThinkingLevel::Off, LevelMapping::Value(v)) => Some(v.to_owned()),
        (ThinkingLevel::Off, _) => None,
        (_, LevelMapping::Value(v)) => Some(v.to_owned()),
        _ => Some("high".to_owned()),
    };
    (effort.filter(|e| !e.is_empty()), None)
}

/// The request body (pi's `buildChatPayload` through `toMistralWirePayload`, whose renaming
/// moves the renamed keys after the others). `max_tokens` is the fitted output cap.
pub fn build_body(model: &Model, ctx: &LlmContext, opts: &StreamOptions, max_tokens: u64) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("stream".into(), json!(true));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, ctx)),
    );
    if !ctx.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(model, &ctx.tools)),
        );
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    let (effort, prompt_mode) = thinking_fields(model, opts.thinking_level);
    if let Some(e) = effort {
        body.insert("reasoning_effort".into(), json!(e));
    }
    if let Some(m) = prompt_mode {
        body.insert("prompt_mode".into(), json!(m));
    }
    if let Some(sid) = caching(opts) {
        body.insert("prompt_cache_key".into(), json!(sid));
    }
    Value::Object(body)
}

/// The endpoint: `<baseUrl>/v1/chat/completions` (pi resolves `v1/chat/completions` against
/// the base URL with one trailing slash).
pub fn endpoint(model: &Model) -> String {
    format!(
        "{}/v1/chat/completions",
        model.base_url.trim_end_matches('/')
    )
}

/// Sets a header as a `Headers` object does: a same-named header (any case) is replaced.
fn set_header(h: &mut Vec<(String, String)>, name: &str, value: &str) {
    let name = name.to_ascii_lowercase();
    match h.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value.to_owned(),
        None => h.push((name, value.to_owned())),
    }
}

/// The request headers: `accept: text/event-stream`, the bearer key, the JSON content type,
/// the resolved provider/model headers (replacing same-named ones), then `x-affinity: <session
/// id>` when caching and no header named it.
pub fn request_headers(opts: &StreamOptions) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = Vec::new();
    set_header(&mut h, "accept", "text/event-stream");
    if let Some(key) = &opts.api_key {
        set_header(&mut h, "authorization", &format!("Bearer {key}"));
    }
    set_header(&mut h, "content-type", "application/json");
    for (name, value) in &opts.headers {
        set_header(&mut h, name, value);
    }
    let explicit = opts
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("x-affinity"));
    if let Some(sid) = caching(opts).filter(|_| !explicit) {
        set_header(&mut h, "x-affinity", sid);
    }
    h
}
