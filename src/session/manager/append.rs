//! Appending entries after the leaf, and moving the leaf (`session-format.md` §2, §5).

use serde_json::{Map, Value};

use super::*;

impl SessionManager {
    /// Appends an entry of `kind` with `fields` after the leaf; it becomes the new leaf.
    /// Persisted as `session-format.md` §2 says; on a write failure nothing is kept.
    pub fn append(
        &mut self,
        kind: impl Into<EntryKind>,
        fields: Map<String, Value>,
    ) -> Result<Entry, SessionError> {
        let id = self.new_id();
        let entry = Entry::base(
            &kind.into(),
            &id,
            self.leaf.as_deref(),
            &util::now_iso(),
            fields,
        );
        self.push_entry(entry.clone())?;
        Ok(entry)
    }

    pub(super) fn new_id(&self) -> String {
        migrate::generate_id(&|c| self.index.contains_key(c))
    }

    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<Entry, SessionError> {
        let mut f = Map::new();
        f.insert("provider".into(), provider.into());
        f.insert("modelId".into(), model_id.into());
        self.append(EntryKind::ModelChange, f)
    }

    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<Entry, SessionError> {
        let mut f = Map::new();
        f.insert("thinkingLevel".into(), level.into());
        self.append(EntryKind::ThinkingLevelChange, f)
    }

    pub fn append_message(&mut self, message: Value) -> Result<Entry, SessionError> {
        let mut f = Map::new();
        f.insert("message".into(), message);
        self.append(EntryKind::Message, f)
    }

    /// Replaces the `message` of message entry `id` in memory only: the file keeps the line
    /// already written. pi's tools rewrite a tool call's arguments in place after the assistant
    /// message was persisted; its in-memory entries (`get_entries`, context rebuilds) show that.
    pub fn set_message_in_memory(&mut self, id: &str, message: Value) -> bool {
        let Some(&i) = self.index.get(id) else {
            return false;
        };
        match self.entries.get(i) {
            Some(entry) if entry.kind() == EntryKind::Message => {
                self.entries[i] = entry.with_field("message", message);
                true
            }
            _ => false,
        }
    }

    /// A `session_info` entry; newlines become spaces and the name is trimmed (pi's sanitizing).
    pub fn append_session_info(&mut self, name: &str) -> Result<Entry, SessionError> {
        let mut clean = String::with_capacity(name.len());
        let mut in_break = false;
        for c in name.chars() {
            if c == '\r' || c == '\n' {
                if !in_break {
                    clean.push(' ');
                }
                in_break = true;
            } else {
                clean.push(c);
                in_break = false;
            }
        }
        let mut f = Map::new();
        f.insert("name".into(), clean.trim().into());
        self.append(EntryKind::SessionInfo, f)
    }

    /// A `custom` entry (extension state): `type, customType, data, id, parentId, timestamp`.
    /// `data: None` omits the key.
    pub fn append_custom(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<Entry, SessionError> {
        let mut m = Map::new();
        m.insert("type".into(), "custom".into());
        m.insert("customType".into(), custom_type.into());
        if let Some(d) = data {
            m.insert("data".into(), d);
        }
        self.append_payload_first(m)
    }

    /// A `custom_message` entry: `type, customType, content, display, details?, id, parentId,
    /// timestamp`.
    pub fn append_custom_message(
        &mut self,
        custom_type: &str,
        content: Value,
        display: bool,
        details: Option<Value>,
    ) -> Result<Entry, SessionError> {
        let mut m = Map::new();
        m.insert("type".into(), "custom_message".into());
        m.insert("customType".into(), custom_type.into());
        m.insert("content".into(), content);
        m.insert("display".into(), display.into());
        if let Some(d) = details {
            m.insert("details".into(), d);
        }
        self.append_payload_first(m)
    }

    pub(super) fn append_payload_first(
        &mut self,
        mut m: Map<String, Value>,
    ) -> Result<Entry, SessionError> {
        m.insert("id".into(), self.new_id().into());
        m.insert(
            "parentId".into(),
            self.leaf.clone().map_or(Value::Null, Value::String),
        );
        m.insert("timestamp".into(), util::now_iso().into());
        let entry = Entry::from_map(m);
        self.push_entry(entry.clone())?;
        Ok(entry)
    }

    /// A `label` entry on `target_id`; `None` or `""` clears the label (`None` omits the key).
    pub fn append_label(
        &mut self,
        target_id: &str,
        label: Option<&str>,
    ) -> Result<Entry, SessionError> {
        if !self.index.contains_key(target_id) {
            return Err(SessionError::Invalid(format!(
                "Entry {target_id} not found"
            )));
        }
        let mut f = Map::new();
        f.insert("targetId".into(), target_id.into());
        if let Some(l) = label {
            f.insert("label".into(), l.into());
        }
        self.append(EntryKind::Label, f)
    }

    /// A `compaction` entry (`type, id, parentId, timestamp, summary, firstKeptEntryId,
    /// tokensBefore, details?, usage?, fromHook, systemMessage?`). `first_kept_entry_id = None`
    /// keeps nothing (the entry's own id). The `systemMessage` checkpoint gets the entry's time
    /// as its `timestamp`.
    #[allow(clippy::too_many_arguments)]
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: u64,
        details: Option<Value>,
        usage: Option<Value>,
        from_hook: bool,
        system_message: Option<Value>,
    ) -> Result<Entry, SessionError> {
        let id = self.new_id();
        let timestamp = util::now_iso();
        let mut f = Map::new();
        f.insert("summary".into(), summary.into());
        f.insert(
            "firstKeptEntryId".into(),
            first_kept_entry_id.unwrap_or(&id).into(),
        );
        f.insert("tokensBefore".into(), tokens_before.into());
        if let Some(d) = details {
            f.insert("details".into(), d);
        }
        if let Some(u) = usage {
            f.insert("usage".into(), u);
        }
        f.insert("fromHook".into(), from_hook.into());
        if let Some(mut s) = system_message {
            // The checkpoint is stamped with the compaction's own time (in ms), as pi does.
            if let (Some(m), Some(ms)) = (s.as_object_mut(), util::ms_from_iso(&timestamp)) {
                m.insert("timestamp".into(), ms.into());
            }
            f.insert("systemMessage".into(), s);
        }
        let entry = Entry::base(
            &EntryKind::Compaction,
            &id,
            self.leaf.as_deref(),
            &timestamp,
            f,
        );
        self.push_entry(entry.clone())?;
        Ok(entry)
    }

