//! Request building for the Anthropic Messages API: body, headers, betas, cache markers,
//! thinking options and message/tool conversion.

use super::*;

/// A built request: where to send it, its headers and its JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// An OAuth (`sk-ant-oat…`) token: tool names travel in Claude Code's casing.
    pub oauth: bool,
    /// The managed effort (models with mid-conversation effort): the reply's
    /// `providerThinkingLevel`.
    pub provider_thinking_level: Option<String>,
    /// Some tool that only prefers strict sampling was sent strict.
    pub has_preferred_strict_tools: bool,
    /// Built with the preferred-strict tools sent non-strict.
    pub disabled_preferred_strict: bool,
    /// The computed beta list (part of a thread's fixed settings).
    pub betas: Vec<String>,
    /// The session whose requests use message threads, if they apply.
    pub thread_session: Option<String>,
    /// No key: the bearer token comes from workload identity federation.
    pub federation: Option<federation::Federation>,
}

fn is_oauth_token(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

pub(super) fn from_claude_code_name(name: &str, tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
        .map(|t| t.name.clone())
        .unwrap_or_else(|| name.to_owned())
}

/// Anthropic tool-use ids: `[a-zA-Z0-9_-]`, at most 64 characters.
pub fn normalize_tool_call_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case(name) && !v.trim().is_empty())
}

fn model_headers(model: &Model) -> Vec<(String, String)> {
    model
        .headers
        .iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect()
}

fn cache_control(model: &Model, retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "ephemeral"})),
        CacheRetention::Long => {
            if AnthropicCompat::of(model).supports_long_cache_retention {
                Some(json!({"type": "ephemeral", "ttl": "1h"}))
            } else {
                Some(json!({"type": "ephemeral"}))
            }
        }
    }
}

/// What the computed beta list depends on besides the model and options.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BetaFlags {
    pub oauth: bool,
    pub has_tools: bool,
    pub interleaved: bool,
    /// The tool list is fixed with a deferred placeholder (native tool changes).
    pub native_tool_changes: bool,
    /// The session's requests use message threads.
    pub message_threads: bool,
}

