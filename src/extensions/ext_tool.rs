//! Extension tools (`extensions.md` §B8): offered to the model like built-ins; a call is a
//! `tool` request whose `tool_update` notifications become `tool_execution_update`s.

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::host::{Extensions, Unit};
use super::registrations::ToolReg;

/// An extension tool, offered to the model like a built-in (§B8).
pub(crate) struct ExtTool {
    pub(super) host: Weak<Extensions>,
    pub(super) unit: Arc<Unit>,
    pub(super) reg: ToolReg,
}

impl Extensions {
    /// The extension tools active by default, in load and registration order.
    pub(crate) fn tools(&self) -> Vec<Arc<dyn crate::tools::Tool>> {
        self.registered_tools(false)
    }

    /// Every extension tool (`all`) or the ones active by default.
    pub(crate) fn registered_tools(&self, all: bool) -> Vec<Arc<dyn crate::tools::Tool>> {
        let mut out: Vec<Arc<dyn crate::tools::Tool>> = Vec::new();
        for u in &self.units {
            for t in u.regs.lock().tools.clone() {
                if all || t.default_active {
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

/// Puts a runtime's extension tools into the active list: the previous runtime's go, and an
/// extension tool replaces a built-in of the same name (as in pi).
pub(crate) fn install_tools(
    active: &mut Vec<Arc<dyn crate::tools::Tool>>,
    ext: Vec<Arc<dyn crate::tools::Tool>>,
) {
    active.retain(|t| !t.is_extension() && !ext.iter().any(|e| e.name() == t.name()));
    active.extend(ext);
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
