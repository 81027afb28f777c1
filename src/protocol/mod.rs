//! Wire types of the RPC protocol and its JSONL framing. No behaviour lives here: the reader,
//! processor and writer threads in `rpc/` use these types to talk to the host.

pub mod command;
pub(crate) mod data;
pub mod event;
pub(crate) mod extension_ui;
pub mod framing;
pub(crate) mod message;
pub mod response;

pub use command::{Command, CommandError, ImageContent, Incoming, StreamingBehavior};
pub use event::Event;
pub use response::Response;
