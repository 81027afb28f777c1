//! The toolkit the wire-API adapters share: the streamed message with its event callback
//! ([`StreamedMessage`]), failure and abort handling, the output-token budget (providers.md
//! §1) and provider error-text formatting. Tool-call arguments are parsed in `tool_args`.
//!
//! The agent loop calls `drive::stream_assistant`; each adapter implements `drive::WireApi`
//! and `drive::drive` runs it. Nothing here panics: each failure becomes the final message with
//! `stopReason:"error"` (or `"aborted"` once the cancel token fired), keeping the content
//! streamed so far ([`StreamedMessage::finish`]).

use serde_json::{Map, Value};

use super::model::Model;
use super::thinking::ThinkingLevel;
use super::types::{
    AssistantEvent, AssistantMessage, ContentBlock, LlmContext, LlmMessage, StopReason,
    StreamOptions, ToolSpec,
};
use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::utf16;
use crate::js::value::js_truthy;
use crate::resources::settings::ThinkingBudgets;
use crate::util::now_ms;

/// What an adapter reports while streaming.
pub enum StreamUpdate<'a> {
    /// The response started streaming. The partial message has `content:[]`,
    /// `stopReason:"pending"`, the usage so far and the `responseId` when already known.
    Start(&'a AssistantMessage),
    /// One content event, with the partial message after it was applied.
    Event(&'a AssistantMessage, &'a AssistantEvent),
}

// ---------------------------------------------------------------------------------------------
// The streamed message

/// Why an adapter stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The error message for the final message.
    Error(String),
    /// The cancel token fired (the message text comes from [`AbortTexts`]).
    Aborted,
}

/// The `errorMessage` of an aborted response, by where the abort landed. pi's texts differ per
/// API because they come from different SDK layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortTexts {
    /// The token was already cancelled when the request was about to be sent.
    pub before_request: &'static str,
    /// Cancelled while connecting or waiting for the response headers.
    pub before_response: &'static str,
    /// Cancelled while the body streamed.
    pub streaming: &'static str,
}

impl AbortTexts {
    pub const DEFAULT: AbortTexts = AbortTexts {
        before_request: "This operation was aborted",
        before_response: "Request aborted",
        streaming: "This operation was aborted",
    };
}

/// The message being streamed and the callback that observes it.
pub struct StreamedMessage<'a> {
    pub msg: AssistantMessage,
    on_event: &'a mut dyn FnMut(StreamUpdate<'_>),
    started: bool,
    /// The request was sent (an abort now is "before response" rather than "before request").
    sent: bool,
}

impl<'a> StreamedMessage<'a> {
    /// An empty pending message for `model`, stamped now.
    pub fn new(
        model: &Model,
        on_event: &'a mut dyn FnMut(StreamUpdate<'_>),
    ) -> StreamedMessage<'a> {
        StreamedMessage {
            msg: AssistantMessage::new(model, now_ms()),
            on_event,
            started: false,
            sent: false,
        }
    }

    /// Marks the request as sent.
    pub fn mark_sent(&mut self) {
        self.sent = true;
    }

    /// Reports `Start` (once).
    pub fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.sent = true;
            (self.on_event)(StreamUpdate::Start(&self.msg));
        }
    }

    pub fn started(&self) -> bool {
        self.started
    }

    /// Reports one content event (after the caller applied it to `msg`).
    pub fn emit(&mut self, ev: AssistantEvent) {
        (self.on_event)(StreamUpdate::Event(&self.msg, &ev));
    }

    /// Appends a block and returns its content index.
    pub fn push_block(&mut self, block: ContentBlock) -> usize {
        self.msg.content.push(block);
        self.msg.content.len() - 1
    }

    /// The final message: unchanged on success; otherwise `stopReason` error/aborted with its
    /// `errorMessage` (the content streamed so far is kept). A fired cancel token always wins.
    pub fn finish(
        self,
        result: Result<(), Failure>,
        cancel: &CancelToken,
        texts: &AbortTexts,
    ) -> AssistantMessage {
        let mut msg = self.msg;
        if cancel.is_cancelled() || result == Err(Failure::Aborted) {
            msg.stop_reason = StopReason::Aborted;
            msg.error_message = Some(
                if self.started {
                    texts.streaming
                } else if self.sent {
                    texts.before_response
                } else {
                    texts.before_request
                }
                .to_owned(),
            );
            return msg;
        }
        if let Err(Failure::Error(e)) = result {
            msg.stop_reason = StopReason::Error;
            msg.error_message = Some(e);
        }
        msg
    }
}

