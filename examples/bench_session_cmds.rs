//! Every session command on large sessions, side by side: pi-rpc (the release binary) and, when
//! the reference pi 1.6.0 is installed (`/work/shared/reference/README.md`), pi itself.
//!
//! ```sh
//! cargo build --release --bin pi-rpc --example bench_session_load --example bench_session_cmds
//! target/release/examples/bench_session_cmds                       # 1k, 10k and 100k entries
//! target/release/examples/bench_session_cmds --sizes 1000,10000    # chosen sizes
//! target/release/examples/bench_session_cmds --no-pi --reps 5      # pi-rpc only; 5 repetitions
//! ```
//!
//! Session files come from `bench_session_load --generate N FILE` (built beside this example):
//! a chain of ~1 KB user / assistant / toolResult messages, 115 MB at 100k entries.
//!
//! What is measured, per agent and size, in one process started with
//! `--mode rpc --provider mock --model bench-model --session-dir <tmp>` (the CLI model is re-applied
//! to every session, so every request goes to the scripted server on 127.0.0.1 that this example
//! runs; no API key for any real provider is set):
//! * **time**: from writing the command line to the whole response line read from stdout (so a
//!   100 MB response includes its transfer through the pipe). Cheap commands are repeated and the
//!   median is shown; expensive ones (at 100k entries everything but `get_state` and
//!   `get_session_stats`) run once by default (`--reps` raises that).
//! * **RSS**: the process's peak RSS during the command: `VmHWM` is reset to the current RSS
//!   (`/proc/<pid>/clear_refs` ← 5) before each repetition and read after it; the largest figure
//!   over the repetitions is shown. It includes what the process already holds (the loaded
//!   session). For pi that is the node process.
//! * `switch_session`: to a fresh copy of the file each time (a switch may append a
//!   `thinking_level_change` to the file).
//! * `fork`: to the last user message (the new session holds every entry before it); after each
//!   fork the process is switched back to the original copy (not timed).
//! * `clone`: of the whole active branch; the next repetition clones the clone.
//! * `export_html`: to a file in the temp dir (`outputPath`), removed afterwards.
//! * `prompt → request`: from writing a `prompt` to the scripted server having read the whole
//!   HTTP request (with the whole context: ~100 MB at 100k entries); then its short reply is
//!   streamed and the run is awaited (`agent_settled`, not timed). RSS covers the whole run.
//!
//! Prints figures, asserts nothing about time. pi's failures are shown as `fail` (its error head
//! below the table).

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

/// How long one command may take before it counts as failed.
const TIMEOUT: Duration = Duration::from_secs(300);
/// How many bytes of each stdout line are kept (ids, types and errors are at the start).
const HEAD: usize = 400;

const COMMANDS: &[&str] = &[
    "switch_session",
    "get_state",
    "get_messages",
    "get_entries",
    "get_tree",
    "get_session_stats",
    "get_fork_messages",
    "export_html",
    "fork",
    "clone",
    "prompt → request",
];

// ------------------------------------------------------------------------------ options

struct Options {
    sizes: Vec<usize>,
    pi: bool,
    /// Repetitions of an expensive command below 100k entries (cheap ones: at least 5).
    reps: usize,
    /// Repetitions of an expensive command at 100k entries and more.
    big_reps: usize,
}

fn options() -> Options {
    let mut o = Options {
        sizes: vec![1_000, 10_000, 100_000],
        pi: true,
        reps: 3,
        big_reps: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sizes" => {
                o.sizes = args
                    .next()
                    .expect("--sizes N,N,...")
                    .split(',')
                    .map(|s| s.trim().parse().expect("a number of entries"))
                    .collect();
            }
            "--no-pi" => o.pi = false,
            "--reps" => {
                o.reps = args.next().and_then(|n| n.parse().ok()).expect("--reps N");
                o.big_reps = o.reps;
            }
            "-h" | "--help" => {
                println!("bench_session_cmds [--sizes 1000,10000,100000] [--no-pi] [--reps N]");
                std::process::exit(0);
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    o
}

// ------------------------------------------------------------------------ scripted server

/// A scripted Anthropic Messages server on 127.0.0.1: reads each request whole, reports the
/// instant it had it (and its size), and answers with a short streamed text reply.
struct Server {
    url: String,
    received: Receiver<(Instant, usize)>,
}

fn start_server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = unbounded();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || serve(stream, &tx));
        }
    });
    Server { url, received: rx }
}

