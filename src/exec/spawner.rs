//! Spawning children that die with pi-rpc (issue 17 §8): on Linux every child gets
//! `PR_SET_PDEATHSIG = SIGKILL` before it execs, so a `kill -9` of pi-rpc takes its shells,
//! extension processes and credential commands with it instead of leaving them running.
//!
//! The death signal fires when the *thread* that forked the child exits, not only the process:
//! children are therefore forked by one long-lived `spawner` thread rather than by the tool,
//! bash or agent thread that asks for them (a tool thread ends with its call, and its shell
//! would be killed with it). The race where pi-rpc dies between the fork and the `prctl` is
//! closed by checking, after the `prctl`, that the parent is still the process that forked.
//!
//! The signal reaches the direct child only: a shell's own children (a pipeline, a background
//! job) are reparented when the shell dies. `bash -c` runs a single command by exec'ing it, so
//! that common case is covered; process groups still kill whole trees on an orderly exit.

use std::io;
use std::process::{Child, Command};
use std::sync::OnceLock;

use crossbeam_channel::{bounded, Sender};

type Job = (Command, Sender<io::Result<Child>>);

fn spawner() -> Option<&'static Sender<Job>> {
    static SPAWNER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = bounded::<Job>(16);
            std::thread::Builder::new()
                .name("spawner".into())
                .spawn(move || {
                    for (mut command, reply) in rx {
                        let child = command.spawn();
                        // The parent's copies of pipe ends the command holds close here, so
                        // the caller's pipes report EOF once the child is done.
                        drop(command);
                        let _ = reply.send(child);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Spawns `command` so that the child is killed when pi-rpc dies (Linux; elsewhere a plain
/// spawn). The command is consumed: its pipe ends in this process are closed on return.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    die_with_parent(&mut command);
    let Some(tx) = spawner() else {
        // No spawner thread (thread creation failed): the calling thread forks instead.
        return command.spawn();
    };
    let (reply_tx, reply_rx) = bounded(1);
    if let Err(e) = tx.send((command, reply_tx)) {
        let (mut command, _) = e.into_inner();
        return command.spawn();
    }
    reply_rx
        .recv()
        .unwrap_or_else(|_| Err(io::Error::other("the spawner thread is gone")))
}

#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only prctl(2) and
    // getppid(2), which are async-signal-safe; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // pi-rpc died before the prctl: the signal will never come, so do not run.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_run_through_the_spawner_and_report_their_output() {
        let out = spawn({
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg("cat /proc/self/status | grep -c PPid")
                .stdout(std::process::Stdio::piped());
            c
        })
        .and_then(|c| c.wait_with_output());
        let out = out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        assert_eq!(out.ok().as_deref(), Some("1"));
    }

    #[test]
    fn a_spawn_error_is_returned() {
        let err = spawn(Command::new("/nonexistent/pi-rpc-no-such-program"));
        assert_eq!(
            err.map(|_| ()).map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound)
        );
    }
}
