//! The optional Node extension host (`extensions.md` §B15): one Node process that loads the
//! user's unchanged pi `.ts` / `.js` extensions with pi's own loader and `ExtensionRunner`, taken
//! from the user's installed pi package, and speaks protocol 1 for all of them.
//!
//! This module decides whether the host is on (setting or environment), finds Node and checks
//! its version, finds the pi package, and writes the embedded script `pi-ext-host.mjs` to a
//! private cache file named by its content hash. It never runs on the default path: without a
//! `.ts` / `.js` unit nothing here is called. Anything missing is a load failure of the unit
//! whose text says what is missing and how to enable the host — a TypeScript permission gate is
//! never silently skipped.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::Launch;

/// The host script, embedded in the binary.
pub(crate) const SCRIPT: &str = include_str!("pi-ext-host.mjs");

/// pi's `engines.node`: the oldest Node the host runs on.
const MIN_NODE: (u64, u64, u64) = (22, 19, 0);

/// The pi package's `package.json` name.
const PI_PACKAGE: &str = "@earendil-works/pi-coding-agent";

/// How to enable the host, appended to the texts of a disabled host.
const HOW_TO_ENABLE: &str =
    "set piRpc.nodeExtensionHost in settings.json or PI_RPC_NODE_EXTENSION_HOST=1";

/// Whether the host is on, and what the configuration names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum NodeHostSetting {
    #[default]
    Off,
    On {
        /// The setting's `node`.
        node: Option<String>,
        /// The setting's `piPackageDir`.
        pi_package_dir: Option<PathBuf>,
    },
}

impl NodeHostSetting {
    /// Reads `piRpc.nodeExtensionHost` of the global settings (`true`, or an object
    /// `{node, piPackageDir}`) and `PI_RPC_NODE_EXTENSION_HOST` (`1` on, `0` off, overriding the
    /// setting). `base` resolves a relative `piPackageDir` (the agent dir).
    pub(crate) fn read(setting: Option<&Value>, env_flag: Option<&str>, base: &Path) -> Self {
        let from_setting = match setting {
            Some(Value::Bool(true)) => NodeHostSetting::On {
                node: None,
                pi_package_dir: None,
            },
            Some(Value::Object(m)) => NodeHostSetting::On {
                node: m
                    .get("node")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                pi_package_dir: m
                    .get("piPackageDir")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(|p| crate::util::resolve_path(base, p)),
            },
            _ => NodeHostSetting::Off,
        };
        match env_flag.map(str::trim) {
            Some("0") | Some("false") => NodeHostSetting::Off,
            Some("1") | Some("true") => match from_setting {
                NodeHostSetting::Off => NodeHostSetting::On {
                    node: None,
                    pi_package_dir: None,
                },
                on => on,
            },
            _ => from_setting,
        }
    }
}

/// Where the host looks for things outside the configuration (the process environment in
/// production; explicit in tests).
#[derive(Clone, Debug, Default)]
pub(crate) struct Lookup {
    /// `PI_RPC_NODE`.
    pub node_env: Option<String>,
    /// `PI_PACKAGE_DIR`.
    pub package_dir_env: Option<PathBuf>,
    /// `PATH`.
    pub path: Option<std::ffi::OsString>,
    /// The directory the script is written to.
    pub cache_dir: PathBuf,
}

