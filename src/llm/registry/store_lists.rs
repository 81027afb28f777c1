//! The models-store.json lists that replace a provider's catalog instead of overlaying it
//! (providers-catalog.md §3.5), read at start-up as pi's RPC mode does (its first, offline
//! refresh phase); the file is never written here.
//!
//! - **OpenRouter** (pi's `withPersonalizedCatalog`): the entry holds the catalog narrowed to
//!   the key's models, limits and prices (`GET <baseUrl>/models/user`). Its models of provider
//!   `openrouter` replace the built-in ones when there is at least one; an empty list means
//!   the built-in catalog. No `lastModified` check: the list is the key's, not pi.dev's.
//! - **Radius** (pi's `radiusProvider.refreshModels`), the built-in `radius` and every
//!   models.json provider with `"oauth": "radius"`: the entry holds the gateway's `/v1/config`
//!   list. Once the file has an entry for the provider, its models of that provider replace
//!   the shipped ones, even when there are none (an organization may disable every model).
//!   Without an entry, an older pi's `gatewayConfig` in the provider's auth.json OAuth entry
//!   gives the list (pi then also copies it into the file; pi-rpc only reads it).
//!
//! Stored models are used as stored: fields pi-rpc does not model (a gateway's `lab`,
//! `enabled`, `providers`, …) are passed through to clients; models whose `type` pi does not
//! know are dropped, and only chat models (`type` absent or `"chat"`) are listed.

use serde_json::{Map, Value};

use super::super::auth::AuthStore;
use super::super::model::{Model, MODEL_KEYS};
use super::super::oauth::radius;
use super::models_json::{parse_models_json, BuiltinProvider};

/// A stored model object as a [`Model`] (`None` when it is not one).
pub(super) fn stored_model(v: &Value) -> Option<Model> {
    let obj = v.as_object()?;
    let mut model: Model = serde_json::from_value(v.clone()).ok()?;
    model.kind = obj.get("type").and_then(Value::as_str).map(str::to_string);
    let extra: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| !MODEL_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    model.extra = (!extra.is_empty()).then_some(extra);
    model.catalog_layout = true;
    Some(model)
}

/// The stored chat models of `provider` among `models`.
fn chat_models_of(models: &[Value], provider: &str) -> Vec<Model> {
    models
        .iter()
        .filter(|m| m.get("provider").and_then(Value::as_str) == Some(provider))
        .filter(|m| matches!(m.get("type").and_then(Value::as_str), None | Some("chat")))
        .filter(|m| m.get("type").is_none_or(Value::is_string))
        .filter_map(stored_model)
        .collect()
}

fn entry_models<'a>(store: Option<&'a Map<String, Value>>, provider: &str) -> Option<&'a [Value]> {
    let entry = store?.get(provider)?;
    Some(
        entry
            .get("models")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice),
    )
}

/// OpenRouter's saved per-key list, when it replaces the catalog.
pub(super) fn openrouter(store: Option<&Map<String, Value>>) -> Option<Vec<Model>> {
    let models = entry_models(store, "openrouter")?;
    // Models of a type pi does not know are dropped before the list is looked at.
    let any_of_provider = models.iter().any(|m| {
        m.get("provider").and_then(Value::as_str) == Some("openrouter")
            && matches!(
                m.get("type").and_then(Value::as_str),
                None | Some("chat" | "image" | "classifier")
            )
    });
    any_of_provider.then(|| chat_models_of(models, "openrouter"))
}

/// The gateway list of the Radius provider `provider`: from models-store.json, else from a
/// legacy `gatewayConfig` in its auth.json OAuth entry; `None` when neither has one.
pub(super) fn radius(
    store: Option<&Map<String, Value>>,
    provider: &str,
    oauth_entry: Option<&Map<String, Value>>,
) -> Option<Vec<Model>> {
    if let Some(models) = entry_models(store, provider) {
        return Some(chat_models_of(models, provider));
    }
    let legacy = radius::models_from_config(provider, oauth_entry?.get("gatewayConfig")?)?;
    (!legacy.is_empty()).then(|| chat_models_of(&legacy, provider))
}

/// The providers models.json declares Radius gateways (`"oauth": "radius"` and a `baseUrl`),
/// in file order, with their gateways (pi's `configureRadiusProviders`).
pub(super) fn radius_gateways(config: &Map<String, Value>) -> Vec<(String, String)> {
    config
        .iter()
        .filter(|(_, p)| p.get("oauth").and_then(Value::as_str) == Some("radius"))
        .filter_map(|(id, p)| {
            let base_url = p.get("baseUrl")?.as_str().filter(|u| !u.is_empty())?;
            Some((id.clone(), radius::gateway_of_base_url(base_url)))
        })
        .collect()
}

