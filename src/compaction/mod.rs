//! Compaction: token estimates now; cut points and summaries arrive with the compaction issue.

pub mod estimate;
