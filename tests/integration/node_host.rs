//! The Node extension host (`spec/extensions.md` §B15): pi's own TypeScript extensions, unchanged,
//! run through the real binary in one Node process that borrows pi's loader and runner from the
//! installed pi package. pi's published examples permission-gate, protected-paths and
//! confirm-destructive (tests/fixtures/pi_extensions) are the main cases; smaller inline
//! extensions cover tools with progress, commands, several units in one host, load failures,
//! abort with a pending dialog and the texts of a host that cannot start.
//!
//! These tests need Node ≥ 22.19 and pi 1.6.0 (`support::node`); they skip with a notice when
//! either is missing unless `PI_RPC_REQUIRE` names `node`. The tests of the texts of a disabled
//! host or a missing Node run everywhere.

use serde_json::{json, Value};

use super::extensions::blocked_end;
use crate::support::ext::{assert_load_failure, ext_records, handled, ui_id, without_id};
use crate::support::mock_llm::MockLlm;
use crate::support::node::{
    node_host, NodeHost, CONFIRM_DESTRUCTIVE, PERMISSION_GATE, PROTECTED_PATHS,
};
use crate::support::records::find;
use crate::support::run::{agent_for, no_llm, run_prompt, text_reply, tool_call, LONG};
use crate::support::Agent;

fn ext_path(agent: &Agent, rel: &str) -> String {
    agent.agent_dir.join(rel).to_string_lossy().into_owned()
}

/// Sends `cmd` with `id` and returns the records up to and including its response.
fn exchange(agent: &mut Agent, id: &str, cmd: Value) -> Vec<Value> {
    super::extensions::exchange(agent, id, cmd)
}

fn start(nh: &NodeHost, mock: &MockLlm, files: &[(&str, &str)]) -> Agent {
    let mut b = nh.enable(agent_for(mock));
    for (rel, content) in files {
        b = b.agent_file(rel, content);
    }
    b.spawn()
}

#[test]
fn pi_permission_gate_asks_before_dangerous_bash_and_blocks_when_refused() {
    let Some(nh) =
        node_host("pi_permission_gate_asks_before_dangerous_bash_and_blocks_when_refused")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_n1", "bash", json!({"command": "rm -rf build && echo removed"}))]},
        {"blocks": [tool_call("toolu_n2", "bash", json!({"command": "sudo whoami"}))]},
        {"blocks": [tool_call("toolu_n3", "bash", json!({"command": "echo harmless"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = nh
        .enable(agent_for(&mock))
        .agent_file("extensions/permission-gate.ts", PERMISSION_GATE)
        .cwd_file("build/keep.txt", "x")
        .spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "Clean up"}));

    let s1 = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "select"}),
        LONG,
    );
    assert_eq!(
        without_id(&s1),
        json!({"type": "extension_ui_request", "method": "select",
               "title": "⚠️ Dangerous command:\n\n  rm -rf build && echo removed\n\nAllow?",
               "options": ["Yes", "No"]})
    );
    agent.send(json!({"type": "extension_ui_response", "id": ui_id(&s1), "value": "Yes"}));
    let s2 = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "select", "title": "⚠️ Dangerous command:\n\n  sudo whoami\n\nAllow?"}),
        LONG,
    );
    agent.send(json!({"type": "extension_ui_response", "id": ui_id(&s2), "value": "No"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let recs = agent.records[from..].to_vec();

    let (_, end1) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_n1"}),
    );
    assert_eq!(end1["isError"], false, "{end1}");
    assert_eq!(
        end1["result"]["content"],
        json!([{"type": "text", "text": "removed\n"}])
    );
    assert!(!agent.cwd.join("build").exists(), "the allowed rm ran");
    let (_, end2) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_n2"}),
    );
    assert_eq!(end2, blocked_end("toolu_n2", "bash", "Blocked by user"));
    let (_, end3) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_n3"}),
    );
    assert_eq!(
        end3["isError"], false,
        "a harmless command needs no dialog: {end3}"
    );
    assert_eq!(
        ext_records(&recs).len(),
        2,
        "two dialogs, no extension_error"
    );
    find(&recs, json!({"type": "agent_end"}));
}

