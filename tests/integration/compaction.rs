//! Compaction through the real binary (`rpc-protocol.md` §3.6, §6, §11.6–§11.7;
//! `agent-loop.md` §7): manual `compact` and its errors, abort during compaction, threshold
//! compaction after a run, overflow recovery, `set_auto_compaction false`, the summarization
//! retry loop, and `contextUsage` after a compaction. The summarization requests the scripted
//! server receives are checked too.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::agent::{mock_models_json, subset_match};
use crate::support::mock_llm::MockLlm;
use crate::support::Agent;

const LONG: Duration = Duration::from_secs(30);

/// The summarization system prompt (our own wording).
const SUMMARY_SYSTEM: &str = "You are a context summarization assistant.";

fn text_reply(text: &str, input: u64, output: u64) -> Value {
    json!({"blocks": [{"type": "text", "text": text}], "usage": {"input": input, "output": output}})
}

fn summary_reply(when: &str, text: &str, input: u64, output: u64) -> Value {
    json!({"when": when, "blocks": [{"type": "text", "text": text}],
           "usage": {"input": input, "output": output}})
}

fn overflow_error() -> Value {
    json!({"status": 400, "error_type": "invalid_request_error",
           "error_message": "prompt is too long: 210000 tokens > 200000 maximum"})
}

/// mock-sonnet (200k window) plus mock-small (20k window, 2048 output tokens).
fn models(base_url: &str) -> Value {
    let mut m = mock_models_json(base_url);
    m["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"id": "mock-small", "name": "Mock Small", "reasoning": false,
            "input": ["text"], "contextWindow": 20000, "maxTokens": 2048,
            "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}),
        );
    m
}

/// Settings with fast retries and these compaction settings.
fn settings(compaction: Value) -> Value {
    json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 1, "maxAgentDelayMs": 100},
           "compaction": compaction})
}

fn spawn(mock: &MockLlm, compaction: Value, model: &str) -> Agent {
    Agent::builder()
        .no_default_args()
        .args(["--provider", "mock", "--model", model, "--no-session"])
        .models(Some(models(&mock.base_url())))
        .settings(settings(compaction))
        .spawn()
}

/// Sends a prompt; returns every record from then to `agent_settled`.
fn run_prompt(agent: &mut Agent, id: &str, message: &str) -> Vec<Value> {
    let start = agent.records.len();
    agent.send(json!({"id": id, "type": "prompt", "message": message}));
    agent.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    agent.records[start..].to_vec()
}

/// Sends `cmd` and returns every record from then to its response.
fn run_until_response(agent: &mut Agent, cmd: Value) -> Vec<Value> {
    let start = agent.records.len();
    let id = cmd["id"].as_str().unwrap().to_string();
    agent.send(cmd);
    agent.wait_for_timeout(json!({"type": "response", "id": id}), LONG);
    agent.records[start..].to_vec()
}

/// Record types, with `message_*` roles; `message_update`s left out.
fn kinds(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] != "message_update")
        .map(|r| {
            let t = r["type"].as_str().unwrap_or("?");
            match t {
                "message_start" | "message_end" => {
                    format!("{t}:{}", r["message"]["role"].as_str().unwrap_or("?"))
                }
                "response" => format!("response:{}", r["command"].as_str().unwrap_or("?")),
                "compaction_start" | "compaction_end" => {
                    format!("{t}:{}", r["reason"].as_str().unwrap_or("?"))
                }
                "entry_appended" => format!("{t}:{}", r["entry"]["type"].as_str().unwrap_or("?")),
                _ => t.to_string(),
            }
        })
        .collect()
}

fn find(records: &[Value], pattern: Value) -> Value {
    records
        .iter()
        .find(|r| subset_match(&pattern, r))
        .cloned()
        .unwrap_or_else(|| panic!("no record matching {pattern} in {records:#?}"))
}

