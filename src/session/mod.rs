//! The session: a tree of entries kept in memory and appended, one JSON line each, to a
//! pi-compatible session file (`session-format.md`).
//!
//! - [`entry`]: one entry, stored as its JSON text plus the tree fields;
//! - [`load`]: reading a file (streamed, torn lines skipped, old versions migrated);
//! - [`migrate`]: the v1→v2→v3 migrations;
//! - [`manager`]: the live session (appends, lazy file creation, fork/clone);
//! - [`tree`]: the `get_tree` forest;
//! - [`projection`]: the entries the LLM context is built from and what each contributes;
//! - [`context`]: the LLM context of the active branch;
//! - [`stats`]: counts and usage totals (`get_session_stats`);
//! - [`lookup`]: finding session files for the command line (`--session`, `--continue`, …);
//! - [`messages`]: the context message list (loaded messages kept as JSON text);
//! - [`value`]: JSON parsed into `Value`s with exact-size containers (the context's messages).

pub mod context;
pub mod entry;
pub mod load;
pub mod lookup;
pub mod manager;
pub mod messages;
pub mod migrate;
pub mod projection;
pub mod stats;
pub mod tree;
pub(crate) mod user_text;
pub mod value;

pub use entry::{Entry, EntryKind, Label, SessionHeader};
pub use load::LoadError;
pub use manager::{on_write_failure, ForkMessage, Forked, SessionError, SessionManager};
pub use stats::SessionTotals;
