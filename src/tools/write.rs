//! The `write` tool (`tools.md` §3): creates or overwrites a file, creating parent directories,
//! and the per-path lock that serializes `write` and `edit` on the same file.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::args::{check_cancelled, str_or_empty};
use super::path::resolve_to_cwd;
use super::{Tool, ToolContext, ToolOutput};
use crate::js::fs_error::node_error;

type LockMap = Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>;

fn locks() -> &'static LockMap {
    static LOCKS: OnceLock<LockMap> = OnceLock::new();
    LOCKS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Runs `f` while holding the process-wide lock of the file at `path` (its real path when it
/// exists, else the path itself), so that mutations of one file run one at a time while
/// mutations of different files run in parallel.
pub fn with_file_lock<T>(path: &Path, f: impl FnOnce() -> T) -> T {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let entry = {
        let mut map = locks().lock();
        Arc::clone(map.entry(key.clone()).or_default())
    };
    let result = {
        let _guard = entry.lock();
        f()
    };
    let mut map = locks().lock();
    // The map and this function hold the only references: nobody else waits for this path.
    if Arc::strong_count(&entry) == 2 {
        map.remove(&key);
    }
    result
}

/// `write`: `{path, content}`.
pub struct WriteTool;

impl Tool for WriteTool {
    fn name(&self) -> &'static str {
        "write"
    }

    fn changes_files(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Create a file or replace an existing file's entire contents. Missing parent directories \
         are created automatically."
            .to_string()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["path", "content"],
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to write, relative to the working directory or absolute"
                },
                "content": {
                    "type": "string",
                    "description": "The complete text to store in the file"
                }
            }
        })
    }

    fn prompt_snippet(&self) -> Option<&'static str> {
        Some("Create a file or replace its contents")
    }

    fn guidelines(&self) -> Vec<&'static str> {
        vec!["Reserve write for new files or whole-file rewrites."]
    }

    fn execute(
        &self,
        args: &Value,
        ctx: &ToolContext<'_>,
        _on_update: &mut dyn FnMut(Value),
    ) -> Result<ToolOutput, String> {
        let path = str_or_empty(args, "path");
        let content = str_or_empty(args, "content");
        let absolute = resolve_to_cwd(path, ctx.cwd);
        let dir = absolute
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
        with_file_lock(&absolute, || {
            check_cancelled(ctx.cancel)?;
            std::fs::create_dir_all(&dir).map_err(|e| node_error(&e, "mkdir", Some(&dir)))?;
            check_cancelled(ctx.cancel)?;
            write_file(&absolute, content.as_bytes())?;
            check_cancelled(ctx.cancel)?;
            Ok(ToolOutput::text(format!("Successfully wrote to {path}")))
        })
    }
}

/// `fs.writeFile`: create or truncate, then write; errors as Node words them.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| node_error(&e, "open", Some(path)))?;
    file.write_all(bytes)
        .map_err(|e| node_error(&e, "write", None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;
    use crate::tools::args::test_support::{schema_without_descriptions, temp_dir, tool_context};

    fn ctx<'a>(cwd: &'a Path, cancel: &'a CancelToken) -> ToolContext<'a> {
        tool_context(cwd, cancel, true, "m")
    }

    #[test]
    fn writes_with_parent_directories_and_reports_path_as_given() {
        let dir = temp_dir("write");
        let cancel = CancelToken::new();
        let out = WriteTool
            .execute(
                &json!({"path":"out/new.txt","content":"alpha\nbeta\n"}),
                &ctx(&dir, &cancel),
                &mut |_| {},
            )
            .unwrap();
        assert_eq!(out, ToolOutput::text("Successfully wrote to out/new.txt"));
        assert_eq!(
            std::fs::read_to_string(dir.join("out/new.txt")).unwrap(),
            "alpha\nbeta\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_errors_are_node_texts() {
        let dir = temp_dir("write-err");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("file"), "x").unwrap();
        let cancel = CancelToken::new();
        let c = ctx(&dir, &cancel);
        let err = WriteTool
            .execute(&json!({"path":"sub","content":"x"}), &c, &mut |_| {})
            .unwrap_err();
        assert_eq!(
            err,
            format!(
                "EISDIR: illegal operation on a directory, open '{}'",
                dir.join("sub").display()
            )
        );
        let err = WriteTool
            .execute(
                &json!({"path":"file/a/b.txt","content":"x"}),
                &c,
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(
            err,
            format!(
                "ENOTDIR: not a directory, mkdir '{}'",
                dir.join("file/a").display()
            )
        );
        cancel.cancel();
        let err = WriteTool
            .execute(&json!({"path":"z","content":"x"}), &c, &mut |_| {})
            .unwrap_err();
        assert_eq!(err, "Operation aborted");
        assert!(!dir.join("z").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_lock_serializes_same_path() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = temp_dir("lock");
        let path = dir.join("f");
        let inside = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (path, inside, max) = (path.clone(), Arc::clone(&inside), Arc::clone(&max));
                std::thread::spawn(move || {
                    with_file_lock(&path, || {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        max.fetch_max(n, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        inside.fetch_sub(1, Ordering::SeqCst);
                    })
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(max.load(Ordering::SeqCst), 1);
        assert!(!locks().lock().contains_key(&path));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn schema_shape_and_key_order() {
        let schema = WriteTool.parameters();
        assert_eq!(
            serde_json::to_string(&schema_without_descriptions(&schema)).unwrap(),
            r#"{"type":"object","required":["path","content"],"properties":{"path":{"type":"string"},"content":{"type":"string"}}}"#
        );
        let keys: Vec<&String> = schema["properties"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|p| p.as_object().unwrap().keys())
            .collect();
        assert!(keys.iter().any(|k| k.as_str() == "description"));
    }
}
