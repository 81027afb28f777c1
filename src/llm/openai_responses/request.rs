//! Request building for the Responses API: tool-call id normalization, input/tool
//! conversion, the body (thinking, caching, compat) and headers.

use super::*;
use crate::llm::strict_schema;
use crate::llm::transcript::{self, ToolSupport};
use crate::llm::types::SystemMessage;

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
    // Azure Responses keeps the pair form for its own provider too (pi's
    // `AZURE_TOOL_CALL_PROVIDERS`).
    let azure = model.api == "azure-openai-responses" && model.provider == "azure";
    if !TOOL_CALL_ID_PROVIDERS.contains(&model.provider.as_str()) && !azure {
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
            LlmMessage::User { .. } | LlmMessage::System(_) => {}
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
pub(super) fn encode_text_signature(id: &str, phase: Option<&str>) -> String {
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
/// `convertResponsesMessages`), without `configuration_update` items.
pub fn convert_input(model: &Model, ctx: &LlmContext) -> Vec<Value> {
    let options = InputOptions {
        configuration_update_effort: None,
        supports_strict_mode: Compat::of(model).supports_strict_mode,
        null_strict: false,
    };
    convert_input_with(model, ctx, &options)
}

/// What [`convert_input_with`] takes beyond the model's compat (the Responses adapters differ
/// here: the Codex and Azure ones default `supportsStrictMode` to true).
#[derive(Clone, Copy, Debug, Default)]
pub struct InputOptions<'a> {
    /// The mid-conversation effort (see [`super::configuration_update_effort`]): when set,
    /// each earlier same-model assistant message that recorded a `providerThinkingLevel` is
    /// preceded by a `configuration_update` item with it, and one with this effort ends the
    /// input.
    pub configuration_update_effort: Option<&'a str>,
    /// Strict mode for the tools declared in the input.
    pub supports_strict_mode: bool,
    /// Tools without a strictness of their own say `strict: null` (Codex) rather than `false`.
    pub null_strict: bool,
}

impl InputOptions<'_> {
    fn tools(&self, tools: &[ToolSpec], defer_loading: bool) -> Vec<Value> {
        let default_strict = if self.null_strict {
            Value::Null
        } else {
            Value::Bool(false)
        };
        convert_tools_with(
            tools,
            self.supports_strict_mode,
            &default_strict,
            defer_loading,
        )
    }
}

/// pi's `renderIncrementalToolsNotice`: precedes every `additional_tools` item after the first,
/// restating the tools still unavailable.
fn incremental_tools_notice(unavailable: &[String]) -> String {
    let notice = "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one.";
    if unavailable.is_empty() {
        notice.to_owned()
    } else {
        format!("{notice}\nStill unavailable: {}.", unavailable.join(", "))
    }
}

/// pi's `renderToolRemovalNotice`.
fn tool_removal_notice(names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("- {n}")).collect();
    format!(
        "The following tools are no longer available. Do not call them:\n{}",
        list.join("\n")
    )
}

/// The tool declarations of the system messages said in place (pi's
/// `appendSystemToolAdditions` and the removal notices of `convertResponsesMessages`).
struct ToolChanges<'o, 'a> {
    support: ToolSupport,
    options: &'o InputOptions<'a>,
    instruction_role: &'static str,
    declared_additional: bool,
    /// Tools announced as removed and not declared again since, in announcement order.
    unavailable: Vec<String>,
}

impl ToolChanges<'_, '_> {
    /// The message's added tools: an `additional_tools` item (after the incremental notice
    /// from the second on), or a synthetic client tool search that loads them.
    fn additions(&mut self, input: &mut Vec<Value>, msg: &SystemMessage, seed: &str) {
        let tools = &msg.tools_added;
        self.unavailable
            .retain(|name| !tools.iter().any(|t| &t.name == name));
        if tools.is_empty() {
            return;
        }
        match self.support {
            ToolSupport::Changes => {
                if self.declared_additional {
                    input.push(json!({"role": self.instruction_role,
                        "content": incremental_tools_notice(&self.unavailable)}));
                }
                self.declared_additional = true;
                input.push(json!({"type": "additional_tools", "role": "developer",
                    "tools": self.options.tools(tools, false)}));
            }
            ToolSupport::Additions => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                let call_id = format!(
                    "pi_tool_load_{}",
                    short_hash(&format!("{seed}:{}", names.join(",")))
                );
                input.push(json!({"type": "tool_search_call", "call_id": call_id,
                    "execution": "client", "status": "completed",
                    "arguments": {"query": names.join(" "), "limit": names.len()}}));
                input.push(json!({"type": "tool_search_output", "call_id": call_id,
                    "execution": "client", "status": "completed",
                    "tools": self.options.tools(tools, true)}));
            }
            ToolSupport::None => {}
        }
    }

    /// The system message's text item: `text`, then the notice of its true removals.
    fn text(&mut self, input: &mut Vec<Value>, text: String, msg: &SystemMessage, anchors: bool) {
        let mut parts = vec![text];
        if anchors {
            let removed = msg.true_removals();
            if !removed.is_empty() {
                parts.push(tool_removal_notice(&removed));
            }
            for name in removed {
                if !self.unavailable.iter().any(|n| n == name) {
                    self.unavailable.push(name.to_owned());
                }
            }
        }
        parts.retain(|p| !p.is_empty());
        if !parts.is_empty() {
            input.push(json!({"role": self.instruction_role, "content": parts.join("\n\n")}));
        }
    }
}

