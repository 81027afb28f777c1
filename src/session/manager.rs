//! The session manager: header, entries, leaf, labels, and the lazily created, append-only JSONL
//! file (`session-format.md` §2, §5, §7).

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::context::{branch_selection, build_context, build_messages, Selection, SessionContext};
use super::entry::{Entry, EntryKind, Label, SessionHeader};
use super::load::{self, LoadError};
use super::messages::ContextMessages;
use super::migrate;
use super::stats::SessionTotals;
use super::tree;
use super::user_text::{user_text, UserText};
use crate::llm::Role;
use crate::util;

mod append;
mod fork;
mod persist;
pub use persist::on_write_failure;

/// The session file format version written by pi 1.6.0.
pub const SESSION_VERSION: u64 = migrate::CURRENT_VERSION;

/// Errors of session storage and session operations. The `Display` text is what a client sees
/// (pi's wording where pi has one).
#[derive(Debug)]
pub enum SessionError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A session file could not be opened.
    Load(LoadError),
    /// `fork` with an unknown id or an entry that is not a user message.
    InvalidForkEntry,
    /// `fork`/`clone` of a persisted session whose file does not exist yet.
    NotSavedYet,
    /// `clone` without a leaf.
    NoCurrentEntry,
    /// An entry id that does not exist (`get_entries` `since`).
    EntryNotFound(String),
    /// `--session-id` / a custom id that is not allowed.
    InvalidSessionId,
    /// Invalid input to an append (pi's messages, e.g. `Entry x is not on the active branch`).
    Invalid(String),
    /// The session's recorded working directory does not exist (any more).
    MissingCwd {
        session_cwd: String,
        session_file: PathBuf,
        current_cwd: PathBuf,
    },
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Io { path, source } => {
                write!(f, "Session file {}: {source}", path.display())
            }
            SessionError::Load(e) => e.fmt(f),
            SessionError::InvalidForkEntry => f.write_str("Invalid entry ID for forking"),
            SessionError::NotSavedYet => f.write_str(
                "This session has not been saved yet. Send a message before cloning or forking it.",
            ),
            SessionError::NoCurrentEntry => {
                f.write_str("Cannot clone session: no current entry selected")
            }
            SessionError::EntryNotFound(id) => write!(f, "Entry not found: {id}"),
            SessionError::InvalidSessionId => f.write_str(
                "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character",
            ),
            SessionError::Invalid(m) => f.write_str(m),
            SessionError::MissingCwd {
                session_cwd,
                session_file,
                current_cwd,
            } => write!(
                f,
                "Stored session working directory does not exist: {session_cwd}\nSession file: {}\nCurrent working directory: {}",
                session_file.display(),
                current_cwd.display()
            ),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Io { source, .. } => Some(source),
            SessionError::Load(e) => Some(e),
            _ => None,
        }
    }
}

impl From<LoadError> for SessionError {
    fn from(e: LoadError) -> Self {
        SessionError::Load(e)
    }
}

/// The directory pi uses for a cwd's sessions: `<agentDir>/sessions/--<encoded cwd>--/`.
pub fn default_session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    agent_dir.join("sessions").join(encode_cwd(cwd))
}

/// `/home/user/project` → `--home-user-project--`.
pub fn encode_cwd(cwd: &Path) -> String {
    let s = cwd.to_string_lossy();
    let trimmed = s.strip_prefix(['/', '\\']).unwrap_or(&s);
    let enc: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{enc}--")
}

/// `^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$` (`session-format.md` §1).
pub fn validate_session_id(id: &str) -> Result<(), SessionError> {
    let b = id.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(SessionError::InvalidSessionId)
    }
}

/// `<timestamp with ':' and '.' → '-'>_<id>.jsonl` in `dir`.
pub fn session_file_name(dir: &Path, timestamp: &str, id: &str) -> PathBuf {
    let stamp = timestamp.replace([':', '.'], "-");
    dir.join(format!("{stamp}_{id}.jsonl"))
}

