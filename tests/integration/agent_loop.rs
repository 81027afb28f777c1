//! The agent loop through the real binary: prompts against the scripted LLM server, the whole
//! event sequences (`rpc-protocol.md` §6, §11; `agent-loop.md` §1–§6), tool calls and their
//! error paths, queues, abort, retry, images, and the state commands after a run.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::agent::{mock_models_json, subset_match, AgentBuilder};
use crate::support::mock_llm::MockLlm;
use crate::support::tempdir::TempDir;
use crate::support::Agent;

/// A 4×4 red PNG (the conformance scenarios' `PNG_B64`).
pub(crate) const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";

/// How long a test waits for something the binary must do "at once" (generous: CI is slow).
pub(crate) const LONG: Duration = Duration::from_secs(30);

/// Settings for fast retries.
pub(crate) fn fast_settings() -> Value {
    json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 1, "maxAgentDelayMs": 500}})
}

/// An agent (mock-sonnet, `--no-session`) talking to `mock`.
pub(crate) fn agent_for(mock: &MockLlm) -> AgentBuilder {
    Agent::builder()
        .models(Some(mock_models_json(&mock.base_url())))
        .settings(fast_settings())
}

/// Sends a prompt and returns every record from its response to `agent_settled`.
pub(crate) fn run_prompt(agent: &mut Agent, id: &str, message: &str) -> Vec<Value> {
    run_command(
        agent,
        json!({"id": id, "type": "prompt", "message": message}),
    )
}

/// Sends a run-starting command and returns every record from then to `agent_settled`.
pub(crate) fn run_command(agent: &mut Agent, cmd: Value) -> Vec<Value> {
    let start = agent.records.len();
    agent.send(cmd);
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    agent.records[start..].to_vec()
}

/// The `type` of each record, `message_update`s as `update:<event type>`.
pub(crate) fn kinds(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let t = r["type"].as_str().unwrap_or("?");
            match t {
                "message_update" => format!(
                    "update:{}",
                    r["assistantMessageEvent"]["type"].as_str().unwrap_or("?")
                ),
                "message_start" | "message_end" => {
                    format!("{t}:{}", r["message"]["role"].as_str().unwrap_or("?"))
                }
                "response" => format!("response:{}", r["command"].as_str().unwrap_or("?")),
                _ => t.to_string(),
            }
        })
        .collect()
}

/// Clock-dependent fields zeroed: numeric `timestamp`, `durationMs`, `wall_time_seconds`;
/// ISO `timestamp` strings become `<ISO>`.
pub(crate) fn norm(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("timestamp", Value::Number(_)) => json!(0),
                        ("timestamp", Value::String(_)) => json!("<ISO>"),
                        ("durationMs" | "wall_time_seconds", Value::Number(_)) => json!(0),
                        _ => norm(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        _ => v.clone(),
    }
}

/// A request body without Anthropic `cache_control` markers (placement is the adapter's
/// business, tested with the adapter).
pub(crate) fn strip_cache(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_cache).collect()),
        _ => v.clone(),
    }
}

/// The `messages` of the n-th logged request, without cache markers.
pub(crate) fn request_messages(mock: &MockLlm, n: usize) -> Value {
    let log = mock.wait_requests(n + 1, LONG);
    strip_cache(&log[n]["body"]["messages"])
}

/// The first record matching `pattern` and its index.
pub(crate) fn find(records: &[Value], pattern: Value) -> (usize, Value) {
    records
        .iter()
        .enumerate()
        .find(|(_, r)| subset_match(&pattern, r))
        .map(|(i, r)| (i, r.clone()))
        .unwrap_or_else(|| panic!("no record matching {pattern} in {records:#?}"))
}

/// Every record matching `pattern`.
pub(crate) fn find_all(records: &[Value], pattern: Value) -> Vec<Value> {
    records
        .iter()
        .filter(|r| subset_match(&pattern, r))
        .cloned()
        .collect()
}

pub(crate) fn user_msg(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
}

