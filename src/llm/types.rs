//! Provider-neutral message types (data-model.md §2–3): usage and cost, content blocks, the
//! assistant message with pi's key orders, the streaming events an adapter produces, and the
//! request context and options every wire API takes.

use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::model::{calculate_cost, number_to_u64, Model};
use super::thinking::ThinkingLevel;
use crate::js::number::ser_js_f64;
use crate::resources::settings::ThinkingBudgets;

// ---------------------------------------------------------------------------------------------
// Usage

/// The dollar cost of one response (`usage.cost`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCost {
    #[serde(serialize_with = "ser_js_f64", default)]
    pub input: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub output: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub cache_read: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub cache_write: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub total: f64,
    /// `false` when pi computed the cost from the model's rates; absent on empty usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
}

/// Token counts of one response and their cost (data-model.md §2). Key order on the wire:
/// `input, output, cacheRead, cacheWrite, reasoning?, totalTokens, cost, cacheWrite1h?`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default, deserialize_with = "de_u64")]
    pub input: u64,
    #[serde(default, deserialize_with = "de_u64")]
    pub output: u64,
    #[serde(default, deserialize_with = "de_u64")]
    pub cache_read: u64,
    #[serde(default, deserialize_with = "de_u64")]
    pub cache_write: u64,
    /// Reasoning tokens, a subset of `output`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_opt_u64"
    )]
    pub reasoning: Option<u64>,
    #[serde(default, deserialize_with = "de_u64")]
    pub total_tokens: u64,
    #[serde(default)]
    pub cost: UsageCost,
    /// The part of `cacheWrite` written with a 1-hour TTL (Anthropic always sets it).
    #[serde(
        rename = "cacheWrite1h",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_opt_u64"
    )]
    pub cache_write_1h: Option<u64>,
}

impl Usage {
    /// All zeros, no `totalFromProvider`, no `cacheWrite1h` (the usage of a message before the
    /// provider reported anything).
    pub fn empty() -> Usage {
        Usage::default()
    }

    /// `input + output + cacheRead + cacheWrite`.
    pub fn sum_tokens(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// Recomputes `cost` from the model's rates (pi's `calculateCost`), setting
    /// `totalFromProvider:false`.
    pub fn recompute_cost(&mut self, model: &Model) {
        let c = calculate_cost(
            &model.cost,
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.cache_write_1h.unwrap_or(0),
        );
        self.cost = UsageCost {
            input: c.input,
            output: c.output,
            cache_read: c.cache_read,
            cache_write: c.cache_write,
            total: c.total,
            total_from_provider: Some(false),
        };
    }
}

fn de_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(number_to_u64(&v).unwrap_or(0))
}

fn de_opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(number_to_u64(&v))
}

// ---------------------------------------------------------------------------------------------
// Content blocks

fn is_false(b: &bool) -> bool {
    !*b
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// One block of message content (data-model.md §3.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    #[serde(rename = "text")]
    Text {
        text: String,
        #[serde(
            rename = "textSignature",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        text_signature: Option<String>,
    },
    #[serde(rename = "thinking")]
    Thinking {
        thinking: String,
        #[serde(
            rename = "thinkingSignature",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        thinking_signature: Option<String>,
        #[serde(default, skip_serializing_if = "is_false")]
        redacted: bool,
    },
    #[serde(rename = "toolCall")]
    ToolCall {
        id: String,
        name: String,
        #[serde(default = "empty_object")]
        arguments: Value,
        /// Why the streamed arguments text did not parse (then `arguments` is `{}`): the parse
        /// error, a blank line and `Received arguments:` with the text (pi-ai's
        /// `parseToolCallArguments`). The call fails validation with this text.
        #[serde(
            rename = "argumentsError",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        arguments_error: Option<String>,
        #[serde(
            rename = "thoughtSignature",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        thought_signature: Option<String>,
    },
    #[serde(rename = "image")]
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text {
            text: text.into(),
            text_signature: None,
        }
    }

    /// The block's wire JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Parses one block; `None` for unknown types or malformed blocks.
    pub fn from_value(v: &Value) -> Option<ContentBlock> {
        ContentBlock::deserialize(v).ok()
    }
}