#[test]
fn pi_protected_paths_blocks_writes_to_protected_paths_with_a_notify() {
    let Some(nh) = node_host("pi_protected_paths_blocks_writes_to_protected_paths_with_a_notify")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_w1", "write", json!({"path": ".env", "content": "SECRET=1"}))]},
        {"blocks": [tool_call("toolu_w2", "write", json!({"path": "notes.txt", "content": "hello"}))]},
        text_reply("Written.")
    ]}));
    let mut agent = start(
        &nh,
        &mock,
        &[("extensions/protected-paths.ts", PROTECTED_PATHS)],
    );
    let recs = run_prompt(&mut agent, "p1", "Write the files");

    let (notify_at, notify) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(
        without_id(&notify),
        json!({"type": "extension_ui_request", "method": "notify",
               "message": "Blocked write to protected path: .env", "notifyType": "warning"})
    );
    let (end_at, end1) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_w1"}),
    );
    assert!(
        notify_at < end_at,
        "the notify comes before the blocked call ends"
    );
    assert_eq!(
        end1,
        blocked_end("toolu_w1", "write", "Path \".env\" is protected")
    );
    assert!(!agent.cwd.join(".env").exists());
    let (_, end2) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_w2"}),
    );
    assert_eq!(end2["isError"], false, "{end2}");
    assert_eq!(
        std::fs::read_to_string(agent.cwd.join("notes.txt"))
            .ok()
            .as_deref(),
        Some("hello")
    );
}

#[test]
fn pi_confirm_destructive_guards_new_session_and_fork() {
    let Some(nh) = node_host("pi_confirm_destructive_guards_new_session_and_fork") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Hi there.")]}));
    let mut agent = start(
        &nh,
        &mock,
        &[("extensions/confirm-destructive.ts", CONFIRM_DESTRUCTIVE)],
    );
    run_prompt(&mut agent, "p1", "Hello");

    // new_session declined: the dialog, then the extension's notify, then `cancelled`.
    agent.send(json!({"id": "n1", "type": "new_session"}));
    let c = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    assert_eq!(
        without_id(&c),
        json!({"type": "extension_ui_request", "method": "confirm", "title": "Clear session?",
               "message": "This will delete all messages in the current session."})
    );
    let from = agent.records.len();
    agent.send(json!({"type": "extension_ui_response", "id": ui_id(&c), "confirmed": false}));
    let r = agent.response("n1");
    assert_eq!(r["data"], json!({"cancelled": true}), "{r}");
    let recs = agent.records[from..].to_vec();
    let (_, n) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(n["message"], "Clear cancelled");

    // fork declined through the select, with the entry id's first 8 characters in the title.
    let fm = exchange(&mut agent, "fm", json!({"type": "get_fork_messages"}));
    let entry = fm.last().and_then(|r| {
        r["data"]["messages"][0]["entryId"]
            .as_str()
            .map(str::to_string)
    });
    let entry = entry.unwrap_or_else(|| panic!("no fork message: {fm:?}"));
    agent.send(json!({"id": "f1", "type": "fork", "entryId": entry}));
    let s = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "select"}),
        LONG,
    );
    assert_eq!(
        without_id(&s),
        json!({"type": "extension_ui_request", "method": "select",
               "title": format!("Fork from entry {}?", &entry[..8]),
               "options": ["Yes, create fork", "No, stay in current session"]})
    );
    agent.send(json!({"type": "extension_ui_response", "id": ui_id(&s), "value": "No, stay in current session"}));
    let r = agent.response("f1");
    assert_eq!(r["data"]["cancelled"], true, "{r}");

    // new_session confirmed: a fresh runtime (the host initializes its units again).
    agent.send(json!({"id": "n2", "type": "new_session"}));
    let c = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    agent.send(json!({"type": "extension_ui_response", "id": ui_id(&c), "confirmed": true}));
    let r = agent.response("n2");
    assert_eq!(r["data"], json!({"cancelled": false}), "{r}");
    // And the gate still works in the new runtime.
    agent.send(json!({"id": "n3", "type": "new_session"}));
    let c = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    agent.send(json!({"type": "extension_ui_response", "id": ui_id(&c), "cancelled": true}));
    assert_eq!(agent.response("n3")["data"], json!({"cancelled": true}));
}

