//! The one loop every wire API runs. (`llm::wire::stream_assistant`, the entry point the agent
//! loop calls, picks the adapter for `model.api`, one line per wire API.)
//!
//! [`drive`] runs one
//! request/response exchange for any [`WireApi`]: the abort check before the request, the
//! request the adapter builds, the POST with the cancel token, the adapter's wording of an
//! HTTP error status, the body read as server-sent events and fed to the adapter's event state
//! machine, and the final message with the adapter's abort texts. A wire API is then a request
//! builder, an event state machine and a line in `wire::stream_assistant`.

use std::io::BufReader;

use super::http::{HttpError, HttpRequest, HttpResponse};
use super::model::Model;
use super::request::{post_streaming, read_failure};
use super::sse::{SseEvent, SseParser};
use super::stream::{AbortTexts, Failure, StreamUpdate, StreamedMessage};
use super::thinking::{clamp_level, ThinkingLevel};
use super::types::{AssistantMessage, LlmContext, StreamOptions};
use crate::cancel::CancelToken;

/// The read buffer of a response body.
const BODY_BUFFER: usize = 16 * 1024;

/// The thinking level a request to `model` actually uses (`opts.thinking_level` clamped onto
/// the model's supported levels).
pub fn effective_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    clamp_level(model, level)
}

// ---------------------------------------------------------------------------------------------
// One exchange

/// One wire API, implemented by its per-response event state machine (which may borrow the
/// model and context for `'a`): how the request is built, how an HTTP error status is worded,
/// how each server-sent event is applied to the streamed message and what the end of the body
/// means. [`drive`] does the rest.
pub(crate) trait WireApi<'a>: Sized {
    /// The `errorMessage` texts of an aborted response ([`WireApi::abort_texts`] may refine
    /// them once the state exists).
    const ABORT_TEXTS: AbortTexts;
    /// Whether `Start` is reported as soon as the response headers arrived. `false` leaves it
    /// to the state machine (or to the end of the body).
    const START_ON_HEADERS: bool = true;
    /// Whether `Start` is reported at the end of the body (or a read failure) when nothing did
    /// yet. `false`: only the state machine reports it (pi-messages: a response without a
    /// `start` event has its final message as its start).
    const START_AT_END: bool = true;
    /// Whether a final event without its blank line is dispatched at the end of the body (pi's
    /// own SSE parser) rather than dropped (the specification, which the vendor SDKs follow).
    const DISPATCH_TRAILING: bool;

    /// The request to send and the state that will read its response. `Err` ends the stream
    /// before anything is sent. `cancel` interrupts what building it may fetch over the
    /// network (a credential exchange: Vertex's ADC token, Anthropic's federated token).
    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        cancel: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure>;

    /// The error message of a non-success status, from the response's content type and body.
    fn http_error(model: &Model, status: u16, content_type: Option<&str>, body: &str) -> String;

    /// The error message of a request that got no response (the SDKs' wording by default; APIs
    /// pi calls with plain `fetch` say `fetch failed`).
    fn transport_error(e: &HttpError) -> String {
        e.to_string()
    }

    /// Applies one event to the streamed message (reporting what changed). `Err` ends the
    /// stream; [`Flow::Stop`] ends the reading as the end of the body would.
    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure>;

    /// After the reading ended (`read` says how: `Ok` at the end of the body or a
    /// [`Flow::Stop`], else the failure or abort that cut it): the stream's verdict.
    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure>;

    /// Fields of the message known once the request is built, before it is sent (they stay
    /// on an error reply too).
    fn prepare(&self, _out: &mut StreamedMessage<'_>) {}

    /// After an HTTP error status (`message` is [`WireApi::http_error`]'s text): a request to
    /// send instead, built again by the adapter (pi's Anthropic strict-tools downgrade), or
    /// `None` to fail with `message`.
    fn resend(
        &mut self,
        _opts: &StreamOptions,
        _status: u16,
        _body: &str,
        _message: &str,
        _out: &mut StreamedMessage<'_>,
    ) -> Option<Result<HttpRequest, Failure>> {
        None
    }

    /// The message's `providerThinkingLevel`, set before anything is sent (the Responses API's
    /// mid-conversation effort).
    fn provider_thinking_level(_model: &Model, _opts: &StreamOptions) -> Option<String> {
        None
    }

    /// The abort texts once the state exists (they may depend on what was seen).
    fn abort_texts(&self) -> AbortTexts {
        Self::ABORT_TEXTS
    }
}

