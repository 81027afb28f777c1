//! The model registry (providers.md §6.4, §7): the built-in catalog (`catalog.json`, catalog
//! order) overlaid with `<agentDir>/models.json`, plus credentials (`auth.rs`), `--model`
//! pattern resolution and `--models` / `enabledModels` scopes (pi's `model-resolver`).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

use super::auth::{resolve_config_value, strip_serde_position, AuthError, AuthStore};
use super::model::{number_to_u64, Model, ModelCost};
use super::thinking::ThinkingLevel;

/// The built-in catalog: `{"providers":{"<id>":{"name","baseUrl","api","models":[…]}}}`.
const CATALOG_JSON: &str = include_str!("catalog.json");

/// pi's `defaultModelPerProvider`: the preferred first model of each provider, in pi's order
/// (used for the initial model and as the template of a custom model id).
pub const DEFAULT_MODEL_PER_PROVIDER: &[(&str, &str)] = &[
    ("amazon-bedrock", "us.anthropic.claude-opus-5-5"),
    ("ant-ling", "Ring-2.6-1T"),
    ("anthropic", "claude-opus-5-5"),
    ("openai", "gpt-6.2-sol"),
    ("azure", "gpt-6.2-sol"),
    ("openai-codex", "gpt-6.2-sol"),
    ("radius", "balanced"),
    ("nvidia", "nvidia/nemotron-3.5-super-vl-120b-a12b"),
    ("deepseek", "deepseek-v4-pro"),
    ("google", "gemini-4-argon"),
    ("google-vertex", "gemini-4-argon"),
    ("github-copilot", "gpt-6.1-sol"),
    ("openrouter", "moonshotai/kimi-k2.7-code"),
    ("vercel-ai-gateway", "zai/glm-5.3"),
    ("xai", "grok-4.7"),
    ("groq", "openai/gpt-oss-120b"),
    ("cerebras", "gpt-oss-120b"),
    ("zai", "glm-5.3"),
    ("zai-coding-cn", "glm-5.3"),
    ("mistral", "devstral-medium-latest"),
    ("minimax", "MiniMax-M3"),
    ("minimax-cn", "MiniMax-M3"),
    ("moonshotai", "kimi-k2.7-code"),
    ("moonshotai-cn", "kimi-k2.7-code"),
    ("huggingface", "moonshotai/Kimi-K2.7-Code"),
    ("fireworks", "accounts/fireworks/models/kimi-k3"),
    ("together", "moonshotai/Kimi-K3"),
    ("baseten", "zai-org/GLM-5.3"),
    ("opencode", "kimi-k2.7-code"),
    ("opencode-go", "kimi-k3.1-pro"),
    ("kimi-coding", "kimi-for-coding"),
    ("meta", "muse-spark-1.3"),
    ("cloudflare-workers-ai", "@cf/moonshotai/kimi-k2.7-code"),
    (
        "cloudflare-ai-gateway",
        "workers-ai/@cf/moonshotai/kimi-k2.7-code",
    ),
    ("qwen-token-plan", "qwen3.8-max"),
    ("qwen-token-plan-cn", "qwen3.8-max"),
    ("qwen-token-plan-individual", "qwen3.8-max"),
    ("qwen-token-plan-individual-cn", "qwen3.8-max"),
    ("xiaomi", "mimo-v2.6-pro"),
    ("xiaomi-token-plan-cn", "mimo-v2.6-pro"),
    ("xiaomi-token-plan-ams", "mimo-v2.6-pro"),
    ("xiaomi-token-plan-sgp", "mimo-v2.6-pro"),
];

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

/// All known models and their credentials.
pub struct ModelRegistry {
    models: Vec<Model>,
    providers: Vec<ProviderConfig>,
    /// models.json headers of individual models (`modelOverrides[id].headers` then
    /// `models[].headers`), unresolved, keyed by `provider\0id`.
    model_headers: HashMap<String, Map<String, Value>>,
    auth: AuthStore,
}

