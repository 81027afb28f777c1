//! From the agent's messages (JSON values, as stored in the session) to what a provider
//! request is built from (data-model.md §3.5–3.9):
//!
//! 1. pi's `convertToLlm`: system messages fold into the system prompt and tool loadout;
//!    `bashExecution`, `custom`, `compactionSummary` and `branchSummary` become user text;
//!    user / assistant / toolResult pass through.
//! 2. pi-ai's `transformMessages` (request-only): failed and aborted assistant turns are
//!    dropped, orphaned tool calls get a synthetic `No result provided` error result, images
//!    become text placeholders for models without image input, and content from another model
//!    loses its thinking and signatures.
//!
//! Tool-call id normalization is API-specific; adapters apply it with
//! [`normalize_tool_call_ids`].

use serde_json::Value;

use super::model::{number_to_u64, Model};
use super::role::Role;
use super::transcript::{keeps_system_messages, tool_from_declaration};
use super::types::{
    content_from_value, AssistantMessage, ContentBlock, LlmContext, LlmMessage, StopReason,
    SystemMessage, ToolSpec,
};

pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

const NON_VISION_USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const NON_VISION_TOOL_IMAGE_PLACEHOLDER: &str =
    "(tool image omitted: model does not support images)";
/// Text of the synthetic result of a tool call that never got one.
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// The request context for `model`: the current system prompt, the converted and transformed
/// conversation, and the current tools (replayed from the system messages).
pub fn build_llm_context(messages: &[Value], model: &Model) -> LlmContext {
    let converted = convert_to_llm(messages, model);
    LlmContext {
        system_prompt: converted.system_prompt,
        messages: converted.messages,
        tools: current_tools(messages),
        transcript: None,
        leading_system: converted.leading_system,
    }
}

/// What [`convert_to_llm`] makes of the agent's messages.
#[derive(Debug, Default)]
pub struct Converted {
    /// The rendered system prompt: every system message replayed, or, for a model that keeps
    /// system messages in place, the leading one's text.
    pub system_prompt: String,
    /// The messages to send (later system messages in place, for such a model).
    pub messages: Vec<LlmMessage>,
    /// The leading system message, for a model that keeps system messages in place.
    pub leading_system: Option<SystemMessage>,
}

/// pi's `convertToLlm` followed by `resolveTranscript` and `transformMessages` for `model`.
pub fn convert_to_llm(messages: &[Value], model: &Model) -> Converted {
    convert_to_llm_each(messages.iter().map(std::borrow::Cow::Borrowed), model)
}

/// [`convert_to_llm`] over messages handed out one at a time (each parsed on demand and
/// dropped once converted, so a long session is never held as `Value`s all at once).
pub fn convert_to_llm_each<'a>(
    messages: impl Iterator<Item = std::borrow::Cow<'a, Value>>,
    model: &Model,
) -> Converted {
    let in_place = keeps_system_messages(model);
    let mut system = Vec::new();
    let mut converted = Vec::with_capacity(messages.size_hint().0);
    let mut leading_system = None;
    let mut first = true;
    for m in messages {
        if is_system(&m) {
            if !in_place {
                system.push(m.into_owned());
            } else if first {
                leading_system = Some(SystemMessage::from_value(&m));
            } else {
                converted.push(LlmMessage::System(SystemMessage::from_value(&m)));
            }
            first = false;
        } else if let Some(c) = convert_one(&m) {
            converted.push(c);
            first = false;
        }
    }
    let system_prompt = match (&leading_system, in_place) {
        (Some(leading), true) => leading.full_text(),
        (None, true) => String::new(),
        (_, false) => system_prompt(&system),
    };
    Converted {
        system_prompt,
        messages: transform_messages(converted, model),
        leading_system,
    }
}

fn str_field<'a>(m: &'a serde_json::Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn timestamp_of(m: &serde_json::Map<String, Value>) -> u64 {
    m.get("timestamp").and_then(number_to_u64).unwrap_or(0)
}

