//! Compaction on the agent thread (`agent-loop.md` §7.2–§7.4): the manual `compact` command,
//! automatic compaction (threshold, overflow recovery) and the checks that decide on it. Events
//! go out in order through the runtime's output; the session lock is never held across the
//! summarization requests.

use serde_json::Value;

use super::runtime::Runtime;
use crate::cancel::CancelToken;
use crate::compaction::cut::{prepare, Preparation, Unprepared};
use crate::compaction::estimate::{current_system_message, estimate_context, estimate_tokens};
use crate::compaction::summarize::{RetryEvent, Summarizer, SummaryError};
use crate::compaction::tokens::{
    assistant_entry, context_tokens, context_usage_tokens_quick, latest_compaction,
};
use crate::llm::errors::{is_overflow_by_usage, is_overflow_error, is_recoverable_length};
use crate::llm::types::{AssistantMessage, CacheRetention, StopReason, StreamOptions};
use crate::llm::Role;
use crate::llm::ThinkingLevel;
use crate::protocol::data::{to_value, CompactionResult};
use crate::protocol::event::CompactionReason;
use crate::protocol::{Event, Response};
use crate::session::projection::{context_edits, projected_entries};
use crate::session::EntryKind;

/// Why a compaction did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Failure {
    /// Aborted (`abort`, a newer `compact`, shutdown).
    Cancelled,
    /// The message after `Compaction failed: ` (and the `compact` response's error).
    Failed(String),
}

impl From<Unprepared> for Failure {
    fn from(u: Unprepared) -> Failure {
        Failure::Failed(u.to_string())
    }
}

const OVERFLOW_RETRY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";
const LENGTH_RETRY_FAILED: &str =
    "Truncated response recovery failed after one compact-and-retry attempt.";

fn emit(rt: &Runtime, e: Event) {
    rt.out.event(&e);
}

fn end_event(
    reason: CompactionReason,
    outcome: &Result<Value, Failure>,
    will_retry: bool,
) -> Event {
    let prefix = match reason {
        CompactionReason::Manual => "Compaction failed",
        CompactionReason::Threshold => "Auto-compaction failed",
        CompactionReason::Overflow => "Context overflow recovery failed",
    };
    match outcome {
        Ok(result) => Event::CompactionEnd {
            reason,
            result: Some(result.clone()),
            aborted: false,
            will_retry,
            error_message: None,
        },
        Err(Failure::Cancelled) => Event::CompactionEnd {
            reason,
            result: None,
            aborted: true,
            will_retry: false,
            error_message: None,
        },
        Err(Failure::Failed(m)) => Event::CompactionEnd {
            reason,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some(format!("{prefix}: {m}")),
        },
    }
}

