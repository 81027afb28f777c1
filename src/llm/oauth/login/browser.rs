//! The browser flows: authorization code with PKCE, the loopback callback or a pasted redirect
//! URL / code (anthropic, its copy-code variant, openai-codex, openrouter, "Sign in with
//! ChatGPT"; radius's browser flow is in `radius.rs`).

use std::time::Duration;

use crossbeam_channel::{after, select};
use serde_json::{Map, Value};

use super::super::b64;
use super::super::client::{form_encode, Body};
use super::super::common::{call, num, oauth_entry};
use super::super::loopback;
use super::super::refresh;
use super::{callback_host, pkce, random_bytes, random_hex, Interaction, REQUEST_BUDGET};

/// What came first: the loopback callback's query or a pasted line.
pub(super) enum Received {
    Callback(std::collections::HashMap<String, String>),
    Pasted(String),
}

pub(super) fn wait_callback_or_paste(
    io: &Interaction,
    callback: Option<&loopback::Callback>,
    limit: Duration,
) -> Result<Received, String> {
    let never = crossbeam_channel::never();
    let cb_rx = callback.map_or(&never, |c| &c.rx);
    let timeout = after(limit);
    select! {
        recv(cb_rx) -> r => match r {
            Ok(Ok(q)) => Ok(Received::Callback(q)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("OAuth callback server closed".into()),
        },
        recv(io.input) -> line => match line {
            Ok(Some(l)) => Ok(Received::Pasted(l)),
            _ => {
                io.cancelled.set(true);
                Err("Login cancelled".into())
            }
        },
        recv(timeout) -> _ => Err("Login timed out".into()),
    }
}

/// pi's `parseAuthorizationInput`: a redirect URL, `code#state`, a query, or a bare code.
pub(super) fn parse_authorization_input(input: &str) -> (Option<String>, Option<String>) {
    let v = input.trim();
    if v.is_empty() {
        return (None, None);
    }
    if let Some(i) = v.find("://").filter(|_| !v.contains(char::is_whitespace)) {
        let q = v[i..].split_once('?').map(|(_, q)| q).unwrap_or("");
        let q = q.split('#').next().unwrap_or("");
        let m = loopback::parse_query(q);
        return (m.get("code").cloned(), m.get("state").cloned());
    }
    if let Some((code, state)) = v.split_once('#') {
        return (Some(code.to_string()), Some(state.to_string()));
    }
    if v.contains("code=") {
        let m = loopback::parse_query(v);
        return (m.get("code").cloned(), m.get("state").cloned());
    }
    (Some(v.to_string()), None)
}

/// Runs a browser flow: starts the callback server (`port`, then any port when `fallback`),
/// shows the URL built by `url_for(redirect_uri)`, and returns (code, redirect_uri).
#[allow(clippy::too_many_arguments)]
pub(super) fn browser_code(
    io: &Interaction,
    name: &str,
    port: u16,
    fallback: bool,
    path: &str,
    redirect_host: Option<&str>,
    state: Option<&str>,
    url_for: &dyn Fn(&str) -> String,
    limit: Duration,
) -> Result<(String, String), String> {
    let host = callback_host(io.env);
    let start = |p: u16| loopback::start(&host, p, path, state.map(str::to_string), name);
    let callback = start(port)
        .or_else(|e| if fallback { start(0) } else { Err(e) })
        .ok();
    let rhost = redirect_host.unwrap_or(&host);
    let redirect_uri = format!(
        "http://{rhost}:{}{path}",
        callback.as_ref().map_or(port, |c| c.port)
    );
    (io.show)(&format!(
        "Open this URL to sign in:\n  {}\nComplete login in your browser. If the browser is on another machine, paste the final redirect URL here.\nComplete login in your browser, or paste the authorization code / redirect URL here ({redirect_uri}): ",
        url_for(&redirect_uri)
    ));
    match wait_callback_or_paste(io, callback.as_ref(), limit)? {
        Received::Callback(q) => {
            let code = q.get("code").cloned().unwrap_or_default();
            Ok((code, redirect_uri))
        }
        Received::Pasted(line) => {
            let (code, pasted_state) = parse_authorization_input(&line);
            if let (Some(expected), Some(got)) = (state, pasted_state.as_deref()) {
                if got != expected {
                    return Err("OAuth state mismatch".into());
                }
            }
            match code.filter(|c| !c.is_empty()) {
                Some(c) => Ok((c, redirect_uri)),
                None => Err("Missing authorization code".into()),
            }
        }
    }
}

const ANTHROPIC_AUTHORIZE: &str = "https://claude.ai/oauth/authorize";
const ANTHROPIC_SCOPES: &str = "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload";

pub(super) fn anthropic(io: &Interaction) -> Result<Map<String, Value>, String> {
    let (verifier, challenge) = pkce()?;
    let url_for = |redirect: &str| {
        format!(
            "{ANTHROPIC_AUTHORIZE}?{}",
            form_encode(&[
                ("code", "true"),
                ("client_id", refresh::ANTHROPIC_CLIENT_ID),
                ("response_type", "code"),
                ("redirect_uri", redirect),
                ("scope", ANTHROPIC_SCOPES),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("state", &verifier),
            ])
        )
    };
    let (code, redirect_uri) = browser_code(
        io,
        "Anthropic",
        53692,
        true,
        "/callback",
        Some("localhost"),
        Some(&verifier),
        &url_for,
        Duration::from_secs(15 * 60),
    )?;
    anthropic_exchange(io, &code, &verifier, &verifier, &redirect_uri)
}

const ANTHROPIC_COPY_CODE_REDIRECT: &str = "https://platform.claude.com/oauth/code/callback";

/// Anthropic's "copy code" login: the page after sign-in shows `code#state` to paste.
pub(super) fn anthropic_copy_code(io: &Interaction) -> Result<Map<String, Value>, String> {
    let (verifier, challenge) = pkce()?;
    let url = format!(
        "{ANTHROPIC_AUTHORIZE}?{}",
        form_encode(&[
            ("code", "true"),
            ("client_id", refresh::ANTHROPIC_CLIENT_ID),
            ("response_type", "code"),
            ("redirect_uri", ANTHROPIC_COPY_CODE_REDIRECT),
            ("scope", ANTHROPIC_SCOPES),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", &verifier),
        ])
    );
    (io.show)(&format!(
        "Open this URL to sign in:\n  {url}\nComplete login in your browser, then copy the code Anthropic shows and paste it here."
    ));
    let input = io.prompt("Paste the code Anthropic shows after you sign in (code#state)")?;
    let (code, state) = parse_authorization_input(&input);
    if state.as_deref().is_some_and(|s| s != verifier) {
        return Err("OAuth state mismatch".into());
    }
    let code = code
        .filter(|c| !c.is_empty())
        .ok_or("Missing authorization code")?;
    let state = state.unwrap_or_else(|| verifier.clone());
    anthropic_exchange(io, &code, &state, &verifier, ANTHROPIC_COPY_CODE_REDIRECT)
}

pub(super) fn anthropic_exchange(
    io: &Interaction,
    code: &str,
    state: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<Map<String, Value>, String> {
    (io.show)("Exchanging authorization code for tokens...");
    let url = refresh::ANTHROPIC_TOKEN_URL;
    let body = serde_json::json!({
        "grant_type": "authorization_code",
        "client_id": refresh::ANTHROPIC_CLIENT_ID,
        "code": code,
        "state": state,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    });
    let failed = |details: String| {
        format!("Token exchange request failed. url={url}; redirect_uri={redirect_uri}; response_type=authorization_code; details={details}")
    };
    let resp = call(
        "POST",
        url,
        &[("Accept", "application/json")],
        Body::Json(crate::js::json::js_stringify(&body)),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| failed(e.detail()))?;
    if !resp.ok() {
        return Err(failed(format!(
            "Error: HTTP request failed. status={}; url={url}; body={}",
            resp.status, resp.body
        )));
    }
    let data = resp.json_object().unwrap_or_default();
    let (Some(access), Some(refresh), Some(expires_in)) = (
        data.get("access_token").and_then(Value::as_str),
        data.get("refresh_token").and_then(Value::as_str),
        data.get("expires_in").and_then(Value::as_f64),
    ) else {
        return Err(format!(
            "Token exchange returned invalid JSON. url={url}; body={}",
            resp.body
        ));
    };
    Ok(oauth_entry(&[
        ("refresh", Value::from(refresh)),
        ("access", Value::from(access)),
        (
            "expires",
            num((io.now_ms)() as f64 + expires_in * 1000.0 - 300_000.0),
        ),
    ]))
}

pub(super) fn openai_codex(io: &Interaction) -> Result<Map<String, Value>, String> {
    const REDIRECT: &str = "http://localhost:1455/auth/callback";
    let (verifier, challenge) = pkce()?;
    let state = random_hex(16)?;
    let url = format!(
        "https://auth.openai.com/oauth/authorize?{}",
        form_encode(&[
            ("response_type", "code"),
            ("client_id", refresh::CODEX_CLIENT_ID),
            ("redirect_uri", REDIRECT),
            ("scope", "openid profile email offline_access"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("id_token_add_organizations", "true"),
            ("codex_cli_simplified_flow", "true"),
            ("originator", "pi"),
        ])
    );
    let (code, _) = browser_code(
        io,
        "OpenAI",
        1455,
        false,
        "/auth/callback",
        Some("localhost"),
        Some(&state),
        &|_| url.clone(),
        Duration::from_secs(15 * 60),
    )?;
    codex_exchange(io, &code, &verifier, REDIRECT)
}

pub(super) fn codex_exchange(
    io: &Interaction,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<Map<String, Value>, String> {
    (io.show)("Exchanging authorization code for tokens...");
    let resp = call(
        "POST",
        refresh::CODEX_TOKEN_URL,
        &[],
        Body::Form(&[
            ("grant_type", "authorization_code"),
            ("client_id", refresh::CODEX_CLIENT_ID),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", redirect_uri),
        ]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    refresh::codex_credential(&resp, "exchange", (io.now_ms)())
}

pub(super) fn openrouter(io: &Interaction) -> Result<Map<String, Value>, String> {
    let (verifier, challenge) = pkce()?;
    let path = format!("/oauth/callback/{}", uuid::Uuid::new_v4());
    let url_for = |redirect: &str| {
        format!(
            "https://openrouter.ai/auth?{}",
            form_encode(&[
                ("callback_url", redirect),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ])
        )
    };
    let (code, _) = browser_code(
        io,
        "OpenRouter",
        0,
        false,
        &path,
        None,
        None,
        &url_for,
        Duration::from_secs(5 * 60),
    )?;
    (io.show)("Exchanging authorization code for an API key...");
    let body = serde_json::json!({"code": code, "code_verifier": verifier, "code_challenge_method": "S256"});
    let resp = call(
        "POST",
        "https://openrouter.ai/api/v1/auth/keys",
        &[("accept", "application/json")],
        Body::Json(crate::js::json::js_stringify(&body)),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| match e {
        super::super::client::NetError::Timeout => {
            "OpenRouter OAuth token exchange timed out".into()
        }
        other => other.message().to_string(),
    })?;
    let body = resp.json_object();
    if body.is_none() && resp.ok() {
        return Err("OpenRouter OAuth returned invalid JSON".into());
    }
    let body = body.unwrap_or_default();
    if !resp.ok() {
        let detail = ["error_description", "message", "error"]
            .iter()
            .find_map(|k| body.get(*k).and_then(Value::as_str).map(str::to_string))
            .or_else(|| {
                body.get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        return Err(format!(
            "OpenRouter OAuth key exchange failed (HTTP {}){}",
            resp.status,
            detail.map(|d| format!(": {d}")).unwrap_or_default()
        ));
    }
    let Some(key) = body
        .get("key")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
    else {
        return Err("OpenRouter OAuth response carries no \"key\"".into());
    };
    Ok(oauth_entry(&[
        ("access", Value::from(key)),
        ("refresh", Value::from("")),
        ("expires", Value::from(9_007_199_254_740_991u64)),
    ]))
}

const CHATGPT_REDIRECT: &str = "http://127.0.0.1:1455/auth/callback";

/// pi's `authorizationResultFromCallback`: the code and the issued client id.
pub(super) fn chatgpt_callback(
    q: &std::collections::HashMap<String, String>,
    state: &str,
) -> Result<(String, String), String> {
    let code = q
        .get("code")
        .filter(|c| !c.is_empty())
        .ok_or("Missing authorization code")?;
    match q.get("state").filter(|s| !s.is_empty()) {
        None => return Err("Missing OAuth state".into()),
        Some(s) if s != state => return Err("OAuth state mismatch".into()),
        Some(_) => {}
    }
    let client_id = q
        .get("client_id")
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .ok_or("OpenAI OAuth registration callback did not contain an issued client ID")?;
    Ok((code.clone(), client_id.to_string()))
}

/// Sign in with ChatGPT (`openai`): the authorize request registers a client for this
/// installation; the callback carries its id, which is stored for refreshes.
pub(super) fn openai_chatgpt(io: &Interaction) -> Result<Map<String, Value>, String> {
    let device = (io.device_id)()?;
    if uuid::Uuid::parse_str(&device).is_err() || device.len() != 36 {
        return Err(
            "Sign in with ChatGPT requires a device ID (UUID) for this installation".into(),
        );
    }
    let host_id = format!("urn:uuid:{}", device.to_ascii_lowercase());
    let (verifier, challenge) = pkce()?;
    let state = b64::encode_url(&random_bytes(32)?);
    let nonce = b64::encode_url(&random_bytes(32)?);
    let callback = loopback::start(
        &callback_host(io.env),
        1455,
        "/auth/callback",
        None,
        "ChatGPT",
    )
    .map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            "Port 1455 is in use, probably by an unfinished login in another pi session or by the Codex CLI. Cancel that login and try again.".to_string()
        } else {
            e.to_string()
        }
    })?;
    let url = format!(
        "https://auth.openai.com/api/accounts/authorize?{}",
        form_encode(&[
            ("client_id", "dynamic_agent_client"),
            ("agent_name_hint", "Pi"),
            ("ext_agent_host_id", &host_id),
            ("response_type", "code"),
            ("redirect_uri", CHATGPT_REDIRECT),
            ("resource", refresh::CHATGPT_RESOURCE),
            (
                "scope",
                "openid profile email offline_access resource.invoke chatgpt.tokens.use.direct",
            ),
            ("state", &state),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("nonce", &nonce),
        ])
    );
    (io.show)(&format!(
        "Open this URL to sign in:\n  {url}\nComplete sign-in in your browser. If the callback does not complete, paste the final redirect URL here.\nComplete login in your browser, or paste the final redirect URL here ({CHATGPT_REDIRECT}): "
    ));
    let (code, client_id) =
        match wait_callback_or_paste(io, Some(&callback), Duration::from_secs(15 * 60))? {
            Received::Callback(q) => chatgpt_callback(&q, &state)?,
            Received::Pasted(line) => {
                let line = line.trim();
                let (base, query) = line.split_once('?').unwrap_or((line, ""));
                if base != CHATGPT_REDIRECT {
                    return Err(if line.contains("://") {
                        format!("The pasted callback URL must start with {CHATGPT_REDIRECT}")
                    } else {
                        "Paste the full callback URL from the browser".into()
                    });
                }
                let q = loopback::parse_query(query.split('#').next().unwrap_or(""));
                if let Some(error) = q.get("error") {
                    return Err(format!("ChatGPT authorization failed: {error}"));
                }
                chatgpt_callback(&q, &state)?
            }
        };
    drop(callback);
    (io.show)("Exchanging authorization code for tokens...");
    refresh::chatgpt_token(
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", &code),
            ("code_verifier", &verifier),
            ("redirect_uri", CHATGPT_REDIRECT),
            ("resource", refresh::CHATGPT_RESOURCE),
        ],
        &client_id,
        true,
        &io.ctx(REQUEST_BUDGET),
    )
}
