//! OAuth credentials in auth.json (providers-catalog.md §5): refreshing them the way pi does,
//! so pi-rpc and pi can share one auth.json.
//!
//! - [`refresh_stored`]: pi's `refreshStoredOAuthCredential` — take the auth.json lock, re-read
//!   the entry from disk (another process may have refreshed it already: then use that; it may
//!   be gone: logged out), else call the provider's refresh, write the whole file with the entry
//!   merged in, release the lock. Rotated refresh tokens are single-use, so the lock is what
//!   keeps two processes from both spending the same one;
//! - `lock`: the `proper-lockfile`-compatible directory lock; `store`: reading and writing the
//!   file; `refresh`: the refresh request of each provider; `copilot`: GitHub Copilot's token
//!   exchange and base URL; `client`: blocking HTTP with a deadline, and the test override
//!   [`ORIGIN_OVERRIDE_VAR`];
//! - [`login`]: the login flows of `pi-rpc login` (browser + PKCE with a `loopback` callback
//!   or a pasted code, device codes), and writing the entry under the lock.
//!
//! Nothing here keeps state between calls; the auth store (`auth.rs`) keeps the refreshed entry
//! in memory and makes sure one thread refreshes a provider at a time.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

mod b64;
pub(crate) mod client;
mod common;
pub mod copilot;
mod copilot_policy;
pub mod lock;
pub mod login;
mod loopback;
pub mod radius;
pub mod refresh;
mod store;

pub use client::ORIGIN_OVERRIDE_VAR;
pub use refresh::is_oauth_provider;

/// A token is refreshed when it expires within this window (pi's default, 5 min).
pub const REFRESH_WINDOW_MS: f64 = 5.0 * 60_000.0;

/// A refresh may take this long, whatever the caller's abort says: once the provider may have
/// rotated the refresh token, the result must be persisted.
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a stored OAuth credential could not be refreshed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefreshError {
    /// The provider's refresh failed (the cause text, pi's wording).
    Provider(String),
    /// The lock or auth.json itself failed (pi: `Credential store modify failed`).
    Store(String),
}

impl fmt::Display for RefreshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefreshError::Provider(cause) | RefreshError::Store(cause) => f.write_str(cause),
        }
    }
}

impl std::error::Error for RefreshError {}

/// `expires` of an entry (NaN when missing, so that it never asks for a refresh, as in pi).
fn expires_of(entry: &Map<String, Value>) -> f64 {
    entry
        .get("expires")
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN)
}

/// pi's `now + 5 min >= expires`.
pub fn needs_refresh(entry: &Map<String, Value>, now_ms: u64) -> bool {
    now_ms as f64 + REFRESH_WINDOW_MS >= expires_of(entry)
}

/// Data a request needs from an OAuth entry besides the access token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthInfo {
    /// github-copilot: the API base URL the token names (`proxy-ep`, §5.5).
    pub base_url: Option<String>,
    /// github-copilot: the models this account may use (others are hidden).
    pub available_model_ids: Option<Vec<String>>,
    /// kimi-coding: the token goes in an explicit `Authorization: Bearer` header, not as the
    /// API's key.
    pub bearer_header: bool,
}

/// The request-side data of `provider`'s entry.
pub fn info(provider: &str, entry: &Map<String, Value>) -> OAuthInfo {
    if provider == "kimi-coding" {
        return OAuthInfo {
            bearer_header: true,
            ..OAuthInfo::default()
        };
    }
    if provider != "github-copilot" {
        return OAuthInfo::default();
    }
    let access = entry.get("access").and_then(Value::as_str).unwrap_or("");
    let domain = entry
        .get("enterpriseUrl")
        .and_then(Value::as_str)
        .and_then(copilot::normalize_domain);
    OAuthInfo {
        base_url: Some(copilot::base_url(access, domain.as_deref())),
        available_model_ids: entry
            .get("availableModelIds")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            }),
        bearer_header: false,
    }
}

/// Whether `entry` is a usable OAuth entry (pi: string `access` and `refresh`, finite
/// `expires`).
fn is_oauth_entry(entry: &Value) -> Option<&Map<String, Value>> {
    let m = entry.as_object()?;
    (m.get("type").and_then(Value::as_str) == Some("oauth")
        && m.get("access").is_some_and(Value::is_string)
        && m.get("refresh").is_some_and(Value::is_string))
    .then_some(m)
}

