//! Bedrock's AWS credential chain through the binary: a `role_arn` profile (STS `AssumeRole`),
//! the process-wide cache of temporary credentials (reused on the next prompt, fetched again
//! inside the SDK's 5-minute window), and the abort of a stalled STS request. Each Bedrock request's signature is recomputed from the logged request with
//! the credentials the fake service handed out.

use std::time::{Duration, Instant};

use serde_json::json;

use super::llm_bedrock::{
    bedrock_agent, expected_authorization, header, headers, last_assistant, metadata_credentials,
    no_retry, ok_reply, stream_reply, text_frames, SECRET,
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
