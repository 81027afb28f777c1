//! Print modes through the real binary (`settings.md` §5): `--mode json` (session header line,
//! then the RPC event stream), `--mode text` / `-p` (the final assistant text only), prompts
//! from the command line, piped stdin and `@file` arguments, and the exit codes pi uses.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::agent::mock_models_json;
use crate::support::mock_llm::MockLlm;
use crate::support::process::{eventually, group_alive, pgid_of, read_pid};
use crate::support::records::{find, find_all, kinds};
use crate::support::run::{request_messages, text_reply, LONG, PNG_B64};
use crate::support::TempDir;

/// A temp workspace (`cwd/`, `agent/`, `home/`, `tmp/`) for one print-mode invocation.
struct Workspace {
    root: TempDir,
}

struct Output {
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

impl Output {
    /// stdout as JSON records (every line must be one).
    fn records(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l:?}"))
            })
            .collect()
    }
}

impl Workspace {
    fn new(models: Option<Value>) -> Workspace {
        let root = TempDir::new("print");
        for d in ["cwd", "agent", "home", "tmp"] {
            std::fs::create_dir_all(root.path().join(d)).unwrap();
        }
        if let Some(m) = models {
            root.write("agent/models.json", &m.to_string());
        }
        root.write(
            "agent/settings.json",
            &json!({"retry": {"enabled": false}}).to_string(),
        );
        Workspace { root }
    }

    fn for_mock(mock: &MockLlm) -> Workspace {
        Workspace::new(Some(mock_models_json(&mock.base_url())))
    }

    fn cwd(&self) -> PathBuf {
        self.root.path().join("cwd")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(crate::support::outside::pi_rpc_bin());
        cmd.args(args)
            .current_dir(self.cwd())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.root.path().join("home"))
            .env("TMPDIR", self.root.path().join("tmp"))
            .env("PI_CODING_AGENT_DIR", self.root.path().join("agent"))
            .env("PI_OFFLINE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs pi-rpc to completion; `stdin` `None` is `/dev/null`.
    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().expect("spawn pi-rpc");
        if let Some(input) = stdin {
            let mut w = child.stdin.take().unwrap();
            w.write_all(input).unwrap();
        }
        finish(child)
    }
}

/// Collects stdout/stderr and the exit code; kills the child if it outlives [`LONG`].
fn finish(mut child: std::process::Child) -> Output {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    let deadline = Instant::now() + LONG;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "pi-rpc did not exit; stderr so far is lost, stdout: {}",
                t_out.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        code: status.code(),
    }
}

const MOCK_ARGS: [&str; 5] = [
    "--provider",
    "mock",
    "--model",
    "mock-sonnet",
    "--no-session",
];

fn args<'a>(mode: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = mode.to_vec();
    v.extend_from_slice(&MOCK_ARGS);
    v.extend_from_slice(rest);
    v
}

fn user_texts(mock: &MockLlm, n: usize) -> Vec<String> {
    request_messages(mock, n)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn json_mode_prints_the_header_then_the_event_stream() {
    let mock =
        MockLlm::start(json!({"replies": [text_reply("Hello there"), text_reply("Second")]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["--mode", "json"], &["hi", "again"]), None);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let recs = out.records();

    let header = &recs[0];
    let keys: Vec<&String> = header.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "version", "id", "timestamp", "cwd"]);
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 3);
    assert_eq!(header["cwd"], json!(ws.cwd().display().to_string()));
    assert_eq!(header["id"].as_str().unwrap().len(), 36);
    assert!(header["timestamp"].as_str().unwrap().ends_with('Z'));

    let k = kinds(&recs[1..]);
    let first_run = [
        "agent_start",
        "turn_start",
        "message_start:system",
        "message_end:system",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "update:text_start",
        "update:text_delta",
        "update:text_end",
        "message_end:assistant",
        "turn_end",
        "agent_end",
        "agent_settled",
    ];
    let second_run = [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "update:text_start",
        "update:text_delta",
        "update:text_end",
        "message_end:assistant",
        "turn_end",
        "agent_end",
        "agent_settled",
    ];
    let expected: Vec<&str> = first_run.iter().chain(second_run.iter()).copied().collect();
    assert_eq!(k, expected);
    assert!(recs.iter().all(|r| r["type"] != "response"));
    let (_, end) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"assistant"}}),
    );
    assert_eq!(
        end["message"]["content"],
        json!([{"type":"text","text":"Hello there"}])
    );
    // The same wire shapes as RPC mode (message_update rewritten with usage).
    let (_, upd) = find(&recs, json!({"type": "message_update"}));
    let upd_keys: Vec<&String> = upd.as_object().unwrap().keys().collect();
    assert_eq!(upd_keys, ["type", "usage", "assistantMessageEvent"]);
    assert_eq!(
        recs.last().unwrap(),
        &json!({"type":"agent_settled","aborted":false})
    );
    assert_eq!(user_texts(&mock, 1), ["hi", "Hello there", "again"]);
}

