//! The RPC `bash` command (`rpc-protocol.md` §3.8, `tools.md` §4.3) through the real binary:
//! streamed output, exit codes, `abort_bash`, truncation, sanitizing, and how the recorded
//! `bashExecution` messages reach the session and the next request. `abort_bash` during a
//! command, which must not wait behind it, is in `regression.rs`.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::process::{release, wait_for_flag};
use crate::support::records::{find, norm};
use crate::support::run::{agent_for, no_llm, request_messages, run_prompt, LONG};
use crate::support::Agent;

/// The concatenated `delta`s of the updates for `id` among `records`.
fn deltas(records: &[Value], id: &str) -> String {
    records
        .iter()
        .filter(|r| r["type"] == "bash_execution_update" && r["id"] == id)
        .map(|r| r["delta"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn bash_streams_output_and_reports_the_exit_code() {
    let mock = no_llm();
    let mut agent = agent_for(&mock).spawn();
    let r = agent.request(
        "b1",
        json!({"type": "bash", "command": "echo hello; echo oops >&2; exit 3"}),
    );
    assert_eq!(
        r,
        json!({"id":"b1","type":"response","command":"bash","success":true,
               "data":{"output":"hello\noops\n","exitCode":3,"cancelled":false,"truncated":false}})
    );
    let (i_resp, _) = find(&agent.records, json!({"type": "response", "id": "b1"}));
    assert_eq!(deltas(&agent.records[..i_resp], "b1"), "hello\noops\n");
    assert_eq!(deltas(&agent.records[i_resp..], "b1"), "");

    // Several chunks over time; every update precedes the response.
    let r = agent.request(
        "b2",
        json!({"type": "bash", "command": "for i in 1 2 3; do echo line $i; sleep 0.1; done"}),
    );
    assert_eq!(
        r["data"],
        json!({"output":"line 1\nline 2\nline 3\n","exitCode":0,"cancelled":false,"truncated":false})
    );
    let (i_resp, _) = find(&agent.records, json!({"type": "response", "id": "b2"}));
    assert_eq!(
        deltas(&agent.records[..i_resp], "b2"),
        "line 1\nline 2\nline 3\n"
    );

    // Without an id: neither the updates nor the response carry one.
    agent.send(json!({"type": "bash", "command": "echo no-id"}));
    let r = agent
        .wait_for(json!({"type": "response", "command": "bash", "data": {"output": "no-id\n"}}));
    assert_eq!(
        r,
        json!({"type":"response","command":"bash","success":true,
               "data":{"output":"no-id\n","exitCode":0,"cancelled":false,"truncated":false}})
    );
    let update = agent
        .records
        .iter()
        .find(|r| r["type"] == "bash_execution_update" && r["delta"] == "no-id\n")
        .expect("an update for the id-less command");
    assert_eq!(
        update,
        &json!({"type":"bash_execution_update","delta":"no-id\n"})
    );

    // Empty output is "", not the tool's "(no output)".
    let r = agent.request("b3", json!({"type": "bash", "command": "true"}));
    assert_eq!(
        r["data"],
        json!({"output":"","exitCode":0,"cancelled":false,"truncated":false})
    );
    // Nothing runs: abort_bash still answers.
    let r = agent.request("ab", json!({"type": "abort_bash"}));
    assert_eq!(
        r,
        json!({"id":"ab","type":"response","command":"abort_bash","success":true})
    );
}

#[test]
fn truncated_output_keeps_the_tail_and_the_full_output_file() {
    let mock = no_llm();
    let mut agent = agent_for(&mock).spawn();
    let r = agent.request("b", json!({"type": "bash", "command": "seq 1 3000"}));
    let data = &r["data"];
    let tail: Vec<String> = (1001..=3000).map(|i| i.to_string()).collect();
    assert_eq!(data["output"], json!(tail.join("\n")));
    assert_eq!(data["exitCode"], 0);
    assert_eq!(data["cancelled"], false);
    assert_eq!(data["truncated"], true);
    let path = data["fullOutputPath"].as_str().expect("fullOutputPath");
    let tmp = agent.root.path().join("tmp");
    let name = path
        .strip_prefix(&format!("{}/pi-bash-", tmp.display()))
        .and_then(|rest| rest.strip_suffix(".log"))
        .unwrap_or_else(|| panic!("unexpected path {path}"));
    assert_eq!(name.len(), 16);
    assert!(name.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    let full: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(path).unwrap(), full);
    // The updates carry everything, not just the tail.
    assert_eq!(deltas(&agent.records, "b"), full);
    assert_eq!(
        data.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "output",
            "exitCode",
            "cancelled",
            "truncated",
            "fullOutputPath"
        ]
    );
}

#[test]
fn non_utf8_and_control_output_is_sanitized() {
    let mock = no_llm();
    let mut agent = agent_for(&mock).spawn();
    let r = agent.request(
        "b1",
        json!({"type": "bash", "command": "printf 'a\\xff\\xfeb\\n'; printf '\\xe2\\x82'; printf '\\xac\\n'"}),
    );
    assert_eq!(r["data"]["output"], "a\u{fffd}\u{fffd}b\n\u{20ac}\n");
    assert_eq!(
        deltas(&agent.records, "b1"),
        "a\u{fffd}\u{fffd}b\n\u{20ac}\n"
    );
    let r = agent.request(
        "b2",
        json!({"type": "bash", "command": "printf 'x\\r\\ny\\033[31mred\\033[0m\\x01z\\n'"}),
    );
    assert_eq!(r["data"]["output"], "x\nyredz\n");
    assert_eq!(deltas(&agent.records, "b2"), "x\nyredz\n");
    // The raw stdout lines are valid UTF-8 JSON.
    for line in &agent.raw_lines {
        assert!(std::str::from_utf8(line).is_ok());
    }
}

#[test]
fn several_bash_commands_run_at_once() {
    let mock = no_llm();
    let mut agent = agent_for(&mock).spawn();
    agent.send(json!({"id": "slow", "type": "bash", "command": format!("echo started; {}", wait_for_flag("go"))}));
    agent.wait_for_timeout(json!({"type": "bash_execution_update", "id": "slow"}), LONG);
    let r = agent.request("fast", json!({"type": "bash", "command": "echo fast"}));
    assert_eq!(r["data"]["output"], "fast\n");
    assert!(
        !agent
            .records
            .iter()
            .any(|r| r["type"] == "response" && r["id"] == "slow"),
        "the slow command is still running"
    );
    release(&agent, "go");
    let r = agent.response("slow");
    assert_eq!(
        r["data"],
        json!({"output":"started\nreleased\n","exitCode":0,"cancelled":false,"truncated":false})
    );
}

#[test]
fn bash_during_a_run_is_recorded_after_the_run() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "tool_call", "id": "toolu_w", "name": "bash",
                     "input": {"command": wait_for_flag("go")}}]},
        {"blocks": [{"type": "text", "text": "tool done"}]},
        {"blocks": [{"type": "text", "text": "saw it"}]},
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "start"}));
    agent.wait_for_timeout(json!({"type": "tool_execution_start"}), LONG);
    let r = agent.request("b", json!({"type": "bash", "command": "echo side"}));
    assert_eq!(r["data"]["output"], "side\n");
    // Not in the context while the run is active.
    let r = agent.request("m1", json!({"type": "get_messages"}));
    assert!(r["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["role"] != "bashExecution"));
    release(&agent, "go");
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let recs = agent.records[from..].to_vec();
    // No message events for it; the run's own messages are untouched.
    assert!(recs.iter().all(|r| r["message"]["role"] != "bashExecution"));
    let (_, end) = find(&recs, json!({"type": "agent_end"}));
    assert!(end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["role"] != "bashExecution"));

    let r = agent.request("m2", json!({"type": "get_messages"}));
    let roles: Vec<&str> = r["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "bashExecution"
        ]
    );
    // It is the last entry of the session, after the run's messages.
    let r = agent.request("e", json!({"type": "get_entries"}));
    let entries = r["data"]["entries"].as_array().unwrap();
    let last = entries.last().unwrap();
    assert_eq!(last["type"], "message");
    assert_eq!(last["message"]["role"], "bashExecution");
    assert_eq!(last["message"]["command"], "echo side");
    assert_eq!(r["data"]["leafId"], last["id"]);

    // The next prompt sends it as a user message after the previous reply.
    run_prompt(&mut agent, "p2", "what did it print?");
    let sent = request_messages(&mock, 2).as_array().unwrap().clone();
    let n = sent.len();
    assert_eq!(
        sent[n - 2..],
        [
            json!({"role":"user","content":[{"type":"text","text":"Ran `echo side`\n```\nside\n\n```"}]}),
            json!({"role":"user","content":[{"type":"text","text":"what did it print?"}]}),
        ]
    );
}

