//! The agent: the session runtime that commands act on (model, thinking level, queues, the
//! session tree) and, with the agent-loop issue, the loop that streams replies and runs tools.

pub mod control;
pub mod job;
pub mod queue;
pub mod run;
pub mod session_ops;
pub mod state;
pub mod tools_exec;

pub use state::{AgentSession, PromptConfig, StartupSelection};
