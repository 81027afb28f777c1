//! pi's command line, flag by flag: a client that starts `pi` with any flag of pi 1.6.0 can
//! start `pi-rpc` the same way. `tests/fixtures/pi160_help_options.txt` is the Options section
//! of `pi --help` (1.6.0); every flag and alias in it must be in the table below, and none may be
//! rejected. Regression: pi-acp starts `pi --mode rpc --no-themes`, which pi-rpc refused.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::agent::mock_models_json;
use crate::support::outside::pi_rpc_bin;
use crate::support::{Agent, TempDir};

const PI_HELP_OPTIONS: &str = include_str!("../fixtures/pi160_help_options.txt");

/// What a flag does to a start in RPC mode.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    /// The process serves commands (a `get_state` is answered).
    Serves,
    /// The process prints something and exits with 0 (help, version, export, model list).
    ExitsOk,
    /// A configured extension stops start-up as pi's load failure does (no extension runtime).
    ExtensionLoadFailure,
}

/// Every flag of pi 1.6.0 with the arguments that exercise it. `{session}` is a session file
/// written beforehand.
const FLAGS: &[(&str, &[&str], Outcome)] = &[
    (
        "--provider",
        &["--provider", "mock", "--model", "mock-sonnet"],
        Outcome::Serves,
    ),
    (
        "--model",
        &["--model", "mock/mock-haiku:low"],
        Outcome::Serves,
    ),
    (
        "--api-key",
        &["--model", "mock-sonnet", "--api-key", "k"],
        Outcome::Serves,
    ),
    (
        "--system-prompt",
        &["--system-prompt", "Be brief."],
        Outcome::Serves,
    ),
    (
        "--append-system-prompt",
        &["--append-system-prompt", "a", "--append-system-prompt", "b"],
        Outcome::Serves,
    ),
    ("--mode", &["--mode", "rpc"], Outcome::Serves),
    ("--print", &["--print", "--mode", "rpc"], Outcome::Serves),
    ("-p", &["-p", "--mode", "rpc"], Outcome::Serves),
    ("--continue", &["--continue"], Outcome::Serves),
    ("-c", &["-c"], Outcome::Serves),
    ("--resume", &["--resume"], Outcome::Serves),
    ("-r", &["-r"], Outcome::Serves),
    ("--session", &["--session", "{session}"], Outcome::Serves),
    (
        "--session-id",
        &["--session-id", "0193f1c2-aaaa-7bbb-8ccc-123456789abc"],
        Outcome::Serves,
    ),
    ("--fork", &["--fork", "{session}"], Outcome::Serves),
    (
        "--session-dir",
        &["--session-dir", "sessions-here"],
        Outcome::Serves,
    ),
    ("--no-session", &["--no-session"], Outcome::Serves),
    ("--name", &["--name", "named"], Outcome::Serves),
    ("-n", &["-n", "named"], Outcome::Serves),
    ("--models", &["--models", "mock/*"], Outcome::Serves),
    ("--no-tools", &["--no-tools"], Outcome::Serves),
    ("-nt", &["-nt"], Outcome::Serves),
    (
        "--no-builtin-tools",
        &["--no-builtin-tools"],
        Outcome::Serves,
    ),
    ("-nbt", &["-nbt"], Outcome::Serves),
    ("--tools", &["--tools", "read,grep"], Outcome::Serves),
    ("-t", &["-t", "+grep,-bash"], Outcome::Serves),
    (
        "--exclude-tools",
        &["--exclude-tools", "bash"],
        Outcome::Serves,
    ),
    ("-xt", &["-xt", "edit,write"], Outcome::Serves),
    ("--thinking", &["--thinking", "high"], Outcome::Serves),
    (
        "--extension",
        &["--extension", "gate.ts"],
        Outcome::ExtensionLoadFailure,
    ),
    ("-e", &["-e", "gate.ts"], Outcome::ExtensionLoadFailure),
    ("--no-extensions", &["--no-extensions"], Outcome::Serves),
    ("-ne", &["-ne"], Outcome::Serves),
    ("--no-mcp", &["--no-mcp"], Outcome::Serves),
    ("--skill", &["--skill", "skills"], Outcome::Serves),
    ("--no-skills", &["--no-skills"], Outcome::Serves),
    ("-ns", &["-ns"], Outcome::Serves),
    (
        "--prompt-template",
        &["--prompt-template", "prompts"],
        Outcome::Serves,
    ),
    (
        "--no-prompt-templates",
        &["--no-prompt-templates"],
        Outcome::Serves,
    ),
    ("-np", &["-np"], Outcome::Serves),
    ("--theme", &["--theme", "my-theme.json"], Outcome::Serves),
    ("--use-theme", &["--use-theme", "dark"], Outcome::Serves),
    ("--no-themes", &["--no-themes"], Outcome::Serves),
    (
        "--no-context-files",
        &["--no-context-files"],
        Outcome::Serves,
    ),
    ("-nc", &["-nc"], Outcome::Serves),
    (
        "--export",
        &["--export", "{session}", "out.html"],
        Outcome::ExitsOk,
    ),
    (
        "--list-models",
        &["--list-models", "haiku"],
        Outcome::ExitsOk,
    ),
    ("--verbose", &["--verbose"], Outcome::Serves),
    ("--tui-mode", &["--tui-mode", "fullscreen"], Outcome::Serves),
    ("--approve", &["--approve"], Outcome::Serves),
    ("-a", &["-a"], Outcome::Serves),
    ("--no-approve", &["--no-approve"], Outcome::Serves),
    ("-na", &["-na"], Outcome::Serves),
    ("--offline", &["--offline"], Outcome::Serves),
    ("--help", &["--help"], Outcome::ExitsOk),
    ("-h", &["-h"], Outcome::ExitsOk),
    ("--version", &["--version"], Outcome::ExitsOk),
    ("-v", &["-v"], Outcome::ExitsOk),
];

