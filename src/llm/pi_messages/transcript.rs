//! The transcript pi-messages sends (`context.messages`): the agent's messages after pi's
//! `convertToLlm`, JSON as stored, and pi's forced-prompt projection of it.

use serde_json::Value;

use super::super::convert::{
    bash_execution_text, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};
use super::super::role::Role;

fn str_field<'a>(m: &'a serde_json::Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn is_system(v: &Value) -> bool {
    Role::of(v) == Some(Role::System)
}

/// pi's `convertToLlm` on the JSON transcript (what `pi-messages` sends verbatim): system,
/// user, assistant and toolResult messages as stored; `bashExecution` (unless excluded from
/// the context), `custom`, `branchSummary` and `compactionSummary` as user messages
/// `{role, content, timestamp}`; unknown roles dropped.
pub fn llm_transcript(messages: &[Value]) -> Vec<Value> {
    let user = |content: Value, m: &serde_json::Map<String, Value>| {
        let mut out = serde_json::Map::new();
        out.insert("role".into(), Value::from("user"));
        out.insert("content".into(), content);
        if let Some(ts) = m.get("timestamp") {
            out.insert("timestamp".into(), ts.clone());
        }
        Value::Object(out)
    };
    let text = |t: String| serde_json::json!([{"type": "text", "text": t}]);
    messages
        .iter()
        .filter_map(|v| {
            let m = v.as_object()?;
            match Role::of(v)? {
                Role::System | Role::User | Role::Assistant | Role::ToolResult => Some(v.clone()),
                Role::BashExecution => {
                    if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                        return None;
                    }
                    Some(user(text(bash_execution_text(m)), m))
                }
                Role::Custom => {
                    let content = match m.get("content") {
                        Some(Value::String(s)) => text(s.clone()),
                        Some(c) => c.clone(),
                        None => Value::Null,
                    };
                    Some(user(content, m))
                }
                Role::CompactionSummary => {
                    let summary = str_field(m, "summary").unwrap_or_default();
                    let t =
                        format!("{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}");
                    Some(user(text(t), m))
                }
                Role::BranchSummary => {
                    let summary = str_field(m, "summary").unwrap_or_default();
                    let t = format!("{BRANCH_SUMMARY_PREFIX}{summary}{BRANCH_SUMMARY_SUFFIX}");
                    Some(user(text(t), m))
                }
                Role::Other(_) => None,
            }
        })
        .collect()
}

/// pi's forced-prompt projection (a `before_agent_start` handler returned `systemPrompt`) on a
/// JSON transcript: the system messages collapse into one leading head
/// `{role, content: <prompt>, toolsAdded?: <current tools>, timestamp}` (the first system
/// message's timestamp, else now); the other messages stay.
pub fn force_system_prompt(transcript: Vec<Value>, prompt: &str, now: u64) -> Vec<Value> {
    let mut tools: Vec<Value> = Vec::new();
    let mut timestamp: Option<Value> = None;
    for msg in transcript.iter().filter(|m| is_system(m)) {
        if timestamp.is_none() {
            timestamp = msg.get("timestamp").cloned();
        }
        let name_of = |t: &Value| t.get("name").and_then(Value::as_str).map(str::to_owned);
        if let Some(Value::Array(removed)) = msg.get("toolsRemoved") {
            for r in removed {
                let name = name_of(r);
                tools.retain(|t| name_of(t) != name);
            }
        }
        if let Some(Value::Array(added)) = msg.get("toolsAdded") {
            for a in added {
                let name = name_of(a);
                match tools.iter_mut().find(|t| name_of(t) == name) {
                    Some(slot) => *slot = a.clone(),
                    None => tools.push(a.clone()),
                }
            }
        }
    }
    let mut head = serde_json::Map::new();
    head.insert("role".into(), Value::from("system"));
    head.insert("content".into(), Value::from(prompt));
    if !tools.is_empty() {
        head.insert("toolsAdded".into(), Value::Array(tools));
    }
    head.insert(
        "timestamp".into(),
        timestamp.unwrap_or_else(|| Value::from(now)),
    );
    let mut out = vec![Value::Object(head)];
    out.extend(transcript.into_iter().filter(|m| !is_system(m)));
    out
}

