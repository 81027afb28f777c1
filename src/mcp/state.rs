//! The in-memory state of a session's MCP servers (`mcp.md` §3, §5): each server's
//! configuration, connection state and listing, the tools registered for them, and the tool
//! filter of `--tools` / `--exclude-tools`. `service` changes it; `registry` reads it.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::config::{Exposure, McpConfig, ServerConfig, TransportConfig};
use super::conn::Client;
use super::naming::Names;

/// `--tools` / `--exclude-tools` as they apply to MCP tools (§6.4).
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolFilter {
    /// Set when a `--tools` entry starts with `mcp__`: only matching MCP tools are registered.
    pub include: Option<Vec<String>>,
    pub exclude: Vec<String>,
}

impl ToolFilter {
    pub(crate) fn from_cli(tools: Option<&[String]>, exclude: Option<&[String]>) -> ToolFilter {
        let include = tools
            .filter(|t| t.iter().any(|e| e.starts_with("mcp__")))
            .map(<[String]>::to_vec);
        ToolFilter {
            include,
            exclude: exclude.map(<[String]>::to_vec).unwrap_or_default(),
        }
    }

    pub(crate) fn admits(&self, name: &str) -> bool {
        if self.exclude.iter().any(|p| glob(p, name)) {
            return false;
        }
        match &self.include {
            Some(list) => list.iter().any(|p| glob(p, name)),
            None => true,
        }
    }
}

/// `*` matches any run of characters.
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((pre, rest)) => {
            name.starts_with(pre)
                && (pre.len()..=name.len())
                    .filter(|i| name.is_char_boundary(*i))
                    .any(|i| glob(rest, &name[i..]))
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnState {
    Connecting,
    Connected,
    Failed,
    Disconnected,
    /// The server wants a sign-in (HTTP 401 with OAuth or a provider token).
    NeedsAuth,
    Closed,
    Disabled,
}

pub(crate) struct Server {
    pub(crate) cfg: ServerConfig,
    pub(crate) state: ConnState,
    pub(crate) error: Option<String>,
    pub(crate) client: Option<Arc<Client>>,
    /// The raw `tools/list` entries.
    pub(crate) tools: Vec<Value>,
    pub(crate) has_resources: bool,
    pub(crate) instructions: Option<String>,
    /// Which connect attempt is current; results of older ones are dropped.
    pub(crate) attempt: u64,
    /// A connect attempt is running (the server is not "ready" yet).
    pub(crate) busy: bool,
}

/// A tool registered for a server tool (or a resource tool), in registration order.
#[derive(Clone, Debug)]
pub(crate) struct Registered {
    pub(crate) name: String,
    pub(crate) server: String,
    pub(crate) raw: String,
    pub(crate) definition: Value,
    pub(crate) exposure: Exposure,
}

pub(crate) struct St {
    pub(crate) generation: u64,
    pub(crate) config: McpConfig,
    pub(crate) servers: Vec<Server>,
    pub(crate) names: Names,
    /// Every tool registered this session, in registration (connection) order.
    pub(crate) registered: Vec<Registered>,
    /// MCP tools in the order they became declared, as pi appends to the active tools: a
    /// direct tool when first registered, the resource tools once they are direct, a tool
    /// `tool_search` loaded when it loaded it.
    pub(crate) order: Vec<String>,
    /// Tools `tool_search` activated, in activation order.
    pub(crate) loaded: Vec<String>,
    pub(crate) startup_pending: usize,
    /// Every start-up attempt settled and the start-up report (if any) is written.
    pub(crate) startup_done: bool,
    pub(crate) waited_direct: bool,
    pub(crate) cwd: PathBuf,
}

/// HTTP servers sign in with OAuth unless the entry has an `Authorization` header or `auth`.
pub(crate) fn uses_oauth(cfg: &ServerConfig) -> bool {
    match &cfg.transport {
        TransportConfig::Http {
            headers,
            auth_provider,
            ..
        } => {
            auth_provider.is_none()
                && !headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        }
        TransportConfig::Stdio { .. } => false,
    }
}

/// pi's text for a server that needs a sign-in.
pub(crate) fn sign_in_required(cfg: &ServerConfig) -> String {
    let how = match &cfg.transport {
        TransportConfig::Http {
            auth_provider: Some(p),
            ..
        } => format!("/login {p}"),
        _ => "/mcp".to_string(),
    };
    format!(
        "MCP server \"{}\" requires sign-in. Run {how} to sign in.",
        cfg.name
    )
}

/// Whether an authentication failure of `cfg` means "needs sign-in" (rather than a failure).
pub(crate) fn needs_sign_in(cfg: &ServerConfig, message: &str) -> bool {
    message == super::http::AUTH_REQUIRED
        && (uses_oauth(cfg)
            || matches!(
                &cfg.transport,
                TransportConfig::Http {
                    auth_provider: Some(_),
                    ..
                }
            ))
}
