//! The refresh request of each OAuth provider (providers-catalog.md §5.4, pi-ai
//! `dist/auth/oauth/*.js`): endpoint, body, the new entry's fields with pi's `expires`
//! margins, and pi's error texts (the cause in `OAuth refresh failed for <provider>: <cause>`).

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::b64;
use super::client::{self, Body, Env, NetError, Response};
use super::common::{num, oauth_entry};
use super::copilot;
use super::radius;

pub use super::common::Ctx;

/// Providers pi-rpc can refresh (pi's built-in OAuth providers).
pub const OAUTH_PROVIDERS: &[&str] = &[
    "anthropic",
    "github-copilot",
    "kimi-coding",
    "meta",
    "openai",
    "openai-codex",
    "openrouter",
    "radius",
    "xai",
];

/// Whether `provider` has a refresh (and login) flow.
pub fn is_oauth_provider(provider: &str) -> bool {
    OAUTH_PROVIDERS.contains(&provider)
}

const MINUTE_MS: f64 = 60_000.0;

pub(crate) const ANTHROPIC_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
pub(crate) const ANTHROPIC_TOKEN_URL: &str = "https://platform.claude.com/v1/oauth/token";
pub(crate) const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
pub(crate) const CODEX_TOKEN_URL: &str = "https://auth.openai.com/oauth/token";
pub(crate) const CHATGPT_TOKEN_URL: &str = "https://auth.openai.com/api/accounts/oauth/token";
pub(crate) const CHATGPT_RESOURCE: &str = "https://api.openai.com/v1";
pub(crate) const CHATGPT_DIRECT_SCOPE: &str = "chatgpt.tokens.use.direct";
pub(crate) const KIMI_CLIENT_ID: &str = "17e5f671-d194-4dfb-9706-5516cb48c098";
pub(crate) const KIMI_DEFAULT_HOST: &str = "https://auth.kimi.com";
pub(crate) const META_MINT_URL: &str = "https://api.meta.ai/muse-code/key";
pub(crate) const XAI_CLIENT_ID: &str = "b1a00492-073a-47ea-816f-4c329264a828";
pub(crate) const XAI_TOKEN_URL: &str = "https://auth.x.ai/oauth2/token";

/// Refreshes `entry` (a stored `oauth` entry) and returns the new entry's fields (to be merged
/// over the stored ones). `Err` is the cause text.
pub fn refresh(
    provider: &str,
    entry: &Map<String, Value>,
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    let refresh = entry.get("refresh").and_then(Value::as_str).unwrap_or("");
    match provider {
        "anthropic" => anthropic(refresh, ctx),
        "openai-codex" => openai_codex(refresh, ctx),
        "openai" => openai_chatgpt(entry, refresh, ctx),
        "github-copilot" => github_copilot(entry, refresh, ctx),
        "kimi-coding" => kimi(refresh, ctx),
        "meta" => meta_mint(refresh, ctx),
        "openrouter" => Ok(entry.clone()),
        "radius" => radius::refresh(radius::DEFAULT_GATEWAY, refresh, ctx),
        "xai" => xai(refresh, ctx),
        other => Err(format!("No OAuth refresh for provider \"{other}\"")),
    }
}

fn js(v: &Value) -> String {
    crate::js::json::js_stringify(v)
}

fn js_obj(m: &Option<Map<String, Value>>) -> String {
    match m {
        Some(m) => js(&Value::Object(m.clone())),
        None => "null".into(),
    }
}

fn str_field<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn positive(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0)
}

use super::common::call as send;

// ---------------------------------------------------------------------------------------------

