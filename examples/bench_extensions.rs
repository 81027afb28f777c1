//! Extension costs: start-up with process extensions, and the latency an awaited event adds.
//!
//!     cargo build --release && cargo run --release --example bench_extensions [-- RUNS]
//!
//! Prints figures; asserts nothing about time. The binary is `target/release/pi-rpc` (override
//! with `PI_RPC_BIN`). The extension is this benchmark itself: started with
//! `PI_RPC_BENCH_EXTENSION=<events>` in its environment (a manifest's `env`), it is a minimal
//! protocol-1 extension (std + serde_json) subscribing to the comma-separated events and
//! answering every request with `null`, so the figures are pi-rpc's and the pipe's, not a
//! language runtime's start-up.
//!
//! 1. Start-up: spawn → `get_state` response with 0, 1 and 5 extensions (`-e <manifest>`), RUNS
//!    runs each (default 20), median / p90 / min. Also 1 minimal Python extension, when
//!    `python3` is on `PATH`, for comparison.
//! 2. Added latency per awaited event round trip: one prompt whose scripted replies make TURNS
//!    turns of CALLS `read` tool calls each (20 × 20), then a text reply; prompt → `agent_settled`
//!    with no extension, with one that subscribes to nothing, with one subscribed to `tool_call`,
//!    and with one subscribed to `turn_start`, `tool_call`, `tool_execution_start` and
//!    `tool_execution_end`. Per-event cost = (time − time without extension) / events sent to
//!    the extension (counted from stdout: one `tool_call` per `tool_execution_start`), from the
//!    medians and from the minimums (tool runs on a small machine are noisy; the minimums are
//!    the steadier figure).
//! 3. The same for a single streamed reply of DELTAS text deltas (3000) with an awaited
//!    `message_update` subscription: one HTTP request, no tools, so the difference is almost
//!    only the round trips.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mock_llm::MockLlm;
use serde_json::{json, Value};

/// Set in a manifest's `env`: this binary then runs as the extension.
const EXT_ENV: &str = "PI_RPC_BENCH_EXTENSION";
const TURNS: usize = 20;
const CALLS: usize = 20;
const DELTAS: usize = 3000;

// ---------------------------------------------------------------- the extension side

