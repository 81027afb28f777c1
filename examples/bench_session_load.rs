//! Session loading benchmark: generates session files of 1k, 10k and 100k entries (a realistic
//! mix of ~1 KB user / assistant / toolResult messages) in a temp dir, loads each one in a child
//! process of its own (so peak memory figures do not mix), and prints load time and peak RSS.
//!
//! Then the same files are opened end to end through the real binary: `pi-rpc` (built beside this
//! example, `target/<profile>/pi-rpc`) is started, sent `switch_session` to the file, and timed
//! to the response; then `get_state` (sent right after `switch_session`, so it shows whether the
//! processor stays responsive during the load), `get_messages` and a `get_entries`, with the
//! process's peak RSS (`VmHWM`) after each step.
//!
//! ```sh
//! cargo build --release && cargo run --release --example bench_session_load   # all sizes
//! cargo run --release --example bench_session_load -- 10000                    # one size
//! cargo run --release --example bench_session_load -- --generate 100000 big.jsonl  # just a file
//! ```
//! Figures from a debug build are several times slower than a release build.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_rpc::session::SessionManager;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(Path::new(&args[2]));
        return;
    }
    if args.get(1).map(String::as_str) == Some("--generate") {
        // `--generate <entries> <file>`: only write a session file (for profiling by hand).
        let n = args
            .get(2)
            .and_then(|n| n.parse().ok())
            .expect("a number of entries");
        let path = PathBuf::from(args.get(3).expect("a file"));
        let cwd = std::env::current_dir().expect("cwd");
        generate(&path, n, &cwd);
        return;
    }
    let sizes: Vec<usize> = match args.get(1) {
        Some(n) => vec![n.parse().expect("a number of entries")],
        None => vec![1_000, 10_000, 100_000],
    };
    let dir = std::env::temp_dir().join(format!("pi-rpc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = std::env::current_exe().expect("own path");
    let mut files = Vec::new();
    println!(
        "{:>8} {:>9} {:>9} {:>12} {:>12} {:>9} {:>9} {:>11} {:>9} {:>11} {:>11} {:>9}",
        "entries",
        "file MB",
        "load ms",
        "peak RSS MB",
        "base RSS MB",
        "RSS/file",
        "tree ms",
        "entries ms",
        "stats ms",
        "context ms",
        "context MB",
        "ctx/file"
    );
    for n in sizes {
        let path = dir.join(format!("bench-{n}.jsonl"));
        generate(&path, n, &dir);
        files.push((n, path.clone()));
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
        if f.len() < 8 {
            eprintln!(
                "child failed: {}{}",
                text,
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        }
        let (load_ms, peak_kb, base_kb, tree_ms, ctx_ms) = (f[0], f[1], f[2], f[3], f[4]);
        let (entries_ms, stats_ms, ctx_kb) = (f[5], f[6], f[7]);
        let mb = size as f64 / 1e6;
        println!(
            "{:>8} {:>9.1} {:>9.1} {:>12.1} {:>12.1} {:>9.2} {:>9.1} {:>11.1} {:>9.1} {:>11.1} {:>11.1} {:>9.2}",
            n,
            mb,
            load_ms,
            peak_kb / 1024.0,
            base_kb / 1024.0,
            (peak_kb - base_kb) * 1024.0 / size as f64,
            tree_ms,
            entries_ms,
            stats_ms,
            ctx_ms,
            ctx_kb / 1024.0,
            ctx_kb * 1024.0 / size as f64
        );
    }
    switch_bench(&exe, &dir, &files);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pi-rpc` next to this example (`target/<profile>/examples/x` → `target/<profile>/pi-rpc`).
fn agent_binary(exe: &Path) -> Option<PathBuf> {
    let p = exe.parent()?.parent()?.join("pi-rpc");
    p.is_file().then_some(p)
}

/// Times `switch_session` (and what a client does next) through the real binary.
fn switch_bench(exe: &Path, dir: &Path, files: &[(usize, PathBuf)]) {
    let Some(bin) = agent_binary(exe) else {
        println!("\n(switch_session: build the binary first: cargo build --release)");
        return;
    };
    println!("\nswitch_session through {}:", bin.display());
    println!(
        "{:>8} {:>12} {:>13} {:>13} {:>14} {:>13} {:>13} {:>14} {:>13}",
        "entries",
        "idle RSS MB",
        "switch ms",
        "get_state ms",
        "peak RSS MB",
        "RSS/file",
        "messages ms",
        "messages MB",
        "peak RSS MB"
    );
    for (n, path) in files {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(1) as f64;
        match switch_once(&bin, dir, path) {
            Ok(r) => println!(
                "{:>8} {:>12.1} {:>13.1} {:>13.1} {:>14.1} {:>13.2} {:>13.1} {:>14.1} {:>13.1}",
                n,
                r.idle_kb / 1024.0,
                r.switch_ms,
                r.state_ms,
                r.switch_peak_kb / 1024.0,
                (r.switch_peak_kb - r.idle_kb) * 1024.0 / size,
                r.messages_ms,
                r.messages_bytes as f64 / 1e6,
                r.messages_peak_kb / 1024.0,
            ),
            Err(e) => println!("{n:>8} failed: {e}"),
        }
    }
}

struct SwitchFigures {
    idle_kb: f64,
    switch_ms: f64,
    state_ms: f64,
    switch_peak_kb: f64,
    messages_ms: f64,
    messages_bytes: usize,
    messages_peak_kb: f64,
}

fn proc_kb(pid: u32, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0.0)
}

/// A running `pi-rpc` spoken to over pipes.
struct Rpc {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    line: String,
}

impl Rpc {
    fn send(&mut self, cmd: &str) -> Result<(), String> {
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .and_then(|_| self.stdin.flush())
            .map_err(|e| e.to_string())
    }

    /// The next response line: `(id, length)`; a failed response is an error.
    fn next_response(&mut self) -> Result<(String, usize), String> {
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_line(&mut self.line)
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("pi-rpc exited early".into());
            }
            // Only the head of the line is looked at (a get_messages line is ~1 GB for 100k).
            let head: String = self.line.chars().take(200).collect();
            if !head.starts_with("{\"id\":") && !head.contains("\"type\":\"response\"") {
                continue;
            }
            if head.contains("\"success\":false") {
                return Err(self.line.trim().to_string());
            }
            let v: serde_json::Value = if n < 1 << 20 {
                serde_json::from_str(&self.line).map_err(|e| e.to_string())?
            } else {
                // Big responses: the id is the first key; no need to parse the rest.
                let id = head
                    .split('"')
                    .nth(3)
                    .map(str::to_string)
                    .unwrap_or_default();
                return Ok((id, n));
            };
            if v["type"] == "response" {
                return Ok((v["id"].as_str().unwrap_or("").to_string(), n));
            }
        }
    }

    fn wait_for(&mut self, id: &str) -> Result<usize, String> {
        loop {
            let (got, n) = self.next_response()?;
            if got == id {
                return Ok(n);
            }
        }
    }
}

fn switch_once(bin: &Path, dir: &Path, file: &Path) -> Result<SwitchFigures, String> {
    let agent_dir = dir.join("agent");
    let sessions = dir.join("sessions");
    let _ = std::fs::create_dir_all(&agent_dir);
    // A switch may append a thinking_level_change: work on a copy so every run starts alike.
    let copy = dir.join("switch-target.jsonl");
    std::fs::copy(file, &copy).map_err(|e| e.to_string())?;
    let mut child = Command::new(bin)
        .arg("--session-dir")
        .arg(&sessions)
        .env("PI_CODING_AGENT_DIR", &agent_dir)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
    let pid = child.id();
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().ok_or("no stdout")?);
    let mut rpc = Rpc {
        child,
        stdin,
        stdout,
        line: String::new(),
    };
    rpc.send(r#"{"id":"s0","type":"get_state"}"#)?;
    rpc.wait_for("s0")?;
    std::thread::sleep(Duration::from_millis(50));
    let idle_kb = proc_kb(pid, "VmHWM:");
    let path = serde_json::to_string(&copy.to_string_lossy()).map_err(|e| e.to_string())?;
    let t = Instant::now();
    rpc.send(&format!(
        r#"{{"id":"sw","type":"switch_session","sessionPath":{path}}}"#
    ))?;
    rpc.send(r#"{"id":"s1","type":"get_state"}"#)?;
    // The get_state response may come first (the switch runs on the agent thread).
    let (mut state_ms, mut switch_ms) = (None, None);
    while state_ms.is_none() || switch_ms.is_none() {
        let (id, _) = rpc.next_response()?;
        let ms = Some(t.elapsed().as_secs_f64() * 1000.0);
        match id.as_str() {
            "sw" => switch_ms = ms,
            "s1" => state_ms = ms,
            _ => {}
        }
    }
    let switch_peak_kb = proc_kb(pid, "VmHWM:");
    let t = Instant::now();
    rpc.send(r#"{"id":"m","type":"get_messages"}"#)?;
    let messages_bytes = rpc.wait_for("m")?;
    let messages_ms = t.elapsed().as_secs_f64() * 1000.0;
    let messages_peak_kb = proc_kb(pid, "VmHWM:");
    let Rpc {
        mut child, stdin, ..
    } = rpc;
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_file(&copy);
    Ok(SwitchFigures {
        idle_kb,
        switch_ms: switch_ms.unwrap_or(f64::NAN),
        state_ms: state_ms.unwrap_or(f64::NAN),
        switch_peak_kb,
        messages_ms,
        messages_bytes,
        messages_peak_kb,
    })
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

/// `VmRSS` (current resident set) of this process in kB.
fn rss_kb() -> f64 {
    proc_kb(std::process::id(), "VmRSS:")
}

/// Loads the file; prints `load_ms peak_kb base_kb tree_ms context_ms entries_ms stats_ms
/// context_kb`.
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
    let rss_before = rss_kb();
    let t = Instant::now();
    let ctx = sm.context();
    let ctx_ms = t.elapsed().as_secs_f64() * 1000.0;
    let ctx_kb = rss_kb() - rss_before;
    assert!(!ctx.messages.is_empty());
    println!(
        "{load_ms:.1} {peak} {base} {tree_ms:.1} {ctx_ms:.1} {entries_ms:.1} {stats_ms:.1} {ctx_kb}"
    );
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
fn generate(path: &PathBuf, n: usize, cwd: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let header = json!({"type":"session","version":3,"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000","timestamp":"2026-01-01T00:00:00.000Z","cwd":cwd.to_string_lossy()});
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
