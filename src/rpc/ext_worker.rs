//! The `ext-worker` thread: work that waits for extension handlers on the processor's behalf,
//! so the processor itself never waits for an extension (`input` handlers before a prompt
//! continues, `model_select` & co. before a response).

use serde_json::{json, Value};

use crate::protocol::Event;

/// Work for the `ext-worker` thread: extension handlers, then what follows them.
pub type ExtJob = Box<dyn FnOnce() + Send>;

/// Starts the `ext-worker` thread, which runs [`ExtJob`]s in order.
pub fn spawn_ext_worker() -> std::io::Result<crossbeam_channel::Sender<ExtJob>> {
    let (tx, rx) = crossbeam_channel::bounded::<ExtJob>(64);
    std::thread::Builder::new()
        .name("ext-worker".into())
        .spawn(move || rx.into_iter().for_each(|job| job()))?;
    Ok(tx)
}

/// The extension events a model change sends (pi's `setModel`): `thinking_level_select` when
/// the level moved with it, then `model_select`.
pub(crate) fn model_select_payloads(
    events: &[Event],
    model: &crate::llm::Model,
    previous: &crate::llm::Model,
    previous_level: crate::llm::ThinkingLevel,
    source: &str,
) -> Vec<Value> {
    let mut out = Vec::new();
    for e in events {
        if let Event::ThinkingLevelChanged { level } = e {
            out.push(json!({"type": "thinking_level_select", "level": level,
                "previousLevel": previous_level}));
        }
    }
    out.push(
        json!({"type": "model_select", "model": model, "previousModel": previous,
        "source": source}),
    );
    out
}
