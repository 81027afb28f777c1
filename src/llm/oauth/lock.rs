//! The auth.json lock, compatible with `proper-lockfile` 4.1 as pi uses it
//! (providers-catalog.md §5.3), so pi-rpc and pi never refresh the same token twice.
//!
//! The lock is the **directory** `<realpath of the file>.lock`, made with `mkdir` (atomic on
//! every local file system). Its mtime is the holder's heartbeat: a holder touches it every few
//! seconds, and a waiter that finds it older than the stale time removes it and takes the lock
//! over. The original holder then sees an mtime that is not its own and treats the lock as
//! *compromised*: it must not write.
//!
//! A heartbeat thread per held lock touches the directory every [`LockOptions::update`] (5 s:
//! pi's synchronous readers call a lock older than 10 s stale, and a refresh may take 15 s).
//! Held lock directories are also listed in a process-wide table so that
//! [`release_all_held`] can remove them when the process ends mid-refresh.

use std::fmt;
use std::fs::{self, File, FileTimes};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};

/// Lock directories this process holds (removed on exit).
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// How a lock is waited for and kept.
#[derive(Clone, Copy, Debug)]
pub struct LockOptions {
    /// A lock directory whose mtime is older than this is taken over.
    pub stale: Duration,
    /// How often the holder touches the directory.
    pub update: Duration,
    /// How long to wait for another holder before giving up with [`LockError::Locked`].
    pub wait: Duration,
}

impl LockOptions {
    /// pi's asynchronous lock (refreshes and writes): stale 30 s, give up after 30 s; touched
    /// every 5 s (not pi's 15 s) so that pi's 10 s synchronous readers never see it stale.
    pub const ASYNC: LockOptions = LockOptions {
        stale: Duration::from_secs(30),
        update: Duration::from_secs(5),
        wait: Duration::from_secs(30),
    };
}

/// Why the lock could not be taken or kept.
#[derive(Debug)]
pub enum LockError {
    /// Another process held the lock for the whole wait (proper-lockfile's `ELOCKED`).
    Locked,
    /// The caller cancelled the wait.
    Cancelled,
    /// Another process took the lock over (we failed to keep it fresh), or it was removed.
    Compromised(String),
    /// A file-system error other than "exists".
    Io { path: PathBuf, error: io::Error },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Locked => f.write_str("Lock file is already being held"),
            LockError::Cancelled => f.write_str("This operation was aborted"),
            LockError::Compromised(why) => f.write_str(why),
            LockError::Io { path, error } => write!(f, "{error}: {}", path.display()),
        }
    }
}

impl std::error::Error for LockError {}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> LockError + '_ {
    move |error| LockError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Milliseconds since the epoch of a system time (0 before 1970).
fn ms_of(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn mtime_ms(dir: &Path) -> io::Result<u64> {
    Ok(ms_of(fs::metadata(dir)?.modified()?))
}

/// Sets a directory's mtime (and atime) to `ms`; returns the value stored.
fn touch(dir: &Path, ms: u64) -> io::Result<u64> {
    let t = UNIX_EPOCH + Duration::from_millis(ms);
    File::open(dir)?.set_times(FileTimes::new().set_accessed(t).set_modified(t))?;
    mtime_ms(dir)
}

fn now_ms() -> u64 {
    ms_of(SystemTime::now())
}

/// The lock directory of `file`: `<realpath>.lock`.
pub fn lock_dir_of(canonical_file: &Path) -> PathBuf {
    let mut s = canonical_file.as_os_str().to_os_string();
    s.push(".lock");
    PathBuf::from(s)
}

/// One `mkdir` attempt with proper-lockfile's stale handling. `Ok(false)`: held by someone else.
fn try_acquire(dir: &Path, stale: Option<Duration>) -> Result<bool, LockError> {
    match fs::create_dir(dir) {
        Ok(()) => return Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err(dir)(e)),
    }
    let Some(stale) = stale else {
        return Ok(false);
    };
    let mtime = match mtime_ms(dir) {
        Ok(m) => m,
        // Removed meanwhile: one more mkdir, without the stale check.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return try_acquire(dir, None),
        Err(e) => return Err(io_err(dir)(e)),
    };
    if mtime >= now_ms().saturating_sub(stale.as_millis() as u64) {
        return Ok(false);
    }
    match fs::remove_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(dir)(e)),
    }
    try_acquire(dir, None)
}

