//! Start-up: flags → settings, models, resources, the session → the chosen mode's threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::bounded;
use parking_lot::Mutex;

use crate::agent::state::Resources;
use crate::agent::{AgentSession, StartupSelection};
use crate::cli::{Cli, Mode};
use crate::llm::{ModelRegistry, ThinkingLevel};
use crate::resources::prompts::{discover_prompts, PromptOptions};
use crate::resources::settings::agent_dir_from_env;
use crate::resources::skills::{discover_skills, SkillOptions};
use crate::resources::Settings;
use crate::rpc::processor::{Exit, Processor};
use crate::rpc::{reader, writer};
use crate::session::manager::default_session_dir;
use crate::session::SessionManager;

/// How many parsed command lines may wait for the processor.
const INPUT_CAPACITY: usize = 256;
/// How long a closed stdout waits for a session-file append in progress before exiting.
const STDOUT_CLOSED_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A start-up failure: printed on stderr, exit code 1.
#[derive(Debug)]
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Everything built before the first command is read.
pub struct Startup {
    pub session: AgentSession,
    pub mode: Mode,
    pub extensions: crate::extensions::ExtensionPlan,
}

fn warn_all(diags: &[String]) {
    for d in diags {
        eprintln!("{d}");
    }
}

/// Settings, models, resources and the initial session, as `rpc-protocol.md` §9 orders them.
pub fn build(cli: &Cli) -> Result<Startup, StartupError> {
    let cwd = std::env::current_dir()
        .and_then(|p| p.canonicalize())
        .map_err(|e| {
            StartupError(format!(
                "pi-rpc: cannot determine the working directory: {e}"
            ))
        })?;
    if cli.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(StartupError(
            "Error: --name requires a non-empty value".to_string(),
        ));
    }
    let agent_dir = agent_dir_from_env();
    let mut diags = Vec::new();

    // Project trust decides whether `.pi/settings.json` and project resources are read. RPC
    // mode cannot ask, so only `--approve` or `defaultProjectTrust: "always"` trusts it.
    let global_only = Settings::load(&agent_dir, &cwd, false, &mut Vec::new());
    let trusted =
        !cli.no_approve() && (cli.approve() || global_only.default_project_trust() == "always");
    let settings = Settings::load(&agent_dir, &cwd, trusted, &mut diags);

    // Extensions are found now and started with RPC mode's threads; flags not claimed by them
    // are an error once they have loaded (pi's order).
    let found = crate::extensions::discover(&crate::extensions::DiscoveryOptions {
        cli_paths: &cli.extension,
        no_extensions: cli.no_extensions,
        project_trusted: trusted,
        cwd: &cwd,
        agent_dir: &agent_dir,
        settings_paths: settings.extension_paths(),
        packages: settings.package_sources(),
    })
    .map_err(|f| StartupError(f.stderr_lines().join("\n")))?;
    if found.is_empty() {
        if let Some(e) = cli.unknown_flags_error() {
            return Err(StartupError(e));
        }
    }
    let setting_ms = |key: &str| {
        settings
            .get(&["piRpc", key])
            .and_then(serde_json::Value::as_f64)
            .filter(|v| *v >= 0.0)
            .map(|v| std::time::Duration::from_millis(v as u64))
    };
    let extensions = crate::extensions::ExtensionPlan {
        units: found,
        opts: crate::extensions::host::HostOptions {
            cwd: cwd.clone(),
            agent_dir: agent_dir.clone(),
            startup_timeout: setting_ms("extensionStartupTimeoutMs")
                .unwrap_or(std::time::Duration::from_millis(10_000)),
            handler_timeout: setting_ms("extensionHandlerTimeoutMs").filter(|d| !d.is_zero()),
            builtin_llama: !cli.no_extensions,
            builtin_mcp: !cli.no_extensions && !cli.no_mcp,
            mode: match cli.effective_mode() {
                Mode::Rpc => "rpc",
                Mode::Json => "json",
                Mode::Text => "print",
            },
            node_host: crate::extensions::node_host::NodeHostSetting::read(
                settings.get_global(&["piRpc", "nodeExtensionHost"]),
                std::env::var("PI_RPC_NODE_EXTENSION_HOST").ok().as_deref(),
                &agent_dir,
            ),
            mcp: (!cli.no_extensions && !cli.no_mcp).then(|| crate::mcp::service::McpOptions {
                agent_dir: agent_dir.clone(),
                cwd: cwd.clone(),
                project_trusted: trusted,
                home: crate::util::home_dir(),
                provider_token: None,
                filter: if cli.no_tools {
                    crate::mcp::state::ToolFilter {
                        include: Some(Vec::new()),
                        exclude: Vec::new(),
                    }
                } else {
                    crate::mcp::state::ToolFilter::from_cli(
                        cli.tools.as_deref(),
                        cli.exclude_tools.as_deref(),
                    )
                },
            }),
        },
        unknown_flags: cli.unknown_flags.clone(),
    };
    let mut registry = ModelRegistry::load(&agent_dir, &mut diags);
    // An invalid --thinking was already a parse warning (pi's), and the flag is ignored.
    let cli_thinking = cli.thinking.as_deref().and_then(ThinkingLevel::parse);
    let cli_model = match (&cli.model, &cli.provider) {
        (Some(pattern), provider) => {
            let resolved = registry
                .resolve_cli_model(
                    provider.as_deref(),
                    pattern,
                    cli_thinking,
                    cli.api_key.is_some(),
                )
                .map_err(|e| StartupError(format!("Error: {e}")))?;
            if let Some(w) = resolved.warning {
                diags.push(format!("Warning: {w}"));
            }
            Some((resolved.model, resolved.thinking_level))
        }
        (None, Some(provider)) => {
            return Err(StartupError(format!(
                "Error: --provider requires --model (for example: --provider {provider} --model <pattern>)"
            )))
        }
        (None, None) => None,
    };
    let scope_patterns = cli.models.clone().or_else(|| settings.enabled_models());
    let scoped = scope_patterns
        .filter(|p| !p.is_empty())
        .map(|p| registry.resolve_scope_with_warnings(&p, &mut diags))
        .unwrap_or_default();
    if let Some(key) = &cli.api_key {
        // pi gives the key to the model the flags choose: --model, else the scope's pick.
        let provider = cli_model
            .as_ref()
            .map(|(m, _)| m.provider.clone())
            .or_else(|| {
                crate::agent::state::scoped_start(&scoped, &settings)
                    .map(|(m, _)| m.provider.clone())
            });
        match provider {
            Some(p) => registry.set_runtime_api_key(&p, key.clone()),
            None => {
                return Err(StartupError(
                    "Error: --api-key requires a model to be specified via --model, --provider/--model, or --models"
                        .to_string(),
                ))
            }
        }
    }

    let skills = discover_skills(
        &SkillOptions {
            agent_dir: &agent_dir,
            cwd: &cwd,
            project_trusted: trusted,
            settings_paths: &settings.skills_paths(),
            cli_paths: &cli.skill,
            enabled: !cli.no_skills,
        },
        &mut diags,
    );
    let prompts = discover_prompts(
        &PromptOptions {
            agent_dir: &agent_dir,
            cwd: &cwd,
            project_trusted: trusted,
            settings_paths: &settings.prompts_paths(),
            cli_paths: &cli.prompt_template,
            enabled: !cli.no_prompt_templates,
        },
        &mut diags,
    );

    let (tool_names, tool_warnings) = crate::tools::resolve_active(
        settings.default_tools(),
        cli.tools.clone(),
        cli.exclude_tools.clone(),
        cli.no_tools || cli.no_builtin_tools,
    );
    diags.extend(tool_warnings);
    let tools: Vec<Arc<dyn crate::tools::Tool>> = tool_names
        .iter()
        .filter_map(|n| crate::tools::builtin(n))
        .collect();
    let prompt = prompt_config(cli, &agent_dir, &cwd, trusted, &mut diags);
    let session_dir = session_dir(cli, &settings, &agent_dir, &cwd);
    let explicit_dir = explicit_session_dir(cli, &settings);
    let resumed = cli.continue_session
        || cli.resume
        || cli.session.is_some()
        || cli.session_id.is_some()
        || cli.fork.is_some();
    let startup_manager = if resumed {
        let startup = crate::session::lookup::startup_session(
            &crate::session::lookup::StartupOptions {
                no_session: cli.no_session,
                session: cli.session.as_deref(),
                continue_recent: cli.continue_session || cli.resume,
                session_id: cli.session_id.as_deref(),
                fork: cli.fork.as_deref(),
            },
            &cwd,
            &agent_dir,
            explicit_dir.as_deref(),
        )
        .map_err(|e| StartupError(format!("Error: {e}")))?;
        diags.extend(startup.warnings);
        Some(startup.manager)
    } else {
        None
    };
    let manager = SessionManager::create(&cwd, session_dir.as_deref(), None);

    let no_model = registry.available().is_empty() && cli_model.is_none();
    warn_all(&diags);
    if no_model {
        eprintln!(
            "Warning: No models available. {}",
            crate::agent::prompting::login_help()
        );
    }

    let mut session = AgentSession::new(
        cwd,
        agent_dir,
        settings,
        registry,
        manager,
        Resources {
            skills,
            prompts,
            tools,
            prompt,
        },
        StartupSelection {
            cli_model,
            cli_thinking,
            scoped,
        },
        session_dir,
    );
    if let Some(loaded) = startup_manager {
        session.replace_session(loaded);
    }
    if let Some(name) = &cli.name {
        if let Err(e) = session.set_session_name(name) {
            eprintln!("pi-rpc: --name: {e}");
        }
    }
    Ok(Startup {
        session,
        mode: cli.effective_mode(),
        extensions,
    })
}

