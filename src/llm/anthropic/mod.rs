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

mod events;
mod messages;
mod request;

use self::messages::*;
use self::request::*;

pub use self::events::StreamState;
pub use self::request::build_request;

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const ANTHROPIC_VERSION: &str = "2023-06-01";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
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

/// Compat switches of `model.compat` that this adapter reads (providers.md §6.4).
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicCompat {
    pub supports_eager_tool_input_streaming: bool,
    pub supports_long_cache_retention: bool,
    pub supports_cache_control_on_tools: bool,
    pub allow_empty_signature: bool,
    pub send_session_affinity_headers: bool,
    pub openrouter_affinity: bool,
    pub force_adaptive_thinking: bool,
}

impl AnthropicCompat {
    pub fn of(model: &Model) -> AnthropicCompat {
        let is_openrouter =
            model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        let b = |k: &str, d: bool| model.compat_bool(k).unwrap_or(d);
        let format = model
            .compat
            .as_ref()
            .and_then(|c| c.get("sessionAffinityFormat"))
            .and_then(Value::as_str);
        AnthropicCompat {
            supports_eager_tool_input_streaming: b("supportsEagerToolInputStreaming", true),
            supports_long_cache_retention: b("supportsLongCacheRetention", true),
            supports_cache_control_on_tools: b("supportsCacheControlOnTools", true),
            allow_empty_signature: b("allowEmptySignature", false),
            send_session_affinity_headers: b("sendSessionAffinityHeaders", is_openrouter),
            openrouter_affinity: match format {
                Some(f) => f == "openrouter",
                None => is_openrouter,
            },
            force_adaptive_thinking: b("forceAdaptiveThinking", false),
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
    ) -> Result<(HttpRequest, Self), Failure> {
        let req = build_request(model, ctx, opts).map_err(Failure::Error)?;
        let request = json_request(req.url, req.headers, &req.body, opts.idle_timeout)?;
        Ok((request, StreamState::new(model, req.oauth, &ctx.tools)))
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
