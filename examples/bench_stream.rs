//! Streaming throughput and per-delta latency of the LLM parsing path (SSE → adapter →
//! callback), and of the whole binary over RPC.
//!
//!     cargo build --release && cargo run --release --example bench_stream [-- DELTAS]
//!
//! Prints figures; asserts nothing about time. Measured, with DELTAS text deltas (default
//! 100,000) in one Anthropic Messages reply of one character each:
//!
//! 1. `SseParser` alone on an in-memory body (events/s, MB/s), then with each event's JSON parsed.
//! 2. `stream_assistant` against the scripted server with the body pre-rendered (`raw_sse` in
//!    64 KiB pieces, so the server costs nothing): deltas/s through HTTP, SSE, JSON and the
//!    adapter to the callback.
//! 3. `stream_assistant` against the scripted server's own rendering (`chunk_size: 1`: one HTTP
//!    chunk and one write per event), for comparison.
//! 4. Added latency per delta: a small in-process server writes each event with the time of the
//!    write (ns since a shared `Instant`) as the delta text, paced apart; the callback subtracts
//!    it from its own clock. That is write → socket → read → SSE → JSON → adapter → callback.
//! 5. The release binary over RPC: a prompt answered by the pre-rendered reply; counts the
//!    `message_update` lines on stdout (the binary is `target/release/pi-rpc`, or `PI_RPC_BIN`).
//! 6. The per-update usage serialization the agent does for each `message_update` (usage with
//!    real costs to a `Value`, then a JavaScript-formatted line), with the float-formatting cost.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::io::{BufRead, BufReader, Cursor, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mock_llm::MockLlm;
use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::model::ModelCost;
use pi_rpc::llm::sse::SseParser;
use pi_rpc::llm::stream::StreamUpdate;
use pi_rpc::llm::types::{
    AssistantEvent, ContentBlock, LlmContext, LlmMessage, StopReason, StreamOptions,
};
use pi_rpc::llm::wire::stream_assistant;
use pi_rpc::llm::Model;
use serde_json::{json, Value};

fn model(base_url: &str) -> Model {
    Model {
        id: "bench-model".into(),
        name: "Bench".into(),
        api: "anthropic-messages".into(),
        provider: "mock".into(),
        base_url: base_url.into(),
        reasoning: false,
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

fn context() -> LlmContext {
    LlmContext {
        transcript: None,
        leading_system: None,
        system_prompt: "You are a benchmark.".into(),
        messages: vec![LlmMessage::User {
            content: vec![ContentBlock::text("Stream a long reply.")],
            timestamp: 1,
            as_string: false,
        }],
        tools: Vec::new(),
    }
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some("bench-key".into()),
        idle_timeout: Duration::from_secs(30),
        ..StreamOptions::default()
    }
}

fn sse_event(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn head_events() -> String {
    sse_event(
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
    ) + &sse_event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    )
}

fn delta_event(text: &str) -> String {
    let data =
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}});
    sse_event("content_block_delta", &data.to_string())
}

fn tail_events(output_tokens: usize) -> String {
    sse_event(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    ) + &sse_event(
        "message_delta",
        &format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"end_turn","stop_sequence":null}},"usage":{{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{output_tokens}}}}}"#
        ),
    ) + &sse_event("message_stop", r#"{"type":"message_stop"}"#)
}

/// The whole Anthropic SSE body of a reply with `n` one-character text deltas.
fn anthropic_body(n: usize) -> String {
    let one = delta_event("x");
    let mut body = String::with_capacity(n * one.len() + 1024);
    body.push_str(&head_events());
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    for i in 0..n {
        let c = letters[i % letters.len()] as char;
        body.push_str(&delta_event(c.encode_utf8(&mut [0; 4])));
    }
    body.push_str(&tail_events(n));
    body
}

