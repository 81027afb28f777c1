//! The Anthropic Messages API (`anthropic-messages`, providers.md §2): request building (body,
//! headers, betas, cache markers, thinking) and the SSE stream.

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::HttpRequest;
use super::model::Model;
use super::request::json_request;
use super::sse::SseEvent;
use super::stream::{
    base_max_tokens, clamp_max_tokens_to_context, clamp_thinking_budget_to_answer_room,
    parse_error_body, sdk_status_message, thinking_budget_for_level, AbortTexts, Failure,
    StreamedMessage,
};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::tool_args::ToolArgs;
use super::types::{
    AssistantEvent, AssistantMessage, CacheRetention, ContentBlock, LlmContext, LlmMessage,
    StopReason, StreamOptions, ToolSpec,
};
use crate::cancel::CancelToken;

mod compat;
mod effort;
mod events;
pub mod federation;
mod messages;
mod request;
mod strict_limits;
mod threads;

use self::compat::*;
use self::effort::*;
use self::messages::*;
use self::request::*;
use self::strict_limits::*;
use self::threads::*;

pub use self::events::StreamState;
pub use self::request::build_request;

/// Forgets a session's message thread and strict-tool limits (pi's session resource cleanup).
pub fn cleanup_session_resources(session_id: &str) {
    threads::forget_session(session_id);
    strict_limits::forget_session(session_id);
}

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const ANTHROPIC_VERSION: &str = "2023-06-01";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const SERVER_SIDE_FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";
const MID_CONVERSATION_OUTPUT_CONFIG_BETA: &str = "mid-conversation-output-config-2026-07-01";
const THINKING_BINDING_CONTROLS_BETA: &str = "thinking-binding-controls-2026-08-01";
const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";
const MESSAGE_THREADS_BETA: &str = "message-threads-2026-08-12";
/// The top-level effort of a model with mid-conversation effort: fixed (it is part of the
/// cached prompt) and low, since organizations can cap effort and reject any level above it.
const MANAGED_TOP_LEVEL_EFFORT: &str = "low";
const CLAUDE_CODE_VERSION: &str = "2.1.322";
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
/// Claude Code's canonical tool names (OAuth requests use them).
const CLAUDE_CODE_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];
const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// How an aborted Anthropic request is reported (the SDK's and fetch's texts).
const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "This operation was aborted",
    before_response: "Request aborted",
    streaming: "This operation was aborted",
};

impl StreamState<'_> {
    /// Turns a built request into the HTTP request, as a thread request when the session
    /// uses message threads.
    fn send(
        &mut self,
        mut req: BuiltRequest,
        opts: &StreamOptions,
    ) -> Result<HttpRequest, Failure> {
        if let Some((_, token)) = &self.federated {
            federation::authorize(&mut req.headers, token);
        }
        self.oauth = req.oauth;
        self.may_downgrade_strict =
            req.has_preferred_strict_tools && !req.disabled_preferred_strict;
        let prepared = req
            .thread_session
            .as_deref()
            .and_then(|sid| threads::prepare(self.model, sid, &req.body, &req.betas));
        let (body, thread) = match prepared {
            Some((thread, body)) => (body, Some(thread)),
            None => (req.body, None),
        };
        self.thread = thread;
        self.thread_retry_available = true;
        self.target = Some((req.url.clone(), req.headers.clone()));
        json_request(req.url, req.headers, &body, opts.idle_timeout)
    }

    /// pi's `sendThreadRequest`: a rejection about the thread is sent again once in full, as
    /// a new thread or without `thread` (threads then go off for the session), with an
    /// `anthropic_thread_fallback` diagnostic.
    fn thread_fallback(
        &mut self,
        opts: &StreamOptions,
        status: u16,
        body: &str,
        message: &str,
        out: &mut StreamedMessage<'_>,
    ) -> Option<Result<HttpRequest, Failure>> {
        if !self.thread_retry_available {
            return None;
        }
        let thread = self.thread.clone()?;
        let fallback = threads::fallback_for(status, body, message)?;
        self.thread_retry_available = false;
        let (url, headers) = self.target.clone()?;
        let (reason, next_body) = match fallback {
            ThreadFallback::NewThread { reason } => {
                let next = threads::create_body(&thread.params);
                self.thread = Some(thread);
                (reason, next)
            }
            ThreadFallback::NoThread { reason } => {
                self.pending_thread_off = Some(thread.session_id.clone());
                self.thread = None;
                (reason, thread.params)
            }
        };
        out.msg.diagnostics.push(json!({
            "type": "anthropic_thread_fallback",
            "timestamp": crate::util::now_ms(),
            "error": {"message": message},
            "details": {"reason": reason}
        }));
        Some(json_request(url, headers, &next_body, opts.idle_timeout))
    }

    /// The request without `thread` was accepted: threads go off for the session.
    fn threads_off_after_success(&mut self) {
        if let Some(sid) = self.pending_thread_off.take() {
            threads::set_thread_state(&sid, ThreadState::Off);
        }
    }
}

