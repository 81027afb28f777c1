//! Amazon Bedrock (`bedrock-converse-stream`) through the binary against a raw scripted server
//! speaking `application/vnd.amazon.eventstream` (frames built here, CRCs included): the
//! request sent (path with the double-encodable model id, SigV4 headers whose signature is
//! recomputed here from the logged request, or a bearer token; the body), the events and final
//! message for text, reasoning and tool use, pi's error texts (HTTP errors by
//! `x-amzn-errortype`, stream exceptions, a corrupt CRC), the retry of a throttled request and
//! an abort mid-stream. No recording of pi exists for this API (the mock cannot speak the
//! event stream to pi's SDK); the shapes are pinned from pi 1.6.0's source.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::raw_server::{Framing, RawServer, Reply};
use crate::support::run::{run_prompt, LONG};
use crate::support::Agent;

// ------------------------------------------------------------------------------ frames

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (k, v) in headers {
        h.push(k.len() as u8);
        h.extend_from_slice(k.as_bytes());
        h.push(7);
        h.extend_from_slice(&(v.len() as u16).to_be_bytes());
        h.extend_from_slice(v.as_bytes());
    }
    let total = 16 + h.len() + payload.len();
    let mut out = Vec::new();
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let c = crc32(&out);
    out.extend_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    let c = crc32(&out);
    out.extend_from_slice(&c.to_be_bytes());
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

pub(crate) fn text_frames(text: &[&str]) -> Vec<u8> {
    let mut b = event("messageStart", json!({"role": "assistant"}));
    for t in text {
        b.extend(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": t}, "p": "abcdefgh"}),
        ));
    }
    b.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    b.extend(event("messageStop", json!({"stopReason": "end_turn"})));
    b.extend(event(
        "metadata",
        json!({"usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}, "metrics": {"latencyMs": 5}}),
    ));
    b
}

/// A 200 event-stream reply, chunked at `cuts` (mid-frame cuts included).
pub(crate) fn stream_reply(body: &[u8], cuts: Vec<usize>) -> Reply {
    Reply::http(
        200,
        &[("Content-Type", "application/vnd.amazon.eventstream")],
        body,
        Framing::ChunkedAt(cuts),
    )
}

fn error_reply(status: u16, error_type: &str, message: &str) -> Reply {
    Reply::http(
        status,
        &[
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", error_type),
        ],
        json!({ "message": message }).to_string().as_bytes(),
        Framing::Length,
    )
}

// ------------------------------------------------------------------------------ the agent

pub(crate) const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// An agent with the built-in amazon-bedrock provider rerouted to `server`, the first Claude
/// Sonnet 4.5 model selected; `env` makes the provider available.
pub(crate) fn bedrock_agent(
    server: &RawServer,
    env: &[(&str, &str)],
    settings: Value,
) -> (Agent, String) {
    bedrock_agent_with(server, env, settings, &[])
}

/// [`bedrock_agent`] with files in the agent directory (e.g. `auth.json`).
pub(crate) fn bedrock_agent_with(
    server: &RawServer,
    env: &[(&str, &str)],
    settings: Value,
    agent_files: &[(&str, &str)],
) -> (Agent, String) {
    let models = json!({"providers": {"amazon-bedrock": {"baseUrl": server.base_url()}}});
    let mut b = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(Some(models))
        .settings(settings);
    for (rel, content) in agent_files {
        b = b.agent_file(rel, content);
    }
    for (k, v) in env {
        b = b.env(k, v);
    }
    let mut agent = b.spawn();
    let listed = agent.request("m", json!({"type": "get_available_models"}));
    let id = listed["data"]["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["provider"] == "amazon-bedrock")
        .filter_map(|m| m["id"].as_str())
        .find(|id| id.contains("anthropic.claude-sonnet-4-5"))
        .expect("a Claude Sonnet 4.5 model on amazon-bedrock")
        .to_string();
    let set = agent.request(
        "s",
        json!({"type": "set_model", "provider": "amazon-bedrock", "modelId": id}),
    );
    assert_eq!(set["success"], true, "{set}");
    (agent, id)
}

pub(crate) fn no_retry() -> Value {
    json!({"retry": {"enabled": false}})
}

fn sigv4_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_REGION", "eu-west-3"),
    ]
}

pub(crate) fn last_assistant(records: &[Value]) -> Value {
    records
        .iter()
        .rev()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .map(|r| r["message"].clone())
        .expect("an assistant message")
}

pub(crate) fn headers(head: &str) -> Vec<(String, String)> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

