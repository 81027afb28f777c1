//! Steering and follow-up queues: `steer`, `follow_up` and `prompt` with `streamingBehavior`
//! during and between runs, both queue modes, `clear_queue`, and when each queued message is
//! delivered (after a tool turn, while a reply streams, in an aborted turn, by the next run).

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::process::{release, wait_for_flag};
use crate::support::records::{find, find_all, kinds};
use crate::support::run::{
    agent_for, request_messages, run_command, run_prompt, text_reply, tool_call, LONG,
};
use crate::support::Agent;

/// Starts a run (its first reply must be [`blocked_tool_reply`]) and waits until the tool runs.
fn start_blocked_run(agent: &mut Agent) {
    let r = agent.request("p1", json!({"type": "prompt", "message": "start"}));
    assert_eq!(r["data"], json!({"disposition": "started"}));
    agent.wait_for_timeout(json!({"type": "tool_execution_start"}), LONG);
}

fn blocked_tool_reply(flag: &str) -> Value {
    json!({"blocks": [tool_call("toolu_wait", "bash", json!({"command": wait_for_flag(flag)}))]})
}

/// The records of the current run from the record at `from` to `agent_settled`.
fn finish_run(agent: &mut Agent, from: usize) -> Vec<Value> {
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    agent.records[from..].to_vec()
}

/// The user texts and queue_updates after the tool turn's `turn_end`, in order.
fn deliveries(recs: &[Value]) -> Vec<Value> {
    recs.iter()
        .filter_map(|r| match r["type"].as_str() {
            Some("queue_update") => Some(json!({"queue": [r["steering"], r["followUp"]]})),
            Some("message_start") if r["message"]["role"] == "user" => {
                Some(json!({"user": r["message"]["content"][0]["text"]}))
            }
            Some("message_start") if r["message"]["role"] == "assistant" => {
                Some(json!("assistant"))
            }
            Some("turn_start") => Some(json!("turn_start")),
            Some("agent_start") => Some(json!("agent_start")),
            Some("agent_end") => Some(json!("agent_end")),
            _ => None,
        })
        .collect()
}

#[test]
fn steer_and_follow_up_in_all_mode_and_prompt_while_streaming() {
    let mock = MockLlm::start(json!({"replies": [
        blocked_tool_reply("go"),
        text_reply("after steering"),
        text_reply("after follow-ups"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    for (id, t) in [("sm", "set_steering_mode"), ("fm", "set_follow_up_mode")] {
        let r = agent.request(id, json!({"type": t, "mode": "all"}));
        assert_eq!(r["success"], true, "{r}");
    }
    let from = agent.records.len();
    start_blocked_run(&mut agent);

    let r = agent.request("p2", json!({"type": "prompt", "message": "no behavior"}));
    assert_eq!(
        r,
        json!({"id":"p2","type":"response","command":"prompt","success":false,
               "error":"Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."})
    );
    let r = agent.request("s1", json!({"type": "steer", "message": "steer one"}));
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    let r = agent.request(
        "s2",
        json!({"type": "prompt", "message": "steer two", "streamingBehavior": "steer"}),
    );
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    let r = agent.request("f1", json!({"type": "follow_up", "message": "follow one"}));
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    let r = agent.request(
        "f2",
        json!({"type": "prompt", "message": "follow two", "streamingBehavior": "followUp"}),
    );
    assert_eq!(
        r,
        json!({"id":"f2","type":"response","command":"prompt","success":true,"data":{"disposition":"queued"}})
    );
    // Each enqueue's queue_update comes right before its response.
    let recs = agent.records[from..].to_vec();
    for (id, steering, follow) in [
        ("s1", json!(["steer one"]), json!([])),
        ("s2", json!(["steer one", "steer two"]), json!([])),
        (
            "f1",
            json!(["steer one", "steer two"]),
            json!(["follow one"]),
        ),
        (
            "f2",
            json!(["steer one", "steer two"]),
            json!(["follow one", "follow two"]),
        ),
    ] {
        let (i, _) = find(&recs, json!({"type": "response", "id": id}));
        assert_eq!(
            recs[i - 1],
            json!({"type":"queue_update","steering":steering,"followUp":follow})
        );
    }
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["pendingMessageCount"], 4);

    release(&agent, "go");
    let recs = finish_run(&mut agent, from);
    let (i_turn_end, _) = find(&recs, json!({"type": "turn_end"}));
    assert_eq!(
        deliveries(&recs[i_turn_end..]),
        [
            json!("turn_start"),
            json!({"queue": [["steer two"], ["follow one", "follow two"]]}),
            json!({"user": "steer one"}),
            json!({"queue": [[], ["follow one", "follow two"]]}),
            json!({"user": "steer two"}),
            json!("assistant"),
            json!("turn_start"),
            json!({"queue": [[], ["follow two"]]}),
            json!({"user": "follow one"}),
            json!({"queue": [[], []]}),
            json!({"user": "follow two"}),
            json!("assistant"),
            json!("agent_end"),
        ]
    );
    assert_eq!(find_all(&recs, json!({"type": "agent_start"})).len(), 1);
    assert_eq!(
        recs.last().unwrap(),
        &json!({"type":"agent_settled","aborted":false})
    );
    let texts = |n: usize| -> Vec<Value> {
        request_messages(&mock, n)
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| {
                m["content"][0]
                    .get("text")
                    .cloned()
                    .unwrap_or(json!("<tool_result>"))
            })
            .collect()
    };
    assert_eq!(
        texts(1),
        [
            json!("start"),
            json!("<tool_result>"),
            json!("steer one"),
            json!("steer two")
        ]
    );
    assert_eq!(
        texts(2),
        [
            json!("start"),
            json!("<tool_result>"),
            json!("steer one"),
            json!("steer two"),
            json!("follow one"),
            json!("follow two")
        ]
    );
    assert_eq!(mock.requests().len(), 3);
    // Queued messages keep the time they were queued: before the tool finished.
    let (_, steer_msg) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"steer one"}]}}),
    );
    let (_, tool_end) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"toolResult"}}),
    );
    assert!(
        steer_msg["message"]["timestamp"].as_u64() <= tool_end["message"]["timestamp"].as_u64()
    );
}

