//! Classification of failed responses: retryable provider/transport errors (agent-loop.md §6)
//! and context overflow (agent-loop.md §7.3).
//!
//! pi expresses both as case-insensitive JavaScript regexes. Rather than transcribing each one
//! into ad-hoc string code (and risking a subtle difference), this file keeps pi's pattern texts
//! verbatim and runs them with [`Pattern`], a small backtracking matcher for exactly the regex
//! subset those patterns use: literals, `.`, `\s \S \d \w`, escaped punctuation, classes
//! (`[a-z0-9]`, `[\d,]`, `[\w -]`), groups `(…)` / `(?:…)` with `|`, the quantifiers `? * +`,
//! anchors `^ $`, and single-character negative lookarounds `(?<![…])` / `(?![…])` (the word
//! guards). No regex crate is needed for that, and the inputs (error messages of at most a few
//! kilobytes) keep backtracking cheap.

use std::sync::OnceLock;

use super::types::{AssistantMessage, StopReason};

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

struct Compiled {
    non_retryable: Vec<Pattern>,
    retryable: Vec<Pattern>,
    overflow: Vec<Pattern>,
    non_overflow: Vec<Pattern>,
    cerebras: Pattern,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let all = |ps: &[&str]| ps.iter().filter_map(|p| Pattern::new(p)).collect();
        Compiled {
            non_retryable: all(NON_RETRYABLE),
            retryable: all(RETRYABLE),
            overflow: all(OVERFLOW),
            non_overflow: all(NON_OVERFLOW),
            cerebras: Pattern::new(CEREBRAS_BODYLESS_OVERFLOW).unwrap_or_else(Pattern::never),
        }
    })
}

fn any_match(patterns: &[Pattern], hay: &Haystack) -> bool {
    patterns.iter().any(|p| p.is_match_in(hay))
}

/// Whether an error text looks like a transient provider or transport failure (pi's
/// `isRetryableAssistantError` text test: not a quota/billing limit, and one of the retryable
/// patterns).
pub fn is_retryable_text(error_message: &str) -> bool {
    let c = compiled();
    let hay = Haystack::new(error_message);
    !any_match(&c.non_retryable, &hay) && any_match(&c.retryable, &hay)
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
    if msg.stop_reason == StopReason::Error {
        if let Some(err) = msg.error_message.as_deref().filter(|e| !e.is_empty()) {
            let c = compiled();
            let hay = Haystack::new(err);
            if !any_match(&c.non_overflow, &hay) {
                if any_match(&c.overflow, &hay) {
                    return true;
                }
                if msg.provider == "cerebras" && c.cerebras.is_match_in(&hay) {
                    return true;
                }
            }
        }
    }
    let input = msg.usage.input + msg.usage.cache_read;
    if context_window > 0 && msg.stop_reason == StopReason::Stop && input > context_window {
        return true;
    }
    if context_window > 0
        && msg.stop_reason == StopReason::Length
        && msg.usage.output == 0
        && (input as f64) >= context_window as f64 * 0.99
    {
        return true;
    }
    false
}

/// pi's `isRecoverableLength`: a `length` stop below the intended output limit.
pub fn is_recoverable_length(msg: &AssistantMessage, desired_max_output: u64) -> bool {
    msg.stop_reason == StopReason::Length
        && desired_max_output > 0
        && msg.usage.output < desired_max_output
}

// ---------------------------------------------------------------------------------------------
// The matcher

/// A text prepared for case-insensitive matching: lowercased characters.
pub struct Haystack {
    chars: Vec<char>,
}

impl Haystack {
    pub fn new(text: &str) -> Haystack {
        Haystack {
            chars: text.chars().map(fold).collect(),
        }
    }
}

/// Simple case folding (what JavaScript's `i` flag does for these patterns).
fn fold(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        c.to_lowercase().next().unwrap_or(c)
    }
}

#[derive(Clone, Debug)]
enum ClassItem {
    Char(char),
    Range(char, char),
    Digit,
    Word,
    Space,
    NotSpace,
}

