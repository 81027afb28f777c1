//! RPC `bash` throughput benchmark: spawns the release binary, runs one `bash` command that
//! prints about 100 MB, reads every `bash_execution_update` until the response, and prints the
//! wall time, the update rate (events/s and MB/s of `delta` text) and pi-rpc's peak RSS (VmHWM,
//! read from `/proc/<pid>/status` just before it exits).
//!
//!     cargo build --release && cargo run --release --example bench_bash_output [-- MB]
//!
//! The binary is `target/release/pi-rpc` (override with `PI_RPC_BIN`). The agent dir is a fresh
//! temp dir with `--no-session`; no LLM is involved.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Deserialize;

/// The fields of an output line this benchmark looks at.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    success: Option<bool>,
}

fn main() {
    let megabytes: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let bin = bench_support::release_binary();
    let dir = bench_support::agent_dir(
        "bash",
        r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"k","models":[{"id":"m","reasoning":true}]}}}"#,
    );

    let bytes = megabytes * 1_000_000;
    let command = format!("head -c {bytes} /dev/zero | tr '\\0' 'x' | fold -w 100");
    let request = serde_json::json!({"id": "b", "type": "bash", "command": command});

    let start = Instant::now();
    let mut child = Command::new(&bin)
        .args(["--mode", "rpc", "--no-session"])
        .env("PI_CODING_AGENT_DIR", &dir)
        .env("HOME", &dir)
        .env("TMPDIR", &dir)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn pi-rpc");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{request}").expect("write");
    stdin.flush().expect("flush");

    let mut reader = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let (mut updates, mut delta_bytes, mut first_update) = (0u64, 0u64, None);
    let mut ok = None;
    loop {
        line.clear();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
        let Ok(rec) = serde_json::from_str::<Record>(&line) else {
            eprintln!("not a record: {}", line.trim_end());
            continue;
        };
        match rec.kind {
            "bash_execution_update" => {
                first_update.get_or_insert_with(Instant::now);
                updates += 1;
                delta_bytes += rec.delta.map_or(0, |d| d.len() as u64);
            }
            "response" if rec.id.as_deref() == Some("b") => {
                ok = rec.success;
                break;
            }
            _ => {}
        }
    }
    let wall = start.elapsed();
    let streaming = first_update.map_or(wall, |t| t.elapsed());
    let rss = bench_support::peak_rss_kib(pid);
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    let secs = wall.as_secs_f64();
    println!("command: {command}");
    println!(
        "bash response: success={}",
        ok.map_or("missing".to_string(), |b| b.to_string())
    );
    println!(
        "wall time (spawn -> response): {:.2} s ({:.2} s from the first update)",
        secs,
        streaming.as_secs_f64()
    );
    println!(
        "bash_execution_update: {updates} events, {:.1} MB of delta text, {:.0} events/s, {:.1} MB/s",
        delta_bytes as f64 / 1e6,
        updates as f64 / secs,
        delta_bytes as f64 / 1e6 / secs
    );
    match rss {
        Some(kib) => println!("pi-rpc peak RSS (VmHWM): {:.2} MiB", kib as f64 / 1024.0),
        None => println!("pi-rpc peak RSS (VmHWM): unavailable"),
    }
}
