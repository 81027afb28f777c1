//! The Gemini stream: chunk errors, finish reasons and the per-response block state.

use super::*;

/// An error object inside a stream chunk (`{"error":{"code":503,…}}`): the SDK's
/// `got status: <status>. <chunk JSON>`.
fn stream_chunk_error(chunk: &Value) -> Option<String> {
    let err = chunk.get("error").filter(|e| e.is_object())?;
    let code = err.get("code").and_then(Value::as_f64)?;
    if !(400.0..600.0).contains(&code) {
        return None;
    }
    let status = match err.get("status") {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_stringify(other),
    };
    Some(format!("got status: {status}. {}", js_stringify(chunk)))
}

/// pi's `mapStopReason` for a Gemini `finishReason`.
fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "STOP" => Ok(StopReason::Stop),
        "MAX_TOKENS" | "CONTINUATION" => Ok(StopReason::Length),
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => Ok(StopReason::Error),
        other => Err(format!("Unhandled stop reason: {other}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Stream chunks

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Current {
    Text,
    Thinking,
}

/// The state of one Gemini stream: the open text or thinking block.
#[derive(Debug, Default)]
pub struct GoogleStream {
    pub(super) current: Option<(Current, usize)>,
}

fn u64_of(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(number_to_u64).unwrap_or(0)
}

impl GoogleStream {
    pub fn new() -> GoogleStream {
        GoogleStream::default()
    }

    /// Ends the open text or thinking block, if any.
    pub fn close_block(&mut self, out: &mut StreamedMessage<'_>) {
        let Some((kind, index)) = self.current.take() else {
            return;
        };
        let event = match (kind, out.msg.content.get(index)) {
            (Current::Text, Some(ContentBlock::Text { text, .. })) => AssistantEvent::TextEnd {
                content_index: index,
                content: text.clone(),
            },
            (Current::Thinking, Some(ContentBlock::Thinking { thinking, .. })) => {
                AssistantEvent::ThinkingEnd {
                    content_index: index,
                    content: thinking.clone(),
                }
            }
            _ => return,
        };
        out.emit(event);
    }

    /// Handles one chunk (an SSE `data` payload). `Err` carries the error message that ends
    /// the stream.
    pub fn handle(
        &mut self,
        data: &str,
        model: &Model,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), String> {
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| format!("exception parsing stream chunk {data}. SyntaxError: {e}"))?;
        if let Some(e) = stream_chunk_error(&chunk) {
            return Err(e);
        }
        if out.msg.response_id.as_deref().is_none_or(str::is_empty) {
            if let Some(id) = chunk
                .get("responseId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                out.msg.response_id = Some(id.to_owned());
            }
        }
        let candidate = chunk
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(parts) = candidate
            .and_then(|c| c.get("content"))
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
        {
            for part in parts {
                if let Some(text) = part.get("text").filter(|t| !t.is_null()) {
                    let text = match text {
                        Value::String(s) => s.clone(),
                        other => js_stringify(other),
                    };
                    self.text_part(part, &text, out);
                }
                if let Some(call) = part.get("functionCall").filter(|c| js_truthy(c)) {
                    self.function_call(part, call, out);
                }
            }
        }
        if let Some(reason) = candidate
            .and_then(|c| c.get("finishReason"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            out.msg.raw_stop_reason = Some(reason.to_owned());
            out.msg.stop_reason = map_finish_reason(reason)?;
            if out.msg.stop_reason == StopReason::Stop && out.msg.tool_calls().next().is_some() {
                out.msg.stop_reason = StopReason::ToolUse;
            }
        }
        if let Some(u) = chunk.get("usageMetadata").filter(|u| js_truthy(u)) {
            let prompt = u64_of(u, "promptTokenCount");
            let cached = u64_of(u, "cachedContentTokenCount");
            let thoughts = u64_of(u, "thoughtsTokenCount");
            out.msg.usage = Usage {
                input: prompt.saturating_sub(cached),
                output: u64_of(u, "candidatesTokenCount").saturating_add(thoughts),
                cache_read: cached,
                cache_write: 0,
                reasoning: Some(thoughts),
                total_tokens: u64_of(u, "totalTokenCount"),
                ..Usage::default()
            };
            out.msg.usage.recompute_cost(model);
        }
        Ok(())
    }

    fn text_part(&mut self, part: &Value, text: &str, out: &mut StreamedMessage<'_>) {
        let kind = if part.get("thought") == Some(&Value::Bool(true)) {
            Current::Thinking
        } else {
            Current::Text
        };
        if self.current.map(|(k, _)| k) != Some(kind) {
            self.close_block(out);
            let index = match kind {
                Current::Thinking => out.push_block(ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: false,
                }),
                Current::Text => out.push_block(ContentBlock::text("")),
            };
            self.current = Some((kind, index));
            out.emit(match kind {
                Current::Thinking => AssistantEvent::ThinkingStart {
                    content_index: index,
                },
                Current::Text => AssistantEvent::TextStart {
                    content_index: index,
                },
            });
        }
        let Some((_, index)) = self.current else {
            return;
        };
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        match out.msg.content.get_mut(index) {
            Some(ContentBlock::Thinking {
                thinking,
                thinking_signature,
                ..
            }) => {
                thinking.push_str(text);
                if let Some(s) = signature {
                    *thinking_signature = Some(s.to_owned());
                }
            }
            Some(ContentBlock::Text {
                text: t,
                text_signature,
            }) => {
                t.push_str(text);
                if let Some(s) = signature {
                    *text_signature = Some(s.to_owned());
                }
            }
            _ => return,
        }
        out.emit(match kind {
            Current::Thinking => AssistantEvent::ThinkingDelta {
                content_index: index,
                delta: text.to_owned(),
            },
            Current::Text => AssistantEvent::TextDelta {
                content_index: index,
                delta: text.to_owned(),
            },
        });
    }

    fn function_call(&mut self, part: &Value, call: &Value, out: &mut StreamedMessage<'_>) {
        self.close_block(out);
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        let provided = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let duplicate = provided.is_some_and(|p| {
            out.msg
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall { id, .. } if id == p))
        });
        let id = match provided {
            Some(p) if !duplicate => p.to_owned(),
            _ => format!(
                "{name}_{}_{}",
                now_ms(),
                TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1
            ),
        };
        let arguments = match call.get("args") {
            None | Some(Value::Null) => json!({}),
            Some(a) => a.clone(),
        };
        let thought_signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let delta = js_stringify(&arguments);
        let block = ContentBlock::ToolCall {
            id: id.clone(),
            name: name.to_owned(),
            arguments,
            arguments_error: None,
            thought_signature,
        };
        let index = out.push_block(block.clone());
        out.emit(AssistantEvent::ToolcallStart {
            content_index: index,
            id,
            tool_name: name.to_owned(),
        });
        out.emit(AssistantEvent::ToolcallDelta {
            content_index: index,
            delta,
        });
        out.emit(AssistantEvent::ToolcallEnd {
            content_index: index,
            tool_call: block,
        });
    }

    /// After the body ended: closes the open block and checks the stop reason.
    pub fn finish(&mut self, out: &mut StreamedMessage<'_>) -> Result<(), String> {
        self.close_block(out);
        match out.msg.stop_reason {
            StopReason::Pending => Err(NO_FINISH_REASON.into()),
            StopReason::Error | StopReason::Aborted => Err(match &out.msg.raw_stop_reason {
                Some(r) => format!("Provider stopped with: {r}"),
                None => "An unknown error occurred".into(),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    /// pi's g1 capture: thought parts, text, a function call, usage.
    #[test]
    fn thought_text_and_function_call() {
        let m = model("gemini-2.5-flash");
        let chunks = [
            parts(json!([{"text": "Let m", "thought": true}])),
            parts(json!([{"text": "e think.", "thought": true, "thoughtSignature": "U0lH"}])),
            parts(json!([{"text": "Runn"}])),
            parts(json!([{"text": "ing it."}])),
            parts(
                json!([{"functionCall": {"name": "bash", "args": {"command": "echo hi"},
                "id": "call_1"}, "thoughtSignature": "Q0FMTA=="}]),
            ),
            json!({"candidates": [{"content": {"parts": [], "role": "model"},
                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 130, "candidatesTokenCount": 15,
                    "thoughtsTokenCount": 5, "cachedContentTokenCount": 30,
                    "totalTokenCount": 150}, "responseId": "resp_1"}),
        ];
        let (msg, evs, result) = run_chunks(&m, &chunks);
        assert_eq!(result, Ok(()));
        assert_eq!(
            Value::Array(evs),
            json!([
                {"type": "start"},
                {"type": "thinking_start", "contentIndex": 0},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "Let m"},
                {"type": "thinking_delta", "contentIndex": 0, "delta": "e think."},
                {"type": "thinking_end", "contentIndex": 0, "content": "Let me think."},
                {"type": "text_start", "contentIndex": 1},
                {"type": "text_delta", "contentIndex": 1, "delta": "Runn"},
                {"type": "text_delta", "contentIndex": 1, "delta": "ing it."},
                {"type": "text_end", "contentIndex": 1, "content": "Running it."},
                {"type": "toolcall_start", "contentIndex": 2, "id": "call_1", "toolName": "bash"},
                {"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"command\":\"echo hi\"}"},
                {"type": "toolcall_end", "contentIndex": 2, "toolCall": {"type": "toolCall",
                    "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"},
                    "thoughtSignature": "Q0FMTA=="}}
            ])
        );
        let v = msg.to_value();
        assert_eq!(
            v["content"],
            json!([{"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "U0lH"},
                {"type": "text", "text": "Running it."},
                {"type": "toolCall", "id": "call_1", "name": "bash",
                    "arguments": {"command": "echo hi"}, "thoughtSignature": "Q0FMTA=="}])
        );
        // pi's numbers for this usage on gemini-2.5-flash rates.
        assert_eq!(
            v["usage"],
            json!({"input": 100, "output": 20, "cacheRead": 30, "cacheWrite": 0, "reasoning": 5,
                "totalTokens": 150, "cost": {"input": 2.9999999999999997e-05, "output": 5e-05,
                    "cacheRead": 2.25e-06, "cacheWrite": 0, "total": 8.225e-05,
                    "totalFromProvider": false}})
        );
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(msg.raw_stop_reason.as_deref(), Some("STOP"));
        assert_eq!(msg.response_id.as_deref(), Some("resp_1"));
    }

    #[test]
    fn generated_and_duplicate_tool_call_ids() {
        let m = model("gemini-2.5-flash");
        let call = |id: Option<&str>| {
            let mut c = json!({"name": "bash", "args": {"command": "a"}});
            if let Some(id) = id {
                c["id"] = json!(id);
            }
            json!({"functionCall": c})
        };
        let chunks = [
            parts(json!([call(None), call(Some("x")), call(Some("x")), {"text": "after"}])),
            json!({"candidates": [{"finishReason": "STOP"}]}),
        ];
        let (msg, evs, result) = run_chunks(&m, &chunks);
        assert_eq!(result, Ok(()));
        let ids: Vec<String> = msg
            .tool_calls()
            .map(|b| match b {
                ContentBlock::ToolCall { id, .. } => id.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert!(ids[0].starts_with("bash_"), "{ids:?}");
        assert_eq!(ids[0].split('_').count(), 3);
        assert_eq!(ids[1], "x");
        assert!(ids[2].starts_with("bash_") && ids[2] != ids[0], "{ids:?}");
        assert_eq!(msg.content.len(), 4);
        assert_eq!(evs.last().unwrap()["type"], "text_end");
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        // No usage reported: the usage stays empty (unpriced).
        assert_eq!(msg.usage, Usage::empty());
    }

    #[test]
    fn finish_reasons_and_stream_errors() {
        let m = model("gemini-2.5-flash");
        let finish = |reason: &str| {
            run_chunks(
                &m,
                &[
                    parts(json!([{"text": "x"}])),
                    json!({"candidates": [{"finishReason": reason}]}),
                ],
            )
        };
        let (msg, _, r) = finish("MAX_TOKENS");
        assert_eq!((r, msg.stop_reason), (Ok(()), StopReason::Length));
        let (msg, _, r) = finish("SAFETY");
        assert_eq!(r, Err("Provider stopped with: SAFETY".into()));
        assert_eq!(msg.raw_stop_reason.as_deref(), Some("SAFETY"));
        let (_, _, r) = finish("NEW_REASON");
        assert_eq!(r, Err("Unhandled stop reason: NEW_REASON".into()));
        // No finish reason.
        let (msg, evs, r) = run_chunks(&m, &[parts(json!([{"text": "Hel"}]))]);
        assert_eq!(r, Err(NO_FINISH_REASON.into()));
        assert_eq!(msg.text(), "Hel");
        assert_eq!(evs.last().unwrap()["type"], "text_end");
        // An error chunk.
        let (_, _, r) = run_chunks(
            &m,
            &[json!({"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}})],
        );
        assert_eq!(
            r,
            Err(r#"got status: UNAVAILABLE. {"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}"#.into())
        );
        // An error object without an HTTP code is just a chunk.
        let (_, _, r) = run_chunks(&m, &[json!({"error": {"message": "x"}})]);
        assert_eq!(r, Err(NO_FINISH_REASON.into()));
    }
}