#[test]
fn json_mode_header_is_the_session_file_header_when_persisted() {
    let mock = MockLlm::start(json!({"replies": [text_reply("stored")]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(
        &[
            "--mode",
            "json",
            "--provider",
            "mock",
            "--model",
            "mock-sonnet",
            "--session-dir",
            "sessions",
            "keep this",
        ],
        None,
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let header_line = out.stdout.lines().next().unwrap().to_string();
    let dir = ws.cwd().join("sessions");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(text.lines().next().unwrap(), header_line);
    assert!(text.contains("keep this") && text.contains("stored"));
}

#[test]
fn json_mode_exits_zero_when_the_run_fails() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 400, "error_type": "invalid_request_error", "error_message": "bad thing"}
    ]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["--mode", "json"], &["hi"]), None);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let recs = out.records();
    let n = recs.len();
    assert_eq!(recs[n - 2]["type"], "agent_end");
    assert_eq!(recs[n - 1], json!({"type":"agent_settled","aborted":false}));
    let (_, end) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"assistant"}}),
    );
    assert_eq!(end["message"]["stopReason"], "error");
}

#[test]
fn text_mode_prints_only_the_final_assistant_text() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Running"},
                    {"type": "tool_call", "id": "toolu_1", "name": "bash", "input": {"command": "echo hi"}}]},
        {"blocks": [{"type": "thinking", "text": "hmm", "signature": "sig"},
                    {"type": "text", "text": "A"}, {"type": "text", "text": "B"}]},
    ]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["-p"], &["go"]), None);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "A\nB\n");
    assert_eq!(mock.requests().len(), 2);

    // --mode text is the same mode.
    let mock = MockLlm::start(json!({"replies": [text_reply("plain")]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["--mode", "text"], &["go"]), None);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "plain\n"));
    // -p with --mode json is json.
    let mock = MockLlm::start(json!({"replies": [text_reply("plain")]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["-p", "--mode", "json"], &["go"]), None);
    assert_eq!(out.code, Some(0));
    assert_eq!(out.records()[0]["type"], "session");
}

#[test]
fn text_mode_runs_every_message_and_prints_the_last_answer() {
    let mock = MockLlm::start(
        json!({"replies": [text_reply("first answer"), text_reply("second answer")]}),
    );
    let ws = Workspace::for_mock(&mock);
    // Flags may follow the messages, as with pi.
    let out = ws.run(
        &[
            "-p",
            "one",
            "--provider",
            "mock",
            "two",
            "--model",
            "mock-sonnet",
            "--no-session",
        ],
        None,
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "second answer\n");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(user_texts(&mock, 1), ["one", "first answer", "two"]);
}

#[test]
fn text_mode_reports_a_failed_run_on_stderr_with_exit_1() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 400, "error_type": "invalid_request_error", "error_message": "bad thing"}
    ]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["-p"], &["hi"]), None);
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains(
            "400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad thing\"},\"request_id\":\"req_mock_0001\"}"
        ),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn piped_stdin_is_the_prompt() {
    let mock =
        MockLlm::start(json!({"replies": [text_reply("from the pipe"), text_reply("joined")]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["-p"], &[]), Some(b"  what is in stdin?\n\n"));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "from the pipe\n");
    assert_eq!(user_texts(&mock, 0), ["what is in stdin?"]);

    // With a message too: stdin first, then the message, in one prompt (as pi joins them).
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["-p"], &["and this"]), Some(b"context\n"));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(user_texts(&mock, 1), ["contextand this"]);
}

#[test]
fn file_arguments_are_attached_to_the_first_prompt() {
    let mock = MockLlm::start(json!({"replies": [text_reply("read it"), text_reply("saw it")]}));
    let ws = Workspace::for_mock(&mock);
    ws.root.write("cwd/notes.txt", "line one\nline two\n");
    let png = base64_decode(PNG_B64);
    std::fs::write(ws.cwd().join("red.png"), &png).unwrap();
    let out = ws.run(
        &args(
            &["-p"],
            &["@notes.txt", "@red.png", "summarize", "and then?"],
        ),
        None,
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "saw it\n");
    let cwd = ws.cwd().display().to_string();
    assert_eq!(
        request_messages(&mock, 0),
        json!([{"role":"user","content":[
            {"type":"text","text":format!("<file name=\"{cwd}/notes.txt\">\nline one\nline two\n\n</file>\n<file name=\"{cwd}/red.png\"></file>\nsummarize")},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ]}])
    );
    assert_eq!(
        user_texts(&mock, 1).last().map(String::as_str),
        Some("and then?")
    );
}

