//! Where to cut (`agent-loop.md` §7.4 step 2, pi's `prepareCompaction`): keep about
//! `keepRecentTokens` of the newest context, summarize what comes before (and, when the cut
//! falls inside a turn, that turn's beginning separately).

use std::collections::HashSet;

use serde_json::Value;

use super::estimate::{estimate_projected_context_tokens, estimate_tokens};
use super::serialize::FileOps;
use crate::llm::Role;
use crate::session::projection::{contributes, project, Projected};
use crate::session::{Entry, EntryKind};

/// Why there is nothing to compact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unprepared {
    /// The branch's last entry is a compaction.
    AlreadyCompacted,
    /// Everything would be kept.
    NothingToCompact,
}

impl std::fmt::Display for Unprepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unprepared::AlreadyCompacted => "Already compacted",
            Unprepared::NothingToCompact => "Nothing to compact (session too small)",
        })
    }
}

/// What a compaction summarizes and keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Preparation {
    pub first_kept_entry_id: String,
    /// The history before the cut (or before the split turn's start).
    pub messages_to_summarize: Vec<Value>,
    /// The beginning of the turn the cut falls into (empty unless `is_split_turn`).
    pub turn_prefix_messages: Vec<Value>,
    pub is_split_turn: bool,
    pub tokens_before: u64,
    pub previous_summary: Option<String>,
    pub file_ops: FileOps,
}

/// The cut in projected-entry indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutPoint {
    pub first_kept: usize,
    pub turn_start: Option<usize>,
    pub is_split_turn: bool,
}

/// A message the kept part may start with (never a tool result: it must follow its call).
fn is_cut_point_message(m: &Value) -> bool {
    Role::of(m).is_some_and(|r| r == Role::Assistant || starts_turn(&r))
}

/// A message that starts a turn.
fn is_turn_start_message(m: &Value) -> bool {
    Role::of(m).is_some_and(|r| starts_turn(&r))
}

/// Whether a message of `role` starts a turn: input from the user or on the user's side.
fn starts_turn(role: &Role) -> bool {
    match role {
        Role::User
        | Role::BashExecution
        | Role::Custom
        | Role::BranchSummary
        | Role::CompactionSummary => true,
        Role::System | Role::Assistant | Role::ToolResult | Role::Other(_) => false,
    }
}

fn is_turn_start(p: &Projected<'_>) -> bool {
    p.entry.kind() != EntryKind::Compaction && p.messages.iter().any(is_turn_start_message)
}

/// pi's `findProjectedCutPoint` over `entries[start..end]`.
pub fn find_cut_point(
    entries: &[Projected<'_>],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| {
            entries[i].entry.kind() != EntryKind::Compaction
                && entries[i].messages.iter().any(is_cut_point_message)
        })
        .collect();
    let Some(&first_cut) = cut_points.first() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
            is_split_turn: false,
        };
    };
    let mut accumulated = 0u64;
    let mut exceeded = false;
    let mut cut = first_cut;
    for i in (start..end).rev() {
        let tokens: u64 = entries[i].messages.iter().map(estimate_tokens).sum();
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            exceeded = true;
            cut = cut_points
                .iter()
                .copied()
                .find(|&c| c >= i)
                .unwrap_or(cut_points[cut_points.len() - 1]);
            break;
        }
    }

    // A failed attempt hidden for recovery (and its hiding edits) after the last visible input
    // belongs to the kept part: advance past that input only for such a closed suffix.
    let suffix = &entries[(cut + 1).min(end)..end];
    let visible =
        |p: &Projected<'_>| p.entry.kind() != EntryKind::ContextEdit && contributes(p.entry);
    let omitted = |p: &Projected<'_>| visible(p) && p.messages.is_empty();
    let omitted_ids: HashSet<&str> = suffix
        .iter()
        .filter(|p| omitted(p))
        .map(|p| p.entry.id())
        .collect();
    let external_replacement = suffix.iter().any(|p| {
        p.entry.kind() == EntryKind::ContextEdit
            && !matches!(p.entry.get("replacement"), Some(Value::Null))
            && !p
                .entry
                .get_str("targetId")
                .is_some_and(|t| omitted_ids.contains(t.as_str()))
    });
    let recovery_suffix = exceeded
        && !external_replacement
        && suffix
            .iter()
            .any(|p| p.entry.role() == Some(&Role::Assistant) && omitted(p))
        && suffix
            .iter()
            .all(|p| p.entry.kind() != EntryKind::Compaction && (!visible(p) || omitted(p)));
    if recovery_suffix {
        cut += 1;
    }

    // Entries that add nothing to the context (model changes…) just before the cut stay with it.
    while cut > start {
        let prev = &entries[cut - 1];
        if prev.entry.kind() == EntryKind::Compaction || !prev.messages.is_empty() {
            break;
        }
        cut -= 1;
    }

    let starts_turn = is_turn_start(&entries[cut]);
    let turn_start = if starts_turn {
        None
    } else {
        (start..=cut).rev().find(|&i| is_turn_start(&entries[i]))
    };
    CutPoint {
        first_kept: cut,
        turn_start,
        is_split_turn: !starts_turn && turn_start.is_some(),
    }
}

