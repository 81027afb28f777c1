//! How JSON-RPC messages travel between pi-rpc and one MCP server (`mcp.md` §4.1, §4.6).
//!
//! A transport moves whole JSON-RPC messages. It never waits for an answer: `send` returns once
//! the message is on its way, and everything the server sends (answers, requests, notifications)
//! arrives at the connection's [`Sink`] on a thread the transport owns. The connection
//! (`mcp::conn`) matches answers to requests, keeps timeouts and handles cancellation.

use std::sync::Arc;

use serde_json::Value;

/// What a transport reports to its connection.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// One JSON-RPC message from the server (an answer, a request or a notification).
    Message(Value),
    /// The request with this id failed in transit (an HTTP status, a broken response stream):
    /// the connection fails the waiting call with `message`.
    Failed { id: u64, message: String },
    /// The connection is gone (process exit, stream end): pending calls fail with `MCP
    /// connection closed`, and the server's stored error becomes `Connection closed` (plus the
    /// stderr tail).
    Closed,
}

/// Where a transport delivers what arrives. Called from the transport's own threads, in arrival
/// order for one stream.
pub(crate) type Sink = Arc<dyn Fn(Incoming) + Send + Sync>;

/// One open transport to a server.
pub(crate) trait Transport: Send + Sync {
    /// Sends one message (a request, a notification or an answer to a server request). Returns
    /// an error text when the message cannot be sent at all (the process is gone).
    fn send(&self, msg: &Value) -> Result<(), String>;
    /// The handshake's outcome: the negotiated protocol version (HTTP sends it as a header on
    /// every later request), just before `notifications/initialized` is sent.
    fn initialized(&self, _protocol_version: &str) {}
    /// Closes the transport: stdio closes the child's stdin and ends its process group
    /// (§3.5); HTTP sends a best-effort `DELETE` for its session. Idempotent.
    fn close(&self);
    /// The last 2000 characters of what the server wrote to stderr, trimmed (stdio only).
    fn stderr_tail(&self) -> Option<String> {
        None
    }
}
