//! Skills: directories holding a `SKILL.md` (agent-loop.md §8), their `/skill:name` expansion
//! (§2.4) and the `skills` system-prompt section (§9). Also [`SourceInfo`], the provenance record
//! shared with prompt templates (rpc-protocol.md §3.10).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::frontmatter::{parse_frontmatter, strip_frontmatter};
use crate::util::{home_dir, normalize_lexically, resolve_path};

const MAX_NAME_LENGTH: usize = 64;
const MAX_DESCRIPTION_LENGTH: usize = 1024;

/// Where a resource came from, as `get_commands` reports it (`sourceInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    pub path: String,
    /// `"auto"` (found in a standard directory) or `"local"` (a settings or CLI path).
    pub source: String,
    /// `"user"`, `"project"` or `"temporary"`.
    pub scope: String,
    /// `"top-level"` (packages are not supported).
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

impl SourceInfo {
    pub fn new(path: &Path, source: &str, scope: &str, base_dir: Option<&Path>) -> SourceInfo {
        SourceInfo {
            path: path.to_string_lossy().into_owned(),
            source: source.to_string(),
            scope: scope.to_string(),
            origin: "top-level".to_string(),
            base_dir: base_dir.map(|b| b.to_string_lossy().into_owned()),
        }
    }

    /// The pre-1.6 `location` value of a `get_commands` item: `user`, `project` or `path`.
    pub fn legacy_location(&self) -> &'static str {
        match self.scope.as_str() {
            "user" => "user",
            "project" => "project",
            _ => "path",
        }
    }
}

/// A loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's markdown file (normally `.../<dir>/SKILL.md`).
    pub file_path: PathBuf,
    /// The skill's directory (the parent of `file_path`).
    pub base_dir: PathBuf,
    /// Hidden from the system prompt; still invocable as `/skill:name`.
    pub disable_model_invocation: bool,
    pub source_info: SourceInfo,
}

/// Inputs of [`discover_skills`].
#[derive(Debug, Clone, Copy)]
pub struct SkillOptions<'a> {
    pub agent_dir: &'a Path,
    pub cwd: &'a Path,
    /// Project locations (`.pi/skills`, `.agents/skills` in cwd and ancestors) only when true.
    pub project_trusted: bool,
    /// `skills` entries of the settings ([`super::Settings::skills_paths`]).
    pub settings_paths: &'a [String],
    /// `--skill` paths (loaded even when `enabled` is false, as pi does).
    pub cli_paths: &'a [String],
    /// False for `--no-skills`: only `cli_paths` are loaded.
    pub enabled: bool,
}

/// Failure to expand `/skill:name`.
#[derive(Debug)]
pub enum SkillError {
    /// The skill's file could not be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillError::Read { path, source } => f.write_str(
                &crate::js::fs_error::node_error_by_kind(source, "open", path),
            ),
        }
    }
}

impl std::error::Error for SkillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SkillError::Read { source, .. } => Some(source),
        }
    }
}

// ---- discovery ----------------------------------------------------------------------------

/// How a directory is scanned for skill files.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// pi directories (`<agentDir>/skills`, `.pi/skills`, settings and CLI directories): a
    /// directory with `SKILL.md` is a skill (no deeper search); other directories are searched
    /// recursively; loose `*.md` files count only at the root.
    Pi,
    /// `.agents/skills` directories: like `Pi`, but loose `*.md` files count only below the root.
    Agents,
}

#[derive(Clone)]
enum BaseDir {
    Fixed(PathBuf),
    SkillDir,
    Absent,
}

#[derive(Clone)]
struct Meta {
    source: &'static str,
    scope: &'static str,
    base_dir: BaseDir,
}

impl Meta {
    fn auto(scope: &'static str, base: PathBuf) -> Meta {
        Meta {
            source: "auto",
            scope,
            base_dir: BaseDir::Fixed(base),
        }
    }

    fn source_info(&self, file: &Path) -> SourceInfo {
        let base = match &self.base_dir {
            BaseDir::Fixed(p) => Some(p.clone()),
            BaseDir::SkillDir => file.parent().map(Path::to_path_buf),
            BaseDir::Absent => None,
        };
        SourceInfo::new(file, self.source, self.scope, base.as_deref())
    }
}

/// An absolute, lexically normalised form of `p`.
pub(crate) fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        normalize_lexically(p)
    } else {
        match std::env::current_dir() {
            Ok(cwd) => normalize_lexically(&cwd.join(p)),
            Err(_) => p.to_path_buf(),
        }
    }
}