/// Refreshes `provider`'s OAuth entry in the auth.json at `auth_path` under the lock (see the
/// module docs). Returns the entry to use: the refreshed one, or the one another process wrote
/// meanwhile; `None` when the file no longer holds an OAuth entry for the provider.
/// `radius_gateway` is set for a provider that signs in to a Radius gateway declared in
/// models.json (refreshed there); `env` looks up variables (the test override, Kimi's host);
/// `cancelled` cancels only the wait for the lock; `now_ms` gives the clock.
pub fn refresh_stored(
    auth_path: &Path,
    provider: &str,
    radius_gateway: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    cancelled: &dyn Fn() -> bool,
    now_ms: &dyn Fn() -> u64,
) -> Result<Option<Map<String, Value>>, RefreshError> {
    let store_err = |e: &dyn fmt::Display| RefreshError::Store(e.to_string());
    let real = store::ensure_file(auth_path).map_err(|e| store_err(&e))?;
    let lock = lock::FileLock::acquire(&real, lock::LockOptions::ASYNC, cancelled)
        .map_err(|e| store_err(&e))?;
    let mut data = store::read(&real).map_err(|e| store_err(&e))?;
    let Some(current) = data.get(provider).and_then(is_oauth_entry).cloned() else {
        return Ok(None);
    };
    if !needs_refresh(&current, now_ms()) {
        return Ok(Some(current));
    }
    let ctx = common::Ctx {
        env,
        deadline: Instant::now() + REFRESH_TIMEOUT,
        now_ms: now_ms(),
    };
    let fresh = match radius_gateway {
        Some(gateway) => {
            let token = current.get("refresh").and_then(Value::as_str).unwrap_or("");
            radius::refresh(gateway, token, &ctx)
        }
        None => refresh::refresh(provider, &current, &ctx),
    }
    .map_err(RefreshError::Provider)?;
    let merged = store::merge_entry(&current, &fresh);
    data.insert(provider.to_string(), Value::Object(merged.clone()));
    lock.check().map_err(|e| store_err(&e))?;
    store::write(&real, &data).map_err(|e| store_err(&e))?;
    lock.check().map_err(|e| store_err(&e))?;
    lock.release();
    Ok(Some(merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_refresh_window_is_five_minutes() {
        let e = |expires: Value| json!({"expires": expires}).as_object().cloned().unwrap();
        assert!(needs_refresh(&e(json!(1_000_000)), 1_000_000 - 300_000));
        assert!(!needs_refresh(&e(json!(1_000_000)), 1_000_000 - 300_001));
        assert!(!needs_refresh(&Map::new(), 0), "no expires: never (pi)");
    }

    #[test]
    fn copilot_info() {
        let entry = json!({"access": "tid=1;proxy-ep=proxy.business.githubcopilot.com", "availableModelIds": ["a", 3, "b"]});
        let i = info("github-copilot", entry.as_object().unwrap());
        assert_eq!(
            i.base_url.as_deref(),
            Some("https://api.business.githubcopilot.com")
        );
        assert_eq!(
            i.available_model_ids,
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(
            info("xai", entry.as_object().unwrap()),
            OAuthInfo::default()
        );
    }

    fn temp_auth(content: &Value) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("pi-rpc-oauth-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("auth.json");
        std::fs::write(&path, content.to_string()).unwrap();
        (dir, path)
    }

    #[test]
    fn an_entry_refreshed_by_someone_else_is_used_without_a_request() {
        let far = 9_000_000_000_000u64;
        let (dir, path) = temp_auth(&json!({
            "xai": {"type": "oauth", "access": "new", "refresh": "r2", "expires": far}
        }));
        // The origin override points nowhere: a request would fail.
        let env = |n: &str| (n == ORIGIN_OVERRIDE_VAR).then(|| "http://127.0.0.1:9".to_string());
        let got = refresh_stored(&path, "xai", None, &env, &|| false, &|| 1_000).unwrap();
        assert_eq!(got.unwrap()["access"], json!("new"));
        assert!(!lock::lock_dir_of(&std::fs::canonicalize(&path).unwrap()).exists());
        // Logged out meanwhile.
        assert_eq!(
            refresh_stored(&path, "anthropic", None, &env, &|| false, &|| 1_000).unwrap(),
            None
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_refresh_leaves_the_file_alone() {
        let original = json!({
            "xai": {"type": "oauth", "access": "old", "refresh": "r1", "expires": 1}
        });
        let (dir, path) = temp_auth(&original);
        let env = |n: &str| (n == ORIGIN_OVERRIDE_VAR).then(|| "http://127.0.0.1:9".to_string());
        let err = refresh_stored(&path, "xai", None, &env, &|| false, &|| 1_000).unwrap_err();
        assert_eq!(err, RefreshError::Provider("fetch failed".into()));
        assert_eq!(
            serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap()).unwrap(),
            original
        );
        assert!(!lock::lock_dir_of(&std::fs::canonicalize(&path).unwrap()).exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn openrouter_keys_never_need_a_request() {
        let (dir, path) = temp_auth(&json!({
            "openrouter": {"type": "oauth", "access": "sk-or", "refresh": "", "expires": 1, "x": 1}
        }));
        let got = refresh_stored(
            &path,
            "openrouter",
            None,
            &|_: &str| None,
            &|| false,
            &|| 1_000,
        )
        .unwrap()
        .unwrap();
        assert_eq!(got["access"], json!("sk-or"));
        assert_eq!(got["x"], json!(1));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
