//! The `bash` tool (tools.md §4): runs a shell command in the session cwd and returns its merged
//! stdout/stderr, tail-truncated to 2000 lines / 50 KiB with the full output in a temp file.
//! Streams throttled snapshots of the output tail as partial results while it runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::{Tool, ToolContext, ToolOutput};
use crate::exec::bash::{TempLog, Utf8Decoder};
use crate::exec::process::{self, OutputSink, ShellCommand};
use crate::js::number::js_number_string;
use crate::truncate::{
    format_size, truncate_tail, Truncation, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES,
};

/// Minimum time between two streamed snapshots.
pub const UPDATE_THROTTLE: Duration = Duration::from_millis(100);

/// Cap of `structuredContent.output` (for programmatic callers).
pub const STRUCTURED_OUTPUT_MAX_BYTES: usize = 1024 * 1024;

/// Largest accepted timeout, in seconds (a 32-bit millisecond timer).
const MAX_TIMEOUT_SECONDS: f64 = 2_147_483.647;

pub struct BashTool;

impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> String {
        format!(
            "Run a shell command (bash) in the working directory and get back its combined \
             stdout and stderr. Only the end of long output is returned: the last {DEFAULT_MAX_LINES} \
             lines or {}KB, whichever limit is reached first; the complete output is then saved to \
             a temp file whose path is given. A timeout in seconds may be set.",
            DEFAULT_MAX_BYTES / 1024
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": "The shell command to run"},
                "timeout": {"type": "number", "description": "Optional time limit in seconds (none by default)"}
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("Run shell commands (ls, grep, find, etc.)")
    }

    fn guidelines(&self) -> Vec<&'static str> {
        vec!["PI_* environment variables in bash describe the current model and session."]
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| "command must be a string".to_string())?;
        let timeout = args.get("timeout").and_then(Value::as_f64);
        run_bash_tool(command, timeout, ctx, on_update)
    }
}

/// Checks the `timeout` argument (seconds) as pi does.
pub fn resolve_timeout(timeout: Option<f64>) -> Result<Option<Duration>, String> {
    let Some(t) = timeout else {
        return Ok(None);
    };
    if !t.is_finite() || t <= 0.0 {
        return Err("Invalid timeout: must be a finite number of seconds".to_string());
    }
    if t > MAX_TIMEOUT_SECONDS {
        return Err(format!(
            "Invalid timeout: maximum is {} seconds",
            js_number_string(MAX_TIMEOUT_SECONDS)
        ));
    }
    Ok(Some(Duration::from_secs_f64(t)))
}

/// `Math.round(ms / 100) / 10`: seconds rounded to one decimal.
fn round_tenths(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// `"<text>\n\n<status>"`, or just the status when the text is empty.
fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

fn run_bash_tool(
    command: &str,
    timeout: Option<f64>,
    ctx: &ToolContext<'_>,
    on_update: &mut dyn FnMut(Value),
) -> Result<ToolOutput, String> {
    let script = process::with_prefix(ctx.shell_command_prefix.as_deref(), command);
    on_update(json!({"content": []}));
    let started = Instant::now();

    // Setup failures are thrown as they are (nothing ran, so no output to show).
    let timeout = resolve_timeout(timeout)?;
    if ctx.cancel.is_cancelled() {
        return Err("Command aborted".to_string());
    }
    let shell = process::resolve_shell(ctx.shell_path.as_deref())?;
    process::check_cwd(ctx.cwd)?;

    let cmd = ShellCommand {
        shell: &shell,
        script: &script,
        cwd: ctx.cwd,
        env: &ctx.env,
    };
    let mut sink = StreamingOutput {
        acc: OutputAccumulator::new(&ctx.temp_dir),
        throttle: Throttle::default(),
        on_update,
    };
    let outcome = process::run(&cmd, ctx.cancel, timeout, &mut sink)?;
    let snapshot = sink.finish();
    let mut acc = sink.acc;

    if outcome.cancelled || ctx.cancel.is_cancelled() {
        let (text, _) = format_output(&snapshot, &acc, "");
        return Err(append_status(&text, "Command aborted"));
    }
    if outcome.timed_out {
        let (text, _) = format_output(&snapshot, &acc, "");
        let secs = timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
        let mut status = format!("Command timed out after {} seconds", js_number_string(secs));
        if let Some(exit) = outcome.shell_exited_early {
            status.push_str(&format!(
                ". The shell exited with code {} after {} seconds, but background processes it started kept writing output until the timeout.",
                exit.code,
                js_number_string(round_tenths(exit.after))
            ));
        }
        return Err(append_status(&text, &status));
    }
    let (text, details) = format_output(&snapshot, &acc, "(no output)");
    let Some(exit_code) = outcome.exit_code else {
        return Err(append_status(
            &text,
            "Command terminated without an exit code",
        ));
    };
    let wall = round_tenths(started.elapsed());
    let full = acc.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES);
    let mut structured = Map::new();
    structured.insert("output".into(), Value::String(full.content));
    structured.insert("truncated".into(), Value::Bool(full.truncated));
    if full.truncated {
        if let Some(p) = &snapshot.full_output_path {
            structured.insert(
                "full_output_path".into(),
                Value::String(p.to_string_lossy().into_owned()),
            );
        }
    }
    structured.insert("exit_code".into(), Value::from(exit_code));
    structured.insert(
        "wall_time_seconds".into(),
        crate::js::number::js_value(wall),
    );
    let structured = Some(Value::Object(structured));
    acc.close_log();

    if exit_code != 0 {
        return Ok(ToolOutput {
            content: vec![json!({
                "type": "text",
                "text": append_status(&text, &format!("Command exited with code {exit_code}"))
            })],
            details,
            structured_content: structured,
            is_error: true,
            terminate: false,
        });
    }
    Ok(ToolOutput {
        content: vec![json!({"type": "text", "text": text})],
        details,
        structured_content: structured,
        is_error: false,
        terminate: false,
    })
}