pub(crate) fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha256(b: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, b).as_ref())
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// Recomputes the SigV4 signature of a logged request from its head and body.
pub(crate) fn expected_authorization(head: &str, body: &[u8], region: &str) -> String {
    let h = headers(head);
    let auth = header(&h, "authorization").unwrap();
    let signed = auth
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap();
    let path = head.lines().next().unwrap().split(' ').nth(1).unwrap();
    let canonical_path: String = path
        .split('/')
        .map(|seg| seg.replace('%', "%25"))
        .collect::<Vec<_>>()
        .join("/");
    let canonical_headers: String = signed
        .split(';')
        .map(|n| format!("{n}:{}\n", header(&h, n).unwrap()))
        .collect();
    let canonical = format!(
        "POST\n{canonical_path}\n\n{canonical_headers}\n{signed}\n{}",
        sha256(body)
    );
    let date = header(&h, "x-amz-date").unwrap();
    let day = &date[..8];
    let scope = format!("{day}/{region}/bedrock/aws4_request");
    let sts = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        sha256(canonical.as_bytes())
    );
    let k = hmac(format!("AWS4{SECRET}").as_bytes(), day.as_bytes());
    let k = hmac(
        &hmac(&hmac(&k, region.as_bytes()), b"bedrock"),
        b"aws4_request",
    );
    format!(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{scope}, SignedHeaders={signed}, Signature={}",
        hex(&hmac(&k, sts.as_bytes()))
    )
}

// ------------------------------------------------------------------------------ tests

#[test]
fn a_signed_request_streams_text_split_mid_frame() {
    let body = text_frames(&["Hel", "lo ", "Bedrock"]);
    let cuts = vec![3, 17, 60, 61, 140, body.len() - 5];
    let server = RawServer::start(vec![stream_reply(&body, cuts)]);
    let (mut agent, id) = bedrock_agent(&server, &sigv4_env(), no_retry());
    let records = run_prompt(&mut agent, "p", "hi");
    let msg = last_assistant(&records);
    assert_eq!(msg["stopReason"], "stop", "{msg}");
    assert_eq!(
        msg["content"],
        json!([{"type": "text", "text": "Hello Bedrock"}])
    );
    assert_eq!(msg["api"], "bedrock-converse-stream");
    assert_eq!(msg["usage"]["input"], 12);
    assert_eq!(msg["usage"]["totalTokens"], 15);
    let deltas: Vec<&str> = records
        .iter()
        .filter(|r| r["assistantMessageEvent"]["type"] == "text_delta")
        .filter_map(|r| r["assistantMessageEvent"]["delta"].as_str())
        .collect();
    assert_eq!(deltas, ["Hel", "lo ", "Bedrock"]);

    let logged = server.requests();
    let req = &logged[0];
    let encoded = id.replace(':', "%3A");
    assert!(
        req.head.starts_with(&format!(
            "POST /model/{encoded}/converse-stream HTTP/1.1\r\n"
        )),
        "{}",
        req.head
    );
    let h = headers(&req.head);
    let body = req.body.clone().unwrap();
    assert_eq!(header(&h, "content-type"), Some("application/json"));
    assert_eq!(
        header(&h, "x-amz-content-sha256"),
        Some(sha256(&body).as_str())
    );
    let date = header(&h, "x-amz-date").unwrap();
    assert!(
        date.len() == 16 && date.ends_with('Z') && date.as_bytes()[8] == b'T',
        "{date}"
    );
    assert_eq!(
        header(&h, "authorization").unwrap(),
        expected_authorization(&req.head, &body, "eu-west-3")
    );
    assert!(header(&h, "authorization").unwrap().contains(
        "SignedHeaders=amz-sdk-invocation-id;amz-sdk-request;content-type;host;x-amz-content-sha256;x-amz-date,"
    ));
    let sent: Value = serde_json::from_slice(&body).unwrap();
    let keys: Vec<&String> = sent.as_object().unwrap().keys().collect();
    assert_eq!(keys[..3], ["messages", "system", "inferenceConfig"]);
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}])
    );
    assert_eq!(
        sent["system"][1],
        json!({"cachePoint": {"type": "default"}})
    );
    assert!(sent["inferenceConfig"]["maxTokens"].as_u64().unwrap() > 0);
    agent.close_stdin();
}

