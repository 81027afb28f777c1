//! The session tree (`get_tree`, `session-format.md` §5): roots are entries whose `parentId` is
//! null, their own id, or an id that does not exist (orphans); children are sorted by timestamp,
//! oldest first (stable); labels come from the latest `label` entry per target.
//!
//! A linear session of 100,000 entries is a tree 100,000 levels deep, so nothing here recurses:
//! the tree is an arena of index lists, and the JSON text is written with an explicit stack.

use std::collections::HashMap;

use super::entry::Entry;
use super::entry::Label;
use serde_json::Value;

/// One node of the tree; `children` index [`Tree::nodes`].
#[derive(Clone, Debug, PartialEq)]
pub struct TreeNode<'a> {
    pub entry: &'a Entry,
    pub children: Vec<usize>,
    pub label: Option<&'a Label>,
}

/// All entries as a forest: `nodes[i]` is `entries[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tree<'a> {
    pub nodes: Vec<TreeNode<'a>>,
    pub roots: Vec<usize>,
}

/// Builds the forest of `entries` (append order) with the current `labels`.
pub fn build_tree<'a>(entries: &'a [Entry], labels: &'a [Label]) -> Tree<'a> {
    let labels_by_id: HashMap<&str, &Label> =
        labels.iter().map(|l| (l.target_id.as_str(), l)).collect();
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if e.has_id() {
            by_id.insert(e.id(), i);
        }
    }
    let mut nodes: Vec<TreeNode<'a>> = entries
        .iter()
        .map(|e| TreeNode {
            entry: e,
            children: Vec::new(),
            label: labels_by_id.get(e.id()).copied(),
        })
        .collect();
    let mut roots = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        match e.parent_id() {
            None => roots.push(i),
            Some(p) if p == e.id() => roots.push(i),
            Some(p) => match by_id.get(p) {
                Some(&pi) if pi != i => nodes[pi].children.push(i),
                _ => roots.push(i),
            },
        }
    }
    // Children oldest first; the sort is stable, so equal timestamps keep append order.
    let ms: Vec<u64> = entries
        .iter()
        .map(|e| crate::util::ms_from_iso(e.timestamp()).unwrap_or(0))
        .collect();
    for n in &mut nodes {
        if n.children.len() > 1 {
            n.children.sort_by_key(|&c| ms[c]);
        }
    }
    Tree { nodes, roots }
}

/// `{"tree":[Node…],"leafId":…}` with `Node = {"entry","children","label"?,"labelTimestamp"?}`,
/// entries written exactly as stored.
pub fn tree_json_text(entries: &[Entry], labels: &[Label], leaf: Option<&str>) -> String {
    let mut out = Vec::with_capacity(tree_json_len(entries));
    write_tree_json(entries, labels, leaf, &mut out);
    crate::util::utf8_text(out)
}

/// About how many bytes [`write_tree_json`] writes.
pub fn tree_json_len(entries: &[Entry]) -> usize {
    entries.iter().map(|e| e.raw().len() + 32).sum::<usize>() + 64
}

/// Appends `{"tree":[…],"leafId":…}` to `out` (see [`tree_json_text`]).
pub fn write_tree_json(entries: &[Entry], labels: &[Label], leaf: Option<&str>, out: &mut Vec<u8>) {
    let tree = build_tree(entries, labels);
    out.extend_from_slice(b"{\"tree\":[");
    // (node, index of the next child to write)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for (ri, &root) in tree.roots.iter().enumerate() {
        if ri > 0 {
            out.push(b',');
        }
        open_node(out, &tree.nodes[root]);
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (n, next) = *top;
            let children = &tree.nodes[n].children;
            if next < children.len() {
                top.1 += 1;
                if next > 0 {
                    out.push(b',');
                }
                let c = children[next];
                open_node(out, &tree.nodes[c]);
                stack.push((c, 0));
            } else {
                close_node(out, &tree.nodes[n]);
                stack.pop();
            }
        }
    }
    out.extend_from_slice(b"],\"leafId\":");
    let leaf = leaf.map_or(Value::Null, |l| Value::String(l.to_string()));
    crate::js::json::write_js(out, &leaf);
    out.push(b'}');
}

fn open_node(out: &mut Vec<u8>, n: &TreeNode<'_>) {
    out.extend_from_slice(b"{\"entry\":");
    n.entry.write_json(out);
    out.extend_from_slice(b",\"children\":[");
}

fn close_node(out: &mut Vec<u8>, n: &TreeNode<'_>) {
    out.push(b']');
    if let Some(l) = n.label {
        out.extend_from_slice(b",\"label\":");
        crate::js::json::write_js(out, &Value::String(l.label.clone()));
        out.extend_from_slice(b",\"labelTimestamp\":");
        crate::js::json::write_js(out, &Value::String(l.timestamp.clone()));
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn e(id: &str, parent: Option<&str>, ts: &str) -> Entry {
        Entry::from_value(json!({"type":"custom","id":id,"parentId":parent,"timestamp":ts}))
            .unwrap()
    }

    #[test]
    fn roots_orphans_sorting_and_labels() {
        let entries = vec![
            e("a", None, "2026-01-01T00:00:00.000Z"),
            e("c", Some("a"), "2026-01-01T00:00:05.000Z"),
            e("b", Some("a"), "2026-01-01T00:00:01.000Z"),
            e("o", Some("missing"), "2026-01-01T00:00:02.000Z"),
            e("s", Some("s"), "2026-01-01T00:00:03.000Z"),
            e("d", Some("b"), "2026-01-01T00:00:04.000Z"),
        ];
        let labels = vec![Label {
            target_id: "b".into(),
            label: "L\"1".into(),
            timestamp: "2026-01-02T00:00:00.000Z".into(),
        }];
        let tree = build_tree(&entries, &labels);
        assert_eq!(tree.roots, [0, 3, 4]);
        assert_eq!(tree.nodes[0].children, [2, 1]);
        assert_eq!(tree.nodes[2].children, [5]);
        let text = tree_json_text(&entries, &labels, Some("d"));
        let v: Value = serde_json::from_str(&text).unwrap();
        let raw = |i: usize| serde_json::from_str::<Value>(entries[i].raw()).unwrap();
        assert_eq!(
            v,
            json!({"tree":[
                {"entry":raw(0),"children":[
                    {"entry":raw(2),"children":[{"entry":raw(5),"children":[]}],
                     "label":"L\"1","labelTimestamp":"2026-01-02T00:00:00.000Z"},
                    {"entry":raw(1),"children":[]}
                ]},
                {"entry":raw(3),"children":[]},
                {"entry":raw(4),"children":[]}
            ],"leafId":"d"})
        );
        assert!(text.starts_with(&format!("{{\"tree\":[{{\"entry\":{},", entries[0].raw())));
        assert_eq!(
            tree_json_text(&[], &[], None),
            "{\"tree\":[],\"leafId\":null}"
        );
    }

    #[test]
    fn a_very_deep_chain_does_not_recurse() {
        let n = 200_000;
        let entries: Vec<Entry> = (0..n)
            .map(|i| {
                let id = format!("{i:08x}");
                let parent = (i > 0).then(|| format!("{:08x}", i - 1));
                e(&id, parent.as_deref(), "2026-01-01T00:00:00.000Z")
            })
            .collect();
        let text = tree_json_text(&entries, &[], None);
        assert!(text.ends_with(&format!("{}],\"leafId\":null}}", "]}".repeat(n))));
    }
}
