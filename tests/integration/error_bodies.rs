//! Long and huge error texts from the LLM server (issue 17 §1–§2): every run still ends with
//! `agent_end` then `agent_settled`, the error body is read with a cap, and the processor keeps
//! answering while the agent classifies and retries.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::records::find_all;
use crate::support::run::{agent_for, run_prompt, LONG};

/// The cap pi-rpc reads an error body up to (`llm::request::ERROR_BODY_CAP`).
const ERROR_BODY_CAP: usize = 64 * 1024;

/// The records of one run end with the failed run's `agent_end{willRetry:false}` (then, after a
/// retried failure, `auto_retry_end`) and `agent_settled`, and nothing after it.
fn assert_run_ended(recs: &[Value]) {
    let ends: Vec<usize> = recs
        .iter()
        .enumerate()
        .filter(|(_, r)| r["type"] == "agent_end")
        .map(|(i, _)| i)
        .collect();
    let last_end = *ends.last().expect("an agent_end");
    assert_eq!(recs[last_end]["willRetry"], false);
    let last = recs.last().unwrap();
    assert_eq!(last, &json!({"type": "agent_settled", "aborted": false}));
    let between: Vec<&str> = recs[last_end + 1..recs.len() - 1]
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert!(
        between.is_empty() || between == ["auto_retry_end"],
        "{between:?}"
    );
}

/// The `errorMessage` of the run's last assistant message.
fn last_error(recs: &[Value]) -> String {
    let ends = find_all(
        recs,
        json!({"type": "message_end", "message": {"role": "assistant"}}),
    );
    ends.last().unwrap()["message"]["errorMessage"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn long_error_body_crashed_the_agent_thread() {
    // issue 17 §1: a recursive matcher over the error text overflowed the agent thread's stack
    // (SIGABRT, no agent_end) from about 6 kB of error text on.
    let body_400 = "a".repeat(8000);
    let body_503 = format!("request to {}", "x".repeat(6200));
    let sse_error = "b".repeat(8800);
    let cases = [
        (
            json!({"status": 400, "raw_error_body": body_400, "content_type": "text/plain"}),
            format!("400 {body_400}"),
            false,
        ),
        (
            json!({"status": 503, "raw_error_body": body_503, "content_type": "text/plain"}),
            format!("503 {body_503}"),
            true,
        ),
        (
            json!({"raw_sse": format!("event: error\ndata: {sse_error}\n\n")}),
            sse_error.clone(),
            false,
        ),
    ];
    for (reply, error, retried) in cases {
        let mock = MockLlm::start(json!({"default": reply}));
        let mut agent = agent_for(&mock).spawn();
        let recs = run_prompt(&mut agent, "p", "x");
        assert_eq!(recs[0]["type"], "response", "{:?}", recs[0]);
        assert_eq!(recs[0]["success"], true);
        assert_run_ended(&recs);
        assert_eq!(last_error(&recs), error);
        // The 503 is retried (fast_settings: three retries), the others are not.
        let retries = find_all(&recs, json!({"type": "auto_retry_start"})).len();
        assert_eq!(retries, if retried { 3 } else { 0 }, "{error:.20}");
        assert_eq!(mock.requests().len(), retries + 1);
        // Still serving.
        let r = agent.request("s", json!({"type": "get_state"}));
        assert_eq!(r["success"], true);
        assert_eq!(r["data"]["isStreaming"], false);
        assert!(!agent.stderr().contains("overflow"), "{}", agent.stderr());
    }
}

#[test]
fn huge_error_body_stalled_the_processor() {
    // issue 17 §2: a 500 with a 20 MB body was read up to 4 MiB, and classifying that text
    // took seconds per attempt while holding the state lock `get_state` needs.
    let body = "a".repeat(20_000_000);
    let mock = MockLlm::start(json!({"default": {"status": 500, "raw_error_body": body,
        "content_type": "text/plain"}}));
    let mut agent = agent_for(&mock)
        .settings(json!({"retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 300}}))
        .spawn();
    agent.send(json!({"id": "p", "type": "prompt", "message": "x"}));
    // A `get_state` sent at each step of the failing attempts and of the back-off is answered
    // at once, while the agent reads, classifies and waits.
    let mut slowest = Duration::ZERO;
    let mut asked = 0;
    for step in [
        json!({"type": "message_start", "message": {"role": "assistant"}}),
        json!({"type": "message_end", "message": {"role": "assistant"}}),
        json!({"type": "auto_retry_start", "attempt": 1}),
        json!({"type": "message_end", "message": {"role": "assistant"}}),
        json!({"type": "auto_retry_start", "attempt": 2}),
        json!({"type": "message_end", "message": {"role": "assistant"}}),
    ] {
        agent.wait_for_timeout(step, LONG);
        asked += 1;
        let id = format!("s{asked}");
        let sent = Instant::now();
        let r = agent.request(&id, json!({"type": "get_state"}));
        slowest = slowest.max(sent.elapsed());
        assert_eq!(r["success"], true);
    }
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let start = agent
        .records
        .iter()
        .position(|r| r["type"] == "response" && r["id"] == "p")
        .unwrap();
    let recs: Vec<Value> = agent.records[start..]
        .iter()
        .filter(|r| r["type"] != "response" || r["command"] != "get_state")
        .cloned()
        .collect();
    assert_run_ended(&recs);
    // A hang detector only (tests do not measure speed): the old build took up to 5.7 s.
    assert!(
        slowest < Duration::from_secs(2),
        "get_state took {slowest:?}"
    );
    // Three attempts, each error text the status and the first 64 KiB of the body, marked.
    assert_eq!(mock.requests().len(), 3);
    let expected = format!(
        "500 {}… [error body cut at {ERROR_BODY_CAP} bytes]",
        "a".repeat(ERROR_BODY_CAP)
    );
    let failures = find_all(
        &recs,
        json!({"type": "message_end", "message": {"role": "assistant", "stopReason": "error"}}),
    );
    assert_eq!(failures.len(), 3);
    for f in &failures {
        assert_eq!(f["message"]["errorMessage"], json!(expected));
    }
    for r in find_all(&recs, json!({"type": "auto_retry_start"})) {
        assert_eq!(r["errorMessage"], json!(expected));
    }
    let r = agent.request("m", json!({"type": "get_messages"}));
    let msgs = r["data"]["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["errorMessage"], json!(expected));
}

#[test]
fn server_echoing_the_api_key_put_it_into_the_session() {
    // issue 17 §9: a server that echoes the request's credentials in its error body put the API
    // key into `errorMessage`, and from there into the session file and the HTML export.
    let body = "invalid x-api-key: test-key (header x-api-key=test-key)";
    let mock = MockLlm::start(json!({"default": {"status": 401, "raw_error_body": body,
        "content_type": "text/plain"}}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p", "x");
    assert_run_ended(&recs);
    assert_eq!(
        last_error(&recs),
        "401 invalid x-api-key: [redacted] (header x-api-key=[redacted])"
    );
    let all = serde_json::to_string(&recs).unwrap();
    assert!(!all.contains("test-key"), "{all}");
    let entries = agent.request("e", json!({"type": "get_entries"}));
    assert!(!entries.to_string().contains("test-key"), "{entries}");
}
