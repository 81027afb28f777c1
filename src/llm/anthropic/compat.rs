//! The compat switches of `model.compat` the Anthropic adapter reads (providers.md §6.4), and
//! tests of the request bodies they produce.

use serde::Deserialize;

use super::*;
use crate::llm::model::ModelCost;

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
    pub supports_strict_tools: bool,
    /// Effort markers (`{"role":"system","output_config":…}`) before each reply.
    pub supports_mid_convo_effort: bool,
    pub supports_mid_convo_system_messages: bool,
    pub supports_mid_convo_tool_changes: bool,
    /// Message threads; by default only on Anthropic's own endpoint (gateways may drop the
    /// unknown `thread` field).
    pub supports_message_threads: bool,
    /// `allowedFallbackModels`: the server may answer with one of these.
    pub allowed_fallback_models: Vec<FallbackModel>,
}

/// One entry of `compat.allowedFallbackModels`.
#[derive(Clone, Debug, PartialEq)]
pub struct FallbackModel {
    pub provider: String,
    pub model: String,
    pub cost: Option<ModelCost>,
}

impl FallbackModel {
    fn of(v: &Value) -> Option<FallbackModel> {
        Some(FallbackModel {
            provider: v.get("provider")?.as_str()?.to_owned(),
            model: v.get("model")?.as_str()?.to_owned(),
            cost: v.get("cost").and_then(|c| ModelCost::deserialize(c).ok()),
        })
    }
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
            supports_strict_tools: b("supportsStrictTools", false),
            supports_mid_convo_effort: b("supportsMidConvoEffort", false),
            supports_mid_convo_system_messages: b("supportsMidConvoSystemMessages", false),
            supports_mid_convo_tool_changes: b("supportsMidConvoToolChanges", false),
            supports_message_threads: b(
                "supportsMessageThreads",
                model.base_url.contains("api.anthropic.com"),
            ),
            allowed_fallback_models: model
                .compat
                .as_ref()
                .and_then(|c| c.get("allowedFallbackModels"))
                .and_then(Value::as_array)
                .map(|list| list.iter().filter_map(FallbackModel::of).collect())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::llm::stream::StreamUpdate;

    /// A model with pi's newest Anthropic compat (claude-opus-5-5 of the catalog).
    fn managed_model() -> Model {
        let mut m = mock_sonnet();
        m.provider = "anthropic".into();
        m.max_tokens = 128_000;
        m.context_window = 1_000_000;
        m.thinking_level_map = json!({"off": null, "minimal": null, "low": "low",
            "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "max"})
        .as_object()
        .cloned();
        m.compat = json!({"forceAdaptiveThinking": true, "supportsTemperature": false,
            "supportsMidConvoEffort": true, "supportsMidConvoSystemMessages": true,
            "supportsMidConvoToolChanges": true, "supportsStrictTools": true})
        .as_object()
        .cloned();
        m
    }

    fn user(text: &str) -> LlmMessage {
        LlmMessage::User {
            content: vec![ContentBlock::text(text)],
            timestamp: 1,
            as_string: false,
        }
    }

    fn reply(provider: &str, level: Option<&str>, content: Vec<ContentBlock>) -> LlmMessage {
        LlmMessage::Assistant(AssistantMessage {
            content,
            api: "anthropic-messages".into(),
            provider: provider.into(),
            model: "mock-sonnet".into(),
            stop_reason: StopReason::Stop,
            provider_thinking_level: level.map(str::to_owned),
            ..AssistantMessage::default()
        })
    }

    fn bash_tool() -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run".into(),
            parameters: json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
            strict_prefer: false,
        }
    }

    fn beta(r: &BuiltRequest) -> Option<&str> {
        r.headers
            .iter()
            .find(|(n, _)| n == "anthropic-beta")
            .map(|(_, v)| v.as_str())
    }