/// Summarizes with the current model, appends the `compaction` entry and rebuilds the context.
/// Returns the CompactionResult (`summary, firstKeptEntryId, tokensBefore, estimatedTokensAfter,
/// usage, details`).
fn execute(
    rt: &Runtime,
    reason: CompactionReason,
    prep: &Preparation,
    custom_instructions: Option<&str>,
    cancel: &CancelToken,
) -> Result<Value, Failure> {
    if cancel.is_cancelled() {
        return Err(Failure::Cancelled);
    }
    // `session_before_compact` (extensions.md §A4): cancel, or a summary of the extension's.
    let from_extension = match before_compact(rt, reason, prep, custom_instructions, cancel) {
        Hook::Cancel => return Err(Failure::Cancelled),
        Hook::Compaction(c) => Some(c),
        Hook::Default => None,
    };
    if let Some(c) = from_extension {
        return record(rt, reason, c, true, cancel);
    }
    let (mut model, mut options, retry, registry) = {
        let s = rt.state.lock();
        if !s.registry.has_credentials(&s.model.provider) {
            return Err(Failure::Failed(format!(
                "No API key found for {}.\n\n{}",
                s.model.provider,
                crate::agent::prompting::login_help()
            )));
        }
        let thinking_level = if s.model.reasoning && s.thinking_level != ThinkingLevel::Off {
            s.thinking_level
        } else {
            ThinkingLevel::Off
        };
        let options = StreamOptions {
            api_key: None,
            thinking_level,
            thinking_budgets: s.settings.thinking_budgets(),
            max_tokens: None,
            cache_retention: CacheRetention::None,
            idle_timeout: std::time::Duration::from_millis(s.settings.http_idle_timeout_ms()),
            headers: Vec::new(),
            session_id: Some(uuid::Uuid::now_v7().to_string()),
            env: Vec::new(),
        };
        (
            s.model.clone(),
            options,
            s.settings.retry(),
            std::sync::Arc::clone(&s.registry),
        )
    };
    // Outside the lock: a `!command` key or header runs a shell command.
    let auth = registry
        .request_auth(&model)
        .map_err(|e| Failure::Failed(e.to_string()))?;
    options.api_key = auth.api_key;
    options.headers = auth.headers;
    options.env = auth.env;
    if let Some(url) = auth.base_url {
        model.base_url = url;
    }
    let on_event = |e: RetryEvent| {
        let event = match e {
            RetryEvent::Scheduled {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => Event::SummarizationRetryScheduled {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            },
            RetryEvent::AttemptStart => Event::SummarizationRetryAttemptStart {
                source: "compaction".into(),
                reason: Some(reason),
            },
            RetryEvent::Finished => Event::SummarizationRetryFinished,
        };
        rt.out.event(&event);
    };
    let summarizer = Summarizer {
        model: &model,
        options,
        retry,
        cancel,
        on_event: &on_event,
    };
    let (summary, usage, details) =
        summarizer
            .compact(prep, custom_instructions)
            .map_err(|e| match e {
                SummaryError::Cancelled => Failure::Cancelled,
                SummaryError::Failed(m) => Failure::Failed(m),
            })?;

    let summary = Summary {
        summary,
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: prep.tokens_before,
        usage: Some(usage),
        details: Some(details),
    };
    record(rt, reason, summary, false, cancel)
}

/// A compaction's content: the summarizer's, or an extension's (`fromExtension`).
struct Summary {
    summary: String,
    first_kept_entry_id: String,
    tokens_before: u64,
    usage: Option<Value>,
    details: Option<Value>,
}

/// What `session_before_compact` handlers decided.
enum Hook {
    Default,
    Cancel,
    Compaction(Summary),
}

fn before_compact(
    rt: &Runtime,
    reason: CompactionReason,
    prep: &Preparation,
    custom_instructions: Option<&str>,
    cancel: &CancelToken,
) -> Hook {
    if !rt.ext.wants("session_before_compact") {
        return Hook::Default;
    }
    let branch: Vec<Value> = rt
        .state
        .lock()
        .session
        .branch()
        .iter()
        .map(|e| e.to_value())
        .collect();
    let mut preparation = serde_json::json!({
        "firstKeptEntryId": prep.first_kept_entry_id,
        "messagesToSummarize": prep.messages_to_summarize,
        "turnPrefixMessages": prep.turn_prefix_messages,
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": prep.tokens_before,
    });
    if let Some(p) = &prep.previous_summary {
        preparation["previousSummary"] = p.clone().into();
    }
    let mut payload = serde_json::json!({
        "type": "session_before_compact",
        "preparation": preparation,
        "branchEntries": branch,
    });
    if let Some(c) = custom_instructions {
        payload["customInstructions"] = c.into();
    }
    payload["reason"] = to_value(&reason);
    payload["willRetry"] = (reason == CompactionReason::Overflow).into();
    let results = rt.ext.emit_until_cancel(&payload, Some(cancel));
    let Some(last) = results.last() else {
        return Hook::Default;
    };
    if last.get("cancel").is_some_and(crate::js::value::js_truthy) {
        return Hook::Cancel;
    }
    match last.get("compaction") {
        Some(c) if c.get("summary").is_some_and(Value::is_string) => Hook::Compaction(Summary {
            summary: c["summary"].as_str().unwrap_or_default().to_string(),
            first_kept_entry_id: c
                .get("firstKeptEntryId")
                .and_then(Value::as_str)
                .unwrap_or(&prep.first_kept_entry_id)
                .to_string(),
            tokens_before: c
                .get("tokensBefore")
                .and_then(Value::as_u64)
                .unwrap_or(prep.tokens_before),
            usage: c.get("usage").cloned(),
            details: c.get("details").cloned(),
        }),
        _ => Hook::Default,
    }
}

/// Appends the `compaction` entry, rebuilds the context, tells `session_compact` handlers, and
/// returns the CompactionResult.
fn record(
    rt: &Runtime,
    reason: CompactionReason,
    c: Summary,
    from_extension: bool,
    cancel: &CancelToken,
) -> Result<Value, Failure> {
    let mut s = rt.state.lock();
    if cancel.is_cancelled() {
        return Err(Failure::Cancelled);
    }
    // The checkpoint: the system prompt and tools declared so far, replayed into one message.
    let system_message = current_system_message(&s.messages.system_messages(), None);
    let entry = s
        .session
        .append_compaction(
            &c.summary,
            Some(&c.first_kept_entry_id),
            c.tokens_before,
            c.details.clone(),
            c.usage.clone(),
            from_extension,
            system_message,
        )
        .map_err(|e| Failure::Failed(e.to_string()))?;
    s.rebuild_messages();
    let estimated_after: u64 = s.messages.iter().map(|m| estimate_tokens(&m)).sum();
    drop(s);
    if rt.ext.wants("session_compact") {
        let mut payload = serde_json::json!({
            "type": "session_compact",
            "compactionEntry": entry.to_value(),
            "fromExtension": from_extension,
        });
        payload["reason"] = to_value(&reason);
        payload["willRetry"] = (reason == CompactionReason::Overflow).into();
        rt.ext.emit(&payload, None);
    }

    Ok(to_value(&CompactionResult {
        summary: c.summary,
        first_kept_entry_id: c.first_kept_entry_id,
        tokens_before: c.tokens_before,
        estimated_tokens_after: estimated_after,
        usage: c.usage,
        details: c.details,
    }))
}

/// The preparation for the current branch with the current model's `keepRecentTokens`.
fn prepare_now(rt: &Runtime) -> Result<Preparation, Failure> {
    let s = rt.state.lock();
    let keep = s
        .settings
        .compaction_keep_recent_tokens(Some(&s.model.key()));
    let branch = s.session.branch();
    Ok(prepare(&branch, keep)?)
}

/// The `compact` command, on the agent thread after the run it aborted has settled:
/// `compaction_start{manual}` … `compaction_end`, then the response, then any `abort` waiting
/// for it. Never continues the interrupted run.
pub fn manual(
    rt: &Runtime,
    reply: super::runtime::JobReply,
    custom_instructions: Option<String>,
    cancel: CancelToken,
) {
    // Shutdown cancels the run token: let it reach this compaction too.
    rt.state.lock().life.manual_compaction_running(&cancel);
    emit(
        rt,
        Event::CompactionStart {
            reason: CompactionReason::Manual,
        },
    );
    let outcome = (|| {
        let no_model = rt.state.lock().model.is_placeholder();
        if no_model {
            return Err(Failure::Failed(format!(
                "No model selected.\n\n{}\n\nThen use /model to select a model.",
                crate::agent::prompting::login_help()
            )));
        }
        let prep = prepare_now(rt)?;
        execute(
            rt,
            CompactionReason::Manual,
            &prep,
            custom_instructions.as_deref(),
            &cancel,
        )
    })();
    let waiters = rt.state.lock().life.end_manual_compaction();
    emit(rt, end_event(CompactionReason::Manual, &outcome, false));
    let result = match outcome {
        Ok(result) => Ok(result),
        Err(Failure::Cancelled) => Err("Compaction cancelled".to_string()),
        Err(Failure::Failed(m)) => Err(m),
    };
    reply.answer(&rt.out, "compact", result);
    for w in waiters {
        rt.out.response(&Response::ok(w, "abort", None));
    }
}

/// pi's `_runAutoCompaction`: silent when there is nothing to compact; otherwise
/// `compaction_start` … `compaction_end`. True when the run should continue (overflow recovery
/// that will retry, or messages queued meanwhile).
pub fn auto(
    rt: &Runtime,
    reason: CompactionReason,
    will_retry: bool,
    cancel: &CancelToken,
) -> bool {
    if rt.state.lock().model.is_placeholder() {
        return false;
    }
    let Ok(prep) = prepare_now(rt) else {
        return false;
    };
    rt.state.lock().life.begin_auto_compaction();
    emit(rt, Event::CompactionStart { reason });
    let outcome = execute(rt, reason, &prep, None, cancel);
    let queued = {
        let mut s = rt.state.lock();
        s.life.end_auto_compaction();
        !s.queues.is_empty()
    };
    emit(rt, end_event(reason, &outcome, will_retry));
    match outcome {
        Ok(_) => will_retry || queued,
        Err(_) => false,
    }
}

/// Where [`check_compaction`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckPoint {
    /// After a session-level run's last assistant message: an aborted reply is not checked.
    AfterRun,
    /// Before a prompt's run: the last assistant message is checked even when it was aborted.
    BeforePrompt,
}

