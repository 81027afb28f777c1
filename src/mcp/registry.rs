//! Which MCP tools exist and which reach the model (`mcp.md` §5, §6): tool names and
//! definitions per server listing, exposures, the resource tools' place and exposure, what
//! `tool_search` activated, and the `mcp_servers` system-prompt section.
//!
//! **Deviation (README, "Differences"):** pi-rpc has no codemode sandbox yet. A tool whose
//! exposure is `codemode` is served as `deferred` — `tool_search` is activated for it and can
//! load it — as long as `autoEnableCodemode` allows the discovery tool pi would have activated;
//! the section lists such servers as `(tool_search)`. As in pi, an active `tool_search` finds
//! `codemode` tools as well as `deferred` ones.

use serde_json::{json, Value};

use super::config::Exposure;
use super::state::{ConnState, Registered, Server, St, ToolFilter};

pub(crate) const LIST_RESOURCES: &str = "list_mcp_resources";
pub(crate) const LIST_TEMPLATES: &str = "list_mcp_resource_templates";
pub(crate) const READ_RESOURCE: &str = "read_mcp_resource";
pub(crate) const TOOL_SEARCH: &str = "tool_search";
pub(crate) const SECTION: &str = "mcp_servers";

const MAX_SERVER_DESCRIPTION_CHARS: usize = 250;
const MAX_SECTION_CHARS: usize = 4096;

/// Registers (or re-registers) the tools `server` lists now (§5.3): new names are assigned,
/// known ones keep their place, and tools no longer offered become hidden.
pub(crate) fn register_server_tools(st: &mut St, server: &str, filter: &ToolFilter) {
    let Some(s) = st.servers.iter().find(|s| s.cfg.name == server) else {
        return;
    };
    let cfg = s.cfg.clone();
    let listing = s.tools.clone();
    let raws: Vec<String> = listing
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let names = st.names.assign(server, &raws);
    let mut current: Vec<String> = Vec::new();
    for ((tool, raw), name) in listing.iter().zip(&raws).zip(names) {
        if !filter.admits(&name) {
            continue;
        }
        let definition = json!({
            "name": name,
            "description": super::convert::description_of(tool, server),
            "parameters": super::convert::parameters_of(
                tool.get("inputSchema").unwrap_or(&Value::Null)),
        });
        let reg = Registered {
            name: name.clone(),
            server: server.to_string(),
            raw: raw.clone(),
            definition,
            exposure: cfg.exposure_of(raw),
        };
        match st.registered.iter_mut().find(|r| r.name == name) {
            Some(slot) => *slot = reg,
            None => st.registered.push(reg),
        }
        current.push(name);
    }
    let mut withdrawn = Vec::new();
    for r in st.registered.iter_mut() {
        if r.server == server && !current.contains(&r.name) && !is_resource_tool(&r.name) {
            r.exposure = Exposure::Hidden;
            withdrawn.push(r.name.clone());
        }
    }
    // A withdrawn tool leaves the declared set; offered again, it is declared at the end.
    st.order.retain(|n| !withdrawn.contains(n));
    st.loaded.retain(|n| !withdrawn.contains(n));
    // Direct tools are declared on registration, after what is declared already; the
    // resource tools follow the tools of the server that made them direct.
    for name in current {
        let direct = st
            .registered
            .iter()
            .any(|r| r.name == name && r.exposure == Exposure::Direct);
        if direct && !st.order.contains(&name) {
            st.order.push(name);
        }
    }
    if resource_exposure(st) == Some(Exposure::Direct) {
        for n in [LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE] {
            if !st.order.iter().any(|o| o == n) {
                st.order.push(n.to_string());
            }
        }
    }
}

pub(crate) fn is_resource_tool(name: &str) -> bool {
    matches!(name, LIST_RESOURCES | LIST_TEMPLATES | READ_RESOURCE)
}

/// Whether `codemode` exposures are served through `tool_search` (see the module doc).
fn codemode_served(st: &St) -> bool {
    st.config.auto_enable_codemode
}

