//! The `read` tool (`tools.md` §2): text files with offset/limit paging and head truncation,
//! images (detected by their magic bytes) as attachments.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{json, Value};

use super::args::{check_cancelled, str_or_empty};
use super::path::{check_access, resolve_read_path, Access};
use super::{Tool, ToolContext, ToolOutput};
use crate::js::fs_error::node_error;
use crate::js::number::js_number_string;
use crate::truncate::{
    format_size, truncate_head, Truncation, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES,
};

/// Bytes read to recognise an image.
const IMAGE_SNIFF_BYTES: usize = 4100;

/// `read`: `{path, offset?, limit?}`.
pub struct ReadTool;

impl Tool for ReadTool {
    fn name(&self) -> &'static str {
        "read"
    }

    fn description(&self) -> String {
        format!(
            "Show the contents of a file. Text files and images (jpg, png, gif, webp, bmp) are \
             supported; images come back as attachments. Text output stops after {DEFAULT_MAX_LINES} \
             lines or {}KB, whichever comes first: page through longer files with offset and limit, \
             continuing from the offset named at the end of the output until you have what you need.",
            DEFAULT_MAX_BYTES / 1024
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to read, relative to the working directory or absolute"
                },
                "offset": {
                    "type": "number",
                    "description": "1-based line number to begin at"
                },
                "limit": {
                    "type": "number",
                    "description": "How many lines to return at most"
                }
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("Show a file's contents (text or image)")
    }

    fn guidelines(&self) -> Vec<&'static str> {
        vec!["Look at files with read rather than cat or sed."]
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        check_cancelled(ctx.cancel)?;
        let path = str_or_empty(args, "path");
        let offset = args.get("offset").and_then(Value::as_f64);
        let limit = args.get("limit").and_then(Value::as_f64);
        let absolute = resolve_read_path(path, ctx.cwd);
        // A FIFO or a device would block the open or the read with no way to abort it (or,
        // `/dev/zero`, never end): only regular files (and directories, for their error) are
        // opened. `stat` itself never blocks.
        if let Ok(meta) = std::fs::metadata(&absolute) {
            if !meta.is_file() && !meta.is_dir() {
                return Err(format!(
                    "Cannot read {}: not a regular file",
                    absolute.display()
                ));
            }
        }
        check_access(&absolute, Access::Read)
            .map_err(|e| node_error(&e, "access", Some(&absolute)))?;
        check_cancelled(ctx.cancel)?;
        let output = match sniff_image(&absolute)? {
            Some(mime) => read_image(&absolute, mime, ctx)?,
            None => read_text(&absolute, path, offset, limit, ctx)?,
        };
        check_cancelled(ctx.cancel)?;
        Ok(output)
    }
}

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

/// The selected lines of a file: how many lines the file has, the head truncation of the
/// selection and the size of its first line.
struct Selection {
    total_file_lines: f64,
    truncation: Truncation,
    first_line_bytes: usize,
}

