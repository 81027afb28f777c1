//! Stopping a run: `abort` before the first byte, mid-stream, mid-tool (the tool's process
//! group killed at once) and during the retry back-off, each answered after `agent_settled`;
//! and stdin EOF during a tool run, which ends the process without another record
//! (`rpc-protocol.md` §10).

use std::time::Instant;

use serde_json::{json, Value};

use crate::support::llm::zero_usage;
use crate::support::mock_llm::MockLlm;
use crate::support::process::{eventually, group_alive, pgid_of, read_pid};
use crate::support::records::{find, kinds, norm};
use crate::support::run::{agent_for, overloaded, overloaded_text, text_reply, tool_call, LONG};

#[test]
fn abort_mid_stream_keeps_the_partial_text_and_answers_after_settling() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Partial answer before the hang"}],
         "hang": true, "hang_after_blocks": 1}
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "hang please"}));
    agent.wait_for_timeout(
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_end"}}),
        LONG,
    );
    agent.send(json!({"id": "ab", "type": "abort"}));
    agent.response("ab");
    let recs = agent.records[from..].to_vec();
    let n = recs.len();
    assert_eq!(
        kinds(&recs[n - 6..]),
        [
            "update:text_end",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
            "response:abort"
        ]
    );
    let msg = recs[n - 5]["message"].clone();
    let error = msg["errorMessage"].as_str().unwrap().to_string();
    assert!(
        error == "Request was aborted" || error == "This operation was aborted",
        "{error}"
    );
    let expected = json!({"role":"assistant","content":[{"type":"text","text":"Partial answer before the hang"}],
        "api":"anthropic-messages","provider":"mock","model":"mock-sonnet","usage":msg["usage"],
        "stopReason":"aborted","timestamp":0,"responseId":"msg_mock_0001","errorMessage":error,
        "durationMs":0,"thinkingLevel":"medium"});
    assert_eq!(norm(&msg), expected);
    assert_eq!(
        recs[n - 4],
        json!({"type":"turn_end","message":msg,"toolResults":[]})
    );
    assert_eq!(recs[n - 3]["willRetry"], false);
    assert_eq!(recs[n - 2], json!({"type":"agent_settled","aborted":true}));
    assert_eq!(
        recs[n - 1],
        json!({"id":"ab","type":"response","command":"abort","success":true})
    );
    // The connection to the provider was dropped.
    eventually("the provider connection to close", || {
        mock.active_connections() == 0
    });
    let r = agent.request("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(r["data"], json!({"text": "Partial answer before the hang"}));
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["isStreaming"], false);
    // Abort while idle: answered at once, nothing else.
    let before = agent.records.len();
    let r = agent.request("ab2", json!({"type": "abort"}));
    assert_eq!(r["success"], true);
    assert_eq!(agent.records.len(), before + 1);
}

