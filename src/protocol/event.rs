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

    fn wire(e: &Event) -> String {
        crate::protocol::framing::encode(e)
    }

    /// One of each variant, with every optional field present and absent: the exact text on the
    /// wire (key order included).
    #[test]
    fn every_variant_on_the_wire() {
        let usage = serde_json::value::RawValue::from_string(r#"{"input":1}"#.into()).unwrap();
        let cases: Vec<(Event, &str)> = vec![
            (Event::AgentStart, r#"{"type":"agent_start"}"#),
            (
                Event::AgentEnd {
                    messages: vec![json!({"role": "user"})],
                    will_retry: false,
                },
                r#"{"type":"agent_end","messages":[{"role":"user"}],"willRetry":false}"#,
            ),
            (
                Event::AgentSettled { aborted: true },
                r#"{"type":"agent_settled","aborted":true}"#,
            ),
            (Event::TurnStart, r#"{"type":"turn_start"}"#),
            (
                Event::TurnEnd {
                    message: json!({"role": "assistant"}),
                    tool_results: vec![json!(1)],
                },
                r#"{"type":"turn_end","message":{"role":"assistant"},"toolResults":[1]}"#,
            ),
            (
                Event::MessageStart { message: json!({}) },
                r#"{"type":"message_start","message":{}}"#,
            ),
            (
                Event::MessageUpdate {
                    usage,
                    assistant_message_event: json!({"type": "text_delta"}),
                },
                r#"{"type":"message_update","usage":{"input":1},"assistantMessageEvent":{"type":"text_delta"}}"#,
            ),
            (
                Event::MessageEnd { message: json!(null) },
                r#"{"type":"message_end","message":null}"#,
            ),
            (
                Event::ToolExecutionStart {
                    tool_call_id: "t".into(),
                    tool_name: "bash".into(),
                    args: json!({"command": "ls"}),
                },
                r#"{"type":"tool_execution_start","toolCallId":"t","toolName":"bash","args":{"command":"ls"}}"#,
            ),
            (
                Event::ToolExecutionUpdate {
                    tool_call_id: "t".into(),
                    tool_name: "bash".into(),
                    args: json!({}),
                    partial_result: json!({"content": []}),
                },
                r#"{"type":"tool_execution_update","toolCallId":"t","toolName":"bash","args":{},"partialResult":{"content":[]}}"#,
            ),
            (
                Event::ToolExecutionEnd {
                    tool_call_id: "t".into(),
                    tool_name: "bash".into(),
                    result: json!({}),
                    is_error: false,
                    duration_ms: Some(12),
                },
                r#"{"type":"tool_execution_end","toolCallId":"t","toolName":"bash","result":{},"isError":false,"durationMs":12}"#,
            ),
            (
                Event::ToolExecutionEnd {
                    tool_call_id: "t".into(),
                    tool_name: "bash".into(),
                    result: json!({}),
                    is_error: true,
                    duration_ms: None,
                },
                r#"{"type":"tool_execution_end","toolCallId":"t","toolName":"bash","result":{},"isError":true}"#,
            ),
            (
                Event::QueueUpdate {
                    steering: vec!["a".into()],
                    follow_up: vec![],
                },
                r#"{"type":"queue_update","steering":["a"],"followUp":[]}"#,
            ),
            (
                Event::CompactionStart {
                    reason: CompactionReason::Threshold,
                },
                r#"{"type":"compaction_start","reason":"threshold"}"#,
            ),
            (
                Event::CompactionEnd {
                    reason: CompactionReason::Manual,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some("Compaction failed: x".into()),
                },
                r#"{"type":"compaction_end","reason":"manual","aborted":false,"willRetry":false,"errorMessage":"Compaction failed: x"}"#,
            ),
            (
                Event::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: Some(json!({"summary": "s"})),
                    aborted: false,
                    will_retry: true,
                    error_message: None,
                },
                r#"{"type":"compaction_end","reason":"overflow","result":{"summary":"s"},"aborted":false,"willRetry":true}"#,
            ),
            (
                Event::AutoRetryStart {
                    attempt: 1,
                    max_attempts: 3,
                    delay_ms: 2000,
                    error_message: "e".into(),
                },
                r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"e"}"#,
            ),
            (
                Event::AutoRetryEnd {
                    success: false,
                    attempt: 3,
                    final_error: Some("f".into()),
                },
                r#"{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"f"}"#,
            ),
            (
                Event::AutoRetryEnd {
                    success: true,
                    attempt: 2,
                    final_error: None,
                },
                r#"{"type":"auto_retry_end","success":true,"attempt":2}"#,
            ),
            (
                Event::SummarizationRetryScheduled {
                    attempt: 1,
                    max_attempts: 3,
                    delay_ms: 500,
                    error_message: "e".into(),
                },
                r#"{"type":"summarization_retry_scheduled","attempt":1,"maxAttempts":3,"delayMs":500,"errorMessage":"e"}"#,
            ),
            (
                Event::SummarizationRetryAttemptStart {
                    source: "compaction".into(),
                    reason: Some(CompactionReason::Manual),
                },
                r#"{"type":"summarization_retry_attempt_start","source":"compaction","reason":"manual"}"#,
            ),
            (
                Event::SummarizationRetryAttemptStart {
                    source: "branch_summary".into(),
                    reason: None,
                },
                r#"{"type":"summarization_retry_attempt_start","source":"branch_summary"}"#,
            ),
            (
                Event::SummarizationRetryFinished,
                r#"{"type":"summarization_retry_finished"}"#,
            ),
            (
                Event::EntryAppended {
                    entry: json!({"type": "label"}),
                },
                r#"{"type":"entry_appended","entry":{"type":"label"}}"#,
            ),
            (
                Event::SessionInfoChanged {
                    name: Some("n".into()),
                },
                r#"{"type":"session_info_changed","name":"n"}"#,
            ),
            (
                Event::SessionInfoChanged { name: None },
                r#"{"type":"session_info_changed"}"#,
            ),
            (
                Event::ThinkingLevelChanged {
                    level: crate::llm::ThinkingLevel::High,
                },
                r#"{"type":"thinking_level_changed","level":"high"}"#,
            ),
            (
                Event::BashExecutionUpdate {
                    id: Some(json!(7)),
                    delta: "out".into(),
                },
                r#"{"type":"bash_execution_update","id":7,"delta":"out"}"#,
            ),
            (
                Event::BashExecutionUpdate {
                    id: None,
                    delta: "".into(),
                },
                r#"{"type":"bash_execution_update","delta":""}"#,
            ),
            (
                Event::ExtensionError {
                    extension_path: "/x.ts".into(),
                    event: "tool_call".into(),
                    error: "boom".into(),
                },
                r#"{"type":"extension_error","extensionPath":"/x.ts","event":"tool_call","error":"boom"}"#,
            ),
        ];
        for (event, expected) in &cases {
            assert_eq!(wire(event), *expected);
            assert_eq!(serde_json::to_string(event).unwrap(), *expected);
        }
    }
}