fn serve(stream: TcpStream, tx: &Sender<(Instant, usize)>) {
    let mut reader = BufReader::with_capacity(1 << 20, stream.try_clone().expect("clone"));
    let (mut length, mut chunked) = (0usize, false);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if l.starts_with("transfer-encoding:") && l.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0u8; size + 2];
            if reader.read_exact(&mut chunk).is_err() {
                return;
            }
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
    }
    let _ = tx.send((Instant::now(), body.len()));
    drop(body);
    let ev = |name: &str, data: &str| format!("event: {name}\ndata: {data}\n\n");
    let sse = ev(
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_b","type":"message","role":"assistant","model":"bench-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
    ) + &ev(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    ) + &ev(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
    ) + &ev(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    ) + &ev(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}"#,
    ) + &ev("message_stop", r#"{"type":"message_stop"}"#);
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        sse.len()
    );
    let mut out = stream;
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(sse.as_bytes());
    let _ = out.flush();
}

// ------------------------------------------------------------------------------ the agents

#[derive(Clone)]
enum Agent {
    PiRpc(PathBuf),
    Pi(PathBuf, PathBuf),
}

impl Agent {
    fn name(&self) -> &'static str {
        match self {
            Agent::PiRpc(_) => "pi-rpc",
            Agent::Pi(..) => "pi",
        }
    }
}

/// One line of the agent's stdout: when it was read whole, its length and its first bytes.
struct Line {
    at: Instant,
    len: usize,
    head: String,
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    pid: u32,
    next_id: u64,
}

fn spawn(agent: &Agent, dir: &Path) -> Proc {
    let args = [
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "bench-model",
        "--session-dir",
    ];
    let sessions = dir.join("sessions");
    let stderr = std::fs::File::create(dir.join("stderr.txt")).expect("stderr file");
    let mut cmd = match agent {
        Agent::PiRpc(bin) => Command::new(bin),
        Agent::Pi(node, cli) => {
            let mut c = Command::new(node);
            c.arg(cli);
            c
        }
    };
    cmd.args(args)
        .arg(&sessions)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("PI_CODING_AGENT_DIR", dir.join("agent"))
        .env("PI_TELEMETRY", "0")
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr));
    let mut child = cmd.spawn().expect("spawn the agent");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = bounded(1024);
    std::thread::spawn(move || {
        let mut r = BufReader::with_capacity(1 << 20, stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let at = Instant::now();
                    let head = String::from_utf8_lossy(&buf[..n.min(HEAD)]).into_owned();
                    if tx.send(Line { at, len: n, head }).is_err() {
                        return;
                    }
                    // Keep memory flat between huge responses.
                    if buf.capacity() > 1 << 24 {
                        buf = Vec::new();
                    }
                }
            }
        }
    });
    let pid = child.id();
    Proc {
        child,
        stdin,
        lines: rx,
        pid,
        next_id: 0,
    }
}

