//! pi's Anthropic message threads (`message-threads-2026-08-12`): a session's first request
//! creates a thread (`"thread":{"type":"create"}`); after a clean reply the next request of the
//! session that builds on the same settings and messages continues it, sending only the new
//! messages and neither `system` nor `tools` (`"thread":{"type":"continue",
//! "previous_message_id":…}`). Each reply is continued at most once. A rejection about the
//! thread is sent again in full once: as a new thread, or without `thread` when the endpoint
//! cannot use threads (which turns threads off for the session).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use super::*;

/// Rejections of a `continue` that a new thread fixes.
const NEW_THREAD_ERRORS: &[&str] = &[
    "thread_not_found",
    "thread_already_continued",
    "thread_continue_in_flight",
    "thread_fingerprint_mismatch",
];
const MAX_SESSIONS: usize = 10_000;

/// Where a session's next request can continue, or off after the endpoint rejected threads.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ThreadState {
    Off,
    At {
        prefix_count: usize,
        prefix_hash: u64,
        reply_id: String,
    },
}

/// Per session: (last update, state). The least recently updated is dropped past the cap.
type Sessions = HashMap<String, (u64, ThreadState)>;
static SESSIONS: Mutex<Option<(u64, Sessions)>> = Mutex::new(None);

fn with_sessions<T>(f: impl FnOnce(&mut u64, &mut Sessions) -> T) -> T {
    let mut guard = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    let (clock, sessions) = guard.get_or_insert_with(|| (0, HashMap::new()));
    f(clock, sessions)
}

pub(super) fn set_thread_state(session_id: &str, state: ThreadState) {
    with_sessions(|clock, sessions| {
        *clock += 1;
        sessions.insert(session_id.to_owned(), (*clock, state));
        if sessions.len() > MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                sessions.remove(&k);
            }
        }
    })
}

pub(super) fn forget_session(session_id: &str) {
    with_sessions(|_, sessions| sessions.remove(session_id));
}

/// Messages normalized as pi hashes them: cache markers dropped, string content as one text
/// block.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| match (k.as_str(), v) {
                    ("content", Value::String(s)) => {
                        (k.clone(), json!([{"type": "text", "text": s}]))
                    }
                    _ => (k.clone(), normalize(v)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// pi's `hashThreadPrefix`: the fixed settings as sent (endpoint, model, system, tools,
/// thinking, effort, tool choice, betas, fallbacks) and the normalized messages.
pub(super) fn hash_prefix(
    model: &Model,
    body: &Value,
    betas: &[String],
    messages: &[Value],
) -> u64 {
    let field = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    let settings = json!([
        model.provider,
        model.base_url,
        field("model"),
        field("system"),
        field("tools"),
        field("thinking"),
        field("output_config"),
        field("tool_choice"),
        betas,
        field("fallbacks"),
    ]);
    let conversation = normalize(&Value::Array(messages.to_vec()));
    let mut h = std::collections::hash_map::DefaultHasher::new();
    settings.to_string().hash(&mut h);
    conversation.to_string().hash(&mut h);
    h.finish()
}

/// A thread request of a session: the full body (without `thread`) and what was sent.
#[derive(Clone, Debug)]
pub(super) struct ThreadRequest {
    pub session_id: String,
    pub params: Value,
    pub betas: Vec<String>,
}

fn with_thread(params: &Value, thread: Value) -> Value {
    let mut body = params.clone();
    if let Some(o) = body.as_object_mut() {
        o.insert("thread".into(), thread);
    }
    body
}

/// The body of a new thread.
pub(super) fn create_body(params: &Value) -> Value {
    with_thread(params, json!({"type": "create"}))
}

/// pi's `prepareThreadRequest`: `None` when threads are off for the session (send `params`
/// as they are), else the thread request and its body.
pub(super) fn prepare(
    model: &Model,
    session_id: &str,
    params: &Value,
    betas: &[String],
) -> Option<(ThreadRequest, Value)> {
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // Each reply can be continued once: a continued state is removed.
    let continued = with_sessions(|_, sessions| match sessions.get(session_id) {
        Some((_, ThreadState::Off)) => Err(()),
        Some((
            _,
            ThreadState::At {
                prefix_count,
                prefix_hash,
                reply_id,
            },
        )) if messages.len() > *prefix_count
            && hash_prefix(model, params, betas, &messages[..*prefix_count]) == *prefix_hash =>
        {
            let at = (*prefix_count, reply_id.clone());
            sessions.remove(session_id);
            Ok(Some(at))
        }
        _ => Ok(None),
    });
    let request = || ThreadRequest {
        session_id: session_id.to_owned(),
        params: params.clone(),
        betas: betas.to_vec(),
    };
    match continued {
        Err(()) => None,
        Ok(Some((prefix_count, reply_id))) => {
            let mut body = Map::new();
            for (k, v) in params.as_object().into_iter().flatten() {
                match k.as_str() {
                    "system" | "tools" => {}
                    "messages" => {
                        body.insert(k.clone(), Value::Array(messages[prefix_count..].to_vec()));
                    }
                    _ => {
                        body.insert(k.clone(), v.clone());
                    }
                }
            }
            body.insert(
                "thread".into(),
                json!({"type": "continue", "previous_message_id": reply_id}),
            );
            Some((request(), Value::Object(body)))
        }
        Ok(None) => Some((request(), create_body(params))),
    }
}

/// The `error_code` Anthropic puts in `error.details` of thread rejections.
fn thread_error_code(body: &str) -> Option<String> {
    parse_error_body(body)?
        .get("error")?
        .get("details")?
        .get("error_code")?
        .as_str()
        .map(str::to_owned)
}

/// What to do about a rejected thread request (pi's `sendThreadRequest`).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ThreadFallback {
    /// Send the request again as a new thread.
    NewThread { reason: String },
    /// Send the request without `thread`; threads go off for the session once it succeeds.
    NoThread { reason: String },
}