/// The text of a user message: a string content as is, else its text blocks concatenated.
pub fn user_message_text(msg: &Value) -> String {
    match msg.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// One `get_fork_messages` item.
#[derive(Clone, Debug, PartialEq)]
pub struct ForkMessage {
    pub entry_id: String,
    pub text: String,
}

/// The result of [`SessionManager::fork`].
#[derive(Debug)]
pub struct Forked {
    /// The new session (persisted sessions: a new file; in-memory: the branched copy).
    pub manager: SessionManager,
    /// The text of the user message forked from (`data.text`).
    pub text: String,
}

/// The session's entries and their file.
#[derive(Debug)]
pub struct SessionManager {
    header: SessionHeader,
    entries: Vec<Entry>,
    index: HashMap<Box<str>, usize>,
    /// Current labels in the order pi's label map holds them (first set first).
    labels: Vec<Label>,
    leaf: Option<String>,
    /// `None` with `--no-session`.
    path: Option<PathBuf>,
    /// Where new sessions (new_session, fork, clone) go; `None` with `--no-session`.
    session_dir: Option<PathBuf>,
    /// True once the file holds the header and every entry (later entries are appended).
    flushed: bool,
    /// Open for appending once the file exists (opened lazily for loaded files).
    file: Option<File>,
    /// `get_session_stats` totals, computed on first use and kept up to date by appends.
    totals: OnceLock<SessionTotals>,
    /// The last write failed (the failure hook heard of it already).
    write_failing: bool,
}

impl SessionManager {
    fn empty(header: SessionHeader, path: Option<PathBuf>, session_dir: Option<PathBuf>) -> Self {
        SessionManager {
            header,
            entries: Vec::new(),
            index: HashMap::new(),
            labels: Vec::new(),
            leaf: None,
            path,
            session_dir,
            flushed: false,
            file: None,
            totals: OnceLock::new(),
            write_failing: false,
        }
    }

    /// A new, empty session. `dir` is the session directory (`None` keeps it in memory).
    pub fn create(cwd: &Path, dir: Option<&Path>, parent_session: Option<String>) -> Self {
        let id = uuid::Uuid::now_v7().to_string();
        Self::create_with(cwd, dir, id, parent_session)
    }

    /// A new, empty session with a caller-chosen id (`--session-id`), validated.
    pub fn create_with_id(
        cwd: &Path,
        dir: Option<&Path>,
        id: &str,
        parent_session: Option<String>,
    ) -> Result<Self, SessionError> {
        validate_session_id(id)?;
        Ok(Self::create_with(cwd, dir, id.to_string(), parent_session))
    }

    /// An in-memory session (`--no-session`).
    pub fn in_memory(cwd: &Path) -> Self {
        Self::create(cwd, None, None)
    }

    fn create_with(
        cwd: &Path,
        dir: Option<&Path>,
        id: String,
        parent_session: Option<String>,
    ) -> Self {
        let header = SessionHeader::new(id, &cwd.to_string_lossy(), parent_session);
        let path = dir.map(|d| session_file_name(d, &header.timestamp, &header.id));
        Self::empty(header, path, dir.map(Path::to_path_buf))
    }

    /// A new session that will be written at `path` (pi's behaviour for `--session <path>` when
    /// the file does not exist). New sessions made from it go to `path`'s directory.
    pub fn create_at(path: &Path, cwd: &Path) -> Self {
        let header = SessionHeader::new(
            uuid::Uuid::now_v7().to_string(),
            &cwd.to_string_lossy(),
            None,
        );
        let dir = path.parent().map(Path::to_path_buf);
        Self::empty(header, Some(path.to_path_buf()), dir)
    }

    /// Opens a session file: entries loaded (malformed lines skipped, old versions migrated and
    /// the file rewritten), leaf = last entry, cwd and id from the header. Later entries are
    /// appended to the same file. `session_dir` is where sessions made from this one go (default:
    /// the file's directory); `fallback_cwd` is used when the file is empty (pi then starts a
    /// fresh session in it).
    pub fn open(
        path: &Path,
        session_dir: Option<&Path>,
        fallback_cwd: &Path,
    ) -> Result<Self, SessionError> {
        let loaded = load::load_file(path)?;
        let dir = session_dir
            .map(Path::to_path_buf)
            .or_else(|| path.parent().map(Path::to_path_buf));
        if loaded.empty {
            // pi writes a fresh header into an empty file at once.
            let mut sm = Self::create_at(path, fallback_cwd);
            sm.session_dir = dir;
            let mut f = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)
                .map_err(|source| io_err(path, source))?;
            let mut line = crate::protocol::framing::encode(&sm.header.to_value());
            line.push('\n');
            f.write_all(line.as_bytes())
                .map_err(|source| io_err(path, source))?;
            sm.flushed = true;
            return Ok(sm);
        }
        let mut header = loaded.header;
        if header.cwd.is_empty() {
            // pi resolves an empty header cwd to the process cwd.
            header.cwd = fallback_cwd.to_string_lossy().into_owned();
        }
        let mut sm = Self::empty(header, Some(path.to_path_buf()), dir);
        sm.flushed = true;
        sm.set_entries(loaded.entries);
        if !loaded.ends_with_newline {
            // A torn or unterminated last line: start the next entry on a line of its own.
            if let Err(e) = OpenOptions::new()
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(b"\n"))
            {
                eprintln!(
                    "pi-rpc: cannot terminate the last line of {}: {e}",
                    path.display()
                );
            }
        }
        Ok(sm)
    }

    /// A read-only copy of the tree (header, entries, labels, leaf, file path) for work that
    /// must not hold the session lock, such as rendering `export_html`. It has no file handle:
    /// nothing appended to the copy reaches the file. Costs one copy of the entries' text.
    pub fn snapshot(&self) -> SessionManager {
        SessionManager {
            header: self.header.clone(),
            entries: self.entries.clone(),
            index: self.index.clone(),
            labels: self.labels.clone(),
            leaf: self.leaf.clone(),
            path: self.path.clone(),
            session_dir: self.session_dir.clone(),
            flushed: self.flushed,
            file: None,
            totals: OnceLock::new(),
            write_failing: false,
        }
    }

    /// `new_session`: a fresh session in the same place as this one (this session's directory,
    /// or in memory when this one is), with this session's cwd.
    pub fn new_session(&self, parent_session: Option<String>) -> SessionManager {
        SessionManager::create(
            Path::new(&self.header.cwd),
            self.session_dir.as_deref().filter(|_| self.path.is_some()),
            parent_session,
        )
    }

    /// Replaces all entries, rebuilding the index, the labels and the leaf (= last entry).
    fn set_entries(&mut self, entries: Vec<Entry>) {
        self.entries = entries;
        self.totals = OnceLock::new();
        self.index = HashMap::with_capacity(self.entries.len());
        self.labels.clear();
        self.leaf = None;
        for i in 0..self.entries.len() {
            let e = &self.entries[i];
            if !e.has_id() {
                continue;
            }
            self.index.insert(e.id().into(), i);
            self.leaf = Some(e.id().to_string());
            if e.kind() == EntryKind::Label {
                let e = e.clone();
                self.apply_label(&e);
            }
        }
    }

    fn apply_label(&mut self, e: &Entry) {
        let Some(target) = e.get_str("targetId") else {
            return;
        };
        let label = e.get_str("label").filter(|l| !l.is_empty());
        let pos = self.labels.iter().position(|l| l.target_id == target);
        match (label, pos) {
            (Some(label), Some(i)) => {
                self.labels[i].label = label;
                self.labels[i].timestamp = e.timestamp().to_string();
            }
            (Some(label), None) => self.labels.push(Label {
                target_id: target,
                label,
                timestamp: e.timestamp().to_string(),
            }),
            (None, Some(i)) => {
                self.labels.remove(i);
            }
            (None, None) => {}
        }
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The session's working directory (the header's `cwd`).
    pub fn cwd(&self) -> &str {
        &self.header.cwd
    }

    /// The file path, reported even before the file exists (it is created lazily).
    pub fn session_file(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where new sessions made from this one go (`None` with `--no-session`).
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }

    /// pi's check before using a persisted session: its recorded cwd must exist
    /// (`Stored session working directory does not exist: …`). `current_cwd` is named in the
    /// message.
    pub fn check_cwd_exists(&self, current_cwd: &Path) -> Result<(), SessionError> {
        let Some(file) = &self.path else {
            return Ok(());
        };
        let cwd = &self.header.cwd;
        if cwd.is_empty() || Path::new(cwd).exists() {
            return Ok(());
        }
        Err(SessionError::MissingCwd {
            session_cwd: cwd.clone(),
            session_file: file.clone(),
            current_cwd: current_cwd.to_path_buf(),
        })
    }

    /// Changes where sessions made from this one go (persisted sessions only).
    pub fn set_session_dir(&mut self, dir: &Path) {
        if self.path.is_some() {
            self.session_dir = Some(dir.to_path_buf());
        }
    }

    pub fn is_persisted(&self) -> bool {
        self.path.is_some()
    }

    /// True once the file has been written.
    pub fn file_exists(&self) -> bool {
        self.flushed
    }

    /// All entries in append order (header excluded).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.index.get(id).map(|&i| &self.entries[i])
    }

    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    pub fn leaf_entry(&self) -> Option<&Entry> {
        self.leaf.as_deref().and_then(|id| self.entry(id))
    }

    /// The label currently on `id`.
    pub fn label(&self, id: &str) -> Option<&Label> {
        self.labels.iter().find(|l| l.target_id == id)
    }

    /// Current labels (latest per target; cleared labels absent).
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// The active branch, root first.
    pub fn branch(&self) -> Vec<&Entry> {
        self.branch_from(self.leaf.as_deref())
    }

    /// The context messages of the active branch, with the `get_session_stats` totals counted
    /// meanwhile on a second thread (both read every entry of a freshly loaded session; in
    /// parallel a load costs the longer of the two, and the first `get_session_stats` is
    /// instant).
    pub fn context_messages(&self) -> ContextMessages {
        std::thread::scope(|scope| {
            // Without a thread the totals are counted on first use instead.
            let _ = std::thread::Builder::new()
                .name("session-totals".into())
                .spawn_scoped(scope, || {
                    self.totals();
                });
            build_messages(&self.branch())
        })
    }

    /// The active branch from the leaf up to the root, leaf first, without collecting it
    /// (reading the last few entries of a long branch costs only those).
    pub fn walk_back(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.walk_back_from(self.leaf.as_deref())
    }

    /// The path from `id` up to its root, root first (empty for `None` or an unknown id).
    pub fn branch_from(&self, id: Option<&str>) -> Vec<&Entry> {
        let mut out: Vec<&Entry> = self.walk_back_from(id).collect();
        out.reverse();
        out
    }

    /// The entries from `id` up to its root, `id` first. A parent cycle (a hand-edited file)
    /// ends the walk after one more step than there are entries.
    fn walk_back_from<'a>(&'a self, id: Option<&str>) -> impl Iterator<Item = &'a Entry> + 'a {
        let mut next = id.and_then(|id| self.entry(id));
        let mut steps = 0usize;
        std::iter::from_fn(move || {
            if steps > self.entries.len() {
                return None;
            }
            let e = next?;
            steps += 1;
            next = e
                .parent_id()
                .filter(|p| *p != e.id())
                .and_then(|p| self.entry(p));
            Some(e)
        })
    }

    /// Counts and usage totals over all entries (`get_session_stats`); computed once, then
    /// updated by every append.
    pub fn totals(&self) -> SessionTotals {
        *self.totals.get_or_init(|| SessionTotals::of(&self.entries))
    }

    /// The LLM context of the active branch (`session-format.md` §6).
    pub fn context(&self) -> SessionContext {
        build_context(&self.branch())
    }

    /// The model and thinking level the active branch records (cheap: no messages are built).
    pub fn selection(&self) -> Selection {
        branch_selection(&self.branch())
    }

    /// The name from the latest `session_info` entry (an empty name clears it).
    pub fn session_name(&self) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.kind() == EntryKind::SessionInfo)
            .and_then(|e| e.get_str("name"))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// `get_entries`: the entries strictly after `since` (all without it).
    pub fn entries_since(&self, since: Option<&str>) -> Result<&[Entry], SessionError> {
        match since {
            None => Ok(&self.entries),
            Some(id) => match self.entries.iter().position(|e| e.id() == id) {
                Some(i) => Ok(&self.entries[i + 1..]),
                None => Err(SessionError::EntryNotFound(id.to_string())),
            },
        }
    }

    /// `get_entries` data as JSON text: `{"entries":[…],"leafId":…}`.
    pub fn entries_json_text(&self, since: Option<&str>) -> Result<String, SessionError> {
        let list = self.entries_since(since)?;
        let mut out = Vec::with_capacity(Self::entries_json_len(list));
        self.write_entries_json(list, &mut out);
        Ok(crate::util::utf8_text(out))
    }

    /// About how many bytes [`Self::write_entries_json`] writes for `list`.
    pub fn entries_json_len(list: &[Entry]) -> usize {
        list.iter().map(|e| e.raw().len() + 1).sum::<usize>() + 64
    }

    /// Appends `{"entries":[…],"leafId":…}` for `list` (from [`Self::entries_since`]) to
    /// `out`: each entry as its stored text when that is the printed form of its value (the
    /// common case: a copy), else printed from the value, so the answer is the same as pi's
    /// `JSON.stringify` of the parsed entries either way.
    pub fn write_entries_json(&self, list: &[Entry], out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"entries\":[");
        for (i, e) in list.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            e.write_json(out);
        }
        out.extend_from_slice(b"],\"leafId\":");
        let leaf = self.leaf.clone().map_or(Value::Null, Value::String);
        crate::js::json::write_js(out, &leaf);
        out.push(b'}');
    }

    /// `get_entries` data as a value (entries parsed).
    pub fn entries_json(&self, since: Option<&str>) -> Result<Value, SessionError> {
        let list: Vec<Value> = self
            .entries_since(since)?
            .iter()
            .map(Entry::to_value)
            .collect();
        let mut m = Map::new();
        m.insert("entries".into(), Value::Array(list));
        m.insert(
            "leafId".into(),
            self.leaf.clone().map_or(Value::Null, Value::String),
        );
        Ok(Value::Object(m))
    }

    /// `get_fork_messages`: every user message in the file (all branches, append order) with
    /// non-empty text.
    pub fn fork_messages(&self) -> Vec<ForkMessage> {
        self.fork_texts()
            .map(|(e, text)| ForkMessage {
                entry_id: e.id().to_string(),
                text: text.into_string(),
            })
            .collect()
    }

    /// Appends the `get_fork_messages` data, `{"messages":[{"entryId","text"}…]}`, to `out`; a
    /// text stored as a string literal in printed form is copied as it is.
    pub fn write_fork_messages_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"messages\":[");
        for (i, (e, text)) in self.fork_texts().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"entryId\":");
            crate::js::json::write_js_of(out, e.id());
            out.extend_from_slice(b",\"text\":");
            text.write_json(out);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
    }

    /// The user message entries with non-empty text, and their text.
    fn fork_texts(&self) -> impl Iterator<Item = (&Entry, UserText<'_>)> + '_ {
        self.entries
            .iter()
            .filter(|e| e.role() == Some(&Role::User))
            .filter_map(|e| {
                let text = match user_text(e.raw()) {
                    Some(t) => t,
                    None => UserText::Text(user_message_text(&e.message()?)),
                };
                (!text.is_empty()).then_some((e, text))
            })
    }

    /// The tree of all entries (`get_tree`), built without recursion.
    pub fn tree(&self) -> tree::Tree<'_> {
        tree::build_tree(&self.entries, &self.labels)
    }

    /// `get_tree` data as JSON text: `{"tree":[…],"leafId":…}`, entries exactly as stored.
    /// Written iteratively, so a 100,000-entry chain (a tree that deep) is no problem.
    pub fn tree_json_text(&self) -> String {
        tree::tree_json_text(&self.entries, &self.labels, self.leaf.as_deref())
    }

    /// About how many bytes [`Self::write_tree_json`] writes.
    pub fn tree_json_len(&self) -> usize {
        tree::tree_json_len(&self.entries)
    }

    /// Appends the `get_tree` data to `out` (see [`Self::tree_json_text`]).
    pub fn write_tree_json(&self, out: &mut Vec<u8>) {
        tree::write_tree_json(&self.entries, &self.labels, self.leaf.as_deref(), out)
    }
}