/// Parses a content value: a string becomes one text block, an array its parsable blocks.
pub fn content_from_value(v: &Value) -> Vec<ContentBlock> {
    match v {
        Value::String(s) => vec![ContentBlock::text(s.clone())],
        Value::Array(items) => items.iter().filter_map(ContentBlock::from_value).collect(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Stop reason

/// Why a response ended. `Pending` only appears on the partial message of `message_start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    #[default]
    Pending,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Pending => "pending",
        }
    }

    pub fn parse(s: &str) -> Option<StopReason> {
        Some(match s {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            "pending" => StopReason::Pending,
            _ => return None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Assistant message

/// One assistant response (data-model.md §3.3). Serialized with pi's key orders by a
/// hand-written `Serialize`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    pub api: String,
    pub provider: String,
    pub model: String,
    /// The provider-reported model id when it differs from `model`.
    pub response_model: Option<String>,
    pub usage: Usage,
    pub stop_reason: StopReason,
    /// Request start, Unix milliseconds.
    pub timestamp: u64,
    pub response_id: Option<String>,
    pub error_message: Option<String>,
    pub raw_stop_reason: Option<String>,
    pub duration_ms: Option<u64>,
    pub thinking_level: Option<ThinkingLevel>,
    /// pi's `providerThinkingLevel` (models with `supportsMidConvoEffort`): the effort the
    /// model was told for this turn in mid-conversation markers (Anthropic's `output_config`
    /// system messages, the Responses API's `configuration_update` items); later requests
    /// mark this message's turn with it.
    pub provider_thinking_level: Option<String>,
    /// The level was known before the request (Responses): pi then writes it right after
    /// `model`; set during the exchange (Anthropic), after `timestamp`.
    pub provider_thinking_level_early: bool,
    /// pi's `diagnostics`: what the provider adapter did about a rejected request (e.g. the
    /// Anthropic strict-tools downgrade), as pi records it.
    pub diagnostics: Vec<Value>,
    /// The first diagnostic came after the reply streamed: pi's `diagnostics` key then
    /// follows `rawStopReason` / `errorMessage` instead of `providerThinkingLevel`.
    pub diagnostics_after_reply: bool,
    /// The aborted turn synthesized after an aborted tool batch: `errorMessage` is written right
    /// after `stopReason`. Not serialized itself.
    pub synthetic: bool,
}

impl AssistantMessage {
    /// An empty `pending` message for `model`, stamped now.
    pub fn new(model: &Model, timestamp: u64) -> AssistantMessage {
        AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            timestamp,
            ..AssistantMessage::default()
        }
    }

    /// The message's wire JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Parses a stored assistant message (tolerant: unknown fields are ignored, missing optional
    /// fields are `None`, unparsable content blocks are skipped). `None` when `v` is not an
    /// object with `role:"assistant"` (a missing role is accepted).
    pub fn from_value(v: &Value) -> Option<AssistantMessage> {
        let o = v.as_object()?;
        if let Some(role) = o.get("role") {
            if role.as_str() != Some("assistant") {
                return None;
            }
        }
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        let n = |k: &str| o.get(k).and_then(number_to_u64);
        Some(AssistantMessage {
            content: o.get("content").map(content_from_value).unwrap_or_default(),
            api: s("api").unwrap_or_default(),
            provider: s("provider").unwrap_or_default(),
            model: s("model").unwrap_or_default(),
            response_model: s("responseModel"),
            usage: o
                .get("usage")
                .and_then(|u| Usage::deserialize(u).ok())
                .unwrap_or_default(),
            stop_reason: o
                .get("stopReason")
                .and_then(Value::as_str)
                .and_then(StopReason::parse)
                .unwrap_or(StopReason::Stop),
            timestamp: n("timestamp").unwrap_or(0),
            response_id: s("responseId"),
            error_message: s("errorMessage"),
            raw_stop_reason: s("rawStopReason"),
            duration_ms: n("durationMs"),
            thinking_level: o
                .get("thinkingLevel")
                .and_then(Value::as_str)
                .and_then(ThinkingLevel::parse),
            provider_thinking_level: s("providerThinkingLevel"),
            provider_thinking_level_early: {
                let keys: Vec<&String> = o.keys().collect();
                keys.iter().position(|k| *k == "model").is_some_and(|i| {
                    keys.get(i + 1)
                        .is_some_and(|k| *k == "providerThinkingLevel")
                })
            },
            diagnostics: o
                .get("diagnostics")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            diagnostics_after_reply: {
                let at = |k: &str| o.keys().position(|x| x == k);
                at("diagnostics").is_some_and(|d| {
                    ["responseId", "responseModel", "rawStopReason"]
                        .iter()
                        .any(|k| at(k).is_some_and(|p| p < d))
                })
            },
            synthetic: false,
        })
    }

    /// Concatenated text of the text blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.content {
            if let ContentBlock::Text { text, .. } = b {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool-call blocks, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ContentBlock> {
        self.content
            .iter()
            .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
    }
}

impl Serialize for AssistantMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("role", "assistant")?;
        m.serialize_entry("content", &self.content)?;
        m.serialize_entry("api", &self.api)?;
        m.serialize_entry("provider", &self.provider)?;
        m.serialize_entry("model", &self.model)?;
        if let (Some(v), true) = (
            &self.provider_thinking_level,
            self.provider_thinking_level_early,
        ) {
            m.serialize_entry("providerThinkingLevel", v)?;
        }
        m.serialize_entry("usage", &self.usage)?;
        m.serialize_entry("stopReason", &self.stop_reason)?;
        if self.synthetic {
            if let Some(e) = &self.error_message {
                m.serialize_entry("errorMessage", e)?;
            }
        }
        m.serialize_entry("timestamp", &self.timestamp)?;
        if let (Some(v), false) = (
            &self.provider_thinking_level,
            self.provider_thinking_level_early,
        ) {
            m.serialize_entry("providerThinkingLevel", v)?;
        }
        if !self.diagnostics.is_empty() && !self.diagnostics_after_reply {
            m.serialize_entry("diagnostics", &self.diagnostics)?;
        }
        if let Some(v) = &self.response_id {
            m.serialize_entry("responseId", v)?;
        }
        if let Some(v) = &self.response_model {
            m.serialize_entry("responseModel", v)?;
        }
        if let Some(v) = &self.raw_stop_reason {
            m.serialize_entry("rawStopReason", v)?;
        }
        if !self.synthetic {
            if let Some(e) = &self.error_message {
                m.serialize_entry("errorMessage", e)?;
            }
        }
        if !self.diagnostics.is_empty() && self.diagnostics_after_reply {
            m.serialize_entry("diagnostics", &self.diagnostics)?;
        }
        if let Some(v) = &self.duration_ms {
            m.serialize_entry("durationMs", v)?;
        }
        if let Some(v) = &self.thinking_level {
            m.serialize_entry("thinkingLevel", v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for AssistantMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        AssistantMessage::from_value(&v)
            .ok_or_else(|| serde::de::Error::custom("expected an assistant message object"))
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming events

/// One streaming event of an assistant response (providers.md §1). `content_index` is the
/// index of the block in `AssistantMessage.content`.
#[derive(Clone, Debug, PartialEq)]
pub enum AssistantEvent {
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
        content: String,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
    },
    ToolcallStart {
        content_index: usize,
        id: String,
        tool_name: String,
    },
    ToolcallDelta {
        content_index: usize,
        delta: String,
    },
    ToolcallEnd {
        content_index: usize,
        tool_call: ContentBlock,
    },
}

impl AssistantEvent {
    pub fn content_index(&self) -> usize {
        match self {
            AssistantEvent::TextStart { content_index }
            | AssistantEvent::TextDelta { content_index, .. }
            | AssistantEvent::TextEnd { content_index, .. }
            | AssistantEvent::ThinkingStart { content_index }
            | AssistantEvent::ThinkingDelta { content_index, .. }
            | AssistantEvent::ThinkingEnd { content_index, .. }
            | AssistantEvent::ToolcallStart { content_index, .. }
            | AssistantEvent::ToolcallDelta { content_index, .. }
            | AssistantEvent::ToolcallEnd { content_index, .. } => *content_index,
        }
    }

    /// The wire `type` (`text_delta`, `toolcall_end`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            AssistantEvent::TextStart { .. } => "text_start",
            AssistantEvent::TextDelta { .. } => "text_delta",
            AssistantEvent::TextEnd { .. } => "text_end",
            AssistantEvent::ThinkingStart { .. } => "thinking_start",
            AssistantEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantEvent::ToolcallStart { .. } => "toolcall_start",
            AssistantEvent::ToolcallDelta { .. } => "toolcall_delta",
            AssistantEvent::ToolcallEnd { .. } => "toolcall_end",
        }
    }

    /// Appends [`AssistantEvent::to_wire`] as compact JSON (the bytes `JSON.stringify` gives),
    /// without building the object: this runs once per streamed delta.
    pub fn write_wire(&self, out: &mut String) {
        use crate::js::json::push_js_string;
        let (key, text) = match self {
            AssistantEvent::TextStart { .. } | AssistantEvent::ThinkingStart { .. } => ("", ""),
            AssistantEvent::TextDelta { delta, .. }
            | AssistantEvent::ThinkingDelta { delta, .. }
            | AssistantEvent::ToolcallDelta { delta, .. } => ("delta", delta.as_str()),
            AssistantEvent::TextEnd { content, .. }
            | AssistantEvent::ThinkingEnd { content, .. } => ("content", content.as_str()),
            // Rare, and the tool call's arguments are any JSON: the general path.
            AssistantEvent::ToolcallStart { .. } | AssistantEvent::ToolcallEnd { .. } => {
                out.push_str(&crate::js::json::js_stringify(&self.to_wire()));
                return;
            }
        };
        out.push_str("{\"type\":\"");
        out.push_str(self.type_name());
        out.push_str("\",\"contentIndex\":");
        match u8::try_from(self.content_index()) {
            Ok(ci) if ci < 10 => out.push(char::from(b'0' + ci)),
            _ => {
                use std::fmt::Write as _;
                let _ = write!(out, "{}", self.content_index());
            }
        }
        if !key.is_empty() {
            out.push_str(",\"");
            out.push_str(key);
            out.push_str("\":");
            push_js_string(out, text);
        }
        out.push('}');
    }

    /// The `assistantMessageEvent` object of a wire `message_update` (rpc-protocol.md §7).
    pub fn to_wire(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(self.type_name()));
        m.insert("contentIndex".into(), Value::from(self.content_index()));
        match self {
            AssistantEvent::TextStart { .. } | AssistantEvent::ThinkingStart { .. } => {}
            AssistantEvent::TextDelta { delta, .. }
            | AssistantEvent::ThinkingDelta { delta, .. }
            | AssistantEvent::ToolcallDelta { delta, .. } => {
                m.insert("delta".into(), Value::from(delta.as_str()));
            }
            AssistantEvent::TextEnd { content, .. }
            | AssistantEvent::ThinkingEnd { content, .. } => {
                m.insert("content".into(), Value::from(content.as_str()));
            }
            AssistantEvent::ToolcallStart { id, tool_name, .. } => {
                m.insert("id".into(), Value::from(id.as_str()));
                m.insert("toolName".into(), Value::from(tool_name.as_str()));
            }
            AssistantEvent::ToolcallEnd { tool_call, .. } => {
                m.insert("toolCall".into(), tool_call.to_value());
            }
        }
        Value::Object(m)
    }
}

// ---------------------------------------------------------------------------------------------
// Request context

/// A tool the model may call: name, description and a JSON schema for its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "empty_object")]
    pub parameters: Value,
    /// The tool asks for strict JSON-schema sampling when the provider offers it (pi's
    /// `constrainedSampling: {type:"json_schema", strict:"prefer"}`, set on read, bash, edit
    /// and write); see `strict_schema.rs`.
    #[serde(skip)]
    pub strict_prefer: bool,
}

