//! The summarization requests (`agent-loop.md` §7.4 step 4): the prompts (our own wording, pi's
//! structure; the conversation, previous-summary and `Additional focus:` parts are exact), one
//! LLM call per summary with the summarization retry loop, and the merged result.

use std::time::Duration;

use crossbeam_channel::bounded;
use serde_json::{Map, Value};

use super::cut::Preparation;
use super::serialize::{format_file_operations, serialize_conversation};
use crate::cancel::CancelToken;
use crate::js::number::js_value;
use crate::llm::errors::is_retryable_text;
use crate::llm::types::{
    AssistantMessage, ContentBlock, LlmContext, LlmMessage, StopReason, StreamOptions, Usage,
};
use crate::llm::wire::stream_assistant;
use crate::llm::Model;
use crate::resources::settings::RetrySettings;
use crate::util::now_ms;

/// The system prompt of every summarization request.
pub const SYSTEM_PROMPT: &str = "You are a context summarization assistant. You will be given a conversation between a user and an AI coding assistant; write a structured summary of it in the format the request asks for.\n\nDo not continue the conversation and do not answer any question in it. Reply with the summary only.";

/// Instructions for a first summary (pi's section structure).
const INITIAL_INSTRUCTIONS: &str = "Summarize the conversation above as a checkpoint that another LLM will use to pick up the work where it stopped.

Use EXACTLY this structure:

## Goal
[What the user wants to achieve; list several goals if the session covered several tasks.]

## Constraints & Preferences
- [Constraints, preferences or requirements the user stated]
- [Or \"(none)\" if there were none]

## Progress
### Done
- [x] [Finished tasks or changes]

### In Progress
- [ ] [Work under way]

### Blocked
- [What prevents progress, if anything]

## Key Decisions
- **[Decision]**: [Short reason]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, examples or references needed to continue]
- [Or \"(none)\" if nothing applies]

Keep every section short. Keep exact file paths, function names and error messages.";

/// Instructions for updating a previous summary with newer messages.
const UPDATE_INSTRUCTIONS: &str = "The conversation above holds NEW messages. Merge them into the existing summary given in <previous-summary> tags.

Rules:
- KEEP everything from the previous summary that still holds
- ADD the new progress, decisions and context
- MOVE items from \"In Progress\" to \"Done\" once they are finished
- REWRITE \"Next Steps\" to match where the work now stands
- KEEP exact file paths, function names and error messages
- Drop only what is clearly no longer relevant

Use EXACTLY this structure:

## Goal
[The existing goals, plus new ones if the task grew]

## Constraints & Preferences
- [The existing ones, plus any new ones]

## Progress
### Done
- [x] [Earlier finished items AND newly finished ones]

### In Progress
- [ ] [Work under way, updated]

### Blocked
- [Current blockers; remove resolved ones]

## Key Decisions
- **[Decision]**: [Short reason] (keep earlier ones, add new ones)

## Next Steps
1. [Updated to the current state]

## Critical Context
- [Important context, old and new]

Keep every section short. Keep exact file paths, function names and error messages.";

/// Instructions for the beginning of a turn cut in two.
const TURN_PREFIX_INSTRUCTIONS: &str = "The conversation above is the beginning of a turn whose later messages are kept separately; they do not need to be reconstructed.

Write a short checkpoint of what the user asked for and what happened so far in this part, so that the later messages make sense after it.

## Original Request
[What the user asked for]

## Progress So Far
- [Decisions made and work done in these messages]

## Context Needed to Continue
- [What from these messages the later work depends on]

Summarize only what is stated above; do not guess at or invent the later messages.";

/// The user text of a history summary request.
pub fn history_prompt(
    messages: &[Value],
    previous_summary: Option<&str>,
    custom_instructions: Option<&str>,
) -> String {
    let mut text = format!(
        "<conversation>\n{}\n</conversation>\n\n",
        serialize_conversation(messages)
    );
    if let Some(prev) = previous_summary {
        text.push_str(&format!(
            "<previous-summary>\n{prev}\n</previous-summary>\n\n"
        ));
    }
    text.push_str(if previous_summary.is_some() {
        UPDATE_INSTRUCTIONS
    } else {
        INITIAL_INSTRUCTIONS
    });
    if let Some(focus) = custom_instructions.filter(|c| !c.is_empty()) {
        text.push_str(&format!("\n\nAdditional focus: {focus}"));
    }
    text
}

/// The user text of a turn-prefix summary request.
pub fn turn_prefix_prompt(messages: &[Value], custom_instructions: Option<&str>) -> String {
    let mut text = format!(
        "# Conversation\n{}\n\n# Instructions\n{TURN_PREFIX_INSTRUCTIONS}",
        serialize_conversation(messages)
    );
    if let Some(focus) = custom_instructions.filter(|c| !c.is_empty()) {
        text.push_str(&format!("\n\nAdditional focus: {focus}"));
    }
    text
}

/// A summarization event for the wire (`summarization_retry_*`).
#[derive(Clone, Debug, PartialEq)]
pub enum RetryEvent {
    Scheduled {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AttemptStart,
    Finished,
}

/// Why a summary could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryError {
    Cancelled,
    Failed(String),
}

/// Everything a summarization call needs besides the prompt.
pub struct Summarizer<'a> {
    pub model: &'a Model,
    /// Auth, thinking level (already `off` for non-reasoning models), budgets, timeout.
    pub options: StreamOptions,
    pub retry: RetrySettings,
    pub cancel: &'a CancelToken,
    pub on_event: &'a (dyn Fn(RetryEvent) + Sync),
}