impl ClassItem {
    fn matches(&self, c: char) -> bool {
        match self {
            ClassItem::Char(x) => *x == c,
            ClassItem::Range(a, b) => *a <= c && c <= *b,
            ClassItem::Digit => c.is_ascii_digit(),
            ClassItem::Word => c.is_ascii_alphanumeric() || c == '_',
            ClassItem::Space => is_js_space(c),
            ClassItem::NotSpace => !is_js_space(c),
        }
    }
}

fn is_js_space(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t'
            | '\n'
            | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{a0}'
            | '\u{feff}'
            | '\u{2028}'
            | '\u{2029}'
    ) || c.is_whitespace()
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

#[derive(Clone, Debug)]
enum Atom {
    /// Any character but a line terminator (`.`).
    Any,
    Class {
        items: Vec<ClassItem>,
        negated: bool,
    },
    Group(Vec<Vec<Item>>),
    Start,
    End,
    /// `(?<![…])`: the previous character does not match the class.
    NotBehind(Box<Atom>),
    /// `(?![…])`: the next character does not match the class.
    NotAhead(Box<Atom>),
}

#[derive(Clone, Debug)]
struct Item {
    atom: Atom,
    min: usize,
    max: usize,
}

/// A compiled case-insensitive pattern of the supported regex subset.
#[derive(Clone, Debug)]
pub struct Pattern {
    alts: Vec<Vec<Item>>,
}

impl Pattern {
    /// Compiles `src`; `None` for syntax outside the supported subset.
    pub fn new(src: &str) -> Option<Pattern> {
        let chars: Vec<char> = src.chars().collect();
        let mut p = Parser { s: &chars, i: 0 };
        let alts = p.alternation()?;
        if p.i != chars.len() {
            return None;
        }
        Some(Pattern { alts })
    }

    /// A pattern that matches nothing.
    fn never() -> Pattern {
        Pattern {
            alts: vec![vec![Item {
                atom: Atom::Class {
                    items: Vec::new(),
                    negated: false,
                },
                min: 1,
                max: 1,
            }]],
        }
    }

    /// Whether the pattern matches anywhere in `text` (case-insensitively).
    pub fn is_match(&self, text: &str) -> bool {
        self.is_match_in(&Haystack::new(text))
    }

    pub fn is_match_in(&self, hay: &Haystack) -> bool {
        let h = &hay.chars;
        (0..=h.len()).any(|start| {
            self.alts
                .iter()
                .any(|seq| match_seq(seq, h, start, &mut |_| true))
        })
    }
}

fn match_seq(seq: &[Item], h: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match seq.split_first() {
        None => k(pos),
        Some((item, rest)) => match_item(item, 0, h, pos, &mut |p| match_seq(rest, h, p, k)),
    }
}

/// Greedy repetition with backtracking.
fn match_item(
    item: &Item,
    count: usize,
    h: &[char],
    pos: usize,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if count < item.max {
        let more = match_atom(&item.atom, h, pos, &mut |p| {
            // An empty iteration makes no progress: stop repeating and go on.
            if p == pos {
                return count + 1 >= item.min && k(p);
            }
            match_item(item, count + 1, h, p, k)
        });
        if more {
            return true;
        }
    }
    count >= item.min && k(pos)
}

fn match_atom(atom: &Atom, h: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match atom {
        Atom::Any => pos < h.len() && !is_line_terminator(h[pos]) && k(pos + 1),
        Atom::Class { .. } => pos < h.len() && char_matches(atom, h[pos]) && k(pos + 1),
        Atom::Group(alts) => alts.iter().any(|seq| match_seq(seq, h, pos, k)),
        Atom::Start => pos == 0 && k(pos),
        Atom::End => pos == h.len() && k(pos),
        Atom::NotBehind(a) => !(pos > 0 && char_matches(a, h[pos - 1])) && k(pos),
        Atom::NotAhead(a) => !(pos < h.len() && char_matches(a, h[pos])) && k(pos),
    }
}