/// `body` in pieces of about `size` bytes (ASCII, so any byte is a char boundary).
fn pieces(body: &str, size: usize) -> Vec<String> {
    body.as_bytes()
        .chunks(size)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

fn rate(n: usize, d: Duration) -> String {
    let per_s = n as f64 / d.as_secs_f64();
    if per_s >= 1e6 {
        format!("{:.2} M/s", per_s / 1e6)
    } else {
        format!("{:.0} k/s", per_s / 1e3)
    }
}

fn ns_per(n: usize, d: Duration) -> f64 {
    d.as_nanos() as f64 / n.max(1) as f64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

// ------------------------------------------------------------------------------ 1. SSE alone

fn bench_sse_only(body: &str, n: usize) {
    println!(
        "1. SSE parser alone, in memory ({:.1} MB body)",
        body.len() as f64 / 1e6
    );
    for round in 0..3 {
        let start = Instant::now();
        let mut events = 0usize;
        let mut bytes = 0usize;
        for ev in SseParser::new(Cursor::new(body.as_bytes())) {
            let ev = ev.expect("in-memory read");
            events += 1;
            bytes += ev.data.len();
        }
        let d = start.elapsed();
        std::hint::black_box(bytes);
        println!(
            "   round {round}: {events} events in {:.1} ms: {} events, {:.0} MB/s, {:.0} ns/event",
            d.as_secs_f64() * 1e3,
            rate(events, d),
            body.len() as f64 / d.as_secs_f64() / 1e6,
            ns_per(events, d)
        );
    }
    let start = Instant::now();
    let mut texts = 0usize;
    for ev in SseParser::new(Cursor::new(body.as_bytes())) {
        let ev = ev.expect("in-memory read");
        let v: Value = serde_json::from_str(&ev.data).expect("json");
        if v["delta"]["text"].is_string() {
            texts += 1;
        }
    }
    let d = start.elapsed();
    assert_eq!(texts, n);
    println!(
        "   + serde_json::Value per event: {} events, {:.0} ns/event",
        rate(texts, d),
        ns_per(texts, d)
    );
}

// ------------------------------------------------------- 2./3. stream_assistant via the mock

struct StreamRun {
    deltas: usize,
    total: Duration,
    /// From the `Start` callback (response headers in) to the last delta.
    streaming: Duration,
}

fn run_stream(base_url: &str) -> StreamRun {
    let m = model(base_url);
    let ctx = context();
    let opts = options();
    let cancel = CancelToken::new();
    let mut deltas = 0usize;
    let mut started: Option<Instant> = None;
    let mut last = Instant::now();
    let t0 = Instant::now();
    let msg = stream_assistant(&m, &ctx, &opts, &cancel, &mut |u| match u {
        StreamUpdate::Start(_) => started = Some(Instant::now()),
        StreamUpdate::Event(_, AssistantEvent::TextDelta { .. }) => {
            deltas += 1;
            last = Instant::now();
        }
        StreamUpdate::Event(..) => {}
    });
    let total = t0.elapsed();
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    StreamRun {
        deltas,
        total,
        streaming: last.duration_since(started.unwrap_or(t0)),
    }
}

fn report_stream(label: &str, runs: &[StreamRun]) {
    for (i, r) in runs.iter().enumerate() {
        println!(
            "   {label} run {i}: {} deltas in {:.1} ms (request to end): {} deltas; streaming part {} ({:.0} ns/delta)",
            r.deltas,
            r.total.as_secs_f64() * 1e3,
            rate(r.deltas, r.total),
            rate(r.deltas, r.streaming),
            ns_per(r.deltas, r.streaming)
        );
    }
}

fn bench_stream_prerendered(body: &str) {
    println!("2. stream_assistant, mock with the body pre-rendered (raw_sse, 64 KiB chunks)");
    let mock =
        MockLlm::start(json!({"replies": [], "default": {"raw_sse": pieces(body, 64 * 1024)}}));
    let runs: Vec<StreamRun> = (0..3).map(|_| run_stream(&mock.base_url())).collect();
    report_stream("pre-rendered", &runs);
}

fn bench_stream_mock_rendered(n: usize) {
    println!("3. stream_assistant, mock rendering each event (chunk_size 1: one chunk + write per event)");
    let text: String = (0..n).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let mock = MockLlm::start(json!({"replies": [], "default": {
        "blocks": [{"type": "text", "text": text}], "chunk_size": 1,
        "usage": {"input": 12, "output": n}}}));
    let runs: Vec<StreamRun> = (0..2).map(|_| run_stream(&mock.base_url())).collect();
    report_stream("mock-rendered", &runs);
}

// --------------------------------------------------------------------- 4. per-delta latency

/// Serves one request: the SSE head, then `n` deltas whose text is the write time (ns since
/// `epoch`), each `gap` after the previous one, then the tail.
fn timestamp_server(
    n: usize,
    gap: Duration,
    epoch: Instant,
) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let _ = stream.set_nodelay(true);
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut out = stream;
        let chunk = |out: &mut std::net::TcpStream, data: &str| {
            let framed = format!("{:x}\r\n{data}\r\n", data.len());
            out.write_all(framed.as_bytes())
        };
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
        if out.write_all(head.as_bytes()).is_err() || chunk(&mut out, &head_events()).is_err() {
            return;
        }
        let mut next = Instant::now();
        for _ in 0..n {
            // Spin to the next slot (sleeping would add the scheduler's wake-up jitter).
            while Instant::now() < next {
                std::hint::spin_loop();
            }
            next += gap;
            let ts = epoch.elapsed().as_nanos().to_string();
            if chunk(&mut out, &delta_event(&ts)).is_err() {
                return;
            }
        }
        let _ = chunk(&mut out, &tail_events(n));
        let _ = out.write_all(b"0\r\n\r\n");
    });
    (url, handle)
}

