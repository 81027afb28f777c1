//! MCP servers through the real binary (`spec/mcp.md`), against the scripted stdio server
//! `tests/support/fake_mcp.py`: configuration and the start-up report, the handshake, direct
//! tools in the first request, calls and their results, progress, timeouts, aborts, a crashed
//! server and its lazy reconnection, `/mcp`, deferred tools through `tool_search`, session
//! replacement, `--no-mcp` and tool filters.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::ext::python;
use crate::support::mcp::{fake_entry, received, with_servers, FAKE_TOOLS};
use crate::support::mock_llm::MockLlm;
use crate::support::process::eventually;
use crate::support::records::{find, find_all};
use crate::support::run::{agent_for, no_llm, run_prompt, text_reply, tool_call, LONG};
use crate::support::Agent;

/// The `notify` records in `records`, as `(notifyType, message)`.
fn notices(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .map(|r| {
            (
                r["notifyType"].as_str().unwrap_or("").to_string(),
                r["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Sends `/mcp <args>` and returns the records up to its `handled` response.
fn mcp_command(agent: &mut Agent, id: &str, args: &str) -> Vec<Value> {
    let start = agent.records.len();
    let message = if args.is_empty() {
        "/mcp".to_string()
    } else {
        format!("/mcp {args}")
    };
    agent.send(json!({"id": id, "type": "prompt", "message": message}));
    agent.wait_for_timeout(json!({"type": "response", "id": id}), LONG);
    agent.records[start..].to_vec()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn end_of(records: &[Value], call: &str) -> Value {
    find(
        records,
        json!({"type": "tool_execution_end", "toolCallId": call}),
    )
    .1
}

#[test]
fn direct_tools_are_declared_in_the_first_request_and_called_over_stdio() {
    let Some(py) = python("direct_tools_are_declared_in_the_first_request_and_called_over_stdio")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_1", "mcp__fake__echo", json!({"text": "hi"}))]},
        text_reply("Echoed.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({"FAKE_MCP_INIT_DELAY": "0.3"}),
                                   json!({"exposure": "direct"}))}),
    )
    .spawn();
    // The first prompt is sent at once: it waits for the direct server.
    let recs = run_prompt(&mut agent, "p1", "use echo");
    let first = &mock.wait_requests(1, LONG)[0];
    let mut expected: Vec<String> = ["read", "bash", "edit", "write"].map(String::from).to_vec();
    expected.extend(FAKE_TOOLS.iter().map(|t| match *t {
        "dup-name" => "mcp__fake__dup_name_a1b8a58c".to_string(),
        "dup.name" => "mcp__fake__dup_name_ad4a0f94".to_string(),
        t => format!("mcp__fake__{t}"),
    }));
    assert_eq!(tool_names(first), expected);
    let echo = first["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fake__echo")
        .unwrap()
        .clone();
    assert_eq!(echo["description"], "Echo the text back.");
    assert_eq!(
        echo["input_schema"],
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo"}},
               "required": ["text"], "additionalProperties": false})
    );
    let end = end_of(&recs, "toolu_1");
    assert_eq!(
        end["result"],
        json!({"content": [{"type": "text", "text": "echo: hi"}],
               "details": {"server": "fake", "tool": "echo"},
               "structuredContent": {"content": [{"type": "text", "text": "echo: hi"}]}})
    );
    assert_eq!(end["isError"], false);
    // What the server received: the handshake, the listing, answers to its own requests, the call.
    let got = received(&agent.agent_dir, "fake");
    assert_eq!(
        got[0],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
            "clientInfo": {"name": "pi", "version": "1.6.0"}}})
    );
    assert_eq!(
        got[1],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    assert!(
        got.contains(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
        "{got:#?}"
    );
    let cwd_url = format!("file://{}", agent.cwd.display());
    assert!(
        got.contains(&json!({"jsonrpc": "2.0", "id": "r1", "result": {"roots": [
            {"uri": cwd_url, "name": "cwd"}]}})),
        "{got:#?}"
    );
    assert!(
        got.contains(&json!({"jsonrpc": "2.0", "id": "p1", "result": {}})),
        "{got:#?}"
    );
    assert!(
        got.contains(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": 3}}})
        ),
        "{got:#?}"
    );
    // The tool result message keeps content, details and isError, not structuredContent.
    let msg = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "toolResult"}}),
    )
    .1;
    assert_eq!(
        msg["message"]["details"],
        json!({"server": "fake", "tool": "echo"})
    );
    assert!(msg["message"].get("structuredContent").is_none());
}

