//! The host's session life cycle (`extensions.md` §B3): `session_start` for a runtime, the end
//! of the old runtime and the start of a new one on session replacement (a new `initialize`
//! for every live process), and shutdown.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::json;

use super::host::{SHUTDOWN_BUDGET, STOP_GRACE};
use super::registrations::Registrations;
use super::Extensions;

impl Extensions {
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
        if let Some(mcp) = &self.mcp {
            mcp.end_session();
        }
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
        if let Some(mcp) = self.mcp() {
            mcp.begin_session(self.opts.cwd.clone());
        }
        if self.units.is_empty() {
            return;
        }
        self.initializing.store(true, Ordering::SeqCst);
        let mut node_results: Option<HashMap<String, Result<(), String>>> = None;
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
            if unit.node {
                // The Node host process is shared: its units are initialized together, after
                // every dead one was started again.
                continue;
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
        for unit in self
            .units
            .iter()
            .filter(|u| u.node && u.alive_process().is_some())
        {
            let result = node_results
                .get_or_insert_with(|| self.initialize_node_units(reason, true))
                .remove(&unit.path)
                .unwrap_or(Ok(()));
            if let Err(e) = result {
                // A unit whose factory failed keeps no registrations; the others keep running.
                self.error(&unit.path, "initialize", e);
                *unit.regs.lock() = Registrations::default();
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
        if let Some(mcp) = &self.mcp {
            mcp.end_session();
        }
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
            for p in self.processes() {
                s.spawn(move || p.terminate(STOP_GRACE));
            }
        });
    }
}