#[test]
fn steer_and_follow_up_one_at_a_time() {
    let mock = MockLlm::start(json!({"replies": [
        blocked_tool_reply("go"),
        text_reply("r1"),
        text_reply("r2"),
        text_reply("r3"),
        text_reply("r4"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    for (id, t) in [("sm", "set_steering_mode"), ("fm", "set_follow_up_mode")] {
        let r = agent.request(id, json!({"type": t, "mode": "one-at-a-time"}));
        assert_eq!(r["success"], true, "{r}");
    }
    let from = agent.records.len();
    start_blocked_run(&mut agent);
    agent.request("s1", json!({"type": "steer", "message": "s1"}));
    agent.request("s2", json!({"type": "steer", "message": "s2"}));
    agent.request("f1", json!({"type": "follow_up", "message": "f1"}));
    agent.request(
        "f2",
        json!({"type": "prompt", "message": "f2", "streamingBehavior": "followUp"}),
    );
    release(&agent, "go");
    let recs = finish_run(&mut agent, from);
    let (i_turn_end, _) = find(&recs, json!({"type": "turn_end"}));
    assert_eq!(
        deliveries(&recs[i_turn_end..]),
        [
            json!("turn_start"),
            json!({"queue": [["s2"], ["f1", "f2"]]}),
            json!({"user": "s1"}),
            json!("assistant"),
            json!("turn_start"),
            json!({"queue": [[], ["f1", "f2"]]}),
            json!({"user": "s2"}),
            json!("assistant"),
            json!("turn_start"),
            json!({"queue": [[], ["f2"]]}),
            json!({"user": "f1"}),
            json!("assistant"),
            json!("turn_start"),
            json!({"queue": [[], []]}),
            json!({"user": "f2"}),
            json!("assistant"),
            json!("agent_end"),
        ]
    );
    assert_eq!(mock.requests().len(), 5);
    assert_eq!(find_all(&recs, json!({"type": "agent_start"})).len(), 1);
    let (_, end) = find(&recs, json!({"type": "agent_end"}));
    assert_eq!(end["messages"].as_array().unwrap().len(), 12);
}

#[test]
fn messages_queued_while_idle_are_taken_by_the_next_run() {
    let mock = MockLlm::start(json!({"replies": [text_reply("a1"), text_reply("a2")]}));
    let mut agent = agent_for(&mock).spawn();
    agent.request("s", json!({"type": "steer", "message": "idle steer"}));
    agent.request("f", json!({"type": "follow_up", "message": "idle follow"}));
    let recs = run_prompt(&mut agent, "p", "the prompt");
    assert_eq!(
        deliveries(&recs),
        [
            json!("agent_start"),
            json!("turn_start"),
            json!({"user": "the prompt"}),
            json!({"queue": [[], ["idle follow"]]}),
            json!({"user": "idle steer"}),
            json!("assistant"),
            json!("turn_start"),
            json!({"queue": [[], []]}),
            json!({"user": "idle follow"}),
            json!("assistant"),
            json!("agent_end"),
        ]
    );
}

#[test]
fn clear_queue_mid_run_drops_the_queued_messages() {
    let mock = MockLlm::start(json!({"replies": [
        blocked_tool_reply("go"),
        text_reply("done"),
        text_reply("must not be requested"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    start_blocked_run(&mut agent);
    agent.request("s1", json!({"type": "steer", "message": "steer me"}));
    agent.request("f1", json!({"type": "follow_up", "message": "follow me"}));
    let r = agent.request("c", json!({"type": "clear_queue"}));
    assert_eq!(
        r,
        json!({"id":"c","type":"response","command":"clear_queue","success":true,
               "data":{"steering":["steer me"],"followUp":["follow me"]}})
    );
    let recs = agent.records[from..].to_vec();
    let (i, _) = find(&recs, json!({"type": "response", "id": "c"}));
    assert_eq!(
        recs[i - 1],
        json!({"type":"queue_update","steering":[],"followUp":[]})
    );
    release(&agent, "go");
    let recs = finish_run(&mut agent, from);
    let (_, end) = find(&recs, json!({"type": "agent_end"}));
    let roles: Vec<&str> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(mock.requests().len(), 2);
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["pendingMessageCount"], 0);
}

#[test]
fn steering_while_the_reply_streams_starts_another_turn() {
    // The first reply streams slowly; the steer arrives during it and is delivered after its
    // turn_end, in a new turn of the same low-level run.
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "a slow streamed answer", "chunk_size": 2}], "delay_ms": 150},
        text_reply("steered"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "start"}));
    agent.wait_for_timeout(
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta"}}),
        LONG,
    );
    let r = agent.request("s", json!({"type": "steer", "message": "change course"}));
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let recs = agent.records[from..].to_vec();
    let (i_s, _) = find(&recs, json!({"type": "response", "id": "s"}));
    let (i_first_end, _) = find(&recs, json!({"type": "turn_end"}));
    assert!(
        i_s < i_first_end,
        "the steer was queued while the reply streamed"
    );
    assert_eq!(
        deliveries(&recs[i_first_end..]),
        [
            json!("turn_start"),
            json!({"queue": [[], []]}),
            json!({"user": "change course"}),
            json!("assistant"),
            json!("agent_end"),
        ]
    );
    assert_eq!(find_all(&recs, json!({"type": "agent_start"})).len(), 1);
    let texts: Vec<Value> = request_messages(&mock, 1)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            json!("start"),
            json!("a slow streamed answer"),
            json!("change course")
        ]
    );
}

#[test]
fn prompt_with_streaming_behavior_while_idle_starts_a_run() {
    let mock = MockLlm::start(json!({"replies": [text_reply("ran")]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_command(
        &mut agent,
        json!({"id": "p", "type": "prompt", "message": "idle", "streamingBehavior": "steer"}),
    );
    assert_eq!(recs[0]["data"], json!({"disposition": "started"}));
    assert!(find_all(&recs, json!({"type": "queue_update"})).is_empty());
    assert_eq!(mock.requests().len(), 1);
}

/// Regression (pi 1.6.0 transcript): steering is drained after every `turn_end`, also when the
/// tool batch was aborted, so a steer queued while the aborted tool ran is delivered in the
/// synthetic aborted turn (`queue_update`, user message, aborted assistant) — not left queued
/// for the next prompt, where it would come after that prompt's own message.
#[test]
fn steer_queued_during_an_aborted_tool_is_delivered_in_the_aborted_turn() {
    let mock = MockLlm::start(json!({"replies": [
        blocked_tool_reply("go"),
        text_reply("after"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    start_blocked_run(&mut agent);
    agent.request("s", json!({"type": "steer", "message": "kept"}));
    agent.send(json!({"id": "ab", "type": "abort"}));
    agent.response("ab");
    let recs = agent.records[from..].to_vec();
    let (i_end, _) = find(&recs, json!({"type": "turn_end"}));
    assert_eq!(
        kinds(&recs[i_end..]),
        [
            "turn_end",
            "turn_start",
            "queue_update",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
            "response:abort"
        ]
    );
    assert_eq!(
        recs[i_end + 2],
        json!({"type":"queue_update","steering":[],"followUp":[]})
    );
    assert_eq!(recs[i_end + 4]["message"]["content"][0]["text"], "kept");
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["pendingMessageCount"], 0);
    assert_eq!(r["data"]["messageCount"], 6);

    // The next prompt's request: the steer before the new prompt, as pi sends it.
    run_prompt(&mut agent, "p2", "next");
    let texts: Vec<Value> = request_messages(&mock, 1)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["content"][0]
                .get("text")
                .cloned()
                .unwrap_or_else(|| m["content"][0]["type"].clone())
        })
        .collect();
    assert_eq!(
        texts,
        [
            json!("start"),
            json!("tool_use"),
            json!("tool_result"),
            json!("kept"),
            json!("next")
        ]
    );
}
