//! Rebuilding the agent's message list from the active branch (`session-format.md` §6).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::entry::{Entry, EntryKind};
use super::messages::ContextMessages;
use crate::llm::Role;
use crate::util;

/// What the active branch says about model, thinking level and messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<Value>,
    /// Latest thinking level on the path (`None` when the path records none).
    pub thinking_level: Option<String>,
    /// Latest `(provider, modelId)` from a model_change or an assistant message.
    pub model: Option<(String, String)>,
}

/// The entry's timestamp in ms (`new Date(ts).getTime()`; `null` when it does not parse).
fn entry_ts_ms(e: &Entry) -> Value {
    util::ms_from_iso(e.timestamp()).map_or(Value::Null, Value::from)
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

/// The context messages of `branch` (root first): a `message` entry's message that needs no
/// change is kept as its JSON text.
pub fn build_messages(branch: &[&Entry]) -> ContextMessages {
    let mut out = ContextMessages::new();

    // The projected entries: after the latest compaction, its kept tail.
    let compaction_pos = branch
        .iter()
        .rposition(|e| e.kind() == EntryKind::Compaction);
    let projected: Vec<&Entry> = match compaction_pos {
        Some(ci) => {
            let c = branch[ci];
            let first_kept = c.get_str("firstKeptEntryId");
            let mut out = vec![c];
            if let Some(fk) = first_kept {
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
    };

    // Latest context_edit per target wins.
    let mut edits: HashMap<String, Value> = HashMap::new();
    for e in &projected {
        if e.kind() == EntryKind::ContextEdit {
            if let Some(t) = e.get_str("targetId") {
                edits.insert(t, e.get("replacement").unwrap_or(Value::Null));
            }
        }
    }

    for (i, e) in projected.into_iter().enumerate() {
        let edit = edits.get(e.id());
        if matches!(edit, Some(Value::Null)) {
            continue;
        }
        let mut ctx = SessionContext::default();
        match e.kind() {
            EntryKind::Message => {
                if edit.is_none() {
                    if let Some(raw) = e.message_raw().filter(|r| keeps_content(r)) {
                        out.push_raw(raw.to_owned());
                        continue;
                    }
                }
                let Some(mut msg) = e.message() else { continue };
                normalize_null_content(&mut msg);
                ctx.messages.push(msg);
            }
            // Only the newest compaction (index 0) contributes; an older one inside the kept
            // range is skipped.
            EntryKind::Compaction if i == 0 => {
                if let Some(sys) = e.get("systemMessage") {
                    if is_truthy(&sys) {
                        ctx.messages.push(sys);
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
                ctx.messages.push(Value::Object(m));
            }
            EntryKind::BranchSummary => {
                let Some(summary) = e.get("summary").filter(is_truthy) else {
                    continue;
                };
                let mut m = Map::new();
                m.insert("role".into(), "branchSummary".into());
                m.insert("summary".into(), summary);
                if let Some(f) = e.get("fromId") {
                    m.insert("fromId".into(), f);
                }
                m.insert("timestamp".into(), entry_ts_ms(e));
                ctx.messages.push(Value::Object(m));
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
                ctx.messages.push(Value::Object(m));
            }
            _ => {}
        }
        if let Some(Value::Object(rep)) = edit {
            for msg in &mut ctx.messages {
                apply_replacement(msg, rep);
            }
        }
        for msg in ctx.messages {
            out.push(msg);
        }
    }
    out
}

/// Whether a message is an object with a non-null `content` (so `normalize_null_content` would
/// leave it as it is).
fn keeps_content(raw: &serde_json::value::RawValue) -> bool {
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
