//! Session file migrations (`session-format.md` §8), applied in memory to the parsed lines of an
//! old file (header first). pi 1.6.0 then rewrites the file at once (*observed*: opening a v1
//! file leaves it on disk as v3), and so does the loader.
//!
//! Key order follows JavaScript property semantics, as pi mutates the parsed objects: a new key
//! goes last, an existing key keeps its place, a deleted key disappears.

use std::collections::HashSet;

use serde_json::{Map, Value};

/// The session file format version written by pi 1.6.0.
pub const CURRENT_VERSION: u64 = 3;

/// The header's version: `version` when it is a number, 1 when absent or `null`.
pub fn header_version(header: &Map<String, Value>) -> u64 {
    match header.get("version") {
        None | Some(Value::Null) => 1,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))
            .unwrap_or(CURRENT_VERSION),
    }
}

/// A random 8-hex entry id not in `taken` (pi's `generateId`).
pub fn generate_id(taken: &dyn Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        if !taken(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

/// Brings `lines` (header first, then entries, as parsed) to the current version.
/// Returns true when anything was migrated (the file must then be rewritten).
pub fn migrate_to_current(lines: &mut [Map<String, Value>]) -> bool {
    let Some(header) = lines.iter().find(|e| is_type(e, "session")) else {
        return false;
    };
    let version = header_version(header);
    if version >= CURRENT_VERSION {
        return false;
    }
    if version < 2 {
        migrate_v1_to_v2(lines);
    }
    migrate_v2_to_v3(lines);
    true
}

fn is_type(e: &Map<String, Value>, t: &str) -> bool {
    e.get("type").and_then(Value::as_str) == Some(t)
}

/// v1 → v2: every entry gets a fresh id and the previous entry as parent (a linear chain);
/// a compaction's `firstKeptEntryIndex` (an index into the lines, header included) becomes
/// `firstKeptEntryId`.
pub fn migrate_v1_to_v2(lines: &mut [Map<String, Value>]) {
    let mut ids: HashSet<String> = HashSet::new();
    let mut prev: Option<String> = None;
    for i in 0..lines.len() {
        if is_type(&lines[i], "session") {
            lines[i].insert("version".into(), Value::from(2));
            continue;
        }
        // pi's id set stays empty during this migration (it never adds to it), so collisions
        // are only avoided by chance; keep them unique anyway.
        let id = generate_id(&|c| ids.contains(c));
        ids.insert(id.clone());
        lines[i].insert("id".into(), Value::String(id.clone()));
        lines[i].insert(
            "parentId".into(),
            prev.take().map_or(Value::Null, Value::String),
        );
        prev = Some(id);
        if is_type(&lines[i], "compaction") {
            let index = lines[i].get("firstKeptEntryIndex").and_then(Value::as_f64);
            if let Some(idx) = index {
                let target = (idx >= 0.0 && idx.fract() == 0.0)
                    .then(|| lines.get(idx as usize))
                    .flatten()
                    .filter(|t| !is_type(t, "session"))
                    .and_then(|t| t.get("id").cloned());
                if let Some(target_id) = target {
                    lines[i].insert("firstKeptEntryId".into(), target_id);
                }
                lines[i].shift_remove("firstKeptEntryIndex");
            }
        }
    }
}

/// v2 → v3: the `hookMessage` role is renamed `custom`.
pub fn migrate_v2_to_v3(lines: &mut [Map<String, Value>]) {
    for e in lines.iter_mut() {
        if is_type(e, "session") {
            e.insert("version".into(), Value::from(3));
            continue;
        }
        if !is_type(e, "message") {
            continue;
        }
        if let Some(Value::Object(msg)) = e.get_mut("message") {
            if msg.get("role").and_then(Value::as_str) == Some("hookMessage") {
                msg.insert("role".into(), Value::from("custom"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(v: Value) -> Vec<Map<String, Value>> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_object().unwrap().clone())
            .collect()
    }

    fn keys(m: &Map<String, Value>) -> Vec<&str> {
        m.keys().map(String::as_str).collect()
    }

    #[test]
    fn v1_file_becomes_a_linear_v3_chain() {
        let mut ls = lines(json!([
            {"type":"session","id":"s","timestamp":"t","cwd":"/x"},
            {"type":"message","timestamp":"t1","message":{"role":"user","content":"hi"}},
            {"type":"message","timestamp":"t2","message":{"role":"assistant","content":[]}},
            {"type":"compaction","timestamp":"t3","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5},
            {"type":"message","timestamp":"t4","message":{"role":"hookMessage","content":"h"}}
        ]));
        assert!(migrate_to_current(&mut ls));
        // Observed with pi 1.6.0: a missing `version` is added last; ids go after the old keys.
        assert_eq!(keys(&ls[0]), ["type", "id", "timestamp", "cwd", "version"]);
        assert_eq!(ls[0]["version"], 3);
        assert_eq!(
            keys(&ls[1]),
            ["type", "timestamp", "message", "id", "parentId"]
        );
        assert_eq!(ls[1]["parentId"], Value::Null);
        for i in 2..5 {
            assert_eq!(ls[i]["parentId"], ls[i - 1]["id"]);
            assert_eq!(ls[i]["id"].as_str().unwrap().len(), 8);
        }
        assert_eq!(
            keys(&ls[3]),
            [
                "type",
                "timestamp",
                "summary",
                "tokensBefore",
                "id",
                "parentId",
                "firstKeptEntryId"
            ]
        );
        assert_eq!(ls[3]["firstKeptEntryId"], ls[2]["id"]);
        assert_eq!(ls[4]["message"]["role"], "custom");
    }

    #[test]
    fn v2_file_only_renames_hook_messages() {
        let mut ls = lines(json!([
            {"type":"session","version":2,"id":"s","timestamp":"t","cwd":"/x"},
            {"type":"message","id":"a","parentId":null,"timestamp":"t1","message":{"role":"hookMessage","content":"h"}},
            {"type":"message","id":"b","parentId":"a","timestamp":"t2","message":{"role":"user","content":"u"}}
        ]));
        assert!(migrate_to_current(&mut ls));
        assert_eq!(keys(&ls[0]), ["type", "version", "id", "timestamp", "cwd"]);
        assert_eq!(ls[0]["version"], 3);
        assert_eq!(ls[1]["id"], "a");
        assert_eq!(ls[1]["message"]["role"], "custom");
        assert_eq!(ls[2]["message"]["role"], "user");
    }

    #[test]
    fn current_files_are_left_alone() {
        let mut ls = lines(json!([
            {"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/x"},
            {"type":"message","id":"a","parentId":null,"timestamp":"t1","message":{"role":"hookMessage"}}
        ]));
        let before = ls.clone();
        assert!(!migrate_to_current(&mut ls));
        assert_eq!(ls, before);
    }

    #[test]
    fn compaction_index_out_of_range_drops_the_index_only() {
        let mut ls = lines(json!([
            {"type":"session","id":"s"},
            {"type":"compaction","summary":"s","firstKeptEntryIndex":9}
        ]));
        migrate_to_current(&mut ls);
        assert!(ls[1].get("firstKeptEntryIndex").is_none());
        assert!(ls[1].get("firstKeptEntryId").is_none());
    }
}
