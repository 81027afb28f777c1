//! The request Bedrock gets (URL, signed headers, bearer) and the events and final message of
//! scripted frame sequences, pinned from pi 1.6.0's `bedrock-converse-stream.js` and the AWS
//! SDK's serializer and event-stream codec.

use serde_json::{json, Value};

use super::eventstream::{event_frame, Frame, HeaderValue};
use super::*;
use crate::llm::model::ModelCost;
use crate::llm::types::{ContentBlock, LlmMessage, StopReason};

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |n| {
        vars.iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.to_string())
    }
}

pub(super) fn model(id: &str) -> Model {
    Model {
        id: id.into(),
        name: "Claude Sonnet 4.5".into(),
        api: "bedrock-converse-stream".into(),
        provider: "amazon-bedrock".into(),
        base_url: "https://bedrock-runtime.us-east-1.amazonaws.com".into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
            tiers: None,
        },
        context_window: 200_000,
        max_tokens: 64_000,
        ..Model::default()
    }
}

fn ctx() -> LlmContext {
    LlmContext {
        system_prompt: "sys".into(),
        messages: vec![LlmMessage::User {
            content: vec![ContentBlock::text("hi")],
            timestamp: 1,
            as_string: true,
        }],
        tools: vec![],
        transcript: None,
        leading_system: None,
    }
}

fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

const MODEL_ID: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
/// 2015-08-30T12:36:00Z.
const NOW: u64 = 1_440_938_160;

#[test]
fn sigv4_request_is_signed_with_the_double_encoded_path() {
    let e = env(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        ("AWS_SESSION_TOKEN", "SESSION"),
        ("AWS_REGION", "us-west-2"),
    ]);
    let opts = StreamOptions {
        headers: vec![
            ("X-Custom".into(), "v".into()),
            ("X-Amz-Date".into(), "forged".into()),
            ("Authorization".into(), "forged".into()),
        ],
        ..StreamOptions::default()
    };
    let r = build_request(&model(MODEL_ID), &ctx(), &opts, &e, None, NOW).unwrap();
    assert_eq!(
        r.url,
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let hash = sigv4::sha256_hex(&r.body);
    assert_eq!(header(&r, "x-amz-date"), Some("20150830T123600Z"));
    assert_eq!(header(&r, "x-amz-content-sha256"), Some(hash.as_str()));
    assert_eq!(header(&r, "x-amz-security-token"), Some("SESSION"));
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    assert_eq!(header(&r, "x-custom"), Some("v"));
    assert_eq!(header(&r, "amz-sdk-request"), Some("attempt=1; max=3"));
    assert_eq!(
        r.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("authorization")
                || n.eq_ignore_ascii_case("x-amz-date"))
            .count(),
        2
    );
    let invocation = header(&r, "amz-sdk-invocation-id").unwrap();
    // The canonical request, written out as the SigV4 rules give it.
    let canonical = format!(
        "POST\n/model/us.anthropic.claude-sonnet-4-5-20250929-v1%253A0/converse-stream\n\n\
         amz-sdk-invocation-id:{invocation}\namz-sdk-request:attempt=1; max=3\n\
         content-type:application/json\nhost:bedrock-runtime.us-west-2.amazonaws.com\n\
         x-amz-content-sha256:{hash}\nx-amz-date:20150830T123600Z\nx-amz-security-token:SESSION\n\
         x-custom:v\n\n\
         amz-sdk-invocation-id;amz-sdk-request;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-custom\n{hash}"
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-west-2/bedrock/aws4_request\n{}",
        sigv4::sha256_hex(canonical.as_bytes())
    );
    let key = |k: &[u8], d: &[u8]| {
        ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, k), d)
            .as_ref()
            .to_vec()
    };
    let k = key(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", b"20150830");
    let k = key(&key(&key(&k, b"us-west-2"), b"bedrock"), b"aws4_request");
    let signature = sigv4::hex(&key(&k, string_to_sign.as_bytes()));
    assert_eq!(
        header(&r, "authorization").unwrap(),
        format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-west-2/bedrock/aws4_request, \
             SignedHeaders=amz-sdk-invocation-id;amz-sdk-request;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-custom, \
             Signature={signature}"
        )
    );
}

