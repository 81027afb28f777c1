//! Line diffs for the edit tool's `details` (`tools.md` §5 step 8): the numbered display diff
//! (`diff`), the unified patch (`patch`) and the first changed line.
//!
//! The line diff is a port of the Myers variant of the `diff` npm package (jsdiff 8,
//! `diffLines`), including its tie-breaking, so that changes align exactly as in pi. Patches
//! follow jsdiff's `structuredPatch` / `formatPatch` with file headers only.

use std::rc::Rc;

/// One run of the line diff: unchanged, added or removed lines (each with its `\n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub value: String,
    pub added: bool,
    pub removed: bool,
    /// Number of lines (tokens) in the run.
    pub count: usize,
}

/// A replacement of `match_length` bytes at `match_index` of the base text by `new_text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    pub match_index: usize,
    pub match_length: usize,
    pub new_text: String,
}

/// The edit tool's `details`: `{"diff","patch","firstChangedLine"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditDiff {
    pub diff: String,
    pub patch: String,
    /// First changed line, numbered in the new text (1-based).
    pub first_changed_line: Option<usize>,
}

impl EditDiff {
    /// `{"diff":…,"patch":…,"firstChangedLine":…}` (the last key left out when there is none).
    pub fn to_value(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("diff".into(), self.diff.clone().into());
        m.insert("patch".into(), self.patch.clone().into());
        if let Some(n) = self.first_changed_line {
            m.insert("firstChangedLine".into(), n.into());
        }
        serde_json::Value::Object(m)
    }
}

/// Lines of `text` with their line breaks (`\n` or `\r\n`); a last line without one is kept.
fn tokenize(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A run of the edit script, linked to the run before it. Shared between candidate paths and
/// freed when no path refers to it any more (as jsdiff's objects are garbage-collected).
struct Component {
    count: usize,
    added: bool,
    removed: bool,
    prev: Option<Rc<Component>>,
}

impl Drop for Component {
    // Unlinks the chain iteratively: a long chain must not recurse once per run.
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(rc) = prev {
            match Rc::try_unwrap(rc) {
                Ok(mut c) => prev = c.prev.take(),
                Err(_) => break,
            }
        }
    }
}

#[derive(Clone)]
struct PathState {
    old_pos: isize,
    last: Option<Rc<Component>>,
}

/// jsdiff's `diffLines(old, new)`.
pub fn diff_lines(old: &str, new: &str) -> Vec<Change> {
    let old_tokens = tokenize(old);
    let new_tokens = tokenize(new);
    let runs = myers(&old_tokens, &new_tokens);
    let (mut o, mut n) = (0usize, 0usize);
    runs.into_iter()
        .map(|(count, added, removed)| {
            let value = if removed {
                let v = old_tokens[o..o + count].concat();
                o += count;
                v
            } else {
                let v = new_tokens[n..n + count].concat();
                n += count;
                if !added {
                    o += count;
                }
                v
            };
            Change {
                value,
                added,
                removed,
                count,
            }
        })
        .collect()
}

