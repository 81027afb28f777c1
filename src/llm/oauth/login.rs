//! Login flows (providers-catalog.md §5.6) for `pi-rpc login <provider>`, headless: URLs and
//! device codes are shown as text, and a browser flow accepts the loopback callback or a
//! pasted redirect URL / code, whichever comes first. Each flow returns the auth.json entry pi
//! would store; [`save`] writes it under the lock.
//!
//! Implemented: anthropic, openai-codex, openrouter (authorization code + PKCE, loopback or
//! paste; with `browser: false` anthropic's copy-code flow and openai-codex's device code);
//! openai "Sign in with ChatGPT" (PKCE with a dynamically issued client id); radius (browser
//! through the gateway's discovered authorization endpoint, loopback only, or with
//! `browser: false` a device code); github-copilot (device code, then the token exchange and
//! the enabling of `unconfigured` models, `copilot_policy.rs`), kimi-coding, meta, xai (device
//! code).
//!
//! The browser flows are in `login/browser.rs`, the device-code flows in `login/device.rs`;
//! this file has the entry points and what both use.
//!
//! Texts follow pi's `pi auth login` terminal: `Open this URL to sign in:` / `Open <uri> and
//! enter code: <code>`, prompts as `<message> (<placeholder>): `.

use std::path::Path;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Map, Value};

use super::b64;
use super::client::Env;
use super::common::Ctx;
use super::lock::{FileLock, LockOptions};
use super::store;

mod browser;
mod device;
mod radius;

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
    /// The ids of a provider's built-in models (the registry's catalog; Copilot's login
    /// enables only models pi ships).
    pub builtin_model_ids: &'a dyn Fn(&str) -> Vec<String>,
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
        "anthropic" if browser => browser::anthropic(io),
        "anthropic" => browser::anthropic_copy_code(io),
        "openai-codex" if browser => browser::openai_codex(io),
        "openai-codex" => device::openai_codex_device(io),
        "openrouter" => browser::openrouter(io),
        "github-copilot" => device::github_copilot(io),
        "kimi-coding" => device::kimi(io),
        "meta" => device::meta(io),
        "xai" => device::xai(io),
        "radius" => radius_login(io, super::radius::DEFAULT_GATEWAY, "Radius", browser),
        "openai" => browser::openai_chatgpt(io),
        other => Err(format!("No OAuth login for provider \"{other}\"")),
    }
}

/// Signs in to the Radius gateway `gateway` (the built-in `radius` provider's, or one a
/// models.json provider declares with `"oauth": "radius"`); `name` is the provider's name.
pub fn radius_login(
    io: &Interaction,
    gateway: &str,
    name: &str,
    browser: bool,
) -> Result<Map<String, Value>, String> {
    if browser {
        radius::browser(io, gateway, name)
    } else {
        radius::device(io, gateway)
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

fn positive(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0)
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::browser::*;
    use super::device::*;
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
