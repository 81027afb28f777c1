//! Running one assistant message's tool calls (`agent-loop.md` §3): every call is announced
//! (`tool_execution_start`) and validated in order, the valid ones run concurrently, their
//! updates and ends are emitted in completion order, and the tool-result messages come back in
//! call order.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::bounded;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::runtime::Runtime;
use crate::cancel::CancelToken;
use crate::extensions::dispatch::{Gate, ResultPatch};
use crate::llm::types::ContentBlock;
use crate::protocol::message::ToolResultMessage;
use crate::protocol::Event;
use crate::tools::{Tool, ToolContext, ToolOutput};
use crate::util::now_ms;

/// How long a batch with a file-changing call waits after its `tool_execution_start` events
/// reached stdout, so that a client reading the file on that event reads it unchanged.
const FILE_CHANGE_GRACE: std::time::Duration = std::time::Duration::from_millis(10);

/// How many updates of one call may wait for the agent thread before the newest replaces the
/// last waiting one.
const PENDING_UPDATES: usize = 16;

/// The tool-result message of one call.
pub struct ToolCallOutcome {
    pub message: Value,
    /// The call's arguments when the tool rewrote them in place while preparing them (pi's
    /// edit `prepareArguments` mutates the tool call): the assistant message shows them from
    /// `turn_end` on.
    pub rewritten_arguments: Option<Value>,
    /// The result asked to end the run after this batch (`terminate: true`).
    pub terminate: bool,
}

/// A finished call: the wire result, whether it is an error, and how long it ran.
struct Finished {
    result: Value,
    content: Value,
    details: Option<Value>,
    is_error: bool,
    duration_ms: Option<u64>,
    terminate: bool,
}

fn error_finished(text: &str, duration_ms: Option<u64>) -> Finished {
    let content = json!([{"type": "text", "text": text}]);
    Finished {
        result: json!({"content": content, "details": {}}),
        content,
        details: Some(json!({})),
        is_error: true,
        duration_ms,
        terminate: false,
    }
}

fn output_finished(out: ToolOutput, duration_ms: u64) -> Finished {
    let content = Value::Array(out.content);
    let mut result = Map::new();
    result.insert("content".into(), content.clone());
    if let Some(d) = &out.details {
        result.insert("details".into(), d.clone());
    }
    if let Some(s) = out.structured_content {
        result.insert("structuredContent".into(), s);
    }
    // A tool that returns an error result (bash's non-zero exit) rather than failing has
    // `isError` in the result object itself, which `tool_execution_end` carries as it is.
    if out.is_error {
        result.insert("isError".into(), true.into());
    }
    if out.terminate {
        result.insert("terminate".into(), true.into());
    }
    Finished {
        result: Value::Object(result),
        content,
        details: out.details,
        is_error: out.is_error,
        duration_ms: Some(duration_ms),
        terminate: out.terminate,
    }
}

/// The `tool_call` event (§A5, §B6): extensions may block the call or edit its arguments in
/// place (what runs changes; `tool_execution_start.args` and the transcript do not).
fn gate(rt: &Runtime, call_id: &str, name: &str, args: Value, cancel: &CancelToken) -> Gate {
    if !rt.ext.wants("tool_call") {
        return Gate::Allow(args);
    }
    let payload = json!({
        "type": "tool_call",
        "toolCallId": call_id,
        "toolName": name,
        "input": args,
    });
    rt.ext.tool_call(&payload, Some(cancel))
}

/// The arguments call `i` runs with.
fn runnable_args(runnable: &[(usize, Arc<dyn Tool>, Value)], i: usize) -> Value {
    runnable
        .iter()
        .find(|(k, _, _)| *k == i)
        .map(|(_, _, a)| a.clone())
        .unwrap_or(Value::Null)
}

/// The `tool_result` event (§A4): extensions patch the result before `tool_execution_end`.
fn patch_result(
    rt: &Runtime,
    call_id: &str,
    name: &str,
    input: &Value,
    f: &mut Finished,
    cancel: &CancelToken,
) {
    let mut payload = json!({
        "type": "tool_result",
        "toolCallId": call_id,
        "toolName": name,
        "input": input,
        "content": f.content,
        "details": f.details.clone().unwrap_or_else(|| json!({})),
    });
    if let Some(s) = f.result.get("structuredContent") {
        payload["structuredContent"] = s.clone();
    }
    payload["isError"] = f.is_error.into();
    let patch = rt.ext.tool_result(&payload, Some(cancel));
    if patch == ResultPatch::default() {
        return;
    }
    if let Some(c) = patch.content {
        f.content = c;
    }
    if let Some(d) = patch.details {
        f.details = Some(d);
    }
    if let Some(e) = patch.is_error {
        f.is_error = e;
    }
    // pi rebuilds the result from content, details and structuredContent: `isError` stays
    // only where the tool's own result had it (bash's non-zero exit).
    let error_flag = f.result.get("isError").is_some();
    let structured = match patch.structured_content {
        Some(s) => s,
        None => f.result.get("structuredContent").cloned(),
    };
    let mut result = Map::new();
    result.insert("content".into(), f.content.clone());
    if let Some(d) = &f.details {
        result.insert("details".into(), d.clone());
    }
    if let Some(s) = structured {
        result.insert("structuredContent".into(), s);
    }
    if f.is_error && error_flag {
        result.insert("isError".into(), true.into());
    }
    f.result = Value::Object(result);
}

