//! Credentials (providers.md §6.1–6.3): per provider, the first of
//! runtime key (`--api-key`) → `<agentDir>/auth.json` → `models.json` `apiKey` → environment
//! variables. Key values may be literals, `$VAR` / `${VAR}` interpolations (`$$` → `$`,
//! `$!` → `!`) or `!command` (stdout of `sh -c command`, trimmed).
//!
//! Resolution is lazy: [`AuthStore::has_credentials`] never runs a command (a `!command` key
//! counts as present); [`AuthStore::api_key`] runs it when needed. auth.json commands are cached
//! for the life of the process, models.json commands are run on every call (as pi does).

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::{Map, Value};

use super::oauth::{self, OAuthInfo, RefreshError};

/// How long a `!command` may run before it is killed and treated as failed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Looks up an environment variable. Injectable so tests need not touch the real environment.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment as an [`EnvLookup`].
pub fn process_env() -> EnvLookup {
    Arc::new(|name: &str| std::env::var(name).ok())
}

/// Why a configured credential or header value could not be turned into a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// A `!command` value exited non-zero, timed out, could not start or printed nothing.
    /// `what` names the value, e.g. `API key for provider "openai"`.
    CommandFailed { what: String, command: String },
    /// A `$VAR` / `${VAR}` value refers to unset (or empty) environment variables.
    MissingEnv { what: String, names: Vec<String> },
    /// The only credential is an OAuth token in auth.json that has expired and cannot be
    /// refreshed (a provider without a refresh flow, or a store without a file).
    OAuthExpired { provider: String },
    /// Refreshing the stored OAuth token failed; the old entry stays in auth.json. A stored
    /// credential owns its provider, so no other source is tried.
    OAuthRefreshFailed { provider: String, cause: String },
    /// The auth.json lock or file failed while refreshing (pi: "Credential store modify
    /// failed").
    CredentialStore { provider: String, cause: String },
    /// A key is required (e.g. models.json `authHeader: true`) but no source provides one.
    MissingApiKey { provider: String },
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::CommandFailed { what, command } => {
                write!(f, "Failed to resolve {what} from shell command: {command}")
            }
            AuthError::MissingEnv { what, names } if names.len() == 1 => write!(
                f,
                "Failed to resolve {what} from environment variable: {}",
                names[0]
            ),
            AuthError::MissingEnv { what, names } => write!(
                f,
                "Failed to resolve {what} from environment variables: {}",
                names.join(", ")
            ),
            AuthError::MissingApiKey { provider } => {
                write!(f, "No API key found for \"{provider}\"")
            }
            AuthError::OAuthExpired { provider } => write!(
                f,
                "Authentication failed for \"{provider}\". Credentials may have expired or network is unavailable. Run '/login {provider}' to re-authenticate."
            ),
            AuthError::OAuthRefreshFailed { provider, cause } => {
                write!(f, "OAuth refresh failed for {provider}: {cause}")
            }
            AuthError::CredentialStore { provider, cause } => {
                write!(f, "Credential store modify failed for {provider}: {cause}")
            }
        }
    }
}

impl AuthError {
    /// Whether the request must fail with this error as its assistant error message (pi's
    /// behaviour for OAuth refresh and credential-store failures), rather than go out without
    /// a key.
    pub fn fails_request(&self) -> bool {
        matches!(
            self,
            AuthError::OAuthRefreshFailed { .. } | AuthError::CredentialStore { .. }
        )
    }
}

impl std::error::Error for AuthError {}

/// Where a resolved credential came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialSource {
    /// `--api-key` / `set_runtime_key`.
    Runtime,
    /// An `api_key` entry of auth.json.
    AuthFile,
    /// The `access` token of an `oauth` entry of auth.json (refreshed when it was due).
    OAuth,
    /// The provider's `apiKey` in models.json.
    ModelsJson,
    /// An environment variable (its name).
    Env(&'static str),
}

/// A resolved credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub key: String,
    pub source: CredentialSource,
    /// OAuth credentials: request data the token carries (github-copilot's base URL and
    /// available models).
    pub oauth: Option<OAuthInfo>,
}

impl Credential {
    /// `ANTHROPIC_AUTH_TOKEN` (and a kimi-coding OAuth token) must be sent as
    /// `Authorization: Bearer <token>` instead of as an API key (pi passes it as a header, with
    /// no API key).
    pub fn is_bearer_token(&self) -> bool {
        self.source == CredentialSource::Env("ANTHROPIC_AUTH_TOKEN")
            || self.oauth.as_ref().is_some_and(|o| o.bearer_header)
    }
}

mod providers;
pub use self::providers::env_vars_for;

