//! Prompt templates: `*.md` files whose body replaces a `/name args` prompt, with shell-like
//! argument substitution (agent-loop.md §2.5 and §8).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::frontmatter::parse_frontmatter;
pub use super::skills::SourceInfo;
use super::skills::{absolute, sorted_entries};
use crate::util::resolve_path;

/// Longest description taken from a template's first line (longer ones get `...`).
const DESCRIPTION_FROM_BODY_MAX: usize = 60;

/// A loaded prompt template.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptTemplate {
    /// File name without `.md`; invoked as `/name`.
    pub name: String,
    /// Frontmatter `description`, else the body's first non-empty line (60 chars + `...`).
    pub description: Option<String>,
    pub file_path: PathBuf,
    /// The file without its frontmatter (trimmed when there was frontmatter, as pi does).
    pub body: String,
    pub source_info: SourceInfo,
}

/// Inputs of [`discover_prompts`].
#[derive(Debug, Clone, Copy)]
pub struct PromptOptions<'a> {
    pub agent_dir: &'a Path,
    pub cwd: &'a Path,
    /// `<cwd>/.pi/prompts` only when true.
    pub project_trusted: bool,
    /// `prompts` entries of the settings ([`super::Settings::prompts_paths`]).
    pub settings_paths: &'a [String],
    /// `--prompt-template` paths (loaded even when `enabled` is false, as pi does).
    pub cli_paths: &'a [String],
    /// False for `--no-prompt-templates`: only `cli_paths` are loaded.
    pub enabled: bool,
}

/// All `*.md` files below `dir` (dot-entries and `node_modules` skipped), sorted per directory.
fn collect_md_recursive(dir: &Path, visited: &mut HashSet<PathBuf>, out: &mut Vec<PathBuf>) {
    if let Ok(canon) = fs::canonicalize(dir) {
        if !visited.insert(canon) {
            return;
        }
    }
    for (name, path) in sorted_entries(dir) {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            collect_md_recursive(&path, visited, out);
        } else if meta.is_file() && name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// Direct `*.md` children of `dir` (files or symlinks to files), sorted by name.
fn collect_md_children(dir: &Path, skip_dot: bool) -> Vec<PathBuf> {
    sorted_entries(dir)
        .into_iter()
        .filter(|(name, _)| !(skip_dot && (name.starts_with('.') || name == "node_modules")))
        .filter(|(name, path)| name.ends_with(".md") && path.is_file())
        .map(|(_, path)| path)
        .collect()
}

fn is_under(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// Discovers prompt templates. Order, first name wins: settings `prompts` paths (directories
/// searched recursively), `<cwd>/.pi/prompts` (trusted projects), `<agentDir>/prompts`, then
/// `--prompt-template` paths (a file, or a directory's direct `*.md` children).
pub fn discover_prompts(opts: &PromptOptions, diags: &mut Vec<String>) -> Vec<PromptTemplate> {
    let cwd = absolute(opts.cwd);
    let agent_dir = absolute(opts.agent_dir);
    let mut candidates: Vec<(PathBuf, SourceInfo)> = Vec::new();

    if opts.enabled {
        for raw in opts.settings_paths {
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                continue;
            }
            let path = resolve_path(&cwd, trimmed);
            let mut files = Vec::new();
            if path.is_dir() {
                collect_md_recursive(&path, &mut HashSet::new(), &mut files);
            } else if path.is_file() && trimmed.ends_with(".md") {
                files.push(path);
            }
            for f in files {
                let info = SourceInfo::new(&f, "local", "user", None);
                candidates.push((f, info));
            }
        }
        if opts.project_trusted {
            let pi_dir = cwd.join(".pi");
            for f in collect_md_children(&pi_dir.join("prompts"), true) {
                let info = SourceInfo::new(&f, "auto", "project", Some(&pi_dir));
                candidates.push((f, info));
            }
        }
        for f in collect_md_children(&agent_dir.join("prompts"), true) {
            let info = SourceInfo::new(&f, "auto", "user", Some(&agent_dir));
            candidates.push((f, info));
        }
    }

    let user_prompts = agent_dir.join("prompts");
    let project_prompts = cwd.join(".pi").join("prompts");
    for raw in opts.cli_paths {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        let path = resolve_path(&cwd, trimmed);
        let files = match fs::metadata(&path) {
            Err(_) => {
                diags.push(format!(
                    "Warning: prompt template path does not exist: {}",
                    path.display()
                ));
                continue;
            }
            Ok(m) if m.is_dir() => collect_md_children(&path, false),
            Ok(m) if m.is_file() && trimmed.ends_with(".md") => vec![path],
            Ok(_) => continue,
        };
        for f in files {
            let info = if is_under(&f, &user_prompts) {
                SourceInfo::new(&f, "local", "user", Some(&user_prompts))
            } else if is_under(&f, &project_prompts) {
                SourceInfo::new(&f, "local", "project", Some(&project_prompts))
            } else {
                SourceInfo::new(&f, "local", "temporary", f.parent())
            };
            candidates.push((f, info));
        }
    }

    let mut templates: Vec<PromptTemplate> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    let mut collisions = Vec::new();
    for (file, info) in candidates {
        let key = fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if !seen_files.insert(key) {
            continue;
        }
        let Some(template) = load_template(&file, info, diags) else {
            continue;
        };
        if let Some(&winner) = by_name.get(&template.name) {
            collisions.push(format!(
                "Warning: prompt template name \"/{}\" collision: {} ignored, {} is used",
                template.name,
                template.file_path.display(),
                templates[winner].file_path.display()
            ));
            continue;
        }
        by_name.insert(template.name.clone(), templates.len());
        templates.push(template);
    }
    diags.extend(collisions);
    templates
}

fn load_template(
    file: &Path,
    source_info: SourceInfo,
    diags: &mut Vec<String>,
) -> Option<PromptTemplate> {
    let content = match fs::read(file) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            diags.push(format!(
                "Warning: failed to read prompt template {}: {e}",
                file.display()
            ));
            return None;
        }
    };
    let (fm, body) = parse_frontmatter(&content);
    let file_name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(&file_name)
        .to_string();
    let description = fm
        .get("description")
        .and_then(|v| v.as_str())
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .or_else(|| description_from_body(&body));
    Some(PromptTemplate {
        name,
        description,
        file_path: file.to_path_buf(),
        body,
        source_info,
    })
}

