//! The tools MCP adds (`mcp.md` §5, §7, §8, §6.3): one per server tool, the three resource
//! tools and `tool_search`. Each is an ordinary [`Tool`]; a call waits for its server, reconnects
//! a dropped one, and converts the answer as pi does.

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::conn::{CallOptions, RequestError};
use super::registry::{self, LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE, TOOL_SEARCH};
use super::registry::{resource_description, resource_parameters};
use super::service::Mcp;
use super::state::{ConnState, Registered};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// A server tool.
pub(crate) struct McpTool {
    pub(crate) mcp: Weak<Mcp>,
    pub(crate) reg: Registered,
}

/// One of the resource tools.
pub(crate) struct ResourceTool {
    pub(crate) mcp: Weak<Mcp>,
    pub(crate) name: &'static str,
}

/// `tool_search`.
pub(crate) struct ToolSearch {
    pub(crate) mcp: Weak<Mcp>,
}

fn gone() -> String {
    "MCP is shut down".to_string()
}

/// Waits until the servers `pick` selects settled; false when `cancel` fired meanwhile.
fn wait_servers(
    mcp: &Weak<Mcp>,
    cancel: &crate::cancel::CancelToken,
    pick: impl Fn(&super::state::Server) -> bool,
) -> bool {
    if let Some(mcp) = mcp.upgrade() {
        mcp.wait_ready(pick, None, Some(cancel));
    }
    !cancel.is_cancelled()
}

impl Tool for McpTool {
    fn wait_until_ready(&self, cancel: &crate::cancel::CancelToken) -> bool {
        wait_servers(&self.mcp, cancel, |s| s.cfg.name == self.reg.server)
    }
    fn name(&self) -> &str {
        &self.reg.name
    }
    fn description(&self) -> String {
        self.reg
            .definition
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
    fn parameters(&self) -> Value {
        self.reg
            .definition
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}))
    }
    fn is_mcp(&self) -> bool {
        true
    }
    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        let mcp = self.mcp.upgrade().ok_or_else(gone)?;
        let (server, raw) = (&self.reg.server, &self.reg.raw);
        mcp.wait_ready(|s| &s.cfg.name == server, None, Some(ctx.cancel));
        let (offered, read_hint) = mcp.with_state(|st| {
            let s = st.servers.iter().find(|s| &s.cfg.name == server);
            let offered = s.is_some_and(|s| {
                s.state != ConnState::Connected
                    || s.tools
                        .iter()
                        .any(|t| t.get("name").and_then(Value::as_str) == Some(raw))
            });
            let hidden =
                s.is_some_and(|s| s.cfg.exposure_of(raw) == super::config::Exposure::Hidden);
            let hint = registry::resource_exposure(st).is_some()
                && s.is_some_and(|s| {
                    s.has_resources && s.cfg.exposure != super::config::Exposure::Hidden
                });
            (offered && !hidden, hint)
        });
        if !offered {
            return Err(format!(
                "MCP tool \"{server}/{raw}\" is no longer available."
            ));
        }
        let details = json!({"server": server, "tool": raw});
        let mut on_progress = |p: &Value| {
            on_update(json!({
                "content": [{"type": "text", "text": super::convert::progress_text(p)}],
                "details": details,
            }));
        };
        let arguments = if args.is_object() {
            args.clone()
        } else {
            json!({})
        };
        let result = mcp.with_client(server, Some(ctx.cancel), false, |client| {
            client.request(
                "tools/call",
                Some(json!({"name": raw, "arguments": arguments})),
                CallOptions {
                    cancel: Some(ctx.cancel),
                    on_progress: Some(&mut on_progress),
                },
            )
        })?;
        super::convert::check_call_result(&result)?;
        let hint = read_hint.then_some(server.as_str());
        let out = super::convert::call_result(&result, server, raw, hint, &ctx.temp_dir);
        Ok(ToolOutput {
            content: out.content,
            details: Some(out.details),
            structured_content: Some(out.structured_content),
            is_error: out.is_error,
            terminate: false,
        })
    }
}

/// A string argument: trimmed, empty = absent (§8).
fn string_arg(args: &Value, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(_) => Err(format!("{key} must be a string")),
    }
}

