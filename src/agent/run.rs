//! The agent loop (`agent-loop.md` §1–§6): a session-level run made of low-level runs, each a
//! sequence of turns (LLM request → streamed reply → tool calls → tool results), with steering
//! and follow-up delivery, abort, and auto-retry.
//!
//! It runs on the agent thread. The LLM stream runs on its own thread per request and sends its
//! updates here over a bounded channel; tool calls run concurrently on scoped threads. Shared
//! state is locked briefly; events are written in order through the [`Output`].

use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::Value;

use super::queue::QueueKind;
use super::runtime::{PromptReply, Runtime};
use super::tools_exec::{execute_tool_calls, ToolCallOutcome};
use crate::cancel::CancelToken;
use crate::llm::errors::{is_context_overflow, is_retryable};
use crate::llm::Role;
use crate::llm::{stream::StreamUpdate, wire::stream_assistant};

use crate::llm::types::{AssistantMessage, ContentBlock, StopReason, Usage};
use crate::protocol::{Event, Response};
use crate::util::now_ms;

/// Per-run retry bookkeeping.
#[derive(Default)]
struct RetryState {
    attempt: u32,
}

/// A low-level run's outcome.
struct LowLevel {
    last_assistant: Option<AssistantMessage>,
    /// Entry ids of the last assistant message and its tool results (hidden on retry).
    last_entry_ids: Vec<String>,
    /// Entry id of the last assistant message.
    last_assistant_id: Option<String>,
}

fn emit(rt: &Runtime, e: Event) {
    rt.emit(&e);
}

/// `message_end`: extensions may replace the message with one of the same role (§A4); the
/// replacement is what the wire shows and what is stored.
fn emit_message_end(rt: &Runtime, message: Value) -> Value {
    let message = if rt.ext.wants("message_end") {
        let cancel = rt.state.lock().life.run_cancel();
        rt.ext
            .message_end(&message, Some(&cancel))
            .unwrap_or(message)
    } else {
        message
    };
    rt.out.event(&Event::MessageEnd {
        message: message.clone(),
    });
    message
}

/// `turn_start`; extensions also get the turn's index in the low-level run and its time.
fn emit_turn_start(rt: &Runtime, turn_index: &mut u64) {
    let mut extra = serde_json::Map::new();
    extra.insert("turnIndex".into(), (*turn_index).into());
    extra.insert("timestamp".into(), now_ms().into());
    *turn_index += 1;
    rt.observe(&Event::TurnStart, Some(extra));
    rt.out.event(&Event::TurnStart);
}

/// Appends a message to the session and the context (at its `message_end`).
fn record_message(rt: &Runtime, msg: &Value) -> Option<String> {
    let mut s = rt.state.lock();
    s.messages.push(msg.clone());
    let appended = if Role::of(msg) == Some(Role::Custom) {
        // An extension's message is a `custom_message` entry, as pi stores it.
        s.session.append_custom_message(
            msg.get("customType")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            msg.get("content").cloned().unwrap_or(Value::Null),
            msg.get("display").and_then(Value::as_bool).unwrap_or(true),
            msg.get("details").cloned(),
        )
    } else {
        s.session.append_message(msg.clone())
    };
    match appended {
        Ok(entry) => Some(entry.id().to_string()),
        Err(e) => {
            eprintln!("pi-rpc: {e}");
            None
        }
    }
}

/// `message_start` + `message_end` of a non-assistant message, then recorded.
fn emit_whole_message(rt: &Runtime, msg: Value, run_messages: &mut Vec<Value>) -> Option<String> {
    if Role::of(&msg) == Some(Role::User) {
        // A new user message allows another overflow recovery (agent-loop.md §7.3).
        rt.state.lock().life.reset_overflow_recovery();
    }
    emit(
        rt,
        Event::MessageStart {
            message: msg.clone(),
        },
    );
    let msg = emit_message_end(rt, msg);
    run_messages.push(msg.clone());
    record_message(rt, &msg)
}

