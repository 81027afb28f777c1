//! Abort latency: how long after an `abort` command a streaming run is over, when the LLM server
//! has stopped sending (the worst case: nothing arrives to notice the cancel flag on).
//!
//!     cargo build --release && cargo run --release --example bench_abort [-- N]
//!
//! Starts the scripted server with a reply that streams a few text deltas and then hangs, spawns
//! the release binary (`target/release/pi-rpc`, or `PI_RPC_BIN`) once, and N times (default 50):
//! sends `prompt`, waits for the first `message_update`, sends `abort`, and measures the time
//! until the `agent_settled` event and until the `abort` response. Prints median, p90 and max.
//! Asserts nothing about time.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use mock_llm::MockLlm;
use serde_json::{json, Value};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(label: &str, mut ms: Vec<f64>) {
    ms.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{label}: median {:.2} ms, p90 {:.2} ms, max {:.2} ms (n={})",
        percentile(&ms, 0.5),
        percentile(&ms, 0.9),
        ms.last().copied().unwrap_or(f64::NAN),
        ms.len()
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let bin = bench_support::release_binary();
    // Streams "Hello, world" in 4-character deltas, then sends nothing more (for up to 60 s).
    let mock = MockLlm::start(json!({"replies": [], "default": {
        "blocks": [{"type": "text", "text": "Hello, world"}], "chunk_size": 4,
        "usage": {"input": 10, "output": 3}, "hang": true, "hang_max_ms": 60000}}));
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(),
        "api": "anthropic-messages", "apiKey": "bench-key",
        "models": [{"id": "bench-model", "contextWindow": 200000, "maxTokens": 8192}]}}});
    let dir = bench_support::agent_dir("abort", &models.to_string());

    let mut child = bench_support::spawn_rpc(
        &bin,
        &dir,
        &["--provider", "mock", "--model", "bench-model"],
    );
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut read_record = || -> Option<Value> {
        let mut line = String::new();
        match out.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => serde_json::from_str(&line).ok(),
        }
    };

    let (mut settled_ms, mut response_ms, mut to_first_update_ms) =
        (Vec::new(), Vec::new(), Vec::new());
    for run in 0..n {
        let t_prompt = Instant::now();
        writeln!(
            stdin,
            r#"{{"id":"p{run}","type":"prompt","message":"Say hello"}}"#
        )
        .and_then(|_| stdin.flush())
        .expect("write prompt");
        // Wait for the first streamed delta (the reply then hangs).
        loop {
            let Some(v) = read_record() else {
                eprintln!("stdout closed before the first message_update");
                std::process::exit(1);
            };
            if v["type"] == "message_update" {
                break;
            }
            if v["type"] == "response" && v["success"] == false {
                eprintln!("prompt failed: {v}");
                std::process::exit(1);
            }
        }
        to_first_update_ms.push(t_prompt.elapsed().as_secs_f64() * 1e3);
        // Let the stream stall (the server has sent all it will send).
        std::thread::sleep(Duration::from_millis(20));
        let t_abort = Instant::now();
        writeln!(stdin, r#"{{"id":"a{run}","type":"abort"}}"#)
            .and_then(|_| stdin.flush())
            .expect("write abort");
        let (mut settled, mut responded) = (None, None);
        while settled.is_none() || responded.is_none() {
            let Some(v) = read_record() else {
                eprintln!("stdout closed during abort");
                std::process::exit(1);
            };
            let at = t_abort.elapsed().as_secs_f64() * 1e3;
            if v["type"] == "agent_settled" {
                settled = Some(at);
            } else if v["type"] == "response" && v["command"] == "abort" {
                responded = Some(at);
            }
        }
        settled_ms.extend(settled);
        response_ms.extend(responded);
    }
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    println!("abort while the LLM stream is stalled ({n} runs, one pi-rpc process):");
    summary("  abort → agent_settled    ", settled_ms);
    summary("  abort → abort response   ", response_ms);
    summary("  (prompt → first update)  ", to_first_update_ms);
}
