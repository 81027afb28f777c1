//! The UI sub-protocol's dialogs (`extensions.md` §A6, §B7, §B11): each `ui.select` /
//! `ui.confirm` / `ui.input` / `ui.editor` call becomes an `extension_ui_request` with a fresh
//! UUID; the client's `extension_ui_response` (routed here by the stdin reader, never through
//! the processor), a timeout, a cancelled scope or the extension's own `cancel` resolves it, and
//! the extension's call gets the value. Timeouts and cancellations write nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use super::process::ExtProcess;
use crate::output::Output;
use crate::protocol::command::UiResponse;
use crate::protocol::extension_ui::{DialogKind, UiMethod, UiRequest};

/// Who waits for a dialog's answer.
enum Target {
    /// An extension's `ui.*` call.
    Ext(Arc<ExtProcess>),
    /// pi-rpc's own built-in commands (`/mcp`'s server choice).
    Native(Sender<Value>),
}

impl Target {
    fn is(&self, proc: &Arc<ExtProcess>) -> bool {
        matches!(self, Target::Ext(p) if Arc::ptr_eq(p, proc))
    }
}

struct Dialog {
    proc: Target,
    call_id: String,
    kind: DialogKind,
    /// The host request the call was made in (its cancellation dismisses the dialog).
    scope: Option<String>,
}

/// Pending dialogs, by wire id.
pub(crate) struct Dialogs {
    pending: Mutex<HashMap<String, Dialog>>,
    timer: Mutex<Option<Sender<(Instant, String)>>>,
    /// stdin ended: no client can answer any more.
    closed: AtomicBool,
    /// No client at all (print modes): nothing is written, dialogs resolve at once.
    headless: AtomicBool,
    out: Output,
    me: Weak<Dialogs>,
}

impl Dialogs {
    pub fn new(out: Output) -> Arc<Dialogs> {
        Arc::new_cyclic(|me| Dialogs {
            pending: Mutex::new(HashMap::new()),
            timer: Mutex::new(None),
            closed: AtomicBool::new(false),
            headless: AtomicBool::new(false),
            out,
            me: me.clone(),
        })
    }

    /// Writes the record of a `ui.*` call. A dialog with a `call_id` then waits for its answer;
    /// a fire-and-forget method is done once written.
    pub fn open(
        &self,
        proc: &Arc<ExtProcess>,
        call_id: Option<&str>,
        method: &UiMethod,
        scope: Option<&str>,
    ) {
        let kind = method.dialog();
        if self.headless.load(Ordering::SeqCst) {
            // pi's print modes have no UI: dialogs give their defaults, the rest does nothing.
            if let Some(id) = call_id {
                proc.answer(id, Ok(kind.map_or(Value::Null, DialogKind::default_value)));
            }
            return;
        }
        if let (Some(kind), true) = (kind, self.closed.load(Ordering::SeqCst)) {
            // Nobody can answer after stdin ended: the default at once, nothing written.
            if let Some(id) = call_id {
                proc.answer(id, Ok(kind.default_value()));
            }
            return;
        }
        let wire_id = uuid::Uuid::new_v4().to_string();
        if let (Some(kind), Some(call_id)) = (kind, call_id) {
            // Registered before the record is written, so a quick answer finds it.
            self.pending.lock().insert(
                wire_id.clone(),
                Dialog {
                    proc: Target::Ext(Arc::clone(proc)),
                    call_id: call_id.to_string(),
                    kind,
                    scope: scope.map(str::to_string),
                },
            );
            if let Some(ms) = method.timeout_ms() {
                self.arm(Instant::now() + Duration::from_millis(ms), wire_id.clone());
            }
        }
        self.out.record(&UiRequest::new(&wire_id, method));
        if kind.is_none() {
            if let Some(id) = call_id {
                proc.answer(id, Ok(Value::Null));
            }
        }
    }

    /// A client's `extension_ui_response`. Unknown and late ids are ignored (§A6).
    pub fn answer(&self, r: &UiResponse) {
        let Some(d) = self.pending.lock().remove(&r.id) else {
            return;
        };
        let value = match d.kind {
            DialogKind::Confirm if r.cancelled => Value::Bool(false),
            DialogKind::Confirm => Value::Bool(r.confirmed.unwrap_or(false)),
            DialogKind::Value if r.cancelled => Value::Null,
            DialogKind::Value => r.value.clone().map_or(Value::Null, Value::String),
        };
        d.resolve(value);
    }

