//! `--model` / `--models` pattern resolution, fuzzy matching and scopes (pi's
//! `model-resolver`).

use super::*;

impl ModelRegistry {
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
        let models = self.pattern_models(provider.as_deref());
        let res = resolve_reference(
            pattern,
            provider.as_deref(),
            SuffixMode::Strict,
            true,
            &models,
            &|p| self.auth.has_credentials(p),
        );
        match res.status {
            Status::Resolved(i) => Ok((models[i].clone(), res.level)),
            Status::Ambiguous {
                candidates,
                usable_count,
            } => Err(self.ambiguous(&models, pattern, &candidates, usable_count, false)),
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
        let models = self.pattern_models(provider.as_deref());
        let usable = |p: &str| !inline_api_key && self.auth.has_credentials(p);
        let res = resolve_reference(
            pattern,
            provider.as_deref(),
            SuffixMode::Strict,
            true,
            &models,
            &usable,
        );
        match res.status {
            Status::Resolved(i) => Ok(ResolvedModel {
                model: models[i].clone(),
                thinking_level: res.level,
                warning: res.warning,
            }),
            Status::Ambiguous {
                candidates,
                usable_count,
            } => Err(self.ambiguous(&models, pattern, &candidates, usable_count, inline_api_key)),
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
                            .find(|&i| models[i].id == d)
                    })
                    .unwrap_or(target.provider_models[0]);
                let mut model = models[base_idx].clone();
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
        if self.slots.iter().all(|s| s.count == 0) {
            return Err(RegistryError::NoModels);
        }
        match provider {
            None => Ok(None),
            Some(p) => self
                .slots
                .iter()
                .find(|s| s.count > 0 && s.config.id.to_lowercase() == p.to_lowercase())
                .map(|s| Some(s.config.id.clone()))
                .ok_or_else(|| RegistryError::UnknownProvider {
                    provider: p.to_string(),
                }),
        }
    }

    /// The models a pattern is matched against: those of `provider` when one is given (pi
    /// restricts the search to it, so the other providers' blocks need not be parsed), else all.
    fn pattern_models(&self, provider: Option<&str>) -> Vec<&Model> {
        match provider {
            Some(p) => self.provider_models(p).iter().collect(),
            None => self.all(),
        }
    }

    fn ambiguous(
        &self,
        models: &[&Model],
        pattern: &str,
        candidates: &[usize],
        usable_count: usize,
        inline_api_key: bool,
    ) -> RegistryError {
        let mut matches: Vec<String> = candidates.iter().map(|&i| models[i].key()).collect();
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
        let available = self.available();
        let models: Vec<&Model> = available.iter().collect();
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
                    add(models[i], level, &mut out);
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
                add(models[i], res.level, &mut out);
            }
        }
        out
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
    pub(super) provider: String,
    /// Models of the target provider, the anchor first.
    provider_models: Vec<usize>,
    model_text: String,
    pub(super) model_id: String,
    pub(super) level: Option<ThinkingLevel>,
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
    pub(super) level: Option<ThinkingLevel>,
    pub(super) warning: Option<String>,
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
fn split_provider_prefix(
    text: &str,
    models: &[&Model],
    pool: &[usize],
) -> Option<(String, String)> {
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
    models: &[&Model],
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
    models: &[&Model],
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

fn distinct_providers(models: &[&Model], idx: &[usize]) -> usize {
    idx.iter()
        .map(|&i| models[i].provider.as_str())
        .collect::<HashSet<_>>()
        .len()
}

/// pi's `selectReference`: exact ids and `provider/id`.
fn select_reference(
    text: &str,
    models: &[&Model],
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

fn fuzzy_matches(text: &str, models: &[&Model], pool: &[usize]) -> Vec<usize> {
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
    models: &[&Model],
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
fn best_fuzzy_match(matches: &[usize], models: &[&Model]) -> Option<usize> {
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
pub(crate) fn locale_cmp(a: &str, b: &str) -> std::cmp::Ordering {
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
    use super::super::tests::{registry, MOCK};
    use super::*;
    use crate::llm::auth::fake_env;

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
        // Fuzzy: aliases over dated ids, then the id that sorts last, whatever its provider.
        assert_eq!(
            id("sonnet:high"),
            Ok((
                "amazon-bedrock/us.anthropic.claude-sonnet-5-5".into(),
                Some(ThinkingLevel::High)
            ))
        );
        assert_eq!(
            id("anthropic/sonnet:high"),
            Ok((
                "anthropic/claude-sonnet-5-5".into(),
                Some(ThinkingLevel::High)
            ))
        );
        // As pi 1.6.0 answers (checked with its `--model sonnet-4-5`): Bedrock's `…-v1:0` id
        // is not a dated one, so it counts as an alias and sorts last.
        assert_eq!(
            id("sonnet-4-5"),
            Ok((
                "amazon-bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0".into(),
                None
            ))
        );
        assert_eq!(
            id("anthropic/sonnet-4-5"),
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
            reg.slots.clear();
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
    fn locale_order() {
        use std::cmp::Ordering::*;
        assert_eq!(locale_cmp("claude-sonnet-5", "claude-sonnet-5-5"), Less);
        assert_eq!(locale_cmp("gpt-5.2", "gpt-5-mini"), Greater);
        assert_eq!(locale_cmp("a", "B"), Less);
        assert_eq!(locale_cmp("a", "A"), Less);
    }
}
