//! Small pieces the file tools share: reading their arguments, the abort check, and the
//! bracketed notices (`[… limit reached. …]`) appended to a listing with their `details`.

use serde_json::{Map, Value};

use super::ToolOutput;
use crate::cancel::CancelToken;
use crate::truncate::{format_size, Truncation, DEFAULT_MAX_BYTES};

/// The error text of a tool stopped by an abort.
pub const ABORTED: &str = "Operation aborted";

/// `Err("Operation aborted")` once `cancel` fired.
pub fn check_cancelled(cancel: &CancelToken) -> Result<(), String> {
    if cancel.is_cancelled() {
        Err(ABORTED.to_string())
    } else {
        Ok(())
    }
}

/// A required string argument (`"<key> must be a string"` otherwise).
pub fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{key} must be a string"))
}

/// A string argument, `""` when absent (the arguments were validated against the schema).
pub fn str_or_empty<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// An optional string argument; an empty string counts as absent.
pub fn non_empty_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The `path` argument of a search/listing tool: the current directory when absent or empty.
pub fn search_dir(args: &Value) -> &str {
    non_empty_str(args, "path").unwrap_or(".")
}

/// An optional boolean argument, `false` when absent.
pub fn flag(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The `limit` argument: `max(1, floor(limit ?? default))`.
pub fn limit_arg(args: &Value, default: f64) -> usize {
    effective_limit(args.get("limit").and_then(Value::as_f64), default)
}

/// `max(1, floor(limit ?? default))`.
pub fn effective_limit(limit: Option<f64>, default: f64) -> usize {
    let v = limit.filter(|v| !v.is_nan()).unwrap_or(default).floor();
    if v < 1.0 {
        1
    } else if v >= usize::MAX as f64 {
        usize::MAX
    } else {
        v as usize
    }
}

/// The notices of a listing, in the order they are added, and their `details` fields.
#[derive(Default)]
pub struct Notices {
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Notices {
    pub fn new() -> Notices {
        Notices::default()
    }

    /// Adds a notice and its `details` entry.
    pub fn add(&mut self, notice: String, key: &str, value: Value) {
        self.notices.push(notice);
        self.details.insert(key.into(), value);
    }

    /// `"<size> limit reached"` with the truncation details, when the byte cap cut the output.
    pub fn byte_limit(&mut self, truncation: &Truncation) {
        if truncation.truncated {
            self.add(
                format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)),
                "truncation",
                truncation.to_value(),
            );
        }
    }

    /// `output` followed by `\n\n[<notices joined by ". ">]` (when any), with the details.
    pub fn finish(self, mut output: String) -> ToolOutput {
        if !self.notices.is_empty() {
            output.push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        ToolOutput {
            details: (!self.details.is_empty()).then_some(Value::Object(self.details)),
            ..ToolOutput::text(output)
        }
    }
}

/// Helpers the tools' unit tests share.
#[cfg(test)]
pub mod test_support {
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use crate::cancel::CancelToken;
    use crate::tools::{Tool, ToolContext, ToolOutput};

    /// A fresh directory under the system temp dir, named after `tag`.
    pub fn temp_dir(tag: &str) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pi-rpc-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A tool context in `cwd` with no shell settings or extra environment.
    pub fn tool_context<'a>(
        cwd: &'a Path,
        cancel: &'a CancelToken,
        model_supports_images: bool,
        model_id: &str,
    ) -> ToolContext<'a> {
        ToolContext {
            cwd,
            call_id: "call",
            cancel,
            shell_path: None,
            shell_command_prefix: None,
            env: Vec::new(),
            model_supports_images,
            model_id: model_id.into(),
            temp_dir: std::env::temp_dir(),
            images: crate::image::ImageOptions::default(),
        }
    }

    /// Runs `tool` once in `cwd` (not cancelled, no images).
    pub fn run_tool(tool: &dyn Tool, cwd: &Path, args: Value) -> Result<ToolOutput, String> {
        let cancel = CancelToken::new();
        let ctx = tool_context(cwd, &cancel, false, "");
        tool.execute(&args, &ctx, &mut |_| {})
    }

    /// The first text block of a result, or `ERR <message>` for an error.
    pub fn text_or_err(r: Result<ToolOutput, String>) -> String {
        match r {
            Ok(o) => o.content[0]["text"].as_str().unwrap_or("").to_string(),
            Err(e) => format!("ERR {e}"),
        }
    }

    /// A JSON schema without its `description` fields (to compare its shape).
    pub fn schema_without_descriptions(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| k.as_str() != "description")
                    .map(|(k, v)| (k.clone(), schema_without_descriptions(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}