/// The final text (tail, or `empty_text`) with its truncation notice, and `details` when
/// truncated.
fn format_output(
    snapshot: &Snapshot,
    acc: &OutputAccumulator,
    empty_text: &str,
) -> (String, Option<Value>) {
    let tr = &snapshot.truncation;
    let mut text = if snapshot.content.is_empty() {
        empty_text.to_string()
    } else {
        snapshot.content.clone()
    };
    if !tr.truncated {
        return (text, None);
    }
    // Where the whole output is: the temp file, or why there is none.
    let full = match (&snapshot.full_output_path, &snapshot.full_output_error) {
        (None, Some(e)) => format!("Full output could not be saved: {e}"),
        (path, _) => format!(
            "Full output: {}",
            path.as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
    };
    let start_line = (tr.total_lines + 1).saturating_sub(tr.output_lines);
    let end_line = tr.total_lines;
    if tr.last_line_partial {
        text.push_str(&format!(
            "\n\n[Showing last {} of line {end_line} (line is {}). {full}]",
            format_size(tr.output_bytes),
            format_size(acc.last_line_bytes()),
        ));
    } else if tr.truncated_by.as_deref() == Some("lines") {
        text.push_str(&format!(
            "\n\n[Showing lines {start_line}-{end_line} of {}. {full}]",
            tr.total_lines
        ));
    } else {
        text.push_str(&format!(
            "\n\n[Showing lines {start_line}-{end_line} of {} ({} limit). {full}]",
            tr.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        ));
    }
    (text, Some(snapshot.details()))
}

// ---------------------------------------------------------------------------------------------
// Streaming snapshots

/// When to send a partial result: at once if the last one is at least [`UPDATE_THROTTLE`] old,
/// else once that much time has passed (one pending timer, as pi's `setTimeout`).
#[derive(Debug, Default)]
pub struct Throttle {
    last: Option<Instant>,
    timer: Option<Instant>,
    dirty: bool,
}

impl Throttle {
    /// New output arrived at `now`; true when a snapshot should be sent right away.
    pub fn on_data(&mut self, now: Instant) -> bool {
        self.dirty = true;
        match self.last {
            Some(last) if now.saturating_duration_since(last) < UPDATE_THROTTLE => {
                if self.timer.is_none() {
                    self.timer = Some(last + UPDATE_THROTTLE);
                }
                false
            }
            _ => {
                self.timer = None;
                true
            }
        }
    }

    /// The pending timer, if any.
    pub fn wake_at(&self) -> Option<Instant> {
        self.timer
    }

    /// The timer fired (or the output ended): clears it; true when a snapshot is due.
    pub fn fire(&mut self) -> bool {
        self.timer = None;
        self.dirty
    }

    /// A snapshot was sent at `now`.
    pub fn sent(&mut self, now: Instant) {
        self.dirty = false;
        self.last = Some(now);
    }
}

struct StreamingOutput<'a> {
    acc: OutputAccumulator,
    throttle: Throttle,
    on_update: &'a mut dyn FnMut(Value),
}

impl StreamingOutput<'_> {
    fn emit(&mut self) {
        if !self.throttle.fire() {
            return;
        }
        self.throttle.sent(Instant::now());
        let snap = self.acc.snapshot(true);
        let details = if snap.truncation.truncated {
            snap.details()
        } else {
            json!({})
        };
        (self.on_update)(json!({
            "content": [{"type": "text", "text": snap.content}],
            "details": details,
        }));
    }

    /// Ends the stream: flushes the decoder, sends a last snapshot if output is pending, and
    /// returns the final snapshot.
    fn finish(&mut self) -> Snapshot {
        self.acc.finish();
        self.emit();
        self.acc.snapshot(true)
    }
}

impl OutputSink for StreamingOutput<'_> {
    fn on_output(&mut self, chunk: &[u8]) {
        self.acc.append(chunk);
        if self.throttle.on_data(Instant::now()) {
            self.emit();
        }
    }

    fn wake_at(&self) -> Option<Instant> {
        self.throttle.wake_at()
    }

    fn on_wake(&mut self) {
        self.emit();
    }
}

// ---------------------------------------------------------------------------------------------
// Output accumulation

/// A view of the output so far.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The tail-truncated text.
    pub content: String,
    /// Totals are those of the whole output; the output fields those of `content`.
    pub truncation: Truncation,
    pub full_output_path: Option<PathBuf>,
    /// Why the full output could not be saved to a temp file (then there is no path).
    pub full_output_error: Option<String>,
}

impl Snapshot {
    /// `{"truncation":…,"fullOutputPath":…}` (the path key only when there is a file).
    fn details(&self) -> Value {
        let mut m = Map::new();
        m.insert("truncation".into(), self.truncation.to_value());
        if let Some(p) = &self.full_output_path {
            m.insert(
                "fullOutputPath".into(),
                Value::String(p.to_string_lossy().into_owned()),
            );
        }
        Value::Object(m)
    }
}

