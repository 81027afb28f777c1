//! Workload identity federation for the `anthropic` provider (providers-catalog.md §2.2): with
//! no key, no `ANTHROPIC_AUTH_TOKEN` and no auth header, but `ANTHROPIC_FEDERATION_RULE_ID`,
//! `ANTHROPIC_ORGANIZATION_ID` and `ANTHROPIC_IDENTITY_TOKEN_FILE` all set, an OIDC identity
//! token read from that file is exchanged for a short-lived Anthropic access token, which the
//! Messages request carries as `Authorization: Bearer` (plus the `oauth-2025-04-20` beta).
//!
//! pi hands this to the Anthropic SDK (`@anthropic-ai/sdk` 0.129, `lib/credentials/`:
//! `oidc-federation.ts`, `identity-token.ts`, `token-cache.ts`, `types.ts`, and `client.ts`'s
//! `authHeaders`/`prepareRequest`/`shouldRetry`); this is the same exchange:
//!
//! * `POST <baseUrl>/v1/oauth/token` (the model's base URL, so one host serves both), JSON body
//!   `{grant_type: jwt-bearer, assertion, federation_rule_id, organization_id,
//!   service_account_id?, workspace_id?}`, headers `anthropic-beta:
//!   oauth-2025-04-20,oidc-federation-2026-04-01`; only https, or http to a loopback host.
//! * The identity token file is read again for every exchange (rotated Kubernetes tokens).
//! * `{access_token, expires_in, token_type?}` back; the token is kept process-wide (pi keeps
//!   one client per federation config) and reused while more than 120 s remain. Between 120 s
//!   and 30 s the SDK refreshes in the background and serves the old token meanwhile; here the
//!   refresh runs in line and the old token is used if it fails. Under 30 s a refresh must
//!   succeed. A 401 from the Messages API drops the token (the SDK's `invalidate`).
//! * Error texts are the SDK's `WorkloadIdentityError` messages.
//!
//! The SDK's exchange ignores the request's abort signal; here the cancel token interrupts it.
//! Concurrent requests that find no valid token each exchange (the SDK coalesces them); an
//! exchange is idempotent, and the later token simply replaces the earlier.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::cancel::CancelToken;
use crate::js::json::js_stringify;
use crate::js::utf16;
use crate::llm::http::{self, HttpError, HttpRequest};
use crate::llm::model::Model;
use crate::llm::stream::Failure;
use crate::llm::types::StreamOptions;

const RULE_ID: &str = "ANTHROPIC_FEDERATION_RULE_ID";
const ORGANIZATION_ID: &str = "ANTHROPIC_ORGANIZATION_ID";
const IDENTITY_TOKEN_FILE: &str = "ANTHROPIC_IDENTITY_TOKEN_FILE";
const SERVICE_ACCOUNT_ID: &str = "ANTHROPIC_SERVICE_ACCOUNT_ID";
const WORKSPACE_ID: &str = "ANTHROPIC_WORKSPACE_ID";

/// The settings the request reads (resolved into `StreamOptions::env` by the registry).
pub const SETTINGS: &[&str] = &[
    RULE_ID,
    ORGANIZATION_ID,
    IDENTITY_TOKEN_FILE,
    SERVICE_ACCOUNT_ID,
    WORKSPACE_ID,
];
/// The settings that must all be set for federation to apply.
pub const REQUIRED: &[&str] = &[RULE_ID, ORGANIZATION_ID, IDENTITY_TOKEN_FILE];

const TOKEN_ENDPOINT: &str = "/v1/oauth/token";
const GRANT_TYPE_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Required on requests that carry an OAuth bearer token.
pub const OAUTH_API_BETA: &str = "oauth-2025-04-20";
const FEDERATION_BETA: &str = "oidc-federation-2026-04-01";
const ADVISORY_REFRESH_SECS: f64 = 120.0;
const MANDATORY_REFRESH_SECS: f64 = 30.0;
/// The token endpoint rejects longer assertions.
const MAX_ASSERTION_BYTES: usize = 16 * 1024;
/// What is read of the identity token file at most (far over the assertion limit, whose own
/// error text then applies).
const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;
const MAX_TOKEN_RESPONSE_BYTES: usize = 1 << 20;
const MAX_ERROR_BODY_CHARS: usize = 2000;
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);

/// What an exchange needs; also the key of the cached token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Federation {
    /// The model's base URL, trailing slashes removed.
    pub base_url: String,
    pub rule_id: String,
    pub organization_id: String,
    pub identity_token_file: String,
    pub service_account_id: Option<String>,
    pub workspace_id: Option<String>,
}