#[test]
fn reasoning_and_a_tool_call_then_the_tool_result_goes_back() {
    let mut first = event("messageStart", json!({"role": "assistant"}));
    first.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think."}}}),
    ));
    first.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "SIG"}}}),
    ));
    first.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    first.extend(event("contentBlockStart", json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_A1", "name": "bash"}}})));
    first.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"command\":"}}}),
    ));
    first.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"echo hi\"}"}}}),
    ));
    first.extend(event("contentBlockStop", json!({"contentBlockIndex": 1})));
    first.extend(event("messageStop", json!({"stopReason": "tool_use"})));
    let server = RawServer::start(vec![
        stream_reply(&first, vec![]),
        stream_reply(&text_frames(&["done"]), vec![]),
    ]);
    let (mut agent, _) = bedrock_agent(
        &server,
        &[("AWS_BEARER_TOKEN_BEDROCK", "br-token-123")],
        no_retry(),
    );
    let records = run_prompt(&mut agent, "p", "list");
    let calls: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .map(|r| &r["message"])
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0]["content"],
        json!([{"type": "thinking", "thinking": "Think.", "thinkingSignature": "SIG"},
            {"type": "toolCall", "id": "tooluse_A1", "name": "bash", "arguments": {"command": "echo hi"}}])
    );
    assert_eq!(calls[0]["stopReason"], "toolUse");
    assert_eq!(calls[1]["content"][0]["text"], "done");
    let logged = server.requests();
    assert_eq!(logged.len(), 2);
    let h = headers(&logged[0].head);
    assert_eq!(header(&h, "authorization"), Some("Bearer br-token-123"));
    assert_eq!(header(&h, "x-amz-date"), None);
    let second: Value = serde_json::from_slice(logged[1].body.as_ref().unwrap()).unwrap();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1],
        json!({"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "SIG"}}},
            {"toolUse": {"toolUseId": "tooluse_A1", "name": "bash", "input": {"command": "echo hi"}}}]})
    );
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(
        msgs[2]["content"][0]["toolResult"]["toolUseId"],
        "tooluse_A1"
    );
    assert_eq!(msgs[2]["content"][0]["toolResult"]["status"], "success");
    agent.close_stdin();
}

#[test]
fn errors_are_worded_and_retried_as_pi_does() {
    let mut partial = event("messageStart", json!({"role": "assistant"}));
    partial.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "par"}}),
    ));
    let mut exc = partial.clone();
    exc.extend(exception(
        "validationException",
        "Input is too long for requested model.",
    ));
    let mut corrupt = partial.clone();
    let n = corrupt.len();
    corrupt[n - 1] ^= 0xFF;
    let server = RawServer::start(vec![
        error_reply(
            403,
            "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "You don't have access to the model with the specified model ID.",
        ),
        stream_reply(&exc, vec![]),
        stream_reply(&corrupt, vec![]),
        stream_reply(&partial, vec![]),
    ]);
    let (mut agent, _) = bedrock_agent(&server, &sigv4_env(), no_retry());
    let expect = [
        "AccessDeniedException: You don't have access to the model with the specified model ID.",
        "Validation error: Input is too long for requested model.",
        "The message checksum (",
        "Bedrock stream ended without a stop reason",
    ];
    for (i, want) in expect.iter().enumerate() {
        let msg = last_assistant(&run_prompt(&mut agent, &format!("p{i}"), "hi"));
        assert_eq!(msg["stopReason"], "error", "{msg}");
        let err = msg["errorMessage"].as_str().unwrap();
        assert!(err.starts_with(want), "{i}: {err}");
    }
    agent.close_stdin();

    // Throttling is retried (pi's retryable patterns), then the answer comes.
    let server = RawServer::start(vec![
        error_reply(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        stream_reply(&text_frames(&["ok"]), vec![]),
    ]);
    let settings = json!({"retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 1, "maxAgentDelayMs": 500}});
    let (mut agent, _) = bedrock_agent(&server, &sigv4_env(), settings);
    let records = run_prompt(&mut agent, "p", "hi");
    let retry = records
        .iter()
        .find(|r| r["type"] == "auto_retry_start")
        .expect("a retry");
    assert_eq!(
        retry["errorMessage"],
        "Throttling error: Too many requests, please wait before trying again."
    );
    assert_eq!(last_assistant(&records)["content"][0]["text"], "ok");
    assert_eq!(server.requests().len(), 2);
    agent.close_stdin();
}

#[test]
fn an_abort_mid_stream_ends_the_run() {
    let mut body = event("messageStart", json!({"role": "assistant"}));
    body.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
    ));
    let stall = body.len();
    body.extend(text_frames(&["never"]));
    let reply = Reply::http(
        200,
        &[("Content-Type", "application/vnd.amazon.eventstream")],
        &body,
        Framing::Close,
    );
    let at = reply.head_len() + stall;
    let server = RawServer::start(vec![reply.stall_at(at)]);
    let (mut agent, _) = bedrock_agent(&server, &sigv4_env(), no_retry());
    agent.send(json!({"id": "p", "type": "prompt", "message": "hi"}));
    agent.wait_for_timeout(
        json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta"}}),
        LONG,
    );
    let sent = Instant::now();
    agent.send(json!({"id": "a", "type": "abort"}));
    let end = agent.wait_for_timeout(json!({"type": "agent_end"}), LONG);
    let settled = agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    assert_eq!(settled["aborted"], true);
    assert!(sent.elapsed() < Duration::from_secs(10));
    let msg = end["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap();
    assert_eq!(msg["stopReason"], "aborted", "{msg}");
    assert_eq!(msg["errorMessage"], "Request was aborted");
    assert_eq!(msg["content"], json!([{"type": "text", "text": "Hel"}]));
    server.wait_closed_by_client(0, LONG);
    agent.close_stdin();
}

/// pi 1.6.0's request for the same setup, captured with the conformance runner (its scripted
/// server answered 404, which also pins pi's error text for that body).
const PI_REQUEST: &str = include_str!("../fixtures/bedrock/pi160_request.json");

/// The body with the system prompt text and every `description` string blanked (pi-rpc's own
/// texts).
fn without_texts(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = if k == "description" && v.is_string() {
                        json!("<text>")
                    } else {
                        without_texts(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_texts).collect()),
        other => other.clone(),
    }
}

