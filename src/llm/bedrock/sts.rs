//! AWS STS as the SDK's nested STS client calls it (`@aws-sdk/nested-clients/sts`): the
//! AWS Query protocol (a form-encoded POST to `/`, an XML answer), `AssumeRole` signed with
//! SigV4 (service `sts`) using the source credentials, and `AssumeRoleWithWebIdentity`
//! unsigned.
//!
//! The endpoint is `AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL` (the SDK's
//! `getEndpointUrlConfig` for service id `STS`), else the regional
//! `https://sts.<region>.amazonaws.com` (`.com.cn` in China). Errors of the service end the
//! credential chain (they are not `CredentialsProviderError`s) as `<Code>: <Message>`.

use std::time::Duration;

use super::cache::{parse_expiration, Resolved};
use super::credentials::Env;
use super::sigv4::{self, uri_escape, AwsCredentials};
use super::sources::SourceError;
use crate::cancel::CancelToken;
use crate::llm::http::{self, HttpError, HttpRequest};

/// The STS endpoint of `region` (or the configured override), without a trailing slash.
pub fn endpoint(env: Env<'_>, region: &str) -> String {
    service_endpoint(env, "AWS_ENDPOINT_URL_STS", "sts", region)
}

/// `https://<prefix>.<region>.amazonaws.com` (`.com.cn` in China regions), or the service's
/// endpoint variable, else `AWS_ENDPOINT_URL`; without a trailing slash.
pub(super) fn service_endpoint(env: Env<'_>, var: &str, prefix: &str, region: &str) -> String {
    let set = |n: &str| env(n).filter(|v| !v.is_empty());
    set(var)
        .or_else(|| set("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|| {
            let suffix = if region.starts_with("cn-") {
                "amazonaws.com.cn"
            } else {
                "amazonaws.com"
            };
            format!("https://{prefix}.{region}.{suffix}")
        })
        .trim_end_matches('/')
        .to_string()
}

