//! What the agent thread carries through a run: the shared session state, the output handle,
//! the extension host, and the id of the `prompt` command the run answers.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::state::AgentSession;
use crate::extensions::Extensions;
use crate::output::Output;
use crate::protocol::Event;

/// The agent thread's handles.
#[derive(Clone)]
pub struct Runtime {
    pub state: Arc<Mutex<AgentSession>>,
    pub out: Output,
    pub ext: Arc<Extensions>,
}

impl Runtime {
    /// Writes an agent event after the extensions subscribed to it have handled it (pi:
    /// "extensions first, then the wire"), so their UI and errors precede it.
    pub fn emit(&self, e: &Event) {
        self.observe(e, None);
        self.out.event(e);
    }

    /// Delivers `e` to its subscribers; `extra` fields are added to the payload (pi's event
    /// objects carry a few the wire does not, such as `turn_start.turnIndex`).
    pub fn observe(&self, e: &Event, extra: Option<serde_json::Map<String, Value>>) {
        if !self.ext.wants(e.type_name()) {
            return;
        }
        let mut payload = crate::protocol::data::to_value(e);
        if let (Value::Object(m), Some(extra)) = (&mut payload, extra) {
            m.extend(extra);
        }
        let cancel = self.state.lock().life.run_cancel();
        self.ext.emit(&payload, Some(&cancel));
    }
}

/// The id of the `prompt` command a run answers.
#[derive(Clone, Debug)]
pub struct PromptReply(pub Option<Value>);

/// Who a compaction or a session replacement answers.
pub enum JobReply {
    /// The RPC command with this id (`compact`, `new_session`, ...).
    Rpc(Option<Value>),
    /// An extension's call (`ctx.compact`, `ctx.newSession`, ...).
    Extension(crate::extensions::CallReply),
}

impl JobReply {
    /// Answers with the command's outcome.
    pub fn answer(self, out: &crate::output::Output, command: &str, result: Result<Value, String>) {
        match self {
            JobReply::Rpc(id) => out.response(&match result {
                Ok(data) => crate::protocol::Response::ok(id, command, Some(data)),
                Err(e) => crate::protocol::Response::err(id, command, e),
            }),
            JobReply::Extension(f) => (f.0)(result),
        }
    }
}
