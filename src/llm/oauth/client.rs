//! Blocking HTTP for OAuth token endpoints: one request with a hard deadline (the refresh's
//! 15 s budget), status and body returned as they are.
//!
//! **Test override.** `PI_RPC_OAUTH_ORIGIN=http://127.0.0.1:<port>` sends every OAuth request
//! (token, key mint, Copilot token and model list, login endpoints, and Google's token endpoint
//! for Vertex's Application Default Credentials) to that origin instead of
//! the provider's, keeping the path and query. Only loopback `http` origins are accepted
//! (`127.0.0.1`, `[::1]`, `localhost`); any other value is ignored, so the variable cannot
//! send tokens off the machine. Production runs leave it unset and talk to the real hosts.

use std::time::{Duration, Instant};

use ureq::Agent;

/// The environment variable of the test override (see the module docs).
pub const ORIGIN_OVERRIDE_VAR: &str = "PI_RPC_OAUTH_ORIGIN";

/// Looks up environment variables (the auth store's lookup, so tests can inject one).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The override origin, when set to a loopback http origin.
fn override_origin(env: Env) -> Option<String> {
    let v = env(ORIGIN_OVERRIDE_VAR)?;
    let v = v.trim_end_matches('/');
    let host_port = v.strip_prefix("http://")?;
    let host = if let Some(rest) = host_port.strip_prefix('[') {
        rest.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    matches!(host, "127.0.0.1" | "::1" | "localhost").then(|| v.to_string())
}

/// `url` with its origin replaced by the test override, when one is set.
pub fn endpoint(url: &str, env: Env) -> String {
    let Some(origin) = override_origin(env) else {
        return url.to_string();
    };
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    let path_start = url[after_scheme..]
        .find('/')
        .map(|i| after_scheme + i)
        .unwrap_or(url.len());
    format!("{origin}{}", &url[path_start..])
}

/// A request body.
pub enum Body<'a> {
    None,
    /// `application/x-www-form-urlencoded` fields.
    Form(&'a [(&'a str, &'a str)]),
    /// A JSON text (sent as is).
    Json(String),
}

/// A response: status, reason phrase and body text.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub status_text: String,
    pub body: String,
    /// The `retry-after` header, when present (Copilot's rate-limit retries read it).
    pub retry_after: Option<String>,
}

impl Response {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `<what> failed with status <n>`, then `: <body>` when the body is not empty.
    pub fn failure(&self, what: &str) -> String {
        if self.body.is_empty() {
            format!("{what} failed with status {}", self.status)
        } else {
            format!("{what} failed with status {}: {}", self.status, self.body)
        }
    }

    /// The body as a JSON object, when it is one.
    pub fn json_object(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match serde_json::from_str(&self.body) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        }
    }
}

/// Why no response arrived.
#[derive(Debug)]
pub enum NetError {
    /// The deadline passed (`AbortSignal.timeout`'s message in pi).
    Timeout,
    /// Connect/TLS/read failure (`fetch failed` in pi); the detail is ureq's text.
    Failed(String),
}

impl NetError {
    /// The message pi's `fetch` would have thrown.
    pub fn message(&self) -> &'static str {
        match self {
            NetError::Timeout => "The operation was aborted due to timeout",
            NetError::Failed(_) => "fetch failed",
        }
    }

    /// [`NetError::message`] with the underlying cause, for texts that show causes.
    pub fn detail(&self) -> String {
        match self {
            NetError::Timeout => format!("TimeoutError: {}", self.message()),
            NetError::Failed(cause) => format!("TypeError: fetch failed; cause={cause}"),
        }
    }
}

/// Percent-encodes a form (`URLSearchParams.toString()`: spaces as `+`).
pub fn form_encode(fields: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Sends one request; `url` must already be the final endpoint ([`endpoint`]).
pub fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Body,
    deadline: Instant,
) -> Result<Response, NetError> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(NetError::Timeout);
    }
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(crate::llm::http::user_agent())
        .timeout_global(Some(remaining))
        .build();
    let agent = Agent::new_with_config(config);
    let result = match method {
        "GET" => {
            let mut b = agent.get(url);
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            b.call()
        }
        _ => {
            let mut b = agent.post(url);
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            match body {
                Body::None => b.send_empty(),
                Body::Form(fields) => b
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .send(form_encode(fields).as_bytes()),
                Body::Json(text) => b
                    .header("Content-Type", "application/json")
                    .send(text.as_bytes()),
            }
        }
    };
    let map = |e: ureq::Error| match e {
        ureq::Error::Timeout(_) => NetError::Timeout,
        other => NetError::Failed(other.to_string()),
    };
    let mut resp = result.map_err(map)?;
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = resp
        .body_mut()
        .with_config()
        .limit(16 * 1024 * 1024)
        .read_to_string()
        .map_err(map)?;
    Ok(Response {
        status: status.as_u16(),
        status_text: status.canonical_reason().unwrap_or("").to_string(),
        body,
        retry_after,
    })
}

/// Sleeps until `d` has passed or the deadline comes; false when the deadline cut it short.
pub fn sleep_within(d: Duration, deadline: Instant) -> bool {
    let remaining = deadline.saturating_duration_since(Instant::now());
    std::thread::sleep(d.min(remaining));
    d <= remaining
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_replaces_only_loopback_origins() {
        let env =
            |v: &'static str| move |n: &str| (n == ORIGIN_OVERRIDE_VAR).then(|| v.to_string());
        let url = "https://auth.x.ai/oauth2/token?a=b";
        assert_eq!(
            endpoint(url, &env("http://127.0.0.1:4000/")),
            "http://127.0.0.1:4000/oauth2/token?a=b"
        );
        assert_eq!(
            endpoint("https://api.github.com", &env("http://localhost:1")),
            "http://localhost:1"
        );
        assert_eq!(
            endpoint(url, &env("http://[::1]:9")),
            "http://[::1]:9/oauth2/token?a=b"
        );
        assert_eq!(endpoint(url, &env("http://evil.example:80")), url);
        assert_eq!(endpoint(url, &env("https://127.0.0.1:1")), url);
        assert_eq!(endpoint(url, &|_: &str| None), url);
    }

    #[test]
    fn forms_encode_like_url_search_params() {
        assert_eq!(
            form_encode(&[("a b", "x/y+z=~"), ("scope", "openid profile")]),
            "a+b=x%2Fy%2Bz%3D%7E&scope=openid+profile"
        );
    }
}
