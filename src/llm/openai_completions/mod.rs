//! The OpenAI Chat Completions API (`openai-completions`, providers.md §3), including the
//! compat switches of OpenAI-compatible hosts (OpenRouter, Groq, xAI, DeepSeek, Mistral, z.ai,
//! local servers, …).

use serde_json::{json, Map, Value};

use super::convert::normalize_tool_call_ids;
use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::HttpRequest;
use super::model::Model;
use super::request::{json_request, merge_sampling_params};
use super::sse::SseEvent;
use super::stream::{
    base_max_tokens, clamp_thinking_budget_to_answer_room, parse_error_body, sdk_status_message,
    thinking_budget_for_level, AbortTexts, Failure, StreamedMessage,
};
use super::thinking::ThinkingLevel;
use super::tool_args::ToolArgs;
use super::types::{
    AssistantEvent, CacheRetention, ContentBlock, LlmContext, LlmMessage, StopReason,
    StreamOptions, ToolSpec, Usage,
};
use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::utf16;
use crate::js::value::js_truthy;

mod events;
mod request;

pub use self::events::StreamState;
pub use self::request::build_request;

/// How an aborted request is reported (the OpenAI SDK's texts, as pi 1.6.0 surfaces them).
const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "Request aborted",
    before_response: "Request aborted",
    streaming: "Request was aborted",
};

/// The largest error body quoted in an error message (pi's `MAX_PROVIDER_ERROR_BODY_CHARS`).
const MAX_ERROR_BODY_CHARS: usize = 4000;

/// Where the thinking level goes in the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThinkingFormat {
    /// `reasoning_effort` (OpenAI style).
    OpenAi,
    /// `reasoning: {effort}` (OpenRouter).
    OpenRouter,
    /// `thinking: {type}` + `reasoning_effort` (DeepSeek).
    DeepSeek,
    /// `thinking: {type, clear_thinking}` (z.ai).
    Zai,
    /// `enable_thinking` (Qwen).
    Qwen,
    /// `chat_template_kwargs: {enable_thinking, preserve_thinking}`.
    QwenChatTemplate,
    /// `reasoning: {enabled}` (Together).
    Together,
    /// `thinking: "<level>"`.
    StringThinking,
    /// `reasoning: {effort}` only when the level maps to a string (Ant Ling).
    AntLing,
    /// `chat_template_args` from compat + `reasoning_effort` (Baseten).
    Baseten,
    /// `chat_template_kwargs` from compat (custom providers).
    ChatTemplate,
    /// Anything else: no thinking parameter.
    Other(String),
}

impl ThinkingFormat {
    fn parse(s: &str) -> ThinkingFormat {
        match s {
            "openai" => ThinkingFormat::OpenAi,
            "openrouter" => ThinkingFormat::OpenRouter,
            "deepseek" => ThinkingFormat::DeepSeek,
            "zai" => ThinkingFormat::Zai,
            "qwen" => ThinkingFormat::Qwen,
            "qwen-chat-template" => ThinkingFormat::QwenChatTemplate,
            "together" => ThinkingFormat::Together,
            "string-thinking" => ThinkingFormat::StringThinking,
            "ant-ling" => ThinkingFormat::AntLing,
            "baseten" => ThinkingFormat::Baseten,
            "chat-template" => ThinkingFormat::ChatTemplate,
            other => ThinkingFormat::Other(other.to_owned()),
        }
    }
}

/// The resolved compat switches: auto-detected from provider and base URL (pi's `detectCompat`),
/// then overridden by `model.compat`.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionsCompat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub supports_usage_in_streaming: bool,
    pub supports_finish_reason: bool,
    /// `"max_tokens"` or `"max_completion_tokens"`.
    pub max_tokens_field: String,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_non_null_assistant_content: bool,
    pub requires_tools_with_tool_history: bool,
    /// Later system messages stay in place (`supportsMidConvoSystemMessages`).
    pub supports_mid_convo_system_messages: bool,
    /// ... and tools added by them are declared there (`supportsMidConvoToolAdditions`).
    pub supports_mid_convo_tool_additions: bool,
    pub requires_thinking_as_text: bool,
    pub requires_reasoning_content_on_assistant_messages: bool,
    pub thinking_format: ThinkingFormat,
    pub supports_strict_mode: bool,
    /// `"anthropic"` for Anthropic models behind OpenRouter.
    pub cache_control_format: Option<String>,
    pub supports_long_cache_retention: bool,
    pub send_session_affinity_headers: bool,
    pub session_affinity_format: String,
    pub zai_tool_stream: bool,
}

