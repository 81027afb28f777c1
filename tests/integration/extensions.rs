//! Extensions through the real binary (`spec/extensions.md`): process extensions speaking
//! protocol 1 (Part B), checked against pi 1.6.0's wire behaviour (Part A §A4–§A8) and the
//! deliberate deviations of §C1. The extensions are small Python scripts (`support::ext`); the
//! tests that need one skip without `python3` unless `PI_RPC_REQUIRE` asks for it.
//!
//! Covered: load failures (§A2, §B2, §B3), the `[ext <path>] ` stderr copy, `session_start` UI
//! and dialogs at startup, awaited agent events, the `tool_call` gate, `tool_result` and
//! `message_end` results, abort with a pending dialog, commands (`get_commands`, built-ins,
//! `name:N`), extension tools, session replacement, stdin EOF, process death (fail closed) and
//! protocol errors.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::ext::{
    self, assert_load_failure, cwd_python_extension, ext_error, ext_records, handled, python,
    python_extension, ui, ui_id, unit_path, without_id,
};
use crate::support::mock_llm::MockLlm;
use crate::support::process::eventually;
use crate::support::records::{find, find_all, norm};
use crate::support::run::{agent_for, request_messages, run_prompt, text_reply, tool_call, LONG};
use crate::support::Agent;

// ------------------------------------------------------------------------------------ helpers

/// Sends `cmd` with `id` and returns the records from the send up to and including its
/// response.
pub(crate) fn exchange(agent: &mut Agent, id: &str, cmd: Value) -> Vec<Value> {
    let start = agent.records.len();
    agent.request(id, cmd);
    let (i, _) = find(
        &agent.records[start..],
        json!({"type": "response", "id": id}),
    );
    agent.records[start..=start + i].to_vec()
}

/// `exchange` of a `prompt`.
pub(crate) fn prompt(agent: &mut Agent, id: &str, message: &str) -> Vec<Value> {
    exchange(agent, id, json!({"type": "prompt", "message": message}))
}

/// A compact view of records for order checks: UI requests without their ids, extension
/// errors as they are, responses as `"response:<id>"`, tool events as `"<type>:<toolCallId>"`,
/// everything else as its type.
pub(crate) fn view(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .map(|r| {
            let t = r["type"].as_str().unwrap_or("?");
            match t {
                "extension_ui_request" => without_id(r),
                "extension_error" => r.clone(),
                "response" => json!(format!("response:{}", r["id"].as_str().unwrap_or("?"))),
                "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
                    json!(format!("{t}:{}", r["toolCallId"].as_str().unwrap_or("?")))
                }
                _ => json!(t),
            }
        })
        .collect()
}

/// The index of the first `item` in `v`.
pub(crate) fn pos(v: &[Value], item: &Value) -> usize {
    v.iter()
        .position(|x| x == item)
        .unwrap_or_else(|| panic!("{item} not in {v:#?}"))
}

/// Asserts that `window` occurs in `v` as consecutive items.
pub(crate) fn assert_window(v: &[Value], window: &[Value]) {
    assert!(
        v.windows(window.len()).any(|w| w == window),
        "{window:#?}\nnot consecutive in\n{v:#?}"
    );
}

/// The blocked `tool_execution_end` pi writes (§A7.5: no `durationMs`).
pub(crate) fn blocked_end(id: &str, tool: &str, reason: &str) -> Value {
    json!({"type": "tool_execution_end", "toolCallId": id, "toolName": tool,
           "result": {"content": [{"type": "text", "text": reason}], "details": {}},
           "isError": true})
}

/// The extension gate of the `ext_permission_gate` scenario (§C2): `rm -r`/`rm -rf` asks a
/// confirm, `sudo` a select (both with a 1500 ms timeout, default = block), and `echo done…` is
/// rewritten in place.
const PERMISSION_GATE: &str = r#"
    import re

    SUDO = re.compile(r"\bsudo\b")
    RM = re.compile(r"\brm\s+-rf?\b")

    def initialize(msg):
        return {"subscriptions": [{"event": "tool_call"}]}

    def on_event(event, scope):
        if event["type"] != "tool_call" or event["toolName"] != "bash":
            return None
        command = str(event["input"].get("command"))
        if command.startswith("echo done"):
            return Reply(None, {"input": dict(event["input"], command=command + " checked")})
        if SUDO.search(command):
            choice = call(scope, "ui.select", title="Allow sudo?", options=["Allow once", "Block"], timeout=1500)
            if choice != "Allow once":
                return {"block": True, "reason": "Blocked by user"}
            return None
        if RM.search(command):
            ok = call(scope, "ui.confirm", title="Dangerous command", message=command, timeout=1500)
            if not ok:
                return {"block": True, "reason": "Blocked by user"}
        return None
"#;

/// The `/todo` extension of the `ext_todo_command` scenario, plus `/echo` (shows its args).
const TODO: &str = r#"
    state = {"items": []}

    def initialize(msg):
        state["items"] = []
        return {"commands": [
            {"name": "todo", "description": "Manage todos: /todo add <text> | list | pick | ask"},
            {"name": "todo-count"},
            {"name": "echo"},
        ]}

    def on_command(name, args, scope):
        items = state["items"]
        if name == "echo":
            fire(scope, "ui.notify", message="args=[%s]" % args)
            return None
        if name == "todo-count":
            fire(scope, "ui.notify", message="%d todos" % len(items))
            return None
        verb, _, rest = args.partition(" ")
        if verb == "add":
            text = rest
            if not text:
                text = call(scope, "ui.input", title="Todo text?", placeholder="e.g. buy milk") or ""
            if not text:
                fire(scope, "ui.notify", message="nothing added", type="warning")
                return None
            items.append(text)
            fire(scope, "pi.appendEntry", customType="todo", data={"items": list(items)})
            fire(scope, "ui.notify", message="added (%d)" % len(items))
        elif verb == "list":
            fire(scope, "ui.setWidget", key="todo", content=list(items) if items else ["(empty)"])
        elif verb == "pick":
            choice = call(scope, "ui.select", title="Pick a todo", options=list(items), timeout=10000)
            fire(scope, "ui.notify", message="nothing picked" if choice is None else "picked %s" % choice)
        elif verb == "ask":
            fire(scope, "pi.sendUserMessage", content="Plan these todos: %s" % "; ".join(items))
        else:
            raise RuntimeError("unknown verb: %s" % verb)
        return None
"#;

// ------------------------------------------------------------------------------ load failures

#[test]
fn an_invalid_manifest_fails_the_start() {
    for content in [
        "{\"command\": [",
        r#"{"protocol": 1}"#,
        r#"{"command": [], "protocol": 1}"#,
        r#"{"command": ["/bin/true"]}"#,
        "[1, 2]",
    ] {
        let mut a = Agent::builder()
            .agent_file("extensions/bad/index.ext.json", content)
            .spawn();
        let path = unit_path(&a, "bad");
        assert_load_failure(&mut a, &path, |m| {
            m.starts_with("Failed to load extension: invalid manifest: ")
                && m.len() > "Failed to load extension: invalid manifest: ".len()
        });
    }
}

#[test]
fn an_unsupported_protocol_fails_the_start() {
    let mut a = Agent::builder()
        .agent_file(
            "extensions/future/index.ext.json",
            r#"{"command": ["/bin/true"], "protocol": 2}"#,
        )
        .spawn();
    let path = unit_path(&a, "future");
    assert_load_failure(&mut a, &path, |m| {
        m.ends_with("unsupported extension protocol 2")
    });
}

#[test]
fn a_command_that_cannot_start_fails_the_start() {
    let mut a = Agent::builder()
        .agent_file(
            "extensions/ghost/index.ext.json",
            r#"{"command": ["/nonexistent-pi-rpc-dir/no-such-extension", "--x"], "protocol": 1}"#,
        )
        .spawn();
    let path = unit_path(&a, "ghost");
    let prefix =
        "Failed to load extension: cannot start /nonexistent-pi-rpc-dir/no-such-extension: ";
    assert_load_failure(&mut a, &path, |m| {
        m.starts_with(prefix) && m.len() > prefix.len()
    });
}

