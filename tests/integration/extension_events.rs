//! Extension events and actions through the real binary (`spec/extensions.md` §A2, §A4, §A7,
//! §A9, Part B): `input` handled / transformed / chained / steered, `before_agent_start` UI,
//! injected `custom` messages and system prompt, `context` rewriting the request only,
//! `user_bash` results and invalid shapes, `session_before_compact` cancel and extension
//! summaries with `session_compact`, `model_select` / `thinking_level_select` before their
//! responses, extension flags, an extension's own `cancel` of a dialog call, `pi.sendMessage`
//! with and without `triggerTurn`, and `terminate` from a blocking `tool_call`.
//!
//! Most handlers report their payload as a JSON `ui.notify` message, so the tests can compare
//! whole payloads (see [`note`]).

use std::time::Duration;

use serde_json::{json, Value};

use crate::extensions::{assert_window, blocked_end, exchange, pos, prompt, view};
use crate::support::ext::{
    self, ext_error, ext_records, handled, python, python_extension, ui, ui_id, unit_path,
    without_id,
};
use crate::support::mock_llm::MockLlm;
use crate::support::records::{find, find_all, norm, strip_cache};
use crate::support::run::{
    agent_for, fast_settings, no_llm, request_messages, run_command, run_prompt, text_reply,
    tool_call, LONG,
};
use crate::support::Agent;

// ------------------------------------------------------------------------------------ helpers

/// The JSON a handler sent as the `message` of a `ui.notify` record.
fn note(record: &Value) -> Value {
    assert_eq!(
        (&record["type"], &record["method"]),
        (&json!("extension_ui_request"), &json!("notify")),
        "{record}"
    );
    let text = record["message"].as_str().expect("a notify message");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("notify {text:?} is not JSON: {e}"))
}

/// The JSON payloads of every notify in `records`, in order.
fn notes(records: &[Value]) -> Vec<Value> {
    find_all(
        records,
        json!({"type": "extension_ui_request", "method": "notify"}),
    )
    .iter()
    .map(note)
    .collect()
}

/// `view` with every notify shown as `"notify"` (their JSON payloads are compared apart, with
/// [`note`]).
fn views_without_notes(records: &[Value]) -> Vec<Value> {
    view(records)
        .into_iter()
        .map(|v| {
            if v["method"] == "notify" {
                json!("notify")
            } else {
                v
            }
        })
        .collect()
}

/// The `message` of the first `message_end` with `role` in `records`, normalized.
fn message_end(records: &[Value], role: &str) -> Value {
    let (_, r) = find(
        records,
        json!({"type": "message_end", "message": {"role": role}}),
    );
    norm(&r["message"])
}

/// The roles of the `message_start` records in `records`.
fn started_roles(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "message_start")
        .map(|r| r["message"]["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// `get_entries` of `agent`.
fn entries(agent: &mut Agent, id: &str) -> Vec<Value> {
    let r = agent.request(id, json!({"type": "get_entries"}));
    assert_eq!(r["success"], true, "{r}");
    r["data"]["entries"].as_array().unwrap().clone()
}

/// `get_messages` of `agent`.
fn messages(agent: &mut Agent, id: &str) -> Vec<Value> {
    let r = agent.request(id, json!({"type": "get_messages"}));
    assert_eq!(r["success"], true, "{r}");
    r["data"]["messages"].as_array().unwrap().clone()
}

/// An extension subscribed to `events` that reports each event it is sent as a JSON notify
/// (`report(event)`: the whole payload, unless `answer_code` redefines it) and answers with
/// `answer(event)` (Python, defined in `answer_code`).
fn reporter(events: &[&str], answer_code: &str) -> String {
    let subs: Vec<String> = events
        .iter()
        .map(|e| format!("{{\"event\": \"{e}\"}}"))
        .collect();
    format!(
        r#"
def initialize(msg):
    return {{"subscriptions": [{}]}}

def on_event(event, scope):
    fire(scope, "ui.notify", message=json.dumps(report(event)))
    return answer(event)

def report(event):
    return event

{}
"#,
        subs.join(", "),
        ext::dedent(answer_code)
    )
}

// ------------------------------------------------------------------------------------ input

#[test]
fn an_input_handler_that_handles_the_prompt_answers_handled_and_starts_no_run() {
    let Some(py) =
        python("an_input_handler_that_handles_the_prompt_answers_handled_and_starts_no_run")
    else {
        return;
    };
    let mock = no_llm();
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "taker",
        &reporter(
            &["input", "before_agent_start"],
            r#"
            def answer(event):
                return {"action": "handled"}
            "#,
        ),
    )
    .spawn();
    let recs = prompt(&mut a, "p1", "secret plan");
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert_eq!(
        note(&recs[0]),
        json!({"type": "input", "text": "secret plan", "source": "rpc"})
    );
    assert_eq!(recs[1], handled("p1"));
    // No run: no agent events, no request, nothing stored.
    assert_eq!(a.drain(Duration::from_millis(500)), Vec::<Value>::new());
    assert_eq!(mock.requests().len(), 0);
    assert_eq!(messages(&mut a, "m"), Vec::<Value>::new());
}

#[test]
fn an_input_transform_changes_the_stored_and_sent_user_text() {
    let Some(py) = python("an_input_transform_changes_the_stored_and_sent_user_text") else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Noted.")]}));
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "redactor",
        &reporter(
            &["input"],
            r#"
            def answer(event):
                return {"action": "transform", "text": event["text"].replace("hunter2", "[redacted]")}
            "#,
        ),
    )
    .spawn();
    let recs = run_prompt(&mut a, "p1", "my password is hunter2");
    let v = view(&recs);
    assert!(
        pos(&v, &json!("response:p1")) < pos(&v, &json!("agent_start")),
        "{v:#?}"
    );
    assert_eq!(
        notes(&recs),
        [json!({"type": "input", "text": "my password is hunter2", "source": "rpc"})]
    );
    let (_, start) = find(
        &recs,
        json!({"type": "message_start", "message": {"role": "user"}}),
    );
    let user = json!({"role": "user",
                      "content": [{"type": "text", "text": "my password is [redacted]"}],
                      "timestamp": 0});
    assert_eq!(norm(&start["message"]), user);
    assert_eq!(message_end(&recs, "user"), user);
    let stored = messages(&mut a, "m");
    let stored_user = stored.iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(norm(stored_user), user);
    let sent = request_messages(&mock, 0);
    assert_eq!(
        sent[0],
        json!({"role": "user", "content": [{"type": "text", "text": "my password is [redacted]"}]})
    );
}