#[test]
fn results_errors_and_argument_validation_follow_pi() {
    let Some(py) = python("results_errors_and_argument_validation_follow_pi") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t_fail", "mcp__fake__fail", json!({})),
            tool_call("t_empty", "mcp__fake__fail_empty", json!({})),
            tool_call("t_rpc", "mcp__fake__rpc_error", json!({})),
            tool_call("t_struct", "mcp__fake__structured", json!({})),
            tool_call("t_missing", "mcp__fake__echo", json!({})),
            tool_call("t_coerce", "mcp__fake__echo", json!({"text": 5})),
            tool_call("t_image", "mcp__fake__image", json!({})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "try them");
    let fail = end_of(&recs, "t_fail");
    assert_eq!(fail["isError"], true);
    assert_eq!(
        fail["result"]["content"],
        json!([{"type": "text", "text": "something went wrong"}])
    );
    assert_eq!(
        end_of(&recs, "t_empty")["result"]["content"],
        json!([{"type": "text", "text": "MCP tool fake/fail_empty returned an error"}])
    );
    assert_eq!(
        end_of(&recs, "t_rpc")["result"],
        json!({"content": [{"type": "text", "text": "tool exploded"}], "details": {}})
    );
    assert_eq!(
        end_of(&recs, "t_struct")["result"]["content"],
        json!([{"type": "text", "text": "{\n  \"temperature\": 21.5,\n  \"unit\": \"C\"\n}"}])
    );
    let missing = end_of(&recs, "t_missing");
    assert_eq!(missing["isError"], true);
    assert_eq!(
        missing["result"]["content"][0]["text"],
        "Validation failed for tool \"mcp__fake__echo\":\n  - text: missing\n\nReceived arguments:\n{}"
    );
    assert_eq!(
        end_of(&recs, "t_coerce")["result"]["content"],
        json!([{"type": "text", "text": "echo: 5"}])
    );
    let image = end_of(&recs, "t_image")["result"]["content"].clone();
    assert_eq!(image[0], json!({"type": "text", "text": "a red square"}));
    assert_eq!(image[1]["type"], "image");
    assert_eq!(image[1]["mimeType"], "image/png");
}

