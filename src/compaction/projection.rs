//! The projected context of a branch, entry by entry: it lives in
//! [`crate::session::projection`], which also builds the agent's context. These names stay here
//! for `runner`.

pub use crate::session::projection::{context_edits, projected_entries};
