//! Event dispatch (`extensions.md` §A3–§A4, §B6): each subscribed unit in load order, its
//! result combined with pi's rules for that event (first block wins, patches and transforms
//! chain, `handled` and `cancel` stop). A failed handler is an `extension_error`, except where
//! pi blocks instead (`tool_call`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::host::{Extensions, Unit};
use super::process::Outcome;
use crate::cancel::CancelToken;

impl Extensions {
    /// The units subscribed to `event` (with whether they are awaited), in load order.
    pub(super) fn subscribers(&self, event: &str) -> Vec<(Arc<Unit>, bool)> {
        self.units
            .iter()
            .filter_map(|u| u.subscription(event).map(|a| (Arc::clone(u), a)))
            .collect()
    }

    /// Whether any unit subscribes to `event` (cheap: the hot path of every wire event).
    pub fn wants(&self, event: &str) -> bool {
        !self.units.is_empty() && self.units.iter().any(|u| u.subscription(event).is_some())
    }

    /// Sends `payload` (an event object with `type`) to one unit and waits; `None` when the
    /// unit is not awaited (a notification was sent) or not running.
    pub(super) fn send_event(
        &self,
        unit: &Unit,
        awaited: bool,
        payload: &Value,
        cancel: Option<&CancelToken>,
        timeout: Option<Duration>,
    ) -> Option<Result<Outcome, String>> {
        let proc = unit.alive_process()?;
        let mut fields = Map::new();
        fields.insert("ext".into(), unit.path.clone().into());
        fields.insert("event".into(), payload.clone());
        if !awaited {
            proc.notify("event", fields);
            return None;
        }
        let timeout = timeout.or(self.opts.handler_timeout);
        Some(
            self.wait(&proc, "event", fields, cancel, timeout, &mut |_| {})
                .map_err(|e| e.text(timeout)),
        )
    }

    /// A unit's successful outcome for `payload`; a failure (a throw, the process's end, a
    /// timeout) is reported as the event's `extension_error` and gives `None`, as does a unit
    /// that is not awaited or not running.
    pub(super) fn answered(
        &self,
        unit: &Unit,
        awaited: bool,
        payload: &Value,
        cancel: Option<&CancelToken>,
    ) -> Option<Outcome> {
        let event = payload
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match self.send_event(unit, awaited, payload, cancel, None)? {
            Err(e) => {
                self.error(&unit.path, event, e);
                None
            }
            Ok(o) if !o.ok => {
                self.error(&unit.path, event, o.error);
                None
            }
            Ok(o) => Some(o),
        }
    }

    /// An observed event (§A4's generic dispatch): every subscribed unit in load order; a
    /// failure is an `extension_error` and the next unit still runs. Returns each awaited
    /// unit's handler results (an array result is several handlers' results).
    pub fn emit(&self, payload: &Value, cancel: Option<&CancelToken>) -> Vec<Value> {
        self.emit_until(payload, cancel, None, |_| false)
    }

    pub(super) fn emit_until(
        &self,
        payload: &Value,
        cancel: Option<&CancelToken>,
        timeout: Option<Duration>,
        stop: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let Some(name) = payload.get("type").and_then(Value::as_str) else {
            return Vec::new();
        };
        let mut results = Vec::new();
        for (unit, awaited) in self.subscribers(name) {
            match self.send_event(&unit, awaited, payload, cancel, timeout) {
                None => {}
                Some(Err(e)) => self.error(&unit.path, name, e),
                Some(Ok(o)) if !o.ok => self.error(&unit.path, name, o.error),
                Some(Ok(o)) => {
                    for v in handler_values(o.value) {
                        let done = stop(&v);
                        results.push(v);
                        if done {
                            return results;
                        }
                    }
                }
            }
        }
        results
    }

    /// Like [`Extensions::emit`], stopping at the first result with a truthy `cancel`
    /// (`session_before_*`); the results so far, the cancelling one last.
    pub fn emit_until_cancel(&self, payload: &Value, cancel: Option<&CancelToken>) -> Vec<Value> {
        self.emit_until(payload, cancel, None, |v| {
            v.get("cancel").is_some_and(crate::js::value::js_truthy)
        })
    }