/// The resource tools' exposure: the widest among enabled, non-hidden, connected servers with
/// resources (§8); `None` when there are none.
pub(crate) fn resource_exposure(st: &St) -> Option<Exposure> {
    let exposures: Vec<Exposure> = st
        .servers
        .iter()
        .filter(|s| {
            s.cfg.enabled
                && s.has_resources
                && s.cfg.exposure != Exposure::Hidden
                && matches!(s.state, ConnState::Connected | ConnState::Disconnected)
        })
        .map(|s| s.cfg.exposure)
        .collect();
    [Exposure::Direct, Exposure::Codemode, Exposure::Deferred]
        .into_iter()
        .find(|e| exposures.contains(e))
}

/// Whether `tool_search` is active: some enabled server has tools it can load.
pub(crate) fn tool_search_active(st: &St) -> bool {
    st.servers.iter().any(|s| {
        s.cfg.enabled
            && s.cfg.exposures().into_iter().any(|e| {
                e == Exposure::Deferred || (e == Exposure::Codemode && codemode_served(st))
            })
    })
}

/// Whether some enabled server's tools cannot be reached at all (pi's warning, §6.1).
pub(crate) fn unreachable_tools(st: &St) -> bool {
    !tool_search_active(st)
        && st
            .servers
            .iter()
            .any(|s| s.cfg.enabled && s.cfg.exposures().contains(&Exposure::Codemode))
}

