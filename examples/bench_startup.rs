//! Start-up benchmark: spawns the release binary N times, sends `get_state`, and prints the
//! median (and p90) time from spawn to the response, plus the peak RSS (VmHWM) of the process.
//!
//!     cargo build --release && cargo run --release --example bench_startup [-- N]
//!
//! The binary is `target/release/pi-rpc` (override with `PI_RPC_BIN`). Each run gets a fresh
//! agent dir with a one-model `models.json` and `--no-session`, like an embedder's pool would.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Write};
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let bin = bench_support::release_binary();
    let dir = bench_support::agent_dir(
        "startup",
        r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"k","models":[{"id":"m","reasoning":true}]}}}"#,
    );

    let mut times_ms = Vec::with_capacity(n);
    let mut rss_kib = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let mut child = bench_support::spawn_rpc(&bin, &dir, &[]);
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"{\"id\":\"1\",\"type\":\"get_state\"}\n")
            .expect("write");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        let elapsed = start.elapsed();
        assert!(line.contains("\"command\":\"get_state\""), "{line}");
        if let Some(kib) = bench_support::peak_rss_kib(child.id()) {
            rss_kib.push(kib);
        }
        drop(stdin);
        let _ = child.wait();
        times_ms.push(elapsed.as_secs_f64() * 1000.0);
    }
    let _ = std::fs::remove_dir_all(&dir);
    times_ms.sort_by(|a, b| a.total_cmp(b));
    rss_kib.sort_unstable();
    let pct = |v: &[f64], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!("runs: {n}");
    println!(
        "spawn -> get_state response: median {:.2} ms, p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
        pct(&times_ms, 0.5),
        pct(&times_ms, 0.9),
        times_ms[0],
        times_ms[times_ms.len() - 1]
    );
    if let (Some(lo), Some(hi)) = (rss_kib.first(), rss_kib.last()) {
        println!(
            "peak RSS (VmHWM): median {:.2} MiB, max {:.2} MiB (min {:.2} MiB)",
            rss_kib[rss_kib.len() / 2] as f64 / 1024.0,
            *hi as f64 / 1024.0,
            *lo as f64 / 1024.0
        );
    }
}
