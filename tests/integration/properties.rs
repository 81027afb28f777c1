//! Property tests (issue 17, "keep them out"): random inputs, generated from a fixed seed so a
//! failure repeats, checked against properties that must hold for every input.
//!
//! - JSONL framing: how stdin happens to be chunked never changes the records cut from it;
//! - command parsing: any JSON value is classified without a panic, and a command object with a
//!   string `id` keeps it (every id is answered);
//! - the SSE parser: how the body happens to be chunked never changes the events.
//!
//! `PI_RPC_PROPERTY_CASES` sets the number of cases per property (default 300, what CI runs);
//! `PI_RPC_PROPERTY_SEED` replays another seed. A longer run:
//! `PI_RPC_PROPERTY_CASES=100000 cargo test --test integration properties::`.

use std::io::{BufRead, Read};

use pi_rpc::llm::sse::{SseEvent, SseParser};
use pi_rpc::protocol::command::{parse_incoming, Incoming};
use pi_rpc::protocol::framing::{Frame, LineSplitter};
use serde_json::{json, Map, Value};

use crate::support::rng::{seed, Rng};

fn cases() -> usize {
    crate::support::rng::cases(300)
}

/// Bytes that exercise the splitter: LF, CR, U+2028 in UTF-8, invalid UTF-8, JSON punctuation.
fn random_stream(rng: &mut Rng) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"\n",
        b"\r\n",
        b"\r",
        "\u{2028}".as_bytes(),
        "\u{2029}".as_bytes(),
        b"\xff",
        b"\xe2\x80",
        b"{\"id\":\"x\",\"type\":\"get_state\"}",
        b"\"",
        b"a",
        b"0123456789",
        b"   ",
    ];
    let mut out = Vec::new();
    for _ in 0..rng.below(60) {
        let piece: &&[u8] = rng.pick(PIECES);
        out.extend_from_slice(piece);
    }
    out
}

fn frames_of(chunks: &[&[u8]], limit: usize) -> Vec<Frame> {
    let mut splitter = LineSplitter::with_limit(limit);
    let mut out = Vec::new();
    for c in chunks {
        splitter.push(c, &mut out);
    }
    out.extend(splitter.finish());
    out
}

/// Cuts `data` at random places.
fn random_chunks<'a>(rng: &mut Rng, data: &'a [u8]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = 1 + rng.below(rest.len().min(17));
        let (a, b) = rest.split_at(n);
        chunks.push(a);
        rest = b;
    }
    chunks
}