impl CompletionsCompat {
    pub fn of(model: &Model) -> CompletionsCompat {
        let provider = model.provider.as_str();
        let base = model.base_url.as_str();
        let is_zai = provider == "zai"
            || provider == "zai-coding-cn"
            || base.contains("api.z.ai")
            || base.contains("open.bigmodel.cn");
        let is_together = provider == "together"
            || base.contains("api.together.ai")
            || base.contains("api.together.xyz");
        let is_moonshot = provider == "moonshotai"
            || provider == "moonshotai-cn"
            || base.contains("api.moonshot.");
        let is_openrouter = provider == "openrouter" || base.contains("openrouter.ai");
        let is_cf_workers =
            provider == "cloudflare-workers-ai" || base.contains("api.cloudflare.com");
        let is_cf_gateway =
            provider == "cloudflare-ai-gateway" || base.contains("gateway.ai.cloudflare.com");
        let is_nvidia = provider == "nvidia" || base.contains("integrate.api.nvidia.com");
        let is_ant_ling = provider == "ant-ling" || base.contains("api.ant-ling.com");
        let is_cerebras = provider == "cerebras" || base.contains("cerebras.ai");
        let is_deepseek =
            provider == "deepseek" || base.to_ascii_lowercase().contains("deepseek.com");
        let is_grok = provider == "xai" || base.contains("api.x.ai");
        let is_non_standard = is_nvidia
            || is_cerebras
            || is_grok
            || is_together
            || base.contains("chutes.ai")
            || is_deepseek
            || is_zai
            || is_moonshot
            || provider == "opencode"
            || base.contains("opencode.ai")
            || is_cf_workers
            || is_cf_gateway
            || is_ant_ling;
        let use_max_tokens = base.contains("chutes.ai")
            || is_deepseek
            || is_moonshot
            || is_cf_gateway
            || is_together
            || is_nvidia
            || is_ant_ling
            || is_zai;
        let is_openai = provider == "openai" || base.contains("api.openai.com");
        let detected_format = if is_deepseek {
            "deepseek"
        } else if is_zai {
            "zai"
        } else if is_together {
            "together"
        } else if is_ant_ling {
            "ant-ling"
        } else if is_openrouter {
            "openrouter"
        } else {
            "openai"
        };
        let c = model.compat.as_ref();
        let b = |k: &str, d: bool| {
            c.and_then(|m| m.get(k))
                .and_then(Value::as_bool)
                .unwrap_or(d)
        };
        let s = |k: &str| {
            c.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        CompletionsCompat {
            supports_store: b("supportsStore", !is_non_standard),
            supports_developer_role: b("supportsDeveloperRole", is_openai),
            supports_reasoning_effort: b(
                "supportsReasoningEffort",
                !is_grok
                    && !is_zai
                    && !is_moonshot
                    && !is_together
                    && !is_cf_gateway
                    && !is_nvidia
                    && !is_ant_ling,
            ),
            supports_usage_in_streaming: b("supportsUsageInStreaming", true),
            supports_finish_reason: b("supportsFinishReason", true),
            max_tokens_field: s("maxTokensField").unwrap_or_else(|| {
                if use_max_tokens {
                    "max_tokens".into()
                } else {
                    "max_completion_tokens".into()
                }
            }),
            requires_tool_result_name: b("requiresToolResultName", false),
            requires_assistant_after_tool_result: b("requiresAssistantAfterToolResult", false),
            requires_non_null_assistant_content: b("requiresNonNullAssistantContent", false),
            requires_tools_with_tool_history: b("requiresToolsWithToolHistory", false),
            supports_mid_convo_system_messages: b("supportsMidConvoSystemMessages", false),
            supports_mid_convo_tool_additions: b("supportsMidConvoToolAdditions", false),
            requires_thinking_as_text: b("requiresThinkingAsText", false),
            requires_reasoning_content_on_assistant_messages: b(
                "requiresReasoningContentOnAssistantMessages",
                is_deepseek,
            ),
            thinking_format: ThinkingFormat::parse(
                &s("thinkingFormat").unwrap_or_else(|| detected_format.into()),
            ),
            supports_strict_mode: b("supportsStrictMode", false),
            cache_control_format: s("cacheControlFormat").or_else(|| {
                (provider == "openrouter" && model.id.starts_with("anthropic/"))
                    .then(|| "anthropic".to_owned())
            }),
            supports_long_cache_retention: b(
                "supportsLongCacheRetention",
                !(is_together || is_cf_workers || is_cf_gateway || is_nvidia || is_ant_ling),
            ),
            send_session_affinity_headers: b("sendSessionAffinityHeaders", is_openrouter),
            session_affinity_format: s("sessionAffinityFormat").unwrap_or_else(|| {
                if is_openrouter {
                    "openrouter".into()
                } else {
                    "openai".into()
                }
            }),
            zai_tool_stream: b("zaiToolStream", false),
        }
    }
}

/// The error text of an HTTP error status, as pi formats the OpenAI SDK's error
/// (`formatProviderError(normalizeProviderError(e))`): `"<status>: <error JSON>"` when the body
/// has an `error` object whose JSON is not already in the SDK message, else the SDK message
/// (`"<status> <message>"`).
pub fn http_error_message(status: u16, text: &str) -> String {
    let parsed = parse_error_body(text);
    let (error, raw) = match &parsed {
        Some(v) => (v.get("error").filter(|e| js_truthy(e)), None),
        None => (None, Some(text)),
    };
    let message = sdk_status_message(status, error, raw);
    let body = error
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(|e| truncate_error_text(js_stringify(e).trim()));
    let mut out = match body {
        Some(b) if !message.contains(&b) => format!("{status}: {b}"),
        _ => message,
    };
    if let Some(raw_meta) = error
        .and_then(|e| e.get("metadata"))
        .and_then(|m| m.get("raw"))
        .filter(|r| js_truthy(r))
    {
        let raw_text = match raw_meta {
            Value::String(s) => s.clone(),
            other => js_stringify(other),
        };
        if !out.contains(&raw_text) {
            out.push('\n');
            out.push_str(&raw_text);
        }
    }
    out
}

fn truncate_error_text(text: &str) -> String {
    let total = utf16::len(text);
    if total <= MAX_ERROR_BODY_CHARS {
        return text.to_owned();
    }
    let head = utf16::prefix_lossy(text, MAX_ERROR_BODY_CHARS);
    format!(
        "{head}... [truncated {} chars]",
        total - MAX_ERROR_BODY_CHARS
    )
}

/// The Chat Completions API as `drive` runs it. Open blocks are closed (their end events
/// reported) however the body ended, an abort or a failure included, as pi does.
impl<'a> WireApi<'a> for StreamState<'a> {
    const ABORT_TEXTS: AbortTexts = ABORT_TEXTS;
    const DISPATCH_TRAILING: bool = true;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let req = build_request(model, ctx, opts).map_err(Failure::Error)?;
        let request = json_request(req.url, req.headers, &req.body, opts.idle_timeout)?;
        Ok((request, StreamState::new(model)))
    }

    fn http_error(_: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        http_error_message(status, body)
    }

    fn on_event(
        &mut self,
        _: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Stop);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Failure::Error(format!("Could not parse streaming chunk: {e}; data={data}"))
        })?;
        // An error object in the stream (OpenAI-compatible servers send these).
        if let Some(err) = chunk.get("error").filter(|e| e.is_object()) {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| js_stringify(err));
            return Err(Failure::Error(msg));
        }
        self.handle_chunk(&chunk, out);
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        // Open blocks close at the end of the stream, in content order.
        self.finish_blocks(out);
        read?;
        let compat = CompletionsCompat::of(self.model);
        if !self.has_finish_reason && !compat.supports_finish_reason {
            out.msg.stop_reason = if out.msg.tool_calls().next().is_some() {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            };
        }
        if out.msg.stop_reason == StopReason::Error {
            return Err(Failure::Error(
                out.msg
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "Provider returned an error stop reason".into()),
            ));
        }
        if (compat.supports_finish_reason && !self.has_finish_reason)
            || out.msg.stop_reason == StopReason::Pending
        {
            return Err(Failure::Error("Stream ended without finish_reason".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;

    pub(super) fn mock_gpt() -> Model {
        Model {
            id: "mock-gpt".into(),
            name: "Mock GPT".into(),
            api: "openai-completions".into(),
            provider: "mockoai".into(),
            base_url: "http://127.0.0.1:18080/v1".into(),
            reasoning: false,
            input: vec!["text".into(), "image".into()],
            cost: ModelCost {
                input: 2.0,
                output: 8.0,
                cache_read: 0.5,
                cache_write: 0.0,
                tiers: None,
            },
            context_window: 128_000,
            max_tokens: 4096,
            ..Model::default()
        }
    }

    pub(super) fn opts() -> StreamOptions {
        StreamOptions {
            api_key: Some("test-key".into()),
            ..StreamOptions::default()
        }
    }

    #[test]
    fn compat_detection() {
        let mut m = mock_gpt();
        let c = CompletionsCompat::of(&m);
        assert!(c.supports_store);
        assert!(!c.supports_developer_role);
        assert_eq!(c.thinking_format, ThinkingFormat::OpenAi);
        m.base_url = "https://openrouter.ai/api/v1".into();
        let c = CompletionsCompat::of(&m);
        assert_eq!(c.thinking_format, ThinkingFormat::OpenRouter);
        assert!(c.send_session_affinity_headers);
        m.base_url = "https://api.x.ai/v1".into();
        let c = CompletionsCompat::of(&m);
        assert!(!c.supports_store);
        assert!(!c.supports_reasoning_effort);
        m.base_url = "https://api.deepseek.com".into();
        let c = CompletionsCompat::of(&m);
        assert_eq!(c.max_tokens_field, "max_tokens");
        assert_eq!(c.thinking_format, ThinkingFormat::DeepSeek);
        assert!(c.requires_reasoning_content_on_assistant_messages);
        m.base_url = "https://api.openai.com/v1".into();
        assert!(CompletionsCompat::of(&m).supports_developer_role);
        m.compat = json!({"supportsDeveloperRole": false, "supportsStore": false, "maxTokensField": "max_tokens"})
            .as_object()
            .cloned();
        let c = CompletionsCompat::of(&m);
        assert!(!c.supports_developer_role);
        assert!(!c.supports_store);
        assert_eq!(c.max_tokens_field, "max_tokens");
    }
    #[test]
    fn error_messages() {
        assert_eq!(
            http_error_message(
                429,
                r#"{"error": {"message": "Rate limited", "type": "rate_limit_error", "param": null, "code": null}}"#
            ),
            r#"429: {"message":"Rate limited","type":"rate_limit_error","param":null,"code":null}"#
        );
        assert_eq!(
            http_error_message(400, "not json at all"),
            "400 not json at all"
        );
        assert_eq!(
            http_error_message(400, r#"{"foo": 1}"#),
            "400 status code (no body)"
        );
        assert_eq!(http_error_message(500, ""), "500 status code (no body)");
        assert_eq!(
            http_error_message(400, r#"{"error": {"code": "x"}}"#),
            r#"400 {"code":"x"}"#
        );
        assert_eq!(
            http_error_message(502, r#"{"error": {"message": "Provider returned error", "metadata": {"raw": "upstream boom"}}}"#),
            "502: {\"message\":\"Provider returned error\",\"metadata\":{\"raw\":\"upstream boom\"}}"
        );
    }
}