/// One tool as the model may see it.
#[derive(Clone, Debug)]
pub(crate) enum Declared {
    Server(Registered),
    Resource(&'static str),
    ToolSearch,
}

/// Whether a registered tool is declared now: `direct`, or loaded by `tool_search`.
fn declared(st: &St, r: &Registered) -> bool {
    let enabled = st
        .servers
        .iter()
        .any(|s| s.cfg.name == r.server && s.cfg.enabled);
    enabled
        && match r.exposure {
            Exposure::Direct => true,
            Exposure::Deferred | Exposure::Codemode => st.loaded.contains(&r.name),
            Exposure::Hidden => false,
        }
}

/// The MCP tools to declare, in pi's order: `tool_search` (activated from the configuration),
/// then the others in the order they became declared ([`St::order`]).
pub(crate) fn declared_tools(st: &St, filter: &ToolFilter) -> Vec<Declared> {
    let mut out = Vec::new();
    if tool_search_active(st) {
        out.push(Declared::ToolSearch);
    }
    let resources = resource_exposure(st);
    for name in &st.order {
        if let Some(n) = [LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE]
            .into_iter()
            .find(|n| n == name)
        {
            let declared = match resources {
                Some(Exposure::Direct) => true,
                Some(_) => st.loaded.iter().any(|l| l == n),
                None => false,
            };
            if declared && filter.admits(n) {
                out.push(Declared::Resource(n));
            }
        } else if let Some(r) = st.registered.iter().find(|r| &r.name == name) {
            if declared(st, r) {
                out.push(Declared::Server(r.clone()));
            }
        }
    }
    out
}

/// The tools `tool_search` can load: not declared yet, exposure (as served) `deferred`.
pub(crate) fn searchable(st: &St) -> Vec<Registered> {
    let mut out: Vec<Registered> = st
        .registered
        .iter()
        .filter(|r| {
            matches!(r.exposure, Exposure::Deferred | Exposure::Codemode)
                && !st.loaded.contains(&r.name)
                && st
                    .servers
                    .iter()
                    .any(|s| s.cfg.name == r.server && s.cfg.enabled)
        })
        .cloned()
        .collect();
    if let Some(e) = resource_exposure(st) {
        if matches!(e, Exposure::Deferred | Exposure::Codemode) {
            for n in [LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE] {
                if !st.loaded.iter().any(|l| l == n) {
                    out.push(Registered {
                        name: n.to_string(),
                        server: String::new(),
                        raw: n.to_string(),
                        definition: resource_definition(n),
                        exposure: Exposure::Deferred,
                    });
                }
            }
        }
    }
    out
}

/// The first line of the trimmed description, else of the server's instructions.
fn summary(description: Option<&str>, instructions: Option<&str>) -> String {
    let pick = description
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .or(instructions.map(str::trim).filter(|i| !i.is_empty()))
        .unwrap_or("");
    pick.split('\n').next().unwrap_or("").to_string()
}

/// Cuts `text` to `max` UTF-16 units with `…` (pi's `truncate`).
fn cut(text: &str, max: usize) -> String {
    let len = crate::js::utf16::len(text);
    if len <= max {
        return text.to_string();
    }
    if max <= 1 {
        return String::new();
    }
    let mut out = String::new();
    let mut units = 0;
    for c in text.chars() {
        units += c.len_utf16();
        if units > max - 1 {
            break;
        }
        out.push(c);
    }
    format!("{}…", out.trim_end())
}

/// The `mcp_servers` section (§6.5), or `None` when no enabled server has indirect tools.
pub(crate) fn section(st: &St) -> Option<String> {
    let mut listed: Vec<&Server> = st
        .servers
        .iter()
        .filter(|s| {
            s.cfg.enabled
                && s.cfg
                    .exposures()
                    .iter()
                    .any(|e| matches!(e, Exposure::Codemode | Exposure::Deferred))
        })
        .collect();
    if listed.is_empty() {
        return None;
    }
    listed.sort_by(|a, b| a.cfg.name.cmp(&b.cfg.name));
    let reaches: Vec<&str> = listed
        .iter()
        .map(|s| {
            if s.cfg.exposures().contains(&Exposure::Codemode) && !codemode_served(st) {
                "codemode"
            } else {
                "tool_search"
            }
        })
        .collect();
    // Our words, as long as pi's sentences: the section's size budget (and so how much of each
    // summary fits) comes out as in pi.
    let mut intro = String::from("These MCP servers have tools you cannot see yet.");
    if reaches.contains(&"codemode") {
        intro.push_str(" Tools of `codemode` servers need codemode, which is absent.");
    }
    if reaches.contains(&"tool_search") {
        intro.push_str(" Load tools of `tool_search` servers by using `tool_search`.");
    }
    let heads: Vec<String> = listed
        .iter()
        .zip(&reaches)
        .map(|(s, r)| format!("- {} ({r})", s.cfg.namespace()))
        .collect();
    let omitted = |count: usize| -> Vec<String> {
        if count == 0 {
            Vec::new()
        } else {
            vec![format!(
                "- … {count} more server{}; find their tools with `tool_search`",
                if count == 1 { "" } else { "s" }
            )]
        }
    };
    let size = |kept: usize| -> usize {
        let mut parts = vec![intro.clone()];
        parts.extend(heads[..kept].iter().cloned());
        parts.extend(omitted(listed.len() - kept));
        crate::js::utf16::len(&parts.join("\n"))
    };
    let mut kept = listed.len();
    while kept > 0 && size(kept) > MAX_SECTION_CHARS {
        kept -= 1;
    }
    let per_server = MAX_SECTION_CHARS
        .saturating_sub(size(kept))
        .checked_div(kept)
        .map_or(0, |n| n.saturating_sub(2).min(MAX_SERVER_DESCRIPTION_CHARS));
    let mut lines = vec![intro.clone()];
    for (s, head) in listed.iter().zip(&heads).take(kept) {
        let text = if per_server > 0 {
            cut(
                &summary(s.cfg.description.as_deref(), s.instructions.as_deref()),
                per_server,
            )
        } else {
            String::new()
        };
        if text.is_empty() {
            lines.push(head.clone());
        } else {
            lines.push(format!("{head}: {text}"));
        }
    }
    lines.extend(omitted(listed.len() - kept));
    Some(lines.join("\n"))
}

/// The parameters of a resource tool (§8).
pub(crate) fn resource_parameters(name: &str) -> Value {
    if name == READ_RESOURCE {
        json!({"type": "object", "properties": {
            "server": {"type": "string", "description": "The MCP server's name, as list_mcp_resources reports it."},
            "uri": {"type": "string", "description": "The URI of the resource, as list_mcp_resources reports it."}},
            "required": ["server", "uri"], "additionalProperties": false})
    } else {
        json!({"type": "object", "properties": {
            "server": {"type": "string", "description": "Only this MCP server; leave out to list every server that has resources."},
            "cursor": {"type": "string", "description": "The nextCursor of an earlier call for the same server; leave out for the first page."}},
            "additionalProperties": false})
    }
}

pub(crate) fn resource_description(name: &str) -> &'static str {
    match name {
        // Our words over the same terms as pi's descriptions, so `tool_search` ranks these
        // tools as pi does.
        LIST_RESOURCES => "Lists the resources MCP servers provide. With resources, servers share data that gives language models context, such as files, database schemas or application-specific information. Prefer resources to a web search when possible.",
        LIST_TEMPLATES => "Lists the resource templates MCP servers provide. With parameterized resource templates, servers share data that gives language models context, such as files, database schemas or application-specific information. Prefer resource templates to a web search when possible.",
        _ => "Reads one resource of an MCP server, given the server name and the resource URI.",
    }
}