fn bench_latency(n: usize, gap: Duration) {
    let epoch = Instant::now();
    let (url, server) = timestamp_server(n, gap, epoch);
    let m = model(&url);
    let ctx = context();
    let opts = options();
    let cancel = CancelToken::new();
    let mut lat_us: Vec<f64> = Vec::with_capacity(n);
    let msg = stream_assistant(&m, &ctx, &opts, &cancel, &mut |u| {
        if let StreamUpdate::Event(_, AssistantEvent::TextDelta { delta, .. }) = u {
            let now = epoch.elapsed().as_nanos();
            if let Ok(ts) = delta.parse::<u128>() {
                lat_us.push(now.saturating_sub(ts) as f64 / 1e3);
            }
        }
    });
    let _ = server.join();
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    // The first deltas warm the path up; report the steady state.
    let skip = (lat_us.len() / 20).min(500);
    let mut steady: Vec<f64> = lat_us[skip..].to_vec();
    steady.sort_by(|a, b| a.total_cmp(b));
    println!(
        "   gap {:>4} µs: {} deltas: write→callback median {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        gap.as_micros(),
        lat_us.len(),
        percentile(&steady, 0.5),
        percentile(&steady, 0.9),
        percentile(&steady, 0.99),
        steady.last().copied().unwrap_or(f64::NAN),
    );
}

// ------------------------------------------------------------------------------ 5. over RPC