/// The flags and aliases named in the option column of pi's help.
fn pi_flags() -> Vec<String> {
    let mut flags = Vec::new();
    for line in PI_HELP_OPTIONS.lines() {
        let Some(rest) = line.strip_prefix("  -") else {
            continue;
        };
        let column = format!("-{}", rest.split("  ").next().unwrap_or_default());
        flags.extend(
            column
                .split([',', ' '])
                .filter(|t| t.starts_with('-') && *t != "--")
                .map(str::to_string),
        );
    }
    flags
}

#[test]
fn every_flag_in_pis_help_is_in_the_table() {
    let flags = pi_flags();
    assert!(
        flags.len() > 50,
        "the help fixture lists {} flags",
        flags.len()
    );
    let missing: Vec<&String> = flags
        .iter()
        .filter(|f| !FLAGS.iter().any(|(name, _, _)| name == f))
        .collect();
    assert!(
        missing.is_empty(),
        "flags of pi 1.6.0 not exercised: {missing:?}"
    );
}

/// A session file written by pi 1.6.0 (a fixture), moved to `root/cwd`, to open, fork and
/// export.
fn write_session(root: &Path) -> String {
    let text = include_str!("../fixtures/pi160_tools_bash_thinking.jsonl");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut header: serde_json::Value = serde_json::from_str(&lines[0]).expect("header");
    header["cwd"] = json!(root.join("cwd").to_string_lossy());
    lines[0] = header.to_string();
    let path = root.join("sessions").join("pi-written.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write session");
    path.to_string_lossy().into_owned()
}