/// A unit with a tool that reports progress, a command, and one that reads the state copy.
const TOOLS_AND_COMMANDS: &str = r#"
export default function (pi: any) {
  pi.registerTool({
    name: "count",
    label: "Count",
    description: "Counts to n",
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
    async execute(_id: string, params: any, _signal: any, onUpdate: any) {
      for (let i = 1; i <= params.n; i++) {
        onUpdate?.({ content: [{ type: "text", text: `at ${i}` }], details: { i } });
      }
      return { content: [{ type: "text", text: `counted to ${params.n}` }], details: { n: params.n } };
    },
  });
  pi.registerCommand("where", {
    description: "Says the model and the tools",
    handler: async (args: string, ctx: any) => {
      ctx.ui.notify(`${ctx.model?.id} ${pi.getActiveTools().includes("count")} ${args}`, "info");
    },
  });
}
"#;

const SECOND_UNIT: &str = r#"
export default function (pi: any) {
  pi.registerCommand("second", { description: "From the second unit", handler: async () => {} });
  pi.on("tool_result", async (event: any) => {
    if (event.toolName === "count") return { content: [{ type: "text", text: "patched by second" }] };
  });
}
"#;

#[test]
fn ts_tools_with_progress_commands_and_two_units_in_one_host() {
    let Some(nh) = node_host("ts_tools_with_progress_commands_and_two_units_in_one_host") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_c1", "count", json!({"n": 2}))]},
        text_reply("Counted.")
    ]}));
    let mut agent = start(
        &nh,
        &mock,
        &[
            ("extensions/a-tools.ts", TOOLS_AND_COMMANDS),
            ("extensions/b-second.ts", SECOND_UNIT),
        ],
    );
    let gc = exchange(&mut agent, "gc", json!({"type": "get_commands"}));
    let commands = gc
        .last()
        .map(|r| r["data"]["commands"].clone())
        .unwrap_or_default();
    let names: Vec<&str> = commands
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names[..2], ["where", "second"], "{commands}");
    let first = &commands[0];
    assert_eq!(
        first["sourceInfo"]["path"],
        ext_path(&agent, "extensions/a-tools.ts")
    );

    let recs = run_prompt(&mut agent, "p1", "Count to two");
    let updates: Vec<Value> = recs
        .iter()
        .filter(|r| r["type"] == "tool_execution_update")
        .map(|r| r["partialResult"]["details"].clone())
        .collect();
    assert_eq!(updates, [json!({"i": 1}), json!({"i": 2})]);
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_c1"}),
    );
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": "patched by second"}]),
        "the second unit's tool_result handler patched the first unit's tool"
    );

    let recs = exchange(
        &mut agent,
        "w1",
        json!({"type": "prompt", "message": "/where now"}),
    );
    let (_, n) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(n["message"], "mock-sonnet true now");
    assert_eq!(recs.last(), Some(&handled("w1")));
}

const BOOM_AT_LOAD: &str = r#"
export default function (pi: any) {
  throw new Error("factory failed");
}
"#;

#[test]
fn a_throwing_ts_factory_is_pi_s_load_failure() {
    let Some(nh) = node_host("a_throwing_ts_factory_is_pi_s_load_failure") else {
        return;
    };
    let mock = no_llm();
    let mut agent = start(&nh, &mock, &[("extensions/boom.ts", BOOM_AT_LOAD)]);
    let path = ext_path(&agent, "extensions/boom.ts");
    assert_load_failure(&mut agent, &path, |m| {
        m == "Failed to load extension: factory failed"
    });
}

