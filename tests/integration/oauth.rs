//! OAuth refresh through the real binary (providers-catalog.md §5.2–5.3): an expired anthropic
//! OAuth entry in auth.json, a scripted token endpoint on 127.0.0.1 (reached through the test
//! override `PI_RPC_OAUTH_ORIGIN`) and a scripted LLM that logs the headers it receives.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::support::raw_server::{RawServer, Reply};
use crate::support::run::{run_prompt, LONG};
use crate::support::Agent;

const TOKEN_URL: &str = "https://platform.claude.com/v1/oauth/token";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn expired_auth() -> Value {
    json!({
        "openai": {"type": "api_key", "key": "sk-openai"},
        "anthropic": {
            "type": "oauth",
            "refresh": "rt-old",
            "access": "sk-ant-oat01-old",
            "expires": 1_000,
            "note": {"kept": true}
        }
    })
}

fn token_reply(access: &str, refresh: &str) -> Reply {
    let body = json!({"access_token": access, "refresh_token": refresh, "expires_in": 3600});
    Reply::status(200, "application/json", body.to_string().as_bytes())
}

/// An agent on the anthropic provider (its base URL pointed at `llm`) with `auth` as auth.json.
fn agent(llm: &RawServer, token: &RawServer, auth: &Value) -> crate::support::agent::AgentBuilder {
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
            json!({"providers": {"anthropic": {"baseUrl": llm.base_url()}}}),
        ))
        .settings(json!({"retry": {"enabled": false}}))
        .agent_file("auth.json", &auth.to_string())
        .env("PI_RPC_OAUTH_ORIGIN", &token.base_url())
        // A stored credential owns the provider: never used.
        .env("ANTHROPIC_API_KEY", "sk-env-key")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn lock_dir(agent_dir: &Path) -> PathBuf {
    let real = std::fs::canonicalize(agent_dir.join("auth.json")).unwrap();
    PathBuf::from(format!("{}.lock", real.display()))
}

fn message_end(records: &[Value]) -> &Value {
    records
        .iter()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .unwrap_or_else(|| panic!("no assistant message_end in {records:#?}"))
}

fn body_json(logged: &crate::support::raw_server::Logged) -> Value {
    serde_json::from_slice(logged.body.as_deref().unwrap()).unwrap()
}

