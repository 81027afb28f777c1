//! The system prompt and its system message (`agent-loop.md` §9, `data-model.md` §3.8): section
//! names and order, context files, skills, appended and custom prompts, and what the provider
//! receives.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::run::{agent_for, run_prompt};

fn section_names(system: &Value) -> Vec<String> {
    system["sections"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn system_message(records: &[Value]) -> Value {
    records
        .iter()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "system")
        .map(|r| r["message"].clone())
        .expect("a system message")
}

#[test]
fn context_files_skills_and_addendum_reach_the_prompt() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "ok"}]}]}));
    let mut a = agent_for(&mock)
        .cwd_file(
            "AGENTS.md",
            "Always run the linter.\nPrefer small commits.\n",
        )
        .agent_file("AGENTS.md", "Global rule from the agent dir.\n")
        .agent_file(
            "skills/lint/SKILL.md",
            "---\nname: lint\ndescription: Lint <the> project & report.\n---\nRun it.\n",
        )
        .args(["--append-system-prompt", "Answer in English."])
        .spawn();
    let records = run_prompt(&mut a, "p", "hi");
    let sys = system_message(&records);
    assert_eq!(
        section_names(&sys),
        [
            "preamble",
            "tools",
            "rules",
            "docs",
            "addendum",
            "project_context",
            "skills",
            "cwd"
        ]
    );
    let tools: Vec<&str> = sys["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "bash", "edit", "write"]);
    let reqs = mock.wait_requests(1, std::time::Duration::from_secs(10));
    let prompt = reqs[0]["body"]["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let cwd = a.cwd.to_string_lossy().to_string();
    let agent_dir = a.agent_dir.to_string_lossy().to_string();
    for needle in [
        "Always run the linter.",
        "Prefer small commits.",
        "Global rule from the agent dir.",
        "Answer in English.",
        "<name>lint</name>",
        "<description>Lint &lt;the&gt; project &amp; report.</description>",
        &format!("<location>{agent_dir}/skills/lint/SKILL.md</location>"),
        &format!("<cwd>\n{cwd}\n</cwd>"),
    ] {
        assert!(prompt.contains(needle), "missing {needle:?} in:\n{prompt}");
    }
    // Global context file first, then the cwd's.
    let global = prompt.find("Global rule").unwrap();
    let local = prompt.find("Always run the linter.").unwrap();
    assert!(global < local);
    // The rendered prompt is the sections joined by blank lines.
    let joined: Vec<&str> = sys["sections"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(prompt, joined.join("\n\n"));
    // A second prompt declares nothing new: no system message.
    let records = run_prompt(&mut a, "p2", "again");
    assert!(!records
        .iter()
        .any(|r| r["type"] == "message_start" && r["message"]["role"] == "system"));
}

#[test]
fn a_custom_prompt_replaces_the_default_sections_and_tool_flags_shape_the_loadout() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "ok"}]}]}));
    let mut a = agent_for(&mock)
        .args([
            "--system-prompt",
            "You are a terse robot.",
            "--tools",
            "read,grep,ls",
        ])
        .spawn();
    let records = run_prompt(&mut a, "p", "hi");
    let sys = system_message(&records);
    assert_eq!(section_names(&sys), ["preamble", "cwd"]);
    assert_eq!(sys["sections"]["preamble"], "You are a terse robot.");
    let tools: Vec<&str> = sys["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "grep", "ls"]);
    let reqs = mock.wait_requests(1, std::time::Duration::from_secs(10));
    let sent: Vec<&str> = reqs[0]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ["read", "grep", "ls"]);
}
