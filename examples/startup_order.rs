//! Regenerates `src/startup_order.ld`, the linker script that groups the functions pi-rpc runs
//! at start-up (see `src/build.rs` for why).
//!
//!     cargo run --release --example startup_order -- --target x86_64-unknown-linux-musl
//!
//! Needs `valgrind` (Debian package `valgrind`). It builds an unstripped release binary into
//! `target/startup-order/`, runs it under callgrind for a few typical starts (with and without
//! `models.json`, with and without a session file, then the first commands a client sends),
//! and writes every function of the binary that ran, in that order, as section patterns.
//! Mangled names keep their paths; the per-build parts (the legacy `17h<hash>E` suffix and
//! LTO's `.NNN` suffixes) become wildcards, so the script keeps matching after rebuilds.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One traced start: extra flags, an optional `models.json`, and the command lines sent.
struct Scenario {
    name: &'static str,
    args: &'static [&'static str],
    models_json: Option<&'static str>,
    commands: &'static [&'static str],
}

const MODELS_JSON: &str = r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"k","models":[{"id":"m","reasoning":true}]}}}"#;

const SCENARIOS: &[Scenario] = &[
    // What examples/bench_startup.rs measures.
    Scenario {
        name: "models-json",
        args: &["--no-session"],
        models_json: Some(MODELS_JSON),
        commands: &[r#"{"id":"1","type":"get_state"}"#],
    },
    Scenario {
        name: "catalog-only",
        args: &[],
        models_json: None,
        commands: &[r#"{"id":"1","type":"get_state"}"#],
    },
    // A built-in provider with a key: its catalog block is parsed at start-up.
    Scenario {
        name: "catalog-provider",
        args: &[],
        models_json: Some(r#"{"providers":{"anthropic":{"apiKey":"k"}}}"#),
        commands: &[r#"{"id":"1","type":"get_state"}"#],
    },
    // What a client usually asks next; placed after the start-up code.
    Scenario {
        name: "first-commands",
        args: &[],
        models_json: Some(MODELS_JSON),
        commands: &[
            r#"{"id":"1","type":"get_state"}"#,
            r#"{"id":"2","type":"get_available_models"}"#,
            r#"{"id":"3","type":"get_commands"}"#,
            r#"{"id":"4","type":"get_messages"}"#,
            r#"{"id":"5","type":"get_session_stats"}"#,
            r#"{"id":"6","type":"get_available_thinking_levels"}"#,
            r#"{"id":"7","type":"set_thinking_level","level":"high"}"#,
        ],
    },
];

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        eprintln!("startup_order: valgrind is needed (apt-get install valgrind)");
        std::process::exit(2);
    }
    // `--target <triple>` (repeatable): also trace the build for that target (the static musl
    // build runs musl's and mimalloc's C and std's musl paths, which the host build does not);
    // the script lists the union, host functions first.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut targets: Vec<Option<String>> = vec![None];
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--target", Some(t)) => {
                targets.push(Some(t.clone()));
                i += 2;
            }
            (other, _) => {
                eprintln!("startup_order: unknown argument {other:?} (expected --target <triple>)");
                std::process::exit(2);
            }
        }
    }
    let bins: Vec<PathBuf> = targets
        .iter()
        .map(|t| build_unstripped(&root, t.as_deref()))
        .collect();
    let work = std::env::temp_dir().join(format!("pi-rpc-startup-order-{}", std::process::id()));
    let mut functions: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for (bin, scenario) in bins
        .iter()
        .flat_map(|b| SCENARIOS.iter().map(move |s| (b, s)))
    {
        let out = trace(bin, &work, scenario);
        let text = std::fs::read_to_string(&out).unwrap_or_else(|e| {
            eprintln!("startup_order: cannot read {}: {e}", out.display());
            std::process::exit(1)
        });
        let before = functions.len();
        for f in executed_functions(&text) {
            if seen.insert(f.clone()) {
                functions.push(f);
            }
        }
        println!(
            "{}: {} new functions",
            scenario.name,
            functions.len() - before
        );
    }
    let _ = std::fs::remove_dir_all(&work);

    let mut patterns = Vec::new();
    let mut seen_patterns = HashSet::new();
    for f in &functions {
        let p = pattern(f);
        if seen_patterns.insert(p.clone()) {
            patterns.push(p);
        }
    }
    let script = render(&patterns);
    let dest = root.join("src").join("startup_order.ld");
    if let Err(e) = std::fs::write(&dest, script) {
        eprintln!("startup_order: cannot write {}: {e}", dest.display());
        std::process::exit(1);
    }
    println!(
        "wrote {} ({} functions, {} patterns)",
        dest.display(),
        functions.len(),
        patterns.len()
    );
}

