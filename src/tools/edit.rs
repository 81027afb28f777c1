//! The `edit` tool (`tools.md` §5): exact-text replacements in one file, with a fuzzy fallback
//! (Unicode-normalized, trailing whitespace ignored), BOM and line-ending preservation, and a
//! display diff plus unified patch in `details`.

use std::io::Read;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::args::{check_cancelled, str_or_empty};
use super::diff::{generate_edit_diff, Replacement};
use super::path::{check_access, nfkc, resolve_to_cwd, Access};
use super::write::{with_file_lock, write_file};
use super::{Tool, ToolContext, ToolOutput};
use crate::js::fs_error::{node_error, node_error_code};
use crate::js::string::is_js_whitespace;

/// `edit`: `{path, edits: [{oldText, newText}, …]}`.
pub struct EditTool;

/// One requested replacement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

fn is_single_edit(v: &Value) -> bool {
    v.get("oldText").is_some_and(Value::is_string) && v.get("newText").is_some_and(Value::is_string)
}

/// The part of pi's `prepareEditArguments` that rewrites the tool call's own arguments object
/// (so the transcript shows it from `turn_end` on): `edits` given as a JSON string is parsed
/// (kept when it is neither an array nor a single edit); a single edit object becomes a
/// one-item array. The key keeps its place.
pub fn normalize_edits_in_place(args: &mut Value) {
    let Value::Object(obj) = args else {
        return;
    };
    let normalized = match obj.get("edits") {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(parsed) if parsed.is_array() => Some(parsed),
            Ok(parsed) if is_single_edit(&parsed) => Some(Value::Array(vec![parsed])),
            _ => None,
        },
        Some(e) if is_single_edit(e) => Some(Value::Array(vec![e.clone()])),
        _ => None,
    };
    if let Some(edits) = normalized {
        obj.insert("edits".into(), edits);
    }
}

/// pi's `prepareEditArguments`: [`normalize_edits_in_place`], then legacy top-level
/// `oldText`/`newText` are appended as an edit (in a new object, the tool call keeps them).
pub fn prepare_edit_arguments(mut args: Value) -> Value {
    normalize_edits_in_place(&mut args);
    let Value::Object(obj) = args else {
        return args;
    };
    let (Some(Value::String(old)), Some(Value::String(new))) =
        (obj.get("oldText"), obj.get("newText"))
    else {
        return Value::Object(obj);
    };
    let legacy = json!({"oldText": old, "newText": new});
    let mut edits = match obj.get("edits") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    edits.push(legacy);
    let mut rest: Map<String, Value> = obj;
    rest.shift_remove("oldText");
    rest.shift_remove("newText");
    rest.insert("edits".into(), Value::Array(edits));
    Value::Object(rest)
}

impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> String {
        "Change one file by replacing exact pieces of text. Each edits[].oldText has to occur \
         exactly once in the original file and must not overlap any other edit's oldText. When \
         two changes are close together or touch the same lines, combine them into a single edit \
         rather than sending overlapping ones, but do not pad an edit with long stretches of \
         unchanged text just to join distant changes."
            .to_string()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to change, relative to the working directory or absolute"
                },
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["oldText", "newText"],
                        "properties": {
                            "oldText": {
                                "type": "string",
                                "description": "Text to replace, copied exactly. It must appear only once in the original file and must not overlap the oldText of another edit in this call."
                            },
                            "newText": {
                                "type": "string",
                                "description": "Text to put in place of oldText."
                            }
                        }
                    },
                    "description": "The replacements to make, one or more. All of them are located in the original file (they are not applied one after another), so they must not overlap or nest; merge changes to the same or neighbouring lines into one edit."
                }
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("Replace exact text in a file (several separate replacements per call allowed)")
    }

    fn guidelines(&self) -> Vec<&'static str> {
        vec![
            "Make targeted changes with edit, and group all changes to one file into a single call.",
            "Every edits[].oldText must match the original file exactly and only once; keep each one short and apart from the others, and fold nearby changes together instead of spanning large unchanged blocks.",
        ]
    }

    fn prepare_arguments(&self, args: &mut Value) -> Value {
        normalize_edits_in_place(args);
        prepare_edit_arguments(args.clone())
    }

    fn rewrites_arguments(&self) -> bool {
        true
    }

    fn changes_files(&self) -> bool {
        true
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        let edits: Vec<Edit> = match args.get("edits") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|e| Edit {
                    old_text: str_or_empty(e, "oldText").to_string(),
                    new_text: str_or_empty(e, "newText").to_string(),
                })
                .collect(),
            _ => {
                return Err(
                    "Edit tool input is invalid. edits must contain at least one replacement."
                        .into(),
                )
            }
        };
        let path = str_or_empty(args, "path");
        let absolute = resolve_to_cwd(path, ctx.cwd);
        with_file_lock(&absolute, || edit_file(&absolute, path, &edits, ctx))
    }
}

