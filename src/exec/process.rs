//! Child processes for shell commands: `<shell> -c <script>` in its own process group, stdin
//! `/dev/null`, stdout and stderr merged into **one pipe** (so the kernel keeps their arrival
//! order), raw chunks handed to an [`OutputSink`] as they arrive, and the whole group killed
//! with SIGKILL on cancellation or timeout.
//!
//! The waiting mirrors pi's: the run ends when the shell has exited and the pipe is closed, or,
//! when background processes keep the pipe open, once the pipe has been quiet for
//! [`EXIT_STDIO_GRACE`] after the shell's exit (output still arriving re-arms the grace).
//!
//! No busy polling: the calling thread sleeps in `poll(2)` on the output pipe and a wake-up pipe
//! that the cancel hook and the reaper thread write to.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::groups;
use crate::cancel::CancelToken;

/// How long the pipe may stay quiet after the shell exited before the run ends anyway
/// (a background process that inherited the pipe but writes nothing must not hang the call).
pub const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);

/// Size of one read from the output pipe (one chunk at most).
const READ_CHUNK: usize = 65536;

/// Picks the shell as pi does (tools.md §4.1): the `shellPath` setting when set (it must exist),
/// else `/bin/bash`, else `bash` found on `PATH`, else `sh`.
pub fn resolve_shell(custom: Option<&str>) -> Result<String, String> {
    if let Some(path) = custom.filter(|p| !p.is_empty()) {
        if Path::new(path).exists() {
            return Ok(path.to_string());
        }
        return Err(format!("Custom shell path not found: {path}"));
    }
    if Path::new("/bin/bash").exists() {
        return Ok("/bin/bash".to_string());
    }
    if let Some(found) = find_on_path("bash") {
        return Ok(found);
    }
    Ok("sh".to_string())
}

fn find_on_path(name: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// `"<prefix>\n<command>"` when a `shellCommandPrefix` is set, else the command.
pub fn with_prefix(prefix: Option<&str>, command: &str) -> String {
    match prefix.filter(|p| !p.is_empty()) {
        Some(p) => format!("{p}\n{command}"),
        None => command.to_string(),
    }
}

/// The error text pi gives for a missing working directory.
pub fn check_cwd(cwd: &Path) -> Result<(), String> {
    if cwd.exists() {
        Ok(())
    } else {
        Err(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            cwd.display()
        ))
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ShellCommand<'a> {
    /// The shell executable (see [`resolve_shell`]).
    pub shell: &'a str,
    /// The script passed after `-c`.
    pub script: &'a str,
    pub cwd: &'a Path,
    /// Added to (or overriding) the inherited environment.
    pub env: &'a [(String, String)],
}

/// Receives the output of a running command.
pub trait OutputSink {
    /// One raw chunk of merged stdout/stderr, in arrival order.
    fn on_output(&mut self, chunk: &[u8]);
    /// When the sink next wants [`OutputSink::on_wake`] even if no output arrives (throttled
    /// updates). Asked after every event.
    fn wake_at(&self) -> Option<Instant> {
        None
    }
    /// Called once [`OutputSink::wake_at`] has passed.
    fn on_wake(&mut self) {}
}

#[cfg(test)]
/// An [`OutputSink`] from a closure over raw chunks.
pub struct ChunkFn<F: FnMut(&[u8])>(pub F);

#[cfg(test)]
impl<F: FnMut(&[u8])> OutputSink for ChunkFn<F> {
    fn on_output(&mut self, chunk: &[u8]) {
        (self.0)(chunk)
    }
}

/// The shell's own exit, when it came before a timeout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShellExit {
    /// Exit code, or 128 + signal number.
    pub code: i32,
    /// Time from spawn to the shell's exit.
    pub after: Duration,
}

