//! Extensions (`spec/extensions.md`). This release finds them but cannot run them yet.
//!
//! Discovery is complete: `-e` paths, the project's settings entries and `.pi/extensions/` (when
//! the project is trusted), the user's settings entries and `<agentDir>/extensions/`, in pi's
//! order, with pi's directory rules and the manifest/executable units of pi-rpc's extension
//! protocol. What is missing is the runtime (process extensions, the UI sub-protocol, the Node
//! host). Until it exists, a configured extension is a **load failure**, reported as pi reports
//! one (stderr, exit 1): an extension is often a permission gate, and running without it would
//! silently allow everything it was there to stop.

pub mod discovery;

pub use discovery::{discover, DiscoveryOptions};

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

/// Start-up's extension step: discovery, then, as long as pi-rpc has no extension runtime, the
/// first unit found is a load failure.
pub fn load(opts: &DiscoveryOptions<'_>) -> Result<(), LoadFailure> {
    let units = discover(opts)?;
    match units.first() {
        None => Ok(()),
        Some(unit) => Err(LoadFailure {
            path: unit.path.to_string_lossy().into_owned(),
            message: format!(
                "Failed to load extension: this pi-rpc ({}) cannot run extensions yet ({}); \
                 remove it from the configuration or start with --no-extensions",
                env!("CARGO_PKG_VERSION"),
                unit.kind.describe()
            ),
        }),
    }
}
