//! Session replacement (`new_session`, `switch_session`, `fork`, `clone`) on the agent thread:
//! it runs after the active run (aborted by the processor first) has settled, so a session is
//! never swapped under a running turn. No events are emitted; the response carries the result.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::job::Runtime;
use super::state::AgentSession;
use crate::protocol::Response;
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
    pub fn command(&self) -> &'static str {
        match self {
            SessionOp::New { .. } => "new_session",
            SessionOp::Switch { .. } => "switch_session",
            SessionOp::Fork { .. } => "fork",
            SessionOp::Clone => "clone",
        }
    }
}

/// Performs `op` and answers the command.
pub fn run(rt: &Runtime, id: Option<Value>, op: SessionOp) {
    let command = op.command();
    let result = {
        let mut s = rt.state.lock();
        apply(&mut s, op)
    };
    match result {
        Ok(data) => rt.out.response(&Response::ok(id, command, Some(data))),
        Err(e) => rt.out.response(&Response::err(id, command, e)),
    }
}

fn apply(s: &mut AgentSession, op: SessionOp) -> Result<Value, String> {
    match op {
        SessionOp::New { parent_session } => {
            let manager = s.session.new_session(parent_session);
            s.replace_session(manager);
            Ok(json!({"cancelled": false}))
        }
        SessionOp::Switch { path } => {
            let path = crate::util::resolve_path(&s.cwd, &path);
            if !path.exists() {
                // Deliberate deviation from pi (which starts an empty session at that path).
                return Err(format!("Session file not found: {}", path.display()));
            }
            let manager = SessionManager::open(&path, s.session.session_dir(), &s.cwd)
                .map_err(|e| e.to_string())?;
            s.replace_session(manager);
            Ok(json!({"cancelled": false}))
        }
        SessionOp::Fork { entry_id } => {
            let forked = s.session.fork(&entry_id).map_err(|e| e.to_string())?;
            s.replace_session(forked.manager);
            Ok(json!({"text": forked.text, "cancelled": false}))
        }
        SessionOp::Clone => {
            let manager = s.session.clone_session().map_err(|e| e.to_string())?;
            s.replace_session(manager);
            Ok(json!({"cancelled": false}))
        }
    }
}

/// Where `export_html` writes by default, relative to the process cwd.
pub fn export_html(s: &AgentSession, output_path: Option<&str>) -> Result<String, String> {
    let cwd: PathBuf = std::env::current_dir().unwrap_or_else(|_| s.cwd.clone());
    crate::export::export_html(&s.session, output_path, &cwd).map_err(|e| e.to_string())
}
