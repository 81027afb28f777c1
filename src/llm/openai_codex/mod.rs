//! The OpenAI Codex Responses API (`openai-codex-responses`, provider `openai-codex`, the
//! ChatGPT subscription; providers-catalog.md §4.5): the Responses protocol against ChatGPT's
//! backend, over SSE.
//!
//! The behaviour follows pi 1.6.0 (`dist/api/openai-codex-responses.js`), which builds its input
//! items and reads the event stream with the same shared code as `openai-responses`; so does
//! this adapter (`openai_responses::convert_input`, `ResponsesStream`). What Codex adds:
//! the URL `<baseUrl>/codex/responses`, the account id read from the OAuth access token (a JWT)
//! and sent as `chatgpt-account-id`, `originator: pi`, `OpenAI-Beta: responses=experimental`,
//! its own body fields (`text.verbosity`, `include`, `tool_choice`, `parallel_tool_calls`,
//! tools with `strict: null`, reasoning effort `none` at `off`), its event mapping
//! (`response.done`, `error` → `Codex error: …`) and its error texts (the ChatGPT usage limit).
//!
//! The catalog's Codex models declare their tools in the input (`compat.supportsAdditionalTools`
//! with `supportsMidConvoSystemMessages`: an `additional_tools` item before the system prompt,
//! and one more for each later system message that adds tools, with pi's notices; see
//! `llm::transcript`) and some send the effort in `configuration_update` items
//! (`supportsMidConvoEffort`: one before each earlier reply with its recorded effort, one at
//! the end).
//!
//! Not done (pi does them): the WebSocket transport (pi tries it first and falls back to SSE
//! itself, recording a `provider_transport_failure` diagnostic when it fails; SSE-only is a
//! valid port), zstd compression of the body (the backend accepts plain JSON), grammar
//! (custom) tools.

use serde_json::{json, Map, Value};

use super::drive::{effective_thinking_level, Flow, WireApi};
use super::http::{dedupe_headers, fetch_failed, HttpError, HttpRequest};
use super::model::Model;
use super::openai_responses::{
    convert_input_with, convert_tools_with, InputOptions, ResponsesStream, NO_STOP_REASON,
    NO_TERMINAL_EVENT,
};
use super::pi_messages::status_text;
use super::request::json_request;
use super::sse::SseEvent;
use super::stream::{base_max_tokens, AbortTexts, Failure, StreamedMessage};
use super::thinking::{level_mapping, LevelMapping, ThinkingLevel};
use super::transcript;
use super::types::{CacheRetention, LlmContext, StreamOptions, ToolSpec};
use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::json::parse::js_json_parse_error;
use crate::util::now_ms;

mod jwt;

pub use self::jwt::extract_account_id;

/// The ChatGPT backend, when the model has no base URL.
pub const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api";
/// The smallest `max_output_tokens` pi sends.
const MIN_OUTPUT_TOKENS: u64 = 16;
/// `prompt_cache_key` and the session headers are cut to this many characters.
const PROMPT_CACHE_KEY_MAX_CHARS: usize = 64;
/// The request's effort when the level travels in a `configuration_update` item.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";
/// A terminal event left the stop reason unset (pi's `assertSuccessfulOutput`).
pub const CODEX_NO_STOP_REASON: &str = "Codex stream ended without a stop reason";
/// The response statuses pi keeps; any other is dropped (then the stop reason is `stop`).
const STATUSES: &[&str] = &[
    "completed",
    "incomplete",
    "failed",
    "cancelled",
    "queued",
    "in_progress",
];

/// pi's abort text: its own checks, `fetch`'s `AbortError` and the SSE reader all become
/// `Request was aborted`.
pub const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "Request was aborted",
    before_response: "Request was aborted",
    streaming: "Request was aborted",
};

// ---------------------------------------------------------------------------------------------
// The request