/// `cargo build --release --bin pi-rpc [--target <triple>]` with symbols kept and the default
/// layout, into `target/startup-order`.
fn build_unstripped(root: &Path, triple: Option<&str>) -> PathBuf {
    let target = root.join("target").join("startup-order");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--bin", "pi-rpc"]);
    if let Some(t) = triple {
        cmd.args(["--target", t]);
    }
    let status = cmd
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_PROFILE_RELEASE_STRIP", "false")
        // Traced without the script: valgrind reads function symbols only inside `.text`, and
        // the script moves the start-up functions into a section of their own.
        .env("PI_RPC_NO_STARTUP_ORDER", "1")
        .status();
    match status {
        Ok(s) if s.success() => match triple {
            Some(t) => target.join(t).join("release").join("pi-rpc"),
            None => target.join("release").join("pi-rpc"),
        },
        other => {
            eprintln!("startup_order: the build failed: {other:?}");
            std::process::exit(1)
        }
    }
}

/// Runs `scenario` under callgrind; returns the profile's path.
fn trace(bin: &Path, work: &Path, scenario: &Scenario) -> PathBuf {
    let dir = work.join(scenario.name);
    let agent = dir.join("agent");
    let cwd = dir.join("cwd");
    for d in [&agent, &cwd] {
        if let Err(e) = std::fs::create_dir_all(d) {
            eprintln!("startup_order: cannot create {}: {e}", d.display());
            std::process::exit(1);
        }
    }
    if let Some(json) = scenario.models_json {
        if let Err(e) = std::fs::write(agent.join("models.json"), json) {
            eprintln!("startup_order: cannot write models.json: {e}");
            std::process::exit(1);
        }
    }
    let out = dir.join("callgrind.out");
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg("--demangle=no")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(bin)
        .args(scenario.args)
        .current_dir(&cwd)
        .env("PI_CODING_AGENT_DIR", &agent)
        .env("HOME", &dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.ends_with("_API_KEY") || key.starts_with("PI_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        eprintln!("startup_order: cannot run valgrind: {e}");
        std::process::exit(1)
    });
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        for line in scenario.commands {
            let _ = writeln!(stdin, "{line}");
        }
    }
    match child.wait() {
        Ok(s) if s.success() => out,
        other => {
            eprintln!("startup_order: {} ended with {other:?}", scenario.name);
            std::process::exit(1)
        }
    }
}

/// The mangled names of the functions of the traced binary (the object whose path ends in
/// `/pi-rpc`) in the order callgrind first lists them. Callgrind compresses names: `fn=(7) name`
/// defines id 7, a later `fn=(7)` refers back; `cfn=` (callee) lines define ids too.
fn executed_functions(profile: &str) -> Vec<String> {
    let mut objects: std::collections::HashMap<String, String> = Default::default();
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let mut current_object = String::new();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for line in profile.lines() {
        let Some((key, rest)) = line.split_once('=') else {
            continue;
        };
        if !matches!(key, "ob" | "cob" | "fn" | "cfn") || !rest.starts_with('(') {
            continue;
        }
        let Some((id, name)) = rest[1..].split_once(')') else {
            continue;
        };
        let name = name.trim_start();
        let table = if key.ends_with("ob") {
            &mut objects
        } else {
            &mut names
        };
        if !name.is_empty() {
            table.insert(id.to_string(), name.to_string());
        }
        let resolved = table.get(id).cloned().unwrap_or_default();
        match key {
            "ob" => current_object = resolved,
            "fn" if current_object.ends_with("/pi-rpc") => {
                // `'2` marks a recursion level, not a different function.
                let base = match resolved.rsplit_once('\'') {
                    Some((b, n)) if n.chars().all(|c| c.is_ascii_digit()) => b.to_string(),
                    _ => resolved,
                };
                if base.starts_with('(') || base.starts_with("0x") || base.is_empty() {
                    continue;
                }
                if seen.insert(base.clone()) {
                    out.push(base);
                }
            }
            _ => {}
        }
    }
    out
}

