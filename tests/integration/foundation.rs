//! Framing, dispatch, state commands, model registry and settings (the foundation).

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::Agent;

fn model_sonnet(base: &str) -> Value {
    json!({"id": "mock-sonnet", "name": "Mock Sonnet", "api": "anthropic-messages", "provider": "mock",
        "baseUrl": base, "reasoning": true, "input": ["text", "image"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000, "maxTokens": 8192})
}

fn model_haiku(base: &str) -> Value {
    json!({"id": "mock-haiku", "name": "Mock Haiku", "api": "anthropic-messages", "provider": "mock",
        "baseUrl": base, "reasoning": false, "input": ["text"],
        "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25},
        "contextWindow": 100000, "maxTokens": 4096})
}

const BASE: &str = "http://127.0.0.1:9";

#[test]
fn fresh_get_state_reports_the_whole_state() {
    let mut a = Agent::spawn();
    let r = a.request("1", json!({"type": "get_state"}));
    let session_id = r["data"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        r,
        json!({"id": "1", "type": "response", "command": "get_state", "success": true, "data": {
            "model": model_sonnet(BASE), "thinkingLevel": "medium", "isStreaming": false,
            "isCompacting": false, "steeringMode": "one-at-a-time", "followUpMode": "one-at-a-time",
            "sessionId": session_id, "autoCompactionEnabled": true, "messageCount": 0,
            "pendingMessageCount": 0}})
    );
    // A UUIDv7: version nibble 7.
    assert_eq!(session_id.as_bytes()[14], b'7', "{session_id}");
    let r = a.request("2", json!({"type": "get_messages"}));
    assert_eq!(r["data"], json!({"messages": []}));
    let r = a.request("3", json!({"type": "get_session_stats"}));
    assert_eq!(
        r["data"],
        json!({"sessionId": session_id, "userMessages": 0, "assistantMessages": 0, "toolCalls": 0,
            "toolResults": 0, "totalMessages": 0,
            "tokens": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            "cost": 0, "contextUsage": {"tokens": 0, "contextWindow": 200000, "percent": 0}})
    );
    let r = a.request("4", json!({"type": "get_last_assistant_text"}));
    assert_eq!(r["data"], json!({"text": null}));
}

#[test]
fn response_key_order_is_pis() {
    let mut a = Agent::spawn();
    a.request("k", json!({"type": "get_available_thinking_levels"}));
    let raw = String::from_utf8(a.raw_lines.last().unwrap().clone()).unwrap();
    assert_eq!(
        raw,
        r#"{"id":"k","type":"response","command":"get_available_thinking_levels","success":true,"data":{"levels":["off","minimal","low","medium","high"]}}"#
    );
}

#[test]
fn bad_input_gets_one_error_each_and_the_process_carries_on() {
    let mut a = Agent::spawn();
    a.send_raw("this is not json");
    a.send_raw(r#"{"id": "trunc", "type": "get_state""#);
    a.send(json!({"id": "u1", "type": "definitely_not_a_command"}));
    a.send(json!({"type": "another_unknown"}));
    a.send_raw("[1,2,3]");
    a.send_raw("null");
    a.send(json!({"id": "nt", "message": "no type field"}));
    a.send(json!({"id": "tn", "type": 5}));
    a.send_raw("{\"id\":\"crlf\",\"type\":\"get_messages\"}\r");
    a.send_raw("");
    a.send_bytes(b"{\"type\":\"prompt\",\"message\":\"\xff\xfe\"}\n");
    a.send(json!({"id": "m1", "type": "get_messages"}));
    a.response("m1");
    let got: Vec<Value> = a.records.clone();
    assert_eq!(got.len(), 12, "{got:#?}");
    let parse = |v: &Value| {
        v["type"] == "response"
            && v["command"] == "parse"
            && v["success"] == false
            && v["error"]
                .as_str()
                .unwrap()
                .starts_with("Failed to parse command: ")
    };
    assert!(parse(&got[0]) && got[0].get("id").is_none(), "{}", got[0]);
    assert!(parse(&got[1]) && got[1].get("id").is_none(), "{}", got[1]);
    assert_eq!(
        got[2],
        json!({"id": "u1", "type": "response", "command": "definitely_not_a_command",
            "success": false, "error": "Unknown command: definitely_not_a_command"})
    );
    assert_eq!(
        got[3],
        json!({"type": "response", "command": "another_unknown", "success": false,
            "error": "Unknown command: another_unknown"})
    );
    assert!(parse(&got[4]) && got[4].get("id").is_none());
    assert!(parse(&got[5]) && got[5].get("id").is_none());
    assert!(parse(&got[6]) && got[6]["id"] == "nt");
    assert!(parse(&got[7]) && got[7]["id"] == "tn");
    assert_eq!(got[8]["id"], "crlf");
    assert_eq!(got[8]["success"], true);
    assert_eq!(
        got[9],
        json!({"type": "response", "command": "parse", "success": false,
            "error": "Failed to parse command: Unexpected end of JSON input"})
    );
    assert!(parse(&got[10]), "{}", got[10]);
    assert!(got[10]["error"].as_str().unwrap().contains("UTF-8"));
    assert_eq!(got[11]["id"], "m1");
}

#[test]
fn an_over_long_line_is_rejected_once_with_its_id_and_skipped() {
    let mut a = Agent::builder().env("PI_RPC_MAX_LINE_BYTES", "1M").spawn();
    let mut big = String::from("{\"id\":\"shot\",\"type\":\"prompt\",\"message\":\"");
    big.push_str(&"x".repeat(3 * 1024 * 1024));
    big.push_str("\"}");
    let len = big.len();
    a.send_raw(&big);
    // Without an id in its first bytes, the error has none.
    let mut anonymous = String::from("{\"type\":\"prompt\",\"message\":\"");
    anonymous.push_str(&"y".repeat(2 * 1024 * 1024));
    anonymous.push_str("\",\"id\":\"late\"}");
    a.send_raw(&anonymous);
    let r = a.request("after", json!({"type": "get_state"}));
    assert_eq!(r["success"], true);
    assert_eq!(a.records.len(), 3, "{:?}", a.records);
    assert_eq!(
        a.records[0],
        json!({"id": "shot", "type": "response", "command": "parse", "success": false,
               "error": format!("Failed to parse command: line of {len} bytes exceeds the limit \
                                 of 1048576 bytes (set PI_RPC_MAX_LINE_BYTES to accept longer lines)")})
    );
    assert_eq!(a.records[1].get("id"), None, "{}", a.records[1]);
    assert_eq!(a.records[1]["command"], "parse");
}

#[test]
fn a_line_far_over_the_old_8_mib_limit_is_a_command() {
    // Regression: a prompt with a large screenshot (a 6 MB PNG is 8 MB of base64) was answered
    // with a parse error without an id. The default limit is 128 MiB.
    let mut a = Agent::spawn();
    let mut big = String::from("{\"id\":\"big\",\"type\":\"get_state\",\"padding\":\"");
    big.push_str(&"z".repeat(20 * 1024 * 1024));
    big.push_str("\"}");
    a.send_raw(&big);
    let r = a.response("big");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["command"], "get_state");
}

#[test]
fn a_bad_line_limit_is_a_warning_and_the_default_applies() {
    let mut a = Agent::builder()
        .env("PI_RPC_MAX_LINE_BYTES", "lots")
        .spawn();
    let r = a.request("s", json!({"type": "get_state"}));
    assert_eq!(r["success"], true);
    a.close_stdin();
    a.wait_exit(Duration::from_secs(10));
    assert!(
        a.stderr().contains(
            "Warning: PI_RPC_MAX_LINE_BYTES=\"lots\" is not a size (bytes, or a number with K, M or G); using 128 MiB"
        ),
        "{}",
        a.stderr()
    );
}

#[test]
fn last_line_without_newline_is_a_command_and_eof_exits_zero() {
    let mut a = Agent::spawn();
    a.send_bytes(br#"{"id":"last","type":"get_state"}"#);
    a.close_stdin();
    let status = a.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    assert_eq!(a.records.len(), 1);
    assert_eq!(a.records[0]["id"], "last");
}

#[test]
fn missing_and_mistyped_fields_name_the_problem() {
    let mut a = Agent::spawn();
    let cases = [
        (json!({"type": "set_model"}), "set_model", "provider"),
        (json!({"type": "prompt", "message": 5}), "prompt", "message"),
        (
            json!({"type": "set_session_name"}),
            "set_session_name",
            "name",
        ),
        (
            json!({"type": "set_auto_retry", "enabled": "yes"}),
            "set_auto_retry",
            "enabled",
        ),
        (
            json!({"type": "set_auto_compaction"}),
            "set_auto_compaction",
            "enabled",
        ),
        (
            json!({"type": "set_steering_mode", "mode": "sometimes"}),
            "set_steering_mode",
            "mode",
        ),
        (
            json!({"type": "set_follow_up_mode"}),
            "set_follow_up_mode",
            "mode",
        ),
        (
            json!({"type": "set_thinking_level", "level": "bogus"}),
            "set_thinking_level",
            "level",
        ),
        (
            json!({"type": "get_entries", "since": 3}),
            "get_entries",
            "since",
        ),
        (
            json!({"type": "prompt", "message": "x", "images": [{"type": "image"}]}),
            "prompt",
            "images",
        ),
    ];
    for (i, (cmd, name, field)) in cases.into_iter().enumerate() {
        let id = format!("c{i}");
        let r = a.request(&id, cmd);
        assert_eq!(r["command"], name, "{r}");
        assert_eq!(r["success"], false, "{r}");
        assert!(r["error"].as_str().unwrap().contains(field), "{r}");
    }
    // Nothing changed: no events were emitted and the state is the default one.
    assert!(a.records.iter().all(|r| r["type"] == "response"));
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["thinkingLevel"], "medium");
    assert_eq!(st["data"]["steeringMode"], "one-at-a-time");
    assert_eq!(st["data"]["followUpMode"], "one-at-a-time");
    assert_eq!(st["data"]["autoCompactionEnabled"], true);
}

#[test]
fn set_model_and_cycle_model() {
    let mut a = Agent::builder()
        .no_default_args()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-sonnet",
            "--session-dir",
        ])
        .spawn();
    // --session-dir needs a value: the agent exits with a usage error on stderr, stdout empty.
    let status = a.wait_exit(Duration::from_secs(10));
    assert!(!status.success());
    assert!(a.records.is_empty());

    let mut a = Agent::spawn();
    let r = a.request("am", json!({"type": "get_available_models"}));
    assert_eq!(
        r["data"],
        json!({"models": [model_sonnet(BASE), model_haiku(BASE)]})
    );
    let r = a.request(
        "sm1",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["data"], model_haiku(BASE));
    // The level change comes before the response.
    let i = a.records.iter().position(|r| r["id"] == "sm1").unwrap();
    assert_eq!(
        a.records[i - 1],
        json!({"type": "thinking_level_changed", "level": "off"})
    );
    let r = a.request(
        "sm2",
        json!({"type": "set_model", "provider": "mock", "modelId": "no-such-model"}),
    );
    assert_eq!(r["error"], "Model not found: mock/no-such-model");
    let r = a.request(
        "sm3",
        json!({"type": "set_model", "provider": "nope", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["error"], "Model not found: nope/mock-haiku");
    let r = a.request("cm1", json!({"type": "cycle_model"}));
    assert_eq!(
        r["data"],
        json!({"model": model_sonnet(BASE), "thinkingLevel": "off", "isScoped": false})
    );
    let r = a.request("cm2", json!({"type": "cycle_model"}));
    assert_eq!(r["data"]["model"]["id"], "mock-haiku");
    let r = a.request("e", json!({"type": "get_entries"}));
    let kinds: Vec<(&str, Value)> = r["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let k = e["type"].as_str().unwrap();
            let v = if k == "model_change" {
                e["modelId"].clone()
            } else {
                e["thinkingLevel"].clone()
            };
            (k, v)
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("model_change", json!("mock-sonnet")),
            ("thinking_level_change", json!("medium")),
            ("model_change", json!("mock-haiku")),
            ("thinking_level_change", json!("off")),
            ("model_change", json!("mock-sonnet")),
            ("model_change", json!("mock-haiku")),
        ]
    );
}

