//! `settings.json`: global (`<agentDir>/settings.json`) and project (`<cwd>/.pi/settings.json`,
//! trusted projects only) settings, merged key by key, with typed getters carrying pi's defaults
//! (spec/settings.md §3) and persistence of RPC-made changes to the global file (§2).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::util::{expand_tilde, home_dir, resolve_path};

mod persist;

/// Default `compaction.reserveTokens`.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default `compaction.keepRecentTokens`.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;
/// Default `httpIdleTimeoutMs`.
pub const DEFAULT_HTTP_IDLE_TIMEOUT_MS: u64 = 300_000;
/// Tools active when `defaultTools` does not say otherwise.
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// How many queued steering / follow-up messages are delivered at one delivery point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum QueueMode {
    #[serde(rename = "all")]
    All,
    #[default]
    #[serde(rename = "one-at-a-time")]
    OneAtATime,
}

impl QueueMode {
    /// `"all"` / `"one-at-a-time"`; anything else is `None`.
    pub fn parse(s: &str) -> Option<QueueMode> {
        match s {
            "all" => Some(QueueMode::All),
            "one-at-a-time" => Some(QueueMode::OneAtATime),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QueueMode::All => "all",
            QueueMode::OneAtATime => "one-at-a-time",
        }
    }
}

impl fmt::Display for QueueMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `thinkingBudgets`: budget tokens per thinking level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkingBudgets {
    pub minimal: u64,
    pub low: u64,
    pub medium: u64,
    pub high: u64,
}

impl Default for ThinkingBudgets {
    fn default() -> Self {
        ThinkingBudgets {
            minimal: 1024,
            low: 2048,
            medium: 8192,
            high: 16384,
        }
    }
}

/// The agent-level auto-retry settings (`retry.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySettings {
    pub enabled: bool,
    pub max_retries: u32,
    pub base_delay_ms: u64,
    /// Cap of one back-off delay (`retry.maxAgentDelayMs`, older files: `retry.maxDelayMs`).
    pub max_agent_delay_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_agent_delay_ms: 60_000,
        }
    }
}

/// Provider (SDK-level) retry settings (`retry.provider.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderRetrySettings {
    /// `retry.provider.timeoutMs`; `None` → use `httpIdleTimeoutMs`.
    pub timeout_ms: Option<u64>,
    /// `retry.provider.maxRetries` (default 0).
    pub max_retries: u32,
    /// `retry.provider.maxRetryDelayMs` (older files: `retry.maxDelayMs`), default 60000.
    pub max_retry_delay_ms: u64,
}

/// Failure to persist a setting.
#[derive(Debug)]
pub enum SettingsError {
    /// The settings file on disk is not valid JSON (or not an object); it was left untouched.
    Malformed { path: PathBuf, message: String },
    /// Another process held the settings lock for too long.
    Locked { path: PathBuf },
    /// Reading, writing or renaming failed.
    Io {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
    /// `set_global` was called with an empty key path.
    EmptyKey,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::Malformed { path, message } => write!(
                f,
                "settings file {} is malformed ({message}); not overwriting it — fix or remove the file",
                path.display()
            ),
            SettingsError::Locked { path } => write!(
                f,
                "settings file {} is locked by another process (lock {}.lock); try again",
                path.display(),
                path.display()
            ),
            SettingsError::Io {
                path,
                action,
                source,
            } => write!(f, "failed to {action} {}: {source}", path.display()),
            SettingsError::EmptyKey => f.write_str("empty settings key path"),
        }
    }
}

impl std::error::Error for SettingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettingsError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The agent directory: `$PI_CODING_AGENT_DIR` (tilde-expanded, made absolute) or `~/.pi/agent`.
pub fn agent_dir_from_env() -> PathBuf {
    let dir = match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(v) if !v.is_empty() => expand_tilde(&v),
        _ => home_dir()
            .unwrap_or_else(|| PathBuf::from("/"))
            .join(".pi")
            .join("agent"),
    };
    if dir.is_absolute() {
        dir
    } else {
        match std::env::current_dir() {
            Ok(cwd) => resolve_path(&cwd, &dir.to_string_lossy()),
            Err(_) => dir,
        }
    }
}