/// The federation of a request to `model`, when it applies: the `anthropic` provider, no key
/// and no auth header, and the three required settings present.
pub fn of(model: &Model, opts: &StreamOptions, has_auth_header: bool) -> Option<Federation> {
    if model.provider != "anthropic"
        || opts.api_key.as_deref().is_some_and(|k| !k.is_empty())
        || has_auth_header
    {
        return None;
    }
    let get = |n: &str| opts.env_value(n).map(str::to_owned);
    let base = if model.base_url.is_empty() {
        super::DEFAULT_BASE_URL
    } else {
        model.base_url.as_str()
    };
    Some(Federation {
        base_url: base.trim_end_matches('/').to_string(),
        rule_id: get(RULE_ID)?,
        organization_id: get(ORGANIZATION_ID)?,
        identity_token_file: get(IDENTITY_TOKEN_FILE)?,
        service_account_id: get(SERVICE_ACCOUNT_ID),
        workspace_id: get(WORKSPACE_ID),
    })
}

/// Adds the bearer token and the OAuth beta (appended to an `anthropic-beta` header already
/// there, as the SDK's `prepareRequest` does).
pub fn authorize(headers: &mut Vec<(String, String)>, token: &str) {
    headers.push(("authorization".into(), format!("Bearer {token}")));
    match headers
        .iter_mut()
        .rfind(|(n, _)| n.eq_ignore_ascii_case("anthropic-beta"))
    {
        Some((_, v)) => {
            if !v.split(',').any(|b| b.trim() == OAUTH_API_BETA) {
                *v = if v.is_empty() {
                    OAUTH_API_BETA.to_string()
                } else {
                    format!("{v},{OAUTH_API_BETA}")
                };
            }
        }
        None => headers.push(("anthropic-beta".into(), OAUTH_API_BETA.into())),
    }
}

struct Cached {
    key: Federation,
    token: String,
    /// Unix seconds.
    expires_at: f64,
}

/// The token of the last federation used (pi keeps one client, keyed by its config).
static CACHE: Mutex<Option<Cached>> = Mutex::new(None);

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The access token for `fed`: the cached one while it is fresh enough, else a new exchange.
/// The cache lock is never held across the exchange.
pub fn access_token(fed: &Federation, cancel: &CancelToken) -> Result<String, Failure> {
    let stale = {
        let cache = CACHE.lock();
        match cache.as_ref().filter(|c| &c.key == fed) {
            Some(c) => {
                let remaining = c.expires_at - now_secs();
                if remaining > ADVISORY_REFRESH_SECS {
                    return Ok(c.token.clone());
                }
                (remaining > MANDATORY_REFRESH_SECS).then(|| c.token.clone())
            }
            None => None,
        }
    };
    match exchange(fed, cancel) {
        Ok((token, expires_in)) => {
            *CACHE.lock() = Some(Cached {
                key: fed.clone(),
                token: token.clone(),
                expires_at: now_secs() + expires_in,
            });
            Ok(token)
        }
        Err(Failure::Aborted) => Err(Failure::Aborted),
        // The advisory window: a failed refresh keeps serving the old token.
        Err(e) => stale.ok_or(e),
    }
}

/// Drops the cached token of `fed` (the Messages API answered 401: the token is bad even if
/// it looks fresh).
pub fn invalidate(fed: &Federation) {
    let mut cache = CACHE.lock();
    if cache.as_ref().is_some_and(|c| &c.key == fed) {
        *cache = None;
    }
}

fn error(message: String) -> Failure {
    Failure::Error(message)
}

/// The SDK's `requireSecureTokenEndpoint`.
fn require_secure(base_url: &str) -> Result<(), Failure> {
    if base_url.starts_with("https://") {
        return Ok(());
    }
    if let Some(rest) = base_url.strip_prefix("http://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host_port = authority.rsplit('@').next().unwrap_or(authority);
        let host = if let Some(v6) = host_port.strip_prefix('[') {
            v6.split(']').next().unwrap_or("")
        } else {
            host_port.split(':').next().unwrap_or("")
        };
        if matches!(
            host.to_ascii_lowercase().as_str(),
            "localhost" | "127.0.0.1" | "::1"
        ) {
            return Ok(());
        }
    }
    Err(error(format!(
        "Refusing to send credential over non-https token endpoint \"{base_url}\""
    )))
}

