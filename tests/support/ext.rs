//! Extension tests (`spec/extensions.md` Part B): process extensions written in Python (stdlib
//! only) that speak protocol 1, placed where pi-rpc discovers them.
//!
//! A test writes only its handlers; [`python_extension`] puts them behind a small runtime (the
//! one of the `ext_*` conformance candidates, plus a few helpers for misbehaving on purpose) and
//! writes `extensions/<dir>/index.ext.json` and `extensions/<dir>/<dir>.py` into the agent dir.
//! The handler code defines
//!
//! * `initialize(msg)` → the unit's registrations (`subscriptions`, `commands`, `tools`, or
//!   `error`), without `ext`;
//! * optionally `on_event(event, scope)`, `on_command(name, args, scope)` and
//!   `on_tool(name, params, scope)`, each returning the handler's value (or `Reply(value,
//!   mutated)`); raising an exception answers `ok:false` with its text.
//!
//! Inside handlers: `call(scope, method, **params)` (awaited call), `fire(scope, method,
//! **params)` (fire-and-forget), `send(msg)` (any message), `send_raw(text)` (any line),
//! `log(text)` (one stderr line), `touch(name)` / `exists(name)` (flag files in the cwd).
//!
//! Python is an outside program: without `python3` on `PATH` the tests skip, unless
//! `PI_RPC_REQUIRE` names `python3` (or `all`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::agent::AgentBuilder;
use super::outside::{need, on_path};
use super::Agent;

/// The python3 interpreter (resolved through pyenv-style shims to the real executable), or
/// `None` after printing why `test` skips.
pub fn python(test: &str) -> Option<PathBuf> {
    let found = on_path(&["python3"]).map(|shim| real_python(&shim).unwrap_or(shim));
    need(
        "python3",
        found,
        test,
        "install python3 (the standard library is enough)",
    )
}

/// `sys.executable` of `python`: a shim re-resolves its interpreter on every start, which costs
/// time and depends on the environment (pi-rpc's children run with the test's cleared one).
fn real_python(python: &Path) -> Option<PathBuf> {
    let out = std::process::Command::new(python)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && p.is_absolute()).then_some(p)
}

/// Protocol 1 in Python: the runtime of the conformance candidates
/// (`shared/conformance/scenarios/ext_*.json`) plus helpers for tests.
pub const RUNTIME: &str = r#"# --- pi-rpc extension protocol 1: a minimal runtime (stdlib only) ----------------
# The host writes JSON lines to our stdin; we answer on stdout. Every host request
# ("initialize", "event", "command", "tool") gets exactly one "result". Our own
# requests are "call"s; a call with an "id" is answered by a "result" from the host,
# a call without one is fire-and-forget. Anything else from the host is ignored.
import json
import os
import sys
import threading
import time

_lock = threading.Lock()
_waiting = {}   # id of one of our awaited calls -> [threading.Event, result message]
_counter = [0]
EXT = None      # this unit's path, as the host named it in "initialize"


def _send(msg):
    line = json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n"
    with _lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def send(msg):
    """Any message, as is."""
    _send(msg)


def send_raw(text):
    """Any line (e.g. one that is not JSON)."""
    with _lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def touch(name):
    """Creates the file `name` in the cwd (the session cwd)."""
    with open(name, "w") as f:
        f.write(str(os.getpid()))


def exists(name):
    return os.path.exists(name)


def call(scope, method, **params):
    """Awaited call: blocks this handler until the host's result arrives."""
    with _lock:
        _counter[0] += 1
        cid = "x%d" % _counter[0]
        slot = _waiting[cid] = [threading.Event(), None]
    _send({"type": "call", "id": cid, "ext": EXT, "scope": scope, "method": method, "params": params})
    slot[0].wait()
    reply = slot[1]
    if not reply.get("ok"):
        raise RuntimeError((reply.get("error") or {}).get("message", "call failed"))
    return reply.get("value")


