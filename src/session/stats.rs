//! Totals over all entries of a session (`get_session_stats`, `rpc-protocol.md` §3.9), read with
//! typed views that skip everything else, so a 100 MB session is counted without building its
//! messages.

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::entry::{Entry, EntryKind};
use crate::llm::Role;

/// Counts and usage sums over every entry of the file (all branches).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SessionTotals {
    /// Every `message` entry (any role).
    pub total_messages: u64,
    pub user_messages: u64,
    pub assistant_messages: u64,
    /// `toolCall` blocks in assistant messages.
    pub tool_calls: u64,
    pub tool_results: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Sum of `usage.cost.total`.
    pub cost: f64,
}

impl SessionTotals {
    /// `input + output + cacheRead + cacheWrite`.
    pub fn total_tokens(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Adds one entry's contribution.
    pub fn add(&mut self, e: &Entry) {
        match e.kind() {
            EntryKind::Message => {
                self.total_messages += 1;
                match e.role() {
                    Some(Role::User) => self.user_messages += 1,
                    Some(Role::Assistant) => {
                        self.assistant_messages += 1;
                        if let Ok(v) = e.deserialize::<AssistantView>() {
                            self.tool_calls = self.tool_calls.saturating_add(v.message.content.0);
                            if let Some(u) = v.message.usage {
                                self.add_usage(&u);
                            }
                        }
                    }
                    Some(Role::ToolResult) => {
                        self.tool_results += 1;
                        if let Ok(v) = e.deserialize::<MessageUsageView>() {
                            if let Some(u) = v.message.usage {
                                self.add_usage(&u);
                            }
                        }
                    }
                    _ => {}
                }
            }
            EntryKind::Compaction | EntryKind::BranchSummary | EntryKind::Usage => {
                if let Ok(UsageView { usage: Some(u) }) = e.deserialize::<UsageView>() {
                    self.add_usage(&u);
                }
            }
            _ => {}
        }
    }

    fn add_usage(&mut self, u: &Usage) {
        let n = |v: Option<f64>| v.filter(|f| *f > 0.0).map_or(0, |f| f as u64);
        // Saturating: usage numbers come from files and servers (1e300 must not panic).
        self.input = self.input.saturating_add(n(u.input));
        self.output = self.output.saturating_add(n(u.output));
        self.cache_read = self.cache_read.saturating_add(n(u.cache_read));
        self.cache_write = self.cache_write.saturating_add(n(u.cache_write));
        self.cost += u.cost.as_ref().and_then(|c| c.total).unwrap_or(0.0);
    }

    /// Totals of `entries`.
    pub fn of(entries: &[Entry]) -> SessionTotals {
        let mut t = SessionTotals::default();
        for e in entries {
            t.add(e);
        }
        t
    }
}

/// Any JSON value read as a number, `None` otherwise.
#[derive(Default)]
struct Num(Option<f64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(Num(v.as_f64()))
    }
}

fn num<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Num::deserialize(d)?.0)
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default, deserialize_with = "num")]
    input: Option<f64>,
    #[serde(default, deserialize_with = "num")]
    output: Option<f64>,
    #[serde(default, rename = "cacheRead", deserialize_with = "num")]
    cache_read: Option<f64>,
    #[serde(default, rename = "cacheWrite", deserialize_with = "num")]
    cache_write: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    cost: Option<Cost>,
}

#[derive(Deserialize, Default)]
struct Cost {
    #[serde(default, deserialize_with = "num")]
    total: Option<f64>,
}

/// An object of type `T`, or `None` for anything else (instead of failing the whole entry).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// The number of `toolCall` blocks in a content array.
#[derive(Default)]
struct ToolCallCount(u64);

impl<'de> Deserialize<'de> for ToolCallCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ToolCallCount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("message content")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ToolCallCount, A::Error> {
                let mut n = 0;
                while let Some(b) = seq.next_element::<BlockType>()? {
                    if b.is_tool_call {
                        n += 1;
                    }
                }
                Ok(ToolCallCount(n))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<ToolCallCount, E> {
                Ok(ToolCallCount(0))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<ToolCallCount, E> {
                Ok(ToolCallCount(0))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ToolCallCount, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ToolCallCount(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// A content block: only whether its `type` is `toolCall`.
struct BlockType {
    is_tool_call: bool,
}

impl<'de> Deserialize<'de> for BlockType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = BlockType;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<BlockType, A::Error> {
                let mut is_tool_call = false;
                while let Some(k) = map.next_key::<std::borrow::Cow<str>>()? {
                    if k == "type" {
                        let t = map.next_value::<serde_json::Value>()?;
                        is_tool_call = t.as_str() == Some("toolCall");
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(BlockType { is_tool_call })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<BlockType, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<BlockType, E> {
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<BlockType, E> {
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<BlockType, E> {
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<BlockType, E> {
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<BlockType, E> {
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<BlockType, E> {
                Ok(BlockType {
                    is_tool_call: false,
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct AssistantView {
    message: AssistantFields,
}

#[derive(Deserialize)]
struct AssistantFields {
    #[serde(default)]
    content: ToolCallCount,
    #[serde(default, deserialize_with = "lenient")]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct MessageUsageView {
    message: UsageOnly,
}

#[derive(Deserialize)]
struct UsageOnly {
    #[serde(default, deserialize_with = "lenient")]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct UsageView {
    #[serde(default, deserialize_with = "lenient")]
    usage: Option<Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn e(v: serde_json::Value) -> Entry {
        Entry::from_value(v).unwrap()
    }

    #[test]
    fn counts_and_sums() {
        let usage = json!({"input":10,"output":5,"cacheRead":2,"cacheWrite":1,"totalTokens":18,"cost":{"total":0.5}});
        let entries = [
            e(json!({"type":"model_change","id":"a"})),
            e(json!({"type":"message","id":"b","message":{"role":"system","content":""}})),
            e(json!({"type":"message","id":"c","message":{"role":"user","content":"q"}})),
            e(
                json!({"type":"message","id":"d","message":{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"t","name":"bash","arguments":{"type":"toolCall"}},{"type":"toolCall"}],"usage":usage}}),
            ),
            e(
                json!({"type":"message","id":"f","message":{"role":"toolResult","content":[],"usage":{"input":1}}}),
            ),
            e(json!({"type":"message","id":"g","message":{"role":"bashExecution","command":"ls"}})),
            e(json!({"type":"compaction","id":"h","usage":{"output":7,"cost":{"total":0.25}}})),
            e(json!({"type":"usage","id":"i","usage":"weird"})),
            e(
                json!({"type":"message","id":"j","message":{"role":"assistant","content":null,"usage":{"input":"NaN"}}}),
            ),
        ];
        let t = SessionTotals::of(&entries);
        assert_eq!(
            t,
            SessionTotals {
                total_messages: 6,
                user_messages: 1,
                assistant_messages: 2,
                tool_calls: 2,
                tool_results: 1,
                input: 11,
                output: 12,
                cache_read: 2,
                cache_write: 1,
                cost: 0.75,
            }
        );
        assert_eq!(t.total_tokens(), 26);
    }
}