#[test]
fn thinking_levels_are_clamped_and_cycled() {
    let mut a = Agent::spawn();
    let r = a.request("s1", json!({"type": "set_thinking_level", "level": "high"}));
    assert_eq!(
        r,
        json!({"id": "s1", "type": "response", "command": "set_thinking_level", "success": true})
    );
    assert_eq!(
        a.records[0],
        json!({"type": "thinking_level_changed", "level": "high"})
    );
    // Re-sending the current level emits nothing.
    let n = a.records.len();
    a.request(
        "s1b",
        json!({"type": "set_thinking_level", "level": "high"}),
    );
    assert_eq!(a.records.len(), n + 1);
    // xhigh is not supported by a plain reasoning model: clamped to high (no change, no event).
    a.request(
        "s3",
        json!({"type": "set_thinking_level", "level": "xhigh"}),
    );
    assert_eq!(a.records.len(), n + 2);
    let r = a.request("c1", json!({"type": "cycle_thinking_level"}));
    assert_eq!(r["data"], json!({"level": "off"}));
    let r = a.request("c2", json!({"type": "cycle_thinking_level"}));
    assert_eq!(r["data"], json!({"level": "minimal"}));
    a.request(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    let r = a.request("l2", json!({"type": "get_available_thinking_levels"}));
    assert_eq!(r["data"], json!({"levels": ["off"]}));
    let r = a.request("c4", json!({"type": "cycle_thinking_level"}));
    assert_eq!(r["data"], Value::Null);
    assert!(r.as_object().unwrap().contains_key("data"));
    let n = a.records.len();
    a.request("s5", json!({"type": "set_thinking_level", "level": "high"}));
    assert_eq!(a.records.len(), n + 1, "no event on a non-reasoning model");
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["thinkingLevel"], "off");
}

