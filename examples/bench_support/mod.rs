//! What the benchmarks that drive the release binary share: finding it, a throwaway agent dir,
//! spawning it in RPC mode, and reading its peak RSS. Included with
//! `#[path = "bench_support/mod.rs"] mod bench_support;` (not an example of its own).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `target/release/pi-rpc`, or `$PI_RPC_BIN`; exits with a hint when it is not built.
pub fn release_binary() -> PathBuf {
    let bin = std::env::var_os("PI_RPC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/pi-rpc"));
    if !bin.exists() {
        eprintln!(
            "{} not found: run `cargo build --release` first",
            bin.display()
        );
        std::process::exit(1);
    }
    bin
}

/// A fresh temp agent dir named after the benchmark, holding `models_json` as `models.json`.
pub fn agent_dir(name: &str, models_json: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pi-rpc-bench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("models.json"), models_json).expect("models.json");
    dir
}

/// Spawns `bin --mode rpc --no-session <args>` with `dir` as agent dir, home and cwd; stdin and
/// stdout piped, stderr discarded.
pub fn spawn_rpc(bin: &Path, dir: &Path, args: &[&str]) -> Child {
    spawn_rpc_with_stderr(bin, dir, args, Stdio::null())
}

/// [`spawn_rpc`] with stderr going to `stderr`.
pub fn spawn_rpc_with_stderr<S: AsRef<std::ffi::OsStr>>(
    bin: &Path,
    dir: &Path,
    args: &[S],
    stderr: Stdio,
) -> Child {
    Command::new(bin)
        .args(["--mode", "rpc", "--no-session"])
        .args(args)
        .env("PI_CODING_AGENT_DIR", dir)
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn pi-rpc")
}

/// The process's peak resident set size so far (VmHWM), in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
