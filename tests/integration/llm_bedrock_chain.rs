//! Bedrock's AWS credential chain through the binary: the process-wide cache of temporary
//! credentials (reused on the next prompt, fetched again inside the SDK's 5-minute window).
//! Each Bedrock request's signature is recomputed from the logged request with the
//! credentials the fake service handed out.

use serde_json::json;

use super::llm_bedrock::{
    bedrock_agent, expected_authorization, header, headers, last_assistant, metadata_credentials,
    no_retry, ok_reply, stream_reply, text_frames, SECRET,
};
use crate::support::raw_server::{RawServer, Reply};
use crate::support::run::run_prompt;
use crate::support::Agent;

/// `YYYY-MM-DDTHH:MM:SSZ`, `secs` from now.
fn iso_in(secs: u64) -> String {
    let ms = pi_rpc::util::now_ms() + secs * 1000;
    let iso = pi_rpc::util::iso_from_ms(ms);
    format!("{}Z", &iso[..19])
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
