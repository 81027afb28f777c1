//! The `find` tool (tools.md §8): files and directories whose name (pattern without `/`) or
//! path relative to the search directory (pattern with `/`) matches a glob, with fd's `--glob`
//! semantics: hidden entries included, `.gitignore`/`.ignore`/`.fdignore` respected (also
//! outside a git repository, as pi runs fd with `--no-require-git` there), smart case (an
//! all-lowercase pattern matches case-insensitively), `*` never crossing `/` in path patterns,
//! directories printed with a trailing `/`.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use serde_json::{json, Value};

use super::args::{check_cancelled, limit_arg, required_str, search_dir, Notices, ABORTED};
use super::path::resolve_to_cwd;
use super::{Tool, ToolContext, ToolOutput};
use crate::truncate::{truncate_head, DEFAULT_MAX_BYTES};

const DEFAULT_LIMIT: f64 = 1000.0;

pub struct FindTool;

impl Tool for FindTool {
    fn name(&self) -> &'static str {
        "find"
    }

    fn description(&self) -> String {
        format!(
            "Find files and directories by glob pattern, honouring .gitignore. Paths come back \
             relative to the search directory. At most {} results or {}KB are returned.",
            DEFAULT_LIMIT,
            DEFAULT_MAX_BYTES / 1024
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {"type": "string", "description": "Glob relative to the search directory, such as 'src/**/*.rs'; a pattern without '/' (such as '*.rs') is matched against names at any depth"},
                "path": {"type": "string", "description": "The directory to search (the current directory by default)"},
                "limit": {"type": "number", "description": "How many results to return at most (1000 by default)"}
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("Find files by glob pattern (honours .gitignore)")
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        check_cancelled(ctx.cancel)?;
        let pattern = required_str(args, "pattern")?;
        let limit = limit_arg(args, DEFAULT_LIMIT);
        let search_path = resolve_to_cwd(search_dir(args), ctx.cwd);
        let cancelled = || ctx.cancel.is_cancelled();
        find(pattern, &search_path, limit, &cancelled)
    }
}

/// How a pattern is matched.
enum Matcher {
    /// Against the entry's file name.
    Name(GlobMatcher),
    /// Against the path relative to the search directory.
    Relative(GlobMatcher),
    /// Against the absolute path (absolute patterns).
    Absolute(GlobMatcher),
}

fn build_matcher(pattern: &str) -> Result<Matcher, String> {
    // fd's paths never contain "/./": "./src/*.rs" would find nothing, so the "./" goes.
    let mut p = pattern;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    // Smart case: an all-lowercase pattern matches case-insensitively.
    let ignore_case = p == p.to_lowercase();
    let is_path = p.contains('/');
    let glob = GlobBuilder::new(p)
        .literal_separator(true)
        .backslash_escape(true)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|e| format!("[fd error]: {e}"))?
        .compile_matcher();
    Ok(if !is_path {
        Matcher::Name(glob)
    } else if Path::new(p).is_absolute() {
        Matcher::Absolute(glob)
    } else {
        Matcher::Relative(glob)
    })
}

