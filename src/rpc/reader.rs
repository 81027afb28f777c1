//! The reader thread owns stdin: it cuts records (`protocol::framing`), decodes them, and hands
//! them to the processor. It never waits on command execution, so `abort` and `steer` are read
//! while a run is streaming. `extension_ui_response` lines are resolved right here.

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use serde_json::Value;

use crate::protocol::command::{parse_incoming, Incoming, UiResponse};
use crate::protocol::framing::{Frame, LineSplitter, MAX_LINE_BYTES};

/// What the processor receives from the reader.
#[derive(Debug)]
pub enum Input {
    /// One classified line.
    Line(Incoming),
    /// A line that could not be decoded; the text is the complete `error` of the response.
    Malformed(String),
    /// stdin reached its end (or failed): the orderly shutdown begins.
    Eof,
}

/// Called for every `extension_ui_response` (answers a pending dialog, never a response record).
pub type UiSink = Box<dyn Fn(UiResponse) + Send>;

/// Decodes one framed line into the processor's input.
pub fn decode_frame(frame: Frame) -> Input {
    match frame {
        Frame::TooLong { len } => Input::Malformed(format!(
            "Failed to parse command: line of {len} bytes exceeds the {} MiB limit",
            MAX_LINE_BYTES / (1024 * 1024)
        )),
        Frame::Line(bytes) => {
            let text = match std::str::from_utf8(&bytes) {
                Ok(t) => t,
                Err(e) => {
                    return Input::Malformed(format!(
                        "Failed to parse command: invalid UTF-8 at byte {}",
                        e.valid_up_to()
                    ))
                }
            };
            if text.trim().is_empty() {
                // pi's JSON.parse("") wording, which clients may already match on.
                return Input::Malformed(
                    "Failed to parse command: Unexpected end of JSON input".to_string(),
                );
            }
            match serde_json::from_str::<Value>(text) {
                Ok(v) => Input::Line(parse_incoming(v)),
                Err(e) => Input::Malformed(format!("Failed to parse command: {e}")),
            }
        }
    }
}

/// Starts the reader thread over `source`.
pub fn spawn<R: Read + Send + 'static>(
    source: R,
    to_processor: Sender<Input>,
    ui: UiSink,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("stdin-reader".into())
        .spawn(move || read_loop(source, to_processor, ui))
}

fn read_loop<R: Read>(source: R, tx: Sender<Input>, ui: UiSink) {
    let mut splitter = LineSplitter::default();
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
            Input::Malformed(e) => {
                assert_eq!(e, "Failed to parse command: Unexpected end of JSON input")
            }
            other => panic!("{other:?}"),
        }
        match decode_frame(Frame::Line(vec![b'"', 0xff, b'"'])) {
            Input::Malformed(e) => assert!(e.starts_with("Failed to parse command: invalid UTF-8")),
            other => panic!("{other:?}"),
        }
        match decode_frame(Frame::Line(b"not json".to_vec())) {
            Input::Malformed(e) => assert!(e.starts_with("Failed to parse command: ")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode_frame(Frame::TooLong { len: 10 }),
            Input::Malformed(_)
        ));
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
        )
        .unwrap();
        h.join().unwrap();
        let got: Vec<Input> = rx.try_iter().collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(matches!(got[0], Input::Line(Incoming::Command { .. })));
        assert!(matches!(got[1], Input::Malformed(_)));
        assert!(matches!(got[2], Input::Eof));
        assert_eq!(ui_rx.try_recv().unwrap().id, "u");
    }
}
