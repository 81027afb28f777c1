//! The pi-messages event stream (pi's `createEventConverter` and `parsePiMessagesEvent`): each
//! event's first `data:` line is one JSON event; the events rebuild the assistant message; a
//! `done` or `error` event ends it.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::drive::Flow;
use super::super::model::Model;
use super::super::stream::StreamedMessage;
use super::super::tool_args::ToolArgs;
use super::super::types::{AssistantEvent, ContentBlock, StopReason, Usage};
use crate::js::json::js_stringify;
use crate::js::json::parse::js_json_parse_error;
use crate::js::value::js_template;

/// The state of one response stream.
#[derive(Debug, Default)]
pub struct PiMessagesStream {
    /// The streamed arguments of each open tool call, by content index.
    args: HashMap<usize, ToolArgs>,
    /// A `done` or `error` event arrived.
    terminated: bool,
}

fn str_of<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// The JSON event of one SSE event's data: its first line, trimmed; `None` for an empty one or
/// `[DONE]`. Text that is not JSON fails with V8's `JSON.parse` message.
fn parse_event(data: &str) -> Result<Option<Value>, String> {
    let line = data.split('\n').next().unwrap_or_default().trim();
    if line.is_empty() || line == "[DONE]" {
        return Ok(None);
    }
    match serde_json::from_str(line) {
        Ok(v) => Ok(Some(v)),
        Err(e) => Err(js_json_parse_error(line).unwrap_or_else(|| e.to_string())),
    }
}

/// The content index an event may use (pi's guard against indices from the wire): a `*_start`
/// adds the block at the next index (or replaces one), the others need an existing block.
fn checked_index(event: &Value, kind: &str, len: usize) -> Result<Option<usize>, String> {
    let Some(index) = event.get("contentIndex") else {
        return Ok(None);
    };
    let limit = if kind.ends_with("_start") {
        len as f64
    } else {
        len as f64 - 1.0
    };
    let valid = index
        .as_f64()
        .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= limit);
    match valid {
        Some(n) => Ok(Some(n as usize)),
        None => Err(format!(
            "Invalid contentIndex {} in pi-messages {kind} event",
            js_stringify(index)
        )),
    }
}

/// Sets block `index` (a new one at the end, or replacing one).
fn put_block(out: &mut StreamedMessage<'_>, index: usize, block: ContentBlock) {
    match out.msg.content.get_mut(index) {
        Some(slot) => *slot = block,
        None => {
            out.push_block(block);
        }
    }
}

/// The message fields a terminal event sets (`responseModel` only when present).
fn apply_terminal(event: &Value, out: &mut StreamedMessage<'_>, default: StopReason) {
    let msg = &mut out.msg;
    msg.stop_reason = str_of(event, "reason")
        .and_then(StopReason::parse)
        .unwrap_or(default);
    msg.usage = event
        .get("usage")
        .and_then(|u| Usage::deserialize(u).ok())
        .unwrap_or_else(Usage::empty);
    msg.response_id = str_of(event, "responseId").map(str::to_owned);
    if let Some(m) = str_of(event, "responseModel") {
        msg.response_model = Some(m.to_owned());
    }
}

impl PiMessagesStream {
    pub fn new() -> PiMessagesStream {
        PiMessagesStream::default()
    }

    /// A `done` or `error` event arrived.
    pub fn terminated(&self) -> bool {
        self.terminated
    }

