//! Session commands through the real binary (`rpc-protocol.md` §3.1 `new_session`, §3.9):
//! new/switch/fork/clone, entries and tree, names, HTML export, the `--session`/`--continue`
//! start-up flags, and a session that survives `kill -9` in the middle of a streamed reply.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use crate::support::agent::AgentBuilder;
use crate::support::mock_llm::MockLlm;
use crate::support::records::{find, norm};
use crate::support::run::{agent_for, request_messages, run_prompt, text_reply, LONG};
use crate::support::Agent;

/// An agent whose session is persisted in the default session directory of its agent dir.
fn persisted(mock: &MockLlm) -> AgentBuilder {
    agent_for(mock)
        .no_default_args()
        .args(["--provider", "mock", "--model", "mock-sonnet"])
}

/// A fresh request id (`Agent::request` finds the first response with the id).
fn next_id(prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn state(agent: &mut Agent) -> Value {
    let r = agent.request(&next_id("state"), json!({"type": "get_state"}));
    assert_eq!(r["success"], true, "{r}");
    r["data"].clone()
}

fn messages(agent: &mut Agent) -> Vec<Value> {
    let r = agent.request(&next_id("msgs"), json!({"type": "get_messages"}));
    r["data"]["messages"].as_array().unwrap().clone()
}

fn roles(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

fn session_file(agent: &mut Agent) -> PathBuf {
    PathBuf::from(state(agent)["sessionFile"].as_str().expect("sessionFile"))
}

fn file_header(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("session file");
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// Records emitted between the request with `id` and its response (exclusive).
fn records_before_response(agent: &mut Agent, id: &str, cmd: Value) -> (Vec<Value>, Value) {
    let start = agent.records.len();
    let r = agent.request(id, cmd);
    let (i, _) = find(
        &agent.records[start..],
        json!({"type": "response", "id": id}),
    );
    (agent.records[start..start + i].to_vec(), r)
}

#[test]
fn new_session_starts_fresh_with_the_startup_model() {
    let mock = MockLlm::start(
        json!({"replies": [text_reply("one"), text_reply("two"), text_reply("three")]}),
    );
    let mut agent = persisted(&mock).spawn();
    run_prompt(&mut agent, "p1", "Hello first session");
    let st1 = state(&mut agent);
    let file1 = PathBuf::from(st1["sessionFile"].as_str().unwrap());
    assert!(file1.is_file());
    assert_eq!(st1["messageCount"], 3);

    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["success"], true);
    let (events, r) = records_before_response(&mut agent, "n1", json!({"type": "new_session"}));
    assert_eq!(
        r,
        json!({"id":"n1","type":"response","command":"new_session","success":true,"data":{"cancelled":false}})
    );
    assert!(events.is_empty(), "new_session emits no events: {events:?}");
    let st2 = state(&mut agent);
    assert_ne!(st2["sessionId"], st1["sessionId"]);
    assert_ne!(st2["sessionFile"], st1["sessionFile"]);
    assert_eq!(st2["messageCount"], 0);
    assert_eq!(st2["model"]["id"], "mock-sonnet", "the startup model again");
    assert_eq!(st2["thinkingLevel"], "medium");
    assert!(messages(&mut agent).is_empty());
    assert!(
        !Path::new(st2["sessionFile"].as_str().unwrap()).exists(),
        "no file before the first message"
    );
    let r = agent.request("e", json!({"type": "get_entries"}));
    let entries = r["data"]["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model_change", "thinking_level_change"]);
    assert_eq!(entries[0]["modelId"], "mock-sonnet");

    // The next prompt declares the system prompt again and sends only the new history.
    let recs = run_prompt(&mut agent, "p2", "Hello second session");
    find(
        &recs,
        json!({"type":"message_start","message":{"role":"system"}}),
    );
    assert_eq!(
        request_messages(&mock, 1),
        json!([{"role":"user","content":[{"type":"text","text":"Hello second session"}]}])
    );
    let first_lines = std::fs::read_to_string(&file1).unwrap();
    assert!(first_lines.contains("Hello first session"));
    assert!(!first_lines.contains("Hello second session"));

    // parentSession is recorded in the new header.
    let r = agent.request(
        "n2",
        json!({"type": "new_session", "parentSession": file1.display().to_string()}),
    );
    assert_eq!(r["data"], json!({"cancelled": false}));
    run_prompt(&mut agent, "p3", "third");
    let file3 = session_file(&mut agent);
    let header = file_header(&file3);
    assert_eq!(header["type"], "session");
    assert_eq!(header["parentSession"], json!(file1.display().to_string()));
}

#[test]
fn new_session_without_persistence_stays_in_memory() {
    let mock = MockLlm::start(json!({"replies": [text_reply("one")]}));
    let mut agent = agent_for(&mock).spawn();
    run_prompt(&mut agent, "p1", "hi");
    let before = state(&mut agent);
    let r = agent.request("n", json!({"type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": false}));
    let after = state(&mut agent);
    assert!(after.get("sessionFile").is_none(), "{after}");
    assert_ne!(after["sessionId"], before["sessionId"]);
    assert_eq!(after["messageCount"], 0);
}

#[test]
fn switch_session_loads_a_file_and_a_missing_file_changes_nothing() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("first answer"), text_reply("other answer"), text_reply("continued")
    ]}));
    let mut agent = persisted(&mock).spawn();
    run_prompt(&mut agent, "p1", "first");
    let st1 = state(&mut agent);
    let msgs1 = messages(&mut agent);
    agent.request("n", json!({"type": "new_session"}));
    run_prompt(&mut agent, "p2", "other");
    let st2 = state(&mut agent);

    let (events, r) = records_before_response(
        &mut agent,
        "sw",
        json!({"type": "switch_session", "sessionPath": st1["sessionFile"]}),
    );
    assert_eq!(
        r,
        json!({"id":"sw","type":"response","command":"switch_session","success":true,"data":{"cancelled":false}})
    );
    assert!(events.is_empty(), "{events:?}");
    let st = state(&mut agent);
    assert_eq!(st["sessionFile"], st1["sessionFile"]);
    assert_eq!(st["sessionId"], st1["sessionId"]);
    assert_eq!(st["messageCount"], 3);
    assert_eq!(messages(&mut agent), msgs1);

    // A path that does not exist: an error, and the current session stays as it is.
    let missing = agent.cwd.join("nope.jsonl");
    let r = agent.request(
        "sw2",
        json!({"type": "switch_session", "sessionPath": missing.display().to_string()}),
    );
    assert_eq!(r["success"], false, "{r}");
    assert!(r.get("data").is_none());
    assert!(!r["error"].as_str().unwrap().is_empty());
    let st_after = state(&mut agent);
    assert_eq!(st_after, st);
    assert_eq!(messages(&mut agent), msgs1);
    assert!(!missing.exists());

    // The loaded session goes on from its history, with no new system message.
    let recs = run_prompt(&mut agent, "p3", "continue");
    assert!(recs.iter().all(|r| r["message"]["role"] != "system"));
    assert_eq!(
        request_messages(&mock, 2),
        json!([
            {"role":"user","content":[{"type":"text","text":"first"}]},
            {"role":"assistant","content":[{"type":"text","text":"first answer"}]},
            {"role":"user","content":[{"type":"text","text":"continue"}]}
        ])
    );
    // The other session's file was not touched by the switch.
    let other = std::fs::read_to_string(st2["sessionFile"].as_str().unwrap()).unwrap();
    assert!(!other.contains("continue"));
}