/// The user text of a logged Anthropic request's first message.
fn first_user_text(req: &Value) -> String {
    req["body"]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn is_summary_request(req: &Value) -> bool {
    let text = first_user_text(req);
    text.starts_with("<conversation>\n") || text.starts_with("# Conversation\n")
}

#[test]
fn manual_compact_summarizes_the_history_and_the_next_prompt_starts_from_the_summary() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one, about apples.", 1000, 50),
        text_reply("Reply two, about bananas.", 1100, 60),
        summary_reply("<conversation>", "## Goal\nDiscuss fruit.", 900, 40),
        summary_reply("# Conversation", "## Original Request\nBananas.", 300, 20),
        text_reply("Reply after compaction.", 400, 10),
    ]}));
    let mut agent = spawn(&mock, json!({"keepRecentTokens": 1}), "mock-sonnet");
    run_prompt(&mut agent, "p1", "Tell me about apples");
    run_prompt(&mut agent, "p2", "Tell me about bananas");

    let records = run_until_response(
        &mut agent,
        json!({"id": "c1", "type": "compact", "customInstructions": "Focus on code changes"}),
    );
    assert_eq!(
        kinds(&records),
        [
            "compaction_start:manual",
            "compaction_end:manual",
            "response:compact"
        ]
    );
    assert_eq!(
        records[0],
        json!({"type": "compaction_start", "reason": "manual"})
    );
    let response = &records[2];
    assert_eq!(response["success"], true);
    let result = &response["data"];
    // keepRecentTokens 1: the last reply alone is kept, its turn's prompt summarized apart.
    assert_eq!(
        result["summary"],
        "## Goal\nDiscuss fruit.\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nBananas."
    );
    assert_eq!(result["tokensBefore"], 1160);
    assert!(result["estimatedTokensAfter"].as_u64().unwrap() > 0);
    assert_eq!(
        result["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    // Two calls: usages summed, pi's key order for a sum.
    let usage_keys: Vec<&String> = result["usage"].as_object().unwrap().keys().collect();
    assert_eq!(
        usage_keys,
        [
            "input",
            "output",
            "cacheRead",
            "cacheWrite",
            "cacheWrite1h",
            "totalTokens",
            "cost"
        ]
    );
    assert_eq!(result["usage"]["input"], 1200);
    assert_eq!(result["usage"]["output"], 60);
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "estimatedTokensAfter",
            "usage",
            "details"
        ]
    );
    assert_eq!(
        records[1],
        json!({"type": "compaction_end", "reason": "manual", "result": result,
               "aborted": false, "willRetry": false})
    );

    // The summarization requests: the summarizer's system prompt, no tools, no caching, the
    // conversation serialized, the focus last.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let (history, prefix) = (&requests[2], &requests[3]);
    for req in [history, prefix] {
        let body = &req["body"];
        assert!(body.get("tools").is_none(), "{body}");
        let system = body["system"][0]["text"].as_str().unwrap();
        assert!(system.starts_with(SUMMARY_SYSTEM), "{system}");
        assert!(body["system"][0].get("cache_control").is_none());
        assert!(body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none());
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["model"], "mock-sonnet");
        assert_eq!(body["thinking"]["type"], "enabled");
    }
    let text = first_user_text(history);
    assert!(text.starts_with(
        "<conversation>\n[User]: Tell me about apples\n\n[Assistant]: Reply one, about apples.\n</conversation>\n\n"
    ), "{text}");
    assert!(text.contains("## Goal"));
    assert!(
        text.ends_with("\n\nAdditional focus: Focus on code changes"),
        "{text}"
    );
    let text = first_user_text(prefix);
    assert!(
        text.starts_with("# Conversation\n[User]: Tell me about bananas\n\n# Instructions\n"),
        "{text}"
    );
    assert!(text.ends_with("\n\nAdditional focus: Focus on code changes"));

    // State after: the checkpoint, the summary, the kept reply; usage unknown until a reply.
    let state = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], false);
    assert_eq!(state["data"]["messageCount"], 3);
    let messages = agent.request("m1", json!({"type": "get_messages"}));
    let roles: Vec<&str> = messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "compactionSummary", "assistant"]);
    let summary_msg = &messages["data"]["messages"][1];
    assert_eq!(summary_msg["summary"], result["summary"]);
    assert_eq!(summary_msg["tokensBefore"], 1160);
    let stats = agent.request("ss", json!({"type": "get_session_stats"}));
    assert_eq!(
        stats["data"]["contextUsage"],
        json!({"tokens": null, "contextWindow": 200000, "percent": null})
    );
    // The summarization usage counts in the totals: 1000+1100 + 900+300.
    assert_eq!(stats["data"]["tokens"]["input"], 3300);

    // The compaction entry: pi's key order, the checkpoint stamped with its own time.
    let entries = agent.request("e", json!({"type": "get_entries"}));
    let entry = entries["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "compaction")
        .unwrap()
        .clone();
    let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "usage",
            "fromHook",
            "systemMessage"
        ]
    );
    assert_eq!(entry["fromHook"], false);
    assert_eq!(entry["firstKeptEntryId"], result["firstKeptEntryId"]);
    let sys_keys: Vec<&String> = entry["systemMessage"].as_object().unwrap().keys().collect();
    assert_eq!(
        sys_keys,
        ["role", "content", "sections", "toolsAdded", "timestamp"]
    );
    assert_eq!(entry["systemMessage"], messages["data"]["messages"][0]);

    // The next prompt: no system message (the checkpoint declares it), the summary first.
    let run = run_prompt(&mut agent, "p3", "And now?");
    assert!(!kinds(&run).contains(&"message_start:system".to_string()));
    let requests = mock.wait_requests(5, LONG);
    let body = &requests[4]["body"];
    assert!(body.get("tools").is_some());
    assert_eq!(
        first_user_text(&requests[4]),
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nDiscuss fruit.\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nBananas.\n</summary>"
    );
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        body["messages"][1]["content"][0]["text"],
        "Reply two, about bananas."
    );
    let stats = agent.request("ss2", json!({"type": "get_session_stats"}));
    assert_eq!(stats["data"]["contextUsage"]["tokens"], 410);
}