const ASKS_ON_BASH: &str = r#"
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    const ok = await ctx.ui.confirm("Run?", event.input.command, { signal: ctx.signal });
    if (!ok) return { block: true, reason: "Not confirmed" };
  });
}
"#;

#[test]
fn abort_interrupts_a_ts_gate_waiting_for_its_dialog() {
    let Some(nh) = node_host("abort_interrupts_a_ts_gate_waiting_for_its_dialog") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_a1", "bash", json!({"command": "echo never"}))]},
        text_reply("unused")
    ]}));
    let mut agent = start(&nh, &mock, &[("extensions/asks.ts", ASKS_ON_BASH)]);
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "Run it"}));
    agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    let asked = std::time::Instant::now();
    agent.send(json!({"id": "a1", "type": "abort"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let r = agent.response("a1");
    assert_eq!(r["success"], true, "{r}");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(5),
        "abort waited {:?}",
        asked.elapsed()
    );
    let recs = agent.records[from..].to_vec();
    find(&recs, json!({"type": "agent_end"}));
    assert!(
        !recs
            .iter()
            .any(|r| r["type"] == "tool_execution_end" && r["isError"] == false),
        "the gated command did not run: {recs:?}"
    );
}

#[test]
fn without_node_every_ts_unit_fails_naming_what_is_missing() {
    // No Node needed: the configured binary does not exist.
    let mock = no_llm();
    let mut agent = agent_for(&mock)
        .env("PI_RPC_NODE_EXTENSION_HOST", "1")
        .env("PI_RPC_NODE", "/nonexistent/bin/node")
        .agent_file("extensions/gate.ts", "export default function (pi) {}\n")
        .spawn();
    let path = ext_path(&agent, "extensions/gate.ts");
    assert_load_failure(&mut agent, &path, |m| {
        m.starts_with(
            "Failed to load extension: the Node extension host needs Node.js, but \
             `/nonexistent/bin/node` cannot be run (",
        ) && m.ends_with("); install Node.js 22.19 or later, or name it with piRpc.nodeExtensionHost.node or PI_RPC_NODE")
    });
}

#[test]
fn the_setting_enables_the_host_and_a_wrong_package_dir_is_named() {
    let Some(nh) = node_host("the_setting_enables_the_host_and_a_wrong_package_dir_is_named")
    else {
        return;
    };
    let mock = no_llm();
    let mut agent = agent_for(&mock)
        .settings(json!({"piRpc": {"nodeExtensionHost": {
            "node": nh.node.to_string_lossy(), "piPackageDir": "/nonexistent/pi"}}}))
        .agent_file("extensions/gate.ts", "export default function (pi) {}\n")
        .spawn();
    let path = ext_path(&agent, "extensions/gate.ts");
    assert_load_failure(&mut agent, &path, |m| {
        m == "Failed to load extension: the Node extension host needs the pi package \
              (@earendil-works/pi-coding-agent), but piRpc.nodeExtensionHost.piPackageDir names \
              /nonexistent/pi, which has no package.json of that name; install pi (npm install -g \
              @earendil-works/pi-coding-agent), or name its package directory with \
              piRpc.nodeExtensionHost.piPackageDir or PI_PACKAGE_DIR"
    });
    // The same setting with the real package loads and runs the unit.
    let mut agent = agent_for(&mock)
        .settings(json!({"piRpc": {"nodeExtensionHost": {
            "node": nh.node.to_string_lossy(), "piPackageDir": nh.package.to_string_lossy()}}}))
        .agent_file("extensions/gate.ts", PROTECTED_PATHS)
        .spawn();
    let r = exchange(&mut agent, "s", json!({"type": "get_state"}));
    assert_eq!(r.last().map(|r| r["success"].clone()), Some(json!(true)));
}

/// The Node host's pid: the child of pi-rpc that runs the host script.
fn host_pid(agent: &Agent) -> Option<u32> {
    let parent = |p: &str| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid: u32 = name.parse().ok()?;
        let cmd = std::fs::read_to_string(format!("/proc/{name}/cmdline")).ok()?;
        (parent(&name) == Some(agent.pid()) && cmd.contains("pi-ext-host")).then_some(pid)
    })
}

