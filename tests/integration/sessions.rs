//! Session files through the library API: real pi 1.6.0 files (`tests/fixtures/`) load with
//! every entry exactly as stored, files we write load back identically, old versions migrate as
//! pi migrates them, torn lines are survived, fork/clone/tree/export work on real sessions.
//! And through the binary: pi's files, and a file pi-rpc wrote that pi then loaded, are opened
//! with `--session` and continued, with every answer and the next LLM request as pi's were
//! (`tests/fixtures/pi160_continue.json`).

use std::path::{Path, PathBuf};

use pi_rpc::session::{Entry, EntryKind, SessionError, SessionManager};
use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::run::{agent_for, run_prompt, LONG};
use crate::support::TempDir;

const PI_FIXTURES: &[&str] = &[
    "pi160_plain_name_image.jsonl",
    "pi160_tools_bash_thinking.jsonl",
    "pi160_compaction.jsonl",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of a fixture in `dir` (loading may write to the file).
fn copy_fixture(dir: &TempDir, name: &str) -> PathBuf {
    let to = dir.path().join(name);
    std::fs::copy(fixture(name), &to).expect("copy fixture");
    to
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(str::to_string)
        .collect()
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("json")
}

#[test]
fn pi_written_files_load_with_every_entry_verbatim() {
    let tmp = TempDir::new("sessions-fixtures");
    for name in PI_FIXTURES {
        let path = copy_fixture(&tmp, name);
        let file_lines = lines(&path);
        let header = parse(&file_lines[0]);
        let sm = SessionManager::open(&path, None, Path::new("/")).expect(name);
        assert_eq!(sm.session_id(), header["id"], "{name}");
        assert_eq!(sm.cwd(), header["cwd"], "{name}");
        assert_eq!(sm.header().version, 3);
        assert_eq!(sm.session_file(), Some(path.as_path()));
        assert!(sm.file_exists());

        // get_entries: the file's lines after the header, byte for byte, in order.
        let raws: Vec<&str> = sm.entries().iter().map(Entry::raw).collect();
        assert_eq!(raws, file_lines[1..], "{name}");
        let last_id = parse(file_lines.last().unwrap())["id"].clone();
        assert_eq!(sm.leaf_id(), last_id.as_str());
        let text = sm.entries_json_text(None).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"entries\":[{}],\"leafId\":{}}}",
                file_lines[1..].join(","),
                last_id
            )
        );
        // The parsed form is the same objects.
        let expected: Vec<Value> = file_lines[1..].iter().map(|l| parse(l)).collect();
        assert_eq!(
            sm.entries_json(None).unwrap(),
            json!({"entries": expected, "leafId": last_id})
        );
        // Opening did not touch the file.
        assert_eq!(lines(&path), file_lines);

        // pi writes a single chain: the tree is one path from the first entry to the leaf.
        let tree = parse(&sm.tree_json_text());
        assert_eq!(tree["leafId"], last_id);
        let mut node = &tree["tree"][0];
        assert_eq!(tree["tree"].as_array().unwrap().len(), 1);
        for l in &file_lines[1..] {
            assert_eq!(node["entry"], parse(l));
            let children = node["children"].as_array().unwrap();
            if children.is_empty() {
                break;
            }
            assert_eq!(children.len(), 1);
            node = &children[0];
        }
        assert_eq!(node["entry"]["id"], last_id);
    }
}