/// A flag value that names an existing file is replaced by the file's content.
fn text_or_file(value: &str, cwd: &Path) -> String {
    let p = crate::util::resolve_path(cwd, value);
    if p.is_file() {
        if let Ok(text) = std::fs::read_to_string(&p) {
            return text;
        }
    }
    value.to_string()
}

fn read_optional(path: &Path, diags: &mut Vec<String>) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            diags.push(format!("Warning: cannot read {}: {e}", path.display()));
            None
        }
    }
}

/// Custom and appended prompts (flags, then the trusted project's `.pi/`, then the agent dir)
/// and the context files.
fn prompt_config(
    cli: &Cli,
    agent_dir: &Path,
    cwd: &Path,
    trusted: bool,
    diags: &mut Vec<String>,
) -> crate::agent::PromptConfig {
    let from_files = |name: &str, diags: &mut Vec<String>| -> Option<String> {
        if trusted {
            if let Some(t) = read_optional(&cwd.join(".pi").join(name), diags) {
                return Some(t);
            }
        }
        read_optional(&agent_dir.join(name), diags)
    };
    let custom = match &cli.system_prompt {
        Some(v) => Some(text_or_file(v, cwd)),
        None => from_files("SYSTEM.md", diags),
    };
    // Every --append-system-prompt, joined with a blank line as pi joins them.
    let append = if cli.append_system_prompt.is_empty() {
        from_files("APPEND_SYSTEM.md", diags)
    } else {
        let parts: Vec<String> = cli
            .append_system_prompt
            .iter()
            .map(|v| text_or_file(v, cwd))
            .collect();
        Some(parts.join("\n\n"))
    };
    let context_files = crate::resources::context_files::discover_context_files(
        agent_dir,
        cwd,
        !cli.no_context_files,
    );
    crate::agent::PromptConfig {
        custom,
        append,
        context_files,
        extra_sections: Vec::new(),
    }
}

