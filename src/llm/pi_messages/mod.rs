//! pi's own wire protocol (`pi-messages`, providers-catalog.md §4.6), spoken by the Radius
//! gateway and by any custom provider with `"api": "pi-messages"`: one POST of
//! `{model, context, options}` to `<baseUrl>/messages`, answered by server-sent events that are
//! pi's assistant-message events without `partial`, ended by a `done` or `error` event.
//!
//! The behaviour follows pi 1.6.0 (`dist/api/pi-messages.js`): `context.messages` is the
//! transcript as `convertToLlm` leaves it, verbatim (system messages with `sections` and
//! `toolsAdded`, every stored field); the client rebuilds the message from the events; any
//! failure (HTTP status, a bad event, the stream ending without a terminal event, an abort)
//! replaces the message with an empty one carrying the error.

use serde_json::{json, Map, Value};

use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::{fetch_failed, HttpError, HttpRequest};
use super::model::Model;
use super::request::json_request;
use super::sse::SseEvent;
use super::stream::{AbortTexts, Failure, StreamedMessage};
use super::thinking::ThinkingLevel;
use super::types::{
    AssistantMessage, CacheRetention, ContentBlock, LlmContext, LlmMessage, StreamOptions, Usage,
};
use crate::cancel::CancelToken;
use crate::util::now_ms;

mod events;
mod transcript;

pub use self::events::PiMessagesStream;
pub use self::transcript::{block_images, force_system_prompt, llm_transcript};

/// pi's texts of an abort: `fetch` and the body reader both reject with the `AbortError`.
pub const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "This operation was aborted",
    before_response: "This operation was aborted",
    streaming: "This operation was aborted",
};

// ---------------------------------------------------------------------------------------------
// The request

/// `<baseUrl>/messages` (trailing slashes of the base URL dropped).
pub fn endpoint(model: &Model) -> String {
    format!("{}/messages", model.base_url.trim_end_matches('/'))
}

/// The request headers: the bearer key, content negotiation, then the resolved provider and
/// model headers (last, so they win).
pub fn request_headers(opts: &StreamOptions, key: &str) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = vec![
        ("authorization".into(), format!("Bearer {key}")),
        ("accept".into(), "text/event-stream".into()),
        ("content-type".into(), "application/json".into()),
    ];
    h.extend(opts.headers.iter().cloned());
    h
}

/// One LLM message as pi's JSON (for a context that was not built from a transcript).
fn message_value(m: &LlmMessage) -> Value {
    let blocks = |c: &[ContentBlock]| Value::Array(c.iter().map(ContentBlock::to_value).collect());
    match m {
        LlmMessage::User {
            content,
            timestamp,
            as_string,
        } => {
            let content = match content.as_slice() {
                [ContentBlock::Text { text, .. }] if *as_string => Value::from(text.as_str()),
                c => blocks(c),
            };
            json!({"role": "user", "content": content, "timestamp": timestamp})
        }
        LlmMessage::Assistant(a) => {
            let mut v = a.to_value();
            if let Value::Object(o) = &mut v {
                if !o.contains_key("role") {
                    let mut with_role = Map::new();
                    with_role.insert("role".into(), Value::from("assistant"));
                    with_role.extend(std::mem::take(o));
                    *o = with_role;
                }
            }
            v
        }
        LlmMessage::ToolResult {
            tool_call_id,
            tool_name,
            content,
            is_error,
        } => json!({"role": "toolResult", "toolCallId": tool_call_id, "toolName": tool_name,
                    "content": blocks(content), "isError": is_error}),
        LlmMessage::System(s) => {
            let mut o = Map::new();
            o.insert("role".into(), Value::from("system"));
            o.insert("content".into(), Value::from(s.content.as_str()));
            if !s.sections.is_empty() {
                let sections: Map<String, Value> = s
                    .sections
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_deref().map_or(Value::Null, Value::from)))
                    .collect();
                o.insert("sections".into(), Value::Object(sections));
            }
            if !s.tools_added.is_empty() {
                let added: Vec<Value> = s
                    .tools_added
                    .iter()
                    .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
                    .collect();
                o.insert("toolsAdded".into(), Value::Array(added));
            }
            if !s.tools_removed.is_empty() {
                let removed: Vec<Value> = s
                    .tools_removed
                    .iter()
                    .map(|n| json!({ "name": n }))
                    .collect();
                o.insert("toolsRemoved".into(), Value::Array(removed));
            }
            o.insert("timestamp".into(), Value::from(s.timestamp));
            Value::Object(o)
        }
    }
}

