//! The Chat Completions SSE stream: per-response state, chunk handling, usage and finish
//! reasons.

use super::*;

/// A tool call being streamed.
pub(super) struct OpenCall {
    stream_index: Option<u64>,
    pub(super) id: String,
    content_index: usize,
    args: ToolArgs,
}

/// Per-response stream state.
pub struct StreamState<'m> {
    pub(super) model: &'m Model,
    text_block: Option<usize>,
    thinking_block: Option<usize>,
    pub(super) calls: Vec<OpenCall>,
    pub(super) has_finish_reason: bool,
}

impl<'m> StreamState<'m> {
    pub fn new(model: &'m Model) -> StreamState<'m> {
        StreamState {
            model,
            text_block: None,
            thinking_block: None,
            calls: Vec::new(),
            has_finish_reason: false,
        }
    }

    /// Applies one chunk.
    pub fn handle_chunk(&mut self, chunk: &Value, out: &mut StreamedMessage<'_>) {
        if out.msg.response_id.is_none() {
            if let Some(id) = chunk
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                out.msg.response_id = Some(id.to_owned());
            }
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            if !m.is_empty() && m != self.model.id && out.msg.response_model.is_none() {
                out.msg.response_model = Some(m.to_owned());
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            out.msg.usage = parse_usage(u, self.model);
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        if chunk.get("usage").is_none_or(|u| !u.is_object()) {
            if let Some(u) = choice.get("usage").filter(|u| u.is_object()) {
                out.msg.usage = parse_usage(u, self.model);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            if !reason.is_empty() {
                out.msg.raw_stop_reason = Some(reason.to_owned());
                let (stop, err) = map_finish_reason(reason);
                out.msg.stop_reason = stop;
                if let Some(e) = err {
                    out.msg.error_message = Some(e);
                }
                self.has_finish_reason = true;
            }
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return;
        };
        // Reasoning first: some proxies put reasoning and answer in one delta.
        for field in ["reasoning_content", "reasoning", "reasoning_text"] {
            if let Some(d) = delta
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                let signature = if self.model.provider == "opencode-go" && field == "reasoning" {
                    "reasoning_content"
                } else {
                    field
                };
                let ci = match self.thinking_block {
                    Some(ci) => ci,
                    None => {
                        let ci = out.push_block(ContentBlock::Thinking {
                            thinking: String::new(),
                            thinking_signature: Some(signature.to_owned()),
                            redacted: false,
                        });
                        self.thinking_block = Some(ci);
                        out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                        ci
                    }
                };
                if let Some(ContentBlock::Thinking { thinking, .. }) = out.msg.content.get_mut(ci) {
                    thinking.push_str(d);
                }
                out.emit(AssistantEvent::ThinkingDelta {
                    content_index: ci,
                    delta: d.to_owned(),
                });
                break;
            }
        }
        if let Some(d) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            let ci = match self.text_block {
                Some(ci) => ci,
                None => {
                    let ci = out.push_block(ContentBlock::text(""));
                    self.text_block = Some(ci);
                    out.emit(AssistantEvent::TextStart { content_index: ci });
                    ci
                }
            };
            if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(ci) {
                text.push_str(d);
            }
            out.emit(AssistantEvent::TextDelta {
                content_index: ci,
                delta: d.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for tc in calls {
                self.handle_tool_call(tc, out);
            }
        }
    }

    fn handle_tool_call(&mut self, tc: &Value, out: &mut StreamedMessage<'_>) {
        let stream_index = tc.get("index").and_then(Value::as_u64);
        let id = tc.get("id").and_then(Value::as_str).unwrap_or_default();
        let function = tc.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut pos =
            stream_index.and_then(|si| self.calls.iter().position(|c| c.stream_index == Some(si)));
        if pos.is_none() && !id.is_empty() {
            pos = self.calls.iter().position(|c| c.id == id);
        }
        let pos = match pos {
            Some(p) => p,
            None => {
                let ci = out.push_block(ContentBlock::ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: json!({}),
                    arguments_error: None,
                    thought_signature: None,
                });
                self.calls.push(OpenCall {
                    stream_index,
                    id: id.to_owned(),
                    content_index: ci,
                    args: ToolArgs::new(),
                });
                out.emit(AssistantEvent::ToolcallStart {
                    content_index: ci,
                    id: id.to_owned(),
                    tool_name: name.to_owned(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if call.stream_index.is_none() {
            call.stream_index = stream_index;
        }
        if !id.is_empty() && call.id.is_empty() {
            call.id = id.to_owned();
        }
        let ci = call.content_index;
        let piece = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let partial = if piece.is_empty() {
            None
        } else {
            call.args.append(&piece)
        };
        if let Some(ContentBlock::ToolCall {
            id: block_id,
            name: block_name,
            arguments,
            ..
        }) = out.msg.content.get_mut(ci)
        {
            if block_id.is_empty() && !id.is_empty() {
                *block_id = id.to_owned();
            }
            if block_name.is_empty() && !name.is_empty() {
                *block_name = name.to_owned();
            }
            if let Some(p) = partial {
                *arguments = p;
            }
        }
        out.emit(AssistantEvent::ToolcallDelta {
            content_index: ci,
            delta: piece,
        });
    }

    /// Closes every block in content order (text and thinking close only here).
    pub fn finish_blocks(&mut self, out: &mut StreamedMessage<'_>) {
        for ci in 0..out.msg.content.len() {
            match &mut out.msg.content[ci] {
                ContentBlock::Text { text, .. } => {
                    let content = text.clone();
                    out.emit(AssistantEvent::TextEnd {
                        content_index: ci,
                        content,
                    });
                }
                ContentBlock::Thinking { thinking, .. } => {
                    let content = thinking.clone();
                    out.emit(AssistantEvent::ThinkingEnd {
                        content_index: ci,
                        content,
                    });
                }
                block @ ContentBlock::ToolCall { .. } => {
                    if let Some(call) = self.calls.iter().find(|c| c.content_index == ci) {
                        call.args.finish().apply_to(block);
                    }
                    let tool_call = block.clone();
                    out.emit(AssistantEvent::ToolcallEnd {
                        content_index: ci,
                        tool_call,
                    });
                }
                ContentBlock::Image { .. } => {}
            }
        }
        self.calls.clear();
        self.text_block = None;
        self.thinking_block = None;
    }
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    cur.as_u64()
        .or_else(|| cur.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

/// pi's `parseChunkUsage` (providers.md §3).
pub fn parse_usage(raw: &Value, model: &Model) -> Usage {
    let prompt = u64_at(raw, &["prompt_tokens"]).unwrap_or(0);
    let cache_read = u64_at(raw, &["prompt_tokens_details", "cached_tokens"])
        .or_else(|| u64_at(raw, &["prompt_cache_hit_tokens"]))
        .or_else(|| u64_at(raw, &["cached_tokens"]))
        .unwrap_or(0);
    let cache_write = u64_at(raw, &["prompt_tokens_details", "cache_write_tokens"]).unwrap_or(0);
    let input = prompt
        .saturating_sub(cache_read)
        .saturating_sub(cache_write);
    let output = u64_at(raw, &["completion_tokens"]).unwrap_or(0);
    let reasoning = u64_at(raw, &["completion_tokens_details", "reasoning_tokens"])
        .filter(|r| *r > 0)
        .or_else(|| u64_at(raw, &["reasoning_tokens"]))
        .unwrap_or(0);
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: Some(reasoning),
        total_tokens: input
            .saturating_add(output)
            .saturating_add(cache_read)
            .saturating_add(cache_write),
        ..Usage::default()
    };
    usage.recompute_cost(model);
    usage
}

/// Finish reasons → pi's stop reasons (providers.md §3).
fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "function_call" | "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::llm::stream::StreamUpdate;
    use crate::llm::types::AssistantMessage;

    #[test]
    fn usage_parsing() {
        let m = mock_gpt();
        let u = parse_usage(
            &json!({"prompt_tokens": 400, "completion_tokens": 25, "total_tokens": 425, "prompt_tokens_details": {"cached_tokens": 100}}),
            &m,
        );
        // Golden: {"input":300,"output":25,"cacheRead":100,"cacheWrite":0,"reasoning":0,
        // "totalTokens":425,"cost":{"input":0.0006,"output":0.00019999999999999998,
        // "cacheRead":4.9999999999999996e-05,"cacheWrite":0,"total":0.00085,...}}
        // (serde_json's default float parsing is not exact, so compare computed values.)
        assert_eq!(
            (
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.reasoning,
                u.total_tokens
            ),
            (300, 25, 100, 0, Some(0), 425)
        );
        assert_eq!(u.cost.output, 8.0 / 1e6 * 25.0);
        assert_eq!(u.cost.output.to_string(), "0.00019999999999999998");
        assert_eq!(u.cost.cache_read.to_string(), "0.000049999999999999996");
        assert_eq!(u.cost.total, 0.00085);
        assert_eq!(u.cost.total_from_provider, Some(false));
        let keys: Vec<String> = serde_json::to_value(&u)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "input",
                "output",
                "cacheRead",
                "cacheWrite",
                "reasoning",
                "totalTokens",
                "cost"
            ]
        );
        let u = parse_usage(
            &json!({"prompt_tokens": 10, "prompt_cache_hit_tokens": 4, "completion_tokens": 3, "completion_tokens_details": {"reasoning_tokens": 2}}),
            &m,
        );
        assert_eq!((u.input, u.cache_read, u.reasoning), (6, 4, Some(2)));
    }

    fn run_chunks(chunks: &[Value]) -> (AssistantMessage, Vec<Value>) {
        let model = mock_gpt();
        let mut wire = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| {
            if let StreamUpdate::Event(_, e) = u {
                wire.push(e.to_wire());
            }
        };
        let mut out = StreamedMessage::new(&model, &mut cb);
        let mut st = StreamState::new(&model);
        for c in chunks {
            st.handle_chunk(c, &mut out);
        }
        st.finish_blocks(&mut out);
        let msg = out.msg.clone();
        drop(out);
        (msg, wire)
    }

    fn chunk(delta: Value, finish: Value) -> Value {
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"mock-gpt","choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
    }

    #[test]
    fn stream_events_match_observed_order() {
        let chunks = vec![
            chunk(json!({"role":"assistant","content":""}), Value::Null),
            chunk(json!({"content":"Runni"}), Value::Null),
            chunk(json!({"content":"ng it now."}), Value::Null),
            chunk(
                json!({"tool_calls":[{"index":0,"id":"call_oai_01","type":"function","function":{"name":"bash","arguments":"{\"command\": "}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":"\"echo from-openai\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            json!({"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":400,"completion_tokens":25,"total_tokens":425,"prompt_tokens_details":{"cached_tokens":100}}}),
        ];
        let (msg, wire) = run_chunks(&chunks);
        assert_eq!(
            wire,
            vec![
                json!({"type":"text_start","contentIndex":0}),
                json!({"type":"text_delta","contentIndex":0,"delta":"Runni"}),
                json!({"type":"text_delta","contentIndex":0,"delta":"ng it now."}),
                json!({"type":"toolcall_start","contentIndex":1,"id":"call_oai_01","toolName":"bash"}),
                json!({"type":"toolcall_delta","contentIndex":1,"delta":"{\"command\": "}),
                json!({"type":"toolcall_delta","contentIndex":1,"delta":"\"echo from-openai\"}"}),
                json!({"type":"text_end","contentIndex":0,"content":"Running it now."}),
                json!({"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_oai_01","name":"bash","arguments":{"command":"echo from-openai"}}}),
            ]
        );
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(msg.raw_stop_reason.as_deref(), Some("tool_calls"));
        assert_eq!(msg.response_id.as_deref(), Some("chatcmpl-1"));
        assert_eq!(
            (msg.usage.input, msg.usage.output, msg.usage.cache_read),
            (300, 25, 100)
        );
    }

    #[test]
    fn reasoning_deltas_become_thinking() {
        let chunks = vec![
            chunk(json!({"reasoning_content":"hm"}), Value::Null),
            chunk(
                json!({"reasoning":"dup","reasoning_content":"m"}),
                Value::Null,
            ),
            chunk(json!({"content":"ok"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ];
        let (msg, wire) = run_chunks(&chunks);
        assert_eq!(
            msg.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    thinking_signature: Some("reasoning_content".into()),
                    redacted: false
                },
                ContentBlock::text("ok")
            ]
        );
        let types: Vec<&str> = wire.iter().map(|w| w["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "thinking_start",
                "thinking_delta",
                "thinking_delta",
                "text_start",
                "text_delta",
                "thinking_end",
                "text_end"
            ]
        );
        let (msg, _) = run_chunks(&[chunk(json!({"content":"x"}), json!("content_filter"))]);
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.error_message.as_deref(),
            Some("Provider finish_reason: content_filter")
        );
    }
}