#[test]
fn input_transforms_chain_across_extensions_in_load_order_and_handled_stops_the_chain() {
    let Some(py) = python(
        "input_transforms_chain_across_extensions_in_load_order_and_handled_stops_the_chain",
    ) else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Chained.")]}));
    let builder = python_extension(
        agent_for(&mock),
        &py,
        "a-first",
        &reporter(
            &["input"],
            r#"
            def report(event):
                return {"a saw": event["text"]}

            def answer(event):
                if event["text"] == "stop":
                    return {"action": "handled"}
                return {"action": "transform", "text": event["text"] + " +a"}
            "#,
        ),
    );
    let mut a = python_extension(
        builder,
        &py,
        "b-second",
        &reporter(
            &["input"],
            r#"
            def report(event):
                return {"b saw": event["text"]}

            def answer(event):
                return {"action": "transform", "text": event["text"] + " +b"}
            "#,
        ),
    )
    .spawn();
    let recs = run_prompt(&mut a, "p1", "hi");
    assert_eq!(
        notes(&recs),
        [json!({"a saw": "hi"}), json!({"b saw": "hi +a"})]
    );
    let v = view(&recs);
    assert_eq!(v[2], json!("response:p1"), "{v:#?}");
    assert_eq!(
        message_end(&recs, "user")["content"],
        json!([{"type": "text", "text": "hi +a +b"}])
    );
    // handled in the first extension: the second never sees the input.
    let recs = prompt(&mut a, "p2", "stop");
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert_eq!(note(&recs[0]), json!({"a saw": "stop"}));
    assert_eq!(recs[1], handled("p2"));
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn steer_and_follow_up_go_through_input_with_their_streaming_behavior() {
    let Some(py) = python("steer_and_follow_up_go_through_input_with_their_streaming_behavior")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Slow answer."}], "first_delay_ms": 3000},
        text_reply("After the steer."),
        text_reply("After the follow-up."),
    ]}));
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "watcher",
        &reporter(
            &["input"],
            r#"
            def answer(event):
                if event["text"] == "drop me":
                    return {"action": "handled"}
                return {"action": "continue"}
            "#,
        ),
    )
    .spawn();
    let from = a.records.len();
    let recs = prompt(&mut a, "p1", "go");
    assert_eq!(
        notes(&recs),
        [json!({"type": "input", "text": "go", "source": "rpc"})]
    );
    mock.wait_requests(1, LONG);

    let recs = exchange(
        &mut a,
        "s1",
        json!({"type": "steer", "message": "and more"}),
    );
    // The input handler's UI comes before the response (the run's own events aside).
    assert_eq!(
        views_without_notes(&recs)
            .into_iter()
            .filter(|x| x == "notify" || x.as_str().is_some_and(|s| s.starts_with("response:")))
            .collect::<Vec<_>>(),
        [json!("notify"), json!("response:s1")]
    );
    assert_eq!(
        notes(&recs),
        [
            json!({"type": "input", "text": "and more", "source": "rpc", "streamingBehavior": "steer"})
        ]
    );
    assert_eq!(
        recs.last().unwrap()["data"],
        json!({"disposition": "queued"})
    );

    let recs = exchange(
        &mut a,
        "f1",
        json!({"type": "follow_up", "message": "then this"}),
    );
    assert_eq!(
        notes(&recs),
        [
            json!({"type": "input", "text": "then this", "source": "rpc", "streamingBehavior": "followUp"})
        ]
    );
    assert_eq!(
        recs.last().unwrap()["data"],
        json!({"disposition": "queued"})
    );

    // A steer an input handler takes: handled, never queued.
    let recs = exchange(&mut a, "s2", json!({"type": "steer", "message": "drop me"}));
    assert_eq!(
        notes(&recs),
        [
            json!({"type": "input", "text": "drop me", "source": "rpc", "streamingBehavior": "steer"})
        ]
    );
    assert_eq!(
        recs.last().unwrap(),
        &json!({"id": "s2", "type": "response", "command": "steer", "success": true,
                "data": {"disposition": "handled"}})
    );
    assert!(
        recs.iter().all(|r| r["type"] != "queue_update"),
        "{recs:#?}"
    );

    a.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let users: Vec<Value> = find_all(
        &a.records[from..],
        json!({"type": "message_end", "message": {"role": "user"}}),
    )
    .iter()
    .map(|r| r["message"]["content"][0]["text"].clone())
    .collect();
    assert_eq!(users, [json!("go"), json!("and more"), json!("then this")]);
}