#[test]
fn compact_errors_when_there_is_nothing_to_compact_or_it_was_just_done() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one.", 100, 5),
        text_reply("Reply two.", 100, 5),
        summary_reply("<conversation>", "## Goal\nS.", 10, 5),
    ]}));
    let mut agent = spawn(&mock, json!({"keepRecentTokens": 5}), "mock-sonnet");
    // Empty session.
    let records = run_until_response(&mut agent, json!({"id": "c0", "type": "compact"}));
    assert_eq!(
        records,
        [
            json!({"type": "compaction_start", "reason": "manual"}),
            json!({"type": "compaction_end", "reason": "manual", "aborted": false, "willRetry": false,
                   "errorMessage": "Compaction failed: Nothing to compact (session too small)"}),
            json!({"id": "c0", "type": "response", "command": "compact", "success": false,
                   "error": "Nothing to compact (session too small)"}),
        ]
    );
    run_prompt(&mut agent, "p1", "first question");
    run_prompt(&mut agent, "p2", "second question");
    let ok = agent.request("c1", json!({"type": "compact"}));
    assert_eq!(ok["success"], true, "{ok}");
    assert_eq!(ok["data"]["summary"], "## Goal\nS.");
    // Not split: the kept part starts at the second prompt.
    assert_eq!(mock.requests().len(), 3);
    let records = run_until_response(
        &mut agent,
        json!({"id": "c2", "type": "compact", "customInstructions": "again"}),
    );
    assert_eq!(
        records,
        [
            json!({"type": "compaction_start", "reason": "manual"}),
            json!({"type": "compaction_end", "reason": "manual", "aborted": false, "willRetry": false,
                   "errorMessage": "Compaction failed: Already compacted"}),
            json!({"id": "c2", "type": "response", "command": "compact", "success": false,
                   "error": "Already compacted"}),
        ]
    );
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn abort_during_compaction_cancels_it_and_prompts_wait_for_it() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one.", 1000, 50),
        text_reply("Reply two.", 1000, 50),
        {"when": "<conversation>", "blocks": [], "hang": true, "hang_max_ms": 20000},
        text_reply("After.", 100, 5),
    ]}));
    let mut agent = spawn(&mock, json!({"keepRecentTokens": 1}), "mock-sonnet");
    run_prompt(&mut agent, "p1", "one");
    run_prompt(&mut agent, "p2", "two");
    agent.send(json!({"id": "c1", "type": "compact"}));
    agent.wait_for(json!({"type": "compaction_start", "reason": "manual"}));
    mock.wait_requests(3, LONG);
    let state = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], true);
    assert_eq!(state["data"]["isStreaming"], false);
    let refused = agent.request("pp", json!({"type": "prompt", "message": "during"}));
    assert_eq!(
        refused["error"],
        "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
    );
    let start = agent.records.len();
    agent.send(json!({"id": "a1", "type": "abort"}));
    agent.wait_for_timeout(
        json!({"type": "response", "id": "a1"}),
        Duration::from_secs(5),
    );
    let after: Vec<Value> = agent.records[start..]
        .iter()
        .filter(|r| r["type"] != "response" || r["id"] != "st")
        .cloned()
        .collect();
    assert_eq!(
        after,
        [
            json!({"type": "compaction_end", "reason": "manual", "aborted": true, "willRetry": false}),
            json!({"id": "c1", "type": "response", "command": "compact", "success": false,
                   "error": "Compaction cancelled"}),
            json!({"id": "a1", "type": "response", "command": "abort", "success": true}),
        ]
    );
    let state = agent.request("st2", json!({"type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], false);
    assert_eq!(state["data"]["messageCount"], 5);
    // Nothing was compacted; the session goes on.
    let run = run_prompt(&mut agent, "p3", "three");
    assert!(run
        .iter()
        .any(|r| r["type"] == "agent_settled" && r["aborted"] == false));
}

#[test]
fn threshold_compaction_runs_after_the_run_before_agent_settled() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Answer one.", 100, 20),
        text_reply("Answer two.", 200, 20),
        text_reply("A long answer that used many tokens.", 5000, 200),
        summary_reply("<conversation>", "## Goal\nAuto-compacted summary.", 500, 30),
        text_reply("Answer after auto-compaction.", 300, 10),
    ]}));
    let mut agent = spawn(
        &mock,
        json!({"reserveTokens": 16384, "keepRecentTokens": 10}),
        "mock-small",
    );
    let run = run_prompt(&mut agent, "p1", "First question");
    assert!(!kinds(&run).iter().any(|k| k.starts_with("compaction")));
    run_prompt(&mut agent, "p2", "Second question");
    let run = run_prompt(&mut agent, "p3", "Third question");
    let k = kinds(&run);
    assert_eq!(
        &k[k.len() - 5..],
        [
            "turn_end",
            "agent_end",
            "compaction_start:threshold",
            "compaction_end:threshold",
            "agent_settled"
        ]
    );
    let end = find(&run, json!({"type": "compaction_end"}));
    assert_eq!(end["result"]["summary"], "## Goal\nAuto-compacted summary.");
    assert_eq!(end["result"]["tokensBefore"], 5200);
    assert_eq!(end["willRetry"], false);
    // Non-reasoning model: no thinking in the summarization request.
    let requests = mock.requests();
    assert!(is_summary_request(&requests[3]));
    assert!(requests[3]["body"].get("thinking").is_none());
    assert!(first_user_text(&requests[3]).starts_with(
        "<conversation>\n[User]: First question\n\n[Assistant]: Answer one.\n\n[User]: Second question\n\n[Assistant]: Answer two.\n</conversation>"
    ));
    let state = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], false);
    assert_eq!(state["data"]["messageCount"], 4);
    // The next run starts from the summary and compacts nothing more.
    let run = run_prompt(&mut agent, "p4", "Fourth question");
    assert!(!kinds(&run).iter().any(|k| k.starts_with("compaction")));
    let requests = mock.wait_requests(5, LONG);
    assert!(first_user_text(&requests[4]).starts_with(
        "The conversation history before this point was compacted into the following summary:"
    ));
}

