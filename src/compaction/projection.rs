//! The projected context of a branch, entry by entry (pi's `buildSessionProjection`): which
//! entries the LLM context is built from (after the latest compaction: the compaction, its kept
//! tail, the entries after it) and the messages each contributes once `context_edit`s apply.
//! `session::context::build_context` gives the same messages flattened; compaction needs to know
//! which entry each one came from.

use std::collections::HashMap;

use serde_json::Value;

use crate::llm::Role;
use crate::session::context::build_context;
use crate::session::{Entry, EntryKind};

/// One projected entry and the messages it contributes (possibly none).
#[derive(Clone, Debug)]
pub struct Projected<'a> {
    pub entry: &'a Entry,
    pub messages: Vec<Value>,
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

/// What an entry contributes on its own, before edits (pi's `sessionEntryToContextMessages`):
/// a message, a compaction's checkpoint and summary, a branch summary, a custom message.
pub fn entry_messages(e: &Entry) -> Vec<Value> {
    match e.kind() {
        EntryKind::Message
        | EntryKind::Compaction
        | EntryKind::BranchSummary
        | EntryKind::CustomMessage => build_context(&[e]).messages,
        _ => Vec::new(),
    }
}

/// Whether an entry contributes anything on its own (without parsing it for most kinds).
pub fn contributes(e: &Entry) -> bool {
    match e.kind() {
        EntryKind::Message | EntryKind::Compaction => true,
        EntryKind::BranchSummary | EntryKind::CustomMessage => !entry_messages(e).is_empty(),
        _ => false,
    }
}

/// The projected entries with their messages, edits applied.
pub fn project<'a>(branch: &[&'a Entry]) -> Vec<Projected<'a>> {
    let entries = projected_entries(branch);
    let edits = context_edits(&entries);
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // Only the newest compaction (index 0) contributes.
            let mut messages = if e.kind() == EntryKind::Compaction && i != 0 {
                Vec::new()
            } else {
                entry_messages(e)
            };
            match edits.get(e.id()) {
                Some(Value::Null) => messages.clear(),
                Some(Value::Object(rep)) => {
                    for m in &mut messages {
                        apply_replacement(m, rep);
                    }
                }
                _ => {}
            }
            Projected { entry: e, messages }
        })
        .collect()
}

/// A `context_edit` replacement: the content of user/assistant/toolResult/custom messages is
/// replaced (a string becomes one text block for assistant and toolResult).
fn apply_replacement(msg: &mut Value, rep: &serde_json::Map<String, Value>) {
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
}
