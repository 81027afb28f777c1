//! Extension commands (`extensions.md` §A7.3, §A8, §B8): invocation names (`name:N` when
//! several owners register one), `get_commands` items, running a command for `prompt` without
//! blocking the processor, and pi's built-in `/llama` and `/mcp`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::host::{Builtin, CallReply, Extensions, Unit};
use super::process::{Outcome, Waiter};
use crate::protocol::Response;

/// Who a command belongs to.
#[derive(Clone)]
pub(super) enum CommandOwner {
    Unit(Arc<Unit>),
    Builtin(Builtin),
}

/// A command as `get_commands` and `prompt "/name"` see it.
#[derive(Clone)]
pub(crate) struct ResolvedCommand {
    /// The invocation name (`name`, or `name:N` when several extensions registered it).
    pub invocation: String,
    pub(super) registered: String,
    pub(super) description: Option<String>,
    pub(super) owner: CommandOwner,
}

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
            if *b == Builtin::Mcp && self.unit_registered_command("mcp") {
                // An extension's own /mcp replaces the built-in support (mcp.md §1).
                continue;
            }
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
            CommandOwner::Builtin(Builtin::Mcp) if self.mcp.is_some() => {
                return self.run_mcp_async(args, handled);
            }
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
            for (method, params) in deferred {
                if method == "ctx.shutdown" {
                    me.perform_later(&method, &params, CallReply(Box::new(|_| {})));
                } else if let Err(e) = me.perform(&method, &params) {
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

    /// Runs a command and waits for it (print modes, where prompts run one after another);
    /// a failure goes where the mode sends extension errors.
    pub(crate) fn run_command_blocking(&self, cmd: ResolvedCommand, args: String) {
        let unit = match cmd.owner {
            CommandOwner::Builtin(b) => return self.run_builtin(b, &args),
            CommandOwner::Unit(u) => u,
        };
        let error_path = format!("command:{}", cmd.invocation);
        let Some(proc) = unit.alive_process() else {
            return self.error(
                &error_path,
                "command",
                format!("Extension {} is not running", unit.path),
            );
        };
        let mut fields = Map::new();
        fields.insert("ext".into(), unit.path.clone().into());
        fields.insert("name".into(), cmd.registered.clone().into());
        fields.insert("args".into(), args.into());
        let timeout = self.opts.handler_timeout;
        match self.wait(&proc, "command", fields, None, timeout, &mut |_| {}) {
            Ok(o) if o.ok => {}
            Ok(o) => self.error(&error_path, "command", o.error),
            Err(e) => self.error(&error_path, "command", e.text(timeout)),
        }
    }

    /// `/llama` and `/mcp` in RPC mode (§A8).
    pub(super) fn run_builtin(&self, b: Builtin, args: &str) {
        let notify = |message: String, kind: &str| {
            if self.opts.mode != "rpc" {
                return; // no UI without a client
            }
            super::ui::write_notify(&self.out, &message, kind);
        };
        match b {
            Builtin::Llama => notify("/llama is available in interactive mode".into(), "warning"),
            Builtin::Mcp if self.mcp.is_some() => {
                if let Some(mcp) = &self.mcp {
                    let dialogs = std::sync::Arc::clone(&self.dialogs);
                    let select = move |title: &str, options: &[String]| {
                        dialogs.select_native(title, options)
                    };
                    mcp.command(args, &select);
                }
            }
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

    /// `/mcp` for `prompt` in RPC mode: it waits for the start-up connections (and maybe a
    /// `select`), so it runs on a thread of its own; `handled` is written after its output.
    fn run_mcp_async(&self, args: String, handled: impl FnOnce() + Send + 'static) {
        let Some(me) = self.me.upgrade() else {
            return handled();
        };
        let spawned = std::thread::Builder::new()
            .name("mcp-command".into())
            .spawn(move || {
                me.run_builtin(Builtin::Mcp, &args);
                handled();
            });
        if let Err(e) = spawned {
            eprintln!("pi-rpc: cannot run /mcp: {e}");
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
