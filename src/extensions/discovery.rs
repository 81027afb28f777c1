//! Which extensions a start-up configures, in load order (`extensions.md` §A2, §B2).
//!
//! Sources, in order: `-e` paths; the trusted project's settings `extensions` entries; the
//! trusted project's `.pi/extensions/`; the user's settings `extensions` entries; the agent
//! dir's `extensions/`; the `packages` setting. `--no-extensions` keeps only the `-e` paths. A
//! folder is scanned one level deep, names in byte order. The same path is one unit.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::LoadFailure;
use crate::util::resolve_path;

/// What runs a unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitKind {
    /// A `*.ext.json` manifest naming a process (pi-rpc's extension protocol).
    Manifest,
    /// An executable file started as a process extension.
    Executable,
    /// A `*.ts` / `*.js` module, which needs the Node extension host.
    Node,
    /// An entry of the `packages` setting (npm or git package sources).
    Package,
    /// A file that is none of the above (pi would try to import it as a module).
    Other,
}

/// Where a unit was configured (`sourceInfo`'s `source` and `scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `-e`: `source:"cli"`, `scope:"temporary"`.
    Cli,
    /// A settings entry: `source:"local"`, `scope` project or user.
    ProjectSettings,
    UserSettings,
    /// Found in an `extensions/` folder: `source:"auto"`.
    ProjectFolder,
    UserFolder,
    /// The `packages` setting: `origin:"package"`.
    Package,
}

/// One extension to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Absolute path of the file that defines it (a directory's `index.ts`, a manifest...); for
    /// a package, its source string.
    pub path: PathBuf,
    pub kind: UnitKind,
    pub source: Source,
}

/// What discovery reads.
pub struct DiscoveryOptions<'a> {
    /// `-e` values as given.
    pub cli_paths: &'a [String],
    /// `--no-extensions`.
    pub no_extensions: bool,
    /// Whether the project is trusted (its settings and folder count).
    pub project_trusted: bool,
    pub cwd: &'a Path,
    pub agent_dir: &'a Path,
    /// Resolved `extensions` settings entries: (trusted project's, user's).
    pub settings_paths: (Vec<String>, Vec<String>),
    /// The `packages` setting's entries (sources as written).
    pub packages: Vec<String>,
}

/// The configured units in load order, or the failure pi reports for an `-e` path that does not
/// exist.
pub fn discover(opts: &DiscoveryOptions<'_>) -> Result<Vec<Unit>, LoadFailure> {
    let mut units: Vec<Unit> = Vec::new();
    let mut push = |found: Vec<(PathBuf, UnitKind)>, source: Source| {
        for (path, kind) in found {
            if !units.iter().any(|u| u.path == path) {
                units.push(Unit { path, kind, source });
            }
        }
    };
    for p in opts.cli_paths {
        let abs = resolve_path(opts.cwd, p);
        if std::fs::metadata(&abs).is_err() {
            let shown = abs.to_string_lossy().into_owned();
            return Err(LoadFailure {
                message: format!("Extension path does not exist: {shown}"),
                path: shown,
            });
        }
        push(path_units(&abs), Source::Cli);
    }
    if opts.no_extensions {
        return Ok(units);
    }
    let settings_units = |entries: &[String]| -> Vec<(PathBuf, UnitKind)> {
        // A settings entry that does not exist is skipped, as pi skips it.
        entries
            .iter()
            .map(PathBuf::from)
            .filter(|p| std::fs::metadata(p).is_ok())
            .flat_map(|p| path_units(&p))
            .collect()
    };
    if opts.project_trusted {
        push(
            settings_units(&opts.settings_paths.0),
            Source::ProjectSettings,
        );
        let dir = opts.cwd.join(".pi").join("extensions");
        push(scan_folder(&dir), Source::ProjectFolder);
    }
    push(settings_units(&opts.settings_paths.1), Source::UserSettings);
    push(
        scan_folder(&opts.agent_dir.join("extensions")),
        Source::UserFolder,
    );
    push(
        opts.packages
            .iter()
            .map(|p| (PathBuf::from(p), UnitKind::Package))
            .collect(),
        Source::Package,
    );
    Ok(units)
}