pub(crate) fn anthropic(refresh: &str, ctx: &Ctx) -> Result<Map<String, Value>, String> {
    let url = ANTHROPIC_TOKEN_URL;
    let body = serde_json::json!({
        "grant_type": "refresh_token",
        "client_id": ANTHROPIC_CLIENT_ID,
        "refresh_token": refresh,
    });
    let failed = |details: String| {
        format!("Anthropic token refresh request failed. url={url}; details={details}")
    };
    let resp = send(
        "POST",
        url,
        &[("Accept", "application/json")],
        Body::Json(js(&body)),
        ctx,
    )
    .map_err(|e| failed(e.detail()))?;
    if !resp.ok() {
        return Err(failed(format!(
            "Error: HTTP request failed. status={}; url={url}; body={}",
            resp.status, resp.body
        )));
    }
    let data: Value = serde_json::from_str(&resp.body).map_err(|e| {
        format!(
            "Anthropic token refresh returned invalid JSON. url={url}; body={}; details=SyntaxError: {e}",
            resp.body
        )
    })?;
    let (Some(access), Some(new_refresh), Some(expires_in)) = (
        data.get("access_token").and_then(Value::as_str),
        data.get("refresh_token").and_then(Value::as_str),
        data.get("expires_in").and_then(Value::as_f64),
    ) else {
        return Err(format!(
            "Anthropic token refresh response missing fields: {}",
            js(&data)
        ));
    };
    Ok(oauth_entry(&[
        ("refresh", Value::from(new_refresh)),
        ("access", Value::from(access)),
        (
            "expires",
            num(ctx.now_ms as f64 + expires_in * 1000.0 - 5.0 * MINUTE_MS),
        ),
    ]))
}

/// The ChatGPT account id carried by a Codex access token (JWT claim
/// `https://api.openai.com/auth`.`chatgpt_account_id`).
pub(crate) fn codex_account_id(access: &str) -> Option<String> {
    let mut parts = access.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let claims: Value = serde_json::from_slice(&b64::decode(payload)).ok()?;
    claims
        .get("https://api.openai.com/auth")?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// pi's `readTokenResponse` + `credentialsFromToken` for Codex (`operation`: "refresh" or
/// "exchange").
pub(crate) fn codex_credential(
    resp: &Response,
    operation: &str,
    now_ms: u64,
) -> Result<Map<String, Value>, String> {
    if !resp.ok() {
        let text = if resp.body.is_empty() {
            &resp.status_text
        } else {
            &resp.body
        };
        return Err(format!(
            "OpenAI Codex token {operation} failed ({}): {text}",
            resp.status
        ));
    }
    let json: Value = serde_json::from_str(&resp.body).map_err(|e| e.to_string())?;
    let access = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let refresh = json
        .get("refresh_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let expires_in = json.get("expires_in").and_then(Value::as_f64);
    let (Some(access), Some(refresh), Some(expires_in)) = (access, refresh, expires_in) else {
        return Err(format!(
            "OpenAI Codex token {operation} response missing fields: {}",
            js(&json)
        ));
    };
    let account = codex_account_id(access).ok_or("Failed to extract accountId from token")?;
    Ok(oauth_entry(&[
        ("access", Value::from(access)),
        ("refresh", Value::from(refresh)),
        ("expires", num(now_ms as f64 + expires_in * 1000.0)),
        ("accountId", Value::from(account)),
    ]))
}

fn openai_codex(refresh: &str, ctx: &Ctx) -> Result<Map<String, Value>, String> {
    let resp = send(
        "POST",
        CODEX_TOKEN_URL,
        &[],
        Body::Form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", CODEX_CLIENT_ID),
        ]),
        ctx,
    )
    .map_err(|e| format!("OpenAI Codex token refresh error: {}", e.message()))?;
    codex_credential(&resp, "refresh", ctx.now_ms)
}