#[test]
fn switch_session_to_a_fifo_hung_the_agent() {
    // issue 17 §3: opening a FIFO for reading waits for a writer, so `switch_session` to one
    // never answered, and neither did later commands or stdin EOF; `/dev/null` "succeeded" and
    // the session header was written into the device. Only a regular file is a session file,
    // checked without blocking.
    let mock = MockLlm::start(json!({"replies": []}));
    let mut agent = persisted(&mock).spawn();
    let before = state(&mut agent);
    let fifo = agent.cwd.join("session.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    for (id, path) in [
        ("sw1", fifo.display().to_string()),
        ("sw2", "/dev/null".into()),
    ] {
        let r = agent.request(id, json!({"type": "switch_session", "sessionPath": path}));
        assert_eq!(
            r,
            json!({"id": id, "type": "response", "command": "switch_session", "success": false,
                   "error": format!("Session file is not a regular file: {path}")})
        );
        assert_eq!(state(&mut agent), before);
    }
    agent.close_stdin();
    assert!(agent.wait_exit(LONG).success());
}

#[test]
fn full_disk_glued_the_next_entry_to_a_torn_line() {
    // issue 17 §5: with the session's disk full, an append failed after writing part of its
    // line, and the next entry written once space was free was glued to that fragment: on
    // reload both were one unreadable line. A file-size limit (`EFBIG` past 20 KiB) fails the
    // same way; the entries that still fit are appended after the failure.
    let long = "x".repeat(4000);
    let replies: Vec<Value> = (0..4).map(|i| text_reply(&format!("reply {i}"))).collect();
    let mock = MockLlm::start(json!({ "replies": replies }));
    let mut agent = persisted(&mock).file_size_limit(40).spawn();
    for i in 0..4 {
        run_prompt(&mut agent, &format!("p{i}"), &format!("{i} {long}"));
    }
    let file = session_file(&mut agent);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}: {}", agent.stderr()));
    assert!(text.len() <= 40 * 512, "{}", text.len());
    assert!(text.ends_with('\n'), "{text}");
    for line in text.lines() {
        let parsed: Result<Value, _> = serde_json::from_str(line);
        assert!(parsed.is_ok(), "a torn line: {line:.80}");
    }
    // What fits was still appended after the failure.
    assert!(text.contains("reply 3"), "{text:.300}");
    // The client is told (issue 17 §5), not only stderr: an error notify per spell of failures.
    let told: Vec<&Value> = agent
        .records
        .iter()
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .collect();
    assert!(!told.is_empty(), "no notify about the failed write");
    for r in &told {
        assert_eq!(r["notifyType"], "error");
        let m = r["message"].as_str().unwrap_or("");
        assert!(
            m.starts_with("Could not save the session: ") && m.contains("File too large"),
            "{m}"
        );
    }
    // Something failed (else the test proves nothing).
    agent.close_stdin();
    agent.wait_exit(LONG);
    assert!(
        agent.stderr().contains("File too large"),
        "{}",
        agent.stderr()
    );
}