/// `images.blockImages` on a JSON transcript (pi's `convertToLlm` wrapper in `sdk.js`): in user
/// and tool-result messages every image becomes a `note` text block, and a note right after a
/// note is dropped.
pub fn block_images(transcript: &mut [Value], note: &str) {
    let is_note = |b: &Value| {
        b.get("type").and_then(Value::as_str) == Some("text")
            && b.get("text").and_then(Value::as_str) == Some(note)
    };
    for msg in transcript.iter_mut() {
        if !matches!(Role::of(msg), Some(Role::User | Role::ToolResult)) {
            continue;
        }
        let Some(Value::Array(content)) = msg.get_mut("content") else {
            continue;
        };
        let image = |b: &Value| b.get("type").and_then(Value::as_str) == Some("image");
        if !content.iter().any(image) {
            continue;
        }
        let mapped: Vec<Value> = content
            .iter()
            .map(|b| {
                if image(b) {
                    serde_json::json!({"type": "text", "text": note})
                } else {
                    b.clone()
                }
            })
            .collect();
        let mut out: Vec<Value> = Vec::with_capacity(mapped.len());
        for (i, b) in mapped.iter().enumerate() {
            if i > 0 && is_note(b) && is_note(&mapped[i - 1]) {
                continue;
            }
            out.push(b.clone());
        }
        *content = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn transcript() -> Vec<Value> {
        vec![
            json!({"role": "system", "content": "", "sections": {"a": "A"}, "timestamp": 5,
                "toolsAdded": [{"name": "read", "parameters": {}}, {"name": "bash", "parameters": {}}]}),
            json!({"role": "user", "content": "hi", "timestamp": 6}),
            json!({"role": "bashExecution", "command": "ls", "output": "", "exitCode": 1,
                "timestamp": 7}),
            json!({"role": "bashExecution", "command": "x", "output": "y",
                "excludeFromContext": true, "timestamp": 8}),
            json!({"role": "custom", "customType": "note", "content": "remember",
                "display": true, "timestamp": 9}),
            json!({"role": "compactionSummary", "summary": "S", "tokensBefore": 5,
                "timestamp": 10}),
            json!({"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 11}),
            json!({"role": "system", "content": "", "timestamp": 12,
                "toolsRemoved": [{"name": "read"}], "toolsAdded": [{"name": "bash", "v": 2}]}),
            json!({"role": "weird", "timestamp": 13}),
        ]
    }

    #[test]
    fn convert_to_llm_keeps_stored_messages_and_turns_the_others_into_user_text() {
        let out = llm_transcript(&transcript());
        let t = transcript();
        assert_eq!(
            out,
            vec![
                t[0].clone(),
                t[1].clone(),
                json!({"role": "user", "content": [{"type": "text",
                    "text": "Ran `ls`\n(no output)\n\nCommand exited with code 1"}], "timestamp": 7}),
                json!({"role": "user", "content": [{"type": "text", "text": "remember"}],
                    "timestamp": 9}),
                json!({"role": "user", "content": [{"type": "text", "text":
                    format!("{COMPACTION_SUMMARY_PREFIX}S{COMPACTION_SUMMARY_SUFFIX}")}],
                    "timestamp": 10}),
                json!({"role": "user", "content": [{"type": "text", "text":
                    format!("{BRANCH_SUMMARY_PREFIX}B{BRANCH_SUMMARY_SUFFIX}")}],
                    "timestamp": 11}),
                t[7].clone(),
            ]
        );
    }

    #[test]
    fn a_forced_prompt_collapses_the_system_messages_into_one_head() {
        let out = force_system_prompt(llm_transcript(&transcript()), "Forced.", 99);
        assert_eq!(
            out[0],
            json!({"role": "system", "content": "Forced.",
                "toolsAdded": [{"name": "bash", "v": 2}], "timestamp": 5})
        );
        assert_eq!(out.len(), 6);
        assert!(out[1..].iter().all(|m| m["role"] != "system"));
        let none = force_system_prompt(vec![json!({"role": "user", "content": "x"})], "P", 99);
        assert_eq!(
            none[0],
            json!({"role": "system", "content": "P", "timestamp": 99})
        );
    }

    #[test]
    fn blocked_images_become_one_note_per_run() {
        let img = json!({"type": "image", "data": "x", "mimeType": "image/png"});
        let mut t = vec![
            json!({"role": "user", "content": [img, img, {"type": "text", "text": "a"}, img]}),
            json!({"role": "toolResult", "content": [{"type": "text", "text": "N"}, img]}),
            json!({"role": "assistant", "content": [img]}),
        ];
        block_images(&mut t, "N");
        let note = json!({"type": "text", "text": "N"});
        assert_eq!(
            t[0]["content"],
            json!([note, {"type": "text", "text": "a"}, note])
        );
        assert_eq!(t[1]["content"], json!([note]));
        assert_eq!(t[2]["content"], json!([img]));
    }
}
