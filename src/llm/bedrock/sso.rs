//! IAM Identity Center (SSO) profiles, as `@aws-sdk/credential-provider-sso` (`fromSSO`,
//! `resolveSSOCredentials`) and `@aws-sdk/token-providers` (`fromSso`) resolve them:
//!
//! * a profile with `sso_session` takes `sso_start_url` and `sso_region` from its
//!   `[sso-session name]` section; a legacy profile carries `sso_start_url` and `sso_region`
//!   itself; both need `sso_account_id` and `sso_role_name`;
//! * the token `aws sso login` cached in `~/.aws/sso/cache/<sha1 hex of the session name, or
//!   of the start URL for a legacy profile>.json`;
//! * for a session, a token that expires within 5 minutes is renewed with SSO-OIDC
//!   `CreateToken` and the cached refresh token (at most once per 30 s per session), and the
//!   file is written back; when that fails, the old token is used while it is still valid;
//! * `GET /federation/credentials?role_name=…&account_id=…` on
//!   `portal.sso.<region>.amazonaws.com` with the token in `x-amz-sso_bearer_token`.
//!
//! Endpoints may be overridden as the SDK allows: `AWS_ENDPOINT_URL_SSO`,
//! `AWS_ENDPOINT_URL_SSO_OIDC`, else `AWS_ENDPOINT_URL`. Every error ends the credential chain
//! (the SDK's `tryNextLink: false`), with the SDK's texts.

use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::cache::{parse_expiration, Resolved};
use super::credentials::Env;
use super::profiles::{Section, SharedFiles};
use super::sigv4::{hex, uri_escape, AwsCredentials};
use super::sources::SourceError;
use super::sts::service_endpoint;
use crate::cancel::CancelToken;
use crate::llm::http::{self, HttpError, HttpRequest, Method};

/// The SDK's texts that send the user to `aws sso login`.
const REFRESH_MESSAGE: &str =
    "To refresh this SSO session run 'aws sso login' with the corresponding profile.";
const LEGACY_REFRESH_MESSAGE: &str =
    "To refresh this SSO session run aws sso login with the corresponding profile.";
/// A token this close to its expiry is renewed (the SDK's `EXPIRE_WINDOW_MS`).
const EXPIRE_WINDOW_MS: u64 = 5 * 60 * 1000;
/// At most one renewal attempt per session in this time.
const REFRESH_INTERVAL_MS: u64 = 30 * 1000;

/// The last renewal attempt per session (the SDK's `lastRefreshAttemptTimes`).
static LAST_REFRESH: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

/// Whether a profile is an SSO profile (the SDK's `isSsoProfile`).
pub fn is_sso_profile(p: &Section) -> bool {
    [
        "sso_start_url",
        "sso_account_id",
        "sso_session",
        "sso_region",
        "sso_role_name",
    ]
    .iter()
    .any(|k| p.contains_key(*k))
}

/// Where the SSO token of `id` (a session name or a start URL) is cached.
pub fn token_path(home: Option<&str>, id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, id.as_bytes());
    let home = home.unwrap_or("");
    format!("{home}/.aws/sso/cache/{}.json", hex(digest.as_ref()))
}

