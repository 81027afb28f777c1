//! MCP costs: start-up with stdio MCP servers configured, and the overhead of an MCP tool call.
//!
//!     cargo build --release && cargo run --release --example bench_mcp [-- RUNS [startup|calls]]
//!
//! Prints figures; asserts nothing about time (`startup` or `calls` runs only that part). The
//! binary is `target/release/pi-rpc` (override with `PI_RPC_BIN`). Servers are configured in the
//! agent dir's `mcp.json` with exposure `direct`. Two echo servers, both serving one tool
//! `echo {text}` → `echo: <text>`:
//! * a minimal stdlib-Python server the benchmark writes into its temp dir, run with the
//!   interpreter `python3` resolves to (past version-manager shims: pyenv's adds ~90 ms to
//!   every start); skipped with a note when there is no `python3`;
//! * this benchmark itself, started with `PI_RPC_BENCH_MCP_SERVER=1` in the entry's `env`: the
//!   same server in Rust (std + serde_json), so the figures show pi-rpc and the pipe rather than
//!   an interpreter's start-up.
//!
//! 1. Start-up (RUNS runs per configuration, default 20, interleaved): spawn → `get_state`
//!    response with 0, 1 and 5 servers (they connect in the background), and spawn → the
//!    answer to a `/mcp` prompt, which waits until every start-up connection has settled (all
//!    servers connected, checked from its notify); peak RSS (VmHWM, as `bench_startup` reads
//!    it) of pi-rpc itself, not its servers, at both points. When the reference pi is installed
//!    (`/work/shared/reference/README.md`), the same for `node cli.js --mode rpc` with the same
//!    `mcp.json` (RUNS / 4 runs, at least 3).
//! 2. Per-call overhead (RUNS / 2 runs, at least 3): one prompt whose scripted replies make tool
//!    calls, prompt → `agent_settled`, with `read` of a small file (no server configured, and
//!    with an idle echo server configured: the baseline) and with `mcp__echo__echo` over each
//!    server; every run first waits for its servers with `/mcp`. Two shapes:
//!    - one call per turn: every call also pays a turn (an HTTP request to the mock LLM, a few
//!      ms), which swamps the call itself, so (±) there is mostly noise on a busy machine; the
//!      `start->end` column (median time from a call's `tool_execution_start` to its
//!      `tool_execution_end` as read here) is the call's own latency;
//!    - turns of several calls, which pi runs concurrently: (±) = (time − baseline time) /
//!      calls is the MCP cost per call, from the medians and from the minimums (the steadier
//!      figure on a small machine).

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use bench_support::{percentile, sorted};
use mock_llm::MockLlm;
use serde_json::{json, Value};

/// Set in an `mcp.json` entry's `env`: this binary then runs as the echo MCP server.
const SERVER_ENV: &str = "PI_RPC_BENCH_MCP_SERVER";
/// The latency shape: this many turns of one call each.
const LATENCY_TURNS: usize = 100;
/// The concurrent shape: BATCH_TURNS turns of BATCH_CALLS calls each.
const BATCH_TURNS: usize = 10;
const BATCH_CALLS: usize = 20;
/// What start-up runs use as models.json: nothing listens on port 9, and nothing asks it.
const DUMMY_MODELS: &str = r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"k","models":[{"id":"m","reasoning":true}]}}}"#;

// ---------------------------------------------------------------- the server side

const ECHO_TOOL: &str = r#"{"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}"#;

/// The echo server in Rust: JSON-RPC lines on stdin/stdout, answered in order on this thread.
fn run_as_server() {
    let tool: Value = serde_json::from_str(ECHO_TOOL).expect("tool");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else {
            continue; // notifications and responses need no answer
        };
        let reply = match method {
            "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "echo", "version": "1.0.0"}}}),
            "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [tool]}}),
            "tools/call" => {
                let text = msg["params"]["arguments"]["text"].as_str().unwrap_or("");
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": format!("echo: {text}")}]}})
            }
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            _ => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601, "message": format!("Method not found: {method}")}}),
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