#[test]
fn bash_executions_reach_the_next_request_in_the_spec_format() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "I saw your shell output."}]}
    ]}));
    let mut agent: Agent = agent_for(&mock).spawn();
    agent.request(
        "b1",
        json!({"type": "bash", "command": "echo hello; echo oops >&2; exit 3"}),
    );
    agent.request("b2", json!({"type": "bash", "command": "true"}));
    agent.send(json!({"id": "b3", "type": "bash", "command": "echo before; sleep 1000"}));
    agent.wait_for_timeout(json!({"type": "bash_execution_update", "id": "b3"}), LONG);
    agent.request("ab", json!({"type": "abort_bash"}));
    agent.response("b3");
    let r = agent.request(
        "b4",
        json!({"type": "bash", "command": "echo secret-output", "excludeFromContext": true}),
    );
    assert_eq!(r["data"]["output"], "secret-output\n");
    let r = agent.request("b5", json!({"type": "bash", "command": "seq 1 2500"}));
    let full_path = r["data"]["fullOutputPath"].as_str().unwrap().to_string();
    let tail = r["data"]["output"].as_str().unwrap().to_string();

    let r = agent.request("m", json!({"type": "get_messages"}));
    let msgs = r["data"]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5);
    assert_eq!(
        norm(&msgs[0]),
        json!({"role":"bashExecution","command":"echo hello; echo oops >&2; exit 3",
               "output":"hello\noops\n","exitCode":3,"cancelled":false,"truncated":false,"timestamp":0})
    );
    assert_eq!(
        norm(&msgs[3]),
        json!({"role":"bashExecution","command":"echo secret-output","output":"secret-output\n",
               "exitCode":0,"cancelled":false,"truncated":false,"timestamp":0,"excludeFromContext":true})
    );
    assert_eq!(
        norm(&msgs[4]),
        json!({"role":"bashExecution","command":"seq 1 2500","output":tail,"exitCode":0,
               "cancelled":false,"truncated":true,"fullOutputPath":full_path,"timestamp":0})
    );

    run_prompt(&mut agent, "p", "What did the shell print?");
    let text = |t: String| json!({"role": "user", "content": [{"type": "text", "text": t}]});
    assert_eq!(
        request_messages(&mock, 0),
        json!([
            text("Ran `echo hello; echo oops >&2; exit 3`\n```\nhello\noops\n\n```\n\nCommand exited with code 3".into()),
            text("Ran `true`\n(no output)".into()),
            text("Ran `echo before; sleep 1000`\n```\nbefore\n\n```\n\n(command cancelled)".into()),
            text(format!("Ran `seq 1 2500`\n```\n{tail}\n```\n\n[Output truncated. Full output: {full_path}]")),
            text("What did the shell print?".into()),
        ])
    );
    let r = agent.request("s", json!({"type": "get_session_stats"}));
    assert_eq!(r["data"]["totalMessages"], 8);
    assert_eq!(r["data"]["userMessages"], 1);
}