/// A configured path: a file is one unit; a folder is an extension folder (§A2's subdirectory
/// rules).
fn path_units(p: &Path) -> Vec<(PathBuf, UnitKind)> {
    if p.is_dir() {
        let found = dir_units(p);
        if found.is_empty() {
            // pi would fail to import the folder; so does this (never silently nothing).
            return vec![(p.to_path_buf(), UnitKind::Other)];
        }
        return found;
    }
    vec![(p.to_path_buf(), file_kind(p).unwrap_or(UnitKind::Other))]
}

/// The kind of a file found in an extensions folder, `None` for files that are ignored there.
fn file_kind(p: &Path) -> Option<UnitKind> {
    let name = p.file_name()?.to_string_lossy();
    if name.ends_with(".ext.json") {
        return Some(UnitKind::Manifest);
    }
    if name.ends_with(".ts") || name.ends_with(".js") {
        return Some(UnitKind::Node);
    }
    if name.starts_with('.') || name.ends_with(".json") {
        return None;
    }
    is_executable(p).then_some(UnitKind::Executable)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One level of an `extensions/` folder, names in byte order.
fn scan_folder(dir: &Path) -> Vec<(PathBuf, UnitKind)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    names.sort_by(|a, b| {
        a.file_name()
            .map(|n| n.as_encoded_bytes().to_vec())
            .cmp(&b.file_name().map(|n| n.as_encoded_bytes().to_vec()))
    });
    let mut out = Vec::new();
    for p in names {
        if p.is_dir() {
            out.extend(dir_units(&p));
        } else if let Some(kind) = file_kind(&p) {
            out.push((p, kind));
        }
    }
    out
}

/// An extension folder: `index.ext.json`, else `package.json`'s `pi.extensions`, else
/// `index.ts`, else `index.js`.
fn dir_units(dir: &Path) -> Vec<(PathBuf, UnitKind)> {
    let manifest = dir.join("index.ext.json");
    if manifest.is_file() {
        return vec![(manifest, UnitKind::Manifest)];
    }
    // Entries that exist; when none does, the index files decide (pi's `resolveExtensionEntries`).
    let listed: Vec<(PathBuf, UnitKind)> = package_entries(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| {
            let kind = file_kind(&p).unwrap_or(UnitKind::Other);
            (p, kind)
        })
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    for index in ["index.ts", "index.js"] {
        let p = dir.join(index);
        if p.is_file() {
            return vec![(p, UnitKind::Node)];
        }
    }
    Vec::new()
}