/// `--session-dir` > `PI_CODING_AGENT_SESSION_DIR` > setting `sessionDir`, if any. As pi's
/// `normalizePath`, `~` is expanded but a relative directory stays relative (to the process
/// cwd, which never changes), so `sessionFile` reports it as given.
fn explicit_session_dir(cli: &Cli, settings: &Settings) -> Option<PathBuf> {
    cli.session_dir
        .clone()
        .or_else(|| std::env::var("PI_CODING_AGENT_SESSION_DIR").ok())
        .filter(|s| !s.is_empty())
        .or_else(|| settings.session_dir())
        .map(|d| crate::util::expand_tilde(&d))
}

/// The explicit session directory, else the per-cwd default; `None` with `--no-session`.
fn session_dir(cli: &Cli, settings: &Settings, agent_dir: &Path, cwd: &Path) -> Option<PathBuf> {
    if cli.no_session {
        return None;
    }
    Some(explicit_session_dir(cli, settings).unwrap_or_else(|| default_session_dir(agent_dir, cwd)))
}

/// Runs RPC mode until stdin ends; returns the exit code.
pub fn run_rpc(session: AgentSession, plan: crate::extensions::ExtensionPlan) -> i32 {
    let session = Arc::new(Mutex::new(session));
    // A fatal stdout write error (EPIPE: the host closed its end) exits with code 1
    // (rpc-protocol.md §1). Session entries are appended while the state lock is held, so
    // taking it first means no line is half-written when the process ends; the wait is bounded
    // in case a holder is itself blocked on the output channel that will no longer drain.
    let on_stdout_closed = {
        let session = Arc::clone(&session);
        move || {
            let _guard = session.try_lock_for(STDOUT_CLOSED_LOCK_WAIT);
            crate::exit::shutdown(1)
        }
    };
    let (out, writer_handle) = writer::spawn(std::io::stdout(), Box::new(on_stdout_closed));
    // A failed session write (a full disk, a read-only folder) is told to the client as an
    // error notify, once per spell of failures (issue 17 §5), besides the stderr line.
    {
        let out = out.clone();
        crate::session::on_write_failure(move |e| {
            crate::extensions::write_notify(
                &out,
                &format!("Could not save the session: {e}"),
                "error",
            );
        });
    }

    // SIGTERM / SIGHUP / SIGINT: the extensions get their `session_shutdown{quit}` (at most
    // 3 s) and are stopped, then the process ends (extensions.md §B3).
    let ext_slot: Arc<Mutex<Option<Arc<crate::extensions::Extensions>>>> = Arc::default();
    let signal_slot = Arc::clone(&ext_slot);
    if let Err(e) = crate::exec::signals::spawn(move |code| {
        let ext = signal_slot.lock().clone();
        if let Some(ext) = ext {
            ext.shutdown();
        }
        crate::exit::shutdown(code)
    }) {
        eprintln!("pi-rpc: cannot install signal handlers: {e}");
    }

    // Extensions: every process started and initialized in load order; a failure ends
    // start-up with pi's two stderr lines and nothing on stdout.
    let registry = Arc::clone(&session.lock().registry);
    let (ext, flag_values) = match plan.start(out.clone(), registry) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    crate::extensions::install_tools(&mut session.lock().resources.tools, ext.tools());
    *ext_slot.lock() = Some(Arc::clone(&ext));

    let (tx, rx) = bounded(INPUT_CAPACITY);
    let processor_input = tx.clone();
    ext.set_actions(Arc::new(crate::rpc::ext_actions::RpcActions {
        session: Arc::clone(&session),
        out: out.clone(),
        to_processor: Some(tx.clone()),
        ext: Arc::downgrade(&ext),
    }));

    let runtime = crate::agent::runtime::Runtime {
        state: Arc::clone(&session),
        out: out.clone(),
        ext: Arc::clone(&ext),
    };
    let (agent_tx, agent_handle) =
        match crate::agent::job::spawn(runtime, crate::agent::run::run_session) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("pi-rpc: cannot start the agent thread: {e}");
                return 1;
            }
        };

    let max_line_bytes = crate::protocol::framing::max_line_bytes_from_env().unwrap_or_else(|e| {
        eprintln!("Warning: {e}");
        crate::protocol::framing::DEFAULT_MAX_LINE_BYTES
    });
    // stdin is read from here on, so dialog answers reach `session_start` handlers (deviation
    // C1.1); commands wait in the channel until the processor starts below.
    let ui_ext = Arc::clone(&ext);
    let reader_handle = match reader::spawn(
        std::io::stdin(),
        tx,
        Box::new(move |r| ui_ext.ui_response(&r)),
        max_line_bytes,
    ) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("pi-rpc: cannot start the reader thread: {e}");
            return 1;
        }
    };
    ext.send_flags(&flag_values);
    ext.session_start("startup", None);

    let ext_jobs = if ext.is_empty() {
        None
    } else {
        match crate::rpc::ext_worker::spawn_ext_worker() {
            Ok(tx) => Some(tx),
            Err(e) => {
                eprintln!("pi-rpc: cannot start the extension worker thread: {e}");
                None
            }
        }
    };
    let processor = Processor {
        session: Arc::clone(&session),
        out: out.clone(),
        agent: agent_tx.clone(),
        ext: Arc::clone(&ext),
        ext_jobs,
        input: processor_input,
    };
    let exit = std::thread::Builder::new()
        .name("processor".into())
        .spawn(move || processor.run(rx))
        .map(|h| {
            // MCP servers connect now that the RPC threads run: forking them does not hold
            // up the first answers.
            ext.connect_mcp();
            h.join()
        });
    // A processor that panicked (a bug) or never started ends the process with code 1: the
    // host must not take the end for an orderly one.
    let code = match exit {
        Ok(Ok(Exit::Eof)) => 0,
        Ok(Err(_)) => {
            eprintln!("pi-rpc: the processor thread panicked");
            1
        }
        Err(e) => {
            eprintln!("pi-rpc: cannot start the processor thread: {e}");
            1
        }
    };
    // Orderly shutdown: nothing more is written (as pi), whatever runs is aborted, children
    // are killed, and the agent thread finishes (the session file gets the aborted messages).
    out.mute();
    let cancel = session.lock().life.run_cancel();
    cancel.cancel();
    crate::exec::groups::kill_all_except(&ext.process_groups());
    let _ = agent_tx.send(crate::agent::job::AgentJob::Shutdown);
    drop(agent_tx);
    let _ = agent_handle.join();
    // The extensions' `session_shutdown{quit}` handlers still run, and their UI is written
    // (pi's behaviour at stdin EOF); then their processes are stopped.
    out.unmute();
    ext.shutdown();
    // Everything written is on stdout once the flush returns. The writer thread is not joined:
    // extension threads that outlive their process's end may still hold output handles, and
    // the process exit closes stdout.
    out.flush();
    drop(out);
    drop(ext);
    drop(writer_handle);
    // Not joined either: after an extension's `ctx.shutdown` stdin is still open.
    drop(reader_handle);
    code
}