#[test]
fn startup_model_suffix_and_thinking_flag() {
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--model", "mock/mock-sonnet:low", "--no-session"])
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["thinkingLevel"], "low");
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--model", "sonnet", "--thinking", "xhigh", "--no-session"])
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["model"]["id"], "mock-sonnet");
    assert_eq!(st["data"]["thinkingLevel"], "high");
}

#[test]
fn no_model_uses_the_placeholder() {
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(Some(json!({"providers": {"mock": {"baseUrl": BASE, "api": "anthropic-messages", "apiKey": "k", "models": []}}})))
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(
        st["data"]["model"],
        json!({"id": "unknown", "name": "unknown", "api": "unknown", "provider": "unknown",
            "baseUrl": "", "reasoning": false, "input": [],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 0, "maxTokens": 0})
    );
    assert_eq!(st["data"]["thinkingLevel"], "off");
    let r = a.request("am", json!({"type": "get_available_models"}));
    assert_eq!(r["data"], json!({"models": []}));
    let r = a.request("p1", json!({"type": "prompt", "message": "Hello?"}));
    assert!(r["error"]
        .as_str()
        .unwrap()
        .starts_with("No API key found for the selected model.\n\n"));
    let r = a.request(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-sonnet"}),
    );
    assert_eq!(r["error"], "Model not found: mock/mock-sonnet");
    let r = a.request("cm", json!({"type": "cycle_model"}));
    assert_eq!(r["data"], Value::Null);
    let r = a.request("lv", json!({"type": "get_available_thinking_levels"}));
    assert_eq!(r["data"], json!({"levels": ["off"]}));
    let r = a.request("ct", json!({"type": "cycle_thinking_level"}));
    assert_eq!(r["data"], Value::Null);
    let r = a.request("ss", json!({"type": "get_session_stats"}));
    assert!(r["data"].get("contextUsage").is_none());
    let r = a.request("e", json!({"type": "get_entries"}));
    let entries = r["data"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["type"], "thinking_level_change");
    assert_eq!(entries[0]["thinkingLevel"], "off");
    a.close_stdin();
    a.wait_exit(Duration::from_secs(10));
    assert!(
        a.stderr().contains("Warning: No models available."),
        "{}",
        a.stderr()
    );
}

