//! The `grep` tool (tools.md §7): searches file contents line by line as pi's ripgrep call
//! (`rg --hidden [--ignore-case] [--fixed-strings] [--glob G] [--context N]`) does, without
//! needing `rg` installed: the same regex engine, the same gitignore-aware walker (`.gitignore`
//! inside git repositories, `.ignore`, `.rgignore`), hidden files included, binary files found
//! by the walk skipped. Output lines are `path:line: text` for matches and `path-line- text` for
//! context, each cut to 500 characters.

use std::path::{Path, PathBuf};

use ignore::overrides::OverrideBuilder;
use ignore::WalkBuilder;
use regex::bytes::{Regex, RegexBuilder};
use serde_json::{json, Value};

use super::args::{
    check_cancelled, flag, limit_arg, non_empty_str, required_str, search_dir, Notices, ABORTED,
};
use super::find::relative_slash;
use super::path::resolve_to_cwd;
use super::{Tool, ToolContext, ToolOutput};
use crate::truncate::{truncate_head, truncate_line, DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH};

const DEFAULT_LIMIT: f64 = 100.0;

pub struct GrepTool;

impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> String {
        format!(
            "Search the contents of files for a regular expression or a literal string, \
             honouring .gitignore. Each matching line comes back with its file path and line \
             number. At most {} matches or {}KB are returned, and lines longer than {} characters \
             are shortened.",
            DEFAULT_LIMIT,
            DEFAULT_MAX_BYTES / 1024,
            GREP_MAX_LINE_LENGTH
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {"type": "string", "description": "What to look for: a regular expression, or plain text with literal=true"},
                "path": {"type": "string", "description": "A directory or a single file to search (the current directory by default)"},
                "glob": {"type": "string", "description": "Only search files matching this glob, relative to path (such as 'src/**/*.rs'); without '/' (such as '*.rs') it matches names at any depth"},
                "ignoreCase": {"type": "boolean", "description": "Ignore letter case (false by default)"},
                "literal": {"type": "boolean", "description": "Take the pattern as plain text rather than a regular expression (false by default)"},
                "context": {"type": "number", "description": "Lines of context to show before and after each match (0 by default)"},
                "limit": {"type": "number", "description": "How many matches to return at most (100 by default)"}
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("Search file contents for a pattern (honours .gitignore)")
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        check_cancelled(ctx.cancel)?;
        let pattern = required_str(args, "pattern")?;
        let context = args
            .get("context")
            .and_then(Value::as_f64)
            .filter(|c| *c > 0.0)
            .map(|c| c.floor().min(u32::MAX as f64) as usize)
            .unwrap_or(0);
        let opts = GrepOptions {
            pattern,
            search_path: resolve_to_cwd(search_dir(args), ctx.cwd),
            glob: non_empty_str(args, "glob"),
            ignore_case: flag(args, "ignoreCase"),
            literal: flag(args, "literal"),
            context,
            limit: limit_arg(args, DEFAULT_LIMIT),
        };
        grep(&opts, &|| ctx.cancel.is_cancelled())
    }
}

struct GrepOptions<'a> {
    pattern: &'a str,
    search_path: PathBuf,
    glob: Option<&'a str>,
    ignore_case: bool,
    literal: bool,
    context: usize,
    limit: usize,
}

/// One line ripgrep would report: a match, or context around one.
#[derive(Debug, PartialEq)]
struct LineEvent<'a> {
    line_number: usize,
    text: &'a [u8],
    is_match: bool,
}

/// The match and context lines of one file's contents, in order (rg's `--json` events).
fn file_events<'a>(data: &'a [u8], re: &Regex, context: usize) -> Vec<LineEvent<'a>> {
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.ends_with(b"\n") || data.is_empty() {
        lines.pop();
    }
    let matches: Vec<bool> = lines.iter().map(|l| re.is_match(l)).collect();
    let mut show = vec![false; lines.len()];
    for (i, m) in matches.iter().enumerate() {
        if *m {
            let lo = i.saturating_sub(context);
            let hi = (i + context).min(lines.len().saturating_sub(1));
            for s in show.iter_mut().take(hi + 1).skip(lo) {
                *s = true;
            }
        }
    }
    lines
        .iter()
        .enumerate()
        .filter(|(i, _)| show[*i])
        .map(|(i, l)| LineEvent {
            line_number: i + 1,
            text: l,
            is_match: matches[i],
        })
        .collect()
}

