//! The entry point the agent loop and compaction call: [`stream_assistant`] picks the wire API
//! for `model.api` (one line per API; each is driven by `drive::drive`) and stamps the final
//! message with its duration and the thinking level used. Credentials pi-rpc sent are redacted
//! from the error text before anything stores or prints it.

use std::time::Instant;

use super::drive::{drive, effective_thinking_level};
use super::model::Model;
use super::stream::{AbortTexts, Failure, StreamUpdate, StreamedMessage};
use super::types::{AssistantMessage, LlmContext, StreamOptions};
use super::{
    anthropic, azure_responses, bedrock, google, mistral, openai_codex, openai_completions,
    openai_responses, pi_messages, specials, vertex,
};
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
    let opts = &*specials::apply(model, ctx, opts);
    let mut msg = match model.api.as_str() {
        "anthropic-messages" => drive::<anthropic::StreamState>(model, ctx, opts, cancel, on_event),
        "openai-completions" if model.provider == "azure" => {
            drive::<azure_responses::AzureChat>(model, ctx, opts, cancel, on_event)
        }
        "openai-completions" => {
            drive::<openai_completions::StreamState>(model, ctx, opts, cancel, on_event)
        }
        "openai-responses" => {
            drive::<openai_responses::ResponsesStream>(model, ctx, opts, cancel, on_event)
        }
        "google-generative-ai" => drive::<google::GoogleStream>(model, ctx, opts, cancel, on_event),
        "mistral-conversations" => {
            drive::<mistral::MistralStream>(model, ctx, opts, cancel, on_event)
        }
        "azure-openai-responses" => {
            drive::<azure_responses::AzureStream>(model, ctx, opts, cancel, on_event)
        }
        "openai-codex-responses" => {
            drive::<openai_codex::CodexStream>(model, ctx, opts, cancel, on_event)
        }
        "pi-messages" => drive::<pi_messages::PiMessagesStream>(model, ctx, opts, cancel, on_event),
        "bedrock-converse-stream" => bedrock::stream(model, ctx, opts, cancel, on_event),
        "google-vertex" => drive::<vertex::VertexStream>(model, ctx, opts, cancel, on_event),
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
    if let Some(text) = msg.error_message.as_mut() {
        redact_credentials(text, opts);
    }
    msg
}

/// The provider settings (environment variables) a request to `model` reads at request time
/// (Azure's endpoint, API version and deployment map, also for azure's Chat Completions model;
/// Anthropic's workload identity federation; Vertex's project, location and credentials file);
/// the registry resolves them into `StreamOptions::env`.
pub fn request_settings(model: &Model) -> &'static [&'static str] {
    if model.api == "azure-openai-responses" || model.provider == "azure" {
        azure_responses::SETTINGS
    } else if model.provider == "anthropic" {
        super::anthropic::federation::SETTINGS
    } else if model.api == "google-vertex" {
        super::vertex::SETTINGS
    } else {
        &[]
    }
}

/// Whether the wire API reads the whole stored `env` of the provider's auth.json entry as
/// pi's `options.env` (Bedrock: region, profile, access keys, its own switches), looked up
/// before the process environment.
pub fn takes_stored_env(model: &Model) -> bool {
    model.api == "bedrock-converse-stream"
}

/// What replaces a credential in an error text.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not searched for: they would match ordinary words.
const MIN_SECRET_LEN: usize = 8;

/// The credentials `opts` sends: the API key, and the values of headers whose names say they
/// carry one (`Authorization: Bearer <token>` gives the whole value and the token).
fn credentials(opts: &StreamOptions) -> Vec<&str> {
    let mut out: Vec<&str> = opts.api_key.iter().map(String::as_str).collect();
    for (name, value) in &opts.headers {
        let name = name.to_ascii_lowercase();
        let secret = ["auth", "key", "token", "secret", "cookie"]
            .iter()
            .any(|w| name.contains(w));
        if secret {
            out.push(value);
            if let Some((_, token)) = value.split_once(' ') {
                out.push(token.trim());
            }
        }
    }
    out.retain(|s| s.len() >= MIN_SECRET_LEN);
    // Longest first, so a token inside a longer value is not left half-replaced.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

/// Replaces every credential `opts` sent that appears in `text` (a server that echoes the
/// request headers in a 401 body would otherwise put the key into `errorMessage`, the session
/// file and the HTML export). pi keeps the text as the server sent it; this is a deliberate
/// difference.
fn redact_credentials(text: &mut String, opts: &StreamOptions) {
    for secret in credentials(opts) {
        if text.contains(secret) {
            *text = text.replace(secret, REDACTED);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::StopReason;
    use crate::llm::ThinkingLevel;

    #[test]
    fn credentials_are_redacted_from_error_texts() {
        let opts = StreamOptions {
            api_key: Some("sk-ant-secret-123".into()),
            headers: vec![
                ("Authorization".into(), "Bearer tok-abcdefgh".into()),
                ("X-Custom-Token".into(), "custom-secret-value".into()),
                ("anthropic-version".into(), "2023-06-01".into()),
                ("x-api-key".into(), "short".into()),
            ],
            ..StreamOptions::default()
        };
        let mut text = "401 bad key sk-ant-secret-123 (Authorization: Bearer tok-abcdefgh, \
                        x-custom-token: custom-secret-value, anthropic-version: 2023-06-01, short)"
            .to_string();
        redact_credentials(&mut text, &opts);
        assert_eq!(
            text,
            "401 bad key [redacted] (Authorization: [redacted], x-custom-token: [redacted], \
             anthropic-version: 2023-06-01, short)"
        );
    }

    #[test]
    fn unsupported_api_is_an_error_without_start() {
        let m = Model {
            id: "x".into(),
            api: "no-such-api".into(),
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
            Some("Unsupported API: no-such-api")
        );
        assert!(msg.duration_ms.is_some());
        assert_eq!(msg.thinking_level, Some(ThinkingLevel::Off));
    }
}
