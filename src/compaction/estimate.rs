//! Token estimates (`agent-loop.md` §7.1): about four characters a token.

use serde_json::Value;

/// Characters counted for one image block.
const IMAGE_CHARS: usize = 4800;

fn text_chars(content: &Value) -> usize {
    match content {
        Value::String(s) => s.chars().count(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b
                    .get("text")
                    .and_then(Value::as_str)
                    .map_or(0, |t| t.chars().count()),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

fn str_chars(v: Option<&Value>) -> usize {
    v.and_then(Value::as_str).map_or(0, |s| s.chars().count())
}

/// `ceil(chars / 4)` for one message.
pub fn estimate_tokens(msg: &Value) -> u64 {
    let chars = match msg.get("role").and_then(Value::as_str) {
        Some("user") | Some("custom") | Some("toolResult") => {
            msg.get("content").map_or(0, text_chars)
        }
        Some("assistant") => msg
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
                                    .map_or(0, |a| a.to_string().chars().count())
                        }
                        _ => 0,
                    })
                    .sum()
            }),
        Some("bashExecution") => str_chars(msg.get("command")) + str_chars(msg.get("output")),
        Some("compactionSummary") | Some("branchSummary") => str_chars(msg.get("summary")),
        Some("system") => {
            let sections = msg
                .get("sections")
                .and_then(Value::as_object)
                .map_or(0, |s| s.values().map(|v| str_chars(Some(v))).sum());
            str_chars(msg.get("content"))
                + sections
                + msg
                    .get("toolsAdded")
                    .map_or(0, |t| t.to_string().chars().count())
        }
        _ => 0,
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

fn is_usable_assistant(msg: &Value) -> bool {
    msg.get("role").and_then(Value::as_str) == Some("assistant")
        && !matches!(
            msg.get("stopReason").and_then(Value::as_str),
            Some("aborted") | Some("error")
        )
        && msg
            .get("usage")
            .is_some_and(|u| usage_context_tokens(u) > 0)
}

/// The context estimate of a message list: the last usable assistant usage plus estimates of the
/// messages after it, or the sum of all estimates when no usage is known.
pub fn estimate_context_tokens(messages: &[Value]) -> u64 {
    match messages.iter().rposition(is_usable_assistant) {
        Some(i) => {
            let base = messages[i].get("usage").map_or(0, usage_context_tokens);
            base + messages[i + 1..].iter().map(estimate_tokens).sum::<u64>()
        }
        None => messages.iter().map(estimate_tokens).sum(),
    }
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
        let msgs = vec![
            json!({"role":"user","content":"x"}),
            json!({"role":"assistant","content":[],"stopReason":"stop","usage":{"totalTokens":100}}),
            json!({"role":"user","content":"12345678"}),
        ];
        assert_eq!(estimate_context_tokens(&msgs), 102);
    }
}
