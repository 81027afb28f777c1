//! Classification of failed responses: retryable provider/transport errors (agent-loop.md §6)
//! and context overflow (agent-loop.md §7.3).
//!
//! pi expresses both as case-insensitive JavaScript regexes (`/…/i`, without the `u` flag). This
//! file keeps pi's pattern texts verbatim, parses them ([`Pattern::new`]: the regex subset they
//! use) and translates them once into the syntax of the `regex` crate, whose engines run in time
//! linear in the text and with a stack that does not grow with it (no backtracking, no
//! recursion). The translation keeps JavaScript's meaning, which differs from the `regex`
//! crate's own in several places:
//! * **`i` without `u`**: an ASCII letter matches its two ASCII cases and nothing else (Unicode
//!   case folding would add the Kelvin sign `K` to `k` and the long `ſ` to `s`). Letters are
//!   written out as classes (`[kK]`), no case-insensitive flag is used, and a pattern with a
//!   non-ASCII character is refused.
//! * **`\s` / `\S`** are JavaScript's white space and line terminators: U+FEFF is one, U+0085 is
//!   not (Rust's Unicode `\s` says the opposite). `\d` and `\w` are ASCII; `.` is anything but
//!   `\n`, `\r`, U+2028 and U+2029.
//! * **UTF-16**: a JavaScript string is UTF-16, and `.`, `\S` or a negated class match one code
//!   unit, so a character outside the BMP counts as two (`rate.?limit` does not match
//!   `rate😀limit`). Such a character is matched as two [`STAND_IN`] characters, which every
//!   one of those atoms matches and nothing else does, as with surrogate halves.
//! * **Look-arounds**, which the `regex` crate lacks: pi only uses one-character guards,
//!   `(?<![…])` at the start and `(?![…])` at the end of a pattern's alternative. There they
//!   are equivalent to `(?:^|[^…])` and `(?:[^…]|$)`, since only whether a match exists
//!   matters; the parser refuses a look-around anywhere else.
//!
//! **Bounded work.** An error text can be long: an SSE `error` event can carry megabytes, and a
//! provider can quote a whole HTML page. Classification looks at most at the first and the last
//! [`SCAN_WINDOW`] bytes of a text (the whole text when it is at most twice that): a pattern
//! counts as matched when it matches inside either end, with `^` and `$` still meaning the
//! start and the end of the whole text. That cannot change a classification in practice: what
//! the patterns look for sits at the ends of an error text and is short. At the start, the
//! status code and the SDK's or transport's wording (`429 …`, `OpenAI API error (413): …`,
//! `Connection error.: …`, `terminated: …`) and the provider's JSON error object (its
//! `message` is a sentence, a few hundred bytes at most); at the end, what is appended after a
//! quoted body (OpenRouter's `metadata.raw`; Google's `"code":503,"status":"UNAVAILABLE"` after
//! a text body). A keyword more than 16 KiB away from both ends is inside a body that is
//! itself noise (a page of HTML, a stack trace), where matching it would be an accident.
//! Without the bound, pi-rpc's earlier backtracking matcher recursed once per character and
//! overflowed its stack on an 8 kB body, and took seconds on a 4 MiB one.

use std::sync::OnceLock;

use super::types::{AssistantMessage, StopReason};

mod js_regex;

use js_regex::Pattern;

/// How many bytes at each end of an error text classification looks at (see the module docs).
pub const SCAN_WINDOW: usize = 16 * 1024;

/// What a character outside the BMP is matched as, twice (one per UTF-16 code unit). Any
/// character that is not ASCII, not a space and not a line terminator behaves like a surrogate
/// half under every atom the patterns can contain; this one is a private-use code point.
pub const STAND_IN: char = '\u{F0000}';

/// pi's `NON_RETRYABLE_PROVIDER_LIMIT_ERROR_PATTERN` alternatives.
const NON_RETRYABLE: &[&str] = &[
    "GoUsageLimitError",
    "FreeUsageLimitError",
    "Monthly usage limit reached",
    "available balance",
    "insufficient_quota",
    "out of budget",
    "quota exceeded",
    "billing",
    "subscription_sharing_usage_limit_exceeded",
    "subscription_sharing_workplace_individual_usage_limit_exceeded",
    r#""code"\s*:\s*"?1308(?![0-9])"#,
];

