//! Validation of one `mcpServers` entry (`mcp.md` §2.3), check for check and message for
//! message as pi does it: pi-mcp's `validateMcpServerConfig` (name, object, `enabled` /
//! `description` / `timeout`, `type`, then the HTTP fields `url` / `headers` / `oauth` or the
//! stdio fields `args` / `env` / `cwd`) followed by pi's own `exposure`, `toolExposure` and
//! `auth` checks (`dist/core/mcp-servers.js`).
//!
//! An entry stays a JSON object here, exposure aliases replaced, because a project override
//! (§2.4) is merged into the validated user entry and the result validated again. A key that
//! is present with `null` counts as set, as JavaScript's `!== undefined` does.

use serde_json::{Map, Value};

use super::url::parse_http;
use crate::js::string::is_js_whitespace;
use crate::js::value::js_entries;

/// The exposures, in the order error messages list them.
pub(super) const EXPOSURES: [&str; 4] = ["codemode", "deferred", "direct", "hidden"];

/// The old exposure name and the one it stands for.
const EXPOSURE_ALIAS: (&str, &str) = ("codemode-deferred", "codemode");

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Which transport a valid entry uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Stdio,
    Http,
}

/// A valid entry: its transport and its fields (unknown ones kept, aliases resolved).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Valid {
    pub kind: Kind,
    pub config: Map<String, Value>,
}

/// pi's `validateMcpServerConfig(name, raw)`: the entry, or the error message (without the
/// file path).
pub(super) fn validate_server(name: &str, raw: &Value) -> Result<Valid, String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"
        ));
    }
    let Some(obj) = raw.as_object() else {
        return Err(format!("server \"{name}\" must be an object"));
    };
    let config = resolve_aliases(obj);
    let field_error = |e: &str| format!("server \"{name}\": {e}");
    check_base_fields(&config).map_err(field_error)?;
    let ty = config.get("type");
    if ty.and_then(Value::as_str) == Some("sse") {
        return Err(field_error(
            "legacy SSE transport is not supported; use the streamable HTTP URL",
        ));
    }
    let type_is = |names: &[&str]| match ty {
        None => true,
        Some(t) => t.as_str().is_some_and(|t| names.contains(&t)),
    };
    let kind = if let (Some(url), true) = (
        config.get("url").and_then(Value::as_str),
        type_is(&["http", "streamable-http"]),
    ) {
        check_http_fields(&config, url).map_err(field_error)?;
        Kind::Http
    } else if config.get("command").is_some_and(Value::is_string) && type_is(&["stdio"]) {
        check_stdio_fields(&config).map_err(field_error)?;
        Kind::Stdio
    } else {
        return Err(format!(
            "server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
        ));
    };
    check_exposures(&config).map_err(|e| field_error(&e))?;
    if kind == Kind::Http {
        let url = config
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        check_auth(config.get("auth"), url).map_err(field_error)?;
    }
    Ok(Valid { kind, config })
}

/// pi's `isMcpServerOverride`: no `command`, `url` or `type` key.
pub(super) fn is_override(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("command") && !entry.contains_key("url") && !entry.contains_key("type")
}

/// A copy with `codemode-deferred` replaced in `exposure` and the `toolExposure` values.
fn resolve_aliases(obj: &Map<String, Value>) -> Map<String, Value> {
    let alias = |v: &Value| match v.as_str() {
        Some(s) if s == EXPOSURE_ALIAS.0 => Value::String(EXPOSURE_ALIAS.1.to_string()),
        _ => v.clone(),
    };
    let mut out = obj.clone();
    if let Some(e) = obj.get("exposure") {
        out.insert("exposure".into(), alias(e));
    }
    if let Some(Value::Object(tools)) = obj.get("toolExposure") {
        let resolved: Map<String, Value> = js_entries(tools)
            .into_iter()
            .map(|(k, v)| (k.clone(), alias(v)))
            .collect();
        out.insert("toolExposure".into(), Value::Object(resolved));
    }
    out
}

