//! What a summarization request is made of: the conversation as plain text (so the model reads
//! it instead of continuing it) and the files the summarized part read and modified. The text
//! formats here are compared verbatim by conformance (`agent-loop.md` §7.4).

use std::collections::BTreeSet;

use serde_json::Value;

use super::estimate::content_text;
use crate::js::json::js_stringify;
use crate::js::utf16;
use crate::llm::convert::{
    bash_execution_text, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};
use crate::llm::Role;

/// Longest tool result text kept in a serialized conversation (UTF-16 code units).
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// A tool result text cut to `max` units (pi's `sliceHead`: a surrogate pair at the limit is
/// left out whole) plus a note of how much was dropped.
fn truncate_for_summary(text: &str, max: usize) -> String {
    let len = utf16::len(text);
    if len <= max {
        return text.to_string();
    }
    format!(
        "{}\n\n[... {} more characters truncated]",
        utf16::prefix(text, max),
        len - max
    )
}

/// The user-message text an agent message becomes for the LLM (pi's `convertToLlm` then
/// `contentText(content, "")`); `None` for messages that are not user-like.
fn user_like_text(msg: &Value) -> Option<String> {
    let m = msg.as_object()?;
    match Role::of(msg)? {
        Role::User | Role::Custom => Some(content_text(m.get("content"), "")),
        Role::BashExecution => {
            if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                None
            } else {
                Some(bash_execution_text(m))
            }
        }
        Role::CompactionSummary => Some(format!(
            "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
            m.get("summary").and_then(Value::as_str).unwrap_or("")
        )),
        Role::BranchSummary => Some(format!(
            "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
            m.get("summary").and_then(Value::as_str).unwrap_or("")
        )),
        Role::System | Role::Assistant | Role::ToolResult | Role::Other(_) => None,
    }
}

/// pi's `serializeConversation(convertToLlm(messages))`: `[User]: …`, `[Assistant]: …`,
/// `[Assistant tool calls]: name(k=<json>, …); …`, `[Tool result]: …` (cut at 2000 characters),
/// joined by blank lines; thinking is left out.
pub fn serialize_conversation(messages: &[Value]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for msg in messages {
        match Role::of(msg) {
            Some(Role::Assistant) => {
                let blocks = msg
                    .get("content")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let mut calls = Vec::new();
                for b in blocks {
                    if b.get("type").and_then(Value::as_str) != Some("toolCall") {
                        continue;
                    }
                    let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                    let args = match b.get("arguments") {
                        Some(Value::Object(a)) => a
                            .iter()
                            .map(|(k, v)| format!("{k}={}", js_stringify(v)))
                            .collect::<Vec<_>>()
                            .join(", "),
                        _ => String::new(),
                    };
                    calls.push(format!("{name}({args})"));
                }
                if blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                {
                    parts.push(format!(
                        "[Assistant]: {}",
                        content_text(msg.get("content"), "\n")
                    ));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Some(Role::ToolResult) => {
                let text = content_text(msg.get("content"), "");
                if !text.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)
                    ));
                }
            }
            _ => {
                if let Some(text) = user_like_text(msg) {
                    if !text.is_empty() {
                        parts.push(format!("[User]: {text}"));
                    }
                }
            }
        }
    }
    parts.join("\n\n")
}

/// Files touched by the summarized messages: `read` calls, and `write` / `edit` calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileOps {
    pub read: BTreeSet<String>,
    pub written: BTreeSet<String>,
    pub edited: BTreeSet<String>,
}

impl FileOps {
    fn add(&mut self, tool: &str, args: Option<&Value>) {
        let Some(path) = args
            .and_then(|a| a.get("path"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            return;
        };
        let set = match tool {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_string());
    }

    /// The tool calls of an assistant message, or the nested calls recorded on a tool result.
    pub fn add_message(&mut self, msg: &Value) {
        match Role::of(msg) {
            Some(Role::Assistant) => {
                for b in msg
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if b.get("type").and_then(Value::as_str) != Some("toolCall") {
                        continue;
                    }
                    if let Some(name) = b.get("name").and_then(Value::as_str) {
                        self.add(name, b.get("arguments"));
                    }
                }
            }
            Some(Role::ToolResult) => {
                for call in msg
                    .get("nestedCalls")
                    .and_then(|n| n.get("calls"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(name) = call.get("name").and_then(Value::as_str) {
                        self.add(name, call.get("arguments"));
                    }
                }
            }
            _ => {}
        }
    }

    /// A previous pi-generated compaction's `details` (`readFiles` → read, `modifiedFiles` →
    /// edited).
    pub fn add_details(&mut self, details: &Value) {
        for (key, set) in [
            ("readFiles", &mut self.read),
            ("modifiedFiles", &mut self.edited),
        ] {
            for f in details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(s) = f.as_str() {
                    set.insert(s.to_string());
                }
            }
        }
    }

