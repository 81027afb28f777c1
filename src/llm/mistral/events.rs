//! The Mistral SSE stream (pi's `readMistralEvents` + `consumeChatStream`): chunk validation,
//! text/thinking blocks that close when another kind starts, tool calls keyed by their stream
//! index and closed at the end, usage and finish reasons.

use super::request::derive_tool_call_id;
use super::*;
use crate::js::json::parse::js_json_parse_error;

/// A tool call being streamed.
struct OpenCall {
    /// The call's `index`, else its id (pi's map key).
    key: Value,
    content_index: usize,
    args: ToolArgs,
}

/// The block text and thinking deltas currently go to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Current {
    Text(usize),
    Thinking(usize),
}

/// Per-response stream state.
#[derive(Default)]
pub struct MistralStream {
    current: Option<Current>,
    calls: Vec<OpenCall>,
}

/// One event's data as a chunk: JSON (a parse error is JavaScript's `JSON.parse` message)
/// holding a `choices` array.
pub(super) fn parse_event(data: &str) -> Result<Value, String> {
    let chunk: Value = serde_json::from_str(data)
        .map_err(|e| js_json_parse_error(data).unwrap_or_else(|| format!("Invalid JSON: {e}")))?;
    if !chunk.get("choices").is_some_and(Value::is_array) {
        return Err("Invalid Mistral streaming event".into());
    }
    Ok(chunk)
}

fn count(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|f| f.is_finite())
}

/// The cached prompt tokens (pi's `getMistralCachedPromptTokens`), at most `prompt`.
fn cached_tokens(usage: &Value, prompt: u64) -> u64 {
    let paths: [&[&str]; 6] = [
        &["promptTokensDetails", "cachedTokens"],
        &["prompt_tokens_details", "cached_tokens"],
        &["promptTokenDetails", "cachedTokens"],
        &["prompt_token_details", "cached_tokens"],
        &["numCachedTokens"],
        &["num_cached_tokens"],
    ];
    // `??`: the first present (non-null) value wins, even when it is not a number.
    let raw = paths.iter().find_map(|path| {
        let mut cur = usage;
        for k in *path {
            cur = cur.get(*k)?;
        }
        (!cur.is_null()).then_some(cur)
    });
    let cached = count(raw).unwrap_or(0.0).max(0.0) as u64;
    cached.min(prompt)
}

/// The usage of a chunk's `usage` object.
fn parse_usage(raw: &Value, model: &Model) -> Usage {
    let int = |k: &str| count(raw.get(k)).filter(|f| *f > 0.0).unwrap_or(0.0) as u64;
    let prompt = int("prompt_tokens");
    let cache_read = cached_tokens(raw, prompt);
    let input = prompt - cache_read;
    let output = int("completion_tokens");
    let total = match int("total_tokens") {
        0 => input + output + cache_read,
        t => t,
    };
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write: 0,
        total_tokens: total,
        ..Usage::default()
    };
    usage.recompute_cost(model);
    usage
}

/// pi's `mapChatStopReason`.
fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" => (StopReason::Stop, None),
        "length" | "model_length" => (StopReason::Length, None),
        "tool_calls" => (StopReason::ToolUse, None),
        // Mistral reports transient server failures this way; "server error" makes it retryable.
        "error" => (
            StopReason::Error,
            Some("Provider stopped with: error (server error)".into()),
        ),
        other => (
            StopReason::Error,
            Some(format!("Provider stopped with: {other}")),
        ),
    }
}

impl MistralStream {
    pub fn new() -> MistralStream {
        MistralStream::default()
    }

    /// Applies one chunk. `Err` is a chunk pi's handler would throw on.
    pub fn handle_chunk(
        &mut self,
        chunk: &Value,
        model: &Model,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), String> {
        if out.msg.response_id.is_none() {
            if let Some(id) = chunk.get("id").and_then(Value::as_str) {
                if !id.is_empty() {
                    out.msg.response_id = Some(id.to_owned());
                }
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            out.msg.usage = parse_usage(u, model);
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            if !reason.is_empty() {
                out.msg.raw_stop_reason = Some(reason.to_owned());
                let (stop, error) = map_finish_reason(reason);
                out.msg.stop_reason = stop;
                if let Some(e) = error {
                    out.msg.error_message = Some(e);
                }
            }
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return Err("Cannot read properties of undefined (reading 'content')".into());
        };
        match delta.get("content") {
            Some(Value::String(s)) => self.text_delta(s, out),
            Some(Value::Array(items)) => {
                for item in items {
                    self.content_item(item, out);
                }
            }
            _ => {}
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_call(call, out);
            }
        }
        Ok(())
    }

