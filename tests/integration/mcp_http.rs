//! Streamable HTTP MCP servers through the real binary (`spec/mcp.md` §4.6, §3.4, §2.5), against
//! `tests/support/mcp_http_server.py`: headers, sessions and their DELETE, connect retries and
//! the failure texts of the start-up report, expired sessions, retried resource requests, server
//! messages on answer streams and the GET stream, timeouts and aborts, server logs, a 401 that
//! asks for a sign-in. Expected texts were checked against pi 1.6.0 run on the same servers.

use serde_json::{json, Value};

use crate::support::ext::python;
use crate::support::mcp::with_servers;
use crate::support::mcp::*;
use crate::support::mcp_http::{header, ping_server_config, ping_tool, HttpMcpServer};
use crate::support::mock_llm::MockLlm;
use crate::support::records::find;
use crate::support::run::{agent_for, no_llm, run_prompt, text_reply, tool_call, LONG};

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