def fire(scope, method, **params):
    """Fire-and-forget call (no id, no result). The host acts on it before it acts
    on anything we send later, so it lands on the wire before our result's effects."""
    _send({"type": "call", "ext": EXT, "scope": scope, "method": method, "params": params})


class Reply:
    """A handler's return value plus payload fields it changed in place (pi lets
    handlers mutate e.g. tool_call's event.input); sent as the result's "mutated"."""

    def __init__(self, value=None, mutated=None):
        self.value = value
        self.mutated = mutated


def _answer(msg, fn, *args):
    try:
        value = fn(*args) if fn else None
    except Exception as exc:  # a throwing handler: the host treats it as pi treats a throw
        _send({"type": "result", "id": msg["id"], "ok": False, "error": {"message": str(exc)}})
        return
    result = {"type": "result", "id": msg["id"], "ok": True}
    if isinstance(value, Reply):
        result["value"] = value.value
        if value.mutated:
            result["mutated"] = value.mutated
    else:
        result["value"] = value
    _send(result)


def serve(initialize, on_event=None, on_command=None, on_tool=None):
    """Read host messages until EOF. Each request runs on its own thread, so a handler
    waiting for a dialog's result never blocks the reading of that result."""
    global EXT
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "result":
            with _lock:
                slot = _waiting.pop(msg.get("id"), None)
            if slot:
                slot[1] = msg
                slot[0].set()
        elif kind == "initialize":  # at startup and again for every new session runtime
            EXT = msg["units"][0]["ext"]
            unit = dict(ext=EXT, **initialize(msg))
            _send({"type": "result", "id": msg["id"], "ok": True, "value": {"protocol": 1, "units": [unit]}})
        elif kind == "event" and "id" in msg:
            threading.Thread(target=_answer, args=(msg, on_event, msg["event"], msg["id"]), daemon=True).start()
        elif kind == "command":
            threading.Thread(target=_answer, args=(msg, on_command, msg["name"], msg["args"], msg["id"]),
                             daemon=True).start()
        elif kind == "tool":
            threading.Thread(target=_answer, args=(msg, on_tool, msg["name"], msg["params"], msg["id"]),
                             daemon=True).start()
# --- end of runtime ------------------------------------------------------------------

"#;

const SERVE: &str = r#"

if __name__ == "__main__":
    serve(initialize, on_event=globals().get("on_event"), on_command=globals().get("on_command"),
          on_tool=globals().get("on_tool"))
"#;

/// The whole script: the runtime, `body` (dedented) and the `serve` call.
pub fn script(body: &str) -> String {
    format!("{RUNTIME}{}{SERVE}", dedent(body))
}

