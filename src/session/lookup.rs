//! Finding session files for the command line, as pi 1.6.0's `createSessionManager` does:
//! `--session <path|id>`, `--continue`, `--session-id <id>`, `--fork <path|id>`, `--no-session`.
//!
//! An argument containing `/` or `\` or ending in `.jsonl` is a path (relative to the cwd).
//! Anything else is a session id: an exact id in the cwd's session directory first, then an id
//! prefix there (most recently active first), then the same over every project's sessions.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::entry::Entry;
use super::entry::SessionHeader;
use super::load::{self, LoadError};
use super::manager::{
    default_session_dir, session_file_name, validate_session_id, SessionError, SessionManager,
};
use crate::llm::Role;
use crate::util;

/// What a `--session` / `--fork` argument points at.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionRef {
    /// The argument was a path (resolved against the cwd; it may not exist).
    Path(PathBuf),
    /// A session of this project, found by id or id prefix.
    Local(PathBuf),
    /// A session of another project (`cwd` = its header's cwd).
    Global {
        path: PathBuf,
        cwd: String,
    },
    NotFound,
}

/// A session file found in a directory.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionFileInfo {
    pub path: PathBuf,
    pub header: SessionHeader,
}

/// The command-line choices that select the startup session.
#[derive(Clone, Debug, Default)]
pub struct StartupOptions<'a> {
    pub no_session: bool,
    /// `--session <path|id>`
    pub session: Option<&'a str>,
    /// `--continue`
    pub continue_recent: bool,
    /// `--session-id <id>`
    pub session_id: Option<&'a str>,
    /// `--fork <path|id>`
    pub fork: Option<&'a str>,
}

/// The startup session and the warnings to print on stderr.
#[derive(Debug)]
pub struct Startup {
    pub manager: SessionManager,
    pub warnings: Vec<String>,
}

/// Whether listings of `dir` must be limited to sessions whose header cwd is `cwd`: only for an
/// explicitly configured directory that is not the cwd's default one (pi's `filterCwd`).
fn filter_cwd<'a>(
    explicit_dir: Option<&Path>,
    agent_dir: &Path,
    cwd: &'a Path,
) -> Option<&'a Path> {
    let dir = explicit_dir?;
    (util::normalize_lexically(dir)
        != util::normalize_lexically(&default_session_dir(agent_dir, cwd)))
    .then_some(cwd)
}

fn cwd_matches(header: &SessionHeader, cwd: &Path) -> bool {
    !header.cwd.is_empty()
        && util::normalize_lexically(&util::resolve_path(cwd, &header.cwd))
            == util::normalize_lexically(cwd)
}

/// Every `*.jsonl` file of `dir` whose first valid line is a session header (unreadable files
/// and other files skipped), in directory order.
pub fn list_session_files(dir: &Path) -> Vec<SessionFileInfo> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let path = ent.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        if let Ok(Some(header)) = load::read_header(&path) {
            out.push(SessionFileInfo { path, header });
        }
    }
    out
}

/// The session of `dir` whose id is exactly `id` (pi's `findById`).
pub fn find_by_id(dir: &Path, id: &str, filter_cwd: Option<&Path>) -> Option<PathBuf> {
    list_session_files(dir)
        .into_iter()
        .find(|s| s.header.id == id && filter_cwd.is_none_or(|c| cwd_matches(&s.header, c)))
        .map(|s| s.path)
}