fn check_base_fields(c: &Map<String, Value>) -> Result<(), &'static str> {
    if c.get("enabled").is_some_and(|v| !v.is_boolean()) {
        return Err("enabled must be a boolean");
    }
    if c.get("description").is_some_and(|v| !v.is_string()) {
        return Err("description must be a string");
    }
    if c.get("timeout")
        .is_some_and(|v| !v.as_f64().is_some_and(|t| t > 0.0))
    {
        return Err("timeout must be a positive number of seconds");
    }
    Ok(())
}

fn is_string_record(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.values().all(Value::is_string))
}

fn check_http_fields(c: &Map<String, Value>, url: &str) -> Result<(), &'static str> {
    if parse_http(url).is_none() {
        return Err("url must be an http or https URL");
    }
    if c.get("headers").is_some_and(|h| !is_string_record(h)) {
        return Err("headers must map names to strings");
    }
    match c.get("oauth") {
        None => Ok(()),
        Some(oauth) => check_oauth(oauth),
    }
}

fn check_stdio_fields(c: &Map<String, Value>) -> Result<(), &'static str> {
    let args_ok = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    if c.get("args").is_some_and(|v| !args_ok(v)) {
        return Err("args must be an array of strings");
    }
    if c.get("env").is_some_and(|v| !is_string_record(v)) {
        return Err("env must map names to strings");
    }
    if c.get("cwd").is_some_and(|v| !v.is_string()) {
        return Err("cwd must be a string");
    }
    Ok(())
}

/// pi-mcp's `validateOAuth`, with pi's check of the callback a Client ID Metadata Document
/// lists (`isClientMetadataDocumentCallback`).
fn check_oauth(value: &Value) -> Result<(), &'static str> {
    let Some(o) = value.as_object() else {
        return Err("oauth must be an object");
    };
    let not_string = |k: &str| o.get(k).is_some_and(|v| !v.is_string());
    if not_string("clientId") {
        return Err("oauth.clientId must be a string");
    }
    if not_string("clientSecret") {
        return Err("oauth.clientSecret must be a string");
    }
    let port = o.get("callbackPort");
    let port_number = port.and_then(Value::as_f64);
    if port.is_some()
        && !port_number.is_some_and(|p| p.fract() == 0.0 && (1.0..=65535.0).contains(&p))
    {
        return Err("oauth.callbackPort must be a port number");
    }
    if let Some(cb) = o.get("callbackUrl") {
        let loopback = cb.as_str().and_then(parse_http).filter(|u| {
            !u.https
                && LOOPBACK_HOSTS.contains(&u.hostname.as_str())
                && u.search_empty
                && u.hash_empty
        });
        let Some(url) = loopback else {
            return Err("oauth.callbackUrl must be an http URI on localhost, 127.0.0.1, or [::1] without query or fragment");
        };
        if let (Some(url_port), Some(p)) = (url.port, port_number) {
            if f64::from(url_port) != p {
                return Err("oauth.callbackUrl and oauth.callbackPort name different ports");
            }
        }
    }
    if not_string("scope") {
        return Err("oauth.scope must be a string");
    }
    if o.get("clientName").is_some_and(|v| {
        v.as_str()
            .is_none_or(|s| s.trim_matches(is_js_whitespace).is_empty())
    }) {
        return Err("oauth.clientName must be a non-empty string");
    }
    if let Some(reg) = o.get("clientRegistration") {
        match reg.as_str() {
            Some("auto" | "dcr") => {}
            Some("cimd") => {
                if o.contains_key("clientId") || o.contains_key("clientName") {
                    return Err("oauth.clientRegistration \"cimd\" cannot be combined with oauth.clientId or oauth.clientName");
                }
                // Without `callbackUrl` pi uses a URI its metadata documents list.
                let listed = o
                    .get("callbackUrl")
                    .and_then(Value::as_str)
                    .and_then(parse_http)
                    .is_none_or(|u| u.hostname != "[::1]" && u.pathname == "/callback");
                if !listed {
                    return Err("oauth.clientRegistration \"cimd\" requires oauth.callbackUrl on localhost or 127.0.0.1 with path /callback");
                }
            }
            _ => return Err("oauth.clientRegistration must be \"auto\", \"dcr\", or \"cimd\""),
        }
    }
    if let Some(meta) = o.get("authServerMetadataUrl") {
        let ok = meta
            .as_str()
            .and_then(parse_http)
            .is_some_and(|u| u.https || LOOPBACK_HOSTS.contains(&u.hostname.as_str()));
        if !ok {
            return Err("oauth.authServerMetadataUrl must be an https URL, or http on localhost, 127.0.0.1, or [::1]");
        }
    }
    Ok(())
}