#[test]
fn progress_rearms_the_timeout_and_a_timeout_cancels_the_request() {
    let Some(py) = python("progress_rearms_the_timeout_and_a_timeout_cancels_the_request") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t_prog", "mcp__fake__slow",
                              json!({"seconds": 1.6, "steps": 4, "message": "working"}))]},
        {"blocks": [tool_call("t_late", "mcp__fake__slow", json!({"seconds": 3, "steps": 1}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}),
                                   json!({"exposure": "direct", "timeout": 0.7}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "slow please");
    let updates = find_all(
        &recs,
        json!({"type": "tool_execution_update", "toolCallId": "t_prog"}),
    );
    assert!(!updates.is_empty(), "no progress updates");
    assert_eq!(
        updates[0]["partialResult"],
        json!({"content": [{"type": "text", "text": "working"}],
               "details": {"server": "fake", "tool": "slow"}})
    );
    assert_eq!(
        end_of(&recs, "t_prog")["result"]["content"],
        json!([{"type": "text", "text": "slept 1.6"}])
    );
    assert_eq!(
        end_of(&recs, "t_late")["result"],
        json!({"content": [{"type": "text", "text": "MCP request timed out after 700ms"}],
               "details": {}})
    );
    let got = received(&agent.agent_dir, "fake");
    assert!(
        got.iter().any(|m| m["method"] == "notifications/cancelled"
            && m["params"]["reason"] == "Request timed out"),
        "{got:#?}"
    );
}

#[test]
fn abort_during_an_mcp_call_cancels_it_and_keeps_the_server() {
    let Some(py) = python("abort_during_an_mcp_call_cancels_it_and_keeps_the_server") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t_slow", "mcp__fake__slow", json!({"seconds": 20}))]},
        {"blocks": [tool_call("t_echo", "mcp__fake__echo", json!({"text": "still here"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "slow"}));
    agent.wait_for_timeout(
        json!({"type": "tool_execution_start", "toolCallId": "t_slow"}),
        LONG,
    );
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    agent.send(json!({"id": "a1", "type": "abort"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "abort took {:?}",
        started.elapsed()
    );
    let end = find(
        &agent.records,
        json!({"type": "tool_execution_end", "toolCallId": "t_slow"}),
    )
    .1;
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": "MCP request aborted"}])
    );
    eventually("notifications/cancelled", || {
        received(&agent.agent_dir, "fake").iter().any(|m| {
            m["method"] == "notifications/cancelled"
                && m["params"]["reason"] == "AbortError: This operation was aborted"
        })
    });
    // The connection stays up: the next call is served by the same process (no new initialize).
    let recs = run_prompt(&mut agent, "p2", "again");
    assert_eq!(
        end_of(&recs, "t_echo")["result"]["content"],
        json!([{"type": "text", "text": "echo: still here"}])
    );
    let inits = received(&agent.agent_dir, "fake")
        .iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!(inits, 1);
}

#[test]
fn a_crashed_server_reports_connection_closed_and_reconnects_on_the_next_call() {
    let Some(py) =
        python("a_crashed_server_reports_connection_closed_and_reconnects_on_the_next_call")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t_crash", "mcp__fake__crash", json!({}))]},
        text_reply("It crashed."),
        {"blocks": [tool_call("t_echo", "mcp__fake__echo", json!({"text": "back"}))]},
        text_reply("Back."),
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "crash it");
    assert_eq!(
        end_of(&recs, "t_crash")["result"],
        json!({"content": [{"type": "text", "text": "MCP connection closed"}], "details": {}})
    );
    let status = mcp_command(&mut agent, "m1", "");
    assert_eq!(
        notices(&status),
        vec![(
            "info".to_string(),
            "fake: disconnected, reconnects on next call (direct)\n    Connection closed\n    fake server: crashing on purpose".to_string()
        )]
    );
    let recs = run_prompt(&mut agent, "p2", "echo");
    assert_eq!(
        end_of(&recs, "t_echo")["result"]["content"],
        json!([{"type": "text", "text": "echo: back"}])
    );
    let inits: Vec<Value> = received(&agent.agent_dir, "fake")
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[1]["id"], 1, "a new connection counts from 1 again");
}

#[test]
fn the_startup_report_names_config_errors_and_failed_servers() {
    let Some(py) = python("the_startup_report_names_config_errors_and_failed_servers") else {
        return;
    };
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "bad name": {"command": "x"},
            "nothing": {},
            "missing": {"command": "/nonexistent/mcp-server"},
            "early": fake_entry(&py, "early", json!({"FAKE_MCP_EXIT_AT_START": "2"}), json!({})),
            "oldver": fake_entry(&py, "oldver", json!({"FAKE_MCP_BAD_VERSION": "2020-01-01"}), json!({})),
            "fake": fake_entry(&py, "fake", json!({}), json!({})),
        }),
    )
    .spawn();
    let report = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "notify", "notifyType": "warning"}),
        LONG,
    );
    let file = agent.agent_dir.join("mcp.json");
    let file = file.display();
    assert_eq!(
        report["message"],
        format!(
            "MCP servers need attention:\n  config: {file}: invalid server name \"bad name\" (use letters, digits, \"_\" and \"-\")\n  config: {file}: server \"nothing\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)\n  missing: failed: spawn /nonexistent/mcp-server ENOENT\n  early: failed: MCP connection closed\n  oldver: failed: MCP server selected unsupported protocol version 2020-01-01\nRun /mcp to fix."
        )
    );
    let status = mcp_command(&mut agent, "m1", "");
    let text = &notices(&status)[0].1;
    assert!(
        text.starts_with(
            "missing: failed (codemode)\n    spawn /nonexistent/mcp-server ENOENT\nearly: failed (codemode)\n    MCP connection closed\n    fake server: exiting at start with code 2\noldver: failed (codemode)\n    MCP server selected unsupported protocol version 2020-01-01\nfake: connected, 18 tools (codemode)\nconfig error: "
        ),
        "{text}"
    );
}