/// Global and project settings, and their merged view.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    global: Map<String, Value>,
    project: Map<String, Value>,
    merged: Map<String, Value>,
    /// `<agentDir>/settings.json`; `None` for in-memory settings (nothing is written).
    global_path: Option<PathBuf>,
    /// Base for relative resource paths in the global file (the agent dir).
    global_base: Option<PathBuf>,
    /// Base for relative resource paths in the project file (`<cwd>/.pi`).
    project_base: Option<PathBuf>,
}

impl Settings {
    /// Loads `<agentDir>/settings.json` and, when `project_trusted`, `<cwd>/.pi/settings.json`.
    /// Missing files are silent; unreadable or malformed ones add one line to `diags` and are
    /// ignored.
    pub fn load(
        agent_dir: &Path,
        cwd: &Path,
        project_trusted: bool,
        diags: &mut Vec<String>,
    ) -> Settings {
        let global_path = agent_dir.join("settings.json");
        let project_dir = cwd.join(".pi");
        let global = read_settings_file(&global_path, diags).unwrap_or_default();
        let project = if project_trusted {
            read_settings_file(&project_dir.join("settings.json"), diags).unwrap_or_default()
        } else {
            Map::new()
        };
        let mut s = Settings {
            global,
            project,
            merged: Map::new(),
            global_path: Some(global_path),
            global_base: Some(agent_dir.to_path_buf()),
            project_base: project_trusted.then_some(project_dir),
        };
        s.remerge();
        s
    }

