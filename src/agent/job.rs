//! The agent thread: it receives session-level runs from the processor and runs them one at a
//! time (`run::run_session`).

use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Sender};
use serde_json::Value;

use super::runtime::{PromptReply, Runtime};

/// Who a manual compaction answers.
pub enum CompactReply {
    /// The RPC `compact` command with this id.
    Rpc(Option<Value>),
    /// An extension's `ctx.compact` call.
    Extension(crate::extensions::CallReply),
}

/// Work for the agent thread.
pub enum AgentJob {
    /// Start a session-level run with these initial messages (a user prompt).
    Run {
        /// Set for an RPC `prompt`: the agent thread writes its `started` response.
        reply: Option<PromptReply>,
        user_message: Value,
    },
    /// Replace the session (after the active run, which the processor aborted, has settled).
    Session {
        id: Option<Value>,
        op: super::session_ops::SessionOp,
    },
    /// `compact`: runs after the active run (which the processor aborted) has settled, then
    /// answers the command.
    Compact {
        reply: CompactReply,
        custom_instructions: Option<String>,
        cancel: crate::cancel::CancelToken,
    },
    /// Stop the thread.
    Shutdown,
}

/// Starts the agent thread.
pub fn spawn(
    rt: Runtime,
    runner: fn(&Runtime, Option<PromptReply>, Value),
) -> std::io::Result<(Sender<AgentJob>, JoinHandle<()>)> {
    let (tx, rx) = bounded::<AgentJob>(16);
    let handle = std::thread::Builder::new()
        .name("agent".into())
        .spawn(move || {
            for job in rx {
                match job {
                    AgentJob::Run {
                        reply,
                        user_message,
                    } => runner(&rt, reply, user_message),
                    AgentJob::Session { id, op } => super::session_ops::run(&rt, id, op),
                    AgentJob::Compact {
                        reply,
                        custom_instructions,
                        cancel,
                    } => super::compaction::manual(&rt, reply, custom_instructions, cancel),
                    AgentJob::Shutdown => break,
                }
            }
        })?;
    Ok((tx, handle))
}