/// The session file of `dir` modified last (by mtime) that has a valid header (and, with
/// `filter_cwd`, that cwd) — `--continue`.
pub fn find_most_recent(dir: &Path, filter_cwd: Option<&Path>) -> Option<PathBuf> {
    let rd = std::fs::read_dir(dir).ok()?;
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .filter_map(|p| {
            let m = std::fs::metadata(&p).ok()?.modified().ok()?;
            Some((m, p))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files.into_iter().map(|(_, p)| p).find(|p| {
        matches!(load::read_header(p), Ok(Some(h)) if filter_cwd.is_none_or(|c| cwd_matches(&h, c)))
    })
}

/// The last activity of a session (pi's `modified` of a session listing): the newest
/// user/assistant message time, else the header time, else the file's mtime (ms).
pub fn last_activity_ms(path: &Path) -> Option<u64> {
    #[derive(Deserialize)]
    struct View {
        message: Option<Msg>,
    }
    #[derive(Deserialize)]
    struct Msg {
        timestamp: Option<Value>,
        content: Option<serde::de::IgnoredAny>,
    }
    let file = std::fs::File::open(path).ok()?;
    let mtime = file
        .metadata()
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut buf = Vec::new();
    let mut header: Option<SessionHeader> = None;
    let mut last: Option<u64> = None;
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        if header.is_none() {
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(m)) => header = Some(load::parse_header(&m)?),
                Ok(_) => return None,
                Err(_) => {}
            }
            continue;
        }
        let Ok(e) = Entry::parse(&line) else { continue };
        if !matches!(e.role(), Some(Role::User | Role::Assistant)) {
            continue;
        }
        let Ok(View { message: Some(m) }) = e.deserialize::<View>() else {
            continue;
        };
        if m.content.is_none() {
            continue;
        }
        let t = match m.timestamp.as_ref().and_then(Value::as_f64) {
            Some(n) => Some(n.max(0.0) as u64),
            None => util::ms_from_iso(e.timestamp()),
        };
        if let Some(t) = t {
            last = Some(last.map_or(t, |l| l.max(t)));
        }
    }
    let header = header?;
    last.filter(|&t| t > 0)
        .or_else(|| util::ms_from_iso(&header.timestamp))
        .or(mtime)
}

/// The session of `files` whose id starts with `prefix`, the most recently active first.
fn find_prefix(files: Vec<SessionFileInfo>, prefix: &str) -> Option<SessionFileInfo> {
    let mut candidates: Vec<(u64, SessionFileInfo)> = files
        .into_iter()
        .filter(|s| s.header.id.starts_with(prefix))
        .map(|s| (last_activity_ms(&s.path).unwrap_or(0), s))
        .collect();
    // Stable: ties keep directory order.
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    candidates.into_iter().next().map(|(_, s)| s)
}

/// Resolves a `--session` / `--fork` argument (pi's `resolveSessionPath`). `explicit_dir` is the
/// configured session directory (`--session-dir`, `PI_CODING_AGENT_SESSION_DIR`, setting), if
/// any.
pub fn resolve_session_arg(
    arg: &str,
    cwd: &Path,
    agent_dir: &Path,
    explicit_dir: Option<&Path>,
) -> SessionRef {
    if arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl") {
        return SessionRef::Path(util::resolve_path(cwd, arg));
    }
    let dir = explicit_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_session_dir(agent_dir, cwd));
    let filter = filter_cwd(explicit_dir, agent_dir, cwd);
    let local: Vec<SessionFileInfo> = list_session_files(&dir)
        .into_iter()
        .filter(|s| filter.is_none_or(|c| cwd_matches(&s.header, c)))
        .collect();
    if let Some(s) = local.iter().find(|s| s.header.id == arg) {
        return SessionRef::Local(s.path.clone());
    }
    if let Some(s) = find_prefix(local, arg) {
        return SessionRef::Local(s.path);
    }
    // Every project's sessions (only the configured directory when there is one).
    let all: Vec<SessionFileInfo> = match explicit_dir {
        Some(d) => list_session_files(d),
        None => {
            let root = agent_dir.join("sessions");
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.is_dir())
                        .collect()
                })
                .unwrap_or_default();
            dirs.sort();
            dirs.iter().flat_map(|d| list_session_files(d)).collect()
        }
    };
    let found = match all.iter().position(|s| s.header.id == arg) {
        Some(i) => Some(all[i].clone()),
        None => find_prefix(all, arg),
    };
    match found {
        Some(s) => SessionRef::Global {
            path: s.path,
            cwd: s.header.cwd,
        },
        None => SessionRef::NotFound,
    }
}

