//! More MCP through the real binary (`spec/mcp.md`): streamable HTTP servers
//! (`tests/support/mcp_http_server.py`: headers, sessions and their DELETE, connect retries and
//! the failure texts of the start-up report, expired sessions, retried resource requests, server
//! messages on answer streams and the GET stream, timeouts and aborts, server logs), the resource
//! tools (§8) and their exposure, the 20 KiB output limit (§7.4), every content conversion
//! (§7.2), a hidden server opened per tool (§6.1), tool names colliding across servers (§5.1),
//! the order of tools loaded by `tool_search` (§6.3), print and json modes (§12), `mcp.log`
//! (§3.5), `tools/list_changed` (§5.3) and value expansion in entries (§2.2, §2.5).
//!
//! Expected texts were checked against pi 1.6.0 itself, run on the same servers.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::ext::python;
use crate::support::mcp::{fake_entry, fake_server, received, with_servers};
use crate::support::mcp_http::{header, ping_server_config, ping_tool, HttpMcpServer};
use crate::support::mock_llm::MockLlm;
use crate::support::process::eventually;
use crate::support::records::find;
use crate::support::run::{agent_for, no_llm, run_prompt, text_reply, tool_call, LONG, PNG_B64};
use crate::support::{Agent, TempDir};

// ---------------------------------------------------------------------------------------------
// Helpers

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

/// Sends `/mcp` and returns the records up to its `handled` response.
fn mcp_status(agent: &mut Agent, id: &str) -> Vec<Value> {
    let start = agent.records.len();
    agent.send(json!({"id": id, "type": "prompt", "message": "/mcp"}));
    agent.wait_for_timeout(json!({"type": "response", "id": id}), LONG);
    agent.records[start..].to_vec()
}

/// The startup report (§3.3): the first `warning` notify.
fn startup_report(agent: &mut Agent) -> String {
    agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "notify", "notifyType": "warning"}),
        LONG,
    )["message"]
        .as_str()
        .unwrap_or("")
        .to_string()
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