pub(crate) fn zero_usage() -> Value {
    json!({"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,
           "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}})
}

/// The mock's default usage (input 10, output 5) as pi reports it.
pub(crate) fn default_usage() -> Value {
    json!({"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,
           "cost":{"input":3e-05,"output":7.500000000000001e-05,"cacheRead":0,"cacheWrite":0,
                   "total":0.000105,"totalFromProvider":false},"cacheWrite1h":0})
}

/// A final assistant message as pi writes it (normalized), for a mock reply with default usage.
pub(crate) fn assistant_msg(content: Value, stop: &str, raw_stop: &str, response_n: u32) -> Value {
    json!({"role":"assistant","content":content,"api":"anthropic-messages","provider":"mock",
           "model":"mock-sonnet","usage":default_usage(),"stopReason":stop,"timestamp":0,
           "responseId":format!("msg_mock_{response_n:04}"),"rawStopReason":raw_stop,
           "durationMs":0,"thinkingLevel":"medium"})
}

/// `{"status": 529, ...}` and the error text pi builds from it.
pub(crate) fn overloaded() -> Value {
    json!({"status": 529, "error_type": "overloaded_error", "error_message": "Overloaded"})
}

pub(crate) fn overloaded_text(n: u32) -> String {
    format!(
        "529 {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}},\"request_id\":\"req_mock_{n:04}\"}}"
    )
}

/// A bash command that blocks until the test creates `<cwd>/<flag>`.
pub(crate) fn wait_for_flag(flag: &str) -> String {
    format!("while [ ! -e {flag} ]; do sleep 0.02; done; echo released")
}

pub(crate) fn release(agent: &Agent, flag: &str) {
    std::fs::write(agent.cwd.join(flag), "").expect("create flag file");
}

/// Polls `cond` until it holds (state that no event announces, e.g. a file written by a child).
pub(crate) fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + LONG;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn tool_call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_call", "id": id, "name": name, "input": input})
}

fn text_reply(text: &str) -> Value {
    json!({"blocks": [{"type": "text", "text": text}]})
}

// ------------------------------------------------------------------------------ plain reply

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

// ------------------------------------------------------------------------------ tools

#[test]
fn bash_tool_turn_and_the_tool_result_in_the_next_request() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Running it."},
                    {"type": "tool_call", "id": "toolu_1", "name": "bash", "input": {"command": "echo hi"}}]},
        text_reply("It printed hi.")
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "Run echo hi");

    let (i_end1, end1) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"assistant"}}),
    );
    let first = end1["message"].clone();
    assert_eq!(
        norm(&first),
        assistant_msg(
            json!([{"type":"text","text":"Running it."},
                   {"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"echo hi"}}]),
            "toolUse",
            "tool_use",
            1
        )
    );
    let (_, tc_start) = find(
        &recs,
        json!({"type":"message_update","assistantMessageEvent":{"type":"toolcall_start"}}),
    );
    assert_eq!(
        tc_start["assistantMessageEvent"],
        json!({"type":"toolcall_start","contentIndex":1,"id":"toolu_1","toolName":"bash"})
    );
    let (_, tc_end) = find(
        &recs,
        json!({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end"}}),
    );
    assert_eq!(
        tc_end["assistantMessageEvent"],
        json!({"type":"toolcall_end","contentIndex":1,"toolCall":
               {"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"echo hi"}}})
    );

    // Tool execution: start, updates (first one empty), end; then the toolResult message.
    let rest = &recs[i_end1 + 1..];
    assert_eq!(
        rest[0],
        json!({"type":"tool_execution_start","toolCallId":"toolu_1","toolName":"bash","args":{"command":"echo hi"}})
    );
    assert_eq!(
        rest[1],
        json!({"type":"tool_execution_update","toolCallId":"toolu_1","toolName":"bash",
               "args":{"command":"echo hi"},"partialResult":{"content":[]}})
    );
    let (i_tend, tend) = find(rest, json!({"type": "tool_execution_end"}));
    assert!(rest[2..i_tend]
        .iter()
        .all(|r| r["type"] == "tool_execution_update"));
    assert!(tend["durationMs"].is_u64(), "{tend}");
    assert_eq!(
        norm(&tend),
        json!({"type":"tool_execution_end","toolCallId":"toolu_1","toolName":"bash",
               "result":{"content":[{"type":"text","text":"hi\n"}],
                         "structuredContent":{"output":"hi\n","truncated":false,"exit_code":0,"wall_time_seconds":0}},
               "isError":false,"durationMs":0})
    );
    let tool_result = rest[i_tend + 1]["message"].clone();
    assert_eq!(rest[i_tend + 1]["type"], "message_start");
    assert_eq!(
        rest[i_tend + 2],
        json!({"type":"message_end","message":tool_result})
    );
    assert_eq!(
        norm(&tool_result),
        json!({"role":"toolResult","toolCallId":"toolu_1","toolName":"bash",
               "content":[{"type":"text","text":"hi\n"}],"isError":false,"durationMs":0,"timestamp":0})
    );
    assert_eq!(
        rest[i_tend + 3],
        json!({"type":"turn_end","message":first,"toolResults":[tool_result]})
    );
    assert_eq!(rest[i_tend + 4], json!({"type": "turn_start"}));

    let n = recs.len();
    let second = recs[n - 4]["message"].clone();
    assert_eq!(recs[n - 4]["type"], "message_end");
    assert_eq!(
        norm(&second),
        assistant_msg(
            json!([{"type":"text","text":"It printed hi."}]),
            "stop",
            "end_turn",
            2
        )
    );
    assert_eq!(
        recs[n - 3],
        json!({"type":"turn_end","message":second,"toolResults":[]})
    );
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
    assert_eq!(end["messages"][3], tool_result);
    assert_eq!(recs[n - 1], json!({"type":"agent_settled","aborted":false}));

    assert_eq!(
        request_messages(&mock, 1),
        json!([
            {"role":"user","content":[{"type":"text","text":"Run echo hi"}]},
            {"role":"assistant","content":[{"type":"text","text":"Running it."},
                {"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"echo hi"}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi\n","is_error":false}]}
        ])
    );
    let r = agent.request("s", json!({"type": "get_session_stats"}));
    assert_eq!(r["data"]["toolCalls"], 1);
    assert_eq!(r["data"]["toolResults"], 1);
    assert_eq!(r["data"]["assistantMessages"], 2);
}

#[test]
fn bash_tool_non_zero_exit_is_an_error_result() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "bash", json!({"command": "echo out; echo err >&2; exit 3"}))]},
        text_reply("done")
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "fail please");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(end["isError"], true);
    assert_eq!(
        end["result"]["content"],
        json!([{"type":"text","text":"out\nerr\n\n\nCommand exited with code 3"}])
    );
    assert_eq!(
        norm(&end["result"]["structuredContent"]),
        json!({"output":"out\nerr\n","truncated":false,"exit_code":3,"wall_time_seconds":0})
    );
    let (_, tr) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"toolResult"}}),
    );
    assert_eq!(tr["message"]["isError"], true);
}

