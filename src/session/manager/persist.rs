//! Writing the session file: lazily at the first conversation message, then append-only
//! (`session-format.md` §2, §7).

use super::*;

/// Who hears of a failed session write (set once by the mode: RPC tells the client).
type FailureHook = Box<dyn Fn(&str) + Send + Sync>;

fn failure_hook() -> &'static OnceLock<FailureHook> {
    static HOOK: OnceLock<FailureHook> = OnceLock::new();
    &HOOK
}

/// Sets what hears of a failed session write (issue 17 §5: the client must see it, not only
/// stderr). It is told the error text once per spell of failures: again only after a write
/// succeeded in between. Called with the state lock held, so it must not block long.
pub fn on_write_failure(hook: impl Fn(&str) + Send + Sync + 'static) {
    let _ = failure_hook().set(Box::new(hook));
}

impl SessionManager {
    pub(super) fn push_entry(&mut self, entry: Entry) -> Result<(), SessionError> {
        let id = entry.id().to_string();
        self.entries.push(entry);
        self.index
            .insert(id.as_str().into(), self.entries.len() - 1);
        let prev_leaf = self.leaf.replace(id.clone());
        if let Err(e) = self.persist_last() {
            self.entries.pop();
            self.index.remove(id.as_str());
            self.leaf = prev_leaf;
            if !std::mem::replace(&mut self.write_failing, true) {
                if let Some(hook) = failure_hook().get() {
                    hook(&e.to_string());
                }
            }
            return Err(e);
        }
        self.write_failing = false;
        if let (Some(t), Some(last)) = (self.totals.get_mut(), self.entries.last()) {
            t.add(last);
        }
        if let Some(last) = self.entries.last() {
            if last.kind() == EntryKind::Label {
                let last = last.clone();
                self.apply_label(&last);
            }
        }
        Ok(())
    }

    pub(super) fn has_conversation(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.role(), Some(Role::User | Role::Assistant)))
    }

    /// Writes the newest entry: the whole file at the first user/assistant message, then one
    /// `write_all` per appended line.
    pub(super) fn persist_last(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.flushed {
            let Some(last) = self.entries.last() else {
                return Ok(());
            };
            let mut line = String::with_capacity(last.raw().len() + 1);
            line.push_str(last.raw());
            line.push('\n');
            if self.file.is_none() {
                let f = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|source| io_err(&path, source))?;
                self.file = Some(f);
            }
            let Some(file) = self.file.as_mut() else {
                return Ok(());
            };
            return append_whole_line(file, &line).map_err(|source| io_err(&path, source));
        }
        if !self.has_conversation() {
            return Ok(());
        }
        self.write_whole_file()
    }

    /// Creates the file (exclusively) with the header and every entry; keeps it open.
    pub(super) fn write_whole_file(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let io = |source| io_err(&path, source);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io)?;
        let header = crate::protocol::framing::encode(&self.header.to_value());
        if let Err(e) = load::write_lines(&mut file, &header, self.entries.iter().map(Entry::raw)) {
            // Leave no half-written file behind: the next append tries again.
            drop(file);
            let _ = std::fs::remove_file(&path);
            return Err(io(e));
        }
        self.file = Some(file);
        self.flushed = true;
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Fork and clone (`session-format.md` §7, pi's `AgentSessionRuntime.fork`)
}

/// Appends one line so that a failure leaves no partial line behind. A full disk (ENOSPC), a
/// file-size limit (EFBIG) or an I/O error can fail `write_all` after part of the line was
/// written; the next append would then be glued to that fragment, and on reload both would be
/// one unreadable line. So the file is cut back to its length before the write; if even that
/// fails, a newline ends the fragment (the fragment is then skipped on load, the next entry is
/// intact). The caller drops the entry from memory too, so memory and file agree. The handle
/// may be the one that created the file (not opened for appending), so after the cut its
/// offset is moved back too: else the next write would leave a hole of zeros.
fn append_whole_line(file: &mut File, line: &str) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let before = file.metadata().map(|m| m.len());
    let Err(e) = file.write_all(line.as_bytes()) else {
        return Ok(());
    };
    let cut = before.and_then(|len| {
        file.set_len(len)?;
        file.seek(SeekFrom::Start(len)).map(|_| ())
    });
    if cut.is_err() {
        let _ = file.write_all(b"\n");
    }
    Err(e)
}