#[test]
fn pi_fixture_context_and_name_match_what_pi_reports() {
    let tmp = TempDir::new("sessions-context");
    let plain = SessionManager::open(
        &copy_fixture(&tmp, "pi160_plain_name_image.jsonl"),
        None,
        Path::new("/"),
    )
    .unwrap();
    assert_eq!(plain.session_name().as_deref(), Some("fixture plain"));
    let ctx = plain.context();
    let roles: Vec<&str> = ctx
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
    assert_eq!(ctx.messages[3]["content"][1]["type"], "image");
    assert_eq!(ctx.thinking_level.as_deref(), Some("medium"));
    assert_eq!(ctx.model, Some(("mock".into(), "mock-sonnet".into())));
    let forks: Vec<String> = plain.fork_messages().into_iter().map(|f| f.text).collect();
    assert_eq!(
        forks,
        [
            "Hello there",
            "What is in this image? <script>alert(1)</script>"
        ]
    );

    // After pi's compaction (golden compact.jsonl: get_messages = system, compactionSummary,
    // the kept assistant reply), plus the exchange that followed it.
    let compacted = SessionManager::open(
        &copy_fixture(&tmp, "pi160_compaction.jsonl"),
        None,
        Path::new("/"),
    )
    .unwrap();
    let ctx = compacted.context();
    let roles: Vec<&str> = ctx
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "compactionSummary",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let c = compacted
        .entries()
        .iter()
        .find(|e| e.kind() == EntryKind::Compaction)
        .unwrap();
    assert_eq!(ctx.messages[0], c.get("systemMessage").unwrap());
    assert_eq!(
        ctx.messages[1],
        json!({
            "role": "compactionSummary",
            "summary": c.get("summary").unwrap(),
            "tokensBefore": 1270,
            "timestamp": pi_rpc::util::ms_from_iso(c.timestamp()).unwrap(),
        })
    );
    assert_eq!(
        ctx.messages[2]["content"][0]["text"],
        "Reply three, about cherries."
    );

    let tools = SessionManager::open(
        &copy_fixture(&tmp, "pi160_tools_bash_thinking.jsonl"),
        None,
        Path::new("/"),
    )
    .unwrap();
    let roles: Vec<String> = tools
        .context()
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "bashExecution"
        ]
    );
}

#[test]
fn a_file_written_by_the_manager_loads_back_identically() {
    let tmp = TempDir::new("sessions-roundtrip");
    let mut sm = SessionManager::create(Path::new("/work/project"), Some(tmp.path()), None);
    sm.append_model_change("mock", "mock-sonnet").unwrap();
    sm.append_thinking_level_change("medium").unwrap();
    sm.append_message(
        json!({"role":"system","content":"","sections":{"preamble":"p"},"timestamp":1}),
    )
    .unwrap();
    let u = sm
        .append_message(json!({"role":"user","content":[{"type":"text","text":"héllo \u{2028} \"q\""}],"timestamp":2}))
        .unwrap();
    sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"cost":{"total":0.000105}},"stopReason":"stop","timestamp":3}))
        .unwrap();
    sm.append_label(u.id(), Some("bookmark")).unwrap();
    sm.append_custom("ext-state", Some(json!({"n": 1})))
        .unwrap();
    sm.append_custom_message("ext", json!("note"), true, None)
        .unwrap();
    sm.append_session_info("round trip").unwrap();
    sm.append_compaction(
        "sum",
        Some(u.id()),
        99,
        Some(json!({"readFiles":[],"modifiedFiles":[]})),
        None,
        false,
        None,
    )
    .unwrap();

    let path = sm.session_file().unwrap().to_path_buf();
    let back = SessionManager::open(&path, None, Path::new("/")).unwrap();
    assert_eq!(back.header(), sm.header());
    assert_eq!(back.entries(), sm.entries());
    assert_eq!(back.leaf_id(), sm.leaf_id());
    assert_eq!(back.labels(), sm.labels());
    assert_eq!(back.session_name().as_deref(), Some("round trip"));
    assert_eq!(back.context(), sm.context());
    assert_eq!(back.tree_json_text(), sm.tree_json_text());
    let file_lines = lines(&path);
    assert_eq!(
        file_lines[0],
        pi_rpc::protocol::framing::encode(&sm.header().to_value())
    );
    assert_eq!(file_lines.len(), sm.entries().len() + 1);

    // Custom entries put their payload first (pi's key order).
    let custom = sm
        .entries()
        .iter()
        .find(|e| e.kind() == EntryKind::Custom)
        .unwrap();
    let keys: Vec<String> = custom.to_map().keys().cloned().collect();
    assert_eq!(
        keys,
        ["type", "customType", "data", "id", "parentId", "timestamp"]
    );
}