/// The declared tool `name` of a logged request.
fn declared(request: &Value, name: &str) -> Value {
    request["body"]["tools"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not declared in {request:#}"))
}

/// `schema` without the `description` of its properties (prose: our own words).
fn without_descriptions(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(props) = schema["properties"].as_object_mut() {
        for p in props.values_mut() {
            if let Some(p) = p.as_object_mut() {
                p.remove("description");
            }
        }
    }
    schema
}

/// The `tool_execution_end` of call `call` in `records`.
fn end_of(records: &[Value], call: &str) -> Value {
    find(
        records,
        json!({"type": "tool_execution_end", "toolCallId": call}),
    )
    .1
}

/// `{"result": …, "isError": …}` of call `call`, for whole-value assertions.
fn outcome(records: &[Value], call: &str) -> Value {
    let end = end_of(records, call);
    json!({"result": end["result"], "isError": end["isError"]})
}

/// The generic error result of a thrown error (§7.3).
fn thrown(message: &str) -> Value {
    json!({"result": {"content": [{"type": "text", "text": message}], "details": {}},
           "isError": true})
}

/// The names of the fake server's tools as declared (§5.1), in listing order (hashed names as
/// pi 1.6.0 makes them for servers `fake` and `plain`).
fn fake_tool_names(server: &str) -> Vec<String> {
    crate::support::mcp::FAKE_TOOLS
        .iter()
        .map(|t| match (*t, server) {
            ("dup-name", "fake") => "mcp__fake__dup_name_a1b8a58c".to_string(),
            ("dup.name", "fake") => "mcp__fake__dup_name_ad4a0f94".to_string(),
            ("dup-name", "plain") => "mcp__plain__dup_name_69d95364".to_string(),
            ("dup.name", "plain") => "mcp__plain__dup_name_78ea4e53".to_string(),
            (t, s) => format!("mcp__{s}__{t}"),
        })
        .collect()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The file mode bits of `path`.
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// True when `name` is `pi-mcp-<16 lowercase hex><ext>`.
fn is_output_file_name(name: &str, ext: &str) -> bool {
    name.strip_prefix("pi-mcp-")
        .and_then(|r| r.strip_suffix(ext))
        .is_some_and(|hex| {
            hex.len() == 16
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// The agent's temp dir (`TMPDIR` of the binary).
fn tmp_dir(agent: &Agent) -> std::path::PathBuf {
    agent.root.path().join("tmp")
}

/// An HTTP server entry for `server`.
fn http_entry(server: &HttpMcpServer, extra: Value) -> Value {
    let mut entry = json!({"url": server.url()});
    if let (Some(e), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        e.extend(extra);
    }
    entry
}

// ---------------------------------------------------------------------------------------------
// 1. Streamable HTTP through the binary (§4.6, §3.4, §2.5)

#[test]
fn http_server_tools_round_trip_with_session_protocol_and_expanded_headers() {
    let Some(py) =
        python("http_server_tools_round_trip_with_session_protocol_and_expanded_headers")
    else {
        return;
    };
    let server = HttpMcpServer::start(&py, &ping_server_config("sess-1"));
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__web__ping", json!({"n": 1}))]},
        text_reply("Pinged.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock).env("MCP_TOKEN", "s3cret"),
        json!({"web": http_entry(&server, json!({
            "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}, "exposure": "direct"}))}),
    )
    .spawn();
    // The first prompt waits for the direct server; its tool is declared after the built-ins.
    let recs = run_prompt(&mut agent, "p1", "ping it");
    let reqs = mock.wait_requests(2, LONG);
    assert_eq!(
        tool_names(&reqs[0]),
        ["read", "bash", "edit", "write", "mcp__web__ping"]
    );
    let ping = declared(&reqs[0], "mcp__web__ping");
    assert_eq!(ping["description"], "Answer pong.");
    assert_eq!(
        ping["input_schema"],
        json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": []})
    );
    assert_eq!(
        outcome(&recs, "t1"),
        json!({"result": {"content": [{"type": "text", "text": "pong"}],
                          "details": {"server": "web", "tool": "ping"},
                          "structuredContent": {"content": [{"type": "text", "text": "pong"}]}},
               "isError": false})
    );

    let requests = server.requests();
    let posts: Vec<&Value> = requests.iter().filter(|r| r["method"] == "POST").collect();
    assert_eq!(
        posts.iter().map(|r| r["body"].clone()).collect::<Vec<_>>(),
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                "clientInfo": {"name": "pi", "version": "1.6.0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "ping", "arguments": {"n": 1}, "_meta": {"progressToken": 3}}}),
        ]
    );
    for (i, post) in posts.iter().enumerate() {
        let path = post["path"].as_str().unwrap_or("");
        assert_eq!(path, "/mcp");
        assert_eq!(
            header(post, "accept").as_deref(),
            Some("application/json, text/event-stream"),
            "{post:#}"
        );
        assert_eq!(
            header(post, "content-type").as_deref(),
            Some("application/json"),
            "{post:#}"
        );
        assert_eq!(
            header(post, "authorization").as_deref(),
            Some("Bearer s3cret"),
            "the configured header, expanded: {post:#}"
        );
        // The session id once the server sent one, the protocol version once negotiated.
        let (session, version) = if i == 0 {
            (None, None)
        } else {
            (Some("sess-1"), Some("2025-11-25"))
        };
        assert_eq!(
            header(post, "mcp-session-id").as_deref(),
            session,
            "{post:#}"
        );
        assert_eq!(
            header(post, "mcp-protocol-version").as_deref(),
            version,
            "{post:#}"
        );
    }
    // The GET stream for server messages (answered 405: none, kept quiet).
    let gets: Vec<&Value> = requests.iter().filter(|r| r["method"] == "GET").collect();
    assert_eq!(gets.len(), 1, "{requests:#?}");
    assert_eq!(header(gets[0], "mcp-session-id").as_deref(), Some("sess-1"));
    assert_eq!(
        header(gets[0], "accept").as_deref(),
        Some("text/event-stream")
    );
    assert!(
        !agent.stderr().contains("405"),
        "a 405 GET is quiet: {}",
        agent.stderr()
    );

    // At exit: a best-effort DELETE of the session.
    agent.close_stdin();
    agent.wait_exit(LONG);
    let requests = server.wait_until("the DELETE", |r| r.iter().any(|r| r["method"] == "DELETE"));
    let delete = requests.iter().find(|r| r["method"] == "DELETE").unwrap();
    assert_eq!(header(delete, "mcp-session-id").as_deref(), Some("sess-1"));
    assert_eq!(
        header(delete, "authorization").as_deref(),
        Some("Bearer s3cret")
    );
}

#[test]
fn http_connect_failures_are_retried_when_transient_and_reported() {
    let Some(py) = python("http_connect_failures_are_retried_when_transient_and_reported") else {
        return;
    };
    let down = HttpMcpServer::start(
        &py,
        &json!({"methods": {"initialize": {"status": 500, "body": "boom"}}}),
    );
    let nokey = HttpMcpServer::start(&py, &ping_server_config("sess-k"));
    let notimpl = HttpMcpServer::start(&py, &json!({"methods": {"initialize": {"status": 501}}}));
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "down": http_entry(&down, json!({})),
            "nokey": http_entry(&nokey, json!({"headers": {
                "Authorization": "Bearer ${MCP_UNSET_TOKEN}", "X-Other": "$ALSO_UNSET"}})),
            "notimpl": http_entry(&notimpl, json!({})),
        }),
    )
    .spawn();
    assert_eq!(
        startup_report(&mut agent),
        "MCP servers need attention:\n  down: failed: MCP HTTP request failed with status 500: boom\n  nokey: failed: Failed to resolve MCP server \"nokey\" header \"Authorization\" from environment variable: MCP_UNSET_TOKEN\n  notimpl: failed: MCP HTTP request failed with status 501\nRun /mcp to fix."
    );
    // 500 is transient: tried again after 250 ms and 1 s; 501 is not; an unresolved header
    // fails before any request.
    assert_eq!(down.posts("initialize").len(), 3, "{:#?}", down.requests());
    assert!(
        down.requests().iter().all(|r| r["method"] == "POST"),
        "{:#?}",
        down.requests()
    );
    assert_eq!(notimpl.posts("initialize").len(), 1);
    assert_eq!(nokey.requests(), Vec::<Value>::new());
    let status = mcp_status(&mut agent, "m1");
    assert_eq!(
        notices(&status),
        vec![(
            "info".to_string(),
            "down: failed (codemode)\n    MCP HTTP request failed with status 500: boom\nnokey: failed (codemode)\n    Failed to resolve MCP server \"nokey\" header \"Authorization\" from environment variable: MCP_UNSET_TOKEN\nnotimpl: failed (codemode)\n    MCP HTTP request failed with status 501".to_string()
        )]
    );
}

#[test]
fn http_connect_retries_a_transient_tools_list_failure() {
    let Some(py) = python("http_connect_retries_a_transient_tools_list_failure") else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    config["methods"]["tools/list"] = json!([
        {"status": 503, "body": "later"},
        {"result": {"tools": [ping_tool()]}}
    ]);
    let server = HttpMcpServer::start(&py, &config);
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({}))}),
    )
    .spawn();
    let status = mcp_status(&mut agent, "m1");
    // pi 1.6.0: the first connection is closed (DELETE), a second one lists the tool.
    assert_eq!(
        notices(&status),
        vec![(
            "info".to_string(),
            "web: connected, 1 tools (codemode)".to_string()
        )]
    );
    assert_eq!(server.posts("initialize").len(), 2);
    assert_eq!(server.posts("tools/list").len(), 2);
}

#[test]
fn http_tool_calls_are_not_retried_after_a_transient_error() {
    let Some(py) = python("http_tool_calls_are_not_retried_after_a_transient_error") else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    config["methods"]["tools/call"] = json!([
        {"status": 503, "body": "busy"},
        {"result": {"content": [{"type": "text", "text": "pong"}]}}
    ]);
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__web__ping", json!({}))]},
        text_reply("Failed.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "ping");
    assert_eq!(
        outcome(&recs, "t1"),
        thrown("MCP HTTP request failed with status 503: busy")
    );
    assert_eq!(server.posts("tools/call").len(), 1);
    assert_eq!(server.posts("initialize").len(), 1);
}

#[test]
fn http_expired_session_is_retried_once_on_a_new_session() {
    let Some(py) = python("http_expired_session_is_retried_once_on_a_new_session") else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    config["session"] = json!(["sess-1", "sess-2"]);
    config["methods"]["tools/call"] = json!([
        {"status": 404, "body": "no such session"},
        {"result": {"content": [{"type": "text", "text": "pong"}]}}
    ]);
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__web__ping", json!({}))]},
        text_reply("Pinged.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "ping");
    assert_eq!(
        outcome(&recs, "t1")["result"]["content"],
        json!([{"type": "text", "text": "pong"}])
    );
    assert_eq!(end_of(&recs, "t1")["isError"], false);
    let calls = server.posts("tools/call");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        header(&calls[0], "mcp-session-id").as_deref(),
        Some("sess-1")
    );
    assert_eq!(
        header(&calls[1], "mcp-session-id").as_deref(),
        Some("sess-2")
    );
    let inits = server.posts("initialize");
    assert_eq!(inits.len(), 2, "a new session: a fresh initialize");
    assert_eq!(header(&inits[1], "mcp-session-id"), None);
}

#[test]
fn http_resource_requests_are_retried_once_after_a_transient_error() {
    let Some(py) = python("http_resource_requests_are_retried_once_after_a_transient_error") else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    config["methods"]["initialize"]["result"]["capabilities"] =
        json!({"tools": {}, "resources": {}});
    config["methods"]["resources/read"] = json!([
        {"status": 503, "body": "busy"},
        {"result": {"contents": [{"uri": "r://a", "text": "A text"}]}}
    ]);
    config["methods"]["resources/list"] = json!([
        {"status": 502, "body": "bad gateway"},
        {"result": {"resources": [{"uri": "r://a", "name": "a"}]}}
    ]);
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "read_mcp_resource", json!({"server": "web", "uri": "r://a"}))]},
        {"blocks": [tool_call("t2", "list_mcp_resources", json!({"server": "web"}))]},
        text_reply("Read.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "read it");
    assert_eq!(
        outcome(&recs, "t1"),
        json!({"result": {"content": [{"type": "text", "text": "A text"}],
                          "details": {"server": "web", "tool": "read_mcp_resource"},
                          "structuredContent": {"server": "web", "uri": "r://a",
                                                "contents": [{"uri": "r://a", "text": "A text"}]}},
               "isError": false})
    );
    assert_eq!(
        outcome(&recs, "t2"),
        json!({"result": {"content": [{"type": "text", "text":
                              "{\"server\":\"web\",\"resources\":[{\"server\":\"web\",\"uri\":\"r://a\",\"name\":\"a\"}]}"}],
                          "details": {"server": "web", "tool": "list_mcp_resources"},
                          "structuredContent": {"server": "web", "resources": [
                              {"server": "web", "uri": "r://a", "name": "a"}]}},
               "isError": false})
    );
    assert_eq!(server.posts("resources/read").len(), 2);
    assert_eq!(server.posts("resources/list").len(), 2);
}

/// The `mcp.log` lines with their timestamps checked and replaced by `<T>`.
fn normalized_log(agent_dir: &Path) -> String {
    let text = std::fs::read_to_string(agent_dir.join("mcp.log")).unwrap_or_default();
    let iso = regex::Regex::new(r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ").unwrap();
    iso.replace_all(&text, "<T> ").into_owned()
}

#[test]
fn http_server_log_messages_are_formatted_as_pi_does() {
    let Some(py) = python("http_server_log_messages_are_formatted_as_pi_does") else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    // The answer to the call comes as SSE, after four log messages (§3.5 edge cases).
    config["methods"]["tools/call"] = json!({"mode": "sse", "before": [
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "debug", "logger": "", "data": "crlf\r\nnext"}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "notice"}},
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": 7, "logger": "db", "data": [1, "two", null]}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "no level"}},
    ], "result": {"content": [{"type": "text", "text": "pong"}]}});
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__web__ping", json!({}))]},
        text_reply("Pinged.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "ping");
    assert_eq!(
        end_of(&recs, "t1")["result"]["content"],
        json!([{"type": "text", "text": "pong"}])
    );
    // pi 1.6.0 wrote exactly these lines.
    assert_eq!(
        normalized_log(&agent.agent_dir),
        "<T> [web] debug crlf\n    next\n<T> [web] notice undefined\n<T> [web] info db: [1,\"two\",null]\n<T> [web] info no level\n"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Resource tools (§8)

#[test]
fn resource_tools_list_read_and_fail_as_pi_does() {
    let Some(py) = python("resource_tools_list_read_and_fail_as_pi_does") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "list_mcp_resources", json!({})),
            tool_call("t2", "list_mcp_resources", json!({"server": "fake"})),
            tool_call("t3", "list_mcp_resources", json!({"server": "fake", "cursor": "2"})),
            tool_call("t4", "list_mcp_resources", json!({"cursor": "2"})),
            tool_call("t5", "list_mcp_resources", json!({"server": "nope"})),
            tool_call("t6", "list_mcp_resource_templates", json!({})),
            tool_call("t7", "list_mcp_resource_templates", json!({"server": " fake "})),
            tool_call("t8", "read_mcp_resource", json!({"server": "fake", "uri": "fake://text/hello"})),
            tool_call("t9", "read_mcp_resource", json!({"server": "fake", "uri": "fake://blob/pixel"})),
            tool_call("t10", "read_mcp_resource", json!({"server": "fake", "uri": "fake://empty"})),
            tool_call("t11", "read_mcp_resource", json!({"server": "fake", "uri": "fake://text/abc"})),
            tool_call("t12", "read_mcp_resource", json!({"server": "fake", "uri": "fake://missing"})),
            tool_call("t13", "read_mcp_resource", json!({"server": "fake"})),
            tool_call("t14", "read_mcp_resource", json!({"server": "", "uri": "x"})),
            tool_call("t15", "list_mcp_resources", json!({"server": 5})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({"FAKE_MCP_RESOURCES": "1"}),
                                   json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "resources");
    let reqs = mock.wait_requests(1, LONG);

    // Declared after the server's tools.
    let mut expected = strings(&["read", "bash", "edit", "write"]);
    expected.extend(fake_tool_names("fake"));
    expected.extend(strings(&[
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    ]));
    assert_eq!(tool_names(&reqs[0]), expected);
    // Descriptions are our own words (index.md, "Wording"); names and schemas are exact.
    let list_schema = json!({"type": "object", "properties": {
        "server": {"type": "string"}, "cursor": {"type": "string"}},
        "required": [], "additionalProperties": false});
    let read_schema = json!({"type": "object", "properties": {
        "server": {"type": "string"}, "uri": {"type": "string"}},
        "required": ["server", "uri"], "additionalProperties": false});
    for (name, schema) in [
        ("list_mcp_resources", &list_schema),
        ("list_mcp_resource_templates", &list_schema),
        ("read_mcp_resource", &read_schema),
    ] {
        let tool = declared(&reqs[0], name);
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{tool:#}"
        );
        assert_eq!(
            without_descriptions(&tool["input_schema"]),
            *schema,
            "{name}"
        );
        let keys: Vec<String> = tool
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.as_str() != "cache_control")
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "name",
                "description",
                "eager_input_streaming",
                "input_schema"
            ],
            "{name}"
        );
    }

    let listing = |text: &str, server: &str, tool: &str| {
        let payload: Value = serde_json::from_str(text).unwrap();
        json!({"result": {"content": [{"type": "text", "text": text}],
                          "details": {"server": server, "tool": tool},
                          "structuredContent": payload},
               "isError": false})
    };
    let hello = r#"{"server":"fake","uri":"fake://text/hello","name":"hello.txt","title":"Hello","mimeType":"text/plain","description":"A text resource"}"#;
    let pixel = r#"{"server":"fake","uri":"fake://blob/pixel","name":"pixel.png","mimeType":"image/png","description":"A 4x4 red PNG"}"#;
    let empty = r#"{"server":"fake","uri":"fake://empty","name":"empty","description":"A resource without contents"}"#;
    // Every page of every server; `_meta`, `icons` and the `ui://` app resource left out.
    assert_eq!(
        outcome(&recs, "t1"),
        listing(
            &format!(r#"{{"resources":[{hello},{pixel},{empty}]}}"#),
            "",
            "list_mcp_resources"
        )
    );
    // One page of one server, then the next.
    assert_eq!(
        outcome(&recs, "t2"),
        listing(
            &format!(r#"{{"server":"fake","resources":[{hello},{pixel}],"nextCursor":"2"}}"#),
            "fake",
            "list_mcp_resources"
        )
    );
    assert_eq!(
        outcome(&recs, "t3"),
        listing(
            &format!(r#"{{"server":"fake","resources":[{empty}]}}"#),
            "fake",
            "list_mcp_resources"
        )
    );
    assert_eq!(
        outcome(&recs, "t4"),
        thrown("cursor can only be used when a server is specified")
    );
    assert_eq!(
        outcome(&recs, "t5"),
        thrown("MCP server \"nope\" has no resources. Servers with resources: fake")
    );
    let templates = r#"[{"server":"fake","uriTemplate":"fake://text/{name}","name":"text-by-name","mimeType":"text/plain","description":"A text resource per name"},{"server":"fake","uriTemplate":"fake://item/{id}","name":"fake://item/{id}"}]"#;
    assert_eq!(
        outcome(&recs, "t6"),
        listing(
            &format!(r#"{{"resourceTemplates":{templates}}}"#),
            "",
            "list_mcp_resource_templates"
        )
    );
    // The server name is trimmed.
    assert_eq!(
        outcome(&recs, "t7"),
        listing(
            &format!(r#"{{"server":"fake","resourceTemplates":{templates}}}"#),
            "fake",
            "list_mcp_resource_templates"
        )
    );
    let read_result = |content: Value, uri: &str, contents: Value| {
        json!({"result": {"content": content,
                          "details": {"server": "fake", "tool": "read_mcp_resource"},
                          "structuredContent": {"server": "fake", "uri": uri, "contents": contents}},
               "isError": false})
    };
    assert_eq!(
        outcome(&recs, "t8"),
        read_result(
            json!([{"type": "text", "text": "Hello from the fake server."}]),
            "fake://text/hello",
            json!([{"uri": "fake://text/hello", "mimeType": "text/plain", "text": "Hello from the fake server."}])
        )
    );
    assert_eq!(
        outcome(&recs, "t9"),
        read_result(
            json!([{"type": "image", "data": PNG_B64, "mimeType": "image/png"}]),
            "fake://blob/pixel",
            json!([{"uri": "fake://blob/pixel", "mimeType": "image/png", "blob": PNG_B64}])
        )
    );
    assert_eq!(
        outcome(&recs, "t10"),
        read_result(
            json!([{"type": "text", "text": "Resource fake://empty is empty."}]),
            "fake://empty",
            json!([])
        )
    );
    assert_eq!(
        outcome(&recs, "t11"),
        read_result(
            json!([{"type": "text", "text": "text resource abc"}]),
            "fake://text/abc",
            json!([{"uri": "fake://text/abc", "mimeType": "text/plain", "text": "text resource abc"}])
        )
    );
    assert_eq!(
        outcome(&recs, "t12"),
        thrown("Resource not found: fake://missing")
    );
    assert_eq!(
        outcome(&recs, "t13"),
        thrown("Validation failed for tool \"read_mcp_resource\":\n  - uri: missing\n\nReceived arguments:\n{\n  \"server\": \"fake\"\n}")
    );
    assert_eq!(outcome(&recs, "t14"), thrown("server must be provided"));
    // A number is coerced to a string by the argument validation.
    assert_eq!(
        outcome(&recs, "t15"),
        thrown("MCP server \"5\" has no resources. Servers with resources: fake")
    );
    // Nothing is listed at connect: every resources/* request came from a call.
    let got = received(&agent.agent_dir, "fake");
    let methods: Vec<&str> = got
        .iter()
        .filter_map(|m| m["method"].as_str())
        .filter(|m| m.starts_with("resources/"))
        .collect();
    assert_eq!(
        methods.iter().filter(|m| **m == "resources/read").count(),
        5
    );
    assert_eq!(
        methods
            .iter()
            .filter(|m| **m == "resources/templates/list")
            .count(),
        2
    );
}

// ---------------------------------------------------------------------------------------------
// 3. The 20 KiB limit (§7.4)

/// What the fake server's `big` tool sends for `bytes`.
fn big_text(bytes: usize) -> String {
    let mut s = String::new();
    let mut i = 1;
    while s.len() < bytes {
        s.push_str(&format!("line {i:05} {}\n", "x".repeat(40)));
        i += 1;
    }
    s.truncate(bytes);
    s
}

#[test]
fn a_result_over_20_kib_is_cut_in_the_middle_and_saved_in_full() {
    let Some(py) = python("a_result_over_20_kib_is_cut_in_the_middle_and_saved_in_full") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "mcp__fake__big", json!({"bytes": 30000})),
            tool_call("t2", "mcp__fake__big", json!({"lines": 500})),
            tool_call("t3", "mcp__fake__big", json!({"bytes": 20480})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "big");

    let check = |call: &str, full: &str, tokens: usize, lines: usize, removed: usize| {
        let end = end_of(&recs, call);
        let path = end["result"]["details"]["fullOutputPath"]
            .as_str()
            .unwrap_or_else(|| panic!("no fullOutputPath: {end:#}"))
            .to_string();
        let head = &full[..10240];
        let tail = &full[full.len() - 10240..];
        let text = format!(
            "Warning: truncated output (original token count: {tokens})\nTotal output lines: {lines}\n\n{head}…{removed} chars truncated…{tail}\n\n[Full output: {path} (read it with offset/limit)]"
        );
        assert_eq!(
            end["result"]["content"],
            json!([{"type": "text", "text": text}]),
            "{call}"
        );
        assert_eq!(
            end["result"]["details"],
            json!({"server": "fake", "tool": "big", "fullOutputPath": path})
        );
        assert_eq!(end["isError"], false);
        // The full text, in a new 0600 file `pi-mcp-<16 hex>.txt` in the temp dir.
        let path = Path::new(&path);
        assert_eq!(path.parent(), Some(tmp_dir(&agent).as_path()));
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(is_output_file_name(name, ".txt"), "{name}");
        assert_eq!(mode_of(path), 0o600);
        assert_eq!(std::fs::read_to_string(path).unwrap(), full);
        // The untruncated result stays in structuredContent (for scripts), not in the message.
        let msg = find(
            &recs,
            json!({"type": "message_end", "message": {"role": "toolResult", "toolCallId": call}}),
        )
        .1;
        assert_eq!(msg["message"]["content"], end["result"]["content"]);
        path.to_path_buf()
    };
    let full = big_text(30000);
    let p1 = check("t1", &full, 7500, 577, 30000 - 20480);
    // Two text blocks are joined with "\n" before the limit applies.
    let lines: String = (1..=500)
        .map(|i| format!("line {i:05} {}\n", "x".repeat(40)))
        .collect();
    let full2 = format!("{lines}\nsecond block");
    assert_eq!(full2.len(), 26013);
    let p2 = check("t2", &full2, 6504, 502, 26013 - 20480);
    assert_ne!(p1, p2);
    // Exactly 20480 bytes pass unchanged.
    assert_eq!(
        outcome(&recs, "t3")["result"],
        json!({"content": [{"type": "text", "text": big_text(20480)}],
               "details": {"server": "fake", "tool": "big"},
               "structuredContent": {"content": [{"type": "text", "text": big_text(20480)}]}})
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Every content conversion (§7.2)

#[test]
fn mixed_content_blocks_become_model_content_as_pi_converts_them() {
    let Some(py) = python("mixed_content_blocks_become_model_content_as_pi_converts_them") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__plain__mixed", json!({}))]},
        {"blocks": [tool_call("t2", "mcp__res__mixed", json!({}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "plain": fake_entry(&py, "plain", json!({}), json!({"exposure": "direct"})),
            "res": fake_entry(&py, "res", json!({"FAKE_MCP_RESOURCES": "1"}), json!({"exposure": "direct"})),
        }),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "mixed");
    let check = |call: &str, server: &str, read_hint: &str| {
        let end = end_of(&recs, call);
        let content = &end["result"]["content"];
        // The saved binary resource: its path is the one random part.
        let saved_text = content[3]["text"].as_str().unwrap_or("").to_string();
        let prefix = "[Binary resource file:///data.bin (application/octet-stream, 16B) saved to ";
        let path = saved_text
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{saved_text}"))
            .to_string();
        let file = Path::new(&path);
        assert_eq!(file.parent(), Some(tmp_dir(&agent).as_path()));
        assert!(
            is_output_file_name(file.file_name().unwrap().to_str().unwrap(), ".bin"),
            "{path}"
        );
        assert_eq!(std::fs::read(file).unwrap(), (0u8..16).collect::<Vec<_>>());
        assert_eq!(mode_of(file), 0o600);
        assert_eq!(
            *content,
            json!([
                {"type": "text", "text": "embedded text"},
                {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
                {"type": "text", "text": "{\"k\": 1}"},
                {"type": "text", "text": format!("{prefix}{path}]")},
                {"type": "text", "text": format!("[Resource file:///report.csv \"Report\" (text/csv, 2.0KB): Monthly numbers{read_hint}]")},
                {"type": "text", "text": "[audio audio/wav omitted]"},
                {"type": "text", "text": "[unsupported MCP content weird]"},
            ]),
            "{call}"
        );
        assert_eq!(
            end["result"]["details"],
            json!({"server": server, "tool": "mixed"})
        );
        // The raw blocks without the result's `_meta`.
        assert_eq!(
            end["result"]["structuredContent"],
            json!({"content": [
                {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "embedded text"}},
                {"type": "resource", "resource": {"uri": "file:///pic.png", "mimeType": "image/png", "blob": PNG_B64}},
                {"type": "resource", "resource": {"uri": "file:///data.json", "mimeType": "application/json", "blob": "eyJrIjogMX0="}},
                {"type": "resource", "resource": {"uri": "file:///data.bin", "mimeType": "application/octet-stream", "blob": "AAECAwQFBgcICQoLDA0ODw=="}},
                {"type": "resource_link", "uri": "file:///report.csv", "name": "report.csv", "title": "Report",
                 "mimeType": "text/csv", "size": 2048, "description": "Monthly numbers"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "weird", "foo": 1},
            ]})
        );
        assert_eq!(end["isError"], false);
        path
    };
    // Resource links name read_mcp_resource only for a server that has resources.
    let a = check("t1", "plain", "");
    let b = check(
        "t2",
        "res",
        ". Read it with read_mcp_resource (server \"res\")",
    );
    assert_ne!(a, b, "every saved resource gets a new file");
}

// ---------------------------------------------------------------------------------------------
// 5. A hidden server opened per tool (§6.1)

#[test]
fn a_hidden_server_declares_only_the_tools_opened_by_tool_exposure() {
    let Some(py) = python("a_hidden_server_declares_only_the_tools_opened_by_tool_exposure") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "mcp__fake__echo", json!({"text": "x"})),
            tool_call("t2", "mcp__fake__fail", json!({})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({"FAKE_MCP_INIT_DELAY": "0.3"}),
                                   json!({"exposure": "hidden", "toolExposure": {"echo": "direct"}}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "try");
    let reqs = mock.wait_requests(2, LONG);
    // The first prompt waits for the server (a direct toolExposure); nothing else is declared,
    // no codemode or tool_search, no mcp_servers section.
    for r in &reqs {
        assert_eq!(
            tool_names(r),
            ["read", "bash", "edit", "write", "mcp__fake__echo"]
        );
        let system = r["body"]["system"].to_string();
        assert!(!system.contains("mcp_servers"), "{system}");
    }
    assert_eq!(
        outcome(&recs, "t1"),
        json!({"result": {"content": [{"type": "text", "text": "echo: x"}],
                          "details": {"server": "fake", "tool": "echo"},
                          "structuredContent": {"content": [{"type": "text", "text": "echo: x"}]}},
               "isError": false})
    );
    assert_eq!(
        outcome(&recs, "t2"),
        thrown("Tool mcp__fake__fail not found")
    );
    assert!(
        !received(&agent.agent_dir, "fake")
            .iter()
            .any(|m| m["params"]["name"] == "fail"),
        "a hidden tool never reaches the server"
    );
    let status = mcp_status(&mut agent, "m1");
    assert_eq!(
        notices(&status),
        vec![(
            "info".to_string(),
            "fake: connected, 18 tools (hidden)".to_string()
        )]
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Print and json modes (§12)

/// Runs the binary to completion in a fresh workspace with `servers` in `<agent>/mcp.json`
/// (`{{AGENT_DIR}}` expanded); returns (stdout, stderr, exit code, agent dir's root).
fn run_print(
    mock: &MockLlm,
    servers: Value,
    args: &[&str],
) -> (String, String, Option<i32>, TempDir) {
    let root = TempDir::new("mcp-print");
    for d in ["cwd", "agent", "home", "tmp"] {
        std::fs::create_dir_all(root.path().join(d)).unwrap();
    }
    let agent_dir = root.path().join("agent");
    root.write(
        "agent/models.json",
        &crate::support::agent::mock_models_json(&mock.base_url()).to_string(),
    );
    root.write(
        "agent/settings.json",
        &json!({"retry": {"enabled": false}}).to_string(),
    );
    root.write(
        "agent/mcp.json",
        &json!({"mcpServers": servers})
            .to_string()
            .replace("{{AGENT_DIR}}", &agent_dir.to_string_lossy()),
    );
    let mut cmd = Command::new(crate::support::outside::pi_rpc_bin());
    cmd.args([
        "--provider",
        "mock",
        "--model",
        "mock-sonnet",
        "--no-session",
    ])
    .args(args)
    .current_dir(root.path().join("cwd"))
    .env_clear()
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("HOME", root.path().join("home"))
    .env("TMPDIR", root.path().join("tmp"))
    .env("PI_CODING_AGENT_DIR", &agent_dir)
    .env("PI_OFFLINE", "1")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn pi-rpc");
    let pid = child.id();
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(LONG) {
        Ok(out) => out.expect("wait for pi-rpc"),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("pi-rpc {args:?} did not exit");
        }
    };
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
        root,
    )
}

/// A direct fake server plus one that cannot start (the startup report would fire).
fn print_servers(py: &Path) -> Value {
    json!({
        "fake": fake_entry(py, "fake", json!({}), json!({"exposure": "direct"})),
        "broken": {"command": "/nonexistent/mcp-server"},
    })
}

#[test]
fn print_mode_uses_direct_mcp_tools_and_prints_no_notices() {
    let Some(py) = python("print_mode_uses_direct_mcp_tools_and_prints_no_notices") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__fake__echo", json!({"text": "hi"}))]},
        text_reply("The server said: echo: hi")
    ]}));
    let (stdout, stderr, code, root) =
        run_print(&mock, print_servers(&py), &["-p", "use the echo tool"]);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "The server said: echo: hi\n");
    assert!(
        !stderr.contains("MCP") && !stderr.contains("/mcp"),
        "no startup report in print mode: {stderr}"
    );
    let reqs = mock.wait_requests(2, LONG);
    assert!(tool_names(&reqs[0]).contains(&"mcp__fake__echo".to_string()));
    let tool_result = reqs[1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool_result in the second request");
    assert_eq!(tool_result["tool_use_id"], "t1");
    assert!(
        tool_result["content"].to_string().contains("echo: hi"),
        "{tool_result:#}"
    );
    assert!(received(&root.path().join("agent"), "fake")
        .iter()
        .any(|m| m["method"] == "tools/call"));
}

#[test]
fn json_mode_uses_direct_mcp_tools_and_writes_no_ui_requests() {
    let Some(py) = python("json_mode_uses_direct_mcp_tools_and_writes_no_ui_requests") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__fake__echo", json!({"text": "hi"}))]},
        text_reply("Done.")
    ]}));
    let (stdout, stderr, code, _root) = run_print(
        &mock,
        print_servers(&py),
        &["--mode", "json", "use the echo tool"],
    );
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let records: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        !records.iter().any(|r| r["type"] == "extension_ui_request"),
        "{records:#?}"
    );
    assert!(!stderr.contains("MCP servers need attention"), "{stderr}");
    assert_eq!(
        outcome(&records, "t1"),
        json!({"result": {"content": [{"type": "text", "text": "echo: hi"}],
                          "details": {"server": "fake", "tool": "echo"},
                          "structuredContent": {"content": [{"type": "text", "text": "echo: hi"}]}},
               "isError": false})
    );
    assert_eq!(records.last().unwrap()["type"], "agent_settled");
}