/// pi's `requestToken` + `credentialFromTokenResponse` for Sign in with ChatGPT; a login
/// (`require_id_token`) also insists on an `id_token`.
pub(crate) fn chatgpt_token(
    fields: &[(&str, &str)],
    client_id: &str,
    require_id_token: bool,
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    let resp = send(
        "POST",
        CHATGPT_TOKEN_URL,
        &[("accept", "application/json")],
        Body::Form(fields),
        ctx,
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        let text = if resp.body.is_empty() {
            &resp.status_text
        } else {
            &resp.body
        };
        return Err(format!(
            "OpenAI OAuth token request failed ({}): {text}",
            resp.status
        ));
    }
    let token = resp
        .json_object()
        .ok_or("OpenAI OAuth token response must be an object")?;
    if require_id_token && str_field(&token, "id_token").is_none_or(|t| t.trim().is_empty()) {
        return Err("OpenAI OAuth token response did not contain an ID token".into());
    }
    let string = |field: &str| {
        str_field(&token, field)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("OpenAI OAuth token response has invalid {field}"))
    };
    let access = string("access_token")?;
    let refresh = string("refresh_token")?;
    let scope = string("scope")?;
    let expires_in = positive(&token, "expires_in")
        .ok_or("OpenAI OAuth token response has invalid expires_in")?;
    let scopes: Vec<Value> = scope.split_whitespace().map(Value::from).collect();
    if !scopes.iter().any(|s| s == CHATGPT_DIRECT_SCOPE) {
        return Err(format!(
            "OpenAI OAuth grant did not include {CHATGPT_DIRECT_SCOPE}"
        ));
    }
    let entry = oauth_entry(&[
        ("access", Value::from(access)),
        ("refresh", Value::from(refresh)),
        (
            "expires",
            num(ctx.now_ms as f64 + expires_in * 1000.0 - 3.0 * MINUTE_MS),
        ),
        ("clientId", Value::from(client_id)),
        ("scopes", Value::Array(scopes)),
    ]);
    Ok(entry)
}

fn openai_chatgpt(
    entry: &Map<String, Value>,
    refresh: &str,
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    let client_id = str_field(entry, "clientId")
        .filter(|s| !s.trim().is_empty())
        .ok_or(
            "Stored OpenAI OAuth credential does not contain an issued client ID; reconnect ChatGPT",
        )?;
    chatgpt_token(
        &[
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", refresh),
            ("resource", CHATGPT_RESOURCE),
        ],
        client_id,
        false,
        ctx,
    )
}

fn github_copilot(
    entry: &Map<String, Value>,
    github_token: &str,
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    let domain = str_field(entry, "enterpriseUrl").and_then(copilot::normalize_domain);
    let mut cred = copilot::exchange(github_token, domain.as_deref(), ctx)?;
    let access = str_field(&cred, "access").unwrap_or_default().to_string();
    let ids = copilot::available_model_ids(&access, domain.as_deref(), ctx)?;
    cred.insert(
        "availableModelIds".into(),
        Value::Array(ids.into_iter().map(Value::from).collect()),
    );
    Ok(cred)
}

pub(crate) fn kimi_host(env: Env) -> String {
    let host = env("KIMI_CODE_OAUTH_HOST")
        .filter(|v| !v.is_empty())
        .or_else(|| env("KIMI_OAUTH_HOST").filter(|v| !v.is_empty()))
        .unwrap_or_else(|| KIMI_DEFAULT_HOST.to_string());
    host.trim_end_matches('/').to_string()
}

/// pi's Kimi `parseTokenResponse`.
pub(crate) fn kimi_token(
    json: &Option<Map<String, Value>>,
    operation: &str,
    now_ms: u64,
) -> Result<Map<String, Value>, String> {
    let get = |k: &str| json.as_ref().and_then(|j| j.get(k));
    let access = get("access_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let refresh = get("refresh_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let expires_in = get("expires_in")
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0);
    let (Some(access), Some(refresh), Some(expires_in)) = (access, refresh, expires_in) else {
        return Err(format!(
            "Kimi Code token {operation} response missing fields: {}",
            js_obj(json)
        ));
    };
    Ok(oauth_entry(&[
        ("access", Value::from(access)),
        ("refresh", Value::from(refresh)),
        ("expires", num(now_ms as f64 + expires_in * 1000.0)),
    ]))
}

