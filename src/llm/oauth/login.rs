//! Login flows (providers-catalog.md §5.6) for `pi-rpc login <provider>`, headless: URLs and
//! device codes are shown as text, and a browser flow accepts the loopback callback or a
//! pasted redirect URL / code, whichever comes first. Each flow returns the auth.json entry pi
//! would store; [`save`] writes it under the lock.
//!
//! Implemented: anthropic, openai-codex, openrouter (authorization code + PKCE, loopback or
//! paste; with `browser: false` anthropic's copy-code flow and openai-codex's device code);
//! openai "Sign in with ChatGPT" (PKCE with a dynamically issued client id); radius (browser
//! through the gateway's discovered authorization endpoint, loopback only, or with
//! `browser: false` a device code); github-copilot, kimi-coding, meta, xai (device code). Not
//! implemented: Copilot's enabling of `unconfigured` models at login (needs pi's Copilot model
//! list).
//!
//! Texts follow pi's `pi auth login` terminal: `Open this URL to sign in:` / `Open <uri> and
//! enter code: <code>`, prompts as `<message> (<placeholder>): `.

use std::path::Path;
use std::time::{Duration, Instant};

use crossbeam_channel::{after, select, Receiver};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Map, Value};

use super::b64;
use super::client::{form_encode, Body, Env};
use super::common::{call, num, oauth_entry, Ctx};
use super::copilot;
use super::lock::{FileLock, LockOptions};
use super::loopback;
use super::refresh::{self, kimi_host, kimi_token, meta_mint, trusted_http_url, xai_credential};
use super::store;

/// How a flow talks to the user: `show` prints instructions (stderr for the CLI), `input`
/// yields the lines the user types (stdin), `None` once it is closed.
pub struct Interaction<'a> {
    pub show: &'a dyn Fn(&str),
    pub input: Receiver<Option<String>>,
    pub env: Env<'a>,
    pub now_ms: &'a dyn Fn() -> u64,
    /// pi's installation id (`deviceId` of the global settings.json, created when missing);
    /// Sign in with ChatGPT sends it.
    pub device_id: &'a dyn Fn() -> Result<String, String>,
    /// Set when the input closed while a flow waited on it (pi: "Login cancelled").
    pub cancelled: std::cell::Cell<bool>,
}

impl Interaction<'_> {
    /// Shows `message` and waits for one line.
    pub fn prompt(&self, message: &str) -> Result<String, String> {
        (self.show)(&format!("{message}: "));
        match self.input.recv() {
            Ok(Some(line)) => Ok(line),
            _ => {
                self.cancelled.set(true);
                Err("Login cancelled".into())
            }
        }
    }

    fn ctx(&self, budget: Duration) -> Ctx<'_> {
        Ctx {
            env: self.env,
            deadline: Instant::now() + budget,
            now_ms: (self.now_ms)(),
        }
    }
}

const REQUEST_BUDGET: Duration = Duration::from_secs(30);

fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| "no system randomness available".to_string())?;
    Ok(buf)
}

/// PKCE: 32 random bytes as the base64url verifier, base64url(SHA-256(verifier)) the
/// challenge.
pub fn pkce() -> Result<(String, String), String> {
    let verifier = b64::encode_url(&random_bytes(32)?);
    let challenge =
        b64::encode_url(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()).as_ref());
    Ok((verifier, challenge))
}

