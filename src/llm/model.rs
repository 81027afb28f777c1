//! The provider-neutral `Model` (data-model.md §1) and the cost formula (data-model.md §2).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::js::number::ser_js_f64;

/// One model as pi describes it on the wire (`get_state.model`, `get_available_models`, …).
///
/// Serialized in one of pi's two key orders (see [`Model::catalog_layout`]); optional fields are
/// skipped when `None`, as pi never writes `undefined`. Numbers are printed like JavaScript
/// (`3`, `0.3`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub api: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub reasoning: bool,
    /// pi level → provider value; `null` marks a level as unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<Map<String, Value>>,
    /// Accepted input modalities: `"text"`, `"image"`.
    #[serde(default)]
    pub input: Vec<String>,
    /// Image resize limits etc. (`images.resize.{maxWidth,maxHeight,maxBytes,jpegQuality}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_limits: Option<Value>,
    #[serde(default)]
    pub cost: ModelCost,
    /// `{short?, long?}` cache lifetimes in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<Value>,
    #[serde(default, deserialize_with = "de_u64_lenient")]
    pub context_window: u64,
    #[serde(default, deserialize_with = "de_u64_lenient")]
    pub max_tokens: u64,
    /// Fields merged into every request body (OpenAI-family APIs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params: Option<Map<String, Value>>,
    /// `samplingParams` per thinking level, merged over `samplingParams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params_by_thinking_level: Option<Map<String, Value>>,
    /// Extra request headers carried by the catalog entry itself. Headers configured in
    /// `models.json` are not stored here (pi does not show them on the model); the registry
    /// resolves them per request (`ModelRegistry::request_auth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// API-specific quirks (providers.md §6.4), e.g. `forceAdaptiveThinking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Map<String, Value>>,
    /// pi's model kind, `"chat"` on every built-in catalog model (pi's catalog entries carry
    /// it); absent on `models.json` models, as in pi.
    #[serde(skip)]
    pub kind: Option<String>,
    /// Catalog fields pi-rpc has no use for but passes through to clients as pi does (the
    /// radius gateway's `lab`, `enabled`, `providers`, `free`).
    #[serde(skip)]
    pub extra: Option<Map<String, Value>>,
    /// True for built-in catalog models. pi sends those objects as its catalog stores them
    /// (`…, input, cost, contextWindow, maxTokens, thinkingLevelMap, compat, promptCache,
    /// inputLimits, type`); `models.json` models follow `modelFromJson`'s order instead.
    #[serde(skip)]
    pub catalog_layout: bool,
}

/// The keys a [`Model`] reads, in the key order of `models.json` models (pi's `modelFromJson`).
pub(crate) const MODEL_KEYS: &[&str] = &[
    "id",
    "name",
    "api",
    "provider",
    "baseUrl",
    "reasoning",
    "thinkingLevelMap",
    "input",
    "inputLimits",
    "cost",
    "promptCache",
    "contextWindow",
    "maxTokens",
    "samplingParams",
    "samplingParamsByThinkingLevel",
    "headers",
    "compat",
    "type",
];

/// Key order of built-in catalog models (pi's generated catalog data).
const CATALOG_ORDER: &[&str] = &[
    "id",
    "name",
    "api",
    "provider",
    "baseUrl",
    "reasoning",
    "input",
    "cost",
    "contextWindow",
    "maxTokens",
    "thinkingLevelMap",
    "compat",
    "promptCache",
    "inputLimits",
    "samplingParams",
    "samplingParamsByThinkingLevel",
    "headers",
    "type",
];