/// [`convert_input`] with explicit options (pi's `convertResponsesMessages`). For a model
/// that keeps system messages in place, each later one is an instruction item where it
/// happened; with `supportsAdditionalTools` every system message, the leading one included,
/// declares its tools in an `additional_tools` item (and [`build_body`] sends no top-level
/// `tools`).
pub fn convert_input_with(model: &Model, ctx: &LlmContext, options: &InputOptions) -> Vec<Value> {
    let compat = Compat::of(model);
    let effort = options.configuration_update_effort;
    let mut messages = ctx.messages.clone();
    normalize_ids(&mut messages, model);
    let support = compat.tool_support();
    let folded = transcript::resolve_tools(ctx, support).folded;
    let mut changes = ToolChanges {
        support,
        options,
        instruction_role: if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        },
        declared_additional: false,
        unavailable: Vec::new(),
    };
    let mut input = Vec::new();
    // The leading system message: the prompt and the first tools (pi's `normalizeContext`
    // makes one of the prompt and tools when the context has none).
    let made;
    let leading = match &ctx.leading_system {
        Some(leading) => Some(leading),
        None if !transcript::in_place(ctx)
            && (!ctx.system_prompt.is_empty() || !ctx.tools.is_empty()) =>
        {
            made = SystemMessage {
                tools_added: ctx.tools.clone(),
                ..SystemMessage::default()
            };
            Some(&made)
        }
        None => None,
    };
    let mut system_index = 0usize;
    if let Some(leading) = leading {
        // A made leading message counts as folded unless every declaration is in place.
        let anchors = if ctx.leading_system.is_some() {
            folded == 0
        } else {
            support == ToolSupport::Changes
        };
        if anchors {
            changes.additions(&mut input, leading, "system:0");
        }
        changes.text(&mut input, ctx.system_prompt.clone(), leading, anchors);
        system_index = 1;
    }
    let mut msg_index = 0usize;
    for msg in &messages {
        match msg {
            LlmMessage::System(system) => {
                let anchors = system_index >= folded;
                system_index += 1;
                if anchors {
                    changes.additions(&mut input, system, &format!("system:{msg_index}"));
                }
                changes.text(&mut input, system.update_text(), system, anchors);
            }
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
                let same_model = same_provider_api && a.model == model.id;
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
                                    if crate::js::utf16::len(&id) > 64 {
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
                if let (Some(_), Some(level), true) =
                    (effort, a.provider_thinking_level.as_deref(), same_model)
                {
                    input.push(configuration_update(level));
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
    if let Some(e) = effort {
        input.push(configuration_update(e));
    }
    input
}

/// The `tools` array (pi's `convertResponsesTools` for plain JSON-schema tools).
pub fn convert_tools(tools: &[ToolSpec], supports_strict_mode: bool) -> Vec<Value> {
    convert_tools_with(tools, supports_strict_mode, &Value::Bool(false), false)
}

/// pi's `convertResponsesTools`: `default_strict` for a tool without a strictness of its own
/// (`false`, or Codex's `null`); `defer_loading` for the tools a synthetic tool search loads.
pub fn convert_tools_with(
    tools: &[ToolSpec],
    supports_strict_mode: bool,
    default_strict: &Value,
    defer_loading: bool,
) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut o = Map::new();
            o.insert("type".into(), json!("function"));
            o.insert("name".into(), json!(t.name));
            o.insert("description".into(), json!(t.description));
            let strict = strict_schema::strict_sampling(t, supports_strict_mode, None);
            o.insert(
                "parameters".into(),
                strict_schema::parameters(t, strict, None),
            );
            if defer_loading {
                o.insert("defer_loading".into(), Value::Bool(true));
            }
            if supports_strict_mode {
                o.insert(
                    "strict".into(),
                    strict.map_or_else(|| default_strict.clone(), Value::Bool),
                );
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
    let update_effort = configuration_update_effort(model, opts);
    let input = match update_effort.as_deref() {
        None => convert_input(model, ctx),
        Some(effort) => {
            let options = InputOptions {
                configuration_update_effort: Some(effort),
                supports_strict_mode: compat.supports_strict_mode,
                null_strict: false,
            };
            convert_input_with(model, ctx, &options)
        }
    };
    body.insert("input".into(), Value::Array(input));
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
    let request_tools = transcript::resolve_tools(ctx, compat.tool_support()).request_tools;
    if !request_tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(&request_tools, compat.supports_strict_mode)),
        );
    }
    let level = requested_level(model, opts);
    if model.reasoning {
        if level != ThinkingLevel::Off {
            let effort = match update_effort {
                Some(_) => CONFIGURATION_UPDATE_REQUEST_EFFORT.to_owned(),
                None => effort_value(model, level),
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

pub(super) fn has_auth_header(opts: &StreamOptions) -> bool {
    opts.headers.iter().any(|(k, v)| {
        (k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("cf-aig-authorization"))
            && !v.trim().is_empty()
    })
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