#[test]
fn a_process_that_exits_before_initialize_fails_the_start() {
    let mut a = Agent::builder()
        .agent_file(
            "extensions/quitter/index.ext.json",
            r#"{"command": ["sh", "-c", "exit 3"], "protocol": 1}"#,
        )
        .spawn();
    let path = unit_path(&a, "quitter");
    assert_load_failure(&mut a, &path, |m| {
        m == "Failed to load extension: extension process exited (code 3) before initialize"
    });
}

#[test]
fn a_process_that_never_answers_initialize_fails_after_the_startup_timeout() {
    let started = Instant::now();
    let mut a = Agent::builder()
        .settings(json!({"piRpc": {"extensionStartupTimeoutMs": 300}}))
        .agent_file(
            "extensions/mute/index.ext.json",
            r#"{"command": ["sleep", "30"], "protocol": 1}"#,
        )
        .spawn();
    let path = unit_path(&a, "mute");
    assert_load_failure(&mut a, &path, |m| {
        m == "Failed to load extension: no initialize result within 300 ms"
    });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_unit_answering_error_fails_the_start_with_its_text() {
    let Some(py) = python("a_unit_answering_error_fails_the_start_with_its_text") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "broken",
        r#"
        def initialize(msg):
            return {"error": "factory failed"}
        "#,
    )
    .spawn();
    let path = unit_path(&a, "broken");
    assert_load_failure(&mut a, &path, |m| m == "factory failed");
}

#[test]
fn a_malformed_initialize_answer_fails_the_start() {
    let Some(py) = python("a_malformed_initialize_answer_fails_the_start") else {
        return;
    };
    let answer = "import sys, json\n\
        m = json.loads(sys.stdin.readline())\n\
        print(json.dumps({'type': 'result', 'id': m['id'], 'ok': True, 'value': {'protocol': 1, 'units': 'nope'}}), flush=True)\n\
        sys.stdin.read()\n";
    let mut a = Agent::builder()
        .agent_file(
            "extensions/odd/index.ext.json",
            &json!({"command": [py.to_string_lossy(), "-c", answer], "protocol": 1}).to_string(),
        )
        .spawn();
    let path = unit_path(&a, "odd");
    assert_load_failure(&mut a, &path, |m| !m.is_empty());
}

#[test]
fn a_typescript_extension_without_the_node_host_fails_the_start() {
    let ts_error = "Failed to load extension: TypeScript/JavaScript extensions need the Node \
                    extension host (set piRpc.nodeExtensionHost in settings.json or \
                    PI_RPC_NODE_EXTENSION_HOST=1)";
    // Named with -e.
    let mut a = Agent::builder()
        .args(["-e", "gate.ts"])
        .cwd_file("gate.ts", "export default function (pi) {}\n")
        .spawn();
    let path = a.cwd.join("gate.ts").to_string_lossy().into_owned();
    assert_load_failure(&mut a, &path, |m| m == ts_error);
    // Found in <agentDir>/extensions/.
    let mut a = Agent::builder()
        .agent_file("extensions/gate.js", "export default function (pi) {}\n")
        .spawn();
    let path = a
        .agent_dir
        .join("extensions/gate.js")
        .to_string_lossy()
        .into_owned();
    assert_load_failure(&mut a, &path, |m| m == ts_error);
}

#[test]
fn no_extensions_skips_discovered_units_and_the_builtins() {
    for flag in ["--no-extensions", "-ne"] {
        let mut a = Agent::builder()
            .args([flag])
            .agent_file("extensions/broken/index.ext.json", "{")
            .agent_file("extensions/gate.ts", "export default function (pi) {}\n")
            .spawn();
        let r = a.request("st", json!({"type": "get_state"}));
        assert_eq!(r["success"], true, "{r}");
        // -ne also drops the built-in llama and mcp commands (§B2).
        let r = a.request("gc", json!({"type": "get_commands"}));
        assert_eq!(r["data"], json!({"commands": []}), "{flag}");
    }
}

#[test]
fn no_extensions_keeps_dash_e_units() {
    let Some(py) = python("no_extensions_keeps_dash_e_units") else {
        return;
    };
    let builder = Agent::builder()
        .args(["--no-extensions", "-e", "keep.ext.json"])
        .agent_file("extensions/broken/index.ext.json", "{");
    let mut a = cwd_python_extension(
        builder,
        &py,
        "keep",
        r#"
        def initialize(msg):
            return {"commands": [{"name": "keep"}]}
        "#,
    )
    .spawn();
    let r = a.request("gc", json!({"type": "get_commands"}));
    let path = a.cwd.join("keep.ext.json").to_string_lossy().into_owned();
    assert_eq!(
        r["data"],
        json!({"commands": [{"name": "keep", "source": "extension",
            "sourceInfo": {"path": path, "source": "cli", "scope": "temporary", "origin": "top-level"}}]})
    );
}

#[test]
fn index_ext_json_shadows_index_ts_in_an_extension_directory() {
    let Some(py) = python("index_ext_json_shadows_index_ts_in_an_extension_directory") else {
        return;
    };
    let builder = Agent::builder().agent_file(
        "extensions/both/index.ts",
        "export default function (pi) {}\n",
    );
    let mut a = python_extension(
        builder,
        &py,
        "both",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "session_start"}]}

        def on_event(event, scope):
            fire(scope, "ui.notify", message="native " + event["reason"])
        "#,
    )
    .spawn();
    let recs = exchange(&mut a, "st", json!({"type": "get_state"}));
    assert_eq!(
        view(&recs),
        [
            json!({"type": "extension_ui_request", "method": "notify", "message": "native startup"}),
            json!("response:st")
        ]
    );
}

// ------------------------------------------------------------------------------ stderr, startup

#[test]
fn extension_stderr_is_prefixed_on_pi_rpc_stderr_and_never_reaches_stdout() {
    let Some(py) = python("extension_stderr_is_prefixed_on_pi_rpc_stderr_and_never_reaches_stdout")
    else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "chatty",
        r#"
        def initialize(msg):
            log("starting up")
            return {"subscriptions": [{"event": "session_start"}]}

        def on_event(event, scope):
            log("session_start " + event["reason"])
            log("two\nlines")
            fire(scope, "ui.notify", message="hi")
        "#,
    )
    .spawn();
    let path = unit_path(&a, "chatty");
    a.request("st", json!({"type": "get_state"}));
    a.close_stdin();
    let (code, stderr) = ext::exit_and_stderr(&mut a, LONG);
    assert_eq!(code, Some(0), "{stderr}");
    for line in ["starting up", "session_start startup", "two", "lines"] {
        let expected = format!("[ext {path}] {line}");
        assert!(
            stderr.lines().any(|l| l == expected),
            "no line {expected:?} in stderr:\n{stderr}"
        );
    }
    assert_eq!(
        view(&a.records),
        [
            json!({"type": "extension_ui_request", "method": "notify", "message": "hi"}),
            json!("response:st")
        ]
    );
}

#[test]
fn session_start_ui_records_are_the_first_stdout_records() {
    let Some(py) = python("session_start_ui_records_are_the_first_stdout_records") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "status",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "session_start"}]}

        def on_event(event, scope):
            fire(scope, "ui.setWidget", key="demo", content=["--- demo ---", "reason=" + event["reason"]])
            fire(scope, "ui.setWidget", key="below", placement="belowEditor")
            fire(scope, "ui.setStatus", key="demo", text="ready")
            fire(scope, "ui.setStatus", key="gone")
            fire(scope, "ui.setTitle", title="pi demo")
            fire(scope, "ui.notify", message="plain")
            fire(scope, "ui.notify", message="careful", type="warning")
            fire(scope, "ui.setEditorText", text="draft")
            fire(scope, "ui.pasteToEditor", text="pasted")
        "#,
    )
    .spawn();
    // Sent at once: answered only after startup (§B13), so after the session_start UI.
    a.send(json!({"id": "st", "type": "get_state"}));
    a.response("st");
    let r = |method: &str, fields: Value| ui(method, fields);
    assert_eq!(
        view(&a.records),
        [
            r(
                "setWidget",
                json!({"widgetKey": "demo", "widgetLines": ["--- demo ---", "reason=startup"]})
            ),
            r(
                "setWidget",
                json!({"widgetKey": "below", "widgetPlacement": "belowEditor"})
            ),
            r(
                "setStatus",
                json!({"statusKey": "demo", "statusText": "ready"})
            ),
            r("setStatus", json!({"statusKey": "gone"})),
            r("setTitle", json!({"title": "pi demo"})),
            r("notify", json!({"message": "plain"})),
            r(
                "notify",
                json!({"message": "careful", "notifyType": "warning"})
            ),
            r("set_editor_text", json!({"text": "draft"})),
            r("set_editor_text", json!({"text": "pasted"})),
            json!("response:st"),
        ]
    );
    // Key order as pi writes it: type, id, method, then the fields (§A6).
    let raw = String::from_utf8(a.raw_lines[0].clone()).unwrap();
    let id = ui_id(&a.records[0]);
    assert_eq!(
        raw,
        format!(
            r#"{{"type":"extension_ui_request","id":"{id}","method":"setWidget","widgetKey":"demo","widgetLines":["--- demo ---","reason=startup"]}}"#
        )
    );
    let mut ids: Vec<String> = a.records[..9].iter().map(ui_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 9, "UI request ids are fresh");
}

