//! Tool calls in a run: the model's calls executed (bash and the file tools, in one parallel
//! batch), their error paths (non-zero exit, unknown tool, invalid or unparsable arguments), and
//! how calls and results are recorded in the events, the context, the session file and the next
//! request, as pi 1.6.0 records them.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::records::{assistant_msg, find, find_all, norm};
use crate::support::run::{
    agent_for, fast_settings, request_messages, run_prompt, text_reply, tool_call, LONG,
};
use crate::support::{Agent, TempDir};

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

#[test]
fn read_of_a_fifo_blocked_the_run() {
    // issue 17 §4: the model named a FIFO and `read` blocked in open(2) for good: `abort` did
    // not settle and stdin EOF was ignored. Only regular files are read.
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t_fifo", "read", json!({"path": "pipe"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let fifo = agent.cwd.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let recs = run_prompt(&mut agent, "p1", "Read the pipe");
    let cwd = agent.cwd.canonicalize().unwrap();
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        norm(&end),
        json!({"type":"tool_execution_end","toolCallId":"t_fifo","toolName":"read",
               "result":{"content":[{"type":"text",
                          "text":format!("Cannot read {}/pipe: not a regular file", cwd.display())}],
                         "details":{}},
               "isError":true,"durationMs":0})
    );
}