/// How a run ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessOutcome {
    /// The shell's exit code, or 128 + the signal number that killed it. `None` only when the
    /// status could not be collected (or the run was cancelled before it started).
    pub exit_code: Option<i32>,
    /// The cancel token fired; the group was killed.
    pub cancelled: bool,
    /// The timeout expired; the group was killed.
    pub timed_out: bool,
    /// Set with `timed_out` when the shell itself had exited before the deadline (background
    /// processes kept the pipe busy until the timeout).
    pub shell_exited_early: Option<ShellExit>,
}

/// Converts an exit status to pi's exit code: the code, or `128 + signal`.
pub fn exit_code_of(status: ExitStatus) -> Option<i32> {
    status
        .code()
        .or_else(|| status.signal().map(|sig| 128 + sig))
}

/// Where the reaper thread leaves the shell's status and the time it was collected.
type ExitSlot = Mutex<Option<(std::io::Result<ExitStatus>, Instant)>>;

/// Runs `cmd`, delivering output to `sink` on the calling thread, until it finishes, `cancel`
/// fires, or `timeout` expires. Errors are spawn failures (the text says what failed).
pub fn run(
    cmd: &ShellCommand<'_>,
    cancel: &CancelToken,
    timeout: Option<Duration>,
    sink: &mut dyn OutputSink,
) -> Result<ProcessOutcome, String> {
    if cancel.is_cancelled() {
        return Ok(ProcessOutcome {
            cancelled: true,
            ..ProcessOutcome::default()
        });
    }
    let (out_read, out_write) =
        make_pipe(false).map_err(|e| format!("Failed to create pipe: {e}"))?;
    let err_write = out_write
        .try_clone()
        .map_err(|e| format!("Failed to create pipe: {e}"))?;
    let (wake_read, wake_write) =
        make_pipe(true).map_err(|e| format!("Failed to create pipe: {e}"))?;
    let wake_write = Arc::new(wake_write);

    let mut command = Command::new(cmd.shell);
    command
        .arg("-c")
        .arg(cmd.script)
        .current_dir(cmd.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_write))
        .stderr(Stdio::from(err_write))
        .process_group(0);
    for (k, v) in cmd.env {
        command.env(k, v);
    }
    let started = Instant::now();
    // The parent's copies of the pipe's write end live in `command`: the spawner drops it
    // after the fork, so the pipe reports EOF once the children are done.
    let spawned = super::spawner::spawn(command);
    let mut child = spawned.map_err(|e| format!("Failed to start shell {}: {e}", cmd.shell))?;
    let pid = child.id() as i32;
    groups::track(pid);

    // Reaper: waits for the shell and reports its status through the wake pipe.
    let exit_slot: Arc<ExitSlot> = Arc::new(Mutex::new(None));
    let reaper = {
        let slot = Arc::clone(&exit_slot);
        let wake = Arc::clone(&wake_write);
        std::thread::Builder::new()
            .name("shell-reaper".into())
            .spawn(move || {
                let status = child.wait();
                *slot.lock() = Some((status, Instant::now()));
                wake_pipe(wake.as_raw_fd());
            })
    };
    let reaper = match reaper {
        Ok(handle) => handle,
        Err(e) => {
            // Without a reaper the child cannot be waited for: kill it rather than leak it.
            groups::kill_group(pid);
            groups::untrack(pid);
            return Err(format!("Failed to start shell {}: {e}", cmd.shell));
        }
    };

    let _hook = {
        let wake = Arc::clone(&wake_write);
        cancel.on_cancel(move || {
            groups::kill_group(pid);
            wake_pipe(wake.as_raw_fd());
        })
    };

    let mut out = File::from(out_read);
    let out_fd = out.as_raw_fd();
    let wake_fd = wake_read.as_raw_fd();
    let mut buf = vec![0u8; READ_CHUNK];
    let deadline = timeout.map(|t| started + t);

    let mut outcome = ProcessOutcome::default();
    let mut eof = false;
    let mut exited: Option<(Option<i32>, Instant)> = None;
    let mut grace_until: Option<Instant> = None;
    let mut killed = false;

    loop {
        // Collect the shell's exit.
        if exited.is_none() {
            if let Some((status, at)) = exit_slot.lock().take() {
                let code = status.ok().and_then(exit_code_of);
                exited = Some((code, at));
                grace_until = Some(Instant::now() + EXIT_STDIO_GRACE);
            }
        }
        if cancel.is_cancelled() && !outcome.cancelled {
            outcome.cancelled = true;
            if !killed {
                groups::kill_group(pid);
                killed = true;
            }
        }
        let now = Instant::now();
        if let Some(d) = deadline {
            if now >= d && !outcome.timed_out && !outcome.cancelled {
                outcome.timed_out = true;
                outcome.shell_exited_early = exited.map(|(code, at)| ShellExit {
                    code: code.unwrap_or(1),
                    after: at.saturating_duration_since(started),
                });
                // Also after the shell exited: the group kill still reaches background
                // processes that hold the pipe.
                groups::kill_group(pid);
                killed = true;
            }
        }
        if let Some(at) = sink.wake_at() {
            if now >= at {
                sink.on_wake();
            }
        }
        // Done?
        if exited.is_some() && (eof || grace_until.is_some_and(|g| now >= g)) {
            break;
        }

        // Sleep until something happens.
        let mut wait_until: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                wait_until = Some(wait_until.map_or(t, |w: Instant| w.min(t)));
            }
        };
        if !outcome.timed_out && !outcome.cancelled {
            consider(deadline);
        }
        if exited.is_some() {
            consider(grace_until);
        }
        consider(sink.wake_at());
        let timeout_ms = match wait_until {
            None => -1,
            Some(t) => {
                let d = t.saturating_duration_since(Instant::now());
                // Round up so the wake-up is not early (which would spin).
                let ms = d.as_micros().div_ceil(1000);
                ms.min(i32::MAX as u128) as i32
            }
        };
        let (out_ready, wake_ready) =
            poll_two(if eof { None } else { Some(out_fd) }, wake_fd, timeout_ms);
        if wake_ready {
            drain_pipe(wake_fd);
        }
        if out_ready && !eof {
            match out.read(&mut buf) {
                Ok(0) => eof = true,
                Ok(n) => {
                    sink.on_output(&buf[..n]);
                    if exited.is_some() {
                        grace_until = Some(Instant::now() + EXIT_STDIO_GRACE);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            }
        }
    }

    // The shell has been reaped (the loop only ends after its exit).
    let _ = reaper.join();
    groups::untrack(pid);
    outcome.exit_code = exited.and_then(|(code, _)| code);
    Ok(outcome)
}

