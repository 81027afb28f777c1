//! The model registry (providers.md §6.4, §7): the built-in catalog (`catalog.json`, catalog
//! order) overlaid with `<agentDir>/models.json`, plus credentials (`auth.rs`), `--model`
//! pattern resolution and `--models` / `enabledModels` scopes (pi's `model-resolver`).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::auth::{
    resolve_config_value, strip_serde_position, AuthError, AuthStore, CredentialSource,
};
use super::model::{number_to_u64, Model, ModelCost};
use super::thinking::ThinkingLevel;

mod catalog;
mod defaults;
mod models_json;
mod patterns;
mod store;
mod store_lists;

pub use self::catalog::builtin_model_ids;
pub use self::defaults::DEFAULT_MODEL_PER_PROVIDER;
use self::models_json::*;
pub(crate) use self::patterns::locale_cmp;
pub use self::store_lists::radius_gateway;

/// The catalog's GitHub Copilot host, replaced by the one an OAuth token names.
const COPILOT_DEFAULT_BASE_URL: &str = "https://api.individual.githubcopilot.com";

/// Errors of model lookup by pattern. `Display` is pi's wording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// The registry has no models at all.
    NoModels,
    /// `--provider` names no known provider.
    UnknownProvider { provider: String },
    /// Nothing matches the pattern.
    ModelNotFound { pattern: String },
    /// The pattern matches the same id on several providers and credentials do not decide.
    /// `matches` are `provider/id`, sorted; `hint` says why credentials did not decide.
    Ambiguous {
        pattern: String,
        matches: Vec<String>,
        hint: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::NoModels => f.write_str(
                "No models available. Check your installation or add models to models.json.",
            ),
            RegistryError::UnknownProvider { provider } => write!(
                f,
                "Unknown provider \"{provider}\". Use --list-models to see available providers/models."
            ),
            RegistryError::ModelNotFound { pattern } => write!(
                f,
                "Model \"{pattern}\" not found. Use --list-models to see available models."
            ),
            RegistryError::Ambiguous {
                pattern,
                matches,
                hint,
            } => write!(
                f,
                "Model \"{pattern}\" is ambiguous across providers: {}. {hint} Use --provider or provider/model.",
                matches.join(", ")
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Per-provider settings the HTTP layer needs beyond the `Model` (from models.json).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProviderConfig {
    pub id: String,
    /// Display name (catalog or models.json `name`, else the id).
    pub name: String,
    /// True for providers of the built-in catalog.
    pub builtin: bool,
    /// The provider base URL after models.json (models carry their own copy).
    pub base_url: Option<String>,
    /// The provider-level `api` (models carry their own copy).
    pub api: Option<String>,
    /// models.json provider `headers`, unresolved (values may be `$VAR` / `!command`).
    pub headers: Option<Map<String, Value>>,
    /// models.json `authHeader`: send the key as `Authorization: Bearer <key>`.
    pub auth_header: bool,
}

/// Credentials and extra headers for one request, resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAuth {
    /// The API key for the wire API's own key header (`x-api-key`, `Authorization: Bearer`,
    /// `x-goog-api-key`). `None` when there is none, or when the credential travels in
    /// `headers` instead (`ANTHROPIC_AUTH_TOKEN`).
    pub api_key: Option<String>,
    /// Headers to add to the request, in order (provider headers, `Authorization` for
    /// `authHeader`, then model headers, which replace same-named ones case-insensitively).
    pub headers: Vec<(String, String)>,
    /// The model's base URL with its `{NAME}` placeholders filled (Cloudflare's account and
    /// gateway ids), when it has any.
    pub base_url: Option<String>,
    /// The provider settings the model's wire API reads at request time
    /// (`wire::request_settings`), resolved like base-URL placeholders (stored `env` first).
    pub env: Vec<(String, String)>,
}

/// A model chosen by `--model` (see [`ModelRegistry::resolve_cli_model`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedModel {
    pub model: Model,
    /// The `:<level>` suffix of the pattern, if any.
    pub thinking_level: Option<ThinkingLevel>,
    /// A warning for stderr (custom model id fallback, invalid thinking suffix).
    pub warning: Option<String>,
}