#[test]
fn context_overflow_is_recovered_by_compacting_and_retrying_once() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one.", 1000, 50),
        overflow_error(),
        summary_reply("<conversation>", "## Goal\nSummary.", 100, 10),
        summary_reply("# Conversation", "Prefix.", 50, 5),
        text_reply("Recovered.", 300, 10),
        overflow_error(),
        summary_reply("<conversation>", "## Goal\nSummary two.", 100, 10),
        summary_reply("# Conversation", "Prefix two.", 50, 5),
        overflow_error(),
    ]}));
    let mut agent = spawn(&mock, json!({"keepRecentTokens": 1}), "mock-sonnet");
    run_prompt(&mut agent, "p1", "one");
    let run = run_prompt(&mut agent, "p2", "two");
    let k = kinds(&run);
    let at = k.iter().position(|x| x == "agent_end").unwrap();
    assert_eq!(
        &k[at..],
        [
            "agent_end",
            "entry_appended:context_edit",
            "compaction_start:overflow",
            "compaction_end:overflow",
            "agent_start",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled"
        ]
    );
    let failed = find(
        &run,
        json!({"type": "message_end", "message": {"stopReason": "error"}}),
    );
    assert!(failed["message"]["errorMessage"]
        .as_str()
        .unwrap()
        .contains("prompt is too long"));
    let edit = find(&run, json!({"type": "entry_appended"}));
    assert_eq!(edit["entry"]["replacement"], Value::Null);
    let end = find(&run, json!({"type": "compaction_end"}));
    assert_eq!(end["willRetry"], true);
    assert_eq!(end["result"]["firstKeptEntryId"], edit["entry"]["targetId"]);
    assert_eq!(
        find(&run, json!({"type": "agent_end", "willRetry": false}))["willRetry"],
        false
    );
    // The retried request: only the summary (with keepRecentTokens 1 the prompt went into the
    // split turn's summary, as in pi); the failed attempt is gone.
    let requests = mock.wait_requests(5, LONG);
    assert!(first_user_text(&requests[3]).starts_with("# Conversation\n[User]: two\n\n"));
    let msgs = requests[4]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("## Goal\nSummary.\n\n---\n\n**Turn Context (split turn):**\n\nPrefix."));

    // Overflow again on the retry: one recovery per prompt, then the failure is reported.
    let run = run_prompt(&mut agent, "p3", "three");
    let k = kinds(&run);
    assert_eq!(
        &k[k.len() - 9..],
        [
            "compaction_end:overflow",
            "agent_start",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "compaction_end:overflow",
            "agent_settled"
        ]
    );
    assert_eq!(
        run[run.len() - 2],
        json!({"type": "compaction_end", "reason": "overflow", "aborted": false, "willRetry": false,
               "errorMessage": "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."})
    );
}

