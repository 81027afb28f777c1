//! The agent thread: it receives session-level runs from the processor and runs them one at a
//! time (`run::run_session`).

use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Sender};
use serde_json::Value;

use super::runtime::{JobReply, PromptReply, Runtime};

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
        reply: JobReply,
        op: super::session_ops::SessionOp,
    },
    /// `compact`: runs after the active run (which the processor aborted) has settled, then
    /// answers the command.
    Compact {
        reply: JobReply,
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
                    AgentJob::Session { reply, op } => super::session_ops::run(&rt, reply, op),
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