#[test]
fn bearer_tokens_are_sent_without_signing() {
    let e = env(&[("AWS_BEARER_TOKEN_BEDROCK", "br-token")]);
    let r = build_request(
        &model(MODEL_ID),
        &ctx(),
        &StreamOptions::default(),
        &e,
        None,
        NOW,
    )
    .unwrap();
    assert_eq!(header(&r, "authorization"), Some("Bearer br-token"));
    assert_eq!(header(&r, "x-amz-date"), None);
    assert_eq!(
        r.url,
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let err = build_request(
        &model(MODEL_ID),
        &ctx(),
        &StreamOptions::default(),
        &env(&[("AWS_EC2_METADATA_DISABLED", "true")]),
        None,
        NOW,
    )
    .unwrap_err();
    assert_eq!(err, credentials::NO_CREDENTIALS);
}

/// Runs frames through the state machine as the exchange does.
fn run(frames: &[Vec<u8>]) -> (AssistantMessage, Vec<Value>, Result<(), String>) {
    let m = model(MODEL_ID);
    let mut events = Vec::new();
    let mut cb = |u: StreamUpdate<'_>| match u {
        StreamUpdate::Start(_) => events.push(json!({"type": "start"})),
        StreamUpdate::Event(_, e) => events.push(e.to_wire()),
    };
    let mut out = StreamedMessage::new(&m, &mut cb);
    let mut state = BedrockStream::new();
    let body: Vec<u8> = frames.concat();
    let mut result = Ok(());
    for f in FrameReader::new(&body[..]) {
        let r = match f {
            Ok(f) => state.handle(&f, &m, &mut out),
            Err(e) => Err(format_error(None, &e.to_string())),
        };
        if let Err(e) = r {
            result = Err(e);
            break;
        }
    }
    if result.is_ok() {
        result = state.finish(&mut out);
    } else {
        state.flush(&mut out);
    }
    (out.msg, events, result)
}

fn ev(t: &str, p: Value) -> Vec<u8> {
    event_frame(t, &p.to_string())
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn text_reasoning_and_tool_use_stream_like_pi() {
    let (msg, events, r) = run(&[
        ev("messageStart", json!({"role": "assistant", "p": "abc"})),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "think"}}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig1"}}}),
        ),
        ev("contentBlockStop", json!({"contentBlockIndex": 0})),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "Hel"}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "lo"}}),
        ),
        ev("contentBlockStop", json!({"contentBlockIndex": 1})),
        ev(
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read"}}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"path\":"}}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"a.txt\"}"}}}),
        ),
        ev("contentBlockStop", json!({"contentBlockIndex": 2})),
        ev("messageStop", json!({"stopReason": "tool_use"})),
        ev(
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15,
            "cacheReadInputTokens": 2, "cacheWriteInputTokens": 3,
            "cacheDetails": [{"ttl": "1h", "inputTokens": 3}]}, "metrics": {"latencyMs": 9}}),
        ),
    ]);
    assert_eq!(r, Ok(()));
    assert_eq!(
        types(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let v = msg.to_value();
    assert_eq!(
        v["content"],
        json!([
            {"type": "thinking", "thinking": "think", "thinkingSignature": "sig1"},
            {"type": "text", "text": "Hello"},
            {"type": "toolCall", "id": "tooluse_1", "name": "read", "arguments": {"path": "a.txt"}}
        ])
    );
    assert_eq!(v["usage"]["input"], 10);
    assert_eq!(v["usage"]["cacheWrite1h"], 3);
    assert_eq!(v["usage"]["totalTokens"], 15);
    assert_eq!(v["stopReason"], "toolUse");
}

#[test]
fn redacted_reasoning_keeps_the_bytes_as_signature() {
    let (msg, events, r) = run(&[
        ev("messageStart", json!({"role": "assistant"})),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AAEC"}}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AwQF"}}}),
        ),
        ev("contentBlockStop", json!({"contentBlockIndex": 0})),
        ev("messageStop", json!({"stopReason": "end_turn"})),
    ]);
    assert_eq!(r, Ok(()));
    assert_eq!(
        types(&events),
        ["start", "thinking_start", "thinking_delta", "thinking_end"]
    );
    assert_eq!(
        msg.to_value()["content"],
        json!([{"type": "thinking", "thinking": "[Reasoning redacted]",
            "thinkingSignature": "AAECAwQF", "redacted": true}])
    );
}

