//! The processor's extension stages (`extensions.md` §A7.3–§A7.8): commands whose handlers run
//! first on the `ext-worker` thread, and the prompts and runs extensions start.

use std::sync::Arc;

use serde_json::{json, Value};

use super::ext_worker::ExtJob;
use super::processor::Processor;
use super::reader::Input;
use crate::agent::job::AgentJob;
use crate::agent::state::PromptStart;
use crate::extensions::dispatch::{images_after_input, input_images, InputOutcome};
use crate::protocol::command::Command;
use crate::protocol::{Event, Response};

impl Processor {
    /// Runs `job` on the `ext-worker` thread; without one (or when it is full), here.
    pub(super) fn on_worker(&self, id: &Option<Value>, name: &'static str, job: ExtJob) {
        match &self.ext_jobs {
            Some(tx) => {
                if let Err(e) = tx.try_send(job) {
                    match e {
                        crossbeam_channel::TrySendError::Full(_) => {
                            self.out.response(&Response::err(
                                id.clone(),
                                name,
                                "too many commands are waiting for extension handlers",
                            ))
                        }
                        crossbeam_channel::TrySendError::Disconnected(job) => job(),
                    }
                }
            }
            None => job(),
        }
    }

    /// `prompt` / `steer` / `follow_up` through the `input` handlers first (§A7.4): `handled`
    /// answers the command; otherwise it comes back as [`Input::Continued`] with their text.
    pub(super) fn input_stage(&self, id: Option<Value>, command: Command) {
        let name = command.name();
        let streaming = self.session.lock().life.is_streaming();
        let (text, images, behavior) = match &command {
            Command::Prompt {
                message,
                images,
                streaming_behavior,
            } => (
                message.clone(),
                images.clone(),
                streaming_behavior.map(|b| match b {
                    crate::protocol::StreamingBehavior::Steer => "steer",
                    crate::protocol::StreamingBehavior::FollowUp => "followUp",
                }),
            ),
            Command::Steer { message, images } => (message.clone(), images.clone(), Some("steer")),
            Command::FollowUp { message, images } => {
                (message.clone(), images.clone(), Some("followUp"))
            }
            _ => return self.dispatch_staged(id, command, true),
        };
        let behavior = if streaming { behavior } else { None };
        let ext = Arc::clone(&self.ext);
        let out = self.out.clone();
        let input = self.input.clone();
        let job_id = id.clone();
        self.on_worker(
            &id,
            name,
            Box::new(move || {
                let image_values = input_images(&images);
                match ext.input(&text, &image_values, "rpc", behavior) {
                    InputOutcome::Handled => out.response(&Response::ok(
                        job_id,
                        name,
                        Some(json!({"disposition": "handled"})),
                    )),
                    InputOutcome::Continue { text, images: new } => {
                        let images = images_after_input(images, &image_values, new);
                        let command = match command {
                            Command::Prompt {
                                streaming_behavior, ..
                            } => Command::Prompt {
                                message: text,
                                images,
                                streaming_behavior,
                            },
                            Command::Steer { .. } => Command::Steer {
                                message: text,
                                images,
                            },
                            _ => Command::FollowUp {
                                message: text,
                                images,
                            },
                        };
                        let _ = input.send(Input::Continued {
                            id: job_id,
                            command,
                        });
                    }
                }
            }),
        );
    }

    /// The response of a command whose extension event (`model_select`,
    /// `thinking_level_select`, `session_info_changed`) runs first: on the worker when a unit
    /// subscribes, else at once.
    pub(super) fn after_event(
        &self,
        id: Option<Value>,
        name: &'static str,
        payload: Value,
        data: Option<Value>,
    ) {
        self.after_events(id, name, vec![payload], data)
    }

    /// [`Processor::after_event`] for several events, dispatched in order.
    pub(super) fn after_events(
        &self,
        id: Option<Value>,
        name: &'static str,
        payloads: Vec<Value>,
        data: Option<Value>,
    ) {
        let payloads: Vec<Value> = payloads
            .into_iter()
            .filter(|p| self.ext.wants(p["type"].as_str().unwrap_or_default()))
            .collect();
        if payloads.is_empty() {
            return self.out.response(&Response::ok(id, name, data));
        }
        let ext = Arc::clone(&self.ext);
        let out = self.out.clone();
        let job_id = id.clone();
        self.on_worker(
            &id,
            name,
            Box::new(move || {
                for p in &payloads {
                    ext.emit(p, None);
                }
                out.response(&Response::ok(job_id, name, data));
            }),
        );
    }

    /// An extension's `sendMessage` with `triggerTurn`: a run opened by its `custom` message
    /// (refused as a prompt would be; a refusal is the extension's `extension_error`).
    pub(super) fn extension_message(&self, message: Value) {
        let start = {
            let mut s = self.session.lock();
            if s.life.is_streaming() {
                PromptStart::Rejected(
                    "Agent is already processing; pi-rpc cannot queue an extension's message yet"
                        .into(),
                )
            } else {
                s.begin_prompt_with("", Vec::new(), None, false)
            }
        };
        match start {
            PromptStart::Run(_) => {
                let job = AgentJob::Run {
                    reply: None,
                    user_message: message,
                };
                if self.agent.send(job).is_err() {
                    self.session.lock().life.run_not_started();
                }
            }
            PromptStart::Rejected(error)
            | PromptStart::Queued(Event::ExtensionError { error, .. }) => {
                self.out.event(&Event::ExtensionError {
                    extension_path: "<runtime>".into(),
                    event: "send_message".into(),
                    error,
                })
            }
            PromptStart::Queued(_) => {}
        }
    }

    /// An extension's `sendUserMessage`: a prompt (no template expansion) with no response;
    /// a refusal is the extension's `extension_error` (`<runtime>`, `send_user_message`).
    pub(super) fn extension_prompt(
        &self,
        text: String,
        images: Vec<crate::protocol::ImageContent>,
        behavior: Option<crate::protocol::StreamingBehavior>,
        input_done: bool,
    ) {
        if !input_done && self.ext.wants("input") {
            // `input` handlers with `source:"extension"` first, on the worker (§A4).
            let streaming = self.session.lock().life.is_streaming();
            let sb = behavior.filter(|_| streaming).map(|b| match b {
                crate::protocol::StreamingBehavior::Steer => "steer",
                crate::protocol::StreamingBehavior::FollowUp => "followUp",
            });
            let ext = Arc::clone(&self.ext);
            let input = self.input.clone();
            let job: ExtJob = Box::new(move || {
                let image_values = input_images(&images);
                if let InputOutcome::Continue { text, images: new } =
                    ext.input(&text, &image_values, "extension", sb)
                {
                    let images = images_after_input(images, &image_values, new);
                    let _ = input.send(Input::ExtensionPrompt {
                        text,
                        images,
                        behavior,
                        input_done: true,
                    });
                }
            });
            return self.on_worker(&None, "prompt", job);
        }
        let start = self
            .session
            .lock()
            .begin_prompt_with(&text, images, behavior, false);
        match start {
            PromptStart::Rejected(error) => self.out.event(&Event::ExtensionError {
                extension_path: "<runtime>".into(),
                event: "send_user_message".into(),
                error,
            }),
            PromptStart::Queued(event) => self.out.event(&event),
            PromptStart::Run(user_message) => {
                let job = AgentJob::Run {
                    reply: None,
                    user_message,
                };
                if self.agent.send(job).is_err() {
                    self.session.lock().life.run_not_started();
                }
            }
        }
    }
}
