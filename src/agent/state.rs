//! `AgentSession`: everything commands act on, behind one `parking_lot::Mutex`.
//!
//! **The lock rule** (`ARCHITECTURE.md` has the whole of it): the lock is held briefly, and
//! never across network I/O, a child process, rendering or a wait. Copy what is needed,
//! release, then work: methods here return the events to emit and the caller writes them
//! after releasing the lock; credentials (a `!command` key runs a shell command) are resolved
//! by the caller from the shared registry. Three exceptions, each deliberate: appending a
//! session entry (and persisting a `set_*` setting) happens under the lock so the file's order
//! is the commands' order; a record whose order must be atomic with a state change
//! (`agent_settled`, a delivery's `queue_update`) is sent on the output channel under it; and
//! `tools::write::with_file_lock` serializes one file's mutations across their I/O.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::lifecycle::Lifecycle;
use super::queue::{QueueKind, QueuedMessage, Queues};
use crate::js::number::js_value;
use crate::llm::thinking::{clamp_level, supported_levels};
use crate::llm::{Model, ModelRegistry, Role, ThinkingLevel};
use crate::protocol::data::{
    to_value, ClearedQueues, CommandInfo, CommandsData, ContextUsage, CycleModelData,
    SessionStatsData, StateData, TokenTotals,
};
use crate::protocol::message::user_message;
use crate::protocol::{Event, ImageContent, StreamingBehavior};
use crate::resources::context_files::ContextFile;
use crate::resources::prompts::PromptTemplate;
use crate::resources::settings::QueueMode;
use crate::resources::skills::Skill;
use crate::resources::system_prompt::{self, Declared, PromptInputs, ToolDecl};
use crate::resources::Settings;
use crate::session::context::build_messages;
use crate::session::messages::ContextMessages;
use crate::session::SessionManager;
use crate::tools::Tool;
use crate::util::now_ms;

/// What the command line chose, re-applied to every new session (`rpc-protocol.md` §3.1).
#[derive(Clone, Debug, Default)]
pub struct StartupSelection {
    /// `--model` (and `--provider`) resolved, with the `:<level>` suffix if one was given.
    pub cli_model: Option<(Model, Option<ThinkingLevel>)>,
    /// `--thinking`.
    pub cli_thinking: Option<ThinkingLevel>,
    /// `--models` / `enabledModels`: the models `cycle_model` goes through.
    pub scoped: Vec<(Model, Option<ThinkingLevel>)>,
}

/// What the system prompt is built from, besides tools and skills.
#[derive(Clone, Debug, Default)]
pub struct PromptConfig {
    /// `--system-prompt` / `SYSTEM.md` (replaces the default prompt).
    pub custom: Option<String>,
    /// `--append-system-prompt` / `APPEND_SYSTEM.md`.
    pub append: Option<String>,
    pub context_files: Vec<ContextFile>,
    /// Sections extensions add after `cwd` (`mcp_servers`, `mcp.md` §6.5): name and rendered text.
    pub extra_sections: Vec<(String, String)>,
}

/// What a tool call needs from the session, copied out so tools run without the lock.
#[derive(Clone, Debug)]
pub struct ToolContextParts {
    pub cwd: PathBuf,
    pub shell_path: Option<String>,
    pub shell_command_prefix: Option<String>,
    pub env: Vec<(String, String)>,
    pub model_supports_images: bool,
    pub model_id: String,
    pub temp_dir: PathBuf,
    /// `images.autoResize` and the current model's resize limits (for `read` of images).
    pub images: crate::image::ImageOptions,
}

/// The scoped model (with its pattern's thinking level) pi starts with under a `--models` /
/// `enabledModels` scope: the saved default (`defaultProvider` + `defaultModel`) when it is in
/// scope, else the first scoped model. `None` without a scope.
pub fn scoped_start<'a>(
    scoped: &'a [(Model, Option<ThinkingLevel>)],
    settings: &Settings,
) -> Option<&'a (Model, Option<ThinkingLevel>)> {
    let saved = settings.default_provider().zip(settings.default_model());
    saved
        .and_then(|(provider, id)| {
            scoped
                .iter()
                .find(|(m, _)| m.provider == provider && m.id == id)
        })
        .or_else(|| scoped.first())
}