#[test]
fn a_killed_node_host_fails_its_gates_closed_until_a_new_session() {
    let Some(nh) = node_host("a_killed_node_host_fails_its_gates_closed_until_a_new_session")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_k1", "bash", json!({"command": "touch k1.txt"}))]},
        text_reply("Blocked."),
        {"blocks": [tool_call("toolu_k2", "write", json!({"path": ".env", "content": "x"}))]},
        text_reply("Blocked by the gate.")
    ]}));
    let mut agent = start(
        &nh,
        &mock,
        &[
            ("extensions/a-gate.ts", PROTECTED_PATHS),
            ("extensions/b-tools.ts", TOOLS_AND_COMMANDS),
        ],
    );
    let gate = ext_path(&agent, "extensions/a-gate.ts");
    let tools = ext_path(&agent, "extensions/b-tools.ts");
    exchange(&mut agent, "s0", json!({"type": "get_state"}));
    let pid = host_pid(&agent).expect("the Node host runs");
    let from = agent.records.len();
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    // The exit is reported at once, once per unit of the host.
    let exited = "extension process exited (signal SIGKILL)";
    agent.wait_for_timeout(
        json!({"type": "extension_error", "extensionPath": tools, "event": "process"}),
        LONG,
    );
    let errors: Vec<Value> = agent.records[from..]
        .iter()
        .filter(|r| r["type"] == "extension_error")
        .cloned()
        .collect();
    assert_eq!(
        errors,
        [
            json!({"type": "extension_error", "extensionPath": gate, "event": "process", "error": exited}),
            json!({"type": "extension_error", "extensionPath": tools, "event": "process", "error": exited}),
        ],
        "one process error per unit of the host"
    );

    let recs = run_prompt(&mut agent, "p1", "touch");
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_k1"}),
    );
    assert_eq!(
        end,
        blocked_end(
            "toolu_k1",
            "bash",
            &format!("Extension {gate} is not running")
        )
    );
    assert!(!agent.cwd.join("k1.txt").exists());

    // A session replacement starts one new host for both units; the gate works again.
    let r = agent.request("n1", json!({"type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": false}), "{r}");
    assert!(host_pid(&agent).is_some_and(|p| p != pid));
    let recs = run_prompt(&mut agent, "p2", "write .env");
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_k2"}),
    );
    assert_eq!(
        end,
        blocked_end("toolu_k2", "write", "Path \".env\" is protected")
    );
    let gc = exchange(&mut agent, "gc", json!({"type": "get_commands"}));
    assert_eq!(
        gc.last().map(|r| r["data"]["commands"][0]["name"].clone()),
        Some(json!("where"))
    );
}

fn saw(name: &str) -> String {
    format!(
        r#"
export default function (pi: any) {{
  pi.registerFlag("loud-{name}", {{ type: "boolean", default: false, description: "Shout" }});
  pi.on("tool_call", async (event: any, ctx: any) => {{
    ctx.ui.notify(`{name} saw ${{event.input.command}} loud=${{pi.getFlag("loud-{name}")}}`, "info");
  }});
}}
"#
    )
}

