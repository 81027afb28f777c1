//! The AWS SDK credential sources that run something: a profile's `credential_process` (a
//! command printing `{"Version":1,"AccessKeyId",…}`) and web identity
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, exchanged at STS with
//! `AssumeRoleWithWebIdentity`, as on EKS).

use std::time::Duration;

use serde_json::Value;

use super::sigv4::{uri_escape, AwsCredentials};
use crate::cancel::CancelToken;
use crate::llm::http::{self, HttpRequest};

/// Runs a profile's `credential_process` through the shell and reads its JSON.
pub fn from_process(profile: &str, command: &str) -> Result<AwsCredentials, String> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("Profile {profile} credential_process failed: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "Profile {profile} credential_process failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: Value = serde_json::from_slice(&out.stdout)
        .map_err(|_| format!("Profile {profile} credential_process returned invalid JSON."))?;
    if v.get("Version").and_then(Value::as_u64) != Some(1) {
        return Err(format!(
            "Profile {profile} credential_process did not return Version 1."
        ));
    }
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match (s("AccessKeyId"), s("SecretAccessKey")) {
        (Some(id), Some(secret)) => Ok(AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: s("SessionToken"),
        }),
        _ => Err(format!(
            "Profile {profile} credential_process returned invalid credentials."
        )),
    }
}

/// The text of `<tag>…</tag>` in an XML document.
fn xml_tag(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(xml[start..end].trim().to_string())
}

/// Exchanges the web identity token for role credentials. `endpoint` is
/// `AWS_ENDPOINT_URL_STS` / `AWS_ENDPOINT_URL`, else STS's regional endpoint.
pub fn from_web_identity(
    token_file: &str,
    role_arn: &str,
    session_name: &str,
    endpoint: &str,
) -> Result<AwsCredentials, String> {
    let token = std::fs::read_to_string(token_file)
        .map_err(|e| format!("Could not read the web identity token file {token_file}: {e}"))?;
    let form = [
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", role_arn),
        ("RoleSessionName", session_name),
        ("WebIdentityToken", token.trim()),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", uri_escape(v)))
    .collect::<Vec<_>>()
    .join("&");
    let request = HttpRequest {
        url: format!("{}/", endpoint.trim_end_matches('/')),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: form.into_bytes(),
        idle_timeout: Duration::from_secs(60),
    };
    let mut response = http::post(request, &CancelToken::new()).map_err(|e| e.to_string())?;
    let status = response.status();
    let xml = response
        .read_text(64 * 1024)
        .map_err(|e| http::describe_read_error(&e))?
        .text;
    if !(200..300).contains(&status) {
        let code = xml_tag(&xml, "Code").unwrap_or_else(|| status.to_string());
        let message = xml_tag(&xml, "Message").unwrap_or(xml);
        return Err(format!("{code}: {message}"));
    }
    match (
        xml_tag(&xml, "AccessKeyId"),
        xml_tag(&xml, "SecretAccessKey"),
    ) {
        (Some(id), Some(secret)) => Ok(AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: xml_tag(&xml, "SessionToken"),
        }),
        _ => Err("AssumeRoleWithWebIdentity returned no credentials".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_process_output_is_read() {
        let c = from_process(
            "p",
            r#"printf '{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":"2030-01-01T00:00:00Z"}'"#,
        )
        .unwrap();
        assert_eq!(
            c,
            AwsCredentials {
                access_key_id: "A".into(),
                secret_access_key: "S".into(),
                session_token: Some("T".into()),
            }
        );
        assert_eq!(
            from_process("p", "echo nope").unwrap_err(),
            "Profile p credential_process returned invalid JSON."
        );
        assert!(from_process("p", "exit 3").is_err());
    }

    #[test]
    fn sts_xml_is_read() {
        let xml = "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA</AccessKeyId><SecretAccessKey>sec</SecretAccessKey><SessionToken>tok</SessionToken></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
        assert_eq!(xml_tag(xml, "AccessKeyId").as_deref(), Some("ASIA"));
        assert_eq!(xml_tag(xml, "SessionToken").as_deref(), Some("tok"));
        assert_eq!(xml_tag(xml, "Missing"), None);
    }
}
