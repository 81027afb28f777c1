//! Bedrock's AWS credential chain through the binary: a `role_arn` profile (STS `AssumeRole`),
//! SSO profiles (the cached token, its renewal at SSO-OIDC, `GetRoleCredentials`), the
//! process-wide cache of temporary credentials (reused on the next prompt, fetched again
//! inside the SDK's 5-minute window), a stored `auth.json` `env`, and aborts of stalled STS and
//! SSO requests. Each Bedrock request's signature is recomputed from the logged request with
//! the credentials the fake service handed out.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::llm_bedrock::{
    bedrock_agent, bedrock_agent_with, expected_authorization, header, headers, last_assistant,
    metadata_credentials, no_retry, ok_reply, stream_reply, text_frames, SECRET,
};
use crate::support::raw_server::{Framing, RawServer, Reply};
use crate::support::run::{run_prompt, LONG};
use crate::support::{Agent, TempDir};

/// `YYYY-MM-DDTHH:MM:SSZ`, `secs` from now.
fn iso_in(secs: u64) -> String {
    let ms = pi_rpc::util::now_ms() + secs * 1000;
    let iso = pi_rpc::util::iso_from_ms(ms);
    format!("{}Z", &iso[..19])
}

/// A home directory with `.aws/config` (its path is HOME for the agent).
fn aws_home(config: &str) -> TempDir {
    let dir = TempDir::new("aws-home");
    std::fs::create_dir_all(dir.path().join(".aws/sso/cache")).unwrap();
    std::fs::write(dir.path().join(".aws/config"), config).unwrap();
    dir
}

fn sts_reply(id: &str, expiration: &str) -> Reply {
    let xml = format!(
        "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>{id}</AccessKeyId><SecretAccessKey>{SECRET}</SecretAccessKey><SessionToken>role-token</SessionToken><Expiration>{expiration}</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>"
    );
    Reply::http(
        200,
        &[("Content-Type", "text/xml")],
        xml.as_bytes(),
        Framing::Length,
    )
}

/// Runs a prompt and checks that its Bedrock request (the `i`-th the server logged) was signed
/// with `akid` / [`SECRET`] and carried `token`.
fn prompt_signed_with(agent: &mut Agent, server: &RawServer, i: usize, akid: &str, token: &str) {
    let records = run_prompt(agent, &format!("p{i}"), "hi");
    let msg = last_assistant(&records);
    assert_eq!(msg["stopReason"], "stop", "{msg}");
    let logged = server.requests();
    let req = &logged[i];
    let h = headers(&req.head);
    assert_eq!(header(&h, "x-amz-security-token"), Some(token));
    let body = req.body.clone().unwrap();
    assert_eq!(
        header(&h, "authorization").unwrap(),
        expected_authorization(&req.head, &body, "eu-west-3")
            .replace("Credential=AKIDEXAMPLE/", &format!("Credential={akid}/"))
    );
}

fn two_text_replies() -> Vec<Reply> {
    vec![
        stream_reply(&text_frames(&["one"]), vec![]),
        stream_reply(&text_frames(&["two"]), vec![]),
    ]
}

#[test]
fn a_role_profile_signs_with_the_assumed_role_and_is_not_asked_again() {
    let sts = RawServer::start(vec![sts_reply("ASIAROLEEXAMPLE", &iso_in(3600))]);
    let home = aws_home(
        "[profile base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = base-secret\n\n[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/bedrock\nsource_profile = base\nrole_session_name = pi-session\n",
    );
    let server = RawServer::start(two_text_replies());
    let sts_url = sts.base_url();
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_PROFILE", "dev"),
            ("AWS_ENDPOINT_URL_STS", sts_url.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    prompt_signed_with(&mut agent, &server, 0, "ASIAROLEEXAMPLE", "role-token");
    prompt_signed_with(&mut agent, &server, 1, "ASIAROLEEXAMPLE", "role-token");
    // One AssumeRole for both prompts, signed for STS with the source profile's keys.
    let asked = sts.requests();
    assert_eq!(asked.len(), 1);
    let auth = header(&headers(&asked[0].head), "authorization")
        .unwrap()
        .to_string();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDBASE/")
            && auth.contains("/eu-west-3/sts/aws4_request"),
        "{auth}"
    );
    let form = String::from_utf8(asked[0].body.clone().unwrap()).unwrap();
    assert_eq!(form, "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbedrock&RoleSessionName=pi-session&DurationSeconds=3600");
    agent.close_stdin();
}

