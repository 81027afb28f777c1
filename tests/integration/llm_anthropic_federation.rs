//! Anthropic workload identity federation through the binary (providers-catalog.md §2.2): with
//! only `ANTHROPIC_FEDERATION_RULE_ID`, `ANTHROPIC_ORGANIZATION_ID` and
//! `ANTHROPIC_IDENTITY_TOKEN_FILE` set, the identity token is exchanged at
//! `<baseUrl>/v1/oauth/token` (the Anthropic SDK's `oidcFederationProvider`) and the access
//! token goes on the Messages request as `Authorization: Bearer`. One scripted server on
//! 127.0.0.1 (the anthropic provider's baseUrl, rerouted by models.json) serves both.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::support::agent::AgentBuilder;
use crate::support::raw_server::{Logged, RawServer, Reply};
use crate::support::run::{run_prompt, LONG};
use crate::support::tempdir::TempDir;
use crate::support::Agent;

const IDENTITY_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaSJ9.c2ln";

/// An agent on anthropic/claude-haiku-4-5 with the federation variables set (and no key).
fn agent(server: &RawServer, token_file: &str) -> AgentBuilder {
    Agent::builder()
        .no_default_args()
        .args([
            "--provider",
            "anthropic",
            "--model",
            "claude-haiku-4-5",
            "--no-session",
        ])
        .models(Some(
            json!({"providers": {"anthropic": {"baseUrl": server.base_url()}}}),
        ))
        .settings(json!({"retry": {"enabled": false}}))
        .env("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_01test")
        .env("ANTHROPIC_ORGANIZATION_ID", "org-0001")
        .env("ANTHROPIC_IDENTITY_TOKEN_FILE", token_file)
}

fn token_reply(access: &str) -> Reply {
    let body = json!({"access_token": access, "expires_in": 3600, "token_type": "Bearer"});
    Reply::status(200, "application/json", body.to_string().as_bytes())
}

/// Request line and lower-cased headers.
fn head(logged: &Logged) -> (String, HashMap<String, String>) {
    let mut lines = logged.head.lines();
    let request_line = lines.next().unwrap_or_default().to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (request_line, headers)
}

fn body_json(logged: &Logged) -> Value {
    serde_json::from_slice(logged.body.as_deref().unwrap_or_default()).unwrap()
}

fn last_assistant(records: &[Value]) -> Value {
    records
        .iter()
        .rev()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .map(|r| r["message"].clone())
        .unwrap_or_else(|| panic!("no assistant message_end in {records:#?}"))
}

#[test]
fn federation_exchanges_the_identity_token_and_reuses_the_access_token() {
    let dir = TempDir::new("wif");
    let token_file = dir.write("token", &format!("{IDENTITY_TOKEN}\n"));
    let server = RawServer::start(vec![
        token_reply("at-federated-1"),
        Reply::text(&["Hello"]),
        Reply::text(&["Again"]),
    ]);
    let mut a = agent(&server, &token_file.to_string_lossy())
        .env("ANTHROPIC_WORKSPACE_ID", "wrkspc_01")
        .spawn();

    // The provider is available with only the federation variables.
    let models = a.request("m", json!({"type": "get_available_models"}));
    let anthropic = models["data"]["models"].as_array().map_or(0, |m| {
        m.iter().filter(|m| m["provider"] == "anthropic").count()
    });
    assert!(anthropic > 0, "{models}");

    let first = run_prompt(&mut a, "p1", "hello");
    let msg = last_assistant(&first);
    assert_eq!(msg["stopReason"], "stop", "{msg}");
    assert_eq!(msg["content"], json!([{"type": "text", "text": "Hello"}]));
    let second = run_prompt(&mut a, "p2", "again");
    assert_eq!(last_assistant(&second)["stopReason"], "stop");

    // One exchange, two Messages requests.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    let (line, h) = head(&reqs[0]);
    assert_eq!(line, "POST /v1/oauth/token HTTP/1.1");
    assert_eq!(h["content-type"], "application/json");
    assert_eq!(
        h["anthropic-beta"],
        "oauth-2025-04-20,oidc-federation-2026-04-01"
    );
    assert!(!h.contains_key("authorization") && !h.contains_key("x-api-key"));
    assert_eq!(
        body_json(&reqs[0]),
        json!({
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": IDENTITY_TOKEN,
            "federation_rule_id": "fdrl_01test",
            "organization_id": "org-0001",
            "workspace_id": "wrkspc_01"
        })
    );
    // Member order as the SDK builds it.
    let keys: Vec<String> = body_json(&reqs[0])
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "grant_type",
            "assertion",
            "federation_rule_id",
            "organization_id",
            "workspace_id"
        ]
    );
    for req in &reqs[1..] {
        let (line, h) = head(req);
        assert_eq!(line, "POST /v1/messages?beta=true HTTP/1.1");
        assert_eq!(h["authorization"], "Bearer at-federated-1");
        assert!(!h.contains_key("x-api-key"), "{h:?}");
        assert!(
            h["anthropic-beta"].ends_with("oauth-2025-04-20"),
            "{}",
            h["anthropic-beta"]
        );
        assert!(!h["anthropic-beta"].contains("claude-code"));
    }
    a.close_stdin();
}