/// The identity token: the file's trimmed text, read on every exchange.
fn identity_token(path: &str) -> Result<String, Failure> {
    // Bounded, and never blocking on a FIFO: a wrong path cannot hang the request.
    let bytes = crate::util::read_small_file(std::path::Path::new(path), MAX_TOKEN_FILE_BYTES)
        .map_err(|e| {
            let node = if e.kind() == std::io::ErrorKind::IsADirectory {
                crate::js::fs_error::node_error(&e, "read", None)
            } else {
                crate::js::fs_error::node_error(&e, "open", Some(std::path::Path::new(path)))
            };
            error(format!(
                "Failed to read identity token file at {path}: Error: {node}"
            ))
        })?;
    let token = String::from_utf8_lossy(&bytes).trim().to_string();
    if token.is_empty() {
        return Err(error(format!("Identity token file at {path} is empty")));
    }
    Ok(token)
}

/// One exchange: the access token and its lifetime in seconds.
fn exchange(fed: &Federation, cancel: &CancelToken) -> Result<(String, f64), Failure> {
    require_secure(&fed.base_url)?;
    let jwt = identity_token(&fed.identity_token_file)?;
    if utf16::len(&jwt) > MAX_ASSERTION_BYTES {
        return Err(error(format!(
            "Identity token is {} KiB, exceeds the 16 KiB assertion limit",
            utf16::len(&jwt).div_ceil(1024)
        )));
    }
    let mut body = Map::new();
    body.insert("grant_type".into(), GRANT_TYPE_JWT_BEARER.into());
    body.insert("assertion".into(), jwt.into());
    body.insert("federation_rule_id".into(), fed.rule_id.clone().into());
    body.insert("organization_id".into(), fed.organization_id.clone().into());
    if let Some(id) = &fed.service_account_id {
        body.insert("service_account_id".into(), id.clone().into());
    }
    if let Some(id) = &fed.workspace_id {
        body.insert("workspace_id".into(), id.clone().into());
    }
    let url = format!("{}{TOKEN_ENDPOINT}", fed.base_url);
    let request = HttpRequest {
        url: url.clone(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (
                "anthropic-beta".into(),
                format!("{OAUTH_API_BETA},{FEDERATION_BETA}"),
            ),
        ],
        body: js_stringify(&Value::Object(body)).into_bytes(),
        idle_timeout: EXCHANGE_TIMEOUT,
    };
    let unreachable = || {
        error(format!(
            "Failed to reach token endpoint {url}: TypeError: fetch failed"
        ))
    };
    let mut response = match http::post(request, cancel) {
        Ok(r) => r,
        Err(HttpError::Aborted) => return Err(Failure::Aborted),
        Err(_) => return Err(unreachable()),
    };
    let status = response.status();
    let request_id = response.request_id().map(str::to_owned);
    let text = response.read_text(MAX_TOKEN_RESPONSE_BYTES).map(|t| t.text);
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    if !response.is_success() {
        let text = text.unwrap_or_default();
        return Err(error(failure_message(
            status,
            request_id.as_deref(),
            &text,
            fed.workspace_id.is_some(),
        )));
    }
    let text = text.map_err(|_| unreachable())?;
    parse_token_response(status, &text).map_err(error)
}

/// `Token exchange failed with status …` with the 401 hint.
fn failure_message(status: u16, request_id: Option<&str>, body: &str, workspace: bool) -> String {
    let rid = request_id.map_or(String::new(), |r| format!(" (request-id {r})"));
    let mut hint = String::new();
    if status == 401 {
        let middle = if workspace {
            ""
        } else {
            "If your federation rule is scoped to multiple workspaces, set the ANTHROPIC_WORKSPACE_ID environment variable, the 'workspace_id' config key, or the `workspaceId` option. "
        };
        hint = format!(
            " Ensure your federation rule matches your identity token. {middle}View your authentication events in the Workload identity page of Claude Console for more details."
        );
    }
    format!(
        "Token exchange failed with status {status}{rid}: {}{hint}",
        redact_text(body)
    )
}

/// The SDK's `redactSensitive` of a body text: JSON keeps only the RFC 6749 error fields;
/// other text is cut at 2000 characters.
fn redact_text(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::String(s)) => js_stringify(&Value::String(redact_text(&s))),
        Ok(v) => js_stringify(&redact_value(&v)),
        Err(_) if utf16::len(body) <= MAX_ERROR_BODY_CHARS => body.to_string(),
        Err(_) => format!(
            "{}... <{} more chars>",
            utf16::prefix_lossy(body, MAX_ERROR_BODY_CHARS),
            utf16::len(body) - MAX_ERROR_BODY_CHARS
        ),
    }
}

