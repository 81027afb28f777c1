//! Radius gateways (providers-catalog.md §2.2, §5.4, §5.6): pi's `radius.js` OAuth client and
//! `radius-config.js`.
//!
//! The built-in `radius` provider talks to `https://radius.pi.dev`; a models.json provider with
//! `"oauth": "radius"` and a `baseUrl` declares another gateway (pi's
//! `configureRadiusProviders`): its id is the provider id (and the auth.json / models-store.json
//! key), its gateway is the `baseUrl` without a trailing `/v1`, with `https://` added when it
//! has no scheme and trailing slashes removed. Every OAuth URL is an absolute path on the
//! gateway's origin (`new URL("/v1/oauth/token", gateway)`): a path in the gateway is dropped.
//!
//! After a login pi refreshes the provider's catalog: `GET /v1/config` (with the new token)
//! gives `{baseUrl, models}`; the models (as `pi-messages` models of the provider at that
//! `baseUrl`) are saved as the provider's entry of `<agentDir>/models-store.json`, under the
//! file's lock, and replace the provider's catalog from then on.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::client::{Body, Env};
use super::common::{call as send, num, oauth_entry, Ctx};
use super::lock::{FileLock, LockOptions};
use super::store;

/// The built-in `radius` provider's gateway.
pub const DEFAULT_GATEWAY: &str = "https://radius.pi.dev";
pub(crate) const CLIENT_ID: &str = "pi-gateway";
const MINUTE_MS: f64 = 60_000.0;

/// pi's `normalizeRadiusGatewayUrl`: `https://` unless the value has an http(s) scheme,
/// trailing slashes removed.
pub fn normalize_gateway(value: &str) -> String {
    let lower = value.to_ascii_lowercase();
    let with_scheme = if lower.starts_with("http://") || lower.starts_with("https://") {
        value.to_string()
    } else {
        format!("https://{value}")
    };
    with_scheme.trim_end_matches('/').to_string()
}

/// The gateway a models.json `baseUrl` declares (`/v1` or `/v1/` at the end removed, then
/// normalized).
pub fn gateway_of_base_url(base_url: &str) -> String {
    let trimmed = base_url
        .strip_suffix("/v1/")
        .or_else(|| base_url.strip_suffix("/v1"))
        .unwrap_or(base_url);
    normalize_gateway(trimmed)
}