fn read_text(
    absolute: &Path,
    path: &str,
    offset: Option<f64>,
    limit: Option<f64>,
    ctx: &ToolContext<'_>,
) -> Result<ToolOutput, String> {
    // `offset ? max(0, offset - 1) : 0` (0 and NaN are falsy).
    let start_line = match offset {
        Some(o) if o != 0.0 && !o.is_nan() => (o - 1.0).max(0.0),
        _ => 0.0,
    };
    let streamable = offset.is_none_or(|o| o.fract() == 0.0)
        && limit.is_none_or(|l| l.fract() == 0.0 && l >= 0.0);
    let sel = if streamable {
        select_streaming(
            absolute,
            start_line as usize,
            limit.map(|l| l as usize),
            ctx,
        )?
    } else {
        select_in_memory(absolute, start_line, limit)?
    };
    let total = sel.total_file_lines;
    if start_line >= total {
        let shown = offset.map_or_else(|| "undefined".to_string(), js_number_string);
        return Err(format!(
            "Offset {shown} is beyond end of file ({} lines total)",
            js_number_string(total)
        ));
    }
    let start_display = start_line + 1.0;
    let n = js_number_string;
    let tr = sel.truncation;
    let user_limited = limit.map(|l| (start_line + l).min(total) - start_line);
    let max_size = format_size(DEFAULT_MAX_BYTES);
    let (text, details) = if tr.first_line_exceeds_limit {
        let text = format!(
            "[Line {} is {}, exceeds {max_size} limit. Use bash: sed -n '{}p' {path} | head -c {DEFAULT_MAX_BYTES}]",
            n(start_display),
            format_size(sel.first_line_bytes),
            n(start_display),
        );
        (text, Some(json!({ "truncation": tr.to_value() })))
    } else if tr.truncated {
        let end_display = start_display + tr.output_lines as f64 - 1.0;
        let next = end_display + 1.0;
        let notice = if tr.truncated_by.as_deref() == Some("lines") {
            format!(
                "\n\n[Showing lines {}-{} of {}. Use offset={} to continue.]",
                n(start_display),
                n(end_display),
                n(total),
                n(next)
            )
        } else {
            format!(
                "\n\n[Showing lines {}-{} of {} ({max_size} limit). Use offset={} to continue.]",
                n(start_display),
                n(end_display),
                n(total),
                n(next)
            )
        };
        (
            format!("{}{notice}", tr.content),
            Some(json!({ "truncation": tr.to_value() })),
        )
    } else if let Some(ul) = user_limited.filter(|ul| start_line + ul < total) {
        let remaining = total - (start_line + ul);
        let next = start_line + ul + 1.0;
        (
            format!(
                "{}\n\n[{} more lines in file. Use offset={} to continue.]",
                tr.content,
                n(remaining),
                n(next)
            ),
            None,
        )
    } else {
        (tr.content, None)
    };
    Ok(ToolOutput {
        content: vec![json!({"type": "text", "text": text})],
        details,
        structured_content: Some(Value::String(text)),
        is_error: false,
        terminate: false,
    })
}

/// JavaScript's `Array.prototype.slice(start, end)` bounds for an array of `len` items.
fn js_slice_bounds(len: usize, start: f64, end: Option<f64>) -> (usize, usize) {
    let clamp = |x: f64| -> usize {
        let x = if x.is_nan() { 0.0 } else { x.trunc() };
        let len_f = len as f64;
        let v = if x < 0.0 {
            (len_f + x).max(0.0)
        } else {
            x.min(len_f)
        };
        v as usize
    };
    let s = clamp(start);
    let e = end.map_or(len, clamp);
    (s, e.max(s))
}

