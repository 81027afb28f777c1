//! What turns a prompt's text into the run's user message, and the help text pi appends to its
//! "no model / no API key" errors. Shared by RPC `prompt`/`steer`/`follow_up` and print mode.

use crate::agent::AgentSession;

/// The `<login help>` lines of pi's model/credential errors. pi points at its installation's
/// `docs/`; pi-rpc's documentation is its README, named by the path it was built from while
/// that file exists (a binary copied elsewhere names it plainly instead of a dead path).
pub fn login_help() -> String {
    let built_from = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let (providers, models) = if std::path::Path::new(built_from).is_file() {
        (
            format!("{built_from}#providers"),
            format!("{built_from}#models"),
        )
    } else {
        (
            "pi-rpc's README.md, section \"Providers\"".to_string(),
            "pi-rpc's README.md, section \"Models\"".to_string(),
        )
    };
    format!(
        "Use /login to log into a provider via OAuth or API key. See:\n  {providers}\n  {models}"
    )
}

/// Skill commands and prompt templates expanded (`agent-loop.md` §2, items 4–5).
pub fn expand_text(s: &AgentSession, message: &str) -> String {
    match crate::resources::skills::expand_skill_command(message, &s.resources.skills) {
        Ok(Some(expanded)) => return expanded,
        Ok(None) => {}
        Err(e) => eprintln!("pi-rpc: {e}"),
    }
    crate::resources::prompts::expand_prompt_template(message, &s.resources.prompts)
        .unwrap_or_else(|| message.to_string())
}