impl Serialize for Model {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        fn opt<M: SerializeMap, T: Serialize>(
            m: &mut M,
            key: &str,
            v: &Option<T>,
        ) -> Result<(), M::Error> {
            match v {
                Some(v) => m.serialize_entry(key, v),
                None => Ok(()),
            }
        }
        let order = if self.catalog_layout {
            CATALOG_ORDER
        } else {
            MODEL_KEYS
        };
        let mut m = s.serialize_map(None)?;
        for &key in order {
            match key {
                "id" => m.serialize_entry(key, &self.id)?,
                "name" => m.serialize_entry(key, &self.name)?,
                "api" => m.serialize_entry(key, &self.api)?,
                "provider" => m.serialize_entry(key, &self.provider)?,
                "baseUrl" => m.serialize_entry(key, &self.base_url)?,
                "reasoning" => m.serialize_entry(key, &self.reasoning)?,
                "thinkingLevelMap" => opt(&mut m, key, &self.thinking_level_map)?,
                "input" => m.serialize_entry(key, &self.input)?,
                "inputLimits" => opt(&mut m, key, &self.input_limits)?,
                "cost" => m.serialize_entry(key, &self.cost)?,
                "promptCache" => opt(&mut m, key, &self.prompt_cache)?,
                "contextWindow" => m.serialize_entry(key, &self.context_window)?,
                "maxTokens" => m.serialize_entry(key, &self.max_tokens)?,
                "samplingParams" => opt(&mut m, key, &self.sampling_params)?,
                "samplingParamsByThinkingLevel" => {
                    opt(&mut m, key, &self.sampling_params_by_thinking_level)?
                }
                "headers" => opt(&mut m, key, &self.headers)?,
                "compat" => opt(&mut m, key, &self.compat)?,
                "type" => {
                    for (k, v) in self.extra.iter().flatten() {
                        m.serialize_entry(k, v)?;
                    }
                    opt(&mut m, key, &self.kind)?
                }
                _ => {}
            }
        }
        m.end()
    }
}

impl Model {
    /// The model pi reports when no model could be selected (rpc-protocol.md §9).
    pub fn placeholder() -> Model {
        Model {
            id: "unknown".into(),
            name: "unknown".into(),
            api: "unknown".into(),
            provider: "unknown".into(),
            ..Model::default()
        }
    }

    /// True for [`Model::placeholder`].
    pub fn is_placeholder(&self) -> bool {
        self.id == "unknown"
            && self.provider == "unknown"
            && self.api == "unknown"
            && self.base_url.is_empty()
    }

    /// Whether the model accepts image input.
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|m| m == "image")
    }

    /// `provider/id`, the form used in settings keys and messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// A boolean `compat` flag, `None` when absent or not a boolean.
    pub fn compat_bool(&self, key: &str) -> Option<bool> {
        self.compat.as_ref()?.get(key)?.as_bool()
    }
}

/// USD per million tokens.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    #[serde(serialize_with = "ser_js_f64", default)]
    pub input: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub output: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub cache_read: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub cache_write: f64,
    /// Rates that apply once the prompt (`input + cacheRead + cacheWrite`) exceeds a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<CostTier>>,
}

/// One pricing tier of [`ModelCost`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    #[serde(serialize_with = "ser_js_f64", default)]
    pub input_tokens_above: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub input: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub output: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub cache_read: f64,
    #[serde(serialize_with = "ser_js_f64", default)]
    pub cache_write: f64,
}

/// The dollar cost of one response, per token kind (pi's `usage.cost` without
/// `totalFromProvider`, which the caller adds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CostBreakdown {
    #[serde(serialize_with = "ser_js_f64")]
    pub input: f64,
    #[serde(serialize_with = "ser_js_f64")]
    pub output: f64,
    #[serde(serialize_with = "ser_js_f64")]
    pub cache_read: f64,
    #[serde(serialize_with = "ser_js_f64")]
    pub cache_write: f64,
    #[serde(serialize_with = "ser_js_f64")]
    pub total: f64,
}