const LENGTH_STOP_TEXT: &str = "was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.";

/// Executes `calls`; `length_stop` fails them all without running (the reply was cut off).
/// `on_rewrite(k, args)` is told, right after the `k`-th call's arguments were prepared, that
/// the tool rewrote them in place (pi's edit tool mutates the tool call's arguments object).
pub fn execute_tool_calls(
    rt: &Runtime,
    calls: &[ContentBlock],
    cancel: &CancelToken,
    length_stop: bool,
    on_rewrite: &mut dyn FnMut(usize, &Value),
) -> Vec<ToolCallOutcome> {
    struct Call {
        id: String,
        name: String,
        /// The arguments as the transcript shows them (rewritten in place by preparation).
        args: Value,
        args_error: Option<String>,
        rewritten: bool,
    }
    let mut calls: Vec<Call> = calls
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
                arguments_error,
                ..
            } => Some(Call {
                id: id.clone(),
                name: name.clone(),
                args: arguments.clone(),
                args_error: arguments_error.clone(),
                rewritten: false,
            }),
            _ => None,
        })
        .collect();

    let (tools, ctx_parts) = {
        let s = rt.state.lock();
        (s.resources.tools.clone(), s.tool_context_parts())
    };
    let mut finished: Vec<Option<Finished>> = (0..calls.len()).map(|_| None).collect();
    let mut runnable: Vec<(usize, Arc<dyn Tool>, Value)> = Vec::new();
    let mut terminating = vec![false; calls.len()];

    for (i, call) in calls.iter_mut().enumerate() {
        rt.emit(&Event::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.args.clone(),
        });
        // pi's prepareToolCall: abort, unknown tool, argument preparation, malformed
        // arguments, schema validation, in that order.
        let failure = if length_stop {
            Some(format!("Tool call \"{}\" {LENGTH_STOP_TEXT}", call.name))
        } else if cancel.is_cancelled() {
            Some("Operation aborted".into())
        } else {
            match tools.iter().find(|t| t.name() == call.name) {
                None => Some(format!("Tool {} not found", call.name)),
                Some(tool) => {
                    let before = tool.rewrites_arguments().then(|| call.args.clone());
                    let prepared = tool.prepare_arguments(&mut call.args);
                    if before.is_some_and(|before| before != call.args) {
                        call.rewritten = true;
                        on_rewrite(i, &call.args);
                    }
                    let validated = match &call.args_error {
                        Some(e) => {
                            Err(format!("Invalid arguments for tool \"{}\": {e}", call.name))
                        }
                        None => crate::tools::validate::validate_arguments(
                            tool.name(),
                            &tool.parameters(),
                            &prepared,
                        ),
                    };
                    match validated {
                        Err(text) => Some(text),
                        Ok(_) if cancel.is_cancelled() => Some("Operation aborted".into()),
                        Ok(coerced) => match gate(rt, &call.id, &call.name, coerced, cancel) {
                            Gate::Block { reason, terminate } => {
                                terminating[i] = terminate;
                                Some(reason)
                            }
                            Gate::Allow(_) if cancel.is_cancelled() => {
                                Some("Operation aborted".into())
                            }
                            // What the tool needs before it runs (an MCP tool's servers, as
                            // pi's MCP `tool_call` handler waits for them); an abort meanwhile
                            // fails the call here, before it runs.
                            Gate::Allow(_) if !tool.wait_until_ready(cancel) => {
                                Some("Operation aborted".into())
                            }
                            Gate::Allow(args) => {
                                runnable.push((i, Arc::clone(tool), args));
                                None
                            }
                        },
                    }
                }
            }
        };
        if let Some(text) = failure {
            let mut f = error_finished(&text, None);
            if terminating[i] {
                f.terminate = true;
                if let Value::Object(m) = &mut f.result {
                    m.insert("terminate".into(), true.into());
                }
            }
            rt.emit(&Event::ToolExecutionEnd {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                result: f.result.clone(),
                is_error: true,
                duration_ms: None,
            });
            finished[i] = Some(f);
        }
    }

    // Every `tool_execution_start` is on stdout before any tool touches the disk: a client that
    // reads a file when it sees the event (pi-acp does, to show a write/edit as a diff) reads it
    // as it was before the call. Waits only for lines already queued.
    if !runnable.is_empty() {
        rt.out.flush();
        // Flushing is not enough for a client that reads the file asynchronously after parsing
        // the line (pi-acp: measured 108-120 of 120 writes shown as diffs under load, 120/120
        // with this pause). pi itself takes 9-11 ms from the event to the write.
        if runnable.iter().any(|(_, tool, _)| tool.changes_files()) {
            std::thread::sleep(FILE_CHANGE_GRACE);
        }
    }

    // Progress: tool threads put each update in their call's slot and wake the agent thread,
    // which writes what the slots hold. Every update reaches stdout while the agent thread
    // keeps up (as in pi, whose first bash update is an empty one); when it falls
    // `PENDING_UPDATES` behind (a stalled stdout), the newest update replaces the last pending
    // one: an update is a snapshot (the tool's partial result so far), so the latest is what a
    // reader needs. Nothing piles up, and a tool never blocks on its progress. Each thread
    // sends one `Done`; the done channel has room for all of them.
    type Done = (usize, Result<ToolOutput, String>, u64);
    let latest: Vec<Mutex<VecDeque<Value>>> = (0..calls.len())
        .map(|_| Mutex::new(VecDeque::new()))
        .collect();
    let (wake_tx, wake_rx) = bounded::<()>(1);
    let (done_tx, done_rx) = bounded::<Done>(runnable.len().max(1));
    let emit_latest = |i: usize| {
        // Taken out of the slot first: the lock is never held while writing.
        let pending = std::mem::take(&mut *latest[i].lock());
        for partial in pending {
            rt.emit(&Event::ToolExecutionUpdate {
                tool_call_id: calls[i].id.clone(),
                tool_name: calls[i].name.clone(),
                args: calls[i].args.clone(),
                partial_result: partial,
            });
        }
    };
    let call_ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
    std::thread::scope(|scope| {
        for (i, tool, args) in &runnable {
            let done_tx = done_tx.clone();
            let done_err = done_tx.clone();
            let wake_tx = wake_tx.clone();
            let slot = &latest[*i];
            let ctx_parts = &ctx_parts;
            let call_ids = &call_ids;
            let i = *i;
            let spawned = std::thread::Builder::new()
                .name(format!("tool-{}", tool.name()))
                .spawn_scoped(scope, move || {
                    let ctx = ToolContext {
                        cwd: &ctx_parts.cwd,
                        call_id: &call_ids[i],
                        cancel,
                        shell_path: ctx_parts.shell_path.clone(),
                        shell_command_prefix: ctx_parts.shell_command_prefix.clone(),
                        env: ctx_parts.env.clone(),
                        model_supports_images: ctx_parts.model_supports_images,
                        model_id: ctx_parts.model_id.clone(),
                        temp_dir: ctx_parts.temp_dir.clone(),
                        images: ctx_parts.images,
                    };
                    let start = Instant::now();
                    let result = tool.execute(args, &ctx, &mut |partial| {
                        {
                            let mut pending = slot.lock();
                            if pending.len() == PENDING_UPDATES {
                                pending.pop_back();
                            }
                            pending.push_back(partial);
                        }
                        let _ = wake_tx.try_send(());
                    });
                    let _ = done_tx.send((i, result, start.elapsed().as_millis() as u64));
                });
            if let Err(e) = spawned {
                let _ = done_err.send((i, Err(format!("cannot start the tool thread: {e}")), 0));
            }
        }
        drop(done_tx);
        drop(wake_tx);
        let mut running = runnable.len();
        while running > 0 {
            crossbeam_channel::select! {
                recv(wake_rx) -> _ => (0..calls.len()).for_each(emit_latest),
                recv(done_rx) -> msg => {
                    // Disconnected: every tool thread is gone (a panicking one sent nothing).
                    let Ok((i, result, ms)) = msg else { break };
                    running -= 1;
                    // The call's last progress, if still pending, comes before its end.
                    emit_latest(i);
                    let mut f = match result {
                        Ok(out) => output_finished(out, ms),
                        Err(text) => error_finished(&text, Some(ms)),
                    };
                    if rt.ext.wants("tool_result") {
                        patch_result(rt, &calls[i].id, &calls[i].name, &runnable_args(&runnable, i), &mut f, cancel);
                    }
                    rt.emit(&Event::ToolExecutionEnd {
                        tool_call_id: calls[i].id.clone(),
                        tool_name: calls[i].name.clone(),
                        result: f.result.clone(),
                        is_error: f.is_error,
                        duration_ms: f.duration_ms,
                    });
                    finished[i] = Some(f);
                }
            }
        }
    });

    calls
        .iter()
        .zip(finished)
        .map(|(call, f)| {
            let f = f.unwrap_or_else(|| error_finished("Tool execution did not finish", None));
            let message = ToolResultMessage {
                tool_call_id: &call.id,
                tool_name: &call.name,
                content: f.content,
                details: f.details,
                is_error: f.is_error,
                duration_ms: f.duration_ms,
                timestamp: now_ms(),
            };
            ToolCallOutcome {
                message: message.to_value(),
                rewritten_arguments: call.rewritten.then(|| call.args.clone()),
                terminate: f.terminate,
            }
        })
        .collect()
}
