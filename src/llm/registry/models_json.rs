//! `models.json` and the built-in catalog: parsing (with comments and trailing commas),
//! validation diagnostics, and merging providers / model overrides over the catalog.

use super::*;

// ---------------------------------------------------------------------------------------------
// Catalog

/// A built-in provider about to be composed with its models.json entry.
pub(super) struct BuiltinProvider {
    pub(super) name: String,
    /// The provider's base URL and main API (those of its first model when it has several).
    pub(super) base_url: String,
    pub(super) api: String,
    pub(super) models: Vec<Model>,
}

// ---------------------------------------------------------------------------------------------
// models.json

/// Parses and validates models.json; returns its `providers` object, or `None` (with a
/// diagnostic) when the file is unusable.
pub(super) fn parse_models_json(
    text: &str,
    path: &str,
    diags: &mut Vec<String>,
) -> Option<Map<String, Value>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let cleaned = strip_json_comments(text);
    let root: Value = match serde_json::from_str(&cleaned) {
        Ok(v) => v,
        Err(e) => {
            diags.push(format!(
                "Warning: failed to parse {path} at line {} column {}: {}; ignoring it",
                e.line(),
                e.column(),
                strip_serde_position(&e.to_string())
            ));
            return None;
        }
    };
    let mut errors = Vec::new();
    validate_root(&root, &mut errors);
    if !errors.is_empty() {
        diags.push(format!(
            "Warning: invalid {path}: {}; ignoring it",
            errors.join("; ")
        ));
        return None;
    }
    root.get("providers").and_then(Value::as_object).cloned()
}

/// pi's `stripJsonComments`: drops `//` line comments and trailing commas outside strings.
/// Removed characters become spaces so error positions still point into the original text.
fn strip_json_comments(input: &str) -> String {
    let chars: Vec<char> = input.chars().collect();
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            out.push(c);
            i += 1;
            while i < chars.len() {
                let d = chars[i];
                out.push(d);
                i += 1;
                if d == '\\' {
                    if let Some(&e) = chars.get(i) {
                        out.push(e);
                        i += 1;
                    }
                } else if d == '"' {
                    break;
                }
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == ',' {
            let mut j = i + 1;
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            out.push(if matches!(chars.get(j), Some('}') | Some(']')) {
                ' '
            } else {
                ','
            });
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

pub(super) type Errors = Vec<String>;

fn expect_obj<'a>(v: &'a Value, path: &str, errors: &mut Errors) -> Option<&'a Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => {
            errors.push(format!("{path}: expected an object"));
            None
        }
    }
}

fn check_nonempty_str(m: &Map<String, Value>, key: &str, path: &str, errors: &mut Errors) {
    match m.get(key) {
        None => {}
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(_) => errors.push(format!("{path}.{key}: expected a non-empty string")),
    }
}

fn check_bool(m: &Map<String, Value>, key: &str, path: &str, errors: &mut Errors) {
    if m.get(key).is_some_and(|v| !v.is_boolean()) {
        errors.push(format!("{path}.{key}: expected a boolean"));
    }
}

fn check_object(m: &Map<String, Value>, key: &str, path: &str, errors: &mut Errors) {
    if m.get(key).is_some_and(|v| !v.is_object()) {
        errors.push(format!("{path}.{key}: expected an object"));
    }
}

fn check_positive(m: &Map<String, Value>, key: &str, path: &str, errors: &mut Errors) {
    if m.get(key)
        .is_some_and(|v| !v.as_f64().is_some_and(|n| n > 0.0))
    {
        errors.push(format!("{path}.{key}: expected a number greater than 0"));
    }
}

fn check_headers(m: &Map<String, Value>, path: &str, errors: &mut Errors) {
    if let Some(h) = m.get("headers") {
        match h {
            Value::Object(h) if h.values().all(Value::is_string) => {}
            _ => errors.push(format!("{path}.headers: expected an object of strings")),
        }
    }
}