#[test]
fn the_request_and_a_404_match_pi() {
    let pi: Value = serde_json::from_str(PI_REQUEST).unwrap();
    let server = RawServer::start(vec![Reply::http(
        404,
        &[("Content-Type", "application/json")],
        json!({"error": {"type": "not_found_error", "message": "unknown path /model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"}}).to_string().as_bytes(),
        Framing::Length,
    )]);
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_REGION", "us-west-2"),
    ];
    let models = json!({"providers": {"amazon-bedrock": {"baseUrl": server.base_url()}}});
    let mut b = Agent::builder()
        .no_default_args()
        .args([
            "--no-session",
            "--provider",
            "amazon-bedrock",
            "--model",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ])
        .models(Some(models))
        .settings(no_retry());
    for (k, v) in env {
        b = b.env(k, v);
    }
    let mut agent = b.spawn();
    let msg = last_assistant(&run_prompt(&mut agent, "p", "Hello Bedrock"));
    assert_eq!(msg["errorMessage"], pi["errorMessage"]);
    let req = &server.requests()[0];
    assert!(req.head.starts_with(&format!(
        "POST {} HTTP/1.1\r\n",
        pi["path"].as_str().unwrap()
    )));
    let h = headers(&req.head);
    assert_eq!(
        header(&h, "content-type"),
        pi["headers"]["content-type"].as_str()
    );
    assert_eq!(
        header(&h, "amz-sdk-request"),
        pi["headers"]["amz-sdk-request"].as_str()
    );
    let mut body: Value = serde_json::from_slice(req.body.as_ref().unwrap()).unwrap();
    let mut want = pi["body"].clone();
    for b in [&mut body, &mut want] {
        b["system"][0]["text"] = json!("<system prompt>");
    }
    assert_eq!(without_texts(&body), without_texts(&want));
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&body), keys(&want));
    agent.close_stdin();
}

/// The JSON of the container endpoint and of IMDS: role credentials whose secret is
/// [`SECRET`], so the signature can be recomputed.
pub(crate) fn metadata_credentials() -> Vec<u8> {
    json!({
        "Code": "Success",
        "AccessKeyId": "ASIAREMOTEEXAMPLE",
        "SecretAccessKey": SECRET,
        "Token": "remote-session-token",
        "Expiration": "2030-01-01T00:00:00Z",
    })
    .to_string()
    .into_bytes()
}

pub(crate) fn ok_reply(body: &[u8]) -> Reply {
    Reply::http(
        200,
        &[("Content-Type", "application/json")],
        body,
        Framing::Length,
    )
}

/// The Bedrock request went out signed with the remote source's credentials.
fn assert_signed_with_remote_credentials(server: &RawServer, agent: &mut Agent) {
    let records = run_prompt(agent, "p", "hi");
    let msg = last_assistant(&records);
    assert_eq!(msg["stopReason"], "stop", "{msg}");
    let logged = server.requests();
    let req = &logged[0];
    let h = headers(&req.head);
    let body = req.body.clone().unwrap();
    assert_eq!(
        header(&h, "x-amz-security-token"),
        Some("remote-session-token")
    );
    let auth = header(&h, "authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=ASIAREMOTEEXAMPLE/"),
        "{auth}"
    );
    assert!(auth.contains("x-amz-security-token"), "{auth}");
    assert_eq!(
        auth,
        expected_authorization(&req.head, &body, "eu-west-3")
            .replace("Credential=AKIDEXAMPLE/", "Credential=ASIAREMOTEEXAMPLE/")
    );
}

