//! What the agent thread carries through a run: the shared session state and the output handle,
//! and the id of the `prompt` command the run answers.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::state::AgentSession;
use crate::output::Output;

/// The agent thread's handles.
#[derive(Clone)]
pub struct Runtime {
    pub state: Arc<Mutex<AgentSession>>,
    pub out: Output,
}

/// The id of the `prompt` command a run answers.
#[derive(Clone, Debug)]
pub struct PromptReply(pub Option<Value>);
