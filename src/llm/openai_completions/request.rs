//! Request building for the Chat Completions API: body, headers, message/tool conversion,
//! thinking parameters and cache markers.

use super::*;
use crate::llm::strict_schema;
use crate::llm::transcript::{self, ToolSupport};

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

/// `folded`: how many of the leading system messages the request's tool list holds (see
/// [`transcript::resolve_tools`]); a later one declares its added tools in place.
fn convert_messages(
    model: &Model,
    ctx: &LlmContext,
    messages: &[LlmMessage],
    compat: &CompletionsCompat,
    folded: usize,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let instruction_role = if model.reasoning && compat.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    if !ctx.system_prompt.is_empty() {
        out.push(json!({"role": instruction_role, "content": ctx.system_prompt}));
    }
    let mut system_index = usize::from(ctx.leading_system.is_some());
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
            // A later system message in place (`supportsMidConvoSystemMessages`): tools it adds
            // past the folded ones as a Kimi-style `{role: "system", tools}` message, then its
            // text as an instruction.
            LlmMessage::System(system) => {
                if system_index >= folded && !system.tools_added.is_empty() {
                    out.push(json!({"role": "system",
                        "tools": convert_tools(&system.tools_added, compat)}));
                }
                system_index += 1;
                let text = system.update_text();
                if !text.is_empty() {
                    out.push(json!({"role": instruction_role, "content": text}));
                }
                last_was_tool_result = false;
            }
            LlmMessage::User {
                content,
                as_string: true,
                ..
            } => {
                // Stored as a plain string: sent as one, empty or not (pi's convertMessages).
                let text: String = text_blocks(content).collect();
                last_was_tool_result = false;
                out.push(json!({"role": "user", "content": text}));
            }
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

fn convert_tools(tools: &[ToolSpec], compat: &CompletionsCompat) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut f = Map::new();
            f.insert("name".into(), Value::from(t.name.as_str()));
            f.insert("description".into(), Value::from(t.description.as_str()));
            let strict = strict_schema::strict_sampling(t, compat.supports_strict_mode, None);
            f.insert(
                "parameters".into(),
                strict_schema::parameters(t, strict, None),
            );
            if compat.supports_strict_mode {
                f.insert("strict".into(), Value::Bool(strict.unwrap_or(false)));
            }
            json!({"type": "function", "function": Value::Object(f)})
        })
        .collect()
}

