//! Writing the global settings file: under pi's lock convention, re-read, one key set, written
//! back 2-space indented through a temp file and a rename.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use super::*;

impl Settings {
    /// Sets `path` (e.g. `["compaction", "enabled"]`) to `value` in the **global** settings file:
    /// under the settings lock, re-reads the file, sets the key (creating intermediate objects),
    /// writes it back 2-space indented through a temp file + rename, then refreshes the merged
    /// view. In-memory settings are only updated in memory.
    ///
    /// When the file cannot be written (malformed on disk — it is then left alone —, locked, or
    /// an I/O error), the value still takes effect in memory for this process, as in pi, and
    /// the error says why it was not persisted.
    pub fn set_global(&mut self, path: &[&str], value: Value) -> Result<(), SettingsError> {
        if path.is_empty() {
            return Err(SettingsError::EmptyKey);
        }
        let Some(file) = self.global_path.clone() else {
            set_in(&mut self.global, path, value);
            self.remerge();
            return Ok(());
        };
        let persisted = self.persist_global(&file, path, value.clone());
        if persisted.is_err() {
            set_in(&mut self.global, path, value);
            self.remerge();
        }
        persisted
    }

    /// The file half of [`Settings::set_global`].
    fn persist_global(
        &mut self,
        file: &Path,
        path: &[&str],
        value: Value,
    ) -> Result<(), SettingsError> {
        let file = file.to_path_buf();
        let dir = file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        fs::create_dir_all(&dir).map_err(|source| SettingsError::Io {
            path: dir.clone(),
            action: "create directory",
            source,
        })?;
        let _lock = SettingsLock::acquire(&file)?;
        let mut current = match fs::read(&file) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                if text.is_empty() {
                    Map::new()
                } else {
                    match serde_json::from_str::<Value>(text) {
                        Ok(Value::Object(m)) => m,
                        Ok(other) => {
                            return Err(SettingsError::Malformed {
                                path: file,
                                message: format!("expected a JSON object, found {}", kind(&other)),
                            })
                        }
                        Err(e) => {
                            return Err(SettingsError::Malformed {
                                path: file,
                                message: e.to_string(),
                            })
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(source) => {
                return Err(SettingsError::Io {
                    path: file,
                    action: "read",
                    source,
                })
            }
        };
        set_in(&mut current, path, value);
        let text = serde_json::to_string_pretty(&Value::Object(current.clone())).map_err(|e| {
            SettingsError::Io {
                path: file.clone(),
                action: "serialize",
                source: std::io::Error::other(e),
            }
        })?;
        write_atomically(&file, &dir, text.as_bytes())?;
        migrate(&mut current);
        self.global = current;
        self.remerge();
        Ok(())
    }
}

/// The lock guarding the global settings file: a directory `<settings.json>.lock`, the same
/// convention `proper-lockfile` uses, so pi and pi-rpc processes exclude each other. Stale after
/// ten seconds.
struct SettingsLock {
    path: PathBuf,
}

impl SettingsLock {
    const STALE: Duration = Duration::from_secs(10);
    const WAIT: Duration = Duration::from_millis(1000);

    fn acquire(file: &Path) -> Result<SettingsLock, SettingsError> {
        let mut name = file.as_os_str().to_os_string();
        name.push(".lock");
        let path = PathBuf::from(name);
        let deadline = Instant::now() + Self::WAIT;
        loop {
            match fs::create_dir(&path) {
                Ok(()) => return Ok(SettingsLock { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = fs::symlink_metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > Self::STALE);
                    if stale {
                        if fs::remove_dir(&path).is_err() {
                            let _ = fs::remove_file(&path);
                        }
                        continue;
                    }
                    if Instant::now() >= deadline {
                        return Err(SettingsError::Locked {
                            path: file.to_path_buf(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(source) => {
                    return Err(SettingsError::Io {
                        path,
                        action: "create lock",
                        source,
                    })
                }
            }
        }
    }
}

impl Drop for SettingsLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.path);
    }
}

fn write_atomically(file: &Path, dir: &Path, bytes: &[u8]) -> Result<(), SettingsError> {
    let base = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "settings.json".to_string());
    let tmp = dir.join(format!(
        ".{base}.{}.{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, file)
    })();
    result.map_err(|source| {
        let _ = fs::remove_file(&tmp);
        SettingsError::Io {
            path: file.to_path_buf(),
            action: "write",
            source,
        }
    })
}