#[test]
fn a_session_start_dialog_is_answered_by_the_client() {
    // Deviation C1.1: stdin is read before session_start, so the dialog does not deadlock.
    let Some(py) = python("a_session_start_dialog_is_answered_by_the_client") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "trust",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "session_start"}]}

        def on_event(event, scope):
            ok = call(scope, "ui.confirm", title="Trust this folder?", message="reason=" + event["reason"])
            fire(scope, "ui.notify", message="trusted=%s" % ok)
        "#,
    )
    .spawn();
    a.send(json!({"id": "st", "type": "get_state"}));
    let confirm = a.wait_for(json!({"type": "extension_ui_request", "method": "confirm"}));
    let id = ui_id(&confirm);
    assert_eq!(
        confirm,
        json!({"type": "extension_ui_request", "id": id, "method": "confirm",
               "title": "Trust this folder?", "message": "reason=startup"})
    );
    // The get_state sent before is held until startup completes.
    assert_eq!(a.drain(Duration::from_millis(300)), Vec::<Value>::new());
    a.send(json!({"type": "extension_ui_response", "id": id, "confirmed": true}));
    a.response("st");
    assert_eq!(
        view(&a.records),
        [
            without_id(&confirm),
            ui("notify", json!({"message": "trusted=True"})),
            json!("response:st")
        ]
    );
}

// ------------------------------------------------------------------------------ agent events

#[test]
fn awaited_agent_event_handlers_write_their_ui_before_the_event() {
    let Some(py) = python("awaited_agent_event_handlers_write_their_ui_before_the_event") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_1", "bash", json!({"command": "echo hi"}))]},
        text_reply("Done.")
    ]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "status",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": e} for e in ["turn_start", "tool_execution_end", "agent_settled"]]}

        def on_event(event, scope):
            kind = event["type"]
            if kind == "turn_start":
                fire(scope, "ui.setStatus", key="turn", text="turn index %d" % event["turnIndex"])
            elif kind == "tool_execution_end":
                fire(scope, "ui.notify", message="%s finished isError=%s" % (event["toolName"], event["isError"]), type="info")
            elif kind == "agent_settled":
                fire(scope, "ui.setStatus", key="turn")
                fire(scope, "ui.setEditorText", text="aborted=%s" % event["aborted"])
        "#,
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "Run one command");
    let v = view(&recs);
    assert_window(
        &v,
        &[
            json!("agent_start"),
            ui(
                "setStatus",
                json!({"statusKey": "turn", "statusText": "turn index 0"}),
            ),
            json!("turn_start"),
        ],
    );
    assert_window(
        &v,
        &[
            json!("turn_end"),
            ui(
                "setStatus",
                json!({"statusKey": "turn", "statusText": "turn index 1"}),
            ),
            json!("turn_start"),
        ],
    );
    assert_window(
        &v,
        &[
            ui(
                "notify",
                json!({"message": "bash finished isError=False", "notifyType": "info"}),
            ),
            json!("tool_execution_end:toolu_1"),
        ],
    );
    let n = v.len();
    assert_eq!(
        v[n - 4..],
        [
            json!("agent_end"),
            ui("setStatus", json!({"statusKey": "turn"})),
            ui("set_editor_text", json!({"text": "aborted=False"})),
            json!("agent_settled"),
        ]
    );
    assert_eq!(ext_records(&recs).len(), 5, "{recs:#?}");
}

#[test]
fn a_throwing_turn_start_handler_reports_extension_error_before_turn_start() {
    let Some(py) =
        python("a_throwing_turn_start_handler_reports_extension_error_before_turn_start")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Hi.")]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "thrower",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "turn_start"}]}

        def on_event(event, scope):
            raise RuntimeError("boom at turn %d" % event["turnIndex"])
        "#,
    )
    .spawn();
    let path = unit_path(&agent, "thrower");
    let recs = run_prompt(&mut agent, "p1", "hi");
    let v = view(&recs);
    assert_window(
        &v,
        &[
            json!("agent_start"),
            ext_error(&path, "turn_start", "boom at turn 0"),
            json!("turn_start"),
        ],
    );
    assert_eq!(ext_records(&recs).len(), 1);
    // The run goes on as usual.
    assert_eq!(
        recs.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
}

// ------------------------------------------------------------------------------ tool_call gate

#[test]
fn gate_confirm_answered_runs_select_cancelled_and_confirm_timed_out_block() {
    let Some(py) =
        python("gate_confirm_answered_runs_select_cancelled_and_confirm_timed_out_block")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("toolu_pg_01", "bash", json!({"command": "rm -rf build && echo removed"})),
            tool_call("toolu_pg_02", "bash", json!({"command": "sudo whoami"})),
            tool_call("toolu_pg_03", "bash", json!({"command": "rm -r dist"})),
        ]},
        text_reply("Cleanup finished.")
    ]}));
    let builder = agent_for(&mock)
        .cwd_file("build/keep.txt", "x")
        .cwd_file("dist/keep.txt", "x");
    let mut agent = python_extension(builder, &py, "permission-gate", PERMISSION_GATE).spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "Clean up the build"}));

    let c1 = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    let c1_id = ui_id(&c1);
    assert_eq!(
        c1,
        json!({"type": "extension_ui_request", "id": c1_id, "method": "confirm",
               "title": "Dangerous command", "message": "rm -rf build && echo removed", "timeout": 1500})
    );
    agent.send(json!({"type": "extension_ui_response", "id": c1_id, "confirmed": true}));

    let s1 = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "select"}),
        LONG,
    );
    let s1_id = ui_id(&s1);
    assert_eq!(
        s1,
        json!({"type": "extension_ui_request", "id": s1_id, "method": "select",
               "title": "Allow sudo?", "options": ["Allow once", "Block"], "timeout": 1500})
    );
    agent.send(json!({"type": "extension_ui_response", "id": s1_id, "cancelled": true}));

    let c2 = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    let asked = Instant::now();
    let c2_id = ui_id(&c2);
    assert_eq!(c2["message"], "rm -r dist");
    let end3 = agent.wait_for_timeout(
        json!({"type": "tool_execution_end", "toolCallId": "toolu_pg_03"}),
        LONG,
    );
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(1200) && waited < Duration::from_secs(10),
        "the unanswered confirm resolved after {waited:?}"
    );
    assert_eq!(end3, blocked_end("toolu_pg_03", "bash", "Blocked by user"));
    // A late answer is ignored: nothing is written for it.
    let late_from = agent.records.len();
    agent.send(json!({"type": "extension_ui_response", "id": c2_id, "confirmed": true}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let recs = agent.records[from..].to_vec();
    assert!(agent.records[late_from..]
        .iter()
        .all(|r| r["type"] != "extension_error" && r["type"] != "response"));

    // Sequential preflight: each call's start, its dialog and a blocked call's end come before
    // the next call starts; the allowed call runs after all preflights.
    let order: Vec<Value> = view(&recs)
        .into_iter()
        .filter(|x| {
            x.is_object()
                || x.as_str().is_some_and(|s| {
                    s.starts_with("tool_execution_start") || s.starts_with("tool_execution_end")
                })
        })
        .collect();
    assert_eq!(
        order,
        [
            json!("tool_execution_start:toolu_pg_01"),
            without_id(&c1),
            json!("tool_execution_start:toolu_pg_02"),
            without_id(&s1),
            json!("tool_execution_end:toolu_pg_02"),
            json!("tool_execution_start:toolu_pg_03"),
            without_id(&c2),
            json!("tool_execution_end:toolu_pg_03"),
            json!("tool_execution_end:toolu_pg_01"),
        ]
    );
    let (_, end2) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_pg_02"}),
    );
    assert_eq!(end2, blocked_end("toolu_pg_02", "bash", "Blocked by user"));
    let (_, end1) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_pg_01"}),
    );
    assert_eq!(end1["isError"], false, "{end1}");
    assert_eq!(
        end1["result"]["content"],
        json!([{"type": "text", "text": "removed\n"}])
    );
    let (_, tr2) = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "toolResult", "toolCallId": "toolu_pg_02"}}),
    );
    assert_eq!(
        norm(&tr2["message"]),
        json!({"role": "toolResult", "toolCallId": "toolu_pg_02", "toolName": "bash",
               "content": [{"type": "text", "text": "Blocked by user"}], "details": {},
               "isError": true, "timestamp": 0})
    );
    assert!(!agent.cwd.join("build").exists(), "the confirmed rm ran");
    assert!(
        agent.cwd.join("dist/keep.txt").exists(),
        "the timed-out rm was blocked"
    );
    assert_eq!(
        ext_records(&recs).len(),
        3,
        "no other UI and no extension_error"
    );
}

