//! Outside programs some tests need (a browser, Node, valgrind): found or skipped.
//!
//! A bare clone with only Rust installed must pass `cargo test`, so a test whose program is
//! missing prints one line saying what it needs and how to get it, and passes without running.
//! CI must still fail when such a test breaks, so `PI_RPC_REQUIRE` (a comma-separated list of the
//! names below, or `all`) turns a missing program into a failure: `.ci/run` installs the programs
//! and sets it.

use std::path::{Path, PathBuf};

/// The binary under test: `$PI_RPC_TEST_BIN` when set (CI points it at the static musl build to
/// run the same integration suite against it), else the one cargo built for this test run.
pub fn pi_rpc_bin() -> PathBuf {
    match std::env::var_os("PI_RPC_TEST_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_pi-rpc")),
    }
}

/// True when `PI_RPC_REQUIRE` names `tool` (or says `all`).
pub fn required(tool: &str) -> bool {
    std::env::var("PI_RPC_REQUIRE").is_ok_and(|v| {
        v.split(',')
            .map(str::trim)
            .any(|t| t.eq_ignore_ascii_case(tool) || t.eq_ignore_ascii_case("all"))
    })
}

/// `found`, or `None` after printing why the calling test skips. Panics instead when
/// `PI_RPC_REQUIRE` names `tool`. `how` says how to get the program.
pub fn need(tool: &str, found: Option<PathBuf>, test: &str, how: &str) -> Option<PathBuf> {
    if found.is_some() {
        return found;
    }
    if required(tool) {
        panic!("{test}: {tool} is required here (PI_RPC_REQUIRE) but was not found; {how}");
    }
    eprintln!("skipped {test}: needs {tool}, which was not found; {how}");
    None
}

/// The first executable named one of `names` in `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH")?;
    for d in std::env::split_paths(&dirs) {
        for name in names {
            let p = d.join(name);
            if is_executable(&p) {
                return Some(p);
            }
        }
    }
    None
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
