//! MCP tool definitions and results as pi makes them (`mcp.md` §5.2, §7; pi's
//! `extensions/mcp/tools.js`, pi-mcp's `protocol/content.js`, `input-schema.js` and
//! `output-limit.js`): the description and parameters of a listed tool, content blocks converted
//! to model content, the 20 KiB output limit, and the whole result of a `tools/call`.
//!
//! Files written here (binary resources, full outputs) go to the temp directory the caller names,
//! as `pi-mcp-<16 random hex><ext>`, created new with mode 0600 (pi's `writeOutputFile`).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::image::base64;
use crate::js::fs_error::node_error;
use crate::js::json::js_stringify_pretty;
use crate::js::number::js_number_string;
use crate::js::string::is_js_whitespace;
use crate::js::value::{js_template, js_truthy};
use crate::truncate::format_size;

/// Model-facing text of an MCP result beyond this many UTF-8 bytes is cut in the middle.
pub(crate) const OUTPUT_MAX_BYTES: usize = 20 * 1024;

/// The tool resource links point the model to.
const READ_RESOURCE_TOOL: &str = "read_mcp_resource";

/// What a `tools/call` answer becomes (§7.1).
#[derive(Debug)]
pub(crate) struct CallOutcome {
    /// Model-facing content, after conversion and the output limit.
    pub content: Vec<Value>,
    /// `{"server","tool"[,"fullOutputPath"]}`, `tool` being the raw server tool name.
    pub details: Value,
    /// The `CallToolResult` as received (a missing `content` as `[]`), without `_meta`.
    pub structured_content: Value,
    /// The server set `isError`.
    pub is_error: bool,
}

/// §4.4: the check a `tools/call` answer must pass: an object whose `content`, if present, is an
/// array.
pub(crate) fn check_call_result(result: &Value) -> Result<(), String> {
    match result.as_object() {
        Some(o) if o.get("content").is_none_or(Value::is_array) => Ok(()),
        _ => Err("Invalid MCP tools/call result".to_string()),
    }
}

/// §7.1/§7.3: the whole tool result of a `tools/call` answer `result` (checked with
/// [`check_call_result`]; anything else counts as having no content). Without content blocks, a
/// `structuredContent` becomes its indented JSON; an `isError` result without any text gets
/// `MCP tool <server>/<tool> returned an error`; then the output limit applies.
pub(crate) fn call_result(
    result: &Value,
    server: &str,
    raw_tool: &str,
    read_hint_server: Option<&str>,
    temp_dir: &Path,
) -> CallOutcome {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut converted = if blocks.is_empty() {
        // pi-mcp's `toLlmContent` of a result without content blocks.
        match result.get("structuredContent") {
            Some(structured) => vec![text_block(js_stringify_pretty(structured))],
            None => Vec::new(),
        }
    } else {
        convert_blocks(blocks, read_hint_server, temp_dir)
    };
    let is_error = result.get("isError").is_some_and(js_truthy);
    if is_error && joined_text(&converted).is_empty() {
        converted.push(text_block(format!(
            "MCP tool {server}/{raw_tool} returned an error"
        )));
    }
    let (content, full_output_path) = limit_output(converted, temp_dir);
    let mut details = json!({ "server": server, "tool": raw_tool });
    if let (Some(path), Some(d)) = (full_output_path, details.as_object_mut()) {
        d.insert("fullOutputPath".into(), Value::String(path));
    }
    // `{...result, content: []}` when content is missing, then without `_meta`.
    let mut structured: Map<String, Value> = result
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| k.as_str() != "_meta")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    if !structured.contains_key("content") {
        structured.insert("content".into(), Value::Array(Vec::new()));
    }
    CallOutcome {
        content,
        details,
        structured_content: Value::Object(structured),
        is_error,
    }
}

/// §7.2: MCP content blocks as model content blocks (`{"type":"text","text"}` /
/// `{"type":"image","data","mimeType"}`), one for each. `read_hint_server`: the server, when it
/// has resources (resource links then name `read_mcp_resource`). Binary resources other than
/// images are saved under `temp_dir`.
pub(crate) fn convert_blocks(
    blocks: &[Value],
    read_hint_server: Option<&str>,
    temp_dir: &Path,
) -> Vec<Value> {
    blocks
        .iter()
        .map(|block| block_to_content(block, read_hint_server, temp_dir))
        .collect()
}

