//! pi's strict-tool limits (`strict-tool-limits.js`): Claude rejects a request whose strict
//! tools exceed its limits (20 strict tools, 16 optional or union-typed parameters across
//! them). The request is then sent once more with the tools that only prefer strict sampling
//! sent non-strict, and the session is remembered so its later requests start that way (the
//! tool set rarely changes, and switching back would miss the prompt cache).

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

const STRICT_TOOL_LIMIT_ERROR_MESSAGES: &[&str] = &[
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
];
/// At most this many sessions are remembered (the oldest is dropped first).
const MAX_SESSIONS: usize = 10_000;

#[derive(Default)]
struct Sessions {
    set: HashSet<String>,
    order: VecDeque<String>,
}

static SESSIONS: Mutex<Option<Sessions>> = Mutex::new(None);

/// Whether a provider error message says the request's strict tools exceed Claude's limits.
pub(super) fn is_strict_tool_limit_error_message(message: &str) -> bool {
    STRICT_TOOL_LIMIT_ERROR_MESSAGES
        .iter()
        .any(|m| message.contains(m))
}

/// Records that a session's strict tools exceeded the limits; nothing without a session.
pub(super) fn mark_strict_tool_limits_exceeded(session_id: Option<&str>) {
    let Some(id) = session_id else { return };
    let mut guard = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    let sessions = guard.get_or_insert_with(Sessions::default);
    if sessions.set.insert(id.to_owned()) {
        sessions.order.push_back(id.to_owned());
    }
    if sessions.set.len() > MAX_SESSIONS {
        if let Some(oldest) = sessions.order.pop_front() {
            sessions.set.remove(&oldest);
        }
    }
}

/// Whether an earlier request of this session had its strict tools rejected for the limits.
pub(super) fn has_exceeded_strict_tool_limits(session_id: Option<&str>) -> bool {
    let Some(id) = session_id else { return false };
    let guard = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().is_some_and(|s| s.set.contains(id))
}

pub(super) fn forget_session(session_id: &str) {
    let mut guard = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(sessions) = guard.as_mut() {
        if sessions.set.remove(session_id) {
            sessions.order.retain(|s| s != session_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_messages_and_sessions() {
        assert!(is_strict_tool_limit_error_message(
            "400 {\"message\":\"Too many strict tools (21 > 20)\"}"
        ));
        assert!(!is_strict_tool_limit_error_message("400 bad thing"));
        assert!(!has_exceeded_strict_tool_limits(Some("strict-limits-a")));
        mark_strict_tool_limits_exceeded(None);
        mark_strict_tool_limits_exceeded(Some("strict-limits-a"));
        assert!(has_exceeded_strict_tool_limits(Some("strict-limits-a")));
        assert!(!has_exceeded_strict_tool_limits(Some("strict-limits-b")));
        assert!(!has_exceeded_strict_tool_limits(None));
        forget_session("strict-limits-a");
        assert!(!has_exceeded_strict_tool_limits(Some("strict-limits-a")));
    }
}