/// A pipe with both ends close-on-exec (`nonblocking` for the wake-up pipe).
fn make_pipe(nonblocking: bool) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        let mut flags = libc::O_CLOEXEC;
        if nonblocking {
            flags |= libc::O_NONBLOCK;
        }
        // SAFETY: pipe2 writes two fds into the array we own.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), flags) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        // SAFETY: pipe writes two fds into the array we own.
        let rc = unsafe { libc::pipe(fds.as_mut_ptr()) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for fd in fds {
            // SAFETY: fcntl on fds we just created.
            unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                if nonblocking {
                    let fl = libc::fcntl(fd, libc::F_GETFL);
                    libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
                }
            }
        }
    }
    // SAFETY: both fds were just returned by pipe(2) and are owned by nobody else.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok(pair)
}

/// Writes one byte to the (non-blocking) wake-up pipe; a full pipe already means "wake up".
fn wake_pipe(fd: RawFd) {
    let byte = [1u8];
    // SAFETY: write(2) of one byte from a live buffer to an fd kept open by an Arc.
    unsafe {
        libc::write(fd, byte.as_ptr().cast(), 1);
    }
}

/// Empties the (non-blocking) wake-up pipe.
fn drain_pipe(fd: RawFd) {
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: read(2) into a live buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
    }
}

