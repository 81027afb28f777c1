//! The steering and follow-up queues (`agent-loop.md` §4).

use serde_json::Value;

use crate::protocol::ImageContent;
use crate::resources::settings::QueueMode;

/// A user message waiting for delivery. It keeps the time it was queued.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuedMessage {
    /// The (already expanded) text; also what `queue_update` shows.
    pub text: String,
    pub images: Vec<ImageContent>,
    pub timestamp: u64,
}

impl QueuedMessage {
    /// The user message delivered for it: `{"role":"user","content":[text, ...images],"timestamp"}`.
    pub fn to_user_message(&self) -> Value {
        crate::protocol::message::user_message(&self.text, &self.images, self.timestamp)
    }
}

/// Which queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// Delivered at the next delivery point inside the run (`steer`).
    Steering,
    /// Delivered when the run would otherwise end (`follow_up`).
    FollowUp,
}

/// Both queues and their delivery modes.
#[derive(Debug, Default)]
pub struct Queues {
    steering: Vec<QueuedMessage>,
    follow_up: Vec<QueuedMessage>,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
}

impl Queues {
    pub fn new(steering_mode: QueueMode, follow_up_mode: QueueMode) -> Queues {
        Queues {
            steering_mode,
            follow_up_mode,
            ..Queues::default()
        }
    }

    fn queue(&mut self, kind: QueueKind) -> &mut Vec<QueuedMessage> {
        match kind {
            QueueKind::Steering => &mut self.steering,
            QueueKind::FollowUp => &mut self.follow_up,
        }
    }

    pub fn mode(&self, kind: QueueKind) -> QueueMode {
        match kind {
            QueueKind::Steering => self.steering_mode,
            QueueKind::FollowUp => self.follow_up_mode,
        }
    }

    pub fn set_mode(&mut self, kind: QueueKind, mode: QueueMode) {
        match kind {
            QueueKind::Steering => self.steering_mode = mode,
            QueueKind::FollowUp => self.follow_up_mode = mode,
        }
    }

    pub fn push(&mut self, kind: QueueKind, message: QueuedMessage) {
        self.queue(kind).push(message);
    }

    /// Takes the oldest message of `kind`.
    pub fn pop_front(&mut self, kind: QueueKind) -> Option<QueuedMessage> {
        let q = self.queue(kind);
        (!q.is_empty()).then(|| q.remove(0))
    }

    /// How many messages of `kind` one delivery point takes under its mode.
    pub fn delivery_count(&self, kind: QueueKind) -> usize {
        let len = match kind {
            QueueKind::Steering => self.steering.len(),
            QueueKind::FollowUp => self.follow_up.len(),
        };
        match self.mode(kind) {
            QueueMode::All => len,
            QueueMode::OneAtATime => len.min(1),
        }
    }

    /// Empties both queues (the modes stay).
    pub fn clear(&mut self) {
        self.steering.clear();
        self.follow_up.clear();
    }

    pub fn steering_texts(&self) -> Vec<String> {
        self.steering.iter().map(|m| m.text.clone()).collect()
    }

    pub fn follow_up_texts(&self) -> Vec<String> {
        self.follow_up.iter().map(|m| m.text.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.steering.len() + self.follow_up.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str) -> QueuedMessage {
        QueuedMessage {
            text: t.into(),
            images: vec![],
            timestamp: 1,
        }
    }

    #[test]
    fn delivery_takes_one_or_all_by_mode() {
        let mut q = Queues::new(QueueMode::OneAtATime, QueueMode::All);
        for t in ["a", "b"] {
            q.push(QueueKind::Steering, m(t));
            q.push(QueueKind::FollowUp, m(t));
        }
        assert_eq!(q.delivery_count(QueueKind::Steering), 1);
        assert_eq!(q.delivery_count(QueueKind::FollowUp), 2);
        assert_eq!(q.pop_front(QueueKind::Steering), Some(m("a")));
        q.set_mode(QueueKind::FollowUp, QueueMode::OneAtATime);
        assert_eq!(q.delivery_count(QueueKind::FollowUp), 1);
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.pop_front(QueueKind::FollowUp), None);
        assert_eq!(q.mode(QueueKind::FollowUp), QueueMode::OneAtATime);
    }
}
