//! Property tests of the four wire APIs' event state machines (issue 17, "keep them out"):
//! `anthropic`, `openai_completions`, `openai_responses` and `google`, each driven exactly as
//! `drive::read_events` drives it (the response body through the SSE parser, every event to
//! `WireApi::on_event`, then `WireApi::end` and `StreamedMessage::finish`), with the HTTP
//! exchange left out. The adapters are `pub(crate)`, so these are unit tests.
//!
//! Each case is a valid stream made up at random (text, thinking and tool-call blocks, a stop
//! reason), then, in most cases, mutated: events dropped, duplicated, swapped, moved; JSON
//! payloads truncated, fields given the wrong type, removed, made huge (strings and numbers),
//! lone surrogates; unknown event types; the body cut at a random byte, invalid UTF-8, CR line
//! ends, a read error at the end. For every case:
//!
//! - nothing panics, and the case ends (every loop in the adapters is bounded by the input);
//! - the final message is either complete (`stop`/`length`/`toolUse`, no `errorMessage`) or an
//!   error (`stopReason:"error"` with an `errorMessage`): never both, never neither (`pending`),
//!   never `aborted` (nothing cancels);
//! - the updates are consistent: `Start` once, before any content event; every content event
//!   names an existing block of its kind; each block is started once, gets deltas only while
//!   open and is ended at most once;
//! - an unmutated stream gives exactly the blocks and stop reason it was made from.
//!
//! `PI_RPC_PROPERTY_CASES` sets the number of cases per API (default 2000, what CI runs: about
//! a second each in a debug build, as the cases are cheap); `PI_RPC_PROPERTY_SEED` replays
//! another seed. A longer run (about 5 s per 10,000 cases):
//! `PI_RPC_PROPERTY_CASES=100000 cargo test --lib llm::prop_tests -- --nocapture`.
//!
//! Bugs found (each shown by an ignored test below; the default runs leave them out through
//! [`KNOWN_BUGS`]): token counts near 2^64 overflow the usage sums; a success stop reason after
//! an error one keeps the error's `errorMessage` (as pi 1.6.0 does).

use std::io::{BufReader, Read};

use serde_json::{json, Value};

use super::anthropic;
use super::drive::{Flow, WireApi};
use super::google;
use super::model::{Model, ModelCost};
use super::openai_completions;
use super::openai_responses;
use super::request::read_failure;
use super::sse::SseParser;
use super::stream::{Failure, StreamUpdate, StreamedMessage};
use super::types::{
    AssistantEvent, AssistantMessage, ContentBlock, LlmContext, LlmMessage, StopReason,
    StreamOptions,
};
use crate::cancel::CancelToken;

// ---------------------------------------------------------------------------------------------
// Randomness

use crate::test_rng::{seed, Rng};

fn cases() -> usize {
    crate::test_rng::cases(2000)
}

/// Text that stresses the escaping on every layer: JSON escapes, SSE field syntax, line
/// separators, astral characters, NUL.
fn random_text(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "hello",
        " ",
        "world",
        "\n",
        "\r\n",
        "\r",
        "data: x",
        "event: error",
        "\"",
        "\\",
        "{",
        "}",
        "é",
        "日本",
        "😀",
        "\u{2028}",
        "\u{0}",
        "[DONE]",
        "\t",
    ];
    let mut s = String::new();
    for _ in 0..rng.below(6) {
        s.push_str(rng.pick::<&str>(PIECES));
    }
    s
}

/// `s` cut into 1..=4 pieces at character boundaries (pieces may be empty).
fn split_pieces(rng: &mut Rng, s: &str) -> Vec<String> {
    let bounds: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .collect();
    let mut cuts: Vec<usize> = (0..rng.below(4))
        .map(|_| *rng.pick(&bounds))
        .chain([0, s.len()])
        .collect();
    cuts.sort_unstable();
    cuts.windows(2).map(|w| s[w[0]..w[1]].to_string()).collect()
}

fn random_args(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => json!({}),
        1 => json!({"command": random_text(rng)}),
        2 => {
            json!({"path": random_text(rng), "n": rng.below(1000), "deep": {"a": [1, 2, {"b": null}]}})
        }
        _ => json!({"edits": [{"oldText": random_text(rng), "newText": random_text(rng)}]}),
    }
}

// ---------------------------------------------------------------------------------------------
// Streams and their expected outcome

/// One server-sent event before serialization.
#[derive(Clone, Debug)]
struct Ev {
    name: Option<String>,
    data: String,
}

fn ev(name: Option<&str>, data: Value) -> Ev {
    Ev {
        name: name.map(str::to_owned),
        data: data.to_string(),
    }
}

/// A block as the final message must hold it: `(kind, text)`, tool calls as
/// `("toolCall", "<name> <arguments JSON>")`.
type Block = (&'static str, String);

/// What an unmutated stream must give.
struct Expect {
    blocks: Vec<Block>,
    /// `None`: the stream ends in an error.
    stop: Option<StopReason>,
}

fn blocks_of(msg: &AssistantMessage) -> Vec<Block> {
    msg.content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text, .. } => ("text", text.clone()),
            ContentBlock::Thinking { thinking, .. } => ("thinking", thinking.clone()),
            ContentBlock::ToolCall {
                name, arguments, ..
            } => ("toolCall", format!("{name} {arguments}")),
            ContentBlock::Image { .. } => ("image", String::new()),
        })
        .collect()
}