fn kimi(refresh: &str, ctx: &Ctx) -> Result<Map<String, Value>, String> {
    const MAX_RETRIES: u32 = 3;
    let url = format!("{}/api/oauth/token", kimi_host(ctx.env));
    let mut last_error: Option<String> = None;
    for attempt in 0..=MAX_RETRIES {
        if attempt > 0
            && !client::sleep_within(Duration::from_millis(1000 << (attempt - 1)), ctx.deadline)
        {
            return Err(NetError::Timeout.message().to_string());
        }
        // Each attempt is bounded by 30 s as well as by the refresh budget.
        let sub = Ctx {
            env: ctx.env,
            deadline: ctx.deadline.min(Instant::now() + Duration::from_secs(30)),
            now_ms: ctx.now_ms,
        };
        let resp = match send(
            "POST",
            &url,
            &[("Accept", "application/json")],
            Body::Form(&[
                ("client_id", KIMI_CLIENT_ID),
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
            ]),
            &sub,
        ) {
            Ok(r) => r,
            Err(e) => {
                last_error = Some(e.message().to_string());
                continue;
            }
        };
        let json = resp.json_object();
        if resp.ok() {
            return kimi_token(&json, "refresh", crate::util::now_ms().max(ctx.now_ms));
        }
        let error = json.as_ref().and_then(|j| str_field(j, "error"));
        if resp.status == 401 || resp.status == 403 || error == Some("invalid_grant") {
            let description = json
                .as_ref()
                .and_then(|j| str_field(j, "error_description"))
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            return Err(format!(
                "Kimi Code token refresh unauthorized (status {}){description}",
                resp.status
            ));
        }
        if (resp.status == 429 || resp.status >= 500) && attempt < MAX_RETRIES {
            last_error = Some(format!(
                "Kimi Code token refresh failed with status {}",
                resp.status
            ));
            continue;
        }
        return Err(format!(
            "Kimi Code token refresh failed with status {}: {}",
            resp.status,
            js_obj(&json)
        ));
    }
    Err(last_error.unwrap_or_else(|| "Kimi Code token refresh failed".into()))
}

fn meta_detail(json: &Option<Map<String, Value>>) -> String {
    for key in ["error_description", "detail", "message", "error"] {
        if let Some(v) = json
            .as_ref()
            .and_then(|j| str_field(j, key))
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            return format!(": {v}");
        }
    }
    String::new()
}

/// Only `http(s)` URLs are shown or opened (pi's `trustedHttpUrl`).
pub(crate) fn trusted_http_url(v: Option<&str>) -> Option<String> {
    let v = v?.trim();
    let lower = v.to_ascii_lowercase();
    ((lower.starts_with("https://") || lower.starts_with("http://")) && v.len() > 8)
        .then(|| v.to_string())
}

/// Mints a 24 h Meta Model API key with the identity token (login and refresh).
pub(crate) fn meta_mint(identity: &str, ctx: &Ctx) -> Result<Map<String, Value>, String> {
    let sub = Ctx {
        env: ctx.env,
        deadline: ctx.deadline.min(Instant::now() + Duration::from_secs(30)),
        now_ms: ctx.now_ms,
    };
    let bearer = format!("Bearer {identity}");
    let resp = send(
        "POST",
        META_MINT_URL,
        &[
            ("Accept", "application/json"),
            ("Authorization", &bearer),
            ("x-api-version", "1.0.0"),
        ],
        Body::Json("{}".into()),
        &sub,
    )
    .map_err(|e| e.message().to_string())?;
    let json = resp.json_object();
    if resp.status == 401 || resp.status == 403 {
        return Err(format!(
            "Meta session expired (status {}). Run `/login meta` to sign in again.{}",
            resp.status,
            meta_detail(&json)
        ));
    }
    if !resp.ok() {
        return Err(format!(
            "Meta API key mint failed with status {}{}",
            resp.status,
            meta_detail(&json)
        ));
    }
    let Some(key) = json
        .as_ref()
        .and_then(|j| str_field(j, "api_key"))
        .filter(|k| !k.is_empty())
    else {
        let action = trusted_http_url(json.as_ref().and_then(|j| str_field(j, "action_url")));
        return Err(format!(
            "Meta did not issue an API key.{}",
            action
                .map(|u| format!(" Complete setup at {u}"))
                .unwrap_or_default()
        ));
    };
    Ok(oauth_entry(&[
        ("refresh", Value::from(identity)),
        ("access", Value::from(key)),
        ("expires", num(ctx.now_ms as f64 + 24.0 * 60.0 * MINUTE_MS)),
    ]))
}