// ------------------------------------------------------------------------ before_agent_start

#[test]
fn before_agent_start_ui_precedes_started_and_its_message_and_system_prompt_are_used() {
    let Some(py) =
        python("before_agent_start_ui_precedes_started_and_its_message_and_system_prompt_are_used")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Arr.")]}));
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "pirate",
        &reporter(
            &["before_agent_start"],
            r#"
            def report(event):
                return {"type": event["type"], "messageType": event["messageType"],
                        "prompt": event["prompt"],
                        "hasSystemPrompt": isinstance(event.get("systemPrompt"), str) and len(event["systemPrompt"]) > 0}

            def answer(event):
                return {"message": {"customType": "pirate-note", "content": "Speak like a pirate.", "display": True},
                        "systemPrompt": "You are a pirate."}
            "#,
        ),
    )
    .spawn();
    let from = a.records.len();
    let recs = prompt(&mut a, "p1", "hello");
    // The handler's UI comes before the `started` response, and no agent event before it.
    assert_eq!(
        views_without_notes(&recs),
        [json!("notify"), json!("response:p1")]
    );
    assert_eq!(
        note(&recs[0]),
        json!({"type": "before_agent_start", "messageType": "user", "prompt": "hello",
               "hasSystemPrompt": true})
    );
    assert_eq!(
        recs[1],
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true,
               "data": {"disposition": "started"}})
    );
    a.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let run = a.records[from..].to_vec();

    // The custom message comes after the user message.
    let roles: Vec<String> = started_roles(&run)
        .into_iter()
        .filter(|r| r != "system")
        .collect();
    assert_eq!(roles, ["user", "custom", "assistant"]);
    let kinds: Vec<Value> = run
        .iter()
        .filter(|r| r["type"] == "message_start" || r["type"] == "message_end")
        .map(|r| {
            json!(format!(
                "{}:{}",
                r["type"].as_str().unwrap(),
                r["message"]["role"].as_str().unwrap()
            ))
        })
        .collect();
    assert_window(
        &kinds,
        &[
            json!("message_start:user"),
            json!("message_end:user"),
            json!("message_start:custom"),
            json!("message_end:custom"),
            json!("message_start:assistant"),
        ],
    );
    let custom = json!({"role": "custom", "customType": "pirate-note",
                        "content": "Speak like a pirate.", "display": true, "timestamp": 0});
    let (_, start) = find(
        &run,
        json!({"type": "message_start", "message": {"role": "custom"}}),
    );
    assert_eq!(norm(&start["message"]), custom);
    assert_eq!(message_end(&run, "custom"), custom);

    // Stored as a custom_message entry right after the user message.
    let all = entries(&mut a, "e");
    let i_user = all
        .iter()
        .position(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .expect("the user message entry");
    let entry = &all[i_user + 1];
    assert_eq!(
        entry,
        &json!({"type": "custom_message", "customType": "pirate-note",
                "content": "Speak like a pirate.", "display": true,
                "id": entry["id"], "parentId": all[i_user]["id"], "timestamp": entry["timestamp"]})
    );
    assert!(
        entry["id"].is_string() && entry["timestamp"].is_string(),
        "{entry}"
    );

    // The request: the extension's system prompt, the custom message as user content.
    let req = &mock.wait_requests(1, LONG)[0];
    assert_eq!(
        strip_cache(&req["body"]["system"]),
        json!([{"type": "text", "text": "You are a pirate."}])
    );
    assert_eq!(
        request_messages(&mock, 0),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": [{"type": "text", "text": "Speak like a pirate."}]}
        ])
    );
}

// ------------------------------------------------------------------------------------ context

#[test]
fn a_context_handler_changes_the_request_but_not_the_stored_messages() {
    let Some(py) = python("a_context_handler_changes_the_request_but_not_the_stored_messages")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("One."), text_reply("Two.")]}));
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "pruner",
        &reporter(
            &["context"],
            r#"
            def report(event):
                return {"roles": [m["role"] for m in event["messages"]]}

            def answer(event):
                # Keep only the last message, with its text marked.
                last = dict(event["messages"][-1])
                last["content"] = [{"type": "text", "text": last["content"][0]["text"] + " (seen by context)"}]
                return {"messages": [last]}
            "#,
        ),
    )
    .spawn();
    let recs = run_prompt(&mut a, "p1", "first");
    // The handler gets the messages without the system message.
    assert_eq!(notes(&recs), [json!({"roles": ["user"]})]);
    let recs = run_prompt(&mut a, "p2", "second");
    assert_eq!(
        notes(&recs),
        [json!({"roles": ["user", "assistant", "user"]})]
    );
    assert_eq!(
        request_messages(&mock, 0),
        json!([{"role": "user", "content": [{"type": "text", "text": "first (seen by context)"}]}])
    );
    assert_eq!(
        request_messages(&mock, 1),
        json!([{"role": "user", "content": [{"type": "text", "text": "second (seen by context)"}]}])
    );
    // Stored: what the user sent, all of it.
    let stored: Vec<(Value, Value)> = messages(&mut a, "m")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| (m["role"].clone(), m["content"][0]["text"].clone()))
        .collect();
    assert_eq!(
        stored,
        [
            (json!("user"), json!("first")),
            (json!("assistant"), json!("One.")),
            (json!("user"), json!("second")),
            (json!("assistant"), json!("Two.")),
        ]
    );
    assert_eq!(
        message_end(&recs, "user")["content"],
        json!([{"type": "text", "text": "second"}])
    );
}