/// One of the adapters: how its valid streams look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Anthropic,
    Completions,
    Responses,
    Google,
}

impl Api {
    fn model(self) -> Model {
        let (api, id, base) = match self {
            Api::Anthropic => ("anthropic-messages", "mock-sonnet", "http://127.0.0.1:9"),
            Api::Completions => ("openai-completions", "mock-gpt", "http://127.0.0.1:9/v1"),
            Api::Responses => ("openai-responses", "mock-gpt", "http://127.0.0.1:9/v1"),
            Api::Google => (
                "google-generative-ai",
                "gemini-2.5-flash",
                "http://127.0.0.1:9/v1beta",
            ),
        };
        Model {
            id: id.into(),
            name: id.into(),
            api: api.into(),
            provider: "mockp".into(),
            base_url: base.into(),
            reasoning: true,
            input: vec!["text".into()],
            cost: ModelCost {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                tiers: None,
            },
            context_window: 200_000,
            max_tokens: 8192,
            ..Model::default()
        }
    }

    /// Whether events carry an `event:` name (the `type` of their payload).
    fn named_events(self) -> bool {
        matches!(self, Api::Anthropic | Api::Responses)
    }

    fn valid_stream(self, rng: &mut Rng) -> (Vec<Ev>, Expect) {
        match self {
            Api::Anthropic => anthropic_stream(rng),
            Api::Completions => completions_stream(rng),
            Api::Responses => responses_stream(rng),
            Api::Google => google_stream(rng),
        }
    }
}

fn anthropic_stream(rng: &mut Rng) -> (Vec<Ev>, Expect) {
    let e = |name: &str, data: Value| ev(Some(name), data);
    let mut evs = vec![e(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",
            "model":"mock-sonnet","content":[],"stop_reason":null,
            "usage":{"input_tokens":rng.below(5000),"output_tokens":1,
                "cache_read_input_tokens":rng.below(100),"cache_creation_input_tokens":rng.below(100)}}}),
    )];
    if rng.chance(3) {
        evs.push(e("ping", json!({"type":"ping"})));
    }
    let mut blocks = Vec::new();
    for index in 0..rng.below(4) {
        let start = |block: Value| {
            e(
                "content_block_start",
                json!({"type":"content_block_start","index":index,"content_block":block}),
            )
        };
        let delta = |d: Value| {
            e(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":d}),
            )
        };
        match rng.below(4) {
            0 => {
                let text = random_text(rng);
                evs.push(start(json!({"type":"text","text":""})));
                for p in split_pieces(rng, &text) {
                    evs.push(delta(json!({"type":"text_delta","text":p})));
                }
                blocks.push(("text", text));
            }
            1 => {
                let text = random_text(rng);
                evs.push(start(
                    json!({"type":"thinking","thinking":"","signature":""}),
                ));
                for p in split_pieces(rng, &text) {
                    evs.push(delta(json!({"type":"thinking_delta","thinking":p})));
                }
                evs.push(delta(json!({"type":"signature_delta","signature":"SIG"})));
                blocks.push(("thinking", text));
            }
            2 => {
                evs.push(start(json!({"type":"redacted_thinking","data":"ENC"})));
                blocks.push(("thinking", "[Reasoning redacted]".into()));
            }
            _ => {
                let args = random_args(rng);
                evs.push(start(
                    json!({"type":"tool_use","id":format!("toolu_{index}"),"name":"bash","input":{}}),
                ));
                for p in split_pieces(rng, &args.to_string()) {
                    evs.push(delta(json!({"type":"input_json_delta","partial_json":p})));
                }
                blocks.push(("toolCall", format!("bash {args}")));
            }
        }
        evs.push(e(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        ));
    }
    let (reason, stop) = *rng.pick(&[
        ("end_turn", Some(StopReason::Stop)),
        ("stop_sequence", Some(StopReason::Stop)),
        ("pause_turn", Some(StopReason::Stop)),
        ("max_tokens", Some(StopReason::Length)),
        ("tool_use", Some(StopReason::ToolUse)),
        ("refusal", None),
        ("sensitive", None),
        ("no_such_reason", None),
    ]);
    evs.push(e(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":reason,"stop_sequence":null},
            "usage":{"output_tokens":rng.below(5000)}}),
    ));
    let mut stop = stop;
    if rng.chance(10) {
        evs.push(e(
            "error",
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        ));
        stop = None;
    }
    evs.push(e("message_stop", json!({"type":"message_stop"})));
    (evs, Expect { blocks, stop })
}

