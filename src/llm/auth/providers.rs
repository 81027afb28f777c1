//! Per-provider credential facts of pi's built-in providers (providers-catalog.md §2.2): the
//! environment variables that hold a key, settings that must be present besides the key, and
//! ambient cloud credentials that make a provider available without any key.
//!
//! Every function takes the lookup to use (`get`: stored `env` values first, then the process
//! environment), so this file knows nothing of where values come from.

use std::path::Path;

/// Environment variables consulted for a provider's key, in priority order (pi-ai
/// `getApiKeyEnvVars`; `ANTHROPIC_AUTH_TOKEN` comes first for anthropic, as in pi).
pub fn env_vars_for(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &[
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_OAUTH_TOKEN",
            "ANTHROPIC_API_KEY",
        ],
        "openai" => &["OPENAI_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "azure" | "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "cloudflare" | "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "amazon-bedrock" => &["AWS_BEARER_TOKEN_BEDROCK"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "meta" => &["META_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// Settings that must be present besides the key for the provider to be usable (they fill the
/// base URL's `{NAME}` placeholders). Looked up in the stored credential's `env` first.
pub fn required_settings(provider: &str) -> &'static [&'static str] {
    match provider {
        "cloudflare-workers-ai" => &["CLOUDFLARE_ACCOUNT_ID"],
        "cloudflare-ai-gateway" => &["CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID"],
        _ => &[],
    }
}

/// Ambient cloud credentials: the provider is available without a key (Bedrock's AWS
/// profile, access keys, container or web-identity credentials; Vertex's Application Default
/// Credentials file with a project and a location; Anthropic's workload identity federation,
/// last in pi's order, whose identity token file is only read at request time).
pub fn ambient_available(provider: &str, get: &dyn Fn(&str) -> Option<String>) -> bool {
    match provider {
        "anthropic" => crate::llm::anthropic::federation::REQUIRED
            .iter()
            .all(|n| get(n).is_some()),
        "amazon-bedrock" => {
            get("AWS_PROFILE").is_some()
                || (get("AWS_ACCESS_KEY_ID").is_some() && get("AWS_SECRET_ACCESS_KEY").is_some())
                || get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
                || get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
                || get("AWS_WEB_IDENTITY_TOKEN_FILE").is_some()
        }
        "google-vertex" => {
            let file = get("GOOGLE_APPLICATION_CREDENTIALS").or_else(|| {
                get("HOME")
                    .map(|h| format!("{h}/.config/gcloud/application_default_credentials.json"))
            });
            file.is_some_and(|f| Path::new(&f).exists())
                && (get("GOOGLE_CLOUD_PROJECT").is_some() || get("GCLOUD_PROJECT").is_some())
                && get("GOOGLE_CLOUD_LOCATION").is_some()
        }
        _ => false,
    }
}

/// Fills `{NAME}` placeholders of a base URL (Cloudflare's account and gateway ids). A
/// placeholder without a value stays as is (the request then fails at the server, as in pi).
pub fn fill_placeholders(base_url: &str, get: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(base_url.len());
    let mut rest = base_url;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        out.push_str(&rest[..open]);
        match get(name).filter(|_| !name.is_empty()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[open..=close]),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n: &str| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn placeholders_are_filled_from_the_lookup() {
        let get = env(&[
            ("CLOUDFLARE_ACCOUNT_ID", "acc"),
            ("CLOUDFLARE_GATEWAY_ID", "gw"),
        ]);
        assert_eq!(
            fill_placeholders(
                "https://gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/compat",
                &get
            ),
            "https://gateway.ai.cloudflare.com/v1/acc/gw/compat"
        );
        assert_eq!(
            fill_placeholders("https://x/{MISSING}/y{", &get),
            "https://x/{MISSING}/y{"
        );
        assert_eq!(fill_placeholders("https://plain", &get), "https://plain");
    }

    #[test]
    fn ambient_credentials() {
        let federation = [
            ("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_1"),
            ("ANTHROPIC_ORGANIZATION_ID", "org"),
            ("ANTHROPIC_IDENTITY_TOKEN_FILE", "/nonexistent/token"),
        ];
        assert!(ambient_available("anthropic", &env(&federation)));
        assert!(!ambient_available("anthropic", &env(&federation[..2])));
        assert!(!ambient_available("amazon-bedrock", &env(&[])));
        assert!(ambient_available(
            "amazon-bedrock",
            &env(&[("AWS_PROFILE", "dev")])
        ));
        assert!(!ambient_available(
            "amazon-bedrock",
            &env(&[("AWS_ACCESS_KEY_ID", "a")])
        ));
        assert!(ambient_available(
            "amazon-bedrock",
            &env(&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")])
        ));
        let dir = std::env::temp_dir().join(format!("pi-rpc-adc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let adc = dir.join("adc.json");
        std::fs::write(&adc, "{}").unwrap();
        let adc = adc.to_string_lossy().to_string();
        let full = [
            ("GOOGLE_APPLICATION_CREDENTIALS", adc.as_str()),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ];
        assert!(ambient_available("google-vertex", &env(&full)));
        assert!(!ambient_available("google-vertex", &env(&full[..2])));
        let missing = [
            ("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json"),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "l"),
        ];
        assert!(!ambient_available("google-vertex", &env(&missing)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
