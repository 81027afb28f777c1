//! The extension host (`extensions.md` Part B): the units in load order with their
//! registrations, event dispatch with pi's combination rules, commands, tools, and the calls
//! extensions make.
//!
//! Dispatch runs on the thread that reaches the event (the agent thread for agent events, the
//! processor for none: commands are asynchronous) and waits for each subscribed unit in load
//! order, without holding the state lock. Calls from an extension are served on its process's
//! reader thread, in arrival order, so a handler's UI reaches stdout before the result that
//! releases the event (§B13). State-changing calls go through [`Actions`], which the RPC layer
//! implements over the session state.

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
use super::ui::Dialogs;
use super::LoadFailure;
use crate::cancel::CancelToken;
use crate::output::Output;
use crate::protocol::command::UiResponse;
use crate::protocol::extension_ui::{degraded_value, UiMethod};
use crate::protocol::{Event, Response};

/// How long a cancelled request's result is waited for (§B11).
const CANCEL_GRACE: Duration = Duration::from_millis(1000);
/// The total time `session_shutdown` handlers get at exit (§B3).
const SHUTDOWN_BUDGET: Duration = Duration::from_millis(3000);
/// Each step of stopping a process: stdin closed, SIGTERM, SIGKILL (§B3).
const STOP_GRACE: Duration = Duration::from_millis(1000);

/// The calls of §B7 that read or change the session, performed by the RPC layer.
pub(crate) trait Actions: Send + Sync {
    /// Performs `method`; `Err` answers the call with `ok:false` and that message.
    fn call(&self, method: &str, params: &Value) -> Result<Value, String>;
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
}