/// A system message of the transcript (parsed and rendered in `llm::transcript`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemMessage {
    /// The text of its `content` (a string, or text blocks joined with `\n`).
    pub content: String,
    /// Its `sections`, in order: `None` removes a section.
    pub sections: Vec<(String, Option<String>)>,
    /// Tools declared (added, or redefined under the same name).
    pub tools_added: Vec<ToolSpec>,
    /// Names of the tools removed.
    pub tools_removed: Vec<String>,
    /// When it was written, Unix milliseconds.
    pub timestamp: u64,
}

/// A message as the provider adapters see it (after `convert::convert_to_llm`).
// The assistant variant is larger than the others; a request holds a few hundred of these at
// most, built once, so boxing would only cost ergonomics.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum LlmMessage {
    /// Text and image blocks.
    User {
        content: Vec<ContentBlock>,
        timestamp: u64,
        /// The transcript stored the content as a plain string (then `content` is one text
        /// block); pi sends such a message's content as a string where the API allows it.
        as_string: bool,
    },
    Assistant(AssistantMessage),
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        content: Vec<ContentBlock>,
        is_error: bool,
    },
    /// A later system message kept in place, for a model that accepts system messages
    /// mid-conversation (`compat.supportsMidConvoSystemMessages`); other models never see one
    /// (their system messages fold into `system_prompt` and `tools`).
    System(SystemMessage),
}