fn io_err(path: &Path, source: std::io::Error) -> SessionError {
    SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pi-rpc-sm-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn user(text: &str) -> Value {
        json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":1})
    }

    fn assistant(text: &str) -> Value {
        json!({"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m","stopReason":"stop","timestamp":2})
    }

    #[test]
    fn cwd_encoding() {
        assert_eq!(
            encode_cwd(Path::new("/home/user/project")),
            "--home-user-project--"
        );
        assert_eq!(encode_cwd(Path::new("C:\\a\\b")), "--C--a-b--");
    }

    #[test]
    fn session_id_validation() {
        for ok in [
            "a",
            "fx-1",
            "A.b_c-9",
            "01a229aa-9779-71c4-bcb5-273d2cf01557",
        ] {
            assert!(validate_session_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", ".", "a b", "a/b", "é"] {
            let e = validate_session_id(bad).unwrap_err();
            assert!(e.to_string().starts_with("Session id must be non-empty"));
        }
    }

    #[test]
    fn file_is_created_at_first_conversation_message() {
        let dir = temp_dir();
        let mut sm = SessionManager::create(Path::new("/tmp/x"), Some(&dir), None);
        let path = sm.session_file().unwrap().to_path_buf();
        sm.append_model_change("mock", "m").unwrap();
        sm.append_thinking_level_change("medium").unwrap();
        assert!(!path.exists());
        assert!(!sm.file_exists());
        sm.append_message(json!({"role":"user","content":[],"timestamp":1}))
            .unwrap();
        assert!(path.exists());
        sm.append_session_info(" n\r\n\nx ").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("{\"type\":\"session\",\"version\":3,\"id\":"));
        let last: Value = serde_json::from_str(lines[4]).unwrap();
        assert_eq!(last["type"], "session_info");
        assert_eq!(last["name"], "n x");
        assert_eq!(last["parentId"], Value::String(sm.entries()[2].id().into()));
        assert_eq!(sm.session_name().as_deref(), Some("n x"));
        assert_eq!(sm.branch().len(), 4);
        for (line, e) in lines[1..].iter().zip(sm.entries()) {
            assert_eq!(*line, e.raw());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn new_session_goes_where_the_current_one_is() {
        let dir = temp_dir();
        let sm = SessionManager::create(Path::new("/w"), Some(&dir), None);
        let n = sm.new_session(Some("/parent.jsonl".into()));
        assert_ne!(n.session_id(), sm.session_id());
        assert_eq!(n.session_dir(), Some(dir.as_path()));
        assert_eq!(n.cwd(), "/w");
        assert_eq!(n.header().parent_session.as_deref(), Some("/parent.jsonl"));
        let mem = SessionManager::in_memory(Path::new("/w")).new_session(None);
        assert!(!mem.is_persisted());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn totals_follow_appends() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        sm.append_message(user("q")).unwrap();
        assert_eq!(sm.totals().user_messages, 1);
        sm.append_message(json!({"role":"assistant","content":[],"usage":{"input":3,"output":4,"cost":{"total":0.5}}}))
            .unwrap();
        let t = sm.totals();
        assert_eq!(
            (t.total_messages, t.assistant_messages, t.input, t.output),
            (2, 1, 3, 4)
        );
        assert_eq!(t, SessionTotals::of(sm.entries()));
    }

    #[test]
    fn entries_since_and_errors() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        let a = sm.append_model_change("p", "m").unwrap();
        let b = sm.append_thinking_level_change("off").unwrap();
        assert_eq!(sm.entries_since(None).unwrap().len(), 2);
        assert_eq!(
            sm.entries_since(Some(a.id())).unwrap(),
            std::slice::from_ref(&b)
        );
        assert!(sm.entries_since(Some(b.id())).unwrap().is_empty());
        let e = sm.entries_since(Some("nope")).unwrap_err();
        assert_eq!(e.to_string(), "Entry not found: nope");
        let text = sm.entries_json_text(Some(a.id())).unwrap();
        assert_eq!(
            text,
            format!("{{\"entries\":[{}],\"leafId\":\"{}\"}}", b.raw(), b.id())
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, sm.entries_json(Some(a.id())).unwrap());
    }

    /// `get_entries` and `get_messages` copy stored text only when it is already what printing
    /// its value gives; a hand-edited file (spaces, needless escapes, `1.0`, a repeated key) is
    /// answered as pi answers it, with `JSON.stringify` of the parsed value.
    #[test]
    fn hand_edited_entries_are_answered_in_printed_form() {
        let dir = temp_dir();
        let path = dir.join("odd.jsonl");
        let lines = [
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"caf\u00e9 \/ x","timestamp":1.0}}"#,
            r#"{"type": "message", "id":"b","parentId":"a","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"totalTokens":5,"totalTokens":7},"stopReason":"stop","timestamp":2}}"#,
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"user","content":"plain","timestamp":3}}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let sm = SessionManager::open(&path, None, Path::new("/w")).unwrap();
        let values: Vec<Value> = sm
            .entries_since(None)
            .unwrap()
            .iter()
            .map(Entry::to_value)
            .collect();
        let expected = format!(
            "{{\"entries\":{},\"leafId\":\"c\"}}",
            crate::protocol::framing::encode(&values)
        );
        assert_eq!(sm.entries_json_text(None).unwrap(), expected);
        assert!(
            expected.contains(r#""content":"café / x","timestamp":1}"#),
            "{expected}"
        );
        assert!(
            expected.contains(r#""usage":{"totalTokens":7}"#),
            "{expected}"
        );
        // The untouched entry is the stored text itself.
        assert!(expected.contains(lines[3]), "{expected}");
        let tree = sm.tree_json_text();
        assert!(tree.contains(r#""usage":{"totalTokens":7}"#), "{tree}");
        assert!(tree.contains(lines[3]), "{tree}");
        assert!(!tree.contains(r#""type": "#), "{tree}");

        let messages = sm.context_messages();
        let mut out = Vec::new();
        messages.write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            crate::protocol::framing::encode(&messages.to_vec())
        );
        assert_eq!(sm.totals().assistant_messages, 1);

        let mut out = Vec::new();
        sm.write_fork_messages_json(&mut out);
        let items: Vec<Value> = sm
            .fork_messages()
            .into_iter()
            .map(|m| json!({"entryId": m.entry_id, "text": m.text}))
            .collect();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            crate::protocol::framing::encode(&json!({ "messages": items }))
        );
        assert_eq!(sm.fork_messages()[0].text, "café / x");
    }

    #[test]
    fn labels_follow_the_latest_label_entry() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        let a = sm.append_message(user("q")).unwrap();
        let b = sm.append_message(assistant("r")).unwrap();
        sm.append_label(a.id(), Some("first")).unwrap();
        sm.append_label(b.id(), Some("second")).unwrap();
        sm.append_label(a.id(), Some("renamed")).unwrap();
        assert_eq!(sm.label(a.id()).unwrap().label, "renamed");
        assert_eq!(sm.labels()[0].target_id, a.id());
        let clear = sm.append_label(b.id(), None).unwrap();
        assert_eq!(clear.get("label"), None);
        assert!(sm.label(b.id()).is_none());
        assert_eq!(
            sm.append_label("zzz", Some("x")).unwrap_err().to_string(),
            "Entry zzz not found"
        );
    }

    #[test]
    fn fork_copies_the_path_before_the_user_message() {
        let dir = temp_dir();
        let mut sm = SessionManager::create(Path::new("/w"), Some(&dir), None);
        let mc = sm.append_model_change("p", "m").unwrap();
        let u1 = sm.append_message(user("one")).unwrap();
        let a1 = sm.append_message(assistant("A1")).unwrap();
        sm.append_label(u1.id(), Some("start")).unwrap();
        let u2 = sm.append_message(user("two")).unwrap();
        sm.append_message(assistant("A2")).unwrap();

        assert_eq!(
            sm.fork("ffffffff").unwrap_err().to_string(),
            "Invalid entry ID for forking"
        );
        assert!(matches!(
            sm.fork(a1.id()),
            Err(SessionError::InvalidForkEntry)
        ));

        let forked = sm.fork(u2.id()).unwrap();
        assert_eq!(forked.text, "two");
        let f = forked.manager;
        assert_ne!(f.session_id(), sm.session_id());
        assert_eq!(
            f.header().parent_session.as_deref(),
            Some(sm.session_file().unwrap().to_str().unwrap())
        );
        // Path up to the user message's parent: the label entry is dropped from the path and
        // the label re-appended at the end.
        let kinds: Vec<&EntryKind> = f.entries().iter().map(Entry::kind).collect();
        assert_eq!(
            kinds,
            [
                &EntryKind::ModelChange,
                &EntryKind::Message,
                &EntryKind::Message,
                &EntryKind::Label
            ]
        );
        assert_eq!(f.entries()[0], mc);
        assert_eq!(f.entries()[1], u1);
        assert_eq!(f.entries()[2], a1);
        let label = &f.entries()[3];
        assert_eq!(label.parent_id(), Some(a1.id()));
        assert_eq!(label.get_str("targetId").as_deref(), Some(u1.id()));
        assert_eq!(label.timestamp(), sm.label(u1.id()).unwrap().timestamp);
        assert_eq!(f.leaf_id(), Some(label.id()));
        assert_eq!(f.label(u1.id()).unwrap().label, "start");
        // Written at once (the path has a conversation), and it loads back identically.
        let path = f.session_file().unwrap();
        assert!(f.file_exists());
        let back = SessionManager::open(path, None, Path::new("/")).unwrap();
        assert_eq!(back.entries(), f.entries());
        assert_eq!(back.header(), f.header());

        // Forking from the first user message's parent chain.
        let first = sm.fork(u1.id()).unwrap();
        assert_eq!(first.text, "one");
        assert_eq!(first.manager.entries().len(), 1);
        assert!(!first.manager.file_exists(), "no conversation → lazy file");

        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fork_of_a_root_user_message_is_an_empty_session_with_parent() {
        let dir = temp_dir();
        let mut sm = SessionManager::create(Path::new("/w"), Some(&dir), None);
        let u = sm
            .append_message(json!({"role":"user","content":"plain"}))
            .unwrap();
        let f = sm.fork(u.id()).unwrap();
        assert_eq!(f.text, "plain");
        assert!(f.manager.entries().is_empty());
        assert_eq!(f.manager.leaf_id(), None);
        assert_eq!(
            f.manager.header().parent_session.as_deref(),
            sm.session_file().and_then(Path::to_str)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn clone_needs_a_saved_file_and_a_leaf() {
        let dir = temp_dir();
        let mut sm = SessionManager::create(Path::new("/w"), Some(&dir), None);
        assert_eq!(
            sm.clone_session().unwrap_err().to_string(),
            "Cannot clone session: no current entry selected"
        );
        sm.append_model_change("p", "m").unwrap();
        assert_eq!(
            sm.clone_session().unwrap_err().to_string(),
            "This session has not been saved yet. Send a message before cloning or forking it."
        );
        sm.append_message(user("q")).unwrap();
        sm.append_message(assistant("a")).unwrap();
        let c = sm.clone_session().unwrap();
        assert_eq!(c.entries(), sm.entries());
        assert_eq!(c.leaf_id(), sm.leaf_id());
        assert!(c.file_exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn in_memory_fork_and_clone() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        sm.append_model_change("p", "m").unwrap();
        let u = sm.append_message(user("q")).unwrap();
        sm.append_message(assistant("a")).unwrap();
        let c = sm.clone_session().unwrap();
        assert!(!c.is_persisted());
        assert_eq!(c.entries(), sm.entries());
        assert_eq!(c.header().parent_session, None);
        let f = sm.fork(u.id()).unwrap();
        assert_eq!(f.manager.entries().len(), 1);
        assert!(!f.manager.is_persisted());
    }

    #[test]
    fn branched_rechains_around_labels_in_the_path() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        let a = sm.append_message(user("q")).unwrap();
        let l = sm.append_label(a.id(), Some("L")).unwrap();
        let b = sm.append_message(assistant("r")).unwrap();
        assert_eq!(b.parent_id(), Some(l.id()));
        let c = sm.append_compaction("sum", Some(l.id()), 5, None, None, false, None);
        let c = c.unwrap();
        let br = sm.branched(c.id()).unwrap();
        let es = br.entries();
        assert_eq!(es.len(), 4);
        assert_eq!(es[1].id(), b.id());
        assert_eq!(es[1].parent_id(), Some(a.id()));
        // firstKeptEntryId pointed at the dropped label → the entry that followed it.
        assert_eq!(es[2].get_str("firstKeptEntryId").as_deref(), Some(b.id()));
        assert_eq!(es[3].kind(), EntryKind::Label);
        assert_eq!(es[3].parent_id(), Some(c.id()));
    }

    #[test]
    fn context_edit_validation() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        let mc = sm.append_model_change("p", "m").unwrap();
        let a = sm.append_message(assistant("x")).unwrap();
        let e = sm
            .append_context_edit(a.id(), Some(json!({"content": "short"})))
            .unwrap();
        assert_eq!(
            e.get("replacement"),
            Some(json!({"content":[{"type":"text","text":"short"}]}))
        );
        let hide = sm.append_context_edit(a.id(), None).unwrap();
        assert_eq!(hide.get("replacement"), Some(Value::Null));
        assert_eq!(
            sm.append_context_edit(mc.id(), None)
                .unwrap_err()
                .to_string(),
            format!(
                "Entry {} does not contribute editable model content",
                mc.id()
            )
        );
        assert!(sm
            .append_context_edit(a.id(), Some(json!({"x": 1})))
            .is_err());
    }

    #[test]
    fn open_repairs_an_unterminated_last_line_and_appends_after_it() {
        let dir = temp_dir();
        let p = dir.join("s.jsonl");
        std::fs::write(
            &p,
            "{\"type\":\"session\",\"version\":3,\"id\":\"x1\",\"timestamp\":\"t\",\"cwd\":\"/w\"}\n{\"type\":\"model_change\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"provider\":\"p\",\"modelId\":\"m\"}\n{\"type\":\"message\",\"id\":\"b\",\"par",
        )
        .unwrap();
        let mut sm = SessionManager::open(&p, None, Path::new("/")).unwrap();
        assert_eq!(sm.session_id(), "x1");
        assert_eq!(sm.cwd(), "/w");
        assert_eq!(sm.leaf_id(), Some("a"));
        assert_eq!(sm.session_dir(), Some(dir.as_path()));
        let e = sm.append_thinking_level_change("high").unwrap();
        let again = SessionManager::open(&p, None, Path::new("/")).unwrap();
        assert_eq!(again.entries().len(), 2);
        assert_eq!(again.entries()[1], e);
        assert_eq!(again.leaf_id(), Some(e.id()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn open_of_an_empty_file_starts_a_session_in_it() {
        let dir = temp_dir();
        let p = dir.join("empty.jsonl");
        std::fs::write(&p, "").unwrap();
        let sm = SessionManager::open(&p, None, Path::new("/here")).unwrap();
        assert_eq!(sm.cwd(), "/here");
        assert!(sm.file_exists());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("{\"type\":\"session\",\"version\":3,"));
        let back = SessionManager::open(&p, None, Path::new("/")).unwrap();
        assert_eq!(back.session_id(), sm.session_id());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
