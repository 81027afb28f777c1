//! Where an Azure request goes (pi's `azure-openai-config.js`): the base URL, the API version
//! and the deployment name, from the provider settings the request carries
//! (`StreamOptions::env`) and the model.

use super::*;

/// The provider settings this API reads at request time (resolved by the registry into
/// `StreamOptions::env`).
pub const SETTINGS: &[&str] = &[
    "AZURE_OPENAI_BASE_URL",
    "AZURE_OPENAI_RESOURCE_NAME",
    "AZURE_OPENAI_API_VERSION",
    "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
];

/// pi's `DEFAULT_AZURE_API_VERSION`.
const DEFAULT_API_VERSION: &str = "v1";

/// Hosts whose bare (or `/openai`, `/openai/v1/responses`) path becomes `/openai/v1`.
const AZURE_HOST_SUFFIXES: &[&str] = &[
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".ai.azure.com",
];

/// The deployment name sent as the body's `model`: the model's entry in
/// `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment,…`), else the model id.
pub fn deployment_name(model: &Model, opts: &StreamOptions) -> String {
    let map = opts
        .env_value("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
        .unwrap_or("");
    let mut found = None;
    for entry in map.split(',') {
        let entry = entry.trim();
        let mut parts = entry.splitn(2, '=');
        let (Some(id), Some(deployment)) = (parts.next(), parts.next()) else {
            continue;
        };
        // JavaScript's `split("=", 2)` drops what follows a second `=`.
        let deployment = deployment.split('=').next().unwrap_or("");
        if id.is_empty() || deployment.is_empty() {
            continue;
        }
        if id.trim() == model.id {
            // A later entry for the same model wins (a `Map` keyed by model id).
            found = Some(deployment.trim().to_owned());
        }
    }
    found
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| model.id.clone())
}

/// The base URL: `AZURE_OPENAI_BASE_URL`, else
/// `https://<AZURE_OPENAI_RESOURCE_NAME>.openai.azure.com/openai/v1`, else the model's baseUrl;
/// normalized (pi's `normalizeAzureBaseUrl`). `Err` is pi's error text.
pub fn base_url(model: &Model, opts: &StreamOptions) -> Result<String, String> {
    let configured = opts
        .env_value("AZURE_OPENAI_BASE_URL")
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let resolved = match configured {
        Some(url) => url.to_owned(),
        None => match opts.env_value("AZURE_OPENAI_RESOURCE_NAME") {
            Some(name) => format!("https://{name}.openai.azure.com/openai/v1"),
            None if !model.base_url.is_empty() => model.base_url.clone(),
            None => {
                return Err(
                    "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
                            AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, \
                            or model.baseUrl."
                        .into(),
                )
            }
        },
    };
    normalize_base_url(&resolved)
}

/// pi's `normalizeAzureBaseUrl`: trailing slashes trimmed, the URL parsed (scheme and host
/// lower-cased), an Azure host's bare path replaced by `/openai/v1` (its query dropped).
fn normalize_base_url(raw: &str) -> Result<String, String> {
    let invalid = || format!("Invalid Azure OpenAI base URL: {raw}");
    let trimmed = raw.trim().trim_end_matches('/');
    let (scheme, rest) = trimmed.split_once("://").ok_or_else(invalid)?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return Err(invalid());
    }
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(host_end);
    if authority.is_empty() || authority.contains(char::is_whitespace) {
        return Err(invalid());
    }
    let (before_hash, hash) = match tail.find('#') {
        Some(i) => tail.split_at(i),
        None => (tail, ""),
    };
    let (path, query) = match before_hash.find('?') {
        Some(i) => before_hash.split_at(i),
        None => (before_hash, ""),
    };
    let authority = authority.to_ascii_lowercase();
    let host = authority
        .rsplit('@')
        .next()
        .unwrap_or("")
        .split(':')
        .next()
        .unwrap_or("");
    let azure = AZURE_HOST_SUFFIXES.iter().any(|s| host.ends_with(s));
    let bare = matches!(
        path.trim_end_matches('/'),
        "" | "/openai" | "/openai/v1/responses"
    );
    let (path, query) = if azure && bare {
        ("/openai/v1", "")
    } else if path.is_empty() {
        ("/", query)
    } else {
        (path, query)
    };
    let url = format!(
        "{}://{authority}{path}{query}{hash}",
        scheme.to_ascii_lowercase()
    );
    Ok(url.trim_end_matches('/').to_owned())
}

