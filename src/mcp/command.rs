//! `/mcp` in RPC mode (`mcp.md` §9): status, `reconnect`, `login` / `logout`, as `notify`
//! records. Every form but the too-many-words usage error first waits for the start-up
//! connections.

use super::service::Mcp;
use super::state::{uses_oauth, ConnState, Server};

pub(crate) const USAGE: &str =
    "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]";

/// Asks the client to pick one of `options` (`select` with title `MCP server`); `None` when
/// cancelled or no client can answer.
pub(crate) type Select<'a> = &'a dyn Fn(&str, &[String]) -> Option<String>;

fn state_text(s: &Server) -> String {
    if !s.cfg.enabled {
        return "disabled".into();
    }
    match s.state {
        ConnState::Disconnected => "disconnected, reconnects on next call".into(),
        ConnState::Connected => "connected".into(),
        ConnState::Failed => "failed".into(),
        ConnState::Connecting => "connecting".into(),
        ConnState::Closed => "closed".into(),
        ConnState::NeedsAuth => "needs sign-in".into(),
        ConnState::Disabled => "disabled".into(),
    }
}

/// `connected · 3 tools · resources` (pi's `describeState`, for the reconnect message).
fn describe(s: &Server) -> String {
    match s.state {
        ConnState::Connected => format!(
            "connected · {} tool{}{}",
            s.tools.len(),
            if s.tools.len() == 1 { "" } else { "s" },
            if s.has_resources { " · resources" } else { "" }
        ),
        ConnState::Failed => format!(
            "failed: {}",
            s.error
                .as_deref()
                .unwrap_or("unknown error")
                .split('\n')
                .next()
                .unwrap_or("")
        ),
        ConnState::Connecting => "connecting…".into(),
        _ => state_text(s),
    }
}

impl Mcp {
    /// The `/mcp` status text.
    pub(crate) fn status_text(&self) -> String {
        self.with_state(|st| {
            if st.servers.is_empty() && st.config.errors.is_empty() {
                return format!(
                    "No MCP servers configured. Add them to {} or .pi/mcp.json.",
                    self.opts.agent_dir.join("mcp.json").display()
                );
            }
            let mut lines: Vec<String> = st
                .servers
                .iter()
                .map(|s| {
                    let exposure = s.cfg.exposure.as_str();
                    if s.state == ConnState::NeedsAuth && s.cfg.enabled {
                        return format!(
                            "{0}: needs sign-in, run /mcp login {0} ({exposure})",
                            s.cfg.name
                        );
                    }
                    let tools = if s.state == ConnState::Connected && s.cfg.enabled {
                        format!(", {} tools", s.tools.len())
                    } else {
                        String::new()
                    };
                    let error = match (&s.error, s.state) {
                        (Some(e), state) if state != ConnState::Connected => {
                            format!("\n    {}", e.split('\n').collect::<Vec<_>>().join("\n    "))
                        }
                        _ => String::new(),
                    };
                    format!(
                        "{}: {}{tools} ({exposure}){error}",
                        s.cfg.name,
                        state_text(s)
                    )
                })
                .collect();
            for e in &st.config.errors {
                lines.push(format!("config error: {e}"));
            }
            lines.join("\n")
        })
    }

    /// Runs `/mcp <args>`; `notify(message, notifyType)` writes the output.
    pub(crate) fn command(&self, args: &str, select: Select<'_>) {
        let words: Vec<&str> = args.split_whitespace().collect();
        let notify = |m: &str, t: &str| (self.notify)(m, t);
        if words.len() > 2 {
            return notify(USAGE, "warning");
        }
        // Every form waits for the start-up connections.
        self.wait_startup();
        let Some(action) = words.first() else {
            return notify(&self.status_text(), "info");
        };
        let name = words.get(1).copied();
        match *action {
            "reconnect" => {
                let picked = self.pick(
                    name,
                    &|s| s.cfg.enabled,
                    &|s| matches!(s.state, ConnState::Failed | ConnState::Disconnected),
                    "No enabled MCP server to reconnect.",
                    select,
                );
                let Some(server) = picked else { return };
                match self.reconnect(&server) {
                    Err(e) => notify(&e, "error"),
                    Ok(()) => {
                        let text = self.with_state(|st| {
                            st.servers
                                .iter()
                                .find(|s| s.cfg.name == server)
                                .map(describe)
                                .unwrap_or_default()
                        });
                        notify(
                            &format!("Reconnected to MCP server \"{server}\" ({text})."),
                            "info",
                        )
                    }
                }
            }
            "login" | "logout" => {
                let picked = self.pick(
                    name,
                    &|s| s.cfg.enabled && uses_oauth(&s.cfg),
                    &|s| s.state == ConnState::NeedsAuth,
                    "No enabled MCP server uses OAuth. Only HTTP servers without an Authorization header do.",
                    select,
                );
                let Some(server) = picked else { return };
                if *action == "logout" {
                    // pi-rpc stores no MCP credentials (sign-in is not built yet).
                    notify(
                        &format!("No stored credentials for MCP server \"{server}\"."),
                        "info",
                    )
                } else {
                    notify(
                        &format!(
                            "Signing in to MCP server \"{server}\" (OAuth) is not supported by pi-rpc yet; set an Authorization header in its mcp.json entry instead."
                        ),
                        "error",
                    )
                }
            }
            _ => notify(USAGE, "warning"),
        }
    }

    /// pi's `pickServer`: a named server, the only eligible one, the only preferred one, or
    /// the client's choice.
    fn pick(
        &self,
        name: Option<&str>,
        eligible: &dyn Fn(&Server) -> bool,
        preferred: &dyn Fn(&Server) -> bool,
        none: &str,
        select: Select<'_>,
    ) -> Option<String> {
        let (known, candidates, preferred): (bool, Vec<String>, Vec<String>) =
            self.with_state(|st| {
                let known = name.is_some_and(|n| st.servers.iter().any(|s| s.cfg.name == n));
                let c = st.servers.iter().filter(|s| eligible(s));
                let p: Vec<String> = c
                    .clone()
                    .filter(|s| preferred(s))
                    .map(|s| s.cfg.name.clone())
                    .collect();
                (known, c.map(|s| s.cfg.name.clone()).collect(), p)
            });
        if let Some(n) = name {
            if !known {
                (self.notify)(&format!("No MCP server named \"{n}\"."), "error");
                return None;
            }
            if !candidates.iter().any(|c| c == n) {
                (self.notify)(none, "error");
                return None;
            }
            return Some(n.to_string());
        }
        match (candidates.len(), preferred.len()) {
            (0, _) => {
                (self.notify)(none, "info");
                None
            }
            (1, _) => candidates.into_iter().next(),
            (_, 1) => preferred.into_iter().next(),
            _ => select("MCP server", &candidates).filter(|c| candidates.contains(c)),
        }
    }
}