fn validate_root(root: &Value, errors: &mut Errors) {
    let Some(root) = expect_obj(root, "root", errors) else {
        return;
    };
    let Some(providers) = root.get("providers") else {
        errors.push("providers: required".into());
        return;
    };
    let Some(providers) = expect_obj(providers, "providers", errors) else {
        return;
    };
    for (id, p) in providers {
        let path = format!("providers.{id}");
        let Some(p) = expect_obj(p, &path, errors) else {
            continue;
        };
        for key in ["name", "baseUrl", "apiKey", "api"] {
            check_nonempty_str(p, key, &path, errors);
        }
        if p.get("oauth").is_some_and(|v| v.as_str() != Some("radius")) {
            errors.push(format!("{path}.oauth: expected \"radius\""));
        }
        check_headers(p, &path, errors);
        check_object(p, "compat", &path, errors);
        check_bool(p, "authHeader", &path, errors);
        if let Some(models) = p.get("models") {
            match models {
                Value::Array(models) => {
                    for (i, m) in models.iter().enumerate() {
                        validate_model(m, &format!("{path}.models.{i}"), true, errors);
                    }
                }
                _ => errors.push(format!("{path}.models: expected an array")),
            }
        }
        if let Some(overrides) = p.get("modelOverrides") {
            if let Some(overrides) =
                expect_obj(overrides, &format!("{path}.modelOverrides"), errors)
            {
                for (id, o) in overrides {
                    validate_model(o, &format!("{path}.modelOverrides.{id}"), false, errors);
                }
            }
        }
    }
}

fn validate_model(v: &Value, path: &str, definition: bool, errors: &mut Errors) {
    let Some(m) = expect_obj(v, path, errors) else {
        return;
    };
    if definition {
        match m.get("id") {
            Some(Value::String(s)) if !s.is_empty() => {}
            None => errors.push(format!("{path}.id: required")),
            Some(_) => errors.push(format!("{path}.id: expected a non-empty string")),
        }
        check_nonempty_str(m, "api", path, errors);
        check_nonempty_str(m, "baseUrl", path, errors);
    }
    check_nonempty_str(m, "name", path, errors);
    check_bool(m, "reasoning", path, errors);
    if let Some(map) = m.get("thinkingLevelMap") {
        match map {
            Value::Object(map) if map.values().all(|v| v.is_string() || v.is_null()) => {}
            _ => errors.push(format!(
                "{path}.thinkingLevelMap: expected an object of strings or null"
            )),
        }
    }
    if let Some(input) = m.get("input") {
        let ok = input.as_array().is_some_and(|a| {
            a.iter()
                .all(|x| matches!(x.as_str(), Some("text") | Some("image")))
        });
        if !ok {
            errors.push(format!(
                "{path}.input: expected an array of \"text\" / \"image\""
            ));
        }
    }
    for key in [
        "inputLimits",
        "promptCache",
        "samplingParams",
        "samplingParamsByThinkingLevel",
        "compat",
    ] {
        check_object(m, key, path, errors);
    }
    check_positive(m, "contextWindow", path, errors);
    check_positive(m, "maxTokens", path, errors);
    check_headers(m, path, errors);
    if let Some(cost) = m.get("cost") {
        validate_cost(cost, &format!("{path}.cost"), definition, errors);
    }
}

fn validate_cost(v: &Value, path: &str, required: bool, errors: &mut Errors) {
    let Some(c) = expect_obj(v, path, errors) else {
        return;
    };
    for key in ["input", "output", "cacheRead", "cacheWrite"] {
        match c.get(key) {
            Some(x) if x.is_number() => {}
            None if !required => {}
            None => errors.push(format!("{path}.{key}: required")),
            Some(_) => errors.push(format!("{path}.{key}: expected a number")),
        }
    }
    if let Some(tiers) = c.get("tiers") {
        match tiers {
            Value::Array(tiers) => {
                for (i, t) in tiers.iter().enumerate() {
                    let tpath = format!("{path}.tiers.{i}");
                    let Some(t) = expect_obj(t, &tpath, errors) else {
                        continue;
                    };
                    for key in [
                        "inputTokensAbove",
                        "input",
                        "output",
                        "cacheRead",
                        "cacheWrite",
                    ] {
                        if !t.get(key).is_some_and(Value::is_number) {
                            errors.push(format!("{tpath}.{key}: expected a number"));
                        }
                    }
                }
            }
            _ => errors.push(format!("{path}.tiers: expected an array")),
        }
    }
}