#[test]
fn an_expired_token_is_refreshed_persisted_and_used() {
    let token = RawServer::start(vec![token_reply("sk-ant-oat01-new", "rt-new")]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let mut a = agent(&llm, &token, &expired_auth()).spawn();
    let before = now_ms();
    let records = run_prompt(&mut a, "p1", "hello");
    let after = now_ms();
    assert_eq!(message_end(&records)["message"]["stopReason"], "stop");

    // The token request: pi's JSON body, once.
    let reqs = token.requests();
    assert_eq!(reqs.len(), 1, "{reqs:#?}");
    assert!(
        reqs[0].head.starts_with("POST /v1/oauth/token HTTP/1.1"),
        "{}",
        reqs[0].head
    );
    assert_eq!(
        body_json(&reqs[0]),
        json!({"grant_type": "refresh_token", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e", "refresh_token": "rt-old"})
    );

    // auth.json: the entry merged (unknown fields kept), the other entry untouched, pi's layout.
    let path = a.agent_dir.join("auth.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("{\n  \"openai\": {\n    \"type\": \"api_key\""),
        "{text}"
    );
    let stored = read_json(&path);
    let expires = stored["anthropic"]["expires"].as_u64().unwrap();
    assert!(
        (before + 3_600_000 - 300_000..=after + 3_600_000 - 300_000).contains(&expires),
        "expires {expires} not now + 1 h - 5 min"
    );
    assert_eq!(
        stored,
        json!({
            "openai": {"type": "api_key", "key": "sk-openai"},
            "anthropic": {
                "type": "oauth",
                "refresh": "rt-new",
                "access": "sk-ant-oat01-new",
                "expires": expires,
                "note": {"kept": true}
            }
        })
    );
    assert!(!lock_dir(&a.agent_dir).exists(), "the lock is released");

    // The LLM request carried the new token.
    let head = &llm.requests()[0].head;
    assert!(head.contains("sk-ant-oat01-new"), "{head}");
    assert!(!head.contains("sk-ant-oat01-old") && !head.contains("sk-env-key"));

    // The next turn uses the refreshed token from memory: no second refresh.
    llm.push(Reply::text(&["Again"]));
    run_prompt(&mut a, "p2", "again");
    assert_eq!(token.requests().len(), 1);
    assert!(llm.requests()[1].head.contains("sk-ant-oat01-new"));
}

#[test]
fn a_failed_refresh_fails_the_request_with_pis_message_and_keeps_the_entry() {
    let token = RawServer::start(vec![Reply::status(
        400,
        "application/json",
        br#"{"error":"invalid_grant"}"#,
    )]);
    let llm = RawServer::start(vec![]);
    let auth = expired_auth();
    let mut a = agent(&llm, &token, &auth).spawn();
    let records = run_prompt(&mut a, "p1", "hello");
    let end = message_end(&records);
    assert_eq!(end["message"]["stopReason"], "error");
    assert_eq!(
        end["message"]["errorMessage"],
        format!(
            "OAuth refresh failed for anthropic: Anthropic token refresh request failed. url={TOKEN_URL}; details=Error: HTTP request failed. status=400; url={TOKEN_URL}; body={{\"error\":\"invalid_grant\"}}"
        )
    );
    assert!(records.iter().any(|r| r["type"] == "agent_end"));
    assert!(records.iter().any(|r| r["type"] == "agent_settled"));
    assert!(llm.requests().is_empty(), "no request without a credential");
    assert_eq!(read_json(&a.agent_dir.join("auth.json")), auth);
    assert!(!lock_dir(&a.agent_dir).exists());
}

#[test]
fn an_unreachable_token_endpoint_is_fetch_failed() {
    let token = RawServer::start(vec![]);
    let llm = RawServer::start(vec![]);
    let closed = format!("http://127.0.0.1:{}", crate::support::llm::closed_port());
    let mut a = agent(&llm, &token, &expired_auth())
        .env("PI_RPC_OAUTH_ORIGIN", &closed)
        .spawn();
    let records = run_prompt(&mut a, "p1", "hello");
    let msg = message_end(&records)["message"]["errorMessage"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with(&format!(
            "OAuth refresh failed for anthropic: Anthropic token refresh request failed. url={TOKEN_URL}; details=TypeError: fetch failed; cause="
        )),
        "{msg}"
    );
}

#[test]
fn a_refresh_waits_for_the_lock_and_uses_what_the_holder_wrote() {
    let token = RawServer::start(vec![]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let mut a = agent(&llm, &token, &expired_auth()).spawn();
    // Another process (pi) holds the lock while it refreshes.
    let lock = lock_dir(&a.agent_dir);
    std::fs::create_dir(&lock).unwrap();
    a.send(json!({"id": "p1", "type": "prompt", "message": "hello"}));
    std::thread::sleep(Duration::from_millis(600));
    assert!(llm.requests().is_empty(), "waits for the lock");
    let mut refreshed = expired_auth();
    refreshed["anthropic"]["access"] = json!("sk-ant-oat01-theirs");
    refreshed["anthropic"]["refresh"] = json!("rt-theirs");
    refreshed["anthropic"]["expires"] = json!(now_ms() + 3_600_000);
    std::fs::write(
        a.agent_dir.join("auth.json"),
        serde_json::to_string_pretty(&refreshed).unwrap(),
    )
    .unwrap();
    std::fs::remove_dir(&lock).unwrap();
    a.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    assert!(
        token.requests().is_empty(),
        "the rotated token is not spent again"
    );
    assert!(llm.requests()[0].head.contains("sk-ant-oat01-theirs"));
    assert_eq!(read_json(&a.agent_dir.join("auth.json")), refreshed);
}

#[test]
fn two_processes_refresh_once_and_both_use_the_new_token() {
    // The token endpoint answers slowly, so the second process finds the lock held; a second
    // refresh would get "script exhausted" (500) and fail its run.
    let token = RawServer::start(vec![token_reply("sk-ant-oat01-new", "rt-new")
        .writes_at(vec![12])
        .pause(Duration::from_millis(700))]);
    let llm = RawServer::start(vec![Reply::text(&["One"]), Reply::text(&["Two"])]);
    let mut a = agent(&llm, &token, &expired_auth()).spawn();
    let mut b = agent(&llm, &token, &expired_auth())
        .env("PI_CODING_AGENT_DIR", &a.agent_dir.to_string_lossy())
        .spawn();
    a.send(json!({"id": "a1", "type": "prompt", "message": "one"}));
    b.send(json!({"id": "b1", "type": "prompt", "message": "two"}));
    let ra = a.wait_for_timeout(
        json!({"type": "message_end", "message": {"role": "assistant"}}),
        LONG,
    );
    let rb = b.wait_for_timeout(
        json!({"type": "message_end", "message": {"role": "assistant"}}),
        LONG,
    );
    assert_eq!(
        ra["message"]["stopReason"],
        "stop",
        "{ra:#} {:#?}",
        token.requests()
    );
    assert_eq!(rb["message"]["stopReason"], "stop", "{rb:#}");
    assert_eq!(token.requests().len(), 1, "{:#?}", token.requests());
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.head.contains("sk-ant-oat01-new")));
    let stored = read_json(&a.agent_dir.join("auth.json"));
    assert_eq!(stored["anthropic"]["refresh"], "rt-new");
    assert!(!lock_dir(&a.agent_dir).exists());
}

#[test]
fn a_stale_lock_left_by_a_dead_process_is_taken_over() {
    let token = RawServer::start(vec![token_reply("sk-ant-oat01-new", "rt-new")]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let mut a = agent(&llm, &token, &expired_auth()).spawn();
    let lock = lock_dir(&a.agent_dir);
    std::fs::create_dir(&lock).unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::open(&lock)
        .unwrap()
        .set_times(
            std::fs::FileTimes::new()
                .set_modified(old)
                .set_accessed(old),
        )
        .unwrap();
    let records = run_prompt(&mut a, "p1", "hello");
    assert_eq!(message_end(&records)["message"]["stopReason"], "stop");
    assert_eq!(token.requests().len(), 1);
    assert!(!lock.exists());
}

/// A models.json provider `id` (Anthropic Messages, so the scripted LLM's SSE fits) with one
/// model, for OAuth providers the built-in catalog does not carry here.
fn custom_provider(id: &str, llm: &RawServer) -> Value {
    json!({"providers": {id: {
        "baseUrl": llm.base_url(), "api": "anthropic-messages",
        "models": [{"id": "m1", "name": "M1", "reasoning": false, "input": ["text"],
                    "contextWindow": 100000, "maxTokens": 4096,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]
    }}})
}

fn custom_agent(
    provider: &str,
    llm: &RawServer,
    token: &RawServer,
    auth: &Value,
) -> crate::support::agent::AgentBuilder {
    Agent::builder()
        .no_default_args()
        .args(["--provider", provider, "--model", "m1", "--no-session"])
        .models(Some(custom_provider(provider, llm)))
        .settings(json!({"retry": {"enabled": false}}))
        .agent_file("auth.json", &auth.to_string())
        .env("PI_RPC_OAUTH_ORIGIN", &token.base_url())
}

#[test]
fn xai_refresh_is_a_form_post_and_keeps_an_unrotated_refresh_token() {
    let token = RawServer::start(vec![Reply::status(
        200,
        "application/json",
        br#"{"access_token":"xai-new","expires_in":7200}"#,
    )]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let auth =
        json!({"xai": {"type": "oauth", "access": "xai-old", "refresh": "xr/1+", "expires": 5}});
    let mut a = custom_agent("xai", &llm, &token, &auth).spawn();
    let before = now_ms();
    let records = run_prompt(&mut a, "p1", "hello");
    let after = now_ms();
    assert_eq!(message_end(&records)["message"]["stopReason"], "stop");
    let req = &token.requests()[0];
    assert!(
        req.head.starts_with("POST /oauth2/token HTTP/1.1"),
        "{}",
        req.head
    );
    let head = req.head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/x-www-form-urlencoded"));
    assert!(head.contains("accept: application/json"));
    assert_eq!(
        String::from_utf8(req.body.clone().unwrap()).unwrap(),
        "grant_type=refresh_token&client_id=b1a00492-073a-47ea-816f-4c329264a828&refresh_token=xr%2F1%2B"
    );
    let stored = read_json(&a.agent_dir.join("auth.json"));
    let expires = stored["xai"]["expires"].as_u64().unwrap();
    assert!((before + 7_200_000 - 300_000..=after + 7_200_000 - 300_000).contains(&expires));
    assert_eq!(
        stored,
        json!({"xai": {"type": "oauth", "access": "xai-new", "refresh": "xr/1+", "expires": expires}})
    );
    assert!(llm.requests()[0].head.contains("xai-new"));
}

#[test]
fn copilot_exchanges_the_github_token_and_stores_the_available_models() {
    let token_body = json!({
        "token": "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;x=y",
        "expires_at": 4_000_000_000u64
    });
    let models_body = json!({"data": [
        {"id": "gpt-a", "model_picker_enabled": true, "policy": {"state": "enabled"}},
        {"id": "gpt-b", "model_picker_enabled": false},
        {"id": "gpt-c", "model_picker_enabled": true, "capabilities": {"supports": {"tool_calls": false}}}
    ]});
    let token = RawServer::start(vec![
        Reply::status(200, "application/json", token_body.to_string().as_bytes()),
        Reply::status(200, "application/json", models_body.to_string().as_bytes()),
    ]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let auth = json!({"github-copilot": {
        "type": "oauth", "refresh": "gho_github", "access": "old", "expires": 0,
        "enterpriseUrl": "", "availableModelIds": ["stale"]
    }});
    let mut a = custom_agent("github-copilot", &llm, &token, &auth).spawn();
    let records = run_prompt(&mut a, "p1", "hello");
    assert_eq!(message_end(&records)["message"]["stopReason"], "stop");
    let reqs = token.requests();
    assert_eq!(reqs.len(), 2, "{reqs:#?}");
    let exchange = reqs[0].head.to_ascii_lowercase();
    assert!(
        exchange.starts_with("get /copilot_internal/v2/token http/1.1"),
        "{exchange}"
    );
    for h in [
        "authorization: bearer gho_github",
        "user-agent: githubcopilotchat/0.35.0",
        "editor-version: vscode/1.107.0",
        "editor-plugin-version: copilot-chat/0.35.0",
        "copilot-integration-id: vscode-chat",
    ] {
        assert!(exchange.contains(h), "{h} in {exchange}");
    }
    let list = reqs[1].head.to_ascii_lowercase();
    assert!(list.starts_with("get /models http/1.1"), "{list}");
    assert!(list.contains(
        "authorization: bearer tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;x=y"
    ));
    assert!(list.contains("x-github-api-version: 2026-06-01"));
    let stored = read_json(&a.agent_dir.join("auth.json"));
    assert_eq!(
        stored,
        json!({"github-copilot": {
            "type": "oauth", "refresh": "gho_github",
            "access": "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;x=y",
            "expires": 4_000_000_000_000u64 - 300_000,
            "enterpriseUrl": "", "availableModelIds": ["gpt-a"]
        }})
    );
}

#[test]
fn kimi_retries_a_5xx_and_sends_the_token_as_an_explicit_bearer_header() {
    let token = RawServer::start(vec![
        Reply::status(503, "text/plain", b"busy"),
        Reply::status(
            200,
            "application/json",
            br#"{"access_token":"kimi-new","refresh_token":"kr2","expires_in":900}"#,
        ),
    ]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let auth = json!({"kimi-coding": {"type": "oauth", "access": "kimi-old", "refresh": "kr1", "expires": 5}});
    let mut a = custom_agent("kimi-coding", &llm, &token, &auth).spawn();
    let records = run_prompt(&mut a, "p1", "hello");
    assert_eq!(message_end(&records)["message"]["stopReason"], "stop");
    let reqs = token.requests();
    assert_eq!(reqs.len(), 2, "one retry after the 503");
    for r in &reqs {
        assert!(r.head.starts_with("POST /api/oauth/token "), "{}", r.head);
        assert_eq!(
            String::from_utf8(r.body.clone().unwrap()).unwrap(),
            "client_id=17e5f671-d194-4dfb-9706-5516cb48c098&grant_type=refresh_token&refresh_token=kr1"
        );
    }
    let head = llm.requests()[0].head.to_ascii_lowercase();
    assert!(head.contains("authorization: bearer kimi-new"), "{head}");
    assert!(!head.contains("x-api-key"), "{head}");
    let stored = read_json(&a.agent_dir.join("auth.json"));
    assert_eq!(stored["kimi-coding"]["refresh"], "kr2");
}

#[test]
fn an_abort_is_not_held_up_by_a_refresh_waiting_for_the_lock() {
    let token = RawServer::start(vec![]);
    let llm = RawServer::start(vec![]);
    let mut a = agent(&llm, &token, &expired_auth()).spawn();
    let lock = lock_dir(&a.agent_dir);
    std::fs::create_dir(&lock).unwrap();
    a.send(json!({"id": "p1", "type": "prompt", "message": "hello"}));
    a.seek_past_response("p1");
    std::thread::sleep(Duration::from_millis(300));
    // Within 10 s, though the lock would be waited for 30 s.
    a.send(json!({"id": "ab", "type": "abort"}));
    let end = a.wait_for_timeout(
        json!({"type": "message_end", "message": {"role": "assistant"}}),
        Duration::from_secs(10),
    );
    assert_eq!(end["message"]["stopReason"], "aborted");
    a.wait_for_timeout(json!({"type": "agent_settled"}), Duration::from_secs(10));
    assert!(llm.requests().is_empty() && token.requests().is_empty());
    std::fs::remove_dir(&lock).unwrap();
}

/// A models.json provider with `"oauth": "radius"` is another Radius gateway (pi's
/// `configureRadiusProviders`): its expired entry is refreshed at that gateway (`/v1/oauth/token`
/// on the gateway's origin; the `/gw` path is dropped, as `new URL` does), persisted under its
/// own key, and the new token is used for its models.
#[test]
fn a_custom_radius_gateway_refreshes_its_entry_at_its_gateway() {
    let token = RawServer::start(vec![Reply::status(
        200,
        "application/json",
        br#"{"access_token":"corp-new","refresh_token":"corp-r2","expires_in":3600,"scope":"gateway offline_access"}"#,
    )]);
    let llm = RawServer::start(vec![Reply::text(&["Hi"])]);
    let auth = json!({"corp": {"type": "oauth", "access": "corp-old", "refresh": "corp-r1", "expires": 5, "scope": "gateway offline_access"}});
    let models = json!({"providers": {"corp": {
        "baseUrl": "https://corp.example/gw/v1", "oauth": "radius", "name": "Corp",
        "models": [{"id": "m1", "api": "anthropic-messages", "baseUrl": llm.base_url(),
                    "reasoning": false, "input": ["text"], "contextWindow": 100000, "maxTokens": 4096}]
    }}});
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--provider", "corp", "--model", "m1", "--no-session"])
        .models(Some(models))
        .settings(json!({"retry": {"enabled": false}}))
        .agent_file("auth.json", &auth.to_string())
        .env("PI_RPC_OAUTH_ORIGIN", &token.base_url())
        .spawn();
    let before = now_ms();
    let records = run_prompt(&mut a, "p1", "hello");
    let after = now_ms();
    assert_eq!(message_end(&records)["message"]["stopReason"], "stop");
    let req = &token.requests()[0];
    assert!(
        req.head.starts_with("POST /v1/oauth/token HTTP/1.1"),
        "{}",
        req.head
    );
    assert_eq!(
        String::from_utf8(req.body.clone().unwrap()).unwrap(),
        "grant_type=refresh_token&client_id=pi-gateway&refresh_token=corp-r1"
    );
    let stored = read_json(&a.agent_dir.join("auth.json"));
    let expires = stored["corp"]["expires"].as_u64().unwrap();
    assert!((before + 3_600_000 - 60_000..=after + 3_600_000 - 60_000).contains(&expires));
    assert_eq!(
        stored,
        json!({"corp": {"type": "oauth", "access": "corp-new", "refresh": "corp-r2",
                        "expires": expires, "scope": "gateway offline_access"}})
    );
    assert!(llm.requests()[0].head.contains("corp-new"));
}

/// A custom Radius gateway's models (its models-store.json list) are `pi-messages` models at
/// the gateway's API base URL, sent the provider's OAuth access token as the bearer.
#[test]
fn a_custom_radius_gateway_model_uses_pi_messages_with_its_token() {
    let llm = RawServer::start(vec![Reply::status(
        500,
        "application/json",
        br#"{"error":{"message":"scripted"}}"#,
    )]);
    let store = json!({"corp": {"checkedAt": 1, "models": [{
        "id": "g1", "name": "G1", "reasoning": false, "input": ["text"], "contextWindow": 100000,
        "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "api": "pi-messages", "provider": "corp", "baseUrl": format!("{}/v1", llm.base_url())}]}});
    let auth = json!({"corp": {"type": "oauth", "access": "corp-token", "refresh": "r",
                               "expires": 9_999_999_999_999u64}});
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--provider", "corp", "--model", "g1", "--no-session"])
        .models(Some(json!({"providers": {"corp": {
            "baseUrl": "https://corp.example/v1", "oauth": "radius"}}})))
        .settings(json!({"retry": {"enabled": false}}))
        .agent_file("auth.json", &auth.to_string())
        .agent_file("models-store.json", &store.to_string())
        .spawn();
    let records = run_prompt(&mut a, "p1", "hello");
    assert_eq!(message_end(&records)["message"]["stopReason"], "error");
    let head = &llm.requests()[0].head;
    assert!(head.starts_with("POST /v1/messages HTTP/1.1"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer corp-token"),
        "{head}"
    );
}