impl Lookup {
    /// From the process environment; the cache is `$XDG_CACHE_HOME/pi-rpc`, else
    /// `~/.cache/pi-rpc`, else `<agent dir>/cache`.
    pub(crate) fn from_env(agent_dir: &Path) -> Lookup {
        let non_empty = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let cache_dir = non_empty("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| crate::util::home_dir().map(|h| h.join(".cache")))
            .map(|c| c.join("pi-rpc"))
            .unwrap_or_else(|| agent_dir.join("cache"));
        Lookup {
            node_env: non_empty("PI_RPC_NODE"),
            package_dir_env: non_empty("PI_PACKAGE_DIR").map(PathBuf::from),
            path: std::env::var_os("PATH"),
            cache_dir,
        }
    }
}

/// How to start the host, once everything it needs was found.
pub(crate) fn prepare(setting: &NodeHostSetting, lookup: &Lookup) -> Result<Launch, String> {
    let NodeHostSetting::On {
        node,
        pi_package_dir,
    } = setting
    else {
        return Err(format!(
            "TypeScript/JavaScript extensions need the Node extension host ({HOW_TO_ENABLE})"
        ));
    };
    let node = node
        .clone()
        .or_else(|| lookup.node_env.clone())
        .unwrap_or_else(|| "node".to_string());
    check_node(&node, lookup)?;
    let package = find_package(pi_package_dir.as_deref(), lookup)?;
    let script = write_script(&lookup.cache_dir)?;
    Ok(Launch {
        argv: vec![
            node,
            script.to_string_lossy().into_owned(),
            package.to_string_lossy().into_owned(),
        ],
        env: Vec::new(),
    })
}

/// Runs `node --version` and checks it against [`MIN_NODE`].
fn check_node(node: &str, lookup: &Lookup) -> Result<(), String> {
    let fix = "install Node.js 22.19 or later, or name it with piRpc.nodeExtensionHost.node or PI_RPC_NODE";
    let mut command = std::process::Command::new(node);
    command.arg("--version").stdin(std::process::Stdio::null());
    if let Some(path) = &lookup.path {
        command.env("PATH", path);
    }
    let output = command.output().map_err(|e| {
        format!("the Node extension host needs Node.js, but `{node}` cannot be run ({e}); {fix}")
    })?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let version = parse_version(&text).ok_or_else(|| {
        format!(
            "the Node extension host needs Node.js, but `{node} --version` printed {text:?}; {fix}"
        )
    })?;
    if version < MIN_NODE {
        let (a, b, c) = MIN_NODE;
        return Err(format!(
            "the Node extension host needs Node.js {a}.{b}.{c} or later, but `{node}` is {text}; {fix}"
        ));
    }
    Ok(())
}

/// `v22.19.0` → (22, 19, 0).
pub(crate) fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let t = text.trim().strip_prefix('v').unwrap_or(text.trim());
    let mut parts = t.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch_text = parts.next()?;
    let digits: String = patch_text
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor, digits.parse().ok()?))
}

/// The pi package: the setting's `piPackageDir`, else `PI_PACKAGE_DIR`, else the `pi`
/// executable on `PATH` followed through symlinks up to the directory whose `package.json` is
/// named `@earendil-works/pi-coding-agent`.
fn find_package(configured: Option<&Path>, lookup: &Lookup) -> Result<PathBuf, String> {
    let fix = "install pi (npm install -g @earendil-works/pi-coding-agent), or name its package \
               directory with piRpc.nodeExtensionHost.piPackageDir or PI_PACKAGE_DIR";
    if let Some((dir, from)) = configured
        .map(|d| (d.to_path_buf(), "piRpc.nodeExtensionHost.piPackageDir"))
        .or_else(|| {
            lookup
                .package_dir_env
                .clone()
                .map(|d| (d, "PI_PACKAGE_DIR"))
        })
    {
        if is_pi_package(&dir) {
            return Ok(dir);
        }
        return Err(format!(
            "the Node extension host needs the pi package ({PI_PACKAGE}), but {from} names {}, \
             which has no package.json of that name; {fix}",
            dir.display()
        ));
    }
    let pi = lookup.path.as_ref().and_then(|p| {
        std::env::split_paths(p)
            .map(|d| d.join("pi"))
            .find(|c| c.is_file())
    });
    if let Some(pi) = pi {
        if let Ok(real) = std::fs::canonicalize(&pi) {
            if let Some(dir) = real.ancestors().skip(1).find(|d| is_pi_package(d)) {
                return Ok(dir.to_path_buf());
            }
        }
        return Err(format!(
            "the Node extension host needs the pi package ({PI_PACKAGE}), but {} is not inside \
             it; {fix}",
            pi.display()
        ));
    }
    Err(format!(
        "the Node extension host needs the pi package ({PI_PACKAGE}), but pi was not found on \
         PATH; {fix}"
    ))
}