fn is_app_resource(item: &Value) -> bool {
    let uri = item
        .get("uri")
        .or_else(|| item.get("uriTemplate"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mime = item
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let profile = mime.split(';').skip(1).any(|p| {
        let p = p.trim();
        p.strip_prefix("profile")
            .map(|r| r.trim_start())
            .and_then(|r| r.strip_prefix('='))
            .is_some_and(|v| v.trim().trim_matches('"') == "mcp-app")
    });
    uri.starts_with("ui://") || profile
}

fn listed(server: &str, item: &Value, name_key: &str) -> Value {
    let mut m = Map::new();
    m.insert("server".into(), server.into());
    if let Value::Object(o) = item {
        for (k, v) in o {
            if k != "_meta" && k != "icons" {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    if !m.contains_key("name") {
        let n = item.get(name_key).cloned().unwrap_or(Value::Null);
        m.insert("name".into(), n);
    }
    Value::Object(m)
}

impl ResourceTool {
    /// The servers the resource tools reach, sorted by name when `sorted`.
    fn servers(mcp: &Mcp) -> Vec<String> {
        mcp.with_state(|st| {
            st.servers
                .iter()
                .filter(|s| {
                    s.cfg.enabled
                        && s.has_resources
                        && s.cfg.exposure != super::config::Exposure::Hidden
                })
                .map(|s| s.cfg.name.clone())
                .collect()
        })
    }

    fn find(mcp: &Mcp, name: &str) -> Result<String, String> {
        let servers = Self::servers(mcp);
        if servers.iter().any(|s| s == name) {
            return Ok(name.to_string());
        }
        let mut msg = format!("MCP server \"{name}\" has no resources");
        if !servers.is_empty() {
            msg.push_str(&format!(". Servers with resources: {}", servers.join(", ")));
        }
        Err(msg)
    }

    fn request(
        mcp: &Mcp,
        server: &str,
        ctx: &ToolContext<'_>,
        run: impl Fn(&super::conn::Client) -> Result<Value, RequestError>,
    ) -> Result<Value, String> {
        mcp.with_client(server, Some(ctx.cancel), true, run)
    }

    fn list(&self, mcp: &Mcp, args: &Value, ctx: &ToolContext<'_>) -> Result<Value, String> {
        let (method, key, name_key) = if self.name == LIST_RESOURCES {
            ("resources/list", "resources", "uri")
        } else {
            (
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate",
            )
        };
        let valid: fn(&Value) -> bool = if self.name == LIST_RESOURCES {
            |i| {
                i.get("uri").is_some_and(Value::is_string)
                    && i.get("name").is_none_or(Value::is_string)
            }
        } else {
            |i| {
                i.get("uriTemplate").is_some_and(Value::is_string)
                    && i.get("name").is_none_or(Value::is_string)
            }
        };
        let server = string_arg(args, "server")?;
        let cursor = string_arg(args, "cursor")?;
        let templates = self.name == LIST_TEMPLATES;
        let no_templates =
            |e: &RequestError| templates && matches!(e, RequestError::Rpc { code: -32601, .. });
        if let Some(server) = server {
            let server = Self::find(mcp, &server)?;
            let page = Self::request(mcp, &server, ctx, |c| {
                match c.list_page(method, key, valid, cursor.as_deref(), Some(ctx.cancel)) {
                    Ok((items, next)) => Ok(json!({"items": items, "next": next})),
                    Err(e) if no_templates(&e) => Ok(json!({"items": [], "next": null})),
                    Err(e) => Err(e),
                }
            })?;
            let items: Vec<Value> = page["items"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|i| !is_app_resource(i))
                        .map(|i| listed(&server, i, name_key))
                        .collect()
                })
                .unwrap_or_default();
            let mut out = Map::new();
            out.insert("server".into(), server.into());
            out.insert(key.into(), Value::Array(items));
            if let Some(n) = page["next"].as_str() {
                out.insert("nextCursor".into(), n.into());
            }
            return Ok(Value::Object(out));
        }
        if cursor.is_some() {
            return Err("cursor can only be used when a server is specified".into());
        }
        let mut servers = Self::servers(mcp);
        servers.sort();
        let mut items = Vec::new();
        let mut errors = Vec::new();
        for server in servers {
            let all = Self::request(mcp, &server, ctx, |c| {
                match c.list_all(method, key, valid, Some(ctx.cancel)) {
                    Ok(items) => Ok(Value::Array(items)),
                    Err(e) if no_templates(&e) => Ok(json!([])),
                    Err(e) => Err(e),
                }
            });
            match all {
                Ok(Value::Array(list)) => items.extend(
                    list.iter()
                        .filter(|i| !is_app_resource(i))
                        .map(|i| listed(&server, i, name_key)),
                ),
                Ok(_) => {}
                Err(e) => errors.push(json!({"server": server, "error": e})),
            }
        }
        let mut out = Map::new();
        out.insert(key.into(), Value::Array(items));
        if !errors.is_empty() {
            out.insert("errors".into(), Value::Array(errors));
        }
        Ok(Value::Object(out))
    }

    fn read(&self, mcp: &Mcp, args: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
        let server = string_arg(args, "server")?;
        let uri = string_arg(args, "uri")?;
        let server = server.ok_or("server must be provided")?;
        let uri = uri.ok_or("uri must be provided")?;
        let server = Self::find(mcp, &server)?;
        let result = Self::request(mcp, &server, ctx, |c| {
            c.request(
                "resources/read",
                Some(json!({ "uri": uri })),
                CallOptions {
                    cancel: Some(ctx.cancel),
                    on_progress: None,
                },
            )
        })?;
        let contents = result
            .get("contents")
            .and_then(Value::as_array)
            .ok_or("Invalid MCP resources/read result")?;
        if !contents.iter().all(|c| {
            c.get("uri").is_some_and(Value::is_string)
                && (c.get("text").is_some_and(Value::is_string)
                    || c.get("blob").is_some_and(Value::is_string))
        }) {
            return Err("Invalid contents in MCP resources/read result".into());
        }
        let mut blocks = Vec::new();
        for c in contents {
            if contents.len() > 1 {
                let u = c.get("uri").and_then(Value::as_str).unwrap_or("");
                blocks.push(json!({"type": "text", "text": format!("{u}:")}));
            }
            blocks.push(json!({"type": "resource", "resource": c}));
        }
        let converted = super::convert::convert_blocks(&blocks, Some(&server), &ctx.temp_dir);
        let converted = if converted.is_empty() {
            vec![json!({"type": "text", "text": format!("Resource {uri} is empty.")})]
        } else {
            converted
        };
        let (content, full) = super::convert::limit_output(converted, &ctx.temp_dir);
        let stripped: Vec<Value> = contents
            .iter()
            .map(|c| {
                let mut c = c.clone();
                if let Value::Object(m) = &mut c {
                    m.shift_remove("_meta");
                }
                c
            })
            .collect();
        let structured = json!({"server": server, "uri": uri, "contents": stripped});
        Ok(resource_output(
            content,
            full,
            &server,
            READ_RESOURCE,
            structured,
        ))
    }
}

/// A resource tool's result: `details` `{server, tool[, fullOutputPath]}` (§8).
fn resource_output(
    content: Vec<Value>,
    full: Option<String>,
    server: &str,
    tool: &str,
    structured: Value,
) -> ToolOutput {
    let mut details = json!({"server": server, "tool": tool});
    if let Some(p) = full {
        details["fullOutputPath"] = p.into();
    }
    ToolOutput {
        content,
        details: Some(details),
        structured_content: Some(structured),
        ..ToolOutput::default()
    }
}

impl Tool for ResourceTool {
    /// The resource tools reach every server: they wait for all of them (§3.2).
    fn wait_until_ready(&self, cancel: &crate::cancel::CancelToken) -> bool {
        wait_servers(&self.mcp, cancel, |s| s.cfg.enabled)
    }
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> String {
        resource_description(self.name).to_string()
    }
    fn parameters(&self) -> Value {
        resource_parameters(self.name)
    }
    fn is_mcp(&self) -> bool {
        true
    }
    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        let mcp = self.mcp.upgrade().ok_or_else(gone)?;
        // The resource tools reach every server: wait for all of them (§3.2).
        if !mcp.wait_ready(|s| s.cfg.enabled, None, Some(ctx.cancel)) {
            return Err("Operation aborted".into());
        }
        if self.name == READ_RESOURCE {
            return self.read(&mcp, args, ctx);
        }
        let payload = self.list(&mcp, args, ctx)?;
        let text = serde_json::to_string(&payload).map_err(|e| e.to_string())?;
        let (content, full) = super::convert::limit_output(
            vec![json!({"type": "text", "text": text})],
            &ctx.temp_dir,
        );
        let server = string_arg(args, "server")
            .ok()
            .flatten()
            .unwrap_or_default();
        Ok(resource_output(content, full, &server, self.name, payload))
    }
}

impl Tool for ToolSearch {
    /// `tool_search` ranks every server's tools: it waits for all of them (§3.2).
    fn wait_until_ready(&self, cancel: &crate::cancel::CancelToken) -> bool {
        wait_servers(&self.mcp, cancel, |s| s.cfg.enabled)
    }
    fn name(&self) -> &str {
        TOOL_SEARCH
    }
    fn description(&self) -> String {
        "Search the tools that are not declared to you yet (MCP server tools listed in the \
         mcp_servers section) by what they do, and load the best matches: loaded tools can be \
         called from your next call on."
            .to_string()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "Words describing the tool you need, or its exact name."},
            "limit": {"type": "number", "description": "How many tools to load at most (default 8)."}}})
    }
    fn prompt_snippet(&self) -> Option<&str> {
        Some("Find and load tools of MCP servers that are not declared yet")
    }
    fn is_mcp(&self) -> bool {
        true
    }
    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        let mcp = self.mcp.upgrade().ok_or_else(gone)?;
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if query.is_empty() {
            return Err("query must not be empty".into());
        }
        let limit = match args.get("limit") {
            None | Some(Value::Null) => 8,
            Some(v) => match v.as_f64() {
                Some(n) if n >= 1.0 && n.fract() == 0.0 => n as usize,
                _ => return Err("limit must be a positive integer".into()),
            },
        };
        // tool_search reaches every server: wait for all of them (§3.2).
        if !mcp.wait_ready(|s| s.cfg.enabled, None, Some(ctx.cancel)) {
            return Err("Operation aborted".into());
        }
        let (candidates, docs) = mcp.with_state(|st| {
            let candidates = registry::searchable(st);
            let docs: Vec<super::search::SearchDoc> = candidates
                .iter()
                .map(|r| {
                    let server = st.servers.iter().find(|s| s.cfg.name == r.server);
                    let server_text = server
                        .map(|s| {
                            super::search::server_text(
                                &s.cfg.namespace(),
                                s.cfg.description.as_deref(),
                                s.instructions.as_deref(),
                            )
                        })
                        .unwrap_or_default();
                    super::search::SearchDoc {
                        name: r.name.clone(),
                        description: r.definition["description"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        schema_text: super::search::schema_text(&r.definition["parameters"]),
                        server_text,
                    }
                })
                .collect();
            (candidates, docs)
        });
        let picked = super::search::rank(query, &docs, limit);
        let names: Vec<String> = picked.iter().map(|&i| candidates[i].name.clone()).collect();
        mcp.load_tools(&names);
        let text = if names.is_empty() {
            "No matching tools found.".to_string()
        } else {
            let lines: Vec<String> = picked
                .iter()
                .map(|&i| {
                    let d = docs[i].description.split('\n').next().unwrap_or("");
                    format!("- {}: {d}", candidates[i].name)
                })
                .collect();
            format!(
                "Loaded {} tool{}. They are available from your next call:\n{}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                lines.join("\n")
            )
        };
        Ok(ToolOutput {
            content: vec![json!({"type": "text", "text": text})],
            details: Some(json!({"loaded": names})),
            ..ToolOutput::default()
        })
    }
}

impl Mcp {
    /// The MCP tools to declare now, in order (§5.2 "Order", §6).
    pub(crate) fn active_tools(&self) -> Vec<Arc<dyn Tool>> {
        let specs = self.with_state(|st| registry::declared_tools(st, &self.opts.filter));
        specs
            .into_iter()
            .map(|d| -> Arc<dyn Tool> {
                match d {
                    registry::Declared::Server(reg) => Arc::new(McpTool {
                        mcp: self.me.clone(),
                        reg,
                    }),
                    registry::Declared::Resource(name) => Arc::new(ResourceTool {
                        mcp: self.me.clone(),
                        name,
                    }),
                    registry::Declared::ToolSearch => Arc::new(ToolSearch {
                        mcp: self.me.clone(),
                    }),
                }
            })
            .collect()
    }

    /// The `mcp_servers` section's text, wrapped, or `None`.
    pub(crate) fn section(&self) -> Option<String> {
        self.with_state(registry::section)
            .map(|body| format!("<{0}>\n{body}\n</{0}>", registry::SECTION))
    }
}