#[test]
fn v1_file_is_migrated_like_pi_does_it() {
    let tmp = TempDir::new("sessions-v1");
    let path = copy_fixture(&tmp, "v1_session.jsonl");
    let sm = SessionManager::open(&path, None, Path::new("/")).unwrap();
    // What pi 1.6.0 left on disk for the same file (ids are random; compare the rest).
    let pi_lines: Vec<Value> = lines(&fixture("v1_session.migrated_by_pi160.jsonl"))
        .iter()
        .map(|l| parse(l))
        .collect();
    let our_lines: Vec<Value> = lines(&path).iter().map(|l| parse(l)).collect();
    assert_eq!(our_lines.len(), pi_lines.len());
    let pi_ids: Vec<Value> = pi_lines.iter().map(|l| l["id"].clone()).collect();
    let our_ids: Vec<Value> = our_lines.iter().map(|l| l["id"].clone()).collect();
    let normalize = |v: &Value, ids: &[Value]| -> String {
        let mut s = serde_json::to_string(v).unwrap();
        for (i, id) in ids.iter().enumerate().skip(1) {
            s = s.replace(id.as_str().unwrap(), &format!("<ID{i}>"));
        }
        s
    };
    for (ours, theirs) in our_lines.iter().zip(&pi_lines) {
        // Same values and the same key order.
        assert_eq!(normalize(ours, &our_ids), normalize(theirs, &pi_ids));
    }
    assert_eq!(sm.session_id(), "old-v1-session");
    assert_eq!(sm.entries().len(), 4);
    assert_eq!(sm.entries()[3].message_role(), Some("custom"));
    let raws: Vec<&str> = sm.entries().iter().map(Entry::raw).collect();
    assert_eq!(raws, lines(&path)[1..]);
}

#[test]
fn a_torn_last_line_costs_only_that_entry() {
    let tmp = TempDir::new("sessions-torn");
    let mut sm = SessionManager::create(Path::new("/w"), Some(tmp.path()), None);
    sm.append_model_change("p", "m").unwrap();
    sm.append_message(json!({"role":"user","content":"q","timestamp":1}))
        .unwrap();
    sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":"a long answer"}],"timestamp":2}))
        .unwrap();
    let path = sm.session_file().unwrap().to_path_buf();
    let full = std::fs::read(&path).unwrap();
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    // A crash can stop the last write at any byte (only the newline missing: the entry is
    // complete and kept).
    for cut in last_start..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let kept = if cut == full.len() - 1 { 3 } else { 2 };
        let mut back = SessionManager::open(&path, None, Path::new("/")).unwrap();
        assert_eq!(back.entries(), &sm.entries()[..kept], "cut at {cut}");
        // Appending after a torn line starts a fresh line; the next load keeps it.
        let e = back.append_thinking_level_change("high").unwrap();
        let again = SessionManager::open(&path, None, Path::new("/")).unwrap();
        assert_eq!(again.entries().len(), kept + 1, "cut at {cut}");
        assert_eq!(again.entries()[kept], e);
    }
}

#[test]
fn fork_and_clone_of_a_pi_session() {
    let tmp = TempDir::new("sessions-fork");
    let path = copy_fixture(&tmp, "pi160_plain_name_image.jsonl");
    let sm = SessionManager::open(&path, None, Path::new("/")).unwrap();
    let second_user = sm.fork_messages()[1].entry_id.clone();
    let forked = sm.fork(&second_user).unwrap();
    assert_eq!(
        forked.text,
        "What is in this image? <script>alert(1)</script>"
    );
    let f = forked.manager;
    assert_eq!(f.session_dir(), Some(tmp.path()));
    assert_eq!(f.header().parent_session.as_deref(), path.to_str());
    // The path before the user message, same ids and text.
    let before: Vec<&str> = sm
        .branch_from(sm.entry(&second_user).unwrap().parent_id())
        .iter()
        .map(|e| e.raw())
        .collect();
    let copied: Vec<&str> = f.entries().iter().map(Entry::raw).collect();
    assert_eq!(copied, before);
    let back = SessionManager::open(f.session_file().unwrap(), None, Path::new("/")).unwrap();
    assert_eq!(back.entries(), f.entries());
    assert_eq!(back.session_id(), f.session_id());

    let c = sm.clone_session().unwrap();
    assert_eq!(c.entries(), sm.entries());
    assert_eq!(c.leaf_id(), sm.leaf_id());
    assert!(c.session_file().unwrap().exists());
    assert!(matches!(
        sm.fork("no-such-id"),
        Err(SessionError::InvalidForkEntry)
    ));
}