/// Messages of projected entries for a summary: compactions and system messages left out.
fn summarizable(entries: &[Projected<'_>]) -> Vec<Value> {
    entries
        .iter()
        .filter(|p| p.entry.kind() != EntryKind::Compaction)
        .flat_map(|p| p.messages.iter())
        .filter(|m| Role::of(m) != Some(Role::System))
        .cloned()
        .collect()
}

/// pi's `prepareCompaction` for the active branch.
pub fn prepare(branch: &[&Entry], keep_recent_tokens: u64) -> Result<Preparation, Unprepared> {
    if branch
        .last()
        .is_some_and(|e| e.kind() == EntryKind::Compaction)
    {
        return Err(Unprepared::AlreadyCompacted);
    }
    let projection = project(branch);
    let prev_compaction = projection
        .iter()
        .position(|p| p.entry.kind() == EntryKind::Compaction && !p.messages.is_empty());
    let (previous_summary, start) = match prev_compaction {
        Some(i) => (projection[i].entry.get_str("summary"), i + 1),
        None => (None, 0),
    };
    let end = projection.len();
    let tokens_before = estimate_projected_context_tokens(&projection, branch);
    let cut = find_cut_point(&projection, start, end, keep_recent_tokens);
    let Some(first_kept) = projection.get(cut.first_kept).map(|p| p.entry) else {
        return Err(Unprepared::NothingToCompact);
    };
    if !first_kept.has_id() {
        return Err(Unprepared::NothingToCompact);
    }
    let history_end = match (cut.is_split_turn, cut.turn_start) {
        (true, Some(ts)) => ts,
        _ => cut.first_kept,
    };
    let messages_to_summarize = summarizable(&projection[start..history_end]);
    let turn_prefix_messages = match (cut.is_split_turn, cut.turn_start) {
        (true, Some(ts)) => summarizable(&projection[ts..cut.first_kept]),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Err(Unprepared::NothingToCompact);
    }
    let mut file_ops = FileOps::default();
    if let Some(i) = prev_compaction {
        let c = projection[i].entry;
        let from_hook = c
            .get("fromHook")
            .is_some_and(|v| crate::js::value::js_truthy(&v));
        if !from_hook {
            if let Some(details) = c.get("details").filter(|d| d.is_object()) {
                file_ops.add_details(&details);
            }
        }
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(m);
    }
    Ok(Preparation {
        first_kept_entry_id: first_kept.id().to_string(),
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TS: &str = "2026-01-01T00:00:00.000Z";

    /// A chain of entries from `(id, kind-or-role, payload)`.
    fn chain(items: &[(&str, Value)]) -> Vec<Entry> {
        let mut parent: Option<String> = None;
        let mut out = Vec::new();
        for (id, v) in items {
            let mut m = v.as_object().cloned().unwrap();
            let mut full = serde_json::Map::new();
            full.insert("type".into(), m.remove("type").unwrap_or(json!("message")));
            full.insert("id".into(), json!(id));
            full.insert(
                "parentId".into(),
                parent.clone().map_or(Value::Null, Value::from),
            );
            full.insert("timestamp".into(), json!(TS));
            full.extend(m);
            out.push(Entry::from_map(full));
            parent = Some(id.to_string());
        }
        out
    }

    fn user(text: &str) -> Value {
        json!({"message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}})
    }

    fn assistant(text: &str, total: u64) -> Value {
        json!({"message": {"role": "assistant", "content": [{"type": "text", "text": text}],
            "usage": {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total},
            "stopReason": "stop", "timestamp": 2}})
    }

    fn tool_call(id: &str, path: &str) -> Value {
        json!({"message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": id, "name": "read", "arguments": {"path": path}}],
            "usage": {"totalTokens": 10}, "stopReason": "toolUse", "timestamp": 2}})
    }

    fn tool_result(id: &str, text: &str) -> Value {
        json!({"message": {"role": "toolResult", "toolCallId": id, "toolName": "read",
            "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3}})
    }

    fn refs(es: &[Entry]) -> Vec<&Entry> {
        es.iter().collect()
    }

    #[test]
    fn cut_keeps_recent_turns_and_summarizes_the_rest() {
        let es = chain(&[
            (
                "m",
                json!({"type": "model_change", "provider": "p", "modelId": "x"}),
            ),
            ("u1", user("first question here")),
            ("a1", assistant("first answer", 100)),
            ("u2", user("second question here")),
            ("a2", assistant("second answer", 200)),
        ]);
        // Budget 5: walking back, a2 (4 tokens) then u2 (5) reaches it → cut at u2, a turn start.
        let p = prepare(&refs(&es), 5).unwrap();
        assert_eq!(p.first_kept_entry_id, "u2");
        assert!(!p.is_split_turn);
        assert_eq!(p.messages_to_summarize.len(), 2);
        assert!(p.turn_prefix_messages.is_empty());
        assert_eq!(p.tokens_before, 200);
        assert_eq!(p.previous_summary, None);

        // Budget 1: the last assistant alone reaches it → cut inside the last turn.
        let p = prepare(&refs(&es), 1).unwrap();
        assert_eq!(p.first_kept_entry_id, "a2");
        assert!(p.is_split_turn);
        assert_eq!(p.messages_to_summarize.len(), 2);
        assert_eq!(
            p.turn_prefix_messages[0]["content"][0]["text"],
            "second question here"
        );

        // The default budget keeps everything: nothing to compact.
        assert_eq!(
            prepare(&refs(&es), 20_000),
            Err(Unprepared::NothingToCompact)
        );
        assert_eq!(prepare(&[], 1), Err(Unprepared::NothingToCompact));
    }

    #[test]
    fn never_cuts_at_a_tool_result() {
        let big = "y".repeat(400);
        let es = chain(&[
            ("u1", user("read the files")),
            ("a1", tool_call("t1", "a.rs")),
            ("r1", tool_result("t1", &big)),
            ("a2", assistant("done", 300)),
        ]);
        // a2 (1) + r1 (100) ≥ 50 at r1 → the next cut point at or after r1 is a2.
        let p = prepare(&refs(&es), 50).unwrap();
        assert_eq!(p.first_kept_entry_id, "a2");
        assert!(p.is_split_turn);
        assert!(p.messages_to_summarize.is_empty());
        assert_eq!(p.turn_prefix_messages.len(), 3);
        assert_eq!(p.file_ops.lists().0, ["a.rs"]);
        // Trailing tool results bigger than the budget: keep their call instead.
        let es2 = chain(&[
            ("u1", user("read the files")),
            ("a1", tool_call("t1", "a.rs")),
            ("r1", tool_result("t1", &big)),
        ]);
        let p = prepare(&refs(&es2), 50).unwrap();
        assert_eq!(p.first_kept_entry_id, "a1");
    }

    #[test]
    fn metadata_before_the_cut_is_kept_and_compactions_chain() {
        let es = chain(&[
            ("u1", user("first question here")),
            ("a1", assistant("first answer", 100)),
            (
                "t",
                json!({"type": "thinking_level_change", "thinkingLevel": "high"}),
            ),
            ("u2", user("second question here")),
            ("a2", assistant("second answer", 200)),
        ]);
        let p = prepare(&refs(&es), 5).unwrap();
        assert_eq!(p.first_kept_entry_id, "t");

        let mut es = es;
        es.extend(chain(&[(
            "c",
            json!({"type": "compaction", "summary": "S1", "firstKeptEntryId": "t", "tokensBefore": 200,
                   "details": {"readFiles": ["r.rs"], "modifiedFiles": []}, "fromHook": false}),
        )]));
        // Re-parent the compaction onto a2 (chain() starts a new root).
        let c = es.pop().unwrap().with_parent_id(Some("a2"));
        es.push(c);
        assert_eq!(prepare(&refs(&es), 1), Err(Unprepared::AlreadyCompacted));
        let more = chain(&[
            ("u3", user("third question here")),
            ("a3", assistant("third", 50)),
        ]);
        let mut more: Vec<Entry> = more;
        more[0] = more[0].with_parent_id(Some("c"));
        es.extend(more);
        let p = prepare(&refs(&es), 5).unwrap();
        assert_eq!(p.previous_summary.as_deref(), Some("S1"));
        assert_eq!(p.first_kept_entry_id, "u3");
        // Summarized: the kept part of the previous compaction (u2, a2), not its summary.
        let roles: Vec<Option<Role>> = p.messages_to_summarize.iter().map(Role::of).collect();
        assert_eq!(roles, [Some(Role::User), Some(Role::Assistant)]);
        assert_eq!(p.file_ops.lists().0, ["r.rs"]);
        assert_eq!(p.tokens_before, 50);
    }

    #[test]
    fn a_hidden_failed_attempt_after_the_last_input_is_kept() {
        let es = chain(&[
            ("u1", user("one")),
            ("a1", assistant("Reply one.", 1050)),
            ("u2", user("two")),
            (
                "e",
                json!({"message": {"role": "assistant", "content": [], "stopReason": "error",
                "errorMessage": "prompt is too long", "usage": {"totalTokens": 0}, "timestamp": 5}}),
            ),
            (
                "x",
                json!({"type": "context_edit", "targetId": "e", "replacement": null}),
            ),
        ]);
        let p = prepare(&refs(&es), 1).unwrap();
        // As pi: the cut moves past u2 onto the hidden attempt, splitting the turn at u2.
        assert_eq!(p.first_kept_entry_id, "e");
        assert!(p.is_split_turn);
        assert_eq!(p.messages_to_summarize.len(), 2);
        assert_eq!(p.turn_prefix_messages.len(), 1);
        // The usage of a1 predates the edit: tokens are estimated (1 + 3 + 1).
        assert_eq!(p.tokens_before, 5);
    }
}