/// One provider after applying models.json.
pub(super) struct Composed {
    pub(super) config: ProviderConfig,
    pub(super) models: Vec<Model>,
    pub(super) api_key: Option<String>,
    pub(super) model_headers: Vec<(String, Map<String, Value>)>,
}

fn str_field(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::to_string)
}

fn obj_field(m: &Map<String, Value>, key: &str) -> Option<Map<String, Value>> {
    m.get(key).and_then(Value::as_object).cloned()
}

/// pi's `applyModelsJson` + `modelOverrides` for one provider (validated input).
pub(super) fn compose_provider(
    id: &str,
    base: Option<&BuiltinProvider>,
    cfg: &Map<String, Value>,
) -> Result<Composed, String> {
    let base_url = str_field(cfg, "baseUrl");
    let api = str_field(cfg, "api");
    let compat = obj_field(cfg, "compat");
    let headers = obj_field(cfg, "headers");
    let api_key = str_field(cfg, "apiKey");
    let auth_header = cfg.get("authHeader").and_then(Value::as_bool);
    let oauth = cfg.get("oauth").is_some();
    let oauth_radius = cfg.get("oauth").and_then(Value::as_str) == Some("radius");
    let definitions: Vec<&Map<String, Value>> = cfg
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    let overrides = obj_field(cfg, "modelOverrides").unwrap_or_default();

    if oauth && base_url.is_none() {
        return Err(format!(
            "Provider {id}: \"baseUrl\" is required when \"oauth\" is set."
        ));
    }
    if definitions.is_empty()
        && base_url.is_none()
        && headers.is_none()
        && compat.is_none()
        && overrides.is_empty()
        && api_key.is_none()
        && !oauth
        && auth_header.is_none()
    {
        return Err(format!(
            "Provider {id}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
        ));
    }

    let mut models: Vec<Model> = base
        .map(|b| b.models.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|mut m| {
            // A Radius gateway's models keep the API base URL the gateway gave them.
            if let Some(u) = base_url.as_ref().filter(|_| !oauth_radius) {
                m.base_url = u.clone();
            }
            m.compat = merge_compat(m.compat.take(), compat.as_ref());
            m
        })
        .collect();

    let mut model_headers: Vec<(String, Map<String, Value>)> = Vec::new();
    for def in &definitions {
        let model_id = str_field(def, "id").unwrap_or_default();
        let def_api = str_field(def, "api");
        let defaults = find_model_defaults(&models, &model_id, def_api.as_ref().or(api.as_ref()));
        let model_api = def_api
            .or_else(|| api.clone())
            .or_else(|| defaults.map(|d| d.api.clone()))
            .ok_or_else(|| {
                format!(
                    "Provider {id}, model {model_id}: no \"api\" specified. Set at provider or model level."
                )
            })?;
        let model_base_url = str_field(def, "baseUrl")
            .or_else(|| base_url.clone())
            .or_else(|| defaults.map(|d| d.base_url.clone()))
            .ok_or_else(|| {
                format!("Provider {id}: \"baseUrl\" is required when defining custom models.")
            })?;
        let model = Model {
            id: model_id.clone(),
            name: str_field(def, "name").unwrap_or_else(|| model_id.clone()),
            api: model_api,
            provider: id.to_string(),
            base_url: model_base_url,
            reasoning: def
                .get("reasoning")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            thinking_level_map: obj_field(def, "thinkingLevelMap"),
            input: match def.get("input").and_then(Value::as_array) {
                Some(a) => a
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
                None => vec!["text".to_string()],
            },
            input_limits: def.get("inputLimits").cloned(),
            cost: def
                .get("cost")
                .and_then(|c| serde_json::from_value::<ModelCost>(c.clone()).ok())
                .unwrap_or_default(),
            prompt_cache: def.get("promptCache").cloned(),
            context_window: def
                .get("contextWindow")
                .and_then(number_to_u64)
                .unwrap_or(128_000),
            max_tokens: def
                .get("maxTokens")
                .and_then(number_to_u64)
                .unwrap_or(16_384),
            sampling_params: obj_field(def, "samplingParams"),
            sampling_params_by_thinking_level: obj_field(def, "samplingParamsByThinkingLevel"),
            headers: None,
            compat: merge_compat(compat.clone(), obj_field(def, "compat").as_ref()),
            // A models.json definition is not a catalog entry: no `type`, modelFromJson's order.
            kind: None,
            extra: None,
            catalog_layout: false,
        };
        match models.iter().position(|m| m.id == model_id) {
            Some(i) => models[i] = model,
            None => models.push(model),
        }
    }

    for m in &mut models {
        let mut raw_headers = Map::new();
        let ov = overrides.get(&m.id).and_then(Value::as_object);
        if let Some(h) = ov.and_then(|o| o.get("headers")).and_then(Value::as_object) {
            raw_headers.extend(h.clone());
        }
        if let Some(def) = definitions
            .iter()
            .find(|d| d.get("id").and_then(Value::as_str) == Some(m.id.as_str()))
        {
            if let Some(h) = def.get("headers").and_then(Value::as_object) {
                raw_headers.extend(h.clone());
            }
        }
        if !raw_headers.is_empty() {
            model_headers.push((m.id.clone(), raw_headers));
        }
        if let Some(ov) = ov {
            apply_override(m, ov);
        }
    }

    let name = str_field(cfg, "name")
        .or_else(|| base.map(|b| b.name.clone()))
        .unwrap_or_else(|| id.to_string());
    Ok(Composed {
        config: ProviderConfig {
            id: id.to_string(),
            name,
            builtin: base.is_some(),
            base_url: base_url.or_else(|| base.map(|b| b.base_url.clone())),
            api: api.or_else(|| base.map(|b| b.api.clone())),
            headers,
            auth_header: auth_header.unwrap_or(false),
        },
        models,
        api_key,
        model_headers,
    })
}