#[test]
fn framing_does_not_depend_on_chunking() {
    let mut rng = Rng::new(seed(), 1);
    for case in 0..cases() {
        let data = random_stream(&mut rng);
        // Small limits reach the over-long-line path too.
        let limit = *rng.pick(&[1usize, 4, 16, 64, 1 << 20]);
        let whole = frames_of(&[&data], limit);
        let chunks = random_chunks(&mut rng, &data);
        let pieces = frames_of(&chunks, limit);
        assert_eq!(
            whole,
            pieces,
            "case {case}: limit {limit}, input {:?}, chunks {:?}",
            String::from_utf8_lossy(&data),
            chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
        );
        // Every LF ends exactly one record.
        let lfs = data.iter().filter(|&&b| b == b'\n').count();
        let trailing = usize::from(data.last().is_some_and(|&b| b != b'\n'));
        assert_eq!(whole.len(), lfs + trailing, "case {case}");
    }
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.next() as i64),
        3 => json!((rng.next() % 1000) as f64 / 7.0),
        4 => json!(rng.pick(&["", "x", "steer", "followUp", "all", "\u{2028}", "high"])),
        5 => json!(rng.pick(&["anthropic", "mock", "mock-sonnet", "/tmp/x.jsonl"])),
        6 => Value::Array(
            (0..rng.below(3))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(4) {
                let k = rng.pick(&["type", "data", "mimeType", "text", "message"]);
                m.insert((*k).to_string(), random_value(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// Every command type pi-rpc knows, plus near misses.
const TYPES: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "abort_retry",
    "abort_bash",
    "bash",
    "get_state",
    "get_messages",
    "get_available_models",
    "set_model",
    "cycle_model",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "set_auto_compaction",
    "set_auto_retry",
    "compact",
    "new_session",
    "switch_session",
    "fork",
    "clone",
    "get_tree",
    "get_entries",
    "get_fork_messages",
    "get_session_stats",
    "get_last_assistant_text",
    "get_commands",
    "set_session_name",
    "export_html",
    "clear_queue",
    "Prompt",
    "",
    "prompt ",
];

const FIELDS: &[&str] = &[
    "message",
    "images",
    "streamingBehavior",
    "provider",
    "modelId",
    "level",
    "mode",
    "enabled",
    "command",
    "excludeFromContext",
    "customInstructions",
    "parentSession",
    "sessionPath",
    "entryId",
    "name",
    "outputPath",
    "since",
];

#[test]
fn command_parsing_classifies_anything_and_keeps_string_ids() {
    let mut rng = Rng::new(seed(), 2);
    for case in 0..cases() {
        let mut obj = Map::new();
        let id = format!("id-{case}");
        let with_id = rng.below(4) != 0;
        if with_id {
            obj.insert("id".into(), json!(id));
        }
        let ty = *rng.pick(TYPES);
        let typed = rng.below(8) != 0;
        obj.insert(
            "type".into(),
            if typed {
                json!(ty)
            } else {
                random_value(&mut rng, 0)
            },
        );
        for _ in 0..rng.below(4) {
            obj.insert((*rng.pick(FIELDS)).to_string(), random_value(&mut rng, 0));
        }
        let input = Value::Object(obj);
        let text = input.to_string();
        let parsed = parse_incoming(input);
        let got_id = match &parsed {
            Incoming::Command { id, .. }
            | Incoming::Invalid { id, .. }
            | Incoming::Unknown { id, .. }
            | Incoming::NotACommand { id, .. } => id.clone(),
            Incoming::UiResponse(_) => continue,
        };
        if with_id {
            assert_eq!(got_id, Some(json!(id)), "case {case}: {text} -> {parsed:?}");
        }
        if let Incoming::Command { command, .. } = &parsed {
            assert_eq!(command.name(), ty, "case {case}: {text}");
        }
    }
    // Values that are no object at all.
    for v in [
        json!(null),
        json!(1),
        json!("get_state"),
        json!([{"type": "abort"}]),
    ] {
        assert!(matches!(
            parse_incoming(v),
            Incoming::NotACommand { id: None, .. }
        ));
    }
}

/// A reader that hands out its data in the sizes it is told.
struct Dribble {
    data: Vec<u8>,
    pos: usize,
    sizes: Vec<usize>,
    next_size: usize,
}

impl Read for Dribble {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Dribble {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        let size = self.sizes[self.next_size % self.sizes.len()];
        let end = (self.pos + size).min(self.data.len());
        Ok(&self.data[self.pos..end])
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.next_size += 1;
    }
}

fn events(reader: impl BufRead, trailing: bool) -> Vec<SseEvent> {
    let mut p = SseParser::new(reader).dispatch_trailing(trailing);
    let mut out = Vec::new();
    while let Ok(Some(e)) = p.next_event() {
        out.push(e);
    }
    out
}

#[test]
fn sse_parsing_does_not_depend_on_chunking() {
    const PIECES: &[&str] = &[
        "event: message_start\n",
        "data: {\"a\":1}\n",
        "data: line two\r\n",
        "data:no-space\n",
        ": a comment\n",
        "\n",
        "\r\n",
        "\r",
        "id: 7\n",
        "retry: 10\n",
        "event:error\n",
        "data: \u{2028}é\n",
        "\u{feff}",
        "dat",
        "a: x",
    ];
    let mut rng = Rng::new(seed(), 3);
    for case in 0..cases() {
        let mut text = String::new();
        for _ in 0..rng.below(30) {
            let piece: &&str = rng.pick(PIECES);
            text.push_str(piece);
        }
        let data = text.into_bytes();
        let trailing = rng.below(2) == 0;
        let whole = events(std::io::Cursor::new(data.clone()), trailing);
        let sizes: Vec<usize> = (0..1 + rng.below(5)).map(|_| 1 + rng.below(7)).collect();
        let dribbled = events(
            Dribble {
                data: data.clone(),
                pos: 0,
                sizes: sizes.clone(),
                next_size: 0,
            },
            trailing,
        );
        assert_eq!(
            whole,
            dribbled,
            "case {case}: sizes {sizes:?}, input {:?}",
            String::from_utf8_lossy(&data)
        );
    }
}