impl Proc {
    /// Sends `{"id":…,<fields>}` and waits for its response: (time, response length).
    fn call(&mut self, fields: &str) -> Result<(Duration, usize), String> {
        self.next_id += 1;
        let id = format!("b{}", self.next_id);
        let line = format!("{{\"id\":\"{id}\",{fields}}}\n");
        let t = Instant::now();
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))?;
        let needle = format!("\"id\":\"{id}\"");
        let l = self.wait_line(|h| h.contains(&needle) && h.contains("\"type\":\"response\""))?;
        if l.head.contains("\"success\":false") {
            return Err(l.head);
        }
        Ok((l.at.duration_since(t), l.len))
    }

    /// The next stdout line whose head matches.
    fn wait_line(&mut self, want: impl Fn(&str) -> bool) -> Result<Line, String> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if want(&l.head) => return Ok(l),
                Ok(_) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return Err("timed out".into()),
                Err(_) => return Err("the process exited".into()),
            }
        }
    }

    fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid), "5");
    }

    fn peak_kib(&self) -> Option<u64> {
        bench_support::peak_rss_kib(self.pid)
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn stop(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ----------------------------------------------------------------------------- measuring

/// One cell pair of the table: median time, peak RSS, repetitions, or why it failed.
#[derive(Default, Clone)]
struct Figure {
    ms: Option<f64>,
    rss_kib: Option<u64>,
    reps: usize,
    error: Option<String>,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("string")
}

/// Runs `step` `reps` times with the peak RSS reset before each; `step` returns the time.
fn measure(
    p: &mut Proc,
    reps: usize,
    mut step: impl FnMut(&mut Proc) -> Result<Duration, String>,
) -> Figure {
    let mut times = Vec::new();
    let mut peak = None::<u64>;
    for _ in 0..reps {
        p.reset_peak();
        match step(p) {
            Ok(d) => times.push(d.as_secs_f64() * 1e3),
            Err(e) => {
                return Figure {
                    error: Some(e.trim_end().chars().take(300).collect()),
                    reps: times.len(),
                    ..Figure::default()
                }
            }
        }
        peak = peak.max(p.peak_kib());
    }
    let sorted = bench_support::sorted(&times);
    Figure {
        ms: Some(bench_support::percentile(&sorted, 0.5)),
        rss_kib: peak,
        reps: times.len(),
        error: None,
    }
}

/// A fresh copy of the session file at `<dir>/copies/<name>.jsonl`.
fn copy_of(file: &Path, dir: &Path, name: &str) -> PathBuf {
    let copies = dir.join("copies");
    std::fs::create_dir_all(&copies).expect("copies dir");
    let to = copies.join(format!("{name}.jsonl"));
    std::fs::copy(file, &to).expect("copy the session file");
    to
}

/// The id of the last user-message entry of a generated session file.
fn last_user_entry(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("read the session file");
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("\"role\":\"user\""))
        .expect("a user message");
    let v: serde_json::Value = serde_json::from_str(line).expect("an entry");
    v["id"].as_str().expect("an id").to_string()
}

/// Every command for one agent and one session file, in one process (restarted, and switched
/// to the session again, if it dies).
fn run_agent(
    agent: &Agent,
    file: &Path,
    entries: usize,
    opts: &Options,
    server: &Server,
) -> Vec<Figure> {
    let dir = std::env::temp_dir().join(format!(
        "pi-rpc-bench-cmds-{}-{}-{entries}",
        std::process::id(),
        agent.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("agent")).expect("agent dir");
    let models = serde_json::json!({"providers": {"mock": {"baseUrl": server.url,
        "api": "anthropic-messages", "apiKey": "bench-key",
        "models": [{"id": "bench-model", "contextWindow": 1_000_000_000u64, "maxTokens": 8192}]}}});
    std::fs::write(dir.join("agent/models.json"), models.to_string()).expect("models.json");
    std::fs::write(dir.join("agent/settings.json"), "{}").expect("settings.json");
    let expensive = if entries >= 100_000 {
        opts.big_reps
    } else {
        opts.reps
    };
    let cheap = expensive.max(5);
    let fork_id = last_user_entry(file);

    let mut copies = 0usize;
    let mut next_copy = |dir: &Path| {
        copies += 1;
        copy_of(file, dir, &format!("s{copies}"))
    };
    let mut p = spawn(agent, &dir);
    let mut figures = Vec::new();
    let ready = p.call(r#""type":"get_state""#);
    if let Err(e) = ready {
        let why = format!("start failed: {e}: {}", stderr_of(&dir));
        return vec![
            Figure {
                error: Some(why),
                ..Figure::default()
            };
            COMMANDS.len()
        ];
    }
    let mut main = PathBuf::new();
    // switch_session, each time to a new copy; the last one stays the session.
    figures.push(measure(&mut p, expensive, |p| {
        main = next_copy(&dir);
        let path = json_str(&main.to_string_lossy());
        p.call(&format!(r#""type":"switch_session","sessionPath":{path}"#))
            .map(|r| r.0)
    }));
    let main_path = json_str(&main.to_string_lossy());
    let simple = |p: &mut Proc, figures: &mut Vec<Figure>, fields: &str, reps: usize| {
        if !p.alive() {
            *p = spawn(agent, &dir);
            let _ = p.call(&format!(
                r#""type":"switch_session","sessionPath":{main_path}"#
            ));
        }
        figures.push(measure(p, reps, |p| p.call(fields).map(|r| r.0)));
    };
    simple(&mut p, &mut figures, r#""type":"get_state""#, cheap);
    simple(&mut p, &mut figures, r#""type":"get_messages""#, expensive);
    simple(&mut p, &mut figures, r#""type":"get_entries""#, expensive);
    simple(&mut p, &mut figures, r#""type":"get_tree""#, expensive);
    simple(&mut p, &mut figures, r#""type":"get_session_stats""#, cheap);
    simple(
        &mut p,
        &mut figures,
        r#""type":"get_fork_messages""#,
        expensive,
    );
    let html = json_str(&dir.join("export.html").to_string_lossy());
    simple(
        &mut p,
        &mut figures,
        &format!(r#""type":"export_html","outputPath":{html}"#),
        expensive,
    );
    let _ = std::fs::remove_file(dir.join("export.html"));
    if !p.alive() {
        p = spawn(agent, &dir);
        let _ = p.call(&format!(
            r#""type":"switch_session","sessionPath":{main_path}"#
        ));
    }
    // fork to the last user message, then back to the session (not timed).
    let fork = format!(r#""type":"fork","entryId":{}"#, json_str(&fork_id));
    figures.push(measure(&mut p, expensive, |p| {
        let d = p.call(&fork)?.0;
        p.call(&format!(
            r#""type":"switch_session","sessionPath":{main_path}"#
        ))?;
        Ok(d)
    }));
    simple(&mut p, &mut figures, r#""type":"clone""#, expensive);
    // prompt: until the server has the whole request; then the run is awaited.
    figures.push(measure(&mut p, expensive, |p| {
        while server.received.try_recv().is_ok() {}
        p.next_id += 1;
        let line = format!(
            "{{\"id\":\"b{}\",\"type\":\"prompt\",\"message\":\"Say ok.\"}}\n",
            p.next_id
        );
        let t = Instant::now();
        p.stdin
            .write_all(line.as_bytes())
            .and_then(|_| p.stdin.flush())
            .map_err(|e| e.to_string())?;
        let (at, _bytes) = server
            .received
            .recv_timeout(TIMEOUT)
            .map_err(|_| "the server got no request".to_string())?;
        p.wait_line(|h| h.starts_with("{\"type\":\"agent_settled\""))?;
        Ok(at.duration_since(t))
    }));
    p.stop();
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr.txt"))
        .unwrap_or_default()
        .lines()
        .take(3)
        .collect::<Vec<_>>()
        .join(" | ")
}

// ------------------------------------------------------------------------------------ main

fn generator() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let g = exe.with_file_name("bench_session_load");
    if !g.is_file() {
        eprintln!(
            "{} not found: cargo build --release --example bench_session_load",
            g.display()
        );
        std::process::exit(1);
    }
    g
}

fn cell_ms(f: &Figure) -> String {
    match (f.ms, &f.error) {
        (Some(ms), _) if ms >= 100.0 => format!("{ms:.0}"),
        (Some(ms), _) => format!("{ms:.2}"),
        (None, Some(_)) => "fail".into(),
        _ => "-".into(),
    }
}

fn cell_rss(f: &Figure) -> String {
    match f.rss_kib {
        Some(k) => format!("{:.1}", k as f64 / 1024.0),
        None => "-".into(),
    }
}

fn main() {
    let opts = options();
    let bin = bench_support::release_binary();
    let generate = generator();
    let mut agents = vec![Agent::PiRpc(bin.clone())];
    if opts.pi {
        match bench_support::reference_pi() {
            Some((node, cli)) => agents.push(Agent::Pi(node, cli)),
            None => println!("(the reference pi is not installed: pi-rpc only)"),
        }
    }
    let server = start_server();
    let work = std::env::temp_dir().join(format!("pi-rpc-bench-cmds-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("work dir");
    println!("pi-rpc: {}", bin.display());
    let mut rows: Vec<(usize, f64, Vec<Vec<Figure>>)> = Vec::new();
    for &n in &opts.sizes {
        let file = work.join(format!("session-{n}.jsonl"));
        let ok = Command::new(&generate)
            .arg("--generate")
            .arg(n.to_string())
            .arg(&file)
            .current_dir(&work)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "generating {n} entries failed");
        let mb = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let mut per_agent = Vec::new();
        for agent in &agents {
            eprintln!("{} entries ({mb:.1} MB): {} ...", n, agent.name());
            per_agent.push(run_agent(agent, &file, n, &opts, &server));
        }
        let _ = std::fs::remove_file(&file);
        rows.push((n, mb, per_agent));
    }
    let _ = std::fs::remove_dir_all(&work);

    let has_pi = agents.len() > 1;
    println!();
    println!(
        "{:<18} {:>8} {:>10} {:>10} {:>7} {:>10} {:>10} {:>5}",
        "command", "entries", "pi ms", "pi-rpc ms", "pi/ours", "pi MB", "pi-rpc MB", "reps"
    );
    let mut failures = Vec::new();
    for (ci, cmd) in COMMANDS.iter().enumerate() {
        for (n, _mb, per_agent) in &rows {
            let ours = &per_agent[0][ci];
            let pi = has_pi.then(|| &per_agent[1][ci]);
            let ratio = match (pi.and_then(|f| f.ms), ours.ms) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.1}x", a / b),
                _ => "-".into(),
            };
            println!(
                "{:<18} {:>8} {:>10} {:>10} {:>7} {:>10} {:>10} {:>5}",
                cmd,
                n,
                pi.map(cell_ms).unwrap_or_else(|| "-".into()),
                cell_ms(ours),
                ratio,
                pi.map(cell_rss).unwrap_or_else(|| "-".into()),
                cell_rss(ours),
                ours.reps.max(pi.map(|f| f.reps).unwrap_or(0)),
            );
            for (agent, f) in agents.iter().zip(per_agent) {
                if let Some(e) = &f[ci].error {
                    failures.push(format!("{} {cmd} at {n}: {e}", agent.name()));
                }
            }
        }
    }
    for (n, mb, _) in &rows {
        println!("({n} entries: {mb:.1} MB file)");
    }
    println!(
        "pi/ours = pi ms / pi-rpc ms (above 1: pi-rpc is faster). MB = peak RSS during the command \
         (VmHWM reset before it, so it includes what the process already held)."
    );
    println!(
        "ms = median over the repetitions, from writing the command to reading its whole \
         response line. All commands run in one process per agent and size, in table order:\n\
         switch_session: to a fresh copy of the file each time; fork: to the last user message \
         (then switched back, not timed); clone: the whole branch (the next clones the clone); \
         export_html: to a file; prompt → request: until the scripted server has read the whole \
         HTTP request (the run is then awaited, not timed)."
    );
    for f in failures {
        println!("failed: {f}");
    }
}