/// `body` without the indentation its non-blank lines share (so handler code can be indented
/// like the Rust around it).
pub fn dedent(body: &str) -> String {
    let indent = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    body.lines()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A protocol-1 manifest running `python script` (`script` may contain `{{AGENT_DIR}}` /
/// `{{CWD}}`, which the builder expands).
pub fn manifest(python: &Path, script: &str) -> String {
    json!({"command": [python.to_string_lossy(), script], "protocol": 1}).to_string()
}

/// Adds the extension `extensions/<dir>/index.ext.json` (+ `<dir>.py` next to it) to the agent
/// dir, running `body` (see the module doc) with the absolute `python`.
pub fn python_extension(
    builder: AgentBuilder,
    python: &Path,
    dir: &str,
    body: &str,
) -> AgentBuilder {
    builder
        .agent_file(
            &format!("extensions/{dir}/index.ext.json"),
            &manifest(
                python,
                &format!("{{{{AGENT_DIR}}}}/extensions/{dir}/{dir}.py"),
            ),
        )
        .agent_file(&format!("extensions/{dir}/{dir}.py"), &script(body))
}

/// Adds `<name>.ext.json` (+ `<name>.py`) to the cwd, for `-e <name>.ext.json`.
pub fn cwd_python_extension(
    builder: AgentBuilder,
    python: &Path,
    name: &str,
    body: &str,
) -> AgentBuilder {
    builder
        .cwd_file(
            &format!("{name}.ext.json"),
            &manifest(python, &format!("{{{{CWD}}}}/{name}.py")),
        )
        .cwd_file(&format!("{name}.py"), &script(body))
}

/// The unit path of the extension in `extensions/<dir>/` of the agent dir (its manifest).
pub fn unit_path(agent: &Agent, dir: &str) -> String {
    agent
        .agent_dir
        .join("extensions")
        .join(dir)
        .join("index.ext.json")
        .to_string_lossy()
        .into_owned()
}

/// `{"type":"extension_error","extensionPath":…,"event":…,"error":…}`.
pub fn ext_error(path: &str, event: &str, error: &str) -> Value {
    json!({"type": "extension_error", "extensionPath": path, "event": event, "error": error})
}

/// An `extension_ui_request` pattern: `fields` plus type and method (no id).
pub fn ui(method: &str, fields: Value) -> Value {
    let mut v = json!({"type": "extension_ui_request", "method": method});
    if let Value::Object(m) = fields {
        for (k, x) in m {
            v[k] = x;
        }
    }
    v
}

/// A UI request's id, after checking it is a UUID v4 (§A6).
pub fn ui_id(record: &Value) -> String {
    assert_eq!(record["type"], "extension_ui_request", "{record}");
    let id = record["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {record}"));
    let parsed = uuid::Uuid::parse_str(id).unwrap_or_else(|e| panic!("id {id:?}: {e}"));
    assert_eq!(parsed.get_version_num(), 4, "not a UUID v4: {id}");
    id.to_string()
}

/// `record` without its `id` (for whole-object asserts of UI requests, whose ids are random).
/// Checks that the id was a UUID v4.
pub fn without_id(record: &Value) -> Value {
    ui_id(record);
    let mut r = record.clone();
    r.as_object_mut().unwrap().remove("id");
    r
}

/// The UI requests and extension errors in `records`, UI requests without their ids.
pub fn ext_records(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["type"] == "extension_ui_request" || r["type"] == "extension_error")
        .map(|r| {
            if r["type"] == "extension_ui_request" {
                without_id(r)
            } else {
                r.clone()
            }
        })
        .collect()
}

/// `{"id":…,"type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}`.
pub fn handled(id: &str) -> Value {
    json!({"id": id, "type": "response", "command": "prompt", "success": true,
           "data": {"disposition": "handled"}})
}

/// Waits for the exit and returns the exit code and the complete stderr.
pub fn exit_and_stderr(agent: &mut Agent, timeout: Duration) -> (Option<i32>, String) {
    let status = agent.wait_exit(timeout);
    (status.code(), stderr_after_exit(agent))
}

/// The complete stderr of an exited agent (the reader thread hands it over at EOF).
pub fn stderr_after_exit(agent: &Agent) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = agent.stderr();
        if !s.is_empty() || Instant::now() >= deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Asserts pi's load-failure report (§A2, §B2): the error line for `path` whose message
/// satisfies `message`, the hint as the last line, exit code 1, nothing on stdout.
pub fn assert_load_failure(agent: &mut Agent, path: &str, message: impl Fn(&str) -> bool) {
    let (code, stderr) = exit_and_stderr(agent, Duration::from_secs(20));
    assert_eq!(code, Some(1), "stderr: {stderr}");
    assert!(agent.raw_lines.is_empty(), "stdout: {:?}", agent.records);
    let prefix = format!("Error: Failed to load extension \"{path}\": ");
    let lines: Vec<&str> = stderr.lines().collect();
    let line = lines
        .iter()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in stderr:\n{stderr}"));
    assert!(message(&line[prefix.len()..]), "unexpected message: {line}");
    assert_eq!(
        lines.last().copied(),
        Some("Hint: Start without extensions using \"pi-rpc --no-extensions\"."),
        "{stderr}"
    );
}

/// True while a process with `pid` exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat.get(i + 2..i + 3))
            .is_some_and(|state| state != "Z" && state != "X"),
    }
}