/// §7.4: keeps the text of `content` within [`OUTPUT_MAX_BYTES`]. All text blocks joined with
/// `"\n"`; when that is longer, the content becomes one text block (start and end kept, the
/// middle cut out, as Codex does) followed by the image blocks, and the full text is saved to a
/// new temp file whose path is returned. Content within the limit is returned as it is.
pub(crate) fn limit_output(content: Vec<Value>, temp_dir: &Path) -> (Vec<Value>, Option<String>) {
    let combined = joined_text(&content);
    if combined.len() <= OUTPUT_MAX_BYTES {
        return (content, None);
    }
    let middle = truncate_middle(&combined, OUTPUT_MAX_BYTES);
    let (path, location) = match write_output_file(temp_dir, ".txt", combined.as_bytes()) {
        Ok(path) => {
            let line = format!("\n\n[Full output: {path} (read it with offset/limit)]");
            (Some(path), line)
        }
        Err(reason) => (
            None,
            format!("\n\n[Could not save the full output: {reason}]"),
        ),
    };
    // A final newline ends the last line instead of starting another.
    let lines = combined.split('\n').count() - usize::from(combined.ends_with('\n'));
    let tokens = combined.len().div_ceil(4);
    let text = format!(
        "Warning: truncated output (original token count: {tokens})\nTotal output lines: {lines}\n\n{middle}{location}"
    );
    let mut limited = vec![text_block(text)];
    limited.extend(
        content
            .into_iter()
            .filter(|b| block_type(b) == Some("image")),
    );
    (limited, path)
}

/// §5.2: the parameters of a tool with this `inputSchema`: `type` defaults to `"object"` (in its
/// place when present as `null`, else appended) and `properties` to `{}` (appended); every other
/// keyword is kept.
pub(crate) fn parameters_of(input_schema: &Value) -> Value {
    let mut schema = input_schema.as_object().cloned().unwrap_or_default();
    let ty = match schema.get("type") {
        None | Some(Value::Null) => Value::String("object".into()),
        Some(t) => t.clone(),
    };
    schema.insert("type".into(), ty);
    if !schema.contains_key("properties") {
        schema.insert("properties".into(), Value::Object(Map::new()));
    }
    Value::Object(schema)
}

/// §5.2: a listed tool's description: its `description` trimmed, else (when empty) its `title`
/// (or, when that is absent, `annotations.title`), else `MCP tool <tool> from server <server>`.
pub(crate) fn description_of(tool: &Value, server: &str) -> String {
    if let Some(d) = tool.get("description").and_then(Value::as_str) {
        let trimmed = d.trim_matches(is_js_whitespace);
        if !trimmed.is_empty() {
            return trimmed.to_string();
        }
    }
    let title = match tool.get("title") {
        Some(t) if !t.is_null() => Some(t),
        _ => tool.get("annotations").and_then(|a| a.get("title")),
    };
    match title {
        Some(t) if js_truthy(t) => js_template(Some(t)),
        _ => format!(
            "MCP tool {} from server {server}",
            js_template(tool.get("name"))
        ),
    }
}

/// §4.5: the text of a progress update: its `message`, else `Progress <progress>[/<total>]`.
pub(crate) fn progress_text(params: &Value) -> String {
    match params.get("message") {
        Some(m) if !m.is_null() => js_template(Some(m)),
        _ => {
            let total = params
                .get("total")
                .map(|t| format!("/{}", js_text(t)))
                .unwrap_or_default();
            let progress = params.get("progress").map_or("undefined".into(), js_text);
            format!("Progress {progress}{total}")
        }
    }
}

/// `${v}` of a present value, numbers as JavaScript prints them.
fn js_text(v: &Value) -> String {
    match v.as_f64() {
        Some(f) => js_number_string(f),
        None => js_template(Some(v)),
    }
}

