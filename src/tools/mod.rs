//! The built-in tools (`tools.md`): read, bash, edit, write (active by default) and grep, find,
//! ls (off by default). Each tool is one file; output truncation is shared in `crate::truncate`.
//!
//! A tool gets its validated arguments and a [`ToolContext`], may stream partial results, and
//! returns a [`ToolOutput`] or an error text. An `Err` becomes an error tool result
//! `{"content":[{"type":"text","text":<message>}],"details":{}}` with `isError:true`, which the
//! model reads; it never ends the run.

pub mod args;
pub mod bash;
pub mod diff;
pub mod edit;
#[cfg(test)]
mod edit_prop_tests;
pub mod find;
pub mod grep;
pub mod ls;
pub mod path;
pub mod read;
pub mod validate;
pub mod write;

use std::path::PathBuf;

use serde_json::Value;

use crate::cancel::CancelToken;

/// What a tool may use while it runs.
pub struct ToolContext<'a> {
    /// The session cwd; relative paths resolve against it.
    pub cwd: &'a std::path::Path,
    /// The tool call's id (`toolCallId`).
    pub call_id: &'a str,
    /// Fires on abort: tools stop promptly (`Operation aborted`; bash kills its process group).
    pub cancel: &'a CancelToken,
    /// Settings `shellPath` (must exist when set).
    pub shell_path: Option<String>,
    /// Settings `shellCommandPrefix`, prepended as `"<prefix>\n<command>"`.
    pub shell_command_prefix: Option<String>,
    /// Extra environment for child processes (`PI_SESSION_ID`, `PI_MODEL`, …).
    pub env: Vec<(String, String)>,
    /// Whether the current model accepts images, and its id (for `read` of images).
    pub model_supports_images: bool,
    pub model_id: String,
    /// Directory for full-output temp files (`$TMPDIR`, else the system temp dir).
    pub temp_dir: PathBuf,
    /// How `read` normalizes images: `images.autoResize` and the model's resize limits.
    pub images: crate::image::ImageOptions,
}

/// A tool's successful (or `is_error`) result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    /// Content blocks: `{"type":"text","text"}` / `{"type":"image","data","mimeType"}`.
    pub content: Vec<Value>,
    pub details: Option<Value>,
    /// Only in `tool_execution_end.result`, never stored in the message.
    pub structured_content: Option<Value>,
    /// A result that is an error without being a thrown error (bash non-zero exit).
    pub is_error: bool,
    /// The run ends after this batch when every result of it says so (an extension tool's
    /// `terminate: true`).
    pub terminate: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![serde_json::json!({"type": "text", "text": text.into()})],
            ..ToolOutput::default()
        }
    }
}

/// One tool: a built-in, or an extension's (`extensions::host::ExtTool`).
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// The description sent to the model (our own words).
    fn description(&self) -> String;
    /// The JSON schema of the arguments, in pi's shape
    /// (`{"type":"object","required":[..],"properties":{..}}`).
    fn parameters(&self) -> Value;
    /// One line for the system prompt's `tools` section (`- <name>: <snippet>`).
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }
    /// Lines for the system prompt's `rules` section.
    fn guidelines(&self) -> Vec<&str> {
        Vec::new()
    }
    /// Normalizes legacy argument forms before validation (pi's `prepareArguments`: edit's
    /// single `oldText`, …) and returns the arguments to validate. Like pi's, it may also
    /// rewrite `args` — the tool call's own arguments — in place; the transcript then shows the
    /// rewritten form from `turn_end` on (the session file keeps what was written before).
    fn prepare_arguments(&self, args: &mut Value) -> Value {
        args.clone()
    }
    /// Whether [`Tool::prepare_arguments`] may rewrite `args` in place (only then does the
    /// agent loop keep a copy to tell; a write call's arguments can be megabytes).
    fn rewrites_arguments(&self) -> bool {
        false
    }
    /// Whether the tool changes files a client may be showing. The agent loop then waits a
    /// moment after announcing the call, so a client that reads the file on
    /// `tool_execution_start` (to show a diff) reads it unchanged.
    fn changes_files(&self) -> bool {
        false
    }
    /// Whether an extension registered the tool (replaced with its extension's runtime).
    fn is_extension(&self) -> bool {
        false
    }
    /// Waits for what the tool needs before it runs (MCP: its servers' connections); false when
    /// `cancel` fired meanwhile. Called after the `tool_call` gate, before `execute`.
    fn wait_until_ready(&self, cancel: &CancelToken) -> bool {
        !cancel.is_cancelled()
    }
    /// Whether MCP support added the tool (`mcp::tools`; replaced as servers come and go).
    fn is_mcp(&self) -> bool {
        false
    }
    /// Runs the tool. `on_update` receives cumulative partial results (`partialResult`).
    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String>;
}

