//! When the provider fails: auto-retry (a success after a retry, retries exhausted,
//! `abort_retry` during the back-off), and the errors that end a run without a retry (an HTTP
//! 400, an unreachable provider with auto-retry off); the session stays usable.

use serde_json::{json, Value};

use crate::support::agent::mock_models_json;
use crate::support::llm::zero_usage;
use crate::support::mock_llm::MockLlm;
use crate::support::records::{find, find_all, kinds, norm};
use crate::support::run::{
    agent_for, overloaded, overloaded_text, request_messages, run_prompt, text_reply, LONG,
};
use crate::support::Agent;

#[test]
fn retry_then_success() {
    let mock = MockLlm::start(json!({"replies": [overloaded(), text_reply("Recovered.")]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "Please answer");
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
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "auto_retry_start",
            "entry_appended",
            "agent_start",
            "turn_start",
            "message_start:assistant",
            "update:text_start",
            "update:text_delta",
            "update:text_end",
            "message_end:assistant",
            "auto_retry_end",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let failed = recs[8]["message"].clone();
    assert_eq!(recs[7]["message"], failed);
    assert_eq!(
        norm(&failed),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock",
               "model":"mock-sonnet","usage":zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage":overloaded_text(1),"durationMs":0,"thinkingLevel":"medium"})
    );
    assert_eq!(recs[10]["willRetry"], true);
    assert_eq!(
        recs[11],
        json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":1,"errorMessage":overloaded_text(1)})
    );
    let edit = &recs[12]["entry"];
    assert_eq!(edit["type"], "context_edit");
    assert_eq!(edit["replacement"], Value::Null);
    assert_eq!(edit["targetId"], edit["parentId"]);
    assert_eq!(
        recs[20],
        json!({"type":"auto_retry_end","success":true,"attempt":1})
    );
    let ok = recs[19]["message"].clone();
    assert_eq!(
        recs[22],
        json!({"type":"agent_end","messages":[ok],"willRetry":false})
    );
    // The failed attempt is hidden from the context and from the retried request.
    let r = agent.request("m", json!({"type": "get_messages"}));
    let roles: Vec<&str> = r["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);
    assert_eq!(
        request_messages(&mock, 1),
        json!([{"role":"user","content":[{"type":"text","text":"Please answer"}]}])
    );
    let r = agent.request("s", json!({"type": "get_session_stats"}));
    assert_eq!(r["data"]["assistantMessages"], 2);
    assert_eq!(r["data"]["totalMessages"], 4);
}

#[test]
fn retry_exhausted_ends_with_auto_retry_end_failure() {
    let mock = MockLlm::start(json!({"replies": [overloaded(), overloaded(), overloaded()]}));
    let mut agent = agent_for(&mock)
        .settings(json!({"retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 1}}))
        .spawn();
    let recs = run_prompt(&mut agent, "p1", "Please answer");
    let tail: Vec<Value> = recs
        .iter()
        .filter(|r| {
            matches!(
                r["type"].as_str(),
                Some(
                    "agent_start"
                        | "agent_end"
                        | "auto_retry_start"
                        | "auto_retry_end"
                        | "agent_settled"
                )
            )
        })
        .map(|r| match r["type"].as_str() {
            Some("agent_end") => json!({"agent_end": r["willRetry"]}),
            _ => r.clone(),
        })
        .collect();
    assert_eq!(
        tail,
        [
            json!({"type":"agent_start"}),
            json!({"agent_end": true}),
            json!({"type":"auto_retry_start","attempt":1,"maxAttempts":2,"delayMs":1,"errorMessage":overloaded_text(1)}),
            json!({"type":"agent_start"}),
            json!({"agent_end": true}),
            json!({"type":"auto_retry_start","attempt":2,"maxAttempts":2,"delayMs":2,"errorMessage":overloaded_text(2)}),
            json!({"type":"agent_start"}),
            json!({"agent_end": false}),
            json!({"type":"auto_retry_end","success":false,"attempt":2,"finalError":overloaded_text(3)}),
            json!({"type":"agent_settled","aborted":false}),
        ]
    );
    assert_eq!(mock.requests().len(), 3);
    // The last failure stays in the context.
    let r = agent.request("m", json!({"type": "get_messages"}));
    let msgs = r["data"]["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[2]["errorMessage"], json!(overloaded_text(3)));
    let r = agent.request("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(r["data"], json!({"text": null}));
}

#[test]
fn abort_retry_during_the_back_off() {
    let mock =
        MockLlm::start(json!({"replies": [overloaded(), text_reply("must not be requested")]}));
    let mut agent = agent_for(&mock)
        .settings(json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 60000, "maxAgentDelayMs": 120000}}))
        .spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "Please answer"}));
    let start = agent.wait_for_timeout(json!({"type": "auto_retry_start"}), LONG);
    assert_eq!(start["delayMs"], 60000);
    agent.wait_for_timeout(json!({"type": "entry_appended"}), LONG);
    agent.send(json!({"id": "ar", "type": "abort_retry"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let recs = agent.records[from..].to_vec();
    let n = recs.len();
    assert_eq!(
        recs[n - 3..],
        [
            json!({"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}),
            json!({"id":"ar","type":"response","command":"abort_retry","success":true}),
            json!({"type":"agent_settled","aborted":false}),
        ]
    );
    assert_eq!(mock.requests().len(), 1);
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["isStreaming"], false);
    // Nothing is retrying now: answered at once.
    let r = agent.request("ar2", json!({"type": "abort_retry"}));
    assert_eq!(r["success"], true);
}

// ------------------------------------------------------------------------------ errors

#[test]
fn http_400_ends_the_run_with_agent_end_and_agent_settled() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 400, "error_type": "invalid_request_error", "error_message": "bad thing"},
        text_reply("fine now")
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "first");
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
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let msg = recs[8]["message"].clone();
    assert_eq!(recs[7]["message"], msg);
    assert_eq!(
        norm(&msg),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock",
               "model":"mock-sonnet","usage":zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage":"400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad thing\"},\"request_id\":\"req_mock_0001\"}",
               "durationMs":0,"thinkingLevel":"medium"})
    );
    assert_eq!(
        recs[9],
        json!({"type":"turn_end","message":msg,"toolResults":[]})
    );
    assert_eq!(recs[10]["willRetry"], false);
    assert_eq!(recs[11], json!({"type":"agent_settled","aborted":false}));
    assert_eq!(mock.requests().len(), 1);

    // The session is usable again; the failed reply is not sent back.
    let recs = run_prompt(&mut agent, "p2", "second");
    assert_eq!(recs.last().unwrap()["aborted"], false);
    assert_eq!(
        request_messages(&mock, 1),
        json!([
            {"role":"user","content":[{"type":"text","text":"first"}]},
            {"role":"user","content":[{"type":"text","text":"second"}]}
        ])
    );
}

#[test]
fn unreachable_provider_with_auto_retry_off_still_settles() {
    // Nothing listens on the port of a server that was started and dropped.
    let base = {
        let m = MockLlm::start(json!({"replies": []}));
        m.base_url()
    };
    let mut agent = Agent::builder()
        .models(Some(mock_models_json(&base)))
        .settings(json!({"retry": {"enabled": false}}))
        .spawn();
    let recs = run_prompt(&mut agent, "p1", "anyone there?");
    let (_, end) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"assistant"}}),
    );
    assert_eq!(end["message"]["stopReason"], "error");
    assert!(!end["message"]["errorMessage"]
        .as_str()
        .unwrap_or_default()
        .is_empty());
    let n = recs.len();
    assert_eq!(recs[n - 2]["type"], "agent_end");
    assert_eq!(recs[n - 2]["willRetry"], false);
    assert_eq!(recs[n - 1], json!({"type":"agent_settled","aborted":false}));
    assert!(find_all(&recs, json!({"type": "auto_retry_start"})).is_empty());
}