/// pi's `checkExposures`, on the alias-resolved entry.
fn check_exposures(c: &Map<String, Value>) -> Result<(), String> {
    let is_exposure = |v: &Value| v.as_str().is_some_and(|s| EXPOSURES.contains(&s));
    let listed = EXPOSURES
        .iter()
        .map(|e| format!("\"{e}\""))
        .collect::<Vec<_>>()
        .join(", ");
    if c.get("exposure").is_some_and(|e| !is_exposure(e)) {
        return Err(format!("exposure must be one of {listed}"));
    }
    if let Some(tools) = c.get("toolExposure") {
        let Some(tools) = tools.as_object() else {
            return Err("toolExposure must map tool names to exposures".into());
        };
        if let Some((tool, _)) = js_entries(tools).into_iter().find(|(_, v)| !is_exposure(v)) {
            return Err(format!("toolExposure \"{tool}\" must be one of {listed}"));
        }
    }
    Ok(())
}

/// pi's `checkAuth` for an HTTP entry: `auth` sends a `/login` provider's token to `url`.
fn check_auth(auth: Option<&Value>, url: &str) -> Result<(), &'static str> {
    let Some(auth) = auth else { return Ok(()) };
    let provider = auth.get("provider").and_then(Value::as_str);
    if !auth.is_object() || provider.is_none_or(str::is_empty) {
        return Err("auth.provider must be a provider name");
    }
    let secure =
        parse_http(url).is_some_and(|u| u.https || LOOPBACK_HOSTS.contains(&u.hostname.as_str()));
    if !secure {
        return Err("auth requires an https URL, or http on localhost, 127.0.0.1, or [::1]");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected messages as pi 1.6.0's `loadMcpConfig` reported them for the same entries.
    #[test]
    fn oauth_validation_messages() {
        let servers: Value = serde_json::from_str(
            r#"{
     "o1": {"url": "https://x", "oauth": []},
     "o2": {"url": "https://x", "oauth": {"clientId": 1}},
     "o3": {"url": "https://x", "oauth": {"clientSecret": null}},
     "o4": {"url": "https://x", "oauth": {"callbackPort": 0}},
     "o5": {"url": "https://x", "oauth": {"callbackPort": 1.5}},
     "o6": {"url": "https://x", "oauth": {"callbackPort": 65536}},
     "o7": {"url": "https://x", "oauth": {"callbackPort": "80"}},
     "o8": {"url": "https://x", "oauth": {"callbackUrl": "https://localhost/callback"}},
     "o9": {"url": "https://x", "oauth": {"callbackUrl": "http://example.com/callback"}},
     "o10": {"url": "https://x", "oauth": {"callbackUrl": "http://localhost/callback?x=1"}},
     "o11": {"url": "https://x", "oauth": {"callbackUrl": "http://localhost/callback#f"}},
     "o12": {"url": "https://x", "oauth": {"callbackUrl": 5}},
     "o13": {"url": "https://x", "oauth": {"callbackUrl": "http://127.0.0.1:3000/callback", "callbackPort": 3001}},
     "o14": {"url": "https://x", "oauth": {"callbackUrl": "http://127.0.0.1/callback", "callbackPort": 3001}},
     "o15": {"url": "https://x", "oauth": {"scope": []}},
     "o16": {"url": "https://x", "oauth": {"clientName": "  \t"}},
     "o17": {"url": "https://x", "oauth": {"clientName": 3}},
     "o18": {"url": "https://x", "oauth": {"clientRegistration": "manual"}},
     "o19": {"url": "https://x", "oauth": {"clientRegistration": "cimd", "clientId": "x"}},
     "o20": {"url": "https://x", "oauth": {"clientRegistration": "cimd", "clientName": "x"}},
     "o21": {"url": "https://x", "oauth": {"clientRegistration": "cimd", "callbackUrl": "http://[::1]/callback"}},
     "o22": {"url": "https://x", "oauth": {"clientRegistration": "cimd", "callbackUrl": "http://localhost:5/cb"}},
     "o23": {"url": "https://x", "oauth": {"authServerMetadataUrl": "http://example.com/.well-known"}},
     "o24": {"url": "https://x", "oauth": {"authServerMetadataUrl": "nope"}},
     "o25": {"url": "https://x", "oauth": {"authServerMetadataUrl": 3}},
     "o26": {"url": "https://x", "oauth": {"clientRegistration": null}},
     "ok1": {"url": "https://x", "oauth": {"clientId": "id", "clientSecret": "$S", "callbackPort": 8080.0, "callbackUrl": "http://localhost:8080/callback", "scope": "a b", "clientName": "n", "clientRegistration": "dcr", "authServerMetadataUrl": "http://[::1]:9/m"}},
     "ok2": {"url": "https://x", "oauth": {"clientRegistration": "cimd", "callbackUrl": "http://127.0.0.1:5/a/../callback"}},
     "ok3": {"url": "https://x", "oauth": {"clientRegistration": "cimd"}},
     "ok4": {"url": "https://x", "oauth": {"callbackUrl": "http://localhost:80/callback", "callbackPort": 3000, "clientRegistration": "auto"}},
     "ok5": {"url": "https://x", "oauth": {"callbackUrl": "http://localhost/callback?", "authServerMetadataUrl": "https://auth.example/"}},
     "ok6": {"url": "https://x", "oauth": {"clientName": " n "}}
    }"#,
        )
        .unwrap();
        let mut errors = Vec::new();
        let mut valid = Vec::new();
        for (name, raw) in js_entries(servers.as_object().unwrap()) {
            match validate_server(name, raw) {
                Ok(v) => valid.push((name.as_str(), v)),
                Err(e) => errors.push(e),
            }
        }
        let cb = "oauth.callbackUrl must be an http URI on localhost, 127.0.0.1, or [::1] without query or fragment";
        let port = "oauth.callbackPort must be a port number";
        let name = "oauth.clientName must be a non-empty string";
        let reg = r#"oauth.clientRegistration must be "auto", "dcr", or "cimd""#;
        let cimd_combo = r#"oauth.clientRegistration "cimd" cannot be combined with oauth.clientId or oauth.clientName"#;
        let cimd_cb = r#"oauth.clientRegistration "cimd" requires oauth.callbackUrl on localhost or 127.0.0.1 with path /callback"#;
        let meta = "oauth.authServerMetadataUrl must be an https URL, or http on localhost, 127.0.0.1, or [::1]";
        let want: Vec<String> = [
            ("o1", "oauth must be an object"),
            ("o2", "oauth.clientId must be a string"),
            ("o3", "oauth.clientSecret must be a string"),
            ("o4", port),
            ("o5", port),
            ("o6", port),
            ("o7", port),
            ("o8", cb),
            ("o9", cb),
            ("o10", cb),
            ("o11", cb),
            ("o12", cb),
            (
                "o13",
                "oauth.callbackUrl and oauth.callbackPort name different ports",
            ),
            ("o15", "oauth.scope must be a string"),
            ("o16", name),
            ("o17", name),
            ("o18", reg),
            ("o19", cimd_combo),
            ("o20", cimd_combo),
            ("o21", cimd_cb),
            ("o22", cimd_cb),
            ("o23", meta),
            ("o24", meta),
            ("o25", meta),
            ("o26", reg),
        ]
        .iter()
        .map(|(s, m)| format!("server \"{s}\": {m}"))
        .collect();
        assert_eq!(errors, want);
        let names: Vec<&str> = valid.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["o14", "ok1", "ok2", "ok3", "ok4", "ok5", "ok6"]);
        assert!(valid.iter().all(|(_, v)| v.kind == Kind::Http));
        // Kept as written (clientSecret unresolved).
        assert_eq!(valid[1].1.config["oauth"]["clientSecret"], "$S");
    }
}