/// `1048576` → `1M`, `128000` → `128K`, `16384` → `16.4K` (one decimal, `.0` dropped).
fn format_token_count(n: u64) -> String {
    // pi's formatTokenCount: whole values bare ("1M", "256K"), others with one decimal
    // ("1.0M" for 1,048,576, "16.4K"), rounded as JavaScript's toFixed(1) does.
    let short = |v: f64, unit: &str| {
        if v.fract() == 0.0 {
            format!("{v}{unit}")
        } else {
            format!("{}{unit}", js_to_fixed_1(v))
        }
    };
    if n >= 1_000_000 {
        short(n as f64 / 1_000_000.0, "M")
    } else if n >= 1000 {
        short(n as f64 / 1000.0, "K")
    } else {
        n.to_string()
    }
}

/// JavaScript's `x.toFixed(1)` for a positive finite `x`: the decimal closest to `x`, a tie
/// (judged on `x`'s exact binary value) rounding up.
fn js_to_fixed_1(x: f64) -> String {
    // `x * 10` is exact enough here: token counts divided by 1e3/1e6 have few significant
    // digits, and a tie is only possible when the hundredths digit is exactly 5.
    let scaled = x * 10.0;
    let floor = scaled.floor();
    let tenths = if scaled - floor >= 0.5 {
        floor + 1.0
    } else {
        floor
    };
    format!("{:.1}", tenths / 10.0)
}