/// `structuredContent.output` and whether it was cut.
#[derive(Clone, Debug, PartialEq)]
pub struct FullOutput {
    pub content: String,
    pub truncated: bool,
}

/// Streaming output with bounded memory (pi's `OutputAccumulator`): decodes UTF-8 across chunk
/// boundaries, keeps a rolling decoded tail for snapshots, counts lines and bytes of the whole
/// output, and writes the raw output to a temp file once it exceeds the limits.
///
/// It also keeps the raw head and tail that `structuredContent.output` needs (at most
/// [`STRUCTURED_OUTPUT_MAX_BYTES`]), so that output is not lost when the temp file cannot be
/// created or written (a full `$TMPDIR`): the file is then deleted, no path is reported and the
/// notice says why.
pub struct OutputAccumulator {
    max_lines: usize,
    max_bytes: usize,
    max_rolling_bytes: usize,
    temp_dir: PathBuf,
    decoder: Utf8Decoder,
    /// Raw output kept until a temp file takes over (at most about `max_bytes`).
    raw_chunks: Vec<Vec<u8>>,
    tail_text: String,
    tail_starts_at_line_boundary: bool,
    total_raw_bytes: usize,
    total_decoded_bytes: usize,
    completed_lines: usize,
    total_lines: usize,
    current_line_bytes: usize,
    has_open_line: bool,
    finished: bool,
    log: Option<TempLog>,
    log_path: Option<PathBuf>,
    /// Why the temp file failed (it is then gone for good).
    log_error: Option<String>,
    /// The raw output's head and tail, for `structuredContent.output` without the temp file.
    head_tail: HeadTail,
    /// Where the writes to the temp file go instead (`/dev/full` for a full disk).
    #[cfg(test)]
    test_log_path: Option<PathBuf>,
}

impl OutputAccumulator {
    pub fn new(temp_dir: &Path) -> OutputAccumulator {
        OutputAccumulator::with_limits(temp_dir, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES)
    }

    pub fn with_limits(temp_dir: &Path, max_lines: usize, max_bytes: usize) -> OutputAccumulator {
        OutputAccumulator {
            max_lines,
            max_bytes,
            max_rolling_bytes: (max_bytes * 2).max(1),
            temp_dir: temp_dir.to_path_buf(),
            decoder: Utf8Decoder::default(),
            raw_chunks: Vec::new(),
            tail_text: String::new(),
            tail_starts_at_line_boundary: true,
            total_raw_bytes: 0,
            total_decoded_bytes: 0,
            completed_lines: 0,
            total_lines: 0,
            current_line_bytes: 0,
            has_open_line: false,
            finished: false,
            log: None,
            log_path: None,
            log_error: None,
            head_tail: HeadTail::new(STRUCTURED_OUTPUT_MAX_BYTES),
            #[cfg(test)]
            test_log_path: None,
        }
    }

    /// Adds one raw chunk.
    pub fn append(&mut self, data: &[u8]) {
        if self.finished {
            return;
        }
        self.total_raw_bytes += data.len();
        self.head_tail.push(data);
        let text = self.decoder.decode(data);
        self.append_decoded(&text);
        if self.log.is_some() || self.should_use_temp_file() {
            self.ensure_log();
            if let Some(log) = &mut self.log {
                log.write(data);
            }
            self.check_log();
        } else if self.log_error.is_none() && !data.is_empty() {
            self.raw_chunks.push(data.to_vec());
        }
    }

