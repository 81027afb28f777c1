//! System messages kept in place (`compat.supportsMidConvoSystemMessages`): a transcript whose
//! tools change mid-conversation (bash, edit and write removed, then declared again), built as
//! the agent builds it (`convert::build_llm_context`), sent by each wire API that keeps them,
//! against the scripted server. The request shapes are pi 1.6.0's, compared with the reference
//! pi on the same change made by an extension (`tests/scenarios/src/tools_mid_*`): the Responses
//! API declares every system message's tools in an `additional_tools` item with pi's notices,
//! Chat Completions says the update as an instruction (and, with tool additions, folds the
//! request's tools up to the last removal), Anthropic holds the update until the next reply and
//! changes tools inline. pi-rpc used to fold them all into the leading prompt and tools.

use serde_json::{json, Value};

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::convert::build_llm_context;
use pi_rpc::llm::types::StreamOptions;
use pi_rpc::llm::Model;

use crate::support::llm::run;
use crate::support::mock_llm::MockLlm;

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("{name} tool"),
        "parameters": {"type": "object", "properties": {}}})
}

/// A pi session's messages: the leading system message with read and bash, a bash round trip,
/// a later one removing bash (and patching the `tools` section), a reply, one declaring bash
/// again, and the last prompt.
fn transcript(model: &Model) -> Vec<Value> {
    let reply = |content: Value, ts: u64| {
        json!({"role": "assistant", "content": content, "api": model.api, "provider": model.provider,
            "model": model.id, "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
            "total": 0}}, "stopReason": "stop", "timestamp": ts})
    };
    vec![
        json!({"role": "system", "content": "", "sections": {"intro": "You help.", "tools": "<tools>read, bash</tools>"},
            "toolsAdded": [tool("read"), tool("bash")], "timestamp": 1}),
        json!({"role": "user", "content": [{"type": "text", "text": "Run echo"}], "timestamp": 2}),
        reply(
            json!([{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}]),
            3,
        ),
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
            "content": [{"type": "text", "text": "hi"}], "isError": false, "timestamp": 4}),
        reply(json!([{"type": "text", "text": "It printed hi."}]), 5),
        json!({"role": "system", "content": "", "sections": {"tools": "<tools>read</tools>"},
            "toolsRemoved": [{"name": "bash"}], "timestamp": 6}),
        json!({"role": "user", "content": [{"type": "text", "text": "Answer again"}], "timestamp": 7}),
        reply(json!([{"type": "text", "text": "Second answer."}]), 8),
        json!({"role": "system", "content": "", "sections": {"tools": "<tools>read, bash</tools>"},
            "toolsAdded": [tool("bash")], "timestamp": 9}),
        json!({"role": "user", "content": [{"type": "text", "text": "Last one"}], "timestamp": 10}),
    ]
}

