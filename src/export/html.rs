//! A self-contained HTML rendering of a session's active branch: one file, inline CSS, images as
//! `data:` URIs, no scripts, no external resources, readable offline. Collapsible parts
//! (thinking, system prompt, tool definitions) use `<details>`.
//!
//! Everything from the session is escaped; the page is streamed to the file, so a large session
//! is never held twice in memory.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::output_path::normalize_output_path;
use crate::js::fs_error::nul_path_message;
use crate::llm::Role;
use crate::session::{Entry, EntryKind, SessionManager};

/// Why `export_html` failed. The `Display` text is the RPC error.
#[derive(Debug)]
pub enum ExportError {
    /// `--no-session`.
    InMemory,
    /// A persisted session whose file has not been written yet.
    NothingToExport,
    /// A `file://` output path Node cannot turn into a path (Node's message).
    InvalidPath(String),
    /// Node's `ERR_INVALID_ARG_VALUE`: a NUL byte in the output path (the path as given).
    NulInPath(String),
    /// Opening or writing the output failed. `path` is the output path as the client gave it
    /// (after `~` expansion), named only for `open` errors, as Node does.
    Io {
        syscall: &'static str,
        path: String,
        source: io::Error,
    },
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::InMemory => f.write_str("Cannot export in-memory session to HTML"),
            ExportError::NothingToExport => {
                f.write_str("Nothing to export yet - start a conversation first")
            }
            ExportError::InvalidPath(message) => f.write_str(message),
            ExportError::NulInPath(path) => f.write_str(&nul_path_message(path)),
            ExportError::Io {
                syscall,
                path,
                source,
            } => {
                let path = (*syscall == "open").then_some(Path::new(path.as_str()));
                f.write_str(&crate::js::fs_error::node_error(source, syscall, path))
            }
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Writes the session as HTML. `output_path` is used as given after pi's `normalizePath` (`~`
/// expansion, `file://` URLs; relative paths are relative to `cwd`); by default
/// `pi-session-<session file name without .jsonl>.html` in `cwd`. Returns the path as reported
/// to the client: `output_path` (normalized) or the relative default name. Missing folders are
/// not created; errors read as Node's and name that reported path, not the resolved one.
pub fn export_html(
    manager: &SessionManager,
    output_path: Option<&str>,
    cwd: &Path,
) -> Result<String, ExportError> {
    let Some(file) = manager.session_file() else {
        return Err(ExportError::InMemory);
    };
    if !file.exists() {
        return Err(ExportError::NothingToExport);
    }
    let reported = match output_path.filter(|p| !p.is_empty()) {
        Some(p) => normalize_output_path(p).map_err(ExportError::InvalidPath)?,
        None => {
            let stem = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = stem.strip_suffix(".jsonl").unwrap_or(&stem).to_string();
            format!("pi-session-{stem}.html")
        }
    };
    let target = {
        let p = PathBuf::from(&reported);
        if p.is_absolute() {
            p
        } else {
            cwd.join(p)
        }
    };
    if reported.contains('\0') {
        return Err(ExportError::NulInPath(reported));
    }
    // As pi's `writeFileSync`: the folder must exist; errors name the path as given.
    let io_err = |syscall| {
        let path = reported.clone();
        move |source| ExportError::Io {
            syscall,
            path,
            source,
        }
    };
    let f = File::create(&target).map_err(io_err("open"))?;
    let mut out = BufWriter::with_capacity(256 * 1024, f);
    render_html(manager, &mut out).map_err(io_err("write"))?;
    out.flush().map_err(io_err("write"))?;
    Ok(reported)
}

/// HTML-escapes text for element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root{--bg:#fff;--fg:#1d1f23;--muted:#6a7078;--card:#f6f7f9;--border:#dde1e6;--user:#eaf2ff;--tool:#f3f0ff;--err:#c62828;--errbg:#fdecea;--ok:#2e7d32;--code:#f0f1f3}
@media (prefers-color-scheme:dark){:root{--bg:#16181c;--fg:#e3e5e8;--muted:#9aa1a9;--card:#1f2228;--border:#343842;--user:#1d2a3d;--tool:#262238;--err:#ef9a9a;--errbg:#3a1f1f;--ok:#81c784;--code:#23262d}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:960px;margin:0 auto;padding:24px 16px 64px}
header.session{border-bottom:1px solid var(--border);margin-bottom:20px;padding-bottom:12px}
header.session h1{font-size:22px;margin:0 0 8px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0;font-size:13px;color:var(--muted)}
dl.meta dd{margin:0;word-break:break-all}
.entry{background:var(--card);border:1px solid var(--border);border-radius:8px;margin:12px 0;padding:10px 14px}
.entry.user{background:var(--user)}
.entry.tool-result,.entry.bash{background:var(--tool)}
.entry.error{border-color:var(--err);background:var(--errbg)}
.role{font-size:12px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);margin-bottom:4px;display:flex;gap:8px;flex-wrap:wrap}
.role .ts{font-weight:400;text-transform:none;letter-spacing:0}
.badge{border-radius:4px;padding:0 6px;font-size:11px;border:1px solid currentColor}
.badge.error{color:var(--err)}
.badge.ok{color:var(--ok)}
.text{white-space:pre-wrap;word-wrap:break-word}
pre{background:var(--code);border-radius:6px;padding:8px 10px;overflow-x:auto;white-space:pre-wrap;word-wrap:break-word;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:6px 0}
details{margin:6px 0}
summary{cursor:pointer;color:var(--muted);font-size:13px}
.thinking .text{color:var(--muted);font-style:italic}
.toolcall{border-left:3px solid var(--border);padding-left:10px;margin:8px 0}
.toolcall .name{font-family:ui-monospace,monospace;font-weight:600}
img.attachment{max-width:100%;max-height:480px;min-width:64px;min-height:64px;object-fit:contain;background:var(--bg);border:1px solid var(--border);border-radius:6px;margin:6px 0;display:block}
.note{font-size:13px;color:var(--muted);margin:6px 2px}
.footer{font-size:12px;color:var(--muted);margin-top:6px}
.hidden-ctx{opacity:.6}
.summary-box{border-style:dashed}
"#;

/// Renders the whole page into `out`.
pub fn render_html(manager: &SessionManager, out: &mut impl Write) -> io::Result<()> {
    let header = manager.header();
    let branch = manager.branch();
    let name = manager.session_name();
    let title = match &name {
        Some(n) => n.clone(),
        None => format!("pi session {}", header.id),
    };
    let ctx_model = manager.selection().model;

    // Entries hidden from the model by a context_edit (latest edit per target).
    let mut hidden: HashSet<String> = HashSet::new();
    for e in &branch {
        if e.kind() == EntryKind::ContextEdit {
            if let Some(t) = e.get_str("targetId") {
                if matches!(e.get("replacement"), None | Some(Value::Null)) {
                    hidden.insert(t);
                } else {
                    hidden.remove(&t);
                }
            }
        }
    }

    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(out, "<meta name=\"generator\" content=\"pi-rpc\">")?;
    writeln!(out, "<title>{}</title>", escape(&title))?;
    writeln!(out, "<style>{STYLE}</style></head><body><main>")?;

    writeln!(out, "<header class=\"session\"><h1>{}</h1>", escape(&title))?;
    writeln!(out, "<dl class=\"meta\">")?;
    let mut meta = |k: &str, v: &str| -> io::Result<()> {
        writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v))
    };
    meta("Session", &header.id)?;
    if let Some(f) = manager.session_file() {
        meta("File", &f.to_string_lossy())?;
    }
    meta("Created", &header.timestamp)?;
    meta("Working directory", &header.cwd)?;
    if let Some((p, m)) = &ctx_model {
        meta("Model", &format!("{p}/{m}"))?;
    }
    if let Some(p) = &header.parent_session {
        meta("Forked from", p)?;
    }
    let (messages, tokens, cost) = totals(manager.entries());
    meta(
        "Entries",
        &format!(
            "{} ({} on this branch, {} messages)",
            manager.entries().len(),
            branch.len(),
            messages
        ),
    )?;
    if tokens > 0 {
        meta("Tokens", &format!("{tokens} (cost ${cost:.4})"))?;
    }
    writeln!(out, "</dl></header>")?;