/// One provider of the registry and its models. Built-in providers untouched by models.json
/// parse their catalog block the first time they are needed (`catalog`); the others are
/// composed when the registry is built.
struct Slot {
    config: ProviderConfig,
    catalog: Option<catalog::IndexEntry>,
    /// Models in catalog order (built-ins), then models.json additions.
    models: OnceLock<Vec<Model>>,
    /// The number of models, known without parsing.
    count: usize,
}

impl Slot {
    fn models(&self) -> &[Model] {
        self.models.get_or_init(|| match &self.catalog {
            Some(entry) => catalog::models(entry).unwrap_or_else(|e| {
                eprintln!("Warning: the built-in model catalog is damaged ({e}); provider \"{}\" has no models", entry.id);
                Vec::new()
            }),
            None => Vec::new(),
        })
    }
}

/// All known models and their credentials.
pub struct ModelRegistry {
    slots: Vec<Slot>,
    /// models.json headers of individual models (`modelOverrides[id].headers` then
    /// `models[].headers`), unresolved, keyed by `provider\0id`.
    model_headers: HashMap<String, Map<String, Value>>,
    auth: AuthStore,
}

impl fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("providers", &self.provider_ids())
            .field("auth", &self.auth)
            .finish()
    }
}

impl ModelRegistry {
    /// Catalog + `<agent_dir>/models.json` + `<agent_dir>/auth.json`. Problems with either file
    /// are reported in `diags` (one line each) and the broken part ignored; missing files are
    /// silent.
    pub fn load(agent_dir: &Path, diags: &mut Vec<String>) -> ModelRegistry {
        let auth = AuthStore::load(agent_dir, diags);
        let path = agent_dir.join("models.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                diags.push(format!(
                    "Warning: failed to read {}: {e}; ignoring it",
                    path.display()
                ));
                None
            }
        };
        let store = store::load(agent_dir, diags);
        ModelRegistry::build(
            text.as_deref(),
            &path.display().to_string(),
            store.as_ref(),
            auth,
            diags,
        )
    }

    /// Catalog + the given models.json text (`None` = no file) + `auth`. For tests and embedding.
    pub fn from_parts(
        models_json: Option<&str>,
        auth: AuthStore,
        diags: &mut Vec<String>,
    ) -> ModelRegistry {
        ModelRegistry::build(models_json, "models.json", None, auth, diags)
    }

    fn build(
        models_json: Option<&str>,
        path: &str,
        models_store: Option<&Map<String, Value>>,
        auth: AuthStore,
        diags: &mut Vec<String>,
    ) -> ModelRegistry {
        let mut reg = ModelRegistry {
            slots: Vec::new(),
            model_headers: HashMap::new(),
            auth,
        };
        let (index, generated_at) = match catalog::index() {
            Ok(index) => (
                index.providers,
                crate::util::ms_from_iso(&index.generated_at),
            ),
            Err(e) => {
                diags.push(format!(
                    "Warning: the built-in model catalog is damaged ({e}); only models.json models are known"
                ));
                (Vec::new(), None)
            }
        };
        let config = models_json.and_then(|text| parse_models_json(text, path, diags));
        let empty = Map::new();
        let config = config.as_ref().unwrap_or(&empty);
        let radius_gateways = store_lists::radius_gateways(config);
        for (id, gateway) in &radius_gateways {
            reg.auth.set_radius_gateway(id, gateway.clone());
        }
        let radius_catalog = index.iter().find(|e| e.id == "radius").cloned();

        for entry in index {
            let (api, api_base) = entry.apis.first().cloned().unwrap_or_default();
            let pc = ProviderConfig {
                id: entry.id.clone(),
                name: entry.name.clone(),
                builtin: true,
                base_url: Some(entry.base_url.clone().unwrap_or(api_base)),
                api: Some(api),
                headers: None,
                auth_header: false,
            };
            let lazy = |pc: ProviderConfig, entry: catalog::IndexEntry| Slot {
                config: pc,
                count: entry.count,
                catalog: Some(entry),
                models: OnceLock::new(),
            };
            let replaced = store_lists::replaced_list(
                &entry.id,
                models_store,
                &reg.auth,
                radius_gateways
                    .iter()
                    .find(|(id, _)| id == &entry.id)
                    .map(|(_, g)| g.as_str()),
            );
            let stored = match replaced {
                Some(_) => Vec::new(),
                None => store::overlay(models_store, &entry.id, generated_at),
            };
            let config_overlay = config.get(&entry.id).and_then(Value::as_object);
            if replaced.is_none() && stored.is_empty() && config_overlay.is_none() {
                reg.slots.push(lazy(pc, entry));
                continue;
            }
            let models = match replaced {
                Some(list) => list,
                None => store::merge(catalog::models_or_warn(&entry, diags), stored),
            };
            let builtin = BuiltinProvider {
                name: entry.name.clone(),
                base_url: pc.base_url.clone().unwrap_or_default(),
                api: pc.api.clone().unwrap_or_default(),
                models,
            };
            let Some(overlay) = config_overlay else {
                reg.slots.push(Slot {
                    config: pc,
                    count: builtin.models.len(),
                    catalog: None,
                    models: OnceLock::from(builtin.models),
                });
                continue;
            };
            match compose_provider(&entry.id, Some(&builtin), overlay) {
                Ok(composed) => reg.add_composed(composed),
                Err(msg) => {
                    diags.push(format!(
                        "Warning: {path}: {msg}; ignoring the models.json settings of provider \"{}\"",
                        entry.id
                    ));
                    reg.slots.push(Slot {
                        config: pc,
                        count: builtin.models.len(),
                        catalog: None,
                        models: OnceLock::from(builtin.models),
                    });
                }
            }
        }
        // Custom Radius gateways come first, as pi registers them beside its built-ins.
        for (id, gateway) in &radius_gateways {
            let Some(overlay) = config.get(id).and_then(Value::as_object) else {
                continue;
            };
            if reg.slots.iter().any(|s| &s.config.id == id) {
                continue;
            }
            let shipped = || match &radius_catalog {
                Some(entry) => catalog::models_or_warn(entry, diags),
                None => Vec::new(),
            };
            let base =
                store_lists::custom_radius(id, gateway, overlay, models_store, &reg.auth, shipped);
            match compose_provider(id, Some(&base), overlay) {
                Ok(composed) => reg.add_composed(composed),
                Err(msg) => diags.push(format!(
                    "Warning: {path}: {msg}; ignoring provider \"{id}\""
                )),
            }
        }
        for (id, overlay) in config {
            if reg.slots.iter().any(|s| &s.config.id == id) {
                continue;
            }
            let Some(overlay) = overlay.as_object() else {
                continue;
            };
            match compose_provider(id, None, overlay) {
                Ok(composed) => reg.add_composed(composed),
                Err(msg) => diags.push(format!(
                    "Warning: {path}: {msg}; ignoring provider \"{id}\""
                )),
            }
        }
        reg
    }

    fn add_composed(&mut self, c: Composed) {
        if let Some(key) = c.api_key {
            self.auth.set_provider_config_key(&c.config.id, key);
        }
        for (id, headers) in c.model_headers {
            self.model_headers
                .insert(header_key(&c.config.id, &id), headers);
        }
        self.slots.push(Slot {
            config: c.config,
            count: c.models.len(),
            catalog: None,
            models: OnceLock::from(c.models),
        });
    }

    fn slot(&self, provider: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.config.id == provider)
    }

    /// Every model, in registry order (built-in providers in catalog order, then models.json
    /// providers in file order). Parses every provider's catalog block not parsed yet.
    pub fn all(&self) -> Vec<&Model> {
        self.slots.iter().flat_map(|s| s.models()).collect()
    }

    /// The models of one provider (an unknown provider has none).
    pub fn provider_models(&self, provider: &str) -> &[Model] {
        self.slot(provider).map(Slot::models).unwrap_or_default()
    }

    /// Models whose provider has credentials, in registry order. Only those providers' catalog
    /// blocks are parsed.
    pub fn available(&self) -> Vec<Model> {
        self.slots
            .iter()
            .filter(|s| s.count > 0 && self.auth.has_credentials(&s.config.id))
            .flat_map(|s| {
                let allowed = self.allowed_ids(&s.config.id);
                s.models()
                    .iter()
                    .filter(move |m| allowed.as_ref().is_none_or(|ids| ids.contains(&m.id)))
                    .cloned()
            })
            .collect()
    }

    /// GitHub Copilot signed in with OAuth lists only the models the account may use (the
    /// entry's `availableModelIds`); `None` when nothing restricts the provider.
    fn allowed_ids(&self, provider: &str) -> Option<Vec<String>> {
        if provider != "github-copilot" {
            return None;
        }
        self.auth.oauth_info(provider)?.available_model_ids
    }

    /// Exact lookup by provider and id.
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.provider_models(provider).iter().find(|m| m.id == id)
    }

    /// Exact lookup among available models (what `set_model` uses).
    pub fn find_available(&self, provider: &str, id: &str) -> Option<Model> {
        if !self.auth.has_credentials(provider) {
            return None;
        }
        if self
            .allowed_ids(provider)
            .is_some_and(|ids| !ids.iter().any(|i| i == id))
        {
            return None;
        }
        self.find(provider, id).cloned()
    }

    /// The model pi starts with when nothing else chooses one: the first available model that is
    /// its provider's preferred default (in [`DEFAULT_MODEL_PER_PROVIDER`] order), else the first
    /// available model.
    pub fn default_model(&self) -> Option<Model> {
        for (provider, id) in DEFAULT_MODEL_PER_PROVIDER {
            if let Some(m) = self.find_available(provider, id) {
                return Some(m);
            }
        }
        self.slots
            .iter()
            .filter(|s| s.count > 0 && self.auth.has_credentials(&s.config.id))
            .find_map(|s| s.models().first().cloned())
    }

    pub fn has_credentials(&self, provider: &str) -> bool {
        self.auth.has_credentials(provider)
    }

    /// The provider's API key; runs `!command` keys when needed.
    pub fn api_key(&self, provider: &str) -> Result<Option<String>, AuthError> {
        self.auth.api_key(provider)
    }

    /// `--api-key`: a non-persistent key for one provider.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: String) {
        self.auth.set_runtime_key(provider, key);
    }

    pub fn auth(&self) -> &AuthStore {
        &self.auth
    }

    pub fn auth_mut(&mut self) -> &mut AuthStore {
        &mut self.auth
    }

    /// Provider settings (authHeader, headers, …) of a known provider.
    pub fn provider_config(&self, provider: &str) -> Option<&ProviderConfig> {
        self.slot(provider).map(|s| &s.config)
    }

    /// Provider ids in registry order.
    pub fn provider_ids(&self) -> Vec<&str> {
        self.slots.iter().map(|s| s.config.id.as_str()).collect()
    }

    /// Resolves everything a request to `model` needs besides the body: the API key and extra
    /// headers (models.json provider and model headers with `$VAR` / `!command` values resolved,
    /// `Authorization: Bearer` for `authHeader` providers and for `ANTHROPIC_AUTH_TOKEN`).
    /// `api_key` is `None` when no credential is configured; the caller decides whether that is
    /// an error. Fails when a configured value cannot be resolved, or when `authHeader` is set
    /// but there is no key.
    pub fn request_auth(&self, model: &Model) -> Result<RequestAuth, AuthError> {
        let provider = model.provider.as_str();
        let cfg = self.provider_config(provider);
        // A provider that needs settings besides its key (Cloudflare's ids) is not usable
        // without them.
        let credential = self
            .auth
            .credential(provider)?
            .filter(|_| self.auth.settings_present(provider));
        let oauth_base_url = credential
            .as_ref()
            .filter(|c| provider == "github-copilot" && c.source == CredentialSource::OAuth)
            .and_then(|_| self.auth.oauth_info(provider))
            .and_then(|o| o.base_url);
        let env = self.auth.env();
        let mut out = RequestAuth::default();
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(c) = credential {
            if c.is_bearer_token() {
                headers.push(("Authorization".into(), format!("Bearer {}", c.key)));
            } else if provider == "cloudflare-ai-gateway" {
                // The gateway's own header; the API's key header is not sent.
                headers.push(("cf-aig-authorization".into(), format!("Bearer {}", c.key)));
            } else {
                out.api_key = Some(c.key);
            }
        }
        if model.base_url.contains('{') {
            out.base_url = Some(self.auth.fill_base_url(provider, &model.base_url));
        }
        if super::wire::takes_stored_env(model) {
            out.env.extend(self.auth.stored_env_pairs(provider));
        }
        for name in super::wire::request_settings(model) {
            // Resolved as the base-URL placeholder `{NAME}` is; left as is when unset.
            let placeholder = format!("{{{name}}}");
            let value = self.auth.fill_base_url(provider, &placeholder);
            if value != placeholder {
                out.env.push(((*name).to_owned(), value));
            }
        }
        // Copilot signed in with OAuth: the token names the API host (its `proxy-ep`), which
        // replaces the catalog's default host; a models.json baseUrl is left alone.
        if let Some(url) = oauth_base_url {
            if model.base_url == COPILOT_DEFAULT_BASE_URL {
                out.base_url = Some(url);
            }
        }
        if let Some(h) = cfg.and_then(|c| c.headers.as_ref()) {
            for (name, value) in h {
                let Some(value) = value.as_str() else {
                    continue;
                };
                let what = format!("provider \"{provider}\" header \"{name}\"");
                let v = resolve_config_value(value, &what, env, None, None)?;
                // Plain object spread: same spelling replaces.
                headers.retain(|(n, _)| n != name);
                headers.push((name.clone(), v));
            }
        }
        if cfg.is_some_and(|c| c.auth_header) {
            let Some(key) = out.api_key.clone() else {
                return Err(AuthError::MissingApiKey {
                    provider: provider.to_string(),
                });
            };
            headers.retain(|(n, _)| n != "Authorization");
            headers.push(("Authorization".into(), format!("Bearer {key}")));
        }
        let mut model_headers: Vec<(String, String)> = Vec::new();
        let raw = model.headers.iter().flatten().chain(
            self.model_headers
                .get(&header_key(provider, &model.id))
                .into_iter()
                .flatten(),
        );
        for (name, value) in raw {
            let Some(value) = value.as_str() else {
                continue;
            };
            let what = format!("model \"{provider}/{}\" header \"{name}\"", model.id);
            let v = resolve_config_value(value, &what, env, None, None)?;
            model_headers.retain(|(n, _)| n != name);
            model_headers.push((name.clone(), v));
        }
        for (name, value) in model_headers {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            headers.push((name, value));
        }
        out.headers = headers;
        Ok(out)
    }
}