fn has_tool_history(messages: &[LlmMessage]) -> bool {
    messages.iter().any(|m| match m {
        LlmMessage::ToolResult { .. } => true,
        LlmMessage::Assistant(a) => a.tool_calls().next().is_some(),
        LlmMessage::User { .. } | LlmMessage::System(_) => false,
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
pub(super) fn reasoning_effort(model: &Model, opts: &StreamOptions) -> Option<ThinkingLevel> {
    match effective_thinking_level(model, opts.thinking_level) {
        ThinkingLevel::Off => None,
        l => Some(l),
    }
}

/// pi's `buildChatTemplateValues`: the compat map `key` (`chatTemplateArgs` /
/// `chatTemplateKwargs`) with `{"$var":"thinking.enabled"}` → whether thinking is on,
/// `{"$var":"thinking.budget"}` → the budget, other objects → the mapped effort (dropped when
/// the level maps to a non-string, or when off and marked `omitWhenOff`), plain values as is.
fn chat_template_values(
    model: &Model,
    effort: Option<ThinkingLevel>,
    key: &str,
    budget: Option<u64>,
) -> Option<Map<String, Value>> {
    let values = model.compat.as_ref()?.get(key)?.as_object()?;
    let mut out = Map::new();
    for (name, value) in values {
        let resolved = match value {
            Value::Object(o) => {
                if effort.is_none() && o.get("omitWhenOff").and_then(Value::as_bool) == Some(true) {
                    None
                } else if o.get("$var").and_then(Value::as_str) == Some("thinking.enabled") {
                    Some(Value::Bool(effort.is_some()))
                } else if o.get("$var").and_then(Value::as_str) == Some("thinking.budget") {
                    budget.map(Value::from)
                } else {
                    let mapped = match effort {
                        Some(level) => map_value(model, level.as_str()),
                        None => map_value(model, "off"),
                    };
                    match (mapped, effort) {
                        (None, Some(level)) => Some(Value::from(level.as_str())),
                        (None, None) => None,
                        (Some(v @ Value::String(_)), _) => Some(v.clone()),
                        (Some(_), _) => None,
                    }
                }
            }
            other => Some(other.clone()),
        };
        if let Some(v) = resolved {
            out.insert(name.clone(), v);
        }
    }
    (!out.is_empty()).then_some(out)
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
    let support =
        if compat.supports_mid_convo_system_messages && compat.supports_mid_convo_tool_additions {
            ToolSupport::Additions
        } else {
            ToolSupport::None
        };
    let transcript_tools = transcript::resolve_tools(ctx, support);
    let mut messages = convert_messages(model, ctx, &messages_in, &compat, transcript_tools.folded);
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
    if !transcript_tools.request_tools.is_empty() {
        tools_value = Some(Value::Array(convert_tools(
            &transcript_tools.request_tools,
            &compat,
        )));
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
            ThinkingFormat::AntLing => {
                if let Some(Value::String(e)) = effort.and_then(|l| map_value(model, l.as_str())) {
                    body.insert("reasoning".into(), json!({ "effort": e }));
                }
            }
            ThinkingFormat::Baseten | ThinkingFormat::ChatTemplate => {
                let (field, key) = if compat.thinking_format == ThinkingFormat::Baseten {
                    ("chat_template_args", "chatTemplateArgs")
                } else {
                    ("chat_template_kwargs", "chatTemplateKwargs")
                };
                let budget = effort.map(|level| {
                    clamp_thinking_budget_to_answer_room(
                        thinking_budget_for_level(level, &opts.thinking_budgets),
                        max_tokens,
                    )
                });
                if let Some(values) = chat_template_values(model, effort, key, budget) {
                    body.insert(field.into(), Value::Object(values));
                }
                if compat.thinking_format == ThinkingFormat::Baseten
                    && compat.supports_reasoning_effort
                {
                    let mapped = match effort {
                        Some(level) => map_value(model, level.as_str()),
                        None => map_value(model, "off"),
                    };
                    let value = match (mapped, effort) {
                        (Some(v), _) => Some(v.clone()),
                        (None, Some(level)) => Some(Value::from(level.as_str())),
                        (None, None) => None,
                    };
                    if let Some(v @ Value::String(_)) = value {
                        body.insert("reasoning_effort".into(), v);
                    }
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

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::llm::convert::build_llm_context;
    use crate::llm::golden;
    use crate::llm::types::AssistantMessage;

    #[test]
    fn requests_match_golden() {
        let reqs = golden::requests("openai_chat");
        let system = golden::system_message("openai_chat");
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
                    arguments_error: None,
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

    fn simple_ctx() -> LlmContext {
        LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: "SYS".into(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
                as_string: false,
            }],
            tools: vec![],
        }
    }

    /// Regression: a session written by pi with a plain-string user message went out as a
    /// one-part array; pi sends the string.
    #[test]
    fn string_user_content_goes_out_as_a_string() {
        let convert = |json: serde_json::Value| {
            let msgs = vec![json];
            build_llm_context(&msgs, &mock_gpt())
        };
        let ctx = convert(json!({"role":"user","content":"old prompt","timestamp":1}));
        let r = build_request(&mock_gpt(), &ctx, &opts()).unwrap();
        assert_eq!(
            r.body["messages"][0],
            json!({"role":"user","content":"old prompt"})
        );
        let ctx =
            convert(json!({"role":"user","content":[{"type":"text","text":"new"}],"timestamp":1}));
        let r = build_request(&mock_gpt(), &ctx, &opts()).unwrap();
        assert_eq!(
            r.body["messages"][0],
            json!({"role":"user","content":[{"type":"text","text":"new"}]})
        );
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
                arguments_error: None,
                thought_signature: None,
            }],
            api: "openai-responses".into(),
            provider: "openai".into(),
            model: "gpt-5".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: String::new(),
            messages: vec![
                LlmMessage::User {
                    content: vec![ContentBlock::text("q")],
                    timestamp: 1,
                    as_string: false,
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
                    as_string: false,
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
}
