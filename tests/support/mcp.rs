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