    for e in &branch {
        render_entry(out, e, hidden.contains(e.id()))?;
    }
    writeln!(out, "</main></body></html>")?;
    Ok(())
}

/// (message entries, total tokens, total cost) over all entries.
fn totals(entries: &[Entry]) -> (usize, u64, f64) {
    #[derive(serde::Deserialize)]
    struct View {
        message: Option<Msg>,
        usage: Option<Usage>,
    }
    #[derive(serde::Deserialize)]
    struct Msg {
        usage: Option<Usage>,
    }
    #[derive(serde::Deserialize)]
    struct Usage {
        input: Option<f64>,
        output: Option<f64>,
        #[serde(rename = "cacheRead")]
        cache_read: Option<f64>,
        #[serde(rename = "cacheWrite")]
        cache_write: Option<f64>,
        cost: Option<Cost>,
    }
    #[derive(serde::Deserialize)]
    struct Cost {
        total: Option<f64>,
    }
    let (mut messages, mut tokens, mut cost) = (0usize, 0f64, 0f64);
    for e in entries {
        if e.kind() == EntryKind::Message {
            messages += 1;
        }
        if !matches!(
            e.kind(),
            EntryKind::Message
                | EntryKind::Compaction
                | EntryKind::BranchSummary
                | EntryKind::Usage
        ) {
            continue;
        }
        let Ok(v) = e.deserialize::<View>() else {
            continue;
        };
        let usage = match v.message {
            Some(m) => m.usage,
            None => v.usage,
        };
        if let Some(u) = usage {
            tokens += u.input.unwrap_or(0.0)
                + u.output.unwrap_or(0.0)
                + u.cache_read.unwrap_or(0.0)
                + u.cache_write.unwrap_or(0.0);
            cost += u.cost.and_then(|c| c.total).unwrap_or(0.0);
        }
    }
    (messages, tokens.max(0.0) as u64, cost)
}

fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn open_card(
    out: &mut impl Write,
    class: &str,
    role: &str,
    e: &Entry,
    hidden: bool,
    badges: &[(&str, &str)],
) -> io::Result<()> {
    let extra = if hidden { " hidden-ctx" } else { "" };
    write!(
        out,
        "<section class=\"entry {class}{extra}\" id=\"entry-{}\"><div class=\"role\"><span>{}</span>",
        escape(e.id()),
        escape(role)
    )?;
    for (cls, text) in badges {
        write!(
            out,
            "<span class=\"badge {}\">{}</span>",
            escape(cls),
            escape(text)
        )?;
    }
    if hidden {
        write!(out, "<span class=\"badge\">hidden from context</span>")?;
    }
    writeln!(
        out,
        "<span class=\"ts\">{}</span></div>",
        escape(e.timestamp())
    )
}

fn text_div(out: &mut impl Write, text: &str) -> io::Result<()> {
    writeln!(out, "<div class=\"text\">{}</div>", escape(text))
}

fn pre(out: &mut impl Write, text: &str) -> io::Result<()> {
    writeln!(out, "<pre>{}</pre>", escape(text))
}

/// `data:` URI of an image block; only base64 data and `image/*` types are embedded.
fn image(out: &mut impl Write, block: &Value) -> io::Result<()> {
    let mime = str_of(block, "mimeType").unwrap_or("");
    let data = str_of(block, "data").unwrap_or("");
    let ok_mime = mime.starts_with("image/")
        && mime[6..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    let ok_data = data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'));
    if ok_mime && ok_data && !data.is_empty() {
        writeln!(
            out,
            "<img class=\"attachment\" alt=\"attached image ({})\" src=\"data:{};base64,{}\">",
            escape(mime),
            escape(mime),
            escape(&data.replace(['\n', '\r'], ""))
        )
    } else {
        writeln!(
            out,
            "<div class=\"note\">[image ({}) not shown]</div>",
            escape(mime)
        )
    }
}

/// Renders `content` (a string or text/image/thinking/toolCall blocks).
fn content(out: &mut impl Write, content: Option<&Value>) -> io::Result<()> {
    match content {
        Some(Value::String(s)) => text_div(out, s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match str_of(b, "type") {
                    Some("text") => text_div(out, str_of(b, "text").unwrap_or(""))?,
                    Some("image") => image(out, b)?,
                    Some("thinking") => {
                        let redacted = b.get("redacted").and_then(Value::as_bool) == Some(true);
                        let label = if redacted {
                            "Thinking (redacted)"
                        } else {
                            "Thinking"
                        };
                        writeln!(
                            out,
                            "<details class=\"thinking\"><summary>{label}</summary>"
                        )?;
                        text_div(out, str_of(b, "thinking").unwrap_or(""))?;
                        writeln!(out, "</details>")?;
                    }
                    Some("toolCall") => {
                        writeln!(
                            out,
                            "<div class=\"toolcall\"><span class=\"name\">{}</span> <span class=\"note\">{}</span>",
                            escape(str_of(b, "name").unwrap_or("?")),
                            escape(str_of(b, "id").unwrap_or(""))
                        )?;
                        let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                        let text = serde_json::to_string_pretty(&args).unwrap_or_default();
                        pre(out, &text)?;
                        writeln!(out, "</div>")?;
                    }
                    _ => pre(out, &serde_json::to_string_pretty(b).unwrap_or_default())?,
                }
            }
            Ok(())
        }
        None | Some(Value::Null) => Ok(()),
        Some(other) => pre(
            out,
            &serde_json::to_string_pretty(other).unwrap_or_default(),
        ),
    }
}

