//! Command-line flags (`settings.md` §6). pi-rpc has no TUI: `rpc` is the default mode.

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// JSONL commands on stdin, responses and events on stdout.
    Rpc,
    /// The event stream of the prompts given on the command line (or stdin), one-way.
    Json,
    /// Only the final assistant text of the prompts given on the command line (or stdin).
    Text,
}

#[derive(Clone, Debug, Parser)]
#[command(
    name = "pi-rpc",
    version,
    about = "A headless coding agent speaking the pi RPC protocol (JSONL on stdin/stdout).",
    long_about = None,
    disable_version_flag = true
)]
pub struct Cli {
    /// Output/protocol mode.
    #[arg(long, value_enum, default_value = "rpc")]
    pub mode: Mode,

    /// Print mode: run the prompt(s) and print the final assistant text (like --mode text).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Provider to look the --model up in.
    #[arg(long)]
    pub provider: Option<String>,

    /// Model: exact id, provider/id, or a fuzzy match; optional :<thinking level> suffix.
    #[arg(long)]
    pub model: Option<String>,

    /// Comma-separated model patterns that scope cycle_model (globs and :<level> allowed).
    #[arg(long)]
    pub models: Option<String>,

    /// Startup thinking level (off, minimal, low, medium, high, xhigh, max); clamped to the model.
    #[arg(long)]
    pub thinking: Option<String>,

    /// API key for the selected model's provider (not persisted).
    #[arg(long = "api-key")]
    pub api_key: Option<String>,

    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Pick a session to resume (no picker without a TTY: behaves like --continue).
    #[arg(short = 'r', long)]
    pub resume: bool,

    /// Open a session file (path) or id (a unique prefix is enough).
    #[arg(long)]
    pub session: Option<String>,

    /// Open or create the session with this id.
    #[arg(long = "session-id")]
    pub session_id: Option<String>,

    /// Fork a session (path or id) into a new one.
    #[arg(long)]
    pub fork: Option<String>,

    /// Directory for session files.
    #[arg(long = "session-dir")]
    pub session_dir: Option<String>,

    /// Keep the session in memory only.
    #[arg(long = "no-session")]
    pub no_session: bool,

    /// Display name of a new session.
    #[arg(short = 'n', long)]
    pub name: Option<String>,

    /// Tool allowlist (comma-separated names or * patterns; +name / -name modify the defaults).
    #[arg(short = 't', long, alias = "tool")]
    pub tools: Option<String>,

    /// Tool denylist (comma-separated).
    #[arg(long = "exclude-tools", alias = "xt")]
    pub exclude_tools: Option<String>,

    /// Disable the built-in tools.
    #[arg(long = "no-builtin-tools", alias = "nbt")]
    pub no_builtin_tools: bool,

    /// Disable all tools.
    #[arg(long = "no-tools", alias = "nt")]
    pub no_tools: bool,

    /// Replace the system prompt's preamble (text, or a path to a file).
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,

    /// Append text (or a file's content) to the system prompt.
    #[arg(long = "append-system-prompt")]
    pub append_system_prompt: Option<String>,

    /// Do not load AGENTS.md / CLAUDE.md context files.
    #[arg(long = "no-context-files")]
    pub no_context_files: bool,

    /// Do not load skills.
    #[arg(long = "no-skills")]
    pub no_skills: bool,

    /// Load a skill (SKILL.md file or directory); repeatable.
    #[arg(long = "skill")]
    pub skill: Vec<String>,

    /// Do not load prompt templates.
    #[arg(long = "no-prompt-templates")]
    pub no_prompt_templates: bool,

    /// Load a prompt template (file or directory); repeatable.
    #[arg(long = "prompt-template")]
    pub prompt_template: Vec<String>,

    /// Load an extension; repeatable (extensions arrive with a later release).
    #[arg(short = 'e', long = "extension")]
    pub extension: Vec<String>,

    /// Do not load extensions.
    #[arg(long = "no-extensions")]
    pub no_extensions: bool,

    /// Never fetch anything but the LLM endpoint (pi-rpc never does anyway).
    #[arg(long)]
    pub offline: bool,

    /// Trust the project: load its .pi/settings.json, skills and prompt templates.
    #[arg(long, conflicts_with = "no_approve")]
    pub approve: bool,

    /// Do not trust the project.
    #[arg(long = "no-approve")]
    pub no_approve: bool,

    /// List the available models (optionally only those matching SEARCH) and exit.
    #[arg(long = "list-models", value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,

    /// More diagnostics on stderr.
    #[arg(long)]
    pub verbose: bool,

    /// Print the version and exit.
    #[arg(short = 'v', long = "version")]
    pub version: bool,

    /// Initial prompt(s) for json/text/print modes (not used in RPC mode); `@path` attaches a
    /// file. Flags may come before or after them, as with pi.
    pub messages: Vec<String>,
}

impl Cli {
    /// The effective mode: `-p` without an explicit `--mode json` means text.
    pub fn effective_mode(&self) -> Mode {
        if self.print && self.mode == Mode::Rpc {
            Mode::Text
        } else {
            self.mode
        }
    }

    /// Comma-separated list flag → trimmed, non-empty items.
    pub fn split_list(v: &Option<String>) -> Option<Vec<String>> {
        v.as_ref().map(|s| {
            s.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_flags() {
        let cli = Cli::try_parse_from([
            "pi-rpc",
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-sonnet:high",
            "--no-session",
            "-n",
            "x",
            "--tools",
            "read,bash",
        ])
        .unwrap();
        assert_eq!(cli.mode, Mode::Rpc);
        assert_eq!(cli.model.as_deref(), Some("mock-sonnet:high"));
        assert!(cli.no_session);
        assert_eq!(
            Cli::split_list(&cli.tools),
            Some(vec!["read".to_string(), "bash".to_string()])
        );
    }

    #[test]
    fn flags_after_a_message_are_still_flags() {
        let cli =
            Cli::try_parse_from(["pi-rpc", "-p", "hi", "--no-session", "two", "--model", "m"])
                .unwrap();
        assert_eq!(cli.messages, vec!["hi".to_string(), "two".to_string()]);
        assert!(cli.no_session);
        assert_eq!(cli.model.as_deref(), Some("m"));
    }

    #[test]
    fn print_flag_means_text_mode() {
        let cli = Cli::try_parse_from(["pi-rpc", "-p", "hello"]).unwrap();
        assert_eq!(cli.effective_mode(), Mode::Text);
        assert_eq!(cli.messages, vec!["hello".to_string()]);
    }
}
