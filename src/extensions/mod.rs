//! Extensions (`spec/extensions.md`): process extensions speaking pi-rpc's extension protocol
//! (protocol 1), the UI sub-protocol, extension commands and tools.
//!
//! `discovery` finds the units in pi's load order; `manifest` reads `*.ext.json`; `process`
//! runs one child and its threads; `ui` holds the dialogs waiting for the client;
//! `registrations` what each unit registered; `host` is the runtime the rest of pi-rpc talks to
//! (units, start-up, waiting), with its methods by concern in `lifecycle` (replacement,
//! shutdown), `dispatch`
//! (events, pi's combination rules), `commands`, `ext_tool` and `calls` (what extensions ask);
//! `plan` starts it once a mode has its output. TypeScript/JavaScript units run in the optional
//! Node extension host (`node_host`, §B15): one Node process, borrowing pi's own loader and
//! runner from the user's pi package, serves all of them over the same protocol, each message
//! naming its unit in `ext`. Without the host such a unit is a load failure, never skipped (an
//! extension is often a permission gate, and running without it would silently allow
//! everything it guards).

mod calls;
mod commands;
pub mod discovery;
pub(crate) mod dispatch;
mod ext_tool;
pub(crate) use ext_tool::install_tools;
pub(crate) use ui::write_notify;
pub(crate) mod host;
mod lifecycle;
pub(crate) mod manifest;
pub(crate) mod node_host;
mod plan;
pub(crate) mod process;
pub(crate) mod registrations;
pub(crate) mod ui;

pub use discovery::{discover, DiscoveryOptions};
pub use host::{CallReply, Extensions};
pub use plan::ExtensionPlan;

/// Why start-up stops at an extension, with pi's two stderr lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    /// The unit's absolute path (as pi names it in `Failed to load extension "<path>"`).
    pub path: String,
    /// The error after the quoted path.
    pub message: String,
}

impl LoadFailure {
    /// The lines pi writes to stderr before exiting with code 1 (`extensions.md` §A2, §B2).
    pub fn stderr_lines(&self) -> [String; 2] {
        [
            format!(
                "Error: Failed to load extension \"{}\": {}",
                self.path, self.message
            ),
            "Hint: Start without extensions using \"pi-rpc --no-extensions\".".to_string(),
        ]
    }
}