#[derive(Clone, Debug)]
struct Subscription {
    event: String,
    awaited: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct CommandReg {
    pub name: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct ToolReg {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub prompt_snippet: Option<String>,
    pub prompt_guidelines: Vec<String>,
    pub default_active: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct FlagReg {
    pub name: String,
    pub string: bool,
    pub default: Option<Value>,
}

#[derive(Clone, Debug, Default)]
struct Registrations {
    subscriptions: Vec<Subscription>,
    commands: Vec<CommandReg>,
    tools: Vec<ToolReg>,
    flags: Vec<FlagReg>,
}

/// One extension unit.
pub(crate) struct Unit {
    /// The unit path (a manifest's absolute path), as `extension_error` and `sourceInfo` name it.
    pub path: String,
    source_info: Value,
    launch: Launch,
    proc: Mutex<Option<Arc<ExtProcess>>>,
    regs: Mutex<Registrations>,
}

impl Unit {
    fn process(&self) -> Option<Arc<ExtProcess>> {
        self.proc.lock().clone()
    }

    fn alive_process(&self) -> Option<Arc<ExtProcess>> {
        self.process().filter(|p| p.is_alive())
    }

    fn subscription(&self, event: &str) -> Option<bool> {
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
enum Builtin {
    Llama,
    Mcp,
}

impl Builtin {
    fn name(self) -> &'static str {
        match self {
            Builtin::Llama => "llama",
            Builtin::Mcp => "mcp",
        }
    }
    fn description(self) -> &'static str {
        match self {
            Builtin::Llama => "Manage llama.cpp router models",
            Builtin::Mcp => {
                "Manage MCP servers: sign in, reconnect, enable or disable, and change exposure"
            }
        }
    }
    fn path(self) -> &'static str {
        match self {
            Builtin::Llama => "builtin:llama.cpp",
            Builtin::Mcp => "builtin:mcp",
        }
    }
}

/// Who a command belongs to.
#[derive(Clone)]
enum CommandOwner {
    Unit(Arc<Unit>),
    Builtin(Builtin),
}

/// A command as `get_commands` and `prompt "/name"` see it.
#[derive(Clone)]
pub(crate) struct ResolvedCommand {
    /// The invocation name (`name`, or `name:N` when several extensions registered it).
    pub invocation: String,
    registered: String,
    description: Option<String>,
    owner: CommandOwner,
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
    fn block(reason: String) -> Gate {
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

/// The extension host.
pub struct Extensions {
    units: Vec<Arc<Unit>>,
    builtins: Vec<Builtin>,
    dialogs: Arc<Dialogs>,
    out: Output,
    opts: HostOptions,
    actions: Mutex<Option<Arc<dyn Actions>>>,
    /// Commands waiting for their result, by (process, request id): their deferred
    /// `sendUserMessage` calls run after the `handled` response.
    command_scopes: Mutex<HashMap<(usize, String), Vec<Value>>>,
    /// Set while processes are deliberately stopped: their end is not an error.
    stopping: AtomicBool,
    /// Set while units initialize: an exit then is that unit's load failure (start-up) or
    /// its `initialize` error (a replacement), not a `process` error.
    initializing: AtomicBool,
    me: Weak<Extensions>,
}

/// The extensions of a run without any: dispatch costs one check.
impl Extensions {
    pub(crate) fn none(out: Output) -> Arc<Extensions> {
        Self::with_units(Vec::new(), Vec::new(), out, HostOptions::inert())
    }

    fn with_units(
        units: Vec<Arc<Unit>>,
        builtins: Vec<Builtin>,
        out: Output,
        opts: HostOptions,
    ) -> Arc<Extensions> {
        Arc::new_cyclic(|me| Extensions {
            units,
            builtins,
            dialogs: Dialogs::new(out.clone()),
            out,
            opts,
            actions: Mutex::new(None),
            command_scopes: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            initializing: AtomicBool::new(false),
            me: me.clone(),
        })
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

    fn error(&self, path: &str, event: &str, error: String) {
        self.out.event(&Event::ExtensionError {
            extension_path: path.to_string(),
            event: event.to_string(),
            error,
        });
    }

    fn unit_of(&self, proc: &Arc<ExtProcess>) -> Option<Arc<Unit>> {
        self.units
            .iter()
            .find(|u| u.process().is_some_and(|p| Arc::ptr_eq(&p, proc)))
            .cloned()
    }
}

impl HostOptions {
    fn inert() -> HostOptions {
        HostOptions {
            cwd: std::path::PathBuf::from("/"),
            agent_dir: std::path::PathBuf::from("/"),
            startup_timeout: Duration::from_millis(10_000),
            handler_timeout: None,
            builtin_llama: false,
            builtin_mcp: false,
        }
    }
}

/// `sourceInfo` of a unit (§A2).
fn source_info(unit: &FoundUnit, opts: &HostOptions) -> Value {
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
fn launch_of(unit: &FoundUnit) -> Result<Launch, String> {
    match unit.kind {
        UnitKind::Manifest => manifest::read(&unit.path),
        UnitKind::Executable => Ok(Launch {
            argv: vec![unit.path.to_string_lossy().into_owned()],
            env: Vec::new(),
        }),
        UnitKind::Node => Err(
            "TypeScript/JavaScript extensions need the Node extension host \
             (set piRpc.nodeExtensionHost in settings.json or PI_RPC_NODE_EXTENSION_HOST=1)"
                .into(),
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
        for f in &found {
            let path = f.path.to_string_lossy().into_owned();
            let launch = launch_of(f).map_err(|e| LoadFailure {
                path: path.clone(),
                message: format!("Failed to load extension: {e}"),
            })?;
            units.push(Arc::new(Unit {
                source_info: source_info(f, &opts),
                path,
                launch,
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
        for unit in &host.units {
            if let Err(e) = host.initialize(unit, "startup") {
                host.stop_all();
                return Err(LoadFailure {
                    path: unit.path.clone(),
                    message: format!("Failed to load extension: {e}"),
                });
            }
        }
        host.initializing.store(false, Ordering::SeqCst);
        Ok(host)
    }

    fn spawn_unit(&self, unit: &Arc<Unit>) -> Result<(), String> {
        let inbox: Arc<dyn Inbox> = match self.me.upgrade() {
            Some(me) => me,
            None => return Err("the extension host is gone".into()),
        };
        let proc = ExtProcess::spawn(
            &unit.path,
            &unit.launch.argv,
            &unit.launch.env,
            &self.opts.cwd,
            inbox,
        )?;
        *unit.proc.lock() = Some(proc);
        Ok(())
    }

    /// The `initialize` handshake; the unit's registrations are replaced by the answer's.
    fn initialize(&self, unit: &Arc<Unit>, reason: &str) -> Result<(), String> {
        let Some(proc) = unit.process() else {
            return Err("extension process is not running".into());
        };
        let mut fields = Map::new();
        fields.insert("protocol".into(), manifest::PROTOCOL.into());
        fields.insert("reason".into(), reason.into());
        fields.insert(
            "host".into(),
            json!({"name": "pi-rpc", "version": env!("CARGO_PKG_VERSION")}),
        );
        fields.insert("mode".into(), "rpc".into());
        fields.insert("hasUI".into(), true.into());
        fields.insert("cwd".into(), self.opts.cwd.to_string_lossy().into());
        fields.insert(
            "agentDir".into(),
            self.opts.agent_dir.to_string_lossy().into(),
        );
        fields.insert("units".into(), json!([{ "ext": unit.path }]));
        let timeout = self.opts.startup_timeout;
        let outcome = self
            .wait(
                &proc,
                "initialize",
                fields,
                None,
                Some(timeout),
                &mut |_| {},
            )
            .map_err(|e| match e {
                WaitError::Gone(text) => format!("{text} before initialize"),
                WaitError::TimedOut => {
                    format!("no initialize result within {} ms", timeout.as_millis())
                }
                WaitError::Aborted => "initialize was cancelled".into(),
                WaitError::Unavailable(text) => text,
            })?;
        if !outcome.ok {
            return Err(outcome.error);
        }
        let units = outcome
            .value
            .get("units")
            .and_then(Value::as_array)
            .ok_or("malformed initialize result: no \"units\" array")?;
        let answer = units
            .iter()
            .find(|u| u.get("ext").and_then(Value::as_str) == Some(unit.path.as_str()))
            .or_else(|| (units.len() == 1).then(|| &units[0]))
            .ok_or_else(|| format!("malformed initialize result: no unit {}", unit.path))?;
        if let Some(e) = answer.get("error") {
            return Err(crate::js::value::js_template(Some(e)));
        }
        let mut regs = Registrations::default();
        add_registrations(&mut regs, answer);
        *unit.regs.lock() = regs;
        Ok(())
    }

    /// The process groups of the running extension processes.
    pub fn process_groups(&self) -> Vec<i32> {
        self.units
            .iter()
            .filter_map(|u| u.alive_process().map(|p| p.pgid()))
            .collect()
    }

    /// Kills every process at once (a failed start-up).
    pub(crate) fn stop_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for u in &self.units {
            if let Some(p) = u.process() {
                p.kill();
            }
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

/// Reads registrations (`initialize` unit answer or `register` message) into `regs`: lists
/// append; a command or tool of an existing name replaces it in place.
fn add_registrations(regs: &mut Registrations, v: &Value) {
    let items = |key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for s in items("subscriptions") {
        let Some(event) = s.get("event").and_then(Value::as_str) else {
            continue;
        };
        let awaited = s.get("await").and_then(Value::as_bool).unwrap_or(true);
        match regs.subscriptions.iter_mut().find(|x| x.event == event) {
            Some(x) => x.awaited |= awaited,
            None => regs.subscriptions.push(Subscription {
                event: event.to_string(),
                awaited,
            }),
        }
    }
    for c in items("commands") {
        let Some(name) = c.get("name").and_then(Value::as_str) else {
            continue;
        };
        let reg = CommandReg {
            name: name.to_string(),
            description: c
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        match regs.commands.iter_mut().find(|x| x.name == name) {
            Some(x) => *x = reg,
            None => regs.commands.push(reg),
        }
    }
    for t in items("tools") {
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            continue;
        };
        let reg = ToolReg {
            name: name.to_string(),
            description: t
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            parameters: t
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            prompt_snippet: t
                .get("promptSnippet")
                .and_then(Value::as_str)
                .map(str::to_string),
            prompt_guidelines: t
                .get("promptGuidelines")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            default_active: t
                .get("defaultActive")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        };
        match regs.tools.iter_mut().find(|x| x.name == name) {
            Some(x) => *x = reg,
            None => regs.tools.push(reg),
        }
    }
    for f in items("flags") {
        let Some(name) = f.get("name").and_then(Value::as_str) else {
            continue;
        };
        regs.flags.push(FlagReg {
            name: name.to_string(),
            string: f.get("type").and_then(Value::as_str) == Some("string"),
            default: f.get("default").cloned(),
        });
    }
}

/// Why waiting for a request's result ended without one.
#[derive(Debug)]
enum WaitError {
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
    fn text(&self, timeout: Option<Duration>) -> String {
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
    fn wait(
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

    /// The units subscribed to `event` (with whether they are awaited), in load order.
    fn subscribers(&self, event: &str) -> Vec<(Arc<Unit>, bool)> {
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
    fn send_event(
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

    /// An observed event (§A4's generic dispatch): every subscribed unit in load order; a
    /// failure is an `extension_error` and the next unit still runs. Returns each awaited
    /// unit's handler results (an array result is several handlers' results).
    pub fn emit(&self, payload: &Value, cancel: Option<&CancelToken>) -> Vec<Value> {
        self.emit_until(payload, cancel, None, |_| false)
    }

    fn emit_until(
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
            let outcome = match self.send_event(&unit, awaited, &payload, cancel, None) {
                None => continue,
                Some(Err(e)) => {
                    self.error(&unit.path, "tool_result", e);
                    continue;
                }
                Some(Ok(o)) if !o.ok => {
                    self.error(&unit.path, "tool_result", o.error);
                    continue;
                }
                Some(Ok(o)) => o,
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
            let outcome = match self.send_event(&unit, awaited, &payload, cancel, None) {
                None => continue,
                Some(Err(e)) => {
                    self.error(&unit.path, "message_end", e);
                    continue;
                }
                Some(Ok(o)) if !o.ok => {
                    self.error(&unit.path, "message_end", o.error);
                    continue;
                }
                Some(Ok(o)) => o,
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
            let outcome = match self.send_event(&unit, awaited, &payload, None, None) {
                None => continue,
                Some(Err(e)) => {
                    self.error(&unit.path, "input", e);
                    continue;
                }
                Some(Ok(o)) if !o.ok => {
                    self.error(&unit.path, "input", o.error);
                    continue;
                }
                Some(Ok(o)) => o,
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
            let outcome = match self.send_event(&unit, awaited, &payload, cancel, None) {
                None => continue,
                Some(Err(e)) => {
                    self.error(&unit.path, "before_agent_start", e);
                    continue;
                }
                Some(Ok(o)) if !o.ok => {
                    self.error(&unit.path, "before_agent_start", o.error);
                    continue;
                }
                Some(Ok(o)) => o,
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
            let outcome = match self.send_event(&unit, awaited, &payload, cancel, None) {
                None => continue,
                Some(Err(e)) => {
                    self.error(&unit.path, "context", e);
                    continue;
                }
                Some(Ok(o)) if !o.ok => {
                    self.error(&unit.path, "context", o.error);
                    continue;
                }
                Some(Ok(o)) => o,
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
                        let e = "user_bash handler returned an invalid result (pi-rpc supports \
                                 {result: {output, exitCode, cancelled, truncated}} only)"
                            .to_string();
                        self.error(&unit.path, "user_bash", e.clone());
                        return Err(e);
                    }
                }
            }
        }
        Ok(None)
    }

    /// `session_start` then `resources_discover` (§A4, §A7.1).
    pub fn session_start(&self, reason: &str, previous_file: Option<&str>) {
        let mut payload = json!({"type": "session_start", "reason": reason});
        if let Some(p) = previous_file {
            payload["previousSessionFile"] = p.into();
        }
        self.emit(&payload, None);
        let discover_reason = if reason == "reload" {
            "reload"
        } else {
            "startup"
        };
        self.emit(
            &json!({"type": "resources_discover", "cwd": self.opts.cwd.to_string_lossy(),
                    "reason": discover_reason}),
            None,
        );
    }

    /// The first half of a session replacement (§A7.7): `session_shutdown{reason}` handlers,
    /// before the old session is replaced.
    pub fn end_runtime(&self, reason: &str, target: Option<&str>) {
        if self.units.is_empty() {
            return;
        }
        let mut payload = json!({"type": "session_shutdown", "reason": reason});
        if let Some(t) = target {
            payload["targetSessionFile"] = t.into();
        }
        self.emit(&payload, None);
    }

    /// The second half (§B3): a fresh runtime in every unit (dead processes started again,
    /// then `initialize` with the new `reason`), then `session_start{reason}`.
    pub fn start_runtime(&self, reason: &str, previous_file: Option<&str>) {
        if self.units.is_empty() {
            return;
        }
        self.initializing.store(true, Ordering::SeqCst);
        for unit in &self.units {
            if unit.alive_process().is_none() {
                if let Some(old) = unit.process() {
                    old.kill();
                }
                if let Err(e) = self.spawn_unit(unit) {
                    self.error(&unit.path, "initialize", e);
                    continue;
                }
            }
            if let Err(e) = self.initialize(unit, reason) {
                self.error(&unit.path, "initialize", e);
                if let Some(p) = unit.process() {
                    self.stopping.store(true, Ordering::SeqCst);
                    p.kill();
                    self.stopping.store(false, Ordering::SeqCst);
                }
            }
        }
        self.initializing.store(false, Ordering::SeqCst);
        self.session_start(reason, previous_file);
    }

    /// stdin ended (§B3, §A7.9): pending dialogs resolve to their defaults, the
    /// `session_shutdown{quit}` handlers run (at most [`SHUTDOWN_BUDGET`] in all), then every
    /// process is stopped: stdin closed, SIGTERM, SIGKILL of its group.
    pub fn shutdown(&self) {
        self.dialogs.close();
        if self.units.is_empty() {
            return;
        }
        let deadline = Instant::now() + SHUTDOWN_BUDGET;
        let payload = json!({"type": "session_shutdown", "reason": "quit"});
        for (unit, awaited) in self.subscribers("session_shutdown") {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.send_event(&unit, awaited, &payload, None, Some(left)) {
                Some(Err(e)) => self.error(&unit.path, "session_shutdown", e),
                Some(Ok(o)) if !o.ok => self.error(&unit.path, "session_shutdown", o.error),
                _ => {}
            }
        }
        self.stopping.store(true, Ordering::SeqCst);
        std::thread::scope(|s| {
            for unit in &self.units {
                if let Some(p) = unit.process() {
                    s.spawn(move || p.terminate(STOP_GRACE));
                }
            }
        });
    }
}

/// What `input` handlers decided.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum InputOutcome {
    /// Go on with this text and these image blocks.
    Continue { text: String, images: Vec<Value> },
    /// A handler took the input: the command answers `disposition:"handled"`.
    Handled,
}

/// The RPC `bash` response shape a `user_bash` `{result}` must have.
fn valid_bash_result(r: &Value) -> bool {
    r.get("output").is_some_and(Value::is_string)
        && r.get("cancelled").is_some_and(Value::is_boolean)
        && r.get("truncated").is_some_and(Value::is_boolean)
        && r.get("exitCode")
            .is_some_and(|c| c.is_number() || c.is_null())
}

/// A unit's `value`: one handler's result, or an array of several handlers' results (§B6).
fn handler_values(v: Value) -> Vec<Value> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items.into_iter().filter(|v| !v.is_null()).collect(),
        other => vec![other],
    }
}

// ---- commands ----------------------------------------------------------------------------

impl Extensions {
    /// Every command in `get_commands` order with its invocation name: unit commands in load
    /// and registration order, then the built-ins; a name registered by several owners becomes
    /// `name:1`, `name:2`... in load order, skipping taken names (§A8).
    pub(crate) fn commands(&self) -> Vec<ResolvedCommand> {
        let mut all: Vec<ResolvedCommand> = Vec::new();
        for u in &self.units {
            for c in u.regs.lock().commands.clone() {
                all.push(ResolvedCommand {
                    invocation: c.name.clone(),
                    registered: c.name,
                    description: c.description,
                    owner: CommandOwner::Unit(Arc::clone(u)),
                });
            }
        }
        for b in &self.builtins {
            all.push(ResolvedCommand {
                invocation: b.name().into(),
                registered: b.name().into(),
                description: Some(b.description().into()),
                owner: CommandOwner::Builtin(*b),
            });
        }
        let mut counts: HashMap<String, usize> = HashMap::new();
        for c in &all {
            *counts.entry(c.registered.clone()).or_default() += 1;
        }
        let mut taken: std::collections::HashSet<String> = all
            .iter()
            .filter(|c| counts[&c.registered] == 1)
            .map(|c| c.registered.clone())
            .collect();
        let mut next: HashMap<String, usize> = HashMap::new();
        for c in all.iter_mut() {
            if counts[&c.registered] > 1 {
                let n = next.entry(c.registered.clone()).or_insert(0);
                loop {
                    *n += 1;
                    let candidate = format!("{}:{}", c.registered, n);
                    if taken.insert(candidate.clone()) {
                        c.invocation = candidate;
                        break;
                    }
                }
            }
        }
        all
    }

    /// `get_commands` items of the extension commands (§A8).
    pub fn command_items(&self) -> Vec<Value> {
        self.commands()
            .into_iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("name".into(), c.invocation.into());
                if let Some(d) = c.description {
                    m.insert("description".into(), d.into());
                }
                m.insert("source".into(), "extension".into());
                let info = match &c.owner {
                    CommandOwner::Unit(u) => u.source_info.clone(),
                    CommandOwner::Builtin(b) => json!({"path": b.path(), "source": "builtin",
                        "scope": "temporary", "origin": "top-level"}),
                };
                m.insert("sourceInfo".into(), info);
                Value::Object(m)
            })
            .collect()
    }

    /// The extension command `text` invokes (`/name args`), with its arguments (§A7.3).
    pub(crate) fn find_command(&self, text: &str) -> Option<(ResolvedCommand, String)> {
        let rest = text.strip_prefix('/')?;
        if self.units.is_empty() && self.builtins.is_empty() {
            return None;
        }
        let (name, args) = match rest.find(' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        self.commands()
            .into_iter()
            .find(|c| c.invocation == name)
            .map(|c| (c, args.to_string()))
    }

    /// Runs a command for `prompt` (§B8): the response `{"disposition":"handled"}` is written
    /// when the handler's result arrives (after its UI and errors), on the process's reader
    /// thread; the caller returns at once. `sendUserMessage` calls made meanwhile run after it.
    pub(crate) fn run_command(&self, cmd: ResolvedCommand, args: String, reply_id: Option<Value>) {
        let handled = {
            let out = self.out.clone();
            move || {
                out.response(&Response::ok(
                    reply_id,
                    "prompt",
                    Some(json!({"disposition": "handled"})),
                ))
            }
        };
        let unit = match cmd.owner {
            CommandOwner::Builtin(b) => {
                self.run_builtin(b, &args);
                return handled();
            }
            CommandOwner::Unit(u) => u,
        };
        let error_path = format!("command:{}", cmd.invocation);
        let Some(proc) = unit.alive_process() else {
            self.error(
                &error_path,
                "command",
                format!("Extension {} is not running", unit.path),
            );
            return handled();
        };
        let me = self.me.clone();
        let key_proc = Arc::as_ptr(&proc) as usize;
        let scope_slot: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = Arc::clone(&scope_slot);
        let on_done = move |result: Result<Outcome, String>| {
            let Some(me) = me.upgrade() else { return };
            match result {
                Ok(o) if o.ok => {}
                Ok(o) => me.error(&error_path, "command", o.error),
                Err(e) => me.error(&error_path, "command", e),
            }
            handled();
            let deferred = slot
                .lock()
                .take()
                .and_then(|id| me.command_scopes.lock().remove(&(key_proc, id)))
                .unwrap_or_default();
            for params in deferred {
                if let Err(e) = me.perform("pi.sendUserMessage", &params) {
                    me.error("<runtime>", "send_user_message", e);
                }
            }
        };
        let mut fields = Map::new();
        fields.insert("ext".into(), unit.path.clone().into());
        fields.insert("name".into(), cmd.registered.clone().into());
        fields.insert("args".into(), args.into());
        // The scope is registered before the request is sent, under the same lock the
        // completion takes, so a call made at once in the handler finds it.
        let mut scopes = self.command_scopes.lock();
        match proc.request("command", fields, Waiter::Callback(Box::new(on_done))) {
            Ok(id) => {
                if proc.is_pending(&id) {
                    scopes.insert((key_proc, id.clone()), Vec::new());
                    *scope_slot.lock() = Some(id);
                }
            }
            Err((text, waiter)) => {
                drop(scopes);
                if let Waiter::Callback(f) = waiter {
                    f(Err(text));
                }
            }
        }
    }

    /// `/llama` and `/mcp` in RPC mode (§A8).
    fn run_builtin(&self, b: Builtin, args: &str) {
        let notify = |message: String, kind: &str| {
            let m = UiMethod::Notify {
                message,
                notify_type: Some(kind.to_string()),
            };
            self.out
                .record(&crate::protocol::extension_ui::UiRequest::new(
                    &uuid::Uuid::new_v4().to_string(),
                    &m,
                ));
        };
        match b {
            Builtin::Llama => notify("/llama is available in interactive mode".into(), "warning"),
            Builtin::Mcp => {
                let verb = args.split(' ').next().unwrap_or("");
                if !matches!(verb, "" | "login" | "logout" | "reconnect") {
                    return notify(
                        "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]"
                            .into(),
                        "warning",
                    );
                }
                let global = self.opts.agent_dir.join("mcp.json");
                let project = self.opts.cwd.join(".pi").join("mcp.json");
                if global.exists() || project.exists() {
                    notify(
                        "MCP servers are configured, but this pi-rpc cannot connect to MCP servers yet."
                            .into(),
                        "warning",
                    );
                } else {
                    notify(
                        format!(
                            "No MCP servers configured. Add them to {} or .pi/mcp.json.",
                            global.display()
                        ),
                        "info",
                    );
                }
            }
        }
    }

    /// Whether `text` (a `steer` / `follow_up` message) names an extension command, which
    /// cannot be queued (§A7.3).
    pub fn queued_command_error(&self, text: &str) -> Option<String> {
        let (cmd, _) = self.find_command(text)?;
        Some(format!(
            "Extension command \"/{}\" cannot be queued. Use prompt() or execute the command when not streaming.",
            cmd.invocation
        ))
    }
}

// ---- tools -------------------------------------------------------------------------------

/// An extension tool, offered to the model like a built-in (§B8).
pub(crate) struct ExtTool {
    host: Weak<Extensions>,
    unit: Arc<Unit>,
    reg: ToolReg,
}

impl Extensions {
    /// The active extension tools, in load and registration order.
    pub(crate) fn tools(&self) -> Vec<Arc<dyn crate::tools::Tool>> {
        let mut out: Vec<Arc<dyn crate::tools::Tool>> = Vec::new();
        for u in &self.units {
            for t in u.regs.lock().tools.clone() {
                if t.default_active {
                    out.push(Arc::new(ExtTool {
                        host: self.me.clone(),
                        unit: Arc::clone(u),
                        reg: t,
                    }));
                }
            }
        }
        out
    }
}

impl crate::tools::Tool for ExtTool {
    fn name(&self) -> &str {
        &self.reg.name
    }
    fn is_extension(&self) -> bool {
        true
    }
    fn description(&self) -> String {
        self.reg.description.clone()
    }
    fn parameters(&self) -> Value {
        self.reg.parameters.clone()
    }
    fn prompt_snippet(&self) -> Option<&str> {
        self.reg.prompt_snippet.as_deref()
    }
    fn guidelines(&self) -> Vec<&str> {
        self.reg
            .prompt_guidelines
            .iter()
            .map(String::as_str)
            .collect()
    }
    fn execute(
        &self,
        args: &Value,
        ctx: &crate::tools::ToolContext<'_>,
        on_update: &mut dyn FnMut(Value),
    ) -> Result<crate::tools::ToolOutput, String> {
        let not_running = || format!("Extension {} is not running", self.unit.path);
        let host = self.host.upgrade().ok_or_else(not_running)?;
        let proc = self.unit.alive_process().ok_or_else(not_running)?;
        let mut fields = Map::new();
        fields.insert("ext".into(), self.unit.path.clone().into());
        fields.insert("name".into(), self.reg.name.clone().into());
        fields.insert("toolCallId".into(), ctx.call_id.into());
        fields.insert("params".into(), args.clone());
        let timeout = host.opts.handler_timeout;
        let o = host
            .wait(&proc, "tool", fields, Some(ctx.cancel), timeout, on_update)
            .map_err(|e| e.text(timeout))?;
        if !o.ok {
            return Err(o.error);
        }
        let v = o.value;
        Ok(crate::tools::ToolOutput {
            content: v
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            details: Some(v.get("details").cloned().unwrap_or_else(|| json!({}))),
            structured_content: v.get("structuredContent").cloned(),
            is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
            terminate: v.get("terminate").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

// ---- calls from extensions ----------------------------------------------------------------

impl Extensions {
    /// Performs a state call through the installed [`Actions`].
    fn perform(&self, method: &str, params: &Value) -> Result<Value, String> {
        let actions = self.actions.lock().clone();
        match actions {
            Some(a) => a.call(method, params),
            None => Err(format!("{method} is not available yet")),
        }
    }

    fn handle_call(&self, proc: &Arc<ExtProcess>, unit: &Unit, msg: &Map<String, Value>) {
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
        if method == "pi.sendUserMessage" {
            if let Some(scope) = scope {
                let key = (Arc::as_ptr(proc) as usize, scope.to_string());
                let mut scopes = self.command_scopes.lock();
                if let Some(list) = scopes.get_mut(&key) {
                    // Runs after the command's `handled` response (§A7.3).
                    list.push(params.clone());
                    drop(scopes);
                    return answer(Ok(Value::Null));
                }
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
        let Some(unit) = self.unit_of(proc) else {
            return;
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
            .unit_of(proc)
            .map_or_else(|| proc.name.clone(), |u| u.path.clone());
        self.error(&path, "protocol", text);
    }

    fn exited(&self, proc: &Arc<ExtProcess>, text: String) {
        self.dialogs.forget_process(proc);
        if self.stopping.load(Ordering::SeqCst) || self.initializing.load(Ordering::SeqCst) {
            return;
        }
        if let Some(u) = self.unit_of(proc) {
            self.error(&u.path, "process", text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_append_and_replace_by_name() {
        let mut regs = Registrations::default();
        add_registrations(
            &mut regs,
            &json!({"subscriptions":[{"event":"tool_call"},{"event":"message_update","await":false}],
                    "commands":[{"name":"a","description":"one"},{"name":"b"}]}),
        );
        add_registrations(
            &mut regs,
            &json!({"commands":[{"name":"a","description":"two"}],"tools":[{"name":"t"}]}),
        );
        let names: Vec<_> = regs
            .commands
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_deref()))
            .collect();
        assert_eq!(names, [("a", Some("two")), ("b", None)]);
        assert!(!regs.subscriptions[1].awaited);
        assert_eq!(
            regs.tools[0].parameters,
            json!({"type":"object","properties":{}})
        );
    }

    #[test]
    fn handler_values_flatten_arrays_and_drop_undefined() {
        assert_eq!(handler_values(Value::Null), Vec::<Value>::new());
        assert_eq!(handler_values(json!([null, {"a":1}])), vec![json!({"a":1})]);
        assert_eq!(handler_values(json!({"b":2})), vec![json!({"b":2})]);
    }
}
