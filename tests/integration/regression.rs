//! Bugs pinned to pi's history: each test is named for a bug that pi (or a client of its RPC
//! protocol) had, says what the bug was, and proves pi-rpc does not have it.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::process::{eventually, group_alive, pgid_of, read_pid};
use crate::support::records::find;
use crate::support::run::{agent_for, no_llm, run_prompt, text_reply, LONG};
use crate::support::Agent;

// ------------------------------------------------------------------- U+2028 inside a record

/// The bug (pi, earendil-works/pi#1908): `JSON.stringify` leaves U+2028/U+2029 (line and
/// paragraph separator) raw inside strings, and pi's own RPC client read stdout with Node's
/// `readline`, which also breaks lines there. One event with such a character in a tool output
/// became several fragments that were not JSON, and the client never saw `agent_end`. pi fixed
/// the reader: records are split on "\n" only (`rpc-protocol.md` §1).
///
/// Proves both directions: a command line with the raw characters inside a string is one
/// command (a reader that split there would answer with parse errors and never answer `n`),
/// and pi-rpc writes them raw as pi does, each record one "\n"-terminated line.
#[test]
fn unicode_line_separators_survive_both_ways() {
    let mut a = Agent::spawn();
    let name = "a\u{2028}b\u{2029}c";
    // Raw in the command line, not escaped.
    a.send_raw(&format!(
        "{{\"id\":\"n\",\"type\":\"set_session_name\",\"name\":\"{name}\"}}"
    ));
    let r = a.response("n");
    assert_eq!(
        r,
        json!({"id":"n","type":"response","command":"set_session_name","success":true})
    );
    let ev = a.records[0].clone();
    assert_eq!(ev, json!({"type": "session_info_changed", "name": name}));
    // Written raw, not escaped, as pi does.
    let raw = String::from_utf8(a.raw_lines[0].clone()).unwrap();
    assert!(
        raw.contains('\u{2028}') && raw.contains('\u{2029}'),
        "{raw}"
    );
    let st = a.request("s", json!({"type": "get_state"}));
    assert_eq!(st["data"]["sessionName"], name);
}

// ---------------------------------------------------------------- one response per command

/// The responses among `records` that carry `id`.
fn responses_to(records: &[Value], id: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["type"] == "response" && r["id"] == id)
        .cloned()
        .collect()
}