#[test]
fn abort_mid_tool_kills_the_process_group_at_once() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_s", "bash", json!({"command": "echo $$ > pid.txt; echo ready; sleep 30; echo never"}))]},
        text_reply("must not be requested")
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "sleep"}));
    agent.wait_for_timeout(json!({"type": "tool_execution_start"}), LONG);
    let pid_file = agent.cwd.join("pid.txt");
    eventually("the tool to write its pid", || {
        read_pid(&pid_file).is_some()
    });
    let pid = read_pid(&pid_file).unwrap();
    let pgid = pgid_of(pid).expect("the shell is running");
    assert_eq!(pgid, pid, "the tool's shell leads its own process group");
    assert_ne!(pgid_of(agent.pid()), Some(pgid));
    // Wait until the output was seen, so the abort text is deterministic.
    let deadline = Instant::now() + LONG;
    loop {
        let r = agent.wait_for_timeout(json!({"type": "tool_execution_update"}), LONG);
        if r["partialResult"]["content"] == json!([{"type":"text","text":"ready\n"}]) {
            break;
        }
        assert!(Instant::now() < deadline);
    }

    agent.send(json!({"id": "ab", "type": "abort"}));
    agent.response("ab");
    assert!(
        !group_alive(pgid),
        "process group {pgid} survived the abort"
    );
    let recs = agent.records[from..].to_vec();
    let (i_end, tend) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        norm(&tend),
        json!({"type":"tool_execution_end","toolCallId":"toolu_s","toolName":"bash",
               "result":{"content":[{"type":"text","text":"ready\n\n\nCommand aborted"}],"details":{}},
               "isError":true,"durationMs":0})
    );
    let tail = &recs[i_end + 1..];
    assert_eq!(
        kinds(tail),
        [
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
            "response:abort"
        ]
    );
    // The synthetic aborted turn: no request is sent for it.
    let synthetic = tail[5]["message"].clone();
    assert_eq!(tail[4]["message"], synthetic);
    assert_eq!(
        norm(&synthetic),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock",
               "model":"mock-sonnet","usage":zero_usage(),"stopReason":"aborted",
               "errorMessage":"This operation was aborted","timestamp":0,"durationMs":0,
               "thinkingLevel":"medium"})
    );
    assert_eq!(tail[7]["willRetry"], false);
    assert_eq!(tail[8], json!({"type":"agent_settled","aborted":true}));
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn abort_during_the_retry_back_off_cancels_the_retry() {
    let mock =
        MockLlm::start(json!({"replies": [overloaded(), text_reply("must not be requested")]}));
    let mut agent = agent_for(&mock)
        .settings(json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 60000, "maxAgentDelayMs": 120000}}))
        .spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "go"}));
    agent.wait_for_timeout(json!({"type": "entry_appended"}), LONG);
    agent.send(json!({"id": "ab", "type": "abort"}));
    agent.response("ab");
    let recs = agent.records[from..].to_vec();
    let n = recs.len();
    assert_eq!(
        recs[n - 5..],
        [
            json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":60000,"errorMessage":overloaded_text(1)}),
            recs[n - 4].clone(),
            json!({"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}),
            json!({"type":"agent_settled","aborted":true}),
            json!({"id":"ab","type":"response","command":"abort","success":true}),
        ]
    );
    assert_eq!(recs[n - 4]["type"], "entry_appended");
    assert_eq!(mock.requests().len(), 1);
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["isStreaming"], false);
}

#[test]
fn abort_before_the_first_byte_ends_with_one_aborted_message() {
    let mock = MockLlm::start(json!({"replies": [
        {"first_delay_ms": 60000, "blocks": [{"type": "text", "text": "late"}]}
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "go"}));
    mock.wait_requests(1, LONG);
    agent.send(json!({"id": "ab", "type": "abort"}));
    agent.response("ab");
    let recs = agent.records[from..].to_vec();
    let n = recs.len();
    assert_eq!(
        kinds(&recs[n - 6..]),
        [
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
            "response:abort"
        ]
    );
    // No partial: start and end carry the same final message.
    assert_eq!(recs[n - 6]["message"], recs[n - 5]["message"]);
    assert_eq!(
        norm(&recs[n - 5]["message"]),
        json!({"role":"assistant","content":[],"api":"anthropic-messages","provider":"mock",
               "model":"mock-sonnet","usage":zero_usage(),"stopReason":"aborted","timestamp":0,
               "errorMessage":"Request aborted","durationMs":0,"thinkingLevel":"medium"})
    );
    assert_eq!(recs[n - 2], json!({"type":"agent_settled","aborted":true}));
    eventually("the provider connection to close", || {
        mock.active_connections() == 0
    });
}

/// `rpc-protocol.md` §10: stdin EOF shuts down in order — the active run is aborted, its
/// children are killed, and no further events are written (observed with pi: not even
/// `agent_end`); the exit code is 0.
#[test]
fn eof_during_a_tool_run_kills_the_tool_and_writes_nothing_more() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t", "bash", json!({"command": "echo $$ > pid.txt; sleep 30"}))]},
    ]}));
    let mut agent = agent_for(&mock).spawn();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "sleep"}));
    agent.wait_for_timeout(
        json!({"type": "tool_execution_update", "partialResult": {"content": []}}),
        LONG,
    );
    let pid_file = agent.cwd.join("pid.txt");
    eventually("the tool to write its pid", || {
        read_pid(&pid_file).is_some()
    });
    let pgid = pgid_of(read_pid(&pid_file).unwrap()).expect("tool running");
    let seen = agent.records.len();
    agent.close_stdin();
    let status = agent.wait_exit(LONG);
    assert_eq!(status.code(), Some(0));
    assert!(!group_alive(pgid), "the tool's process group survived EOF");
    assert_eq!(
        agent.records[seen..],
        [] as [Value; 0],
        "records written after stdin EOF"
    );
}
