//! The processor thread: one response per command line, in order for the commands it answers
//! itself. It never blocks on long work: runs and bash commands are handed to their threads,
//! which answer when their work is done.

use std::sync::Arc;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::ext_worker::{model_select_payloads, ExtJob};
use super::reader::Input;
use crate::agent::job::AgentJob;
use crate::agent::lifecycle::AbortReply;
use crate::agent::queue::QueueKind;
use crate::agent::runtime::JobReply;
use crate::agent::runtime::PromptReply;
use crate::agent::session_ops::SessionOp;
use crate::agent::state::{AutoSetting, PromptStart};
use crate::agent::AgentSession;
use crate::cancel::CancelToken;
use crate::output::Output;
use crate::protocol::command::{Command, Incoming};
use crate::protocol::message::BashExecutionMessage;
use crate::protocol::{Event, Response};

/// What ended the processor loop.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// stdin ended.
    Eof,
}

/// Shared handles the processor works with.
pub struct Processor {
    pub session: Arc<Mutex<AgentSession>>,
    pub out: Output,
    /// Where session-level runs are started.
    pub agent: crossbeam_channel::Sender<AgentJob>,
    /// Extension commands run here (asynchronously: their response comes from the extension's
    /// reader thread).
    pub ext: Arc<crate::extensions::Extensions>,
    /// Where work that waits for extension handlers goes (the `ext-worker` thread), so the
    /// processor never waits for an extension; `None` without extensions.
    pub ext_jobs: Option<crossbeam_channel::Sender<ExtJob>>,
    /// The processor's own input, for commands that continue after their handlers.
    pub input: crossbeam_channel::Sender<Input>,
}

/// The RPC `bash` response data: `{output, exitCode?, cancelled, truncated, fullOutputPath?}`
/// in that key order (`protocol::data::BashData`).
fn bash_data(r: &crate::exec::bash::BashResult) -> Value {
    crate::protocol::data::to_value(&crate::protocol::data::BashData {
        output: &r.output,
        exit_code: r.exit_code,
        cancelled: r.cancelled,
        truncated: r.truncated,
        full_output_path: r
            .full_output_path
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    })
}

/// A `user_bash` handler's `{result}` (validated by the dispatch) as the run it stands for.
fn bash_result_of(data: &Value) -> crate::exec::bash::BashResult {
    let text = |k: &str| data.get(k).and_then(Value::as_str);
    crate::exec::bash::BashResult {
        output: text("output").unwrap_or_default().to_string(),
        exit_code: data
            .get("exitCode")
            .and_then(Value::as_i64)
            .map(|c| c as i32),
        cancelled: data["cancelled"].as_bool().unwrap_or(false),
        truncated: data["truncated"].as_bool().unwrap_or(false),
        full_output_path: text("fullOutputPath").map(std::path::PathBuf::from),
    }
}

impl Processor {
    /// Runs until stdin ends.
    pub fn run(&self, input: Receiver<Input>) -> Exit {
        for item in input {
            match item {
                Input::Eof => return Exit::Eof,
                Input::Malformed { id, error } => {
                    self.out.response(&Response::parse_error(id, error))
                }
                Input::Line(incoming) => self.handle(incoming),
                Input::Continued { id, command } => self.dispatch_staged(id, command, true),
                Input::ExtensionMessage { message } => self.extension_message(message),
                Input::ExtensionEvents(payloads) => {
                    let ext = Arc::clone(&self.ext);
                    self.on_worker(
                        &None,
                        "extension",
                        Box::new(move || {
                            payloads.iter().for_each(|p| {
                                ext.emit(p, None);
                            })
                        }),
                    );
                }
                Input::ExtensionSession { op, reply } => {
                    self.replace_session(JobReply::Extension(reply), op)
                }
                Input::ExtensionCompact {
                    custom_instructions,
                    reply,
                } => self.compact(JobReply::Extension(reply), custom_instructions),
                Input::ExtensionPrompt {
                    text,
                    images,
                    behavior,
                    input_done,
                } => self.extension_prompt(text, images, behavior, input_done),
            }
        }
        Exit::Eof
    }

