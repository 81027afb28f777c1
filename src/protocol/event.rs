//! Session events written to stdout (`rpc-protocol.md` §5–7). The `type` tag is the variant's
//! name in snake_case, field names are camelCase, and field order on the wire is the order of the
//! fields here. Messages travel as JSON values already in their wire shape.

use serde::Serialize;
use serde_json::Value;

#[derive(Clone, Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    AgentStart,
    AgentEnd {
        messages: Vec<Value>,
        will_retry: bool,
    },
    AgentSettled {
        aborted: bool,
    },
    TurnStart,
    TurnEnd {
        message: Value,
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
        assistant_message_event: Value,
    },
    MessageEnd {
        message: Value,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: Value,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: Value,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    QueueUpdate {
        steering: Vec<String>,
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
        will_retry: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    SummarizationRetryScheduled {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
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
        extension_path: String,
        event: String,
        error: String,
    },
}

impl Event {
    /// The record's `type` (the name extensions subscribe to).
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::AgentStart => "agent_start",
            Event::AgentEnd { .. } => "agent_end",
            Event::AgentSettled { .. } => "agent_settled",
            Event::TurnStart => "turn_start",
            Event::TurnEnd { .. } => "turn_end",
            Event::MessageStart { .. } => "message_start",
            Event::MessageUpdate { .. } => "message_update",
            Event::MessageEnd { .. } => "message_end",
            Event::ToolExecutionStart { .. } => "tool_execution_start",
            Event::ToolExecutionUpdate { .. } => "tool_execution_update",
            Event::ToolExecutionEnd { .. } => "tool_execution_end",
            Event::QueueUpdate { .. } => "queue_update",
            Event::CompactionStart { .. } => "compaction_start",
            Event::CompactionEnd { .. } => "compaction_end",
            Event::AutoRetryStart { .. } => "auto_retry_start",
            Event::AutoRetryEnd { .. } => "auto_retry_end",
            Event::SummarizationRetryScheduled { .. } => "summarization_retry_scheduled",
            Event::SummarizationRetryAttemptStart { .. } => "summarization_retry_attempt_start",
            Event::SummarizationRetryFinished => "summarization_retry_finished",
            Event::EntryAppended { .. } => "entry_appended",
            Event::SessionInfoChanged { .. } => "session_info_changed",
            Event::ThinkingLevelChanged { .. } => "thinking_level_changed",
            Event::BashExecutionUpdate { .. } => "bash_execution_update",
            Event::ExtensionError { .. } => "extension_error",
        }
    }

    /// The line [`crate::protocol::framing::encode`] writes for an [`Event::MessageUpdate`] with
    /// this `usage` text and the `assistantMessageEvent` that `write_event` appends as JSON,
    /// built directly: the stream sends one per delta.
    pub fn message_update_line(usage: &str, write_event: impl FnOnce(&mut String)) -> String {
        const HEAD: &str = "{\"type\":\"message_update\",\"usage\":";
        const MID: &str = ",\"assistantMessageEvent\":";
        let mut line = String::with_capacity(HEAD.len() + usage.len() + MID.len() + 64);
        line.push_str(HEAD);
        line.push_str(usage);
        line.push_str(MID);
        write_event(&mut line);
        line.push('}');
        line
    }
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

    #[test]
    fn message_update_line_is_the_encoded_event() {
        let usage = r#"{"input":12,"cost":{"input":0.000036,"total":0.0000975}}"#;
        let event = json!({"type":"text_delta","contentIndex":0,"delta":"a\"\n\u{2028}ü"});
        let line = Event::message_update_line(usage, |out| {
            out.push_str(&crate::js::json::js_stringify(&event))
        });
        let e = Event::MessageUpdate {
            usage: serde_json::value::RawValue::from_string(usage.into()).unwrap(),
            assistant_message_event: event,
        };
        assert_eq!(line, wire(&e));
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
                Event::MessageEnd {
                    message: json!(null),
                },
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
        let mut seen = [false; VARIANTS];
        for (event, expected) in &cases {
            assert_eq!(wire(event), *expected);
            assert_eq!(serde_json::to_string(event).unwrap(), *expected);
            seen[variant(event)] = true;
        }
        assert!(seen.iter().all(|s| *s), "a variant has no case: {seen:?}");
    }

    const VARIANTS: usize = 24;

    /// The variant's position (exhaustive, so a new variant needs a case above).
    fn variant(e: &Event) -> usize {
        match e {
            Event::AgentStart => 0,
            Event::AgentEnd { .. } => 1,
            Event::AgentSettled { .. } => 2,
            Event::TurnStart => 3,
            Event::TurnEnd { .. } => 4,
            Event::MessageStart { .. } => 5,
            Event::MessageUpdate { .. } => 6,
            Event::MessageEnd { .. } => 7,
            Event::ToolExecutionStart { .. } => 8,
            Event::ToolExecutionUpdate { .. } => 9,
            Event::ToolExecutionEnd { .. } => 10,
            Event::QueueUpdate { .. } => 11,
            Event::CompactionStart { .. } => 12,
            Event::CompactionEnd { .. } => 13,
            Event::AutoRetryStart { .. } => 14,
            Event::AutoRetryEnd { .. } => 15,
            Event::SummarizationRetryScheduled { .. } => 16,
            Event::SummarizationRetryAttemptStart { .. } => 17,
            Event::SummarizationRetryFinished => 18,
            Event::EntryAppended { .. } => 19,
            Event::SessionInfoChanged { .. } => 20,
            Event::ThinkingLevelChanged { .. } => 21,
            Event::BashExecutionUpdate { .. } => 22,
            Event::ExtensionError { .. } => 23,
        }
    }
}
