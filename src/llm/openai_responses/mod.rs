//! The OpenAI Responses API (`openai-responses`, providers.md §4): request building and SSE
//! event handling, run by `drive::drive`.
//!
//! The behaviour follows pi 1.6.0 (`openai-responses.js` / `openai-responses-shared.js` with
//! the `openai` SDK underneath): the system prompt travels as the first input item (role
//! `developer` for reasoning models), assistant text is replayed as `message` items whose id
//! comes from the text block's `textSignature`, reasoning items are replayed verbatim from the
//! thinking block's `thinkingSignature`, and tool calls carry `<call_id>|<item id>` ids.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::HttpRequest;
use super::model::{number_to_u64, Model};
use super::request::{json_request, merge_sampling_params};
use super::sse::SseEvent;
use super::stream::{
    base_max_tokens, parse_error_body, sdk_status_message, AbortTexts, Failure, StreamedMessage,
};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::tool_args::ToolArgs;
use super::types::{
    AssistantEvent, AssistantMessage, CacheRetention, ContentBlock, LlmContext, LlmMessage,
    StopReason, StreamOptions, ToolSpec, Usage,
};
use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::utf16;
use crate::js::value::{js_template, js_truthy};

mod compat;
#[cfg(test)]
mod compat_tests;
mod events;
mod request;

use self::compat::*;
use self::request::*;

pub use self::compat::{configuration_update_effort, tool_support};
pub use self::events::ResponsesStream;
pub use self::request::{
    build_body, convert_input_with, convert_tools_with, endpoint, request_headers, short_hash,
    InputOptions,
};

/// pi's `OPENAI_RESPONSES_MIN_OUTPUT_TOKENS`: the API rejects smaller `max_output_tokens`.
const MIN_OUTPUT_TOKENS: u64 = 16;
/// Providers whose tool-call ids keep the `<call_id>|<item id>` form across models.
const TOOL_CALL_ID_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];
/// `prompt_cache_key` is cut to this many characters.
const PROMPT_CACHE_KEY_MAX_CHARS: usize = 64;

/// The stream ended without `response.completed` / `response.incomplete` / `response.failed`
/// (pi 1.6.0's text; providers.md §4 names it "ended without a stop reason", which pi only
/// reaches when a terminal event carried no status).
pub const NO_TERMINAL_EVENT: &str =
    "OpenAI Responses stream ended before a terminal response event";
/// A terminal event left the stop reason unset.
pub const NO_STOP_REASON: &str = "OpenAI Responses stream ended without a stop reason";

// ---------------------------------------------------------------------------------------------
// Errors

/// The message of an `APIError` the SDK raises from a streamed error payload (no HTTP status):
/// the error object's `message`, else its JSON.
fn stream_error_message(error: &Value) -> String {
    match error.get("message").filter(|m| js_truthy(m)) {
        Some(Value::String(s)) => s.clone(),
        Some(m) => js_stringify(m),
        None if js_truthy(error) => js_stringify(error),
        None => "(no status code or body)".into(),
    }
}

/// The error message of a non-2xx response, as pi composes it from the `openai` SDK error
/// (`formatProviderError(normalizeProviderError(e), "<Provider> API error")`):
/// `<Provider> API error (<status>): <error object JSON>` when the body has a non-empty `error`
/// object, else `<Provider> API error (<status>): <status> <message>`.
pub fn http_error_message(model: &Model, status: u16, body: &str) -> String {
    let provider = if model.provider == "openai" {
        "OpenAI"
    } else {
        model.provider.as_str()
    };
    http_error_with_prefix(&format!("{provider} API error"), status, body)
}

/// [`http_error_message`] with the prefix an adapter names (`<prefix> (<status>): …`).
pub fn http_error_with_prefix(prefix: &str, status: u16, body: &str) -> String {
    let parsed = parse_error_body(body);
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let raw = if parsed.is_some() { None } else { Some(body) };
    let message = sdk_status_message(status, error, raw);
    let error_body = error
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(js_stringify)
        .map(|b| truncate_body(b.trim()))
        .filter(|b| !b.is_empty());
    match error_body {
        Some(b) if !message.contains(&b) => format!("{prefix} ({status}): {b}"),
        _ => format!("{prefix} ({status}): {message}"),
    }
}

/// pi's `truncateErrorText` at 4000 UTF-16 units.
fn truncate_body(s: &str) -> String {
    const MAX: usize = 4000;
    let total = utf16::len(s);
    if total <= MAX {
        return s.to_owned();
    }
    let out = utf16::prefix(s, MAX);
    format!("{out}... [truncated {} chars]", total - MAX)
}

// ---------------------------------------------------------------------------------------------
// The request