// ---------------------------------------------------------------------------------------------
// 7. Server logs (§3.5)

#[test]
fn server_log_messages_go_to_mcp_log_and_never_to_stdout() {
    let Some(py) = python("server_log_messages_go_to_mcp_log_and_never_to_stdout") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__fake__echo", json!({"text": "x"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({"FAKE_MCP_LOG": "2"}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    run_prompt(&mut agent, "p1", "log");
    let expected = "<T> [fake] info fake: fake server started\n<T> [fake] warning first line\n    second line\n<T> [fake] error fake: {\"answer\":42}\n";
    eventually("three log messages", || {
        normalized_log(&agent.agent_dir) == expected
    });
    assert_eq!(normalized_log(&agent.agent_dir), expected);
    let raw: Vec<String> = agent
        .raw_lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    assert!(
        !raw.iter()
            .any(|l| l.contains("fake server started") || l.contains("second line")),
        "{raw:#?}"
    );
    assert!(!agent.stderr().contains("fake server started"));
}

// ---------------------------------------------------------------------------------------------
// 8. tools/list_changed (§4.3, §5.3)

#[test]
fn a_changed_tool_list_is_fetched_again_and_new_tools_are_declared() {
    let Some(py) = python("a_changed_tool_list_is_fetched_again_and_new_tools_are_declared") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__fake__change", json!({}))]},
        text_reply("Changed."),
        {"blocks": [tool_call("t2", "mcp__fake__added", json!({"a": 1}))]},
        text_reply("Added.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "change");
    assert_eq!(
        outcome(&recs, "t1")["result"]["content"],
        json!([{"type": "text", "text": "tools changed: added"}])
    );
    // The listing is fetched again in the background: the request right after the call usually
    // does not have the new tool yet, in pi 1.6.0 as here, so the next prompt's request is the
    // one checked.
    eventually("a second tools/list", || {
        received(&agent.agent_dir, "fake")
            .iter()
            .filter(|m| m["method"] == "tools/list")
            .count()
            == 2
    });
    let recs = run_prompt(&mut agent, "p2", "call the new tool");
    let reqs = mock.wait_requests(4, LONG);
    let mut expected = strings(&["read", "bash", "edit", "write"]);
    expected.extend(fake_tool_names("fake"));
    assert_eq!(tool_names(&reqs[0]), expected);
    expected.push("mcp__fake__added".to_string());
    assert_eq!(tool_names(&reqs[2]), expected);
    assert_eq!(
        declared(&reqs[2], "mcp__fake__added")["description"],
        "Listed once 'change' was called."
    );
    assert_eq!(
        outcome(&recs, "t2"),
        json!({"result": {"content": [{"type": "text", "text": "called added with {\"a\": 1}"}],
                          "details": {"server": "fake", "tool": "added"},
                          "structuredContent": {"content": [{"type": "text", "text": "called added with {\"a\": 1}"}]}},
               "isError": false})
    );
}

// ---------------------------------------------------------------------------------------------
// 9. Value expansion in entries (§2.2, §2.5)

#[test]
fn env_values_cwd_and_home_in_args_are_expanded() {
    let Some(py) = python("env_values_cwd_and_home_in_args_are_expanded") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__fake__whereami", json!({}))]},
        text_reply("Done.")
    ]}));
    let script = fake_server().to_string_lossy().into_owned();
    let mut agent = with_servers(
        agent_for(&mock)
            .env("MY_SECRET", "s3cret")
            .cwd_file("sub/.keep", ""),
        json!({
            "fake": fake_entry(&py, "fake", json!({
                "FAKE_MCP_SHOW_ENV": "SECRET,GREETING,PLAIN",
                "SECRET": "${MY_SECRET}",
                "GREETING": "hi $MY_SECRET, $$HOME stays",
                "PLAIN": "a$!b ${not a name}",
            }), json!({"exposure": "direct", "cwd": "sub", "args": [script, "~/data", "~", "x~"]})),
            "nosecret": fake_entry(&py, "nosecret", json!({"K": "${MCP_UNSET_SECRET}"}), json!({})),
        }),
    )
    .spawn();
    assert_eq!(
        startup_report(&mut agent),
        "MCP servers need attention:\n  nosecret: failed: Failed to resolve MCP server \"nosecret\" env \"K\" from environment variable: MCP_UNSET_SECRET\nRun /mcp to fix."
    );
    let recs = run_prompt(&mut agent, "p1", "where");
    let text = outcome(&recs, "t1")["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let got: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let home = agent.root.path().join("home");
    assert_eq!(
        got,
        json!({
            "argv": [format!("{}/data", home.display()), home.display().to_string(), "x~"],
            "cwd": agent.cwd.join("sub").canonicalize().unwrap().display().to_string(),
            "env": {"GREETING": "hi s3cret, $HOME stays", "PLAIN": "a!b ${not a name}", "SECRET": "s3cret"},
        })
    );
    assert!(received(&agent.agent_dir, "nosecret").is_empty());
}