#[test]
fn file_tools_success_and_error_paths_in_one_parallel_batch() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t_write", "write", json!({"path": "sub/dir/new.txt", "content": "alpha\nbeta\n"})),
            tool_call("t_read", "read", json!({"path": "notes.txt"})),
            tool_call("t_missing", "read", json!({"path": "missing.txt"})),
            tool_call("t_edit", "edit", json!({"path": "edit_me.txt", "edits": [{"oldText": "two", "newText": "TWO"}]})),
            tool_call("t_nomatch", "edit", json!({"path": "other.txt", "edits": [{"oldText": "zzz", "newText": "x"}]})),
        ]},
        text_reply("All done.")
    ]}));
    let mut agent = agent_for(&mock)
        .cwd_file("notes.txt", "line one\nline two\n")
        .cwd_file("edit_me.txt", "one\ntwo\nthree\n")
        .cwd_file("other.txt", "abc\n")
        .spawn();
    let recs = run_prompt(&mut agent, "p1", "Use the file tools");
    let cwd = agent.cwd.canonicalize().unwrap();

    // All starts in call order before any end; the toolResult messages in call order.
    let ids = ["t_write", "t_read", "t_missing", "t_edit", "t_nomatch"];
    let starts: Vec<usize> = ids
        .iter()
        .map(|id| {
            find(
                &recs,
                json!({"type":"tool_execution_start","toolCallId":id}),
            )
            .0
        })
        .collect();
    let ends: Vec<usize> = ids
        .iter()
        .map(|id| find(&recs, json!({"type":"tool_execution_end","toolCallId":id})).0)
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]));
    assert!(starts.iter().max() < ends.iter().min());
    let results: Vec<Value> = find_all(
        &recs,
        json!({"type":"message_end","message":{"role":"toolResult"}}),
    )
    .into_iter()
    .map(|r| norm(&r["message"]))
    .collect();
    let result_ids: Vec<&str> = results
        .iter()
        .map(|m| m["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(result_ids, ids);
    let i_last_end = *ends.iter().max().unwrap();
    let (i_first_result, _) = find(
        &recs,
        json!({"type":"message_start","message":{"role":"toolResult"}}),
    );
    assert!(i_last_end < i_first_result, "results follow every end");

    let end = |id: &str| norm(&find(&recs, json!({"type":"tool_execution_end","toolCallId":id})).1);
    assert_eq!(
        end("t_write"),
        json!({"type":"tool_execution_end","toolCallId":"t_write","toolName":"write",
               "result":{"content":[{"type":"text","text":"Successfully wrote to sub/dir/new.txt"}]},
               "isError":false,"durationMs":0})
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("sub/dir/new.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert_eq!(
        end("t_read"),
        json!({"type":"tool_execution_end","toolCallId":"t_read","toolName":"read",
               "result":{"content":[{"type":"text","text":"line one\nline two\n"}],
                         "structuredContent":"line one\nline two\n"},
               "isError":false,"durationMs":0})
    );
    assert_eq!(
        end("t_missing"),
        json!({"type":"tool_execution_end","toolCallId":"t_missing","toolName":"read",
               "result":{"content":[{"type":"text","text":format!("ENOENT: no such file or directory, access '{}/missing.txt'", cwd.display())}],
                         "details":{}},
               "isError":true,"durationMs":0})
    );
    assert_eq!(
        end("t_edit"),
        json!({"type":"tool_execution_end","toolCallId":"t_edit","toolName":"edit",
               "result":{"content":[{"type":"text","text":"Successfully replaced 1 block(s) in edit_me.txt."}],
                         "details":{"diff":" 1 one\n-2 two\n+2 TWO\n 3 three",
                                    "patch":"--- edit_me.txt\n+++ edit_me.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
                                    "firstChangedLine":2}},
               "isError":false,"durationMs":0})
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("edit_me.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );
    assert_eq!(
        end("t_nomatch"),
        json!({"type":"tool_execution_end","toolCallId":"t_nomatch","toolName":"edit",
               "result":{"content":[{"type":"text","text":"Could not find the exact text in other.txt. The old text must match exactly including all whitespace and newlines."}],
                         "details":{}},
               "isError":true,"durationMs":0})
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("other.txt")).unwrap(),
        "abc\n"
    );

    // The toolResult messages: details kept, structuredContent not stored.
    assert_eq!(
        results[2],
        json!({"role":"toolResult","toolCallId":"t_missing","toolName":"read",
               "content":[{"type":"text","text":format!("ENOENT: no such file or directory, access '{}/missing.txt'", cwd.display())}],
               "details":{},"isError":true,"durationMs":0,"timestamp":0})
    );
    assert_eq!(
        results[1],
        json!({"role":"toolResult","toolCallId":"t_read","toolName":"read",
               "content":[{"type":"text","text":"line one\nline two\n"}],"isError":false,"durationMs":0,"timestamp":0})
    );

    // All five results go back in one user message, in call order.
    let sent = request_messages(&mock, 1);
    let blocks = sent[2]["content"].as_array().unwrap();
    let sent_ids: Vec<&str> = blocks
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(sent_ids, ids);
    let errors: Vec<bool> = blocks
        .iter()
        .map(|b| b["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(errors, [false, false, true, false, true]);
}

#[test]
fn unknown_tool_and_invalid_arguments_fail_without_running() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "nope", json!({"x": 1})),
            tool_call("t2", "bash", json!({"cmd": "touch should_not_exist"})),
            tool_call("t3", "read", json!({"path": 5, "limit": "x"})),
        ]},
        text_reply("ok")
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "go");
    let ends = find_all(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        ends,
        [
            json!({"type":"tool_execution_end","toolCallId":"t1","toolName":"nope",
                   "result":{"content":[{"type":"text","text":"Tool nope not found"}],"details":{}},"isError":true}),
            json!({"type":"tool_execution_end","toolCallId":"t2","toolName":"bash",
                   "result":{"content":[{"type":"text","text":"Validation failed for tool \"bash\":\n  - command: missing\n\nReceived arguments:\n{\n  \"cmd\": \"touch should_not_exist\"\n}"}],"details":{}},"isError":true}),
            json!({"type":"tool_execution_end","toolCallId":"t3","toolName":"read",
                   "result":{"content":[{"type":"text","text":"Validation failed for tool \"read\":\n  - limit: expected number, got string\n\nReceived arguments:\n{\n  \"path\": 5,\n  \"limit\": \"x\"\n}"}],"details":{}},"isError":true}),
        ]
    );
    assert!(!agent.cwd.join("should_not_exist").exists());
    // No durationMs on the messages of calls that did not run.
    let results = find_all(
        &recs,
        json!({"type":"message_end","message":{"role":"toolResult"}}),
    );
    assert_eq!(
        norm(&results[0]["message"]),
        json!({"role":"toolResult","toolCallId":"t1","toolName":"nope",
               "content":[{"type":"text","text":"Tool nope not found"}],"details":{},"isError":true,"timestamp":0})
    );
    assert!(results
        .iter()
        .all(|r| r["message"].get("durationMs").is_none()));
    assert!(recs.iter().all(|r| r["type"] != "tool_execution_update"));
    // The run goes on to the next turn.
    assert_eq!(mock.wait_requests(2, LONG).len(), 2);
    assert_eq!(
        recs.last().unwrap(),
        &json!({"type":"agent_settled","aborted":false})
    );
}