/// Collects output lines and applies the match limit as pi does while reading rg's events.
struct Collector {
    limit: usize,
    context: usize,
    output_lines: Vec<String>,
    output_bytes: usize,
    output_line_count: usize,
    match_count: usize,
    limit_hit: bool,
    match_limit_reached: bool,
    trailing_context_end: usize,
    last_file: Option<PathBuf>,
    lines_truncated: bool,
    done: bool,
}

impl Collector {
    fn push_line(&mut self, file: &Path, display: &str, ev: &LineEvent<'_>, is_match: bool) {
        self.last_file = Some(file.to_path_buf());
        let mut text = String::from_utf8_lossy(ev.text).into_owned();
        if text.ends_with('\r') {
            text.pop();
        }
        let (text, cut) = truncate_line(&text, GREP_MAX_LINE_LENGTH);
        if cut {
            self.lines_truncated = true;
        }
        let line = if is_match {
            format!("{display}:{}: {text}", ev.line_number)
        } else {
            format!("{display}-{}- {text}", ev.line_number)
        };
        // Lines past the byte cap are counted but not kept.
        if self.output_bytes.saturating_sub(1) <= DEFAULT_MAX_BYTES {
            self.output_lines.push(line.clone());
        }
        self.output_bytes += line.len() + 1;
        self.output_line_count += 1;
    }

    fn on_event(&mut self, file: &Path, display: &str, ev: &LineEvent<'_>) {
        if self.done {
            return;
        }
        if !self.limit_hit {
            self.push_line(file, display, ev, ev.is_match);
            if !ev.is_match {
                return;
            }
            self.match_count += 1;
            if self.match_count >= self.limit {
                self.limit_hit = true;
                self.trailing_context_end = ev.line_number + self.context;
            }
            return;
        }
        let in_window =
            self.last_file.as_deref() == Some(file) && ev.line_number <= self.trailing_context_end;
        // A match inside the last match's trailing context is shown as context.
        if in_window {
            self.push_line(file, display, ev, false);
        }
        // Only another match proves that the limit cut results off.
        if ev.is_match {
            self.match_limit_reached = true;
        }
        if self.match_limit_reached && !(in_window && ev.line_number < self.trailing_context_end) {
            self.done = true;
        }
    }
}

fn build_regex(opts: &GrepOptions<'_>) -> Result<Regex, String> {
    if opts.pattern.contains('\n') {
        return Err("the literal '\"\\n\"' is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched.".to_string());
    }
    let source = if opts.literal {
        regex::escape(opts.pattern)
    } else {
        opts.pattern.to_string()
    };
    RegexBuilder::new(&source)
        .case_insensitive(opts.ignore_case)
        .build()
        .map_err(|e| e.to_string().trim().to_string())
}

