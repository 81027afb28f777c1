//! Offline demo: starts the scripted LLM server in-process, runs `pi-rpc` against it in a
//! throwaway folder, and prints the protocol lines as they stream.
//!
//!     cargo run --release --example demo
//!
//! The scripted model answers a prompt by writing `hello.txt` with the `write` tool, showing it
//! with `bash`, then replying in text. Nothing leaves 127.0.0.1.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mock_llm.rs"]
#[allow(dead_code)]
mod mock_llm;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// The `pi-rpc` binary of the same profile as this example, built first if needed (with cargo's
/// progress shown: a first release build links with fat LTO and takes minutes on a small
/// machine; README says what to expect).
fn pi_rpc_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/examples/demo → target/<profile>/pi-rpc
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf();
    let release = profile_dir.ends_with("release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--bin", "pi-rpc"]);
    if release {
        build.arg("--release");
    }
    build.current_dir(env!("CARGO_MANIFEST_DIR"));
    eprintln!(
        "demo: building the pi-rpc binary ({}) if it is not up to date; a first release build \
         takes a few minutes (fat LTO)...",
        if release { "release" } else { "debug" }
    );
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "cargo build --bin pi-rpc failed");
    profile_dir.join("pi-rpc")
}

/// A short rendering of one stdout record for the terminal.
fn show(v: &Value) -> String {
    let t = v["type"].as_str().unwrap_or("?");
    match t {
        "message_update" => {
            let e = &v["assistantMessageEvent"];
            match e["type"].as_str() {
                Some("text_delta") | Some("toolcall_delta") | Some("thinking_delta") => format!(
                    "message_update {:<15} {}",
                    e["type"].as_str().unwrap_or(""),
                    e["delta"]
                ),
                Some(other) => format!("message_update {other}"),
                None => "message_update".into(),
            }
        }
        "message_start" | "message_end" => {
            let m = &v["message"];
            let role = m["role"].as_str().unwrap_or("?");
            let extra = match role {
                "system" => format!(
                    "(sections: {})",
                    m["sections"].as_object().map_or(0, |s| s.len())
                ),
                "assistant" => format!("stopReason={}", m["stopReason"]),
                _ => serde_json::to_string(&m["content"]).unwrap_or_default(),
            };
            let mut line = format!("{t:<13} {role:<10} {extra}");
            line.truncate(160);
            line
        }
        _ => {
            let mut line = v.to_string();
            line.truncate(200);
            line
        }
    }
}

fn main() {
    let mock = mock_llm::MockLlm::start(json!({"replies": [
        {"blocks": [
            {"type": "text", "text": "I'll create the file first."},
            {"type": "tool_call", "id": "toolu_write", "name": "write",
             "input": {"path": "hello.txt", "content": "Hello from pi-rpc!\n"}}
        ], "chunk_size": 6, "delay_ms": 10},
        {"blocks": [
            {"type": "tool_call", "id": "toolu_bash", "name": "bash", "input": {"command": "cat hello.txt && wc -c hello.txt"}}
        ], "chunk_size": 8, "delay_ms": 10},
        {"blocks": [{"type": "text", "text": "Done: hello.txt says \"Hello from pi-rpc!\"."}],
         "chunk_size": 5, "delay_ms": 10}
    ]}));

    let dir = std::env::temp_dir().join(format!("pi-rpc-demo-{}", std::process::id()));
    let cwd = dir.join("project");
    let agent_dir = dir.join("agent");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    std::fs::create_dir_all(&agent_dir).expect("mkdir");
    std::fs::write(
        agent_dir.join("models.json"),
        json!({"providers": {"demo": {"baseUrl": mock.base_url(), "api": "anthropic-messages",
            "apiKey": "demo-key", "models": [{"id": "scripted-model", "name": "Scripted Model",
            "reasoning": true, "input": ["text", "image"], "contextWindow": 200000, "maxTokens": 8192}]}}})
        .to_string(),
    )
    .expect("models.json");

    let bin = pi_rpc_binary();
    println!(
        "# {} --mode rpc --no-session   (cwd {})",
        bin.display(),
        cwd.display()
    );
    let mut child = Command::new(&bin)
        .args(["--mode", "rpc", "--no-session"])
        .current_dir(&cwd)
        .env("PI_CODING_AGENT_DIR", &agent_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn pi-rpc");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));

    let prompt = json!({"id": "demo-1", "type": "prompt",
        "message": "Create hello.txt saying hello, then show me its content."});
    println!("> {prompt}");
    writeln!(stdin, "{prompt}").expect("write prompt");

    let mut lines = stdout.lines();
    for line in lines.by_ref() {
        let Ok(line) = line else { break };
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        println!("< {}", show(&v));
        if v["type"] == "agent_settled" {
            break;
        }
    }
    let ask = json!({"id": "demo-2", "type": "get_last_assistant_text"});
    println!("> {ask}");
    writeln!(stdin, "{ask}").expect("write");
    if let Some(Ok(line)) = lines.next() {
        println!("< {line}");
    }
    drop(stdin);
    let _ = child.wait();
    println!(
        "# hello.txt on disk: {:?}",
        std::fs::read_to_string(cwd.join("hello.txt")).unwrap_or_default()
    );
    println!(
        "# the scripted server received {} requests",
        mock.requests().len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