/// A summary's text and its usage.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub text: String,
    pub usage: Usage,
}

impl Summarizer<'_> {
    /// One request: the summarization system prompt, one user message, no tools, no caching.
    fn request(&self, prompt: &str) -> AssistantMessage {
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: SYSTEM_PROMPT.to_string(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text(prompt.to_string())],
                timestamp: now_ms(),
                as_string: false,
            }],
            tools: Vec::new(),
        };
        stream_assistant(self.model, &ctx, &self.options, self.cancel, &mut |_| {})
    }

    /// Sleeps before a retry; false when cancelled.
    fn sleep(&self, delay_ms: u64) -> bool {
        let (tx, rx) = bounded::<()>(1);
        let _guard = self.cancel.on_cancel(move || {
            let _ = tx.try_send(());
        });
        let woke = rx.recv_timeout(Duration::from_millis(delay_ms)).is_ok();
        !woke && !self.cancel.is_cancelled()
    }

    /// pi-ai's `retryAssistantCall`: retries a retryable error up to `retry.maxRetries` times with
    /// exponential back-off, reporting `summarization_retry_*`.
    fn call_with_retry(&self, prompt: &str) -> AssistantMessage {
        let max_attempts = if self.retry.enabled {
            self.retry.max_retries
        } else {
            0
        };
        let mut attempt = 0u32;
        loop {
            let response = self.request(prompt);
            let retried = attempt > 0;
            if response.stop_reason != StopReason::Error {
                if retried {
                    (self.on_event)(RetryEvent::Finished);
                }
                return response;
            }
            let retryable = response
                .error_message
                .as_deref()
                .is_some_and(|e| !e.is_empty() && is_retryable_text(e));
            if attempt >= max_attempts || !retryable || self.cancel.is_cancelled() {
                if retried {
                    (self.on_event)(RetryEvent::Finished);
                }
                return response;
            }
            attempt += 1;
            let delay_ms = self
                .retry
                .base_delay_ms
                .saturating_mul(1u64 << (attempt - 1).min(62))
                .min(self.retry.max_agent_delay_ms);
            (self.on_event)(RetryEvent::Scheduled {
                attempt,
                max_attempts,
                delay_ms,
                error_message: response
                    .error_message
                    .clone()
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "Unknown error".into()),
            });
            if !self.sleep(delay_ms) {
                (self.on_event)(RetryEvent::Finished);
                let mut aborted = response;
                aborted.stop_reason = StopReason::Aborted;
                aborted.error_message = None;
                return aborted;
            }
            (self.on_event)(RetryEvent::AttemptStart);
        }
    }

    /// One summary: the call, then pi's failure rules (`<label> failed: …`).
    fn summary(&self, prompt: &str, label: &str) -> Result<Summary, SummaryError> {
        let response = self.call_with_retry(prompt);
        match response.stop_reason {
            StopReason::Error => {
                let msg = response
                    .error_message
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "Unknown error".into());
                return Err(SummaryError::Failed(format!("{label} failed: {msg}")));
            }
            StopReason::Length => {
                return Err(SummaryError::Failed(format!(
                    "{label} failed: generation hit the token cap and the summary is incomplete"
                )));
            }
            StopReason::Aborted => return Err(SummaryError::Cancelled),
            _ => {}
        }
        if self.cancel.is_cancelled() {
            return Err(SummaryError::Cancelled);
        }
        if response
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { .. }))
        {
            return Err(SummaryError::Failed(format!(
                "{label} attempted to call a tool"
            )));
        }
        let text = response
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Summary {
            text,
            usage: response.usage,
        })
    }

    /// pi's `compact()`: the history summary and, for a split turn, the turn-prefix summary
    /// (one after the other), merged; the file lists appended. Returns the summary, the usage
    /// (as wire JSON) and the details.
    pub fn compact(
        &self,
        prep: &Preparation,
        custom_instructions: Option<&str>,
    ) -> Result<(String, Value, Value), SummaryError> {
        let (mut summary, usage) = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            let mut history_text = prep
                .previous_summary
                .clone()
                .unwrap_or_else(|| "No prior history.".into());
            let mut history_usage = None;
            if !prep.messages_to_summarize.is_empty() {
                let h = self.summary(
                    &history_prompt(
                        &prep.messages_to_summarize,
                        prep.previous_summary.as_deref(),
                        custom_instructions,
                    ),
                    "Summarization",
                )?;
                history_text = h.text;
                history_usage = Some(h.usage);
            }
            let prefix = self.summary(
                &turn_prefix_prompt(&prep.turn_prefix_messages, custom_instructions),
                "Turn prefix summarization",
            )?;
            let usage = match history_usage {
                Some(h) => combine_usage(&h, &prefix.usage),
                None => usage_value(&prefix.usage),
            };
            (
                format!(
                    "{history_text}\n\n---\n\n**Turn Context (split turn):**\n\n{}",
                    prefix.text
                ),
                usage,
            )
        } else {
            let h = self.summary(
                &history_prompt(
                    &prep.messages_to_summarize,
                    prep.previous_summary.as_deref(),
                    custom_instructions,
                ),
                "Summarization",
            )?;
            (h.text, usage_value(&h.usage))
        };
        let (read, modified) = prep.file_ops.lists();
        summary.push_str(&format_file_operations(&read, &modified));
        let details = serde_json::json!({"readFiles": read, "modifiedFiles": modified});
        Ok((summary, usage, details))
    }
}