#[test]
fn node_units_and_process_extensions_keep_one_load_order_and_get_their_flags() {
    let Some(nh) =
        node_host("node_units_and_process_extensions_keep_one_load_order_and_get_their_flags")
    else {
        return;
    };
    let Some(py) = crate::support::ext::python(
        "node_units_and_process_extensions_keep_one_load_order_and_get_their_flags",
    ) else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_o1", "bash", json!({"command": "true"}))]},
        text_reply("Done.")
    ]}));
    let builder = nh
        .enable(agent_for(&mock))
        .args(["--loud-c"])
        .agent_file("extensions/a.ts", &saw("a"))
        .agent_file("extensions/c.ts", &saw("c"));
    let mut agent = crate::support::ext::python_extension(
        builder,
        &py,
        "b-py",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_call"}]}

        def on_event(event, scope):
            fire(scope, "ui.notify", message="b saw " + event["input"]["command"])
            return None
        "#,
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "run true");
    let notes: Vec<Value> = recs
        .iter()
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .map(|r| r["message"].clone())
        .collect();
    assert_eq!(
        notes,
        [
            json!("a saw true loud=false"),
            json!("b saw true"),
            json!("c saw true loud=true")
        ]
    );
}

const STATE_EVENTS: &str = r#"
export default function (pi: any) {
  pi.on("session_info_changed", async (event: any, ctx: any) => {
    ctx.ui.notify(`name ${pi.getSessionName()} idle=${ctx.isIdle()}`, "info");
  });
  pi.on("thinking_level_select", async (event: any, ctx: any) => {
    ctx.ui.notify(`level ${event.level} ${pi.getThinkingLevel()}`, "info");
  });
  pi.on("model_select", async (event: any, ctx: any) => {
    ctx.ui.notify(`model ${event.model.id} ${ctx.model?.id}`, "info");
  });
}
"#;