/// Sorted directory entries (file name order), empty when unreadable.
pub(crate) fn sorted_entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<(String, PathBuf)> = rd
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    entries.sort();
    entries
}

fn collect_skill_files(
    dir: &Path,
    mode: Mode,
    root: &Path,
    visited: &mut HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
) {
    if let Ok(canon) = fs::canonicalize(dir) {
        if !visited.insert(canon) {
            return;
        }
    }
    let entries = sorted_entries(dir);
    let skill_md = dir.join("SKILL.md");
    if entries.iter().any(|(n, _)| n == "SKILL.md") && skill_md.is_file() {
        out.push(skill_md);
        return;
    }
    let at_root = dir == root;
    for (name, path) in entries {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let Ok(meta) = fs::metadata(&path) else {
            continue; // broken symlink
        };
        if meta.is_dir() {
            collect_skill_files(&path, mode, root, visited, out);
        } else if meta.is_file()
            && name.ends_with(".md")
            && ((mode == Mode::Pi && at_root) || (mode == Mode::Agents && !at_root))
        {
            out.push(path);
        }
    }
}

fn scan_dir(dir: &Path, mode: Mode, meta: &Meta, candidates: &mut Vec<(PathBuf, Meta)>) {
    if !dir.is_dir() {
        return;
    }
    let mut files = Vec::new();
    collect_skill_files(dir, mode, dir, &mut HashSet::new(), &mut files);
    candidates.extend(files.into_iter().map(|f| (f, meta.clone())));
}

/// A settings or CLI path: a directory (scanned) or a markdown file.
fn add_explicit_path(
    raw: &str,
    cwd: &Path,
    meta: &Meta,
    report_missing: bool,
    candidates: &mut Vec<(PathBuf, Meta)>,
    diags: &mut Vec<String>,
) {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return;
    }
    let path = resolve_path(cwd, trimmed);
    match fs::metadata(&path) {
        Err(_) => {
            if report_missing {
                diags.push(format!(
                    "Warning: skill path does not exist: {}",
                    path.display()
                ));
            }
        }
        Ok(m) if m.is_dir() => scan_dir(&path, Mode::Pi, meta, candidates),
        Ok(m) if m.is_file() && trimmed.ends_with(".md") => candidates.push((path, meta.clone())),
        Ok(_) => diags.push(format!(
            "Warning: skill path is not a markdown file: {}",
            path.display()
        )),
    }
}

/// The nearest ancestor of `start` (itself included) containing `.git`.
pub(crate) fn find_git_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

/// Discovers skills (agent-loop.md §8). Order, first name wins: settings `skills` paths, then
/// (trusted projects) `<cwd>/.pi/skills` and `.agents/skills` of cwd and its ancestors up to the
/// git root, then `<agentDir>/skills`, `~/.agents/skills`, then `--skill` paths. Warnings
/// (missing description, invalid name, collisions, unreadable files) go to `diags`.
pub fn discover_skills(opts: &SkillOptions, diags: &mut Vec<String>) -> Vec<Skill> {
    let cwd = absolute(opts.cwd);
    let agent_dir = absolute(opts.agent_dir);
    let mut candidates: Vec<(PathBuf, Meta)> = Vec::new();

    if opts.enabled {
        let settings_meta = Meta {
            source: "local",
            scope: "user",
            base_dir: BaseDir::Absent,
        };
        for raw in opts.settings_paths {
            add_explicit_path(raw, &cwd, &settings_meta, false, &mut candidates, diags);
        }

        let home_agents_skills = home_dir().map(|h| h.join(".agents").join("skills"));
        if opts.project_trusted {
            let pi_dir = cwd.join(".pi");
            scan_dir(
                &pi_dir.join("skills"),
                Mode::Pi,
                &Meta::auto("project", pi_dir.clone()),
                &mut candidates,
            );
            let git_root = find_git_root(&cwd);
            let mut dir = Some(cwd.as_path());
            while let Some(d) = dir {
                let agents = d.join(".agents");
                let skills = agents.join("skills");
                if home_agents_skills.as_deref() != Some(skills.as_path()) {
                    scan_dir(
                        &skills,
                        Mode::Agents,
                        &Meta::auto("project", agents),
                        &mut candidates,
                    );
                }
                if git_root.as_deref() == Some(d) {
                    break;
                }
                dir = d.parent();
            }
        }

        scan_dir(
            &agent_dir.join("skills"),
            Mode::Pi,
            &Meta::auto("user", agent_dir.clone()),
            &mut candidates,
        );
        if let Some(skills) = &home_agents_skills {
            if let Some(agents) = skills.parent() {
                scan_dir(
                    skills,
                    Mode::Agents,
                    &Meta::auto("user", agents.to_path_buf()),
                    &mut candidates,
                );
            }
        }
    }

    let cli_meta = Meta {
        source: "local",
        scope: "temporary",
        base_dir: BaseDir::SkillDir,
    };
    for raw in opts.cli_paths {
        add_explicit_path(raw, &cwd, &cli_meta, true, &mut candidates, diags);
    }

    let mut skills: Vec<Skill> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    let mut collisions = Vec::new();
    for (file, meta) in candidates {
        let key = fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if seen_files.contains(&key) {
            continue;
        }
        let Some(skill) = load_skill_file(&file, &meta, diags) else {
            continue;
        };
        if let Some(&winner) = by_name.get(&skill.name) {
            collisions.push(format!(
                "Warning: skill name \"{}\" collision: {} ignored, {} is used",
                skill.name,
                skill.file_path.display(),
                skills[winner].file_path.display()
            ));
            continue;
        }
        seen_files.insert(key);
        by_name.insert(skill.name.clone(), skills.len());
        skills.push(skill);
    }
    diags.extend(collisions);
    skills
}

