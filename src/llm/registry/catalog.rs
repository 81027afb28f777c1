//! The built-in catalog: pi's 43 providers and their chat models, generated from pi's npm
//! package by `catalog/generate.mjs` into `catalog/catalog.jsonl` (the layout is described
//! there). Start-up parses only the index line (~8 KB); a provider's line, found by its byte
//! offset, is parsed the first time that provider is needed, so no other part of the text is
//! even paged in.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::model::{Model, ModelCost};

const CATALOG: &str = include_str!("catalog/catalog.jsonl");

/// Line 1: the index.
/// (`package` and `version` name the data's source; nothing reads them.)
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CatalogIndex {
    /// pi's model-data generation time: models-store.json entries newer than this apply.
    pub(super) generated_at: String,
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
    /// The provider's line: byte offset from the start of line 2, and length.
    pub(super) at: (usize, usize),
}

/// The values a provider's models share, referenced by index from its rows. Kept as raw JSON
/// slices of the compiled-in text: an entry is parsed when the first model using it is built.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shared<'a> {
    #[serde(borrow)]
    cost: Vec<&'a RawValue>,
    #[serde(borrow)]
    compat: Vec<&'a RawValue>,
    #[serde(borrow)]
    thinking_level_map: Vec<&'a RawValue>,
    #[serde(borrow)]
    input_limits: Vec<&'a RawValue>,
    #[serde(borrow)]
    headers: Vec<&'a RawValue>,
    #[serde(borrow)]
    prompt_cache: Vec<&'a RawValue>,
    #[serde(borrow)]
    input: Vec<&'a RawValue>,
}

/// A provider's line.
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow)]
    tables: Shared<'a>,
    #[serde(borrow)]
    models: Vec<Row<'a>>,
}

/// Parses shared-table entries, each at most once per provider block.
struct Tables<'s> {
    shared: &'s Shared<'s>,
    parsed: std::collections::HashMap<(u8, usize), Value>,
}

impl Tables<'_> {
    fn get(&mut self, table: u8, i: usize) -> Result<Value, String> {
        if let Some(v) = self.parsed.get(&(table, i)) {
            return Ok(v.clone());
        }
        let list = match table {
            0 => &self.shared.cost,
            1 => &self.shared.compat,
            2 => &self.shared.thinking_level_map,
            3 => &self.shared.input_limits,
            4 => &self.shared.headers,
            5 => &self.shared.prompt_cache,
            _ => &self.shared.input,
        };
        let raw = list.get(i).ok_or("index out of range")?;
        let v: Value = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        self.parsed.insert((table, i), v.clone());
        Ok(v)
    }

    fn typed<T: serde::de::DeserializeOwned>(&mut self, table: u8, i: usize) -> Result<T, String> {
        serde_json::from_value(self.get(table, i)?).map_err(|e| e.to_string())
    }

    fn opt_map(
        &mut self,
        table: u8,
        i: Option<usize>,
    ) -> Result<Option<Map<String, Value>>, String> {
        i.map(|i| self.typed(table, i)).transpose()
    }

    fn opt_value(&mut self, table: u8, i: Option<usize>) -> Result<Option<Value>, String> {
        i.map(|i| self.get(table, i)).transpose()
    }
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

/// The models of a provider of the index, in catalog order.
pub(super) fn models(entry: &IndexEntry) -> Result<Vec<Model>, String> {
    let body = CATALOG
        .find('\n')
        .map(|i| &CATALOG[i + 1..])
        .unwrap_or_default();
    let (offset, len) = entry.at;
    let line = body
        .get(offset..offset.saturating_add(len))
        .ok_or_else(|| format!("{}: model line out of range", entry.id))?;
    let block: Block = serde_json::from_str(line).map_err(|e| format!("{}: {e}", entry.id))?;
    let mut tables = Tables {
        shared: &block.tables,
        parsed: std::collections::HashMap::new(),
    };
    let mut out = Vec::with_capacity(block.models.len());
    for row in &block.models {
        let id = row.id.as_ref();
        let bad = |what: &str, e: String| format!("{}/{id}: bad {what} ({e})", entry.id);
        let (api, api_base) = entry
            .apis
            .get(row.a)
            .ok_or_else(|| bad("api", "index out of range".into()))?;
        out.push(Model {
            id: id.to_string(),
            name: row.name.as_deref().unwrap_or(id).to_string(),
            api: api.clone(),
            provider: entry.id.clone(),
            base_url: row.u.as_deref().unwrap_or(api_base).to_string(),
            reasoning: row.r,
            thinking_level_map: tables
                .opt_map(2, row.t)
                .map_err(|e| bad("thinkingLevelMap", e))?,
            input: tables.typed(6, row.i).map_err(|e| bad("input", e))?,
            input_limits: tables
                .opt_value(3, row.l)
                .map_err(|e| bad("inputLimits", e))?,
            cost: tables
                .typed::<ModelCost>(0, row.c)
                .map_err(|e| bad("cost", e))?,
            prompt_cache: tables
                .opt_value(5, row.p)
                .map_err(|e| bad("promptCache", e))?,
            context_window: row.w,
            max_tokens: row.m,
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            headers: tables.opt_map(4, row.h).map_err(|e| bad("headers", e))?,
            compat: tables.opt_map(1, row.x).map_err(|e| bad("compat", e))?,
            extra: row.e.clone(),
            kind: Some("chat".to_string()),
            catalog_layout: true,
        });
    }
    Ok(out)
}

/// [`models`], or none with a warning in `diags` when the catalog is damaged.
pub(super) fn models_or_warn(entry: &IndexEntry, diags: &mut Vec<String>) -> Vec<Model> {
    models(entry).unwrap_or_else(|e| {
        diags.push(format!(
            "Warning: the built-in model catalog is damaged ({e})"
        ));
        Vec::new()
    })
}

/// The ids of `provider`'s built-in chat models, in catalog order (empty for a provider the
/// catalog does not know, or when the catalog is damaged). GitHub Copilot's login enables only
/// models pi ships (`GITHUB_COPILOT_MODELS`).
pub fn builtin_model_ids(provider: &str) -> Vec<String> {
    let Ok(index) = index() else {
        return Vec::new();
    };
    index
        .providers
        .iter()
        .find(|e| e.id == provider)
        .and_then(|e| models(e).ok())
        .map(|models| models.into_iter().map(|m| m.id).collect())
        .unwrap_or_default()
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
        for entry in &index.providers {
            let models = models(entry).unwrap();
            assert_eq!(models.len(), entry.count, "{}", entry.id);
            assert!(models.iter().all(|m| m.provider == entry.id));
            total += models.len();
        }
        assert_eq!(total, 1698);
        assert_eq!(CATALOG.lines().count(), index.providers.len() + 1);
    }

    #[test]
    fn rows_expand_to_pi_model_objects() {
        let index = index().unwrap();
        let deepseek = index.providers.iter().find(|p| p.id == "deepseek").unwrap();
        let models = models(deepseek).unwrap();
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