/// The tools active by default, in declaration order.
pub const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// Every built-in tool, in declaration order.
pub const ALL_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

fn glob_match(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((pre, rest)) => {
            name.len() >= pre.len()
                && name.starts_with(pre)
                && (0..=name.len() - pre.len()).any(|i| glob_match(rest, &name[pre.len() + i..]))
        }
    }
}

/// Which tools are active (`settings.md` §3 `defaultTools`, §6 `--tools` and friends).
///
/// `defaults` is the resolved `defaultTools` setting (or the built-in default). A `--tools` list
/// of plain names or `*` patterns replaces it; entries written `+name` / `-name` modify it
/// instead. `--exclude-tools` removes; `--no-tools` / `--no-builtin-tools` leave nothing.
/// Unknown names are reported in the returned warnings.
pub fn resolve_active(
    defaults: Option<Vec<String>>,
    cli_tools: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
    no_tools: bool,
) -> (Vec<&'static str>, Vec<String>) {
    let mut warnings = Vec::new();
    if no_tools {
        return (Vec::new(), warnings);
    }
    let names = |list: &[String], warnings: &mut Vec<String>| -> Vec<&'static str> {
        let mut out = Vec::new();
        for item in list {
            let matched: Vec<&'static str> = ALL_TOOLS
                .iter()
                .copied()
                .filter(|t| glob_match(item, t))
                .collect();
            // MCP tool names and patterns are resolved by MCP support (`mcp::state::ToolFilter`).
            let mcp = item.starts_with("mcp__")
                || matches!(
                    item.as_str(),
                    "list_mcp_resources"
                        | "list_mcp_resource_templates"
                        | "read_mcp_resource"
                        | "tool_search"
                );
            if matched.is_empty() && !mcp {
                warnings.push(format!("Warning: unknown tool \"{item}\" ignored"));
            }
            out.extend(matched);
        }
        out
    };
    let mut active: Vec<&'static str> = match defaults {
        Some(d) => names(&d, &mut warnings),
        None => DEFAULT_TOOLS.to_vec(),
    };
    if let Some(list) = cli_tools {
        let (mods, plain): (Vec<String>, Vec<String>) = list
            .into_iter()
            .partition(|s| s.starts_with('+') || s.starts_with('-'));
        if !plain.is_empty() {
            active = names(&plain, &mut warnings);
        }
        for m in mods {
            let (add, name) = m.split_at(1);
            let hits = names(&[name.to_string()], &mut warnings);
            if add == "+" {
                active.extend(hits);
            } else {
                active.retain(|t| !hits.contains(t));
            }
        }
    }
    if let Some(ex) = exclude {
        let hits = names(&ex, &mut warnings);
        active.retain(|t| !hits.contains(t));
    }
    // Declaration order, no duplicates.
    let ordered = ALL_TOOLS
        .iter()
        .copied()
        .filter(|t| active.contains(t))
        .collect();
    (ordered, warnings)
}

/// A built-in tool by name.
pub fn builtin(name: &str) -> Option<std::sync::Arc<dyn Tool>> {
    use std::sync::Arc;
    Some(match name {
        "read" => Arc::new(read::ReadTool),
        "bash" => Arc::new(bash::BashTool),
        "edit" => Arc::new(edit::EditTool),
        "write" => Arc::new(write::WriteTool),
        "grep" => Arc::new(grep::GrepTool),
        "find" => Arc::new(find::FindTool),
        "ls" => Arc::new(ls::LsTool),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Option<Vec<String>> {
        Some(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn active_tool_resolution() {
        assert_eq!(resolve_active(None, None, None, false).0, DEFAULT_TOOLS);
        assert_eq!(
            resolve_active(None, v(&["read", "grep"]), None, false).0,
            ["read", "grep"]
        );
        assert_eq!(
            resolve_active(None, v(&["+ls", "-edit"]), None, false).0,
            ["read", "bash", "write", "ls"]
        );
        assert_eq!(
            resolve_active(None, v(&["*"]), v(&["bash"]), false).0.len(),
            6
        );
        assert!(resolve_active(None, None, None, true).0.is_empty());
        let (_, w) = resolve_active(None, v(&["nope"]), None, false);
        assert_eq!(w.len(), 1);
    }
}