// ------------------------------------------------------------------------------------ user_bash

#[test]
fn user_bash_results_replace_the_command_and_bad_shapes_fail_it() {
    let Some(py) = python("user_bash_results_replace_the_command_and_bad_shapes_fail_it") else {
        return;
    };
    let mock = no_llm();
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "bashhook",
        &reporter(
            &["user_bash"],
            r#"
            def answer(event):
                command = event["command"]
                if command.startswith("fake "):
                    return {"result": {"output": "from extension\n", "exitCode": 7,
                                       "cancelled": False, "truncated": False}}
                if command.startswith("bad "):
                    return {"result": {"output": "missing fields"}}
                if command.startswith("ops "):
                    return {"operations": {}}
                if command.startswith("boom "):
                    raise RuntimeError("bash refused")
                return None
            "#,
        ),
    )
    .spawn();
    let path = unit_path(&a, "bashhook");
    let cwd = a.cwd.to_string_lossy().into_owned();

    // {result}: the response data; no process runs.
    let recs = exchange(
        &mut a,
        "b1",
        json!({"type": "bash", "command": "fake touch ran.txt", "excludeFromContext": true}),
    );
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert_eq!(
        note(&recs[0]),
        json!({"type": "user_bash", "command": "fake touch ran.txt", "excludeFromContext": true,
               "cwd": cwd})
    );
    assert_eq!(
        recs[1],
        json!({"id": "b1", "type": "response", "command": "bash", "success": true,
               "data": {"output": "from extension\n", "exitCode": 7, "cancelled": false,
                        "truncated": false}})
    );
    assert!(!a.cwd.join("ran.txt").exists());

    // Bad shapes (and {operations}, not offered): extension_error, then the command fails.
    let invalid = "Invalid user_bash handler result: return undefined for local execution or \
                   exactly one valid { operations } or { result } object";
    for (id, command) in [("b2", "bad touch bad.txt"), ("b3", "ops touch ops.txt")] {
        let recs = exchange(&mut a, id, json!({"type": "bash", "command": command}));
        assert_eq!(recs.len(), 3, "{recs:#?}");
        assert_eq!(
            note(&recs[0]),
            json!({"type": "user_bash", "command": command, "excludeFromContext": false, "cwd": cwd})
        );
        assert_eq!(recs[1], ext_error(&path, "user_bash", invalid));
        assert_eq!(
            recs[2],
            json!({"id": id, "type": "response", "command": "bash", "success": false,
                   "error": invalid})
        );
    }
    assert!(!a.cwd.join("bad.txt").exists() && !a.cwd.join("ops.txt").exists());

    // A throw: extension_error with its message, and the command fails with it.
    let recs = exchange(
        &mut a,
        "b4",
        json!({"type": "bash", "command": "boom touch boom.txt"}),
    );
    assert_eq!(
        recs[1..],
        [
            ext_error(&path, "user_bash", "bash refused"),
            json!({"id": "b4", "type": "response", "command": "bash", "success": false,
                   "error": "bash refused"})
        ]
    );
    assert!(!a.cwd.join("boom.txt").exists());

    // Nothing returned: the command runs as usual.
    let r = a.request("b5", json!({"type": "bash", "command": "echo real"}));
    assert_eq!(
        r,
        json!({"id": "b5", "type": "response", "command": "bash", "success": true,
               "data": {"output": "real\n", "exitCode": 0, "cancelled": false, "truncated": false}})
    );
}

// ------------------------------------------------------------------------------------ compaction

