//! Extension events of a run that shape what the run sends (`extensions.md` §A4) and need
//! more than `Runtime::emit`: `before_agent_start`, before the `started` response.

use serde_json::Value;

use super::runtime::Runtime;
use crate::cancel::CancelToken;
use crate::llm::Role;

/// `before_agent_start` (§A4): handlers see the prompt before the `started` response; the
/// `custom` messages they return follow the user message, and a system prompt they set holds
/// for this run.
pub(super) fn before_agent_start(
    rt: &Runtime,
    user_message: &Value,
    cancel: &CancelToken,
) -> Vec<Value> {
    if let Some(mcp) = rt.ext.mcp() {
        // MCP's own before_agent_start (mcp.md §3.2, §6.5): the session's first prompt waits
        // for servers with direct tools; the tools and the mcp_servers section are brought up
        // to date.
        mcp.before_prompt(cancel);
        sync_mcp(rt, true);
    }
    if !rt.ext.wants("before_agent_start") {
        return Vec::new();
    }
    let content = user_message.get("content");
    let text = crate::compaction::estimate::content_text(content, "\n");
    let images: Vec<Value> = match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    let system_prompt = rt.state.lock().rendered_system_prompt();
    let mut payload = if Role::of(user_message) == Some(Role::Custom) {
        // A run an extension's `sendMessage({triggerTurn})` opened.
        serde_json::json!({
            "type": "before_agent_start",
            "messageType": "custom",
            "message": user_message,
        })
    } else {
        serde_json::json!({
            "type": "before_agent_start",
            "messageType": "user",
            "prompt": text,
        })
    };
    if !images.is_empty() {
        payload["images"] = Value::Array(images);
    }
    payload["systemPrompt"] = system_prompt.into();
    payload["systemPromptOptions"] = serde_json::json!({});
    let (messages, prompt) = rt.ext.before_agent_start(&payload, Some(cancel));
    if let Some(p) = prompt {
        rt.state.lock().life.set_run_system_prompt(p);
    }
    messages
}

/// Puts the MCP tools to declare now into the active tools (after the others) and, at the
/// start of a prompt (`with_section`; pi renders it once per prompt), the `mcp_servers`
/// section into the prompt. True when the tools changed.
pub(super) fn sync_mcp(rt: &Runtime, with_section: bool) -> bool {
    let Some(mcp) = rt.ext.mcp() else {
        return false;
    };
    let tools = mcp.active_tools();
    let section = with_section.then(|| mcp.section());
    let mut s = rt.state.lock();
    let before: Vec<String> = s
        .resources
        .tools
        .iter()
        .filter(|t| t.is_mcp())
        .map(|t| t.name().to_string())
        .collect();
    let after: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
    s.resources.tools.retain(|t| !t.is_mcp());
    s.resources.tools.extend(tools);
    if let Some(section) = section {
        let extra = &mut s.resources.prompt.extra_sections;
        extra.retain(|(n, _)| n != "mcp_servers");
        if let Some(text) = section {
            extra.push(("mcp_servers".to_string(), text));
        }
    }
    before != after
}