// ---------------------------------------------------------------------------------------------
// More of streamable HTTP: failure texts, server messages on the answer stream and the GET
// stream (§4.2, §4.5, §4.6)

#[test]
fn http_initialize_failures_are_reported_in_pi_words() {
    let Some(py) = python("http_initialize_failures_are_reported_in_pi_words") else {
        return;
    };
    let body = format!("{}{}", "x".repeat(300), "é".repeat(300));
    let servers = [
        (
            "auth",
            json!({"methods": {"initialize": {"status": 401, "body": "nope"}}}),
        ),
        ("acc", json!({"methods": {"initialize": {"status": 202}}})),
        (
            "ct",
            json!({"methods": {"initialize": {"content_type": "text/html", "mode": "raw", "body": "<html>"}}}),
        ),
        (
            "long",
            json!({"methods": {"initialize": {"status": 400, "body": body}}}),
        ),
        (
            "rpcerr",
            json!({"methods": {"initialize": {"error": {"code": -32600, "message": "bad init"}}}}),
        ),
        (
            "badver",
            json!({"methods": {"initialize": {"result": {
            "protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}}}}),
        ),
    ];
    let started: Vec<(&str, HttpMcpServer)> = servers
        .iter()
        .map(|(name, config)| (*name, HttpMcpServer::start(&py, config)))
        .collect();
    let mut entries = serde_json::Map::new();
    for (name, server) in &started {
        let extra = if *name == "auth" {
            json!({"headers": {"Authorization": "Bearer x"}})
        } else {
            json!({})
        };
        entries.insert(name.to_string(), http_entry(server, extra));
    }
    let mock = no_llm();
    let mut agent = with_servers(agent_for(&mock), Value::Object(entries)).spawn();
    // The body is trimmed and cut to 497 characters and `...`.
    let long = format!(
        "MCP HTTP request failed with status 400: {}{}...",
        "x".repeat(300),
        "é".repeat(197)
    );
    let errors = [
        ("auth", "MCP server requires authentication".to_string()),
        (
            "acc",
            "MCP server accepted request initialize without a response".to_string(),
        ),
        (
            "ct",
            "Unsupported MCP response content type: text/html".to_string(),
        ),
        ("long", long),
        ("rpcerr", "bad init".to_string()),
        (
            "badver",
            "MCP server selected unsupported protocol version 1999-01-01".to_string(),
        ),
    ];
    let report: Vec<String> = errors
        .iter()
        .map(|(n, e)| format!("  {n}: failed: {e}"))
        .collect();
    assert_eq!(
        startup_report(&mut agent),
        format!(
            "MCP servers need attention:\n{}\nRun /mcp to fix.",
            report.join("\n")
        )
    );
    let status: Vec<String> = errors
        .iter()
        .map(|(n, e)| format!("{n}: failed (codemode)\n    {e}"))
        .collect();
    assert_eq!(
        notices(&mcp_status(&mut agent, "m1")),
        vec![("info".to_string(), status.join("\n"))]
    );
    // None of these is transient: one attempt each.
    for (name, server) in &started {
        assert_eq!(server.posts("initialize").len(), 1, "{name}");
    }
}

#[test]
fn http_answer_streams_carry_progress_and_server_requests_and_the_get_stream_changes_tools() {
    let Some(py) = python(
        "http_answer_streams_carry_progress_and_server_requests_and_the_get_stream_changes_tools",
    ) else {
        return;
    };
    let pong_tool =
        json!({"name": "pong", "description": "Added later.", "inputSchema": {"type": "object"}});
    let mut config = ping_server_config("sess-1");
    config["methods"]["initialize"]["result"]["capabilities"] =
        json!({"tools": {"listChanged": true}});
    config["methods"]["tools/list"] = json!([
        {"result": {"tools": [ping_tool()]}},
        {"result": {"tools": [ping_tool(), pong_tool]}}
    ]);
    config["methods"]["tools/call"] = json!([
        {"mode": "sse", "before": [
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": 3, "progress": 1, "total": 2, "message": "half way"}},
            {"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"},
            {"jsonrpc": "2.0", "id": "srv-2", "method": "ping"},
            {"jsonrpc": "2.0", "id": "srv-3", "method": "sampling/createMessage", "params": {}}],
         "result": {"content": [{"type": "text", "text": "pong"}]}},
        {"result": {"content": [{"type": "text", "text": "second"}]}}
    ]);
    // The GET stream announces a changed tool list half a second after it opened.
    config["get"] = json!({"mode": "get_sse", "delay": 0.5, "hold": true, "max": 1,
        "messages": [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]});
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__web__ping", json!({}))]},
        text_reply("Pinged."),
        {"blocks": [tool_call("t2", "mcp__web__pong", json!({}))]},
        text_reply("Ponged.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "ping");
    let update = find(
        &recs,
        json!({"type": "tool_execution_update", "toolCallId": "t1"}),
    )
    .1;
    assert_eq!(
        update["partialResult"],
        json!({"content": [{"type": "text", "text": "half way"}],
               "details": {"server": "web", "tool": "ping"}})
    );
    assert_eq!(
        outcome(&recs, "t1")["result"]["content"],
        json!([{"type": "text", "text": "pong"}])
    );
    // The server's requests were answered with POSTs.
    let requests = server.wait_until("three answers", |r| {
        r.iter()
            .filter(|r| r["method"] == "POST" && r["body"].get("method").is_none())
            .count()
            == 3
    });
    let mut answers: Vec<Value> = requests
        .iter()
        .filter(|r| r["method"] == "POST" && r["body"].get("method").is_none())
        .map(|r| r["body"].clone())
        .collect();
    answers.sort_by_key(|a| a["id"].as_str().unwrap_or("").to_string());
    let cwd_url = format!("file://{}", agent.cwd.display());
    assert_eq!(
        answers,
        vec![
            json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"roots": [{"uri": cwd_url, "name": "cwd"}]}}),
            json!({"jsonrpc": "2.0", "id": "srv-2", "result": {}}),
            json!({"jsonrpc": "2.0", "id": "srv-3", "error": {"code": -32601,
                   "message": "Method not found: sampling/createMessage"}}),
        ]
    );
    // The list_changed of the GET stream: listed again, the new tool declared next prompt.
    server.wait_until("a second tools/list", |r| {
        r.iter()
            .filter(|r| r["body"]["method"] == "tools/list")
            .count()
            == 2
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    let recs = run_prompt(&mut agent, "p2", "pong");
    let reqs = mock.wait_requests(4, LONG);
    assert_eq!(
        tool_names(&reqs[2]),
        [
            "read",
            "bash",
            "edit",
            "write",
            "mcp__web__ping",
            "mcp__web__pong"
        ]
    );
    assert_eq!(
        outcome(&recs, "t2")["result"],
        json!({"content": [{"type": "text", "text": "second"}],
               "details": {"server": "web", "tool": "pong"},
               "structuredContent": {"content": [{"type": "text", "text": "second"}]}})
    );
    assert_eq!(
        server.posts("tools/call")[1]["body"],
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
               "params": {"name": "pong", "arguments": {}, "_meta": {"progressToken": 5}}})
    );
}

// ---------------------------------------------------------------------------------------------
// More resource tools: listing errors per server, several contents, exposure (§8)

#[test]
fn resource_listings_collect_errors_per_server_and_reads_label_several_contents() {
    let Some(py) =
        python("resource_listings_collect_errors_per_server_and_reads_label_several_contents")
    else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    config["methods"]["initialize"]["result"]["capabilities"] =
        json!({"tools": {}, "resources": {}});
    config["methods"]["resources/list"] =
        json!({"error": {"code": -32000, "message": "listing broke"}});
    config["methods"]["resources/templates/list"] =
        json!({"error": {"code": -32601, "message": "Method not found"}});
    config["methods"]["resources/read"] = json!({"result": {"contents": [
        {"uri": "dir://x/a.txt", "mimeType": "text/plain", "text": "A"},
        {"uri": "dir://x/b.json", "mimeType": "application/json", "blob": "eyJrIjogMX0=", "_meta": {"x": 1}},
        {"uri": "dir://x/c", "blob": "AAE="}]}});
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "list_mcp_resources", json!({})),
            tool_call("t2", "list_mcp_resource_templates", json!({})),
            tool_call("t3", "list_mcp_resource_templates", json!({"server": "web"})),
            tool_call("t4", "read_mcp_resource", json!({"server": "web", "uri": "dir://x"})),
            tool_call("t5", "list_mcp_resources", json!({"server": "web"})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "fake": fake_entry(&py, "fake", json!({"FAKE_MCP_RESOURCES": "1"}), json!({"exposure": "direct"})),
            "web": http_entry(&server, json!({"exposure": "direct"})),
        }),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "resources");
    let text_of = |call: &str| {
        outcome(&recs, call)["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(
        text_of("t1"),
        r#"{"resources":[{"server":"fake","uri":"fake://text/hello","name":"hello.txt","title":"Hello","mimeType":"text/plain","description":"A text resource"},{"server":"fake","uri":"fake://blob/pixel","name":"pixel.png","mimeType":"image/png","description":"A 4x4 red PNG"},{"server":"fake","uri":"fake://empty","name":"empty","description":"A resource without contents"}],"errors":[{"server":"web","error":"listing broke"}]}"#
    );
    assert_eq!(end_of(&recs, "t1")["isError"], false);
    // -32601 for templates means none, not an error.
    assert_eq!(
        text_of("t2"),
        r#"{"resourceTemplates":[{"server":"fake","uriTemplate":"fake://text/{name}","name":"text-by-name","mimeType":"text/plain","description":"A text resource per name"},{"server":"fake","uriTemplate":"fake://item/{id}","name":"fake://item/{id}"}]}"#
    );
    assert_eq!(
        outcome(&recs, "t3"),
        json!({"result": {"content": [{"type": "text", "text": r#"{"server":"web","resourceTemplates":[]}"#}],
                          "details": {"server": "web", "tool": "list_mcp_resource_templates"},
                          "structuredContent": {"server": "web", "resourceTemplates": []}},
               "isError": false})
    );
    // Several contents: each after a `<uri>:` text.
    let read = outcome(&recs, "t4");
    let saved = read["result"]["content"][5]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let path = saved
        .strip_prefix("[Binary resource dir://x/c (unknown type, 2B) saved to ")
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{saved}"))
        .to_string();
    assert_eq!(std::fs::read(&path).unwrap(), vec![0u8, 1]);
    assert!(is_output_file_name(
        Path::new(&path).file_name().unwrap().to_str().unwrap(),
        ".bin"
    ));
    assert_eq!(
        read,
        json!({"result": {"content": [
                    {"type": "text", "text": "dir://x/a.txt:"}, {"type": "text", "text": "A"},
                    {"type": "text", "text": "dir://x/b.json:"}, {"type": "text", "text": "{\"k\": 1}"},
                    {"type": "text", "text": "dir://x/c:"}, {"type": "text", "text": saved}],
                "details": {"server": "web", "tool": "read_mcp_resource"},
                "structuredContent": {"server": "web", "uri": "dir://x", "contents": [
                    {"uri": "dir://x/a.txt", "mimeType": "text/plain", "text": "A"},
                    {"uri": "dir://x/b.json", "mimeType": "application/json", "blob": "eyJrIjogMX0="},
                    {"uri": "dir://x/c", "blob": "AAE="}]}},
               "isError": false})
    );
    // With a server named, its error is the tool's error.
    assert_eq!(outcome(&recs, "t5"), thrown("listing broke"));
}

#[test]
fn resource_tools_are_not_declared_for_hidden_or_non_direct_resource_servers() {
    let Some(py) =
        python("resource_tools_are_not_declared_for_hidden_or_non_direct_resource_servers")
    else {
        return;
    };
    for exposure in ["hidden", "codemode"] {
        let mock = MockLlm::start(json!({"replies": [
            {"blocks": [
                tool_call("t1", "list_mcp_resources", json!({})),
                tool_call("t2", "mcp__plain__mixed", json!({})),
            ]},
            text_reply("Done.")
        ]}));
        let mut agent = with_servers(
            agent_for(&mock),
            json!({
                "res": fake_entry(&py, "res", json!({"FAKE_MCP_RESOURCES": "1"}), json!({"exposure": exposure})),
                "plain": fake_entry(&py, "plain", json!({"FAKE_MCP_NAME": "plain"}), json!({"exposure": "direct"})),
            }),
        )
        .spawn();
        let recs = run_prompt(&mut agent, "p1", "resources");
        let reqs = mock.wait_requests(2, LONG);
        for r in &reqs {
            let names = tool_names(r);
            assert!(
                !names
                    .iter()
                    .any(|n| n.contains("resource") || n.starts_with("mcp__res__")),
                "{exposure}: {names:?}"
            );
            assert!(
                names.contains(&"mcp__plain__mixed".to_string()),
                "{names:?}"
            );
        }
        assert_eq!(
            outcome(&recs, "t1"),
            thrown("Tool list_mcp_resources not found"),
            "{exposure}"
        );
        // `plain` has no resources: its resource links name no read tool.
        assert_eq!(
            outcome(&recs, "t2")["result"]["content"][4],
            json!({"type": "text", "text": "[Resource file:///report.csv \"Report\" (text/csv, 2.0KB): Monthly numbers]"}),
            "{exposure}"
        );
    }
}

#[test]
fn deferred_resource_tools_are_loaded_by_tool_search() {
    let Some(py) = python("deferred_resource_tools_are_loaded_by_tool_search") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "tool_search", json!({"query": "list resources"}))]},
        {"blocks": [tool_call("t2", "list_mcp_resources", json!({"server": "res"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            // Connects after `plain` (see `tool_search_declares_loaded_tools_in_the_order_it_ranked_them`).
            "res": fake_entry(&py, "res", json!({"FAKE_MCP_RESOURCES": "1", "FAKE_MCP_INIT_DELAY": "0.5"}),
                              json!({"exposure": "deferred"})),
            "plain": fake_entry(&py, "plain", json!({"FAKE_MCP_NAME": "plain"}), json!({"exposure": "direct"})),
        }),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "resources");
    // pi 1.6.0 loads these four (the three first in this order; the ranking also reads the
    // descriptions, which are our own words, so only the set is compared).
    let loaded: Vec<String> = outcome(&recs, "t1")["result"]["details"]["loaded"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut sorted = loaded.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "list_mcp_resource_templates",
            "list_mcp_resources",
            "mcp__res__change",
            "read_mcp_resource",
        ]
    );
    let reqs = mock.wait_requests(3, LONG);
    let mut expected = strings(&["read", "bash", "edit", "write", "tool_search"]);
    expected.extend(fake_tool_names("plain"));
    assert_eq!(tool_names(&reqs[0]), expected);
    // Loaded tools are declared after the others (their order: see
    // `tool_search_declares_loaded_tools_in_the_order_it_ranked_them`).
    let names = tool_names(&reqs[1]);
    assert_eq!(names[..expected.len()], expected[..]);
    let mut tail = names[expected.len()..].to_vec();
    tail.sort();
    assert_eq!(tail, sorted);
    assert_eq!(
        outcome(&recs, "t2")["result"]["content"][0]["text"],
        r#"{"server":"res","resources":[{"server":"res","uri":"fake://text/hello","name":"hello.txt","title":"Hello","mimeType":"text/plain","description":"A text resource"},{"server":"res","uri":"fake://blob/pixel","name":"pixel.png","mimeType":"image/png","description":"A 4x4 red PNG"}],"nextCursor":"2"}"#
    );
}

#[test]
fn tool_search_declares_loaded_tools_in_the_order_it_ranked_them() {
    let Some(py) = python("tool_search_declares_loaded_tools_in_the_order_it_ranked_them") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "tool_search",
                              json!({"query": "tool list change echo text", "limit": 2}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "fake": fake_entry(&py, "fake", json!({}), json!({"exposure": "deferred"})),
            // A direct server that connects after `fake`.
            "plain": fake_entry(&py, "plain", json!({"FAKE_MCP_NAME": "plain", "FAKE_MCP_INIT_DELAY": "0.5"}),
                                json!({"exposure": "direct", "toolExposure": {"*": "hidden", "echo": "direct", "bare": "direct"}})),
        }),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "search");
    // `change` matches three query terms, `echo` two: change ranks first (as in pi 1.6.0).
    assert_eq!(
        outcome(&recs, "t1")["result"]["details"],
        json!({"loaded": ["mcp__fake__change", "mcp__fake__echo"]})
    );
    // pi 1.6.0 activates them in that order, after every tool already active: the system
    // message and the next request say so.
    let added = crate::support::records::find_all(
        &recs,
        json!({"type": "message_end", "message": {"role": "system"}}),
    );
    let names: Vec<Value> = added
        .last()
        .and_then(|m| m["message"]["toolsAdded"].as_array())
        .map(|a| a.iter().map(|t| t["name"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        [json!("mcp__fake__change"), json!("mcp__fake__echo")]
    );
    let reqs = mock.wait_requests(2, LONG);
    let before = [
        "read",
        "bash",
        "edit",
        "write",
        "tool_search",
        "mcp__plain__echo",
        "mcp__plain__bare",
    ];
    assert_eq!(tool_names(&reqs[0]), before);
    let mut after = strings(&before);
    after.extend(strings(&["mcp__fake__change", "mcp__fake__echo"]));
    assert_eq!(tool_names(&reqs[1]), after);
}

#[test]
fn http_reconnect_and_new_session_end_the_old_session_with_a_delete() {
    let Some(py) = python("http_reconnect_and_new_session_end_the_old_session_with_a_delete")
    else {
        return;
    };
    let mut config = ping_server_config("s1");
    config["session"] = json!(["s1", "s2", "s3"]);
    let server = HttpMcpServer::start(&py, &config);
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let start = agent.records.len();
    agent.send(json!({"id": "m1", "type": "prompt", "message": "/mcp reconnect web"}));
    agent.wait_for_timeout(json!({"type": "response", "id": "m1"}), LONG);
    assert_eq!(
        notices(&agent.records[start..]),
        vec![(
            "info".to_string(),
            "Reconnected to MCP server \"web\" (connected · 1 tool).".to_string()
        )]
    );
    agent.request("n1", json!({"type": "new_session"}));
    assert_eq!(
        notices(&mcp_status(&mut agent, "m2")),
        vec![(
            "info".to_string(),
            "web: connected, 1 tools (direct)".to_string()
        )]
    );
    let requests = server.wait_until("two DELETEs", |r| {
        r.iter().filter(|r| r["method"] == "DELETE").count() == 2
    });
    let deleted: Vec<Option<String>> = requests
        .iter()
        .filter(|r| r["method"] == "DELETE")
        .map(|r| header(r, "mcp-session-id"))
        .collect();
    assert_eq!(deleted, [Some("s1".to_string()), Some("s2".to_string())]);
    assert_eq!(server.posts("initialize").len(), 3);
    // Each connection's requests carry its own session.
    let lists: Vec<Option<String>> = server
        .posts("tools/list")
        .iter()
        .map(|r| header(r, "mcp-session-id"))
        .collect();
    assert_eq!(
        lists,
        [
            Some("s1".to_string()),
            Some("s2".to_string()),
            Some("s3".to_string())
        ]
    );
    agent.close_stdin();
    agent.wait_exit(LONG);
    server.wait_until("the last DELETE", |r| {
        r.iter().any(|r| {
            r["method"] == "DELETE" && header(r, "mcp-session-id").as_deref() == Some("s3")
        })
    });
}

#[test]
fn http_timeouts_and_aborts_cancel_the_request_with_a_notification() {
    let Some(py) = python("http_timeouts_and_aborts_cancel_the_request_with_a_notification") else {
        return;
    };
    // Both servers hold the answer stream of every call open without answering.
    let mut config = ping_server_config("sess-1");
    config["methods"]["tools/call"] = json!({"mode": "sse", "hold": true});
    let quick = HttpMcpServer::start(&py, &config);
    let patient = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__quick__ping", json!({}))]},
        text_reply("Timed out."),
        {"blocks": [tool_call("t2", "mcp__patient__ping", json!({}))]},
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "quick": http_entry(&quick, json!({"exposure": "direct", "timeout": 0.5})),
            "patient": http_entry(&patient, json!({"exposure": "direct"})),
        }),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "ping");
    assert_eq!(
        outcome(&recs, "t1"),
        thrown("MCP request timed out after 500ms")
    );
    let cancelled = |server: &HttpMcpServer| -> Vec<Value> {
        server
            .posts("notifications/cancelled")
            .iter()
            .map(|r| r["body"].clone())
            .collect()
    };
    quick.wait_until("the cancellation", |r| {
        r.iter()
            .any(|r| r["body"]["method"] == "notifications/cancelled")
    });
    assert_eq!(
        cancelled(&quick),
        [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 3, "reason": "Request timed out"}})
        ]
    );
    agent.send(json!({"id": "p2", "type": "prompt", "message": "again"}));
    agent.wait_for_timeout(
        json!({"type": "tool_execution_start", "toolCallId": "t2"}),
        LONG,
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    agent.send(json!({"id": "a1", "type": "abort"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    assert_eq!(outcome(&agent.records, "t2"), thrown("MCP request aborted"));
    patient.wait_until("the cancellation", |r| {
        r.iter()
            .any(|r| r["body"]["method"] == "notifications/cancelled")
    });
    assert_eq!(
        cancelled(&patient),
        [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 3, "reason": "AbortError: This operation was aborted"}})
        ]
    );
}