/// pi's abort texts for this API: `Request aborted` from pi's retry wrapper until the
/// response arrived. While the body streams, the SDK ends the event loop quietly, so pi
/// reports the missing terminal event, or `Request was aborted` once it had been seen.
pub const fn abort_texts(saw_terminal: bool) -> AbortTexts {
    AbortTexts {
        before_request: "Request aborted",
        before_response: "Request aborted",
        streaming: if saw_terminal {
            "Request was aborted"
        } else {
            NO_TERMINAL_EVENT
        },
    }
}

/// The Responses API as `drive` runs it. A missing key (and no `Authorization` header) is an
/// error before any request; `[DONE]` stops the reading, as the SDK does.
impl<'a> WireApi<'a> for ResponsesStream {
    const ABORT_TEXTS: AbortTexts = abort_texts(false);
    const DISPATCH_TRAILING: bool = false;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        if opts.api_key.as_deref().is_none_or(str::is_empty) && !has_auth_header(opts) {
            return Err(Failure::Error(format!(
                "No API key for provider: {}",
                model.provider
            )));
        }
        let max_tokens = base_max_tokens(model, ctx, opts);
        let body = build_body(model, ctx, opts, max_tokens);
        let request = json_request(
            endpoint(model),
            request_headers(model, opts),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, ResponsesStream::new()))
    }

    fn http_error(model: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        http_error_message(model, status, body)
    }

    fn provider_thinking_level(model: &Model, opts: &StreamOptions) -> Option<String> {
        configuration_update_effort(model, opts)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        if event.data == "[DONE]" {
            return Ok(Flow::Stop);
        }
        self.handle(event.event.as_deref(), &event.data, model, out)
            .map_err(Failure::Error)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
        ResponsesStream::finish(self, &out.msg).map_err(Failure::Error)
    }

    fn abort_texts(&self) -> AbortTexts {
        abort_texts(self.saw_terminal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;
    use crate::llm::sse::SseParser;
    use crate::llm::stream::StreamUpdate;
    use crate::llm::types::LlmMessage;

    pub(super) fn model() -> Model {
        Model {
            id: "mock-gpt".into(),
            name: "mock-gpt".into(),
            api: "openai-responses".into(),
            provider: "mockoai".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            reasoning: true,
            input: vec!["text".into()],
            cost: ModelCost {
                input: 2.0,
                output: 8.0,
                cache_read: 0.5,
                cache_write: 0.0,
                tiers: None,
            },
            context_window: 128_000,
            max_tokens: 16_384,
            ..Model::default()
        }
    }

    pub(super) fn user(text: &str) -> LlmMessage {
        LlmMessage::User {
            content: vec![ContentBlock::text(text)],
            timestamp: 1,
            as_string: false,
        }
    }

    pub(super) fn ctx(messages: Vec<LlmMessage>) -> LlmContext {
        LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: "S.".into(),
            messages,
            tools: Vec::new(),
        }
    }

    /// Runs canned SSE text through the event handler: the final message, the reported events
    /// (wire form) and the stream's verdict.
    pub(super) fn run_sse(
        model: &Model,
        sse: &str,
    ) -> (AssistantMessage, Vec<Value>, Result<(), String>) {
        let mut events = Vec::new();
        let mut cb = |u: StreamUpdate<'_>| match u {
            StreamUpdate::Start(_) => events.push(json!({"type": "start"})),
            StreamUpdate::Event(_, e) => events.push(e.to_wire()),
        };
        let mut out = StreamedMessage::new(model, &mut cb);
        out.start();
        let mut state = ResponsesStream::new();
        let mut result = Ok(());
        for ev in SseParser::new(sse.as_bytes()) {
            let ev = ev.unwrap();
            if let Err(e) = state.handle(ev.event.as_deref(), &ev.data, model, &mut out) {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            result = state.finish(&out.msg);
        }
        let msg = out.msg;
        (msg, events, result)
    }

    pub(super) fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
            .collect()
    }

    #[test]
    fn http_error_messages_match_pi() {
        let m = model();
        assert_eq!(
            http_error_message(
                &m,
                429,
                r#"{"error": {"message": "Rate limited", "type": "rate_limit_error", "param": null, "code": null}}"#
            ),
            r#"mockoai API error (429): {"message":"Rate limited","type":"rate_limit_error","param":null,"code":null}"#
        );
        assert_eq!(
            http_error_message(&m, 500, "upstream exploded"),
            "mockoai API error (500): 500 upstream exploded"
        );
        assert_eq!(
            http_error_message(&m, 502, ""),
            "mockoai API error (502): 502 status code (no body)"
        );
        assert_eq!(
            http_error_message(&m, 400, r#"{"detail":"x"}"#),
            "mockoai API error (400): 400 status code (no body)"
        );
        let mut openai = model();
        openai.provider = "openai".into();
        assert_eq!(
            http_error_message(&openai, 401, r#"{"error":{"message":"bad key"}}"#),
            r#"OpenAI API error (401): {"message":"bad key"}"#
        );
    }
}