// ------------------------------------------------------------------------------ queues

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

// ------------------------------------------------------------------------------ abort

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

/// True while the process group exists (`kill -0 -PGID` succeeds).
pub(crate) fn group_alive(pgid: u32) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -0 -- -{pgid} 2>/dev/null"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The process group of `pid` (field 5 of `/proc/<pid>/stat`).
pub(crate) fn pgid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(2)?.parse().ok()
}

pub(crate) fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
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

// ------------------------------------------------------------------------------ retry

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

// ------------------------------------------------------------------------------ images

#[test]
fn prompt_images_go_to_the_provider_or_become_a_placeholder() {
    let mock =
        MockLlm::start(json!({"replies": [text_reply("A red square."), text_reply("Still red.")]}));
    let mut agent = agent_for(&mock).spawn();
    let image = json!({"type": "image", "data": PNG_B64, "mimeType": "image/png"});
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "What is this?", "images": [image]}),
    );
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(
        norm(&user["message"]),
        json!({"role":"user","content":[{"type":"text","text":"What is this?"},
               {"type":"image","data":PNG_B64,"mimeType":"image/png"}],"timestamp":0})
    );
    assert_eq!(
        request_messages(&mock, 0),
        json!([{"role":"user","content":[
            {"type":"text","text":"What is this?"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ]}])
    );

    // A text-only model: the stored messages keep the image, the request carries placeholders.
    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let recs = run_command(
        &mut agent,
        json!({"id": "p2", "type": "prompt", "message": "And now?", "images": [image, image]}),
    );
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(user["message"]["content"].as_array().unwrap().len(), 3);
    let placeholder =
        json!({"type":"text","text":"(image omitted: model does not support images)"});
    assert_eq!(
        request_messages(&mock, 1),
        json!([
            {"role":"user","content":[{"type":"text","text":"What is this?"}, placeholder]},
            {"role":"assistant","content":[{"type":"text","text":"A red square."}]},
            {"role":"user","content":[{"type":"text","text":"And now?"}, placeholder]}
        ])
    );
}

#[cfg(feature = "images")]
/// A `width`×`height` gradient (compresses well, so it stays PNG when resized) as PNG bytes.
fn gradient_png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x % 256) as u8,
            (y % 256) as u8,
            ((x / 256 + y / 256) * 40 % 256) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("encode png");
    out.into_inner()
}

#[cfg(feature = "images")]
/// Width and height of base64 image data.
fn image_dimensions(data: &Value) -> (u32, u32) {
    let bytes = pi_rpc::image::base64::decode(data.as_str().expect("base64 data"));
    let img = image::load_from_memory(&bytes).expect("a decodable image");
    (img.width(), img.height())
}

#[cfg(feature = "images")]
#[test]
fn prompt_with_a_large_png_sends_it_resized_with_a_dimension_note() {
    let mock = MockLlm::start(json!({"replies": [text_reply("Seen.")]}));
    let mut agent = agent_for(&mock).spawn();
    let png = pi_rpc::image::base64::encode(&gradient_png(3000, 2400));
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "Describe it",
               "images": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
    );
    assert_eq!(
        kinds(&recs[..5]),
        [
            "response:prompt",
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system"
        ]
    );
    let text = "Describe it\n\n[Image: original 3000x2400, displayed at 2000x1600. \
                Multiply coordinates by 1.50 to map to original image.]";
    let sent = request_messages(&mock, 0);
    let content = &sent[0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": text}));
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    let data = &content[1]["source"]["data"];
    assert!(data.as_str().unwrap().len() < png.len());
    assert_eq!(image_dimensions(data), (2000, 1600));
    // The message in the events (and the session) is the normalized one the provider got.
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(
        norm(&user["message"]),
        json!({"role":"user","content":[{"type":"text","text":text},
               {"type":"image","data":data,"mimeType":"image/png"}],"timestamp":0})
    );
}

/// The minimal build (`--no-default-features`, no image codecs): an inline-format image that
/// fits passes unchanged; one that needs converting is left out with a note naming the
/// missing support.
#[cfg(not(feature = "images"))]
#[test]
fn without_the_images_feature_fitting_images_pass_and_others_say_why() {
    let mock = MockLlm::start(json!({"replies": [text_reply("ok")]}));
    let mut agent = agent_for(&mock).spawn();
    run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "two images", "images": [
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {"type": "image", "data": "Qk0eAAAAAAAAABoAAAAMAAAAAQABAAEAGAAAAP8A", "mimeType": "image/bmp"},
        ]}),
    );
    let sent = request_messages(&mock, 0);
    assert_eq!(
        sent[0]["content"],
        json!([
            {"type": "text", "text": "two images\n\n[Image omitted: this pi-rpc build has no image \
                processing (built without the `images` feature), so it cannot convert this image \
                to a supported inline image format (PNG, JPEG, GIF, WebP).]"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ])
    );
}