#[test]
fn http_results_errors_extra_fields_and_a_listing_over_the_limit() {
    let Some(py) = python("http_results_errors_extra_fields_and_a_listing_over_the_limit") else {
        return;
    };
    let mut config = ping_server_config("sess-1");
    config["methods"]["initialize"]["result"]["capabilities"] =
        json!({"tools": {}, "resources": {}});
    config["methods"]["tools/call"] = json!([
        // A JSON array answer: a log message, then an error without content.
        {"mode": "json_array",
         "before": [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "arr"}}],
         "result": {"content": [], "isError": true}},
        {"result": {"content": [{"type": "resource_link", "uri": "r://x", "name": "x"}, {"type": "text", "text": "t"}],
                    "structuredContent": {"a": 1}, "isError": false, "_meta": {"m": 1}, "extra": 5}}
    ]);
    let resources: Vec<Value> = (0..300)
        .map(|i| json!({"uri": format!("r://item/{i:04}"), "name": format!("item {i}"), "description": "d".repeat(40)}))
        .collect();
    config["methods"]["resources/list"] = json!({"result": {"resources": resources}});
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "mcp__web__ping", json!({})),
            tool_call("t2", "mcp__web__ping", json!({})),
            tool_call("t3", "list_mcp_resources", json!({})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"web": http_entry(&server, json!({"exposure": "direct"}))}),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "go");
    // The calls run in parallel: which one got the server's first answer is not fixed.
    assert_eq!(server.posts("tools/call").len(), 2);
    let ends = [outcome(&recs, "t1"), outcome(&recs, "t2")];
    let error = json!({"result": {"content": [{"type": "text", "text": "MCP tool web/ping returned an error"}],
                                  "details": {"server": "web", "tool": "ping"},
                                  "structuredContent": {"content": [], "isError": true},
                                  "isError": true},
                       "isError": true});
    let linked = json!({"result": {"content": [
                            {"type": "text", "text": "[Resource r://x \"x\". Read it with read_mcp_resource (server \"web\")]"},
                            {"type": "text", "text": "t"}],
                        "details": {"server": "web", "tool": "ping"},
                        "structuredContent": {"content": [{"type": "resource_link", "uri": "r://x", "name": "x"}, {"type": "text", "text": "t"}],
                                              "structuredContent": {"a": 1}, "isError": false, "extra": 5}},
                        "isError": false});
    assert!(
        (ends[0] == error && ends[1] == linked) || (ends[0] == linked && ends[1] == error),
        "{ends:#?}"
    );
    // The listing's JSON is one line of 34105 bytes: cut, saved, `server` "" in details.
    let listing = end_of(&recs, "t3");
    let path = listing["result"]["details"]["fullOutputPath"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(
        listing["result"]["details"],
        json!({"server": "", "tool": "list_mcp_resources", "fullOutputPath": path})
    );
    let full = std::fs::read_to_string(&path).unwrap();
    let payload: Value = serde_json::from_str(&full).unwrap();
    assert_eq!(payload["resources"].as_array().map(Vec::len), Some(300));
    assert_eq!(listing["result"]["structuredContent"], payload);
    let text = listing["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.starts_with(&format!(
            "Warning: truncated output (original token count: {})\nTotal output lines: 1\n\n{}…",
            full.len().div_ceil(4),
            &full[..10240]
        )),
        "{}",
        &text[..200]
    );
    assert!(text.ends_with(&format!(
        "…{}\n\n[Full output: {path} (read it with offset/limit)]",
        &full[full.len() - 10240..]
    )));
    assert_eq!(normalized_log(&agent.agent_dir), "<T> [web] info arr\n");
}

