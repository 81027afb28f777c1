//! A plain turn through the real binary: a prompt against the scripted LLM server and the whole
//! event sequence it writes (`rpc-protocol.md` §6, §11; `agent-loop.md` §1–§6), the history a
//! second prompt sends, the state commands after a run, and every wire API answering a prompt.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::records::{assistant_msg, find, kinds, norm, strip_cache, user_msg};
use crate::support::run::{
    agent_for, fast_settings, request_messages, run_prompt, text_reply, LONG,
};
use crate::support::Agent;

#[test]
fn plain_reply_emits_the_whole_event_sequence() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Hello there", "chunk_size": 5}]}
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "Say hello");

    assert_eq!(
        kinds(&recs),
        [
            "response:prompt",
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "update:text_start",
            "update:text_delta",
            "update:text_delta",
            "update:text_delta",
            "update:text_end",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    assert_eq!(
        recs[0],
        json!({"id":"p1","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}})
    );
    assert_eq!(recs[1], json!({"type": "agent_start"}));
    assert_eq!(recs[2], json!({"type": "turn_start"}));

    // The system message: full prompt sections and every default tool declared.
    let system = &recs[3]["message"];
    assert_eq!(recs[3]["message"], recs[4]["message"]);
    assert_eq!(system["role"], "system");
    assert_eq!(system["content"], "");
    let cwd = agent.cwd.canonicalize().unwrap();
    assert_eq!(
        system["sections"]["cwd"],
        json!(format!("<cwd>\n{}\n</cwd>", cwd.display()))
    );
    let tools: Vec<&str> = system["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "bash", "edit", "write"]);

    assert_eq!(norm(&recs[5]["message"]), user_msg("Say hello"));
    assert_eq!(recs[5], recs[6].clone().tap_type("message_start"));

    // The assistant partial, the deltas, the final message.
    let partial = &recs[7]["message"];
    assert_eq!(partial["stopReason"], "pending");
    assert_eq!(partial["role"], "assistant");
    assert_eq!(partial["timestamp"], recs[13]["message"]["timestamp"]);
    let events: Vec<Value> = recs[8..13]
        .iter()
        .map(|r| r["assistantMessageEvent"].clone())
        .collect();
    assert_eq!(
        events,
        [
            json!({"type":"text_start","contentIndex":0}),
            json!({"type":"text_delta","contentIndex":0,"delta":"Hello"}),
            json!({"type":"text_delta","contentIndex":0,"delta":" ther"}),
            json!({"type":"text_delta","contentIndex":0,"delta":"e"}),
            json!({"type":"text_end","contentIndex":0,"content":"Hello there"}),
        ]
    );
    let assistant = recs[13]["message"].clone();
    assert_eq!(
        norm(&assistant),
        assistant_msg(
            json!([{"type":"text","text":"Hello there"}]),
            "stop",
            "end_turn",
            1
        )
    );
    assert_eq!(
        recs[14],
        json!({"type":"turn_end","message":assistant,"toolResults":[]})
    );
    assert_eq!(
        recs[15],
        json!({"type":"agent_end","messages":[recs[4]["message"],recs[6]["message"],assistant],"willRetry":false})
    );
    assert_eq!(recs[16], json!({"type":"agent_settled","aborted":false}));

    // What the provider received.
    let log = mock.wait_requests(1, LONG);
    let body = strip_cache(&log[0]["body"]);
    assert_eq!(
        body["messages"],
        json!([{"role":"user","content":[{"type":"text","text":"Say hello"}]}])
    );
    let sent_tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(sent_tools, ["read", "bash", "edit", "write"]);

    // State after the run.
    let r = agent.request("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(r["data"], json!({"text": "Hello there"}));
    let r = agent.request("s", json!({"type": "get_session_stats"}));
    let mut stats = r["data"].clone();
    assert!(stats["sessionId"].is_string());
    stats["sessionId"] = json!("<id>");
    assert_eq!(
        stats,
        json!({"sessionId":"<id>","userMessages":1,"assistantMessages":1,"toolCalls":0,
               "toolResults":0,"totalMessages":3,
               "tokens":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"total":15},
               "cost":0.000105,
               "contextUsage":{"tokens":15,"contextWindow":200000,"percent":0.0075}})
    );
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["isStreaming"], false);
    assert_eq!(r["data"]["messageCount"], 3);
    let r = agent.request("m", json!({"type": "get_messages"}));
    assert_eq!(
        r["data"]["messages"],
        json!([recs[4]["message"], recs[6]["message"], assistant])
    );
}

/// `message_start` and `message_end` of a non-assistant message carry the same payload.
trait TapType {
    fn tap_type(self, t: &str) -> Value;
}
impl TapType for Value {
    fn tap_type(mut self, t: &str) -> Value {
        self["type"] = json!(t);
        self
    }
}

#[test]
fn second_prompt_has_no_system_message_and_sends_the_history() {
    let mock = MockLlm::start(json!({"replies": [text_reply("One"), text_reply("Two")]}));
    let mut agent = agent_for(&mock).spawn();
    run_prompt(&mut agent, "p1", "first");
    let recs = run_prompt(&mut agent, "p2", "second");
    assert_eq!(
        kinds(&recs),
        [
            "response:prompt",
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "update:text_start",
            "update:text_delta",
            "update:text_end",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let (_, end) = find(&recs, json!({"type": "agent_end"}));
    assert_eq!(end["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        request_messages(&mock, 1),
        json!([
            {"role":"user","content":[{"type":"text","text":"first"}]},
            {"role":"assistant","content":[{"type":"text","text":"One"}]},
            {"role":"user","content":[{"type":"text","text":"second"}]}
        ])
    );
}

/// Every wire API answers a prompt through the binary (models.json providers pointed at the
/// scripted server), with the reply text, usage and the API's name on the assistant message.
#[test]
fn each_wire_api_answers_a_prompt_through_the_binary() {
    for (api, suffix) in [
        ("anthropic-messages", ""),
        ("openai-completions", "/v1"),
        ("openai-responses", "/v1"),
        ("google-generative-ai", "/v1beta"),
    ] {
        let mock = MockLlm::start(json!({"replies": [
            {"blocks": [{"type": "text", "text": format!("Hello from {api}."), "chunk_size": 4}],
             "usage": {"input": 12, "output": 5}}
        ]}));
        let models = json!({"providers": {"p": {
            "baseUrl": format!("{}{suffix}", mock.base_url()), "api": api, "apiKey": "k",
            "models": [{"id": "m1", "name": "M1", "contextWindow": 100000, "maxTokens": 1000}]}}});
        let mut a = Agent::builder()
            .no_default_args()
            .args(["--no-session"])
            .models(Some(models))
            .settings(fast_settings())
            .spawn();
        let records = run_prompt(&mut a, "p", "hi");
        let end = records
            .iter()
            .rev()
            .find(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
            .unwrap_or_else(|| panic!("{api}: no assistant message: {records:#?}"));
        let msg = &end["message"];
        assert_eq!(msg["stopReason"], "stop", "{api}: {msg}");
        assert_eq!(msg["api"], api);
        assert_eq!(
            msg["content"][0]["text"],
            format!("Hello from {api}."),
            "{api}"
        );
        assert!(
            msg["usage"]["output"].as_u64().unwrap_or(0) > 0,
            "{api}: {msg}"
        );
        let deltas = records
            .iter()
            .filter(|r| r["assistantMessageEvent"]["type"] == "text_delta")
            .count();
        assert!(deltas >= 2, "{api}: streamed in several deltas");
        assert_eq!(mock.requests().len(), 1, "{api}");
    }
}