fn user_text(text: String, ts: u64) -> LlmMessage {
    LlmMessage::User {
        content: vec![ContentBlock::text(text)],
        timestamp: ts,
        as_string: false,
    }
}

/// Only text and image blocks are user content.
fn user_blocks(v: Option<&Value>) -> Vec<ContentBlock> {
    v.map(content_from_value)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| matches!(b, ContentBlock::Text { .. } | ContentBlock::Image { .. }))
        .collect()
}

fn convert_one(v: &Value) -> Option<LlmMessage> {
    let m = v.as_object()?;
    let ts = timestamp_of(m);
    match Role::of(v)? {
        Role::User => Some(LlmMessage::User {
            content: user_blocks(m.get("content")),
            timestamp: ts,
            // A transcript written with a plain string (older pi sessions) is sent back as
            // one: Chat Completions and Anthropic requests carry a string, not a text part.
            as_string: m.get("content").is_some_and(Value::is_string),
        }),
        Role::Assistant => AssistantMessage::from_value(v).map(LlmMessage::Assistant),
        Role::ToolResult => Some(LlmMessage::ToolResult {
            tool_call_id: str_field(m, "toolCallId").unwrap_or_default().to_owned(),
            tool_name: str_field(m, "toolName").unwrap_or_default().to_owned(),
            content: user_blocks(m.get("content")),
            is_error: m.get("isError").and_then(Value::as_bool).unwrap_or(false),
        }),
        Role::BashExecution => {
            if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            Some(user_text(bash_execution_text(m), ts))
        }
        Role::Custom => Some(LlmMessage::User {
            content: user_blocks(m.get("content")),
            timestamp: ts,
            as_string: false,
        }),
        Role::CompactionSummary => {
            let summary = str_field(m, "summary").unwrap_or_default();
            Some(user_text(
                format!("{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}"),
                ts,
            ))
        }
        Role::BranchSummary => {
            let summary = str_field(m, "summary").unwrap_or_default();
            Some(user_text(
                format!("{BRANCH_SUMMARY_PREFIX}{summary}{BRANCH_SUMMARY_SUFFIX}"),
                ts,
            ))
        }
        // System messages fold into the system prompt or stay in place (the callers see to
        // them); unknown roles are not sent.
        Role::System | Role::Other(_) => None,
    }
}

/// pi's `bashExecutionToText` (data-model.md §3.5).
pub fn bash_execution_text(m: &serde_json::Map<String, Value>) -> String {
    let command = str_field(m, "command").unwrap_or_default();
    let output = str_field(m, "output").unwrap_or_default();
    let mut text = format!("Ran `{command}`\n");
    if !output.is_empty() {
        text.push_str("```\n");
        text.push_str(output);
        text.push_str("\n```");
    } else {
        text.push_str("(no output)");
    }
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.get("exitCode").filter(|c| c.is_number()) {
        if code.as_f64() != Some(0.0) {
            text.push_str(&format!("\n\nCommand exited with code {code}"));
        }
    }
    if m.get("truncated").and_then(Value::as_bool) == Some(true) {
        if let Some(path) = str_field(m, "fullOutputPath").filter(|p| !p.is_empty()) {
            text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
        }
    }
    text
}

/// Text of a content value (string, or text blocks joined with `\n`).
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn is_system(v: &Value) -> bool {
    Role::of(v) == Some(Role::System)
}