fn load_skill_file(file: &Path, meta: &Meta, diags: &mut Vec<String>) -> Option<Skill> {
    let declared = file.file_name().is_some_and(|n| n == "SKILL.md");
    let content = match fs::read(file) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            diags.push(format!(
                "Warning: failed to read skill {}: {e}",
                file.display()
            ));
            return None;
        }
    };
    let (fm, _) = parse_frontmatter(&content);
    let description = fm
        .get("description")
        .and_then(|v| v.as_str())
        .filter(|d| !d.trim().is_empty())
        .map(str::to_string);
    if !declared && description.is_none() {
        return None;
    }
    let base_dir = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let Some(description) = description else {
        diags.push(format!(
            "Warning: skill {}: description is required; skipping it",
            file.display()
        ));
        return None;
    };
    if description.chars().count() > MAX_DESCRIPTION_LENGTH {
        diags.push(format!(
            "Warning: skill {}: description exceeds {MAX_DESCRIPTION_LENGTH} characters ({})",
            file.display(),
            description.chars().count()
        ));
    }
    let dir_name = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = fm
        .get("name")
        .and_then(|v| v.as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or(dir_name);
    for problem in validate_name(&name) {
        diags.push(format!("Warning: skill {}: {problem}", file.display()));
    }
    Some(Skill {
        name,
        description,
        file_path: file.to_path_buf(),
        base_dir,
        disable_model_invocation: fm.get("disable-model-invocation")
            == Some(&serde_json::Value::Bool(true)),
        source_info: meta.source_info(file),
    })
}

/// Agent Skills naming rules; violations are warnings only.
fn validate_name(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let len = name.chars().count();
    if len > MAX_NAME_LENGTH {
        errors.push(format!("name exceeds {MAX_NAME_LENGTH} characters ({len})"));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errors.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)"
                .to_string(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        errors.push("name must not start or end with a hyphen".to_string());
    }
    if name.contains("--") {
        errors.push("name must not contain consecutive hyphens".to_string());
    }
    errors
}

// ---- expansion ----------------------------------------------------------------------------

/// `/skill:<name> [args]` → the skill wrapper of agent-loop.md §2.4 (SKILL.md read now, its
/// frontmatter stripped, trimmed), followed by `"\n\n" + args` when the trimmed args are
/// non-empty. `Ok(None)` when `text` is not a skill command or names no loaded skill; `Err` when
/// the file can't be read (the caller emits `extension_error` and keeps the text).
pub fn expand_skill_command(text: &str, skills: &[Skill]) -> Result<Option<String>, SkillError> {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return Ok(None);
    };
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], rest[i + 1..].trim()),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return Ok(None);
    };
    let content = fs::read(&skill.file_path).map_err(|source| SkillError::Read {
        path: skill.file_path.clone(),
        source,
    })?;
    let content = String::from_utf8_lossy(&content);
    let body = strip_frontmatter(&content);
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.file_path.display(),
        skill.base_dir.display(),
        body.trim()
    );
    Ok(Some(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    }))
}