fn edit_file(
    absolute: &Path,
    path: &str,
    edits: &[Edit],
    ctx: &ToolContext<'_>,
) -> Result<ToolOutput, String> {
    check_cancelled(ctx.cancel)?;
    if let Err(e) = check_access(absolute, Access::ReadWrite) {
        check_cancelled(ctx.cancel)?;
        return Err(format!(
            "Could not edit file: {path}. Error code: {}.",
            node_error_code(&e)
        ));
    }
    check_cancelled(ctx.cancel)?;
    let mut file =
        std::fs::File::open(absolute).map_err(|e| node_error(&e, "open", Some(absolute)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| node_error(&e, "read", None))?;
    let raw = String::from_utf8_lossy(&bytes);
    check_cancelled(ctx.cancel)?;
    let (bom, content) = split_bom(&raw);
    let normalized = normalize_to_lf(content);
    let applied = apply_edits_to_normalized_content(&normalized, edits, path)?;
    let diff = generate_edit_diff(
        path,
        &normalized,
        &applied.new_content,
        &applied.replacements,
        4,
    );
    check_cancelled(ctx.cancel)?;
    let body = if content == normalized {
        applied.new_content
    } else {
        apply_replacements_to_original(content, &applied.replacements)
    };
    write_file(absolute, format!("{bom}{body}").as_bytes())?;
    check_cancelled(ctx.cancel)?;
    Ok(ToolOutput {
        content: vec![json!({
            "type": "text",
            "text": format!("Successfully replaced {} block(s) in {path}.", edits.len()),
        })],
        details: Some(diff.to_value()),
        structured_content: None,
        is_error: false,
        terminate: false,
    })
}

/// Splits a leading U+FEFF off: `(bom, rest)`.
pub fn split_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    }
}

/// `\r\n` and lone `\r` become `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The text fuzzy matching compares: NFKC (the subset of [`nfkc`]), trailing whitespace of
/// every line removed, curly quotes as ASCII quotes, Unicode dashes as `-`, special spaces as
/// ASCII spaces.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let composed = nfkc(text);
    let trimmed: Vec<&str> = composed
        .split('\n')
        .map(|l| l.trim_end_matches(is_js_whitespace))
        .collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => '\'',
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{a0}' | '\u{2002}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

struct Found {
    index: usize,
    length: usize,
    fuzzy: bool,
}

/// Exact `indexOf`, else the position in the fuzzy-normalized content (offsets in that space).
fn fuzzy_find_text(content: &str, old: &str) -> Option<Found> {
    if let Some(index) = content.find(old) {
        return Some(Found {
            index,
            length: old.len(),
            fuzzy: false,
        });
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old);
    fuzzy_content.find(&fuzzy_old).map(|index| Found {
        index,
        length: fuzzy_old.len(),
        fuzzy: true,
    })
}

/// `normalize(content).split(normalize(old)).length - 1`.
fn count_occurrences(content: &str, old: &str) -> isize {
    let c = normalize_for_fuzzy_match(content);
    let o = normalize_for_fuzzy_match(old);
    if o.is_empty() {
        // `split("")` yields one piece per UTF-16 code unit.
        return crate::js::utf16::len(&c) as isize - 1;
    }
    c.matches(o.as_str()).count() as isize
}

/// The edits applied to LF-normalized content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub new_content: String,
    /// Sorted by position, in the coordinates of the normalized content.
    pub replacements: Vec<Replacement>,
}

