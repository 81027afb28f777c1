//! Compaction (`agent-loop.md` §7): token estimates, the projected context entry by entry, cut
//! points and the summarization requests. The orchestration on the agent thread (the `compact`
//! command, threshold and overflow compaction with their events) is `agent::compaction`.
//!
//! - [`estimate`]: token estimates, the current system message;
//! - [`projection`]: the projection's entry list and edits (from `session::projection`);
//! - [`tokens`]: the context size for the threshold checks and `contextUsage`;
//! - [`cut`]: where to cut, what to summarize (`prepare`);
//! - [`serialize`]: the conversation as text, the file lists;
//! - [`summarize`]: the prompts and the LLM calls with their retry loop.

pub mod cut;
pub mod estimate;
pub mod projection;
pub mod serialize;
pub mod summarize;
pub mod tokens;