// ---------------------------------------------------------------------------------------------
// Config values: literal, $VAR / ${VAR}, !command

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Env(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ConfigValue {
    Command(String),
    Template(Vec<Part>),
}

fn push_literal(parts: &mut Vec<Part>, s: &str) {
    if s.is_empty() {
        return;
    }
    if let Some(Part::Literal(prev)) = parts.last_mut() {
        prev.push_str(s);
    } else {
        parts.push(Part::Literal(s.to_string()));
    }
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Length of the longest `[A-Za-z_][A-Za-z0-9_]*` prefix of `s`.
fn env_name_prefix_len(s: &str) -> usize {
    let b = s.as_bytes();
    if b.is_empty() || !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
        return 0;
    }
    b.iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count()
}

/// pi's `parseConfigValueReference`.
fn parse_config_value(config: &str) -> ConfigValue {
    if let Some(cmd) = config.strip_prefix('!') {
        return ConfigValue::Command(cmd.to_string());
    }
    let mut parts = Vec::new();
    let mut rest = config;
    while let Some(dollar) = rest.find('$') {
        push_literal(&mut parts, &rest[..dollar]);
        let after = &rest[dollar + 1..];
        if after.starts_with('$') || after.starts_with('!') {
            push_literal(&mut parts, &after[..1]);
            rest = &after[1..];
        } else if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                None => {
                    push_literal(&mut parts, "$");
                    rest = after;
                }
                Some(end) => {
                    let name = &inner[..end];
                    if is_env_name(name) {
                        parts.push(Part::Env(name.to_string()));
                    } else {
                        push_literal(&mut parts, &rest[dollar..dollar + 2 + end + 1]);
                    }
                    rest = &inner[end + 1..];
                }
            }
        } else {
            let n = env_name_prefix_len(after);
            if n > 0 {
                parts.push(Part::Env(after[..n].to_string()));
                rest = &after[n..];
            } else {
                push_literal(&mut parts, "$");
                rest = after;
            }
        }
    }
    push_literal(&mut parts, rest);
    ConfigValue::Template(parts)
}

/// True for a `!command` value.
pub fn is_command_value(config: &str) -> bool {
    config.starts_with('!')
}

/// Environment variable names a (non-command) value interpolates, without duplicates.
pub fn config_value_env_names(config: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let ConfigValue::Template(parts) = parse_config_value(config) {
        for p in parts {
            if let Part::Env(n) = p {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
    }
    names
}

/// Resolves a config value. `overrides` (auth.json `env`) are consulted before `env`; empty
/// variables count as unset. `cache`, when given, memoizes command output by command text.
/// `what` names the value in errors.
pub fn resolve_config_value(
    config: &str,
    what: &str,
    env: &EnvLookup,
    overrides: Option<&Map<String, Value>>,
    cache: Option<&Mutex<HashMap<String, Option<String>>>>,
) -> Result<String, AuthError> {
    match parse_config_value(config) {
        ConfigValue::Command(cmd) => {
            let out = match cache {
                Some(cache) => {
                    // The lock is not held while the command runs (another thread may run it
                    // too, which is harmless).
                    let hit = cache.lock().get(&cmd).cloned();
                    match hit {
                        Some(hit) => hit,
                        None => {
                            let out = run_command(&cmd);
                            cache.lock().insert(cmd.clone(), out.clone());
                            out
                        }
                    }
                }
                None => run_command(&cmd),
            };
            out.ok_or_else(|| AuthError::CommandFailed {
                what: what.to_string(),
                command: cmd,
            })
        }
        ConfigValue::Template(parts) => {
            let mut out = String::new();
            let mut missing: Vec<String> = Vec::new();
            for p in parts {
                match p {
                    Part::Literal(s) => out.push_str(&s),
                    Part::Env(name) => match lookup(&name, env, overrides) {
                        Some(v) => out.push_str(&v),
                        None => {
                            if !missing.contains(&name) {
                                missing.push(name);
                            }
                        }
                    },
                }
            }
            if missing.is_empty() {
                Ok(out)
            } else {
                Err(AuthError::MissingEnv {
                    what: what.to_string(),
                    names: missing,
                })
            }
        }
    }
}

/// Whether a value would resolve without running anything: commands count as present,
/// templates need all their variables set.
fn config_value_present(
    config: &str,
    env: &EnvLookup,
    overrides: Option<&Map<String, Value>>,
) -> bool {
    is_command_value(config)
        || config_value_env_names(config)
            .iter()
            .all(|n| lookup(n, env, overrides).is_some())
}

fn lookup(name: &str, env: &EnvLookup, overrides: Option<&Map<String, Value>>) -> Option<String> {
    if let Some(v) = overrides
        .and_then(|o| o.get(name))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        return Some(v.to_string());
    }
    env(name).filter(|v| !v.is_empty())
}

/// Runs `sh -c command` (stdin and stderr closed, 10 s limit) and returns its trimmed stdout
/// when it exits 0 and printed something.
fn run_command(command: &str) -> Option<String> {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = crate::exec::spawner::spawn(sh).ok()?;
    let mut stdout = child.stdout.take()?;
    let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(1);
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let remaining = deadline.saturating_duration_since(Instant::now());
    let out = rx
        .recv_timeout(remaining.max(Duration::from_millis(100)))
        .ok()?;
    if !status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out).trim().to_string();
    (!text.is_empty()).then_some(text)
}

