//! The text of a user message entry, read from its stored JSON without building the message
//! (`get_fork_messages` reads every user message of the file).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

/// The text `get_fork_messages` shows for the user message entry stored as `raw`: a string
/// content as is, else the `text` of its `text` blocks joined. `None` when the entry has a shape
/// this view does not read (no message, a content that is neither a string nor an array of
/// objects, a non-string `text`, a repeated key, …): the caller then parses the message.
pub(crate) fn user_text(raw: &str) -> Option<String> {
    let view: EntryView<'_> = serde_json::from_str(raw).ok()?;
    match view.message?.content? {
        Content::Text(t) => Some(t.into_owned()),
        Content::Blocks(blocks) => Some(
            blocks
                .iter()
                .filter(|b| b.kind.as_deref() == Some("text"))
                .filter_map(|b| b.text.as_deref())
                .collect(),
        ),
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
    content: Option<Content<'a>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
    type Value = Content<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or an array of content blocks")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Content<'a>, E> {
        Ok(Content::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Content<'a>, E> {
        Ok(Content::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Content<'a>, E> {
        Ok(Content::Text(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'a>, A::Error> {
        let mut blocks = Vec::new();
        while let Some(b) = seq.next_element::<Block<'a>>()? {
            blocks.push(b);
        }
        Ok(Content::Blocks(blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::manager::user_message_text;
    use serde_json::Value;

    /// Wherever the view answers, it answers what parsing the message gives.
    #[test]
    fn agrees_with_the_parsed_message() {
        let entries = [
            r#"{"type":"message","message":{"role":"user","content":"plain \"q\" \u00e9"}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"text":"b","type":"text"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":5}]}}"#,
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
                assert_eq!(text, expected, "{raw}");
            }
        }
        assert_eq!(answered, 3);
    }
}