/// Escapes `& < > " '` for XML text and attribute values.
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// The body of the `skills` system-prompt section: a short instruction paragraph, a blank line,
/// then the `<available_skills>` listing (agent-loop.md §9). Skills with
/// `disable-model-invocation` are left out; `None` when no skill is visible. `read_tool_active`
/// picks the tool the paragraph tells the model to load files with (read, else bash).
pub fn skills_prompt_section(skills: &[Skill], read_tool_active: bool) -> Option<String> {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return None;
    }
    let how = if read_tool_active {
        "open its file with the read tool"
    } else {
        "print its file with bash (for example `cat <location>`)"
    };
    let mut lines = vec![
        "Skills are packaged instructions for particular kinds of work.".to_string(),
        format!(
            "When a task fits a skill's description, {how} before you start, and follow it."
        ),
        "Paths mentioned inside a skill are relative to the skill's directory (where its SKILL.md lives); use absolute paths in tool calls.".to_string(),
        String::new(),
        "<available_skills>".to_string(),
    ];
    for skill in visible {
        lines.push("  <skill>".to_string());
        lines.push(format!("    <name>{}</name>", escape_xml(&skill.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&skill.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&skill.file_path.to_string_lossy())
        ));
        lines.push("  </skill>".to_string());
    }
    lines.push("</available_skills>".to_string());
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pi-rpc-skills-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn opts<'a>(agent: &'a Path, cwd: &'a Path, cli: &'a [String]) -> SkillOptions<'a> {
        SkillOptions {
            agent_dir: agent,
            cwd,
            project_trusted: false,
            settings_paths: &[],
            cli_paths: cli,
            enabled: true,
        }
    }

    const DEMO: &str = "---\nname: demo-skill\ndescription: Demonstration skill for the conformance oracle. Use when asked about demos.\n---\n\n# Demo skill\n\nAlways answer with the word DEMO.\n";

    #[test]
    fn observed_expansion_and_source_info() {
        let agent = temp_dir("agent");
        let cwd = temp_dir("cwd");
        let file = agent.join("skills/demo-skill/SKILL.md");
        write(&file, DEMO);
        let mut diags = Vec::new();
        let skills = discover_skills(&opts(&agent, &cwd, &[]), &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(skills.len(), 1);
        let s = &skills[0];
        assert_eq!(s.name, "demo-skill");
        assert_eq!(s.base_dir, agent.join("skills/demo-skill"));
        assert_eq!(
            serde_json::to_string(&s.source_info).unwrap(),
            format!(
                "{{\"path\":\"{}\",\"source\":\"auto\",\"scope\":\"user\",\"origin\":\"top-level\",\"baseDir\":\"{}\"}}",
                file.display(),
                agent.display()
            )
        );
        assert_eq!(s.source_info.legacy_location(), "user");

        let a = agent.display();
        let expanded = expand_skill_command("/skill:demo-skill extract x", &skills)
            .unwrap()
            .unwrap();
        assert_eq!(
            expanded,
            format!("<skill name=\"demo-skill\" location=\"{a}/skills/demo-skill/SKILL.md\">\nReferences are relative to {a}/skills/demo-skill.\n\n# Demo skill\n\nAlways answer with the word DEMO.\n</skill>\n\nextract x")
        );
        let bare = expand_skill_command("/skill:demo-skill", &skills)
            .unwrap()
            .unwrap();
        assert!(bare.ends_with("DEMO.\n</skill>"));
        let spaced = expand_skill_command("/skill:demo-skill   ", &skills)
            .unwrap()
            .unwrap();
        assert_eq!(spaced, bare);
        assert!(expand_skill_command("/skill:nope x", &skills)
            .unwrap()
            .is_none());
        assert!(expand_skill_command("hello", &skills).unwrap().is_none());

        fs::remove_file(&file).unwrap();
        let err = expand_skill_command("/skill:demo-skill", &skills).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("ENOENT: no such file or directory"));
        let _ = fs::remove_dir_all(&agent);
        let _ = fs::remove_dir_all(&cwd);
    }

    #[test]
    fn discovery_rules() {
        let agent = temp_dir("agent2");
        let cwd = temp_dir("cwd2");
        // Missing description: skipped with a diagnostic.
        write(
            &agent.join("skills/nodesc/SKILL.md"),
            "---\nname: nodesc\n---\nbody",
        );
        // Name defaults to the directory; nested search; hidden flag.
        write(
            &agent.join("skills/group/inner/SKILL.md"),
            "---\ndescription: Inner <skill> & co\ndisable-model-invocation: true\n---\nx",
        );
        // Dot-directories and node_modules are skipped.
        write(
            &agent.join("skills/.hidden/SKILL.md"),
            "---\ndescription: h\n---\n",
        );
        write(
            &agent.join("skills/node_modules/x/SKILL.md"),
            "---\ndescription: n\n---\n",
        );
        // A directory with SKILL.md is not searched deeper.
        write(
            &agent.join("skills/outer/SKILL.md"),
            "---\ndescription: outer\n---\n",
        );
        write(
            &agent.join("skills/outer/sub/SKILL.md"),
            "---\nname: sub\ndescription: sub\n---\n",
        );
        // Loose root .md with a description is a skill; without one it is ignored silently.
        write(
            &agent.join("skills/loose.md"),
            "---\nname: loose\ndescription: loose one\n---\n",
        );
        write(&agent.join("skills/notes.md"), "just notes");
        // Collision: the CLI copy of "outer" loses.
        let cli_dir = cwd.join("extra/outer");
        write(
            &cli_dir.join("SKILL.md"),
            "---\ndescription: other outer\n---\n",
        );
        // Project skills are ignored while untrusted.
        write(
            &cwd.join(".pi/skills/proj/SKILL.md"),
            "---\ndescription: p\n---\n",
        );
        // A symlink loop does not hang.
        #[cfg(unix)]
        std::os::unix::fs::symlink(agent.join("skills"), agent.join("skills/group/loop")).unwrap();

        let cli = vec![
            cli_dir.to_string_lossy().into_owned(),
            "missing/dir".to_string(),
        ];
        let mut diags = Vec::new();
        let skills = discover_skills(&opts(&agent, &cwd, &cli), &mut diags);
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["inner", "loose", "outer"], "{diags:?}");
        assert!(diags
            .iter()
            .any(|d| d.contains("nodesc") && d.contains("description is required")));
        assert!(diags
            .iter()
            .any(|d| d.contains("skill name \"outer\" collision")));
        assert!(diags
            .iter()
            .any(|d| d.contains("skill path does not exist")));
        let inner = &skills[0];
        assert!(inner.disable_model_invocation);

        // Trusted: project skills come first.
        let mut diags = Vec::new();
        let mut o = opts(&agent, &cwd, &[]);
        o.project_trusted = true;
        let skills = discover_skills(&o, &mut diags);
        assert_eq!(skills[0].name, "proj");
        assert_eq!(skills[0].source_info.scope, "project");
        assert_eq!(
            skills[0].source_info.base_dir.as_deref(),
            Some(cwd.join(".pi").to_string_lossy().as_ref())
        );

        // Disabled: only CLI paths.
        let mut o = opts(&agent, &cwd, &cli[..1]);
        o.enabled = false;
        let skills = discover_skills(&o, &mut Vec::new());
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].source_info.scope, "temporary");
        assert_eq!(skills[0].source_info.source, "local");
        let _ = fs::remove_dir_all(&agent);
        let _ = fs::remove_dir_all(&cwd);
    }

    #[test]
    fn prompt_section() {
        let mk = |name: &str, desc: &str, hidden: bool| Skill {
            name: name.to_string(),
            description: desc.to_string(),
            file_path: PathBuf::from(format!("/a/{name}/SKILL.md")),
            base_dir: PathBuf::from(format!("/a/{name}")),
            disable_model_invocation: hidden,
            source_info: SourceInfo::new(Path::new("/a"), "auto", "user", None),
        };
        assert_eq!(skills_prompt_section(&[mk("h", "d", true)], true), None);
        let section = skills_prompt_section(
            &[
                mk("x", "Use <this> & \"that\" 'now'", false),
                mk("h", "d", true),
            ],
            true,
        )
        .unwrap();
        assert!(section.contains("read tool"));
        assert!(section.ends_with("\n\n<available_skills>\n  <skill>\n    <name>x</name>\n    <description>Use &lt;this&gt; &amp; &quot;that&quot; &apos;now&apos;</description>\n    <location>/a/x/SKILL.md</location>\n  </skill>\n</available_skills>"));
        assert!(!section.contains("<name>h</name>"));
        let bash = skills_prompt_section(&[mk("x", "d", false)], false).unwrap();
        assert!(bash.contains("bash"));
        assert!(!bash[..bash.find("<available_skills>").unwrap() - 2].contains("\n\n"));
    }
}