fn model(mock: &MockLlm, api: &str, provider: &str, compat: Value) -> Model {
    serde_json::from_value(json!({"id": "mid-test", "name": "Mid", "api": api,
        "provider": provider, "baseUrl": mock.base_url(), "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000, "maxTokens": 1000, "compat": compat}))
    .expect("model")
}

/// Sends the transcript and returns the request body.
fn body_for(m: &Model, mock: &MockLlm) -> Value {
    body_of(m, mock, &transcript(m))
}

/// Sends `msgs` and returns the request body.
fn body_of(m: &Model, mock: &MockLlm, msgs: &[Value]) -> Value {
    let ctx = build_llm_context(msgs, m);
    let opts = StreamOptions {
        api_key: Some("test-key".into()),
        ..StreamOptions::default()
    };
    run(m, &ctx, &opts, &CancelToken::new());
    let requests = mock.requests();
    requests.last().expect("a request")["body"].clone()
}

const UPDATE_REMOVED: &str = "Updated system prompt section \"tools\":\n\n<tools>read</tools>";
const UPDATE_ADDED: &str = "Updated system prompt section \"tools\":\n\n<tools>read, bash</tools>";
const LEADING: &str = "You help.\n\n<tools>read, bash</tools>";

fn reply_default() -> MockLlm {
    MockLlm::start(json!({"default": {"blocks": [{"type": "text", "text": "k"}]}}))
}

#[test]
fn responses_declare_each_change_in_additional_tools_items() {
    let mock = reply_default();
    let m = model(
        &mock,
        "openai-responses",
        "openai",
        json!({"supportsMidConvoSystemMessages": true, "supportsAdditionalTools": true}),
    );
    let body = body_for(&m, &mock);
    assert!(body.get("tools").is_none(), "{body}");
    let declared = |names: &[&str]| {
        let tools: Vec<Value> = names
            .iter()
            .map(|n| {
                json!({"type": "function", "name": n, "description": format!("{n} tool"),
                "parameters": {"type": "object", "properties": {}}})
            })
            .collect();
        json!({"type": "additional_tools", "role": "developer", "tools": tools})
    };
    let input = body["input"].as_array().expect("input");
    let shape: Vec<Value> = input
        .iter()
        .filter(|i| {
            !matches!(
                i.get("type").and_then(Value::as_str),
                Some("message" | "function_call" | "function_call_output")
            )
        })
        .cloned()
        .collect();
    assert_eq!(
        shape,
        vec![
            declared(&["read", "bash"]),
            json!({"role": "system", "content": LEADING}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "Run echo"}]}),
            json!({"role": "system", "content": format!("{UPDATE_REMOVED}\n\nThe following tools are no longer available. Do not call them:\n- bash")}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "Answer again"}]}),
            json!({"role": "system", "content": "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one."}),
            declared(&["bash"]),
            json!({"role": "system", "content": UPDATE_ADDED}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "Last one"}]}),
        ]
    );
    // The update stays where it happened: after the reply that came before it.
    let position = |pred: &dyn Fn(&Value) -> bool| input.iter().position(pred).expect("item");
    let second_reply = position(&|i| i["content"][0]["text"] == "Second answer.");
    let notice = position(&|i| {
        i["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("This is an incremental"))
    });
    assert_eq!(notice, second_reply + 1);
}

#[test]
fn a_removal_still_unavailable_is_restated_in_the_next_notice() {
    let mock = reply_default();
    let m = model(
        &mock,
        "openai-responses",
        "openai",
        json!({"supportsMidConvoSystemMessages": true, "supportsAdditionalTools": true}),
    );
    let mut msgs = transcript(&m);
    // The last message declares `ls` instead of bash: bash stays unavailable.
    msgs[8]["toolsAdded"] = json!([tool("ls")]);
    let body = body_of(&m, &mock, &msgs);
    let notice = body["input"]
        .as_array()
        .expect("input")
        .iter()
        .find_map(|i| {
            i["content"]
                .as_str()
                .filter(|c| c.starts_with("This is an incremental"))
        })
        .map(str::to_owned);
    assert_eq!(
        notice.as_deref().and_then(|n| n.split('\n').nth(1)),
        Some("Still unavailable: bash.")
    );
}

#[test]
fn chat_completions_say_updates_as_instructions() {
    let mock = reply_default();
    // Tool additions in place: the removal folds every declaration up to it, so the request's
    // tools are the current ones and the later addition has no tools message of its own.
    for additions in [false, true] {
        let m = model(
            &mock,
            "openai-completions",
            "kimi-coding",
            json!({"supportsMidConvoSystemMessages": true,
                "supportsMidConvoToolAdditions": additions}),
        );
        let body = body_for(&m, &mock);
        let names: Vec<&str> = body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(names, ["read", "bash"]);
        let roles: Vec<(String, Value)> = body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap_or_default().to_owned(),
                    m["content"].clone(),
                )
            })
            .collect();
        assert_eq!(
            roles,
            vec![
                ("system".into(), json!(LEADING)),
                ("user".into(), json!([{"type": "text", "text": "Run echo"}])),
                ("assistant".into(), Value::Null),
                ("tool".into(), json!("hi")),
                ("assistant".into(), json!("It printed hi.")),
                ("system".into(), json!(UPDATE_REMOVED)),
                (
                    "user".into(),
                    json!([{"type": "text", "text": "Answer again"}])
                ),
                ("assistant".into(), json!("Second answer.")),
                ("system".into(), json!(UPDATE_ADDED)),
                ("user".into(), json!([{"type": "text", "text": "Last one"}])),
            ],
            "additions: {additions}"
        );
    }
}