#[test]
fn gate_in_place_input_edit_changes_what_runs_but_not_the_args() {
    let Some(py) = python("gate_in_place_input_edit_changes_what_runs_but_not_the_args") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_pg_04", "bash", json!({"command": "echo done"}))]},
        text_reply("Finished.")
    ]}));
    let mut agent =
        python_extension(agent_for(&mock), &py, "permission-gate", PERMISSION_GATE).spawn();
    let recs = run_prompt(&mut agent, "p1", "Say done");
    let (_, start) = find(&recs, json!({"type": "tool_execution_start"}));
    assert_eq!(
        start,
        json!({"type": "tool_execution_start", "toolCallId": "toolu_pg_04", "toolName": "bash",
               "args": {"command": "echo done"}})
    );
    for u in find_all(&recs, json!({"type": "tool_execution_update"})) {
        assert_eq!(u["args"], json!({"command": "echo done"}), "{u}");
    }
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": "done checked\n"}])
    );
    // The stored tool call keeps the model's arguments.
    let msgs = request_messages(&mock, 1);
    assert_eq!(
        msgs[1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_pg_04", "name": "bash", "input": {"command": "echo done"}})
    );
}

#[test]
fn a_throwing_tool_call_handler_blocks_with_its_message_and_no_extension_error() {
    let Some(py) =
        python("a_throwing_tool_call_handler_blocks_with_its_message_and_no_extension_error")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_t", "bash", json!({"command": "touch ran.txt"}))]},
        text_reply("Blocked, then.")
    ]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "thrower",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_call"}]}

        def on_event(event, scope):
            raise RuntimeError("gate exploded: " + event["input"]["command"])
        "#,
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "touch it");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        end,
        blocked_end("toolu_t", "bash", "gate exploded: touch ran.txt")
    );
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
    assert!(!agent.cwd.join("ran.txt").exists());
}

#[test]
fn the_first_block_wins_across_two_extensions() {
    let Some(py) = python("the_first_block_wins_across_two_extensions") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("toolu_1", "bash", json!({"command": "rm x"})),
            tool_call("toolu_2", "bash", json!({"command": "echo ok"})),
        ]},
        text_reply("Both blocked.")
    ]}));
    let builder = python_extension(
        agent_for(&mock),
        &py,
        "a-first",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_call"}]}

        def on_event(event, scope):
            if "rm" in event["input"]["command"]:
                return {"block": True, "reason": "blocked by a"}
            return None
        "#,
    );
    let mut agent = python_extension(
        builder,
        &py,
        "b-second",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_call"}]}

        def on_event(event, scope):
            fire(scope, "ui.notify", message="b saw " + event["input"]["command"])
            return {"block": True, "reason": "blocked by b"}
        "#,
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "two calls");
    let v = view(&recs);
    let (_, end1) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_1"}),
    );
    assert_eq!(end1, blocked_end("toolu_1", "bash", "blocked by a"));
    let (_, end2) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_2"}),
    );
    assert_eq!(end2, blocked_end("toolu_2", "bash", "blocked by b"));
    // b never saw the call a blocked.
    assert_eq!(
        ext_records(&recs),
        [ui("notify", json!({"message": "b saw echo ok"}))]
    );
    assert_window(
        &v,
        &[
            json!("tool_execution_start:toolu_2"),
            ui("notify", json!({"message": "b saw echo ok"})),
            json!("tool_execution_end:toolu_2"),
        ],
    );
}

// ------------------------------------------------------------------------ tool_result, message_end

#[test]
fn a_tool_result_patch_replaces_the_content_and_drops_structured_content() {
    let Some(py) = python("a_tool_result_patch_replaces_the_content_and_drops_structured_content")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_1", "bash", json!({"command": "echo secret"}))]},
        text_reply("Patched.")
    ]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "redactor",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_result"}]}

        def on_event(event, scope):
            fire(scope, "ui.notify", message="structuredContent=%s isError=%s" % ("structuredContent" in event, event["isError"]))
            return {"content": [{"type": "text", "text": "patched: " + event["content"][0]["text"]}]}
        "#,
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "echo it");
    let v = view(&recs);
    assert_window(
        &v,
        &[
            ui(
                "notify",
                json!({"message": "structuredContent=True isError=False"}),
            ),
            json!("tool_execution_end:toolu_1"),
        ],
    );
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    let patched = json!([{"type": "text", "text": "patched: secret\n"}]);
    assert_eq!(end["result"]["content"], patched, "{end}");
    assert!(end["result"].get("structuredContent").is_none(), "{end}");
    assert_eq!(end["isError"], false);
    let (_, tr) = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "toolResult"}}),
    );
    assert_eq!(tr["message"]["content"], patched);
    let msgs = request_messages(&mock, 1);
    assert_eq!(
        msgs[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "patched: secret\n", "is_error": false})
    );
}

#[test]
fn a_message_end_handler_replaces_a_message_of_the_same_role_only() {
    let Some(py) = python("a_message_end_handler_replaces_a_message_of_the_same_role_only") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("the secret is 42")]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "redactor",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "message_end"}]}

        def on_event(event, scope):
            m = event["message"]
            if m["role"] == "assistant":
                return {"message": dict(m, content=[{"type": "text", "text": "the secret is [redacted]"}])}
            if m["role"] == "user":
                return {"message": {"role": "assistant", "content": [{"type": "text", "text": "wrong role"}]}}
            return None
        "#,
    )
    .spawn();
    let path = unit_path(&agent, "redactor");
    let recs = run_prompt(&mut agent, "p1", "tell me");
    let v = view(&recs);
    // Another role: extension_error, replacement skipped; written before the message_end.
    let err = ext_error(
        &path,
        "message_end",
        "message_end handlers must return a message with the same role",
    );
    let (i_user_end, user_end) = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "user"}}),
    );
    assert_eq!(
        user_end["message"]["content"],
        json!([{"type": "text", "text": "tell me"}])
    );
    assert_eq!(v[i_user_end - 1], err);
    // Same role: the wire message_end and the stored message are replaced, the updates are not.
    let redacted = json!([{"type": "text", "text": "the secret is [redacted]"}]);
    let (_, end) = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "assistant"}}),
    );
    assert_eq!(end["message"]["content"], redacted);
    assert_eq!(end["message"]["stopReason"], "stop");
    let (_, text_end) = find(
        &recs,
        json!({"type": "message_update", "assistantMessageEvent": {"type": "text_end"}}),
    );
    assert_eq!(
        text_end["assistantMessageEvent"]["content"],
        "the secret is 42"
    );
    let r = agent.request("m", json!({"type": "get_messages"}));
    let msgs = r["data"]["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"], redacted);
    assert_eq!(ext_records(&recs), [err]);
}

// ------------------------------------------------------------------------------ abort

