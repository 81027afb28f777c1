//! Property tests, continued (issue 17, "keep them out"): session-file loading. Random and
//! mutated JSONL session files, generated from a fixed seed so a failure repeats:
//!
//! - `pi_rpc::session::SessionManager::open` never panics and never hangs (each load runs on
//!   a thread with a deadline); it errors cleanly (a non-empty text) or yields a session whose
//!   tree holds every entry exactly once (reachable from a root), whose `get_tree` and
//!   `get_entries` texts are JSON with as many nodes / entries, whose active branch is a
//!   parent chain without repeats, whose context, stats, fork messages and name can be read,
//!   and which loads again to the same entries;
//! - through the binary, `switch_session` to such a file gets exactly one response and the
//!   process keeps serving: `get_state`, `get_messages`, `get_tree`, `get_entries`,
//!   `get_session_stats`, `get_fork_messages` and `get_last_assistant_text` are answered, once
//!   each, successfully.
//!
//! The files are valid sessions (made up, or pi 1.6.0's own fixtures, some of an old version
//! that is migrated) with lines torn, duplicated (duplicate ids), removed (missing parents),
//! swapped (the header not first), `parentId`s pointed elsewhere (unknown ids, the entry
//! itself, cycles), fields given the wrong type or huge numbers, huge lines, invalid UTF-8,
//! junk lines, broken headers, CRLF or a BOM; and empty, blank or header-only files.
//!
//! The edit matcher and the providers' event state machines are not reachable from here
//! (`pub(crate)`); their properties are unit tests: `src/tools/edit_prop_tests.rs`,
//! `src/llm/prop_tests.rs`.
//!
//! `PI_RPC_PROPERTY_CASES` sets the number of cases (defaults: 400 files loaded, 40 switched to
//! through the binary; what CI runs, a few seconds each); `PI_RPC_PROPERTY_SEED` replays another
//! seed. A longer run:
//! `PI_RPC_PROPERTY_CASES=20000 cargo test --test integration properties_more:: -- --nocapture`.
//!
//! Found and left out of the default runs (each shown by an ignored test with a fixed input):
//! entries on a `parentId` cycle are in no tree; a cycle through the leaf repeats entries on
//! the active branch (and in the context); usage counts near 2^64 overflow the session stats.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use pi_rpc::session::SessionManager;
use serde_json::{json, Value};

use crate::support::{Agent, TempDir};

use crate::support::rng::{cases, seed, Rng};

// ---------------------------------------------------------------------------------------------
// Session files

/// pi 1.6.0's own session files, and an old (v1) one that is migrated on load.
const FIXTURES: &[&str] = &[
    include_str!("../fixtures/pi160_compaction.jsonl"),
    include_str!("../fixtures/pi160_plain_name_image.jsonl"),
    include_str!("../fixtures/pi160_tools_bash_thinking.jsonl"),
    include_str!("../fixtures/pirpc_written.jsonl"),
    include_str!("../fixtures/v1_session.jsonl"),
];

fn text(rng: &mut Rng) -> String {
    (*rng.pick(&["hi", "", "é日本😀", "line\nbreak", "\u{2028}", "ok"])).to_string()
}

fn usage(rng: &mut Rng) -> Value {
    json!({"input": rng.below(5000), "output": rng.below(500), "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": 0, "cost": {"input": 0.01, "output": 0.02, "cacheRead": 0, "cacheWrite": 0, "total": 0.03}})
}