    /// Ends the stream (flushes the decoder).
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let rest = self.decoder.finish();
        self.append_decoded(&rest);
        if self.should_use_temp_file() {
            self.ensure_log();
        }
        // Some filesystems report a full disk only now; the result must know before it names
        // the file.
        if let Some(log) = &mut self.log {
            log.sync();
        }
        self.check_log();
    }

    /// Bytes of the last (unterminated) line of the whole output.
    pub fn last_line_bytes(&self) -> usize {
        self.current_line_bytes
    }

    /// The current tail and truncation state; with `persist_if_truncated` a temp file is
    /// created when the output is over the limits.
    pub fn snapshot(&mut self, persist_if_truncated: bool) -> Snapshot {
        // Clipping drops the partial first line of the rolling tail; when the tail is only the
        // end of one over-long line, show that instead.
        let text = match self.snapshot_text() {
            "" => self.tail_text.as_str(),
            t => t,
        };
        let mut tr = truncate_tail(text, self.max_lines, self.max_bytes);
        let truncated =
            self.total_lines > self.max_lines || self.total_decoded_bytes > self.max_bytes;
        tr.truncated_by = if truncated {
            tr.truncated_by.take().or_else(|| {
                Some(if self.total_decoded_bytes > self.max_bytes {
                    "bytes".to_string()
                } else {
                    "lines".to_string()
                })
            })
        } else {
            None
        };
        tr.truncated = truncated;
        tr.total_lines = self.total_lines;
        tr.total_bytes = self.total_decoded_bytes;
        tr.max_lines = self.max_lines;
        tr.max_bytes = self.max_bytes;
        if persist_if_truncated && truncated {
            self.ensure_log();
        }
        Snapshot {
            content: tr.content.clone(),
            truncation: tr,
            full_output_path: self.log_path.clone(),
            full_output_error: self.log_error.clone(),
        }
    }

    /// Closes the temp file (its path stays reported).
    pub fn close_log(&mut self) {
        if let Some(log) = self.log.take() {
            let _ = log.close();
        }
    }

    /// The complete output for `structuredContent`: whole if it fits `max_bytes` raw bytes,
    /// else its first and last `max_bytes / 2` bytes around an omission marker. From the temp
    /// file when there is one, else from memory (`max_bytes` is then at most
    /// [`STRUCTURED_OUTPUT_MAX_BYTES`], what memory keeps).
    pub fn read_full_output(&self, max_bytes: usize) -> FullOutput {
        if let Some(path) = &self.log_path {
            if let Ok(full) = read_file_capped(path, max_bytes) {
                return full;
            }
        } else if self.log_error.is_none() {
            let all: Vec<u8> = self.raw_chunks.concat();
            return FullOutput {
                content: String::from_utf8_lossy(&all).into_owned(),
                truncated: false,
            };
        }
        self.head_tail
            .capped(max_bytes)
            .or_else(|| self.head_tail.capped(self.head_tail.max_bytes()))
            .unwrap_or(FullOutput {
                content: String::new(),
                truncated: false,
            })
    }

    fn append_decoded(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let bytes = text.len();
        self.total_decoded_bytes += bytes;
        self.tail_text.push_str(text);
        if self.tail_text.len() > self.max_rolling_bytes * 2 {
            self.trim_tail();
        }
        match text.rfind('\n') {
            None => {
                self.current_line_bytes += bytes;
                self.has_open_line = true;
            }
            Some(last_nl) => {
                self.completed_lines += text.bytes().filter(|&b| b == b'\n').count();
                let tail = &text[last_nl + 1..];
                self.current_line_bytes = tail.len();
                self.has_open_line = !tail.is_empty();
            }
        }
        self.total_lines = self.completed_lines + usize::from(self.has_open_line);
    }

    fn trim_tail(&mut self) {
        let len = self.tail_text.len();
        if len <= self.max_rolling_bytes {
            return;
        }
        let mut start = len - self.max_rolling_bytes;
        while !self.tail_text.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line_boundary = self.tail_text.as_bytes()[start - 1] == b'\n';
        }
        self.tail_text.drain(..start);
    }

    fn snapshot_text(&self) -> &str {
        if self.tail_starts_at_line_boundary {
            return &self.tail_text;
        }
        match self.tail_text.find('\n') {
            Some(i) => &self.tail_text[i + 1..],
            None => &self.tail_text,
        }
    }

    fn should_use_temp_file(&self) -> bool {
        self.total_raw_bytes > self.max_bytes
            || self.total_decoded_bytes > self.max_bytes
            || self.total_lines > self.max_lines
    }

    fn ensure_log(&mut self) {
        if self.log_path.is_some() || self.log_error.is_some() {
            return;
        }
        let mut log = self.create_log();
        for chunk in self.raw_chunks.drain(..) {
            log.write(&chunk);
        }
        if log.is_open() {
            self.log_path = Some(log.path().to_path_buf());
        }
        self.log = Some(log);
        self.check_log();
    }

    fn create_log(&self) -> TempLog {
        #[cfg_attr(not(test), allow(unused_mut))]
        let mut log = TempLog::create(&self.temp_dir);
        #[cfg(test)]
        if let Some(path) = &self.test_log_path {
            // Should this fail, the file gets the output and the test's assertions say so.
            let _ = log.redirect_writes_for_test(path);
        }
        log
    }

    /// After a failure of the temp file: deletes it and remembers why; the output now comes
    /// from memory.
    fn check_log(&mut self) {
        let Some(e) = self.log.as_ref().and_then(TempLog::error) else {
            return;
        };
        self.log_error = Some(e.to_string());
        self.log_path = None;
        if let Some(log) = self.log.take() {
            log.discard();
        }
    }
}

/// The first and last bytes of a byte stream (half of `max_bytes` each) and its length: enough
/// for [`read_file_capped`]'s result without the file.
struct HeadTail {
    head: Vec<u8>,
    /// The last bytes after the head.
    tail: std::collections::VecDeque<u8>,
    total: usize,
    head_cap: usize,
    tail_cap: usize,
}

impl HeadTail {
    fn new(max_bytes: usize) -> HeadTail {
        let head_cap = max_bytes / 2;
        HeadTail {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
            head_cap,
            tail_cap: max_bytes - head_cap,
        }
    }

    /// The largest `max_bytes` for which [`HeadTail::capped`] always answers.
    fn max_bytes(&self) -> usize {
        self.head_cap + self.tail_cap
    }

