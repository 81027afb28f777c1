//! How big the context is now: the threshold checks and `get_session_stats.contextUsage`.

use serde_json::Value;

use super::estimate::{
    current_system_message, estimate_context, estimate_tokens, is_usable_assistant,
    usage_context_tokens,
};
use crate::llm::Role;
use crate::session::messages::ContextMessages;
use crate::session::projection::{context_edits, projected_entries};
use crate::session::{Entry, EntryKind, SessionManager};

/// The entry of the branch holding the assistant message stamped `timestamp` (searched from
/// the end; the message is normally one of the last).
pub fn assistant_entry<'a>(branch: &[&'a Entry], timestamp: u64) -> Option<&'a Entry> {
    branch.iter().rev().copied().find(|e| {
        e.role() == Some(&Role::Assistant)
            && e.get("message")
                .and_then(|m| m.get("timestamp").and_then(Value::as_u64))
                == Some(timestamp)
    })
}

/// pi's `estimateProjectedContextTokens` for the active branch whose projected messages are
/// `messages` (the agent's context): the last usage plus what follows it when no context edit
/// or compaction came after that usage, else a full estimate (the current system message once,
/// every other message). Only the few entries after the last usage are parsed.
pub fn context_tokens(branch: &[&Entry], messages: &[Value]) -> u64 {
    let estimate = estimate_context(messages);
    if let Some(i) = estimate.last_usage_index {
        let ts = messages[i].get("timestamp").and_then(Value::as_u64);
        let usage_index = ts
            .and_then(|ts| assistant_entry(branch, ts))
            .and_then(|e| branch.iter().position(|b| std::ptr::eq(*b, e)));
        let invalidating = branch
            .iter()
            .rposition(|e| matches!(e.kind(), EntryKind::ContextEdit | EntryKind::Compaction));
        match (usage_index, invalidating) {
            (Some(u), Some(inv)) if u > inv => return estimate.tokens,
            (Some(_), None) => return estimate.tokens,
            _ => {}
        }
    }
    full_estimate(messages)
}

/// The estimate without any usage: the replayed system message once plus every other message.
pub fn full_estimate(messages: &[Value]) -> u64 {
    let system = current_system_message(messages, None);
    system.as_ref().map_or(0, estimate_tokens)
        + messages
            .iter()
            .filter(|m| Role::of(m) != Some(Role::System))
            .map(estimate_tokens)
            .sum::<u64>()
}

/// The latest compaction of the branch, as an index.
pub fn latest_compaction(branch: &[&Entry]) -> Option<usize> {
    branch
        .iter()
        .rposition(|e| e.kind() == EntryKind::Compaction)
}

/// `contextUsage.tokens` (pi's `getContextUsage`): `None` after a compaction until an assistant
/// reply with usage follows it (the size is unknown until then).
pub fn context_usage_tokens(branch: &[&Entry], messages: &[Value]) -> Option<u64> {
    if let Some(ci) = latest_compaction(branch) {
        let projected = projected_entries(branch);
        let edits = context_edits(&projected);
        let has_usage_after = branch[ci + 1..].iter().any(|e| {
            e.role() == Some(&Role::Assistant)
                && !matches!(edits.get(e.id()), Some(Value::Null))
                && e.message().is_some_and(|m| is_usable_assistant(&m))
        });
        if !has_usage_after {
            return None;
        }
    }
    Some(context_tokens(branch, messages))
}

/// [`context_usage_tokens`] (and [`context_tokens`], which agrees with it whenever this answers)
/// of the active branch of `session` whose context is `messages`, answered from the end of both: the last usable assistant usage plus the estimates of the
/// messages after it, when no context edit or compaction comes after that usage on the branch.
/// `None` when that does not apply (no usage within the last [`QUICK_SCAN`] messages, an edit or
/// compaction after it, or its entry not on the branch); the caller then computes the full
/// answer. Costs the messages and entries after the last reply, not the session's length, so
/// `get_session_stats` stays instant on any session.
pub fn context_usage_tokens_quick(
    session: &SessionManager,
    messages: &ContextMessages,
) -> Option<u64> {
    let mut tail = 0u64;
    let mut usage = None;
    for m in messages.iter().rev().take(QUICK_SCAN) {
        if is_usable_assistant(&m) {
            usage = Some(m.into_owned());
            break;
        }
        tail += estimate_tokens(&m);
    }
    let usage = usage?;
    let ts = usage.get("timestamp").and_then(Value::as_u64)?;
    for e in session.walk_back() {
        if matches!(e.kind(), EntryKind::ContextEdit | EntryKind::Compaction) {
            return None;
        }
        if e.role() == Some(&Role::Assistant)
            && e.get("message")
                .and_then(|m| m.get("timestamp").and_then(Value::as_u64))
                == Some(ts)
        {
            return Some(usage.get("usage").map_or(0, usage_context_tokens) + tail);
        }
    }
    None
}