/// jsdiff's `Diff.diffWithOptionsObj` without options: runs of `(count, added, removed)`.
fn myers(old: &[&str], new: &[&str]) -> Vec<(usize, bool, bool)> {
    let old_len = old.len() as isize;
    let new_len = new.len() as isize;

    let extract_common = |base: &mut PathState, diagonal: isize| -> isize {
        let mut old_pos = base.old_pos;
        let mut new_pos = old_pos - diagonal;
        let mut common = 0;
        while new_pos + 1 < new_len
            && old_pos + 1 < old_len
            && old[(old_pos + 1) as usize] == new[(new_pos + 1) as usize]
        {
            new_pos += 1;
            old_pos += 1;
            common += 1;
        }
        if common > 0 {
            base.last = Some(Rc::new(Component {
                count: common,
                added: false,
                removed: false,
                prev: base.last.take(),
            }));
        }
        base.old_pos = old_pos;
        new_pos
    };
    let add_to_path = |path: &PathState, added: bool, removed: bool, inc: isize| {
        let component = match &path.last {
            Some(last) if last.added == added && last.removed == removed => Component {
                count: last.count + 1,
                added,
                removed,
                prev: last.prev.clone(),
            },
            _ => Component {
                count: 1,
                added,
                removed,
                prev: path.last.clone(),
            },
        };
        PathState {
            old_pos: path.old_pos + inc,
            last: Some(Rc::new(component)),
        }
    };

    let max_edit = old_len + new_len;
    let offset = max_edit + 2;
    let mut best: Vec<Option<PathState>> = vec![None; (2 * offset + 1) as usize];
    let idx = |d: isize| (d + offset) as usize;

    let mut first = PathState {
        old_pos: -1,
        last: None,
    };
    let new_pos = extract_common(&mut first, 0);
    if first.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return build(first.last.as_ref());
    }
    best[idx(0)] = Some(first);

    let mut min_diagonal = isize::MIN;
    let mut max_diagonal = isize::MAX;
    let mut edit_length: isize = 1;
    while edit_length <= max_edit {
        let mut diagonal = min_diagonal.max(-edit_length);
        let top = max_diagonal.min(edit_length);
        while diagonal <= top {
            let remove_path = best[idx(diagonal - 1)].take();
            let add_path = best[idx(diagonal + 1)].as_ref();
            let can_add = add_path.is_some_and(|p| {
                let np = p.old_pos - diagonal;
                0 <= np && np < new_len
            });
            let can_remove = remove_path
                .as_ref()
                .is_some_and(|p| p.old_pos + 1 < old_len);
            if !can_add && !can_remove {
                best[idx(diagonal)] = None;
                diagonal += 2;
                continue;
            }
            let remove_first = match (&remove_path, add_path) {
                (Some(r), Some(a)) => can_remove && !(can_add && r.old_pos < a.old_pos),
                _ => can_remove,
            };
            let chosen = if remove_first {
                remove_path.as_ref().map(|r| add_to_path(r, false, true, 1))
            } else {
                add_path.map(|a| add_to_path(a, true, false, 0))
            };
            drop(remove_path);
            let Some(mut base) = chosen else {
                diagonal += 2;
                continue;
            };
            let new_pos = extract_common(&mut base, diagonal);
            if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return build(base.last.as_ref());
            }
            let reached_old_end = base.old_pos + 1 >= old_len;
            best[idx(diagonal)] = Some(base);
            if reached_old_end {
                max_diagonal = max_diagonal.min(diagonal - 1);
            }
            if new_pos + 1 >= new_len {
                min_diagonal = min_diagonal.max(diagonal + 1);
            }
            diagonal += 2;
        }
        edit_length += 1;
    }
    // Not reached: an edit script of length old_len + new_len always exists.
    vec![]
}

fn build(last: Option<&Rc<Component>>) -> Vec<(usize, bool, bool)> {
    let mut out = Vec::new();
    let mut cur = last;
    while let Some(c) = cur {
        out.push((c.count, c.added, c.removed));
        cur = c.prev.as_ref();
    }
    out.reverse();
    out
}

/// `text.split("\n").length` without building the pieces.
fn count_lines(text: &str) -> usize {
    count_line_feeds(text.as_bytes()) + 1
}

