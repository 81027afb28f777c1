//! Whole request bodies for the compat switches of pi's newest Responses models: tools in an
//! `additional_tools` item, `configuration_update` items for the mid-conversation effort.

use super::tests::*;
use super::*;

fn with_compat(compat: Value) -> Model {
    let mut m = model();
    m.compat = compat.as_object().cloned();
    m.thinking_level_map = json!({"off": null, "minimal": null, "low": "low", "medium": "medium",
        "high": "high", "xhigh": "xhigh", "max": "max"})
    .as_object()
    .cloned();
    m
}

fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"]}),
        strict_prefer: true,
    }
}

fn strict_bash() -> Value {
    json!({"type": "function", "name": "bash", "description": "Run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"], "additionalProperties": false},
        "strict": true})
}

fn assistant(model: &Model, text: &str, level: Option<&str>) -> LlmMessage {
    LlmMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::Text {
            text: text.into(),
            text_signature: None,
        }],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        provider_thinking_level: level.map(str::to_owned),
        provider_thinking_level_early: level.is_some(),
        ..AssistantMessage::default()
    })
}

fn reply(text: &str, id: &str) -> Value {
    json!({"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
        "status": "completed", "id": id})
}

fn opts(level: ThinkingLevel) -> StreamOptions {
    StreamOptions {
        thinking_level: level,
        session_id: Some("sess".into()),
        ..StreamOptions::default()
    }
}