    /// A `usage` entry: `kind, provider, model, usage, note?`.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Value,
        note: Option<&str>,
    ) -> Result<Entry, SessionError> {
        let mut f = Map::new();
        f.insert("kind".into(), kind.into());
        f.insert("provider".into(), provider.into());
        f.insert("model".into(), model.into());
        f.insert("usage".into(), usage);
        if let Some(n) = note.filter(|n| !n.is_empty()) {
            f.insert("note".into(), n.into());
        }
        self.append(EntryKind::Usage, f)
    }

    /// A `context_edit` entry hiding (`None`) or replacing the content of an earlier
    /// model-visible entry on the active branch (pi's `appendContextEdit`).
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<Value>,
    ) -> Result<Entry, SessionError> {
        if let Some(r) = &replacement {
            let ok = matches!(
                r.get("content"),
                Some(Value::String(_)) | Some(Value::Array(_))
            );
            if !ok {
                return Err(SessionError::Invalid(
                    "Context edit replacement must be null or contain string/array content".into(),
                ));
            }
        }
        let Some(target) = self.entry(target_id) else {
            return Err(SessionError::Invalid(format!(
                "Entry {target_id} not found"
            )));
        };
        if !self.branch().iter().any(|e| e.id() == target_id) {
            return Err(SessionError::Invalid(format!(
                "Entry {target_id} is not on the active branch"
            )));
        }
        // The role of the message the target contributes (a custom_message contributes a
        // `custom` one): only user, assistant, tool-result and custom content can be edited.
        let role = match (target.kind(), target.role()) {
            (EntryKind::CustomMessage, _) => Role::Custom,
            (EntryKind::Message, Some(r @ (Role::User | Role::Assistant | Role::ToolResult))) => {
                r.clone()
            }
            _ => {
                return Err(SessionError::Invalid(format!(
                    "Entry {target_id} does not contribute editable model content"
                )))
            }
        };
        let normalized = match replacement {
            Some(Value::Object(mut r)) if matches!(role, Role::Assistant | Role::ToolResult) => {
                if let Some(Value::String(s)) = r.get("content").cloned() {
                    r.insert(
                        "content".into(),
                        serde_json::json!([{"type": "text", "text": s}]),
                    );
                }
                Value::Object(r)
            }
            Some(v) => v,
            None => Value::Null,
        };
        let mut f = Map::new();
        f.insert("targetId".into(), target_id.into());
        f.insert("replacement".into(), normalized);
        self.append(EntryKind::ContextEdit, f)
    }

    /// Moves the leaf to `id` (tree navigation); the next entry becomes its child.
    pub fn branch_to(&mut self, id: &str) -> Result<(), SessionError> {
        if !self.index.contains_key(id) {
            return Err(SessionError::Invalid(format!("Entry {id} not found")));
        }
        self.leaf = Some(id.to_string());
        Ok(())
    }

    /// Moves the leaf before the first entry (the next entry becomes a new root).
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Moves the leaf to `from` (`None` = root) and appends a `branch_summary` there
    /// (`fromId` = the old leaf, or `"root"`).
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        usage: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<Entry, SessionError> {
        if let Some(id) = from {
            if !self.index.contains_key(id) {
                return Err(SessionError::Invalid(format!("Entry {id} not found")));
            }
        }
        let from_id = self.leaf.clone().unwrap_or_else(|| "root".to_string());
        let previous = std::mem::replace(&mut self.leaf, from.map(str::to_string));
        let mut f = Map::new();
        f.insert("fromId".into(), from_id.into());
        f.insert("summary".into(), summary.into());
        if let Some(d) = details {
            f.insert("details".into(), d);
        }
        if let Some(u) = usage {
            f.insert("usage".into(), u);
        }
        if let Some(h) = from_hook {
            f.insert("fromHook".into(), h.into());
        }
        let result = self.append(EntryKind::BranchSummary, f);
        if result.is_err() {
            self.leaf = previous;
        }
        result
    }
}