/// Everything one request sends besides the options: the rendered system prompt, the
/// conversation and the current tools.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmContext {
    pub system_prompt: String,
    pub messages: Vec<LlmMessage>,
    pub tools: Vec<ToolSpec>,
    /// The transcript as pi's `convertToLlm` leaves it (system messages in place, JSON as
    /// stored), for the wire APIs that send it verbatim (`pi-messages`). `None` when the
    /// request was not built from a transcript (a summary): such an API then sends pi's
    /// normalized form of `system_prompt`, `tools` and `messages`.
    pub transcript: Option<Vec<Value>>,
    /// The transcript's leading system message, for a model that accepts system messages
    /// mid-conversation: `system_prompt` is then its text alone, and the later ones are
    /// [`LlmMessage::System`] items in place. `None` otherwise.
    pub leading_system: Option<SystemMessage>,
}

/// Prompt caching preference (pi's `cacheRetention`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheRetention {
    /// No cache markers (summarization requests).
    None,
    /// `{"type":"ephemeral"}` (pi's default).
    #[default]
    Short,
    /// `{"type":"ephemeral","ttl":"1h"}` where supported.
    Long,
}

impl CacheRetention {
    /// `Long` when `PI_CACHE_RETENTION=long`, else `Short` (pi's default resolution).
    pub fn from_env() -> CacheRetention {
        match std::env::var("PI_CACHE_RETENTION") {
            Ok(v) if v == "long" => CacheRetention::Long,
            _ => CacheRetention::Short,
        }
    }
}