#[test]
fn container_credentials_sign_the_request() {
    let creds = RawServer::start(vec![ok_reply(&metadata_credentials())]);
    let full_uri = format!("{}/creds", creds.base_url());
    let dir = crate::support::TempDir::new("aws");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "container-auth-token").unwrap();
    let server = RawServer::start(vec![stream_reply(&text_frames(&["ok"]), vec![])]);
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.as_str()),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                token_file.to_str().unwrap(),
            ),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    assert_signed_with_remote_credentials(&server, &mut agent);
    let asked = creds.requests();
    assert!(
        asked[0].head.starts_with("GET /creds HTTP/1.1\r\n"),
        "{}",
        asked[0].head
    );
    assert_eq!(
        header(&headers(&asked[0].head), "authorization"),
        Some("container-auth-token")
    );
    agent.close_stdin();
}

#[test]
fn instance_metadata_credentials_sign_the_request() {
    let imds = RawServer::start(vec![
        ok_reply(b"imds-session-token"),
        ok_reply(b"bedrock-role"),
        ok_reply(&metadata_credentials()),
    ]);
    let dir = crate::support::TempDir::new("aws");
    let missing = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (credentials, config) = (missing("credentials"), missing("config"));
    let endpoint = imds.base_url();
    let server = RawServer::start(vec![stream_reply(&text_frames(&["ok"]), vec![])]);
    // A profile without keys makes the provider available (as in pi); the chain then ends at
    // the instance metadata service.
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("AWS_PROFILE", "ec2"),
            ("AWS_SHARED_CREDENTIALS_FILE", credentials.as_str()),
            ("AWS_CONFIG_FILE", config.as_str()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    assert_signed_with_remote_credentials(&server, &mut agent);
    let asked = imds.requests();
    assert!(asked[0]
        .head
        .starts_with("PUT /latest/api/token HTTP/1.1\r\n"));
    assert_eq!(
        header(
            &headers(&asked[0].head),
            "x-aws-ec2-metadata-token-ttl-seconds"
        ),
        Some("21600")
    );
    assert!(asked[1]
        .head
        .starts_with("GET /latest/meta-data/iam/security-credentials/ HTTP/1.1\r\n"));
    assert!(asked[2]
        .head
        .starts_with("GET /latest/meta-data/iam/security-credentials/bedrock-role HTTP/1.1\r\n"));
    for r in &asked[1..] {
        assert_eq!(
            header(&headers(&r.head), "x-aws-ec2-metadata-token"),
            Some("imds-session-token")
        );
    }
    agent.close_stdin();
}

#[test]
fn without_any_source_the_error_is_the_sdks() {
    let dir = crate::support::TempDir::new("aws");
    let missing = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (credentials, config) = (missing("credentials"), missing("config"));
    let server = RawServer::start(vec![]);
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("AWS_PROFILE", "none"),
            ("AWS_SHARED_CREDENTIALS_FILE", credentials.as_str()),
            ("AWS_CONFIG_FILE", config.as_str()),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    let records = run_prompt(&mut agent, "p", "hi");
    let msg = last_assistant(&records);
    assert_eq!(msg["stopReason"], "error", "{msg}");
    assert_eq!(
        msg["errorMessage"],
        "Could not load credentials from any providers"
    );
    assert!(server.requests().is_empty());
    agent.close_stdin();
}

#[test]
fn an_abort_ends_a_stalled_credentials_request() {
    let stalled = Reply::http(
        200,
        &[("Content-Type", "application/json")],
        &metadata_credentials(),
        Framing::Length,
    )
    .stall_at(0);
    let creds = RawServer::start(vec![stalled]);
    let full_uri = format!("{}/creds", creds.base_url());
    let server = RawServer::start(vec![]);
    let (mut agent, _) = bedrock_agent(
        &server,
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.as_str()),
            ("AWS_REGION", "eu-west-3"),
        ],
        no_retry(),
    );
    agent.send(json!({"id": "p", "type": "prompt", "message": "hi"}));
    creds.wait_requests(1, LONG);
    let sent = Instant::now();
    agent.send(json!({"id": "a", "type": "abort"}));
    let end = agent.wait_for_timeout(json!({"type": "agent_end"}), LONG);
    // Without the abort the lookup would wait out two 1 s timeouts.
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