#[test]
fn additional_tools_replace_the_top_level_tools() {
    let m = with_compat(
        json!({"supportsStrictMode": true, "supportsMidConvoSystemMessages": true,
        "supportsAdditionalTools": true, "supportsOpenAIGrammarTools": true}),
    );
    let mut c = ctx(vec![user("hi")]);
    c.tools = vec![bash_tool()];
    let body = build_body(&m, &c, &opts(ThinkingLevel::Medium), 100);
    assert_eq!(
        body,
        json!({"model": "mock-gpt",
            "input": [
                {"type": "additional_tools", "role": "developer", "tools": [strict_bash()]},
                {"role": "developer", "content": "S."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            "stream": true, "prompt_cache_key": "sess", "store": false,
            "max_output_tokens": 100,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"]})
    );
    // Without strict mode the tools carry no `strict`; without tools there is no item.
    let plain = with_compat(
        json!({"supportsMidConvoSystemMessages": true, "supportsAdditionalTools": true}),
    );
    let input = &build_body(&plain, &c, &opts(ThinkingLevel::Medium), 100)["input"];
    assert_eq!(
        input[0],
        json!({"type": "additional_tools", "role": "developer", "tools": [
            {"type": "function", "name": "bash", "description": "Run a command",
                "parameters": c.tools[0].parameters}]})
    );
    // The Codex and Azure adapters default strict mode to true: an explicit option.
    let strict = InputOptions {
        configuration_update_effort: None,
        supports_strict_mode: true,
        null_strict: false,
    };
    assert_eq!(
        convert_input_with(&plain, &c, &strict)[0]["tools"],
        json!([strict_bash()])
    );
    assert_eq!(
        tool_support(&plain),
        crate::llm::transcript::ToolSupport::Changes
    );
    let bare = build_body(
        &plain,
        &ctx(vec![user("hi")]),
        &opts(ThinkingLevel::Medium),
        100,
    );
    assert_eq!(
        bare["input"][0],
        json!({"role": "developer", "content": "S."})
    );
    assert!(bare.get("tools").is_none());
}

#[test]
fn tools_stay_top_level_without_both_switches() {
    let mut c = ctx(vec![user("hi")]);
    c.tools = vec![bash_tool()];
    for compat in [
        json!({"supportsStrictMode": true, "supportsAdditionalTools": true}),
        json!({"supportsStrictMode": true, "supportsMidConvoSystemMessages": true}),
        // Tool search only adds tools after the leading system message, which pi-rpc's
        // transcript does not have.
        json!({"supportsStrictMode": true, "supportsToolSearch": true}),
    ] {
        let body = build_body(&with_compat(compat), &c, &opts(ThinkingLevel::Medium), 100);
        assert_eq!(body["tools"], json!([strict_bash()]));
        assert_eq!(
            body["input"][0],
            json!({"role": "developer", "content": "S."})
        );
    }
}

#[test]
fn mid_conversation_effort_travels_in_configuration_updates() {
    let m = with_compat(json!({"supportsMidConvoEffort": true}));
    let mut other = m.clone();
    other.id = "other-gpt".into();
    let c = ctx(vec![
        user("one"),
        assistant(&m, "first", Some("high")),
        assistant(&m, "second", None),
        assistant(&other, "third", Some("low")),
        user("two"),
    ]);
    let body = build_body(&m, &c, &opts(ThinkingLevel::Low), 100);
    assert_eq!(
        body,
        json!({"model": "mock-gpt",
            "input": [
                {"role": "developer", "content": "S."},
                {"role": "user", "content": [{"type": "input_text", "text": "one"}]},
                {"type": "configuration_update", "reasoning": {"effort": "high"}},
                reply("first", "msg_pi_1"),
                reply("second", "msg_pi_2"),
                {"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "third", "annotations": []}],
                    "status": "completed", "id": "msg_pi_3"},
                {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
                {"type": "configuration_update", "reasoning": {"effort": "low"}}],
            "stream": true, "prompt_cache_key": "sess", "store": false,
            "max_output_tokens": 100,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"]})
    );
    assert_eq!(
        configuration_update_effort(&m, &opts(ThinkingLevel::Low)).as_deref(),
        Some("low")
    );
    // Off: no updates at all (not even for the recorded levels), the off effort as usual.
    let off = build_body(&m, &c, &opts(ThinkingLevel::Off), 100);
    assert!(off["input"]
        .as_array()
        .is_some_and(|i| i.iter().all(|x| x["type"] != "configuration_update")));
    assert!(off.get("reasoning").is_none());
    assert_eq!(
        configuration_update_effort(&m, &opts(ThinkingLevel::Off)),
        None
    );
    // A Sign in with ChatGPT token rejects the items: the level goes to reasoning.effort.
    let mut openai = m.clone();
    openai.provider = "openai".into();
    openai.base_url = "https://api.openai.com/v1".into();
    let chatgpt = StreamOptions {
        api_key: Some("eyJ-token".into()),
        ..opts(ThinkingLevel::High)
    };
    let b = build_body(&openai, &ctx(vec![user("x")]), &chatgpt, 100);
    assert_eq!(b["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(b["input"].as_array().map(Vec::len), Some(2));
    assert_eq!(configuration_update_effort(&openai, &chatgpt), None);
    let api_key = StreamOptions {
        api_key: Some("sk-1".into()),
        ..opts(ThinkingLevel::High)
    };
    assert_eq!(
        configuration_update_effort(&openai, &api_key).as_deref(),
        Some("high")
    );
    // Without the switch: the level as reasoning.effort, no items.
    let plain = with_compat(json!({}));
    let b = build_body(&plain, &c, &opts(ThinkingLevel::Low), 100);
    assert_eq!(b["reasoning"], json!({"effort": "low", "summary": "auto"}));
    assert_eq!(
        configuration_update_effort(&plain, &opts(ThinkingLevel::Low)),
        None
    );
}

#[test]
fn provider_thinking_level_is_recorded_and_persisted() {
    let m = with_compat(json!({"supportsMidConvoEffort": true}));
    assert_eq!(
        <ResponsesStream as WireApi>::provider_thinking_level(&m, &opts(ThinkingLevel::Xhigh))
            .as_deref(),
        Some("xhigh")
    );
    let LlmMessage::Assistant(a) = assistant(&m, "t", Some("medium")) else {
        unreachable!()
    };
    let v = a.to_value();
    let keys: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        keys[..6],
        [
            "role",
            "content",
            "api",
            "provider",
            "model",
            "providerThinkingLevel"
        ]
    );
    assert_eq!(
        AssistantMessage::from_value(&v).and_then(|a| a.provider_thinking_level),
        Some("medium".into())
    );
}