#[test]
fn session_before_compact_can_cancel_or_supply_the_summary() {
    let Some(py) = python("session_before_compact_can_cancel_or_supply_the_summary") else {
        return;
    };
    // Only the two runs: a summarization request would find the script exhausted.
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Reply one."}], "usage": {"input": 100, "output": 5}},
        {"blocks": [{"type": "text", "text": "Reply two."}], "usage": {"input": 100, "output": 5}},
    ]}));
    let mut settings = fast_settings();
    settings["compaction"] = json!({"keepRecentTokens": 5});
    let mut a = python_extension(
        agent_for(&mock).settings(settings),
        &py,
        "summarizer",
        &reporter(
            &["session_before_compact", "session_compact"],
            r#"
            def report(event):
                if event["type"] == "session_before_compact":
                    return {"type": event["type"], "reason": event["reason"],
                            "customInstructions": event.get("customInstructions"),
                            "willRetry": event["willRetry"],
                            "firstKeptEntryId": event["preparation"]["firstKeptEntryId"]}
                return event

            def answer(event):
                if event["type"] != "session_before_compact":
                    return None
                if event.get("customInstructions") == "cancel":
                    return {"cancel": True}
                return {"compaction": {"summary": "Summary by the extension.",
                                       "firstKeptEntryId": event["preparation"]["firstKeptEntryId"],
                                       "tokensBefore": 4242}}
            "#,
        ),
    )
    .spawn();
    run_prompt(&mut a, "p1", "first question");
    run_prompt(&mut a, "p2", "second question");

    // {cancel:true}: Compaction cancelled, compaction_end aborted.
    let recs = exchange(
        &mut a,
        "c1",
        json!({"type": "compact", "customInstructions": "cancel"}),
    );
    assert_eq!(recs.len(), 4, "{recs:#?}");
    assert_eq!(
        recs[0],
        json!({"type": "compaction_start", "reason": "manual"})
    );
    let first_kept = note(&recs[1])["firstKeptEntryId"].clone();
    assert!(first_kept.is_string(), "{:#?}", recs[1]);
    assert_eq!(
        note(&recs[1]),
        json!({"type": "session_before_compact", "reason": "manual", "customInstructions": "cancel",
               "willRetry": false, "firstKeptEntryId": first_kept})
    );
    assert_eq!(
        recs[2..],
        [
            json!({"type": "compaction_end", "reason": "manual", "aborted": true, "willRetry": false}),
            json!({"id": "c1", "type": "response", "command": "compact", "success": false,
                   "error": "Compaction cancelled"}),
        ]
    );
    assert!(entries(&mut a, "e1")
        .iter()
        .all(|e| e["type"] != "compaction"));

    // {compaction}: used as is, no summarization request, session_compact fromExtension.
    let recs = exchange(
        &mut a,
        "c2",
        json!({"type": "compact", "customInstructions": "keep it short"}),
    );
    assert_eq!(
        views_without_notes(&recs),
        [
            json!("compaction_start"),
            json!("notify"),
            json!("notify"),
            json!("compaction_end"),
            json!("response:c2")
        ]
    );
    let response = recs.last().unwrap();
    assert_eq!(response["success"], true, "{response}");
    let result = &response["data"];
    assert!(result["estimatedTokensAfter"].is_u64(), "{result}");
    assert_eq!(
        result,
        &json!({"summary": "Summary by the extension.", "firstKeptEntryId": first_kept,
                "tokensBefore": 4242, "estimatedTokensAfter": result["estimatedTokensAfter"]})
    );
    assert_eq!(
        recs[3],
        json!({"type": "compaction_end", "reason": "manual", "result": result,
               "aborted": false, "willRetry": false})
    );
    assert_eq!(mock.requests().len(), 2, "no summarization request");

    let entry = entries(&mut a, "e2")
        .into_iter()
        .find(|e| e["type"] == "compaction")
        .expect("a compaction entry");
    assert_eq!(entry["summary"], "Summary by the extension.");
    assert_eq!(entry["firstKeptEntryId"], first_kept);
    assert_eq!(entry["tokensBefore"], 4242);
    assert_eq!(entry["fromHook"], true, "{entry}");
    assert_eq!(
        note(&recs[2]),
        json!({"type": "session_compact", "compactionEntry": entry, "fromExtension": true,
               "reason": "manual", "willRetry": false})
    );
}

// ---------------------------------------------------------------------- model and thinking level

#[test]
fn model_select_and_thinking_level_select_handlers_run_before_the_responses() {
    let Some(py) =
        python("model_select_and_thinking_level_select_handlers_run_before_the_responses")
    else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "selector",
        &reporter(
            &["model_select", "thinking_level_select"],
            r#"
            def answer(event):
                return None
            "#,
        ),
    )
    .spawn();
    let before = a.request("st0", json!({"type": "get_state"}))["data"].clone();
    assert_eq!(before["thinkingLevel"], "medium", "{before}");

    // thinking_level_select: after the wire thinking_level_changed, before the response.
    let recs = exchange(
        &mut a,
        "t1",
        json!({"type": "set_thinking_level", "level": "high"}),
    );
    assert_eq!(
        views_without_notes(&recs),
        [
            json!("thinking_level_changed"),
            json!("notify"),
            json!("response:t1")
        ]
    );
    assert_eq!(
        note(&recs[1]),
        json!({"type": "thinking_level_select", "level": "high", "previousLevel": "medium"})
    );
    assert_eq!(recs[2]["success"], true, "{}", recs[2]);

    // model_select: awaited before the set_model response.
    let recs = exchange(
        &mut a,
        "m1",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    // mock-haiku cannot reason: the level is clamped too (thinking_level_changed and its
    // handler). Every handler's UI precedes the response.
    let v = views_without_notes(&recs);
    assert_eq!(v.last().unwrap(), &json!("response:m1"), "{recs:#?}");
    assert_eq!(recs.last().unwrap()["success"], true, "{recs:#?}");
    let mut payloads = notes(&recs);
    payloads.sort_by_key(|n| n["type"].as_str().unwrap_or_default().to_string());
    let after = a.request("st1", json!({"type": "get_state"}))["data"].clone();
    assert_eq!(after["model"]["id"], "mock-haiku", "{after}");
    assert_eq!(
        payloads,
        [
            json!({"type": "model_select", "model": after["model"],
                   "previousModel": before["model"], "source": "set"}),
            json!({"type": "thinking_level_select", "level": after["thinkingLevel"],
                   "previousLevel": "high"}),
        ]
    );
    assert_eq!(after["thinkingLevel"], "off", "{after}");
}

// ------------------------------------------------------------------------------------ flags

/// An extension registering `plan` (boolean) and `level` (string) and reporting, at
/// `session_start`, the host messages it got so far and the `flags` message.
const FLAGS: &str = r#"
    seen = []

    class _Tee:
        """Records every host message before the runtime handles it."""

        def __init__(self, f):
            self.f = f

        def __iter__(self):
            for line in self.f:
                if line.strip():
                    seen.append(json.loads(line))
                yield line

    sys.stdin = _Tee(sys.stdin)

    def initialize(msg):
        return {"subscriptions": [{"event": "session_start"}],
                "flags": [{"name": "plan", "type": "boolean", "description": "Plan first"},
                          {"name": "level", "type": "string"}]}

    def on_event(event, scope):
        order = [m["type"] if m["type"] != "event" else "event:" + m["event"]["type"]
                 for m in seen if m["type"] != "result"]
        flags = [dict((k, v) for k, v in m.items() if k != "ext") for m in seen if m["type"] == "flags"]
        fire(scope, "ui.notify", message=json.dumps({"order": order, "flags": flags}))