    /// A `session_before_*` event: true when a handler cancelled (§A4).
    pub fn emit_cancellable(&self, payload: &Value) -> bool {
        let results = self.emit_until(payload, None, None, |v| {
            v.get("cancel").is_some_and(crate::js::value::js_truthy)
        });
        results
            .last()
            .is_some_and(|v| v.get("cancel").is_some_and(crate::js::value::js_truthy))
    }

    /// `tool_call` (§A4, §B6, §B12): first block wins; `mutated.input` edits chain; a failed
    /// handler blocks with its message; a dead subscribed unit blocks every call.
    pub fn tool_call(&self, payload: &Value, cancel: Option<&CancelToken>) -> Gate {
        let mut payload = payload.clone();
        for (unit, awaited) in self.subscribers("tool_call") {
            if unit.alive_process().is_none() {
                return Gate::block(format!("Extension {} is not running", unit.path));
            }
            let outcome = match self.send_event(&unit, awaited, &payload, cancel, None) {
                None => continue,
                Some(Err(e)) => return Gate::block(e),
                Some(Ok(o)) if !o.ok => return Gate::block(o.error),
                Some(Ok(o)) => o,
            };
            if let Some(input) = outcome.mutated.as_ref().and_then(|m| m.get("input")) {
                payload["input"] = input.clone();
            }
            for v in handler_values(outcome.value) {
                if v.get("block").is_some_and(crate::js::value::js_truthy) {
                    let reason = v
                        .get("reason")
                        .and_then(Value::as_str)
                        .filter(|r| !r.is_empty())
                        .unwrap_or("Tool execution was blocked");
                    return Gate::Block {
                        reason: reason.to_string(),
                        terminate: v.get("terminate") == Some(&Value::Bool(true)),
                    };
                }
            }
        }
        Gate::Allow(payload.get("input").cloned().unwrap_or(Value::Null))
    }

    /// `tool_result` (§A4): each unit sees the result as patched by the earlier ones. The
    /// payload holds `content`, `details`, `structuredContent?` and `isError`.
    pub fn tool_result(&self, payload: &Value, cancel: Option<&CancelToken>) -> ResultPatch {
        let mut payload = payload.clone();
        let mut patch = ResultPatch::default();
        for (unit, awaited) in self.subscribers("tool_result") {
            let Some(outcome) = self.answered(&unit, awaited, &payload, cancel) else {
                continue;
            };
            for v in handler_values(outcome.value) {
                let Value::Object(m) = v else { continue };
                if let Some(c) = m.get("content") {
                    patch.content = Some(c.clone());
                    payload["content"] = c.clone();
                    // pi rebuilds the result from the patch: new content without
                    // structuredContent drops the old one.
                    if !m.contains_key("structuredContent") {
                        patch.structured_content = Some(None);
                        if let Value::Object(p) = &mut payload {
                            p.remove("structuredContent");
                        }
                    }
                }
                if let Some(d) = m.get("details") {
                    patch.details = Some(d.clone());
                    payload["details"] = d.clone();
                }
                if let Some(s) = m.get("structuredContent") {
                    patch.structured_content = Some(Some(s.clone()));
                    payload["structuredContent"] = s.clone();
                }
                if let Some(e) = m.get("isError").and_then(Value::as_bool) {
                    patch.is_error = Some(e);
                    payload["isError"] = e.into();
                }
            }
        }
        patch
    }

    /// `message_end` (§A4): a handler may replace the message with one of the same role.
    pub fn message_end(&self, message: &Value, cancel: Option<&CancelToken>) -> Option<Value> {
        let role = message.get("role").cloned();
        let mut current: Option<Value> = None;
        for (unit, awaited) in self.subscribers("message_end") {
            let payload =
                json!({"type": "message_end", "message": current.as_ref().unwrap_or(message)});
            let Some(outcome) = self.answered(&unit, awaited, &payload, cancel) else {
                continue;
            };
            for v in handler_values(outcome.value) {
                let Some(m) = v.get("message") else { continue };
                if m.get("role").cloned() == role {
                    current = Some(m.clone());
                } else {
                    self.error(
                        &unit.path,
                        "message_end",
                        "message_end handlers must return a message with the same role".into(),
                    );
                }
            }
        }
        current
    }