/// The whole-file path, for unusual ranges (fractional offset or limit, negative limit), whose
/// meaning JavaScript's array slicing defines: `limit = -1` selects all lines but the last.
fn select_in_memory(
    absolute: &Path,
    start_line: f64,
    limit: Option<f64>,
) -> Result<Selection, String> {
    let bytes = read_all(absolute)?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.split('\n').collect();
    let len = all.len();
    let end = limit.map(|l| (start_line + l).min(len as f64));
    let (s, e) = js_slice_bounds(len, start_line, end);
    let truncation = truncate_head(&all[s..e].join("\n"), DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let first_line_bytes = if truncation.first_line_exceeds_limit {
        all.get(start_line as usize).map_or(0, |l| l.len())
    } else {
        0
    };
    Ok(Selection {
        total_file_lines: len as f64,
        truncation,
        first_line_bytes,
    })
}

fn read_all(absolute: &Path) -> Result<Vec<u8>, String> {
    let mut file = File::open(absolute).map_err(|e| node_error(&e, "open", Some(absolute)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| node_error(&e, "read", None))?;
    Ok(bytes)
}

/// Streams the file and keeps only what the head truncation can show (about 2000 lines /
/// 50 KiB, one line past the caps), counting the rest, so memory does not grow with the file.
fn select_streaming(
    absolute: &Path,
    start_line: usize,
    limit: Option<usize>,
    ctx: &ToolContext<'_>,
) -> Result<Selection, String> {
    let file = File::open(absolute).map_err(|e| node_error(&e, "open", Some(absolute)))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let end_line = limit.map_or(usize::MAX, |l| start_line.saturating_add(l));
    let mut s = LineSelector::new();
    let mut line = 0usize;
    loop {
        check_cancelled(ctx.cancel)?;
        let buf = reader
            .fill_buf()
            .map_err(|e| node_error(&e, "read", None))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut pos = 0;
        while pos < n {
            let selected = line >= start_line && line < end_line;
            match buf[pos..].iter().position(|&b| b == b'\n') {
                Some(k) => {
                    if selected {
                        s.append(&buf[pos..pos + k]);
                        s.finish_line();
                    }
                    line += 1;
                    pos += k + 1;
                }
                None => {
                    if selected {
                        s.append(&buf[pos..]);
                    }
                    pos = n;
                }
            }
        }
        reader.consume(n);
    }
    if line >= start_line && line < end_line {
        s.finish_line();
    }
    let joined = s.stored.join("\n");
    let mut truncation = truncate_head(&joined, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    truncation.total_lines = if s.selected_bytes == 0 {
        0
    } else {
        s.selected_lines - usize::from(s.last_line_empty)
    };
    truncation.total_bytes = s.selected_bytes;
    Ok(Selection {
        total_file_lines: (line + 1) as f64,
        truncation,
        first_line_bytes: s.first_line_bytes,
    })
}

/// Collects selected lines: stores them until past the caps, counts all of them.
struct LineSelector {
    stored: Vec<String>,
    stored_bytes: usize,
    storing: bool,
    current: Vec<u8>,
    current_len: usize,
    selected_lines: usize,
    selected_bytes: usize,
    first_line_bytes: usize,
    last_line_empty: bool,
}

impl LineSelector {
    fn new() -> Self {
        LineSelector {
            stored: Vec::new(),
            stored_bytes: 0,
            storing: true,
            current: Vec::new(),
            current_len: 0,
            selected_lines: 0,
            selected_bytes: 0,
            first_line_bytes: 0,
            last_line_empty: true,
        }
    }

    fn append(&mut self, piece: &[u8]) {
        if self.storing && self.current.len() <= DEFAULT_MAX_BYTES {
            // A line over the byte cap is never shown: keep just enough to know that.
            let room = DEFAULT_MAX_BYTES + 1 - self.current.len();
            self.current
                .extend_from_slice(&piece[..piece.len().min(room)]);
        }
        self.current_len += piece.len();
    }

    fn finish_line(&mut self) {
        if self.selected_lines == 0 {
            self.first_line_bytes = self.current_len;
        }
        if self.storing {
            let past_caps =
                self.stored.len() > DEFAULT_MAX_LINES || self.stored_bytes > DEFAULT_MAX_BYTES;
            let text = String::from_utf8_lossy(&self.current).into_owned();
            self.stored_bytes += text.len() + usize::from(!self.stored.is_empty());
            self.stored.push(text);
            self.storing = !past_caps;
        }
        self.selected_bytes += self.current_len + usize::from(self.selected_lines > 0);
        self.selected_lines += 1;
        self.last_line_empty = self.current_len == 0;
        self.current.clear();
        self.current_len = 0;
    }
}

// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

fn sniff_image(absolute: &Path) -> Result<Option<&'static str>, String> {
    let mut file = File::open(absolute).map_err(|e| node_error(&e, "open", Some(absolute)))?;
    let mut buf = vec![0u8; IMAGE_SNIFF_BYTES];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(node_error(&e, "read", None)),
        }
    }
    Ok(detect_image_mime(&buf[..filled]))
}

fn u16_le(b: &[u8], at: usize) -> u32 {
    u32::from(*b.get(at).unwrap_or(&0)) | (u32::from(*b.get(at + 1).unwrap_or(&0)) << 8)
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u16_le(b, at) | (u16_le(b, at + 2) << 16)
}

fn u32_be(b: &[u8], at: usize) -> u32 {
    (0..4).fold(0u32, |acc, i| {
        (acc << 8) | u32::from(*b.get(at + i).unwrap_or(&0))
    })
}

fn ascii_at(b: &[u8], at: usize, text: &str) -> bool {
    b.get(at..at + text.len()) == Some(text.as_bytes())
}