/// One session-level run: low-level runs until nothing continues it, then `agent_settled`.
///
/// `reply` is set for an RPC `prompt`: its `started` response (with the command's id) is the
/// run's first record, after a pre-prompt compaction (whose events pi writes before the
/// response) and before `agent_start`. Print modes pass `None`.
pub fn run_session(rt: &Runtime, reply: Option<PromptReply>, mut user_message: Value) {
    let cancel = rt.state.lock().life.run_cancel();
    // Compact first when the context is already too big (agent-loop.md §7.2).
    if !cancel.is_cancelled() {
        super::compaction::before_prompt(rt, &cancel);
    }
    // Prompt images are resized here, on the agent thread, with the model's limits after any
    // compaction, before the `started` response (pi's `_prepareRun`).
    let image_options = rt.state.lock().image_options();
    crate::image::normalize_message_images(&mut user_message, &image_options);
    let injected = super::ext_hooks::before_agent_start(rt, &user_message, &cancel);
    if let Some(PromptReply(id)) = reply {
        rt.out.response(&Response::ok(
            id,
            "prompt",
            Some(serde_json::json!({ "disposition": "started" })),
        ));
    }
    let mut initial = prepare_initial(rt, user_message);
    initial.extend(injected);
    let mut retry = RetryState::default();
    loop {
        let ll = low_level_run(rt, std::mem::take(&mut initial), &cancel, &mut retry);
        if cancel.is_cancelled() {
            break;
        }
        let Some(last) = ll.last_assistant else { break };
        if last.stop_reason == StopReason::Error {
            let (enabled, settings) = {
                let s = rt.state.lock();
                (s.auto.retry, s.settings.retry())
            };
            let window = rt.state.lock().model.context_window;
            if enabled && is_retryable(&last, window) && retry.attempt < settings.max_retries {
                retry.attempt += 1;
                let delay = settings
                    .base_delay_ms
                    .saturating_mul(1u64 << (retry.attempt - 1).min(30))
                    .min(settings.max_agent_delay_ms);
                emit(
                    rt,
                    Event::AutoRetryStart {
                        attempt: retry.attempt,
                        max_attempts: settings.max_retries,
                        delay_ms: delay,
                        error_message: last
                            .error_message
                            .clone()
                            .unwrap_or_else(|| "Unknown error".into()),
                    },
                );
                hide_entries(rt, &ll.last_entry_ids);
                if !retry_sleep(rt, delay, &cancel) {
                    emit(
                        rt,
                        Event::AutoRetryEnd {
                            success: false,
                            attempt: retry.attempt,
                            final_error: Some("Retry cancelled".into()),
                        },
                    );
                    answer_abort_retry_waiters(rt);
                    break;
                }
                continue;
            }
            if retry.attempt > 0 {
                emit(
                    rt,
                    Event::AutoRetryEnd {
                        success: false,
                        attempt: retry.attempt,
                        final_error: last.error_message.clone(),
                    },
                );
                retry.attempt = 0;
            }
        }
        if last.stop_reason == StopReason::Aborted {
            break;
        }
        // Overflow recovery or threshold compaction (agent-loop.md §7.2–§7.3); true when the
        // failed turn is retried or queued messages wait.
        if super::compaction::check_compaction(
            rt,
            &last,
            ll.last_assistant_id.as_deref(),
            super::compaction::CheckPoint::AfterRun,
            &cancel,
        ) {
            if cancel.is_cancelled() {
                break;
            }
            continue;
        }
        if last.stop_reason == StopReason::Error {
            break;
        }
        if cancel.is_cancelled() || rt.state.lock().queues.is_empty() {
            break;
        }
    }
    settle(rt, &cancel);
}