/// `--fork <source>`: a new session in `dir` (id `id` or a fresh one) holding every entry of the
/// source file, header `parentSession` = the source path, written at once (pi's `forkFrom`).
pub fn fork_from(
    source: &Path,
    cwd: &Path,
    dir: &Path,
    id: Option<&str>,
) -> Result<SessionManager, SessionError> {
    let invalid = || {
        SessionError::Invalid(format!(
            "Cannot fork: source session file is empty or invalid: {}",
            source.display()
        ))
    };
    let loaded = match load::load_file(source) {
        Ok(l) if !l.empty => l,
        Ok(_) | Err(LoadError::NotFound(_)) | Err(LoadError::NotASession(_)) => {
            return Err(invalid())
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(id) = id {
        validate_session_id(id)?;
    }
    let id = id
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let header = SessionHeader {
        version: super::manager::SESSION_VERSION,
        id,
        timestamp: util::now_iso(),
        cwd: cwd.to_string_lossy().into_owned(),
        parent_session: Some(source.to_string_lossy().into_owned()),
    };
    let path = session_file_name(dir, &header.timestamp, &header.id);
    let io = |source| SessionError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(io)?;
    let header_text = crate::protocol::framing::encode(&header.to_value());
    load::write_lines(
        &mut file,
        &header_text,
        loaded.entries.iter().map(Entry::raw),
    )
    .map_err(io)?;
    drop(file);
    drop(loaded);
    SessionManager::open(&path, Some(dir), cwd)
}

/// Chooses the startup session as pi 1.6.0 does (`createSessionManager`, then the check that a
/// resumed session's recorded cwd still exists). `cwd` is the resolved working directory;
/// `explicit_dir` the configured session directory, if any (else the cwd's default directory
/// under `agent_dir`).
pub fn startup_session(
    opts: &StartupOptions<'_>,
    cwd: &Path,
    agent_dir: &Path,
    explicit_dir: Option<&Path>,
) -> Result<Startup, SessionError> {
    let startup = select_startup_session(opts, cwd, agent_dir, explicit_dir)?;
    startup.manager.check_cwd_exists(cwd)?;
    Ok(startup)
}

fn select_startup_session(
    opts: &StartupOptions<'_>,
    cwd: &Path,
    agent_dir: &Path,
    explicit_dir: Option<&Path>,
) -> Result<Startup, SessionError> {
    let mut warnings = Vec::new();
    if opts.fork.is_some() {
        let conflicts: Vec<&str> = [
            (opts.session.is_some(), "--session"),
            (opts.continue_recent, "--continue"),
            (opts.no_session, "--no-session"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect();
        if !conflicts.is_empty() {
            return Err(SessionError::Invalid(format!(
                "--fork cannot be combined with {}",
                conflicts.join(", ")
            )));
        }
    }
    if let Some(id) = opts.session_id {
        let conflicts: Vec<&str> = [
            (opts.session.is_some(), "--session"),
            (opts.continue_recent, "--continue"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect();
        if !conflicts.is_empty() {
            return Err(SessionError::Invalid(format!(
                "--session-id cannot be combined with {}",
                conflicts.join(", ")
            )));
        }
        validate_session_id(id)?;
    }
    if opts.no_session {
        let manager = match opts.session_id {
            Some(id) => SessionManager::create_with_id(cwd, None, id, None)?,
            None => SessionManager::in_memory(cwd),
        };
        return Ok(Startup { manager, warnings });
    }
    let dir = explicit_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_session_dir(agent_dir, cwd));
    let filter = filter_cwd(explicit_dir, agent_dir, cwd);

    if let Some(arg) = opts.fork {
        if let Some(id) = opts.session_id {
            if find_by_id(&dir, id, filter).is_some() {
                return Err(SessionError::Invalid(format!(
                    "Session already exists with id '{id}'"
                )));
            }
        }
        let source = match resolve_session_arg(arg, cwd, agent_dir, explicit_dir) {
            SessionRef::Path(p) | SessionRef::Local(p) | SessionRef::Global { path: p, .. } => p,
            SessionRef::NotFound => {
                return Err(SessionError::Invalid(format!(
                    "No session found matching '{arg}'"
                )))
            }
        };
        let manager = fork_from(&source, cwd, &dir, opts.session_id)?;
        return Ok(Startup { manager, warnings });
    }

    if let Some(arg) = opts.session {
        let path = match resolve_session_arg(arg, cwd, agent_dir, explicit_dir) {
            SessionRef::Path(p) | SessionRef::Local(p) => p,
            SessionRef::Global { path, cwd: other } => {
                // pi asks on the terminal whether to fork it here; RPC mode has no terminal.
                return Err(SessionError::Invalid(format!(
                    "Session found in different project: {other} ({}). Use --fork {} to fork it into this directory.",
                    path.display(),
                    path.display()
                )));
            }
            SessionRef::NotFound => {
                return Err(SessionError::Invalid(format!(
                    "No session found matching '{arg}'"
                )))
            }
        };
        let manager = open_or_create_at(&path, explicit_dir, cwd)?;
        return Ok(Startup { manager, warnings });
    }

    if opts.continue_recent {
        let manager = match find_most_recent(&dir, filter) {
            Some(p) => SessionManager::open(&p, Some(&dir), cwd)?,
            None => SessionManager::create(cwd, Some(&dir), None),
        };
        return Ok(Startup { manager, warnings });
    }

    if let Some(id) = opts.session_id {
        if let Some(p) = find_by_id(&dir, id, filter) {
            let manager = SessionManager::open(&p, explicit_dir, cwd)?;
            return Ok(Startup { manager, warnings });
        }
        warnings.push(format!(
            "Warning: No project session found with id '{id}'; creating a new session with that id."
        ));
        let manager = SessionManager::create_with_id(cwd, Some(&dir), id, None)?;
        return Ok(Startup { manager, warnings });
    }
    Ok(Startup {
        manager: SessionManager::create(cwd, Some(&dir), None),
        warnings,
    })
}

/// pi's `SessionManager.open` for an explicit path: a missing file becomes a new session that
/// will be written at that path.
pub fn open_or_create_at(
    path: &Path,
    session_dir: Option<&Path>,
    cwd: &Path,
) -> Result<SessionManager, SessionError> {
    match SessionManager::open(path, session_dir, cwd) {
        Err(SessionError::Load(LoadError::NotFound(_))) => {
            let mut sm = SessionManager::create_at(path, cwd);
            if let Some(d) = session_dir {
                sm.set_session_dir(d);
            }
            Ok(sm)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Env {
        root: PathBuf,
        agent: PathBuf,
        cwd: PathBuf,
    }

    impl Env {
        fn new() -> Env {
            let root = std::env::temp_dir().join(format!("pi-rpc-lookup-{}", uuid::Uuid::new_v4()));
            let agent = root.join("agent");
            let cwd = root.join("project");
            std::fs::create_dir_all(&cwd).unwrap();
            Env { root, agent, cwd }
        }

        fn dir(&self) -> PathBuf {
            default_session_dir(&self.agent, &self.cwd)
        }

        /// A persisted session with one exchange, id `id`, in `dir`.
        fn session(&self, dir: &Path, id: &str, cwd: &Path, ts: u64) -> PathBuf {
            let mut sm = SessionManager::create_with_id(cwd, Some(dir), id, None).unwrap();
            sm.append_message(json!({"role":"user","content":"q","timestamp":ts}))
                .unwrap();
            sm.session_file().unwrap().to_path_buf()
        }
    }

    impl Drop for Env {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    #[test]
    fn ids_prefixes_and_paths() {
        let env = Env::new();
        let dir = env.dir();
        let a = env.session(&dir, "abc-111", &env.cwd, 1000);
        let b = env.session(&dir, "abc-222", &env.cwd, 5000);
        let other_cwd = env.root.join("other");
        let other_dir = default_session_dir(&env.agent, &other_cwd);
        let c = env.session(&other_dir, "zzz-1", &other_cwd, 1);
        let r = |arg: &str| resolve_session_arg(arg, &env.cwd, &env.agent, None);
        assert_eq!(r("abc-111"), SessionRef::Local(a.clone()));
        // Prefix: the most recently active session wins.
        assert_eq!(r("abc"), SessionRef::Local(b.clone()));
        assert_eq!(r("abc-1"), SessionRef::Local(a.clone()));
        assert_eq!(
            r("zzz"),
            SessionRef::Global {
                path: c.clone(),
                cwd: other_cwd.to_string_lossy().into_owned()
            }
        );
        assert_eq!(r("nothing"), SessionRef::NotFound);
        assert_eq!(
            r("sub/x.jsonl"),
            SessionRef::Path(env.cwd.join("sub/x.jsonl"))
        );
        assert_eq!(r("x.jsonl"), SessionRef::Path(env.cwd.join("x.jsonl")));
        assert_eq!(find_by_id(&dir, "abc-222", None), Some(b.clone()));
        assert_eq!(find_by_id(&dir, "abc", None), None);
    }

    #[test]
    fn continue_picks_the_newest_file() {
        let env = Env::new();
        let dir = env.dir();
        let a = env.session(&dir, "first", &env.cwd, 1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = env.session(&dir, "second", &env.cwd, 2);
        std::fs::write(dir.join("junk.jsonl"), "not a session\n").unwrap();
        assert_eq!(find_most_recent(&dir, None), Some(b.clone()));
        let opts = StartupOptions {
            continue_recent: true,
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        assert_eq!(s.manager.session_id(), "second");
        // Touch the older one: it becomes the most recent.
        let text = std::fs::read_to_string(&a).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&a, text).unwrap();
        assert_eq!(find_most_recent(&dir, None), Some(a));
        // An empty directory: a new session.
        let empty = env.root.join("empty");
        let opts = StartupOptions {
            continue_recent: true,
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, Some(&empty)).unwrap();
        assert!(s.manager.entries().is_empty());
        assert_eq!(s.manager.session_dir(), Some(empty.as_path()));
    }

    #[test]
    fn session_id_opens_or_creates() {
        let env = Env::new();
        let dir = env.dir();
        env.session(&dir, "known", &env.cwd, 1);
        let opts = StartupOptions {
            session_id: Some("known"),
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        assert_eq!(s.manager.entries().len(), 1);
        assert!(s.warnings.is_empty());
        let opts = StartupOptions {
            session_id: Some("fresh.1"),
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        assert_eq!(s.manager.session_id(), "fresh.1");
        assert!(s.manager.entries().is_empty());
        assert_eq!(s.warnings.len(), 1);
        let opts = StartupOptions {
            session_id: Some("bad id"),
            ..Default::default()
        };
        let e = startup_session(&opts, &env.cwd, &env.agent, None).unwrap_err();
        assert!(matches!(e, SessionError::InvalidSessionId));
        let opts = StartupOptions {
            session_id: Some("x"),
            no_session: true,
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        assert!(!s.manager.is_persisted());
        assert_eq!(s.manager.session_id(), "x");
    }

    #[test]
    fn session_flag_and_fork_flag() {
        let env = Env::new();
        let dir = env.dir();
        let a = env.session(&dir, "src-1", &env.cwd, 1);
        let opts = StartupOptions {
            session: Some("src"),
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        assert_eq!(s.manager.session_file(), Some(a.as_path()));
        // A path that does not exist yet: a new session written there later.
        let opts = StartupOptions {
            session: Some("new/place.jsonl"),
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        assert_eq!(
            s.manager.session_file(),
            Some(env.cwd.join("new/place.jsonl").as_path())
        );
        let opts = StartupOptions {
            session: Some("nope"),
            ..Default::default()
        };
        assert_eq!(
            startup_session(&opts, &env.cwd, &env.agent, None)
                .unwrap_err()
                .to_string(),
            "No session found matching 'nope'"
        );

        let opts = StartupOptions {
            fork: Some("src-1"),
            session_id: Some("forked"),
            ..Default::default()
        };
        let s = startup_session(&opts, &env.cwd, &env.agent, None).unwrap();
        let m = &s.manager;
        assert_eq!(m.session_id(), "forked");
        assert!(m.file_exists());
        assert_eq!(
            m.header().parent_session.as_deref(),
            Some(a.to_str().unwrap())
        );
        let src = SessionManager::open(&a, None, &env.cwd).unwrap();
        assert_eq!(m.entries(), src.entries());
        // The id is now taken.
        assert_eq!(
            startup_session(&opts, &env.cwd, &env.agent, None)
                .unwrap_err()
                .to_string(),
            "Session already exists with id 'forked'"
        );
        let opts = StartupOptions {
            fork: Some("src-1"),
            continue_recent: true,
            ..Default::default()
        };
        assert_eq!(
            startup_session(&opts, &env.cwd, &env.agent, None)
                .unwrap_err()
                .to_string(),
            "--fork cannot be combined with --continue"
        );
    }
}
