//! GitHub Copilot (providers-catalog.md §5.5): the GitHub OAuth token (`refresh`) is exchanged
//! for a short-lived Copilot API token (`access`) whose `proxy-ep` field names the API host;
//! after each exchange the account's usable models are listed (`availableModelIds`).

use serde_json::{Map, Value};

use super::client::{self, Body};
use super::common::{num, oauth_entry, Ctx};
use super::copilot_policy::{
    enable_models, send_with_rate_limit_retry, RetryPolicy, LOGIN_RETRY, NO_RETRY,
};

/// The public client id of GitHub's device flow for Copilot.
pub(crate) const CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";
pub(crate) const HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];
const API_VERSION: &str = "2026-06-01";
const INDIVIDUAL_BASE: &str = "https://api.individual.githubcopilot.com";

/// The host name of a GitHub Enterprise URL or domain (`None` when empty or unparsable).
pub fn normalize_domain(input: &str) -> Option<String> {
    let t = input.trim();
    if t.is_empty() {
        return None;
    }
    let rest = match t.find("://") {
        Some(i) => &t[i + 3..],
        None => t,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if host_port.starts_with('[') {
        host_port.split(']').next().map(|h| format!("{h}]"))?
    } else {
        host_port.split(':').next().unwrap_or("").to_string()
    };
    let host = host.to_ascii_lowercase();
    (!host.is_empty() && !host.contains(char::is_whitespace)).then_some(host)
}

/// The API base URL of a Copilot token: its `proxy-ep` with `proxy.` turned into `api.`;
/// else `https://copilot-api.<enterprise domain>`; else the individual host.
pub fn base_url(token: &str, enterprise_domain: Option<&str>) -> String {
    if let Some(ep) = token
        .split(';')
        .find_map(|part| part.trim().strip_prefix("proxy-ep="))
        .filter(|ep| !ep.is_empty())
    {
        let host = ep
            .strip_prefix("proxy.")
            .map_or_else(|| ep.to_string(), |h| format!("api.{h}"));
        return format!("https://{host}");
    }
    match enterprise_domain {
        Some(d) => format!("https://copilot-api.{d}"),
        None => INDIVIDUAL_BASE.to_string(),
    }
}

/// Exchanges the GitHub token for a Copilot token: the entry's `refresh`, `access`, `expires`
/// (`expires_at` − 5 min) and `enterpriseUrl`.
pub fn exchange(
    github_token: &str,
    domain: Option<&str>,
    ctx: &Ctx,
) -> Result<Map<String, Value>, String> {
    let url = format!(
        "https://api.{}/copilot_internal/v2/token",
        domain.unwrap_or("github.com")
    );
    let bearer = format!("Bearer {github_token}");
    let mut headers = vec![("Accept", "application/json"), ("Authorization", &bearer)];
    headers.extend(HEADERS);
    let resp = client::send(
        "GET",
        &client::endpoint(&url, ctx.env),
        &headers,
        Body::None,
        ctx.deadline,
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(format!(
            "{} {}: {}",
            resp.status, resp.status_text, resp.body
        ));
    }
    let raw = resp.json_object().ok_or("Invalid Copilot token response")?;
    let (Some(token), Some(expires_at)) = (
        raw.get("token").and_then(Value::as_str),
        raw.get("expires_at").and_then(Value::as_f64),
    ) else {
        return Err("Invalid Copilot token response fields".into());
    };
    let mut fields = vec![
        ("refresh", Value::from(github_token)),
        ("access", Value::from(token)),
        ("expires", num(expires_at * 1000.0 - 5.0 * 60_000.0)),
    ];
    if let Some(d) = domain {
        fields.push(("enterpriseUrl", Value::from(d)));
    }
    Ok(oauth_entry(&fields))
}

/// What the account's model list says (pi's `parseGitHubCopilotModelCatalog`).
#[derive(Debug, PartialEq, Eq)]
pub struct AccountModels {
    /// Tool-call capable, picker-enabled and not policy-disabled (on the individual host, when
    /// no model is picker-enabled, those whose policy is `enabled`).
    pub available: Vec<String>,
    /// Models pi ships whose policy is `unconfigured`: a login enables them.
    pub unconfigured: Vec<String>,
}

/// Lists the account's models (`GET <base>/models`); `retry` says how a `429` is retried
/// (twice within 5 s at login, not at all on a refresh).
pub(crate) fn list_models(
    copilot_token: &str,
    domain: Option<&str>,
    ctx: &Ctx,
    retry: RetryPolicy,
    shipped: &[String],
) -> Result<AccountModels, String> {
    let base = base_url(copilot_token, domain);
    let allow_policy_fallback = base == INDIVIDUAL_BASE;
    let bearer = format!("Bearer {copilot_token}");
    let mut headers = vec![("Accept", "application/json"), ("Authorization", &bearer)];
    headers.extend(HEADERS);
    headers.push(("X-GitHub-Api-Version", API_VERSION));
    let resp = send_with_rate_limit_retry(
        &client::endpoint(&format!("{base}/models"), ctx.env),
        &headers,
        None,
        retry,
        ctx.deadline,
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(format!(
            "{} {}: {}",
            resp.status, resp.status_text, resp.body
        ));
    }
    let raw: Value = serde_json::from_str(&resp.body).map_err(|e| e.to_string())?;
    parse_models(&raw, allow_policy_fallback, shipped)
}

/// [`list_models`]' available ids only (what a refresh stores).
pub fn available_model_ids(
    copilot_token: &str,
    domain: Option<&str>,
    ctx: &Ctx,
) -> Result<Vec<String>, String> {
    list_models(copilot_token, domain, ctx, NO_RETRY, &[]).map(|m| m.available)
}

/// The login's model step: list the account's models, enable the `unconfigured` ones pi ships
/// (`shipped`, the built-in catalog's Copilot ids; showing `Enabling models...` first), and
/// return `availableModelIds`: the available ids, then the newly enabled ones not among them.
pub(crate) fn login_model_ids(
    copilot_token: &str,
    domain: Option<&str>,
    ctx: &Ctx,
    shipped: &[String],
    show: &dyn Fn(&str),
) -> Result<Vec<String>, String> {
    let models = list_models(copilot_token, domain, ctx, LOGIN_RETRY, shipped)?;
    let mut ids = models.available;
    if !models.unconfigured.is_empty() {
        show("Enabling models...");
        for id in enable_models(copilot_token, &models.unconfigured, domain, ctx.env) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

struct AccountModel {
    id: String,
    picker: bool,
    policy: Option<String>,
}

/// pi's `parseGitHubCopilotModelCatalog`; `shipped` are the ids of pi's built-in Copilot
/// models (only those are enabled).
fn parse_models(
    raw: &Value,
    allow_policy_fallback: bool,
    shipped: &[String],
) -> Result<AccountModels, String> {
    let data = raw
        .get("data")
        .and_then(Value::as_array)
        .ok_or("Invalid Copilot models response")?;
    let models: Vec<AccountModel> = data
        .iter()
        .filter_map(|item| {
            let id = item.get("id")?.as_str()?;
            let tool_calls = item
                .get("capabilities")
                .and_then(|c| c.get("supports"))
                .and_then(|s| s.get("tool_calls"));
            if tool_calls == Some(&Value::Bool(false)) {
                return None;
            }
            Some(AccountModel {
                id: id.to_string(),
                picker: item.get("model_picker_enabled") == Some(&Value::Bool(true)),
                policy: item
                    .get("policy")
                    .and_then(|p| p.get("state"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect();
    let picker: Vec<String> = models
        .iter()
        .filter(|m| m.picker && m.policy.as_deref() != Some("disabled"))
        .map(|m| m.id.clone())
        .collect();
    let use_fallback = allow_policy_fallback && picker.is_empty();
    let available = if !use_fallback {
        picker
    } else {
        models
            .iter()
            .filter(|m| m.policy.as_deref() == Some("enabled"))
            .map(|m| m.id.clone())
            .collect()
    };
    let policy = models
        .iter()
        .filter(|m| {
            m.policy.as_deref() == Some("unconfigured")
                && shipped.contains(&m.id)
                && (m.picker || use_fallback)
        })
        .map(|m| m.id.clone())
        .collect();
    Ok(AccountModels {
        available,
        unconfigured: policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base_url_from_the_token() {
        assert_eq!(
            base_url(
                "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;x=y",
                None
            ),
            "https://api.individual.githubcopilot.com"
        );
        assert_eq!(
            base_url(
                "tid=1;proxy-ep=proxy.business.githubcopilot.com",
                Some("ghe.io")
            ),
            "https://api.business.githubcopilot.com"
        );
        assert_eq!(
            base_url("tid=1", Some("ghe.io")),
            "https://copilot-api.ghe.io"
        );
        assert_eq!(base_url("opaque", None), INDIVIDUAL_BASE);
    }

    #[test]
    fn domains() {
        assert_eq!(
            normalize_domain(" https://Company.GHE.com/x "),
            Some("company.ghe.com".into())
        );
        assert_eq!(
            normalize_domain("company.ghe.com"),
            Some("company.ghe.com".into())
        );
        assert_eq!(normalize_domain("   "), None);
    }

    #[test]
    fn model_selection() {
        let raw = json!({"data": [
            {"id": "a", "model_picker_enabled": true, "policy": {"state": "enabled"}},
            {"id": "b", "model_picker_enabled": true, "policy": {"state": "disabled"}},
            {"id": "c", "model_picker_enabled": false, "policy": {"state": "enabled"}},
            {"id": "d", "model_picker_enabled": true, "capabilities": {"supports": {"tool_calls": false}}},
            {"id": "e", "model_picker_enabled": true, "policy": {"state": "unconfigured"}},
            {"no": "id"}
        ]});
        let shipped = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let got = parse_models(&raw, true, &shipped(&["a", "e"])).unwrap();
        assert_eq!(got.available, ["a", "e"]);
        assert_eq!(got.unconfigured, ["e"]);
        let not_shipped = parse_models(&raw, true, &shipped(&["a"])).unwrap();
        assert!(
            not_shipped.unconfigured.is_empty(),
            "pi enables only its own models"
        );
        let none_picked = json!({"data": [
            {"id": "a", "policy": {"state": "enabled"}},
            {"id": "b", "policy": {"state": "unconfigured"}}
        ]});
        let both = shipped(&["a", "b"]);
        assert_eq!(
            parse_models(&none_picked, true, &both).unwrap(),
            AccountModels {
                available: vec!["a".to_string()],
                unconfigured: vec!["b".to_string()]
            }
        );
        assert_eq!(
            parse_models(&none_picked, false, &both).unwrap(),
            AccountModels {
                available: vec![],
                unconfigured: vec![]
            }
        );
        assert_eq!(
            parse_models(&json!({}), true, &both).unwrap_err(),
            "Invalid Copilot models response"
        );
    }
}
