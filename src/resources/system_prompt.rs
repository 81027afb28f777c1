//! The system prompt (`agent-loop.md` §9) and the system messages that declare it
//! (`data-model.md` §3.8). The prose is pi-rpc's own; the structure — section names and order,
//! their `<name>` wrappers, the tool declarations — is what pi puts on the wire.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::context_files::ContextFile;
use super::skills::{skills_prompt_section, Skill};

/// A tool as the system message declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDecl {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// `{"type":"json_schema","strict":"prefer"}` for the four default tools.
    pub constrained_sampling: bool,
    pub snippet: Option<String>,
    pub guidelines: Vec<String>,
}

impl ToolDecl {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), self.name.clone().into());
        m.insert("description".into(), self.description.clone().into());
        m.insert("parameters".into(), self.parameters.clone());
        if self.constrained_sampling {
            m.insert(
                "constrainedSampling".into(),
                json!({"type": "json_schema", "strict": "prefer"}),
            );
        }
        Value::Object(m)
    }
}

/// Everything the prompt is built from.
pub struct PromptInputs<'a> {
    /// `--system-prompt` / `SYSTEM.md`: replaces the preamble, and drops tools/rules/docs.
    pub custom_prompt: Option<&'a str>,
    /// `--append-system-prompt` / `APPEND_SYSTEM.md`.
    pub append: Option<&'a str>,
    pub tools: &'a [ToolDecl],
    pub context_files: &'a [ContextFile],
    pub skills: &'a [Skill],
    pub cwd: &'a Path,
}

const PREAMBLE: &str =
    "You are a coding assistant working inside pi-rpc, a headless coding agent. \
You help the user understand code, run commands, and make changes to files in their project.";

/// Where pi-rpc's own documentation lives (the README of the source tree it was built from).
pub fn docs_root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn wrap(name: &str, body: &str) -> String {
    format!("<{name}>\n{body}\n</{name}>")
}

/// The ordered `(name, rendered section)` list.
pub fn build_sections(inp: &PromptInputs<'_>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    match inp.custom_prompt {
        Some(custom) => out.push(("preamble".into(), custom.to_string())),
        None => {
            out.push(("preamble".into(), PREAMBLE.to_string()));
            out.push(("tools".into(), wrap("tools", &tools_body(inp.tools))));
            out.push(("rules".into(), wrap("rules", &rules_body(inp.tools))));
            out.push(("docs".into(), wrap("docs", &docs_body())));
        }
    }
    if let Some(a) = inp.append.filter(|a| !a.trim().is_empty()) {
        out.push(("addendum".into(), wrap("addendum", a.trim_end())));
    }
    if !inp.context_files.is_empty() {
        let mut body =
            String::from("Project-specific instructions from context files, outermost first:");
        for f in inp.context_files {
            body.push_str(&format!(
                "\n\n<project_instructions path=\"{}\">\n{}\n</project_instructions>",
                f.path.display(),
                f.content
            ));
        }
        out.push(("project_context".into(), wrap("project_context", &body)));
    }
    let read_active = inp.tools.iter().any(|t| t.name == "read");
    let bash_active = inp.tools.iter().any(|t| t.name == "bash");
    if read_active || bash_active {
        if let Some(skills) = skills_prompt_section(inp.skills, read_active) {
            out.push(("skills".into(), wrap("skills", &skills)));
        }
    }
    let cwd = inp.cwd.to_string_lossy().replace('\\', "/");
    out.push(("cwd".into(), wrap("cwd", &cwd)));
    out
}

fn tools_body(tools: &[ToolDecl]) -> String {
    let lines: Vec<String> = tools
        .iter()
        .filter_map(|t| t.snippet.as_ref().map(|s| format!("- {}: {s}", t.name)))
        .collect();
    let mut body = if lines.is_empty() {
        "(No built-in tools are active.)".to_string()
    } else {
        lines.join("\n")
    };
    body.push_str("\n\nOther tools may be offered to you as well.");
    body
}