    fn handle(&self, incoming: Incoming) {
        match incoming {
            Incoming::Command { id, command } => self.dispatch(id, command),
            Incoming::Invalid { id, command, error } => {
                self.out
                    .response(&Response::err(id, command, error.to_string()));
            }
            Incoming::Unknown { id, type_name } => {
                let error = format!("Unknown command: {type_name}");
                self.out.response(&Response::err(id, &type_name, error));
            }
            Incoming::NotACommand { id, error } => {
                self.out.response(&Response::parse_error(id, error));
            }
            // The reader resolves these itself; one that reaches here has no pending dialog.
            Incoming::UiResponse(_) => {}
        }
    }

    fn emit_all(&self, events: Vec<Event>) {
        for e in &events {
            self.out.event(e);
        }
    }

    fn dispatch(&self, id: Option<Value>, command: Command) {
        self.dispatch_staged(id, command, false)
    }

    pub(super) fn dispatch_staged(&self, id: Option<Value>, command: Command, input_done: bool) {
        let name = command.name();
        // Extension commands come first, even while streaming (§A7.3): a prompt runs one (the
        // extension's reader thread writes the `handled` response when the handler is done);
        // a steer or follow-up of one is refused.
        match &command {
            Command::Prompt { message, .. } if !input_done => {
                if let Some((cmd, args)) = self.ext.find_command(message) {
                    return self.ext.run_command(cmd, args, id);
                }
            }
            Command::Steer { message, .. } | Command::FollowUp { message, .. } => {
                if let Some(error) = self.ext.queued_command_error(message) {
                    return self.out.response(&Response::err(id, name, error));
                }
            }
            _ => {}
        }
        let reply = |result: Result<Option<Value>, String>| match result {
            Ok(data) => self.out.response(&Response::ok(id.clone(), name, data)),
            Err(e) => self.out.response(&Response::err(id.clone(), name, e)),
        };
        match command {
            Command::GetState => {
                let data = self.session.lock().state_json();
                reply(Ok(Some(data)));
            }
            Command::GetMessages => {
                // Serialized straight from the state (a deep copy of a long context would cost
                // several times its text and far more time).
                let line = {
                    let s = self.session.lock();
                    Response::ok_line(id, name, s.messages.json_len_hint(), |out| {
                        out.extend_from_slice(b"{\"messages\":");
                        s.messages.write_json(out);
                        out.push(b'}');
                    })
                };
                self.out.line(line);
            }
            Command::GetAvailableModels => {
                let models = self.session.lock().registry.available();
                reply(Ok(Some(json!({ "models": models }))));
            }
            Command::SetModel { provider, model_id } => {
                let (previous, previous_level) = {
                    let s = self.session.lock();
                    (s.model.clone(), s.thinking_level)
                };
                let result = self.session.lock().set_model(&provider, &model_id);
                match result {
                    Ok((model, events)) => {
                        let payloads = model_select_payloads(
                            &events,
                            &model,
                            &previous,
                            previous_level,
                            "set",
                        );
                        self.emit_all(events);
                        self.after_events(id, name, payloads, Some(json!(model)));
                    }
                    Err(e) => reply(Err(e)),
                }
            }
            Command::CycleModel => {
                let (previous, previous_level) = {
                    let s = self.session.lock();
                    (s.model.clone(), s.thinking_level)
                };
                let (data, events) = self.session.lock().cycle_model();
                let model = self.session.lock().model.clone();
                if data.as_ref().and_then(|d| d.get("model")).is_some() {
                    let payloads =
                        model_select_payloads(&events, &model, &previous, previous_level, "cycle");
                    self.emit_all(events);
                    self.after_events(id, name, payloads, data);
                } else {
                    self.emit_all(events);
                    reply(Ok(Some(data.unwrap_or(Value::Null))));
                }
            }
            Command::SetThinkingLevel { level } => {
                let previous = self.session.lock().thinking_level;
                let events = self.session.lock().set_thinking_level(level);
                let changed = !events.is_empty();
                self.emit_all(events);
                let current = self.session.lock().thinking_level;
                if changed {
                    let payload = json!({"type": "thinking_level_select", "level": current,
                        "previousLevel": previous});
                    self.after_event(id, name, payload, None);
                } else {
                    reply(Ok(None));
                }
            }
            Command::CycleThinkingLevel => {
                let previous = self.session.lock().thinking_level;
                let (level, events) = self.session.lock().cycle_thinking_level();
                let changed = !events.is_empty();
                self.emit_all(events);
                let data = Some(level.map_or(Value::Null, |l| json!({ "level": l })));
                match level {
                    Some(l) if changed => {
                        let payload = json!({"type": "thinking_level_select", "level": l,
                            "previousLevel": previous});
                        self.after_event(id, name, payload, data);
                    }
                    _ => reply(Ok(data)),
                }
            }
            Command::GetAvailableThinkingLevels => {
                let levels = self.session.lock().available_thinking_levels();
                reply(Ok(Some(json!({ "levels": levels }))));
            }
            Command::SetSteeringMode { mode } => {
                reply(
                    self.session
                        .lock()
                        .set_queue_mode(QueueKind::Steering, mode)
                        .map(|_| None),
                );
            }
            Command::SetFollowUpMode { mode } => {
                reply(
                    self.session
                        .lock()
                        .set_queue_mode(QueueKind::FollowUp, mode)
                        .map(|_| None),
                );
            }
            Command::SetAutoCompaction { enabled } => {
                reply(
                    self.session
                        .lock()
                        .set_auto_flag(AutoSetting::Compaction, enabled)
                        .map(|_| None),
                );
            }
            Command::SetAutoRetry { enabled } => {
                reply(
                    self.session
                        .lock()
                        .set_auto_flag(AutoSetting::Retry, enabled)
                        .map(|_| None),
                );
            }
            Command::GetCommands => {
                let mut data = self.session.lock().commands_json();
                // Extension commands come first (pi's order).
                let ext = self.ext.command_items();
                if let Some(Value::Array(items)) = data.get_mut("commands") {
                    items.splice(0..0, ext);
                }
                reply(Ok(Some(data)));
            }
            Command::GetSessionStats => {
                let data = self.session.lock().session_stats();
                reply(Ok(Some(data)));
            }
            Command::GetLastAssistantText => {
                let text = self.session.lock().last_assistant_text();
                reply(Ok(Some(json!({ "text": text }))));
            }
            Command::GetForkMessages => {
                // Printed straight into the line (tens of MB on long sessions, mostly copied
                // string literals).
                let line = {
                    let s = self.session.lock();
                    Response::ok_line(id, name, 0, |out| s.session.write_fork_messages_json(out))
                };
                self.out.line(line);
            }
            Command::GetEntries { since } => {
                // Each entry as its stored text where that is already its printed form.
                let line = {
                    let s = self.session.lock();
                    let sm = &s.session;
                    sm.entries_since(since.as_deref()).map(|list| {
                        let cap = crate::session::SessionManager::entries_json_len(list);
                        Response::ok_line(id.clone(), name, cap, |out| {
                            sm.write_entries_json(list, out)
                        })
                    })
                };
                match line {
                    Ok(line) => self.out.line(line),
                    Err(e) => reply(Err(e.to_string())),
                }
            }
            Command::SetSessionName { name: session_name } => {
                let result = self.session.lock().set_session_name(&session_name);
                match result {
                    Ok(event) => {
                        self.out.event(&event);
                        let payload = match &event {
                            Event::SessionInfoChanged { name: Some(n) } => {
                                json!({"type": "session_info_changed", "name": n})
                            }
                            _ => json!({"type": "session_info_changed"}),
                        };
                        self.after_event(id, name, payload, None);
                    }
                    Err(e) => reply(Err(e)),
                }
            }
            Command::ClearQueue => {
                let (data, event) = self.session.lock().clear_queues();
                self.out.event(&event);
                reply(Ok(Some(data)));
            }
            command @ (Command::Steer { .. } | Command::FollowUp { .. })
                if !input_done && self.ext.wants("input") =>
            {
                self.input_stage(id, command)
            }
            Command::Steer { message, images } | Command::FollowUp { message, images } => {
                let queue = if name == "steer" {
                    QueueKind::Steering
                } else {
                    QueueKind::FollowUp
                };
                let event = {
                    let mut s = self.session.lock();
                    let text = crate::agent::prompting::expand_text(&s, &message);
                    s.enqueue(queue, text, images)
                };
                self.out.event(&event);
                reply(Ok(Some(json!({ "disposition": "queued" }))));
            }
            command @ Command::Prompt { .. } if !input_done && self.ext.wants("input") => {
                self.input_stage(id, command)
            }
            Command::Prompt {
                message,
                images,
                streaming_behavior,
            } => {
                let start = self
                    .session
                    .lock()
                    .begin_prompt(&message, images, streaming_behavior);
                match start {
                    PromptStart::Rejected(error) => reply(Err(error)),
                    PromptStart::Queued(event) => {
                        self.out.event(&event);
                        reply(Ok(Some(json!({ "disposition": "queued" }))));
                    }
                    PromptStart::Run(user_message) => {
                        // The agent thread writes the `started` response before `agent_start`.
                        let job = AgentJob::Run {
                            reply: Some(PromptReply(id.clone())),
                            user_message,
                        };
                        if self.agent.send(job).is_err() {
                            self.session.lock().life.run_not_started();
                            reply(Err("the agent thread is gone".into()));
                        }
                    }
                }
            }
            Command::Abort => {
                // The active run and pending or running `compact`s are cancelled; the answer
                // comes from the agent thread after `agent_settled` (or the compaction's end).
                let answer = self.session.lock().life.request_abort(id.clone());
                match answer {
                    AbortReply::Now => reply(Ok(None)),
                    AbortReply::Later(cancels) => cancels.iter().for_each(CancelToken::cancel),
                }
            }
            Command::AbortRetry => {
                let sleep = self.session.lock().life.request_abort_retry(id.clone());
                match sleep {
                    // Answered by the agent thread right after auto_retry_end.
                    Some(sleep) => sleep.cancel(),
                    None => reply(Ok(None)),
                }
            }
            Command::AbortBash => {
                // The abort_bash response comes before the cancelled bash responses.
                reply(Ok(None));
                let runs = self.session.lock().life.bash_cancels();
                runs.iter().for_each(CancelToken::cancel);
            }
            Command::Bash {
                command,
                exclude_from_context,
            } => self.start_bash(id, command, exclude_from_context),
            Command::NewSession { parent_session } => {
                self.replace_session(JobReply::Rpc(id), SessionOp::New { parent_session })
            }
            Command::SwitchSession { session_path } => {
                self.replace_session(JobReply::Rpc(id), SessionOp::Switch { path: session_path })
            }
            Command::Fork { entry_id } => {
                self.replace_session(JobReply::Rpc(id), SessionOp::Fork { entry_id })
            }
            Command::Clone => self.replace_session(JobReply::Rpc(id), SessionOp::Clone),
            Command::GetTree => {
                let line = {
                    let s = self.session.lock();
                    Response::ok_line(id, name, s.session.tree_json_len(), |out| {
                        s.session.write_tree_json(out)
                    })
                };
                self.out.line(line);
            }
            Command::ExportHtml { output_path } => {
                // Copy under the lock, render and write without it: `get_state` and `abort`
                // never wait behind a large export.
                let (snapshot, cwd) = {
                    let s = self.session.lock();
                    (s.session.snapshot(), s.cwd.clone())
                };
                let out = self.out.clone();
                let thread_id = id.clone();
                let spawned = std::thread::Builder::new()
                    .name("export-html".into())
                    .spawn(move || {
                        let result = crate::agent::session_ops::export_html(
                            &snapshot,
                            &cwd,
                            output_path.as_deref(),
                        );
                        match result {
                            Ok(path) => out.response(&Response::ok(
                                thread_id,
                                "export_html",
                                Some(json!({ "path": path })),
                            )),
                            Err(e) => out.response(&Response::err(thread_id, "export_html", e)),
                        }
                    });
                if let Err(e) = spawned {
                    self.out.response(&Response::err(
                        id,
                        "export_html",
                        format!("cannot start the export thread: {e}"),
                    ));
                }
            }
            Command::Compact {
                custom_instructions,
            } => self.compact(JobReply::Rpc(id), custom_instructions),
        }
    }
}

