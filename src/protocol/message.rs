//! The messages pi-rpc itself creates and records in the context and the session: a user
//! message (a prompt, a delivered steering or follow-up message), a tool result, an RPC `bash`
//! execution. Each is a `Serialize` struct whose field order is pi's key order; the builders
//! return the `Value` the context and the session store. (Assistant messages are
//! `llm::types::AssistantMessage`; messages read back from a session file are kept as they were
//! written.)

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::data::to_value;
use super::ImageContent;

/// One block of a user message's content.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum UserBlock<'a> {
    Text {
        text: &'a str,
    },
    Image {
        data: &'a str,
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
    },
}

#[derive(Serialize)]
#[serde(tag = "role", rename = "user")]
struct UserMessage<'a> {
    content: Vec<UserBlock<'a>>,
    timestamp: u64,
}

/// `{"role":"user","content":[{"type":"text","text"}, ...images],"timestamp"}`.
pub(crate) fn user_message(text: &str, images: &[ImageContent], timestamp: u64) -> Value {
    let mut content = Vec::with_capacity(1 + images.len());
    content.push(UserBlock::Text { text });
    content.extend(images.iter().map(|i| UserBlock::Image {
        data: &i.data,
        mime_type: &i.mime_type,
    }));
    to_value(&UserMessage { content, timestamp })
}

/// A tool call's result message (`toolResult`).
#[derive(Serialize)]
#[serde(tag = "role", rename = "toolResult", rename_all = "camelCase")]
pub(crate) struct ToolResultMessage<'a> {
    pub tool_call_id: &'a str,
    pub tool_name: &'a str,
    pub content: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    pub timestamp: u64,
}

impl ToolResultMessage<'_> {
    pub(crate) fn to_value(&self) -> Value {
        to_value(self)
    }
}

/// An RPC `bash` command's record in the context (`bashExecution`).
#[derive(Serialize)]
#[serde(tag = "role", rename = "bashExecution", rename_all = "camelCase")]
pub(crate) struct BashExecutionMessage<'a> {
    pub command: &'a str,
    pub output: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "lossy_path")]
    pub full_output_path: Option<&'a Path>,
    pub timestamp: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exclude_from_context: bool,
}

fn lossy_path<S: serde::Serializer>(p: &Option<&Path>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_str(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

impl BashExecutionMessage<'_> {
    pub(crate) fn to_value(&self) -> Value {
        to_value(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn user_message_keys_in_pi_order() {
        let img = ImageContent {
            kind: "image".into(),
            data: "AAAA".into(),
            mime_type: "image/png".into(),
        };
        assert_eq!(
            text(&user_message("hi", &[img], 7)),
            r#"{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":7}"#
        );
    }

    #[test]
    fn tool_result_keys_in_pi_order() {
        let full = ToolResultMessage {
            tool_call_id: "c1",
            tool_name: "read",
            content: json!([]),
            details: Some(json!({"a": 1})),
            is_error: false,
            duration_ms: Some(3),
            timestamp: 9,
        };
        assert_eq!(
            text(&full.to_value()),
            r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[],"details":{"a":1},"isError":false,"durationMs":3,"timestamp":9}"#
        );
        let bare = ToolResultMessage {
            details: None,
            duration_ms: None,
            ..full
        };
        assert_eq!(
            text(&bare.to_value()),
            r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[],"isError":false,"timestamp":9}"#
        );
    }

    #[test]
    fn bash_execution_keys_in_pi_order() {
        let m = BashExecutionMessage {
            command: "ls",
            output: "a\n",
            exit_code: Some(0),
            cancelled: false,
            truncated: true,
            full_output_path: Some(Path::new("/tmp/x.log")),
            timestamp: 5,
            exclude_from_context: true,
        };
        assert_eq!(
            text(&m.to_value()),
            r#"{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/x.log","timestamp":5,"excludeFromContext":true}"#
        );
        let bare = BashExecutionMessage {
            exit_code: None,
            full_output_path: None,
            exclude_from_context: false,
            ..m
        };
        assert_eq!(
            text(&bare.to_value()),
            r#"{"role":"bashExecution","command":"ls","output":"a\n","cancelled":false,"truncated":true,"timestamp":5}"#
        );
    }
}
