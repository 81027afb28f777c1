//! The Responses SSE stream: output items → content blocks, tool-call arguments, terminal
//! status, usage and service-tier pricing.

use super::*;

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

    fn finish(&self) -> crate::llm::tool_args::FinalArguments {
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
    pub(super) saw_terminal: bool,
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

    fn create_slot(&mut self, output_index: u64, item: &Value, out: &mut StreamedMessage<'_>) {
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
                    arguments_error: None,
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

    fn append_thinking(&self, event: &Value, delta: &str, out: &mut StreamedMessage<'_>) {
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

    fn append_text(&self, event: &Value, delta: &str, out: &mut StreamedMessage<'_>) {
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
        out: &mut StreamedMessage<'_>,
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

    fn item_done(&mut self, output_index: u64, item: &Value, out: &mut StreamedMessage<'_>) {
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
                if let Some(block) = out.msg.content.get_mut(index) {
                    slot.args.finish().apply_to(block);
                }
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
                input: u64_of(u, "input_tokens").saturating_sub(cached.saturating_add(cache_write)),
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

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