impl Processor {
    /// `compact`: aborts the active run and any earlier compaction, then hands the compaction to
    /// the agent thread, which answers once the summary is in (`rpc-protocol.md` §3.6). Prompts
    /// are refused from now until it is done.
    pub(super) fn compact(&self, reply: JobReply, custom_instructions: Option<String>) {
        let cancel = CancelToken::new();
        let fire = self.session.lock().life.begin_manual_compaction(&cancel);
        fire.iter().for_each(CancelToken::cancel);
        let job = AgentJob::Compact {
            reply,
            custom_instructions,
            cancel,
        };
        if let Err(e) = self.agent.send(job) {
            self.session.lock().life.manual_compaction_not_started();
            let error = "the agent thread is gone".to_string();
            match e.into_inner() {
                AgentJob::Compact {
                    reply: JobReply::Rpc(id),
                    ..
                } => self.out.response(&Response::err(id, "compact", error)),
                AgentJob::Compact {
                    reply: JobReply::Extension(f),
                    ..
                } => (f.0)(Err(error)),
                _ => {}
            }
        }
    }

    /// Aborts the active run (if any) and hands the replacement to the agent thread, which
    /// performs it once the run has settled and answers the command.
    fn replace_session(&self, reply: JobReply, op: SessionOp) {
        let command = op.command();
        let run = self.session.lock().life.abort_for_replacement();
        if let Some(cancel) = run {
            cancel.cancel();
        }
        if let Err(e) = self.agent.send(AgentJob::Session { reply, op }) {
            if let AgentJob::Session { reply, .. } = e.into_inner() {
                reply.answer(
                    &self.out,
                    command,
                    Err("the agent thread is gone".to_string()),
                );
            }
        }
    }

