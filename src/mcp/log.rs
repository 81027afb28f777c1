//! Server log messages (`notifications/message`, `mcp.md` §3.5) go to `<agentDir>/mcp.log` as
//! `<ISO time> [<server>] <level>[ <logger>:] <data>` (data as JSON unless a string,
//! continuation lines indented by 4), rotated to `mcp.log.1` past 5 MB. Never to the client.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

const ROTATE_BYTES: u64 = 5 * 1024 * 1024;

/// One log line for `params` of server `server` (pi's `formatMcpLogMessage`).
pub(crate) fn format_line(time: &str, server: &str, params: &Value) -> String {
    let (level, logger, data) = match params {
        Value::Object(m) => (
            m.get("level").and_then(Value::as_str).unwrap_or("info"),
            m.get("logger")
                .and_then(Value::as_str)
                .filter(|l| !l.is_empty())
                .map(|l| format!(" {l}:"))
                .unwrap_or_default(),
            m.get("data"),
        ),
        other => ("info", String::new(), Some(other)),
    };
    let text = match data {
        Some(Value::String(s)) => s.clone(),
        Some(v) => crate::js::json::to_js_string(v).unwrap_or_default(),
        None => "undefined".to_string(),
    };
    let text = text.replace("\r\n", "\n").replace('\n', "\n    ");
    format!("{time} [{server}] {level}{logger} {text}\n")
}

/// Appends a server's log message; failures are ignored (a log must not break a session).
pub(crate) fn write(agent_dir: &Path, server: &str, params: &Value) {
    let _ = std::fs::create_dir_all(agent_dir);
    let path = agent_dir.join("mcp.log");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let _ = std::fs::rename(&path, agent_dir.join("mcp.log.1"));
    }
    let line = format_line(&crate::util::now_iso(), server, params);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_name_server_level_logger_and_indent_continuations() {
        assert_eq!(
            format_line(
                "T",
                "fake",
                &json!({"level": "warning", "logger": "db", "data": "a\nb"})
            ),
            "T [fake] warning db: a\n    b\n"
        );
        assert_eq!(
            format_line("T", "fake", &json!({"level": "info", "data": {"k": 1}})),
            "T [fake] info {\"k\":1}\n"
        );
        assert_eq!(
            format_line(
                "T",
                "f",
                &json!({"level": "debug", "logger": "", "data": "a\r\nb"})
            ),
            "T [f] debug a\n    b\n"
        );
        assert_eq!(
            format_line("T", "f", &json!({"level": "notice"})),
            "T [f] notice undefined\n"
        );
        assert_eq!(format_line("T", "f", &json!("plain")), "T [f] info plain\n");
    }
}
