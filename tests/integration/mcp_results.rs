//! MCP results and tools through the real binary (`spec/mcp.md`): the resource tools (§8) and
//! their exposure, the 20 KiB output limit (§7.4), every content conversion (§7.2), a hidden
//! server opened per tool (§6.1), tool names colliding across servers (§5.1) and the order of
//! tools loaded by `tool_search` (§6.3). Expected texts were checked against pi 1.6.0 run on the
//! same servers.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::ext::python;
use crate::support::mcp::*;
use crate::support::mcp::{fake_entry, received, with_servers};
use crate::support::mcp_http::{ping_server_config, HttpMcpServer};
use crate::support::mock_llm::MockLlm;
use crate::support::records::find;
use crate::support::run::{agent_for, run_prompt, text_reply, tool_call, LONG, PNG_B64};

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