#[test]
fn fork_and_clone_copy_the_path_into_new_files() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("Answer one."), text_reply("Answer two."), text_reply("Answer two, again.")
    ]}));
    let mut agent = persisted(&mock).spawn();

    // Nothing saved yet.
    let r = agent.request("c0", json!({"type": "clone"}));
    assert_eq!(
        r,
        json!({"id":"c0","type":"response","command":"clone","success":false,
               "error":"This session has not been saved yet. Send a message before cloning or forking it."})
    );

    run_prompt(&mut agent, "p1", "Question one");
    run_prompt(&mut agent, "p2", "Question two");
    let file0 = session_file(&mut agent);
    let r = agent.request("fm", json!({"type": "get_fork_messages"}));
    let fork_msgs = r["data"]["messages"].as_array().unwrap().clone();
    assert_eq!(fork_msgs.len(), 2);
    assert_eq!(fork_msgs[0]["text"], "Question one");
    assert_eq!(fork_msgs[1]["text"], "Question two");
    let e1 = fork_msgs[0]["entryId"].as_str().unwrap().to_string();
    let e2 = fork_msgs[1]["entryId"].as_str().unwrap().to_string();

    let r = agent.request("fbad", json!({"type": "fork", "entryId": "ffffffff"}));
    assert_eq!(
        r,
        json!({"id":"fbad","type":"response","command":"fork","success":false,"error":"Invalid entry ID for forking"})
    );
    // An entry that is not a user message cannot be forked either.
    let r = agent.request("e", json!({"type": "get_entries"}));
    let model_change = r["data"]["entries"][0]["id"].clone();
    let r = agent.request("fbad2", json!({"type": "fork", "entryId": model_change}));
    assert_eq!(r["error"], "Invalid entry ID for forking");

    let r = agent.request("f1", json!({"type": "fork", "entryId": e2}));
    assert_eq!(
        r,
        json!({"id":"f1","type":"response","command":"fork","success":true,
               "data":{"text":"Question two","cancelled":false}})
    );
    let file1 = session_file(&mut agent);
    assert_ne!(file1, file0);
    assert_eq!(
        roles(&messages(&mut agent)),
        ["system", "user", "assistant"]
    );
    // The fork's first prompt: no system message, the history up to the fork point.
    let recs = run_prompt(&mut agent, "p3", "Question two, rephrased");
    assert!(recs.iter().all(|r| r["message"]["role"] != "system"));
    assert_eq!(
        request_messages(&mock, 2),
        json!([
            {"role":"user","content":[{"type":"text","text":"Question one"}]},
            {"role":"assistant","content":[{"type":"text","text":"Answer one."}]},
            {"role":"user","content":[{"type":"text","text":"Question two, rephrased"}]}
        ])
    );
    assert_eq!(
        file_header(&file1)["parentSession"],
        json!(file0.display().to_string())
    );
    // The original file is unchanged by the fork.
    assert!(!std::fs::read_to_string(&file0)
        .unwrap()
        .contains("rephrased"));

    // clone: the whole active branch into another file.
    let before = messages(&mut agent);
    let r = agent.request("c1", json!({"type": "clone"}));
    assert_eq!(
        r,
        json!({"id":"c1","type":"response","command":"clone","success":true,"data":{"cancelled":false}})
    );
    let file2 = session_file(&mut agent);
    assert_ne!(file2, file1);
    assert_eq!(messages(&mut agent), before);
    assert_eq!(
        file_header(&file2)["parentSession"],
        json!(file1.display().to_string())
    );
    let r = agent.request("fm2", json!({"type": "get_fork_messages"}));
    let fm2 = r["data"]["messages"].as_array().unwrap().clone();
    assert_eq!(fm2.len(), 2);
    assert_eq!(fm2[0], json!({"entryId": e1, "text": "Question one"}));
    assert_eq!(fm2[1]["text"], "Question two, rephrased");
    assert!(file2.is_file(), "a clone is written at once");
}