fn random_hex(n: usize) -> Result<String, String> {
    Ok(random_bytes(n)?
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn callback_host(env: Env) -> String {
    env("PI_OAUTH_CALLBACK_HOST")
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "127.0.0.1".into())
}

/// Runs the login of `provider` and returns the entry to store. `browser: false` (pi's
/// `--no-browser`) picks the provider's other method where it has one.
pub fn login(
    provider: &str,
    io: &Interaction,
    browser: bool,
) -> Result<Map<String, Value>, String> {
    match provider {
        "anthropic" if browser => anthropic(io),
        "anthropic" => anthropic_copy_code(io),
        "openai-codex" if browser => openai_codex(io),
        "openai-codex" => openai_codex_device(io),
        "openrouter" => openrouter(io),
        "github-copilot" => github_copilot(io),
        "kimi-coding" => kimi(io),
        "meta" => meta(io),
        "xai" => xai(io),
        "radius" if browser => radius_browser(io),
        "radius" => radius(io),
        "openai" => openai_chatgpt(io),
        other => Err(format!("No OAuth login for provider \"{other}\"")),
    }
}

/// An `api_key` entry from a key typed on stdin.
pub fn api_key_login(provider: &str, io: &Interaction) -> Result<Map<String, Value>, String> {
    let key = io.prompt(&format!("Enter the API key for {provider}"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err("No API key entered".into());
    }
    let mut m = Map::new();
    m.insert("type".into(), Value::from("api_key"));
    m.insert("key".into(), Value::from(key));
    Ok(m)
}

/// Writes (`Some`) or removes (`None`) `provider`'s entry in auth.json under the lock, as pi's
/// `modify`/`delete` do, and returns the entry that was there before. Removing an entry that
/// is not there leaves the file alone.
pub fn save(
    auth_path: &Path,
    provider: &str,
    entry: Option<Map<String, Value>>,
) -> Result<Option<Value>, String> {
    let real = store::ensure_file(auth_path).map_err(|e| e.to_string())?;
    let lock =
        FileLock::acquire(&real, LockOptions::ASYNC, &|| false).map_err(|e| e.to_string())?;
    let mut data = store::read(&real)?;
    let before = match entry {
        Some(e) => data.insert(provider.to_string(), Value::Object(e)),
        None => data.remove(provider),
    };
    // Removing what is not there changes nothing.
    if before.is_some() || data.contains_key(provider) {
        lock.check().map_err(|e| e.to_string())?;
        store::write(&real, &data).map_err(|e| e.to_string())?;
    }
    lock.release();
    Ok(before)
}

// ---------------------------------------------------------------------------------------------
// Authorization code + PKCE

/// What came first: the loopback callback's query or a pasted line.
enum Received {
    Callback(std::collections::HashMap<String, String>),
    Pasted(String),
}

fn wait_callback_or_paste(
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
fn parse_authorization_input(input: &str) -> (Option<String>, Option<String>) {
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
fn browser_code(
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

fn anthropic(io: &Interaction) -> Result<Map<String, Value>, String> {
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
fn anthropic_copy_code(io: &Interaction) -> Result<Map<String, Value>, String> {
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

fn anthropic_exchange(
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

fn openai_codex(io: &Interaction) -> Result<Map<String, Value>, String> {
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

fn codex_exchange(
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

/// OpenAI Codex's device-code login (15 min).
fn openai_codex_device(io: &Interaction) -> Result<Map<String, Value>, String> {
    const BASE: &str = "https://auth.openai.com";
    let body = serde_json::json!({"client_id": refresh::CODEX_CLIENT_ID});
    let resp = call(
        "POST",
        &format!("{BASE}/api/accounts/deviceauth/usercode"),
        &[],
        Body::Json(crate::js::json::js_stringify(&body)),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if resp.status == 404 {
        return Err("OpenAI Codex device code login is not enabled for this server. Use browser login or verify the server URL.".into());
    }
    if !resp.ok() {
        return Err(format!(
            "OpenAI Codex device code request failed with status {}{}",
            resp.status,
            if resp.body.is_empty() {
                String::new()
            } else {
                format!(": {}", resp.body)
            }
        ));
    }
    let json = resp.json_object().unwrap_or_default();
    let interval = match json.get("interval") {
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(v) => v.as_f64(),
        None => None,
    };
    let (Some(device_auth_id), Some(user_code), Some(interval)) = (
        str_of(&json, "device_auth_id"),
        str_of(&json, "user_code"),
        interval.filter(|i| i.is_finite() && *i >= 0.0),
    ) else {
        return Err(format!(
            "Invalid OpenAI Codex device code response: {}",
            crate::js::json::js_stringify(&Value::Object(json.clone()))
        ));
    };
    show_device_code(io, user_code, &format!("{BASE}/codex/device"));
    let poll_body = crate::js::json::js_stringify(
        &serde_json::json!({"device_auth_id": device_auth_id, "user_code": user_code}),
    );
    let (code, verifier) = poll_device(Some(interval), Some(15.0 * 60.0), false, || {
        let resp = call(
            "POST",
            &format!("{BASE}/api/accounts/deviceauth/token"),
            &[],
            Body::Json(poll_body.clone()),
            &io.ctx(REQUEST_BUDGET),
        )
        .map_err(|e| e.message().to_string())?;
        if resp.ok() {
            let j = resp.json_object().unwrap_or_default();
            return Ok(
                match (
                    str_of(&j, "authorization_code"),
                    str_of(&j, "code_verifier"),
                ) {
                    (Some(c), Some(v)) => Poll::Complete((c.to_string(), v.to_string())),
                    _ => Poll::Failed(format!(
                        "Invalid OpenAI Codex device auth token response: {}",
                        crate::js::json::js_stringify(&Value::Object(j.clone()))
                    )),
                },
            );
        }
        if resp.status == 403 || resp.status == 404 {
            return Ok(Poll::Pending);
        }
        let code = serde_json::from_str::<Value>(&resp.body)
            .ok()
            .and_then(|j| {
                let e = j.get("error")?;
                e.get("code")
                    .and_then(Value::as_str)
                    .or_else(|| e.as_str())
                    .map(str::to_string)
            });
        Ok(match code.as_deref() {
            Some("deviceauth_authorization_pending") => Poll::Pending,
            Some("slow_down") => Poll::SlowDown(None),
            _ => Poll::Failed(format!(
                "OpenAI Codex device auth failed with status {}{}",
                resp.status,
                if resp.body.is_empty() {
                    String::new()
                } else {
                    format!(": {}", resp.body)
                }
            )),
        })
    })?;
    codex_exchange(io, &code, &verifier, &format!("{BASE}/deviceauth/callback"))
}

fn openrouter(io: &Interaction) -> Result<Map<String, Value>, String> {
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
        super::client::NetError::Timeout => "OpenRouter OAuth token exchange timed out".into(),
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
fn chatgpt_callback(
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
fn openai_chatgpt(io: &Interaction) -> Result<Map<String, Value>, String> {
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

// ---------------------------------------------------------------------------------------------
// Device authorization (RFC 8628)

/// One poll's answer.
pub enum Poll<T> {
    Complete(T),
    Pending,
    SlowDown(Option<f64>),
    Failed(String),
}

/// pi's `pollOAuthDeviceCodeFlow`: every `interval` s (default 5, at least 1), `slow_down`
/// takes the server's interval or adds 5 s, until `expires_in`.
pub fn poll_device<T>(
    interval_s: Option<f64>,
    expires_in_s: Option<f64>,
    wait_first: bool,
    mut poll: impl FnMut() -> Result<Poll<T>, String>,
) -> Result<T, String> {
    let deadline = expires_in_s.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let min = Duration::from_secs(1);
    let mut interval = Duration::from_secs_f64(interval_s.unwrap_or(5.0).max(0.0)).max(min);
    let mut slow_downs = 0;
    let sleep = |d: Duration| std::thread::sleep(remaining().map_or(d, |r| d.min(r)));
    if wait_first {
        sleep(interval);
    }
    while remaining().is_none_or(|r| !r.is_zero()) {
        match poll()? {
            Poll::Complete(v) => return Ok(v),
            Poll::Failed(m) => return Err(m),
            Poll::Pending => {}
            Poll::SlowDown(server) => {
                slow_downs += 1;
                interval = match server.filter(|s| s.is_finite() && *s > 0.0) {
                    Some(s) => Duration::from_secs_f64(s).max(min),
                    None => interval + Duration::from_secs(5),
                };
            }
        }
        if remaining().is_some_and(|r| r.is_zero()) {
            break;
        }
        sleep(interval);
    }
    Err(if slow_downs > 0 {
        "Device flow timed out after one or more slow_down responses. This is often caused by clock drift in WSL or VM environments. Please sync or restart the VM clock and try again.".into()
    } else {
        "Device flow timed out".into()
    })
}

fn show_device_code(io: &Interaction, user_code: &str, uri: &str) {
    (io.show)(&format!(
        "Open {uri} and enter code: {user_code}\nWaiting for authentication..."
    ));
}

fn positive(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0)
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

fn github_copilot(io: &Interaction) -> Result<Map<String, Value>, String> {
    let input =
        io.prompt("GitHub Enterprise URL/domain (blank for github.com) (company.ghe.com)")?;
    let enterprise = copilot::normalize_domain(&input);
    if !input.trim().is_empty() && enterprise.is_none() {
        return Err("Invalid GitHub Enterprise URL/domain".into());
    }
    let domain = enterprise.clone().unwrap_or_else(|| "github.com".into());
    let headers = [
        ("Accept", "application/json"),
        ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ];
    let status_error =
        |r: &super::client::Response| format!("{} {}: {}", r.status, r.status_text, r.body);
    let resp = call(
        "POST",
        &format!("https://{domain}/login/device/code"),
        &headers,
        Body::Form(&[("client_id", copilot::CLIENT_ID), ("scope", "read:user")]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(status_error(&resp));
    }
    let data = resp.json_object().ok_or("Invalid device code response")?;
    let (Some(device_code), Some(user_code), Some(uri), Some(expires_in)) = (
        data.get("device_code").and_then(Value::as_str),
        data.get("user_code").and_then(Value::as_str),
        data.get("verification_uri").and_then(Value::as_str),
        data.get("expires_in").and_then(Value::as_f64),
    ) else {
        return Err("Invalid device code response fields".into());
    };
    let uri =
        trusted_http_url(Some(uri)).ok_or("Untrusted verification_uri in device code response")?;
    show_device_code(io, user_code, &uri);
    let github_token = poll_device(
        data.get("interval").and_then(Value::as_f64),
        Some(expires_in),
        true,
        || {
            let resp = call(
                "POST",
                &format!("https://{domain}/login/oauth/access_token"),
                &headers,
                Body::Form(&[
                    ("client_id", copilot::CLIENT_ID),
                    ("device_code", device_code),
                    ("grant_type", DEVICE_GRANT),
                ]),
                &io.ctx(REQUEST_BUDGET),
            )
            .map_err(|e| e.message().to_string())?;
            if !resp.ok() {
                return Err(status_error(&resp));
            }
            let raw = resp.json_object().unwrap_or_default();
            if let Some(t) = raw.get("access_token").and_then(Value::as_str) {
                return Ok(Poll::Complete(t.to_string()));
            }
            Ok(match raw.get("error").and_then(Value::as_str) {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(raw.get("interval").and_then(Value::as_f64)),
                Some(error) => Poll::Failed(format!(
                    "Device flow failed: {error}{}",
                    str_of(&raw, "error_description")
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                )),
                None => Poll::Failed("Invalid device token response".into()),
            })
        },
    )?;
    let ctx = io.ctx(REQUEST_BUDGET);
    let mut cred = copilot::exchange(&github_token, enterprise.as_deref(), &ctx)?;
    let access = cred
        .get("access")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let ids = copilot::available_model_ids(&access, enterprise.as_deref(), &ctx)?;
    cred.insert(
        "availableModelIds".into(),
        Value::Array(ids.into_iter().map(Value::from).collect()),
    );
    Ok(cred)
}

fn kimi(io: &Interaction) -> Result<Map<String, Value>, String> {
    let host = kimi_host(io.env);
    let headers = [("Accept", "application/json")];
    let resp = call(
        "POST",
        &format!("{host}/api/oauth/device_authorization"),
        &headers,
        Body::Form(&[("client_id", refresh::KIMI_CLIENT_ID)]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(format!(
            "Kimi Code device authorization failed with status {}{}",
            resp.status,
            if resp.body.is_empty() {
                String::new()
            } else {
                format!(": {}", resp.body)
            }
        ));
    }
    let json = resp.json_object().unwrap_or_default();
    let uri = trusted_http_url(str_of(&json, "verification_uri"));
    let complete = trusted_http_url(str_of(&json, "verification_uri_complete"));
    let (Some(device_code), Some(user_code), Some(_), Some(complete)) = (
        json.get("device_code").and_then(Value::as_str),
        json.get("user_code").and_then(Value::as_str),
        uri,
        complete,
    ) else {
        return Err(format!(
            "Invalid Kimi Code device authorization response: {}",
            crate::js::json::js_stringify(&Value::Object(json.clone()))
        ));
    };
    show_device_code(io, user_code, &complete);
    poll_device(
        Some(positive(&json, "interval").unwrap_or(5.0)),
        Some(positive(&json, "expires_in").unwrap_or(15.0 * 60.0)),
        true,
        || {
            let resp = match call(
                "POST",
                &format!("{host}/api/oauth/token"),
                &headers,
                Body::Form(&[
                    ("client_id", refresh::KIMI_CLIENT_ID),
                    ("device_code", device_code),
                    ("grant_type", DEVICE_GRANT),
                ]),
                &io.ctx(REQUEST_BUDGET),
            ) {
                Ok(r) => r,
                Err(e) => return Err(e.message().to_string()),
            };
            if resp.status >= 500 {
                return Ok(Poll::Failed(format!(
                    "Kimi Code device token request failed with status {}{}",
                    resp.status,
                    if resp.body.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", resp.body)
                    }
                )));
            }
            let json = resp.json_object();
            let j = json.clone().unwrap_or_default();
            if resp.ok() && j.get("access_token").is_some_and(Value::is_string) {
                return Ok(match kimi_token(&json, "poll", (io.now_ms)()) {
                    Ok(e) => Poll::Complete(e),
                    Err(m) => Poll::Failed(m),
                });
            }
            let error = j.get("error").and_then(Value::as_str);
            Ok(match error {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(positive(&j, "interval")),
                Some("expired_token") => Poll::Failed(
                    "Kimi Code device authorization expired. Please restart login.".into(),
                ),
                Some("access_denied") => Poll::Failed("Kimi Code login was denied.".into()),
                _ => Poll::Failed(format!(
                    "Kimi Code device token request failed (status {}){}",
                    resp.status,
                    error
                        .map(|e| format!(
                            ": {e}{}",
                            str_of(&j, "error_description")
                                .map(|d| format!(": {d}"))
                                .unwrap_or_default()
                        ))
                        .unwrap_or_default()
                )),
            })
        },
    )
}

fn meta(io: &Interaction) -> Result<Map<String, Value>, String> {
    const CLIENT_ID: &str = "1031625952748946";
    let headers = [("Accept", "application/json")];
    let resp = call(
        "POST",
        "https://auth.meta.com/oidc/device/authorization/",
        &headers,
        Body::Form(&[("client_id", CLIENT_ID)]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    let json = resp.json_object().unwrap_or_default();
    let detail = |j: &Map<String, Value>| {
        ["error_description", "detail", "message", "error"]
            .iter()
            .find_map(|k| str_of(j, k).map(|v| format!(": {}", v.trim())))
            .unwrap_or_default()
    };
    if !resp.ok() {
        return Err(format!(
            "Meta device authorization failed with status {}{}",
            resp.status,
            detail(&json)
        ));
    }
    let uri = trusted_http_url(str_of(&json, "verification_uri_complete"))
        .or_else(|| trusted_http_url(str_of(&json, "verification_uri")));
    let (Some(device_code), Some(user_code), Some(uri)) = (
        str_of(&json, "device_code"),
        str_of(&json, "user_code"),
        uri,
    ) else {
        return Err(format!(
            "Invalid Meta device authorization response: {}",
            crate::js::json::js_stringify(&Value::Object(json.clone()))
        ));
    };
    show_device_code(io, user_code, &uri);
    let identity = poll_device(
        positive(&json, "interval"),
        positive(&json, "expires_in"),
        true,
        || {
            let resp = call(
                "POST",
                "https://auth.meta.com/oidc/device/token/",
                &headers,
                Body::Form(&[
                    ("grant_type", DEVICE_GRANT),
                    ("device_code", device_code),
                    ("client_id", CLIENT_ID),
                ]),
                &io.ctx(REQUEST_BUDGET),
            )
            .map_err(|e| e.message().to_string())?;
            let j = resp.json_object().unwrap_or_default();
            if resp.ok() {
                if let Some(t) = str_of(&j, "access_token") {
                    return Ok(Poll::Complete(t.to_string()));
                }
            }
            Ok(match j.get("error").and_then(Value::as_str) {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(positive(&j, "interval")),
                Some("access_denied") => Poll::Failed("Meta login was denied.".into()),
                Some("expired_token") => {
                    Poll::Failed("Meta device authorization expired. Please restart login.".into())
                }
                _ => Poll::Failed(format!(
                    "Meta device token request failed with status {}{}",
                    resp.status,
                    detail(&j)
                )),
            })
        },
    )?;
    (io.show)("Enabling Meta Model API access...");
    meta_mint(&identity, &io.ctx(REQUEST_BUDGET))
}

fn xai(io: &Interaction) -> Result<Map<String, Value>, String> {
    let (_, body) = refresh::xai_post(
        "https://auth.x.ai/oauth2/device/code",
        &[
            ("client_id", refresh::XAI_CLIENT_ID),
            (
                "scope",
                "openid profile email offline_access grok-cli:access api:access",
            ),
            ("referrer", "pi"),
        ],
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message("device authorization"))?;
    let required = |k: &str| {
        str_of(&body, k)
            .map(str::to_string)
            .ok_or_else(|| format!("Invalid xAI OAuth response field: {k}"))
    };
    let https = |u: &str| {
        u.to_ascii_lowercase()
            .starts_with("https://")
            .then(|| u.to_string())
            .ok_or_else(|| "Untrusted verification URI in xAI OAuth response".to_string())
    };
    let device_code = required("device_code")?;
    let user_code = required("user_code")?;
    let uri = https(&required("verification_uri")?)?;
    let complete = match str_of(&body, "verification_uri_complete") {
        Some(u) => Some(https(u)?),
        None => None,
    };
    let expires_in =
        positive(&body, "expires_in").ok_or("Invalid xAI OAuth response field: expires_in")?;
    show_device_code(io, &user_code, complete.as_deref().unwrap_or(&uri));
    poll_device(
        positive(&body, "interval"),
        Some(expires_in),
        true,
        || match refresh::xai_post(
            refresh::XAI_TOKEN_URL,
            &[
                ("grant_type", DEVICE_GRANT),
                ("client_id", refresh::XAI_CLIENT_ID),
                ("device_code", &device_code),
            ],
            &io.ctx(REQUEST_BUDGET),
        ) {
            Ok((_, b)) => Ok(match xai_credential(&b, None, (io.now_ms)()) {
                Ok(e) => Poll::Complete(e),
                Err(m) => Poll::Failed(m),
            }),
            Err(refresh::XaiError::Status { status, detail }) => {
                let error = detail.trim_start_matches(": ");
                let code = error.split(": ").next().unwrap_or("");
                Ok(match code {
                    "authorization_pending" => Poll::Pending,
                    "slow_down" => Poll::SlowDown(None),
                    "access_denied" => Poll::Failed("xAI login was denied".into()),
                    "expired_token" => Poll::Failed("xAI device code expired".into()),
                    _ => Poll::Failed(
                        refresh::XaiError::Status { status, detail }
                            .message("device token polling"),
                    ),
                })
            }
            Err(e) => Err(e.message("device token polling")),
        },
    )
}

/// Radius's browser sign-in: the authorization endpoint comes from `<gateway>/v1/oauth`; the
/// callback (127.0.0.1:1456) is the only way back, as in pi.
fn radius_browser(io: &Interaction) -> Result<Map<String, Value>, String> {
    const REDIRECT: &str = "http://127.0.0.1:1456/oauth/callback";
    let gateway = refresh::RADIUS_GATEWAY;
    let resp = call(
        "GET",
        &format!("{gateway}/v1/oauth"),
        &[("accept", "application/json")],
        Body::None,
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    if !resp.ok() {
        return Err(format!(
            "Could not load Radius OAuth config from {gateway}: {} {}",
            resp.status, resp.body
        ));
    }
    let discovery = resp.json_object().unwrap_or_default();
    let endpoint = trusted_http_url(str_of(&discovery, "authorizationEndpoint"))
        .ok_or_else(|| format!("Invalid Radius OAuth config from {gateway}"))?;
    let (verifier, challenge) = pkce()?;
    let state = uuid::Uuid::new_v4().to_string();
    let callback = loopback::start(
        "127.0.0.1",
        1456,
        "/oauth/callback",
        Some(state.clone()),
        "Radius",
    )
    .map_err(|e| e.to_string())?;
    let base = endpoint.split(['?', '#']).next().unwrap_or(&endpoint);
    let url = format!(
        "{base}?{}",
        form_encode(&[
            ("response_type", "code"),
            ("client_id", refresh::RADIUS_CLIENT_ID),
            ("redirect_uri", REDIRECT),
            ("scope", "gateway offline_access"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("handoff", "url"),
            ("state", &state),
        ])
    );
    (io.show)(&format!(
        "Listening for OAuth callback on {REDIRECT}\nOpen this URL to sign in:\n  {url}\nContinue in your browser."
    ));
    let code = crossbeam_channel::select! {
        recv(callback.rx) -> r => match r {
            Ok(Ok(q)) => q.get("code").cloned().unwrap_or_default(),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err("OAuth callback did not complete.".into()),
        },
        recv(after(Duration::from_secs(15 * 60))) -> _ => return Err("Login timed out".into()),
    };
    drop(callback);
    refresh::radius_token(
        gateway,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", refresh::RADIUS_CLIENT_ID),
            ("redirect_uri", REDIRECT),
            ("code", &code),
            ("code_verifier", &verifier),
        ],
        &io.ctx(REQUEST_BUDGET),
    )
}

fn radius(io: &Interaction) -> Result<Map<String, Value>, String> {
    let gateway = refresh::RADIUS_GATEWAY;
    let scope = "gateway offline_access";
    let resp = call(
        "POST",
        &format!("{gateway}/v1/oauth/device"),
        &[("accept", "application/json")],
        Body::Form(&[("client_id", refresh::RADIUS_CLIENT_ID), ("scope", scope)]),
        &io.ctx(REQUEST_BUDGET),
    )
    .map_err(|e| e.message().to_string())?;
    let data = resp.json_object().unwrap_or_default();
    if !resp.ok() {
        let error = str_of(&data, "error");
        let description = str_of(&data, "error_description");
        let detail = match (error, description) {
            (Some(e), Some(d)) => format!("{e}: {d}"),
            (Some(e), None) => e.to_string(),
            (None, Some(d)) => d.to_string(),
            (None, None) => resp.status.to_string(),
        };
        return Err(format!(
            "Radius OAuth device authorization failed: {detail}"
        ));
    }
    let (Some(device_code), Some(user_code), Some(uri), Some(expires_in)) = (
        str_of(&data, "device_code"),
        str_of(&data, "user_code"),
        str_of(&data, "verification_uri"),
        positive(&data, "expires_in"),
    ) else {
        return Err("Radius OAuth device authorization response is missing required fields".into());
    };
    let uri = trusted_http_url(Some(uri))
        .ok_or("Untrusted verification_uri in Radius OAuth device authorization response")?;
    show_device_code(io, user_code, &uri);
    poll_device(
        positive(&data, "interval"),
        Some(expires_in),
        false,
        || match refresh::radius_token(
            gateway,
            &[
                ("grant_type", DEVICE_GRANT),
                ("client_id", refresh::RADIUS_CLIENT_ID),
                ("device_code", device_code),
            ],
            &io.ctx(REQUEST_BUDGET),
        ) {
            Ok(e) => Ok(Poll::Complete(e)),
            Err(m) => {
                let code = m
                    .strip_prefix("Radius OAuth token request failed: ")
                    .map(|d| d.split(": ").next().unwrap_or(""));
                match code {
                    Some("authorization_pending") => Ok(Poll::Pending),
                    Some("slow_down") => Ok(Poll::SlowDown(None)),
                    Some("expired_token") => {
                        Ok(Poll::Failed("Device authorization expired.".into()))
                    }
                    Some("access_denied") => {
                        Ok(Poll::Failed("Device authorization was denied.".into()))
                    }
                    _ => Err(m),
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_pairs() {
        let (v, c) = pkce().unwrap();
        assert_eq!(v.len(), 43);
        assert_eq!(c.len(), 43);
        assert_eq!(
            c,
            b64::encode_url(ring::digest::digest(&ring::digest::SHA256, v.as_bytes()).as_ref())
        );
        // RFC 7636 appendix B.
        assert_eq!(
            b64::encode_url(
                ring::digest::digest(
                    &ring::digest::SHA256,
                    b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
                )
                .as_ref()
            ),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn authorization_inputs() {
        assert_eq!(
            parse_authorization_input("http://localhost:53692/callback?code=c1&state=s1"),
            (Some("c1".into()), Some("s1".into()))
        );
        assert_eq!(
            parse_authorization_input(" c2#s2 "),
            (Some("c2".into()), Some("s2".into()))
        );
        assert_eq!(
            parse_authorization_input("code=c3&state=s3"),
            (Some("c3".into()), Some("s3".into()))
        );
        assert_eq!(parse_authorization_input("c4"), (Some("c4".into()), None));
        assert_eq!(parse_authorization_input("  "), (None, None));
    }

    #[test]
    fn device_polls_follow_the_server() {
        let mut answers = vec![Poll::Pending, Poll::SlowDown(Some(1.0)), Poll::Complete(7)];
        answers.reverse();
        let started = Instant::now();
        let got = poll_device(Some(0.0), Some(60.0), false, || {
            Ok(answers.pop().unwrap_or(Poll::Failed("done".into())))
        })
        .unwrap();
        assert_eq!(got, 7);
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "1 s minimum interval"
        );
        let err = poll_device::<()>(None, Some(0.0), false, || Ok(Poll::Pending)).unwrap_err();
        assert_eq!(err, "Device flow timed out");
    }
}
