//! The AWS SDK credential sources that run something or ask a local endpoint: a profile's
//! `credential_process` (a command printing `{"Version":1,"AccessKeyId",…}`), and the remote
//! sources that end the SDK's chain: container credentials (ECS task roles, EKS pod identity)
//! and the EC2 instance metadata service (IMDSv2, with the SDK's fallback to v1 when the token
//! request is refused). STS and SSO are in `sts` and `sso`.
//!
//! Every request honours the stream's cancel token. The remote endpoints get the SDK's short
//! timeouts (1 s each; the container endpoint is tried 4 times, 1 s apart, as `fromHttp`
//! does) so a machine without them fails fast.

use std::time::Duration;

use serde_json::Value;

use super::cache::{parse_expiration, Resolved};
use super::credentials::{Env, NO_CREDENTIALS};
use super::sigv4::AwsCredentials;
use crate::cancel::CancelToken;
use crate::llm::http::{self, HttpError, HttpRequest, Method};

/// What is kept of a `credential_process`'s stdout and of its stderr.
const PROCESS_OUTPUT_LIMIT: u64 = 1 << 20;

/// A finished `credential_process`.
struct ProcessOutput {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `sh -c command` as a child that dies with pi-rpc (the spawner thread), reading at most
/// [`PROCESS_OUTPUT_LIMIT`] of each stream; an abort kills it. No time limit, as in the SDK.
fn run_process(command: &str, cancel: &CancelToken) -> std::io::Result<Option<ProcessOutput>> {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = crate::exec::spawner::spawn(sh)?;
    let collect = |stream: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stream {
                let _ = s.take(PROCESS_OUTPUT_LIMIT).read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = collect(child.stdout.take().map(|s| Box::new(s) as Box<_>));
    let stderr = collect(child.stderr.take().map(|s| Box::new(s) as Box<_>));
    let status = loop {
        if cancel.is_cancelled() {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        match child.try_wait()? {
            Some(status) => break status,
            None => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    };
    Ok(Some(ProcessOutput {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }))
}

/// Runs a profile's `credential_process` through the shell and reads its JSON (the SDK's
/// `resolveProcessCredentials`, with its texts). A failure lets the chain go on, as in the SDK.
pub fn from_process(
    profile: &str,
    command: &str,
    cancel: &CancelToken,
) -> Result<Resolved, SourceError> {
    let fail = |text: String| SourceError::Failed(text);
    let out = run_process(command, cancel)
        .map_err(|e| fail(format!("Profile {profile} credential_process failed: {e}")))?
        .ok_or(SourceError::Aborted)?;
    if !out.status.success() {
        return Err(fail(format!(
            "Profile {profile} credential_process failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        fail(format!(
            "Profile {profile} credential_process returned invalid JSON."
        ))
    })?;
    if v.get("Version").and_then(Value::as_u64) != Some(1) {
        return Err(fail(format!(
            "Profile {profile} credential_process did not return Version 1."
        )));
    }
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let (Some(id), Some(secret)) = (s("AccessKeyId"), s("SecretAccessKey")) else {
        return Err(fail(format!(
            "Profile {profile} credential_process returned invalid credentials."
        )));
    };
    let expires_ms = s("Expiration")
        .filter(|e| !e.is_empty())
        .and_then(|e| parse_expiration(&e));
    if expires_ms.is_some_and(|e| e < crate::util::now_ms()) {
        return Err(fail(format!(
            "Profile {profile} credential_process returned expired credentials."
        )));
    }
    Ok(Resolved {
        creds: AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: s("SessionToken").filter(|t| !t.is_empty()),
        },
        expires_ms,
    })
}

/// The timeout of each request to a metadata endpoint (the SDK's 1 s).
const METADATA_TIMEOUT: Duration = Duration::from_secs(1);
/// The container endpoint of `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`.
const ECS_HOST: &str = "http://169.254.170.2";
/// The instance metadata endpoints of `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE`.
const IMDS_IPV4: &str = "http://169.254.169.254";
const IMDS_IPV6: &str = "http://[fd00:ec2::254]";
const IMDS_TOKEN_PATH: &str = "/latest/api/token";
const IMDS_CREDENTIALS_PATH: &str = "/latest/meta-data/iam/security-credentials/";

fn non_empty(env: Env<'_>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}

/// Why a credential source gave nothing, as the SDK's chain sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SourceError {
    /// The stream was aborted.
    Aborted,
    /// The source failed (the detail; empty when not worth showing); the SDK goes on to the
    /// next source (a `CredentialsProviderError` with `tryNextLink`).
    Failed(String),
    /// An error that ends the chain with its own text (`tryNextLink: false`, or an error of a
    /// service such as STS or SSO).
    Fatal(String),
}

impl SourceError {
    /// The text of the stream's error: an abort stays an abort (the caller checks the token);
    /// a failure is the SDK's end of the chain, with the detail.
    pub(crate) fn into_text(self) -> String {
        match self {
            SourceError::Aborted => "Request was aborted".into(),
            SourceError::Failed(detail) if detail.is_empty() => NO_CREDENTIALS.into(),
            SourceError::Failed(detail) => format!("{NO_CREDENTIALS}: {detail}"),
            SourceError::Fatal(text) => text,
        }
    }
}

/// Waits `d` unless the stream is aborted first (then `false`).
pub(crate) fn sleep_unless_cancelled(d: Duration, cancel: &CancelToken) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

/// One request to a metadata endpoint: its status and body (at most 64 KiB).
fn metadata_request(
    method: Method,
    url: &str,
    headers: Vec<(String, String)>,
    cancel: &CancelToken,
) -> Result<(u16, String), SourceError> {
    let request = HttpRequest {
        url: url.to_string(),
        headers,
        body: Vec::new(),
        idle_timeout: METADATA_TIMEOUT,
    };
    let mut response = http::send(method, request, cancel).map_err(|e| match e {
        HttpError::Aborted => SourceError::Aborted,
        other => SourceError::Failed(format!("{url}: {other}")),
    })?;
    let status = response.status();
    let text = response.read_text(64 * 1024).map_err(|e| {
        if cancel.is_cancelled() {
            SourceError::Aborted
        } else {
            SourceError::Failed(format!("{url}: {}", http::describe_read_error(&e)))
        }
    })?;
    Ok((status, text.text))
}

/// Credentials in the JSON of the container endpoint and of IMDS:
/// `{"AccessKeyId","SecretAccessKey","Token","Expiration"}` (all strings, as the SDK demands).
pub(crate) fn parse_metadata_credentials(text: &str) -> Option<Resolved> {
    let v: Value = serde_json::from_str(text).ok()?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let expiration = s("Expiration")?;
    Some(Resolved {
        creds: AwsCredentials {
            access_key_id: s("AccessKeyId")?,
            secret_access_key: s("SecretAccessKey")?,
            session_token: Some(s("Token")?),
        },
        expires_ms: parse_expiration(&expiration),
    })
}

/// Whether the SDK accepts a full container credentials URI: https, a loopback host
/// (`localhost`, 127.0.0.0/8, `[::1]`) or the ECS / EKS container hosts.
pub(crate) fn container_url_allowed(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return lower.len() > "https://".len();
    }
    let Some(rest) = lower.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or("")
    };
    match host {
        "169.254.170.2"
        | "169.254.170.23"
        | "[fd00:ec2::23]"
        | "localhost"
        | "[::1]"
        | "[0000:0000:0000:0000:0000:0000:0000:0001]" => true,
        _ => {
            let parts: Vec<&str> = host.split('.').collect();
            parts.len() == 4
                && parts[0] == "127"
                && parts[1..]
                    .iter()
                    .all(|p| !p.is_empty() && p.parse::<u8>().is_ok())
        }
    }
}

/// Container credentials as the SDK's `remoteProvider` gets them: `fromHttp` — GET
/// `http://169.254.170.2<AWS_CONTAINER_CREDENTIALS_RELATIVE_URI>` (preferred) or
/// `AWS_CONTAINER_CREDENTIALS_FULL_URI`, with the `Authorization` of
/// `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` (preferred) or `AWS_CONTAINER_AUTHORIZATION_TOKEN`,
/// tried 4 times 1 s apart (its `retryWrapper` with `maxRetries` 3) — then, when that failed,
/// `fromContainerMetadata`: one more GET, allowed only for the relative URI or a full URI on
/// `localhost` / `127.0.0.1`, whose refusal ends the chain.
pub(crate) fn from_container(env: Env<'_>, cancel: &CancelToken) -> Result<Resolved, SourceError> {
    let last = match from_http(env, cancel) {
        Ok(r) => return Ok(r),
        Err(SourceError::Failed(detail)) => detail,
        Err(other) => return Err(other),
    };
    let url = container_metadata_url(env)?;
    let headers = non_empty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN")
        .map(|t| vec![("authorization".to_string(), t)])
        .unwrap_or_default();
    match metadata_request(Method::Get, &url, headers, cancel) {
        Ok((status, body)) if (200..300).contains(&status) => parse_metadata_credentials(&body)
            .ok_or_else(|| {
                SourceError::Failed(
                    "Invalid response received from instance metadata service.".into(),
                )
            }),
        Ok(_) | Err(SourceError::Failed(_)) => Err(SourceError::Failed(last)),
        Err(other) => Err(other),
    }
}

/// The URL `fromContainerMetadata` asks (its `getCmdsUri`, with its texts).
fn container_metadata_url(env: Env<'_>) -> Result<String, SourceError> {
    if let Some(relative) = non_empty(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        return Ok(format!("{ECS_HOST}{relative}"));
    }
    let full = non_empty(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI").unwrap_or_default();
    let Some((scheme, rest)) = full.split_once("://") else {
        return Err(SourceError::Fatal(format!(
            "{full} is not a valid container metadata service URL"
        )));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or("")
    }
    .to_ascii_lowercase();
    if host != "localhost" && host != "127.0.0.1" {
        return Err(SourceError::Fatal(format!(
            "{host} is not a valid container metadata service hostname"
        )));
    }
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(SourceError::Fatal(format!(
            "{scheme}: is not a valid container metadata service protocol"
        )));
    }
    Ok(full)
}

/// The delay between `fromHttp`'s attempts, and their number.
const CONTAINER_RETRY_DELAY: Duration = Duration::from_secs(1);
const CONTAINER_ATTEMPTS: usize = 4;

/// The SDK's `fromHttp`.
fn from_http(env: Env<'_>, cancel: &CancelToken) -> Result<Resolved, SourceError> {
    let url = if let Some(relative) = non_empty(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        format!("{ECS_HOST}{relative}")
    } else if let Some(full) = non_empty(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI") {
        if !container_url_allowed(&full) {
            return Err(SourceError::Failed(format!(
                "the container credentials URL {full} is not accepted; it must be https, a loopback address, or the ECS (169.254.170.2) or EKS (169.254.170.23, [fd00:ec2::23]) container host"
            )));
        }
        full
    } else {
        return Err(SourceError::Failed(
            "no container credentials URI is set".into(),
        ));
    };
    let attempt = || -> Result<Resolved, SourceError> {
        let token = if let Some(file) = non_empty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
            let text = std::fs::read_to_string(&file).map_err(|e| {
                SourceError::Failed(format!(
                    "could not read the container authorization token file {file}: {e}"
                ))
            })?;
            Some(text)
        } else {
            non_empty(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN")
        };
        let mut headers = Vec::new();
        if let Some(token) = token {
            if token.contains("\r\n") {
                return Err(SourceError::Failed(
                    "Authorization token contains invalid \\r\\n sequence.".into(),
                ));
            }
            headers.push(("authorization".to_string(), token.trim_end().to_string()));
        }
        match metadata_request(Method::Get, &url, headers, cancel)? {
            (status, body) if (200..300).contains(&status) => parse_metadata_credentials(&body)
                .ok_or_else(|| {
                    SourceError::Failed(format!(
                        "the container endpoint {url} returned no credentials"
                    ))
                }),
            (status, _) => Err(SourceError::Failed(format!(
                "the container endpoint {url} answered {status}"
            ))),
        }
    };
    let mut last = String::new();
    for i in 0..CONTAINER_ATTEMPTS {
        if i > 0 && !sleep_unless_cancelled(CONTAINER_RETRY_DELAY, cancel) {
            return Err(SourceError::Aborted);
        }
        match attempt() {
            Err(SourceError::Failed(detail)) => last = detail,
            other => return other,
        }
    }
    Err(SourceError::Failed(last))
}

/// The instance metadata endpoint: `AWS_EC2_METADATA_SERVICE_ENDPOINT` (or the profile's
/// `ec2_metadata_service_endpoint`), else the address of
/// `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE` (or `ec2_metadata_service_endpoint_mode`): `IPv4`,
/// the default, or `IPv6`. `setting` reads the profile's keys (the SDK's `loadConfig`).
fn imds_endpoint(env: Env<'_>, setting: Env<'_>) -> Result<String, SourceError> {
    let endpoint = non_empty(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .or_else(|| setting("ec2_metadata_service_endpoint").filter(|v| !v.is_empty()));
    if let Some(endpoint) = endpoint {
        return Ok(endpoint.trim_end_matches('/').to_string());
    }
    let mode = non_empty(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE")
        .or_else(|| setting("ec2_metadata_service_endpoint_mode").filter(|v| !v.is_empty()));
    match mode.as_deref() {
        None | Some("IPv4") => Ok(IMDS_IPV4.into()),
        Some("IPv6") => Ok(IMDS_IPV6.into()),
        Some(other) => Err(SourceError::Fatal(format!(
            "Unsupported endpoint mode: {other}. Select from IPv4,IPv6"
        ))),
    }
}

/// EC2 instance metadata: a session token (PUT), the role name, then the role's credentials.
/// A refused or timed-out token request falls back to IMDSv1 (no token), as the SDK does.
pub(crate) fn from_instance_metadata(
    env: Env<'_>,
    setting: Env<'_>,
    cancel: &CancelToken,
) -> Result<Resolved, SourceError> {
    let endpoint = imds_endpoint(env, setting)?;
    let token_url = format!("{endpoint}{IMDS_TOKEN_PATH}");
    let ttl = vec![(
        "x-aws-ec2-metadata-token-ttl-seconds".to_string(),
        "21600".to_string(),
    )];
    let headers = match metadata_request(Method::Put, &token_url, ttl, cancel)? {
        (status, token) if (200..300).contains(&status) => {
            vec![(
                "x-aws-ec2-metadata-token".to_string(),
                token.trim().to_string(),
            )]
        }
        (400, _) => {
            return Err(SourceError::Failed(
                "EC2 Metadata token request returned error".into(),
            ))
        }
        _ => Vec::new(),
    };
    let get = |url: &str| -> Result<String, SourceError> {
        match metadata_request(Method::Get, url, headers.clone(), cancel)? {
            (status, body) if (200..300).contains(&status) => Ok(body),
            (status, _) => Err(SourceError::Failed(format!(
                "Error response received from instance metadata service: {url} answered {status}"
            ))),
        }
    };
    let list_url = format!("{endpoint}{IMDS_CREDENTIALS_PATH}");
    let roles = get(&list_url)?;
    let role = roles.lines().map(str::trim).find(|l| !l.is_empty());
    let Some(role) = role else {
        return Err(SourceError::Failed(
            "the instance metadata service lists no IAM role".into(),
        ));
    };
    let body = get(&format!("{list_url}{role}"))?;
    parse_metadata_credentials(&body).ok_or_else(|| {
        SourceError::Failed("Invalid response received from instance metadata service.".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_process_output_is_read() {
        let c = from_process(
            "p",
            r#"printf '{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":"2030-01-01T00:00:00Z"}'"#,
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(
            c,
            Resolved {
                creds: AwsCredentials {
                    access_key_id: "A".into(),
                    secret_access_key: "S".into(),
                    session_token: Some("T".into()),
                },
                expires_ms: Some(1_893_456_000_000),
            }
        );
        assert_eq!(
            from_process("p", "echo nope", &CancelToken::new()).unwrap_err(),
            SourceError::Failed("Profile p credential_process returned invalid JSON.".into())
        );
        assert_eq!(
            from_process(
                "p",
                r#"printf '{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"2001-01-01T00:00:00Z"}'"#,
                &CancelToken::new(),
            )
            .unwrap_err(),
            SourceError::Failed("Profile p credential_process returned expired credentials.".into())
        );
        assert_eq!(
            from_process(
                "p",
                r#"printf '{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"}'"#,
                &CancelToken::new(),
            )
            .unwrap()
            .expires_ms,
            None
        );
        assert!(from_process("p", "exit 3", &CancelToken::new()).is_err());
    }

    /// A `credential_process` that never ends held the request past an abort.
    #[test]
    fn an_abort_kills_a_hanging_credential_process() {
        let cancel = CancelToken::new();
        let canceller = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            canceller.cancel();
        });
        let started = std::time::Instant::now();
        assert_eq!(
            from_process("p", "sleep 30", &cancel).unwrap_err(),
            SourceError::Aborted
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn metadata_credentials_are_read() {
        let c = parse_metadata_credentials(
            r#"{"Code":"Success","AccessKeyId":"ASIA1","SecretAccessKey":"s","Token":"t","Expiration":"2030-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(c.creds.access_key_id, "ASIA1");
        assert_eq!(c.creds.secret_access_key, "s");
        assert_eq!(c.creds.session_token.as_deref(), Some("t"));
        assert_eq!(c.expires_ms, Some(1_893_456_000_000));
        // The SDK demands all four strings.
        assert!(parse_metadata_credentials(
            r#"{"AccessKeyId":"A","SecretAccessKey":"s","Expiration":"x"}"#
        )
        .is_none());
        assert!(parse_metadata_credentials(
            r#"{"AccessKeyId":"A","SecretAccessKey":"s","Token":"t"}"#
        )
        .is_none());
        assert!(parse_metadata_credentials("not json").is_none());
    }

    #[test]
    fn container_urls_the_sdk_accepts() {
        for ok in [
            "https://example.com/creds",
            "http://127.0.0.1:8080/creds",
            "http://127.1.2.3/x",
            "http://localhost:9/x",
            "http://[::1]:80/x",
            "http://169.254.170.2/v2/credentials",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
        ] {
            assert!(container_url_allowed(ok), "{ok}");
        }
        for bad in [
            "http://example.com/creds",
            "http://169.254.169.254/x",
            "http://127.0.0.256/x",
            "http://127.0.0/x",
            "http://10.0.0.1/x",
            "ftp://127.0.0.1/x",
            "127.0.0.1/x",
        ] {
            assert!(!container_url_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn imds_endpoint_and_mode() {
        let e = |vars: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                vars.iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            }
        };
        let none = |_: &str| None;
        let imds_endpoint_of = |env: Env<'_>| imds_endpoint(env, &none);
        let ok = |r: Result<String, SourceError>| match r {
            Ok(s) => s,
            Err(e) => e.into_text(),
        };
        assert_eq!(ok(imds_endpoint_of(&e(&[]))), IMDS_IPV4);
        assert_eq!(
            ok(imds_endpoint_of(&e(&[(
                "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
                "IPv6"
            )]))),
            IMDS_IPV6
        );
        assert_eq!(
            ok(imds_endpoint_of(&e(&[(
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                "http://127.0.0.1:9/"
            )]))),
            "http://127.0.0.1:9"
        );
        assert!(ok(imds_endpoint_of(&e(&[(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
            "x"
        )])))
        .contains("Unsupported endpoint mode: x"));
    }

    #[test]
    fn an_aborted_lookup_sends_nothing() {
        let cancel = CancelToken::new();
        cancel.cancel();
        let e = |n: &str| {
            (n == "AWS_CONTAINER_CREDENTIALS_FULL_URI").then(|| "http://127.0.0.1:9/c".to_string())
        };
        assert!(matches!(
            from_container(&e, &cancel),
            Err(SourceError::Aborted)
        ));
        assert!(matches!(
            from_instance_metadata(&e, &|_: &str| None, &cancel),
            Err(SourceError::Aborted)
        ));
    }
}
