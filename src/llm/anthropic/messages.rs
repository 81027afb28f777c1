//! Message and tool conversion for the Anthropic Messages API: history blocks, tool results,
//! cache markers on the last message, tool definitions (strict schemas, cache marker).

use super::*;
use crate::llm::strict_schema;

pub(super) fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map(|t| (*t).to_owned())
        .unwrap_or_else(|| name.to_owned())
}

pub(super) fn image_block(data: &str, mime_type: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

/// Tool-result content: a string for text only, else blocks (with a leading placeholder text
/// when there is no text at all).
pub(super) fn tool_result_content(content: &[ContentBlock]) -> Value {
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

/// The converted history and, with managed effort (`managed_provider`: the model's provider),
/// the effort each earlier reply of that provider was asked for, by its index in the history.
pub(super) struct Converted {
    pub messages: Vec<Value>,
    pub assistant_levels: Vec<(usize, String)>,
}

fn is_anthropic_effort(v: &str) -> bool {
    matches!(v, "low" | "medium" | "high" | "xhigh" | "max")
}

/// With native tool changes: converts the tools a later system message adds, for its inline
/// `tool_addition` blocks.
pub(super) type ToolDefinitions<'a> = &'a mut dyn FnMut(&[ToolSpec]) -> Vec<Value>;

/// `tool_definitions`: see [`ToolDefinitions`].
pub(super) fn convert_messages(
    messages: &[LlmMessage],
    oauth: bool,
    cache: Option<&Value>,
    allow_empty_signature: bool,
    managed_provider: Option<&str>,
    mut tool_definitions: Option<ToolDefinitions<'_>>,
) -> Converted {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut assistant_levels: Vec<(usize, String)> = Vec::new();
    // Later system messages wait for the next assistant message that is sent (or the end):
    // Anthropic wants a `tool_result` right after its `tool_use`, and an assistant message
    // that converts to nothing is dropped, so an update never lands between them.
    let mut pending_system: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            LlmMessage::System(system) => {
                let mut blocks = Vec::new();
                let text = system.update_text();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                if let Some(define) = tool_definitions.as_mut() {
                    for name in system.true_removals() {
                        let name = if oauth {
                            to_claude_code_name(name)
                        } else {
                            name.to_owned()
                        };
                        blocks.push(json!({"type": "tool_removal",
                            "tool": {"type": "tool_reference", "name": name}}));
                    }
                    for definition in define(&system.tools_added) {
                        blocks.push(json!({"type": "tool_addition",
                            "tool": {"type": "tool_definition", "definition": definition}}));
                    }
                }
                if !blocks.is_empty() {
                    pending_system.push(json!({"role": "system", "content": blocks}));
                }
            }
            LlmMessage::User {
                content,
                as_string: true,
                ..
            } => {
                // Stored as a plain string: sent as one, unless blank (pi's convertMessages).
                let text: String = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !text.trim().is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
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
                    out.append(&mut pending_system);
                    if let Some(level) = a.provider_thinking_level.as_deref() {
                        if managed_provider == Some(a.provider.as_str())
                            && a.api == "anthropic-messages"
                            && is_anthropic_effort(level)
                        {
                            assistant_levels.push((out.len(), level.to_owned()));
                        }
                    }
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
    out.append(&mut pending_system);
    if let Some(cc) = cache {
        if let Some(last) = out.last_mut() {
            if last["role"] == "user" || last["role"] == "system" {
                match last.get_mut("content") {
                    Some(Value::Array(blocks)) => {
                        if let Some(Value::Object(b)) = blocks.last_mut() {
                            let t = b.get("type").and_then(Value::as_str).unwrap_or_default();
                            if matches!(
                                t,
                                "text" | "image" | "tool_result" | "tool_addition" | "tool_removal"
                            ) {
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
    Converted {
        messages: out,
        assistant_levels,
    }
}

/// pi's `insertThinkingLevelMessages`: an effort marker before each earlier reply that
/// recorded its effort, and one with the active effort at the end.
pub(super) fn insert_effort_markers(converted: Converted, active: &str) -> Vec<Value> {
    let marker = |effort: &str| json!({"role": "system", "content": [], "output_config": {"effort": effort}});
    let mut levels = converted.assistant_levels.into_iter().peekable();
    let mut out = Vec::with_capacity(converted.messages.len() + 1);
    for (index, message) in converted.messages.into_iter().enumerate() {
        if let Some((_, effort)) = levels.next_if(|(at, _)| *at == index) {
            out.push(marker(&effort));
        }
        out.push(message);
    }
    out.push(marker(active));
    out
}

pub(super) fn convert_tools(
    tools: &[ToolSpec],
    oauth: bool,
    eager: bool,
    strict_tools: bool,
    cache: Option<&Value>,
    disable_preferred_strict: bool,
) -> Vec<Value> {
    let n = tools.len();
    let rule = Some(strict_schema::anthropic_unsupported as strict_schema::UnsupportedKeyword);
    tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let strict = if disable_preferred_strict && t.strict_prefer {
                None
            } else {
                strict_schema::strict_sampling(t, strict_tools, rule)
            };
            let parameters = strict_schema::parameters(t, strict, rule);
            let schema = &parameters;
            // A strict tool sends its whole strict-form schema (with the legacy keys spread
            // over it); others only the keys Anthropic accepts at the root.
            let mut input_schema = match (strict, schema) {
                (Some(true), Value::Object(o)) => o.clone(),
                _ => Map::new(),
            };
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
            if strict == Some(true) {
                m.insert("strict".into(), Value::Bool(true));
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
