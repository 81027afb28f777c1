//! The run life cycle: whether a run or a compaction is active, the abort token every request
//! and tool of the run listens to, the commands waiting for the run to reach a point, the RPC
//! `bash` commands running beside it. One owner, private state: the processor asks it to begin
//! or reject, the agent thread reports the run's progress through it, and each method returns
//! what the caller must do after releasing the session lock (cancel tokens to fire, waiting
//! commands to answer). Nothing here does I/O.

use serde_json::Value;

use crate::cancel::CancelToken;

/// The id of a command waiting for an answer (`abort`, `abort_retry`).
pub(crate) type Waiter = Option<Value>;

/// What an `abort` gets.
#[derive(Debug)]
pub(crate) enum AbortReply {
    /// Nothing is running: answer now.
    Now,
    /// Answered later (after `agent_settled`, or after the pending compaction's response); the
    /// caller fires these tokens once it released the lock.
    Later(Vec<CancelToken>),
}

/// The active session-level run's control.
#[derive(Default)]
struct RunControl {
    /// Fires on `abort` (and on shutdown); every LLM request and tool of the run listens.
    cancel: CancelToken,
    abort_requested: bool,
    /// `abort` commands waiting for `agent_settled` (or for a pending compaction's end).
    abort_waiters: Vec<Waiter>,
    /// Set while sleeping before a retry; `abort_retry` cancels it.
    retry_sleep: Option<CancelToken>,
    /// `abort_retry` commands answered right after `auto_retry_end`.
    abort_retry_waiters: Vec<Waiter>,
    /// The system prompt a `before_agent_start` handler set for this run.
    system_prompt: Option<String>,
}

/// Identifies a running RPC `bash` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BashRunId(u64);

/// The life cycle of runs, compactions and RPC `bash` commands (see the module doc).
#[derive(Default)]
pub struct Lifecycle {
    /// Extension calls (`ctx.waitForIdle`, `ctx.shutdown`) answered when the run settles.
    idle_waiters: Vec<crate::extensions::CallReply>,
    /// A session-level run is active (from the accepted `prompt` to its `agent_settled`).
    streaming: bool,
    /// An automatic (threshold or overflow) compaction is running inside the run.
    auto_compacting: bool,
    /// `compact` commands accepted and not finished yet (`isCompacting` stays true meanwhile).
    pending_manual_compactions: u32,
    /// The cancel tokens of those compactions (`abort` and a newer `compact` cancel them).
    compaction_cancels: Vec<CancelToken>,
    run: RunControl,
    bash_runs: Vec<(BashRunId, CancelToken)>,
    next_bash_id: u64,
    /// Messages recorded while a run was active (RPC bash executions), appended when it ends.
    deferred: Vec<Value>,
    /// Overflow recovery was tried once since the last user message (`agent-loop.md` §7.3).
    overflow_recovery_attempted: bool,
}

impl Lifecycle {
    /// `isStreaming`.
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    /// `isCompacting`: a `compact` is pending or running, or an automatic compaction runs.
    pub fn is_compacting(&self) -> bool {
        self.auto_compacting || self.pending_manual_compactions > 0
    }

    /// The token the current run (or the running manual compaction) listens to.
    pub fn run_cancel(&self) -> CancelToken {
        self.run.cancel.clone()
    }

    /// An `abort` was requested during the current run.
    pub(crate) fn abort_requested(&self) -> bool {
        self.run.abort_requested
    }

    // --- runs ---------------------------------------------------------------------------------

    /// Marks a session-level run active with a fresh control (the caller checked it may start).
    pub(crate) fn start_run(&mut self) {
        self.streaming = true;
        self.run = RunControl::default();
    }

    /// An extension call to answer once no run is active; given back when none is.
    pub(crate) fn when_idle(
        &mut self,
        reply: crate::extensions::CallReply,
    ) -> Option<crate::extensions::CallReply> {
        if self.streaming {
            self.idle_waiters.push(reply);
            None
        } else {
            Some(reply)
        }
    }

    /// The calls waiting for the run to settle (taken with the run's end).
    pub(crate) fn take_idle_waiters(&mut self) -> Vec<crate::extensions::CallReply> {
        std::mem::take(&mut self.idle_waiters)
    }

    /// An extension replaced the system prompt for the current run (`before_agent_start`).
    pub(crate) fn set_run_system_prompt(&mut self, prompt: String) {
        self.run.system_prompt = Some(prompt);
    }