/// A minimal protocol-1 extension: registers the subscriptions in `events` and answers every
/// host request with `null`, in order, on this thread.
fn run_as_extension(events: &str) {
    let subscriptions: Vec<Value> = events
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| json!({"event": e}))
        .collect();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg["id"].as_str() else {
            continue; // notifications (cancel, flags, ...) need no answer
        };
        let reply = match msg["type"].as_str() {
            Some("initialize") => json!({"type": "result", "id": id, "ok": true, "value": {
                "protocol": 1,
                "units": [{"ext": msg["units"][0]["ext"], "subscriptions": subscriptions}]}}),
            Some("event" | "command" | "tool") => {
                json!({"type": "result", "id": id, "ok": true, "value": null})
            }
            _ => continue,
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

// ---------------------------------------------------------------- the benchmark side

const PYTHON_EXTENSION: &str = r#"import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "initialize":
        unit = {"ext": msg["units"][0]["ext"]}
        print(json.dumps({"type": "result", "id": msg["id"], "ok": True,
                          "value": {"protocol": 1, "units": [unit]}}), flush=True)
    elif "id" in msg and msg.get("type") in ("event", "command", "tool"):
        print(json.dumps({"type": "result", "id": msg["id"], "ok": True, "value": None}), flush=True)
"#;

/// Writes `<dir>/<name>.ext.json` starting this benchmark as an extension subscribed to
/// `events`; returns its path.
fn self_manifest(dir: &Path, name: &str, events: &str) -> String {
    let exe = std::env::current_exe().expect("current exe");
    let manifest = json!({"command": [exe], "protocol": 1, "env": {EXT_ENV: events}});
    let path = dir.join(format!("{name}.ext.json"));
    std::fs::write(&path, manifest.to_string()).expect("manifest");
    path.to_string_lossy().into_owned()
}

fn python_manifest(dir: &Path) -> Option<String> {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    std::fs::write(dir.join("min_ext.py"), PYTHON_EXTENSION).expect("min_ext.py");
    let path = dir.join("python.ext.json");
    let manifest = json!({"command": ["python3", "./min_ext.py"], "protocol": 1});
    std::fs::write(&path, manifest.to_string()).expect("manifest");
    Some(path.to_string_lossy().into_owned())
}

/// `bin --mode rpc --no-session <args>` in `dir` (agent dir, home and cwd), stderr to
/// `<dir>/stderr.txt` so a failed start can be shown.
fn spawn(bin: &Path, dir: &Path, args: &[String]) -> Child {
    let stderr = std::fs::File::create(dir.join("stderr.txt")).expect("stderr file");
    bench_support::spawn_rpc_with_stderr(bin, dir, args, Stdio::from(stderr))
}

fn stderr_of(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    text.lines().take(3).collect::<Vec<_>>().join(" | ")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn e_args(manifests: &[String]) -> Vec<String> {
    manifests
        .iter()
        .flat_map(|m| ["-e".to_string(), m.clone()])
        .collect()
}

/// Spawn → `get_state` response, in ms; `Err` with pi-rpc's stderr when it did not answer.
fn start_once(bin: &Path, dir: &Path, args: &[String]) -> Result<f64, String> {
    let start = Instant::now();
    let mut child = spawn(bin, dir, args);
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(b"{\"id\":\"1\",\"type\":\"get_state\"}\n");
    let _ = stdin.flush();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    // Extension UI or errors may come first; the response is the line naming get_state.
    let elapsed = loop {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            drop(stdin);
            let _ = child.wait();
            return Err(stderr_of(dir));
        }
        if line.contains("\"command\":\"get_state\"") {
            break start.elapsed();
        }
    };
    drop(stdin);
    let _ = child.wait();
    Ok(elapsed.as_secs_f64() * 1000.0)
}

fn bench_startup(bin: &Path, runs: usize) {
    println!("1. start-up: spawn -> get_state response ({runs} runs each)");
    let dir = bench_support::agent_dir(
        "ext-startup",
        r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"k","models":[{"id":"m","reasoning":true}]}}}"#,
    );
    let one = vec![self_manifest(&dir, "ext0", "")];
    let five: Vec<String> = (0..5)
        .map(|i| self_manifest(&dir, &format!("ext{i}"), ""))
        .collect();
    let mut configs: Vec<(String, Vec<String>)> = vec![
        ("0 extensions".into(), Vec::new()),
        ("1 extension (Rust, std)".into(), one),
        ("5 extensions (Rust, std)".into(), five),
    ];
    match python_manifest(&dir) {
        Some(py) => configs.push(("1 extension (python3)".into(), vec![py])),
        None => println!("   (python3 not found: no Python figure)"),
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut failed: Vec<Option<String>> = vec![None; configs.len()];
    // Interleaved, so drift (other load, CPU frequency) spreads over every configuration.
    for _ in 0..runs {
        for (i, (_, manifests)) in configs.iter().enumerate() {
            if failed[i].is_some() {
                continue;
            }
            match start_once(bin, &dir, &e_args(manifests)) {
                Ok(ms) => times[i].push(ms),
                Err(e) => failed[i] = Some(e),
            }
        }
    }
    let base = {
        let mut t = times[0].clone();
        t.sort_by(f64::total_cmp);
        percentile(&t, 0.5)
    };
    for (i, (label, _)) in configs.iter().enumerate() {
        if let Some(err) = &failed[i] {
            println!("   {label:<26} did not start: {err}");
            continue;
        }
        let mut t = times[i].clone();
        t.sort_by(f64::total_cmp);
        let median = percentile(&t, 0.5);
        println!(
            "   {label:<26} median {median:7.2} ms (+{:6.2}), p90 {:7.2} ms, min {:7.2} ms",
            median - base,
            percentile(&t, 0.9),
            t.first().copied().unwrap_or(f64::NAN),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The scripted replies of the tool workload: TURNS replies of CALLS `read` calls, then text.
fn tool_replies(run: usize) -> Vec<Value> {
    let mut replies: Vec<Value> = (0..TURNS)
        .map(|t| {
            let blocks: Vec<Value> = (0..CALLS)
                .map(|c| {
                    json!({"type": "tool_call", "id": format!("toolu_{run}_{t}_{c}"),
                           "name": "read", "input": {"path": "small.txt"}})
                })
                .collect();
            json!({"blocks": blocks, "chunk_size": 64})
        })
        .collect();
    replies.push(json!({"blocks": [{"type": "text", "text": "Done reading."}], "chunk_size": 64}));
    replies
}

/// The scripted reply of the streaming workload: DELTAS one-character text deltas.
fn stream_replies(_run: usize) -> Vec<Value> {
    let text: String = (0..DELTAS)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    vec![json!({"blocks": [{"type": "text", "text": text}], "chunk_size": 1})]
}

/// A scripted LLM serving `replies`, with `models.json` in `dir` pointing at it.
fn start_mock(dir: &Path, replies: Vec<Value>) -> MockLlm {
    let mock = MockLlm::start(json!({"replies": replies}));
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(),
        "api": "anthropic-messages", "apiKey": "bench-key",
        "models": [{"id": "bench-model", "contextWindow": 200000, "maxTokens": 8192}]}}});
    std::fs::write(dir.join("models.json"), models.to_string()).expect("models.json");
    mock
}