#[test]
fn default_model_is_the_first_available() {
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["model"]["id"], "mock-sonnet");
    assert_eq!(st["data"]["thinkingLevel"], "medium");
    // settings defaultProvider/defaultModel/defaultThinkingLevel win.
    let mut a = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .settings(json!({"defaultProvider": "mock", "defaultModel": "mock-haiku", "defaultThinkingLevel": "high"}))
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["model"]["id"], "mock-haiku");
    assert_eq!(st["data"]["thinkingLevel"], "off");
}

#[test]
fn queue_modes_and_auto_flags_are_persisted_to_global_settings() {
    let mut a = Agent::spawn();
    for (i, cmd) in [
        json!({"type": "set_steering_mode", "mode": "all"}),
        json!({"type": "set_follow_up_mode", "mode": "all"}),
        json!({"type": "set_auto_compaction", "enabled": false}),
        json!({"type": "set_auto_retry", "enabled": true}),
    ]
    .into_iter()
    .enumerate()
    {
        let r = a.request(&format!("q{i}"), cmd);
        assert_eq!(r["success"], true, "{r}");
        assert!(r.get("data").is_none());
    }
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["steeringMode"], "all");
    assert_eq!(st["data"]["followUpMode"], "all");
    assert_eq!(st["data"]["autoCompactionEnabled"], false);
    let text = std::fs::read_to_string(a.agent_dir.join("settings.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v,
        json!({"steeringMode": "all", "followUpMode": "all", "compaction": {"enabled": false}, "retry": {"enabled": true}})
    );
    assert!(text.contains("\n  \""), "2-space indent: {text}");
    // A new process picks the persisted values up.
    let mut b = Agent::builder().settings(v).spawn();
    let st = b.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["steeringMode"], "all");
    assert_eq!(st["data"]["autoCompactionEnabled"], false);
}