#[test]
fn entries_tree_and_session_name() {
    let mock = MockLlm::start(
        json!({"replies": [text_reply("First reply."), text_reply("Second reply.")]}),
    );
    let mut agent = persisted(&mock).spawn();
    let r = agent.request("g0", json!({"type": "get_entries"}));
    let e0 = r["data"]["entries"].as_array().unwrap().clone();
    assert_eq!(
        norm(&json!(e0)),
        json!([
            {"type":"model_change","id":e0[0]["id"],"parentId":null,"timestamp":"<ISO>","provider":"mock","modelId":"mock-sonnet"},
            {"type":"thinking_level_change","id":e0[1]["id"],"parentId":e0[0]["id"],"timestamp":"<ISO>","thinkingLevel":"medium"}
        ])
    );
    assert_eq!(r["data"]["leafId"], e0[1]["id"]);
    let r = agent.request("t0", json!({"type": "get_tree"}));
    assert_eq!(
        r["data"],
        json!({"tree":[{"entry":e0[0],"children":[{"entry":e0[1],"children":[]}]}],"leafId":e0[1]["id"]})
    );

    run_prompt(&mut agent, "p1", "First prompt");
    run_prompt(&mut agent, "p2", "Second prompt");
    let r = agent.request("g1", json!({"type": "get_entries"}));
    let all = r["data"]["entries"].as_array().unwrap().clone();
    let kinds: Vec<String> = all
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "message" => format!("message:{}", e["message"]["role"].as_str().unwrap()),
            t => t.to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message:system",
            "message:user",
            "message:assistant",
            "message:user",
            "message:assistant"
        ]
    );
    for w in all.windows(2) {
        assert_eq!(w[1]["parentId"], w[0]["id"], "a single chain");
    }
    assert_eq!(r["data"]["leafId"], all[6]["id"]);
    let r = agent.request("g2", json!({"type": "get_entries", "since": all[2]["id"]}));
    assert_eq!(r["data"]["entries"], json!(all[3..]));
    let r = agent.request(
        "g3",
        json!({"type": "get_entries", "since": "nonexistent-id"}),
    );
    assert_eq!(
        r,
        json!({"id":"g3","type":"response","command":"get_entries","success":false,"error":"Entry not found: nonexistent-id"})
    );
    // The tree of a single chain: each node has the next one as its only child.
    let r = agent.request("t1", json!({"type": "get_tree"}));
    let mut node = &r["data"]["tree"][0];
    for e in &all {
        assert_eq!(&node["entry"], e);
        if e == all.last().unwrap() {
            assert_eq!(node["children"], json!([]));
        } else {
            assert_eq!(node["children"].as_array().unwrap().len(), 1);
            node = &node["children"][0];
        }
    }

    let (events, r) = records_before_response(
        &mut agent,
        "n1",
        json!({"type": "set_session_name", "name": "  my-feature-work  "}),
    );
    assert_eq!(
        events,
        [json!({"type":"session_info_changed","name":"my-feature-work"})]
    );
    assert_eq!(
        r,
        json!({"id":"n1","type":"response","command":"set_session_name","success":true})
    );
    assert_eq!(state(&mut agent)["sessionName"], "my-feature-work");
    let r = agent.request("n2", json!({"type": "set_session_name", "name": "   "}));
    assert_eq!(
        r,
        json!({"id":"n2","type":"response","command":"set_session_name","success":false,"error":"Session name cannot be empty"})
    );
    let r = agent.request(
        "n3",
        json!({"type": "set_session_name", "name": "two\nlines"}),
    );
    assert_eq!(r["success"], true);
    assert_eq!(state(&mut agent)["sessionName"], "two lines");
    let r = agent.request("g4", json!({"type": "get_entries", "since": all[6]["id"]}));
    let infos = r["data"]["entries"].as_array().unwrap();
    assert_eq!(infos.len(), 2);
    assert_eq!(
        norm(&infos[0]),
        json!({"type":"session_info","id":infos[0]["id"],"parentId":all[6]["id"],"timestamp":"<ISO>","name":"my-feature-work"})
    );
    assert_eq!(infos[1]["name"], "two lines");
    // Persisted: the file carries the same entries.
    let file = session_file(&mut agent);
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(text.lines().count(), 1 + all.len() + 2);
}