    /// `input` (§A4, §A7.4): transforms chain, `handled` ends the dispatch. `images` are the
    /// prompt's image blocks.
    pub fn input(
        &self,
        text: &str,
        images: &[Value],
        source: &str,
        streaming_behavior: Option<&str>,
    ) -> InputOutcome {
        let mut text = text.to_string();
        let mut images = images.to_vec();
        for (unit, awaited) in self.subscribers("input") {
            let mut payload = json!({"type": "input", "text": text});
            if !images.is_empty() {
                payload["images"] = Value::Array(images.clone());
            }
            payload["source"] = source.into();
            if let Some(b) = streaming_behavior {
                payload["streamingBehavior"] = b.into();
            }
            let Some(outcome) = self.answered(&unit, awaited, &payload, None) else {
                continue;
            };
            for v in handler_values(outcome.value) {
                match v.get("action").and_then(Value::as_str) {
                    Some("handled") => return InputOutcome::Handled,
                    Some("transform") => {
                        if let Some(t) = v.get("text").and_then(Value::as_str) {
                            text = t.to_string();
                        }
                        if let Some(Value::Array(i)) = v.get("images") {
                            images = i.clone();
                        }
                    }
                    _ => {}
                }
            }
        }
        InputOutcome::Continue { text, images }
    }

    /// `before_agent_start` (§A4): the messages handlers inject (as `custom` messages after the
    /// user message) and the system prompt the last handler set for this run.
    pub fn before_agent_start(
        &self,
        payload: &Value,
        cancel: Option<&CancelToken>,
    ) -> (Vec<Value>, Option<String>) {
        let mut payload = payload.clone();
        let mut messages = Vec::new();
        let mut system_prompt = None;
        for (unit, awaited) in self.subscribers("before_agent_start") {
            let Some(outcome) = self.answered(&unit, awaited, &payload, cancel) else {
                continue;
            };
            for v in handler_values(outcome.value) {
                if let Some(m) = v.get("message").filter(|m| m.is_object()) {
                    let mut msg = Map::new();
                    msg.insert("role".into(), "custom".into());
                    for key in ["customType", "content", "display", "details"] {
                        if let Some(x) = m.get(key) {
                            msg.insert(key.into(), x.clone());
                        }
                    }
                    if !msg.contains_key("display") {
                        msg.insert("display".into(), true.into());
                    }
                    msg.insert("timestamp".into(), crate::util::now_ms().into());
                    messages.push(Value::Object(msg));
                }
                if let Some(p) = v.get("systemPrompt").and_then(Value::as_str) {
                    system_prompt = Some(p.to_string());
                    // Later handlers see the prompt as changed (§A4).
                    payload["systemPrompt"] = p.into();
                }
            }
        }
        (messages, system_prompt)
    }

    /// `context` (§A4): the messages of the next request (system messages removed), as
    /// replaced by handlers (`{messages}` or an in-place edit); `None` when unchanged.
    pub fn context(
        &self,
        messages: Vec<Value>,
        cancel: Option<&CancelToken>,
    ) -> Option<Vec<Value>> {
        let mut current = messages;
        let mut changed = false;
        for (unit, awaited) in self.subscribers("context") {
            let payload = json!({"type": "context", "messages": current});
            let Some(outcome) = self.answered(&unit, awaited, &payload, cancel) else {
                continue;
            };
            if let Some(Value::Array(m)) = outcome.mutated.as_ref().and_then(|m| m.get("messages"))
            {
                current = m.clone();
                changed = true;
            }
            for v in handler_values(outcome.value) {
                if let Some(Value::Array(m)) = v.get("messages") {
                    current = m.clone();
                    changed = true;
                }
            }
        }
        changed.then_some(current)
    }