#[test]
fn abort_resolves_a_pending_tool_call_dialog_at_once() {
    // Deviation C1.2: abort never waits for the client to answer a dialog.
    let Some(py) = python("abort_resolves_a_pending_tool_call_dialog_at_once") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_1", "bash", json!({"command": "touch ran.txt"}))]},
        text_reply("must not be requested")
    ]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "gate",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_call"}]}

        def on_event(event, scope):
            ok = call(scope, "ui.confirm", title="Allow?", message=event["input"]["command"])
            if not ok:
                return {"block": True, "reason": "Blocked by user"}
            return None
        "#,
    )
    .spawn();
    let from = agent.records.len();
    agent.send(json!({"id": "p1", "type": "prompt", "message": "touch"}));
    let confirm = agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "confirm"}),
        LONG,
    );
    let id = ui_id(&confirm);
    assert_eq!(
        confirm,
        json!({"type": "extension_ui_request", "id": id, "method": "confirm",
               "title": "Allow?", "message": "touch ran.txt"})
    );
    // get_state is answered while the dialog waits.
    let r = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(r["data"]["isStreaming"], true, "{r}");

    let asked = Instant::now();
    agent.send(json!({"id": "ab", "type": "abort"}));
    agent.response("ab");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "abort took {:?}",
        asked.elapsed()
    );
    let recs = agent.records[from..].to_vec();
    let n = recs.len();
    assert_eq!(recs[n - 3]["type"], "agent_end", "{recs:#?}");
    assert_eq!(
        recs[n - 2],
        json!({"type": "agent_settled", "aborted": true})
    );
    assert_eq!(
        recs[n - 1],
        json!({"id": "ab", "type": "response", "command": "abort", "success": true})
    );
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_1"}),
    );
    assert_eq!(end["isError"], true, "{end}");
    // The dialog is gone: a late answer writes nothing and runs nothing.
    agent.send(json!({"type": "extension_ui_response", "id": id, "confirmed": true}));
    assert_eq!(agent.drain(Duration::from_millis(500)), Vec::<Value>::new());
    assert!(!agent.cwd.join("ran.txt").exists());
    assert_eq!(mock.requests().len(), 1);
}

// ------------------------------------------------------------------------------ commands

#[test]
fn get_commands_lists_extension_commands_then_builtins_then_templates_and_skills() {
    let Some(py) =
        python("get_commands_lists_extension_commands_then_builtins_then_templates_and_skills")
    else {
        return;
    };
    let builder = Agent::builder()
        .agent_file(
            "prompts/review.md",
            "---\ndescription: Review staged git changes\n---\nReview the staged changes.\n",
        )
        .agent_file(
            "skills/demo-skill/SKILL.md",
            "---\nname: demo-skill\ndescription: Demonstration skill.\n---\n\n# Demo skill\n",
        );
    let mut a = python_extension(builder, &py, "todo", TODO).spawn();
    let path = unit_path(&a, "todo");
    let agent_dir = a.agent_dir.to_string_lossy().into_owned();
    let r = a.request("gc", json!({"type": "get_commands"}));
    let commands = r["data"]["commands"].as_array().unwrap().clone();
    let source_info = json!({"path": path, "source": "auto", "scope": "user",
                             "origin": "top-level", "baseDir": agent_dir});
    assert_eq!(
        commands[..5],
        [
            json!({"name": "todo", "description": "Manage todos: /todo add <text> | list | pick | ask",
                   "source": "extension", "sourceInfo": source_info}),
            json!({"name": "todo-count", "source": "extension", "sourceInfo": source_info}),
            json!({"name": "echo", "source": "extension", "sourceInfo": source_info}),
            json!({"name": "llama", "description": "Manage llama.cpp router models",
                   "source": "extension",
                   "sourceInfo": {"path": "builtin:llama.cpp", "source": "builtin",
                                  "scope": "temporary", "origin": "top-level"}}),
            json!({"name": "mcp",
                   "description": "Manage MCP servers: sign in, reconnect, enable or disable, and change exposure",
                   "source": "extension",
                   "sourceInfo": {"path": "builtin:mcp", "source": "builtin",
                                  "scope": "temporary", "origin": "top-level"}}),
        ]
    );
    let rest: Vec<(&str, &str)> = commands[5..]
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["source"].as_str().unwrap()))
        .collect();
    assert_eq!(rest, [("review", "prompt"), ("skill:demo-skill", "skill")]);
}

#[test]
fn extension_commands_are_handled_with_their_ui_before_the_response() {
    let Some(py) = python("extension_commands_are_handled_with_their_ui_before_the_response")
    else {
        return;
    };
    let mut a = python_extension(Agent::builder(), &py, "todo", TODO).spawn();
    a.request("st0", json!({"type": "get_state"}));

    // entry_appended and notify, then the response.
    let recs = prompt(&mut a, "c1", "/todo add milk");
    assert_eq!(recs.len(), 3, "{recs:#?}");
    let entry = recs[0]["entry"].clone();
    assert_eq!(recs[0]["type"], "entry_appended", "{recs:#?}");
    assert!(
        entry["id"].is_string() && entry["parentId"].is_string(),
        "{entry}"
    );
    assert!(entry["timestamp"].is_string(), "{entry}");
    assert_eq!(
        recs[0],
        json!({"type": "entry_appended", "entry": {"type": "custom", "customType": "todo",
               "data": {"items": ["milk"]}, "id": entry["id"], "parentId": entry["parentId"],
               "timestamp": entry["timestamp"]}})
    );
    assert_eq!(
        view(&recs[1..]),
        [
            ui("notify", json!({"message": "added (1)"})),
            json!("response:c1")
        ]
    );
    assert_eq!(recs[2], handled("c1"));

    // A command waiting for a dialog does not block other commands.
    let from = a.records.len();
    a.send(json!({"id": "c2", "type": "prompt", "message": "/todo add"}));
    let input = a.wait_for(json!({"type": "extension_ui_request", "method": "input"}));
    let input_id = ui_id(&input);
    assert_eq!(
        input,
        json!({"type": "extension_ui_request", "id": input_id, "method": "input",
               "title": "Todo text?", "placeholder": "e.g. buy milk"})
    );
    let r = a.request("st", json!({"type": "get_state"}));
    assert_eq!(r["success"], true);
    a.send(json!({"type": "extension_ui_response", "id": input_id, "value": "eggs"}));
    a.response("c2");
    let recs = a.records[from..].to_vec();
    assert_eq!(
        view(&recs)
            .into_iter()
            .filter(|x| x != &json!("entry_appended"))
            .collect::<Vec<_>>(),
        [
            without_id(&input),
            json!("response:st"),
            ui("notify", json!({"message": "added (2)"})),
            json!("response:c2"),
        ]
    );
    let (_, appended) = find(&recs, json!({"type": "entry_appended"}));
    assert_eq!(
        appended["entry"]["data"],
        json!({"items": ["milk", "eggs"]})
    );
    assert_eq!(appended["entry"]["parentId"], entry["id"]);

    // A cancelled input.
    let from = a.records.len();
    a.send(json!({"id": "c3", "type": "prompt", "message": "/todo add"}));
    let input = a.wait_for(json!({"type": "extension_ui_request", "method": "input"}));
    a.send(json!({"type": "extension_ui_response", "id": ui_id(&input), "cancelled": true}));
    a.response("c3");
    assert_eq!(
        view(&a.records[from..]),
        [
            without_id(&input),
            ui(
                "notify",
                json!({"message": "nothing added", "notifyType": "warning"})
            ),
            json!("response:c3"),
        ]
    );

    // A select with a timeout, answered.
    let from = a.records.len();
    a.send(json!({"id": "c4", "type": "prompt", "message": "/todo pick"}));
    let select = a.wait_for(json!({"type": "extension_ui_request", "method": "select"}));
    assert_eq!(
        without_id(&select),
        ui(
            "select",
            json!({"title": "Pick a todo", "options": ["milk", "eggs"], "timeout": 10000})
        )
    );
    a.send(json!({"type": "extension_ui_response", "id": ui_id(&select), "value": "eggs"}));
    a.response("c4");
    assert_eq!(
        view(&a.records[from..]),
        [
            without_id(&select),
            ui("notify", json!({"message": "picked eggs"})),
            json!("response:c4"),
        ]
    );

    // args: everything after the first space, untrimmed; "" without one.
    let recs = prompt(&mut a, "c5", "/echo   spaced args ");
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "args=[  spaced args ]"})),
            json!("response:c5")
        ]
    );
    let recs = prompt(&mut a, "c6", "/echo");
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "args=[]"})),
            json!("response:c6")
        ]
    );

    // A throwing command: extension_error command:<name>, still handled.
    let recs = prompt(&mut a, "c7", "/todo zap now");
    assert_eq!(
        recs,
        [
            ext_error("command:todo", "command", "unknown verb: zap"),
            handled("c7")
        ]
    );
    let recs = prompt(&mut a, "c8", "/todo-count");
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "2 todos"})),
            json!("response:c8")
        ]
    );
    // Commands start no run of their own.
    assert!(a.records.iter().all(|r| r["type"] != "agent_start"));
}