#[test]
fn export_html_writes_the_file_and_reports_errors() {
    let mock = MockLlm::start(json!({"replies": [text_reply("Something exported.")]}));
    let mut agent = persisted(&mock).spawn();
    let out = agent.root.path().join("tmp").join("session.html");
    let r = agent.request(
        "x0",
        json!({"type": "export_html", "outputPath": out.display().to_string()}),
    );
    assert_eq!(
        r,
        json!({"id":"x0","type":"response","command":"export_html","success":false,
               "error":"Nothing to export yet - start a conversation first"})
    );
    run_prompt(&mut agent, "p1", "Something to export");
    let r = agent.request(
        "x1",
        json!({"type": "export_html", "outputPath": out.display().to_string()}),
    );
    assert_eq!(
        r,
        json!({"id":"x1","type":"response","command":"export_html","success":true,
               "data":{"path":out.display().to_string()}})
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.to_lowercase().contains("<html"),
        "{}",
        &html[..200.min(html.len())]
    );
    assert!(html.contains("Something to export"));

    // Default: a relative name in the process cwd.
    let file = session_file(&mut agent);
    let stem = file.file_stem().unwrap().to_str().unwrap().to_string();
    let r = agent.request("x2", json!({"type": "export_html"}));
    let expected = format!("pi-session-{stem}.html");
    assert_eq!(r["data"], json!({"path": expected}));
    assert!(agent.cwd.join(&expected).is_file());

    // An unwritable destination is an error, not a crash.
    let r = agent.request(
        "x3",
        json!({"type": "export_html", "outputPath": agent.cwd.join("no/such/dir/x.html").display().to_string()}),
    );
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(state(&mut agent)["isStreaming"], false);

    // In-memory sessions cannot be exported.
    let mock2 = MockLlm::start(json!({"replies": [text_reply("x")]}));
    let mut mem = agent_for(&mock2).spawn();
    run_prompt(&mut mem, "p", "hi");
    let r = mem.request("x", json!({"type": "export_html"}));
    assert_eq!(
        r,
        json!({"id":"x","type":"response","command":"export_html","success":false,
               "error":"Cannot export in-memory session to HTML"})
    );
}

/// A second pi-rpc in the same cwd and agent dir as `first`.
fn again(first: &Agent, mock: &MockLlm, args: &[&str]) -> Agent {
    let mut all = vec!["--provider", "mock", "--model", "mock-sonnet"];
    all.extend_from_slice(args);
    agent_for(mock)
        .no_default_args()
        .args(all)
        .in_cwd(&first.cwd)
        .env("PI_CODING_AGENT_DIR", first.agent_dir.to_str().unwrap())
        .spawn()
}

#[test]
fn continue_and_session_flags_reopen_a_session() {
    let mock = MockLlm::start(
        json!({"replies": [text_reply("first answer"), text_reply("second answer")]}),
    );
    let mut first = persisted(&mock).spawn();
    run_prompt(&mut first, "p1", "remember me");
    let st1 = state(&mut first);
    let msgs1 = messages(&mut first);
    first.close_stdin();
    assert!(first.wait_exit(LONG).success());

    let mut cont = again(&first, &mock, &["--continue"]);
    let st = state(&mut cont);
    assert_eq!(st["sessionFile"], st1["sessionFile"]);
    assert_eq!(st["sessionId"], st1["sessionId"]);
    assert_eq!(messages(&mut cont), msgs1);
    let recs = run_prompt(&mut cont, "p2", "and now?");
    assert!(recs.iter().all(|r| r["message"]["role"] != "system"));
    assert_eq!(
        request_messages(&mock, 1),
        json!([
            {"role":"user","content":[{"type":"text","text":"remember me"}]},
            {"role":"assistant","content":[{"type":"text","text":"first answer"}]},
            {"role":"user","content":[{"type":"text","text":"and now?"}]}
        ])
    );
    let msgs2 = messages(&mut cont);
    cont.close_stdin();
    assert!(cont.wait_exit(LONG).success());

    // --session with the path, and with an id prefix.
    let path = st1["sessionFile"].as_str().unwrap().to_string();
    let mut by_path = again(&first, &mock, &["--session", &path]);
    assert_eq!(state(&mut by_path)["sessionFile"], st1["sessionFile"]);
    assert_eq!(messages(&mut by_path), msgs2);
    drop(by_path);
    let id = st1["sessionId"].as_str().unwrap();
    let mut by_id = again(&first, &mock, &["--session", &id[..8]]);
    assert_eq!(state(&mut by_id)["sessionId"], st1["sessionId"]);
    drop(by_id);

    // Without a flag a new session starts.
    let mut fresh = again(&first, &mock, &[]);
    let st = state(&mut fresh);
    assert_ne!(st["sessionId"], st1["sessionId"]);
    assert_eq!(st["messageCount"], 0);
}

