//! The session side of extension calls (`extensions.md` §B7): `pi.*`, `ctx.*` and `session.*`
//! methods over the shared state. They run on the calling extension's reader thread; each
//! takes the state lock briefly and writes its wire effect (`entry_appended`,
//! `session_info_changed`...) before the extension's next message is read. A prompt an
//! extension sends (`pi.sendUserMessage`) goes through the processor, ordered with commands.

use std::sync::{Arc, Weak};

use crossbeam_channel::Sender;
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::reader::Input;
use crate::agent::AgentSession;
use crate::cancel::CancelToken;
use crate::extensions::host::Actions;
use crate::extensions::Extensions;
use crate::llm::ThinkingLevel;
use crate::output::Output;
use crate::protocol::{Event, ImageContent, StreamingBehavior};

pub(crate) struct RpcActions {
    pub session: Arc<Mutex<AgentSession>>,
    pub out: Output,
    /// Where an extension's prompts go; `None` in the print modes (no processor).
    pub to_processor: Option<Sender<Input>>,
    pub ext: Weak<Extensions>,
}

fn text_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, String> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string \"{key}\""))
}

/// `sendUserMessage` content: a string, or text and image blocks.
fn user_content(content: &Value) -> Result<(String, Vec<ImageContent>), String> {
    match content {
        Value::String(s) => Ok((s.clone(), Vec::new())),
        Value::Array(blocks) => {
            let mut text = Vec::new();
            let mut images = Vec::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        text.push(b.get("text").and_then(Value::as_str).unwrap_or_default())
                    }
                    Some("image") => images.push(
                        serde_json::from_value(b.clone())
                            .map_err(|e| format!("invalid image block: {e}"))?,
                    ),
                    _ => return Err("content blocks must be text or image".into()),
                }
            }
            Ok((text.join("\n"), images))
        }
        _ => Err("content must be a string or an array of content blocks".into()),
    }
}

impl RpcActions {
    fn processor(&self) -> Result<&Sender<Input>, String> {
        self.to_processor.as_ref().ok_or_else(|| {
            "starting a run from an extension is not supported in the print modes yet".into()
        })
    }

