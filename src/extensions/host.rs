//! The extension host (`extensions.md` Part B): the units in load order with their
//! registrations, start-up and the `initialize` handshake, waiting for a request's result
//! (with cancellation and deadlines). Session replacement and shutdown are in `lifecycle`.
//!
//! The rest of the host's methods live by concern: `dispatch` (events with pi's combination
//! rules), `commands`, `ext_tool` (extension tools) and `calls` (what extensions ask of pi-rpc).
//! Dispatch runs on the thread that reaches the event and waits for each subscribed unit in
//! load order, without holding the state lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::discovery::{Source, Unit as FoundUnit, UnitKind};
use super::manifest::{self, Launch};
use super::process::{ExtProcess, Inbox, Outcome, Reply, Waiter};
use super::registrations::{add_registrations, FlagReg, Registrations};
use super::ui::Dialogs;
use super::LoadFailure;
use crate::cancel::CancelToken;
use crate::output::Output;
use crate::protocol::command::UiResponse;
use crate::protocol::Event;

/// How long a cancelled request's result is waited for (§B11).
const CANCEL_GRACE: Duration = Duration::from_millis(1000);
/// The total time `session_shutdown` handlers get at exit (§B3).
pub(super) const SHUTDOWN_BUDGET: Duration = Duration::from_millis(3000);
/// Each step of stopping a process: stdin closed, SIGTERM, SIGKILL (§B3).
pub(super) const STOP_GRACE: Duration = Duration::from_millis(1000);

/// The calls of §B7 that read or change the session, performed by the RPC layer.
pub(crate) trait Actions: Send + Sync {
    /// Performs `method`; `Err` answers the call with `ok:false` and that message.
    fn call(&self, method: &str, params: &Value) -> Result<Value, String>;
    /// Starts a call whose answer comes later (`ctx.compact`): `reply` gets it. Returns the
    /// reply back when `method` is not such a call.
    fn call_later(&self, method: &str, params: &Value, reply: CallReply) -> Option<CallReply>;
}

/// A call a command made that runs after its `handled` response: method and params.
pub(super) type DeferredCall = (String, Value);

/// The answer to an extension's call, given once its work is done.
pub struct CallReply(pub Box<dyn FnOnce(Result<Value, String>) + Send>);

impl std::fmt::Debug for CallReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallReply")
    }
}

/// Settings of the host.
#[derive(Clone, Debug)]
pub(crate) struct HostOptions {
    pub cwd: std::path::PathBuf,
    pub agent_dir: std::path::PathBuf,
    /// `piRpc.extensionStartupTimeoutMs` (default 10000).
    pub startup_timeout: Duration,
    /// `piRpc.extensionHandlerTimeoutMs` (0 = none).
    pub handler_timeout: Option<Duration>,
    /// `--no-extensions` drops the built-in commands; `--no-mcp` drops `/mcp`.
    pub builtin_llama: bool,
    pub builtin_mcp: bool,
    /// `ctx.mode`: `rpc`, or the print modes' `print` / `json`. Without RPC there is no client:
    /// no UI is written, dialogs resolve to their defaults at once, and `extension_error`s go
    /// to stderr as pi's print mode writes them.
    pub mode: &'static str,
    /// MCP support (`builtin:mcp`, `mcp.md`): `None` with `--no-mcp` / `--no-extensions`.
    pub mcp: Option<crate::mcp::service::McpOptions>,
    /// The Node extension host (§B15) for `.ts` / `.js` units.
    pub node_host: super::node_host::NodeHostSetting,
}

/// One extension unit.
pub(crate) struct Unit {
    /// The unit path (a manifest's absolute path), as `extension_error` and `sourceInfo` name it.
    pub path: String,
    pub(super) source_info: Value,
    pub(super) launch: Launch,
    /// A `.ts` / `.js` unit: it shares the one Node host process with the other Node units.
    pub(super) node: bool,
    pub(super) proc: Mutex<Option<Arc<ExtProcess>>>,
    pub(super) regs: Mutex<Registrations>,
}

impl Unit {
    pub(super) fn process(&self) -> Option<Arc<ExtProcess>> {
        self.proc.lock().clone()
    }

    pub(super) fn alive_process(&self) -> Option<Arc<ExtProcess>> {
        self.process().filter(|p| p.is_alive())
    }

    pub(super) fn subscription(&self, event: &str) -> Option<bool> {
        self.regs
            .lock()
            .subscriptions
            .iter()
            .find(|s| s.event == event)
            .map(|s| s.awaited)
    }
}

