//! MCP client support (`mcp.md`): pi's built-in `builtin:mcp` extension, served natively.
//!
//! Servers configured in `<agentDir>/mcp.json` and (trusted) `.pi/mcp.json` are connected in the
//! background at session start; their tools become ordinary tools (`direct`), reachable through
//! `tool_search` (`deferred`, and `codemode` until pi-rpc has a codemode sandbox), or nothing
//! (`hidden`).
//!
//! - `transport`: how JSON-RPC messages travel (the interface the stdio and HTTP transports
//!   implement).

pub(crate) mod transport;
