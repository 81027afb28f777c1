//! Session replacement (`new_session`, `switch_session`, `fork`, `clone`) on the agent thread:
//! it runs after the active run (aborted by the processor first) has settled, so a session is
//! never swapped under a running turn. No events are emitted; the response carries the result.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::runtime::Runtime;
use crate::session::SessionManager;

/// A session replacement requested by a command.
#[derive(Clone, Debug)]
pub enum SessionOp {
    New { parent_session: Option<String> },
    Switch { path: String },
    Fork { entry_id: String },
    Clone,
}

impl SessionOp {
    /// The `session_start` / `session_shutdown` reason of the replacement.
    pub fn reason(&self) -> &'static str {
        match self {
            SessionOp::New { .. } => "new",
            SessionOp::Switch { .. } => "resume",
            SessionOp::Fork { .. } | SessionOp::Clone => "fork",
        }
    }

    pub fn command(&self) -> &'static str {
        match self {
            SessionOp::New { .. } => "new_session",
            SessionOp::Switch { .. } => "switch_session",
            SessionOp::Fork { .. } => "fork",
            SessionOp::Clone => "clone",
        }
    }
}

/// Performs `op` and answers the command. The state lock is held only to read the current
/// session and to install the new one: loading a file and building its context (a second or more
/// for a 100k-entry session) happen without it, so state commands are answered meanwhile.
pub fn run(rt: &Runtime, reply: super::runtime::JobReply, op: SessionOp) {
    let command = op.command();
    if before_hook_cancels(rt, &op) {
        return reply.answer(&rt.out, command, Ok(json!({"cancelled": true})));
    }
    let reason = op.reason();
    let result = prepare(rt, op).map(|(manager, data)| {
        let messages = manager.context_messages();
        let target = manager
            .session_file()
            .map(|p| p.to_string_lossy().into_owned());
        // The old runtime's `session_shutdown` handlers see the old session (§A7.7).
        rt.ext.end_runtime(reason, target.as_deref());
        let old = rt.state.lock().install_session(manager, messages);
        let previous = old
            .0
            .session_file()
            .map(|p| p.to_string_lossy().into_owned());
        drop(old);
        rt.ext.start_runtime(reason, previous.as_deref());
        if !rt.ext.is_empty() {
            // The fresh runtime's tools replace the old runtime's.
            let tools = rt.ext.tools();
            crate::extensions::install_tools(&mut rt.state.lock().resources.tools, tools);
        }
        data
    });
    reply.answer(&rt.out, command, result);
}

/// `session_before_switch` / `session_before_fork` (§A4): true when an extension cancelled.
fn before_hook_cancels(rt: &Runtime, op: &SessionOp) -> bool {
    let payload = match op {
        SessionOp::New { .. } => json!({"type": "session_before_switch", "reason": "new"}),
        SessionOp::Switch { path } => json!({"type": "session_before_switch", "reason": "resume",
            "targetSessionFile": path}),
        SessionOp::Fork { entry_id } => json!({"type": "session_before_fork", "entryId": entry_id,
            "position": "before"}),
        SessionOp::Clone => {
            let leaf = rt.state.lock().session.leaf_id().map(str::to_string);
            json!({"type": "session_before_fork", "entryId": leaf, "position": "at"})
        }
    };
    let name = payload["type"].as_str().unwrap_or_default();
    rt.ext.wants(name) && rt.ext.emit_cancellable(&payload)
}

/// The session `op` makes current, and the response data.
fn prepare(rt: &Runtime, op: SessionOp) -> Result<(SessionManager, Value), String> {
    match op {
        SessionOp::New { parent_session } => {
            let manager = rt.state.lock().session.new_session(parent_session);
            Ok((manager, json!({"cancelled": false})))
        }
        SessionOp::Switch { path } => {
            let cwd = rt.state.lock().cwd.clone();
            // pi resolves the path (and a header without a cwd) against the process cwd, which
            // stays where pi-rpc started even after a session with another cwd was loaded.
            let base = std::env::current_dir().unwrap_or_else(|_| cwd.clone());
            let path = crate::util::resolve_path(&base, &path);
            if !path.exists() {
                // Deliberate deviation from pi (which starts an empty session at that path).
                return Err(format!("Session file not found: {}", path.display()));
            }
            // As pi's `SessionManager.open(path)` without a session dir: sessions made from the
            // opened one (new_session, fork, clone) go next to the opened file, whatever
            // `--session-dir` said.
            let manager = SessionManager::open(&path, None, &base).map_err(|e| e.to_string())?;
            // As pi: a session whose recorded working directory is gone is not switched to.
            manager.check_cwd_exists(&cwd).map_err(|e| e.to_string())?;
            Ok((manager, json!({"cancelled": false})))
        }
        SessionOp::Fork { entry_id } => {
            let forked = rt
                .state
                .lock()
                .session
                .fork(&entry_id)
                .map_err(|e| e.to_string())?;
            Ok((
                forked.manager,
                json!({"text": forked.text, "cancelled": false}),
            ))
        }
        SessionOp::Clone => {
            let manager = rt
                .state
                .lock()
                .session
                .clone_session()
                .map_err(|e| e.to_string())?;
            Ok((manager, json!({"cancelled": false})))
        }
    }
}

/// `export_html` of a snapshot of the session (`SessionManager::snapshot`), so the session lock
/// is not held while the page is rendered and written. Relative paths are relative to the
/// process cwd (`fallback_cwd` if it cannot be read).
pub fn export_html(
    snapshot: &SessionManager,
    fallback_cwd: &Path,
    output_path: Option<&str>,
) -> Result<String, String> {
    let cwd: PathBuf = std::env::current_dir().unwrap_or_else(|_| fallback_cwd.to_path_buf());
    crate::export::export_html(snapshot, output_path, &cwd).map_err(|e| e.to_string())
}