/// The credentials of the SSO profile `name`.
pub fn from_sso(
    name: &str,
    profile: &Section,
    files: &SharedFiles,
    env: Env<'_>,
    home: Option<&str>,
    cancel: &CancelToken,
) -> Result<Resolved, SourceError> {
    let mut profile = profile.clone();
    let session = profile.get("sso_session").cloned();
    if let Some(s) = &session {
        let Some(section) = files.sso_sessions.get(s) else {
            return Err(SourceError::Fatal(format!(
                "Sso session '{s}' could not be found in shared credentials file."
            )));
        };
        for key in ["sso_region", "sso_start_url"] {
            match section.get(key) {
                Some(v) => profile.insert(key.to_string(), v.clone()),
                None => profile.remove(key),
            };
        }
    }
    let get = |k: &str| profile.get(k).filter(|v| !v.is_empty()).cloned();
    let (Some(start_url), Some(account), Some(region), Some(role)) = (
        get("sso_start_url"),
        get("sso_account_id"),
        get("sso_region"),
        get("sso_role_name"),
    ) else {
        let keys: Vec<&str> = profile.keys().map(String::as_str).collect();
        return Err(SourceError::Fatal(format!(
            "Profile is configured with invalid SSO credentials. Required parameters \"sso_account_id\", \"sso_region\", \"sso_role_name\", \"sso_start_url\". Got {}\nReference: https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-sso.html",
            keys.join(", ")
        )));
    };
    let now = crate::util::now_ms();
    let (token, expires_ms) = match &session {
        Some(s) => session_token(name, s, &region, env, home, now, cancel)?,
        None => {
            let invalid = || {
                SourceError::Fatal(format!(
                    "The SSO session associated with this profile is invalid. {LEGACY_REFRESH_MESSAGE}"
                ))
            };
            let v = read_token(home, &start_url).ok_or_else(invalid)?;
            let token = v
                .get("accessToken")
                .and_then(Value::as_str)
                .ok_or_else(invalid)?
                .to_string();
            let expires = v
                .get("expiresAt")
                .and_then(Value::as_str)
                .and_then(parse_expiration);
            (token, expires)
        }
    };
    if expires_ms.is_some_and(|e| e <= now) {
        return Err(SourceError::Fatal(format!(
            "The SSO session associated with this profile has expired. {LEGACY_REFRESH_MESSAGE}"
        )));
    }
    role_credentials(&token, &account, &role, &region, env, cancel)
}