    /// Applies the event in one SSE data field. `Err` is the stream's error message.
    pub fn handle(
        &mut self,
        _model: &Model,
        data: &str,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, String> {
        let Some(event) = parse_event(data)? else {
            return Ok(Flow::Continue);
        };
        if !event.is_object() {
            return Err(format!(
                "Cannot use 'in' operator to search for 'contentIndex' in {}",
                js_template(Some(&event))
            ));
        }
        let kind = str_of(&event, "type").unwrap_or_default();
        let index = if event.get("contentIndex").is_some() && event.get("type").is_none() {
            return Err("Cannot read properties of undefined (reading 'endsWith')".into());
        } else {
            checked_index(&event, kind, out.msg.content.len())?
        };
        let delta = || js_template(event.get("delta"));
        let ev = match (kind, index) {
            ("done", _) => {
                apply_terminal(&event, out, StopReason::Stop);
                self.terminated = true;
                return Ok(Flow::Stop);
            }
            ("error", _) => {
                apply_terminal(&event, out, StopReason::Error);
                out.msg.error_message = str_of(&event, "errorMessage").map(str::to_owned);
                self.terminated = true;
                return Ok(Flow::Stop);
            }
            ("start", _) => {
                out.start();
                return Ok(Flow::Continue);
            }
            ("text_start", Some(i)) => {
                put_block(out, i, ContentBlock::text(""));
                AssistantEvent::TextStart { content_index: i }
            }
            ("text_delta", Some(i)) => {
                let delta = delta();
                if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(i) {
                    text.push_str(&delta);
                }
                AssistantEvent::TextDelta {
                    content_index: i,
                    delta,
                }
            }
            ("text_end", Some(i)) => {
                let content = str_of(&event, "content").unwrap_or_default().to_owned();
                if let Some(ContentBlock::Text {
                    text,
                    text_signature,
                }) = out.msg.content.get_mut(i)
                {
                    text.clone_from(&content);
                    *text_signature = str_of(&event, "contentSignature").map(str::to_owned);
                }
                AssistantEvent::TextEnd {
                    content_index: i,
                    content,
                }
            }
            ("thinking_start", Some(i)) => {
                let block = ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: false,
                };
                put_block(out, i, block);
                AssistantEvent::ThinkingStart { content_index: i }
            }
            ("thinking_delta", Some(i)) => {
                let delta = delta();
                if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get_mut(i) {
                    thinking.push_str(&delta);
                }
                AssistantEvent::ThinkingDelta {
                    content_index: i,
                    delta,
                }
            }
            ("thinking_end", Some(i)) => {
                let content = str_of(&event, "content").unwrap_or_default().to_owned();
                if let Some(ContentBlock::Thinking {
                    thinking,
                    thinking_signature,
                    redacted,
                }) = out.msg.content.get_mut(i)
                {
                    thinking.clone_from(&content);
                    *thinking_signature = str_of(&event, "contentSignature").map(str::to_owned);
                    *redacted = event.get("redacted").and_then(Value::as_bool) == Some(true);
                }
                AssistantEvent::ThinkingEnd {
                    content_index: i,
                    content,
                }
            }
            ("toolcall_start", Some(i)) => {
                let id = str_of(&event, "id").unwrap_or_default().to_owned();
                let tool_name = str_of(&event, "toolName").unwrap_or_default().to_owned();
                let block = ContentBlock::ToolCall {
                    id: id.clone(),
                    name: tool_name.clone(),
                    arguments: Value::Object(Map::new()),
                    arguments_error: None,
                    thought_signature: None,
                };
                put_block(out, i, block);
                self.args.insert(i, ToolArgs::new());
                AssistantEvent::ToolcallStart {
                    content_index: i,
                    id,
                    tool_name,
                }
            }
            ("toolcall_delta", Some(i)) => {
                let delta = delta();
                let parsed = self.args.get_mut(&i).and_then(|a| a.append(&delta));
                if let (Some(v), Some(ContentBlock::ToolCall { arguments, .. })) =
                    (parsed, out.msg.content.get_mut(i))
                {
                    *arguments = v;
                }
                AssistantEvent::ToolcallDelta {
                    content_index: i,
                    delta,
                }
            }
            ("toolcall_end", Some(i)) => {
                self.args.remove(&i);
                let Some(block) = out.msg.content.get_mut(i) else {
                    return Ok(Flow::Continue);
                };
                // `Object.assign(block, event.toolCall)`.
                if let (Value::Object(mut merged), Some(Value::Object(call))) =
                    (block.to_value(), event.get("toolCall"))
                {
                    for (k, v) in call {
                        merged.insert(k.clone(), v.clone());
                    }
                    if let Some(b) = ContentBlock::from_value(&Value::Object(merged)) {
                        *block = b;
                    }
                }
                AssistantEvent::ToolcallEnd {
                    content_index: i,
                    tool_call: block.clone(),
                }
            }
            // Unknown event types are passed on by pi and ignored by its agent loop.
            _ => return Ok(Flow::Continue),
        };
        // pi's agent loop drops updates that come before `start`.
        if out.started() {
            out.emit(ev);
        }
        Ok(Flow::Continue)
    }
}
