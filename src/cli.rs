//! Command-line flags (`settings.md` §6), parsed exactly as pi 1.6.0's `parseArgs` does
//! (`dist/cli/args.js`), so a client that starts pi with pi's flags starts pi-rpc unchanged.
//!
//! Why not clap: pi's grammar is not a getopt grammar. Its aliases are single-dash words (`-nt`,
//! `-xt`, `-nbt`), a flag whose value is missing falls through to an *unknown flag* (`--model` as
//! the last argument is `Unknown option: --model`), unknown `--name [value]` options are kept for
//! extensions to claim, `-p` takes the next argument as a message unless it looks like a flag, and
//! errors are reported as `Error: <text>` diagnostics after the whole line is read. Matching that
//! with clap took a pre-pass that re-implemented most of it; this is the parser itself, one `match`
//! per flag, in pi's order, with pi's diagnostics.
//!
//! pi-rpc has no terminal UI: `--theme`, `--use-theme`, `--no-themes` and `--tui-mode` are
//! validated as pi validates them and otherwise ignored; pi-rpc's default mode is `rpc`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// JSONL commands on stdin, responses and events on stdout.
    Rpc,
    /// The event stream of the prompts given on the command line (or stdin), one-way.
    Json,
    /// Only the final assistant text of the prompts given on the command line (or stdin).
    Text,
}

/// How serious a parse diagnostic is: an error ends the process with exit code 1 after all
/// diagnostics are printed; a warning is printed and the flag ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.severity {
            Severity::Error => write!(f, "Error: {}", self.message),
            Severity::Warning => write!(f, "Warning: {}", self.message),
        }
    }
}

/// The value of a `--name` option no built-in flag knows (kept for extension flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnknownFlagValue {
    /// `--name` with nothing after it, or followed by another flag.
    Present,
    /// `--name value` or `--name=value`.
    Value(String),
}

/// `--tui-mode`: accepted and validated as pi does; pi-rpc has no TUI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuiMode {
    Regular,
    Fullscreen,
}