#[test]
fn tool_names_colliding_across_servers_get_a_hash_suffix() {
    let Some(py) = python("tool_names_colliding_across_servers_get_a_hash_suffix") else {
        return;
    };
    // Server `m`'s tool `fake__echo` and server `m__fake`'s `echo` both sanitize to
    // `mcp__m__fake__echo`; `m` connects first and keeps the plain name.
    let mut config = ping_server_config("sess-1");
    config["methods"]["tools/list"] = json!({"result": {"tools": [
        {"name": "fake__echo", "description": "Web echo.", "inputSchema": {"type": "object"}}]}});
    let server = HttpMcpServer::start(&py, &config);
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("t1", "mcp__m__fake__echo", json!({})),
            tool_call("t2", "mcp__m__fake__echo_4de07a55", json!({"text": "hi"})),
        ]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock),
        json!({
            "m": http_entry(&server, json!({"exposure": "direct"})),
            "m__fake": fake_entry(&py, "m__fake", json!({"FAKE_MCP_INIT_DELAY": "0.7"}),
                                  json!({"exposure": "direct", "toolExposure": {"*": "hidden", "echo": "direct"}})),
        }),
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "echo twice");
    let reqs = mock.wait_requests(1, LONG);
    // As pi 1.6.0 names them.
    assert_eq!(
        tool_names(&reqs[0]),
        [
            "read",
            "bash",
            "edit",
            "write",
            "mcp__m__fake__echo",
            "mcp__m__fake__echo_4de07a55"
        ]
    );
    assert_eq!(
        outcome(&recs, "t1")["result"]["details"],
        json!({"server": "m", "tool": "fake__echo"})
    );
    assert_eq!(
        outcome(&recs, "t2")["result"],
        json!({"content": [{"type": "text", "text": "echo: hi"}],
               "details": {"server": "m__fake", "tool": "echo"},
               "structuredContent": {"content": [{"type": "text", "text": "echo: hi"}]}})
    );
}