/// The decoded text of the first `<tag>…</tag>` in an XML document.
pub fn xml_tag(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    let text = xml[start..end].trim();
    Some(
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// The parameters of `AssumeRole` (in the SDK's member order).
pub struct AssumeRole<'a> {
    pub role_arn: &'a str,
    pub session_name: &'a str,
    pub duration_seconds: &'a str,
    pub external_id: Option<&'a str>,
}

/// `AssumeRole` with `source` credentials at `endpoint`, signed for `region`.
pub fn assume_role(
    params: &AssumeRole<'_>,
    source: &AwsCredentials,
    endpoint: &str,
    region: &str,
    now_secs: u64,
    cancel: &CancelToken,
) -> Result<Resolved, SourceError> {
    let mut form = vec![
        ("Action", "AssumeRole"),
        ("Version", "2011-06-15"),
        ("RoleArn", params.role_arn),
        ("RoleSessionName", params.session_name),
        ("DurationSeconds", params.duration_seconds),
    ];
    if let Some(id) = params.external_id {
        form.push(("ExternalId", id));
    }
    let body = encode(&form);
    let url = format!("{endpoint}/");
    let (host, path) = super::host_and_path(&url)
        .ok_or_else(|| SourceError::Fatal(format!("Invalid URL: {url}")))?;
    let date = sigv4::amz_date(now_secs);
    let payload_hash = sigv4::sha256_hex(body.as_bytes());
    let mut headers = vec![
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("x-amz-date".to_string(), date.clone()),
    ];
    if let Some(token) = &source.session_token {
        headers.push(("x-amz-security-token".to_string(), token.clone()));
    }
    let mut signed = headers.clone();
    signed.push(("host".to_string(), host));
    let sig = sigv4::sign(
        &sigv4::SigningInput {
            method: "POST",
            path: &path,
            query: "",
            headers: &signed,
            payload_hash: &payload_hash,
            amz_date: &date,
            region,
            service: "sts",
        },
        source,
    );
    headers.push(("authorization".to_string(), sig.authorization));
    let xml = post(url, headers, body, cancel)?;
    credentials(&xml).ok_or_else(|| {
        SourceError::Fatal(format!(
            "Invalid response from STS.assumeRole call with role {}",
            params.role_arn
        ))
    })
}

/// `AssumeRoleWithWebIdentity` with the token of `token_file`.
pub fn assume_role_with_web_identity(
    token_file: &str,
    role_arn: &str,
    session_name: &str,
    endpoint: &str,
    cancel: &CancelToken,
) -> Result<Resolved, SourceError> {
    // Bounded, and never blocking on a FIFO: a wrong path cannot hang the request.
    let token = crate::util::read_small_file(std::path::Path::new(token_file), 1 << 20)
        .map(crate::util::utf8_text)
        .map_err(|e| {
            SourceError::Fatal(format!(
                "Could not read the web identity token file {token_file}: {e}"
            ))
        })?;
    let body = encode(&[
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", role_arn),
        ("RoleSessionName", session_name),
        ("WebIdentityToken", token.trim()),
    ]);
    let headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    let xml = post(format!("{endpoint}/"), headers, body, cancel)?;
    credentials(&xml).ok_or_else(|| {
        SourceError::Fatal(format!(
            "Invalid response from STS.assumeRoleWithWebIdentity call with role {role_arn}"
        ))
    })
}

fn encode(form: &[(&str, &str)]) -> String {
    form.iter()
        .map(|(k, v)| format!("{k}={}", uri_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Posts a query and returns the XML of a 2xx answer.
fn post(
    url: String,
    headers: Vec<(String, String)>,
    body: String,
    cancel: &CancelToken,
) -> Result<String, SourceError> {
    let request = HttpRequest {
        url,
        headers,
        body: body.into_bytes(),
        idle_timeout: Duration::from_secs(60),
    };
    let mut response = http::post(request, cancel).map_err(|e| match e {
        HttpError::Aborted => SourceError::Aborted,
        other => SourceError::Fatal(other.to_string()),
    })?;
    let status = response.status();
    let xml = response
        .read_text(64 * 1024)
        .map_err(|e| {
            if cancel.is_cancelled() {
                SourceError::Aborted
            } else {
                SourceError::Fatal(http::describe_read_error(&e))
            }
        })?
        .text;
    if !(200..300).contains(&status) {
        let code = xml_tag(&xml, "Code").unwrap_or_else(|| status.to_string());
        let message = xml_tag(&xml, "Message").unwrap_or(xml);
        return Err(SourceError::Fatal(format!("{code}: {message}")));
    }
    Ok(xml)
}

/// The `<Credentials>` of an STS answer.
fn credentials(xml: &str) -> Option<Resolved> {
    let id = xml_tag(xml, "AccessKeyId").filter(|v| !v.is_empty())?;
    let secret = xml_tag(xml, "SecretAccessKey").filter(|v| !v.is_empty())?;
    Some(Resolved {
        creds: AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: xml_tag(xml, "SessionToken"),
        },
        expires_ms: xml_tag(xml, "Expiration").and_then(|e| parse_expiration(&e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sts_xml_is_read() {
        let xml = "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA</AccessKeyId><SecretAccessKey>sec</SecretAccessKey><SessionToken>a&amp;b</SessionToken><Expiration>2030-01-01T00:00:00.000Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>";
        assert_eq!(
            credentials(xml),
            Some(Resolved {
                creds: AwsCredentials {
                    access_key_id: "ASIA".into(),
                    secret_access_key: "sec".into(),
                    session_token: Some("a&b".into()),
                },
                expires_ms: Some(1_893_456_000_000),
            })
        );
        assert_eq!(xml_tag(xml, "Missing"), None);
        assert_eq!(credentials("<x/>"), None);
    }

    #[test]
    fn endpoints() {
        let none = |_: &str| None;
        assert_eq!(
            endpoint(&none, "eu-west-1"),
            "https://sts.eu-west-1.amazonaws.com"
        );
        assert_eq!(
            endpoint(&none, "cn-north-1"),
            "https://sts.cn-north-1.amazonaws.com.cn"
        );
        let set = |n: &str| (n == "AWS_ENDPOINT_URL").then(|| "http://127.0.0.1:9/".to_string());
        assert_eq!(endpoint(&set, "eu-west-1"), "http://127.0.0.1:9");
    }
}