fn render_entry(out: &mut impl Write, e: &Entry, hidden: bool) -> io::Result<()> {
    match e.kind() {
        EntryKind::Message => {
            let Some(msg) = e.message() else {
                return Ok(());
            };
            render_message(out, e, &msg, hidden)
        }
        EntryKind::Compaction => {
            let tokens = e
                .get("tokensBefore")
                .and_then(|v| v.as_u64())
                .map(|t| format!("{t} tokens before"))
                .unwrap_or_default();
            let badges: Vec<(&str, &str)> = if tokens.is_empty() {
                Vec::new()
            } else {
                vec![("", tokens.as_str())]
            };
            open_card(out, "summary-box", "compaction", e, false, &badges)?;
            writeln!(
                out,
                "<div class=\"note\">Earlier messages were summarized for the model:</div>"
            )?;
            text_div(out, &e.get_str("summary").unwrap_or_default())?;
            writeln!(out, "</section>")
        }
        EntryKind::BranchSummary => {
            open_card(out, "summary-box", "branch summary", e, false, &[])?;
            writeln!(
                out,
                "<div class=\"note\">Summary of an abandoned branch:</div>"
            )?;
            text_div(out, &e.get_str("summary").unwrap_or_default())?;
            writeln!(out, "</section>")
        }
        EntryKind::CustomMessage => {
            let ct = e.get_str("customType").unwrap_or_default();
            open_card(out, "custom", &format!("custom: {ct}"), e, hidden, &[])?;
            content(out, e.get("content").as_ref())?;
            writeln!(out, "</section>")
        }
        EntryKind::ModelChange => writeln!(
            out,
            "<div class=\"note\">Model: {}/{}</div>",
            escape(&e.get_str("provider").unwrap_or_default()),
            escape(&e.get_str("modelId").unwrap_or_default())
        ),
        EntryKind::ThinkingLevelChange => writeln!(
            out,
            "<div class=\"note\">Thinking level: {}</div>",
            escape(&e.get_str("thinkingLevel").unwrap_or_default())
        ),
        EntryKind::SessionInfo => writeln!(
            out,
            "<div class=\"note\">Session name: {}</div>",
            escape(&e.get_str("name").unwrap_or_default())
        ),
        EntryKind::Session
        | EntryKind::Custom
        | EntryKind::Label
        | EntryKind::ContextEdit
        | EntryKind::Usage
        | EntryKind::Other(_) => Ok(()),
    }
}