/// A resource tool's definition (`{name, description, parameters}`).
pub(crate) fn resource_definition(name: &str) -> Value {
    json!({"name": name, "description": resource_description(name),
        "parameters": resource_parameters(name)})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::{McpConfig, ServerConfig, TransportConfig};
    use crate::mcp::state::Server;
    use serde_json::json;
    use std::time::Duration;

    fn server(name: &str, exposure: Exposure, description: Option<&str>) -> Server {
        Server {
            cfg: ServerConfig {
                name: name.into(),
                transport: TransportConfig::Stdio {
                    command: "x".into(),
                    args: Vec::new(),
                    env: Vec::new(),
                    cwd: "/".into(),
                },
                enabled: true,
                timeout: Duration::from_secs(60),
                description: description.map(str::to_string),
                exposure,
                tool_exposure: Vec::new(),
                source: "/mcp.json".into(),
            },
            state: ConnState::Connected,
            error: None,
            client: None,
            tools: Vec::new(),
            has_resources: false,
            instructions: None,
            attempt: 1,
            busy: false,
        }
    }

    fn state(servers: Vec<Server>) -> St {
        St {
            generation: 1,
            config: McpConfig::default(),
            servers,
            names: Default::default(),
            registered: Vec::new(),
            order: Vec::new(),
            loaded: Vec::new(),
            startup_pending: 0,
            startup_done: true,
            waited_direct: false,
            cwd: "/".into(),
        }
    }

    fn listed(st: &mut St, server: &str, tools: &[&str]) {
        let s = st
            .servers
            .iter_mut()
            .find(|s| s.cfg.name == server)
            .unwrap();
        s.tools = tools
            .iter()
            .map(|t| json!({"name": t, "description": format!("{t} tool"), "inputSchema": {}}))
            .collect();
        register_server_tools(st, server, &ToolFilter::default());
    }

    fn names(decl: &[Declared]) -> Vec<String> {
        decl.iter()
            .map(|d| match d {
                Declared::Server(r) => r.name.clone(),
                Declared::Resource(n) => n.to_string(),
                Declared::ToolSearch => TOOL_SEARCH.to_string(),
            })
            .collect()
    }

    #[test]
    fn direct_tools_in_connection_order_with_resource_tools_after_the_first_resource_server() {
        let mut st = state(vec![
            server("a", Exposure::Direct, None),
            server("b", Exposure::Direct, None),
        ]);
        st.servers[1].has_resources = true;
        listed(&mut st, "b", &["x"]);
        listed(&mut st, "a", &["y", "z"]);
        assert_eq!(
            names(&declared_tools(&st, &ToolFilter::default())),
            [
                "mcp__b__x",
                LIST_RESOURCES,
                LIST_TEMPLATES,
                READ_RESOURCE,
                "mcp__a__y",
                "mcp__a__z"
            ]
        );
        assert_eq!(section(&st), None, "direct-only servers have no section");
    }

    #[test]
    fn tools_no_longer_offered_become_hidden_and_come_back() {
        let mut st = state(vec![server("a", Exposure::Direct, None)]);
        listed(&mut st, "a", &["x", "y"]);
        listed(&mut st, "a", &["y"]);
        assert_eq!(
            names(&declared_tools(&st, &ToolFilter::default())),
            ["mcp__a__y"]
        );
        listed(&mut st, "a", &["x", "y"]);
        // Offered again, it is declared after what is declared already (as pi appends it).
        assert_eq!(
            names(&declared_tools(&st, &ToolFilter::default())),
            ["mcp__a__y", "mcp__a__x"]
        );
    }

    #[test]
    fn hidden_servers_open_single_tools_and_deferred_ones_wait_for_tool_search() {
        let mut h = server("h", Exposure::Hidden, None);
        h.cfg.tool_exposure = vec![("e*".into(), Exposure::Direct)];
        let mut st = state(vec![h, server("d", Exposure::Deferred, None)]);
        listed(&mut st, "h", &["echo", "fail"]);
        listed(&mut st, "d", &["one", "two"]);
        assert_eq!(
            names(&declared_tools(&st, &ToolFilter::default())),
            [TOOL_SEARCH, "mcp__h__echo"]
        );
        let searchable: Vec<String> = searchable(&st).into_iter().map(|r| r.name).collect();
        assert_eq!(searchable, ["mcp__d__one", "mcp__d__two"]);
        st.loaded.push("mcp__d__two".into());
        st.order.push("mcp__d__two".into());
        assert_eq!(
            names(&declared_tools(&st, &ToolFilter::default())),
            [TOOL_SEARCH, "mcp__h__echo", "mcp__d__two"]
        );
    }

    #[test]
    fn codemode_is_served_through_tool_search_unless_auto_enable_is_off() {
        let mut st = state(vec![server("c", Exposure::Codemode, Some("Code things"))]);
        assert!(tool_search_active(&st));
        assert!(!unreachable_tools(&st));
        assert!(section(&st)
            .unwrap()
            .ends_with("\n- mcp__c (tool_search): Code things"));
        st.config.auto_enable_codemode = false;
        assert!(!tool_search_active(&st));
        assert!(unreachable_tools(&st));
        assert!(section(&st)
            .unwrap()
            .ends_with("\n- mcp__c (codemode): Code things"));
    }

    #[test]
    fn the_section_sorts_servers_and_cuts_summaries() {
        let long = "word ".repeat(100);
        let mut late = server("late", Exposure::Deferred, None);
        late.instructions = Some("From instructions.\nNot this.".into());
        let st = state(vec![
            server(
                "zeta",
                Exposure::Deferred,
                Some(&format!("  {long}\nsecond")),
            ),
            server(
                "alpha-1",
                Exposure::Deferred,
                Some("First line.\nSecond line."),
            ),
            late,
            server("direct", Exposure::Direct, Some("not listed")),
        ]);
        let text = section(&st).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1], "- mcp__alpha_1 (tool_search): First line.");
        assert_eq!(lines[2], "- mcp__late (tool_search): From instructions.");
        let zeta = lines[3];
        assert!(zeta.starts_with("- mcp__zeta (tool_search): word word"));
        assert!(zeta.ends_with("word…"), "{zeta}");
        let summary = zeta.split_once(": ").unwrap().1;
        assert_eq!(summary.chars().count(), 250);
    }

    #[test]
    fn a_section_past_4096_characters_drops_summaries_then_servers() {
        let servers: Vec<Server> = (0..200)
            .map(|i| {
                server(
                    &format!("server-number-{i:03}"),
                    Exposure::Deferred,
                    Some("Does things"),
                )
            })
            .collect();
        let text = section(&state(servers)).unwrap();
        assert!(crate::js::utf16::len(&text) <= 4096);
        assert!(!text.contains("Does things"));
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("- … ")
                && last.ends_with(" more servers; find their tools with `tool_search`"),
            "{last}"
        );
    }

    #[test]
    fn tool_filters_glob_and_exclude() {
        let f = ToolFilter::from_cli(
            Some(&["read".into(), "mcp__s__f*".into(), "mcp__s__echo".into()]),
            Some(&["mcp__s__fail_empty".into()]),
        );
        assert!(f.admits("mcp__s__echo"));
        assert!(f.admits("mcp__s__fail"));
        assert!(!f.admits("mcp__s__fail_empty"));
        assert!(!f.admits("mcp__s__other"));
        let all = ToolFilter::from_cli(Some(&["read".into()]), None);
        assert!(
            all.admits("mcp__s__other"),
            "no mcp__ entry: every MCP tool"
        );
    }
}