/// Waits until `out` (if any) or `wake` is readable, or `timeout_ms` passes (-1: forever).
/// Returns (out ready, wake ready); hang-up and errors count as ready.
fn poll_two(out: Option<RawFd>, wake: RawFd, timeout_ms: i32) -> (bool, bool) {
    let mut fds = [
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: out.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let n = if out.is_some() { 2 } else { 1 };
    // SAFETY: poll(2) on an array of `n` initialized pollfd structs we own.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), n as libc::nfds_t, timeout_ms) };
    if rc == 0 {
        // Timeout: the caller re-checks its state.
        return (false, false);
    }
    if rc < 0 {
        if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            return (false, false);
        }
        // A persistent poll failure must not spin: back off briefly and let the reads decide
        // (a failing read ends the output).
        std::thread::sleep(std::time::Duration::from_millis(10));
        return (out.is_some(), true);
    }
    let ready = |p: &libc::pollfd| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    (out.is_some() && ready(&fds[1]), ready(&fds[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(
        script: &str,
        cancel: &CancelToken,
        timeout: Option<Duration>,
    ) -> (ProcessOutcome, Vec<u8>) {
        let cwd = std::env::temp_dir();
        let cmd = ShellCommand {
            shell: "/bin/sh",
            script,
            cwd: &cwd,
            env: &[],
        };
        let mut out = Vec::new();
        let outcome = run(
            &cmd,
            cancel,
            timeout,
            &mut ChunkFn(|c: &[u8]| out.extend_from_slice(c)),
        )
        .expect("spawn");
        (outcome, out)
    }

    /// The process group is gone: kill(-pgid, 0) fails with ESRCH.
    fn group_gone(pgid: i32) -> bool {
        // SAFETY: signal 0 only checks for existence.
        let rc = unsafe { libc::kill(-pgid, 0) };
        rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }

    fn wait_gone(pgid: i32) -> bool {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if group_gone(pgid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn echo_hi() {
        let (o, out) = sh("echo hi", &CancelToken::new(), None);
        assert_eq!(out, b"hi\n");
        assert_eq!(
            o,
            ProcessOutcome {
                exit_code: Some(0),
                ..ProcessOutcome::default()
            }
        );
    }

    #[test]
    fn stdout_and_stderr_merged_in_order() {
        let (o, out) = sh(
            "echo a; echo b >&2; echo c; sleep 0.05; echo d >&2; exit 3",
            &CancelToken::new(),
            None,
        );
        assert_eq!(String::from_utf8_lossy(&out), "a\nb\nc\nd\n");
        assert_eq!(o.exit_code, Some(3));
    }

    #[test]
    fn signal_exit_code_is_128_plus_signal() {
        let (o, _) = sh("kill -9 $$", &CancelToken::new(), None);
        assert_eq!(o.exit_code, Some(137));
    }

    #[test]
    fn env_and_cwd_apply() {
        let dir = std::env::temp_dir();
        let env = vec![("PI_TEST_VAR".to_string(), "xyz".to_string())];
        let cmd = ShellCommand {
            shell: "/bin/sh",
            script: "echo $PI_TEST_VAR; pwd; cat",
            cwd: &dir,
            env: &env,
        };
        let mut out = Vec::new();
        let o = run(
            &cmd,
            &CancelToken::new(),
            None,
            &mut ChunkFn(|c: &[u8]| out.extend_from_slice(c)),
        )
        .expect("spawn");
        let text = String::from_utf8_lossy(&out).into_owned();
        let canon = std::fs::canonicalize(&dir).expect("canon");
        assert!(text.starts_with("xyz\n"), "{text}");
        assert!(text.contains(&*canon.to_string_lossy()) || text.contains(&*dir.to_string_lossy()));
        // stdin is /dev/null: `cat` ends at once.
        assert_eq!(o.exit_code, Some(0));
    }

    #[test]
    fn cancel_kills_the_whole_group_at_once() {
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            c2.cancel();
        });
        let started = Instant::now();
        let cwd = std::env::temp_dir();
        let cmd = ShellCommand {
            shell: "/bin/sh",
            script: "echo $$; sleep 1000 & sleep 30",
            cwd: &cwd,
            env: &[],
        };
        let mut out = Vec::new();
        let o = run(
            &cmd,
            &cancel,
            None,
            &mut ChunkFn(|c: &[u8]| out.extend_from_slice(c)),
        )
        .expect("spawn");
        t.join().expect("join");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(o.cancelled);
        let text = String::from_utf8_lossy(&out);
        let pgid: i32 = text.trim().parse().expect("pid");
        assert!(wait_gone(pgid), "process group still alive");
    }

    #[test]
    fn cancel_kills_a_child_that_ignores_sigterm() {
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            c2.cancel();
        });
        let (o, out) = sh("trap '' TERM; echo $$; sleep 30; echo after", &cancel, None);
        t.join().expect("join");
        assert!(o.cancelled);
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(!text.contains("after"));
        let pgid: i32 = text.trim().parse().expect("pid");
        assert!(wait_gone(pgid));
    }

    #[test]
    fn already_cancelled_does_not_spawn() {
        let cancel = CancelToken::new();
        cancel.cancel();
        let (o, out) = sh("echo nope", &cancel, None);
        assert!(o.cancelled);
        assert!(out.is_empty());
        assert_eq!(o.exit_code, None);
    }

    #[test]
    fn timeout_kills_the_group() {
        let started = Instant::now();
        let (o, out) = sh(
            "echo $$; sleep 30",
            &CancelToken::new(),
            Some(Duration::from_millis(300)),
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(o.timed_out);
        assert_eq!(o.shell_exited_early, None);
        let pgid: i32 = String::from_utf8_lossy(&out).trim().parse().expect("pid");
        assert!(wait_gone(pgid));
    }

    #[test]
    fn timeout_after_shell_exit_reports_the_shell_exit() {
        let (o, out) = sh(
            "(while true; do echo tick; sleep 0.02; done) & exit 4",
            &CancelToken::new(),
            Some(Duration::from_millis(400)),
        );
        assert!(o.timed_out);
        let early = o.shell_exited_early.expect("shell exit");
        assert_eq!(early.code, 4);
        assert!(early.after < Duration::from_millis(400));
        assert!(String::from_utf8_lossy(&out).contains("tick"));
    }

    #[test]
    fn quiet_background_process_does_not_hang() {
        let started = Instant::now();
        let (o, out) = sh("sleep 5 & echo done", &CancelToken::new(), None);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(out, b"done\n");
        assert_eq!(o.exit_code, Some(0));
        assert!(!o.timed_out && !o.cancelled);
    }

    #[test]
    fn shell_resolution() {
        assert_eq!(
            resolve_shell(Some("/nonexistent/shell")),
            Err("Custom shell path not found: /nonexistent/shell".to_string())
        );
        assert_eq!(resolve_shell(Some("/bin/sh")), Ok("/bin/sh".to_string()));
        let default = resolve_shell(None).expect("shell");
        assert!(default.ends_with("bash") || default == "sh");
        assert_eq!(with_prefix(Some("set -e"), "ls"), "set -e\nls");
        assert_eq!(with_prefix(None, "ls"), "ls");
        assert_eq!(
            check_cwd(Path::new("/nonexistent/dir")),
            Err(
                "Working directory does not exist: /nonexistent/dir\nCannot execute bash commands."
                    .to_string()
            )
        );
    }

    #[test]
    fn large_output_arrives_complete() {
        let (o, out) = sh("seq 1 100000", &CancelToken::new(), None);
        assert_eq!(o.exit_code, Some(0));
        let expected: String = (1..=100000).map(|i| format!("{i}\n")).collect();
        assert_eq!(out, expected.as_bytes());
    }
}
