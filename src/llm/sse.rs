//! Server-sent events over a blocking reader (the WHATWG `text/event-stream` format).
//!
//! [`SseParser`] reads lines from any [`BufRead`] (events may be split across reads at any
//! byte), accepts CRLF, CR and LF line ends, joins multi-line `data:` fields with `\n`,
//! ignores comments (`:`) and unknown fields, and yields one [`SseEvent`] per blank line. `id:`
//! and `retry:` are not part of the events; the parser keeps the latest of each
//! ([`SseParser::last_event_id`], [`SseParser::retry_ms`]) for clients that resume streams. By default a final event without its blank line is dropped at EOF, as the
//! specification says; [`SseParser::dispatch_trailing`] makes it dispatch instead (what pi's
//! own parser does).

use std::io::{self, BufRead};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser; iterate it for events. An I/O error is yielded once, then the
/// iteration ends.
pub struct SseParser<R> {
    reader: R,
    /// Bytes of a line that spans several buffer fills.
    line: Vec<u8>,
    event: Option<String>,
    data: String,
    data_lines: usize,
    /// The last `id:` field's value (the "last event ID buffer"; values with NUL are ignored).
    last_event_id: Option<String>,
    /// The last valid `retry:` field (ASCII digits only), in milliseconds.
    retry_ms: Option<u64>,
    /// The previous line ended with `\r`: a `\n` at the start of the next fill belongs to it.
    skip_lf: bool,
    /// At the start of the stream (a UTF-8 BOM is skipped there).
    at_start: bool,
    dispatch_trailing: bool,
    done: bool,
}

impl<R: BufRead> SseParser<R> {
    pub fn new(reader: R) -> SseParser<R> {
        SseParser {
            reader,
            line: Vec::new(),
            event: None,
            data: String::new(),
            data_lines: 0,
            last_event_id: None,
            retry_ms: None,
            skip_lf: false,
            at_start: true,
            dispatch_trailing: false,
            done: false,
        }
    }

