//! The mock's pi-messages stream (`POST …/messages` whose body is `{model, context, options}`):
//! pi's own assistant-message events, one per SSE `data:` line, ended by `done` (or `error` for a
//! `stream_error`). Part of `mock_llm` (a child module, for its connection helpers).

use serde_json::{json, Value};

use super::{str_or, Conn, Flow, Kind, Reply, Usage};

/// pi's usage object (no cost: the mock has no prices).
fn usage(u: &Usage) -> Value {
    json!({"input": u.input, "output": u.output, "cacheRead": u.cache_read,
        "cacheWrite": u.cache_write, "totalTokens": u.input + u.output + u.cache_read + u.cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

/// pi's stop reason for an Anthropic-named one.
fn reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "tool_use" => "toolUse",
        "max_tokens" => "length",
        _ => "stop",
    }
}

impl Conn<'_> {
    pub(super) fn pi_messages_stream(&mut self, r: &Reply) -> Flow {
        self.start_sse(&r.headers)?;
        self.sse(None, &json!({"type": "start"}))?;
        let mut index = 0usize;
        for (_, b) in r.streamed_blocks() {
            let (prefix, end) = match b.kind {
                Kind::Text => (
                    "text",
                    json!({"type": "text_end", "contentIndex": index,
                    "content": b.text}),
                ),
                Kind::Thinking => (
                    "thinking",
                    json!({"type": "thinking_end",
                    "contentIndex": index, "content": b.text}),
                ),
                Kind::ToolCall => (
                    "toolcall",
                    json!({"type": "toolcall_end",
                    "contentIndex": index, "toolCall": {"type": "toolCall",
                        "id": b.id.clone().unwrap_or_else(|| format!("call_{index}")),
                        "name": b.name, "arguments": b.input}}),
                ),
                Kind::Unknown => continue,
            };
            let mut end = end;
            if let (Some(sig), Kind::Text | Kind::Thinking) = (&b.signature, b.kind) {
                end["contentSignature"] = json!(sig);
            }
            self.pause(r.delay_ms)?;
            let start = if b.kind == Kind::ToolCall {
                json!({"type": "toolcall_start", "contentIndex": index,
                    "id": b.id.clone().unwrap_or_else(|| format!("call_{index}")),
                    "toolName": b.name})
            } else {
                json!({"type": format!("{prefix}_start"), "contentIndex": index})
            };
            self.sse(None, &start)?;
            for c in &b.chunks {
                self.pause(r.delay_ms)?;
                self.sse(
                    None,
                    &json!({"type": format!("{prefix}_delta"), "contentIndex": index,
                        "delta": c}),
                )?;
            }
            self.sse(None, &end)?;
            index += 1;
        }
        if self.cut_short(r)? {
            return Ok(());
        }
        let response_id = format!("resp_mock_{:04}", self.seq);
        if let Some(se) = &r.stream_error {
            self.sse(
                None,
                &json!({"type": "error", "reason": "error", "usage": usage(&r.usage),
                    "errorMessage": str_or(se.get("message"), "Overloaded"),
                    "responseId": response_id}),
            )?;
            return self.end_chunks();
        }
        self.pause(r.delay_ms)?;
        self.sse(
            None,
            &json!({"type": "done", "reason": reason(&r.stop_reason), "usage": usage(&r.usage),
                "responseId": response_id}),
        )?;
        self.end_chunks()
    }
}