#[test]
fn a_missing_file_argument_is_an_error_before_anything_runs() {
    let mock = MockLlm::start(json!({"replies": [text_reply("never")]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["--mode", "json"], &["@nope.txt", "hi"]), None);
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains(&format!(
            "Error: File not found: {}/nope.txt",
            ws.cwd().display()
        )),
        "stderr: {}",
        out.stderr
    );
    assert!(mock.requests().is_empty());

    // RPC mode does not take @file arguments at all.
    let out = ws.run(&args(&["--mode", "rpc"], &["@nope.txt"]), None);
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
    assert!(out
        .stderr
        .contains("Error: @file arguments are not supported in RPC mode"));
}

#[test]
fn preflight_errors_print_the_error_and_exit_1() {
    // A provider without credentials.
    let mock = MockLlm::start(json!({"replies": [text_reply("never")]}));
    let mut models = mock_models_json(&mock.base_url());
    models["providers"]["mock"]
        .as_object_mut()
        .unwrap()
        .remove("apiKey");
    let ws = Workspace::new(Some(models));
    let out = ws.run(&args(&["--mode", "json"], &["hi"]), None);
    assert_eq!(out.code, Some(1));
    let recs = out.records();
    assert_eq!(recs.len(), 1, "only the header: {recs:?}");
    assert_eq!(recs[0]["type"], "session");
    assert!(
        out.stderr.contains("No API key found for mock.\n\n"),
        "stderr: {}",
        out.stderr
    );
    let out = ws.run(&args(&["-p"], &["hi"]), None);
    assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""));
    assert!(out.stderr.contains("No API key found for mock."));

    // No model at all.
    let ws = Workspace::new(None);
    let out = ws.run(&["-p", "--no-session", "hi"], None);
    assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""));
    assert!(
        out.stderr
            .contains("No API key found for the selected model."),
        "stderr: {}",
        out.stderr
    );
    assert!(mock.requests().is_empty());
}

#[test]
fn nothing_to_run_prints_the_header_only() {
    let mock = MockLlm::start(json!({"replies": []}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["--mode", "json"], &[]), None);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let recs = out.records();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["type"], "session");
    let out = ws.run(&args(&["-p"], &[]), Some(b"  \n"));
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""));
    assert!(mock.requests().is_empty());
}

#[test]
fn sigterm_during_a_print_run_kills_the_tool_and_exits_143() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "tool_call", "id": "t", "name": "bash",
                     "input": {"command": "echo $$ > pid.txt; sleep 30"}}]}
    ]}));
    let ws = Workspace::for_mock(&mock);
    let mut cmd = ws.command(&args(&["--mode", "json"], &["sleep"]));
    cmd.stdin(Stdio::null());
    let child = cmd.spawn().unwrap();
    let pid_file = ws.cwd().join("pid.txt");
    eventually("the tool to start", || read_pid(&pid_file).is_some());
    let tool_pid = read_pid(&pid_file).unwrap();
    let pgid = pgid_of(tool_pid).expect("tool running");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = finish(child);
    assert_eq!(out.code, Some(143), "stderr: {}", out.stderr);
    assert!(!group_alive(pgid), "the tool's process group survived");
    // What was printed before the signal is whole JSON lines.
    let recs = out.records();
    assert_eq!(recs[0]["type"], "session");
    assert!(!find_all(&recs, json!({"type": "tool_execution_start"})).is_empty());
}

fn base64_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn prompt_templates_are_expanded_in_print_mode() {
    let mock = MockLlm::start(json!({"replies": [text_reply("reviewed")]}));
    let ws = Workspace::for_mock(&mock);
    ws.root.write(
        "agent/prompts/review.md",
        "---\ndescription: Review\n---\nReview the staged changes. Focus on ${1:-correctness}.\n",
    );
    let out = ws.run(&args(&["-p"], &["/review concurrency"]), None);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "reviewed\n"));
    assert_eq!(
        user_texts(&mock, 0),
        ["Review the staged changes. Focus on concurrency."]
    );
}

#[test]
fn text_mode_after_a_reply_cut_off_by_the_output_limit_prints_nothing_like_pi() {
    // pi 1.6.0 hides the truncated reply from the context (recoverable length stop with nothing
    // to compact), so the context no longer ends with an assistant message: no output, exit 0.
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "cut off"}], "stop_reason": "max_tokens"}
    ]}));
    let ws = Workspace::for_mock(&mock);
    let out = ws.run(&args(&["-p"], &["go"]), None);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (Some(0), ""),
        "stderr: {}",
        out.stderr
    );
}