#[test]
fn send_user_message_from_a_command_runs_after_handled_and_steer_of_a_command_fails() {
    let Some(py) =
        python("send_user_message_from_a_command_runs_after_handled_and_steer_of_a_command_fails")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Plan: milk first."}], "first_delay_ms": 1500}
    ]}));
    let mut a = python_extension(agent_for(&mock), &py, "todo", TODO).spawn();
    prompt(&mut a, "c1", "/todo add milk");
    let from = a.records.len();
    let r = a.request("c2", json!({"type": "prompt", "message": "/todo ask"}));
    assert_eq!(r, handled("c2"));
    mock.wait_requests(1, LONG);
    let r = a.request("s1", json!({"type": "steer", "message": "/todo list"}));
    assert_eq!(
        r,
        json!({"id": "s1", "type": "response", "command": "steer", "success": false,
               "error": "Extension command \"/todo\" cannot be queued. Use prompt() or execute the command when not streaming."})
    );
    a.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let recs = a.records[from..].to_vec();
    let v = view(&recs);
    assert!(
        pos(&v, &json!("response:c2")) < pos(&v, &json!("agent_start")),
        "{v:#?}"
    );
    let (_, user) = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "user"}}),
    );
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "Plan these todos: milk"}])
    );
    // The steered command did not run.
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
}

#[test]
fn the_builtin_llama_command_only_notifies() {
    let mut a = Agent::spawn();
    for (id, text) in [("l1", "/llama"), ("l2", "/llama models list")] {
        let recs = prompt(&mut a, id, text);
        assert_eq!(
            view(&recs),
            [
                ui(
                    "notify",
                    json!({"message": "/llama is available in interactive mode",
                                    "notifyType": "warning"})
                ),
                json!(format!("response:{id}"))
            ]
        );
        assert_eq!(recs[1], handled(id));
    }
}

#[test]
fn the_builtin_mcp_command_without_configuration_notifies() {
    let mut a = Agent::spawn();
    let agent_dir = a.agent_dir.to_string_lossy().into_owned();
    let recs = prompt(&mut a, "m1", "/mcp");
    assert_eq!(
        view(&recs),
        [
            ui(
                "notify",
                json!({"message": format!("No MCP servers configured. Add them to {agent_dir}/mcp.json or .pi/mcp.json."),
                                "notifyType": "info"})
            ),
            json!("response:m1")
        ]
    );
    let recs = prompt(&mut a, "m2", "/mcp bogus a b");
    assert_eq!(
        view(&recs),
        [
            ui(
                "notify",
                json!({"message": "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]",
                                "notifyType": "warning"})
            ),
            json!("response:m2")
        ]
    );
}

#[test]
fn the_same_command_in_two_extensions_becomes_name_1_and_name_2() {
    let Some(py) = python("the_same_command_in_two_extensions_becomes_name_1_and_name_2") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Just text.")]}));
    let body = |who: &str| {
        format!(
            r#"
        def initialize(msg):
            return {{"commands": [{{"name": "hello", "description": "from {who}"}}]}}

        def on_command(name, args, scope):
            fire(scope, "ui.notify", message="{who} got [%s] as %s" % (args, name))
        "#
        )
    };
    let builder = python_extension(agent_for(&mock), &py, "a-one", &body("a"));
    let mut a = python_extension(builder, &py, "b-two", &body("b")).spawn();
    let (pa, pb) = (unit_path(&a, "a-one"), unit_path(&a, "b-two"));
    let r = a.request("gc", json!({"type": "get_commands"}));
    let names: Vec<(&str, &str)> = r["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["sourceInfo"]["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("hello:1", pa.as_str()),
            ("hello:2", pb.as_str()),
            ("llama", "builtin:llama.cpp"),
            ("mcp", "builtin:mcp")
        ]
    );
    let recs = prompt(&mut a, "c1", "/hello:2 x y");
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "b got [x y] as hello"})),
            json!("response:c1")
        ]
    );
    let recs = prompt(&mut a, "c2", "/hello:1");
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "a got [] as hello"})),
            json!("response:c2")
        ]
    );
    // The bare name is no command any more: it goes to the model as text.
    let recs = run_prompt(&mut a, "c3", "/hello there");
    let (_, r) = find(&recs, json!({"type": "response", "id": "c3"}));
    assert_eq!(r["data"], json!({"disposition": "started"}));
    let (_, user) = find(
        &recs,
        json!({"type": "message_end", "message": {"role": "user"}}),
    );
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "/hello there"}])
    );
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
}

#[test]
fn an_extension_command_named_like_a_builtin_is_numbered_with_it() {
    let Some(py) = python("an_extension_command_named_like_a_builtin_is_numbered_with_it") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "mine",
        r#"
        def initialize(msg):
            return {"commands": [{"name": "llama"}]}

        def on_command(name, args, scope):
            fire(scope, "ui.notify", message="my llama")
        "#,
    )
    .spawn();
    let path = unit_path(&a, "mine");
    let r = a.request("gc", json!({"type": "get_commands"}));
    let names: Vec<(&str, &str)> = r["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["sourceInfo"]["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("llama:1", path.as_str()),
            ("llama:2", "builtin:llama.cpp"),
            ("mcp", "builtin:mcp")
        ]
    );
    let recs = prompt(&mut a, "c1", "/llama:1");
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "my llama"})),
            json!("response:c1")
        ]
    );
    let recs = prompt(&mut a, "c2", "/llama:2");
    assert_eq!(
        view(&recs),
        [
            ui(
                "notify",
                json!({"message": "/llama is available in interactive mode",
                                "notifyType": "warning"})
            ),
            json!("response:c2")
        ]
    );
}

// ------------------------------------------------------------------------------ tools

#[test]
fn an_extension_tool_is_offered_called_and_reports_progress_and_errors() {
    let Some(py) = python("an_extension_tool_is_offered_called_and_reports_progress_and_errors")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("toolu_g1", "greet", json!({"name": "Ann"})),
            tool_call("toolu_g2", "greet", json!({"name": "nobody"})),
        ]},
        text_reply("Greeted.")
    ]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "greeter",
        r#"
        def initialize(msg):
            return {"tools": [{"name": "greet", "label": "Greet", "description": "Greets a person",
                               "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
                                              "required": ["name"]}}]}

        def on_tool(name, params, scope):
            who = params["name"]
            if who == "nobody":
                raise RuntimeError("no such person: nobody")
            send({"type": "tool_update", "id": scope,
                  "partialResult": {"content": [{"type": "text", "text": "looking up " + who}], "details": {"step": 1}}})
            return {"content": [{"type": "text", "text": "Hello, %s!" % who}], "details": {"greeted": who}}
        "#,
    )
    .spawn();
    let recs = run_prompt(&mut agent, "p1", "greet Ann");

    let first = &mock.wait_requests(1, LONG)[0];
    let tools = first["body"]["tools"].as_array().expect("tools");
    let greet = tools
        .iter()
        .find(|t| t["name"] == "greet")
        .unwrap_or_else(|| panic!("no greet tool in {tools:#?}"));
    assert_eq!(greet["description"], "Greets a person");
    assert_eq!(
        greet["input_schema"],
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );

    let (_, start) = find(
        &recs,
        json!({"type": "tool_execution_start", "toolCallId": "toolu_g1"}),
    );
    assert_eq!(
        start,
        json!({"type": "tool_execution_start", "toolCallId": "toolu_g1", "toolName": "greet", "args": {"name": "Ann"}})
    );
    let (_, update) = find(
        &recs,
        json!({"type": "tool_execution_update", "toolCallId": "toolu_g1"}),
    );
    assert_eq!(
        update,
        json!({"type": "tool_execution_update", "toolCallId": "toolu_g1", "toolName": "greet",
               "args": {"name": "Ann"},
               "partialResult": {"content": [{"type": "text", "text": "looking up Ann"}], "details": {"step": 1}}})
    );
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_g1"}),
    );
    assert!(end["durationMs"].is_u64(), "{end}");
    assert_eq!(
        norm(&end),
        json!({"type": "tool_execution_end", "toolCallId": "toolu_g1", "toolName": "greet",
               "result": {"content": [{"type": "text", "text": "Hello, Ann!"}], "details": {"greeted": "Ann"}},
               "isError": false, "durationMs": 0})
    );
    // ok:false: an error result with the message, no extension_error.
    let (_, end2) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_g2"}),
    );
    assert_eq!(
        end2["result"],
        json!({"content": [{"type": "text", "text": "no such person: nobody"}], "details": {}})
    );
    assert_eq!(end2["isError"], true);
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
    let msgs = request_messages(&mock, 1);
    assert_eq!(
        msgs[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_g1", "content": "Hello, Ann!", "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_g2", "content": "no such person: nobody", "is_error": true}
        ])
    );
}