fn header_key(provider: &str, id: &str) -> String {
    format!("{provider}\0{id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::auth::fake_env;
    use crate::llm::thinking::{clamp_level, supported_levels};

    pub(super) fn registry(
        models_json: Option<&str>,
        env: &[(&str, &str)],
    ) -> (ModelRegistry, Vec<String>) {
        let mut diags = Vec::new();
        let auth = AuthStore::empty().with_env(fake_env(env));
        let r = ModelRegistry::from_parts(models_json, auth, &mut diags);
        (r, diags)
    }

    /// pi 1.6.0's built-in providers, in registration order.
    pub(super) const BUILTIN_IDS: &[&str] = &[
        "amazon-bedrock",
        "ant-ling",
        "anthropic",
        "azure",
        "baseten",
        "cerebras",
        "cloudflare-ai-gateway",
        "cloudflare-workers-ai",
        "deepseek",
        "fireworks",
        "github-copilot",
        "google",
        "google-vertex",
        "groq",
        "huggingface",
        "kimi-coding",
        "meta",
        "minimax",
        "minimax-cn",
        "mistral",
        "moonshotai",
        "moonshotai-cn",
        "nvidia",
        "openai",
        "openai-codex",
        "opencode",
        "opencode-go",
        "openrouter",
        "qwen-token-plan",
        "qwen-token-plan-cn",
        "qwen-token-plan-individual",
        "qwen-token-plan-individual-cn",
        "radius",
        "together",
        "typesafe",
        "vercel-ai-gateway",
        "xai",
        "xiaomi",
        "xiaomi-token-plan-ams",
        "xiaomi-token-plan-cn",
        "xiaomi-token-plan-sgp",
        "zai",
        "zai-coding-cn",
    ];

    pub(super) const MOCK: &str = r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:18080","api":"anthropic-messages","apiKey":"test-key",
        "models":[{"id":"mock-model","name":"Mock Model","reasoning":true,"input":["text","image"],
                   "contextWindow":200000,"cost":{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75}},
                  {"id":"oai-model","api":"openai-completions","baseUrl":"http://127.0.0.1:18080/v1"}]}}}"#;

    #[test]
    fn catalog_has_the_table_models() {
        let (r, diags) = registry(None, &[]);
        assert!(diags.is_empty(), "{diags:?}");
        let find = |p: &str, id: &str| r.find(p, id).cloned().unwrap_or_else(|| panic!("{p}/{id}"));
        let sonnet = find("anthropic", "claude-sonnet-4-5");
        assert_eq!(sonnet.api, "anthropic-messages");
        assert_eq!(sonnet.base_url, "https://api.anthropic.com");
        assert_eq!((sonnet.context_window, sonnet.max_tokens), (200000, 64000));
        assert_eq!(sonnet.cost.cache_write, 3.75);
        assert!(find("anthropic", "claude-sonnet-4-5-20250929").reasoning);
        let opus = find("anthropic", "claude-opus-4-7");
        assert_eq!(supported_levels(&opus), ThinkingLevel::ALL.to_vec());
        assert_eq!(opus.compat_bool("forceAdaptiveThinking"), Some(true));
        let gpt5 = find("openai", "gpt-5");
        assert_eq!(gpt5.base_url, "https://api.openai.com/v1");
        assert_eq!(gpt5.api, "openai-responses");
        assert_eq!(
            supported_levels(&gpt5),
            vec![
                ThinkingLevel::Minimal,
                ThinkingLevel::Low,
                ThinkingLevel::Medium,
                ThinkingLevel::High
            ]
        );
        let gpt54 = find("openai", "gpt-5.4");
        assert_eq!(gpt54.cost.tiers.as_ref().map(Vec::len), Some(1));
        for id in [
            "gpt-4o",
            "gpt-4.1",
            "gpt-5-mini",
            "gpt-5.2",
            "o3",
            "o4-mini",
        ] {
            find("openai", id);
        }
        for id in [
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-2.5-flash-lite",
            "gemini-3.1-pro-preview",
        ] {
            let m = find("google", id);
            assert_eq!(
                m.base_url,
                "https://generativelanguage.googleapis.com/v1beta"
            );
            assert_eq!(m.api, "google-generative-ai");
        }
        assert_eq!(r.provider_ids(), BUILTIN_IDS);
        // Nothing is available without credentials.
        assert!(r.available().is_empty());
        assert_eq!(r.default_model(), None);
    }

    #[test]
    fn request_auth_headers() {
        let json = r#"{"providers":{"p":{"baseUrl":"http://x","api":"openai-completions",
            "apiKey":"$PI_RPC_TEST_KEY","authHeader":true,"headers":{"X-Team":"${PI_RPC_TEST_TEAM}","x-over":"provider"},
            "models":[{"id":"m","headers":{"X-Over":"model"}}]}}}"#;
        let (r, diags) = registry(
            Some(json),
            &[("PI_RPC_TEST_KEY", "sekrit"), ("PI_RPC_TEST_TEAM", "blue")],
        );
        assert!(diags.is_empty(), "{diags:?}");
        let cfg = r.provider_config("p").unwrap();
        assert!(cfg.auth_header);
        let m = r.find("p", "m").unwrap().clone();
        assert_eq!(
            m.headers, None,
            "models.json headers are not part of the model"
        );
        let auth = r.request_auth(&m).unwrap();
        assert_eq!(auth.api_key.as_deref(), Some("sekrit"));
        assert_eq!(
            auth.headers,
            vec![
                ("X-Team".to_string(), "blue".to_string()),
                ("Authorization".to_string(), "Bearer sekrit".to_string()),
                ("X-Over".to_string(), "model".to_string()),
            ]
        );

        let (r, _) = registry(Some(json), &[("PI_RPC_TEST_KEY", "sekrit")]);
        let err = r.request_auth(&m).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to resolve provider \"p\" header \"X-Team\" from environment variable: PI_RPC_TEST_TEAM"
        );

        let (r, _) = registry(None, &[("ANTHROPIC_AUTH_TOKEN", "tok")]);
        let m = r.find("anthropic", "claude-opus-4-7").unwrap().clone();
        let auth = r.request_auth(&m).unwrap();
        assert_eq!(auth.api_key, None);
        assert_eq!(
            auth.headers,
            vec![("Authorization".to_string(), "Bearer tok".to_string())]
        );
    }

    #[test]
    fn auth_header_without_key_is_an_error() {
        let json = r#"{"providers":{"p":{"baseUrl":"http://x","api":"openai-completions","authHeader":true,"models":[{"id":"m"}]}}}"#;
        let (r, _) = registry(Some(json), &[]);
        let m = r.find("p", "m").unwrap().clone();
        assert_eq!(
            r.request_auth(&m).unwrap_err().to_string(),
            "No API key found for \"p\""
        );
    }

    #[test]
    fn runtime_key_makes_a_provider_available() {
        let (mut r, _) = registry(None, &[]);
        assert!(r.available().is_empty());
        r.set_runtime_api_key("google", "g".into());
        assert!(r.available().iter().all(|m| m.provider == "google"));
        assert_eq!(
            r.default_model().map(|m| m.id),
            Some("gemini-4-argon".into())
        );
    }

    #[test]
    fn copilot_oauth_names_the_host_and_the_models() {
        let auth_json = r#"{"github-copilot": {"type": "oauth", "refresh": "gho_x",
            "access": "tid=1;exp=9999999999;proxy-ep=proxy.business.githubcopilot.com;",
            "expires": 99999999999999, "availableModelIds": ["gpt-6.1-sol", "not-in-the-catalog"]}}"#;
        let mut diags = Vec::new();
        let auth =
            AuthStore::from_json(Some(auth_json), "auth.json", &mut diags).with_env(fake_env(&[]));
        let r = ModelRegistry::from_parts(None, auth, &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        let listed: Vec<String> = r.available().into_iter().map(|m| m.id).collect();
        assert_eq!(listed, ["gpt-6.1-sol"]);
        assert!(r.find_available("github-copilot", "gpt-6.1-sol").is_some());
        let hidden = r
            .find("github-copilot", "gpt-6.2-sol")
            .map(|m| m.id.clone())
            .or_else(|| {
                r.provider_models("github-copilot")
                    .iter()
                    .map(|m| m.id.clone())
                    .find(|id| !listed.contains(id))
            })
            .unwrap();
        assert!(r.find_available("github-copilot", &hidden).is_none());
        let m = r.find("github-copilot", "gpt-6.1-sol").unwrap().clone();
        let auth = r.request_auth(&m).unwrap();
        assert_eq!(
            auth.base_url.as_deref(),
            Some("https://api.business.githubcopilot.com")
        );
    }

    #[test]
    fn registry_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ModelRegistry>();
    }

    #[test]
    fn clamp_with_catalog_models() {
        let (r, _) = registry(None, &[]);
        let o3 = r.find("openai", "o3").unwrap();
        assert_eq!(clamp_level(o3, ThinkingLevel::Off), ThinkingLevel::Low);
        let sonnet = r.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(
            clamp_level(sonnet, ThinkingLevel::Xhigh),
            ThinkingLevel::High
        );
    }
}
