//! Session events written to stdout (`rpc-protocol.md` §5–7). Field order on the wire is the
//! order of the fields here. Messages travel as JSON values already in their wire shape.

use serde::Serialize;
use serde_json::Value;

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    AgentStart,
    AgentEnd {
        messages: Vec<Value>,
        #[serde(rename = "willRetry")]
        will_retry: bool,
    },
    AgentSettled {
        aborted: bool,
    },
    TurnStart,
    TurnEnd {
        message: Value,
        #[serde(rename = "toolResults")]
        tool_results: Vec<Value>,
    },
    MessageStart {
        message: Value,
    },
    /// Delta-only form: cumulative `usage` plus the assistant event without `partial` (§7).
    /// `usage` comes pre-serialized: it rarely changes between deltas, so the stream reuses the
    /// text instead of rebuilding a JSON object per delta.
    MessageUpdate {
        usage: Box<serde_json::value::RawValue>,
        #[serde(rename = "assistantMessageEvent")]
        assistant_message_event: Value,
    },
    MessageEnd {
        message: Value,
    },
    ToolExecutionStart {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        args: Value,
        #[serde(rename = "partialResult")]
        partial_result: Value,
    },
    ToolExecutionEnd {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        result: Value,
        #[serde(rename = "isError")]
        is_error: bool,
        #[serde(rename = "durationMs", skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    QueueUpdate {
        steering: Vec<String>,
        #[serde(rename = "followUp")]
        follow_up: Vec<String>,
    },
    CompactionStart {
        reason: CompactionReason,
    },
    CompactionEnd {
        reason: CompactionReason,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        aborted: bool,
        #[serde(rename = "willRetry")]
        will_retry: bool,
        #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(rename = "finalError", skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    SummarizationRetryScheduled {
        attempt: u32,
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    SummarizationRetryAttemptStart {
        source: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<CompactionReason>,
    },
    SummarizationRetryFinished,
    EntryAppended {
        entry: Value,
    },
    SessionInfoChanged {
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    ThinkingLevelChanged {
        level: crate::llm::ThinkingLevel,
    },
    BashExecutionUpdate {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<Value>,
        delta: String,
    },
    ExtensionError {
        #[serde(rename = "extensionPath")]
        extension_path: String,
        event: String,
        error: String,
    },
}

/// Why a compaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let e = Event::ThinkingLevelChanged {
            level: crate::llm::ThinkingLevel::High,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"thinking_level_changed","level":"high"}"#
        );
        let e = Event::QueueUpdate {
            steering: vec!["a".into()],
            follow_up: vec![],
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"queue_update","steering":["a"],"followUp":[]}"#
        );
        let e = Event::AgentEnd {
            messages: vec![json!({"role": "user"})],
            will_retry: false,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"agent_end","messages":[{"role":"user"}],"willRetry":false}"#
        );
        let e = Event::CompactionEnd {
            reason: CompactionReason::Manual,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some("Compaction failed: x".into()),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"compaction_end","reason":"manual","aborted":false,"willRetry":false,"errorMessage":"Compaction failed: x"}"#
        );
        assert_eq!(
            serde_json::to_string(&Event::AgentStart).unwrap(),
            r#"{"type":"agent_start"}"#
        );
    }
}
