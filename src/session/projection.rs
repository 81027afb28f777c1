//! The projection of a branch (pi's `buildSessionProjection`, `session-format.md` §6): which
//! entries the LLM context is built from (after the latest compaction: the compaction, its kept
//! tail, the entries after it) and the messages each contributes once the `context_edit`s
//! apply. The agent's context ([`super::context::build_messages`]) is these messages in order;
//! compaction ([`project`]) also needs to know which entry each one came from.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::entry::{Entry, EntryKind};
use crate::llm::Role;
use crate::util;

/// One projected entry and the messages it contributes (possibly none).
#[derive(Clone, Debug)]
pub struct Projected<'a> {
    pub entry: &'a Entry,
    pub messages: Vec<Value>,
}

/// What one projected entry contributes to the context.
pub(crate) enum Contribution<'a> {
    /// A message entry's message that needs no change: its JSON text as stored.
    Stored(&'a RawValue),
    /// Messages built from the entry (none when it contributes nothing or an edit removed it).
    Built(Vec<Value>),
}

impl Contribution<'_> {
    /// The contributed messages as values.
    fn into_values(self) -> Vec<Value> {
        match self {
            // The text was validated when the entry was read, so parsing cannot fail.
            Contribution::Stored(raw) => {
                vec![super::value::from_str(raw.get()).unwrap_or(Value::Null)]
            }
            Contribution::Built(messages) => messages,
        }
    }
}

/// The entries the context is built from, in order (no messages parsed).
pub fn projected_entries<'a>(branch: &[&'a Entry]) -> Vec<&'a Entry> {
    match branch
        .iter()
        .rposition(|e| e.kind() == EntryKind::Compaction)
    {
        Some(ci) => {
            let c = branch[ci];
            let mut out = vec![c];
            if let Some(fk) = c.get_str("firstKeptEntryId") {
                if let Some(start) = branch[..ci].iter().position(|e| e.id() == fk) {
                    out.extend(
                        branch[start..ci]
                            .iter()
                            .filter(|e| e.role() != Some(&Role::System)),
                    );
                }
            }
            out.extend(branch[ci + 1..].iter());
            out
        }
        None => branch.to_vec(),
    }
}

/// The latest `context_edit` replacement per target among `entries`.
pub fn context_edits(entries: &[&Entry]) -> HashMap<String, Value> {
    let mut edits = HashMap::new();
    for e in entries {
        if e.kind() == EntryKind::ContextEdit {
            if let Some(t) = e.get_str("targetId") {
                edits.insert(t, e.get("replacement").unwrap_or(Value::Null));
            }
        }
    }
    edits
}

/// The projection of `branch`: each projected entry with what it contributes, edits applied.
pub(crate) fn contributions<'a>(branch: &[&'a Entry]) -> Vec<(&'a Entry, Contribution<'a>)> {
    let entries = projected_entries(branch);
    let edits = context_edits(&entries);
    entries
        .into_iter()
        .enumerate()
        // Only the newest compaction (index 0) contributes; an older one inside the kept range
        // is skipped.
        .map(|(i, e)| (e, contribution(e, i == 0, edits.get(e.id()))))
        .collect()
}

/// The projected entries of `branch` with their messages, edits applied.
pub fn project<'a>(branch: &[&'a Entry]) -> Vec<Projected<'a>> {
    contributions(branch)
        .into_iter()
        .map(|(entry, c)| Projected {
            entry,
            messages: c.into_values(),
        })
        .collect()
}

/// What an entry contributes on its own, before edits (pi's `sessionEntryToContextMessages`):
/// a message, a compaction's checkpoint and summary, a branch summary, a custom message.
pub fn entry_messages(e: &Entry) -> Vec<Value> {
    contribution(e, true, None).into_values()
}

/// Whether an entry contributes anything on its own (without parsing it for most kinds).
pub fn contributes(e: &Entry) -> bool {
    match e.kind() {
        EntryKind::Message | EntryKind::Compaction => true,
        EntryKind::BranchSummary | EntryKind::CustomMessage => !entry_messages(e).is_empty(),
        _ => false,
    }
}