/// `agent_settled`, then the waiting `abort` responses; the run is over.
fn settle(rt: &Runtime, cancel: &CancelToken) {
    if rt.ext.wants("agent_settled") {
        // Handlers run before the wire record, without the lock (they may call back).
        let aborted = rt.state.lock().life.abort_requested() || cancel.is_cancelled();
        rt.observe(&Event::AgentSettled { aborted }, None);
    }
    let (waiters, idle) = {
        let mut s = rt.state.lock();
        s.flush_deferred();
        let aborted = s.life.abort_requested() || cancel.is_cancelled();
        let waiters = s.life.finish_run();
        // Sent under the lock, so the run's end and its announcement are one step for the
        // processor: a `get_state` or `prompt` that finds the run over is answered after
        // `agent_settled`, and one answered before it still finds the run active.
        rt.out.event(&Event::AgentSettled { aborted });
        (waiters, s.life.take_idle_waiters())
    };
    for id in waiters {
        rt.out.response(&Response::ok(id, "abort", None));
    }
    for reply in idle {
        (reply.0)(Ok(Value::Null));
    }
}

fn answer_abort_retry_waiters(rt: &Runtime) {
    let waiters = rt.state.lock().life.take_abort_retry_waiters();
    for id in waiters {
        rt.out.response(&Response::ok(id, "abort_retry", None));
    }
}

/// Sleeps before a retry; false when `abort` or `abort_retry` cut it short.
fn retry_sleep(rt: &Runtime, delay_ms: u64, run_cancel: &CancelToken) -> bool {
    let sleep_cancel = CancelToken::new();
    rt.state
        .lock()
        .life
        .set_retry_sleep(Some(sleep_cancel.clone()));
    let (tx, rx) = bounded::<()>(1);
    let tx2 = tx.clone();
    let _g1 = sleep_cancel.on_cancel(move || {
        let _ = tx.try_send(());
    });
    let _g2 = run_cancel.on_cancel(move || {
        let _ = tx2.try_send(());
    });
    let woke = rx.recv_timeout(Duration::from_millis(delay_ms)).is_ok();
    rt.state.lock().life.set_retry_sleep(None);
    !woke && !sleep_cancel.is_cancelled() && !run_cancel.is_cancelled()
}

/// Appends `context_edit` entries hiding a failed attempt, with `entry_appended` for each.
fn hide_entries(rt: &Runtime, ids: &[String]) {
    for id in ids {
        let entry = {
            let mut s = rt.state.lock();
            let entry = s.session.append_context_edit(id, None);
            s.rebuild_messages();
            entry
        };
        match entry {
            Ok(e) => emit(
                rt,
                Event::EntryAppended {
                    entry: e.to_value(),
                },
            ),
            Err(e) => eprintln!("pi-rpc: {e}"),
        }
    }
}

/// The messages that open the run: the system message when the prompt/tools are not declared
/// yet (or changed), then the user message.
fn prepare_initial(rt: &Runtime, user_message: Value) -> Vec<Value> {
    let mut s = rt.state.lock();
    // Bash executions recorded while the previous run was active come first.
    s.flush_deferred();
    let mut out = Vec::new();
    if let Some(sys) = s.system_message_if_needed() {
        out.push(sys);
    }
    out.push(user_message);
    out
}

/// How many queued messages one delivery point takes.
fn delivery_count(rt: &Runtime, queue: QueueKind) -> usize {
    rt.state.lock().queues.delivery_count(queue)
}

/// Delivers `n` queued messages: for each, `queue_update` (already without it), then its
/// message events.
fn deliver(rt: &Runtime, queue: QueueKind, n: usize, run_messages: &mut Vec<Value>) {
    for _ in 0..n {
        let msg = {
            let mut s = rt.state.lock();
            let Some(m) = s.queues.pop_front(queue) else {
                break;
            };
            let update = s.queue_update();
            // Emitted under the lock so it cannot interleave with an enqueue's queue_update.
            rt.out.event(&update);
            m
        };
        // Queued images are normalized at delivery, with the limits of the model then current.
        let mut message = msg.to_user_message();
        let image_options = rt.state.lock().image_options();
        crate::image::normalize_message_images(&mut message, &image_options);
        emit_whole_message(rt, message, run_messages);
    }
}

