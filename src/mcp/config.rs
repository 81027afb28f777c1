//! MCP server configuration (`mcp.md` §2): `<agentDir>/mcp.json` and, in a trusted project,
//! `<cwd>/.pi/mcp.json`, read once per session start into [`McpConfig`] (pi's `loadMcpConfig`,
//! `dist/extensions/mcp/config.js`).
//!
//! Each file is a JSON object with an optional `mcpServers` object and an optional
//! `autoEnableCodemode` boolean. Entries are validated one by one (`validate`, the messages of
//! §2.3); an invalid entry becomes one `<file>: <message>` line in [`McpConfig::errors`] and is
//! skipped. The project file may replace a user entry (an entry with `command`, `url` or
//! `type`, which keeps the user entry's place in the list) or override only `enabled`,
//! `exposure` and `toolExposure` of one (§2.4). Objects are walked in JavaScript's key order
//! (array-index names such as `"7"` first), as pi's `Object.entries` does.
//!
//! Values in `env` and `headers` stay unresolved here; `super::expand` resolves them when a
//! connection opens. `~` in `command`, `args` and `cwd` is expanded here, and `cwd` resolved
//! against the session cwd (pi does both when it builds the stdio transport).

mod url;
mod validate;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::js::fs_error::node_error;
use crate::js::json::parse::js_json_parse_error;
use crate::js::value::{js_entries, js_truthy};
use crate::llm::auth::strip_serde_position;
use validate::{is_override, validate_server, Kind, Valid};

/// Per-request timeout when an entry sets none (pi's `DEFAULT_TIMEOUT_SECONDS`).
const DEFAULT_TIMEOUT_SECS: f64 = 60.0;

/// The fields a project override may set.
const OVERRIDE_KEYS: [&str; 3] = ["enabled", "exposure", "toolExposure"];

/// How a server's tools reach the model (`mcp.md` §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exposure {
    Codemode,
    Deferred,
    Direct,
    Hidden,
}

impl Exposure {
    /// The configuration name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Direct => "direct",
            Exposure::Hidden => "hidden",
        }
    }

    /// A configuration name, or the old alias `codemode-deferred` (= `codemode`).
    pub(crate) fn parse(s: &str) -> Option<Exposure> {
        match s {
            "codemode" | "codemode-deferred" => Some(Exposure::Codemode),
            "deferred" => Some(Exposure::Deferred),
            "direct" => Some(Exposure::Direct),
            "hidden" => Some(Exposure::Hidden),
            _ => None,
        }
    }
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TransportConfig {
    /// A child process speaking JSON-RPC on stdin/stdout. `command` and `args` have `~`
    /// expanded; `env` values are unresolved (`super::expand`); `cwd` is absolute.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: PathBuf,
    },
    /// Streamable HTTP. `headers` values are unresolved; `auth_provider` is the `/login`
    /// provider whose token is sent as bearer (user file only); `oauth` is the validated
    /// `oauth` object as written.
    Http {
        url: String,
        headers: Vec<(String, String)>,
        auth_provider: Option<String>,
        oauth: Option<Value>,
    },
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ServerConfig {
    pub name: String,
    pub transport: TransportConfig,
    /// `false` keeps the server listed but never connects it.
    pub enabled: bool,
    /// Per-request timeout (default 60 s; fractions allowed).
    pub timeout: Duration,
    pub description: Option<String>,
    /// The server's exposure (default `codemode`).
    pub exposure: Exposure,
    /// `toolExposure`: exact tool names or `*` patterns, in file order.
    pub tool_exposure: Vec<(String, Exposure)>,
    /// The file the entry came from: the project file for an entry it replaced or overrode.
    pub source: PathBuf,
}

impl ServerConfig {
    /// `mcp__<name with '-' -> '_'>`.
    pub(crate) fn namespace(&self) -> String {
        namespace_of(&self.name)
    }

    /// A tool's exposure: its exact `toolExposure` key, else the first matching `*` pattern,
    /// else the server's exposure. `raw_tool` is the server's own tool name.
    pub(crate) fn exposure_of(&self, raw_tool: &str) -> Exposure {
        if let Some((_, e)) = self.tool_exposure.iter().find(|(k, _)| k == raw_tool) {
            return *e;
        }
        self.tool_exposure
            .iter()
            .find(|(k, _)| k.contains('*') && glob_matches(k, raw_tool))
            .map_or(self.exposure, |(_, e)| *e)
    }

    /// The server exposure and every `toolExposure` value.
    pub(crate) fn exposures(&self) -> Vec<Exposure> {
        std::iter::once(self.exposure)
            .chain(self.tool_exposure.iter().map(|(_, e)| *e))
            .collect()
    }

    /// Whether any of [`Self::exposures`] is `direct` (the first prompt waits for such servers).
    pub(crate) fn has_direct(&self) -> bool {
        self.exposures().contains(&Exposure::Direct)
    }
}