/// The Anthropic Messages API as `drive` runs it. `Start` waits for `message_start` (or any
/// other message event) rather than the response headers.
impl<'a> WireApi<'a> for StreamState<'a> {
    const ABORT_TEXTS: AbortTexts = ABORT_TEXTS;
    const START_ON_HEADERS: bool = false;
    const DISPATCH_TRAILING: bool = true;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        cancel: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let req = build_request(model, ctx, opts).map_err(Failure::Error)?;
        let federated = match &req.federation {
            Some(fed) => Some((fed.clone(), federation::access_token(fed, cancel)?)),
            None => None,
        };
        let mut state = StreamState::new(model, req.oauth, &ctx.tools);
        state.federated = federated;
        state.provider_thinking_level = req.provider_thinking_level.clone();
        state.ctx = Some(ctx);
        let request = state.send(req, opts)?;
        Ok((request, state))
    }

    /// pi: a 400 `invalid_request_error` saying the strict tools exceed Claude's limits is
    /// sent once more with the preferred-strict tools non-strict; the session is remembered and
    /// the reply records an `anthropic_strict_tools_fallback` diagnostic.
    fn resend(
        &mut self,
        opts: &StreamOptions,
        status: u16,
        body: &str,
        message: &str,
        out: &mut StreamedMessage<'_>,
    ) -> Option<Result<HttpRequest, Failure>> {
        // The SDK's `shouldRetry`: a 401 to a federated request drops the token.
        if let Some((fed, _)) = self.federated.as_ref().filter(|_| status == 401) {
            federation::invalidate(fed);
        }
        if let Some(request) = self.thread_fallback(opts, status, body, message, out) {
            return Some(request);
        }
        let error_type = parse_error_body(body)
            .and_then(|b| b.get("error")?.get("type")?.as_str().map(str::to_owned));
        if !self.may_downgrade_strict
            || status != 400
            || error_type.as_deref() != Some("invalid_request_error")
            || !is_strict_tool_limit_error_message(message)
        {
            return None;
        }
        let ctx = self.ctx?;
        self.may_downgrade_strict = false;
        mark_strict_tool_limits_exceeded(opts.session_id.as_deref());
        out.msg.diagnostics.push(json!({
            "type": "anthropic_strict_tools_fallback",
            "timestamp": crate::util::now_ms(),
            "error": {"message": message},
            "details": {"reason": "strict_tool_limits_exceeded"}
        }));
        Some(
            build_request_with(self.model, ctx, opts, true)
                .map_err(Failure::Error)
                .and_then(|req| self.send(req, opts)),
        )
    }

    fn prepare(&self, out: &mut StreamedMessage<'_>) {
        if let Some(level) = &self.provider_thinking_level {
            out.msg.provider_thinking_level = Some(level.clone());
        }
    }

    fn http_error(_: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        sdk_status_message(status, parse_error_body(body).as_ref(), Some(body))
    }

    fn on_event(
        &mut self,
        _: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        self.threads_off_after_success();
        self.handle(event.event.as_deref(), &event.data, out)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
        self.threads_off_after_success();
        if self.saw_start && !self.saw_stop {
            return Err(Failure::Error(
                "Anthropic stream ended before message_stop".into(),
            ));
        }
        match out.msg.stop_reason {
            StopReason::Pending => Err(Failure::Error(
                "Anthropic stream ended without a stop reason".into(),
            )),
            StopReason::Error | StopReason::Aborted => Err(Failure::Error(
                out.msg
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "An unknown error occurred".into()),
            )),
            _ => {
                if let Some(thread) = &self.thread {
                    threads::record_reply(self.model, thread, &out.msg, self.oauth);
                }
                self.record_input_transformations(&mut out.msg);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;

    pub(super) fn mock_sonnet() -> Model {
        Model {
            id: "mock-sonnet".into(),
            name: "Mock Sonnet".into(),
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            base_url: "http://127.0.0.1:18080".into(),
            reasoning: true,
            input: vec!["text".into(), "image".into()],
            cost: ModelCost {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                tiers: None,
            },
            context_window: 200_000,
            max_tokens: 8192,
            ..Model::default()
        }
    }

    pub(super) fn opts() -> StreamOptions {
        StreamOptions {
            api_key: Some("test-key".into()),
            ..StreamOptions::default()
        }
    }
}