#[test]
fn unresolved_env_values_and_shell_commands_fail_the_server_in_pi_words() {
    let Some(py) = python("unresolved_env_values_and_shell_commands_fail_the_server_in_pi_words")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "mcp__ok__whereami", json!({}))]},
        text_reply("Done.")
    ]}));
    let mut agent = with_servers(
        agent_for(&mock).env("MY_EMPTY", ""),
        json!({
            "ok": fake_entry(&py, "ok", json!({"FAKE_MCP_SHOW_ENV": "CMD,CMD2",
                "CMD": "!echo from-shell", "CMD2": "!printf '  padded  '"}), json!({"exposure": "direct"})),
            "empty": fake_entry(&py, "empty", json!({"K": "$MY_EMPTY"}), json!({})),
            "several": fake_entry(&py, "several", json!({"K": "${UNSET_A}-${UNSET_B}-$MY_EMPTY"}), json!({})),
            "shellfail": fake_entry(&py, "shellfail", json!({"K": "!exit 3"}), json!({})),
            "shellempty": fake_entry(&py, "shellempty", json!({"K": "!true"}), json!({})),
        }),
    )
    .spawn();
    let errors = [
        ("empty", "Failed to resolve MCP server \"empty\" env \"K\" from environment variable: MY_EMPTY"),
        ("several", "Failed to resolve MCP server \"several\" env \"K\" from environment variables: UNSET_A, UNSET_B, MY_EMPTY"),
        ("shellfail", "Failed to resolve MCP server \"shellfail\" env \"K\" from shell command: exit 3"),
        ("shellempty", "Failed to resolve MCP server \"shellempty\" env \"K\" from shell command: true"),
    ];
    let lines: Vec<String> = errors
        .iter()
        .map(|(n, e)| format!("  {n}: failed: {e}"))
        .collect();
    assert_eq!(
        startup_report(&mut agent),
        format!(
            "MCP servers need attention:\n{}\nRun /mcp to fix.",
            lines.join("\n")
        )
    );
    let recs = run_prompt(&mut agent, "p1", "where");
    let text = outcome(&recs, "t1")["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let got: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    // Command output is trimmed.
    assert_eq!(got["env"], json!({"CMD": "from-shell", "CMD2": "padded"}));
    let mut status: Vec<String> = vec!["ok: connected, 18 tools (direct)".to_string()];
    status.extend(
        errors
            .iter()
            .map(|(n, e)| format!("{n}: failed (codemode)\n    {e}")),
    );
    assert_eq!(
        notices(&mcp_status(&mut agent, "m1")),
        vec![("info".to_string(), status.join("\n"))]
    );
}

