//! The entry point the agent loop and compaction call: [`stream_assistant`] picks the wire API
//! for `model.api` (one line per API; each is driven by `drive::drive`) and stamps the final
//! message with its duration and the thinking level used.

use std::time::Instant;

use super::drive::{drive, effective_thinking_level};
use super::model::Model;
use super::stream::{AbortTexts, Failure, StreamUpdate, StreamedMessage};
use super::types::{AssistantMessage, LlmContext, StreamOptions};
use super::{anthropic, google, openai_completions, openai_responses};
use crate::cancel::CancelToken;

/// Streams one assistant response from `model`. Never panics; the returned message is final
/// (`durationMs` and `thinkingLevel` set). `Start` is reported only when the HTTP response
/// started; a request that fails before that (HTTP error status, connection failure, abort)
/// reports nothing and returns the error message directly.
pub fn stream_assistant(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(StreamUpdate<'_>),
) -> AssistantMessage {
    let started = Instant::now();
    let mut msg = match model.api.as_str() {
        "anthropic-messages" => drive::<anthropic::StreamState>(model, ctx, opts, cancel, on_event),
        "openai-completions" => {
            drive::<openai_completions::StreamState>(model, ctx, opts, cancel, on_event)
        }
        "openai-responses" => {
            drive::<openai_responses::ResponsesStream>(model, ctx, opts, cancel, on_event)
        }
        "google-generative-ai" => drive::<google::GoogleStream>(model, ctx, opts, cancel, on_event),
        other => {
            let out = StreamedMessage::new(model, on_event);
            out.finish(
                Err(Failure::Error(format!("Unsupported API: {other}"))),
                cancel,
                &AbortTexts::DEFAULT,
            )
        }
    };
    msg.duration_ms = Some(started.elapsed().as_millis() as u64);
    msg.thinking_level = Some(effective_thinking_level(model, opts.thinking_level));
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::StopReason;
    use crate::llm::ThinkingLevel;

    #[test]
    fn unsupported_api_is_an_error_without_start() {
        let m = Model {
            id: "x".into(),
            api: "bedrock-converse-stream".into(),
            provider: "p".into(),
            ..Model::default()
        };
        let mut events = 0;
        let msg = stream_assistant(
            &m,
            &LlmContext::default(),
            &StreamOptions::default(),
            &CancelToken::new(),
            &mut |_| events += 1,
        );
        assert_eq!(events, 0);
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.error_message.as_deref(),
            Some("Unsupported API: bedrock-converse-stream")
        );
        assert!(msg.duration_ms.is_some());
        assert_eq!(msg.thinking_level, Some(ThinkingLevel::Off));
    }
}
