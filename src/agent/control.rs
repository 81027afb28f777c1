//! Control of the active session-level run: the abort token and the commands waiting for the
//! run to reach a point (`abort` waits for `agent_settled`, `abort_retry` for `auto_retry_end`).

use serde_json::Value;

use crate::cancel::CancelToken;

/// Control of the active session-level run, kept in [`AgentSession`].
#[derive(Default)]
pub struct RunControl {
    /// Fires on `abort` (and on shutdown); every LLM request and tool of the run listens.
    pub cancel: CancelToken,
    pub abort_requested: bool,
    /// `abort` commands waiting for `agent_settled`.
    pub abort_waiters: Vec<Option<Value>>,
    /// Set while sleeping before a retry; `abort_retry` cancels it.
    pub retry_sleep: Option<CancelToken>,
    /// `abort_retry` commands answered right after `auto_retry_end`.
    pub abort_retry_waiters: Vec<Option<Value>>,
}
