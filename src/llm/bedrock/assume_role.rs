//! A profile of the shared files turned into credentials, as the SDK's `fromIni`
//! (`@aws-sdk/credential-provider-ini`, `resolveProfileData`) does it, in its order: a source
//! profile's static keys; a `role_arn` profile (STS `AssumeRole` with the credentials of its
//! `source_profile`, followed recursively with the SDK's cycle detection, or of its
//! `credential_source`: `Environment`, `Ec2InstanceMetadata`, `EcsContainer`); static keys;
//! `web_identity_token_file`; `credential_process`; SSO.
//!
//! `role_session_name` defaults to `aws-sdk-js-<ms>`, `duration_seconds` to 3600;
//! `external_id` is passed on. A profile with `mfa_serial` fails with the SDK's text: the SDK
//! needs an MFA code callback, and a headless agent has no one to ask. STS is asked in the
//! region of the profile the chain started from (its `region`), else the request's region.

use super::cache::Resolved;
use super::credentials::Chain;
use super::profiles::Section;
use super::sigv4::AwsCredentials;
use super::sources::{self, SourceError};
use super::{sso, sts};

fn has(p: &Section, key: &str) -> bool {
    p.contains_key(key)
}

fn is_static(p: &Section) -> bool {
    has(p, "aws_access_key_id") && has(p, "aws_secret_access_key")
}

/// The SDK's `isAssumeRoleProfile`: `role_arn` with exactly one of `source_profile` and
/// `credential_source`.
fn is_assume_role(p: &Section) -> bool {
    has(p, "role_arn") && (has(p, "source_profile") != has(p, "credential_source"))
}

/// The SDK's `isCredentialSourceWithoutRoleArn`.
fn is_source_without_role(p: &Section) -> bool {
    !has(p, "role_arn") && has(p, "credential_source")
}

/// The credentials of profile `name`. `visited` are the source profiles followed so far (the
/// profile the chain started from is not among them, as in the SDK).
pub(crate) fn resolve_profile(
    chain: &Chain<'_>,
    name: &str,
    visited: &[String],
    assume_role_call: bool,
) -> Result<Resolved, SourceError> {
    let found = chain.files.profile(name);
    let data = found.clone().unwrap_or_default();
    let get = |k: &str| data.get(k).cloned();
    let static_creds = || {
        Resolved::fixed(AwsCredentials {
            access_key_id: get("aws_access_key_id").unwrap_or_default(),
            secret_access_key: get("aws_secret_access_key").unwrap_or_default(),
            session_token: get("aws_session_token"),
        })
    };
    if !visited.is_empty() && is_static(&data) {
        return Ok(static_creds());
    }
    if assume_role_call || is_assume_role(&data) {
        return assume_role(chain, name, &data, visited);
    }
    if is_static(&data) {
        return Ok(static_creds());
    }
    if let (Some(file), Some(role)) = (get("web_identity_token_file"), get("role_arn")) {
        let session = get("role_session_name")
            .or_else(|| (chain.env)("AWS_ROLE_SESSION_NAME").filter(|v| !v.is_empty()))
            .unwrap_or_else(|| format!("aws-sdk-js-session-{}", crate::util::now_ms()));
        let endpoint = sts::endpoint(chain.env, chain.region);
        return sts::assume_role_with_web_identity(&file, &role, &session, &endpoint, chain.cancel);
    }
    if let Some(command) = get("credential_process") {
        return sources::from_process(name, &command, chain.cancel);
    }
    if sso::is_sso_profile(&data) {
        return sso::from_sso(
            name,
            &data,
            chain.files,
            chain.env,
            chain.home,
            chain.cancel,
        );
    }
    if has(&data, "login_session") {
        return Err(SourceError::Failed(format!(
            "the AWS profile \"{name}\" uses login_session (`aws login`), which pi-rpc does not support; export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (e.g. `aws configure export-credentials`)"
        )));
    }
    Err(SourceError::Failed(if found.is_some() {
        format!(
            "Could not resolve credentials using profile: [{name}] in configuration/credentials file(s)."
        )
    } else {
        String::new()
    }))
}

