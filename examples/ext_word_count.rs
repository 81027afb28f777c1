//! `word_count`: a pi-rpc process extension (protocol 1) written in Rust, with `serde_json` only.
//!
//! What it shows:
//! * registering a **tool** in the `initialize` answer (`word_count`, offered to the model like a
//!   built-in tool) and executing `tool` requests, with **`tool_update`** progress notifications
//!   (each becomes a `tool_execution_update` on pi-rpc's stdout) and a `cancel` that stops it;
//! * a failing tool (`ok:false`), which pi-rpc turns into an error tool result;
//! * registering a **command** (`/wc <path>`) that answers with a fire-and-forget `ui.notify`.
//!
//! Build and run:
//!
//! ```sh
//! cargo build --release --example ext_word_count     # target/release/examples/ext_word_count
//! pi-rpc -e examples/extensions/word_count           # its manifest starts that binary
//! ```
//!
//! `examples/extensions/README.md` has an offline run against the scripted LLM. Requests run on
//! their own threads, so a long count never holds up the reading of a `cancel`.
//! `WORD_COUNT_CHUNK_DELAY_MS` slows each 64 KiB chunk down, to watch progress and cancel.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Shared by the reader loop and the request threads.
struct Ext {
    /// stdout, locked per line so lines from several threads never interleave.
    out: Mutex<std::io::Stdout>,
    /// Cancellation flags of the host requests still running, by request id.
    running: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// The session cwd from `initialize`: relative paths are resolved against it.
    cwd: Mutex<PathBuf>,
}

impl Ext {
    fn send(&self, msg: &Value) {
        let line = format!("{msg}\n");
        if let Ok(mut out) = self.out.lock() {
            // A closed stdout means pi-rpc is gone; the read loop ends at EOF right after.
            let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
        }
    }

    fn answer(&self, id: &str, outcome: Result<Value, String>) {
        let msg = match outcome {
            Ok(value) => json!({"type": "result", "id": id, "ok": true, "value": value}),
            Err(message) => {
                json!({"type": "result", "id": id, "ok": false, "error": {"message": message}})
            }
        };
        self.send(&msg);
    }
}

/// Word, line and byte counts as `wc` counts them (words split on ASCII whitespace).
#[derive(Default, Clone, Copy)]
struct Counts {
    lines: u64,
    words: u64,
    bytes: u64,
}

impl Counts {
    fn text(&self, path: &str) -> String {
        format!(
            "{path}: {} lines, {} words, {} bytes",
            self.lines, self.words, self.bytes
        )
    }

    fn details(&self, path: &str, done: bool) -> Value {
        json!({"path": path, "lines": self.lines, "words": self.words, "bytes": self.bytes,
               "done": done})
    }
}

/// Counts `path`, calling `progress` after every MiB (and once before the first byte), and
/// stops with an error when `cancelled` is set.
fn count_file(
    path: &Path,
    cancelled: &AtomicBool,
    progress: &mut dyn FnMut(Counts, u64),
) -> Result<Counts, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let delay = std::env::var("WORD_COUNT_CHUNK_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis);
    let mut counts = Counts::default();
    let mut in_word = false;
    let mut buf = vec![0u8; 64 * 1024];
    let mut next_report = 0u64;
    loop {
        if cancelled.load(Ordering::SeqCst) {
            return Err("Operation aborted".into());
        }
        if counts.bytes >= next_report {
            progress(counts, total);
            next_report += 1 << 20;
        }
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            return Ok(counts);
        }
        for &b in &buf[..n] {
            if b == b'\n' {
                counts.lines += 1;
            }
            let space = b.is_ascii_whitespace();
            if !space && !in_word {
                counts.words += 1;
            }
            in_word = !space;
        }
        counts.bytes += n as u64;
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
    }
}

