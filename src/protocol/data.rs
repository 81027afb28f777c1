//! The `data` of the responses whose shape is an object pi-rpc builds (`get_state`,
//! `get_session_stats`, `get_commands`, `get_fork_messages`, `cycle_model`, `clear_queue`).
//! Each is a `Serialize` struct whose field order is pi's key order; optional keys are left out
//! when absent, as pi leaves out `undefined` properties. Numbers that JavaScript prints
//! differently from Rust (fractions, costs) are carried as ready `Value`s.

use serde::Serialize;
use serde_json::Value;

use crate::llm::{Model, ThinkingLevel};
use crate::resources::settings::QueueMode;
use crate::resources::skills::SourceInfo;

/// `get_state`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StateData<'a> {
    pub model: &'a Model,
    pub thinking_level: ThinkingLevel,
    pub is_streaming: bool,
    pub is_compacting: bool,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    pub auto_compaction_enabled: bool,
    pub message_count: usize,
    pub pending_message_count: usize,
}

/// `get_session_stats`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionStatsData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: &'a str,
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub total_messages: u64,
    pub tokens: TokenTotals,
    /// JavaScript-printed.
    pub cost: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
}

/// `get_session_stats.tokens`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// `contextUsage`: `tokens` and `percent` are `null` after a compaction until the next reply
/// reports usage.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContextUsage {
    pub tokens: Option<u64>,
    pub context_window: u64,
    /// JavaScript-printed (`null` when `tokens` is).
    pub percent: Value,
}

/// One `get_commands` item.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandInfo<'a> {
    pub name: String,
    pub description: &'a str,
    /// `prompt` or `skill`.
    pub source: &'static str,
    pub source_info: &'a SourceInfo,
    pub path: String,
    /// The pre-1.6 `location`: `user`, `project` or `path`.
    pub location: &'static str,
}

/// `get_commands`.
#[derive(Serialize)]
pub(crate) struct CommandsData<'a> {
    pub commands: Vec<CommandInfo<'a>>,
}

/// `cycle_model` (when there is a model to cycle to).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CycleModelData<'a> {
    pub model: &'a Model,
    pub thinking_level: ThinkingLevel,
    pub is_scoped: bool,
}

/// `clear_queue`: the texts removed from each queue.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClearedQueues {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// `bash`: `{output, exitCode?, cancelled, truncated, fullOutputPath?}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BashData<'a> {
    pub output: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// A CompactionResult (`compact`'s data, `compaction_end.result`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub estimated_tokens_after: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// These shapes hold strings, numbers, booleans and `Value`s only: serializing them to a
/// `Value` cannot fail (`Null` would be the answer if it ever did).
pub(crate) fn to_value<T: Serialize>(data: &T) -> Value {
    serde_json::to_value(data).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text<T: Serialize>(v: &T) -> String {
        serde_json::to_string(&to_value(v)).unwrap()
    }

    #[test]
    fn state_keys_in_pi_order() {
        let model = Model::placeholder();
        let mut state = StateData {
            model: &model,
            thinking_level: ThinkingLevel::Off,
            is_streaming: false,
            is_compacting: true,
            steering_mode: QueueMode::All,
            follow_up_mode: QueueMode::OneAtATime,
            session_file: Some("/s.jsonl".into()),
            session_id: "id",
            session_name: Some("n".into()),
            auto_compaction_enabled: true,
            message_count: 2,
            pending_message_count: 1,
        };
        let model_text = serde_json::to_string(&model).unwrap();
        assert_eq!(
            text(&state),
            format!(
                r#"{{"model":{model_text},"thinkingLevel":"off","isStreaming":false,"isCompacting":true,"steeringMode":"all","followUpMode":"one-at-a-time","sessionFile":"/s.jsonl","sessionId":"id","sessionName":"n","autoCompactionEnabled":true,"messageCount":2,"pendingMessageCount":1}}"#
            )
        );
        state.session_file = None;
        state.session_name = None;
        let bare = text(&state);
        assert!(
            !bare.contains("sessionFile") && !bare.contains("sessionName"),
            "{bare}"
        );
    }

    #[test]
    fn session_stats_keys_in_pi_order() {
        let stats = SessionStatsData {
            session_file: None,
            session_id: "id",
            user_messages: 1,
            assistant_messages: 2,
            tool_calls: 3,
            tool_results: 4,
            total_messages: 5,
            tokens: TokenTotals {
                input: 6,
                output: 7,
                cache_read: 8,
                cache_write: 9,
                total: 30,
            },
            cost: json!(0.5),
            context_usage: Some(ContextUsage {
                tokens: None,
                context_window: 100,
                percent: Value::Null,
            }),
        };
        assert_eq!(
            text(&stats),
            r#"{"sessionId":"id","userMessages":1,"assistantMessages":2,"toolCalls":3,"toolResults":4,"totalMessages":5,"tokens":{"input":6,"output":7,"cacheRead":8,"cacheWrite":9,"total":30},"cost":0.5,"contextUsage":{"tokens":null,"contextWindow":100,"percent":null}}"#
        );
    }

    #[test]
    fn bash_and_compaction_keys_in_pi_order() {
        let bash = BashData {
            output: "x",
            exit_code: Some(1),
            cancelled: false,
            truncated: false,
            full_output_path: Some("/t".into()),
        };
        assert_eq!(
            text(&bash),
            r#"{"output":"x","exitCode":1,"cancelled":false,"truncated":false,"fullOutputPath":"/t"}"#
        );
        let result = CompactionResult {
            summary: "s".into(),
            first_kept_entry_id: "e".into(),
            tokens_before: 10,
            estimated_tokens_after: 2,
            usage: Some(json!({})),
            details: Some(json!({})),
        };
        assert_eq!(
            text(&result),
            r#"{"summary":"s","firstKeptEntryId":"e","tokensBefore":10,"estimatedTokensAfter":2,"usage":{},"details":{}}"#
        );
    }
}
