//! Rebuilding the agent's message list, model and thinking level from the active branch
//! (`session-format.md` §6); the messages come from the branch's [projection](super::projection).

use serde_json::Value;

use super::entry::{Entry, EntryKind};
use super::messages::ContextMessages;
use super::projection::{contributions, Contribution};
use crate::llm::Role;

/// What the active branch says about model, thinking level and messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<Value>,
    /// Latest thinking level on the path (`None` when the path records none).
    pub thinking_level: Option<String>,
    /// Latest `(provider, modelId)` from a model_change or an assistant message.
    pub model: Option<(String, String)>,
}

/// The model and thinking level the branch records (what [`build_context`] reports beside the
/// messages).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Latest thinking level on the path (`None` when the path records none).
    pub thinking_level: Option<String>,
    /// Latest `(provider, modelId)` from a model_change or an assistant message.
    pub model: Option<(String, String)>,
}

/// The branch's [`Selection`], found from the leaf backwards: only the newest model-bearing
/// entry is parsed, so this stays cheap on a branch of any length (a session switch needs it
/// before, and apart from, the messages).
pub fn branch_selection(branch: &[&Entry]) -> Selection {
    let mut sel = Selection::default();
    for e in branch.iter().rev() {
        if sel.thinking_level.is_some() && sel.model.is_some() {
            break;
        }
        match e.kind() {
            EntryKind::ThinkingLevelChange if sel.thinking_level.is_none() => {
                sel.thinking_level = e.get_str("thinkingLevel");
            }
            EntryKind::ModelChange if sel.model.is_none() => {
                if let (Some(p), Some(m)) = (e.get_str("provider"), e.get_str("modelId")) {
                    sel.model = Some((p, m));
                }
            }
            EntryKind::Message if sel.model.is_none() && e.role() == Some(&Role::Assistant) => {
                #[derive(serde::Deserialize)]
                struct ModelOf {
                    message: ModelFields,
                }
                #[derive(serde::Deserialize)]
                struct ModelFields {
                    provider: Option<MaybeString>,
                    model: Option<MaybeString>,
                }
                if let Ok(ModelOf {
                    message:
                        ModelFields {
                            provider: Some(MaybeString(Some(p))),
                            model: Some(MaybeString(Some(m))),
                        },
                }) = e.deserialize::<ModelOf>()
                {
                    sel.model = Some((p, m));
                }
            }
            _ => {}
        }
    }
    sel
}

/// Any JSON value; `Some` when it is a string (a wrong type must not hide the entry's other
/// fields, as `JSON.parse` + property access would not).
struct MaybeString(Option<String>);

impl<'de> serde::Deserialize<'de> for MaybeString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(MaybeString(match Value::deserialize(d)? {
            Value::String(s) => Some(s),
            _ => None,
        }))
    }
}

/// Builds the context of `branch` (root first).
pub fn build_context(branch: &[&Entry]) -> SessionContext {
    let sel = branch_selection(branch);
    SessionContext {
        messages: build_messages(branch).to_vec(),
        thinking_level: sel.thinking_level,
        model: sel.model,
    }
}

/// The context messages of `branch` (root first): the messages of its projection, a `message`
/// entry's message that needs no change kept as its JSON text.
pub fn build_messages(branch: &[&Entry]) -> ContextMessages {
    let mut out = ContextMessages::new();
    for (_, contribution) in contributions(branch) {
        match contribution {
            Contribution::Stored(raw) => out.push_raw(raw),
            Contribution::Built(messages) => {
                for msg in messages {
                    out.push(msg);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(v: Value) -> Entry {
        Entry::from_value(v).unwrap()
    }

    #[test]
    fn context_edits_and_compaction() {
        let es = [
            entry(
                json!({"type":"model_change","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p","modelId":"m"}),
            ),
            entry(
                json!({"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}),
            ),
            entry(
                json!({"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"provider":"p2","model":"m2","stopReason":"error"}}),
            ),
            entry(
                json!({"type":"context_edit","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:00.000Z","targetId":"c","replacement":null}),
            ),
        ];
        let refs: Vec<&Entry> = es.iter().collect();
        let ctx = build_context(&refs);
        assert_eq!(ctx.messages.len(), 1);
        assert_eq!(ctx.model, Some(("p2".into(), "m2".into())));

        let mut es2 = es.to_vec();
        es2.push(entry(json!({"type":"compaction","id":"e","parentId":"d","timestamp":"2026-01-01T00:00:01.000Z","summary":"S","firstKeptEntryId":"b","tokensBefore":10})));
        let refs: Vec<&Entry> = es2.iter().collect();
        let ctx = build_context(&refs);
        assert_eq!(ctx.messages[0]["role"], "compactionSummary");
        assert_eq!(ctx.messages[0]["timestamp"], 1767225601000u64);
        assert_eq!(ctx.messages[1]["content"], "hi");
        assert_eq!(ctx.messages.len(), 2);
    }

    #[test]
    fn selection_is_the_latest_model_and_level_on_the_branch() {
        let t = "2026-01-01T00:00:00.000Z";
        let es = [
            entry(
                json!({"type":"thinking_level_change","id":"a","parentId":null,"timestamp":t,"thinkingLevel":"high"}),
            ),
            entry(
                json!({"type":"message","id":"b","parentId":"a","timestamp":t,"message":{"role":"assistant","content":[],"provider":"p1","model":"m1"}}),
            ),
            entry(
                json!({"type":"model_change","id":"c","parentId":"b","timestamp":t,"provider":"p2","modelId":"m2"}),
            ),
            entry(
                json!({"type":"thinking_level_change","id":"d","parentId":"c","timestamp":t,"thinkingLevel":7}),
            ),
            entry(
                json!({"type":"message","id":"e","parentId":"d","timestamp":t,"message":{"role":"assistant","content":[],"provider":3,"model":"m3"}}),
            ),
        ];
        let refs: Vec<&Entry> = es.iter().collect();
        let sel = branch_selection(&refs);
        // Non-string values are skipped, as the forward scan of `build_context` always did.
        assert_eq!(sel.model, Some(("p2".into(), "m2".into())));
        assert_eq!(sel.thinking_level.as_deref(), Some("high"));
        assert_eq!(
            branch_selection(&refs[..2]).model,
            Some(("p1".into(), "m1".into()))
        );
        assert_eq!(branch_selection(&refs[1..2]).thinking_level, None);
        let ctx = build_context(&refs);
        assert_eq!(
            (ctx.model, ctx.thinking_level),
            (sel.model, sel.thinking_level)
        );
    }
}