/// The first non-blank line, cut to 60 characters with `...` appended when longer.
fn description_from_body(body: &str) -> Option<String> {
    let line = body.split('\n').find(|l| !l.trim().is_empty())?;
    let count = line.chars().count();
    let mut d: String = line.chars().take(DESCRIPTION_FROM_BODY_MAX).collect();
    if count > DESCRIPTION_FROM_BODY_MAX {
        d.push_str("...");
    }
    Some(d)
}

// ---- expansion ----------------------------------------------------------------------------

/// `/name args` naming a loaded template → its body with the arguments substituted; `None` when
/// `text` is not of that form or names no template (it is then sent as is).
pub fn expand_prompt_template(text: &str, templates: &[PromptTemplate]) -> Option<String> {
    let rest = text.strip_prefix('/')?;
    let name_end = rest.find(is_js_space).unwrap_or(rest.len());
    if name_end == 0 {
        return None;
    }
    let name = &rest[..name_end];
    let args = rest[name_end..].trim_start_matches(is_js_space);
    let template = templates.iter().find(|t| t.name == name)?;
    Some(substitute_args(&template.body, &parse_command_args(args)))
}

/// JavaScript's `\s`.
fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// Splits arguments like a shell, as pi does: `"` / `'` open a quote only at the start of an
/// argument; inside, a backslash before the quote character keeps it; an unclosed quote is kept
/// as a literal character. Quoted empty strings are kept as arguments.
pub fn parse_command_args(input: &str) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut in_quote: Option<char> = None;
    let mut quote_start = 0usize;
    let mut i = 0usize;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = in_quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                in_quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            in_quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if is_js_space(c) {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if in_quote.is_some() && i + 1 == chars.len() {
            // Unclosed quote: keep the quote character as text and re-read what follows it.
            in_quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// Replaces `$1..$n`, `$@`, `$ARGUMENTS`, `${N:-default}`, `${@:-default}`,
/// `${ARGUMENTS:-default}`, `${@:N}`, `${@:N:L}` in one left-to-right pass (substituted text is
/// not rescanned). Missing positionals become `""`.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        match match_placeholder(tail, args, &all) {
            Some((replacement, len)) => {
                out.push_str(&replacement);
                rest = &tail[len..];
            }
            None => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn leading_digits(s: &str) -> &str {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    &s[..end]
}

/// 1-based positional argument; out of range (or 0) → `None`.
fn positional<'a>(args: &'a [String], digits: &str) -> Option<&'a str> {
    let n: usize = digits.parse().ok()?;
    args.get(n.checked_sub(1)?).map(String::as_str)
}