/// Per-request options.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamOptions {
    /// The credential for the API's own key header; `None` when the credential travels in
    /// `headers` (e.g. `Authorization`).
    pub api_key: Option<String>,
    /// The requested level; adapters clamp it onto the model.
    pub thinking_level: ThinkingLevel,
    pub thinking_budgets: ThinkingBudgets,
    /// Output cap; `None` = `model.maxTokens` fitted into the context window (providers.md §1).
    pub max_tokens: Option<u64>,
    pub cache_retention: CacheRetention,
    /// Longest wait for response headers or for the next bytes of the body.
    pub idle_timeout: Duration,
    /// Extra request headers (provider and model headers, resolved), applied last.
    pub headers: Vec<(String, String)>,
    pub session_id: Option<String>,
    /// Provider settings the wire API reads at request time, resolved from the environment
    /// (a stored auth.json `env` first): pi's `options.env` lookups, e.g. Azure's endpoint, API
    /// version and deployment map. Only the variables the API reads are present.
    pub env: Vec<(String, String)>,
}

impl StreamOptions {
    /// The value of the provider setting `name`, when set and non-empty.
    pub fn env_value(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, v)| n == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            api_key: None,
            thinking_level: ThinkingLevel::default(),
            thinking_budgets: ThinkingBudgets::default(),
            max_tokens: None,
            cache_retention: CacheRetention::default(),
            idle_timeout: Duration::from_secs(600),
            headers: Vec::new(),
            session_id: None,
            env: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mock_model() -> Model {
        Model {
            id: "mock-sonnet".into(),
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            cost: super::super::model::ModelCost {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                tiers: None,
            },
            ..Model::default()
        }
    }