/// Whether a single-character atom matches `c`.
fn char_matches(atom: &Atom, c: char) -> bool {
    match atom {
        Atom::Any => !is_line_terminator(c),
        Atom::Class { items, negated } => items.iter().any(|i| i.matches(c)) != *negated,
        _ => false,
    }
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, lit: &str) -> bool {
        let n = lit.chars().count();
        if self.s.len() >= self.i + n && self.s[self.i..self.i + n].iter().copied().eq(lit.chars())
        {
            self.i += n;
            true
        } else {
            false
        }
    }

    fn alternation(&mut self) -> Option<Vec<Vec<Item>>> {
        let mut alts = vec![self.sequence()?];
        while self.eat('|') {
            alts.push(self.sequence()?);
        }
        Some(alts)
    }

    fn sequence(&mut self) -> Option<Vec<Item>> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let (min, max) = match self.peek() {
                Some('?') => (0, 1),
                Some('*') => (0, usize::MAX),
                Some('+') => (1, usize::MAX),
                _ => (1, 1),
            };
            if (min, max) != (1, 1) {
                self.i += 1;
                if matches!(
                    atom,
                    Atom::Start | Atom::End | Atom::NotAhead(_) | Atom::NotBehind(_)
                ) {
                    return None;
                }
            }
            seq.push(Item { atom, min, max });
        }
        Some(seq)
    }

    fn atom(&mut self) -> Option<Atom> {
        let c = self.peek()?;
        self.i += 1;
        Some(match c {
            '.' => Atom::Any,
            '^' => Atom::Start,
            '$' => Atom::End,
            '[' => self.class()?,
            '(' => {
                if self.eat_str("?<!") {
                    let inner = self.single_char_atom()?;
                    if !self.eat(')') {
                        return None;
                    }
                    Atom::NotBehind(Box::new(inner))
                } else if self.eat_str("?!") {
                    let inner = self.single_char_atom()?;
                    if !self.eat(')') {
                        return None;
                    }
                    Atom::NotAhead(Box::new(inner))
                } else {
                    // `(?:…)` and capturing `(…)` match the same way here.
                    self.eat_str("?:");
                    let alts = self.alternation()?;
                    if !self.eat(')') {
                        return None;
                    }
                    Atom::Group(alts)
                }
            }
            '\\' => {
                let e = self.peek()?;
                self.i += 1;
                match escape_item(e)? {
                    ClassItem::Char(ch) => literal(ch),
                    item => Atom::Class {
                        items: vec![item],
                        negated: false,
                    },
                }
            }
            ')' | '|' | '?' | '*' | '+' | '{' | '}' | ']' => return None,
            other => literal(other),
        })
    }

    /// The content of a lookaround: one class, escape or literal character.
    fn single_char_atom(&mut self) -> Option<Atom> {
        let a = self.atom()?;
        match a {
            Atom::Class { .. } | Atom::Any => Some(a),
            _ => None,
        }
    }

    fn class(&mut self) -> Option<Atom> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            if c == ']' {
                break;
            }
            let first = if c == '\\' {
                let e = self.peek()?;
                self.i += 1;
                escape_item(e)?
            } else {
                ClassItem::Char(fold(c))
            };
            // A range `a-z` (a `-` before `]` is literal).
            if let ClassItem::Char(lo) = first {
                if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|&n| n != ']') {
                    self.i += 1;
                    let hi = self.peek()?;
                    self.i += 1;
                    if hi == '\\' {
                        return None;
                    }
                    let hi = fold(hi);
                    if hi < lo {
                        return None;
                    }
                    items.push(ClassItem::Range(lo, hi));
                    continue;
                }
            }
            items.push(first);
        }
        Some(Atom::Class { items, negated })
    }
}

fn literal(c: char) -> Atom {
    Atom::Class {
        items: vec![ClassItem::Char(fold(c))],
        negated: false,
    }
}

fn escape_item(e: char) -> Option<ClassItem> {
    Some(match e {
        'd' => ClassItem::Digit,
        'w' => ClassItem::Word,
        's' => ClassItem::Space,
        'S' => ClassItem::NotSpace,
        'n' => ClassItem::Char('\n'),
        't' => ClassItem::Char('\t'),
        'r' => ClassItem::Char('\r'),
        c if c.is_ascii_alphanumeric() => return None,
        c => ClassItem::Char(fold(c)),
    })
}

#[cfg(test)]
mod tests {
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
            assert!(Pattern::new(p).is_some(), "pattern {p:?}");
        }
        let c = compiled();
        assert_eq!(c.retryable.len(), RETRYABLE.len());
        assert_eq!(c.overflow.len(), OVERFLOW.len());
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