fn rules_body(tools: &[ToolDecl]) -> String {
    let has = |n: &str| tools.iter().any(|t| t.name == n);
    let mut lines: Vec<String> = Vec::new();
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        lines.push("Use bash to list and search files (ls, rg, find).".into());
    }
    for t in tools {
        for g in &t.guidelines {
            lines.push(g.trim().to_string());
        }
    }
    lines.push("Keep your answers short and to the point.".into());
    lines.push("Name file paths explicitly when you talk about files.".into());
    let mut seen = std::collections::HashSet::new();
    lines
        .into_iter()
        .filter(|l| !l.is_empty() && seen.insert(l.clone()))
        .map(|l| format!("- {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn docs_body() -> String {
    docs_body_for(docs_root())
}

fn docs_body_for(root: &str) -> String {
    // The source tree a binary was built from is usually not where it is deployed (a static
    // binary copied elsewhere): name paths only while they exist.
    if !Path::new(root).join("README.md").is_file() {
        return "pi-rpc's own documentation is its README.md, which is not installed beside this \
                binary; say so if the user asks how pi-rpc works or is configured."
            .to_string();
    }
    format!(
        "pi-rpc's own documentation (only needed when the user asks about this agent itself):\n\
- README: {root}/README.md (commands, flags, providers and models, differences from pi)\n\
- Examples: {root}/examples (a scripted demo, benchmarks, a mock LLM server)\n\
- Read them before answering questions about how pi-rpc works or is configured."
    )
}

/// The rendered prompt text: section values joined by blank lines.
pub fn render(sections: &[(String, String)]) -> String {
    sections
        .iter()
        .map(|(_, v)| v.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// What the system messages on a branch declare, replayed in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Declared {
    /// `None` when nothing was declared yet.
    pub sections: Option<Vec<(String, String)>>,
    /// A forced prompt in `content` (no sections).
    pub content: Option<String>,
    pub tools: Vec<Value>,
}

impl Declared {
    /// Replays every system message of `messages` (a compaction checkpoint counts too).
    pub fn replay(messages: &[Value]) -> Declared {
        let mut d = Declared::default();
        for m in messages {
            if m.get("role").and_then(Value::as_str) != Some("system") {
                continue;
            }
            let content = m.get("content").and_then(Value::as_str).unwrap_or("");
            match m.get("sections").and_then(Value::as_object) {
                Some(secs) => {
                    let mut cur = d.sections.take().unwrap_or_default();
                    for (k, v) in secs {
                        match v.as_str() {
                            Some(text) => match cur.iter_mut().find(|(n, _)| n == k) {
                                Some(slot) => slot.1 = text.to_string(),
                                None => cur.push((k.clone(), text.to_string())),
                            },
                            None => cur.retain(|(n, _)| n != k),
                        }
                    }
                    d.sections = Some(cur);
                    d.content = None;
                }
                // A message that only adds or removes tools (no sections, no content) leaves
                // the prompt as it is.
                None if content.is_empty() && d.sections.is_some() => {}
                None => {
                    d.sections = Some(Vec::new());
                    d.content = Some(content.to_string());
                }
            }
            if let Some(added) = m.get("toolsAdded").and_then(Value::as_array) {
                for t in added {
                    let name = t.get("name").cloned();
                    d.tools.retain(|x| x.get("name").cloned() != name);
                    d.tools.push(t.clone());
                }
            }
            if let Some(removed) = m.get("toolsRemoved").and_then(Value::as_array) {
                for t in removed {
                    let name = t.get("name").cloned();
                    d.tools.retain(|x| x.get("name").cloned() != name);
                }
            }
        }
        d
    }

    pub fn is_empty(&self) -> bool {
        self.sections.is_none()
    }

    /// The system prompt text these declarations give.
    #[cfg(test)]
    pub fn prompt_text(&self) -> String {
        match (&self.content, &self.sections) {
            (Some(c), _) if !c.is_empty() => c.clone(),
            (_, Some(s)) => render(s),
            _ => String::new(),
        }
    }
}

/// The system message to put before the next user message, if the declared prompt/tools differ
/// from the wanted ones: a full message when nothing is declared, else a patch.
pub fn system_message_for(
    declared: &Declared,
    sections: &[(String, String)],
    tools: &[ToolDecl],
    timestamp: u64,
) -> Option<Value> {
    let tool_json: Vec<Value> = tools.iter().map(ToolDecl::to_json).collect();
    if declared.is_empty() {
        let mut secs = Map::new();
        for (k, v) in sections {
            secs.insert(k.clone(), v.clone().into());
        }
        return Some(json!({"role": "system", "content": "", "sections": secs,
            "timestamp": timestamp, "toolsAdded": tool_json}));
    }
    let old = declared.sections.clone().unwrap_or_default();
    let mut changed = Map::new();
    for (k, v) in sections {
        if old.iter().find(|(n, _)| n == k).map(|(_, ov)| ov) != Some(v) {
            changed.insert(k.clone(), v.clone().into());
        }
    }
    for (k, _) in &old {
        if !sections.iter().any(|(n, _)| n == k) {
            changed.insert(k.clone(), Value::Null);
        }
    }
    let added: Vec<Value> = tool_json
        .iter()
        .filter(|t| !declared.tools.contains(t))
        .cloned()
        .collect();
    let removed: Vec<Value> = declared
        .tools
        .iter()
        .filter(|t| !tool_json.iter().any(|n| n.get("name") == t.get("name")))
        .map(|t| json!({"name": t.get("name").cloned().unwrap_or(Value::Null)}))
        .collect();
    if changed.is_empty() && added.is_empty() && removed.is_empty() && declared.content.is_none() {
        return None;
    }
    let mut m = Map::new();
    m.insert("role".into(), "system".into());
    m.insert("content".into(), "".into());
    // A patch that only adds or removes tools has no `sections` (as pi writes it).
    if !changed.is_empty() {
        m.insert("sections".into(), Value::Object(changed));
    }
    m.insert("timestamp".into(), timestamp.into());
    if !added.is_empty() {
        m.insert("toolsAdded".into(), Value::Array(added));
    }
    if !removed.is_empty() {
        m.insert("toolsRemoved".into(), Value::Array(removed));
    }
    Some(Value::Object(m))
}

#[cfg(test)]
mod tests {

    #[test]
    fn docs_paths_are_named_only_while_they_exist() {
        // Regression: a deployed binary named the build machine's checkout in its prompt.
        assert!(docs_body_for(docs_root()).contains("/README.md (commands"));
        let moved = docs_body_for("/nonexistent/pi-rpc-source");
        assert!(!moved.contains("/nonexistent"), "{moved}");
        assert!(moved.contains("not installed beside this binary"));
    }

    use super::*;

    fn decl(name: &str) -> ToolDecl {
        ToolDecl {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
            constrained_sampling: true,
            snippet: Some("does things".into()),
            guidelines: vec!["Use it well.".into()],
        }
    }

    #[test]
    fn default_sections_and_full_then_no_patch() {
        let tools = [decl("read"), decl("bash")];
        let inp = PromptInputs {
            custom_prompt: None,
            append: None,
            tools: &tools,
            context_files: &[],
            skills: &[],
            cwd: Path::new("/tmp/x"),
        };
        let secs = build_sections(&inp);
        let names: Vec<&str> = secs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["preamble", "tools", "rules", "docs", "cwd"]);
        assert_eq!(secs[4].1, "<cwd>\n/tmp/x\n</cwd>");
        let full = system_message_for(&Declared::default(), &secs, &tools, 5).unwrap();
        assert_eq!(
            full["toolsAdded"][0]["constrainedSampling"]["strict"],
            "prefer"
        );
        let declared = Declared::replay(std::slice::from_ref(&full));
        assert_eq!(declared.prompt_text(), render(&secs));
        assert!(system_message_for(&declared, &secs, &tools, 6).is_none());
        // A tool removed: a patch with toolsRemoved and the changed sections only.
        let patch = system_message_for(
            &declared,
            &build_sections(&PromptInputs {
                tools: &tools[..1],
                ..inp
            }),
            &tools[..1],
            7,
        )
        .unwrap();
        assert_eq!(patch["toolsRemoved"], json!([{"name": "bash"}]));
        assert!(patch["sections"].get("preamble").is_none());
    }
}