/// pi's `calculateCost`: picks the tier with the largest `inputTokensAbove` that
/// `input + cache_read + cache_write` exceeds (else the base rates), then prices each kind.
/// `cache_write_1h` is the part of `cache_write` written with a 1-hour TTL, billed at twice the
/// input rate. The arithmetic follows pi's operation order so results match to the last bit.
pub fn calculate_cost(
    cost: &ModelCost,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cache_write_1h: u64,
) -> CostBreakdown {
    let (input, output, cache_read, cache_write, long_write) = (
        input as f64,
        output as f64,
        cache_read as f64,
        cache_write as f64,
        cache_write_1h as f64,
    );
    let prompt_tokens = input + cache_read + cache_write;
    let (mut r_in, mut r_out, mut r_read, mut r_write) =
        (cost.input, cost.output, cost.cache_read, cost.cache_write);
    let mut matched = -1.0;
    for tier in cost.tiers.iter().flatten() {
        if prompt_tokens > tier.input_tokens_above && tier.input_tokens_above > matched {
            (r_in, r_out, r_read, r_write) =
                (tier.input, tier.output, tier.cache_read, tier.cache_write);
            matched = tier.input_tokens_above;
        }
    }
    let short_write = cache_write - long_write;
    let c_input = (r_in / 1_000_000.0) * input;
    let c_output = (r_out / 1_000_000.0) * output;
    let c_read = (r_read / 1_000_000.0) * cache_read;
    let c_write = (r_write * short_write + r_in * 2.0 * long_write) / 1_000_000.0;
    CostBreakdown {
        input: c_input,
        output: c_output,
        cache_read: c_read,
        cache_write: c_write,
        total: c_input + c_output + c_read + c_write,
    }
}

/// Accepts any non-negative JSON number for a token count (`128000` or `128000.0`).
fn de_u64_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = Value::deserialize(d)?;
    number_to_u64(&v).ok_or_else(|| {
        serde::de::Error::custom(format!("expected a non-negative number, found {v}"))
    })
}