/// pi's `RETRYABLE_PROVIDER_ERROR_PATTERN` alternatives.
const RETRYABLE: &[&str] = &[
    "overloaded",
    "server_busy",
    "servers are currently busy",
    "currently experiencing high demand",
    "model is at capacity",
    "rate.?limit",
    "too many requests",
    "(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])",
    "service.?(?:is.?)?(?:temporarily.?)?unavailable",
    "server.?error",
    "internal.?error",
    "provider.?returned.?(?:an.?)?error",
    "exceeded request buffer limit while retrying upstream",
    "unable to forward upstream",
    "upstream.?request.?failed",
    "upstream_stream_read_error",
    "stream was interrupted",
    "http/?2 stream failed",
    "network.?error",
    "connection.?error",
    "connection.?refused",
    "connection.?lost",
    "connection.?closed",
    "other side closed",
    "fetch failed",
    r"request to \S+ failed, reason:",
    "getaddrinfo",
    "(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])",
    "connection reset by peer",
    "ENOTFOUND",
    "EAI_AGAIN",
    "upstream.?connect",
    "reset before headers",
    "socket hang up",
    "socket connection was closed",
    "timed? out",
    "timeout",
    "terminated",
    "websocket.?closed",
    "websocket.?error",
    "websocket.?connection.?limit.?reached",
    "ended without",
    "stream ended before message_stop",
    "stream ended before a terminal response event",
    "http2 request did not get a response",
    "stream disconnected before completion",
    "cut short after the reply had begun",
    "pending stream has been canceled",
    "retry delay",
    "you can retry your request",
    "try your request again",
    "please retry your request",
    "ResourceExhausted",
    "subscription_sharing_usage_unavailable",
    "subscription_sharing_user_unavailable",
];

/// pi's `OVERFLOW_PATTERNS`.
const OVERFLOW: &[&str] = &[
    "prompt (?:is )?too long",
    "prompt exceeds max length",
    "request_too_large",
    "input is too long for requested model",
    "exceeds the context window",
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    "context window exceeded",
    "input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    "reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
    r"exceeds the limit of \d+",
    "exceeds the available context size",
    "greater than the context length",
    "context window exceeds limit",
    "exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
    "model_context_window_exceeded",
    "prompt too long; exceeded (?:max )?context length",
    "range of input length should be",
    "context[_ ]length[_ ]exceeded",
    "too many tokens",
    "token limit exceeded",
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
];

/// pi's `NON_OVERFLOW_PATTERNS`.
const NON_OVERFLOW: &[&str] = &[
    "^(Throttling error|Service unavailable):",
    "rate limit",
    "too many requests",
];

const CEREBRAS_BODYLESS_OVERFLOW: &str = r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)";

/// Each list compiled as one pattern (its entries joined by `|`, which is how pi builds the
/// retry patterns and what testing each overflow pattern in turn amounts to).
struct Compiled {
    non_retryable: Pattern,
    retryable: Pattern,
    overflow: Pattern,
    non_overflow: Pattern,
    cerebras: Pattern,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        // Every pattern is in the supported subset (a unit test checks); should one not be,
        // it matches nothing rather than taking the process down.
        let all = |ps: &[&str]| Pattern::any(ps).unwrap_or_else(Pattern::never);
        Compiled {
            non_retryable: all(NON_RETRYABLE),
            retryable: all(RETRYABLE),
            overflow: all(OVERFLOW),
            non_overflow: all(NON_OVERFLOW),
            cerebras: all(&[CEREBRAS_BODYLESS_OVERFLOW]),
        }
    })
}

/// Whether an error text looks like a transient provider or transport failure (pi's
/// `isRetryableAssistantError` text test: not a quota/billing limit, and one of the retryable
/// patterns).
pub fn is_retryable_text(error_message: &str) -> bool {
    let c = compiled();
    !c.non_retryable.is_match(error_message) && c.retryable.is_match(error_message)
}

/// Whether a failed response should be retried by the agent loop (agent-loop.md §6):
/// `stopReason:"error"` with a non-empty `errorMessage` that is not a context overflow (for the
/// producing model's `context_window`), not a quota/billing limit, and matches a retryable
/// pattern.
pub fn is_retryable(msg: &AssistantMessage, context_window: u64) -> bool {
    if msg.stop_reason != StopReason::Error {
        return false;
    }
    let Some(err) = msg.error_message.as_deref().filter(|e| !e.is_empty()) else {
        return false;
    };
    if is_context_overflow(msg, context_window) {
        return false;
    }
    is_retryable_text(err)
}