/// What [`check_compaction`] decided (under the lock; acted on after it).
enum Decision {
    None,
    Auto(CompactionReason, bool),
    AlreadyAttempted { overflow: bool },
    Recover,
}

/// pi's `_checkCompaction` after a session-level run's last assistant message (and before a
/// prompt, see [`CheckPoint`]): overflow recovery or threshold compaction. True when
/// the run should continue (retry the failed turn, or deliver queued messages).
pub fn check_compaction(
    rt: &Runtime,
    msg: &AssistantMessage,
    entry_id: Option<&str>,
    at: CheckPoint,
    cancel: &CancelToken,
) -> bool {
    let decision = decide(rt, msg, entry_id, at);
    match decision {
        Decision::None => false,
        Decision::Auto(reason, will_retry) => auto(rt, reason, will_retry, cancel),
        Decision::AlreadyAttempted { overflow } => {
            emit(
                rt,
                Event::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(
                        if overflow {
                            OVERFLOW_RETRY_FAILED
                        } else {
                            LENGTH_RETRY_FAILED
                        }
                        .into(),
                    ),
                },
            );
            false
        }
        Decision::Recover => {
            rt.state.lock().life.mark_overflow_recovery();
            omit_attempt(rt, msg, entry_id);
            auto(rt, CompactionReason::Overflow, true, cancel)
        }
    }
}