/// A made-up valid v3 session: header, then entries of every type, some branching.
fn made_up_session(rng: &mut Rng, cwd: &str) -> Vec<Value> {
    let mut lines = vec![json!({"type": "session", "version": 3,
        "id": format!("0199aaaa-0000-7000-8000-{:012x}", rng.next() & 0xffff_ffff_ffff),
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd})];
    let mut ids: Vec<String> = Vec::new();
    for i in 0..rng.below(14) {
        let id = format!("{:08x}", rng.next() as u32);
        let parent = match ids.last() {
            None => Value::Null,
            Some(_) if rng.chance(10) => Value::Null,
            Some(_) if rng.chance(4) => json!(rng.pick(&ids)),
            Some(last) => json!(last),
        };
        let ts = format!("2026-01-01T00:{:02}:{:02}.000Z", i / 60, i % 60);
        let ms = 1_767_225_600_000u64 + i as u64 * 1000;
        let any_id = ids.first().cloned().unwrap_or_else(|| id.clone());
        let (kind, fields) = match rng.below(13) {
            0 | 1 => {
                let content = if rng.chance(3) {
                    json!(text(rng))
                } else {
                    json!([{"type": "text", "text": text(rng)}])
                };
                (
                    "message",
                    json!({"message": {"role": "user", "content": content, "timestamp": ms}}),
                )
            }
            2 | 3 => (
                "message",
                json!({"message": {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": text(rng), "thinkingSignature": "sig"},
                    {"type": "text", "text": text(rng)},
                    {"type": "toolCall", "id": "toolu_1", "name": "bash", "arguments": {"command": "ls"}}],
                "api": "anthropic-messages", "provider": "mock", "model": "mock-sonnet",
                "usage": usage(rng), "stopReason": *rng.pick(&["stop", "toolUse", "error", "aborted", "length"]),
                "timestamp": ms}}),
            ),
            4 => (
                "message",
                json!({"message": {"role": "toolResult", "toolCallId": "toolu_1", "toolName": "bash",
                "content": [{"type": "text", "text": text(rng)}], "isError": rng.chance(2), "timestamp": ms}}),
            ),
            5 => (
                "message",
                json!({"message": {"role": "bashExecution", "command": "ls", "output": text(rng),
                "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": ms}}),
            ),
            6 => (
                "model_change",
                json!({"provider": "mock", "modelId": *rng.pick(&["mock-sonnet", "mock-haiku", "gone"])}),
            ),
            7 => (
                "thinking_level_change",
                json!({"thinkingLevel": *rng.pick(&["off", "high", "weird"])}),
            ),
            8 => (
                "compaction",
                json!({"summary": text(rng), "firstKeptEntryId": any_id,
                    "tokensBefore": rng.below(10000), "fromHook": false}),
            ),
            9 => (
                "branch_summary",
                json!({"fromId": any_id, "summary": text(rng)}),
            ),
            10 => (
                "label",
                json!({"targetId": any_id, "label": *rng.pick(&["L", ""])}),
            ),
            11 => ("session_info", json!({"name": text(rng)})),
            _ => {
                let replacement = if rng.chance(2) {
                    Value::Null
                } else {
                    json!({"content": text(rng)})
                };
                (
                    "context_edit",
                    json!({"targetId": any_id, "replacement": replacement}),
                )
            }
        };
        let mut e = json!({"type": kind, "id": id, "parentId": parent, "timestamp": ts});
        for (k, v) in fields.as_object().unwrap() {
            e[k] = v.clone();
        }
        if rng.chance(12) {
            // Extension entries: payload keys first.
            e = json!({"type": "custom", "customType": "ext", "data": {"n": i},
                "id": id, "parentId": parent, "timestamp": ts});
        } else if rng.chance(12) {
            e = json!({"type": "custom_message", "customType": "ext", "content": text(rng),
                "display": true, "id": id, "parentId": parent, "timestamp": ts});
        } else if rng.chance(15) {
            e = json!({"type": "usage", "id": id, "parentId": parent, "timestamp": ts,
                "kind": "summary", "provider": "mock", "model": "mock-sonnet", "usage": usage(rng)});
        }
        ids.push(id);
        lines.push(e);
    }
    lines
}

/// A fixture with its header's cwd replaced.
fn fixture(rng: &mut Rng, cwd: &str) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = rng
        .pick(FIXTURES)
        .lines()
        .map(|l| l.as_bytes().to_vec())
        .collect();
    if let Some(first) = lines.first_mut() {
        if let Ok(mut h) = serde_json::from_slice::<Value>(first) {
            h["cwd"] = json!(cwd);
            *first = h.to_string().into_bytes();
        }
    }
    lines
}

