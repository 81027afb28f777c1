//! One session entry, stored compactly: the entry's JSON text exactly as it is (or will be) in the
//! session file, plus the few fields the tree needs (`type`, `id`, `parentId`, `timestamp`, and a
//! message entry's `role`). Everything else is parsed on demand, so a 100 MB session costs little
//! more than 100 MB of memory, and `get_entries` can return entries exactly as stored (key order,
//! fields written by newer pi versions, number spelling).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::value::{CompactSeed, Scratch};
use crate::js::json::parse::is_json_whitespace;
use crate::llm::Role;

/// A session entry: `{"type", "id", "parentId", "timestamp", ...}` (custom entries put their
/// payload first), kept as its compact JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    raw: Box<str>,
    kind: EntryKind,
    id: Option<Box<str>>,
    parent_id: Option<Box<str>>,
    timestamp: Box<str>,
    role: Option<Role>,
}

/// An entry's `type` (`session-format.md` §3), read from its stored text (which it never
/// changes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// The file's header line (not an entry of the tree).
    Session,
    Message,
    ModelChange,
    ThinkingLevelChange,
    Compaction,
    BranchSummary,
    /// Extension data, not part of the context.
    Custom,
    /// An extension's message for the context.
    CustomMessage,
    Label,
    SessionInfo,
    ContextEdit,
    /// Usage of a request outside the conversation (counted in the session's totals).
    Usage,
    /// Any other `type` as written (`""` when the entry has no string `type`).
    Other(String),
}

impl EntryKind {
    /// The `type` as written in the entry.
    pub fn as_str(&self) -> &str {
        match self {
            EntryKind::Session => "session",
            EntryKind::Message => "message",
            EntryKind::ModelChange => "model_change",
            EntryKind::ThinkingLevelChange => "thinking_level_change",
            EntryKind::Compaction => "compaction",
            EntryKind::BranchSummary => "branch_summary",
            EntryKind::Custom => "custom",
            EntryKind::CustomMessage => "custom_message",
            EntryKind::Label => "label",
            EntryKind::SessionInfo => "session_info",
            EntryKind::ContextEdit => "context_edit",
            EntryKind::Usage => "usage",
            EntryKind::Other(s) => s,
        }
    }
}

impl From<&str> for EntryKind {
    fn from(s: &str) -> EntryKind {
        match s {
            "session" => EntryKind::Session,
            "message" => EntryKind::Message,
            "model_change" => EntryKind::ModelChange,
            "thinking_level_change" => EntryKind::ThinkingLevelChange,
            "compaction" => EntryKind::Compaction,
            "branch_summary" => EntryKind::BranchSummary,
            "custom" => EntryKind::Custom,
            "custom_message" => EntryKind::CustomMessage,
            "label" => EntryKind::Label,
            "session_info" => EntryKind::SessionInfo,
            "context_edit" => EntryKind::ContextEdit,
            "usage" => EntryKind::Usage,
            other => EntryKind::Other(other.to_owned()),
        }
    }
}

/// `e.kind() == EntryKind::Label`.
impl PartialEq<EntryKind> for &EntryKind {
    fn eq(&self, other: &EntryKind) -> bool {
        **self == *other
    }
}

impl Entry {
    /// Parses one line of a session file. The line must be a JSON object; surrounding whitespace
    /// (e.g. a CR before the LF) is dropped, the rest is kept verbatim.
    pub fn parse(line: &str) -> Result<Entry, serde_json::Error> {
        let text = line.trim_matches(is_json_whitespace);
        let head: Head = serde_json::from_str(text)?;
        Ok(Entry {
            raw: text.into(),
            kind: EntryKind::from(head.kind.as_deref().unwrap_or("")),
            id: head.id.map(|s| s.into()),
            parent_id: head.parent_id.map(|s| s.into()),
            timestamp: head.timestamp.unwrap_or(Cow::Borrowed("")).into(),
            role: head.role.as_deref().map(Role::from),
        })
    }

    /// An entry from an object built in memory (serialized once, here).
    pub fn from_map(map: Map<String, Value>) -> Entry {
        let s = |k: &str| map.get(k).and_then(Value::as_str);
        let kind = EntryKind::from(s("type").unwrap_or(""));
        let role = map.get("message").and_then(Role::of);
        Entry {
            kind,
            id: s("id").map(Into::into),
            parent_id: s("parentId").map(Into::into),
            timestamp: s("timestamp").unwrap_or("").into(),
            role,
            raw: crate::protocol::framing::encode(&map).into(),
        }
    }

