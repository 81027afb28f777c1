//! Live child process groups, so that shutdown (EOF, SIGTERM, a closed stdout) can kill every
//! command the agent or the host started.

use std::collections::HashSet;
use std::sync::OnceLock;

use parking_lot::Mutex;

fn registry() -> &'static Mutex<HashSet<i32>> {
    static GROUPS: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    GROUPS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Remembers a process group id (the leader's pid of a child spawned with `process_group(0)`).
pub fn track(pgid: i32) {
    registry().lock().insert(pgid);
}

/// Forgets a process group once its leader has been reaped.
pub fn untrack(pgid: i32) {
    registry().lock().remove(&pgid);
}

/// Sends SIGKILL to a whole process group. Errors (already gone) are ignored.
pub fn kill_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals the process group; it has no memory effects.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Sends `sig` to a whole process group. Errors (already gone) are ignored.
pub fn signal_group(pgid: i32, sig: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals the process group; it has no memory effects.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// Kills every tracked process group (shutdown).
pub fn kill_all() {
    let groups: Vec<i32> = registry().lock().drain().collect();
    for g in groups {
        kill_group(g);
    }
}

/// Kills every tracked process group but `keep` (shutdown, before extensions get their
/// `session_shutdown`).
pub fn kill_all_except(keep: &[i32]) {
    let groups: Vec<i32> = {
        let mut reg = registry().lock();
        let gone: Vec<i32> = reg.iter().copied().filter(|g| !keep.contains(g)).collect();
        for g in &gone {
            reg.remove(g);
        }
        gone
    };
    for g in groups {
        kill_group(g);
    }
}