/// The SDK's `resolveAssumeRoleCredentials`.
fn assume_role(
    chain: &Chain<'_>,
    name: &str,
    data: &Section,
    visited: &[String],
) -> Result<Resolved, SourceError> {
    let source_profile = data.get("source_profile");
    if let Some(source) = source_profile {
        if visited.contains(source) {
            return Err(SourceError::Failed(format!(
                "Detected a cycle attempting to resolve credentials for profile {}. Profiles visited: {}",
                chain.profile,
                visited.join(", ")
            )));
        }
    }
    let credential_source = match source_profile {
        Some(_) => None,
        None => {
            let cs = data.get("credential_source").cloned().unwrap_or_default();
            if !matches!(
                cs.as_str(),
                "EcsContainer" | "Ec2InstanceMetadata" | "Environment"
            ) {
                return Err(SourceError::Failed(format!(
                    "Unsupported credential source in profile {name}. Got {cs}, expected EcsContainer or Ec2InstanceMetadata or Environment."
                )));
            }
            Some(cs)
        }
    };
    let source = || -> Result<Resolved, SourceError> {
        match (source_profile, &credential_source) {
            (Some(source), _) => {
                let mut next = visited.to_vec();
                next.push(source.clone());
                let source_data = chain.files.profile(source).unwrap_or_default();
                resolve_profile(chain, source, &next, is_source_without_role(&source_data))
            }
            (None, Some(cs)) => from_credential_source(chain, cs),
            (None, None) => Err(SourceError::Failed(String::new())),
        }
    };
    if is_source_without_role(data) {
        return source();
    }
    if data.contains_key("mfa_serial") {
        return Err(SourceError::Fatal(format!(
            "Profile {name} requires multi-factor authentication, but no MFA code callback was provided."
        )));
    }
    let role_arn = data.get("role_arn").cloned().unwrap_or_default();
    let session_name = data
        .get("role_session_name")
        .cloned()
        .unwrap_or_else(|| format!("aws-sdk-js-{}", crate::util::now_ms()));
    let duration = duration_seconds(data.get("duration_seconds").map(String::as_str));
    let source_creds = source()?;
    let params = sts::AssumeRole {
        role_arn: &role_arn,
        session_name: &session_name,
        duration_seconds: &duration,
        external_id: data.get("external_id").map(String::as_str),
    };
    let endpoint = sts::endpoint(chain.env, chain.sts_region);
    sts::assume_role(
        &params,
        &source_creds.creds,
        &endpoint,
        chain.sts_region,
        chain.now_secs,
        chain.cancel,
    )
}

/// `parseInt(duration_seconds || "3600", 10)` as the query serializes it.
fn duration_seconds(value: Option<&str>) -> String {
    let text = value
        .filter(|v| !v.is_empty())
        .unwrap_or("3600")
        .trim_start();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.strip_prefix('+').unwrap_or(text)),
    };
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        "NaN".into()
    } else {
        format!("{sign}{}", digits.trim_start_matches('0').max("0"))
    }
}

/// The credentials of a `credential_source` (the SDK's `resolveCredentialSource`).
fn from_credential_source(chain: &Chain<'_>, source: &str) -> Result<Resolved, SourceError> {
    match source {
        "EcsContainer" => sources::from_container(chain.env, chain.cancel),
        "Ec2InstanceMetadata" => {
            sources::from_instance_metadata(chain.env, chain.setting, chain.cancel)
        }
        _ => {
            let var = |n: &str| (chain.env)(n).filter(|v| !v.is_empty());
            match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
                (Some(id), Some(secret)) => Ok(Resolved {
                    creds: AwsCredentials {
                        access_key_id: id,
                        secret_access_key: secret,
                        session_token: var("AWS_SESSION_TOKEN"),
                    },
                    expires_ms: var("AWS_CREDENTIAL_EXPIRATION")
                        .and_then(|e| super::cache::parse_expiration(&e)),
                }),
                _ => Err(SourceError::Failed(
                    "Unable to find environment variable credentials.".into(),
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_parse_int() {
        assert_eq!(duration_seconds(None), "3600");
        assert_eq!(duration_seconds(Some("900")), "900");
        assert_eq!(duration_seconds(Some("1200s")), "1200");
        assert_eq!(duration_seconds(Some("x")), "NaN");
        assert_eq!(duration_seconds(Some("0042")), "42");
    }
}