/// pi-tui's `fuzzyFilter` predicate for `--list-models <search>`: every token of the search
/// (split on whitespace and `/`) must occur in `"<provider> <id>"` as a subsequence, or, for a
/// token like `k3`/`3k`, with its letters and digits swapped.
fn list_models_match(search: &str, text: &str) -> bool {
    fn subsequence(query: &str, text: &str) -> bool {
        let mut chars = text.chars();
        query.chars().all(|q| chars.any(|c| c == q))
    }
    let text = text.to_lowercase();
    search
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|t| !t.is_empty())
        .all(|token| {
            let token = token.to_lowercase();
            if subsequence(&token, &text) {
                return true;
            }
            let letters: String = token.chars().take_while(char::is_ascii_lowercase).collect();
            let digits: String = token.chars().take_while(char::is_ascii_digit).collect();
            let swapped = if !letters.is_empty()
                && token[letters.len()..].chars().all(|c| c.is_ascii_digit())
                && token.len() > letters.len()
            {
                format!("{}{letters}", &token[letters.len()..])
            } else if !digits.is_empty()
                && token[digits.len()..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase())
                && token.len() > digits.len()
            {
                format!("{}{digits}", &token[digits.len()..])
            } else {
                return false;
            };
            subsequence(&swapped, &text)
        })
}