/// The image type of a file's first bytes: JPEG (not JPEG-LS), PNG (not animated), GIF, WebP,
/// BMP (with a plausible header); `None` for anything else.
pub fn detect_image_mime(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(&[0xff, 0xd8, 0xff]) {
        return (b.get(3) != Some(&0xf7)).then_some("image/jpeg");
    }
    const PNG: [u8; 8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
    if b.starts_with(&PNG) {
        let is_png = b.len() >= 16 && u32_be(b, 8) == 13 && ascii_at(b, 12, "IHDR");
        return (is_png && !is_animated_png(b)).then_some("image/png");
    }
    if ascii_at(b, 0, "GIF87a") || ascii_at(b, 0, "GIF89a") {
        return Some("image/gif");
    }
    if ascii_at(b, 0, "RIFF") && ascii_at(b, 8, "WEBP") {
        return Some("image/webp");
    }
    if ascii_at(b, 0, "BM") && is_bmp(b) {
        return Some("image/bmp");
    }
    None
}

fn is_animated_png(b: &[u8]) -> bool {
    let mut offset = 8usize;
    while offset + 8 <= b.len() {
        let len = u32_be(b, offset) as usize;
        if ascii_at(b, offset + 4, "acTL") {
            return true;
        }
        if ascii_at(b, offset + 4, "IDAT") {
            return false;
        }
        let next = offset + 8 + len + 4;
        if next <= offset || next > b.len() {
            return false;
        }
        offset = next;
    }
    false
}

fn is_bmp(b: &[u8]) -> bool {
    if b.len() < 26 {
        return false;
    }
    let declared = u32_le(b, 2);
    let pixel_offset = u32_le(b, 10);
    let dib = u32_le(b, 14);
    if declared != 0 && declared < 26 {
        return false;
    }
    if u64::from(pixel_offset) < 14 + u64::from(dib) {
        return false;
    }
    if declared != 0 && pixel_offset >= declared {
        return false;
    }
    let (planes, bpp) = if dib == 12 {
        (u16_le(b, 22), u16_le(b, 24))
    } else if (40..=124).contains(&dib) {
        if b.len() < 30 {
            return false;
        }
        (u16_le(b, 26), u16_le(b, 28))
    } else {
        return false;
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bpp)
}

fn read_image(
    absolute: &Path,
    mime: &'static str,
    ctx: &ToolContext<'_>,
) -> Result<ToolOutput, String> {
    let bytes = read_all(absolute)?;
    check_cancelled(ctx.cancel)?;
    let processed = crate::image::process_image(&bytes, mime, &ctx.images);
    drop(bytes);
    let mut details = None;
    let content = match processed {
        Err(omitted) => {
            vec![json!({"type": "text", "text": format!("Read image file [{mime}]\n{omitted}")})]
        }
        Ok(image) => {
            let mut note = format!("Read image file [{}]", image.mime_type);
            for h in &image.hints {
                note.push('\n');
                note.push_str(h);
            }
            if !ctx.model_supports_images && !ctx.model_id.is_empty() {
                details = Some(json!({"imageUnsupportedByModel": ctx.model_id}));
            }
            vec![
                json!({"type": "text", "text": note}),
                json!({"type": "image", "data": image.data, "mimeType": image.mime_type}),
            ]
        }
    };
    let structured = structured_output(&content);
    Ok(ToolOutput {
        content,
        details,
        structured_content: Some(structured),
        is_error: false,
        terminate: false,
    })
}

/// The image block and its note, or the text (pi's `toReadOutput`).
fn structured_output(content: &[Value]) -> Value {
    let text = content
        .iter()
        .find(|b| b["type"] == "text")
        .and_then(|b| b["text"].as_str())
        .unwrap_or_default();
    match content.iter().find(|b| b["type"] == "image") {
        Some(image) => json!({
            "type": "image",
            "data": image["data"],
            "mimeType": image["mimeType"],
            "note": text,
        }),
        None => Value::String(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;
    use crate::tools::args::test_support::{schema_without_descriptions, temp_dir, tool_context};

    fn ctx<'a>(cwd: &'a Path, cancel: &'a CancelToken, images: bool) -> ToolContext<'a> {
        tool_context(cwd, cancel, images, "mock-sonnet")
    }

    fn read(dir: &Path, args: Value) -> Result<ToolOutput, String> {
        let cancel = CancelToken::new();
        ReadTool.execute(&args, &ctx(dir, &cancel, true), &mut |_| {})
    }

    fn text_of(out: &ToolOutput) -> &str {
        out.content[0]["text"].as_str().unwrap()
    }

    const NOTES: &str = "line one\nline two\nline three\n";

    #[test]
    fn whole_file_and_structured_content() {
        let dir = temp_dir("whole");
        std::fs::write(dir.join("notes.txt"), NOTES).unwrap();
        let out = read(&dir, json!({"path":"notes.txt"})).unwrap();
        assert_eq!(text_of(&out), NOTES);
        assert_eq!(out.details, None);
        assert_eq!(out.structured_content, Some(Value::String(NOTES.into())));
        // `@` prefix stripped.
        assert_eq!(
            text_of(&read(&dir, json!({"path":"@notes.txt"})).unwrap()),
            NOTES
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // Texts observed from pi 1.6.0 for a 3-line file ending in "\n" (4 lines as split).
    #[test]
    fn offset_and_limit_notices() {
        let dir = temp_dir("notices");
        std::fs::write(dir.join("notes.txt"), NOTES).unwrap();
        let t = |args: Value| read(&dir, args).map(|o| text_of(&o).to_string());
        assert_eq!(
            t(json!({"path":"notes.txt","offset":2,"limit":1})).unwrap(),
            "line two\n\n[2 more lines in file. Use offset=3 to continue.]"
        );
        assert_eq!(
            t(json!({"path":"notes.txt","limit":1})).unwrap(),
            "line one\n\n[3 more lines in file. Use offset=2 to continue.]"
        );
        assert_eq!(
            t(json!({"path":"notes.txt","offset":0,"limit":2})).unwrap(),
            "line one\nline two\n\n[2 more lines in file. Use offset=3 to continue.]"
        );
        assert_eq!(
            t(json!({"path":"notes.txt","offset":1.5,"limit":1.5})).unwrap(),
            "line one\nline two\n\n[2 more lines in file. Use offset=3 to continue.]"
        );
        assert_eq!(
            t(json!({"path":"notes.txt","limit":-1})).unwrap(),
            "line one\nline two\nline three\n\n[5 more lines in file. Use offset=0 to continue.]"
        );
        assert_eq!(
            t(json!({"path":"notes.txt","limit":0})).unwrap(),
            "\n\n[4 more lines in file. Use offset=1 to continue.]"
        );
        assert_eq!(t(json!({"path":"notes.txt","offset":4})).unwrap(), "");
        assert_eq!(
            t(json!({"path":"notes.txt","offset":10})).unwrap_err(),
            "Offset 10 is beyond end of file (4 lines total)"
        );
        std::fs::write(dir.join("empty.txt"), "").unwrap();
        assert_eq!(t(json!({"path":"empty.txt"})).unwrap(), "");
        assert_eq!(
            t(json!({"path":"empty.txt","offset":2})).unwrap_err(),
            "Offset 2 is beyond end of file (1 lines total)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_and_directory_errors() {
        let dir = temp_dir("errors");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        assert_eq!(
            read(&dir, json!({"path":"missing.txt"})).unwrap_err(),
            format!(
                "ENOENT: no such file or directory, access '{}'",
                dir.join("missing.txt").display()
            )
        );
        assert_eq!(
            read(&dir, json!({"path":"sub"})).unwrap_err(),
            "EISDIR: illegal operation on a directory, read"
        );
        let cancel = CancelToken::new();
        cancel.cancel();
        let err = ReadTool
            .execute(
                &json!({"path":"sub"}),
                &ctx(&dir, &cancel, true),
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(err, "Operation aborted");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncation_by_lines_and_bytes() {
        let dir = temp_dir("trunc");
        let many: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.join("many.txt"), &many).unwrap();
        let out = read(&dir, json!({"path":"many.txt"})).unwrap();
        let text = text_of(&out);
        assert!(text.ends_with(
            "1999\n2000\n\n[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]"
        ));
        let tr = &out.details.as_ref().unwrap()["truncation"];
        assert_eq!(tr["truncatedBy"], "lines");
        assert_eq!(tr["totalLines"], 2500);
        assert_eq!(tr["outputLines"], 2000);
        let out = read(&dir, json!({"path":"many.txt","offset":2400})).unwrap();
        assert!(text_of(&out).starts_with("2400\n"));
        assert_eq!(out.details, None);

        let wide: String = (0..100)
            .map(|_| format!("{}\n", "x".repeat(1000)))
            .collect();
        std::fs::write(dir.join("wide.txt"), &wide).unwrap();
        let out = read(&dir, json!({"path":"wide.txt"})).unwrap();
        assert!(text_of(&out).ends_with(
            "\n\n[Showing lines 1-51 of 101 (50.0KB limit). Use offset=52 to continue.]"
        ));
        let tr = &out.details.as_ref().unwrap()["truncation"];
        assert_eq!(tr["truncatedBy"], "bytes");
        assert_eq!(tr["totalBytes"], 100_100);
        assert_eq!(tr["outputBytes"], 51 * 1001 - 1);

        std::fs::write(
            dir.join("long.txt"),
            format!("short\n{}\nend\n", "y".repeat(60_000)),
        )
        .unwrap();
        let out = read(&dir, json!({"path":"long.txt","offset":2})).unwrap();
        assert_eq!(
            text_of(&out),
            "[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' long.txt | head -c 51200]"
        );
        let tr = &out.details.as_ref().unwrap()["truncation"];
        assert_eq!(tr["firstLineExceedsLimit"], true);
        assert_eq!(tr["content"], "");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn streaming_and_in_memory_selection_agree() {
        let dir = temp_dir("agree");
        let text = format!("a\n\nb\r\nc{}\nlast", "é".repeat(30_000));
        let path = dir.join("f.txt");
        std::fs::write(&path, &text).unwrap();
        let cancel = CancelToken::new();
        let c = ctx(&dir, &cancel, true);
        for (start, limit) in [(0usize, None), (1, Some(2usize)), (3, None), (2, Some(0))] {
            let a = select_streaming(&path, start, limit, &c).unwrap();
            let b = select_in_memory(&path, start as f64, limit.map(|l| l as f64)).unwrap();
            assert_eq!(a.truncation, b.truncation, "start {start} limit {limit:?}");
            assert_eq!(a.total_file_lines, b.total_file_lines);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn image_detection_by_magic_bytes() {
        let png = [
            0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0,
            0,
        ];
        assert_eq!(detect_image_mime(&png), Some("image/png"));
        assert_eq!(
            detect_image_mime(&[0xff, 0xd8, 0xff, 0xe0]),
            Some("image/jpeg")
        );
        assert_eq!(detect_image_mime(&[0xff, 0xd8, 0xff, 0xf7]), None);
        assert_eq!(detect_image_mime(b"GIF89a...."), Some("image/gif"));
        assert_eq!(
            detect_image_mime(b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(detect_image_mime(b"BM not really a bitmap header"), None);
        assert_eq!(detect_image_mime(b"plain text"), None);
        let mut apng = png.to_vec();
        apng.extend_from_slice(&[0, 0, 0, 8, b'a', b'c', b'T', b'L']);
        assert_eq!(detect_image_mime(&apng), Some("image/png"));
    }

    #[cfg(feature = "images")]
    fn tiny_bmp() -> Vec<u8> {
        // 2x2, 24-bit, bottom-up: red green / blue white.
        let mut b = Vec::new();
        b.extend_from_slice(b"BM");
        b.extend_from_slice(&70u32.to_le_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        b.extend_from_slice(&54u32.to_le_bytes());
        b.extend_from_slice(&40u32.to_le_bytes());
        b.extend_from_slice(&2i32.to_le_bytes());
        b.extend_from_slice(&2i32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&24u16.to_le_bytes());
        b.extend_from_slice(&[0; 24]);
        // Bottom row first: blue, white (+2 padding), then red, green.
        b.extend_from_slice(&[255, 0, 0, 255, 255, 255, 0, 0]);
        b.extend_from_slice(&[0, 0, 255, 0, 255, 0, 0, 0]);
        b
    }

    #[cfg(feature = "images")]
    #[test]
    fn images_are_attached_with_note_and_structured_content() {
        let dir = temp_dir("image");
        let png = encode_image(
            &image::RgbImage::from_pixel(4, 3, image::Rgb([200, 10, 10])),
            image::ImageFormat::Png,
        );
        std::fs::write(dir.join("pic"), &png).unwrap();
        let out = read(&dir, json!({"path":"pic"})).unwrap();
        assert_eq!(
            out.content,
            vec![
                json!({"type":"text","text":"Read image file [image/png]"}),
                json!({"type":"image","data":crate::image::base64::encode(&png),"mimeType":"image/png"}),
            ]
        );
        assert_eq!(out.details, None);
        assert_eq!(
            out.structured_content,
            Some(
                json!({"type":"image","data":crate::image::base64::encode(&png),"mimeType":"image/png","note":"Read image file [image/png]"})
            )
        );
        let cancel = CancelToken::new();
        let out = ReadTool
            .execute(
                &json!({"path":"pic"}),
                &ctx(&dir, &cancel, false),
                &mut |_| {},
            )
            .unwrap();
        assert_eq!(
            out.details,
            Some(json!({"imageUnsupportedByModel":"mock-sonnet"}))
        );

        std::fs::write(dir.join("pic.bmp"), tiny_bmp()).unwrap();
        assert_eq!(detect_image_mime(&tiny_bmp()), Some("image/bmp"));
        let out = read(&dir, json!({"path":"pic.bmp"})).unwrap();
        assert_eq!(
            out.content[0]["text"],
            "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
        );
        assert_eq!(out.content[1]["mimeType"], "image/png");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(feature = "images")]
    fn encode_image(img: &image::RgbImage, format: image::ImageFormat) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[cfg(feature = "images")]
    #[test]
    fn big_images_are_resized_with_a_dimension_note() {
        let dir = temp_dir("big-image");
        let img = image::RgbImage::from_fn(2500, 500, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        });
        std::fs::write(
            dir.join("wide.png"),
            encode_image(&img, image::ImageFormat::Png),
        )
        .unwrap();
        let out = read(&dir, json!({"path":"wide.png"})).unwrap();
        let note =
            "Read image file [image/png]\n[Image: original 2500x500, displayed at 2000x400. \
                    Multiply coordinates by 1.25 to map to original image.]";
        assert_eq!(out.content[0], json!({"type":"text","text":note}));
        let data = crate::image::base64::decode(out.content[1]["data"].as_str().unwrap());
        let shown = image::load_from_memory(&data).unwrap();
        assert_eq!((shown.width(), shown.height()), (2000, 400));
        assert_eq!(out.structured_content.as_ref().unwrap()["note"], note);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(feature = "images")]
    #[test]
    fn undecodable_images_become_a_note() {
        let dir = temp_dir("broken-image");
        let png = [
            0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 1,
            2, 3,
        ];
        std::fs::write(dir.join("pic"), png).unwrap();
        let out = read(&dir, json!({"path":"pic"})).unwrap();
        let text = "Read image file [image/png]\n\
                    [Image omitted: could not be resized below the inline image size limit.]";
        assert_eq!(out.content, vec![json!({"type":"text","text":text})]);
        assert_eq!(out.structured_content, Some(json!(text)));
        assert_eq!(out.details, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn schema_shape_and_key_order() {
        let schema = ReadTool.parameters();
        assert_eq!(
            serde_json::to_string(&schema_without_descriptions(&schema)).unwrap(),
            r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}}}"#
        );
        let keys: Vec<&String> = schema["properties"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|p| p.as_object().unwrap().keys())
            .collect();
        assert!(keys.iter().any(|k| k.as_str() == "description"));
    }
}
