//! Token estimates (`agent-loop.md` §7.1): about four characters a token, characters counted as
//! JavaScript counts them (UTF-16 code units), as pi does.

use serde_json::{Map, Value};

use crate::js::utf16;
use crate::llm::Role;
use crate::session::projection::Projected;
use crate::session::{Entry, EntryKind};

/// Characters counted for one image block.
const IMAGE_CHARS: usize = 4800;

fn text_chars(content: &Value) -> usize {
    match content {
        Value::String(s) => utf16::len(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map_or(0, utf16::len),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

fn str_chars(v: Option<&Value>) -> usize {
    v.and_then(Value::as_str).map_or(0, utf16::len)
}

/// `ceil(chars / 4)` for one message.
pub fn estimate_tokens(msg: &Value) -> u64 {
    let Some(role) = Role::of(msg) else { return 0 };
    let chars = match role {
        Role::User | Role::Custom | Role::ToolResult => msg.get("content").map_or(0, text_chars),
        Role::Assistant => msg
            .get("content")
            .and_then(Value::as_array)
            .map_or(0, |blocks| {
                blocks
                    .iter()
                    .map(|b| match b.get("type").and_then(Value::as_str) {
                        Some("text") => str_chars(b.get("text")),
                        Some("thinking") => str_chars(b.get("thinking")),
                        Some("toolCall") => {
                            str_chars(b.get("name"))
                                + b.get("arguments")
                                    .map_or(0, |a| utf16::len(&crate::js::json::js_stringify(a)))
                        }
                        _ => 0,
                    })
                    .sum()
            }),
        Role::BashExecution => str_chars(msg.get("command")) + str_chars(msg.get("output")),
        Role::CompactionSummary | Role::BranchSummary => str_chars(msg.get("summary")),
        Role::System => {
            let sections = msg
                .get("sections")
                .and_then(Value::as_object)
                .map_or(0, |s| s.values().map(|v| str_chars(Some(v))).sum());
            msg.get("content").map_or(0, text_chars)
                + sections
                + msg
                    .get("toolsAdded")
                    .map_or(0, |t| utf16::len(&crate::js::json::js_stringify(t)))
        }
        Role::Other(_) => 0,
    };
    chars.div_ceil(4) as u64
}

/// The context tokens of an assistant usage: `totalTokens`, else the sum of its parts.
pub fn usage_context_tokens(usage: &Value) -> u64 {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let total = n("totalTokens");
    if total > 0 {
        total
    } else {
        n("input") + n("output") + n("cacheRead") + n("cacheWrite")
    }
}

/// An assistant message whose usage says how big the context was: not aborted or failed, and
/// with non-zero usage.
pub fn is_usable_assistant(msg: &Value) -> bool {
    Role::of(msg) == Some(Role::Assistant)
        && !matches!(
            msg.get("stopReason").and_then(Value::as_str),
            Some("aborted") | Some("error")
        )
        && msg
            .get("usage")
            .is_some_and(|u| usage_context_tokens(u) > 0)
}

/// pi's `estimateContextTokens`: the estimate and the index of the message whose usage it is
/// based on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextEstimate {
    pub tokens: u64,
    pub last_usage_index: Option<usize>,
}

/// The last usable assistant usage plus estimates of the messages after it, or the sum of all
/// estimates when no usage is known.
pub fn estimate_context<'a, I>(messages: I) -> ContextEstimate
where
    I: IntoIterator<Item = &'a Value>,
{
    let messages: Vec<&Value> = messages.into_iter().collect();
    match messages.iter().rposition(|m| is_usable_assistant(m)) {
        Some(i) => {
            let base = messages[i].get("usage").map_or(0, usage_context_tokens);
            ContextEstimate {
                tokens: base
                    + messages[i + 1..]
                        .iter()
                        .map(|m| estimate_tokens(m))
                        .sum::<u64>(),
                last_usage_index: Some(i),
            }
        }
        None => ContextEstimate {
            tokens: messages.iter().map(|m| estimate_tokens(m)).sum(),
            last_usage_index: None,
        },
    }
}

#[cfg(test)]
/// The context estimate of a message list (see [`estimate_context`]).
pub fn estimate_context_tokens(messages: &[Value]) -> u64 {
    estimate_context(messages).tokens
}

/// pi's `estimateProjectedContextTokens`: the estimate of the projected context, not trusting a
/// usage recorded before a later context edit or compaction (then: the current system message
/// once plus every other projected message).
pub fn estimate_projected_context_tokens(projection: &[Projected<'_>], branch: &[&Entry]) -> u64 {
    let messages: Vec<&Value> = projection.iter().flat_map(|p| p.messages.iter()).collect();
    let estimate = estimate_context(messages.iter().copied());
    if let Some(usage_index) = estimate.last_usage_index {
        let mut seen = 0usize;
        let mut usage_entry_id = None;
        for p in projection {
            let next = seen + p.messages.len();
            if usage_index < next {
                usage_entry_id = Some(p.entry.id());
                break;
            }
            seen = next;
        }
        let usage_entry_index = usage_entry_id
            .and_then(|id| branch.iter().position(|e| e.id() == id))
            .map_or(-1, |i| i as i64);
        let latest_invalidating = branch
            .iter()
            .rposition(|e| matches!(e.kind(), EntryKind::ContextEdit | EntryKind::Compaction))
            .map_or(-1, |i| i as i64);
        if usage_entry_index > latest_invalidating {
            return estimate.tokens;
        }
    }
    let system = current_system_message(messages.iter().copied(), None);
    let mut tokens = system.as_ref().map_or(0, estimate_tokens);
    for m in &messages {
        if Role::of(m) != Some(Role::System) {
            tokens += estimate_tokens(m);
        }
    }
    tokens
}

/// Text blocks of a content value joined with `\n` (a string as is): pi's `contentText`.
pub fn content_text(content: Option<&Value>, separator: &str) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(separator),
        _ => String::new(),
    }
}

/// pi-ai's `getCurrentSystemMessage`: every system message of `messages` replayed into one
/// (`role, content, sections?, toolsAdded?, timestamp`), `None` when there is none. `timestamp`
/// is the first system message's unless one is given.
pub fn current_system_message<'a, I>(messages: I, timestamp: Option<u64>) -> Option<Value>
where
    I: IntoIterator<Item = &'a Value>,
{
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(String, Value)> = Vec::new();
    let mut tools: Vec<(String, Value)> = Vec::new();
    let mut first_ts: Option<Value> = None;
    let mut any = false;
    for m in messages {
        if Role::of(m) != Some(Role::System) {
            continue;
        }
        any = true;
        if first_ts.is_none() {
            first_ts = Some(m.get("timestamp").cloned().unwrap_or(Value::Null));
        }
        let text = content_text(m.get("content"), "\n");
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(secs) = m.get("sections").and_then(Value::as_object) {
            for (name, value) in secs {
                if value.is_null() {
                    sections.retain(|(n, _)| n != name);
                } else if let Some(slot) = sections.iter_mut().find(|(n, _)| n == name) {
                    slot.1 = value.clone();
                } else {
                    sections.push((name.clone(), value.clone()));
                }
            }
        }
        for t in m
            .get("toolsRemoved")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = t.get("name").and_then(Value::as_str) {
                tools.retain(|(n, _)| n != name);
            }
        }
        for t in m
            .get("toolsAdded")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("");
            if let Some(slot) = tools.iter_mut().find(|(n, _)| n == name) {
                slot.1 = t.clone();
            } else {
                tools.push((name.to_string(), t.clone()));
            }
        }
    }
    if !any && tools.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), "system".into());
    out.insert("content".into(), content.join("\n\n").into());
    if !sections.is_empty() {
        out.insert(
            "sections".into(),
            Value::Object(sections.into_iter().collect()),
        );
    }
    if !tools.is_empty() {
        out.insert(
            "toolsAdded".into(),
            Value::Array(tools.into_iter().map(|(_, t)| t).collect()),
        );
    }
    let ts = match timestamp {
        Some(t) => Value::from(t),
        None => first_ts
            .filter(|t| !t.is_null())
            .unwrap_or_else(|| Value::from(0)),
    };
    out.insert("timestamp".into(), ts);
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimates() {
        assert_eq!(
            estimate_tokens(&json!({"role":"user","content":[{"type":"text","text":"12345"}]})),
            2
        );
        assert_eq!(estimate_tokens(&json!({"role":"user","content":"1234"})), 1);
        // Characters are UTF-16 code units: an emoji counts two.
        assert_eq!(
            estimate_tokens(&json!({"role":"user","content":"😀😀😀"})),
            2
        );
        assert_eq!(
            estimate_tokens(&json!({"role":"assistant","content":[
                {"type":"toolCall","id":"t","name":"read","arguments":{"path":"a","n":1.0}}]})),
            // "read" + {"path":"a","n":1} = 4 + 18
            6
        );
        let msgs = vec![
            json!({"role":"user","content":"x"}),
            json!({"role":"assistant","content":[],"stopReason":"stop","usage":{"totalTokens":100}}),
            json!({"role":"user","content":"12345678"}),
        ];
        assert_eq!(estimate_context_tokens(&msgs), 102);
        assert_eq!(estimate_context(&msgs).last_usage_index, Some(1));
    }

    #[test]
    fn current_system_message_replays_patches() {
        let msgs = vec![
            json!({"role":"system","content":"","sections":{"a":"A","b":"B"},"timestamp":5,
                   "toolsAdded":[{"name":"read"},{"name":"bash"}]}),
            json!({"role":"user","content":"x"}),
            json!({"role":"system","content":"","sections":{"a":null,"c":"C","b":"B2"},"timestamp":9,
                   "toolsAdded":[{"name":"read","v":2}],"toolsRemoved":[{"name":"bash"}]}),
        ];
        let s = current_system_message(&msgs, None).unwrap();
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"role":"system","content":"","sections":{"b":"B2","c":"C"},"toolsAdded":[{"name":"read","v":2}],"timestamp":5}"#
        );
        let s = current_system_message(&msgs, Some(42)).unwrap();
        assert_eq!(s["timestamp"], 42);
        assert!(current_system_message(&msgs[1..2], None).is_none());
    }
}