/// `--list-models [search]`: a table of the available models, sorted by provider and id.
fn list_models(search: &str) -> i32 {
    let agent_dir = agent_dir_from_env();
    let mut diags = Vec::new();
    let registry = ModelRegistry::load(&agent_dir, &mut diags);
    warn_all(&diags);
    let mut models = registry.available();
    if models.is_empty() {
        println!(
            "No models available. {}",
            crate::agent::prompting::login_help()
        );
        return 0;
    }
    models.retain(|m| list_models_match(search, &format!("{} {}", m.provider, m.id)));
    if models.is_empty() {
        println!("No models matching \"{search}\"");
        return 0;
    }
    models.sort_by(|a, b| {
        crate::llm::registry::locale_cmp(&a.provider, &b.provider)
            .then_with(|| crate::llm::registry::locale_cmp(&a.id, &b.id))
    });
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let mut rows = vec![[
        "provider".to_string(),
        "model".to_string(),
        "context".to_string(),
        "max-out".to_string(),
        "thinking".to_string(),
        "images".to_string(),
    ]];
    for m in &models {
        rows.push([
            m.provider.clone(),
            m.id.clone(),
            format_token_count(m.context_window),
            format_token_count(m.max_tokens),
            yes_no(m.reasoning),
            yes_no(m.supports_images()),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("{}", cells.join("  "));
    }
    0
}

/// The binary's entry: parse flags, build, run the mode.
pub fn main_with(cli: Cli) -> i32 {
    // Children (the bash tool, RPC bash) inherit these, as from pi. Set before any thread runs.
    std::env::set_var("PI_CODING_AGENT", "true");
    std::env::set_var("AI_AGENT", "pi");
    // Parse diagnostics first, all of them; any error ends the process (pi's `main`).
    for d in &cli.diagnostics {
        eprintln!("{d}");
    }
    if cli
        .diagnostics
        .iter()
        .any(|d| d.severity == crate::cli::Severity::Error)
    {
        return 1;
    }
    if cli.help {
        print!("{}", crate::cli::HELP);
        return 0;
    }
    if cli.version {
        println!("{}", version_line());
        return 0;
    }
    if let Some(file) = &cli.export {
        return export_file(file, cli.messages.first().map(String::as_str));
    }
    if let Some(search) = &cli.list_models {
        return list_models(search);
    }
    if cli.effective_mode() == Mode::Rpc && cli.messages.iter().any(|m| m.starts_with('@')) {
        eprintln!("Error: @file arguments are not supported in RPC mode");
        return 1;
    }
    let startup = match build(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    match startup.mode {
        Mode::Rpc => run_rpc(startup.session, startup.extensions),
        mode @ (Mode::Json | Mode::Text) => {
            crate::print::run_print(startup.session, mode, &cli.messages, startup.extensions)
        }
    }
}

/// What `--version` prints: pi-rpc's own version, then `(pi-rpc)`. Clients show it after the
/// name they know (pi-acp: `pi v0.1.0 (pi-rpc)`). It is deliberately not a bare semver: pi-acp
/// compares a bare one with pi's latest npm release and would tell the user to `npm i -g` pi
/// to "update" from 0.1.0 to 1.6.0, and a client gating features on pi's version would take
/// pi-rpc's for an old pi. Not semver, it is skipped by such checks.
pub fn version_line() -> String {
    format!("{} (pi-rpc)", env!("CARGO_PKG_VERSION"))
}

/// `--export <session file> [output]`: the session as HTML, then exit (pi's `exportFromFile`).
fn export_file(input: &str, output: Option<&str>) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Error: cannot determine the working directory: {e}");
            return 1;
        }
    };
    let path = crate::util::resolve_path(&cwd, input);
    if !path.exists() {
        eprintln!("Error: File not found: {}", path.display());
        return 1;
    }
    let result = SessionManager::open(&path, None, &cwd)
        .map_err(|e| e.to_string())
        .and_then(|sm| crate::export::export_html(&sm, output, &cwd).map_err(|e| e.to_string()));
    match result {
        Ok(written) => {
            println!("Exported to: {written}");
            0
        }
        Err(e) => {
            eprintln!("Error: {e}");
            1
        }
    }
}
