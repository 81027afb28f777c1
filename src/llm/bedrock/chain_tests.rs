//! The SDK credential chain's profile sources against scripted servers: `role_arn` profiles
//! (source profiles, credential sources, cycles, MFA), the process-wide cache, the container
//! endpoint's retries and the instance metadata keys of the config file.

use super::{env, http_reply, serve};
use crate::cancel::CancelToken;
use crate::llm::bedrock::credentials::{self, Auth};
use crate::llm::bedrock::sigv4::{self, AwsCredentials};

/// A home directory with `~/.aws/config` (and credentials) written.
fn home_with(config: &str, credentials: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("pi-rpc-chain-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(dir.join(".aws")).unwrap();
    std::fs::write(dir.join(".aws/config"), config).unwrap();
    std::fs::write(dir.join(".aws/credentials"), credentials).unwrap();
    let home = dir.to_string_lossy().into_owned();
    (dir, home)
}

fn sts_answer(id: &str, expiration: &str) -> Vec<u8> {
    let xml = format!(
        "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn></AssumedRoleUser><Credentials><AccessKeyId>{id}</AccessKeyId><SecretAccessKey>role-secret</SecretAccessKey><SessionToken>role-token</SessionToken><Expiration>{expiration}</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>"
    );
    http_reply("200 OK", &[("content-type", "text/xml")], xml.as_bytes())
}

fn head_value<'a>(request: &'a str, name: &str) -> Option<&'a str> {
    request.split("\r\n").find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn a_role_chain_assumes_the_role_with_the_source_profiles_keys_once() {
    let (url, server) = serve(vec![sts_answer("ASIAROLE", "2099-01-01T00:00:00Z")]);
    let (dir, home) = home_with(
        "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/bedrock\nsource_profile = base\nexternal_id = ext-1\nrole_session_name = pi-session\nduration_seconds = 900\nregion = eu-central-1\n",
        "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = base-secret\n",
    );
    let vars = [
        ("AWS_PROFILE", "dev"),
        ("AWS_ENDPOINT_URL_STS", url.as_str()),
    ];
    let e = env(&vars);
    let auth = credentials::auth(None, &e, Some(&home), "us-west-2", &CancelToken::new());
    let role = AwsCredentials {
        access_key_id: "ASIAROLE".into(),
        secret_access_key: "role-secret".into(),
        session_token: Some("role-token".into()),
    };
    assert_eq!(auth, Ok(Auth::SigV4(role.clone())));
    // The second lookup is served from the cache (the server answers only once).
    let again = credentials::auth(None, &e, Some(&home), "us-west-2", &CancelToken::new());
    assert_eq!(again, Ok(Auth::SigV4(role)));
    let seen = server.join().unwrap();
    let req = &seen[0];
    let (head, body) = req.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("POST / HTTP/1.1\r\n"), "{head}");
    assert_eq!(
        body,
        "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbedrock&RoleSessionName=pi-session&DurationSeconds=900&ExternalId=ext-1"
    );
    // Signed for STS in the profile's region with the source profile's keys.
    let date = head_value(head, "x-amz-date").unwrap();
    let host = head_value(head, "host").unwrap();
    let signed = sigv4::sign(
        &sigv4::SigningInput {
            method: "POST",
            path: "/",
            query: "",
            headers: &[
                (
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
                ("x-amz-date".into(), date.into()),
                ("host".into(), host.into()),
            ],
            payload_hash: &sigv4::sha256_hex(body.as_bytes()),
            amz_date: date,
            region: "eu-central-1",
            service: "sts",
        },
        &AwsCredentials {
            access_key_id: "AKIDBASE".into(),
            secret_access_key: "base-secret".into(),
            session_token: None,
        },
    );
    assert_eq!(
        head_value(head, "authorization"),
        Some(signed.authorization.as_str())
    );
    assert!(signed
        .authorization
        .contains("/eu-central-1/sts/aws4_request"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn role_profile_errors_are_the_sdks() {
    let (dir, home) = home_with(
        "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n[profile mfa]\nrole_arn = arn:aws:iam::1:role/m\nsource_profile = base\nmfa_serial = arn:aws:iam::1:mfa/me\n[profile odd]\nrole_arn = arn:aws:iam::1:role/o\ncredential_source = Laptop\n",
        "[base]\naws_access_key_id = K\naws_secret_access_key = S\n",
    );
    let run = |profile: &str| {
        let vars = [
            ("AWS_PROFILE", profile),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ];
        let e = env(&vars);
        credentials::auth(None, &e, Some(&home), "us-east-1", &CancelToken::new())
    };
    assert_eq!(
        run("a"),
        Err("Could not load credentials from any providers: Detected a cycle attempting to resolve credentials for profile a. Profiles visited: b, a".into())
    );
    assert_eq!(
        run("mfa"),
        Err("Profile mfa requires multi-factor authentication, but no MFA code callback was provided.".into())
    );
    assert_eq!(
        run("odd"),
        Err("Could not load credentials from any providers: Unsupported credential source in profile odd. Got Laptop, expected EcsContainer or Ec2InstanceMetadata or Environment.".into())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn credential_source_environment_feeds_assume_role() {
    let (url, server) = serve(vec![sts_answer("ASIAENV", "2099-01-01T00:00:00Z")]);
    let (dir, home) = home_with(
        "[profile ci]\nrole_arn = arn:aws:iam::1:role/ci\ncredential_source = Environment\n",
        "",
    );
    let vars = [
        ("AWS_PROFILE", "ci"),
        ("AWS_ENDPOINT_URL", url.as_str()),
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SECRET_ACCESS_KEY", "env-secret"),
        ("AWS_SESSION_TOKEN", "env-token"),
    ];
    // Called as `fromIni` is: pi itself would sign with the environment's keys directly.
    let chain_env = env(&vars);
    let files = super::super::profiles::SharedFiles::load(&chain_env, Some(&home));
    let none = |_: &str| None;
    let chain = credentials::Chain {
        env: &chain_env,
        files: &files,
        home: Some(&home),
        region: "us-east-1",
        sts_region: "us-east-1",
        profile: "ci",
        setting: &none,
        now_secs: 1_440_938_160,
        cancel: &CancelToken::new(),
    };
    let r = super::super::assume_role::resolve_profile(&chain, "ci", &[], false).unwrap();
    assert_eq!(r.creds.access_key_id, "ASIAENV");
    assert_eq!(r.expires_ms, Some(4_070_908_800_000));
    let seen = server.join().unwrap();
    assert_eq!(
        head_value(&seen[0], "x-amz-security-token"),
        Some("env-token")
    );
    assert!(head_value(&seen[0], "authorization")
        .unwrap()
        .starts_with("AWS4-HMAC-SHA256 Credential=AKIDENV/20150830/us-east-1/sts/aws4_request"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_container_endpoint_is_tried_four_times_a_second_apart() {
    let failed = || http_reply("500 Internal Server Error", &[], b"busy");
    let creds = br#"{"AccessKeyId":"ASIAC","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"}"#;
    let (url, server) = serve(vec![
        failed(),
        failed(),
        failed(),
        http_reply("200 OK", &[("content-type", "application/json")], creds),
    ]);
    let full = format!("{url}/retry-creds");
    let vars = [("AWS_CONTAINER_CREDENTIALS_FULL_URI", full.as_str())];
    let auth = credentials::auth(None, &env(&vars), None, "us-east-1", &CancelToken::new());
    assert!(
        matches!(&auth, Ok(Auth::SigV4(c)) if c.access_key_id == "ASIAC"),
        "{auth:?}"
    );
    assert_eq!(server.join().unwrap().len(), 4);
}

#[test]
fn the_config_file_names_the_instance_metadata_endpoint() {
    let (url, server) = serve(vec![
        http_reply("200 OK", &[], b"tok"),
        http_reply("200 OK", &[], b"role"),
        http_reply(
            "200 OK",
            &[],
            br#"{"AccessKeyId":"ASIAIMDS","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"}"#,
        ),
    ]);
    let (dir, home) = home_with(
        &format!("[default]\nec2_metadata_service_endpoint = {url}\nec2_metadata_service_endpoint_mode = IPv6\n"),
        "",
    );
    let auth = credentials::auth(
        None,
        &env(&[]),
        Some(&home),
        "us-east-1",
        &CancelToken::new(),
    );
    assert!(
        matches!(&auth, Ok(Auth::SigV4(c)) if c.access_key_id == "ASIAIMDS"),
        "{auth:?}"
    );
    assert_eq!(server.join().unwrap().len(), 3);
    // A bad mode in the file is the SDK's error.
    std::fs::write(
        dir.join(".aws/config"),
        "[default]\nec2_metadata_service_endpoint_mode = IPv5\n",
    )
    .unwrap();
    let auth = credentials::auth(
        None,
        &env(&[]),
        Some(&home),
        "us-east-1",
        &CancelToken::new(),
    );
    assert_eq!(
        auth,
        Err("Unsupported endpoint mode: IPv5. Select from IPv4,IPv6".into())
    );
    let _ = std::fs::remove_dir_all(&dir);
}