/// One low-level run (`agent_start` … `agent_end`).
fn low_level_run(
    rt: &Runtime,
    initial: Vec<Value>,
    cancel: &CancelToken,
    retry: &mut RetryState,
) -> LowLevel {
    emit(rt, Event::AgentStart);
    let mut turn_index = 0u64;
    emit_turn_start(rt, &mut turn_index);
    let mut run_messages: Vec<Value> = Vec::new();
    for m in initial {
        emit_whole_message(rt, m, &mut run_messages);
    }
    let mut pending_steering = delivery_count(rt, QueueKind::Steering);
    let mut pending_follow_up = 0usize;
    let mut first = true;
    let mut last: Option<AssistantMessage> = None;
    let mut last_ids: Vec<String> = Vec::new();
    let mut last_assistant_id: Option<String> = None;
    // True at the start so the first turn makes its request.
    let mut has_more_tool_calls = true;
    'outer: loop {
        while has_more_tool_calls || pending_steering > 0 || pending_follow_up > 0 {
            if !first {
                // Compact before the next request when the turn grew the context past the
                // threshold (pi's prepareNextTurn).
                if !cancel.is_cancelled() {
                    super::compaction::before_next_turn(rt, cancel);
                }
                emit_turn_start(rt, &mut turn_index);
                // Tools `tool_search` loaded are declared before the next request (mcp.md §6.3).
                if super::ext_hooks::sync_mcp(rt, false) {
                    let sys = rt.state.lock().system_message_if_needed();
                    if let Some(sys) = sys {
                        emit_whole_message(rt, sys, &mut run_messages);
                    }
                }
            }
            first = false;
            if pending_steering > 0 {
                deliver(rt, QueueKind::Steering, pending_steering, &mut run_messages);
            }
            if pending_follow_up > 0 {
                deliver(
                    rt,
                    QueueKind::FollowUp,
                    pending_follow_up,
                    &mut run_messages,
                );
                pending_follow_up = 0;
            }
            let mut assistant = stream_turn(rt, cancel, retry);
            let mut value = assistant.to_value();
            run_messages.push(value.clone());
            let run_index = run_messages.len() - 1;
            let assistant_id = record_message(rt, &value);
            last_assistant_id = assistant_id.clone();
            last_ids = assistant_id.iter().cloned().collect();
            if matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Aborted
            ) {
                emit(
                    rt,
                    Event::TurnEnd {
                        message: value,
                        tool_results: Vec::new(),
                    },
                );
                let will_retry = will_retry(rt, &assistant, cancel, retry);
                last = Some(assistant);
                emit(
                    rt,
                    Event::AgentEnd {
                        messages: run_messages,
                        will_retry,
                    },
                );
                return LowLevel {
                    last_assistant: last,
                    last_entry_ids: last_ids,
                    last_assistant_id,
                };
            }
            let calls: Vec<ContentBlock> = assistant.tool_calls().cloned().collect();
            let mut results = Vec::new();
            has_more_tool_calls = !calls.is_empty();
            if !calls.is_empty() {
                let length_stop = assistant.stop_reason == StopReason::Length;
                let mut on_rewrite = |k: usize, args: &Value| {
                    rewrite_tool_call_arguments(
                        rt,
                        &mut assistant,
                        k,
                        args,
                        assistant_id.as_deref(),
                        &mut run_messages[run_index],
                    );
                };
                let outcomes = execute_tool_calls(rt, &calls, cancel, length_stop, &mut on_rewrite);
                if outcomes.iter().any(|o| o.rewritten_arguments.is_some()) {
                    value = assistant.to_value();
                }
                // Every result of the batch asked to end the run: no further request.
                if outcomes.iter().all(|o| o.terminate) {
                    has_more_tool_calls = false;
                }
                for ToolCallOutcome { message, .. } in outcomes {
                    if let Some(id) = emit_whole_message(rt, message, &mut run_messages) {
                        last_ids.push(id);
                    }
                    // As a `message_end` handler left it (turn_end shows the replacement).
                    if let Some(m) = run_messages.last() {
                        results.push(m.clone());
                    }
                }
            }
            emit(
                rt,
                Event::TurnEnd {
                    message: value,
                    tool_results: results,
                },
            );
            last = Some(assistant);
            // Steering queued meanwhile is delivered in the next turn, also when that turn's
            // request is aborted before anything is sent.
            pending_steering = delivery_count(rt, QueueKind::Steering);
            if cancel.is_cancelled() {
                has_more_tool_calls = true;
            }
        }
        let follow = delivery_count(rt, QueueKind::FollowUp);
        if follow > 0 && !cancel.is_cancelled() {
            pending_follow_up = follow;
            continue 'outer;
        }
        break;
    }
    let will_retry = last
        .as_ref()
        .is_some_and(|a| will_retry(rt, a, cancel, retry));
    emit(
        rt,
        Event::AgentEnd {
            messages: run_messages,
            will_retry,
        },
    );
    LowLevel {
        last_assistant: last,
        last_entry_ids: last_ids,
        last_assistant_id,
    }
}

