//! New sessions from this one: `fork`, `clone` and branched copies (`session-format.md` §7).

use serde_json::{Map, Value};

use super::*;

impl SessionManager {
    /// `fork <entryId>`: a new session holding the path up to (excluding) that user message.
    /// Persisted: a new file in the session dir with `parentSession` = this file, written now
    /// when the copied path has a user/assistant message. In memory: the branched copy.
    pub fn fork(&self, entry_id: &str) -> Result<Forked, SessionError> {
        let entry = self.entry(entry_id).ok_or(SessionError::InvalidForkEntry)?;
        if entry.role() != Some(&Role::User) {
            return Err(SessionError::InvalidForkEntry);
        }
        let text = entry
            .message()
            .map(|m| user_message_text(&m))
            .unwrap_or_default();
        let target = entry.parent_id().map(str::to_string);
        let manager = self.branch_off(target.as_deref())?;
        Ok(Forked { manager, text })
    }

    /// `clone`: a new session holding the whole active branch.
    pub fn clone_session(&self) -> Result<SessionManager, SessionError> {
        let leaf = self.leaf.clone().ok_or(SessionError::NoCurrentEntry)?;
        self.branch_off(Some(&leaf))
    }

    pub(super) fn branch_off(&self, target: Option<&str>) -> Result<SessionManager, SessionError> {
        let cwd = PathBuf::from(&self.header.cwd);
        match (&self.path, target) {
            (Some(path), None) => Ok(SessionManager::create(
                &cwd,
                self.session_dir.as_deref(),
                Some(path.to_string_lossy().into_owned()),
            )),
            (Some(path), Some(t)) => {
                if !path.exists() {
                    return Err(SessionError::NotSavedYet);
                }
                self.branched(t)
            }
            (None, None) => Ok(SessionManager::create(&cwd, None, None)),
            (None, Some(t)) => self.branched(t),
        }
    }

    /// pi's `createBranchedSession(leafId)`: a new session whose entries are the path from the
    /// root to `leaf_id` (same ids; `label` entries dropped from the path and the labels of the
    /// copied entries re-appended at the end with their original timestamps).
    pub fn branched(&self, leaf_id: &str) -> Result<SessionManager, SessionError> {
        let path = self.branch_from(Some(leaf_id));
        if path.is_empty() {
            return Err(SessionError::Invalid(format!("Entry {leaf_id} not found")));
        }
        let mut copied: Vec<Entry> = Vec::with_capacity(path.len());
        let mut replacement_by_label: HashMap<&str, String> = HashMap::new();
        let mut pending_labels: Vec<&str> = Vec::new();
        let mut parent: Option<String> = None;
        for e in path {
            if e.kind() == EntryKind::Label {
                pending_labels.push(e.id());
                continue;
            }
            for l in pending_labels.drain(..) {
                replacement_by_label.insert(l, e.id().to_string());
            }
            let mut copy = e.with_parent_id(parent.as_deref());
            if e.kind() == EntryKind::Compaction {
                if let Some(fk) = e.get_str("firstKeptEntryId") {
                    if fk != e.id() {
                        if let Some(r) = replacement_by_label.get(fk.as_str()) {
                            copy = copy.with_field("firstKeptEntryId", Value::String(r.clone()));
                        }
                    }
                }
            }
            parent = Some(e.id().to_string());
            copied.push(copy);
        }

        let persisted = self.path.is_some();
        let header = SessionHeader::new(
            uuid::Uuid::now_v7().to_string(),
            &self.header.cwd,
            if persisted {
                self.path.as_ref().map(|p| p.to_string_lossy().into_owned())
            } else {
                None
            },
        );
        let mut ids: HashSet<String> = copied.iter().map(|e| e.id().to_string()).collect();
        let mut label_parent = copied.last().map(|e| e.id().to_string());
        let mut label_entries = Vec::new();
        for l in &self.labels {
            if !ids.contains(&l.target_id) {
                continue;
            }
            let id = migrate::generate_id(&|c| ids.contains(c));
            ids.insert(id.clone());
            let mut f = Map::new();
            f.insert("targetId".into(), l.target_id.clone().into());
            f.insert("label".into(), l.label.clone().into());
            label_entries.push(Entry::base(
                &EntryKind::Label,
                &id,
                label_parent.as_deref(),
                &l.timestamp,
                f,
            ));
            label_parent = Some(id);
        }
        copied.extend(label_entries);

        let path = self
            .session_dir
            .as_deref()
            .filter(|_| persisted)
            .map(|d| session_file_name(d, &header.timestamp, &header.id));
        let mut sm = SessionManager::empty(header, path, self.session_dir.clone());
        sm.set_entries(copied);
        if sm.path.is_some() && sm.has_conversation() {
            sm.write_whole_file()?;
        }
        Ok(sm)
    }
}