/// A built-in command (§B2): pi's `llama` and `mcp` extension commands, served natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Builtin {
    Llama,
    Mcp,
}

impl Builtin {
    pub(super) fn name(self) -> &'static str {
        match self {
            Builtin::Llama => "llama",
            Builtin::Mcp => "mcp",
        }
    }
    pub(super) fn description(self) -> &'static str {
        match self {
            Builtin::Llama => "Manage llama.cpp router models",
            Builtin::Mcp => {
                "Manage MCP servers: sign in, reconnect, enable or disable, and change exposure"
            }
        }
    }
    pub(super) fn path(self) -> &'static str {
        match self {
            Builtin::Llama => "builtin:llama.cpp",
            Builtin::Mcp => "builtin:mcp",
        }
    }
}

/// The extension host.
pub struct Extensions {
    pub(super) units: Vec<Arc<Unit>>,
    pub(super) builtins: Vec<Builtin>,
    pub(super) dialogs: Arc<Dialogs>,
    pub(super) out: Output,
    pub(super) opts: HostOptions,
    pub(super) actions: Mutex<Option<Arc<dyn Actions>>>,
    /// Commands waiting for their result, by (process, request id): their deferred
    /// `sendUserMessage` calls run after the `handled` response.
    pub(super) command_scopes: Mutex<HashMap<(usize, String), Vec<DeferredCall>>>,
    /// Set while processes are deliberately stopped: their end is not an error.
    pub(super) stopping: AtomicBool,
    /// Set while units initialize: an exit then is that unit's load failure (start-up) or
    /// its `initialize` error (a replacement), not a `process` error.
    pub(super) initializing: AtomicBool,
    pub(super) me: Weak<Extensions>,
    /// The session's MCP servers (`builtin:mcp`), when MCP support is on.
    pub(super) mcp: Option<Arc<crate::mcp::service::Mcp>>,
}

impl Extensions {
    pub(super) fn with_units(
        units: Vec<Arc<Unit>>,
        builtins: Vec<Builtin>,
        out: Output,
        opts: HostOptions,
    ) -> Arc<Extensions> {
        let dialogs = Dialogs::new(out.clone());
        if opts.mode != "rpc" {
            dialogs.without_client();
        }
        let mcp = opts.mcp.clone().map(|mo| {
            let out = out.clone();
            let rpc = opts.mode == "rpc";
            let notify: crate::mcp::service::Notify = Arc::new(move |message: &str, kind: &str| {
                if rpc {
                    super::ui::write_notify(&out, message, kind);
                }
            });
            crate::mcp::service::Mcp::start(mo, notify)
        });
        Arc::new_cyclic(|me| Extensions {
            units,
            builtins,
            dialogs,
            out,
            opts,
            actions: Mutex::new(None),
            command_scopes: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            initializing: AtomicBool::new(false),
            me: me.clone(),
            mcp,
        })
    }

    /// Starts the MCP servers' connections (once the mode's own threads run).
    pub(crate) fn connect_mcp(&self) {
        if let Some(mcp) = self.mcp() {
            mcp.connect_held();
        }
    }

    /// The session's MCP servers, when MCP support is on. An extension that registers its own
    /// `/mcp` replaces the built-in support (`mcp.md` §1): no server connects then.
    pub(crate) fn mcp(&self) -> Option<&Arc<crate::mcp::service::Mcp>> {
        self.mcp
            .as_ref()
            .filter(|_| !self.unit_registered_command("mcp"))
    }

    /// Whether an extension unit registered the command `name`.
    pub(crate) fn unit_registered_command(&self, name: &str) -> bool {
        self.units
            .iter()
            .any(|u| u.regs.lock().commands.iter().any(|c| c.name == name))
    }

    /// Whether any extension unit is configured.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Installs the session-side actions (set once RPC mode has its state).
    pub(crate) fn set_actions(&self, actions: Arc<dyn Actions>) {
        *self.actions.lock() = Some(actions);
    }

    /// A client's `extension_ui_response` (called by the stdin reader).
    pub fn ui_response(&self, r: &UiResponse) {
        self.dialogs.answer(r);
    }

    pub(super) fn error(&self, path: &str, event: &str, error: String) {
        if self.opts.mode != "rpc" {
            eprintln!("Extension error ({path}): {error}");
            return;
        }
        self.out.event(&Event::ExtensionError {
            extension_path: path.to_string(),
            event: event.to_string(),
            error,
        });
    }