    /// Runs an RPC `bash` command on its own thread: `bash_execution_update`s while it runs,
    /// then the response, and a `bashExecution` message in the session.
    fn start_bash(&self, id: Option<Value>, command: String, exclude_from_context: bool) {
        let cancel = CancelToken::new();
        let (req, run_id) = {
            let mut s = self.session.lock();
            let run_id = s.life.register_bash(cancel.clone());
            let req = crate::exec::bash::BashRequest {
                command: command.clone(),
                cwd: s.cwd.clone(),
                shell_path: s.settings.shell_path(),
                shell_command_prefix: s.settings.shell_command_prefix(),
                temp_dir: std::env::temp_dir(),
            };
            (req, run_id)
        };
        let out = self.out.clone();
        let state = Arc::clone(&self.session);
        let ext = Arc::clone(&self.ext);
        let spawned = std::thread::Builder::new()
            .name("bash".into())
            .spawn(move || {
                // `user_bash` handlers may answer the command themselves (§A4): their result
                // is the response data as given, and is recorded as a run would be.
                let answered = if ext.wants("user_bash") {
                    let payload = json!({"type": "user_bash", "command": command,
                        "excludeFromContext": exclude_from_context,
                        "cwd": req.cwd.to_string_lossy()});
                    ext.user_bash(&payload)
                        .map(|r| r.map(|data| (bash_result_of(&data), data)))
                        .transpose()
                } else {
                    None
                };
                let outcome = answered.unwrap_or_else(|| {
                    crate::exec::bash::run_bash(&req, &cancel, &mut |delta| {
                        out.event(&Event::BashExecutionUpdate {
                            id: id.clone(),
                            delta: delta.to_string(),
                        });
                    })
                    .map(|r| {
                        let data = bash_data(&r);
                        (r, data)
                    })
                });
                let mut s = state.lock();
                s.life.end_bash(run_id);
                match outcome {
                    Ok((r, data)) => {
                        let message = BashExecutionMessage {
                            command: &command,
                            output: &r.output,
                            exit_code: r.exit_code,
                            cancelled: r.cancelled,
                            truncated: r.truncated,
                            full_output_path: r.full_output_path.as_deref(),
                            timestamp: crate::util::now_ms(),
                            exclude_from_context,
                        };
                        s.record_or_defer(message.to_value());
                        drop(s);
                        out.response(&Response::ok(id, "bash", Some(data)));
                    }
                    Err(e) => {
                        drop(s);
                        out.response(&Response::err(id, "bash", e));
                    }
                }
            });
        if let Err(e) = spawned {
            self.session.lock().life.end_bash(run_id);
            self.out.response(&Response::err(
                None,
                "bash",
                format!("cannot start the bash thread: {e}"),
            ));
        }
    }
}