    #[test]
    fn empty_usage_wire_form() {
        assert_eq!(
            serde_json::to_string(&Usage::empty()).unwrap(),
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#
        );
    }

    #[test]
    fn usage_cost_matches_golden() {
        // plain_text golden: message_start usage.
        let mut u = Usage {
            input: 120,
            output: 1,
            cache_read: 30,
            cache_write: 10,
            cache_write_1h: Some(0),
            ..Usage::default()
        };
        u.total_tokens = u.sum_tokens();
        u.recompute_cost(&mock_model());
        let want: Value = serde_json::from_str(
            r#"{"input":120,"output":1,"cacheRead":30,"cacheWrite":10,"totalTokens":161,"cost":{"input":0.00036,"output":1.5e-5,"cacheRead":9e-6,"cacheWrite":3.75e-5,"total":0.0004215,"totalFromProvider":false},"cacheWrite1h":0}"#,
        )
        .unwrap();
        let got = serde_json::to_value(&u).unwrap();
        assert_eq!(got, want);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
        let with_reasoning = Usage {
            reasoning: Some(0),
            ..Usage::default()
        };
        assert_eq!(
            serde_json::to_value(&with_reasoning).unwrap(),
            json!({"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}})
        );
        let keys: Vec<String> = serde_json::to_value(&with_reasoning)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "input",
                "output",
                "cacheRead",
                "cacheWrite",
                "reasoning",
                "totalTokens",
                "cost"
            ]
        );
        let back: Usage = serde_json::from_value(serde_json::to_value(&u).unwrap()).unwrap();
        assert_eq!(back, u);
    }