/// The system prompt after replaying every system message (pi's `getCurrentSystemPrompt`):
/// non-empty `content` texts joined with `\n\n`, followed by the current sections in order
/// (patches replace a section in place; `null` removes it), empty parts skipped.
pub fn system_prompt(messages: &[Value]) -> String {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(String, String)> = Vec::new();
    for msg in messages.iter().filter(|m| is_system(m)) {
        let text = content_text(msg.get("content"));
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(Value::Object(s)) = msg.get("sections") {
            for (name, value) in s {
                match value {
                    Value::Null => sections.retain(|(n, _)| n != name),
                    Value::String(v) => match sections.iter_mut().find(|(n, _)| n == name) {
                        Some(slot) => slot.1 = v.clone(),
                        None => sections.push((name.clone(), v.clone())),
                    },
                    _ => {}
                }
            }
        }
    }
    let mut parts: Vec<String> = Vec::with_capacity(1 + sections.len());
    parts.push(content.join("\n\n"));
    parts.extend(sections.into_iter().map(|(_, v)| v));
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// The tools after replaying every system message (pi's `getCurrentTools`): `toolsRemoved`
/// deletes by name, `toolsAdded` adds or replaces in place.
pub fn current_tools(messages: &[Value]) -> Vec<ToolSpec> {
    let mut tools: Vec<ToolSpec> = Vec::new();
    for msg in messages.iter().filter(|m| is_system(m)) {
        if let Some(Value::Array(removed)) = msg.get("toolsRemoved") {
            for r in removed {
                if let Some(name) = r.get("name").and_then(Value::as_str) {
                    tools.retain(|t| t.name != name);
                }
            }
        }
        if let Some(Value::Array(added)) = msg.get("toolsAdded") {
            for tool in added.iter().filter_map(tool_from_declaration) {
                match tools.iter_mut().find(|t| t.name == tool.name) {
                    Some(slot) => *slot = tool,
                    None => tools.push(tool),
                }
            }
        }
    }
    tools
}

/// Replaces image blocks with `placeholder`; consecutive images (and an image right after an
/// existing placeholder) collapse into one.
fn replace_images(content: Vec<ContentBlock>, placeholder: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(content.len());
    let mut previous_was_placeholder = false;
    for block in content {
        if matches!(block, ContentBlock::Image { .. }) {
            if !previous_was_placeholder {
                out.push(ContentBlock::text(placeholder));
            }
            previous_was_placeholder = true;
            continue;
        }
        previous_was_placeholder =
            matches!(&block, ContentBlock::Text { text, .. } if text == placeholder);
        out.push(block);
    }
    out
}

fn is_same_model(msg: &AssistantMessage, model: &Model) -> bool {
    msg.provider == model.provider && msg.api == model.api && msg.model == model.id
}

/// pi-ai's `transformMessages` without the id normalization (see [`normalize_tool_call_ids`]).
pub fn transform_messages(messages: Vec<LlmMessage>, model: &Model) -> Vec<LlmMessage> {
    let images_ok = model.supports_images();
    let mut result: Vec<LlmMessage> = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    // System messages are transparent to the tool-call accounting: one between a tool call and
    // its results is held back and sent after the results (synthetic ones included).
    let mut held: Vec<LlmMessage> = Vec::new();

    fn close_pending(
        result: &mut Vec<LlmMessage>,
        pending: &mut Vec<(String, String)>,
        answered: &mut Vec<String>,
        held: &mut Vec<LlmMessage>,
    ) {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                result.push(LlmMessage::ToolResult {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![ContentBlock::text(NO_RESULT_PROVIDED)],
                    is_error: true,
                });
            }
        }
        answered.clear();
        result.append(held);
    }

    for msg in messages {
        match msg {
            LlmMessage::User {
                content,
                timestamp,
                as_string,
            } => {
                close_pending(&mut result, &mut pending, &mut answered, &mut held);
                let content = if images_ok {
                    content
                } else {
                    replace_images(content, NON_VISION_USER_IMAGE_PLACEHOLDER)
                };
                result.push(LlmMessage::User {
                    content,
                    timestamp,
                    as_string,
                });
            }
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => {
                let content = if images_ok {
                    content
                } else {
                    replace_images(content, NON_VISION_TOOL_IMAGE_PLACEHOLDER)
                };
                answered.push(tool_call_id.clone());
                result.push(LlmMessage::ToolResult {
                    tool_call_id,
                    tool_name,
                    content,
                    is_error,
                });
            }
            LlmMessage::System(system) => {
                if pending.is_empty() {
                    result.push(LlmMessage::System(system));
                } else {
                    held.push(LlmMessage::System(system));
                }
            }
            LlmMessage::Assistant(mut a) => {
                close_pending(&mut result, &mut pending, &mut answered, &mut held);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let same = is_same_model(&a, model);
                a.content = std::mem::take(&mut a.content)
                    .into_iter()
                    .filter_map(|block| transform_block(block, same))
                    .collect();
                for b in &a.content {
                    if let ContentBlock::ToolCall { id, name, .. } = b {
                        pending.push((id.clone(), name.clone()));
                    }
                }
                answered.clear();
                result.push(LlmMessage::Assistant(a));
            }
        }
    }
    close_pending(&mut result, &mut pending, &mut answered, &mut held);
    result
}