fn text_block(text: String) -> Value {
    json!({ "type": "text", "text": text })
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// The text blocks' texts joined with `"\n"` (pi's `textOf`).
fn joined_text(content: &[Value]) -> String {
    content
        .iter()
        .filter(|b| block_type(b) == Some("text"))
        .map(|b| b.get("text").and_then(Value::as_str).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A string field (`""` when absent or not a string: a server sent a malformed block).
fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Model content of one block (pi's `blockToContent`).
fn block_to_content(block: &Value, read_hint_server: Option<&str>, temp_dir: &Path) -> Value {
    match block_type(block) {
        Some("resource_link") => text_block(resource_link_text(block, read_hint_server)),
        Some("resource") => {
            let empty = Map::new();
            let resource = block
                .get("resource")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let mime = resource.get("mimeType").and_then(Value::as_str);
            let is_image = mime.is_some_and(|m| m.starts_with("image/"));
            if resource.contains_key("blob") && !is_image {
                binary_resource(resource, mime, temp_dir)
            } else {
                llm_block(block)
            }
        }
        _ => llm_block(block),
    }
}

/// `[Resource <uri> "<title or name>"[ (<mimeType>, <size>)][: <description>][. Read it with
/// read_mcp_resource (server "<server>")]]`.
fn resource_link_text(block: &Value, read_hint_server: Option<&str>) -> String {
    let uri = js_template(block.get("uri"));
    let label = match block.get("title") {
        Some(t) if !t.is_null() => js_template(Some(t)),
        _ => js_template(block.get("name")),
    };
    let mut details = Vec::new();
    if let Some(m) = block.get("mimeType").filter(|m| js_truthy(m)) {
        details.push(js_template(Some(m)));
    }
    if let Some(size) = block.get("size").and_then(size_text) {
        details.push(size);
    }
    let details = if details.is_empty() {
        String::new()
    } else {
        format!(" ({})", details.join(", "))
    };
    let description = block
        .get("description")
        .filter(|d| js_truthy(d))
        .map(|d| format!(": {}", js_template(Some(d))))
        .unwrap_or_default();
    let read = read_hint_server
        .map(|s| format!(". Read it with {READ_RESOURCE_TOOL} (server \"{s}\")"))
        .unwrap_or_default();
    format!("[Resource {uri} \"{label}\"{details}{description}{read}]")
}

/// `formatSize` of a resource link's `size`: whole byte counts as the crate formats them, other
/// numbers as JavaScript would (`null` too: `null < 1024`); other values are left out.
fn size_text(size: &Value) -> Option<String> {
    if let Some(n) = size.as_u64() {
        return Some(format_size(usize::try_from(n).unwrap_or(usize::MAX)));
    }
    if size.is_null() {
        return Some("nullB".into());
    }
    let f = size.as_f64()?;
    Some(if f < 1024.0 {
        format!("{}B", js_number_string(f))
    } else if f < 1024.0 * 1024.0 {
        format!("{:.1}KB", f / 1024.0)
    } else {
        format!("{:.1}MB", f / (1024.0 * 1024.0))
    })
}

/// A `resource` block with a non-image `blob`: text for text-like types, else saved to a file.
fn binary_resource(resource: &Map<String, Value>, mime: Option<&str>, temp_dir: &Path) -> Value {
    let data = base64::decode(resource.get("blob").and_then(Value::as_str).unwrap_or(""));
    if mime.is_some_and(is_text_mime_type) {
        return text_block(String::from_utf8_lossy(&data).into_owned());
    }
    let uri = js_template(resource.get("uri"));
    let kind = format!(
        "{}, {}",
        mime.unwrap_or("unknown type"),
        format_size(data.len())
    );
    text_block(
        match write_output_file(temp_dir, &extension_of(&uri), &data) {
            Ok(path) => format!("[Binary resource {uri} ({kind}) saved to {path}]"),
            Err(reason) => format!("[Binary resource {uri} ({kind}) could not be saved: {reason}]"),
        },
    )
}

/// Blobs of these types are shown as text: `text/*`, `application/json`, `*+json`, `*+xml`
/// (parameters after `;` ignored, any case).
fn is_text_mime_type(mime: &str) -> bool {
    let ty = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim_matches(is_js_whitespace)
        .to_lowercase();
    ty.starts_with("text/")
        || ty == "application/json"
        || ty.ends_with("+json")
        || ty.ends_with("+xml")
}

/// The file extension for a saved resource: the one its URI's path ends in (`.` and 1–8 ASCII
/// letters or digits), else `.bin`. A URI with a scheme is cut to its path as WHATWG URL parsing
/// would (authority, query and fragment dropped); anything else is taken whole.
fn extension_of(uri: &str) -> String {
    let path = url_path(uri).unwrap_or(uri);
    let run = path
        .bytes()
        .rev()
        .take_while(u8::is_ascii_alphanumeric)
        .count();
    let dot = path.len() - run;
    if (1..=8).contains(&run) && dot > 0 && path.as_bytes()[dot - 1] == b'.' {
        path[dot - 1..].to_string()
    } else {
        ".bin".to_string()
    }
}

/// The path of `uri` when it parses as a URL with a scheme.
fn url_path(uri: &str) -> Option<&str> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    let mut chars = scheme.chars();
    if !chars.next()?.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let mut rest = &uri[colon + 1..];
    if let Some(after) = rest.strip_prefix("//") {
        rest = after.find(['/', '?', '#']).map_or("", |i| &after[i..]);
    }
    Some(rest.find(['?', '#']).map_or(rest, |i| &rest[..i]))
}

/// Model content of one block as pi-mcp's `toLlmContent` converts it.
fn llm_block(block: &Value) -> Value {
    match block_type(block) {
        Some("text") => text_block(str_field(block, "text").to_string()),
        Some("image") => {
            let mut image = Map::new();
            image.insert("type".into(), "image".into());
            for key in ["data", "mimeType"] {
                if let Some(v) = block.get(key) {
                    image.insert(key.into(), v.clone());
                }
            }
            Value::Object(image)
        }
        Some("audio") => text_block(format!(
            "[audio {} omitted]",
            js_template(block.get("mimeType"))
        )),
        Some("resource_link") => text_block(format!(
            "{}: {}",
            js_template(block.get("name")),
            js_template(block.get("uri"))
        )),
        Some("resource") => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            if resource.get("text").is_some() {
                return text_block(str_field(resource, "text").to_string());
            }
            let mime = resource.get("mimeType").and_then(Value::as_str);
            if let Some(mime) = mime.filter(|m| m.starts_with("image/")) {
                let mut image = Map::new();
                image.insert("type".into(), "image".into());
                if let Some(blob) = resource.get("blob") {
                    image.insert("data".into(), blob.clone());
                }
                image.insert("mimeType".into(), mime.into());
                return Value::Object(image);
            }
            text_block(format!(
                "[binary resource {} ({}) omitted]",
                js_template(resource.get("uri")),
                mime.unwrap_or("unknown type")
            ))
        }
        _ => text_block(format!(
            "[unsupported MCP content {}]",
            js_template(block.get("type"))
        )),
    }
}

/// `text` with its middle replaced by `…<n> chars truncated…` so that at most `max_bytes` (half
/// before, half after) remain; cuts only at character boundaries, `n` counts the removed
/// characters (code points).
fn truncate_middle(text: &str, max_bytes: usize) -> String {
    let mut head_end = max_bytes / 2;
    while head_end > 0 && !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len().saturating_sub(max_bytes - max_bytes / 2);
    while tail_start < text.len() && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let tail_start = tail_start.max(head_end);
    let removed = text[head_end..tail_start].chars().count();
    format!(
        "{}…{removed} chars truncated…{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// Writes `data` to a new file `<temp_dir>/pi-mcp-<16 random hex><extension>` (mode 0600, never
/// an existing path) and returns its path, or Node's error text.
fn write_output_file(temp_dir: &Path, extension: &str, data: &[u8]) -> Result<String, String> {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    // Bytes 6 and 8 of a v4 UUID carry its version and variant; the other fourteen are random.
    let hex: String = bytes[..6]
        .iter()
        .chain(&bytes[10..12])
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = temp_dir.join(format!("pi-mcp-{hex}{extension}"));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| node_error(&e, "open", Some(&path)))?;
    file.write_all(data)
        .map_err(|e| node_error(&e, "write", None))?;
    Ok(path.display().to_string())
}

#[cfg(test)]
mod tests;