fn grep(opts: &GrepOptions<'_>, cancelled: &dyn Fn() -> bool) -> Result<ToolOutput, String> {
    let search_path = &opts.search_path;
    let meta = std::fs::metadata(search_path)
        .map_err(|_| format!("Path not found: {}", search_path.display()))?;
    let re = build_regex(opts)?;
    let mut col = Collector {
        limit: opts.limit,
        context: opts.context,
        output_lines: Vec::new(),
        output_bytes: 0,
        output_line_count: 0,
        match_count: 0,
        limit_hit: false,
        match_limit_reached: false,
        trailing_context_end: 0,
        last_file: None,
        lines_truncated: false,
        done: false,
    };

    if meta.is_dir() {
        let mut builder = WalkBuilder::new(search_path);
        builder
            .hidden(false)
            .parents(true)
            .ignore(true)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .follow_links(false)
            .add_custom_ignore_filename(".rgignore")
            .sort_by_file_name(|a, b| a.cmp(b));
        if let Some(glob) = opts.glob {
            // rg never matches a leading "./"; "!" negates.
            let (neg, mut g) = match glob.strip_prefix('!') {
                Some(rest) => ("!", rest),
                None => ("", glob),
            };
            while let Some(rest) = g.strip_prefix("./") {
                g = rest;
            }
            let mut ob = OverrideBuilder::new(search_path);
            ob.add(&format!("{neg}{g}")).map_err(|e| e.to_string())?;
            builder.overrides(ob.build().map_err(|e| e.to_string())?);
        }
        for entry in builder.build() {
            if cancelled() {
                return Err(ABORTED.to_string());
            }
            if col.done {
                break;
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(data) = std::fs::read(entry.path()) else {
                continue;
            };
            // Binary files found by the walk are skipped, as rg does.
            if data.contains(&0) {
                continue;
            }
            let display = relative_slash(search_path, entry.path());
            for ev in file_events(&data, &re, opts.context) {
                col.on_event(entry.path(), &display, &ev);
                if col.done {
                    break;
                }
            }
        }
    } else {
        let data = std::fs::read(search_path)
            .map_err(|e| format!("rg: {}: {e}", search_path.display()))?;
        let display = search_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for ev in file_events(&data, &re, opts.context) {
            col.on_event(search_path, &display, &ev);
            if col.done {
                break;
            }
        }
    }
    if cancelled() {
        return Err(ABORTED.to_string());
    }
    if col.match_count == 0 {
        return Ok(ToolOutput::text("No matches found"));
    }

    let mut truncation = truncate_head(&col.output_lines.join("\n"), usize::MAX, DEFAULT_MAX_BYTES);
    truncation.total_lines = col.output_line_count;
    truncation.total_bytes = col.output_bytes - 1;
    let mut notices = Notices::new();
    if col.match_limit_reached {
        notices.add(
            format!(
                "{} matches limit reached. Use limit={} for more, or refine pattern",
                opts.limit,
                opts.limit.saturating_mul(2)
            ),
            "matchLimitReached",
            json!(opts.limit),
        );
    }
    notices.byte_limit(&truncation);
    if col.lines_truncated {
        notices.add(
            format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            ),
            "linesTruncated",
            json!(true),
        );
    }
    Ok(notices.finish(truncation.content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::args::test_support::{run_tool, text_or_err as text};

    fn tree() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pi-rpc-grep-{}", uuid::Uuid::new_v4().simple()));
        for dir in ["sub/deep", ".hidden", "ign", ".git"] {
            std::fs::create_dir_all(d.join(dir)).expect("mkdir");
        }
        for (f, c) in [
            (".gitignore", "ign/\n*.log\n"),
            ("a.txt", "hello world\nsecond\n"),
            ("sub/b.md", "Hello there\r\n"),
            ("sub/deep/c.txt", "one\nhello deep\nthree"),
            (".hidden/h.txt", "hello hidden\n"),
            ("ign/x.txt", "hello ignored\n"),
            ("z.log", "hello log\n"),
        ] {
            std::fs::write(d.join(f), c).expect("write");
        }
        std::fs::write(d.join("bin.dat"), b"bin\0hello\n").expect("write");
        d
    }

    fn run(cwd: &Path, args: Value) -> Result<ToolOutput, String> {
        run_tool(&GrepTool, cwd, args)
    }

    #[test]
    fn searches_hidden_files_and_respects_gitignore_in_a_repo() {
        let d = tree();
        assert_eq!(
            text(run(&d, json!({"pattern": "hello"}))),
            ".hidden/h.txt:1: hello hidden\na.txt:1: hello world\nsub/deep/c.txt:2: hello deep"
        );
        assert_eq!(
            text(run(
                &d,
                json!({"pattern": "HELLO", "ignoreCase": true, "glob": "*.md"})
            )),
            "sub/b.md:1: Hello there"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "hello", "glob": "sub/*"}))),
            "No matches found"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "hello", "glob": "./sub/**"}))),
            "sub/deep/c.txt:2: hello deep"
        );
        assert_eq!(
            text(run(
                &d,
                json!({"pattern": "hello", "glob": "!sub/**", "path": "."})
            )),
            ".hidden/h.txt:1: hello hidden\na.txt:1: hello world"
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn outside_a_repo_gitignore_is_not_applied() {
        let d = tree();
        std::fs::remove_dir_all(d.join(".git")).expect("rm");
        let t = text(run(&d, json!({"pattern": "hello ignored"})));
        assert_eq!(t, "ign/x.txt:1: hello ignored");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn literal_context_and_single_file() {
        let d = tree();
        std::fs::write(d.join("re.txt"), "a.c\nabc\n").expect("w");
        assert_eq!(
            text(run(
                &d,
                json!({"pattern": "a.c", "literal": true, "path": "re.txt"})
            )),
            "re.txt:1: a.c"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "a.c", "path": "re.txt"}))),
            "re.txt:1: a.c\nre.txt:2: abc"
        );
        assert_eq!(
            text(run(
                &d,
                json!({"pattern": "hello", "path": "sub/deep/c.txt", "context": 1})
            )),
            "c.txt-1- one\nc.txt:2: hello deep\nc.txt-3- three"
        );
        // An explicitly named binary file is searched.
        assert_eq!(
            text(run(&d, json!({"pattern": "hello", "path": "bin.dat"}))),
            "bin.dat:1: bin\u{0}hello"
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn match_limit_with_trailing_context() {
        let d =
            std::env::temp_dir().join(format!("pi-rpc-grep-l-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("f.txt"), "m1\nx\nm2\nm3\ny\nm4\n").expect("w");
        let out = run(&d, json!({"pattern": "^m", "limit": 2, "context": 1})).expect("ok");
        assert_eq!(
            out.content[0]["text"],
            "f.txt:1: m1\nf.txt-2- x\nf.txt:3: m2\nf.txt-4- m3\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
        );
        assert_eq!(out.details, Some(json!({"matchLimitReached": 2})));
        // Exactly `limit` matches: no notice.
        let out = run(&d, json!({"pattern": "^m", "limit": 4})).expect("ok");
        assert_eq!(out.details, None);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn long_lines_and_errors() {
        let d =
            std::env::temp_dir().join(format!("pi-rpc-grep-e-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("long.txt"), format!("x{}\n", "y".repeat(600))).expect("w");
        let out = run(&d, json!({"pattern": "x"})).expect("ok");
        assert_eq!(
            out.content[0]["text"],
            format!(
                "long.txt:1: x{}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
                "y".repeat(499)
            )
        );
        assert_eq!(out.details, Some(json!({"linesTruncated": true})));
        assert_eq!(
            text(run(&d, json!({"pattern": "("}))),
            "ERR regex parse error:\n    (\n    ^\nerror: unclosed group"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "x", "path": "nope"}))),
            format!("ERR Path not found: {}", d.join("nope").display())
        );
        assert_eq!(text(run(&d, json!({"pattern": "zzz"}))), "No matches found");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn byte_cap_notice() {
        let d =
            std::env::temp_dir().join(format!("pi-rpc-grep-b-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).expect("mkdir");
        let body: String = (0..200)
            .map(|i| format!("match {i} {}\n", "z".repeat(400)))
            .collect();
        std::fs::write(d.join("big.txt"), body).expect("w");
        let out = run(&d, json!({"pattern": "match", "limit": 1000})).expect("ok");
        let t = out.content[0]["text"].as_str().expect("t");
        assert!(
            t.ends_with("\n\n[50.0KB limit reached]"),
            "{}",
            &t[t.len() - 80..]
        );
        let tr = &out.details.expect("d")["truncation"];
        assert_eq!(tr["totalLines"], 200);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn line_truncation_counts_utf16() {
        assert_eq!(truncate_line("abc", 3), ("abc".to_string(), false));
        assert_eq!(
            truncate_line("abcd", 3),
            ("abc... [truncated]".to_string(), true)
        );
        assert_eq!(
            truncate_line("a😀b", 2),
            ("a... [truncated]".to_string(), true)
        );
    }
}