#[test]
fn malformed_config_files_are_reported_not_fatal() {
    let mut a = Agent::builder()
        .settings(json!({}))
        .agent_file(
            "settings.json",
            "{\n  \"steeringMode\": \"all\",\n  oops\n}",
        )
        .agent_file("auth.json", "{ not json")
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["steeringMode"], "one-at-a-time");
    a.close_stdin();
    a.wait_exit(Duration::from_secs(10));
    let err = a.stderr();
    assert!(
        err.contains("settings.json") && err.contains("line 3"),
        "{err}"
    );
    assert!(err.contains("auth.json"), "{err}");
}

#[test]
fn steer_and_follow_up_while_idle_are_queued_and_cleared() {
    let mut a = Agent::spawn();
    let r = a.request("s1", json!({"type": "steer", "message": "idle steer"}));
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    assert_eq!(
        a.records[0],
        json!({"type": "queue_update", "steering": ["idle steer"], "followUp": []})
    );
    a.request("f1", json!({"type": "follow_up", "message": "idle follow"}));
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["pendingMessageCount"], 2);
    let r = a.request("cq", json!({"type": "clear_queue"}));
    assert_eq!(
        r["data"],
        json!({"steering": ["idle steer"], "followUp": ["idle follow"]})
    );
    let i = a.records.iter().position(|r| r["id"] == "cq").unwrap();
    assert_eq!(
        a.records[i - 1],
        json!({"type": "queue_update", "steering": [], "followUp": []})
    );
}

