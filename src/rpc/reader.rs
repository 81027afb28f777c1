//! The reader thread owns stdin: it cuts records (`protocol::framing`), decodes them, and hands
//! them to the processor. It never waits on command execution, so `abort` and `steer` are read
//! while a run is streaming. `extension_ui_response` lines are resolved right here.

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use serde_json::Value;

use crate::protocol::command::{parse_incoming, Incoming, UiResponse};
use crate::protocol::framing::{find_id, Frame, LineSplitter};

/// What the processor receives from the reader.
#[derive(Debug)]
pub enum Input {
    /// One classified line.
    Line(Incoming),
    /// A line that could not be decoded: the `error` of the response, and the command's `id`
    /// when it could still be read (an over-long line's first bytes).
    Malformed { id: Option<Value>, error: String },
    /// stdin reached its end (or failed): the orderly shutdown begins.
    Eof,
    /// A `prompt`, `steer` or `follow_up` whose `input` handlers are done (`extensions.md`
    /// §A7.4): it continues with the text they left.
    Continued {
        id: Option<Value>,
        command: crate::protocol::Command,
    },
    /// An extension's `pi.sendMessage` with `triggerTurn` while idle: a run that starts with
    /// this `custom` message.
    ExtensionMessage { message: Value },
    /// An extension's `ctx.newSession` / `ctx.fork` / `ctx.switchSession`.
    ExtensionSession {
        op: crate::agent::session_ops::SessionOp,
        reply: crate::extensions::CallReply,
    },
    /// Events for extensions caused by an extension's own call (`pi.setModel`): dispatched on
    /// the worker, since the calling extension's reader thread cannot wait for handlers.
    ExtensionEvents(Vec<Value>),
    /// An extension's `ctx.compact`: a manual compaction answering the extension's call.
    ExtensionCompact {
        custom_instructions: Option<String>,
        reply: crate::extensions::CallReply,
    },
    /// An extension's `pi.sendUserMessage` (`extensions.md` §A9): a prompt without template
    /// expansion and without a response record, ordered with the commands.
    ExtensionPrompt {
        text: String,
        images: Vec<crate::protocol::ImageContent>,
        behavior: Option<crate::protocol::StreamingBehavior>,
        /// The `input` handlers (`source:"extension"`) have run.
        input_done: bool,
    },
}

/// Called for every `extension_ui_response` (answers a pending dialog, never a response record).
pub type UiSink = Box<dyn Fn(UiResponse) + Send>;

/// Decodes one framed line into the processor's input.
pub fn decode_frame(frame: Frame) -> Input {
    match frame {
        Frame::TooLong { len, limit, head } => Input::Malformed {
            id: find_id(&head),
            error: format!(
                "Failed to parse command: line of {len} bytes exceeds the limit of {limit} bytes \
                 (set {} to accept longer lines)",
                crate::protocol::framing::MAX_LINE_BYTES_ENV
            ),
        },
        Frame::Line(bytes) => {
            let text = match std::str::from_utf8(&bytes) {
                Ok(t) => t,
                Err(e) => {
                    return malformed(format!(
                        "Failed to parse command: invalid UTF-8 at byte {}",
                        e.valid_up_to()
                    ))
                }
            };
            if text.trim().is_empty() {
                // pi's JSON.parse("") wording, which clients may already match on.
                return malformed(
                    "Failed to parse command: Unexpected end of JSON input".to_string(),
                );
            }
            match serde_json::from_str::<Value>(text) {
                Ok(v) => Input::Line(parse_incoming(v)),
                Err(e) => malformed(format!("Failed to parse command: {e}")),
            }
        }
    }
}

fn malformed(error: String) -> Input {
    Input::Malformed { id: None, error }
}

/// Starts the reader thread over `source`; lines longer than `max_line_bytes` are answered
/// with a parse error and skipped.
pub fn spawn<R: Read + Send + 'static>(
    source: R,
    to_processor: Sender<Input>,
    ui: UiSink,
    max_line_bytes: usize,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("stdin-reader".into())
        .spawn(move || read_loop(source, to_processor, ui, max_line_bytes))
}

fn read_loop<R: Read>(source: R, tx: Sender<Input>, ui: UiSink, max_line_bytes: usize) {
    let mut splitter = LineSplitter::with_limit(max_line_bytes);
    // BufReader's buffer is not zero-filled: only the bytes stdin delivers are touched, so an
    // idle process does not carry 64 KiB of resident buffer.
    let mut source = BufReader::with_capacity(64 * 1024, source);
    let mut frames = Vec::new();
    loop {
        let n = match source.fill_buf() {
            Ok([]) => break,
            Ok(bytes) => {
                splitter.push(bytes, &mut frames);
                bytes.len()
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("pi-rpc: stdin read failed: {e}");
                break;
            }
        };
        source.consume(n);
        for frame in frames.drain(..) {
            if !dispatch(decode_frame(frame), &tx, &ui) {
                return;
            }
        }
    }
    if let Some(frame) = splitter.finish() {
        if !dispatch(decode_frame(frame), &tx, &ui) {
            return;
        }
    }
    let _ = tx.send(Input::Eof);
}

/// Returns false once the processor is gone.
fn dispatch(input: Input, tx: &Sender<Input>, ui: &UiSink) -> bool {
    match input {
        Input::Line(Incoming::UiResponse(r)) => {
            ui(r);
            true
        }
        other => tx.send(other).is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_errors() {
        match decode_frame(Frame::Line(b"".to_vec())) {
            Input::Malformed { id: None, error } => {
                assert_eq!(
                    error,
                    "Failed to parse command: Unexpected end of JSON input"
                )
            }
            other => panic!("{other:?}"),
        }
        match decode_frame(Frame::Line(vec![b'"', 0xff, b'"'])) {
            Input::Malformed { id: None, error } => {
                assert!(error.starts_with("Failed to parse command: invalid UTF-8"))
            }
            other => panic!("{other:?}"),
        }
        match decode_frame(Frame::Line(b"not json".to_vec())) {
            Input::Malformed { id: None, error } => {
                assert!(error.starts_with("Failed to parse command: "))
            }
            other => panic!("{other:?}"),
        }
        match decode_frame(Frame::TooLong {
            len: 10_000,
            limit: 8192,
            head: br#"{"id":"big","type":"prompt","message":"xx"#.to_vec(),
        }) {
            Input::Malformed { id, error } => {
                assert_eq!(id, Some(Value::from("big")));
                assert_eq!(
                    error,
                    "Failed to parse command: line of 10000 bytes exceeds the limit of 8192 bytes \
                     (set PI_RPC_MAX_LINE_BYTES to accept longer lines)"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reader_forwards_lines_then_eof() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let src = std::io::Cursor::new(
            b"{\"type\":\"get_state\"}\n{\"type\":\"extension_ui_response\",\"id\":\"u\"}\nbad"
                .to_vec(),
        );
        let (ui_tx, ui_rx) = crossbeam_channel::unbounded();
        let h = spawn(
            src,
            tx,
            Box::new(move |r| {
                let _ = ui_tx.send(r);
            }),
            1 << 20,
        )
        .unwrap();
        h.join().unwrap();
        let got: Vec<Input> = rx.try_iter().collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(matches!(got[0], Input::Line(Incoming::Command { .. })));
        assert!(matches!(got[1], Input::Malformed { .. }));
        assert!(matches!(got[2], Input::Eof));
        assert_eq!(ui_rx.try_recv().unwrap().id, "u");
    }
}