    /// `pi.sendMessage` (§A9): idle, it is appended at once as a `custom` message with its
    /// `message_start` / `message_end`; with `triggerTurn` it opens a run. While streaming pi
    /// queues it; pi-rpc cannot queue custom messages yet and says so.
    fn send_message(&self, params: &Value) -> Result<Value, String> {
        let m = params
            .get("message")
            .filter(|m| m.is_object())
            .ok_or("missing object \"message\"")?;
        let mut msg = serde_json::Map::new();
        msg.insert("role".into(), "custom".into());
        msg.insert(
            "customType".into(),
            m.get("customType").cloned().unwrap_or(Value::Null),
        );
        msg.insert(
            "content".into(),
            m.get("content").cloned().unwrap_or(Value::Null),
        );
        msg.insert(
            "display".into(),
            m.get("display").cloned().unwrap_or(Value::Bool(true)),
        );
        if let Some(d) = m.get("details") {
            msg.insert("details".into(), d.clone());
        }
        msg.insert("timestamp".into(), crate::util::now_ms().into());
        let msg = Value::Object(msg);
        let trigger = params
            .get("options")
            .and_then(|o| o.get("triggerTurn"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if self.session.lock().life.is_streaming() {
            return Err(
                "pi.sendMessage while the agent is streaming is not supported by this pi-rpc yet"
                    .into(),
            );
        }
        if trigger {
            self.processor()?
                .send(Input::ExtensionMessage { message: msg })
                .map_err(|_| "pi-rpc is shutting down".to_string())?;
            return Ok(Value::Null);
        }
        self.out.event(&Event::MessageStart {
            message: msg.clone(),
        });
        self.out.event(&Event::MessageEnd {
            message: msg.clone(),
        });
        let mut s = self.session.lock();
        s.messages.push(msg.clone());
        s.session
            .append_custom_message(
                msg["customType"].as_str().unwrap_or_default(),
                msg["content"].clone(),
                msg["display"].as_bool().unwrap_or(true),
                msg.get("details").cloned(),
            )
            .map_err(|e| e.to_string())?;
        Ok(Value::Null)
    }
}

impl Actions for RpcActions {
    fn call_later(
        &self,
        method: &str,
        params: &Value,
        reply: crate::extensions::CallReply,
    ) -> Option<crate::extensions::CallReply> {
        use crate::agent::session_ops::SessionOp;
        let session_op = match method {
            "ctx.newSession" => Some(SessionOp::New {
                parent_session: params
                    .get("parentSession")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }),
            "ctx.fork" => match params.get("entryId").and_then(Value::as_str) {
                Some(e) => Some(SessionOp::Fork {
                    entry_id: e.to_string(),
                }),
                None => {
                    (reply.0)(Err("missing string \"entryId\"".into()));
                    return None;
                }
            },
            "ctx.switchSession" => match params.get("sessionPath").and_then(Value::as_str) {
                Some(p) => Some(SessionOp::Switch {
                    path: p.to_string(),
                }),
                None => {
                    (reply.0)(Err("missing string \"sessionPath\"".into()));
                    return None;
                }
            },
            _ => None,
        };
        if let Some(op) = session_op {
            match self.processor() {
                Ok(tx) => {
                    if let Err(e) = tx.send(Input::ExtensionSession { op, reply }) {
                        if let Input::ExtensionSession { reply, .. } = e.into_inner() {
                            (reply.0)(Err("pi-rpc is shutting down".into()));
                        }
                    }
                }
                Err(e) => (reply.0)(Err(e)),
            }
            return None;
        }
        if method == "ctx.waitForIdle" {
            let now = self.session.lock().life.when_idle(reply);
            if let Some(reply) = now {
                (reply.0)(Ok(Value::Null));
            }
            return None;
        }
        if method == "ctx.shutdown" {
            // Deferred until the session is idle (rpc-protocol.md §10), then as stdin EOF.
            let Ok(tx) = self.processor().cloned() else {
                (reply.0)(Err(
                    "ctx.shutdown is not available in the print modes".into()
                ));
                return None;
            };
            let shutdown = crate::extensions::CallReply(Box::new(move |_| {
                let _ = tx.send(Input::Eof);
            }));
            let now = self.session.lock().life.when_idle(shutdown);
            if let Some(s) = now {
                (s.0)(Ok(Value::Null));
            }
            (reply.0)(Ok(Value::Null));
            return None;
        }
        if method != "ctx.compact" {
            return Some(reply);
        }
        let custom_instructions = params
            .get("customInstructions")
            .and_then(Value::as_str)
            .map(str::to_string);
        match self.processor() {
            Ok(tx) => {
                if let Err(e) = tx.send(Input::ExtensionCompact {
                    custom_instructions,
                    reply,
                }) {
                    if let Input::ExtensionCompact { reply, .. } = e.into_inner() {
                        (reply.0)(Err("pi-rpc is shutting down".into()));
                    }
                }
            }
            Err(e) => (reply.0)(Err(e)),
        }
        None
    }

    fn call(&self, method: &str, params: &Value) -> Result<Value, String> {
        match method {
            "pi.sendUserMessage" => {
                let (text, images) = user_content(params.get("content").unwrap_or(&Value::Null))?;
                let behavior = match params
                    .get("options")
                    .and_then(|o| o.get("deliverAs"))
                    .and_then(Value::as_str)
                {
                    Some("steer") => Some(StreamingBehavior::Steer),
                    Some("followUp") | Some("nextTurn") => Some(StreamingBehavior::FollowUp),
                    _ => None,
                };
                self.processor()?
                    .send(Input::ExtensionPrompt {
                        text,
                        images,
                        behavior,
                        input_done: false,
                    })
                    .map_err(|_| "pi-rpc is shutting down".to_string())?;
                Ok(Value::Null)
            }
            "pi.sendMessage" => self.send_message(params),
            "pi.appendEntry" => {
                let custom_type = text_param(params, "customType")?;
                let data = params.get("data").filter(|d| !d.is_null()).cloned();
                let entry = self
                    .session
                    .lock()
                    .session
                    .append_custom(custom_type, data)
                    .map_err(|e| e.to_string())?;
                self.out.event(&Event::EntryAppended {
                    entry: entry.to_value(),
                });
                Ok(Value::Null)
            }
            "pi.setSessionName" => {
                let name = text_param(params, "name")?;
                let event = self.session.lock().set_session_name(name)?;
                self.out.event(&event);
                if let (Event::SessionInfoChanged { name: Some(n) }, Some(tx)) =
                    (&event, &self.to_processor)
                {
                    let _ = tx.send(Input::ExtensionEvents(vec![
                        json!({"type": "session_info_changed", "name": n}),
                    ]));
                }
                Ok(Value::Null)
            }
            "pi.getSessionName" | "session.getSessionName" => Ok(self
                .session
                .lock()
                .session
                .session_name()
                .map_or(Value::Null, Value::String)),
            "pi.setLabel" => {
                let target = text_param(params, "entryId")?;
                let label = params.get("label").and_then(Value::as_str);
                let entry = self
                    .session
                    .lock()
                    .session
                    .append_label(target, label.filter(|l| !l.is_empty()))
                    .map_err(|e| e.to_string())?;
                self.out.event(&Event::EntryAppended {
                    entry: entry.to_value(),
                });
                Ok(Value::Null)
            }
            "pi.getActiveTools" => {
                let s = self.session.lock();
                Ok(json!(s
                    .resources
                    .tools
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>()))
            }
            "pi.getAllTools" => {
                let s = self.session.lock();
                Ok(Value::Array(
                    s.resources
                        .tools
                        .iter()
                        .map(|t| {
                            json!({"name": t.name(), "description": t.description(),
                                   "parameters": t.parameters()})
                        })
                        .collect(),
                ))
            }
            "pi.getCommands" => {
                let mut data = self.session.lock().commands_json();
                let ext = self
                    .ext
                    .upgrade()
                    .map(|e| e.command_items())
                    .unwrap_or_default();
                let mut items = ext;
                if let Some(Value::Array(rest)) = data.get_mut("commands").map(Value::take) {
                    items.extend(rest);
                }
                Ok(Value::Array(items))
            }
            "pi.setActiveTools" => {
                // Built-ins and extension tools by name, in the order given; unknown names
                // are skipped (pi keeps only registered tools).
                let names: Vec<String> = params
                    .get("toolNames")
                    .and_then(Value::as_array)
                    .ok_or("missing array \"toolNames\"")?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                let ext_tools = self
                    .ext
                    .upgrade()
                    .map(|e| e.registered_tools(true))
                    .unwrap_or_default();
                let mut tools: Vec<Arc<dyn crate::tools::Tool>> = Vec::new();
                for n in &names {
                    if tools.iter().any(|t| t.name() == n) {
                        continue;
                    }
                    if let Some(t) = ext_tools.iter().find(|t| t.name() == n) {
                        tools.push(Arc::clone(t));
                    } else if let Some(t) = crate::tools::builtin(n) {
                        tools.push(t);
                    }
                }
                self.session.lock().resources.tools = tools;
                Ok(Value::Null)
            }
            "pi.getThinkingLevel" => Ok(json!(self.session.lock().thinking_level)),
            "pi.setThinkingLevel" => {
                let level = text_param(params, "level")?;
                let level = ThinkingLevel::parse(level)
                    .ok_or_else(|| format!("Invalid thinking level: {level}"))?;
                let previous = self.session.lock().thinking_level;
                let events = self.session.lock().set_thinking_level(level);
                events.iter().for_each(|e| self.out.event(e));
                if let (false, Some(tx)) = (events.is_empty(), &self.to_processor) {
                    let current = self.session.lock().thinking_level;
                    let _ = tx.send(Input::ExtensionEvents(vec![json!({
                        "type": "thinking_level_select", "level": current, "previousLevel": previous,
                    })]));
                }
                Ok(Value::Null)
            }
            "pi.setModel" => {
                let provider = text_param(params, "provider")?;
                let id = text_param(params, "modelId")?;
                let (previous, previous_level) = {
                    let s = self.session.lock();
                    (s.model.clone(), s.thinking_level)
                };
                let result = self.session.lock().set_model(provider, id);
                match result {
                    Ok((model, events)) => {
                        let payloads = super::ext_worker::model_select_payloads(
                            &events,
                            &model,
                            &previous,
                            previous_level,
                            "set",
                        );
                        events.iter().for_each(|e| self.out.event(e));
                        if let Some(tx) = &self.to_processor {
                            let _ = tx.send(Input::ExtensionEvents(payloads));
                        }
                        Ok(Value::Bool(true))
                    }
                    Err(_) => Ok(Value::Bool(false)),
                }
            }
            "ctx.getState" => {
                let s = self.session.lock();
                Ok(json!({
                    "model": s.model,
                    "thinkingLevel": s.thinking_level,
                    "isIdle": !s.life.is_streaming(),
                    "hasPendingMessages": !s.queues.is_empty(),
                    "session": {
                        "id": s.session.session_id(),
                        "file": s.session.session_file().map(|p| p.to_string_lossy().into_owned()),
                        "name": s.session.session_name(),
                        "leafId": s.session.leaf_id(),
                    },
                    "activeTools": s.resources.tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>(),
                }))
            }
            "ctx.getSystemPrompt" => {
                let s = self.session.lock();
                Ok(match s.life.run_system_prompt() {
                    Some(p) => p.into(),
                    None => s.rendered_system_prompt().into(),
                })
            }
            "ctx.abort" => {
                let answer = self.session.lock().life.request_abort(None);
                if let crate::agent::lifecycle::AbortReply::Later(cancels) = answer {
                    cancels.iter().for_each(CancelToken::cancel);
                }
                Ok(Value::Null)
            }
            "session.getEntries" | "session.getBranch" => {
                let s = self.session.lock();
                if method == "session.getBranch" {
                    return Ok(Value::Array(
                        s.session.branch().iter().map(|e| e.to_value()).collect(),
                    ));
                }
                let text = s
                    .session
                    .entries_json_text(None)
                    .map_err(|e| e.to_string())?;
                drop(s);
                let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
                Ok(v.get("entries")
                    .cloned()
                    .unwrap_or(Value::Array(Vec::new())))
            }
            "session.getEntry" => {
                let id = text_param(params, "id")?;
                Ok(self
                    .session
                    .lock()
                    .session
                    .entry(id)
                    .map_or(Value::Null, |e| e.to_value()))
            }
            "session.getLeafId" => Ok(self
                .session
                .lock()
                .session
                .leaf_id()
                .map_or(Value::Null, |s| Value::String(s.to_string()))),
            "session.getSessionFile" => Ok(self
                .session
                .lock()
                .session
                .session_file()
                .map_or(Value::Null, |p| p.to_string_lossy().into_owned().into())),
            "session.getSessionId" => Ok(self.session.lock().session.session_id().into()),
            "session.getHeader" => Ok(self.session.lock().session.header().to_value()),
            "ctx.getContextUsage" => Ok(self
                .session
                .lock()
                .context_usage()
                .map_or(Value::Null, |u| crate::protocol::data::to_value(&u))),
            "session.getLabel" => {
                let id = text_param(params, "id")?;
                Ok(self
                    .session
                    .lock()
                    .session
                    .label(id)
                    .map_or(Value::Null, |l| l.label.clone().into()))
            }
            "session.getTree" => {
                // `get_tree`'s data: `{tree, leafId}` as the RPC command answers it.
                let text = self.session.lock().session.tree_json_text();
                let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
                Ok(v.get("tree").cloned().unwrap_or(v))
            }
            "ctx.navigateTree" | "ctx.reload" | "ctx.getSystemPromptOptions" => {
                Err(format!("{method} is not supported by this pi-rpc yet"))
            }
            _ => Err(format!("Unknown method: {method}")),
        }
    }
}
