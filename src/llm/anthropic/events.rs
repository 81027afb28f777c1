//! The Anthropic SSE stream: per-response state, event handling and stop-reason mapping.

use super::*;
use std::borrow::Cow;

/// An open content block: Anthropic's block index → our content index (and the argument
/// stream of a tool call).
struct OpenBlock {
    index: u64,
    content_index: usize,
    args: Option<ToolArgs>,
}

/// Per-response stream state.
pub struct StreamState<'m> {
    pub(super) model: &'m Model,
    pub(super) oauth: bool,
    pub(super) tools: &'m [ToolSpec],
    open: Vec<OpenBlock>,
    pub(super) saw_start: bool,
    pub(super) saw_stop: bool,
    /// The request's managed effort, recorded on the reply before it is sent.
    pub(super) provider_thinking_level: Option<String>,
    /// The request's context (rebuilt for the strict-tools downgrade).
    pub(super) ctx: Option<&'m LlmContext>,
    /// The request sent preferred-strict tools strict and may be downgraded once.
    pub(super) may_downgrade_strict: bool,
    /// The thread request sent (message threads), recorded after a clean reply.
    pub(super) thread: Option<ThreadRequest>,
    /// A rejection about the thread may still be answered by sending again (once per send).
    pub(super) thread_retry_available: bool,
    /// The session whose threads go off once the request sent without `thread` succeeds.
    pub(super) pending_thread_off: Option<String>,
    /// Where the request went and its headers (for sending it again).
    pub(super) target: Option<(String, Vec<(String, String)>)>,
    /// The last `input_transformations` the server reported (message_start / message_delta).
    pub(super) input_transformations: Option<Vec<Value>>,
    /// The model whose prices apply: a fallback model with its own cost when one answered.
    usage_model: Option<Model>,
    /// Workload identity federation: its config and the access token the request carries.
    pub(super) federated: Option<(super::federation::Federation, String)>,
}