/// pi's retry delay before attempt `n + 1`: `min(10 * 2^n, 1000)` ms times a jitter in 1..2.
fn retry_delay(n: u32) -> Duration {
    let base = 10u64.saturating_mul(1u64 << n.min(20)).min(1000);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u64;
    Duration::from_millis(base + base * jitter / 1000)
}

/// State shared with the heartbeat thread.
struct Shared {
    dir: PathBuf,
    state: Mutex<HeartState>,
    wake: Condvar,
    /// Serializes the stat-and-touch of the heartbeat with [`FileLock::check`]'s stat, so a
    /// check never sees the heartbeat's new mtime before the heartbeat has recorded it (that
    /// would look like a takeover). Held only across those two file-system calls on the lock
    /// directory itself, never across anything else.
    dir_io: Mutex<()>,
}

struct HeartState {
    /// The mtime we last wrote (ms).
    mtime: u64,
    /// When we last wrote it.
    last_update: Instant,
    released: bool,
    compromised: Option<String>,
}

/// A held lock. Dropping it releases it.
pub struct FileLock {
    shared: Arc<Shared>,
    heartbeat: Option<JoinHandle<()>>,
}

impl fmt::Debug for FileLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileLock")
            .field("dir", &self.shared.dir)
            .finish()
    }
}

impl FileLock {
    /// Takes the lock of `canonical_file` (already resolved with `realpath`), waiting as
    /// `opts` says. `cancelled` is polled while waiting.
    pub fn acquire(
        canonical_file: &Path,
        opts: LockOptions,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<FileLock, LockError> {
        let dir = lock_dir_of(canonical_file);
        let deadline = Instant::now() + opts.wait;
        let mut attempt = 0u32;
        loop {
            if cancelled() {
                return Err(LockError::Cancelled);
            }
            if try_acquire(&dir, Some(opts.stale))? {
                break;
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(LockError::Locked);
            }
            let wait_until = Instant::now() + retry_delay(attempt).min(remaining);
            attempt += 1;
            while Instant::now() < wait_until {
                if cancelled() {
                    return Err(LockError::Cancelled);
                }
                std::thread::sleep(
                    wait_until
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(20)),
                );
            }
        }
        HELD.lock().push(dir.clone());
        let mtime = match touch(&dir, now_ms()) {
            Ok(m) => m,
            Err(e) => {
                forget_held(&dir);
                let _ = fs::remove_dir(&dir);
                return Err(io_err(&dir)(e));
            }
        };
        let shared = Arc::new(Shared {
            dir,
            state: Mutex::new(HeartState {
                mtime,
                last_update: Instant::now(),
                released: false,
                compromised: None,
            }),
            wake: Condvar::new(),
            dir_io: Mutex::new(()),
        });
        let for_thread = Arc::clone(&shared);
        let heartbeat = std::thread::Builder::new()
            .name("auth-lock".into())
            .spawn(move || heartbeat(&for_thread, opts))
            .ok();
        Ok(FileLock { shared, heartbeat })
    }

    /// Fails when the lock was taken over or removed since it was acquired (checked now, not
    /// only by the heartbeat).
    pub fn check(&self) -> Result<(), LockError> {
        let _io = self.shared.dir_io.lock();
        let expected = {
            let st = self.shared.state.lock();
            if let Some(why) = &st.compromised {
                return Err(LockError::Compromised(why.clone()));
            }
            st.mtime
        };
        let current = mtime_ms(&self.shared.dir);
        let mut st = self.shared.state.lock();
        let why = match current {
            Ok(m) if m == expected => return Ok(()),
            Ok(_) => "Unable to update lock within the stale threshold".to_string(),
            Err(e) => format!("{e}: {}", self.shared.dir.display()),
        };
        st.compromised = Some(why.clone());
        Err(LockError::Compromised(why))
    }

