//! Context files (`AGENTS.md`, `CLAUDE.md`, ...) for the `project_context` system-prompt
//! section (agent-loop.md §9).

use std::fs;
use std::path::{Path, PathBuf};

use super::skills::absolute;

/// Candidate names per directory, in priority order: the first existing regular file wins.
pub const CONTEXT_FILE_NAMES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// One loaded context file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    /// The file's text, BOM stripped, otherwise verbatim (trailing newline kept).
    pub content: String,
}

/// The context file of one directory, if any. Unreadable candidates are skipped.
fn load_from_dir(dir: &Path) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(bytes) = fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let content = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
        return Some(ContextFile { path, content });
    }
    None
}

/// The context files in prompt order: `<agentDir>/<candidate>` first, then one per directory
/// from the filesystem root down to `cwd` (ancestors first, cwd last), each path once. Empty
/// when `enabled` is false (`--no-context-files`).
pub fn discover_context_files(agent_dir: &Path, cwd: &Path, enabled: bool) -> Vec<ContextFile> {
    if !enabled {
        return Vec::new();
    }
    let mut files: Vec<ContextFile> = Vec::new();
    if let Some(global) = load_from_dir(&absolute(agent_dir)) {
        files.push(global);
    }
    let cwd = absolute(cwd);
    let mut ancestors: Vec<ContextFile> = Vec::new();
    let mut dir = Some(cwd.as_path());
    while let Some(d) = dir {
        if let Some(file) = load_from_dir(d) {
            let seen = files
                .iter()
                .chain(ancestors.iter())
                .any(|f| f.path == file.path);
            if !seen {
                ancestors.push(file);
            }
        }
        dir = d.parent();
    }
    ancestors.reverse();
    files.extend(ancestors);
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pi-rpc-context-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn order_priority_and_dedup() {
        let root = temp_dir("order");
        let agent = root.join("agent");
        let project = root.join("project");
        let cwd = project.join("sub/dir");
        fs::create_dir_all(&agent).unwrap();
        fs::create_dir_all(&cwd).unwrap();
        fs::write(agent.join("AGENTS.md"), "\u{feff}global\n").unwrap();
        fs::write(project.join("CLAUDE.md"), "project claude\n").unwrap();
        fs::write(project.join("AGENTS.md"), "project agents\n").unwrap();
        fs::write(project.join("sub/AGENTS.override.md"), "override").unwrap();
        fs::write(project.join("sub/AGENTS.md"), "shadowed").unwrap();
        // A directory named like a candidate does not count.
        fs::create_dir_all(cwd.join("AGENTS.md")).unwrap();
        fs::write(cwd.join("CLAUDE.MD"), "cwd").unwrap();

        let files = discover_context_files(&agent, &cwd, true);
        let got: Vec<(PathBuf, &str)> = files
            .iter()
            .filter(|f| f.path.starts_with(&root))
            .map(|f| (f.path.clone(), f.content.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (agent.join("AGENTS.md"), "global\n"),
                (project.join("AGENTS.md"), "project agents\n"),
                (project.join("sub/AGENTS.override.md"), "override"),
                (cwd.join("CLAUDE.MD"), "cwd"),
            ]
        );
        assert_eq!(files[0].path, agent.join("AGENTS.md"));

        // The agent dir inside the cwd chain is listed once, as the global file.
        let in_chain = discover_context_files(&project, &cwd, true);
        let count = in_chain
            .iter()
            .filter(|f| f.path == project.join("AGENTS.md"))
            .count();
        assert_eq!(count, 1);
        assert_eq!(in_chain[0].path, project.join("AGENTS.md"));

        assert!(discover_context_files(&agent, &cwd, false).is_empty());
        let _ = fs::remove_dir_all(&root);
    }
}