/// pi's `findModelDefaults`: the template for a models.json model's missing api/baseUrl.
fn find_model_defaults<'a>(
    models: &'a [Model],
    id: &str,
    api: Option<&String>,
) -> Option<&'a Model> {
    models
        .iter()
        .find(|m| m.id == id)
        .or_else(|| api.and_then(|a| models.iter().find(|m| &m.api == a)))
        .or_else(|| models.iter().find(|m| m.api == "openai-completions"))
        .or_else(|| models.first())
}

fn merge_obj(base: Option<&Map<String, Value>>, over: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.cloned().unwrap_or_default();
    for (k, v) in over {
        out.insert(k.clone(), v.clone());
    }
    out
}

/// pi's `mergeCompat`: shallow, except a few routing objects merged one level deeper.
fn merge_compat(
    base: Option<Map<String, Value>>,
    over: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let Some(over) = over else { return base };
    let mut merged = merge_obj(base.as_ref(), over);
    for key in [
        "openRouterRouting",
        "vercelGatewayRouting",
        "chatTemplateKwargs",
        "chatTemplateArgs",
    ] {
        let b = base
            .as_ref()
            .and_then(|b| b.get(key))
            .and_then(Value::as_object);
        let o = over.get(key).and_then(Value::as_object);
        if b.is_some() || o.is_some() {
            let inner = merge_obj(b, o.unwrap_or(&Map::new()));
            merged.insert(key.to_string(), Value::Object(inner));
        }
    }
    Some(merged)
}