fn completions_stream(rng: &mut Rng) -> (Vec<Ev>, Expect) {
    let chunk = |delta: Value, finish: Value| {
        ev(
            None,
            json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"mock-gpt",
                "choices":[{"index":0,"delta":delta,"finish_reason":finish}]}),
        )
    };
    let mut evs = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    let mut blocks = Vec::new();
    if rng.chance(2) {
        let text = format!("r{}", random_text(rng));
        for p in split_pieces(rng, &text) {
            evs.push(chunk(json!({"reasoning_content": p}), Value::Null));
        }
        blocks.push(("thinking", text));
    }
    if rng.chance(2) {
        let text = format!("t{}", random_text(rng));
        for p in split_pieces(rng, &text) {
            evs.push(chunk(json!({"content": p}), Value::Null));
        }
        blocks.push(("text", text));
    }
    let calls = rng.below(3);
    for i in 0..calls {
        let args = random_args(rng);
        evs.push(chunk(
            json!({"tool_calls":[{"index":i,"id":format!("call_{i}"),"type":"function",
                "function":{"name":"bash","arguments":""}}]}),
            Value::Null,
        ));
        for p in split_pieces(rng, &args.to_string()) {
            evs.push(chunk(
                json!({"tool_calls":[{"index":i,"function":{"arguments":p}}]}),
                Value::Null,
            ));
        }
        blocks.push(("toolCall", format!("bash {args}")));
    }
    let (reason, stop) = *rng.pick(&[
        ("stop", Some(StopReason::Stop)),
        ("end", Some(StopReason::Stop)),
        ("length", Some(StopReason::Length)),
        ("tool_calls", Some(StopReason::ToolUse)),
        ("function_call", Some(StopReason::ToolUse)),
        ("content_filter", None),
    ]);
    evs.push(chunk(json!({}), json!(reason)));
    evs.push(ev(
        None,
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],
            "usage":{"prompt_tokens":rng.below(5000),"completion_tokens":rng.below(500),
                "total_tokens":0,"prompt_tokens_details":{"cached_tokens":rng.below(10)}}}),
    ));
    let mut stop = stop;
    if rng.chance(10) {
        evs.push(ev(
            None,
            json!({"error":{"message":"boom","type":"server_error"}}),
        ));
        stop = None;
    }
    evs.push(Ev {
        name: None,
        data: "[DONE]".into(),
    });
    (evs, Expect { blocks, stop })
}