    /// `user_bash` (§A4, §B14): the first valid `{result}` is the `bash` command's response
    /// data; a throw or an invalid shape fails the command with the message (after an
    /// `extension_error`). `Ok(None)`: no handler answered, the command runs.
    pub fn user_bash(&self, payload: &Value) -> Result<Option<Value>, String> {
        for (unit, awaited) in self.subscribers("user_bash") {
            let outcome = match self.send_event(&unit, awaited, payload, None, None) {
                None => continue,
                Some(Err(e)) => {
                    self.error(&unit.path, "user_bash", e.clone());
                    return Err(e);
                }
                Some(Ok(o)) if !o.ok => {
                    self.error(&unit.path, "user_bash", o.error.clone());
                    return Err(o.error);
                }
                Some(Ok(o)) => o,
            };
            if let Some(v) = handler_values(outcome.value).into_iter().next() {
                match v.get("result") {
                    Some(r) if valid_bash_result(r) => return Ok(Some(r.clone())),
                    _ => {
                        // pi's text; `{operations}` is not offered (§B14) and answers so too.
                        let e = "Invalid user_bash handler result: return undefined for local \
                                 execution or exactly one valid { operations } or { result } object"
                            .to_string();
                        self.error(&unit.path, "user_bash", e.clone());
                        return Err(e);
                    }
                }
            }
        }
        Ok(None)
    }
}

/// How a `tool_call` dispatch ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Gate {
    /// The call runs with these arguments (edited in place by handlers, or unchanged).
    Allow(Value),
    /// The call is blocked with this error text; `terminate` ends the run after the batch
    /// when every call of it says so.
    Block { reason: String, terminate: bool },
}

impl Gate {
    pub(super) fn block(reason: String) -> Gate {
        Gate::Block {
            reason,
            terminate: false,
        }
    }
}

/// A `tool_result` patch, applied field by field.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ResultPatch {
    pub content: Option<Value>,
    pub details: Option<Value>,
    pub structured_content: Option<Option<Value>>,
    pub is_error: Option<bool>,
}

/// A prompt's images as the `input` payload carries them.
pub(crate) fn input_images(images: &[crate::protocol::ImageContent]) -> Vec<Value> {
    images
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}

/// The images after `input` handlers: the original ones when the handlers left them as sent,
/// else the ones they returned (blocks that are not images are dropped).
pub(crate) fn images_after_input(
    original: Vec<crate::protocol::ImageContent>,
    sent: &[Value],
    got: Vec<Value>,
) -> Vec<crate::protocol::ImageContent> {
    if got == sent {
        return original;
    }
    got.into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

/// What `input` handlers decided.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum InputOutcome {
    /// Go on with this text and these image blocks.
    Continue { text: String, images: Vec<Value> },
    /// A handler took the input: the command answers `disposition:"handled"`.
    Handled,
}

/// The RPC `bash` response shape a `user_bash` `{result}` must have (pi's
/// `isUserBashEventResult`: `exitCode` present and a number, since JSON has no `undefined`;
/// `fullOutputPath` absent or a string).
pub(super) fn valid_bash_result(r: &Value) -> bool {
    r.get("output").is_some_and(Value::is_string)
        && r.get("exitCode").is_some_and(Value::is_number)
        && r.get("cancelled").is_some_and(Value::is_boolean)
        && r.get("truncated").is_some_and(Value::is_boolean)
        && r.get("fullOutputPath").is_none_or(Value::is_string)
}

/// A unit's `value`: one handler's result, or an array of several handlers' results (§B6).
pub(super) fn handler_values(v: Value) -> Vec<Value> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items.into_iter().filter(|v| !v.is_null()).collect(),
        other => vec![other],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    pub(super) fn handler_values_flatten_arrays_and_drop_undefined() {
        assert_eq!(handler_values(Value::Null), Vec::<Value>::new());
        assert_eq!(handler_values(json!([null, {"a":1}])), vec![json!({"a":1})]);
        assert_eq!(handler_values(json!({"b":2})), vec![json!({"b":2})]);
    }
}
