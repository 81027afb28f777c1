//! System messages kept in place, for models that accept system messages mid-conversation
//! (`compat.supportsMidConvoSystemMessages`; pi-ai's `utils/transcript.js` and
//! `utils/text.js`).
//!
//! The agent declares every change of the system prompt or of the tool loadout in a system
//! message of the transcript: the leading one holds the whole prompt (`content` and
//! `sections`) and the first tools, later ones patch sections and add or remove tools. For most
//! models pi folds them all into one leading message (`convert::system_prompt`,
//! `convert::current_tools`); for the others it keeps the later ones where they happened, and
//! each wire API says the change in its own way (an instruction message, an `additional_tools`
//! item, a Kimi `tools` message, Anthropic's inline tool blocks). This module holds what they
//! share: the parsed message, its two renderings, and pi's split of the tool declarations
//! between the request's tool list and the in-place changes (`resolveTranscriptTools`).

use serde_json::Value;

use super::model::Model;
use super::types::{LlmContext, LlmMessage, SystemMessage, ToolSpec};

impl SystemMessage {
    /// Parses a stored system message (`{role:"system", content, sections?, toolsAdded?,
    /// toolsRemoved?}`); what is malformed is skipped.
    pub fn from_value(v: &Value) -> SystemMessage {
        let content = match v.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => items
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let sections = match v.get("sections") {
            Some(Value::Object(s)) => s
                .iter()
                .filter_map(|(name, value)| match value {
                    Value::Null => Some((name.clone(), None)),
                    Value::String(text) => Some((name.clone(), Some(text.clone()))),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let tools_added = match v.get("toolsAdded") {
            Some(Value::Array(added)) => added.iter().filter_map(tool_from_declaration).collect(),
            _ => Vec::new(),
        };
        let tools_removed = match v.get("toolsRemoved") {
            Some(Value::Array(removed)) => removed
                .iter()
                .filter_map(|r| r.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        SystemMessage {
            content,
            sections,
            tools_added,
            tools_removed,
            timestamp: v
                .get("timestamp")
                .and_then(super::model::number_to_u64)
                .unwrap_or(0),
        }
    }

    /// The message as a complete prompt: its content, then its sections (pi's
    /// `getSystemMessageText`).
    pub fn full_text(&self) -> String {
        let mut parts: Vec<&str> = vec![self.content.as_str()];
        parts.extend(self.sections.iter().filter_map(|(_, v)| v.as_deref()));
        parts.retain(|p| !p.is_empty());
        parts.join("\n\n")
    }

    /// A later message as the model reads it mid-conversation: its content, then each section
    /// change framed by name (pi's `renderSystemMessageUpdate`).
    pub fn update_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if !self.content.is_empty() {
            parts.push(self.content.clone());
        }
        for (name, value) in &self.sections {
            parts.push(match value {
                None => format!("Removed system prompt section \"{name}\"."),
                Some(text) => format!("Updated system prompt section \"{name}\":\n\n{text}"),
            });
        }
        parts.join("\n\n")
    }

    /// Names removed and not declared again by the same message (a redefinition is a removal
    /// plus an addition of one name; only true removals are announced).
    pub fn true_removals(&self) -> Vec<&str> {
        self.tools_removed
            .iter()
            .map(String::as_str)
            .filter(|name| !self.tools_added.iter().any(|t| t.name == *name))
            .collect()
    }
}

/// A tool declaration of `toolsAdded` (`{name, description, parameters, constrainedSampling?}`).
pub fn tool_from_declaration(a: &Value) -> Option<ToolSpec> {
    let name = a.get("name").and_then(Value::as_str)?;
    Some(ToolSpec {
        name: name.to_owned(),
        description: a
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        parameters: a
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default())),
        strict_prefer: a.pointer("/constrainedSampling/strict") == Some(&Value::from("prefer"))
            && a.pointer("/constrainedSampling/type") == Some(&Value::from("json_schema")),
    })
}

/// Whether `model` keeps later system messages in place: `supportsMidConvoSystemMessages` on
/// a wire API that sends them (pi's Google, Vertex and Bedrock adapters always collapse them,
/// whatever the compat says; pi-messages sends the transcript as it is).
pub fn keeps_system_messages(model: &Model) -> bool {
    model.compat_bool("supportsMidConvoSystemMessages") == Some(true)
        && matches!(
            model.api.as_str(),
            "openai-completions"
                | "openai-responses"
                | "azure-openai-responses"
                | "openai-codex-responses"
                | "anthropic-messages"
                | "mistral-conversations"
        )
}

/// The tools after applying every message's changes in order (pi's `getCurrentTools`).
pub fn current_tools<'a>(messages: impl IntoIterator<Item = &'a SystemMessage>) -> Vec<ToolSpec> {
    let mut tools: Vec<ToolSpec> = Vec::new();
    for msg in messages {
        for name in &msg.tools_removed {
            tools.retain(|t| &t.name != name);
        }
        for tool in &msg.tools_added {
            match tools.iter_mut().find(|t| t.name == tool.name) {
                Some(slot) => *slot = tool.clone(),
                None => tools.push(tool.clone()),
            }
        }
    }
    tools
}

/// The context's system messages in order: the leading one, then the later ones.
pub fn system_messages(ctx: &LlmContext) -> Vec<&SystemMessage> {
    ctx.leading_system
        .iter()
        .chain(ctx.messages.iter().filter_map(|m| match m {
            LlmMessage::System(s) => Some(s),
            _ => None,
        }))
        .collect()
}

/// Whether the context keeps system messages in place (a leading one, or later ones).
pub fn in_place(ctx: &LlmContext) -> bool {
    ctx.leading_system.is_some()
        || ctx
            .messages
            .iter()
            .any(|m| matches!(m, LlmMessage::System(_)))
}

/// The tools of the leading system message. A context without system messages in place has
/// one made of its prompt and tools (pi's `normalizeContext`); a transcript whose first
/// message is not a system message has none.
pub fn leading_tools(ctx: &LlmContext) -> &[ToolSpec] {
    match &ctx.leading_system {
        Some(leading) => &leading.tools_added,
        None if in_place(ctx) => &[],
        None => &ctx.tools,
    }
}

/// How a wire API can say tool changes after the first request (pi's `TranscriptToolSupport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolSupport {
    /// Only the request's tool list exists; it holds the current tools.
    None,
    /// Tools can be added in place, not removed or redefined.
    Additions,
    /// Every tool, the first ones included, is declared in place; removals are announced as
    /// text.
    Changes,
}