/// The endpoint: `<base>/responses?api-version=<AZURE_OPENAI_API_VERSION or v1>` (the SDK
/// replaces any query of the joined URL with its own).
pub fn endpoint(base: &str, opts: &StreamOptions) -> String {
    let version = opts
        .env_value("AZURE_OPENAI_API_VERSION")
        .unwrap_or(DEFAULT_API_VERSION);
    let joined = format!("{base}/responses");
    let cut = joined.find(['?', '#']).unwrap_or(joined.len());
    format!(
        "{}?api-version={}",
        &joined[..cut],
        encode_uri_component(version)
    )
}

/// JavaScript's `encodeURIComponent`.
fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(env: &[(&str, &str)]) -> StreamOptions {
        StreamOptions {
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..StreamOptions::default()
        }
    }

    fn model(base: &str) -> Model {
        Model {
            id: "gpt-5.4".into(),
            base_url: base.into(),
            ..Model::default()
        }
    }

    #[test]
    fn base_url_resolution_order() {
        let m = model("http://127.0.0.1:9/openai/v1/");
        assert_eq!(
            base_url(&m, &opts(&[])).as_deref(),
            Ok("http://127.0.0.1:9/openai/v1")
        );
        assert_eq!(
            base_url(&m, &opts(&[("AZURE_OPENAI_RESOURCE_NAME", "res")])).as_deref(),
            Ok("https://res.openai.azure.com/openai/v1")
        );
        assert_eq!(
            base_url(
                &m,
                &opts(&[
                    ("AZURE_OPENAI_RESOURCE_NAME", "res"),
                    (
                        "AZURE_OPENAI_BASE_URL",
                        " https://X.cognitiveservices.azure.com// "
                    )
                ])
            )
            .as_deref(),
            Ok("https://x.cognitiveservices.azure.com/openai/v1")
        );
        assert_eq!(
            base_url(&model(""), &opts(&[])).unwrap_err(),
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
             AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or model.baseUrl."
        );
        assert_eq!(
            base_url(&model("not a url"), &opts(&[])).unwrap_err(),
            "Invalid Azure OpenAI base URL: not a url"
        );
    }

    #[test]
    fn azure_hosts_get_the_v1_path() {
        for (input, want) in [
            (
                "https://r.openai.azure.com",
                "https://r.openai.azure.com/openai/v1",
            ),
            (
                "https://r.openai.azure.com/openai",
                "https://r.openai.azure.com/openai/v1",
            ),
            (
                "https://r.services.ai.azure.com/openai/v1/responses?api-version=x",
                "https://r.services.ai.azure.com/openai/v1",
            ),
            (
                "https://r.openai.azure.com/custom/",
                "https://r.openai.azure.com/custom",
            ),
            ("https://proxy.example.com", "https://proxy.example.com"),
            (
                "HTTPS://Proxy.Example.com/A/",
                "https://proxy.example.com/A",
            ),
        ] {
            assert_eq!(normalize_base_url(input).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn endpoint_and_version() {
        assert_eq!(
            endpoint("http://h/openai/v1", &opts(&[])),
            "http://h/openai/v1/responses?api-version=v1"
        );
        assert_eq!(
            endpoint(
                "http://h/openai/v1",
                &opts(&[("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")])
            ),
            "http://h/openai/v1/responses?api-version=2025-04-01-preview"
        );
        // Checked against pi: `AZURE_OPENAI_API_VERSION="2025 x"` goes out as `2025%20x`.
        assert_eq!(
            endpoint(
                "http://h/v1",
                &opts(&[("AZURE_OPENAI_API_VERSION", "2025 x")])
            ),
            "http://h/v1/responses?api-version=2025%20x"
        );
    }

    #[test]
    fn deployment_names() {
        let m = model("");
        assert_eq!(deployment_name(&m, &opts(&[])), "gpt-5.4");
        let map = "gpt-4o=dep-a, gpt-5.4=dep-b=ignored ,bad, =x,gpt-5.4=";
        assert_eq!(
            deployment_name(&m, &opts(&[("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", map)])),
            "dep-b"
        );
    }
}