/// The same server in stdlib Python.
const PYTHON_SERVER: &str = r#"import json, sys
TOOL = json.loads(sys.argv[1])
out = sys.stdout
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    rid, method = msg.get("id"), msg.get("method")
    if rid is None or method is None:
        continue
    if method == "initialize":
        reply = {"result": {"protocolVersion": msg["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "echo", "version": "1.0.0"}}}
    elif method == "tools/list":
        reply = {"result": {"tools": [TOOL]}}
    elif method == "tools/call":
        text = (msg["params"].get("arguments") or {}).get("text", "")
        reply = {"result": {"content": [{"type": "text", "text": "echo: " + str(text)}]}}
    elif method == "ping":
        reply = {"result": {}}
    else:
        reply = {"error": {"code": -32601, "message": "Method not found: " + method}}
    reply.update(jsonrpc="2.0", id=rid)
    out.write(json.dumps(reply) + "\n")
    out.flush()
"#;

// ---------------------------------------------------------------- the benchmark side

/// Which echo server an `mcp.json` entry starts.
#[derive(Clone)]
enum Server {
    /// The Python server, with this interpreter, in this file.
    Python(PathBuf, PathBuf),
    /// This benchmark.
    Rust,
}

impl Server {
    fn entry(&self) -> Value {
        match self {
            Server::Python(py, script) => json!({"command": py, "args": [script, ECHO_TOOL],
                                                 "exposure": "direct"}),
            Server::Rust => json!({"command": std::env::current_exe().expect("current exe"),
                                   "env": {SERVER_ENV: "1"}, "exposure": "direct"}),
        }
    }
}

/// A configuration: its label, its servers (named `echo`, or `echo0`… when several) and the
/// agent dir holding its `mcp.json`.
struct Config {
    label: String,
    servers: usize,
    dir: PathBuf,
}

fn config(key: &str, label: &str, server: Option<&Server>, count: usize) -> Config {
    let dir = bench_support::agent_dir(&format!("mcp-{key}"), DUMMY_MODELS);
    std::fs::write(dir.join("small.txt"), "one line\n").expect("small.txt");
    if let Some(server) = server.filter(|_| count > 0) {
        let servers: serde_json::Map<String, Value> = (0..count)
            .map(|i| {
                let name = if count == 1 {
                    "echo".to_string()
                } else {
                    format!("echo{i}")
                };
                (name, server.entry())
            })
            .collect();
        let mcp = json!({ "mcpServers": servers });
        std::fs::write(dir.join("mcp.json"), mcp.to_string()).expect("mcp.json");
    }
    Config {
        label: label.to_string(),
        servers: if server.is_some() { count } else { 0 },
        dir,
    }
}

/// The agent under test: pi-rpc, or the reference pi.
enum Agent {
    PiRpc(PathBuf),
    Pi(PathBuf, PathBuf),
}

impl Agent {
    fn spawn(&self, dir: &Path, args: &[&str]) -> Child {
        match self {
            Agent::PiRpc(bin) => bench_support::spawn_rpc_logged(bin, dir, args),
            Agent::Pi(node, cli) => bench_support::spawn_reference_rpc(node, cli, dir, args),
        }
    }
}

/// A spawned agent: its stdin and line reader.
struct Proc {
    child: Child,
    stdin: std::process::ChildStdin,
    out: BufReader<std::process::ChildStdout>,
    line: String,
}

impl Proc {
    fn new(mut child: Child) -> Proc {
        let stdin = child.stdin.take().expect("stdin");
        let out = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
        Proc {
            child,
            stdin,
            out,
            line: String::new(),
        }
    }

    fn send(&mut self, line: &str) {
        let _ = self.stdin.write_all(line.as_bytes());
        let _ = self.stdin.write_all(b"\n");
        let _ = self.stdin.flush();
    }

    /// Reads lines until `done` accepts one (true) or stdout ends (false); `seen` gets every
    /// line before.
    fn read_until(&mut self, mut seen: impl FnMut(&str), done: impl Fn(&str) -> bool) -> bool {
        loop {
            self.line.clear();
            if self.out.read_line(&mut self.line).unwrap_or(0) == 0 {
                return false;
            }
            if done(&self.line) {
                return true;
            }
            seen(&self.line);
        }
    }

    /// Sends `/mcp` as a prompt and reads up to its response; the notify message it showed.
    fn mcp_status(&mut self) -> Option<String> {
        self.send(r#"{"id":"mcp","type":"prompt","message":"/mcp"}"#);
        let mut status = None;
        let answered = self.read_until(
            |l| {
                if l.contains("\"method\":\"notify\"") {
                    if let Ok(v) = serde_json::from_str::<Value>(l) {
                        status = v["message"].as_str().map(String::from);
                    }
                }
            },
            |l| l.contains("\"id\":\"mcp\"") && l.contains("\"type\":\"response\""),
        );
        if answered {
            status
        } else {
            None
        }
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// One start-up: spawn → `get_state` response and → `/mcp` answer, in ms, and pi-rpc's VmHWM
/// (KiB) at both points.
struct Startup {
    state_ms: f64,
    all_ms: f64,
    rss_state: Option<u64>,
    rss_all: Option<u64>,
}

fn get_state(p: &mut Proc) -> bool {
    p.send(r#"{"id":"s","type":"get_state"}"#);
    p.read_until(|_| {}, |l| l.contains("\"command\":\"get_state\""))
}

fn start_once(agent: &Agent, c: &Config) -> Result<Startup, String> {
    let start = Instant::now();
    let mut p = Proc::new(agent.spawn(&c.dir, &[]));
    if !get_state(&mut p) {
        p.finish();
        return Err(format!(
            "no get_state response: {}",
            bench_support::stderr_head(&c.dir)
        ));
    }
    let state_ms = start.elapsed().as_secs_f64() * 1e3;
    let rss_state = bench_support::peak_rss_kib(p.child.id());
    let status = p.mcp_status();
    let all_ms = start.elapsed().as_secs_f64() * 1e3;
    let rss_all = bench_support::peak_rss_kib(p.child.id());
    p.finish();
    let Some(status) = status else {
        return Err(format!(
            "no /mcp answer: {}",
            bench_support::stderr_head(&c.dir)
        ));
    };
    let connected = status.matches(": connected").count();
    if connected != c.servers {
        return Err(format!(
            "{connected} of {} servers connected: {status:?}",
            c.servers
        ));
    }
    Ok(Startup {
        state_ms,
        all_ms,
        rss_state,
        rss_all,
    })
}

fn mib(kib: &[u64]) -> String {
    if kib.is_empty() {
        return "-".into();
    }
    let mut k = kib.to_vec();
    k.sort_unstable();
    format!("{:5.2} MiB", k[k.len() / 2] as f64 / 1024.0)
}

fn bench_startup(agent: &Agent, configs: &[Config], runs: usize) {
    let mut results: Vec<Vec<Startup>> = configs.iter().map(|_| Vec::new()).collect();
    let mut failed: Vec<Option<String>> = vec![None; configs.len()];
    // Interleaved, so drift (other load, CPU frequency) spreads over every configuration.
    for _ in 0..runs {
        for (i, c) in configs.iter().enumerate() {
            if failed[i].is_some() {
                continue;
            }
            match start_once(agent, c) {
                Ok(s) => results[i].push(s),
                Err(e) => failed[i] = Some(e),
            }
        }
    }
    let base = percentile(
        &sorted(&results[0].iter().map(|s| s.state_ms).collect::<Vec<_>>()),
        0.5,
    );
    println!(
        "   {:<24} {:>36}   {:>28}   {:>21}",
        "", "spawn -> get_state response", "spawn -> all connected (/mcp)", "peak RSS: state / all"
    );
    for (i, c) in configs.iter().enumerate() {
        if let Some(err) = &failed[i] {
            println!("   {:<24} failed: {err}", c.label);
            continue;
        }
        let r = &results[i];
        let state = sorted(&r.iter().map(|s| s.state_ms).collect::<Vec<_>>());
        let all = sorted(&r.iter().map(|s| s.all_ms).collect::<Vec<_>>());
        let rss_state: Vec<u64> = r.iter().filter_map(|s| s.rss_state).collect();
        let rss_all: Vec<u64> = r.iter().filter_map(|s| s.rss_all).collect();
        println!(
            "   {:<24} median {:7.2} ms ({:+6.2}), min {:7.2} ms   median {:7.2} ms, min {:7.2} ms   {} / {}",
            c.label,
            percentile(&state, 0.5),
            percentile(&state, 0.5) - base,
            percentile(&state, 0.0),
            percentile(&all, 0.5),
            percentile(&all, 0.0),
            mib(&rss_state),
            mib(&rss_all),
        );
    }
}

/// The scripted replies of a run: `turns` replies of `calls` calls of `tool`, then text.
fn tool_replies(run: usize, tool: &str, turns: usize, calls: usize) -> Vec<Value> {
    let input = if tool == "read" {
        json!({"path": "small.txt"})
    } else {
        json!({"text": "hi"})
    };
    let mut replies: Vec<Value> = (0..turns)
        .map(|t| {
            let blocks: Vec<Value> = (0..calls)
                .map(|c| {
                    json!({"type": "tool_call", "id": format!("toolu_{run}_{t}_{c}"),
                           "name": tool, "input": input})
                })
                .collect();
            json!({"blocks": blocks, "chunk_size": 64})
        })
        .collect();
    replies.push(json!({"blocks": [{"type": "text", "text": "Done."}], "chunk_size": 64}));
    replies
}

/// What one run measured.
struct Run {
    /// Prompt written → `agent_settled` read.
    elapsed: Duration,
    /// `tool_execution_end` records.
    ends: usize,
    /// The median time from a call's `tool_execution_start` to its `tool_execution_end`, as
    /// read here, in µs.
    span: f64,
}

/// One pi-rpc process, one prompt, after `/mcp` has waited for the servers; an error when a
/// tool call failed.
fn run_once(bin: &Path, c: &Config, replies: Vec<Value>) -> Result<Run, String> {
    let mock = MockLlm::start(json!({ "replies": replies }));
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(),
        "api": "anthropic-messages", "apiKey": "bench-key",
        "models": [{"id": "bench-model", "contextWindow": 200000, "maxTokens": 8192}]}}});
    std::fs::write(c.dir.join("models.json"), models.to_string()).expect("models.json");
    let args = ["--provider", "mock", "--model", "bench-model"];
    let mut p = Proc::new(bench_support::spawn_rpc_logged(bin, &c.dir, &args));
    if !get_state(&mut p) || p.mcp_status().is_none() {
        p.finish();
        return Err(bench_support::stderr_head(&c.dir));
    }
    let t0 = Instant::now();
    p.send(r#"{"id":"p","type":"prompt","message":"Call the tool many times."}"#);
    let (mut ends, mut errors) = (0, Vec::new());
    let mut started: HashMap<String, Instant> = HashMap::new();
    let mut spans = Vec::new();
    let settled = p.read_until(
        |l| {
            if l.starts_with("{\"type\":\"tool_execution_start\"") {
                started.insert(call_id(l), Instant::now());
            } else if l.starts_with("{\"type\":\"tool_execution_end\"") {
                ends += 1;
                if let Some(t) = started.remove(&call_id(l)) {
                    spans.push(t.elapsed().as_secs_f64() * 1e6);
                }
                if l.contains("\"isError\":true") && errors.is_empty() {
                    errors.push(l.trim_end().chars().take(300).collect::<String>());
                }
            }
        },
        |l| l.starts_with("{\"type\":\"agent_settled\""),
    );
    let elapsed = t0.elapsed();
    p.finish();
    if !settled {
        return Err(format!(
            "stdout closed: {}",
            bench_support::stderr_head(&c.dir)
        ));
    }
    if let Some(e) = errors.first() {
        return Err(format!("a tool call failed: {e}"));
    }
    Ok(Run {
        elapsed,
        ends,
        span: percentile(&sorted(&spans), 0.5),
    })
}

/// The `toolCallId` of a `tool_execution_*` line.
fn call_id(line: &str) -> String {
    let key = "\"toolCallId\":\"";
    line.find(key)
        .map(|i| &line[i + key.len()..])
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_string()
}

/// One workload shape under each `(config, tool)`; the second entry is the baseline.
fn bench_calls(bin: &Path, runs: usize, turns: usize, calls: usize, rows: &[(&Config, &str)]) {
    let n = turns * calls;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut spans: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut failed: Vec<Option<String>> = vec![None; rows.len()];
    let mut run = 0;
    for round in 0..runs {
        // A different configuration goes first in each round.
        for k in 0..rows.len() {
            let i = (round + k) % rows.len();
            if failed[i].is_some() {
                continue;
            }
            run += 1;
            let (c, tool) = rows[i];
            match run_once(bin, c, tool_replies(run, tool, turns, calls)) {
                Ok(r) if r.ends != n => {
                    failed[i] = Some(format!("{} tool results, expected {n}", r.ends));
                }
                Ok(r) => {
                    times[i].push(r.elapsed.as_secs_f64() * 1e6);
                    spans[i].push(r.span);
                }
                Err(e) => failed[i] = Some(e),
            }
        }
    }
    let stats = |t: &[f64]| {
        let t = sorted(t);
        (percentile(&t, 0.5), percentile(&t, 0.0))
    };
    let (base, base_min) = stats(&times[1]);
    for (i, (c, tool)) in rows.iter().enumerate() {
        let label = format!("{tool}, {}", c.label);
        if let Some(err) = &failed[i] {
            println!("   {label:<42} failed: {err}");
            continue;
        }
        let (median, min) = stats(&times[i]);
        let per = |t: f64| t / n as f64;
        println!(
            "   {label:<42} median {:7.2} ms = {:6.1} µs/call ({:+6.1}) | min {:7.2} ms = {:6.1} µs/call ({:+6.1}) | start->end {:6.1} µs",
            median / 1e3,
            per(median),
            per(median - base),
            min / 1e3,
            per(min),
            per(min - base_min),
            stats(&spans[i]).0,
        );
    }
}

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        run_as_server();
        return;
    }
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    if cfg!(debug_assertions) {
        println!("(debug build: run with --release for meaningful figures)");
    }
    let only = std::env::args().nth(2);
    let part = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let bin = bench_support::release_binary();
    let scratch = bench_support::agent_dir("mcp-servers", "{}");
    let python = bench_support::python3().map(|py| {
        let script = scratch.join("echo_mcp.py");
        std::fs::write(&script, PYTHON_SERVER).expect("echo_mcp.py");
        Server::Python(py, script)
    });
    match &python {
        Some(Server::Python(py, _)) => println!("python3: {}", py.display()),
        _ => println!("(python3 not found: no Python server figures)"),
    }
    if part("startup") {
        bench_startup_all(&bin, python.as_ref(), runs);
    }
    if part("calls") {
        bench_calls_all(&bin, python.as_ref(), (runs / 2).max(3));
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Part 1, for pi-rpc and, when installed, the reference pi.
fn bench_startup_all(bin: &Path, python: Option<&Server>, runs: usize) {
    let rust = Server::Rust;
    let mut configs = vec![config("s0", "0 servers", None, 0)];
    if let Some(py) = python {
        configs.push(config("s1py", "1 server (python3)", Some(py), 1));
        configs.push(config("s5py", "5 servers (python3)", Some(py), 5));
    }
    configs.push(config("s1rs", "1 server (Rust)", Some(&rust), 1));
    configs.push(config("s5rs", "5 servers (Rust)", Some(&rust), 5));
    println!("1. start-up, pi-rpc ({runs} runs each; (±) against 0 servers)");
    bench_startup(&Agent::PiRpc(bin.to_path_buf()), &configs, runs);
    match bench_support::reference_pi() {
        Some((node, cli)) => {
            let pi_runs = (runs / 4).max(3);
            println!("   the reference pi 1.6.0, same mcp.json ({pi_runs} runs each):");
            let pi_configs: Vec<Config> = configs
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let dir = bench_support::agent_dir(&format!("mcp-pi{i}"), DUMMY_MODELS);
                    if let Ok(mcp) = std::fs::read(c.dir.join("mcp.json")) {
                        std::fs::write(dir.join("mcp.json"), mcp).expect("mcp.json");
                    }
                    Config {
                        label: c.label.clone(),
                        servers: c.servers,
                        dir,
                    }
                })
                .collect();
            bench_startup(&Agent::Pi(node, cli), &pi_configs, pi_runs);
            for c in &pi_configs {
                let _ = std::fs::remove_dir_all(&c.dir);
            }
        }
        None => println!("   (the reference pi is not installed: no comparison)"),
    }
    for c in &configs {
        let _ = std::fs::remove_dir_all(&c.dir);
    }
}

/// Part 2.
fn bench_calls_all(bin: &Path, python: Option<&Server>, runs: usize) {
    let rust = Server::Rust;
    let none = config("c-none", "no MCP server", None, 0);
    let idle = config("c-idle", "idle echo server (Rust)", Some(&rust), 1);
    let over_rust = config("c-rs", "Rust server", Some(&rust), 1);
    let over_py = python.map(|py| config("c-py", "python3 server", Some(py), 1));
    let mut rows: Vec<(&Config, &str)> = vec![(&none, "read"), (&idle, "read")];
    if let Some(c) = &over_py {
        rows.push((c, "mcp__echo__echo"));
    }
    rows.push((&over_rust, "mcp__echo__echo"));
    println!(
        "2. per call: prompt -> agent_settled ({runs} runs each; (±) = per call against `read` with an idle server)"
    );
    println!("   a. {LATENCY_TURNS} turns x 1 call");
    bench_calls(bin, runs, LATENCY_TURNS, 1, &rows);
    println!("   b. {BATCH_TURNS} turns x {BATCH_CALLS} calls (a turn's calls run concurrently)");
    bench_calls(bin, runs, BATCH_TURNS, BATCH_CALLS, &rows);
    for c in [&none, &idle, &over_rust].into_iter().chain(&over_py) {
        let _ = std::fs::remove_dir_all(&c.dir);
    }
}