/// Why an xAI form POST failed.
#[derive(Debug)]
pub(crate) enum XaiError {
    /// A message that stands on its own (network, invalid JSON).
    Plain(String),
    /// A non-2xx status with `: error: description` (or nothing).
    Status { status: u16, detail: String },
}

impl XaiError {
    /// `xAI OAuth <action> failed (HTTP n): …` for status failures.
    pub(crate) fn message(self, action: &str) -> String {
        match self {
            XaiError::Plain(m) => m,
            XaiError::Status { status, detail } => {
                format!("xAI OAuth {action} failed (HTTP {status}){detail}")
            }
        }
    }
}

/// pi's xAI `postForm`: the response body as an object (non-objects become `{}`).
pub(crate) fn xai_post(
    url: &str,
    fields: &[(&str, &str)],
    ctx: &Ctx,
) -> Result<(u16, Map<String, Value>), XaiError> {
    let resp = send(
        "POST",
        url,
        &[("Accept", "application/json")],
        Body::Form(fields),
        ctx,
    )
    .map_err(|e| XaiError::Plain(e.message().to_string()))?;
    let body = match serde_json::from_str::<Value>(&resp.body) {
        Ok(Value::Object(m)) => m,
        Ok(_) => Map::new(),
        Err(_) => {
            return Err(XaiError::Plain(format!(
                "xAI OAuth returned invalid JSON (HTTP {})",
                resp.status
            )))
        }
    };
    if !resp.ok() {
        return Err(XaiError::Status {
            status: resp.status,
            detail: xai_detail(&body),
        });
    }
    Ok((resp.status, body))
}

/// `: error: description` of an xAI error body (empty when it has neither).
pub(crate) fn xai_detail(body: &Map<String, Value>) -> String {
    let detail: Vec<&str> = ["error", "error_description"]
        .iter()
        .filter_map(|k| str_field(body, k).filter(|s| !s.is_empty()))
        .collect();
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {}", detail.join(": "))
    }
}

/// pi's xAI `credentialsFromTokenResponse`.
pub(crate) fn xai_credential(
    body: &Map<String, Value>,
    previous_refresh: Option<&str>,
    now_ms: u64,
) -> Result<Map<String, Value>, String> {
    let required = |k: &str| {
        str_field(body, k)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("Invalid xAI OAuth response field: {k}"))
    };
    let access = required("access_token")?;
    let refresh = match (body.get("refresh_token"), previous_refresh) {
        (None, Some(prev)) if !prev.is_empty() => prev,
        _ => required("refresh_token")?,
    };
    let expires_in = match body.get("expires_in") {
        None => 3600.0,
        Some(_) => {
            positive(body, "expires_in").ok_or("Invalid xAI OAuth response field: expires_in")?
        }
    };
    Ok(oauth_entry(&[
        ("access", Value::from(access)),
        ("refresh", Value::from(refresh)),
        (
            "expires",
            num(now_ms as f64 + expires_in * 1000.0 - 5.0 * MINUTE_MS),
        ),
    ]))
}

