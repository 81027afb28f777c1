//! Compaction (`agent-loop.md` §7): token estimates, cut
//! points and the summarization requests. The orchestration on the agent thread (the `compact`
//! command, threshold and overflow compaction with their events) is `agent::compaction`.
//!
//! - [`estimate`]: token estimates, the current system message;
//! - [`tokens`]: the context size for the threshold checks and `contextUsage`;
//! - [`cut`]: where to cut, what to summarize (`prepare`);
//! - [`serialize`]: the conversation as text, the file lists;
//! - [`summarize`]: the prompts and the LLM calls with their retry loop.

pub mod cut;
pub mod estimate;
pub mod serialize;
pub mod summarize;
pub mod tokens;