/// Whether the reading goes on after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// The body is done (a `[DONE]` sentinel); what follows is not read.
    Stop,
}

/// Streams one response from `model` through the wire API `W` (durationMs and thinkingLevel
/// are left to [`stream_assistant`]). Never panics: each failure becomes the returned message
/// with `stopReason:"error"` (or `"aborted"` once the cancel token fired), keeping the content
/// streamed so far.
pub(crate) fn drive<'a, W: WireApi<'a>>(
    model: &'a Model,
    ctx: &'a LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(StreamUpdate<'_>),
) -> AssistantMessage {
    let mut out = StreamedMessage::new(model, on_event);
    out.msg.provider_thinking_level = W::provider_thinking_level(model, opts);
    out.msg.provider_thinking_level_early = out.msg.provider_thinking_level.is_some();
    let mut state: Option<W> = None;
    let result = exchange(model, ctx, opts, cancel, &mut out, &mut state);
    let texts = state.as_ref().map_or(W::ABORT_TEXTS, W::abort_texts);
    out.finish(result, cancel, &texts)
}

/// Builds and sends the request, then reads the response into `out`; `state` is the adapter's
/// once the request was built.
fn exchange<'a, W: WireApi<'a>>(
    model: &'a Model,
    ctx: &'a LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    out: &mut StreamedMessage<'_>,
    state: &mut Option<W>,
) -> Result<(), Failure> {
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    let (request, built) = match W::request(model, ctx, opts, cancel) {
        Ok(built) => built,
        // Aborted while fetching a credential (a token exchange): the request had begun.
        Err(Failure::Aborted) => {
            out.mark_sent();
            return Err(Failure::Aborted);
        }
        Err(e) => return Err(e),
    };
    let state = state.insert(built);
    state.prepare(out);
    let mut request = request;
    let response = loop {
        let mut rejected: Option<(u16, String)> = None;
        let sent = post_streaming(
            request,
            cancel,
            out,
            |status, content_type, body| {
                rejected = Some((status, body.to_owned()));
                W::http_error(model, status, content_type, body)
            },
            W::transport_error,
        );
        match (sent, rejected) {
            (Err(Failure::Error(message)), Some((status, body))) => {
                match state.resend(opts, status, &body, &message, out) {
                    Some(next) => request = next?,
                    None => return Err(Failure::Error(message)),
                }
            }
            (sent, _) => break sent?,
        }
    };
    if W::START_ON_HEADERS {
        out.start();
    }
    let read = read_events(state, model, response, cancel, out);
    state.end(read, out)
}

/// Feeds the body's events to `state` until the body ends, a [`Flow::Stop`], a failure or the
/// cancel token. Reports `Start` at the end of the body or a read failure if nothing did yet.
/// The token is checked before each event is looked at, so an abort wins over a read failure.
fn read_events<'a, W: WireApi<'a>>(
    state: &mut W,
    model: &Model,
    response: HttpResponse,
    cancel: &CancelToken,
    out: &mut StreamedMessage<'_>,
) -> Result<(), Failure> {
    let body = BufReader::with_capacity(BODY_BUFFER, response);
    for item in SseParser::new(body).dispatch_trailing(W::DISPATCH_TRAILING) {
        if cancel.is_cancelled() {
            return Err(Failure::Aborted);
        }
        let event = match item {
            Ok(event) => event,
            Err(e) => {
                if W::START_AT_END {
                    out.start();
                }
                return Err(read_failure(&e, cancel));
            }
        };
        if state.on_event(model, &event, out)? == Flow::Stop {
            break;
        }
    }
    if W::START_AT_END {
        out.start();
    }
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    Ok(())
}