/// pi's `isContextOverflow` (agent-loop.md §7.3). `context_window` 0 disables the
/// usage-based checks.
pub fn is_context_overflow(msg: &AssistantMessage, context_window: u64) -> bool {
    is_overflow_error(msg) || is_overflow_by_usage(msg, context_window)
}

/// The error-text half of [`is_context_overflow`]: `stopReason:"error"` with an `errorMessage`
/// that matches an overflow pattern (or Cerebras' bodyless 400/413) and no non-overflow
/// pattern. This is the part that scans text; callers that hold a lock compute it first.
pub fn is_overflow_error(msg: &AssistantMessage) -> bool {
    if msg.stop_reason != StopReason::Error {
        return false;
    }
    let Some(err) = msg.error_message.as_deref().filter(|e| !e.is_empty()) else {
        return false;
    };
    let c = compiled();
    if c.non_overflow.is_match(err) {
        return false;
    }
    c.overflow.is_match(err) || (msg.provider == "cerebras" && c.cerebras.is_match(err))
}

/// The usage half of [`is_context_overflow`] (cheap): a successful response whose input
/// exceeds the window, or a `length` stop with no output and a full window. `context_window`
/// 0 disables both.
pub fn is_overflow_by_usage(msg: &AssistantMessage, context_window: u64) -> bool {
    let input = msg.usage.input + msg.usage.cache_read;
    if context_window > 0 && msg.stop_reason == StopReason::Stop && input > context_window {
        return true;
    }
    context_window > 0
        && msg.stop_reason == StopReason::Length
        && msg.usage.output == 0
        && (input as f64) >= context_window as f64 * 0.99
}

/// pi's `isRecoverableLength`: a `length` stop below the intended output limit.
pub fn is_recoverable_length(msg: &AssistantMessage, desired_max_output: u64) -> bool {
    msg.stop_reason == StopReason::Length
        && desired_max_output > 0
        && msg.usage.output < desired_max_output
}

#[cfg(test)]
mod tests {
    use super::js_regex::*;
    use super::*;
    use crate::llm::types::Usage;