/// `context.messages`: the transcript when the context carries one, else pi's
/// `normalizeContext` of `{systemPrompt, messages, tools}` (a leading system message
/// `{role, content, toolsAdded?, timestamp: 0}` when there is a prompt or a tool).
pub fn context_messages(ctx: &LlmContext) -> Vec<Value> {
    if let Some(t) = &ctx.transcript {
        return t.clone();
    }
    let mut out = Vec::with_capacity(ctx.messages.len() + 1);
    if !ctx.system_prompt.is_empty() || !ctx.tools.is_empty() {
        let mut system = Map::new();
        system.insert("role".into(), Value::from("system"));
        system.insert("content".into(), Value::from(ctx.system_prompt.as_str()));
        if !ctx.tools.is_empty() {
            let tools = ctx
                .tools
                .iter()
                .map(|t| {
                    let mut o = Map::new();
                    o.insert("name".into(), Value::from(t.name.as_str()));
                    o.insert("description".into(), Value::from(t.description.as_str()));
                    o.insert("parameters".into(), t.parameters.clone());
                    if t.strict_prefer {
                        o.insert(
                            "constrainedSampling".into(),
                            json!({"type": "json_schema", "strict": "prefer"}),
                        );
                    }
                    Value::Object(o)
                })
                .collect();
            system.insert("toolsAdded".into(), Value::Array(tools));
        }
        system.insert("timestamp".into(), Value::from(0));
        out.push(Value::Object(system));
    }
    out.extend(ctx.messages.iter().map(message_value));
    out
}

/// The request body `{model, context: {messages}, options}`. `options` holds what pi's agent
/// passes: `maxTokens` when capped, `reasoning` (the effective thinking level, none at `off`),
/// `cacheRetention` when not the default (`"none"` for summaries, `"long"` from
/// `PI_CACHE_RETENTION=long`) and `sessionId`.
pub fn build_body(model: &Model, ctx: &LlmContext, opts: &StreamOptions) -> Value {
    let mut options = Map::new();
    if let Some(n) = opts.max_tokens {
        options.insert("maxTokens".into(), json!(n));
    }
    let level = match opts.thinking_level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    };
    if level != ThinkingLevel::Off {
        options.insert("reasoning".into(), Value::from(level.as_str()));
    }
    match opts.cache_retention {
        CacheRetention::None => {
            options.insert("cacheRetention".into(), Value::from("none"));
        }
        CacheRetention::Long => {
            options.insert("cacheRetention".into(), Value::from("long"));
        }
        CacheRetention::Short => {}
    }
    if let Some(sid) = &opts.session_id {
        options.insert("sessionId".into(), Value::from(sid.as_str()));
    }
    json!({
        "model": model.id,
        "context": {"messages": context_messages(ctx)},
        "options": Value::Object(options),
    })
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The reason phrase `fetch` reports as `statusText` (the server's; these are the standard
/// ones).
pub(crate) fn status_text(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site is overloaded",
        _ => "",
    }
}

/// pi's `formatPiMessagesResponseError`: `<status> <statusText>: <error.message or the raw
/// body>[ (<error.code>)]`, the `error` member counting only when the body is a JSON object
/// whose `error` is an object.
pub fn http_error_message(status: u16, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| e.is_object());
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str);
    let message = field("message").unwrap_or(body);
    let code = field("code")
        .filter(|c| !c.is_empty())
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    format!("{status} {}: {message}{code}", status_text(status))
}

/// The message of a failed stream as pi's `createErrorEvent` builds it: nothing of what was
/// streamed survives (empty content and usage, stamped now).
fn reset_for_error(msg: &mut AssistantMessage) {
    msg.content.clear();
    msg.usage = Usage::empty();
    msg.response_id = None;
    msg.response_model = None;
    msg.raw_stop_reason = None;
    msg.timestamp = now_ms();
}

/// The pi-messages API as `drive` runs it. A missing key is an error before any request;
/// `Start` is reported only for the server's `start` event.
impl<'a> WireApi<'a> for PiMessagesStream {
    const ABORT_TEXTS: AbortTexts = ABORT_TEXTS;
    const START_ON_HEADERS: bool = false;
    const START_AT_END: bool = false;
    const DISPATCH_TRAILING: bool = true;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let key = match opts.api_key.as_deref() {
            Some(k) if !k.is_empty() => k,
            _ => {
                return Err(Failure::Error(format!(
                    "No API key provided for provider \"{}\"",
                    model.provider
                )))
            }
        };
        let body = build_body(model, ctx, opts);
        let request = json_request(
            endpoint(model),
            request_headers(opts, key),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, PiMessagesStream::new()))
    }

    fn http_error(_: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        http_error_message(status, body)
    }

    fn transport_error(e: &HttpError) -> String {
        fetch_failed(e, false)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        self.handle(model, &event.data, out).map_err(Failure::Error)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        let result = read.and_then(|()| {
            if self.terminated() {
                Ok(())
            } else {
                Err(Failure::Error(format!(
                    "{} stream ended without a terminal event",
                    out.msg.provider
                )))
            }
        });
        if result.is_err() {
            reset_for_error(&mut out.msg);
        }
        result
    }
}