#[test]
fn state_events_see_the_refreshed_state_copy_without_deadlock() {
    let Some(nh) = node_host("state_events_see_the_refreshed_state_copy_without_deadlock") else {
        return;
    };
    let mock = no_llm();
    let mut agent = start(&nh, &mock, &[("extensions/state.ts", STATE_EVENTS)]);
    let recs = exchange(
        &mut agent,
        "n",
        json!({"type": "set_session_name", "name": "demo"}),
    );
    let (_, n) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(n["message"], "name demo idle=true");
    let recs = exchange(
        &mut agent,
        "t",
        json!({"type": "set_thinking_level", "level": "high"}),
    );
    let (_, n) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(n["message"], "level high high");
    let recs = exchange(
        &mut agent,
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    let r = recs.last().cloned().unwrap_or_default();
    assert_eq!(r["success"], true, "{r}");
    let notes: Vec<Value> = agent
        .drain(std::time::Duration::from_millis(500))
        .into_iter()
        .chain(recs)
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .map(|r| r["message"].clone())
        .collect();
    assert!(
        notes.contains(&json!("model mock-haiku mock-haiku")),
        "{notes:?}"
    );
}

const PROBE: &str = r#"
export default function (pi: any) {
  pi.registerCommand("probe", {
    description: "Probe the API",
    handler: async (args: string, ctx: any) => {
      const out: any = {
        fg: ctx.ui.theme.fg("accent", "hi"),
        bold: ctx.ui.theme.bold("b"),
        mode: ctx.mode, hasUI: ctx.hasUI, idle: ctx.isIdle(),
        model: ctx.model?.id, provider: ctx.model?.provider,
        active: pi.getActiveTools(),
        commands: pi.getCommands().map((c: any) => c.name),
        entries: ctx.sessionManager.getEntries().map((e: any) => e.type),
        name: pi.getSessionName() ?? null,
        pending: ctx.hasPendingMessages(),
        editor: ctx.ui.getEditorText(),
        custom: (await ctx.ui.custom(() => null)) ?? null,
        expanded: ctx.ui.getToolsExpanded(),
        setTheme: ctx.ui.setTheme("x"),
        args,
      };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// What pi 1.6.0's RPC mode gives the same probe after the same steps (observed with
/// `run_scenario.py` against the reference pi): pi's theme escapes, the session copy, the state
/// copy and the degraded TUI calls.
#[test]
fn pi_s_synchronous_api_reads_what_pi_reads() {
    let Some(nh) = node_host("pi_s_synchronous_api_reads_what_pi_reads") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Hello.")]}));
    let mut agent = start(&nh, &mock, &[("extensions/probe.ts", PROBE)]);
    run_prompt(&mut agent, "p0", "hi");
    exchange(
        &mut agent,
        "n",
        json!({"type": "set_session_name", "name": "sess"}),
    );
    let recs = exchange(
        &mut agent,
        "p1",
        json!({"type": "prompt", "message": "/probe some args"}),
    );
    let (_, n) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    let probe: Value = serde_json::from_str(n["message"].as_str().unwrap_or("null")).unwrap();
    assert_eq!(
        probe,
        json!({"fg": "\u{1b}[38;5;5mhi\u{1b}[39m", "bold": "b", "mode": "rpc", "hasUI": true,
               "idle": true, "model": "mock-sonnet", "provider": "mock",
               "active": ["read", "bash", "edit", "write"],
               "commands": ["probe", "llama", "mcp"],
               "entries": ["model_change", "thinking_level_change", "message", "message",
                           "message", "session_info"],
               "name": "sess", "pending": false, "editor": "", "custom": null,
               "expanded": false,
               "setTheme": {"success": false, "error": "Theme switching not supported in RPC mode"},
               "args": "some args"})
    );
}

const LATE: &str = r#"
export default function (pi: any) {
  pi.registerCommand("arm", {
    description: "Registers the rest",
    handler: async () => {
      pi.registerCommand("later", { description: "Registered by /arm", handler: async () => {} });
      pi.on("tool_call", async (event: any) => ({ block: true, reason: "armed: " + event.toolName }));
    },
  });
  pi.registerCommand("list", {
    description: "Lists the commands pi.getCommands() knows",
    handler: async (_args: string, ctx: any) => {
      ctx.ui.notify(pi.getCommands().map((c: any) => c.name).join(" "), "info");
    },
  });
}
"#;

#[test]
fn registrations_made_after_loading_reach_pi_rpc() {
    let Some(nh) = node_host("registrations_made_after_loading_reach_pi_rpc") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_l1", "bash", json!({"command": "true"}))]},
        text_reply("Blocked.")
    ]}));
    let mut agent = start(&nh, &mock, &[("extensions/late.ts", LATE)]);
    let recs = exchange(
        &mut agent,
        "a",
        json!({"type": "prompt", "message": "/arm"}),
    );
    assert_eq!(recs.last(), Some(&handled("a")));
    let gc = exchange(&mut agent, "gc", json!({"type": "get_commands"}));
    let names: Vec<Value> = gc
        .last()
        .and_then(|r| r["data"]["commands"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(names[..3], [json!("arm"), json!("list"), json!("later")]);
    let recs = exchange(
        &mut agent,
        "l",
        json!({"type": "prompt", "message": "/list"}),
    );
    let (_, n) = find(
        &recs,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(n["message"], "arm list later llama mcp");
    let recs = run_prompt(&mut agent, "p1", "run");
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_l1"}),
    );
    assert_eq!(end, blocked_end("toolu_l1", "bash", "armed: bash"));
}

const WAITS_FOR_ABORT: &str = r#"
export default function (pi: any) {
  pi.registerTool({
    name: "wait_forever",
    label: "Wait",
    description: "Waits until aborted",
    parameters: { type: "object", properties: {} },
    async execute(_id: string, _params: any, signal: any) {
      await new Promise((resolve) => signal?.addEventListener("abort", resolve, { once: true }));
      return { content: [{ type: "text", text: "stopped: " + String(signal?.aborted) }], details: {} };
    },
  });
}
"#;

#[test]
fn abort_reaches_a_running_ts_tool_through_its_signal() {
    let Some(nh) = node_host("abort_reaches_a_running_ts_tool_through_its_signal") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_w", "wait_forever", json!({}))]},
        text_reply("unused")
    ]}));
    let mut agent = start(&nh, &mock, &[("extensions/wait.ts", WAITS_FOR_ABORT)]);
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "wait"}));
    agent.wait_for_timeout(
        json!({"type": "tool_execution_start", "toolCallId": "toolu_w"}),
        LONG,
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    let asked = std::time::Instant::now();
    agent.send(json!({"id": "a1", "type": "abort"}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(3),
        "abort took {:?}",
        asked.elapsed()
    );
    assert_eq!(agent.response("a1")["success"], true);
    let recs = agent.records[from..].to_vec();
    find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_w"}),
    );
    find(&recs, json!({"type": "agent_end"}));
}