/// The `k`-th tool call of `assistant` got `args`, rewritten in place by its tool while they
/// were prepared (pi's edit tool normalizes `edits` in the tool call's own arguments object).
/// pi's run messages, agent context and in-memory session entry all hold that same message
/// object, so they show the new arguments from then on (`turn_end`, `agent_end`,
/// `get_messages`, `get_entries`, later requests); `message_end` and the session file were
/// written before and keep the original.
fn rewrite_tool_call_arguments(
    rt: &Runtime,
    assistant: &mut AssistantMessage,
    k: usize,
    args: &Value,
    entry_id: Option<&str>,
    run_copy: &mut Value,
) {
    let Some(ContentBlock::ToolCall { arguments, .. }) = assistant
        .content
        .iter_mut()
        .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
        .nth(k)
    else {
        return;
    };
    *arguments = args.clone();
    let new = assistant.to_value();
    let old = std::mem::replace(run_copy, new.clone());
    let mut s = rt.state.lock();
    // The assistant message is the context's last one while its tool calls are prepared.
    if s.messages.last().is_some_and(|m| *m == old) {
        let n = s.messages.len();
        s.messages.truncate(n - 1);
        s.messages.push(new.clone());
    } else {
        let found = s.messages.iter().rposition(|m| *m == old);
        if let Some(i) = found {
            let mut all = s.messages.to_vec();
            all[i] = new.clone();
            s.messages = all.into();
        }
    }
    if let Some(id) = entry_id {
        s.session.set_message_in_memory(id, new);
    }
}

fn will_retry(
    rt: &Runtime,
    a: &AssistantMessage,
    cancel: &CancelToken,
    retry: &RetryState,
) -> bool {
    if cancel.is_cancelled() || a.stop_reason != StopReason::Error {
        return false;
    }
    let (enabled, max_retries, window) = {
        let s = rt.state.lock();
        (
            s.auto.retry,
            s.settings.retry().max_retries,
            s.model.context_window,
        )
    };
    // The text scans run after the lock is released: the processor answers `get_state` from
    // the same state meanwhile.
    enabled
        && retry.attempt < max_retries
        && is_retryable(a, window)
        && !is_context_overflow(a, window)
}