/// `new URL(path, gateway)` for an absolute `path`: the gateway's origin, then `path`.
pub(crate) fn url(gateway: &str, path: &str) -> String {
    let after_scheme = gateway.find("://").map_or(0, |i| i + 3);
    let origin_end = gateway[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(gateway.len(), |i| after_scheme + i);
    format!("{}{path}", &gateway[..origin_end])
}

/// pi's Radius `requestOAuthToken` (`/v1/oauth/token` of the gateway).
pub(crate) fn token(
    gateway: &str,
    fields: &[(&str, &str)],
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    let resp = send(
        "POST",
        &url(gateway, "/v1/oauth/token"),
        &[("accept", "application/json")],
        Body::Form(fields),
        ctx,
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        let (error, description) = match serde_json::from_str::<Value>(&resp.body) {
            _ if resp.body.is_empty() => (None, None),
            Ok(v) => (
                v.get("error").and_then(Value::as_str).map(str::to_string),
                v.get("error_description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            ),
            Err(_) => (None, Some(resp.body.clone())),
        };
        let detail = match (error, description) {
            (Some(e), Some(d)) if !d.is_empty() => format!("{e}: {d}"),
            (Some(e), _) => e,
            (None, Some(d)) if !d.is_empty() => d,
            _ => resp.status.to_string(),
        };
        return Err(format!("Radius OAuth token request failed: {detail}"));
    }
    let data = resp.json_object().unwrap_or_default();
    let access = data.get("access_token").and_then(Value::as_str);
    let expires_in = data.get("expires_in").and_then(Value::as_f64);
    let (Some(access), Some(expires_in)) = (access, expires_in) else {
        // The field names only: the body may hold the tokens.
        let absent = [
            ("access_token", access.is_none()),
            ("expires_in", expires_in.is_none()),
        ];
        let missing: Vec<&str> = absent
            .into_iter()
            .filter_map(|(k, absent)| absent.then_some(k))
            .collect();
        return Err(format!(
            "Radius OAuth token response missing fields: {}",
            missing.join(", ")
        ));
    };
    let mut fields = vec![
        ("access", Value::from(access)),
        (
            "refresh",
            data.get("refresh_token").cloned().unwrap_or(Value::Null),
        ),
        (
            "expires",
            num(ctx.now_ms as f64 + expires_in * 1000.0 - MINUTE_MS),
        ),
    ];
    if let Some(scope) = data.get("scope") {
        fields.push(("scope", scope.clone()));
    }
    let mut entry = oauth_entry(&fields);
    if entry.get("refresh").is_some_and(Value::is_null) {
        entry.remove("refresh");
    }
    Ok(entry)
}

/// A refresh against `gateway`.
pub(crate) fn refresh(
    gateway: &str,
    refresh: &str,
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    token(
        gateway,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", CLIENT_ID),
            ("refresh_token", refresh),
        ],
        ctx,
    )
}

/// pi's `isRadiusGatewayModel`: the fields a gateway model must have.
pub fn is_gateway_model(v: &Value) -> bool {
    let Some(m) = v.as_object() else {
        return false;
    };
    m.get("id").is_some_and(Value::is_string)
        && m.get("name").is_some_and(Value::is_string)
        && m.get("reasoning").is_some_and(Value::is_boolean)
        && m.get("input").is_some_and(Value::is_array)
        && m.get("cost").is_some_and(Value::is_object)
        && m.get("contextWindow").is_some_and(Value::is_number)
        && m.get("maxTokens").is_some_and(Value::is_number)
}

/// pi's `sanitizeRadiusGatewayConfig` + `getRadiusModelsFromConfig`: the config's valid models
/// as models of `provider` (`api: "pi-messages"`, the config's `baseUrl`); `None` when the
/// config is not `{baseUrl: string, models: [...]}`.
pub fn models_from_config(provider: &str, config: &Value) -> Option<Vec<Value>> {
    let base_url = config.get("baseUrl")?.as_str()?;
    let models = config.get("models")?.as_array()?;
    Some(
        models
            .iter()
            .filter(|m| is_gateway_model(m))
            .filter_map(Value::as_object)
            .map(|m| {
                let mut m = m.clone();
                m.insert("api".into(), Value::from("pi-messages"));
                m.insert("provider".into(), Value::from(provider));
                m.insert("baseUrl".into(), Value::from(base_url));
                Value::Object(m)
            })
            .collect(),
    )
}

/// pi's `loadRadiusGatewayConfig`: `GET /v1/config` with the token, as models of `provider`.
fn load_config(
    gateway: &str,
    provider: &str,
    token: Option<&str>,
    ctx: &Ctx,
) -> Result<Vec<Value>, String> {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("accept", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    let resp = send(
        "GET",
        &url(gateway, "/v1/config"),
        &headers,
        Body::None,
        ctx,
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        let body = resp.body.trim();
        let body = match body.char_indices().nth(512) {
            Some((i, _)) => format!("{}…", &body[..i]),
            None => body.to_string(),
        };
        return Err(format!(
            "Could not load Radius config from {gateway}: {}: {body}",
            resp.status
        ));
    }
    serde_json::from_str::<Value>(&resp.body)
        .ok()
        .and_then(|config| models_from_config(provider, &config))
        .ok_or_else(|| format!("Invalid Radius config from {gateway}"))
}

/// Saves `entry` as `provider`'s entry of `<agent_dir>/models-store.json` under the file's
/// lock (pi's `FileModelsStore.write`: read fresh, replace the entry, write the whole file).
fn save_models_store(agent_dir: &Path, provider: &str, entry: Value) -> Result<(), String> {
    let real =
        store::ensure_file(&agent_dir.join("models-store.json")).map_err(|e| e.to_string())?;
    let lock =
        FileLock::acquire(&real, LockOptions::ASYNC, &|| false).map_err(|e| e.to_string())?;
    let mut data = store::read(&real)?;
    data.insert(provider.to_string(), entry);
    lock.check().map_err(|e| e.to_string())?;
    store::write(&real, &data).map_err(|e| e.to_string())?;
    lock.release();
    Ok(())
}

/// pi's catalog refresh after `auth login` of a Radius provider: the gateway's `/v1/config`
/// list (fetched with `token`, the new access token or API key, within 15 s) saved as
/// `{"models": [...], "checkedAt": <ms>}`, `provider`'s entry of models-store.json.
pub fn refresh_catalog(
    agent_dir: &Path,
    provider: &str,
    gateway: &str,
    token: Option<&str>,
    env: Env,
    now_ms: u64,
) -> Result<(), String> {
    let ctx = Ctx {
        env,
        deadline: Instant::now() + Duration::from_secs(15),
        now_ms,
    };
    let models = load_config(gateway, provider, token, &ctx)?;
    let mut entry = Map::new();
    entry.insert("models".into(), Value::Array(models));
    entry.insert("checkedAt".into(), Value::from(now_ms));
    save_models_store(agent_dir, provider, Value::Object(entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gateways_from_base_urls() {
        assert_eq!(
            gateway_of_base_url("https://gw.example/v1"),
            "https://gw.example"
        );
        assert_eq!(
            gateway_of_base_url("https://gw.example/v1/"),
            "https://gw.example"
        );
        assert_eq!(
            gateway_of_base_url("gw.example/api//"),
            "https://gw.example/api"
        );
        assert_eq!(
            gateway_of_base_url("HTTP://gw.example:8080"),
            "HTTP://gw.example:8080"
        );
        assert_eq!(
            url("https://gw.example/api", "/v1/oauth"),
            "https://gw.example/v1/oauth"
        );
        assert_eq!(
            url("http://127.0.0.1:9", "/v1/config"),
            "http://127.0.0.1:9/v1/config"
        );
    }

    #[test]
    fn gateway_config_models() {
        let config = json!({"baseUrl": "https://gw.example/v1", "models": [
            {"id": "a", "name": "A", "reasoning": true, "input": ["text"], "cost": {"input": 1},
             "contextWindow": 10, "maxTokens": 5, "lab": "L"},
            {"id": "b", "name": "B"}
        ]});
        assert_eq!(
            models_from_config("gw", &config),
            Some(vec![
                json!({"id": "a", "name": "A", "reasoning": true, "input": ["text"],
                "cost": {"input": 1}, "contextWindow": 10, "maxTokens": 5, "lab": "L",
                "api": "pi-messages", "provider": "gw", "baseUrl": "https://gw.example/v1"})
            ])
        );
        assert_eq!(models_from_config("gw", &json!({"models": []})), None);
    }
}
