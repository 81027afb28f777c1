//! RPC mode: the reader thread (stdin → commands), the processor thread (commands → session
//! calls → responses), and the writer thread (the only code that touches stdout).

pub(crate) mod ext_actions;
mod ext_stages;
pub(crate) mod ext_worker;
pub mod processor;
pub mod reader;
pub mod writer;