fn bench_rpc(body: &str, n: usize) {
    let bin = std::env::var_os("PI_RPC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/pi-rpc"));
    println!("5. the binary over RPC ({})", bin.display());
    if !bin.exists() {
        println!("   skipped: not built (cargo build --release)");
        return;
    }
    let mock =
        MockLlm::start(json!({"replies": [], "default": {"raw_sse": pieces(body, 64 * 1024)}}));
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(),
        "api": "anthropic-messages", "apiKey": "bench-key",
        "models": [{"id": "bench-model", "contextWindow": 200000, "maxTokens": 8192}]}}});
    let dir = bench_support::agent_dir("stream", &models.to_string());
    for round in 0..3 {
        let mut child = bench_support::spawn_rpc(
            &bin,
            &dir,
            &["--provider", "mock", "--model", "bench-model"],
        );
        let mut stdin = child.stdin.take().expect("stdin");
        let mut out = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
        let t0 = Instant::now();
        stdin
            .write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"Stream a long reply.\"}\n")
            .expect("write");
        stdin.flush().expect("flush");
        let (mut updates, mut bytes) = (0usize, 0usize);
        let mut first: Option<Instant> = None;
        let mut last = t0;
        let mut line = String::new();
        loop {
            line.clear();
            if out.read_line(&mut line).unwrap_or(0) == 0 {
                println!("   round {round}: stdout closed early");
                break;
            }
            bytes += line.len();
            if line.starts_with("{\"type\":\"message_update\"") {
                updates += 1;
                last = Instant::now();
                first.get_or_insert(last);
            } else if line.starts_with("{\"type\":\"agent_settled\"") {
                break;
            }
        }
        let total = t0.elapsed();
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        let streaming = last.duration_since(first.unwrap_or(t0));
        println!(
            "   round {round}: {updates}/{n} message_update lines ({:.1} MB stdout) in {:.1} ms (prompt to agent_settled): {}; streaming part {} ({:.0} ns/line)",
            bytes as f64 / 1e6,
            total.as_secs_f64() * 1e3,
            rate(updates, total),
            rate(updates, streaming),
            ns_per(updates, streaming)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------- 6. usage per message_update

fn bench_usage_serialization() {
    println!("6. usage serialization per message_update (costs of a claude-sonnet reply)");
    let mut usage = pi_rpc::llm::types::Usage {
        input: 12,
        output: 1,
        cache_read: 30,
        cache_write: 10,
        ..pi_rpc::llm::types::Usage::default()
    };
    usage.recompute_cost(&model("http://127.0.0.1:9"));
    println!("   usage: {}", pi_rpc::protocol::framing::encode(&usage));
    let n = 200_000;
    let start = Instant::now();
    for _ in 0..n {
        let v = serde_json::to_value(std::hint::black_box(&usage)).unwrap_or(Value::Null);
        std::hint::black_box(pi_rpc::protocol::framing::encode(&v));
    }
    let d = start.elapsed();
    println!(
        "   to_value + encode (JavaScript numbers): {:.0} ns/update",
        ns_per(n, d)
    );
    let start = Instant::now();
    for _ in 0..n {
        let v = serde_json::to_value(std::hint::black_box(&usage)).unwrap_or(Value::Null);
        std::hint::black_box(serde_json::to_string(&v).unwrap_or_default());
    }
    let d = start.elapsed();
    println!(
        "   to_value + serde_json::to_string (for comparison): {:.0} ns/update",
        ns_per(n, d)
    );
    let values = [0.000036, 0.00045, 9e-6, 3.75e-5, 0.0004215, 3.0, 1234.5678];
    let start = Instant::now();
    let mut buf = pi_rpc::js::number::JsNumberBuf::new();
    for i in 0..n {
        std::hint::black_box(buf.format(values[i % values.len()]).len());
    }
    let d = start.elapsed();
    println!("   JsNumberBuf::format: {:.0} ns/number", ns_per(n, d));
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    if cfg!(debug_assertions) {
        println!("(debug build: run with --release for meaningful figures)");
    }
    let body = anthropic_body(n);
    bench_sse_only(&body, n);
    bench_stream_prerendered(&body);
    bench_stream_mock_rendered(n);
    println!("4. added latency per delta (in-process server stamping each write, paced)");
    for gap_us in [1000u64, 100, 20] {
        let count = (2_000_000 / gap_us).clamp(2_000, 20_000) as usize;
        bench_latency(count, Duration::from_micros(gap_us));
    }
    bench_rpc(&body, n);
    bench_usage_serialization();
}