/// What the command line says, after parsing and before any decision is derived from it.
#[derive(Clone, Debug, Default)]
pub struct Cli {
    /// `--mode`, when given.
    pub mode: Option<Mode>,
    /// `-p` / `--print`.
    pub print: bool,
    pub help: bool,
    pub version: bool,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `--models`: comma-separated patterns, trimmed, empty ones dropped.
    pub models: Option<Vec<String>>,
    /// `--thinking`, as given (validated where it is applied, with pi's warning).
    pub thinking: Option<String>,
    pub api_key: Option<String>,
    pub continue_session: bool,
    pub resume: bool,
    pub session: Option<String>,
    pub session_id: Option<String>,
    pub fork: Option<String>,
    pub session_dir: Option<String>,
    pub no_session: bool,
    pub name: Option<String>,
    /// `--tools` / `-t`: names, patterns, or only `+name`/`-name` modifiers.
    pub tools: Option<Vec<String>>,
    /// `--exclude-tools` / `-xt`.
    pub exclude_tools: Option<Vec<String>>,
    pub no_builtin_tools: bool,
    pub no_tools: bool,
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`, repeatable; the texts are joined with a blank line.
    pub append_system_prompt: Vec<String>,
    pub no_context_files: bool,
    pub no_skills: bool,
    pub skill: Vec<String>,
    pub no_prompt_templates: bool,
    pub prompt_template: Vec<String>,
    /// `-e` / `--extension`, repeatable.
    pub extension: Vec<String>,
    pub no_extensions: bool,
    pub no_mcp: bool,
    /// `--theme`, repeatable (no TUI: ignored).
    pub themes: Vec<String>,
    /// `--use-theme` (no TUI: ignored).
    pub use_theme: Option<String>,
    /// `--no-themes` (no TUI: nothing to disable).
    pub no_themes: bool,
    /// `--tui-mode` (no TUI: ignored).
    pub tui_mode: Option<TuiMode>,
    /// `--export <session file> [output]`: the output path is the first message.
    pub export: Option<String>,
    /// `--list-models [search]`: `Some("")` without a search.
    pub list_models: Option<String>,
    pub verbose: bool,
    pub offline: bool,
    /// `--approve` (`Some(true)`) / `--no-approve` (`Some(false)`); the last one wins.
    pub approve: Option<bool>,
    /// Messages, in order; `@path` file arguments keep their `@`.
    pub messages: Vec<String>,
    /// Unknown `--name` options, in order (first occurrence wins the order, last the value).
    pub unknown_flags: Vec<(String, UnknownFlagValue)>,
    pub diagnostics: Vec<Diagnostic>,
}

pub const VALID_THINKING_LEVELS: [&str; 7] =
    ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

impl Cli {
    /// Parses the arguments after the program name.
    pub fn parse_from<I, S>(args: I) -> Cli
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args: Vec<String> = args.into_iter().map(Into::into).collect();
        let mut c = Cli::default();
        let mut i = 0;
        // The value after flag `i`, when there is one (pi: `i + 1 < args.length`). Without one,
        // the flag falls through to the unknown-flag rule below, as in pi.
        let has_value = |i: usize| i + 1 < args.len();
        while i < args.len() {
            let arg = args[i].as_str();
            let next = args.get(i + 1).map(String::as_str);
            match arg {
                "--" => {
                    c.messages.extend(args[i + 1..].iter().cloned());
                    break;
                }
                "--help" | "-h" => c.help = true,
                "--version" | "-v" => c.version = true,
                "--mode" => match next {
                    None => c.error("--mode requires text, json, or rpc"),
                    Some(m) if m.starts_with('-') => c.error("--mode requires text, json, or rpc"),
                    Some(m) => {
                        i += 1;
                        match m {
                            "rpc" => c.mode = Some(Mode::Rpc),
                            "json" => c.mode = Some(Mode::Json),
                            "text" => c.mode = Some(Mode::Text),
                            _ => c.error(format!(
                                "Invalid mode \"{m}\". Valid values: text, json, rpc"
                            )),
                        }
                    }
                },
                "--continue" | "-c" => c.continue_session = true,
                "--resume" | "-r" => c.resume = true,
                "--provider" if has_value(i) => c.provider = Some(take(&args, &mut i)),
                "--model" if has_value(i) => c.model = Some(take(&args, &mut i)),
                "--api-key" if has_value(i) => c.api_key = Some(take(&args, &mut i)),
                "--system-prompt" if has_value(i) => c.system_prompt = Some(take(&args, &mut i)),
                "--append-system-prompt" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.append_system_prompt.push(v);
                }
                "--name" | "-n" => {
                    if has_value(i) {
                        c.name = Some(take(&args, &mut i));
                    } else {
                        c.error("--name requires a value");
                    }
                }
                "--no-session" => c.no_session = true,
                "--session" if has_value(i) => c.session = Some(take(&args, &mut i)),
                "--session-id" if has_value(i) => c.session_id = Some(take(&args, &mut i)),
                "--fork" if has_value(i) => c.fork = Some(take(&args, &mut i)),
                "--session-dir" if has_value(i) => c.session_dir = Some(take(&args, &mut i)),
                "--models" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.models = Some(split_list(&v));
                }
                "--no-tools" | "-nt" => c.no_tools = true,
                "--no-builtin-tools" | "-nbt" => c.no_builtin_tools = true,
                "--tools" | "-t" if has_value(i) => {
                    let tools = split_list(&take(&args, &mut i));
                    match tool_list_error(&tools) {
                        Some(e) => c.error(format!("{arg}: {e}")),
                        None => c.tools = Some(tools),
                    }
                }
                "--exclude-tools" | "-xt" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.exclude_tools = Some(split_list(&v));
                }
                "--thinking" if has_value(i) => {
                    let level = take(&args, &mut i);
                    if !VALID_THINKING_LEVELS.contains(&level.as_str()) {
                        c.diagnostics.push(Diagnostic {
                            severity: Severity::Warning,
                            message: format!(
                                "Invalid thinking level \"{level}\". Valid values: {}",
                                VALID_THINKING_LEVELS.join(", ")
                            ),
                        });
                    } else {
                        c.thinking = Some(level);
                    }
                }
                "--print" | "-p" => {
                    c.print = true;
                    // The next argument is the message unless it is a file or a flag.
                    if let Some(n) = next {
                        if !n.starts_with('@') && (!n.starts_with('-') || n.starts_with("---")) {
                            c.messages.push(n.to_string());
                            i += 1;
                        }
                    }
                }
                "--export" if has_value(i) => c.export = Some(take(&args, &mut i)),
                "--extension" | "-e" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.extension.push(v);
                }
                "--no-extensions" | "-ne" => c.no_extensions = true,
                "--no-mcp" => c.no_mcp = true,
                "--skill" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.skill.push(v);
                }
                "--prompt-template" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.prompt_template.push(v);
                }
                "--theme" if has_value(i) => {
                    let v = take(&args, &mut i);
                    c.themes.push(v);
                }
                "--use-theme" => match next {
                    Some(n) if !n.starts_with('-') => {
                        c.use_theme = Some(n.to_string());
                        i += 1;
                    }
                    _ => c.error("--use-theme requires a theme name"),
                },
                "--no-skills" | "-ns" => c.no_skills = true,
                "--no-prompt-templates" | "-np" => c.no_prompt_templates = true,
                "--no-themes" => c.no_themes = true,
                "--no-context-files" | "-nc" => c.no_context_files = true,
                "--list-models" => match next {
                    Some(n) if !n.starts_with('-') && !n.starts_with('@') => {
                        c.list_models = Some(n.to_string());
                        i += 1;
                    }
                    _ => c.list_models = Some(String::new()),
                },
                "--tui-mode" => match next {
                    Some("regular") => {
                        c.tui_mode = Some(TuiMode::Regular);
                        i += 1;
                    }
                    Some("fullscreen") => {
                        c.tui_mode = Some(TuiMode::Fullscreen);
                        i += 1;
                    }
                    Some(m) if !m.starts_with('-') => {
                        i += 1;
                        c.error(format!(
                            "Invalid TUI mode \"{m}\". Valid values: regular, fullscreen"
                        ));
                    }
                    _ => c.error("--tui-mode requires regular or fullscreen"),
                },
                "--verbose" => c.verbose = true,
                "--approve" | "-a" => c.approve = Some(true),
                "--no-approve" | "-na" => c.approve = Some(false),
                "--offline" => c.offline = true,
                _ if arg.starts_with('@') => c.messages.push(arg.to_string()),
                _ if arg.starts_with("--") => {
                    let (name, value) = match arg.find('=') {
                        Some(eq) => (
                            arg[2..eq].to_string(),
                            UnknownFlagValue::Value(arg[eq + 1..].to_string()),
                        ),
                        None => match next {
                            Some(n) if !n.starts_with('-') && !n.starts_with('@') => {
                                i += 1;
                                (arg[2..].to_string(), UnknownFlagValue::Value(n.to_string()))
                            }
                            _ => (arg[2..].to_string(), UnknownFlagValue::Present),
                        },
                    };
                    match c.unknown_flags.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => slot.1 = value,
                        None => c.unknown_flags.push((name, value)),
                    }
                }
                _ if arg.starts_with('-') => c.error(format!("Unknown option: {arg}")),
                _ => c.messages.push(arg.to_string()),
            }
            i += 1;
        }
        c
    }

    /// Parses the process's own arguments.
    pub fn parse_env() -> Cli {
        Cli::parse_from(std::env::args().skip(1))
    }

    fn error(&mut self, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            severity: Severity::Error,
            message: message.into(),
        });
    }

    /// The effective mode: an explicit `--mode rpc|json` wins; otherwise `-p` (or `--mode
    /// text`) means text; otherwise pi-rpc's default, rpc.
    pub fn effective_mode(&self) -> Mode {
        match self.mode {
            Some(Mode::Rpc) => Mode::Rpc,
            Some(Mode::Json) => Mode::Json,
            Some(Mode::Text) => Mode::Text,
            None if self.print => Mode::Text,
            None => Mode::Rpc,
        }
    }