impl fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("models", &self.models.len())
            .field(
                "providers",
                &self.providers.iter().map(|p| &p.id).collect::<Vec<_>>(),
            )
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
        ModelRegistry::build(text.as_deref(), &path.display().to_string(), auth, diags)
    }

    /// Catalog + the given models.json text (`None` = no file) + `auth`. For tests and embedding.
    pub fn from_parts(
        models_json: Option<&str>,
        auth: AuthStore,
        diags: &mut Vec<String>,
    ) -> ModelRegistry {
        ModelRegistry::build(models_json, "models.json", auth, diags)
    }

    fn build(
        models_json: Option<&str>,
        path: &str,
        auth: AuthStore,
        diags: &mut Vec<String>,
    ) -> ModelRegistry {
        let mut reg = ModelRegistry {
            models: Vec::new(),
            providers: Vec::new(),
            model_headers: HashMap::new(),
            auth,
        };
        let builtins = match parse_catalog(CATALOG_JSON) {
            Ok(b) => b,
            Err(e) => {
                diags.push(format!(
                    "Warning: the built-in model catalog is damaged ({e}); only models.json models are known"
                ));
                Vec::new()
            }
        };
        let config = models_json.and_then(|text| parse_models_json(text, path, diags));
        let empty = Map::new();
        let config = config.as_ref().unwrap_or(&empty);

        for b in builtins {
            let pc = ProviderConfig {
                id: b.id.clone(),
                name: b.name.clone(),
                builtin: true,
                base_url: Some(b.base_url.clone()),
                api: Some(b.api.clone()),
                headers: None,
                auth_header: false,
            };
            match config.get(&b.id).and_then(Value::as_object) {
                None => {
                    reg.providers.push(pc);
                    reg.models.extend(b.models);
                }
                Some(overlay) => match compose_provider(&b.id, Some(&b), overlay) {
                    Ok(composed) => reg.add_composed(composed),
                    Err(msg) => {
                        diags.push(format!(
                            "Warning: {path}: {msg}; ignoring the models.json settings of provider \"{}\"",
                            b.id
                        ));
                        reg.providers.push(pc);
                        reg.models.extend(b.models);
                    }
                },
            }
        }
        for (id, overlay) in config {
            if reg.providers.iter().any(|p| &p.id == id) {
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
        self.providers.push(c.config);
        self.models.extend(c.models);
    }

    /// Every model, in registry order (built-in providers in catalog order, then models.json
    /// providers in file order).
    pub fn all(&self) -> &[Model] {
        &self.models
    }

    /// Models whose provider has credentials, in registry order.
    pub fn available(&self) -> Vec<Model> {
        let mut cache: HashMap<&str, bool> = HashMap::new();
        self.models
            .iter()
            .filter(|m| {
                *cache
                    .entry(m.provider.as_str())
                    .or_insert_with(|| self.auth.has_credentials(&m.provider))
            })
            .cloned()
            .collect()
    }

    /// Exact lookup by provider and id.
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// Exact lookup among available models (what `set_model` uses).
    pub fn find_available(&self, provider: &str, id: &str) -> Option<Model> {
        self.find(provider, id)
            .filter(|m| self.auth.has_credentials(&m.provider))
            .cloned()
    }

    /// The model pi starts with when nothing else chooses one: the first available model that is
    /// its provider's preferred default (in [`DEFAULT_MODEL_PER_PROVIDER`] order), else the first
    /// available model.
    pub fn default_model(&self) -> Option<Model> {
        let available = self.available();
        for (provider, id) in DEFAULT_MODEL_PER_PROVIDER {
            if let Some(m) = available
                .iter()
                .find(|m| m.provider == *provider && m.id == *id)
            {
                return Some(m.clone());
            }
        }
        available.into_iter().next()
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
        self.providers.iter().find(|p| p.id == provider)
    }

    /// Provider ids in registry order.
    pub fn provider_ids(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.id.as_str()).collect()
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
        let credential = self.auth.credential(provider)?;
        let env = self.auth.env();
        let mut out = RequestAuth::default();
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(c) = credential {
            if c.is_bearer_token() {
                headers.push(("Authorization".into(), format!("Bearer {}", c.key)));
            } else {
                out.api_key = Some(c.key);
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

    // -----------------------------------------------------------------------------------------
    // Patterns

    /// `--model` / `--models` pattern: `provider/id`, exact id, or case-insensitive substring of
    /// id or name, with an optional `:<thinking level>` suffix (split off only when the part
    /// after the last `:` is a valid level). `provider` restricts the search. All models are
    /// searched; credentials only break ties between providers offering the same id. Among
    /// substring matches pi prefers aliases (ids not ending in `-YYYYMMDD`) and then the id that
    /// sorts last (the newest). Unlike [`ModelRegistry::resolve_cli_model`] an unknown id is an
    /// error, never a custom model.
    pub fn resolve_pattern(
        &self,
        pattern: &str,
        provider: Option<&str>,
    ) -> Result<(Model, Option<ThinkingLevel>), RegistryError> {
        let provider = self.cli_provider(provider)?;
        let res = resolve_reference(
            pattern,
            provider.as_deref(),
            SuffixMode::Strict,
            true,
            &self.models,
            &|p| self.auth.has_credentials(p),
        );
        match res.status {
            Status::Resolved(i) => Ok((self.models[i].clone(), res.level)),
            Status::Ambiguous {
                candidates,
                usable_count,
            } => Err(self.ambiguous(pattern, &candidates, usable_count, false)),
            Status::NotFound(_) => Err(RegistryError::ModelNotFound {
                pattern: pattern.to_string(),
            }),
        }
    }

    /// pi's `resolveCliModel` for `--provider` / `--model` / `--thinking` / `--api-key`:
    /// like [`ModelRegistry::resolve_pattern`], but an unknown id on a known provider becomes a
    /// custom model (a copy of the provider's default model with that id, `reasoning` forced on
    /// when a thinking level other than `off` is requested) with a warning. With `cli_thinking`
    /// given, a `:<level>` suffix of an unknown id stays part of the id. `inline_api_key`
    /// (`--api-key` given) stops credentials from choosing between providers.
    pub fn resolve_cli_model(
        &self,
        provider: Option<&str>,
        pattern: &str,
        cli_thinking: Option<ThinkingLevel>,
        inline_api_key: bool,
    ) -> Result<ResolvedModel, RegistryError> {
        let provider = self.cli_provider(provider)?;
        let usable = |p: &str| !inline_api_key && self.auth.has_credentials(p);
        let res = resolve_reference(
            pattern,
            provider.as_deref(),
            SuffixMode::Strict,
            true,
            &self.models,
            &usable,
        );
        match res.status {
            Status::Resolved(i) => Ok(ResolvedModel {
                model: self.models[i].clone(),
                thinking_level: res.level,
                warning: res.warning,
            }),
            Status::Ambiguous {
                candidates,
                usable_count,
            } => Err(self.ambiguous(pattern, &candidates, usable_count, inline_api_key)),
            Status::NotFound(None) => Err(RegistryError::ModelNotFound {
                pattern: pattern.to_string(),
            }),
            Status::NotFound(Some(target)) => {
                let model_id = if cli_thinking.is_some() {
                    target.model_text.clone()
                } else {
                    target.model_id.clone()
                };
                let fallback_thinking = if cli_thinking.is_some() {
                    None
                } else {
                    target.level
                };
                let default_id = DEFAULT_MODEL_PER_PROVIDER
                    .iter()
                    .find(|(p, _)| *p == target.provider)
                    .map(|(_, id)| *id);
                let base_idx = default_id
                    .and_then(|d| {
                        target
                            .provider_models
                            .iter()
                            .copied()
                            .find(|&i| self.models[i].id == d)
                    })
                    .unwrap_or(target.provider_models[0]);
                let mut model = self.models[base_idx].clone();
                model.id = model_id.clone();
                model.name = model_id.clone();
                if cli_thinking
                    .or(fallback_thinking)
                    .is_some_and(|l| l != ThinkingLevel::Off)
                {
                    model.reasoning = true;
                }
                Ok(ResolvedModel {
                    model,
                    thinking_level: fallback_thinking,
                    warning: Some(format!(
                        "Model \"{model_id}\" not found for provider \"{}\". Using custom model id.",
                        target.provider
                    )),
                })
            }
        }
    }

    fn cli_provider(&self, provider: Option<&str>) -> Result<Option<String>, RegistryError> {
        if self.models.is_empty() {
            return Err(RegistryError::NoModels);
        }
        match provider {
            None => Ok(None),
            Some(p) => self
                .models
                .iter()
                .find(|m| m.provider.to_lowercase() == p.to_lowercase())
                .map(|m| Some(m.provider.clone()))
                .ok_or_else(|| RegistryError::UnknownProvider {
                    provider: p.to_string(),
                }),
        }
    }

    fn ambiguous(
        &self,
        pattern: &str,
        candidates: &[usize],
        usable_count: usize,
        inline_api_key: bool,
    ) -> RegistryError {
        let mut matches: Vec<String> = candidates.iter().map(|&i| self.models[i].key()).collect();
        matches.sort_by(|a, b| locale_cmp(a, b));
        let hint = if inline_api_key {
            "--api-key does not choose a provider."
        } else if usable_count == 0 {
            "No matching provider is authenticated."
        } else {
            "More than one matching provider is authenticated."
        };
        RegistryError::Ambiguous {
            pattern: pattern.to_string(),
            matches,
            hint: hint.to_string(),
        }
    }

    /// `--models` / `enabledModels` scope over the available models: each pattern is a glob
    /// (`*`, `?`, `[…]`, matched case-insensitively on `provider/id` and on `id`) or a
    /// `--model`-style pattern, each with an optional `:<level>`. Matches in pattern order,
    /// without duplicates. Warnings are dropped; see
    /// [`ModelRegistry::resolve_scope_with_warnings`].
    pub fn resolve_scope(&self, patterns: &[String]) -> Vec<(Model, Option<ThinkingLevel>)> {
        self.resolve_scope_with_warnings(patterns, &mut Vec::new())
    }

    /// [`ModelRegistry::resolve_scope`], pushing pi's warnings (`Warning: No models match
    /// pattern "x"`, ambiguous patterns, invalid thinking suffixes) into `warnings`.
    pub fn resolve_scope_with_warnings(
        &self,
        patterns: &[String],
        warnings: &mut Vec<String>,
    ) -> Vec<(Model, Option<ThinkingLevel>)> {
        let models = self.available();
        let always = |_: &str| true;
        let mut out: Vec<(Model, Option<ThinkingLevel>)> = Vec::new();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let mut add = |m: &Model, level: Option<ThinkingLevel>, out: &mut Vec<_>| {
            if seen.insert((m.provider.clone(), m.id.clone())) {
                out.push((m.clone(), level));
            }
        };
        let ambiguous_warning = |pattern: &str, candidates: &[usize]| {
            let mut providers: Vec<&str> = candidates
                .iter()
                .map(|&i| models[i].provider.as_str())
                .collect();
            providers.sort_by(|a, b| locale_cmp(a, b));
            providers.dedup();
            format!(
                "Warning: Pattern \"{pattern}\" matches several providers: {}. Use provider/id to choose one.",
                providers.join(", ")
            )
        };
        for pattern in patterns {
            if pattern.contains(['*', '?', '[']) {
                let (glob, level) = match split_thinking_suffix(pattern) {
                    Some((base, level)) => (base, Some(level)),
                    None => (pattern.as_str(), None),
                };
                let exact =
                    resolve_reference(glob, None, SuffixMode::None, false, &models, &always);
                let matches: Vec<usize> = match exact.status {
                    Status::Resolved(i) => vec![i],
                    Status::Ambiguous { candidates, .. } => {
                        warnings.push(ambiguous_warning(pattern, &candidates));
                        candidates
                    }
                    Status::NotFound(_) => (0..models.len())
                        .filter(|&i| {
                            let m = &models[i];
                            glob_match(glob, &m.key()) || glob_match(glob, &m.id)
                        })
                        .collect(),
                };
                if matches.is_empty() {
                    warnings.push(format!("Warning: No models match pattern \"{pattern}\""));
                }
                for i in matches {
                    add(&models[i], level, &mut out);
                }
                continue;
            }
            let res = resolve_reference(pattern, None, SuffixMode::Lenient, true, &models, &always);
            if let Some(w) = &res.warning {
                warnings.push(format!("Warning: {w}"));
            }
            let matches = match res.status {
                Status::NotFound(_) => {
                    warnings.push(format!("Warning: No models match pattern \"{pattern}\""));
                    continue;
                }
                Status::Resolved(i) => vec![i],
                Status::Ambiguous { candidates, .. } => {
                    warnings.push(ambiguous_warning(pattern, &candidates));
                    candidates
                }
            };
            for i in matches {
                add(&models[i], res.level, &mut out);
            }
        }
        out
    }
}

fn header_key(provider: &str, id: &str) -> String {
    format!("{provider}\0{id}")
}

// ---------------------------------------------------------------------------------------------
// Catalog

struct BuiltinProvider {
    id: String,
    name: String,
    base_url: String,
    api: String,
    models: Vec<Model>,
}

fn parse_catalog(text: &str) -> Result<Vec<BuiltinProvider>, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let providers = root
        .get("providers")
        .and_then(Value::as_object)
        .ok_or("no \"providers\" object")?;
    let mut out = Vec::new();
    for (id, p) in providers {
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        let base_url = s("baseUrl").ok_or_else(|| format!("provider {id}: no baseUrl"))?;
        let api = s("api").ok_or_else(|| format!("provider {id}: no api"))?;
        let mut models = Vec::new();
        for m in p
            .get("models")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut obj = m.as_object().cloned().unwrap_or_default();
            obj.entry("api").or_insert_with(|| Value::from(api.clone()));
            obj.insert("provider".into(), Value::from(id.clone()));
            obj.entry("baseUrl")
                .or_insert_with(|| Value::from(base_url.clone()));
            let model: Model = serde_json::from_value(Value::Object(obj))
                .map_err(|e| format!("provider {id}: {e}"))?;
            models.push(model);
        }
        out.push(BuiltinProvider {
            id: id.clone(),
            name: s("name").unwrap_or_else(|| id.clone()),
            base_url,
            api,
            models,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// models.json

/// Parses and validates models.json; returns its `providers` object, or `None` (with a
/// diagnostic) when the file is unusable.
fn parse_models_json(
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

type Errors = Vec<String>;

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
struct Composed {
    config: ProviderConfig,
    models: Vec<Model>,
    api_key: Option<String>,
    model_headers: Vec<(String, Map<String, Value>)>,
}

fn str_field(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::to_string)
}

fn obj_field(m: &Map<String, Value>, key: &str) -> Option<Map<String, Value>> {
    m.get(key).and_then(Value::as_object).cloned()
}

/// pi's `applyModelsJson` + `modelOverrides` for one provider (validated input).
fn compose_provider(
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
            if let Some(u) = &base_url {
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

// ---------------------------------------------------------------------------------------------
// Pattern resolution (pi's model-resolver)

#[derive(Clone, Copy, PartialEq, Eq)]
enum SuffixMode {
    /// No `:<level>` handling at all.
    None,
    /// An invalid suffix stays part of the id (and usually fails).
    Strict,
    /// An invalid suffix is dropped with a warning.
    Lenient,
}

struct Target {
    provider: String,
    /// Models of the target provider, the anchor first.
    provider_models: Vec<usize>,
    model_text: String,
    model_id: String,
    level: Option<ThinkingLevel>,
}

enum Status {
    Resolved(usize),
    Ambiguous {
        candidates: Vec<usize>,
        usable_count: usize,
    },
    NotFound(Option<Target>),
}

struct Resolution {
    status: Status,
    level: Option<ThinkingLevel>,
    warning: Option<String>,
}

impl Resolution {
    fn status(status: Status) -> Resolution {
        Resolution {
            status,
            level: None,
            warning: None,
        }
    }
    fn not_found() -> Resolution {
        Resolution::status(Status::NotFound(None))
    }
    fn is_not_found(&self) -> bool {
        matches!(self.status, Status::NotFound(_))
    }
}

fn split_thinking_suffix(text: &str) -> Option<(&str, ThinkingLevel)> {
    let colon = text.rfind(':')?;
    let level = ThinkingLevel::parse(&text[colon + 1..])?;
    Some((&text[..colon], level))
}

/// Splits `provider/rest` where `provider` is a known provider id (longest match first; ids
/// may contain `/`). Returns the provider as spelled in the registry and the trimmed rest.
fn split_provider_prefix(text: &str, models: &[Model], pool: &[usize]) -> Option<(String, String)> {
    let lower = text.to_ascii_lowercase();
    let mut best: Option<(String, String)> = None;
    for &i in pool {
        let provider = &models[i].provider;
        let prefix = provider.trim().to_ascii_lowercase();
        if prefix.is_empty()
            || best
                .as_ref()
                .is_some_and(|(p, _)| p.len() >= provider.len())
        {
            continue;
        }
        let Some(slash) = lower.get(prefix.len()..).and_then(|s| s.find('/')) else {
            continue;
        };
        let slash = prefix.len() + slash;
        if lower[..slash].trim() != prefix {
            continue;
        }
        let model_text = text[slash + 1..].trim();
        if !model_text.is_empty() {
            best = Some((provider.clone(), model_text.to_string()));
        }
    }
    best
}

/// pi's `resolveModelReference`.
fn resolve_reference(
    text: &str,
    constraint: Option<&str>,
    mode: SuffixMode,
    fuzzy: bool,
    models: &[Model],
    usable: &dyn Fn(&str) -> bool,
) -> Resolution {
    let text = text.trim();
    if text.is_empty() {
        return Resolution::not_found();
    }
    let constraint = constraint.map(str::to_lowercase);
    let pool: Vec<usize> = (0..models.len())
        .filter(|&i| {
            constraint
                .as_ref()
                .is_none_or(|c| models[i].provider.to_lowercase() == *c)
        })
        .collect();
    let result = resolve_text(text, mode, fuzzy, models, &pool, usable);
    if !result.is_not_found() {
        return result;
    }
    let split = split_provider_prefix(text, models, &pool);
    let anchor = if constraint.is_some() {
        pool.first().copied()
    } else {
        split
            .as_ref()
            .and_then(|(p, _)| pool.iter().copied().find(|&i| &models[i].provider == p))
    };
    let Some(anchor) = anchor else { return result };
    let model_text = split.map(|(_, t)| t).unwrap_or_else(|| text.to_string());
    let suffix = if mode == SuffixMode::None {
        None
    } else {
        split_thinking_suffix(&model_text)
    };
    let provider = models[anchor].provider.clone();
    let mut provider_models = vec![anchor];
    provider_models.extend(
        pool.iter()
            .copied()
            .filter(|&i| i != anchor && models[i].provider == provider),
    );
    Resolution::status(Status::NotFound(Some(Target {
        provider,
        provider_models,
        model_id: suffix
            .map(|(b, _)| b.to_string())
            .unwrap_or_else(|| model_text.clone()),
        level: suffix.map(|(_, l)| l),
        model_text,
    })))
}

fn resolve_text(
    text: &str,
    mode: SuffixMode,
    fuzzy: bool,
    models: &[Model],
    pool: &[usize],
    usable: &dyn Fn(&str) -> bool,
) -> Resolution {
    if let Some(r) = select_reference(text, models, pool, fuzzy, usable) {
        return Resolution::status(r);
    }
    if fuzzy {
        if let Some(r) = select_fuzzy(&fuzzy_matches(text, models, pool), models, usable) {
            return Resolution::status(r);
        }
    }
    if mode == SuffixMode::None {
        return Resolution::not_found();
    }
    if let Some((base, level)) = split_thinking_suffix(text) {
        let mut inner = resolve_text(base, mode, fuzzy, models, pool, usable);
        if inner.is_not_found() {
            return inner;
        }
        inner.level = if inner.warning.is_some() {
            None
        } else {
            Some(level)
        };
        return inner;
    }
    if mode == SuffixMode::Strict {
        return Resolution::not_found();
    }
    let Some(colon) = text.rfind(':') else {
        return Resolution::not_found();
    };
    let suffix = &text[colon + 1..];
    let mut inner = resolve_text(&text[..colon], mode, fuzzy, models, pool, usable);
    if inner.is_not_found() {
        return inner;
    }
    inner.level = None;
    inner.warning = Some(format!(
        "Invalid thinking level \"{suffix}\" in pattern \"{text}\". Using default instead."
    ));
    inner
}

fn distinct_providers(models: &[Model], idx: &[usize]) -> usize {
    idx.iter()
        .map(|&i| models[i].provider.as_str())
        .collect::<HashSet<_>>()
        .len()
}

/// pi's `selectReference`: exact ids and `provider/id`.
fn select_reference(
    text: &str,
    models: &[Model],
    pool: &[usize],
    fuzzy: bool,
    usable: &dyn Fn(&str) -> bool,
) -> Option<Status> {
    let lower = text.to_lowercase();
    let raw: Vec<usize> = pool
        .iter()
        .copied()
        .filter(|&i| models[i].id.to_lowercase() == lower)
        .collect();
    let named = split_provider_prefix(text, models, pool).and_then(|(provider, model_text)| {
        let provider_models: Vec<usize> = pool
            .iter()
            .copied()
            .filter(|&i| models[i].provider == provider)
            .collect();
        let lower_model = model_text.to_lowercase();
        provider_models
            .iter()
            .copied()
            .find(|&i| models[i].id.to_lowercase() == lower_model)
            .or_else(|| {
                raw.iter()
                    .copied()
                    .find(|&i| models[i].provider == provider)
            })
            .or_else(|| {
                if fuzzy {
                    best_fuzzy_match(
                        &fuzzy_matches(&model_text, models, &provider_models),
                        models,
                    )
                } else {
                    None
                }
            })
    });
    let others: Vec<usize> = raw.iter().copied().filter(|&i| Some(i) != named).collect();
    let mut candidates: Vec<usize> = named.into_iter().collect();
    candidates.extend(&others);
    if candidates.is_empty() {
        return None;
    }
    if distinct_providers(models, &candidates) == 1 {
        return Some(Status::Resolved(candidates[0]));
    }
    if let Some(n) = named {
        if usable(&models[n].provider) {
            return Some(Status::Resolved(n));
        }
    }
    let usable_others: Vec<usize> = others
        .iter()
        .copied()
        .filter(|&i| usable(&models[i].provider))
        .collect();
    if usable_others.len() == 1 {
        return Some(Status::Resolved(usable_others[0]));
    }
    if usable_others.is_empty() {
        if let Some(n) = named {
            return Some(Status::Resolved(n));
        }
    }
    Some(Status::Ambiguous {
        candidates,
        usable_count: usable_others.len(),
    })
}

fn fuzzy_matches(text: &str, models: &[Model], pool: &[usize]) -> Vec<usize> {
    let lower = text.to_lowercase();
    pool.iter()
        .copied()
        .filter(|&i| {
            models[i].id.to_lowercase().contains(&lower)
                || models[i].name.to_lowercase().contains(&lower)
        })
        .collect()
}

fn select_fuzzy(
    matches: &[usize],
    models: &[Model],
    usable: &dyn Fn(&str) -> bool,
) -> Option<Status> {
    if matches.is_empty() {
        return None;
    }
    let multiple = distinct_providers(models, matches) > 1;
    let usable_matches: Vec<usize> = if multiple {
        matches
            .iter()
            .copied()
            .filter(|&i| usable(&models[i].provider))
            .collect()
    } else {
        Vec::new()
    };
    let pool = if usable_matches.is_empty() {
        matches
    } else {
        &usable_matches[..]
    };
    let best = best_fuzzy_match(pool, models)?;
    let tied: Vec<usize> = pool
        .iter()
        .copied()
        .filter(|&i| models[i].id == models[best].id)
        .collect();
    if distinct_providers(models, &tied) == 1 {
        return Some(Status::Resolved(best));
    }
    Some(Status::Ambiguous {
        usable_count: if usable_matches.is_empty() {
            0
        } else {
            tied.len()
        },
        candidates: tied,
    })
}

/// Prefer aliases (`claude-sonnet-4-5`) over dated versions (`claude-sonnet-4-5-20250929`),
/// then the id that sorts last (the latest); ties keep registry order.
fn best_fuzzy_match(matches: &[usize], models: &[Model]) -> Option<usize> {
    let aliases: Vec<usize> = matches
        .iter()
        .copied()
        .filter(|&i| is_alias(&models[i].id))
        .collect();
    let mut pool = if aliases.is_empty() {
        matches.to_vec()
    } else {
        aliases
    };
    pool.sort_by(|&a, &b| locale_cmp(&models[b].id, &models[a].id));
    pool.first().copied()
}

fn is_alias(id: &str) -> bool {
    if id.ends_with("-latest") {
        return true;
    }
    let b = id.as_bytes();
    let dated =
        b.len() >= 9 && b[b.len() - 9] == b'-' && b[b.len() - 8..].iter().all(u8::is_ascii_digit);
    !dated
}

/// An approximation of JavaScript's `localeCompare` (ICU root collation) for model ids:
/// punctuation before digits before letters, letters compared case-insensitively first
/// (lowercase before uppercase on a tie).
fn locale_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn primary(c: char) -> (u8, u32) {
        const PUNCT: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
        if c.is_whitespace() {
            (0, c as u32)
        } else if let Some(p) = PUNCT.find(c) {
            (1, p as u32)
        } else if c.is_ascii_digit() {
            (3, c as u32)
        } else if c.is_alphabetic() {
            (4, c.to_lowercase().next().unwrap_or(c) as u32)
        } else {
            (2, c as u32)
        }
    }
    let pa: Vec<(u8, u32)> = a.chars().map(primary).collect();
    let pb: Vec<(u8, u32)> = b.chars().map(primary).collect();
    pa.cmp(&pb).then_with(|| {
        // Tertiary: lowercase sorts before uppercase.
        let ta = a.chars().map(|c| c.is_uppercase());
        let tb = b.chars().map(|c| c.is_uppercase());
        ta.cmp(tb)
    })
}

/// Case-insensitive glob in the spirit of minimatch: `*` matches within one path segment
/// (not `/`), `**` matches anything, `?` one character other than `/`, `[…]` a class (with
/// `!`/`^` negation and ranges).
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().flat_map(char::to_lowercase).collect();
    let t: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => {
            if p.get(1) == Some(&'*') {
                let rest = &p[2..];
                (0..=t.len()).any(|k| glob_at(rest, &t[k..]))
            } else {
                let rest = &p[1..];
                let mut k = 0;
                loop {
                    if glob_at(rest, &t[k..]) {
                        return true;
                    }
                    if k == t.len() || t[k] == '/' {
                        return false;
                    }
                    k += 1;
                }
            }
        }
        Some('?') => !t.is_empty() && t[0] != '/' && glob_at(&p[1..], &t[1..]),
        Some('[') => match parse_class(&p[1..]) {
            Some((matcher, consumed)) => {
                !t.is_empty()
                    && t[0] != '/'
                    && matcher(t[0])
                    && glob_at(&p[1 + consumed..], &t[1..])
            }
            None => t.first() == Some(&'[') && glob_at(&p[1..], &t[1..]),
        },
        Some(&c) => t.first() == Some(&c) && glob_at(&p[1..], &t[1..]),
    }
}

/// Parses a class body after `[`; returns a matcher and how many chars (incl. `]`) it used.
#[allow(clippy::type_complexity)]
fn parse_class(p: &[char]) -> Option<(Box<dyn Fn(char) -> bool>, usize)> {
    let mut i = 0;
    let negate = matches!(p.first(), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut ranges: Vec<(char, char)> = Vec::new();
    let start = i;
    while i < p.len() {
        if p[i] == ']' && i > start {
            let f = move |c: char| ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != negate;
            return Some((Box::new(f), i + 1));
        }
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            ranges.push((p[i], p[i + 2]));
            i += 3;
        } else {
            ranges.push((p[i], p[i]));
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::auth::fake_env;
    use crate::llm::thinking::{clamp_level, supported_levels};

    fn registry(models_json: Option<&str>, env: &[(&str, &str)]) -> (ModelRegistry, Vec<String>) {
        let mut diags = Vec::new();
        let auth = AuthStore::empty().with_env(fake_env(env));
        let r = ModelRegistry::from_parts(models_json, auth, &mut diags);
        (r, diags)
    }

    const MOCK: &str = r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:18080","api":"anthropic-messages","apiKey":"test-key",
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
        assert_eq!(r.provider_ids(), vec!["anthropic", "openai", "google"]);
        // Nothing is available without credentials.
        assert!(r.available().is_empty());
        assert_eq!(r.default_model(), None);
    }

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
        assert_eq!(r.provider_ids(), vec!["anthropic", "openai", "google"]);
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
        assert_eq!(r.provider_ids(), vec!["anthropic", "openai", "google"]);

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
        assert_eq!(
            r.provider_ids(),
            vec!["anthropic", "openai", "google", "ok"]
        );
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
    fn pattern_resolution() {
        let (r, _) = registry(Some(MOCK), &[]);
        let id = |p: &str| {
            r.resolve_pattern(p, None)
                .map(|(m, l)| (m.key(), l))
                .map_err(|e| e.to_string())
        };
        assert_eq!(id("mock/mock-model"), Ok(("mock/mock-model".into(), None)));
        assert_eq!(id("mock-model"), Ok(("mock/mock-model".into(), None)));
        assert_eq!(id("MOCK-MODEL"), Ok(("mock/mock-model".into(), None)));
        assert_eq!(
            id("mock-model:high"),
            Ok(("mock/mock-model".into(), Some(ThinkingLevel::High)))
        );
        // Fuzzy on the name.
        assert_eq!(id("Mock Mod"), Ok(("mock/mock-model".into(), None)));
        // Fuzzy: aliases over dated ids, then the latest id.
        assert_eq!(
            id("sonnet:high"),
            Ok((
                "anthropic/claude-sonnet-5-5".into(),
                Some(ThinkingLevel::High)
            ))
        );
        assert_eq!(
            id("sonnet-4-5"),
            Ok(("anthropic/claude-sonnet-4-5".into(), None))
        );
        assert_eq!(
            id("anthropic/claude-sonnet-4-5-20250929"),
            Ok(("anthropic/claude-sonnet-4-5-20250929".into(), None))
        );
        assert_eq!(
            id("openai/gpt-5:low"),
            Ok(("openai/gpt-5".into(), Some(ThinkingLevel::Low)))
        );
        assert_eq!(
            id("nothing-like-this"),
            Err(
                "Model \"nothing-like-this\" not found. Use --list-models to see available models."
                    .into()
            )
        );
        // Strict: an invalid suffix stays part of the id.
        assert!(id("mock-model:bogus").is_err());
        // Provider restriction.
        assert_eq!(
            r.resolve_pattern("model", Some("mock"))
                .map(|(m, _)| m.key()),
            Ok("mock/oai-model".into())
        );
        assert_eq!(
            r.resolve_pattern("gpt-5", Some("nope"))
                .unwrap_err()
                .to_string(),
            "Unknown provider \"nope\". Use --list-models to see available providers/models."
        );
    }

    #[test]
    fn same_id_on_two_providers() {
        let json = r#"{"providers":{
            "a":{"baseUrl":"http://a","api":"openai-completions","models":[{"id":"shared"}]},
            "b":{"baseUrl":"http://b","api":"openai-completions","apiKey":"k","models":[{"id":"shared"}]},
            "c":{"baseUrl":"http://c","api":"openai-completions","models":[{"id":"shared"}]}}}"#;
        let (r, _) = registry(Some(json), &[]);
        // Credentials break the tie.
        assert_eq!(
            r.resolve_pattern("shared", None).map(|(m, _)| m.key()),
            Ok("b/shared".into())
        );
        assert_eq!(
            r.resolve_pattern("a/shared", None).map(|(m, _)| m.key()),
            Ok("a/shared".into())
        );
        let err = r.resolve_cli_model(None, "shared", None, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Model \"shared\" is ambiguous across providers: a/shared, b/shared, c/shared. --api-key does not choose a provider. Use --provider or provider/model."
        );
    }

    #[test]
    fn cli_model_custom_id_fallback() {
        let (r, _) = registry(Some(MOCK), &[]);
        let res = r
            .resolve_cli_model(Some("mock"), "brand-new:high", None, false)
            .unwrap();
        assert_eq!(res.model.id, "brand-new");
        assert_eq!(res.model.name, "brand-new");
        assert_eq!(res.model.provider, "mock");
        assert_eq!(res.model.api, "anthropic-messages");
        assert_eq!(res.thinking_level, Some(ThinkingLevel::High));
        assert_eq!(
            res.warning.as_deref(),
            Some("Model \"brand-new\" not found for provider \"mock\". Using custom model id.")
        );
        let res = r
            .resolve_cli_model(None, "mock/other:xhigh", Some(ThinkingLevel::Low), false)
            .unwrap();
        assert_eq!(res.model.id, "other:xhigh");
        assert_eq!(res.thinking_level, None);
        assert!(res.model.reasoning);
        // resolve_pattern never invents models.
        assert!(r.resolve_pattern("brand-new", Some("mock")).is_err());
        let (empty, _) = {
            let mut diags = Vec::new();
            let mut reg = ModelRegistry::from_parts(
                None,
                AuthStore::empty().with_env(fake_env(&[])),
                &mut diags,
            );
            reg.models.clear();
            (reg, diags)
        };
        assert_eq!(
            empty.resolve_pattern("x", None).unwrap_err(),
            RegistryError::NoModels
        );
    }

    #[test]
    fn scopes() {
        let (r, _) = registry(Some(MOCK), &[("OPENAI_API_KEY", "k")]);
        let pats = |p: &[&str]| {
            let mut w = Vec::new();
            let out = r.resolve_scope_with_warnings(
                &p.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &mut w,
            );
            (
                out.into_iter()
                    .map(|(m, l)| {
                        format!(
                            "{}{}",
                            m.key(),
                            l.map(|l| format!(":{l}")).unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>(),
                w,
            )
        };
        let (out, w) = pats(&["mock/*:low", "gpt-4o", "mock-model"]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            out,
            vec!["mock/mock-model:low", "mock/oai-model:low", "openai/gpt-4o"]
        );
        let (out, _) = pats(&["*-mini"]);
        assert!(out.contains(&"openai/gpt-5-mini".to_string()));
        assert!(out
            .iter()
            .all(|k| k.starts_with("openai/") && k.ends_with("-mini")));
        let (out, w) = pats(&["claude*", "nope", "mock-model:weird"]);
        assert_eq!(
            out,
            vec!["mock/mock-model"],
            "only available models are in scope"
        );
        assert_eq!(
            w,
            vec![
                "Warning: No models match pattern \"claude*\"".to_string(),
                "Warning: No models match pattern \"nope\"".to_string(),
                "Warning: Invalid thinking level \"weird\" in pattern \"mock-model:weird\". Using default instead.".to_string(),
            ]
        );
        assert_eq!(r.resolve_scope(&["GPT-4O:high".to_string()]).len(), 1);
    }

    #[test]
    fn registry_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ModelRegistry>();
    }

    #[test]
    fn globs() {
        assert!(glob_match("anthropic/*", "anthropic/claude-x"));
        assert!(!glob_match("*sonnet*", "anthropic/claude-sonnet-4-5"));
        assert!(glob_match("*sonnet*", "claude-sonnet-4-5"));
        assert!(glob_match("**sonnet*", "anthropic/claude-sonnet-4-5"));
        assert!(glob_match("gpt-?", "GPT-5"));
        assert!(glob_match("gpt-[45]*", "gpt-4o"));
        assert!(!glob_match("gpt-[!45]*", "gpt-4o"));
        assert!(glob_match("o[1-4]", "o3"));
        assert!(glob_match("a[b", "a[b"));
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

    #[test]
    fn locale_order() {
        use std::cmp::Ordering::*;
        assert_eq!(locale_cmp("claude-sonnet-5", "claude-sonnet-5-5"), Less);
        assert_eq!(locale_cmp("gpt-5.2", "gpt-5-mini"), Greater);
        assert_eq!(locale_cmp("a", "B"), Less);
        assert_eq!(locale_cmp("a", "A"), Less);
    }
}