/// The section-name pattern of a mangled function name: the legacy hash and LTO suffixes
/// (`.123`, `.llvm.456`) become `*`.
fn pattern(name: &str) -> String {
    let mut base = name;
    let mut suffixed = false;
    if let Some((b, tail)) = split_lto_suffix(base) {
        base = b;
        suffixed = !tail.is_empty();
    }
    let legacy_hash = base.len() > 20
        && base.ends_with('E')
        && base[base.len() - 20..].starts_with("17h")
        && base[base.len() - 17..base.len() - 1]
            .chars()
            .all(|c| c.is_ascii_hexdigit());
    if legacy_hash {
        format!("{}17h*", &base[..base.len() - 20])
    } else if suffixed {
        format!("{base}*")
    } else {
        base.to_string()
    }
}

/// Splits `name.123` / `name.llvm.123` into the name and the suffix. Mangled names have no
/// other dot followed only by digits (legacy paths escape `::` as `..` before a letter or digit
/// count, never at the end).
fn split_lto_suffix(name: &str) -> Option<(&str, &str)> {
    let (head, digits) = name.rsplit_once('.')?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let head = head.strip_suffix(".llvm").unwrap_or(head);
    Some((head, &name[head.len()..]))
}

fn render(patterns: &[String]) -> String {
    let mut s = String::from(
        "/* Generated by `cargo run --release --example startup_order`; see src/build.rs.\n   \
         The functions pi-rpc runs from exec to its first answers (start-up first), are\n   \
         placed before the rest of the code so that start-up touches few pages. Legacy hashes\n   \
         and LTO suffixes are wildcards; a pattern that matches nothing is ignored. */\n\
         SECTIONS\n{\n  .text.startup_path :\n  {\n",
    );
    for p in patterns {
        s.push_str(&format!("    *(.text.{p} .text.unlikely.{p})\n"));
    }
    s.push_str("  }\n}\nINSERT BEFORE .text;\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_wildcard_only_the_per_build_parts() {
        assert_eq!(
            pattern("_ZN6pi_rpc3app5build17hcb22aa6b236809a6E"),
            "_ZN6pi_rpc3app5build17h*"
        );
        assert_eq!(
            pattern("_ZN5alloc7raw_vec19RawVec$LT$T$C$A$GT$8grow_one17ha641f068ea7dbe25E.llvm.812"),
            "_ZN5alloc7raw_vec19RawVec$LT$T$C$A$GT$8grow_one17h*"
        );
        let v0 = "_RNvMs5_NtNtCsjrHSEGnQ3l9_3std2io5errorNtB5_5Error4kind";
        assert_eq!(pattern(v0), v0);
        assert_eq!(pattern(&format!("{v0}.1347")), format!("{v0}*"));
        // A legacy path's `..` escape is not a suffix.
        let drop =
            "_ZN4core3ptr45drop_in_place$LT$serde_json..value..Value$GT$17h979324e3667ff87eE";
        assert_eq!(
            pattern(drop),
            "_ZN4core3ptr45drop_in_place$LT$serde_json..value..Value$GT$17h*"
        );
    }

    #[test]
    fn callgrind_names_are_resolved_per_object() {
        let profile = "\
ob=(1) /lib/libc.so.6
fn=(1) memcpy
ob=(2) /tmp/x/release/pi-rpc
fn=(2) main
cfn=(3) _ZN6pi_rpc3app5build17hcb22aa6b236809a6E
calls=1 0
fn=(3)
fn=(4) _ZN3foo3bar17h0123456789abcdefE'2
fn=(5) 0x000000000035e440
ob=(1)
fn=(6) free
fn=(2)
";
        assert_eq!(
            executed_functions(profile),
            [
                "main",
                "_ZN6pi_rpc3app5build17hcb22aa6b236809a6E",
                "_ZN3foo3bar17h0123456789abcdefE"
            ]
        );
    }
}