    /// True when `--approve` was the last trust flag.
    pub fn approve(&self) -> bool {
        self.approve == Some(true)
    }

    /// True when `--no-approve` was the last trust flag.
    pub fn no_approve(&self) -> bool {
        self.approve == Some(false)
    }

    /// The `Error: Unknown option: --a, --b` that unclaimed extension flags give once extensions
    /// have loaded (`agent-session-services.js`). pi-rpc has no extension flags yet, so every
    /// unknown `--name` is unclaimed.
    pub fn unknown_flags_error(&self) -> Option<String> {
        if self.unknown_flags.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .unknown_flags
            .iter()
            .map(|(n, _)| format!("--{n}"))
            .collect();
        let plural = if names.len() == 1 { "" } else { "s" };
        Some(format!(
            "Error: Unknown option{plural}: {}",
            names.join(", ")
        ))
    }
}

/// The argument after flag `i`; advances `i` past it.
fn take(args: &[String], i: &mut usize) -> String {
    *i += 1;
    args[*i].clone()
}

/// Comma-separated list → trimmed, non-empty items.
pub fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// pi's `getToolListError`: `+name`/`-name` modifiers cannot be mixed with names and take no
/// patterns.
fn tool_list_error(entries: &[String]) -> Option<String> {
    let is_modifier = |e: &String| e.starts_with('+') || e.starts_with('-');
    let modifiers: Vec<&String> = entries.iter().filter(|e| is_modifier(e)).collect();
    if modifiers.is_empty() {
        return None;
    }
    if modifiers.len() < entries.len() {
        return Some("tool names cannot be mixed with +name or -name entries".into());
    }
    modifiers
        .iter()
        .find(|e| e.contains('*'))
        .map(|p| format!("+name and -name entries take exact tool names, not patterns: {p}"))
}

