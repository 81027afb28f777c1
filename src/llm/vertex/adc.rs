//! Application Default Credentials for Vertex AI (providers-catalog.md §4.2), as
//! google-auth-library 10 gets an access token for the `cloud-platform` scope:
//! `authorized_user` files (what `gcloud auth application-default login` writes) are refreshed
//! with their refresh token; `service_account` files sign an RS256 JWT (gtoken's claims
//! `iss, scope, aud, exp, iat`, header `{"alg":"RS256"}`) and exchange it. Tokens are cached
//! per file until 5 minutes before they expire.

use std::time::Duration;

use parking_lot::Mutex;
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::llm::http::{self, HttpError, HttpRequest};
use crate::llm::stream::Failure;
use base64::Engine as _;

/// The scope the genai SDK asks for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// google-auth-library's token endpoint. google-auth-library 10.9 never reads a key file's
/// `token_uri`: gtoken posts service-account assertions here (and makes it their `aud`), and
/// `UserRefreshClient` refreshes here too. Tests redirect it with `PI_RPC_OAUTH_ORIGIN` (see
/// `llm/oauth/client.rs`).
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// A cached token is renewed this long before it expires.
const EXPIRY_MARGIN_SECS: u64 = 300;
const TOKEN_TIMEOUT: Duration = Duration::from_secs(60);

/// An access token and the project to bill (`quota_project_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessToken {
    pub token: String,
    pub quota_project: Option<String>,
}

/// (credentials file, token, quota project, expiry in Unix seconds).
static CACHE: Mutex<Vec<(String, AccessToken, u64)>> = Mutex::new(Vec::new());

/// The credentials file: `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's well-known file.
pub fn credentials_path(
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&str>,
) -> Option<String> {
    env("GOOGLE_APPLICATION_CREDENTIALS")
        .filter(|v| !v.is_empty())
        .or_else(|| {
            home.map(|h| format!("{h}/.config/gcloud/application_default_credentials.json"))
        })
}

/// base64url without padding (JWS).
pub fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The DER of a PEM `PRIVATE KEY` (PKCS#8).
pub fn pem_to_der(pem: &str) -> Result<Vec<u8>, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        return Err("Invalid private key: no PEM block found".into());
    }
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| format!("Invalid private key: {e}"))
}