    /// The system prompt an extension set for the current run.
    pub(crate) fn run_system_prompt(&self) -> Option<&str> {
        self.run.system_prompt.as_deref()
    }

    /// The run marked by [`Self::start_run`] never reached the agent thread.
    pub(crate) fn run_not_started(&mut self) {
        self.streaming = false;
    }

    /// The run settled: it is over; returns the `abort` commands to answer.
    pub(crate) fn finish_run(&mut self) -> Vec<Waiter> {
        self.streaming = false;
        self.run.abort_requested = false;
        self.run.retry_sleep = None;
        self.run.system_prompt = None;
        std::mem::take(&mut self.run.abort_waiters)
    }

    /// `abort`: the active run and every pending or running `compact` are cancelled. Answered
    /// after `agent_settled` when a run is active, after the compaction's response when only a
    /// `compact` is pending, at once otherwise.
    pub(crate) fn request_abort(&mut self, id: Waiter) -> AbortReply {
        let compactions = std::mem::take(&mut self.compaction_cancels);
        if self.streaming {
            self.run.abort_requested = true;
            self.run.abort_waiters.push(id);
            let mut cancels = Vec::with_capacity(1 + compactions.len());
            cancels.push(self.run.cancel.clone());
            cancels.extend(compactions);
            AbortReply::Later(cancels)
        } else if self.pending_manual_compactions > 0 {
            self.run.abort_waiters.push(id);
            AbortReply::Later(compactions)
        } else {
            AbortReply::Now
        }
    }

    /// Aborts the active run, if any, before the session is replaced; returns the token to fire.
    pub(crate) fn abort_for_replacement(&mut self) -> Option<CancelToken> {
        self.streaming.then(|| {
            self.run.abort_requested = true;
            self.run.cancel.clone()
        })
    }

    // --- auto-retry ---------------------------------------------------------------------------

    /// `abort_retry`: the token of the retry sleep to cut short (the command is answered right
    /// after `auto_retry_end`), or `None` when no retry waits (answer now).
    pub(crate) fn request_abort_retry(&mut self, id: Waiter) -> Option<CancelToken> {
        let sleep = self.run.retry_sleep.clone()?;
        self.run.abort_retry_waiters.push(id);
        Some(sleep)
    }

    /// The run sleeps before a retry (`Some`) or woke up (`None`).
    pub(crate) fn set_retry_sleep(&mut self, sleep: Option<CancelToken>) {
        self.run.retry_sleep = sleep;
    }

    /// The `abort_retry` commands to answer now that `auto_retry_end` is out.
    pub(crate) fn take_abort_retry_waiters(&mut self) -> Vec<Waiter> {
        std::mem::take(&mut self.run.abort_retry_waiters)
    }

    // --- overflow recovery --------------------------------------------------------------------

    pub(crate) fn overflow_recovery_attempted(&self) -> bool {
        self.overflow_recovery_attempted
    }

    /// Overflow recovery is being tried (once per user message).
    pub(crate) fn mark_overflow_recovery(&mut self) {
        self.overflow_recovery_attempted = true;
    }

    /// A new user message, or a reply that did not overflow: recovery may be tried again.
    pub(crate) fn reset_overflow_recovery(&mut self) {
        self.overflow_recovery_attempted = false;
    }

    // --- compaction ---------------------------------------------------------------------------

    /// `compact` accepted: it aborts the active run and every earlier compaction (the tokens to
    /// fire are returned, run first) and keeps `isCompacting` true until it is done. When idle,
    /// `cancel` becomes the run token, so shutdown reaches the compaction too.
    pub(crate) fn begin_manual_compaction(&mut self, cancel: &CancelToken) -> Vec<CancelToken> {
        let mut fire = Vec::new();
        if self.streaming {
            self.run.abort_requested = true;
            fire.push(self.run.cancel.clone());
        } else {
            self.run.cancel = cancel.clone();
        }
        fire.extend(std::mem::replace(
            &mut self.compaction_cancels,
            vec![cancel.clone()],
        ));
        self.pending_manual_compactions += 1;
        fire
    }

    /// The `compact` accepted by [`Self::begin_manual_compaction`] never reached the agent thread.
    pub(crate) fn manual_compaction_not_started(&mut self) {
        self.pending_manual_compactions = self.pending_manual_compactions.saturating_sub(1);
    }

    /// The agent thread starts the manual compaction: shutdown's cancel reaches it.
    pub(crate) fn manual_compaction_running(&mut self, cancel: &CancelToken) {
        self.run.cancel = cancel.clone();
    }

