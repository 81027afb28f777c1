//! Mistral (`mistral-conversations`, providers-catalog.md §4.4): despite the name, pi calls
//! Mistral's chat completions endpoint with its own conventions (`mistral-conversations.js`,
//! plain `fetch`, the payload in the Mistral SDK's camelCase renamed to the wire's snake_case).
//! Request building is in `request`, the SSE state machine in `events`; `drive::drive` runs
//! them.

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::{fetch_failed, HttpError, HttpRequest};
use super::model::Model;
use super::openai_responses::short_hash;
use super::request::json_request;
use super::sse::SseEvent;
use super::stream::{base_max_tokens, AbortTexts, Failure, StreamedMessage};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::tool_args::ToolArgs;
use super::types::{
    AssistantEvent, CacheRetention, ContentBlock, LlmContext, LlmMessage, StopReason,
    StreamOptions, ToolSpec, Usage,
};
use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::utf16;

mod events;
mod request;

pub use self::events::MistralStream;
pub use self::request::{build_body, endpoint, request_headers};

/// The largest error body quoted in an error message (pi's `MAX_MISTRAL_ERROR_BODY_CHARS`).
const MAX_ERROR_BODY_CHARS: usize = 4000;

/// The stream ended without a finish reason.
pub const NO_FINISH_REASON: &str = "Mistral stream ended without a finish reason";

/// pi's abort texts for this API: `fetch` and the body reader reject with the signal's
/// reason (a `DOMException`), whose message is the same wherever the abort lands.
const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "This operation was aborted",
    before_response: "This operation was aborted",
    streaming: "This operation was aborted",
};

/// The error message of a non-2xx response (pi's `formatMistralError` of a
/// `MistralHttpError`): `Mistral API error (<status>): <body, trimmed, at most 4000 UTF-16
/// units>`, or the status text when the body is blank.
pub fn http_error_message(status: u16, body: &str) -> String {
    let body = body.trim();
    if !body.is_empty() {
        return format!("Mistral API error ({status}): {}", truncate(body));
    }
    let text = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("Request failed with status {status}"));
    format!("Mistral API error ({status}): {text}")
}

/// pi's `truncateErrorText`.
fn truncate(s: &str) -> String {
    let total = utf16::len(s);
    if total <= MAX_ERROR_BODY_CHARS {
        return s.to_owned();
    }
    format!(
        "{}... [truncated {} chars]",
        utf16::prefix(s, MAX_ERROR_BODY_CHARS),
        total - MAX_ERROR_BODY_CHARS
    )
}

impl<'a> WireApi<'a> for MistralStream {
    const ABORT_TEXTS: AbortTexts = ABORT_TEXTS;
    /// pi's own reader parses what is left in its buffer at the end of the body.
    const DISPATCH_TRAILING: bool = true;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        if opts.api_key.as_deref().is_none_or(str::is_empty) {
            return Err(Failure::Error(format!(
                "No API key for provider: {}",
                model.provider
            )));
        }
        let max_tokens = base_max_tokens(model, ctx, opts);
        let body = build_body(model, ctx, opts, max_tokens);
        let request = json_request(
            endpoint(model),
            request_headers(opts),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, MistralStream::new()))
    }

    fn http_error(_: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        http_error_message(status, body)
    }

    /// pi calls Mistral with plain `fetch` and reports its error's message (`formatMistralError`):
    /// `fetch failed`, without undici's cause.
    fn transport_error(e: &HttpError) -> String {
        fetch_failed(e, false)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        if data == "[DONE]" {
            return Ok(Flow::Stop);
        }
        let chunk = events::parse_event(data).map_err(Failure::Error)?;
        self.handle_chunk(&chunk, model, out)
            .map_err(Failure::Error)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        // pi closes the open blocks only when the body was read to its end.
        read?;
        self.finish_blocks(out);
        match out.msg.stop_reason {
            StopReason::Pending => Err(Failure::Error(NO_FINISH_REASON.into())),
            StopReason::Error | StopReason::Aborted => Err(Failure::Error(
                out.msg
                    .error_message
                    .clone()
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "An unknown error occurred".into()),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