#[test]
fn mcp_command_forms_reconnect_usage_and_the_server_choice() {
    let Some(py) = python("mcp_command_forms_reconnect_usage_and_the_server_choice") else {
        return;
    };
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "one": fake_entry(&py, "one", json!({}), json!({"exposure": "direct"})),
            "two": fake_entry(&py, "two", json!({"FAKE_MCP_RESOURCES": "1"}), json!({"exposure": "direct"})),
        }),
    )
    .spawn();
    let recs = mcp_command(&mut agent, "m1", "reconnect two");
    assert_eq!(
        notices(&recs),
        vec![(
            "info".to_string(),
            "Reconnected to MCP server \"two\" (connected · 18 tools · resources).".to_string()
        )]
    );
    assert_eq!(
        find(&recs, json!({"type": "response", "id": "m1"})).1,
        json!({"id": "m1", "type": "response", "command": "prompt", "success": true,
               "data": {"disposition": "handled"}})
    );
    let recs = mcp_command(&mut agent, "m2", "reconnect nope");
    assert_eq!(
        notices(&recs),
        vec![(
            "error".to_string(),
            "No MCP server named \"nope\".".to_string()
        )]
    );
    let recs = mcp_command(&mut agent, "m3", "a b c");
    assert_eq!(
        notices(&recs),
        vec![(
            "warning".to_string(),
            "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]"
                .to_string()
        )]
    );
    let recs = mcp_command(&mut agent, "m4", "login");
    assert_eq!(
        notices(&recs),
        vec![(
            "info".to_string(),
            "No enabled MCP server uses OAuth. Only HTTP servers without an Authorization header do."
                .to_string()
        )]
    );
    // Two eligible servers and none preferred: the client picks.
    agent.send(json!({"id": "m5", "type": "prompt", "message": "/mcp reconnect"}));
    let select = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "select"}),
        LONG,
    );
    assert_eq!(select["title"], "MCP server");
    assert_eq!(select["options"], json!(["one", "two"]));
    agent.send(json!({"type": "extension_ui_response", "id": select["id"], "value": "one"}));
    agent.wait_for_timeout(json!({"type": "response", "id": "m5"}), LONG);
    let start = agent.records.iter().position(|r| r == &select).unwrap();
    assert_eq!(
        notices(&agent.records[start..]),
        vec![(
            "info".to_string(),
            "Reconnected to MCP server \"one\" (connected · 18 tools).".to_string()
        )]
    );
}

#[test]
fn deferred_tools_are_loaded_by_tool_search_and_listed_in_the_section() {
    let Some(py) = python("deferred_tools_are_loaded_by_tool_search_and_listed_in_the_section")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t_search", "tool_search", json!({"query": "echo text back", "limit": 1}))]},
        {"blocks": [tool_call("t_echo", "mcp__fake__echo", json!({"text": "found"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}),
                                   json!({"exposure": "deferred", "description": "A fake server.\nSecond line."}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "find a tool");
    let reqs = mock.wait_requests(3, LONG);
    assert_eq!(
        tool_names(&reqs[0]),
        ["read", "bash", "edit", "write", "tool_search"]
    );
    let system = reqs[0]["body"]["system"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        system.contains("<mcp_servers>\n")
            && system.contains("\n- mcp__fake (tool_search): A fake server.\n</mcp_servers>"),
        "{system}"
    );
    assert_eq!(
        end_of(&recs, "t_search")["result"],
        json!({"content": [{"type": "text", "text":
            "Loaded 1 tool. They are available from your next call:\n- mcp__fake__echo: Echo the text back."}],
            "details": {"loaded": ["mcp__fake__echo"]}})
    );
    assert_eq!(
        tool_names(&reqs[1]),
        [
            "read",
            "bash",
            "edit",
            "write",
            "tool_search",
            "mcp__fake__echo"
        ]
    );
    // The loaded tool is declared by a system message before the next request.
    let systems = find_all(
        &recs,
        json!({"type": "message_end", "message": {"role": "system"}}),
    );
    assert_eq!(systems.len(), 2, "{systems:#?}");
    let added = &systems[1]["message"];
    assert!(
        added.get("sections").is_none(),
        "a tools-only patch has no sections: {added}"
    );
    assert_eq!(
        added["toolsAdded"],
        json!([{"name": "mcp__fake__echo", "description": "Echo the text back.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo"}},
                               "required": ["text"], "additionalProperties": false}}])
    );
    assert_eq!(
        end_of(&recs, "t_echo")["result"]["content"],
        json!([{"type": "text", "text": "echo: found"}])
    );
}