    fn err(msg: &str) -> AssistantMessage {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(msg.into()),
            provider: "anthropic".into(),
            ..AssistantMessage::default()
        }
    }

    #[test]
    fn all_patterns_compile() {
        for p in NON_RETRYABLE
            .iter()
            .chain(RETRYABLE)
            .chain(OVERFLOW)
            .chain(NON_OVERFLOW)
            .chain([&CEREBRAS_BODYLESS_OVERFLOW])
        {
            let pattern = Pattern::new(p);
            assert!(pattern.is_some(), "pattern {p:?}");
            // Each translation compiles (the head and tail ones are otherwise only built for
            // long texts).
            for part in [Part::Whole, Part::Head, Part::Tail] {
                assert!(
                    pattern.as_ref().unwrap().regex(part).is_some(),
                    "{p:?} {part:?}"
                );
            }
        }
        for list in [NON_RETRYABLE, RETRYABLE, OVERFLOW, NON_OVERFLOW] {
            assert!(Pattern::any(list).is_some());
        }
    }

    #[test]
    fn matcher_basics() {
        let p = Pattern::new("rate.?limit").unwrap();
        assert!(p.is_match("Rate limited"));
        assert!(p.is_match("rate_limit_error"));
        assert!(p.is_match("RATE-LIMIT"));
        assert!(!p.is_match("rate\nlimit"));
        assert!(!p.is_match("rate  limit"));
        let p = Pattern::new("timed? out").unwrap();
        assert!(p.is_match("Request timed out."));
        assert!(p.is_match("time out"));
        let p = Pattern::new(r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))").unwrap();
        assert!(p.is_match("413"));
        assert!(p.is_match("413 {\"error\":1}"));
        assert!(p.is_match("413: x"));
        assert!(p.is_match("github-copilot API error (413): {}"));
        assert!(!p.is_match("4130 x"));
        assert!(!p.is_match("error 413 x"));
        let p = Pattern::new(r#""code"\s*:\s*"?1308(?![0-9])"#).unwrap();
        assert!(p.is_match(r#"{"code": "1308", "message": "limit"}"#));
        assert!(p.is_match(r#"{"code":1308}"#));
        assert!(!p.is_match(r#"{"code":13080}"#));
        let p = Pattern::new("context[_ ]length[_ ]exceeded").unwrap();
        assert!(p.is_match("CONTEXT_LENGTH_EXCEEDED"));
        assert!(p.is_match("context length exceeded"));
        assert!(!p.is_match("context-length-exceeded"));
        let p = Pattern::new("input token count.*exceeds the maximum").unwrap();
        assert!(p.is_match(
            "The input token count (1196265) exceeds the maximum number of tokens allowed"
        ));
        assert!(Pattern::new("a{2}").is_none());
        assert!(Pattern::new("(a").is_none());
        assert!(Pattern::new("^*").is_none());
    }

    #[test]
    fn status_codes_need_word_boundaries() {
        for (text, want) in [
            ("429 {\"type\":\"error\"}", true),
            ("500 Internal server error", true),
            ("HTTP 503", true),
            ("(502)", true),
            ("request id 5001 failed", false),
            ("req_4290abc", false),
            ("x429", false),
            ("bytes=1500", false),
        ] {
            let p =
                Pattern::new("(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])").unwrap();
            assert_eq!(p.is_match(text), want, "{text}");
        }
        let p = Pattern::new(
            "(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])",
        )
        .unwrap();
        assert!(p.is_match("read ECONNRESET"));
        assert!(p.is_match("connect ECONNREFUSED 127.0.0.1:9"));
        assert!(!p.is_match("MY_ECONNRESET"));
        assert!(!p.is_match("EPIPEX"));
    }

    /// Classifies `text` on a thread with a small stack, as a check that the work does not
    /// recurse per character (the old matcher overflowed the agent thread's stack).
    fn classify_on_small_stack(text: String) -> (bool, bool) {
        std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                let m = err(&text);
                (is_retryable_text(&text), is_overflow_error(&m))
            })
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn long_error_body_crash_is_gone() {
        // issue 17 §1: a 400 with 8,000 × `a` (anthropic's "<status> <body>"), a 503 whose body
        // starts with `request to xxxx…`, an SSE `error` event with 8.8 kB of plain text, and a
        // 4 MiB body.
        let a400 = format!("400 {}", "a".repeat(8000));
        assert_eq!(classify_on_small_stack(a400), (false, false));
        let r503 = format!("503 request to {}", "x".repeat(6200));
        assert_eq!(classify_on_small_stack(r503), (true, false));
        let sse = format!("request to {} failed, reason: socket", "x".repeat(8800));
        assert_eq!(classify_on_small_stack(sse), (true, false));
        let huge = format!("500 {}", "a ".repeat(2 << 20));
        assert_eq!(classify_on_small_stack(huge), (true, false));
        let overflow = format!("{} prompt is too long", "z".repeat(4 << 20));
        assert_eq!(classify_on_small_stack(overflow), (false, true));
    }

    /// Where JavaScript's `/…/i` and the `regex` crate's defaults part ways (each expectation
    /// checked against pi 1.6.0's own patterns in Node).
    #[test]
    fn javascript_semantics_are_kept() {
        let cases: &[(&str, bool, bool)] = &[
            // `i` without `u`: ASCII case pairs only (no Kelvin sign, no long s).
            ("socket hang up", true, false),
            ("SOCKET HANG UP", true, false),
            ("\u{17f}ocket hang up", false, false),
            ("token limit exceeded", false, true),
            ("to\u{212a}en limit exceeded", false, false),
            ("\u{212a}overloaded", true, false),
            // `\s`: U+FEFF and U+3000 are spaces, U+0085 and U+180E are not.
            ("{\"code\"\u{85}:1308} overloaded", true, false),
            ("{\"code\"\u{feff}:1308} overloaded", false, false),
            ("{\"code\"\u{3000}:\u{a0}1308} overloaded", false, false),
            ("413\u{feff}", false, true),
            ("413\u{85}", false, false),
            ("413\u{180e}", false, false),
            // `.` stops at every line terminator.
            ("rate\nlimit", false, false),
            ("rate\u{2028}limit", false, false),
            // UTF-16: `.?` cannot take a character outside the BMP (two code units); `.*` and
            // `\S+` can.
            ("rate\u{1f600}limit", false, false),
            ("rate\u{e9}limit", true, false),
            (
                "input token count \u{1f600}\u{1f600} exceeds the maximum",
                false,
                true,
            ),
            ("request to \u{1f600} failed, reason:", true, false),
            // The word guards: ASCII classes, case-insensitive; `_` only guards the errno codes.
            ("\u{130}503", true, false),
            ("_429", true, false),
            ("429_", true, false),
            ("A429", false, false),
            ("a429", false, false),
            ("4290", false, false),
            ("ECONNRESET_", false, false),
            ("_ECONNRESET", false, false),
            ("\u{e9}ECONNRESET", true, false),
            ("EPIPE\u{1f600}", true, false),
            ("\"code\":1308\u{1f600} overloaded", false, false),
        ];
        for &(text, retryable, overflow) in cases {
            assert_eq!(is_retryable_text(text), retryable, "retryable {text:?}");
            assert_eq!(is_overflow_error(&err(text)), overflow, "overflow {text:?}");
        }
    }

    #[test]
    fn long_texts_are_matched_at_both_ends() {
        let filler = "x".repeat(3 * SCAN_WINDOW);
        // The status code at the start; Google's code and status after a quoted text body.
        assert!(is_retryable_text(&format!("503 {filler}")));
        assert!(is_retryable_text(&format!(
            r#"{{"error":{{"message":"{filler}","code":503,"status":"UNAVAILABLE"}}}}"#
        )));
        // Deeper than the window from both ends: not looked at (see the module docs).
        assert!(!is_retryable_text(&format!("{filler} 503 {filler}")));
        // `^` and `$` keep meaning the ends of the whole text.
        assert!(is_overflow_error(&err(&format!("413 {filler}"))));
        assert!(!is_overflow_error(&err(&format!("{filler} 413"))));
        assert!(!is_overflow_error(&err(&format!("413{filler}"))));
        // A guard at the cut edge of the head sees no "end of text" there: `1308` followed by
        // `0` just past the head is not the limit code.
        let key = r#""code":1308"#;
        let text = format!(
            "overloaded {}{key}0{filler}",
            "y".repeat(SCAN_WINDOW - key.len() - "overloaded ".len())
        );
        assert_eq!(text.find(key).map(|i| i + key.len()), Some(SCAN_WINDOW));
        assert!(is_retryable_text(&text));
        // At the true end it is.
        assert!(!is_retryable_text(&format!("overloaded {filler}{key}")));
        // Cuts fall on character boundaries.
        let wide = "é".repeat(2 * SCAN_WINDOW);
        assert!(is_retryable_text(&format!("{wide}\u{1f600}timeout")));
        assert!(is_retryable_text(&format!("timeout{wide}")));
    }

    #[test]
    fn unsupported_syntax_is_refused() {
        for p in [
            "a{2}",
            "(a",
            "^*",
            "a(?<![b])c",
            "(?:(?![a]))b",
            "(?=a)",
            "(?<=a)",
            "\u{e9}",
            "[a-\u{e9}]",
            "[z-a]",
            r"\b",
            r"\1",
        ] {
            assert!(Pattern::new(p).is_none(), "{p:?}");
        }
        // A character class that matches nothing, and one that matches anything.
        assert!(!Pattern::new("a[]").unwrap().is_match("ab"));
        assert!(Pattern::new("a[^]").unwrap().is_match("a\n"));
    }

    #[test]
    fn retryable_examples() {
        let retryable = [
            r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_mock_0001"}"#,
            r#"429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited, slow down"},"request_id":"req_mock_0002"}"#,
            r#"500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            "429: {\"message\":\"Rate limited\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":null}",
            "500 status code (no body)",
            "Connection error.: connect ECONNREFUSED 127.0.0.1:59999",
            "Connection error.: getaddrinfo ENOTFOUND api.example.invalid",
            "terminated: other side closed",
            "Request timed out.",
            "Anthropic stream ended without a stop reason",
            "Anthropic stream ended before message_stop",
            "Stream ended without finish_reason",
            "The service is temporarily unavailable",
            "Provider returned error",
        ];
        for t in retryable {
            assert!(is_retryable(&err(t), 200_000), "{t}");
        }
        let not_retryable = [
            r#"400 {"type":"error","error":{"type":"invalid_request_error","message":"bad thing"}}"#,
            r#"401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            r#"429 {"error":{"type":"insufficient_quota","message":"You exceeded your current quota"}}"#,
            "429 Monthly usage limit reached",
            r#"429 {"code":"1308","message":"usage limit"}"#,
            "The model refused to complete the request",
            "Provider finish_reason: content_filter",
            "",
        ];
        for t in not_retryable {
            assert!(!is_retryable(&err(t), 200_000), "{t}");
        }
        // Only errors are retried.
        let mut m = err("overloaded");
        m.stop_reason = StopReason::Aborted;
        assert!(!is_retryable(&m, 200_000));
        m.stop_reason = StopReason::Stop;
        assert!(!is_retryable(&m, 200_000));
        m.stop_reason = StopReason::Error;
        m.error_message = None;
        assert!(!is_retryable(&m, 200_000));
        // A context overflow is never retried, even when it also looks transient.
        assert!(!is_retryable(
            &err("500 prompt is too long: 213462 tokens > 200000 maximum"),
            200_000
        ));
    }

    #[test]
    fn overflow_examples() {
        let overflow = [
            r#"400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#,
            r#"413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
            "Your input exceeds the context window of this model",
            "Requested token count exceeds the model's maximum context length of 131072 tokens",
            "Input length (265330) exceeds model's maximum context length (262144).",
            "litellm.ContextWindowExceededError: Context Window exceeded for given call.",
            "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
            "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
            "Please reduce the length of the messages or completion",
            "This endpoint's maximum context length is 128000 tokens. However, you requested about 140000 tokens",
            "Input length 300000 exceeds the maximum allowed input length of 256,000 tokens.",
            "The input (140000 tokens) is longer than the model's context length (131072 tokens).",
            "the request exceeds the available context size, try increasing it",
            "tokens to keep from the initial prompt is greater than the context length",
            "prompt token count of 140000 exceeds the limit of 128000",
            r#"github-copilot API error (413): {"message":"failed to parse request","code":""}"#,
            "invalid params, context window exceeds limit",
            "Your request exceeded model token limit: 262144 (requested: 300000)",
            "Prompt has 140,000 tokens, but the configured context size is 131,072 tokens",
            "Prompt contains 140000 tokens, too large for model with 131072 maximum context length",
            r#"{"code":"1261","message":"Prompt too long"}"#,
            "model_context_window_exceeded",
            "prompt too long; exceeded max context length by 100 tokens",
            "Range of input length should be [1, 30720]",
            "413 status code (no body)",
        ];
        for t in overflow {
            assert!(is_context_overflow(&err(t), 200_000), "{t}");
        }
        let not_overflow = [
            "Throttling error: too many tokens",
            "rate limit: too many tokens",
            "429 Too Many Requests: token limit exceeded",
            r#"429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}"#,
            "400 status code (no body)",
        ];
        for t in not_overflow {
            assert!(!is_context_overflow(&err(t), 200_000), "{t}");
        }
        // Cerebras' bodyless 400/413.
        let mut cerebras = err("400 status code (no body)");
        cerebras.provider = "cerebras".into();
        assert!(is_context_overflow(&cerebras, 200_000));

        // Silent overflow: a successful response whose input exceeds the window.
        let mut ok = AssistantMessage {
            stop_reason: StopReason::Stop,
            usage: Usage {
                input: 150_000,
                cache_read: 60_000,
                ..Usage::default()
            },
            ..AssistantMessage::default()
        };
        assert!(is_context_overflow(&ok, 200_000));
        assert!(!is_context_overflow(&ok, 0));
        ok.usage.cache_read = 50_000;
        assert!(!is_context_overflow(&ok, 200_000));
        // Length stop with no output and a full window.
        let mut len = ok.clone();
        len.stop_reason = StopReason::Length;
        len.usage = Usage {
            input: 198_000,
            ..Usage::default()
        };
        assert!(is_context_overflow(&len, 200_000));
        len.usage.output = 1;
        assert!(!is_context_overflow(&len, 200_000));
        assert!(is_recoverable_length(&len, 8192));
        len.usage.output = 8192;
        assert!(!is_recoverable_length(&len, 8192));
        assert!(!is_recoverable_length(&len, 0));
    }
}