    /// Like [`Entry::from_map`]; `None` when `value` is not an object.
    pub fn from_value(value: Value) -> Option<Entry> {
        match value {
            Value::Object(m) => Some(Entry::from_map(m)),
            _ => None,
        }
    }

    /// Builds `{"type", "id", "parentId", "timestamp", ...fields}`.
    pub fn base(
        kind: &EntryKind,
        id: &str,
        parent_id: Option<&str>,
        timestamp: &str,
        fields: Map<String, Value>,
    ) -> Entry {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(kind.as_str().into()));
        m.insert("id".into(), Value::String(id.into()));
        m.insert(
            "parentId".into(),
            parent_id.map_or(Value::Null, |p| Value::String(p.into())),
        );
        m.insert("timestamp".into(), Value::String(timestamp.into()));
        m.extend(fields);
        Entry::from_map(m)
    }

    /// Appends the entry as JSON to `out`: its stored text when that is the printed form of its
    /// value (the common case: a copy), else printed from the value, so the output is pi's
    /// `JSON.stringify` of the parsed entry either way.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        if crate::js::json::canonical::is_canonical(&self.raw) {
            out.extend_from_slice(self.raw.as_bytes());
        } else {
            crate::js::json::write_js(out, &self.to_value());
        }
    }

    /// The entry's `type`.
    pub fn kind(&self) -> &EntryKind {
        &self.kind
    }

    /// The entry's `id` (`""` when absent, which only hand-made files have).
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or("")
    }

    pub fn has_id(&self) -> bool {
        self.id.is_some()
    }

    /// `parentId`; `None` for a root (`null` or absent).
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    /// The ISO timestamp (`""` when absent).
    pub fn timestamp(&self) -> &str {
        &self.timestamp
    }

    /// The role of a `message` entry's message.
    pub(crate) fn role(&self) -> Option<&Role> {
        match self.kind {
            EntryKind::Message => self.role.as_ref(),
            _ => None,
        }
    }

    /// The role of a `message` entry's message, as written.
    pub fn message_role(&self) -> Option<&str> {
        self.role().map(Role::as_str)
    }

    /// The entry's compact JSON text, exactly as stored in the file (without the newline).
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Bytes of memory this entry holds (for measurements).
    pub fn heap_size(&self) -> usize {
        let kind = match &self.kind {
            EntryKind::Other(s) => s.capacity(),
            _ => 0,
        };
        let role = match &self.role {
            Some(Role::Other(s)) => s.capacity(),
            _ => 0,
        };
        self.raw.len()
            + self.id.as_ref().map_or(0, |s| s.len())
            + self.parent_id.as_ref().map_or(0, |s| s.len())
            + self.timestamp.len()
            + kind
            + role
    }

    /// The whole entry as a JSON object (parsed now, keys in stored order).
    pub fn to_map(&self) -> Map<String, Value> {
        match super::value::from_str(&self.raw) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// The whole entry as a JSON value (parsed now).
    pub fn to_value(&self) -> Value {
        Value::Object(self.to_map())
    }

    /// One top-level field, parsed now (only that field is materialized).
    pub fn get(&self, key: &str) -> Option<Value> {
        let mut de = serde_json::Deserializer::from_str(&self.raw);
        FieldSeed(key).deserialize(&mut de).ok().flatten()
    }

    /// A top-level string field.
    pub fn get_str(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The message of a `message` entry, parsed now.
    pub fn message(&self) -> Option<Value> {
        match self.kind {
            EntryKind::Message => self.get("message"),
            _ => None,
        }
    }

    /// The message of a `message` entry as its exact JSON text (a slice of the entry's text);
    /// `None` for other entries, or when the `message` field is absent or given twice.
    pub fn message_raw(&self) -> Option<&serde_json::value::RawValue> {
        #[derive(serde::Deserialize)]
        struct Of<'a> {
            #[serde(borrow)]
            message: Option<&'a serde_json::value::RawValue>,
        }
        if self.kind != EntryKind::Message {
            return None;
        }
        serde_json::from_str::<Of>(&self.raw).ok()?.message
    }

    /// Parses the entry into a typed view (unknown fields ignored): the cheap way to read a few
    /// nested fields of many entries.
    pub fn deserialize<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.raw)
    }

    /// A copy with `key` set to `value` (an existing key keeps its position, a new one goes last).
    pub fn with_field(&self, key: &str, value: Value) -> Entry {
        let mut m = self.to_map();
        m.insert(key.to_string(), value);
        Entry::from_map(m)
    }

    /// A copy with another `parentId` (same key position).
    pub fn with_parent_id(&self, parent_id: Option<&str>) -> Entry {
        if self.parent_id() == parent_id {
            return self.clone();
        }
        self.with_field(
            "parentId",
            parent_id.map_or(Value::Null, |p| Value::String(p.into())),
        )
    }
}