#[test]
fn get_commands_lists_templates_and_skills() {
    let mut a = Agent::builder()
        .agent_file(
            "prompts/review.md",
            "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\nReview the staged changes. Focus on ${1:-correctness}.\n",
        )
        .agent_file(
            "skills/demo-skill/SKILL.md",
            "---\nname: demo-skill\ndescription: Demonstration skill.\n---\n\n# Demo skill\n",
        )
        .spawn();
    let agent_dir = a.agent_dir.to_string_lossy().to_string();
    let r = a.request("gc", json!({"type": "get_commands"}));
    assert_eq!(
        r["data"],
        json!({"commands": [
            // pi's built-in extensions' commands come first (extensions.md §A8).
            {"name": "llama", "description": "Manage llama.cpp router models", "source": "extension",
             "sourceInfo": {"path": "builtin:llama.cpp", "source": "builtin", "scope": "temporary", "origin": "top-level"}},
            {"name": "mcp", "description": "Manage MCP servers: sign in, reconnect, enable or disable, and change exposure", "source": "extension",
             "sourceInfo": {"path": "builtin:mcp", "source": "builtin", "scope": "temporary", "origin": "top-level"}},
            {"name": "review", "description": "Review staged git changes", "source": "prompt",
             "sourceInfo": {"path": format!("{agent_dir}/prompts/review.md"), "source": "auto", "scope": "user", "origin": "top-level", "baseDir": agent_dir},
             "path": format!("{agent_dir}/prompts/review.md"), "location": "user"},
            {"name": "skill:demo-skill", "description": "Demonstration skill.", "source": "skill",
             "sourceInfo": {"path": format!("{agent_dir}/skills/demo-skill/SKILL.md"), "source": "auto", "scope": "user", "origin": "top-level", "baseDir": agent_dir},
             "path": format!("{agent_dir}/skills/demo-skill/SKILL.md"), "location": "user"}
        ]})
    );
}

#[test]
fn session_file_path_is_reported_before_the_file_exists() {
    let mut a = Agent::builder()
        .no_default_args()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-sonnet",
            "-n",
            "named",
        ])
        .spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    let file = st["data"]["sessionFile"].as_str().unwrap().to_string();
    let id = st["data"]["sessionId"].as_str().unwrap();
    let expected_dir = a.agent_dir.join("sessions").join(format!(
        "--{}--",
        a.cwd
            .to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "-")
    ));
    assert!(
        file.starts_with(&expected_dir.to_string_lossy().to_string()),
        "{file}"
    );
    assert!(file.ends_with(&format!("_{id}.jsonl")), "{file}");
    assert_eq!(st["data"]["sessionName"], "named");
    assert!(!std::path::Path::new(&file).exists());
}

#[test]
fn help_and_version_print_to_stdout() {
    for flag in ["--help", "--version"] {
        let out = std::process::Command::new(crate::support::outside::pi_rpc_bin())
            .arg(flag)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(!out.stdout.is_empty());
    }
}

/// issue 17 §7: a closed stdout ended the process with code 0; rpc-protocol.md §1 says a fatal
/// stdout write error exits with code 1.
#[test]
fn closed_stdout_ends_the_process_quietly_with_exit_code_1() {
    use std::process::{Command, Stdio};
    let root = crate::support::TempDir::new("epipe");
    let mut child = Command::new(crate::support::outside::pi_rpc_bin())
        .args(["--no-session"])
        .current_dir(root.path())
        .env("PI_CODING_AGENT_DIR", root.path())
        .env("HOME", root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // Keep writing commands until the process notices its stdout is gone and exits.
    while child.try_wait().unwrap().is_none() {
        if stdin.write_all(b"{\"type\":\"get_state\"}\n").is_err() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "did not exit");
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{:?}", out.status);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn sigterm_shuts_down_with_143() {
    let mut a = Agent::spawn();
    a.request("st", json!({"type": "get_state"}));
    unsafe_free_kill(a.pid(), "TERM");
    let status = a.wait_exit(Duration::from_secs(10));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.code(),
        Some(143),
        "{status:?} signal {:?}",
        status.signal()
    );
}