/// One assistant response: `message_start`, `message_update`s, `message_end`.
fn stream_turn(rt: &Runtime, cancel: &CancelToken, retry: &mut RetryState) -> AssistantMessage {
    // `context` handlers (§A4) see a copy of the messages without the system ones, and may
    // replace them for this request.
    let replaced = if rt.ext.wants("context") {
        let messages: Vec<Value> = rt
            .state
            .lock()
            .messages
            .to_vec()
            .into_iter()
            .filter(|m| Role::of(m) != Some(Role::System))
            .collect();
        rt.ext.context(messages, Some(cancel))
    } else {
        None
    };
    let (mut model, inputs, registry) = {
        let s = rt.state.lock();
        (
            s.model.clone(),
            s.request_inputs(),
            std::sync::Arc::clone(&s.registry),
        )
    };
    // Converted without the lock: a long context takes a while (a second at 100k entries), and
    // `get_state`, the queue commands and the other threads keep going meanwhile.
    let (ctx, mut opts) = inputs.build(replaced);
    // Outside the lock: a `!command` key or header runs a shell command, and an OAuth token
    // due for renewal is refreshed (network and auth.json under its lock).
    let mut auth_failure: Option<String> = None;
    match request_auth_unless_aborted(&registry, &model, cancel) {
        Some(Ok(auth)) => {
            opts.api_key = auth.api_key;
            opts.headers = auth.headers;
            opts.env = auth.env;
            if let Some(url) = auth.base_url {
                model.base_url = url;
            }
        }
        // pi fails the request: "OAuth refresh failed for <provider>: <cause>".
        Some(Err(e)) if e.fails_request() => auth_failure = Some(e.to_string()),
        Some(Err(e)) => eprintln!("pi-rpc: {e}"),
        // Aborted: the check below ends the turn.
        None => {}
    }
    let started = Instant::now();
    let early_end = if cancel.is_cancelled() {
        Some((
            StopReason::Aborted,
            "This operation was aborted".to_string(),
        ))
    } else {
        auth_failure.map(|text| (StopReason::Error, text))
    };
    if let Some((stop_reason, text)) = early_end {
        let mut m = AssistantMessage::new(&model, now_ms());
        m.stop_reason = stop_reason;
        m.error_message = Some(text);
        let aborted = stop_reason == StopReason::Aborted;
        m.duration_ms = Some(if aborted {
            0
        } else {
            started.elapsed().as_millis() as u64
        });
        m.thinking_level = Some(opts.thinking_level);
        m.synthetic = aborted;
        let v = m.to_value();
        emit(rt, Event::MessageStart { message: v.clone() });
        emit_message_end(rt, v);
        return m;
    }

    enum Msg {
        /// The partial message, and where to say that `message_start` is out.
        Start(Value, Sender<()>),
        /// The `message_update` line, with the wire event and the partial message for the
        /// extensions that subscribe to it.
        Update(String, Value, Value),
    }
    // pi's `message_update` payload carries the partial message; built only for subscribers,
    // and the update then waits for them on this thread. Without subscribers the stream thread
    // writes its lines itself, once `message_start` is out.
    let partial_for_extensions = rt.ext.wants("message_update");
    let direct_out = (!partial_for_extensions).then(|| rt.out.clone());
    let (tx, rx): (Sender<Msg>, Receiver<Msg>) = bounded(256);
    let final_msg = std::thread::scope(|scope| {
        let cancel2 = cancel.clone();
        let worker = std::thread::Builder::new()
            .name("llm-stream".into())
            .spawn_scoped(scope, move || {
                // The usage of the previous delta and its wire text (reused while unchanged).
                let mut last_usage: Option<(Usage, String)> = None;
                stream_assistant(&model, &ctx, &opts, &cancel2, &mut |u| match u {
                    StreamUpdate::Start(p) => {
                        let (done, started) = bounded(1);
                        if tx.send(Msg::Start(p.to_value(), done)).is_ok() {
                            let _ = started.recv();
                        }
                    }
                    StreamUpdate::Event(p, e) => {
                        let usage = match &mut last_usage {
                            Some((u, text)) if *u == p.usage => text,
                            slot => &mut slot.insert((p.usage.clone(), usage_text(&p.usage))).1,
                        };
                        let line = Event::message_update_line(usage, |out| e.write_wire(out));
                        match &direct_out {
                            Some(out) => out.line(line),
                            None => {
                                let _ = tx.send(Msg::Update(line, e.to_wire(), p.to_value()));
                            }
                        }
                    }
                })
            });
        let mut started_emitted = false;
        match worker {
            Ok(handle) => {
                for m in rx.iter() {
                    match m {
                        Msg::Start(p, done) => {
                            started_emitted = true;
                            emit(rt, Event::MessageStart { message: p });
                            let _ = done.send(());
                        }
                        Msg::Update(line, event, message) => {
                            let payload = serde_json::json!({
                                "type": "message_update",
                                "message": message,
                                "assistantMessageEvent": event,
                            });
                            rt.ext.emit(&payload, Some(cancel));
                            rt.out.line(line);
                        }
                    }
                }
                let msg = handle.join().unwrap_or_else(|_| {
                    let mut m = AssistantMessage::new(&rt.state.lock().model, now_ms());
                    m.stop_reason = StopReason::Error;
                    m.error_message = Some("internal error: the LLM stream thread panicked".into());
                    m
                });
                (msg, started_emitted)
            }
            Err(e) => {
                let mut m = AssistantMessage::new(&rt.state.lock().model, now_ms());
                m.stop_reason = StopReason::Error;
                m.error_message = Some(format!("cannot start the LLM stream thread: {e}"));
                m.duration_ms = Some(started.elapsed().as_millis() as u64);
                (m, false)
            }
        }
    });
    let (mut msg, started_emitted) = final_msg;
    let v = msg.to_value();
    if !started_emitted {
        emit(rt, Event::MessageStart { message: v.clone() });
    }
    let ended = emit_message_end(rt, v.clone());
    if ended != v {
        // An extension's replacement is the message from here on (stored, sent next turn).
        match AssistantMessage::from_value(&ended) {
            Some(replaced) => msg = replaced,
            None => eprintln!("pi-rpc: an extension's message_end replacement was not kept"),
        }
    }
    if !matches!(msg.stop_reason, StopReason::Error | StopReason::Length) {
        rt.state.lock().life.reset_overflow_recovery();
    }
    if retry.attempt > 0 && msg.stop_reason != StopReason::Error {
        emit(
            rt,
            Event::AutoRetryEnd {
                success: true,
                attempt: retry.attempt,
                final_error: None,
            },
        );
        retry.attempt = 0;
    }
    msg
}