const MESSAGE_EVENTS: &[&str] = &[
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

fn u64_field(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(|x| {
        x.as_u64()
            .or_else(|| x.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

impl<'m> StreamState<'m> {
    pub fn new(model: &'m Model, oauth: bool, tools: &'m [ToolSpec]) -> StreamState<'m> {
        StreamState {
            model,
            oauth,
            tools,
            open: Vec::new(),
            saw_start: false,
            saw_stop: false,
            provider_thinking_level: None,
            ctx: None,
            may_downgrade_strict: false,
            thread: None,
            thread_retry_available: false,
            pending_thread_off: None,
            target: None,
            input_transformations: None,
            usage_model: None,
            federated: None,
        }
    }

    /// pi: when an allowed fallback model answered (same provider) and its cost is known,
    /// usage is priced with that cost.
    fn fallback_usage_model(&self, response_model: Option<&Value>) -> Option<Model> {
        let rm = response_model.and_then(Value::as_str);
        if rm == Some(self.model.id.as_str()) {
            return None;
        }
        let rm = rm?;
        let cost = AnthropicCompat::of(self.model)
            .allowed_fallback_models
            .into_iter()
            .find(|f| f.provider == self.model.provider && f.model == rm)?
            .cost?;
        let mut usage_model = self.model.clone();
        usage_model.id = rm.to_owned();
        usage_model.cost = cost;
        Some(usage_model)
    }

    /// pi: the input transformations the server reported become an
    /// `anthropic_input_transformations` diagnostic on a clean reply (type, path and reason of
    /// each, when present).
    pub(super) fn record_input_transformations(&self, msg: &mut AssistantMessage) {
        let Some(list) = self
            .input_transformations
            .as_ref()
            .filter(|l| !l.is_empty())
        else {
            return;
        };
        let transformations: Vec<Value> = list
            .iter()
            .map(|t| {
                let mut o = Map::new();
                for k in ["type", "path", "reason"] {
                    if let Some(v) = t.get(k).filter(|v| !v.is_null()) {
                        o.insert(k.into(), v.clone());
                    }
                }
                Value::Object(o)
            })
            .collect();
        if msg.diagnostics.is_empty() {
            msg.diagnostics_after_reply = true;
        }
        msg.diagnostics.push(json!({
            "type": "anthropic_input_transformations",
            "timestamp": crate::util::now_ms(),
            "details": {"transformations": transformations}
        }));
    }

    fn recompute_usage(&self, msg: &mut AssistantMessage) {
        let u = &mut msg.usage;
        // Saturating: a server's token counts are input (a count near 2^64 must not panic).
        u.total_tokens = u
            .input
            .saturating_add(u.output)
            .saturating_add(u.cache_read)
            .saturating_add(u.cache_write);
        u.recompute_cost(self.usage_model.as_ref().unwrap_or(self.model));
    }

    /// Handles one SSE event. `Err` ends the stream.
    pub fn handle(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        let name = event.unwrap_or_default();
        if name == "error" {
            out.start();
            return Err(Failure::Error(data.to_owned()));
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return Ok(());
        }
        if name == "content_block_delta" && self.text_delta(data, out) {
            return Ok(());
        }
        let ev: Value = crate::js::json::parse::parse_json_with_repair(data).ok_or_else(|| {
            out.start();
            Failure::Error(format!(
                "Could not parse Anthropic SSE event {name}: invalid JSON; data={data}"
            ))
        })?;
        let ty = ev.get("type").and_then(Value::as_str).unwrap_or_default();
        if ty != "message_start" {
            out.start();
        }
        match ty {
            "message_start" => {
                self.saw_start = true;
                let m = ev.get("message").cloned().unwrap_or(Value::Null);
                let msg = &mut out.msg;
                if let Some(id) = m.get("id").and_then(Value::as_str) {
                    msg.response_id = Some(id.to_owned());
                }
                if let Some(rm) = m.get("model").and_then(Value::as_str) {
                    if rm != self.model.id {
                        msg.response_model = Some(rm.to_owned());
                    }
                }
                self.usage_model = self.fallback_usage_model(m.get("model"));
                if let Some(Value::Array(t)) = m.get("input_transformations") {
                    self.input_transformations = Some(t.clone());
                }
                let u = m.get("usage").cloned().unwrap_or(Value::Null);
                msg.usage.input = u64_field(&u, "input_tokens").unwrap_or(0);
                msg.usage.output = u64_field(&u, "output_tokens").unwrap_or(0);
                msg.usage.cache_read = u64_field(&u, "cache_read_input_tokens").unwrap_or(0);
                msg.usage.cache_write = u64_field(&u, "cache_creation_input_tokens").unwrap_or(0);
                msg.usage.cache_write_1h = Some(
                    u.get("cache_creation")
                        .and_then(|c| u64_field(c, "ephemeral_1h_input_tokens"))
                        .unwrap_or(0),
                );
                self.recompute_usage(msg);
                out.start();
            }
            "content_block_start" => {
                let index = u64_field(&ev, "index").unwrap_or(0);
                let cb = ev.get("content_block").cloned().unwrap_or(Value::Null);
                let str_of = |k: &str| {
                    cb.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match cb.get("type").and_then(Value::as_str).unwrap_or_default() {
                    "fallback" if !out.msg.content.is_empty() => {
                        return Err(Failure::Error(
                            "Anthropic performed an unsupported mid-output model fallback".into(),
                        ));
                    }
                    "text" => {
                        let ci = out.push_block(ContentBlock::text(str_of("text")));
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: None,
                        });
                        out.emit(AssistantEvent::TextStart { content_index: ci });
                    }
                    "thinking" => {
                        let ci = out.push_block(ContentBlock::Thinking {
                            thinking: str_of("thinking"),
                            thinking_signature: Some(str_of("signature")),
                            redacted: false,
                        });
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: None,
                        });
                        out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                    }
                    "redacted_thinking" => {
                        let ci = out.push_block(ContentBlock::Thinking {
                            thinking: "[Reasoning redacted]".into(),
                            thinking_signature: Some(str_of("data")),
                            redacted: true,
                        });
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: None,
                        });
                        out.emit(AssistantEvent::ThinkingStart { content_index: ci });
                    }
                    "tool_use" => {
                        let id = str_of("id");
                        let raw_name = str_of("name");
                        let name = if self.oauth {
                            from_claude_code_name(&raw_name, self.tools)
                        } else {
                            raw_name
                        };
                        let arguments = match cb.get("input") {
                            Some(v @ Value::Object(_)) => v.clone(),
                            _ => json!({}),
                        };
                        let ci = out.push_block(ContentBlock::ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments,
                            arguments_error: None,
                            thought_signature: None,
                        });
                        self.open.push(OpenBlock {
                            index,
                            content_index: ci,
                            args: Some(ToolArgs::new()),
                        });
                        out.emit(AssistantEvent::ToolcallStart {
                            content_index: ci,
                            id,
                            tool_name: name,
                        });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = u64_field(&ev, "index").unwrap_or(0);
                let Some(pos) = self.open.iter().position(|o| o.index == index) else {
                    return Ok(());
                };
                let ci = self.open[pos].content_index;
                let delta = ev.get("delta").cloned().unwrap_or(Value::Null);
                let piece = |k: &str| {
                    delta
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match delta
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                {
                    "text_delta" => {
                        let d = piece("text");
                        if let Some(ContentBlock::Text { text, .. }) = out.msg.content.get_mut(ci) {
                            text.push_str(&d);
                            out.emit(AssistantEvent::TextDelta {
                                content_index: ci,
                                delta: d,
                            });
                        }
                    }
                    "thinking_delta" => {
                        let d = piece("thinking");
                        if let Some(ContentBlock::Thinking { thinking, .. }) =
                            out.msg.content.get_mut(ci)
                        {
                            thinking.push_str(&d);
                            out.emit(AssistantEvent::ThinkingDelta {
                                content_index: ci,
                                delta: d,
                            });
                        }
                    }
                    "input_json_delta" => {
                        let d = piece("partial_json");
                        let Some(args) = self.open[pos].args.as_mut() else {
                            return Ok(());
                        };
                        let partial = args.append(&d);
                        if let Some(ContentBlock::ToolCall { arguments, .. }) =
                            out.msg.content.get_mut(ci)
                        {
                            if let Some(p) = partial {
                                *arguments = p;
                            }
                            out.emit(AssistantEvent::ToolcallDelta {
                                content_index: ci,
                                delta: d,
                            });
                        }
                    }
                    "signature_delta" => {
                        let d = piece("signature");
                        if let Some(ContentBlock::Thinking {
                            thinking_signature, ..
                        }) = out.msg.content.get_mut(ci)
                        {
                            thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(&d);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = u64_field(&ev, "index").unwrap_or(0);
                let Some(pos) = self.open.iter().position(|o| o.index == index) else {
                    return Ok(());
                };
                let open = self.open.remove(pos);
                let ci = open.content_index;
                match out.msg.content.get_mut(ci) {
                    Some(ContentBlock::Text { text, .. }) => {
                        let content = text.clone();
                        out.emit(AssistantEvent::TextEnd {
                            content_index: ci,
                            content,
                        });
                    }
                    Some(ContentBlock::Thinking { thinking, .. }) => {
                        let content = thinking.clone();
                        out.emit(AssistantEvent::ThinkingEnd {
                            content_index: ci,
                            content,
                        });
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
            "message_delta" => {
                if let Some(Value::Array(t)) = ev.get("input_transformations") {
                    self.input_transformations = Some(t.clone());
                }
                let msg = &mut out.msg;
                let delta = ev.get("delta").cloned().unwrap_or(Value::Null);
                if let Some(reason) = delta.get("stop_reason").and_then(Value::as_str) {
                    msg.raw_stop_reason = Some(reason.to_owned());
                    let (stop, err) = map_stop_reason(reason, delta.get("stop_details"))?;
                    msg.stop_reason = stop;
                    if let Some(e) = err {
                        msg.error_message = Some(e);
                    }
                }
                if let Some(u) = ev.get("usage").filter(|u| u.is_object()) {
                    if let Some(v) = u64_field(u, "input_tokens") {
                        msg.usage.input = v;
                    }
                    if let Some(v) = u64_field(u, "output_tokens") {
                        msg.usage.output = v;
                    }
                    if let Some(v) = u64_field(u, "cache_read_input_tokens") {
                        msg.usage.cache_read = v;
                    }
                    if let Some(v) = u64_field(u, "cache_creation_input_tokens") {
                        msg.usage.cache_write = v;
                    }
                    if let Some(v) = u
                        .get("cache_creation")
                        .and_then(|c| u64_field(c, "ephemeral_1h_input_tokens"))
                    {
                        msg.usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = u
                        .get("output_tokens_details")
                        .and_then(|d| u64_field(d, "thinking_tokens"))
                    {
                        msg.usage.reasoning = Some(v);
                    }
                }
                self.recompute_usage(msg);
            }
            "message_stop" => {
                self.saw_stop = true;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A `content_block_delta` carrying text or thinking, read without building a `Value` (most of
/// a reply's events are these). Anything else fails to parse into it (another delta kind, a
/// duplicate key, a non-integer index, a missing or non-string text) and takes the general path.
#[derive(serde::Deserialize)]
struct TextDeltaEvent<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    index: Option<u64>,
    #[serde(borrow)]
    delta: TextDeltaBody<'a>,
}

#[derive(serde::Deserialize)]
struct TextDeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
}

impl StreamState<'_> {
    /// Handles `data` when it is a text or thinking delta (as the general path in
    /// [`StreamState::handle`] would); false when it is not one, and nothing was done but the
    /// stream's start.
    fn text_delta(&mut self, data: &str, out: &mut StreamedMessage<'_>) -> bool {
        let Ok(ev) = serde_json::from_str::<TextDeltaEvent<'_>>(data) else {
            return false;
        };
        let thinking = match (ev.delta.ty.as_ref(), ev.delta.text, ev.delta.thinking) {
            _ if ev.ty != "content_block_delta" => return false,
            ("text_delta", Some(d), _) => Err(d),
            ("thinking_delta", _, Some(d)) => Ok(d),
            _ => return false,
        };
        out.start();
        let index = ev.index.unwrap_or(0);
        let Some(open) = self.open.iter().find(|o| o.index == index) else {
            return true;
        };
        let ci = open.content_index;
        match (thinking, out.msg.content.get_mut(ci)) {
            (Err(d), Some(ContentBlock::Text { text, .. })) => {
                text.push_str(&d);
                out.emit(AssistantEvent::TextDelta {
                    content_index: ci,
                    delta: d.into_owned(),
                });
            }
            (Ok(d), Some(ContentBlock::Thinking { thinking, .. })) => {
                thinking.push_str(&d);
                out.emit(AssistantEvent::ThinkingDelta {
                    content_index: ci,
                    delta: d.into_owned(),
                });
            }
            _ => {}
        }
        true
    }
}

/// Anthropic stop reasons → pi's (providers.md §2).
fn map_stop_reason(
    reason: &str,
    details: Option<&Value>,
) -> Result<(StopReason, Option<String>), Failure> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details
                    .and_then(|d| d.get("explanation"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_owned(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".into()),
        ),
        other => return Err(Failure::Error(format!("Unhandled stop reason: {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::llm::sse::SseParser;
    use crate::llm::stream::StreamUpdate;

    /// Runs canned SSE text through the stream state, collecting wire events.
    fn run_events(sse: &str) -> (AssistantMessage, Vec<Value>, Result<(), Failure>, usize) {
        let model = mock_sonnet();
        let tools: Vec<ToolSpec> = Vec::new();
        let mut wire = Vec::new();
        let mut starts = 0;
        let mut cb = |u: StreamUpdate<'_>| match u {
            StreamUpdate::Start(_) => starts += 1,
            StreamUpdate::Event(_, e) => wire.push(e.to_wire()),
        };
        let mut out = StreamedMessage::new(&model, &mut cb);
        let mut st = StreamState::new(&model, false, &tools);
        let mut result = Ok(());
        for ev in SseParser::new(sse.as_bytes()).dispatch_trailing(true) {
            let ev = ev.unwrap();
            if let Err(e) = st.handle(ev.event.as_deref(), &ev.data, &mut out) {
                result = Err(e);
                break;
            }
        }
        let msg = out.msg.clone();
        drop(out);
        (msg, wire, result, starts)
    }

    fn sse(events: &[(&str, Value)]) -> String {
        events
            .iter()
            .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
            .collect()
    }

    /// Text and thinking deltas read by the typed fast path and the odd ones left to the
    /// general path land alike: escapes decoded, a float index, a duplicate key, a missing text
    /// (an empty delta), a delta for another kind of block or an unknown index (nothing).
    #[test]
    fn text_and_thinking_deltas_fast_and_general_paths() {
        let delta = |index: &str, body: &str| {
            (
                "content_block_delta",
                serde_json::from_str::<Value>(&format!(
                    r#"{{"type":"content_block_delta","index":{index},"delta":{body}}}"#
                ))
                .unwrap(),
            )
        };
        let mut events = vec![
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"m","model":"mock-sonnet","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            ),
        ];
        events.extend([
            delta(
                "0",
                r#"{"type":"thinking_delta","thinking":"think \"q\"\n"}"#,
            ),
            delta("1", r#"{"type":"text_delta","text":"plain "}"#),
            delta("1", r#"{"type":"text_delta","text":"esc\u00e9\t\\ "}"#),
            delta("1.0", r#"{"type":"text_delta","text":"float "}"#),
            delta("1", r#"{"type":"text_delta","text":"dup1","text":"dup2 "}"#),
            delta("1", r#"{"type":"text_delta"}"#),
            delta("1", r#"{"type":"thinking_delta","thinking":"wrong block"}"#),
            delta("0", r#"{"type":"text_delta","text":"wrong block"}"#),
            delta("9", r#"{"type":"text_delta","text":"unknown index"}"#),
        ]);
        let (msg, wire, result, starts) = run_events(&sse(&events));
        assert!(result.is_ok());
        assert_eq!(starts, 1);
        let deltas: Vec<String> = wire.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            deltas,
            [
                r#"{"type":"thinking_start","contentIndex":0}"#,
                r#"{"type":"text_start","contentIndex":1}"#,
                r#"{"type":"thinking_delta","contentIndex":0,"delta":"think \"q\"\n"}"#,
                r#"{"type":"text_delta","contentIndex":1,"delta":"plain "}"#,
                r#"{"type":"text_delta","contentIndex":1,"delta":"escé\t\\ "}"#,
                r#"{"type":"text_delta","contentIndex":1,"delta":"float "}"#,
                r#"{"type":"text_delta","contentIndex":1,"delta":"dup2 "}"#,
                r#"{"type":"text_delta","contentIndex":1,"delta":""}"#,
            ]
        );
        assert!(
            matches!(&msg.content[0], ContentBlock::Thinking { thinking, .. } if thinking == "think \"q\"\n")
        );
        assert!(
            matches!(&msg.content[1], ContentBlock::Text { text, .. } if text == "plain escé\t\\ float dup2 ")
        );
    }

    #[test]
    fn stream_events_thinking_text_tool() {
        let text = sse(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"mock-sonnet","content":[],"stop_reason":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":10,"cache_read_input_tokens":30,"output_tokens":1}}}),
            ),
            ("ping", json!({"type":"ping"})),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":1}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_C","name":"bash","input":{}}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"com"}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"mand\": \"ls\"}"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":2}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":120,"cache_creation_input_tokens":10,"cache_read_input_tokens":30,"output_tokens":14,"output_tokens_details":{"thinking_tokens":5}}}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ]);
        let (msg, wire, result, starts) = run_events(&text);
        assert_eq!(result, Ok(()));
        assert_eq!(starts, 1);
        assert_eq!(
            wire,
            vec![
                json!({"type":"thinking_start","contentIndex":0}),
                json!({"type":"thinking_delta","contentIndex":0,"delta":"Let me think."}),
                json!({"type":"thinking_end","contentIndex":0,"content":"Let me think."}),
                json!({"type":"text_start","contentIndex":1}),
                json!({"type":"text_delta","contentIndex":1,"delta":"Hi"}),
                json!({"type":"text_end","contentIndex":1,"content":"Hi"}),
                json!({"type":"toolcall_start","contentIndex":2,"id":"toolu_C","toolName":"bash"}),
                json!({"type":"toolcall_delta","contentIndex":2,"delta":""}),
                json!({"type":"toolcall_delta","contentIndex":2,"delta":"{\"com"}),
                json!({"type":"toolcall_delta","contentIndex":2,"delta":"mand\": \"ls\"}"}),
                json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"toolu_C","name":"bash","arguments":{"command":"ls"}}}),
            ]
        );
        let v = msg.to_value();
        assert_eq!(
            v["content"],
            json!([
                {"type":"thinking","thinking":"Let me think.","thinkingSignature":"SIG"},
                {"type":"text","text":"Hi"},
                {"type":"toolCall","id":"toolu_C","name":"bash","arguments":{"command":"ls"}}
            ])
        );
        assert_eq!(v["stopReason"], "toolUse");
        assert_eq!(v["rawStopReason"], "tool_use");
        assert_eq!(v["responseId"], "msg_1");
        assert_eq!(
            v["usage"],
            serde_json::from_str::<Value>(r#"{"input":120,"output":14,"cacheRead":30,"cacheWrite":10,"reasoning":5,"totalTokens":174,"cost":{"input":0.00036,"output":0.00021,"cacheRead":9e-6,"cacheWrite":3.75e-5,"total":0.0006165,"totalFromProvider":false},"cacheWrite1h":0}"#).unwrap()
        );
    }

    #[test]
    fn stream_error_event_keeps_raw_data() {
        let mut text = sse(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"msg_7","model":"mock-sonnet","usage":{"input_tokens":10,"output_tokens":1}}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
        ]);
        text.push_str("event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n");
        let (msg, _, result, _) = run_events(&text);
        assert_eq!(
            result,
            Err(Failure::Error(
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
                    .into()
            ))
        );
        assert_eq!(msg.content, vec![ContentBlock::text("x")]);
    }

    #[test]
    fn stop_reasons() {
        for (raw, want, err) in [
            ("end_turn", StopReason::Stop, None),
            ("pause_turn", StopReason::Stop, None),
            ("stop_sequence", StopReason::Stop, None),
            ("max_tokens", StopReason::Length, None),
            ("tool_use", StopReason::ToolUse, None),
            (
                "refusal",
                StopReason::Error,
                Some("The model refused to complete the request"),
            ),
            (
                "sensitive",
                StopReason::Error,
                Some("Provider stopped with: sensitive"),
            ),
        ] {
            let (s, e) = map_stop_reason(raw, None).unwrap();
            assert_eq!(s, want);
            assert_eq!(e.as_deref(), err);
        }
        assert_eq!(
            map_stop_reason("refusal", Some(&json!({"explanation":"nope"})))
                .unwrap()
                .1
                .as_deref(),
            Some("nope")
        );
        assert_eq!(
            map_stop_reason("weird", None).unwrap_err(),
            Failure::Error("Unhandled stop reason: weird".into())
        );
    }

    #[test]
    fn redacted_thinking_and_oauth_names() {
        let model = mock_sonnet();
        let tools = vec![ToolSpec {
            name: "bash".into(),
            description: String::new(),
            parameters: json!({}),
            strict_prefer: false,
        }];
        let mut wire = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| {
            if let StreamUpdate::Event(_, e) = u {
                wire.push(e.to_wire())
            }
        };
        let mut out = StreamedMessage::new(&model, &mut cb);
        let mut st = StreamState::new(&model, true, &tools);
        for (e, d) in [
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"ENC"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":1}),
            ),
        ] {
            st.handle(Some(e), &d.to_string(), &mut out).unwrap();
        }
        assert_eq!(
            out.msg.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "[Reasoning redacted]".into(),
                    thinking_signature: Some("ENC".into()),
                    redacted: true
                },
                ContentBlock::ToolCall {
                    id: "t".into(),
                    name: "bash".into(),
                    arguments: json!({}),
                    arguments_error: None,
                    thought_signature: None
                }
            ]
        );
        drop(out);
        assert_eq!(
            wire[2],
            json!({"type":"toolcall_start","contentIndex":1,"id":"t","toolName":"bash"})
        );
    }
}