// ---------------------------------------------------------------------------------------------
// Output tokens (providers.md §1, pi-ai's simple-options)

const CONTEXT_SAFETY_TOKENS: i64 = 4096;
const CONTEXT_SAFETY_RATIO: f64 = 0.15;
const MIN_OUTPUT_WITH_RATIO_MARGIN: i64 = 32768;
const CHARS_PER_TOKEN: f64 = 3.5;
const ESTIMATED_IMAGE_CHARS: usize = 4800;
/// Tokens always left for the answer when a thinking budget shares the response ceiling.
pub const MIN_ANSWER_TOKENS: u64 = 1024;

fn tokens_of_chars(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

fn content_chars(content: &[ContentBlock]) -> usize {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text, .. } => utf16::len(text),
            ContentBlock::Image { .. } => ESTIMATED_IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

/// The characters of `JSON.stringify` of tool declarations (`{name, description,
/// parameters}` each).
fn tools_chars(tools: &[ToolSpec]) -> usize {
    if tools.is_empty() {
        return 0;
    }
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("name".into(), Value::from(t.name.as_str()));
            m.insert("description".into(), Value::from(t.description.as_str()));
            m.insert("parameters".into(), t.parameters.clone());
            Value::Object(m)
        })
        .collect();
    utf16::len(&serde_json::to_string(&tools).unwrap_or_default())
}

fn message_tokens(m: &LlmMessage) -> u64 {
    match m {
        // pi's estimate of a system message: its whole text, then the JSON of its added and
        // of its removed tools (`[{name}]`), each rounded up on its own.
        LlmMessage::System(s) => {
            let removed: Vec<Value> = s
                .tools_removed
                .iter()
                .map(|name| serde_json::json!({ "name": name }))
                .collect();
            let removed_chars = if removed.is_empty() {
                0
            } else {
                utf16::len(&serde_json::to_string(&removed).unwrap_or_default())
            };
            tokens_of_chars(utf16::len(&s.full_text()))
                + tokens_of_chars(tools_chars(&s.tools_added))
                + tokens_of_chars(removed_chars)
        }
        LlmMessage::User { content, .. } | LlmMessage::ToolResult { content, .. } => {
            tokens_of_chars(content_chars(content))
        }
        LlmMessage::Assistant(a) => {
            let chars: usize = a
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text, .. } => utf16::len(text),
                    ContentBlock::Thinking { thinking, .. } => utf16::len(thinking),
                    ContentBlock::ToolCall {
                        name, arguments, ..
                    } => {
                        utf16::len(name)
                            + utf16::len(&serde_json::to_string(arguments).unwrap_or_default())
                    }
                    ContentBlock::Image { .. } => 0,
                })
                .sum();
            tokens_of_chars(chars)
        }
    }
}

fn message_timestamp(m: &LlmMessage) -> u64 {
    match m {
        LlmMessage::User { timestamp, .. } => *timestamp,
        LlmMessage::Assistant(a) => a.timestamp,
        LlmMessage::ToolResult { .. } => 0,
        LlmMessage::System(s) => s.timestamp,
    }
}