/// The split of the tool declarations (pi's `TranscriptTools`).
#[derive(Clone, Debug, PartialEq)]
pub struct TranscriptTools {
    /// The request's tool list.
    pub request_tools: Vec<ToolSpec>,
    /// How many of the leading system messages `request_tools` already holds: every later
    /// one carries its tool changes in place.
    pub folded: usize,
}

/// pi's `resolveTranscriptTools`. With [`ToolSupport::Additions`], a removal or redefinition
/// cannot be said in place, so the request's list becomes the tool state after the last such
/// change and later additions stay anchored. Where every message is folded, the request's list
/// is the context's current tools.
pub fn resolve_tools(ctx: &LlmContext, support: ToolSupport) -> TranscriptTools {
    let systems = system_messages(ctx);
    let folded = match support {
        ToolSupport::None => systems.len(),
        ToolSupport::Changes => {
            return TranscriptTools {
                request_tools: Vec::new(),
                folded: 0,
            }
        }
        ToolSupport::Additions => {
            let leading = usize::from(ctx.leading_system.is_some());
            leading.max(last_non_additive_change(&systems).map_or(0, |i| i + 1))
        }
    };
    let request_tools = if folded >= systems.len() {
        ctx.tools.clone()
    } else {
        current_tools(systems[..folded].iter().copied())
    };
    TranscriptTools {
        request_tools,
        folded,
    }
}