/// `package.json`'s `pi.extensions` paths, resolved against the folder.
fn package_entries(dir: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let list = v.get("pi")?.get("extensions")?.as_array()?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(|e| resolve_path(dir, e))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    struct Tmp(PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tmp() -> Tmp {
        let p = std::env::temp_dir().join(format!("pi-rpc-ext-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn opts<'a>(cwd: &'a Path, agent: &'a Path, cli: &'a [String]) -> DiscoveryOptions<'a> {
        DiscoveryOptions {
            cli_paths: cli,
            no_extensions: false,
            project_trusted: false,
            cwd,
            agent_dir: agent,
            settings_paths: (Vec::new(), Vec::new()),
            packages: Vec::new(),
        }
    }

    #[test]
    fn sources_come_in_pis_order_and_folders_in_byte_order() {
        let t = tmp();
        let (cwd, agent) = (t.0.join("cwd"), t.0.join("agent"));
        write(&cwd.join("gate.ts"), "");
        write(&cwd.join(".pi/extensions/p.ts"), "");
        write(&cwd.join("proj-setting.js"), "");
        write(&agent.join("extensions/b.ts"), "");
        write(&agent.join("extensions/a.ext.json"), "{}");
        write(&agent.join("extensions/notes.md"), "");
        // pi loads dot-files too (`isExtensionFile` looks at the extension only).
        write(&agent.join("extensions/.hidden.ts"), "");
        write(&agent.join("extensions/Z/index.js"), "");
        write(
            &agent.join("extensions/pkg/package.json"),
            r#"{"pi":{"extensions":["./x.ts","./gone.ts"]}}"#,
        );
        write(&agent.join("extensions/pkg/x.ts"), "");
        write(&agent.join("extensions/both/index.ts"), "");
        write(&agent.join("extensions/both/index.ext.json"), "{}");
        write(&agent.join("extensions/run"), "#!/bin/sh\n");
        std::fs::set_permissions(
            agent.join("extensions/run"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        write(&agent.join("user.ts"), "");
        let cli = vec!["gate.ts".to_string()];
        let mut o = opts(&cwd, &agent, &cli);
        o.project_trusted = true;
        o.settings_paths = (
            vec![cwd.join("proj-setting.js").to_string_lossy().into_owned()],
            vec![
                agent.join("user.ts").to_string_lossy().into_owned(),
                agent.join("missing.ts").to_string_lossy().into_owned(),
            ],
        );
        o.packages = vec!["npm:some-pkg".into()];
        let units = discover(&o).unwrap();
        let got: Vec<(String, UnitKind, Source)> = units
            .iter()
            .map(|u| {
                let p = u.path.to_string_lossy();
                let p = p
                    .strip_prefix(&*t.0.to_string_lossy())
                    .map(str::to_string)
                    .unwrap_or(p.into_owned());
                (p, u.kind.clone(), u.source)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("/cwd/gate.ts".into(), UnitKind::Node, Source::Cli),
                (
                    "/cwd/proj-setting.js".into(),
                    UnitKind::Node,
                    Source::ProjectSettings
                ),
                (
                    "/cwd/.pi/extensions/p.ts".into(),
                    UnitKind::Node,
                    Source::ProjectFolder
                ),
                (
                    "/agent/user.ts".into(),
                    UnitKind::Node,
                    Source::UserSettings
                ),
                (
                    "/agent/extensions/.hidden.ts".into(),
                    UnitKind::Node,
                    Source::UserFolder
                ),
                (
                    "/agent/extensions/Z/index.js".into(),
                    UnitKind::Node,
                    Source::UserFolder
                ),
                (
                    "/agent/extensions/a.ext.json".into(),
                    UnitKind::Manifest,
                    Source::UserFolder
                ),
                (
                    "/agent/extensions/b.ts".into(),
                    UnitKind::Node,
                    Source::UserFolder
                ),
                (
                    "/agent/extensions/both/index.ext.json".into(),
                    UnitKind::Manifest,
                    Source::UserFolder
                ),
                (
                    "/agent/extensions/pkg/x.ts".into(),
                    UnitKind::Node,
                    Source::UserFolder
                ),
                (
                    "/agent/extensions/run".into(),
                    UnitKind::Executable,
                    Source::UserFolder
                ),
                ("npm:some-pkg".into(), UnitKind::Package, Source::Package),
            ]
        );
    }

    #[test]
    fn untrusted_project_and_no_extensions_keep_only_what_they_should() {
        let t = tmp();
        let (cwd, agent) = (t.0.join("cwd"), t.0.join("agent"));
        write(&cwd.join(".pi/extensions/p.ts"), "");
        write(&agent.join("extensions/u.ts"), "");
        write(&cwd.join("e.ts"), "");
        let none: Vec<String> = Vec::new();
        let units = discover(&opts(&cwd, &agent, &none)).unwrap();
        assert_eq!(units.len(), 1);
        assert_eq!(units[0].path, agent.join("extensions/u.ts"));
        let cli = vec!["e.ts".to_string(), "./e.ts".to_string()];
        let mut o = opts(&cwd, &agent, &cli);
        o.no_extensions = true;
        o.project_trusted = true;
        let units = discover(&o).unwrap();
        assert_eq!(units.len(), 1, "the same path is one unit");
        assert_eq!(units[0].path, cwd.join("e.ts"));
    }

    #[test]
    fn a_missing_cli_path_is_pis_failure() {
        let t = tmp();
        let cli = vec!["nope.ts".to_string()];
        let err = discover(&opts(&t.0, &t.0, &cli)).unwrap_err();
        let abs = t.0.join("nope.ts").to_string_lossy().into_owned();
        assert_eq!(
            err.stderr_lines(),
            [
                format!("Error: Failed to load extension \"{abs}\": Extension path does not exist: {abs}"),
                "Hint: Start without extensions using \"pi-rpc --no-extensions\".".to_string()
            ]
        );
    }
}
