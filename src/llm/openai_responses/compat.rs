//! The `compat` flags the Responses API reads (pi's `getCompat`), how the model takes tool
//! declarations (`getResponsesToolSupport`) and the mid-conversation effort
//! (`getConfigurationUpdateEffort`).

use super::*;
use crate::llm::transcript::ToolSupport;

/// The `compat` flags this API reads, with pi's defaults.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Compat {
    pub supports_developer_role: bool,
    pub supports_strict_mode: bool,
    pub supports_long_cache_retention: bool,
    pub supports_explicit_prompt_cache_mode: bool,
    pub supports_max_output_tokens: bool,
    pub prompt_cache_key_disabled: bool,
    /// `"openai"` (headers `session-id` + `x-client-request-id`), `"openrouter"`
    /// (`x-session-id`) or anything else (`x-client-request-id` only).
    pub session_affinity_format: String,
    pub supports_mid_convo_system_messages: bool,
    pub supports_additional_tools: bool,
    pub supports_tool_search: bool,
    pub supports_mid_convo_effort: bool,
}

impl Compat {
    pub fn of(model: &Model) -> Compat {
        let flag = |k: &str, d: bool| model.compat_bool(k).unwrap_or(d);
        let string = |k: &str| {
            model
                .compat
                .as_ref()
                .and_then(|c| c.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let detected = if model.provider == "openrouter" || model.base_url.contains("openrouter.ai")
        {
            "openrouter"
        } else {
            "openai"
        };
        Compat {
            supports_developer_role: flag("supportsDeveloperRole", true),
            supports_strict_mode: flag("supportsStrictMode", false),
            supports_long_cache_retention: flag("supportsLongCacheRetention", true),
            supports_explicit_prompt_cache_mode: flag("supportsExplicitPromptCacheMode", false),
            supports_max_output_tokens: flag("supportsMaxOutputTokens", true),
            prompt_cache_key_disabled: string("promptCacheKeyMode").as_deref() == Some("disabled"),
            session_affinity_format: string("sessionAffinityFormat")
                .unwrap_or_else(|| detected.to_owned()),
            supports_mid_convo_system_messages: flag("supportsMidConvoSystemMessages", false),
            supports_additional_tools: flag("supportsAdditionalTools", false),
            supports_tool_search: flag("supportsToolSearch", false),
            supports_mid_convo_effort: flag("supportsMidConvoEffort", false),
        }
    }

    /// How tool declarations travel (pi's `getResponsesToolSupport`): in place with
    /// `additional_tools` items, as synthetic tool searches, or only in the top-level `tools`.
    pub fn tool_support(&self) -> ToolSupport {
        if self.supports_mid_convo_system_messages && self.supports_additional_tools {
            ToolSupport::Changes
        } else if self.supports_tool_search {
            ToolSupport::Additions
        } else {
            ToolSupport::None
        }
    }
}

/// How `model` takes tool declarations (see [`Compat::tool_support`]).
pub fn tool_support(model: &Model) -> ToolSupport {
    Compat::of(model).tool_support()
}

/// A "Sign in with ChatGPT" token sent straight to OpenAI (not an `sk-` key): some request
/// fields are rejected there.
pub(super) fn is_chatgpt_sign_in(model: &Model, api_key: Option<&str>) -> bool {
    model.provider == "openai"
        && model.base_url == "https://api.openai.com/v1"
        && api_key.is_some_and(|k| !k.starts_with("sk-"))
}

/// The thinking level the request asks for: `Off` stays `Off` (pi's agent passes no
/// reasoning option then), any other level is clamped onto the model's levels.
pub(super) fn requested_level(model: &Model, opts: &StreamOptions) -> ThinkingLevel {
    match opts.thinking_level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    }
}

/// The effort value of a (non-off) level: the model's `thinkingLevelMap` entry, else the
/// level's own name.
pub(super) fn effort_value(model: &Model, level: ThinkingLevel) -> String {
    match level_mapping(model, level) {
        LevelMapping::Value(v) => v.to_owned(),
        _ => level.as_str().to_owned(),
    }
}

/// The effort carried by `configuration_update` input items (pi's
/// `getConfigurationUpdateEffort`), or `None` to send it as `reasoning.effort` alone: only with
/// `supportsMidConvoEffort`, a thinking level other than off, and not for a Sign in with
/// ChatGPT token (which rejects these items). It is also the message's
/// `providerThinkingLevel`.
pub fn configuration_update_effort(model: &Model, opts: &StreamOptions) -> Option<String> {
    let compat = Compat::of(model);
    let level = requested_level(model, opts);
    if !compat.supports_mid_convo_effort
        || level == ThinkingLevel::Off
        || is_chatgpt_sign_in(model, opts.api_key.as_deref())
    {
        return None;
    }
    Some(effort_value(model, level))
}

/// pi's `CONFIGURATION_UPDATE_REQUEST_EFFORT`: the fixed `reasoning.effort` while
/// `configuration_update` items carry the thinking level.
pub(super) const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// A `configuration_update` input item.
pub(super) fn configuration_update(effort: &str) -> Value {
    json!({"type": "configuration_update", "reasoning": {"effort": effort}})
}