    /// `(readFiles, modifiedFiles)`: files only read, and files written or edited; both sorted
    /// as JavaScript sorts strings (by UTF-16 code units).
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: BTreeSet<&String> = self.edited.iter().chain(&self.written).collect();
        let mut read: Vec<String> = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        let mut modified: Vec<String> = modified.into_iter().cloned().collect();
        read.sort_by(|a, b| utf16::cmp(a, b));
        modified.sort_by(|a, b| utf16::cmp(a, b));
        (read, modified)
    }
}

/// The `<read-files>` / `<modified-files>` blocks appended to a summary (each only when it has
/// files; nothing at all when both are empty).
pub fn format_file_operations(read: &[String], modified: &[String]) -> String {
    let mut sections = Vec::new();
    if !read.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
    }
    if !modified.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            modified.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conversation_text_matches_pis_format() {
        let long = "x".repeat(2005);
        let msgs = vec![
            json!({"role":"system","content":"ignored","sections":{}}),
            json!({"role":"user","content":[{"type":"text","text":"Fix "},{"type":"image","data":"..","mimeType":"image/png"},{"type":"text","text":"it"}]}),
            json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"hidden"},
                {"type":"text","text":"Looking."},
                {"type":"text","text":"Now."},
                {"type":"toolCall","id":"t1","name":"read","arguments":{"path":"src/a.rs","limit":10.0}},
                {"type":"toolCall","id":"t2","name":"bash","arguments":{"command":"ls \"x\""}}]}),
            json!({"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":long}],"isError":false}),
            json!({"role":"toolResult","toolCallId":"t2","toolName":"bash","content":[],"isError":false}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"t3","name":"ls","arguments":{}}]}),
            json!({"role":"bashExecution","command":"pwd","output":"/x","exitCode":0,"cancelled":false,"truncated":false}),
            json!({"role":"bashExecution","command":"secret","output":"","excludeFromContext":true}),
            json!({"role":"compactionSummary","summary":"S","tokensBefore":1}),
            json!({"role":"custom","customType":"n","content":"note","display":true}),
        ];
        let text = serialize_conversation(&msgs);
        let expected = [
            "[User]: Fix it".to_string(),
            "[Assistant]: Looking.\nNow.".to_string(),
            "[Assistant tool calls]: read(path=\"src/a.rs\", limit=10); bash(command=\"ls \\\"x\\\"\")".to_string(),
            format!("[Tool result]: {}\n\n[... 5 more characters truncated]", "x".repeat(2000)),
            "[Assistant tool calls]: ls()".to_string(),
            "[User]: Ran `pwd`\n```\n/x\n```".to_string(),
            "[User]: The conversation history before this point was compacted into the following summary:\n\n<summary>\nS\n</summary>".to_string(),
            "[User]: note".to_string(),
        ]
        .join("\n\n");
        assert_eq!(text, expected);
    }

    #[test]
    fn truncation_counts_utf16_and_keeps_pairs_whole() {
        let s = format!("{}😀", "a".repeat(1999));
        // 1999 + 2 units = 2001 > 2000: the emoji would be split, so it is left out whole.
        assert_eq!(
            truncate_for_summary(&s, 2000),
            format!("{}\n\n[... 1 more characters truncated]", "a".repeat(1999))
        );
    }

    #[test]
    fn file_ops_collect_reads_and_modifications() {
        let mut ops = FileOps::default();
        ops.add_message(&json!({"role":"assistant","content":[
            {"type":"toolCall","id":"1","name":"read","arguments":{"path":"b.rs"}},
            {"type":"toolCall","id":"2","name":"read","arguments":{"path":"a.rs"}},
            {"type":"toolCall","id":"3","name":"edit","arguments":{"path":"a.rs","edits":[]}},
            {"type":"toolCall","id":"4","name":"write","arguments":{"path":"c.rs","content":""}},
            {"type":"toolCall","id":"5","name":"bash","arguments":{"path":"ignored"}},
            {"type":"toolCall","id":"6","name":"read","arguments":{}}]}));
        ops.add_message(&json!({"role":"toolResult","nestedCalls":{"calls":[
            {"name":"read","arguments":{"path":"n.rs"}}]}}));
        ops.add_details(&json!({"readFiles":["old.rs"],"modifiedFiles":["mod.rs"]}));
        let (read, modified) = ops.lists();
        assert_eq!(read, ["b.rs", "n.rs", "old.rs"]);
        assert_eq!(modified, ["a.rs", "c.rs", "mod.rs"]);
        assert_eq!(
            format_file_operations(&read, &modified),
            "\n\n<read-files>\nb.rs\nn.rs\nold.rs\n</read-files>\n\n<modified-files>\na.rs\nc.rs\nmod.rs\n</modified-files>"
        );
        assert_eq!(format_file_operations(&[], &[]), "");
        assert_eq!(
            format_file_operations(&[], &modified[..1]),
            "\n\n<modified-files>\na.rs\n</modified-files>"
        );
    }
}
