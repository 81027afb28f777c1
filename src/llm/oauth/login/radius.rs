//! Radius sign-in against a gateway (pi's `createRadiusOAuth`): in the browser, through the
//! authorization endpoint the gateway names at `/v1/oauth` (the 127.0.0.1:1456 callback is the
//! only way back), or with a device code. `name` is the provider's display name (pi's
//! `options.name`, shown on the callback page).

use std::time::Duration;

use crossbeam_channel::after;
use serde_json::{Map, Value};

use super::super::client::{form_encode, Body};
use super::super::common::call;
use super::super::loopback;
use super::super::radius::{self, CLIENT_ID};
use super::super::refresh::trusted_http_url;
use super::device::{poll_device, show_device_code, Poll, DEVICE_GRANT};
use super::{pkce, positive, str_of, Interaction, REQUEST_BUDGET};

const SCOPE: &str = "gateway offline_access";

/// The browser sign-in.
pub(super) fn browser(
    io: &Interaction,
    gateway: &str,
    name: &str,
) -> Result<Map<String, Value>, String> {
    const REDIRECT: &str = "http://127.0.0.1:1456/oauth/callback";
    let resp = call(
        "GET",
        &radius::url(gateway, "/v1/oauth"),
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
        name,
    )
    .map_err(|e| e.to_string())?;
    let base = endpoint.split(['?', '#']).next().unwrap_or(&endpoint);
    let url = format!(
        "{base}?{}",
        form_encode(&[
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", REDIRECT),
            ("scope", SCOPE),
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
    radius::token(
        gateway,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", REDIRECT),
            ("code", &code),
            ("code_verifier", &verifier),
        ],
        &io.ctx(REQUEST_BUDGET),
    )
}

/// The device-code sign-in.
pub(super) fn device(io: &Interaction, gateway: &str) -> Result<Map<String, Value>, String> {
    let resp = call(
        "POST",
        &radius::url(gateway, "/v1/oauth/device"),
        &[("accept", "application/json")],
        Body::Form(&[("client_id", CLIENT_ID), ("scope", SCOPE)]),
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
        || match radius::token(
            gateway,
            &[
                ("grant_type", DEVICE_GRANT),
                ("client_id", CLIENT_ID),
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