    /// The manual compaction is done; returns the `abort` commands to answer after its
    /// response (none while another compaction or a run is still active).
    pub(crate) fn end_manual_compaction(&mut self) -> Vec<Waiter> {
        self.pending_manual_compactions = self.pending_manual_compactions.saturating_sub(1);
        if self.is_compacting() || self.streaming {
            Vec::new()
        } else {
            std::mem::take(&mut self.run.abort_waiters)
        }
    }

    pub(crate) fn begin_auto_compaction(&mut self) {
        self.auto_compacting = true;
    }

    pub(crate) fn end_auto_compaction(&mut self) {
        self.auto_compacting = false;
    }

    // --- RPC bash -----------------------------------------------------------------------------

    /// Registers a running RPC `bash` command (`abort_bash` cancels it).
    pub(crate) fn register_bash(&mut self, cancel: CancelToken) -> BashRunId {
        let id = BashRunId(self.next_bash_id);
        self.next_bash_id += 1;
        self.bash_runs.push((id, cancel));
        id
    }

    pub(crate) fn end_bash(&mut self, id: BashRunId) {
        self.bash_runs.retain(|(r, _)| *r != id);
    }

    /// The tokens of every running RPC `bash` command (`abort_bash`).
    pub(crate) fn bash_cancels(&self) -> Vec<CancelToken> {
        self.bash_runs.iter().map(|(_, c)| c.clone()).collect()
    }

    // --- messages recorded during a run -------------------------------------------------------

    /// Keeps `message` for the end of the active run; `Err` gives it back when no run is active
    /// (record it now).
    pub(crate) fn defer(&mut self, message: Value) -> Result<(), Value> {
        if self.streaming {
            self.deferred.push(message);
            Ok(())
        } else {
            Err(message)
        }
    }

    pub(crate) fn take_deferred(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.deferred)
    }

    pub(crate) fn clear_deferred(&mut self) {
        self.deferred.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_when_idle_answers_now() {
        let mut l = Lifecycle::default();
        assert!(matches!(l.request_abort(Some(1.into())), AbortReply::Now));
    }

    #[test]
    fn abort_during_a_run_waits_and_cancels_the_run_first() {
        let mut l = Lifecycle::default();
        l.start_run();
        let run = l.run_cancel();
        let compaction = CancelToken::new();
        assert!(l.begin_manual_compaction(&compaction).len() == 1);
        let AbortReply::Later(fire) = l.request_abort(Some(1.into())) else {
            panic!("a run is active");
        };
        assert_eq!(fire.len(), 2);
        fire[0].cancel();
        assert!(run.is_cancelled());
        assert!(l.abort_requested());
        assert_eq!(l.finish_run(), vec![Some(1.into())]);
        assert!(!l.is_streaming());
    }

    #[test]
    fn abort_with_only_a_pending_compaction_is_answered_after_it() {
        let mut l = Lifecycle::default();
        let c = CancelToken::new();
        assert!(l.begin_manual_compaction(&c).is_empty());
        assert!(l.is_compacting());
        assert!(matches!(
            l.request_abort(Some(2.into())),
            AbortReply::Later(ref v) if v.len() == 1
        ));
        assert_eq!(l.end_manual_compaction(), vec![Some(2.into())]);
        assert!(!l.is_compacting());
    }

    #[test]
    fn compacting_while_an_auto_compaction_and_a_manual_one_overlap() {
        let mut l = Lifecycle::default();
        l.start_run();
        l.begin_auto_compaction();
        let fire = l.begin_manual_compaction(&CancelToken::new());
        assert_eq!(fire.len(), 1, "the run is aborted");
        l.end_auto_compaction();
        assert!(l.is_compacting(), "the manual one is still pending");
        assert!(
            l.end_manual_compaction().is_empty(),
            "the run is still active"
        );
        assert!(!l.is_compacting());
    }

    #[test]
    fn deferred_messages_only_during_a_run() {
        let mut l = Lifecycle::default();
        assert_eq!(l.defer(1.into()), Err(1.into()));
        l.start_run();
        assert_eq!(l.defer(2.into()), Ok(()));
        assert_eq!(l.take_deferred(), vec![Value::from(2)]);
    }

    #[test]
    fn bash_runs_register_and_end() {
        let mut l = Lifecycle::default();
        let a = l.register_bash(CancelToken::new());
        let b = l.register_bash(CancelToken::new());
        assert_ne!(a, b);
        l.end_bash(a);
        assert_eq!(l.bash_cancels().len(), 1);
    }
}
