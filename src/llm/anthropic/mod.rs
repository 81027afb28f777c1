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

mod compat;
mod events;
mod messages;
mod request;
mod strict_limits;

use self::compat::*;
use self::messages::*;
use self::request::*;
use self::strict_limits::*;

pub use self::events::StreamState;
pub use self::request::build_request;

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const ANTHROPIC_VERSION: &str = "2023-06-01";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const SERVER_SIDE_FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";
const MID_CONVERSATION_OUTPUT_CONFIG_BETA: &str = "mid-conversation-output-config-2026-07-01";
const THINKING_BINDING_CONTROLS_BETA: &str = "thinking-binding-controls-2026-08-01";
const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";
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
    ) -> Result<(HttpRequest, Self), Failure> {
        let req = build_request(model, ctx, opts).map_err(Failure::Error)?;
        let request = json_request(req.url, req.headers, &req.body, opts.idle_timeout)?;
        let mut state = StreamState::new(model, req.oauth, &ctx.tools);
        state.provider_thinking_level = req.provider_thinking_level;
        state.ctx = Some(ctx);
        state.may_downgrade_strict =
            req.has_preferred_strict_tools && !req.disabled_preferred_strict;
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
                .and_then(|req| {
                    self.oauth = req.oauth;
                    json_request(req.url, req.headers, &req.body, opts.idle_timeout)
                }),
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
        self.handle(event.event.as_deref(), &event.data, out)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
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
            _ => Ok(()),
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
