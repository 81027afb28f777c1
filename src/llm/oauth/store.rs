//! auth.json on disk as pi's `FileAuthStorageBackend` handles it: created as `{}` (mode 0600,
//! parent directory 0700) before it is locked, read fresh under the lock, written whole with
//! `JSON.stringify(data, null, 2)` (mode 0600 only when the write creates the file).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Creates the parent directory (0700) and the file (`{}`, 0600) when missing; returns the
/// file's real path (symlinks resolved, so aliases share one lock).
pub fn ensure_file(path: &Path) -> io::Result<PathBuf> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
        }
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut f) => f.write_all(b"{}")?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    fs::canonicalize(path)
}

/// Reads and parses the file (BOM stripped; an empty file is `{}`). Errors are texts in
/// `JSON.parse`'s spirit, for "Credential store modify failed" messages.
pub fn read(path: &Path) -> Result<Map<String, Value>, String> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(format!("{e}: {}", path.display())),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!("Invalid {}: expected an object", path.display())),
        Err(e) => Err(format!("Invalid JSON in {}: {e}", path.display())),
    }
}

/// Writes the whole file as `JSON.stringify(data, null, 2)`.
pub fn write(path: &Path, data: &Map<String, Value>) -> io::Result<()> {
    let text = crate::js::json::js_stringify_pretty(&Value::Object(data.clone()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()
}

/// `{...old, ...new}`: the refreshed fields replace the stored ones, every other field of the
/// entry (provider-specific data pi-rpc does not know) is kept in place.
pub fn merge_entry(old: &Map<String, Value>, new: &Map<String, Value>) -> Map<String, Value> {
    let mut out = old.clone();
    for (k, v) in new {
        out.insert(k.clone(), v.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    fn temp_dir() -> PathBuf {
        std::env::temp_dir().join(format!("pi-rpc-store-{}", uuid::Uuid::new_v4()))
    }

    #[test]
    fn ensure_file_creates_dir_and_file_with_private_modes() {
        let dir = temp_dir();
        let path = dir.join("agent").join("auth.json");
        let real = ensure_file(&path).unwrap();
        assert_eq!(fs::read_to_string(&real).unwrap(), "{}");
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&real), 0o600);
        assert_eq!(mode(&dir.join("agent")), 0o700);
        // An existing file is left alone.
        fs::write(&path, "{\"a\":1}").unwrap();
        ensure_file(&path).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ensure_file_resolves_symlinks() {
        let dir = temp_dir();
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("real.json");
        fs::write(&target, "{}").unwrap();
        let link = dir.join("auth.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            ensure_file(&link).unwrap(),
            fs::canonicalize(&target).unwrap()
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn write_is_pretty_json_like_pi() {
        let dir = temp_dir();
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("auth.json");
        let data = json!({
            "b": {"type": "api_key", "key": "k"},
            "a": {"type": "oauth", "access": "x", "refresh": "r", "expires": 1767225600000u64, "ids": []}
        });
        write(&path, data.as_object().unwrap()).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\n  \"b\": {\n    \"type\": \"api_key\",\n    \"key\": \"k\"\n  },\n  \"a\": {\n    \"type\": \"oauth\",\n    \"access\": \"x\",\n    \"refresh\": \"r\",\n    \"expires\": 1767225600000,\n    \"ids\": []\n  }\n}"
        );
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(read(&path).unwrap(), *data.as_object().unwrap());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn read_errors_and_empty_files() {
        let dir = temp_dir();
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("auth.json");
        assert_eq!(read(&path).unwrap(), Map::new());
        fs::write(&path, "").unwrap();
        assert_eq!(read(&path).unwrap(), Map::new());
        fs::write(&path, "\u{feff}{\"p\":{}}").unwrap();
        assert!(read(&path).unwrap().contains_key("p"));
        fs::write(&path, "[]").unwrap();
        assert!(read(&path).unwrap_err().contains("expected an object"));
        fs::write(&path, "{oops").unwrap();
        assert!(read(&path).unwrap_err().starts_with("Invalid JSON in "));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn merge_keeps_unknown_fields_and_their_order() {
        let old = json!({"type": "oauth", "refresh": "r0", "access": "a0", "expires": 1, "enterpriseUrl": "ghe.example", "x": [1]});
        let new = json!({"type": "oauth", "refresh": "r1", "access": "a1", "expires": 2, "availableModelIds": ["m"]});
        let merged = merge_entry(old.as_object().unwrap(), new.as_object().unwrap());
        assert_eq!(
            Value::Object(merged),
            json!({"type": "oauth", "refresh": "r1", "access": "a1", "expires": 2, "enterpriseUrl": "ghe.example", "x": [1], "availableModelIds": ["m"]})
        );
        let merged = merge_entry(old.as_object().unwrap(), new.as_object().unwrap());
        let keys: Vec<&str> = merged.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "type",
                "refresh",
                "access",
                "expires",
                "enterpriseUrl",
                "x",
                "availableModelIds"
            ]
        );
    }
}
