//! The ConverseStream event state machine (pi's `handleContentBlock*`, `mapStopReason`,
//! `handleMetadata`) and the texts of exception and error frames.

use serde_json::Value;

use crate::js::json::js_stringify;

use super::eventstream::Frame;
use super::{b64_decode, b64_encode};
use crate::llm::stream::StreamedMessage;
use crate::llm::tool_args::ToolArgs;
use crate::llm::types::{AssistantEvent, ContentBlock, StopReason};

/// The stream ended without `messageStop`.
pub const NO_STOP_REASON: &str = "Bedrock stream ended without a stop reason";
const REDACTED_PLACEHOLDER: &str = "[Reasoning redacted]";
const DATA_RETENTION_HINT: &str = " See https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html for supported data retention modes.";

/// pi's `BEDROCK_ERROR_PREFIXES`.
fn prefix(name: &str) -> &str {
    match name {
        "InternalServerException" => "Internal server error",
        "ModelStreamErrorException" => "Model stream error",
        "ValidationException" => "Validation error",
        "ThrottlingException" => "Throttling error",
        "ServiceUnavailableException" => "Service unavailable",
        other => other,
    }
}

/// pi's `formatBedrockError`: `<prefix>: <core>` for the service's exceptions (`name`), the
/// core alone otherwise, with the data-retention hint when the text mentions it.
pub fn format_error(name: Option<&str>, core: &str) -> String {
    let hint = if core.to_lowercase().contains("data retention mode") {
        DATA_RETENTION_HINT
    } else {
        ""
    };
    match name {
        Some(n) => format!("{}: {core}{hint}", prefix(n)),
        None => format!("{core}{hint}"),
    }
}

/// The error message of a non-2xx response: the service's JSON `{"message"}` prefixed by the
/// error name (the `x-amzn-errortype` header before its `:`, else the body's `__type`/`code`),
/// else `<status>: <body>`.
#[cfg(test)]
pub fn http_error_message(status: u16, error_type: Option<&str>, body: &str) -> String {
    let (name, core) = http_error_parts(status, error_type, body);
    format_error(name.as_deref(), &core)
}

/// The error name (`None` when the body is not the service's JSON) and message of a non-2xx
/// response.
pub fn http_error_parts(
    status: u16,
    error_type: Option<&str>,
    body: &str,
) -> (Option<String>, String) {
    let parsed: Option<serde_json::Map<String, Value>> = serde_json::from_str(body).ok();
    let Some(obj) = parsed else {
        return (None, format!("{status}: {}", body.trim()));
    };
    let sanitize = |s: &str| {
        let s = s.split(':').next().unwrap_or(s);
        s.rsplit('#').next().unwrap_or(s).trim().to_string()
    };
    let name = error_type
        .map(sanitize)
        .or_else(|| {
            ["__type", "code"]
                .iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_str).map(sanitize))
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Unknown".into());
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .unwrap_or("UnknownError");
    // The SDK copies the body's members onto the exception; pi's `normalizeProviderError`
    // then surfaces a `body` string or an `error` object that the message does not carry.
    let extra = match (obj.get("body"), obj.get("error")) {
        (Some(Value::String(b)), _) => Some(b.trim().to_string()),
        (_, Some(e @ Value::Object(o))) if !o.is_empty() => Some(js_stringify(e)),
        _ => None,
    }
    .filter(|b| !b.is_empty())
    .map(|b| truncate_chars(&b, MAX_BODY_CHARS));
    match extra {
        Some(b) if !message.contains(&b) => (Some(name), format!("{status}: {b}")),
        _ => (Some(name), message.to_string()),
    }
}

/// pi's `MAX_PROVIDER_ERROR_BODY_CHARS`.
const MAX_BODY_CHARS: usize = 4000;

/// pi's `truncateErrorText` (UTF-16 units approximated by chars).
fn truncate_chars(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}... [truncated {} chars]", n - max)
}

/// The exceptions ConverseStream models (the others arrive as plain errors).
const MODELED: &[&str] = &[
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
];

struct OpenBlock {
    index: u64,
    content_index: usize,
    args: Option<ToolArgs>,
    redacted: Option<Vec<u8>>,
}

/// One response's state.
#[derive(Default)]
pub struct BedrockStream {
    open: Vec<OpenBlock>,
}