#[test]
fn a_truncated_reply_in_a_short_session_is_hidden_without_compacting() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one.", 1000, 50),
        {"blocks": [{"type": "text", "text": "Cut off"}], "usage": {"input": 300, "output": 100},
         "stop_reason": "max_tokens"},
    ]}));
    let mut agent = spawn(&mock, json!({}), "mock-sonnet");
    run_prompt(&mut agent, "p1", "one");
    let run = run_prompt(&mut agent, "p2", "two");
    let k = kinds(&run);
    assert_eq!(
        &k[k.len() - 4..],
        [
            "turn_end",
            "agent_end",
            "entry_appended:context_edit",
            "agent_settled"
        ]
    );
    let text = agent.request("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(text["data"]["text"], "Reply one.");
}

#[test]
fn set_auto_compaction_false_turns_off_threshold_and_overflow_compaction() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Answer one.", 100, 20),
        text_reply("A long answer.", 5000, 200),
        overflow_error(),
    ]}));
    let mut agent = spawn(
        &mock,
        json!({"reserveTokens": 16384, "keepRecentTokens": 1}),
        "mock-small",
    );
    let r = agent.request(
        "ac",
        json!({"type": "set_auto_compaction", "enabled": false}),
    );
    assert_eq!(r["success"], true);
    let state = agent.request("st", json!({"type": "get_state"}));
    assert_eq!(state["data"]["autoCompactionEnabled"], false);
    run_prompt(&mut agent, "p1", "first");
    let run = run_prompt(&mut agent, "p2", "second");
    assert!(!kinds(&run).iter().any(|k| k.starts_with("compaction")));
    let run = run_prompt(&mut agent, "p3", "third");
    let k = kinds(&run);
    assert!(!k.iter().any(|k| k.starts_with("compaction")), "{k:?}");
    assert!(!k.iter().any(|k| k.starts_with("entry_appended")), "{k:?}");
    assert_eq!(mock.requests().len(), 3);
    // Persisted to the global settings.
    let file = std::fs::read_to_string(agent.agent_dir.join("settings.json")).unwrap();
    let saved: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(saved["compaction"]["enabled"], false);
}