/// Matches every edit against the same (LF-normalized) original and applies them. If any edit
/// needs fuzzy matching, all are matched in fuzzy-normalized space and the replacements are
/// widened to whole lines so untouched lines keep their original text. Errors are pi's texts.
pub fn apply_edits_to_normalized_content(
    normalized: &str,
    edits: &[Edit],
    path: &str,
) -> Result<Applied, String> {
    let total = edits.len();
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit {
            old_text: normalize_to_lf(&e.old_text),
            new_text: normalize_to_lf(&e.new_text),
        })
        .collect();
    for (i, e) in edits.iter().enumerate() {
        if e.old_text.is_empty() {
            return Err(if total == 1 {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{i}].oldText must not be empty in {path}.")
            });
        }
    }
    let used_fuzzy = edits
        .iter()
        .any(|e| fuzzy_find_text(normalized, &e.old_text).is_some_and(|f| f.fuzzy));
    let base = if used_fuzzy {
        normalize_for_fuzzy_match(normalized)
    } else {
        normalized.to_string()
    };
    struct Matched {
        edit_index: usize,
        rep: Replacement,
    }
    let mut matched = Vec::with_capacity(total);
    for (i, e) in edits.iter().enumerate() {
        let Some(found) = fuzzy_find_text(&base, &e.old_text) else {
            return Err(if total == 1 {
                format!(
                    "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                )
            } else {
                format!(
                    "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
                )
            });
        };
        let occurrences = count_occurrences(&base, &e.old_text);
        if occurrences > 1 {
            return Err(if total == 1 {
                format!(
                    "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
                )
            } else {
                format!(
                    "Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
                )
            });
        }
        matched.push(Matched {
            edit_index: i,
            rep: Replacement {
                match_index: found.index,
                match_length: found.length,
                new_text: e.new_text.clone(),
            },
        });
    }
    matched.sort_by_key(|m| m.rep.match_index);
    for pair in matched.windows(2) {
        let (prev, cur) = (&pair[0], &pair[1]);
        if prev.rep.match_index + prev.rep.match_length > cur.rep.match_index {
            return Err(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                prev.edit_index, cur.edit_index
            ));
        }
    }
    let reps: Vec<Replacement> = matched.into_iter().map(|m| m.rep).collect();
    let replacements = if used_fuzzy {
        widen_replacements_to_lines(normalized, &base, &reps)?
    } else {
        reps
    };
    let new_content = apply_replacements(normalized, &replacements, 0);
    if new_content == normalized {
        return Err(if total == 1 {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok(Applied {
        new_content,
        replacements,
    })
}

/// Applies sorted, disjoint replacements whose positions are relative to `offset`.
fn apply_replacements(content: &str, replacements: &[Replacement], offset: usize) -> String {
    let mut out = content.to_string();
    for r in replacements.iter().rev() {
        let start = r.match_index - offset;
        out.replace_range(start..start + r.match_length, &r.new_text);
    }
    out
}

/// Byte spans of the lines with their `\n` (a last line without one included; none for "").
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        spans.push((start, start + piece.len()));
        start += piece.len();
    }
    spans
}

const OUTSIDE: &str = "Replacement range is outside the base content.";

/// Widens replacements matched in `base` (a line-for-line normalized view of `original`) to the
/// whole lines they touch, rewritten from `base`; all other lines keep the original text.
fn widen_replacements_to_lines(
    original: &str,
    base: &str,
    replacements: &[Replacement],
) -> Result<Vec<Replacement>, String> {
    let original_lines = line_spans(original);
    let base_lines = line_spans(base);
    if original_lines.len() != base_lines.len() {
        return Err(
            "Cannot preserve unchanged lines because the base content has a different line count."
                .into(),
        );
    }
    struct Group {
        start: usize,
        end: usize,
        reps: Vec<Replacement>,
    }
    let mut sorted = replacements.to_vec();
    sorted.sort_by_key(|r| r.match_index);
    let mut groups: Vec<Group> = Vec::new();
    for r in sorted {
        let start_line = base_lines
            .iter()
            .position(|&(s, e)| r.match_index >= s && r.match_index < e)
            .ok_or(OUTSIDE)?;
        let match_end = r.match_index + r.match_length;
        let mut end_line = start_line;
        while end_line < base_lines.len() && base_lines[end_line].1 < match_end {
            end_line += 1;
        }
        if end_line >= base_lines.len() {
            return Err(OUTSIDE.into());
        }
        let end_line = end_line + 1;
        match groups.last_mut() {
            Some(g) if start_line < g.end => {
                g.end = g.end.max(end_line);
                g.reps.push(r);
            }
            _ => groups.push(Group {
                start: start_line,
                end: end_line,
                reps: vec![r],
            }),
        }
    }
    Ok(groups
        .into_iter()
        .map(|g| {
            let group_start = base_lines[g.start].0;
            let group_end = base_lines[g.end - 1].1;
            let original_start = original_lines[g.start].0;
            Replacement {
                match_index: original_start,
                match_length: original_lines[g.end - 1].1 - original_start,
                new_text: apply_replacements(&base[group_start..group_end], &g.reps, group_start),
            }
        })
        .collect())
}