    /// Resolves the dialogs matching `pick` to their defaults, writing nothing.
    fn dismiss(&self, pick: impl Fn(&Dialog) -> bool) {
        let gone: Vec<Dialog> = {
            let mut pending = self.pending.lock();
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, d)| pick(d))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| pending.remove(id)).collect()
        };
        for d in gone {
            let v = d.kind.default_value();
            d.resolve(v);
        }
    }

    /// The dialogs opened in request `scope` of `proc` (the request was cancelled).
    pub fn dismiss_scope(&self, proc: &Arc<ExtProcess>, scope: &str) {
        self.dismiss(|d| d.proc.is(proc) && d.scope.as_deref() == Some(scope));
    }

    /// The extension's own `cancel` of its dialog call `call_id`.
    pub fn dismiss_call(&self, proc: &Arc<ExtProcess>, call_id: &str) {
        self.dismiss(|d| d.proc.is(proc) && d.call_id == call_id);
    }

    /// Forgets the dialogs of a process that ended (nobody is left to answer).
    pub fn forget_process(&self, proc: &Arc<ExtProcess>) {
        self.pending.lock().retain(|_, d| !d.proc.is(proc));
    }

    /// There is no client (print modes).
    pub fn without_client(&self) {
        self.headless.store(true, Ordering::SeqCst);
    }

    /// stdin ended: pending dialogs resolve to their defaults, later ones at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.dismiss(|_| true);
    }

    fn expire(&self, wire_id: &str) {
        let d = self.pending.lock().remove(wire_id);
        if let Some(d) = d {
            let v = d.kind.default_value();
            d.resolve(v);
        }
    }

    /// Schedules `wire_id`'s timeout on the timer thread (started on first use).
    fn arm(&self, at: Instant, wire_id: String) {
        let mut timer = self.timer.lock();
        if timer.is_none() {
            let (tx, rx) = bounded::<(Instant, String)>(64);
            let me = self.me.clone();
            let spawned = std::thread::Builder::new()
                .name("ui-timer".into())
                .spawn(move || {
                    let mut heap: BinaryHeap<Reverse<(Instant, String)>> = BinaryHeap::new();
                    loop {
                        let next = heap.peek().map(|Reverse((at, _))| *at);
                        let got = match next {
                            None => rx.recv().map_err(|_| true),
                            Some(at) => rx
                                .recv_timeout(at.saturating_duration_since(Instant::now()))
                                .map_err(|e| e.is_disconnected()),
                        };
                        match got {
                            Ok(item) => heap.push(Reverse(item)),
                            Err(true) => return,
                            Err(false) => {}
                        }
                        let now = Instant::now();
                        while heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
                            if let Some(Reverse((_, id))) = heap.pop() {
                                match me.upgrade() {
                                    Some(d) => d.expire(&id),
                                    None => return,
                                }
                            }
                        }
                    }
                });
            match spawned {
                Ok(_) => *timer = Some(tx),
                Err(e) => {
                    eprintln!("pi-rpc: cannot start the dialog timer: {e}");
                    return;
                }
            }
        }
        if let Some(tx) = timer.as_ref() {
            let _ = tx.send((at, wire_id));
        }
    }
}

impl Dialogs {
    /// Whether a dialog opened in request `scope` of `proc` still waits for the client.
    pub fn has_scope(&self, proc: &Arc<ExtProcess>, scope: &str) -> bool {
        self.pending
            .lock()
            .values()
            .any(|d| d.proc.is(proc) && d.scope.as_deref() == Some(scope))
    }

    /// A `select` of pi-rpc's own (a built-in command's): waits for the client's answer and
    /// returns the chosen option; `None` when cancelled, or with no client to ask.
    pub(crate) fn select_native(&self, title: &str, options: &[String]) -> Option<String> {
        if self.headless.load(Ordering::SeqCst) || self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let (tx, rx) = bounded::<Value>(1);
        let wire_id = uuid::Uuid::new_v4().to_string();
        self.pending.lock().insert(
            wire_id.clone(),
            Dialog {
                proc: Target::Native(tx),
                call_id: String::new(),
                kind: DialogKind::Value,
                scope: None,
            },
        );
        let method = UiMethod::Select {
            title: title.to_string(),
            options: Value::from(options.to_vec()),
            timeout: None,
        };
        self.out.record(&UiRequest::new(&wire_id, &method));
        rx.recv().ok().and_then(|v| v.as_str().map(str::to_string))
    }
}

impl Dialog {
    fn resolve(self, value: Value) {
        match self.proc {
            Target::Ext(p) => p.answer(&self.call_id, Ok(value)),
            Target::Native(tx) => {
                let _ = tx.try_send(value);
            }
        }
    }
}

/// Writes a `notify` record (`extension_ui_request`, a fresh UUID).
pub(crate) fn write_notify(out: &crate::output::Output, message: &str, kind: &str) {
    let m = UiMethod::Notify {
        message: message.to_string(),
        notify_type: Some(kind.to_string()),
    };
    out.record(&UiRequest::new(&uuid::Uuid::new_v4().to_string(), &m));
}