    fn push(&mut self, data: &[u8]) {
        self.total += data.len();
        let to_head = (self.head_cap - self.head.len()).min(data.len());
        self.head.extend_from_slice(&data[..to_head]);
        let mut rest = &data[to_head..];
        if rest.len() >= self.tail_cap {
            self.tail.clear();
            rest = &rest[rest.len() - self.tail_cap..];
        }
        let excess = (self.tail.len() + rest.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
        self.tail.extend(rest);
    }

    /// Bytes `start..start + len` of the stream, if they were kept.
    fn range(&self, start: usize, len: usize) -> Option<Vec<u8>> {
        let end = start + len;
        let tail_start = self.total - self.tail.len();
        if end <= self.head.len() {
            return Some(self.head[start..end].to_vec());
        }
        if start >= tail_start {
            return Some(
                self.tail
                    .range(start - tail_start..end - tail_start)
                    .copied()
                    .collect(),
            );
        }
        if tail_start == self.head.len() && end <= self.total {
            let mut all = self.head.clone();
            all.extend(self.tail.iter().copied());
            return Some(all[start..end].to_vec());
        }
        None
    }

    /// What [`read_file_capped`] gives for the whole stream; `None` if memory does not hold the
    /// bytes needed (`max_bytes` above [`HeadTail::max_bytes`]).
    fn capped(&self, max_bytes: usize) -> Option<FullOutput> {
        if self.total <= max_bytes {
            let all = self.range(0, self.total)?;
            return Some(FullOutput {
                content: String::from_utf8_lossy(&all).into_owned(),
                truncated: false,
            });
        }
        let head_bytes = max_bytes / 2;
        let tail_bytes = max_bytes - head_bytes;
        let head = self.range(0, head_bytes)?;
        let tail = self.range(self.total - tail_bytes, tail_bytes)?;
        Some(capped_output(&head, &tail, self.total))
    }
}

/// Reads a file for `structuredContent.output`, keeping its head and tail when it is larger
/// than `max_bytes` (cut at character boundaries).
fn read_file_capped(path: &Path, max_bytes: usize) -> std::io::Result<FullOutput> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len() as usize;
    if size <= max_bytes {
        let mut all = Vec::with_capacity(size);
        file.read_to_end(&mut all)?;
        return Ok(FullOutput {
            content: String::from_utf8_lossy(&all).into_owned(),
            truncated: false,
        });
    }
    let head_bytes = max_bytes / 2;
    let tail_bytes = max_bytes - head_bytes;
    let mut head = vec![0u8; head_bytes];
    file.read_exact(&mut head)?;
    let mut tail = vec![0u8; tail_bytes];
    file.seek(SeekFrom::Start((size - tail_bytes) as u64))?;
    file.read_exact(&mut tail)?;
    Ok(capped_output(&head, &tail, size))
}