/// What one prompt run put on stdout.
#[derive(Default)]
struct RunCounts {
    turn_start: usize,
    tool_start: usize,
    tool_end: usize,
    message_update: usize,
    extension_errors: usize,
}

/// One pi-rpc process, one prompt: prompt written → `agent_settled` read, and the counts.
fn run_once(bin: &Path, dir: &Path, args: &[String]) -> Result<(Duration, RunCounts), String> {
    let mut child = spawn(bin, dir, args);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
    let mut line = String::new();
    // Wait until start-up (extension initialize included) is over.
    let _ = stdin.write_all(b"{\"id\":\"s\",\"type\":\"get_state\"}\n");
    let _ = stdin.flush();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            return Err(stderr_of(dir));
        }
        if line.contains("\"command\":\"get_state\"") {
            break;
        }
    }
    let t0 = Instant::now();
    let _ = stdin.write_all(
        b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"Read small.txt many times.\"}\n",
    );
    let _ = stdin.flush();
    let mut c = RunCounts::default();
    let elapsed = loop {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            return Err(format!("stdout closed during the run: {}", stderr_of(dir)));
        }
        let l = line.as_str();
        if l.starts_with("{\"type\":\"message_update\"") {
            c.message_update += 1;
        } else if l.starts_with("{\"type\":\"tool_execution_start\"") {
            c.tool_start += 1;
        } else if l.starts_with("{\"type\":\"tool_execution_end\"") {
            c.tool_end += 1;
        } else if l.starts_with("{\"type\":\"turn_start\"") {
            c.turn_start += 1;
        } else if l.starts_with("{\"type\":\"extension_error\"") {
            c.extension_errors += 1;
            if c.extension_errors == 1 {
                eprintln!("   extension_error: {}", l.trim_end());
            }
        } else if l.starts_with("{\"type\":\"agent_settled\"") {
            break t0.elapsed();
        }
    };
    drop(stdin);
    let _ = child.wait();
    Ok((elapsed, c))
}

/// Which events of a run reached the extension, counted from stdout.
type Events = fn(&RunCounts) -> usize;

