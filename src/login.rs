//! `pi-rpc auth login <provider> [--api-key] [--no-browser]` and `pi-rpc auth logout
//! <provider>` (also as `pi-rpc login …` / `pi-rpc logout …`): pi's `pi auth login/logout`,
//! headless. URLs, device codes and prompts go to stdout, errors to stderr; pasted codes and
//! API keys are read from stdin. The credential lands in `<agentDir>/auth.json` under pi's
//! lock, exactly as pi stores it, so pi and pi-rpc share it. The flows are in
//! `llm::oauth::login`.

use std::io::{BufRead, Write};

use crossbeam_channel::bounded;
use serde_json::Value;

use crate::llm::oauth::{self, login};

const LOGIN_USAGE: &str = "Usage: pi-rpc auth login <provider> [--api-key] [--no-browser]";
const LOGOUT_USAGE: &str = "Usage: pi-rpc auth logout <provider>";

/// Providers whose only login is the account sign-in.
const OAUTH_ONLY: &[&str] = &["openai-codex"];

/// Runs the subcommand when `args` (without the program name) is `auth login|logout …` or
/// `login|logout …`; `None` otherwise. The value is the exit code.
pub fn run(args: &[String]) -> Option<i32> {
    let rest = match args {
        [auth, rest @ ..] if auth == "auth" => rest,
        _ => args,
    };
    let (command, rest) = rest.split_first()?;
    match command.as_str() {
        "login" => Some(login_command(rest)),
        "logout" => Some(logout_command(rest)),
        _ => None,
    }
}

fn auth_path() -> std::path::PathBuf {
    crate::resources::settings::agent_dir_from_env().join("auth.json")
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    // A prompt waits on the same line.
    let _ = if text.ends_with(": ") {
        write!(out, "{text}")
    } else {
        writeln!(out, "{text}")
    };
    let _ = out.flush();
}