fn transform_block(block: ContentBlock, same_model: bool) -> Option<ContentBlock> {
    match block {
        ContentBlock::Thinking {
            thinking,
            thinking_signature,
            redacted,
        } => {
            if !same_model {
                return None;
            }
            let signed = thinking_signature.as_deref().is_some_and(|s| !s.is_empty());
            if redacted || signed {
                return Some(ContentBlock::Thinking {
                    thinking,
                    thinking_signature,
                    redacted,
                });
            }
            if thinking.trim().is_empty() {
                return None;
            }
            Some(ContentBlock::Thinking {
                thinking,
                thinking_signature,
                redacted,
            })
        }
        ContentBlock::Text {
            text,
            text_signature,
        } => Some(ContentBlock::Text {
            text,
            text_signature: if same_model { text_signature } else { None },
        }),
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
            arguments_error,
            thought_signature,
        } => Some(ContentBlock::ToolCall {
            id,
            name,
            arguments,
            arguments_error,
            thought_signature: if same_model { thought_signature } else { None },
        }),
        other => Some(other),
    }
}

/// Rewrites the ids of tool calls that came from another model (provider, api or model id
/// differ) with `normalize`, and the ids of their results to match (pi's `normalizeToolCallId`
/// hook of `transformMessages`).
pub fn normalize_tool_call_ids(
    messages: &mut [LlmMessage],
    model: &Model,
    normalize: impl Fn(&str) -> String,
) {
    let mut map: Vec<(String, String)> = Vec::new();
    for msg in messages.iter_mut() {
        match msg {
            LlmMessage::Assistant(a) => {
                if is_same_model(a, model) {
                    continue;
                }
                for b in a.content.iter_mut() {
                    if let ContentBlock::ToolCall { id, .. } = b {
                        let n = normalize(id);
                        if n != *id {
                            map.push((id.clone(), n.clone()));
                            *id = n;
                        }
                    }
                }
            }
            LlmMessage::ToolResult { tool_call_id, .. } => {
                if let Some((_, n)) = map.iter().rev().find(|(o, _)| o == tool_call_id) {
                    *tool_call_id = n.clone();
                }
            }
            LlmMessage::User { .. } | LlmMessage::System(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::borrow::Cow;

    fn model(images: bool) -> Model {
        Model {
            id: "mock-sonnet".into(),
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            input: if images {
                vec!["text".into(), "image".into()]
            } else {
                vec!["text".into()]
            },
            ..Model::default()
        }
    }

    /// A user message whose transcript content was a plain string.
    fn user(text: &str, timestamp: u64) -> LlmMessage {
        LlmMessage::User {
            content: vec![ContentBlock::text(text)],
            timestamp,
            as_string: true,
        }
    }

    fn img() -> ContentBlock {
        ContentBlock::Image {
            data: "AAA".into(),
            mime_type: "image/png".into(),
        }
    }

    fn assistant(provider: &str, content: Vec<ContentBlock>, stop: StopReason) -> Value {
        let mut a = AssistantMessage {
            content,
            api: "anthropic-messages".into(),
            provider: provider.into(),
            model: "mock-sonnet".into(),
            stop_reason: stop,
            timestamp: 2,
            ..AssistantMessage::default()
        };
        if stop == StopReason::Error {
            a.error_message = Some("boom".into());
        }
        a.to_value()
    }

    #[test]
    fn system_messages_fold_into_the_prompt() {
        let msgs = vec![
            json!({"role":"system","content":"","sections":{"preamble":"You are X.","tools":"<tools>\n- read\n</tools>","cwd":"<cwd>\n/a\n</cwd>"},"timestamp":1,
                   "toolsAdded":[{"name":"read","description":"Read","parameters":{"type":"object"}},{"name":"bash","description":"Bash","parameters":{"type":"object"}}]}),
            json!({"role":"user","content":"hi","timestamp":2}),
            json!({"role":"system","content":"","sections":{"tools":"<tools>\n- read\n- ls\n</tools>","cwd":null},"timestamp":3,
                   "toolsAdded":[{"name":"ls","description":"List","parameters":{}},{"name":"read","description":"Read v2","parameters":{}}],
                   "toolsRemoved":[{"name":"bash"}]}),
        ];
        assert_eq!(
            system_prompt(&msgs),
            "You are X.\n\n<tools>\n- read\n- ls\n</tools>"
        );
        let tools = current_tools(&msgs);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read", "ls"]);
        assert_eq!(tools[0].description, "Read v2");
        // A forced prompt: content without sections.
        let forced = vec![json!({"role":"system","content":"Custom prompt","timestamp":1})];
        assert_eq!(system_prompt(&forced), "Custom prompt");
        // Content texts of later system messages are appended.
        let mixed = vec![
            json!({"role":"system","content":"A","sections":{"s":"<s>\nx\n</s>"},"timestamp":1}),
            json!({"role":"system","content":[{"type":"text","text":"B"}],"timestamp":2}),
        ];
        assert_eq!(system_prompt(&mixed), "A\n\nB\n\n<s>\nx\n</s>");
        assert_eq!(system_prompt(&[]), "");
        let Converted {
            system_prompt: sp,
            messages: conv,
            ..
        } = convert_to_llm(&msgs, &model(true));
        assert_eq!(sp, system_prompt(&msgs));
        assert_eq!(conv, vec![user("hi", 2)]);
        let each = convert_to_llm_each(msgs.iter().map(Cow::Borrowed), &model(true));
        assert_eq!((each.system_prompt, each.messages), (sp, conv));
    }

    #[test]
    fn coding_agent_roles_become_user_text() {
        let msgs = vec![
            json!({"role":"bashExecution","command":"echo from-user-bash","output":"from-user-bash\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":5}),
            json!({"role":"bashExecution","command":"false","output":"","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/x.log","timestamp":6}),
            json!({"role":"bashExecution","command":"sleep 9","output":"x","cancelled":true,"truncated":false,"timestamp":7}),
            json!({"role":"bashExecution","command":"secret","output":"","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":8}),
            json!({"role":"custom","customType":"ext","content":"note","display":true,"details":{"a":1},"timestamp":9}),
            json!({"role":"compactionSummary","summary":"S1","tokensBefore":10,"timestamp":10}),
            json!({"role":"branchSummary","summary":"B1","fromId":null,"timestamp":11}),
        ];
        let conv = convert_to_llm(&msgs, &model(true)).messages;
        let each = convert_to_llm_each(msgs.iter().map(Cow::Borrowed), &model(true));
        assert_eq!(each.messages, conv);
        let texts: Vec<String> = conv
            .iter()
            .map(|m| match m {
                LlmMessage::User { content, .. } => match &content[..] {
                    [ContentBlock::Text { text, .. }] => text.clone(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [
                "Ran `echo from-user-bash`\n```\nfrom-user-bash\n\n```",
                "Ran `false`\n(no output)\n\nCommand exited with code 1\n\n[Output truncated. Full output: /tmp/x.log]",
                "Ran `sleep 9`\n```\nx\n```\n\n(command cancelled)",
                "note",
                "The conversation history before this point was compacted into the following summary:\n\n<summary>\nS1\n</summary>",
                "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB1</summary>",
            ]
        );
    }

    #[test]
    fn consecutive_user_messages_are_not_merged() {
        let msgs = vec![
            json!({"role":"user","content":[{"type":"text","text":"a"}],"timestamp":1}),
            json!({"role":"user","content":"b","timestamp":2}),
        ];
        let conv = convert_to_llm(&msgs, &model(true)).messages;
        assert_eq!(conv.len(), 2);
    }

    #[test]
    fn failed_and_aborted_assistants_are_dropped() {
        let msgs = vec![
            json!({"role":"user","content":"a","timestamp":1}),
            assistant(
                "mock",
                vec![ContentBlock::text("partial")],
                StopReason::Error,
            ),
            json!({"role":"user","content":"b","timestamp":3}),
            assistant("mock", vec![ContentBlock::text("x")], StopReason::Aborted),
        ];
        let conv = convert_to_llm(&msgs, &model(true)).messages;
        assert_eq!(conv, vec![user("a", 1), user("b", 3)]);
    }

    #[test]
    fn orphaned_tool_calls_get_synthetic_results() {
        let call = |id: &str| ContentBlock::ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({}),
            arguments_error: None,
            thought_signature: None,
        };
        let msgs = vec![
            json!({"role":"user","content":"a","timestamp":1}),
            assistant("mock", vec![call("t1"), call("t2")], StopReason::ToolUse),
            json!({"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":3}),
            json!({"role":"user","content":"b","timestamp":4}),
            assistant("mock", vec![call("t3")], StopReason::ToolUse),
        ];
        let conv = convert_to_llm(&msgs, &model(true)).messages;
        let synthetic = |id: &str| LlmMessage::ToolResult {
            tool_call_id: id.into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("No result provided")],
            is_error: true,
        };
        assert_eq!(conv.len(), 7);
        assert!(
            matches!(&conv[2], LlmMessage::ToolResult { tool_call_id, is_error: false, .. } if tool_call_id == "t1")
        );
        assert_eq!(conv[3], synthetic("t2"));
        assert_eq!(conv[4], user("b", 4));
        assert_eq!(conv[6], synthetic("t3"));
    }

    #[test]
    fn images_become_placeholders_without_image_input() {
        let msgs = vec![
            json!({"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"A","mimeType":"image/png"},{"type":"image","data":"B","mimeType":"image/png"}],"timestamp":1}),
            json!({"role":"toolResult","toolCallId":"t","toolName":"read","content":[{"type":"image","data":"A","mimeType":"image/png"},{"type":"text","text":"after"},{"type":"image","data":"A","mimeType":"image/png"}],"isError":false,"timestamp":2}),
        ];
        let conv = convert_to_llm(&msgs, &model(false)).messages;
        assert_eq!(
            conv[0],
            LlmMessage::User {
                content: vec![
                    ContentBlock::text("look"),
                    ContentBlock::text("(image omitted: model does not support images)")
                ],
                timestamp: 1,
                as_string: false,
            }
        );
        match &conv[1] {
            LlmMessage::ToolResult { content, .. } => assert_eq!(
                content,
                &vec![
                    ContentBlock::text("(tool image omitted: model does not support images)"),
                    ContentBlock::text("after"),
                    ContentBlock::text("(tool image omitted: model does not support images)"),
                ]
            ),
            other => panic!("{other:?}"),
        }
        // With image input the images stay.
        let conv = convert_to_llm(&msgs, &model(true)).messages;
        match &conv[0] {
            LlmMessage::User { content, .. } => {
                assert_eq!(content.len(), 3);
                assert_eq!(
                    content[1],
                    ContentBlock::Image {
                        data: "A".into(),
                        mime_type: "image/png".into()
                    }
                );
            }
            other => panic!("{other:?}"),
        }
        // An image right after an existing placeholder collapses into it.
        assert_eq!(
            replace_images(
                vec![ContentBlock::text(NON_VISION_USER_IMAGE_PLACEHOLDER), img()],
                NON_VISION_USER_IMAGE_PLACEHOLDER
            ),
            vec![ContentBlock::text(NON_VISION_USER_IMAGE_PLACEHOLDER)]
        );
    }

    #[test]
    fn thinking_and_signatures_by_model() {
        let content = vec![
            ContentBlock::Thinking {
                thinking: "signed".into(),
                thinking_signature: Some("sig".into()),
                redacted: false,
            },
            ContentBlock::Thinking {
                thinking: "  ".into(),
                thinking_signature: None,
                redacted: false,
            },
            ContentBlock::Thinking {
                thinking: "".into(),
                thinking_signature: Some("".into()),
                redacted: false,
            },
            ContentBlock::Thinking {
                thinking: "unsigned".into(),
                thinking_signature: None,
                redacted: false,
            },
            ContentBlock::Thinking {
                thinking: "[Reasoning redacted]".into(),
                thinking_signature: Some("enc".into()),
                redacted: true,
            },
            ContentBlock::Text {
                text: "t".into(),
                text_signature: Some("ts".into()),
            },
            ContentBlock::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({}),
                arguments_error: None,
                thought_signature: Some("th".into()),
            },
        ];
        let msgs = vec![
            json!({"role":"user","content":"a","timestamp":1}),
            assistant("mock", content.clone(), StopReason::ToolUse),
            assistant("other", content.clone(), StopReason::ToolUse),
        ];
        let conv = convert_to_llm(&msgs, &model(true)).messages;
        let LlmMessage::Assistant(same) = &conv[1] else {
            panic!()
        };
        assert_eq!(
            same.content,
            vec![
                content[0].clone(),
                content[3].clone(),
                content[4].clone(),
                content[5].clone(),
                content[6].clone()
            ]
        );
        // conv[2] is the synthetic result of c1 (the next assistant interrupts it).
        let LlmMessage::Assistant(other) = &conv[3] else {
            panic!("{:?}", conv[3])
        };
        assert_eq!(
            other.content,
            vec![
                ContentBlock::text("t"),
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: json!({}),
                    arguments_error: None,
                    thought_signature: None
                }
            ]
        );
    }

    #[test]
    fn tool_call_ids_of_other_models_are_normalized() {
        let call = ContentBlock::ToolCall {
            id: "call|abc+/=".into(),
            name: "bash".into(),
            arguments: json!({}),
            arguments_error: None,
            thought_signature: None,
        };
        let msgs = vec![
            json!({"role":"user","content":"a","timestamp":1}),
            assistant("other", vec![call.clone()], StopReason::ToolUse),
            json!({"role":"toolResult","toolCallId":"call|abc+/=","toolName":"bash","content":"ok","isError":false,"timestamp":3}),
            assistant("mock", vec![call], StopReason::ToolUse),
        ];
        let mut conv = convert_to_llm(&msgs, &model(true)).messages;
        normalize_tool_call_ids(&mut conv, &model(true), |id| {
            id.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        });
        let LlmMessage::Assistant(a) = &conv[1] else {
            panic!()
        };
        assert!(matches!(&a.content[0], ContentBlock::ToolCall { id, .. } if id == "call_abc___"));
        assert!(
            matches!(&conv[2], LlmMessage::ToolResult { tool_call_id, content, .. }
            if tool_call_id == "call_abc___" && content == &vec![ContentBlock::text("ok")])
        );
        // The same model's ids are kept.
        let LlmMessage::Assistant(a) = &conv[3] else {
            panic!()
        };
        assert!(matches!(&a.content[0], ContentBlock::ToolCall { id, .. } if id == "call|abc+/="));
    }
}
