//! Shared setup of the adapter tests (`llm_anthropic`, `llm_openai_completions`): a one-user
//! conversation with the bash tool, options with a test key, running `stream_assistant`
//! while collecting its updates, and normalizing the final message.

use std::time::{Duration, Instant};

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::stream::StreamUpdate;
use pi_rpc::llm::types::{
    AssistantMessage, ContentBlock, LlmContext, LlmMessage, StreamOptions, ToolSpec,
};
use pi_rpc::llm::wire::stream_assistant;
use pi_rpc::llm::Model;
use serde_json::{json, Value};

/// Default options with the API key `test-key`.
pub fn opts() -> StreamOptions {
    StreamOptions {
        api_key: Some("test-key".into()),
        ..StreamOptions::default()
    }
}

/// The `bash` tool definition the tests send.
pub fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Execute a bash command".into(),
        parameters: json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
        strict_prefer: false,
    }
}

/// A user message with one text block, at timestamp 1.
pub fn user(text: &str) -> LlmMessage {
    LlmMessage::User {
        content: vec![ContentBlock::text(text)],
        timestamp: 1,
        as_string: false,
    }
}

/// A successful `bash` tool result with one text block.
pub fn bash_result(tool_call_id: &str, text: &str) -> LlmMessage {
    LlmMessage::ToolResult {
        tool_call_id: tool_call_id.into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text(text)],
        is_error: false,
    }
}

/// A user message with a text block and a tiny PNG (`iVBORw0KGgo=`), at timestamp 3.
pub fn user_with_png(text: &str) -> LlmMessage {
    LlmMessage::User {
        content: vec![
            ContentBlock::text(text),
            ContentBlock::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            },
        ],
        timestamp: 3,
        as_string: false,
    }
}

/// `messages` under the system prompt `You are a test.` with the bash tool.
pub fn ctx(messages: Vec<LlmMessage>) -> LlmContext {
    LlmContext {
        transcript: None,
        leading_system: None,
        system_prompt: "You are a test.".into(),
        messages,
        tools: vec![bash_tool()],
    }
}

/// Runs one request; returns the final message and the reported updates (`{"start": partial}`
/// or the wire event).
pub fn run(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
) -> (AssistantMessage, Vec<Value>) {
    let mut updates = Vec::new();
    let msg = stream_assistant(model, ctx, opts, cancel, &mut |u| match u {
        StreamUpdate::Start(p) => updates.push(json!({ "start": p.to_value() })),
        StreamUpdate::Event(_, e) => updates.push(e.to_wire()),
    });
    (msg, updates)
}

/// Runs one request and cancels it 50 ms after the first event named `cancel_after` (the
/// server then hangs). Returns the final message and how long after the cancel
/// `stream_assistant` returned.
pub fn run_cancelled_after(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel_after: &str,
) -> (AssistantMessage, Duration) {
    let cancel = CancelToken::new();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(50));
            let at = Instant::now();
            cancel.cancel();
            at
        })
    };
    let msg = stream_assistant(model, ctx, opts, &cancel, &mut |u| {
        if let StreamUpdate::Event(_, e) = u {
            if e.type_name() == cancel_after {
                let _ = tx.send(());
            }
        }
    });
    let returned = Instant::now();
    let cancelled_at = canceller.join().unwrap();
    (msg, returned.saturating_duration_since(cancelled_at))
}

/// The final message's JSON with the clock-dependent fields zeroed.
pub fn normalized(msg: &AssistantMessage) -> Value {
    assert!(msg.timestamp > 0);
    assert!(msg.duration_ms.is_some());
    let mut m = msg.clone();
    m.timestamp = 0;
    m.duration_ms = Some(0);
    m.to_value()
}

/// The usage of a response that reported none.
pub fn zero_usage() -> Value {
    json!({"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}})
}

/// A local port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