/// What the system prompt, the tool list and prompt expansion are built from.
pub struct Resources {
    pub skills: Vec<Skill>,
    pub prompts: Vec<PromptTemplate>,
    /// The active tools, in declaration order.
    pub tools: Vec<Arc<dyn Tool>>,
    pub prompt: PromptConfig,
}

/// The automatic behaviours `set_auto_compaction` / `set_auto_retry` switch.
#[derive(Clone, Copy, Debug)]
pub struct AutoFlags {
    pub compaction: bool,
    pub retry: bool,
}

/// Which automatic behaviour a `set_auto_*` command switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoSetting {
    Compaction,
    Retry,
}

/// How a `prompt` begins (`agent-loop.md` §2).
#[derive(Debug)]
pub enum PromptStart {
    /// The run is marked active; hand this user message to the agent thread.
    Run(Value),
    /// A run is active and the prompt named a `streamingBehavior`: queued, emit this
    /// `queue_update`.
    Queued(Event),
    /// Refused with this error (the run was not marked active).
    Rejected(String),
}

/// The runtime state of one session. It lives behind one `parking_lot::Mutex` (see the module
/// doc for the lock rule); the run life cycle is [`Lifecycle`]'s, changed only through its
/// methods.
pub struct AgentSession {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub settings: Settings,
    /// Never changed after start-up; shared so credentials (a `!command` API key runs a shell
    /// command) are resolved without the state lock.
    pub registry: Arc<ModelRegistry>,
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    /// What the command line chose (re-applied to every new session).
    pub startup: StartupSelection,
    pub session: SessionManager,
    /// Where new persisted sessions go (`None` with `--no-session`).
    pub session_dir: Option<PathBuf>,
    /// The context messages (`get_messages`).
    pub messages: ContextMessages,
    /// The steering and follow-up queues with their delivery modes.
    pub queues: Queues,
    pub auto: AutoFlags,
    pub resources: Resources,
    /// Runs, compactions, aborts and RPC bash commands.
    pub life: Lifecycle,
}

/// A failed command; the text is the response's `error`.
pub type CommandResult<T> = Result<T, String>;