/// pi's `resolveCodexUrl`: `<baseUrl>/codex/responses`, a base URL already ending in `/codex`
/// or `/codex/responses` used accordingly.
pub fn endpoint(model: &Model) -> String {
    let raw = if model.base_url.trim().is_empty() {
        DEFAULT_BASE_URL
    } else {
        model.base_url.as_str()
    };
    let base = raw.trim_end_matches('/');
    if base.ends_with("/codex/responses") {
        base.to_owned()
    } else if base.ends_with("/codex") {
        format!("{base}/responses")
    } else {
        format!("{base}/codex/responses")
    }
}

/// The session id that keys the prompt cache (none with caching off), cut to 64 characters.
fn cache_session_id(opts: &StreamOptions) -> Option<String> {
    if opts.cache_retention == CacheRetention::None {
        return None;
    }
    opts.session_id
        .as_ref()
        .map(|s| s.chars().take(PROMPT_CACHE_KEY_MAX_CHARS).collect())
}

/// pi's `buildSSEHeaders`: `originator: pi`, the resolved provider and model headers, then the
/// bearer token, the account id, the beta flag, content negotiation and the session headers
/// (these win over same-named configured ones).
pub fn request_headers(
    opts: &StreamOptions,
    token: &str,
    account_id: &str,
) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = vec![("originator".into(), "pi".into())];
    h.extend(opts.headers.iter().cloned());
    h.push(("Authorization".into(), format!("Bearer {token}")));
    h.push(("chatgpt-account-id".into(), account_id.to_owned()));
    h.push(("OpenAI-Beta".into(), "responses=experimental".into()));
    h.push(("accept".into(), "text/event-stream".into()));
    h.push(("content-type".into(), "application/json".into()));
    if let Some(sid) = cache_session_id(opts) {
        h.push(("session-id".into(), sid.clone()));
        h.push(("x-client-request-id".into(), sid));
    }
    dedupe_headers(&h)
}

/// pi's `convertResponsesTools` with Codex's options: `strict` is `true` for a tool that asks
/// for strict sampling (its strict-form schema), else `null` (`compat.supportsStrictMode`,
/// default on, sends the field at all).
pub fn convert_tools(tools: &[ToolSpec], supports_strict_mode: bool) -> Vec<Value> {
    convert_tools_with(tools, supports_strict_mode, &Value::Null, false)
}

/// pi's `reasoningEffort` option (`streamSimple`): the clamped level, `none` at `off` on a
/// reasoning model, nothing otherwise.
fn requested_effort(model: &Model, level: ThinkingLevel) -> Option<&'static str> {
    let level = match level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    };
    if level != ThinkingLevel::Off {
        Some(level.as_str())
    } else if model.reasoning {
        Some("none")
    } else {
        None
    }
}

/// pi's `resolveReasoningEffort`: the provider's effort for a requested one
/// (`thinkingLevelMap[level] ?? level`; for `none`, `thinkingLevelMap.off` when defined), `None`
/// when the model takes no reasoning field for it.
fn resolve_effort(model: &Model, effort: &str) -> Option<String> {
    if effort == "none" {
        return match level_mapping(model, ThinkingLevel::Off) {
            LevelMapping::Unmapped => Some("none".to_owned()),
            LevelMapping::Value(v) => Some(v.to_owned()),
            LevelMapping::Unsupported => None,
        };
    }
    match ThinkingLevel::parse(effort).map(|l| level_mapping(model, l)) {
        Some(LevelMapping::Value(v)) => Some(v.to_owned()),
        _ => Some(effort.to_owned()),
    }
}

/// With `compat.supportsMidConvoEffort` the effort travels as a trailing `configuration_update`
/// input item (the request's own effort is fixed at `medium`): the effort for it.
fn configuration_update_effort(model: &Model, level: ThinkingLevel) -> Option<String> {
    if model.compat_bool("supportsMidConvoEffort") != Some(true) {
        return None;
    }
    resolve_effort(model, requested_effort(model, level)?)
}