#[test]
fn export_html_of_a_pi_session() {
    let tmp = TempDir::new("sessions-export");
    let path = copy_fixture(&tmp, "pi160_tools_bash_thinking.jsonl");
    let sm = SessionManager::open(&path, None, Path::new("/")).unwrap();
    let reported = pi_rpc::export::export_html(&sm, None, tmp.path()).unwrap();
    assert_eq!(reported, "pi-session-pi160_tools_bash_thinking.html");
    let html = std::fs::read_to_string(tmp.path().join(&reported)).unwrap();
    for needle in [
        "Run echo hi, then read missing.txt",
        "The user wants a listing. I should run echo.",
        "&quot;command&quot;: &quot;echo hi&quot;",
        "tool-result error",
        "ENOENT: no such file or directory",
        "$ echo from-user-bash",
        "<dt>Model</dt><dd>mock/mock-sonnet</dd>",
        "<summary>System prompt</summary>",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
}

/// `fixture` copied into `dir` with its header's `cwd` set to `cwd` (pi and pi-rpc refuse a
/// session whose working directory is gone); the entries are left byte for byte.
fn copy_fixture_with_cwd(dir: &TempDir, name: &str, cwd: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let (head, rest) = text.split_once('\n').expect("a header line");
    let mut header = parse(head);
    header["cwd"] = json!(cwd.to_string_lossy());
    let to = dir.path().join(name);
    std::fs::write(&to, format!("{header}\n{rest}")).expect("write copy");
    to
}

/// pi-rpc opens each file with `--session`, answers as pi 1.6.0 did for the same file, sends the
/// same LLM request when the conversation continues, and appends to the file after the old leaf.
/// The files: three written by pi, and one written by pi-rpc (`pirpc_written.jsonl`: a prompt
/// with an image, thinking, a bash tool call, an RPC bash, a name) that pi loaded and continued
/// (the interop check in the other direction, recorded by hand with the reference pi).
#[test]
fn session_files_continue_through_the_binary_as_in_pi() {
    let expected = parse(&std::fs::read_to_string(fixture("pi160_continue.json")).expect("read"));
    for name in [
        "pi160_plain_name_image.jsonl",
        "pi160_tools_bash_thinking.jsonl",
        "pi160_compaction.jsonl",
        "pirpc_written.jsonl",
    ] {
        let want = &expected[name];
        let tmp = TempDir::new("sessions-continue");
        let cwd = tmp.path().join("cwd");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let path = copy_fixture_with_cwd(&tmp, name, &cwd);
        let before = lines(&path);
        let old_leaf = parse(before.last().unwrap())["id"].clone();

        let mock = MockLlm::start(json!({"replies": [
            {"blocks": [{"type": "text", "text": "Continued fine."}]}
        ]}));
        let mut agent = agent_for(&mock)
            .no_default_args()
            .args(["--provider", "mock", "--model", "mock-sonnet", "--session"])
            .args([path.to_string_lossy().into_owned()])
            .in_cwd(&cwd)
            .spawn();

        // get_entries: the file's lines after the header.
        let file_entries: Vec<Value> = before[1..].iter().map(|l| parse(l)).collect();
        let entries = agent.request("g0", json!({"type": "get_entries"}));
        assert_eq!(
            entries["data"],
            json!({"entries": file_entries, "leafId": old_leaf}),
            "{name}"
        );
        // What pi answered for the same file.
        let messages = agent.request("m0", json!({"type": "get_messages"}));
        assert_eq!(
            messages["data"], want["get_messages"],
            "{name}: get_messages"
        );
        let tree = agent.request("t0", json!({"type": "get_tree"}));
        assert_eq!(tree["data"], want["get_tree"], "{name}: get_tree");
        let mut stats = agent.request("s0", json!({"type": "get_session_stats"}))["data"].clone();
        assert_eq!(
            stats["sessionFile"],
            json!(path.to_string_lossy()),
            "{name}"
        );
        stats.as_object_mut().unwrap().remove("sessionFile");
        assert_eq!(
            stats, want["get_session_stats"],
            "{name}: get_session_stats"
        );
        let state = agent.request("st", json!({"type": "get_state"}))["data"].clone();
        for key in ["thinkingLevel", "sessionId", "sessionName", "messageCount"] {
            assert_eq!(
                state.get(key),
                want["get_state"].get(key),
                "{name}: get_state {key}"
            );
        }
        assert_eq!(
            state["model"]["provider"],
            want["get_state"]["model"]["provider"]
        );
        assert_eq!(state["model"]["id"], want["get_state"]["model"]["id"]);

        // Continuing: the LLM sees the same conversation pi sent it.
        run_prompt(&mut agent, "p1", "Now continue");
        let request = &mock.wait_requests(1, LONG)[0];
        assert_eq!(
            request["body"]["messages"], want["continue_request_messages"],
            "{name}: the continued conversation sent to the LLM"
        );
        // The file: old lines untouched, new entries chained from the old leaf (pi-rpc also
        // records its own system prompt, which differs from pi's, as a `system` message).
        let after = lines(&path);
        assert_eq!(after[..before.len()], before[..], "{name}");
        let mut parent = old_leaf.clone();
        let mut roles = Vec::new();
        for line in &after[before.len()..] {
            let e = parse(line);
            assert_eq!(e["parentId"], parent, "{name}: {line}");
            parent = e["id"].clone();
            roles.push(e["message"]["role"].as_str().unwrap_or("").to_string());
        }
        roles.retain(|r| r != "system");
        assert_eq!(roles, ["user", "assistant"], "{name}");
        let entries = agent.request("g1", json!({"type": "get_entries"}));
        let file_entries: Vec<Value> = after[1..].iter().map(|l| parse(l)).collect();
        assert_eq!(entries["data"]["entries"], json!(file_entries), "{name}");
        // And the whole file loads back as written.
        let sm = SessionManager::open(&path, None, Path::new("/")).unwrap();
        let raws: Vec<&str> = sm.entries().iter().map(Entry::raw).collect();
        assert_eq!(raws, after[1..], "{name}");
    }
}

/// Regression (found comparing with pi 1.6.0): after `switch_session` (or `--session`) pi-rpc
/// kept running tools and RPC `bash` in the process cwd, and switched to files whose recorded
/// cwd no longer exists. pi makes the session's recorded cwd the working directory, and refuses
/// such files with the same error as at start-up, staying on the current session.
#[test]
fn switch_session_follows_the_recorded_cwd_and_refuses_a_missing_one() {
    let tmp = TempDir::new("sessions-cwd");
    let cwd = tmp.path().join("cwd");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&cwd).expect("cwd");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    let other = copy_fixture_with_cwd(&tmp, "pi160_plain_name_image.jsonl", &elsewhere);
    let gone_dir = tmp.path().join("gone");
    let gone = copy_fixture_with_cwd(&tmp, "pi160_tools_bash_thinking.jsonl", &gone_dir);

    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "tool_call", "id": "toolu_1", "name": "bash", "input": {"command": "pwd"}}]},
        {"blocks": [{"type": "text", "text": "There."}]}
    ]}));
    let mut agent = agent_for(&mock)
        .no_default_args()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-sonnet",
            "--session-dir",
        ])
        .args([tmp.path().join("sessions").to_string_lossy().into_owned()])
        .in_cwd(&cwd)
        .spawn();
    let before = agent.request("st0", json!({"type": "get_state"}))["data"].clone();

    let refused = agent.request(
        "sw1",
        json!({"type": "switch_session", "sessionPath": gone.to_string_lossy()}),
    );
    assert_eq!(refused["success"], false, "{refused}");
    assert_eq!(
        refused["error"],
        format!(
            "Stored session working directory does not exist: {}\nSession file: {}\nCurrent working directory: {}",
            gone_dir.display(),
            gone.display(),
            cwd.display()
        )
    );
    let state = agent.request("st1", json!({"type": "get_state"}))["data"].clone();
    assert_eq!(state["sessionId"], before["sessionId"]);

    let switched = agent.request(
        "sw2",
        json!({"type": "switch_session", "sessionPath": other.to_string_lossy()}),
    );
    assert_eq!(switched["success"], true, "{switched}");
    let recs = run_prompt(&mut agent, "p1", "Where are you?");
    let result = recs
        .iter()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "toolResult")
        .expect("a tool result");
    let shown = |out: &Value| {
        let text = out.as_str().unwrap_or("").trim_end();
        std::fs::canonicalize(text).unwrap_or_else(|_| PathBuf::from(text))
    };
    let want = std::fs::canonicalize(&elsewhere).expect("canonical");
    assert_eq!(shown(&result["message"]["content"][0]["text"]), want);
    let bash = agent.request("b1", json!({"type": "bash", "command": "pwd"}));
    assert_eq!(shown(&bash["data"]["output"]), want, "{bash}");
    // The system prompt names that directory too (a new checkpoint, since it changed).
    let lines = lines(&other);
    let system = lines
        .iter()
        .rev()
        .map(|l| parse(l))
        .find(|e| e["message"]["role"] == "system")
        .expect("a system message");
    assert_eq!(
        system["message"]["sections"]["cwd"],
        format!("<cwd>\n{}\n</cwd>", elsewhere.display())
    );
}
