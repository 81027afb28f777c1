//! The scripted mock LLM server (`tests/support/mock_llm.rs`) as a standalone process, a drop-in
//! for `shared/conformance/mock_llm.py`:
//!
//!     cargo run --example mock_llm -- --script S.json [--log requests.jsonl] [--port 0]
//!                                     [--port-file F]
//!
//! The script is `{"replies": [...], "default": {...}}` (or a scenario file whose `mock` key holds
//! that object). Prints `MOCK_LISTENING http://127.0.0.1:PORT` once ready and serves until killed,
//! appending each request to the log as a JSON line.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::io::Write;
use std::path::PathBuf;
use std::process::exit;

use mock_llm::{MockLlm, MockOptions};

const USAGE: &str = "usage: mock_llm --script FILE [--log FILE] [--port N] [--port-file FILE]\n\
     (--scenario is accepted for --script)";

struct Args {
    script: PathBuf,
    log: Option<PathBuf>,
    port: u16,
    port_file: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut script = None;
    let mut log = None;
    let mut port = 0;
    let mut port_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            exit(0);
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--script" | "--scenario" => script = Some(PathBuf::from(value)),
            "--log" => log = Some(PathBuf::from(value)),
            "--port" => port = value.parse().map_err(|_| format!("bad port {value:?}"))?,
            "--port-file" => port_file = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    Ok(Args {
        script: script.ok_or("--script is required")?,
        log,
        port,
        port_file,
    })
}

fn load_script(path: &PathBuf) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let script: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    // A full conformance scenario keeps the mock script under "mock".
    match script.get("mock") {
        Some(mock) if script.get("replies").is_none() => Ok(mock.clone()),
        _ => Ok(script),
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let script = load_script(&args.script)?;
    let options = MockOptions {
        port: args.port,
        log_file: args.log,
    };
    let server = MockLlm::start_with(script, options).map_err(|e| format!("cannot listen: {e}"))?;
    let url = server.base_url();
    if let Some(port_file) = args.port_file {
        let port = url.rsplit(':').next().unwrap_or_default();
        let mut tmp = port_file.clone().into_os_string();
        tmp.push(".tmp");
        std::fs::write(&tmp, port)
            .and_then(|()| std::fs::rename(&tmp, &port_file))
            .map_err(|e| format!("cannot write {}: {e}", port_file.display()))?;
    }
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "MOCK_LISTENING {url}");
    let _ = stdout.flush();
    loop {
        std::thread::park(); // serve until killed
    }
}

fn main() {
    if let Err(message) = run() {
        eprintln!("mock_llm: {message}\n{USAGE}");
        exit(2);
    }
}