fn ids_of(lines: &[Vec<u8>]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter_map(|v| v.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Paths to every value inside `v`.
fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    let children: Vec<(Value, &Value)> = match v {
        Value::Object(m) => m.iter().map(|(k, c)| (json!(k), c)).collect(),
        Value::Array(a) => a.iter().enumerate().map(|(i, c)| (json!(i), c)).collect(),
        _ => return,
    };
    for (k, c) in children {
        prefix.push(k);
        out.push(prefix.clone());
        paths(c, prefix, out);
        prefix.pop();
    }
}

fn at_path<'v>(v: &'v mut Value, path: &[Value]) -> Option<&'v mut Value> {
    let mut cur = v;
    for k in path {
        cur = match k {
            Value::String(s) => cur.get_mut(s.as_str())?,
            Value::Number(n) => cur.get_mut(n.as_u64()? as usize)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Options for the generated files.
#[derive(Clone, Copy)]
struct Gen {
    /// `parentId` cycles (entries on one are in no tree: a known bug).
    cycles: bool,
    /// Numbers near 2^64 and beyond (they overflow the stats: a known bug).
    huge_numbers: bool,
    /// The largest huge line.
    huge_line: usize,
}

fn wrong_value(rng: &mut Rng, gen: Gen) -> Value {
    let mut options = vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(1.5),
        json!(7),
        json!(""),
        json!("3"),
        json!([]),
        json!({}),
        json!({"role": "user"}),
        json!([{"type": "text"}]),
        json!(9_007_199_254_740_993u64),
    ];
    if gen.huge_numbers {
        options.extend([json!(1e300), json!(u64::MAX), json!(-1e300)]);
    }
    rng.pick(&options).clone()
}

/// Changes the line's JSON object (other lines are left alone).
fn set_json(line: &mut Vec<u8>, f: impl FnOnce(&mut Value)) {
    if let Ok(mut v @ Value::Object(_)) = serde_json::from_slice::<Value>(line) {
        f(&mut v);
        *line = v.to_string().into_bytes();
    }
}

fn mutate(rng: &mut Rng, lines: &mut Vec<Vec<u8>>, gen: Gen) {
    let n = lines.len();
    if n == 0 {
        lines.push(b"not json".to_vec());
        return;
    }
    let i = rng.below(n);
    match rng.below(12) {
        0 => {
            // Torn.
            let cut = rng.below(lines[i].len() + 1);
            lines[i].truncate(cut);
        }
        1 => {
            let copy = lines[i].clone();
            lines.insert(rng.below(n + 1), copy);
        }
        2 => {
            lines.remove(i);
        }
        3 => lines.swap(i, rng.below(n)),
        4 => {
            // parentId somewhere else.
            let ids = ids_of(lines);
            let target = match rng.below(5) {
                0 if !ids.is_empty() => json!(rng.pick(&ids)),
                1 => json!("no-such-id"),
                2 => json!(7),
                3 => json!({"id": "x"}),
                _ => Value::Null,
            };
            let own = rng.chance(4);
            set_json(&mut lines[i], |v| {
                let t = if own {
                    v.get("id").cloned().unwrap_or(Value::Null)
                } else {
                    target
                };
                v["parentId"] = t;
            });
        }
        5 if gen.cycles => {
            // A cycle of two or three entries.
            let with_ids: Vec<usize> = (0..n)
                .filter(|&k| {
                    serde_json::from_slice::<Value>(&lines[k])
                        .ok()
                        .and_then(|v| v.get("id").and_then(Value::as_str).map(|_| ()))
                        .is_some()
                })
                .collect();
            if with_ids.len() >= 2 {
                let len = 2 + rng.below(2).min(with_ids.len() - 2);
                let members: Vec<usize> = (0..len).map(|_| *rng.pick(&with_ids)).collect();
                let member_ids: Vec<Value> = members
                    .iter()
                    .map(|&k| serde_json::from_slice::<Value>(&lines[k]).unwrap()["id"].clone())
                    .collect();
                for (j, &k) in members.iter().enumerate() {
                    let parent = member_ids[(j + 1) % len].clone();
                    set_json(&mut lines[k], |v| v["parentId"] = parent);
                }
            }
        }
        6 => {
            // A field of the wrong type.
            let value = wrong_value(rng, gen);
            let pick = rng.next();
            set_json(&mut lines[i], |v| {
                let mut all = Vec::new();
                paths(v, &mut Vec::new(), &mut all);
                if all.is_empty() {
                    *v = value;
                } else if let Some(x) = at_path(v, &all[pick as usize % all.len()]) {
                    *x = value;
                }
            });
        }
        7 => {
            // A huge line.
            let size = 1 + rng.below(gen.huge_line);
            let big = "x".repeat(size);
            set_json(&mut lines[i], |v| {
                if let Some(m @ Value::Object(_)) = v.get_mut("message") {
                    m["content"] = json!([{"type": "text", "text": big}]);
                } else {
                    v["extra"] = json!(big);
                }
            });
        }
        8 => {
            // Invalid UTF-8 inside.
            let at = rng.below(lines[i].len() + 1);
            lines[i].splice(at..at, [0xff, 0xfe, 0xc3]);
        }
        9 => {
            const JUNK: &[&[u8]] = &[
                b"not json",
                b"[1,2]",
                b"{}",
                b"null",
                b"\"s\"",
                b"   ",
                b"",
                b"\r",
                b"\0",
                br#"{"type":"session","version":3,"id":"second-header","cwd":"/"}"#,
                br#"{"type":"message","id":"x","parentId":null,"message":"oops"}"#,
            ];
            let junk: &&[u8] = rng.pick(JUNK);
            lines.insert(rng.below(n + 1), junk.to_vec());
        }
        10 => {
            // The header.
            let value = match rng.below(6) {
                0 => json!("3"),
                1 => json!(99),
                2 => json!(-1),
                3 => json!(1.5),
                4 => Value::Null,
                _ => json!(2),
            };
            let field = *rng.pick(&["version", "id", "type", "cwd", "timestamp"]);
            set_json(&mut lines[0], |v| v[field] = value);
        }
        _ => {
            // Usage numbers in a message.
            let value = if gen.huge_numbers && rng.chance(2) {
                json!(1e300)
            } else {
                json!(*rng.pick(&[-5i64, 0, 1_000_000_000]))
            };
            set_json(&mut lines[i], |v| {
                if let Some(u @ Value::Object(_)) = v.pointer_mut("/message/usage") {
                    u["input"] = value;
                }
            });
        }
    }
}

/// A session file's bytes.
fn session_file(rng: &mut Rng, cwd: &str, gen: Gen) -> Vec<u8> {
    match rng.below(40) {
        0 => return Vec::new(),
        1 => return b"\n\n  \n".to_vec(),
        2 => {
            return format!(
                "{}\n",
                json!({"type": "session", "version": 3, "id": "only-header", "timestamp": "t", "cwd": cwd})
            )
            .into_bytes()
        }
        _ => {}
    }
    let mut lines: Vec<Vec<u8>> = if rng.chance(3) {
        fixture(rng, cwd)
    } else {
        made_up_session(rng, cwd)
            .iter()
            .map(|v| v.to_string().into_bytes())
            .collect()
    };
    let mutations = match rng.below(4) {
        0 => 0,
        1 => 1,
        _ => 1 + rng.below(5),
    };
    for _ in 0..mutations {
        mutate(rng, &mut lines, gen);
    }
    let ending: &[u8] = if rng.chance(6) { b"\r\n" } else { b"\n" };
    let mut out = Vec::new();
    if rng.chance(20) {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    for (k, l) in lines.iter().enumerate() {
        out.extend_from_slice(l);
        if k + 1 < lines.len() || !rng.chance(4) {
            out.extend_from_slice(ending);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Loading through the library

/// What a load gave.
#[derive(Debug, Default)]
struct Tally {
    errors: usize,
    loaded: usize,
    entries: usize,
    /// Entries in no tree (on or under a `parentId` cycle).
    off_tree: usize,
    /// Loads whose active branch repeats an entry (a cycle through the leaf).
    repeating_branches: usize,
    slowest: Duration,
}

/// Which known bugs a run tolerates (counting them instead).
#[derive(Clone, Copy)]
struct Tolerate {
    off_tree: bool,
    repeating_branch: bool,
}

/// Entries on or under a `parentId` cycle, as the tree links them (the last entry with an id
/// wins; a `parentId` equal to the entry's own id makes a root).
fn on_or_under_cycle(sm: &SessionManager) -> HashSet<usize> {
    let entries = sm.entries();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.has_id() {
            by_id.insert(e.id(), i);
        }
    }
    let parent = |i: usize| -> Option<usize> {
        let e = &entries[i];
        let p = e.parent_id()?;
        if p == e.id() {
            return None;
        }
        by_id.get(p).copied().filter(|&pi| pi != i)
    };
    let mut out = HashSet::new();
    for start in 0..entries.len() {
        let mut seen = HashSet::new();
        let mut cur = Some(start);
        while let Some(c) = cur {
            if !seen.insert(c) {
                out.insert(start);
                break;
            }
            cur = parent(c);
        }
    }
    out
}

fn count_tree_nodes(v: &Value) -> usize {
    let mut n = 0;
    let mut stack: Vec<&Value> = v["tree"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    while let Some(node) = stack.pop() {
        n += 1;
        if let Some(children) = node["children"].as_array() {
            stack.extend(children.iter());
        }
    }
    n
}

/// The properties of a loaded session.
fn check_loaded(
    sm: &SessionManager,
    path: &Path,
    dir: &Path,
    tolerate: Tolerate,
    tally: &mut Tally,
) -> Result<(), String> {
    let entries = sm.entries();
    tally.loaded += 1;
    tally.entries += entries.len();
    // Every entry in the tree exactly once.
    let tree = sm.tree();
    let mut visits = vec![0usize; entries.len()];
    let mut stack: Vec<usize> = tree.roots.clone();
    while let Some(i) = stack.pop() {
        visits[i] += 1;
        if visits[i] > 1 {
            return Err(format!("entry {i} reached twice in the tree"));
        }
        stack.extend(tree.nodes[i].children.iter().copied());
    }
    let off_tree: Vec<usize> = (0..entries.len()).filter(|&i| visits[i] == 0).collect();
    if !off_tree.is_empty() {
        let cyclic = on_or_under_cycle(sm);
        if !tolerate.off_tree || off_tree.iter().any(|i| !cyclic.contains(i)) {
            return Err(format!(
                "entries {off_tree:?} are in no tree (on or under a cycle: {cyclic:?})"
            ));
        }
        tally.off_tree += off_tree.len();
    }
    let reachable = entries.len() - off_tree.len();
    let tree_json: Value = serde_json::from_str(&sm.tree_json_text())
        .map_err(|e| format!("get_tree text is not JSON: {e}"))?;
    if count_tree_nodes(&tree_json) != reachable {
        return Err(format!(
            "get_tree has {} nodes, {reachable} entries are reachable",
            count_tree_nodes(&tree_json)
        ));
    }
    let entries_json: Value = serde_json::from_str(
        &sm.entries_json_text(None)
            .map_err(|e| format!("get_entries failed: {e}"))?,
    )
    .map_err(|e| format!("get_entries text is not JSON: {e}"))?;
    if entries_json["entries"].as_array().map(Vec::len) != Some(entries.len()) {
        return Err("get_entries has another number of entries".into());
    }
    // The active branch: a parent chain from a root to the leaf, no entry twice.
    let branch = sm.branch();
    if let (Some(leaf), Some(last)) = (sm.leaf_id(), branch.last()) {
        if last.id() != leaf {
            return Err(format!(
                "the branch ends at {}, the leaf is {leaf}",
                last.id()
            ));
        }
    }
    for pair in branch.windows(2) {
        if pair[1].parent_id() != Some(pair[0].id()) {
            return Err(format!(
                "branch link {} -> {} is no parent link",
                pair[0].id(),
                pair[1].id()
            ));
        }
    }
    let distinct: HashSet<*const _> = branch.iter().map(|e| *e as *const _).collect();
    if distinct.len() != branch.len() {
        if !tolerate.repeating_branch {
            return Err(format!(
                "the active branch repeats entries: {:?}",
                branch.iter().map(|e| e.id()).collect::<Vec<_>>()
            ));
        }
        tally.repeating_branches += 1;
    }
    // Everything else a client can ask for.
    let _ = sm.context();
    let _ = sm.selection();
    let _ = sm.totals();
    let _ = sm.fork_messages();
    let _ = sm.session_name();
    // Loading again gives the same entries (the first load may have migrated the file,
    // terminated its last line or written a header into an empty file).
    let again = SessionManager::open(path, None, dir).map_err(|e| format!("reload failed: {e}"))?;
    let raw = |s: &SessionManager| {
        s.entries()
            .iter()
            .map(|e| e.raw().to_string())
            .collect::<Vec<_>>()
    };
    if raw(&again) != raw(sm) {
        return Err("loading again gave other entries".into());
    }
    Ok(())
}

/// Loads `bytes` as a session file on a thread with a deadline.
fn load_case(dir: &Path, name: &str, bytes: &[u8], tolerate: Tolerate) -> Result<Tally, String> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, d) = (path.clone(), dir.to_path_buf());
    std::thread::spawn(move || {
        let started = Instant::now();
        let r = std::panic::catch_unwind(|| {
            let mut tally = Tally::default();
            match SessionManager::open(&p, None, &d) {
                Err(e) if e.to_string().is_empty() => Err("an error without text".to_string()),
                Err(_) => {
                    tally.errors += 1;
                    Ok(tally)
                }
                Ok(sm) => check_loaded(&sm, &p, &d, tolerate, &mut tally).map(|()| tally),
            }
        });
        let r = match r {
            Ok(r) => r,
            Err(panic) => Err(format!(
                "panicked: {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default()
            )),
        };
        let _ = tx.send(r.map(|mut t| {
            t.slowest = started.elapsed();
            t
        }));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| Err("no result within 20 s (a hang?)".into()));
    let _ = std::fs::remove_file(&path);
    r
}

fn describe(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<String> = text
        .split('\n')
        .map(|l| {
            let short: String = l.chars().take(400).collect();
            if short.len() < l.len() {
                format!("{short}… ({} bytes)", l.len())
            } else {
                short
            }
        })
        .collect();
    lines.join("\n    ")
}

fn run_loads(seed: u64, cases: usize, gen: Gen, tolerate: Tolerate) -> Result<Tally, String> {
    let dir = TempDir::new("prop-sessions");
    let cwd = dir.path().to_string_lossy().into_owned();
    let mut rng = Rng::new(seed, 31);
    let mut total = Tally::default();
    for case in 0..cases {
        let bytes = session_file(&mut rng, &cwd, gen);
        let t =
            load_case(dir.path(), &format!("s{case}.jsonl"), &bytes, tolerate).map_err(|e| {
                format!(
                    "case {case} (seed {seed}): {e}\n  file:\n    {}",
                    describe(&bytes)
                )
            })?;
        total.errors += t.errors;
        total.loaded += t.loaded;
        total.entries += t.entries;
        total.off_tree += t.off_tree;
        total.repeating_branches += t.repeating_branches;
        total.slowest = total.slowest.max(t.slowest);
    }
    Ok(total)
}

/// What the default runs generate and tolerate: everything but the known bugs.
const DEFAULT_GEN: Gen = Gen {
    cycles: true,
    huge_numbers: false,
    huge_line: 1 << 21,
};
const KNOWN_BUGS: Tolerate = Tolerate {
    off_tree: true,
    repeating_branch: true,
};

#[test]
fn session_files_load_cleanly_into_a_consistent_tree() {
    let started = Instant::now();
    let n = cases(400);
    match run_loads(seed(), n, DEFAULT_GEN, KNOWN_BUGS) {
        Ok(t) => eprintln!(
            "session loading: {n} files in {:?}: {t:?}",
            started.elapsed()
        ),
        Err(e) => panic!("{e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// switch_session through the binary

/// The reads a client may send after a switch; every one must be answered successfully.
const READS: &[&str] = &[
    "get_state",
    "get_messages",
    "get_tree",
    "get_entries",
    "get_session_stats",
    "get_fork_messages",
    "get_last_assistant_text",
];

/// Cases per spawned agent (the test driver searches all records it kept for each response).
const CASES_PER_AGENT: usize = 25;

/// Switches one agent to `files` in turn; returns (switched, refused).
fn switch_to_each(seed: u64, first_case: usize, files: &[Vec<u8>]) -> (usize, usize) {
    let mut agent = Agent::spawn();
    let mut ids = Vec::new();
    let (mut switched, mut refused) = (0, 0);
    for (k, bytes) in files.iter().enumerate() {
        let case = first_case + k;
        let name = format!("s{case}.jsonl");
        std::fs::write(agent.cwd.join(&name), bytes).unwrap();
        let context = || format!("case {case} (seed {seed}):\n    {}", describe(bytes));
        let id = format!("sw{case}");
        agent.send(json!({"id": id, "type": "switch_session", "sessionPath": name}));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| agent.response(&id)))
            .unwrap_or_else(|_| panic!("no answer to switch_session on {}", context()));
        if r["success"] == true {
            switched += 1;
        } else {
            refused += 1;
            assert!(
                r["error"].as_str().is_some_and(|e| !e.is_empty()),
                "{r} on {}",
                context()
            );
        }
        ids.push(id);
        for (j, read) in READS.iter().enumerate() {
            let id = format!("r{case}-{j}");
            agent.send(json!({"id": id, "type": read}));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| agent.response(&id)))
                .unwrap_or_else(|_| panic!("no answer to {read} on {}", context()));
            assert_eq!(r["success"], true, "{read}: {r} on {}", context());
            ids.push(id);
        }
    }
    // Exactly one response per command, and the process still answers.
    let last = agent.request("last", json!({"type": "get_state"}));
    assert_eq!(last["success"], true);
    agent.drain(Duration::from_millis(100));
    let mut counts: HashMap<String, usize> = HashMap::new();
    for r in &agent.records {
        if r["type"] == "response" {
            if let Some(id) = r["id"].as_str() {
                *counts.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    for id in &ids {
        assert_eq!(counts.get(id), Some(&1), "responses to {id}");
    }
    (switched, refused)
}

#[test]
fn switch_session_to_mutated_files_answers_once_and_keeps_serving() {
    let started = Instant::now();
    let n = cases(40);
    let seed = seed();
    let mut rng = Rng::new(seed, 37);
    let gen = Gen {
        huge_line: 1 << 18,
        ..DEFAULT_GEN
    };
    // The headers name an existing directory (pi refuses a session whose cwd is gone).
    let cwd = TempDir::new("prop-switch-cwd");
    let cwd = cwd.path().to_string_lossy().into_owned();
    let (mut switched, mut refused) = (0, 0);
    let mut case = 0;
    while case < n {
        let count = CASES_PER_AGENT.min(n - case);
        let files: Vec<Vec<u8>> = (0..count)
            .map(|_| session_file(&mut rng, &cwd, gen))
            .collect();
        let (s, r) = switch_to_each(seed, case, &files);
        switched += s;
        refused += r;
        case += count;
    }
    eprintln!(
        "switch_session: {n} files in {:?}: {switched} switched to, {refused} refused",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// Bugs the properties found (fixed inputs)

fn load_lines(lines: &[Value]) -> (TempDir, SessionManager) {
    let dir = TempDir::new("prop-session-bug");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = dir.write("s.jsonl", &text);
    let sm = SessionManager::open(&path, None, dir.path()).unwrap();
    (dir, sm)
}

fn header() -> Value {
    json!({"type": "session", "version": 3, "id": "sid", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"})
}

fn entry(id: &str, parent: Option<&str>, text: &str) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}})
}

/// Two entries whose `parentId`s point at each other (a hand-edited or corrupted file): both
/// load, `get_entries` lists them, but neither is a root nor under one, so `get_tree` leaves
/// them out. pi 1.6.0's `getTree` has the same root rule (it would hang in `getBranch` first,
/// see below).
#[test]
#[ignore = "bug: entries on a parentId cycle load but are in no get_tree root's subtree (get_entries lists them)"]
fn entries_on_a_parent_cycle_are_in_no_tree() {
    let (_dir, sm) = load_lines(&[
        header(),
        entry("r", None, "root"),
        entry("a", Some("b"), "a"),
        entry("b", Some("a"), "b"),
        entry("z", Some("r"), "last"),
    ]);
    assert_eq!(sm.entries().len(), 4);
    let tree: Value = serde_json::from_str(&sm.tree_json_text()).unwrap();
    // Actual: 2 nodes (r and its child z).
    assert_eq!(count_tree_nodes(&tree), 4, "{tree}");
}

/// The leaf (the last entry) on a `parentId` cycle: `branch_from` stops only after
/// `entries.len() + 1` steps, so the active branch holds the cycle's entries over and over
/// and the LLM context repeats their messages. pi 1.6.0 loops forever in `getBranch` here.
#[test]
#[ignore = "bug: a parentId cycle through the leaf repeats entries on the active branch and messages in the context"]
fn a_cycle_through_the_leaf_repeats_the_branch() {
    let (_dir, sm) = load_lines(&[
        header(),
        entry("a", Some("b"), "one"),
        entry("b", Some("a"), "two"),
    ]);
    let ids: Vec<&str> = sm.branch().iter().map(|e| e.id()).collect();
    // Actual: ["b", "a", "b"] and a context of three user messages "two", "one", "two".
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(sm.context().messages.len(), 2);
}

/// Usage counts near 2^64 in stored messages (JSON numbers up to 1e300 are read as floats and
/// saturate to `u64::MAX`) overflow the `u64` sums of `get_session_stats`: a debug build panics
/// ("attempt to add with overflow"), a release build wraps the totals. pi adds floats.
#[test]
fn huge_usage_numbers_overflow_the_session_stats() {
    let assistant = |id: &str, parent: Option<&str>| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}],
                "api": "anthropic-messages", "provider": "mock", "model": "mock-sonnet",
                "usage": {"input": 1e300, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": 1}})
    };
    let (_dir, sm) = load_lines(&[header(), assistant("a", None), assistant("b", Some("a"))]);
    let totals = sm.totals();
    assert!(totals.input >= u64::MAX / 2, "{totals:?}");
}

/// The same through the binary: the processor thread panics at `get_session_stats` and the
/// process ends (with exit status 0) without answering it; every later command is lost.
#[test]
fn huge_usage_numbers_end_the_process_at_get_session_stats() {
    let mut agent = Agent::spawn();
    let assistant = |id: &str, parent: Option<&str>| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}],
                "api": "anthropic-messages", "provider": "mock", "model": "mock-sonnet",
                "usage": {"input": 1e300, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": 1}})
    };
    let mut h = header();
    h["cwd"] = json!(agent.cwd.to_string_lossy());
    let text = format!(
        "{h}\n{}\n{}\n",
        assistant("a", None),
        assistant("b", Some("a"))
    );
    std::fs::write(agent.cwd.join("big.jsonl"), text).unwrap();
    let r = agent.request(
        "sw",
        json!({"type": "switch_session", "sessionPath": "big.jsonl"}),
    );
    assert_eq!(r["success"], true, "{r}");
    agent.send(json!({"id": "st", "type": "get_session_stats"}));
    let records = agent.drain(Duration::from_secs(3));
    // Actual: no record; stderr "thread 'processor' panicked at src/session/stats.rs:73:9:
    // attempt to add with overflow" and "pi-rpc: the processor thread panicked"; exit status 0.
    assert!(
        records.iter().any(|r| r["id"] == "st"),
        "no answer to get_session_stats; stderr: {}",
        agent.stderr()
    );
}

/// The load property with nothing tolerated, from the seed that found the bugs above: with
/// huge numbers (the stats overflow) and without them (the cycles).
#[test]
#[ignore = "bug: the session bugs above, as the property runs found them"]
fn strict_session_loading_with_the_seed_that_found_them() {
    let strict = Tolerate {
        off_tree: false,
        repeating_branch: false,
    };
    let huge = Gen {
        huge_numbers: true,
        ..DEFAULT_GEN
    };
    let failures: Vec<String> = [(huge, KNOWN_BUGS), (DEFAULT_GEN, strict)]
        .into_iter()
        .filter_map(|(gen, tolerate)| run_loads(1, 2000, gen, tolerate).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
