//! MCP outside the RPC client's view and in entries (`spec/mcp.md`): print and json modes (§12),
//! `mcp.log` (§3.5), `tools/list_changed` (§5.3) and value expansion in entries (§2.2, §2.5),
//! with pi's failure texts. Expected texts were checked against pi 1.6.0 run on the same servers.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::ext::python;
use crate::support::mcp::*;
use crate::support::mcp::{fake_entry, fake_server, received, with_servers};
use crate::support::mock_llm::MockLlm;
use crate::support::process::eventually;
use crate::support::run::{agent_for, no_llm, run_prompt, text_reply, tool_call, LONG};
use crate::support::TempDir;

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
