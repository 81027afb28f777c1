//! The agent: the session runtime that commands act on (model, thinking level, queues, the
//! session tree) and, with the agent-loop issue, the loop that streams replies and runs tools.

pub mod compaction;
pub mod job;
pub mod lifecycle;
pub mod prompting;
pub mod queue;
pub mod run;
pub mod runtime;
pub mod session_ops;
pub mod state;
pub mod tools_exec;

pub use state::{AgentSession, PromptConfig, StartupSelection};
