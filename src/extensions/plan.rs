//! What start-up found, started once a mode has its output: the units, the host's options,
//! and the CLI options held for the extensions' flags (`extensions.md` §A2, §B5).

use std::sync::Arc;

/// Extension flag values given on the command line, by flag name.
pub(crate) type FlagValues = Vec<(String, serde_json::Value)>;

/// The extensions start-up found; a mode starts them once its writer exists.
pub struct ExtensionPlan {
    pub(crate) units: Vec<super::discovery::Unit>,
    pub(crate) opts: super::host::HostOptions,
    /// `--name` options no built-in flag knows, matched against the extensions' flags.
    pub(crate) unknown_flags: Vec<(String, crate::cli::UnknownFlagValue)>,
}

impl ExtensionPlan {
    /// Starts the extensions and matches the held flags against theirs: the host and the
    /// flag values it sends before `session_start`, or the stderr text of a failed start.
    pub(crate) fn start(
        mut self,
        out: crate::output::Output,
        registry: Arc<crate::llm::registry::ModelRegistry>,
    ) -> Result<(Arc<super::Extensions>, FlagValues), String> {
        if let Some(mcp) = self.opts.mcp.as_mut() {
            // MCP servers with `auth.provider` send that provider's key as their bearer.
            mcp.provider_token = Some(Arc::new(move |provider: &str| {
                registry.api_key(provider).ok().flatten()
            }));
        }
        let ext = super::Extensions::start(self.units, self.opts, out)
            .map_err(|f| f.stderr_lines().join("\n"))?;
        match match_extension_flags(&ext, &self.unknown_flags) {
            Ok(values) => Ok((ext, values)),
            Err(e) => {
                ext.stop_all();
                Err(e)
            }
        }
    }
}

/// Matches the held `--name` options against the extensions' flags (`extensions.md` §A2):
/// the values to send, or pi's error for an unclaimed option or a string flag without value.
fn match_extension_flags(
    ext: &super::Extensions,
    given: &[(String, crate::cli::UnknownFlagValue)],
) -> Result<Vec<(String, serde_json::Value)>, String> {
    use crate::cli::UnknownFlagValue;
    let flags = ext.flags();
    let mut values = Vec::new();
    let mut unknown = Vec::new();
    for (name, value) in given {
        match flags.iter().find(|(_, f)| f.name == *name) {
            None => unknown.push(format!("--{name}")),
            Some((_, f)) if f.string => match value {
                UnknownFlagValue::Value(v) => values.push((name.clone(), v.clone().into())),
                UnknownFlagValue::Present => {
                    return Err(format!(
                        "Error: Extension flag \"--{name}\" requires a value"
                    ))
                }
            },
            Some(_) => values.push((name.clone(), true.into())),
        }
    }
    if !unknown.is_empty() {
        let plural = if unknown.len() == 1 { "" } else { "s" };
        return Err(format!(
            "Error: Unknown option{plural}: {}",
            unknown.join(", ")
        ));
    }
    Ok(values)
}
