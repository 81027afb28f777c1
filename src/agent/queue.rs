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
        let mut content = vec![serde_json::json!({"type": "text", "text": self.text})];
        for img in &self.images {
            content.push(
                serde_json::json!({"type": "image", "data": img.data, "mimeType": img.mime_type}),
            );
        }
        serde_json::json!({"role": "user", "content": content, "timestamp": self.timestamp})
    }
}

/// Both queues and their delivery modes.
#[derive(Debug, Default)]
pub struct Queues {
    pub steering: Vec<QueuedMessage>,
    pub follow_up: Vec<QueuedMessage>,
}

impl Queues {
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

    /// Takes what one delivery point delivers from `queue` under `mode`.
    pub fn drain(queue: &mut Vec<QueuedMessage>, mode: QueueMode) -> Vec<QueuedMessage> {
        match mode {
            QueueMode::All => std::mem::take(queue),
            QueueMode::OneAtATime => {
                if queue.is_empty() {
                    Vec::new()
                } else {
                    vec![queue.remove(0)]
                }
            }
        }
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
    fn drain_modes() {
        let mut q = vec![m("a"), m("b")];
        assert_eq!(Queues::drain(&mut q, QueueMode::OneAtATime), vec![m("a")]);
        assert_eq!(Queues::drain(&mut q, QueueMode::All), vec![m("b")]);
        assert!(Queues::drain(&mut q, QueueMode::All).is_empty());
    }
}