/// Serializes as the entry's object (parsed from the stored text).
impl Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Head parsing: one pass over the line that validates the whole JSON text and keeps only the
// tree fields, borrowing from the line where it can. Wrong field types and duplicate keys are
// tolerated the way `JSON.parse` + property access would (last key wins, non-strings ignored).

#[derive(Default)]
struct Head<'a> {
    kind: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    parent_id: Option<Cow<'a, str>>,
    timestamp: Option<Cow<'a, str>>,
    role: Option<Cow<'a, str>>,
}

enum Field {
    Type,
    Id,
    ParentId,
    Timestamp,
    Message,
    Role,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "type" => Field::Type,
                    "id" => Field::Id,
                    "parentId" => Field::ParentId,
                    "timestamp" => Field::Timestamp,
                    "message" => Field::Message,
                    "role" => Field::Role,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// Any JSON value; keeps it only when it is a string.
struct MaybeStr<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A message value; keeps only its `role`.
struct MessageRole<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for MessageRole<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageRole<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut role = None;
                while let Some(k) = map.next_key::<Field>()? {
                    match k {
                        Field::Role => role = map.next_value::<MaybeStr>()?.0,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(MessageRole(role))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MessageRole(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MessageRole(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MessageRole(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MessageRole(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MessageRole(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MessageRole(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MessageRole(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Head<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Head<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut h = Head::default();
                while let Some(k) = map.next_key::<Field>()? {
                    match k {
                        Field::Type => h.kind = map.next_value::<MaybeStr>()?.0,
                        Field::Id => h.id = map.next_value::<MaybeStr>()?.0,
                        Field::ParentId => h.parent_id = map.next_value::<MaybeStr>()?.0,
                        Field::Timestamp => h.timestamp = map.next_value::<MaybeStr>()?.0,
                        Field::Message => h.role = map.next_value::<MessageRole>()?.0,
                        Field::Role | Field::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(h)
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads one top-level field of an object, skipping the others without building them.
struct FieldSeed<'k>(&'k str);

struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        struct V<'k>(&'k str);
        impl Visitor<'_> for V<'_> {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
                Ok(v == self.0)
            }
        }
        d.deserialize_identifier(V(self.0))
    }
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        struct V<'k>(&'k str);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = Option<Value>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                let mut scratch = Scratch::default();
                while let Some(hit) = map.next_key_seed(KeyIs(self.0))? {
                    if hit {
                        found = Some(map.next_value_seed(CompactSeed(&mut scratch))?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
        }
        d.deserialize_map(V(self.0))
    }
}

/// `{"type":"session","version":3,"id","timestamp","cwd","parentSession"?}`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionHeader {
    pub version: u64,
    pub id: String,
    pub timestamp: String,
    pub cwd: String,
    pub parent_session: Option<String>,
}

impl SessionHeader {
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), "session".into());
        m.insert("version".into(), self.version.into());
        m.insert("id".into(), self.id.clone().into());
        m.insert("timestamp".into(), self.timestamp.clone().into());
        m.insert("cwd".into(), self.cwd.clone().into());
        if let Some(p) = &self.parent_session {
            m.insert("parentSession".into(), p.clone().into());
        }
        Value::Object(m)
    }

    pub(crate) fn new(id: String, cwd: &str, parent_session: Option<String>) -> Self {
        SessionHeader {
            version: super::migrate::CURRENT_VERSION,
            id,
            timestamp: crate::util::now_iso(),
            cwd: cwd.to_string(),
            parent_session,
        }
    }
}

/// A label on an entry (the latest `label` entry targeting it).
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub target_id: String,
    pub label: String,
    /// The `label` entry's timestamp.
    pub timestamp: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_keeps_text_and_extracts_head() {
        let line = "{\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"role\":\"user\"},\"extra\":1.50}\r";
        let e = Entry::parse(line).unwrap();
        assert_eq!(e.raw(), line.trim_end());
        assert_eq!(e.kind(), EntryKind::Message);
        assert_eq!(e.id(), "a1");
        assert_eq!(e.parent_id(), None);
        assert_eq!(e.timestamp(), "2026-01-01T00:00:00.000Z");
        assert_eq!(e.role(), Some(&Role::User));
        assert_eq!(e.message_role(), Some("user"));
        assert_eq!(e.get("extra"), Some(json!(1.5)));
        assert_eq!(e.get("missing"), None);
        assert_eq!(e.message().unwrap()["content"][0]["text"], "x");
        let keys: Vec<String> = e.to_map().keys().cloned().collect();
        assert_eq!(
            keys,
            ["type", "id", "parentId", "timestamp", "message", "extra"]
        );
    }

    #[test]
    fn parse_tolerates_odd_field_types_and_escapes() {
        let e = Entry::parse(
            r#"{"type":"label","id":5,"parentId":{"a":[1]},"timestamp":"t\u0041","message":"no"}"#,
        )
        .unwrap();
        assert_eq!(e.kind(), EntryKind::Label);
        assert!(!e.has_id());
        assert_eq!(e.parent_id(), None);
        assert_eq!(e.timestamp(), "tA");
        assert_eq!(e.message_role(), None);
        // Last duplicate key wins, like JSON.parse.
        let e = Entry::parse(r#"{"type":"x","id":"a","id":"b"}"#).unwrap();
        assert_eq!(e.id(), "b");
    }

    #[test]
    fn kinds_and_roles_are_read_from_the_text_which_stays_as_it_is() {
        let line = r#"{"type":"x-ext","id":"a","message":{"role":"hookMessage"}}"#;
        let e = Entry::parse(line).unwrap();
        assert_eq!(e.kind(), EntryKind::Other("x-ext".into()));
        assert_eq!(e.role(), None);
        assert_eq!(e.raw(), line);
        let line = r#"{"type":"message","id":"a","message":{"role":"hookMessage"}}"#;
        let e = Entry::parse(line).unwrap();
        assert_eq!(e.role(), Some(&Role::Other("hookMessage".into())));
        assert_eq!(e.message_role(), Some("hookMessage"));
        assert_eq!(e.raw(), line);
        let e = Entry::parse(r#"{"id":"a"}"#).unwrap();
        assert_eq!(e.kind(), EntryKind::Other(String::new()));
        for k in [
            "session",
            "message",
            "model_change",
            "thinking_level_change",
            "compaction",
            "branch_summary",
            "custom",
            "custom_message",
            "label",
            "session_info",
            "context_edit",
            "usage",
            "other",
        ] {
            let kind = EntryKind::from(k);
            assert_eq!(kind.as_str(), k);
            assert_eq!(kind == EntryKind::Other(k.into()), k == "other");
            let e = Entry::base(&kind, "i", None, "t", Map::new());
            assert!(e.raw().starts_with(&format!(r#"{{"type":"{k}","#)));
            assert_eq!(e.kind(), kind);
            assert_eq!(e.kind().as_str(), k);
        }
    }

    #[test]
    fn parse_rejects_non_objects_and_torn_lines() {
        assert!(Entry::parse("[1,2]").is_err());
        assert!(Entry::parse("42").is_err());
        assert!(Entry::parse(r#"{"type":"message","id":"a","mess"#).is_err());
        assert!(Entry::parse(r#"{"a":1} x"#).is_err());
    }

    #[test]
    fn built_entries_round_trip() {
        let mut f = Map::new();
        f.insert("message".into(), json!({"role":"assistant","content":[]}));
        let e = Entry::base(
            &EntryKind::Message,
            "b2",
            Some("a1"),
            "2026-01-01T00:00:00.000Z",
            f,
        );
        assert_eq!(
            e.raw(),
            r#"{"type":"message","id":"b2","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[]}}"#
        );
        assert_eq!(Entry::parse(e.raw()).unwrap(), e);
        let moved = e.with_parent_id(None);
        assert_eq!(
            moved.raw(),
            r#"{"type":"message","id":"b2","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[]}}"#
        );
        assert_eq!(moved.message_role(), Some("assistant"));
    }
}