    /// The units `proc` hosts, in load order (one for a process extension, every Node unit
    /// for the Node host).
    pub(super) fn units_of(&self, proc: &Arc<ExtProcess>) -> Vec<Arc<Unit>> {
        self.units
            .iter()
            .filter(|u| u.process().is_some_and(|p| Arc::ptr_eq(&p, proc)))
            .cloned()
            .collect()
    }

    /// The unit a message of `proc` is about: the one its `ext` names, or the process's only
    /// unit (a single-unit process may omit `ext`, §B4).
    pub(super) fn unit_of(&self, proc: &Arc<ExtProcess>, ext: Option<&str>) -> Option<Arc<Unit>> {
        let mut units = self.units_of(proc);
        if let Some(u) = ext.and_then(|e| units.iter().find(|u| u.path == e)) {
            return Some(Arc::clone(u));
        }
        (units.len() == 1).then(|| units.remove(0))
    }

    /// Every running process once (the Node host serves several units).
    pub(super) fn processes(&self) -> Vec<Arc<ExtProcess>> {
        let mut out: Vec<Arc<ExtProcess>> = Vec::new();
        for u in &self.units {
            if let Some(p) = u.process() {
                if !out.iter().any(|q| Arc::ptr_eq(q, &p)) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// `sourceInfo` of a unit (§A2).
pub(super) fn source_info(unit: &FoundUnit, opts: &HostOptions) -> Value {
    let path = unit.path.to_string_lossy().into_owned();
    match unit.source {
        Source::Cli => {
            json!({"path": path, "source": "cli", "scope": "temporary", "origin": "top-level"})
        }
        Source::ProjectSettings => {
            json!({"path": path, "source": "local", "scope": "project", "origin": "top-level"})
        }
        Source::UserSettings => {
            json!({"path": path, "source": "local", "scope": "user", "origin": "top-level"})
        }
        Source::ProjectFolder => json!({
            "path": path, "source": "auto", "scope": "project", "origin": "top-level",
            "baseDir": opts.cwd.join(".pi").to_string_lossy(),
        }),
        Source::UserFolder => json!({
            "path": path, "source": "auto", "scope": "user", "origin": "top-level",
            "baseDir": opts.agent_dir.to_string_lossy(),
        }),
        Source::Package => {
            json!({"path": path, "source": "local", "scope": "user", "origin": "package"})
        }
    }
}

/// How a unit starts, or why it cannot (§B2).
pub(super) fn launch_of(unit: &FoundUnit) -> Result<Launch, String> {
    match unit.kind {
        UnitKind::Manifest => manifest::read(&unit.path),
        UnitKind::Executable => Ok(Launch {
            argv: vec![unit.path.to_string_lossy().into_owned()],
            env: Vec::new(),
        }),
        UnitKind::Node => super::node_host::prepare(
            &super::node_host::NodeHostSetting::Off,
            &super::node_host::Lookup::default(),
        ),
        UnitKind::Package => {
            Err("extension packages (the packages setting) are not supported by pi-rpc yet".into())
        }
        UnitKind::Other => Err(
            "not an extension pi-rpc can run (expected a *.ext.json manifest or an executable)"
                .into(),
        ),
    }
}

impl Extensions {
    /// Starts and initializes every unit in load order (§B3, §B5). A failure stops start-up.
    pub(crate) fn start(
        found: Vec<FoundUnit>,
        opts: HostOptions,
        out: Output,
    ) -> Result<Arc<Extensions>, LoadFailure> {
        let mut units = Vec::new();
        // The Node host is prepared once, for the first `.ts` / `.js` unit.
        let mut node_launch: Option<Result<Launch, String>> = None;
        for f in &found {
            let path = f.path.to_string_lossy().into_owned();
            let node = f.kind == UnitKind::Node;
            let launch = if node {
                node_launch
                    .get_or_insert_with(|| {
                        super::node_host::prepare(
                            &opts.node_host,
                            &super::node_host::Lookup::from_env(&opts.agent_dir),
                        )
                    })
                    .clone()
            } else {
                launch_of(f)
            };
            let launch = launch.map_err(|e| LoadFailure {
                path: path.clone(),
                message: format!("Failed to load extension: {e}"),
            })?;
            units.push(Arc::new(Unit {
                source_info: source_info(f, &opts),
                path,
                launch,
                node,
                proc: Mutex::new(None),
                regs: Mutex::new(Registrations::default()),
            }));
        }
        let mut builtins = Vec::new();
        if opts.builtin_llama {
            builtins.push(Builtin::Llama);
        }
        if opts.builtin_mcp {
            builtins.push(Builtin::Mcp);
        }
        let host = Self::with_units(units, builtins, out, opts);
        // Every process first, then the handshakes in unit order.
        for unit in &host.units {
            if let Err(e) = host.spawn_unit(unit) {
                host.stop_all();
                return Err(LoadFailure {
                    path: unit.path.clone(),
                    message: format!("Failed to load extension: {e}"),
                });
            }
        }
        host.initializing.store(true, Ordering::SeqCst);
        let mut node_results: Option<HashMap<String, Result<(), String>>> = None;
        for unit in &host.units {
            let result = if unit.node {
                node_results
                    .get_or_insert_with(|| host.initialize_node_units("startup", false))
                    .remove(&unit.path)
                    .unwrap_or_else(|| Err("Failed to load extension: no initialize result".into()))
            } else {
                host.initialize(unit, "startup")
            };
            if let Err(message) = result {
                host.stop_all();
                return Err(LoadFailure {
                    path: unit.path.clone(),
                    message,
                });
            }
        }
        host.initializing.store(false, Ordering::SeqCst);
        Ok(host)
    }

    pub(super) fn spawn_unit(&self, unit: &Arc<Unit>) -> Result<(), String> {
        let inbox: Arc<dyn Inbox> = match self.me.upgrade() {
            Some(me) => me,
            None => return Err("the extension host is gone".into()),
        };
        if unit.node {
            // One Node host serves every Node unit.
            let running = self
                .units
                .iter()
                .filter(|u| u.node && !Arc::ptr_eq(u, unit))
                .find_map(|u| u.alive_process());
            if let Some(p) = running {
                *unit.proc.lock() = Some(p);
                return Ok(());
            }
        }
        let name = if unit.node {
            "node-host"
        } else {
            unit.path.as_str()
        };
        let proc = ExtProcess::spawn(
            name,
            &unit.launch.argv,
            &unit.launch.env,
            &self.opts.cwd,
            inbox,
        )?;
        *unit.proc.lock() = Some(proc);
        Ok(())
    }

    /// The `initialize` handshake; the unit's registrations are replaced by the answer's.
    /// The error is the whole message after `Failed to load extension "<path>": `: pi-rpc's
    /// `Failed to load extension: …` texts, or a unit's own `error` as it sent it (a Node-host
    /// unit sends pi's texts, prefix included; §B3).
    pub(super) fn initialize(&self, unit: &Arc<Unit>, reason: &str) -> Result<(), String> {
        let Some(proc) = unit.process() else {
            return Err("Failed to load extension: extension process is not running".into());
        };
        match self.handshake(&proc, std::slice::from_ref(unit), reason) {
            Err(e) => Err(e.text()),
            Ok(mut results) => results.pop().unwrap_or(Ok(())).map_err(|e| e.text()),
        }
    }

    /// The `initialize` handshake of the Node host: one request for all Node units (pi's loader
    /// loads them with one shared runtime and event bus, §B15); each unit's result by path.
    /// With `only_alive`, units whose process could not be started again are left out (their
    /// failure was reported already).
    pub(super) fn initialize_node_units(
        &self,
        reason: &str,
        only_alive: bool,
    ) -> HashMap<String, Result<(), String>> {
        let units: Vec<Arc<Unit>> = self
            .units
            .iter()
            .filter(|u| u.node && (!only_alive || u.alive_process().is_some()))
            .cloned()
            .collect();
        let proc = units.iter().find_map(|u| u.process());
        let results = match proc {
            None => Err(InitError::Host("extension process is not running".into())),
            Some(p) => self.handshake(&p, &units, reason),
        };
        match results {
            Ok(each) => units
                .iter()
                .zip(each)
                .map(|(u, r)| (u.path.clone(), r.map_err(|e| e.text())))
                .collect(),
            Err(e) => {
                let text = e.text();
                units
                    .iter()
                    .map(|u| (u.path.clone(), Err(text.clone())))
                    .collect()
            }
        }
    }

    /// Sends `initialize` naming `units` (all hosted by `proc`) and installs each unit's
    /// registrations from the answer: a result per unit, or why the whole handshake failed.
    fn handshake(
        &self,
        proc: &Arc<ExtProcess>,
        units: &[Arc<Unit>],
        reason: &str,
    ) -> Result<Vec<Result<(), InitError>>, InitError> {
        let mut fields = Map::new();
        fields.insert("protocol".into(), manifest::PROTOCOL.into());
        fields.insert("reason".into(), reason.into());
        fields.insert(
            "host".into(),
            json!({"name": "pi-rpc", "version": env!("CARGO_PKG_VERSION")}),
        );
        fields.insert("mode".into(), self.opts.mode.into());
        fields.insert("hasUI".into(), (self.opts.mode == "rpc").into());
        fields.insert("cwd".into(), self.opts.cwd.to_string_lossy().into());
        fields.insert(
            "agentDir".into(),
            self.opts.agent_dir.to_string_lossy().into(),
        );
        let named: Vec<Value> = units.iter().map(|u| json!({ "ext": u.path })).collect();
        fields.insert("units".into(), Value::Array(named));
        let timeout = self.opts.startup_timeout;
        let outcome = self
            .wait(proc, "initialize", fields, None, Some(timeout), &mut |_| {})
            .map_err(|e| match e {
                // The exit may be seen before the request is sent or while it waits.
                WaitError::Gone(text) => format!("{text} before initialize"),
                WaitError::Unavailable(text) if proc.end_text().is_some() => {
                    format!("{text} before initialize")
                }
                WaitError::TimedOut => {
                    format!("no initialize result within {} ms", timeout.as_millis())
                }
                WaitError::Aborted => "initialize was cancelled".into(),
                WaitError::Unavailable(text) => text,
            })
            .map_err(InitError::Host)?;
        if !outcome.ok {
            // The handshake threw: as a throwing factory in pi.
            return Err(InitError::Host(outcome.error));
        }
        let answers = outcome
            .value
            .get("units")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                InitError::Host("malformed initialize result: no \"units\" array".into())
            })?;
        let mut results = Vec::with_capacity(units.len());
        for unit in units {
            let answer = answers
                .iter()
                .find(|u| u.get("ext").and_then(Value::as_str) == Some(unit.path.as_str()))
                .or_else(|| (units.len() == 1 && answers.len() == 1).then(|| &answers[0]));
            let Some(answer) = answer else {
                results.push(Err(InitError::Host(format!(
                    "malformed initialize result: no unit {}",
                    unit.path
                ))));
                continue;
            };
            if let Some(e) = answer.get("error") {
                results.push(Err(InitError::Unit(crate::js::value::js_template(Some(e)))));
                continue;
            }
            let mut regs = Registrations::default();
            add_registrations(&mut regs, answer);
            *unit.regs.lock() = regs;
            results.push(Ok(()));
        }
        Ok(results)
    }

    /// The process groups of the running extension processes.
    pub fn process_groups(&self) -> Vec<i32> {
        self.processes()
            .iter()
            .filter(|p| p.is_alive())
            .map(|p| p.pgid())
            .collect()
    }

    /// Kills every process at once (a failed start-up).
    pub(crate) fn stop_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for p in self.processes() {
            p.kill();
        }
    }

    /// The extension flags registered by the units, for matching held CLI options (§A2).
    pub(crate) fn flags(&self) -> Vec<(Arc<Unit>, FlagReg)> {
        let mut out = Vec::new();
        for u in &self.units {
            for f in u.regs.lock().flags.clone() {
                out.push((Arc::clone(u), f));
            }
        }
        out
    }

    /// Sends each unit with flags its values (§B5), before `session_start`.
    pub(crate) fn send_flags(&self, given: &[(String, Value)]) {
        for u in &self.units {
            let flags = u.regs.lock().flags.clone();
            if flags.is_empty() {
                continue;
            }
            let mut values = Map::new();
            for f in flags {
                let v = given
                    .iter()
                    .find(|(n, _)| *n == f.name)
                    .map(|(_, v)| v.clone())
                    .or(f.default.clone());
                if let Some(v) = v {
                    values.insert(f.name.clone(), v);
                }
            }
            if let Some(p) = u.alive_process() {
                let mut fields = Map::new();
                fields.insert("ext".into(), u.path.clone().into());
                fields.insert("values".into(), Value::Object(values));
                p.notify("flags", fields);
            }
        }
    }
}

/// Why an `initialize` handshake failed.
enum InitError {
    /// pi-rpc's own reason (prefixed `Failed to load extension: `).
    Host(String),
    /// The unit's `error` text (or a failed result's message), as sent.
    Unit(String),
}

impl InitError {
    /// The whole message after `Failed to load extension "<path>": `.
    fn text(self) -> String {
        match self {
            InitError::Host(text) => format!("Failed to load extension: {text}"),
            InitError::Unit(text) => text,
        }
    }
}

/// Why waiting for a request's result ended without one.
#[derive(Debug)]
pub(super) enum WaitError {
    /// The process ended (the text says how).
    Gone(String),
    /// The request could not be sent.
    Unavailable(String),
    /// The run was aborted and the grace period passed.
    Aborted,
    /// The deadline passed (start-up, shutdown or the handler timeout).
    TimedOut,
}

impl WaitError {
    pub(super) fn text(&self, timeout: Option<Duration>) -> String {
        match self {
            WaitError::Gone(t) | WaitError::Unavailable(t) => t.clone(),
            WaitError::Aborted => "Operation aborted".into(),
            WaitError::TimedOut => format!(
                "Extension handler timed out after {} ms",
                timeout.map_or(0, |t| t.as_millis())
            ),
        }
    }
}

impl Extensions {
    /// Sends a request and waits for its result. `cancel` (the run's token) sends `cancel`,
    /// dismisses the request's dialogs and waits [`CANCEL_GRACE`] more; `deadline` bounds the
    /// wait (the clock stops while a dialog of the request waits for the client, §B11).
    pub(super) fn wait(
        &self,
        proc: &Arc<ExtProcess>,
        kind: &str,
        fields: Map<String, Value>,
        cancel: Option<&CancelToken>,
        timeout: Option<Duration>,
        on_update: &mut dyn FnMut(Value),
    ) -> Result<Outcome, WaitError> {
        let (tx, rx) = bounded::<Reply>(64);
        let id = match proc.request(kind, fields, Waiter::Channel(tx)) {
            Ok(id) => id,
            Err((text, _)) => return Err(WaitError::Unavailable(text)),
        };
        // Without a token the channel stays open (and silent) for the whole wait.
        let (cancel_tx, cancel_rx) = bounded::<()>(1);
        let hook_tx = cancel_tx.clone();
        let _hook = cancel.map(|c| {
            c.on_cancel(move || {
                let _ = hook_tx.try_send(());
            })
        });
        let _keep_open = cancel_tx;
        let mut deadline = timeout.map(|t| Instant::now() + t);
        let mut cancelled_at: Option<Instant> = None;
        loop {
            let limit = match (deadline, cancelled_at) {
                (_, Some(at)) => Some(at + CANCEL_GRACE),
                (d, None) => d,
            };
            let wait_for = limit.map(|l| l.saturating_duration_since(Instant::now()));
            let never = crossbeam_channel::never::<()>();
            let cancel_channel = if cancelled_at.is_none() {
                &cancel_rx
            } else {
                &never
            };
            let timer = match wait_for {
                Some(d) => crossbeam_channel::after(d),
                None => crossbeam_channel::never(),
            };
            select! {
                recv(rx) -> msg => match msg {
                    Ok(Reply::Done(o)) => return Ok(o),
                    Ok(Reply::Update(v)) => on_update(v),
                    Ok(Reply::Gone(t)) => return Err(WaitError::Gone(t)),
                    Err(_) => return Err(WaitError::Gone(proc.end_text().unwrap_or_default())),
                },
                recv(cancel_channel) -> _ => {
                    cancelled_at = Some(Instant::now());
                    let mut f = Map::new();
                    f.insert("id".into(), id.clone().into());
                    proc.notify("cancel", f);
                    self.dialogs.dismiss_scope(proc, &id);
                },
                recv(timer) -> _ => {
                    if cancelled_at.is_some() {
                        proc.forget(&id);
                        return Err(WaitError::Aborted);
                    }
                    if kind != "initialize" && self.dialogs.has_scope(proc, &id) {
                        // A person is deciding: the handler's clock stands still.
                        deadline = Some(Instant::now() + Duration::from_millis(50));
                        continue;
                    }
                    let mut f = Map::new();
                    f.insert("id".into(), id.clone().into());
                    proc.notify("cancel", f);
                    self.dialogs.dismiss_scope(proc, &id);
                    proc.forget(&id);
                    return Err(WaitError::TimedOut);
                },
            }
        }
    }
}