/// How many messages from the end [`context_usage_tokens_quick`] reads looking for a usage.
const QUICK_SCAN: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TS: &str = "2026-01-01T00:00:00.000Z";

    fn e(v: Value) -> Entry {
        Entry::from_value(v).unwrap()
    }

    #[test]
    fn usage_before_an_edit_is_not_trusted() {
        let es = [
            e(
                json!({"type":"message","id":"u","parentId":null,"timestamp":TS,
                "message":{"role":"user","content":"12345678","timestamp":1}}),
            ),
            e(
                json!({"type":"message","id":"a","parentId":"u","timestamp":TS,
                "message":{"role":"assistant","content":[{"type":"text","text":"abcd"}],"stopReason":"stop",
                "usage":{"totalTokens":500},"timestamp":2}}),
            ),
            e(
                json!({"type":"message","id":"u2","parentId":"a","timestamp":TS,
                "message":{"role":"user","content":"1234","timestamp":3}}),
            ),
        ];
        let branch: Vec<&Entry> = es.iter().collect();
        let messages: Vec<Value> = es.iter().map(|x| x.message().unwrap()).collect();
        assert_eq!(context_tokens(&branch, &messages), 501);
        assert_eq!(context_usage_tokens(&branch, &messages), Some(501));

        let mut es2 = es.to_vec();
        es2.push(e(
            json!({"type":"context_edit","id":"x","parentId":"u2","timestamp":TS,
            "targetId":"u2","replacement":null}),
        ));
        let branch: Vec<&Entry> = es2.iter().collect();
        // u (2) + a (1); u2 hidden.
        assert_eq!(context_tokens(&branch, &messages[..2]), 3);

        let mut es3 = es.to_vec();
        es3.push(e(
            json!({"type":"compaction","id":"c","parentId":"u2","timestamp":TS,
            "summary":"S","firstKeptEntryId":"u2","tokensBefore":501}),
        ));
        let branch: Vec<&Entry> = es3.iter().collect();
        assert_eq!(context_usage_tokens(&branch, &[]), None);
    }

    /// The quick answer, whenever it gives one, is the full computation's; and it gives one in
    /// the common case (the branch ends with replies that report usage).
    #[test]
    fn quick_context_usage_agrees_with_the_full_one() {
        use crate::session::context::build_messages;
        use crate::test_rng::Rng;
        let mut rng = Rng::new(11, 0x70c);
        let mut answered = 0;
        for round in 0..300 {
            let mut sm = SessionManager::in_memory(std::path::Path::new("/w"));
            let mut ids: Vec<String> = Vec::new();
            for t in 0..rng.below(12) + 1 {
                let ts = (round * 100 + t) as u64 + 1;
                let text = "x".repeat(rng.below(40));
                let msg = match rng.below(5) {
                    0 | 1 => json!({"role":"user","content":text,"timestamp":ts}),
                    2 => json!({"role":"toolResult","toolCallId":"c","toolName":"bash",
                        "content":[{"type":"text","text":text}],"isError":false,"timestamp":ts}),
                    _ => {
                        let stop = ["stop", "stop", "aborted", "error"][rng.below(4)];
                        let total = [0, 120, 900][rng.below(3)];
                        json!({"role":"assistant","content":[{"type":"text","text":text}],
                            "provider":"p","model":"m","stopReason":stop,
                            "usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,
                                "totalTokens":total},"timestamp":ts})
                    }
                };
                ids.push(sm.append_message(msg).unwrap().id().to_string());
                if rng.chance(9) {
                    let target = rng.pick(&ids).clone();
                    let _ = sm.append_context_edit(&target, None);
                }
                if rng.chance(15) {
                    let keep = rng.pick(&ids).clone();
                    sm.append_compaction("sum", Some(&keep), 10, None, None, false, None)
                        .unwrap();
                }
            }
            let branch = sm.branch();
            let messages = build_messages(&branch);
            let all = messages.to_vec();
            let full = context_usage_tokens(&branch, &all);
            if let Some(quick) = context_usage_tokens_quick(&sm, &messages) {
                answered += 1;
                assert_eq!(Some(quick), full, "round {round}");
                assert_eq!(quick, context_tokens(&branch, &all), "round {round}");
            }
        }
        assert!(answered > 60, "{answered}");
    }
}