/// pi's `mergeInputLimits`.
fn merge_input_limits(base: Option<Value>, over: &Value) -> Option<Value> {
    let Some(over) = over.as_object() else {
        return base;
    };
    let base_obj = base.as_ref().and_then(Value::as_object);
    let mut merged = merge_obj(base_obj, over);
    let base_images = base_obj
        .and_then(|b| b.get("images"))
        .and_then(Value::as_object);
    match over.get("images").and_then(Value::as_object) {
        Some(over_images) => {
            let mut images = merge_obj(base_images, over_images);
            let base_resize = base_images
                .and_then(|i| i.get("resize"))
                .and_then(Value::as_object);
            match over_images.get("resize").and_then(Value::as_object) {
                Some(r) => {
                    images.insert("resize".into(), Value::Object(merge_obj(base_resize, r)));
                }
                None => match base_resize {
                    Some(r) => {
                        images.insert("resize".into(), Value::Object(r.clone()));
                    }
                    None => {
                        images.remove("resize");
                    }
                },
            }
            merged.insert("images".into(), Value::Object(images));
        }
        None => match base_images {
            Some(i) => {
                merged.insert("images".into(), Value::Object(i.clone()));
            }
            None => {
                merged.remove("images");
            }
        },
    }
    Some(Value::Object(merged))
}