/// `redactSensitive` of a parsed value: an object keeps `error`, `error_description` and
/// `error_uri`; anything else but a string becomes `null`.
fn redact_value(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| matches!(k.as_str(), "error" | "error_description" | "error_uri"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        Value::String(s) => Value::String(redact_text(s)),
        _ => Value::Null,
    }
}

/// The SDK's `parseTokenResponse` and the `expires_in` check of `oidcFederationProvider`.
fn parse_token_response(status: u16, text: &str) -> Result<(String, f64), String> {
    let data: Value = serde_json::from_str(text)
        .map_err(|_| format!("Token endpoint returned non-JSON response (status {status})"))?;
    let redacted = || js_stringify(&redact_value(&data));
    let token = match data.get("access_token") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) if n.as_f64() != Some(0.0) => n.to_string(),
        _ => {
            return Err(format!(
                "Token endpoint response missing access_token: {}",
                redacted()
            ))
        }
    };
    if let Some(t) = data.get("token_type").and_then(Value::as_str) {
        if !t.is_empty() && !t.eq_ignore_ascii_case("bearer") {
            return Err(format!(
                "Token endpoint response: unsupported token_type \"{t}\" (want Bearer)"
            ));
        }
    }
    // `Number(data.expires_in)`.
    let expires_in = match data.get("expires_in") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) if s.trim().is_empty() => Some(0.0),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(Value::Null) => Some(0.0),
        Some(Value::Bool(b)) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
    .filter(|n| n.is_finite())
    .ok_or_else(|| {
        format!(
            "Token endpoint response missing required fields: {}",
            redacted()
        )
    })?;
    Ok((token, expires_in))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(env: &[(&str, &str)]) -> StreamOptions {
        StreamOptions {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..StreamOptions::default()
        }
    }

    fn anthropic(base_url: &str) -> Model {
        Model {
            provider: "anthropic".into(),
            base_url: base_url.into(),
            ..Model::default()
        }
    }

    const FULL: &[(&str, &str)] = &[
        (RULE_ID, "fdrl_1"),
        (ORGANIZATION_ID, "org-1"),
        (IDENTITY_TOKEN_FILE, "/run/token"),
    ];

    #[test]
    fn applies_only_to_anthropic_without_a_key_and_with_all_three_settings() {
        let fed = of(&anthropic("https://api.anthropic.com/"), &opts(FULL), false);
        assert_eq!(
            fed,
            Some(Federation {
                base_url: "https://api.anthropic.com".into(),
                rule_id: "fdrl_1".into(),
                organization_id: "org-1".into(),
                identity_token_file: "/run/token".into(),
                service_account_id: None,
                workspace_id: None,
            })
        );
        assert!(of(&anthropic(""), &opts(&FULL[..2]), false).is_none());
        assert!(of(&anthropic(""), &opts(FULL), true).is_none());
        let mut keyed = opts(FULL);
        keyed.api_key = Some("sk-ant".into());
        assert!(of(&anthropic(""), &keyed, false).is_none());
        let mut other = anthropic("");
        other.provider = "github-copilot".into();
        assert!(of(&other, &opts(FULL), false).is_none());
        assert_eq!(
            of(&anthropic(""), &opts(FULL), false).map(|f| f.base_url),
            Some("https://api.anthropic.com".into())
        );
    }

    #[test]
    fn the_bearer_token_and_the_oauth_beta_are_added() {
        let mut h = vec![("anthropic-beta".to_string(), "a,b".to_string())];
        authorize(&mut h, "tok");
        assert_eq!(
            h,
            vec![
                (
                    "anthropic-beta".to_string(),
                    "a,b,oauth-2025-04-20".to_string()
                ),
                ("authorization".to_string(), "Bearer tok".to_string()),
            ]
        );
        let mut h = Vec::new();
        authorize(&mut h, "tok");
        assert_eq!(h[1], ("anthropic-beta".into(), "oauth-2025-04-20".into()));
    }

    #[test]
    fn only_https_or_loopback_http_endpoints() {
        assert!(require_secure("https://api.anthropic.com").is_ok());
        assert!(require_secure("http://127.0.0.1:8080").is_ok());
        assert!(require_secure("http://localhost").is_ok());
        assert!(require_secure("http://[::1]:9/x").is_ok());
        assert_eq!(
            require_secure("http://proxy.internal:8080"),
            Err(Failure::Error(
                "Refusing to send credential over non-https token endpoint \"http://proxy.internal:8080\""
                    .into()
            ))
        );
    }

    #[test]
    fn error_bodies_are_redacted_as_the_sdk_redacts_them() {
        assert_eq!(
            redact_text(
                r#"{"error":"invalid_grant","error_description":"bad jwt","assertion":"eyJ"}"#
            ),
            r#"{"error":"invalid_grant","error_description":"bad jwt"}"#
        );
        assert_eq!(redact_text("[1]"), "null");
        assert_eq!(redact_text("plain"), "plain");
        let long = "x".repeat(2005);
        assert_eq!(
            redact_text(&long),
            format!("{}... <5 more chars>", "x".repeat(2000))
        );
        assert_eq!(
            failure_message(401, Some("req_1"), "{}", false),
            "Token exchange failed with status 401 (request-id req_1): {} Ensure your federation rule matches your identity token. If your federation rule is scoped to multiple workspaces, set the ANTHROPIC_WORKSPACE_ID environment variable, the 'workspace_id' config key, or the `workspaceId` option. View your authentication events in the Workload identity page of Claude Console for more details."
        );
        assert_eq!(
            failure_message(503, None, "down", true),
            "Token exchange failed with status 503: down"
        );
    }

    #[test]
    fn token_responses() {
        assert_eq!(
            parse_token_response(
                200,
                r#"{"access_token":"at","expires_in":3600,"token_type":"Bearer"}"#
            ),
            Ok(("at".into(), 3600.0))
        );
        assert_eq!(
            parse_token_response(200, "nope"),
            Err("Token endpoint returned non-JSON response (status 200)".into())
        );
        assert_eq!(
            parse_token_response(200, r#"{"expires_in":5,"error":"x"}"#),
            Err(r#"Token endpoint response missing access_token: {"error":"x"}"#.into())
        );
        assert_eq!(
            parse_token_response(
                200,
                r#"{"access_token":"at","token_type":"mac","expires_in":1}"#
            ),
            Err(r#"Token endpoint response: unsupported token_type "mac" (want Bearer)"#.into())
        );
        assert_eq!(
            parse_token_response(200, r#"{"access_token":"at"}"#),
            Err("Token endpoint response missing required fields: {}".into())
        );
        assert_eq!(
            parse_token_response(200, r#"{"access_token":"at","expires_in":"60"}"#),
            Ok(("at".into(), 60.0))
        );
    }

    #[test]
    fn cached_tokens_are_reused_refreshed_and_dropped() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-wif-cache-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join("token");
        let _ = std::fs::write(&file, "jwt");
        // Nothing listens on port 1: every exchange fails at once.
        let fed = Federation {
            base_url: "http://127.0.0.1:1".into(),
            rule_id: "r".into(),
            organization_id: "o".into(),
            identity_token_file: file.to_string_lossy().into_owned(),
            service_account_id: None,
            workspace_id: None,
        };
        let seed = |remaining: f64| {
            *CACHE.lock() = Some(Cached {
                key: fed.clone(),
                token: "cached".into(),
                expires_at: now_secs() + remaining,
            })
        };
        let cancel = CancelToken::new();
        seed(3000.0);
        assert_eq!(access_token(&fed, &cancel), Ok("cached".into()));
        // The advisory window: the refresh fails, the old token is still good.
        seed(60.0);
        assert_eq!(access_token(&fed, &cancel), Ok("cached".into()));
        // Under 30 s the refresh must succeed.
        seed(10.0);
        assert_eq!(
            access_token(&fed, &cancel),
            Err(Failure::Error(
                "Failed to reach token endpoint http://127.0.0.1:1/v1/oauth/token: TypeError: fetch failed".into()
            ))
        );
        // Another config does not see the token; a 401 drops it.
        seed(3000.0);
        let other = Federation {
            workspace_id: Some("w".into()),
            ..fed.clone()
        };
        assert!(access_token(&other, &cancel).is_err());
        seed(3000.0);
        invalidate(&fed);
        assert!(access_token(&fed, &cancel).is_err());
        cancel.cancel();
        assert_eq!(access_token(&fed, &cancel), Err(Failure::Aborted));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn identity_token_file_errors() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-wif-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let empty = dir.join("empty");
        let _ = std::fs::write(&empty, " \n");
        let empty = empty.to_string_lossy().to_string();
        assert_eq!(
            identity_token(&empty),
            Err(Failure::Error(format!(
                "Identity token file at {empty} is empty"
            )))
        );
        assert_eq!(
            identity_token("/nonexistent/token"),
            Err(Failure::Error(
                "Failed to read identity token file at /nonexistent/token: Error: ENOENT: no such file or directory, open '/nonexistent/token'".into()
            ))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
