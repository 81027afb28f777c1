//! Runs through the real binary against the scripted LLM server: an agent wired to a
//! [`MockLlm`], the commands that start a run and wait until it settles, what the provider
//! received, and the scripted replies the run tests share.

use std::time::Duration;

use serde_json::{json, Value};

use super::agent::{mock_models_json, AgentBuilder};
use super::mock_llm::MockLlm;
use super::records::strip_cache;
use super::Agent;

/// A 4×4 red PNG (the conformance scenarios' `PNG_B64`).
pub const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";

/// How long a test waits for something the binary must do "at once" (generous: CI is slow).
pub const LONG: Duration = Duration::from_secs(30);

/// Settings for fast retries.
pub fn fast_settings() -> Value {
    json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 1, "maxAgentDelayMs": 500}})
}

/// An agent (mock-sonnet, `--no-session`) talking to `mock`.
pub fn agent_for(mock: &MockLlm) -> AgentBuilder {
    Agent::builder()
        .models(Some(mock_models_json(&mock.base_url())))
        .settings(fast_settings())
}

/// Sends a prompt and returns every record from its response to `agent_settled`.
pub fn run_prompt(agent: &mut Agent, id: &str, message: &str) -> Vec<Value> {
    run_command(
        agent,
        json!({"id": id, "type": "prompt", "message": message}),
    )
}

/// Sends a run-starting command and returns every record from then to `agent_settled`. The
/// `agent_settled` waited for is one after the command's response, never an earlier run's that
/// the cursor had not passed yet.
pub fn run_command(agent: &mut Agent, cmd: Value) -> Vec<Value> {
    let start = agent.records.len();
    let id = cmd["id"].as_str().map(str::to_string);
    agent.send(cmd);
    if let Some(id) = id {
        agent.seek_past_response(&id);
    }
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    agent.records[start..].to_vec()
}

/// The `messages` of the n-th logged request, without cache markers.
pub fn request_messages(mock: &MockLlm, n: usize) -> Value {
    let log = mock.wait_requests(n + 1, LONG);
    strip_cache(&log[n]["body"]["messages"])
}

/// A scripted server for tests that make no request to it (`replies` is empty).
pub fn no_llm() -> MockLlm {
    MockLlm::start(json!({"replies": []}))
}

/// A scripted tool-call block.
pub fn tool_call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_call", "id": id, "name": name, "input": input})
}

/// A scripted reply with one text block.
pub fn text_reply(text: &str) -> Value {
    json!({"blocks": [{"type": "text", "text": text}]})
}

/// `{"status": 529, ...}` and the error text pi builds from it.
pub fn overloaded() -> Value {
    json!({"status": 529, "error_type": "overloaded_error", "error_message": "Overloaded"})
}

pub fn overloaded_text(n: u32) -> String {
    format!(
        "529 {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}},\"request_id\":\"req_mock_{n:04}\"}}"
    )
}
