//! What extensions ask of pi-rpc (`extensions.md` §B7, §B9, §B12): `call`s (the UI methods
//! here, state methods through [`super::host::Actions`]), `register`, `error` and `cancel`
//! messages, protocol errors and process exits. They are served on the process's reader
//! thread, in arrival order, so a handler's UI reaches stdout before the result that releases
//! the event (§B13).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::host::{CallReply, Extensions, Unit};
use super::process::{ExtProcess, Inbox};
use super::registrations::add_registrations;
use crate::protocol::extension_ui::{degraded_value, UiMethod};

impl Extensions {
    /// Performs a state call through the installed [`Actions`].
    pub(super) fn perform(&self, method: &str, params: &Value) -> Result<Value, String> {
        let actions = self.actions.lock().clone();
        match actions {
            Some(a) => a.call(method, params),
            None => Err(format!("{method} is not available yet")),
        }
    }

    /// Starts a call answered later through the installed [`super::host::Actions`]; `reply`
    /// gets `Unknown method` when it is not such a call.
    pub(super) fn perform_later(&self, method: &str, params: &Value, reply: CallReply) {
        let actions = self.actions.lock().clone();
        let back = match actions {
            Some(a) => a.call_later(method, params, reply),
            None => Some(reply),
        };
        if let Some(r) = back {
            (r.0)(Err(format!("Unknown method: {method}")));
        }
    }

    pub(super) fn handle_call(
        &self,
        proc: &Arc<ExtProcess>,
        unit: &Unit,
        msg: &Map<String, Value>,
    ) {
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return self.error(&unit.path, "protocol", "a call without a method".into());
        };
        let id = msg.get("id").and_then(Value::as_str);
        let scope = msg
            .get("scope")
            .and_then(Value::as_str)
            .filter(|s| proc.is_pending(s));
        let empty = Value::Object(Map::new());
        let params = msg.get("params").unwrap_or(&empty);
        let answer = |r: Result<Value, String>| {
            if let Some(id) = id {
                proc.answer(id, r);
            }
        };
        if method.starts_with("ui.") {
            return match UiMethod::from_call(method, params) {
                Ok(Some(m)) => self.dialogs.open(proc, id, &m, scope),
                Ok(None) => answer(
                    degraded_value(method).ok_or_else(|| format!("Unknown method: {method}")),
                ),
                Err(e) => answer(Err(e)),
            };
        }
        if method == "pi.sendUserMessage" || method == "ctx.shutdown" {
            if let Some(scope) = scope {
                let key = (Arc::as_ptr(proc) as usize, scope.to_string());
                let mut scopes = self.command_scopes.lock();
                if let Some(list) = scopes.get_mut(&key) {
                    // Runs after the command's `handled` response (§A7.3; a shutdown waits
                    // for the command too, rpc-protocol.md §10).
                    list.push((method.to_string(), params.clone()));
                    drop(scopes);
                    return answer(Ok(Value::Null));
                }
            }
        }
        let actions = self.actions.lock().clone();
        if let Some(actions) = actions {
            let reply_proc = Arc::clone(proc);
            let reply_id = id.map(str::to_string);
            let reply = CallReply(Box::new(move |r: Result<Value, String>| {
                if let Some(id) = reply_id {
                    reply_proc.answer(&id, r);
                }
            }));
            if actions.call_later(method, params, reply).is_none() {
                return;
            }
        }
        let result = self.perform(method, params);
        if id.is_none() {
            if let Err(e) = &result {
                // A fire-and-forget call that failed: pi reports these on the runtime.
                let event = match method {
                    "pi.sendUserMessage" => "send_user_message",
                    "pi.sendMessage" => "send_message",
                    _ => method,
                };
                self.error("<runtime>", event, e.clone());
            }
        }
        answer(result);
    }
}

impl Inbox for Extensions {
    fn message(&self, proc: &Arc<ExtProcess>, msg: Map<String, Value>) {
        let ext = msg.get("ext").and_then(Value::as_str);
        let Some(unit) = self.unit_of(proc, ext) else {
            let text = match ext {
                Some(e) => format!("a message for unknown unit {e}"),
                None => "a message without \"ext\" from a process hosting several units".into(),
            };
            return self.error(&proc.name, "protocol", text);
        };
        match msg.get("type").and_then(Value::as_str).unwrap_or_default() {
            "call" => self.handle_call(proc, &unit, &msg),
            "register" => {
                add_registrations(&mut unit.regs.lock(), &Value::Object(msg));
            }
            "error" => {
                let event = msg.get("event").and_then(Value::as_str).unwrap_or("error");
                let error = crate::js::value::js_template(msg.get("error"));
                self.error(&unit.path, event, error);
            }
            "cancel" => {
                if let Some(id) = msg.get("id").and_then(Value::as_str) {
                    self.dialogs.dismiss_call(proc, id);
                }
            }
            _ => {}
        }
    }

    fn protocol_error(&self, proc: &Arc<ExtProcess>, text: String) {
        let path = self
            .unit_of(proc, None)
            .map_or_else(|| proc.name.clone(), |u| u.path.clone());
        self.error(&path, "protocol", text);
    }

    fn exited(&self, proc: &Arc<ExtProcess>, text: String) {
        self.dialogs.forget_process(proc);
        if self.stopping.load(Ordering::SeqCst) || self.initializing.load(Ordering::SeqCst) {
            return;
        }
        for u in self.units_of(proc) {
            self.error(&u.path, "process", text.clone());
        }
    }
}