// ---------------------------------------------------------------------------------------------
// auth.json and the store

#[derive(Clone, Debug, PartialEq)]
enum AuthEntry {
    ApiKey {
        key: Option<String>,
        env: Option<Map<String, Value>>,
    },
    OAuth {
        access: String,
        expires_ms: f64,
        /// The whole entry as stored (refreshes merge into it).
        entry: Map<String, Value>,
    },
}

/// What this process knows about one provider's OAuth entry beyond what it loaded.
#[derive(Default)]
struct OAuthSlot {
    /// A thread is refreshing it; others wait on [`OAuthLive::done`].
    in_flight: bool,
    /// `Some(Some(entry))`: refreshed (or re-read) entry; `Some(None)`: logged out meanwhile.
    latest: Option<Option<Map<String, Value>>>,
}

/// Refreshed OAuth entries, shared by the threads that use the store.
#[derive(Default)]
struct OAuthLive {
    slots: Mutex<HashMap<String, OAuthSlot>>,
    done: Condvar,
}

/// Clears a slot's in-flight mark even when the refresh panics.
struct InFlight<'a> {
    live: &'a OAuthLive,
    provider: &'a str,
    result: Option<Option<Map<String, Value>>>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut slots = self.live.slots.lock();
        let slot = slots.entry(self.provider.to_string()).or_default();
        slot.in_flight = false;
        if let Some(r) = self.result.take() {
            slot.latest = Some(r);
        }
        self.live.done.notify_all();
    }
}

/// Credentials of all providers. Cheap to query; `Send + Sync`.
pub struct AuthStore {
    entries: HashMap<String, AuthEntry>,
    runtime: HashMap<String, String>,
    config_keys: HashMap<String, String>,
    env: EnvLookup,
    command_cache: Mutex<HashMap<String, Option<String>>>,
    now_ms: fn() -> u64,
    /// auth.json, when the store was loaded from a file (OAuth refreshes write it back).
    auth_path: Option<PathBuf>,
    oauth_live: OAuthLive,
    /// Providers that sign in to a Radius gateway declared in models.json, and the gateway.
    radius_gateways: HashMap<String, String>,
}

impl fmt::Debug for AuthStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print keys.
        let mut auth_file: Vec<&String> = self.entries.keys().collect();
        auth_file.sort();
        let mut runtime: Vec<&String> = self.runtime.keys().collect();
        runtime.sort();
        let mut config: Vec<&String> = self.config_keys.keys().collect();
        config.sort();
        f.debug_struct("AuthStore")
            .field("auth_file_providers", &auth_file)
            .field("runtime_providers", &runtime)
            .field("models_json_providers", &config)
            .finish()
    }
}

impl Default for AuthStore {
    fn default() -> Self {
        AuthStore::empty()
    }
}

impl AuthStore {
    /// No stored credentials; environment variables are read from the process environment.
    pub fn empty() -> AuthStore {
        AuthStore {
            entries: HashMap::new(),
            runtime: HashMap::new(),
            config_keys: HashMap::new(),
            env: process_env(),
            command_cache: Mutex::new(HashMap::new()),
            now_ms: crate::util::now_ms,
            auth_path: None,
            oauth_live: OAuthLive::default(),
            radius_gateways: HashMap::new(),
        }
    }