/// `pi-rpc --help`.
pub const HELP: &str = "\
pi-rpc - a headless coding agent speaking the pi RPC protocol (JSONL on stdin/stdout)

Usage:
  pi-rpc [options] [--] [@files...] [messages...]
  pi-rpc auth login <provider> [--api-key] [--no-browser]
                                 Sign in with an account (browser URL with a loopback callback or a pasted
                                 code, or a device code), or save an API key read from stdin; auth.json
  pi-rpc auth logout <provider>  Remove the stored credential (also: pi-rpc login / pi-rpc logout)

Modes:
  --mode <mode>                  rpc (default): JSONL commands on stdin, responses and events on stdout;
                                 json: the event stream of the prompts given as arguments;
                                 text: only the final assistant text of those prompts
  --print, -p                    Run the prompt(s) given as arguments and print the answer (text mode)

Options:
  --provider <name>              Provider to search for --model (requires --model)
  --model <pattern>              Model pattern or ID (\"provider/id\", fuzzy, optional \":<thinking>\")
  --models <patterns>            Comma-separated model patterns that scope model cycling (globs allowed)
  --api-key <key>                API key for the selected model's provider (not saved)
  --thinking <level>             Thinking level: off, minimal, low, medium, high, xhigh, max
  --system-prompt <text|file>    Replace the system prompt
  --append-system-prompt <text|file>  Append to the system prompt (repeatable)
  --continue, -c                 Continue the most recent session of this directory
  --resume, -r                   Resume a session (no picker without a terminal: as --continue)
  --session <path|id>            Open a session by file path or full/partial id
  --session-id <id>              Open this directory's session with that id, creating it otherwise
  --fork <path|id>               Fork a session into the current directory
  --session-dir <dir>            Directory for session storage and lookup
  --no-session                   Keep the session in memory only
  --name, -n <name>              Display name of a new session
  --tools, -t <tools>            Comma-separated allowlist of tool names or patterns (+name/-name edit the defaults)
  --exclude-tools, -xt <tools>   Comma-separated denylist of tool names or patterns
  --no-tools, -nt                Disable all tools
  --no-builtin-tools, -nbt       Disable the built-in tools
  --extension, -e <path>         Load an extension (repeatable; *.ext.json manifests and executables, see README)
  --no-extensions, -ne           Disable extension discovery (explicit -e paths still count)
  --no-mcp                       Disable MCP support
  --skill <path>                 Load a skill file or directory (repeatable)
  --no-skills, -ns               Disable skill discovery
  --prompt-template <path>       Load a prompt template file or directory (repeatable)
  --no-prompt-templates, -np     Disable prompt template discovery
  --no-context-files, -nc        Do not load AGENTS.md / CLAUDE.md
  --approve, -a                  Trust project-local files (.pi/) for this run
  --no-approve, -na              Ignore project-local files for this run
  --export <file> [output]       Export a session file to HTML and exit
  --list-models [search]         List the available models (optionally matching search) and exit
  --offline                      Accepted for pi compatibility (pi-rpc only ever contacts the LLM endpoint)
  --verbose                      More diagnostics on stderr
  --theme, --use-theme, --no-themes, --tui-mode
                                 Accepted for pi compatibility; pi-rpc has no terminal UI
  --help, -h                     Show this help
  --version, -v                  Print pi-rpc's version, e.g. \"0.1.0 (pi-rpc)\"

Environment:
  PI_CODING_AGENT_DIR            Config directory (default: ~/.pi/agent), shared with pi
  PI_CODING_AGENT_SESSION_DIR    Session directory (overridden by --session-dir)
  PI_RPC_MAX_LINE_BYTES          Longest accepted stdin line in RPC mode (see README)
  ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, ...  Provider keys (README, Providers)
";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::parse_from(args.iter().copied())
    }

    fn errors(c: &Cli) -> Vec<String> {
        c.diagnostics.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parses_common_flags() {
        let cli = parse(&[
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
            "read, bash,",
        ]);
        assert_eq!(cli.mode, Some(Mode::Rpc));
        assert_eq!(cli.model.as_deref(), Some("mock-sonnet:high"));
        assert!(cli.no_session);
        assert_eq!(
            cli.tools,
            Some(vec!["read".to_string(), "bash".to_string()])
        );
        assert!(cli.diagnostics.is_empty());
    }

    #[test]
    fn flags_after_a_message_are_still_flags() {
        let cli = parse(&["-p", "hi", "--no-session", "two", "--model", "m"]);
        assert_eq!(cli.messages, vec!["hi".to_string(), "two".to_string()]);
        assert!(cli.no_session);
        assert_eq!(cli.model.as_deref(), Some("m"));
    }

    #[test]
    fn print_flag_means_text_mode_unless_a_mode_is_given() {
        let cli = parse(&["-p", "hello"]);
        assert_eq!(cli.effective_mode(), Mode::Text);
        assert_eq!(cli.messages, vec!["hello".to_string()]);
        assert_eq!(
            parse(&["-p", "--mode", "json"]).effective_mode(),
            Mode::Json
        );
        assert_eq!(parse(&["--mode", "rpc", "-p"]).effective_mode(), Mode::Rpc);
        assert_eq!(parse(&[]).effective_mode(), Mode::Rpc);
    }

    #[test]
    fn print_does_not_take_a_flag_or_file_as_its_message() {
        let cli = parse(&["-p", "--no-session", "x"]);
        assert_eq!(cli.messages, vec!["x".to_string()]);
        let cli = parse(&["-p", "@a.txt"]);
        assert_eq!(cli.messages, vec!["@a.txt".to_string()]);
        let cli = parse(&["-p", "--- a list"]);
        assert_eq!(cli.messages, vec!["--- a list".to_string()]);
    }

    #[test]
    fn single_dash_word_aliases_are_pis() {
        let cli = parse(&[
            "-nt",
            "-nbt",
            "-xt",
            "grep,find",
            "-ne",
            "-ns",
            "-np",
            "-nc",
            "-na",
            "-e",
            "x.ts",
        ]);
        assert!(cli.no_tools && cli.no_builtin_tools && cli.no_extensions);
        assert!(cli.no_skills && cli.no_prompt_templates && cli.no_context_files);
        assert!(cli.no_approve());
        assert_eq!(
            cli.exclude_tools,
            Some(vec!["grep".to_string(), "find".to_string()])
        );
        assert_eq!(cli.extension, vec!["x.ts".to_string()]);
        assert!(cli.diagnostics.is_empty());
    }

    #[test]
    fn tui_only_flags_are_accepted_and_validated() {
        let cli = parse(&[
            "--no-themes",
            "--theme",
            "t.json",
            "--use-theme",
            "dark/light",
            "--tui-mode",
            "regular",
        ]);
        assert!(cli.diagnostics.is_empty(), "{:?}", cli.diagnostics);
        assert!(cli.no_themes);
        assert_eq!(cli.tui_mode, Some(TuiMode::Regular));
        assert_eq!(
            errors(&parse(&["--tui-mode", "x"])),
            vec!["Error: Invalid TUI mode \"x\". Valid values: regular, fullscreen"]
        );
        assert_eq!(
            errors(&parse(&["--use-theme"])),
            vec!["Error: --use-theme requires a theme name"]
        );
    }

    #[test]
    fn errors_are_pis() {
        assert_eq!(
            errors(&parse(&["--mode"])),
            vec!["Error: --mode requires text, json, or rpc"]
        );
        assert_eq!(
            errors(&parse(&["--mode", "foo"])),
            vec!["Error: Invalid mode \"foo\". Valid values: text, json, rpc"]
        );
        assert_eq!(errors(&parse(&["-x"])), vec!["Error: Unknown option: -x"]);
        assert_eq!(
            errors(&parse(&["--name"])),
            vec!["Error: --name requires a value"]
        );
        assert_eq!(
            errors(&parse(&["-t", "+read,bash"])),
            vec!["Error: -t: tool names cannot be mixed with +name or -name entries"]
        );
        assert_eq!(
            errors(&parse(&["--tools", "+re*"])),
            vec![
                "Error: --tools: +name and -name entries take exact tool names, not patterns: +re*"
            ]
        );
        assert_eq!(
            errors(&parse(&["--thinking", "bogus"])),
            vec!["Warning: Invalid thinking level \"bogus\". Valid values: off, minimal, low, medium, high, xhigh, max"]
        );
    }

    #[test]
    fn a_value_flag_without_its_value_is_an_unknown_flag() {
        let cli = parse(&["--no-session", "--model"]);
        assert_eq!(cli.model, None);
        assert_eq!(
            cli.unknown_flags_error().as_deref(),
            Some("Error: Unknown option: --model")
        );
    }

    #[test]
    fn unknown_long_flags_are_kept_with_their_values() {
        let cli = parse(&["--plan", "--level", "3", "--x=y", "msg", "--flag", "@f"]);
        assert_eq!(
            cli.unknown_flags,
            vec![
                ("plan".to_string(), UnknownFlagValue::Present),
                ("level".to_string(), UnknownFlagValue::Value("3".into())),
                ("x".to_string(), UnknownFlagValue::Value("y".into())),
                ("flag".to_string(), UnknownFlagValue::Present),
            ]
        );
        assert_eq!(cli.messages, vec!["msg".to_string(), "@f".to_string()]);
        assert_eq!(
            cli.unknown_flags_error().as_deref(),
            Some("Error: Unknown options: --plan, --level, --x, --flag")
        );
    }

    #[test]
    fn double_dash_ends_the_options() {
        let cli = parse(&["--no-session", "--", "-p", "@a", "--model"]);
        assert_eq!(cli.messages, vec!["-p", "@a", "--model"]);
        assert!(!cli.print);
        assert!(cli.unknown_flags.is_empty());
    }

    #[test]
    fn repeatable_flags_keep_every_value() {
        let cli = parse(&[
            "--append-system-prompt",
            "a",
            "--append-system-prompt",
            "b",
            "--skill",
            "s1",
            "--skill",
            "s2",
            "--list-models",
        ]);
        assert_eq!(cli.append_system_prompt, vec!["a", "b"]);
        assert_eq!(cli.skill, vec!["s1", "s2"]);
        assert_eq!(cli.list_models.as_deref(), Some(""));
        assert_eq!(
            parse(&["--list-models", "son"]).list_models.as_deref(),
            Some("son")
        );
    }

    #[test]
    fn the_last_trust_flag_wins() {
        assert!(parse(&["-na", "--approve"]).approve());
        assert!(parse(&["-a", "--no-approve"]).no_approve());
    }
}