fn unsafe_free_kill(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn list_models_prints_a_table_of_available_models() {
    let root = crate::support::TempDir::new("list-models");
    root.write(
        "models.json",
        &crate::support::agent::mock_models_json(BASE).to_string(),
    );
    let out = std::process::Command::new(crate::support::outside::pi_rpc_bin())
        .args(["--list-models", "haiku"])
        .current_dir(root.path())
        .env("PI_CODING_AGENT_DIR", root.path())
        .env("HOME", root.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "provider  model       context  max-out  thinking  images\n\
         mock      mock-haiku  100K     4.1K     no        no    \n"
    );
}

/// Start-up flag errors exit 1 with pi's message, before any command is read.
fn startup_error(args: &[&str]) -> (i32, String) {
    let mut a = Agent::builder()
        .no_default_args()
        .args(args.iter().copied())
        .spawn();
    let status = a.wait_exit(Duration::from_secs(10));
    (status.code().unwrap_or(-1), a.stderr())
}

#[test]
fn provider_without_model_and_empty_name_are_startup_errors() {
    let (code, err) = startup_error(&["--no-session", "--provider", "mock"]);
    assert_eq!(code, 1);
    assert_eq!(
        err.trim_end(),
        "Error: --provider requires --model (for example: --provider mock --model <pattern>)"
    );
    let (code, err) = startup_error(&["--no-session", "--name", "  "]);
    assert_eq!(code, 1);
    assert_eq!(err.trim_end(), "Error: --name requires a non-empty value");
    let (code, err) = startup_error(&["--no-session", "--api-key", "k"]);
    assert_eq!(code, 1);
    assert_eq!(
        err.trim_end(),
        "Error: --api-key requires a model to be specified via --model, --provider/--model, or --models"
    );
}

#[test]
fn an_invalid_thinking_flag_is_a_warning_and_ignored() {
    let mut a = Agent::builder().args(["--thinking", "HIGH"]).spawn();
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["thinkingLevel"], "medium");
    a.close_stdin();
    a.wait_exit(Duration::from_secs(10));
    assert_eq!(
        a.stderr().trim_end(),
        "Warning: Invalid thinking level \"HIGH\". Valid values: off, minimal, low, medium, high, xhigh, max"
    );
}

#[test]
fn saved_default_needs_both_provider_and_model_and_yields_to_a_scope() {
    let two_providers = json!({"providers": {
        "mock": {"baseUrl": BASE, "api": "anthropic-messages", "apiKey": "k",
                 "models": [{"id": "mock-sonnet", "reasoning": true}, {"id": "mock-haiku"}]},
        "mock2": {"baseUrl": BASE, "api": "anthropic-messages", "apiKey": "k",
                  "models": [{"id": "m2a"}]}}});
    let start = |settings: Value, args: &[&str]| {
        let mut a = Agent::builder()
            .no_default_args()
            .models(Some(two_providers.clone()))
            .settings(settings)
            .args(["--no-session"].iter().chain(args).copied())
            .spawn();
        let st = a.request("st", json!({"type": "get_state"}));
        (
            st["data"]["model"]["provider"]
                .as_str()
                .unwrap_or("")
                .to_string()
                + "/"
                + st["data"]["model"]["id"].as_str().unwrap_or(""),
            st["data"]["thinkingLevel"].clone(),
        )
    };
    // Only one of the two keys: ignored, the first available model starts.
    assert_eq!(
        start(json!({"defaultModel": "mock-haiku"}), &[]),
        ("mock/mock-sonnet".to_string(), json!("medium"))
    );
    assert_eq!(
        start(json!({"defaultProvider": "mock2"}), &[]),
        ("mock/mock-sonnet".to_string(), json!("medium"))
    );
    // Both: the saved default.
    assert_eq!(
        start(
            json!({"defaultProvider": "mock2", "defaultModel": "m2a"}),
            &[]
        ),
        ("mock2/m2a".to_string(), json!("off"))
    );
    // A scope wins over a saved default outside it, and keeps one inside it.
    let saved = json!({"defaultProvider": "mock", "defaultModel": "mock-sonnet"});
    assert_eq!(
        start(saved.clone(), &["--models", "mock-haiku"]),
        ("mock/mock-haiku".to_string(), json!("off"))
    );
    let mut scoped = saved.clone();
    scoped["enabledModels"] = json!(["mock-haiku"]);
    assert_eq!(
        start(scoped, &[]),
        ("mock/mock-haiku".to_string(), json!("off"))
    );
    assert_eq!(
        start(saved, &["--models", "mock-haiku,mock-sonnet"]),
        ("mock/mock-sonnet".to_string(), json!("medium"))
    );
    // A default thinking level that is no level clamps to the model's first level.
    assert_eq!(
        start(json!({"defaultThinkingLevel": "bogus"}), &[]),
        ("mock/mock-sonnet".to_string(), json!("off"))
    );
}