/// A non-negative finite JSON number as `u64` (fractions truncated).
pub(crate) fn number_to_u64(v: &Value) -> Option<u64> {
    if let Some(u) = v.as_u64() {
        return Some(u);
    }
    let f = v.as_f64()?;
    (0.0..1.8e19).contains(&f).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mock_model() -> Model {
        Model {
            id: "mock-model".into(),
            name: "Mock Model".into(),
            api: "anthropic-messages".into(),
            provider: "mock".into(),
            base_url: "http://127.0.0.1:18080".into(),
            reasoning: true,
            input: vec!["text".into(), "image".into()],
            cost: ModelCost {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                tiers: None,
            },
            context_window: 200_000,
            max_tokens: 16384,
            ..Model::default()
        }
    }

    #[test]
    fn serializes_like_pi() {
        assert_eq!(
            serde_json::to_string(&mock_model()).unwrap(),
            r#"{"id":"mock-model","name":"Mock Model","api":"anthropic-messages","provider":"mock","baseUrl":"http://127.0.0.1:18080","reasoning":true,"input":["text","image"],"cost":{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75},"contextWindow":200000,"maxTokens":16384}"#
        );
    }

    #[test]
    fn optional_fields_in_pi_order() {
        let mut m = mock_model();
        m.thinking_level_map = json!({"off": null, "xhigh": "xhigh"}).as_object().cloned();
        m.input_limits = Some(json!({"images": {"resize": {"maxWidth": 2000}}}));
        m.prompt_cache = Some(json!({"short": 300}));
        m.compat = json!({"forceAdaptiveThinking": true}).as_object().cloned();
        m.cost.tiers = Some(vec![CostTier {
            input_tokens_above: 200000.0,
            input: 6.0,
            output: 22.5,
            cache_read: 0.6,
            cache_write: 7.5,
        }]);
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            concat!(
                r#"{"id":"mock-model","name":"Mock Model","api":"anthropic-messages","provider":"mock","#,
                r#""baseUrl":"http://127.0.0.1:18080","reasoning":true,"thinkingLevelMap":{"off":null,"xhigh":"xhigh"},"#,
                r#""input":["text","image"],"inputLimits":{"images":{"resize":{"maxWidth":2000}}},"#,
                r#""cost":{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75,"tiers":[{"inputTokensAbove":200000,"input":6,"output":22.5,"cacheRead":0.6,"cacheWrite":7.5}]},"#,
                r#""promptCache":{"short":300},"contextWindow":200000,"maxTokens":16384,"#,
                r#""compat":{"forceAdaptiveThinking":true}}"#
            )
        );
    }

    #[test]
    fn placeholder_json() {
        let p = Model::placeholder();
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"id":"unknown","name":"unknown","api":"unknown","provider":"unknown","baseUrl":"","reasoning":false,"input":[],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":0,"maxTokens":0}"#
        );
        assert!(p.is_placeholder());
        assert!(!p.supports_images());
        assert!(!mock_model().is_placeholder());
        assert!(mock_model().supports_images());
    }

    #[test]
    fn round_trips_through_json() {
        let m = mock_model();
        let text = serde_json::to_string(&m).unwrap();
        let back: Model = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        let lenient: Model =
            serde_json::from_str(r#"{"id":"x","contextWindow":128000.0,"maxTokens":5}"#).unwrap();
        assert_eq!(lenient.context_window, 128000);
    }

    #[test]
    fn cost_basic() {
        let m = mock_model();
        let c = calculate_cost(&m.cost, 100, 20, 0, 0, 0);
        // JavaScript: 3/1e6*100 = 0.00030000000000000003
        assert_eq!(c.input, 3.0 / 1e6 * 100.0);
        assert_eq!(
            serde_json::to_string(&c.input).unwrap(),
            "0.00030000000000000003"
        );
        assert_eq!(c.output, 15.0 / 1e6 * 20.0);
        assert_eq!(c.cache_read, 0.0);
        assert_eq!(c.cache_write, 0.0);
        assert_eq!(c.total, c.input + c.output);
        assert_eq!(
            serde_json::to_string(&calculate_cost(&m.cost, 0, 0, 0, 0, 0)).unwrap(),
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}"#
        );
    }

    #[test]
    fn cost_cache_write_1h_billed_at_twice_input() {
        let m = mock_model();
        let c = calculate_cost(&m.cost, 0, 0, 0, 1000, 400);
        assert_eq!(c.cache_write, (3.75 * 600.0 + 3.0 * 2.0 * 400.0) / 1e6);
        assert_eq!(c.total, c.cache_write);
    }

    #[test]
    fn cost_tiers() {
        let cost = ModelCost {
            input: 2.5,
            output: 15.0,
            cache_read: 0.25,
            cache_write: 0.0,
            tiers: Some(vec![
                CostTier {
                    input_tokens_above: 272000.0,
                    input: 5.0,
                    output: 22.5,
                    cache_read: 0.5,
                    cache_write: 0.0,
                },
                CostTier {
                    input_tokens_above: 100000.0,
                    input: 4.0,
                    output: 20.0,
                    cache_read: 0.4,
                    cache_write: 0.0,
                },
            ]),
        };
        // Below every threshold: base rates.
        let c = calculate_cost(&cost, 1000, 10, 0, 0, 0);
        assert_eq!(c.input, 2.5 / 1e6 * 1000.0);
        // Exactly at a threshold does not exceed it.
        let c = calculate_cost(&cost, 100000, 0, 0, 0, 0);
        assert_eq!(c.input, 2.5 / 1e6 * 100000.0);
        // Above the 100k tier only.
        let c = calculate_cost(&cost, 150000, 10, 0, 0, 0);
        assert_eq!(c.input, 4.0 / 1e6 * 150000.0);
        assert_eq!(c.output, 20.0 / 1e6 * 10.0);
        // Cache reads count toward the threshold; the largest exceeded threshold wins.
        let c = calculate_cost(&cost, 100000, 0, 200000, 0, 0);
        assert_eq!(c.input, 5.0 / 1e6 * 100000.0);
        assert_eq!(c.cache_read, 0.5 / 1e6 * 200000.0);
    }
}