    fn content_item(&mut self, item: &Value, out: &mut StreamedMessage<'_>) {
        match item {
            Value::String(s) => self.text_delta(s, out),
            _ => match item.get("type").and_then(Value::as_str) {
                Some("thinking") => {
                    let text: String = item
                        .get("thinking")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect();
                    self.thinking_delta(&text, out);
                }
                Some("text") => {
                    let text = item.get("text").and_then(Value::as_str).unwrap_or("");
                    self.text_delta(text, out);
                }
                _ => {}
            },
        }
    }

    /// Emits the end event of the open text or thinking block.
    fn close_current(&mut self, out: &mut StreamedMessage<'_>) {
        match self.current.take() {
            Some(Current::Text(ci)) => {
                if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get(ci) {
                    let content = text.clone();
                    out.emit(AssistantEvent::TextEnd {
                        content_index: ci,
                        content,
                    });
                }
            }
            Some(Current::Thinking(ci)) => {
                if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get(ci) {
                    let content = thinking.clone();
                    out.emit(AssistantEvent::ThinkingEnd {
                        content_index: ci,
                        content,
                    });
                }
            }
            None => {}
        }
    }

    /// Empty deltas never open a block (GLM models on Mistral send them around thinking).
    fn text_delta(&mut self, delta: &str, out: &mut StreamedMessage<'_>) {
        if delta.is_empty() {
            return;
        }
        let ci = match self.current {
            Some(Current::Text(ci)) => ci,
            _ => {
                self.close_current(out);
                let ci = out.push_block(ContentBlock::text(""));
                self.current = Some(Current::Text(ci));
                out.emit(AssistantEvent::TextStart { content_index: ci });
                ci
            }
        };
        if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(ci) {
            text.push_str(delta);
        }
        out.emit(AssistantEvent::TextDelta {
            content_index: ci,
            delta: delta.to_owned(),
        });
    }

    fn thinking_delta(&mut self, delta: &str, out: &mut StreamedMessage<'_>) {
        if delta.is_empty() {
            return;
        }
        let ci = match self.current {
            Some(Current::Thinking(ci)) => ci,
            _ => {
                self.close_current(out);
                let ci = out.push_block(ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: false,
                });
                self.current = Some(Current::Thinking(ci));
                out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                ci
            }
        };
        if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get_mut(ci) {
            thinking.push_str(delta);
        }
        out.emit(AssistantEvent::ThinkingDelta {
            content_index: ci,
            delta: delta.to_owned(),
        });
    }

    fn tool_call(&mut self, call: &Value, out: &mut StreamedMessage<'_>) {
        self.close_current(out);
        let index = call.get("index").filter(|i| !i.is_null());
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() && id != "null" => id.to_owned(),
            _ => {
                let i = index.map_or_else(|| "0".to_owned(), js_stringify);
                derive_tool_call_id(&format!("toolcall:{i}"), 0)
            }
        };
        let key = index.cloned().unwrap_or_else(|| json!(id));
        let function = call.get("function");
        let pos = match self.calls.iter().position(|c| c.key == key) {
            Some(p) => p,
            None => {
                let name = function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let ci = out.push_block(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: json!({}),
                    arguments_error: None,
                    thought_signature: None,
                });
                self.calls.push(OpenCall {
                    key,
                    content_index: ci,
                    args: ToolArgs::new(),
                });
                out.emit(AssistantEvent::ToolcallStart {
                    content_index: ci,
                    id,
                    tool_name: name,
                });
                self.calls.len() - 1
            }
        };
        let piece = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            Some(v) if crate::js::value::js_truthy(v) => js_stringify(v),
            _ => "{}".to_owned(),
        };
        let call = &mut self.calls[pos];
        let ci = call.content_index;
        if let Some(partial) = call.args.append(&piece) {
            if let Some(ContentBlock::ToolCall { arguments, .. }) = out.msg.content.get_mut(ci) {
                *arguments = partial;
            }
        }
        out.emit(AssistantEvent::ToolcallDelta {
            content_index: ci,
            delta: piece,
        });
    }

    /// At the end of the body: the open text/thinking block ends, then every tool call in the
    /// order it started, with its arguments parsed in full.
    pub fn finish_blocks(&mut self, out: &mut StreamedMessage<'_>) {
        self.close_current(out);
        for call in std::mem::take(&mut self.calls) {
            let ci = call.content_index;
            let Some(block) = out.msg.content.get_mut(ci) else {
                continue;
            };
            call.args.finish().apply_to(block);
            let tool_call = block.clone();
            out.emit(AssistantEvent::ToolcallEnd {
                content_index: ci,
                tool_call,
            });
        }
    }
}
