//! `export_html` in a real browser: a session made through the real binary (user text with an
//! image, assistant text and thinking, tool calls with an ok and an error result, an RPC bash
//! execution, a session name) is exported, then opened in headless Chromium. The checks are on
//! what Chromium rendered (`--dump-dom`) and on what it fetched (`--log-net-log`): every text is
//! there, markup from the session stays text, the image is an inline `data:` URI, and the page
//! asks for nothing from anywhere.
//!
//! Needs Chromium: Debian's `chromium` package (`/usr/bin/chromium`), or the binary named by
//! `PI_RPC_CHROMIUM`. Without it the test says so and skips, unless `PI_RPC_REQUIRE` names
//! `chromium` (`.ci/run` installs it and does).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::outside;
use crate::support::run::{agent_for, run_command, PNG_B64};
use crate::support::TempDir;

/// The Chromium binary (`$PI_RPC_CHROMIUM`, else `chromium` on `PATH`), or `None` when the
/// test skips (see `support::outside`).
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PI_RPC_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| outside::on_path(&["chromium", "chromium-browser"]));
    outside::need(
        "chromium",
        found,
        "export_html browser test",
        "install Debian's package (`apt-get update && apt-get install -y chromium`) or set \
         PI_RPC_CHROMIUM to a Chromium binary",
    )
}

/// What Chromium made of a page: the serialized DOM after load, and the URLs the page itself
/// requested (Chromium's own background requests are not the page's, and are left out).
struct Rendered {
    dom: String,
    page_requests: Vec<String>,
}

/// Loads `html` in headless Chromium with a fresh profile and no way out to the network.
fn render(browser: &Path, html: &Path, work: &Path) -> Rendered {
    let profile = work.join("chromium-profile");
    let netlog = work.join("netlog.json");
    std::fs::create_dir_all(&profile).expect("profile dir");
    let url = format!("file://{}", html.display());
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Nothing resolves: a page (or Chromium) asking for the network gets nowhere, and
            // the request is still logged.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--dump-dom")
        .arg(&url)
        .env("HOME", work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start Chromium: {e}"));
    // Chromium is slow to start on a busy machine; give it time, but never hang the suite.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait().expect("wait for Chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("Chromium did not finish rendering {url} within 120 s");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let out = child.wait_with_output().expect("Chromium output");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && dom.contains("<html"),
        "Chromium failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Rendered {
        dom,
        page_requests: page_requests(&netlog),
    }
}

/// URLs requested on behalf of a `file://` page, from a Chromium NetLog file.
fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).expect("Chromium wrote no NetLog");
    let log: Value = serde_json::from_str(&text).expect("NetLog is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    assert!(start_job.is_number(), "unexpected NetLog format");
    log["events"]
        .as_array()
        .expect("NetLog events")
        .iter()
        .filter(|e| e["type"] == start_job)
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.contains("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .collect()
}

/// The text a reader sees: tags removed, character references decoded, whitespace collapsed.
fn visible_text(dom: &str) -> String {
    let body = dom.split_once("<body").map_or(dom, |(_, b)| b);
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every element start tag `<name ...>` in the DOM, by name.
fn tags<'a>(dom: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name}");
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        if after.starts_with([' ', '>', '/', '\n']) {
            let end = after.find('>').map_or(after.len(), |j| j + 1);
            out.push(&rest[i..i + open.len() + end]);
        }
        rest = after;
    }
    out
}

/// Every tag `<...>` of the DOM (text from the session is escaped, so each raw `<` opens one).
fn all_tags(dom: &str) -> Vec<&str> {
    dom.split('<')
        .skip(1)
        .map(|t| t.split_once('>').map_or(t, |(inside, _)| inside))
        .collect()
}