// ------------------------------------------------------------------------ session replacement

#[test]
fn new_session_shuts_down_reinitializes_and_starts_before_the_response() {
    let Some(py) = python("new_session_shuts_down_reinitializes_and_starts_before_the_response")
    else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "lifecycle",
        r#"
        state = {"starts": 0, "init": None}

        def initialize(msg):
            state["starts"] = 0
            state["init"] = msg["reason"]
            return {"subscriptions": [{"event": "session_start"}, {"event": "session_shutdown"}]}

        def on_event(event, scope):
            if event["type"] == "session_start":
                state["starts"] += 1
                fire(scope, "ui.notify", message="hello %s (initialize %s, starts %d)" % (event["reason"], state["init"], state["starts"]))
            elif event["type"] == "session_shutdown":
                fire(scope, "ui.notify", message="bye %s" % event["reason"])
        "#,
    )
    .spawn();
    let recs = exchange(&mut a, "st", json!({"type": "get_state"}));
    let first_session = recs.last().unwrap()["data"]["sessionId"].clone();
    assert_eq!(
        view(&recs),
        [
            ui(
                "notify",
                json!({"message": "hello startup (initialize startup, starts 1)"})
            ),
            json!("response:st")
        ]
    );
    let recs = exchange(&mut a, "n1", json!({"type": "new_session"}));
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "bye new"})),
            ui(
                "notify",
                json!({"message": "hello new (initialize new, starts 1)"})
            ),
            json!("response:n1")
        ]
    );
    assert_eq!(
        recs.last().unwrap(),
        &json!({"id": "n1", "type": "response", "command": "new_session", "success": true,
                "data": {"cancelled": false}})
    );
    let r = a.request("st2", json!({"type": "get_state"}));
    assert_ne!(r["data"]["sessionId"], first_session);
}

#[test]
fn session_before_switch_can_cancel_new_session() {
    let Some(py) = python("session_before_switch_can_cancel_new_session") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "keeper",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "session_before_switch"}, {"event": "session_shutdown"}]}

        def on_event(event, scope):
            if event["type"] == "session_before_switch":
                fire(scope, "ui.notify", message="switch? %s" % event["reason"])
                return {"cancel": True}
            fire(scope, "ui.notify", message="bye %s" % event["reason"])
        "#,
    )
    .spawn();
    let r = a.request("st", json!({"type": "get_state"}));
    let session = r["data"]["sessionId"].clone();
    let recs = exchange(&mut a, "n1", json!({"type": "new_session"}));
    assert_eq!(
        view(&recs),
        [
            ui("notify", json!({"message": "switch? new"})),
            json!("response:n1")
        ]
    );
    assert_eq!(
        recs.last().unwrap(),
        &json!({"id": "n1", "type": "response", "command": "new_session", "success": true,
                "data": {"cancelled": true}})
    );
    let r = a.request("st2", json!({"type": "get_state"}));
    assert_eq!(r["data"]["sessionId"], session);
}

// ------------------------------------------------------------------------------ shutdown

#[test]
fn stdin_eof_runs_session_shutdown_quit_and_ends_the_extension_process() {
    let Some(py) = python("stdin_eof_runs_session_shutdown_quit_and_ends_the_extension_process")
    else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "bye",
        r#"
        def initialize(msg):
            touch("ext.pid")
            return {"subscriptions": [{"event": "session_shutdown"}]}

        def on_event(event, scope):
            time.sleep(0.2)
            fire(scope, "ui.notify", message="bye %s" % event["reason"])
        "#,
    )
    .spawn();
    a.request("st", json!({"type": "get_state"}));
    let pid = crate::support::process::read_pid(&a.cwd.join("ext.pid")).expect("ext.pid");
    assert!(ext::process_alive(pid));
    let from = a.records.len();
    a.close_stdin();
    let status = a.wait_exit(LONG);
    assert_eq!(status.code(), Some(0), "{}", ext::stderr_after_exit(&a));
    assert_eq!(
        view(&a.records[from..]),
        [ui("notify", json!({"message": "bye quit"}))]
    );
    eventually("the extension process to end", || !ext::process_alive(pid));
}

#[test]
fn a_dialog_opened_after_stdin_eof_resolves_to_its_default_at_once() {
    // Deviation C1.2: pi would wait forever.
    let Some(py) = python("a_dialog_opened_after_stdin_eof_resolves_to_its_default_at_once") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "asker",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "session_shutdown"}]}

        def on_event(event, scope):
            ok = call(scope, "ui.confirm", title="Save?", message="quitting")
            fire(scope, "ui.notify", message="save=%s" % ok)
        "#,
    )
    .spawn();
    a.request("st", json!({"type": "get_state"}));
    let started = Instant::now();
    a.close_stdin();
    let status = a.wait_exit(LONG);
    assert_eq!(status.code(), Some(0), "{}", ext::stderr_after_exit(&a));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let notes = find_all(
        &a.records,
        json!({"type": "extension_ui_request", "method": "notify"}),
    );
    assert_eq!(
        notes.iter().map(without_id).collect::<Vec<_>>(),
        [ui("notify", json!({"message": "save=False"}))]
    );
}

// ------------------------------------------------------------------------------ failures

#[test]
fn a_crashed_gate_reports_the_exit_and_fails_closed_until_a_new_session() {
    let Some(py) = python("a_crashed_gate_reports_the_exit_and_fails_closed_until_a_new_session")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            tool_call("toolu_a", "bash", json!({"command": "touch a.txt"})),
            tool_call("toolu_b", "bash", json!({"command": "touch b.txt"})),
        ]},
        text_reply("Both blocked."),
        {"blocks": [tool_call("toolu_c", "bash", json!({"command": "touch c.txt"}))]},
        text_reply("Blocked again."),
        {"blocks": [tool_call("toolu_d", "bash", json!({"command": "touch d.txt"}))]},
        text_reply("Ran.")
    ]}));
    let mut agent = python_extension(
        agent_for(&mock),
        &py,
        "gate",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "turn_start"}, {"event": "tool_call"}]}

        def on_event(event, scope):
            if event["type"] == "turn_start" and not exists("crashed-once"):
                touch("crashed-once")
                os._exit(3)
            if event["type"] == "tool_call":
                fire(scope, "ui.notify", message="gate saw " + event["input"]["command"])
            return None
        "#,
    )
    .spawn();
    let path = unit_path(&agent, "gate");
    let exited = "extension process exited (code 3)";
    let not_running = format!("Extension {path} is not running");

    let recs = run_prompt(&mut agent, "p1", "touch two");
    let v = view(&recs);
    assert_window(
        &v,
        &[
            json!("agent_start"),
            ext_error(&path, "process", exited),
            ext_error(&path, "turn_start", exited),
            json!("turn_start"),
        ],
    );
    assert_eq!(ext_records(&recs).len(), 2, "{recs:#?}");
    for id in ["toolu_a", "toolu_b"] {
        let (_, end) = find(
            &recs,
            json!({"type": "tool_execution_end", "toolCallId": id}),
        );
        assert_eq!(end, blocked_end(id, "bash", &not_running));
    }
    // Still dead in the next run: every tool call is blocked, nothing else reported.
    let recs = run_prompt(&mut agent, "p2", "touch one");
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_c"}),
    );
    assert_eq!(end, blocked_end("toolu_c", "bash", &not_running));
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(!agent.cwd.join(f).exists(), "{f} was created");
    }

    // A session replacement starts the dead process again.
    let r = agent.request("n1", json!({"type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": false}), "{r}");
    let recs = run_prompt(&mut agent, "p3", "touch d");
    assert_eq!(
        ext_records(&recs),
        [ui("notify", json!({"message": "gate saw touch d.txt"}))]
    );
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_d"}),
    );
    assert_eq!(end["isError"], false, "{end}");
    assert!(agent.cwd.join("d.txt").exists());
}