fn read_token(home: Option<&str>, id: &str) -> Option<Map<String, Value>> {
    let text = std::fs::read_to_string(token_path(home, id)).ok()?;
    match serde_json::from_str(&text).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The access token of an `sso-session` (the SDK's `fromSso`): the cached one, renewed when it
/// is about to expire.
fn session_token(
    profile: &str,
    session: &str,
    region: &str,
    env: Env<'_>,
    home: Option<&str>,
    now: u64,
    cancel: &CancelToken,
) -> Result<(String, Option<u64>), SourceError> {
    let fatal = |text: String| SourceError::Fatal(text);
    let cached = read_token(home, session).ok_or_else(|| {
        fatal(format!(
            "The SSO session token associated with profile={profile} was not found or is invalid. {REFRESH_MESSAGE}"
        ))
    })?;
    let field = |k: &str| cached.get(k).and_then(Value::as_str).map(str::to_owned);
    let missing = |k: &str, refresh: bool| {
        let cannot = if refresh { ". Cannot refresh" } else { "" };
        fatal(format!(
            "Value not present for '{k}' in SSO Token{cannot}. {REFRESH_MESSAGE}"
        ))
    };
    let access = field("accessToken").ok_or_else(|| missing("accessToken", false))?;
    let expires_at = field("expiresAt").ok_or_else(|| missing("expiresAt", false))?;
    let expires = parse_expiration(&expires_at);
    if expires.is_some_and(|e| e.saturating_sub(now) > EXPIRE_WINDOW_MS) || expires.is_none() {
        return Ok((access, expires));
    }
    let expired = || fatal(format!("Token is expired. {REFRESH_MESSAGE}"));
    let existing = |_: SourceError| {
        if expires.is_some_and(|e| e < now) {
            Err(expired())
        } else {
            Ok((access.clone(), expires))
        }
    };
    let recent = LAST_REFRESH
        .lock()
        .iter()
        .any(|(s, t)| s == session && now.saturating_sub(*t) < REFRESH_INTERVAL_MS);
    if recent {
        return existing(SourceError::Failed(String::new()));
    }
    let (Some(client_id), Some(client_secret), Some(refresh_token)) = (
        field("clientId"),
        field("clientSecret"),
        field("refreshToken"),
    ) else {
        let absent = ["clientId", "clientSecret", "refreshToken"]
            .into_iter()
            .find(|k| field(k).is_none())
            .unwrap_or("clientId");
        return Err(missing(absent, true));
    };
    {
        let mut last = LAST_REFRESH.lock();
        last.retain(|(s, _)| s != session);
        last.push((session.to_string(), now));
    }
    let body = json!({
        "clientId": client_id,
        "clientSecret": client_secret,
        "grantType": "refresh_token",
        "refreshToken": refresh_token,
    });
    let url = format!(
        "{}/token",
        service_endpoint(env, "AWS_ENDPOINT_URL_SSO_OIDC", "oidc", region)
    );
    let answer = match json_request(Method::Post, &url, vec![], Some(body), cancel) {
        Ok(v) => v,
        Err(SourceError::Aborted) => return Err(SourceError::Aborted),
        Err(e) => return existing(e),
    };
    let new_access = answer.get("accessToken").and_then(Value::as_str);
    let expires_in = answer.get("expiresIn").and_then(Value::as_f64);
    let (Some(new_access), Some(expires_in)) = (new_access, expires_in) else {
        return existing(SourceError::Failed(String::new()));
    };
    let new_expiry = now.saturating_add((expires_in.max(0.0) * 1000.0) as u64);
    let mut written = cached.clone();
    written.insert("accessToken".into(), Value::from(new_access));
    written.insert(
        "expiresAt".into(),
        Value::from(crate::util::iso_from_ms(new_expiry)),
    );
    match answer.get("refreshToken") {
        Some(r) if !r.is_null() => written.insert("refreshToken".into(), r.clone()),
        _ => written.remove("refreshToken"),
    };
    if let Ok(text) = serde_json::to_string_pretty(&Value::Object(written)) {
        // Atomic and private (it holds the refresh token and the client secret); the SDK
        // ignores a failed write too.
        let path = token_path(home, session);
        let _ = crate::util::write_private_atomically(std::path::Path::new(&path), text.as_bytes());
    }
    Ok((new_access.to_string(), Some(new_expiry)))
}

/// SSO `GetRoleCredentials`.
fn role_credentials(
    token: &str,
    account: &str,
    role: &str,
    region: &str,
    env: Env<'_>,
    cancel: &CancelToken,
) -> Result<Resolved, SourceError> {
    let url = format!(
        "{}/federation/credentials?role_name={}&account_id={}",
        service_endpoint(env, "AWS_ENDPOINT_URL_SSO", "portal.sso", region),
        uri_escape(role),
        uri_escape(account)
    );
    let headers = vec![("x-amz-sso_bearer_token".to_string(), token.to_string())];
    let v = json_request(Method::Get, &url, headers, None, cancel)?;
    let c = v.get("roleCredentials");
    let s = |k: &str| {
        c.and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let expiration = c.and_then(|c| c.get("expiration")).and_then(Value::as_f64);
    match (
        s("accessKeyId"),
        s("secretAccessKey"),
        s("sessionToken"),
        expiration,
    ) {
        (Some(id), Some(secret), Some(session), Some(exp)) if exp > 0.0 => Ok(Resolved {
            creds: AwsCredentials {
                access_key_id: id,
                secret_access_key: secret,
                session_token: Some(session),
            },
            expires_ms: Some(exp as u64),
        }),
        _ => Err(SourceError::Fatal(
            "SSO returns an invalid temporary credential.".into(),
        )),
    }
}

/// A JSON request to an SSO endpoint; a non-2xx answer is `<ErrorType>: <message>` (the SDK's
/// `String(error)` of a service exception).
fn json_request(
    method: Method,
    url: &str,
    mut headers: Vec<(String, String)>,
    body: Option<Value>,
    cancel: &CancelToken,
) -> Result<Value, SourceError> {
    if body.is_some() {
        headers.push(("content-type".into(), "application/json".into()));
    }
    let request = HttpRequest {
        url: url.to_string(),
        headers,
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        idle_timeout: Duration::from_secs(60),
    };
    let mut response = http::send(method, request, cancel).map_err(|e| match e {
        HttpError::Aborted => SourceError::Aborted,
        other => SourceError::Fatal(other.to_string()),
    })?;
    let status = response.status();
    let error_type = response.error_type().map(str::to_owned);
    let text = response
        .read_text(64 * 1024)
        .map_err(|e| {
            if cancel.is_cancelled() {
                SourceError::Aborted
            } else {
                SourceError::Fatal(http::describe_read_error(&e))
            }
        })?
        .text;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        return Ok(v);
    }
    let name = error_type
        .as_deref()
        .map(|t| t.split(':').next().unwrap_or(t).to_string())
        .or_else(|| v.get("error").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "UnknownError".into());
    let message = ["message", "Message", "error_description"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{status}: {text}"));
    Err(SourceError::Fatal(format!("{name}: {message}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_file_names_are_sha1_hex() {
        // sha1("my-sso") and sha1 of a start URL, as `getSSOTokenFilepath` names them.
        assert_eq!(
            token_path(Some("/h"), "my-sso"),
            format!(
                "/h/.aws/sso/cache/{}.json",
                hex(
                    ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, b"my-sso")
                        .as_ref()
                )
            )
        );
        assert_eq!(
            token_path(Some("/h"), "abc"),
            "/h/.aws/sso/cache/a9993e364706816aba3e25717850c26c9cd0d89d.json"
        );
    }

    fn section(pairs: &[(&str, &str)]) -> Section {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_sdks_errors() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-sso-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join(".aws/sso/cache")).unwrap();
        let home = dir.to_string_lossy().into_owned();
        let none = |_: &str| None;
        let cancel = CancelToken::new();
        let files = SharedFiles::parse(
            "[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://corp.awsapps.com/start\n",
            "",
        );
        let run = |p: &Section| from_sso("dev", p, &files, &none, Some(&home), &cancel);
        let incomplete = run(&section(&[("sso_start_url", "u"), ("sso_region", "r")]));
        assert!(
            matches!(&incomplete, Err(SourceError::Fatal(t)) if t.starts_with("Profile is configured with invalid SSO credentials. Required parameters \"sso_account_id\", \"sso_region\", \"sso_role_name\", \"sso_start_url\". Got sso_region, sso_start_url\nReference:")),
            "{incomplete:?}"
        );
        let legacy = section(&[
            ("sso_start_url", "https://legacy/start"),
            ("sso_region", "us-east-1"),
            ("sso_account_id", "1"),
            ("sso_role_name", "r"),
        ]);
        assert_eq!(
            run(&legacy),
            Err(SourceError::Fatal("The SSO session associated with this profile is invalid. To refresh this SSO session run aws sso login with the corresponding profile.".into()))
        );
        std::fs::write(
            token_path(Some(&home), "https://legacy/start"),
            r#"{"accessToken":"t","expiresAt":"2001-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(
            run(&legacy),
            Err(SourceError::Fatal("The SSO session associated with this profile has expired. To refresh this SSO session run aws sso login with the corresponding profile.".into()))
        );
        let with_session = section(&[
            ("sso_session", "corp"),
            ("sso_account_id", "1"),
            ("sso_role_name", "r"),
        ]);
        assert_eq!(
            run(&with_session),
            Err(SourceError::Fatal("The SSO session token associated with profile=dev was not found or is invalid. To refresh this SSO session run 'aws sso login' with the corresponding profile.".into()))
        );
        std::fs::write(
            token_path(Some(&home), "corp"),
            r#"{"accessToken":"t","expiresAt":"2001-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(
            run(&with_session),
            Err(SourceError::Fatal("Value not present for 'clientId' in SSO Token. Cannot refresh. To refresh this SSO session run 'aws sso login' with the corresponding profile.".into()))
        );
        let missing_session = section(&[("sso_session", "nope")]);
        assert_eq!(
            run(&missing_session),
            Err(SourceError::Fatal(
                "Sso session 'nope' could not be found in shared credentials file.".into()
            ))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