/// The bug (pi): a client resolves its pending request by the `response` with the command's
/// `id`, so each id must get exactly one. pi answered a `prompt` refused before it started with a
/// failure and later a success for the same id (earendil-works/pi#3049), and answered an unknown
/// command without its id, so the client waited for it until its timeout
/// (earendil-works/pi#5868).
///
/// pi-rpc answers most commands on the processor thread, a started `prompt` from the agent
/// thread, and an `abort` during a run only after `agent_settled`. Proves that every kind gets
/// one response with its id: lines that are not commands, an unknown and an invalid command,
/// a prompt that starts a run, a prompt refused while it streams, two aborts during the run
/// (the second may come after the run settled: answered then, once), and a prompt refused
/// because there is no model; and that nothing more comes for any of them, up to the process's
/// exit (the agent thread works its jobs in order, so the next run starts after the first one
/// wrote everything).
#[test]
fn one_response_per_command_id() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Partial"}], "hang": true, "hang_after_blocks": 1},
        text_reply("next run"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    agent.send_raw("not json");
    agent.send(json!({"id": "no-type", "message": "no type field"}));
    agent.send(json!({"id": "unknown", "type": "definitely_not_a_command"}));
    agent.send(json!({"id": "invalid", "type": "set_model"}));
    agent.send(json!({"id": "p1", "type": "prompt", "message": "hang"}));
    agent.wait_for_timeout(
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_end"}}),
        LONG,
    );
    agent.send(json!({"id": "p2", "type": "prompt", "message": "while it streams"}));
    agent.send(json!({"id": "ab1", "type": "abort"}));
    agent.send(json!({"id": "ab2", "type": "abort"}));
    agent.response("ab1");
    agent.response("ab2");
    run_prompt(&mut agent, "p3", "next");
    agent.request("last", json!({"type": "get_state"}));
    agent.close_stdin();
    assert_eq!(agent.wait_exit(LONG).code(), Some(0));

    let records = agent.records.clone();
    let without_id: Vec<Value> = records
        .iter()
        .filter(|r| r["type"] == "response" && r.get("id").is_none())
        .cloned()
        .collect();
    assert_eq!(without_id.len(), 1, "{without_id:#?}");
    // The parser's own wording after the prefix is not pinned.
    let mut not_json = without_id[0].clone();
    assert!(not_json["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("Failed to parse command: ")));
    not_json["error"] = json!("Failed to parse command: …");
    assert_eq!(
        not_json,
        json!({"type":"response","command":"parse","success":false,
               "error":"Failed to parse command: …"})
    );
    let one = |id: &str| -> Value {
        let got = responses_to(&records, id);
        assert_eq!(got.len(), 1, "responses to {id}: {got:#?}");
        got[0].clone()
    };
    assert_eq!(
        one("no-type"),
        json!({"id":"no-type","type":"response","command":"parse","success":false,
               "error":"Failed to parse command: missing string field \"type\""})
    );
    assert_eq!(
        one("unknown"),
        json!({"id":"unknown","type":"response","command":"definitely_not_a_command",
               "success":false,"error":"Unknown command: definitely_not_a_command"})
    );
    assert_eq!(
        one("invalid"),
        json!({"id":"invalid","type":"response","command":"set_model","success":false,
               "error":"Missing required field \"provider\" (a string)"})
    );
    for id in ["p1", "p3"] {
        assert_eq!(
            one(id),
            json!({"id":id,"type":"response","command":"prompt","success":true,
                   "data":{"disposition":"started"}})
        );
    }
    assert_eq!(
        one("p2"),
        json!({"id":"p2","type":"response","command":"prompt","success":false,
               "error":"Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."})
    );
    for id in ["ab1", "ab2"] {
        assert_eq!(
            one(id),
            json!({"id":id,"type":"response","command":"abort","success":true})
        );
    }
    let last = one("last");
    assert_eq!(
        last,
        json!({"id":"last","type":"response","command":"get_state","success":true,
               "data":last["data"]})
    );
    // Ten command lines, ten responses.
    let all = records.iter().filter(|r| r["type"] == "response").count();
    assert_eq!(all, 10);

    // pi#3049's own case: no model, so the prompt is refused before anything starts.
    let mut bare = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(None)
        .spawn();
    bare.send(json!({"id": "p", "type": "prompt", "message": "Hello?"}));
    bare.request("s", json!({"type": "get_state"}));
    bare.close_stdin();
    assert_eq!(bare.wait_exit(LONG).code(), Some(0));
    let refused = responses_to(&bare.records, "p");
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(
        refused[0],
        json!({"id":"p","type":"response","command":"prompt","success":false,
               "error":refused[0]["error"]})
    );
    assert!(refused[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("No API key found for the selected model."));
    assert_eq!(
        bare.records
            .iter()
            .filter(|r| r["type"] == "response")
            .count(),
        2
    );
}

// ------------------------------------------------------------ abort_bash queued behind bash

/// Starts `command` (which must write its shell pid to `pid.txt` and then print something),
/// waits for its first output, aborts it, and checks the response order and the process group.
fn abort_bash_case(command: &str, first_output: &str) {
    let mock = no_llm();
    let mut agent = agent_for(&mock).spawn();
    agent.send(json!({"id": "b", "type": "bash", "command": command}));
    agent.wait_for_timeout(json!({"type": "bash_execution_update", "id": "b"}), LONG);
    let pid_file = agent.cwd.join("pid.txt");
    eventually("the command to write its pid", || {
        read_pid(&pid_file).is_some()
    });
    let pid = read_pid(&pid_file).unwrap();
    let pgid = pgid_of(pid).expect("the command is running");
    assert_eq!(pgid, pid, "the command leads its own process group");

    agent.send(json!({"id": "ab", "type": "abort_bash"}));
    agent.response("b");
    let (i_ab, ab) = find(&agent.records, json!({"type": "response", "id": "ab"}));
    let (i_b, b) = find(&agent.records, json!({"type": "response", "id": "b"}));
    assert!(i_ab < i_b, "abort_bash answers before the cancelled bash");
    assert_eq!(
        ab,
        json!({"id":"ab","type":"response","command":"abort_bash","success":true})
    );
    assert_eq!(
        b,
        json!({"id":"b","type":"response","command":"bash","success":true,
               "data":{"output":first_output,"cancelled":true,"truncated":false}})
    );
    assert!(
        !group_alive(pgid),
        "process group {pgid} survived abort_bash"
    );

    // The cancelled execution is recorded without an exit code.
    let r = agent.request("m", json!({"type": "get_messages"}));
    let msg = &r["data"]["messages"][0];
    assert_eq!(msg["role"], "bashExecution");
    assert_eq!(msg["cancelled"], true);
    assert!(msg.get("exitCode").is_none(), "{msg}");
}

/// The bug (oh-my-pi, a fork of pi, can1357/oh-my-pi#4013): its RPC loop awaited each command
/// before reading the next line, so an `abort_bash` sent while a `bash` command ran was read
/// only once that command had ended by itself: the one command that can cancel a `bash` waited
/// behind it. pi-rpc runs each `bash` on its own thread and reads on.
///
/// Proves that `abort_bash` sent during `sleep 1000` is answered first, and that the `bash`
/// response then comes (without it the test would wait for it in vain) with the output so far
/// and `cancelled: true`, the command's process group gone.
#[test]
fn abort_bash_kills_a_sleeping_command() {
    abort_bash_case(
        "echo $$ > pid.txt; echo before-sleep; sleep 1000; echo after-sleep",
        "before-sleep\n",
    );
}

/// The same bug for a command that ignores SIGTERM: `abort_bash` must not wait for it to end
/// by itself either (pi-rpc kills the process group with SIGKILL, which cannot be ignored).
#[test]
fn abort_bash_kills_a_command_that_ignores_sigterm() {
    abort_bash_case(
        "trap '' TERM; echo $$ > pid.txt; echo trapped; sleep 1000",
        "trapped\n",
    );
}

// ------------------------------------------------------------ children outliving a kill -9

/// True while `pid` runs (a zombie, dead but not yet reaped by whoever adopted it, does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.get(stat.rfind(')')? + 2..)?.to_string();
            after.chars().next()
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// The bug (pi, and pi-rpc before issue 17 §8): after `kill -9` of the agent, the shell of an
/// RPC `bash` command (and the bash tool's) kept running, as did extension processes: nothing
/// was left to kill their process groups. Children now get a parent-death signal, forked from
/// one long-lived thread (the signal follows the forking thread, and the RPC bash thread that
/// asked for this shell is short-lived).
#[test]
fn children_die_with_a_killed_pi_rpc() {
    let mock = no_llm();
    let mut agent = agent_for(&mock).spawn();
    // `exec`: the command replaces the shell, keeping its pid and its death signal.
    agent.send(json!({"id": "b", "type": "bash",
        "command": "echo $$ > pid.txt; echo started; exec sleep 300"}));
    agent.wait_for_timeout(json!({"type": "bash_execution_update", "id": "b"}), LONG);
    let pid_file = agent.cwd.join("pid.txt");
    eventually("the command to write its pid", || {
        read_pid(&pid_file).is_some()
    });
    let pid = read_pid(&pid_file).unwrap();
    eventually("the command to run", || running(pid));
    agent.kill();
    eventually("the command to die with pi-rpc", || !running(pid));
}

/// The same for an extension process.
#[test]
fn extension_processes_die_with_a_killed_pi_rpc() {
    let Some(py) = crate::support::ext::python("extension_processes_die_with_a_killed_pi_rpc")
    else {
        return;
    };
    let mock = no_llm();
    let mut agent = crate::support::ext::python_extension(
        agent_for(&mock),
        &py,
        "pidfile",
        r#"
import os, threading, time

def initialize(msg):
    with open(os.path.join(msg["cwd"], "ext-pid.txt"), "w") as f:
        f.write(str(os.getpid()))
    # Outlives stdin's end (a non-daemon thread), as a careless extension would.
    threading.Thread(target=time.sleep, args=(300,)).start()
    return {}
"#,
    )
    .spawn();
    let r = agent.request("s", json!({"type": "get_state"}));
    assert_eq!(r["success"], true, "{r}");
    let pid = read_pid(&agent.cwd.join("ext-pid.txt")).expect("the extension wrote its pid");
    assert!(running(pid));
    agent.kill();
    eventually("the extension to die with pi-rpc", || !running(pid));
}
