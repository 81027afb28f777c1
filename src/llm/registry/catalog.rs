//! The built-in catalog: pi's 43 providers and their chat models, generated from pi's npm
//! package by `catalog/generate.mjs` into `catalog/catalog.jsonl` (the layout is described
//! there). Start-up parses only the index line (~5 KB); a provider's models are parsed the
//! first time that provider is needed, and the shared tables (costs, compat, thinking maps,
//! input limits, …) the first time any provider is.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::model::{Model, ModelCost};

const CATALOG: &str = include_str!("catalog/catalog.jsonl");

/// Line 1: the index.
/// (`package`, `version` and `generatedAt` name the data's source; nothing reads them.)
#[derive(Debug, Deserialize)]
pub(super) struct CatalogIndex {
    pub(super) providers: Vec<IndexEntry>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct IndexEntry {
    pub(super) id: String,
    pub(super) name: String,
    /// The provider-level base URL (absent for providers that resolve it per API or request).
    #[serde(default)]
    pub(super) base_url: Option<String>,
    /// `[api, baseUrl]` pairs in the order the provider's models first use them.
    pub(super) apis: Vec<(String, String)>,
    pub(super) count: usize,
}

/// Line 2: values shared between models, referenced by index from the rows.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shared {
    cost: Vec<ModelCost>,
    compat: Vec<Map<String, Value>>,
    thinking_level_map: Vec<Map<String, Value>>,
    input_limits: Vec<Value>,
    headers: Vec<Map<String, Value>>,
    prompt_cache: Vec<Value>,
    input: Vec<Vec<String>>,
}

/// One model of a provider line (see generate.mjs for the keys).
#[derive(Deserialize)]
struct Row<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    a: usize,
    #[serde(default, borrow)]
    u: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    r: bool,
    w: u64,
    m: u64,
    i: usize,
    c: usize,
    #[serde(default)]
    t: Option<usize>,
    #[serde(default)]
    x: Option<usize>,
    #[serde(default)]
    l: Option<usize>,
    #[serde(default)]
    h: Option<usize>,
    #[serde(default)]
    p: Option<usize>,
    #[serde(default)]
    e: Option<Map<String, Value>>,
}

/// The index of the built-in catalog. An unusable catalog (it is compiled in, so only a bad
/// regeneration can cause this) is an error the registry reports once.
pub(super) fn index() -> Result<CatalogIndex, String> {
    let line = CATALOG.lines().next().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("index: {e}"))
}

fn shared() -> Result<&'static Shared, String> {
    static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let line = CATALOG.lines().nth(1).unwrap_or_default();
            serde_json::from_str(line).map_err(|e| format!("shared tables: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The models of the `n`-th provider of the index, in catalog order.
pub(super) fn models(n: usize, entry: &IndexEntry) -> Result<Vec<Model>, String> {
    let shared = shared()?;
    let line = CATALOG
        .lines()
        .nth(n + 2)
        .ok_or_else(|| format!("{}: no model line", entry.id))?;
    let rows: Vec<Row> = serde_json::from_str(line).map_err(|e| format!("{}: {e}", entry.id))?;
    let bad = |what: &str, model: &str| format!("{}/{model}: bad {what} reference", entry.id);
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let id = row.id.as_ref();
        let (api, api_base) = entry.apis.get(row.a).ok_or_else(|| bad("api", id))?;
        fn pick<T: Clone>(table: &[T], i: Option<usize>) -> Result<Option<T>, ()> {
            match i {
                None => Ok(None),
                Some(i) => table.get(i).cloned().map(Some).ok_or(()),
            }
        }
        out.push(Model {
            id: id.to_string(),
            name: row.name.as_deref().unwrap_or(id).to_string(),
            api: api.clone(),
            provider: entry.id.clone(),
            base_url: row.u.as_deref().unwrap_or(api_base).to_string(),
            reasoning: row.r,
            thinking_level_map: pick(&shared.thinking_level_map, row.t)
                .map_err(|()| bad("thinkingLevelMap", id))?,
            input: shared
                .input
                .get(row.i)
                .cloned()
                .ok_or_else(|| bad("input", id))?,
            input_limits: pick(&shared.input_limits, row.l).map_err(|()| bad("inputLimits", id))?,
            cost: shared
                .cost
                .get(row.c)
                .cloned()
                .ok_or_else(|| bad("cost", id))?,
            prompt_cache: pick(&shared.prompt_cache, row.p).map_err(|()| bad("promptCache", id))?,
            context_window: row.w,
            max_tokens: row.m,
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            headers: pick(&shared.headers, row.h).map_err(|()| bad("headers", id))?,
            compat: pick(&shared.compat, row.x).map_err(|()| bad("compat", id))?,
            extra: row.e,
            kind: Some("chat".to_string()),
            catalog_layout: true,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_line_parses_with_its_count() {
        let index = index().unwrap();
        let head: Value = serde_json::from_str(CATALOG.lines().next().unwrap()).unwrap();
        assert_eq!(head["package"], "@earendil-works/pi-ai");
        assert_eq!(head["version"], "1.6.0");
        assert_eq!(index.providers.len(), 43);
        let mut total = 0;
        for (n, entry) in index.providers.iter().enumerate() {
            let models = models(n, entry).unwrap();
            assert_eq!(models.len(), entry.count, "{}", entry.id);
            assert!(models.iter().all(|m| m.provider == entry.id));
            total += models.len();
        }
        assert_eq!(total, 1698);
        assert_eq!(CATALOG.lines().count(), index.providers.len() + 2);
    }

    #[test]
    fn rows_expand_to_pi_model_objects() {
        let index = index().unwrap();
        let n = index
            .providers
            .iter()
            .position(|p| p.id == "deepseek")
            .unwrap();
        let models = models(n, &index.providers[n]).unwrap();
        let flash = models.iter().find(|m| m.id == "deepseek-flash").unwrap();
        let json = serde_json::to_value(flash).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id":"deepseek-flash","name":"DeepSeek V4.1 Flash","api":"openai-completions",
                "provider":"deepseek","baseUrl":"https://api.deepseek.com","reasoning":true,
                "input":["text","image"],"cost":{"input":0.3,"output":1.2,"cacheRead":0.006,"cacheWrite":0},
                "contextWindow":1000000,"maxTokens":384000,
                "thinkingLevelMap":{"minimal":null,"low":"low","medium":null,"high":"high","max":"max"},
                "compat":{"supportsStore":false,"maxTokensField":"max_tokens",
                    "requiresReasoningContentOnAssistantMessages":true,"thinkingFormat":"deepseek",
                    "supportsStrictMode":true},
                "inputLimits": json["inputLimits"].clone(),
                "type":"chat"})
        );
    }
}