#[test]
fn kill_9_during_a_streamed_reply_leaves_a_session_that_continue_loads() {
    let mock = MockLlm::start(json!({"replies": [
        text_reply("a complete answer"),
        {"blocks": [{"type": "text", "text": "a partial ans"}], "hang": true, "hang_after_blocks": 1},
        text_reply("after the crash")
    ]}));
    let mut first = persisted(&mock).spawn();
    run_prompt(&mut first, "p1", "before the crash");
    let st1 = state(&mut first);
    first.send(json!({"id": "p2", "type": "prompt", "message": "crash during this one"}));
    first.wait_for_timeout(
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta"}}),
        LONG,
    );
    first.kill();

    let mut next = again(&first, &mock, &["--continue"]);
    let st = state(&mut next);
    assert_eq!(st["sessionFile"], st1["sessionFile"]);
    assert_eq!(st["sessionId"], st1["sessionId"]);
    let msgs = messages(&mut next);
    assert_eq!(roles(&msgs), ["system", "user", "assistant", "user"]);
    assert_eq!(
        msgs[3]["content"],
        json!([{"type": "text", "text": "crash during this one"}])
    );
    // Every line of the file is whole JSON.
    let text = std::fs::read_to_string(st1["sessionFile"].as_str().unwrap()).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    // And the session goes on.
    let recs = run_prompt(&mut next, "p3", "are you back?");
    assert_eq!(recs.last().unwrap()["aborted"], false);
    let sent = request_messages(&mock, 2);
    let texts: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "before the crash",
            "a complete answer",
            "crash during this one",
            "are you back?"
        ]
    );
}

/// A v3 session file with one exchange and a second user question (entry `e4`), recorded in
/// `cwd`, written at `path`.
fn write_session_file(path: &Path, id: &str, cwd: &Path) {
    let usage = json!({"input":5,"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":8,
        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}});
    let lines = [
        json!({"type":"session","version":3,"id":id,"timestamp":"2025-02-01T00:00:00.000Z","cwd":cwd}),
        json!({"type":"message","id":"e2","parentId":null,"timestamp":"2025-02-01T00:00:01.000Z",
               "message":{"role":"user","content":[{"type":"text","text":"root question"}],"timestamp":1738368001000u64}}),
        json!({"type":"message","id":"e3","parentId":"e2","timestamp":"2025-02-01T00:00:02.000Z",
               "message":{"role":"assistant","content":[{"type":"text","text":"answer"}],"api":"anthropic-messages",
                          "provider":"mock","model":"mock-sonnet","usage":usage,"stopReason":"stop","timestamp":1738368002000u64}}),
        json!({"type":"message","id":"e4","parentId":"e3","timestamp":"2025-02-01T00:00:03.000Z",
               "message":{"role":"user","content":[{"type":"text","text":"second question"}],"timestamp":1738368003000u64}}),
    ];
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The `.jsonl` files directly in `dir` (none when it does not exist).
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
    v.sort();
    v
}

/// The directory of the current session file.
fn session_folder(agent: &mut Agent) -> PathBuf {
    session_file(agent).parent().unwrap().to_path_buf()
}