/// A usage as an assistant message carries it.
pub fn usage_value(u: &Usage) -> Value {
    serde_json::to_value(u).unwrap_or(Value::Null)
}

/// pi's `combineUsage`: field-wise sums, keys `input, output, cacheRead, cacheWrite,
/// cacheWrite1h?, reasoning?, totalTokens, cost` (`totalFromProvider` only when both are).
pub fn combine_usage(a: &Usage, b: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("input".into(), (a.input + b.input).into());
    m.insert("output".into(), (a.output + b.output).into());
    m.insert("cacheRead".into(), (a.cache_read + b.cache_read).into());
    m.insert("cacheWrite".into(), (a.cache_write + b.cache_write).into());
    if a.cache_write_1h.is_some() || b.cache_write_1h.is_some() {
        m.insert(
            "cacheWrite1h".into(),
            (a.cache_write_1h.unwrap_or(0) + b.cache_write_1h.unwrap_or(0)).into(),
        );
    }
    if a.reasoning.is_some() || b.reasoning.is_some() {
        m.insert(
            "reasoning".into(),
            (a.reasoning.unwrap_or(0) + b.reasoning.unwrap_or(0)).into(),
        );
    }
    m.insert(
        "totalTokens".into(),
        (a.total_tokens + b.total_tokens).into(),
    );
    let mut cost = Map::new();
    cost.insert("input".into(), js_value(a.cost.input + b.cost.input));
    cost.insert("output".into(), js_value(a.cost.output + b.cost.output));
    cost.insert(
        "cacheRead".into(),
        js_value(a.cost.cache_read + b.cost.cache_read),
    );
    cost.insert(
        "cacheWrite".into(),
        js_value(a.cost.cache_write + b.cost.cache_write),
    );
    cost.insert("total".into(), js_value(a.cost.total + b.cost.total));
    cost.insert(
        "totalFromProvider".into(),
        (a.cost.total_from_provider == Some(true) && b.cost.total_from_provider == Some(true))
            .into(),
    );
    m.insert("cost".into(), Value::Object(cost));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompts_carry_the_verbatim_parts() {
        let msgs = vec![
            json!({"role":"user","content":"first question"}),
            json!({"role":"assistant","content":[{"type":"text","text":"First answer."}]}),
        ];
        let p = history_prompt(&msgs, None, Some("focus"));
        assert!(p.starts_with(
            "<conversation>\n[User]: first question\n\n[Assistant]: First answer.\n</conversation>\n\n"
        ));
        assert!(p.contains("## Goal\n"));
        assert!(p.ends_with("\n\nAdditional focus: focus"));
        assert!(!p.contains("<previous-summary>"));
        let p = history_prompt(&msgs, Some("OLD"), None);
        assert!(p.contains("</conversation>\n\n<previous-summary>\nOLD\n</previous-summary>\n\n"));
        assert!(!p.contains("Additional focus"));
        let t = turn_prefix_prompt(&msgs[..1], Some("x"));
        assert!(t.starts_with("# Conversation\n[User]: first question\n\n# Instructions\n"));
        assert!(t.ends_with("\n\nAdditional focus: x"));
    }

    #[test]
    fn usages_sum_in_pis_key_order() {
        let a: Usage = serde_json::from_value(json!({"input":900,"output":40,"cacheRead":0,"cacheWrite":0,
            "totalTokens":940,"cost":{"input":0.0027,"output":0.0006000000000000001,"cacheRead":0,"cacheWrite":0,"total":0.0033,"totalFromProvider":false},
            "cacheWrite1h":0})).unwrap();
        let b: Usage = serde_json::from_value(json!({"input":300,"output":20,"cacheRead":0,"cacheWrite":0,
            "totalTokens":320,"cost":{"input":0.0009,"output":0.00030000000000000003,"cacheRead":0,"cacheWrite":0,"total":0.0012000000000000001,"totalFromProvider":false},
            "cacheWrite1h":0})).unwrap();
        assert_eq!(
            serde_json::to_string(&combine_usage(&a, &b)).unwrap(),
            r#"{"input":1200,"output":60,"cacheRead":0,"cacheWrite":0,"cacheWrite1h":0,"totalTokens":1260,"cost":{"input":0.0036,"output":0.0009000000000000001,"cacheRead":0,"cacheWrite":0,"total":0.0045000000000000005,"totalFromProvider":false}}"#
        );
    }
}