/// The index of the last system message with a removal or a redeclaration of a name declared
/// before (even one removed since: pi's `findLastNonAdditiveToolChange`).
fn last_non_additive_change(systems: &[&SystemMessage]) -> Option<usize> {
    let mut declared: Vec<&str> = Vec::new();
    let mut last = None;
    for (index, msg) in systems.iter().enumerate() {
        if !msg.tools_removed.is_empty() {
            last = Some(index);
        }
        for tool in &msg.tools_added {
            if declared.contains(&tool.name.as_str()) {
                last = Some(index);
            }
            declared.push(&tool.name);
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Value {
        json!({"name": name, "description": name, "parameters": {"type": "object"}})
    }

    fn ctx(leading: Value, later: &[Value], current: &[&str]) -> LlmContext {
        LlmContext {
            leading_system: Some(SystemMessage::from_value(&leading)),
            messages: later
                .iter()
                .map(|m| LlmMessage::System(SystemMessage::from_value(m)))
                .collect(),
            tools: current
                .iter()
                .filter_map(|n| tool_from_declaration(&tool(n)))
                .collect(),
            ..LlmContext::default()
        }
    }

    fn names(tools: &[ToolSpec]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn renderings_match_pi() {
        let m = SystemMessage::from_value(&json!({"role": "system",
            "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}],
            "sections": {"intro": "Hello", "gone": null, "empty": ""}}));
        assert_eq!(m.full_text(), "a\nb\n\nHello");
        assert_eq!(
            m.update_text(),
            "a\nb\n\nUpdated system prompt section \"intro\":\n\nHello\n\nRemoved system prompt section \"gone\".\n\nUpdated system prompt section \"empty\":\n\n"
        );
        let empty = SystemMessage::from_value(&json!({"role": "system", "content": ""}));
        assert_eq!(empty.full_text(), "");
        assert_eq!(empty.update_text(), "");
    }

    #[test]
    fn additions_fold_up_to_the_last_removal_or_redefinition() {
        let leading =
            json!({"role": "system", "content": "p", "toolsAdded": [tool("read"), tool("bash")]});
        // Only additions: the leading message is folded, the later one stays in place.
        let c = ctx(
            leading.clone(),
            &[json!({"role": "system", "content": "", "toolsAdded": [tool("ls")]})],
            &["read", "bash", "ls"],
        );
        let t = resolve_tools(&c, ToolSupport::Additions);
        assert_eq!(
            (names(&t.request_tools), t.folded),
            (vec!["read", "bash"], 1)
        );
        // A removal, then an addition: folded through the removal.
        let c = ctx(
            leading.clone(),
            &[
                json!({"role": "system", "content": "", "toolsRemoved": [{"name": "bash"}]}),
                json!({"role": "system", "content": "", "toolsAdded": [tool("ls")]}),
            ],
            &["read", "ls"],
        );
        let t = resolve_tools(&c, ToolSupport::Additions);
        assert_eq!((names(&t.request_tools), t.folded), (vec!["read"], 2));
        // Declaring a removed name again counts as a redefinition.
        let c = ctx(
            leading,
            &[
                json!({"role": "system", "content": "", "toolsRemoved": [{"name": "bash"}]}),
                json!({"role": "system", "content": "", "toolsAdded": [tool("bash")]}),
            ],
            &["read", "bash"],
        );
        let t = resolve_tools(&c, ToolSupport::Additions);
        assert_eq!(
            (names(&t.request_tools), t.folded),
            (vec!["read", "bash"], 3)
        );
        assert_eq!(resolve_tools(&c, ToolSupport::Changes).folded, 0);
        assert!(resolve_tools(&c, ToolSupport::Changes)
            .request_tools
            .is_empty());
        assert_eq!(resolve_tools(&c, ToolSupport::None).folded, 3);
    }

    #[test]
    fn a_redefinition_is_not_announced_as_a_removal() {
        let m = SystemMessage::from_value(&json!({"role": "system", "content": "",
            "toolsAdded": [tool("read")], "toolsRemoved": [{"name": "read"}, {"name": "bash"}]}));
        assert_eq!(m.true_removals(), vec!["bash"]);
    }
}