    /// Whether a final event without a terminating blank line is dispatched at EOF.
    pub fn dispatch_trailing(mut self, yes: bool) -> SseParser<R> {
        self.dispatch_trailing = yes;
        self
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The value of the last `id:` field read so far (set as soon as the field is read, even
    /// before its event is dispatched). `None` until the stream gave one.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection time of the last valid `retry:` field read so far, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The next event; `Ok(None)` at EOF.
    pub fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        if self.done {
            return Ok(None);
        }
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            if buf.is_empty() {
                // EOF.
                self.done = true;
                if !self.line.is_empty() {
                    let line = std::mem::take(&mut self.line);
                    let dispatched = self.process_line(&line);
                    self.line = line;
                    if let Some(ev) = dispatched {
                        return Ok(Some(ev));
                    }
                }
                if self.dispatch_trailing {
                    return Ok(self.take_event());
                }
                return Ok(None);
            }
            let mut start = 0;
            if self.skip_lf {
                self.skip_lf = false;
                if buf[0] == b'\n' {
                    start = 1;
                }
            }
            if self.at_start {
                // A UTF-8 BOM may only appear as the first bytes of the stream and can be split
                // across fills: gather up to three bytes before deciding.
                let avail = &buf[start..];
                let take = (3 - self.line.len()).min(avail.len());
                self.line.extend_from_slice(&avail[..take]);
                self.reader.consume(start + take);
                if self.line.len() < 3 && BOM.starts_with(&self.line) {
                    continue;
                }
                self.at_start = false;
                if self.line.starts_with(BOM) {
                    self.line.drain(..3);
                }
                if let Some(ev) = self.split_pending_line() {
                    return Ok(Some(ev));
                }
                continue;
            }
            let avail = &buf[start..];
            match avail.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(pos) => {
                    let ending = avail[pos];
                    let mut consumed = start + pos + 1;
                    if ending == b'\r' {
                        match avail.get(pos + 1) {
                            Some(b'\n') => consumed += 1,
                            Some(_) => {}
                            None => self.skip_lf = true,
                        }
                    }
                    let dispatched = if self.line.is_empty() {
                        // Fast path: the whole line is in the buffer.
                        let line = &avail[..pos];
                        Self::process_line_parts(
                            line,
                            &mut self.event,
                            &mut self.data,
                            &mut self.data_lines,
                            &mut self.last_event_id,
                            &mut self.retry_ms,
                        )
                    } else {
                        self.line.extend_from_slice(&avail[..pos]);
                        let line = std::mem::take(&mut self.line);
                        let d = self.process_line(&line);
                        self.line = line;
                        self.line.clear();
                        d
                    };
                    self.reader.consume(consumed);
                    if let Some(ev) = dispatched {
                        return Ok(Some(ev));
                    }
                }
                None => {
                    self.line.extend_from_slice(avail);
                    let n = start + avail.len();
                    self.reader.consume(n);
                }
            }
        }
    }

    /// After the BOM check: the gathered bytes in `self.line` may already contain line ends.
    fn split_pending_line(&mut self) -> Option<SseEvent> {
        let pending = std::mem::take(&mut self.line);
        let mut rest: &[u8] = &pending;
        let mut first: Option<SseEvent> = None;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let line = &rest[..pos];
            let mut next = pos + 1;
            if rest[pos] == b'\r' {
                match rest.get(pos + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let d = Self::process_line_parts(
                line,
                &mut self.event,
                &mut self.data,
                &mut self.data_lines,
                &mut self.last_event_id,
                &mut self.retry_ms,
            );
            if let Some(ev) = d {
                // At most three bytes were gathered, so at most one event can complete here
                // (a blank line), and only when nothing else is pending.
                first.get_or_insert(ev);
            }
            rest = &rest[next..];
        }
        self.line = rest.to_vec();
        first
    }

    fn process_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        Self::process_line_parts(
            line,
            &mut self.event,
            &mut self.data,
            &mut self.data_lines,
            &mut self.last_event_id,
            &mut self.retry_ms,
        )
    }

    fn process_line_parts(
        line: &[u8],
        event: &mut Option<String>,
        data: &mut String,
        data_lines: &mut usize,
        last_event_id: &mut Option<String>,
        retry_ms: &mut Option<u64>,
    ) -> Option<SseEvent> {
        if line.is_empty() {
            if event.is_none() && *data_lines == 0 {
                return None;
            }
            *data_lines = 0;
            return Some(SseEvent {
                event: event.take(),
                data: std::mem::take(data),
            });
        }
        if line[0] == b':' {
            return None;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                let v = v.strip_prefix(b" ").unwrap_or(v);
                (&line[..i], v)
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if *data_lines > 0 {
                    data.push('\n');
                }
                *data_lines += 1;
                push_utf8(data, value);
            }
            b"event" => {
                let mut s = String::new();
                push_utf8(&mut s, value);
                *event = Some(s);
            }
            b"id" if !value.contains(&0) => {
                let mut s = String::new();
                push_utf8(&mut s, value);
                *last_event_id = Some(s);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Too many digits for a u64: keep the previous value.
                let ms = value.iter().try_fold(0u64, |acc, d| {
                    acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                });
                if ms.is_some() {
                    *retry_ms = ms;
                }
            }
            _ => {}
        }
        None
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        if self.event.is_none() && self.data_lines == 0 {
            return None;
        }
        self.data_lines = 0;
        Some(SseEvent {
            event: self.event.take(),
            data: std::mem::take(&mut self.data),
        })
    }
}

fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

