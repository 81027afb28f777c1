//! The agent: the session state commands act on (`state`: model, thinking level, queues, the
//! session tree), the run life cycle (`lifecycle`), the agent thread (`job`, `runtime`), the
//! loop that streams replies and runs tools (`run`, `tools_exec`), what a request is built
//! from (`request_inputs`), compaction on the agent
//! thread (`compaction`), session replacement (`session_ops`), prompt expansion
//! (`prompting`) and the extension hook that shapes a run's start (`ext_hooks`).

pub mod compaction;
mod ext_hooks;
pub mod job;
pub mod lifecycle;
pub mod prompting;
pub mod queue;
mod request_inputs;
pub mod run;
pub mod runtime;
pub mod session_ops;
pub mod state;
pub mod tools_exec;

pub use state::{AgentSession, PromptConfig, StartupSelection};