/// The request body (pi's `buildRequestBody`). `max_tokens` is the already fitted output cap.
pub fn build_body(model: &Model, ctx: &LlmContext, opts: &StreamOptions, max_tokens: u64) -> Value {
    let flag = |k: &str| model.compat_bool(k).unwrap_or(true);
    let update_effort = configuration_update_effort(model, opts.thinking_level);
    // With a mid-conversation effort, each earlier same-model reply that recorded its
    // `providerThinkingLevel` is preceded by a `configuration_update` item with it, and one with
    // this turn's effort ends the input (pi's `convertResponsesMessages`). Tools declared in
    // the input (`additional_tools`) carry Codex's strictness (`null` by default).
    let options = InputOptions {
        configuration_update_effort: update_effort.as_deref(),
        supports_strict_mode: flag("supportsStrictMode"),
        null_strict: true,
    };
    let input = convert_input_with(model, ctx, &options);
    let support = super::openai_responses::tool_support(model);
    let request_tools = transcript::resolve_tools(ctx, support).request_tools;
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    body.insert("input".into(), Value::Array(input));
    body.insert("text".into(), json!({"verbosity": "low"}));
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(sid) = cache_session_id(opts) {
        body.insert("prompt_cache_key".into(), json!(sid));
    }
    body.insert("tool_choice".into(), json!("auto"));
    body.insert("parallel_tool_calls".into(), json!(true));
    if max_tokens > 0 && flag("supportsMaxOutputTokens") {
        body.insert(
            "max_output_tokens".into(),
            json!(max_tokens.max(MIN_OUTPUT_TOKENS)),
        );
    }
    if !request_tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(&request_tools, flag("supportsStrictMode"))),
        );
    }
    let effort = match (&update_effort, requested_effort(model, opts.thinking_level)) {
        (Some(_), _) => Some(CONFIGURATION_UPDATE_REQUEST_EFFORT.to_owned()),
        (None, Some(requested)) => resolve_effort(model, requested),
        (None, None) => None,
    };
    if let Some(effort) = effort {
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
    }
    Value::Object(body)
}

// ---------------------------------------------------------------------------------------------
// Errors

/// pi's `parseErrorResponse`: for a usage limit (HTTP 429, or an error code/type
/// `usage_limit_reached` / `usage_not_included` / `rate_limit_exceeded`) `You have hit your
/// ChatGPT usage limit (<plan> plan). Try again in ~<n> min.`; else the body's
/// `error.message`, the raw body, the status text or `Request failed`.
pub fn http_error_message(status: u16, body: &str, now: u64) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let err = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| crate::js::value::js_truthy(e));
    let fallback = match (body, status_text(status)) {
        ("", "") => "Request failed".to_owned(),
        ("", text) => text.to_owned(),
        (body, _) => body.to_owned(),
    };
    let Some(err) = err else {
        return fallback;
    };
    let text = |k: &str| {
        err.get(k)
            .filter(|v| crate::js::value::js_truthy(v))
            .map(|v| crate::js::value::js_template(Some(v)))
    };
    let code = text("code").or_else(|| text("type")).unwrap_or_default();
    let code_lower = code.to_ascii_lowercase();
    let limited = status == 429
        || [
            "usage_limit_reached",
            "usage_not_included",
            "rate_limit_exceeded",
        ]
        .iter()
        .any(|c| code_lower.contains(c));
    if limited {
        let plan = err
            .get("plan_type")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(|p| format!(" ({} plan)", p.to_lowercase()))
            .unwrap_or_default();
        let when = err
            .get("resets_at")
            .and_then(Value::as_f64)
            .filter(|r| *r != 0.0)
            .map(|r| {
                let mins = ((r * 1000.0 - now as f64) / 60000.0).round().max(0.0);
                format!(" Try again in ~{mins} min.")
            })
            .unwrap_or_default();
        return format!("You have hit your ChatGPT usage limit{plan}.{when}");
    }
    text("message").unwrap_or(fallback)
}

// ---------------------------------------------------------------------------------------------
// The stream

/// One Codex response stream: pi's `mapCodexEvents` in front of the shared Responses state.
#[derive(Debug, Default)]
pub struct CodexStream {
    inner: ResponsesStream,
}