#[test]
fn chat_completions_declare_pure_additions_in_a_tools_message() {
    let mock = reply_default();
    let m = model(
        &mock,
        "openai-completions",
        "kimi-coding",
        json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolAdditions": true}),
    );
    // Only additions: `ls` is declared in place, the request keeps the first tools.
    let mut msgs = transcript(&m);
    msgs[5] = json!({"role": "system", "content": "", "toolsAdded": [tool("ls")], "timestamp": 6});
    msgs.truncate(7);
    let body = body_of(&m, &mock, &msgs);
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["read", "bash"]);
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[5],
        json!({"role": "system", "tools": [{"type": "function", "function": {"name": "ls",
            "description": "ls tool", "parameters": {"type": "object", "properties": {}}}}]})
    );
    assert_eq!(messages[6]["role"], "user");
}

#[test]
fn anthropic_holds_updates_for_the_next_reply_and_changes_tools_inline() {
    let mock = reply_default();
    let m = model(
        &mock,
        "anthropic-messages",
        "anthropic",
        json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolChanges": true}),
    );
    let body = body_for(&m, &mock);
    // The request's tools stay the leading message's, with the deferred placeholder.
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["read", "bash", "__pi_deferred_placeholder__"]);
    let messages = body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    // The removal waits past "Answer again" for the next reply; the last one goes at the end.
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "system",
            "assistant",
            "user",
            "system"
        ]
    );
    assert_eq!(
        messages[5]["content"],
        json!([{"type": "text", "text": UPDATE_REMOVED},
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "bash"}}])
    );
    let last = &messages[8]["content"];
    assert_eq!(last[0], json!({"type": "text", "text": UPDATE_ADDED}));
    assert_eq!(last[1]["type"], "tool_addition");
    assert_eq!(last[1]["tool"]["definition"]["name"], "bash");
    // The cache marker goes on the last block of the last (system) message.
    assert_eq!(last[1]["cache_control"], json!({"type": "ephemeral"}));
}

#[test]
fn models_without_the_compat_fold_every_system_message() {
    let mock = reply_default();
    let m = model(&mock, "openai-completions", "kimi-coding", json!({}));
    let body = body_for(&m, &mock);
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You help.\n\n<tools>read, bash</tools>"})
    );
    assert_eq!(messages.iter().filter(|m| m["role"] == "system").count(), 1);
}

/// A session written before its first system message (an older pi's, resumed): the system
/// message comes after the first prompt, and there is no leading one. pi then declares the
/// tools once, where that message is; pi-rpc made a leading message of the current tools too
/// and declared them twice (Responses), or turned on Anthropic's inline tool changes.
#[test]
fn without_a_leading_system_message_tools_are_declared_once() {
    let mock = reply_default();
    let msgs = |m: &Model| {
        let mut t = transcript(m);
        // The first prompt, then the leading message's declarations; no later changes.
        t.swap(0, 1);
        t.truncate(2);
        t
    };
    let m = model(
        &mock,
        "openai-responses",
        "openai",
        json!({"supportsMidConvoSystemMessages": true, "supportsAdditionalTools": true}),
    );
    let body = body_of(&m, &mock, &msgs(&m));
    let kinds: Vec<Value> = body["input"]
        .as_array()
        .expect("input")
        .iter()
        .map(|i| i.get("type").cloned().unwrap_or_else(|| i["role"].clone()))
        .collect();
    assert_eq!(
        kinds,
        json!(["user", "additional_tools", "system"])
            .as_array()
            .unwrap()
            .clone()
    );
    assert!(body.get("tools").is_none());

    let m = model(
        &mock,
        "anthropic-messages",
        "anthropic",
        json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolChanges": true}),
    );
    let body = body_of(&m, &mock, &msgs(&m));
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["read", "bash"],
        "no placeholder: native changes are off"
    );
    assert!(body.get("system").is_none(), "{body}");
    let last = body["messages"]
        .as_array()
        .expect("messages")
        .last()
        .cloned();
    assert_eq!(
        last.map(|m| m["content"].clone()),
        Some(
            json!([{"type": "text", "text": format!("Updated system prompt section \"intro\":\n\nYou help.\n\n{UPDATE_ADDED}"),
            "cache_control": {"type": "ephemeral"}}])
        )
    );
}