impl AgentSession {
    /// Builds the runtime around a fresh session and makes the startup model/thinking selection
    /// (recorded as `model_change` + `thinking_level_change` entries, no events).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cwd: PathBuf,
        agent_dir: PathBuf,
        settings: Settings,
        registry: ModelRegistry,
        session: SessionManager,
        resources: Resources,
        startup: StartupSelection,
        session_dir: Option<PathBuf>,
    ) -> AgentSession {
        let queues = Queues::new(settings.steering_mode(), settings.follow_up_mode());
        let auto = AutoFlags {
            compaction: settings.compaction_enabled(),
            retry: settings.retry().enabled,
        };
        let mut s = AgentSession {
            cwd,
            agent_dir,
            settings,
            registry: Arc::new(registry),
            model: Model::placeholder(),
            thinking_level: ThinkingLevel::Off,
            startup,
            session,
            session_dir,
            messages: ContextMessages::new(),
            queues,
            auto,
            resources,
            life: Lifecycle::default(),
        };
        s.apply_startup_selection();
        s
    }

    /// Chooses the model and thinking level of a new session as at startup and records them.
    pub fn apply_startup_selection(&mut self) {
        let (model, suffix_level) = self.initial_model();
        let level = match (&model, self.startup.cli_thinking.or(suffix_level)) {
            (None, _) => ThinkingLevel::Off,
            (Some(m), Some(l)) => clamp_level(m, l),
            (Some(m), None) => clamp_level(m, self.settings_level_for(m)),
        };
        match model {
            Some(m) => {
                if let Err(e) = self.session.append_model_change(&m.provider, &m.id) {
                    eprintln!("pi-rpc: {e}");
                }
                self.model = m;
            }
            None => self.model = Model::placeholder(),
        }
        self.thinking_level = level;
        if let Err(e) = self.session.append_thinking_level_change(level.as_str()) {
            eprintln!("pi-rpc: {e}");
        }
    }

    /// pi's order (`main.ts` `buildSessionOptions`, then `findInitialModel`): the CLI model;
    /// else, with a `--models` / `enabledModels` scope, the saved default when it is in scope,
    /// else the first scoped model; else the saved default (`defaultProvider` *and*
    /// `defaultModel`) when its provider has credentials; else the first available model that
    /// is its provider's preferred default; else the first available model.
    fn initial_model(&self) -> (Option<Model>, Option<ThinkingLevel>) {
        if let Some((m, l)) = &self.startup.cli_model {
            return (Some(m.clone()), *l);
        }
        if let Some((m, l)) = scoped_start(&self.startup.scoped, &self.settings) {
            return (Some(m.clone()), *l);
        }
        let saved = match (
            self.settings.default_provider(),
            self.settings.default_model(),
        ) {
            (Some(provider), Some(id)) => self.registry.find(&provider, &id).cloned(),
            _ => None,
        };
        if let Some(m) = saved.filter(|m| self.registry.has_credentials(&m.provider)) {
            return (Some(m), None);
        }
        (self.registry.default_model(), None)
    }

    /// Per-model setting, else `defaultThinkingLevel`, else `medium`. A configured value that is
    /// no thinking level clamps as pi's `clampThinkingLevel` does: to the model's first level.
    fn settings_level_for(&self, model: &Model) -> ThinkingLevel {
        let configured = self
            .settings
            .model_thinking_levels()
            .get(&model.key())
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| self.settings.default_thinking_level());
        match configured {
            None => ThinkingLevel::Medium,
            Some(raw) => ThinkingLevel::parse(&raw).unwrap_or_else(|| {
                crate::llm::thinking::supported_levels(model)
                    .first()
                    .copied()
                    .unwrap_or(ThinkingLevel::Off)
            }),
        }
    }

    fn configured_level_for(&self, model: &Model) -> Option<ThinkingLevel> {
        self.settings
            .model_thinking_levels()
            .get(&model.key())
            .and_then(Value::as_str)
            .and_then(ThinkingLevel::parse)
            .or_else(|| {
                self.settings
                    .default_thinking_level()
                    .as_deref()
                    .and_then(ThinkingLevel::parse)
            })
    }

    /// The declarations of the active tools, in order.
    pub fn active_tool_decls(&self) -> Vec<ToolDecl> {
        self.resources
            .tools
            .iter()
            .map(|t| ToolDecl {
                name: t.name().to_string(),
                description: t.description(),
                parameters: t.parameters(),
                constrained_sampling: matches!(t.name(), "read" | "bash" | "edit" | "write"),
                snippet: t.prompt_snippet().map(str::to_string),
                guidelines: t.guidelines().into_iter().map(str::to_string).collect(),
            })
            .collect()
    }

    /// The system prompt as the model would get it now (`before_agent_start.systemPrompt`).
    pub fn rendered_system_prompt(&self) -> String {
        system_prompt::render(&self.prompt_sections(&self.active_tool_decls()))
    }

    /// The system prompt's sections for these tool declarations.
    fn prompt_sections(&self, decls: &[ToolDecl]) -> Vec<(String, String)> {
        let mut sections = system_prompt::build_sections(&PromptInputs {
            custom_prompt: self.resources.prompt.custom.as_deref(),
            append: self.resources.prompt.append.as_deref(),
            tools: decls,
            context_files: &self.resources.prompt.context_files,
            skills: &self.resources.skills,
            cwd: &self.cwd,
        });
        sections.extend(self.resources.prompt.extra_sections.iter().cloned());
        sections
    }

    /// The system message the next prompt needs: a full one when the branch declares nothing
    /// yet, a patch when the prompt or tools changed, `None` otherwise.
    pub fn system_message_if_needed(&self) -> Option<Value> {
        let decls = self.active_tool_decls();
        let sections = self.prompt_sections(&decls);
        let declared = Declared::replay(&self.messages.system_messages());
        system_prompt::system_message_for(&declared, &sections, &decls, now_ms())
    }

    /// The parts of a tool's context that come from the session.
    pub fn tool_context_parts(&self) -> ToolContextParts {
        let mut env = vec![
            (
                "PI_SESSION_ID".to_string(),
                self.session.session_id().to_string(),
            ),
            ("PI_PROVIDER".to_string(), self.model.provider.clone()),
            ("PI_MODEL".to_string(), self.model.id.clone()),
            (
                "PI_REASONING_LEVEL".to_string(),
                self.thinking_level.as_str().to_string(),
            ),
        ];
        if let Some(f) = self.session.session_file() {
            env.push((
                "PI_SESSION_FILE".to_string(),
                f.to_string_lossy().into_owned(),
            ));
        }
        ToolContextParts {
            cwd: self.cwd.clone(),
            shell_path: self.settings.shell_path(),
            shell_command_prefix: self.settings.shell_command_prefix(),
            env,
            model_supports_images: self.model.supports_images(),
            model_id: self.model.id.clone(),
            temp_dir: std::env::temp_dir(),
            images: self.image_options(),
        }
    }

    /// Records a message now (idle) or after the active run (`agent-loop.md` §4, last point).
    pub fn record_or_defer(&mut self, message: Value) {
        if let Err(message) = self.life.defer(message) {
            self.record(message);
        }
    }

    /// Appends a message to the session and to the context.
    pub fn record(&mut self, message: Value) {
        self.messages.push(message.clone());
        if let Err(e) = self.session.append_message(message) {
            eprintln!("pi-rpc: {e}");
        }
    }

    /// Appends the messages deferred during a run.
    pub fn flush_deferred(&mut self) {
        for m in self.life.take_deferred() {
            self.record(m);
        }
    }

    /// Makes `manager` the current session (`new_session`, `switch_session`, `fork`, `clone`,
    /// and the startup flags): the model and thinking level are chosen as pi does (the CLI
    /// selection wins; else what the branch recorded; else the defaults), queues start empty.
    pub fn replace_session(&mut self, manager: SessionManager) {
        let messages = manager.context_messages();
        self.install_session(manager, messages);
    }

    /// [`Self::replace_session`] with the context's `messages` already built from `manager`'s
    /// branch (`session_ops` builds them without holding the state lock: a large session takes a
    /// while). Returns the previous session and messages, for the caller to drop after it has
    /// released the lock.
    pub fn install_session(
        &mut self,
        manager: SessionManager,
        messages: ContextMessages,
    ) -> (SessionManager, ContextMessages) {
        let old_session = std::mem::replace(&mut self.session, manager);
        let old_messages = std::mem::replace(&mut self.messages, messages);
        // pi disposes the replaced session: its per-session provider state goes with it.
        crate::llm::cleanup_session_resources(old_session.session_id());
        // The session's recorded working directory becomes the agent's (as in pi, tools, RPC
        // bash and the system prompt's cwd follow a loaded session).
        if !self.session.cwd().is_empty() {
            self.cwd = PathBuf::from(self.session.cwd());
        }
        self.queues.clear();
        self.life.clear_deferred();
        // (A thinking_level_change appended here adds no message: `messages` stays right.)
        if self.session.entries().is_empty() {
            self.apply_startup_selection();
        } else {
            self.apply_loaded_selection();
        }
        (old_session, old_messages)
    }

    /// Model and thinking level for a loaded (non-empty) session.
    fn apply_loaded_selection(&mut self) {
        let ctx = self.session.selection();
        let model = match &self.startup.cli_model {
            Some((m, _)) => Some(m.clone()),
            None => ctx
                .model
                .as_ref()
                .and_then(|(p, id)| self.registry.find_available(p, id)),
        }
        .or_else(|| self.initial_model().0);
        self.model = model.unwrap_or_else(Model::placeholder);
        let recorded = ctx.thinking_level.as_deref().and_then(ThinkingLevel::parse);
        let wanted = self.startup.cli_thinking.or(recorded).unwrap_or_else(|| {
            self.configured_level_for(&self.model)
                .unwrap_or(ThinkingLevel::Medium)
        });
        let level = clamp_level(&self.model, wanted);
        self.thinking_level = level;
        if recorded.is_none() {
            if let Err(e) = self.session.append_thinking_level_change(level.as_str()) {
                eprintln!("pi-rpc: {e}");
            }
        }
    }

    /// Rebuilds `messages` from the active branch.
    pub fn rebuild_messages(&mut self) {
        let branch = self.session.branch();
        self.messages = build_messages(&branch);
    }

    /// Sets the thinking level (clamped); returns the events to emit.
    pub fn set_thinking_level(&mut self, requested: ThinkingLevel) -> Vec<Event> {
        let level = clamp_level(&self.model, requested);
        self.change_thinking_level(level)
    }

    fn change_thinking_level(&mut self, level: ThinkingLevel) -> Vec<Event> {
        if level == self.thinking_level {
            return Vec::new();
        }
        self.thinking_level = level;
        if let Err(e) = self.session.append_thinking_level_change(level.as_str()) {
            eprintln!("pi-rpc: {e}");
        }
        vec![Event::ThinkingLevelChanged { level }]
    }

    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        supported_levels(&self.model)
    }

    /// `cycle_thinking_level`: `None` on a non-reasoning model.
    pub fn cycle_thinking_level(&mut self) -> (Option<ThinkingLevel>, Vec<Event>) {
        if !self.model.reasoning {
            return (None, Vec::new());
        }
        let levels = self.available_thinking_levels();
        let next = match levels.iter().position(|l| *l == self.thinking_level) {
            Some(i) => levels[(i + 1) % levels.len()],
            None => levels.first().copied().unwrap_or(ThinkingLevel::Off),
        };
        let events = self.change_thinking_level(next);
        (Some(next), events)
    }

    /// Switches to `model` (appending `model_change`) and applies the thinking level for it.
    fn switch_model(&mut self, model: Model, scoped_level: Option<ThinkingLevel>) -> Vec<Event> {
        if let Err(e) = self.session.append_model_change(&model.provider, &model.id) {
            eprintln!("pi-rpc: {e}");
        }
        let wanted = scoped_level
            .or_else(|| self.configured_level_for(&model))
            .unwrap_or(self.thinking_level);
        let level = clamp_level(&model, wanted);
        self.model = model;
        self.change_thinking_level(level)
    }

    /// `set_model`: exact provider and id among the available models.
    pub fn set_model(&mut self, provider: &str, id: &str) -> CommandResult<(Model, Vec<Event>)> {
        let Some(model) = self.registry.find_available(provider, id) else {
            return Err(format!("Model not found: {provider}/{id}"));
        };
        let events = self.switch_model(model.clone(), None);
        Ok((model, events))
    }

    /// `cycle_model`: next scoped (or available) model; `None` when there is nothing to cycle to.
    pub fn cycle_model(&mut self) -> (Option<Value>, Vec<Event>) {
        let scoped = !self.startup.scoped.is_empty();
        let candidates: Vec<(Model, Option<ThinkingLevel>)> = if scoped {
            self.startup.scoped.clone()
        } else {
            self.registry
                .available()
                .into_iter()
                .map(|m| (m, None))
                .collect()
        };
        let current = candidates
            .iter()
            .position(|(m, _)| m.provider == self.model.provider && m.id == self.model.id);
        if candidates.is_empty() || (candidates.len() == 1 && current.is_some()) {
            return (None, Vec::new());
        }
        let next = match current {
            Some(i) => (i + 1) % candidates.len(),
            None => 0,
        };
        let (model, level) = candidates[next].clone();
        let events = self.switch_model(model.clone(), level);
        let data = to_value(&CycleModelData {
            model: &model,
            thinking_level: self.thinking_level,
            is_scoped: scoped,
        });
        (Some(data), events)
    }

    /// `set_steering_mode` / `set_follow_up_mode`: applied at once and persisted globally.
    pub fn set_queue_mode(&mut self, queue: QueueKind, mode: QueueMode) -> CommandResult<()> {
        let key = match queue {
            QueueKind::Steering => "steeringMode",
            QueueKind::FollowUp => "followUpMode",
        };
        if let Err(e) = self.settings.set_global(&[key], Value::from(mode.as_str())) {
            // Applied for this process all the same, as pi does (its change stays in memory).
            eprintln!("pi-rpc: {key} not saved: {e}");
        }
        self.queues.set_mode(queue, mode);
        Ok(())
    }

    /// `set_auto_compaction` / `set_auto_retry`: applied and persisted globally.
    pub fn set_auto_flag(&mut self, which: AutoSetting, enabled: bool) -> CommandResult<()> {
        let section = match which {
            AutoSetting::Compaction => "compaction",
            AutoSetting::Retry => "retry",
        };
        if let Err(e) = self
            .settings
            .set_global(&[section, "enabled"], Value::Bool(enabled))
        {
            // Applied for this process all the same, as pi does (its change stays in memory).
            eprintln!("pi-rpc: {section}.enabled not saved: {e}");
        }
        // The merged value, as pi reads it: a trusted project's setting still wins.
        match which {
            AutoSetting::Compaction => self.auto.compaction = self.settings.compaction_enabled(),
            AutoSetting::Retry => self.auto.retry = self.settings.retry().enabled,
        }
        Ok(())
    }

    /// Queues a steering or follow-up message; returns the `queue_update` to emit.
    pub fn enqueue(&mut self, queue: QueueKind, text: String, images: Vec<ImageContent>) -> Event {
        self.queues.push(
            queue,
            QueuedMessage {
                text,
                images,
                timestamp: now_ms(),
            },
        );
        self.queue_update()
    }

    /// `prompt`'s checks, in pi's order (`agent-loop.md` §2), for RPC and print mode alike: no
    /// prompt while a compaction runs; during a run it is queued when it says how, refused
    /// otherwise; then a model and its credentials are needed. Skill commands and prompt
    /// templates are expanded first. On `Run` the run is marked active.
    pub fn begin_prompt(
        &mut self,
        message: &str,
        images: Vec<ImageContent>,
        behavior: Option<StreamingBehavior>,
    ) -> PromptStart {
        self.begin_prompt_with(message, images, behavior, true)
    }

    /// [`AgentSession::begin_prompt`]; `expand: false` skips skill and template expansion (an
    /// extension's `sendUserMessage`).
    pub fn begin_prompt_with(
        &mut self,
        message: &str,
        images: Vec<ImageContent>,
        behavior: Option<StreamingBehavior>,
        expand: bool,
    ) -> PromptStart {
        if self.life.is_compacting() {
            return PromptStart::Rejected("Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.".into());
        }
        let text = if expand {
            super::prompting::expand_text(self, message)
        } else {
            message.to_string()
        };
        if self.life.is_streaming() {
            return match behavior {
                None => PromptStart::Rejected("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()),
                Some(StreamingBehavior::Steer) => {
                    PromptStart::Queued(self.enqueue(QueueKind::Steering, text, images))
                }
                Some(StreamingBehavior::FollowUp) => {
                    PromptStart::Queued(self.enqueue(QueueKind::FollowUp, text, images))
                }
            };
        }
        if self.model.is_placeholder() {
            return PromptStart::Rejected(format!(
                "No API key found for the selected model.\n\n{}",
                super::prompting::login_help()
            ));
        }
        if !self.registry.has_credentials(&self.model.provider) {
            return PromptStart::Rejected(format!(
                "No API key found for {}.\n\n{}",
                self.model.provider,
                super::prompting::login_help()
            ));
        }
        self.life.start_run();
        PromptStart::Run(user_message(&text, &images, now_ms()))
    }

    /// How prompt and queued images are normalized now: settings `images.autoResize` and the
    /// current model's `inputLimits.images.resize` (pi's `_normalizePromptImages`).
    pub fn image_options(&self) -> crate::image::ImageOptions {
        crate::image::ImageOptions {
            auto_resize: self.settings.images_auto_resize(),
            resize: crate::image::ResizeOptions::from_input_limits(
                self.model.input_limits.as_ref(),
            ),
        }
    }

    pub fn queue_update(&self) -> Event {
        Event::QueueUpdate {
            steering: self.queues.steering_texts(),
            follow_up: self.queues.follow_up_texts(),
        }
    }

    /// `clear_queue`: empties both queues; returns the removed texts and the `queue_update`.
    pub fn clear_queues(&mut self) -> (Value, Event) {
        let data = to_value(&ClearedQueues {
            steering: self.queues.steering_texts(),
            follow_up: self.queues.follow_up_texts(),
        });
        self.queues.clear();
        (data, self.queue_update())
    }

    /// `set_session_name`: trimmed, line breaks become spaces, empty rejected.
    pub fn set_session_name(&mut self, name: &str) -> CommandResult<Event> {
        if name.trim().is_empty() {
            return Err("Session name cannot be empty".to_string());
        }
        let entry = self
            .session
            .append_session_info(name)
            .map_err(|e| e.to_string())?;
        Ok(Event::SessionInfoChanged {
            name: entry.get_str("name"),
        })
    }

    /// `get_state` data.
    pub fn state_json(&self) -> Value {
        to_value(&StateData {
            model: &self.model,
            thinking_level: self.thinking_level,
            is_streaming: self.life.is_streaming(),
            is_compacting: self.life.is_compacting(),
            steering_mode: self.queues.steering_mode,
            follow_up_mode: self.queues.follow_up_mode,
            session_file: self.session_file_text(),
            session_id: self.session.session_id(),
            session_name: self.session.session_name(),
            auto_compaction_enabled: self.auto.compaction,
            message_count: self.messages.len(),
            pending_message_count: self.queues.len(),
        })
    }

    fn session_file_text(&self) -> Option<String> {
        self.session
            .session_file()
            .map(|f| f.to_string_lossy().into_owned())
    }

    /// `get_session_stats` data (`rpc-protocol.md` §3.9): totals over every entry of the file,
    /// kept up to date by the session manager as entries are appended.
    pub fn session_stats(&self) -> Value {
        let t = self.session.totals();
        to_value(&SessionStatsData {
            session_file: self.session_file_text(),
            session_id: self.session.session_id(),
            user_messages: t.user_messages,
            assistant_messages: t.assistant_messages,
            tool_calls: t.tool_calls,
            tool_results: t.tool_results,
            total_messages: t.total_messages,
            tokens: TokenTotals {
                input: t.input,
                output: t.output,
                cache_read: t.cache_read,
                cache_write: t.cache_write,
                total: t.total_tokens(),
            },
            cost: js_value(t.cost),
            context_usage: self.context_usage(),
        })
    }

    /// `{tokens, contextWindow, percent}`; absent without a model or a context window. Tokens
    /// and percent are `null` after a compaction until the next reply reports usage.
    pub(crate) fn context_usage(&self) -> Option<ContextUsage> {
        let window = self.model.context_window;
        if self.model.is_placeholder() || window == 0 {
            return None;
        }
        let tokens =
            crate::compaction::tokens::context_usage_tokens_quick(&self.session, &self.messages)
                .map(Some)
                .unwrap_or_else(|| {
                    let branch = self.session.branch();
                    crate::compaction::tokens::context_usage_tokens(
                        &branch,
                        &self.messages.to_vec(),
                    )
                });
        Some(ContextUsage {
            tokens,
            context_window: window,
            percent: tokens.map_or(Value::Null, |t| js_value(t as f64 / window as f64 * 100.0)),
        })
    }

    /// `get_last_assistant_text`.
    pub fn last_assistant_text(&self) -> Option<String> {
        for msg in self.messages.iter().rev() {
            if Role::of(&msg) != Some(Role::Assistant) {
                continue;
            }
            let texts: Vec<&str> = msg
                .get("content")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let stopped = msg.get("stopReason").and_then(Value::as_str) == Some("stop");
            if stopped || texts.iter().any(|t| !t.trim().is_empty()) {
                let joined = texts.concat();
                let trimmed = joined.trim();
                return (!trimmed.is_empty()).then(|| trimmed.to_string());
            }
        }
        None
    }

    /// `get_commands` data: prompt templates, then skills.
    pub fn commands_json(&self) -> Value {
        let prompts = self.resources.prompts.iter().map(|t| CommandInfo {
            name: t.name.clone(),
            description: t.description.as_deref().unwrap_or_default(),
            source: "prompt",
            source_info: &t.source_info,
            path: t.file_path.to_string_lossy().into_owned(),
            location: t.source_info.legacy_location(),
        });
        let skills = self.resources.skills.iter().map(|s| CommandInfo {
            name: format!("skill:{}", s.name),
            description: &s.description,
            source: "skill",
            source_info: &s.source_info,
            path: s.file_path.to_string_lossy().into_owned(),
            location: s.source_info.legacy_location(),
        });
        to_value(&CommandsData {
            commands: prompts.chain(skills).collect(),
        })
    }
}
