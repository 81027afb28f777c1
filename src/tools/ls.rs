//! The `ls` tool (tools.md §6): one directory's entries, sorted case-insensitively as pi's
//! `localeCompare` does, `/` after directories, dotfiles included, at most `limit` entries and
//! 50 KiB.

use std::cmp::Ordering;
use std::path::Path;

use serde_json::{json, Value};

use super::args::{check_cancelled, limit_arg, search_dir, Notices, ABORTED};
use super::path::resolve_to_cwd;
use super::{Tool, ToolContext, ToolOutput};
use crate::js::fs_error::node_error;
use crate::truncate::{truncate_head, DEFAULT_MAX_BYTES};

const DEFAULT_LIMIT: f64 = 500.0;

pub struct LsTool;

impl Tool for LsTool {
    fn name(&self) -> &'static str {
        "ls"
    }

    fn description(&self) -> String {
        format!(
            "List the entries of a directory in alphabetical order, directories marked with a \
             trailing '/', hidden dotfiles included. At most {} entries or {}KB are returned.",
            DEFAULT_LIMIT,
            DEFAULT_MAX_BYTES / 1024
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory to list (the current directory by default)"},
                "limit": {"type": "number", "description": "How many entries to return at most (500 by default)"}
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("List the contents of a directory")
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        check_cancelled(ctx.cancel)?;
        let limit = limit_arg(args, DEFAULT_LIMIT);
        let dir = resolve_to_cwd(search_dir(args), ctx.cwd);
        list_dir(&dir, limit, &|| ctx.cancel.is_cancelled())
    }
}

fn list_dir(dir: &Path, limit: usize, cancelled: &dyn Fn() -> bool) -> Result<ToolOutput, String> {
    if !dir.exists() {
        return Err(format!("Path not found: {}", dir.display()));
    }
    let is_dir = std::fs::metadata(dir).map(|m| m.is_dir()).unwrap_or(false);
    if !is_dir {
        return Err(format!("Not a directory: {}", dir.display()));
    }
    let read = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "Cannot read directory: {}",
            node_error(&e, "scandir", Some(dir))
        )
    })?;
    let mut names: Vec<String> = read
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by(|a, b| locale_compare_lower(a, b).then_with(|| a.cmp(b)));

    let mut results: Vec<String> = Vec::new();
    let mut entry_limit_reached = false;
    for name in &names {
        if results.len() >= limit {
            entry_limit_reached = true;
            break;
        }
        if cancelled() {
            return Err(ABORTED.to_string());
        }
        // Entries that cannot be stat-ed (broken links, races) are skipped.
        let Ok(meta) = std::fs::metadata(dir.join(name)) else {
            continue;
        };
        let suffix = if meta.is_dir() { "/" } else { "" };
        results.push(format!("{name}{suffix}"));
    }
    if results.is_empty() {
        return Ok(ToolOutput::text("(empty directory)"));
    }
    let raw = results.join("\n");
    let truncation = truncate_head(&raw, usize::MAX, DEFAULT_MAX_BYTES);
    let mut notices = Notices::new();
    if entry_limit_reached {
        notices.add(
            format!(
                "{limit} entries limit reached. Use limit={} for more",
                limit.saturating_mul(2)
            ),
            "entryLimitReached",
            json!(limit),
        );
    }
    notices.byte_limit(&truncation);
    Ok(notices.finish(truncation.content))
}

/// `a.toLowerCase().localeCompare(b.toLowerCase())` approximated for file names: ICU's root
/// collation orders whitespace, then punctuation and symbols (in its own order), then digits,
/// then letters; accented Latin letters sort with their base letter. Ties fall back to the
/// code points.
pub fn locale_compare_lower(a: &str, b: &str) -> Ordering {
    let ka = a.to_lowercase();
    let kb = b.to_lowercase();
    let pa = ka.chars().flat_map(primary_weight);
    let pb = kb.chars().flat_map(primary_weight);
    pa.cmp(pb).then_with(|| ka.cmp(&kb))
}

/// The order of printable ASCII (lowercase) under ICU root collation, as Node sorts it.
const ASCII_ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