#[test]
fn container_credentials_are_reused_by_the_next_prompt() {
    let container = RawServer::start(vec![ok_reply(&metadata_credentials())]);
    let full_uri = format!("{}/creds", container.base_url());
    let server = RawServer::start(two_text_replies());
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    prompt_signed_with(
        &mut agent,
        &server,
        0,
        "ASIAREMOTEEXAMPLE",
        "remote-session-token",
    );
    prompt_signed_with(
        &mut agent,
        &server,
        1,
        "ASIAREMOTEEXAMPLE",
        "remote-session-token",
    );
    assert_eq!(container.requests().len(), 1);
    agent.close_stdin();
}

#[test]
fn credentials_inside_the_refresh_window_are_fetched_again() {
    // Valid for two more minutes: inside the SDK's 5-minute window, so each prompt asks again.
    let creds = json!({
        "AccessKeyId": "ASIAREMOTEEXAMPLE",
        "SecretAccessKey": SECRET,
        "Token": "remote-session-token",
        "Expiration": iso_in(120),
    })
    .to_string();
    let container = RawServer::start(vec![
        ok_reply(creds.as_bytes()),
        ok_reply(&metadata_credentials()),
    ]);
    let full_uri = format!("{}/creds", container.base_url());
    let server = RawServer::start(two_text_replies());
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    prompt_signed_with(
        &mut agent,
        &server,
        0,
        "ASIAREMOTEEXAMPLE",
        "remote-session-token",
    );
    prompt_signed_with(
        &mut agent,
        &server,
        1,
        "ASIAREMOTEEXAMPLE",
        "remote-session-token",
    );
    assert_eq!(container.requests().len(), 2);
    agent.close_stdin();
}

const SSO_CONFIG: &str = "[profile sso-dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = BedrockUser\n\n[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://corp.awsapps.com/start\n";

fn sso_token_path(home: &TempDir, id: &str) -> std::path::PathBuf {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, id.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    home.path().join(format!(".aws/sso/cache/{hex}.json"))
}

fn role_credentials_reply() -> Reply {
    let expiration = pi_rpc::util::now_ms() + 3_600_000;
    ok_reply(
        json!({"roleCredentials": {
            "accessKeyId": "ASIASSOEXAMPLE",
            "secretAccessKey": SECRET,
            "sessionToken": "sso-session-token",
            "expiration": expiration,
        }})
        .to_string()
        .as_bytes(),
    )
}

#[test]
fn an_sso_profile_signs_with_the_roles_credentials() {
    let home = aws_home(SSO_CONFIG);
    std::fs::write(
        sso_token_path(&home, "corp"),
        json!({"accessToken": "cached-access-token", "expiresAt": iso_in(3600), "region": "eu-west-1", "startUrl": "https://corp.awsapps.com/start"}).to_string(),
    )
    .unwrap();
    let portal = RawServer::start(vec![role_credentials_reply()]);
    let server = RawServer::start(two_text_replies());
    let portal_url = portal.base_url();
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_PROFILE", "sso-dev"),
            ("AWS_ENDPOINT_URL_SSO", portal_url.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    prompt_signed_with(
        &mut agent,
        &server,
        0,
        "ASIASSOEXAMPLE",
        "sso-session-token",
    );
    prompt_signed_with(
        &mut agent,
        &server,
        1,
        "ASIASSOEXAMPLE",
        "sso-session-token",
    );
    let asked = portal.requests();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].head.starts_with(
            "GET /federation/credentials?role_name=BedrockUser&account_id=111122223333 HTTP/1.1\r\n"
        ),
        "{}",
        asked[0].head
    );
    assert_eq!(
        header(&headers(&asked[0].head), "x-amz-sso_bearer_token"),
        Some("cached-access-token")
    );
    agent.close_stdin();
}