/// The first bytes `head` and last bytes `tail` of `size` bytes around the omission marker.
fn capped_output(head: &[u8], tail: &[u8], size: usize) -> FullOutput {
    // The head drops an incomplete trailing character; the tail skips continuation bytes.
    let head_text = Utf8Decoder::default().decode(head);
    let skip = tail.iter().take_while(|&&b| b & 0xc0 == 0x80).count();
    let tail_text = String::from_utf8_lossy(&tail[skip..]);
    let omitted = size - head.len() - tail.len();
    FullOutput {
        content: format!("{head_text}\n\n[... {omitted} bytes omitted ...]\n\n{tail_text}"),
        truncated: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "pi-rpc-bashtool-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    struct Run {
        result: Result<ToolOutput, String>,
        updates: Vec<Value>,
    }

    fn run_with(args: Value, cancel: &CancelToken, cwd: &Path, temp: &Path) -> Run {
        let ctx = ToolContext {
            cwd,
            call_id: "call",
            cancel,
            shell_path: None,
            shell_command_prefix: None,
            env: vec![("PI_TEST_ENV".into(), "on".into())],
            model_supports_images: false,
            model_id: "m".into(),
            temp_dir: temp.to_path_buf(),
            images: crate::image::ImageOptions::default(),
        };
        let mut updates = Vec::new();
        let result = BashTool.execute(&args, &ctx, &mut |v| updates.push(v));
        Run { result, updates }
    }

    fn run(command: &str) -> (Run, PathBuf) {
        let t = tmp("run");
        let r = run_with(json!({ "command": command }), &CancelToken::new(), &t, &t);
        (r, t)
    }

    fn result_json(out: &ToolOutput) -> Value {
        let mut m = Map::new();
        m.insert("content".into(), Value::Array(out.content.clone()));
        if let Some(d) = &out.details {
            m.insert("details".into(), d.clone());
        }
        if let Some(s) = &out.structured_content {
            m.insert("structuredContent".into(), s.clone());
        }
        Value::Object(m)
    }

    #[test]
    fn echo_hi_matches_golden() {
        let (r, t) = run("echo hi");
        let out = r.result.expect("ok");
        assert!(!out.is_error);
        // The wall time is measured (0, or 0.1 on a loaded machine); the rest is pi's exactly.
        let mut value = result_json(&out);
        let wall = value["structuredContent"]["wall_time_seconds"].as_f64();
        assert!(wall.is_some_and(|w| (0.0..1.0).contains(&w)), "{value}");
        value["structuredContent"]["wall_time_seconds"] = json!(0);
        assert_eq!(
            serde_json::to_string(&value).expect("json"),
            r#"{"content":[{"type":"text","text":"hi\n"}],"structuredContent":{"output":"hi\n","truncated":false,"exit_code":0,"wall_time_seconds":0}}"#
        );
        assert_eq!(
            r.updates,
            vec![
                json!({"content": []}),
                json!({"content": [{"type": "text", "text": "hi\n"}], "details": {}})
            ]
        );
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn env_is_passed() {
        let (r, t) = run("echo $PI_TEST_ENV");
        assert_eq!(r.result.expect("ok").content[0]["text"], "on\n");
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn no_output_placeholder_and_nonzero_exit() {
        let (r, t) = run("true");
        assert_eq!(r.result.expect("ok").content[0]["text"], "(no output)");
        let (r, _) = run("echo out; echo err >&2; exit 3");
        let out = r.result.expect("ok");
        assert!(out.is_error);
        assert_eq!(
            out.content[0]["text"],
            "out\nerr\n\n\nCommand exited with code 3"
        );
        assert_eq!(out.structured_content.as_ref().expect("sc")["exit_code"], 3);
        let (r, _) = run("exit 5");
        assert_eq!(
            r.result.expect("ok").content[0]["text"],
            "(no output)\n\nCommand exited with code 5"
        );
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn abort_keeps_output_untrimmed() {
        let t = tmp("abort");
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            c2.cancel();
        });
        let started = Instant::now();
        let r = run_with(json!({"command": "echo x; sleep 30"}), &cancel, &t, &t);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(r.result, Err("x\n\n\nCommand aborted".to_string()));

        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            c2.cancel();
        });
        let r = run_with(json!({"command": "sleep 30"}), &cancel, &t, &t);
        assert_eq!(r.result, Err("Command aborted".to_string()));
        assert_eq!(r.updates, vec![json!({"content": []})]);
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn timeout_texts() {
        let t = tmp("timeout");
        let r = run_with(
            json!({"command": "echo start; sleep 30", "timeout": 0.3}),
            &CancelToken::new(),
            &t,
            &t,
        );
        assert_eq!(
            r.result,
            Err("start\n\n\nCommand timed out after 0.3 seconds".to_string())
        );
        let r = run_with(
            json!({"command": "(while true; do echo tick; sleep 0.05; done) & exit 2", "timeout": 1}),
            &CancelToken::new(),
            &t,
            &t,
        );
        let err = r.result.expect_err("timeout");
        // How long the shell took to exit is measured: 0 seconds, or a little more on a loaded
        // machine (CI saw 0.1).
        let (head, tail) = err
            .split_once("The shell exited with code 2 after ")
            .unwrap_or_else(|| panic!("{err}"));
        assert!(
            head.ends_with("Command timed out after 1 seconds. "),
            "{err}"
        );
        let (secs, rest) = tail.split_once(' ').unwrap_or_else(|| panic!("{err}"));
        // pi prints the seconds with one decimal when there is one ("0.1 seconds").
        assert!(
            secs.parse::<f64>().is_ok_and(|s| (0.0..=1.0).contains(&s)),
            "{err}"
        );
        assert!(
            rest.starts_with("seconds, but background processes it started kept writing output until the timeout."),
            "{err}"
        );
        for (bad, msg) in [
            (
                json!(0),
                "Invalid timeout: must be a finite number of seconds",
            ),
            (
                json!(-1),
                "Invalid timeout: must be a finite number of seconds",
            ),
            (
                json!(3_000_000),
                "Invalid timeout: maximum is 2147483.647 seconds",
            ),
        ] {
            let r = run_with(
                json!({"command": "echo", "timeout": bad}),
                &CancelToken::new(),
                &t,
                &t,
            );
            assert_eq!(r.result, Err(msg.to_string()));
        }
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn setup_errors() {
        let t = tmp("setup");
        let missing = t.join("gone");
        let r = run_with(
            json!({"command": "echo"}),
            &CancelToken::new(),
            &missing,
            &t,
        );
        assert_eq!(
            r.result,
            Err(format!(
                "Working directory does not exist: {}\nCannot execute bash commands.",
                missing.display()
            ))
        );
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn many_lines_truncated_by_lines_with_full_output_file() {
        let (r, t) = run("seq 1 2500");
        let out = r.result.expect("ok");
        let text = out.content[0]["text"].as_str().expect("text").to_string();
        let details = out.details.expect("details");
        let path = details["fullOutputPath"]
            .as_str()
            .expect("path")
            .to_string();
        let tail: Vec<String> = (501..=2500).map(|i| i.to_string()).collect();
        assert_eq!(
            text,
            format!(
                "{}\n\n[Showing lines 501-2500 of 2500. Full output: {path}]",
                tail.join("\n")
            )
        );
        let tr = &details["truncation"];
        assert_eq!(tr["truncatedBy"], "lines");
        assert_eq!(tr["totalLines"], 2500);
        assert_eq!(tr["outputLines"], 2000);
        let full: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        assert_eq!(std::fs::read_to_string(&path).expect("log"), full);
        let sc = out.structured_content.expect("sc");
        assert_eq!(sc["output"], full.as_str());
        assert_eq!(sc["truncated"], false);
        assert!(sc.get("full_output_path").is_none());
        let keys: Vec<&String> = sc.as_object().expect("obj").keys().collect();
        assert_eq!(
            keys,
            ["output", "truncated", "exit_code", "wall_time_seconds"]
        );
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn large_output_bytes_truncation_and_structured_cap() {
        let (r, t) = run("seq 1 300000");
        let out = r.result.expect("ok");
        let text = out.content[0]["text"].as_str().expect("text");
        let details = out.details.expect("details");
        let path = details["fullOutputPath"].as_str().expect("path");
        let full: String = (1..=300000).map(|i| format!("{i}\n")).collect();
        assert_eq!(std::fs::read_to_string(path).expect("log"), full);
        // 2000 lines of 7 bytes fit in 50 KiB: truncated by lines.
        assert!(text.ends_with(&format!(
            "299999\n300000\n\n[Showing lines 298001-300000 of 300000. Full output: {path}]"
        )));
        let sc = out.structured_content.expect("sc");
        assert_eq!(sc["truncated"], true);
        assert_eq!(sc["full_output_path"], path);
        let output = sc["output"].as_str().expect("out");
        assert!(output.starts_with("1\n2\n3\n"));
        assert!(output.ends_with("299999\n300000\n"));
        assert!(output.contains(&format!(
            "\n\n[... {} bytes omitted ...]\n\n",
            full.len() - STRUCTURED_OUTPUT_MAX_BYTES
        )));
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn long_lines_truncated_by_bytes() {
        let (r, t) = run("for i in 1 2 3; do head -c 30000 /dev/zero | tr '\\0' a; echo; done");
        let out = r.result.expect("ok");
        let text = out.content[0]["text"].as_str().expect("text");
        let path = out.details.as_ref().expect("d")["fullOutputPath"]
            .as_str()
            .expect("p")
            .to_string();
        assert!(text.ends_with(&format!(
            "\n\n[Showing lines 3-3 of 3 (50.0KB limit). Full output: {path}]"
        )));
        let _ = std::fs::remove_dir_all(t);

        let (r, t) = run("head -c 60000 /dev/zero | tr '\\0' b");
        let out = r.result.expect("ok");
        let text = out.content[0]["text"].as_str().expect("text");
        let path = out.details.as_ref().expect("d")["fullOutputPath"]
            .as_str()
            .expect("p")
            .to_string();
        assert_eq!(
            text,
            format!(
                "{}\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]",
                "b".repeat(51200)
            )
        );
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn memory_stays_bounded_for_100mb() {
        let t = tmp("big");
        let mut acc = OutputAccumulator::new(&t);
        let chunk = vec![b'x'; 65536];
        let mut line = chunk.clone();
        line.push(b'\n');
        for _ in 0..1600 {
            acc.append(&line);
        }
        acc.finish();
        assert!(acc.tail_text.len() <= 4 * DEFAULT_MAX_BYTES + 65537);
        assert!(acc.raw_chunks.is_empty());
        let snap = acc.snapshot(true);
        assert_eq!(snap.truncation.total_lines, 1600);
        assert!(snap.truncation.truncated);
        acc.close_log();
        let _ = std::fs::remove_dir_all(t);
    }

    /// Feeds `data` in chunks that split characters, then ends the stream.
    fn feed(acc: &mut OutputAccumulator, data: &[u8]) {
        for chunk in data.chunks(4093) {
            acc.append(chunk);
        }
        acc.finish();
    }

    /// Numbered lines with multi-byte characters, `lines` of them (21-26 bytes each).
    fn numbered_lines(lines: usize) -> String {
        (1..=lines)
            .map(|i| format!("line {i} \u{e9}\u{20ac}x\n"))
            .collect()
    }

    fn files_in(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .collect()
    }

    /// Issue 17 §6: on a full `$TMPDIR` the temp file was created but every write failed with
    /// ENOSPC; the raw chunks had been moved into it, so `structuredContent.output` was `""`
    /// and the notice named the empty file. Writes to `/dev/full` fail alike.
    #[test]
    fn full_tmpdir_lost_the_bash_output() {
        let t = tmp("full");
        let enospc = "Full output could not be saved: No space left on device (os error 28)";
        // Over the 2000-line limit only; over the structured cap (1 MiB) too.
        for lines in [3000, 60000] {
            let data = numbered_lines(lines);
            let mut working = OutputAccumulator::new(&t);
            feed(&mut working, data.as_bytes());
            let mut full = OutputAccumulator::new(&t);
            full.test_log_path = Some(PathBuf::from("/dev/full"));
            feed(&mut full, data.as_bytes());

            // structuredContent.output: what the complete file gives, for every cap (odd ones
            // and cuts inside characters included).
            for max in [STRUCTURED_OUTPUT_MAX_BYTES, 1001, 100_000, 7] {
                assert_eq!(
                    full.read_full_output(max),
                    working.read_full_output(max),
                    "{lines} lines, max {max}"
                );
            }
            let structured = full.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES);
            assert_eq!(
                structured.truncated,
                data.len() > STRUCTURED_OUTPUT_MAX_BYTES
            );
            if !structured.truncated {
                assert_eq!(structured.content, data);
            }

            // The text names no file but says why there is none; all else is unchanged.
            let ws = working.snapshot(true);
            let fs = full.snapshot(true);
            let path = ws.full_output_path.clone().expect("working log");
            assert_eq!(fs.full_output_path, None);
            assert_eq!(fs.content, ws.content);
            assert_eq!(fs.truncation, ws.truncation);
            let (text, details) = format_output(&fs, &full, "");
            let (working_text, _) = format_output(&ws, &working, "");
            assert_eq!(
                text,
                working_text.replace(&format!("Full output: {}", path.display()), enospc)
            );
            assert!(
                text.ends_with(&format!(
                    "\n\n[Showing lines {}-{lines} of {lines}. {enospc}]",
                    lines - 1999
                )),
                "{text}"
            );
            let details = details.expect("details");
            assert!(details.get("fullOutputPath").is_none(), "{details}");
            assert_eq!(details["truncation"]["totalLines"], lines);
            full.close_log();
            // The empty file is deleted.
            assert_eq!(files_in(&t), vec![path.clone()]);
            working.close_log();
            let _ = std::fs::remove_file(&path);
        }
        let _ = std::fs::remove_dir_all(t);
    }

    /// The disk fills up while the output is being written: what reached the file is not lost
    /// either, and the partial file is deleted.
    #[test]
    fn tmpdir_filling_up_midway_keeps_the_bash_output() {
        let t = tmp("midway");
        let data = numbered_lines(60000);
        let (first, second) = data.as_bytes().split_at(700_001);
        let mut working = OutputAccumulator::new(&t);
        feed(&mut working, data.as_bytes());
        let mut acc = OutputAccumulator::new(&t);
        for chunk in first.chunks(4093) {
            acc.append(chunk);
        }
        let partial = acc.snapshot(true).full_output_path.expect("log");
        assert!(std::fs::metadata(&partial).expect("log").len() > 0);
        acc.log
            .as_mut()
            .expect("log")
            .redirect_writes_for_test(Path::new("/dev/full"))
            .expect("/dev/full");
        feed(&mut acc, second);
        assert_eq!(
            acc.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES),
            working.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES)
        );
        let snap = acc.snapshot(true);
        assert_eq!(snap.full_output_path, None);
        assert!(!partial.exists(), "partial log {} left", partial.display());
        let (text, _) = format_output(&snap, &acc, "");
        assert!(text.ends_with(
            "of 60000. Full output could not be saved: No space left on device (os error 28)]"
        ));
        working.close_log();
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn missing_tmpdir_keeps_the_bash_output() {
        let t = tmp("notmp");
        let gone = t.join("gone");
        let r = run_with(
            json!({"command": "seq 1 2500"}),
            &CancelToken::new(),
            &t,
            &gone,
        );
        let out = r.result.expect("ok");
        let tail: Vec<String> = (501..=2500).map(|i| i.to_string()).collect();
        assert_eq!(
            out.content[0]["text"],
            format!(
                "{}\n\n[Showing lines 501-2500 of 2500. Full output could not be saved: No such file or directory (os error 2)]",
                tail.join("\n")
            )
        );
        assert!(out
            .details
            .expect("details")
            .get("fullOutputPath")
            .is_none());
        let full: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        let sc = out.structured_content.expect("sc");
        assert_eq!(sc["output"], full.as_str());
        assert_eq!(sc["truncated"], false);
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn head_tail_matches_the_capped_file() {
        let t = tmp("headtail");
        let path = t.join("out");
        let data = numbered_lines(500);
        for max in [1, 2, 7, 100, 1001, 4096] {
            for len in [0, 1, max / 2, max, max + 1, 3 * max, data.len()] {
                let bytes = &data.as_bytes()[..len.min(data.len())];
                std::fs::write(&path, bytes).expect("write");
                let mut ht = HeadTail::new(max);
                for chunk in bytes.chunks(13) {
                    ht.push(chunk);
                }
                assert!(ht.head.len() + ht.tail.len() <= max);
                for m in (1..=max).step_by(max / 7 + 1).chain([max]) {
                    assert_eq!(
                        ht.capped(m),
                        Some(read_file_capped(&path, m).expect("read")),
                        "max {max} len {len} m {m}"
                    );
                }
            }
        }
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn non_utf8_bytes_survive() {
        let (r, t) = run(r"printf 'a\377b\342\202\254\n'");
        let out = r.result.expect("ok");
        assert_eq!(out.content[0]["text"], "a\u{fffd}b€\n");
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn throttled_updates() {
        let mut th = Throttle::default();
        let t0 = Instant::now();
        assert!(th.on_data(t0));
        th.sent(t0);
        assert!(!th.on_data(t0 + Duration::from_millis(10)));
        assert_eq!(th.wake_at(), Some(t0 + UPDATE_THROTTLE));
        assert!(!th.on_data(t0 + Duration::from_millis(20)));
        assert_eq!(th.wake_at(), Some(t0 + UPDATE_THROTTLE));
        assert!(th.fire());
        th.sent(t0 + UPDATE_THROTTLE);
        assert_eq!(th.wake_at(), None);
        assert!(!th.fire());
        assert!(th.on_data(t0 + Duration::from_millis(250)));
    }

    #[test]
    fn streamed_snapshots_are_spaced() {
        let (r, t) = run("for i in 1 2 3 4 5; do echo line $i; sleep 0.06; done");
        r.result.expect("ok");
        // First the empty update, then at most one per 100 ms plus the final one.
        assert_eq!(r.updates[0], json!({"content": []}));
        assert!(
            r.updates.len() >= 3 && r.updates.len() <= 6,
            "{:?}",
            r.updates
        );
        assert_eq!(
            r.updates.last().expect("last")["content"][0]["text"],
            "line 1\nline 2\nline 3\nline 4\nline 5\n"
        );
        let _ = std::fs::remove_dir_all(t);
    }

    #[test]
    fn js_numbers() {
        assert_eq!(js_number_string(1.0), "1");
        assert_eq!(js_number_string(0.5), "0.5");
        assert_eq!(js_number_string(2147483.647), "2147483.647");
        assert_eq!(round_tenths(Duration::from_millis(1249)), 1.2);
        assert_eq!(round_tenths(Duration::from_millis(40)), 0.0);
    }
}
