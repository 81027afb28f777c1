//! The text of a user message entry, read from its stored JSON without building the message
//! (`get_fork_messages` reads every user message of the file): as the stored string literal
//! itself when one literal is the whole text and is in printed form (copied into the answer as
//! it is), else decoded.

use serde::Deserialize;
use serde_json::value::RawValue;

/// A user message's text, as `get_fork_messages` shows it.
#[derive(Debug, PartialEq)]
pub(crate) enum UserText<'a> {
    /// A JSON string literal (quotes included) in the form the serializer would print it.
    Literal(&'a str),
    Text(String),
}

impl UserText<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            UserText::Literal(l) => *l == "\"\"",
            UserText::Text(t) => t.is_empty(),
        }
    }

    /// Appends the text as a JSON string to `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            UserText::Literal(l) => out.extend_from_slice(l.as_bytes()),
            UserText::Text(t) => crate::js::json::write_js_of(out, t),
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            UserText::Literal(l) => serde_json::from_str(l).unwrap_or_default(),
            UserText::Text(t) => t,
        }
    }
}

/// The text of the user message entry stored as `raw`: a string content as is, else the `text`
/// of its `text` blocks joined. `None` when the entry has a shape this view does not read (no
/// message or content, a content that is neither a string nor an array of objects, a repeated
/// key, …): the caller then parses the message.
pub(crate) fn user_text(raw: &str) -> Option<UserText<'_>> {
    let view: EntryView<'_> = serde_json::from_str(raw).ok()?;
    let content = view.message?.content?.get();
    match content.as_bytes().first() {
        Some(b'"') => Some(literal_or_text(content)),
        Some(b'[') => {
            let blocks: Vec<Block<'_>> = serde_json::from_str(content).ok()?;
            let mut texts = blocks.iter().filter_map(|b| {
                let text = b.text?.get();
                (b.kind? == "text" && text.starts_with('"')).then_some(text)
            });
            let Some(first) = texts.next() else {
                return Some(UserText::Text(String::new()));
            };
            let Some(second) = texts.next() else {
                return Some(literal_or_text(first));
            };
            let mut joined = String::new();
            for t in [first, second].into_iter().chain(texts) {
                joined.push_str(&serde_json::from_str::<String>(t).ok()?);
            }
            Some(UserText::Text(joined))
        }
        _ => None,
    }
}

/// `literal` (a JSON string literal) as is when it is in printed form, else decoded.
fn literal_or_text(literal: &str) -> UserText<'_> {
    if crate::js::json::canonical::is_canonical(literal) {
        UserText::Literal(literal)
    } else {
        UserText::Text(serde_json::from_str(literal).unwrap_or_default())
    }
}

#[derive(Deserialize)]
struct EntryView<'a> {
    #[serde(borrow)]
    message: Option<MessageView<'a>>,
}

#[derive(Deserialize)]
struct MessageView<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a str>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::manager::user_message_text;
    use serde_json::Value;

    /// Wherever the view answers, it answers what parsing the message gives, and its JSON is
    /// what printing that text gives.
    #[test]
    fn agrees_with_the_parsed_message() {
        let entries = [
            r#"{"type":"message","message":{"role":"user","content":"plain \"q\" é\n"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"esc \u00e9 \/"}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"text":"b\t","type":"text"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"image","data":"x"},{"type":"text","text":"only"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":5},{"type":"text","text":"x"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":5,"text":"x"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":["loose"]}}"#,
            r#"{"type":"message","message":{"role":"user","content":7}}"#,
            r#"{"type":"message","message":{"role":"user"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"a","content":"b"}}"#,
        ];
        let mut answered = 0;
        for raw in entries {
            let parsed: Value = serde_json::from_str(raw).unwrap();
            let expected = user_message_text(&parsed["message"]);
            if let Some(text) = user_text(raw) {
                answered += 1;
                let mut out = Vec::new();
                text.write_json(&mut out);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    crate::protocol::framing::encode(&expected),
                    "{raw}"
                );
                assert_eq!(text.is_empty(), expected.is_empty(), "{raw}");
                assert_eq!(text.into_string(), expected, "{raw}");
            }
        }
        assert_eq!(answered, 6);
    }

    #[test]
    fn a_whole_literal_in_printed_form_is_borrowed() {
        let raw = r#"{"message":{"content":[{"type":"text","text":"x \"y\""}]}}"#;
        assert_eq!(user_text(raw), Some(UserText::Literal(r#""x \"y\"""#)));
    }
}