#[cfg(feature = "images")]
#[test]
fn prompt_images_tiny_kept_byte_identical_broken_becomes_the_omitted_note() {
    let mock = MockLlm::start(json!({"replies": [text_reply("ok")]}));
    let mut agent = agent_for(&mock).spawn();
    let bmp = {
        let img = image::RgbImage::from_pixel(3, 2, image::Rgb([0, 200, 0]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Bmp)
            .expect("encode bmp");
        pi_rpc::image::base64::encode(&out.into_inner())
    };
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "three images", "images": [
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"},
            {"type": "image", "data": bmp, "mimeType": "image/bmp"},
        ]}),
    );
    let text = "three images\n\n\
                [Image omitted: could not be resized below the inline image size limit.]\n\
                [Image converted from image/bmp to image/png.]";
    let sent = request_messages(&mock, 0);
    let content = sent[0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[0], json!({"type": "text", "text": text}));
    assert_eq!(
        content[1],
        json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}})
    );
    assert_eq!(content[2]["source"]["media_type"], "image/png");
    assert_eq!(image_dimensions(&content[2]["source"]["data"]), (3, 2));
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(user["message"]["content"][0]["text"], text);
    assert_eq!(user["message"]["content"][1]["data"], PNG_B64);
}

#[cfg(feature = "images")]
#[test]
fn queued_images_are_normalized_at_delivery_with_the_current_models_limits() {
    let mock = MockLlm::start(json!({"replies": [text_reply("a1"), text_reply("a2")]}));
    let mut models = mock_models_json(&mock.base_url());
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"id": "mock-small", "name": "Mock Small", "reasoning": false,
                     "input": ["text", "image"], "contextWindow": 100000, "maxTokens": 4096,
                     "inputLimits": {"images": {"resize": {"maxWidth": 100, "maxHeight": 100}}},
                     "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}}),
        );
    let mut agent = Agent::builder()
        .models(Some(models))
        .settings(fast_settings())
        .spawn();
    let png = pi_rpc::image::base64::encode(&gradient_png(400, 200));
    let r = agent.request(
        "s",
        json!({"type": "steer", "message": "small one",
               "images": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
    );
    assert_eq!(r["success"], true, "{r}");
    let r = agent.request(
        "f",
        json!({"type": "follow_up", "message": "broken one",
               "images": [{"type": "image", "data": "AAAA", "mimeType": "image/webp"}]}),
    );
    assert_eq!(r["success"], true, "{r}");
    // Queued under mock-sonnet (2000 px), delivered under mock-small (100 px).
    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-small"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let recs = run_prompt(&mut agent, "p", "go");
    let steer_text = "small one\n\n[Image: original 400x200, displayed at 100x50. \
                      Multiply coordinates by 4.00 to map to original image.]";
    let follow_text =
        "broken one\n\n[Image omitted: could not be resized below the inline image size limit.]";
    let users: Vec<Value> = find_all(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    )
    .into_iter()
    .map(|r| r["message"]["content"].clone())
    .collect();
    assert_eq!(users.len(), 3);
    assert_eq!(users[0], json!([{"type":"text","text":"go"}]));
    assert_eq!(users[1][0], json!({"type":"text","text":steer_text}));
    assert_eq!(image_dimensions(&users[1][1]["data"]), (100, 50));
    assert_eq!(users[2], json!([{"type":"text","text":follow_text}]));
    let sent = request_messages(&mock, 1);
    assert_eq!(sent[1]["content"][0]["text"], steer_text);
    assert_eq!(
        sent[3]["content"],
        json!([{"type":"text","text":follow_text}])
    );
}

#[cfg(feature = "images")]
#[test]
fn image_settings_auto_resize_off_and_block_images() {
    let mock = MockLlm::start(json!({"replies": [text_reply("a1"), text_reply("a2")]}));
    let mut settings = fast_settings();
    settings["images"] = json!({"autoResize": false});
    let mut agent = agent_for(&mock).settings(settings).spawn();
    // autoResize off: a picture over the limits goes out unchanged.
    let png = pi_rpc::image::base64::encode(&gradient_png(2100, 10));
    run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "wide",
               "images": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
    );
    let sent = request_messages(&mock, 0);
    assert_eq!(sent[0]["content"][0]["text"], "wide");
    assert_eq!(sent[0]["content"][1]["source"]["data"], png);

    let mock = MockLlm::start(json!({"replies": [text_reply("a1")]}));
    let mut settings = fast_settings();
    settings["images"] = json!({"blockImages": true});
    let mut agent = agent_for(&mock).settings(settings).spawn();
    let image = json!({"type": "image", "data": PNG_B64, "mimeType": "image/png"});
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "blocked", "images": [image, image]}),
    );
    // The history keeps the images; the request replaces them by one note.
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(user["message"]["content"].as_array().unwrap().len(), 3);
    assert_eq!(
        request_messages(&mock, 0),
        json!([{"role":"user","content":[{"type":"text","text":"blocked"},
                                         {"type":"text","text":"Image reading is disabled."}]}])
    );
}

#[cfg(feature = "images")]
#[test]
fn read_of_a_big_image_file_returns_it_resized_with_the_dimension_note() {
    let dir = TempDir::new("big-image");
    let path = dir.path().join("wide.png");
    std::fs::write(&path, gradient_png(2600, 1300)).expect("write image");
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "read", json!({"path": path.display().to_string()}))]},
        text_reply("seen"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    let note = "Read image file [image/png]\n[Image: original 2600x1300, displayed at 2000x1000. \
                Multiply coordinates by 1.30 to map to original image.]";
    let content = &end["result"]["content"];
    assert_eq!(content[0], json!({"type":"text","text":note}));
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(image_dimensions(&content[1]["data"]), (2000, 1000));
    assert_eq!(end["result"]["structuredContent"]["note"], note);
    let sent = request_messages(&mock, 1);
    let n = sent.as_array().unwrap().len();
    assert_eq!(
        sent[n - 1],
        json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
            {"type":"text","text":note},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":content[1]["data"]}}
        ],"is_error":false}]})
    );
}