#[test]
fn an_expiring_sso_token_is_renewed_and_written_back() {
    let home = aws_home(SSO_CONFIG);
    let path = sso_token_path(&home, "corp");
    std::fs::write(
        &path,
        json!({"startUrl": "https://corp.awsapps.com/start", "region": "eu-west-1", "accessToken": "old-access-token", "expiresAt": iso_in(60), "clientId": "cid", "clientSecret": "csecret", "refreshToken": "old-refresh"}).to_string(),
    )
    .unwrap();
    // One server for SSO-OIDC and the portal (`AWS_ENDPOINT_URL` covers both).
    let sso = RawServer::start(vec![
        ok_reply(
            json!({"accessToken": "new-access-token", "expiresIn": 28800, "refreshToken": "new-refresh", "tokenType": "Bearer"})
                .to_string()
                .as_bytes(),
        ),
        role_credentials_reply(),
    ]);
    let server = RawServer::start(vec![stream_reply(&text_frames(&["ok"]), vec![])]);
    let sso_url = sso.base_url();
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_PROFILE", "sso-dev"),
            ("AWS_ENDPOINT_URL", sso_url.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    prompt_signed_with(
        &mut agent,
        &server,
        0,
        "ASIASSOEXAMPLE",
        "sso-session-token",
    );
    let asked = sso.requests();
    assert!(
        asked[0].head.starts_with("POST /token HTTP/1.1\r\n"),
        "{}",
        asked[0].head
    );
    let sent: Value = serde_json::from_slice(asked[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"clientId": "cid", "clientSecret": "csecret", "grantType": "refresh_token", "refreshToken": "old-refresh"})
    );
    assert_eq!(
        header(&headers(&asked[1].head), "x-amz-sso_bearer_token"),
        Some("new-access-token")
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["accessToken"], "new-access-token");
    assert_eq!(written["refreshToken"], "new-refresh");
    assert_eq!(written["clientId"], "cid");
    let expires = pi_rpc::util::ms_from_iso(written["expiresAt"].as_str().unwrap()).unwrap();
    assert!(
        expires > pi_rpc::util::now_ms() + 7 * 3_600_000,
        "{written}"
    );
    agent.close_stdin();
}

#[test]
fn a_stored_aws_profile_wins_over_the_environments_keys() {
    let home = aws_home("[profile stored]\naws_access_key_id = AKIDEXAMPLE\n");
    std::fs::write(
        home.path().join(".aws/credentials"),
        format!("[stored]\naws_secret_access_key = {SECRET}\naws_session_token = stored-token\n"),
    )
    .unwrap();
    let auth = json!({"amazon-bedrock": {"type": "api_key", "env": {"AWS_PROFILE": "stored", "AWS_REGION": "eu-west-3"}}}).to_string();
    let server = RawServer::start(vec![stream_reply(&text_frames(&["ok"]), vec![])]);
    let (mut agent, _) = bedrock_agent_with(
        &server,
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT"),
            ("AWS_SECRET_ACCESS_KEY", "environment-secret"),
            ("AWS_REGION", "us-east-2"),
        ],
        no_retry(),
        &[("auth.json", auth.as_str())],
    );
    // The stored region wins too: the signature's scope is eu-west-3.
    prompt_signed_with(&mut agent, &server, 0, "AKIDEXAMPLE", "stored-token");
    agent.close_stdin();
}

/// Starts a prompt whose credential request stalls at `service`, aborts it once the request
/// arrived, and checks the run ends as aborted at once, with no Bedrock request.
fn abort_while_stalled(env_var: &str, config: &str) {
    let stalled = Reply::http(
        200,
        &[("Content-Type", "text/xml")],
        b"<x/>",
        Framing::Length,
    )
    .stall_at(0);
    let service = RawServer::start(vec![stalled]);
    let home = aws_home(config);
    std::fs::write(
        sso_token_path(&home, "corp"),
        json!({"accessToken": "t", "expiresAt": iso_in(3600)}).to_string(),
    )
    .unwrap();
    let server = RawServer::start(vec![]);
    let url = service.base_url();
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_PROFILE", "dev"),
            (env_var, url.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    agent.send(json!({"id": "p", "type": "prompt", "message": "hi"}));
    service.wait_requests(1, LONG);
    let sent = Instant::now();
    agent.send(json!({"id": "a", "type": "abort"}));
    let end = agent.wait_for_timeout(json!({"type": "agent_end"}), LONG);
    assert!(
        sent.elapsed() < Duration::from_millis(900),
        "{:?}",
        sent.elapsed()
    );
    let msg = end["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap();
    assert_eq!(msg["stopReason"], "aborted", "{msg}");
    assert!(server.requests().is_empty());
    agent.close_stdin();
}

#[test]
fn an_abort_ends_a_stalled_assume_role_request() {
    abort_while_stalled(
        "AWS_ENDPOINT_URL_STS",
        "[profile base]\naws_access_key_id = K\naws_secret_access_key = S\n[profile dev]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n",
    );
}

#[test]
fn an_abort_ends_a_stalled_sso_request() {
    abort_while_stalled(
        "AWS_ENDPOINT_URL_SSO",
        "[profile dev]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://x/start\n",
    );
}