/// pi-ai's `estimateContextTokens` over a request context: the last successful assistant
/// usage plus estimates (chars / 3.5) of the messages after it, or the estimate of everything
/// (system prompt and tool definitions included) when no usage applies.
pub fn estimate_context_tokens(ctx: &LlmContext) -> u64 {
    let mut latest_prefix: u64 = 0;
    let mut usage_at: Option<(usize, u64)> = None;
    for (i, m) in ctx.messages.iter().enumerate() {
        if let LlmMessage::Assistant(a) = m {
            let tokens = if a.usage.total_tokens > 0 {
                a.usage.total_tokens
            } else {
                a.usage.sum_tokens()
            };
            if a.timestamp >= latest_prefix
                && !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error)
                && tokens > 0
            {
                usage_at = Some((i, tokens));
            }
        }
        latest_prefix = latest_prefix.max(message_timestamp(m));
    }
    match usage_at {
        Some((i, tokens)) => {
            tokens
                + ctx.messages[i + 1..]
                    .iter()
                    .map(message_tokens)
                    .sum::<u64>()
        }
        None => {
            // The leading system message: the prompt and its tools (the current ones, unless
            // later system messages changed them in place).
            let tools = super::transcript::leading_tools(ctx);
            tokens_of_chars(utf16::len(&ctx.system_prompt))
                + tokens_of_chars(tools_chars(tools))
                + ctx.messages.iter().map(message_tokens).sum::<u64>()
        }
    }
}

/// pi-ai's `clampMaxTokensToContext`: fits `max_tokens` into the context window, leaving a
/// margin for the input being counted higher than estimated. At least 1.
pub fn clamp_max_tokens_to_context(model: &Model, ctx: &LlmContext, max_tokens: u64) -> u64 {
    if model.context_window == 0 {
        return max_tokens.max(1);
    }
    let input = estimate_context_tokens(ctx) as i64;
    let window = model.context_window as i64;
    let margin = CONTEXT_SAFETY_TOKENS.max((input as f64 * CONTEXT_SAFETY_RATIO).ceil() as i64);
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(window - input - CONTEXT_SAFETY_TOKENS);
    }
    max_tokens.min(room.max(1) as u64)
}

/// The output cap of a request without thinking adjustments: `opts.max_tokens` or the model's
/// `maxTokens`, fitted into the context window (providers.md §1).
pub fn base_max_tokens(model: &Model, ctx: &LlmContext, opts: &StreamOptions) -> u64 {
    clamp_max_tokens_to_context(model, ctx, opts.max_tokens.unwrap_or(model.max_tokens))
}

/// The budget of a thinking level (`xhigh` / `max` use the `high` budget).
pub fn thinking_budget_for_level(level: ThinkingLevel, budgets: &ThinkingBudgets) -> u64 {
    match level {
        ThinkingLevel::Off => 0,
        ThinkingLevel::Minimal => budgets.minimal,
        ThinkingLevel::Low => budgets.low,
        ThinkingLevel::Medium => budgets.medium,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => budgets.high,
    }
}

/// `min(budget, max(0, ceiling - 1024))`.
pub fn clamp_thinking_budget_to_answer_room(budget: u64, ceiling: u64) -> u64 {
    budget.min(ceiling.saturating_sub(MIN_ANSWER_TOKENS))
}

// ---------------------------------------------------------------------------------------------
// Error texts

/// The Stainless SDKs' `APIError.makeMessage`: `"<status> <msg>"` where msg is the error
/// object's string `message`, else its JSON, else the raw text; `"<status> status code (no
/// body)"` without any.
pub fn sdk_status_message(status: u16, error: Option<&Value>, raw_text: Option<&str>) -> String {
    let msg = match error {
        Some(e) => match e.get("message").filter(|m| js_truthy(m)) {
            Some(Value::String(s)) => s.clone(),
            Some(m) => js_stringify(m),
            None if js_truthy(e) => js_stringify(e),
            None => raw_text.unwrap_or_default().to_owned(),
        },
        None => raw_text.unwrap_or_default().to_owned(),
    };
    if msg.is_empty() {
        format!("{status} status code (no body)")
    } else {
        format!("{status} {msg}")
    }
}