fn u64_field(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

impl BedrockStream {
    pub fn new() -> BedrockStream {
        BedrockStream::default()
    }

    /// Applies one frame. `Err` is the stream's error message.
    pub fn handle(
        &mut self,
        frame: &Frame,
        model: &crate::llm::model::Model,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), String> {
        let body = || String::from_utf8_lossy(&frame.payload).into_owned();
        match frame.header(":message-type").unwrap_or_default() {
            "event" => {}
            "error" => {
                let msg = frame
                    .header(":error-message")
                    .filter(|m| !m.is_empty())
                    .unwrap_or("UnknownError");
                return Err(format_error(None, msg));
            }
            "exception" => {
                let code = frame.header(":exception-type").unwrap_or_default();
                if !MODELED.contains(&code) {
                    return Err(format_error(None, &body()));
                }
                let v: Value = serde_json::from_slice(&frame.payload).unwrap_or(Value::Null);
                let msg = v
                    .get("message")
                    .or_else(|| v.get("Message"))
                    .and_then(Value::as_str)
                    .unwrap_or("UnknownError");
                let mut name = code.to_string();
                if let Some(first) = name.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                return Err(format_error(Some(&name), msg));
            }
            _ => {
                return Err(format!(
                    "Unrecognizable event type: {}",
                    frame.header(":event-type").unwrap_or("undefined")
                ))
            }
        }
        let event_type = frame.header(":event-type").unwrap_or_default();
        let known = [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
        ];
        if !known.contains(&event_type) {
            return Ok(());
        }
        let ev: Value = serde_json::from_slice(&frame.payload).map_err(|e| e.to_string())?;
        match event_type {
            "messageStart" => {
                if ev.get("role").and_then(Value::as_str) != Some("assistant") {
                    return Err(
                        "Unexpected assistant message start but got user message start instead"
                            .into(),
                    );
                }
                out.start();
            }
            "contentBlockStart" => self.block_start(&ev, out),
            "contentBlockDelta" => self.block_delta(&ev, out),
            "contentBlockStop" => self.block_stop(&ev, out),
            "messageStop" => {
                let reason = ev.get("stopReason").and_then(Value::as_str);
                let msg = &mut out.msg;
                msg.raw_stop_reason = reason.map(str::to_owned);
                msg.stop_reason = match reason {
                    Some("end_turn" | "stop_sequence") => StopReason::Stop,
                    Some("max_tokens" | "model_context_window_exceeded") => StopReason::Length,
                    Some("tool_use") => StopReason::ToolUse,
                    Some(other) => {
                        msg.error_message = Some(format!("Provider stopped with: {other}"));
                        StopReason::Error
                    }
                    None => StopReason::Error,
                };
            }
            _ => {
                if let Some(u) = ev.get("usage").filter(|u| u.is_object()) {
                    let usage = &mut out.msg.usage;
                    usage.input = u64_field(u, "inputTokens");
                    usage.output = u64_field(u, "outputTokens");
                    usage.cache_read = u64_field(u, "cacheReadInputTokens");
                    usage.cache_write = u64_field(u, "cacheWriteInputTokens");
                    usage.cache_write_1h =
                        u.get("cacheDetails").and_then(Value::as_array).map(|d| {
                            d.iter()
                                .filter(|x| x.get("ttl").and_then(Value::as_str) == Some("1h"))
                                .map(|x| u64_field(x, "inputTokens"))
                                .sum()
                        });
                    let total = u64_field(u, "totalTokens");
                    usage.total_tokens = if total > 0 {
                        total
                    } else {
                        usage.input + usage.output
                    };
                    usage.recompute_cost(model);
                }
            }
        }
        Ok(())
    }

    fn block_start(&mut self, ev: &Value, out: &mut StreamedMessage<'_>) {
        let Some(tool) = ev.pointer("/start/toolUse") else {
            return;
        };
        let s = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let (id, name) = (s("toolUseId"), s("name"));
        let ci = out.push_block(ContentBlock::ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: Value::Object(Default::default()),
            arguments_error: None,
            thought_signature: None,
        });
        self.open.push(OpenBlock {
            index: u64_field(ev, "contentBlockIndex"),
            content_index: ci,
            args: Some(ToolArgs::new()),
            redacted: None,
        });
        out.emit(AssistantEvent::ToolcallStart {
            content_index: ci,
            id,
            tool_name: name,
        });
    }

    fn open_or_push(
        &mut self,
        index: u64,
        out: &mut StreamedMessage<'_>,
        block: impl FnOnce() -> ContentBlock,
        event: impl FnOnce(usize) -> AssistantEvent,
    ) -> usize {
        if let Some(o) = self.open.iter().find(|o| o.index == index) {
            return o.content_index;
        }
        let ci = out.push_block(block());
        self.open.push(OpenBlock {
            index,
            content_index: ci,
            args: None,
            redacted: None,
        });
        out.emit(event(ci));
        ci
    }

    fn block_delta(&mut self, ev: &Value, out: &mut StreamedMessage<'_>) {
        let index = u64_field(ev, "contentBlockIndex");
        let Some(delta) = ev.get("delta") else {
            return;
        };
        if let Some(text) = delta.get("text").and_then(Value::as_str) {
            let ci = self.open_or_push(
                index,
                out,
                || ContentBlock::text(""),
                |ci| AssistantEvent::TextStart { content_index: ci },
            );
            if let Some(ContentBlock::Text { text: t, .. }) = out.msg.content.get_mut(ci) {
                t.push_str(text);
                out.emit(AssistantEvent::TextDelta {
                    content_index: ci,
                    delta: text.to_owned(),
                });
            }
        } else if let Some(tool) = delta.get("toolUse") {
            let Some(open) = self.open.iter_mut().find(|o| o.index == index) else {
                return;
            };
            let ci = open.content_index;
            let (Some(args), Some(ContentBlock::ToolCall { arguments, .. })) =
                (open.args.as_mut(), out.msg.content.get_mut(ci))
            else {
                return;
            };
            let piece = tool.get("input").and_then(Value::as_str).unwrap_or("");
            if let Some(p) = args.append(piece) {
                *arguments = p;
            }
            out.emit(AssistantEvent::ToolcallDelta {
                content_index: ci,
                delta: piece.to_owned(),
            });
        } else if let Some(rc) = delta.get("reasoningContent") {
            let ci = self.open_or_push(
                index,
                out,
                || ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: Some(String::new()),
                    redacted: false,
                },
                |ci| AssistantEvent::ThinkingStart { content_index: ci },
            );
            let Some(open) = self.open.iter_mut().find(|o| o.index == index) else {
                return;
            };
            let Some(ContentBlock::Thinking {
                thinking,
                thinking_signature,
                redacted,
            }) = out.msg.content.get_mut(ci)
            else {
                return;
            };
            let text = rc.get("text").and_then(Value::as_str).unwrap_or("");
            let mut deltas = Vec::new();
            if !text.is_empty() {
                thinking.push_str(text);
                deltas.push(text.to_owned());
            }
            if let Some(sig) = rc.get("signature").and_then(Value::as_str) {
                if !sig.is_empty() && !*redacted {
                    thinking_signature
                        .get_or_insert_with(String::new)
                        .push_str(sig);
                }
            }
            let bytes = rc
                .get("redactedContent")
                .and_then(Value::as_str)
                .and_then(b64_decode)
                .unwrap_or_default();
            if !bytes.is_empty() {
                if !*redacted {
                    *redacted = true;
                    *thinking_signature = Some(String::new());
                    thinking.push_str(REDACTED_PLACEHOLDER);
                    deltas.push(REDACTED_PLACEHOLDER.to_owned());
                }
                open.redacted.get_or_insert_with(Vec::new).extend(bytes);
            }
            for d in deltas {
                out.emit(AssistantEvent::ThinkingDelta {
                    content_index: ci,
                    delta: d,
                });
            }
        }
    }

    fn flush_redacted(open: &mut OpenBlock, out: &mut StreamedMessage<'_>) {
        if let Some(bytes) = open.redacted.take() {
            if let Some(ContentBlock::Thinking {
                thinking_signature, ..
            }) = out.msg.content.get_mut(open.content_index)
            {
                *thinking_signature = Some(b64_encode(&bytes));
            }
        }
    }

    fn block_stop(&mut self, ev: &Value, out: &mut StreamedMessage<'_>) {
        let index = u64_field(ev, "contentBlockIndex");
        let Some(pos) = self.open.iter().position(|o| o.index == index) else {
            return;
        };
        let mut open = self.open.remove(pos);
        let ci = open.content_index;
        match out.msg.content.get_mut(ci) {
            Some(ContentBlock::Text { text, .. }) => {
                let content = text.clone();
                out.emit(AssistantEvent::TextEnd {
                    content_index: ci,
                    content,
                });
            }
            Some(ContentBlock::Thinking { .. }) => {
                Self::flush_redacted(&mut open, out);
                if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get(ci) {
                    let content = thinking.clone();
                    out.emit(AssistantEvent::ThinkingEnd {
                        content_index: ci,
                        content,
                    });
                }
            }
            Some(block @ ContentBlock::ToolCall { .. }) => {
                if let Some(args) = open.args.as_ref() {
                    args.finish().apply_to(block);
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

    /// Ends the state of blocks the stream never stopped (pi's `flushOpenBlocks`).
    pub fn flush(&mut self, out: &mut StreamedMessage<'_>) {
        for mut open in std::mem::take(&mut self.open) {
            Self::flush_redacted(&mut open, out);
        }
    }

    /// The verdict at the end of the body.
    pub fn finish(&mut self, out: &mut StreamedMessage<'_>) -> Result<(), String> {
        match out.msg.stop_reason {
            StopReason::Pending => return Err(NO_STOP_REASON.into()),
            StopReason::Error | StopReason::Aborted => {
                let msg = out
                    .msg
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "An unknown error occurred".into());
                return Err(format_error(None, &msg));
            }
            _ => {}
        }
        self.flush(out);
        Ok(())
    }
}