#[test]
fn a_too_old_node_fails_every_ts_unit_with_its_version() {
    // A stand-in `node` that reports an old version: no Node needed.
    let dir = crate::support::TempDir::new("old-node");
    dir.write("node", "#!/bin/sh\necho v22.18.0\n");
    let fake = dir.path().join("node");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mock = no_llm();
    let fake_text = fake.to_string_lossy().into_owned();
    let mut agent = agent_for(&mock)
        .settings(json!({"piRpc": {"nodeExtensionHost": {"node": fake_text}}}))
        .agent_file("extensions/a.ts", "export default function (pi) {}\n")
        .agent_file("extensions/b.js", "export default function (pi) {}\n")
        .spawn();
    let path = ext_path(&agent, "extensions/a.ts");
    assert_load_failure(&mut agent, &path, |m| {
        m == format!(
            "Failed to load extension: the Node extension host needs Node.js 22.19.0 or later, \
             but `{fake_text}` is v22.18.0; install Node.js 22.19 or later, or name it with \
             piRpc.nodeExtensionHost.node or PI_RPC_NODE"
        )
    });
}

#[test]
fn ts_syntax_errors_and_missing_factories_are_pi_s_load_failures() {
    let Some(nh) = node_host("ts_syntax_errors_and_missing_factories_are_pi_s_load_failures")
    else {
        return;
    };
    let mock = no_llm();
    let mut agent = start(
        &nh,
        &mock,
        &[(
            "extensions/bad.ts",
            "export default function (pi: any) { let x = ; }\n",
        )],
    );
    let path = ext_path(&agent, "extensions/bad.ts");
    // pi's text (observed with pi 1.6.0 for this file): jiti's message, whose second line
    // names the place.
    assert_load_failure(&mut agent, &path, |m| {
        m == "Failed to load extension: ParseError: Unexpected token  "
    });
    assert!(
        agent.stderr().contains(&format!("\n {path}:1:44\n")),
        "{}",
        agent.stderr()
    );
    let mut agent = start(
        &nh,
        &mock,
        &[
            ("extensions/a-fine.ts", PROTECTED_PATHS),
            ("extensions/b-none.ts", "export const x = 1;\n"),
        ],
    );
    let path = ext_path(&agent, "extensions/b-none.ts");
    assert_load_failure(&mut agent, &path, |m| {
        m == format!("Extension does not export a valid factory function: {path}")
    });
}

const AT_START: &str = r#"
export default function (pi: any) {
  pi.on("session_start", async (event: any, ctx: any) => {
    ctx.ui.notify(`start ${event.reason} ${ctx.model?.id} ${pi.getActiveTools().length} ${ctx.sessionManager.getEntries().length}`, "info");
  });
}
"#;

#[test]
fn session_start_handlers_read_the_state_copy() {
    let Some(nh) = node_host("session_start_handlers_read_the_state_copy") else {
        return;
    };
    let mock = no_llm();
    let mut agent = start(&nh, &mock, &[("extensions/start.ts", AT_START)]);
    let n = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "notify"}),
        LONG,
    );
    assert_eq!(n["message"], "start startup mock-sonnet 4 2");
}
