//! Tool names of MCP tools (`mcp.md` §5.1; pi-mcp `naming.js`, and the name bookkeeping of
//! `extensions/mcp/index.js`): `mcp__<server>__<tool>` with everything outside `[A-Za-z0-9_]` as
//! `_`, and a hash suffix for names that are too long or collide.

use std::collections::{HashMap, HashSet};

/// Provider tool names are limited to 64 characters.
const MAX_TOOL_NAME_LENGTH: usize = 64;

/// Hex digits of the hash suffix.
const HASH_DIGITS: usize = 8;

/// Tool names assigned in one session; a name once given to a (server, raw tool) pair stays with
/// it: another pair that would get it takes the hashed form instead. (As in pi, a later listing
/// in which the pair's tool collides with a sibling hashes it too.)
#[derive(Default)]
pub(crate) struct Names {
    /// Name → the `<server>\0<tool>` it was last assigned to (pi's `toolOwners`).
    owners: HashMap<String, String>,
}

impl Names {
    /// Names for one server's listing, in listing order. `server` is the configured server name
    /// (`my-srv`), `tools` the raw tool names.
    ///
    /// The plain name is `mcp__<server>__<tool>` sanitized. It is replaced by the hashed form
    /// ([`hashed_name`]) when it is longer than 64 characters, when another tool of this
    /// listing sanitizes to the same name (all of them are hashed, whatever their order), when
    /// an earlier tool of this listing already got it (a repeated raw name), or when it belongs
    /// to another (server, tool) pair of this session. A hashed name is not checked again.
    pub(crate) fn assign(&mut self, server: &str, tools: &[String]) -> Vec<String> {
        // pi's `plain`: each distinct raw name once, as it would be named with nothing taken.
        let mut distinct = HashSet::new();
        let mut plain_counts: HashMap<String, usize> = HashMap::new();
        for tool in tools {
            if distinct.insert(tool.as_str()) {
                *plain_counts.entry(untaken_name(server, tool)).or_default() += 1;
            }
        }
        let mut current: HashSet<String> = HashSet::new();
        let mut names = Vec::with_capacity(tools.len());
        for tool in tools {
            let owner = format!("{server}\0{tool}");
            let plain = sanitize(&format!("mcp__{server}__{tool}"));
            let taken = |candidate: &str| {
                self.owners
                    .get(candidate)
                    .is_some_and(|existing| *existing != owner)
                    || current.contains(candidate)
                    || plain_counts.get(candidate).is_some_and(|n| *n > 1)
            };
            let name = if plain.len() <= MAX_TOOL_NAME_LENGTH && !taken(&plain) {
                plain
            } else {
                hashed_name(&plain, server, tool)
            };
            self.owners.insert(name.clone(), owner);
            current.insert(name.clone());
            names.push(name);
        }
        names
    }
}

/// pi's `createMcpToolName(server, tool)` with no name taken: the sanitized name, hashed when
/// too long.
fn untaken_name(server: &str, tool: &str) -> String {
    let plain = sanitize(&format!("mcp__{server}__{tool}"));
    if plain.len() <= MAX_TOOL_NAME_LENGTH {
        plain
    } else {
        hashed_name(&plain, server, tool)
    }
}

/// Every character outside `[A-Za-z0-9_]` as `_`. JavaScript's regex (without the `u` flag)
/// replaces UTF-16 code units, so a character outside the BMP becomes two underscores. The result
/// is ASCII, so its byte length is its JavaScript length.
fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out
}

/// `<first 55 characters of the sanitized name>_<first 8 hex digits of
/// SHA-256(server + "\0" + raw tool)>`: 64 characters at most.
fn hashed_name(sanitized: &str, server: &str, tool: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{server}\0{tool}").as_bytes(),
    );
    let hash: String = digest
        .as_ref()
        .iter()
        .take(HASH_DIGITS / 2)
        .map(|b| format!("{b:02x}"))
        .collect();
    let keep = MAX_TOOL_NAME_LENGTH - HASH_DIGITS - 1;
    // `sanitized` is ASCII, so any byte index is a character boundary.
    let head = sanitized.get(..keep).unwrap_or(sanitized);
    format!("{head}_{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_names_are_sanitized() {
        let mut n = Names::default();
        assert_eq!(
            n.assign("everything", &names(&["get-sum", "echo"])),
            ["mcp__everything__get_sum", "mcp__everything__echo"]
        );
        let mut n = Names::default();
        assert_eq!(
            n.assign("my-srv", &names(&["a.b c", "é", "😀x"])),
            ["mcp__my_srv__a_b_c", "mcp__my_srv___", "mcp__my_srv____x"]
        );
    }

    #[test]
    fn observed_collisions_hash_every_colliding_tool() {
        // Observed with pi 1.6.0 (mcp_handshake).
        let mut n = Names::default();
        assert_eq!(
            n.assign("fake", &names(&["dup-name", "dup.name"])),
            [
                "mcp__fake__dup_name_a1b8a58c",
                "mcp__fake__dup_name_ad4a0f94"
            ]
        );
        assert_eq!(
            n.assign("proj", &names(&["dup-name", "dup.name"])),
            [
                "mcp__proj__dup_name_201cc03d",
                "mcp__proj__dup_name_4ef391ff"
            ]
        );
        // Independent of the order of the listing.
        let mut n = Names::default();
        assert_eq!(
            n.assign("fake", &names(&["dup.name", "dup-name"])),
            [
                "mcp__fake__dup_name_ad4a0f94",
                "mcp__fake__dup_name_a1b8a58c"
            ]
        );
    }

    #[test]
    fn long_names_are_cut_and_hashed() {
        // Hashes as pi-mcp's `createMcpToolName` computes them.
        let mut n = Names::default();
        let got = n.assign("srv", &["a".repeat(60)]);
        assert_eq!(got, [format!("mcp__srv__{}_3d57c3c5", "a".repeat(45))]);
        assert_eq!(got[0].len(), 64);
        // Exactly 64 characters is still plain.
        let tool = "b".repeat(64 - "mcp__srv__".len());
        assert_eq!(
            Names::default().assign("srv", std::slice::from_ref(&tool)),
            [format!("mcp__srv__{tool}")]
        );
        // The cut applies to the sanitized name, the hash to the raw server and tool names.
        let got = Names::default().assign("my-srv", &[format!("{}-x", "c".repeat(60))]);
        assert_eq!(got, [format!("mcp__my_srv__{}_eea63bca", "c".repeat(42))]);
    }

    #[test]
    fn names_stay_with_their_owner() {
        let mut n = Names::default();
        // Two servers whose names sanitize alike (configuration validation forbids it; the
        // session-wide check is what keeps the names apart).
        assert_eq!(n.assign("x-y", &names(&["t"])), ["mcp__x_y__t"]);
        let second = n.assign("x_y", &names(&["t"]));
        assert_ne!(second[0], "mcp__x_y__t");
        assert!(second[0].starts_with("mcp__x_y__t_"));
        // A new listing of the first server keeps its name.
        assert_eq!(
            n.assign("x-y", &names(&["t", "u"])),
            ["mcp__x_y__t", "mcp__x_y__u"]
        );
    }

    #[test]
    fn a_repeated_raw_name_is_hashed_the_second_time() {
        let mut n = Names::default();
        let got = n.assign("s", &names(&["t", "t"]));
        assert_eq!(got, ["mcp__s__t", "mcp__s__t_12dce344"]);
    }

    #[test]
    fn sha256_matches_known_vectors() {
        let hex = |data: &[u8]| -> String {
            ring::digest::digest(&ring::digest::SHA256, data)
                .as_ref()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        assert_eq!(
            hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