"#;

#[test]
fn extension_flags_are_sent_before_session_start() {
    let Some(py) = python("extension_flags_are_sent_before_session_start") else {
        return;
    };
    let mut a = python_extension(
        Agent::builder().args(["--plan", "--level", "deep"]),
        &py,
        "planner",
        FLAGS,
    )
    .spawn();
    let recs = exchange(&mut a, "st", json!({"type": "get_state"}));
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert_eq!(
        note(&recs[0]),
        json!({"order": ["initialize", "flags", "event:session_start"],
               "flags": [{"type": "flags", "values": {"plan": true, "level": "deep"}}]})
    );
}

#[test]
fn unknown_options_and_string_flags_without_a_value_fail_the_start_with_extensions_loaded() {
    let Some(py) = python(
        "unknown_options_and_string_flags_without_a_value_fail_the_start_with_extensions_loaded",
    ) else {
        return;
    };
    for (args, expected) in [
        (vec!["--plan", "--nope"], "Error: Unknown option: --nope"),
        (
            vec!["--plan", "--level"],
            "Error: Extension flag \"--level\" requires a value",
        ),
    ] {
        let mut a =
            python_extension(Agent::builder().args(args.clone()), &py, "planner", FLAGS).spawn();
        let (code, stderr) = ext::exit_and_stderr(&mut a, LONG);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(a.raw_lines.is_empty(), "{args:?}: {:?}", a.records);
        assert!(
            stderr.lines().any(|l| l == expected),
            "{args:?}: no line {expected:?} in stderr:\n{stderr}"
        );
    }
}

// ------------------------------------------------------------------------------ cancel, actions

#[test]
fn an_extension_cancel_resolves_its_own_dialog_call_to_the_default_silently() {
    let Some(py) =
        python("an_extension_cancel_resolves_its_own_dialog_call_to_the_default_silently")
    else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "fickle",
        r#"
        def initialize(msg):
            return {"commands": [{"name": "ask"}]}

        def on_command(name, args, scope):
            with _lock:
                slot = _waiting["x1"] = [threading.Event(), None]
            if args == "confirm":
                method, params = "ui.confirm", {"title": "Sure?", "message": "really"}
            else:
                method, params = "ui.select", {"title": "Pick", "options": ["a", "b"]}
            send({"type": "call", "id": "x1", "ext": EXT, "scope": scope, "method": method, "params": params})
            send({"type": "cancel", "id": "x1"})
            slot[0].wait()
            fire(scope, "ui.notify", message=json.dumps(slot[1]))
        "#,
    )
    .spawn();
    for (id, args, request, default) in [
        (
            "c1",
            "confirm",
            ui("confirm", json!({"title": "Sure?", "message": "really"})),
            json!(false),
        ),
        (
            "c2",
            "select",
            ui("select", json!({"title": "Pick", "options": ["a", "b"]})),
            Value::Null,
        ),
    ] {
        let recs = prompt(&mut a, id, &format!("/ask {args}"));
        assert_eq!(recs.len(), 3, "{recs:#?}");
        assert_eq!(without_id(&recs[0]), request);
        assert_eq!(
            note(&recs[1]),
            json!({"type": "result", "id": "x1", "ok": true, "value": default})
        );
        assert_eq!(recs[2], handled(id));
        // The dialog is gone: the client's answer writes nothing.
        let dialog = ui_id(&recs[0]);
        a.send(
            json!({"type": "extension_ui_response", "id": dialog, "confirmed": true, "value": "a"}),
        );
        assert_eq!(a.drain(Duration::from_millis(300)), Vec::<Value>::new());
    }
}