impl CodexStream {
    pub fn new() -> CodexStream {
        CodexStream::default()
    }

    /// Applies one SSE event's data (its data lines joined, trimmed).
    pub fn handle(
        &mut self,
        model: &Model,
        data: &str,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, String> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Flow::Continue);
        }
        let event: Value = serde_json::from_str(data).map_err(|e| {
            let why = js_json_parse_error(data).unwrap_or_else(|| e.to_string());
            format!("Invalid Codex SSE JSON: {why}")
        })?;
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            return Ok(Flow::Continue);
        };
        match kind {
            "error" => {
                let nested = event.get("error").filter(|e| e.is_object());
                let field = |k: &str| {
                    event
                        .get(k)
                        .and_then(Value::as_str)
                        .or_else(|| nested.and_then(|n| n.get(k)).and_then(Value::as_str))
                        .filter(|s| !s.is_empty())
                };
                let what = field("message")
                    .or_else(|| field("code"))
                    .map_or_else(|| js_stringify(&event), str::to_owned);
                Err(format!("Codex error: {what}"))
            }
            "response.failed" => {
                let message = event
                    .pointer("/response/error/message")
                    .filter(|m| crate::js::value::js_truthy(m))
                    .map(|m| crate::js::value::js_template(Some(m)));
                Err(message.unwrap_or_else(|| "Codex response failed".into()))
            }
            "response.done" | "response.completed" | "response.incomplete" => {
                let mut event = event;
                if let Some(o) = event.as_object_mut() {
                    o.insert("type".into(), json!("response.completed"));
                    if let Some(Value::Object(r)) = o.get_mut("response") {
                        let keep = r
                            .get("status")
                            .and_then(Value::as_str)
                            .is_some_and(|s| STATUSES.contains(&s));
                        if !keep {
                            r.remove("status");
                        }
                    }
                }
                self.inner.handle(None, &js_stringify(&event), model, out)?;
                Ok(Flow::Stop)
            }
            _ => {
                self.inner.handle(None, data, model, out)?;
                Ok(Flow::Continue)
            }
        }
    }

    /// The verdict after the body ended (pi's `processResponsesStream` checks, then
    /// `assertSuccessfulOutput`).
    pub fn finish(&self, out: &StreamedMessage<'_>) -> Result<(), String> {
        if !self.inner.saw_terminal() {
            return Err(NO_TERMINAL_EVENT.into());
        }
        self.inner.finish(&out.msg).map_err(|e| {
            if e == NO_STOP_REASON {
                CODEX_NO_STOP_REASON.into()
            } else {
                e
            }
        })
    }
}

/// The Codex API as `drive` runs it. A missing key or a token without an account id is an
/// error before any request.
impl<'a> WireApi<'a> for CodexStream {
    const ABORT_TEXTS: AbortTexts = ABORT_TEXTS;
    const DISPATCH_TRAILING: bool = true;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let token = match opts.api_key.as_deref() {
            Some(k) if !k.is_empty() => k,
            _ => {
                return Err(Failure::Error(format!(
                    "No API key for provider: {}",
                    model.provider
                )))
            }
        };
        let account_id = extract_account_id(token).map_err(Failure::Error)?;
        let max_tokens = base_max_tokens(model, ctx, opts);
        let body = build_body(model, ctx, opts, max_tokens);
        let request = json_request(
            endpoint(model),
            request_headers(opts, token, &account_id),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, CodexStream::new()))
    }

    fn http_error(_: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        http_error_message(status, body, now_ms())
    }

    fn transport_error(e: &HttpError) -> String {
        fetch_failed(e, true)
    }

    /// pi records the mid-conversation effort on the reply (`providerThinkingLevel`, right
    /// after `model`), so that later requests replay it before this turn.
    fn provider_thinking_level(model: &Model, opts: &StreamOptions) -> Option<String> {
        configuration_update_effort(model, opts.thinking_level)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        self.handle(model, &event.data, out).map_err(Failure::Error)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
        self.finish(out).map_err(Failure::Error)
    }
}
