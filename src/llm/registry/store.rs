//! `<agentDir>/models-store.json`: the catalog overlays pi saves after refreshing a provider's
//! model list from pi.dev (providers-catalog.md §3.5). pi's RPC mode applies them at start-up
//! and never refreshes them; pi-rpc does the same and never writes the file.
//!
//! An entry `{"models": […], "lastModified": ms, …}` applies only when it is newer than the
//! bundled catalog (`lastModified` > the catalog's `generatedAt`); its models replace built-in
//! ones of the same type and id in place, and new ones are appended (pi's `withRemoteCatalog`).
//! Radius and OpenRouter lists replace the catalog instead (`store_lists.rs`).

use std::path::Path;

use serde_json::{Map, Value};

use super::super::auth::strip_serde_position;
use super::super::model::Model;

/// The file's entries, or `None` when it is missing; a broken file is reported in `diags`.
pub(super) fn load(agent_dir: &Path, diags: &mut Vec<String>) -> Option<Map<String, Value>> {
    let path = agent_dir.join("models-store.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            diags.push(format!(
                "Warning: failed to read {}: {e}; ignoring it",
                path.display()
            ));
            return None;
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Some(m),
        Ok(_) => {
            diags.push(format!(
                "Warning: invalid {}: expected an object of providers; ignoring it",
                path.display()
            ));
            None
        }
        Err(e) => {
            diags.push(format!(
                "Warning: failed to parse {} at line {} column {}: {}; ignoring it",
                path.display(),
                e.line(),
                e.column(),
                strip_serde_position(&e.to_string())
            ));
            None
        }
    }
}

/// The stored chat models of `provider` that apply over a catalog generated at
/// `generated_at_ms`, as `Model`s (empty when none apply).
pub(super) fn overlay(
    store: Option<&Map<String, Value>>,
    provider: &str,
    generated_at_ms: Option<u64>,
) -> Vec<Model> {
    if matches!(provider, "radius" | "openrouter") {
        return Vec::new();
    }
    let Some(entry) = store.and_then(|s| s.get(provider)) else {
        return Vec::new();
    };
    let newer = match (
        generated_at_ms,
        entry.get("lastModified").and_then(Value::as_f64),
    ) {
        (None, _) => true,
        (Some(g), Some(m)) => m > g as f64,
        (Some(_), None) => false,
    };
    if !newer {
        return Vec::new();
    }
    entry
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m.get("provider").and_then(Value::as_str) == Some(provider))
        .filter(|m| matches!(m.get("type").and_then(Value::as_str), None | Some("chat")))
        .filter_map(super::store_lists::stored_model)
        .collect()
}

/// pi's `mergeModels`: same id replaces in place, new ones are appended.
pub(super) fn merge(mut base: Vec<Model>, overlay: Vec<Model>) -> Vec<Model> {
    for m in overlay {
        match base.iter().position(|b| b.id == m.id) {
            Some(i) => base[i] = m,
            None => base.push(m),
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_newer_entries_of_the_provider_apply() {
        let store = json!({
            "deepseek": {"lastModified": 2000, "checkedAt": 3000, "models": [
                {"id": "deepseek-v4-pro", "name": "Renamed", "api": "openai-completions", "provider": "deepseek",
                 "baseUrl": "https://api.deepseek.com", "reasoning": true, "input": ["text"],
                 "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
                 "contextWindow": 1000, "maxTokens": 100, "type": "chat"},
                {"id": "brand-new", "name": "New", "api": "openai-completions", "provider": "deepseek",
                 "baseUrl": "https://api.deepseek.com", "type": "chat"},
                {"id": "img", "provider": "deepseek", "type": "image"},
                {"id": "other", "provider": "groq"}]},
            "groq": {"lastModified": 500, "models": [{"id": "x", "provider": "groq"}]},
            "openrouter": {"lastModified": 9000, "models": [{"id": "y", "provider": "openrouter"}]}
        });
        let store = store.as_object();
        let ids = |v: Vec<Model>| v.into_iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(
            ids(overlay(store, "deepseek", Some(1000))),
            ["deepseek-v4-pro", "brand-new"]
        );
        assert!(
            overlay(store, "deepseek", Some(2000)).is_empty(),
            "not newer"
        );
        assert!(overlay(store, "groq", Some(1000)).is_empty());
        assert!(overlay(store, "openrouter", Some(1000)).is_empty());
        let base = vec![
            Model {
                id: "a".into(),
                ..Model::default()
            },
            Model {
                id: "deepseek-v4-pro".into(),
                ..Model::default()
            },
        ];
        let merged = merge(base, overlay(store, "deepseek", Some(1000)));
        assert_eq!(
            merged.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["a", "deepseek-v4-pro", "brand-new"]
        );
        assert_eq!(merged[1].name, "Renamed");
        assert_eq!(merged[1].kind.as_deref(), Some("chat"));
    }
}