pub(super) fn fallback_for(status: u16, body: &str, message: &str) -> Option<ThreadFallback> {
    let code = thread_error_code(body);
    if let Some(c) = &code {
        if NEW_THREAD_ERRORS.contains(&c.as_str()) {
            return Some(ThreadFallback::NewThread { reason: c.clone() });
        }
    }
    let unsupported = code.as_deref() == Some("thread_unsupported_request")
        || (code.is_none() && status == 400 && message.contains("thread"));
    unsupported.then(|| ThreadFallback::NoThread {
        reason: code.unwrap_or_else(|| status.to_string()),
    })
}

/// pi's `recordThreadReply`: after a clean reply to a thread request (not from a fallback
/// model, which the server does not store), where the session's next request can continue.
pub(super) fn record_reply(
    model: &Model,
    thread: &ThreadRequest,
    reply: &AssistantMessage,
    oauth: bool,
) {
    let Some(reply_id) = reply.response_id.clone() else {
        return;
    };
    if reply.response_model.is_some() {
        return;
    }
    let converted = convert_messages(
        &[LlmMessage::Assistant(reply.clone())],
        oauth,
        None,
        AnthropicCompat::of(model).allow_empty_signature,
        None,
        None,
    );
    let mut prefix = thread
        .params
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    prefix.extend(
        converted
            .messages
            .into_iter()
            .filter(|m| m["role"] == "assistant"),
    );
    set_thread_state(
        &thread.session_id,
        ThreadState::At {
            prefix_count: prefix.len(),
            prefix_hash: hash_prefix(model, &thread.params, &thread.betas, &prefix),
            reply_id,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    fn params(messages: Value) -> Value {
        json!({"model": "m", "messages": messages, "max_tokens": 10, "stream": true,
               "system": [{"type": "text", "text": "S"}], "tools": [{"name": "t"}],
               "thinking": {"type": "adaptive"}})
    }

    /// Create, then continue after a recorded reply (only the new messages, no system or
    /// tools, `thread` last), once; a changed setting or history creates a new thread; off
    /// sends no thread.
    #[test]
    fn create_continue_once_and_off() {
        let model = mock_sonnet();
        let betas = vec!["b".to_string()];
        let sid = "threads-unit-a";
        let first = params(
            json!([{"role": "user", "content": [{"type": "text", "text": "hi",
            "cache_control": {"type": "ephemeral"}}]}]),
        );
        let (thread, body) = prepare(&model, sid, &first, &betas).unwrap();
        assert_eq!(body["thread"], json!({"type": "create"}));
        let reply = AssistantMessage {
            content: vec![ContentBlock::text("hello")],
            response_id: Some("msg_1".into()),
            ..AssistantMessage::default()
        };
        record_reply(&model, &thread, &reply, false);

        // The same history (the cache marker moved, string content): continued.
        let next = params(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": [{"type": "text", "text": "more"}]}
        ]));
        let (_, body) = prepare(&model, sid, &next, &betas).unwrap();
        assert_eq!(
            body,
            json!({"model": "m",
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "more"}]}],
                   "max_tokens": 10, "stream": true, "thinking": {"type": "adaptive"},
                   "thread": {"type": "continue", "previous_message_id": "msg_1"}})
        );
        // Each reply is continued once.
        let (_, body) = prepare(&model, sid, &next, &betas).unwrap();
        assert_eq!(body["thread"], json!({"type": "create"}));

        // Another beta list (a fixed setting) does not continue.
        let (thread, _) = prepare(&model, sid, &first, &betas).unwrap();
        record_reply(&model, &thread, &reply, false);
        let (_, body) = prepare(&model, sid, &next, &[]).unwrap();
        assert_eq!(body["thread"], json!({"type": "create"}));
        // (The recorded reply is still there for the unchanged settings.)
        let (_, body) = prepare(&model, sid, &next, &betas).unwrap();
        assert_eq!(body["thread"]["type"], "continue");

        // A reply from a fallback model is not recorded; off sends no thread.
        let fallback = AssistantMessage {
            response_model: Some("other".into()),
            ..reply.clone()
        };
        record_reply(&model, &thread, &fallback, false);
        let (_, body) = prepare(&model, sid, &next, &betas).unwrap();
        assert_eq!(body["thread"], json!({"type": "create"}));
        set_thread_state(sid, ThreadState::Off);
        assert!(prepare(&model, sid, &next, &betas).is_none());
        // The session's cleanup forgets it.
        cleanup_session_resources(sid);
        assert!(prepare(&model, sid, &next, &betas).is_some());
    }

    #[test]
    fn fallbacks_for_rejections() {
        let coded = |code: &str| {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "x",
                   "details": {"error_code": code}}})
            .to_string()
        };
        assert_eq!(
            fallback_for(404, &coded("thread_not_found"), "404 x"),
            Some(ThreadFallback::NewThread {
                reason: "thread_not_found".into()
            })
        );
        assert_eq!(
            fallback_for(400, &coded("thread_unsupported_request"), "400 x"),
            Some(ThreadFallback::NoThread {
                reason: "thread_unsupported_request".into()
            })
        );
        assert_eq!(
            fallback_for(400, "{}", "400 thread: Extra inputs are not permitted"),
            Some(ThreadFallback::NoThread {
                reason: "400".into()
            })
        );
        assert_eq!(fallback_for(400, &coded("other"), "400 thread"), None);
        assert_eq!(fallback_for(429, "{}", "429 thread"), None);
        assert_eq!(fallback_for(400, "{}", "400 Too many strict tools ("), None);
    }
}