/// pi's `applyModelOverride`: merges a `modelOverrides[id]` entry field by field.
fn apply_override(m: &mut Model, ov: &Map<String, Value>) {
    if let Some(name) = ov.get("name").and_then(Value::as_str) {
        m.name = name.to_string();
    }
    if let Some(r) = ov.get("reasoning").and_then(Value::as_bool) {
        m.reasoning = r;
    }
    if let Some(map) = ov.get("thinkingLevelMap").and_then(Value::as_object) {
        m.thinking_level_map = Some(merge_obj(m.thinking_level_map.as_ref(), map));
    }
    if let Some(input) = ov.get("input").and_then(Value::as_array) {
        m.input = input
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect();
    }
    if let Some(limits) = ov.get("inputLimits") {
        m.input_limits = merge_input_limits(m.input_limits.take(), limits);
    }
    if let Some(cost) = ov.get("cost").and_then(Value::as_object) {
        let num = |k: &str, old: f64| cost.get(k).and_then(Value::as_f64).unwrap_or(old);
        m.cost.input = num("input", m.cost.input);
        m.cost.output = num("output", m.cost.output);
        m.cost.cache_read = num("cacheRead", m.cost.cache_read);
        m.cost.cache_write = num("cacheWrite", m.cost.cache_write);
        if let Some(tiers) = cost.get("tiers") {
            if let Ok(t) = serde_json::from_value(tiers.clone()) {
                m.cost.tiers = Some(t);
            }
        }
    }
    if let Some(pc) = ov.get("promptCache").and_then(Value::as_object) {
        let base = m.prompt_cache.as_ref().and_then(Value::as_object);
        m.prompt_cache = Some(Value::Object(merge_obj(base, pc)));
    }
    if let Some(n) = ov.get("contextWindow").and_then(number_to_u64) {
        m.context_window = n;
    }
    if let Some(n) = ov.get("maxTokens").and_then(number_to_u64) {
        m.max_tokens = n;
    }
    if let Some(sp) = ov.get("samplingParams").and_then(Value::as_object) {
        m.sampling_params = Some(merge_obj(m.sampling_params.as_ref(), sp));
    }
    if let Some(by_level) = ov
        .get("samplingParamsByThinkingLevel")
        .and_then(Value::as_object)
    {
        let mut merged = m
            .sampling_params_by_thinking_level
            .clone()
            .unwrap_or_default();
        for level in ThinkingLevel::ALL {
            if let Some(params) = by_level.get(level.as_str()).and_then(Value::as_object) {
                let base = merged.get(level.as_str()).and_then(Value::as_object);
                let inner = merge_obj(base, params);
                merged.insert(level.as_str().to_string(), Value::Object(inner));
            }
        }
        m.sampling_params_by_thinking_level = Some(merged);
    }
    if let Some(c) = ov.get("compat").and_then(Value::as_object) {
        m.compat = merge_compat(m.compat.take(), Some(c));
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{registry, BUILTIN_IDS, MOCK};
    use super::*;

    #[test]
    fn custom_provider_with_defaults() {
        let (r, diags) = registry(Some(MOCK), &[]);
        assert!(diags.is_empty(), "{diags:?}");
        let m = r.find("mock", "mock-model").unwrap();
        assert_eq!(
            serde_json::to_string(m).unwrap(),
            r#"{"id":"mock-model","name":"Mock Model","api":"anthropic-messages","provider":"mock","baseUrl":"http://127.0.0.1:18080","reasoning":true,"input":["text","image"],"cost":{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75},"contextWindow":200000,"maxTokens":16384}"#
        );
        let o = r.find("mock", "oai-model").unwrap();
        assert_eq!(
            serde_json::to_string(o).unwrap(),
            r#"{"id":"oai-model","name":"oai-model","api":"openai-completions","provider":"mock","baseUrl":"http://127.0.0.1:18080/v1","reasoning":false,"input":["text"],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":128000,"maxTokens":16384}"#
        );
        // Custom providers come after the built-ins; apiKey makes them available.
        assert_eq!(r.provider_ids().last(), Some(&"mock"));
        let avail = r.available();
        assert_eq!(
            avail.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            vec!["mock-model", "oai-model"]
        );
        assert_eq!(r.api_key("mock").unwrap().as_deref(), Some("test-key"));
        assert!(r.find_available("mock", "mock-model").is_some());
        assert!(r.find_available("anthropic", "claude-opus-4-7").is_none());
        assert_eq!(r.default_model().map(|m| m.id), Some("mock-model".into()));
    }

    #[test]
    fn builtin_base_url_override_and_model_overrides() {
        let json = r#"{"providers":{"anthropic":{"baseUrl":"https://proxy.example.com",
            "modelOverrides":{"claude-sonnet-4-5":{"name":"Proxied Sonnet","cost":{"input":1},"maxTokens":1000},
                              "no-such-model":{"name":"x"}}}}}"#;
        let (r, diags) = registry(Some(json), &[("ANTHROPIC_API_KEY", "k")]);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(r
            .all()
            .iter()
            .filter(|m| m.provider == "anthropic")
            .all(|m| m.base_url == "https://proxy.example.com"));
        let s = r.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(s.name, "Proxied Sonnet");
        assert_eq!(
            (
                s.cost.input,
                s.cost.output,
                s.cost.cache_read,
                s.cost.cache_write
            ),
            (1.0, 15.0, 0.3, 3.75)
        );
        assert_eq!(s.max_tokens, 1000);
        assert_eq!(s.context_window, 200000);
        assert!(r.find("anthropic", "no-such-model").is_none());
        // Provider order unchanged; auth unchanged (env).
        assert_eq!(r.provider_ids(), BUILTIN_IDS);
        assert!(r.available().iter().all(|m| m.provider == "anthropic"));
        assert!(!r.available().is_empty());
        assert_eq!(
            r.default_model().map(|m| m.id),
            Some("claude-opus-5-5".into())
        );
    }

    #[test]
    fn models_replace_same_id_and_compat_merges() {
        let json = r#"{"providers":{"openai":{"compat":{"supportsStore":false},
            "models":[{"id":"gpt-4o","name":"Mine","contextWindow":1000},{"id":"brand-new"}]}}}"#;
        let (r, diags) = registry(Some(json), &[]);
        assert!(diags.is_empty(), "{diags:?}");
        let m = r.find("openai", "gpt-4o").unwrap();
        assert_eq!((m.name.as_str(), m.context_window), ("Mine", 1000));
        // Defaults come from the provider's built-in models when not given.
        assert_eq!(m.api, "openai-responses");
        assert_eq!(m.base_url, "https://api.openai.com/v1");
        let n = r.find("openai", "brand-new").unwrap();
        assert_eq!(n.api, "openai-responses");
        let gpt5 = r.find("openai", "gpt-5").unwrap();
        let compat = gpt5.compat.as_ref().unwrap();
        assert_eq!(compat.get("supportsStore"), Some(&Value::Bool(false)));
        assert_eq!(compat.get("supportsStrictMode"), Some(&Value::Bool(true)));
        // Same-id replacement keeps the position.
        let pos = |id: &str| {
            r.all()
                .iter()
                .position(|m| m.provider == "openai" && m.id == id)
        };
        assert!(pos("gpt-4o") < pos("gpt-5"));
        assert_eq!(
            r.all().iter().rposition(|m| m.provider == "openai"),
            pos("brand-new")
        );
    }

    #[test]
    fn malformed_models_json_reports_line_and_column() {
        let (r, diags) = registry(Some("{\n  \"providers\": {\n    \"x\": @\n  }\n}"), &[]);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(
            diags[0].starts_with("Warning: failed to parse models.json at line 3 column 10: "),
            "{}",
            diags[0]
        );
        assert!(diags[0].ends_with("; ignoring it"));
        assert_eq!(r.provider_ids(), BUILTIN_IDS);

        let (_, diags) = registry(
            Some(r#"{"providers":{"x":{"baseUrl":5,"models":[{"name":"n"}]}}}"#),
            &[],
        );
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(diags[0].contains("providers.x.baseUrl: expected a non-empty string"));
        assert!(diags[0].contains("providers.x.models.0.id: required"));

        let (_, diags) = registry(Some("[]"), &[]);
        assert_eq!(diags.len(), 1);
    }

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let json = "{\n // my models\n \"providers\": {\"p\": {\"baseUrl\": \"http://x//y\", \"api\": \"openai-completions\",\n \"models\": [{\"id\": \"m\"},],},},\n}";
        let (r, diags) = registry(Some(json), &[]);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(r.find("p", "m").unwrap().base_url, "http://x//y");
    }

    #[test]
    fn broken_providers_are_skipped_with_a_diagnostic() {
        let json = r#"{"providers":{
            "noapi":{"baseUrl":"http://x","models":[{"id":"m"}]},
            "nourl":{"api":"openai-completions","models":[{"id":"m"}]},
            "empty":{},
            "anthropic":{},
            "ok":{"baseUrl":"http://y","api":"openai-completions","models":[{"id":"m"}]}}}"#;
        let (r, diags) = registry(Some(json), &[]);
        assert_eq!(diags.len(), 4, "{diags:?}");
        // Built-in providers are composed first, then custom ones in file order.
        assert!(diags[0].contains("must specify"));
        assert!(diags[0].contains("provider \"anthropic\""));
        assert!(diags[1].contains("no \"api\" specified"));
        assert!(diags[2].contains("\"baseUrl\" is required"));
        assert!(diags[3].contains("must specify"));
        assert!(diags[3].contains("ignoring provider \"empty\""));
        assert!(r.find("anthropic", "claude-opus-4-7").is_some());
        assert!(r.find("noapi", "m").is_none());
        assert!(r.find("ok", "m").is_some());
        assert_eq!(r.provider_ids(), [BUILTIN_IDS, &["ok"]].concat());
    }

    #[test]
    fn custom_provider_order_follows_the_file() {
        let json = r#"{"providers":{
            "zeta":{"baseUrl":"http://z","api":"openai-completions","apiKey":"k","models":[{"id":"z1"}]},
            "alpha":{"baseUrl":"http://a","api":"openai-completions","apiKey":"k","models":[{"id":"a1"}]}}}"#;
        let (r, _) = registry(Some(json), &[]);
        assert_eq!(
            r.available().iter().map(|m| m.key()).collect::<Vec<_>>(),
            vec!["zeta/z1", "alpha/a1"]
        );
    }
}