/// Everything read from the MCP configuration files. `McpConfig::default()` is what [`load`]
/// returns when neither file exists (no servers, no errors, `auto_enable_codemode` true).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct McpConfig {
    /// User file order; project-only entries follow in project-file order. A replaced or
    /// overridden entry keeps the user entry's place.
    pub servers: Vec<ServerConfig>,
    /// `<file path>: <message>`, in file order (user file first).
    pub errors: Vec<String>,
    /// Whether a server with `codemode` exposure activates the codemode tool (default true;
    /// the project value wins when both files set it).
    pub auto_enable_codemode: bool,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            servers: Vec::new(),
            errors: Vec::new(),
            auto_enable_codemode: true,
        }
    }
}

/// pi-mcp's `mcpNamespace`: `mcp__<name>` with `-` replaced by `_`.
pub(crate) fn namespace_of(name: &str) -> String {
    format!("mcp__{}", name.replace('-', "_"))
}

/// Reads `<agent_dir>/mcp.json` and, when `project_trusted`, `<cwd>/.pi/mcp.json`. `home` is
/// the home directory for `~` expansion (none: `~` stays as written). Missing files are not
/// errors.
pub(crate) fn load(
    agent_dir: &Path,
    cwd: &Path,
    project_trusted: bool,
    home: Option<&Path>,
) -> McpConfig {
    let mut state = State::default();
    read_config_file(&agent_dir.join("mcp.json"), false, &mut state);
    if project_trusted {
        read_config_file(&cwd.join(".pi").join("mcp.json"), true, &mut state);
    }
    McpConfig {
        servers: state.servers.iter().map(|e| build(e, cwd, home)).collect(),
        errors: state.errors,
        auto_enable_codemode: state.auto_enable_codemode.unwrap_or(true),
    }
}

/// A valid entry while the files are read.
struct Entry {
    name: String,
    valid: Valid,
    source: PathBuf,
}

#[derive(Default)]
struct State {
    servers: Vec<Entry>,
    errors: Vec<String>,
    auto_enable_codemode: Option<bool>,
}

/// pi's `readConfigFile`: one file into `state` (`project`: the project file, which may
/// override user entries and may not use `auth`).
fn read_config_file(path: &Path, project: bool, state: &mut State) {
    let shown = path.display().to_string();
    let error = |state: &mut State, msg: &str| state.errors.push(format!("{shown}: {msg}"));
    let text = match read_text(path) {
        None => return,
        Some(Ok(text)) => text,
        Some(Err(msg)) => return error(state, &msg),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let parsed: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let msg = js_json_parse_error(text)
                .unwrap_or_else(|| strip_serde_position(&e.to_string()).to_string());
            return error(state, &msg);
        }
    };
    let servers = match parsed.as_object().map(|root| root.get("mcpServers")) {
        Some(None) => None,
        Some(Some(Value::Object(servers))) => Some(servers),
        _ => return error(state, "expected an object with an \"mcpServers\" object"),
    };
    match parsed.get("autoEnableCodemode") {
        None => {}
        Some(Value::Bool(b)) => state.auto_enable_codemode = Some(*b),
        Some(_) => error(state, "autoEnableCodemode must be a boolean"),
    }
    let Some(servers) = servers else { return };
    for (name, value) in js_entries(servers) {
        let position = state.servers.iter().position(|e| e.name == *name);
        if let Some(entry) = value.as_object().filter(|e| project && is_override(e)) {
            if let Err(msg) = apply_override(state, position, name, entry, path) {
                error(state, &msg);
            }
            continue;
        }
        let valid = match validate_server(name, value) {
            Ok(valid) => valid,
            Err(msg) => {
                error(state, &msg);
                continue;
            }
        };
        let ns = namespace_of(name);
        let clash = state
            .servers
            .iter()
            .find(|e| e.name != *name && namespace_of(&e.name) == ns);
        if let Some(clash) = clash {
            let msg = format!("server \"{name}\" conflicts with \"{}\"", clash.name);
            error(state, &msg);
            continue;
        }
        if project
            && valid.config.contains_key("url")
            && valid.config.get("auth").is_some_and(js_truthy)
        {
            error(
                state,
                &format!("server \"{name}\": auth is only allowed in the global mcp.json"),
            );
            continue;
        }
        let entry = Entry {
            name: name.clone(),
            valid,
            source: path.to_path_buf(),
        };
        match position {
            Some(i) => state.servers[i] = entry,
            None => state.servers.push(entry),
        }
    }
}

/// A project entry without `command`, `url` or `type`: sets `enabled`, `exposure` and
/// `toolExposure` of the user entry at `position` (each replacing the user's value whole), and
/// the merged entry is validated again; the entry's source becomes `path`. On error the user
/// entry stays as it was.
fn apply_override(
    state: &mut State,
    position: Option<usize>,
    name: &str,
    entry: &Map<String, Value>,
    path: &Path,
) -> Result<(), String> {
    let Some(i) = position else {
        return Err(format!(
            "server \"{name}\" needs \"command\" or \"url\", or a global server to override"
        ));
    };
    if entry.keys().any(|k| !OVERRIDE_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "server \"{name}\": an override can only set {}",
            OVERRIDE_KEYS.join(", ")
        ));
    }
    let mut merged = state.servers[i].valid.config.clone();
    for (k, v) in entry {
        merged.insert(k.clone(), v.clone());
    }
    state.servers[i].valid = validate_server(name, &Value::Object(merged))?;
    state.servers[i].source = path.to_path_buf();
    Ok(())
}

