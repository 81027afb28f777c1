//! The processor keeps answering while the agent thread waits on something slow: commands
//! such as `get_state` and `abort` never queue behind the agent thread's I/O (the lock rule in
//! `ARCHITECTURE.md`).

use std::path::Path;

use serde_json::json;

use crate::support::agent::mock_models_json;
use crate::support::mock_llm::MockLlm;
use crate::support::run::{agent_for, text_reply, LONG};
use crate::support::tempdir::TempDir;

#[test]
fn get_state_answered_while_a_command_api_key_runs() {
    // A `!command` API key runs a shell command when the request is made. It was resolved with
    // the state lock held, so `get_state` (and `abort`) waited for the command: up to its 10 s
    // limit. The command here waits for a gate file that the test opens only once `get_state`
    // has been answered.
    let gates = TempDir::new("gate");
    let gate = gates.path().join("open");
    let mock = MockLlm::start(json!({"replies": [text_reply("Hello.")]}));
    let mut models = mock_models_json(&mock.base_url());
    models["providers"]["mock"]["apiKey"] = json!(format!(
        "!while [ ! -e '{}' ]; do sleep 0.02; done; echo test-key",
        gate.display()
    ));
    let mut agent = agent_for(&mock).models(Some(models)).spawn();
    agent.send(json!({"id": "p", "type": "prompt", "message": "hi"}));
    agent.wait_for_timeout(
        json!({"type": "message_end", "message": {"role": "user"}}),
        LONG,
    );
    let state = agent.request("s", json!({"type": "get_state"}));
    assert_eq!(state["success"], true, "{state}");
    assert_eq!(state["data"]["isStreaming"], true, "{state}");
    assert!(
        mock.requests().is_empty(),
        "the key command is still waiting"
    );
    open(&gate);
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let log = mock.wait_requests(1, LONG);
    assert_eq!(log[0]["auth_headers_present"], json!(["x-api-key"]));
}

fn open(gate: &Path) {
    std::fs::write(gate, "").expect("open the gate");
}