#[test]
fn exported_session_renders_in_chromium_escaped_and_offline() {
    let Some(browser) = chromium() else {
        return;
    };
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [
            {"type": "thinking", "text": "The user wants <b>markup</b> & a listing.", "signature": "sig"},
            {"type": "text", "text": "Running <it> now."},
            {"type": "tool_call", "id": "toolu_1", "name": "bash",
             "input": {"command": "echo '<i>tool says hi</i>'"}}
        ]},
        {"blocks": [
            {"type": "tool_call", "id": "toolu_2", "name": "read",
             "input": {"path": "no-such-file.txt"}}
        ]},
        {"blocks": [{"type": "text", "text": "All done: <script>alert('a')</script> & \"quotes\""}]}
    ]}));
    let work = TempDir::new("export-html");
    let sessions = work.path().join("sessions");
    let mut agent = agent_for(&mock)
        .no_default_args()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-sonnet",
            "--session-dir",
        ])
        .args([sessions.to_string_lossy().into_owned()])
        .spawn();

    run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt",
               "message": "Look: <script>alert('x')</script> & <img src=x onerror=alert(1)>",
               "images": [{"type": "image", "data": PNG_B64, "mimeType": "image/png"}]}),
    );
    let bash = agent.request(
        "b1",
        json!({"type": "bash", "command": "echo '<u>rpc bash</u>'; exit 3"}),
    );
    assert_eq!(bash["data"]["exitCode"], 3, "{bash}");
    let named = agent.request(
        "n1",
        json!({"type": "set_session_name", "name": "Export <test> & co"}),
    );
    assert_eq!(named["success"], true, "{named}");
    let html_path = work.path().join("export.html");
    let exported = agent.request(
        "e1",
        json!({"type": "export_html", "outputPath": html_path.to_string_lossy()}),
    );
    assert_eq!(
        exported["data"],
        json!({"path": html_path.to_string_lossy()}),
        "{exported}"
    );

    // The session as the file has it: the checks below are about rendering these.
    let entries = agent.request("g1", json!({"type": "get_entries"}));
    let roles: Vec<&str> = entries["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["message"]["role"].as_str())
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

    let page = render(&browser, &html_path, work.path());
    let dom = &page.dom;
    let text = visible_text(dom);

    // What a reader sees: every part of the conversation, markup from the session as text.
    for expected in [
        "Export <test> & co",
        "Look: <script>alert('x')</script> & <img src=x onerror=alert(1)>",
        "The user wants <b>markup</b> & a listing.",
        "Running <it> now.",
        "echo '<i>tool says hi</i>'",
        "<i>tool says hi</i>",
        "no-such-file.txt",
        "All done: <script>alert('a')</script> & \"quotes\"",
        "$ echo '<u>rpc bash</u>'; exit 3",
        "<u>rpc bash</u>",
        "exit 3",
        "mock/mock-sonnet",
    ] {
        assert!(
            text.contains(expected),
            "the rendered page does not show {expected:?}:\n{text}"
        );
    }
    // Markup from the session stayed text: no element came out of it.
    assert!(tags(dom, "script").is_empty(), "script element in {dom}");
    for tag in ["b", "i", "u", "it"] {
        assert!(tags(dom, tag).is_empty(), "<{tag}> element in the page");
    }
    for tag in all_tags(dom) {
        let handler = tag
            .split_whitespace()
            .skip(1)
            .filter_map(|attr| attr.split_once('=').map(|(name, _)| name))
            .any(|name| name.to_ascii_lowercase().starts_with("on"));
        assert!(!handler, "an event handler attribute in the page: <{tag}>");
    }
    // The thinking is there, folded; the failed read is marked as an error.
    assert!(dom.contains("<details class=\"thinking\"><summary>Thinking</summary>"));
    assert!(
        text.contains("tool result: read error"),
        "the failed tool result is not marked:\n{text}"
    );
    assert!(
        text.contains("tool result: bash ok"),
        "the ok tool result is not marked:\n{text}"
    );
    // The image: an inline data URI, the one the user sent.
    let imgs = tags(dom, "img");
    assert_eq!(imgs.len(), 1, "{imgs:?}");
    assert!(
        imgs[0].contains(&format!("src=\"data:image/png;base64,{PNG_B64}\"")),
        "{}",
        imgs[0]
    );
    // Offline: the page refers to nothing outside itself and fetched nothing.
    for tag in [
        "link", "iframe", "object", "embed", "video", "audio", "source",
    ] {
        assert!(tags(dom, tag).is_empty(), "<{tag}> in the page");
    }
    assert!(!dom.contains("url("), "a CSS url() in the page");
    assert!(!dom.contains("@import"), "a CSS @import in the page");
    assert_eq!(
        page.page_requests,
        Vec::<String>::new(),
        "the page made requests"
    );
    assert!(
        browser.exists(),
        "Chromium disappeared during the test: {}",
        browser.display()
    );
}