fn is_pi_package(dir: &Path) -> bool {
    std::fs::read(dir.join("package.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| v.get("name").and_then(Value::as_str) == Some(PI_PACKAGE))
}

/// Writes [`SCRIPT`] to `<dir>/pi-ext-host-<hash>.mjs` (private: the directory 0700, the file
/// 0600, written to a temporary name and renamed), unless a file of that name with that
/// content is already there.
pub(crate) fn write_script(dir: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let digest = ring::digest::digest(&ring::digest::SHA256, SCRIPT.as_bytes());
    let hash: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = dir.join(format!("pi-ext-host-{hash}.mjs"));
    if std::fs::read(&path).is_ok_and(|b| b == SCRIPT.as_bytes()) {
        return Ok(path);
    }
    let fail = |e: std::io::Error| {
        format!(
            "the Node extension host cannot write its script to {}: {e}",
            dir.display()
        )
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(fail)?;
    let tmp = dir.join(format!(".pi-ext-host-{hash}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(SCRIPT.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_setting_and_the_environment_switch_the_host() {
        let base = Path::new("/agent");
        let on = |node: Option<&str>, dir: Option<&str>| NodeHostSetting::On {
            node: node.map(str::to_string),
            pi_package_dir: dir.map(PathBuf::from),
        };
        assert_eq!(
            NodeHostSetting::read(None, None, base),
            NodeHostSetting::Off
        );
        assert_eq!(
            NodeHostSetting::read(Some(&json!(true)), None, base),
            on(None, None)
        );
        assert_eq!(
            NodeHostSetting::read(Some(&json!(false)), Some("1"), base),
            on(None, None)
        );
        assert_eq!(
            NodeHostSetting::read(Some(&json!(true)), Some("0"), base),
            NodeHostSetting::Off
        );
        assert_eq!(
            NodeHostSetting::read(
                Some(&json!({"node": "/n/node", "piPackageDir": "pi"})),
                Some("1"),
                base
            ),
            on(Some("/n/node"), Some("/agent/pi"))
        );
    }

    #[test]
    fn node_versions_are_read_and_compared() {
        assert_eq!(parse_version("v22.19.0\n"), Some((22, 19, 0)));
        assert_eq!(parse_version("v24.1.3-nightly"), Some((24, 1, 3)));
        assert_eq!(parse_version("hello"), None);
        assert!(parse_version("v22.18.9").is_some_and(|v| v < MIN_NODE));
        assert!(parse_version("v23.0.0").is_some_and(|v| v >= MIN_NODE));
    }

    #[test]
    fn a_disabled_host_says_how_to_enable_it() {
        let e = prepare(&NodeHostSetting::Off, &Lookup::default()).err();
        assert_eq!(
            e.as_deref(),
            Some(
                "TypeScript/JavaScript extensions need the Node extension host \
                 (set piRpc.nodeExtensionHost in settings.json or PI_RPC_NODE_EXTENSION_HOST=1)"
            )
        );
    }

    #[test]
    fn a_missing_node_is_named() {
        let setting = NodeHostSetting::On {
            node: Some("/nonexistent/node-binary".into()),
            pi_package_dir: None,
        };
        let e = prepare(&setting, &Lookup::default())
            .err()
            .unwrap_or_default();
        assert!(
            e.starts_with("the Node extension host needs Node.js, but `/nonexistent/node-binary` cannot be run"),
            "{e}"
        );
    }

    #[test]
    fn the_pi_package_is_found_from_pi_on_path_through_its_symlink() {
        let root = std::env::temp_dir().join(format!("pi-rpc-nodehost-pkg-{}", std::process::id()));
        let pkg = root.join("lib/node_modules/@earendil-works/pi-coding-agent");
        let bin = root.join("bin");
        let made = std::fs::create_dir_all(pkg.join("dist"))
            .and_then(|()| std::fs::create_dir_all(&bin))
            .and_then(|()| std::fs::write(pkg.join("dist/cli.js"), "#!/usr/bin/env node\n"))
            .and_then(|()| {
                std::fs::write(
                    pkg.join("package.json"),
                    r#"{"name": "@earendil-works/pi-coding-agent"}"#,
                )
            })
            .and_then(|()| std::os::unix::fs::symlink(pkg.join("dist/cli.js"), bin.join("pi")));
        assert!(made.is_ok(), "{made:?}");
        let lookup = Lookup {
            path: Some(bin.clone().into_os_string()),
            ..Lookup::default()
        };
        let found = find_package(None, &lookup).ok();
        assert_eq!(found, std::fs::canonicalize(&pkg).ok());
        // A configured directory wins, and a wrong one is named.
        let wrong = find_package(Some(&bin), &lookup).err().unwrap_or_default();
        assert!(
            wrong.contains("piRpc.nodeExtensionHost.piPackageDir names"),
            "{wrong}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_script_is_written_once_by_content() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-nodehost-{}", std::process::id()));
        let a = write_script(&dir).unwrap_or_default();
        let b = write_script(&dir).unwrap_or_default();
        assert_eq!(a, b);
        assert_eq!(std::fs::read_to_string(&a).ok().as_deref(), Some(SCRIPT));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