/// What `e` contributes, `edit` (the latest `context_edit` replacement targeting it) applied; a
/// compaction contributes only when it is `first` in the projection.
fn contribution<'a>(e: &'a Entry, first: bool, edit: Option<&Value>) -> Contribution<'a> {
    if matches!(edit, Some(Value::Null)) {
        return Contribution::Built(Vec::new());
    }
    let mut messages = Vec::new();
    match e.kind() {
        EntryKind::Message => {
            if edit.is_none() {
                if let Some(raw) = e.message_raw().filter(|r| keeps_content(r)) {
                    return Contribution::Stored(raw);
                }
            }
            if let Some(mut msg) = e.message() {
                normalize_null_content(&mut msg);
                messages.push(msg);
            }
        }
        EntryKind::Compaction if first => {
            if let Some(sys) = e.get("systemMessage") {
                if is_truthy(&sys) {
                    messages.push(sys);
                }
            }
            let mut m = Map::new();
            m.insert("role".into(), "compactionSummary".into());
            if let Some(s) = e.get("summary") {
                m.insert("summary".into(), s);
            }
            if let Some(t) = e.get("tokensBefore") {
                m.insert("tokensBefore".into(), t);
            }
            m.insert("timestamp".into(), entry_ts_ms(e));
            messages.push(Value::Object(m));
        }
        EntryKind::BranchSummary => {
            if let Some(summary) = e.get("summary").filter(is_truthy) {
                let mut m = Map::new();
                m.insert("role".into(), "branchSummary".into());
                m.insert("summary".into(), summary);
                if let Some(f) = e.get("fromId") {
                    m.insert("fromId".into(), f);
                }
                m.insert("timestamp".into(), entry_ts_ms(e));
                messages.push(Value::Object(m));
            }
        }
        EntryKind::CustomMessage => {
            let entry = e.to_map();
            let mut m = Map::new();
            m.insert("role".into(), "custom".into());
            for k in ["customType", "content", "display", "details"] {
                match entry.get(k) {
                    Some(Value::Null) | None if k == "content" => {
                        m.insert(k.into(), Value::Array(Vec::new()));
                    }
                    Some(v) => {
                        m.insert(k.into(), v.clone());
                    }
                    None => {}
                }
            }
            m.insert("timestamp".into(), entry_ts_ms(e));
            messages.push(Value::Object(m));
        }
        EntryKind::Compaction
        | EntryKind::Session
        | EntryKind::ModelChange
        | EntryKind::ThinkingLevelChange
        | EntryKind::Custom
        | EntryKind::Label
        | EntryKind::SessionInfo
        | EntryKind::ContextEdit
        | EntryKind::Usage
        | EntryKind::Other(_) => {}
    }
    if let Some(Value::Object(rep)) = edit {
        for msg in &mut messages {
            apply_replacement(msg, rep);
        }
    }
    Contribution::Built(messages)
}

/// The entry's timestamp in ms (`new Date(ts).getTime()`; `null` when it does not parse).
fn entry_ts_ms(e: &Entry) -> Value {
    util::ms_from_iso(e.timestamp()).map_or(Value::Null, Value::from)
}

/// Whether a message is an object with a non-null `content` (so `normalize_null_content` would
/// leave it as it is).
fn keeps_content(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        content: Option<serde::de::IgnoredAny>,
    }
    matches!(
        serde_json::from_str::<Probe>(raw.get()),
        Ok(Probe { content: Some(_) })
    )
}

/// JavaScript truthiness of a JSON value.
fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// A `context_edit` replacement: the content of user/assistant/toolResult/custom messages is
/// replaced (a string becomes one text block for assistant and toolResult).
fn apply_replacement(msg: &mut Value, rep: &Map<String, Value>) {
    let text_blocks = match Role::of(msg) {
        Some(Role::Assistant | Role::ToolResult) => true,
        Some(Role::User | Role::Custom) => false,
        _ => return,
    };
    let Value::Object(m) = msg else { return };
    let content = match rep.get("content") {
        Some(Value::String(s)) if text_blocks => serde_json::json!([{"type": "text", "text": s}]),
        Some(c) => c.clone(),
        None => Value::Null,
    };
    m.insert("content".into(), content);
}