fn count_line_feeds(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

struct Display {
    output: Vec<String>,
    first_changed_line: Option<usize>,
}

fn pad(n: usize, width: usize) -> String {
    format!("{n:>width$}")
}

/// pi's `formatDisplayDiff`: `+<n> line`, `-<n> line`, ` <n> line`, with `context` lines around
/// changes and ` <pad> ...` for skipped unchanged lines.
fn format_display_diff(
    parts: &[Change],
    old_start: usize,
    new_start: usize,
    width: usize,
    context: usize,
) -> Display {
    let mut output = Vec::new();
    let mut old_line = old_start;
    let mut new_line = new_start;
    let mut last_was_change = false;
    let mut first_changed_line = None;
    let skip = format!(" {} ...", " ".repeat(width));
    for (i, part) in parts.iter().enumerate() {
        let mut raw: Vec<&str> = part.value.split('\n').collect();
        if raw.last() == Some(&"") {
            raw.pop();
        }
        if part.added || part.removed {
            if first_changed_line.is_none() {
                first_changed_line = Some(new_line);
            }
            for line in raw {
                if part.added {
                    output.push(format!("+{} {line}", pad(new_line, width)));
                    new_line += 1;
                } else {
                    output.push(format!("-{} {line}", pad(old_line, width)));
                    old_line += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(|p| p.added || p.removed);
        let show = |lines: &[&str],
                    old_line: &mut usize,
                    new_line: &mut usize,
                    output: &mut Vec<String>| {
            for line in lines {
                output.push(format!(" {} {line}", pad(*old_line, width)));
                *old_line += 1;
                *new_line += 1;
            }
        };
        if last_was_change && next_is_change {
            if raw.len() <= context * 2 {
                show(&raw, &mut old_line, &mut new_line, &mut output);
            } else {
                let skipped = raw.len() - 2 * context;
                show(&raw[..context], &mut old_line, &mut new_line, &mut output);
                output.push(skip.clone());
                old_line += skipped;
                new_line += skipped;
                show(
                    &raw[raw.len() - context..],
                    &mut old_line,
                    &mut new_line,
                    &mut output,
                );
            }
        } else if last_was_change {
            let shown = raw.len().min(context);
            show(&raw[..shown], &mut old_line, &mut new_line, &mut output);
            let skipped = raw.len() - shown;
            if skipped > 0 {
                output.push(skip.clone());
                old_line += skipped;
                new_line += skipped;
            }
        } else if next_is_change {
            let skipped = raw.len().saturating_sub(context);
            if skipped > 0 {
                output.push(skip.clone());
                old_line += skipped;
                new_line += skipped;
            }
            show(&raw[skipped..], &mut old_line, &mut new_line, &mut output);
        } else {
            old_line += raw.len();
            new_line += raw.len();
        }
        last_was_change = false;
    }
    Display {
        output,
        first_changed_line,
    }
}

#[cfg(test)]
/// The display diff of two whole texts (pi's `generateDiffString`): `(diff, firstChangedLine)`.
pub fn generate_diff_string(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
    let width = count_lines(old).max(count_lines(new)).to_string().len();
    let shown = format_display_diff(&diff_lines(old, new), 1, 1, width, context);
    (shown.output.join("\n"), shown.first_changed_line)
}

/// One hunk of a unified patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub lines: Vec<String>,
}

/// Lines of a run with their `\n` (jsdiff's `splitLines`).
fn split_lines_keep(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.split('\n').map(|l| format!("{l}\n")).collect();
    if text.ends_with('\n') {
        lines.pop();
    } else if let Some(last) = lines.last_mut() {
        last.pop();
    }
    lines
}

/// jsdiff's `structuredPatch(...).hunks` for two texts.
pub fn structured_hunks(old: &str, new: &str, context: usize) -> Vec<Hunk> {
    let diff = diff_lines(old, new);
    let mut parts: Vec<(Vec<String>, bool, bool)> = diff
        .iter()
        .map(|c| (split_lines_keep(&c.value), c.added, c.removed))
        .collect();
    parts.push((Vec::new(), false, false));
    let mut hunks = Vec::new();
    let mut old_range_start = 0usize;
    let mut new_range_start = 0usize;
    let mut cur: Vec<String> = Vec::new();
    let mut old_line = 1usize;
    let mut new_line = 1usize;
    let total = parts.len();
    for i in 0..total {
        let (lines, added, removed) = &parts[i];
        if *added || *removed {
            if old_range_start == 0 {
                old_range_start = old_line;
                new_range_start = new_line;
                if i > 0 {
                    let prev = &parts[i - 1].0;
                    let from = prev.len().saturating_sub(context);
                    cur = if context > 0 {
                        prev[from..].iter().map(|l| format!(" {l}")).collect()
                    } else {
                        Vec::new()
                    };
                    old_range_start -= cur.len();
                    new_range_start -= cur.len();
                }
            }
            for line in lines {
                cur.push(format!("{}{line}", if *added { '+' } else { '-' }));
            }
            if *added {
                new_line += lines.len();
            } else {
                old_line += lines.len();
            }
        } else {
            if old_range_start != 0 {
                if lines.len() <= context * 2 && i + 2 < total {
                    cur.extend(lines.iter().map(|l| format!(" {l}")));
                } else {
                    let size = lines.len().min(context);
                    cur.extend(lines[..size].iter().map(|l| format!(" {l}")));
                    hunks.push(Hunk {
                        old_start: old_range_start,
                        old_lines: old_line - old_range_start + size,
                        new_start: new_range_start,
                        new_lines: new_line - new_range_start + size,
                        lines: std::mem::take(&mut cur),
                    });
                    old_range_start = 0;
                    new_range_start = 0;
                }
            }
            old_line += lines.len();
            new_line += lines.len();
        }
    }
    for hunk in &mut hunks {
        let mut fixed = Vec::with_capacity(hunk.lines.len());
        for line in hunk.lines.drain(..) {
            match line.strip_suffix('\n') {
                Some(l) => fixed.push(l.to_string()),
                None => {
                    fixed.push(line);
                    fixed.push("\\ No newline at end of file".to_string());
                }
            }
        }
        hunk.lines = fixed;
    }
    hunks
}

/// jsdiff's `formatPatch` with file headers only: `--- <path>`, `+++ <path>`, the hunks.
pub fn format_patch(path: &str, hunks: &[Hunk]) -> String {
    let mut out = vec![format!("--- {path}"), format!("+++ {path}")];
    for h in hunks {
        let old_start = if h.old_lines == 0 {
            h.old_start.saturating_sub(1)
        } else {
            h.old_start
        };
        let new_start = if h.new_lines == 0 {
            h.new_start.saturating_sub(1)
        } else {
            h.new_start
        };
        out.push(format!(
            "@@ -{old_start},{} +{new_start},{} @@",
            h.old_lines, h.new_lines
        ));
        out.extend(h.lines.iter().cloned());
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
/// A unified patch of two whole texts (pi's `generateUnifiedPatch`).
pub fn generate_unified_patch(path: &str, old: &str, new: &str, context: usize) -> String {
    format_patch(path, &structured_hunks(old, new, context))
}

/// Unchanged lines diffed on each side of a replacement.
const DIFF_WINDOW_MARGIN_LINES: usize = 32;

struct Window {
    old_start: usize,
    old_end: usize,
    old_line: usize,
    new_start: usize,
    new_end: usize,
    new_line: usize,
}

/// Start of the line containing byte `offset`.
fn line_start_before(b: &[u8], offset: usize) -> usize {
    if offset == 0 {
        return 0;
    }
    let upto = (offset - 1).min(b.len().saturating_sub(1));
    b[..=upto]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1)
}

fn index_of_lf(b: &[u8], from: usize) -> Option<usize> {
    b.get(from..)?
        .iter()
        .position(|&c| c == b'\n')
        .map(|p| p + from)
}

/// Whole-line windows with a margin around the (sorted, disjoint) replacements; windows that
/// touch merge.
fn diff_windows(base: &str, replacements: &[Replacement]) -> Vec<Window> {
    let b = base.as_bytes();
    let mut windows: Vec<Window> = Vec::new();
    let mut offset_delta: isize = 0;
    let mut line_delta: isize = 0;
    let mut cursor_offset = 0usize;
    let mut cursor_line = 0usize;
    for r in replacements {
        let match_end = r.match_index + r.match_length;
        let mut start = line_start_before(b, r.match_index);
        let mut i = 0;
        while i < DIFF_WINDOW_MARGIN_LINES && start > 0 {
            start = line_start_before(b, start - 1);
            i += 1;
        }
        let mut end = match_end;
        let mut i = 0;
        while i <= DIFF_WINDOW_MARGIN_LINES && end < b.len() {
            let from = if i == 0 {
                match_end.saturating_sub(1).max(r.match_index)
            } else {
                end
            };
            end = index_of_lf(b, from).map_or(b.len(), |p| p + 1);
            i += 1;
        }
        let rep_offset_delta = r.new_text.len() as isize - r.match_length as isize;
        let rep_line_delta = count_line_feeds(r.new_text.as_bytes()) as isize
            - count_line_feeds(&b[r.match_index..match_end.min(b.len())]) as isize;
        match windows.last_mut() {
            Some(prev) if start <= prev.old_end => {
                prev.old_end = prev.old_end.max(end);
                prev.new_end = (prev.old_end as isize + offset_delta + rep_offset_delta) as usize;
            }
            _ => {
                cursor_line += count_line_feeds(&b[cursor_offset..start]);
                cursor_offset = start;
                windows.push(Window {
                    old_start: start,
                    old_end: end,
                    old_line: cursor_line,
                    new_start: (start as isize + offset_delta) as usize,
                    new_end: (end as isize + offset_delta + rep_offset_delta) as usize,
                    new_line: (cursor_line as isize + line_delta) as usize,
                });
            }
        }
        offset_delta += rep_offset_delta;
        line_delta += rep_line_delta;
    }
    windows
}

/// pi's `generateEditDiff`: the display diff and unified patch of `base` → `new`, computed only
/// in windows around the replacements (sorted by position, disjoint) that turned one into the
/// other.
pub fn generate_edit_diff(
    path: &str,
    base: &str,
    new: &str,
    replacements: &[Replacement],
    context: usize,
) -> EditDiff {
    let width = count_lines(base).max(count_lines(new)).to_string().len();
    let skip = format!(" {} ...", " ".repeat(width));
    let mut output: Vec<String> = Vec::new();
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut first_changed_line = None;
    for w in diff_windows(base, replacements) {
        let old_text = base.get(w.old_start..w.old_end).unwrap_or("");
        let new_text = new.get(w.new_start..w.new_end).unwrap_or("");
        let parts = diff_lines(old_text, new_text);
        let mut shown = format_display_diff(&parts, w.old_line + 1, w.new_line + 1, width, context);
        if first_changed_line.is_none() {
            first_changed_line = shown.first_changed_line;
        }
        if output.last() == Some(&skip) && shown.output.first() == Some(&skip) {
            shown.output.remove(0);
        }
        output.extend(shown.output);
        for mut h in structured_hunks(old_text, new_text, context) {
            h.old_start += w.old_line;
            h.new_start += w.new_line;
            hunks.push(h);
        }
    }
    EditDiff {
        diff: output.join("\n"),
        patch: format_patch(path, &hunks),
        first_changed_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(base: &str, old: &str, new: &str) -> Replacement {
        Replacement {
            match_index: base.find(old).unwrap(),
            match_length: old.len(),
            new_text: new.to_string(),
        }
    }

    fn apply(base: &str, reps: &[Replacement]) -> String {
        let mut out = base.to_string();
        for r in reps.iter().rev() {
            out.replace_range(r.match_index..r.match_index + r.match_length, &r.new_text);
        }
        out
    }

    #[test]
    fn diff_lines_runs() {
        let d = diff_lines("a\nb\nc\n", "a\nB\nc\n");
        let shape: Vec<(&str, bool, bool)> = d
            .iter()
            .map(|c| (c.value.as_str(), c.added, c.removed))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("a\n", false, false),
                ("b\n", false, true),
                ("B\n", true, false),
                ("c\n", false, false)
            ]
        );
        assert_eq!(diff_lines("", ""), vec![]);
        let d = diff_lines("", "x");
        assert_eq!(d.len(), 1);
        assert!(d[0].added);
    }

    // The golden of file_tools: edit of notes.txt, "line two" -> "LINE TWO".
    #[test]
    fn golden_single_line_edit() {
        let base = "line one\nline two\nline three\n";
        let reps = [rep(base, "line two", "LINE TWO")];
        let d = generate_edit_diff("notes.txt", base, &apply(base, &reps), &reps, 4);
        assert_eq!(
            d.diff,
            " 1 line one\n-2 line two\n+2 LINE TWO\n 3 line three"
        );
        assert_eq!(
            d.patch,
            "--- notes.txt\n+++ notes.txt\n@@ -1,3 +1,3 @@\n line one\n-line two\n+LINE TWO\n line three\n"
        );
        assert_eq!(d.first_changed_line, Some(2));
        assert_eq!(
            serde_json::to_string(&d.to_value()).unwrap(),
            r#"{"diff":" 1 line one\n-2 line two\n+2 LINE TWO\n 3 line three","patch":"--- notes.txt\n+++ notes.txt\n@@ -1,3 +1,3 @@\n line one\n-line two\n+LINE TWO\n line three\n","firstChangedLine":2}"#
        );
    }

    // Observed from pi 1.6.0: no newline at the end of the file.
    #[test]
    fn no_newline_at_end_of_file() {
        let base = "one\ntwo\nthree\nfour";
        let reps = [rep(base, "two\nthree", "2\n3\n3b")];
        let d = generate_edit_diff("crlf.txt", base, &apply(base, &reps), &reps, 4);
        assert_eq!(
            d.diff,
            " 1 one\n-2 two\n-3 three\n+2 2\n+3 3\n+4 3b\n 4 four"
        );
        assert_eq!(
            d.patch,
            "--- crlf.txt\n+++ crlf.txt\n@@ -1,4 +1,5 @@\n one\n-two\n-three\n+2\n+3\n+3b\n four\n\\ No newline at end of file\n"
        );
        assert_eq!(d.first_changed_line, Some(2));
    }

    // Observed from pi 1.6.0: three edits in a 120-line file, with skipped ranges.
    #[test]
    fn several_windows_with_skips() {
        let base: String = (1..=120).map(|i| format!("line {i}\n")).collect();
        let reps = [
            rep(&base, "line 50\n", "L50\nnew\n"),
            rep(&base, "line 60", "L60"),
            rep(&base, "line 90\n", ""),
        ];
        let d = generate_edit_diff("big.txt", &base, &apply(&base, &reps), &reps, 4);
        assert_eq!(d.diff, "     ...\n  46 line 46\n  47 line 47\n  48 line 48\n  49 line 49\n- 50 line 50\n+ 50 L50\n+ 51 new\n  51 line 51\n  52 line 52\n  53 line 53\n  54 line 54\n     ...\n  56 line 56\n  57 line 57\n  58 line 58\n  59 line 59\n- 60 line 60\n+ 61 L60\n  61 line 61\n  62 line 62\n  63 line 63\n  64 line 64\n     ...\n  86 line 86\n  87 line 87\n  88 line 88\n  89 line 89\n- 90 line 90\n  91 line 91\n  92 line 92\n  93 line 93\n  94 line 94\n     ...");
        assert_eq!(d.patch, "--- big.txt\n+++ big.txt\n@@ -46,9 +46,10 @@\n line 46\n line 47\n line 48\n line 49\n-line 50\n+L50\n+new\n line 51\n line 52\n line 53\n line 54\n@@ -56,9 +57,9 @@\n line 56\n line 57\n line 58\n line 59\n-line 60\n+L60\n line 61\n line 62\n line 63\n line 64\n@@ -86,9 +87,8 @@\n line 86\n line 87\n line 88\n line 89\n-line 90\n line 91\n line 92\n line 93\n line 94\n");
        assert_eq!(d.first_changed_line, Some(50));
        // The windowed result equals the whole-file one here.
        let new = apply(&base, &reps);
        assert_eq!(
            generate_diff_string(&base, &new, 4),
            (d.diff.clone(), Some(50))
        );
        assert_eq!(generate_unified_patch("big.txt", &base, &new, 4), d.patch);
    }

    #[test]
    fn pure_insertion_and_deletion_hunk_starts() {
        assert_eq!(
            generate_unified_patch("f", "", "a\n", 4),
            "--- f\n+++ f\n@@ -0,0 +1,1 @@\n+a\n"
        );
        assert_eq!(
            generate_unified_patch("f", "a\nb\n", "a\n", 4),
            "--- f\n+++ f\n@@ -1,2 +1,1 @@\n a\n-b\n"
        );
        assert_eq!(
            generate_unified_patch("f", "a\n", "a\n", 4),
            "--- f\n+++ f\n"
        );
        assert_eq!(
            generate_unified_patch("f", "x\ny\nz", "x\nq\nz\n", 4),
            "--- f\n+++ f\n@@ -1,3 +1,3 @@\n x\n-y\n-z\n\\ No newline at end of file\n+q\n+z\n"
        );
    }

    // Alignments checked against jsdiff 8.0.4.
    #[test]
    fn alignment_matches_jsdiff() {
        let shape = |a: &str, b: &str| -> Vec<(String, bool, bool)> {
            diff_lines(a, b)
                .into_iter()
                .map(|c| (c.value, c.added, c.removed))
                .collect()
        };
        let s = |v: &str, a: bool, r: bool| (v.to_string(), a, r);
        assert_eq!(
            shape("a\nb\nc\nd\ne\n", "e\nd\nc\nb\na\n"),
            vec![
                s("a\nb\nc\nd\n", false, true),
                s("e\n", false, false),
                s("d\nc\nb\na\n", true, false)
            ]
        );
        assert_eq!(
            shape("a\nx\nb\nx\nc\n", "x\na\nb\nc\nx\n"),
            vec![
                s("a\n", false, true),
                s("x\n", false, false),
                s("a\n", true, false),
                s("b\n", false, false),
                s("x\n", false, true),
                s("c\n", false, false),
                s("x\n", true, false),
            ]
        );
    }

    #[test]
    fn large_insertion_in_small_file() {
        let base = "a\nb\nc\n";
        let inserted: String = (0..5000).map(|i| format!("new {i}\n")).collect();
        let reps = [rep(base, "b\n", &format!("b\n{inserted}"))];
        let new = apply(base, &reps);
        let d = generate_edit_diff("f", base, &new, &reps, 4);
        assert_eq!(d.first_changed_line, Some(3));
        assert!(d
            .patch
            .starts_with("--- f\n+++ f\n@@ -1,3 +1,5003 @@\n a\n b\n+new 0\n"));
        assert_eq!(d.diff.lines().count(), 3 + 5000);
    }
}