/// The signed JWT assertion of a service account (gtoken's `getJwsSign`).
pub fn jwt_assertion(
    client_email: &str,
    private_key_pem: &str,
    now: u64,
) -> Result<String, String> {
    let der = pem_to_der(private_key_pem)?;
    let key = RsaKeyPair::from_pkcs8(&der).map_err(|e| format!("Invalid private key: {e}"))?;
    let header = json!({"alg": "RS256"});
    let claims = json!({"iss": client_email, "scope": SCOPE, "aud": TOKEN_URL,
        "exp": now + 3600, "iat": now});
    let input = format!(
        "{}.{}",
        base64url(header.to_string().as_bytes()),
        base64url(claims.to_string().as_bytes())
    );
    let mut sig = vec![0u8; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .map_err(|_| "Could not sign the JWT assertion".to_string())?;
    Ok(format!("{input}.{}", base64url(&sig)))
}

/// `application/x-www-form-urlencoded` as `URLSearchParams` serializes it.
pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The token request for a credentials file's JSON (`token_url` is [`TOKEN_URL`] outside
/// tests).
pub fn token_request(creds: &Value, token_url: &str, now: u64) -> Result<HttpRequest, String> {
    let s = |k: &str| creds.get(k).and_then(Value::as_str).unwrap_or("");
    let body = match s("type") {
        "authorized_user" => form_encode(&[
            ("refresh_token", s("refresh_token")),
            ("client_id", s("client_id")),
            ("client_secret", s("client_secret")),
            ("grant_type", "refresh_token"),
        ]),
        "service_account" => {
            let assertion = jwt_assertion(s("client_email"), s("private_key"), now)?;
            form_encode(&[("grant_type", JWT_BEARER), ("assertion", &assertion)])
        }
        "" => return Err("The incoming JSON object does not contain a type field".into()),
        other => {
            return Err(format!(
                "Unsupported credential type: {other} (pi-rpc supports authorized_user and service_account Application Default Credentials)"
            ))
        }
    };
    Ok(HttpRequest {
        url: token_url.to_string(),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: body.into_bytes(),
        idle_timeout: TOKEN_TIMEOUT,
    })
}

/// An access token for the credentials file at `path`, from the cache or the token endpoint.
/// The cache lock is not held across the request; `cancel` interrupts it.
pub fn access_token(
    path: &str,
    token_url: &str,
    now: u64,
    cancel: &CancelToken,
) -> Result<AccessToken, Failure> {
    let cached = CACHE
        .lock()
        .iter()
        .find(|(p, _, exp)| p == path && now + EXPIRY_MARGIN_SECS < *exp)
        .map(|(_, t, _)| t.clone());
    if let Some(t) = cached {
        return Ok(t);
    }
    let fail = |e: String| Failure::Error(e);
    let text = std::fs::read_to_string(path).map_err(|e| {
        fail(format!(
            "Could not load the default credentials from {path}: {e}"
        ))
    })?;
    let creds: Value = serde_json::from_str(&text).map_err(|e| {
        fail(format!(
            "Could not load the default credentials from {path}: {e}"
        ))
    })?;
    let request = token_request(&creds, token_url, now).map_err(fail)?;
    let mut response = match http::post(request, cancel) {
        Ok(r) => r,
        Err(HttpError::Aborted) => return Err(Failure::Aborted),
        Err(e) => return Err(fail(e.to_string())),
    };
    let status = response.status();
    let body = response.read_text(64 * 1024);
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    let body = body.map_err(|e| fail(http::describe_read_error(&e)))?.text;
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        return Err(fail(match v.get("error").and_then(Value::as_str) {
            Some(e) => format!(
                "{e}: {}",
                v.get("error_description")
                    .and_then(Value::as_str)
                    .unwrap_or("undefined")
            ),
            None => format!("{status}: {body}"),
        }));
    }
    let token = v
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| fail("No access token in the token response".into()))?
        .to_string();
    let expires_in = v.get("expires_in").and_then(Value::as_u64).unwrap_or(3600);
    let quota_project = creds
        .get("quota_project_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let t = AccessToken {
        token,
        quota_project,
    };
    let mut cache = CACHE.lock();
    cache.retain(|(p, _, _)| p != path);
    cache.push((path.to_string(), t.clone(), now.saturating_add(expires_in)));
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{KeyPair, UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};

    const KEY: &str = include_str!("../../../tests/fixtures/vertex/test_rsa_key.pem");

    fn b64url_decode(s: &str) -> Vec<u8> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .unwrap()
    }

    #[test]
    fn service_account_jwt_is_signed_rs256_and_verifies() {
        let jwt = jwt_assertion("sa@p.iam.gserviceaccount.com", KEY, 1_700_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            String::from_utf8(b64url_decode(parts[0])).unwrap(),
            r#"{"alg":"RS256"}"#
        );
        assert_eq!(
            String::from_utf8(b64url_decode(parts[1])).unwrap(),
            r#"{"iss":"sa@p.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/cloud-platform","aud":"https://oauth2.googleapis.com/token","exp":1700003600,"iat":1700000000}"#
        );
        assert!(!jwt.contains('=') && !jwt.contains('+') && !jwt.contains('/'));
        let der = pem_to_der(KEY).unwrap();
        let pair = RsaKeyPair::from_pkcs8(&der).unwrap();
        let public = UnparsedPublicKey::new(
            &RSA_PKCS1_2048_8192_SHA256,
            pair.public_key().as_ref().to_vec(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(public
            .verify(signed.as_bytes(), &b64url_decode(parts[2]))
            .is_ok());
        assert!(public
            .verify(b"tampered", &b64url_decode(parts[2]))
            .is_err());
        assert!(jwt_assertion("x", "not a key", 0).is_err());
    }

    #[test]
    fn token_requests_per_credential_type() {
        let user = json!({"type": "authorized_user", "client_id": "cid.apps", "client_secret": "s e/c",
            "refresh_token": "1//rt", "quota_project_id": "qp"});
        let r = token_request(&user, TOKEN_URL, 0).unwrap();
        assert_eq!(r.url, "https://oauth2.googleapis.com/token");
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "refresh_token=1%2F%2Frt&client_id=cid.apps&client_secret=s+e%2Fc&grant_type=refresh_token"
        );
        let sa = json!({"type": "service_account", "client_email": "sa@x", "private_key": KEY});
        let body = String::from_utf8(token_request(&sa, TOKEN_URL, 5).unwrap().body).unwrap();
        assert!(body.starts_with(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=eyJhbGciOiJSUzI1NiJ9."
        ));
        let ext = json!({"type": "external_account"});
        assert!(token_request(&ext, TOKEN_URL, 0)
            .unwrap_err()
            .starts_with("Unsupported credential type: external_account"));
    }
}