#[test]
fn send_message_while_idle_appends_a_custom_message_or_triggers_a_turn() {
    let Some(py) = python("send_message_while_idle_appends_a_custom_message_or_triggers_a_turn")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [text_reply("Reminder received.")]}));
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "notes",
        r#"
        def initialize(msg):
            return {"commands": [{"name": "note"}, {"name": "note-run"}],
                    "subscriptions": [{"event": "before_agent_start"}]}

        def on_command(name, args, scope):
            if name == "note":
                fire(scope, "pi.sendMessage", message={"customType": "note", "content": "Buy milk.", "display": True})
            else:
                fire(scope, "pi.sendMessage", message={"customType": "note", "content": "Run now.", "display": False,
                                                       "details": {"n": 2}},
                     options={"triggerTurn": True})
            return None

        def on_event(event, scope):
            fire(scope, "ui.notify", message=json.dumps({"messageType": event["messageType"],
                                                         "message": event.get("message")}))
        "#,
    )
    .spawn();

    // Idle, no trigger: message_start/message_end of the custom message, a custom_message entry.
    let recs = prompt(&mut a, "c1", "/note");
    let milk = json!({"role": "custom", "customType": "note", "content": "Buy milk.",
                      "display": true, "timestamp": 0});
    assert_eq!(recs.len(), 3, "{recs:#?}");
    assert_eq!(recs[0]["type"], "message_start");
    assert_eq!(norm(&recs[0]["message"]), milk);
    assert_eq!(recs[1]["type"], "message_end");
    assert_eq!(norm(&recs[1]["message"]), milk);
    assert_eq!(recs[2], handled("c1"));
    assert_eq!(a.drain(Duration::from_millis(300)), Vec::<Value>::new());
    assert_eq!(mock.requests().len(), 0);
    let all = entries(&mut a, "e1");
    let last = all.last().unwrap();
    assert_eq!(
        last,
        &json!({"type": "custom_message", "customType": "note", "content": "Buy milk.",
                "display": true, "id": last["id"], "parentId": last["parentId"],
                "timestamp": last["timestamp"]})
    );
    let stored = messages(&mut a, "m1");
    assert_eq!(norm(stored.last().unwrap()), milk);

    // triggerTurn: a run whose first message (after the system message) is the custom message.
    let from = a.records.len();
    let r = a.request("c2", json!({"type": "prompt", "message": "/note-run"}));
    assert_eq!(r, handled("c2"));
    a.wait_for_timeout(json!({"type": "agent_settled"}), LONG);
    let run = a.records[from..].to_vec();
    let run_now = json!({"role": "custom", "customType": "note", "content": "Run now.",
                         "display": false, "details": {"n": 2}, "timestamp": 0});
    let roles: Vec<String> = started_roles(&run)
        .into_iter()
        .filter(|r| r != "system")
        .collect();
    assert_eq!(roles, ["custom", "assistant"], "{run:#?}");
    assert_eq!(message_end(&run, "custom"), run_now);
    let n = notes(&run);
    assert_eq!(n.len(), 1, "{run:#?}");
    assert_eq!(n[0]["messageType"], "custom");
    assert_eq!(norm(&n[0]["message"]), run_now);
    assert_eq!(
        request_messages(&mock, 0),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Buy milk."}]},
            {"role": "user", "content": [{"type": "text", "text": "Run now."}]}
        ])
    );
}

// ------------------------------------------------------------------------------------ terminate

/// A call blocked with `terminate:true`: the blocked end (§A7.5), its result carrying the
/// `terminate` flag the batch check reads (§A7.5, agent-core's `result.terminate`).
fn terminated_end(id: &str) -> Value {
    let mut end = blocked_end(id, "bash", "Stopped by policy");
    end["result"]["terminate"] = json!(true);
    end
}

#[test]
fn terminate_from_a_blocking_tool_call_ends_the_run_after_the_batch() {
    let Some(py) = python("terminate_from_a_blocking_tool_call_ends_the_run_after_the_batch")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("toolu_1", "bash", json!({"command": "touch stop1.txt"}))]},
        {"blocks": [
            tool_call("toolu_2", "bash", json!({"command": "touch stop2.txt"})),
            tool_call("toolu_3", "bash", json!({"command": "echo allowed"})),
        ]},
        text_reply("Went on after the mixed batch."),
    ]}));
    let mut a = python_extension(
        agent_for(&mock),
        &py,
        "stopper",
        r#"
        def initialize(msg):
            return {"subscriptions": [{"event": "tool_call"}]}

        def on_event(event, scope):
            if event["input"]["command"].startswith("touch stop"):
                return {"block": True, "reason": "Stopped by policy", "terminate": True}
            return None
        "#,
    )
    .spawn();

    // Every call of the batch terminates: the run ends without another request.
    let recs = run_prompt(&mut a, "p1", "stop");
    let (_, end) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_1"}),
    );
    assert_eq!(end, terminated_end("toolu_1"));
    let v = view(&recs);
    let i = pos(&v, &json!("tool_execution_end:toolu_1"));
    assert_eq!(
        v[i..],
        [
            json!("tool_execution_end:toolu_1"),
            json!("message_start"),
            json!("message_end"),
            json!("turn_end"),
            json!("agent_end"),
            json!("agent_settled"),
        ]
    );
    assert_eq!(recs.iter().filter(|r| r["type"] == "turn_start").count(), 1);
    assert_eq!(a.drain(Duration::from_millis(300)), Vec::<Value>::new());
    assert_eq!(mock.requests().len(), 1);
    assert!(!a.cwd.join("stop1.txt").exists());

    // Not every call terminates: the run goes on.
    let recs = run_command(
        &mut a,
        json!({"id": "p2", "type": "prompt", "message": "mixed"}),
    );
    let (_, end2) = find(
        &recs,
        json!({"type": "tool_execution_end", "toolCallId": "toolu_2"}),
    );
    assert_eq!(end2, terminated_end("toolu_2"));
    assert_eq!(recs.iter().filter(|r| r["type"] == "turn_start").count(), 2);
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(ext_records(&recs), Vec::<Value>::new());
}

// ---------------------------------------------------------------------------- state calls