/// Whether `dir` or one of its parents holds a `.git` entry.
fn inside_git_repo(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// `path` relative to `root` with `/` separators.
pub fn relative_slash(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

fn find(
    pattern: &str,
    search_path: &Path,
    limit: usize,
    cancelled: &dyn Fn() -> bool,
) -> Result<ToolOutput, String> {
    if !search_path.exists() {
        return Err(format!("Path not found: {}", search_path.display()));
    }
    if !search_path.is_dir() {
        return Err(format!(
            "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
            search_path.display()
        ));
    }
    let matcher = build_matcher(pattern)?;
    let mut builder = WalkBuilder::new(search_path);
    builder
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(inside_git_repo(search_path))
        .follow_links(false)
        .add_custom_ignore_filename(".fdignore")
        .sort_by_file_name(|a, b| a.cmp(b));

    // Results within the limit (stored only up to the byte cap), as pi consumes fd's output.
    let mut stored: Vec<String> = Vec::new();
    let mut result_count = 0usize;
    let mut output_bytes = 0usize;
    let mut limit_reached = false;
    for entry in builder.build() {
        if cancelled() {
            return Err(ABORTED.to_string());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let path: PathBuf = entry.path().to_path_buf();
        let rel = relative_slash(search_path, &path);
        let hit = match &matcher {
            Matcher::Name(g) => g.is_match(entry.file_name()),
            Matcher::Relative(g) => g.is_match(&rel),
            Matcher::Absolute(g) => g.is_match(&path),
        };
        if !hit {
            continue;
        }
        if result_count == limit {
            limit_reached = true;
            break;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let result = if is_dir { format!("{rel}/") } else { rel };
        result_count += 1;
        if output_bytes.saturating_sub(1) <= DEFAULT_MAX_BYTES {
            stored.push(result.clone());
        }
        output_bytes += result.len() + 1;
    }
    if result_count == 0 {
        return Ok(ToolOutput::text("No files found matching pattern"));
    }
    let mut truncation = truncate_head(&stored.join("\n"), usize::MAX, DEFAULT_MAX_BYTES);
    truncation.total_lines = result_count;
    truncation.total_bytes = output_bytes - 1;
    let mut notices = Notices::new();
    if limit_reached {
        notices.add(
            format!(
                "{limit} results limit reached. Use limit={} for more, or refine pattern",
                limit.saturating_mul(2)
            ),
            "resultLimitReached",
            json!(limit),
        );
    }
    notices.byte_limit(&truncation);
    Ok(notices.finish(truncation.content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::args::test_support::{run_tool, text_or_err as text};

    fn tree() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pi-rpc-find-{}", uuid::Uuid::new_v4().simple()));
        for dir in ["src/deep", "ign", ".hidden", "pkg/src"] {
            std::fs::create_dir_all(d.join(dir)).expect("mkdir");
        }
        for (f, c) in [
            (".gitignore", "ign/\n*.log\n"),
            ("a.txt", "a"),
            ("B.TXT", "b"),
            ("src/main.rs", "m"),
            ("src/deep/lib.rs", "l"),
            ("pkg/src/x.rs", "x"),
            ("ign/skip.txt", "s"),
            ("z.log", "z"),
            (".hidden/h.txt", "h"),
        ] {
            std::fs::write(d.join(f), c).expect("write");
        }
        d
    }

    fn run(cwd: &Path, args: Value) -> Result<ToolOutput, String> {
        run_tool(&FindTool, cwd, args)
    }

    #[test]
    fn name_patterns_match_at_any_depth_respecting_gitignore() {
        let d = tree();
        // Outside a git repository the .gitignore still applies (fd --no-require-git).
        assert_eq!(
            text(run(&d, json!({"pattern": "*.txt"}))),
            ".hidden/h.txt\nB.TXT\na.txt"
        );
        // Smart case: an uppercase letter makes the pattern case-sensitive.
        assert_eq!(text(run(&d, json!({"pattern": "*.TXT"}))), "B.TXT");
        assert_eq!(
            text(run(&d, json!({"pattern": "*.rs"}))),
            "pkg/src/x.rs\nsrc/deep/lib.rs\nsrc/main.rs"
        );
        // Directories carry a trailing slash.
        assert_eq!(text(run(&d, json!({"pattern": "src"}))), "pkg/src/\nsrc/");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn path_patterns_are_anchored_at_the_search_dir() {
        let d = tree();
        assert_eq!(text(run(&d, json!({"pattern": "src/*.rs"}))), "src/main.rs");
        assert_eq!(
            text(run(&d, json!({"pattern": "./src/*.rs"}))),
            "src/main.rs"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "**/src/*.rs"}))),
            "pkg/src/x.rs\nsrc/main.rs"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "src/**"}))),
            "src/deep/\nsrc/deep/lib.rs\nsrc/main.rs"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "*.rs", "path": "src"}))),
            "deep/lib.rs\nmain.rs"
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn limits_and_errors() {
        let d = tree();
        let out = run(&d, json!({"pattern": "*.rs", "limit": 2})).expect("ok");
        assert_eq!(
            out.content[0]["text"],
            "pkg/src/x.rs\nsrc/deep/lib.rs\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
        );
        assert_eq!(out.details, Some(json!({"resultLimitReached": 2})));
        // Exactly `limit` results: no notice.
        let out = run(&d, json!({"pattern": "*.rs", "limit": 3})).expect("ok");
        assert_eq!(out.details, None);
        assert_eq!(
            text(run(&d, json!({"pattern": "*.none"}))),
            "No files found matching pattern"
        );
        assert_eq!(
            text(run(&d, json!({"pattern": "*", "path": "missing"}))),
            format!("ERR Path not found: {}", d.join("missing").display())
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn byte_cap() {
        let d =
            std::env::temp_dir().join(format!("pi-rpc-find-big-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).expect("mkdir");
        for i in 0..300 {
            std::fs::write(d.join(format!("{i:03}{}.txt", "y".repeat(200))), "").expect("w");
        }
        let out = run(&d, json!({"pattern": "*.txt"})).expect("ok");
        let t = out.content[0]["text"].as_str().expect("t");
        assert!(t.ends_with("\n\n[50.0KB limit reached]"));
        let tr = &out.details.expect("d")["truncation"];
        assert_eq!(tr["totalLines"], 300);
        assert_eq!(tr["totalBytes"], 300 * 208 - 1);
        let _ = std::fs::remove_dir_all(d);
    }
}