    /// Releases the lock: stops the heartbeat and removes the directory (unless another
    /// process has taken it over).
    pub fn release(mut self) {
        self.release_inner();
    }

    fn release_inner(&mut self) {
        let compromised = {
            let mut st = self.shared.state.lock();
            if st.released && self.heartbeat.is_none() {
                return;
            }
            st.released = true;
            self.shared.wake.notify_all();
            st.compromised.is_some()
        };
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
        let compromised = compromised || self.shared.state.lock().compromised.is_some();
        forget_held(&self.shared.dir);
        if !compromised {
            let _ = fs::remove_dir(&self.shared.dir);
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        self.release_inner();
    }
}

fn forget_held(dir: &Path) {
    let mut held = HELD.lock();
    if let Some(i) = held.iter().position(|d| d == dir) {
        held.swap_remove(i);
    }
}

/// proper-lockfile's `updateLock`: every `update`, check that the mtime is still ours, then
/// touch it. A foreign mtime, a vanished directory or no successful touch within the stale
/// time marks the lock compromised.
fn heartbeat(shared: &Shared, opts: LockOptions) {
    let mut delay = opts.update;
    loop {
        let (expected, last_update) = {
            let mut st = shared.state.lock();
            if !st.released {
                shared.wake.wait_for(&mut st, delay);
            }
            if st.released || st.compromised.is_some() {
                return;
            }
            (st.mtime, st.last_update)
        };
        // File-system work happens without the state lock.
        let _io = shared.dir_io.lock();
        let over = last_update.elapsed() > opts.stale;
        let outcome = match mtime_ms(&shared.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound || over => {
                Err(Some(format!("{e}: {}", shared.dir.display())))
            }
            Err(_) => Err(None),
            Ok(m) if m != expected => Err(Some(
                "Unable to update lock within the stale threshold".to_string(),
            )),
            Ok(_) => match touch(&shared.dir, now_ms()) {
                Ok(m) => Ok(m),
                Err(e) if e.kind() == io::ErrorKind::NotFound || over => {
                    Err(Some(format!("{e}: {}", shared.dir.display())))
                }
                Err(_) => Err(None),
            },
        };
        let mut st = shared.state.lock();
        if st.released {
            return;
        }
        match outcome {
            Ok(m) => {
                st.mtime = m;
                st.last_update = Instant::now();
                delay = opts.update;
            }
            // A transient error: try again in a second.
            Err(None) => delay = Duration::from_secs(1),
            Err(Some(why)) => {
                st.compromised = Some(why);
                return;
            }
        }
    }
}

/// Removes every lock directory this process still holds (called when the process ends).
pub fn release_all_held() {
    let held = std::mem::take(&mut *HELD.lock());
    for dir in held {
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file() -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("pi-rpc-lock-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("auth.json");
        fs::write(&file, "{}").unwrap();
        (dir, file)
    }

    const FAST: LockOptions = LockOptions {
        stale: Duration::from_secs(30),
        update: Duration::from_millis(50),
        wait: Duration::from_millis(300),
    };

    #[test]
    fn acquire_release_removes_the_directory() {
        let (dir, file) = temp_file();
        let lock = FileLock::acquire(&file, FAST, &|| false).unwrap();
        assert!(lock_dir_of(&file).is_dir());
        assert!(HELD.lock().contains(&lock_dir_of(&file)));
        lock.release();
        assert!(!lock_dir_of(&file).exists());
        assert!(!HELD.lock().contains(&lock_dir_of(&file)));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_fresh_foreign_lock_is_waited_for_then_given_up() {
        let (dir, file) = temp_file();
        fs::create_dir(lock_dir_of(&file)).unwrap();
        let started = Instant::now();
        let err = FileLock::acquire(&file, FAST, &|| false).unwrap_err();
        assert!(matches!(err, LockError::Locked), "{err:?}");
        assert_eq!(err.to_string(), "Lock file is already being held");
        assert!(started.elapsed() >= FAST.wait);
        assert!(lock_dir_of(&file).is_dir(), "someone else's lock stays");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_lock_released_while_waiting_is_taken() {
        let (dir, file) = temp_file();
        let lock_dir = lock_dir_of(&file);
        fs::create_dir(&lock_dir).unwrap();
        let remover = {
            let lock_dir = lock_dir.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(80));
                fs::remove_dir(lock_dir).unwrap();
            })
        };
        let opts = LockOptions {
            wait: Duration::from_secs(5),
            ..FAST
        };
        let lock = FileLock::acquire(&file, opts, &|| false).unwrap();
        remover.join().unwrap();
        lock.release();
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_stale_lock_is_taken_over() {
        let (dir, file) = temp_file();
        let lock_dir = lock_dir_of(&file);
        fs::create_dir(&lock_dir).unwrap();
        touch(&lock_dir, now_ms() - 31_000).unwrap();
        let lock = FileLock::acquire(&file, FAST, &|| false).unwrap();
        assert!(mtime_ms(&lock_dir).unwrap() + 5_000 > now_ms());
        lock.check().unwrap();
        lock.release();
        assert!(!lock_dir.exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn waiting_can_be_cancelled() {
        let (dir, file) = temp_file();
        fs::create_dir(lock_dir_of(&file)).unwrap();
        let opts = LockOptions {
            wait: Duration::from_secs(30),
            ..FAST
        };
        let calls = std::sync::atomic::AtomicU32::new(0);
        let err = FileLock::acquire(&file, opts, &|| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 3
        })
        .unwrap_err();
        assert!(matches!(err, LockError::Cancelled));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_heartbeat_keeps_the_lock_fresh() {
        let (dir, file) = temp_file();
        let lock_dir = lock_dir_of(&file);
        let lock = FileLock::acquire(&file, FAST, &|| false).unwrap();
        // Backdate it as if time had passed; the next heartbeat must not find it foreign.
        let before = lock.shared.state.lock().mtime;
        std::thread::sleep(Duration::from_millis(200));
        let after = mtime_ms(&lock_dir).unwrap();
        assert!(after > before, "touched: {before} -> {after}");
        lock.check().unwrap();
        lock.release();
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_lock_taken_over_is_compromised_and_not_removed() {
        let (dir, file) = temp_file();
        let lock_dir = lock_dir_of(&file);
        let lock = FileLock::acquire(&file, FAST, &|| false).unwrap();
        // Another process found it stale, removed it and made its own.
        fs::remove_dir(&lock_dir).unwrap();
        fs::create_dir(&lock_dir).unwrap();
        touch(&lock_dir, now_ms() + 7).unwrap();
        let err = lock.check().unwrap_err();
        assert!(matches!(err, LockError::Compromised(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "Unable to update lock within the stale threshold"
        );
        lock.release();
        assert!(lock_dir.is_dir(), "the new holder's lock stays");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_heartbeat_notices_a_takeover() {
        let (dir, file) = temp_file();
        let lock_dir = lock_dir_of(&file);
        let lock = FileLock::acquire(&file, FAST, &|| false).unwrap();
        fs::remove_dir(&lock_dir).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while lock.shared.state.lock().compromised.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(lock.shared.state.lock().compromised.is_some());
        assert!(lock.check().is_err());
        drop(lock);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_lock_kept_fresh_is_not_taken_over_however_long_it_is_held() {
        let (dir, file) = temp_file();
        // The holder touches every 50 ms; a waiter calls 300 ms stale and waits 900 ms.
        let holder = FileLock::acquire(&file, FAST, &|| false).unwrap();
        let waiter = LockOptions {
            stale: Duration::from_millis(300),
            update: Duration::from_millis(50),
            wait: Duration::from_millis(900),
        };
        let err = FileLock::acquire(&file, waiter, &|| false).unwrap_err();
        assert!(matches!(err, LockError::Locked), "{err:?}");
        holder.check().unwrap();
        holder.release();
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn retry_delays_grow_to_one_to_two_seconds() {
        for n in 0..12 {
            let d = retry_delay(n).as_millis() as u64;
            let base = (10u64 << n).min(1000);
            assert!(d >= base && d < 2 * base, "{n}: {d}");
        }
    }
}