#[test]
fn new_session_restarts_the_servers_and_no_mcp_turns_it_all_off() {
    let Some(py) = python("new_session_restarts_the_servers_and_no_mcp_turns_it_all_off") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("One."), text_reply("Two.")]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    run_prompt(&mut agent, "p1", "hello");
    agent.request("n1", json!({"type": "new_session"}));
    run_prompt(&mut agent, "p2", "hello again");
    let reqs = mock.wait_requests(2, LONG);
    assert!(tool_names(&reqs[1]).contains(&"mcp__fake__echo".to_string()));
    let inits = received(&agent.agent_dir, "fake")
        .iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!(inits, 2, "a new session connects again");

    let mock = MockLlm::start(json!({"replies": [text_reply("Plain.")]}));
    let mut agent = with_servers(
        agent_for(&mock).args(["--no-mcp"]),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    run_prompt(&mut agent, "p1", "/mcp");
    let reqs = mock.wait_requests(1, LONG);
    assert_eq!(tool_names(&reqs[0]), ["read", "bash", "edit", "write"]);
    assert!(received(&agent.agent_dir, "fake").is_empty());
}

#[test]
fn tool_filters_select_mcp_tools() {
    let Some(py) = python("tool_filters_select_mcp_tools") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Ok.")]}));
    let mut agent = with_servers(
        agent_for(&mock).args([
            "--tools",
            "read,mcp__fake__echo,mcp__fake__f*",
            "--exclude-tools",
            "mcp__fake__fail_empty",
        ]),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    run_prompt(&mut agent, "p1", "hi");
    let reqs = mock.wait_requests(1, LONG);
    assert_eq!(
        tool_names(&reqs[0]),
        ["read", "mcp__fake__echo", "mcp__fake__fail"]
    );
    assert!(
        !agent.stderr().contains("unknown tool"),
        "{}",
        agent.stderr()
    );
}

/// Pids of live processes whose environment holds `needle` (Linux `/proc`).
fn pids_with_env(needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| String::from_utf8_lossy(&env).contains(needle))
                .unwrap_or(false)
        })
        .filter(|pid| {
            // Zombies (exited, not yet reaped) are gone for our purpose.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    !s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(false)
        })
        .collect()
}

#[test]
fn servers_are_stopped_when_stdin_ends() {
    let Some(py) = python("servers_are_stopped_when_stdin_ends") else {
        return;
    };
    if !std::path::Path::new("/proc/self/environ").exists() {
        eprintln!("skipped servers_are_stopped_when_stdin_ends: needs Linux /proc");
        return;
    }
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    mcp_command(&mut agent, "m1", "");
    let needle = format!(
        "FAKE_MCP_RECORD={}",
        agent.agent_dir.join("fake.record.jsonl").display()
    );
    assert_eq!(pids_with_env(&needle).len(), 1, "the server runs");
    agent.close_stdin();
    agent.wait_exit(LONG);
    eventually("the server to end", || pids_with_env(&needle).is_empty());
}

#[test]
fn an_extension_with_its_own_mcp_command_replaces_the_built_in_support() {
    let Some(py) = python("an_extension_with_its_own_mcp_command_replaces_the_built_in_support")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Plain.")]}));
    let builder = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    );
    let mut agent = crate::support::ext::python_extension(
        builder,
        &py,
        "mymcp",
        r#"
        def initialize(msg):
            return {"commands": [{"name": "mcp", "description": "My own MCP manager"}]}
        "#,
    )
    .spawn();
    let commands = agent.request("c1", json!({"type": "get_commands"}));
    let names: Vec<(String, String)> = commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("mcp")))
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["description"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![("mcp".to_string(), "My own MCP manager".to_string())]
    );
    run_prompt(&mut agent, "p1", "hello");
    let reqs = mock.wait_requests(1, LONG);
    assert_eq!(tool_names(&reqs[0]), ["read", "bash", "edit", "write"]);
    assert!(
        received(&agent.agent_dir, "fake").is_empty(),
        "no server connects"
    );
}