fn xai(refresh: &str, ctx: &Ctx) -> Result<Map<String, Value>, String> {
    let (_, body) = xai_post(
        XAI_TOKEN_URL,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", XAI_CLIENT_ID),
            ("refresh_token", refresh),
        ],
        ctx,
    )
    .map_err(|e| e.message("token refresh"))?;
    xai_credential(&body, Some(refresh), ctx.now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resp(status: u16, body: &str) -> Response {
        Response {
            status,
            status_text: "Bad Request".into(),
            body: body.into(),
            retry_after: None,
        }
    }

    fn jwt(claims: &Value) -> String {
        format!(
            "h.{}.s",
            b64::encode_url(crate::js::json::js_stringify(claims).as_bytes())
        )
    }

    #[test]
    fn codex_tokens_need_an_account_id() {
        let access = jwt(&json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acc-1"}}));
        let body =
            json!({"access_token": access, "refresh_token": "r2", "expires_in": 3600}).to_string();
        let entry = codex_credential(&resp(200, &body), "refresh", 1_000).unwrap();
        assert_eq!(
            Value::Object(entry),
            json!({"type": "oauth", "access": access, "refresh": "r2", "expires": 3_601_000, "accountId": "acc-1"})
        );
        let no_account =
            json!({"access_token": jwt(&json!({})), "refresh_token": "r", "expires_in": 1})
                .to_string();
        assert_eq!(
            codex_credential(&resp(200, &no_account), "refresh", 0).unwrap_err(),
            "Failed to extract accountId from token"
        );
        assert_eq!(
            codex_credential(&resp(200, "{\"access_token\":\"a\"}"), "refresh", 0).unwrap_err(),
            "OpenAI Codex token refresh response missing fields: {\"access_token\":\"a\"}"
        );
        assert_eq!(
            codex_credential(&resp(400, ""), "refresh", 0).unwrap_err(),
            "OpenAI Codex token refresh failed (400): Bad Request"
        );
    }

    #[test]
    fn xai_keeps_the_old_refresh_token_and_defaults_the_lifetime() {
        let body = json!({"access_token": "a2"});
        let entry = xai_credential(body.as_object().unwrap(), Some("r1"), 10_000_000).unwrap();
        assert_eq!(
            Value::Object(entry),
            json!({"type": "oauth", "access": "a2", "refresh": "r1", "expires": 10_000_000 + 3_600_000 - 300_000})
        );
        let bad = json!({"access_token": "a2", "expires_in": -1});
        assert_eq!(
            xai_credential(bad.as_object().unwrap(), Some("r1"), 0).unwrap_err(),
            "Invalid xAI OAuth response field: expires_in"
        );
        let e = XaiError::Status {
            status: 400,
            detail: xai_detail(
                json!({"error": "invalid_grant", "error_description": "gone"})
                    .as_object()
                    .unwrap(),
            ),
        };
        assert_eq!(
            e.message("token refresh"),
            "xAI OAuth token refresh failed (HTTP 400): invalid_grant: gone"
        );
    }

    #[test]
    fn kimi_token_fields() {
        let ok = json!({"access_token": "a", "refresh_token": "r", "expires_in": 900});
        assert_eq!(
            kimi_token(&ok.as_object().cloned(), "refresh", 5).unwrap()["expires"],
            json!(900_005)
        );
        assert_eq!(
            kimi_token(&None, "refresh", 5).unwrap_err(),
            "Kimi Code token refresh response missing fields: null"
        );
    }

    #[test]
    fn numbers_stay_integers() {
        assert_eq!(num(1.0e12).to_string(), "1000000000000");
        assert_eq!(num(0.5).to_string(), "0.5");
    }

    #[test]
    fn trusted_urls() {
        assert_eq!(
            trusted_http_url(Some("https://x.example/a")).as_deref(),
            Some("https://x.example/a")
        );
        assert_eq!(trusted_http_url(Some("javascript:alert(1)")), None);
        assert_eq!(trusted_http_url(None), None);
    }
}