impl<R: BufRead> Iterator for SseParser<R> {
    type Item = io::Result<SseEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// A reader that returns its input in fixed-size pieces (events split across reads).
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        size: usize,
    }

    impl Read for Chunked {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.size.min(buf.len()).min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn parse_with(input: &str, size: usize, trailing: bool) -> Vec<SseEvent> {
        let r = Chunked {
            data: input.as_bytes().to_vec(),
            pos: 0,
            size,
        };
        SseParser::new(BufReader::with_capacity(size.max(1), r))
            .dispatch_trailing(trailing)
            .map(|e| e.unwrap())
            .collect()
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    /// Every chunking of the input gives the same events.
    fn check(input: &str, want: &[SseEvent]) {
        for size in 1..=input.len().max(1) + 1 {
            assert_eq!(parse_with(input, size, false), want, "chunk size {size}");
        }
    }

    #[test]
    fn basic_events() {
        check(
            "event: message_start\ndata: {\"a\":1}\n\nevent: ping\ndata: {}\n\n",
            &[
                ev(Some("message_start"), "{\"a\":1}"),
                ev(Some("ping"), "{}"),
            ],
        );
        check(
            "data: {\"x\":1}\n\ndata: [DONE]\n\n",
            &[ev(None, "{\"x\":1}"), ev(None, "[DONE]")],
        );
    }

    #[test]
    fn line_endings_and_multiline_data() {
        check(
            "data: a\r\ndata: b\r\n\r\ndata:c\rdata:  d\r\rdata\n\n",
            &[ev(None, "a\nb"), ev(None, "c\n d"), ev(None, "")],
        );
    }

    #[test]
    fn comments_ids_retry_and_unknown_fields_are_ignored() {
        check(
            ": keep-alive\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n: only a comment\n\n",
            &[ev(None, "x")],
        );
    }

    #[test]
    fn last_event_id_and_retry_are_kept() {
        let mut p = SseParser::new(
            "id: 7\nretry: 100\ndata: x\n\nid: 8\u{0}\nretry: 5s\ndata: y\n\nid: a-9\n".as_bytes(),
        );
        assert_eq!((p.last_event_id(), p.retry_ms()), (None, None));
        assert_eq!(p.next_event().unwrap(), Some(ev(None, "x")));
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("7"), Some(100)));
        // An id with NUL and a retry that is not all digits are ignored.
        assert_eq!(p.next_event().unwrap(), Some(ev(None, "y")));
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("7"), Some(100)));
        // An id without an event still counts (as pi's MCP client resumes from it).
        assert_eq!(p.next_event().unwrap(), None);
        assert_eq!(p.last_event_id(), Some("a-9"));
        let mut p = SseParser::new("id\nretry: 99999999999999999999999\n\n".as_bytes());
        assert_eq!(p.next_event().unwrap(), None);
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some(""), None));
    }

    #[test]
    fn blank_lines_without_fields_dispatch_nothing() {
        check("\n\n\r\n", &[]);
        check("", &[]);
    }

    #[test]
    fn event_name_resets_between_events() {
        check(
            "event: a\ndata: 1\n\ndata: 2\n\n",
            &[ev(Some("a"), "1"), ev(None, "2")],
        );
    }

    #[test]
    fn trailing_event_without_blank_line() {
        let input = "data: 1\n\ndata: 2\n";
        for size in 1..=input.len() {
            assert_eq!(parse_with(input, size, false), vec![ev(None, "1")]);
            assert_eq!(
                parse_with(input, size, true),
                vec![ev(None, "1"), ev(None, "2")]
            );
        }
        // A last line without any line end still counts for the trailing event.
        assert_eq!(
            parse_with("data: 1\n\nevent: e\ndata: 3", 4, true),
            vec![ev(None, "1"), ev(Some("e"), "3")]
        );
        assert_eq!(
            parse_with("data: 1\n\nevent: e\ndata: 3", 4, false),
            vec![ev(None, "1")]
        );
    }

    #[test]
    fn bom_is_skipped_only_at_start() {
        check("\u{feff}data: x\n\n", &[ev(None, "x")]);
        check("\u{feff}\n\ndata: y\n\n", &[ev(None, "y")]);
        check("da\n\ndata: \u{feff}\n\n", &[ev(None, "\u{feff}")]);
    }

    #[test]
    fn utf8_split_across_reads() {
        check("data: héllo wörld ✓\n\n", &[ev(None, "héllo wörld ✓")]);
    }

    #[test]
    fn io_errors_are_yielded_once() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if !self.0 {
                    self.0 = true;
                    let s = b"data: a\n\ndata: b";
                    buf[..s.len()].copy_from_slice(s);
                    return Ok(s.len());
                }
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let mut p = SseParser::new(BufReader::new(Failing(false)));
        assert_eq!(p.next().unwrap().unwrap(), ev(None, "a"));
        assert_eq!(
            p.next().unwrap().unwrap_err().kind(),
            io::ErrorKind::ConnectionReset
        );
        assert!(p.next().is_none());
    }

    #[test]
    fn many_small_events() {
        let mut input = String::new();
        for i in 0..2000 {
            input.push_str(&format!("event: e\ndata: {{\"i\":{i}}}\n\n"));
        }
        let got = parse_with(&input, 4096, false);
        assert_eq!(got.len(), 2000);
        assert_eq!(got[1999], ev(Some("e"), "{\"i\":1999}"));
        let got = parse_with(&input, 7, false);
        assert_eq!(got.len(), 2000);
    }
}
