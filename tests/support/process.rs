//! The processes a test starts through the binary (bash commands, tools): holding one until the
//! test releases it, finding its process group, and waiting for state no event announces.

use std::path::Path;
use std::time::{Duration, Instant};

use super::run::LONG;
use super::Agent;

/// A bash command that blocks until the test creates `<cwd>/<flag>`.
pub fn wait_for_flag(flag: &str) -> String {
    format!("while [ ! -e {flag} ]; do sleep 0.02; done; echo released")
}

pub fn release(agent: &Agent, flag: &str) {
    std::fs::write(agent.cwd.join(flag), "").expect("create flag file");
}

/// Polls `cond` until it holds (state that no event announces, e.g. a file written by a child).
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + LONG;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True while the process group exists (`kill -0 -PGID` succeeds).
pub fn group_alive(pgid: u32) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -0 -- -{pgid} 2>/dev/null"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The process group of `pid` (field 5 of `/proc/<pid>/stat`).
pub fn pgid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(2)?.parse().ok()
}

pub fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