#[test]
fn built_in_models_carry_type_chat_in_catalog_key_order() {
    let mut a = Agent::builder()
        .no_default_args()
        .models(None)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .args([
            "--no-session",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
        ])
        .spawn();
    a.send(json!({"id": "st", "type": "get_state"}));
    a.response("st");
    let line = a
        .raw_lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .find(|l| l.contains("\"command\":\"get_state\""))
        .expect("get_state line");
    let start = line.find("\"model\":{").expect("model");
    let model = &line[start..];
    let keys = [
        "\"id\":\"claude-sonnet-4-5\"",
        "\"api\":\"anthropic-messages\"",
        "\"provider\":\"anthropic\"",
        "\"baseUrl\":",
        "\"reasoning\":",
        "\"input\":",
        "\"cost\":",
        "\"contextWindow\":",
        "\"maxTokens\":",
        "\"type\":\"chat\"",
    ];
    let mut at = 0;
    for k in keys {
        let i = model[at..]
            .find(k)
            .unwrap_or_else(|| panic!("{k} after offset {at} in {model}"));
        at += i + k.len();
    }
    // models.json models have no type.
    let mut b = Agent::spawn();
    let st = b.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["model"], model_sonnet(BASE));
}

#[test]
fn settings_changes_apply_when_the_file_cannot_be_saved() {
    let broken = "{\"steeringMode\": \"all\", \n";
    let mut a = Agent::builder()
        .settings(json!({}))
        .agent_file("settings.json", broken)
        .spawn();
    let r = a.request("f", json!({"type": "set_follow_up_mode", "mode": "all"}));
    assert_eq!(r["success"], true, "{r}");
    let r = a.request(
        "c",
        json!({"type": "set_auto_compaction", "enabled": false}),
    );
    assert_eq!(r["success"], true, "{r}");
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["followUpMode"], "all");
    assert_eq!(st["data"]["autoCompactionEnabled"], false);
    let on_disk = std::fs::read_to_string(a.agent_dir.join("settings.json")).unwrap();
    assert_eq!(on_disk, broken, "the malformed file is left alone");
}

#[test]
fn a_trusted_project_setting_still_wins_after_set_auto_compaction() {
    let mut a = Agent::builder()
        .settings(json!({"defaultProjectTrust": "always"}))
        .cwd_file(".pi/settings.json", r#"{"compaction": {"enabled": false}}"#)
        .spawn();
    let r = a.request("c", json!({"type": "set_auto_compaction", "enabled": true}));
    assert_eq!(r["success"], true, "{r}");
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["autoCompactionEnabled"], false);
    let global: Value =
        serde_json::from_str(&std::fs::read_to_string(a.agent_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(global["compaction"], json!({"enabled": true}));
}