    /// Settings held in memory only (tests, `--no-session`-style setups): `global` is the content
    /// of a global settings file; nothing is ever written to disk.
    pub fn in_memory(global: Value) -> Settings {
        let mut global = match global {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        migrate(&mut global);
        let mut s = Settings {
            global,
            ..Settings::default()
        };
        s.remerge();
        s
    }

    fn remerge(&mut self) {
        self.merged = merge_settings(&self.global, &self.project);
    }

    /// The merged value at a key path, e.g. `get(&["compaction", "enabled"])`.
    pub fn get(&self, path: &[&str]) -> Option<&Value> {
        get_in(&self.merged, path)
    }

    /// The global-file value at a key path.
    pub fn get_global(&self, path: &[&str]) -> Option<&Value> {
        get_in(&self.global, path)
    }

    /// The whole merged settings object.
    pub fn merged(&self) -> &Map<String, Value> {
        &self.merged
    }

    fn str_at(&self, path: &[&str]) -> Option<String> {
        self.get(path)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    fn bool_at(&self, path: &[&str], default: bool) -> bool {
        self.get(path).and_then(Value::as_bool).unwrap_or(default)
    }

    fn uint_at(&self, path: &[&str]) -> Option<u64> {
        self.get(path).and_then(as_uint)
    }

    // ---- model selection ------------------------------------------------------------------

    pub fn default_provider(&self) -> Option<String> {
        self.str_at(&["defaultProvider"])
    }

    pub fn default_model(&self) -> Option<String> {
        self.str_at(&["defaultModel"])
    }

    /// The raw `defaultThinkingLevel` string (the caller validates it; the effective default is
    /// `"medium"`).
    pub fn default_thinking_level(&self) -> Option<String> {
        self.str_at(&["defaultThinkingLevel"])
    }

    /// `modelThinkingLevels`: `"provider/modelId"` → level.
    pub fn model_thinking_levels(&self) -> Map<String, Value> {
        match self.get(&["modelThinkingLevels"]) {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        }
    }

    /// The `modelThinkingLevels` entry for one model, if it is a string.
    pub fn model_thinking_level(&self, provider: &str, model_id: &str) -> Option<String> {
        let key = format!("{provider}/{model_id}");
        self.get(&["modelThinkingLevels", &key])
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    pub fn thinking_budgets(&self) -> ThinkingBudgets {
        let d = ThinkingBudgets::default();
        let at = |k: &str, dv: u64| self.uint_at(&["thinkingBudgets", k]).unwrap_or(dv);
        ThinkingBudgets {
            minimal: at("minimal", d.minimal),
            low: at("low", d.low),
            medium: at("medium", d.medium),
            high: at("high", d.high),
        }
    }

    /// `enabledModels` patterns; `None` when unset (all models).
    pub fn enabled_models(&self) -> Option<Vec<String>> {
        self.get(&["enabledModels"]).and_then(string_array)
    }

    // ---- queues ----------------------------------------------------------------------------

    pub fn steering_mode(&self) -> QueueMode {
        self.get(&["steeringMode"])
            .or_else(|| self.get(&["queueMode"]))
            .and_then(Value::as_str)
            .and_then(QueueMode::parse)
            .unwrap_or_default()
    }

    pub fn follow_up_mode(&self) -> QueueMode {
        self.get(&["followUpMode"])
            .and_then(Value::as_str)
            .and_then(QueueMode::parse)
            .unwrap_or_default()
    }

    // ---- tools -----------------------------------------------------------------------------

    /// The resolved `defaultTools` selection, `None` when no settings layer sets it. Plain names
    /// replace `read, bash, edit, write`; `+name` / `-name` entries then add / remove a tool.
    pub fn default_tools(&self) -> Option<Vec<String>> {
        let raw = self.get(&["defaultTools"])?;
        let entries: Vec<String> = match raw {
            Value::Array(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        Some(resolve_default_tools(&entries))
    }

    // ---- compaction / retry ----------------------------------------------------------------

    pub fn compaction_enabled(&self) -> bool {
        self.bool_at(&["compaction", "enabled"], true)
    }

    /// `compaction.reserveTokens`, with `compaction.modelOverrides["provider/id"]` first.
    pub fn compaction_reserve_tokens(&self, provider_model: Option<&str>) -> u64 {
        self.compaction_token_setting("reserveTokens", provider_model, DEFAULT_RESERVE_TOKENS)
    }

    /// `compaction.keepRecentTokens`, with `compaction.modelOverrides["provider/id"]` first.
    pub fn compaction_keep_recent_tokens(&self, provider_model: Option<&str>) -> u64 {
        self.compaction_token_setting(
            "keepRecentTokens",
            provider_model,
            DEFAULT_KEEP_RECENT_TOKENS,
        )
    }

    fn compaction_token_setting(&self, field: &str, model: Option<&str>, default: u64) -> u64 {
        if let Some(key) = model {
            if let Some(v) = self.uint_at(&["compaction", "modelOverrides", key, field]) {
                return v;
            }
        }
        self.uint_at(&["compaction", field]).unwrap_or(default)
    }

    pub fn branch_summary_reserve_tokens(&self) -> u64 {
        self.uint_at(&["branchSummary", "reserveTokens"])
            .unwrap_or(DEFAULT_RESERVE_TOKENS)
    }

    pub fn branch_summary_skip_prompt(&self) -> bool {
        self.bool_at(&["branchSummary", "skipPrompt"], false)
    }

    pub fn retry(&self) -> RetrySettings {
        let d = RetrySettings::default();
        RetrySettings {
            enabled: self.bool_at(&["retry", "enabled"], d.enabled),
            max_retries: self
                .uint_at(&["retry", "maxRetries"])
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .unwrap_or(d.max_retries),
            base_delay_ms: self
                .uint_at(&["retry", "baseDelayMs"])
                .unwrap_or(d.base_delay_ms),
            max_agent_delay_ms: self
                .uint_at(&["retry", "maxAgentDelayMs"])
                .or_else(|| self.uint_at(&["retry", "maxDelayMs"]))
                .unwrap_or(d.max_agent_delay_ms),
        }
    }

    pub fn provider_retry(&self) -> ProviderRetrySettings {
        ProviderRetrySettings {
            timeout_ms: self
                .get(&["retry", "provider", "timeoutMs"])
                .and_then(parse_timeout_ms),
            max_retries: self
                .uint_at(&["retry", "provider", "maxRetries"])
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .unwrap_or(0),
            max_retry_delay_ms: self
                .uint_at(&["retry", "provider", "maxRetryDelayMs"])
                .or_else(|| self.uint_at(&["retry", "maxDelayMs"]))
                .unwrap_or(60_000),
        }
    }

    /// `httpIdleTimeoutMs` (numbers, numeric strings, `"disabled"` → 0); 0 means no timeout.
    pub fn http_idle_timeout_ms(&self) -> u64 {
        self.get(&["httpIdleTimeoutMs"])
            .and_then(parse_timeout_ms)
            .unwrap_or(DEFAULT_HTTP_IDLE_TIMEOUT_MS)
    }

    /// `transport` (default `"auto"`).
    pub fn transport(&self) -> String {
        self.str_at(&["transport"])
            .unwrap_or_else(|| "auto".to_string())
    }

    /// `cacheWarming` from the global file only: `off`, `streaming` or `idle` (default).
    pub fn cache_warming(&self) -> String {
        match get_in(&self.global, &["cacheWarming"]).and_then(Value::as_str) {
            Some(m @ ("off" | "streaming" | "idle")) => m.to_string(),
            _ => "idle".to_string(),
        }
    }

    // ---- shell / sessions / images ----------------------------------------------------------

    /// `shellPath`, tilde-expanded.
    pub fn shell_path(&self) -> Option<String> {
        self.str_at(&["shellPath"])
            .map(|p| expand_tilde(&p).to_string_lossy().into_owned())
    }

    pub fn shell_command_prefix(&self) -> Option<String> {
        self.str_at(&["shellCommandPrefix"])
    }

    /// `sessionDir`, tilde-expanded.
    pub fn session_dir(&self) -> Option<String> {
        self.str_at(&["sessionDir"])
            .map(|p| expand_tilde(&p).to_string_lossy().into_owned())
    }

    pub fn images_auto_resize(&self) -> bool {
        self.bool_at(&["images", "autoResize"], true)
    }

    pub fn images_block_images(&self) -> bool {
        self.bool_at(&["images", "blockImages"], false)
    }

    // ---- resources -------------------------------------------------------------------------

    pub fn enable_skill_commands(&self) -> bool {
        self.bool_at(&["enableSkillCommands"], true)
    }

    /// Extra skill paths from `skills`: the project file's entries first, then the global
    /// file's. Entries of files loaded from disk are resolved (tilde, then relative to
    /// `<cwd>/.pi` resp. the agent dir); in-memory entries are returned trimmed. Filter entries
    /// (`!x`, `+x`, `-x`) are left out.
    pub fn skills_paths(&self) -> Vec<String> {
        self.resource_paths("skills")
    }

    /// Extra prompt-template paths from `prompts` (same rules as [`Settings::skills_paths`]).
    pub fn prompts_paths(&self) -> Vec<String> {
        self.resource_paths("prompts")
    }

    /// `extensions` entries of the trusted project file (resolved against `<cwd>/.pi`), and of
    /// the global file (resolved against the agent dir), kept apart because extension discovery
    /// puts `<cwd>/.pi/extensions/` between them (`extensions.md` §A2).
    pub fn extension_paths(&self) -> (Vec<String>, Vec<String>) {
        (
            layer_paths(&self.project, self.project_base.as_deref(), "extensions"),
            layer_paths(&self.global, self.global_base.as_deref(), "extensions"),
        )
    }

    /// The `packages` setting's sources (a string, or an object's `source`), as written.
    pub fn package_sources(&self) -> Vec<String> {
        let Some(Value::Array(entries)) = self.get(&["packages"]) else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|p| {
                p.as_str()
                    .or_else(|| p.get("source").and_then(Value::as_str))
            })
            .map(str::to_string)
            .collect()
    }

    fn resource_paths(&self, key: &str) -> Vec<String> {
        let mut out = layer_paths(&self.project, self.project_base.as_deref(), key);
        for p in layer_paths(&self.global, self.global_base.as_deref(), key) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// `defaultProjectTrust` from the global file only: `"always"`, `"never"` or `"ask"`.
    pub fn default_project_trust(&self) -> String {
        match get_in(&self.global, &["defaultProjectTrust"]).and_then(Value::as_str) {
            Some(v @ ("always" | "never")) => v.to_string(),
            _ => "ask".to_string(),
        }
    }
}

/// Reads one settings file: `None` when missing (silent) or unusable (one diagnostic line).
fn read_settings_file(path: &Path, diags: &mut Vec<String>) -> Option<Map<String, Value>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            diags.push(format!(
                "Warning: failed to read {}: {e}; ignoring it",
                path.display()
            ));
            return None;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.is_empty() {
        return Some(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut m)) => {
            migrate(&mut m);
            Some(m)
        }
        Ok(other) => {
            diags.push(format!(
                "Warning: failed to parse {}: expected a JSON object, found {}; ignoring it",
                path.display(),
                kind(&other)
            ));
            None
        }
        Err(e) => {
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full);
            diags.push(format!(
                "Warning: failed to parse {} at line {} column {}: {message}; ignoring it",
                path.display(),
                e.line(),
                e.column()
            ));
            None
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// pi's settings migrations that matter for reading: `queueMode` → `steeringMode`, the old
/// `skills: {enableSkillCommands, customDirectories}` object → `enableSkillCommands` + array.
fn migrate(m: &mut Map<String, Value>) {
    if !m.contains_key("steeringMode") {
        if let Some(v) = m.shift_remove("queueMode") {
            m.insert("steeringMode".to_string(), v);
        }
    }
    if let Some(Value::Object(old)) = m.get("skills").cloned() {
        if let Some(v) = old.get("enableSkillCommands") {
            if !m.contains_key("enableSkillCommands") {
                m.insert("enableSkillCommands".to_string(), v.clone());
            }
        }
        match old.get("customDirectories") {
            Some(Value::Array(dirs)) if !dirs.is_empty() => {
                m.insert("skills".to_string(), Value::Array(dirs.clone()));
            }
            _ => {
                m.shift_remove("skills");
            }
        }
    }
}

/// Deep merge: `overrides` wins key by key, objects merge recursively, everything else (arrays
/// included) is replaced. `defaultTools` made only of `+x`/`-x` modifiers is appended instead.
/// One settings file's resource paths under `key`: trimmed, filter entries (`!x`, `+x`, `-x`)
/// and empty ones left out, resolved against `base` (tilde, then relative) when the file was
/// loaded from disk, without duplicates.
fn layer_paths(layer: &Map<String, Value>, base: Option<&Path>, key: &str) -> Vec<String> {
    let Some(Value::Array(entries)) = layer.get(key) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for entry in entries.iter().filter_map(Value::as_str).map(str::trim) {
        if entry.is_empty() || entry.starts_with(['!', '+', '-']) {
            continue;
        }
        let resolved = match base {
            Some(base) => resolve_path(base, entry).to_string_lossy().into_owned(),
            None => entry.to_string(),
        };
        if !out.contains(&resolved) {
            out.push(resolved);
        }
    }
    out
}

fn merge_settings(base: &Map<String, Value>, overrides: &Map<String, Value>) -> Map<String, Value> {
    let mut merged = merge_objects(base, overrides);
    if let (Some(Value::Array(b)), Some(Value::Array(o))) =
        (base.get("defaultTools"), overrides.get("defaultTools"))
    {
        if o.iter().all(|e| e.as_str().is_some_and(is_tool_modifier)) {
            let mut combined = b.clone();
            combined.extend(o.iter().cloned());
            merged.insert("defaultTools".to_string(), Value::Array(combined));
        }
    }
    merged
}

fn merge_objects(base: &Map<String, Value>, overrides: &Map<String, Value>) -> Map<String, Value> {
    let mut result = base.clone();
    for (key, ov) in overrides {
        let merged = match (base.get(key), ov) {
            (Some(Value::Object(b)), Value::Object(o)) => Value::Object(merge_objects(b, o)),
            _ => ov.clone(),
        };
        result.insert(key.clone(), merged);
    }
    result
}

fn is_tool_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// Plain names replace the default tool list; then `+name` adds and `-name` removes, in order.
pub fn resolve_default_tools(entries: &[String]) -> Vec<String> {
    let plain: Vec<String> = entries
        .iter()
        .filter(|e| !is_tool_modifier(e))
        .cloned()
        .collect();
    let mut tools = if !plain.is_empty() || entries.is_empty() {
        plain
    } else {
        DEFAULT_TOOL_NAMES.iter().map(|s| s.to_string()).collect()
    };
    for entry in entries.iter().filter(|e| is_tool_modifier(e)) {
        let name = &entry[1..];
        let pos = tools.iter().position(|t| t == name);
        if entry.starts_with('+') && pos.is_none() && !name.is_empty() {
            tools.push(name.to_string());
        } else if entry.starts_with('-') {
            if let Some(p) = pos {
                tools.remove(p);
            }
        }
    }
    tools
}

fn get_in<'a>(map: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut cur = map.get(*first)?;
    for key in rest {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

fn set_in(map: &mut Map<String, Value>, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = map;
    for key in parents {
        let slot = cur
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(next) = slot else {
            return;
        };
        cur = next;
    }
    cur.insert(last.to_string(), value);
}

/// A non-negative integer (integral floats accepted).
fn as_uint(v: &Value) -> Option<u64> {
    if let Some(u) = v.as_u64() {
        return Some(u);
    }
    let f = v.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0).then_some(f as u64)
}

fn string_array(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Array(a) => Some(
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
        ),
        _ => None,
    }
}

/// pi's `parseHttpIdleTimeoutMs`: numbers ≥ 0 (floored), numeric strings, `"disabled"` → 0.
fn parse_timeout_ms(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => {
            let t = s.trim();
            if t.eq_ignore_ascii_case("disabled") {
                return Some(0);
            }
            if t.is_empty() {
                return None;
            }
            let f: f64 = t.parse().ok()?;
            (f.is_finite() && f >= 0.0).then_some(f.floor() as u64)
        }
        Value::Number(n) => {
            let f = n.as_f64()?;
            (f.is_finite() && f >= 0.0).then_some(f.floor() as u64)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, SystemTime};

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pi-rpc-settings-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn defaults() {
        let s = Settings::in_memory(json!({}));
        assert_eq!(s.default_provider(), None);
        assert_eq!(s.default_thinking_level(), None);
        assert_eq!(s.steering_mode(), QueueMode::OneAtATime);
        assert_eq!(s.follow_up_mode(), QueueMode::OneAtATime);
        assert_eq!(s.thinking_budgets(), ThinkingBudgets::default());
        assert!(s.compaction_enabled());
        assert_eq!(s.compaction_reserve_tokens(None), 16384);
        assert_eq!(s.compaction_keep_recent_tokens(Some("a/b")), 20000);
        assert_eq!(s.retry(), RetrySettings::default());
        assert_eq!(s.http_idle_timeout_ms(), 300_000);
        assert_eq!(s.default_tools(), None);
        assert!(s.images_auto_resize());
        assert!(!s.images_block_images());
        assert!(s.enable_skill_commands());
        assert_eq!(s.default_project_trust(), "ask");
        assert!(s.skills_paths().is_empty());
        assert_eq!(s.enabled_models(), None);
        assert_eq!(s.shell_path(), None);
    }

    #[test]
    fn wrong_types_fall_back() {
        let s = Settings::in_memory(json!({
            "steeringMode": 3, "followUpMode": "sometimes",
            "compaction": {"enabled": "no", "reserveTokens": -5, "keepRecentTokens": "x"},
            "retry": {"enabled": 1, "maxRetries": "3", "baseDelayMs": 1.5},
            "httpIdleTimeoutMs": true, "thinkingBudgets": {"low": "x", "high": 100},
            "defaultModel": 7, "images": [], "enableSkillCommands": null,
            "defaultProjectTrust": "sometimes", "skills": "not-an-array"
        }));
        assert_eq!(s.steering_mode(), QueueMode::OneAtATime);
        assert_eq!(s.follow_up_mode(), QueueMode::OneAtATime);
        assert!(s.compaction_enabled());
        assert_eq!(s.compaction_reserve_tokens(None), 16384);
        assert_eq!(s.compaction_keep_recent_tokens(None), 20000);
        assert_eq!(s.retry(), RetrySettings::default());
        assert_eq!(s.http_idle_timeout_ms(), 300_000);
        assert_eq!(s.thinking_budgets().low, 2048);
        assert_eq!(s.thinking_budgets().high, 100);
        assert_eq!(s.default_model(), None);
        assert!(s.images_auto_resize());
        assert!(s.enable_skill_commands());
        assert_eq!(s.default_project_trust(), "ask");
        assert!(s.skills_paths().is_empty());
    }

    #[test]
    fn typed_values() {
        let s = Settings::in_memory(json!({
            "queueMode": "all", "followUpMode": "all",
            "compaction": {"reserveTokens": 1000, "modelOverrides": {"p/m": {"reserveTokens": 500}}},
            "retry": {"maxDelayMs": 5000, "maxRetries": 5},
            "httpIdleTimeoutMs": "disabled",
            "defaultTools": ["+grep", "-edit"],
            "defaultProjectTrust": "always",
            "modelThinkingLevels": {"p/m": "high"},
            "enabledModels": ["a*", 3, "b"],
            "shellPath": "~/bin/zsh"
        }));
        assert_eq!(s.steering_mode(), QueueMode::All);
        assert_eq!(s.follow_up_mode(), QueueMode::All);
        assert_eq!(s.compaction_reserve_tokens(Some("p/m")), 500);
        assert_eq!(s.compaction_reserve_tokens(Some("p/other")), 1000);
        assert_eq!(s.retry().max_agent_delay_ms, 5000);
        assert_eq!(s.retry().max_retries, 5);
        assert_eq!(s.provider_retry().max_retry_delay_ms, 5000);
        assert_eq!(s.http_idle_timeout_ms(), 0);
        assert_eq!(
            s.default_tools(),
            Some(vec![
                "read".into(),
                "bash".into(),
                "write".into(),
                "grep".into()
            ])
        );
        assert_eq!(s.default_project_trust(), "always");
        assert_eq!(s.model_thinking_level("p", "m").as_deref(), Some("high"));
        assert_eq!(s.enabled_models(), Some(vec!["a*".into(), "b".into()]));
        if let Some(home) = home_dir() {
            assert_eq!(
                s.shell_path(),
                Some(home.join("bin/zsh").to_string_lossy().into_owned())
            );
        }
        assert_eq!(QueueMode::parse("all"), Some(QueueMode::All));
        assert_eq!(QueueMode::OneAtATime.as_str(), "one-at-a-time");
        assert_eq!(serde_json::to_value(QueueMode::All).unwrap(), json!("all"));
    }

    #[test]
    fn project_overrides_global_and_trust() {
        let agent = temp_dir("merge-agent");
        let cwd = temp_dir("merge-cwd");
        fs::create_dir_all(cwd.join(".pi")).unwrap();
        fs::write(
            agent.join("settings.json"),
            r#"{"compaction":{"enabled":false,"reserveTokens":100},"steeringMode":"all","skills":["gskills"],"defaultTools":["read"],"defaultProjectTrust":"never"}"#,
        )
        .unwrap();
        fs::write(
            cwd.join(".pi/settings.json"),
            r#"{"compaction":{"reserveTokens":200},"steeringMode":"one-at-a-time","skills":["pskills"],"defaultTools":["+bash"],"defaultProjectTrust":"always"}"#,
        )
        .unwrap();
        let mut diags = Vec::new();
        let s = Settings::load(&agent, &cwd, true, &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(!s.compaction_enabled());
        assert_eq!(s.compaction_reserve_tokens(None), 200);
        assert_eq!(s.steering_mode(), QueueMode::OneAtATime);
        assert_eq!(s.default_tools(), Some(vec!["read".into(), "bash".into()]));
        assert_eq!(s.default_project_trust(), "never");
        assert_eq!(
            s.skills_paths(),
            vec![
                cwd.join(".pi/pskills").to_string_lossy().into_owned(),
                agent.join("gskills").to_string_lossy().into_owned()
            ]
        );

        let untrusted = Settings::load(&agent, &cwd, false, &mut diags);
        assert_eq!(untrusted.compaction_reserve_tokens(None), 100);
        assert_eq!(untrusted.steering_mode(), QueueMode::All);
        assert_eq!(untrusted.skills_paths().len(), 1);
        let _ = fs::remove_dir_all(&agent);
        let _ = fs::remove_dir_all(&cwd);
    }

    #[test]
    fn malformed_file_is_reported_and_ignored() {
        let agent = temp_dir("bad");
        let cwd = temp_dir("bad-cwd");
        let file = agent.join("settings.json");
        fs::write(&file, "{\n  \"a\": ,\n}").unwrap();
        let mut diags = Vec::new();
        let mut s = Settings::load(&agent, &cwd, false, &mut diags);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].starts_with(&format!(
            "Warning: failed to parse {} at line 2 column 8: ",
            file.display()
        )));
        assert!(diags[0].ends_with("; ignoring it"));
        assert!(s.compaction_enabled());
        // Never clobbered.
        let err = s.set_global(&["steeringMode"], json!("all")).unwrap_err();
        assert!(matches!(err, SettingsError::Malformed { .. }));
        assert_eq!(fs::read_to_string(&file).unwrap(), "{\n  \"a\": ,\n}");
        assert!(!agent.join("settings.json.lock").exists());

        fs::write(&file, "[1]").unwrap();
        let mut diags = Vec::new();
        Settings::load(&agent, &cwd, false, &mut diags);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].contains("expected a JSON object, found an array"));

        // Missing files are silent.
        let mut diags = Vec::new();
        Settings::load(&cwd.join("nope"), &cwd, true, &mut diags);
        assert!(diags.is_empty());
        let _ = fs::remove_dir_all(&agent);
        let _ = fs::remove_dir_all(&cwd);
    }

    #[test]
    fn set_global_round_trip() {
        let root = temp_dir("persist");
        let agent = root.join("agent");
        let cwd = temp_dir("persist-cwd");
        let mut diags = Vec::new();
        let mut s = Settings::load(&agent, &cwd, false, &mut diags);
        s.set_global(&["compaction", "enabled"], json!(false))
            .unwrap();
        s.set_global(&["retry", "enabled"], json!(true)).unwrap();
        s.set_global(&["steeringMode"], json!("all")).unwrap();
        s.set_global(&["followUpMode"], json!("all")).unwrap();
        let text = fs::read_to_string(agent.join("settings.json")).unwrap();
        assert_eq!(
            text,
            "{\n  \"compaction\": {\n    \"enabled\": false\n  },\n  \"retry\": {\n    \"enabled\": true\n  },\n  \"steeringMode\": \"all\",\n  \"followUpMode\": \"all\"\n}"
        );
        assert!(!s.compaction_enabled());
        assert_eq!(s.steering_mode(), QueueMode::All);
        assert!(!agent.join("settings.json.lock").exists());

        // Concurrent change by someone else is kept; existing key keeps its position.
        fs::write(
            agent.join("settings.json"),
            r#"{"steeringMode":"all","theme":"dark","compaction":{"enabled":false,"reserveTokens":9}}"#,
        )
        .unwrap();
        s.set_global(&["compaction", "enabled"], json!(true))
            .unwrap();
        let v: Value =
            serde_json::from_str(&fs::read_to_string(agent.join("settings.json")).unwrap())
                .unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"steeringMode":"all","theme":"dark","compaction":{"enabled":true,"reserveTokens":9}}"#
        );
        assert_eq!(s.compaction_reserve_tokens(None), 9);
        let reloaded = Settings::load(&agent, &cwd, false, &mut diags);
        assert!(reloaded.compaction_enabled());
        assert!(diags.is_empty());

        // A fresh lock blocks; a stale one is broken.
        let lock = agent.join("settings.json.lock");
        fs::create_dir(&lock).unwrap();
        let err = s.set_global(&["x"], json!(1)).unwrap_err();
        assert!(matches!(err, SettingsError::Locked { .. }));
        let old = SystemTime::now() - Duration::from_secs(60);
        fs::File::open(&lock).unwrap().set_modified(old).unwrap();
        s.set_global(&["x"], json!(1)).unwrap();
        assert!(!lock.exists());
        assert_eq!(s.get(&["x"]), Some(&json!(1)));

        let mut mem = Settings::in_memory(json!({}));
        mem.set_global(&["retry", "enabled"], json!(false)).unwrap();
        assert!(!mem.retry().enabled);
        assert!(matches!(
            mem.set_global(&[], json!(1)),
            Err(SettingsError::EmptyKey)
        ));
        let _ = fs::remove_dir_all(&root);
        let _ = fs::remove_dir_all(&cwd);
    }
}