#[cfg(feature = "images")]
#[test]
fn read_of_an_image_follows_auto_resize_and_the_models_limits() {
    let dir = TempDir::new("image-settings");
    let path = dir.path().join("wide.png");
    let png = gradient_png(2600, 1300);
    std::fs::write(&path, &png).expect("write image");
    let read = || {
        json!({"replies": [
            {"blocks": [tool_call("t1", "read", json!({"path": path.display().to_string()}))]},
            text_reply("seen"),
        ]})
    };
    // images.autoResize off: the file goes out unchanged.
    let mock = MockLlm::start(read());
    let mut agent = agent_for(&mock)
        .settings(json!({"images": {"autoResize": false}}))
        .spawn();
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    let content = &end["result"]["content"];
    assert_eq!(
        content[0],
        json!({"type":"text","text":"Read image file [image/png]"})
    );
    assert_eq!(image_dimensions(&content[1]["data"]), (2600, 1300));
    // The model's own inputLimits decide the size.
    let mock = MockLlm::start(read());
    let mut models = mock_models_json(&mock.base_url());
    models["providers"]["mock"]["models"][0]["inputLimits"] =
        json!({"images": {"resize": {"maxWidth": 1000, "maxHeight": 1000}}});
    let mut agent = agent_for(&mock).models(Some(models)).spawn();
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        image_dimensions(&end["result"]["content"][1]["data"]),
        (1000, 500)
    );
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

#[test]
fn read_tool_image_goes_back_as_an_image_or_a_placeholder() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "read", json!({"path": "red.png"}))]},
        text_reply("red"),
        {"blocks": [tool_call("t2", "read", json!({"path": "red.png"}))]},
        text_reply("red again"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let r = agent.request(
        "b",
        json!({"type": "bash", "command": format!("echo {PNG_B64} | base64 -d > red.png")}),
    );
    assert_eq!(r["data"]["exitCode"], 0);
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        end["result"]["content"],
        json!([{"type":"text","text":"Read image file [image/png]"},
               {"type":"image","data":PNG_B64,"mimeType":"image/png"}])
    );
    assert_eq!(end["isError"], false);
    let sent = request_messages(&mock, 1);
    let n = sent.as_array().unwrap().len();
    assert_eq!(
        sent[n - 1],
        json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
            {"type":"text","text":"Read image file [image/png]"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ],"is_error":false}]})
    );

    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["success"], true);
    run_prompt(&mut agent, "p2", "look again");
    let sent = request_messages(&mock, 3);
    let placeholder = json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t2",
        "content":"Read image file [image/png]\n(tool image omitted: model does not support images)",
        "is_error":false}]});
    let n = sent.as_array().unwrap().len();
    assert_eq!(sent[n - 1], placeholder);
    assert_eq!(
        sent[3]["content"][0]["content"],
        json!("Read image file [image/png]\n(tool image omitted: model does not support images)")
    );
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

// ------------------------------------------------------------------ tool results as pi 1.6.0

/// An agent with a persisted session in a temp session directory (removed when the returned
/// guard drops).
fn persisted_agent_for(mock: &MockLlm, files: &[(&str, &str)]) -> (Agent, TempDir) {
    let dir = TempDir::new("sessions");
    let mut b = agent_for(mock)
        .no_default_args()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-sonnet",
            "--session-dir",
        ])
        .args([dir.path().to_string_lossy().into_owned()]);
    for (rel, content) in files {
        b = b.cwd_file(rel, content);
    }
    (b.spawn(), dir)
}

/// The lines of the agent's session file, parsed.
fn session_file_entries(agent: &mut Agent) -> Vec<Value> {
    let state = agent.request("sf", json!({"type": "get_state"}));
    let path = state["data"]["sessionFile"]
        .as_str()
        .unwrap_or_else(|| panic!("no session file: {state}"))
        .to_string();
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("session line"))
        .collect()
}

/// The first stdout line (as written) containing all of `parts`.
fn raw_line(agent: &Agent, parts: &[&str]) -> String {
    agent
        .raw_lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?}"))
}

/// The `content` of the assistant messages among `messages`.
fn assistant_contents(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"].clone())
        .collect()
}

/// pi's bash tool *returns* `{content, details, structuredContent, isError:true}` for a non-zero
/// exit (it does not throw), so `tool_execution_end.result` has `isError` inside as well; the
/// tool-result message only takes content/details, so it has the outer `isError` alone. Thrown
/// errors (a timeout) have no inner `isError`.
#[test]
fn bash_non_zero_exit_result_carries_is_error_inside_the_result_too() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("toolu_b1", "bash", json!({"command": "echo out; exit 3"})),
            tool_call("toolu_b2", "bash", json!({"command": "echo slow; sleep 5", "timeout": 1})),
        ]},
        text_reply("done")
    ]}));
    let (mut agent, _sessions) = persisted_agent_for(&mock, &[]);
    let recs = run_prompt(&mut agent, "p1", "fail please");
    let ends = find_all(&recs, json!({"type": "tool_execution_end"}));
    let exit = ends.iter().find(|e| e["toolCallId"] == "toolu_b1").unwrap();
    assert_eq!(
        serde_json::to_string(&norm(exit)).unwrap(),
        concat!(
            r#"{"type":"tool_execution_end","toolCallId":"toolu_b1","toolName":"bash","result":"#,
            r#"{"content":[{"type":"text","text":"out\n\n\nCommand exited with code 3"}],"#,
            r#""structuredContent":{"output":"out\n","truncated":false,"exit_code":3,"wall_time_seconds":0},"#,
            r#""isError":true},"isError":true,"durationMs":0}"#
        )
    );
    let timeout = ends.iter().find(|e| e["toolCallId"] == "toolu_b2").unwrap();
    assert_eq!(
        norm(timeout),
        json!({"type":"tool_execution_end","toolCallId":"toolu_b2","toolName":"bash",
               "result":{"content":[{"type":"text","text":"slow\n\n\nCommand timed out after 1 seconds"}],"details":{}},
               "isError":true,"durationMs":0})
    );
    let want_exit_msg = json!({"role":"toolResult","toolCallId":"toolu_b1","toolName":"bash",
        "content":[{"type":"text","text":"out\n\n\nCommand exited with code 3"}],
        "isError":true,"durationMs":0,"timestamp":0});
    let results = find_all(
        &recs,
        json!({"type":"message_end","message":{"role":"toolResult","toolCallId":"toolu_b1"}}),
    );
    assert_eq!(norm(&results[0]["message"]), want_exit_msg);
    let (_, turn_end) = find(&recs, json!({"type": "turn_end"}));
    assert_eq!(norm(&turn_end["toolResults"][0]), want_exit_msg);
    let messages = agent.request("m1", json!({"type": "get_messages"}))["data"]["messages"].clone();
    let in_context = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["toolCallId"] == "toolu_b1")
        .unwrap();
    assert_eq!(norm(in_context), want_exit_msg);
    let in_file = session_file_entries(&mut agent)
        .into_iter()
        .find(|e| e["message"]["toolCallId"] == "toolu_b1")
        .unwrap();
    assert_eq!(norm(&in_file["message"]), want_exit_msg);
}