#[test]
fn after_switch_session_new_files_go_next_to_the_opened_file() {
    // pi's switch_session opens the file with no session dir of its own, so clone / new_session
    // / fork write beside it even when --session-dir says otherwise.
    let mock = MockLlm::start(json!({"replies": [text_reply("in other"), text_reply("back")]}));
    let first = persisted(&mock).spawn();
    let sessions = first.cwd.join("sessions");
    let mut agent = again(
        &first,
        &mock,
        &["--session-dir", sessions.to_str().unwrap()],
    );
    let other = agent.cwd.join("other");
    let opened = other.join("tree_v3.jsonl");
    write_session_file(&opened, "fx-tree", &agent.cwd);
    let switch = json!({"type": "switch_session", "sessionPath": opened.display().to_string()});

    assert_eq!(agent.request("sw", switch.clone())["success"], true);
    assert_eq!(
        agent.request("cl", json!({"type": "clone"}))["success"],
        true
    );
    let cloned = session_file(&mut agent);
    assert_eq!(cloned.parent().unwrap(), other);
    assert!(
        cloned.is_file(),
        "a clone with a conversation is written at once"
    );
    assert_eq!(
        file_header(&cloned)["parentSession"],
        json!(opened.display().to_string())
    );

    assert_eq!(agent.request("sw2", switch.clone())["success"], true);
    assert_eq!(
        agent.request("ns", json!({"type": "new_session"}))["success"],
        true
    );
    assert_eq!(session_folder(&mut agent), other);
    run_prompt(&mut agent, "p1", "in new");
    let fresh = session_file(&mut agent);
    assert_eq!(fresh.parent().unwrap(), other);
    assert!(fresh.is_file());
    // The new session made there keeps the folder: its own clone goes there too.
    assert_eq!(
        agent.request("cl2", json!({"type": "clone"}))["success"],
        true
    );
    assert_eq!(session_folder(&mut agent), other);

    assert_eq!(agent.request("sw3", switch)["success"], true);
    let r = agent.request("fk", json!({"type": "fork", "entryId": "e4"}));
    assert_eq!(
        r["data"],
        json!({"text": "second question", "cancelled": false})
    );
    assert_eq!(session_folder(&mut agent), other);
    assert_eq!(jsonl_files(&other).len(), 5, "{:?}", jsonl_files(&other));
    assert!(jsonl_files(&sessions).is_empty());

    // Switching to a file in the session dir makes that folder the place again.
    let first_in_dir = sessions.join("first.jsonl");
    write_session_file(&first_in_dir, "fx-first", &agent.cwd);
    let r = agent.request(
        "sw4",
        json!({"type": "switch_session", "sessionPath": first_in_dir.display().to_string()}),
    );
    assert_eq!(r["success"], true);
    agent.request("ns2", json!({"type": "new_session"}));
    assert_eq!(session_folder(&mut agent), sessions);
}