    #[test]
    fn content_blocks_wire_forms() {
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::Text {
                text: "t".into(),
                text_signature: Some("s".into()),
            },
            ContentBlock::Thinking {
                thinking: "[Reasoning redacted]".into(),
                thinking_signature: Some("enc".into()),
                redacted: true,
            },
            ContentBlock::Thinking {
                thinking: "x".into(),
                thinking_signature: None,
                redacted: false,
            },
            ContentBlock::ToolCall {
                id: "toolu_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                arguments_error: None,
                thought_signature: None,
            },
            ContentBlock::Image {
                data: "AAA".into(),
                mime_type: "image/png".into(),
            },
        ];
        let v = serde_json::to_string(&blocks).unwrap();
        assert_eq!(
            v,
            concat!(
                r#"[{"type":"text","text":"hi"},{"type":"text","text":"t","textSignature":"s"},"#,
                r#"{"type":"thinking","thinking":"[Reasoning redacted]","thinkingSignature":"enc","redacted":true},"#,
                r#"{"type":"thinking","thinking":"x"},"#,
                r#"{"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"ls"}},"#,
                r#"{"type":"image","data":"AAA","mimeType":"image/png"}]"#
            )
        );
        let back: Vec<ContentBlock> = serde_json::from_str(&v).unwrap();
        assert_eq!(back, blocks);
        // Tolerant: unknown fields ignored, missing arguments → {}.
        assert_eq!(
            ContentBlock::from_value(&json!({"type":"toolCall","id":"a","name":"b","extra":1})),
            Some(ContentBlock::ToolCall {
                id: "a".into(),
                name: "b".into(),
                arguments: json!({}),
                arguments_error: None,
                thought_signature: None
            })
        );
        assert_eq!(ContentBlock::from_value(&json!({"type":"weird"})), None);
        assert_eq!(
            content_from_value(&json!("hello")),
            vec![ContentBlock::text("hello")]
        );
    }

    fn done_message() -> AssistantMessage {
        AssistantMessage {
            content: vec![ContentBlock::text("All done.")],
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            model: "mock-model".into(),
            usage: Usage::empty(),
            stop_reason: StopReason::Stop,
            timestamp: 1795995375871,
            response_id: Some("msg_1".into()),
            raw_stop_reason: Some("end_turn".into()),
            duration_ms: Some(152),
            thinking_level: Some(ThinkingLevel::Medium),
            ..AssistantMessage::default()
        }
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn assistant_key_orders() {
        let m = done_message();
        let v = m.to_value();
        assert_eq!(
            keys(&v),
            [
                "role",
                "content",
                "api",
                "provider",
                "model",
                "usage",
                "stopReason",
                "timestamp",
                "responseId",
                "rawStopReason",
                "durationMs",
                "thinkingLevel"
            ]
        );
        assert_eq!(v["stopReason"], "stop");
        assert_eq!(v["thinkingLevel"], "medium");

        let mut aborted = done_message();
        aborted.stop_reason = StopReason::Aborted;
        aborted.raw_stop_reason = None;
        aborted.error_message = Some("This operation was aborted".into());
        assert_eq!(
            keys(&aborted.to_value()),
            [
                "role",
                "content",
                "api",
                "provider",
                "model",
                "usage",
                "stopReason",
                "timestamp",
                "responseId",
                "errorMessage",
                "durationMs",
                "thinkingLevel"
            ]
        );

        let mut synthetic = aborted.clone();
        synthetic.synthetic = true;
        synthetic.response_id = None;
        synthetic.content.clear();
        assert_eq!(
            keys(&synthetic.to_value()),
            [
                "role",
                "content",
                "api",
                "provider",
                "model",
                "usage",
                "stopReason",
                "errorMessage",
                "timestamp",
                "durationMs",
                "thinkingLevel"
            ]
        );

        let pending = AssistantMessage::new(
            &Model {
                id: "m".into(),
                api: "a".into(),
                provider: "p".into(),
                ..Model::default()
            },
            5,
        );
        assert_eq!(
            serde_json::to_string(&pending).unwrap(),
            r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"pending","timestamp":5}"#
        );
    }

    #[test]
    fn assistant_round_trip_and_tolerance() {
        let m = done_message();
        let back = AssistantMessage::from_value(&m.to_value()).unwrap();
        assert_eq!(back, m);
        let de: AssistantMessage = serde_json::from_value(m.to_value()).unwrap();
        assert_eq!(de, m);
        let loose = AssistantMessage::from_value(&json!({
            "role": "assistant",
            "content": [{"type":"text","text":"x"}, {"type":"unknown"}],
            "api": "openai-completions",
            "stopReason": "toolUse",
            "diagnostics": [1, 2],
            "timestamp": 12.0
        }))
        .unwrap();
        assert_eq!(loose.content, vec![ContentBlock::text("x")]);
        assert_eq!(loose.stop_reason, StopReason::ToolUse);
        assert_eq!(loose.timestamp, 12);
        assert_eq!(loose.usage, Usage::empty());
        assert!(AssistantMessage::from_value(&json!({"role":"user"})).is_none());
        assert!(AssistantMessage::from_value(&json!([])).is_none());
    }

    #[test]
    fn event_wire_forms() {
        let evs = [
            (
                AssistantEvent::TextStart { content_index: 0 },
                json!({"type":"text_start","contentIndex":0}),
            ),
            (
                AssistantEvent::TextDelta {
                    content_index: 1,
                    delta: "ab".into(),
                },
                json!({"type":"text_delta","contentIndex":1,"delta":"ab"}),
            ),
            (
                AssistantEvent::ThinkingEnd {
                    content_index: 0,
                    content: "t".into(),
                },
                json!({"type":"thinking_end","contentIndex":0,"content":"t"}),
            ),
            (
                AssistantEvent::ToolcallStart {
                    content_index: 2,
                    id: "toolu_C".into(),
                    tool_name: "bash".into(),
                },
                json!({"type":"toolcall_start","contentIndex":2,"id":"toolu_C","toolName":"bash"}),
            ),
            (
                AssistantEvent::ToolcallDelta {
                    content_index: 2,
                    delta: "".into(),
                },
                json!({"type":"toolcall_delta","contentIndex":2,"delta":""}),
            ),
            (
                AssistantEvent::ToolcallEnd {
                    content_index: 2,
                    tool_call: ContentBlock::ToolCall {
                        id: "toolu_C".into(),
                        name: "bash".into(),
                        arguments: json!({"command":"sleep 5; echo C"}),
                        arguments_error: None,
                        thought_signature: None,
                    },
                },
                json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"toolu_C","name":"bash","arguments":{"command":"sleep 5; echo C"}}}),
            ),
        ];
        for (ev, want) in evs {
            let got = ev.to_wire();
            assert_eq!(got, want);
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap()
            );
            let mut line = String::new();
            ev.write_wire(&mut line);
            assert_eq!(line, crate::js::json::js_stringify(&want));
        }
    }

    /// The hand-written wire text is the serialized object, for every kind and awkward text.
    #[test]
    fn write_wire_is_the_serialized_wire_object() {
        let texts = [
            "",
            "a",
            "\"q\" \\ \n\r\t\u{1}\u{1f}",
            "ünï 日本 🦀 \u{2028}",
        ];
        for ci in [0, 7, 10, 123_456] {
            let mut evs = vec![
                AssistantEvent::TextStart { content_index: ci },
                AssistantEvent::ThinkingStart { content_index: ci },
            ];
            for t in texts {
                evs.extend([
                    AssistantEvent::TextDelta {
                        content_index: ci,
                        delta: t.into(),
                    },
                    AssistantEvent::ThinkingDelta {
                        content_index: ci,
                        delta: t.into(),
                    },
                    AssistantEvent::ToolcallDelta {
                        content_index: ci,
                        delta: t.into(),
                    },
                    AssistantEvent::TextEnd {
                        content_index: ci,
                        content: t.into(),
                    },
                    AssistantEvent::ThinkingEnd {
                        content_index: ci,
                        content: t.into(),
                    },
                    AssistantEvent::ToolcallStart {
                        content_index: ci,
                        id: t.into(),
                        tool_name: t.into(),
                    },
                ]);
            }
            for ev in evs {
                let mut line = String::from("[");
                ev.write_wire(&mut line);
                assert_eq!(
                    line,
                    format!("[{}", crate::js::json::js_stringify(&ev.to_wire()))
                );
            }
        }
    }
}