#[test]
fn http_401_without_credentials_needs_sign_in() {
    let Some(py) = python("http_401_without_credentials_needs_sign_in") else {
        return;
    };
    let server = HttpMcpServer::start(
        &py,
        &json!({"methods": {"initialize": {"status": 401, "body": "who are you",
                                           "headers": {"WWW-Authenticate": "Bearer realm=\"x\""}}}}),
    );
    let mock = no_llm();
    let mut agent = with_servers(
        agent_for(&mock),
        json!({"na": http_entry(&server, json!({}))}),
    )
    .spawn();
    assert_eq!(
        startup_report(&mut agent),
        "MCP servers need attention:\n  na: needs sign-in\nRun /mcp to fix."
    );
    assert_eq!(
        notices(&mcp_status(&mut agent, "m1")),
        vec![(
            "info".to_string(),
            "na: needs sign-in, run /mcp login na (codemode)".to_string()
        )]
    );
}

#[test]
fn print_mode_mcp_command_prints_nothing() {
    let Some(py) = python("print_mode_mcp_command_prints_nothing") else {
        return;
    };
    let mock = no_llm();
    let (stdout, stderr, code, _root) = run_print(&mock, print_servers(&py), &["-p", "/mcp"]);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "");
    assert!(!stderr.contains("MCP"), "{stderr}");
    assert!(mock.requests().is_empty(), "/mcp never reaches the model");
}