/// Tool-call arguments text that does not parse: pi-ai keeps `arguments:{}` and adds
/// `argumentsError` (V8's `JSON.parse` message, then the text received) to the block, seen in
/// `toolcall_end`, the message events, `get_messages` and the session file; the call fails with
/// `Invalid arguments for tool "<name>": <argumentsError>` instead of a schema error.
#[test]
fn malformed_tool_call_json_gets_arguments_error_and_an_invalid_arguments_result() {
    const TRUNCATED: &str = "{\"command\": \"echo hi\"";
    const TRUNCATED_ERROR: &str = "Expected ',' or '}' after property value in JSON at position 21 (line 1 column 22)\n\nReceived arguments:\n{\"command\": \"echo hi\"";
    const GARBAGE_ERROR: &str =
        "Unexpected token 'o', \"not json at all\" is not valid JSON\n\nReceived arguments:\nnot json at all";
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            {"type": "tool_call", "id": "toolu_m1", "name": "bash", "raw_json": TRUNCATED},
            {"type": "tool_call", "id": "toolu_m2", "name": "bash", "raw_json": "not json at all"},
            {"type": "tool_call", "id": "toolu_m3", "name": "bash", "raw_json": "[1]"},
        ]},
        text_reply("Done.")
    ]}));
    let (mut agent, _sessions) = persisted_agent_for(&mock, &[]);
    let recs = run_prompt(&mut agent, "p1", "shapes");
    let blocks = json!([
        {"type":"toolCall","id":"toolu_m1","name":"bash","arguments":{},"argumentsError":TRUNCATED_ERROR},
        {"type":"toolCall","id":"toolu_m2","name":"bash","arguments":{},"argumentsError":GARBAGE_ERROR},
        {"type":"toolCall","id":"toolu_m3","name":"bash","arguments":{},
         "argumentsError":"Tool arguments must be a JSON object\n\nReceived arguments:\n[1]"},
    ]);
    let tc_ends: Vec<Value> = find_all(
        &recs,
        json!({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end"}}),
    )
    .into_iter()
    .map(|r| r["assistantMessageEvent"]["toolCall"].clone())
    .collect();
    assert_eq!(Value::Array(tc_ends), blocks);
    let (_, end) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"assistant","stopReason":"toolUse"}}),
    );
    assert_eq!(end["message"]["content"], blocks);
    // Key order: `argumentsError` right after `arguments`.
    let line = raw_line(&agent, &["\"toolcall_end\""]);
    assert!(
        line.contains(r#""arguments":{},"argumentsError":"Expected ',' or '}'"#),
        "{line}"
    );
    let (_, start) = find(&recs, json!({"type": "tool_execution_start"}));
    assert_eq!(
        start,
        json!({"type":"tool_execution_start","toolCallId":"toolu_m1","toolName":"bash","args":{}})
    );
    let ends = find_all(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        ends[..2],
        [
            json!({"type":"tool_execution_end","toolCallId":"toolu_m1","toolName":"bash",
                   "result":{"content":[{"type":"text","text":format!("Invalid arguments for tool \"bash\": {TRUNCATED_ERROR}")}],"details":{}},
                   "isError":true}),
            json!({"type":"tool_execution_end","toolCallId":"toolu_m2","toolName":"bash",
                   "result":{"content":[{"type":"text","text":format!("Invalid arguments for tool \"bash\": {GARBAGE_ERROR}")}],"details":{}},
                   "isError":true}),
        ]
    );
    let (_, turn_end) = find(&recs, json!({"type": "turn_end"}));
    assert_eq!(turn_end["message"]["content"], blocks);
    let (_, agent_end) = find(&recs, json!({"type": "agent_end"}));
    assert_eq!(
        assistant_contents(agent_end["messages"].as_array().unwrap())[0],
        blocks
    );
    let messages = agent.request("m1", json!({"type": "get_messages"}))["data"]["messages"].clone();
    assert_eq!(assistant_contents(messages.as_array().unwrap())[0], blocks);
    let file: Vec<Value> = session_file_entries(&mut agent)
        .into_iter()
        .filter_map(|e| e.get("message").cloned())
        .collect();
    assert_eq!(assistant_contents(&file)[0], blocks);
    // The next request sends `{}` as the input and the error as the result.
    let sent = request_messages(&mock, 1);
    assert_eq!(
        sent[1]["content"][0],
        json!({"type":"tool_use","id":"toolu_m1","name":"bash","input":{}})
    );
    assert_eq!(
        sent[2]["content"][0]["content"],
        format!("Invalid arguments for tool \"bash\": {TRUNCATED_ERROR}")
    );
    assert!(!agent.cwd.join("hi").exists());
}