fn login_command(args: &[String]) -> i32 {
    let mut provider: Option<&str> = None;
    let (mut api_key, mut browser) = (false, true);
    for a in args {
        match a.as_str() {
            "--api-key" => api_key = true,
            "--no-browser" => browser = false,
            _ if a.starts_with('-') || provider.is_some() => {
                eprintln!("{LOGIN_USAGE}");
                return 1;
            }
            _ => provider = Some(a),
        }
    }
    let Some(provider) = provider else {
        eprintln!("{LOGIN_USAGE}");
        return 1;
    };
    if api_key && !browser {
        eprintln!("--no-browser only applies to account sign-in; omit it with --api-key.");
        return 1;
    }
    if api_key && OAUTH_ONLY.contains(&provider) {
        eprintln!("{provider} has no API key login. Omit --api-key to sign in.");
        return 1;
    }
    let (tx, rx) = bounded::<Option<String>>(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    let env = |name: &str| std::env::var(name).ok();
    let io = login::Interaction {
        show: &say,
        input: rx,
        env: &env,
        now_ms: &crate::util::now_ms,
        device_id: &device_id,
        builtin_model_ids: &crate::llm::registry::builtin_model_ids,
        cancelled: std::cell::Cell::new(false),
    };
    let agent_dir = crate::resources::settings::agent_dir_from_env();
    // The built-in radius or a models.json Radius gateway (`"oauth": "radius"`).
    let radius = crate::llm::registry::radius_gateway(&agent_dir, provider);
    let account = !api_key && (oauth::is_oauth_provider(provider) || radius.is_some());
    let entry = match &radius {
        Some((gateway, name)) if account => login::radius_login(&io, gateway, name, browser),
        _ if account => login::login(provider, &io, browser),
        _ => login::api_key_login(provider, &io),
    };
    let path = auth_path();
    let token = entry.as_ref().ok().and_then(|e| {
        e.get("access")
            .or_else(|| e.get("key"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    match entry.and_then(|e| login::save(&path, provider, Some(e))) {
        Ok(_) => {
            let what = if account {
                format!("Logged in to {provider}")
            } else {
                format!("Saved API key for {provider}")
            };
            say(&format!("{what}. Credentials saved to {}", path.display()));
            if let Some((gateway, name)) = &radius {
                refresh_radius_catalog(&agent_dir, provider, gateway, name, token.as_deref());
            }
            0
        }
        Err(_) if io.cancelled.get() => {
            eprintln!("Login cancelled.");
            1
        }
        Err(m) => {
            eprintln!("Failed to log in to {provider}: {m}");
            1
        }
    }
}

/// pi's `refreshProviderCatalog` after a Radius login: the gateway's model list is fetched
/// with the new credential and saved in models-store.json (`llm::oauth::radius`), so the
/// provider lists the account's models from the next start. Skipped with `PI_OFFLINE`, as in
/// pi; a failure is reported and leaves the login in place.
fn refresh_radius_catalog(
    agent_dir: &std::path::Path,
    provider: &str,
    gateway: &str,
    name: &str,
    token: Option<&str>,
) {
    if std::env::var_os("PI_OFFLINE").is_some() {
        return;
    }
    let env = |n: &str| std::env::var(n).ok();
    let now = crate::util::now_ms();
    if let Err(e) = oauth::radius::refresh_catalog(agent_dir, provider, gateway, token, &env, now) {
        say(&format!(
            "The {name} model catalog could not be refreshed: {e}"
        ));
    }
}

/// pi's `getOrCreateDeviceId`: the global settings' `deviceId`, created (a random UUID) and
/// saved under settings.json's lock when missing, as pi's settings manager does (its lock is
/// `settings.json.lock` without symlink resolution, stale after 10 s, 10 tries 20 ms apart).
fn device_id() -> Result<String, String> {
    use crate::llm::oauth::lock::{FileLock, LockOptions};
    let dir = crate::resources::settings::agent_dir_from_env();
    let path = dir.join("settings.json");
    let read = || -> Result<serde_json::Map<String, Value>, String> {
        match std::fs::read_to_string(&path) {
            Ok(t) => match serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')) {
                Ok(Value::Object(m)) => Ok(m),
                _ => Err(format!("Invalid settings file {}", path.display())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::Map::new()),
            Err(e) => Err(format!("{e}: {}", path.display())),
        }
    };
    let existing = |m: &serde_json::Map<String, Value>| {
        m.get("deviceId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(id) = existing(&read()?) {
        return Ok(id);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{e}: {}", dir.display()))?;
    let sync_lock = LockOptions {
        stale: std::time::Duration::from_secs(10),
        update: std::time::Duration::from_secs(5),
        wait: std::time::Duration::from_millis(200),
    };
    // The path as given: pi locks settings.json without resolving symlinks.
    let lock = FileLock::acquire(&path, sync_lock, &|| false).map_err(|e| e.to_string())?;
    let mut settings = read()?;
    if let Some(id) = existing(&settings) {
        lock.release();
        return Ok(id);
    }
    let id = uuid::Uuid::new_v4().to_string();
    settings.insert("deviceId".into(), Value::from(id.clone()));
    let text = crate::js::json::js_stringify_pretty(&Value::Object(settings));
    lock.check().map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{e}: {}", path.display()))?;
    lock.release();
    Ok(id)
}

fn logout_command(args: &[String]) -> i32 {
    let [provider] = args else {
        eprintln!("{LOGOUT_USAGE}");
        return 1;
    };
    if provider.starts_with('-') {
        eprintln!("{LOGOUT_USAGE}");
        return 1;
    }
    match login::save(&auth_path(), provider, None) {
        Ok(None) => {
            say(&format!("No stored credentials for {provider}. Environment variables and models.json config are unchanged."));
            0
        }
        Ok(Some(old)) => {
            if old.get("type").and_then(Value::as_str) == Some("oauth") {
                say(&format!("Logged out of {provider}."));
            } else {
                say(&format!("Removed stored API key for {provider}. Environment variables and models.json config are unchanged."));
            }
            0
        }
        Err(e) => {
            eprintln!("Logout failed: {e}");
            1
        }
    }
}
