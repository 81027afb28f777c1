//! Reading what the binary wrote: the records of a run by kind, with the clock-dependent fields
//! zeroed, found by pattern, and the messages pi writes for the scripted server's replies.

use serde_json::{json, Value};

use super::agent::subset_match;

/// The `type` of each record, `message_update`s as `update:<event type>`.
pub fn kinds(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let t = r["type"].as_str().unwrap_or("?");
            match t {
                "message_update" => format!(
                    "update:{}",
                    r["assistantMessageEvent"]["type"].as_str().unwrap_or("?")
                ),
                "message_start" | "message_end" => {
                    format!("{t}:{}", r["message"]["role"].as_str().unwrap_or("?"))
                }
                "response" => format!("response:{}", r["command"].as_str().unwrap_or("?")),
                _ => t.to_string(),
            }
        })
        .collect()
}

/// Clock-dependent fields zeroed: numeric `timestamp`, `durationMs`, `wall_time_seconds`;
/// ISO `timestamp` strings become `<ISO>`.
pub fn norm(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("timestamp", Value::Number(_)) => json!(0),
                        ("timestamp", Value::String(_)) => json!("<ISO>"),
                        ("durationMs" | "wall_time_seconds", Value::Number(_)) => json!(0),
                        _ => norm(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        _ => v.clone(),
    }
}

/// A request body without Anthropic `cache_control` markers (placement is the adapter's
/// business, tested with the adapter).
pub fn strip_cache(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_cache).collect()),
        _ => v.clone(),
    }
}

/// The first record matching `pattern` and its index.
pub fn find(records: &[Value], pattern: Value) -> (usize, Value) {
    records
        .iter()
        .enumerate()
        .find(|(_, r)| subset_match(&pattern, r))
        .map(|(i, r)| (i, r.clone()))
        .unwrap_or_else(|| panic!("no record matching {pattern} in {records:#?}"))
}

/// Every record matching `pattern`.
pub fn find_all(records: &[Value], pattern: Value) -> Vec<Value> {
    records
        .iter()
        .filter(|r| subset_match(&pattern, r))
        .cloned()
        .collect()
}

pub fn user_msg(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
}

/// The mock's default usage (input 10, output 5) as pi reports it.
pub fn default_usage() -> Value {
    json!({"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,
           "cost":{"input":3e-05,"output":7.500000000000001e-05,"cacheRead":0,"cacheWrite":0,
                   "total":0.000105,"totalFromProvider":false},"cacheWrite1h":0})
}

/// A final assistant message as pi writes it (normalized), for a mock reply with default usage.
pub fn assistant_msg(content: Value, stop: &str, raw_stop: &str, response_n: u32) -> Value {
    json!({"role":"assistant","content":content,"api":"anthropic-messages","provider":"mock",
           "model":"mock-sonnet","usage":default_usage(),"stopReason":stop,"timestamp":0,
           "responseId":format!("msg_mock_{response_n:04}"),"rawStopReason":raw_stop,
           "durationMs":0,"thinkingLevel":"medium"})
}