    /// Mid-conversation effort and native tool changes: an effort marker before each earlier
    /// reply of this provider that recorded its effort (none for another provider's or an
    /// unrecorded one), one with the active effort at the end after the cached last message,
    /// the fixed low top-level effort, block_binding, the placeholder after the real tools
    /// (which keep the cache marker) and the three betas.
    #[test]
    fn mid_convo_effort_and_native_tool_changes_whole_body() {
        let model = managed_model();
        let ctx = LlmContext {
            system_prompt: "SYS".into(),
            messages: vec![
                user("Run echo"),
                reply(
                    "anthropic",
                    Some("high"),
                    vec![ContentBlock::ToolCall {
                        id: "toolu_1".into(),
                        name: "bash".into(),
                        arguments: json!({"command": "echo"}),
                        arguments_error: None,
                        thought_signature: None,
                    }],
                ),
                LlmMessage::ToolResult {
                    tool_call_id: "toolu_1".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::text("ok")],
                    is_error: false,
                },
                reply(
                    "anthropic",
                    Some("medium"),
                    vec![ContentBlock::text("Done.")],
                ),
                user("Again"),
                reply(
                    "other",
                    Some("low"),
                    vec![ContentBlock::text("From elsewhere.")],
                ),
                reply(
                    "anthropic",
                    Some("minimal"),
                    vec![ContentBlock::text("Odd level.")],
                ),
                user("Now answer"),
            ],
            tools: vec![bash_tool()],
            transcript: None,
            leading_system: None,
        };
        let mut o = opts();
        o.thinking_level = ThinkingLevel::Max;
        let r = build_request(&model, &ctx, &o).unwrap();
        let marker = |e: &str| json!({"role":"system","content":[],"output_config":{"effort":e}});
        let cc = json!({"type":"ephemeral"});
        assert_eq!(
            r.body,
            json!({
                "model": "mock-sonnet",
                "messages": [
                    {"role":"user","content":[{"type":"text","text":"Run echo"}]},
                    marker("high"),
                    {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"echo"}}]},
                    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok","is_error":false}]},
                    marker("medium"),
                    {"role":"assistant","content":[{"type":"text","text":"Done."}]},
                    {"role":"user","content":[{"type":"text","text":"Again"}]},
                    {"role":"assistant","content":[{"type":"text","text":"From elsewhere."}]},
                    {"role":"assistant","content":[{"type":"text","text":"Odd level."}]},
                    {"role":"user","content":[{"type":"text","text":"Now answer","cache_control":cc}]},
                    marker("max")
                ],
                "max_tokens": 128000,
                "stream": true,
                "system": [{"type":"text","text":"SYS","cache_control":cc}],
                "tools": [
                    {"name":"bash","description":"Run","eager_input_streaming":true,
                     "input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]},
                     "cache_control":cc},
                    {"name":"__pi_deferred_placeholder__",
                     "description":"Reserved placeholder. Never available. Never call this.",
                     "input_schema":{"type":"object","properties":{},"required":[]},
                     "defer_loading":true}
                ],
                "thinking": {"type":"adaptive","display":"summarized",
                             "block_binding":{"prefix_mismatch_behavior":"drop_block"}},
                "output_config": {"effort":"low"}
            })
        );
        let keys: Vec<&str> = r
            .body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "model",
                "messages",
                "max_tokens",
                "stream",
                "system",
                "tools",
                "thinking",
                "output_config"
            ]
        );
        assert_eq!(
            beta(&r),
            Some("mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01,inline-tools-2026-09-15")
        );
        assert_eq!(r.provider_thinking_level.as_deref(), Some("max"));

        // No tools: no placeholder and no inline-tools beta.
        let mut bare = ctx.clone();
        bare.tools.clear();
        let r = build_request(&model, &bare, &o).unwrap();
        assert!(r.body.get("tools").is_none());
        assert_eq!(
            beta(&r),
            Some("mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01")
        );
    }

    /// Effort without native tool changes (opencode-go's Claude): thinking off is allowed, so
    /// off sends disabled thinking, no markers and no effort, but keeps the effort betas; a
    /// level maps through the model's map, and a model that does not force adaptive thinking
    /// asks for high.
    #[test]
    fn mid_convo_effort_thinking_off_and_unforced() {
        let mut model = managed_model();
        model.thinking_level_map = json!({"xhigh": "xhigh", "max": "max"}).as_object().cloned();
        model.compat = json!({"forceAdaptiveThinking": true, "supportsMidConvoEffort": true})
            .as_object()
            .cloned();
        let ctx = LlmContext {
            system_prompt: String::new(),
            messages: vec![
                user("Run echo"),
                reply("anthropic", Some("medium"), vec![ContentBlock::text("Hi.")]),
                user("Again"),
            ],
            tools: vec![bash_tool()],
            transcript: None,
            leading_system: None,
        };
        let mut o = opts();
        o.cache_retention = CacheRetention::None;
        o.thinking_level = ThinkingLevel::Off;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(
            r.body["messages"],
            json!([
                {"role":"user","content":[{"type":"text","text":"Run echo"}]},
                {"role":"assistant","content":[{"type":"text","text":"Hi."}]},
                {"role":"user","content":[{"type":"text","text":"Again"}]}
            ])
        );
        assert_eq!(r.body["thinking"], json!({"type":"disabled"}));
        assert!(r.body.get("output_config").is_none());
        assert_eq!(r.body["tools"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            beta(&r),
            Some("mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01")
        );
        assert_eq!(r.provider_thinking_level, None);

        o.thinking_level = ThinkingLevel::Minimal;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(
            r.body["messages"][1],
            json!({"role":"system","content":[],"output_config":{"effort":"medium"}})
        );
        assert_eq!(
            r.body["messages"][4],
            json!({"role":"system","content":[],"output_config":{"effort":"low"}})
        );
        assert_eq!(r.body["output_config"], json!({"effort":"low"}));

        // Without forced adaptive thinking pi passes no effort: the markers ask for high, and
        // the budget path still decides max_tokens and the interleaved beta.
        model.compat = json!({"supportsMidConvoEffort": true}).as_object().cloned();
        model.max_tokens = 64_000;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(
            r.body["messages"][4],
            json!({"role":"system","content":[],"output_config":{"effort":"high"}})
        );
        assert_eq!(
            r.body["thinking"],
            json!({"type":"adaptive","display":"summarized","block_binding":{"prefix_mismatch_behavior":"drop_block"}})
        );
        assert_eq!(
            beta(&r),
            Some("interleaved-thinking-2025-05-14,mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01")
        );
        assert_eq!(r.provider_thinking_level.as_deref(), Some("high"));
    }

    /// allowedFallbackModels: `fallbacks` last in the body, the server-side-fallback beta first
    /// of the computed ones; an explicit anthropic-beta header still replaces the list.
    #[test]
    fn allowed_fallback_models() {
        let mut model = managed_model();
        model.compat = json!({"forceAdaptiveThinking": true, "supportsMidConvoEffort": true,
            "allowedFallbackModels": [
                {"provider": "anthropic", "model": "claude-opus-4-8",
                 "cost": {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}},
                {"provider": "anthropic", "model": "claude-opus-5"}]})
        .as_object()
        .cloned();
        let ctx = LlmContext {
            system_prompt: String::new(),
            messages: vec![user("hi")],
            tools: vec![],
            transcript: None,
            leading_system: None,
        };
        let mut o = opts();
        o.thinking_level = ThinkingLevel::High;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(
            r.body["fallbacks"],
            json!([{"model": "claude-opus-4-8"}, {"model": "claude-opus-5"}])
        );
        let keys: Vec<&str> = r
            .body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.last(), Some(&"fallbacks"));
        assert_eq!(
            beta(&r),
            Some("server-side-fallback-2026-07-01,mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01")
        );
        o.headers = vec![("anthropic-beta".into(), "x".into())];
        assert_eq!(beta(&build_request(&model, &ctx, &o).unwrap()), Some("x"));
    }

    /// A reply from an allowed fallback model is priced with that model's cost (and names it
    /// in responseModel); an unknown responder keeps the model's own prices.
    #[test]
    fn fallback_reply_uses_the_fallback_cost() {
        let mut model = managed_model();
        model.compat = json!({"allowedFallbackModels": [
            {"provider": "anthropic", "model": "claude-opus-5",
             "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}]})
        .as_object()
        .cloned();
        let tools: Vec<ToolSpec> = Vec::new();
        let start = |responder: &str| {
            json!({"type":"message_start","message":{"id":"m","model":responder,
                "usage":{"input_tokens":1_000_000,"output_tokens":0}}})
            .to_string()
        };
        let mut cb = |_: StreamUpdate<'_>| {};
        let mut out = StreamedMessage::new(&model, &mut cb);
        let mut st = StreamState::new(&model, false, &tools);
        st.handle(Some("message_start"), &start("claude-opus-5"), &mut out)
            .unwrap();
        assert_eq!(out.msg.response_model.as_deref(), Some("claude-opus-5"));
        assert_eq!(out.msg.usage.cost.input, 1.0);
        let mut st = StreamState::new(&model, false, &tools);
        st.handle(Some("message_start"), &start("claude-other"), &mut out)
            .unwrap();
        assert_eq!(out.msg.usage.cost.input, 3.0);
    }

    /// Input transformations the server reported become a diagnostic on the clean reply, and
    /// the `diagnostics` key then follows `rawStopReason` (as pi appends it), also after a
    /// stored round trip.
    #[test]
    fn input_transformations_diagnostic() {
        let model = mock_sonnet();
        let tools: Vec<ToolSpec> = Vec::new();
        let mut cb = |_: StreamUpdate<'_>| {};
        let mut out = StreamedMessage::new(&model, &mut cb);
        let mut st = StreamState::new(&model, false, &tools);
        let events = [
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"m","model":"mock-sonnet",
                "usage":{"input_tokens":1,"output_tokens":0},
                "input_transformations":[{"type":"first"}]}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":"ok"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},
                "usage":{"output_tokens":1},
                "input_transformations":[{"type":"image_resized","path":"messages.0","reason":null}]}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ];
        for (name, data) in events {
            st.handle(Some(name), &data.to_string(), &mut out).unwrap();
        }
        WireApi::end(&mut st, Ok(()), &mut out).unwrap();
        let mut v = out.msg.to_value();
        assert_eq!(
            v["diagnostics"][0]["details"],
            json!({"transformations": [{"type": "image_resized", "path": "messages.0"}]})
        );
        assert_eq!(
            v["diagnostics"][0]["type"],
            "anthropic_input_transformations"
        );
        let keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys[keys.len() - 2..], ["rawStopReason", "diagnostics"]);
        let back = AssistantMessage::from_value(&v).unwrap();
        assert!(back.diagnostics_after_reply);
        v["timestamp"] = json!(0);
        assert_eq!(
            AssistantMessage::from_value(&v).unwrap().to_value()["diagnostics"],
            v["diagnostics"]
        );
    }
}