fn decide(
    rt: &Runtime,
    msg: &AssistantMessage,
    entry_id: Option<&str>,
    at: CheckPoint,
) -> Decision {
    // The error-text scan runs before the lock: the processor answers `get_state` from the same
    // state meanwhile.
    let overflow_text = is_overflow_error(msg);
    let s = rt.state.lock();
    if !s.auto.compaction || s.model.is_placeholder() {
        return Decision::None;
    }
    if at == CheckPoint::AfterRun && msg.stop_reason == StopReason::Aborted {
        return Decision::None;
    }
    let same_model = msg.provider == s.model.provider && msg.model == s.model.id;
    let window = s.model.context_window;
    let branch = s.session.branch();
    let compaction_index = latest_compaction(&branch);
    let compaction_ms =
        compaction_index.and_then(|ci| crate::util::ms_from_iso(branch[ci].timestamp()));
    // A reply older than the latest compaction says nothing about the compacted context. Its
    // place on the branch decides when it is known (a retry can start in the compaction's
    // millisecond), else its time (pi compares times).
    let entry_index = entry_id.and_then(|id| branch.iter().position(|e| e.id() == id));
    let before_compaction = match (entry_index, compaction_index) {
        (Some(i), Some(ci)) => i < ci,
        _ => compaction_ms.is_some_and(|c| msg.timestamp <= c),
    };
    if before_compaction {
        return Decision::None;
    }

    let projected = projected_entries(&branch);
    let edits = context_edits(&projected);
    let assistant_projected = match entry_id {
        None => true,
        Some(id) => {
            projected.iter().any(|e| e.id() == id) && !matches!(edits.get(id), Some(Value::Null))
        }
    };
    let after: &[&crate::session::Entry] = match entry_index {
        Some(i) => &branch[i + 1..],
        None => &[],
    };
    let post_edit = after.iter().any(|e| *e.kind() == EntryKind::ContextEdit);
    let latest_edit = entry_id.and_then(|id| {
        after.iter().rev().find(|e| {
            *e.kind() == EntryKind::ContextEdit && e.get_str("targetId").as_deref() == Some(id)
        })
    });
    let retained = entry_id.is_none()
        || (!after.iter().any(|e| *e.kind() == EntryKind::Compaction)
            && !latest_edit.is_some_and(|e| matches!(e.get("replacement"), Some(Value::Null))));
    let usage_matches_projection = assistant_projected && !post_edit;
    // `is_context_overflow(msg, window)`, with its text half computed above.
    let overflow = same_model
        && ((overflow_text && retained)
            || (usage_matches_projection && (overflow_text || is_overflow_by_usage(msg, window))));
    let recoverable_length =
        same_model && assistant_projected && is_recoverable_length(msg, s.model.max_tokens);
    if overflow || recoverable_length {
        if msg.stop_reason == StopReason::Stop {
            // A complete reply that overflowed: compact, but nothing to retry.
            return Decision::Auto(CompactionReason::Overflow, false);
        }
        if s.life.overflow_recovery_attempted() {
            return Decision::AlreadyAttempted { overflow };
        }
        return Decision::Recover;
    }

    // Threshold.
    let has_edits = projected
        .iter()
        .any(|e| *e.kind() == EntryKind::ContextEdit);
    let direct = if msg.usage.total_tokens > 0 {
        msg.usage.total_tokens
    } else {
        msg.usage.sum_tokens()
    };
    let tokens = if has_edits {
        context_tokens(&branch, &s.messages.to_vec())
    } else if msg.stop_reason == StopReason::Error || direct == 0 {
        let messages = s.messages.to_vec();
        let estimate = estimate_context(&messages);
        if let (Some(i), Some(c)) = (estimate.last_usage_index, compaction_ms) {
            let stale = messages[i]
                .get("timestamp")
                .and_then(Value::as_u64)
                .is_some_and(|t| t <= c);
            if stale {
                return Decision::None;
            }
        }
        estimate.tokens
    } else {
        direct
    };
    if exceeds_threshold(&s, tokens) {
        Decision::Auto(CompactionReason::Threshold, false)
    } else {
        Decision::None
    }
}

