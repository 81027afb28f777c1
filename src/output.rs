//! The output handle: how every producer (the processor, the agent thread, bash and export
//! threads, print mode) writes protocol records. Records are serialized on the producer's
//! thread and sent over a bounded channel to the one thread that owns stdout
//! (`rpc::writer`); a full channel blocks the producer, which is the backpressure that keeps
//! memory bounded when the host reads slowly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{bounded, Sender};

use crate::protocol::{framing, Event, Response};

/// How many serialized lines may wait for stdout before producers block.
pub const OUTPUT_CAPACITY: usize = 1024;

pub(crate) enum OutMsg {
    Line(String),
    /// Answered once every line sent before it has been written and flushed.
    Flush(Sender<()>),
}

/// A cloneable handle for writing protocol records.
#[derive(Clone)]
pub struct Output {
    tx: Sender<OutMsg>,
    /// Set once shutdown began (stdin EOF): later lines are dropped, as pi writes nothing more.
    muted: Arc<AtomicBool>,
}

impl Output {
    /// A handle over the channel a writer drains (`rpc::writer::spawn` makes both).
    pub(crate) fn new(tx: Sender<OutMsg>) -> Output {
        Output {
            tx,
            muted: Arc::default(),
        }
    }

    /// Writes an event record.
    pub fn event(&self, event: &Event) {
        self.line(framing::encode(event));
    }

    /// Writes a response record.
    pub fn response(&self, response: &Response) {
        self.line(framing::encode(response));
    }

    /// Writes any serializable record (json mode's session header, for instance).
    pub fn record<T: serde::Serialize + ?Sized>(&self, value: &T) {
        self.line(framing::encode(value));
    }

    /// Writes one already-serialized line (without its newline). Blocks while the channel is full.
    pub fn line(&self, line: String) {
        if self.muted.load(Ordering::SeqCst) {
            return;
        }
        // A send fails only once the writer has stopped (stdout closed); the process is ending.
        let _ = self.tx.send(OutMsg::Line(line));
    }

    /// Drops every later line (lines already queued are still written).
    pub fn mute(&self) {
        self.muted.store(true, Ordering::SeqCst);
    }

    /// Writes again after [`Output::mute`] (the `session_shutdown` handlers' UI at exit).
    pub fn unmute(&self) {
        self.muted.store(false, Ordering::SeqCst);
    }

    /// Waits until everything sent so far is on stdout (or stdout is gone).
    pub fn flush(&self) {
        let (tx, rx) = bounded(1);
        if self.tx.send(OutMsg::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}
