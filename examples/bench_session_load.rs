//! Session loading benchmark: generates session files of 1k, 10k and 100k entries (a realistic
//! mix of ~1 KB user / assistant / toolResult messages) in a temp dir, loads each one in a child
//! process of its own (so peak memory figures do not mix), and prints load time and peak RSS.
//!
//! ```sh
//! cargo run --example bench_session_load            # all sizes
//! cargo run --example bench_session_load -- 10000   # one size
//! ```
//! Figures from a debug build are several times slower than a release build.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pi_rpc::session::SessionManager;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(Path::new(&args[2]));
        return;
    }
    let sizes: Vec<usize> = match args.get(1) {
        Some(n) => vec![n.parse().expect("a number of entries")],
        None => vec![1_000, 10_000, 100_000],
    };
    let dir = std::env::temp_dir().join(format!("pi-rpc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = std::env::current_exe().expect("own path");
    println!(
        "{:>8} {:>9} {:>9} {:>12} {:>12} {:>9} {:>9} {:>11} {:>9} {:>11}",
        "entries",
        "file MB",
        "load ms",
        "peak RSS MB",
        "base RSS MB",
        "RSS/file",
        "tree ms",
        "entries ms",
        "stats ms",
        "context ms"
    );
    for n in sizes {
        let path = dir.join(format!("bench-{n}.jsonl"));
        generate(&path, n);
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let out = Command::new(&exe)
            .arg("--child")
            .arg(&path)
            .output()
            .expect("child run");
        let text = String::from_utf8_lossy(&out.stdout);
        let f: Vec<f64> = text
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        if f.len() < 7 {
            eprintln!(
                "child failed: {}{}",
                text,
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        }
        let (load_ms, peak_kb, base_kb, tree_ms, ctx_ms) = (f[0], f[1], f[2], f[3], f[4]);
        let (entries_ms, stats_ms) = (f[5], f[6]);
        let mb = size as f64 / 1e6;
        println!(
            "{:>8} {:>9.1} {:>9.1} {:>12.1} {:>12.1} {:>9.2} {:>9.1} {:>11.1} {:>9.1} {:>11.1}",
            n,
            mb,
            load_ms,
            peak_kb / 1024.0,
            base_kb / 1024.0,
            (peak_kb - base_kb) * 1024.0 / size as f64,
            tree_ms,
            entries_ms,
            stats_ms,
            ctx_ms
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `VmHWM` (peak resident set) of this process in kB.
fn peak_rss_kb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0.0)
}

/// Loads the file; prints `load_ms peak_kb base_kb tree_ms context_ms entries_ms stats_ms`.
fn child(path: &Path) {
    let base = peak_rss_kb();
    let t = Instant::now();
    let sm = SessionManager::open(path, None, Path::new("/")).expect("load");
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    let peak = peak_rss_kb();
    let t = Instant::now();
    let tree = sm.tree_json_text();
    let tree_ms = t.elapsed().as_secs_f64() * 1000.0;
    drop(tree);
    let t = Instant::now();
    let entries = sm.entries_json_text(None).expect("entries");
    let entries_ms = t.elapsed().as_secs_f64() * 1000.0;
    drop(entries);
    let t = Instant::now();
    let totals = sm.totals();
    let stats_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(totals.total_messages > 0);
    let t = Instant::now();
    let ctx = sm.context();
    let ctx_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(!ctx.messages.is_empty());
    println!("{load_ms:.1} {peak} {base} {tree_ms:.1} {ctx_ms:.1} {entries_ms:.1} {stats_ms:.1}");
}

fn text_of(len: usize, seed: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "session",
        "file",
        "loads",
        "quickly",
        "because",
        "entries",
        "are",
        "kept",
        "as",
        "text",
        "and",
        "parsed",
        "lazily",
        "when",
        "needed",
        "ünïcödé",
        "naïve",
        "\"quoted\"",
        "line\nbreak",
        "tab\there",
    ];
    let mut s = String::with_capacity(len + 16);
    let mut i = seed;
    while s.len() < len {
        s.push_str(WORDS[i % WORDS.len()]);
        s.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

/// Writes a session of `n` entries: a header, setup entries, then user → assistant (sometimes
/// with a tool call) → toolResult → assistant … in one chain.
fn generate(path: &PathBuf, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let header = json!({"type":"session","version":3,"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/user/project"});
    writeln!(f, "{header}").expect("write");
    let mut parent: Option<String> = None;
    let mut ts: u64 = 1_767_225_600_000;
    for i in 0..n {
        let id = format!(
            "{:08x}",
            (i as u64).wrapping_mul(2_654_435_761) & 0xffff_ffff
        );
        ts += 1234;
        let iso = pi_rpc::util::iso_from_ms(ts);
        let message = match i % 4 {
            0 => {
                json!({"role":"user","content":[{"type":"text","text":text_of(700, i)}],"timestamp":ts})
            }
            1 => json!({"role":"assistant","content":[
                    {"type":"thinking","thinking":text_of(200, i),"thinkingSignature":"sig"},
                    {"type":"text","text":text_of(300, i)},
                    {"type":"toolCall","id":format!("toolu_{i}"),"name":"bash","arguments":{"command":"ls -la src/"}}],
                "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
                "usage":{"input":1234,"output":567,"cacheRead":8900,"cacheWrite":0,"totalTokens":10701,
                    "cost":{"input":0.003702,"output":0.008505,"cacheRead":0.00267,"cacheWrite":0,"total":0.014877,"totalFromProvider":false},"cacheWrite1h":0},
                "stopReason":"toolUse","timestamp":ts,"responseId":format!("msg_{i}"),"rawStopReason":"tool_use","durationMs":1532,"thinkingLevel":"medium"}),
            2 => {
                json!({"role":"toolResult","toolCallId":format!("toolu_{}", i - 1),"toolName":"bash",
                "content":[{"type":"text","text":text_of(800, i)}],"isError":false,"durationMs":15,"timestamp":ts})
            }
            _ => json!({"role":"assistant","content":[{"type":"text","text":text_of(700, i)}],
                "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
                "usage":{"input":1500,"output":300,"cacheRead":9000,"cacheWrite":0,"totalTokens":10800,
                    "cost":{"input":0.0045,"output":0.0045,"cacheRead":0.0027,"cacheWrite":0,"total":0.0117,"totalFromProvider":false},"cacheWrite1h":0},
                "stopReason":"stop","timestamp":ts,"responseId":format!("msg_{i}"),"rawStopReason":"end_turn","durationMs":2100,"thinkingLevel":"medium"}),
        };
        let entry =
            json!({"type":"message","id":id,"parentId":parent,"timestamp":iso,"message":message});
        writeln!(f, "{entry}").expect("write");
        parent = Some(id);
    }
    f.flush().expect("flush");
}