#[test]
fn summarization_errors_are_retried_with_summarization_retry_events() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one.", 100, 5),
        text_reply("Reply two.", 100, 5),
        {"when": "<conversation>", "status": 529, "error_type": "overloaded_error", "error_message": "Overloaded"},
        summary_reply("<conversation>", "## Goal\nRetried.", 10, 5),
        {"when": "<conversation>", "status": 500, "error_type": "api_error", "error_message": "Internal server error"},
        {"when": "<conversation>", "status": 500, "error_type": "api_error", "error_message": "Internal server error"},
        {"when": "<conversation>", "status": 500, "error_type": "api_error", "error_message": "Internal server error"},
        {"when": "<conversation>", "status": 500, "error_type": "api_error", "error_message": "Internal server error"},
        // Only the prompt's request gets past the `when` replies above.
        text_reply("Reply three.", 100, 5),
    ]}));
    let mut agent = spawn(&mock, json!({"keepRecentTokens": 5}), "mock-sonnet");
    run_prompt(&mut agent, "p1", "first question");
    run_prompt(&mut agent, "p2", "second question");
    let records = run_until_response(&mut agent, json!({"id": "c1", "type": "compact"}));
    assert_eq!(
        kinds(&records),
        [
            "compaction_start:manual",
            "summarization_retry_scheduled",
            "summarization_retry_attempt_start",
            "summarization_retry_finished",
            "compaction_end:manual",
            "response:compact"
        ]
    );
    let scheduled = &records[1];
    assert_eq!(scheduled["attempt"], 1);
    assert_eq!(scheduled["maxAttempts"], 3);
    assert_eq!(scheduled["delayMs"], 1);
    assert!(scheduled["errorMessage"]
        .as_str()
        .unwrap()
        .starts_with("529 "));
    assert_eq!(
        records[2],
        json!({"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"})
    );
    assert_eq!(records[5]["data"]["summary"], "## Goal\nRetried.");

    // Every attempt fails: the last error ends the compaction.
    run_prompt(&mut agent, "p3", "third question");
    let records = run_until_response(&mut agent, json!({"id": "c2", "type": "compact"}));
    let k = kinds(&records);
    assert_eq!(
        k.iter()
            .filter(|x| *x == "summarization_retry_scheduled")
            .count(),
        3
    );
    let end = find(&records, json!({"type": "compaction_end"}));
    let msg = end["errorMessage"].as_str().unwrap();
    assert!(
        msg.starts_with("Compaction failed: Summarization failed: 500 "),
        "{msg}"
    );
    let response = records.last().unwrap();
    assert!(response["error"]
        .as_str()
        .unwrap()
        .starts_with("Summarization failed: 500 "));
}

#[test]
fn compact_aborts_the_running_prompt_first() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Reply one.", 100, 5),
        {"blocks": [{"type": "text", "text": "partial"}], "hang": true, "hang_max_ms": 20000},
        summary_reply("<conversation>", "## Goal\nAfter abort.", 10, 5),
        summary_reply("# Conversation", "Prefix.", 10, 5),
    ]}));
    let mut agent = spawn(&mock, json!({"keepRecentTokens": 1}), "mock-sonnet");
    run_prompt(&mut agent, "p1", "first question");
    agent.send(json!({"id": "p2", "type": "prompt", "message": "second question"}));
    agent.wait_for(json!({"type": "message_update"}));
    let start = agent.records.len();
    agent.send(json!({"id": "c1", "type": "compact"}));
    agent.wait_for_timeout(json!({"type": "response", "id": "c1"}), LONG);
    let k = kinds(&agent.records[start..]);
    let settled = k.iter().position(|x| x == "agent_settled").unwrap();
    let started = k
        .iter()
        .position(|x| x == "compaction_start:manual")
        .unwrap();
    assert!(settled < started, "{k:?}");
    assert!(agent.records[start..]
        .iter()
        .any(|r| r["type"] == "agent_settled" && r["aborted"] == true));
    let response = agent.response("c1");
    assert_eq!(response["success"], true, "{response}");
}
