//! MCP client support (`mcp.md`): pi's built-in `builtin:mcp` extension, served natively.
//!
//! Servers configured in `<agentDir>/mcp.json` and (trusted) `.pi/mcp.json` are connected in the
//! background at session start; their tools become ordinary tools (`direct`), reachable through
//! `tool_search` (`deferred`, and `codemode` until pi-rpc has a codemode sandbox), or nothing
//! (`hidden`).
//!
//! - `config`: `mcp.json` (user and trusted project) read and validated into server configs;
//!   `expand`: `$VAR` / `!command` expansion of `env` and `headers` values when a connection
//!   opens.
//! - `transport`: how JSON-RPC messages travel (the interface the stdio and HTTP transports
//!   implement); `stdio`: servers as child processes; `http`: the streamable HTTP transport
//!   (POST per message, JSON or SSE answers, the GET stream, session ids, `DELETE` on close);
//!   `http/sse.rs` reads its event streams and resumes them.
//! - `conn`: one JSON-RPC client connection: the handshake, ids, timeouts re-armed by progress,
//!   cancellation, paginated lists.
//! - `state`: what is known of the servers and their tools; `service`: the session's servers, their states, connects and reconnects, the waits of
//!   prompts, calls and `/mcp`, the start-up report.
//! - `registry`: which tools exist and which are declared; the `mcp_servers` section.
//! - `tools`: the tools the model calls (server tools, resource tools, `tool_search`).
//! - `naming`: tool names (`mcp__<server>__<tool>`, hashed when too long or colliding).
//! - `convert`: tool descriptions and parameters, results as model content, the 20 KiB limit.
//! - `search`: `tool_search` ranking (BM25 over names, descriptions and schemas).
//! - `command`: `/mcp`; `log`: server log messages to `<agentDir>/mcp.log`.

pub(crate) mod command;
pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod convert;
pub(crate) mod expand;
pub(crate) mod http;
pub(crate) mod log;
pub(crate) mod naming;
pub(crate) mod registry;
pub(crate) mod search;
pub(crate) mod service;
pub(crate) mod state;
pub(crate) mod stdio;
pub(crate) mod tools;
pub(crate) mod transport;