/// The OpenAI adapters finish tool-call arguments the same way (Gemini sends objects).
#[test]
fn malformed_tool_call_json_gets_arguments_error_on_the_openai_apis() {
    for api in ["openai-completions", "openai-responses"] {
        let mock = MockLlm::start(json!({"replies": [
            {"blocks": [{"type": "tool_call", "id": "call_1", "name": "bash",
                         "raw_json": "{\"command\": tru"}]},
            text_reply("Done.")
        ]}));
        let models = json!({"providers": {"p": {
            "baseUrl": format!("{}/v1", mock.base_url()), "api": api, "apiKey": "k",
            "models": [{"id": "m1", "name": "M1", "contextWindow": 100000, "maxTokens": 1000}]}}});
        let mut a = Agent::builder()
            .no_default_args()
            .args(["--no-session"])
            .models(Some(models))
            .settings(fast_settings())
            .spawn();
        let recs = run_prompt(&mut a, "p", "hi");
        let (_, tc_end) = find(
            &recs,
            json!({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end"}}),
        );
        let call = &tc_end["assistantMessageEvent"]["toolCall"];
        let error = "Unexpected end of JSON input\n\nReceived arguments:\n{\"command\": tru";
        assert_eq!(call["arguments"], json!({}), "{api}: {call}");
        assert_eq!(call["argumentsError"], error, "{api}: {call}");
        let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
        assert_eq!(
            end["result"],
            json!({"content":[{"type":"text","text":format!("Invalid arguments for tool \"bash\": {error}")}],"details":{}}),
            "{api}"
        );
    }
}

/// pi's edit tool normalizes `edits` given as a JSON string or a single object in the tool
/// call's own arguments object while preparing the call. `message_end`,
/// `tool_execution_start` and the session file (all written before) keep what the model sent;
/// `turn_end`, `agent_end`, `get_messages`, `get_entries` and every later request show the
/// array. Legacy top-level `oldText`/`newText` are merged into a new object, so the tool call
/// keeps them as sent.
#[test]
fn edit_arguments_normalized_in_place_show_from_turn_end_on() {
    let as_string =
        json!({"path": "m.txt", "edits": "[{\"oldText\": \"alpha\", \"newText\": \"ALPHA\"}]"});
    let as_object = json!({"path": "m.txt", "edits": {"oldText": "beta", "newText": "BETA"}});
    let legacy = json!({"path": "m.txt", "oldText": "BETA", "newText": "gamma"});
    let array = |old: &str, new: &str| json!({"path": "m.txt", "edits": [{"oldText": old, "newText": new}]});
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_q1", "edit", as_string.clone())]},
        {"blocks": [tool_call("toolu_q2", "edit", as_object.clone())]},
        {"blocks": [tool_call("toolu_q3", "edit", legacy.clone())]},
        text_reply("Done.")
    ]}));
    let (mut agent, _sessions) = persisted_agent_for(&mock, &[("m.txt", "alpha\nbeta\n")]);
    let recs = run_prompt(&mut agent, "p1", "edit persisted");
    assert_eq!(
        std::fs::read_to_string(agent.cwd.join("m.txt")).unwrap(),
        "ALPHA\ngamma\n"
    );
    let sent = [as_string.clone(), as_object.clone(), legacy.clone()];
    let shown = [
        array("alpha", "ALPHA"),
        array("beta", "BETA"),
        legacy.clone(),
    ];
    let args_of = |content: &Value| content[0]["arguments"].clone();

    let ends = find_all(
        &recs,
        json!({"type":"message_end","message":{"role":"assistant","stopReason":"toolUse"}}),
    );
    let starts = find_all(&recs, json!({"type": "tool_execution_start"}));
    let turn_ends = find_all(&recs, json!({"type": "turn_end"}));
    for k in 0..3 {
        assert_eq!(
            args_of(&ends[k]["message"]["content"]),
            sent[k],
            "message_end {k}"
        );
        assert_eq!(starts[k]["args"], sent[k], "tool_execution_start {k}");
        assert_eq!(
            args_of(&turn_ends[k]["message"]["content"]),
            shown[k],
            "turn_end {k}"
        );
    }
    // The rewritten key keeps its place.
    let line = raw_line(&agent, &["\"turn_end\"", "toolu_q1"]);
    assert!(
        line.contains(
            r#""arguments":{"path":"m.txt","edits":[{"oldText":"alpha","newText":"ALPHA"}]}"#
        ),
        "{line}"
    );
    let (_, agent_end) = find(&recs, json!({"type": "agent_end"}));
    let run_calls: Vec<Value> = assistant_contents(agent_end["messages"].as_array().unwrap())
        .iter()
        .take(3)
        .map(args_of)
        .collect();
    assert_eq!(run_calls, shown);
    let messages = agent.request("m1", json!({"type": "get_messages"}))["data"]["messages"].clone();
    let context_calls: Vec<Value> = assistant_contents(messages.as_array().unwrap())
        .iter()
        .take(3)
        .map(args_of)
        .collect();
    assert_eq!(context_calls, shown);
    let entries = agent.request("e1", json!({"type": "get_entries"}))["data"]["entries"].clone();
    let entry_messages: Vec<Value> = entries
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("message").cloned())
        .collect();
    let entry_calls: Vec<Value> = assistant_contents(&entry_messages)
        .iter()
        .take(3)
        .map(args_of)
        .collect();
    assert_eq!(entry_calls, shown);
    let file_messages: Vec<Value> = session_file_entries(&mut agent)
        .into_iter()
        .filter_map(|e| e.get("message").cloned())
        .collect();
    let file_calls: Vec<Value> = assistant_contents(&file_messages)
        .iter()
        .take(3)
        .map(args_of)
        .collect();
    assert_eq!(file_calls, sent);
    // Later requests send the normalized arguments.
    let last = request_messages(&mock, 3);
    let inputs: Vec<Value> = last
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"][0]["input"].clone())
        .collect();
    assert_eq!(inputs, shown);
}