/// Tries the placeholder forms at the start of `s` (which begins with `$`): the replacement and
/// the length consumed.
fn match_placeholder(s: &str, args: &[String], all: &str) -> Option<(String, usize)> {
    let after = &s[1..];
    if let Some(inner) = after.strip_prefix('{') {
        // ${N:-default} / ${@:-default} / ${ARGUMENTS:-default}
        let target = if inner.starts_with("ARGUMENTS") {
            Some("ARGUMENTS")
        } else if inner.starts_with('@') {
            Some("@")
        } else {
            let d = leading_digits(inner);
            (!d.is_empty()).then_some(d)
        };
        if let Some(target) = target {
            if let Some(def_and_rest) = inner[target.len()..].strip_prefix(":-") {
                if let Some(close) = def_and_rest.find('}') {
                    let default = &def_and_rest[..close];
                    let value = if target == "@" || target == "ARGUMENTS" {
                        Some(all)
                    } else {
                        positional(args, target)
                    };
                    let replacement = match value {
                        Some(v) if !v.is_empty() => v.to_string(),
                        _ => default.to_string(),
                    };
                    let len = 2 + target.len() + 2 + close + 1;
                    return Some((replacement, len));
                }
            }
        }
        // ${@:N} / ${@:N:L}
        if let Some(slice) = inner.strip_prefix("@:") {
            let start_digits = leading_digits(slice);
            if !start_digits.is_empty() {
                let mut consumed = start_digits.len();
                let after_start = &slice[consumed..];
                let mut length: Option<&str> = None;
                if let Some(l) = after_start.strip_prefix(':') {
                    let ld = leading_digits(l);
                    if !ld.is_empty() {
                        length = Some(ld);
                        consumed += 1 + ld.len();
                    }
                }
                if slice[consumed..].starts_with('}') {
                    let start = start_digits
                        .parse::<usize>()
                        .unwrap_or(usize::MAX)
                        .saturating_sub(1);
                    let from = start.min(args.len());
                    let to = match length {
                        Some(l) => from
                            .saturating_add(l.parse::<usize>().unwrap_or(usize::MAX))
                            .min(args.len()),
                        None => args.len(),
                    };
                    let replacement = args[from..to].join(" ");
                    return Some((replacement, 2 + 2 + consumed + 1));
                }
            }
        }
        return None;
    }
    if after.starts_with("ARGUMENTS") {
        return Some((all.to_string(), 1 + "ARGUMENTS".len()));
    }
    if after.starts_with('@') {
        return Some((all.to_string(), 2));
    }
    let d = leading_digits(after);
    if !d.is_empty() {
        let v = positional(args, d).unwrap_or("");
        return Some((v.to_string(), 1 + d.len()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pi-rpc-prompts-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn template(name: &str, body: &str) -> PromptTemplate {
        PromptTemplate {
            name: name.to_string(),
            description: None,
            file_path: PathBuf::from(format!("/t/{name}.md")),
            body: body.to_string(),
            source_info: SourceInfo::new(Path::new("/t"), "auto", "user", None),
        }
    }

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn observed_expansion() {
        let t = [template(
            "review",
            "Review the staged changes. Focus on ${1:-correctness}.",
        )];
        assert_eq!(
            expand_prompt_template("/review concurrency", &t).as_deref(),
            Some("Review the staged changes. Focus on concurrency.")
        );
        assert_eq!(
            expand_prompt_template("/review", &t).as_deref(),
            Some("Review the staged changes. Focus on correctness.")
        );
        assert_eq!(
            expand_prompt_template("/review   ", &t).as_deref(),
            Some("Review the staged changes. Focus on correctness.")
        );
        assert_eq!(expand_prompt_template("/nope do something", &t), None);
        assert_eq!(expand_prompt_template("review x", &t), None);
        assert_eq!(expand_prompt_template("/", &t), None);
        assert_eq!(expand_prompt_template("/ review", &t), None);
    }

    #[test]
    fn substitution_forms() {
        let a = args(&["one", "two words", "three"]);
        assert_eq!(
            substitute_args("$1|$2|$3|$4|$0", &a),
            "one|two words|three||"
        );
        assert_eq!(substitute_args("$@", &a), "one two words three");
        assert_eq!(substitute_args("$ARGUMENTS.", &a), "one two words three.");
        assert_eq!(substitute_args("${@:2}", &a), "two words three");
        assert_eq!(substitute_args("${@:2:1}", &a), "two words");
        assert_eq!(substitute_args("${@:0}", &a), "one two words three");
        assert_eq!(substitute_args("${@:9}", &a), "");
        assert_eq!(substitute_args("${4:-none}", &a), "none");
        assert_eq!(substitute_args("${2:-none}", &a), "two words");
        assert_eq!(substitute_args("${@:-all}", &[]), "all");
        assert_eq!(
            substitute_args("${ARGUMENTS:-all}", &a),
            "one two words three"
        );
        assert_eq!(
            substitute_args("$$1 ${x} ${@:2:} $", &a),
            "$one ${x} ${@:2:} $"
        );
        // No rescanning of substituted text.
        assert_eq!(substitute_args("$1 $2", &args(&["$2", "b"])), "$2 b");
        assert_eq!(substitute_args("$12", &a), "");
    }

    #[test]
    fn argument_parsing() {
        assert_eq!(
            parse_command_args("a \"b c\" 'd e' f"),
            args(&["a", "b c", "d e", "f"])
        );
        assert_eq!(parse_command_args("don't stop"), args(&["don't", "stop"]));
        assert_eq!(
            parse_command_args("\"say \\\"hi\\\"\""),
            args(&["say \"hi\""])
        );
        assert_eq!(parse_command_args("\"\" x"), args(&["", "x"]));
        assert_eq!(
            parse_command_args("\"unclosed arg"),
            args(&["\"unclosed", "arg"])
        );
        assert_eq!(parse_command_args("\""), args(&["\""]));
        assert_eq!(parse_command_args("  \t "), Vec::<String>::new());
        assert_eq!(parse_command_args("a\nb"), args(&["a", "b"]));
        let t = [template("t", "[$1] [$2] [$@]")];
        assert_eq!(
            expand_prompt_template("/t \"x y\" z", &t).as_deref(),
            Some("[x y] [z] [x y z]")
        );
    }

    #[test]
    fn discovery() {
        let agent = temp_dir("agent");
        let cwd = temp_dir("cwd");
        fs::create_dir_all(agent.join("prompts/sub")).unwrap();
        fs::write(
            agent.join("prompts/review.md"),
            "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\nReview the staged changes. Focus on ${1:-correctness}.\n",
        )
        .unwrap();
        fs::write(agent.join("prompts/plain.md"), "\nHello $1\n").unwrap();
        let long = "x".repeat(70);
        fs::write(agent.join("prompts/long.md"), format!("{long}\nmore")).unwrap();
        fs::write(agent.join("prompts/notes.txt"), "ignored").unwrap();
        fs::write(agent.join("prompts/sub/nested.md"), "not direct").unwrap();
        fs::create_dir_all(cwd.join(".pi/prompts")).unwrap();
        fs::write(cwd.join(".pi/prompts/review.md"), "project review").unwrap();
        let extra = cwd.join("extra");
        fs::create_dir_all(&extra).unwrap();
        fs::write(extra.join("review.md"), "cli review").unwrap();
        fs::write(extra.join("cli.md"), "cli one").unwrap();

        let cli = vec!["extra".to_string(), "missing.md".to_string()];
        let opts = PromptOptions {
            agent_dir: &agent,
            cwd: &cwd,
            project_trusted: false,
            settings_paths: &[],
            cli_paths: &cli,
            enabled: true,
        };
        let mut diags = Vec::new();
        let t = discover_prompts(&opts, &mut diags);
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["long", "plain", "review", "cli"]);
        let review = &t[2];
        assert_eq!(
            review.description.as_deref(),
            Some("Review staged git changes")
        );
        assert_eq!(
            review.body,
            "Review the staged changes. Focus on ${1:-correctness}."
        );
        assert_eq!(
            serde_json::to_string(&review.source_info).unwrap(),
            format!(
                "{{\"path\":\"{}\",\"source\":\"auto\",\"scope\":\"user\",\"origin\":\"top-level\",\"baseDir\":\"{}\"}}",
                agent.join("prompts/review.md").display(),
                agent.display()
            )
        );
        assert_eq!(t[0].description, Some(format!("{}...", "x".repeat(60))));
        assert_eq!(t[1].description.as_deref(), Some("Hello $1"));
        assert_eq!(t[1].body, "\nHello $1\n");
        assert_eq!(t[3].source_info.scope, "temporary");
        assert_eq!(t[3].source_info.legacy_location(), "path");
        assert_eq!(
            t[3].source_info.base_dir.as_deref(),
            Some(extra.to_string_lossy().as_ref())
        );
        assert!(diags.iter().any(|d| d.contains("collision")));
        assert!(diags.iter().any(|d| d.contains("does not exist")));

        // Trusted project first; disabled → CLI only.
        let trusted = PromptOptions {
            project_trusted: true,
            cli_paths: &[],
            ..opts
        };
        let t = discover_prompts(&trusted, &mut Vec::new());
        let review = t.iter().find(|t| t.name == "review").unwrap();
        assert_eq!(review.body, "project review");
        assert_eq!(review.source_info.scope, "project");
        let disabled = PromptOptions {
            enabled: false,
            ..opts
        };
        let t = discover_prompts(&disabled, &mut Vec::new());
        assert_eq!(t.len(), 2);
        let _ = fs::remove_dir_all(&agent);
        let _ = fs::remove_dir_all(&cwd);
    }
}
