//! Value expansion for MCP `env` and `headers` (`mcp.md` §2.5), done when a connection opens:
//! pi's `resolveConfigValueOrThrow` / `resolveHeadersOrThrow` (`dist/core/resolve-config-value.js`).
//!
//! The syntax is the one of provider keys, so this reuses `llm::auth`'s resolver: `!command`
//! runs through `sh -c` (10 s limit, stdout trimmed; failure or empty output is unresolved);
//! otherwise `$NAME` / `${NAME}` insert environment variables, `$$` is `$`, `$!` is `!`,
//! `${not a name}` stays literal, and an unset or empty variable leaves the value unresolved.
//!
//! Unlike auth.json keys, MCP commands are **not** cached: pi's `…OrThrow` functions call
//! `resolveConfigValueUncached`, so every connection attempt runs them again.

use crate::llm::auth::{process_env, resolve_config_value, EnvLookup};

/// Resolves `entries` (env or headers) in order. `kind` is `"env"` or `"header"`. `Err` is the
/// message for the first value that does not resolve, e.g.
/// `Failed to resolve MCP server "<name>" env "<KEY>" from environment variable: <VAR>`.
pub(crate) fn resolve_values(
    server: &str,
    kind: &str,
    entries: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    resolve_values_with(server, kind, entries, &process_env())
}

/// [`resolve_values`] with an injected environment.
fn resolve_values_with(
    server: &str,
    kind: &str,
    entries: &[(String, String)],
    env: &EnvLookup,
) -> Result<Vec<(String, String)>, String> {
    entries
        .iter()
        .map(|(key, value)| {
            let what = format!("MCP server \"{server}\" {kind} \"{key}\"");
            resolve_config_value(value, &what, env, None, None)
                .map(|v| (key.clone(), v))
                .map_err(|e| e.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::auth::fake_env;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn env() -> EnvLookup {
        fake_env(&[("SECRET", "s3cret"), ("EMPTY", ""), ("A_1", "a")])
    }

    fn resolve(kind: &str, items: &[(&str, &str)]) -> Result<Vec<(String, String)>, String> {
        resolve_values_with("srv", kind, &pairs(items), &env())
    }

    #[test]
    fn interpolation() {
        // Observed in mcp_handshake.
        assert_eq!(
            resolve(
                "env",
                &[("T", "${SECRET}"), ("G", "hi $SECRET, $$HOME stays")]
            ),
            Ok(pairs(&[("T", "s3cret"), ("G", "hi s3cret, $HOME stays")]))
        );
        let cases = [
            ("plain", "plain"),
            ("$$", "$"),
            ("$!x", "!x"),
            ("a$!", "a!"),
            ("${not a name}", "${not a name}"),
            ("${1X}", "${1X}"),
            ("${}", "${}"),
            ("${unterminated", "${unterminated"),
            ("$ 1", "$ 1"),
            ("$", "$"),
            ("x${A_1}y$A_1-z", "xaya-z"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(
                resolve("env", &[("K", input)]),
                Ok(pairs(&[("K", want)])),
                "{input:?}"
            );
        }
    }

    #[test]
    fn unresolved_variables() {
        assert_eq!(
            resolve("env", &[("TOKEN", "${MCP_TEST_UNSET_VAR}")]),
            Err("Failed to resolve MCP server \"srv\" env \"TOKEN\" from environment variable: MCP_TEST_UNSET_VAR".into())
        );
        // An empty variable counts as unset.
        assert_eq!(
            resolve("env", &[("K", "x$EMPTY")]),
            Err(
                "Failed to resolve MCP server \"srv\" env \"K\" from environment variable: EMPTY"
                    .into()
            )
        );
        assert_eq!(
            resolve("env", &[("K", "$A_1b")]),
            Err(
                "Failed to resolve MCP server \"srv\" env \"K\" from environment variable: A_1b"
                    .into()
            )
        );
        // Several: each named once, in order of appearance; set ones are not named.
        assert_eq!(
            resolve("env", &[("K", "$B ${SECRET} ${A} $B $EMPTY")]),
            Err("Failed to resolve MCP server \"srv\" env \"K\" from environment variables: B, A, EMPTY".into())
        );
        // Headers say `header`; the first failing entry is reported.
        assert_eq!(
            resolve(
                "header",
                &[("X-Ok", "$SECRET"), ("Authorization", "Bearer ${TOKEN}"), ("X-Later", "$NOPE")]
            ),
            Err("Failed to resolve MCP server \"srv\" header \"Authorization\" from environment variable: TOKEN".into())
        );
    }

    #[test]
    fn commands() {
        assert_eq!(
            resolve(
                "header",
                &[("X", "!printf '  v1 \\n'"), ("Y", "!echo $((1+2))")]
            ),
            Ok(pairs(&[("X", "v1"), ("Y", "3")]))
        );
        for cmd in ["exit 3", "true", "printf '  \\n'"] {
            assert_eq!(
                resolve("env", &[("K", &format!("!{cmd}"))]),
                Err(format!(
                    "Failed to resolve MCP server \"srv\" env \"K\" from shell command: {cmd}"
                )),
            );
        }
        // `$!` at the start is not a command.
        assert_eq!(
            resolve("env", &[("K", "$!echo")]),
            Ok(pairs(&[("K", "!echo")]))
        );
    }

    #[test]
    fn commands_are_not_cached() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-mcp-expand-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let counter = dir.join("n");
        let cmd = format!(
            "!echo x >> '{p}'; wc -l < '{p}' | tr -d ' '",
            p = counter.display()
        );
        let first = resolve("env", &[("K", &cmd)]).unwrap();
        let second = resolve("env", &[("K", &cmd)]).unwrap();
        assert_eq!(first, pairs(&[("K", "1")]));
        assert_eq!(second, pairs(&[("K", "2")]));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn process_environment() {
        // PATH is set in any test environment; a variable nobody sets is not.
        assert!(resolve_values("s", "env", &pairs(&[("P", "$PATH")])).is_ok());
        assert_eq!(
            resolve_values("s", "env", &pairs(&[("P", "$PI_RPC_MCP_SURELY_UNSET_9F3A")])),
            Err("Failed to resolve MCP server \"s\" env \"P\" from environment variable: PI_RPC_MCP_SURELY_UNSET_9F3A".into())
        );
    }
}