    /// Reads `<agent_dir>/auth.json`. A missing file is silent; an unreadable or malformed one
    /// is reported in `diags` and ignored (bad entries are skipped one by one).
    pub fn load(agent_dir: &Path, diags: &mut Vec<String>) -> AuthStore {
        let path = agent_dir.join("auth.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                diags.push(format!(
                    "Warning: failed to read {}: {e}; ignoring it",
                    path.display()
                ));
                None
            }
        };
        let mut store = AuthStore::from_json(text.as_deref(), &path.display().to_string(), diags);
        store.auth_path = Some(path);
        store
    }

    /// Builds a store from auth.json text (`None` = no file). `path` only names the file in
    /// diagnostics.
    pub fn from_json(text: Option<&str>, path: &str, diags: &mut Vec<String>) -> AuthStore {
        let mut store = AuthStore::empty();
        let Some(text) = text else { return store };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                diags.push(format!(
                    "Warning: failed to parse {path} at line {} column {}: {}; ignoring it",
                    e.line(),
                    e.column(),
                    strip_serde_position(&e.to_string())
                ));
                return store;
            }
        };
        let Value::Object(root) = root else {
            diags.push(format!(
                "Warning: invalid {path}: expected an object of provider credentials; ignoring it"
            ));
            return store;
        };
        for (provider, entry) in root {
            match parse_entry(&entry) {
                Ok(e) => {
                    store.entries.insert(provider, e);
                }
                Err(why) => diags.push(format!(
                    "Warning: invalid credential for provider \"{provider}\" in {path}: {why}; ignoring it"
                )),
            }
        }
        store
    }

    /// Declares `provider` a Radius provider of `gateway` (models.json `"oauth": "radius"`):
    /// its OAuth entry is refreshed there, and `RADIUS_API_KEY` is its environment key, as
    /// for the built-in `radius`.
    pub fn set_radius_gateway(&mut self, provider: &str, gateway: String) {
        self.radius_gateways.insert(provider.to_string(), gateway);
    }

    /// The stored OAuth entry of `provider` as loaded from auth.json (Radius' legacy
    /// `gatewayConfig` lives there).
    pub fn stored_oauth_entry(&self, provider: &str) -> Option<&Map<String, Value>> {
        match self.entries.get(provider) {
            Some(AuthEntry::OAuth { entry, .. }) => Some(entry),
            _ => None,
        }
    }

    /// The environment variables of `provider`'s key.
    fn key_env_vars(&self, provider: &str) -> &'static [&'static str] {
        if self.radius_gateways.contains_key(provider) {
            return env_vars_for("radius");
        }
        env_vars_for(provider)
    }

    /// Replaces the environment lookup (tests; embedding with a scrubbed environment).
    pub fn with_env(mut self, env: EnvLookup) -> AuthStore {
        self.env = env;
        self
    }

    /// The environment lookup in use (the registry resolves header values with it).
    pub fn env(&self) -> &EnvLookup {
        &self.env
    }

    /// A non-persistent key (`--api-key`) for one provider; wins over every other source. Used
    /// as given (no interpolation).
    pub fn set_runtime_key(&mut self, provider: &str, key: String) {
        self.runtime.insert(provider.to_string(), key);
    }

    /// The provider's `apiKey` from models.json (may be `$VAR` or `!command`).
    pub fn set_provider_config_key(&mut self, provider: &str, key: String) {
        self.config_keys.insert(provider.to_string(), key);
    }

    /// Whether some source would give `provider` a credential. Never runs commands.
    pub fn has_credentials(&self, provider: &str) -> bool {
        if self.runtime.get(provider).is_some_and(|k| !k.is_empty()) {
            return true;
        }
        let from_file = match self.entries.get(provider) {
            Some(AuthEntry::ApiKey {
                key: Some(key),
                env,
            }) => config_value_present(key, &self.env, env.as_ref()),
            Some(AuthEntry::OAuth {
                access, expires_ms, ..
            }) => {
                if self.oauth_refreshable(provider) {
                    // pi lists the provider while a refresh can still renew the token.
                    !self.oauth_logged_out(provider)
                } else {
                    self.oauth_valid(access, *expires_ms)
                }
            }
            _ => false,
        };
        let keyed = from_file
            || self
                .config_keys
                .get(provider)
                .is_some_and(|key| config_value_present(key, &self.env, None))
            || self
                .key_env_vars(provider)
                .iter()
                .any(|v| lookup(v, &self.env, None).is_some());
        if keyed {
            return self.settings_present(provider);
        }
        let stored_env = self.stored_env(provider);
        providers::ambient_available(provider, &|n| lookup(n, &self.env, stored_env))
    }

    /// The `env` values of the provider's stored `api_key` entry (they override the process
    /// environment for that provider only).
    fn stored_env(&self, provider: &str) -> Option<&Map<String, Value>> {
        match self.entries.get(provider) {
            Some(AuthEntry::ApiKey { env, .. }) => env.as_ref(),
            _ => None,
        }
    }

    /// The string values of the provider's stored `env`, in file order (pi passes them to the
    /// wire API as `options.env`; Bedrock reads its settings and profile there first).
    pub fn stored_env_pairs(&self, provider: &str) -> Vec<(String, String)> {
        self.stored_env(provider)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect()
    }

    /// Whether the settings the provider needs besides its key (Cloudflare's account and
    /// gateway ids) are all set, in the stored credential's `env` or the environment.
    pub fn settings_present(&self, provider: &str) -> bool {
        let stored_env = self.stored_env(provider);
        providers::required_settings(provider)
            .iter()
            .all(|n| lookup(n, &self.env, stored_env).is_some())
    }

    /// The base URL with its `{NAME}` placeholders filled from the provider's stored `env`
    /// and the environment (Cloudflare's ids).
    pub fn fill_base_url(&self, provider: &str, base_url: &str) -> String {
        if !base_url.contains('{') {
            return base_url.to_string();
        }
        let stored_env = self.stored_env(provider);
        providers::fill_placeholders(base_url, &|n| lookup(n, &self.env, stored_env))
    }

    /// The provider's API key, resolving `$VAR` and running `!command` as needed. `Ok(None)`
    /// when no source is configured at all; an error when the configured sources all failed.
    pub fn api_key(&self, provider: &str) -> Result<Option<String>, AuthError> {
        Ok(self.credential(provider)?.map(|c| c.key))
    }

    /// Like [`AuthStore::api_key`], also telling where the key came from.
    pub fn credential(&self, provider: &str) -> Result<Option<Credential>, AuthError> {
        let found = |key: String, source| {
            Ok(Some(Credential {
                key,
                source,
                oauth: None,
            }))
        };
        if let Some(key) = self.runtime.get(provider).filter(|k| !k.is_empty()) {
            return found(key.clone(), CredentialSource::Runtime);
        }
        let what = format!("API key for provider \"{provider}\"");
        // The first failure is reported when no later source resolves.
        let mut failure: Option<AuthError> = None;
        match self.entries.get(provider) {
            Some(AuthEntry::ApiKey {
                key: Some(key),
                env,
            }) => {
                match resolve_config_value(
                    key,
                    &what,
                    &self.env,
                    env.as_ref(),
                    Some(&self.command_cache),
                ) {
                    Ok(k) if !k.is_empty() => return found(k, CredentialSource::AuthFile),
                    Ok(_) => {}
                    Err(e) => failure = Some(e),
                }
            }
            Some(AuthEntry::OAuth { entry, .. }) if self.oauth_refreshable(provider) => {
                // A stored OAuth credential owns the provider: no fallback after a failure.
                return Ok(self.oauth_entry(provider, entry)?.map(|e| Credential {
                    key: e
                        .get("access")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    source: CredentialSource::OAuth,
                    oauth: Some(oauth::info(provider, &e)),
                }));
            }
            Some(AuthEntry::OAuth {
                access, expires_ms, ..
            }) => {
                if self.oauth_valid(access, *expires_ms) {
                    return found(access.clone(), CredentialSource::OAuth);
                }
                failure = Some(AuthError::OAuthExpired {
                    provider: provider.to_string(),
                });
            }
            _ => {}
        }
        if let Some(key) = self.config_keys.get(provider) {
            match resolve_config_value(key, &what, &self.env, None, None) {
                Ok(k) if !k.is_empty() => return found(k, CredentialSource::ModelsJson),
                Ok(_) => {}
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        for var in self.key_env_vars(provider) {
            if let Some(v) = lookup(var, &self.env, None) {
                return found(v, CredentialSource::Env(var));
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// The request-side data of the provider's stored OAuth entry (the newest this process
    /// knows, refreshed or loaded), without refreshing anything. `None` without such an entry.
    pub fn oauth_info(&self, provider: &str) -> Option<oauth::OAuthInfo> {
        let Some(AuthEntry::OAuth { entry, .. }) = self.entries.get(provider) else {
            return None;
        };
        let latest = self
            .oauth_live
            .slots
            .lock()
            .get(provider)
            .and_then(|slot| slot.latest.clone());
        match latest {
            Some(Some(e)) => Some(oauth::info(provider, &e)),
            Some(None) => None,
            None => Some(oauth::info(provider, entry)),
        }
    }

    fn oauth_valid(&self, access: &str, expires_ms: f64) -> bool {
        !access.is_empty() && expires_ms > (self.now_ms)() as f64
    }

    /// Whether `provider`'s OAuth entry can be refreshed here: pi has a refresh flow for it and
    /// the store knows its auth.json.
    fn oauth_refreshable(&self, provider: &str) -> bool {
        self.auth_path.is_some()
            && (oauth::is_oauth_provider(provider) || self.radius_gateways.contains_key(provider))
    }

    fn oauth_logged_out(&self, provider: &str) -> bool {
        self.oauth_live
            .slots
            .lock()
            .get(provider)
            .is_some_and(|s| matches!(s.latest, Some(None)))
    }

    /// The OAuth entry to use for `provider`, refreshed first when it expires within 5 min
    /// (`oauth::refresh_stored`). One thread refreshes a provider at a time; the others wait
    /// and then use its result. The slot lock is never held across the refresh.
    fn oauth_entry(
        &self,
        provider: &str,
        loaded: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, AuthError> {
        let Some(path) = self.auth_path.as_deref() else {
            return Ok(Some(loaded.clone()));
        };
        {
            let mut slots = self.oauth_live.slots.lock();
            loop {
                let slot = slots.entry(provider.to_string()).or_default();
                if slot.in_flight {
                    self.oauth_live.done.wait(&mut slots);
                    continue;
                }
                let current = match &slot.latest {
                    Some(latest) => latest.clone(),
                    None => Some(loaded.clone()),
                };
                match current {
                    None => return Ok(None),
                    Some(e) if !oauth::needs_refresh(&e, (self.now_ms)()) => return Ok(Some(e)),
                    Some(_) => {
                        slot.in_flight = true;
                        break;
                    }
                }
            }
        }
        let mut guard = InFlight {
            live: &self.oauth_live,
            provider,
            result: None,
        };
        let env = |name: &str| (self.env)(name);
        let now = || (self.now_ms)();
        let gateway = self.radius_gateways.get(provider).map(String::as_str);
        match oauth::refresh_stored(path, provider, gateway, &env, &|| false, &now) {
            Ok(entry) => {
                guard.result = Some(entry.clone());
                Ok(entry)
            }
            Err(RefreshError::Provider(cause)) => Err(AuthError::OAuthRefreshFailed {
                provider: provider.to_string(),
                cause,
            }),
            Err(RefreshError::Store(cause)) => Err(AuthError::CredentialStore {
                provider: provider.to_string(),
                cause,
            }),
        }
    }
}

fn parse_entry(entry: &Value) -> Result<AuthEntry, String> {
    let Value::Object(obj) = entry else {
        return Err("expected an object".into());
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("api_key") => {
            let key = match obj.get("key") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err("\"key\" must be a string".into()),
            };
            let env = match obj.get("env") {
                None | Some(Value::Null) => None,
                Some(Value::Object(m)) if m.values().all(Value::is_string) => Some(m.clone()),
                Some(_) => return Err("\"env\" must be an object of strings".into()),
            };
            Ok(AuthEntry::ApiKey { key, env })
        }
        Some("oauth") => {
            let access = obj
                .get("access")
                .and_then(Value::as_str)
                .ok_or("an oauth entry needs an \"access\" string")?;
            let expires_ms = obj
                .get("expires")
                .and_then(Value::as_f64)
                .filter(|e| e.is_finite())
                .ok_or("an oauth entry needs a numeric \"expires\"")?;
            Ok(AuthEntry::OAuth {
                access: access.to_string(),
                expires_ms,
                entry: obj.clone(),
            })
        }
        Some(other) => Err(format!(
            "unknown type \"{other}\" (expected \"api_key\" or \"oauth\")"
        )),
        None => Err("missing \"type\" (\"api_key\" or \"oauth\")".into()),
    }
}

/// serde_json appends " at line L column C" to its messages; we print the position ourselves.
pub(crate) fn strip_serde_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

#[cfg(test)]
pub(crate) fn fake_env(vars: &[(&str, &str)]) -> EnvLookup {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |name: &str| map.get(name).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(config: &str, env: &[(&str, &str)]) -> Result<String, AuthError> {
        resolve_config_value(config, "API key", &fake_env(env), None, None)
    }

    fn store(json: Option<&str>, env: &[(&str, &str)]) -> (AuthStore, Vec<String>) {
        let mut diags = Vec::new();
        let s = AuthStore::from_json(json, "/a/auth.json", &mut diags).with_env(fake_env(env));
        (s, diags)
    }

    #[test]
    fn interpolation() {
        let env = [
            ("PI_RPC_T_A", "alpha"),
            ("PI_RPC_T_B", "beta"),
            ("EMPTY", ""),
        ];
        assert_eq!(resolve("literal", &env).unwrap(), "literal");
        assert_eq!(resolve("$PI_RPC_T_A", &env).unwrap(), "alpha");
        assert_eq!(resolve("${PI_RPC_T_A}", &env).unwrap(), "alpha");
        assert_eq!(
            resolve("x-$PI_RPC_T_A/${PI_RPC_T_B}!", &env).unwrap(),
            "x-alpha/beta!"
        );
        assert_eq!(resolve("$PI_RPC_T_A.y", &env).unwrap(), "alpha.y");
        assert_eq!(resolve("a$$b", &env).unwrap(), "a$b");
        assert_eq!(resolve("$!echo", &env).unwrap(), "!echo");
        assert_eq!(resolve("cost $5", &env).unwrap(), "cost $5");
        assert_eq!(resolve("${not valid}", &env).unwrap(), "${not valid}");
        assert_eq!(resolve("${OPEN", &env).unwrap(), "${OPEN");
        assert_eq!(resolve("end$", &env).unwrap(), "end$");
        assert_eq!(
            resolve("$MISSING_ONE", &env),
            Err(AuthError::MissingEnv {
                what: "API key".into(),
                names: vec!["MISSING_ONE".into()]
            })
        );
        // Empty variables count as unset.
        let err = resolve("$EMPTY${MISSING_TWO}", &env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to resolve API key from environment variables: EMPTY, MISSING_TWO"
        );
    }

    #[test]
    fn commands() {
        assert_eq!(resolve("!echo '  from-cmd  '", &[]).unwrap(), "from-cmd");
        let err = resolve("!exit 3", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to resolve API key from shell command: exit 3"
        );
        assert!(resolve("!true", &[]).is_err(), "empty output is a failure");
    }

    #[test]
    fn auth_json_commands_are_cached() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-auth-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let counter = dir.join("count");
        let cmd = format!("!echo x >> '{0}'; wc -l < '{0}'", counter.display());
        let json = serde_json::json!({"p": {"type": "api_key", "key": cmd}}).to_string();
        let (s, diags) = store(Some(&json), &[]);
        assert!(diags.is_empty());
        assert!(s.has_credentials("p"));
        assert!(!counter.exists(), "has_credentials must not run commands");
        assert_eq!(s.api_key("p").unwrap().as_deref(), Some("1"));
        assert_eq!(s.api_key("p").unwrap().as_deref(), Some("1"));
        // models.json commands are not cached.
        let mut s2 = AuthStore::empty().with_env(fake_env(&[]));
        s2.set_provider_config_key("q", cmd.clone());
        assert_eq!(s2.api_key("q").unwrap().as_deref(), Some("2"));
        assert_eq!(s2.api_key("q").unwrap().as_deref(), Some("3"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn resolution_order() {
        let json = r#"{"anthropic":{"type":"api_key","key":"from-file"}}"#;
        let (mut s, _) = store(Some(json), &[("ANTHROPIC_API_KEY", "from-env")]);
        s.set_provider_config_key("anthropic", "from-models".into());
        assert_eq!(
            s.api_key("anthropic").unwrap().as_deref(),
            Some("from-file")
        );
        s.set_runtime_key("anthropic", "from-cli".into());
        let c = s.credential("anthropic").unwrap().unwrap();
        assert_eq!(
            (c.key.as_str(), c.source),
            ("from-cli", CredentialSource::Runtime)
        );

        let (mut s, _) = store(None, &[("ANTHROPIC_API_KEY", "from-env")]);
        s.set_provider_config_key("anthropic", "from-models".into());
        assert_eq!(
            s.api_key("anthropic").unwrap().as_deref(),
            Some("from-models")
        );

        let (s, _) = store(
            None,
            &[("ANTHROPIC_API_KEY", "k1"), ("ANTHROPIC_OAUTH_TOKEN", "k2")],
        );
        assert_eq!(s.api_key("anthropic").unwrap().as_deref(), Some("k2"));
        let (s, _) = store(
            None,
            &[("ANTHROPIC_API_KEY", "k1"), ("ANTHROPIC_AUTH_TOKEN", "t")],
        );
        let c = s.credential("anthropic").unwrap().unwrap();
        assert!(c.is_bearer_token());
        let (s, _) = store(None, &[("GEMINI_API_KEY", "g"), ("OPENAI_API_KEY", "")]);
        assert!(s.has_credentials("google"));
        assert!(!s.has_credentials("openai"), "empty variable is unset");
        assert_eq!(s.api_key("openai").unwrap(), None);
        assert!(!s.has_credentials("custom"));
    }

    #[test]
    fn models_json_key_with_missing_env_is_not_a_credential() {
        let (mut s, _) = store(None, &[]);
        s.set_provider_config_key("mock", "$PI_RPC_TEST_UNSET_KEY".into());
        assert!(!s.has_credentials("mock"));
        assert!(matches!(
            s.api_key("mock"),
            Err(AuthError::MissingEnv { .. })
        ));
        let (mut s, _) = store(None, &[("PI_RPC_TEST_SET_KEY", "v")]);
        s.set_provider_config_key("mock", "${PI_RPC_TEST_SET_KEY}".into());
        assert!(s.has_credentials("mock"));
        assert_eq!(s.api_key("mock").unwrap().as_deref(), Some("v"));
    }

    #[test]
    fn auth_json_env_overrides_and_oauth() {
        let json = r#"{
            "a": {"type": "api_key", "key": "$TOKEN_X", "env": {"TOKEN_X": "from-entry"}},
            "fresh": {"type": "oauth", "refresh": "r", "access": "acc", "expires": 99999999999999},
            "stale": {"type": "oauth", "refresh": "r", "access": "old", "expires": 1}
        }"#;
        let (s, diags) = store(Some(json), &[]);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(s.api_key("a").unwrap().as_deref(), Some("from-entry"));
        assert!(s.has_credentials("fresh"));
        assert_eq!(s.api_key("fresh").unwrap().as_deref(), Some("acc"));
        assert!(!s.has_credentials("stale"));
        assert_eq!(
            s.api_key("stale"),
            Err(AuthError::OAuthExpired {
                provider: "stale".into()
            })
        );
    }

    #[test]
    fn a_stored_oauth_credential_owns_its_provider() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-auth-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("auth.json");
        let json = r#"{"xai": {"type": "oauth", "refresh": "r", "access": "old", "expires": 1}}"#;
        std::fs::write(&path, json).unwrap();
        let mut diags = Vec::new();
        // The token endpoint is unreachable (discard port) and XAI_API_KEY is set.
        let s = AuthStore::load(&dir, &mut diags).with_env(fake_env(&[
            ("XAI_API_KEY", "from-env"),
            (oauth::ORIGIN_OVERRIDE_VAR, "http://127.0.0.1:9"),
        ]));
        assert!(s.has_credentials("xai"), "refreshable: listed as available");
        let err = s.credential("xai").unwrap_err();
        assert_eq!(
            err,
            AuthError::OAuthRefreshFailed {
                provider: "xai".into(),
                cause: "fetch failed".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "OAuth refresh failed for xai: fetch failed"
        );
        assert!(err.fails_request());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), json);
        // Without a file to write back to, an expired token is just expired.
        let (s, _) = store(Some(json), &[]);
        assert!(!s.has_credentials("xai"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn threads_needing_the_same_refresh_share_one_request() {
        use std::io::{Read as _, Write as _};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let server_hits = Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                server_hits.fetch_add(1, Ordering::SeqCst);
                // The whole request, body included: closing the socket with a part of it
                // unread would reset the connection before the client reads the answer (the
                // client's "fetch failed" seen once in CI, when the body came in a second read).
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (name, value) = l.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                // Slow enough for the other threads to arrive meanwhile.
                std::thread::sleep(Duration::from_millis(300));
                let body = r#"{"access_token":"new","refresh_token":"r2","expires_in":3600}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        let dir = std::env::temp_dir().join(format!("pi-rpc-auth-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("auth.json"),
            r#"{"xai": {"type": "oauth", "refresh": "r1", "access": "old", "expires": 1}}"#,
        )
        .unwrap();
        let mut diags = Vec::new();
        let s = Arc::new(
            AuthStore::load(&dir, &mut diags)
                .with_env(fake_env(&[(oauth::ORIGIN_OVERRIDE_VAR, origin.as_str())])),
        );
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || s.api_key("xai").unwrap())
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap().as_deref(), Some("new"));
        }
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        // Later calls use the refreshed entry from memory.
        assert_eq!(s.api_key("xai").unwrap().as_deref(), Some("new"));
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_auth_json_is_reported_not_fatal() {
        let (s, diags) = store(Some("{\n  \"a\": {\"type\": \"api_key\",\n  oops\n}"), &[]);
        assert_eq!(diags.len(), 1);
        assert!(
            diags[0].starts_with("Warning: failed to parse /a/auth.json at line 3 column 3: "),
            "{}",
            diags[0]
        );
        assert!(diags[0].ends_with("; ignoring it"));
        assert!(!s.has_credentials("a"));

        let (_, diags) = store(Some("[1]"), &[]);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].contains("expected an object"));

        let (s, diags) = store(
            Some(
                r#"{"bad": 3, "worse": {"type": "magic"}, "ok": {"type": "api_key", "key": "k"}}"#,
            ),
            &[],
        );
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(diags[0].contains("\"bad\""));
        assert_eq!(s.api_key("ok").unwrap().as_deref(), Some("k"));

        let (s, diags) = store(
            Some("\u{feff}{\"p\":{\"type\":\"api_key\",\"key\":\"k\"}}"),
            &[],
        );
        assert!(diags.is_empty());
        assert!(s.has_credentials("p"));
    }

    #[test]
    fn missing_file_is_silent() {
        let mut diags = Vec::new();
        let dir = std::env::temp_dir().join(format!("pi-rpc-none-{}", uuid::Uuid::new_v4()));
        let s = AuthStore::load(&dir, &mut diags);
        assert!(diags.is_empty());
        assert!(format!("{s:?}").contains("AuthStore"));
    }
}