/// A `tool` request: `{"type":"tool","id","name","toolCallId","params":{"path":...}}`.
fn run_tool(ext: &Ext, msg: &Value, id: &str, cancelled: &AtomicBool) -> Result<Value, String> {
    if msg["name"] != "word_count" {
        return Err(format!("unknown tool {}", msg["name"]));
    }
    let path = msg["params"]["path"]
        .as_str()
        .ok_or("word_count needs a string \"path\"")?;
    let full = ext.cwd.lock().map(|c| c.join(path)).unwrap_or_default();
    let started = Instant::now();
    let counts = count_file(&full, cancelled, &mut |so_far, total| {
        // A notification naming the pending tool request; pi-rpc turns it into a
        // `tool_execution_update` whose `partialResult` is this object.
        let text = format!("counting {path}: {} of {total} bytes", so_far.bytes);
        ext.send(&json!({"type": "tool_update", "id": id, "partialResult": {
            "content": [{"type": "text", "text": text}],
            "details": so_far.details(path, false)}}));
    })?;
    let mut details = counts.details(path, true);
    details["ms"] = json!(started.elapsed().as_millis() as u64);
    // pi's tool result shape: {content, details?, isError?, terminate?, structuredContent?}.
    Ok(json!({"content": [{"type": "text", "text": counts.text(path)}], "details": details}))
}

/// A `command` request for `/wc <path>`: the answer is a notification, the result `null`.
fn run_command(ext: &Ext, msg: &Value, id: &str, cancelled: &AtomicBool) -> Result<Value, String> {
    let path = msg["args"].as_str().unwrap_or("").trim();
    let (message, kind) = if path.is_empty() {
        ("Usage: /wc <path>".to_string(), "warning")
    } else {
        let full = ext.cwd.lock().map(|c| c.join(path)).unwrap_or_default();
        match count_file(&full, cancelled, &mut |_, _| {}) {
            Ok(counts) => (counts.text(path), "info"),
            // A thrown command: pi-rpc writes an `extension_error` ("command:wc") and still
            // answers the prompt `handled`. Here we prefer a friendlier notification.
            Err(e) => (format!("wc: {e}"), "error"),
        }
    };
    // Fire-and-forget (no "id"); `scope` ties it to this command. It reaches stdout before the
    // prompt's `handled` response because we send it before our result.
    ext.send(&json!({"type": "call", "scope": id, "method": "ui.notify",
                     "params": {"message": message, "type": kind}}));
    Ok(Value::Null)
}

/// The `initialize` answer: this process hosts one unit, named by the host.
fn registrations(msg: &Value) -> Value {
    let ext = msg["units"][0]["ext"].clone();
    json!({"protocol": 1, "units": [{
        "ext": ext,
        "tools": [{
            "name": "word_count",
            "label": "Word count",
            "description": "Count the lines, words and bytes of a text file (like wc).",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": "File to count, relative to the working directory"}},
                "required": ["path"]}
        }],
        "commands": [{"name": "wc", "description": "Count lines, words and bytes of a file"}]
    }]})
}

fn main() {
    let ext = Arc::new(Ext {
        out: Mutex::new(std::io::stdout()),
        running: Mutex::new(HashMap::new()),
        cwd: Mutex::new(std::env::current_dir().unwrap_or_default()),
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("word_count: ignoring a line that is not JSON");
            continue;
        };
        let id = msg["id"].as_str().unwrap_or_default().to_string();
        match msg["type"].as_str().unwrap_or_default() {
            "initialize" => {
                // At start-up and at every session replacement: nothing to forget here.
                if let (Some(cwd), Ok(mut slot)) = (msg["cwd"].as_str(), ext.cwd.lock()) {
                    *slot = PathBuf::from(cwd);
                }
                ext.answer(&id, Ok(registrations(&msg)));
            }
            kind @ ("tool" | "command") => {
                let flag = Arc::new(AtomicBool::new(false));
                if let Ok(mut running) = ext.running.lock() {
                    running.insert(id.clone(), Arc::clone(&flag));
                }
                let ext = Arc::clone(&ext);
                let is_tool = kind == "tool";
                std::thread::spawn(move || {
                    let outcome = if is_tool {
                        run_tool(&ext, &msg, &id, &flag)
                    } else {
                        run_command(&ext, &msg, &id, &flag)
                    };
                    if let Ok(mut running) = ext.running.lock() {
                        running.remove(&id);
                    }
                    // A cancelled request still gets its result (pi-rpc waits up to 1 s for it).
                    ext.answer(&id, outcome);
                });
            }
            "cancel" => {
                if let Some(flag) = ext.running.lock().ok().and_then(|r| r.get(&id).cloned()) {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            // Not subscribed to any event, but a request must never go unanswered.
            "event" if !id.is_empty() => ext.answer(&id, Ok(Value::Null)),
            _ => {} // results, flags, state mirrors, unknown types: ignored
        }
    }
}