/// `contextTokens > contextWindow - reserveTokens` with the current model's settings.
fn exceeds_threshold(s: &crate::agent::AgentSession, tokens: u64) -> bool {
    let reserve = s.settings.compaction_reserve_tokens(Some(&s.model.key()));
    i128::from(tokens) > i128::from(s.model.context_window) - i128::from(reserve)
}

/// Hides a failed attempt before overflow recovery: a `context_edit` for the assistant message
/// and each of its tool results, with `entry_appended` for each.
fn omit_attempt(rt: &Runtime, msg: &AssistantMessage, entry_id: Option<&str>) {
    let call_ids: Vec<String> = msg
        .tool_calls()
        .filter_map(|b| match b {
            crate::llm::types::ContentBlock::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    let mut s = rt.state.lock();
    let mut targets: Vec<String> = Vec::new();
    if let Some(id) = entry_id {
        targets.push(id.to_string());
        let branch = s.session.branch();
        if let Some(i) = branch.iter().position(|e| e.id() == id) {
            for e in &branch[i + 1..] {
                match e.role() {
                    Some(Role::Assistant) => break,
                    Some(Role::ToolResult) => {
                        let call = e.message().and_then(|m| {
                            m.get("toolCallId")
                                .and_then(Value::as_str)
                                .map(String::from)
                        });
                        if call.is_some_and(|c| call_ids.contains(&c)) {
                            targets.push(e.id().to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let mut appended = Vec::new();
    for t in targets {
        match s.session.append_context_edit(&t, None) {
            Ok(e) => appended.push(e.to_value()),
            Err(e) => eprintln!("pi-rpc: {e}"),
        }
    }
    s.rebuild_messages();
    drop(s);
    for entry in appended {
        emit(rt, Event::EntryAppended { entry });
    }
}

/// Before each later turn of a run (pi's `_compactBeforeNextAssistantResponse`): threshold
/// compaction when the projected context has grown past the threshold.
pub fn before_next_turn(rt: &Runtime, cancel: &CancelToken) {
    let exceeds = {
        let s = rt.state.lock();
        if !s.auto.compaction || s.model.is_placeholder() || s.model.context_window == 0 {
            false
        } else {
            let tokens = context_usage_tokens_quick(&s.session, &s.messages)
                .unwrap_or_else(|| context_tokens(&s.session.branch(), &s.messages.to_vec()));
            exceeds_threshold(&s, tokens)
        }
    };
    if exceeds {
        auto(rt, CompactionReason::Threshold, false, cancel);
    }
}

/// Before a prompt's run (pi's `_prepareRun`): the check on the last assistant message, aborted
/// ones included.
pub fn before_prompt(rt: &Runtime, cancel: &CancelToken) {
    let found = {
        let s = rt.state.lock();
        let found = s
            .messages
            .iter()
            .rev()
            .find(|m| Role::of(m) == Some(Role::Assistant))
            .and_then(|v| {
                let msg = AssistantMessage::from_value(&v)?;
                let branch = s.session.branch();
                let id = assistant_entry(&branch, msg.timestamp).map(|e| e.id().to_string());
                Some((msg, id))
            });
        found
    };
    if let Some((msg, id)) = found {
        check_compaction(rt, &msg, id.as_deref(), CheckPoint::BeforePrompt, cancel);
    }
}