/// The beta list: an explicit `anthropic-beta` header replaces the computed one.
pub(super) fn betas(model: &Model, opts: &StreamOptions, flags: BetaFlags) -> Vec<String> {
    let compat = AnthropicCompat::of(model);
    let mut configured: Option<String> = None;
    for (name, value) in model_headers(model).iter().chain(opts.headers.iter()) {
        if name.eq_ignore_ascii_case("anthropic-beta") {
            configured = Some(value.clone());
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut add = |b: &str| {
        if !b.is_empty() && !out.iter().any(|x| x == b) {
            out.push(b.to_owned());
        }
    };
    if let Some(list) = configured {
        for b in list.split(',') {
            add(b.trim());
        }
        return out;
    }
    if flags.oauth {
        add("claude-code-20250219");
        add("oauth-2025-04-20");
    }
    if flags.has_tools && !compat.supports_eager_tool_input_streaming {
        add(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if flags.interleaved {
        add(INTERLEAVED_THINKING_BETA);
    }
    if !compat.allowed_fallback_models.is_empty() {
        add(SERVER_SIDE_FALLBACK_BETA);
    }
    if compat.supports_mid_convo_effort {
        add(MID_CONVERSATION_OUTPUT_CONFIG_BETA);
        add(THINKING_BINDING_CONTROLS_BETA);
    }
    if flags.native_tool_changes {
        add(INLINE_TOOLS_BETA);
    }
    if flags.message_threads {
        add(MESSAGE_THREADS_BETA);
    }
    out
}

/// pi's `DEFERRED_TOOL_PLACEHOLDER`: declared after the tools whenever native tool changes are
/// in use, so Anthropic's scaffolding for tool changes is in the cached prefix from the first
/// request. Never activated; the model cannot see it.
fn deferred_tool_placeholder() -> Value {
    json!({
        "name": "__pi_deferred_placeholder__",
        "description": "Reserved placeholder. Never available. Never call this.",
        "input_schema": {"type": "object", "properties": {}, "required": []},
        "defer_loading": true
    })
}

/// Builds the request for `ctx` (providers.md §2, data-model.md §6.1). Fails only for a missing
/// credential (`No API key for provider: <provider>`).
pub fn build_request(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
) -> Result<BuiltRequest, String> {
    let disable = has_exceeded_strict_tool_limits(opts.session_id.as_deref());
    build_request_with(model, ctx, opts, disable)
}

/// [`build_request`], with the tools that prefer strict sampling sent non-strict when
/// `disable_preferred_strict` (after Claude rejected the strict tools for its limits).
pub(super) fn build_request_with(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    disable_preferred_strict: bool,
) -> Result<BuiltRequest, String> {
    let api_key = opts.api_key.as_deref().filter(|k| !k.is_empty());
    let mh = model_headers(model);
    let has_auth_header = ["authorization", "x-api-key", "cf-aig-authorization"]
        .iter()
        .any(|h| has_header(&mh, h) || has_header(&opts.headers, h));
    let federation = federation::of(model, opts, has_auth_header);
    if api_key.is_none() && !has_auth_header && federation.is_none() {
        return Err(format!("No API key for provider: {}", model.provider));
    }
    let oauth = api_key.is_some_and(is_oauth_token);
    let compat = AnthropicCompat::of(model);
    let cache = cache_control(model, opts.cache_retention);
    let plan = plan_thinking(model, ctx, opts);
    // Message threads: for a session that caches (pi's cacheSessionId).
    let thread_session = opts.session_id.clone().filter(|_| {
        compat.supports_message_threads && opts.cache_retention != CacheRetention::None
    });
    // Native tool changes (pi): the request's tool list stays the leading system message's,
    // anchored by at least one real tool and followed by the deferred placeholder; each later
    // system message removes and defines tools inline. Otherwise the current tools.
    let initial_tools = crate::llm::transcript::leading_tools(ctx);
    let native_tool_changes = compat.supports_mid_convo_system_messages
        && compat.supports_mid_convo_tool_changes
        && !initial_tools.is_empty();
    let request_tools: &[ToolSpec] = if native_tool_changes {
        initial_tools
    } else {
        &ctx.tools
    };
    let mut has_preferred_strict_tools = false;
    let mut define_inline = |tools: &[ToolSpec]| {
        let definitions = convert_tools(
            tools,
            oauth,
            compat.supports_eager_tool_input_streaming,
            compat.supports_strict_tools,
            None,
            disable_preferred_strict,
        );
        has_preferred_strict_tools |= definitions
            .iter()
            .zip(tools)
            .any(|(sent, spec)| sent["strict"] == true && spec.strict_prefer);
        definitions
    };

    let mut messages = ctx.messages.clone();
    normalize_tool_call_ids(&mut messages, model, normalize_tool_call_id);

    let mut body = Map::new();
    body.insert("model".into(), Value::from(model.id.as_str()));
    let converted = convert_messages(
        &messages,
        oauth,
        cache.as_ref(),
        compat.allow_empty_signature,
        plan.managed_effort
            .as_ref()
            .map(|_| model.provider.as_str()),
        if native_tool_changes {
            Some(&mut define_inline as ToolDefinitions<'_>)
        } else {
            None
        },
    );
    let messages = match &plan.managed_effort {
        Some(effort) => insert_effort_markers(converted, effort),
        None => converted.messages,
    };
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), Value::from(plan.max_tokens));
    body.insert("stream".into(), Value::Bool(true));
    let system_block = |text: &str| {
        let mut b = Map::new();
        b.insert("type".into(), Value::from("text"));
        b.insert("text".into(), Value::from(text));
        if let Some(cc) = &cache {
            b.insert("cache_control".into(), cc.clone());
        }
        Value::Object(b)
    };
    if oauth {
        let mut system = vec![system_block(CLAUDE_CODE_IDENTITY)];
        if !ctx.system_prompt.is_empty() {
            system.push(system_block(&ctx.system_prompt));
        }
        body.insert("system".into(), Value::Array(system));
    } else if !ctx.system_prompt.is_empty() {
        body.insert(
            "system".into(),
            Value::Array(vec![system_block(&ctx.system_prompt)]),
        );
    }
    if !request_tools.is_empty() {
        let tool_cache = if compat.supports_cache_control_on_tools {
            cache.as_ref()
        } else {
            None
        };
        let mut tools = convert_tools(
            request_tools,
            oauth,
            compat.supports_eager_tool_input_streaming,
            compat.supports_strict_tools,
            tool_cache,
            disable_preferred_strict,
        );
        has_preferred_strict_tools |= tools
            .iter()
            .zip(request_tools)
            .any(|(sent, spec)| sent["strict"] == true && spec.strict_prefer);
        if native_tool_changes {
            tools.push(deferred_tool_placeholder());
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = plan.thinking {
        body.insert("thinking".into(), t);
    }
    if let Some(o) = plan.output_config {
        body.insert("output_config".into(), o);
    }
    if !compat.allowed_fallback_models.is_empty() {
        let fallbacks: Vec<Value> = compat
            .allowed_fallback_models
            .iter()
            .map(|f| json!({ "model": f.model }))
            .collect();
        body.insert("fallbacks".into(), Value::Array(fallbacks));
    }

    let betas = betas(
        model,
        opts,
        BetaFlags {
            oauth,
            has_tools: !ctx.tools.is_empty(),
            interleaved: plan.interleaved_beta,
            native_tool_changes,
            message_threads: thread_session.is_some(),
        },
    );
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut push = |n: &str, v: &str| headers.push((n.to_owned(), v.to_owned()));
    push("accept", "application/json");
    push("anthropic-dangerous-direct-browser-access", "true");
    if oauth {
        push("user-agent", &format!("claude-cli/{CLAUDE_CODE_VERSION}"));
        push("x-app", "cli");
    }
    if let Some(sid) = opts.session_id.as_deref() {
        if !oauth
            && opts.cache_retention != CacheRetention::None
            && compat.send_session_affinity_headers
        {
            let name = if compat.openrouter_affinity {
                "x-session-id"
            } else {
                "x-session-affinity"
            };
            push(name, sid);
        }
    }
    for (n, v) in mh.iter().chain(opts.headers.iter()) {
        if n.eq_ignore_ascii_case("anthropic-beta") {
            continue;
        }
        push(n, v);
    }
    push("anthropic-version", ANTHROPIC_VERSION);
    push("content-type", "application/json");
    if let Some(key) = api_key {
        if oauth || model.provider == "github-copilot" {
            push("authorization", &format!("Bearer {key}"));
        } else {
            push("x-api-key", key);
        }
    }
    if !betas.is_empty() {
        push("anthropic-beta", &betas.join(","));
    }

    let base = if model.base_url.is_empty() {
        DEFAULT_BASE_URL
    } else {
        model.base_url.trim_end_matches('/')
    };
    Ok(BuiltRequest {
        url: format!("{base}/v1/messages?beta=true"),
        headers,
        body: Value::Object(body),
        oauth,
        provider_thinking_level: plan.managed_effort,
        has_preferred_strict_tools,
        disabled_preferred_strict: disable_preferred_strict,
        betas,
        thread_session,
        federation,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::llm::convert::build_llm_context;
    use crate::llm::golden;
    use crate::llm::types::Usage;

    #[test]
    fn plain_text_request_matches_golden() {
        let reqs = golden::requests("plain_text");
        let system = golden::system_message("plain_text");
        let msgs = vec![
            system,
            json!({"role":"user","content":[{"type":"text","text":"Say hello"}],"timestamp":1}),
        ];
        let model = mock_sonnet();
        let ctx = build_llm_context(&msgs, &model);
        let req = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(req.body, reqs[0]["body"]);
        // Key order as pi sends it.
        let keys: Vec<&str> = req
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
                "thinking"
            ]
        );
        assert_eq!(req.url, "http://127.0.0.1:18080/v1/messages?beta=true");
        let h = |n: &str| {
            req.headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(h("anthropic-beta"), Some("interleaved-thinking-2025-05-14"));
        assert_eq!(h("anthropic-version"), Some("2023-06-01"));
        assert_eq!(h("x-api-key"), Some("test-key"));
        assert_eq!(h("accept"), Some("application/json"));
        assert_eq!(h("content-type"), Some("application/json"));
        assert_eq!(h("anthropic-dangerous-direct-browser-access"), Some("true"));
    }

    #[test]
    fn bash_tool_history_matches_golden() {
        let reqs = golden::requests("bash_tool");
        let system = golden::system_message("bash_tool");
        let assistant = AssistantMessage {
            content: vec![
                ContentBlock::text("I will run a command."),
                ContentBlock::ToolCall {
                    id: "toolu_bash_01".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "echo hi"}),
                    arguments_error: None,
                    thought_signature: None,
                },
            ],
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            model: "mock-sonnet".into(),
            usage: Usage {
                input: 200,
                output: 40,
                total_tokens: 240,
                ..Usage::default()
            },
            stop_reason: StopReason::ToolUse,
            timestamp: 2,
            ..AssistantMessage::default()
        };
        let msgs = vec![
            system,
            json!({"role":"user","content":[{"type":"text","text":"Run echo hi"}],"timestamp":1}),
            assistant.to_value(),
            json!({"role":"toolResult","toolCallId":"toolu_bash_01","toolName":"bash","content":[{"type":"text","text":"hi\n"}],"isError":false,"timestamp":3}),
        ];
        let model = mock_sonnet();
        let ctx = build_llm_context(&msgs, &model);
        let req = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(req.body, reqs[1]["body"]);
    }

    /// Regression: a plain-string user message (a session written by pi) is sent as a string;
    /// as the last message it becomes one cached text block, as pi does.
    #[test]
    fn string_user_content_goes_out_as_a_string() {
        let user = |text: &str| LlmMessage::User {
            content: vec![ContentBlock::text(text)],
            timestamp: 1,
            as_string: true,
        };
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: String::new(),
            messages: vec![user("first"), user("   "), user("second")],
            tools: vec![],
        };
        let mut o = opts();
        o.cache_retention = CacheRetention::None;
        let r = build_request(&mock_sonnet(), &ctx, &o).unwrap();
        assert_eq!(
            r.body["messages"],
            json!([{"role":"user","content":"first"},{"role":"user","content":"second"}])
        );
        o.cache_retention = CacheRetention::Short;
        let r = build_request(&mock_sonnet(), &ctx, &o).unwrap();
        assert_eq!(
            r.body["messages"][1],
            json!({"role":"user","content":[{"type":"text","text":"second","cache_control":{"type":"ephemeral"}}]})
        );
    }

    #[test]
    fn thinking_variants() {
        let model = mock_sonnet();
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: String::new(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
                as_string: false,
            }],
            tools: vec![],
        };
        let mut o = opts();
        o.thinking_level = ThinkingLevel::Off;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(r.body["thinking"], json!({"type":"disabled"}));
        assert_eq!(r.body["max_tokens"], 8192);
        assert!(!r.headers.iter().any(|(n, _)| n == "anthropic-beta"));
        assert!(r.body.get("system").is_none());

        // A bigger output cap: budget 8192 inside max_tokens 16384.
        let mut big = model.clone();
        big.max_tokens = 16384;
        o.thinking_level = ThinkingLevel::Medium;
        let r = build_request(&big, &ctx, &o).unwrap();
        assert_eq!(
            r.body["thinking"],
            json!({"type":"enabled","budget_tokens":8192,"display":"summarized"})
        );
        assert_eq!(r.body["max_tokens"], 16384);

        // Non-reasoning model: no thinking field at all.
        let mut plain = model.clone();
        plain.reasoning = false;
        let r = build_request(&plain, &ctx, &o).unwrap();
        assert!(r.body.get("thinking").is_none());

        // Adaptive thinking.
        let mut adaptive = model.clone();
        adaptive.compat = json!({"forceAdaptiveThinking": true}).as_object().cloned();
        adaptive.thinking_level_map = json!({"max": "max"}).as_object().cloned();
        o.thinking_level = ThinkingLevel::Max;
        let r = build_request(&adaptive, &ctx, &o).unwrap();
        assert_eq!(
            r.body["thinking"],
            json!({"type":"adaptive","display":"summarized"})
        );
        assert_eq!(r.body["output_config"], json!({"effort":"max"}));
        assert!(!r.headers.iter().any(|(n, _)| n == "anthropic-beta"));
        o.thinking_level = ThinkingLevel::Minimal;
        let r = build_request(&adaptive, &ctx, &o).unwrap();
        assert_eq!(r.body["output_config"], json!({"effort":"low"}));

        // Off not allowed (map off: null) → nothing sent.
        let mut no_off = model.clone();
        no_off.thinking_level_map = json!({"off": null}).as_object().cloned();
        o.thinking_level = ThinkingLevel::Off;
        let r = build_request(&no_off, &ctx, &o).unwrap();
        // Clamped up to minimal: budget thinking.
        assert_eq!(r.body["thinking"]["type"], "enabled");
    }

    #[test]
    fn auth_variants_and_cache() {
        let model = mock_sonnet();
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: "SYS".into(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
                as_string: false,
            }],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "d".into(),
                parameters: json!({"type":"object","properties":{"command":{"type":"string"}}}),
                strict_prefer: false,
            }],
        };
        let mut o = opts();
        o.api_key = None;
        assert_eq!(
            build_request(&model, &ctx, &o).unwrap_err(),
            "No API key for provider: mock"
        );
        o.headers = vec![("Authorization".into(), "Bearer tok".into())];
        let r = build_request(&model, &ctx, &o).unwrap();
        assert!(!r.headers.iter().any(|(n, _)| n == "x-api-key"));
        assert!(r
            .headers
            .contains(&("Authorization".into(), "Bearer tok".into())));

        // OAuth: bearer, Claude Code identity and tool names, betas.
        let mut o = opts();
        o.api_key = Some("sk-ant-oat01-xyz".into());
        let r = build_request(&model, &ctx, &o).unwrap();
        assert!(r.oauth);
        assert!(r
            .headers
            .contains(&("authorization".into(), "Bearer sk-ant-oat01-xyz".into())));
        assert_eq!(r.body["system"][0]["text"], CLAUDE_CODE_IDENTITY);
        assert_eq!(r.body["system"][1]["text"], "SYS");
        assert_eq!(r.body["tools"][0]["name"], "Bash");
        let beta = r
            .headers
            .iter()
            .find(|(n, _)| n == "anthropic-beta")
            .unwrap();
        assert_eq!(
            beta.1,
            "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14"
        );

        // No caching: no markers anywhere.
        let mut o = opts();
        o.cache_retention = CacheRetention::None;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert!(!r.body.to_string().contains("cache_control"));
        // Long retention: ttl 1h.
        o.cache_retention = CacheRetention::Long;
        let r = build_request(&model, &ctx, &o).unwrap();
        assert_eq!(
            r.body["system"][0]["cache_control"],
            json!({"type":"ephemeral","ttl":"1h"})
        );
        assert_eq!(
            r.body["tools"][0]["cache_control"],
            json!({"type":"ephemeral","ttl":"1h"})
        );
        assert_eq!(
            r.body["tools"][0]["input_schema"],
            json!({"type":"object","properties":{"command":{"type":"string"}},"required":[]})
        );

        // An explicit anthropic-beta header replaces the computed list.
        let mut o = opts();
        o.headers = vec![("Anthropic-Beta".into(), "a, b,a".into())];
        let r = build_request(&model, &ctx, &o).unwrap();
        let betas: Vec<&(String, String)> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("anthropic-beta"))
            .collect();
        assert_eq!(
            betas,
            vec![&("anthropic-beta".to_string(), "a,b".to_string())]
        );

        // No eager streaming support: fine-grained beta, no eager flag.
        let mut m2 = model.clone();
        m2.compat = json!({"supportsEagerToolInputStreaming": false})
            .as_object()
            .cloned();
        let r = build_request(&m2, &ctx, &opts()).unwrap();
        assert!(r.body["tools"][0].get("eager_input_streaming").is_none());
        assert!(r.headers.iter().any(|(n, v)| n == "anthropic-beta"
            && v == "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"));
    }

    #[test]
    fn history_conversion() {
        let model = mock_sonnet();
        let other = AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "secret".into(),
                    thinking_signature: Some("SIG".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: "[Reasoning redacted]".into(),
                    thinking_signature: Some("ENC".into()),
                    redacted: true,
                },
                ContentBlock::Thinking {
                    thinking: "unsigned".into(),
                    thinking_signature: None,
                    redacted: false,
                },
                ContentBlock::text("  "),
                ContentBlock::text("answer"),
                ContentBlock::ToolCall {
                    id: "call|x/y".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    arguments_error: None,
                    thought_signature: None,
                },
            ],
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            model: "mock-sonnet".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: String::new(),
            messages: vec![
                LlmMessage::User {
                    content: vec![
                        ContentBlock::text("look"),
                        ContentBlock::Image {
                            data: "AAA".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    timestamp: 1,
                    as_string: false,
                },
                LlmMessage::Assistant(other),
                LlmMessage::ToolResult {
                    tool_call_id: "call|x/y".into(),
                    tool_name: "read".into(),
                    content: vec![
                        ContentBlock::text("failed"),
                        ContentBlock::Image {
                            data: "BBB".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    is_error: true,
                },
            ],
            tools: vec![],
        };
        let r = build_request(&model, &ctx, &opts()).unwrap();
        assert_eq!(
            r.body["messages"],
            json!([
                {"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"}}]},
                {"role":"assistant","content":[
                    {"type":"thinking","thinking":"secret","signature":"SIG"},
                    {"type":"redacted_thinking","data":"ENC"},
                    {"type":"text","text":"unsigned"},
                    {"type":"text","text":"answer"},
                    {"type":"tool_use","id":"call|x/y","name":"read","input":{"path":"a"}}
                ]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"call|x/y","content":"failed\n(image attached after the tool results)","is_error":true},
                    {"type":"text","text":"Images from the error result of tool call call|x/y (read):"},
                    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"BBB"},"cache_control":{"type":"ephemeral"}}
                ]}
            ])
        );
        // From another provider, the tool-call id is normalized (and its result with it).
        let mut ctx2 = ctx.clone();
        if let LlmMessage::Assistant(a) = &mut ctx2.messages[1] {
            a.provider = "other".into();
        }
        let r = build_request(&model, &ctx2, &opts()).unwrap();
        assert_eq!(r.body["messages"][1]["content"][4]["id"], "call_x_y");
        assert_eq!(
            r.body["messages"][2]["content"][0]["tool_use_id"],
            "call_x_y"
        );
    }
}