fn responses_stream(rng: &mut Rng) -> (Vec<Ev>, Expect) {
    let e = |data: Value| {
        let name = data["type"].as_str().map(str::to_owned);
        Ev {
            name,
            data: data.to_string(),
        }
    };
    let mut evs = vec![e(
        json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}),
    )];
    let mut blocks = Vec::new();
    let mut tool_calls = false;
    for i in 0..rng.below(4) {
        let added =
            |item: Value| json!({"type":"response.output_item.added","output_index":i,"item":item});
        let done =
            |item: Value| json!({"type":"response.output_item.done","output_index":i,"item":item});
        match rng.below(3) {
            0 => {
                let text = format!("s{}", random_text(rng));
                evs.push(e(added(
                    json!({"type":"reasoning","id":format!("rs_{i}"),"summary":[]}),
                )));
                for p in split_pieces(rng, &text) {
                    evs.push(e(json!({"type":"response.reasoning_summary_text.delta","output_index":i,"summary_index":0,"delta":p})));
                }
                evs.push(e(json!({"type":"response.reasoning_summary_part.done","output_index":i,"summary_index":0})));
                evs.push(e(done(json!({"type":"reasoning","id":format!("rs_{i}"),
                    "summary":[{"type":"summary_text","text":text}]}))));
                blocks.push(("thinking", text));
            }
            1 => {
                let text = random_text(rng);
                evs.push(e(added(json!({"type":"message","id":format!("msg_{i}"),"role":"assistant","content":[]}))));
                for p in split_pieces(rng, &text) {
                    evs.push(e(json!({"type":"response.output_text.delta","output_index":i,"content_index":0,"delta":p})));
                }
                evs.push(e(done(
                    json!({"type":"message","id":format!("msg_{i}"),"role":"assistant",
                    "content":[{"type":"output_text","text":text,"annotations":[]}]}),
                )));
                blocks.push(("text", text));
            }
            _ => {
                let args = random_args(rng).to_string();
                let item = |a: &str| {
                    json!({"type":"function_call","id":format!("fc_{i}"),"call_id":format!("call_{i}"),
                        "name":"bash","arguments":a})
                };
                evs.push(e(added(item(""))));
                for p in split_pieces(rng, &args) {
                    evs.push(e(json!({"type":"response.function_call_arguments.delta","output_index":i,"delta":p})));
                }
                evs.push(e(json!({"type":"response.function_call_arguments.done","output_index":i,"arguments":args})));
                evs.push(e(done(item(&args))));
                blocks.push(("toolCall", format!("bash {args}")));
                tool_calls = true;
            }
        }
    }
    let usage = json!({"input_tokens":rng.below(5000),"output_tokens":rng.below(500),"total_tokens":rng.below(6000),
        "input_tokens_details":{"cached_tokens":rng.below(10)},"output_tokens_details":{"reasoning_tokens":rng.below(10)}});
    let stop = match rng.below(6) {
        0 => {
            evs.push(e(
                json!({"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete",
                "incomplete_details":{"reason":"max_output_tokens"},"usage":usage}}),
            ));
            Some(StopReason::Length)
        }
        1 => {
            evs.push(e(
                json!({"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete",
                "incomplete_details":{"reason":"content_filter"},"usage":usage}}),
            ));
            None
        }
        2 => {
            evs.push(e(
                json!({"type":"response.failed","response":{"id":"resp_1","status":"failed",
                "error":{"code":"server_error","message":"The server had an error"}}}),
            ));
            None
        }
        3 if rng.chance(2) => {
            evs.push(e(json!({"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null})));
            None
        }
        _ => {
            evs.push(e(json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":usage}})));
            Some(if tool_calls {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            })
        }
    };
    (evs, Expect { blocks, stop })
}

fn google_stream(rng: &mut Rng) -> (Vec<Ev>, Expect) {
    let chunk = |parts: Value, finish: Option<&str>, usage: bool| {
        let mut candidate = json!({"content":{"parts":parts,"role":"model"},"index":0});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        let mut c =
            json!({"candidates":[candidate],"modelVersion":"gemini-2.5-flash","responseId":"r1"});
        if usage {
            c["usageMetadata"] = json!({"promptTokenCount":12,"candidatesTokenCount":3,
                "thoughtsTokenCount":2,"totalTokenCount":17});
        }
        ev(None, c)
    };
    let mut evs = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut calls = false;
    for _ in 0..rng.below(4) {
        match rng.below(3) {
            // Text and thinking alternate (two texts in a row would be one block).
            0 | 1 => {
                let thought = match blocks.last() {
                    Some(("text", _)) => true,
                    Some(("thinking", _)) => false,
                    _ => rng.chance(2),
                };
                let text = format!("g{}", random_text(rng));
                for p in split_pieces(rng, &text) {
                    let part = if thought {
                        json!({"text":p,"thought":true})
                    } else {
                        json!({"text":p})
                    };
                    evs.push(chunk(json!([part]), None, rng.chance(2)));
                }
                blocks.push((if thought { "thinking" } else { "text" }, text));
            }
            _ => {
                let args = random_args(rng);
                evs.push(chunk(
                    json!([{"functionCall":{"name":"bash","args":args},"thoughtSignature":"c2ln"}]),
                    None,
                    false,
                ));
                blocks.push(("toolCall", format!("bash {args}")));
                calls = true;
            }
        }
    }
    let (reason, stop) = *rng.pick(&[
        ("STOP", Some(StopReason::Stop)),
        ("MAX_TOKENS", Some(StopReason::Length)),
        ("SAFETY", None),
        ("MALFORMED_FUNCTION_CALL", None),
        ("NO_SUCH_REASON", None),
    ]);
    let stop = match stop {
        Some(StopReason::Stop) if calls => Some(StopReason::ToolUse),
        s => s,
    };
    evs.push(chunk(json!([]), Some(reason), true));
    (evs, Expect { blocks, stop })
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// A value of another kind than `v`, or a troublesome one of the same kind. Numbers near
/// 2^64 only when `skip.usage_overflow` is off.
fn wrong_value(rng: &mut Rng, v: &Value, skip: Skip) -> Value {
    let huge = "x".repeat(1 << (10 + rng.below(9)));
    let big = |n: Value| {
        if skip.usage_overflow {
            json!(9_007_199_254_740_991u64)
        } else {
            n
        }
    };
    let options = [
        Value::Null,
        json!(true),
        json!(-1),
        json!(1.5),
        big(json!(1e300)),
        json!(-1e300),
        big(json!(u64::MAX)),
        big(json!(1.7e19)),
        json!(i64::MIN),
        json!(""),
        json!(huge),
        json!("\u{2028}\u{0}"),
        json!([]),
        json!([v.clone()]),
        json!({}),
        json!({"type": v.clone()}),
    ];
    rng.pick(&options).clone()
}

/// Paths (object keys and array indices) to every value inside `v`.
fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                prefix.push(json!(k));
                out.push(prefix.clone());
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                prefix.push(json!(i));
                out.push(prefix.clone());
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at_path<'v>(v: &'v mut Value, path: &[Value]) -> Option<&'v mut Value> {
    let mut cur = v;
    for k in path {
        cur = match k {
            Value::String(s) => cur.get_mut(s.as_str())?,
            Value::Number(n) => cur.get_mut(n.as_u64()? as usize)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Changes one field of the event's JSON payload (or the payload itself).
fn mutate_payload(rng: &mut Rng, e: &mut Ev, skip: Skip) {
    let Ok(mut v) = serde_json::from_str::<Value>(&e.data) else {
        return;
    };
    let mut all = Vec::new();
    paths(&v, &mut Vec::new(), &mut all);
    let kind = rng.below(6);
    if all.is_empty() || kind == 0 {
        v = wrong_value(rng, &v, skip);
    } else {
        let path = rng.pick(&all).clone();
        match kind {
            // Remove the field.
            1 => {
                let (last, parent) = path.split_last().unwrap();
                if let Some(p) = at_path(&mut v, parent) {
                    match (p, last) {
                        (Value::Object(m), Value::String(k)) => {
                            m.shift_remove(k.as_str());
                        }
                        (Value::Array(a), Value::Number(i)) => {
                            let i = i.as_u64().unwrap() as usize;
                            if i < a.len() {
                                a.remove(i);
                            }
                        }
                        _ => {}
                    }
                }
            }
            // A lone surrogate in a string (serde_json rejects it; the repair parser may not).
            2 => {
                if let Some(Value::String(s)) = at_path(&mut v, &path) {
                    s.push_str("@@LONE@@");
                }
            }
            // A huge string where there was a string.
            3 => {
                if let Some(x @ Value::String(_)) = at_path(&mut v, &path) {
                    *x = json!("é".repeat(1 << (8 + rng.below(10))));
                }
            }
            _ => {
                if let Some(x) = at_path(&mut v, &path) {
                    *x = wrong_value(rng, x, skip);
                }
            }
        }
    }
    e.data = v.to_string().replace("@@LONE@@", "\\ud83d");
}

fn random_event_name(rng: &mut Rng) -> Option<String> {
    const NAMES: &[&str] = &[
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
        "error",
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.completed",
        "response.failed",
        "response.incomplete",
        "no.such.event",
        "",
    ];
    if rng.chance(3) {
        None
    } else {
        Some((*rng.pick(NAMES)).to_owned())
    }
}

/// An event of an unknown (or wrongly placed) type.
fn unknown_event(rng: &mut Rng, api: Api) -> Ev {
    let name = random_event_name(rng);
    let ty = name.clone().unwrap_or_else(|| "mystery".into());
    let data = match rng.below(6) {
        0 => json!({"type": ty}),
        1 => {
            json!({"type": ty, "index": rng.below(4), "output_index": rng.below(4), "delta": {"type": "text_delta", "text": "?"}})
        }
        2 => json!({"choices": [{"index": 0, "delta": {"content": "?"}, "finish_reason": null}]}),
        3 => json!({"candidates": [{"content": {"parts": [{"text": "?"}]}}]}),
        4 => json!([1, 2, 3]),
        _ => json!("just a string"),
    };
    let mut e = ev(None, data);
    e.name = if api.named_events() || rng.chance(4) {
        name
    } else {
        None
    };
    if rng.chance(8) {
        e.data = "[DONE]".into();
    }
    e
}

fn mutate_events(rng: &mut Rng, api: Api, evs: &mut Vec<Ev>, skip: Skip) {
    let n = evs.len();
    if n == 0 {
        evs.push(unknown_event(rng, api));
        return;
    }
    match rng.below(10) {
        0 => {
            evs.remove(rng.below(n));
        }
        1 => {
            let i = rng.below(n);
            let copy = evs[i].clone();
            evs.insert(rng.below(n + 1), copy);
        }
        2 => {
            let (i, j) = (rng.below(n), rng.below(n));
            evs.swap(i, j);
        }
        3 => {
            let e = evs.remove(rng.below(n));
            evs.insert(rng.below(n), e);
        }
        4 => {
            // Truncated JSON.
            let e = &mut evs[rng.below(n)];
            let bounds: Vec<usize> = e.data.char_indices().map(|(i, _)| i).collect();
            if !bounds.is_empty() {
                let cut = *rng.pick(&bounds);
                e.data.truncate(cut);
            }
        }
        5 => {
            let i = rng.below(n);
            evs.insert(i, unknown_event(rng, api));
        }
        6 => {
            // The stream stops early.
            evs.truncate(rng.below(n));
        }
        7 => {
            // Another name for an event.
            let i = rng.below(n);
            evs[i].name = random_event_name(rng);
        }
        8 => {
            // An event of another valid stream (a second stop reason, a block of another
            // response, …).
            let (other, _) = api.valid_stream(rng);
            let e = rng.pick(&other).clone();
            evs.insert(rng.below(n + 1), e);
        }
        _ => {
            let i = rng.below(n);
            mutate_payload(rng, &mut evs[i], skip);
        }
    }
}

fn serialize(evs: &[Ev]) -> Vec<u8> {
    let mut out = String::new();
    for e in evs {
        if let Some(name) = &e.name {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        for line in e.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out.into_bytes()
}

fn mutate_bytes(rng: &mut Rng, body: &mut Vec<u8>) {
    match rng.below(5) {
        0 => {
            let cut = rng.below(body.len() + 1);
            body.truncate(cut);
        }
        1 => {
            let at = rng.below(body.len() + 1);
            const JUNK: &[&[u8]] = &[
                b"\xff\xfe",
                b"\xe2\x80",
                b"\n\n",
                b"data: {\n",
                b":comment\n",
                b"\r",
                b"\0",
            ];
            let junk: &&[u8] = rng.pick(JUNK);
            body.splice(at..at, junk.iter().copied());
        }
        2 => {
            // CR line ends throughout.
            *body = String::from_utf8_lossy(body)
                .replace('\n', "\r")
                .into_bytes();
        }
        3 => {
            // No blank line after the last event.
            while body.last() == Some(&b'\n') {
                body.pop();
            }
        }
        _ => {
            // CRLF line ends.
            *body = String::from_utf8_lossy(body)
                .replace('\n', "\r\n")
                .into_bytes();
        }
    }
}

/// A body reader that hands out at most `chunk` bytes per read and may fail at the end
/// (a connection reset mid-stream).
struct Body {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
    fail_at_end: bool,
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.data.len() && self.fail_at_end {
            return Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        }
        let n = buf.len().min(self.chunk).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------------
// The run

/// What the callback saw.
#[derive(Default)]
struct Observed {
    starts: usize,
    /// Per content index: 0 never started, 1 open, 2 ended.
    life: Vec<u8>,
    problems: Vec<String>,
}

impl Observed {
    fn see(&mut self, update: StreamUpdate<'_>) {
        match update {
            StreamUpdate::Start(m) => {
                self.starts += 1;
                if self.starts > 1 {
                    self.problems.push("Start reported twice".into());
                }
                if !m.content.is_empty() {
                    self.problems.push("Start with content".into());
                }
            }
            StreamUpdate::Event(m, e) => {
                if self.starts == 0 {
                    self.problems
                        .push(format!("{} before Start", e.type_name()));
                }
                let ci = e.content_index();
                let kind_ok = matches!(
                    (e, m.content.get(ci)),
                    (
                        AssistantEvent::TextStart { .. }
                            | AssistantEvent::TextDelta { .. }
                            | AssistantEvent::TextEnd { .. },
                        Some(ContentBlock::Text { .. }),
                    ) | (
                        AssistantEvent::ThinkingStart { .. }
                            | AssistantEvent::ThinkingDelta { .. }
                            | AssistantEvent::ThinkingEnd { .. },
                        Some(ContentBlock::Thinking { .. }),
                    ) | (
                        AssistantEvent::ToolcallStart { .. }
                            | AssistantEvent::ToolcallDelta { .. }
                            | AssistantEvent::ToolcallEnd { .. },
                        Some(ContentBlock::ToolCall { .. }),
                    )
                );
                if !kind_ok {
                    self.problems.push(format!(
                        "{} for content[{ci}] = {:?}",
                        e.type_name(),
                        m.content.get(ci)
                    ));
                }
                if self.life.len() <= ci {
                    self.life.resize(ci + 1, 0);
                }
                let stage = e.type_name().rsplit('_').next().unwrap_or("");
                let now = self.life[ci];
                let next = match (stage, now) {
                    ("start", 0) => 1,
                    ("delta", 1) => 1,
                    ("end", 1) => 2,
                    _ => {
                        self.problems.push(format!(
                            "{} for content[{ci}] in state {now} (0 new, 1 open, 2 ended)",
                            e.type_name()
                        ));
                        now
                    }
                };
                self.life[ci] = next;
            }
        }
    }
}

/// `drive::read_events` without the HTTP response and the cancel token.
fn read_events<'a, W: WireApi<'a>>(
    state: &mut W,
    model: &Model,
    body: Body,
    out: &mut StreamedMessage<'_>,
) -> Result<(), Failure> {
    let cancel = CancelToken::new();
    let reader = BufReader::with_capacity(body.chunk.max(1), body);
    for item in SseParser::new(reader).dispatch_trailing(W::DISPATCH_TRAILING) {
        let event = match item {
            Ok(event) => event,
            Err(e) => {
                out.start();
                return Err(read_failure(&e, &cancel));
            }
        };
        if state.on_event(model, &event, out)? == Flow::Stop {
            break;
        }
    }
    out.start();
    Ok(())
}

/// `drive::drive` from the response headers on.
fn run<'a, W: WireApi<'a>>(
    model: &'a Model,
    ctx: &'a LlmContext,
    body: Body,
) -> (AssistantMessage, Observed) {
    let opts = StreamOptions {
        api_key: Some("test-key".into()),
        ..StreamOptions::default()
    };
    let (_, mut state) = match W::request(model, ctx, &opts, &CancelToken::new()) {
        Ok(built) => built,
        Err(e) => panic!("the request was not built: {e:?}"),
    };
    let mut seen = Observed::default();
    let mut on_event = |u: StreamUpdate<'_>| seen.see(u);
    let mut out = StreamedMessage::new(model, &mut on_event);
    out.mark_sent();
    if W::START_ON_HEADERS {
        out.start();
    }
    let read = read_events(&mut state, model, body, &mut out);
    let result = state.end(read, &mut out);
    let texts = state.abort_texts();
    let msg = out.finish(result, &CancelToken::new(), &texts);
    (msg, seen)
}

fn run_api(api: Api, model: &Model, ctx: &LlmContext, body: Body) -> (AssistantMessage, Observed) {
    match api {
        Api::Anthropic => run::<anthropic::StreamState>(model, ctx, body),
        Api::Completions => run::<openai_completions::StreamState>(model, ctx, body),
        Api::Responses => run::<openai_responses::ResponsesStream>(model, ctx, body),
        Api::Google => run::<google::GoogleStream>(model, ctx, body),
    }
}

/// The final message is complete or an error, never both or neither.
fn outcome_problem(msg: &AssistantMessage) -> Option<String> {
    let error = msg.error_message.as_deref();
    match msg.stop_reason {
        StopReason::Stop | StopReason::Length | StopReason::ToolUse if error.is_none() => None,
        // The text may be empty: an `event: error` without data is `new Error("")` in pi.
        StopReason::Error if error.is_some() => None,
        other => Some(format!(
            "stopReason {} with errorMessage {error:?}",
            other.as_str()
        )),
    }
}

/// A short rendering of a case for failure messages (huge payloads cut).
fn describe(evs: &[Ev], body: &[u8]) -> String {
    let mut s = String::new();
    for e in evs {
        let data: String = e.data.chars().take(300).collect();
        let more = if data.len() < e.data.len() { "…" } else { "" };
        s.push_str(&format!("  {:?} {data}{more}\n", e.name));
    }
    let head: Vec<u8> = body.iter().copied().take(2000).collect();
    s.push_str(&format!(
        "  body ({} bytes): {:?}",
        body.len(),
        String::from_utf8_lossy(&head)
    ));
    s
}

/// Known-bug classes a property run may leave out, so that the default run checks everything
/// else (each has its own ignored test that shows it with a fixed input).
#[derive(Clone, Copy, Debug, Default)]
struct Skip {
    /// Token counts near 2^64, whose sums overflow (see `usage_counts_near_2_pow_64_overflow`):
    /// not generated.
    usage_overflow: bool,
    /// A success stop reason that keeps the `errorMessage` of an earlier error stop reason
    /// (see `a_second_stop_reason_keeps_the_first_ones_error_message`): not counted as a
    /// failure.
    stale_error_message: bool,
}

/// What the default runs leave out.
const KNOWN_BUGS: Skip = Skip {
    usage_overflow: true,
    stale_error_message: true,
};

/// Nothing left out.
const STRICT: Skip = Skip {
    usage_overflow: false,
    stale_error_message: false,
};

/// How the cases of a run ended.
#[derive(Debug, Default)]
struct Tally {
    unmutated: usize,
    complete: usize,
    errors: usize,
}

/// Runs `cases` cases of `api` from `seed`; returns a description of the first failure.
fn check_api(api: Api, seed: u64, cases: usize, skip: Skip) -> Result<Tally, String> {
    let model = api.model();
    let ctx = LlmContext {
        transcript: None,
        leading_system: None,
        system_prompt: "You are a test.".into(),
        messages: vec![LlmMessage::User {
            content: vec![ContentBlock::text("hi")],
            timestamp: 1,
            as_string: false,
        }],
        tools: Vec::new(),
    };
    let mut rng = Rng::new(seed, api as u64 + 100);
    let mut tally = Tally::default();
    for case in 0..cases {
        let (mut evs, expect) = api.valid_stream(&mut rng);
        let mutations = match rng.below(4) {
            0 => 0,
            1 => 1,
            2 => 2,
            _ => 1 + rng.below(6),
        };
        for _ in 0..mutations {
            mutate_events(&mut rng, api, &mut evs, skip);
        }
        let mut body = serialize(&evs);
        let byte_mutation = mutations > 0 && rng.chance(4);
        if byte_mutation {
            mutate_bytes(&mut rng, &mut body);
        }
        let fail_at_end = mutations > 0 && rng.chance(12);
        let chunk = *rng.pick(&[1usize, 3, 7, 64, 4096, 1 << 20]);
        let reader = Body {
            data: body.clone(),
            pos: 0,
            chunk,
            fail_at_end,
        };
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_api(api, &model, &ctx, reader)
        }));
        let context = || {
            format!(
                "{api:?} case {case} (seed {seed}, {mutations} event mutations, bytes mutated: \
                 {byte_mutation}, read error: {fail_at_end}, chunk {chunk}):\n{}",
                describe(&evs, &body)
            )
        };
        let (msg, seen) = match ran {
            Ok(r) => r,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default();
                return Err(format!("panicked ({what}) on {}", context()));
            }
        };
        let stale = skip.stale_error_message
            && msg.error_message.is_some()
            && matches!(
                msg.stop_reason,
                StopReason::Stop | StopReason::Length | StopReason::ToolUse
            );
        if let Some(p) = outcome_problem(&msg).filter(|_| !stale) {
            return Err(format!("{p} on {}", context()));
        }
        if let Some(p) = seen.problems.first() {
            return Err(format!("update problem: {p} on {}", context()));
        }
        if msg.stop_reason != StopReason::Error && seen.starts != 1 {
            return Err(format!("complete without Start on {}", context()));
        }
        if msg.to_value().is_null() {
            return Err(format!("message does not serialize on {}", context()));
        }
        if msg.stop_reason == StopReason::Error {
            tally.errors += 1;
        } else {
            tally.complete += 1;
        }
        if mutations == 0 {
            tally.unmutated += 1;
            let got_stop = (msg.stop_reason != StopReason::Error).then_some(msg.stop_reason);
            if got_stop != expect.stop {
                return Err(format!(
                    "expected stop {:?}, got {:?} ({:?}) on {}",
                    expect.stop,
                    msg.stop_reason,
                    msg.error_message,
                    context()
                ));
            }
            if blocks_of(&msg) != expect.blocks {
                return Err(format!(
                    "expected blocks {:?}, got {:?} on {}",
                    expect.blocks,
                    blocks_of(&msg),
                    context()
                ));
            }
        }
    }
    Ok(tally)
}

fn property(api: Api) {
    let started = std::time::Instant::now();
    let n = cases();
    match check_api(api, seed(), n, KNOWN_BUGS) {
        Ok(t) => eprintln!(
            "{api:?}: {n} cases in {:?}: {} unmutated; {} complete, {} errors",
            started.elapsed(),
            t.unmutated,
            t.complete,
            t.errors
        ),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn anthropic_event_state_machine() {
    property(Api::Anthropic);
}

#[test]
fn openai_completions_event_state_machine() {
    property(Api::Completions);
}

#[test]
fn openai_responses_event_state_machine() {
    property(Api::Responses);
}

#[test]
fn google_event_state_machine() {
    property(Api::Google);
}

/// Tests the generators themselves: the pieces of a split join to the whole.
#[test]
fn split_pieces_join_to_the_whole() {
    let mut rng = Rng::new(seed(), 7);
    for _ in 0..200 {
        let s = random_text(&mut rng);
        assert_eq!(split_pieces(&mut rng, &s).concat(), s);
    }
}

// ---------------------------------------------------------------------------------------------
// Bugs the properties found (fixed inputs)

/// Runs `evs` through `api`'s state machine as it is (no mutation, whole body at once).
fn run_events(api: Api, evs: &[Ev]) -> AssistantMessage {
    let model = api.model();
    let ctx = LlmContext::default();
    let body = Body {
        data: serialize(evs),
        pos: 0,
        chunk: 1 << 20,
        fail_at_end: false,
    };
    run_api(api, &model, &ctx, body).0
}

fn named(data: Value) -> Ev {
    let name = data["type"].as_str().map(str::to_owned);
    Ev {
        name,
        data: data.to_string(),
    }
}

/// A provider's token count near 2^64 (any number up to 1.8e19 is read as a `u64`; bigger
/// floats saturate to `u64::MAX`) overflows the `u64` sums of the usage: in a debug build the
/// adapter panics ("attempt to add with overflow"), in a release build (no overflow checks)
/// `totalTokens` / `output` wrap around. pi adds JavaScript numbers and never overflows.
const USAGE_OVERFLOW: &str = "bug: a token count near 2^64 overflows the u64 usage sums (panic in a debug build, wrapped totals in release)";

#[test]
fn usage_counts_near_2_pow_64_overflow_anthropic() {
    // anthropic/events.rs, recompute_usage: input + output + cache_read + cache_write.
    let msg = run_events(
        Api::Anthropic,
        &[
            named(json!({"type":"message_start","message":{"id":"m","usage":
                {"input_tokens":1,"output_tokens":18446744073709551615u64}}})),
            named(json!({"type":"message_delta","delta":{"stop_reason":"end_turn"}})),
            named(json!({"type":"message_stop"})),
        ],
    );
    assert_eq!(msg.stop_reason, StopReason::Stop, "{USAGE_OVERFLOW}");
    assert!(
        msg.usage.total_tokens >= msg.usage.output,
        "{:?}",
        msg.usage
    );
}

#[test]
fn usage_counts_near_2_pow_64_overflow_openai_completions() {
    // openai_completions/events.rs, parse_usage: input + output + cache_read + cache_write.
    let chunk = |v: Value| ev(None, v);
    let msg = run_events(
        Api::Completions,
        &[
            chunk(
                json!({"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}),
            ),
            chunk(
                json!({"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1e300}}),
            ),
            Ev {
                name: None,
                data: "[DONE]".into(),
            },
        ],
    );
    assert_eq!(msg.stop_reason, StopReason::Stop, "{USAGE_OVERFLOW}");
    assert!(
        msg.usage.total_tokens >= msg.usage.output,
        "{:?}",
        msg.usage
    );
}

#[test]
fn usage_counts_near_2_pow_64_overflow_openai_responses() {
    // openai_responses/events.rs, finalize: cached + cache_write.
    let msg = run_events(
        Api::Responses,
        &[named(
            json!({"type":"response.completed","response":{"id":"r","status":"completed",
            "usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6,
                "input_tokens_details":{"cached_tokens":18446744073709551615u64,"cache_write_tokens":1}}}}),
        )],
    );
    assert_eq!(msg.stop_reason, StopReason::Stop, "{USAGE_OVERFLOW}");
}

#[test]
fn usage_counts_near_2_pow_64_overflow_google() {
    // google/events.rs, handle: candidatesTokenCount + thoughtsTokenCount.
    let msg = run_events(
        Api::Google,
        &[ev(
            None,
            json!({"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],
                "usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1.7e19,"thoughtsTokenCount":1.7e19}}),
        )],
    );
    assert_eq!(msg.stop_reason, StopReason::Stop, "{USAGE_OVERFLOW}");
    assert!(
        msg.usage.output >= 17_000_000_000_000_000_000,
        "{:?}",
        msg.usage
    );
}

/// A stream with two stop reasons, an error one first (Anthropic `refusal` / `sensitive`,
/// Chat Completions `content_filter` or any unknown `finish_reason`) and a success one after
/// it, ends as `stopReason:"stop"` (or `length` / `toolUse`) that still carries the first
/// one's `errorMessage`: complete and an error at once. pi 1.6.0 does the same (it sets
/// `errorMessage` only when the mapped reason has one and never clears it).
#[test]
#[ignore = "bug: a success stop reason after an error one keeps the error's errorMessage (stopReason stop + errorMessage; pi 1.6.0 alike)"]
fn a_second_stop_reason_keeps_the_first_ones_error_message_anthropic() {
    let msg = run_events(
        Api::Anthropic,
        &[
            named(
                json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}),
            ),
            named(json!({"type":"message_delta","delta":{"stop_reason":"refusal"}})),
            named(json!({"type":"message_delta","delta":{"stop_reason":"end_turn"}})),
            named(json!({"type":"message_stop"})),
        ],
    );
    // Actual: Stop with errorMessage "The model refused to complete the request".
    assert_eq!(outcome_problem(&msg), None);
}

#[test]
#[ignore = "bug: a success stop reason after an error one keeps the error's errorMessage (stopReason stop + errorMessage; pi 1.6.0 alike)"]
fn a_second_stop_reason_keeps_the_first_ones_error_message_openai_completions() {
    let chunk = |finish: &str| {
        ev(
            None,
            json!({"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":finish}]}),
        )
    };
    let msg = run_events(
        Api::Completions,
        &[
            chunk("content_filter"),
            chunk("stop"),
            Ev {
                name: None,
                data: "[DONE]".into(),
            },
        ],
    );
    // Actual: Stop with errorMessage "Provider finish_reason: content_filter".
    assert_eq!(outcome_problem(&msg), None);
}

/// The properties with nothing left out, from the seed that found the bugs above (seed 1: the
/// Anthropic run fails at case 220, Chat Completions at case 1192, Google at case 840, at the
/// time of writing).
#[test]
#[ignore = "bug: the two bugs above (usage overflow, stale errorMessage), as the property runs found them"]
fn strict_property_runs_with_the_seed_that_found_them() {
    let failures: Vec<String> = [
        Api::Anthropic,
        Api::Completions,
        Api::Responses,
        Api::Google,
    ]
    .into_iter()
    .filter_map(|api| check_api(api, 1, 5000, STRICT).err())
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
