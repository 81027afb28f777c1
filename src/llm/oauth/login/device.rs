//! The device-code flows: a code shown to the user, then the token endpoint polled at the
//! server's interval (openai-codex without a browser, github-copilot, kimi-coding, meta, xai,
//! radius without a browser: `radius.rs`).

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::super::client::Body;
use super::super::common::call;
use super::super::copilot;
use super::super::refresh::{
    self, kimi_host, kimi_token, meta_mint, trusted_http_url, xai_credential,
};
use super::browser::codex_exchange;
use super::{positive, str_of, Interaction, REQUEST_BUDGET};

/// OpenAI Codex's device-code login (15 min).
pub(super) fn openai_codex_device(io: &Interaction) -> Result<Map<String, Value>, String> {
    const BASE: &str = "https://auth.openai.com";
    let body = serde_json::json!({"client_id": refresh::CODEX_CLIENT_ID});
    let resp = call(
        "POST",
        &format!("{BASE}/api/accounts/deviceauth/usercode"),
        &[],
        Body::Json(crate::js::json::js_stringify(&body)),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if resp.status == 404 {
        return Err("OpenAI Codex device code login is not enabled for this server. Use browser login or verify the server URL.".into());
    }
    if !resp.ok() {
        return Err(resp.failure("OpenAI Codex device code request"));
    }
    let json = resp.json_object().unwrap_or_default();
    let interval = match json.get("interval") {
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(v) => v.as_f64(),
        None => None,
    };
    let (Some(device_auth_id), Some(user_code), Some(interval)) = (
        str_of(&json, "device_auth_id"),
        str_of(&json, "user_code"),
        interval.filter(|i| i.is_finite() && *i >= 0.0),
    ) else {
        return Err(format!(
            "Invalid OpenAI Codex device code response: {}",
            crate::js::json::js_stringify(&Value::Object(json.clone()))
        ));
    };
    show_device_code(io, user_code, &format!("{BASE}/codex/device"));
    let poll_body = crate::js::json::js_stringify(
        &serde_json::json!({"device_auth_id": device_auth_id, "user_code": user_code}),
    );
    let (code, verifier) = poll_device(Some(interval), Some(15.0 * 60.0), false, || {
        let resp = call(
            "POST",
            &format!("{BASE}/api/accounts/deviceauth/token"),
            &[],
            Body::Json(poll_body.clone()),
            &io.ctx(REQUEST_BUDGET),
        )
        .map_err(|e| e.message().to_string())?;
        if resp.ok() {
            let j = resp.json_object().unwrap_or_default();
            return Ok(
                match (
                    str_of(&j, "authorization_code"),
                    str_of(&j, "code_verifier"),
                ) {
                    (Some(c), Some(v)) => Poll::Complete((c.to_string(), v.to_string())),
                    _ => Poll::Failed(format!(
                        "Invalid OpenAI Codex device auth token response: {}",
                        crate::js::json::js_stringify(&Value::Object(j.clone()))
                    )),
                },
            );
        }
        if resp.status == 403 || resp.status == 404 {
            return Ok(Poll::Pending);
        }
        let code = serde_json::from_str::<Value>(&resp.body)
            .ok()
            .and_then(|j| {
                let e = j.get("error")?;
                e.get("code")
                    .and_then(Value::as_str)
                    .or_else(|| e.as_str())
                    .map(str::to_string)
            });
        Ok(match code.as_deref() {
            Some("deviceauth_authorization_pending") => Poll::Pending,
            Some("slow_down") => Poll::SlowDown(None),
            _ => Poll::Failed(resp.failure("OpenAI Codex device auth")),
        })
    })?;
    codex_exchange(io, &code, &verifier, &format!("{BASE}/deviceauth/callback"))
}

/// One poll's answer.
pub enum Poll<T> {
    Complete(T),
    Pending,
    SlowDown(Option<f64>),
    Failed(String),
}

/// pi's `pollOAuthDeviceCodeFlow`: every `interval` s (default 5, at least 1), `slow_down`
/// takes the server's interval or adds 5 s, until `expires_in`.
pub fn poll_device<T>(
    interval_s: Option<f64>,
    expires_in_s: Option<f64>,
    wait_first: bool,
    mut poll: impl FnMut() -> Result<Poll<T>, String>,
) -> Result<T, String> {
    let deadline = expires_in_s.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let min = Duration::from_secs(1);
    let mut interval = Duration::from_secs_f64(interval_s.unwrap_or(5.0).max(0.0)).max(min);
    let mut slow_downs = 0;
    let sleep = |d: Duration| std::thread::sleep(remaining().map_or(d, |r| d.min(r)));
    if wait_first {
        sleep(interval);
    }
    while remaining().is_none_or(|r| !r.is_zero()) {
        match poll()? {
            Poll::Complete(v) => return Ok(v),
            Poll::Failed(m) => return Err(m),
            Poll::Pending => {}
            Poll::SlowDown(server) => {
                slow_downs += 1;
                interval = match server.filter(|s| s.is_finite() && *s > 0.0) {
                    Some(s) => Duration::from_secs_f64(s).max(min),
                    None => interval + Duration::from_secs(5),
                };
            }
        }
        if remaining().is_some_and(|r| r.is_zero()) {
            break;
        }
        sleep(interval);
    }
    Err(if slow_downs > 0 {
        "Device flow timed out after one or more slow_down responses. This is often caused by clock drift in WSL or VM environments. Please sync or restart the VM clock and try again.".into()
    } else {
        "Device flow timed out".into()
    })
}

pub(super) fn show_device_code(io: &Interaction, user_code: &str, uri: &str) {
    (io.show)(&format!(
        "Open {uri} and enter code: {user_code}\nWaiting for authentication..."
    ));
}

pub(super) const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

pub(super) fn github_copilot(io: &Interaction) -> Result<Map<String, Value>, String> {
    let input =
        io.prompt("GitHub Enterprise URL/domain (blank for github.com) (company.ghe.com)")?;
    let enterprise = copilot::normalize_domain(&input);
    if !input.trim().is_empty() && enterprise.is_none() {
        return Err("Invalid GitHub Enterprise URL/domain".into());
    }
    let domain = enterprise.clone().unwrap_or_else(|| "github.com".into());
    let headers = [
        ("Accept", "application/json"),
        ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ];
    let status_error =
        |r: &super::super::client::Response| format!("{} {}: {}", r.status, r.status_text, r.body);
    let resp = call(
        "POST",
        &format!("https://{domain}/login/device/code"),
        &headers,
        Body::Form(&[("client_id", copilot::CLIENT_ID), ("scope", "read:user")]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(status_error(&resp));
    }
    let data = resp.json_object().ok_or("Invalid device code response")?;
    let (Some(device_code), Some(user_code), Some(uri), Some(expires_in)) = (
        data.get("device_code").and_then(Value::as_str),
        data.get("user_code").and_then(Value::as_str),
        data.get("verification_uri").and_then(Value::as_str),
        data.get("expires_in").and_then(Value::as_f64),
    ) else {
        return Err("Invalid device code response fields".into());
    };
    let uri =
        trusted_http_url(Some(uri)).ok_or("Untrusted verification_uri in device code response")?;
    show_device_code(io, user_code, &uri);
    let github_token = poll_device(
        data.get("interval").and_then(Value::as_f64),
        Some(expires_in),
        true,
        || {
            let resp = call(
                "POST",
                &format!("https://{domain}/login/oauth/access_token"),
                &headers,
                Body::Form(&[
                    ("client_id", copilot::CLIENT_ID),
                    ("device_code", device_code),
                    ("grant_type", DEVICE_GRANT),
                ]),
                &io.ctx(REQUEST_BUDGET),
            )
            .map_err(|e| e.message().to_string())?;
            if !resp.ok() {
                return Err(status_error(&resp));
            }
            let raw = resp.json_object().unwrap_or_default();
            if let Some(t) = raw.get("access_token").and_then(Value::as_str) {
                return Ok(Poll::Complete(t.to_string()));
            }
            Ok(match raw.get("error").and_then(Value::as_str) {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(raw.get("interval").and_then(Value::as_f64)),
                Some(error) => Poll::Failed(format!(
                    "Device flow failed: {error}{}",
                    str_of(&raw, "error_description")
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                )),
                None => Poll::Failed("Invalid device token response".into()),
            })
        },
    )?;
    let ctx = io.ctx(REQUEST_BUDGET);
    let mut cred = copilot::exchange(&github_token, enterprise.as_deref(), &ctx)?;
    let access = cred
        .get("access")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let shipped = (io.builtin_model_ids)("github-copilot");
    let ids = copilot::login_model_ids(&access, enterprise.as_deref(), &ctx, &shipped, io.show)?;
    cred.insert(
        "availableModelIds".into(),
        Value::Array(ids.into_iter().map(Value::from).collect()),
    );
    Ok(cred)
}

pub(super) fn kimi(io: &Interaction) -> Result<Map<String, Value>, String> {
    let host = kimi_host(io.env);
    let headers = [("Accept", "application/json")];
    let resp = call(
        "POST",
        &format!("{host}/api/oauth/device_authorization"),
        &headers,
        Body::Form(&[("client_id", refresh::KIMI_CLIENT_ID)]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(resp.failure("Kimi Code device authorization"));
    }
    let json = resp.json_object().unwrap_or_default();
    let uri = trusted_http_url(str_of(&json, "verification_uri"));
    let complete = trusted_http_url(str_of(&json, "verification_uri_complete"));
    let (Some(device_code), Some(user_code), Some(_), Some(complete)) = (
        json.get("device_code").and_then(Value::as_str),
        json.get("user_code").and_then(Value::as_str),
        uri,
        complete,
    ) else {
        return Err(format!(
            "Invalid Kimi Code device authorization response: {}",
            crate::js::json::js_stringify(&Value::Object(json.clone()))
        ));
    };
    show_device_code(io, user_code, &complete);
    poll_device(
        Some(positive(&json, "interval").unwrap_or(5.0)),
        Some(positive(&json, "expires_in").unwrap_or(15.0 * 60.0)),
        true,
        || {
            let resp = match call(
                "POST",
                &format!("{host}/api/oauth/token"),
                &headers,
                Body::Form(&[
                    ("client_id", refresh::KIMI_CLIENT_ID),
                    ("device_code", device_code),
                    ("grant_type", DEVICE_GRANT),
                ]),
                &io.ctx(REQUEST_BUDGET),
            ) {
                Ok(r) => r,
                Err(e) => return Err(e.message().to_string()),
            };
            if resp.status >= 500 {
                return Ok(Poll::Failed(resp.failure("Kimi Code device token request")));
            }
            let json = resp.json_object();
            let j = json.clone().unwrap_or_default();
            if resp.ok() && j.get("access_token").is_some_and(Value::is_string) {
                return Ok(match kimi_token(&json, "poll", (io.now_ms)()) {
                    Ok(e) => Poll::Complete(e),
                    Err(m) => Poll::Failed(m),
                });
            }
            let error = j.get("error").and_then(Value::as_str);
            Ok(match error {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(positive(&j, "interval")),
                Some("expired_token") => Poll::Failed(
                    "Kimi Code device authorization expired. Please restart login.".into(),
                ),
                Some("access_denied") => Poll::Failed("Kimi Code login was denied.".into()),
                _ => Poll::Failed(format!(
                    "Kimi Code device token request failed (status {}){}",
                    resp.status,
                    error
                        .map(|e| format!(
                            ": {e}{}",
                            str_of(&j, "error_description")
                                .map(|d| format!(": {d}"))
                                .unwrap_or_default()
                        ))
                        .unwrap_or_default()
                )),
            })
        },
    )
}

pub(super) fn meta(io: &Interaction) -> Result<Map<String, Value>, String> {
    const CLIENT_ID: &str = "1031625952748946";
    let headers = [("Accept", "application/json")];
    let resp = call(
        "POST",
        "https://auth.meta.com/oidc/device/authorization/",
        &headers,
        Body::Form(&[("client_id", CLIENT_ID)]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    let json = resp.json_object().unwrap_or_default();
    let detail = |j: &Map<String, Value>| {
        ["error_description", "detail", "message", "error"]
            .iter()
            .find_map(|k| str_of(j, k).map(|v| format!(": {}", v.trim())))
            .unwrap_or_default()
    };
    if !resp.ok() {
        return Err(format!(
            "Meta device authorization failed with status {}{}",
            resp.status,
            detail(&json)
        ));
    }
    let uri = trusted_http_url(str_of(&json, "verification_uri_complete"))
        .or_else(|| trusted_http_url(str_of(&json, "verification_uri")));
    let (Some(device_code), Some(user_code), Some(uri)) = (
        str_of(&json, "device_code"),
        str_of(&json, "user_code"),
        uri,
    ) else {
        return Err(format!(
            "Invalid Meta device authorization response: {}",
            crate::js::json::js_stringify(&Value::Object(json.clone()))
        ));
    };
    show_device_code(io, user_code, &uri);
    let identity = poll_device(
        positive(&json, "interval"),
        positive(&json, "expires_in"),
        true,
        || {
            let resp = call(
                "POST",
                "https://auth.meta.com/oidc/device/token/",
                &headers,
                Body::Form(&[
                    ("grant_type", DEVICE_GRANT),
                    ("device_code", device_code),
                    ("client_id", CLIENT_ID),
                ]),
                &io.ctx(REQUEST_BUDGET),
            )
            .map_err(|e| e.message().to_string())?;
            let j = resp.json_object().unwrap_or_default();
            if resp.ok() {
                if let Some(t) = str_of(&j, "access_token") {
                    return Ok(Poll::Complete(t.to_string()));
                }
            }
            Ok(match j.get("error").and_then(Value::as_str) {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(positive(&j, "interval")),
                Some("access_denied") => Poll::Failed("Meta login was denied.".into()),
                Some("expired_token") => {
                    Poll::Failed("Meta device authorization expired. Please restart login.".into())
                }
                _ => Poll::Failed(format!(
                    "Meta device token request failed with status {}{}",
                    resp.status,
                    detail(&j)
                )),
            })
        },
    )?;
    (io.show)("Enabling Meta Model API access...");
    meta_mint(&identity, &io.ctx(REQUEST_BUDGET))
}

pub(super) fn xai(io: &Interaction) -> Result<Map<String, Value>, String> {
    let (_, body) = refresh::xai_post(
        "https://auth.x.ai/oauth2/device/code",
        &[
            ("client_id", refresh::XAI_CLIENT_ID),
            (
                "scope",
                "openid profile email offline_access grok-cli:access api:access",
            ),
            ("referrer", "pi"),
        ],
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message("device authorization"))?;
    let required = |k: &str| {
        str_of(&body, k)
            .map(str::to_string)
            .ok_or_else(|| format!("Invalid xAI OAuth response field: {k}"))
    };
    let https = |u: &str| {
        u.to_ascii_lowercase()
            .starts_with("https://")
            .then(|| u.to_string())
            .ok_or_else(|| "Untrusted verification URI in xAI OAuth response".to_string())
    };
    let device_code = required("device_code")?;
    let user_code = required("user_code")?;
    let uri = https(&required("verification_uri")?)?;
    let complete = match str_of(&body, "verification_uri_complete") {
        Some(u) => Some(https(u)?),
        None => None,
    };
    let expires_in =
        positive(&body, "expires_in").ok_or("Invalid xAI OAuth response field: expires_in")?;
    show_device_code(io, &user_code, complete.as_deref().unwrap_or(&uri));
    poll_device(
        positive(&body, "interval"),
        Some(expires_in),
        true,
        || match refresh::xai_post(
            refresh::XAI_TOKEN_URL,
            &[
                ("grant_type", DEVICE_GRANT),
                ("client_id", refresh::XAI_CLIENT_ID),
                ("device_code", &device_code),
            ],
            &io.ctx(REQUEST_BUDGET),
        ) {
            Ok((_, b)) => Ok(match xai_credential(&b, None, (io.now_ms)()) {
                Ok(e) => Poll::Complete(e),
                Err(m) => Poll::Failed(m),
            }),
            Err(refresh::XaiError::Status { status, detail }) => {
                let error = detail.trim_start_matches(": ");
                let code = error.split(": ").next().unwrap_or("");
                Ok(match code {
                    "authorization_pending" => Poll::Pending,
                    "slow_down" => Poll::SlowDown(None),
                    "access_denied" => Poll::Failed("xAI login was denied".into()),
                    "expired_token" => Poll::Failed("xAI device code expired".into()),
                    _ => Poll::Failed(
                        refresh::XaiError::Status { status, detail }
                            .message("device token polling"),
                    ),
                })
            }
            Err(e) => Err(e.message("device token polling")),
        },
    )
}
