//! The agent's context messages: those loaded from the session file are kept as their exact JSON
//! text (a parsed `Value` costs several times its text), shared, so that a copy of a long
//! context costs a pointer per message (a request is built from a copy, outside the state lock);
//! those created in this process as `Value`s. Readers get parsed `Value`s on demand.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

/// One context message.
#[derive(Clone, Debug)]
enum Message {
    /// The message's JSON text (valid JSON), as stored in its session entry.
    Raw(Arc<str>),
    Value(Value),
}

impl Message {
    fn value(&self) -> Cow<'_, Value> {
        match self {
            // The text was validated when the entry was read, so parsing cannot fail.
            Message::Raw(r) => Cow::Owned(super::value::from_str(r).unwrap_or(Value::Null)),
            Message::Value(v) => Cow::Borrowed(v),
        }
    }
}

/// The context message list (`AgentSession.messages`).
#[derive(Clone, Debug, Default)]
pub struct ContextMessages {
    items: Vec<Message>,
}

impl ContextMessages {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, message: Value) {
        self.items.push(Message::Value(message));
    }

    /// Appends a message kept as its JSON text (parsed when read).
    pub fn push_raw(&mut self, message: &RawValue) {
        self.items.push(Message::Raw(Arc::from(message.get())));
    }

    /// The message at `i`, parsed.
    pub fn get(&self, i: usize) -> Option<Cow<'_, Value>> {
        self.items.get(i).map(Message::value)
    }

    pub fn last(&self) -> Option<Cow<'_, Value>> {
        self.items.last().map(Message::value)
    }

    /// The messages in order, each parsed when reached.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = Cow<'_, Value>> + ExactSizeIterator + Clone + '_ {
        self.items.iter().map(Message::value)
    }

    /// The `system` messages, parsed, in order. A message kept as text is parsed only when its
    /// text might be one (it names `system`, or has an escape that could spell it), so on a long
    /// session this reads a few messages instead of building all of them.
    pub fn system_messages(&self) -> Vec<Value> {
        self.items
            .iter()
            .filter(|m| match m {
                Message::Raw(r) => r.contains("system") || r.contains("\\u"),
                Message::Value(_) => true,
            })
            .map(Message::value)
            .filter(|v| v.get("role").and_then(Value::as_str) == Some("system"))
            .map(Cow::into_owned)
            .collect()
    }

    /// All messages as `Value`s.
    pub fn to_vec(&self) -> Vec<Value> {
        self.iter().map(Cow::into_owned).collect()
    }

    pub fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
    }

    /// About how many bytes [`Self::write_json`] writes (exact when every message is kept as
    /// text).
    pub fn json_len_hint(&self) -> usize {
        self.items
            .iter()
            .map(|m| match m {
                Message::Raw(r) => r.len() + 1,
                Message::Value(_) => 512,
            })
            .sum::<usize>()
            + 2
    }

    /// Appends the messages as a JSON array to `out`, exactly as serializing them would: a
    /// message kept as text in the printed form is copied as it is, any other is printed.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, m) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match m {
                Message::Raw(r) if crate::js::json::canonical::is_canonical(r) => {
                    out.extend_from_slice(r.as_bytes())
                }
                other => crate::js::json::write_js(out, &other.value()),
            }
        }
        out.push(b']');
    }
}

impl From<Vec<Value>> for ContextMessages {
    fn from(values: Vec<Value>) -> Self {
        ContextMessages {
            items: values.into_iter().map(Message::Value).collect(),
        }
    }
}

/// Serialized as the array of its messages (each parsed in turn, so the output is what the same
/// messages as `Value`s would give).
impl serde::Serialize for ContextMessages {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for m in self.iter() {
            seq.serialize_element(&*m)?;
        }
        seq.end()
    }
}

impl PartialEq for ContextMessages {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn system_messages_are_found_however_they_are_spelled() {
        let mut m = ContextMessages::new();
        let raw = |t: &str| RawValue::from_string(t.to_string()).unwrap();
        m.push_raw(&raw(r#"{"role":"user","content":"about the system"}"#));
        m.push_raw(&raw(r#"{"role":"system","content":"a"}"#));
        m.push_raw(&raw(r#"{"role": "\u0073ystem","content":"b"}"#));
        m.push_raw(&raw(r#"{"role":"assistant","content":[]}"#));
        m.push(json!({"role": "system", "content": "c"}));
        m.push(json!({"role": "user", "content": "d"}));
        let contents: Vec<Value> = m
            .system_messages()
            .iter()
            .map(|v| v["content"].clone())
            .collect();
        assert_eq!(contents, [json!("a"), json!("b"), json!("c")]);
    }

    #[test]
    fn raw_and_value_messages_read_alike() {
        let mut m = ContextMessages::new();
        m.push_raw(&RawValue::from_string(r#"{"role":"user","content":"hi"}"#.into()).unwrap());
        m.push(json!({"role": "assistant", "content": []}));
        assert_eq!(m.len(), 2);
        assert_eq!(m.get(0).unwrap()["content"], "hi");
        assert_eq!(m.last().unwrap()["role"], "assistant");
        assert_eq!(
            m.to_vec(),
            vec![
                json!({"role": "user", "content": "hi"}),
                json!({"role": "assistant", "content": []})
            ]
        );
        assert_eq!(m.iter().next_back().unwrap()["role"], "assistant");
    }
}