/// The Radius gateway `provider` signs in to, and its name, when it is a Radius provider: the
/// built-in `radius` (pi's gateway unless models.json points it elsewhere) or a models.json
/// provider with `"oauth": "radius"` and a `baseUrl`. Reads `<agent_dir>/models.json`.
pub fn radius_gateway(agent_dir: &std::path::Path, provider: &str) -> Option<(String, String)> {
    let path = agent_dir.join("models.json");
    let text = std::fs::read_to_string(&path).ok();
    let config = text
        .as_deref()
        .and_then(|t| parse_models_json(t, &path.display().to_string(), &mut Vec::new()))
        .unwrap_or_default();
    let name = config
        .get(provider)
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    match radius_gateways(&config)
        .into_iter()
        .find(|(id, _)| id == provider)
    {
        Some((_, gateway)) => Some((gateway, name.unwrap_or_else(|| provider.to_string()))),
        None if provider == "radius" => Some((
            radius::DEFAULT_GATEWAY.to_string(),
            name.unwrap_or_else(|| "Radius".to_string()),
        )),
        None => None,
    }
}

/// The list that replaces built-in provider `id`'s catalog, if any: OpenRouter's per-key
/// list, Radius' gateway list (`custom_gateway`: models.json points `radius` at another
/// gateway, which has no shipped models).
pub(super) fn replaced_list(
    id: &str,
    store: Option<&Map<String, Value>>,
    auth: &AuthStore,
    custom_gateway: Option<&str>,
) -> Option<Vec<Model>> {
    match id {
        "openrouter" => openrouter(store),
        "radius" => radius(store, id, auth.stored_oauth_entry(id)).or_else(|| {
            custom_gateway
                .filter(|g| *g != radius::DEFAULT_GATEWAY)
                .map(|_| Vec::new())
        }),
        _ => None,
    }
}

/// The provider pi builds for a models.json Radius gateway (`radiusProvider({id, name,
/// gateway})`), before models.json's own settings apply: the gateway list, else the shipped
/// Radius models (`shipped`, as models of `id`) when the gateway is pi's default one.
pub(super) fn custom_radius(
    id: &str,
    gateway: &str,
    cfg: &Map<String, Value>,
    store: Option<&Map<String, Value>>,
    auth: &AuthStore,
    shipped: impl FnOnce() -> Vec<Model>,
) -> BuiltinProvider {
    let models = radius(store, id, auth.stored_oauth_entry(id)).unwrap_or_else(|| {
        if gateway != radius::DEFAULT_GATEWAY {
            return Vec::new();
        }
        let mut models = shipped();
        for m in &mut models {
            m.provider = id.to_string();
        }
        models
    });
    let str_of = |k: &str| cfg.get(k).and_then(Value::as_str).map(str::to_string);
    BuiltinProvider {
        name: str_of("name").unwrap_or_else(|| id.to_string()),
        base_url: str_of("baseUrl").unwrap_or_default(),
        api: "pi-messages".to_string(),
        models,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(models: &[Model]) -> Vec<&str> {
        models.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn openrouter_lists_replace_the_catalog_when_not_empty() {
        let store = json!({"openrouter": {"checkedAt": 1, "models": [
            {"id": "a/b", "name": "AB", "api": "openai-completions", "provider": "openrouter",
             "baseUrl": "https://openrouter.ai/api/v1", "type": "chat", "contextWindow": 9},
            {"id": "img", "provider": "openrouter", "type": "image"},
            {"id": "other", "provider": "groq", "type": "chat"}]}});
        let got = openrouter(store.as_object()).unwrap();
        assert_eq!(ids(&got), ["a/b"]);
        assert_eq!(got[0].context_window, 9);
        assert_eq!(got[0].kind.as_deref(), Some("chat"));
        let empty = json!({"openrouter": {"models": []}});
        assert!(openrouter(empty.as_object()).is_none());
        let unknown = json!({"openrouter": {"models": [{"id": "v", "provider": "openrouter", "type": "video"}]}});
        assert!(
            openrouter(unknown.as_object()).is_none(),
            "unknown types are dropped first"
        );
        assert!(openrouter(None).is_none());
    }

    #[test]
    fn radius_lists_come_from_the_store_then_a_legacy_gateway_config() {
        let gateway_model = json!({"id": "fast", "name": "Fast", "reasoning": false,
            "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 100, "maxTokens": 10, "lab": "L", "enabled": true});
        let legacy = json!({"type": "oauth", "gatewayConfig": {
            "baseUrl": "https://gw.example/v1", "models": [gateway_model]}});
        let got = radius(None, "gw", legacy.as_object()).unwrap();
        assert_eq!(ids(&got), ["fast"]);
        assert_eq!(got[0].api, "pi-messages");
        assert_eq!(got[0].base_url, "https://gw.example/v1");
        assert_eq!(
            serde_json::to_value(&got[0]).unwrap()["lab"],
            json!("L"),
            "gateway fields pass through"
        );
        // An entry in the file wins, even an empty one.
        let store = json!({"gw": {"models": [], "checkedAt": 1}});
        assert_eq!(
            radius(store.as_object(), "gw", legacy.as_object()),
            Some(vec![])
        );
        assert_eq!(radius(None, "gw", None), None);
    }
}
