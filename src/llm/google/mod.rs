//! Google Gemini (`google-generative-ai`, providers.md §5): request building and stream-chunk
//! handling, run by `drive::drive`.
//!
//! The behaviour follows pi 1.6.0 (`google-generative-ai.js` / `google-shared.js` with the
//! `@google/genai` SDK underneath): `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`
//! with `x-goog-api-key`; each SSE chunk carries whole parts, so text and thought parts extend
//! the current block (a block closes when the part kind changes), and a `functionCall` part is
//! a complete tool call reported as start/delta/end at once.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::HttpRequest;
use super::model::{number_to_u64, Model};
use super::request::json_request;
use super::sse::SseEvent;
use super::stream::{base_max_tokens, AbortTexts, Failure, StreamedMessage};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::types::{
    AssistantEvent, ContentBlock, LlmContext, LlmMessage, StopReason, StreamOptions, ToolSpec,
    Usage,
};
use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::value::js_truthy;
use crate::resources::settings::ThinkingBudgets;
use crate::util::now_ms;

mod events;
mod request;

pub use self::events::GoogleStream;
pub use self::request::{build_body, endpoint, request_headers};

/// The stream ended without a `finishReason`.
pub const NO_FINISH_REASON: &str = "Google stream ended without a finish reason";

/// pi's abort texts for this API: `Request aborted` (pi's own check and retry wrapper) until
/// the response arrived, then the body reader's `AbortError`.
pub const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "Request aborted",
    before_response: "Request aborted",
    streaming: "This operation was aborted",
};

/// Generated tool-call ids are `<name>_<ms>_<counter>`, the counter shared by the process.
static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

// ---------------------------------------------------------------------------------------------
// Errors

/// The reason phrase the SDK puts in a non-JSON error body.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// The error message of a non-2xx response, as the `@google/genai` SDK builds it: the JSON body
/// re-serialized (`{"error":{"code":429,"message":…,"status":…}}`), or for a non-JSON body
/// `{"error":{"message":<text>,"code":<status>,"status":<reason>}}`.
pub fn http_error_message(status: u16, content_type: Option<&str>, body: &str) -> String {
    let json_body = content_type.is_some_and(|c| c.contains("application/json"));
    if json_body {
        if let Ok(v) = serde_json::from_str::<Value>(body) {
            return js_stringify(&v);
        }
        // The SDK's `response.json()` would throw a SyntaxError here.
        return format!("{status} {body}");
    }
    js_stringify(&json!({"error": {"message": body, "code": status,
        "status": reason_phrase(status)}}))
}

// ---------------------------------------------------------------------------------------------
// The request

/// The Gemini API as `drive` runs it. A missing key (and no `x-goog-api-key` header) is an
/// error before any request.
impl<'a> WireApi<'a> for GoogleStream {
    const ABORT_TEXTS: AbortTexts = ABORT_TEXTS;
    const DISPATCH_TRAILING: bool = false;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let has_key_header = opts
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-goog-api-key") && !v.trim().is_empty());
        if opts.api_key.as_deref().is_none_or(str::is_empty) && !has_key_header {
            return Err(Failure::Error(format!(
                "No API key for provider: {}",
                model.provider
            )));
        }
        let max_tokens = base_max_tokens(model, ctx, opts);
        let body = build_body(model, ctx, opts, max_tokens).map_err(Failure::Error)?;
        let request = json_request(
            endpoint(model),
            request_headers(opts),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, GoogleStream::new()))
    }

    fn http_error(_: &Model, status: u16, content_type: Option<&str>, body: &str) -> String {
        http_error_message(status, content_type, body)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        self.handle(&event.data, model, out)
            .map_err(Failure::Error)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
        GoogleStream::finish(self, out).map_err(Failure::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;
    use crate::llm::sse::SseParser;
    use crate::llm::stream::StreamUpdate;
    use crate::llm::types::AssistantMessage;

    pub(super) fn model(id: &str) -> Model {
        Model {
            id: id.into(),
            name: id.into(),
            api: "google-generative-ai".into(),
            provider: "mockg".into(),
            base_url: "http://127.0.0.1:9/v1beta".into(),
            reasoning: true,
            input: vec!["text".into(), "image".into()],
            cost: ModelCost {
                input: 0.3,
                output: 2.5,
                cache_read: 0.075,
                cache_write: 0.0,
                tiers: None,
            },
            context_window: 1_000_000,
            max_tokens: 16_384,
            ..Model::default()
        }
    }

    pub(super) fn gemini3() -> Model {
        let mut m = model("gemini-3-flash-preview");
        m.thinking_level_map = json!({"off": null, "minimal": "minimal", "low": "low",
            "medium": "medium", "high": "high", "xhigh": null, "max": null})
        .as_object()
        .cloned();
        m
    }

    pub(super) fn opts(level: ThinkingLevel) -> StreamOptions {
        StreamOptions {
            thinking_level: level,
            ..StreamOptions::default()
        }
    }

    /// Runs canned chunks (one SSE `data` each) through the chunk handler.
    pub(super) fn run_chunks(
        model: &Model,
        chunks: &[Value],
    ) -> (AssistantMessage, Vec<Value>, Result<(), String>) {
        let text: String = chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect();
        run_sse(model, &text)
    }

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
        let mut state = GoogleStream::new();
        let mut result = Ok(());
        for ev in SseParser::new(sse.as_bytes()) {
            if let Err(e) = state.handle(&ev.unwrap().data, model, &mut out) {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            result = state.finish(&mut out);
        }
        let msg = out.msg;
        (msg, events, result)
    }

    pub(super) fn parts(parts: Value) -> Value {
        json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
            "responseId": "resp_1"})
    }

    #[test]
    fn http_errors_match_pi() {
        assert_eq!(
            http_error_message(
                429,
                Some("application/json"),
                r#"{"error": {"code": 429, "message": "Rate limited", "status": "RESOURCE_EXHAUSTED"}}"#
            ),
            r#"{"error":{"code":429,"message":"Rate limited","status":"RESOURCE_EXHAUSTED"}}"#
        );
        assert_eq!(
            http_error_message(500, Some("text/plain"), "upstream exploded"),
            r#"{"error":{"message":"upstream exploded","code":500,"status":"Internal Server Error"}}"#
        );
    }
}