/// One workload (`replies` builds the script of a run; `tools` is the number of tool calls a
/// run must show) under each configuration `(label, subscriptions or None for no extension,
/// events the extension receives)`.
fn bench_workload(
    bin: &Path,
    runs: usize,
    replies: fn(usize) -> Vec<Value>,
    tools: usize,
    configs: &[(&str, Option<&str>, Events)],
) {
    let dir = bench_support::agent_dir("ext-events", "{}");
    std::fs::write(dir.join("small.txt"), "one line\n").expect("small.txt");
    let manifests: Vec<Option<String>> = configs
        .iter()
        .enumerate()
        .map(|(i, (_, subs, _))| subs.map(|s| self_manifest(&dir, &format!("sub{i}"), s)))
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut events: Vec<usize> = vec![0; configs.len()];
    let mut failed: Vec<Option<String>> = vec![None; configs.len()];
    let mut run = 0usize;
    for round in 0..runs {
        // A different configuration goes first in each round, so whatever favours a position
        // (the first run after a pause, CPU frequency) is spread over all of them.
        for k in 0..configs.len() {
            let i = (round + k) % configs.len();
            if failed[i].is_some() {
                continue;
            }
            run += 1;
            let mock = start_mock(&dir, replies(run));
            let mut args: Vec<String> = ["--provider", "mock", "--model", "bench-model"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            if let Some(m) = &manifests[i] {
                args.extend(e_args(std::slice::from_ref(m)));
            }
            match run_once(bin, &dir, &args) {
                Ok((d, counts)) => {
                    assert_eq!(counts.tool_start, tools, "tool calls per run");
                    times[i].push(d.as_secs_f64() * 1e6);
                    events[i] = (configs[i].2)(&counts);
                }
                Err(e) => failed[i] = Some(e),
            }
            drop(mock);
        }
        if failed.iter().skip(1).all(Option::is_some) {
            break;
        }
    }
    let median_of = |t: &[f64]| {
        let mut t = t.to_vec();
        t.sort_by(f64::total_cmp);
        percentile(&t, 0.5)
    };
    let min_of = |t: &[f64]| t.iter().copied().fold(f64::INFINITY, f64::min);
    let (base, base_min) = (median_of(&times[0]), min_of(&times[0]));
    println!("   (added = this configuration's time - the time without extension; per event = added / events)");
    for (i, (label, _, _)) in configs.iter().enumerate() {
        if let Some(err) = &failed[i] {
            println!("   {label:<28} did not run: {err}");
            continue;
        }
        let (median, min) = (median_of(&times[i]), min_of(&times[i]));
        let per_event = |added: f64| {
            if events[i] > 0 {
                format!("{:6.1} µs/event", added / events[i] as f64)
            } else {
                "-".to_string()
            }
        };
        println!(
            "   {label:<28} {:>4} events/run | median {:7.2} ms, added {:+7.2} ms, {} | min {:7.2} ms, added {:+7.2} ms, {}",
            events[i],
            median / 1e3,
            (median - base) / 1e3,
            per_event(median - base),
            min / 1e3,
            (min - base_min) / 1e3,
            per_event(min - base_min),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    if let Ok(events) = std::env::var(EXT_ENV) {
        run_as_extension(&events);
        return;
    }
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    if cfg!(debug_assertions) {
        println!("(debug build: run with --release for meaningful figures)");
    }
    let bin: PathBuf = bench_support::release_binary();
    bench_startup(&bin, runs);
    let runs = (runs / 2).max(3);
    println!(
        "2. added latency per awaited event: one prompt, {TURNS} turns x {CALLS} read calls + a text reply ({runs} runs each)"
    );
    let all = "turn_start,tool_call,tool_execution_start,tool_execution_end";
    bench_workload(
        &bin,
        runs,
        tool_replies,
        TURNS * CALLS,
        &[
            ("no extension", None, |_| 0),
            ("extension, no subscriptions", Some(""), |_| 0),
            ("tool_call", Some("tool_call"), |c| c.tool_start),
            ("4 events (turn/tool)", Some(all), |c| {
                c.turn_start + 2 * c.tool_start + c.tool_end
            }),
        ],
    );
    println!(
        "3. the same with one streamed reply of {DELTAS} text deltas and awaited message_update ({runs} runs each)"
    );
    bench_workload(
        &bin,
        runs,
        stream_replies,
        0,
        &[
            ("no extension", None, |_| 0),
            ("message_update (awaited)", Some("message_update"), |c| {
                c.message_update
            }),
        ],
    );
}