/// Line ending of the line containing `offset`: its own `\n` / `\r\n`, or that of the line
/// before for an unterminated last line; `\r` only in files without any `\n`.
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let b = content.as_bytes();
    let lf = b
        .get(offset..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\n'))
        .map(|p| p + offset)
        .or_else(|| {
            let upto = offset.min(b.len().saturating_sub(1));
            b.get(..=upto)
                .and_then(|head| head.iter().rposition(|&c| c == b'\n'))
        });
    match lf {
        None if content.contains('\r') => "\r",
        None => "\n",
        Some(p) if p > 0 && b[p - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

/// Applies replacements matched in `normalize_to_lf(original)` to `original` itself: text
/// outside the replaced ranges keeps its bytes (and line endings); line breaks in the new text
/// get the line ending of the line where the replaced range starts.
pub fn apply_replacements_to_original(original: &str, replacements: &[Replacement]) -> String {
    let b = original.as_bytes();
    let find_crlf = |from: usize| -> Option<usize> {
        b.get(from..)?
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| p + from)
    };
    let mut crlf_before = 0usize;
    let mut next_crlf = find_crlf(0);
    let mut to_original = |offset: usize| -> usize {
        while let Some(p) = next_crlf {
            if p - crlf_before >= offset {
                break;
            }
            crlf_before += 1;
            next_crlf = find_crlf(p + 2);
        }
        offset + crlf_before
    };
    let mut out = String::with_capacity(original.len());
    let mut ends_with_cr = false;
    let mut push = |part: &str, out: &mut String| {
        if part.is_empty() {
            return;
        }
        // A CR before a seam and an LF after it would merge into one CRLF.
        if ends_with_cr && part.starts_with('\n') {
            out.push('\n');
        }
        out.push_str(part);
        ends_with_cr = part.ends_with('\r');
    };
    let mut position = 0usize;
    for r in replacements {
        let start = to_original(r.match_index);
        push(&original[position..start], &mut out);
        let ending = line_ending_at(original, start);
        if ending == "\n" {
            push(&r.new_text, &mut out);
        } else {
            push(&r.new_text.replace('\n', ending), &mut out);
        }
        position = to_original(r.match_index + r.match_length);
    }
    push(&original[position..], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;
    use crate::tools::args::test_support::{schema_without_descriptions, temp_dir, tool_context};

    fn run(dir: &Path, args: Value) -> Result<ToolOutput, String> {
        let cancel = CancelToken::new();
        let ctx = tool_context(dir, &cancel, true, "m");
        let mut args = args;
        let prepared = EditTool.prepare_arguments(&mut args);
        EditTool.execute(&prepared, &ctx, &mut |_| {})
    }

    fn e(old: &str, new: &str) -> Value {
        json!({"oldText": old, "newText": new})
    }

    // The golden of file_tools.
    #[test]
    fn golden_edit_result() {
        let dir = temp_dir("golden");
        std::fs::write(dir.join("notes.txt"), "line one\nline two\nline three\n").unwrap();
        let out = run(
            &dir,
            json!({"path":"notes.txt","edits":[e("line two","LINE TWO")]}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&json!({"content": out.content, "details": out.details}))
                .unwrap(),
            r#"{"content":[{"type":"text","text":"Successfully replaced 1 block(s) in notes.txt."}],"details":{"diff":" 1 line one\n-2 line two\n+2 LINE TWO\n 3 line three","patch":"--- notes.txt\n+++ notes.txt\n@@ -1,3 +1,3 @@\n line one\n-line two\n+LINE TWO\n line three\n","firstChangedLine":2}}"#
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
            "line one\nLINE TWO\nline three\n"
        );
        assert_eq!(
            run(&dir, json!({"path":"notes.txt","edits":[e("does not exist","x")]})).unwrap_err(),
            "Could not find the exact text in notes.txt. The old text must match exactly including all whitespace and newlines."
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // Error texts observed from pi 1.6.0 on "a\na\nx\nz\n".
    #[test]
    fn error_texts() {
        let dir = temp_dir("errors");
        std::fs::write(dir.join("dup.txt"), "a\na\nx\nz\n").unwrap();
        let err = |edits: Value| run(&dir, json!({"path":"dup.txt","edits":edits})).unwrap_err();
        assert_eq!(err(json!([e("a","b")])), "Found 2 occurrences of the text in dup.txt. The text must be unique. Please provide more context to make it unique.");
        assert_eq!(err(json!([e("x","y"), e("a\n","b")])), "Found 2 occurrences of edits[1] in dup.txt. Each oldText must be unique. Please provide more context to make it unique.");
        assert_eq!(err(json!([e("x","y"), e("x\nz","b")])), "edits[0] and edits[1] overlap in dup.txt. Merge them into one edit or target disjoint regions.");
        assert_eq!(
            err(json!([e("", "y")])),
            "oldText must not be empty in dup.txt."
        );
        assert_eq!(
            err(json!([e("x", "y"), e("", "z")])),
            "edits[1].oldText must not be empty in dup.txt."
        );
        assert_eq!(err(json!([e("x","x")])), "No changes made to dup.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.");
        assert_eq!(
            err(json!([e("x", "x"), e("z", "z")])),
            "No changes made to dup.txt. The replacements produced identical content."
        );
        assert_eq!(err(json!([e("x","y"), e("q","z")])), "Could not find edits[1] in dup.txt. The oldText must match exactly including all whitespace and newlines.");
        assert_eq!(
            err(json!([])),
            "Edit tool input is invalid. edits must contain at least one replacement."
        );
        assert_eq!(
            run(&dir, json!({"path":"nofile.txt","edits":[e("x","y")]})).unwrap_err(),
            "Could not edit file: nofile.txt. Error code: ENOENT."
        );
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        assert_eq!(
            run(&dir, json!({"path":"sub","edits":[e("x","y")]})).unwrap_err(),
            "EISDIR: illegal operation on a directory, read"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("dup.txt")).unwrap(),
            "a\na\nx\nz\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn argument_preparation() {
        assert_eq!(
            prepare_edit_arguments(
                json!({"path":"p","edits":"[{\"oldText\":\"a\",\"newText\":\"b\"}]"})
            ),
            json!({"path":"p","edits":[e("a","b")]})
        );
        assert_eq!(
            prepare_edit_arguments(
                json!({"path":"p","edits":"{\"oldText\":\"a\",\"newText\":\"b\"}"})
            ),
            json!({"path":"p","edits":[e("a","b")]})
        );
        assert_eq!(
            prepare_edit_arguments(json!({"path":"p","edits":"not json"})),
            json!({"path":"p","edits":"not json"})
        );
        assert_eq!(
            prepare_edit_arguments(json!({"path":"p","edits":e("a","b")})),
            json!({"path":"p","edits":[e("a","b")]})
        );
        let legacy = prepare_edit_arguments(json!({"oldText":"a","path":"p","newText":"b"}));
        assert_eq!(
            serde_json::to_string(&legacy).unwrap(),
            r#"{"path":"p","edits":[{"oldText":"a","newText":"b"}]}"#
        );
        let both = prepare_edit_arguments(
            json!({"edits":[e("x","y")],"path":"p","oldText":"a","newText":"b"}),
        );
        assert_eq!(
            serde_json::to_string(&both).unwrap(),
            r#"{"edits":[{"oldText":"x","newText":"y"},{"oldText":"a","newText":"b"}],"path":"p"}"#
        );
        assert_eq!(prepare_edit_arguments(json!([1])), json!([1]));
    }

    /// pi rewrites `edits` in the tool call itself (string / single object → array) but builds a
    /// new object for legacy `oldText`/`newText`, which the tool call keeps.
    #[test]
    fn in_place_part_of_argument_preparation() {
        let mut args = json!({"path":"p","edits":"[{\"oldText\":\"a\",\"newText\":\"b\"}]","x":1});
        let prepared = EditTool.prepare_arguments(&mut args);
        assert_eq!(
            serde_json::to_string(&args).unwrap(),
            r#"{"path":"p","edits":[{"oldText":"a","newText":"b"}],"x":1}"#
        );
        assert_eq!(prepared, args);
        let mut args = json!({"path":"p","edits":e("a","b"),"oldText":"c","newText":"d"});
        let prepared = EditTool.prepare_arguments(&mut args);
        assert_eq!(
            args,
            json!({"path":"p","edits":[e("a","b")],"oldText":"c","newText":"d"})
        );
        assert_eq!(
            prepared,
            json!({"path":"p","edits":[e("a","b"), e("c","d")]})
        );
        let mut args = json!({"path":"p","edits":"{\"oldText\":1}"});
        EditTool.prepare_arguments(&mut args);
        assert_eq!(args, json!({"path":"p","edits":"{\"oldText\":1}"}));
    }

    // Observed from pi 1.6.0: CRLF file, BOM file, single object and JSON-string edits.
    #[test]
    fn crlf_and_bom_preserved() {
        let dir = temp_dir("crlf");
        std::fs::write(dir.join("crlf.txt"), "one\r\ntwo\r\nthree\r\nfour").unwrap();
        let out = run(
            &dir,
            json!({"path":"crlf.txt","edits":[e("two\nthree","2\n3\n3b")]}),
        )
        .unwrap();
        assert_eq!(
            std::fs::read(dir.join("crlf.txt")).unwrap(),
            b"one\r\n2\r\n3\r\n3b\r\nfour"
        );
        assert_eq!(out.details.unwrap()["firstChangedLine"], 2);

        std::fs::write(dir.join("bom.txt"), "\u{feff}hello\nworld\n").unwrap();
        let out = run(&dir, json!({"path":"bom.txt","edits":[e("hello","bye")]})).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("bom.txt")).unwrap(),
            "\u{feff}bye\nworld\n"
        );
        assert_eq!(
            out.details.unwrap(),
            json!({"diff":"-1 hello\n+1 bye\n 2 world","patch":"--- bom.txt\n+++ bom.txt\n@@ -1,2 +1,2 @@\n-hello\n+bye\n world\n","firstChangedLine":1})
        );

        std::fs::write(dir.join("dup.txt"), "a\na\nx\nz\n").unwrap();
        run(&dir, json!({"path":"dup.txt","edits":e("z","Z")})).unwrap();
        run(
            &dir,
            json!({"path":"dup.txt","edits":"[{\"oldText\":\"Z\",\"newText\":\"zz\"}]"}),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("dup.txt")).unwrap(),
            "a\na\nx\nzz\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // Observed from pi 1.6.0: curly quotes and trailing spaces matched fuzzily; the touched
    // lines are rewritten, the others keep their bytes.
    #[test]
    fn fuzzy_match_rewrites_touched_lines_only() {
        let dir = temp_dir("fuzzy");
        let original = "a \u{2019}x\u{2019}  \nit\u{2019}s a \u{201c}quote\u{201d}   \nnext\nend\n";
        std::fs::write(dir.join("fuzzy.txt"), original).unwrap();
        let out = run(
            &dir,
            json!({"path":"fuzzy.txt","edits":[e("it's a \u{201c}quote\u{201d}\nnext","changed it's\nnext2")]}),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("fuzzy.txt")).unwrap(),
            "a \u{2019}x\u{2019}  \nchanged it's\nnext2\nend\n"
        );
        let details = out.details.unwrap();
        assert_eq!(
            details["diff"],
            " 1 a \u{2019}x\u{2019}  \n-2 it\u{2019}s a \u{201c}quote\u{201d}   \n-3 next\n+2 changed it's\n+3 next2\n 4 end"
        );
        assert_eq!(details["firstChangedLine"], 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fuzzy_normalization_classes() {
        assert_eq!(
            normalize_for_fuzzy_match(
                "\u{2018}a\u{2019} \u{201c}b\u{201d} c\u{2013}d\u{2212}e\u{a0}f \t\n\u{fb01}x  "
            ),
            "'a' \"b\" c-d-e f\nfix"
        );
        // Exact matches win over fuzzy ones, but occurrences are counted on normalized text.
        let err = apply_edits_to_normalized_content(
            "a \nb\na\nb\n",
            &[Edit {
                old_text: "a\nb".into(),
                new_text: "x".into(),
            }],
            "f",
        )
        .unwrap_err();
        assert!(err.starts_with("Found 2 occurrences"));
    }

    #[test]
    fn replacements_mapped_back_onto_crlf_and_cr_text() {
        let original = "a\r\nb\r\nc";
        let normalized = normalize_to_lf(original);
        let applied = apply_edits_to_normalized_content(
            &normalized,
            &[Edit {
                old_text: "b\nc".into(),
                new_text: "B\nC\nD".into(),
            }],
            "f",
        )
        .unwrap();
        assert_eq!(
            apply_replacements_to_original(original, &applied.replacements),
            "a\r\nB\r\nC\r\nD"
        );
        let mac = "x\ry\rz";
        let applied = apply_edits_to_normalized_content(
            &normalize_to_lf(mac),
            &[Edit {
                old_text: "y".into(),
                new_text: "1\n2".into(),
            }],
            "f",
        )
        .unwrap();
        assert_eq!(
            apply_replacements_to_original(mac, &applied.replacements),
            "x\r1\r2\rz"
        );
    }

    #[test]
    fn serialized_edits_on_one_file() {
        let dir = temp_dir("parallel");
        let path = dir.join("n.txt");
        let body: String = (0..8).map(|i| format!("item {i}\n")).collect();
        std::fs::write(&path, &body).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    run(&dir, json!({"path":"n.txt","edits":[e(&format!("item {i}\n"), &format!("done {i}\n"))]}))
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let expected: String = (0..8).map(|i| format!("done {i}\n")).collect();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn schema_shape_and_key_order() {
        let schema = EditTool.parameters();
        assert_eq!(
            serde_json::to_string(&schema_without_descriptions(&schema)).unwrap(),
            r#"{"type":"object","required":["path","edits"],"properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{"oldText":{"type":"string"},"newText":{"type":"string"}}}}}}"#
        );
        let keys: Vec<&String> = schema["properties"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|p| p.as_object().unwrap().keys())
            .collect();
        assert!(keys.iter().any(|k| k.as_str() == "description"));
    }

    // Observed from pi 1.6.0 (second probe).
    #[test]
    fn nfkc_and_empty_fuzzy_needle_cases() {
        let dir = temp_dir("nfkc");
        std::fs::write(dir.join("lig.txt"), "null\nthe \u{fb01}ne print  \nend\n").unwrap();
        let out = run(
            &dir,
            json!({"path":"lig.txt","edits":[e("the fine print","the small print")]}),
        )
        .unwrap();
        assert_eq!(
            out.details.unwrap(),
            json!({"diff":" 1 null\n-2 the \u{fb01}ne print  \n+2 the small print\n 3 end","patch":"--- lig.txt\n+++ lig.txt\n@@ -1,3 +1,3 @@\n null\n-the \u{fb01}ne print  \n+the small print\n end\n","firstChangedLine":2})
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("lig.txt")).unwrap(),
            "null\nthe small print\nend\n"
        );

        std::fs::write(dir.join("cafe.txt"), "x\ncaf\u{e9} au lait\ny\n").unwrap();
        let out = run(
            &dir,
            json!({"path":"cafe.txt","edits":[e("cafe\u{301} au lait","tea")]}),
        )
        .unwrap();
        assert_eq!(
            out.details.unwrap()["diff"],
            " 1 x\n-2 caf\u{e9} au lait\n+2 tea\n 3 y"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("cafe.txt")).unwrap(),
            "x\ntea\ny\n"
        );

        std::fs::write(dir.join("sp.txt"), "a b\nc\n").unwrap();
        assert_eq!(
            run(&dir, json!({"path":"sp.txt","edits":[e("   ","x")]})).unwrap_err(),
            "Found 5 occurrences of the text in sp.txt. The text must be unique. Please provide more context to make it unique."
        );

        std::fs::write(
            dir.join("mixed.txt"),
            "alpha\r\nbeta \u{2014} x\r\ngamma\r\ndelta\r\n",
        )
        .unwrap();
        let out = run(
            &dir,
            json!({"path":"mixed.txt","edits":[e("beta \u{2014} x","BETA\nB2"), e("delta","DELTA")]}),
        )
        .unwrap();
        assert_eq!(
            out.content[0]["text"],
            "Successfully replaced 2 block(s) in mixed.txt."
        );
        assert_eq!(
            out.details.unwrap(),
            json!({"diff":" 1 alpha\n-2 beta \u{2014} x\n+2 BETA\n+3 B2\n 3 gamma\n-4 delta\n+5 DELTA","patch":"--- mixed.txt\n+++ mixed.txt\n@@ -1,4 +1,5 @@\n alpha\n-beta \u{2014} x\n+BETA\n+B2\n gamma\n-delta\n+DELTA\n","firstChangedLine":2})
        );
        assert_eq!(
            std::fs::read(dir.join("mixed.txt")).unwrap(),
            b"alpha\r\nBETA\r\nB2\r\ngamma\r\nDELTA\r\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