/// `registry.request_auth(model)` on a helper thread, so that an abort is not held up while a
/// due OAuth token waits for pi's auth.json lock or is being refreshed (pi races the credential
/// resolution with the abort signal). The refresh itself goes on and is persisted either way.
/// `None` when `cancel` fired first.
fn request_auth_unless_aborted(
    registry: &std::sync::Arc<crate::llm::ModelRegistry>,
    model: &crate::llm::Model,
    cancel: &CancelToken,
) -> Option<Result<crate::llm::registry::RequestAuth, crate::llm::auth::AuthError>> {
    let (tx, rx) = bounded(1);
    let (cancel_tx, cancel_rx) = bounded::<()>(1);
    let _hook = cancel.on_cancel(move || {
        let _ = cancel_tx.try_send(());
    });
    let worker_registry = std::sync::Arc::clone(registry);
    let worker_model = model.clone();
    let spawned = std::thread::Builder::new()
        .name("request-auth".into())
        .spawn(move || {
            let _ = tx.send(worker_registry.request_auth(&worker_model));
        });
    if spawned.is_err() {
        return Some(registry.request_auth(model));
    }
    crossbeam_channel::select! {
        recv(rx) -> r => r.ok(),
        recv(cancel_rx) -> _ => None,
    }
}

/// The usage's wire text in a `message_update` (`null` if it could not be serialized).
fn usage_text(usage: &Usage) -> String {
    crate::js::json::to_js_string(usage).unwrap_or_else(|_| "null".to_owned())
}