#[test]
fn state_calls_reach_the_session_and_changes_they_make_reach_the_extensions() {
    let Some(py) =
        python("state_calls_reach_the_session_and_changes_they_make_reach_the_extensions")
    else {
        return;
    };
    let mut a = python_extension(
        Agent::builder(),
        &py,
        "stateful",
        r#"
def initialize(msg):
    return {"commands": [{"name": "q"}],
            "subscriptions": [{"event": "model_select"}, {"event": "session_info_changed"},
                              {"event": "thinking_level_select"}]}

def on_event(event, scope):
    fire(scope, "ui.notify", message=json.dumps({"event": event["type"],
        "source": event.get("source"), "name": event.get("name"), "level": event.get("level")}))

def on_command(name, args, scope):
    leaf = call(scope, "session.getLeafId")
    call(scope, "pi.setLabel", entryId=leaf, label="here")
    call(scope, "pi.setSessionName", name="renamed")
    switched = call(scope, "pi.setModel", provider="mock", modelId="mock-haiku")
    fire(scope, "ui.notify", message=json.dumps({
        "switched": switched,
        "label": call(scope, "session.getLabel", id=leaf),
        "roots": len(call(scope, "session.getTree")),
        "usage": call(scope, "ctx.getContextUsage"),
        "name": call(scope, "pi.getSessionName"),
        "model": call(scope, "ctx.getState")["model"]["id"],
    }))
"#,
    )
    .spawn();
    let recs = prompt(&mut a, "c1", "/q");
    let result = notes(&recs)
        .into_iter()
        .find(|n| n.get("switched").is_some())
        .expect("the command's report");
    assert_eq!(
        result,
        json!({"switched": true, "label": "here", "roots": 1,
               "usage": {"tokens": 0, "contextWindow": 100000, "percent": 0},
               "name": "renamed", "model": "mock-haiku"}),
        "{recs:#?}"
    );
    assert_eq!(
        recs.last().unwrap()["data"],
        json!({"disposition": "handled"})
    );
    // The events the calls caused reach the extensions (after the call: its reader thread
    // cannot wait for handlers). Their notifies may come before the command's response or
    // after it.
    let mut seen: Vec<Value> = notes(&recs)
        .iter()
        .filter_map(|n| n.get("event").cloned())
        .collect();
    a.seek_past_response("c1");
    for _ in 0..10 {
        if seen.contains(&json!("model_select")) && seen.contains(&json!("session_info_changed")) {
            break;
        }
        let r = a.wait_for(json!({"type": "extension_ui_request", "method": "notify"}));
        seen.push(note(&r)["event"].clone());
    }
    assert!(seen.contains(&json!("model_select")), "{seen:?}");
    assert!(seen.contains(&json!("session_info_changed")), "{seen:?}");
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["model"]["id"], "mock-haiku");
    assert_eq!(st["data"]["sessionName"], "renamed");
}

// ------------------------------------------------------------------ command-scope actions

/// `ctx.compact` (answered with the compaction result once it is in), `pi.setActiveTools`,
/// `ctx.newSession` (the extension gets a fresh runtime: `session_start{reason:"new"}`),
/// `ctx.waitForIdle` and `ctx.shutdown` (after the command's `handled` response; exit 0).
#[test]
fn command_actions_compact_switch_tools_start_a_session_and_shut_down() {
    let Some(py) = python("command_actions_compact_switch_tools_start_a_session_and_shut_down")
    else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Reply one."}], "usage": {"input": 100, "output": 5}},
        {"blocks": [{"type": "text", "text": "Reply two."}], "usage": {"input": 100, "output": 5}},
        text_reply("The summary."),
    ]}));
    let mut settings = fast_settings();
    settings["compaction"] = json!({"keepRecentTokens": 5});
    let mut a = python_extension(
        agent_for(&mock).settings(settings),
        &py,
        "actions",
        r#"
def initialize(msg):
    return {"commands": [{"name": "act"}], "subscriptions": [{"event": "session_start"}]}

def on_event(event, scope):
    fire(scope, "ui.notify", message=json.dumps({"start": event["reason"]}))

def on_command(name, args, scope):
    if args == "compact":
        r = call(scope, "ctx.compact", customInstructions="short")
        out = {"summary": r["summary"], "kept": r["firstKeptEntryId"] is not None}
    elif args == "tools":
        call(scope, "pi.setActiveTools", toolNames=["read", "ls", "no-such-tool"])
        out = {"tools": call(scope, "pi.getActiveTools")}
    elif args == "new":
        out = {"new": call(scope, "ctx.newSession")}
    elif args == "idle":
        call(scope, "ctx.waitForIdle")
        out = {"idle": True}
    elif args == "bye":
        call(scope, "ctx.shutdown")
        out = {"bye": True}
    fire(scope, "ui.notify", message=json.dumps(out))
"#,
    )
    .spawn();
    run_prompt(&mut a, "p1", "first question");
    run_prompt(&mut a, "p2", "second question");

    let recs = prompt(&mut a, "c1", "/act compact");
    assert_eq!(
        notes(&recs).last().unwrap(),
        &json!({"summary": "The summary.", "kept": true}),
        "{recs:#?}"
    );
    assert!(find_all(&recs, json!({"type": "compaction_end", "aborted": false})).len() == 1);

    let recs = prompt(&mut a, "c2", "/act tools");
    assert_eq!(
        notes(&recs).last().unwrap(),
        &json!({"tools": ["read", "ls"]})
    );

    let recs = prompt(&mut a, "c3", "/act new");
    let n = notes(&recs);
    assert!(n.contains(&json!({"start": "new"})), "{n:?}");
    assert_eq!(n.last().unwrap(), &json!({"new": {"cancelled": false}}));
    let st = a.request("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["messageCount"], 0, "{st}");

    let recs = prompt(&mut a, "c4", "/act idle");
    assert_eq!(notes(&recs).last().unwrap(), &json!({"idle": true}));

    let recs = prompt(&mut a, "c5", "/act bye");
    assert_eq!(
        recs.last().unwrap()["data"],
        json!({"disposition": "handled"})
    );
    assert_eq!(a.wait_exit(LONG).code(), Some(0), "{}", a.stderr());
}