#[test]
fn switch_session_resolves_a_relative_path_against_the_process_cwd() {
    // Loading a session recorded in another folder makes that the agent's cwd, but pi resolves
    // later relative `sessionPath`s against its process cwd.
    let mock = MockLlm::start(json!({"replies": []}));
    let mut agent = persisted(&mock).spawn();
    let other = agent.cwd.join("other");
    write_session_file(&other.join("a.jsonl"), "fx-a", &other);
    write_session_file(&agent.cwd.join("b.jsonl"), "fx-b", &agent.cwd);
    let r = agent.request(
        "sw",
        json!({"type": "switch_session", "sessionPath": "other/a.jsonl"}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(state(&mut agent)["sessionId"], "fx-a");
    let r = agent.request(
        "sw2",
        json!({"type": "switch_session", "sessionPath": "b.jsonl"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let st = state(&mut agent);
    assert_eq!(st["sessionId"], "fx-b");
    assert_eq!(st["sessionFile"], json!(agent.cwd.join("b.jsonl")));
}

#[test]
fn session_flag_with_a_path_keeps_new_files_beside_it_unless_a_session_dir_is_set() {
    let mock = MockLlm::start(json!({"replies": []}));
    let first = persisted(&mock).spawn();
    let other = first.cwd.join("other");
    write_session_file(&other.join("a.jsonl"), "fx-a", &first.cwd);

    // pi's SessionManager.open(path): without a session dir, the file's folder.
    let mut beside = again(&first, &mock, &["--session", "other/a.jsonl"]);
    assert_eq!(state(&mut beside)["sessionId"], "fx-a");
    let r = beside.request("fk", json!({"type": "fork", "entryId": "e4"}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(session_folder(&mut beside), other);
    beside.request("ns", json!({"type": "new_session"}));
    assert_eq!(session_folder(&mut beside), other);
    drop(beside);

    // With --session-dir, that folder.
    let sd = first.root.path().join("sd");
    let mut in_dir = again(
        &first,
        &mock,
        &[
            "--session",
            "other/a.jsonl",
            "--session-dir",
            sd.to_str().unwrap(),
        ],
    );
    assert_eq!(state(&mut in_dir)["sessionId"], "fx-a");
    in_dir.request("cl", json!({"type": "clone"}));
    assert_eq!(session_folder(&mut in_dir), sd);
    in_dir.request("ns", json!({"type": "new_session"}));
    assert_eq!(session_folder(&mut in_dir), sd);

    // --no-session, then switch_session: the opened file's folder (persisted from then on).
    let mut mem = agent_for(&mock).in_cwd(&first.cwd).spawn();
    let r = mem.request(
        "sw",
        json!({"type": "switch_session", "sessionPath": "other/a.jsonl"}),
    );
    assert_eq!(r["success"], true, "{r}");
    mem.request("ns", json!({"type": "new_session"}));
    assert_eq!(session_folder(&mut mem), other);
}

#[test]
fn export_html_errors_read_as_node_fs_errors_with_the_path_as_given() {
    let mock = MockLlm::start(json!({"replies": [text_reply("Exported.")]}));
    let mut agent = persisted(&mock)
        .cwd_file("exports/.keep", "")
        .cwd_file("a.txt", "x")
        .spawn();
    run_prompt(&mut agent, "p1", "hi");
    let export = |agent: &mut Agent, path: &str| {
        let id = next_id("x");
        let r = agent.request(&id, json!({"type": "export_html", "outputPath": path}));
        assert_eq!(r["command"], "export_html");
        r
    };
    let err = |r: Value| {
        assert_eq!(r["success"], false, "{r}");
        assert!(r.get("data").is_none());
        r["error"].as_str().unwrap().to_string()
    };
    // Exactly pi 1.6.0's texts (Node's writeFileSync); missing folders are not created.
    assert_eq!(
        err(export(&mut agent, "missing/z.html")),
        "ENOENT: no such file or directory, open 'missing/z.html'"
    );
    assert!(!agent.cwd.join("missing").exists());
    assert_eq!(
        err(export(&mut agent, "exports")),
        "EISDIR: illegal operation on a directory, open 'exports'"
    );
    assert_eq!(
        err(export(&mut agent, "a.txt/x.html")),
        "ENOTDIR: not a directory, open 'a.txt/x.html'"
    );
    assert_eq!(
        err(export(&mut agent, "./sub/../y.html")),
        "ENOENT: no such file or directory, open './sub/../y.html'"
    );
    let abs = agent.root.path().join("tmp/exp/deep/out.html");
    let abs = abs.display().to_string();
    assert_eq!(
        err(export(&mut agent, &abs)),
        format!("ENOENT: no such file or directory, open '{abs}'")
    );
    assert_eq!(
        err(export(&mut agent, "a\u{0}b.html")),
        "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received 'a\\x00b.html'"
    );
    assert_eq!(
        err(export(&mut agent, "file://host/x.html")),
        "File URL host must be \"localhost\" or empty on linux"
    );
    // `~/` is joined as Node's path.join does; a file URL becomes its path.
    let home = agent.root.path().join("home");
    let r = export(&mut agent, "~/q/../x.html");
    assert_eq!(r["data"], json!({"path": home.join("x.html")}));
    let url = format!("file://{}/f%20g.html", agent.cwd.display());
    let r = export(&mut agent, &url);
    assert_eq!(r["data"], json!({"path": agent.cwd.join("f g.html")}));
    assert!(agent.cwd.join("f g.html").is_file());
    let r = export(&mut agent, "exports/y.html");
    assert_eq!(r["data"], json!({"path": "exports/y.html"}));
    assert_eq!(state(&mut agent)["isStreaming"], false);
}

#[test]
fn switch_session_to_an_unreadable_or_foreign_file_reports_pi_texts() {
    let mock = MockLlm::start(json!({"replies": []}));
    let mut agent = persisted(&mock)
        .cwd_file("d/.keep", "")
        .cwd_file("bad.jsonl", "not json\n")
        .spawn();
    let before = state(&mut agent);
    let switch = |agent: &mut Agent, path: &str| {
        let r = agent.request(
            &next_id("sw"),
            json!({"type": "switch_session", "sessionPath": path}),
        );
        assert_eq!(r["success"], false, "{r}");
        r["error"].as_str().unwrap().to_string()
    };
    assert_eq!(
        switch(&mut agent, "d"),
        "EISDIR: illegal operation on a directory, read"
    );
    assert_eq!(
        switch(&mut agent, "bad.jsonl"),
        format!(
            "Session file is not a valid pi session: {}",
            agent.cwd.join("bad.jsonl").display()
        )
    );
    assert_eq!(state(&mut agent), before);
}