fn render_message(out: &mut impl Write, e: &Entry, msg: &Value, hidden: bool) -> io::Result<()> {
    let role = Role::of(msg);
    match role {
        Some(Role::System) => render_system(out, msg),
        Some(Role::User) => {
            open_card(out, "user", "user", e, hidden, &[])?;
            content(out, msg.get("content"))?;
            writeln!(out, "</section>")
        }
        Some(Role::Assistant) => {
            let stop = str_of(msg, "stopReason").unwrap_or("");
            let failed = matches!(stop, "error" | "aborted");
            let class = if failed {
                "assistant error"
            } else {
                "assistant"
            };
            let badges: Vec<(&str, &str)> = if failed {
                vec![("error", stop)]
            } else {
                Vec::new()
            };
            open_card(out, class, "assistant", e, hidden, &badges)?;
            content(out, msg.get("content"))?;
            if let Some(err) = str_of(msg, "errorMessage") {
                writeln!(
                    out,
                    "<div class=\"text\"><strong>Error:</strong> {}</div>",
                    escape(err)
                )?;
            }
            let mut foot = Vec::new();
            if let (Some(p), Some(m)) = (str_of(msg, "provider"), str_of(msg, "model")) {
                foot.push(format!("{p}/{m}"));
            }
            if !stop.is_empty() {
                foot.push(format!("stop: {stop}"));
            }
            if let Some(u) = msg.get("usage") {
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                foot.push(format!("in {} · out {}", n("input"), n("output")));
            }
            writeln!(
                out,
                "<div class=\"footer\">{}</div></section>",
                escape(&foot.join(" · "))
            )
        }
        Some(Role::ToolResult) => {
            let is_err = msg.get("isError").and_then(Value::as_bool) == Some(true);
            let class = if is_err {
                "tool-result error"
            } else {
                "tool-result"
            };
            let role = format!("tool result: {}", str_of(msg, "toolName").unwrap_or("?"));
            let badges: Vec<(&str, &str)> = if is_err {
                vec![("error", "error")]
            } else {
                vec![("ok", "ok")]
            };
            open_card(out, class, &role, e, hidden, &badges)?;
            match msg.get("content") {
                Some(Value::Array(blocks)) => {
                    for b in blocks {
                        match str_of(b, "type") {
                            Some("text") => pre(out, str_of(b, "text").unwrap_or(""))?,
                            Some("image") => image(out, b)?,
                            _ => pre(out, &serde_json::to_string_pretty(b).unwrap_or_default())?,
                        }
                    }
                }
                other => content(out, other)?,
            }
            writeln!(out, "</section>")
        }
        Some(Role::BashExecution) => {
            let cancelled = msg.get("cancelled").and_then(Value::as_bool) == Some(true);
            let code = msg.get("exitCode").and_then(Value::as_i64);
            let failed = cancelled || code.is_some_and(|c| c != 0);
            let status = if cancelled {
                "cancelled".to_string()
            } else {
                code.map_or_else(String::new, |c| format!("exit {c}"))
            };
            let class = if failed { "bash error" } else { "bash" };
            let badges: Vec<(&str, &str)> = if status.is_empty() {
                Vec::new()
            } else {
                vec![(if failed { "error" } else { "ok" }, status.as_str())]
            };
            open_card(out, class, "bash", e, hidden, &badges)?;
            pre(out, &format!("$ {}", str_of(msg, "command").unwrap_or("")))?;
            let output = str_of(msg, "output").unwrap_or("");
            if output.is_empty() {
                writeln!(out, "<div class=\"note\">(no output)</div>")?;
            } else {
                pre(out, output)?;
            }
            if msg.get("truncated").and_then(Value::as_bool) == Some(true) {
                let full = str_of(msg, "fullOutputPath").unwrap_or("");
                writeln!(
                    out,
                    "<div class=\"note\">Output truncated. Full output: {}</div>",
                    escape(full)
                )?;
            }
            if msg.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                writeln!(out, "<div class=\"note\">Not sent to the model.</div>")?;
            }
            writeln!(out, "</section>")
        }
        Some(Role::Custom) => {
            let ct = str_of(msg, "customType").unwrap_or("");
            open_card(out, "custom", &format!("custom: {ct}"), e, hidden, &[])?;
            content(out, msg.get("content"))?;
            writeln!(out, "</section>")
        }
        Some(Role::BranchSummary | Role::CompactionSummary | Role::Other(_)) | None => {
            let other = role.as_ref().map_or("", Role::as_str);
            open_card(out, "other", other, e, hidden, &[])?;
            pre(out, &serde_json::to_string_pretty(msg).unwrap_or_default())?;
            writeln!(out, "</section>")
        }
    }
}