/// A response body parsed like the SDKs' `safeJSON`: `Some` only for valid JSON that is truthy.
pub fn parse_error_body(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().filter(js_truthy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{ToolSpec, Usage};
    use serde_json::json;

    #[test]
    fn sdk_messages() {
        // Anthropic: the whole body is the error object.
        let body = r#"{"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}"#;
        let parsed = parse_error_body(body);
        assert_eq!(
            sdk_status_message(429, parsed.as_ref(), Some(body)),
            r#"429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}"#
        );
        assert_eq!(
            sdk_status_message(429, None, Some("plain text failure")),
            "429 plain text failure"
        );
        assert_eq!(
            sdk_status_message(500, None, Some("")),
            "500 status code (no body)"
        );
        let p = parse_error_body(r#"{"message": "bad thing"}"#);
        assert_eq!(sdk_status_message(400, p.as_ref(), None), "400 bad thing");
        let p = parse_error_body(r#"{"foo": 1.0}"#);
        assert_eq!(
            sdk_status_message(400, p.as_ref(), None),
            r#"400 {"foo":1}"#
        );
        assert_eq!(parse_error_body("null"), None);
        assert_eq!(parse_error_body("not json"), None);
    }

    fn model(window: u64, max: u64) -> Model {
        Model {
            context_window: window,
            max_tokens: max,
            ..Model::default()
        }
    }

    fn ctx_with_text(chars: usize) -> LlmContext {
        LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: String::new(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("x".repeat(chars))],
                timestamp: 1,
                as_string: false,
            }],
            tools: vec![],
        }
    }

    #[test]
    fn max_tokens_fit_the_context() {
        // Plenty of room: the model cap.
        assert_eq!(
            clamp_max_tokens_to_context(&model(200_000, 8192), &ctx_with_text(100), 8192),
            8192
        );
        // 35000 chars = 10000 tokens; room = 128000 - 10000 - max(4096, 1500) = 113904.
        assert_eq!(
            clamp_max_tokens_to_context(&model(128_000, 200_000), &ctx_with_text(35_000), 200_000),
            113_904
        );
        // Little room: min(32768, window - input - 4096).
        assert_eq!(
            clamp_max_tokens_to_context(&model(32_000, 16_384), &ctx_with_text(3_500), 16_384),
            16_384
        );
        assert_eq!(
            clamp_max_tokens_to_context(&model(32_000, 30_000), &ctx_with_text(35_000), 30_000),
            17_904
        );
        // Over the window: at least 1.
        assert_eq!(
            clamp_max_tokens_to_context(&model(1000, 8192), &ctx_with_text(35_000), 8192),
            1
        );
        // No window: untouched.
        assert_eq!(
            clamp_max_tokens_to_context(&model(0, 8192), &ctx_with_text(35_000), 8192),
            8192
        );
    }

    #[test]
    fn estimate_uses_last_usage() {
        let mut a = AssistantMessage {
            stop_reason: StopReason::Stop,
            timestamp: 5,
            usage: Usage {
                total_tokens: 1000,
                ..Usage::default()
            },
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: "s".repeat(7000),
            messages: vec![
                LlmMessage::User {
                    content: vec![ContentBlock::text("hi")],
                    timestamp: 1,
                    as_string: false,
                },
                LlmMessage::Assistant(a.clone()),
                LlmMessage::User {
                    content: vec![ContentBlock::text("x".repeat(35))],
                    timestamp: 6,
                    as_string: false,
                },
            ],
            tools: vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({}),
                strict_prefer: false,
            }],
        };
        assert_eq!(estimate_context_tokens(&ctx), 1010);
        // An errored response's usage does not count: everything is estimated.
        a.stop_reason = StopReason::Error;
        let mut ctx2 = ctx.clone();
        ctx2.messages[1] = LlmMessage::Assistant(a);
        let tools_json = r#"[{"name":"t","description":"d","parameters":{}}]"#;
        assert_eq!(
            estimate_context_tokens(&ctx2),
            2000 + tokens_of_chars(tools_json.len()) + 1 + 10
        );
    }

    #[test]
    fn budgets() {
        let b = ThinkingBudgets::default();
        assert_eq!(thinking_budget_for_level(ThinkingLevel::Medium, &b), 8192);
        assert_eq!(thinking_budget_for_level(ThinkingLevel::Max, &b), 16384);
        assert_eq!(clamp_thinking_budget_to_answer_room(16384, 8192), 7168);
        assert_eq!(clamp_thinking_budget_to_answer_room(16384, 500), 0);
    }
}