#[test]
fn a_failed_exchange_is_the_replys_error() {
    let dir = TempDir::new("wif-fail");
    let token_file = dir.write("token", IDENTITY_TOKEN);
    let body = json!({"error": "invalid_grant", "error_description": "rule does not match",
        "assertion": IDENTITY_TOKEN});
    let server = RawServer::start(vec![Reply::http(
        401,
        &[
            ("Content-Type", "application/json"),
            ("request-id", "req_0123"),
        ],
        body.to_string().as_bytes(),
        crate::support::raw_server::Framing::Length,
    )]);
    let mut a = agent(&server, &token_file.to_string_lossy()).spawn();
    let records = run_prompt(&mut a, "p1", "hello");
    let msg = last_assistant(&records);
    assert_eq!(msg["stopReason"], "error");
    assert_eq!(
        msg["errorMessage"],
        "Token exchange failed with status 401 (request-id req_0123): \
         {\"error\":\"invalid_grant\",\"error_description\":\"rule does not match\"} \
         Ensure your federation rule matches your identity token. If your federation rule is \
         scoped to multiple workspaces, set the ANTHROPIC_WORKSPACE_ID environment variable, \
         the 'workspace_id' config key, or the `workspaceId` option. View your authentication \
         events in the Workload identity page of Claude Console for more details."
    );
    // No Messages request went out.
    assert_eq!(server.requests().len(), 1);

    // A missing identity token file: nothing is sent.
    let mut b = agent(&server, "/nonexistent/pi-rpc/token").spawn();
    let records = run_prompt(&mut b, "p1", "hello");
    assert_eq!(
        last_assistant(&records)["errorMessage"],
        "Failed to read identity token file at /nonexistent/pi-rpc/token: Error: ENOENT: no such \
         file or directory, open '/nonexistent/pi-rpc/token'"
    );
    assert_eq!(server.requests().len(), 1);
    a.close_stdin();
    b.close_stdin();
}

#[test]
fn abort_during_a_stalled_exchange_ends_the_run_at_once() {
    let dir = TempDir::new("wif-abort");
    let token_file = dir.write("token", IDENTITY_TOKEN);
    let server = RawServer::start(vec![token_reply("at-never").stall_at(0)]);
    let mut a = agent(&server, &token_file.to_string_lossy()).spawn();
    let from = a.records.len();
    a.send(json!({"id": "p1", "type": "prompt", "message": "hello"}));
    server.wait_requests(1, LONG);
    a.send(json!({"id": "ab", "type": "abort"}));
    a.response("ab");
    let records = a.records[from..].to_vec();
    let msg = last_assistant(&records);
    assert_eq!(msg["stopReason"], "aborted", "{msg}");
    assert_eq!(msg["errorMessage"], "Request aborted");
    assert!(records
        .iter()
        .any(|r| r == &json!({"type": "agent_settled", "aborted": true})));
    // The exchange's connection was dropped, and nothing else was sent.
    server.wait_closed_by_client(0, LONG);
    assert_eq!(server.requests().len(), 1);
    a.close_stdin();
}

#[test]
fn a_401_from_the_messages_api_drops_the_token() {
    let dir = TempDir::new("wif-401");
    let token_file = dir.write("token", IDENTITY_TOKEN);
    let rejected = json!({"type": "error",
        "error": {"type": "authentication_error", "message": "invalid bearer token"}});
    let server = RawServer::start(vec![
        token_reply("at-revoked"),
        Reply::status(401, "application/json", rejected.to_string().as_bytes()),
        token_reply("at-fresh"),
        Reply::text(&["Back"]),
    ]);
    let mut a = agent(&server, &token_file.to_string_lossy()).spawn();
    let first = last_assistant(&run_prompt(&mut a, "p1", "hello"));
    assert_eq!(first["stopReason"], "error", "{first}");
    // The token looked fresh (an hour left), but the next request exchanges again.
    let second = last_assistant(&run_prompt(&mut a, "p2", "again"));
    assert_eq!(second["stopReason"], "stop", "{second}");
    let reqs = server.requests();
    let lines: Vec<String> = reqs.iter().map(|r| head(r).0).collect();
    assert_eq!(
        lines,
        [
            "POST /v1/oauth/token HTTP/1.1",
            "POST /v1/messages?beta=true HTTP/1.1",
            "POST /v1/oauth/token HTTP/1.1",
            "POST /v1/messages?beta=true HTTP/1.1",
        ]
    );
    assert_eq!(head(&reqs[1]).1["authorization"], "Bearer at-revoked");
    assert_eq!(head(&reqs[3]).1["authorization"], "Bearer at-fresh");
    a.close_stdin();
}