fn exception(kind: &str, payload: &str) -> Vec<u8> {
    Frame {
        headers: vec![
            (":exception-type".into(), HeaderValue::Str(kind.into())),
            (
                ":content-type".into(),
                HeaderValue::Str("application/json".into()),
            ),
            (":message-type".into(), HeaderValue::Str("exception".into())),
        ],
        payload: payload.as_bytes().to_vec(),
    }
    .encode()
}

#[test]
fn stream_errors_are_worded_as_pi_words_them() {
    let start = ev("messageStart", json!({"role": "assistant"}));
    let text = ev(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "partial"}}),
    );
    let (msg, _, r) = run(&[
        start.clone(),
        text.clone(),
        exception(
            "throttlingException",
            r#"{"message":"Too many tokens, please wait before trying again."}"#,
        ),
    ]);
    let text_err = r.unwrap_err();
    assert_eq!(
        text_err,
        "Throttling error: Too many tokens, please wait before trying again."
    );
    let (_, _, r) = run(&[
        start.clone(),
        exception(
            "serviceUnavailableException",
            r#"{"message":"Too many requests, please wait before trying again."}"#,
        ),
    ]);
    let busy = r.unwrap_err();
    assert_eq!(
        busy,
        "Service unavailable: Too many requests, please wait before trying again."
    );
    assert!(crate::llm::errors::is_retryable_text(&busy));
    assert_eq!(msg.content.len(), 1);
    let (_, _, r) = run(&[
        start.clone(),
        exception(
            "validationException",
            r#"{"message":"Input is too long for requested model."}"#,
        ),
    ]);
    assert_eq!(
        r.unwrap_err(),
        "Validation error: Input is too long for requested model."
    );
    let (_, _, r) = run(&[
        start.clone(),
        exception("somethingNewException", r#"{"message":"x"}"#),
    ]);
    assert_eq!(r.unwrap_err(), r#"{"message":"x"}"#);
    let error = Frame {
        headers: vec![
            (":message-type".into(), HeaderValue::Str("error".into())),
            (
                ":error-code".into(),
                HeaderValue::Str("InternalFailure".into()),
            ),
            (":error-message".into(), HeaderValue::Str("boom".into())),
        ],
        payload: vec![],
    }
    .encode();
    let (_, _, r) = run(&[start.clone(), error]);
    assert_eq!(r.unwrap_err(), "boom");
    let (_, _, r) = run(&[start.clone(), text.clone()]);
    assert_eq!(r.unwrap_err(), "Bedrock stream ended without a stop reason");
    let (msg, _, r) = run(&[
        start.clone(),
        ev("messageStop", json!({"stopReason": "guardrail_intervened"})),
    ]);
    assert_eq!(
        r.unwrap_err(),
        "Provider stopped with: guardrail_intervened"
    );
    assert_eq!(msg.raw_stop_reason.as_deref(), Some("guardrail_intervened"));
    let (_, _, r) = run(&[ev("messageStart", json!({"role": "user"}))]);
    assert_eq!(
        r.unwrap_err(),
        "Unexpected assistant message start but got user message start instead"
    );
    let mut corrupt = text.clone();
    let n = corrupt.len();
    corrupt[n - 1] ^= 1;
    let (_, _, r) = run(&[start.clone(), corrupt]);
    assert!(r.unwrap_err().starts_with("The message checksum ("));
    let (msg, _, r) = run(&[
        start,
        ev("messageStop", json!({"stopReason": "max_tokens"})),
    ]);
    assert_eq!((r, msg.stop_reason), (Ok(()), StopReason::Length));
}

#[test]
fn http_errors_are_prefixed_by_the_error_type() {
    assert_eq!(
        http_error_message(
            429,
            Some("ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            r#"{"message":"Too many requests, please wait before trying again."}"#
        ),
        "Throttling error: Too many requests, please wait before trying again."
    );
    assert_eq!(
        http_error_message(
            403,
            Some("AccessDeniedException"),
            r#"{"message":"You don't have access to the model with the specified model ID."}"#
        ),
        "AccessDeniedException: You don't have access to the model with the specified model ID."
    );
    assert_eq!(
        http_error_message(400, Some("ValidationException"), r#"{"message":"data retention mode 'default' is not available for this model"}"#),
        "Validation error: data retention mode 'default' is not available for this model See https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html for supported data retention modes."
    );
    assert_eq!(
        http_error_message(
            503,
            None,
            r#"{"__type":"com.amazon#ServiceUnavailableException","message":"busy"}"#
        ),
        "Service unavailable: busy"
    );
    assert_eq!(
        http_error_message(502, None, "<html>bad gateway</html>"),
        "502: <html>bad gateway</html>"
    );
    // Captured from pi 1.6.0 (a 404 of the conformance mock, no error type header).
    assert_eq!(
        http_error_message(
            404,
            None,
            r#"{"error":{"type":"not_found_error","message":"unknown path /model/x/converse-stream"}}"#
        ),
        r#"Unknown: 404: {"type":"not_found_error","message":"unknown path /model/x/converse-stream"}"#
    );
}

#[test]
fn abort_before_the_request_sends_nothing() {
    let cancel = CancelToken::new();
    cancel.cancel();
    let e = env(&[("AWS_BEARER_TOKEN_BEDROCK", "t")]);
    let mut n = 0;
    let msg = stream_with_env(
        &model(MODEL_ID),
        &ctx(),
        &StreamOptions::default(),
        &cancel,
        &mut |_| n += 1,
        &e,
        None,
        NOW,
    );
    assert_eq!(n, 0);
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert_eq!(msg.error_message.as_deref(), Some("Request aborted"));
}

/// Answers `replies.len()` connections in turn; returns the requests (head and body).
fn serve(replies: Vec<Vec<u8>>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for reply in replies {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            loop {
                let n = s.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(i) = text.find("\r\n\r\n") {
                    let len: usize = text[..i]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if buf.len() >= i + 4 + len {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            s.write_all(&reply).unwrap();
            seen.push(String::from_utf8_lossy(&buf).to_string());
        }
        seen
    });
    (url, handle)
}

fn http_reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

#[test]
fn refused_strict_tools_are_retried_once_without_strict_and_remembered() {
    let refused = http_reply(
        "400 Bad Request",
        &[
            ("content-type", "application/json"),
            ("x-amzn-errortype", "ValidationException"),
        ],
        br#"{"message":"Too many strict tools (25). The maximum is 20."}"#,
    );
    let mut frames = ev("messageStart", json!({"role": "assistant"}));
    frames.extend(ev(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "ok"}}),
    ));
    frames.extend(ev("contentBlockStop", json!({"contentBlockIndex": 0})));
    frames.extend(ev("messageStop", json!({"stopReason": "end_turn"})));
    let ok = || {
        http_reply(
            "200 OK",
            &[("content-type", "application/vnd.amazon.eventstream")],
            &frames,
        )
    };
    let (url, server) = serve(vec![refused, ok(), ok()]);
    let mut m = model(MODEL_ID);
    m.base_url = url;
    m.compat = json!({"supportsStrictMode": true}).as_object().cloned();
    let mut c = ctx();
    c.tools = vec![crate::llm::types::ToolSpec {
        name: "read".into(),
        description: "Read".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        strict_prefer: true,
    }];
    let opts = StreamOptions {
        session_id: Some(format!("strict-session-{}", std::process::id())),
        ..StreamOptions::default()
    };
    let e = env(&[("AWS_BEARER_TOKEN_BEDROCK", "t")]);
    for _ in 0..2 {
        let msg = stream_with_env(
            &m,
            &c,
            &opts,
            &CancelToken::new(),
            &mut |_| {},
            &e,
            None,
            NOW,
        );
        assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
        assert_eq!(msg.content, vec![ContentBlock::text("ok")]);
    }
    let seen = server.join().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(seen[0].contains(r#""strict":true"#), "{}", seen[0]);
    // The retry and the session's next request go out without strict tools.
    assert!(!seen[1].contains(r#""strict":true"#), "{}", seen[1]);
    assert!(!seen[2].contains(r#""strict":true"#), "{}", seen[2]);
}

#[test]
fn web_identity_tokens_are_exchanged_at_sts() {
    let xml = b"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAX</AccessKeyId><SecretAccessKey>sec</SecretAccessKey><SessionToken>tok</SessionToken></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
    let (url, server) = serve(vec![http_reply(
        "200 OK",
        &[("content-type", "text/xml")],
        xml,
    )]);
    let file = std::env::temp_dir().join(format!("pi-rpc-wi-{}", std::process::id()));
    std::fs::write(&file, "eyJ.token\n").unwrap();
    let path = file.to_string_lossy().into_owned();
    let vars = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", path.as_str()),
        ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
        ("AWS_ROLE_SESSION_NAME", "s1"),
        ("AWS_ENDPOINT_URL_STS", url.as_str()),
    ];
    let e = env(&vars);
    let auth = credentials::auth(
        None,
        &e,
        None,
        "us-west-2",
        &crate::cancel::CancelToken::new(),
    )
    .unwrap();
    assert_eq!(
        auth,
        credentials::Auth::SigV4(sigv4::AwsCredentials {
            access_key_id: "ASIAX".into(),
            secret_access_key: "sec".into(),
            session_token: Some("tok".into()),
        })
    );
    let seen = server.join().unwrap();
    assert!(seen[0].starts_with("POST / HTTP/1.1\r\n"), "{}", seen[0]);
    assert!(seen[0].ends_with(
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&RoleSessionName=s1&WebIdentityToken=eyJ.token"
    ), "{}", seen[0]);
    let _ = std::fs::remove_file(&file);
}

const METADATA_CREDS: &[u8] = br#"{"Code":"Success","AccessKeyId":"ASIAREMOTE","SecretAccessKey":"rsec","Token":"rtok","Expiration":"2030-01-01T00:00:00Z"}"#;

#[test]
fn container_credentials_are_fetched_with_the_authorization_token() {
    let (url, server) = serve(vec![http_reply(
        "200 OK",
        &[("content-type", "application/json")],
        METADATA_CREDS,
    )]);
    let full = format!("{url}/creds");
    let vars = [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full.as_str()),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Basic abc"),
    ];
    let e = env(&vars);
    let auth = credentials::auth(None, &e, None, "us-west-2", &CancelToken::new()).unwrap();
    assert_eq!(
        auth,
        credentials::Auth::SigV4(sigv4::AwsCredentials {
            access_key_id: "ASIAREMOTE".into(),
            secret_access_key: "rsec".into(),
            session_token: Some("rtok".into()),
        })
    );
    let seen = server.join().unwrap();
    assert!(
        seen[0].starts_with("GET /creds HTTP/1.1\r\n"),
        "{}",
        seen[0]
    );
    assert!(
        seen[0]
            .to_ascii_lowercase()
            .contains("\r\nauthorization: basic abc\r\n"),
        "{}",
        seen[0]
    );
    // A host the SDK does not accept is refused before any request: `fromHttp` refuses it,
    // then `fromContainerMetadata` ends the chain with its own text.
    let e = env(&[(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "http://10.1.2.3/creds",
    )]);
    let err = credentials::auth(None, &e, None, "us-west-2", &CancelToken::new()).unwrap_err();
    assert_eq!(
        err,
        "10.1.2.3 is not a valid container metadata service hostname"
    );
}

#[test]
fn instance_metadata_is_read_with_a_session_token() {
    let (url, server) = serve(vec![
        http_reply("200 OK", &[], b"imds-token"),
        http_reply("200 OK", &[], b"my-role\n"),
        http_reply("200 OK", &[], METADATA_CREDS),
    ]);
    let vars = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.as_str())];
    let e = env(&vars);
    let auth = credentials::auth(None, &e, None, "us-west-2", &CancelToken::new()).unwrap();
    assert!(
        matches!(&auth, credentials::Auth::SigV4(c) if c.access_key_id == "ASIAREMOTE"),
        "{auth:?}"
    );
    let seen = server.join().unwrap();
    let lower: Vec<String> = seen.iter().map(|s| s.to_ascii_lowercase()).collect();
    assert!(
        seen[0].starts_with("PUT /latest/api/token HTTP/1.1\r\n"),
        "{}",
        seen[0]
    );
    assert!(lower[0].contains("x-aws-ec2-metadata-token-ttl-seconds: 21600"));
    assert!(seen[1].starts_with("GET /latest/meta-data/iam/security-credentials/ HTTP/1.1"));
    assert!(seen[2].starts_with("GET /latest/meta-data/iam/security-credentials/my-role HTTP/1.1"));
    assert!(lower[1].contains("x-aws-ec2-metadata-token: imds-token"));
    assert!(lower[2].contains("x-aws-ec2-metadata-token: imds-token"));
}

#[test]
fn instance_metadata_falls_back_to_v1_and_can_be_disabled() {
    let (url, server) = serve(vec![
        http_reply("403 Forbidden", &[], b""),
        http_reply("200 OK", &[], b"r"),
        http_reply("200 OK", &[], METADATA_CREDS),
    ]);
    let vars = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.as_str())];
    let e = env(&vars);
    assert!(credentials::auth(None, &e, None, "us-west-2", &CancelToken::new()).is_ok());
    let seen = server.join().unwrap();
    assert!(!seen[1]
        .to_ascii_lowercase()
        .contains("x-aws-ec2-metadata-token:"));
    // Disabled: no request, the SDK's last error.
    let vars = [
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    let e = env(&vars);
    assert_eq!(
        credentials::auth(None, &e, None, "us-west-2", &CancelToken::new()),
        Err(credentials::NO_CREDENTIALS.into())
    );
    // Nothing listens: the error ends the chain with the SDK's text.
    let vars = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9")];
    let e = env(&vars);
    assert_eq!(
        credentials::auth(None, &e, None, "us-west-2", &CancelToken::new()),
        Err(credentials::NO_CREDENTIALS.into())
    );
}

#[test]
fn an_abort_ends_a_credentials_request_at_once() {
    // A container endpoint that accepts and never answers: without the abort the lookup would
    // take two 1 s timeouts.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let full = format!("http://{}/creds", listener.local_addr().unwrap());
    let holder = std::thread::spawn(move || {
        let held: Vec<_> = (0..2).filter_map(|_| listener.accept().ok()).collect();
        std::thread::sleep(std::time::Duration::from_secs(3));
        drop(held);
    });
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(150));
        trigger.cancel();
    });
    let vars = [("AWS_CONTAINER_CREDENTIALS_FULL_URI", full.as_str())];
    let e = env(&vars);
    let start = std::time::Instant::now();
    let err = credentials::auth(None, &e, None, "us-west-2", &cancel).unwrap_err();
    assert!(
        start.elapsed() < std::time::Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err, "Request was aborted");
    drop(holder);
}

#[path = "chain_tests.rs"]
mod chain;