/// Primary collation weights of one (lowercased) character; empty for ignorable controls.
fn primary_weight(c: char) -> Vec<u32> {
    if let Some(i) = ASCII_ORDER.find(c) {
        return vec![i as u32 + 1];
    }
    if c.is_control() {
        return Vec::new();
    }
    let base = match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'č' => "c",
        'ď' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ě' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'ī' => "i",
        'ł' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' => "o",
        'œ' => "oe",
        'ř' => "r",
        'ß' => "ss",
        'ś' | 'š' => "s",
        'ť' => "t",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => "",
    };
    if !base.is_empty() {
        return base
            .chars()
            .filter_map(|b| ASCII_ORDER.find(b).map(|i| i as u32 + 1))
            .collect();
    }
    // Everything else after ASCII, by code point.
    vec![1000 + c as u32]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::args::test_support::run_tool;
    use std::path::PathBuf;

    fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pi-rpc-ls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    fn run(cwd: &Path, args: Value) -> Result<ToolOutput, String> {
        run_tool(&LsTool, cwd, args)
    }

    fn text(out: &ToolOutput) -> &str {
        out.content[0]["text"].as_str().unwrap_or("")
    }

    #[test]
    fn sorts_like_locale_compare() {
        let mut v = vec!["a.b", "a-b", "a_b", "ab", "a b", "a1", "a.", "a"];
        v.sort_by(|a, b| locale_compare_lower(a, b));
        assert_eq!(v, ["a", "a b", "a_b", "a-b", "a.", "a.b", "a1", "ab"]);
        let mut v = vec![
            ".git",
            "_a",
            "-a",
            "a",
            "~a",
            "$a",
            "0",
            "README.md",
            "Cargo.toml",
            "src",
        ];
        v.sort_by(|a, b| locale_compare_lower(a, b));
        assert_eq!(
            v,
            [
                "_a",
                "-a",
                ".git",
                "~a",
                "$a",
                "0",
                "a",
                "Cargo.toml",
                "README.md",
                "src"
            ]
        );
        let mut v = vec!["file10", "file2", "file1", "é", "f", "e"];
        v.sort_by(|a, b| locale_compare_lower(a, b));
        assert_eq!(v, ["e", "é", "f", "file1", "file10", "file2"]);
    }

    #[test]
    fn lists_with_slashes_and_dotfiles() {
        let d = tmp();
        std::fs::create_dir(d.join("src")).expect("mkdir");
        std::fs::write(d.join(".gitignore"), "x").expect("w");
        std::fs::write(d.join("B.txt"), "x").expect("w");
        std::fs::write(d.join("a.txt"), "x").expect("w");
        std::os::unix::fs::symlink(d.join("missing"), d.join("broken")).expect("link");
        let out = run(&d, json!({})).expect("ok");
        assert_eq!(text(&out), ".gitignore\na.txt\nB.txt\nsrc/");
        assert_eq!(out.details, None);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn limit_notice_and_details() {
        let d = tmp();
        for i in 0..5 {
            std::fs::write(d.join(format!("f{i}")), "").expect("w");
        }
        let out = run(&d, json!({"limit": 2})).expect("ok");
        assert_eq!(
            text(&out),
            "f0\nf1\n\n[2 entries limit reached. Use limit=4 for more]"
        );
        assert_eq!(out.details, Some(json!({"entryLimitReached": 2})));
        let out = run(&d, json!({"limit": 0})).expect("ok");
        assert!(text(&out).starts_with("f0\n\n[1 entries limit reached. Use limit=2 for more]"));
        let out = run(&d, json!({"limit": 5})).expect("ok");
        assert_eq!(text(&out), "f0\nf1\nf2\nf3\nf4");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn byte_limit_notice() {
        let d = tmp();
        for i in 0..300 {
            std::fs::write(d.join(format!("{i:03}{}", "x".repeat(200))), "").expect("w");
        }
        let out = run(&d, json!({})).expect("ok");
        assert!(text(&out).ends_with("\n\n[50.0KB limit reached]"));
        let details = out.details.expect("details");
        assert_eq!(details["truncation"]["truncated"], true);
        assert_eq!(details["truncation"]["truncatedBy"], "bytes");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn errors_and_empty() {
        let d = tmp();
        let missing = d.join("nope");
        assert_eq!(
            run(&d, json!({"path": "nope"})),
            Err(format!("Path not found: {}", missing.display()))
        );
        std::fs::write(d.join("file"), "").expect("w");
        assert_eq!(
            run(&d, json!({"path": "file"})),
            Err(format!("Not a directory: {}", d.join("file").display()))
        );
        std::fs::create_dir(d.join("empty")).expect("mkdir");
        assert_eq!(
            text(&run(&d, json!({"path": "empty"})).expect("ok")),
            "(empty directory)"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
