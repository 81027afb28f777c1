//! MCP against the published reference servers from the npm registry:
//! `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`,
//! run by Node. The expected texts are what pi 1.6.0 produced with the same servers
//! (`mcp_tool_call`, `mcp_filesystem` conformance scenarios).
//!
//! Needs Node.js and the servers: `$PI_RPC_MCP_SERVERS` (a folder whose `node_modules` holds
//! them), else [`DEFAULT_SERVERS`] under `$HOME`, where `npm install --prefix
//! ~/.cache/pi-rpc-test/mcp @modelcontextprotocol/server-everything@2026.8.31
//! @modelcontextprotocol/server-filesystem@2026.8.31` puts them (`.ci/run` does). Without them
//! the tests skip, unless `PI_RPC_REQUIRE` names `node`.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::support::mcp::with_servers;
use crate::support::mock_llm::MockLlm;
use crate::support::outside;
use crate::support::records::find;
use crate::support::run::{agent_for, run_prompt, text_reply, tool_call, LONG};

/// Where `.ci/run` installs the servers, relative to `$HOME`.
const DEFAULT_SERVERS: &str = ".cache/pi-rpc-test/mcp";

/// `node` and the server's `dist/index.js`, or `None` when the test skips.
fn server(test: &str, package: &str) -> Option<(PathBuf, PathBuf)> {
    let node = outside::need(
        "node",
        outside::on_path(&["node"]),
        test,
        "install Node.js 20 or later (with npm)",
    )?;
    let root = std::env::var_os("PI_RPC_MCP_SERVERS")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(DEFAULT_SERVERS)));
    let script = root
        .map(|r| {
            r.join(format!(
                "node_modules/@modelcontextprotocol/{package}/dist/index.js"
            ))
        })
        .filter(|p| p.is_file());
    let script = outside::need(
        "node",
        script,
        test,
        "run `npm install --prefix ~/.cache/pi-rpc-test/mcp @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31`",
    )?;
    Some((node, script))
}

fn end_of(records: &[Value], call: &str) -> Value {
    find(
        records,
        json!({"type": "tool_execution_end", "toolCallId": call}),
    )
    .1
}

#[test]
fn server_everything_tools_results_and_resources() {
    let Some((node, script)) = server(
        "server_everything_tools_results_and_resources",
        "server-everything",
    ) else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "mcp__everything__echo", json!({"message": "hello from pi"})),
            tool_call("t2", "mcp__everything__get_sum", json!({"a": 2, "b": 3})),
            tool_call("t3", "mcp__everything__get_structured_content", json!({"location": "Chicago"})),
            tool_call("t4", "mcp__everything__get_resource_links", json!({"count": 2})),
            tool_call("t5", "read_mcp_resource", json!({"server": "everything", "uri": "demo://resource/dynamic/text/2"})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"everything": {"command": node, "args": [script, "stdio"], "exposure": "direct"}}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "use everything");
    let first = &mock.wait_requests(1, LONG)[0];
    let names: Vec<&str> = first["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for n in [
        "mcp__everything__echo",
        "mcp__everything__get_sum",
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    assert_eq!(
        end_of(&recs, "t1")["result"],
        json!({"content": [{"type": "text", "text": "Echo: hello from pi"}],
               "details": {"server": "everything", "tool": "echo"},
               "structuredContent": {"content": [{"type": "text", "text": "Echo: hello from pi"}]}})
    );
    assert_eq!(
        end_of(&recs, "t2")["result"]["content"],
        json!([{"type": "text", "text": "The sum of 2 and 3 is 5."}])
    );
    assert_eq!(
        end_of(&recs, "t2")["result"]["details"],
        json!({"server": "everything", "tool": "get-sum"})
    );
    let structured =
        end_of(&recs, "t3")["result"]["structuredContent"]["structuredContent"].clone();
    assert!(structured.get("temperature").is_some(), "{structured}");
    assert_eq!(
        end_of(&recs, "t4")["result"]["content"][2],
        json!({"type": "text", "text": "[Resource demo://resource/dynamic/text/2 \"Text Resource 2\" (text/plain): Resource 2: plaintext resource. Read it with read_mcp_resource (server \"everything\")]"})
    );
    let read = end_of(&recs, "t5");
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(
        read["result"]["details"],
        json!({"server": "everything", "tool": "read_mcp_resource"})
    );
    assert_eq!(
        read["result"]["structuredContent"]["uri"],
        "demo://resource/dynamic/text/2"
    );
}

#[test]
fn server_filesystem_writes_what_the_read_tool_then_sees() {
    let Some((node, script)) = server(
        "server_filesystem_writes_what_the_read_tool_then_sees",
        "server-filesystem",
    ) else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__fs__write_file", json!({"path": "notes.txt", "content": "from mcp\n"}))]},
        {"blocks": [
            tool_call("t2", "read", json!({"path": "notes.txt"})),
            tool_call("t3", "mcp__fs__read_text_file", json!({"path": "/etc/hostname"})),
        ]},
        text_reply("Done.")
    ]}));
    // "." resolves against the server's cwd, which defaults to the session cwd.
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fs": {"command": node, "args": [script, "."], "exposure": "direct"}}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "write a note");
    let write = end_of(&recs, "t1");
    assert_eq!(write["isError"], false, "{write}");
    assert_eq!(
        write["result"]["details"],
        json!({"server": "fs", "tool": "write_file"})
    );
    assert_eq!(
        std::fs::read_to_string(agent.cwd.join("notes.txt")).unwrap(),
        "from mcp\n"
    );
    assert_eq!(
        end_of(&recs, "t2")["result"]["content"],
        json!([{"type": "text", "text": "from mcp\n"}])
    );
    let outside = end_of(&recs, "t3");
    assert_eq!(outside["isError"], true, "{outside}");
    let text = outside["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("Access denied"), "{text}");
}
