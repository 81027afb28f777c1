//! Guardrails on the module graph (`ARCHITECTURE.md`, "Modules and their direction"): no import
//! cycle between the crate's top-level modules, nor between the files of one module. A cycle
//! had crept in each time a helper was put where its first caller was (the output handle in
//! `rpc/`, the compaction runner in `compaction/`, the session header in the manager); this
//! test names the modules of any new one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles known and being worked on: none.
const ALLOWED_CYCLES: &[&[&str]] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src/")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `src/llm/anthropic/mod.rs` → `["llm", "anthropic"]`; the crate root files give `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file
        .strip_prefix(src)
        .expect("under src/")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main" || l == "build")
    {
        parts.pop();
    }
    parts
}

/// The code of a file without its unit tests and comments.
fn code(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The module paths named after each `prefix` (`crate::a::b`, `super::x`, `super::{x, y}`),
/// up to `depth` segments.
fn paths_after(text: &str, prefix: &str, depth: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                if let Some(id) = ident_at(item.trim()) {
                    out.push(vec![id.to_string()]);
                }
            }
            continue;
        }
        let mut segs = Vec::new();
        let mut r = rest;
        while segs.len() < depth {
            let Some(id) = ident_at(r) else { break };
            segs.push(id.to_string());
            match r[id.len()..].strip_prefix("::") {
                Some(next) => r = next,
                None => break,
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// Tarjan's strongly connected components with more than one node.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// Import edges between modules at `depth` (1: top-level modules; 2: the files of a module).
fn import_graph(depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let m = module_path(&src, &file);
        if m.is_empty() {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).expect("read a source file"));
        let me = m[..m.len().min(depth)].join("::");
        let mut targets: Vec<String> = paths_after(&text, "crate::", depth)
            .into_iter()
            .map(|p| p.join("::"))
            .collect();
        if depth == 2 && m.len() == 2 {
            // `super::x` in `a/b.rs` names `a::x`.
            for p in paths_after(&text, "super::", 1) {
                targets.push(format!("{}::{}", m[0], p[0]));
            }
        }
        for t in targets {
            let top_of = |s: &str| s.split("::").next().unwrap_or_default().to_string();
            let same_top = top_of(&t) == top_of(&me);
            // At depth 1 only edges between modules count; at depth 2 only within one.
            let counted = if depth == 1 { !same_top } else { same_top };
            if counted && t != me && t.contains("::") == (depth == 2) {
                edges.entry(me.clone()).or_default().insert(t);
            }
        }
    }
    edges
}

fn assert_acyclic(depth: usize) {
    let found = cycles(&import_graph(depth));
    let unexpected: Vec<&Vec<String>> = found
        .iter()
        .filter(|c| {
            !ALLOWED_CYCLES
                .iter()
                .any(|a| a.iter().copied().eq(c.iter().map(String::as_str)))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "import cycles (each group's modules import each other, directly or in a ring): \
         {unexpected:?}"
    );
}

#[test]
fn top_level_modules_import_without_cycles() {
    assert_acyclic(1);
}

#[test]
fn files_of_a_module_import_without_cycles() {
    assert_acyclic(2);
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    edges.entry("c".into()).or_default().insert("a".into());
    edges.entry("c".into()).or_default().insert("d".into());
    assert_eq!(cycles(&edges), vec![vec!["a", "b", "c"]]);
    let text = "use crate::agent::job::Runtime;\nuse super::{cut, estimate::X};\nfoo::crate::x";
    assert_eq!(
        paths_after(text, "crate::", 2),
        vec![vec!["agent".to_string(), "job".to_string()]]
    );
    assert_eq!(
        paths_after(text, "super::", 1),
        vec![vec!["cut".to_string()], vec!["estimate".to_string()]]
    );
}