/// A system message, collapsed: its content, its sections, and the tools it declares.
fn render_system(out: &mut impl Write, msg: &Value) -> io::Result<()> {
    writeln!(
        out,
        "<details class=\"entry system\"><summary>System prompt</summary>"
    )?;
    if let Some(c) = str_of(msg, "content").filter(|c| !c.is_empty()) {
        pre(out, c)?;
    }
    if let Some(Value::Object(sections)) = msg.get("sections") {
        for (name, text) in sections {
            match text {
                Value::String(t) => {
                    writeln!(out, "<div class=\"note\">{}</div>", escape(name))?;
                    pre(out, t)?;
                }
                Value::Null => {
                    writeln!(out, "<div class=\"note\">{} (removed)</div>", escape(name))?
                }
                _ => {}
            }
        }
    }
    for (key, label) in [
        ("toolsAdded", "Tools added"),
        ("toolsRemoved", "Tools removed"),
    ] {
        let Some(Value::Array(tools)) = msg.get(key) else {
            continue;
        };
        if tools.is_empty() {
            continue;
        }
        writeln!(out, "<details><summary>{label} ({})</summary>", tools.len())?;
        for t in tools {
            writeln!(
                out,
                "<div class=\"toolcall\"><span class=\"name\">{}</span>",
                escape(str_of(t, "name").unwrap_or("?"))
            )?;
            if let Some(d) = str_of(t, "description") {
                text_div(out, d)?;
            }
            if let Some(p) = t.get("parameters") {
                pre(out, &serde_json::to_string_pretty(p).unwrap_or_default())?;
            }
            writeln!(out, "</div>")?;
        }
        writeln!(out, "</details>")?;
    }
    writeln!(out, "</details>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaping() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    fn render(sm: &SessionManager) -> String {
        let mut v = Vec::new();
        render_html(sm, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn renders_every_kind_of_message_escaped() {
        let mut sm = SessionManager::in_memory(Path::new("/w"));
        sm.append_model_change("prov", "mod").unwrap();
        sm.append_message(json!({"role":"system","content":"","sections":{"preamble":"Be <brief>","rules":null},"toolsAdded":[{"name":"read","description":"Read a file","parameters":{"type":"object"}}]})).unwrap();
        sm.append_message(json!({"role":"user","content":[{"type":"text","text":"<script>alert(1)</script>"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"image","data":"\"><script>","mimeType":"image/png"}]})).unwrap();
        sm.append_message(json!({"role":"assistant","content":[{"type":"thinking","thinking":"hmm & so"},{"type":"text","text":"ok"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls </dev/null"}}],"provider":"prov","model":"mod","stopReason":"toolUse"})).unwrap();
        sm.append_message(json!({"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"boom"}],"isError":true})).unwrap();
        let failed = sm.append_message(json!({"role":"assistant","content":[],"stopReason":"error","errorMessage":"529 <overloaded>"})).unwrap();
        sm.append_context_edit(failed.id(), None).unwrap();
        sm.append_message(json!({"role":"bashExecution","command":"echo hi","output":"hi\n","exitCode":0,"cancelled":false,"truncated":false})).unwrap();
        sm.append_compaction("summary text", None, 42, None, None, false, None)
            .unwrap();
        sm.append_session_info("My <name>").unwrap();
        let html = render(&sm);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>My &lt;name&gt;</title>"));
        assert!(!html.contains("<script>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("src=\"data:image/png;base64,iVBORw0KGgo=\""));
        assert!(html.contains("[image (image/png) not shown]"));
        assert!(html.contains("<details class=\"thinking\"><summary>Thinking</summary>"));
        assert!(html.contains("hmm &amp; so"));
        assert!(html.contains("&quot;command&quot;: &quot;ls &lt;/dev/null&quot;"));
        assert!(html.contains("tool-result error"));
        assert!(html.contains("529 &lt;overloaded&gt;"));
        assert!(html.contains("hidden from context"));
        assert!(html.contains("$ echo hi"));
        assert!(html.contains("summary text"));
        assert!(html.contains("<summary>System prompt</summary>"));
        assert!(html.contains("Be &lt;brief&gt;"));
        assert!(html.contains("rules (removed)"));
        assert!(html.contains("<dt>Model</dt><dd>prov/mod</dd>"));
        // Offline: nothing is loaded from elsewhere.
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert!(!html.contains("<link") && !html.contains("<script"));
    }

    #[test]
    fn export_errors_and_paths() {
        let sm = SessionManager::in_memory(Path::new("/w"));
        assert_eq!(
            export_html(&sm, None, Path::new("/tmp"))
                .unwrap_err()
                .to_string(),
            "Cannot export in-memory session to HTML"
        );
        let dir = std::env::temp_dir().join(format!("pi-rpc-export-{}", uuid::Uuid::new_v4()));
        let mut sm = SessionManager::create(Path::new("/w"), Some(&dir), None);
        sm.append_model_change("p", "m").unwrap();
        assert_eq!(
            export_html(&sm, None, &dir).unwrap_err().to_string(),
            "Nothing to export yet - start a conversation first"
        );
        sm.append_message(json!({"role":"user","content":"hi"}))
            .unwrap();
        let reported = export_html(&sm, None, &dir).unwrap();
        let stem = sm
            .session_file()
            .unwrap()
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert_eq!(reported, format!("pi-session-{stem}.html"));
        assert!(dir.join(&reported).exists());
        let explicit = dir.join("out.html");
        let reported = export_html(&sm, explicit.to_str(), Path::new("/")).unwrap();
        assert_eq!(reported, explicit.to_string_lossy());
        let html = std::fs::read_to_string(&explicit).unwrap();
        assert!(html.contains("<div class=\"text\">hi</div>"));
        let e = export_html(&sm, Some("/nonexistent-dir/x.html"), Path::new("/")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ENOENT: no such file or directory, open '/nonexistent-dir/x.html'"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A persisted session with one exchange, in a fresh temp folder.
    fn saved_session() -> (PathBuf, SessionManager) {
        let dir = std::env::temp_dir().join(format!("pi-rpc-export-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sm = SessionManager::create(&dir, Some(&dir), None);
        sm.append_message(json!({"role":"user","content":"hi","timestamp":1}))
            .unwrap();
        sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":"hello"}],"stopReason":"stop","timestamp":2}))
            .unwrap();
        assert!(sm.session_file().unwrap().exists());
        (dir, sm)
    }

    #[test]
    fn write_errors_read_as_node_fs_errors_with_the_path_as_given() {
        let (dir, sm) = saved_session();
        std::fs::create_dir(dir.join("exports")).unwrap();
        let err = |out: &str| export_html(&sm, Some(out), &dir).unwrap_err().to_string();
        // Texts as pi (Node 22 `writeFileSync`) gives them; missing folders are not created.
        assert_eq!(
            err("missing/z.html"),
            "ENOENT: no such file or directory, open 'missing/z.html'"
        );
        assert!(!dir.join("missing").exists());
        assert_eq!(
            err("exports"),
            "EISDIR: illegal operation on a directory, open 'exports'"
        );
        let abs = dir.join("gone/deep/out.html").display().to_string();
        assert_eq!(
            err(&abs),
            format!("ENOENT: no such file or directory, open '{abs}'")
        );
        let file = sm.session_file().unwrap().display().to_string();
        assert_eq!(
            err(&format!("{file}/x.html")),
            format!("ENOTDIR: not a directory, open '{file}/x.html'")
        );
        assert_eq!(
            err("a\0b.html"),
            "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received 'a\\x00b.html'"
        );
        if Path::new("/dev/full").exists() {
            // The open succeeds; the write fails, and Node names no path then.
            assert_eq!(err("/dev/full"), "ENOSPC: no space left on device, write");
        }
        assert_eq!(
            export_html(&sm, Some("exports/y.html"), &dir).unwrap(),
            "exports/y.html"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