/// Null or missing content: system → `""`, user/assistant/toolResult → `[]`.
fn normalize_null_content(msg: &mut Value) {
    if !matches!(msg.get("content"), None | Some(Value::Null)) {
        return;
    }
    let role = Role::of(msg);
    let Value::Object(m) = msg else { return };
    match role {
        Some(Role::System) => {
            m.insert("content".into(), Value::from(""));
        }
        Some(Role::User | Role::Assistant | Role::ToolResult) => {
            m.insert("content".into(), Value::Array(Vec::new()));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(v: Value) -> Entry {
        Entry::from_value(v).unwrap()
    }

    #[test]
    fn projection_keeps_sources_and_applies_edits() {
        let ts = "2026-01-01T00:00:00.000Z";
        let es = [
            entry(
                json!({"type":"model_change","id":"a","parentId":null,"timestamp":ts,"provider":"p","modelId":"m"}),
            ),
            entry(
                json!({"type":"message","id":"b","parentId":"a","timestamp":ts,"message":{"role":"user","content":"hi","timestamp":1}}),
            ),
            entry(
                json!({"type":"message","id":"c","parentId":"b","timestamp":ts,"message":{"role":"assistant","content":[],"stopReason":"error"}}),
            ),
            entry(
                json!({"type":"context_edit","id":"d","parentId":"c","timestamp":ts,"targetId":"c","replacement":null}),
            ),
            entry(
                json!({"type":"context_edit","id":"e","parentId":"d","timestamp":ts,"targetId":"b","replacement":{"content":"HI"}}),
            ),
        ];
        let refs: Vec<&Entry> = es.iter().collect();
        let p = project(&refs);
        assert_eq!(p.len(), 5);
        assert!(p[0].messages.is_empty());
        assert_eq!(p[1].messages[0]["content"], "HI");
        assert!(p[2].messages.is_empty());
        assert!(contributes(p[2].entry));
        assert!(!contributes(p[3].entry));
    }

    #[test]
    fn the_context_is_the_projection_flattened() {
        let ts = "2026-01-01T00:00:00.000Z";
        let es = [
            entry(
                json!({"type":"message","id":"a","parentId":null,"timestamp":ts,"message":{"role":"user","content":"old","timestamp":1}}),
            ),
            entry(
                json!({"type":"message","id":"b","parentId":"a","timestamp":ts,"message":{"role":"system","content":null,"timestamp":2}}),
            ),
            entry(
                json!({"type":"message","id":"c","parentId":"b","timestamp":ts,"message":{"role":"assistant","content":null,"timestamp":3}}),
            ),
            entry(
                json!({"type":"compaction","id":"d","parentId":"c","timestamp":ts,"summary":"S","firstKeptEntryId":"b","tokensBefore":9,"systemMessage":{"role":"system","content":"sys"}}),
            ),
            entry(
                json!({"type":"branch_summary","id":"e","parentId":"d","timestamp":ts,"summary":"B","fromId":"x"}),
            ),
            entry(
                json!({"type":"branch_summary","id":"f","parentId":"e","timestamp":ts,"summary":""}),
            ),
            entry(
                json!({"type":"custom_message","id":"g","parentId":"f","timestamp":ts,"customType":"t","content":null,"display":true}),
            ),
            entry(
                json!({"type":"message","id":"h","parentId":"g","timestamp":ts,"message":{"role":"toolResult","content":[],"timestamp":4}}),
            ),
            entry(
                json!({"type":"context_edit","id":"i","parentId":"h","timestamp":ts,"targetId":"h","replacement":{"content":"T"}}),
            ),
            entry(
                json!({"type":"context_edit","id":"j","parentId":"i","timestamp":ts,"targetId":"g","replacement":{"content":"C"}}),
            ),
        ];
        let refs: Vec<&Entry> = es.iter().collect();
        let p = project(&refs);
        let ids: Vec<&str> = p.iter().map(|p| p.entry.id()).collect();
        assert_eq!(ids, ["d", "c", "e", "f", "g", "h", "i", "j"]);
        let flat: Vec<Value> = p.into_iter().flat_map(|p| p.messages).collect();
        assert_eq!(flat, super::super::context::build_messages(&refs).to_vec());
        let roles: Vec<Option<Role>> = flat.iter().map(Role::of).collect();
        assert_eq!(
            roles,
            [
                Some(Role::System),
                Some(Role::CompactionSummary),
                Some(Role::Assistant),
                Some(Role::BranchSummary),
                Some(Role::Custom),
                Some(Role::ToolResult),
            ]
        );
        assert_eq!(flat[2]["content"], json!([]));
        assert_eq!(flat[4]["content"], "C");
        assert_eq!(flat[5]["content"], json!([{"type": "text", "text": "T"}]));
    }
}
