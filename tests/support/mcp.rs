//! MCP tests (`spec/mcp.md`): the scripted stdio server `fake_mcp.py` (Python stdlib only),
//! configured in the agent dir's `mcp.json`.
//!
//! Every server entry gets `FAKE_MCP_RECORD` pointing at `<agent dir>/<name>.record.jsonl`,
//! where the server appends each message it receives, so tests can assert on exactly what
//! pi-rpc sent. Python is an outside program: without `python3` the tests skip, unless
//! `PI_RPC_REQUIRE` names it.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::agent::AgentBuilder;
use super::mcp_http::HttpMcpServer;
use super::records::find;
use super::run::LONG;
use super::Agent;

/// The fake server's script.
pub fn fake_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_mcp.py")
}

/// A stdio server entry running the fake server with `env` (and the record file), plus
/// `extra` fields (`exposure`, `timeout`, …).
pub fn fake_entry(py: &Path, name: &str, env: Value, extra: Value) -> Value {
    let mut env = env.as_object().cloned().unwrap_or_default();
    env.insert(
        "FAKE_MCP_RECORD".into(),
        format!("{{{{AGENT_DIR}}}}/{name}.record.jsonl").into(),
    );
    let mut entry = Map::new();
    entry.insert("command".into(), py.to_string_lossy().into_owned().into());
    entry.insert(
        "args".into(),
        json!([fake_server().to_string_lossy().into_owned()]),
    );
    entry.insert("env".into(), Value::Object(env));
    if let Value::Object(extra) = extra {
        entry.extend(extra);
    }
    Value::Object(entry)
}

/// `builder` with `<agent dir>/mcp.json` holding `servers`.
pub fn with_servers(builder: AgentBuilder, servers: Value) -> AgentBuilder {
    builder.agent_file(
        "mcp.json",
        &serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
}

/// The messages server `name` received so far.
pub fn received(agent_dir: &Path, name: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(agent_dir.join(format!("{name}.record.jsonl"))).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The fake server's tools, in listing order (without `change`'s `added`).
pub const FAKE_TOOLS: [&str; 18] = [
    "echo",
    "fail",
    "fail_empty",
    "rpc_error",
    "slow",
    "image",
    "structured",
    "mixed",
    "big",
    "crash",
    "whereami",
    "seen",
    "dup-name",
    "dup.name",
    "untyped",
    "titled",
    "bare",
    "change",
];

// ---------------------------------------------------------------------------------------------
// Helpers shared by the MCP test files

/// The `notify` records in `records`, as `(notifyType, message)`.
pub fn notices(records: &[Value]) -> Vec<(String, String)> {
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
pub fn mcp_status(agent: &mut Agent, id: &str) -> Vec<Value> {
    let start = agent.records.len();
    agent.send(json!({"id": id, "type": "prompt", "message": "/mcp"}));
    agent.wait_for_timeout(json!({"type": "response", "id": id}), LONG);
    agent.records[start..].to_vec()
}

/// The startup report (§3.3): the first `warning` notify.
pub fn startup_report(agent: &mut Agent) -> String {
    agent.wait_for_timeout(
        json!({"type": "extension_ui_request", "method": "notify", "notifyType": "warning"}),
        LONG,
    )["message"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

pub fn tool_names(request: &Value) -> Vec<String> {
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
pub fn declared(request: &Value, name: &str) -> Value {
    request["body"]["tools"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not declared in {request:#}"))
}

/// `schema` without the `description` of its properties (prose: our own words).
pub fn without_descriptions(schema: &Value) -> Value {
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
pub fn end_of(records: &[Value], call: &str) -> Value {
    find(
        records,
        json!({"type": "tool_execution_end", "toolCallId": call}),
    )
    .1
}

/// `{"result": …, "isError": …}` of call `call`, for whole-value assertions.
pub fn outcome(records: &[Value], call: &str) -> Value {
    let end = end_of(records, call);
    json!({"result": end["result"], "isError": end["isError"]})
}

/// The generic error result of a thrown error (§7.3).
pub fn thrown(message: &str) -> Value {
    json!({"result": {"content": [{"type": "text", "text": message}], "details": {}},
           "isError": true})
}

/// The names of the fake server's tools as declared (§5.1), in listing order (hashed names as
/// pi 1.6.0 makes them for servers `fake` and `plain`).
pub fn fake_tool_names(server: &str) -> Vec<String> {
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

pub fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The file mode bits of `path`.
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// True when `name` is `pi-mcp-<16 lowercase hex><ext>`.
pub fn is_output_file_name(name: &str, ext: &str) -> bool {
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
pub fn tmp_dir(agent: &Agent) -> std::path::PathBuf {
    agent.root.path().join("tmp")
}

/// An HTTP server entry for `server`.
pub fn http_entry(server: &HttpMcpServer, extra: Value) -> Value {
    let mut entry = json!({"url": server.url()});
    if let (Some(e), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        e.extend(extra);
    }
    entry
}

/// The `mcp.log` lines with their timestamps checked and replaced by `<T>`.
pub fn normalized_log(agent_dir: &Path) -> String {
    let text = std::fs::read_to_string(agent_dir.join("mcp.log")).unwrap_or_default();
    let iso = regex::Regex::new(r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ").unwrap();
    iso.replace_all(&text, "<T> ").into_owned()
}