fn run(args: &[String], root: &Path, stdin: &str) -> Output {
    let cwd = root.join("cwd");
    let mut child = Command::new(pi_rpc_bin())
        .args(args)
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PI_OFFLINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pi-rpc");
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        let _ = input.write_all(stdin.as_bytes());
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("pi-rpc {args:?} did not exit after its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn no_flag_of_pi_is_rejected() {
    let root = TempDir::new("cli-flags");
    for d in [
        "cwd",
        "home",
        "agent",
        "sessions",
        "cwd/skills",
        "cwd/prompts",
    ] {
        std::fs::create_dir_all(root.path().join(d)).expect("mkdir");
    }
    root.write(
        "agent/models.json",
        &mock_models_json("http://127.0.0.1:9").to_string(),
    );
    root.write("cwd/gate.ts", "export default function (pi) {}\n");
    let session = write_session(root.path());
    let mut failures = Vec::new();
    for (flag, args, outcome) in FLAGS {
        let mut argv: Vec<String> = args
            .iter()
            .map(|a| a.replace("{session}", &session))
            .collect();
        let mut base = vec!["--mode".to_string(), "rpc".to_string()];
        if !argv.iter().any(|a| a == "--model" || a == "--models") {
            base.extend(["--model".into(), "mock-sonnet".into()]);
        }
        if !argv
            .iter()
            .any(|a| a.starts_with("--session") || a == "--fork" || a == "--no-session")
        {
            base.push("--no-session".into());
        }
        if matches!(outcome, Outcome::ExitsOk) {
            base.clear();
        }
        base.append(&mut argv);
        let out = run(
            &base,
            root.path(),
            "{\"id\":\"s\",\"type\":\"get_state\"}\n",
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let ok = match outcome {
            Outcome::Serves => {
                out.status.success()
                    && stdout.lines().any(|l| {
                        serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| {
                            v["id"] == "s" && v["command"] == "get_state" && v["success"] == true
                        })
                    })
            }
            Outcome::ExitsOk => out.status.success() && !stdout.is_empty(),
            Outcome::ExtensionLoadFailure => {
                out.status.code() == Some(1)
                    && stdout.is_empty()
                    && stderr.contains("Error: Failed to load extension \"")
                    && stderr.contains(
                        "Hint: Start without extensions using \"pi-rpc --no-extensions\".",
                    )
            }
        };
        if !ok || stderr.contains("Unknown option") || stderr.contains("panicked") {
            failures.push(format!(
                "{flag} ({base:?}): {:?}\nstdout: {}\nstderr: {stderr}",
                out.status,
                stdout.chars().take(300).collect::<String>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn unknown_options_are_refused_as_pi_refuses_them() {
    let root = TempDir::new("cli-unknown");
    for d in ["cwd", "home", "agent"] {
        std::fs::create_dir_all(root.path().join(d)).expect("mkdir");
    }
    let cases: &[(&[&str], &str)] = &[
        (
            &["--no-session", "--plan"],
            "Error: Unknown option: --plan\n",
        ),
        (
            &["--no-session", "--a", "1", "--b=2"],
            "Error: Unknown options: --a, --b\n",
        ),
        (&["--no-session", "-x"], "Error: Unknown option: -x\n"),
        (
            &["--no-session", "--model"],
            "Error: Unknown option: --model\n",
        ),
        (
            &["--mode", "yaml"],
            "Error: Invalid mode \"yaml\". Valid values: text, json, rpc\n",
        ),
        (
            &["--tui-mode", "x"],
            "Error: Invalid TUI mode \"x\". Valid values: regular, fullscreen\n",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
        let out = run(&args, root.path(), "");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn version_names_pi_rpc_and_is_not_taken_for_an_old_pi() {
    // Regression: pi-acp showed `pi vpi-rpc 0.1.0`; a bare `0.1.0` made it advise `npm i -g`
    // pi to "update" to 1.6.0.
    let out = Command::new(pi_rpc_bin())
        .arg("--version")
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{} (pi-rpc)\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn export_flag_writes_the_html_and_says_where() {
    let root = TempDir::new("cli-export");
    for d in ["cwd", "home", "agent", "sessions"] {
        std::fs::create_dir_all(root.path().join(d)).expect("mkdir");
    }
    root.write(
        "agent/models.json",
        &mock_models_json("http://127.0.0.1:9").to_string(),
    );
    let session = write_session(root.path());
    let out = run(
        &["--export".into(), session.clone(), "page.html".into()],
        root.path(),
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Exported to: page.html\n"
    );
    let html = std::fs::read_to_string(root.path().join("cwd/page.html")).expect("page");
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..200.min(html.len())]
    );

    let missing = root.path().join("cwd/none.jsonl");
    let out = run(&["--export".into(), "none.jsonl".into()], root.path(), "");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("Error: File not found: {}\n", missing.display())
    );
}

#[test]
fn a_configured_extension_is_never_silently_skipped() {
    // Regression: `-e gate.ts` ran without the gate, so every guarded command ran.
    let mut a = Agent::builder()
        .args(["-e", "gate.ts"])
        .cwd_file("gate.ts", "export default function (pi) {}\n")
        .spawn();
    let status = a.wait_exit(Duration::from_secs(10));
    assert_eq!(status.code(), Some(1));
    let gate = a.cwd.join("gate.ts");
    assert_eq!(
        a.stderr(),
        format!(
            "Error: Failed to load extension \"{}\": Failed to load extension: \
             TypeScript/JavaScript extensions need the Node extension host (set \
             piRpc.nodeExtensionHost in settings.json or PI_RPC_NODE_EXTENSION_HOST=1)\n\
             Hint: Start without extensions using \"pi-rpc --no-extensions\".\n",
            gate.display()
        )
    );
    assert!(a.records.is_empty());

    // Found in the agent dir's extensions folder: the same.
    let mut a = Agent::builder()
        .agent_file(
            "extensions/gate/index.ext.json",
            r#"{"command":["./gate"],"protocol":1}"#,
        )
        .spawn();
    assert_eq!(a.wait_exit(Duration::from_secs(10)).code(), Some(1));
    assert!(
        a.stderr()
            .contains("extensions/gate/index.ext.json\": Failed to load extension"),
        "{}",
        a.stderr()
    );

    // With --no-extensions the folder is not read, and pi-rpc serves.
    let mut a = Agent::builder()
        .args(["--no-extensions"])
        .agent_file("extensions/gate.ts", "export default function (pi) {}\n")
        .spawn();
    let r = a.request("s", json!({"type": "get_state"}));
    assert_eq!(r["success"], true);
}