/// The file's text (UTF-8, invalid bytes replaced); `None` when it does not exist (Node's
/// `existsSync`, false on any `stat` failure); `Err` with Node's message when it cannot be read.
fn read_text(path: &Path) -> Option<Result<String, String>> {
    std::fs::metadata(path).ok()?;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return Some(Err(node_error(&e, "open", Some(path)))),
    };
    let mut bytes = Vec::new();
    if let Err(e) = file.read_to_end(&mut bytes) {
        return Some(Err(node_error(&e, "read", None)));
    }
    Some(Ok(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The [`ServerConfig`] of a valid entry, paths resolved as pi's `createDefaultTransport` does.
fn build(entry: &Entry, cwd: &Path, home: Option<&Path>) -> ServerConfig {
    let c = &entry.valid.config;
    let string = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
    let pairs = |k: &str| -> Vec<(String, String)> {
        c.get(k)
            .and_then(Value::as_object)
            .map(|m| {
                js_entries(m)
                    .into_iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let transport = match entry.valid.kind {
        Kind::Http => TransportConfig::Http {
            url: string("url").unwrap_or_default(),
            headers: pairs("headers"),
            auth_provider: c
                .get("auth")
                .and_then(|a| a.get("provider"))
                .and_then(Value::as_str)
                .map(str::to_string),
            oauth: c.get("oauth").cloned(),
        },
        Kind::Stdio => TransportConfig::Stdio {
            command: expand_home(&string("command").unwrap_or_default(), home),
            args: c
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| expand_home(v.as_str().unwrap_or_default(), home))
                        .collect()
                })
                .unwrap_or_default(),
            env: pairs("env"),
            cwd: resolve_cwd(
                cwd,
                &expand_home(c.get("cwd").and_then(Value::as_str).unwrap_or("."), home),
            ),
        },
    };
    let exposure_of = |v: &Value| v.as_str().and_then(Exposure::parse);
    ServerConfig {
        name: entry.name.clone(),
        transport,
        enabled: c.get("enabled").and_then(Value::as_bool).unwrap_or(true),
        timeout: c
            .get("timeout")
            .and_then(Value::as_f64)
            .map_or(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS), |t| {
                Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX)
            }),
        description: string("description"),
        exposure: c
            .get("exposure")
            .and_then(exposure_of)
            .unwrap_or(Exposure::Codemode),
        tool_exposure: c
            .get("toolExposure")
            .and_then(Value::as_object)
            .map(|m| {
                js_entries(m)
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.clone(), exposure_of(v)?)))
                    .collect()
            })
            .unwrap_or_default(),
        source: entry.source.clone(),
    }
}

/// pi's `expandHome`: `~` is the home directory, `~/rest` is Node's `path.join(home, rest)`
/// (`.` and `..` folded, a trailing `/` kept). Other values, and all values without a home
/// directory, are returned unchanged.
fn expand_home(value: &str, home: Option<&Path>) -> String {
    let Some(home) = home else {
        return value.to_string();
    };
    let home = home.to_string_lossy();
    if value == "~" {
        home.into_owned()
    } else if let Some(rest) = value.strip_prefix("~/") {
        crate::export::output_path::node_join(&home, rest)
    } else {
        value.to_string()
    }
}

/// Node's `path.resolve(cwd, dir)`: `dir` if absolute, else joined to `cwd`; normalized, no
/// trailing `/`.
fn resolve_cwd(cwd: &Path, dir: &str) -> PathBuf {
    let dir = Path::new(dir);
    let mut joined = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        cwd.join(dir)
    };
    if !joined.is_absolute() {
        if let Ok(process_cwd) = std::env::current_dir() {
            joined = process_cwd.join(joined);
        }
    }
    crate::util::normalize_lexically(&joined)
}

/// Whether `name` matches a `toolExposure` pattern: `*` matches any run of characters except
/// line terminators (pi turns the pattern into a regular expression with `.*`); everything
/// else matches itself.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = name.chars().collect();
    // row[j]: the pattern so far matches the first j characters of the name.
    let mut row = vec![false; t.len() + 1];
    row[0] = true;
    for pc in &p {
        let mut next = vec![false; t.len() + 1];
        for j in 0..=t.len() {
            next[j] = if *pc == '*' {
                row[j]
                    || (j > 0
                        && next[j - 1]
                        && !matches!(t[j - 1], '\n' | '\r' | '\u{2028}' | '\u{2029}'))
            } else {
                j > 0 && row[j - 1] && t[j - 1] == *pc
            };
        }
        row = next;
    }
    row[t.len()]
}

#[cfg(test)]
mod tests;