#[test]
fn protocol_errors_and_error_messages_become_extension_errors_and_the_extension_keeps_working() {
    let Some(py) = python(
        "protocol_errors_and_error_messages_become_extension_errors_and_the_extension_keeps_working",
    ) else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "sloppy",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "session_start"}], "commands": [{"name": "ping"}]}

        def on_event(event, scope):
            send_raw("this is not json")
            send({"type": "result", "id": "no-such-request", "ok": True, "value": None})
            send({"type": "error", "event": "events:sync", "error": "x"})
            fire(scope, "ui.notify", message="still here")

        def on_command(name, args, scope):
            send_raw("[1, 2, 3]")
            fire(scope, "ui.notify", message="pong")
        "#,
    )
    .spawn();
    let path = unit_path(&a, "sloppy");
    let recs = exchange(&mut a, "st", json!({"type": "get_state"}));
    let errors = ext_records(&recs);
    assert_eq!(errors.len(), 4, "{recs:#?}");
    for e in &errors[..2] {
        let mut keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["error", "event", "extensionPath", "type"], "{e}");
        assert!(
            subset(
                json!({"type": "extension_error", "extensionPath": path, "event": "protocol"}),
                e
            ),
            "{e}"
        );
        assert!(e["error"].as_str().is_some_and(|s| !s.is_empty()), "{e}");
    }
    assert_eq!(errors[2], ext_error(&path, "events:sync", "x"));
    assert_eq!(errors[3], ui("notify", json!({"message": "still here"})));
    assert_eq!(recs.last().unwrap()["success"], true);

    // A line that is JSON but not an object is a protocol error too; the command still works.
    let recs = prompt(&mut a, "c1", "/ping");
    let v = view(&recs);
    assert_eq!(v.len(), 3, "{recs:#?}");
    assert!(
        subset(
            json!({"type": "extension_error", "extensionPath": path, "event": "protocol"}),
            &v[0]
        ),
        "{recs:#?}"
    );
    assert_eq!(
        v[1..],
        [
            ui("notify", json!({"message": "pong"})),
            json!("response:c1")
        ]
    );
}

fn subset(pattern: Value, v: &Value) -> bool {
    crate::support::agent::subset_match(&pattern, v)
}

// ------------------------------------------------------------------------------ more dialogs

#[test]
fn dialog_answers_resolve_as_pi_resolves_them() {
    // §A6: confirm takes only `confirmed` (a `value` gives false); select/input/editor take
    // `value` unchecked ("" stays ""); `cancelled` gives the default; an unknown id is ignored.
    let Some(py) = python("dialog_answers_resolve_as_pi_resolves_them") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "asker",
        r#"
        def initialize(msg):
            return {"commands": [{"name": "ask"}]}

        def on_command(name, args, scope):
            c = call(scope, "ui.confirm", title="Sure?", message="really")
            i = call(scope, "ui.input", title="Name?")
            s = call(scope, "ui.select", title="Pick", options=["a", "b"])
            e = call(scope, "ui.editor", title="Edit", prefill="draft")
            fire(scope, "ui.notify", message="%r %r %r %r" % (c, i, s, e))
        "#,
    )
    .spawn();
    a.request("st", json!({"type": "get_state"}));
    let from = a.records.len();
    a.send(json!({"id": "c1", "type": "prompt", "message": "/ask"}));
    let confirm = a.wait_for(json!({"type": "extension_ui_request", "method": "confirm"}));
    a.send(json!({"type": "extension_ui_response", "id": "no-such-dialog", "confirmed": true}));
    a.send(json!({"type": "extension_ui_response", "id": ui_id(&confirm), "value": "yes"}));
    let input = a.wait_for(json!({"type": "extension_ui_request", "method": "input"}));
    a.send(json!({"type": "extension_ui_response", "id": ui_id(&input), "value": ""}));
    let select = a.wait_for(json!({"type": "extension_ui_request", "method": "select"}));
    a.send(json!({"type": "extension_ui_response", "id": ui_id(&select), "value": "zzz"}));
    let editor = a.wait_for(json!({"type": "extension_ui_request", "method": "editor"}));
    a.send(json!({"type": "extension_ui_response", "id": ui_id(&editor), "cancelled": true}));
    a.response("c1");
    assert_eq!(
        view(&a.records[from..]),
        [
            ui("confirm", json!({"title": "Sure?", "message": "really"})),
            ui("input", json!({"title": "Name?"})),
            ui("select", json!({"title": "Pick", "options": ["a", "b"]})),
            ui("editor", json!({"title": "Edit", "prefill": "draft"})),
            ui("notify", json!({"message": "False '' 'zzz' None"})),
            json!("response:c1"),
        ]
    );
}

#[test]
fn a_handler_timeout_treats_a_slow_handler_as_thrown() {
    // Deviation C1.4 (opt-in): `piRpc.extensionHandlerTimeoutMs`.
    let Some(py) = python("a_handler_timeout_treats_a_slow_handler_as_thrown") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Hi.")]}));
    let mut settings = crate::support::run::fast_settings();
    settings["piRpc"] = json!({"extensionHandlerTimeoutMs": 300});
    let mut agent = python_extension(
        agent_for(&mock).settings(settings),
        &py,
        "slow",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "turn_start"}]}

        def on_event(event, scope):
            time.sleep(3)
        "#,
    )
    .spawn();
    let path = unit_path(&agent, "slow");
    let started = Instant::now();
    let recs = run_prompt(&mut agent, "p1", "hi");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_window(
        &view(&recs),
        &[
            json!("agent_start"),
            ext_error(
                &path,
                "turn_start",
                "Extension handler timed out after 300 ms",
            ),
            json!("turn_start"),
        ],
    );
}

/// An extension that stops reading its input while pi-rpc writes to it is stopped after its
/// queue stayed full for 5 s: the run goes on (pi-rpc never waits on it forever), and the
/// extension's end is reported as any other.
#[test]
fn an_extension_that_stops_reading_is_stopped_and_the_run_goes_on() {
    let Some(py) = python("an_extension_that_stops_reading_is_stopped_and_the_run_goes_on") else {
        return;
    };
    // A reply of 2,000 deltas, each a message_update notification to the extension.
    let mock = crate::support::mock_llm::MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "abcdefghij".repeat(4000), "chunk_size": 20}]}
    ]}));
    let script = r#"
import json, sys, time
line = sys.stdin.readline()
msg = json.loads(line)
unit = {"ext": msg["units"][0]["ext"],
        "subscriptions": [{"event": "message_update", "await": False}]}
sys.stdout.write(json.dumps({"type": "result", "id": msg["id"], "ok": True,
                             "value": {"protocol": 1, "units": [unit]}}) + "\n")
sys.stdout.flush()
time.sleep(600)  # never reads again
"#;
    let mut agent = crate::support::run::agent_for(&mock)
        .agent_file(
            "extensions/deaf/index.ext.json",
            &ext::manifest(&py, "{{AGENT_DIR}}/extensions/deaf/deaf.py"),
        )
        .agent_file("extensions/deaf/deaf.py", script)
        .spawn();
    let records = crate::support::run::run_prompt(&mut agent, "p", "go");
    let path = agent.agent_dir.join("extensions/deaf/index.ext.json");
    let (_, error) = find(
        &records,
        json!({"type": "extension_error", "event": "process"}),
    );
    assert_eq!(
        error["extensionPath"],
        path.to_string_lossy().as_ref(),
        "{error}"
    );
    assert_eq!(records.last().unwrap()["type"], "agent_settled");
    agent.close_stdin();
    assert_eq!(agent.wait_exit(LONG).code(), Some(0));
    assert!(
        agent
            .stderr()
            .contains("the extension stopped reading its input for 5 s; stopping it"),
        "{}",
        agent.stderr()
    );
}
