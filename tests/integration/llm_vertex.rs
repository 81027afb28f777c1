//! Google Vertex (`google-vertex`) in express mode through the binary, compared with the
//! request pi 1.6.0 sent for the same setup (`tests/fixtures/vertex/pi160_express_request.json`,
//! captured with the conformance runner: built-in google-vertex, a stored apiKey, a models.json
//! baseUrl pointing at the scripted server, one prompt). The texts that are pi-rpc's own (the
//! system prompt, tool descriptions) are blanked on both sides; everything else (the path,
//! the key header, the body's members, order and values) must be equal.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::run::{run_prompt, LONG};
use crate::support::Agent;

const PI_REQUEST: &str = include_str!("../fixtures/vertex/pi160_express_request.json");

/// The body with the system prompt text and every `description` string blanked.
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

fn blank_system(mut body: Value) -> Value {
    body["systemInstruction"]["parts"][0]["text"] = json!("<system prompt>");
    without_texts(&body)
}

#[test]
fn express_mode_request_matches_pi() {
    let pi: Value = serde_json::from_str(PI_REQUEST).unwrap();
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Hi from Vertex."}], "usage": {"input": 30, "output": 4}}
    ]}));
    let models =
        json!({"providers": {"google-vertex": {"baseUrl": mock.base_url(), "apiKey": "test-key"}}});
    let mut agent = Agent::builder()
        .no_default_args()
        .args([
            "--no-session",
            "--provider",
            "google-vertex",
            "--model",
            "gemini-2.5-flash",
        ])
        .models(Some(models))
        .spawn();
    let records = run_prompt(&mut agent, "p", "Run echo via vertex");
    let end = records
        .iter()
        .find(|r| r["type"] == "agent_end")
        .expect("agent_end");
    let last = end["messages"].as_array().and_then(|m| m.last()).unwrap();
    assert_eq!(last["stopReason"], "stop", "{last}");
    assert_eq!(last["api"], "google-vertex");
    assert_eq!(
        last["content"],
        json!([{"type": "text", "text": "Hi from Vertex."}])
    );

    let requests = mock.wait_requests(1, LONG);
    let req = &requests[0];
    assert_eq!(req["path"], pi["path"]);
    assert_eq!(req["auth_headers_present"], json!(["x-goog-api-key"]));
    assert_eq!(
        req["headers"]["content-type"],
        pi["headers"]["content-type"]
    );
    assert_eq!(
        blank_system(req["body"].clone()),
        blank_system(pi["body"].clone())
    );
    // Member order too (JSON.stringify's).
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&req["body"]), keys(&pi["body"]));
    agent.close_stdin();
}
