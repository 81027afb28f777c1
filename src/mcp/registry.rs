//! Which MCP tools exist and which reach the model (`mcp.md` §5, §6): tool names and
//! definitions per server listing, exposures, the resource tools' place and exposure, what
//! `tool_search` activated, and the `mcp_servers` system-prompt section.
//!
//! **Deviation (README, "Differences"):** pi-rpc has no codemode sandbox yet. A tool whose
//! exposure is `codemode` is served as `deferred` — `tool_search` can load it — as long as
//! `autoEnableCodemode` allows the discovery tool pi would have activated for it; the section
//! lists such servers as `(tool_search)`.

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
    for r in st.registered.iter_mut() {
        if r.server == server && !current.contains(&r.name) && !is_resource_tool(&r.name) {
            r.exposure = Exposure::Hidden;
        }
    }
    let has_resources = st
        .servers
        .iter()
        .any(|s| s.cfg.name == server && s.has_resources);
    if has_resources && st.resource_anchor.is_none() && cfg.exposure != Exposure::Hidden {
        st.resource_anchor = Some(st.registered.len());
    }
}

pub(crate) fn is_resource_tool(name: &str) -> bool {
    matches!(name, LIST_RESOURCES | LIST_TEMPLATES | READ_RESOURCE)
}

/// Whether `codemode` exposures are served through `tool_search` (see the module doc).
fn codemode_served(st: &St) -> bool {
    st.config.auto_enable_codemode
}

/// An exposure as pi-rpc serves it: `codemode` becomes `deferred` while it can be.
fn served(st: &St, e: Exposure) -> Exposure {
    match e {
        Exposure::Codemode if codemode_served(st) => Exposure::Deferred,
        e => e,
    }
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
            && s.cfg
                .exposures()
                .into_iter()
                .any(|e| served(st, e) == Exposure::Deferred)
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
        && match served(st, r.exposure) {
            Exposure::Direct => true,
            Exposure::Deferred => st.loaded.contains(&r.name),
            _ => false,
        }
}

/// The MCP tools to declare, in pi's order: `tool_search` (activated from the configuration),
/// then direct and loaded tools in registration order, the resource tools after the tools of
/// the first server with resources.
pub(crate) fn declared_tools(st: &St, filter: &ToolFilter) -> Vec<Declared> {
    let mut out = Vec::new();
    if tool_search_active(st) {
        out.push(Declared::ToolSearch);
    }
    let resources: Vec<Declared> = match resource_exposure(st).map(|e| served(st, e)) {
        Some(e) => [LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE]
            .into_iter()
            .filter(|n| filter.admits(n))
            .filter(|n| e == Exposure::Direct || st.loaded.iter().any(|l| l == n))
            .map(Declared::Resource)
            .collect(),
        None => Vec::new(),
    };
    let anchor = st.resource_anchor.unwrap_or(usize::MAX);
    let mut placed = false;
    for (i, r) in st.registered.iter().enumerate() {
        if i == anchor && !placed {
            out.extend(resources.iter().cloned());
            placed = true;
        }
        if declared(st, r) {
            out.push(Declared::Server(r.clone()));
        }
    }
    if !placed {
        out.extend(resources);
    }
    out
}

/// The tools `tool_search` can load: not declared yet, exposure (as served) `deferred`.
pub(crate) fn searchable(st: &St) -> Vec<Registered> {
    let mut out: Vec<Registered> = st
        .registered
        .iter()
        .filter(|r| {
            served(st, r.exposure) == Exposure::Deferred
                && !st.loaded.contains(&r.name)
                && st
                    .servers
                    .iter()
                    .any(|s| s.cfg.name == r.server && s.cfg.enabled)
        })
        .cloned()
        .collect();
    if let Some(e) = resource_exposure(st) {
        if served(st, e) == Exposure::Deferred {
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
    let mut intro = String::from("These MCP servers' tools are not declared to you up front.");
    if reaches.contains(&"codemode") {
        intro.push_str(
            " Tools of `codemode` servers need codemode scripts, which this agent cannot run.",
        );
    }
    if reaches.contains(&"tool_search") {
        intro.push_str(" Find and load the tools of `tool_search` servers with `tool_search`; loaded tools can be called from your next call.");
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
                "- … {count} more server{}; find their tools with tool_search",
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
        LIST_RESOURCES => "List the resources MCP servers offer: files, schemas and other data a server shares as context. Check them before searching elsewhere.",
        LIST_TEMPLATES => "List the resource templates MCP servers offer: parameterized resource URIs (RFC 6570) to fill in and read with read_mcp_resource.",
        _ => "Read one resource of an MCP server, given the server's name and the resource URI.",
    }
}

/// A resource tool's definition (`{name, description, parameters}`).
pub(crate) fn resource_definition(name: &str) -> Value {
    json!({"name": name, "description": resource_description(name),
        "parameters": resource_parameters(name)})
}
